/* SPDX-License-Identifier: MIT */
/* The device library in real kernels: this one source is built for the cpu
 * backend (host C++) and, when one is configured, for the GPU backend. It
 * checks exact values from distinct per-rank data (rank + 1), odd sizes and
 * odd offsets against sequential references. */
#include "runtime.h"

#define SYMADDR_VALIDATE 1
#include "symaddr/device.h"

#include "harness.h"

#define N 1001 /* odd: the 16-byte paths leave tails */
#define ITERS 50

static symaddr_context_t *g_ctx;
/* The provider of the tests' main buffers: ipc, or vmm with SYMADDR_TEST_PROVIDER=vmm. */
static symaddr_provider_kind_t g_kind = SYMADDR_PROVIDER_IPC;

static void sync_all(void)
{
    T_OK(g_ctx, symaddr_stream_sync(g_ctx, NULL));
    MPI_Barrier(MPI_COMM_WORLD);
}

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    T_OK(g_ctx, symaddr_mem_alloc(g_ctx, bytes, &p));
    return p;
}

static void launched(symaddr_status_t st) { T_OK(g_ctx, st); }

/* ---- the seed's put_kernel, ported: translation once, outside the access loop ------------ */

__global__ void put_kernel(float *dst, const float *src, size_t n, int target,
                           const uint64_t *peer_bases, int local_rank)
{
    float *remote = (float *)symaddr_translate(dst, target, peer_bases, local_rank);
    for (size_t i = symaddr_grid_thread(); i < n; i += symaddr_grid_threads())
        remote[i] = src[i];
}

static float value_of(int rank, size_t i) { return (float)(rank + 1) * 1000.0f + (float)i; }

static void fill_f32(float *dev, int rank, size_t n)
{
    float *h = (float *)malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        h[i] = value_of(rank, i);
    T_OK(g_ctx, symaddr_memcpy(g_ctx, dev, h, n * sizeof(float)));
    free(h);
}

/* slot s of dst must hold rank s's values, for every s != skip (and, given a host table, every
 * s it reaches). */
static void check_slots_of(const float *dev_dst, int skip, size_t n, size_t offset,
                           const uint64_t *reach)
{
    float *h = (float *)malloc((size_t)t_size * n * sizeof(float));
    T_OK(g_ctx, symaddr_memcpy(g_ctx, h, dev_dst, (size_t)t_size * n * sizeof(float)));
    for (int s = 0; s < t_size; s++) {
        if (s == skip || (reach && !symaddr_reachable(s, reach)))
            continue;
        int bad = 0;
        for (size_t i = 0; i < n; i++)
            bad += h[(size_t)s * n + i] != value_of(s, i + offset);
        T_CHECK(bad == 0, "slot %d: %d of %zu wrong", s, bad, n);
    }
    free(h);
}

static void check_slots(const float *dev_dst, int skip, size_t n, size_t offset)
{
    check_slots_of(dev_dst, skip, n, offset, NULL);
}

/* Whether every rank is on this rank's node; else the case is skipped, saying why (across
 * nodes a peer_bases entry is 0: test_put_kernel and test_stream_across_nodes run there). */
static bool one_node(void)
{
    if (symaddr_node_size(g_ctx) == t_size)
        return true;
    T_SKIP("reaches every rank, and this run has %d ranks a node of %d", symaddr_node_size(g_ctx),
           t_size);
    return false;
}

/* Elements [3, 3 + n) of slot s (of n + 3) in dev must hold rank s's values, s != skip. */
static int wrong_in_slots(const float *dev, int skip, size_t n)
{
    size_t per = n + 3;
    float *h = (float *)malloc((size_t)t_size * per * sizeof(float));
    int bad = 0;
    T_OK(g_ctx, symaddr_memcpy(g_ctx, h, dev, (size_t)t_size * per * sizeof(float)));
    for (int s = 0; s < t_size; s++)
        for (size_t i = 3; s != skip && i < per; i++)
            bad += h[(size_t)s * per + i] != value_of(s, i);
    free(h);
    return bad;
}

/* Bulk symaddr_put and symaddr_get at an odd offset, below and above the size from which they
 * go by the copy engine to another GPU (64 KiB on CUDA); each get follows the puts on the
 * stream with no wait between. */
static void test_bulk_put_get(void *unused)
{
    if (!one_node())
        return;
    static const size_t counts[] = {((size_t)64 << 10) / 4 - 5, ((size_t)3 << 20) / 4 + 7};
    symaddr_provider_t *p;
    symaddr_map_t *ms, *md;
    (void)unused;
    T_OK(g_ctx, symaddr_provider_get(g_ctx, g_kind, &p));
    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        size_t n = counts[c], per = n + 3;
        float *src, *dst, *back = (float *)dev_alloc((size_t)t_size * per * sizeof(float));
        T_OK(g_ctx, symaddr_symmetric_alloc(p, per * sizeof(float), (void **)&src, &ms));
        T_OK(g_ctx,
             symaddr_symmetric_alloc(p, (size_t)t_size * per * sizeof(float), (void **)&dst, &md));
        fill_f32(src, t_rank, per);
        sync_all();
        for (int t = 0; t < t_size; t++)
            if (t != t_rank)
                T_OK(g_ctx, symaddr_put(g_ctx, dst + (size_t)t_rank * per + 3, src + 3,
                                        n * sizeof(float), t, NULL));
        for (int t = 0; t < t_size; t++)
            if (t != t_rank)
                T_OK(g_ctx, symaddr_get(g_ctx, back + (size_t)t * per + 3, src + 3,
                                        n * sizeof(float), t, NULL));
        sync_all();
        int bad_put = wrong_in_slots(dst, t_rank, n), bad_get = wrong_in_slots(back, t_rank, n);
        T_CHECK(bad_put == 0, "%zu bytes: %d wrong after symaddr_put", n * sizeof(float), bad_put);
        T_CHECK(bad_get == 0, "%zu bytes: %d wrong after symaddr_get", n * sizeof(float), bad_get);
        sync_all();
        T_OK(g_ctx, symaddr_symmetric_free(p, src));
        T_OK(g_ctx, symaddr_symmetric_free(p, dst));
        T_OK(g_ctx, symaddr_mem_free(g_ctx, back));
    }
}

static void test_put_kernel(void *unused)
{
    symaddr_provider_t *ipc;
    symaddr_map_t *ms, *md;
    float *src, *dst;
    (void)unused;
    T_OK(g_ctx, symaddr_provider_get(g_ctx, g_kind, &ipc));
    T_OK(g_ctx, symaddr_symmetric_alloc(ipc, N * sizeof(float), (void **)&src, &ms));
    T_OK(g_ctx,
         symaddr_symmetric_alloc(ipc, (size_t)t_size * N * sizeof(float), (void **)&dst, &md));
    fill_f32(src, t_rank, N);
    sync_all();
    /* every rank of this node (all of them on one host); across nodes their entry is 0 */
    for (int t = 0; t < t_size; t++)
        if (t != t_rank && symaddr_reachable(t, md->host_peer_bases))
            launched(SYMADDR_LAUNCH(put_kernel, 4, 256, NULL, dst + (size_t)t_rank * N, src, N, t,
                                    md->peer_bases, md->local_rank));
    sync_all();
    check_slots_of(dst, t_rank, N, 0, md->host_peer_bases);
    int reached = 0;
    for (int t = 0; t < t_size; t++)
        reached += symaddr_reachable(t, md->host_peer_bases);
    T_CHECK(reached == symaddr_node_size(g_ctx), "%d ranks reachable, the node has %d", reached,
            symaddr_node_size(g_ctx));
    sync_all();
    T_OK(g_ctx, symaddr_symmetric_free(ipc, src));
    T_OK(g_ctx, symaddr_symmetric_free(ipc, dst));
}

