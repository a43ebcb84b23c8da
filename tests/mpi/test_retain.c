/* SPDX-License-Identifier: MIT */
/* Retention (SYMADDR_RETAIN_BYTES): a freed ipc allocation stays mapped and the next one of the
 * same size takes it back, with the same address and table on every rank and no handle
 * exchange; the budget lets the oldest go; 0 retains nothing; ranks that disagree on the
 * budget are refused at init. Handle exchanges are counted from the TRACE lines caught
 * through the config's logger; data moves by symaddr_put at an odd offset and is checked
 * against each neighbour's rank + 1. */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "harness.h"

enum { BYTES = 40004 }; /* odd in 4-byte words */

static int g_exchanges;

static void count_exchanges(void *cookie, const char *line)
{
    (void)cookie;
    g_exchanges += strstr(line, "handle exchange:") != NULL;
}

static symaddr_context_t *retaining_context(size_t retain_bytes)
{
    symaddr_config_t cfg;
    symaddr_config_default(&cfg);
    cfg.retain_bytes = retain_bytes;
    cfg.logger = count_exchanges;
    cfg.debug_level = 2;  /* TRACE */
    cfg.debug_subsys = 2; /* BOOT: the exchanges */
    return t_context(MPI_COMM_WORLD, &cfg);
}

/* Each rank puts words of value tag * (rank + 1) into its right neighbour's p, 3 bytes in,
 * and checks what its left neighbour put into its own. */
static void put_and_check(symaddr_context_t *ctx, char *p, uint32_t tag)
{
    enum { N = (BYTES - 8) / 4 };
    uint32_t *src = malloc(N * 4), *got = malloc(N * 4);
    void *stage = NULL;
    int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;
    for (int i = 0; i < N; i++)
        src[i] = tag * (uint32_t)(t_rank + 1) + (uint32_t)i;
    T_OK(ctx, symaddr_mem_alloc(ctx, N * 4, &stage));
    T_OK(ctx, symaddr_memcpy(ctx, stage, src, N * 4));
    MPI_Barrier(MPI_COMM_WORLD);
    T_OK(ctx, symaddr_put(ctx, p + 3, stage, N * 4, right, NULL));
    T_OK(ctx, symaddr_stream_sync(ctx, NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    T_OK(ctx, symaddr_memcpy(ctx, got, p + 3, N * 4));
    int wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += got[i] != tag * (uint32_t)(left + 1) + (uint32_t)i;
    T_CHECK(wrong == 0, "tag %u: %d of %d words from rank %d wrong", tag, wrong, N, left);
    symaddr_mem_free(ctx, stage);
    free(src);
    free(got);
}

static void test_taken_back(void *u)
{
    (void)u;
    symaddr_context_t *ctx = retaining_context((size_t)1 << 20);
    symaddr_provider_t *prov;
    symaddr_map_t *m;
    void *p, *q;
    uint64_t *table = malloc(sizeof(uint64_t) * t_size);
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &prov));
    g_exchanges = 0;
    T_OK(ctx, symaddr_symmetric_alloc(prov, BYTES, &p, &m));
    memcpy(table, m->host_peer_bases, sizeof(uint64_t) * t_size);
    put_and_check(ctx, p, 1);
    T_OK(ctx, symaddr_symmetric_free(prov, p));
    T_OK(ctx, symaddr_symmetric_alloc(prov, BYTES, &q, &m));
    T_CHECK(q == p, "the same size came back at %p, not the retained %p", q, p);
    T_CHECK(!memcmp(table, m->host_peer_bases, sizeof(uint64_t) * t_size),
            "the taken-back map's table differs from the first one's");
    T_CHECK(g_exchanges == 1, "%d handle exchanges for an allocation, a free and a take-back",
            g_exchanges);
    put_and_check(ctx, q, 7);
    /* another size is a fresh allocation, exchanged */
    void *r;
    symaddr_map_t *mr;
    T_OK(ctx, symaddr_symmetric_alloc(prov, BYTES + 64, &r, &mr));
    T_CHECK(g_exchanges == 2, "%d handle exchanges after a new size", g_exchanges);
    put_and_check(ctx, r, 11);
    T_OK(ctx, symaddr_symmetric_free(prov, r));
    T_OK(ctx, symaddr_symmetric_free(prov, q));
    T_OK(ctx, symaddr_finalize(&ctx)); /* releases both retained allocations */
    free(table);
}

