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
 * peer_bases, or the context's heap_bases for heap memory). Two calling forms:
 * explicit (ptr, target, peer_bases, local_rank) arguments, and a by-value
 * symaddr_buffer_t made on the host by symaddr_buffer_bind().
 *
 * Validation: compile with SYMADDR_VALIDATE defined to 1 and run with
 * SYMADDR_VALIDATE=1 (or symaddr_config_t.validate). Every translation then
 * checks that ptr lies inside the table's allocation and that the target is a
 * reachable rank; the first violation is stored in the map's error flag
 * (symaddr_map_check() reads it) and the access is skipped. Validation reads
 * the header symaddr places in front of its own tables, so with
 * SYMADDR_VALIDATE=1 pass only tables that symaddr made.
 */
#ifndef SYMADDR_DEVICE_H
#define SYMADDR_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "symaddr/types.h"

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#endif

#if defined(__HIPCC__) || defined(__CUDACC__)
#define SYMADDR_ON_GPU 1
#define SYMADDR_DEVFN static __device__ __forceinline__
#define SYMADDR_HOSTDEVFN static __host__ __device__ __forceinline__
#else
/** 1 in a hipcc or nvcc compile (device and host passes), 0 in a plain C/C++ one. */
#define SYMADDR_ON_GPU 0
/** How device.h's functions are declared: device functions (GPU), or plain inline ones (the
 *  cpu backend, where a kernel is a function). */
#define SYMADDR_DEVFN static inline
/** The same for functions that host code calls too. */
#define SYMADDR_HOSTDEVFN static inline
#include <sched.h>
#endif

#ifndef SYMADDR_VALIDATE
/** Define to 1 before including device.h to build the validation checks into its functions. */
#define SYMADDR_VALIDATE 0
#endif

/** @name The header in front of every table symaddr builds: peer_bases[-4 .. -1]
 *  (what validation reads; tables of other libraries have none). */
///@{
#define SYMADDR_TABLE_MAGIC 0x53594d4144445231ull /**< "SYMADDR1" */
#define SYMADDR_TABLE_HEADER 4                    /**< words of the header */
#define SYMADDR_HDR_MAGIC (-4)                    /**< SYMADDR_TABLE_MAGIC */
#define SYMADDR_HDR_INFO (-3)  /**< world_size | validate << 32 | the map's SYMADDR_CAP_* << 48 */
#define SYMADDR_HDR_BYTES (-2) /**< allocation_bytes */
#define SYMADDR_HDR_ERROR (-1) /**< first violation, as -status, in the low 32 bits */
#define SYMADDR_HDR_CAPS_SHIFT 48       /**< where the capability bits sit in the INFO word */
#define SYMADDR_HDR_CAPS_MASK 0xffffull /**< and how many */
///@}

/** 16-bit floating-point values (f16) travel as their bits. */
typedef uint16_t symaddr_f16_t;
/** bfloat16 values travel as their bits. */
typedef uint16_t symaddr_bf16_t;

/** The memory order of an atomic's _sem form, as Triton's sem: relaxed; acquire (this
 *  thread's later accesses stay after the atomic); release (its earlier accesses and stores
 *  are visible before it); acq_rel (both). The plain forms are relaxed on the GPU and
 *  sequentially consistent on the cpu backend. Fences are at the atomic's scope: system for
 *  the explicit forms, the map's for the buffer forms. */
typedef enum symaddr_sem {
    SYMADDR_SEM_RELAXED = 0, /**< no ordering beyond the atomic itself */
    SYMADDR_SEM_ACQUIRE = 1, /**< later accesses after the atomic */
    SYMADDR_SEM_RELEASE = 2, /**< earlier accesses before the atomic */
    SYMADDR_SEM_ACQ_REL = 3, /**< both */
} symaddr_sem_t;

#include "symaddr/detail/device.h" /* what the functions below are made of */

/* ---- threads ---------------------------------------------------------------------------- */

/** Index of the calling thread in its block, and the block's size (1 on the cpu). */
SYMADDR_DEVFN unsigned symaddr_block_thread(void)
{
#if SYMADDR_ON_GPU
    return threadIdx.x;
#else
    return 0;
#endif
}

/** Threads of the calling block (1 on the cpu). */
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

/** Threads of the whole grid (1 on the cpu). */
SYMADDR_DEVFN size_t symaddr_grid_threads(void)
{
#if SYMADDR_ON_GPU
    return (size_t)gridDim.x * blockDim.x;
#else
    return 1;
#endif
}

/** Index of the calling block in the grid, and the number of blocks (0 and 1 on the cpu). */
SYMADDR_DEVFN unsigned symaddr_block_index(void)
{
#if SYMADDR_ON_GPU
    return blockIdx.x;
#else
    return 0;
#endif
}

/** Blocks of the grid (1 on the cpu). */
SYMADDR_DEVFN unsigned symaddr_grid_blocks(void)
{
#if SYMADDR_ON_GPU
    return gridDim.x;
#else
    return 1;
#endif
}

