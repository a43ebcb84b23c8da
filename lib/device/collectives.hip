/* SPDX-License-Identifier: MIT */
/* Collective kernels on symmetric memory, one source for every backend, split by role into
 * coll_types.h (element types), symaddr/team.h (synchronisation: the blocks users' kernels
 * get too), coll_tiles.h (tiles),
 * coll_reduce.h and coll_move.h (the kernels); this file launches them. They see only
 * pointers, peer tables and the context's sync area:
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
#include "symaddr/team.h"

#define COLL_MAX_NODE 64

/* A "tile" is what one thread handles per step: a vectorisable run on the cpu; on a GPU two
 * 16-byte packs, so that every thread keeps two wide loads per peer in flight. */
#if defined(SYMADDR_KERNELS_CPU)
#define COLL_TILE_BYTES 2048
#define COLL_THREADS 1
#define COLL_UNROLL
#else
#define COLL_TILE_BYTES 32
#define COLL_THREADS SYMADDR_COLL_THREADS
#define COLL_UNROLL _Pragma("unroll")
#endif

#include "coll_types.h"
#include "coll_tiles.h"

/* Rooted collectives reach a peer's buffer where that peer passed it, as MPI's do: a rank need
 * not pass the root's offset (MPI ignores a non-root's recv of gather). Before barrier 1 every
 * rank publishes, in its block's row of its sync area, the buffer its peers reach (its offset from
 * the registered pointer, which means one byte on every rank: an import's table is shifted by
 * each rank's own view, symaddr_backing_t.offset) with the call's epoch and identity; after it a
 * rank reads the row of each peer it reaches. A row of another call, another collective, root,
 * dtype, op or count, or of a buffer in another table fails the call with MISMATCH on every rank:
 * no rank returns OK, and nothing is written outside the root's recv (ranks that matched the root
 * may have stored their blocks into it). */
SYMADDR_DEVFN uint64_t *coll_args_row(const symaddr_coll_desc_t &d)
{
    return (uint64_t *)((char *)d.team.sync + d.args_offset) +
           SYMADDR_COLL_ARGS_WORDS * (size_t)symaddr_block_index();
}

SYMADDR_DEVFN void coll_publish(const symaddr_coll_desc_t &d, const symaddr_team_call_t &c,
                                const void *p, const uint64_t *pb, uint64_t table, uint64_t shift)
{
    if (symaddr_block_thread() == 0) { /* the barrier orders thread 0's stores */
        volatile uint64_t *w = coll_args_row(d);
        w[0] = c.epoch;
        w[1] = d.ident;
        w[2] = d.count;
        w[3] = table;
        w[4] = (uint64_t)(uintptr_t)p - pb[d.team.rank] - shift; /* from the registered pointer */
    }
}

/* Node rank q's published buffer, as this rank reaches it through table pb (number table,
 * shifted by shift on this rank); NULL where the rows do not match (the call failed). */
SYMADDR_DEVFN char *coll_published(const symaddr_coll_desc_t &d, const symaddr_team_call_t &c,
                                   int q, const uint64_t *pb, uint64_t table, uint64_t shift)
{
    const volatile uint64_t *w =
        (const volatile uint64_t *)symaddr_team_peer(&d.team, coll_args_row(d), d.team.sync_pb, q);
    if (!w || w[0] != c.epoch || w[1] != d.ident || w[2] != d.count || w[3] != table) {
        symaddr_team_fail(&d.team, SYMADDR_ERR_MISMATCH);
        return NULL;
    }
    return (char *)(uintptr_t)(pb[d.team.node_ranks[q]] + shift + w[4]);
}

/* Every barrier-based collective checks that its node peers are in the same call, before any
 * rank touches a peer's memory: ranks that disagree on the collective, count, dtype, op or root
 * all fail with MISMATCH, rather than return OK with data of another call's shape (without
 * validation mode too). At its start each rank stores the call's word into its slot of every
 * node peer's row (of this block and the epoch's parity); in barrier 1 each compares the word
 * of every peer it met, in its own row, with local loads only (symaddr_team_barrier_check_).
 * A peer rewrites a row of this parity two calls later, after barrier 1 of the next call,
 * which this rank has not reached yet. */
SYMADDR_DEVFN uint64_t coll_ident_word(const symaddr_coll_desc_t &d, uint64_t epoch)
{
    uint64_t h = d.ident * 0x9e3779b97f4a7c15ull ^ (uint64_t)d.count * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 29;
    return h + epoch; /* a row of two calls before never matches */
}

SYMADDR_DEVFN uint64_t *coll_ident_row(const symaddr_coll_desc_t &d, uint64_t epoch)
{
    return (uint64_t *)((char *)d.team.sync + d.ident_offset) +
           ((epoch & 1) * SYMADDR_COLL_MAX_BLOCKS + symaddr_block_index()) *
               (size_t)d.team.node_size;
}