static void test_budget_lets_the_oldest_go(void *u)
{
    (void)u;
    symaddr_context_t *ctx = retaining_context(2 * (size_t)BYTES);
    symaddr_provider_t *prov;
    symaddr_map_t *m;
    void *a, *b, *c, *x;
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &prov));
    T_OK(ctx, symaddr_symmetric_alloc(prov, BYTES, &a, &m));
    T_OK(ctx, symaddr_symmetric_alloc(prov, BYTES, &b, &m));
    T_OK(ctx, symaddr_symmetric_alloc(prov, BYTES, &c, &m));
    T_OK(ctx, symaddr_symmetric_free(prov, a));
    T_OK(ctx, symaddr_symmetric_free(prov, b));
    T_OK(ctx, symaddr_symmetric_free(prov, c)); /* two fit: a goes */
    g_exchanges = 0;
    T_OK(ctx, symaddr_symmetric_alloc(prov, BYTES, &x, &m));
    T_CHECK(x == c, "the newest retained (%p) should come back first, got %p", c, x);
    put_and_check(ctx, x, 3);
    void *y, *z;
    T_OK(ctx, symaddr_symmetric_alloc(prov, BYTES, &y, &m));
    T_CHECK(y == b, "then the older one (%p), got %p", b, y);
    T_CHECK(g_exchanges == 0, "%d handle exchanges for two take-backs", g_exchanges);
    T_OK(ctx, symaddr_symmetric_alloc(prov, BYTES, &z, &m));
    T_CHECK(g_exchanges == 1, "the third was let go, so a fresh allocation: %d exchanges",
            g_exchanges);
    put_and_check(ctx, z, 5);
    T_OK(ctx, symaddr_symmetric_free(prov, x));
    T_OK(ctx, symaddr_symmetric_free(prov, y));
    T_OK(ctx, symaddr_symmetric_free(prov, z));
    T_OK(ctx, symaddr_finalize(&ctx));
}

static void test_zero_retains_nothing(void *u)
{
    (void)u;
    symaddr_context_t *ctx = retaining_context(0);
    symaddr_provider_t *prov;
    symaddr_map_t *m;
    void *p;
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &prov));
    g_exchanges = 0;
    for (int i = 0; i < 3; i++) {
        T_OK(ctx, symaddr_symmetric_alloc(prov, BYTES, &p, &m));
        put_and_check(ctx, p, 13 + (uint32_t)i);
        T_OK(ctx, symaddr_symmetric_free(prov, p));
    }
    T_CHECK(g_exchanges == 3, "retain_bytes 0: %d handle exchanges for 3 allocations", g_exchanges);
    T_OK(ctx, symaddr_finalize(&ctx));
}

/* An allocation that runs out (here: rank 1 out of descriptors, which the cpu backend's memory
 * is) lets every retained allocation go and tries again, on every rank. */
static void test_out_of_memory_lets_go(void *u)
{
    (void)u;
    symaddr_context_t *ctx = retaining_context((size_t)64 << 20);
    symaddr_provider_t *prov;
    symaddr_map_t *m;
    void *p[32], *q = NULL;
    struct rlimit old, none;
    int k = 2 * t_size < 32 ? 2 * t_size : 32;
    if (symaddr_backend(ctx) != SYMADDR_BACKEND_CPU || t_size < 2) {
        T_SKIP("needs the cpu backend, whose memory is descriptors, and 2 ranks");
        T_OK(ctx, symaddr_finalize(&ctx));
        return;
    }
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &prov));
    for (int i = 0; i < k; i++) /* each retained allocation keeps its descriptor */
        T_OK(ctx, symaddr_symmetric_alloc(prov, 4096 + 64 * (size_t)i, &p[i], &m));
    for (int i = 0; i < k; i++)
        T_OK(ctx, symaddr_symmetric_free(prov, p[i]));
    getrlimit(RLIMIT_NOFILE, &old);
    none = old;
    if (t_rank == 1) {
        none.rlim_cur = (rlim_t)t_count_entries("/proc/self/fd") - 1; /* not one free */
        T_CHECK(setrlimit(RLIMIT_NOFILE, &none) == 0);
    }
    g_exchanges = 0;
    symaddr_status_t st = symaddr_symmetric_alloc(prov, BYTES, &q, &m);
    if (t_rank == 1)
        setrlimit(RLIMIT_NOFILE, &old);
    T_CHECK(st == SYMADDR_OK, "with %d allocations retained to let go: %s (%s)", k,
            symaddr_strerror(st), symaddr_last_error(ctx));
    if (st == SYMADDR_OK)
        put_and_check(ctx, q, 17);
    /* they all went: an old size needs an exchange again */
    void *r = NULL;
    T_OK(ctx, symaddr_symmetric_alloc(prov, 4096, &r, &m));
    T_CHECK(g_exchanges == 2, "%d handle exchanges: the retained allocations were not let go",
            g_exchanges);
    if (q)
        T_OK(ctx, symaddr_symmetric_free(prov, q));
    T_OK(ctx, symaddr_symmetric_free(prov, r));
    T_OK(ctx, symaddr_finalize(&ctx));
}

