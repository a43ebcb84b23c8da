/* SPDX-License-Identifier: MIT */
/* The one kernel source of symaddr, built by hipcc, by nvcc (through
 * hip2cuda.h) and as host C++ for the cpu backend. Kernels are grid-stride
 * loops so that they are right for any launch shape, the cpu's 1x1 included. */
#include "runtime.h"
#include "kernels.h"
/* The library's own kernels always carry the checks; the table says whether they run. */
#define SYMADDR_VALIDATE 1
#include "symaddr/device.h"

__global__ void symaddr_k_fill_u32(uint32_t *dst, size_t count, uint32_t value)
{
    for (size_t i = symaddr_grid_thread(); i < count; i += symaddr_grid_threads())
        dst[i] = value;
}

__global__ void symaddr_k_put_bytes(void *dst, const void *src, size_t bytes, int target,
                                    const uint64_t *peer_bases, int local_rank)
{
    symaddr_put_grid(dst, src, bytes, target, peer_bases, local_rank);
}

__global__ void symaddr_k_get_bytes(void *dst, const void *src, size_t bytes, int target,
                                    const uint64_t *peer_bases, int local_rank)
{
    symaddr_get_grid(dst, src, bytes, target, peer_bases, local_rank);
}

__global__ void symaddr_k_atomic_add_u32(uint32_t *ptr, uint32_t value, int target,
                                         const uint64_t *peer_bases, int local_rank)
{
    symaddr_atomic_add_u32(ptr, value, target, peer_bases, local_rank);
}

__global__ void symaddr_k_atomic_add_u64(uint64_t *ptr, uint64_t value, int target,
                                         const uint64_t *peer_bases, int local_rank)
{
    symaddr_atomic_add_u64(ptr, value, target, peer_bases, local_rank);
}

#if SYMADDR_HOST_PASS
namespace
{

constexpr unsigned kThreads = 256;

unsigned blocks_for(size_t work)
{
    size_t b = (work + kThreads - 1) / kThreads;
    return b == 0 ? 1u : (b > 1024 ? 1024u : (unsigned)b);
}

symaddr_status_t fill_u32(void *stream, uint32_t *dst, size_t count, uint32_t value)
{
    return SYMADDR_LAUNCH(symaddr_k_fill_u32, blocks_for(count), kThreads, stream, dst, count,
                          value);
}

symaddr_status_t put_bytes(void *stream, void *dst, const void *src, size_t bytes, int target,
                           const uint64_t *peer_bases, int local_rank)
{
    return SYMADDR_LAUNCH(symaddr_k_put_bytes, blocks_for(bytes / 16), kThreads, stream, dst, src,
                          bytes, target, peer_bases, local_rank);
}

symaddr_status_t get_bytes(void *stream, void *dst, const void *src, size_t bytes, int target,
                           const uint64_t *peer_bases, int local_rank)
{
    return SYMADDR_LAUNCH(symaddr_k_get_bytes, blocks_for(bytes / 16), kThreads, stream, dst, src,
                          bytes, target, peer_bases, local_rank);
}

symaddr_status_t atomic_add_u32(void *stream, uint32_t *ptr, uint32_t value, int target,
                                const uint64_t *peer_bases, int local_rank)
{
    return SYMADDR_LAUNCH(symaddr_k_atomic_add_u32, 1, 1, stream, ptr, value, target, peer_bases,
                          local_rank);
}

symaddr_status_t atomic_add_u64(void *stream, uint64_t *ptr, uint64_t value, int target,
                                const uint64_t *peer_bases, int local_rank)
{
    return SYMADDR_LAUNCH(symaddr_k_atomic_add_u64, 1, 1, stream, ptr, value, target, peer_bases,
                          local_rank);
}

} // namespace
#endif

#if SYMADDR_HOST_PASS
extern "C" const symaddr_kernels_t SYMADDR_KERNELS_TABLE = {
    sizeof(symaddr_kernels_t), fill_u32, put_bytes, get_bytes, atomic_add_u32, atomic_add_u64,
};
#endif
