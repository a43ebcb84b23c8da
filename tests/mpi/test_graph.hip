/* SPDX-License-Identifier: MIT */
/* CUDA graphs: two allreduces and a bulk put, captured once and replayed with new data each
 * time, give exact values against sequential references; every allreduce algorithm, each in a
 * context of its own. Then every data collective of the library's table and the barrier, one
 * graph each, replayed SYMADDR_TEST_REPLAYS times (5; the GPU run asks 1000) with new data each
 * time, exact; the same loop without graphs runs on every backend (its references checked). Replays
 * advance what a call leaves behind (the epoch, the Lamport buffer's turn), and the graph holds
 * what the host adds to a call (two-shot-copy's copies and barrier, put's copy-engine node between
 * GPUs). Other backends report SKIP: the cpu has no graphs, and HIP's are not exercised (the hip
 * build is compile-checked only). */
#include "runtime.h"

#include "harness.h"

#include <string.h>

#define REPLAYS 5
/* SYMADDR_TEST_REPLAYS, else REPLAYS */
static int replays(void)
{
    const char *e = getenv("SYMADDR_TEST_REPLAYS");
    return e && atoi(e) > 0 ? atoi(e) : REPLAYS;
}

#define PUT_FLOATS ((size_t)(256 << 10) / 4 + 5) /* past 64 KiB: the copy engine between GPUs */

#if defined(SYMADDR_USE_CUDA)
/* Rank r's input in replay k: small integers, so that f32 sums are exact. */
static float input(int r, int k, size_t i) { return (float)((r + 1) * (k + 1)) + (float)(i % 97); }

static long wrong_floats(symaddr_context_t *ctx, const float *dev, size_t n,
                         float (*want)(size_t i, int k), int k)
{
    float *h = (float *)malloc(n * sizeof(float));
    long bad = 0;
    T_OK(ctx, symaddr_memcpy(ctx, h, dev, n * sizeof(float)));
    for (size_t i = 0; i < n; i++)
        bad += h[i] != want(i, k);
    free(h);
    return bad;
}

/* recv after allreduce(send -> recv) and allreduce(recv, in place): size times the sum. */
static float want_twice(size_t i, int k)
{
    float s = 0;
    for (int r = 0; r < t_size; r++)
        s += input(r, k, i);
    return s * (float)t_size;
}

/* dst after the left neighbour's put of its input. */
static float want_put(size_t i, int k) { return input((t_rank + t_size - 1) % t_size, k, i); }

static void graph_replays(symaddr_allreduce_algo_t algo, size_t n)
{
    symaddr_config_t cfg;
    symaddr_provider_t *ipc;
    symaddr_map_t *m;
    float *send, *recv, *dst;
    size_t nsend = n > PUT_FLOATS ? n : PUT_FLOATS;
    cudaStream_t s;
    cudaGraph_t g = NULL;
    cudaGraphExec_t exec = NULL;
    symaddr_config_default(&cfg);
    cfg.allreduce_algo = algo;
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, &cfg);
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &ipc));
    T_OK(ctx, symaddr_symmetric_alloc(ipc, nsend * sizeof(float), (void **)&send, &m));
    T_OK(ctx, symaddr_symmetric_alloc(ipc, n * sizeof(float), (void **)&recv, &m));
    T_OK(ctx, symaddr_symmetric_alloc(ipc, (PUT_FLOATS + 3) * sizeof(float), (void **)&dst, &m));
    T_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
    T_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess);
    T_OK(ctx, symaddr_allreduce(ctx, send, recv, n, SYMADDR_FLOAT32, SYMADDR_SUM, s));
    T_OK(ctx, symaddr_allreduce(ctx, recv, recv, n, SYMADDR_FLOAT32, SYMADDR_SUM, s));
    T_OK(ctx,
         symaddr_put(ctx, dst + 3, send, PUT_FLOATS * sizeof(float), (t_rank + 1) % t_size, s));
    T_CHECK(cudaStreamEndCapture(s, &g) == cudaSuccess, "capture of algorithm %d", (int)algo);
    T_CHECK(g && cudaGraphInstantiate(&exec, g, 0) == cudaSuccess);
    float *h = (float *)malloc(nsend * sizeof(float));
    for (int k = 0, nk = replays(); k < nk && exec; k++) {
        for (size_t i = 0; i < nsend; i++)
            h[i] = input(t_rank, k, i);
        T_OK(ctx, symaddr_memcpy(ctx, send, h, nsend * sizeof(float)));
        MPI_Barrier(MPI_COMM_WORLD); /* every rank's input is in before any replay reads it */
        T_CHECK(cudaGraphLaunch(exec, s) == cudaSuccess);
        T_OK(ctx, symaddr_stream_sync(ctx, s));
        MPI_Barrier(MPI_COMM_WORLD); /* the left neighbour's put is done too */
        long bad = wrong_floats(ctx, recv, n, want_twice, k);
        T_CHECK(bad == 0, "algorithm %d, %zu floats, replay %d: %ld wrong", (int)algo, n, k, bad);
        bad = wrong_floats(ctx, dst + 3, PUT_FLOATS, want_put, k);
        T_CHECK(bad == 0, "algorithm %d, replay %d: put: %ld wrong", (int)algo, k, bad);
        MPI_Barrier(MPI_COMM_WORLD); /* nobody rewrites its input while a peer still checks */
    }
    free(h);
    if (exec)
        cudaGraphExecDestroy(exec);
    if (g)
        cudaGraphDestroy(g);
    cudaStreamDestroy(s);
    T_OK(ctx, symaddr_symmetric_free(ipc, send));
    T_OK(ctx, symaddr_symmetric_free(ipc, recv));
    T_OK(ctx, symaddr_symmetric_free(ipc, dst));
    T_OK(ctx, symaddr_finalize(&ctx));
}
#endif

