// Per-kernel time of a chain of kernels that each spin for a fixed time: stream (queued behind a
// gate, so the host is never the limit) against graph replay, programmatic dependent or plain.
#include <cstdio>
#include <thread>
#include <chrono>
#include <cuda_runtime.h>
__global__ void gate(volatile int *flag) { while (*flag == 0) { } }
__device__ unsigned long long gt() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ int g_mode;
__global__ void kspin(unsigned long long ns, int pdl, int *dst, int mode) {
    if (pdl) {
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
        asm volatile("griddepcontrol.wait;" ::: "memory");
    }
    unsigned long long t0 = gt();
    if (dst && threadIdx.x == 0 && (mode == 1 || mode == 3)) *(volatile int *)dst = (int)t0;
    while (gt() - t0 < ns) { }
    if (dst && threadIdx.x == 0 && (mode == 0 || mode == 2)) *(volatile int *)dst = (int)t0;
    if (mode == 2) __threadfence_system();
    if (mode == 3) __threadfence();
}
static int *g_dst; static int g_hmode;
static void launch(cudaStream_t s, unsigned long long ns, int pdl) {
    cudaLaunchConfig_t cfg = {}; cudaLaunchAttribute attr[1];
    cfg.gridDim = dim3(1); cfg.blockDim = dim3(128); cfg.stream = s;
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr; cfg.numAttrs = pdl;
    cudaLaunchKernelEx(&cfg, kspin, ns, pdl, g_dst, g_hmode);
}
int main() {
    cudaStream_t s; cudaStreamCreate(&s);
    int *flag; cudaHostAlloc(&flag, 4, cudaHostAllocMapped);
    int *dflag; cudaHostGetDevicePointer(&dflag, flag, 0);
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    const int G = 600;
    int *local, *peer = NULL;
    cudaMalloc(&local, 4096);
    int ndev = 0; cudaGetDeviceCount(&ndev);
    if (ndev > 1) { cudaSetDevice(1); cudaMalloc(&peer, 4096); cudaSetDevice(0); cudaDeviceEnablePeerAccess(1, 0); }
    int *dsts[3] = {NULL, local, peer}; const char *dn[3] = {"no store", "local store", "peer store"};
    const char *mn[4] = {"store at end", "store first", "end+fence.sys", "first+fence.gpu"};
    for (int di = 1; di < 3; di++) for (int m = 0; m < 4; m++) { if (di == 2 && !peer) break; g_dst = dsts[di]; g_hmode = m;
    unsigned long long nss[4] = {0, 1000, 2000, 3000};
    for (int pdl = 1; pdl < 2; pdl++) for (int i = 2; i < 3; i++) for (int round = 0; round < 2; round++) {
        *(volatile int *)flag = 0;
        gate<<<1, 1, 0, s>>>(dflag);
        cudaEventRecord(e0, s);
        std::thread opener([&]() { std::this_thread::sleep_for(std::chrono::milliseconds(20)); *(volatile int *)flag = 1; });
        for (int k = 0; k < G; k++) launch(s, nss[i], pdl);
        cudaEventRecord(e1, s);
        opener.join();
        cudaStreamSynchronize(s);
        float ms_stream; cudaEventElapsedTime(&ms_stream, e0, e1);
        cudaGraph_t g; cudaGraphExec_t ge;
        cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
        for (int k = 0; k < G; k++) launch(s, nss[i], pdl);
        cudaStreamEndCapture(s, &g);
        cudaGraphInstantiate(&ge, g, 0);
        cudaGraphLaunch(ge, s); cudaStreamSynchronize(s);
        cudaEventRecord(e0, s); cudaGraphLaunch(ge, s); cudaEventRecord(e1, s); cudaStreamSynchronize(s);
        float ms_graph; cudaEventElapsedTime(&ms_graph, e0, e1);
        cudaGraphExecDestroy(ge); cudaGraphDestroy(g);
        printf("%-11s %-16s %s spin %4llu ns: stream (queued) %.2f us/kernel, graph %.2f us/kernel\n", dn[di], mn[m], pdl ? "pdl  " : "plain", nss[i], ms_stream * 1000 / G, ms_graph * 1000 / G);
    }
    }
    printf("%s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
}
