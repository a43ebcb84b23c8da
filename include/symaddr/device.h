/* SPDX-License-Identifier: MIT */
/**
 * @file device.h
 * @brief symaddr device library: translation and remote access through a peer table.
 *
 * Works in HIP kernels (hipcc), CUDA kernels (nvcc) and plain C/C++ on the cpu
 * backend, where a "block" is the calling thread alone.
 *
 * Everything here consumes only a pointer and a peer table:
 *
 *     remote = peer_bases[target] + (ptr - peer_bases[local_rank])
 *
 * The table must be the one of the allocation that holds ptr (its map's
 * peer_bases, or the context's heap_bases for heap memory).
 */
#ifndef SYMADDR_DEVICE_H
#define SYMADDR_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#endif

#if defined(__HIPCC__) || defined(__CUDACC__)
#define SYMADDR_ON_GPU 1
#define SYMADDR_DEVFN static __device__ __forceinline__
#define SYMADDR_HOSTDEVFN static __host__ __device__ __forceinline__
#else
#define SYMADDR_HOSTDEVFN static inline
#define SYMADDR_ON_GPU 0
#define SYMADDR_DEVFN static inline
#endif

/** Index of the calling thread in its block, and the block's size (1 on the cpu). */
SYMADDR_DEVFN unsigned symaddr_block_thread(void)
{
#if SYMADDR_ON_GPU
    return threadIdx.x;
#else
    return 0;
#endif
}

SYMADDR_DEVFN unsigned symaddr_block_threads(void)
{
#if SYMADDR_ON_GPU
    return blockDim.x;
#else
    return 1;
#endif
}

/** Index of the calling thread in the grid, and the grid's thread count. */
SYMADDR_DEVFN size_t symaddr_grid_thread(void)
{
#if SYMADDR_ON_GPU
    return (size_t)blockIdx.x * blockDim.x + threadIdx.x;
#else
    return 0;
#endif
}

SYMADDR_DEVFN size_t symaddr_grid_threads(void)
{
#if SYMADDR_ON_GPU
    return (size_t)gridDim.x * blockDim.x;
#else
    return 1;
#endif
}

/** Barrier of the block (no-op on the cpu, where the block is one thread). */
SYMADDR_DEVFN void symaddr_block_sync(void)
{
#if SYMADDR_ON_GPU
    __syncthreads();
#endif
}

/** Translate @p ptr (inside the allocation of @p peer_bases) to rank @p target's copy.
 *  Pure arithmetic, so it also works on the host with a host copy of the table. */
SYMADDR_HOSTDEVFN void *symaddr_translate(const void *ptr, int target, const uint64_t *peer_bases,
                                      int local_rank)
{
    return (void *)(uintptr_t)(peer_bases[target] +
                               ((uint64_t)(uintptr_t)ptr - peer_bases[local_rank]));
}

/** Copy @p bytes with the threads [first, first + count) of the caller; 16-byte accesses
 *  when both pointers allow them. */
SYMADDR_DEVFN void symaddr_copy_bytes_(void *dst, const void *src, size_t bytes, size_t first,
                                       size_t count)
{
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    size_t i = first;
    if ((((uintptr_t)d | (uintptr_t)s) & 15) == 0) {
        typedef struct {
            uint64_t a, b;
        } symaddr_v16_t;
        size_t nv = bytes / 16;
        symaddr_v16_t *dv = (symaddr_v16_t *)d;
        const symaddr_v16_t *sv = (const symaddr_v16_t *)s;
        for (size_t v = first; v < nv; v += count)
            dv[v] = sv[v];
        i = nv * 16 + first;
    }
    for (; i < bytes; i += count)
        d[i] = s[i];
}

/** Block-cooperative put: every thread of the block calls it with the same arguments. */
SYMADDR_DEVFN void symaddr_put_block(void *dst, const void *src, size_t bytes, int target,
                                     const uint64_t *peer_bases, int local_rank)
{
    symaddr_copy_bytes_(symaddr_translate(dst, target, peer_bases, local_rank), src, bytes,
                        symaddr_block_thread(), symaddr_block_threads());
}

/** Block-cooperative get: src is translated, dst is local. */
SYMADDR_DEVFN void symaddr_get_block(void *dst, const void *src, size_t bytes, int target,
                                     const uint64_t *peer_bases, int local_rank)
{
    symaddr_copy_bytes_(dst, symaddr_translate(src, target, peer_bases, local_rank), bytes,
                        symaddr_block_thread(), symaddr_block_threads());
}

/** Grid-wide put: every thread of the grid calls it with the same arguments. */
SYMADDR_DEVFN void symaddr_put_grid(void *dst, const void *src, size_t bytes, int target,
                                    const uint64_t *peer_bases, int local_rank)
{
    symaddr_copy_bytes_(symaddr_translate(dst, target, peer_bases, local_rank), src, bytes,
                        symaddr_grid_thread(), symaddr_grid_threads());
}

/** Order this thread's earlier remote stores before its later ones, system-wide. */
SYMADDR_DEVFN void symaddr_fence(void)
{
#if SYMADDR_ON_GPU
    __threadfence_system();
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

#endif /* SYMADDR_DEVICE_H */
