/* SPDX-License-Identifier: MIT */
/* The HIP names symaddr uses, mapped to CUDA, so that nvcc builds the same
 * .hip sources that hipcc builds. Only what the library uses is mapped. */
#ifndef SYMADDR_LIB_DEVICE_HIP2CUDA_H
#define SYMADDR_LIB_DEVICE_HIP2CUDA_H

#include <cuda.h>
#include <cuda_runtime.h>

typedef cudaError_t hipError_t;
typedef cudaStream_t hipStream_t;
typedef cudaIpcMemHandle_t hipIpcMemHandle_t;
typedef CUdeviceptr hipDeviceptr_t;

#define hipSuccess cudaSuccess
#define hipErrorInvalidValue cudaErrorInvalidValue
#define hipErrorOutOfMemory cudaErrorMemoryAllocation
#define hipMemcpyDefault cudaMemcpyDefault
#define hipIpcMemLazyEnablePeerAccess cudaIpcMemLazyEnablePeerAccess

#define hipGetDeviceCount cudaGetDeviceCount
#define hipSetDevice cudaSetDevice
#define hipGetDevice cudaGetDevice
#define hipDeviceGetPCIBusId cudaDeviceGetPCIBusId
#define hipDeviceCanAccessPeer cudaDeviceCanAccessPeer
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipMemcpy cudaMemcpy
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemcpyPeerAsync cudaMemcpyPeerAsync
#define hipMemset cudaMemset
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipStreamSynchronize cudaStreamSynchronize
#define hipIpcGetMemHandle cudaIpcGetMemHandle
#define hipIpcOpenMemHandle cudaIpcOpenMemHandle
#define hipIpcCloseMemHandle cudaIpcCloseMemHandle
#define hipGetLastError cudaGetLastError
#define hipStreamCreate cudaStreamCreate
#define hipStreamCreateWithFlags cudaStreamCreateWithFlags
#define hipStreamNonBlocking cudaStreamNonBlocking
#define hipStreamDestroy cudaStreamDestroy
#define hipGetErrorString cudaGetErrorString
#define hipGetErrorName cudaGetErrorName
#define hipMemGetInfo cudaMemGetInfo
#define hipHostRegister cudaHostRegister
#define hipHostRegisterMapped cudaHostRegisterMapped
#define hipHostRegisterPortable cudaHostRegisterPortable
#define hipDeviceGetAttribute cudaDeviceGetAttribute
#define hipDeviceAttributeMultiprocessorCount cudaDevAttrMultiProcessorCount
#define hipOccupancyMaxActiveBlocksPerMultiprocessor cudaOccupancyMaxActiveBlocksPerMultiprocessor

/* The driver API through the runtime's entry points, so that linking a cuda build needs only
 * libcudart (libcuda.so.1 comes with the driver, and a build host may have none). The ABI asked
 * for is CUDA 12.0's, the one these headers' names (cuMemGetAddressRange = _v2) stand for. */
static inline void *symaddr_cu_entry_(const char *name)
{
    void *fn = NULL;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    cudaError_t e = cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found);
#else
    cudaError_t e = cudaGetDriverEntryPoint(name, &fn, cudaEnableDefault, &found);
#endif
    if (e != cudaSuccess || found != cudaDriverEntryPointSuccess) {
        (void)cudaGetLastError();
        return NULL;
    }
    return fn;
}

/* A missing entry point answers CUDA_ERROR_NOT_FOUND, as the driver does for an unknown name. */
template <typename F, typename... A> static inline CUresult symaddr_cu_call_(F fn, A... args)
{
    return fn ? fn(args...) : CUDA_ERROR_NOT_FOUND;
}

/* SYMADDR_CU(cuMemCreate, ...) calls the driver's cuMemCreate; each call site looks its entry
 * point up once. */
#define SYMADDR_CU(fn, ...)                                                                        \
    symaddr_cu_call_(                                                                              \
        [] {                                                                                       \
            static decltype(&fn) entry_ = (decltype(&fn))symaddr_cu_entry_(#fn);                   \
            return entry_;                                                                         \
        }(),                                                                                       \
        __VA_ARGS__)

static inline hipError_t hipMemGetAddressRange(hipDeviceptr_t *base, size_t *bytes,
                                               hipDeviceptr_t ptr)
{
    return SYMADDR_CU(cuMemGetAddressRange, base, bytes, ptr) == CUDA_SUCCESS
               ? cudaSuccess
               : cudaErrorInvalidValue;
}

#endif
