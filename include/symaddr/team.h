/* SPDX-License-Identifier: MIT */
/**
 * @file team.h
 * Collective building blocks for the caller's own kernels, over the context's node, as
 * symaddr_team_get hands it out. symaddr's own collectives are made of these same blocks.
 *
 * A kernel that uses them is one collective call of the context:
 *  - every rank of the node launches it, in the same order relative to the context's other
 *    collectives, with the same grid (at most team.max_blocks blocks, so that every rank's
 *    blocks are resident at once on a GPU they share);
 *  - every thread of the grid calls symaddr_team_begin first and symaddr_team_end last;
 *  - on a failure (a peer late past team.timeout_ns, or one that failed and said so) a block
 *    returns 0 from the block that waited, records the status in the sync area, where the next
 *    host collective or symaddr_stream_sync of every node peer reports it, and the context is
 *    broken; the kernel should then skip to symaddr_team_end;
 *  - a barrier settles alike on every rank: a rank that arrived but was stopped before it told
 *    every peer counts as arrived for all of them, one that never arrived fails it for all, so
 *    no rank passes a barrier another rank failed.
 *
 * Team kernels have a sync area of their own (symaddr_team_get), so their misuse never changes
 * what symaddr's host collectives return. Among team kernels, a rank that skips one makes its
 * peers' next barrier or take fail at the deadline (reported as above); a Lamport chunk pushed
 * and never taken is not detected: the third Lamport call after it (the buffers rotate through
 * three) takes that chunk as data. Take every chunk a call pushes.
 *
 * Calls are numbered by an epoch kept in device memory (no host counter), so kernels using
 * these blocks can be captured in a CUDA or HIP graph and replayed.
 *
 * Memory ordering: symaddr_team_barrier_block orders every store a block made before it (local
 * or to peers' symmetric memory) before every load the peers' same block makes after it;
 * symaddr_team_barrier_grid does so for every block of the grid against every block of the
 * peers' grids. The Lamport blocks carry their data in the words that mark their arrival, so a
 * word taken is the word sent; they order nothing else. The data blocks (put16_all, reduce,
 * allgather, broadcast) order nothing: a barrier goes between a block's stores and the loads
 * that need them.
 *
 * The blocks, by the collective they make:
 *  - one-shot allreduce: symaddr_team_push16 and symaddr_team_take16 (Lamport), or
 *    symaddr_team_allreduce_sum_f32 for f32;
 *  - two-shot: symaddr_team_share (this rank's part), a barrier, symaddr_team_reduce_sum_f32
 *    (reduce-scatter by loads from every peer), then symaddr_team_put16_all or
 *    symaddr_team_allgather_bytes (all-gather by stores into every peer), a barrier;
 *  - broadcast: a barrier, symaddr_team_broadcast_bytes (loads from the root), a barrier;
 *  - symaddr_team_peer: a node peer's copy of any symmetric address, for the rest.
 */
#ifndef SYMADDR_TEAM_H
#define SYMADDR_TEAM_H

#include <string.h>

#include "symaddr/device.h"

/** A barrier flag a waiter gave up on: the late signaller learns that its peer left. */
#define SYMADDR_TEAM_POISON (~(uint64_t)0)
/** A Lamport word that has not arrived. */
#define SYMADDR_TEAM_EMPTY 0xffffffffu

/** Node peers whose copy of the sync area a call finds without the peer table
 *  (symaddr_team_call_t.to): a Lamport push to a node of at most this many ranks. */
#define SYMADDR_TEAM_HELD 8

/** One call of the team, from symaddr_team_begin: held by each thread. */
typedef struct symaddr_team_call {
    uint64_t epoch;    /**< the call's number */
    uint64_t deadline; /**< of every wait of the call (symaddr_clock_ns) */
    uint64_t buf;      /**< the Lamport buffer this call uses, if it pushes */
    uint64_t ticket;   /**< the block's place among the grid's blocks to begin (thread 0) */
    /** Bytes from this rank's sync area to node rank (node_rank + k) % node_size's, for
     *  k < node_size and k < SYMADDR_TEAM_HELD (0 past them). */
    int64_t to[SYMADDR_TEAM_HELD];
} symaddr_team_call_t;

#include "symaddr/detail/team.h" /* what these blocks are made of */

#if defined(__CUDACC__) && defined(__cplusplus)
/** Launch @p kernel, a kernel made of these blocks, on @p stream (CUDA, host code): as a
 *  programmatic dependent where team.pdl says it may be (it is then scheduled while the
 *  stream's previous kernel ends, and symaddr_team_begin waits for that kernel), else as a plain
 *  launch. symaddr's own collectives are launched this way. Returns the runtime's status of the
 *  launch. */
