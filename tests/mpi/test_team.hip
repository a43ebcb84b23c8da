/* SPDX-License-Identifier: MIT */
/* symaddr/team.h's blocks in kernels of the test's own, one source for every backend: the grid
 * barrier orders every block's stores before every peer block's loads, a two-shot and a
 * broadcast built from the blocks give exact values (rank + 1 data, odd sizes, views at odd
 * offsets) against sequential references over many calls, and a rank that never arrives, or a
 * Lamport chunk that arrives but for one word, makes every rank fail instead of hang. */
#include "runtime.h"

#include "symaddr/team.h"

#include "harness.h"

#define N 1001 /* odd: the 16-byte paths leave tails */
#define CALLS 12
#define CHUNKS_PER_BLOCK 37

static symaddr_context_t *g_ctx;

static void launched(symaddr_status_t st) { T_OK(g_ctx, st); }

/* ctx's team with a kernel deadline of ms: the team carries the deadline it was got with. */
static void team_with_timeout(symaddr_context_t *ctx, unsigned ms, symaddr_team_t *team_p)
{
    T_OK(ctx, symaddr_timeout_set(ctx, ms));
    T_OK(ctx, symaddr_team_get(ctx, team_p));
}

static unsigned grid_blocks(const symaddr_team_t *t)
{
#if defined(SYMADDR_KERNELS_CPU)
    (void)t;
    return 1;
#else
    return t->max_blocks < 8 ? t->max_blocks : 8;
#endif
}

/* A chunk's words: who wrote it, from which block, in which call. */
SYMADDR_HOSTDEVFN uint32_t word_of(int call, int node_rank, unsigned block, size_t k, int j)
{
    return (uint32_t)call << 24 ^ (uint32_t)node_rank << 16 ^ (uint32_t)block << 8 ^
           (uint32_t)(k * 4 + (size_t)j);
}

/* Each block stores its chunks into every peer, then, after the grid barrier, checks another
 * block's chunks from every peer: only a barrier of the whole grid orders those. */
__global__ void grid_order_kernel(symaddr_team_t team, uint32_t *buf, const uint64_t *pb, int call,
                                  unsigned long long *wrong)
{
    symaddr_team_call_t c = symaddr_team_begin(&team);
    unsigned b = symaddr_block_index(), nb = symaddr_grid_blocks();
    for (size_t k = symaddr_block_thread(); k < CHUNKS_PER_BLOCK; k += symaddr_block_threads()) {
        uint32_t w[4];
        for (int j = 0; j < 4; j++)
            w[j] = word_of(call, team.node_rank, b, k, j);
        size_t at = ((size_t)team.node_rank * nb + b) * CHUNKS_PER_BLOCK + k;
        symaddr_team_put16_all(&team, buf + 4 * at, pb, w);
    }
    if (symaddr_team_barrier_grid(&team, &c, 1)) {
        unsigned other = (b + 1) % nb;
        unsigned long long bad = 0;
        for (int q = 0; q < team.node_size; q++)
            for (size_t k = symaddr_block_thread(); k < CHUNKS_PER_BLOCK;
                 k += symaddr_block_threads())
                for (int j = 0; j < 4; j++)
                    bad += buf[4 * (((size_t)q * nb + other) * CHUNKS_PER_BLOCK + k) + (size_t)j] !=
                           word_of(call, q, other, k, j);
        if (bad)
            symaddr_prim_add_u64((uint64_t *)wrong, bad, 0);
        /* nobody stores the next call's chunks before every block here has read these */
        symaddr_team_barrier_grid(&team, &c, 2);
    }
    symaddr_team_end(&team, &c, 0);
}

