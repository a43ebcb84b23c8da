/* SPDX-License-Identifier: MIT */
/* Collective kernels on symmetric memory, one source for every backend. They
 * see only pointers, peer tables and the context's sync area:
 *  - every call bumps a monotonic 64-bit epoch kept in device memory, so graph
 *    replays keep counting and nothing is ever reset;
 *  - a barrier phase is a flag per (block, node peer) set to epoch*4 + phase,
 *    written with release (fence + system-scope atomic) and waited for with
 *    acquire and a timeout;
 *  - a "thread" handles a tile of elements: one element on a GPU, where the
 *    grid gives the parallelism, and a vectorisable run on the cpu. */
#include <limits.h>
#include <string.h>

#include "runtime.h"
#include "kernels.h"
#include "collectives.h"
#include "symaddr/device.h"

#define COLL_MAX_NODE 64

/* A "tile" is what one thread handles per step: a vectorisable run on the cpu; on a GPU two
 * 16-byte packs, so that every thread keeps two wide loads per peer in flight. */
#if defined(SYMADDR_KERNELS_CPU)
#define COLL_TILE_BYTES 2048
#define COLL_THREADS 1
#define COLL_UNROLL
#else
#define COLL_TILE_BYTES 32
#define COLL_THREADS 512
#define COLL_UNROLL _Pragma("unroll")
#endif

/* ---- element types ------------------------------------------------------------------------ */

SYMADDR_HOSTDEVFN float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13); /* inf, nan */
    } else if (exp != 0) {
        u = sign | ((exp + 112) << 23) | (man << 13);
    } else if (man == 0) {
        u = sign;
    } else { /* subnormal: normalise */
        int e = -1;
        do {
            man <<= 1;
            e++;
        } while (!(man & 0x400u));
        u = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

SYMADDR_HOSTDEVFN uint16_t f32_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    uint32_t sign = (u >> 16) & 0x8000u, exp = (u >> 23) & 0xffu, man = u & 0x7fffffu;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
    int e = (int)exp - 112;
    if (e >= 0x1f)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) { /* subnormal or zero, round to nearest even */
        if (e < -10)
            return (uint16_t)sign;
        man |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e), half = 1u << (shift - 1);
        uint32_t r = man >> shift, rest = man & ((1u << shift) - 1);
        if (rest > half || (rest == half && (r & 1)))
            r++;
        return (uint16_t)(sign | r);
    }
    uint32_t r = ((uint32_t)e << 10) | (man >> 13), rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (r & 1)))
        r++; /* may carry into the exponent, which is right */
    return (uint16_t)(sign | r);
}

SYMADDR_HOSTDEVFN float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

SYMADDR_HOSTDEVFN uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u); /* quiet nan */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* T: how it is stored; A: what it accumulates in. */
template <int DT> struct traits;
#define SYMADDR_PLAIN_TRAITS_(DT, TYPE)                                                          \
    template <> struct traits<DT> {                                                              \
        typedef TYPE T;                                                                          \
        typedef TYPE A;                                                                          \
        SYMADDR_HOSTDEVFN A load(T v) { return v; }                                              \
        SYMADDR_HOSTDEVFN T store(A v) { return v; }                                             \
    };
SYMADDR_PLAIN_TRAITS_(SYMADDR_INT32, int32_t)
SYMADDR_PLAIN_TRAITS_(SYMADDR_UINT32, uint32_t)
SYMADDR_PLAIN_TRAITS_(SYMADDR_INT64, int64_t)
SYMADDR_PLAIN_TRAITS_(SYMADDR_UINT64, uint64_t)
SYMADDR_PLAIN_TRAITS_(SYMADDR_FLOAT32, float)
SYMADDR_PLAIN_TRAITS_(SYMADDR_FLOAT64, double)
template <> struct traits<SYMADDR_FLOAT16> {
    typedef uint16_t T;
    typedef float A;
    SYMADDR_HOSTDEVFN A load(T v) { return f16_to_f32(v); }
    SYMADDR_HOSTDEVFN T store(A v) { return f32_to_f16(v); }
};
template <> struct traits<SYMADDR_BFLOAT16> {
    typedef uint16_t T;
    typedef float A;
    SYMADDR_HOSTDEVFN A load(T v) { return bf16_to_f32(v); }
    SYMADDR_HOSTDEVFN T store(A v) { return f32_to_bf16(v); }
};