template <typename... P, typename... A>
static inline cudaError_t symaddr_team_launch(const symaddr_team_t *t, void (*kernel)(P...),
                                              unsigned blocks, unsigned threads, void *stream,
                                              A... args)
{
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    cfg.gridDim = dim3(blocks);
    cfg.blockDim = dim3(threads);
    cfg.stream = (cudaStream_t)stream;
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = t->pdl ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, kernel, args...);
}
#endif

/** Start of a call: every thread of the grid, first. Under a programmatic dependent launch
 *  (CUDA), this is where the kernel lets the next one be scheduled and waits for the previous
 *  one to end. */
SYMADDR_DEVFN symaddr_team_call_t symaddr_team_begin(const symaddr_team_t *t)
{
    symaddr_team_call_t c;
    symaddr_team_enter_(t, &c);
    symaddr_team_open_(t, &c);
    return c;
}

/** Whether a call of this rank failed, or a node peer's failure broke it. */
SYMADDR_DEVFN int symaddr_team_failed(const symaddr_team_t *t)
{
    return *(volatile uint64_t *)&t->sync[SYMADDR_SYNC_STATUS] != 0;
}

/** Node rank @p q's copy of @p p, an address in symmetric memory whose peer table is @p pb
 *  (NULL where q cannot reach it). */
SYMADDR_DEVFN void *symaddr_team_peer(const symaddr_team_t *t, const void *p, const uint64_t *pb,
                                      int q)
{
    return symaddr_translate(p, t->node_ranks[q], pb, t->rank);
}

/** Fail the call with @p st: recorded for the host (the first failure sticks), and every node
 *  peer's context is broken too, so that none of them returns OK from this call or a later one
 *  (peers record SYMADDR_ERR_BROKEN, or SYMADDR_ERR_MISMATCH where that is @p st: ranks that
 *  disagree on a call all learn why). */
SYMADDR_DEVFN void symaddr_team_fail(const symaddr_team_t *t, symaddr_status_t st)
{
    symaddr_prim_cas_u64(&t->sync[SYMADDR_SYNC_STATUS], 0, (uint64_t) - (int64_t)st, 1);
    for (int q = 0; q < t->node_size; q++) {
        if (q == t->node_rank)
            continue;
        uint64_t *peer =
            (uint64_t *)symaddr_team_peer(t, &t->sync[SYMADDR_SYNC_STATUS], t->sync_pb, q);
        if (peer)
            symaddr_prim_cas_u64(
                peer, 0,
                (uint64_t) - (int64_t)(st == SYMADDR_ERR_MISMATCH ? st : SYMADDR_ERR_BROKEN), 1);
    }
}

/** Node barrier of one block: every thread of the calling block calls it, and the block of the
 *  same index on every node peer reaches the same @p phase (1 to 3) of the same call. Returns 1
 *  to every thread of the block, or 0 after a failure (recorded). */
SYMADDR_DEVFN int symaddr_team_barrier_block(const symaddr_team_t *t, const symaddr_team_call_t *c,
                                             int phase)
{
    return symaddr_team_barrier_check_(t, c, phase, NULL, 0, 0);
}

/** Node barrier of the whole grid: every thread of every block calls it with the same @p phase
 *  (1 to 3; a call uses each phase once, whichever barrier takes it), and it returns once every
 *  block of every node peer's grid reached it: 1 to every thread, or 0 after a failure
 *  (recorded). The blocks of this rank arrive on a counter; the last one meets the peers and
 *  releases the others. */
SYMADDR_DEVFN int symaddr_team_barrier_grid(const symaddr_team_t *t, const symaddr_team_call_t *c,
                                            int phase)
{
    int ok = 1;
    uint64_t value = symaddr_team_flag_value_(c->epoch, phase);
    symaddr_block_sync();
    if (symaddr_block_thread() == 0) {
        symaddr_fence(); /* the block's stores, local and to peers, before its arrival */
        uint64_t blocks = symaddr_grid_blocks();
        uint64_t n = blocks == 1 ? 0 : symaddr_prim_add_u64(&t->sync[SYMADDR_SYNC_GRID], 1, 0);
        if (n == blocks - 1) {
            /* reset before the release: no block arrives at the next barrier before it */
            *(volatile uint64_t *)&t->sync[SYMADDR_SYNC_GRID] = 0;
            uint64_t *row = t->sync + SYMADDR_SYNC_WORDS + (size_t)t->max_blocks * t->node_size;
            ok = symaddr_team_arrive_(t, row, value) &&
                 symaddr_team_meet_(t, c, row, value, 0, 1, NULL, 0, NULL);
            /* on a failure (recorded) the others see it instead of the release */
            symaddr_fence();
            if (ok && symaddr_prim_swap_u64(&t->sync[SYMADDR_SYNC_RELEASE], value, 0) ==
                          SYMADDR_TEAM_POISON) { /* a block of this rank gave up */
                symaddr_team_fail(t, SYMADDR_ERR_TIMEOUT);
                ok = 0;
            }
        } else {
            ok = symaddr_team_wait_flag_(t, &t->sync[SYMADDR_SYNC_RELEASE], value, c->deadline,
                                         NULL, NULL, NULL);
        }
    }
    return symaddr_block_all(ok);
}