/* ---- block-cooperative get, and the host-launched put/get ------------------------------- */

__global__ void get_all_kernel(float *dst, const float *src, size_t n, int size,
                               const uint64_t *peer_bases, int local_rank)
{
    for (int t = 0; t < size; t++)
        if (t != local_rank)
            symaddr_get_block(dst + (size_t)t * n, src, n * sizeof(float), t, peer_bases,
                              local_rank);
}

static void test_get_block_and_host_calls(void *unused)
{
    if (!one_node())
        return;
    symaddr_provider_t *heap;
    symaddr_map_t *ms, *md;
    float *src, *dst;
    (void)unused;
    T_OK(g_ctx, symaddr_provider_get(g_ctx, SYMADDR_PROVIDER_HEAP, &heap));
    T_OK(g_ctx, symaddr_symmetric_alloc(heap, N * sizeof(float), (void **)&src, &ms));
    T_OK(g_ctx,
         symaddr_symmetric_alloc(heap, (size_t)t_size * N * sizeof(float), (void **)&dst, &md));
    fill_f32(src, t_rank, N);
    sync_all();
    launched(SYMADDR_LAUNCH(get_all_kernel, 1, 128, NULL, dst, src, N, t_size, ms->peer_bases,
                            ms->local_rank));
    sync_all();
    check_slots(dst, t_rank, N, 0);
    sync_all();
    /* The same exchange through symaddr_get and symaddr_put. */
    for (int t = 0; t < t_size; t++)
        if (t != t_rank)
            T_OK(g_ctx, symaddr_get(g_ctx, dst + (size_t)t * N, src, N * sizeof(float), t, NULL));
    sync_all();
    check_slots(dst, t_rank, N, 0);
    sync_all();
    for (int t = 0; t < t_size; t++)
        if (t != t_rank)
            T_OK(g_ctx, symaddr_put(g_ctx, dst + (size_t)t_rank * N + 3, src + 3,
                                    (N - 3) * sizeof(float), t, NULL));
    sync_all();
    float *h = (float *)malloc((size_t)t_size * N * sizeof(float));
    T_OK(g_ctx, symaddr_memcpy(g_ctx, h, dst, (size_t)t_size * N * sizeof(float)));
    int bad = 0;
    for (int s = 0; s < t_size; s++)
        for (size_t i = 3; s != t_rank && i < N; i++)
            bad += h[(size_t)s * N + i] != value_of(s, i);
    T_CHECK(bad == 0, "%d wrong after symaddr_put", bad);
    free(h);
    T_STATUS(g_ctx, symaddr_put(g_ctx, dst, src, (size_t)t_size * N * sizeof(float) + 4, 0, NULL),
             SYMADDR_ERR_OUT_OF_BOUNDS);
    T_STATUS(g_ctx, symaddr_put(g_ctx, dst, src, 4, t_size, NULL), SYMADDR_ERR_INVALID_ARG);
    T_STATUS(g_ctx, symaddr_put(g_ctx, &bad, src, 4, 0, NULL), SYMADDR_ERR_NOT_FOUND);
    sync_all();
    T_OK(g_ctx, symaddr_symmetric_free(heap, src));
    T_OK(g_ctx, symaddr_symmetric_free(heap, dst));
}

/* ---- typed load/store and one-element put/get for every type ----------------------------- */

typedef struct typed {
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
    float f32;
    double f64;
    symaddr_f16_t f16;
    symaddr_bf16_t bf16;
} typed_t;

static typed_t typed_of(int rank)
{
    typed_t v;
    v.i32 = -(rank + 1) * 7;
    v.u32 = 0x80000000u + (uint32_t)rank + 1;
    v.i64 = -(int64_t)(rank + 1) * 1000000000000ll;
    v.u64 = (uint64_t)(rank + 1) << 40;
    v.f32 = (float)(rank + 1) * 0.5f;
    v.f64 = (double)(rank + 1) * 0.25;
    v.f16 = (symaddr_f16_t)(0x3c00 + rank);
    v.bf16 = (symaddr_bf16_t)(0x3f80 + rank);
    return v;
}

/* Store my values into target's slot; then (second launch) load them back from there. */
__global__ void typed_store_kernel(typed_t *slot, typed_t v, int target, const uint64_t *pb, int me)
{
    symaddr_store_i32(&slot->i32, v.i32, target, pb, me);
    symaddr_store_u32(&slot->u32, v.u32, target, pb, me);
    symaddr_store_i64(&slot->i64, v.i64, target, pb, me);
    symaddr_store_u64(&slot->u64, v.u64, target, pb, me);
    symaddr_store_f32(&slot->f32, v.f32, target, pb, me);
    symaddr_store_f64(&slot->f64, v.f64, target, pb, me);
    symaddr_store_f16(&slot->f16, v.f16, target, pb, me);
    symaddr_store_bf16(&slot->bf16, v.bf16, target, pb, me);
}

__global__ void typed_load_kernel(typed_t *out, typed_t *slot, int target, const uint64_t *pb,
                                  int me)
{
    out->i32 = symaddr_load_i32(&slot->i32, target, pb, me);
    out->u32 = symaddr_load_u32(&slot->u32, target, pb, me);
    out->i64 = symaddr_load_i64(&slot->i64, target, pb, me);
    out->u64 = symaddr_load_u64(&slot->u64, target, pb, me);
    symaddr_get_f32(&out->f32, &slot->f32, target, pb, me);
    symaddr_get_f64(&out->f64, &slot->f64, target, pb, me);
    symaddr_get_f16(&out->f16, &slot->f16, target, pb, me);
    symaddr_get_bf16(&out->bf16, &slot->bf16, target, pb, me);
}

/* Buffer form: element index into the bound buffer. */
__global__ void typed_buffer_kernel(symaddr_buffer_t buf, int target, double value)
{
    symaddr_buffer_store_f64(buf, 3, value, target);
}

static int typed_equal(const typed_t *a, const typed_t *b)
{
    return a->i32 == b->i32 && a->u32 == b->u32 && a->i64 == b->i64 && a->u64 == b->u64 &&
           a->f32 == b->f32 && a->f64 == b->f64 && a->f16 == b->f16 && a->bf16 == b->bf16;
}