static char g_refusal[512];

static void catch_refusal(void *cookie, const char *line)
{
    (void)cookie;
    if (strstr(line, "retain"))
        snprintf(g_refusal, sizeof(g_refusal), "%s", line);
}

static void test_ranks_must_agree(void *u)
{
    (void)u;
    if (t_size < 2) {
        T_SKIP("needs 2 ranks");
        return;
    }
    symaddr_config_t cfg;
    symaddr_context_t *ctx = NULL;
    symaddr_config_default(&cfg);
    cfg.retain_bytes = t_rank == t_size - 1 ? 4096 : 8192;
    cfg.logger = catch_refusal;
    g_refusal[0] = 0;
    symaddr_status_t st = symaddr_init(MPI_COMM_WORLD, &cfg, &ctx);
    T_CHECK(st == SYMADDR_ERR_MISMATCH && ctx == NULL, "init with unequal budgets: %s",
            symaddr_strerror(st));
    if (t_rank == 0)
        T_CHECK(strstr(g_refusal, "SYMADDR_RETAIN_BYTES") != NULL,
                "the refusal names the variable: '%s'", g_refusal);
}

/* Retention is bounded by descriptors too: 2,000 allocations of distinct sizes, each freed,
 * under a descriptor limit of 256 (each retained allocation keeps its descriptors): every one
 * OK, with its data checked every 100th from 600 on (before the bound, 367 of 600 failed at 3 ranks
 * and never recovered). */
static void test_descriptors_bound_retention(void *u)
{
    (void)u;
    struct rlimit old, lim;
    getrlimit(RLIMIT_NOFILE, &old);
    lim = old;
    if (lim.rlim_cur > 256)
        lim.rlim_cur = 256;
    T_CHECK(setrlimit(RLIMIT_NOFILE, &lim) == 0, "setrlimit");
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, NULL); /* the default budget, 256 MiB */
    symaddr_provider_t *prov;
    symaddr_map_t *m;
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &prov));
    int failed = 0;
    char first[512] = "";
    for (int i = 0; i < 2000; i++) {
        void *p = NULL;
        symaddr_status_t st = symaddr_symmetric_alloc(prov, 4096 + 64 * (size_t)i, &p, &m);
        if (st != SYMADDR_OK) {
            if (!failed++)
                snprintf(first, sizeof(first), "allocation %d: %s (%s)", i, symaddr_strerror(st),
                         symaddr_last_error(ctx));
            continue;
        }
        if (i >= 600 && i % 100 == 0) /* large enough for put_and_check's bytes */
            put_and_check(ctx, p, 100 + (uint32_t)i);
        T_OK(ctx, symaddr_symmetric_free(prov, p));
    }
    T_CHECK(failed == 0, "%d of 2000 allocations failed under ulimit -n %llu; the first: %s",
            failed, (unsigned long long)lim.rlim_cur, first);
    T_OK(ctx, symaddr_finalize(&ctx));
    setrlimit(RLIMIT_NOFILE, &old);
}

/* Importing memory symaddr owns is refused: a freed allocation it retains, and the heap (in
 * use or free). Before, both imports were accepted and the next allocation of the retained size
 * failed with ALREADY_REGISTERED and no message. */
