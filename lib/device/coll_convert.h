/* SPDX-License-Identifier: MIT */
/* f16 and bf16 to and from f32, the same bits on every backend: round to nearest even; a NaN
 * comes out quiet with its sign and as much of its payload as fits (what x86's F16C
 * instructions do). The GPU converts with its own instructions and mends only NaNs, whose bits
 * those instructions choose otherwise; the cpu uses F16C where it has it, else branch-free bit
 * arithmetic that its compiler vectorises. Plain C, so that the unit tests check it against
 * the compiler's own _Float16. Part of collectives.hip. */
#ifndef SYMADDR_LIB_DEVICE_COLL_CONVERT_H
#define SYMADDR_LIB_DEVICE_COLL_CONVERT_H

#include <stdint.h>
#include <string.h>

#include "symaddr/device.h" /* the bit arithmetic of the conversions, shared with device.h */

#if defined(__CUDA_ARCH__)
#define SYMADDR_CVT_PTX_ 1
#elif defined(__HIP_DEVICE_COMPILE__)
#define SYMADDR_CVT_HIP_ 1
#endif

#if defined(SYMADDR_CVT_PTX_) || defined(SYMADDR_CVT_HIP_)
/* The GPU's instructions alone: the scalar conversions mend their NaNs, the runs below only
 * where a run has one. */
SYMADDR_HOSTDEVFN float f16_to_f32_hw_(uint16_t h)
{
#if defined(SYMADDR_CVT_PTX_)
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
#else
    _Float16 x;
    memcpy(&x, &h, sizeof(x));
    return (float)x;
#endif
}

SYMADDR_HOSTDEVFN uint16_t f32_to_f16_hw_(float f)
{
#if defined(SYMADDR_CVT_PTX_)
    uint16_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#else
    _Float16 x = (_Float16)f;
    uint16_t h;
    memcpy(&h, &x, sizeof(h));
    return h;
#endif
}
#endif

/* f16 inf, or NaN, as f32 bits: sign, all-ones exponent, the payload shifted up, a NaN quiet */
SYMADDR_HOSTDEVFN uint32_t f16_special_bits_(uint16_t h)
{
    return ((uint32_t)(h & 0x8000u) << 16) | 0x7f800000u | ((uint32_t)(h & 0x3ffu) << 13) |
           (h & 0x3ffu ? 0x400000u : 0);
}

/* An f32 NaN (as bits u) as a quiet f16 NaN: sign, the payload's top bits. */
SYMADDR_HOSTDEVFN uint16_t f16_nan_of_f32_bits_(uint32_t u)
{
    return (uint16_t)(((u >> 16) & 0x8000u) | 0x7e00u | ((u >> 13) & 0x1ffu));
}

SYMADDR_HOSTDEVFN float f16_to_f32(uint16_t h)
{
    uint32_t nan = f16_special_bits_(h);
#if defined(SYMADDR_CVT_PTX_) || defined(SYMADDR_CVT_HIP_)
    return (h & 0x7fffu) > 0x7c00u ? symaddr_f32_of_bits_(nan) : f16_to_f32_hw_(h);
#else
    (void)nan;
    return symaddr_f16_to_f32_(h);
#endif
}

SYMADDR_HOSTDEVFN uint16_t f32_to_f16(float f)
{
    uint32_t u = symaddr_bits_of_f32_(f), a = u & 0x7fffffffu;
    uint32_t nan = f16_nan_of_f32_bits_(u);
#if defined(SYMADDR_CVT_PTX_) || defined(SYMADDR_CVT_HIP_)
    return a > 0x7f800000u ? (uint16_t)nan : f32_to_f16_hw_(f);
#else
    (void)a, (void)nan;
    return symaddr_f32_to_f16_(f);
#endif
}

SYMADDR_HOSTDEVFN float bf16_to_f32(uint16_t h) { return symaddr_bf16_to_f32_(h); }