static void test_grid_barrier(void *unused)
{
    (void)unused;
    symaddr_team_t team;
    symaddr_provider_t *prov;
    symaddr_map_t *m;
    uint32_t *buf;
    unsigned long long *wrong, got = 0;
    T_OK(g_ctx, symaddr_team_get(g_ctx, &team));
    unsigned nb = grid_blocks(&team);
    size_t bytes = (size_t)team.node_size * nb * CHUNKS_PER_BLOCK * 16;
    T_OK(g_ctx, symaddr_provider_get(g_ctx, SYMADDR_PROVIDER_IPC, &prov));
    T_OK(g_ctx, symaddr_symmetric_alloc(prov, bytes, (void **)&buf, &m));
    T_OK(g_ctx, symaddr_mem_alloc(g_ctx, sizeof(*wrong), (void **)&wrong));
    T_OK(g_ctx, symaddr_memcpy(g_ctx, wrong, &got, sizeof(got)));
    T_OK(g_ctx, symaddr_barrier(g_ctx, NULL));
    for (int call = 1; call <= CALLS; call++)
        launched(SYMADDR_LAUNCH(grid_order_kernel, nb, 128, NULL, team, buf, m->peer_bases, call,
                                wrong));
    T_OK(g_ctx, symaddr_stream_sync(g_ctx, NULL));
    T_OK(g_ctx, symaddr_memcpy(g_ctx, &got, wrong, sizeof(got)));
    T_CHECK(got == 0, "%llu words read after the grid barrier were not what peers stored", got);
    T_OK(g_ctx, symaddr_mem_free(g_ctx, wrong));
    T_OK(g_ctx, symaddr_symmetric_free(prov, buf));
}

/* A two-shot allreduce of n floats from the blocks: reduce this rank's part from every peer's x
 * into out, then store it into every peer's out. */
__global__ void twoshot_kernel(symaddr_team_t team, const float *x, const uint64_t *xpb, float *out,
                               const uint64_t *opb, size_t n)
{
    symaddr_team_call_t c = symaddr_team_begin(&team);
    size_t lo, hi;
    symaddr_team_share(&team, n, 4, &lo, &hi);
    if (symaddr_team_barrier_grid(&team, &c, 1)) {
        symaddr_team_reduce_sum_f32(&team, x, xpb, out, lo, hi);
        /* the part is reduced by other threads than those that store it */
        if (symaddr_team_barrier_grid(&team, &c, 2)) {
            symaddr_team_allgather_bytes(&team, out + lo, out + lo, opb, (hi - lo) * sizeof(float));
            symaddr_team_barrier_grid(&team, &c, 3);
        }
    }
    symaddr_team_end(&team, &c, 0);
}

/* Node rank root's src to dst, between two block barriers. */
__global__ void broadcast_kernel(symaddr_team_t team, int root, const char *src,
                                 const uint64_t *spb, char *dst, size_t bytes)
{
    symaddr_team_call_t c = symaddr_team_begin(&team);
    if (symaddr_team_barrier_block(&team, &c, 1)) {
        symaddr_team_broadcast_bytes(&team, root, src, spb, dst, bytes);
        symaddr_team_barrier_block(&team, &c, 2);
    }
    symaddr_team_end(&team, &c, 0);
}

/* The one-shot (Lamport) f32 allreduce block. */
__global__ void lamport_kernel(symaddr_team_t team, const float *x, float *out, size_t n)
{
    symaddr_team_call_t c = symaddr_team_begin(&team);
    symaddr_team_allreduce_sum_f32(&team, &c, x, out, n);
    symaddr_team_end(&team, &c, 1);
}

static float x_of(int rank, int call, size_t i)
{
    return (float)(rank + 1) * (float)(i % 7 + 1) + (float)call;
}

static void upload(float *dev, int call, size_t n)
{
    float *h = (float *)malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        h[i] = x_of(t_rank, call, i);
    T_OK(g_ctx, symaddr_memcpy(g_ctx, dev, h, n * sizeof(float)));
    free(h);
}

/* out must hold the sum over the node of x_of(.., call, i); the node is the whole world here. */
static void check_sum(const float *dev, int call, size_t n, const char *what)
{
    float *h = (float *)malloc(n * sizeof(float));
    T_OK(g_ctx, symaddr_memcpy(g_ctx, h, dev, n * sizeof(float)));
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        float want = 0;
        for (int r = 0; r < t_size; r++)
            want += x_of(r, call, i);
        bad += h[i] != want;
    }
    T_CHECK(bad == 0, "%s, call %d: %zu of %zu elements wrong", what, call, bad, n);
    free(h);
}

