/* SPDX-License-Identifier: MIT */
/* GPU backend (hip or cuda): the same source, HIP names mapped to CUDA by
 * lib/device/hip2cuda.h when built by nvcc. */
#include "device/runtime.h"
#include "backend.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(SYMADDR_USE_CUDA)
#define GPU_NAME "cuda"
#define GPU_KIND SYMADDR_BACKEND_CUDA
#else
#define GPU_NAME "hip"
#define GPU_KIND SYMADDR_BACKEND_HIP
#endif

static_assert(sizeof(hipIpcMemHandle_t) <= sizeof(((symaddr_ipc_handle_t *)0)->data),
              "IPC handle does not fit");

/* VMM mappings made here, allocated or imported, so that export, close and free find their
 * handles. */
typedef struct vmm_rec {
    void *ptr;
    size_t bytes;
    unsigned long long handle; /* CUmemGenericAllocationHandle */
    int fd;                    /* exported descriptor, kept until free */
    int fabric;                /* created with a fabric handle type */
    int imported;
    struct vmm_rec *next;
} vmm_rec_t;

typedef struct gpu_state {
    pthread_mutex_t lock;
    vmm_rec_t *vmm;
} gpu_state_t;

[[maybe_unused]] static vmm_rec_t *vmm_find(symaddr_backend_t *be, const void *ptr, int unlink)
{
    gpu_state_t *g = (gpu_state_t *)be->priv;
    vmm_rec_t *r = NULL;
    pthread_mutex_lock(&g->lock);
    for (vmm_rec_t **pr = &g->vmm; *pr; pr = &(*pr)->next)
        if ((*pr)->ptr == ptr) {
            r = *pr;
            if (unlink)
                *pr = r->next;
            break;
        }
    pthread_mutex_unlock(&g->lock);
    return r;
}

[[maybe_unused]] static void vmm_add(symaddr_backend_t *be, vmm_rec_t *r)
{
    gpu_state_t *g = (gpu_state_t *)be->priv;
    pthread_mutex_lock(&g->lock);
    r->next = g->vmm;
    g->vmm = r;
    pthread_mutex_unlock(&g->lock);
}

/* The runtime's own words for a refusal go to be->why, so that symaddr_last_error can say
 * what the runtime said; the runtime's sticky last error is cleared. */
static symaddr_status_t fail(symaddr_backend_t *be, hipError_t e, symaddr_status_t st,
                             const char *what)
{
    snprintf(be->why, sizeof(be->why), "%s: %s (%s)", what, hipGetErrorString(e),
             hipGetErrorName(e));
    (void)hipGetLastError();
    return st;
}

static symaddr_status_t check(symaddr_backend_t *be, hipError_t e, const char *what)
{
    return e == hipSuccess ? SYMADDR_OK : fail(be, e, SYMADDR_ERR_BACKEND, what);
}

#if defined(SYMADDR_USE_CUDA)
static symaddr_status_t fail_drv(symaddr_backend_t *be, CUresult r, symaddr_status_t st,
                                 const char *what)
{
    const char *text = NULL, *name = NULL;
    cuGetErrorString(r, &text);
    cuGetErrorName(r, &name);
    snprintf(be->why, sizeof(be->why), "%s: %s (%s)", what, text ? text : "unknown error",
             name ? name : "?");
    return st;
}
#endif

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
    gpu_state_t *g = (gpu_state_t *)calloc(1, sizeof(*g));
    if (!g) {
        snprintf(why, why_len, "out of host memory");
        return SYMADDR_ERR_NO_MEMORY;
    }
    pthread_mutex_init(&g->lock, NULL);
    be->priv = g;
    be->device = device;
    be->wall_clock_khz = 0;
#if !defined(SYMADDR_USE_CUDA) && HIP_VERSION_MAJOR >= 6
    int khz = 0; /* the counter wall_clock64 reads (doc/amd.md, F3) */
    if (hipDeviceGetAttribute(&khz, hipDeviceAttributeWallClockRate, device) == hipSuccess &&
        khz > 0)
        be->wall_clock_khz = (unsigned)khz;
    else
        (void)hipGetLastError();