/** End of a call: every thread of the grid, last. @p pushed: whether the call used the Lamport
 *  blocks (its buffer then passes to the next Lamport call's turn). */
SYMADDR_DEVFN void symaddr_team_end(const symaddr_team_t *t, const symaddr_team_call_t *c,
                                    int pushed)
{
    /* No fence: only this rank's later kernels read the words written here, and only after this
     * grid ended (a kernel boundary, or griddepcontrol.wait under a programmatic dependent
     * launch), which makes every store of the grid visible to them. A fence would wait until the
     * peers acknowledged the block's stores (doc/performance.md). No block still reads
     * the call's words when the block with the last ticket rewrites them: every block read them
     * before it took its ticket (symaddr_team_begin). */
    if (symaddr_block_thread() == 0 && c->ticket == symaddr_grid_blocks() - 1) {
        if (c->ticket > 0)
            t->sync[SYMADDR_SYNC_DONE] = 0; /* every ticket of the call is taken */
        if (pushed)
            t->sync[SYMADDR_SYNC_LAMPORT] = (c->buf + 1) % 3;
        *(volatile uint64_t *)&t->sync[SYMADDR_SYNC_EPOCH] = c->epoch;
    }
}

/* ---- Lamport: data that marks its own arrival ---------------------------------------------- */

/** Store the 16 bytes @p w at @p p (16-byte aligned, symmetric memory of table @p pb) on every
 *  node peer, this rank included: one 16-byte store each, from this rank's own on, to spread
 *  the stores over the peers. The all-gather half of a two-shot, for data in registers. */
SYMADDR_DEVFN void symaddr_team_put16_all(const symaddr_team_t *t, void *p, const uint64_t *pb,
                                          const uint32_t w[4])
{
    for (int k = 0; k < t->node_size; k++) {
        int q = (t->node_rank + k) % t->node_size;
        symaddr_team_st16_((uint32_t *)symaddr_team_peer(t, p, pb, q), w);
    }
}

/** Lamport push: store the 16 bytes @p w as chunk @p chunk (chunk * 16 < team.lamport_slot) of
 *  this rank's slot in every node peer's buffer, this rank's own included. A word of all ones
 *  (SYMADDR_TEAM_EMPTY, a NaN in f32, f16 and bf16) goes with its lowest bit cleared, so that data
 *  never looks empty: integers cannot be sent this way. No barrier, no flag. */
SYMADDR_DEVFN void symaddr_team_push16(const symaddr_team_t *t, const symaddr_team_call_t *c,
                                       size_t chunk, const uint32_t w[4])
{
    uint32_t v[4];
    for (int k = 0; k < 4; k++)
        v[k] = w[k] - (w[k] == SYMADDR_TEAM_EMPTY);
    uint32_t *mine = symaddr_team_slot_(t, c, t->node_rank) + 4 * chunk;
#if !SYMADDR_VALIDATE /* validation checks each translation against the table */
    if (t->node_size <= SYMADDR_TEAM_HELD) {
        SYMADDR_TEAM_UNROLL_
        for (int k = 0; k < SYMADDR_TEAM_HELD; k++)
            if (k < t->node_size)
                symaddr_team_st16_((uint32_t *)((char *)mine + c->to[k]), v);
        return;
    }
#endif
    symaddr_team_put16_all(t, mine, t->sync_pb, v);
}

/** Most peers one symaddr_team_take16_n takes at once. */
#define SYMADDR_TEAM_TAKE_MAX 8