static void test_twoshot_and_lamport(void *unused)
{
    (void)unused;
    symaddr_team_t team;
    symaddr_provider_t *prov;
    symaddr_map_t *mx, *mo;
    float *x, *out;
    T_OK(g_ctx, symaddr_team_get(g_ctx, &team));
    if (team.node_size != t_size) {
        T_SKIP("the node has %d of the %d ranks; the references sum over all", team.node_size,
               t_size);
        return;
    }
    T_OK(g_ctx, symaddr_provider_get(g_ctx, SYMADDR_PROVIDER_IPC, &prov));
    T_OK(g_ctx, symaddr_symmetric_alloc(prov, (N + 1) * sizeof(float), (void **)&x, &mx));
    T_OK(g_ctx, symaddr_symmetric_alloc(prov, (N + 1) * sizeof(float), (void **)&out, &mo));
    for (int call = 0; call < CALLS; call++) {
        /* views one float in: no 16-byte path, odd length */
        upload(x + 1, call, N);
        T_OK(g_ctx, symaddr_stream_sync(g_ctx, NULL));
        launched(SYMADDR_LAUNCH(twoshot_kernel, grid_blocks(&team), 128, NULL, team, x + 1,
                                mx->peer_bases, out + 1, mo->peer_bases, (size_t)N));
        T_OK(g_ctx, symaddr_stream_sync(g_ctx, NULL));
        check_sum(out + 1, call, N, "two-shot");
        launched(SYMADDR_LAUNCH(lamport_kernel, grid_blocks(&team), 128, NULL, team, x + 1, out + 1,
                                (size_t)N));
        T_OK(g_ctx, symaddr_stream_sync(g_ctx, NULL));
        check_sum(out + 1, call, N, "Lamport");
        /* both kernels are collective calls of the context, in order with its own */
        T_OK(g_ctx, symaddr_barrier(g_ctx, NULL));
    }
    T_OK(g_ctx, symaddr_symmetric_free(prov, x));
    T_OK(g_ctx, symaddr_symmetric_free(prov, out));
}

static void test_broadcast(void *unused)
{
    (void)unused;
    symaddr_team_t team;
    symaddr_provider_t *prov;
    symaddr_map_t *m;
    char *src, *dst;
    const size_t bytes = 3 * N;
    T_OK(g_ctx, symaddr_team_get(g_ctx, &team));
    T_OK(g_ctx, symaddr_provider_get(g_ctx, SYMADDR_PROVIDER_IPC, &prov));
    T_OK(g_ctx, symaddr_symmetric_alloc(prov, bytes + 3, (void **)&src, &m));
    T_OK(g_ctx, symaddr_mem_alloc(g_ctx, bytes, (void **)&dst));
    char *h = (char *)malloc(bytes);
    for (int root = team.node_size - 1; root >= 0; root -= team.node_size > 2 ? 2 : 1) {
        for (size_t i = 0; i < bytes; i++)
            h[i] = (char)((size_t)(team.node_rank + 1) * 31 + i);
        T_OK(g_ctx, symaddr_memcpy(g_ctx, src + 3, h, bytes)); /* a view 3 bytes in */
        T_OK(g_ctx, symaddr_memcpy(g_ctx, dst, h, 1));
        T_OK(g_ctx, symaddr_barrier(g_ctx, NULL));
        launched(SYMADDR_LAUNCH(broadcast_kernel, 1, 128, NULL, team, root, src + 3, m->peer_bases,
                                dst, bytes));
        T_OK(g_ctx, symaddr_stream_sync(g_ctx, NULL));
        T_OK(g_ctx, symaddr_memcpy(g_ctx, h, dst, bytes));
        size_t bad = 0;
        for (size_t i = 0; i < bytes; i++)
            bad += h[i] != (char)((size_t)(root + 1) * 31 + i);
        T_CHECK(bad == 0, "broadcast from node rank %d: %zu of %zu bytes wrong", root, bad, bytes);
    }
    free(h);
    T_OK(g_ctx, symaddr_mem_free(g_ctx, dst));
    T_OK(g_ctx, symaddr_symmetric_free(prov, src));
}

/* Node rank 1 arrives and signals node rank 0 only, as a rank stopped in the middle of its
 * signals does (its view of the team ends at node rank 1). Node rank 0 has every signal and
 * passes, so the ranks that wait in vain for node rank 1's signal must pass too, once their
 * deadline finds that it arrived: no rank may fail a barrier that another one passed. */