SYMADDR_HOSTDEVFN uint16_t f32_to_bf16(float f)
{
#if defined(SYMADDR_CVT_PTX_) && __CUDA_ARCH__ >= 800
    uint32_t u = symaddr_bits_of_f32_(f);
    uint16_t nan = (uint16_t)((u >> 16) | 0x40u); /* quiet, sign and payload kept */
    uint16_t h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return (int32_t)(u & 0x7fffffffu) > 0x7f800000 ? nan : h;
#else
    return symaddr_f32_to_bf16_(f);
#endif
}

/* Runs of n conversions, which the tiles use. On x86 cpus with F16C (f16) or AVX2 (bf16),
 * eight at a time, with the same bits as the loops. */
#if defined(SYMADDR_KERNELS_CPU) && defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define SYMADDR_CVT_F16C_ 1

__attribute__((target("avx,f16c"))) static void f16_to_f32_f16c(const uint16_t *in, float *out,
                                                                int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(in + i))));
    for (; i < n; i++)
        out[i] = f16_to_f32(in[i]);
}

__attribute__((target("avx,f16c"))) static void f32_to_f16_f16c(const float *in, uint16_t *out,
                                                                int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(out + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(in + i),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; i++)
        out[i] = f32_to_f16(in[i]);
}

/* F16C and the AVX state it uses, enabled by the OS (cpuid and xgetbv: not every compiler's
 * __builtin_cpu_supports knows "f16c"). */
static inline int symaddr_have_f16c_(void)
{
    static int have = -1; /* every thread computes the same answer */
    if (have < 0) {
        unsigned a, b, c, d, lo = 0, hi = 0;
        int ok =
            __get_cpuid(1, &a, &b, &c, &d) && (c & bit_OSXSAVE) && (c & bit_AVX) && (c & bit_F16C);
        if (ok) {
            __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            ok = (lo & 6) == 6; /* the OS saves SSE and AVX state */
        }
        (void)hi;
        __atomic_store_n(&have, ok, __ATOMIC_RELAXED);
    }
    return __atomic_load_n(&have, __ATOMIC_RELAXED);
}

/* bf16 with AVX2: the same integer steps as f32_to_bf16, eight lanes at a time. */
__attribute__((target("avx2"))) static void bf16_to_f32_avx2(const uint16_t *in, float *out, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(in + i)));
        _mm256_storeu_si256((__m256i *)(out + i), _mm256_slli_epi32(w, 16));
    }
    for (; i < n; i++)
        out[i] = bf16_to_f32(in[i]);
}

/* Eight f32 (as bits) to bf16 by the integer steps of f32_to_bf16, stored at out. */
__attribute__((target("avx2"))) static inline void bf16x8_store_avx2(uint16_t *out, __m256i u)
{
    const __m256i one = _mm256_set1_epi32(1), round = _mm256_set1_epi32(0x7fff);
    const __m256i abs = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256i quiet = _mm256_set1_epi32(0x40);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, round), lsb), 16);
    __m256i nan = _mm256_or_si256(_mm256_srli_epi32(u, 16), quiet);
    __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf);
    r = _mm256_blendv_epi8(r, nan, is_nan);
    /* 32 to 16 bits: packs work per 128-bit lane, so put the two halves back in order */
    r = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0xd8);
    _mm_storeu_si128((__m128i *)out, _mm256_castsi256_si128(r));
}

__attribute__((target("avx2"))) static void f32_to_bf16_avx2(const float *in, uint16_t *out, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8)
        bf16x8_store_avx2(out + i, _mm256_loadu_si256((const __m256i *)(in + i)));
    for (; i < n; i++)
        out[i] = f32_to_bf16(in[i]);
}

static inline int symaddr_have_avx2_(void) { return __builtin_cpu_supports("avx2"); }

/* acc[i] += in[i] converted, eight lanes at a time, one pass: the same additions in the same
 * order as converting first and adding after, so the same bits. */
__attribute__((target("avx,f16c"))) static void f16_add_f16c(float *acc, const uint16_t *in, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(
            acc + i, _mm256_add_ps(_mm256_loadu_ps(acc + i),
                                   _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(in + i)))));
    for (; i < n; i++)
        acc[i] += f16_to_f32(in[i]);
}

