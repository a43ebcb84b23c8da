/* SPDX-License-Identifier: MIT */
/* GPU backend (hip or cuda): the same source, HIP names mapped to CUDA by
 * lib/device/hip2cuda.h when built by nvcc. */
#include "device/runtime.h"
#include "backend.h"

#include <stdio.h>
#include <string.h>

#if defined(SYMADDR_USE_CUDA)
#define GPU_NAME "cuda"
#define GPU_KIND SYMADDR_BACKEND_CUDA
#else
#define GPU_NAME "hip"
#define GPU_KIND SYMADDR_BACKEND_HIP
#endif

static_assert(sizeof(hipIpcMemHandle_t) <= sizeof(((symaddr_ipc_handle_t *)0)->data),
              "IPC handle does not fit");

static symaddr_status_t status_of(hipError_t e)
{
    return e == hipSuccess ? SYMADDR_OK : SYMADDR_ERR_BACKEND;
}

static int gpu_device_count(void)
{
    int n = 0;
    if (hipGetDeviceCount(&n) != hipSuccess) {
        (void)hipGetLastError();
        return 0;
    }
    return n;
}

static symaddr_status_t gpu_init(symaddr_backend_t *be, int device, char *why, size_t why_len)
{
    hipError_t e = hipSetDevice(device);
    if (e == hipSuccess)
        e = hipFree(nullptr); /* creates the device context now, not inside a collective */
    if (e != hipSuccess) {
        snprintf(why, why_len, GPU_NAME " device %d cannot be used: %s", device,
                 hipGetErrorString(e));
        return SYMADDR_ERR_BACKEND;
    }
    be->device = device;
    return SYMADDR_OK;
}

static void gpu_fini(symaddr_backend_t *be) { (void)be; }

static symaddr_status_t gpu_mem_alloc(symaddr_backend_t *be, size_t bytes, void **ptr_p)
{
    (void)be;
    hipError_t e = hipMalloc(ptr_p, bytes);
    if (e != hipSuccess) {
        (void)hipGetLastError();
        return SYMADDR_ERR_NO_MEMORY;
    }
    return SYMADDR_OK;
}

static symaddr_status_t gpu_mem_free(symaddr_backend_t *be, void *ptr)
{
    (void)be;
    return status_of(hipFree(ptr));
}

static void gpu_local_free(symaddr_backend_t *be, void *ptr)
{
    (void)be;
    (void)hipFree(ptr);
}

static symaddr_status_t gpu_mem_range(symaddr_backend_t *be, const void *ptr, void **base_p,
                                      size_t *bytes_p)
{
    hipDeviceptr_t base;
    size_t bytes;
    (void)be;
    if (hipMemGetAddressRange(&base, &bytes, (hipDeviceptr_t)(uintptr_t)ptr) != hipSuccess) {
        (void)hipGetLastError();
        return SYMADDR_ERR_NOT_SHAREABLE;
    }
    *base_p = (void *)(uintptr_t)base;
    *bytes_p = bytes;
    return SYMADDR_OK;
}

static symaddr_status_t gpu_handle_export(symaddr_backend_t *be, void *base, size_t bytes,
                                          symaddr_ipc_handle_t *h)
{
    hipIpcMemHandle_t ipc;
    (void)be;
    if (hipIpcGetMemHandle(&ipc, base) != hipSuccess) {
        (void)hipGetLastError();
        return SYMADDR_ERR_NOT_SHAREABLE;
    }
    memset(h, 0, sizeof(*h));
    memcpy(h->data, &ipc, sizeof(ipc));
    h->bytes = bytes;
    h->fd = -1;
    return SYMADDR_OK;
}

static symaddr_status_t gpu_handle_open(symaddr_backend_t *be, const symaddr_ipc_handle_t *h,
                                        void **ptr_p)
{
    hipIpcMemHandle_t ipc;
    (void)be;
    memcpy(&ipc, h->data, sizeof(ipc));
    hipError_t e = hipIpcOpenMemHandle(ptr_p, ipc, hipIpcMemLazyEnablePeerAccess);
    if (e != hipSuccess)
        (void)hipGetLastError();
    return status_of(e);
}

static symaddr_status_t gpu_handle_close(symaddr_backend_t *be, void *ptr, size_t bytes)
{
    (void)be;
    (void)bytes;
    return status_of(hipIpcCloseMemHandle(ptr));
}

static symaddr_status_t gpu_memcpy(symaddr_backend_t *be, void *dst, const void *src, size_t n)
{
    (void)be;
    /* A copy from pageable host memory may return before the data reaches the device;
     * peers read it right after, so wait for it. */
    hipError_t e = hipMemcpy(dst, src, n, hipMemcpyDefault);
    if (e == hipSuccess)
        e = hipDeviceSynchronize();
    return status_of(e);
}

static symaddr_status_t gpu_stream_sync(symaddr_backend_t *be, void *stream)
{
    (void)be;
    return status_of(stream ? hipStreamSynchronize((hipStream_t)stream) : hipDeviceSynchronize());
}

static const symaddr_backend_ops_t gpu_ops = {
    sizeof(symaddr_backend_ops_t),
    GPU_NAME,
    GPU_KIND,
    SYMADDR_CAP_LOAD_STORE | SYMADDR_CAP_ATOMICS | SYMADDR_CAP_SYSTEM_ATOMICS,
    gpu_device_count,
    gpu_init,
    gpu_fini,
    gpu_mem_alloc,
    gpu_mem_free,
    gpu_mem_alloc,
    gpu_local_free,
    gpu_mem_range,
    gpu_handle_export,
    gpu_handle_open,
    gpu_handle_close,
    gpu_memcpy,
    gpu_stream_sync,
    &symaddr_kernels_gpu,
    &symaddr_coll_gpu,
};

extern "C" const symaddr_backend_ops_t *const symaddr_backend_gpu_ops = &gpu_ops;