/** Lamport take of several peers at once: wait until chunk @p chunk of node ranks q0 to
 *  q0 + n - 1 (n <= SYMADDR_TEAM_TAKE_MAX) arrived, copy peer q0 + u's to @p w[u], and empty the
 *  slots again for a later call. The loads of the n peers are in flight together, so the wait
 *  is one trip, not n. Returns 1, or 0 after a failure (recorded). Each chunk of each peer is
 *  taken once per call, by one thread. */
SYMADDR_DEVFN int symaddr_team_take16_n(const symaddr_team_t *t, const symaddr_team_call_t *c,
                                        int q0, int n, size_t chunk,
                                        uint32_t w[SYMADDR_TEAM_TAKE_MAX][4])
{
    unsigned pending = (1u << n) - 1u;
    /* peer q0 + u's chunk: one multiply-add each from the first's */
    char *first = (char *)(symaddr_team_slot_(t, c, q0) + 4 * chunk);
    for (unsigned spin = 0;; spin++) {
        /* every pending load first, then the checks: the loads do not wait on each other */
        SYMADDR_TEAM_UNROLL_
        for (int u = 0; u < SYMADDR_TEAM_TAKE_MAX; u++)
            if (pending >> u & 1u)
                symaddr_team_ld16_((uint32_t *)(first + (size_t)u * t->lamport_slot), w[u]);
        /* EMPTY is the largest word: the 16 bytes arrived when their largest word is not it
         * (a tree of maxima, not a chain of four compares) */
        SYMADDR_TEAM_UNROLL_
        for (int u = 0; u < SYMADDR_TEAM_TAKE_MAX; u++) {
            uint32_t a = w[u][0] > w[u][1] ? w[u][0] : w[u][1];
            uint32_t b = w[u][2] > w[u][3] ? w[u][2] : w[u][3];
            if ((pending >> u & 1u) && (a > b ? a : b) != SYMADDR_TEAM_EMPTY)
                pending &= ~(1u << u);
        }
        if (!pending)
            break;
        if ((spin & 63) == 63) {
            if (symaddr_team_failed(t))
                return 0; /* a peer failed and told us */
            if (symaddr_clock_ns() > c->deadline) {
                symaddr_team_fail(t, SYMADDR_ERR_TIMEOUT);
                return 0;
            }
            symaddr_yield();
        }
    }
    const uint32_t empty[4] = {SYMADDR_TEAM_EMPTY, SYMADDR_TEAM_EMPTY, SYMADDR_TEAM_EMPTY,
                               SYMADDR_TEAM_EMPTY};
    SYMADDR_TEAM_UNROLL_
    for (int u = 0; u < SYMADDR_TEAM_TAKE_MAX; u++)
        if (u < n)
            symaddr_team_st16_((uint32_t *)(first + (size_t)u * t->lamport_slot), empty);
    return 1;
}

/** Lamport take of one peer: wait until node rank @p q's chunk @p chunk of this call arrived,
 *  copy it to @p w and empty the slot again. As symaddr_team_take16_n. */
SYMADDR_DEVFN int symaddr_team_take16(const symaddr_team_t *t, const symaddr_team_call_t *c, int q,
                                      size_t chunk, uint32_t w[4])
{
    uint32_t v[SYMADDR_TEAM_TAKE_MAX][4];
    if (!symaddr_team_take16_n(t, c, q, 1, chunk, v))
        return 0;
    for (int k = 0; k < 4; k++)
        w[k] = v[0][k];
    return 1;
}

/** One-shot allreduce (sum) of n floats by the whole grid, from @p in to @p out (either may be
 *  the other), n * 4 <= team.lamport_slot: each thread pushes its chunks, then takes every
 *  peer's and sums them in node-rank order, so that every rank gets the same bits. Returns 1 to
 *  the thread, or 0 after a failure. Call between symaddr_team_begin and symaddr_team_end
 *  (pushed = 1); the same thread pushes and takes a chunk, so the grid needs no barrier. */