static void test_typed(void *unused)
{
    if (!one_node())
        return;
    symaddr_provider_t *ipc;
    symaddr_map_t *m;
    typed_t *slots, got, *out = (typed_t *)dev_alloc(sizeof(typed_t));
    int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;
    (void)unused;
    T_OK(g_ctx, symaddr_provider_get(g_ctx, g_kind, &ipc));
    T_OK(g_ctx, symaddr_symmetric_alloc(ipc, 4 * sizeof(typed_t), (void **)&slots, &m));
    sync_all();
    launched(SYMADDR_LAUNCH(typed_store_kernel, 1, 1, NULL, slots + 1, typed_of(t_rank), right,
                            m->peer_bases, m->local_rank));
    sync_all();
    T_OK(g_ctx, symaddr_memcpy(g_ctx, &got, slots + 1, sizeof(got)));
    typed_t want = typed_of(left);
    T_CHECK(typed_equal(&got, &want), "slot holds something other than rank %d's values", left);
    launched(SYMADDR_LAUNCH(typed_load_kernel, 1, 1, NULL, out, slots + 1, right, m->peer_bases,
                            m->local_rank));
    T_OK(g_ctx, symaddr_stream_sync(g_ctx, NULL));
    T_OK(g_ctx, symaddr_memcpy(g_ctx, &got, out, sizeof(got)));
    want = typed_of(t_rank);
    T_CHECK(typed_equal(&got, &want), "loads from rank %d differ from what this rank stored",
            right);
    sync_all();
    symaddr_buffer_t buf;
    T_OK(g_ctx, symaddr_buffer_bind(m, slots + 2, &buf));
    T_STATUS(g_ctx, symaddr_buffer_bind(m, slots + 4, &buf), SYMADDR_ERR_OUT_OF_BOUNDS);
    T_OK(g_ctx, symaddr_buffer_bind(m, slots + 2, &buf));
    launched(SYMADDR_LAUNCH(typed_buffer_kernel, 1, 1, NULL, buf, right, t_rank + 0.125));
    sync_all();
    double d[4];
    T_OK(g_ctx, symaddr_memcpy(g_ctx, d, slots + 2, sizeof(double) * 4));
    T_CHECK(d[3] == left + 0.125);
    sync_all();
    T_OK(g_ctx, symaddr_symmetric_free(ipc, slots));
    T_OK(g_ctx, symaddr_mem_free(g_ctx, out));
}

/* ---- atomics against sequential references ----------------------------------------------- */

typedef struct counters {
    uint64_t fadd;
    uint32_t and32, or32;
    int32_t xor32, min32, max32;
    int64_t min64, max64;
    uint64_t swap;
    uint32_t bufadd;
    int32_t lock;
    int64_t locked;
    uint64_t host_add;
    float fsum, fbuf; /* float adds: explicit and _sem, buffer form */
    double dsum;
    int32_t slock; /* a lock by acquire and release */
    int64_t slocked;
    uint32_t h2, b2, b2buf; /* f16 and bf16 pairs */
} counters_t;

static int32_t min_val32(int r) { return (r - 3) * 1000 - 1; }
static int64_t min_val64(int r) { return (int64_t)(r - 4) * 1000000000000ll; }

