/* SPDX-License-Identifier: MIT */
/* The vmm provider (where the backend has VMM memory) and the locality map: the address-map
 * invariant and exact peer values on vmm memory, no descriptor leaks over 1000
 * allocate/free cycles, and the peer classes for one node and for a simulated 2-node split. */
#include "harness.h"

#define COUNT 1001

/* The vmm provider, or a SKIP with the backend's reason. */
static symaddr_provider_t *vmm_or_skip(symaddr_context_t *ctx)
{
    symaddr_provider_t *p = NULL;
    symaddr_status_t st = symaddr_provider_get(ctx, SYMADDR_PROVIDER_VMM, &p);
    if (st == SYMADDR_ERR_UNSUPPORTED) {
        T_SKIP("%s", symaddr_last_error(ctx));
        return NULL;
    }
    T_OK(ctx, st);
    return p;
}

static void test_vmm_values(symaddr_context_t *ctx)
{
    symaddr_provider_t *vmm = vmm_or_skip(ctx);
    symaddr_map_t *m, *found;
    uint32_t *ptr, host[COUNT];
    if (!vmm)
        return;
    T_OK(ctx, symaddr_symmetric_alloc(vmm, COUNT * sizeof(uint32_t), (void **)&ptr, &m));
    T_CHECK(m->provider == SYMADDR_PROVIDER_VMM);
    T_CHECK(m->host_peer_bases[t_rank] == m->allocation_base &&
                m->allocation_bytes >= COUNT * sizeof(uint32_t),
            "invariant");
    for (int i = 0; i < COUNT; i++)
        host[i] = (uint32_t)(t_rank + 1) * 100000u + (uint32_t)i;
    T_OK(ctx, symaddr_memcpy(ctx, ptr, host, sizeof(host)));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int t = 0; t < t_size; t++) {
        void *remote;
        T_OK(ctx, symaddr_translate_host(m, ptr + 7, t, &remote));
        T_OK(ctx, symaddr_memcpy(ctx, host, remote, (COUNT - 7) * sizeof(uint32_t)));
        int bad = 0;
        for (int i = 0; i < COUNT - 7; i++)
            bad += host[i] != (uint32_t)(t + 1) * 100000u + (uint32_t)(i + 7);
        T_CHECK(bad == 0, "%d wrong values from rank %d", bad, t);
    }
    T_OK(ctx, symaddr_lookup(ctx, ptr + 500, &found));
    T_CHECK(found == m);
    MPI_Barrier(MPI_COMM_WORLD);
    T_OK(ctx, symaddr_symmetric_free(vmm, ptr));
}

/* Host memory to and from this rank's vmm memory, on every rank: sizes from one byte to
 * several granules, at odd offsets, checked byte for byte. */
static void test_vmm_host_copies(symaddr_context_t *ctx)
{
    static const size_t sizes[] = {1, 4095, (1u << 20) + 3, (6u << 20) + 5};
    symaddr_provider_t *vmm = vmm_or_skip(ctx);
    symaddr_map_t *m;
    unsigned char *ptr;
    if (!vmm)
        return;
    size_t cap = sizes[3] + 64;
    unsigned char *in = malloc(cap), *out = malloc(cap);
    T_OK(ctx, symaddr_symmetric_alloc(vmm, cap, (void **)&ptr, &m));
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k], off = 2 * k + 1;
        for (size_t i = 0; i < n; i++)
            in[i] = (unsigned char)((size_t)(t_rank + 1) * 37 + i * 13 + k);
        memset(out, 0, n);
        T_OK(ctx, symaddr_memcpy(ctx, ptr + off, in, n));
        T_OK(ctx, symaddr_memcpy(ctx, out, ptr + off, n));
        T_CHECK(memcmp(in, out, n) == 0, "%zu bytes at offset %zu did not come back", n, off);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    T_OK(ctx, symaddr_symmetric_free(vmm, ptr));
    free(in);
    free(out);
}

static void test_vmm_no_fd_leak(symaddr_context_t *ctx)
{
    symaddr_provider_t *vmm = vmm_or_skip(ctx);
    symaddr_map_t *m;
    void *ptr;
    symaddr_status_t st = SYMADDR_OK;
    if (!vmm)
        return;
    /* The same 1000 sizes twice: the first round fills what retention keeps mapped (the newest
     * sizes, within SYMADDR_RETAIN_BYTES), the second must end where it started. */
    int before = 0;
    for (int round = 0; round < 2; round++) {
        if (round == 1)
            before = t_count_entries("/proc/self/fd");
        for (int i = 0; i < 1000 && st == SYMADDR_OK; i++) {
            st = symaddr_symmetric_alloc(vmm, 4096 + (size_t)i, &ptr, &m);
            if (st == SYMADDR_OK)
                st = symaddr_symmetric_free(vmm, ptr);
        }
    }
    T_OK(ctx, st);
    int after = t_count_entries("/proc/self/fd");
    T_CHECK(after == before, "descriptors: %d before 1000 cycles, %d after", before, after);
}

static void check_locality(symaddr_context_t *ctx, int node_size)
{
    const symaddr_locality_t *l;
    T_OK(ctx, symaddr_locality_get(ctx, &l));
    int gpu = symaddr_backend(ctx) != SYMADDR_BACKEND_CPU;
    T_CHECK(l->world_size == t_size && l->local_rank == t_rank && l->node_size == node_size);
    T_CHECK(l->rank_stride == 1, "stride %d", l->rank_stride);
    for (int r = 0; r < t_size; r++) {
        int same_node = r / node_size == t_rank / node_size;
        int same_gpu = gpu && l->device[r] == l->device[t_rank];
        int want = r == t_rank  ? SYMADDR_PEER_SELF
                   : !same_node ? SYMADDR_PEER_REMOTE
                   : same_gpu   ? SYMADDR_PEER_SAME_GPU
                                : SYMADDR_PEER_SAME_NODE;
        T_CHECK(l->peer_class[r] == want, "rank %d: class %d, want %d", r, l->peer_class[r], want);
        if (!same_node)
            T_CHECK(!l->direct_access[r] && !l->system_atomics[r], "rank %d off-node", r);
        else if (!gpu || same_gpu) /* shared memory, or one GPU: always load/store */
            T_CHECK(l->direct_access[r] && l->system_atomics[r], "rank %d on-node", r);
    }
    for (int q = 0; q < l->node_size; q++)
        T_CHECK(l->node_ranks[q] == t_rank / node_size * node_size + q);
}

static void test_locality(symaddr_context_t *ctx) { check_locality(ctx, t_size); }

static void test_locality_two_nodes(void *unused)
{
    (void)unused;
    symaddr_context_t *ctx = t_two_node_context();
    if (!ctx)
        return;
    check_locality(ctx, t_size / 2);
    T_OK(ctx, symaddr_finalize(&ctx));
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, NULL);
    if (t_rank == 0)
        printf("# backend %s, %d ranks\n", symaddr_backend_name(symaddr_backend(ctx)), t_size);
    T_RUN(test_vmm_values, ctx);
    T_RUN(test_vmm_host_copies, ctx);
    T_RUN(test_vmm_no_fd_leak, ctx);
    T_RUN(test_locality, ctx);
    T_RUN(test_locality_two_nodes, NULL);
    symaddr_finalize(&ctx);
    return t_finish();
}
