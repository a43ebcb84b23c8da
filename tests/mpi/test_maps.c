/* SPDX-License-Identifier: MIT */
/* Address maps and providers through the public API: the invariant, reading
 * peers' exact values through peer_bases, views, the shared heap table,
 * imports with dedupe, MPI shared windows as a foreign table, a simulated
 * 2-node split, sub-communicators, and every bad input on every rank. */
#include "harness.h"
#include "symaddr/device.h"

#include <stdint.h>
#include <unistd.h>

#include "maps/maps.h" /* the backend's capabilities per kind of memory */

#define COUNT 1001 /* odd number of elements */

static void check_invariant(const symaddr_map_t *m, int rank, int size)
{
    T_CHECK(m->local_rank == rank && m->world_size == size);
    T_CHECK(m->host_peer_bases[rank] == m->allocation_base, "peer_bases[me] != allocation_base");
    T_CHECK(m->range_base >= m->allocation_base &&
            m->range_base + m->range_bytes <= m->allocation_base + m->allocation_bytes);
    T_CHECK(m->peer_bases != NULL && m->error_flag != NULL);
}

/* Fill [ptr, +COUNT) with value + index, through the backend. */
static void fill(symaddr_context_t *ctx, void *ptr, uint32_t value)
{
    uint32_t host[COUNT];
    for (int i = 0; i < COUNT; i++)
        host[i] = value * 100000u + (uint32_t)i;
    T_OK(ctx, symaddr_memcpy(ctx, ptr, host, sizeof(host)));
}

/* Read every reachable peer's copy through the map and check the exact values. */
static void check_peers(symaddr_context_t *ctx, const symaddr_map_t *m, const void *ptr,
                        size_t skip)
{
    uint32_t host[COUNT];
    int size = symaddr_size(ctx);
    for (int t = 0; t < size; t++) {
        void *remote;
        if (m->host_peer_bases[t] == 0)
            continue;
        T_OK(ctx, symaddr_translate_host(m, ptr, t, &remote));
        memset(host, 0, sizeof(host));
        T_OK(ctx, symaddr_memcpy(ctx, host, remote, (COUNT - skip) * sizeof(uint32_t)));
        int bad = 0;
        for (size_t i = 0; i < COUNT - skip; i++)
            bad += host[i] != (uint32_t)(t + 1) * 100000u + (uint32_t)(i + skip);
        T_CHECK(bad == 0, "%d wrong values read from rank %d", bad, t);
    }
}

static void test_ipc_and_heap(symaddr_context_t *ctx)
{
    int rank = symaddr_rank(ctx), size = symaddr_size(ctx);
    for (int k = 0; k < 2; k++) {
        symaddr_provider_kind_t kind = k ? SYMADDR_PROVIDER_IPC : SYMADDR_PROVIDER_HEAP;
        symaddr_provider_t *prov;
        symaddr_map_t *m, *found;
        void *ptr;
        T_OK(ctx, symaddr_provider_get(ctx, kind, &prov));
        T_OK(ctx, symaddr_symmetric_alloc(prov, COUNT * sizeof(uint32_t), &ptr, &m));
        check_invariant(m, rank, size);
        T_CHECK(m->provider == kind && m->range_base == (uintptr_t)ptr);
        fill(ctx, ptr, (uint32_t)rank + 1);
        MPI_Barrier(MPI_COMM_WORLD);
        check_peers(ctx, m, ptr, 0);
        /* A view at an odd offset finds the same map and translates with it. */
        T_OK(ctx, symaddr_lookup(ctx, (char *)ptr + 4 * 333 + 3, &found));
        T_CHECK(found == m);
        check_peers(ctx, m, (uint32_t *)ptr + 333, 333);
        MPI_Barrier(MPI_COMM_WORLD);
        T_OK(ctx, symaddr_symmetric_free(prov, ptr));
    }
}

/* A map's capabilities are its memory's: heap and ipc memory is bulk, or coherent for ipc when
 * the config asks for fine-grained memory (hip_finegrained), and symaddr owns both. */
