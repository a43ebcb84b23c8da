/* SPDX-License-Identifier: MIT */
/* CUDA graphs: two allreduces and a bulk put, captured once and replayed with new data each
 * time, give exact values against sequential references; every allreduce algorithm, each in a
 * context of its own. Replays advance what a call leaves behind (the epoch, the Lamport buffer's
 * turn), and the graph holds what the host adds to a call (two-shot-copy's copies and barrier,
 * put's copy-engine node between GPUs). Other backends report SKIP: the cpu has no graphs, and
 * HIP's are not exercised (the hip build is compile-checked only). */
#include "runtime.h"

#include "harness.h"

#define REPLAYS 5
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
    for (int k = 0; k < REPLAYS && exec; k++) {
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

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    T_RUN(test_graph_replays, NULL);
    return t_finish();
}