template <int OP, typename A> SYMADDR_HOSTDEVFN A apply(A a, A b)
{
    switch (OP) {
    case SYMADDR_SUM: return a + b;
    case SYMADDR_PROD: return a * b;
    case SYMADDR_MIN: return b < a ? b : a;
    default: return b > a ? b : a;
    }
}

/* ---- synchronisation ---------------------------------------------------------------------- */

/* A flag a waiter gave up on: it tells the late signaller that its peer left without it. */
#define COLL_POISON (~(uint64_t)0)

SYMADDR_DEVFN uint64_t coll_epoch(const symaddr_coll_desc_t &d)
{
    return *(volatile uint64_t *)&d.sync[SYMADDR_SYNC_EPOCH] + 1;
}

/* One deadline for every wait of the call, from the kernel's start. */
SYMADDR_DEVFN uint64_t coll_deadline(const symaddr_coll_desc_t &d)
{
    return symaddr_clock_ns() + d.timeout_ns;
}

SYMADDR_DEVFN int coll_failed(const symaddr_coll_desc_t &d)
{
    return *(volatile uint64_t *)&d.sync[SYMADDR_SYNC_STATUS] != 0;
}

/* This rank failed the collective with status st: record it (the first failure sticks, and
 * the host reads it), and break the context of every node peer too, so that none of them
 * returns OK from this collective or any later one. */
SYMADDR_DEVFN void coll_fail(const symaddr_coll_desc_t &d, symaddr_status_t st)
{
    symaddr_prim_cas_u64(&d.sync[SYMADDR_SYNC_STATUS], 0, (uint64_t)-(int64_t)st, 1);
    for (int q = 0; q < d.node_size; q++) {
        if (q == d.node_rank)
            continue;
        uint64_t *peer = (uint64_t *)symaddr_translate(&d.sync[SYMADDR_SYNC_STATUS],
                                                       d.node_ranks[q], d.sync_pb, d.rank);
        if (peer)
            symaddr_prim_cas_u64(peer, 0, (uint64_t)-(int64_t)SYMADDR_ERR_BROKEN, 1);
    }
}

/* Whether flag value v reached want. Values only grow, by at most a few steps past what a
 * waiter wants, so the difference decides even across a wrap of 64 bits. */
SYMADDR_DEVFN int coll_reached(uint64_t v, uint64_t want)
{
    return v != COLL_POISON && (int64_t)(v - want) >= 0;
}

/* Wait for this rank's flag to reach want; 0 on failure. Giving up is settled with the
 * signaller on the flag itself: the waiter swaps in COLL_POISON only if the signal has not
 * landed, and the signaller sees the poison when it arrives. So a waiter that timed out and
 * the late rank it waited for both fail. */
SYMADDR_DEVFN int coll_wait_flag(const symaddr_coll_desc_t &d, uint64_t *flag, uint64_t want,
                                 uint64_t deadline)
{
    for (unsigned spin = 0;; spin++) {
        uint64_t v = *(volatile uint64_t *)flag;
        if (coll_reached(v, want)) {
            symaddr_fence();
            return 1;
        }
        if ((spin & 63) == 63) {
            if (v == COLL_POISON || coll_failed(d))
                return 0; /* a peer failed and told us */
            if (symaddr_clock_ns() > deadline) {
                for (;;) {
                    uint64_t seen = symaddr_prim_cas_u64(flag, v, COLL_POISON, 1);
                    if (seen == v) {
                        coll_fail(d, SYMADDR_ERR_TIMEOUT);
                        return 0;
                    }
                    if (coll_reached(seen, want)) {
                        symaddr_fence();
                        return 1;
                    }
                    v = seen;
                }
            }
            symaddr_yield();
        }
    }
}

/* All node peers' blocks of this index reach the phase; 0 after a failure (recorded). Thread
 * q of the block signals and waits for node peer q, so the peers are served in parallel. */