/* Eight bf16 to f32: a shift, as bf16_to_f32. */
__attribute__((target("avx2"))) static inline __m256 bf16x8_avx2(const uint16_t *p)
{
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

__attribute__((target("avx2"))) static void bf16_add_avx2(float *acc, const uint16_t *in, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(acc + i, _mm256_add_ps(_mm256_loadu_ps(acc + i), bf16x8_avx2(in + i)));
    for (; i < n; i++)
        acc[i] += bf16_to_f32(in[i]);
}

/* out[i] = src[0][base + i] + ... + src[m - 1][base + i], each converted to f32, added in row
 * order and converted back (the bits of converting each row, adding it to an f32 accumulator in
 * turn, and converting the result), eight lanes at a time: each row is read once, in place, and
 * the lanes stay in registers between rows, where a pass per row read and wrote the
 * accumulator (twice the bytes of the row itself) every time. Returns the elements done: n
 * rounded down to whole lanes (the tiles that take it are whole lanes). */
__attribute__((target("avx,f16c"))) static int
f16_sum_rows_f16c(uint16_t *out, const uint16_t *const *src, int m, size_t base, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src[0] + base + i)));
        for (int q = 1; q < m; q++)
            v = _mm256_add_ps(
                v, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src[q] + base + i))));
        _mm_storeu_si128((__m128i *)(out + i),
                         _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
    return i;
}

/* f32 rows the same way, with AVX: no conversion. */
__attribute__((target("avx"))) static int f32_sum_rows_avx(float *out, const float *const *src,
                                                           int m, size_t base, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(src[0] + base + i);
        for (int q = 1; q < m; q++)
            v = _mm256_add_ps(v, _mm256_loadu_ps(src[q] + base + i));
        _mm256_storeu_ps(out + i, v);
    }
    return i;
}

__attribute__((target("avx2"))) static int
bf16_sum_rows_avx2(uint16_t *out, const uint16_t *const *src, int m, size_t base, int n)
{
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = bf16x8_avx2(src[0] + base + i);
        for (int q = 1; q < m; q++)
            v = _mm256_add_ps(v, bf16x8_avx2(src[q] + base + i));
        bf16x8_store_avx2(out + i, _mm256_castps_si256(v));
    }
    return i;
}
#endif

/* The sum of m rows into out, as above, where the cpu has the instructions for it: the elements
 * done, 0 when it does not (the caller adds a tile at a time). */
SYMADDR_HOSTDEVFN int f16_sum_rows(uint16_t *out, const uint16_t *const *src, int m, size_t base,
                                   int n)
{
#if defined(SYMADDR_CVT_F16C_)
    if (symaddr_have_f16c_()) {
        return f16_sum_rows_f16c(out, src, m, base, n);
    }
#endif
    (void)out, (void)src, (void)m, (void)base, (void)n;
    return 0;
}

SYMADDR_HOSTDEVFN int f32_sum_rows(float *out, const float *const *src, int m, size_t base, int n)
{
#if defined(SYMADDR_CVT_F16C_)
    if (symaddr_have_f16c_()) { /* AVX, enabled by the OS */
        return f32_sum_rows_avx(out, src, m, base, n);
    }
#endif
    (void)out, (void)src, (void)m, (void)base, (void)n;
    return 0;
}

SYMADDR_HOSTDEVFN int bf16_sum_rows(uint16_t *out, const uint16_t *const *src, int m, size_t base,
                                    int n)
{
#if defined(SYMADDR_CVT_F16C_)
    if (symaddr_have_avx2_()) {
        return bf16_sum_rows_avx2(out, src, m, base, n);
    }
#endif
    (void)out, (void)src, (void)m, (void)base, (void)n;
    return 0;
}

/* acc[i] += in[i] (f16 or bf16) in one pass where the cpu has the vector instructions for it;
 * 0 when it does not (the caller converts, then adds). */
SYMADDR_HOSTDEVFN int f16_add_n(float *acc, const uint16_t *in, int n)
{
#if defined(SYMADDR_CVT_F16C_)
    if (symaddr_have_f16c_()) {
        f16_add_f16c(acc, in, n);
        return 1;
    }
#endif
    (void)acc, (void)in, (void)n;
    return 0;
}

