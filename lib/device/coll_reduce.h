/* SPDX-License-Identifier: MIT */
/* The reducing kernels: one-shot and two-shot allreduce, reduce-scatter, and the LL and
 * Lamport allreduces. Part of collectives.hip. */
#ifndef SYMADDR_LIB_DEVICE_COLL_REDUCE_H
#define SYMADDR_LIB_DEVICE_COLL_REDUCE_H

template <int DT, int OP> __global__ void k_allreduce_oneshot(symaddr_coll_desc_t d)
{
    typedef traits<DT> tr;
    typedef typename tr::T T;
    int broken;
    symaddr_team_call_t call = coll_begin(d, &broken);
    uint64_t e = call.epoch;
    const T *src[COLL_MAX_NODE];
    T *slot = (T *)((char *)d.team.sync + d.stage_offset + (e & 1) * SYMADDR_COLL_STAGE_BYTES);
    const T *send = (const T *)d.send;
    T *recv = (T *)d.recv;
    if (broken)
        goto finish;
    /* Each thread stages exactly the elements it reduces later, so the block's own barrier
     * covers them. */
    FOR_TILES(TILE_N, base, len, 0, d.count)
    copy_tile<T>(slot + base, send + base, len, d.vec, 1);
    if (!coll_barrier_first(d, call, broken))
        goto finish;
    for (int q = 0; q < d.team.node_size; q++)
        src[q] = (const T *)symaddr_team_peer(&d.team, slot, d.team.sync_pb, q);
    FOR_TILES(TILE_N, base, len, 0, d.count)
    reduce_tile_to<DT, OP>(&recv, 1, 0, src, d.team.node_size, base, len, 1, d.vec);
finish:
    symaddr_team_end(&d.team, &call, 0);
}

/* Reduce-scatter by loads fused with all-gather by stores: each rank reduces its chunk once
 * and stores it into every peer's recv. In place is safe: an element of a chunk is read and
 * written only by the chunk's owner, reads first. */
template <int DT, int OP> __global__ void k_allreduce_twoshot(symaddr_coll_desc_t d)
{
    typedef traits<DT> tr;
    typedef typename tr::T T;
    int broken;
    symaddr_team_call_t call = coll_begin(d, &broken);
    const T *src[COLL_MAX_NODE];
    T *dst[COLL_MAX_NODE];
    size_t lo, hi;
    symaddr_team_share(&d.team, d.count, 64, &lo, &hi);
    if (!coll_barrier_first(d, call, broken))
        goto finish;
    for (int q = 0; q < d.team.node_size; q++) {
        src[q] = (const T *)symaddr_team_peer(&d.team, d.send, d.send_pb, q);
        dst[q] = (T *)symaddr_team_peer(&d.team, d.recv, d.recv_pb, q);
    }
    /* Stores start at this rank's own slot, to spread them over the peers. */
    FOR_TILES(TILE_N, base, len, lo, hi)
    reduce_tile_to<DT, OP>(dst, d.team.node_size, d.team.node_rank, src, d.team.node_size, base,
                           len, d.vec, d.vec);
    symaddr_team_barrier_block(&d.team, &call, 2);
finish:
    symaddr_team_end(&d.team, &call, 0);
}

/* Two-shot with loads only: each rank reduces its chunk (loads from every peer) into its own
 * recv, and after a barrier copies every peer's reduced chunk from that peer's recv. A block
 * reads what the same block of the peer wrote, since every rank cuts every chunk alike, so the
 * block barriers order it. In place is safe: a rank writes a peer's chunk of its own buffer
 * only after the barrier that follows that peer's reads. Two-shot-copy ends after the reduce:
 * the host's copies push the chunk into the peers' recv (lib/coll/launch.c). */
