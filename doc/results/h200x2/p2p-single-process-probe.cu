// SPDX-License-Identifier: MIT
// Remote store/load bandwidth between GPU 0 and GPU 1 for various launch shapes.
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>
struct alignas(16) v16 { uint64_t a, b; };
template <int U> __global__ void copy(v16 *d, const v16 *s, size_t n) {
  size_t t = blockIdx.x * (size_t)blockDim.x + threadIdx.x, c = (size_t)gridDim.x * blockDim.x, v = t;
  for (; v + (U - 1) * c < n; v += U * c) {
    v16 r[U];
#pragma unroll
    for (int k = 0; k < U; k++) r[k] = s[v + k * c];
#pragma unroll
    for (int k = 0; k < U; k++) d[v + k * c] = r[k];
  }
  for (; v < n; v += c) d[v] = s[v];
}
// Each warp copies a contiguous chunk (better write combining per warp).
template <int U> __global__ void copy_chunk(v16 *d, const v16 *s, size_t n) {
  size_t warps = (size_t)gridDim.x * blockDim.x / 32, w = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  size_t per = (n + warps - 1) / warps; per = (per + 32 * U - 1) / (32 * U) * (32 * U);
  size_t lo = w * per, hi = lo + per < n ? lo + per : n;
  for (size_t v = lo + lane; v < hi; v += 32 * U) {
    v16 r[U];
#pragma unroll
    for (int k = 0; k < U; k++) if (v + k * 32 < hi) r[k] = s[v + k * 32];
#pragma unroll
    for (int k = 0; k < U; k++) if (v + k * 32 < hi) d[v + k * 32] = r[k];
  }
}
int main() {
  size_t bytes = 256ull << 20, n = bytes / 16;
  v16 *a0, *b0, *a1;
  cudaSetDevice(1); cudaMalloc(&a1, bytes); cudaDeviceEnablePeerAccess(0, 0);
  cudaSetDevice(0); cudaMalloc(&a0, bytes); cudaMalloc(&b0, bytes); cudaDeviceEnablePeerAccess(1, 0);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  int grids[] = {66, 132, 264, 528, 1056, 2112}, thr[] = {256, 512, 1024};
  for (int dir = 0; dir < 2; dir++)
    for (int kind = 0; kind < 4; kind++)
      for (int g : grids) for (int t : thr) {
        v16 *d = dir == 0 ? a1 : b0, *s = dir == 0 ? a0 : a1;
        auto go = [&] { if (kind == 0) copy<1><<<g, t>>>(d, s, n); else if (kind == 1) copy<4><<<g, t>>>(d, s, n);
                        else if (kind == 2) copy_chunk<4><<<g, t>>>(d, s, n); else copy_chunk<8><<<g, t>>>(d, s, n); };
        go(); cudaDeviceSynchronize();
        cudaEventRecord(e0); for (int i = 0; i < 5; i++) go(); cudaEventRecord(e1); cudaEventSynchronize(e1);
        float ms; cudaEventElapsedTime(&ms, e0, e1);
        printf("%s kind %d grid %5d thr %4d : %7.1f GB/s\n", dir == 0 ? "put" : "get", kind, g, t, bytes * 5 / (ms * 1e-3) / 1e9);
      }
  cudaEventRecord(e0); for (int i = 0; i < 5; i++) cudaMemcpyPeerAsync(a1, 1, a0, 0, bytes); cudaEventRecord(e1); cudaEventSynchronize(e1);
  float ms; cudaEventElapsedTime(&ms, e0, e1); printf("memcpyPeer %7.1f GB/s  err=%s\n", bytes * 5 / (ms * 1e-3) / 1e9, cudaGetErrorString(cudaGetLastError()));
}