SYMADDR_HOSTDEVFN int bf16_add_n(float *acc, const uint16_t *in, int n)
{
#if defined(SYMADDR_CVT_F16C_)
    if (symaddr_have_avx2_()) {
        bf16_add_avx2(acc, in, n);
        return 1;
    }
#endif
    (void)acc, (void)in, (void)n;
    return 0;
}

/* The GPU converts a tile a pair at a time (element 2k in the low half of a 32-bit word), with
 * its packed instructions where it has them, and checks the pairs for NaNs in bulk: nonzero if
 * either half of w is a NaN of the format whose largest other magnitude is top (f16 0x7c00,
 * bf16 0x7f80). A tile with a NaN is converted again by the scalar rule. */
#if defined(SYMADDR_CVT_PTX_) || defined(SYMADDR_CVT_HIP_)
#define SYMADDR_CVT_PAIRS_ 1
SYMADDR_HOSTDEVFN uint32_t symaddr_pair_nan_(uint32_t w, uint32_t top)
{
    return ((w & 0x7fff7fffu) + (0x7fffu - top) * 0x10001u) & 0x80008000u;
}

SYMADDR_HOSTDEVFN uint32_t symaddr_pair_of_(const uint16_t *in)
{
    uint32_t w;
    memcpy(&w, in, sizeof(w));
    return w;
}
#endif

#if defined(SYMADDR_CVT_PTX_) && __CUDA_ARCH__ >= 800
/* Pairs of f32 (n even) to f16 (f16 = 1) or bf16 by one instruction each, rounding to nearest
 * even; nonzero if a NaN came out, whose bits are then the instruction's, not the rule's. */
SYMADDR_DEVFN uint32_t f32_pairs_to_half_hw_(const float *in, uint16_t *out, int n, int f16)
{
    uint32_t nan = 0;
    for (int i = 0; i < n; i += 2) {
        uint32_t w;
        if (f16)
            asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(in[i + 1]), "f"(in[i]));
        else
            asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(in[i + 1]), "f"(in[i]));
        memcpy(out + i, &w, sizeof(w));
        nan |= symaddr_pair_nan_(w, f16 ? 0x7c00u : 0x7f80u);
    }
    return nan;
}
#endif

SYMADDR_HOSTDEVFN void bf16_to_f32_n(const uint16_t *in, float *out, int n)
{
#if defined(SYMADDR_CVT_PAIRS_)
    if (n % 2 == 0) {
        for (int i = 0; i < n; i += 2) {
            uint32_t w = symaddr_pair_of_(in + i);
            out[i] = symaddr_f32_of_bits_(w << 16);
            out[i + 1] = symaddr_f32_of_bits_(w & 0xffff0000u);
        }
        return;
    }
#endif
#if defined(SYMADDR_CVT_F16C_)
    if (symaddr_have_avx2_()) {
        bf16_to_f32_avx2(in, out, n);
        return;
    }
#endif
    for (int i = 0; i < n; i++)
        out[i] = bf16_to_f32(in[i]);
}

SYMADDR_HOSTDEVFN void f32_to_bf16_n(const float *in, uint16_t *out, int n)
{
#if defined(SYMADDR_CVT_PTX_) && __CUDA_ARCH__ >= 800
    if (n % 2 == 0 && !f32_pairs_to_half_hw_(in, out, n, 0))
        return; /* else a NaN came out: the rule below */
#endif
#if defined(SYMADDR_CVT_F16C_)
    if (symaddr_have_avx2_()) {
        f32_to_bf16_avx2(in, out, n);
        return;
    }
#endif
    for (int i = 0; i < n; i++)
        out[i] = f32_to_bf16(in[i]);
}

/* Whether a run of f16 holds a NaN. */
SYMADDR_HOSTDEVFN int f16_nan_n(const uint16_t *v, int n)
{
#if defined(SYMADDR_CVT_PAIRS_)
    if (n % 2 == 0) { /* a pair at a time, as the conversions */
        uint32_t pairs = 0;
        for (int i = 0; i < n; i += 2)
            pairs |= symaddr_pair_nan_(symaddr_pair_of_(v + i), 0x7c00u);
        return pairs != 0;
    }
#endif
    int nan = 0;
    for (int i = 0; i < n; i++)
        nan |= (v[i] & 0x7fffu) > 0x7c00u;
    return nan;
}