__global__ void half_signalled_kernel(symaddr_team_t team, int *passed)
{
    symaddr_team_call_t c = symaddr_team_begin(&team);
    symaddr_team_t view = team;
    if (team.node_rank == 1)
        view.node_size = 2;
    int ok = symaddr_team_barrier_block(&view, &c, 1);
    if (symaddr_block_thread() == 0)
        *passed = ok;
    symaddr_team_end(&team, &c, 0);
}

static void test_barrier_stopped_signaller(void *unused)
{
    (void)unused;
    symaddr_config_t cfg;
    symaddr_context_t *ctx;
    symaddr_team_t team;
    int *passed, mine = -1, *all = (int *)malloc(sizeof(int) * (size_t)t_size);
    symaddr_config_default(&cfg); /* the setup's deadline; the kernel's is set below */
    if (!T_INIT_OK(&cfg, &ctx))
        return; /* no context to use */
    T_OK(ctx, symaddr_team_get(ctx, &team));
    if (team.node_size < 3) {
        symaddr_finalize(&ctx);
        free(all);
        T_SKIP("needs 3 ranks on a node: one that passes, one stopped, one left waiting");
        return;
    }
    T_OK(ctx, symaddr_mem_alloc(ctx, sizeof(int), (void **)&passed));
    T_OK(ctx, symaddr_memcpy(ctx, passed, &mine, sizeof(int)));
    T_OK(ctx, symaddr_barrier(ctx, NULL));
    team_with_timeout(ctx, 1000, &team);
    T_OK(ctx, SYMADDR_LAUNCH(half_signalled_kernel, 1, 128, NULL, team, passed));
    symaddr_status_t st = symaddr_stream_sync(ctx, NULL);
    T_CHECK(st == SYMADDR_OK, "node rank %d: %s after a barrier node rank 0 passed", team.node_rank,
            symaddr_strerror(st));
    T_OK(ctx, symaddr_memcpy(ctx, &mine, passed, sizeof(int)));
    MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < t_size; r++)
        T_CHECK(all[r] == 1, "rank %d: the barrier returned %d, and node rank 0's returned %d", r,
                all[r], all[0]);
    T_OK(ctx, symaddr_timeout_set(ctx, T_INIT_TIMEOUT_MS));
    T_OK(ctx, symaddr_barrier(ctx, NULL)); /* and the context goes on */
    T_OK(ctx, symaddr_stream_sync(ctx, NULL));
    symaddr_mem_free(ctx, passed);
    free(all);
    symaddr_finalize(&ctx);
}

/* Every rank stores chunk 0 of its Lamport slot into every node peer's buffer, one word
 * (missing) left out: that word stays EMPTY there, so the chunk has not arrived, and the take
 * must give up at the deadline rather than hand the EMPTY word on as data. */
__global__ void partial_chunk_kernel(symaddr_team_t team, int missing)
{
    symaddr_team_call_t c = symaddr_team_begin(&team);
    if (symaddr_grid_thread() == 0) {
        uint32_t *mine = symaddr_team_slot_(&team, &c, team.node_rank);
        for (int q = 0; q < team.node_size; q++) {
            volatile uint32_t *there =
                (volatile uint32_t *)symaddr_team_peer(&team, mine, team.sync_pb, q);
            for (int j = 0; j < 4; j++)
                if (j != missing)
                    there[j] = (uint32_t)(team.node_rank + 1) << 8 | (uint32_t)j;
        }
        uint32_t w[SYMADDR_TEAM_TAKE_MAX][4];
        int ok = 1;
        for (int q0 = 0; q0 < team.node_size && ok; q0 += SYMADDR_TEAM_TAKE_MAX)
            ok = symaddr_team_take16_n(&team, &c, q0,
                                       team.node_size - q0 < SYMADDR_TEAM_TAKE_MAX
                                           ? team.node_size - q0
                                           : SYMADDR_TEAM_TAKE_MAX,
                                       0, w);
    }
    symaddr_team_end(&team, &c, 1);
}

/* A chunk is taken only once all four of its words arrived: with any one of them missing,
 * every rank reports the deadline (or a peer's failure), never OK. */
