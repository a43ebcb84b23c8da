/* SPDX-License-Identifier: MIT */
/* cpu backend: "device memory" is a memfd shared between the ranks of a node;
 * its "IPC handle" is the descriptor itself, passed over Unix-domain sockets. */
#include "backends/backend.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct cpu_alloc {
    void *base;
    size_t bytes;
    int fd;
    struct cpu_alloc *next;
} cpu_alloc_t;

typedef struct cpu_state {
    pthread_mutex_t lock;
    cpu_alloc_t *allocs;
} cpu_state_t;

static int cpu_device_count(void) { return 1; }

static symaddr_status_t cpu_init(symaddr_backend_t *be, int device, char *why, size_t why_len)
{
    cpu_state_t *s = calloc(1, sizeof(*s));
    (void)device;
    if (!s) {
        snprintf(why, why_len, "out of host memory");
        return SYMADDR_ERR_NO_MEMORY;
    }
    pthread_mutex_init(&s->lock, NULL);
    be->priv = s;
    be->device = 0;
    return SYMADDR_OK;
}

static void cpu_fini(symaddr_backend_t *be)
{
    cpu_state_t *s = be->priv;
    if (!s)
        return;
    while (s->allocs) {
        cpu_alloc_t *a = s->allocs;
        s->allocs = a->next;
        munmap(a->base, a->bytes);
        close(a->fd);
        free(a);
    }
    pthread_mutex_destroy(&s->lock);
    free(s);
    be->priv = NULL;
}

static size_t page_round(size_t bytes)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return (bytes + pg - 1) / pg * pg;
}

static symaddr_status_t fail_errno(symaddr_backend_t *be, const char *what)
{
    int e = errno;
    snprintf(be->why, sizeof(be->why), "%s: %s%s", what, strerror(e),
             e == EMFILE || e == ENFILE ? " (raise the descriptor limit: ulimit -n)" : "");
    return e == ENOMEM || e == EMFILE || e == ENFILE || e == ENOSPC ? SYMADDR_ERR_NO_MEMORY
                                                                    : SYMADDR_ERR_BACKEND;
}

