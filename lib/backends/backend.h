/* SPDX-License-Identifier: MIT */
/* Backend ops table: everything that differs between cpu, cuda and hip. */
#ifndef SYMADDR_LIB_BACKEND_H
#define SYMADDR_LIB_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "symaddr/symaddr.h"
#include "device/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What travels to peers so they can open one allocation. A backend that shares
 * memory through file descriptors sets fd; the core passes it over the node's
 * Unix-domain socket mesh (MPI cannot carry descriptors). */
typedef struct symaddr_ipc_handle {
    uint8_t data[64]; /* opaque runtime handle (cudaIpcMemHandle_t, ...) */
    uint64_t bytes;   /* size of the exported root */
    int32_t fd;       /* -1 when unused */
    uint32_t kind;    /* SYMADDR_HANDLE_*: how the peer opens it */
} symaddr_ipc_handle_t;

enum {
    SYMADDR_HANDLE_RUNTIME = 0, /* runtime IPC handle (or the cpu backend's memfd) */
    SYMADDR_HANDLE_VMM = 1,     /* VMM memory: fd, plus a fabric handle in data when valid */
    SYMADDR_HANDLE_VMM_FABRIC = 2,
};

typedef struct symaddr_backend symaddr_backend_t;

/* What memory is for, which decides how a backend allocates it: bulk data (users' buffers: the
 * fastest memory for bandwidth), or memory that kernels poll while peers store into it
 * (flags, LL and Lamport inboxes: coherent across GPUs without a kernel boundary). On cuda
 * and cpu both are the same memory; on hip, bulk is coarse-grained and coherent is
 * fine-grained (see doc/amd.md). */
typedef enum symaddr_mem_kind {
    SYMADDR_MEM_BULK = 0,
    SYMADDR_MEM_COHERENT = 1,
    SYMADDR_MEM_KINDS_ = 2
} symaddr_mem_kind_t;

/* The auto allreduce's crossovers per backend, measured (doc/performance.md): Lamport (f32, f16,
 * bf16) up to lamport bytes and lamport_node bytes over the node (a call pushes every byte to
 * each node peer; lamport_shared where ranks of the node share a GPU, whose memory then carries
 * every push), else LL up to ll, one-shot below twoshot, two-shot from there, by loads only
 * (two-shot-get) from get (get_shared where node ranks share a GPU), with the all-gather by
 * the copy engine (two-shot-copy) from copy, where two-shot-get is taken; the threads of a
 * Lamport block; and the size from which put and get to another GPU go by the copy engine. */
typedef struct symaddr_tuning {
    size_t lamport, lamport_node, lamport_shared, ll, twoshot, get, get_shared, copy;
    unsigned lamport_threads;
    size_t rma_copy;
} symaddr_tuning_t;