static void test_lamport_partial_chunk(void *unused)
{
    (void)unused;
    for (int missing = 0; missing < 4; missing++) {
        symaddr_config_t cfg;
        symaddr_context_t *ctx;
        symaddr_team_t team;
        symaddr_config_default(&cfg);
        MPI_Barrier(MPI_COMM_WORLD);
        if (!T_INIT_OK(&cfg, &ctx))
            return; /* no context to use */
        T_OK(ctx, symaddr_barrier(ctx, NULL));
        /* the take's deadline (the setup's is the long one): the ranks left the last round at
         * their own times */
        team_with_timeout(ctx, 1500, &team);
        T_OK(ctx, SYMADDR_LAUNCH(partial_chunk_kernel, 1, 32, NULL, team, missing));
        symaddr_status_t st = symaddr_stream_sync(ctx, NULL);
        T_CHECK(st == SYMADDR_ERR_TIMEOUT || st == SYMADDR_ERR_BROKEN,
                "node rank %d: got %s from a take whose word %d never arrived, want a timeout "
                "or broken",
                team.node_rank, symaddr_strerror(st), missing);
        symaddr_finalize(&ctx);
    }
}

/* Rank 0 never launches: every other rank's grid barrier gives up at the deadline, and every
 * rank, rank 0 included, reports the failure from its next call instead of OK. */
static void test_grid_barrier_timeout(void *unused)
{
    (void)unused;
    symaddr_config_t cfg;
    symaddr_context_t *ctx;
    symaddr_team_t team;
    symaddr_provider_t *prov;
    symaddr_map_t *m;
    uint32_t *buf;
    unsigned long long *wrong;
    symaddr_config_default(&cfg); /* the setup's deadline; the kernel's is set below */
    if (!T_INIT_OK(&cfg, &ctx))
        return; /* no context to use */
    T_OK(ctx, symaddr_team_get(ctx, &team));
    if (team.node_size < 2) {
        symaddr_finalize(&ctx);
        T_SKIP("the node has one rank: no peer to miss");
        return;
    }
    unsigned nb = grid_blocks(&team);
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &prov));
    T_OK(ctx, symaddr_symmetric_alloc(prov, (size_t)team.node_size * nb * CHUNKS_PER_BLOCK * 16,
                                      (void **)&buf, &m));
    T_OK(ctx, symaddr_mem_alloc(ctx, sizeof(*wrong), (void **)&wrong));
    T_OK(ctx, symaddr_barrier(ctx, NULL));
    team_with_timeout(ctx, 1500, &team);
    double t0 = MPI_Wtime();
    if (team.node_rank != 0)
        T_OK(ctx,
             SYMADDR_LAUNCH(grid_order_kernel, nb, 128, NULL, team, buf, m->peer_bases, 1, wrong));
    symaddr_status_t st = team.node_rank != 0 ? symaddr_stream_sync(ctx, NULL) : SYMADDR_OK;
    MPI_Barrier(MPI_COMM_WORLD); /* the peers gave up: rank 0 learns it from its next call */
    if (team.node_rank == 0)
        st = symaddr_stream_sync(ctx, NULL);
    T_CHECK(st == SYMADDR_ERR_TIMEOUT || st == SYMADDR_ERR_BROKEN,
            "node rank %d: got %s after a peer never arrived, want a timeout or broken",
            team.node_rank, symaddr_strerror(st));
    T_CHECK(MPI_Wtime() - t0 < 30, "the failure took %.1f s to surface", MPI_Wtime() - t0);
    symaddr_mem_free(ctx, wrong);
    symaddr_symmetric_free(prov, buf);
    symaddr_finalize(&ctx);
}

/* Misuse: every rank pushes chunks 0 to n - 1 of its Lamport slot into every node peer, and no
 * rank takes them. */
__global__ void push_only_kernel(symaddr_team_t team, size_t n)
{
    symaddr_team_call_t c = symaddr_team_begin(&team);
    if (symaddr_grid_thread() == 0)
        for (size_t k = 0; k < n; k++) {
            const uint32_t w[4] = {0x447a0000u, 0x447a0000u, 0x447a0000u, 0x447a0000u}; /* 1000 */
            symaddr_team_push16(&team, &c, k, w);
        }
    symaddr_team_end(&team, &c, 1);
}