#endif
    return SYMADDR_OK;
}

static void gpu_fini(symaddr_backend_t *be)
{
    gpu_state_t *g = (gpu_state_t *)be->priv;
    if (!g)
        return;
    pthread_mutex_destroy(&g->lock);
    free(g);
    be->priv = NULL;
}

/* Bulk memory is hipMalloc's (coarse-grained on AMD: coherent with other agents only at kernel
 * boundaries, the fastest for bulk traffic); coherent memory, which kernels poll while peers
 * store into it, is fine-grained on AMD (HIP "Coherence control"); CUDA memory is both. */
static symaddr_status_t gpu_mem_alloc(symaddr_backend_t *be, size_t bytes, symaddr_mem_kind_t kind,
                                      void **ptr_p)
{
#if defined(SYMADDR_USE_CUDA)
    (void)kind;
    hipError_t e = hipMalloc(ptr_p, bytes);
#else
    hipError_t e = kind == SYMADDR_MEM_COHERENT
                       ? hipExtMallocWithFlags(ptr_p, bytes, hipDeviceMallocFinegrained)
                       : hipMalloc(ptr_p, bytes);
#endif
    if (e != hipSuccess)
        return fail(
            be, e, e == hipErrorMemoryAllocation ? SYMADDR_ERR_NO_MEMORY : SYMADDR_ERR_BACKEND,
            kind == SYMADDR_MEM_COHERENT ? "fine-grained device allocation" : "device allocation");
    return SYMADDR_OK;
}

static symaddr_status_t gpu_local_alloc(symaddr_backend_t *be, size_t bytes, void **ptr_p)
{
    return gpu_mem_alloc(be, bytes, SYMADDR_MEM_BULK, ptr_p);
}

static symaddr_status_t gpu_mem_free(symaddr_backend_t *be, void *ptr)
{
    return check(be, hipFree(ptr), "device free");
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
    hipError_t e = hipMemGetAddressRange(&base, &bytes, (hipDeviceptr_t)(uintptr_t)ptr);
    if (e != hipSuccess)
        return fail(be, e, SYMADDR_ERR_NOT_SHAREABLE, "no device allocation holds the pointer");
    *base_p = (void *)(uintptr_t)base;
    *bytes_p = bytes;
    return SYMADDR_OK;
}

#if defined(SYMADDR_USE_CUDA)
/* ---- VMM through the CUDA driver API ------------------------------------------------------- */

/* Every visible device may access the range; devices that cannot are left out. */
static CUresult vmm_map(symaddr_backend_t *be, CUmemGenericAllocationHandle h, size_t bytes,
                        size_t align, void **ptr_p)
{
    CUdeviceptr ptr;
    int ndev = 0;
    CUresult r = cuMemAddressReserve(&ptr, bytes, align, 0, 0);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = cuMemMap(ptr, bytes, 0, h, 0)) != CUDA_SUCCESS) {
        cuMemAddressFree(ptr, bytes);
        return r;
    }
    cudaGetDeviceCount(&ndev);
    CUmemAccessDesc own = {};
    own.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    own.location.id = be->device;
    own.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    r = cuMemSetAccess(ptr, bytes, &own, 1);
    for (int d = 0; r == CUDA_SUCCESS && d < ndev; d++) {
        CUmemAccessDesc other = own;
        other.location.id = d;
        if (d != be->device)
            (void)cuMemSetAccess(ptr, bytes, &other, 1);
    }
    if (r != CUDA_SUCCESS) {
        cuMemUnmap(ptr, bytes);
        cuMemAddressFree(ptr, bytes);
        return r;
    }
    *ptr_p = (void *)(uintptr_t)ptr;
    return CUDA_SUCCESS;
}

static size_t vmm_granularity(const CUmemAllocationProp *prop)
{
    size_t gran = 0;
    if (cuMemGetAllocationGranularity(&gran, prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) !=
            CUDA_SUCCESS ||
        gran == 0)
        gran = 2u << 20;
    return gran;
}

