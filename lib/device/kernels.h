/* SPDX-License-Identifier: MIT */
/* Kernel launchers. lib/device/kernels.hip is compiled once per backend; each
 * build exports one table of these, named symaddr_kernels_<backend>. */
#ifndef SYMADDR_LIB_DEVICE_KERNELS_H
#define SYMADDR_LIB_DEVICE_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "symaddr/types.h"
#include "collectives.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct symaddr_kernels {
    size_t size;
    /* dst[i] = value for i < count. */
    symaddr_status_t (*fill_u32)(void *stream, uint32_t *dst, size_t count, uint32_t value);
    /* dst[i] = src[i] translated through a peer table: dst on rank target. */
    symaddr_status_t (*put_bytes)(void *stream, void *dst, const void *src, size_t bytes,
                                  int target, const uint64_t *peer_bases, int local_rank);
    /* src translated: read from rank target into local dst. */
    symaddr_status_t (*get_bytes)(void *stream, void *dst, const void *src, size_t bytes,
                                  int target, const uint64_t *peer_bases, int local_rank);
    /* One remote atomic add, at system scope. */
    symaddr_status_t (*atomic_add_u32)(void *stream, uint32_t *ptr, uint32_t value, int target,
                                       const uint64_t *peer_bases, int local_rank);
    symaddr_status_t (*atomic_add_u64)(void *stream, uint64_t *ptr, uint64_t value, int target,
                                       const uint64_t *peer_bases, int local_rank);
} symaddr_kernels_t;

typedef struct symaddr_coll_ops {
    size_t size;
    symaddr_status_t (*launch)(const symaddr_coll_desc_t *desc, void *stream);
    /* Blocks of every collective kernel that device holds resident at once, whoever launches
     * them (0 when the runtime cannot say); UINT_MAX on the cpu, whose "kernel" is a call. */
    unsigned (*resident_blocks)(int device);
    /* inout = inout op in, element-wise, on the host (cpu build only). */
    void (*host_reduce)(symaddr_dtype_t dtype, symaddr_redop_t op, void *inout, const void *in,
                        size_t count);
} symaddr_coll_ops_t;

extern const symaddr_coll_ops_t symaddr_coll_cpu;
extern const symaddr_coll_ops_t symaddr_coll_gpu;

extern const symaddr_kernels_t symaddr_kernels_cpu;
extern const symaddr_kernels_t symaddr_kernels_gpu;

#ifdef __cplusplus
}
#endif

#endif