template <int DT, int OP> __global__ void k_allreduce_twoshot_get(symaddr_coll_desc_t d)
{
    typedef traits<DT> tr;
    typedef typename tr::T T;
    int broken;
    symaddr_team_call_t call = coll_begin(d, &broken);
    const T *src[COLL_MAX_NODE];
    T *recv = (T *)d.recv;
    size_t lo, hi;
    symaddr_team_share(&d.team, d.count, 64, &lo, &hi);
    if (!coll_barrier_first(d, call, broken))
        goto finish;
    for (int q = 0; q < d.team.node_size; q++)
        src[q] = (const T *)symaddr_team_peer(&d.team, d.send, d.send_pb, q);
    FOR_TILES(TILE_N, base, len, lo, hi)
    reduce_tile_to<DT, OP>(&recv, 1, 0, src, d.team.node_size, base, len, d.vec, d.vec);
    if (d.kind == SYMADDR_COLL_ALLREDUCE_TWOSHOT_COPY ||
        !symaddr_team_barrier_block(&d.team, &call, 2))
        goto finish;
    for (int k = 1; k < d.team.node_size; k++) {
        int q = (d.team.node_rank + k) % d.team.node_size;
        const T *from = (const T *)symaddr_team_peer(&d.team, d.recv, d.recv_pb, q);
        symaddr_team_t tq = d.team; /* q's chunk, as q cut it */
        size_t qlo, qhi;
        tq.node_rank = q;
        symaddr_team_share(&tq, d.count, 64, &qlo, &qhi);
        FOR_TILES(TILE_N, base, len, qlo, qhi)
        copy_tile<T>(recv + base, from + base, len, d.vec, d.vec);
    }
    symaddr_team_barrier_block(&d.team, &call, 3);
finish:
    symaddr_team_end(&d.team, &call, 0);
}

template <int DT, int OP> __global__ void k_reduce_scatter(symaddr_coll_desc_t d)
{
    typedef traits<DT> tr;
    typedef typename tr::T T;
    int broken;
    symaddr_team_call_t call = coll_begin(d, &broken);
    const T *src[COLL_MAX_NODE];
    T *recv = (T *)d.recv;
    if (!coll_barrier_first(d, call, broken))
        goto finish;
    for (int q = 0; q < d.team.node_size; q++)
        src[q] = (const T *)symaddr_team_peer(&d.team, d.send, d.send_pb, q) +
                 d.count * (size_t)d.team.node_rank;
    FOR_TILES(TILE_N, base, len, 0, d.count)
    reduce_tile_to<DT, OP>(&recv, 1, 0, src, d.team.node_size, base, len, d.vec, d.vec);
    symaddr_team_barrier_block(&d.team, &call, 2);
finish:
    symaddr_team_end(&d.team, &call, 0);
}

/* Reduce to a root: the root loads every peer's send, where that peer passed it, and reduces
 * into its recv; the others only wait, so that their send stays until the root has read it. In
 * place is safe at the root: each element is read from every send before it is written, and no
 * peer reads the root's recv. */
template <int DT, int OP> __global__ void k_reduce(symaddr_coll_desc_t d)
{
    typedef traits<DT> tr;
    typedef typename tr::T T;
    int broken;
    symaddr_team_call_t call = coll_begin(d, &broken);
    const T *src[COLL_MAX_NODE];
    T *recv = (T *)d.recv;
    int vec = d.vec;
    coll_publish(d, call, d.send, d.send_pb, d.send_table, d.send_shift);
    if (!coll_barrier_first(d, call, broken))
        goto finish;
    if (d.team.node_rank == d.root) {
        for (int q = 0; q < d.team.node_size; q++) {
            src[q] = (const T *)coll_published(d, call, q, d.send_pb, d.send_table, d.send_shift);
            if (!src[q])
                goto done;
            vec = vec && ((uintptr_t)src[q] & 15) == 0;
        }
        FOR_TILES(TILE_N, base, len, 0, d.count)
        reduce_tile_to<DT, OP>(&recv, 1, 0, src, d.team.node_size, base, len, vec, vec);
    }
done:
    symaddr_team_barrier_block(&d.team, &call, 2);
finish:
    symaddr_team_end(&d.team, &call, 0);
}

/* LL allreduce: each rank stores its input straight into every peer's inbox as packets of 4
 * data bytes and a 4-byte flag, and reduces from its own inboxes once this call's packets
 * arrived. No barrier: the wait is one one-way trip. An inbox (epoch parity p) is written
 * again only at epoch e + 2, which its writer starts after e + 1, which needed this rank's
 * packets of e + 1, sent after this rank finished reading e. The reader clears every packet
 * it took, so an inbox holds nothing but packets in flight, and the flag (never 0, the
 * cleared value) cannot match a slot that was never written or already read at any epoch. */