static void test_graph_replays(void *unused)
{
    (void)unused;
#if defined(SYMADDR_USE_CUDA)
    /* each algorithm at a size it serves itself (a larger one would take the next) */
    static const struct {
        symaddr_allreduce_algo_t algo;
        size_t n;
    } cases[] = {
        {SYMADDR_ALLREDUCE_AUTO, 70001},         {SYMADDR_ALLREDUCE_LL, 1001},
        {SYMADDR_ALLREDUCE_LAMPORT, 30001},      {SYMADDR_ALLREDUCE_ONESHOT, 30001},
        {SYMADDR_ALLREDUCE_TWOSHOT, 70001},      {SYMADDR_ALLREDUCE_TWOSHOT_GET, 70001},
        {SYMADDR_ALLREDUCE_TWOSHOT_COPY, 70001},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++)
        graph_replays(cases[c].algo, cases[c].n);
#else
    T_SKIP("graphs are captured on CUDA only: the cpu backend has none, and HIP's are not "
           "exercised");
#endif
}

/* Every data collective (symaddr_collective_info's table) followed by a barrier, int32 SUM,
 * root size - 1, COLL_N elements per rank (odd), each replay with new data: exact against the
 * collective's definition. A collective without a reference here fails, naming itself. */
#define COLL_N 1001

static int32_t coll_in(int r, int k, size_t i)
{
    return (r + 1) * 1000 + k * 7 + (int32_t)(i % 101);
}

/* What rank me's recv holds after collective name; -1: unspecified (not checked). */
static int coll_want(const char *name, size_t i, int k, int32_t *w)
{
    int root = t_size - 1, me = t_rank;
    size_t n = COLL_N, blk = i / n, off = i % n;
    int32_t s = 0;
    if (!strcmp(name, "allreduce") || !strcmp(name, "reduce")) {
        if (!strcmp(name, "reduce") && me != root)
            return -1;
        for (int r = 0; r < t_size; r++)
            s += coll_in(r, k, i);
        *w = s;
    } else if (!strcmp(name, "allgather") || !strcmp(name, "gather")) {
        if (!strcmp(name, "gather") && me != root)
            return -1;
        *w = coll_in((int)blk, k, off); /* rank blk's send[off] */
    } else if (!strcmp(name, "reduce_scatter")) {
        for (int r = 0; r < t_size; r++)
            s += coll_in(r, k, (size_t)me * n + i);
        *w = s;
    } else if (!strcmp(name, "broadcast")) {
        *w = coll_in(root, k, i);
    } else if (!strcmp(name, "scatter")) {
        *w = coll_in(root, k, (size_t)me * n + i);
    } else if (!strcmp(name, "alltoall")) {
        *w = coll_in((int)blk, k, (size_t)me * n + off); /* rank blk's send[me * n + off] */
    } else {
        return -2;
    }
    return 0;
}

