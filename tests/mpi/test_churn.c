/* SPDX-License-Identifier: MIT */
/* Churn: 10,000 allocate/free cycles per provider while 4 threads look up interior pointers of
 * long-lived allocations; every lookup must find its own map, and descriptors and resident
 * memory must come back to where they started (retention holds the same allocations before
 * and after: a bounded set, not a growing one). */
#include "harness.h"

#include <pthread.h>
#include <unistd.h>

#define CYCLES 10000
#define THREADS 4
#define LIVE 16

typedef struct shared {
    symaddr_context_t *ctx;
    void *ptr[LIVE];
    symaddr_map_t *map[LIVE];
    volatile int stop;
    long bad[THREADS], done[THREADS];
} shared_t;

typedef struct targ {
    shared_t *s;
    int id;
} targ_t;

static void *looker(void *p)
{
    targ_t *a = p;
    shared_t *s = a->s;
    unsigned x = 7u + (unsigned)a->id;
    while (!s->stop) {
        x = x * 1103515245u + 12345u;
        int k = (int)(x % LIVE);
        symaddr_map_t *m;
        if (symaddr_lookup(s->ctx, (char *)s->ptr[k] + (x >> 8) % 1000, &m) != SYMADDR_OK ||
            m != s->map[k])
            s->bad[a->id]++;
        /* Lookups in bursts: threads that never sleep would starve the MPI progress of the
         * allocating thread when ranks outnumber cores. */
        if (++s->done[a->id] % 64 == 0)
            usleep(200);
    }
    return NULL;
}

static long resident_kib(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f && fscanf(f, "%ld %ld", &pages, &rss) != 2)
        rss = 0;
    if (f)
        fclose(f);
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static void churn(symaddr_context_t *ctx, symaddr_provider_kind_t kind, const char *name)
{
    symaddr_provider_t *prov, *heap;
    shared_t s;
    pthread_t th[THREADS];
    targ_t args[THREADS];
    symaddr_status_t st = symaddr_provider_get(ctx, kind, &prov);
    if (st == SYMADDR_ERR_UNSUPPORTED) {
        T_SKIP("%s: %s", name, symaddr_last_error(ctx));
        return;
    }
    T_OK(ctx, st);
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_HEAP, &heap));
    memset(&s, 0, sizeof(s));
    s.ctx = ctx;
    for (int k = 0; k < LIVE; k++)
        T_OK(ctx, symaddr_symmetric_alloc(heap, 1000, &s.ptr[k], &s.map[k]));
    /* A first round settles caches (MPI's, the allocator's, and the freed allocations symaddr
     * retains, one per size of the cycles below) before measuring. */
    for (int i = 0; i < 2 * 97; i++) {
        void *p;
        symaddr_map_t *m;
        T_OK(ctx, symaddr_symmetric_alloc(prov, 64 + (size_t)(i % 97) * 64, &p, &m));
        T_OK(ctx, symaddr_symmetric_free(prov, p));
    }
    int fd0 = t_count_entries("/proc/self/fd");
    long rss0 = resident_kib();
    for (int t = 0; t < THREADS; t++) {
        args[t] = (targ_t){&s, t};
        pthread_create(&th[t], NULL, looker, &args[t]);
    }
    for (int i = 0; i < CYCLES && st == SYMADDR_OK; i++) {
        void *p;
        symaddr_map_t *m;
        st = symaddr_symmetric_alloc(prov, 64 + (size_t)(i % 97) * 64, &p, &m);
        if (st == SYMADDR_OK)
            st = symaddr_symmetric_free(prov, p);
    }
    T_OK(ctx, st);
    s.stop = 1;
    long bad = 0, done = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        bad += s.bad[t];
        done += s.done[t];
    }
    int fd1 = t_count_entries("/proc/self/fd");
    long rss1 = resident_kib();
    T_CHECK(bad == 0, "%s: %ld of %ld concurrent lookups went wrong", name, bad, done);
    T_CHECK(done > 0, "%s: the lookup threads never ran", name);
    T_CHECK(fd1 == fd0, "%s: descriptors %d before, %d after %d cycles", name, fd0, fd1, CYCLES);
    /* Resident memory may wobble by a few pages of allocator slack, not grow per cycle. */
    T_CHECK(rss1 - rss0 < 2048, "%s: resident memory grew by %ld KiB over %d cycles", name,
            rss1 - rss0, CYCLES);
    for (int k = 0; k < LIVE; k++)
        T_OK(ctx, symaddr_symmetric_free(heap, s.ptr[k]));
    if (t_rank == 0)
        printf("# %s: %d cycles, %ld concurrent lookups, fds %d -> %d, rss %ld -> %ld KiB\n", name,
               CYCLES, done, fd0, fd1, rss0, rss1);
}

static void test_churn_heap(symaddr_context_t *ctx) { churn(ctx, SYMADDR_PROVIDER_HEAP, "heap"); }
static void test_churn_ipc(symaddr_context_t *ctx) { churn(ctx, SYMADDR_PROVIDER_IPC, "ipc"); }
static void test_churn_vmm(symaddr_context_t *ctx) { churn(ctx, SYMADDR_PROVIDER_VMM, "vmm"); }

int main(int argc, char **argv)
{
    t_init_thread(&argc, &argv, MPI_THREAD_FUNNELED);
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, NULL);
    if (t_rank == 0)
        printf("# backend %s, %d ranks\n", symaddr_backend_name(symaddr_backend(ctx)), t_size);
    T_RUN(test_churn_heap, ctx);
    T_RUN(test_churn_ipc, ctx);
    T_RUN(test_churn_vmm, ctx);
    symaddr_finalize(&ctx);
    return t_finish();
}