SYMADDR_DEVFN uint32_t ll_flag(uint64_t epoch) { return (uint32_t)(epoch % 0xffffffffu) + 1u; }

SYMADDR_DEVFN void ll_put(uint64_t *p, uint32_t data, uint32_t flag)
{
    symaddr_team_st8_(p, (uint64_t)flag << 32 | data);
}

/* The packet's data once its flag is @p flag, the packet then cleared; 0 in *ok when the
 * deadline passed or a peer failed. */
SYMADDR_DEVFN uint32_t ll_take(uint64_t *p, uint32_t flag, const symaddr_coll_desc_t &d,
                               uint64_t deadline, int *ok)
{
    for (unsigned spin = 0;; spin++) {
        uint64_t v = symaddr_team_ld8_(p);
        if ((uint32_t)(v >> 32) == flag) {
            ll_put(p, 0, 0);
            return (uint32_t)v;
        }
        if ((spin & 63) == 63) {
            if (symaddr_team_failed(&d.team)) {
                *ok = 0; /* a peer failed and told us */
                return 0;
            }
            if (symaddr_clock_ns() > deadline) {
                symaddr_team_fail(&d.team, SYMADDR_ERR_TIMEOUT);
                *ok = 0;
                return 0;
            }
            symaddr_yield();
        }
    }
}

/* n (<= 8) bytes at p as two words, zero-padded. */
SYMADDR_DEVFN void ll_read8(uint32_t w[2], const char *p, size_t n)
{
    if (n == 8 && ((uintptr_t)p & 7) == 0) {
        uint64_t v = *(const uint64_t *)p;
        w[0] = (uint32_t)v;
        w[1] = (uint32_t)(v >> 32);
        return;
    }
    unsigned char b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)p[i];
    memcpy(w, b, 8);
}

/* Step s (two LL words, w[0] and w[1]) into this rank's inbox of every node peer, this rank's
 * own first. */
SYMADDR_DEVFN void ll_put_all(const symaddr_coll_desc_t &d, uint64_t *const *dst, size_t s,
                              const uint32_t *w, uint32_t flag)
{
    for (int k = 0; k < d.team.node_size; k++) {
        int q = (d.team.node_rank + k) % d.team.node_size;
        ll_put(dst[q] + 2 * s, w[0], flag);
        ll_put(dst[q] + 2 * s + 1, w[1], flag);
    }
}