/* Shared memory is coherent for every kind: one allocation path. */
static symaddr_status_t cpu_mem_alloc(symaddr_backend_t *be, size_t bytes, symaddr_mem_kind_t kind,
                                      void **ptr_p)
{
    (void)kind;
    cpu_state_t *s = be->priv;
    size_t len = page_round(bytes);
    symaddr_status_t st;
    cpu_alloc_t *a = malloc(sizeof(*a));
    if (!a || len < bytes) {
        free(a);
        errno = ENOMEM;
        return fail_errno(be, "host allocation");
    }
    /* Only the owner reads or writes it through /proc (mode 0600); peers cannot shrink or
     * grow it under each other's mappings (seals). */
    a->fd = memfd_create("symaddr", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (a->fd < 0) {
        st = fail_errno(be, "memfd_create");
        goto err_free;
    }
    if (fchmod(a->fd, 0600) != 0 || ftruncate(a->fd, (off_t)len) != 0 ||
        fcntl(a->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        st = fail_errno(be, "sizing shared memory");
        goto err_close;
    }
    a->base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
    if (a->base == MAP_FAILED) {
        st = fail_errno(be, "mapping shared memory");
        goto err_close;
    }
    a->bytes = len;
    pthread_mutex_lock(&s->lock);
    a->next = s->allocs;
    s->allocs = a;
    pthread_mutex_unlock(&s->lock);
    *ptr_p = a->base;
    return SYMADDR_OK;
err_close:
    close(a->fd);
err_free:
    free(a);
    return st;
}

static symaddr_status_t cpu_mem_free(symaddr_backend_t *be, void *ptr)
{
    cpu_state_t *s = be->priv;
    pthread_mutex_lock(&s->lock);
    for (cpu_alloc_t **pa = &s->allocs; *pa; pa = &(*pa)->next) {
        cpu_alloc_t *a = *pa;
        if (a->base == ptr) {
            *pa = a->next;
            pthread_mutex_unlock(&s->lock);
            munmap(a->base, a->bytes);
            close(a->fd);
            free(a);
            return SYMADDR_OK;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return SYMADDR_ERR_NOT_FOUND;
}

static symaddr_status_t cpu_local_alloc(symaddr_backend_t *be, size_t bytes, void **ptr_p)
{
    (void)be;
    *ptr_p = calloc(1, bytes);
    return *ptr_p ? SYMADDR_OK : SYMADDR_ERR_NO_MEMORY;
}

static void cpu_local_free(symaddr_backend_t *be, void *ptr)
{
    (void)be;
    free(ptr);
}

static cpu_alloc_t *find_locked(cpu_state_t *s, const void *ptr)
{
    for (cpu_alloc_t *a = s->allocs; a; a = a->next)
        if ((const char *)ptr >= (const char *)a->base &&
            (const char *)ptr < (const char *)a->base + a->bytes)
            return a;
    return NULL;
}

static symaddr_status_t cpu_mem_range(symaddr_backend_t *be, const void *ptr, void **base_p,
                                      size_t *bytes_p)
{
    cpu_state_t *s = be->priv;
    pthread_mutex_lock(&s->lock);
    cpu_alloc_t *a = find_locked(s, ptr);
    if (a) {
        *base_p = a->base;
        *bytes_p = a->bytes;
    }
    pthread_mutex_unlock(&s->lock);
    return a ? SYMADDR_OK : SYMADDR_ERR_NOT_SHAREABLE;
}

static symaddr_status_t cpu_handle_export(symaddr_backend_t *be, void *base, size_t bytes,
                                          symaddr_ipc_handle_t *h)
{
    cpu_state_t *s = be->priv;
    pthread_mutex_lock(&s->lock);
    cpu_alloc_t *a = find_locked(s, base);
    pthread_mutex_unlock(&s->lock);
    if (!a || a->base != base || a->bytes < bytes)
        return SYMADDR_ERR_NOT_SHAREABLE;
    memset(h, 0, sizeof(*h));
    h->bytes = a->bytes;
    h->fd = a->fd;
    return SYMADDR_OK;
}

static symaddr_status_t cpu_handle_open(symaddr_backend_t *be, const symaddr_ipc_handle_t *h,
                                        void **ptr_p)
{
    if (h->fd < 0)
        return SYMADDR_ERR_BACKEND;
    void *p = mmap(NULL, h->bytes, PROT_READ | PROT_WRITE, MAP_SHARED, h->fd, 0);
    symaddr_status_t st = p == MAP_FAILED ? fail_errno(be, "mapping a peer's memory") : SYMADDR_OK;
    close(h->fd);
    if (st != SYMADDR_OK)
        return st;
    *ptr_p = p;
    return SYMADDR_OK;
}

static symaddr_status_t cpu_handle_close(symaddr_backend_t *be, void *ptr, size_t bytes)
{
    return munmap(ptr, bytes) == 0 ? SYMADDR_OK : fail_errno(be, "unmapping a peer's memory");
}

static size_t cpu_mem_total(symaddr_backend_t *be)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    (void)be;
    return pages > 0 && size > 0 ? (size_t)pages * (size_t)size : 0;
}

static void cpu_device_id(symaddr_backend_t *be, char *buf, size_t len)
{
    (void)be;
    if (len)
        buf[0] = 0;
}

static int cpu_can_access_peer(symaddr_backend_t *be, int dev, int peer_dev)
{
    (void)be;
    (void)dev;
    (void)peer_dev;
    return 1; /* shared memory: every rank of a node maps it */
}

static symaddr_status_t cpu_memcpy(symaddr_backend_t *be, void *dst, const void *src, size_t n)
{
    (void)be;
    memmove(dst, src, n);
    return SYMADDR_OK;
}

static symaddr_status_t cpu_memcpy_async(symaddr_backend_t *be, void *dst, const void *src,
                                         size_t n, void *stream)
{
    (void)stream;
    return cpu_memcpy(be, dst, src, n);
}

static symaddr_status_t cpu_stream_sync(symaddr_backend_t *be, void *stream)
{
    (void)be;
    (void)stream;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return SYMADDR_OK;
}

/* 2 ranks of one host: Lamport beats LL at every size, one-shot from 512 B; two-shot-get takes
 * 1.4-2.2x two-shot's time from 16 KiB to 64 MiB */
static const symaddr_tuning_t cpu_tuning = {.lamport = 128,
                                            .lamport_node = 1u << 20,
                                            .lamport_shared = 1u << 20,
                                            .ll = 128,
                                            .twoshot = 2u << 10,
                                            .get = SIZE_MAX,
                                            .get_shared = SIZE_MAX,
                                            .copy = SIZE_MAX,
                                            .lamport_threads = 1,
                                            .rma_copy = SIZE_MAX};

/* The row, a field a line (which clang-format would pack into the macro's argument list). */
/* clang-format off */
const symaddr_backend_ops_t symaddr_backend_cpu_ops = SYMADDR_BACKEND_ROW(&cpu_tuning,
    .name = "cpu",
    .kind = SYMADDR_BACKEND_CPU,
    .host_memory = 1,
    .immediate = 1,
    .pdl = 0,
    .allocator = "symaddr_mem_alloc",
    .vmm_missing = "",
    .caps = {[SYMADDR_MEM_BULK] = SYMADDR_CAP_LOAD_STORE | SYMADDR_CAP_ATOMICS |
                                  SYMADDR_CAP_SYSTEM_ATOMICS | SYMADDR_CAP_COHERENT,
             [SYMADDR_MEM_COHERENT] = SYMADDR_CAP_LOAD_STORE | SYMADDR_CAP_ATOMICS |
                                      SYMADDR_CAP_SYSTEM_ATOMICS | SYMADDR_CAP_COHERENT},
    .device_count = cpu_device_count,
    .init = cpu_init,
    .fini = cpu_fini,
    .mem_alloc = cpu_mem_alloc,
    .mem_free = cpu_mem_free,
    .local_alloc = cpu_local_alloc,
    .local_free = cpu_local_free,
    .mem_range = cpu_mem_range,
    .handle_export = cpu_handle_export,
    .handle_open = cpu_handle_open,
    .handle_close = cpu_handle_close,
    .vmm_alloc = NULL,
    .vmm_free = NULL,
    .device_id = cpu_device_id,
    .can_access_peer = cpu_can_access_peer,
    .memcpy = cpu_memcpy,
    .memcpy_async = cpu_memcpy_async,
    .stream_sync = cpu_stream_sync,
    .mem_total = cpu_mem_total,
    .kernels = &symaddr_kernels_cpu,
    .coll = &symaddr_coll_cpu);
/* clang-format on */
