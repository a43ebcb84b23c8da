/* SPDX-License-Identifier: MIT */
/* The kernels of the fused allreduce + residual add + RMSNorm example (allreduce_rmsnorm.hip),
 * apart so that symaddr-bench's fused_rmsnorm row times the same code. bf16 rows of HIDDEN:
 *
 *   residual' = bf16(sum over ranks of x + residual)
 *   y         = bf16(residual' / sqrt(mean(residual'^2) + eps) * weight)
 */
#ifndef SYMADDR_EXAMPLE_ALLREDUCE_RMSNORM_H
#define SYMADDR_EXAMPLE_ALLREDUCE_RMSNORM_H

#include <math.h>
#include <string.h>

#include "example.h"
#include "symaddr/team.h"

#define HIDDEN 6144
#define CHUNKS (HIDDEN / 8) /* 16-byte chunks of 8 bf16 per row */
#define EPS 1e-6f

/* 8 bf16 as one 16-byte load or store: element 2j is the low half of word j. */
typedef struct __attribute__((aligned(16))) bf16x8 {
    uint32_t w[4];
} bf16x8_t;

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

/* One 16-byte load. */
__host__ __device__ static inline bf16x8_t load8(const bf16x8_t *p)
{
#if defined(__HIPCC__) || defined(__CUDACC__)
    uint4 u = *(const uint4 *)p;
    bf16x8_t c = {{u.x, u.y, u.z, u.w}};
    return c;
#else
    return *p;
#endif
}

/* 8 bf16 as floats. */
__host__ __device__ static inline void unpack8(const bf16x8_t *c, float v[8])
{
    for (int j = 0; j < 4; j++) {
        v[2 * j] = bf((uint16_t)c->w[j]);
        v[2 * j + 1] = bf((uint16_t)(c->w[j] >> 16));
    }
}

/* 8 floats as bf16. NVIDIA GPUs convert a pair in one instruction, whose NaNs lose their
 * payload: a run with a NaN is converted again by to_bf, so that every backend gives the same
 * bits. */
__host__ __device__ static inline bf16x8_t pack8(const float v[8])
{
    bf16x8_t c;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    uint32_t nan = 0;
    for (int j = 0; j < 4; j++) {
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(c.w[j]) : "f"(v[2 * j + 1]), "f"(v[2 * j]));
        nan |= ((c.w[j] & 0x7fff7fffu) + 0x007f007fu) & 0x80008000u; /* a half above inf */
    }
    if (!nan)
        return c;
#endif
    for (int j = 0; j < 4; j++)
        c.w[j] = (uint32_t)to_bf(v[2 * j]) | (uint32_t)to_bf(v[2 * j + 1]) << 16;
    return c;
}

#if defined(__HIPCC__) || defined(__CUDACC__)
/* A block per row, a thread per chunk: each thread keeps its chunk in registers from the sum to
 * the normalised output. */
#define THREADS (CHUNKS < 1024 ? CHUNKS : 1024)
#define PER_THREAD ((CHUNKS + THREADS - 1) / THREADS)

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
#define UNROLL _Pragma("unroll")
#define BOUNDS __launch_bounds__(THREADS) /* registers for a whole block of a row */
#else
#define UNROLL
#define BOUNDS
#define THREADS 1
#define PER_THREAD CHUNKS /* a cpu "block" is one thread */
static float block_sum(float v) { return v; }
#define RSQRT(x) (1.0f / sqrtf(x))
#endif

/* Chunk i of this thread in a row, or -1 past the row's end. */
__device__ static inline long my_chunk(int i)
{
    size_t k = symaddr_block_thread() + (size_t)i * symaddr_block_threads();
    return k < CHUNKS ? (long)k : -1;
}

/* Where a row's results go: this rank's res and y, or, with a team (the two-shot), the same
 * rows of every node peer's, through their maps. */
typedef struct rows_out {
    bf16x8_t *res, *y;
    const uint64_t *res_pb, *y_pb;
    const symaddr_team_t *all; /* NULL: this rank's only */
} rows_out_t;

__device__ static inline void store8(const rows_out_t *o, bf16x8_t *p, const uint64_t *pb,
                                     bf16x8_t v)
{
    if (o->all)
        symaddr_team_put16_all(o->all, p, pb, v.w);
    else
        *p = v;
}

/* This thread's chunks of a row's residual and of the weight: loaded before the wait for the
 * peers' data, so that their latency hides behind it. */
typedef struct row_in {
    bf16x8_t res[PER_THREAD], w[PER_THREAD];
} row_in_t;

__device__ static void load_row_in(row_in_t *in, const bf16x8_t *res, const bf16x8_t *w, size_t row)
{
    for (int i = 0; i < PER_THREAD; i++) {
        long k = my_chunk(i);
        if (k >= 0) {
            in->res[i] = load8(&res[row * CHUNKS + (size_t)k]);
            in->w[i] = load8(&w[k]);
        }
    }
}