template <int DT, int OP, int ID> __global__ void k_allreduce_ll(symaddr_coll_desc_t d)
{
    typedef traits<DT> tr;
    typedef typename tr::T T;
    enum { PER = 8 / sizeof(T) }; /* elements of a step: 8 data bytes, two packets */
    symaddr_team_call_t call = symaddr_team_begin(&d.team);
    uint64_t e = call.epoch, deadline = call.deadline;
    uint32_t flag = ll_flag(e);
    size_t bytes = d.count * sizeof(T), steps = (bytes + 7) / 8;
    char *inboxes = (char *)d.team.sync + d.ll_offset +
                    (e & 1) * (size_t)d.team.node_size * SYMADDR_COLL_LL_INBOX;
    uint64_t *dst[COLL_MAX_NODE];
    uint32_t id[4];
    int ok = 1;
    coll_ident_words(d, id);
    if (symaddr_team_failed(&d.team))
        goto finish;
    for (int q = 0; q < d.team.node_size; q++)
        dst[q] = (uint64_t *)symaddr_team_peer(
            &d.team, inboxes + (size_t)d.team.node_rank * SYMADDR_COLL_LL_INBOX, d.team.sync_pb, q);
    for (size_t s = symaddr_grid_thread(); s < steps; s += symaddr_grid_threads()) {
        uint32_t w[4];
        ll_read8(w, (const char *)d.send + s * 8, bytes - s * 8 < 8 ? bytes - s * 8 : 8);
        ll_put_all(d, dst, s, w, flag);
    }
    if (coll_ident_thread<ID>()) /* the call's identity (coll_ident_words), as step steps */
        ll_put_all(d, dst, steps, id, flag);
    for (size_t s = symaddr_grid_thread(); s < steps && ok; s += symaddr_grid_threads()) {
        typename tr::A acc[PER] = {};
        for (int q = 0; q < d.team.node_size && ok; q++) {
            uint64_t *in = (uint64_t *)(inboxes + (size_t)q * SYMADDR_COLL_LL_INBOX);
            uint32_t w[2];
            T v[PER];
            w[0] = ll_take(in + 2 * s, flag, d, deadline, &ok);
            w[1] = ok ? ll_take(in + 2 * s + 1, flag, d, deadline, &ok) : 0;
            memcpy(v, w, 8);
            for (int j = 0; j < PER; j++)
                acc[j] = q == 0 ? tr::load(v[j]) : apply<OP>(acc[j], tr::load(v[j]));
        }
        size_t n = (bytes - s * 8 < 8 ? bytes - s * 8 : 8) / sizeof(T);
        for (size_t j = 0; j < n && ok; j++)
            ((T *)d.recv)[s * PER + j] = tr::store(acc[j]);
    }
    for (int q = 0; coll_ident_thread<ID>() && ok && q < d.team.node_size; q++) {
        uint64_t *in = (uint64_t *)(inboxes + (size_t)q * SYMADDR_COLL_LL_INBOX);
        uint32_t got[1][4] = {{0, 0, 0, 0}};
        got[0][0] = ll_take(in + 2 * steps, flag, d, deadline, &ok);
        got[0][1] = ok ? ll_take(in + 2 * steps + 1, flag, d, deadline, &ok) : 0;
        ok = ok && coll_ident_check(d, id, got, 1);
    }
finish:
    symaddr_team_end(&d.team, &call, 0);
}

/* ---- Lamport allreduce -------------------------------------------------------------------- */

/* The types whose data can carry the arrival marker: a 32-bit word of all ones is a NaN in
 * f32 and two NaNs in f16 or bf16. Integers and f64 have no spare pattern and take LL. */
template <int DT> struct lamport_ok {
    enum { value = DT == SYMADDR_FLOAT32 || DT == SYMADDR_FLOAT16 || DT == SYMADDR_BFLOAT16 };
};

/* Chunk c of the bytes at send, as four words in registers (zero-padded past the end). */
SYMADDR_DEVFN void lamport_words(uint32_t w[4], const void *send, int vec, size_t c, size_t bytes)
{
    size_t n = bytes - c * 16 < 16 ? bytes - c * 16 : 16;
    if (n == 16 && vec) {
        coll_pack_t v = ((const coll_pack_t *)send)[c];
        memcpy(w, &v, 16);
        return;
    }
    const unsigned char *p = (const unsigned char *)send + c * 16;
    COLL_UNROLL
    for (int k = 0; k < 4; k++)
        w[k] = 0;
    COLL_UNROLL
    for (unsigned i = 0; i < 16; i++)
        if (i < n)
            w[i / 4] |= (uint32_t)p[i] << (8 * (i % 4));
}

/* Lamport allreduce over symaddr/team.h's push and take: each rank stores its input, 16 bytes
 * at a time, into its slot of every peer's buffer (the call's of three), and reduces from its
 * own buffer as the words arrive: no flag, no barrier, one one-way trip. The reader empties each
 * 16 bytes it took, so a buffer is empty again when its call ends on this rank; a peer writes it
 * next three Lamport calls later, which needs this rank's data of the call before, sent after
 * this call ended here. The same thread pushes and reduces a chunk, so the grid needs no barrier
 * either. Launched on a stream, the kernel ends only once the peers acknowledged its pushes, a
 * trip after their data arrived here; replayed from a graph it does not wait for that
 * (doc/performance.md). */