/** Barrier of the block that also returns whether @p pred held on every thread. */
SYMADDR_DEVFN int symaddr_block_all(int pred)
{
#if SYMADDR_ON_GPU
    return __syncthreads_and(pred);
#else
    return pred;
#endif
}

/** Barrier of the block (no-op on the cpu, where the block is one thread). */
SYMADDR_DEVFN void symaddr_block_sync(void)
{
#if SYMADDR_ON_GPU
    __syncthreads();
#endif
}

#if !SYMADDR_ON_GPU
/** The cpu backend's symaddr_yield: sched_yield, or where that cannot reach the ranks this one
 *  waits for (each in a scheduling group of its own, as MPICH's launcher starts them on Linux),
 *  a short sleep on every 16th call. A function of the library, as symaddr_clock_host_ns. */
#ifdef __cplusplus
extern "C"
#endif
    void
    symaddr_yield_host(void);
#endif

/** Let other work run while this thread waits (ranks may outnumber cpu cores). */
SYMADDR_DEVFN void symaddr_yield(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    __nanosleep(100);
#elif defined(__HIP_DEVICE_COMPILE__)
    __builtin_amdgcn_s_sleep(2); /* about 128 clocks: the wave yields its issue slots */
#elif !SYMADDR_ON_GPU
    symaddr_yield_host();
#endif
}

/* ---- ordering ---------------------------------------------------------------------------- */