static void test_map_capabilities(void *unused)
{
    (void)unused;
    for (int fine = 0; fine < 2; fine++) {
        symaddr_config_t cfg;
        symaddr_config_default(&cfg);
        cfg.hip_finegrained = fine;
        symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, &cfg);
        const uint64_t *caps = ctx->be.ops->caps;
        for (int k = 0; k < 2; k++) {
            symaddr_provider_kind_t kind = k ? SYMADDR_PROVIDER_IPC : SYMADDR_PROVIDER_HEAP;
            uint64_t want = (k && fine ? caps[SYMADDR_MEM_COHERENT] : caps[SYMADDR_MEM_BULK]) |
                            SYMADDR_CAP_OWNED;
            symaddr_provider_t *prov;
            symaddr_map_t *m;
            void *ptr;
            T_OK(ctx, symaddr_provider_get(ctx, kind, &prov));
            T_OK(ctx, symaddr_symmetric_alloc(prov, 4096, &ptr, &m));
            T_CHECK(m->capabilities == want, "%s, hip_finegrained %d: 0x%llx, want 0x%llx",
                    k ? "ipc" : "heap", fine, (unsigned long long)m->capabilities,
                    (unsigned long long)want);
            symaddr_buffer_t buf;
            T_OK(ctx, symaddr_buffer_bind(m, ptr, &buf));
            T_CHECK(buf.caps == m->capabilities, "the bound buffer carries the map's bits");
            T_OK(ctx, symaddr_symmetric_free(prov, ptr));
        }
        T_OK(ctx, symaddr_finalize(&ctx));
    }
}

/* Each heap allocation has a table of its own, bounded to it (validation refuses an overrun
 * into the next allocation), whose entries translate exactly as the context-wide heap_bases
 * does; the map's allocation is the allocation itself, not the heap. */
static void test_heap_tables(symaddr_context_t *ctx)
{
    symaddr_provider_t *heap;
    symaddr_map_t *m1, *m2;
    void *p1, *p2;
    int size = symaddr_size(ctx);
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_HEAP, &heap));
    T_OK(ctx, symaddr_symmetric_alloc(heap, 12345, &p1, &m1));
    T_OK(ctx, symaddr_symmetric_alloc(heap, 77, &p2, &m2));
    const uint64_t *hb = symaddr_heap_bases_get(ctx);
    T_CHECK(m1 != m2 && m1->peer_bases != m2->peer_bases && m1->peer_bases != hb &&
                m2->peer_bases != hb,
            "heap allocations share a table");
    T_CHECK((char *)p2 >= (char *)p1 + 12345, "heap ranges overlap");
    T_CHECK(m1->allocation_base == (uint64_t)(uintptr_t)p1 && m1->allocation_bytes == 12345 &&
                m2->allocation_base == (uint64_t)(uintptr_t)p2 && m2->allocation_bytes == 77,
            "a heap allocation's map: 0x%llx (%llu bytes)", (unsigned long long)m1->allocation_base,
            (unsigned long long)m1->allocation_bytes);
    uint64_t *heap_host = malloc(sizeof(uint64_t) * (size_t)size);
    T_OK(ctx, symaddr_memcpy(ctx, heap_host, hb, sizeof(uint64_t) * (size_t)size));
    int me = symaddr_rank(ctx);
    for (int r = 0; r < size; r++) {
        void *via_map = NULL, *via_heap;
        const char *q = (const char *)p2 + 13;
        symaddr_status_t st = symaddr_translate_host(m2, q, r, &via_map);
        if (!heap_host[r]) { /* a rank of another node: unreachable through either table */
            T_CHECK(st == SYMADDR_ERR_UNREACHABLE && m2->host_peer_bases[r] == 0,
                    "rank %d, unreachable by heap_bases: the map says %s", r, symaddr_strerror(st));
            continue;
        }
        via_heap = (void *)(uintptr_t)(heap_host[r] + ((uint64_t)(uintptr_t)q - heap_host[me]));
        T_CHECK(st == SYMADDR_OK && via_map == via_heap,
                "rank %d: the map translates to %p (%s), heap_bases to %p", r, via_map,
                symaddr_strerror(st), via_heap);
        T_CHECK(m1->host_peer_bases[r] ==
                    (heap_host[r] ? heap_host[r] + ((uint64_t)(uintptr_t)p1 - heap_host[me]) : 0),
                "rank %d: entry of the map", r);
    }
    free(heap_host);
    T_OK(ctx, symaddr_symmetric_free(heap, p1));
    T_OK(ctx, symaddr_symmetric_free(heap, p2));
}

