/* SPDX-License-Identifier: MIT */
/* device.h's f16 and bf16 functions take the compiler's own 16-bit types in C++ kernels, with no
 * cast (a compile check: nvcc and hipcc). */
#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
typedef __nv_bfloat16 bf16_t;
#else
#include <hip/hip_bfloat16.h>
#include <hip/hip_fp16.h>
typedef hip_bfloat16 bf16_t;
#endif
#include "symaddr/device.h"

template <typename A, typename B> struct same {
    enum { value = 0 };
};
template <typename A> struct same<A, A> {
    enum { value = 1 };
};

__global__ void half_types(__half *h, bf16_t *b, const uint64_t *pb, int me)
{
    __half x = symaddr_load_f16(h, 1, pb, me);
    bf16_t y = symaddr_load_bf16(b, 1, pb, me);
    static_assert(same<decltype(symaddr_load_f16(h, 1, pb, me)), __half>::value, "a __half");
    static_assert(same<decltype(symaddr_load_bf16(b, 1, pb, me)), bf16_t>::value, "a bfloat16");
    symaddr_store_f16(h + 1, x, 1, pb, me);
    symaddr_store_bf16(b + 1, y, 1, pb, me);
    symaddr_put_f16(h + 2, h, 1, pb, me);
    symaddr_get_bf16(b + 2, b, 1, pb, me);
}
