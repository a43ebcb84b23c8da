/* SPDX-License-Identifier: MIT */
/* The backend layer on its own, on the backend chosen by SYMADDR_BACKEND:
 * allocate, export, exchange over MPI (descriptors over the socket mesh), open
 * the peers' handles, write rank + 1 into the right neighbour's buffer through
 * the opened mapping with a kernel, check exact values, then close and free
 * with no descriptor or /dev/shm file left behind. */
#include "harness.h"

#include <unistd.h>

#include "backends/backend.h"
#include "bootstrap/bootstrap.h"

#define COUNT 1001 /* odd: exercises the kernels' tails */

typedef struct env {
    const symaddr_backend_ops_t *ops;
    symaddr_backend_t be;
    symaddr_bootstrap_t boot;
} env_t;

static void test_neighbour_write(env_t *e)
{
    const symaddr_backend_ops_t *ops = e->ops;
    symaddr_bootstrap_t *b = &e->boot;
    int n = b->node_size, me = b->node_rank, right = (me + 1) % n, left = (me + n - 1) % n;
    void *buf = NULL;
    symaddr_ipc_handle_t h, *all = calloc((size_t)n, sizeof(*all));
    int *fds = malloc(sizeof(int) * (size_t)n);
    void **peer = calloc((size_t)n, sizeof(void *));
    uint32_t host[COUNT];
    char why[256];

    T_OK(NULL, ops->mem_alloc(&e->be, COUNT * sizeof(uint32_t), SYMADDR_MEM_BULK, &buf));
    T_OK(NULL, ops->kernels->fill_u32(NULL, buf, COUNT, 0));
    T_OK(NULL, ops->handle_export(&e->be, buf, COUNT * sizeof(uint32_t), &h));
    T_OK(NULL, symaddr_bootstrap_node_allgather(b, &h, all, sizeof(h)));
    T_OK(NULL, symaddr_bootstrap_fd_alltoall(b, h.fd, fds, why, sizeof(why)));
    for (int q = 0; q < n; q++) {
        if (q == me)
            continue;
        all[q].fd = fds[q];
        T_OK(NULL, ops->handle_open(&e->be, &all[q], &peer[q]));
        T_CHECK(peer[q] != NULL);
    }
    T_OK(NULL, ops->stream_sync(&e->be, NULL));
    T_OK(NULL, symaddr_boot_barrier(b, &b->node, symaddr_bootstrap_deadline(b, 1)));
    /* The write goes through the mapping of the right neighbour's memory. */
    uint32_t *target = right == me ? buf : peer[right];
    T_OK(NULL, ops->kernels->fill_u32(NULL, target, COUNT, (uint32_t)b->rank + 1));
    T_OK(NULL, ops->stream_sync(&e->be, NULL));
    T_OK(NULL, symaddr_boot_barrier(b, &b->node, symaddr_bootstrap_deadline(b, 1)));
    memset(host, 0xff, sizeof(host));
    T_OK(NULL, ops->memcpy(&e->be, host, buf, sizeof(host)));
    int bad = 0;
    for (int i = 0; i < COUNT; i++)
        bad += host[i] != (uint32_t)b->node_to_rank[left] + 1;
    T_CHECK(bad == 0, "%d of %d values are not rank %d + 1", bad, COUNT, b->node_to_rank[left]);
    /* A second write to the last element only, once every rank has read. */
    T_OK(NULL, symaddr_boot_barrier(b, &b->node, symaddr_bootstrap_deadline(b, 1)));
    T_OK(NULL, ops->kernels->fill_u32(NULL, (uint32_t *)target + COUNT - 1, 1, 7));
    T_OK(NULL, ops->stream_sync(&e->be, NULL));
    T_OK(NULL, symaddr_boot_barrier(b, &b->node, symaddr_bootstrap_deadline(b, 1)));
    T_OK(NULL, ops->memcpy(&e->be, host, buf, sizeof(host)));
    T_CHECK(host[COUNT - 1] == 7 && host[COUNT - 2] == (uint32_t)b->node_to_rank[left] + 1);

    for (int q = 0; q < n; q++)
        if (peer[q])
            T_OK(NULL, ops->handle_close(&e->be, peer[q], all[q].bytes));
    T_OK(NULL, symaddr_boot_barrier(b, &b->node, symaddr_bootstrap_deadline(b, 1)));
    T_OK(NULL, ops->mem_free(&e->be, buf));
    free(peer);
    free(fds);
    free(all);
}