static void test_import_views(symaddr_context_t *ctx)
{
    int rank = symaddr_rank(ctx), size = symaddr_size(ctx);
    const size_t root_bytes = 3 * COUNT * sizeof(uint32_t) + 64;
    char *root;
    symaddr_map_t *a, *b, *found;
    T_OK(ctx, symaddr_mem_alloc(ctx, root_bytes, (void **)&root));
    /* Ranks use different offsets into their own allocation: translation must
     * land on the peer's view, not on the same offset. */
    char *va = root + 4 + 4 * (size_t)(rank % 3), *vb = root + 2 * COUNT * sizeof(uint32_t);
    fill(ctx, va, (uint32_t)rank + 1);
    fill(ctx, vb, (uint32_t)rank + 1);
    T_OK(ctx, symaddr_import(ctx, va, COUNT * sizeof(uint32_t), &a));
    T_OK(ctx, symaddr_import(ctx, vb, COUNT * sizeof(uint32_t), &b));
    check_invariant(a, rank, size);
    check_invariant(b, rank, size);
    T_CHECK(a->allocation_base == (uintptr_t)root && a->range_base == (uintptr_t)va &&
            a->range_bytes == COUNT * sizeof(uint32_t));
    MPI_Barrier(MPI_COMM_WORLD);
    check_peers(ctx, a, va, 0);
    check_peers(ctx, b, vb, 0);
    check_peers(ctx, a, (uint32_t *)va + 11, 11);
    /* Both views sit on one mapping of each peer's root. */
    for (int t = 0; t < size; t++) {
        if (t == rank || a->host_peer_bases[t] == 0)
            continue;
        void *ra, *rb;
        T_OK(ctx, symaddr_translate_host(a, va, t, &ra));
        T_OK(ctx, symaddr_translate_host(b, vb, t, &rb));
        uint64_t root_a = (uintptr_t)ra - (4 + 4 * (uint64_t)(t % 3));
        uint64_t root_b = (uintptr_t)rb - 2 * COUNT * sizeof(uint32_t);
        T_CHECK(root_a == root_b, "rank %d's root is mapped twice", t);
    }
    /* One rule for the host's translation and binding: a map serves its registered range;
     * inside the allocation but outside the view, both refuse. */
    void *outside = vb - 4, *remote = NULL;
    symaddr_buffer_t buf;
    T_STATUS(ctx, symaddr_translate_host(a, outside, (rank + 1) % size, &remote),
             SYMADDR_ERR_OUT_OF_BOUNDS);
    T_STATUS(ctx, symaddr_buffer_bind(a, outside, &buf), SYMADDR_ERR_OUT_OF_BOUNDS);
    T_CHECK(remote == NULL, "a refused translation wrote its out-parameter");
    T_OK(ctx, symaddr_lookup(ctx, va + 5, &found));
    T_CHECK(found == a);
    T_STATUS(ctx, symaddr_import(ctx, va + 8, 16, &found), SYMADDR_ERR_ALREADY_REGISTERED);
    T_STATUS(ctx, symaddr_mem_free(ctx, root), SYMADDR_ERR_ALREADY_REGISTERED);
    T_OK(ctx, symaddr_unregister(ctx, a));
    T_OK(ctx, symaddr_unregister(ctx, b));
    T_STATUS(ctx, symaddr_unregister(ctx, a), SYMADDR_ERR_INVALID_MAP);
    T_STATUS(ctx, symaddr_lookup(ctx, va, &found), SYMADDR_ERR_NOT_FOUND);
    T_OK(ctx, symaddr_mem_free(ctx, root));
    /* Plain host memory is not exportable. */
    static uint32_t plain[64];
    T_STATUS(ctx, symaddr_import(ctx, plain, sizeof(plain), &found), SYMADDR_ERR_NOT_SHAREABLE);
}

