/* SPDX-License-Identifier: MIT */
/* put-bisect: from a minimal store loop to symaddr_put, one step at a time, so that the step
 * that costs peer-store bandwidth shows up. Rank 0 stores 1 GiB into rank 1's buffer (an ipc
 * or vmm allocation of symaddr), rank 1 idles in MPI; every row is timed with CUDA events over
 * 10 launches after 2 warm-ups, except the last, timed as symaddr-bench times it.
 *
 *   mpiexec -n 2 symaddr-put-bisect [ipc|vmm] [MiB]
 *
 * The translate mode does the same for symaddr-bench translate's gap at small sizes: every
 * rank copies MiB (default 1) into its right neighbour's buffer at once, as the bench does,
 * with the bench's grid, and each row changes how the kernel gets the peer address:
 *
 *   mpiexec -n 2 symaddr-put-bisect translate [MiB]
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

/* translate mode: the peer address per access (the bench's kernel), per access through the
 * read-only path, once per thread, or as a kernel argument. */
__global__ void t_per_access(int4 *dst, const int4 *src, size_t n, int target, const uint64_t *pb,
                             int me)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        *(int4 *)symaddr_translate(dst + i, target, pb, me) = src[i];
}

__global__ void t_per_access_ldg(int4 *dst, const int4 *src, size_t n, int target,
                                 const uint64_t *pb, int me)
{
    const unsigned long long *t = (const unsigned long long *)pb;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        *(int4 *)(__ldg(t + target) + ((uint64_t)(uintptr_t)(dst + i) - __ldg(t + me))) = src[i];
}

__global__ void t_once(int4 *dst, const int4 *src, size_t n, int target, const uint64_t *pb, int me)
{
    int4 *d = (int4 *)symaddr_translate(dst, target, pb, me);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        d[i] = src[i];
}

__global__ void t_delta(int4 *dst, const int4 *src, size_t n, uint64_t delta)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        *(int4 *)((char *)(dst + i) + delta) = src[i];
}

__global__ void t_raw(int4 *remote, const int4 *src, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        remote[i] = src[i];
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

/* Every rank launches at once (as symaddr-bench does); the slowest rank's microseconds per
 * launch, by CUDA events and by the host clock around the same launches. */
template <typename F> static void us_all(F launch, cudaStream_t s, double out[2])
{
    const int iters = 50;
    cudaEvent_t a, b;
    float ms = 0;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < 5; i++)
        launch();
    CK(cudaStreamSynchronize(s));
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    CK(cudaEventRecord(a, s));
    for (int i = 0; i < iters; i++)
        launch();
    CK(cudaEventRecord(b, s));
    CK(cudaEventSynchronize(b));
    double mine[2] = {0, (MPI_Wtime() - t0) * 1e6 / iters};
    CK(cudaEventElapsedTime(&ms, a, b));
    CK(cudaGetLastError());
    mine[0] = ms * 1e3 / iters;
    MPI_Allreduce(mine, out, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    cudaEventDestroy(a);
    cudaEventDestroy(b);
}

static int translate_mode(symaddr_context_t *ctx, symaddr_provider_t *prov, size_t bytes)
{
    void *dst, *src, *raw;
    symaddr_map_t *dm, *sm;
    if (symaddr_symmetric_alloc(prov, bytes, &dst, &dm) ||
        symaddr_symmetric_alloc(prov, bytes, &src, &sm)) {
        fprintf(stderr, "put-bisect: setup failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int me = symaddr_rank(ctx), size = symaddr_size(ctx), t = (me + 1) % size;
    size_t n = bytes / 16;
    unsigned blocks = n / 256 > 1024 ? 1024 : n / 256 ? (unsigned)(n / 256) : 1; /* the bench's */
    const uint64_t *pb = dm->peer_bases;
    symaddr_translate_host(dm, dst, t, &raw);
    uint64_t delta = (uint64_t)(uintptr_t)raw - (uint64_t)(uintptr_t)dst;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaMemset(src, 7, bytes));
    CK(cudaDeviceSynchronize());
    if (me == 0)
        printf("# put-bisect translate: %d ranks, each %zu KiB to its right neighbour, %ux256, "
               "slowest rank's us per launch\n%-46s %10s %10s\n",
               size, bytes >> 10, blocks, "kernel", "events", "host");
    double r[2];
#define TROW(name, ...)                                                                            \
    us_all([&] { __VA_ARGS__; }, s, r);                                                            \
    if (me == 0)                                                                                   \
        printf("%-46s %10.2f %10.2f\n", name, r[0], r[1]);
    TROW("raw peer pointer", t_raw<<<blocks, 256, 0, s>>>((int4 *)raw, (const int4 *)src, n));
    TROW("symaddr_translate per access (the bench's)",
         t_per_access<<<blocks, 256, 0, s>>>((int4 *)dst, (const int4 *)src, n, t, pb, me));
    TROW("per access, table through __ldg",
         t_per_access_ldg<<<blocks, 256, 0, s>>>((int4 *)dst, (const int4 *)src, n, t, pb, me));
    TROW("once per thread",
         t_once<<<blocks, 256, 0, s>>>((int4 *)dst, (const int4 *)src, n, t, pb, me));
    TROW("delta as a kernel argument",
         t_delta<<<blocks, 256, 0, s>>>((int4 *)dst, (const int4 *)src, n, delta));
    TROW("raw peer pointer (again)",
         t_raw<<<blocks, 256, 0, s>>>((int4 *)raw, (const int4 *)src, n));
    fflush(stdout);
    MPI_Barrier(MPI_COMM_WORLD);
    cudaStreamDestroy(s);
    symaddr_symmetric_free(prov, src);
    symaddr_symmetric_free(prov, dst);
    return 0;
}

int main(int argc, char **argv)
{
    symaddr_context_t *ctx;
    symaddr_provider_t *prov;
    symaddr_map_t *dm, *sm;
    void *dst, *src;
    MPI_Init(&argc, &argv);
    int vmm = argc > 1 && !strcmp(argv[1], "vmm");
    if (argc > 1 && !strcmp(argv[1], "translate")) {
        size_t mib = argc > 2 ? (size_t)atoll(argv[2]) : 1;
        if (symaddr_init(MPI_COMM_WORLD, NULL, &ctx) != SYMADDR_OK ||
            symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &prov)) {
            fprintf(stderr, "put-bisect: setup failed\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        translate_mode(ctx, prov, mib << 20);
        symaddr_finalize(&ctx);
        MPI_Finalize();
        return 0;
    }
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