SYMADDR_DEVFN void coll_ident_send(const symaddr_coll_desc_t &d, const symaddr_team_call_t &c)
{
    uint64_t *row = coll_ident_row(d, c.epoch), w = coll_ident_word(d, c.epoch);
    for (int q = (int)symaddr_block_thread(); q < d.team.node_size;
         q += (int)symaddr_block_threads()) {
        uint64_t *p =
            (uint64_t *)symaddr_team_peer(&d.team, row + d.team.node_rank, d.team.sync_pb, q);
        if (p)
            *(volatile uint64_t *)p = w;
    }
}

/* The LL and Lamport allreduces have no barrier: each rank pushes its call's identity as one
 * more step after its data (16 bytes), and each compares every peer's as it takes it. A rank of
 * another count reads a data chunk there, or waits for a step its peer never pushes until that
 * peer's failure reaches it. The grid's last thread pushes and takes that step, after its data
 * if it has any: the launch gives the grid a thread more than the data's steps (launch.c), so
 * that it has none and the step costs no round of its own. Still, on one H100 at 8 ranks the
 * step costs about a fifth of a small call replayed from a graph, whatever its form, and so
 * does its code left in a kernel that does not run it (doc/performance.md): a config may leave
 * it out (no_call_check), and the launch then takes the kernel built without it (ID 0). */
template <int ID> SYMADDR_DEVFN int coll_ident_thread(void)
{
    return ID && symaddr_grid_thread() == symaddr_grid_threads() - 1;
}

/* The step's words, from the kernel's arguments alone, so that they are ready before the
 * call's words arrive: no epoch, as a step of an earlier call cannot be there (Lamport's reader
 * empties what it took, LL's flag is the epoch's). Words of 31 bits, so that none is the
 * Lamport marker (all ones). */
SYMADDR_DEVFN void coll_ident_words(const symaddr_coll_desc_t &d, uint32_t w[4])
{
    uint64_t h = coll_ident_word(d, 0);
    w[0] = (uint32_t)h & 0x7fffffffu;
    w[1] = (uint32_t)(h >> 32) & 0x7fffffffu;
    w[2] = w[3] = 0;
}

/* Whether the identity steps of @p n peers, got[u] (LL's two words or Lamport's four; the last
 * two are zero), are all @p id; else the call fails with MISMATCH on every node rank. One
 * comparison of the two words that carry the hash per peer, and the failure once. */
template <int N>
SYMADDR_DEVFN int coll_ident_check(const symaddr_coll_desc_t &d, const uint32_t id[4],
                                   const uint32_t (&got)[N][4], int n)
{
    uint32_t diff = 0;
    /* unrolled: an index known at compile time keeps got in registers */
    COLL_UNROLL
    for (int u = 0; u < N; u++)
        if (u < n)
            diff |= (got[u][0] ^ id[0]) | (got[u][1] ^ id[1]) | got[u][2] | got[u][3];
    if (diff)
        symaddr_team_fail(&d.team, SYMADDR_ERR_MISMATCH);
    return !diff;
}

/* The first steps of a barrier-based collective: its call, whether the team failed before it
 * (*broken_p, for coll_barrier_first: loaded with the call's words, not on its own later), and
 * its identity word stored into every node peer's row before any other work, so that the
 * stores are done by barrier 1. */
SYMADDR_DEVFN symaddr_team_call_t coll_begin(const symaddr_coll_desc_t &d, int *broken_p)
{
    symaddr_team_call_t call = symaddr_team_begin(&d.team);
    *broken_p = symaddr_team_failed(&d.team);
    coll_ident_send(d, call);
    return call;
}

/* Barrier 1, with the identity check: 1 to every thread of the block where the team is sound
 * and every node peer is in this same call, else 0 (the team failed before, or now with
 * MISMATCH on every node rank). */
SYMADDR_DEVFN int coll_barrier_first(const symaddr_coll_desc_t &d, const symaddr_team_call_t &call,
                                     int broken)
{
    return symaddr_team_barrier_check_(&d.team, &call, 1, coll_ident_row(d, call.epoch),
                                       coll_ident_word(d, call.epoch), broken);
}

#include "coll_reduce.h"
#include "coll_move.h"

/* The launchers stay visible to the device pass of a GPU compile: that is what instantiates the
 * template kernels there. Only the table, which points at host code, is host-pass only. */