/* MPI-3 shared windows are a real foreign symmetric library: MPI owns the memory. */
static void test_shared_window(symaddr_context_t *ctx)
{
    int rank = symaddr_rank(ctx), size = symaddr_size(ctx);
    MPI_Comm node;
    MPI_Win win;
    uint32_t *mine;
    uint64_t *table = calloc((size_t)size, sizeof(uint64_t));
    int node_size, *world_of = NULL;
    symaddr_map_t *m;

    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_size);
    MPI_Win_allocate_shared(COUNT * sizeof(uint32_t), sizeof(uint32_t), MPI_INFO_NULL, node, &mine,
                            &win);
    for (int i = 0; i < COUNT; i++)
        mine[i] = (uint32_t)(rank + 1) * 100000u + (uint32_t)i;
    world_of = malloc(sizeof(int) * (size_t)node_size);
    MPI_Allgather(&rank, 1, MPI_INT, world_of, 1, MPI_INT, node);
    for (int q = 0; q < node_size; q++) {
        MPI_Aint bytes;
        int disp;
        void *base;
        MPI_Win_shared_query(win, q, &bytes, &disp, &base);
        table[world_of[q]] = (uintptr_t)base;
    }
    MPI_Win_fence(0, win);
    /* A capability bit symaddr does not define, on every rank and then on the last alone:
     * refused on every rank, naming the bits (kept in the map before), nothing registered. */
    for (int who = 0; who < 2; who++) {
        uint64_t caps = SYMADDR_CAP_LOAD_STORE;
        if (who == 0 || rank == size - 1)
            caps |= 1ull << 40;
        m = NULL;
        T_STATUS(ctx,
                 symaddr_register_peer_table(ctx, mine, COUNT * sizeof(uint32_t), table, caps, &m),
                 SYMADDR_ERR_INVALID_ARG);
        T_CHECK(m == NULL && strstr(symaddr_last_error(ctx), "(0x10000000000)"), "%s",
                symaddr_last_error(ctx));
    }
    T_OK(ctx, symaddr_register_peer_table(ctx, mine, COUNT * sizeof(uint32_t), table,
                                          SYMADDR_CAP_LOAD_STORE, &m));
    check_invariant(m, rank, size);
    T_CHECK(m->provider == SYMADDR_PROVIDER_FOREIGN && !(m->capabilities & SYMADDR_CAP_OWNED));
    check_peers(ctx, m, mine, 0);
    T_OK(ctx, symaddr_unregister(ctx, m));
    /* Unregistering forgot the table but left MPI's memory alone. */
    T_CHECK(mine[COUNT - 1] == (uint32_t)(rank + 1) * 100000u + COUNT - 1);
    MPI_Win_fence(0, win);
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
    free(world_of);
    free(table);
}

/* The generic *_ptr(ptr, pe) adapter over the same kind of window. */
static MPI_Win g_win;
static int *g_node_of; /* world rank -> window rank, -1 off the window */
static char *g_base;

static void *win_ptr(const void *ptr, int pe)
{
    MPI_Aint bytes;
    int disp;
    void *base;
    if (g_node_of[pe] < 0)
        return NULL;
    MPI_Win_shared_query(g_win, g_node_of[pe], &bytes, &disp, &base);
    return (char *)base + ((const char *)ptr - g_base);
}

/* Odd PEs unreachable: what a *_ptr function says for peers it cannot map. */
static void *even_ptr(const void *ptr, int pe) { return pe % 2 ? NULL : win_ptr(ptr, pe); }

static void test_ptr_fn_adapter(symaddr_context_t *ctx)
{
    int rank = symaddr_rank(ctx), size = symaddr_size(ctx), wsize;
    MPI_Comm node;
    symaddr_map_t *m;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &wsize);
    if (wsize != size) {
        T_SKIP("needs all ranks on one node for the shared window");
        MPI_Comm_free(&node);
        return;
    }
    uint32_t *mine;
    MPI_Win_allocate_shared(COUNT * sizeof(uint32_t), sizeof(uint32_t), MPI_INFO_NULL, node, &mine,
                            &g_win);
    g_base = (char *)mine;
    g_node_of = malloc(sizeof(int) * (size_t)size);
    int me_in_win;
    MPI_Comm_rank(node, &me_in_win);
    MPI_Allgather(&me_in_win, 1, MPI_INT, g_node_of, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < COUNT; i++)
        mine[i] = (uint32_t)(rank + 1) * 100000u + (uint32_t)i;
    MPI_Win_fence(0, g_win);
    T_OK(ctx, symaddr_register_ptr_fn(ctx, mine, COUNT * sizeof(uint32_t), win_ptr, NULL,
                                      SYMADDR_CAP_LOAD_STORE, &m));
    check_invariant(m, rank, size);
    check_peers(ctx, m, mine, 0);
    check_peers(ctx, m, mine + 9, 9);
    T_OK(ctx, symaddr_unregister(ctx, m));
    T_OK(ctx, symaddr_register_ptr_fn(ctx, mine, COUNT * sizeof(uint32_t), even_ptr, NULL,
                                      SYMADDR_CAP_LOAD_STORE, &m));
    for (int t = 0; t < size; t++) {
        void *remote;
        if (t % 2 && t != rank) {
            T_CHECK(m->host_peer_bases[t] == 0, "odd PE %d should be unreachable", t);
            T_STATUS(ctx, symaddr_translate_host(m, mine, t, &remote), SYMADDR_ERR_UNREACHABLE);
        }
    }
    check_peers(ctx, m, mine, 0); /* the reachable ones still read exactly */
    T_OK(ctx, symaddr_unregister(ctx, m));
    T_STATUS(ctx, symaddr_register_ptr_fn(ctx, mine, 64, NULL, NULL, 0, &m),
             SYMADDR_ERR_INVALID_ARG);
    MPI_Win_fence(0, g_win);
    MPI_Win_free(&g_win);
    MPI_Comm_free(&node);
    free(g_node_of);
}

