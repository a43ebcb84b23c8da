/* SPDX-License-Identifier: MIT */
/* Every collective at 64 MiB, with exact values: the largest grids. With several ranks on one
 * GPU every rank's grid must stay resident beside the others', or the barriers wait for blocks
 * that can never run. Built for GPU backends; run with 8 ranks on one GPU (under MPS). */
#include "harness.h"

#define BYTES ((size_t)64 << 20)

static symaddr_provider_t *g_ipc;

static void *alloc(symaddr_context_t *ctx, size_t bytes)
{
    symaddr_map_t *m;
    void *p = NULL;
    T_OK(ctx, symaddr_symmetric_alloc(g_ipc, bytes, &p, &m));
    return p;
}

/* Elements of dev (n of them) that differ from want(i), reading the device copy in chunks. */
static long wrong_i32(symaddr_context_t *ctx, const void *dev, size_t n,
                      int32_t (*want)(size_t i, size_t n))
{
    int32_t *h = malloc(n * sizeof(int32_t));
    long bad = 0;
    T_OK(ctx, symaddr_stream_sync(ctx, NULL));
    T_OK(ctx, symaddr_memcpy(ctx, h, dev, n * sizeof(int32_t)));
    for (size_t i = 0; i < n; i++)
        bad += h[i] != want(i, n);
    free(h);
    return bad;
}

static void upload_i32(symaddr_context_t *ctx, void *dev, size_t n, int rank,
                       int32_t (*value)(int rank, size_t i))
{
    int32_t *h = malloc(n * sizeof(int32_t));
    for (size_t i = 0; i < n; i++)
        h[i] = value(rank, i);
    T_OK(ctx, symaddr_memcpy(ctx, dev, h, n * sizeof(int32_t)));
    free(h);
}

/* Rank r's input: small, rank-distinct, so that float sums stay exact too. */
static int32_t input(int rank, size_t i) { return (rank + 1) * 3 + (int32_t)(i % 1009); }

static int32_t want_sum(size_t i, size_t n)
{
    (void)n;
    int32_t s = 0;
    for (int r = 0; r < t_size; r++)
        s += input(r, i);
    return s;
}

static int32_t want_root(size_t i, size_t n)
{
    (void)n;
    return input(t_size - 1, i);
}

/* allgather: block r is rank r's input; alltoall: block r is rank r's block for this rank. */
static int32_t want_gather(size_t i, size_t n)
{
    size_t per = n / (size_t)t_size;
    return input((int)(i / per), i % per);
}

static int32_t a2a_input(int rank, size_t i)
{
    size_t per = BYTES / 4 / (size_t)t_size;
    return (rank + 1) * 1000 + (int32_t)(i / per) * 10 + (int32_t)(i % 7);
}

static int32_t want_a2a(size_t i, size_t n)
{
    size_t per = n / (size_t)t_size;
    int r = (int)(i / per);
    return a2a_input(r, (size_t)t_rank * per + i % per);
}

static int32_t want_rs(size_t i, size_t n)
{
    (void)n;
    return want_sum((size_t)t_rank * (BYTES / 4 / (size_t)t_size) + i, n);
}

static void test_allreduce(symaddr_context_t *ctx)
{
    size_t n = BYTES / 4;
    void *s = alloc(ctx, BYTES), *r = alloc(ctx, BYTES);
    upload_i32(ctx, s, n, t_rank, input);
    T_OK(ctx, symaddr_allreduce(ctx, s, r, n, SYMADDR_INT32, SYMADDR_SUM, NULL));
    T_CHECK(wrong_i32(ctx, r, n, want_sum) == 0, "int32 allreduce of 64 MiB");
    /* float: the same small integers, exact in f32 */
    float *h = malloc(BYTES);
    for (size_t i = 0; i < n; i++)
        h[i] = (float)input(t_rank, i);
    T_OK(ctx, symaddr_memcpy(ctx, s, h, BYTES));
    T_OK(ctx, symaddr_allreduce(ctx, s, r, n, SYMADDR_FLOAT32, SYMADDR_SUM, NULL));
    T_OK(ctx, symaddr_stream_sync(ctx, NULL));
    T_OK(ctx, symaddr_memcpy(ctx, h, r, BYTES));
    long bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += h[i] != (float)want_sum(i, n);
    T_CHECK(bad == 0, "float allreduce of 64 MiB: %ld wrong", bad);
    free(h);
    /* int64 at 8 MiB and at 64 MiB */
    int64_t *g = malloc(BYTES);
    for (size_t k = 0; k < 2; k++) {
        size_t m = (k ? BYTES : (size_t)8 << 20) / 8;
        for (size_t i = 0; i < m; i++)
            g[i] = (int64_t)input(t_rank, i) << 20;
        T_OK(ctx, symaddr_memcpy(ctx, s, g, m * 8));
        T_OK(ctx, symaddr_allreduce(ctx, s, r, m, SYMADDR_INT64, SYMADDR_SUM, NULL));
        T_OK(ctx, symaddr_stream_sync(ctx, NULL));
        T_OK(ctx, symaddr_memcpy(ctx, g, r, m * 8));
        bad = 0;
        for (size_t i = 0; i < m; i++)
            bad += g[i] != (int64_t)want_sum(i, m) << 20;
        T_CHECK(bad == 0, "int64 allreduce of %zu MiB: %ld wrong", (m * 8) >> 20, bad);
    }
    free(g);
    MPI_Barrier(MPI_COMM_WORLD);
    T_OK(ctx, symaddr_symmetric_free(g_ipc, s));
    T_OK(ctx, symaddr_symmetric_free(g_ipc, r));
}

