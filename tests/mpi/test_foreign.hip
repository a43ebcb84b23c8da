/* SPDX-License-Identifier: MIT */
/* Memory of other symmetric libraries through the peer-table entry points, one source for
 * every foreign source (-DFOREIGN_SOURCE): MPI shared windows through the generic
 * symaddr_register_ptr_fn (cpu), OpenSHMEM through symaddr_register_openshmem (cpu), NVSHMEM
 * through symaddr_register_nvshmem (cuda). Every case runs one kernel that reads a peer's
 * foreign buffer and writes a peer's buffer from symaddr's own ipc provider, and an allreduce
 * from foreign to own memory, checked exactly against sequential references and MPI. */
#include "runtime.h"

#define SYMADDR_VALIDATE 1
#include "symaddr/device.h"

#include "harness.h"

#define FOREIGN_WINDOW 0
#define FOREIGN_OPENSHMEM 1
#define FOREIGN_NVSHMEM 2
#if FOREIGN_SOURCE == FOREIGN_OPENSHMEM
#include <shmem.h>
#elif FOREIGN_SOURCE == FOREIGN_NVSHMEM
#include <nvshmem.h>
#include <nvshmemx.h>
#include <type_traits>
static_assert(std::is_same<decltype(&nvshmem_ptr), symaddr_peer_ptr_fn_t>::value,
              "nvshmem_ptr does not have the *_ptr(ptr, pe) shape");
/* This build links the shared library as an application does (NVSHMEM wants nvcc's device
 * link), and the library keeps runtime.h's thread-local to itself: SYMADDR_LAUNCH here
 * writes the test's own. */
__thread char symaddr_launch_why[192];
#endif

#define N 1001 /* odd: no 16-byte path covers it whole */
#define VIEW 3 /* odd element offset of the allreduce's views */

static symaddr_context_t *g_ctx;
static const char *g_name;

/* ---- the foreign source ------------------------------------------------------------------- */

#if FOREIGN_SOURCE == FOREIGN_WINDOW
static MPI_Win g_win;
static char *g_win_base;
static MPI_Comm g_node; /* the ranks that share the windows */
static int *g_win_rank; /* world rank -> window rank */

static void *win_ptr(const void *ptr, int pe)
{
    MPI_Aint bytes;
    int disp;
    void *base;
    MPI_Win_shared_query(g_win, g_win_rank[pe], &bytes, &disp, &base);
    return (char *)base + ((const char *)ptr - g_win_base);
}

/* The same, with a pointer parameter that is not const, as rocSHMEM 3's host rocshmem_ptr has:
 * C++ callers pass it to symaddr_register_ptr_fn as they pass a const one. */
static void *win_ptr_mutable(void *ptr, int pe) { return win_ptr(ptr, pe); }
#endif

/* 0 and a reason when this source cannot run here. */
static int source_init(int *argc, char ***argv, char *why, size_t len)
{
    (void)argc;
    (void)argv;
#if FOREIGN_SOURCE == FOREIGN_WINDOW
    int nsize, me;
    g_name = "MPI shared window";
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, t_rank, MPI_INFO_NULL, &g_node);
    MPI_Comm_size(g_node, &nsize);
    MPI_Comm_rank(g_node, &me);
    g_win_rank = (int *)malloc(sizeof(int) * (size_t)t_size);
    MPI_Allgather(&me, 1, MPI_INT, g_win_rank, 1, MPI_INT, MPI_COMM_WORLD);
    if (nsize != t_size) {
        snprintf(why, len, "a shared window needs every rank on one node");
        MPI_Comm_free(&g_node);
        free(g_win_rank);
        return 0;
    }
#elif FOREIGN_SOURCE == FOREIGN_OPENSHMEM
    g_name = "OpenSHMEM";
    shmem_init();
    (void)why;
    (void)len;
#else
    g_name = "NVSHMEM";
    /* NVSHMEM uses the device current at its start: symaddr's choice for this rank. */
    int devs = 0;
    cudaGetDeviceCount(&devs);
    if (devs == 0) {
        snprintf(why, len, "no CUDA device");
        return 0;
    }
    cudaSetDevice(t_rank % devs);
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    if (t_rank == 0)
        nvshmemx_get_uniqueid(&id);
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    nvshmemx_set_attr_uniqueid_args(t_rank, t_size, &id, &attr);
    int st = nvshmemx_init_attr(NVSHMEMX_INIT_WITH_UNIQUEID, &attr), all;
    MPI_Allreduce(&st, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (all != 0) {
        snprintf(why, len, "nvshmemx_init_attr failed (%d ranks on %d GPUs)", t_size, devs);
        return 0;
    }
#endif
    return 1;
}

