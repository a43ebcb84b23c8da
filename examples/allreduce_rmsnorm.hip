/* SPDX-License-Identifier: MIT */
/* A fused allreduce + residual add + RMSNorm over bf16 rows, as a transformer layer ends, written
 * with the collective blocks of symaddr/team.h: one kernel pushes this rank's rows to every peer
 * (Lamport: no barrier, no flag), and each block then sums its row from every peer, adds the
 * residual, and normalises the row while it is still in registers.
 *
 *   residual' = bf16(sum over ranks of x + residual)
 *   y         = bf16(residual' / sqrt(mean(residual'^2) + eps) * weight)
 *
 *   mpiexec -n 2 ./example-allreduce-rmsnorm           check against a sequential reference
 *   mpiexec -n 2 ./example-allreduce-rmsnorm --bench   fused against symaddr_allreduce followed
 *                                                      by the same RMSNorm as a kernel of its own
 * The team is the context's node: on several nodes this example reduces over each node alone.
 */
#include <math.h>
#include <string.h>

#include "example.h"
#include "symaddr/team.h"

#define HIDDEN 6144
#define THREADS 1024 /* a row of 768 chunks: at most one per thread, so each waits once */
#define EPS 1e-6f

/* bf16 as its bits: to f32 by a shift, back by round-to-nearest-even (NaNs stay NaNs). */
__host__ __device__ static inline float bf(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

__host__ __device__ static inline uint16_t to_bf(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

#if defined(__HIPCC__) || defined(__CUDACC__)
/* Chunks of a row per thread: a row's 768 chunks fit one block, so each thread keeps its chunk in
 * registers from the sum to the normalised output. */
#define PER_THREAD ((HIDDEN / 8 + THREADS - 1) / THREADS)

/* Every thread of the block gets the sum of every thread's v: within each warp by shuffles, then
 * across the warps through shared memory. */
__device__ static float block_sum(float v)
{
    __shared__ float part[THREADS / 32 + 1];
#if defined(__CUDACC__)
    for (int o = 16; o > 0; o /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    const unsigned width = 32;
#else
    for (int o = warpSize / 2; o > 0; o /= 2)
        v += __shfl_xor(v, o);
    const unsigned width = warpSize;
#endif
    unsigned t = threadIdx.x, warps = (blockDim.x + width - 1) / width;
    if (t % width == 0)
        part[t / width] = v;
    __syncthreads();
    float total = 0;
    for (unsigned k = 0; k < warps; k++) /* the same order on every thread and every rank */
        total += part[k];
    __syncthreads();
    return total;
}
#define RSQRT(x) rsqrtf(x)
#else
#define PER_THREAD (HIDDEN / 8) /* a cpu "block" is one thread */
static float block_sum(float v) { return v; }
#define RSQRT(x) (1.0f / sqrtf(x))
#endif

/* A row, summed: add the residual to each of this thread's chunks (kept in r, and stored as the
 * new residual), then normalise them with the row's scale. */
__device__ static void norm_row(uint16_t *res, const uint16_t *w, uint16_t *y, size_t row,
                                float acc[PER_THREAD][8], int n)
{
    const size_t per_row = HIDDEN / 8;
    uint16_t r[PER_THREAD][8];
    float ss = 0;
    for (int i = 0; i < n; i++) {
        size_t chunk = row * per_row + symaddr_block_thread() + (size_t)i * symaddr_block_threads();
        memcpy(r[i], res + 8 * chunk, 16);
        for (int j = 0; j < 8; j++) {
            r[i][j] = to_bf(acc[i][j] + bf(r[i][j]));
            ss += bf(r[i][j]) * bf(r[i][j]);
        }
        memcpy(res + 8 * chunk, r[i], 16);
    }
    float scale = RSQRT(block_sum(ss) / HIDDEN + EPS);
    for (int i = 0; i < n; i++) {
        size_t k = symaddr_block_thread() + (size_t)i * symaddr_block_threads();
        uint16_t wv[8], out[8];
        memcpy(wv, w + 8 * k, 16);
        for (int j = 0; j < 8; j++)
            out[j] = to_bf(bf(r[i][j]) * scale * bf(wv[j]));
        memcpy(y + 8 * (row * per_row + k), out, 16);
    }
}

/* This thread's chunks of a row: how many. */
__device__ static int my_chunks(void)
{
    size_t t = symaddr_block_thread(), n = 0;
    for (size_t k = t; k < HIDDEN / 8; k += symaddr_block_threads())
        n++;
    return (int)n;
}

/* The fused kernel: one team call. Rows are spread over the blocks; the pushes over the grid. */
__global__ void allreduce_rmsnorm(symaddr_team_t team, const uint16_t *x, uint16_t *res,
                                  const uint16_t *w, uint16_t *y, int rows)
{
    symaddr_team_call_t c = symaddr_team_begin(&team);
    const size_t per_row = HIDDEN / 8; /* 16-byte chunks */
    for (size_t k = symaddr_grid_thread(); k < (size_t)rows * per_row;
         k += symaddr_grid_threads()) {
        uint32_t w4[4];
        memcpy(w4, x + 8 * k, 16);
        symaddr_team_push16(&team, &c, k, w4);
    }
    int ok = 1, n = my_chunks();
    for (int row = (int)symaddr_block_index(); row < rows; row += (int)symaddr_grid_blocks()) {
        float acc[PER_THREAD][8];
        for (int i = 0; i < n; i++) {
            size_t chunk = (size_t)row * per_row + symaddr_block_thread() +
                           (size_t)i * symaddr_block_threads();
            for (int j = 0; j < 8; j++)
                acc[i][j] = 0;
            for (int q = 0; q < team.node_size && ok; q++) { /* node-rank order: same bits */
                uint32_t w4[4];
                uint16_t v[8];
                ok = symaddr_team_take16(&team, &c, q, chunk, w4);
                memcpy(v, w4, 16);
                for (int j = 0; j < 8; j++)
                    acc[i][j] += bf(v[j]);
            }
        }
        norm_row(res, w, y, (size_t)row, acc, n);
    }
    symaddr_team_end(&team, &c, 1);
}

/* The unfused pipeline's second half: the same residual add and RMSNorm, after an allreduce. */
__global__ void rmsnorm(const uint16_t *sum, uint16_t *res, const uint16_t *w, uint16_t *y,
                        int rows)
{
    const size_t per_row = HIDDEN / 8;
    int n = my_chunks();
    for (int row = (int)symaddr_block_index(); row < rows; row += (int)symaddr_grid_blocks()) {
        float acc[PER_THREAD][8];
        for (int i = 0; i < n; i++) {
            size_t chunk = (size_t)row * per_row + symaddr_block_thread() +
                           (size_t)i * symaddr_block_threads();
            uint16_t v[8];
            memcpy(v, sum + 8 * chunk, 16);
            for (int j = 0; j < 8; j++)
                acc[i][j] = bf(v[j]);
        }
        norm_row(res, w, y, (size_t)row, acc, n);
    }
}

static uint16_t x_of(int rank, size_t i)
{
    return to_bf((float)((int)((i * 7 + (size_t)rank * 13) % 23) - 11) / 8.0f * (float)(rank + 1));
}
static uint16_t r_of(size_t i) { return to_bf((float)((int)(i % 19) - 9) / 4.0f); }
static uint16_t w_of(size_t j) { return to_bf(0.5f + (float)(j % 5) / 8.0f); }

typedef struct run {
    symaddr_context_t *ctx;
    symaddr_team_t team;
    symaddr_provider_t *prov;
    uint16_t *x, *res, *w, *y, *sum; /* x and sum symmetric (the allreduce's), the rest plain */
    int max_rows, rows_per_call;
} run_t;

static void launch_fused(run_t *r, int rows, void *stream)
{
    for (int done = 0; done < rows; done += r->rows_per_call) { /* a call moves a slot at most */
        int n = rows - done < r->rows_per_call ? rows - done : r->rows_per_call;
        size_t at = (size_t)done * HIDDEN;
        unsigned blocks = (unsigned)n < r->team.max_blocks ? (unsigned)n : r->team.max_blocks;
        LAUNCH(allreduce_rmsnorm, blocks, THREADS, stream, r->team, r->x + at, r->res + at, r->w,
               r->y + at, n);
    }
}

static void launch_unfused(run_t *r, int rows, void *stream)
{
    CHECK(r->ctx, symaddr_allreduce(r->ctx, r->x, r->sum, (size_t)rows * HIDDEN, SYMADDR_BFLOAT16,
                                    SYMADDR_SUM, stream));
    LAUNCH(rmsnorm, (unsigned)rows, THREADS, stream, r->sum, r->res, r->w, r->y, rows);
}

/* Upload the inputs of rows rows, run the fused (or unfused) kernel once, and compare residual'
 * (bit for bit: the sums are f32 in rank order on both sides; the unfused allreduce rounds its
 * sum to bf16 before the residual is added) and y (within 2 bf16 steps: the row's sum of
 * squares is added in another order) with a sequential reference. */
static long check(run_t *r, int rows, int fused, int rank, int size)
{
    size_t n = (size_t)rows * HIDDEN;
    uint16_t *h = (uint16_t *)malloc(n * 2), *res = (uint16_t *)malloc(n * 2),
             *y = (uint16_t *)malloc(n * 2), w[HIDDEN];
    for (size_t i = 0; i < n; i++)
        h[i] = x_of(rank, i), res[i] = r_of(i);
    for (size_t j = 0; j < HIDDEN; j++)
        w[j] = w_of(j);
    CHECK(r->ctx, symaddr_memcpy(r->ctx, r->x, h, n * 2));
    CHECK(r->ctx, symaddr_memcpy(r->ctx, r->res, res, n * 2));
    CHECK(r->ctx, symaddr_memcpy(r->ctx, r->w, w, sizeof(w)));
    CHECK(r->ctx, symaddr_barrier(r->ctx, NULL));
    if (fused)
        launch_fused(r, rows, NULL);
    else
        launch_unfused(r, rows, NULL);
    CHECK(r->ctx, symaddr_stream_sync(r->ctx, NULL));
    CHECK(r->ctx, symaddr_memcpy(r->ctx, h, r->res, n * 2));
    CHECK(r->ctx, symaddr_memcpy(r->ctx, y, r->y, n * 2));
    long wrong = 0;
    for (int row = 0; row < rows; row++) {
        float ss = 0;
        uint16_t want[HIDDEN];
        for (size_t j = 0; j < HIDDEN; j++) {
            size_t i = (size_t)row * HIDDEN + j;
            float acc = 0;
            for (int q = 0; q < size; q++)
                acc += bf(x_of(q, i));
            want[j] = to_bf((fused ? acc : bf(to_bf(acc))) + bf(res[i]));
            ss += bf(want[j]) * bf(want[j]);
            wrong += h[i] != want[j];
        }
        float scale = 1.0f / sqrtf(ss / HIDDEN + EPS);
        for (size_t j = 0; j < HIDDEN; j++) {
            float got = bf(y[(size_t)row * HIDDEN + j]), ref = bf(want[j]) * scale * bf(w[j]);
            wrong += !(fabsf(got - ref) <= fabsf(ref) / 64 + 1e-6f);
        }
    }
    free(h);
    free(res);
    free(y);
    return wrong;
}

/* Seconds per call of fused or unfused at rows, the slowest rank's: graph-replayed on CUDA. */
static double time_it(run_t *r, int rows, int fused, int iters)
{
    void *stream = NULL;
#if defined(__CUDACC__)
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    stream = s;
#endif
    for (int i = 0; i < 3; i++)
        fused ? launch_fused(r, rows, stream) : launch_unfused(r, rows, stream);
    CHECK(r->ctx, symaddr_stream_sync(r->ctx, stream));
#if defined(__CUDACC__)
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    for (int i = 0; i < iters; i++)
        fused ? launch_fused(r, rows, stream) : launch_unfused(r, rows, stream);
    cudaStreamEndCapture(s, &g);
    cudaGraphInstantiate(&ge, g, 0);
    cudaGraphLaunch(ge, s); /* warm-up replay */
    CHECK(r->ctx, symaddr_stream_sync(r->ctx, stream));
#endif
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
#if defined(__CUDACC__)
    cudaGraphLaunch(ge, s);
#else
    for (int i = 0; i < iters; i++)
        fused ? launch_fused(r, rows, stream) : launch_unfused(r, rows, stream);
#endif
    CHECK(r->ctx, symaddr_stream_sync(r->ctx, stream));
    double t = (MPI_Wtime() - t0) / iters, worst;
#if defined(__CUDACC__)
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    cudaStreamDestroy(s);
#endif
    MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

int main(int argc, char **argv)
{
    run_t r;
    symaddr_map_t *m;
    int bench = argc > 1 && !strcmp(argv[1], "--bench");

    MPI_Init(&argc, &argv);
    memset(&r, 0, sizeof(r));
    CHECK(NULL, symaddr_init(MPI_COMM_WORLD, NULL, &r.ctx));
    int rank = symaddr_rank(r.ctx), size = symaddr_size(r.ctx);
    CHECK(r.ctx, symaddr_team_get(r.ctx, &r.team));
    if (r.team.node_size != size) {
        if (rank == 0)
            printf("example-allreduce-rmsnorm: SKIP: the team is one node of %d ranks, not all %d; "
                   "run on one node\n",
                   r.team.node_size, size);
        CHECK(r.ctx, symaddr_finalize(&r.ctx));
        MPI_Finalize();
        return 77;
    }
    r.max_rows = 128;
    r.rows_per_call = (int)(r.team.lamport_slot / (HIDDEN * 2));
    size_t bytes = (size_t)r.max_rows * HIDDEN * 2;
    CHECK(r.ctx, symaddr_provider_get(r.ctx, SYMADDR_PROVIDER_IPC, &r.prov));
    CHECK(r.ctx, symaddr_symmetric_alloc(r.prov, bytes, (void **)&r.x, &m));
    CHECK(r.ctx, symaddr_symmetric_alloc(r.prov, bytes, (void **)&r.sum, &m));
    CHECK(r.ctx, symaddr_mem_alloc(r.ctx, bytes, (void **)&r.res));
    CHECK(r.ctx, symaddr_mem_alloc(r.ctx, bytes, (void **)&r.y));
    CHECK(r.ctx, symaddr_mem_alloc(r.ctx, HIDDEN * 2, (void **)&r.w));

    long wrong = 0;
    static const int rows[] = {1, 6, 7, 128};
    for (int k = 0; k < 4; k++)
        for (int fused = 1; fused >= 0; fused--)
            wrong += check(&r, rows[k], fused, rank, size);
    long all_wrong = 0;
    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("example-allreduce-rmsnorm: %d ranks, backend %s, hidden %d, rows 1, 6, 7, 128 "
               "(%d per Lamport call): %ld wrong\n",
               size, symaddr_backend_name(symaddr_backend(r.ctx)), HIDDEN, r.rows_per_call,
               all_wrong);
    if (bench && !all_wrong) {
        static const int tokens[] = {1, 2, 4, 6, 8, 16, 32, 64, 128};
        if (rank == 0)
            printf("# bf16 [tokens, %d]; per call, the slowest rank's%s; ratio < 1: fused faster\n"
                   "%8s %12s %14s %8s\n",
                   HIDDEN,
#if defined(__CUDACC__)
                   ", graph-replayed",
#else
                   "",
#endif
                   "tokens", "fused(us)", "unfused(us)", "ratio");
        for (int k = 0; k < 9; k++) {
            double tf = time_it(&r, tokens[k], 1, 50), tu = time_it(&r, tokens[k], 0, 50);
            if (rank == 0)
                printf("%8d %12.2f %14.2f %8.3f\n", tokens[k], tf * 1e6, tu * 1e6, tf / tu);
        }
    }
    CHECK(r.ctx, symaddr_mem_free(r.ctx, r.res));
    CHECK(r.ctx, symaddr_mem_free(r.ctx, r.y));
    CHECK(r.ctx, symaddr_mem_free(r.ctx, r.w));
    CHECK(r.ctx, symaddr_symmetric_free(r.prov, r.x));
    CHECK(r.ctx, symaddr_symmetric_free(r.prov, r.sum));
    CHECK(r.ctx, symaddr_finalize(&r.ctx));
    MPI_Finalize();
    return all_wrong ? 1 : 0;
}
