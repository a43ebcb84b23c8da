/* SPDX-License-Identifier: MIT */
/* What symaddr/device.h's functions are made of: the f16/bf16 bit arithmetic (the same bits on
 * every backend; the pair atomics and the collectives' conversions on the cpu use it), the
 * checks of validation mode, the threads' bulk copy and the _sem forms' fences. Included by
 * device.h only. */
#ifndef SYMADDR_DETAIL_DEVICE_H
#define SYMADDR_DETAIL_DEVICE_H

#ifndef SYMADDR_DEVICE_H
#error "include symaddr/device.h, not symaddr/detail/device.h"
#endif

/* f16 and bf16 from and to f32 by bit arithmetic, the same bits on every backend: round to
 * nearest even; a NaN comes out quiet with its sign and the top of its payload. The pair
 * atomics below use them, and so do the collectives' conversions on the cpu. */
SYMADDR_HOSTDEVFN float symaddr_f32_of_bits_(uint32_t u)
{
    float f;
    __builtin_memcpy(&f, &u, sizeof(f));
    return f;
}

SYMADDR_HOSTDEVFN uint32_t symaddr_bits_of_f32_(float f)
{
    uint32_t u;
    __builtin_memcpy(&u, &f, sizeof(u));
    return u;
}

SYMADDR_HOSTDEVFN float symaddr_f16_to_f32_(uint16_t h)
{
    /* exponent and mantissa in place, rebiased; inf and NaN quiet, payload kept; a subnormal
     * (or zero) renormalised through an exact subtraction of two normal floats, so that no
     * float operation sees a subnormal operand, which costs the cpu a slow assist */
    uint32_t nan = ((uint32_t)(h & 0x8000u) << 16) | 0x7f800000u | ((uint32_t)(h & 0x3ffu) << 13) |
                   (h & 0x3ffu ? 0x400000u : 0);
    int32_t m = (int32_t)(h & 0x7fffu) << 13, e = m & 0x0f800000;
    int32_t u = m + ((127 - 15) << 23);
    int32_t sub = (int32_t)symaddr_bits_of_f32_(symaddr_f32_of_bits_((uint32_t)u + (1u << 23)) -
                                                symaddr_f32_of_bits_(113u << 23));
    u = e == 0x0f800000 ? (int32_t)nan : e == 0 ? sub : u;
    return symaddr_f32_of_bits_((uint32_t)u | (uint32_t)(h & 0x8000u) << 16);
}

SYMADDR_HOSTDEVFN uint16_t symaddr_f32_to_f16_(float f)
{
    uint32_t u = symaddr_bits_of_f32_(f), a = u & 0x7fffffffu;
    uint32_t nan = ((u >> 16) & 0x8000u) | 0x7e00u | ((u >> 13) & 0x1ffu);
    uint32_t sign = (u >> 16) & 0x8000u;
    /* Signed arithmetic throughout (a < 2^31), which vector units without unsigned compares
     * handle in one instruction. >= 2^16: inf, or a quiet NaN. */
    int32_t s = (int32_t)a, big = s > 0x7f800000 ? (int32_t)(nan & 0x7fffu) : 0x7c00;
    /* < 2^-14: adding 0.5 rounds at the f16 subnormal's last place, to nearest even */
    int32_t small = (int32_t)symaddr_bits_of_f32_(symaddr_f32_of_bits_(a) + 0.5f) - 0x3f000000;
    /* normal: rebias, then round to nearest even on the 13 bits shifted out */
    int32_t normal = (s - (112 << 23) + 0xfff + ((s >> 13) & 1)) >> 13;
    int32_t h = s >= (143 << 23) ? big : s < (113 << 23) ? small : normal;
    return (uint16_t)((uint32_t)h | sign);
}

SYMADDR_HOSTDEVFN float symaddr_bf16_to_f32_(uint16_t h)
{
    return symaddr_f32_of_bits_((uint32_t)h << 16);
}

SYMADDR_HOSTDEVFN uint16_t symaddr_f32_to_bf16_(float f)
{
    uint32_t u = symaddr_bits_of_f32_(f);
    uint16_t nan = (uint16_t)((u >> 16) | 0x40u); /* quiet, sign and payload kept */
    uint16_t h = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    return (int32_t)(u & 0x7fffffffu) > 0x7f800000 ? nan : h;
}

#if SYMADDR_VALIDATE
/* Whether the table is one of symaddr's, made by a context that validates. */
SYMADDR_DEVFN int symaddr_validating_(const uint64_t *peer_bases)
{
    return peer_bases[SYMADDR_HDR_MAGIC] == SYMADDR_TABLE_MAGIC &&
           ((peer_bases[SYMADDR_HDR_INFO] >> 32) & 1);
}