/* Each host split into simulated nodes of size / 2 ranks (a 2x4 split of one host; on real
 * hosts each host's own split, its ranks in blocks of size / 2 by their place on the host):
 * peers of another node are unreachable. */
static void test_simulated_nodes(void *unused)
{
    symaddr_context_t *ctx;
    symaddr_provider_t *ipc;
    symaddr_map_t *m;
    void *ptr;
    (void)unused;
    if (!(ctx = t_two_node_context()))
        return;
    int half = t_size / 2, host_rank, first, mine[2], *node_of = malloc(sizeof(int) * 2 * t_size);
    MPI_Comm host;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, t_rank, MPI_INFO_NULL, &host);
    MPI_Comm_rank(host, &host_rank);
    first = t_rank;
    MPI_Bcast(&first, 1, MPI_INT, 0, host); /* the host's first rank names it */
    MPI_Comm_free(&host);
    mine[0] = first;
    mine[1] = host_rank / half;
    MPI_Allgather(mine, 2, MPI_INT, node_of, 2, MPI_INT, MPI_COMM_WORLD);
    int node_size = 0;
    for (int t = 0; t < t_size; t++)
        node_size += node_of[2 * t] == mine[0] && node_of[2 * t + 1] == mine[1];
    T_CHECK(symaddr_node_size(ctx) == node_size, "node size %d, want %d", symaddr_node_size(ctx),
            node_size);
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &ipc));
    T_OK(ctx, symaddr_symmetric_alloc(ipc, COUNT * sizeof(uint32_t), &ptr, &m));
    check_invariant(m, t_rank, t_size);
    fill(ctx, ptr, (uint32_t)t_rank + 1);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int t = 0; t < t_size; t++) {
        void *remote;
        bool same = node_of[2 * t] == mine[0] && node_of[2 * t + 1] == mine[1];
        /* the device check a kernel makes before translating, on the same table */
        symaddr_buffer_t buf;
        T_OK(ctx, symaddr_buffer_bind(m, ptr, &buf));
        T_CHECK(symaddr_reachable(t, m->host_peer_bases) == same &&
                    symaddr_buffer_reachable(buf, t) == symaddr_reachable(t, buf.peer_bases),
                "symaddr_reachable(%d) is %d", t, symaddr_reachable(t, m->host_peer_bases));
        if (same) {
            T_CHECK(m->host_peer_bases[t] != 0, "same-node rank %d unreachable", t);
        } else {
            T_CHECK(m->host_peer_bases[t] == 0, "rank %d of the other node is mapped", t);
            T_STATUS(ctx, symaddr_translate_host(m, ptr, t, &remote), SYMADDR_ERR_UNREACHABLE);
        }
    }
    free(node_of);
    check_peers(ctx, m, ptr, 0);
    MPI_Barrier(MPI_COMM_WORLD);
    T_OK(ctx, symaddr_symmetric_free(ipc, ptr));
    T_OK(ctx, symaddr_finalize(&ctx));
    T_CHECK(ctx == NULL);
}

/* A context over a sub-communicator: odd and even ranks apart. */
static void test_subcommunicator(void *unused)
{
    MPI_Comm half;
    symaddr_context_t *ctx;
    symaddr_provider_t *heap;
    symaddr_map_t *m;
    void *ptr;
    (void)unused;
    MPI_Comm_split(MPI_COMM_WORLD, t_rank % 2, t_rank, &half);
    ctx = t_context(half, NULL);
    int expect = (t_size + 1 - t_rank % 2) / 2;
    T_CHECK(symaddr_size(ctx) == expect && symaddr_rank(ctx) == t_rank / 2);
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_HEAP, &heap));
    T_OK(ctx, symaddr_symmetric_alloc(heap, COUNT * sizeof(uint32_t), &ptr, &m));
    fill(ctx, ptr, (uint32_t)symaddr_rank(ctx) + 1);
    MPI_Barrier(half);
    check_peers(ctx, m, ptr, 0);
    MPI_Barrier(half);
    T_OK(ctx, symaddr_finalize(&ctx)); /* frees the live allocation too */
    MPI_Comm_free(&half);
}