/* A team kernel's Lamport chunks left in its sync area (pushed, never taken) stay out of the
 * host's Lamport allreduces: each of the next six (every buffer twice) returns OK with the exact
 * sums. The team area was the host collectives' once, and every third one then returned OK with
 * the stale 1000s in its sums. */
static void test_team_leftovers(void *unused)
{
    (void)unused;
    symaddr_config_t cfg;
    symaddr_context_t *ctx;
    symaddr_team_t team;
    symaddr_provider_t *prov;
    symaddr_map_t *mx, *mo;
    float *x, *out;
    symaddr_config_default(&cfg);
    cfg.allreduce_algo = SYMADDR_ALLREDUCE_LAMPORT;
    if (!T_INIT_OK(&cfg, &ctx))
        return;
    symaddr_context_t *saved = g_ctx;
    g_ctx = ctx; /* upload and check_sum use it */
    T_OK(ctx, symaddr_team_get(ctx, &team));
    if (team.node_size != t_size) {
        T_SKIP("the node has %d of the %d ranks; the references sum over all", team.node_size,
               t_size);
    } else {
        size_t n = 101; /* floats: 26 chunks of 16 bytes, the last one partly */
        T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &prov));
        T_OK(ctx, symaddr_symmetric_alloc(prov, (n + 1) * sizeof(float), (void **)&x, &mx));
        T_OK(ctx, symaddr_symmetric_alloc(prov, (n + 1) * sizeof(float), (void **)&out, &mo));
        T_OK(ctx, SYMADDR_LAUNCH(push_only_kernel, 1, 32, NULL, team, (n + 3) / 4));
        T_OK(ctx, symaddr_stream_sync(ctx, NULL));
        for (int call = 0; call < 6; call++) {
            upload(x, call, n);
            T_OK(ctx, symaddr_allreduce(ctx, x, out, n, SYMADDR_FLOAT32, SYMADDR_SUM, NULL));
            T_OK(ctx, symaddr_stream_sync(ctx, NULL));
            check_sum(out, call, n, "host Lamport allreduce after a team kernel's leftovers");
        }
        T_OK(ctx, symaddr_symmetric_free(prov, x));
        T_OK(ctx, symaddr_symmetric_free(prov, out));
    }
    g_ctx = saved;
    T_OK(ctx, symaddr_finalize(&ctx));
}

/* One barrier of the team: the kernel a rank skips below. */
__global__ void team_barrier_kernel(symaddr_team_t team)
{
    symaddr_team_call_t c = symaddr_team_begin(&team);
    symaddr_team_barrier_block(&team, &c, 1);
    symaddr_team_end(&team, &c, 0);
}

/* Misuse: the last rank skips a team kernel the others run. Its peers' kernel fails at the
 * deadline, and then no rank's host collective returns OK: the skipped call never pairs the
 * others' team kernel with the last rank's allreduce. */
static void test_team_skipped(void *unused)
{
    (void)unused;
    symaddr_config_t cfg;
    symaddr_context_t *ctx;
    symaddr_team_t team;
    symaddr_provider_t *prov;
    symaddr_map_t *mx, *mo;
    float *x, *out;
    symaddr_config_default(&cfg); /* the setup's deadline; the steps' is set below */
    MPI_Barrier(MPI_COMM_WORLD);
    if (!T_INIT_OK(&cfg, &ctx))
        return;
    symaddr_context_t *saved = g_ctx;
    g_ctx = ctx;
    size_t n = 37;
    T_OK(ctx, symaddr_team_get(ctx, &team));
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &prov));
    T_OK(ctx, symaddr_symmetric_alloc(prov, n * sizeof(float), (void **)&x, &mx));
    T_OK(ctx, symaddr_symmetric_alloc(prov, n * sizeof(float), (void **)&out, &mo));
    upload(x, 0, n);
    T_OK(ctx, symaddr_barrier(ctx, NULL));
    /* the skipped barrier's wait, and the allreduce's after it */
    team_with_timeout(ctx, 1500, &team);
    symaddr_status_t st = SYMADDR_OK;
    if (t_rank != t_size - 1) {
        (void)SYMADDR_LAUNCH(team_barrier_kernel, 1, 32, NULL, team);
        st = symaddr_stream_sync(ctx, NULL);
    }
    if (st == SYMADDR_OK)
        st = symaddr_allreduce(ctx, x, out, n, SYMADDR_FLOAT32, SYMADDR_SUM, NULL);
    if (st == SYMADDR_OK)
        st = symaddr_stream_sync(ctx, NULL);
    T_CHECK(st != SYMADDR_OK,
            "rank %d: the team kernel and allreduce returned OK though rank %d "
            "skipped the team kernel",
            t_rank, t_size - 1);
    g_ctx = saved;
    symaddr_finalize(&ctx);
}

