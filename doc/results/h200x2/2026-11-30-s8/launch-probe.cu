// Host cost of a kernel launch on this machine: back-to-back launches of an empty kernel, plain
// and as a programmatic dependent (cudaLaunchKernelEx, as symaddr's collectives), with a
// 176-byte argument (the size of symaddr_coll_desc_t); host time per launch, and the stream's
// time per launch once the queue drains.
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>
struct Desc { char b[176]; };
__global__ void k(Desc d) { if (d.b[0] == 42 && threadIdx.x == 1000) printf("x"); }
int main() {
    cudaStream_t s; cudaStreamCreate(&s);
    Desc d{}; const int N = 2000;
    for (int pdl = 0; pdl < 2; pdl++) for (int round = 0; round < 3; round++) {
        cudaLaunchConfig_t cfg = {}; cudaLaunchAttribute attr[1];
        cfg.gridDim = dim3(1); cfg.blockDim = dim3(128); cfg.stream = s;
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = attr; cfg.numAttrs = pdl;
        for (int i = 0; i < 100; i++) cudaLaunchKernelEx(&cfg, k, d);
        cudaStreamSynchronize(s);
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < N; i++) cudaLaunchKernelEx(&cfg, k, d);
        auto t1 = std::chrono::steady_clock::now();
        cudaStreamSynchronize(s);
        auto t2 = std::chrono::steady_clock::now();
        printf("%s round %d: host %.2f us per launch, until the stream drained %.2f us per launch\n",
               pdl ? "programmatic dependent" : "plain", round,
               std::chrono::duration<double, std::micro>(t1 - t0).count() / N,
               std::chrono::duration<double, std::micro>(t2 - t0).count() / N);
    }
    return 0;
}