/* Each large algorithm by name as well as auto's pick, in contexts of their own. */
static void test_allreduce_algos(void *u)
{
    static const symaddr_allreduce_algo_t algos[] = {
        SYMADDR_ALLREDUCE_TWOSHOT, SYMADDR_ALLREDUCE_TWOSHOT_GET, SYMADDR_ALLREDUCE_TWOSHOT_COPY};
    symaddr_provider_t *ipc = g_ipc;
    (void)u;
    for (size_t a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
        symaddr_config_t cfg;
        symaddr_config_default(&cfg);
        cfg.allreduce_algo = algos[a];
        symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, &cfg);
        T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &g_ipc));
        test_allreduce(ctx);
        T_OK(ctx, symaddr_finalize(&ctx));
    }
    g_ipc = ipc;
}

static void test_others(symaddr_context_t *ctx)
{
    size_t n = BYTES / 4, per = n / (size_t)t_size;
    void *s = alloc(ctx, BYTES), *r = alloc(ctx, BYTES);
    upload_i32(ctx, s, per, t_rank, input);
    T_OK(ctx, symaddr_allgather(ctx, s, r, per, SYMADDR_INT32, NULL));
    T_CHECK(wrong_i32(ctx, r, per * (size_t)t_size, want_gather) == 0, "allgather to 64 MiB");
    upload_i32(ctx, s, n, t_rank, input);
    T_OK(ctx, symaddr_reduce_scatter(ctx, s, r, per, SYMADDR_INT32, SYMADDR_SUM, NULL));
    T_CHECK(wrong_i32(ctx, r, per, want_rs) == 0, "reduce_scatter from 64 MiB");
    T_OK(ctx, symaddr_broadcast(ctx, s, r, n, SYMADDR_INT32, t_size - 1, NULL));
    T_CHECK(wrong_i32(ctx, r, n, want_root) == 0, "broadcast of 64 MiB");
    upload_i32(ctx, s, per * (size_t)t_size, t_rank, a2a_input);
    T_OK(ctx, symaddr_alltoall(ctx, s, r, per, SYMADDR_INT32, NULL));
    T_CHECK(wrong_i32(ctx, r, per * (size_t)t_size, want_a2a) == 0, "alltoall of 64 MiB");
    T_OK(ctx, symaddr_barrier(ctx, NULL));
    T_OK(ctx, symaddr_stream_sync(ctx, NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    T_OK(ctx, symaddr_symmetric_free(g_ipc, s));
    T_OK(ctx, symaddr_symmetric_free(g_ipc, r));
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, NULL);
    const symaddr_locality_t *loc;
    symaddr_locality_get(ctx, &loc);
    int same_gpu = 0;
    for (int r = 0; r < t_size; r++)
        same_gpu += loc->peer_class[r] == SYMADDR_PEER_SAME_GPU;
    if (t_rank == 0)
        printf("# backend %s, %d ranks, %d sharing rank 0's GPU\n",
               symaddr_backend_name(symaddr_backend(ctx)), t_size, same_gpu + 1);
    symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &g_ipc);
    T_RUN(test_allreduce, ctx);
    T_RUN(test_allreduce_algos, NULL);
    T_RUN(test_others, ctx);
    symaddr_finalize(&ctx);
    return t_finish();
}