/* A row, summed into acc: add this rank's residual (the new residual goes to o), then normalise
 * with the row's scale, all while the row is in registers. */
__device__ static void norm_row(const rows_out_t *o, const row_in_t *in, size_t row,
                                float acc[PER_THREAD][8])
{
    float ss = 0;
    for (int i = 0; i < PER_THREAD; i++) {
        long k = my_chunk(i);
        if (k < 0)
            continue;
        float r[8];
        unpack8(&in->res[i], r);
        for (int j = 0; j < 8; j++)
            r[j] = acc[i][j] + r[j];
        bf16x8_t stored = pack8(r); /* residual', rounded as it is stored */
        unpack8(&stored, acc[i]);
        for (int j = 0; j < 8; j++)
            ss += acc[i][j] * acc[i][j];
        store8(o, &o->res[row * CHUNKS + (size_t)k], o->res_pb, stored);
    }
    float scale = RSQRT(block_sum(ss) / HIDDEN + EPS);
    for (int i = 0; i < PER_THREAD; i++) {
        long k = my_chunk(i);
        if (k < 0)
            continue;
        float wv[8], out[8];
        unpack8(&in->w[i], wv);
        for (int j = 0; j < 8; j++)
            out[j] = acc[i][j] * scale * wv[j];
        store8(o, &o->y[row * CHUNKS + (size_t)k], o->y_pb, pack8(out));
    }
}

/* The fused kernel: one team call. Rows are spread over the blocks, and each thread pushes the
 * chunks of its block's rows that it takes back and sums, so no thread waits on another block. */
__global__ void BOUNDS allreduce_rmsnorm(symaddr_team_t team, const bf16x8_t *x, bf16x8_t *res,
                                         const bf16x8_t *w, bf16x8_t *y, int rows)
{
    symaddr_team_call_t c = symaddr_team_begin(&team);
    int ok = 1;
    for (int row = (int)symaddr_block_index(); row < rows; row += (int)symaddr_grid_blocks())
        for (int i = 0; i < PER_THREAD; i++) {
            long k = my_chunk(i);
            if (k >= 0) {
                size_t at = (size_t)row * CHUNKS + (size_t)k;
                bf16x8_t v = load8(&x[at]);
                symaddr_team_push16(&team, &c, at, v.w);
            }
        }
    for (int row = (int)symaddr_block_index(); row < rows && ok;
         row += (int)symaddr_grid_blocks()) {
        float acc[PER_THREAD][8];
        row_in_t in;
        load_row_in(&in, res, w, (size_t)row);
        for (int i = 0; i < PER_THREAD; i++) {
            long k = my_chunk(i);
            for (int j = 0; j < 8; j++)
                acc[i][j] = 0;
            /* up to SYMADDR_TEAM_TAKE_MAX peers at once, summed in node-rank order */
            for (int q0 = 0; q0 < team.node_size && ok && k >= 0; q0 += SYMADDR_TEAM_TAKE_MAX) {
                int n = team.node_size - q0 < SYMADDR_TEAM_TAKE_MAX ? team.node_size - q0
                                                                    : SYMADDR_TEAM_TAKE_MAX;
                bf16x8_t v[SYMADDR_TEAM_TAKE_MAX];
                ok = symaddr_team_take16_n(&team, &c, q0, n, (size_t)row * CHUNKS + (size_t)k,
                                           (uint32_t(*)[4])v);
                UNROLL
                for (int u = 0; u < SYMADDR_TEAM_TAKE_MAX; u++) {
                    float f[8];
                    unpack8(&v[u], f);
                    for (int j = 0; j < 8 && u < n && ok; j++)
                        acc[i][j] += f[j];
                }
            }
        }
        /* a failed call (recorded for the host) writes nothing more */
        rows_out_t o = {res, y, NULL, NULL, NULL};
        if ((ok = symaddr_block_all(ok)))
            norm_row(&o, &in, (size_t)row, acc);
    }
    symaddr_team_end(&team, &c, 1);
}

/* The fused kernel for more rows than a Lamport call moves: a two-shot. Each rank owns a share
 * of the rows (symaddr_team_share): it sums them from every peer's x (loads), adds the residual,
 * normalises, and stores residual' and y into every peer's res and y (all symmetric). Two block
 * barriers: the peers' x is ready before the loads, and nobody's call ends (and a next call
 * rewrites x) before every block of every peer has stored its rows. */