/** Order this thread's earlier remote accesses before its later ones, system-wide. */
SYMADDR_DEVFN void symaddr_fence(void)
{
#if SYMADDR_ON_GPU
    __threadfence_system();
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/** Wait until this thread's earlier remote stores are visible to every rank. Stores through
 *  load/store mappings complete in order once fenced, so quiet is a system fence. */
SYMADDR_DEVFN void symaddr_quiet(void) { symaddr_fence(); }

/* ---- translation ------------------------------------------------------------------------- */

/* symaddr_translate of an access of len bytes at ptr: under validation every one of them must
 * lie in the table's allocation (the element and bulk forms pass their size). */
SYMADDR_HOSTDEVFN void *symaddr_translate_n_(const void *ptr, size_t len, int target,
                                             const uint64_t *peer_bases, int local_rank)
{
#if SYMADDR_VALIDATE &&                                                                            \
    (SYMADDR_ON_GPU ? defined(__HIP_DEVICE_COMPILE__) || defined(__CUDA_ARCH__) : 1)
    if (symaddr_validate_(ptr, len, target, peer_bases, local_rank))
        return NULL;
#else
    (void)len;
#endif
    return (void *)(uintptr_t)(peer_bases[target] +
                               ((uint64_t)(uintptr_t)ptr - peer_bases[local_rank]));
}

/** Translate @p ptr (inside the allocation of @p peer_bases) to rank @p target's copy.
 *  With validation on, returns NULL for a violation (and records it). */
SYMADDR_HOSTDEVFN void *symaddr_translate(const void *ptr, int target, const uint64_t *peer_bases,
                                          int local_rank)
{
    return symaddr_translate_n_(ptr, 1, target, peer_bases, local_rank);
}

/** Whether loads and stores reach rank @p target's copy of the allocation of @p peer_bases: its
 *  entry is not 0 (0: a rank of another node, reached only through MPI, by symaddr_put/get and
 *  the collectives). One load of the table. Test it before translating for a peer that may be
 *  remote: such a peer's translation is 0 + offset, and a store through it faults.
 *  @return 1 if reachable, 0 if not. */
SYMADDR_HOSTDEVFN int symaddr_reachable(int target, const uint64_t *peer_bases)
{
    return peer_bases[target] != 0;
}

/** symaddr_reachable for a bound buffer. */
SYMADDR_HOSTDEVFN int symaddr_buffer_reachable(symaddr_buffer_t buf, int target)
{
    return symaddr_reachable(target, buf.peer_bases);
}

/** symaddr_translate of a bound buffer's own pointer to rank @p target. */
SYMADDR_HOSTDEVFN void *symaddr_buffer_translate(symaddr_buffer_t buf, int target)
{
    return symaddr_translate(buf.ptr, target, buf.peer_bases, buf.local_rank);
}

/* ---- bulk copies ------------------------------------------------------------------------- */

/** Block-cooperative put: every thread of the block calls it with the same arguments. */
SYMADDR_DEVFN void symaddr_put_block(void *dst, const void *src, size_t bytes, int target,
                                     const uint64_t *peer_bases, int local_rank)
{
    symaddr_copy_bytes_(symaddr_translate_n_(dst, bytes, target, peer_bases, local_rank), src,
                        bytes, symaddr_block_thread(), symaddr_block_threads());
}

/** Block-cooperative get: src is translated, dst is local. */
SYMADDR_DEVFN void symaddr_get_block(void *dst, const void *src, size_t bytes, int target,
                                     const uint64_t *peer_bases, int local_rank)
{
    symaddr_copy_bytes_(dst, symaddr_translate_n_(src, bytes, target, peer_bases, local_rank),
                        bytes, symaddr_block_thread(), symaddr_block_threads());
}

/** Grid-wide put and get: every thread of the grid calls them with the same arguments. */
SYMADDR_DEVFN void symaddr_put_grid(void *dst, const void *src, size_t bytes, int target,
                                    const uint64_t *peer_bases, int local_rank)
{
    symaddr_copy_bytes_(symaddr_translate_n_(dst, bytes, target, peer_bases, local_rank), src,
                        bytes, symaddr_grid_thread(), symaddr_grid_threads());
}

/** Grid-wide get: @p src is translated to @p target, @p dst is local. */
SYMADDR_DEVFN void symaddr_get_grid(void *dst, const void *src, size_t bytes, int target,
                                    const uint64_t *peer_bases, int local_rank)
{
    symaddr_copy_bytes_(dst, symaddr_translate_n_(src, bytes, target, peer_bases, local_rank),
                        bytes, symaddr_grid_thread(), symaddr_grid_threads());
}

/** Buffer forms: @p offset bytes into the bound buffer. */
SYMADDR_DEVFN void symaddr_buffer_put_block(symaddr_buffer_t dst, size_t offset, const void *src,
                                            size_t bytes, int target)
{
    symaddr_put_block((char *)dst.ptr + offset, src, bytes, target, dst.peer_bases, dst.local_rank);
}

/** Block-cooperative get from @p offset bytes into the bound buffer @p src on @p target. */
SYMADDR_DEVFN void symaddr_buffer_get_block(void *dst, symaddr_buffer_t src, size_t offset,
                                            size_t bytes, int target)
{
    symaddr_get_block(dst, (const char *)src.ptr + offset, bytes, target, src.peer_bases,
                      src.local_rank);
}

/* ---- typed load / store / put / get of one element ---------------------------------------- */

/* load returns 0 when validation refused the access. */
#define SYMADDR_DEFINE_ELEMENT_(T, sfx)                                                            \
    SYMADDR_DEVFN T symaddr_load_##sfx(const T *ptr, int target, const uint64_t *peer_bases,       \
                                       int local_rank)                                             \
    {                                                                                              \
        const volatile T *r = (const volatile T *)symaddr_translate_n_(ptr, sizeof(T), target,     \
                                                                       peer_bases, local_rank);    \
        return r ? *r : (T)0;                                                                      \
    }                                                                                              \
    SYMADDR_DEVFN void symaddr_store_##sfx(T *ptr, T value, int target,                            \
                                           const uint64_t *peer_bases, int local_rank)             \
    {                                                                                              \
        volatile T *r =                                                                            \
            (volatile T *)symaddr_translate_n_(ptr, sizeof(T), target, peer_bases, local_rank);    \
        if (r)                                                                                     \
            *r = value;                                                                            \
    }                                                                                              \
    /** put: local *src to rank target's *dst; get: rank target's *src to local *dst. */           \
    SYMADDR_DEVFN void symaddr_put_##sfx(T *dst, const T *src, int target,                         \
                                         const uint64_t *peer_bases, int local_rank)               \
    {                                                                                              \
        symaddr_store_##sfx(dst, *src, target, peer_bases, local_rank);                            \
    }                                                                                              \
    SYMADDR_DEVFN void symaddr_get_##sfx(T *dst, const T *src, int target,                         \
                                         const uint64_t *peer_bases, int local_rank)               \
    {                                                                                              \
        *dst = symaddr_load_##sfx(src, target, peer_bases, local_rank);                            \
    }                                                                                              \
    SYMADDR_DEVFN T symaddr_buffer_load_##sfx(symaddr_buffer_t buf, size_t index, int target)      \
    {                                                                                              \
        return symaddr_load_##sfx((const T *)buf.ptr + index, target, buf.peer_bases,              \
                                  buf.local_rank);                                                 \
    }                                                                                              \
    SYMADDR_DEVFN void symaddr_buffer_store_##sfx(symaddr_buffer_t buf, size_t index, T value,     \
                                                  int target)                                      \
    {                                                                                              \
        symaddr_store_##sfx((T *)buf.ptr + index, value, target, buf.peer_bases, buf.local_rank);  \
    }

SYMADDR_DEFINE_ELEMENT_(int32_t, i32)
SYMADDR_DEFINE_ELEMENT_(uint32_t, u32)
SYMADDR_DEFINE_ELEMENT_(int64_t, i64)
SYMADDR_DEFINE_ELEMENT_(uint64_t, u64)
SYMADDR_DEFINE_ELEMENT_(float, f32)
SYMADDR_DEFINE_ELEMENT_(double, f64)
SYMADDR_DEFINE_ELEMENT_(symaddr_f16_t, f16)
SYMADDR_DEFINE_ELEMENT_(symaddr_bf16_t, bf16)

