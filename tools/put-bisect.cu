/* SPDX-License-Identifier: MIT */
/* put-bisect: from a minimal store loop to symaddr_put, one step at a time, so that the step
 * that costs peer-store bandwidth shows up. Rank 0 stores 1 GiB into rank 1's buffer (an ipc
 * or vmm allocation of symaddr), rank 1 idles in MPI; every row is timed with CUDA events over
 * 10 launches after 2 warm-ups, except the last, timed as symaddr-bench times it.
 *
 *   mpiexec -n 2 symaddr-put-bisect [ipc|vmm] [MiB]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "symaddr/device.h"
#include "symaddr/symaddr.h"

/* The pack symaddr 0.1.0 used: 8-byte aligned, so nvcc splits each access in two. */
struct pack8 {
    uint64_t a, b;
};

/* 1: the minimal loop (shared/probes/p2p-store-gap.cu): one 16-byte load and store a thread. */
__global__ void k_minimal(int4 *__restrict__ dst, const int4 *__restrict__ src, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = src[i];
}

/* 2: the same, translating the destination in the kernel (once per thread). */
__global__ void k_translated(int4 *dst, const int4 *__restrict__ src, size_t n, int target,
                             const uint64_t *peer_bases, int me)
{
    int4 *d = (int4 *)symaddr_translate(dst, target, peer_bases, me);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        d[i] = src[i];
}

/* 3 and 4: four loads in flight before the stores, with a 16-byte pack or the 8-byte one. */
template <typename P>
__global__ void k_unrolled(P *dst, const P *src, size_t n, int target, const uint64_t *peer_bases,
                           int me)
{
    P *d = (P *)symaddr_translate(dst, target, peer_bases, me);
    size_t c = (size_t)gridDim.x * blockDim.x, v = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; v + 3 * c < n; v += 4 * c) {
        P r0 = src[v], r1 = src[v + c], r2 = src[v + 2 * c], r3 = src[v + 3 * c];
        d[v] = r0;
        d[v + c] = r1;
        d[v + 2 * c] = r2;
        d[v + 3 * c] = r3;
    }
    for (; v < n; v += c)
        d[v] = src[v];
}

/* 5: device.h's grid put, the body of symaddr_put's kernel. */
__global__ void k_put_grid(void *dst, const void *src, size_t bytes, int target,
                           const uint64_t *peer_bases, int me)
{
    symaddr_put_grid(dst, src, bytes, target, peer_bases, me);
}

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));             \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)

template <typename F> static double gbps(F launch, size_t bytes, cudaStream_t s)
{
    cudaEvent_t a, b;
    float ms = 0;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    launch();
    launch();
    CK(cudaEventRecord(a, s));
    for (int i = 0; i < 10; i++)
        launch();
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    CK(cudaEventElapsedTime(&ms, a, b));
    CK(cudaGetLastError());
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    return bytes * 10.0 / (ms * 1e-3) / 1e9;
}

int main(int argc, char **argv)
{
    symaddr_context_t *ctx;
    symaddr_provider_t *prov;
    symaddr_map_t *dm, *sm;
    void *dst, *src;
    MPI_Init(&argc, &argv);
    int vmm = argc > 1 && !strcmp(argv[1], "vmm");
    size_t bytes = (argc > 2 ? (size_t)atoll(argv[2]) : 1024) << 20;
    if (symaddr_init(MPI_COMM_WORLD, NULL, &ctx) != SYMADDR_OK ||
        symaddr_provider_get(ctx, vmm ? SYMADDR_PROVIDER_VMM : SYMADDR_PROVIDER_IPC, &prov) ||
        symaddr_symmetric_alloc(prov, bytes, &dst, &dm) ||
        symaddr_symmetric_alloc(prov, bytes, &src, &sm)) {
        fprintf(stderr, "put-bisect: setup failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int rank = symaddr_rank(ctx), me = rank;
    const symaddr_locality_t *loc;
    symaddr_locality_get(ctx, &loc);
    CK(cudaMemset(src, 7, bytes));
    void *raw;
    symaddr_translate_host(dm, dst, 1, &raw);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaDeviceSynchronize());
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        size_t n = bytes / 16;
        const uint64_t *pb = dm->peer_bases;
        printf("# put-bisect: rank 0 -> rank 1 (device %d -> %d), %zu MiB, %s provider, GB/s\n",
               loc->device[0], loc->device[1], bytes >> 20, vmm ? "vmm" : "ipc");
        printf("%-58s %8s\n", "step", "GB/s");
#define ROW(name, ...) printf("%-58s %8.1f\n", name, gbps([&] { __VA_ARGS__; }, bytes, s))
        ROW("1 minimal loop, 528x512, host-translated pointer",
            k_minimal<<<528, 512, 0, s>>>((int4 *)raw, (const int4 *)src, n));
        ROW("2 + translation in the kernel",
            k_translated<<<528, 512, 0, s>>>((int4 *)dst, (const int4 *)src, n, 1, pb, me));
        ROW("3 + four 16-byte loads in flight",
            (k_unrolled<int4><<<528, 512, 0, s>>>((int4 *)dst, (const int4 *)src, n, 1, pb, me)));
        ROW("4   the same with 0.1.0's 8-byte aligned pack",
            (k_unrolled<pack8>
             <<<528, 512, 0, s>>>((pack8 *)dst, (const pack8 *)src, n, 1, pb, me)));
        ROW("5 symaddr's grid (1024x256), 16-byte pack",
            (k_unrolled<int4><<<1024, 256, 0, s>>>((int4 *)dst, (const int4 *)src, n, 1, pb, me)));
        ROW("5b  the same with the 8-byte pack",
            (k_unrolled<pack8>
             <<<1024, 256, 0, s>>>((pack8 *)dst, (const pack8 *)src, n, 1, pb, me)));
        ROW("6 device.h symaddr_put_grid, 1024x256",
            k_put_grid<<<1024, 256, 0, s>>>(dst, src, bytes, 1, pb, me));
        ROW("7 symaddr_put on the stream", symaddr_put(ctx, dst, src, bytes, 1, (void *)s));
        ROW("- copy engine (cudaMemcpyPeerAsync)",
            cudaMemcpyPeerAsync(raw, loc->device[1], src, loc->device[0], bytes, s));
        /* As symaddr-bench times it: NULL stream, host clock around 10 calls and a sync. */
        symaddr_put(ctx, dst, src, bytes, 1, NULL);
        symaddr_stream_sync(ctx, NULL);
        double t0 = MPI_Wtime();
        for (int i = 0; i < 10; i++)
            symaddr_put(ctx, dst, src, bytes, 1, NULL);
        symaddr_stream_sync(ctx, NULL);
        printf("%-58s %8.1f\n", "8 symaddr_put, NULL stream, host clock (the bench's way)",
               bytes * 10.0 / (MPI_Wtime() - t0) / 1e9);
        fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    cudaStreamDestroy(s);
    symaddr_symmetric_free(prov, src);
    symaddr_symmetric_free(prov, dst);
    symaddr_finalize(&ctx);
    MPI_Finalize();
    return 0;
}