static void every_collective(int graphs)
{
    symaddr_provider_t *ipc;
    symaddr_map_t *m;
    int32_t *send, *recv;
    size_t all = (size_t)t_size * COLL_N;
    int nk = replays();
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, NULL);
    if (!ctx)
        return;
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &ipc));
    T_OK(ctx, symaddr_symmetric_alloc(ipc, all * 4, (void **)&send, &m));
    T_OK(ctx, symaddr_symmetric_alloc(ipc, all * 4, (void **)&recv, &m));
    int32_t *h = (int32_t *)malloc(all * 4);
    void *s = NULL;
#if defined(SYMADDR_USE_CUDA)
    cudaStream_t cs;
    T_CHECK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking) == cudaSuccess);
    s = cs;
#endif
    for (int c = 0; c < symaddr_collective_count(); c++) {
        const symaddr_collective_info_t *info = symaddr_collective_info(c);
        unsigned f = info->flags;
        size_t nsend = f & SYMADDR_COLLECTIVE_SEND_ALL ? all : COLL_N;
        size_t nrecv = f & SYMADDR_COLLECTIVE_RECV_ALL ? all : COLL_N;
        int32_t w;
        if (coll_want(info->name, 0, 0, &w) == -2) {
            T_CHECK(0, "%s: no reference in test_graph (add one)", info->name);
            continue;
        }
#if defined(SYMADDR_USE_CUDA)
        cudaGraph_t g = NULL;
        cudaGraphExec_t exec = NULL;
        if (graphs) {
            T_CHECK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeGlobal) == cudaSuccess);
            T_OK(ctx, symaddr_collective_run(ctx, c, send, recv, COLL_N, SYMADDR_INT32, SYMADDR_SUM,
                                             t_size - 1, s));
            T_OK(ctx, symaddr_barrier(ctx, s));
            T_CHECK(cudaStreamEndCapture(cs, &g) == cudaSuccess, "capture of %s", info->name);
            T_CHECK(g && cudaGraphInstantiate(&exec, g, 0) == cudaSuccess, "%s", info->name);
            if (!exec)
                continue;
        }
#endif
        long bad = 0;
        for (int k = 0; k < nk && !bad; k++) {
            for (size_t i = 0; i < nsend; i++)
                h[i] = coll_in(t_rank, k, i);
            T_OK(ctx, symaddr_memcpy(ctx, send, h, nsend * 4));
            MPI_Barrier(MPI_COMM_WORLD); /* every rank's input is in before any replay reads it */
#if defined(SYMADDR_USE_CUDA)
            if (graphs)
                T_CHECK(cudaGraphLaunch(exec, cs) == cudaSuccess);
#endif
            if (!graphs) {
                T_OK(ctx, symaddr_collective_run(ctx, c, send, recv, COLL_N, SYMADDR_INT32,
                                                 SYMADDR_SUM, t_size - 1, s));
                T_OK(ctx, symaddr_barrier(ctx, s));
            }
            T_OK(ctx, symaddr_stream_sync(ctx, s));
            T_OK(ctx, symaddr_memcpy(ctx, h, recv, nrecv * 4));
            for (size_t i = 0; i < nrecv; i++)
                bad += coll_want(info->name, i, k, &w) == 0 && h[i] != w;
            T_CHECK(bad == 0, "%s%s, replay %d of %d: %ld of %zu wrong", info->name,
                    graphs ? " (graph)" : "", k, nk, bad, nrecv);
            MPI_Barrier(MPI_COMM_WORLD); /* nobody rewrites its input while a peer still reads */
        }
#if defined(SYMADDR_USE_CUDA)
        if (exec)
            cudaGraphExecDestroy(exec);
        if (g)
            cudaGraphDestroy(g);
#endif
    }
#if defined(SYMADDR_USE_CUDA)
    cudaStreamDestroy(cs);
#endif
    free(h);
    T_OK(ctx, symaddr_symmetric_free(ipc, send));
    T_OK(ctx, symaddr_symmetric_free(ipc, recv));
    T_OK(ctx, symaddr_finalize(&ctx));
}

static void test_every_collective_eager(void *unused)
{
    (void)unused;
    every_collective(0);
}

static void test_every_collective_graphs(void *unused)
{
    (void)unused;
#if defined(SYMADDR_USE_CUDA)
    every_collective(1);
#else
    T_SKIP("graphs are captured on CUDA only: the cpu backend has none, and HIP's are not "
           "exercised");
#endif
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    T_RUN(test_graph_replays, NULL);
    T_RUN(test_every_collective_eager, NULL);
    T_RUN(test_every_collective_graphs, NULL);
    return t_finish();
}
