/* SPDX-License-Identifier: MIT */
/* Selects what kernels compile against: the HIP runtime (hipcc), HIP names
 * mapped to CUDA (nvcc), or plain host C++ for the cpu backend, where a
 * "launch" runs the grid-stride kernel body once on the calling thread. */
#ifndef SYMADDR_LIB_DEVICE_RUNTIME_H
#define SYMADDR_LIB_DEVICE_RUNTIME_H

#include "symaddr/types.h"

#if defined(SYMADDR_KERNELS_CPU)
#define __global__ static
#define SYMADDR_LAUNCH(kernel, blocks, threads, stream, ...)                                       \
    ((void)(blocks), (void)(threads), (void)(stream), kernel(__VA_ARGS__), SYMADDR_OK)
#define SYMADDR_KERNELS_TABLE symaddr_kernels_cpu
#else
#if defined(SYMADDR_USE_CUDA)
#include "hip2cuda.h"
#else
#include <hip/hip_runtime.h>
#endif
#include <stdio.h>
/* The runtime's words for this thread's last refused launch (lib/backend.c). */
extern "C" __thread char symaddr_launch_why[192];
static inline symaddr_status_t symaddr_launch_status(hipError_t e)
{
    if (e == hipSuccess)
        return SYMADDR_OK;
    snprintf(symaddr_launch_why, sizeof(symaddr_launch_why), "%s (%s)", hipGetErrorString(e),
             hipGetErrorName(e));
    return SYMADDR_ERR_BACKEND;
}
#define SYMADDR_LAUNCH(kernel, blocks, threads, stream, ...)                                       \
    (kernel<<<dim3(blocks), dim3(threads), 0, (hipStream_t)(stream)>>>(__VA_ARGS__),               \
     symaddr_launch_status(hipGetLastError()))
#define SYMADDR_KERNELS_TABLE symaddr_kernels_gpu
#endif

/* Host-side launchers exist only in the host pass of a GPU compile. */
#if defined(__HIP_DEVICE_COMPILE__) || defined(__CUDA_ARCH__)
#define SYMADDR_HOST_PASS 0
#else
#define SYMADDR_HOST_PASS 1
#endif

#endif