static symaddr_status_t gpu_vmm_alloc(symaddr_backend_t *be, size_t bytes, void **ptr_p,
                                      size_t *mapped_p)
{
    CUdevice dev;
    int fabric = 0;
    CUmemAllocationProp prop = {};
    CUmemGenericAllocationHandle h;
    vmm_rec_t *rec = (vmm_rec_t *)calloc(1, sizeof(*rec));
    if (!rec)
        return SYMADDR_ERR_NO_MEMORY;
    if (cuDeviceGet(&dev, be->device) == CUDA_SUCCESS)
        cuDeviceGetAttribute(&fabric, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, dev);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = be->device;
    prop.requestedHandleTypes =
        (CUmemAllocationHandleType)(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR |
                                    (fabric ? CU_MEM_HANDLE_TYPE_FABRIC : 0));
    size_t gran = vmm_granularity(&prop), size = (bytes + gran - 1) / gran * gran;
    CUresult r = cuMemCreate(&h, size, &prop, 0);
    if (r != CUDA_SUCCESS && fabric) { /* no fabric manager: descriptors only */
        fabric = 0;
        prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
        r = cuMemCreate(&h, size, &prop, 0);
    }
    if (r != CUDA_SUCCESS) {
        free(rec);
        return fail_drv(be, r,
                        r == CUDA_ERROR_OUT_OF_MEMORY ? SYMADDR_ERR_NO_MEMORY : SYMADDR_ERR_BACKEND,
                        "cuMemCreate");
    }
    if ((r = vmm_map(be, h, size, gran, &rec->ptr)) != CUDA_SUCCESS) {
        cuMemRelease(h);
        free(rec);
        return fail_drv(be, r, SYMADDR_ERR_BACKEND, "mapping VMM memory");
    }
    rec->bytes = size;
    rec->handle = h;
    rec->fd = -1;
    rec->fabric = fabric;
    vmm_add(be, rec);
    *ptr_p = rec->ptr;
    *mapped_p = size;
    return SYMADDR_OK;
}

static void vmm_release(vmm_rec_t *rec)
{
    cuMemUnmap((CUdeviceptr)(uintptr_t)rec->ptr, rec->bytes);
    cuMemAddressFree((CUdeviceptr)(uintptr_t)rec->ptr, rec->bytes);
    cuMemRelease(rec->handle);
    if (rec->fd >= 0)
        close(rec->fd);
    free(rec);
}

static symaddr_status_t gpu_vmm_free(symaddr_backend_t *be, void *ptr)
{
    vmm_rec_t *rec = vmm_find(be, ptr, 1);
    if (!rec)
        return SYMADDR_ERR_NOT_FOUND;
    vmm_release(rec);
    return SYMADDR_OK;
}

/* A descriptor always travels; a fabric handle too when the driver could make one. */
static symaddr_status_t vmm_export(symaddr_backend_t *be, vmm_rec_t *rec, symaddr_ipc_handle_t *h)
{
    CUresult r = CUDA_SUCCESS;
    memset(h, 0, sizeof(*h));
    if (rec->fd < 0 &&
        (r = cuMemExportToShareableHandle(
             &rec->fd, rec->handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)) != CUDA_SUCCESS) {
        rec->fd = -1;
        fail_drv(be, r, SYMADDR_ERR_NOT_SHAREABLE,
                 "exporting VMM memory as a descriptor (out of file descriptors? ulimit -n)");
    }
    h->fd = rec->fd;
    h->bytes = rec->bytes;
    h->kind = SYMADDR_HANDLE_VMM;
    CUmemFabricHandle fh;
    static_assert(sizeof(fh) <= sizeof(h->data), "fabric handle does not fit");
    if (rec->fabric && cuMemExportToShareableHandle(&fh, rec->handle, CU_MEM_HANDLE_TYPE_FABRIC,
                                                    0) == CUDA_SUCCESS) {
        memcpy(h->data, &fh, sizeof(fh));
        h->kind = SYMADDR_HANDLE_VMM_FABRIC;
    }
    return h->fd >= 0 || h->kind == SYMADDR_HANDLE_VMM_FABRIC ? SYMADDR_OK
                                                              : SYMADDR_ERR_NOT_SHAREABLE;
}