static void test_import_of_owned_memory(void *u)
{
    (void)u;
    symaddr_context_t *ctx = retaining_context((size_t)64 << 20);
    symaddr_provider_t *ipc, *heap;
    symaddr_map_t *m, *im = NULL;
    void *p, *q, *h;
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &ipc));
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_HEAP, &heap));
    T_OK(ctx, symaddr_symmetric_alloc(ipc, BYTES, &p, &m));
    T_OK(ctx, symaddr_symmetric_free(ipc, p)); /* retained */
    symaddr_status_t st = symaddr_import(ctx, (char *)p + 64, 1024, &im);
    T_CHECK(st == SYMADDR_ERR_ALREADY_REGISTERED && im == NULL &&
                strstr(symaddr_last_error(ctx), "owns") != NULL,
            "import of a retained allocation: %s (%s)", symaddr_strerror(st),
            symaddr_last_error(ctx));
    T_OK(ctx, symaddr_symmetric_alloc(ipc, BYTES, &q, &m)); /* taken back, as before */
    T_CHECK(q == p, "the retained allocation comes back (%p, got %p)", p, q);
    put_and_check(ctx, q, 21);
    T_OK(ctx, symaddr_symmetric_alloc(heap, 4096, &h, &m));
    T_OK(ctx, symaddr_symmetric_free(heap, h)); /* a free range of the heap now */
    st = symaddr_import(ctx, h, 4096, &im);
    T_CHECK(st == SYMADDR_ERR_ALREADY_REGISTERED && im == NULL &&
                strstr(symaddr_last_error(ctx), "heap") != NULL,
            "import of a free heap range: %s (%s)", symaddr_strerror(st), symaddr_last_error(ctx));
    T_OK(ctx, symaddr_symmetric_free(ipc, q));
    T_OK(ctx, symaddr_finalize(&ctx));
}

/* The contents contract (symaddr.h, symaddr_symmetric_alloc): an allocation taken back from
 * retention or from the heap keeps what its last user wrote; a fresh one on the cpu backend is
 * zero (new shared memory). GPUs give fresh memory as the runtime does (not cleared): checked
 * on the cpu backend only. */
static void test_contents(void *u)
{
    (void)u;
    symaddr_context_t *ctx = retaining_context((size_t)1 << 20);
    if (symaddr_backend(ctx) != SYMADDR_BACKEND_CPU) {
        T_SKIP("fresh memory is zero only on the cpu backend");
        symaddr_finalize(&ctx);
        return;
    }
    enum { N = 1003 };
    symaddr_provider_t *prov[2];
    symaddr_map_t *m;
    uint32_t mark[N], got[N], zeros[N];
    memset(zeros, 0, sizeof(zeros));
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &prov[0]));
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_HEAP, &prov[1]));
    for (int k = 0; k < 2; k++) {
        uint32_t *p, *q;
        for (int i = 0; i < N; i++)
            mark[i] = 0xabc00000u + (uint32_t)(t_rank * 4096 + i);
        T_OK(ctx, symaddr_symmetric_alloc(prov[k], sizeof(mark) + 4 * (size_t)k, (void **)&p, &m));
        T_OK(ctx, symaddr_memcpy(ctx, got, p, sizeof(got)));
        if (k == 0)
            T_CHECK(memcmp(got, zeros, sizeof(got)) == 0, "a fresh ipc allocation is not zero");
        T_OK(ctx, symaddr_memcpy(ctx, p, mark, sizeof(mark)));
        T_OK(ctx, symaddr_symmetric_free(prov[k], p));
        T_OK(ctx, symaddr_symmetric_alloc(prov[k], sizeof(mark) + 4 * (size_t)k, (void **)&q, &m));
        T_CHECK(q == p, "%s: the same size came back elsewhere", k ? "heap" : "ipc");
        T_OK(ctx, symaddr_memcpy(ctx, got, q, sizeof(got)));
        T_CHECK(memcmp(got, mark, sizeof(got)) == 0,
                "%s: taken back, the allocation lost what its last user wrote",
                k ? "heap" : "retention");
        T_OK(ctx, symaddr_symmetric_free(prov[k], q));
    }
    T_OK(ctx, symaddr_finalize(&ctx));
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    T_RUN(test_taken_back, NULL);
    T_RUN(test_budget_lets_the_oldest_go, NULL);
    T_RUN(test_zero_retains_nothing, NULL);
    T_RUN(test_out_of_memory_lets_go, NULL);
    T_RUN(test_ranks_must_agree, NULL);
    T_RUN(test_descriptors_bound_retention, NULL);
    T_RUN(test_import_of_owned_memory, NULL);
    T_RUN(test_contents, NULL);
    return t_finish();
}