static void test_bad_inputs(symaddr_context_t *ctx)
{
    symaddr_provider_t *ipc, *heap;
    symaddr_map_t *m, *m2;
    void *ptr = NULL, *p2;
    int rank = symaddr_rank(ctx);

    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &ipc));
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_HEAP, &heap));
    T_STATUS(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_FOREIGN, &ipc),
             SYMADDR_ERR_INVALID_ARG);
    T_STATUS(ctx, symaddr_provider_get(NULL, SYMADDR_PROVIDER_IPC, &ipc), SYMADDR_ERR_INVALID_ARG);
    T_STATUS(ctx, symaddr_symmetric_alloc(NULL, 64, &ptr, &m), SYMADDR_ERR_INVALID_ARG);
    /* Each bad argument on one rank only: every rank must return the same error. */
    T_STATUS(ctx, symaddr_symmetric_alloc(ipc, 64, rank == 1 % t_size ? NULL : &ptr, &m),
             SYMADDR_ERR_INVALID_ARG);
    T_STATUS(ctx, symaddr_symmetric_alloc(ipc, rank == 2 % t_size ? 0 : 64, &ptr, &m),
             SYMADDR_ERR_INVALID_SIZE);
    T_STATUS(ctx, symaddr_symmetric_alloc(heap, rank == 0 ? SIZE_MAX : 64, &ptr, &m),
             SYMADDR_ERR_INVALID_SIZE);
    T_STATUS(ctx, symaddr_symmetric_alloc(ipc, rank == t_size - 1 ? 96 : 64, &ptr, &m),
             SYMADDR_ERR_MISMATCH);
    T_STATUS(ctx, symaddr_symmetric_alloc(rank == 0 ? heap : ipc, 64, &ptr, &m),
             SYMADDR_ERR_MISMATCH);
    T_STATUS(ctx, symaddr_symmetric_alloc(heap, (size_t)1 << 40, &ptr, &m), SYMADDR_ERR_NO_MEMORY);
    T_CHECK(strstr(symaddr_last_error(ctx), "SYMADDR_HEAP_SIZE") != NULL, "message: %s",
            symaddr_last_error(ctx));

    T_OK(ctx, symaddr_symmetric_alloc(ipc, 64, &ptr, &m));
    T_OK(ctx, symaddr_symmetric_alloc(heap, 64, &p2, &m2));
    /* Calls in a different order: rank 0 frees while the others allocate. */
    if (rank == 0)
        T_STATUS(ctx, symaddr_symmetric_free(ipc, ptr), SYMADDR_ERR_MISMATCH);
    else
        T_STATUS(ctx, symaddr_symmetric_alloc(ipc, 64, &p2, &m2), SYMADDR_ERR_MISMATCH);
    /* Ranks free different allocations. */
    T_STATUS(ctx, symaddr_symmetric_free(rank == 0 ? heap : ipc, rank == 0 ? p2 : ptr),
             SYMADDR_ERR_MISMATCH);
    T_STATUS(ctx, symaddr_symmetric_free(heap, ptr), SYMADDR_ERR_WRONG_PROVIDER);
    T_STATUS(ctx, symaddr_symmetric_free(ipc, (char *)ptr + 8), SYMADDR_ERR_INVALID_ARG);
    T_STATUS(ctx, symaddr_symmetric_free(ipc, rank == 3 % t_size ? NULL : ptr),
             SYMADDR_ERR_INVALID_ARG);
    T_STATUS(ctx, symaddr_unregister(ctx, m), SYMADDR_ERR_WRONG_PROVIDER);
    T_OK(ctx, symaddr_symmetric_free(ipc, ptr));
    T_OK(ctx, symaddr_symmetric_free(heap, p2));
    T_STATUS(ctx, symaddr_symmetric_free(ipc, ptr), SYMADDR_ERR_DOUBLE_FREE);
    T_CHECK(strstr(symaddr_last_error(ctx), "already freed") != NULL);
    static char never;
    T_STATUS(ctx, symaddr_symmetric_free(ipc, &never), SYMADDR_ERR_NOT_FOUND);
    T_STATUS(ctx, symaddr_unregister(ctx, m), SYMADDR_ERR_INVALID_MAP);
    T_STATUS(ctx, symaddr_lookup(ctx, NULL, &m), SYMADDR_ERR_INVALID_ARG);
    T_STATUS(ctx, symaddr_lookup(ctx, &never, &m), SYMADDR_ERR_NOT_FOUND);
    T_STATUS(ctx, symaddr_import(ctx, NULL, 64, &m), SYMADDR_ERR_INVALID_ARG);
    T_STATUS(ctx, symaddr_mem_free(ctx, &never), SYMADDR_ERR_NOT_FOUND);
    uint64_t bad_table[64] = {0};
    T_STATUS(ctx, symaddr_register_peer_table(ctx, &never, 1, bad_table, 0, &m),
             SYMADDR_ERR_INVALID_ARG);
    T_STATUS(ctx, symaddr_translate_host(NULL, &never, 0, &ptr), SYMADDR_ERR_INVALID_ARG);
    T_CHECK(strcmp(symaddr_strerror((symaddr_status_t)-999), "") != 0);
}

