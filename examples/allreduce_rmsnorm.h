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

/* The fused kernel: one team call. Rows are spread over the blocks, and each thread pushes the
 * chunks of its block's rows that it takes back and sums, so no thread waits on another block. */
__global__ void allreduce_rmsnorm(symaddr_team_t team, const uint16_t *x, uint16_t *res,
                                  const uint16_t *w, uint16_t *y, int rows)
{
    symaddr_team_call_t c = symaddr_team_begin(&team);
    const size_t per_row = HIDDEN / 8; /* 16-byte chunks */
    int ok = 1, n = my_chunks();
    for (int row = (int)symaddr_block_index(); row < rows; row += (int)symaddr_grid_blocks())
        for (int i = 0; i < n; i++) {
            size_t k = (size_t)row * per_row + symaddr_block_thread() +
                       (size_t)i * symaddr_block_threads();
            uint32_t w4[4];
            memcpy(w4, x + 8 * k, 16);
            symaddr_team_push16(&team, &c, k, w4);
        }
    for (int row = (int)symaddr_block_index(); row < rows && ok;
         row += (int)symaddr_grid_blocks()) {
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
        /* a failed call (recorded for the host) writes nothing more */
        if ((ok = symaddr_block_all(ok)))
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

/* Rows at most one Lamport call moves. */
static inline int fused_rows_per_call(const symaddr_team_t *team)
{
    return (int)(team->lamport_slot / (HIDDEN * 2));
}

/* The fused kernel over rows rows: one launch per Lamport slot's worth of rows. */
static inline void fused_launch(const symaddr_team_t *team, const uint16_t *x, uint16_t *res,
                                const uint16_t *w, uint16_t *y, int rows, void *stream)
{
    int per_call = fused_rows_per_call(team);
    for (int done = 0; done < rows; done += per_call) {
        int n = rows - done < per_call ? rows - done : per_call;
        size_t at = (size_t)done * HIDDEN;
        unsigned blocks = (unsigned)n < team->max_blocks ? (unsigned)n : team->max_blocks;
        LAUNCH(allreduce_rmsnorm, blocks, THREADS, stream, *team, x + at, res + at, w, y + at, n);
    }
}

/* The unfused pipeline's RMSNorm, after an allreduce left the sum in sum. */
static inline void rmsnorm_launch(const uint16_t *sum, uint16_t *res, const uint16_t *w,
                                  uint16_t *y, int rows, void *stream)
{
    LAUNCH(rmsnorm, (unsigned)rows, THREADS, stream, sum, res, w, y, rows);
}

#endif