#if defined(__cplusplus) && SYMADDR_ON_GPU
/* C++ kernels pass the compiler's own 16-bit types to the f16 and bf16 element functions, with
 * no cast: __half (cuda_fp16.h, hip_fp16.h), __nv_bfloat16 (cuda_bf16.h) and hip_bfloat16
 * (hip_bfloat16.h), where the kernel includes those headers before this one. The bits move
 * as they are. */
#define SYMADDR_DEFINE_HALF_(H, sfx)                                                               \
    SYMADDR_DEVFN H symaddr_load_##sfx(const H *ptr, int target, const uint64_t *peer_bases,       \
                                       int local_rank)                                             \
    {                                                                                              \
        uint16_t bits = symaddr_load_##sfx((const uint16_t *)ptr, target, peer_bases, local_rank); \
        H h;                                                                                       \
        __builtin_memcpy(&h, &bits, sizeof(h));                                                    \
        return h;                                                                                  \
    }                                                                                              \
    SYMADDR_DEVFN void symaddr_store_##sfx(H *ptr, H value, int target,                            \
                                           const uint64_t *peer_bases, int local_rank)             \
    {                                                                                              \
        uint16_t bits;                                                                             \
        __builtin_memcpy(&bits, &value, sizeof(bits));                                             \
        symaddr_store_##sfx((uint16_t *)ptr, bits, target, peer_bases, local_rank);                \
    }                                                                                              \
    SYMADDR_DEVFN void symaddr_put_##sfx(H *dst, const H *src, int target,                         \
                                         const uint64_t *peer_bases, int local_rank)               \
    {                                                                                              \
        symaddr_put_##sfx((uint16_t *)dst, (const uint16_t *)src, target, peer_bases, local_rank); \
    }                                                                                              \
    SYMADDR_DEVFN void symaddr_get_##sfx(H *dst, const H *src, int target,                         \
                                         const uint64_t *peer_bases, int local_rank)               \
    {                                                                                              \
        symaddr_get_##sfx((uint16_t *)dst, (const uint16_t *)src, target, peer_bases, local_rank); \
    }
#if defined(__CUDA_FP16_H__) || defined(HIP_INCLUDE_HIP_HIP_FP16_H)
static_assert(sizeof(__half) == 2, "__half is 16 bits");
SYMADDR_DEFINE_HALF_(__half, f16)
#endif
#if defined(__CUDA_BF16_H__)
static_assert(sizeof(__nv_bfloat16) == 2, "__nv_bfloat16 is 16 bits");
SYMADDR_DEFINE_HALF_(__nv_bfloat16, bf16)
#endif
#if defined(_HIP_BFLOAT16_H_)
static_assert(sizeof(hip_bfloat16) == 2, "hip_bfloat16 is 16 bits");
SYMADDR_DEFINE_HALF_(hip_bfloat16, bf16)
#endif
#endif

/* ---- atomics ----------------------------------------------------------------------------- */
/* Primitives on a local (already translated) address, at system scope when sys is set. The
 * integer ones work on unsigned bits; signed min/max compare as signed. */

