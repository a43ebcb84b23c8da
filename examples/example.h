/* SPDX-License-Identifier: MIT */
/* What the examples share: one kernel source for every backend. Built by hipcc or nvcc, a
 * kernel runs on the GPU; built as plain C++ for the cpu backend, a "launch" runs the kernel's
 * grid-stride body once on the calling thread, which is how symaddr's own kernels run there. */
#ifndef SYMADDR_EXAMPLE_H
#define SYMADDR_EXAMPLE_H

#include <stdio.h>
#include <stdlib.h>

#include "symaddr/symaddr.h"

/* LAUNCH takes the stream as a void *, as symaddr's calls do. */
#if defined(__CUDACC__)
#define LAUNCH(kernel, blocks, threads, stream, ...)                                               \
    kernel<<<(blocks), (threads), 0, (cudaStream_t)(stream)>>>(__VA_ARGS__)
#elif defined(__HIPCC__)
#define LAUNCH(kernel, blocks, threads, stream, ...)                                               \
    kernel<<<(blocks), (threads), 0, (hipStream_t)(stream)>>>(__VA_ARGS__)
#else
#define __global__ static
#define __host__
#define __device__
#define LAUNCH(kernel, blocks, threads, stream, ...)                                               \
    ((void)(blocks), (void)(stream), kernel(__VA_ARGS__))
#endif

/* LAUNCH_TEAM launches a kernel made of symaddr/team.h's blocks: on CUDA by symaddr_team_launch,
 * a programmatic dependent where team->pdl allows, as symaddr's own collectives are. */
#if defined(__CUDACC__)
#define LAUNCH_TEAM(team, kernel, blocks, threads, stream, ...)                                    \
    ((void)symaddr_team_launch((team), kernel, (blocks), (threads), (stream), __VA_ARGS__))
#else
#define LAUNCH_TEAM(team, kernel, blocks, threads, stream, ...)                                    \
    ((void)(team), LAUNCH(kernel, blocks, threads, stream, __VA_ARGS__))
#endif

/* Whether the launches since the last check were accepted (a grid too large for the kernel's
 * registers, say, is refused at launch, not when the stream is synchronised). */
#if defined(__CUDACC__)
#define LAUNCH_OK() (cudaGetLastError() == cudaSuccess)
#elif defined(__HIPCC__)
#define LAUNCH_OK() (hipGetLastError() == hipSuccess)
#else
#define LAUNCH_OK() 1
#endif

/* Stop every rank with the call's status and symaddr's words for it. */
#define CHECK(ctx, call)                                                                           \
    do {                                                                                           \
        symaddr_status_t st_ = (call);                                                             \
        if (st_ != SYMADDR_OK) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, symaddr_strerror(st_),          \
                    symaddr_last_error(ctx));                                                      \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)

#endif
