/* SPDX-License-Identifier: MIT */
/* Ranks in different calls: every pair of calls that agree across ranks (allocations of two
 * providers, a free, an import, an unregistration, a foreign table, a collective, a rooted one
 * and a barrier), the last rank making one while its peers make the other, with and without
 * validation. Each rank must return SYMADDR_ERR_MISMATCH (or TIMEOUT or BROKEN where a rank
 * never reaches the exchange the others wait in), never OK, never MPI's error or a status
 * symaddr does not have, never an abort of the job, and a message of printable text. Before,
 * the allocation agreement and a collective's argument check exchanged records of different
 * sizes on one communicator: Open MPI aborted every process (MPI_ERR_TRUNCATE), or the rank
 * expecting the larger record read bytes nobody sent as a status and a message. */
#include "harness.h"

#include <ctype.h>

enum { N = 61, TIMEOUT_MS = 1500 };

typedef struct env {
    symaddr_provider_t *ipc, *heap;
    int32_t *a, *b, *spare;  /* symmetric, N int32 each; spare is what "free" frees */
    void *plain;             /* this rank's own memory, which "import" registers */
    symaddr_map_t *imported; /* what "unregister" unregisters */
} env_t;

typedef struct op {
    const char *name;
    symaddr_status_t (*run)(symaddr_context_t *ctx, env_t *e);
} op_t;

static symaddr_status_t run_alloc(symaddr_provider_t *p)
{
    void *q = NULL;
    symaddr_map_t *m;
    symaddr_status_t st = symaddr_symmetric_alloc(p, 4096 + 64, &q, &m);
    if (st == SYMADDR_OK) /* it should not have: the peers were elsewhere */
        symaddr_symmetric_free(p, q);
    return st;
}

static symaddr_status_t op_alloc_ipc(symaddr_context_t *ctx, env_t *e)
{
    (void)ctx;
    return run_alloc(e->ipc);
}

static symaddr_status_t op_alloc_heap(symaddr_context_t *ctx, env_t *e)
{
    (void)ctx;
    return run_alloc(e->heap);
}

static symaddr_status_t op_free(symaddr_context_t *ctx, env_t *e)
{
    (void)ctx;
    return symaddr_symmetric_free(e->ipc, e->spare);
}

static symaddr_status_t op_import(symaddr_context_t *ctx, env_t *e)
{
    symaddr_map_t *m;
    symaddr_status_t st = symaddr_import(ctx, (char *)e->plain + 4096, 4096, &m);
    if (st == SYMADDR_OK)
        symaddr_unregister(ctx, m);
    return st;
}

static symaddr_status_t op_unregister(symaddr_context_t *ctx, env_t *e)
{
    return symaddr_unregister(ctx, e->imported);
}

static symaddr_status_t op_register_table(symaddr_context_t *ctx, env_t *e)
{
    uint64_t *table = calloc((size_t)t_size, sizeof(uint64_t));
    symaddr_map_t *m;
    table[t_rank] = (uint64_t)(uintptr_t)((char *)e->plain + 8192);
    symaddr_status_t st =
        symaddr_register_peer_table(ctx, (char *)e->plain + 8192, 256, table, 0, &m);
    if (st == SYMADDR_OK)
        symaddr_unregister(ctx, m);
    free(table);
    return st;
}

static symaddr_status_t op_allreduce(symaddr_context_t *ctx, env_t *e)
{
    return symaddr_allreduce(ctx, e->a, e->b, N, SYMADDR_INT32, SYMADDR_SUM, NULL);
}

static symaddr_status_t op_reduce(symaddr_context_t *ctx, env_t *e)
{
    return symaddr_reduce(ctx, e->a, e->b, N, SYMADDR_INT32, SYMADDR_SUM, 0, NULL);
}

static symaddr_status_t op_barrier(symaddr_context_t *ctx, env_t *e)
{
    (void)e;
    return symaddr_barrier(ctx, NULL);
}

static const op_t ops[] = {
    {"alloc (ipc)", op_alloc_ipc},
    {"alloc (heap)", op_alloc_heap},
    {"free", op_free},
    {"import", op_import},
    {"unregister", op_unregister},
    {"register_peer_table", op_register_table},
    {"allreduce", op_allreduce},
    {"reduce", op_reduce},
    {"barrier", op_barrier},
};
enum { OPS = sizeof(ops) / sizeof(ops[0]) };

/* Whether the text is what a person can read: no byte of another string from reused memory
 * (the bug once carried one), printable ASCII, and ended. */
static int readable(const char *text)
{
    for (const char *c = text; *c; c++)
        if (!isprint((unsigned char)*c))
            return 0;
    return strlen(text) < 1024;
}