#if SYMADDR_ON_GPU
#define SYMADDR_GPU_ATOMIC_(fn, sys, p, ...)                                                       \
    ((sys) ? fn##_system(p, __VA_ARGS__) : fn(p, __VA_ARGS__))

#define SYMADDR_DEFINE_PRIM_(U, GU, usfx)                                                          \
    SYMADDR_DEVFN U symaddr_prim_add_##usfx(U *p, U v, int sys)                                    \
    {                                                                                              \
        return (U)SYMADDR_GPU_ATOMIC_(atomicAdd, sys, (GU *)p, (GU)v);                             \
    }                                                                                              \
    SYMADDR_DEVFN U symaddr_prim_cas_##usfx(U *p, U cmp, U v, int sys)                             \
    {                                                                                              \
        return (U)SYMADDR_GPU_ATOMIC_(atomicCAS, sys, (GU *)p, (GU)cmp, (GU)v);                    \
    }                                                                                              \
    SYMADDR_DEVFN U symaddr_prim_swap_##usfx(U *p, U v, int sys)                                   \
    {                                                                                              \
        return (U)SYMADDR_GPU_ATOMIC_(atomicExch, sys, (GU *)p, (GU)v);                            \
    }                                                                                              \
    SYMADDR_DEVFN U symaddr_prim_and_##usfx(U *p, U v, int sys)                                    \
    {                                                                                              \
        return (U)SYMADDR_GPU_ATOMIC_(atomicAnd, sys, (GU *)p, (GU)v);                             \
    }                                                                                              \
    SYMADDR_DEVFN U symaddr_prim_or_##usfx(U *p, U v, int sys)                                     \
    {                                                                                              \
        return (U)SYMADDR_GPU_ATOMIC_(atomicOr, sys, (GU *)p, (GU)v);                              \
    }                                                                                              \
    SYMADDR_DEVFN U symaddr_prim_xor_##usfx(U *p, U v, int sys)                                    \
    {                                                                                              \
        return (U)SYMADDR_GPU_ATOMIC_(atomicXor, sys, (GU *)p, (GU)v);                             \
    }
SYMADDR_DEFINE_PRIM_(uint32_t, unsigned int, u32)
SYMADDR_DEFINE_PRIM_(uint64_t, unsigned long long, u64)
#else
#define SYMADDR_DEFINE_PRIM_(U, usfx)                                                              \
    SYMADDR_DEVFN U symaddr_prim_add_##usfx(U *p, U v, int sys)                                    \
    {                                                                                              \
        (void)sys;                                                                                 \
        return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);                                         \
    }                                                                                              \
    SYMADDR_DEVFN U symaddr_prim_cas_##usfx(U *p, U cmp, U v, int sys)                             \
    {                                                                                              \
        (void)sys;                                                                                 \
        __atomic_compare_exchange_n(p, &cmp, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);            \
        return cmp;                                                                                \
    }                                                                                              \
    SYMADDR_DEVFN U symaddr_prim_swap_##usfx(U *p, U v, int sys)                                   \
    {                                                                                              \
        (void)sys;                                                                                 \
        return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);                                        \
    }                                                                                              \
    SYMADDR_DEVFN U symaddr_prim_and_##usfx(U *p, U v, int sys)                                    \
    {                                                                                              \
        (void)sys;                                                                                 \
        return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST);                                         \
    }                                                                                              \
    SYMADDR_DEVFN U symaddr_prim_or_##usfx(U *p, U v, int sys)                                     \
    {                                                                                              \
        (void)sys;                                                                                 \
        return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);                                          \
    }                                                                                              \
    SYMADDR_DEVFN U symaddr_prim_xor_##usfx(U *p, U v, int sys)                                    \
    {                                                                                              \
        (void)sys;                                                                                 \
        return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST);                                         \
    }
SYMADDR_DEFINE_PRIM_(uint32_t, u32)
SYMADDR_DEFINE_PRIM_(uint64_t, u64)
#endif

/* Floating-point add on a local address: the hardware's where it has one (f32 and f64 on
 * CUDA's and AMD's GPUs), a compare-and-swap loop on the bits on the cpu. */
#if SYMADDR_ON_GPU
#define SYMADDR_DEFINE_PRIM_FADD_(T, U, sfx)                                                       \
    SYMADDR_DEVFN T symaddr_prim_fadd_##sfx(T *p, T v, int sys)                                    \
    {                                                                                              \
        return SYMADDR_GPU_ATOMIC_(atomicAdd, sys, p, v);                                          \
    }
#else
#define SYMADDR_DEFINE_PRIM_FADD_(T, U, sfx)                                                       \
    SYMADDR_DEVFN T symaddr_prim_fadd_##sfx(T *p, T v, int sys)                                    \
    {                                                                                              \
        U old = __atomic_load_n((U *)p, __ATOMIC_RELAXED), next;                                   \
        T was, sum;                                                                                \
        (void)sys;                                                                                 \
        do {                                                                                       \
            __builtin_memcpy(&was, &old, sizeof(was));                                             \
            sum = was + v;                                                                         \
            __builtin_memcpy(&next, &sum, sizeof(next));                                           \
        } while (!__atomic_compare_exchange_n((U *)p, &old, next, 0, __ATOMIC_SEQ_CST,             \
                                              __ATOMIC_RELAXED));                                  \
        return was;                                                                                \
    }
#endif
SYMADDR_DEFINE_PRIM_FADD_(float, uint32_t, f32)
SYMADDR_DEFINE_PRIM_FADD_(double, uint64_t, f64)

#include "symaddr/detail/targets.h" /* where an atomic or signal lands */

/* Remote atomics on type T (bits in U), by the primitive prim(U *local, U value, int sys):
 * symaddr_atomic_fetch_<op>_<sfx> and symaddr_atomic_<op>_<sfx> at system scope (validation
 * refuses them on a map without SYMADDR_CAP_SYSTEM_ATOMICS), the buffer form at the scope the
 * map's capabilities allow (none without SYMADDR_CAP_ATOMICS: skipped, and recorded under
 * validation), and the _sem_ forms of the fetching ones. Each returns the old value (0 if
 * skipped). */
