/* SPDX-License-Identifier: MIT */
/* GPU backend (hip or cuda): the same source, HIP names mapped to CUDA by
 * lib/device/hip2cuda.h when built by nvcc. */
#include "device/runtime.h"
#include "backends/backend.h"
extern "C" {
#include "core/status.h" /* validation's process-wide area */
}

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

#if defined(SYMADDR_USE_CUDA)
typedef CUmemGenericAllocationHandle vmm_handle_t;
#else
typedef hipMemGenericAllocationHandle_t vmm_handle_t;
#endif

/* VMM mappings made here, allocated or imported, so that export, close and free find their
 * handles. */
typedef struct vmm_rec {
    void *ptr;
    size_t bytes;
    vmm_handle_t handle;
    int fd;     /* exported descriptor, kept until free */
    int fabric; /* created with a fabric handle type */
    int imported;
    struct vmm_rec *next;
} vmm_rec_t;

typedef struct gpu_state {
    pthread_mutex_t lock;
    vmm_rec_t *vmm;
} gpu_state_t;

static vmm_rec_t *vmm_find(symaddr_backend_t *be, const void *ptr, int unlink)
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

static void vmm_add(symaddr_backend_t *be, vmm_rec_t *r)
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
    SYMADDR_CU(cuGetErrorString, r, &text);
    SYMADDR_CU(cuGetErrorName, r, &name);
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

/* Validation's process-wide area (core/status.h) where kernels reach it: registered once per
 * process, mapped at its host address (unified addressing), for every device. Without it a
 * refused lane of a validated Triton translate would fault instead of landing in the sink. */
static void register_validation_area(void)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static int done;
    pthread_mutex_lock(&lock);
    if (!done && hipHostRegister(&symaddr_validation_area_, sizeof(symaddr_validation_area_),
                                 hipHostRegisterMapped | hipHostRegisterPortable) != hipSuccess)
        (void)hipGetLastError(); /* already registered by the program: as good */
    done = 1;
    pthread_mutex_unlock(&lock);
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
    register_validation_area();
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
        return fail(be, e, e == hipErrorOutOfMemory ? SYMADDR_ERR_NO_MEMORY : SYMADDR_ERR_BACKEND,
                    kind == SYMADDR_MEM_COHERENT ? "fine-grained device allocation"
                                                 : "device allocation");
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

/* ---- VMM: one body over the CUDA driver API or HIP's (ROCm 6 and later) ----------------------
 * The wrappers below are the only per-runtime part. ROCm 5.2's headers declare HIP's VMM calls
 * (beta there), so the hip build compiles this code against them, but wires it up only from
 * ROCm 6 on; before that the vmm provider says it needs a newer ROCm. */
#if defined(SYMADDR_USE_CUDA)
#define GPU_VMM_WIRED 1
typedef CUresult vmm_result_t;
typedef CUmemAllocationProp vmm_prop_t;
#define VMM_OK CUDA_SUCCESS
#define VMM_NO_MEMORY CUDA_ERROR_OUT_OF_MEMORY

static symaddr_status_t vmm_fail(symaddr_backend_t *be, vmm_result_t r, symaddr_status_t st,
                                 const char *what)
{
    return fail_drv(be, r, st, what);
}