SYMADDR_DEVFN int symaddr_team_allreduce_sum_f32(const symaddr_team_t *t,
                                                 const symaddr_team_call_t *c, const float *in,
                                                 float *out, size_t n)
{
    size_t chunks = (n + 3) / 4;
    int ok = 1;
    for (size_t k = symaddr_grid_thread(); k < chunks; k += symaddr_grid_threads()) {
        uint32_t w[4] = {0, 0, 0, 0};
        memcpy(w, in + 4 * k, (n - 4 * k < 4 ? n - 4 * k : 4) * sizeof(float));
        symaddr_team_push16(t, c, k, w);
    }
    for (size_t k = symaddr_grid_thread(); k < chunks && ok; k += symaddr_grid_threads()) {
        float acc[4] = {0, 0, 0, 0}, v[4];
        for (int q0 = 0; q0 < t->node_size && ok; q0 += SYMADDR_TEAM_TAKE_MAX) {
            int n = t->node_size - q0 < SYMADDR_TEAM_TAKE_MAX ? t->node_size - q0
                                                              : SYMADDR_TEAM_TAKE_MAX;
            uint32_t w[SYMADDR_TEAM_TAKE_MAX][4];
            ok = symaddr_team_take16_n(t, c, q0, n, k, w);
            SYMADDR_TEAM_UNROLL_
            for (int u = 0; u < SYMADDR_TEAM_TAKE_MAX; u++) { /* node-rank order: same bits */
                memcpy(v, w[u], sizeof(v));
                for (int j = 0; j < 4 && u < n && ok; j++)
                    acc[j] = q0 + u == 0 ? v[j] : acc[j] + v[j];
            }
        }
        if (ok)
            memcpy(out + 4 * k, acc, (n - 4 * k < 4 ? n - 4 * k : 4) * sizeof(float));
    }
    return ok;
}

/* ---- two-shot and broadcast: loads and stores on the caller's symmetric memory ------------- */

/** This node rank's part [*lo_p, *hi_p) of @p n items in a two-shot: node rank r gets the r-th
 *  of node_size parts of equal length, rounded up to a multiple of @p align (at least 1); the
 *  last parts may be short or empty. Every rank computes every rank's part alike. */
SYMADDR_HOSTDEVFN void symaddr_team_share(const symaddr_team_t *t, size_t n, size_t align,
                                          size_t *lo_p, size_t *hi_p)
{
    size_t a = align ? align : 1;
    size_t part = ((n + (size_t)t->node_size - 1) / (size_t)t->node_size + a - 1) / a * a;
    size_t lo = part * (size_t)t->node_rank;
    *lo_p = lo < n ? lo : n;
    *hi_p = lo + part < n ? lo + part : n;
}

/** Reduce-scatter by loads: @p dst[i] = the sum over node ranks, in node-rank order (so that
 *  every rank gets the same bits), of each peer's @p src[i], for i in [lo, hi), by the whole
 *  grid. src is symmetric memory of table @p src_pb; dst is local and may be src (each element
 *  of a part is read only by the part's owner). Between a barrier that makes every peer's src
 *  ready and one that keeps it until every peer has read it. */
SYMADDR_DEVFN void symaddr_team_reduce_sum_f32(const symaddr_team_t *t, const float *src,
                                               const uint64_t *src_pb, float *dst, size_t lo,
                                               size_t hi)
{
    for (size_t i = lo + symaddr_grid_thread(); i < hi; i += symaddr_grid_threads()) {
        float acc = 0;
        for (int q = 0; q < t->node_size; q++)
            acc = q == 0 ? ((const float *)symaddr_team_peer(t, src, src_pb, q))[i]
                         : acc + ((const float *)symaddr_team_peer(t, src, src_pb, q))[i];
        dst[i] = acc;
    }
}

/** All-gather by stores: copy @p bytes from @p src (local) to @p dst (symmetric memory of table
 *  @p dst_pb) on every node peer, by the whole grid; this rank's own copy is skipped where dst
 *  is src. Followed by a barrier before anyone reads dst. */
SYMADDR_DEVFN void symaddr_team_allgather_bytes(const symaddr_team_t *t, const void *src, void *dst,
                                                const uint64_t *dst_pb, size_t bytes)
{
    for (int k = 0; k < t->node_size; k++) {
        int q = (t->node_rank + k) % t->node_size;
        void *d = symaddr_team_peer(t, dst, dst_pb, q);
        if (d != src)
            symaddr_copy_bytes_(d, src, bytes, symaddr_grid_thread(), symaddr_grid_threads());
    }
}

/** Broadcast by loads: copy @p bytes of node rank @p root's @p src (symmetric memory of table
 *  @p src_pb) to @p dst (local), by the whole grid; nothing is copied where they are the same
 *  memory. Between a barrier that makes the root's src ready and one that keeps it until every
 *  peer has read it. */
SYMADDR_DEVFN void symaddr_team_broadcast_bytes(const symaddr_team_t *t, int root, const void *src,
                                                const uint64_t *src_pb, void *dst, size_t bytes)
{
    const void *s = symaddr_team_peer(t, src, src_pb, root);
    if (s != (const void *)dst)
        symaddr_copy_bytes_(dst, s, bytes, symaddr_grid_thread(), symaddr_grid_threads());
}

#endif /* SYMADDR_TEAM_H */