#define SYMADDR_DEFINE_ATOMIC_FORMS_(T, U, op, sfx, prim)                                          \
    SYMADDR_DEVFN T symaddr_atomic_fetch_##op##_##sfx(T *ptr, T value, int target,                 \
                                                      const uint64_t *peer_bases, int local_rank)  \
    {                                                                                              \
        U *r = (U *)symaddr_system_target_(ptr, sizeof(U), target, peer_bases, local_rank,         \
                                           SYMADDR_CAP_SYSTEM_ATOMICS);                            \
        return r ? (T)prim(r, (U)value, 1) : (T)0;                                                 \
    }                                                                                              \
    SYMADDR_DEVFN void symaddr_atomic_##op##_##sfx(T *ptr, T value, int target,                    \
                                                   const uint64_t *peer_bases, int local_rank)     \
    {                                                                                              \
        (void)symaddr_atomic_fetch_##op##_##sfx(ptr, value, target, peer_bases, local_rank);       \
    }                                                                                              \
    SYMADDR_DEVFN T symaddr_buffer_atomic_fetch_##op##_##sfx(symaddr_buffer_t buf, size_t index,   \
                                                             T value, int target)                  \
    {                                                                                              \
        U *r = (U *)symaddr_buffer_target_(buf, (T *)buf.ptr + index, sizeof(U), target,           \
                                           SYMADDR_CAP_ATOMICS);                                   \
        return r ? (T)prim(r, (U)value, (buf.caps & SYMADDR_CAP_SYSTEM_ATOMICS) != 0) : (T)0;      \
    }                                                                                              \
    SYMADDR_DEVFN T symaddr_atomic_fetch_##op##_sem_##sfx(T *ptr, T value, int target,             \
                                                          const uint64_t *peer_bases,              \
                                                          int local_rank, symaddr_sem_t sem)       \
    {                                                                                              \
        symaddr_sem_fence_(sem, 1, 1);                                                             \
        T old = symaddr_atomic_fetch_##op##_##sfx(ptr, value, target, peer_bases, local_rank);     \
        symaddr_sem_fence_(sem, 1, 0);                                                             \
        return old;                                                                                \
    }                                                                                              \
    SYMADDR_DEVFN T symaddr_buffer_atomic_fetch_##op##_sem_##sfx(                                  \
        symaddr_buffer_t buf, size_t index, T value, int target, symaddr_sem_t sem)                \
    {                                                                                              \
        int sys = (buf.caps & SYMADDR_CAP_SYSTEM_ATOMICS) != 0;                                    \
        symaddr_sem_fence_(sem, sys, 1);                                                           \
        T old = symaddr_buffer_atomic_fetch_##op##_##sfx(buf, index, value, target);               \
        symaddr_sem_fence_(sem, sys, 0);                                                           \
        return old;                                                                                \
    }
#define SYMADDR_DEFINE_ATOMIC_OP_(T, U, sfx, usfx, op)                                             \
    SYMADDR_DEFINE_ATOMIC_FORMS_(T, U, op, sfx, symaddr_prim_##op##_##usfx)

/* min/max by compare-and-swap, so that signed and unsigned compare correctly everywhere. */
#define SYMADDR_DEFINE_ATOMIC_MINMAX_(T, U, sfx, usfx, op, better)                                 \
    SYMADDR_DEVFN T symaddr_atomic_fetch_##op##_##sfx(T *ptr, T value, int target,                 \
                                                      const uint64_t *peer_bases, int local_rank)  \
    {                                                                                              \
        U *r = (U *)symaddr_system_target_(ptr, sizeof(U), target, peer_bases, local_rank,         \
                                           SYMADDR_CAP_SYSTEM_ATOMICS);                            \
        if (!r)                                                                                    \
            return (T)0;                                                                           \
        U old = *(volatile U *)r, seen;                                                            \
        while ((T)value better(T) old &&                                                           \
               (seen = symaddr_prim_cas_##usfx(r, old, (U)value, 1)) != old)                       \
            old = seen;                                                                            \
        return (T)old;                                                                             \
    }                                                                                              \
    SYMADDR_DEVFN void symaddr_atomic_##op##_##sfx(T *ptr, T value, int target,                    \
                                                   const uint64_t *peer_bases, int local_rank)     \
    {                                                                                              \
        (void)symaddr_atomic_fetch_##op##_##sfx(ptr, value, target, peer_bases, local_rank);       \
    }

#define SYMADDR_DEFINE_ATOMICS_(T, U, sfx, usfx)                                                   \
    SYMADDR_DEFINE_ATOMIC_OP_(T, U, sfx, usfx, add)                                                \
    SYMADDR_DEFINE_ATOMIC_OP_(T, U, sfx, usfx, swap)                                               \
    SYMADDR_DEFINE_ATOMIC_OP_(T, U, sfx, usfx, and)                                                \
    SYMADDR_DEFINE_ATOMIC_OP_(T, U, sfx, usfx, or)                                                 \
    SYMADDR_DEFINE_ATOMIC_OP_(T, U, sfx, usfx, xor)                                                \
    SYMADDR_DEFINE_ATOMIC_MINMAX_(T, U, sfx, usfx, min, <)                                         \
    SYMADDR_DEFINE_ATOMIC_MINMAX_(T, U, sfx, usfx, max, >)                                         \
    /** Compare-and-swap: stores value if *ptr == compare; returns the old value. */               \
    SYMADDR_DEVFN T symaddr_atomic_cas_##sfx(T *ptr, T compare, T value, int target,               \
                                             const uint64_t *peer_bases, int local_rank)           \
    {                                                                                              \
        U *r = (U *)symaddr_system_target_(ptr, sizeof(U), target, peer_bases, local_rank,         \
                                           SYMADDR_CAP_SYSTEM_ATOMICS);                            \
        return r ? (T)symaddr_prim_cas_##usfx(r, (U)compare, (U)value, 1) : (T)0;                  \
    }                                                                                              \
    SYMADDR_DEVFN T symaddr_atomic_cas_sem_##sfx(T *ptr, T compare, T value, int target,           \
                                                 const uint64_t *peer_bases, int local_rank,       \
                                                 symaddr_sem_t sem)                                \
    {                                                                                              \
        symaddr_sem_fence_(sem, 1, 1);                                                             \
        T old = symaddr_atomic_cas_##sfx(ptr, compare, value, target, peer_bases, local_rank);     \
        symaddr_sem_fence_(sem, 1, 0);                                                             \
        return old;                                                                                \
    }