static vmm_result_t vmm_reserve(void **ptr_p, size_t bytes, size_t align)
{
    CUdeviceptr p = 0;
    CUresult r = SYMADDR_CU(cuMemAddressReserve, &p, bytes, align, 0, 0);
    *ptr_p = (void *)(uintptr_t)p;
    return r;
}
#define DEVPTR_(p) ((CUdeviceptr)(uintptr_t)(p))
static vmm_result_t vmm_unreserve(void *p, size_t bytes)
{
    return SYMADDR_CU(cuMemAddressFree, DEVPTR_(p), bytes);
}
static vmm_result_t vmm_map_handle(void *p, size_t bytes, vmm_handle_t h)
{
    return SYMADDR_CU(cuMemMap, DEVPTR_(p), bytes, 0, h, 0);
}
static vmm_result_t vmm_unmap(void *p, size_t bytes)
{
    return SYMADDR_CU(cuMemUnmap, DEVPTR_(p), bytes);
}
static vmm_result_t vmm_allow(void *p, size_t bytes, int device)
{
    CUmemAccessDesc d = {};
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = device;
    d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return SYMADDR_CU(cuMemSetAccess, DEVPTR_(p), bytes, &d, 1);
}
static void vmm_prop(vmm_prop_t *prop, int device, int fabric)
{
    memset(prop, 0, sizeof(*prop));
    prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop->location.id = device;
    prop->requestedHandleTypes =
        (CUmemAllocationHandleType)(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR |
                                    (fabric ? CU_MEM_HANDLE_TYPE_FABRIC : 0));
}
static vmm_result_t vmm_granularity_of(size_t *gran, const vmm_prop_t *prop)
{
    return SYMADDR_CU(cuMemGetAllocationGranularity, gran, prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
}
static vmm_result_t vmm_create(vmm_handle_t *h, size_t bytes, const vmm_prop_t *prop)
{
    return SYMADDR_CU(cuMemCreate, h, bytes, prop, 0);
}
static vmm_result_t vmm_release_handle(vmm_handle_t h) { return SYMADDR_CU(cuMemRelease, h); }
static vmm_result_t vmm_export_fd(int *fd, vmm_handle_t h)
{
    return SYMADDR_CU(cuMemExportToShareableHandle, fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                      0);
}
static vmm_result_t vmm_import_fd(vmm_handle_t *h, int fd)
{
    return SYMADDR_CU(cuMemImportFromShareableHandle, h, (void *)(uintptr_t)fd,
                      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
}
/* Fabric handles (multi-node NVLink): CUDA only; HIP's headers have no such handle type. */
static int vmm_fabric_supported(int device)
{
    CUdevice dev;
    int fabric = 0;
    if (SYMADDR_CU(cuDeviceGet, &dev, device) == CUDA_SUCCESS)
        SYMADDR_CU(cuDeviceGetAttribute, &fabric, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED,
                   dev);
    return fabric;
}
static int vmm_export_fabric(void *data, size_t room, vmm_handle_t h)
{
    CUmemFabricHandle fh;
    if (sizeof(fh) > room || SYMADDR_CU(cuMemExportToShareableHandle, &fh, h,
                                        CU_MEM_HANDLE_TYPE_FABRIC, 0) != CUDA_SUCCESS)
        return 0;
    memcpy(data, &fh, sizeof(fh));
    return 1;
}
static vmm_result_t vmm_import_fabric(vmm_handle_t *h, const void *data)
{
    CUmemFabricHandle fh;
    memcpy(&fh, data, sizeof(fh));
    return SYMADDR_CU(cuMemImportFromShareableHandle, h, &fh, CU_MEM_HANDLE_TYPE_FABRIC);
}
#else
#define GPU_VMM_WIRED (HIP_VERSION_MAJOR >= 6)
typedef hipError_t vmm_result_t;
typedef hipMemAllocationProp vmm_prop_t;
#define VMM_OK hipSuccess
#define VMM_NO_MEMORY hipErrorOutOfMemory

static symaddr_status_t vmm_fail(symaddr_backend_t *be, vmm_result_t r, symaddr_status_t st,
                                 const char *what)
{
    return fail(be, r, st, what);
}
static vmm_result_t vmm_reserve(void **ptr_p, size_t bytes, size_t align)
{
    return hipMemAddressReserve(ptr_p, bytes, align, nullptr, 0);
}
static vmm_result_t vmm_unreserve(void *p, size_t bytes) { return hipMemAddressFree(p, bytes); }
static vmm_result_t vmm_map_handle(void *p, size_t bytes, vmm_handle_t h)
{
    return hipMemMap(p, bytes, 0, h, 0);
}
static vmm_result_t vmm_unmap(void *p, size_t bytes) { return hipMemUnmap(p, bytes); }
static vmm_result_t vmm_allow(void *p, size_t bytes, int device)
{
    hipMemAccessDesc d = {};
    d.location.type = hipMemLocationTypeDevice;
    d.location.id = device;
    d.flags = hipMemAccessFlagsProtReadWrite;
    return hipMemSetAccess(p, bytes, &d, 1);
}
static void vmm_prop(vmm_prop_t *prop, int device, int fabric)
{
    (void)fabric;
    memset(prop, 0, sizeof(*prop));
    prop->type = hipMemAllocationTypePinned;
    prop->location.type = hipMemLocationTypeDevice;
    prop->location.id = device;
    prop->requestedHandleType = hipMemHandleTypePosixFileDescriptor;
}
static vmm_result_t vmm_granularity_of(size_t *gran, const vmm_prop_t *prop)
{
    return hipMemGetAllocationGranularity(gran, prop, hipMemAllocationGranularityMinimum);
}
static vmm_result_t vmm_create(vmm_handle_t *h, size_t bytes, const vmm_prop_t *prop)
{
    return hipMemCreate(h, bytes, prop, 0);
}
static vmm_result_t vmm_release_handle(vmm_handle_t h) { return hipMemRelease(h); }
static vmm_result_t vmm_export_fd(int *fd, vmm_handle_t h)
{
    return hipMemExportToShareableHandle(fd, h, hipMemHandleTypePosixFileDescriptor, 0);
}
static vmm_result_t vmm_import_fd(vmm_handle_t *h, int fd)
{
    return hipMemImportFromShareableHandle(h, (void *)(uintptr_t)fd,
                                           hipMemHandleTypePosixFileDescriptor);
}
static int vmm_fabric_supported(int device)
{
    (void)device;
    return 0;
}
static int vmm_export_fabric(void *data, size_t room, vmm_handle_t h)
{
    (void)data, (void)room, (void)h;
    return 0;
}
static vmm_result_t vmm_import_fabric(vmm_handle_t *h, const void *data)
{
    (void)h, (void)data;
    return hipErrorNotSupported;
}
#endif

/* Every visible device may access the range; devices that cannot are left out. */
static vmm_result_t vmm_map(symaddr_backend_t *be, vmm_handle_t h, size_t bytes, size_t align,
                            void **ptr_p)
{
    void *ptr = NULL;
    int ndev = 0;
    vmm_result_t r = vmm_reserve(&ptr, bytes, align);
    if (r != VMM_OK)
        return r;
    if ((r = vmm_map_handle(ptr, bytes, h)) != VMM_OK) {
        (void)vmm_unreserve(ptr, bytes);
        return r;
    }
    (void)hipGetDeviceCount(&ndev);
    r = vmm_allow(ptr, bytes, be->device);
    for (int d = 0; r == VMM_OK && d < ndev; d++)
        if (d != be->device)
            (void)vmm_allow(ptr, bytes, d);
    if (r != VMM_OK) {
        (void)vmm_unmap(ptr, bytes);
        (void)vmm_unreserve(ptr, bytes);
        return r;
    }
    *ptr_p = ptr;
    return VMM_OK;
}

static size_t vmm_granularity(const vmm_prop_t *prop)
{
    size_t gran = 0;
    if (vmm_granularity_of(&gran, prop) != VMM_OK || gran == 0)
        gran = 2u << 20;
    return gran;
}

[[maybe_unused]] static symaddr_status_t gpu_vmm_alloc(symaddr_backend_t *be, size_t bytes,
                                                       void **ptr_p, size_t *mapped_p)
{
    int fabric = vmm_fabric_supported(be->device);
    vmm_prop_t prop;
    vmm_handle_t h;
    vmm_rec_t *rec = (vmm_rec_t *)calloc(1, sizeof(*rec));
    if (!rec)
        return SYMADDR_ERR_NO_MEMORY;
    vmm_prop(&prop, be->device, fabric);
    size_t gran = vmm_granularity(&prop), size = (bytes + gran - 1) / gran * gran;
    vmm_result_t r = vmm_create(&h, size, &prop);
    if (r != VMM_OK && fabric) { /* no fabric manager: descriptors only */
        fabric = 0;
        vmm_prop(&prop, be->device, 0);
        r = vmm_create(&h, size, &prop);
    }
    if (r != VMM_OK) {
        free(rec);
        return vmm_fail(be, r, r == VMM_NO_MEMORY ? SYMADDR_ERR_NO_MEMORY : SYMADDR_ERR_BACKEND,
                        "creating VMM memory");
    }
    if ((r = vmm_map(be, h, size, gran, &rec->ptr)) != VMM_OK) {
        (void)vmm_release_handle(h);
        free(rec);
        return vmm_fail(be, r, SYMADDR_ERR_BACKEND, "mapping VMM memory");
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
    (void)vmm_unmap(rec->ptr, rec->bytes);
    (void)vmm_unreserve(rec->ptr, rec->bytes);
    (void)vmm_release_handle(rec->handle);
    if (rec->fd >= 0)
        close(rec->fd);
    free(rec);
}

[[maybe_unused]] static symaddr_status_t gpu_vmm_free(symaddr_backend_t *be, void *ptr)
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
    vmm_result_t r = VMM_OK;
    memset(h, 0, sizeof(*h));
    if (rec->fd < 0 && (r = vmm_export_fd(&rec->fd, rec->handle)) != VMM_OK) {
        rec->fd = -1;
        vmm_fail(be, r, SYMADDR_ERR_NOT_SHAREABLE,
                 "exporting VMM memory as a descriptor (out of file descriptors? ulimit -n)");
    }
    h->fd = rec->fd;
    h->bytes = rec->bytes;
    h->kind = SYMADDR_HANDLE_VMM;
    if (rec->fabric && vmm_export_fabric(h->data, sizeof(h->data), rec->handle))
        h->kind = SYMADDR_HANDLE_VMM_FABRIC;
    return h->fd >= 0 || h->kind == SYMADDR_HANDLE_VMM_FABRIC ? SYMADDR_OK
                                                              : SYMADDR_ERR_NOT_SHAREABLE;
}

static symaddr_status_t vmm_open(symaddr_backend_t *be, const symaddr_ipc_handle_t *h, void **ptr_p)
{
    vmm_handle_t mh;
    vmm_result_t r = VMM_OK;
    int have = 0;
    if (h->kind == SYMADDR_HANDLE_VMM_FABRIC)
        have = (r = vmm_import_fabric(&mh, h->data)) == VMM_OK;
    if (!have && h->fd >= 0)
        have = (r = vmm_import_fd(&mh, h->fd)) == VMM_OK;
    if (h->fd >= 0)
        close(h->fd);
    if (!have)
        return r != VMM_OK ? vmm_fail(be, r, SYMADDR_ERR_BACKEND, "importing a peer's VMM memory")
                           : SYMADDR_ERR_NOT_SHAREABLE;
    vmm_rec_t *rec = (vmm_rec_t *)calloc(1, sizeof(*rec));
    if (!rec || (r = vmm_map(be, mh, h->bytes, 0, &rec->ptr)) != VMM_OK) {
        free(rec);
        (void)vmm_release_handle(mh);
        return rec ? vmm_fail(be, r, SYMADDR_ERR_BACKEND, "mapping a peer's VMM memory")
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
#if GPU_VMM_WIRED
#define GPU_VMM_ALLOC gpu_vmm_alloc
#define GPU_VMM_FREE gpu_vmm_free
#else
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
    vmm_rec_t *rec = vmm_find(be, base, 0);
    if (rec)
        return vmm_export(be, rec, h);
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
    if (h->kind != SYMADDR_HANDLE_RUNTIME)
        return GPU_VMM_WIRED ? vmm_open(be, h, ptr_p) : SYMADDR_ERR_UNSUPPORTED;
    memcpy(&ipc, h->data, sizeof(ipc));
    return check(be, hipIpcOpenMemHandle(ptr_p, ipc, hipIpcMemLazyEnablePeerAccess),
                 "opening a peer's IPC handle");
}

static symaddr_status_t gpu_handle_close(symaddr_backend_t *be, void *ptr, size_t bytes)
{
    (void)bytes;
    vmm_rec_t *rec = vmm_find(be, ptr, 1);
    if (rec) {
        vmm_release(rec);
        return SYMADDR_OK;
    }
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

static symaddr_status_t gpu_memcpy_async(symaddr_backend_t *be, void *dst, const void *src,
                                         size_t n, void *stream)
{
    return check(be, hipMemcpyAsync(dst, src, n, hipMemcpyDefault, (hipStream_t)stream),
                 "an asynchronous copy");
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

/* Where each algorithm measured faster on H200s (doc/performance.md, "Why the tuning is what
 * it is"); HIP takes the same until AMD GPUs are measured. */
static const symaddr_tuning_t gpu_tuning = {
    .lamport = 2u << 20,
    .lamport_node = 4u << 20,
    .lamport_shared = 1u << 20,
    .ll = 32u << 10,
    .twoshot = 256u << 10,
    .get = 32u << 20,
    .get_shared = SIZE_MAX,
#if defined(SYMADDR_USE_CUDA)
    .copy = 32u << 20,
    .lamport_threads = 128,
    .rma_copy = 64u << 10,
#else
    .copy = SIZE_MAX,
    .lamport_threads = 512,
    .rma_copy = SIZE_MAX,
#endif
};

/* What differs between the runtimes, set apart: a macro's arguments cannot hold #if. */
#if defined(SYMADDR_USE_CUDA)
#define GPU_OPS symaddr_backend_cuda_ops
#define GPU_PDL 1
#define GPU_ALLOCATOR "cudaMalloc"
#define GPU_VMM_MISSING ""
#else
#define GPU_OPS symaddr_backend_hip_ops
#define GPU_PDL 0
#define GPU_ALLOCATOR "hipMalloc"
#define GPU_VMM_MISSING                                                                            \
    " in this build (its hipMemCreate path is wired from ROCm 6 on; rebuild against ROCm 6 or "    \
    "later)"
#endif
/* The row, a field a line (which clang-format would pack into the macro's argument list). */
/* clang-format off */
extern "C" const symaddr_backend_ops_t GPU_OPS = SYMADDR_BACKEND_ROW(&gpu_tuning,
    .name = GPU_NAME,
    .kind = GPU_KIND,
    .host_memory = 0,
    .immediate = 0,
    .pdl = GPU_PDL,
    .allocator = GPU_ALLOCATOR,
    .vmm_missing = GPU_VMM_MISSING,
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
    .memcpy_async = gpu_memcpy_async,
    .stream_sync = gpu_stream_sync,
    .mem_total = gpu_mem_total,
    .kernels = &symaddr_kernels_gpu,
    .coll = &symaddr_coll_gpu);
/* clang-format on */
