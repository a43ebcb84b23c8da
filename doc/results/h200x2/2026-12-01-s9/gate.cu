// Eager calls, 2 ranks: host time per call, and the GPU's time per call when the queue is full
// (a gate kernel holds the stream while the host enqueues N calls), created stream vs NULL.
#include <chrono>
#include <cstdio>
#include <thread>
#include <cuda_runtime.h>
#include <mpi.h>
#include "symaddr/symaddr.h"
using clk = std::chrono::steady_clock;
static double us(clk::time_point a, clk::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); }
__global__ void gate(volatile int *flag) { while (*flag == 0) { } }
struct Desc { char b[176]; };
__global__ void k(Desc d) { if (d.b[0] == 42 && threadIdx.x == 1000) printf("x"); }
__global__ void kp(Desc d) {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
    if (d.b[0] == 42 && threadIdx.x == 1000) printf("x"); }
__global__ void k8(long d) { if (d == 42 && threadIdx.x == 1000) printf("x"); }
static cudaError_t launch_pdl(cudaStream_t s) {
    cudaLaunchConfig_t cfg = {}; cudaLaunchAttribute attr[1];
    cfg.gridDim = dim3(1); cfg.blockDim = dim3(128); cfg.stream = s;
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr; cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, kp, Desc{});
}
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    symaddr_context_t *ctx; symaddr_provider_t *prov; symaddr_map_t *map; float *buf;
    if (symaddr_init(MPI_COMM_WORLD, NULL, &ctx) != SYMADDR_OK) { printf("init failed\n"); return 1; }
    int me = symaddr_rank(ctx);
    symaddr_provider_get(ctx, SYMADDR_PROVIDER_HEAP, &prov);
    if (symaddr_symmetric_alloc(prov, 1 << 20, (void **)&buf, &map) != SYMADDR_OK) { printf("alloc: %s\n", symaddr_last_error(ctx)); return 1; }
    cudaStream_t s; cudaStreamCreate(&s);
    int *flag; cudaHostAlloc(&flag, 4, cudaHostAllocMapped);
    int *dflag; cudaHostGetDevicePointer(&dflag, flag, 0);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    cudaStream_t streams[2] = {s, 0}; const char *sn[2] = {"created", "NULL"};
    size_t counts[3] = {2, 1024, 8192};
    for (int si = 0; si < 1; si++) for (int c = 0; c < 6; c++) for (int round = 0; round < 3; round++) {
        const int N = 2000, G = 600;
        auto call = [&]() { return c < 3 ? symaddr_allreduce(ctx, buf, buf, counts[c], SYMADDR_FLOAT32, SYMADDR_SUM, streams[si]) != SYMADDR_OK
                                         : c == 3 ? (k<<<1, 128, 0, streams[si]>>>(Desc{}), cudaGetLastError() != cudaSuccess)
                                         : c == 4 ? (k8<<<1, 128, 0, streams[si]>>>(0), cudaGetLastError() != cudaSuccess)
                                         : launch_pdl(streams[si]) != cudaSuccess; };
        int bad = 0;
        for (int i = 0; i < 100; i++) bad |= call();
        symaddr_stream_sync(ctx, streams[si]);
        MPI_Barrier(MPI_COMM_WORLD);
        auto t0 = clk::now();
        for (int i = 0; i < N; i++) bad |= call();
        auto t1 = clk::now();
        symaddr_stream_sync(ctx, streams[si]);
        auto t2 = clk::now();
        // gated: the GPU sees G calls already queued
        *(volatile int *)flag = 0;
        gate<<<1, 1, 0, streams[si]>>>(dflag);
        cudaEventRecord(e0, streams[si]);
        MPI_Barrier(MPI_COMM_WORLD);
        std::thread opener([&]() { std::this_thread::sleep_for(std::chrono::milliseconds(30)); *(volatile int *)flag = 1; });
        for (int i = 0; i < G; i++) bad |= call();
        cudaEventRecord(e1, streams[si]);
        opener.join();
        symaddr_stream_sync(ctx, streams[si]);
        float ms = 0; cudaEventElapsedTime(&ms, e0, e1);
        double v[3] = {us(t0, t1) / N, us(t0, t2) / N, ms * 1000.0 / G}, mx[3], mn[3];
        MPI_Reduce(v, mx, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(v, mn, 3, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        int anybad; MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (me == 0) printf("%-9s %6zu B %-7s: eager host %.2f-%.2f drained %.2f-%.2f | queued GPU %.2f-%.2f us/call%s\n", c < 3 ? "allreduce" : c == 3 ? "empty176" : c == 4 ? "empty8" : "emptypdl", c < 3 ? counts[c] * 4 : 0, sn[si], mn[0], mx[0], mn[1], mx[1], mn[2], mx[2], anybad ? " FAILED" : "");
    }
    symaddr_symmetric_free(prov, buf);
    symaddr_finalize(&ctx);
    MPI_Finalize();
}