static void *source_alloc(size_t bytes)
{
#if FOREIGN_SOURCE == FOREIGN_WINDOW
    void *p;
    MPI_Win_allocate_shared((MPI_Aint)bytes, 1, MPI_INFO_NULL, g_node, &p, &g_win);
    g_win_base = (char *)p;
    return p;
#elif FOREIGN_SOURCE == FOREIGN_OPENSHMEM
    return shmem_malloc(bytes);
#else
    return nvshmem_malloc(bytes);
#endif
}

static symaddr_status_t source_register(void *p, size_t bytes, symaddr_map_t **m)
{
#if FOREIGN_SOURCE == FOREIGN_WINDOW
    return symaddr_register_ptr_fn(g_ctx, p, bytes, win_ptr, NULL,
                                   SYMADDR_CAP_LOAD_STORE | SYMADDR_CAP_ATOMICS, m);
#elif FOREIGN_SOURCE == FOREIGN_OPENSHMEM
    return symaddr_register_openshmem(g_ctx, p, bytes, m);
#else
    return symaddr_register_nvshmem(g_ctx, p, bytes, m);
#endif
}

static void source_free(void *p)
{
#if FOREIGN_SOURCE == FOREIGN_WINDOW
    (void)p;
    MPI_Win_free(&g_win);
#elif FOREIGN_SOURCE == FOREIGN_OPENSHMEM
    shmem_free(p);
#else
    nvshmem_free(p);
#endif
}

/* The foreign library goes first at the end: OpenSHMEM's finalize also ends MPI. */
static void source_fini(void)
{
#if FOREIGN_SOURCE == FOREIGN_WINDOW
    MPI_Comm_free(&g_node);
    free(g_win_rank);
#elif FOREIGN_SOURCE == FOREIGN_OPENSHMEM
    shmem_finalize();
#elif FOREIGN_SOURCE == FOREIGN_NVSHMEM
    nvshmem_finalize();
#endif
}

/* ---- the mixing kernel -------------------------------------------------------------------- */

/* Read rank target's foreign copy, write rank target's own-provider copy. */
__global__ void mix_kernel(symaddr_buffer_t foreign, symaddr_buffer_t own, size_t n, int target,
                           int32_t add)
{
    const int32_t *src = (const int32_t *)symaddr_buffer_translate(foreign, target);
    int32_t *dst = (int32_t *)symaddr_buffer_translate(own, target);
    for (size_t i = symaddr_grid_thread(); i < n; i += symaddr_grid_threads())
        dst[i] = src[i] * 2 + add;
}

static int32_t foreign_value(int rank, size_t i) { return (rank + 1) * 100000 + (int32_t)i; }

