/* SPDX-License-Identifier: MIT */
/* The element types of the collective kernels: f16/bf16 conversions, the traits that say how
 * each type is stored and accumulated, and the reduction operators. Part of collectives.hip. */
#ifndef SYMADDR_LIB_DEVICE_COLL_TYPES_H
#define SYMADDR_LIB_DEVICE_COLL_TYPES_H

/* ---- element types ------------------------------------------------------------------------ */

SYMADDR_HOSTDEVFN float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13); /* inf, nan */
    } else if (exp != 0) {
        u = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) {
        u = sign;
    } else { /* subnormal: normalise */
        int e = -1;
        do {
            man <<= 1;
            e++;
        } while (!(man & 0x400u));
        u = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

SYMADDR_HOSTDEVFN uint16_t f32_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    uint32_t sign = (u >> 16) & 0x8000u, exp = (u >> 23) & 0xffu, man = u & 0x7fffffu;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
    int e = (int)exp - 112;
    if (e >= 0x1f)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) { /* subnormal or zero, round to nearest even */
        if (e < -10)
            return (uint16_t)sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e), half = 1u << (shift - 1);
        uint32_t r = man >> shift, rest = man & ((1u << shift) - 1);
        if (rest > half || (rest == half && (r & 1)))
            r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((uint32_t)e << 10) | (man >> 13), rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (r & 1)))
        r++; /* may carry into the exponent, which is right */
    return (uint16_t)(sign | r);
}

SYMADDR_HOSTDEVFN float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

SYMADDR_HOSTDEVFN uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u); /* quiet nan */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* T: how it is stored; A: what it accumulates in. */
template <int DT> struct traits;
#define SYMADDR_PLAIN_TRAITS_(DT, TYPE)                                                            \
    template <> struct traits<DT> {                                                                \
        typedef TYPE T;                                                                            \
        typedef TYPE A;                                                                            \
        SYMADDR_HOSTDEVFN A load(T v) { return v; }                                                \
        SYMADDR_HOSTDEVFN T store(A v) { return v; }                                               \
    };
SYMADDR_PLAIN_TRAITS_(SYMADDR_INT32, int32_t)
SYMADDR_PLAIN_TRAITS_(SYMADDR_UINT32, uint32_t)
SYMADDR_PLAIN_TRAITS_(SYMADDR_INT64, int64_t)
SYMADDR_PLAIN_TRAITS_(SYMADDR_UINT64, uint64_t)
SYMADDR_PLAIN_TRAITS_(SYMADDR_FLOAT32, float)
SYMADDR_PLAIN_TRAITS_(SYMADDR_FLOAT64, double)
template <> struct traits<SYMADDR_FLOAT16> {
    typedef uint16_t T;
    typedef float A;
    SYMADDR_HOSTDEVFN A load(T v) { return f16_to_f32(v); }
    SYMADDR_HOSTDEVFN T store(A v) { return f32_to_f16(v); }
};
template <> struct traits<SYMADDR_BFLOAT16> {
    typedef uint16_t T;
    typedef float A;
    SYMADDR_HOSTDEVFN A load(T v) { return bf16_to_f32(v); }
    SYMADDR_HOSTDEVFN T store(A v) { return f32_to_bf16(v); }
};

template <int OP, typename A> SYMADDR_HOSTDEVFN A apply(A a, A b)
{
    switch (OP) {
    case SYMADDR_SUM: return a + b;
    case SYMADDR_PROD: return a * b;
    case SYMADDR_MIN: return b < a ? b : a;
    default: return b > a ? b : a;
    }
}

#endif
