// Runtime vs driver launch cost, PDL, created stream; and clock_gettime cost.
#include <chrono>
#include <cstdio>
#include <time.h>
#include <cuda.h>
#include <cuda_runtime.h>
struct Desc { char b[176]; };
__global__ void k(Desc d) { if (d.b[0] == 42 && threadIdx.x == 1000) printf("x"); }
using clk = std::chrono::steady_clock;
static double us(clk::time_point a, clk::time_point b) { return std::chrono::duration<double, std::micro>(b - a).count(); }
int main() {
    cudaStream_t s; cudaStreamCreate(&s);
    Desc d{}; const int N = 4000;
    cudaFunction_t f; cudaGetFuncBySymbol(&f, (const void *)k);
    for (int mode = 0; mode < 4; mode++) for (int round = 0; round < 3; round++) {
        cudaLaunchConfig_t cfg = {}; cudaLaunchAttribute attr[1];
        cfg.gridDim = dim3(1); cfg.blockDim = dim3(128); cfg.stream = s;
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = attr; cfg.numAttrs = 1;
        CUlaunchConfig dc = {}; CUlaunchAttribute da[1];
        dc.gridDimX = dc.gridDimY = dc.gridDimZ = 1; dc.blockDimX = 128; dc.blockDimY = dc.blockDimZ = 1;
        dc.hStream = (CUstream)s; da[0].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        da[0].value.programmaticStreamSerializationAllowed = 1; dc.attrs = da; dc.numAttrs = 1;
        void *args[] = {&d};
        auto go = [&]() {
            if (mode == 0) cudaLaunchKernelEx(&cfg, k, d);
            else if (mode == 1) cudaLaunchKernelExC(&cfg, (const void *)f, args);
            else if (mode == 2) cuLaunchKernelEx(&dc, (CUfunction)f, args, NULL);
            else { cudaLaunchKernelEx(&cfg, k, d); cudaGetLastError(); }
        };
        for (int i = 0; i < 100; i++) go();
        cudaStreamSynchronize(s);
        auto t0 = clk::now();
        for (int i = 0; i < N; i++) go();
        auto t1 = clk::now();
        cudaStreamSynchronize(s);
        auto t2 = clk::now();
        const char *nm[] = {"runtime template", "runtime ExC by cudaFunction_t", "driver cuLaunchKernelEx", "runtime + GetLastError"};
        printf("%-30s: host %.2f drained %.2f us/launch\n", nm[mode], us(t0, t1) / N, us(t0, t2) / N);
    }
    struct timespec ts; auto t0 = clk::now();
    for (int i = 0; i < 1000000; i++) clock_gettime(CLOCK_MONOTONIC, &ts);
    printf("clock_gettime %.1f ns\n", us(t0, clk::now()) * 1000 / 1000000);
    return 0;
}