SYMADDR_DEFINE_ATOMICS_(int32_t, uint32_t, i32, u32)
SYMADDR_DEFINE_ATOMICS_(uint32_t, uint32_t, u32, u32)
SYMADDR_DEFINE_ATOMICS_(int64_t, uint64_t, i64, u64)
SYMADDR_DEFINE_ATOMICS_(uint64_t, uint64_t, u64, u64)

/* Floating-point adds (f32, f64) in the explicit, buffer and _sem forms, as the integer ones:
 * symaddr_atomic_fetch_add_f32, symaddr_atomic_add_f32, symaddr_buffer_atomic_fetch_add_f32,
 * and their _sem_ variants. The sum of several ranks' adds depends on their order, as with
 * any floating-point atomic. */
SYMADDR_DEFINE_ATOMIC_FORMS_(float, float, add, f32, symaddr_prim_fadd_f32)
SYMADDR_DEFINE_ATOMIC_FORMS_(double, double, add, f64, symaddr_prim_fadd_f64)

/* Pairs of f16 or bf16 in one aligned 32-bit word, element 0 in the low half: each half added
 * in f32 and rounded to nearest even, by a compare-and-swap loop on every backend:
 * symaddr_atomic_fetch_add_f16x2 (ptr a uint32_t word, value two halves packed alike, the old
 * word returned), symaddr_atomic_add_f16x2, symaddr_buffer_atomic_fetch_add_f16x2 (index in
 * words), their _sem_ forms, and the same for bf16x2. */
#define SYMADDR_DEFINE_PRIM_PAIR_ADD_(sfx, half)                                                   \
    SYMADDR_DEVFN uint32_t symaddr_prim_add_##sfx(uint32_t *p, uint32_t v, int sys)                \
    {                                                                                              \
        uint32_t old = *(volatile uint32_t *)p, seen;                                              \
        for (;;) {                                                                                 \
            uint32_t lo = symaddr_f32_to_##half##_(symaddr_##half##_to_f32_(old & 0xffffu) +       \
                                                   symaddr_##half##_to_f32_(v & 0xffffu));         \
            uint32_t hi = symaddr_f32_to_##half##_(symaddr_##half##_to_f32_(old >> 16) +           \
                                                   symaddr_##half##_to_f32_(v >> 16));             \
            if ((seen = symaddr_prim_cas_u32(p, old, lo | hi << 16, sys)) == old)                  \
                return old;                                                                        \
            old = seen;                                                                            \
        }                                                                                          \
    }
SYMADDR_DEFINE_PRIM_PAIR_ADD_(f16x2, f16)
SYMADDR_DEFINE_PRIM_PAIR_ADD_(bf16x2, bf16)
SYMADDR_DEFINE_ATOMIC_FORMS_(uint32_t, uint32_t, add, f16x2, symaddr_prim_add_f16x2)
SYMADDR_DEFINE_ATOMIC_FORMS_(uint32_t, uint32_t, add, bf16x2, symaddr_prim_add_bf16x2)

/* ---- signals ----------------------------------------------------------------------------- */

/* Signals need memory that a polling kernel sees change (SYMADDR_CAP_COHERENT) and atomics on
 * it; the explicit forms work at system scope, which validation checks the map allows. */

/** Make earlier remote stores visible, then set rank target's 64-bit flag to @p value. */
SYMADDR_DEVFN void symaddr_signal_set(uint64_t *sig, uint64_t value, int target,
                                      const uint64_t *peer_bases, int local_rank)
{
    uint64_t *r =
        (uint64_t *)symaddr_system_target_(sig, sizeof(uint64_t), target, peer_bases, local_rank,
                                           SYMADDR_CAP_SYSTEM_ATOMICS | SYMADDR_CAP_COHERENT);
    symaddr_fence();
    if (r)
        symaddr_prim_swap_u64(r, value, 1);
}