__global__ void BOUNDS allreduce_rmsnorm_2shot(symaddr_team_t team, const bf16x8_t *x,
                                               const uint64_t *x_pb, bf16x8_t *res,
                                               const uint64_t *res_pb, const bf16x8_t *w,
                                               bf16x8_t *y, const uint64_t *y_pb, int rows)
{
    symaddr_team_call_t c = symaddr_team_begin(&team);
    size_t lo, hi;
    symaddr_team_share(&team, (size_t)rows, 1, &lo, &hi);
    rows_out_t o = {res, y, res_pb, y_pb, &team};
    if (!symaddr_team_barrier_block(&team, &c, 1))
        goto finish;
    for (size_t row = lo + symaddr_block_index(); row < hi; row += symaddr_grid_blocks()) {
        float acc[PER_THREAD][8];
        row_in_t in;
        load_row_in(&in, res, w, (size_t)row);
        for (int i = 0; i < PER_THREAD; i++) {
            long k = my_chunk(i);
            for (int j = 0; j < 8; j++)
                acc[i][j] = 0;
            /* every peer's loads in flight together, then summed in node-rank order */
            for (int q0 = 0; q0 < team.node_size && k >= 0; q0 += SYMADDR_TEAM_TAKE_MAX) {
                bf16x8_t v[SYMADDR_TEAM_TAKE_MAX];
                UNROLL
                for (int u = 0; u < SYMADDR_TEAM_TAKE_MAX; u++)
                    if (q0 + u < team.node_size)
                        v[u] = load8(&((const bf16x8_t *)symaddr_team_peer(
                            &team, x, x_pb, q0 + u))[row * CHUNKS + (size_t)k]);
                UNROLL
                for (int u = 0; u < SYMADDR_TEAM_TAKE_MAX; u++) {
                    float f[8];
                    unpack8(&v[u], f);
                    for (int j = 0; j < 8 && q0 + u < team.node_size; j++)
                        acc[i][j] += f[j];
                }
            }
        }
        norm_row(&o, &in, row, acc);
    }
    symaddr_team_barrier_block(&team, &c, 2);
finish:
    symaddr_team_end(&team, &c, 0);
}

/* The unfused pipeline's second half: the same residual add and RMSNorm, after an allreduce. */
__global__ void BOUNDS rmsnorm(const bf16x8_t *sum, bf16x8_t *res, const bf16x8_t *w, bf16x8_t *y,
                               int rows)
{
    for (int row = (int)symaddr_block_index(); row < rows; row += (int)symaddr_grid_blocks()) {
        float acc[PER_THREAD][8];
        row_in_t in;
        load_row_in(&in, res, w, (size_t)row);
        for (int i = 0; i < PER_THREAD; i++) {
            long k = my_chunk(i);
            if (k >= 0) {
                bf16x8_t sv = load8(&sum[(size_t)row * CHUNKS + (size_t)k]);
                unpack8(&sv, acc[i]);
            }
        }
        rows_out_t o = {res, y, NULL, NULL, NULL};
        norm_row(&o, &in, (size_t)row, acc);
    }
}

/* Rows at most one Lamport call moves. */
static inline int fused_rows_per_call(const symaddr_team_t *team)
{
    return (int)(team->lamport_slot / (HIDDEN * 2));
}

/* The fused allreduce + residual + RMSNorm of rows rows of x (symmetric, table x_pb) into res
 * and y (symmetric too: the two-shot stores into every peer's): one Lamport call where the rows
 * fit its slot, else a two-shot. Returns whether the launch was accepted. */
static inline int fused_launch(const symaddr_team_t *team, const uint16_t *x, const uint64_t *x_pb,
                               uint16_t *res, const uint64_t *res_pb, const uint16_t *w,
                               uint16_t *y, const uint64_t *y_pb, int rows, void *stream)
{
    if (rows <= fused_rows_per_call(team)) {
        unsigned blocks = (unsigned)rows < team->max_blocks ? (unsigned)rows : team->max_blocks;
        return SYMADDR_TEAM_KERNEL_LAUNCH(team, allreduce_rmsnorm, blocks, THREADS, stream, *team,
                                          (const bf16x8_t *)x, (bf16x8_t *)res, (const bf16x8_t *)w,
                                          (bf16x8_t *)y, rows) == SYMADDR_OK;
    }
    unsigned share = (unsigned)((rows + team->node_size - 1) / team->node_size);
    unsigned blocks = share < team->max_blocks ? share : team->max_blocks;
    return SYMADDR_TEAM_KERNEL_LAUNCH(team, allreduce_rmsnorm_2shot, blocks, THREADS, stream, *team,
                                      (const bf16x8_t *)x, x_pb, (bf16x8_t *)res, res_pb,
                                      (const bf16x8_t *)w, (bf16x8_t *)y, y_pb, rows) == SYMADDR_OK;
}

/* The unfused pipeline's RMSNorm, after an allreduce left the sum in sum. */
static inline int rmsnorm_launch(const uint16_t *sum, uint16_t *res, const uint16_t *w, uint16_t *y,
                                 int rows, void *stream)
{
    return SYMADDR_KERNEL_LAUNCH(rmsnorm, (unsigned)rows, THREADS, stream, (const bf16x8_t *)sum,
                                 (bf16x8_t *)res, (const bf16x8_t *)w, (bf16x8_t *)y,
                                 rows) == SYMADDR_OK;
}

#endif