namespace
{

[[maybe_unused]] size_t dtype_size(symaddr_dtype_t dt)
{
#define DT_SIZE(E, name, bytes, T) bytes,
    static const size_t sizes[] = {SYMADDR_DTYPE_LIST(DT_SIZE)};
    return sizes[dt];
}

/* Kernels are launched by name: nvcc launches a template kernel reached through a function
 * pointer without running it. The comma of a template argument list is hidden from the
 * launch macro until it has been expanded. */
#define COMMA ,
/* A collective kernel's launch: on CUDA, by symaddr/team.h's launcher as a programmatic dependent
 * where the team allows it, else by name. Written out per backend, since a launch macro inside
 * another would split the template's comma. */
#define COLL_BLOCK_THREADS(d) ((d).threads ? (d).threads : COLL_THREADS)
#if defined(SYMADDR_KERNELS_CPU)
#define COLL_LAUNCH(kernel, d, stream, ...) ((void)(stream), kernel(__VA_ARGS__), SYMADDR_OK)
#elif defined(SYMADDR_USE_CUDA)
#define COLL_LAUNCH(kernel, d, stream, ...)                                                        \
    ((d).team.pdl                                                                                  \
         ? symaddr_launch_status(symaddr_team_launch(&(d).team, kernel, (d).blocks,                \
                                                     COLL_BLOCK_THREADS(d), stream, __VA_ARGS__))  \
         : (kernel<<<dim3((d).blocks), dim3(COLL_BLOCK_THREADS(d)), 0, (hipStream_t)(stream)>>>(   \
                __VA_ARGS__),                                                                      \
            symaddr_launch_status(hipGetLastError())))
#else
#define COLL_LAUNCH(kernel, d, stream, ...)                                                        \
    (kernel<<<dim3((d).blocks), dim3(COLL_BLOCK_THREADS(d)), 0, (hipStream_t)(stream)>>>(          \
         __VA_ARGS__),                                                                             \
     symaddr_launch_status(hipGetLastError()))
#endif

/* The kernel of every kind, one line each, beside the kernels: MOVE_KINDS (coll_move.h) and
 * REDUCE_KERNELS (coll_reduce.h). The launch and the occupancy read them; LL and Lamport (the
 * floats alone), each built with and without the identity step (coll_ident_thread), are written
 * out below. A kind in none of these stops the build in the switches (-Wswitch). */
#define KIND_LABEL(E, ...) case SYMADDR_COLL_##E:
#define REDUCE_CASE(E, kernel)                                                                     \
    case SYMADDR_COLL_##E: return COLL_LAUNCH(kernel<DT COMMA OP>, d, stream, d);

template <int DT, int OP> symaddr_status_t launch_reduce(const symaddr_coll_desc_t &d, void *stream)
{
    switch (d.kind) {
        REDUCE_KERNELS(REDUCE_CASE)
    case SYMADDR_COLL_ALLREDUCE_LL:
        return d.ident_step ? COLL_LAUNCH(k_allreduce_ll<DT COMMA OP COMMA 1>, d, stream, d)
                            : COLL_LAUNCH(k_allreduce_ll<DT COMMA OP COMMA 0>, d, stream, d);
    case SYMADDR_COLL_ALLREDUCE_LAMPORT:
        if constexpr (lamport_ok<DT>::value)
            return d.ident_step
                       ? COLL_LAUNCH(k_allreduce_lamport<DT COMMA OP COMMA 1>, d, stream, d)
                       : COLL_LAUNCH(k_allreduce_lamport<DT COMMA OP COMMA 0>, d, stream, d);
        else
            return SYMADDR_ERR_INVALID_ARG; /* the host picks LL for these */
        MOVE_KINDS(KIND_LABEL)
    case SYMADDR_COLL_KIND_COUNT_: break; /* coll_launch's, or no kind */
    }
    return SYMADDR_ERR_INVALID_ARG;
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
    if (d->team.node_size > COLL_MAX_NODE || d->blocks == 0 || d->blocks > SYMADDR_COLL_MAX_BLOCKS)
        return SYMADDR_ERR_UNSUPPORTED;
    switch (d->kind) {
        MOVE_KINDS(KIND_LABEL)
        return COLL_LAUNCH(k_move, *d, stream, *d, d->count * dtype_size(d->dtype));
        REDUCE_KERNELS(KIND_LABEL)
    case SYMADDR_COLL_ALLREDUCE_LL:
    case SYMADDR_COLL_ALLREDUCE_LAMPORT: break; /* the reducing kernels, by dtype and op below */
    case SYMADDR_COLL_KIND_COUNT_: return SYMADDR_ERR_INVALID_ARG;
    }
    switch (d->dtype) {
#define DT_LAUNCH(E, name, bytes, T)                                                               \
    case SYMADDR_##E: return launch_dt<SYMADDR_##E>(*d, stream);
        SYMADDR_DTYPE_LIST(DT_LAUNCH)
    default: return SYMADDR_ERR_INVALID_ARG;
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
#define REDUCE_OCCUPANCY(E, kernel) occupancy_min(m, kernel<DT, OP>);
    REDUCE_KERNELS(REDUCE_OCCUPANCY)
    occupancy_min(m, k_allreduce_ll<DT, OP, 1>);
    occupancy_min(m, k_allreduce_ll<DT, OP, 0>);
    if constexpr (lamport_ok<DT>::value) {
        occupancy_min(m, k_allreduce_lamport<DT, OP, 1>);
        occupancy_min(m, k_allreduce_lamport<DT, OP, 0>);
    }
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
#define DT_OCCUPANCY(E, name, bytes, T) occupancy_dt<SYMADDR_##E>(m);
    SYMADDR_DTYPE_LIST(DT_OCCUPANCY)
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
#define DT_HOST_REDUCE(E, name, bytes, T)                                                          \
    case SYMADDR_##E: host_reduce_dt<SYMADDR_##E>(op, inout, in, n); break;
        SYMADDR_DTYPE_LIST(DT_HOST_REDUCE)
    default: break;
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