static void test_no_leaks(env_t *e)
{
    int fd0 = t_count_entries("/proc/self/fd"), shm0 = t_count_named("/dev/shm", "symaddr");
    for (int i = 0; i < 20; i++) {
        void *buf;
        symaddr_ipc_handle_t h;
        int *fds = malloc(sizeof(int) * (size_t)e->boot.node_size);
        char why[256];
        T_OK(NULL, e->ops->mem_alloc(&e->be, 4097, SYMADDR_MEM_BULK, &buf));
        T_OK(NULL, e->ops->handle_export(&e->be, buf, 4097, &h));
        T_OK(NULL, symaddr_bootstrap_fd_alltoall(&e->boot, h.fd, fds, why, sizeof(why)));
        for (int q = 0; q < e->boot.node_size; q++) {
            if (fds[q] < 0)
                continue;
            void *p;
            symaddr_ipc_handle_t ph = h;
            ph.fd = fds[q];
            T_OK(NULL, e->ops->handle_open(&e->be, &ph, &p));
            T_OK(NULL, e->ops->handle_close(&e->be, p, ph.bytes));
        }
        T_OK(NULL, symaddr_boot_barrier(&e->boot, &e->boot.node,
                                        symaddr_bootstrap_deadline(&e->boot, 1)));
        T_OK(NULL, e->ops->mem_free(&e->be, buf));
        free(fds);
    }
    T_CHECK(t_count_entries("/proc/self/fd") == fd0, "descriptors: %d before, %d after", fd0,
            t_count_entries("/proc/self/fd"));
    T_CHECK(t_count_named("/dev/shm", "symaddr") <= shm0 || shm0 < 0,
            "/dev/shm grew from %d files of symaddr's", shm0);
}

/* The capabilities each backend reports, per kind of memory (doc/amd.md): everything on the cpu
 * and on NVIDIA GPUs; on AMD, coarse-grained bulk memory has device-scope atomics only, and
 * fine-grained coherent memory has system-scope atomics and coherence too. Coherent memory
 * always has what the collectives' flags need. A map gets its memory's bits (test_maps). */
static void test_capabilities(env_t *e)
{
    const uint64_t all = SYMADDR_CAP_LOAD_STORE | SYMADDR_CAP_ATOMICS | SYMADDR_CAP_SYSTEM_ATOMICS |
                         SYMADDR_CAP_COHERENT;
    const uint64_t want[][SYMADDR_MEM_KINDS_] = {
        [SYMADDR_BACKEND_CPU] = {all, all},
        [SYMADDR_BACKEND_CUDA] = {all, all},
        [SYMADDR_BACKEND_HIP] = {SYMADDR_CAP_LOAD_STORE | SYMADDR_CAP_ATOMICS, all},
    };
    for (int k = 0; k < SYMADDR_MEM_KINDS_; k++)
        T_CHECK(e->ops->caps[k] == want[e->ops->kind][k], "%s, kind %d: caps 0x%llx, want 0x%llx",
                e->ops->name, k, (unsigned long long)e->ops->caps[k],
                (unsigned long long)want[e->ops->kind][k]);
    /* both kinds allocate, and the coherent kind is what signals need */
    for (int k = 0; k < SYMADDR_MEM_KINDS_; k++) {
        void *buf = NULL;
        T_OK(NULL, e->ops->mem_alloc(&e->be, 4096, (symaddr_mem_kind_t)k, &buf));
        if (buf)
            T_OK(NULL, e->ops->mem_free(&e->be, buf));
    }
    T_CHECK((e->ops->caps[SYMADDR_MEM_COHERENT] & all) == all, "%s: coherent memory lacks bits",
            e->ops->name);
}

int main(int argc, char **argv)
{
    symaddr_config_t cfg;
    env_t e;
    char why[256] = "";

    t_init(&argc, &argv);
    symaddr_config_default(&cfg);
    memset(&e, 0, sizeof(e));
    e.ops = symaddr_backend_ops_get(cfg.backend == SYMADDR_BACKEND_AUTO ? SYMADDR_BACKEND_CPU
                                                                        : cfg.backend);
    int ndev = e.ops ? e.ops->device_count() : 0, all_ndev;
    MPI_Allreduce(&ndev, &all_ndev, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all_ndev <= 0) {
        if (t_rank == 0)
            printf("skip   - all: backend '%s' is %s\n0 passed, 0 failed, 1 skipped\n",
                   symaddr_backend_name(cfg.backend),
                   e.ops ? "built but sees no device" : "not built into this library");
        MPI_Finalize();
        return 77;
    }
    if (symaddr_bootstrap_init(&e.boot, MPI_COMM_WORLD, 0, 30000, why, sizeof(why)) ||
        e.ops->init(&e.be, e.boot.node_rank % ndev, why, sizeof(why))) {
        fprintf(stderr, "[rank %d] setup: %s\n", t_rank, why);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    e.be.ops = e.ops;
    if (t_rank == 0)
        printf("# backend %s, %d ranks, %d per node\n", e.ops->name, t_size, e.boot.node_size);
    T_RUN(test_capabilities, &e);
    T_RUN(test_neighbour_write, &e);
    T_RUN(test_no_leaks, &e);
    e.ops->fini(&e.be);
    symaddr_bootstrap_fini(&e.boot);
    return t_finish();
}