/* Record violation st in the table's error flag (the first one wins); returns st. */
SYMADDR_DEVFN int symaddr_validate_record_(const uint64_t *peer_bases, int st)
{
    uint32_t *flag = (uint32_t *)(uintptr_t)&peer_bases[SYMADDR_HDR_ERROR];
#if SYMADDR_ON_GPU
    atomicCAS_system((unsigned int *)flag, 0u, (unsigned int)-st);
#else
    uint32_t zero = 0;
    __atomic_compare_exchange_n(flag, &zero, (uint32_t)-st, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
#endif
    return st;
}

/* Returns 0, or the status of the violation after recording it: every byte of [ptr, ptr + len)
 * must lie in the table's allocation. */
SYMADDR_DEVFN int symaddr_validate_(const void *ptr, size_t len, int target,
                                    const uint64_t *peer_bases, int local_rank)
{
    if (!symaddr_validating_(peer_bases))
        return 0;
    int64_t world = (int64_t)(peer_bases[SYMADDR_HDR_INFO] & 0xffffffffu);
    uint64_t bytes = peer_bases[SYMADDR_HDR_BYTES], off = 0;
    int st = 0;
    if (local_rank >= 0 && local_rank < world)
        off = (uint64_t)(uintptr_t)ptr - peer_bases[local_rank];
    if (local_rank < 0 || local_rank >= world || off >= bytes || len > bytes - off)
        st = SYMADDR_ERR_OUT_OF_BOUNDS;
    else if (target < 0 || target >= world)
        st = SYMADDR_ERR_INVALID_ARG;
    else if (peer_bases[target] == 0)
        st = SYMADDR_ERR_UNREACHABLE;
    return st ? symaddr_validate_record_(peer_bases, st) : 0;
}
#endif

/* 0 when the map behind peer_bases has every capability in need; else, under validation,
 * SYMADDR_ERR_UNSUPPORTED recorded in its error flag (the access is then skipped). Without
 * validation the table's capabilities are not read: 0. */
SYMADDR_DEVFN int symaddr_validate_caps_(const uint64_t *peer_bases, uint64_t need)
{
#if SYMADDR_VALIDATE &&                                                                            \
    (SYMADDR_ON_GPU ? defined(__HIP_DEVICE_COMPILE__) || defined(__CUDA_ARCH__) : 1)
    uint64_t caps =
        (peer_bases[SYMADDR_HDR_INFO] >> SYMADDR_HDR_CAPS_SHIFT) & SYMADDR_HDR_CAPS_MASK;
    if (symaddr_validating_(peer_bases) && (caps & need) != need)
        return symaddr_validate_record_(peer_bases, SYMADDR_ERR_UNSUPPORTED);
#else
    (void)peer_bases, (void)need;
#endif
    return 0;
}

/** Copy @p bytes with threads [first, first + count) of the caller; 16-byte accesses when both
 *  pointers are 16-byte aligned. */
SYMADDR_DEVFN void symaddr_copy_bytes_(void *dst, const void *src, size_t bytes, size_t first,
                                       size_t count)
{
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    size_t i = first;
    if (!d || !s)
        return;
    if ((((uintptr_t)d | (uintptr_t)s) & 15) == 0) {
        /* 16-byte aligned, so that each access is one 16-byte load or store: two 8-byte
         * stores per pack would move half-filled sectors over a peer link. */
        typedef struct {
            uint64_t a, b;
        } __attribute__((aligned(16))) symaddr_v16_t;
        size_t nv = bytes / 16, v = first;
        symaddr_v16_t *dv = (symaddr_v16_t *)d;
        const symaddr_v16_t *sv = (const symaddr_v16_t *)s;
        /* Four loads in flight before the stores: a remote link needs that many to fill. */
        for (; v + 3 * count < nv; v += 4 * count) {
            symaddr_v16_t r0 = sv[v], r1 = sv[v + count], r2 = sv[v + 2 * count],
                          r3 = sv[v + 3 * count];
            dv[v] = r0;
            dv[v + count] = r1;
            dv[v + 2 * count] = r2;
            dv[v + 3 * count] = r3;
        }
        for (; v < nv; v += count)
            dv[v] = sv[v];
        i = nv * 16 + first;
    }
    for (; i < bytes; i += count)
        d[i] = s[i];
}

/* A fence at system scope (sys) or the device's, the half of sem that goes before (before = 1)
 * or after the atomic. */
SYMADDR_DEVFN void symaddr_sem_fence_(symaddr_sem_t sem, int sys, int before)
{
    if (!(sem & (before ? SYMADDR_SEM_RELEASE : SYMADDR_SEM_ACQUIRE)))
        return;
#if SYMADDR_ON_GPU
    if (sys)
        __threadfence_system();
    else
        __threadfence();
#else
    (void)sys;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

#endif