SYMADDR_DEVFN int coll_barrier(const symaddr_coll_desc_t &d, uint64_t epoch, int phase,
                               uint64_t deadline)
{
    int ok = 1;
    uint64_t value = epoch * 4 + (uint64_t)phase;
    uint64_t *flags = d.sync + SYMADDR_SYNC_WORDS + (size_t)symaddr_block_index() * d.node_size;
    symaddr_block_sync();
    for (int q = (int)symaddr_block_thread(); q < d.node_size; q += (int)symaddr_block_threads()) {
        if (q == d.node_rank)
            continue;
        uint64_t *r = (uint64_t *)symaddr_translate(&flags[d.node_rank], d.node_ranks[q],
                                                    d.sync_pb, d.rank);
        symaddr_fence();
        if (symaddr_prim_swap_u64(r, value, 1) == COLL_POISON) {
            coll_fail(d, SYMADDR_ERR_BROKEN); /* that peer gave up on this rank */
            ok = 0;
        }
    }
    for (int q = (int)symaddr_block_thread(); q < d.node_size && ok;
         q += (int)symaddr_block_threads())
        if (q != d.node_rank && !coll_wait_flag(d, &flags[q], value, deadline))
            ok = 0;
    return symaddr_block_all(ok);
}

SYMADDR_DEVFN void coll_finish(const symaddr_coll_desc_t &d, uint64_t epoch)
{
    symaddr_block_sync();
    if (symaddr_block_thread() == 0) {
        symaddr_fence();
        uint64_t done = symaddr_prim_add_u64(&d.sync[SYMADDR_SYNC_DONE], 1, 0);
        if (done == symaddr_grid_blocks() - 1) {
            d.sync[SYMADDR_SYNC_DONE] = 0;
            symaddr_fence();
            *(volatile uint64_t *)&d.sync[SYMADDR_SYNC_EPOCH] = epoch;
        }
    }
}

/* Tiles of N elements of a range, spread over every thread of the grid. */
#define FOR_TILES(N, base, len, lo, hi)                                                          \
    for (size_t base = (lo) + symaddr_grid_thread() * (N); base < (hi);                          \
         base += symaddr_grid_threads() * (N))                                                   \
        for (size_t len = (hi) - base < (N) ? (hi) - base : (N), once_ = 1; once_; once_ = 0)

struct alignas(16) coll_pack_t {
    uint64_t a, b;
};

/* One 16-byte store. Left to itself, nvcc merges the packed and the element-wise store paths
 * of a tile into 4-byte stores, which a peer link carries at a fraction of its rate. */
