/* SPDX-License-Identifier: MIT */
/**
 * @file launch.h
 * One kernel source for hipcc, nvcc and the cpu backend. Built by hipcc or nvcc, a kernel runs
 * on the GPU; built by a plain C or C++ compiler (a program that runs on the cpu backend),
 * `__global__`, `__device__` and `__host__` become plain C and a launch runs the kernel's body
 * once on the calling thread, where symaddr_grid_thread() is 0 and symaddr_grid_threads() 1:
 * a grid-stride loop then covers the whole range, which is how symaddr's own kernels run there.
 *
 *     __global__ void scale(float *x, size_t n) {
 *         for (size_t i = symaddr_grid_thread(); i < n; i += symaddr_grid_threads()) x[i] *= 2;
 *     }
 *     symaddr_status_t st = SYMADDR_KERNEL_LAUNCH(scale, blocks, 256, stream, x, n);
 */
#ifndef SYMADDR_LAUNCH_H
#define SYMADDR_LAUNCH_H

#include "symaddr/types.h"

#if defined(__CUDACC__)
#include <cuda_runtime.h>
/* SYMADDR_KERNEL_LAUNCH: see the cpu form below for what it does */
#define SYMADDR_KERNEL_LAUNCH(kernel, blocks, threads, stream, ...)                                \
    (kernel<<<(blocks), (threads), 0, (cudaStream_t)(stream)>>>(__VA_ARGS__),                      \
     cudaGetLastError() == cudaSuccess ? SYMADDR_OK : SYMADDR_ERR_BACKEND)
#elif defined(__HIPCC__)
#include <hip/hip_runtime.h>
#define SYMADDR_KERNEL_LAUNCH(kernel, blocks, threads, stream, ...)                                \
    (kernel<<<(blocks), (threads), 0, (hipStream_t)(stream)>>>(__VA_ARGS__),                       \
     hipGetLastError() == hipSuccess ? SYMADDR_OK : SYMADDR_ERR_BACKEND)
#else
#ifndef __global__
#define __global__ static /**< a kernel is a plain function on the cpu backend */
#endif
#ifndef __device__
#define __device__ /**< nothing on the cpu backend */
#endif
#ifndef __host__
#define __host__ /**< nothing on the cpu backend */
#endif
/** Launch @p kernel on @p blocks blocks of @p threads threads on @p stream (a void *, as
 *  symaddr's calls take it; NULL: the default stream) with the remaining arguments; on the cpu
 *  backend, call it once.
 *  @return SYMADDR_OK, or SYMADDR_ERR_BACKEND when the runtime refused the launch (too many
 *  registers for the grid, a bad configuration): refusals show at launch, not at the sync. */
#define SYMADDR_KERNEL_LAUNCH(kernel, blocks, threads, stream, ...)                                \
    ((void)(blocks), (void)(threads), (void)(stream), kernel(__VA_ARGS__), SYMADDR_OK)
#endif

#if defined(__CUDACC__)
/* SYMADDR_TEAM_KERNEL_LAUNCH: see the form below */
#define SYMADDR_TEAM_KERNEL_LAUNCH(team, kernel, blocks, threads, stream, ...)                     \
    (symaddr_team_launch((team), kernel, (blocks), (threads), (stream), __VA_ARGS__) ==            \
             cudaSuccess                                                                           \
         ? SYMADDR_OK                                                                              \
         : SYMADDR_ERR_BACKEND)
#else
/** Launch a kernel made of symaddr/team.h's blocks for @p team (a const symaddr_team_t *): on
 *  CUDA through symaddr_team_launch, a programmatic dependent launch where team->pdl allows, as
 *  symaddr's own collectives are; elsewhere as SYMADDR_KERNEL_LAUNCH. Include team.h first.
 *  @return as SYMADDR_KERNEL_LAUNCH */
#define SYMADDR_TEAM_KERNEL_LAUNCH(team, kernel, blocks, threads, stream, ...)                     \
    ((void)(team), SYMADDR_KERNEL_LAUNCH(kernel, blocks, threads, stream, __VA_ARGS__))
#endif

#endif /* SYMADDR_LAUNCH_H */