/* Ranks but the last make ops[mine], the last ops[other]; every rank's status must say so. */
static void one_pair(int mine, int other, int validate, int *mismatches)
{
    symaddr_config_t cfg;
    symaddr_context_t *ctx;
    env_t e;
    symaddr_config_default(&cfg);
    cfg.timeout_ms = TIMEOUT_MS;
    cfg.validate = validate ? SYMADDR_VALIDATE_ON : SYMADDR_VALIDATE_OFF;
    cfg.heap_bytes = 1 << 20;
    if (!T_INIT_OK(&cfg, &ctx))
        return;
    memset(&e, 0, sizeof(e));
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &e.ipc));
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_HEAP, &e.heap));
    e.a = t_alloc_i32(ctx, N, 1000 * (t_rank + 1));
    e.b = t_alloc_i32(ctx, N, -1);
    e.spare = t_alloc_i32(ctx, N, 0);
    T_OK(ctx, symaddr_mem_alloc(ctx, 3 * 4096, &e.plain));
    T_OK(ctx, symaddr_import(ctx, e.plain, 4096, &e.imported));
    MPI_Barrier(MPI_COMM_WORLD);

    const op_t *op = &ops[t_rank == t_size - 1 ? other : mine];
    double t0 = MPI_Wtime();
    symaddr_status_t st = op->run(ctx, &e);
    double took = MPI_Wtime() - t0;
    const char *text = symaddr_last_error(ctx);
    T_CHECK(st == SYMADDR_ERR_MISMATCH || st == SYMADDR_ERR_TIMEOUT || st == SYMADDR_ERR_BROKEN,
            "%s against %s (validation %s): %s returned %d (%s): %s", ops[mine].name,
            ops[other].name, validate ? "on" : "off", op->name, (int)st, symaddr_strerror(st),
            text);
    T_CHECK(readable(text), "%s against %s: a message that is not text", ops[mine].name,
            ops[other].name);
    /* every wait bounded: a call returns within twice the timeout (and a margin for load) */
    T_CHECK(took < 4.0 * TIMEOUT_MS / 1000, "%s against %s: %s took %.1f s", ops[mine].name,
            ops[other].name, op->name, took);
    *mismatches += st == SYMADDR_ERR_MISMATCH;
    /* The next call: exact on every rank, or failed on every rank (a timeout or a mismatch
     * a kernel saw breaks the context), never OK on one rank while another fails. Where the
     * agreements saw the mismatch (every pair under validation), each rank consumed the same
     * exchanges and the context goes on. */
    MPI_Barrier(MPI_COMM_WORLD);
    symaddr_provider_t *ipc = e.ipc;
    int32_t *c = NULL, h[N];
    symaddr_map_t *cm;
    symaddr_status_t next = symaddr_symmetric_alloc(ipc, N * sizeof(int32_t), (void **)&c, &cm);
    for (int i = 0; i < N; i++)
        h[i] = 7 * (t_rank + 1) + i;
    if (next == SYMADDR_OK)
        next = symaddr_memcpy(ctx, c, h, sizeof(h));
    if (next == SYMADDR_OK)
        next = symaddr_allreduce(ctx, c, e.b, N, SYMADDR_INT32, SYMADDR_SUM, NULL);
    if (next == SYMADDR_OK)
        next = symaddr_stream_sync(ctx, NULL);
    int ok = next == SYMADDR_OK, lo, hi;
    MPI_Allreduce(&ok, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&ok, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    T_CHECK(lo == hi, "%s against %s: the next call returned OK on some ranks only (%s here)",
            ops[mine].name, ops[other].name, symaddr_strerror(next));
    T_CHECK(!validate || ok, "%s against %s: after the agreement's mismatch the next call: %s",
            ops[mine].name, ops[other].name, symaddr_strerror(next));
    if (ok)
        T_CHECK(t_count_wrong(ctx, e.b, N, t_size, 7 * t_size * (t_size + 1) / 2) == 0,
                "%s against %s: wrong sums after the mismatch", ops[mine].name, ops[other].name);
    MPI_Barrier(MPI_COMM_WORLD);
    symaddr_finalize(&ctx);
    T_CHECK(ctx == NULL, "finalize left the context");
}

static void pairs(int validate)
{
    int mismatches = 0, cases = 0;
    for (int i = 0; i < OPS; i++)
        for (int j = i + 1; j < OPS; j++) {
            one_pair(i, j, validate, &mismatches);
            cases++;
        }
    if (t_rank == 0)
        printf("# validation %s: %d pairs of calls, MISMATCH on rank 0 in %d\n",
               validate ? "on" : "off", cases, mismatches);
}

static void test_pairs_validating(void *u)
{
    (void)u;
    if (t_size < 2) {
        T_SKIP("needs 2 ranks");
        return;
    }
    pairs(1);
}

static void test_pairs_plain(void *u)
{
    (void)u;
    if (t_size < 2) {
        T_SKIP("needs 2 ranks");
        return;
    }
    pairs(0);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    T_RUN(test_pairs_validating, NULL);
    T_RUN(test_pairs_plain, NULL);
    return t_finish();
}