SYMADDR_DEVFN void pack_store(void *p, coll_pack_t v)
{
#if defined(__CUDA_ARCH__)
    asm volatile("st.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(v.a), "l"(v.b) : "memory");
#else
    *(coll_pack_t *)p = v;
#endif
}

/* A whole tile, held in registers: loaded and stored as 16-byte packs when d.vec says every
 * pointer involved is 16-byte aligned, else element by element. A partial tile (the tail of a
 * range) is reduced element by element straight to its destination. */
template <typename T, int N> union coll_tile_t {
    coll_pack_t p[N * sizeof(T) / 16];
    T v[N];
};

template <typename T, int N> SYMADDR_DEVFN void tile_load(coll_tile_t<T, N> &t, const T *p, int vec)
{
#if !defined(SYMADDR_KERNELS_CPU)
    if (vec) {
COLL_UNROLL
        for (int k = 0; k < (int)(N * sizeof(T) / 16); k++)
            t.p[k] = ((const coll_pack_t *)p)[k];
        return;
    }
#endif
    (void)vec;
COLL_UNROLL
    for (int j = 0; j < N; j++)
        t.v[j] = p[j];
}

template <typename T, int N> SYMADDR_DEVFN void tile_store(T *p, const coll_tile_t<T, N> &t, int vec)
{
#if !defined(SYMADDR_KERNELS_CPU)
    if (vec) {
COLL_UNROLL
        for (int k = 0; k < (int)(N * sizeof(T) / 16); k++)
            pack_store((coll_pack_t *)p + k, t.p[k]);
        return;
    }
#endif
    (void)vec;
COLL_UNROLL
    for (int j = 0; j < N; j++)
        p[j] = t.v[j];
}

/* out = src[0][tile] op ... op src[n-1][tile], in node-rank order on every rank, so that every
 * rank gets the same bits. */
template <int DT, int OP, int N>
SYMADDR_DEVFN void reduce_tile(coll_tile_t<typename traits<DT>::T, N> &out,
                               const typename traits<DT>::T *const *src, int n, size_t base, int vec)
{
    typedef traits<DT> tr;
    coll_tile_t<typename tr::T, N> in;
    typename tr::A acc[N];
    tile_load<typename tr::T, N>(in, src[0] + base, vec);
COLL_UNROLL
    for (int j = 0; j < N; j++)
        acc[j] = tr::load(in.v[j]);
    for (int q = 1; q < n; q++) {
        tile_load<typename tr::T, N>(in, src[q] + base, vec);
COLL_UNROLL
        for (int j = 0; j < N; j++)
            acc[j] = apply<OP>(acc[j], tr::load(in.v[j]));
    }
COLL_UNROLL
    for (int j = 0; j < N; j++)
        out.v[j] = tr::store(acc[j]);
}

template <int DT, int OP>
SYMADDR_DEVFN typename traits<DT>::T reduce_elem(const typename traits<DT>::T *const *src, int n,
                                                 size_t i)
{
    typedef traits<DT> tr;
    typename tr::A acc = tr::load(src[0][i]);
    for (int q = 1; q < n; q++)
        acc = apply<OP>(acc, tr::load(src[q][i]));
    return tr::store(acc);
}

#define TILE_N (COLL_TILE_BYTES / (int)sizeof(T))

/* Reduce the tile [base, base + len) of src into dst[(first + k) % ndst] for every k < ndst:
 * a whole tile through registers (16-byte packs where vec_in and vec_out allow), a partial one
 * element by element. */
template <int DT, int OP>
SYMADDR_DEVFN void reduce_tile_to(typename traits<DT>::T *const *dst, int ndst, int first,
                                  const typename traits<DT>::T *const *src, int n, size_t base,
                                  size_t len, int vec_in, int vec_out)
{
    typedef typename traits<DT>::T T;
    if (len == (size_t)TILE_N) {
        coll_tile_t<T, TILE_N> out;
        reduce_tile<DT, OP, TILE_N>(out, src, n, base, vec_in);
        for (int k = 0; k < ndst; k++)
            tile_store<T, TILE_N>(dst[(first + k) % ndst] + base, out, vec_out);
    } else {
        for (size_t j = 0; j < len; j++) {
            T v = reduce_elem<DT, OP>(src, n, base + j);
            for (int k = 0; k < ndst; k++)
                dst[(first + k) % ndst][base + j] = v;
        }
    }
}

template <int DT, int OP> __global__ void k_allreduce_oneshot(symaddr_coll_desc_t d)
{
    typedef traits<DT> tr;
    typedef typename tr::T T;
    uint64_t e = coll_epoch(d), deadline = coll_deadline(d);
    const T *src[COLL_MAX_NODE];
    T *slot = (T *)((char *)d.sync + d.stage_offset + (e & 1) * SYMADDR_COLL_STAGE_BYTES);
    const T *send = (const T *)d.send;
    T *recv = (T *)d.recv;
    if (coll_failed(d))
        goto finish;
    /* Each thread stages exactly the elements it reduces later, so the block's own barrier
     * covers them. */
    FOR_TILES(TILE_N, base, len, 0, d.count)
    {
        if (len == TILE_N) {
            coll_tile_t<T, TILE_N> v;
            tile_load<T, TILE_N>(v, send + base, d.vec);
            tile_store<T, TILE_N>(slot + base, v, 1);
        } else {
            for (size_t j = 0; j < len; j++)
                slot[base + j] = send[base + j];
        }
    }
    if (!coll_barrier(d, e, 1, deadline))
        goto finish;
    for (int q = 0; q < d.node_size; q++)
        src[q] = (const T *)symaddr_translate(slot, d.node_ranks[q], d.sync_pb, d.rank);
    FOR_TILES(TILE_N, base, len, 0, d.count)
    reduce_tile_to<DT, OP>(&recv, 1, 0, src, d.node_size, base, len, 1, d.vec);
finish:
    coll_finish(d, e);
}

/* Reduce-scatter by loads fused with all-gather by stores: each rank reduces its chunk once
 * and stores it into every peer's recv. In place is safe: an element of a chunk is read and
 * written only by the chunk's owner, reads first. */
template <int DT, int OP> __global__ void k_allreduce_twoshot(symaddr_coll_desc_t d)
{
    typedef traits<DT> tr;
    typedef typename tr::T T;
    uint64_t e = coll_epoch(d), deadline = coll_deadline(d);
    const T *src[COLL_MAX_NODE];
    T *dst[COLL_MAX_NODE];
    size_t chunk = (d.count + (size_t)d.node_size - 1) / (size_t)d.node_size;
    chunk = (chunk + 63) / 64 * 64;
    size_t lo = chunk * (size_t)d.node_rank, hi = lo + chunk < d.count ? lo + chunk : d.count;
    if (coll_failed(d) || !coll_barrier(d, e, 1, deadline))
        goto finish;
    for (int q = 0; q < d.node_size; q++) {
        src[q] = (const T *)symaddr_translate(d.send, d.node_ranks[q], d.send_pb, d.rank);
        dst[q] = (T *)symaddr_translate(d.recv, d.node_ranks[q], d.recv_pb, d.rank);
    }
    /* Stores start at this rank's own slot, to spread them over the peers. */
    FOR_TILES(TILE_N, base, len, lo, hi)
    reduce_tile_to<DT, OP>(dst, d.node_size, d.node_rank, src, d.node_size, base, len, d.vec,
                           d.vec);
    coll_barrier(d, e, 2, deadline);
finish:
    coll_finish(d, e);
}

template <int DT, int OP> __global__ void k_reduce_scatter(symaddr_coll_desc_t d)
{
    typedef traits<DT> tr;
    typedef typename tr::T T;
    uint64_t e = coll_epoch(d), deadline = coll_deadline(d);
    const T *src[COLL_MAX_NODE];
    T *recv = (T *)d.recv;
    if (coll_failed(d) || !coll_barrier(d, e, 1, deadline))
        goto finish;
    for (int q = 0; q < d.node_size; q++)
        src[q] = (const T *)symaddr_translate(d.send, d.node_ranks[q], d.send_pb, d.rank) +
                 d.count * (size_t)d.node_rank;
    FOR_TILES(TILE_N, base, len, 0, d.count)
    reduce_tile_to<DT, OP>(&recv, 1, 0, src, d.node_size, base, len, d.vec, d.vec);
    coll_barrier(d, e, 2, deadline);
finish:
    coll_finish(d, e);
}

/* LL allreduce: each rank stores its input straight into every peer's inbox as packets of 4
 * data bytes and a 4-byte flag, and reduces from its own inboxes once this call's packets
 * arrived. No barrier: the wait is one one-way trip. An inbox (epoch parity p) is written
 * again only at epoch e + 2, which its writer starts after e + 1, which needed this rank's
 * packets of e + 1, sent after this rank finished reading e. The reader clears every packet
 * it took, so an inbox holds nothing but packets in flight, and the flag (never 0, the
 * cleared value) cannot match a slot that was never written or already read at any epoch. */
SYMADDR_DEVFN uint32_t ll_flag(uint64_t epoch)
{
    return (uint32_t)(epoch % 0xffffffffu) + 1u;
}

SYMADDR_DEVFN void ll_put(uint64_t *p, uint32_t data, uint32_t flag)
{
    uint64_t v = (uint64_t)flag << 32 | data;
#if SYMADDR_ON_GPU
    *(volatile uint64_t *)p = v;
#else
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

/* The packet's data once its flag is @p flag, the packet then cleared; 0 in *ok when the
 * deadline passed or a peer failed. */
SYMADDR_DEVFN uint32_t ll_take(uint64_t *p, uint32_t flag, const symaddr_coll_desc_t &d,
                               uint64_t deadline, int *ok)
{
    for (unsigned spin = 0;; spin++) {
#if SYMADDR_ON_GPU
        uint64_t v = *(const volatile uint64_t *)p;
#else
        uint64_t v = __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
        if ((uint32_t)(v >> 32) == flag) {
            ll_put(p, 0, 0);
            return (uint32_t)v;
        }
        if ((spin & 63) == 63) {
            if (coll_failed(d)) {
                *ok = 0; /* a peer failed and told us */
                return 0;
            }
            if (symaddr_clock_ns() > deadline) {
                coll_fail(d, SYMADDR_ERR_TIMEOUT);
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

template <int DT, int OP> __global__ void k_allreduce_ll(symaddr_coll_desc_t d)
{
    typedef traits<DT> tr;
    typedef typename tr::T T;
    enum { PER = 8 / sizeof(T) }; /* elements of a step: 8 data bytes, two packets */
    uint64_t e = coll_epoch(d), deadline = coll_deadline(d);
    uint32_t flag = ll_flag(e);
    size_t bytes = d.count * sizeof(T), steps = (bytes + 7) / 8;
    char *inboxes = (char *)d.sync + d.ll_offset +
                    (e & 1) * (size_t)d.node_size * SYMADDR_COLL_LL_INBOX;
    uint64_t *dst[COLL_MAX_NODE];
    int ok = 1;
    if (coll_failed(d))
        goto finish;
    for (int q = 0; q < d.node_size; q++)
        dst[q] = (uint64_t *)symaddr_translate(inboxes + (size_t)d.node_rank * SYMADDR_COLL_LL_INBOX,
                                               d.node_ranks[q], d.sync_pb, d.rank);
    for (size_t s = symaddr_grid_thread(); s < steps; s += symaddr_grid_threads()) {
        uint32_t w[2];
        ll_read8(w, (const char *)d.send + s * 8, bytes - s * 8 < 8 ? bytes - s * 8 : 8);
        for (int k = 0; k < d.node_size; k++) {
            int q = (d.node_rank + k) % d.node_size;
            ll_put(dst[q] + 2 * s, w[0], flag);
            ll_put(dst[q] + 2 * s + 1, w[1], flag);
        }
    }
    for (size_t s = symaddr_grid_thread(); s < steps && ok; s += symaddr_grid_threads()) {
        typename tr::A acc[PER] = {};
        for (int q = 0; q < d.node_size && ok; q++) {
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
finish:
    coll_finish(d, e);
}

/* Data movement only: allgather (stores), broadcast (loads from the root), alltoall (stores),
 * barrier. bytes is per rank. */
__global__ void k_move(symaddr_coll_desc_t d, size_t bytes)
{
    uint64_t e = coll_epoch(d), deadline = coll_deadline(d);
    const char *send = (const char *)d.send;
    char *recv = (char *)d.recv;
    size_t t = symaddr_grid_thread(), nt = symaddr_grid_threads();
    if (coll_failed(d) || !coll_barrier(d, e, 1, deadline))
        goto finish;
    switch (d.kind) {
    case SYMADDR_COLL_ALLGATHER:
        for (int k = 0; k < d.node_size; k++) {
            int q = (d.node_rank + k) % d.node_size;
            void *dst = symaddr_translate(recv + bytes * (size_t)d.rank, d.node_ranks[q],
                                          d.recv_pb, d.rank);
            if (dst != (const void *)send)
                symaddr_copy_bytes_(dst, send, bytes, t, nt);
        }
        break;
    case SYMADDR_COLL_BROADCAST: {
        const void *src = symaddr_translate(send, d.node_ranks[d.root], d.send_pb, d.rank);
        if (src != (const void *)recv)
            symaddr_copy_bytes_(recv, src, bytes, t, nt);
        break;
    }
    case SYMADDR_COLL_ALLTOALL:
        for (int k = 0; k < d.node_size; k++) {
            int q = (d.node_rank + k) % d.node_size;
            symaddr_copy_bytes_(symaddr_translate(recv + bytes * (size_t)d.rank,
                                                  d.node_ranks[q], d.recv_pb, d.rank),
                                send + bytes * (size_t)d.node_ranks[q], bytes, t, nt);
        }
        break;
    default:
        break;
    }
    if (d.kind != SYMADDR_COLL_BARRIER)
        coll_barrier(d, e, 2, deadline);
finish:
    coll_finish(d, e);
}

/* The launchers stay visible to the device pass of a GPU compile: that is what instantiates the
 * template kernels there. Only the table, which points at host code, is host-pass only. */
namespace {

[[maybe_unused]] size_t dtype_size(symaddr_dtype_t dt)
{
    static const size_t sizes[] = {4, 4, 8, 8, 4, 8, 2, 2};
    return sizes[dt];
}

/* Kernels are launched by name: nvcc launches a template kernel reached through a function
 * pointer without running it. The comma of a template argument list is hidden from the
 * launch macro until it has been expanded. */
#define COMMA ,

template <int DT, int OP> symaddr_status_t launch_reduce(const symaddr_coll_desc_t &d, void *stream)
{
    switch (d.kind) {
    case SYMADDR_COLL_ALLREDUCE_ONESHOT:
        return SYMADDR_LAUNCH(k_allreduce_oneshot<DT COMMA OP>, d.blocks, COLL_THREADS, stream, d);
    case SYMADDR_COLL_ALLREDUCE_TWOSHOT:
        return SYMADDR_LAUNCH(k_allreduce_twoshot<DT COMMA OP>, d.blocks, COLL_THREADS, stream, d);
    case SYMADDR_COLL_ALLREDUCE_LL:
        return SYMADDR_LAUNCH(k_allreduce_ll<DT COMMA OP>, d.blocks, COLL_THREADS, stream, d);
    default:
        return SYMADDR_LAUNCH(k_reduce_scatter<DT COMMA OP>, d.blocks, COLL_THREADS, stream, d);
    }
}

template <int DT> symaddr_status_t launch_dt(const symaddr_coll_desc_t &d, void *stream)
{
    switch (d.op) {
    case SYMADDR_SUM: return launch_reduce<DT, SYMADDR_SUM>(d, stream);
    case SYMADDR_PROD: return launch_reduce<DT, SYMADDR_PROD>(d, stream);
    case SYMADDR_MIN: return launch_reduce<DT, SYMADDR_MIN>(d, stream);
    default: return launch_reduce<DT, SYMADDR_MAX>(d, stream);
    }
}

[[maybe_unused]] symaddr_status_t coll_launch(const symaddr_coll_desc_t *d, void *stream)
{
    if (d->node_size > COLL_MAX_NODE || d->blocks == 0 || d->blocks > SYMADDR_COLL_MAX_BLOCKS)
        return SYMADDR_ERR_UNSUPPORTED;
    switch (d->kind) {
    case SYMADDR_COLL_BARRIER:
    case SYMADDR_COLL_ALLGATHER:
    case SYMADDR_COLL_BROADCAST:
    case SYMADDR_COLL_ALLTOALL:
        return SYMADDR_LAUNCH(k_move, d->blocks, COLL_THREADS, stream, *d,
                              d->count * dtype_size(d->dtype));
    default:
        break;
    }
    switch (d->dtype) {
    case SYMADDR_INT32: return launch_dt<SYMADDR_INT32>(*d, stream);
    case SYMADDR_UINT32: return launch_dt<SYMADDR_UINT32>(*d, stream);
    case SYMADDR_INT64: return launch_dt<SYMADDR_INT64>(*d, stream);
    case SYMADDR_UINT64: return launch_dt<SYMADDR_UINT64>(*d, stream);
    case SYMADDR_FLOAT32: return launch_dt<SYMADDR_FLOAT32>(*d, stream);
    case SYMADDR_FLOAT64: return launch_dt<SYMADDR_FLOAT64>(*d, stream);
    case SYMADDR_FLOAT16: return launch_dt<SYMADDR_FLOAT16>(*d, stream);
    default: return launch_dt<SYMADDR_BFLOAT16>(*d, stream);
    }
}

#if defined(SYMADDR_KERNELS_CPU)
[[maybe_unused]] unsigned resident_blocks(int device)
{
    (void)device;
    return UINT_MAX; /* a "kernel" is a function call on the caller's thread */
}
#else
/* The fewest blocks per SM that any collective kernel keeps resident, times the SMs. */
template <typename K> void occupancy_min(int &m, K kernel)
{
    int n = 0;
    if (hipOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, COLL_THREADS, 0) != hipSuccess) {
        (void)hipGetLastError();
        n = 0;
    }
    m = n < m ? n : m;
}

template <int DT, int OP> void occupancy_reduce(int &m)
{
    occupancy_min(m, k_allreduce_oneshot<DT, OP>);
    occupancy_min(m, k_allreduce_twoshot<DT, OP>);
    occupancy_min(m, k_allreduce_ll<DT, OP>);
    occupancy_min(m, k_reduce_scatter<DT, OP>);
}

template <int DT> void occupancy_dt(int &m)
{
    occupancy_reduce<DT, SYMADDR_SUM>(m);
    occupancy_reduce<DT, SYMADDR_PROD>(m);
    occupancy_reduce<DT, SYMADDR_MIN>(m);
    occupancy_reduce<DT, SYMADDR_MAX>(m);
}

[[maybe_unused]] unsigned resident_blocks(int device)
{
    int m = 1 << 30, sms = 0;
    occupancy_min(m, k_move);
    occupancy_dt<SYMADDR_INT32>(m);
    occupancy_dt<SYMADDR_UINT32>(m);
    occupancy_dt<SYMADDR_INT64>(m);
    occupancy_dt<SYMADDR_UINT64>(m);
    occupancy_dt<SYMADDR_FLOAT32>(m);
    occupancy_dt<SYMADDR_FLOAT64>(m);
    occupancy_dt<SYMADDR_FLOAT16>(m);
    occupancy_dt<SYMADDR_BFLOAT16>(m);
    if (hipDeviceGetAttribute(&sms, hipDeviceAttributeMultiprocessorCount, device) != hipSuccess) {
        (void)hipGetLastError();
        return 0;
    }
    return m > 0 && sms > 0 ? (unsigned)m * (unsigned)sms : 0;
}
#endif

#if defined(SYMADDR_KERNELS_CPU)
/* inout[i] = inout[i] op in[i] on the host, for the MPI stage between nodes. */
template <int DT, int OP> void host_reduce_t(void *inout, const void *in, size_t count)
{
    typedef traits<DT> tr;
    typename tr::T *a = (typename tr::T *)inout;
    const typename tr::T *b = (const typename tr::T *)in;
    for (size_t i = 0; i < count; i++)
        a[i] = tr::store(apply<OP>(tr::load(a[i]), tr::load(b[i])));
}

template <int DT> void host_reduce_dt(symaddr_redop_t op, void *inout, const void *in, size_t n)
{
    switch (op) {
    case SYMADDR_SUM: host_reduce_t<DT, SYMADDR_SUM>(inout, in, n); break;
    case SYMADDR_PROD: host_reduce_t<DT, SYMADDR_PROD>(inout, in, n); break;
    case SYMADDR_MIN: host_reduce_t<DT, SYMADDR_MIN>(inout, in, n); break;
    default: host_reduce_t<DT, SYMADDR_MAX>(inout, in, n); break;
    }
}

void host_reduce(symaddr_dtype_t dt, symaddr_redop_t op, void *inout, const void *in, size_t n)
{
    switch (dt) {
    case SYMADDR_INT32: host_reduce_dt<SYMADDR_INT32>(op, inout, in, n); break;
    case SYMADDR_UINT32: host_reduce_dt<SYMADDR_UINT32>(op, inout, in, n); break;
    case SYMADDR_INT64: host_reduce_dt<SYMADDR_INT64>(op, inout, in, n); break;
    case SYMADDR_UINT64: host_reduce_dt<SYMADDR_UINT64>(op, inout, in, n); break;
    case SYMADDR_FLOAT32: host_reduce_dt<SYMADDR_FLOAT32>(op, inout, in, n); break;
    case SYMADDR_FLOAT64: host_reduce_dt<SYMADDR_FLOAT64>(op, inout, in, n); break;
    case SYMADDR_FLOAT16: host_reduce_dt<SYMADDR_FLOAT16>(op, inout, in, n); break;
    default: host_reduce_dt<SYMADDR_BFLOAT16>(op, inout, in, n); break;
    }
}
#endif

} // namespace

#if SYMADDR_HOST_PASS
#if defined(SYMADDR_KERNELS_CPU)
extern "C" const symaddr_coll_ops_t symaddr_coll_cpu = {
    .size = sizeof(symaddr_coll_ops_t),
    .launch = coll_launch,
    .resident_blocks = resident_blocks,
    .host_reduce = host_reduce,
};
#else
extern "C" const symaddr_coll_ops_t symaddr_coll_gpu = {
    .size = sizeof(symaddr_coll_ops_t),
    .launch = coll_launch,
    .resident_blocks = resident_blocks,
    .host_reduce = NULL,
};
#endif
#endif
