/* SPDX-License-Identifier: MIT */
/* The element types of the collective kernels: the traits that say how
 * each type is stored and accumulated, and the reduction operators. Part of collectives.hip. */
#ifndef SYMADDR_LIB_DEVICE_COLL_TYPES_H
#define SYMADDR_LIB_DEVICE_COLL_TYPES_H

/* ---- element types ------------------------------------------------------------------------ */

#include "coll_convert.h"

/* T: how it is stored; A: what it accumulates in. */
template <int DT> struct traits;
/* load_n and store_n convert a run (a tile), which the cpu does in bulk. Where loose is 1,
 * load_loose_n may give a NaN other bits than load_n, and a tile whose result has a NaN
 * (nan_n) is reduced again with load_n. */
#define SYMADDR_PLAIN_TRAITS_(DT, TYPE)                                                            \
    template <> struct traits<DT> {                                                                \
        typedef TYPE T;                                                                            \
        typedef TYPE A;                                                                            \
        SYMADDR_HOSTDEVFN A load(T v) { return v; }                                                \
        SYMADDR_HOSTDEVFN T store(A v) { return v; }                                               \
        SYMADDR_HOSTDEVFN void load_n(const T *in, A *out, int n)                                  \
        {                                                                                          \
            for (int j = 0; j < n; j++)                                                            \
                out[j] = in[j];                                                                    \
        }                                                                                          \
        SYMADDR_HOSTDEVFN void store_n(const A *in, T *out, int n)                                 \
        {                                                                                          \
            for (int j = 0; j < n; j++)                                                            \
                out[j] = in[j];                                                                    \
        }                                                                                          \
        template <int OP> SYMADDR_HOSTDEVFN int add_n(A *, const T *, int) { return 0; }           \
        SYMADDR_HOSTDEVFN void load_loose_n(const T *in, A *out, int n) { load_n(in, out, n); }    \
        SYMADDR_HOSTDEVFN int nan_n(const T *, int) { return 0; }                                  \
        enum { loose = 0 };                                                                        \
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
    SYMADDR_HOSTDEVFN void load_n(const T *in, A *out, int n) { f16_to_f32_n(in, out, n); }
    SYMADDR_HOSTDEVFN void store_n(const A *in, T *out, int n) { f32_to_f16_n(in, out, n); }
    SYMADDR_HOSTDEVFN void load_loose_n(const T *in, A *out, int n)
    {
        f16_to_f32_loose_n(in, out, n);
    }
    SYMADDR_HOSTDEVFN int nan_n(const T *v, int n) { return f16_nan_n(v, n); }
    enum { loose = SYMADDR_CVT_LOOSE_ };
    /* acc op= in in one pass, where that is faster (sums on x86 cpus); 0: not done */
    template <int OP> SYMADDR_HOSTDEVFN int add_n(A *acc, const T *in, int n)
    {
        return OP == SYMADDR_SUM ? f16_add_n(acc, in, n) : 0;
    }
};
template <> struct traits<SYMADDR_BFLOAT16> {
    typedef uint16_t T;
    typedef float A;
    SYMADDR_HOSTDEVFN A load(T v) { return bf16_to_f32(v); }
    SYMADDR_HOSTDEVFN T store(A v) { return f32_to_bf16(v); }
    SYMADDR_HOSTDEVFN void load_n(const T *in, A *out, int n) { bf16_to_f32_n(in, out, n); }
    SYMADDR_HOSTDEVFN void store_n(const A *in, T *out, int n) { f32_to_bf16_n(in, out, n); }
    SYMADDR_HOSTDEVFN void load_loose_n(const T *in, A *out, int n) { load_n(in, out, n); }
    SYMADDR_HOSTDEVFN int nan_n(const T *, int) { return 0; }
    enum { loose = 0 }; /* its conversion is a shift: exact, NaNs too */
    template <int OP> SYMADDR_HOSTDEVFN int add_n(A *acc, const T *in, int n)
    {
        return OP == SYMADDR_SUM ? bf16_add_n(acc, in, n) : 0;
    }
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
