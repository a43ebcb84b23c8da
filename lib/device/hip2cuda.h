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
#define hipDeviceGetAttribute cudaDeviceGetAttribute
#define hipDeviceAttributeMultiprocessorCount cudaDevAttrMultiProcessorCount
#define hipOccupancyMaxActiveBlocksPerMultiprocessor cudaOccupancyMaxActiveBlocksPerMultiprocessor

static inline hipError_t hipMemGetAddressRange(hipDeviceptr_t *base, size_t *bytes,
                                               hipDeviceptr_t ptr)
{
    return cuMemGetAddressRange(base, bytes, ptr) == CUDA_SUCCESS ? cudaSuccess
                                                                  : cudaErrorInvalidValue;
}

#endif