/* Plain memory belongs to the context that allocated it: another context neither frees nor
 * imports it as its own, on every backend. */
static void test_mem_other_context(symaddr_context_t *ctx)
{
    symaddr_context_t *other = t_context(MPI_COMM_WORLD, NULL);
    uint32_t *p, v = 0;
    const uint32_t want = 0xa5a5u + (uint32_t)t_rank;
    T_OK(ctx, symaddr_mem_alloc(ctx, 4096, (void **)&p));
    T_OK(ctx, symaddr_memcpy(ctx, p, &want, sizeof(want)));
    T_STATUS(other, symaddr_mem_free(other, p), SYMADDR_ERR_NOT_FOUND);
    T_CHECK(strstr(symaddr_last_error(other), "symaddr_mem_alloc") != NULL, "message: %s",
            symaddr_last_error(other));
    /* Still allocated and intact: the owner reads it back and frees it. */
    T_OK(ctx, symaddr_memcpy(ctx, &v, p, sizeof(v)));
    T_CHECK(v == want, "0x%x after the refused free, want 0x%x", v, want);
    T_OK(ctx, symaddr_mem_free(ctx, p));
    T_STATUS(ctx, symaddr_mem_free(ctx, p), SYMADDR_ERR_NOT_FOUND);
    T_OK(other, symaddr_finalize(&other));
}

static void test_no_fd_leak(symaddr_context_t *unused)
{
    (void)unused;
    int before = t_count_entries("/proc/self/fd");
    for (int i = 0; i < 5; i++) {
        symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, NULL);
        symaddr_provider_t *ipc;
        symaddr_map_t *m;
        void *ptr;
        T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &ipc));
        for (int k = 0; k < 10; k++) {
            T_OK(ctx, symaddr_symmetric_alloc(ipc, 4096 + 17 * (size_t)k, &ptr, &m));
            T_OK(ctx, symaddr_symmetric_free(ipc, ptr));
        }
        T_OK(ctx, symaddr_symmetric_alloc(ipc, 333, &ptr, &m)); /* left for finalize */
        T_OK(ctx, symaddr_finalize(&ctx));
    }
    int after = t_count_entries("/proc/self/fd");
    T_CHECK(after == before, "descriptors: %d before, %d after", before, after);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, NULL);
    if (t_rank == 0)
        printf("# backend %s, %d ranks, %d per node\n", symaddr_backend_name(symaddr_backend(ctx)),
               t_size, symaddr_node_size(ctx));
    T_RUN(test_ipc_and_heap, ctx);
    T_RUN(test_heap_tables, ctx);
    T_RUN(test_map_capabilities, NULL);
    T_RUN(test_import_views, ctx);
    T_RUN(test_shared_window, ctx);
    T_RUN(test_ptr_fn_adapter, ctx);
    T_RUN(test_simulated_nodes, NULL);
    T_RUN(test_subcommunicator, NULL);
    T_RUN(test_bad_inputs, ctx);
    T_RUN(test_mem_other_context, ctx);
    T_RUN(test_no_fd_leak, ctx);
    symaddr_finalize(&ctx);
    return t_finish();
}
