// Host cost per call: empty-kernel launches vs symaddr_allreduce, created stream vs NULL.
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>
#include <mpi.h>
#include "symaddr/symaddr.h"
struct Desc { char b[176]; };
__global__ void k(Desc d) { if (d.b[0] == 42 && threadIdx.x == 1000) printf("x"); }
using clk = std::chrono::steady_clock;
static double us(clk::time_point a, clk::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); }
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    symaddr_context_t *ctx; symaddr_provider_t *prov; symaddr_map_t *map; float *buf;
    if (symaddr_init(MPI_COMM_WORLD, NULL, &ctx) != SYMADDR_OK) { printf("init failed\n"); return 1; }
    cudaStream_t s; cudaStreamCreate(&s); // after init, which picks this rank's GPU
    cudaStream_t snb; cudaStreamCreateWithFlags(&snb, cudaStreamNonBlocking);
    Desc d{}; const int N = 2000;
    cudaStream_t streams[3] = {s, snb, 0}; const char *sn[3] = {"created", "nonblocking", "NULL"};
    int me0; MPI_Comm_rank(MPI_COMM_WORLD, &me0);
    for (int si = 0; si < 3 && argc < 2 && me0 == 0; si++) for (int pdl = 0; pdl < 2; pdl++) {
        cudaLaunchConfig_t cfg = {}; cudaLaunchAttribute attr[1];
        cfg.gridDim = dim3(1); cfg.blockDim = dim3(128); cfg.stream = streams[si];
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = attr; cfg.numAttrs = pdl;
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < 100; i++) cudaLaunchKernelEx(&cfg, k, d);
            cudaStreamSynchronize(streams[si]);
            auto t0 = clk::now();
            for (int i = 0; i < N; i++) cudaLaunchKernelEx(&cfg, k, d);
            auto t1 = clk::now();
            cudaStreamSynchronize(streams[si]);
            auto t2 = clk::now();
            printf("empty %-11s %s: host %.2f drained %.2f us/launch\n", sn[si], pdl ? "pdl  " : "plain", us(t0, t1) / N, us(t0, t2) / N);
        }
    }
    symaddr_provider_get(ctx, SYMADDR_PROVIDER_HEAP, &prov);
    if (symaddr_symmetric_alloc(prov, 1 << 20, (void **)&buf, &map) != SYMADDR_OK) { printf("alloc: %s\n", symaddr_last_error(ctx)); return 1; }
    size_t counts[3] = {2, 256, 8192};
    for (int si = 0; si < 3; si++) for (int c = 0; c < 3; c++) for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 100; i++) symaddr_allreduce(ctx, buf, buf, counts[c], SYMADDR_FLOAT32, SYMADDR_SUM, streams[si]);
        symaddr_stream_sync(ctx, streams[si]);
        MPI_Barrier(MPI_COMM_WORLD);
        auto t0 = clk::now();
        int bad = 0;
        for (int i = 0; i < N; i++) bad |= symaddr_allreduce(ctx, buf, buf, counts[c], SYMADDR_FLOAT32, SYMADDR_SUM, streams[si]) != SYMADDR_OK;
        auto t1 = clk::now();
        symaddr_stream_sync(ctx, streams[si]);
        auto t2 = clk::now();
        int me; MPI_Comm_rank(MPI_COMM_WORLD, &me);
        double v[2] = {us(t0, t1) / N, us(t0, t2) / N}, mx[2], mn[2];
        MPI_Reduce(v, mx, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(v, mn, 2, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        if (me == 0) printf("allreduce %6zu B %-11s: host %.2f-%.2f drained %.2f-%.2f us/call%s\n", counts[c] * 4, sn[si], mn[0], mx[0], mn[1], mx[1], bad ? " FAILED" : "");
    }
    // host-only part: lookups
    auto t0 = clk::now(); symaddr_map_t *m; for (int i = 0; i < 100000; i++) symaddr_lookup(ctx, buf + (i & 1023), &m); auto t1 = clk::now();
    printf("lookup %.1f ns\n", us(t0, t1) * 1000 / 100000);
    symaddr_symmetric_free(prov, buf);
    symaddr_finalize(&ctx);
    MPI_Finalize();
}