typedef struct symaddr_backend_ops {
    size_t size; /* sizeof(symaddr_backend_ops_t): callers never read past it */
    /* What the core asks of a backend, instead of its kind: */
    const symaddr_tuning_t *tuning; /* required: SYMADDR_BACKEND_ROW's first argument */
    const char *name;
    symaddr_backend_kind_t kind;
    int host_memory;                   /* its memory is the host's, shared by the host's ranks */
    int immediate;                     /* a kernel runs at its launch, on the caller's thread */
    int pdl;                           /* kernels may launch as programmatic dependents */
    const char *allocator;             /* what allocates memory symaddr_import takes */
    const char *vmm_missing;           /* why vmm_alloc is NULL, for the refusal ("" if nothing) */
    uint64_t caps[SYMADDR_MEM_KINDS_]; /* SYMADDR_CAP_* that peers of one node get, per kind */

    /* Number of usable devices; 0 means the backend cannot run here. */
    int (*device_count)(void);
    symaddr_status_t (*init)(symaddr_backend_t *be, int device, char *why, size_t why_len);
    void (*fini)(symaddr_backend_t *be);

    symaddr_status_t (*mem_alloc)(symaddr_backend_t *be, size_t bytes, symaddr_mem_kind_t kind,
                                  void **ptr_p);
    symaddr_status_t (*mem_free)(symaddr_backend_t *be, void *ptr);
    /* Small private device memory (peer tables): not exportable, no descriptor. */
    symaddr_status_t (*local_alloc)(symaddr_backend_t *be, size_t bytes, void **ptr_p);
    void (*local_free)(symaddr_backend_t *be, void *ptr);
    /* Root of the allocation holding ptr (hipMemGetAddressRange). */
    symaddr_status_t (*mem_range)(symaddr_backend_t *be, const void *ptr, void **base_p,
                                  size_t *bytes_p);

    /* handle_export: the fd, if any, stays owned by the allocation. */
    symaddr_status_t (*handle_export)(symaddr_backend_t *be, void *base, size_t bytes,
                                      symaddr_ipc_handle_t *handle_p);
    /* handle_open: consumes handle->fd. */
    symaddr_status_t (*handle_open)(symaddr_backend_t *be, const symaddr_ipc_handle_t *handle,
                                    void **ptr_p);
    symaddr_status_t (*handle_close)(symaddr_backend_t *be, void *ptr, size_t bytes);

    /* VMM memory (NULL when the backend or its runtime has none): physical memory with a
     * shareable handle, mapped into reserved address space; bytes are rounded up to the
     * allocation granularity (*mapped_p). handle_export/open/close recognise it. */
    symaddr_status_t (*vmm_alloc)(symaddr_backend_t *be, size_t bytes, void **ptr_p,
                                  size_t *mapped_p);
    symaddr_status_t (*vmm_free)(symaddr_backend_t *be, void *ptr);

    /* Identity of the device (PCI bus id, "" on cpu) and peer reachability between devices. */
    void (*device_id)(symaddr_backend_t *be, char *buf, size_t len);
    int (*can_access_peer)(symaddr_backend_t *be, int dev, int peer_dev);

    symaddr_status_t (*memcpy)(symaddr_backend_t *be, void *dst, const void *src, size_t bytes);
    /* A copy ordered on stream, by the device's copy engine where it has one (the cpu copies at
     * once); either side may be a node peer's mapping. */
    symaddr_status_t (*memcpy_async)(symaddr_backend_t *be, void *dst, const void *src,
                                     size_t bytes, void *stream);
    symaddr_status_t (*stream_sync)(symaddr_backend_t *be, void *stream);

    /* Memory a rank may at most take: the device's (GPUs) or the machine's (cpu), in bytes. */
    size_t (*mem_total)(symaddr_backend_t *be);

    /* Kernels, built from lib/device for this backend. */
    const symaddr_kernels_t *kernels;
    const symaddr_coll_ops_t *coll;
} symaddr_backend_ops_t;

/* A backend's row: its tuning is the first argument, so that a row without one does not
 * compile (the auto allreduce would read zeros: two-shot-copy at every size, and a forced
 * Lamport that never ends); the other fields follow, designated. */
#define SYMADDR_BACKEND_ROW(tuning_, ...)                                                          \
    {                                                                                              \
        .size = sizeof(symaddr_backend_ops_t), .tuning = (tuning_), __VA_ARGS__                    \
    }

struct symaddr_backend {
    const symaddr_backend_ops_t *ops;
    int device;
    void *priv;
    char why[256]; /* the runtime's own text for the last refusal of an op ("" if none) */
    /* Rate of the counter symaddr_clock_ns reads on this device, in kHz, where the device says
     * (AMD: hipDeviceAttributeWallClockRate); 0 where the clock is nanoseconds already or the
     * runtime cannot say. Device deadlines are scaled by it (symaddr_backend_deadline_ns). */
    unsigned wall_clock_khz;
};

/* A deadline of ns nanoseconds in the units symaddr_clock_ns counts on the backend's device:
 * device.h reads AMD's wall clock as 100 MHz (SYMADDR_WALL_CLOCK_KHZ); a device whose clock
 * runs at another rate gets its deadlines scaled, so that they still fire after ns. */
static inline uint64_t symaddr_backend_deadline_ns(const symaddr_backend_t *be, uint64_t ns)
{
    if (!be->wall_clock_khz || be->wall_clock_khz == 100000u)
        return ns;
    return (uint64_t)((double)ns * be->wall_clock_khz / 100000.0);
}

/* Every backend's ops table; a backend this build lacks is not linked in. */
extern const symaddr_backend_ops_t symaddr_backend_cpu_ops;
extern const symaddr_backend_ops_t symaddr_backend_cuda_ops;
extern const symaddr_backend_ops_t symaddr_backend_hip_ops;

/* The runtime's words for this thread's last refused kernel launch. */
extern __thread char symaddr_launch_why[192];

/* The ops table for kind, or NULL when it was not built. */
const symaddr_backend_ops_t *symaddr_backend_ops_get(symaddr_backend_kind_t kind);
/* The GPU backend built into this library, or NULL. */
const symaddr_backend_ops_t *symaddr_backend_gpu(void);

#ifdef __cplusplus
}
#endif

#endif