/* A failure one node's team kernels record, on a node the host has not asked since. */
__global__ void fail_kernel(symaddr_team_t team)
{
    if (symaddr_grid_thread() == 0)
        symaddr_team_fail(&team, SYMADDR_ERR_TIMEOUT);
}

/* The first node's team kernel fails and its ranks call nothing more before finalize, which is
 * where they see it. Every rank's finalize returns the same failure, soon: before, the first node
 * skipped finalize's agreement (its context broken) and the other node's ranks waited out the
 * timeout for it (10 s here), then returned TIMEOUT (issue 46). */
static void test_node_failure_at_finalize(void *unused)
{
    (void)unused;
    symaddr_config_t cfg;
    symaddr_context_t *ctx;
    symaddr_team_t team;
    if (t_size % 2) {
        T_SKIP("needs two nodes of as many ranks, have %d ranks", t_size);
        return;
    }
    symaddr_config_default(&cfg);
    cfg.node_size = t_size / 2;
    cfg.timeout_ms = 10000;
    MPI_Barrier(MPI_COMM_WORLD);
    if (!T_INIT_OK(&cfg, &ctx))
        return;
    T_OK(ctx, symaddr_team_get(ctx, &team));
    T_OK(ctx, symaddr_barrier(ctx, NULL));
    MPI_Barrier(MPI_COMM_WORLD); /* every rank is out of symaddr_barrier's last step */
    if (t_rank < t_size / 2)
        (void)SYMADDR_LAUNCH(fail_kernel, 1, 32, NULL, team);
    double t0 = MPI_Wtime();
    int mine = symaddr_finalize(&ctx), *all = (int *)malloc(sizeof(int) * (size_t)t_size);
    double took = MPI_Wtime() - t0;
    MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    int differ = 0;
    for (int r = 0; r < t_size; r++)
        differ += all[r] != all[0];
    /* the failure, or BROKEN where a node peer's kernel told this rank's first */
    T_CHECK(differ == 0 && (mine == SYMADDR_ERR_TIMEOUT || mine == SYMADDR_ERR_BROKEN),
            "finalize after the first node's kernel failed: rank %d returned %s, rank 0 %s", t_rank,
            symaddr_strerror((symaddr_status_t)mine), symaddr_strerror((symaddr_status_t)all[0]));
    T_CHECK(took < 5.0, "rank %d: finalize took %.1f s (the timeout is 10 s)", t_rank, took);
    free(all);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    g_ctx = t_context(MPI_COMM_WORLD, NULL);
    if (t_rank == 0)
        printf("# backend %s, %d ranks, %d per node\n",
               symaddr_backend_name(symaddr_backend(g_ctx)), t_size, symaddr_node_size(g_ctx));
    T_RUN(test_grid_barrier, NULL);
    T_RUN(test_twoshot_and_lamport, NULL);
    T_RUN(test_broadcast, NULL);
    T_RUN(test_team_leftovers, NULL); /* its own context */
    symaddr_finalize(&g_ctx);
    T_RUN(test_barrier_stopped_signaller, NULL); /* its own context */
    T_RUN(test_grid_barrier_timeout, NULL);      /* its own context, which it breaks */
    T_RUN(test_lamport_partial_chunk, NULL);     /* its own contexts, which it breaks */
    T_RUN(test_team_skipped, NULL);              /* its own context, which it breaks */
    T_RUN(test_node_failure_at_finalize, NULL);  /* its own context, which it breaks */
    return t_finish();
}