template <int DT, int OP, int ID> __global__ void k_allreduce_lamport(symaddr_coll_desc_t d)
{
    typedef traits<DT> tr;
    typedef typename tr::T T;
    enum { PER = 16 / sizeof(T) };
    symaddr_team_call_t call;
    size_t bytes = d.count * sizeof(T), chunks = (bytes + 15) / 16, first = symaddr_grid_thread();
    int ok = 1, failed;
    uint32_t w[4], id[4];
    coll_ident_words(d, id);
    /* the first chunk and the status word are in flight with the call's words: one trip */
    symaddr_team_enter_(&d.team, &call);
    if (first < chunks)
        lamport_words(w, d.send, d.vec, first, bytes);
    failed = symaddr_team_failed(&d.team);
    symaddr_team_open_(&d.team, &call);
    if (failed)
        goto finish;
    for (size_t c = first; c < chunks; c += symaddr_grid_threads()) {
        if (c != first)
            lamport_words(w, d.send, d.vec, c, bytes);
        symaddr_team_push16(&d.team, &call, c, w);
    }
    if (coll_ident_thread<ID>()) /* the call's identity (coll_ident_words), as chunk chunks */
        symaddr_team_push16(&d.team, &call, chunks, id);
    for (size_t c = symaddr_grid_thread(); c < chunks && ok; c += symaddr_grid_threads()) {
        typename tr::A acc[PER];
        for (int q0 = 0; q0 < d.team.node_size && ok; q0 += SYMADDR_TEAM_TAKE_MAX) {
            int n = d.team.node_size - q0 < SYMADDR_TEAM_TAKE_MAX ? d.team.node_size - q0
                                                                  : SYMADDR_TEAM_TAKE_MAX;
            uint32_t w[SYMADDR_TEAM_TAKE_MAX][4];
            ok = symaddr_team_take16_n(&d.team, &call, q0, n, c, w);
            COLL_UNROLL
            for (int u = 0; u < SYMADDR_TEAM_TAKE_MAX; u++) { /* node-rank order: same bits */
                if (u >= n || !ok)
                    continue; /* a branch past the peers not taken */
                T v[PER];
                typename tr::A a[PER];
                memcpy(v, w[u], 16);
                tr::load_n(v, a, PER); /* f16: by pairs, the NaN rule only if one is there */
                COLL_UNROLL
                for (int j = 0; j < PER; j++)
                    acc[j] = q0 + u == 0 ? a[j] : apply<OP>(acc[j], a[j]);
            }
        }
        size_t n = (bytes - c * 16 < 16 ? bytes - c * 16 : 16) / sizeof(T);
        if (n == PER && d.vec && ok) { /* one 16-byte store, not PER narrow ones */
            T out[PER];
            coll_pack_t v;
            tr::store_n(acc, out, PER); /* f16, bf16: by pairs, as load_n */
            memcpy(&v, out, 16);
            ((coll_pack_t *)d.recv)[c] = v;
        } else { /* unrolled: an index known at compile time keeps acc out of local memory */
            COLL_UNROLL
            for (int j = 0; j < PER; j++)
                if ((size_t)j < n && ok)
                    ((T *)d.recv)[c * PER + j] = tr::store(acc[j]);
        }
    }
    for (int q0 = 0; coll_ident_thread<ID>() && ok && q0 < d.team.node_size;
         q0 += SYMADDR_TEAM_TAKE_MAX) {
        int n = d.team.node_size - q0 < SYMADDR_TEAM_TAKE_MAX ? d.team.node_size - q0
                                                              : SYMADDR_TEAM_TAKE_MAX;
        uint32_t got[SYMADDR_TEAM_TAKE_MAX][4];
        ok = symaddr_team_take16_n(&d.team, &call, q0, n, chunks, got) &&
             coll_ident_check(d, id, got, n);
    }
finish:
    symaddr_team_end(&d.team, &call, 1);
}

/* Each reducing kind and its kernel template (instantiated per dtype and op), for
 * collectives.hip's launch and occupancy; LL's and Lamport's are written out there (with and
 * without the identity step; Lamport for floats only). */
#define REDUCE_KERNELS(X)                                                                          \
    X(ALLREDUCE_ONESHOT, k_allreduce_oneshot)                                                      \
    X(ALLREDUCE_TWOSHOT, k_allreduce_twoshot)                                                      \
    X(ALLREDUCE_TWOSHOT_GET, k_allreduce_twoshot_get)                                              \
    X(ALLREDUCE_TWOSHOT_COPY, k_allreduce_twoshot_get)                                             \
    X(REDUCE_SCATTER, k_reduce_scatter)                                                            \
    X(REDUCE, k_reduce)

#endif