static symaddr_status_t vmm_open(symaddr_backend_t *be, const symaddr_ipc_handle_t *h, void **ptr_p)
{
    CUmemGenericAllocationHandle mh;
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (h->kind == SYMADDR_HANDLE_VMM_FABRIC) {
        CUmemFabricHandle fh;
        memcpy(&fh, h->data, sizeof(fh));
        r = cuMemImportFromShareableHandle(&mh, &fh, CU_MEM_HANDLE_TYPE_FABRIC);
    }
    if (r != CUDA_SUCCESS && h->fd >= 0)
        r = cuMemImportFromShareableHandle(&mh, (void *)(uintptr_t)h->fd,
                                           CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    if (h->fd >= 0)
        close(h->fd);
    if (r != CUDA_SUCCESS)
        return fail_drv(be, r, SYMADDR_ERR_BACKEND, "importing a peer's VMM memory");
    vmm_rec_t *rec = (vmm_rec_t *)calloc(1, sizeof(*rec));
    if (!rec || (r = vmm_map(be, mh, h->bytes, 0, &rec->ptr)) != CUDA_SUCCESS) {
        free(rec);
        cuMemRelease(mh);
        return rec ? fail_drv(be, r, SYMADDR_ERR_BACKEND, "mapping a peer's VMM memory")
                   : SYMADDR_ERR_NO_MEMORY;
    }
    rec->bytes = h->bytes;
    rec->handle = mh;
    rec->fd = -1;
    rec->imported = 1;
    vmm_add(be, rec);
    *ptr_p = rec->ptr;
    return SYMADDR_OK;
}
#define GPU_VMM_ALLOC gpu_vmm_alloc
#define GPU_VMM_FREE gpu_vmm_free
#else
/* HIP's VMM calls are not used: ROCm 5.2, which this is built and checked with, lacks them. */
#define GPU_VMM_ALLOC NULL
#define GPU_VMM_FREE NULL
#endif

static void gpu_device_id(symaddr_backend_t *be, char *buf, size_t len)
{
    if (hipDeviceGetPCIBusId(buf, (int)len, be->device) != hipSuccess && len) {
        (void)hipGetLastError();
        snprintf(buf, len, "device %d", be->device);
    }
}

static int gpu_can_access_peer(symaddr_backend_t *be, int dev, int peer_dev)
{
    int can = 0;
    (void)be;
    if (dev == peer_dev)
        return 1;
    if (hipDeviceCanAccessPeer(&can, dev, peer_dev) != hipSuccess)
        (void)hipGetLastError();
    return can;
}

static symaddr_status_t gpu_handle_export(symaddr_backend_t *be, void *base, size_t bytes,
                                          symaddr_ipc_handle_t *h)
{
    hipIpcMemHandle_t ipc;
#if defined(SYMADDR_USE_CUDA)
    vmm_rec_t *rec = vmm_find(be, base, 0);
    if (rec)
        return vmm_export(be, rec, h);
#else
    (void)be;
#endif
    hipError_t e = hipIpcGetMemHandle(&ipc, base);
    if (e != hipSuccess)
        return fail(be, e, SYMADDR_ERR_NOT_SHAREABLE, "exporting an IPC handle");
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
#if defined(SYMADDR_USE_CUDA)
    if (h->kind != SYMADDR_HANDLE_RUNTIME)
        return vmm_open(be, h, ptr_p);
#else
    if (h->kind != SYMADDR_HANDLE_RUNTIME)
        return SYMADDR_ERR_UNSUPPORTED;
#endif
    memcpy(&ipc, h->data, sizeof(ipc));
    return check(be, hipIpcOpenMemHandle(ptr_p, ipc, hipIpcMemLazyEnablePeerAccess),
                 "opening a peer's IPC handle");
}

static symaddr_status_t gpu_handle_close(symaddr_backend_t *be, void *ptr, size_t bytes)
{
    (void)bytes;
#if defined(SYMADDR_USE_CUDA)
    vmm_rec_t *rec = vmm_find(be, ptr, 1);
    if (rec) {
        vmm_release(rec);
        return SYMADDR_OK;
    }
#else
    (void)be;
#endif
    return check(be, hipIpcCloseMemHandle(ptr), "closing a peer's IPC mapping");
}

static symaddr_status_t gpu_memcpy(symaddr_backend_t *be, void *dst, const void *src, size_t n)
{
    /* A copy from pageable host memory may return before the data reaches the device;
     * peers read it right after, so wait for it. */
    hipError_t e = hipMemcpy(dst, src, n, hipMemcpyDefault);
    if (e == hipSuccess)
        e = hipDeviceSynchronize();
    return check(be, e, "copy");
}

static symaddr_status_t gpu_stream_sync(symaddr_backend_t *be, void *stream)
{
    return check(be, stream ? hipStreamSynchronize((hipStream_t)stream) : hipDeviceSynchronize(),
                 "waiting for the stream");
}

static size_t gpu_mem_total(symaddr_backend_t *be)
{
    size_t free_b = 0, total = 0;
    if (hipMemGetInfo(&free_b, &total) != hipSuccess)
        fail(be, hipGetLastError(), SYMADDR_ERR_BACKEND, "reading the device's memory size");
    return total;
}

/* What peers get, per kind of memory (doc/amd.md, F2): CUDA peer memory is coherent and takes
 * system-scope atomics whatever the allocation; on AMD, coarse-grained memory takes device-scope
 * atomics from a peer but neither polling nor system scope is defined on it. */
#define GPU_COHERENT_CAPS                                                                          \
    (SYMADDR_CAP_LOAD_STORE | SYMADDR_CAP_ATOMICS | SYMADDR_CAP_SYSTEM_ATOMICS |                   \
     SYMADDR_CAP_COHERENT)
static_assert(SYMADDR_MEM_BULK == 0 && SYMADDR_MEM_COHERENT == 1, "caps below are in kind order");
#if defined(SYMADDR_USE_CUDA)
#define GPU_BULK_CAPS GPU_COHERENT_CAPS
#else
#define GPU_BULK_CAPS (SYMADDR_CAP_LOAD_STORE | SYMADDR_CAP_ATOMICS)
#endif

#if defined(SYMADDR_USE_CUDA)
extern "C" const symaddr_backend_ops_t symaddr_backend_cuda_ops = {
#else
extern "C" const symaddr_backend_ops_t symaddr_backend_hip_ops = {
#endif
    .size = sizeof(symaddr_backend_ops_t),
    .name = GPU_NAME,
    .kind = GPU_KIND,
    .caps = {GPU_BULK_CAPS, GPU_COHERENT_CAPS}, /* by symaddr_mem_kind_t, bulk first */
    .device_count = gpu_device_count,
    .init = gpu_init,
    .fini = gpu_fini,
    .mem_alloc = gpu_mem_alloc,
    .mem_free = gpu_mem_free,
    .local_alloc = gpu_local_alloc,
    .local_free = gpu_local_free,
    .mem_range = gpu_mem_range,
    .handle_export = gpu_handle_export,
    .handle_open = gpu_handle_open,
    .handle_close = gpu_handle_close,
    .vmm_alloc = GPU_VMM_ALLOC,
    .vmm_free = GPU_VMM_FREE,
    .device_id = gpu_device_id,
    .can_access_peer = gpu_can_access_peer,
    .memcpy = gpu_memcpy,
    .stream_sync = gpu_stream_sync,
    .mem_total = gpu_mem_total,
    .kernels = &symaddr_kernels_gpu,
    .coll = &symaddr_coll_gpu,
};