/** Make earlier remote stores visible, then add @p value to rank target's flag. */
SYMADDR_DEVFN void symaddr_signal_add(uint64_t *sig, uint64_t value, int target,
                                      const uint64_t *peer_bases, int local_rank)
{
    uint64_t *r =
        (uint64_t *)symaddr_system_target_(sig, sizeof(uint64_t), target, peer_bases, local_rank,
                                           SYMADDR_CAP_SYSTEM_ATOMICS | SYMADDR_CAP_COHERENT);
    symaddr_fence();
    if (r)
        symaddr_prim_add_u64(r, value, 1);
}

/** Set flag @p index (64-bit words) of the bound buffer on rank @p target to @p value, after
 *  earlier remote stores. Needs a map with SYMADDR_CAP_COHERENT and SYMADDR_CAP_ATOMICS (the
 *  signal is skipped otherwise, and recorded under validation); the atomic is system-scope where
 *  the map has SYMADDR_CAP_SYSTEM_ATOMICS, else device-scope. */
SYMADDR_DEVFN void symaddr_buffer_signal_set(symaddr_buffer_t buf, size_t index, uint64_t value,
                                             int target)
{
    symaddr_buffer_signal_(buf, index, value, target, 0);
}

/** Buffer form of symaddr_signal_add (the rules of symaddr_buffer_signal_set). */
SYMADDR_DEVFN void symaddr_buffer_signal_add(symaddr_buffer_t buf, size_t index, uint64_t value,
                                             int target)
{
    symaddr_buffer_signal_(buf, index, value, target, 1);
}

#if !SYMADDR_ON_GPU
/** libsymaddr's monotonic clock, in nanoseconds: the cpu backend's device clock. A function of
 *  the library, so that this header needs no POSIX clock and compiles as strict ISO C. */
#ifdef __cplusplus
extern "C"
#endif
    uint64_t
    symaddr_clock_host_ns(void);
#endif

/** Nanoseconds from a clock that all threads of the caller share. On AMD GPUs it reads the
 *  constant wall clock (wall_clock64) as 100 MHz, the rate of MI200 and MI300; on a device whose
 *  hipDeviceAttributeWallClockRate differs, its nanoseconds are scaled by that rate over 100 MHz
 *  (the library scales the deadlines it hands its kernels, symaddr_team_t.timeout_ns, to match;
 *  a caller's own timeouts should do the same). */
SYMADDR_DEVFN uint64_t symaddr_clock_ns(void)
{
#if defined(__CUDA_ARCH__)
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
#elif defined(__HIP_DEVICE_COMPILE__)
    return wall_clock64() * 10; /* the constant 100 MHz counter of AMD GPUs */
#elif SYMADDR_ON_GPU
    return 0; /* host pass of a GPU compile: never called */
#else
    return symaddr_clock_host_ns();
#endif
}

/**
 * Wait until the local flag @p sig is at least @p value; later reads see the stores the
 * signalling rank made before its signal.
 * @return SYMADDR_OK, or SYMADDR_ERR_TIMEOUT after @p timeout_ns nanoseconds.
 */
SYMADDR_DEVFN symaddr_status_t symaddr_signal_wait_until(const uint64_t *sig, uint64_t value,
                                                         uint64_t timeout_ns)
{
    uint64_t start = symaddr_clock_ns();
    for (unsigned spin = 0;; spin++) {
        if (*(const volatile uint64_t *)sig >= value) {
            symaddr_fence();
            return SYMADDR_OK;
        }
        if ((spin & 63) == 63) {
            if (symaddr_clock_ns() - start > timeout_ns)
                return SYMADDR_ERR_TIMEOUT;
            symaddr_yield();
        }
    }
}

/**
 * symaddr_signal_wait_until on flag @p index (64-bit words) of the bound buffer.
 * @return as symaddr_signal_wait_until, or SYMADDR_ERR_UNSUPPORTED at once when the map lacks
 *         SYMADDR_CAP_COHERENT (a peer's store might never show while the kernel runs: on AMD,
 *         coarse-grained memory; recorded under validation).
 */
SYMADDR_DEVFN symaddr_status_t symaddr_buffer_signal_wait_until(symaddr_buffer_t buf, size_t index,
                                                                uint64_t value, uint64_t timeout_ns)
{
    if (!(buf.caps & SYMADDR_CAP_COHERENT)) {
        (void)symaddr_validate_caps_(buf.peer_bases, SYMADDR_CAP_COHERENT);
        return SYMADDR_ERR_UNSUPPORTED;
    }
    return symaddr_signal_wait_until((const uint64_t *)buf.ptr + index, value, timeout_ns);
}

#endif /* SYMADDR_DEVICE_H */