static void test_mixed_kernel(void *unused)
{
    (void)unused;
    const size_t bytes = N * sizeof(int32_t);
    int32_t *host = (int32_t *)malloc(bytes), *got = (int32_t *)malloc(bytes);
    symaddr_provider_t *ipc;
    symaddr_map_t *fm, *om;
    symaddr_buffer_t fb, ob;
    void *own;
    int32_t *foreign = (int32_t *)source_alloc(bytes);
    for (size_t i = 0; i < N; i++)
        host[i] = foreign_value(t_rank, i);
    T_OK(g_ctx, symaddr_memcpy(g_ctx, foreign, host, bytes));
    T_OK(g_ctx, source_register(foreign, bytes, &fm));
    T_CHECK(fm->provider == SYMADDR_PROVIDER_FOREIGN && !(fm->capabilities & SYMADDR_CAP_OWNED));
    T_CHECK(fm->host_peer_bases[t_rank] == (uintptr_t)foreign, "peer_bases[me] != the buffer");
    T_OK(g_ctx, symaddr_provider_get(g_ctx, SYMADDR_PROVIDER_IPC, &ipc));
    T_OK(g_ctx, symaddr_symmetric_alloc(ipc, bytes, &own, &om));
    T_OK(g_ctx, symaddr_buffer_bind(fm, foreign, &fb));
    T_OK(g_ctx, symaddr_buffer_bind(om, own, &ob));
    int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;
    int reach = fm->host_peer_bases[right] != 0, left_reach = fm->host_peer_bases[left] != 0;
    int all_reach;
    MPI_Allreduce(&reach, &all_reach, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all_reach) {
        T_SKIP("%s reaches no right neighbour from some rank (rank %d: %s)", g_name, t_rank,
               reach ? "reachable" : "unreachable");
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        T_OK(g_ctx, SYMADDR_LAUNCH(mix_kernel, 8, 128, NULL, fb, ob, (size_t)N, right,
                                   (int32_t)(t_rank + 1)));
        T_OK(g_ctx, symaddr_stream_sync(g_ctx, NULL));
        T_OK(g_ctx, symaddr_map_check(g_ctx, fm));
        MPI_Barrier(MPI_COMM_WORLD);
        T_OK(g_ctx, symaddr_memcpy(g_ctx, got, own, bytes));
        long bad = 0;
        for (size_t i = 0; i < N && left_reach; i++)
            bad += got[i] != foreign_value(t_rank, i) * 2 + (left + 1);
        T_CHECK(bad == 0, "%ld of %d elements wrong after the mixed kernel", bad, N);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    T_OK(g_ctx, symaddr_unregister(g_ctx, fm));
    T_STATUS(g_ctx, symaddr_unregister(g_ctx, fm), SYMADDR_ERR_INVALID_MAP);
    /* Forgetting the table left the foreign memory alone. */
    T_OK(g_ctx, symaddr_memcpy(g_ctx, got, foreign, bytes));
    T_CHECK(memcmp(got, host, bytes) == 0, "unregister changed the foreign buffer");
    T_OK(g_ctx, symaddr_symmetric_free(ipc, own));
    MPI_Barrier(MPI_COMM_WORLD);
    source_free(foreign);
    free(host);
    free(got);
}

/* Allreduce from a foreign view at an odd offset into a view of symaddr's own memory. */
static void test_allreduce_foreign_to_own(void *unused)
{
    (void)unused;
    const size_t count = N, bytes = (count + VIEW) * sizeof(int32_t);
    int32_t *host = (int32_t *)malloc(bytes), *got = (int32_t *)malloc(bytes);
    int32_t *ref = (int32_t *)malloc(bytes);
    symaddr_provider_t *ipc;
    symaddr_map_t *fm, *om;
    void *own;
    int32_t *foreign = (int32_t *)source_alloc(bytes);
    for (size_t i = 0; i < count + VIEW; i++)
        host[i] = foreign_value(t_rank, i);
    T_OK(g_ctx, symaddr_memcpy(g_ctx, foreign, host, bytes));
    T_OK(g_ctx, source_register(foreign, bytes, &fm));
    T_OK(g_ctx, symaddr_provider_get(g_ctx, SYMADDR_PROVIDER_IPC, &ipc));
    T_OK(g_ctx, symaddr_symmetric_alloc(ipc, bytes, &own, &om));
    int reach = 1, all;
    for (int r = 0; r < t_size; r++)
        reach &= fm->host_peer_bases[r] != 0;
    MPI_Allreduce(&reach, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        T_SKIP("%s does not reach every rank from every rank", g_name);
    } else {
        MPI_Allreduce(host + VIEW, ref, (int)count, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        T_OK(g_ctx, symaddr_allreduce(g_ctx, foreign + VIEW, (int32_t *)own + VIEW, count,
                                      SYMADDR_INT32, SYMADDR_SUM, NULL));
        T_OK(g_ctx, symaddr_stream_sync(g_ctx, NULL));
        T_OK(g_ctx, symaddr_memcpy(g_ctx, got, (int32_t *)own + VIEW, count * sizeof(int32_t)));
        long bad = 0;
        for (size_t i = 0; i < count; i++)
            bad += got[i] != ref[i];
        T_CHECK(bad == 0, "allreduce from %s memory: %ld of %zu wrong", g_name, bad, count);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    T_OK(g_ctx, symaddr_unregister(g_ctx, fm));
    T_OK(g_ctx, symaddr_symmetric_free(ipc, own));
    MPI_Barrier(MPI_COMM_WORLD);
    source_free(foreign);
    free(host);
    free(got);
    free(ref);
}

/* Memory the foreign library does not own: a named status on every rank, nothing registered. */
#if FOREIGN_SOURCE == FOREIGN_WINDOW
/* A ptr function whose parameter is not const registers the same table as a const one. */
static void test_ptr_fn_not_const(void *unused)
{
    (void)unused;
    void *p = source_alloc(4096);
    symaddr_map_t *a = NULL, *b = NULL;
    symaddr_context_t *other = t_context(MPI_COMM_WORLD, NULL);
    T_OK(g_ctx, symaddr_register_ptr_fn(g_ctx, p, 4096, win_ptr, NULL, SYMADDR_CAP_LOAD_STORE, &a));
    T_OK(other, symaddr_register_ptr_fn(other, p, 4096, win_ptr_mutable, NULL,
                                        SYMADDR_CAP_LOAD_STORE, &b));
    if (a && b)
        T_CHECK(!memcmp(a->host_peer_bases, b->host_peer_bases, sizeof(uint64_t) * t_size),
                "the two ptr functions gave different tables");
    if (b)
        T_CHECK(b->host_peer_bases[t_rank] == (uint64_t)(uintptr_t)p &&
                b->host_peer_bases[(t_rank + 1) % t_size] ==
                    (uint64_t)(uintptr_t)win_ptr(p, (t_rank + 1) % t_size));
    T_OK(g_ctx, symaddr_unregister(g_ctx, a));
    T_OK(other, symaddr_unregister(other, b));
    T_OK(other, symaddr_finalize(&other));
    source_free(p);
}
#endif

static void test_bad_inputs(void *unused)
{
    (void)unused;
    symaddr_map_t *m = NULL;
    void *plain;
    T_OK(g_ctx, symaddr_mem_alloc(g_ctx, 4096, &plain));
#if FOREIGN_SOURCE == FOREIGN_WINDOW
    /* This program never loaded OpenSHMEM or NVSHMEM: the named wrappers say so. */
    T_STATUS(g_ctx, symaddr_register_openshmem(g_ctx, plain, 4096, &m), SYMADDR_ERR_UNSUPPORTED);
    T_CHECK(strstr(symaddr_last_error(g_ctx), "OpenSHMEM") != NULL, "message: %s",
            symaddr_last_error(g_ctx));
    T_STATUS(g_ctx, symaddr_register_nvshmem(g_ctx, plain, 4096, &m), SYMADDR_ERR_UNSUPPORTED);
#else
    T_STATUS(g_ctx, source_register(plain, 4096, &m), SYMADDR_ERR_NOT_SHAREABLE);
    T_CHECK(strstr(symaddr_last_error(g_ctx), "symmetric heap") != NULL, "message: %s",
            symaddr_last_error(g_ctx));
    /* One rank's bad pointer fails the call on every rank. */
    void *good = source_alloc(4096);
    T_STATUS(g_ctx, source_register(t_rank == t_size - 1 ? plain : good, 4096, &m),
             SYMADDR_ERR_NOT_SHAREABLE);
    T_STATUS(g_ctx, source_register(good, 4096, NULL), SYMADDR_ERR_INVALID_ARG);
    MPI_Barrier(MPI_COMM_WORLD);
    source_free(good);
#endif
    T_CHECK(m == NULL, "a failed registration returned a map");
    T_OK(g_ctx, symaddr_mem_free(g_ctx, plain));
}

int main(int argc, char **argv)
{
    char why[256] = "";
    t_init(&argc, &argv);
    int ok = source_init(&argc, &argv, why, sizeof(why));
    if (!ok) {
        if (t_rank == 0)
            printf("skip   - all: %s\n0 passed, 0 failed, 1 skipped\n", why);
        MPI_Finalize();
        return 77;
    }
    g_ctx = t_context(MPI_COMM_WORLD, NULL);
    T_RUN(test_mixed_kernel, NULL);
    T_RUN(test_allreduce_foreign_to_own, NULL);
    T_RUN(test_bad_inputs, NULL);
#if FOREIGN_SOURCE == FOREIGN_WINDOW
    T_RUN(test_ptr_fn_not_const, NULL);
#endif
    symaddr_finalize(&g_ctx);
    source_fini();
    return t_finish();
}