#if defined(SYMADDR_CVT_PTX_)
/* Pairs of f16 (n even) by the instruction alone: NaNs get its bits, not the rule's. */
SYMADDR_DEVFN void f16_pairs_to_f32_hw_(const uint16_t *in, float *out, int n)
{
    for (int i = 0; i < n; i += 2)
        asm("{.reg .b16 lo, hi;\n\t"
            "mov.b32 {lo, hi}, %2;\n\t"
            "cvt.f32.f16 %0, lo;\n\t"
            "cvt.f32.f16 %1, hi;}"
            : "=f"(out[i]), "=f"(out[i + 1])
            : "r"(symaddr_pair_of_(in + i)));
}
#endif

SYMADDR_HOSTDEVFN void f16_to_f32_n(const uint16_t *in, float *out, int n)
{
#if defined(SYMADDR_CVT_F16C_)
    if (symaddr_have_f16c_()) {
        f16_to_f32_f16c(in, out, n);
        return;
    }
#elif defined(SYMADDR_CVT_PTX_)
    if (n % 2 == 0) {
        f16_pairs_to_f32_hw_(in, out, n);
        if (f16_nan_n(in, n)) /* mend the NaNs alone, by the rule */
            for (int i = 0; i < n; i++)
                out[i] = (in[i] & 0x7fffu) > 0x7c00u
                             ? symaddr_f32_of_bits_(f16_special_bits_(in[i]))
                             : out[i];
        return;
    }
#elif defined(SYMADDR_CVT_HIP_)
    for (int i = 0; i < n; i++)
        out[i] = f16_to_f32_hw_(in[i]);
    if (!f16_nan_n(in, n))
        return;
#endif
    for (int i = 0; i < n; i++)
        out[i] = f16_to_f32(in[i]);
}

/* f16 to f32 for a reduce tile that checks its result: on NVIDIA GPUs the instruction alone,
 * whose NaNs come out with other bits than the rule's. A NaN in that reaches the result makes
 * it a NaN (min and max pass one on, sums and products make one), and one that does not leaves
 * no trace, so the tile converts again by the rule only where its result has a NaN
 * (SYMADDR_CVT_LOOSE_). Elsewhere the rule itself. */
#if defined(SYMADDR_CVT_PTX_)
#define SYMADDR_CVT_LOOSE_ 1
#else
#define SYMADDR_CVT_LOOSE_ 0
#endif
SYMADDR_HOSTDEVFN void f16_to_f32_loose_n(const uint16_t *in, float *out, int n)
{
#if defined(SYMADDR_CVT_PTX_)
    if (n % 2 == 0) {
        f16_pairs_to_f32_hw_(in, out, n);
        return;
    }
#endif
    f16_to_f32_n(in, out, n);
}

SYMADDR_HOSTDEVFN void f32_to_f16_n(const float *in, uint16_t *out, int n)
{
#if defined(SYMADDR_CVT_F16C_)
    if (symaddr_have_f16c_()) {
        f32_to_f16_f16c(in, out, n);
        return;
    }
#elif defined(SYMADDR_CVT_PTX_) && __CUDA_ARCH__ >= 800
    if (n % 2 == 0) {
        if (f32_pairs_to_half_hw_(in, out, n, 1)) /* a NaN came out: mend it by the rule */
            for (int i = 0; i < n; i++)
                out[i] =
                    in[i] != in[i] ? f16_nan_of_f32_bits_(symaddr_bits_of_f32_(in[i])) : out[i];
        return;
    }
#endif
#if !defined(SYMADDR_CVT_F16C_) && (defined(SYMADDR_CVT_PTX_) || defined(SYMADDR_CVT_HIP_))
    int nan = 0; /* hip, or an odd run */
    for (int i = 0; i < n; i++) {
        out[i] = f32_to_f16_hw_(in[i]);
        nan |= in[i] != in[i];
    }
    if (!nan)
        return;
#endif
    for (int i = 0; i < n; i++)
        out[i] = f32_to_f16(in[i]);
}

#endif