__global__ void atomics_kernel(counters_t *c, uint64_t *olds, uint64_t *swap_old, int rank,
                               symaddr_buffer_t bufadd, symaddr_buffer_t fbuf,
                               symaddr_buffer_t b2buf, int t_size_, const uint64_t *pb, int me)
{
    const int root = 0;
    /* float adds of exact halves and quarters: the total is exact in any order */
    for (int i = 0; i < ITERS; i++) {
        symaddr_atomic_add_f32(&c->fsum, 0.5f, root, pb, me);
        (void)symaddr_atomic_fetch_add_sem_f32(&c->fsum, 0.25f, root, pb, me, SYMADDR_SEM_RELAXED);
        (void)symaddr_atomic_fetch_add_sem_f64(&c->dsum, 0.125 * (rank + 1), root, pb, me,
                                               SYMADDR_SEM_ACQ_REL);
        (void)symaddr_buffer_atomic_fetch_add_sem_f32(fbuf, 0, 2.0f, root, SYMADDR_SEM_RELEASE);
    }
    /* Pairs: f16 (0.5, 0.25) every iteration, bf16 (1, 2) in fewer, so that every partial sum
     * is exact (f16: multiples of 0.25 to 1024; bf16: integers to 256, even ones to 512). */
    const uint32_t h2 = 0x3800u | 0x3400u << 16, b2 = 0x3f80u | 0x4000u << 16;
    for (int i = 0; i < ITERS; i++)
        symaddr_atomic_add_f16x2(&c->h2, h2, root, pb, me);
    for (int i = 0; i < 256 / t_size_; i++) {
        (void)symaddr_atomic_fetch_add_sem_bf16x2(&c->b2, b2, root, pb, me, SYMADDR_SEM_ACQ_REL);
        (void)symaddr_buffer_atomic_fetch_add_bf16x2(b2buf, 0, b2, root);
    }
    /* A lock whose taking is an acquire and whose giving back a release, around plain
     * accesses with no fence of their own. */
    for (int i = 0; i < ITERS; i++) {
        while (symaddr_atomic_cas_sem_i32(&c->slock, 0, 1, root, pb, me, SYMADDR_SEM_ACQUIRE) != 0)
            symaddr_yield();
        int64_t v = symaddr_load_i64(&c->slocked, root, pb, me);
        symaddr_store_i64(&c->slocked, v + 1, root, pb, me);
        (void)symaddr_atomic_fetch_swap_sem_i32(&c->slock, 0, root, pb, me, SYMADDR_SEM_RELEASE);
    }
    for (int i = 0; i < ITERS; i++)
        olds[i] = symaddr_atomic_fetch_add_u64(&c->fadd, 1, root, pb, me);
    symaddr_atomic_and_u32(&c->and32, ~(1u << rank), root, pb, me);
    symaddr_atomic_or_u32(&c->or32, 1u << rank, root, pb, me);
    symaddr_atomic_xor_i32(&c->xor32, (rank + 1) * 0x9e37, root, pb, me);
    symaddr_atomic_min_i32(&c->min32, (rank - 3) * 1000 - 1, root, pb, me);
    symaddr_atomic_max_i32(&c->max32, (rank - 3) * 1000 - 1, root, pb, me);
    symaddr_atomic_min_i64(&c->min64, (int64_t)(rank - 4) * 1000000000000ll, root, pb, me);
    symaddr_atomic_max_i64(&c->max64, (int64_t)(rank - 4) * 1000000000000ll, root, pb, me);
    *swap_old = symaddr_atomic_fetch_swap_u64(&c->swap, (uint64_t)rank + 1, root, pb, me);
    symaddr_buffer_atomic_fetch_add_u32(bufadd, 0, (uint32_t)rank + 1, root);
    /* A lock made of cas and swap guards a plain read-modify-write. */
    for (int i = 0; i < ITERS; i++) {
        while (symaddr_atomic_cas_i32(&c->lock, 0, 1, root, pb, me) != 0)
            symaddr_yield();
        symaddr_fence();
        int64_t v = symaddr_load_i64(&c->locked, root, pb, me);
        symaddr_store_i64(&c->locked, v + 1, root, pb, me);
        symaddr_fence();
        symaddr_atomic_swap_i32(&c->lock, 0, root, pb, me);
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_atomics(void *unused)
{
    if (!one_node())
        return;
    symaddr_provider_t *ipc;
    symaddr_map_t *m;
    counters_t *c, init, got;
    uint64_t *olds = (uint64_t *)dev_alloc((ITERS + 1) * sizeof(uint64_t));
    uint64_t hold[ITERS + 1];
    (void)unused;
    T_OK(g_ctx, symaddr_provider_get(g_ctx, g_kind, &ipc));
    T_OK(g_ctx, symaddr_symmetric_alloc(ipc, sizeof(counters_t), (void **)&c, &m));
    memset(&init, 0, sizeof(init));
    init.and32 = 0xffffffffu;
    init.min32 = INT32_MAX;
    init.max32 = INT32_MIN;
    init.min64 = INT64_MAX;
    init.max64 = INT64_MIN;
    T_OK(g_ctx, symaddr_memcpy(g_ctx, c, &init, sizeof(init)));
    sync_all();
    symaddr_buffer_t buf, fbuf, b2buf;
    T_OK(g_ctx, symaddr_buffer_bind(m, &c->bufadd, &buf));
    T_OK(g_ctx, symaddr_buffer_bind(m, &c->fbuf, &fbuf));
    T_OK(g_ctx, symaddr_buffer_bind(m, &c->b2buf, &b2buf));
    launched(SYMADDR_LAUNCH(atomics_kernel, 1, 1, NULL, c, olds, olds + ITERS, t_rank, buf, fbuf,
                            b2buf, t_size, m->peer_bases, m->local_rank));
    T_OK(g_ctx, symaddr_stream_atomic_add_u64(g_ctx, &c->host_add, (uint64_t)t_rank + 1, 0, NULL));
    sync_all();
    T_OK(g_ctx, symaddr_memcpy(g_ctx, hold, olds, sizeof(hold)));
    /* Sequential references. */
    uint32_t mask = t_size >= 32 ? 0xffffffffu : (1u << t_size) - 1;
    int32_t x = 0, mn32 = INT32_MAX, mx32 = INT32_MIN;
    int64_t mn64 = INT64_MAX, mx64 = INT64_MIN;
    uint64_t sum = 0;
    for (int r = 0; r < t_size; r++) {
        x ^= (r + 1) * 0x9e37;
        mn32 = min_val32(r) < mn32 ? min_val32(r) : mn32;
        mx32 = min_val32(r) > mx32 ? min_val32(r) : mx32;
        mn64 = min_val64(r) < mn64 ? min_val64(r) : mn64;
        mx64 = min_val64(r) > mx64 ? min_val64(r) : mx64;
        sum += (uint64_t)r + 1;
    }
    uint64_t *all = (uint64_t *)malloc(sizeof(uint64_t) * (ITERS + 1) * (size_t)t_size);
    MPI_Allgather(hold, ITERS + 1, MPI_UINT64_T, all, ITERS + 1, MPI_UINT64_T, MPI_COMM_WORLD);
    if (t_rank == 0) {
        T_OK(g_ctx, symaddr_memcpy(g_ctx, &got, c, sizeof(got)));
        T_CHECK(got.fadd == (uint64_t)t_size * ITERS, "fetch_add total %llu",
                (unsigned long long)got.fadd);
        T_CHECK(got.and32 == (0xffffffffu & ~mask) && got.or32 == mask);
        T_CHECK(got.xor32 == x && got.min32 == mn32 && got.max32 == mx32);
        T_CHECK(got.min64 == mn64 && got.max64 == mx64);
        T_CHECK(got.bufadd == (uint32_t)sum && got.host_add == sum);
        T_CHECK(got.locked == (int64_t)t_size * ITERS && got.lock == 0, "locked counter %lld",
                (long long)got.locked);
        double dwant = 0;
        for (int r = 0; r < t_size; r++)
            dwant += 0.125 * (r + 1) * ITERS;
        T_CHECK(got.fsum == 0.75f * (float)(t_size * ITERS) && got.dsum == dwant &&
                    got.fbuf == 2.0f * (float)(t_size * ITERS),
                "float adds: %g %g %g, want %g %g %g", got.fsum, got.dsum, got.fbuf,
                0.75 * t_size * ITERS, dwant, 2.0 * t_size * ITERS);
        int nb = 256 / t_size;
        uint32_t h2want = symaddr_f32_to_f16_(0.5f * (float)(t_size * ITERS)) |
                          (uint32_t)symaddr_f32_to_f16_(0.25f * (float)(t_size * ITERS)) << 16;
        uint32_t b2want = symaddr_f32_to_bf16_((float)(t_size * nb)) |
                          (uint32_t)symaddr_f32_to_bf16_(2.0f * (float)(t_size * nb)) << 16;
        T_CHECK(got.h2 == h2want && got.b2 == b2want && got.b2buf == b2want,
                "pairs: f16x2 0x%08x (want 0x%08x), bf16x2 0x%08x and 0x%08x (want 0x%08x)", got.h2,
                h2want, got.b2, got.b2buf, b2want);
        if (t_size == 2) /* the conversions themselves: 50, 25 in f16; 256, 512 in bf16 */
            T_CHECK(h2want == (0x5240u | 0x4e40u << 16) && b2want == (0x4380u | 0x4400u << 16),
                    "expected pairs 0x%08x 0x%08x", h2want, b2want);
        T_CHECK(got.slocked == (int64_t)t_size * ITERS && got.slock == 0,
                "acquire/release lock counter %lld", (long long)got.slocked);
        /* fetch_add handed out every value below the total exactly once. */
        uint64_t *f = (uint64_t *)malloc(sizeof(uint64_t) * ITERS * (size_t)t_size);
        uint64_t *sw = (uint64_t *)malloc(sizeof(uint64_t) * ((size_t)t_size + 1));
        for (int r = 0; r < t_size; r++) {
            memcpy(f + (size_t)r * ITERS, all + (size_t)r * (ITERS + 1), ITERS * sizeof(uint64_t));
            sw[r] = all[(size_t)r * (ITERS + 1) + ITERS];
        }
        sw[t_size] = got.swap;
        qsort(f, (size_t)t_size * ITERS, sizeof(uint64_t), cmp_u64);
        int bad = 0;
        for (size_t i = 0; i < (size_t)t_size * ITERS; i++)
            bad += f[i] != i;
        T_CHECK(bad == 0, "fetch_add returned %d duplicate or missing values", bad);
        /* swap: the old values and the final one are the initial 0 and every rank's value. */
        qsort(sw, (size_t)t_size + 1, sizeof(uint64_t), cmp_u64);
        bad = 0;
        for (int i = 0; i <= t_size; i++)
            bad += sw[i] != (uint64_t)i;
        T_CHECK(bad == 0, "swap lost or duplicated values");
        free(f);
        free(sw);
    } else {
        T_CHECK(1); /* rank 0 holds the counters */
    }
    free(all);
    sync_all();
    T_OK(g_ctx, symaddr_symmetric_free(ipc, c));
    T_OK(g_ctx, symaddr_mem_free(g_ctx, olds));
}

/* ---- one kernel, several providers --------------------------------------------------------- */

/* Reads rank `from`'s src (its table) and writes rank `to`'s dst (another table). */
__global__ void mixed_kernel(float *dst, const uint64_t *dst_pb, int to, const float *src,
                             const uint64_t *src_pb, int from, int me, size_t n)
{
    float *d = (float *)symaddr_translate(dst, to, dst_pb, me);
    const float *s = (const float *)symaddr_translate(src, from, src_pb, me);
    for (size_t i = symaddr_grid_thread(); i < n; i += symaddr_grid_threads())
        d[i] = s[i] + 0.5f;
}

static void check_mixed(const float *dst, size_t offset)
{
    /* Rank r wrote rank (r+1)'s src into rank (r-1)'s dst: I hold rank (me+2)'s values. */
    int origin = (t_rank + 2) % t_size;
    float *h = (float *)malloc(N * sizeof(float));
    T_OK(g_ctx, symaddr_memcpy(g_ctx, h, dst, N * sizeof(float)));
    int bad = 0;
    for (size_t i = 0; i < N; i++)
        bad += h[i] != value_of(origin, i + offset) + 0.5f;
    T_CHECK(bad == 0, "%d wrong values from rank %d", bad, origin);
    free(h);
}

static void run_mixed(float *src, const symaddr_map_t *ms, float *dst, const symaddr_map_t *md,
                      size_t offset)
{
    int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;
    sync_all();
    launched(SYMADDR_LAUNCH(mixed_kernel, 2, 256, NULL, dst, md->peer_bases, left, src + offset,
                            ms->peer_bases, right, t_rank, (size_t)N));
    sync_all();
    check_mixed(dst, offset);
    sync_all();
}

static void test_mixed_providers(void *unused)
{
    if (!one_node())
        return;
    symaddr_provider_t *ipc, *heap;
    symaddr_map_t *ms, *mh, *mi;
    float *src, *hdst, *root;
    (void)unused;
    T_OK(g_ctx, symaddr_provider_get(g_ctx, g_kind, &ipc));
    T_OK(g_ctx, symaddr_provider_get(g_ctx, SYMADDR_PROVIDER_HEAP, &heap));
    T_OK(g_ctx, symaddr_symmetric_alloc(ipc, (N + 16) * sizeof(float), (void **)&src, &ms));
    fill_f32(src, t_rank, N + 16);
    /* ipc -> heap, with the source read through a view at an odd offset. */
    T_OK(g_ctx, symaddr_symmetric_alloc(heap, N * sizeof(float), (void **)&hdst, &mh));
    run_mixed(src, ms, hdst, mh, 0);
    run_mixed(src, ms, hdst, mh, 7);
    /* g_kind -> ipc: with vmm, one kernel reads vmm memory and writes ipc memory. */
    symaddr_provider_t *plain_ipc;
    symaddr_map_t *mp;
    float *pdst;
    T_OK(g_ctx, symaddr_provider_get(g_ctx, SYMADDR_PROVIDER_IPC, &plain_ipc));
    T_OK(g_ctx, symaddr_symmetric_alloc(plain_ipc, N * sizeof(float), (void **)&pdst, &mp));
    run_mixed(src, ms, pdst, mp, 5);
    T_OK(g_ctx, symaddr_symmetric_free(plain_ipc, pdst));
    /* ipc -> import: a plain allocation registered at an interior pointer. */
    root = (float *)dev_alloc((N + 64) * sizeof(float));
    T_OK(g_ctx, symaddr_import(g_ctx, root + 5, N * sizeof(float), &mi));
    run_mixed(src, ms, root + 5, mi, 0);
    T_OK(g_ctx, symaddr_unregister(g_ctx, mi));
    T_OK(g_ctx, symaddr_mem_free(g_ctx, root));
    T_OK(g_ctx, symaddr_symmetric_free(heap, hdst));
    T_OK(g_ctx, symaddr_symmetric_free(ipc, src));
}

/* MPI shared windows are host memory: only the cpu backend's kernels can reach them. */
static void test_mixed_foreign(void *unused)
{
    if (!one_node())
        return;
    (void)unused;
    if (symaddr_backend(g_ctx) != SYMADDR_BACKEND_CPU) {
        T_SKIP("MPI shared-window memory is host memory, which %s kernels cannot load",
               symaddr_backend_name(symaddr_backend(g_ctx)));
        return;
    }
    symaddr_provider_t *ipc;
    symaddr_map_t *ms, *mw;
    float *src, *mine;
    MPI_Comm node;
    MPI_Win win;
    int node_size;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, t_rank, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_size);
    if (node_size != t_size) {
        T_SKIP("needs all ranks on one node");
        MPI_Comm_free(&node);
        return;
    }
    MPI_Win_allocate_shared(N * sizeof(float), sizeof(float), MPI_INFO_NULL, node, &mine, &win);
    uint64_t *table = (uint64_t *)calloc((size_t)t_size, sizeof(uint64_t));
    for (int q = 0; q < t_size; q++) {
        MPI_Aint bytes;
        int disp;
        void *base;
        MPI_Win_shared_query(win, q, &bytes, &disp, &base);
        table[q] = (uint64_t)(uintptr_t)base;
    }
    T_OK(g_ctx, symaddr_register_peer_table(g_ctx, mine, N * sizeof(float), table,
                                            SYMADDR_CAP_LOAD_STORE | SYMADDR_CAP_ATOMICS, &mw));
    T_OK(g_ctx, symaddr_provider_get(g_ctx, g_kind, &ipc));
    T_OK(g_ctx, symaddr_symmetric_alloc(ipc, N * sizeof(float), (void **)&src, &ms));
    fill_f32(src, t_rank, N);
    run_mixed(src, ms, mine, mw, 0);
    T_OK(g_ctx, symaddr_unregister(g_ctx, mw));
    T_OK(g_ctx, symaddr_symmetric_free(ipc, src));
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
    free(table);
}

/* ---- legacy heap_bases ------------------------------------------------------------------- */

static void test_heap_bases(void *unused)
{
    if (!one_node())
        return;
    symaddr_provider_t *heap;
    symaddr_map_t *ms, *md;
    float *src, *dst;
    (void)unused;
    T_OK(g_ctx, symaddr_provider_get(g_ctx, SYMADDR_PROVIDER_HEAP, &heap));
    T_OK(g_ctx, symaddr_symmetric_alloc(heap, N * sizeof(float), (void **)&src, &ms));
    T_OK(g_ctx,
         symaddr_symmetric_alloc(heap, (size_t)t_size * N * sizeof(float), (void **)&dst, &md));
    const uint64_t *heap_bases = symaddr_heap_bases_get(g_ctx);
    /* each heap allocation has its own table; heap_bases covers them all */
    T_CHECK(heap_bases != NULL && heap_bases != md->peer_bases && heap_bases != ms->peer_bases);
    fill_f32(src, t_rank, N);
    sync_all();
    for (int t = 0; t < t_size; t++)
        if (t != t_rank)
            launched(SYMADDR_LAUNCH(put_kernel, 2, 256, NULL, dst + (size_t)t_rank * N, src, N, t,
                                    heap_bases, t_rank));
    sync_all();
    check_slots(dst, t_rank, N, 0);
    sync_all();
    T_OK(g_ctx, symaddr_symmetric_free(heap, src));
    T_OK(g_ctx, symaddr_symmetric_free(heap, dst));
}

/* ---- signals ------------------------------------------------------------------------------ */

__global__ void signal_kernel(uint32_t *data, uint64_t *sig, int round, int right, size_t n,
                              const uint64_t *dpb, const uint64_t *spb, int me, int *status)
{
    uint32_t *d = (uint32_t *)symaddr_translate(data, right, dpb, me);
    for (size_t i = 0; i < n; i++)
        d[i] = (uint32_t)(me + 1) * 100000u + (uint32_t)round * 1000u + (uint32_t)i;
    symaddr_signal_add(sig, 1, right, spb, me);
    *status = symaddr_signal_wait_until(sig, (uint64_t)round, 30ull * 1000000000ull);
}

__global__ void wait_kernel(const uint64_t *sig, uint64_t value, uint64_t timeout_ns, int *status)
{
    *status = symaddr_signal_wait_until(sig, value, timeout_ns);
}

static void test_signals(void *unused)
{
    if (!one_node())
        return;
    symaddr_provider_t *ipc;
    symaddr_map_t *md, *msig;
    uint32_t *data, host[N];
    uint64_t *sig;
    int *status = (int *)dev_alloc(sizeof(int)), st;
    int right = (t_rank + 1) % t_size, left = (t_rank + t_size - 1) % t_size;
    (void)unused;
    T_OK(g_ctx, symaddr_provider_get(g_ctx, g_kind, &ipc));
    T_OK(g_ctx, symaddr_symmetric_alloc(ipc, N * sizeof(uint32_t), (void **)&data, &md));
    T_OK(g_ctx, symaddr_symmetric_alloc(ipc, sizeof(uint64_t), (void **)&sig, &msig));
    uint64_t zero = 0;
    T_OK(g_ctx, symaddr_memcpy(g_ctx, sig, &zero, sizeof(zero)));
    sync_all();
    for (int round = 1; round <= 3; round++) {
        launched(SYMADDR_LAUNCH(signal_kernel, 1, 1, NULL, data, sig, round, right, (size_t)N,
                                md->peer_bases, msig->peer_bases, t_rank, status));
        T_OK(g_ctx, symaddr_stream_sync(g_ctx, NULL));
        T_OK(g_ctx, symaddr_memcpy(g_ctx, &st, status, sizeof(st)));
        T_CHECK(st == SYMADDR_OK, "round %d: wait returned %d", round, st);
        T_OK(g_ctx, symaddr_memcpy(g_ctx, host, data, sizeof(host)));
        int bad = 0;
        for (size_t i = 0; i < N; i++)
            bad +=
                host[i] != (uint32_t)(left + 1) * 100000u + (uint32_t)round * 1000u + (uint32_t)i;
        T_CHECK(bad == 0, "round %d: %d values not from rank %d", round, bad, left);
        MPI_Barrier(MPI_COMM_WORLD); /* the next round overwrites the data */
    }
    /* Nobody signals 100: the wait gives up after 20 ms instead of hanging. */
    launched(SYMADDR_LAUNCH(wait_kernel, 1, 1, NULL, sig, 100, 20ull * 1000000ull, status));
    T_OK(g_ctx, symaddr_stream_sync(g_ctx, NULL));
    T_OK(g_ctx, symaddr_memcpy(g_ctx, &st, status, sizeof(st)));
    T_CHECK(st == SYMADDR_ERR_TIMEOUT, "wait returned %d", st);
    sync_all();
    T_OK(g_ctx, symaddr_symmetric_free(ipc, data));
    T_OK(g_ctx, symaddr_symmetric_free(ipc, sig));
    T_OK(g_ctx, symaddr_mem_free(g_ctx, status));
}

/* ---- validation mode traps a pointer paired with the wrong map ---------------------------- */

__global__ void store_kernel(uint32_t *ptr, uint32_t value, int target, const uint64_t *pb, int me)
{
    symaddr_store_u32(ptr, value, target, pb, me);
}

static void test_mispairing(void *unused)
{
    if (!one_node())
        return;
    symaddr_config_t cfg;
    symaddr_context_t *ctx;
    symaddr_provider_t *ipc;
    symaddr_map_t *ma, *mb;
    uint32_t *a, *b, host[4];
    const uint32_t init[4] = {11, 22, 33, 44};
    int right = (t_rank + 1) % t_size;
    (void)unused;
    symaddr_config_default(&cfg);
    cfg.validate = 1;
    T_OK(NULL, symaddr_init(MPI_COMM_WORLD, &cfg, &ctx));
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &ipc));
    T_OK(ctx, symaddr_symmetric_alloc(ipc, sizeof(init), (void **)&a, &ma));
    T_OK(ctx, symaddr_symmetric_alloc(ipc, sizeof(init), (void **)&b, &mb));
    T_OK(ctx, symaddr_memcpy(ctx, a, init, sizeof(init)));
    T_OK(ctx, symaddr_memcpy(ctx, b, init, sizeof(init)));
    T_OK(ctx, symaddr_stream_sync(ctx, NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    /* The right pairing goes through. */
    launched(SYMADDR_LAUNCH(store_kernel, 1, 1, NULL, a + 1, 7u, right, ma->peer_bases, t_rank));
    T_OK(ctx, symaddr_map_check(ctx, ma));
    /* a's pointer with b's table: refused and recorded, nothing written. */
    launched(SYMADDR_LAUNCH(store_kernel, 1, 1, NULL, a + 2, 9u, right, mb->peer_bases, t_rank));
    T_STATUS(ctx, symaddr_map_check(ctx, mb), SYMADDR_ERR_OUT_OF_BOUNDS);
    T_OK(ctx, symaddr_map_check(ctx, mb)); /* reading cleared it */
    /* A target outside the communicator. */
    launched(SYMADDR_LAUNCH(store_kernel, 1, 1, NULL, a + 3, 9u, t_size, ma->peer_bases, t_rank));
    T_STATUS(ctx, symaddr_map_check(ctx, ma), SYMADDR_ERR_INVALID_ARG);
    T_OK(ctx, symaddr_stream_sync(ctx, NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    T_OK(ctx, symaddr_memcpy(ctx, host, a, sizeof(host)));
    T_CHECK(host[0] == 11 && host[1] == 7 && host[2] == 33 && host[3] == 44, "a = {%u, %u, %u, %u}",
            host[0], host[1], host[2], host[3]);
    T_OK(ctx, symaddr_memcpy(ctx, host, b, sizeof(host)));
    T_CHECK(memcmp(host, init, sizeof(init)) == 0, "b was written");
    MPI_Barrier(MPI_COMM_WORLD);
    T_STATUS(ctx, symaddr_map_check(ctx, NULL), SYMADDR_ERR_INVALID_MAP);
    T_OK(ctx, symaddr_finalize(&ctx));
}

/* ---- validation is exact: every byte of every access, each allocation its own bounds ------- */

/* Into the right neighbour's copy of dst: one element just past the end in the explicit,
 * buffer and atomic forms, an 8-byte element that straddles the end, and a block put one
 * element too long. Every one must be refused whole. */
__global__ void past_end_kernel(uint32_t *dst, size_t n, int target, const uint64_t *pb, int me,
                                symaddr_buffer_t buf, uint64_t *straddle, const uint64_t *spb)
{
    if (symaddr_block_thread() == 0 && symaddr_block_index() == 0) {
        symaddr_store_u32(dst + n, 0xdead0001u, target, pb, me);
        symaddr_buffer_store_u32(buf, n, 0xdead0002u, target);
        symaddr_atomic_add_u32(dst + n, 5u, target, pb, me);
        symaddr_store_u64(straddle, 0xdead0003dead0003ull, target, spb, me);
    }
    static const uint32_t src[4] = {0xdead0004u, 0xdead0004u, 0xdead0004u, 0xdead0004u};
    /* the last 3 elements of dst and 1 past its end: the block refused, not its first part */
    symaddr_put_block(dst + n - 3, src, sizeof(src), target, pb, me);
}

static void exact_bounds(symaddr_provider_kind_t kind)
{
    enum { M = 64 }; /* 256 bytes: the heap's next allocation starts right after */
    symaddr_config_t cfg;
    symaddr_context_t *ctx;
    symaddr_provider_t *prov, *ipc;
    symaddr_map_t *ma, *mb, *ms;
    uint32_t *a, *b, host[M];
    uint64_t *s;
    int right = (t_rank + 1) % t_size;
    symaddr_config_default(&cfg);
    cfg.validate = 1;
    T_OK(NULL, symaddr_init(MPI_COMM_WORLD, &cfg, &ctx));
    T_OK(ctx, symaddr_provider_get(ctx, kind, &prov));
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &ipc));
    /* heap allocations lie one after the other: an overrun of a would land in b */
    T_OK(ctx, symaddr_symmetric_alloc(prov, M * sizeof(uint32_t), (void **)&a, &ma));
    T_OK(ctx, symaddr_symmetric_alloc(prov, M * sizeof(uint32_t), (void **)&b, &mb));
    T_OK(ctx, symaddr_symmetric_alloc(ipc, 12, (void **)&s, &ms)); /* 8-byte element at 8: past */
    T_CHECK(kind != SYMADDR_PROVIDER_HEAP || b == a + M, "the heap's next allocation at %p, not %p",
            (void *)b, (void *)(a + M));
    for (int i = 0; i < M; i++)
        host[i] = 1000u * (uint32_t)t_rank + (uint32_t)i;
    T_OK(ctx, symaddr_memcpy(ctx, a, host, sizeof(host)));
    T_OK(ctx, symaddr_memcpy(ctx, b, host, sizeof(host)));
    T_OK(ctx, symaddr_stream_sync(ctx, NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    symaddr_buffer_t buf;
    T_OK(ctx, symaddr_buffer_bind(ma, a, &buf));
    launched(SYMADDR_LAUNCH(past_end_kernel, 1, 64, NULL, a, (size_t)M, right, ma->peer_bases,
                            t_rank, buf, s + 1, ms->peer_bases));
    T_STATUS(ctx, symaddr_map_check(ctx, ma), SYMADDR_ERR_OUT_OF_BOUNDS);
    T_STATUS(ctx, symaddr_map_check(ctx, ms), SYMADDR_ERR_OUT_OF_BOUNDS);
    T_OK(ctx, symaddr_stream_sync(ctx, NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    /* this rank's copies as its left neighbour's refused accesses left them: unchanged */
    int wrong_a = 0, wrong_b = 0;
    T_OK(ctx, symaddr_memcpy(ctx, host, a, sizeof(host)));
    for (int i = 0; i < M; i++)
        wrong_a += host[i] != 1000u * (uint32_t)t_rank + (uint32_t)i;
    T_OK(ctx, symaddr_memcpy(ctx, host, b, sizeof(host)));
    for (int i = 0; i < M; i++)
        wrong_b += host[i] != 1000u * (uint32_t)t_rank + (uint32_t)i;
    T_CHECK(wrong_a == 0 && wrong_b == 0,
            "%s: %d elements of the allocation and %d of the next "
            "were written by refused accesses",
            symaddr_provider_name(kind), wrong_a, wrong_b);
    MPI_Barrier(MPI_COMM_WORLD);
    T_OK(ctx, symaddr_finalize(&ctx));
}

static void test_exact_bounds(void *unused)
{
    (void)unused;
    if (!one_node())
        return;
    exact_bounds(SYMADDR_PROVIDER_HEAP);
    exact_bounds(SYMADDR_PROVIDER_IPC);
}

/* ---- capabilities: what a map lacks, its atomics and signals refuse ------------------------- */

/* Into the right neighbour's words: explicit add (system scope), buffer add, explicit signal,
 * buffer signal; then a buffer wait on a word preset to 1. */
__global__ void caps_kernel(uint64_t *w, int target, const uint64_t *pb, int me,
                            symaddr_buffer_t buf, int *status)
{
    symaddr_atomic_add_u64(w, 5, target, pb, me);
    (void)symaddr_buffer_atomic_fetch_add_u64(buf, 1, 7, target);
    symaddr_signal_set(w + 2, 9, target, pb, me);
    symaddr_buffer_signal_add(buf, 3, 11, target);
    *status = symaddr_buffer_signal_wait_until(buf, 4, 1, 30ull * 1000000000ull);
}

/* The same words through a map with every capability, then through a second context's foreign
 * table of them that vouches for load/store only: there every atomic and signal is skipped and
 * recorded (validation), and the buffer wait refuses at once. */
static void test_capabilities_honoured(void *unused)
{
    if (!one_node())
        return;
    symaddr_config_t cfg;
    symaddr_context_t *full, *lim;
    symaddr_provider_t *ipc;
    symaddr_map_t *m, *lm;
    uint64_t *w, host[8];
    const uint64_t init[8] = {0, 0, 0, 0, 1, 0, 0, 0};
    int right = (t_rank + 1) % t_size, st = -99;
    (void)unused;
    symaddr_config_default(&cfg);
    cfg.validate = 1;
    T_OK(NULL, symaddr_init(MPI_COMM_WORLD, &cfg, &full));
    T_OK(NULL, symaddr_init(MPI_COMM_WORLD, &cfg, &lim));
    T_OK(full, symaddr_provider_get(full, SYMADDR_PROVIDER_IPC, &ipc));
    T_OK(full, symaddr_symmetric_alloc(ipc, sizeof(init), (void **)&w, &m));
    T_OK(lim, symaddr_register_peer_table(lim, w, sizeof(init), m->host_peer_bases,
                                          SYMADDR_CAP_LOAD_STORE, &lm));
    int *status = NULL;
    T_OK(full, symaddr_mem_alloc(full, sizeof(int), (void **)&status));
    symaddr_buffer_t fb, lb;
    T_OK(full, symaddr_buffer_bind(m, w, &fb));
    T_OK(lim, symaddr_buffer_bind(lm, w, &lb));
    T_CHECK((m->capabilities & SYMADDR_CAP_COHERENT) && !(lm->capabilities & SYMADDR_CAP_ATOMICS));
    for (int pass = 0; pass < 2; pass++) {
        const symaddr_map_t *use = pass ? m : lm;
        T_OK(full, symaddr_memcpy(full, w, init, sizeof(init)));
        T_OK(full, symaddr_stream_sync(full, NULL));
        MPI_Barrier(MPI_COMM_WORLD);
        T_OK(full, SYMADDR_LAUNCH(caps_kernel, 1, 1, NULL, w, right, use->peer_bases, t_rank,
                                  pass ? fb : lb, status));
        T_OK(full, symaddr_stream_sync(full, NULL));
        MPI_Barrier(MPI_COMM_WORLD);
        T_OK(full, symaddr_memcpy(full, &st, status, sizeof(st)));
        T_OK(full, symaddr_memcpy(full, host, w, sizeof(host)));
        if (pass) {
            T_OK(full, symaddr_map_check(full, m));
            T_CHECK(st == SYMADDR_OK, "the wait on a coherent map returned %d", st);
            T_CHECK(host[0] == 5 && host[1] == 7 && host[2] == 9 && host[3] == 11 && host[4] == 1,
                    "full map: {%llu, %llu, %llu, %llu, %llu}", (unsigned long long)host[0],
                    (unsigned long long)host[1], (unsigned long long)host[2],
                    (unsigned long long)host[3], (unsigned long long)host[4]);
        } else {
            T_STATUS(lim, symaddr_map_check(lim, lm), SYMADDR_ERR_UNSUPPORTED);
            T_CHECK(st == SYMADDR_ERR_UNSUPPORTED, "the wait on a map without coherence: %d", st);
            T_CHECK(memcmp(host, init, sizeof(init)) == 0, "a refused atomic or signal landed");
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    T_OK(lim, symaddr_unregister(lim, lm));
    T_OK(full, symaddr_mem_free(full, status));
    T_OK(full, symaddr_symmetric_free(ipc, w));
    T_OK(lim, symaddr_finalize(&lim));
    T_OK(full, symaddr_finalize(&full));
}

/* ---- collectives between nodes, consumed on the caller's stream --------------------------- */

__global__ void copy_kernel(float *dst, const float *src, size_t n)
{
    for (size_t i = symaddr_grid_thread(); i < n; i += symaddr_grid_threads())
        dst[i] = src[i];
}

/* Across two (simulated) nodes every step of allreduce, allgather and broadcast, the last node
 * broadcast included, runs on the caller's stream: a kernel queued right after on that stream,
 * a non-blocking one on GPUs, reads the finished result. */
static void test_stream_across_nodes(void *unused)
{
    (void)unused;
    symaddr_context_t *ctx = t_two_node_context();
    if (!ctx)
        return;
    const size_t n = (size_t)1 << 20; /* large enough that a missed ordering shows */
    symaddr_provider_t *ipc;
    symaddr_map_t *m;
    float *a, *b, *out;
    void *stream = NULL;
#if !defined(SYMADDR_KERNELS_CPU)
    hipStream_t s;
    T_CHECK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking) == hipSuccess);
    stream = s;
#endif
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &ipc));
    T_OK(ctx, symaddr_symmetric_alloc(ipc, n * (size_t)t_size * sizeof(float), (void **)&a, &m));
    T_OK(ctx, symaddr_symmetric_alloc(ipc, n * (size_t)t_size * sizeof(float), (void **)&b, &m));
    T_OK(ctx, symaddr_mem_alloc(ctx, n * (size_t)t_size * sizeof(float), (void **)&out));
    float *h = (float *)malloc(n * (size_t)t_size * sizeof(float));
    for (int c = 0; c < 3; c++) {
        size_t count = c == 1 ? n / (size_t)t_size : n, total = c == 1 ? count * t_size : count;
        for (size_t i = 0; i < count; i++)
            h[i] = value_of(t_rank, i % 4096);
        T_OK(ctx, symaddr_memcpy(ctx, a, h, count * sizeof(float)));
        MPI_Barrier(MPI_COMM_WORLD);
        if (c == 0)
            T_OK(ctx, symaddr_allreduce(ctx, a, b, count, SYMADDR_FLOAT32, SYMADDR_MAX, stream));
        else if (c == 1)
            T_OK(ctx, symaddr_allgather(ctx, a, b, count, SYMADDR_FLOAT32, stream));
        else
            T_OK(ctx, symaddr_broadcast(ctx, a, b, count, SYMADDR_FLOAT32, 0, stream));
        launched(SYMADDR_LAUNCH(copy_kernel, 256, 256, stream, out, b, total));
        T_OK(ctx, symaddr_stream_sync(ctx, stream)); /* this stream only */
        T_OK(ctx, symaddr_memcpy(ctx, h, out, total * sizeof(float)));
        int bad = 0;
        for (size_t i = 0; i < total; i++) {
            int from = c == 0 ? t_size - 1 : c == 1 ? (int)(i / count) : 0;
            bad += h[i] != value_of(from, (c == 1 ? i % count : i) % 4096);
        }
        static const char *const what[] = {"allreduce", "allgather", "broadcast"};
        T_CHECK(bad == 0, "%s between nodes, read on its stream: %d wrong", what[c], bad);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(h);
    T_OK(ctx, symaddr_mem_free(ctx, out));
    T_OK(ctx, symaddr_symmetric_free(ipc, a));
    T_OK(ctx, symaddr_symmetric_free(ipc, b));
#if !defined(SYMADDR_KERNELS_CPU)
    T_CHECK(hipStreamDestroy(s) == hipSuccess);
#endif
    T_OK(ctx, symaddr_finalize(&ctx));
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    g_ctx = t_context(MPI_COMM_WORLD, NULL);
    const char *prov = getenv("SYMADDR_TEST_PROVIDER");
    if (prov && !strcmp(prov, "vmm")) {
        symaddr_provider_t *p;
        g_kind = SYMADDR_PROVIDER_VMM;
        if (symaddr_provider_get(g_ctx, g_kind, &p) == SYMADDR_ERR_UNSUPPORTED) {
            if (t_rank == 0)
                printf("skip   - all: %s\n0 passed, 0 failed, 1 skipped\n",
                       symaddr_last_error(g_ctx));
            symaddr_finalize(&g_ctx);
            MPI_Finalize();
            return 77;
        }
    }
    if (t_rank == 0)
        printf("# backend %s, %d ranks, %d per node, main buffers from the %s provider\n",
               symaddr_backend_name(symaddr_backend(g_ctx)), t_size, symaddr_node_size(g_ctx),
               g_kind == SYMADDR_PROVIDER_VMM ? "vmm" : "ipc");
    T_RUN(test_put_kernel, NULL);
    T_RUN(test_get_block_and_host_calls, NULL);
    T_RUN(test_bulk_put_get, NULL);
    T_RUN(test_typed, NULL);
    T_RUN(test_atomics, NULL);
    T_RUN(test_mixed_providers, NULL);
    T_RUN(test_mixed_foreign, NULL);
    T_RUN(test_heap_bases, NULL);
    T_RUN(test_signals, NULL);
    T_RUN(test_mispairing, NULL);
    T_RUN(test_exact_bounds, NULL);
    T_RUN(test_capabilities_honoured, NULL);
    T_RUN(test_stream_across_nodes, NULL);
    symaddr_finalize(&g_ctx);
    return t_finish();
}
