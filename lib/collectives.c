/* SPDX-License-Identifier: MIT */
/* Host side of the collectives: argument checks, algorithm choice, and the hierarchical path
 * (symmetric memory inside a node, MPI between nodes), all on the caller's stream. */
#include "context.h"
#include "symaddr/team.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define DTYPE_SIZE(E, name, bytes, T) [SYMADDR_##E] = bytes,
#define DTYPE_NAME(E, name, bytes, T) [SYMADDR_##E] = #name,
static const size_t dtype_sizes[SYMADDR_DTYPE_COUNT_] = {SYMADDR_DTYPE_LIST(DTYPE_SIZE)};
static const char *const dtype_names[SYMADDR_DTYPE_COUNT_] = {SYMADDR_DTYPE_LIST(DTYPE_NAME)};

size_t symaddr_dtype_size(symaddr_dtype_t dtype)
{
    return (int)dtype >= 0 && dtype < SYMADDR_DTYPE_COUNT_ ? dtype_sizes[dtype] : 0;
}

const char *symaddr_dtype_name(symaddr_dtype_t dtype)
{
    return (int)dtype >= 0 && dtype < SYMADDR_DTYPE_COUNT_ ? dtype_names[dtype] : NULL;
}

static const char *const coll_names[] = {
    [SYMADDR_COLL_BARRIER] = "symaddr_barrier",
    [SYMADDR_COLL_ALLREDUCE_ONESHOT] = "symaddr_allreduce",
    [SYMADDR_COLL_ALLREDUCE_TWOSHOT] = "symaddr_allreduce",
    [SYMADDR_COLL_ALLREDUCE_LL] = "symaddr_allreduce",
    [SYMADDR_COLL_ALLREDUCE_LAMPORT] = "symaddr_allreduce",
    [SYMADDR_COLL_ALLREDUCE_TWOSHOT_GET] = "symaddr_allreduce",
    [SYMADDR_COLL_ALLREDUCE_TWOSHOT_COPY] = "symaddr_allreduce",
    [SYMADDR_COLL_REDUCE_SCATTER] = "symaddr_reduce_scatter",
    [SYMADDR_COLL_ALLGATHER] = "symaddr_allgather",
    [SYMADDR_COLL_BROADCAST] = "symaddr_broadcast",
    [SYMADDR_COLL_ALLTOALL] = "symaddr_alltoall",
    [SYMADDR_COLL_REDUCE] = "symaddr_reduce",
    [SYMADDR_COLL_GATHER] = "symaddr_gather",
    [SYMADDR_COLL_SCATTER] = "symaddr_scatter",
};
_Static_assert(sizeof(coll_names) / sizeof(coll_names[0]) == SYMADDR_COLL_KIND_COUNT_,
               "a name for every kind");

/* ---- argument checks ---------------------------------------------------------------------- */

/* *bits_p collects the address bits of ptr and of every peer's copy (for d->vec); the table
 * comes in device (*pb_p) and host memory (*host_pb_p). */
static symaddr_status_t sym_buffer(symaddr_context_t *ctx, const void *ptr, size_t bytes,
                                   size_t align, const uint64_t **pb_p, const uint64_t **host_pb_p,
                                   uint64_t *bits_p, const char *fn, const char *what)
{
    symaddr_registration_t *r;
    if (!ptr)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG, "%s: %s is NULL", fn, what);
    if ((uintptr_t)ptr % align)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "%s: %s %p is not aligned to its %zu-byte elements; pass "
                                 "element-aligned buffers",
                                 fn, what, ptr, align);
    if (symaddr_registry_lookup(&ctx->reg, ptr, &r) != SYMADDR_OK)
        return symaddr_set_error(ctx, SYMADDR_ERR_NOT_FOUND,
                                 "%s: %s %p is not symmetric memory of this context; allocate it "
                                 "with symaddr_symmetric_alloc or register it",
                                 fn, what, ptr);
    if (bytes > r->map.range_bytes - ((uint64_t)(uintptr_t)ptr - r->map.range_base))
        return symaddr_set_error(ctx, SYMADDR_ERR_OUT_OF_BOUNDS,
                                 "%s: %s needs %zu bytes from %p, past the end of its "
                                 "registration",
                                 fn, what, bytes, ptr);
    *bits_p |= (uint64_t)(uintptr_t)ptr;
    for (int q = 0; q < ctx->core.boot.node_size; q++) {
        uint64_t base = r->map.host_peer_bases[ctx->core.boot.node_to_rank[q]];
        if (base == 0)
            return symaddr_set_error(ctx, SYMADDR_ERR_UNREACHABLE,
                                     "%s: %s is not mapped on node rank %d", fn, what, q);
        *bits_p |= base;
    }
    *pb_p = r->map.peer_bases;
    *host_pb_p = r->map.host_peer_bases;
    return SYMADDR_OK;
}

/* The collective a kind belongs to (its family: what ranks must agree they call, and what the
 * INFO log tracks) and the algorithm it names, for the INFO log. */
/* PEER_SEND, PEER_RECV: the buffers a kind's kernels reach on peers by translating this rank's
 * own pointer, so that every rank must pass them at the same offset of the registration. */
enum { PEER_SEND = 1, PEER_RECV = 2 };
static const struct {
    symaddr_coll_kind_t family;
    const char *collective, *algo;
    unsigned peers;
} kind_info[] = {
    [SYMADDR_COLL_BARRIER] = {SYMADDR_COLL_BARRIER, "barrier", "flags", 0},
    [SYMADDR_COLL_ALLREDUCE_ONESHOT] = {SYMADDR_COLL_ALLREDUCE_ONESHOT, "allreduce", "one-shot",
                                        PEER_SEND | PEER_RECV},
    [SYMADDR_COLL_ALLREDUCE_TWOSHOT] = {SYMADDR_COLL_ALLREDUCE_ONESHOT, "allreduce", "two-shot",
                                        PEER_SEND | PEER_RECV},
    [SYMADDR_COLL_ALLREDUCE_LL] = {SYMADDR_COLL_ALLREDUCE_ONESHOT, "allreduce", "ll",
                                   PEER_SEND | PEER_RECV},
    [SYMADDR_COLL_ALLREDUCE_LAMPORT] = {SYMADDR_COLL_ALLREDUCE_ONESHOT, "allreduce", "lamport",
                                        PEER_SEND | PEER_RECV},
    [SYMADDR_COLL_ALLREDUCE_TWOSHOT_GET] = {SYMADDR_COLL_ALLREDUCE_ONESHOT, "allreduce",
                                            "two-shot by loads", PEER_SEND | PEER_RECV},
    [SYMADDR_COLL_ALLREDUCE_TWOSHOT_COPY] = {SYMADDR_COLL_ALLREDUCE_ONESHOT, "allreduce",
                                             "two-shot, all-gather by the copy engine",
                                             PEER_SEND | PEER_RECV},
    [SYMADDR_COLL_REDUCE_SCATTER] = {SYMADDR_COLL_REDUCE_SCATTER, "reduce_scatter", "loads",
                                     PEER_SEND},
    [SYMADDR_COLL_ALLGATHER] = {SYMADDR_COLL_ALLGATHER, "allgather", "stores", PEER_RECV},
    [SYMADDR_COLL_BROADCAST] = {SYMADDR_COLL_BROADCAST, "broadcast", "loads from the root",
                                PEER_SEND},
    [SYMADDR_COLL_ALLTOALL] = {SYMADDR_COLL_ALLTOALL, "alltoall", "stores", PEER_RECV},
    [SYMADDR_COLL_REDUCE] = {SYMADDR_COLL_REDUCE, "reduce", "the root's loads", PEER_SEND},
    [SYMADDR_COLL_GATHER] = {SYMADDR_COLL_GATHER, "gather", "stores into the root", PEER_RECV},
    [SYMADDR_COLL_SCATTER] = {SYMADDR_COLL_SCATTER, "scatter", "loads from the root", PEER_SEND},
};
_Static_assert(sizeof(kind_info) / sizeof(kind_info[0]) == SYMADDR_COLL_KIND_COUNT_,
               "a family and an algorithm for every kind");

/* In validation mode every rank learns whether the others passed the same arguments and
 * whether any rank's arguments were bad; all then return the same status. Without it a bad
 * argument fails on its rank alone, and the peers time out. */
static symaddr_status_t check_match(symaddr_context_t *ctx, symaddr_status_t local,
                                    symaddr_coll_kind_t kind, size_t count, symaddr_dtype_t dt,
                                    int op, int root, const uint64_t offsets[2])
{
    if (!ctx->core.cfg.validate)
        return local;
    symaddr_status_t st = symaddr_agree_status(&ctx->core, local, coll_names[kind]);
    if (st != SYMADDR_OK)
        return st;
    enum { WORDS = 7 };
    uint64_t mine[WORDS] = {(uint64_t)kind_info[kind].family,
                            count,
                            (uint64_t)dt,
                            (uint64_t)op,
                            (uint64_t)root,
                            kind_info[kind].peers & PEER_SEND ? offsets[0] : 0,
                            kind_info[kind].peers & PEER_RECV ? offsets[1] : 0};
    uint64_t *all = malloc(sizeof(mine) * (size_t)ctx->core.size);
    if (!all)
        return symaddr_core_break(&ctx->core,
                                  symaddr_set_error(ctx, SYMADDR_ERR_NO_MEMORY,
                                                    "%s: out of host memory", coll_names[kind]));
    st = symaddr_mpi_allgather(&ctx->core.boot, ctx->core.comm, mine, all, sizeof(mine),
                               symaddr_bootstrap_deadline(&ctx->core.boot, 1));
    if (st != SYMADDR_OK) {
        free(all);
        symaddr_core_break(&ctx->core, st);
        return symaddr_set_error(ctx, st,
                                 "%s: the ranks could not compare their arguments "
                                 "within %u ms; the context is broken",
                                 coll_names[kind], ctx->core.cfg.timeout_ms);
    }
    for (int r = 0; r < ctx->core.size && st == SYMADDR_OK; r++) {
        const uint64_t *theirs = all + WORDS * (size_t)r;
        if (memcmp(theirs, all, 5 * sizeof(uint64_t)) != 0)
            st = symaddr_set_error(ctx, SYMADDR_ERR_MISMATCH,
                                   "%s: rank %d passed a different collective, count (%llu, rank "
                                   "0: %llu), dtype, op or root than rank 0; every rank must pass "
                                   "the same",
                                   coll_names[kind], r, (unsigned long long)theirs[1],
                                   (unsigned long long)all[1]);
        else if (memcmp(theirs + 5, all + 5, 2 * sizeof(uint64_t)) != 0)
            st =
                symaddr_set_error(ctx, SYMADDR_ERR_MISMATCH,
                                  "%s: rank %d passed %s at byte %llu of its registration, rank 0 "
                                  "at byte %llu; kernels reach a peer's %s at this rank's offset, "
                                  "so every rank must pass it at the same one",
                                  coll_names[kind], r, theirs[5] != all[5] ? "send" : "recv",
                                  (unsigned long long)(theirs[5] != all[5] ? theirs[5] : theirs[6]),
                                  (unsigned long long)(theirs[5] != all[5] ? all[5] : all[6]),
                                  theirs[5] != all[5] ? "send" : "recv");
    }
    free(all);
    return st;
}

/* The node as kernels see it: the host collectives' and users' kernels alike. */
static void team_fill(const symaddr_context_t *ctx, symaddr_team_t *t)
{
    t->sync = ctx->coll.sync.root;
    t->sync_pb = ctx->coll.sync.dev_table;
    t->node_ranks = ctx->coll.node_ranks;
    t->node_size = ctx->core.boot.node_size;
    t->node_rank = ctx->core.boot.node_rank;
    t->rank = ctx->core.rank;
    t->max_blocks = ctx->coll.max_blocks;
    t->lamport_offset = ctx->coll.lamport_offset;
    t->lamport_slot = ctx->coll.lamport_slot;
    t->timeout_ns =
        symaddr_backend_deadline_ns(&ctx->be, (uint64_t)ctx->core.cfg.timeout_ms * 1000000u);
    /* not where another rank shares the GPU: an early-resident grid could keep its kernels
     * from the SMs */
    t->pdl = ctx->be.ops->pdl && ctx->gpu_sharers == 1;
}

symaddr_status_t symaddr_team_get(symaddr_context_t *ctx, symaddr_team_t *team_p)
{
    if (!ctx || !team_p)
        return ctx ? symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                       "symaddr_team_get: team_p is NULL")
                   : SYMADDR_ERR_INVALID_ARG;
    if (ctx->core.broken != SYMADDR_OK)
        return symaddr_set_error(ctx, SYMADDR_ERR_BROKEN,
                                 "symaddr_team_get: the context is broken (%s); finalize it",
                                 symaddr_strerror(ctx->core.broken));
    team_fill(ctx, team_p);
    return SYMADDR_OK;
}

static void desc_init(symaddr_context_t *ctx, symaddr_coll_desc_t *d, symaddr_coll_kind_t kind,
                      size_t count, symaddr_dtype_t dt, symaddr_redop_t op, size_t work_bytes)
{
    memset(d, 0, sizeof(*d));
    d->kind = kind;
    d->dtype = dt;
    d->op = op;
    d->count = count;
    team_fill(ctx, &d->team);
    d->stage_offset = ctx->coll.stage_offset;
    d->ll_offset = ctx->coll.ll_offset;
    /* A block of 512 threads moves 16 KiB a sweep: one block for small messages keeps the
     * barriers cheap, and large ones get enough blocks to keep the links busy, up to what the
     * GPU holds resident for every rank that shares it. */
    size_t blocks = (work_bytes + (16u << 10) - 1) / (16u << 10);
    /* Lamport: one 16-byte chunk per thread, in blocks of lamport_threads (their pushes and
     * loads then spread over more SMs), or more where the chunks outnumber the grid's threads
     * (doc/performance.md: on 2 H200s, 128 threads take 0.3-0.4 us less than 512 from 16 KiB to
     * 256 KiB). */
    if (kind == SYMADDR_COLL_ALLREDUCE_LAMPORT && !ctx->be.ops->immediate) {
        size_t chunks = work_bytes / 32, threads = ctx->coll.lamport_threads;
        while (threads < SYMADDR_COLL_THREADS && chunks > threads * ctx->coll.max_blocks)
            threads *= 2;
        blocks = (chunks + threads - 1) / threads;
        d->threads = (unsigned)threads;
    }
    if (ctx->be.ops->immediate || blocks < 1)
        blocks = 1;
    d->blocks = (unsigned)(blocks > ctx->coll.max_blocks ? ctx->coll.max_blocks : blocks);
}

/* INFO: the algorithm of a collective, when it is not the one this context last logged. */
static void log_algorithm(symaddr_context_t *ctx, const symaddr_coll_desc_t *d)
{
    int *last = &ctx->coll.logged[kind_info[d->kind].family];
    if (*last == (int)d->kind + 1 ||
        !symaddr_log_on(&ctx->core.cfg, SYMADDR_LOG_INFO, SYMADDR_SUB_COLL))
        return;
    *last = (int)d->kind + 1;
    size_t bytes = d->count * symaddr_dtype_size(d->dtype);
    const char *unit = bytes >= (1u << 20) && bytes % (1u << 20) == 0 ? " MiB"
                       : bytes >= 1024 && bytes % 1024 == 0           ? " KiB"
                                                                      : " B";
    size_t shown = unit[1] == 'M' ? bytes >> 20 : unit[1] == 'K' ? bytes >> 10 : bytes;
    if (d->kind == SYMADDR_COLL_BARRIER)
        SYMADDR_LOG(&ctx->core, SYMADDR_LOG_INFO, SYMADDR_SUB_COLL, "barrier: flags");
    else
        SYMADDR_LOG(&ctx->core, SYMADDR_LOG_INFO, SYMADDR_SUB_COLL, "%s %zu%s %s: %s",
                    kind_info[d->kind].collective, shown, unit, symaddr_dtype_name(d->dtype),
                    kind_info[d->kind].algo);
}

static symaddr_status_t launch_kernel(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                      void *stream)
{
    symaddr_status_t st = ctx->be.ops->coll->launch(d, stream);
    if (st == SYMADDR_ERR_UNSUPPORTED)
        return symaddr_set_error(ctx, st,
                                 "%s: node groups larger than 64 ranks are not "
                                 "supported",
                                 coll_names[d->kind]);
    if (st != SYMADDR_OK)
        return symaddr_set_error(ctx, st, "%s: the %s runtime refused the launch: %s",
                                 coll_names[d->kind], ctx->be.ops->name, symaddr_launch_why);
    /* The cpu backend ran it already: report a failure now. */
    return ctx->be.ops->immediate ? symaddr_coll_status(ctx) : SYMADDR_OK;
}

/* Two-shot-copy's all-gather, after its kernel reduced this rank's part into recv: the copy
 * engine pushes the part into every node peer's recv, then a barrier keeps each rank in the
 * call until the peers' copies into its recv are done. Nothing else touches a peer's copy of
 * this part meanwhile: in place, it is the peer's send there, which only this rank read, in
 * the kernel before. A failed kernel's copies move data that the call then reports as failed;
 * a refused copy keeps this rank from the barrier, so that its peers time out rather than
 * return without its part. */
static symaddr_status_t gather_by_copy(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                       void *stream)
{
    size_t es = symaddr_dtype_size(d->dtype), lo, hi;
    const symaddr_bootstrap_t *b = &ctx->core.boot;
    uint64_t off = (uint64_t)(uintptr_t)d->recv - d->recv_host_pb[ctx->core.rank];
    symaddr_status_t st = SYMADDR_OK;
    symaddr_team_share(&d->team, d->count, 64, &lo, &hi);
    for (int k = 1; k < b->node_size && st == SYMADDR_OK && hi > lo; k++) {
        int q = (b->node_rank + k) % b->node_size;
        char *peer = (char *)(uintptr_t)(d->recv_host_pb[b->node_to_rank[q]] + off);
        st = ctx->be.ops->memcpy_async(&ctx->be, peer + lo * es, (char *)d->recv + lo * es,
                                       (hi - lo) * es, stream);
    }
    if (st != SYMADDR_OK)
        return symaddr_set_error(ctx, st,
                                 "symaddr_allreduce: the %s runtime refused a copy to a node "
                                 "peer: %s",
                                 ctx->be.ops->name, symaddr_runtime_says(ctx));
    symaddr_coll_desc_t bar;
    desc_init(ctx, &bar, SYMADDR_COLL_BARRIER, 0, SYMADDR_INT32, SYMADDR_SUM, 0);
    return launch_kernel(ctx, &bar, stream);
}

static symaddr_status_t launch(symaddr_context_t *ctx, const symaddr_coll_desc_t *d, void *stream)
{
    log_algorithm(ctx, d);
    symaddr_status_t st = launch_kernel(ctx, d, stream);
    return st == SYMADDR_OK && d->kind == SYMADDR_COLL_ALLREDUCE_TWOSHOT_COPY
               ? gather_by_copy(ctx, d, stream)
               : st;
}

/* ---- between nodes ------------------------------------------------------------------------ */

/* Copies of device memory for MPI, which may not be GPU-aware. */
static void *stage_out(symaddr_context_t *ctx, const void *dev, size_t bytes)
{
    void *h = malloc(bytes ? bytes : 1);
    if (h && ctx->be.ops->memcpy(&ctx->be, h, dev, bytes) != SYMADDR_OK) {
        free(h);
        h = NULL;
    }
    return h;
}

/* The stream's work done, then the failure (if any) any rank met, so that all take the same
 * path. */
static symaddr_status_t settle(symaddr_context_t *ctx, symaddr_status_t st, void *stream,
                               const char *fn)
{
    if (st == SYMADDR_OK)
        st = ctx->be.ops->stream_sync(&ctx->be, stream);
    if (st == SYMADDR_OK)
        st = symaddr_coll_status(ctx);
    return symaddr_agree_status(&ctx->core, st, fn);
}

/* MPI counts are ints: messages between nodes are refused past that. */
static symaddr_status_t mpi_fits(symaddr_context_t *ctx, size_t bytes, const char *fn)
{
    if (bytes <= INT_MAX)
        return SYMADDR_OK;
    return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_SIZE,
                             "%s: %zu bytes would go between nodes in one MPI call, past MPI's "
                             "2 GiB count; split the collective into smaller ones",
                             fn, bytes);
}

/* Node broadcast of count elements of recv from node rank root (in place), on stream. */
static symaddr_status_t node_bcast(symaddr_context_t *ctx, void *recv, const uint64_t *pb,
                                   size_t count, symaddr_dtype_t dt, int root, void *stream)
{
    symaddr_coll_desc_t d;
    desc_init(ctx, &d, SYMADDR_COLL_BROADCAST, count, dt, SYMADDR_SUM,
              count * symaddr_dtype_size(dt));
    d.send = recv;
    d.send_pb = pb;
    d.recv = recv;
    d.recv_pb = pb;
    d.root = root;
    d.vec = 0;
    return launch(ctx, &d, stream);
}

/* A leader's recv holds its node's result: the leaders combine them through MPI in node order,
 * and those that keep the total write it into their recv (the others' stays their node's).
 * Leaders only; the caller agrees on the status. */
static symaddr_status_t leaders_combine(symaddr_context_t *ctx, void *recv, size_t count,
                                        symaddr_dtype_t dt, symaddr_redop_t op, bool keep)
{
    size_t bytes = count * symaddr_dtype_size(dt);
    int nl;
    MPI_Comm_size(ctx->coll.leaders, &nl);
    char *mine = stage_out(ctx, recv, bytes), *all = malloc(bytes * (size_t)nl);
    symaddr_status_t st = mine && all ? SYMADDR_OK : SYMADDR_ERR_NO_MEMORY;
    if (st == SYMADDR_OK)
        st = symaddr_mpi_allgather(&ctx->core.boot, ctx->coll.leaders, mine, all, bytes,
                                   symaddr_bootstrap_deadline(&ctx->core.boot, 0));
    if (st == SYMADDR_OK && keep) {
        for (int l = 1; l < nl; l++)
            symaddr_coll_cpu.host_reduce(dt, op, all, all + bytes * (size_t)l, count);
        st = ctx->be.ops->memcpy(&ctx->be, recv, all, bytes);
    }
    free(mine);
    free(all);
    return st;
}

/* recv holds each node's result; leaders combine them, then every node broadcasts the total from
 * its leader. */
static symaddr_status_t leaders_allreduce(symaddr_context_t *ctx, void *recv, const uint64_t *pb,
                                          size_t count, symaddr_dtype_t dt, symaddr_redop_t op,
                                          void *stream)
{
    symaddr_status_t st = SYMADDR_OK;
    if (ctx->coll.leaders != MPI_COMM_NULL)
        st = leaders_combine(ctx, recv, count, dt, op, true);
    st = symaddr_agree_status(&ctx->core, st, "symaddr_allreduce (between nodes)");
    if (st == SYMADDR_OK)
        st = node_bcast(ctx, recv, pb, count, dt, 0, stream);
    return st;
}

/* ---- the calls ---------------------------------------------------------------------------- */

/* Whether [a, a+an) and [b, b+bn) overlap. */
static bool overlap(const void *a, size_t an, const void *b, size_t bn)
{
    return (const char *)a < (const char *)b + bn && (const char *)b < (const char *)a + an;
}

/* send and recv either the same buffer or apart. */
static symaddr_status_t in_place_or_apart(symaddr_context_t *ctx, const void *send,
                                          const void *recv, size_t bytes, size_t total,
                                          const char *fn)
{
    (void)total;
    if (send != recv && overlap(send, bytes, recv, bytes))
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "%s: send and recv overlap without being the same buffer; pass "
                                 "send == recv for in place, or buffers that do not overlap",
                                 fn);
    return SYMADDR_OK;
}

/* part apart from whole, or this rank's block of it (whole + rank * count), the only in-place
 * form of reduce-scatter (recv a block of send) and allgather (send a block of recv). */
static symaddr_status_t block_rule(symaddr_context_t *ctx, const void *part, const char *part_name,
                                   const void *whole, const char *whole_name, size_t bytes,
                                   size_t total, const char *fn)
{
    if (part != (const char *)whole + bytes * (size_t)ctx->core.rank &&
        overlap(part, bytes, whole, total))
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "%s: %s overlaps %s other than at this rank's block (%s + "
                                 "rank * count), the only in-place form",
                                 fn, part_name, whole_name, whole_name);
    return SYMADDR_OK;
}

static symaddr_status_t rs_rule(symaddr_context_t *ctx, const void *send, const void *recv,
                                size_t bytes, size_t total, const char *fn)
{
    return block_rule(ctx, recv, "recv", send, "send", bytes, total, fn);
}

static symaddr_status_t ag_rule(symaddr_context_t *ctx, const void *send, const void *recv,
                                size_t bytes, size_t total, const char *fn)
{
    return block_rule(ctx, send, "send", recv, "recv", bytes, total, fn);
}

/* alltoall: no in-place form. */
static symaddr_status_t a2a_rule(symaddr_context_t *ctx, const void *send, const void *recv,
                                 size_t bytes, size_t total, const char *fn)
{
    (void)bytes;
    if (overlap(send, total, recv, total))
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "%s: send and recv overlap; in-place alltoall is not supported, "
                                 "use separate buffers",
                                 fn);
    return SYMADDR_OK;
}

/* Checks shared by every collective, then (validation mode) the agreement; fills d. local is
 * the caller's verdict on sizes, dtype, op and root; rule(ctx, send, recv, ...) its overlap
 * rule, checked once both buffers are known to be in bounds. */
typedef symaddr_status_t (*overlap_rule_t)(symaddr_context_t *ctx, const void *send,
                                           const void *recv, size_t bytes, size_t total,
                                           const char *fn);

static symaddr_status_t coll_begin(symaddr_context_t *ctx, symaddr_status_t local,
                                   overlap_rule_t rule, symaddr_coll_kind_t kind, const void *send,
                                   size_t send_bytes, void *recv, size_t recv_bytes, size_t count,
                                   symaddr_dtype_t dt, symaddr_redop_t op, int root,
                                   size_t work_bytes, symaddr_coll_desc_t *d)
{
    const char *fn = coll_names[kind];
    const uint64_t *spb = NULL, *rpb = NULL, *shpb = NULL, *rhpb = NULL;
    size_t es = symaddr_dtype_size(dt);
    /* reduce-scatter reads at send + node_rank * count elements */
    uint64_t bits = kind == SYMADDR_COLL_REDUCE_SCATTER ? count * es : 0;
    symaddr_status_t st = local;
    if (st == SYMADDR_OK)
        st = sym_buffer(ctx, send, send_bytes, es, &spb, &shpb, &bits, fn, "send");
    if (st == SYMADDR_OK)
        st = sym_buffer(ctx, recv, recv_bytes, es, &rpb, &rhpb, &bits, fn, "recv");
    if (st == SYMADDR_OK && rule)
        st = rule(ctx, send, recv, count * es, count * es * (size_t)ctx->core.size, fn);
    /* where send and recv lie in their registrations: translation keeps the offset */
    uint64_t offsets[2] = {0, 0};
    if (st == SYMADDR_OK) {
        offsets[0] = (uint64_t)(uintptr_t)send - shpb[ctx->core.rank];
        offsets[1] = (uint64_t)(uintptr_t)recv - rhpb[ctx->core.rank];
    }
    if ((st = check_match(ctx, st, kind, count, dt, op, root, offsets)) != SYMADDR_OK)
        return st;
    desc_init(ctx, d, kind, count, dt, op, work_bytes);
    d->send = send;
    d->send_pb = spb;
    d->recv = recv;
    d->recv_pb = rpb;
    d->recv_host_pb = rhpb;
    d->root = root;
    d->vec = (bits & 15) == 0;
    return SYMADDR_OK;
}

/* The sizes of a call: bytes = count elements, total = bytes per rank of the context; local
 * verdict on dtype, op and overflow. */
static symaddr_status_t sizes(symaddr_context_t *ctx, size_t count, symaddr_dtype_t dt, int op,
                              size_t *bytes_p, size_t *total_p, const char *fn)
{
    size_t es = symaddr_dtype_size(dt);
    *bytes_p = *total_p = 0;
    if (!es)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "%s: dtype %d is not a symaddr_dtype_t", fn, (int)dt);
    if (op < 0 || op >= SYMADDR_REDOP_COUNT_)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG, "%s: op %d is not a symaddr_redop_t",
                                 fn, op);
    if (!symaddr_size_mul(count, es, bytes_p) ||
        !symaddr_size_mul(*bytes_p, (size_t)ctx->core.size, total_p) ||
        *total_p > SYMADDR_MAX_BYTES)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_SIZE,
                                 "%s: count %zu of %zu-byte elements over %d ranks does not fit "
                                 "symmetric memory (2^48 bytes); pass a smaller count",
                                 fn, count, es, ctx->core.size);
    return SYMADDR_OK;
}

/* ---- between nodes: each collective's step, after the node's kernel ---------------------- */

/* allreduce: the leaders combine their nodes' results, then every node broadcasts the total. */
static symaddr_status_t allreduce_nodes(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                        void *stream)
{
    symaddr_status_t st = settle(ctx, launch(ctx, d, stream), stream, "symaddr_allreduce");
    return st == SYMADDR_OK
               ? leaders_allreduce(ctx, d->recv, d->recv_pb, d->count, d->dtype, d->op, stream)
               : st;
}

/* The allreduce kind for bytes of dt, and the bytes of work that size its grid. */
static symaddr_coll_kind_t allreduce_kind(const symaddr_context_t *ctx, size_t bytes,
                                          symaddr_dtype_t dt, size_t *work_p)
{
    symaddr_allreduce_algo_t algo = ctx->core.cfg.allreduce_algo;
    int lamport_ok = dt == SYMADDR_FLOAT32 || dt == SYMADDR_FLOAT16 || dt == SYMADDR_BFLOAT16;
    if (algo == SYMADDR_ALLREDUCE_AUTO)
        algo = lamport_ok && bytes <= ctx->core.cfg.lamport_bytes && bytes <= ctx->coll.lamport_slot
                   ? SYMADDR_ALLREDUCE_LAMPORT
               : bytes <= ctx->core.cfg.ll_bytes       ? SYMADDR_ALLREDUCE_LL
               : bytes < ctx->core.cfg.twoshot_bytes   ? SYMADDR_ALLREDUCE_ONESHOT
               : bytes >= ctx->coll.twoshot_copy_bytes ? SYMADDR_ALLREDUCE_TWOSHOT_COPY
               : bytes >= ctx->coll.twoshot_get_bytes  ? SYMADDR_ALLREDUCE_TWOSHOT_GET
                                                       : SYMADDR_ALLREDUCE_TWOSHOT;
    if (algo == SYMADDR_ALLREDUCE_LAMPORT && !lamport_ok)
        algo = SYMADDR_ALLREDUCE_LL; /* no spare bit pattern to mark arrival with */
    if (algo == SYMADDR_ALLREDUCE_LAMPORT && bytes > ctx->coll.lamport_slot)
        algo = bytes <= SYMADDR_COLL_LL_BYTES ? SYMADDR_ALLREDUCE_LL : SYMADDR_ALLREDUCE_ONESHOT;
    if (algo == SYMADDR_ALLREDUCE_LL && bytes > SYMADDR_COLL_LL_BYTES)
        algo = SYMADDR_ALLREDUCE_ONESHOT; /* an inbox holds at most this much */
    if (algo == SYMADDR_ALLREDUCE_ONESHOT && bytes > SYMADDR_COLL_STAGE_BYTES)
        algo = SYMADDR_ALLREDUCE_TWOSHOT; /* one-shot stages at most this much */
    /* LL: one thread per 8 bytes; Lamport: per 16; two-shot: each rank reduces its share */
    *work_p = algo == SYMADDR_ALLREDUCE_TWOSHOT || algo == SYMADDR_ALLREDUCE_TWOSHOT_GET ||
                      algo == SYMADDR_ALLREDUCE_TWOSHOT_COPY
                  ? bytes / (size_t)ctx->core.boot.node_size
              : algo == SYMADDR_ALLREDUCE_LL      ? bytes * 4
              : algo == SYMADDR_ALLREDUCE_LAMPORT ? bytes * 2
                                                  : bytes;
    return algo == SYMADDR_ALLREDUCE_LL             ? SYMADDR_COLL_ALLREDUCE_LL
           : algo == SYMADDR_ALLREDUCE_LAMPORT      ? SYMADDR_COLL_ALLREDUCE_LAMPORT
           : algo == SYMADDR_ALLREDUCE_ONESHOT      ? SYMADDR_COLL_ALLREDUCE_ONESHOT
           : algo == SYMADDR_ALLREDUCE_TWOSHOT_GET  ? SYMADDR_COLL_ALLREDUCE_TWOSHOT_GET
           : algo == SYMADDR_ALLREDUCE_TWOSHOT_COPY ? SYMADDR_COLL_ALLREDUCE_TWOSHOT_COPY
                                                    : SYMADDR_COLL_ALLREDUCE_TWOSHOT;
}

/* Between nodes: every rank's block in turn is allreduced, a chunk at a time, into the sync
 * area's scratch (the same buffer on every rank, as a collective needs), and its owner copies
 * the chunk out to recv. */
static symaddr_status_t reduce_scatter_nodes(symaddr_context_t *ctx, const symaddr_coll_desc_t *d0,
                                             void *stream)
{
    const symaddr_coll_t *c = &ctx->coll;
    size_t es = symaddr_dtype_size(d0->dtype), chunk = c->scratch_bytes / es, work = 0;
    char *scratch = (char *)c->sync.root + c->scratch_offset;
    symaddr_status_t st = SYMADDR_OK;
    for (int b = 0; b < ctx->core.size && st == SYMADDR_OK; b++) {
        const char *src = (const char *)d0->send + (size_t)b * d0->count * es;
        /* every rank cuts every block alike, so that all make the same calls */
        for (size_t off = 0; off < d0->count && st == SYMADDR_OK; off += chunk) {
            size_t n = d0->count - off < chunk ? d0->count - off : chunk;
            symaddr_coll_desc_t d;
            desc_init(ctx, &d, allreduce_kind(ctx, n * es, d0->dtype, &work), n, d0->dtype, d0->op,
                      work);
            d.send = src + off * es;
            d.send_pb = d0->send_pb;
            d.recv = scratch;
            d.recv_pb = c->sync.dev_table;
            d.recv_host_pb = c->sync.host_table;
            d.vec = d0->vec && ((uintptr_t)d.send & 15) == 0;
            st = allreduce_nodes(ctx, &d, stream);
            if (st == SYMADDR_OK && b == ctx->core.rank)
                st = ctx->be.ops->stream_sync(&ctx->be, stream);
            if (st == SYMADDR_OK && b == ctx->core.rank)
                st = ctx->be.ops->memcpy(&ctx->be, (char *)d0->recv + off * es, scratch, n * es);
        }
    }
    return st;
}

/* Leaders swap their nodes' blocks as (rank, block) records through MPI. */
static symaddr_status_t leaders_allgather(symaddr_context_t *ctx, void *recv, size_t bytes)
{
    const symaddr_bootstrap_t *b = &ctx->core.boot;
    size_t rec = sizeof(int64_t) + bytes, mine_bytes;
    int nl;
    MPI_Comm_size(ctx->coll.leaders, &nl);
    if (!symaddr_size_mul(rec, (size_t)ctx->core.size, &mine_bytes) || mine_bytes > INT_MAX)
        return mpi_fits(ctx, SIZE_MAX, "symaddr_allgather");
    int *counts = malloc(sizeof(int) * (size_t)nl), *displs = malloc(sizeof(int) * (size_t)nl);
    int mine = (int)(rec * (size_t)b->node_size);
    char *out = malloc((size_t)mine), *in = malloc(rec * (size_t)ctx->core.size);
    symaddr_status_t st = counts && displs && out && in ? SYMADDR_OK : SYMADDR_ERR_NO_MEMORY;
    uint64_t deadline = symaddr_bootstrap_deadline(&ctx->core.boot, 0);
    for (int q = 0; st == SYMADDR_OK && q < b->node_size; q++) {
        int64_t r = b->node_to_rank[q];
        memcpy(out + rec * (size_t)q, &r, sizeof(r));
        st = ctx->be.ops->memcpy(&ctx->be, out + rec * (size_t)q + sizeof(r),
                                 (const char *)recv + bytes * (size_t)r, bytes);
    }
    if (st == SYMADDR_OK)
        st = symaddr_mpi_allgather(&ctx->core.boot, ctx->coll.leaders, &mine, counts, sizeof(int),
                                   deadline);
    for (int l = 0, off = 0; st == SYMADDR_OK && l < nl; off += counts[l], l++)
        displs[l] = off;
    if (st == SYMADDR_OK)
        st = symaddr_mpi_allgatherv(&ctx->core.boot, ctx->coll.leaders, out, mine, in, counts,
                                    displs, deadline);
    for (int k = 0; st == SYMADDR_OK && k < ctx->core.size; k++) {
        int64_t r;
        memcpy(&r, in + rec * (size_t)k, sizeof(r));
        st = ctx->be.ops->memcpy(&ctx->be, (char *)recv + bytes * (size_t)r,
                                 in + rec * (size_t)k + sizeof(r), bytes);
    }
    free(counts);
    free(displs);
    free(out);
    free(in);
    return st;
}

static symaddr_status_t allgather_nodes(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                        void *stream)
{
    static const char fn[] = "symaddr_allgather";
    size_t bytes = d->count * symaddr_dtype_size(d->dtype);
    symaddr_status_t st = settle(ctx, launch(ctx, d, stream), stream, fn);
    if (st != SYMADDR_OK)
        return st;
    if (ctx->coll.leaders != MPI_COMM_NULL)
        st = leaders_allgather(ctx, d->recv, bytes);
    st = symaddr_agree_status(&ctx->core, st, fn);
    return st == SYMADDR_OK ? node_bcast(ctx, d->recv, d->recv_pb,
                                         d->count * (size_t)ctx->core.size, d->dtype, 0, stream)
                            : st;
}

/* The root node's leader holds the data; leaders pass it on through MPI. */
static symaddr_status_t leaders_broadcast(symaddr_context_t *ctx, void *recv, size_t bytes,
                                          int has_root)
{
    int nl, from = 0, *flags;
    uint64_t deadline = symaddr_bootstrap_deadline(&ctx->core.boot, 0);
    MPI_Comm_size(ctx->coll.leaders, &nl);
    flags = malloc(sizeof(int) * (size_t)nl);
    void *h = stage_out(ctx, recv, bytes);
    symaddr_status_t st = flags && h ? SYMADDR_OK : SYMADDR_ERR_NO_MEMORY;
    if (st == SYMADDR_OK)
        st = symaddr_mpi_allgather(&ctx->core.boot, ctx->coll.leaders, &has_root, flags,
                                   sizeof(int), deadline);
    for (int l = 0; st == SYMADDR_OK && l < nl; l++)
        if (flags[l])
            from = l;
    if (st == SYMADDR_OK)
        st = symaddr_mpi_bcast(&ctx->core.boot, ctx->coll.leaders, h, bytes, from, deadline);
    if (st == SYMADDR_OK && !has_root)
        st = ctx->be.ops->memcpy(&ctx->be, recv, h, bytes);
    free(flags);
    free(h);
    return st;
}

/* broadcast: the root's node runs its kernel, the leaders pass the data on, the other nodes
 * broadcast it from their leader. */
static symaddr_status_t broadcast_nodes(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                        void *stream)
{
    static const char fn[] = "symaddr_broadcast";
    size_t bytes = d->count * symaddr_dtype_size(d->dtype);
    symaddr_status_t st = d->root >= 0 ? launch(ctx, d, stream) : SYMADDR_OK;
    if ((st = settle(ctx, st, stream, fn)) != SYMADDR_OK)
        return st;
    if (ctx->coll.leaders != MPI_COMM_NULL)
        st = leaders_broadcast(ctx, d->recv, bytes, d->root >= 0);
    st = symaddr_agree_status(&ctx->core, st, fn);
    if (st == SYMADDR_OK && d->root < 0)
        st = node_bcast(ctx, d->recv, d->recv_pb, d->count, d->dtype, 0, stream);
    return st;
}

/* alltoall: the blocks for other nodes go through MPI; the node's own moved in the kernel. */
static symaddr_status_t alltoall_nodes(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                       void *stream)
{
    static const char fn[] = "symaddr_alltoall";
    size_t bytes = d->count * symaddr_dtype_size(d->dtype), total = bytes * (size_t)ctx->core.size;
    symaddr_status_t st = settle(ctx, launch(ctx, d, stream), stream, fn);
    if (st != SYMADDR_OK)
        return st;
    int *counts = calloc((size_t)ctx->core.size, sizeof(int));
    int *displs = calloc((size_t)ctx->core.size, sizeof(int));
    char *hs = stage_out(ctx, d->send, total), *hr = malloc(total);
    st = counts && displs && hs && hr ? SYMADDR_OK : SYMADDR_ERR_NO_MEMORY;
    for (int r = 0; st == SYMADDR_OK && r < ctx->core.size; r++) {
        displs[r] = (int)(bytes * (size_t)r);
        counts[r] = (int)bytes;
    }
    for (int q = 0; st == SYMADDR_OK && q < ctx->core.boot.node_size; q++)
        counts[ctx->core.boot.node_to_rank[q]] = 0;
    if (st == SYMADDR_OK)
        st = symaddr_mpi_alltoallv(&ctx->core.boot, ctx->core.comm, hs, counts, displs, hr, counts,
                                   displs, symaddr_bootstrap_deadline(&ctx->core.boot, 0));
    for (int r = 0; st == SYMADDR_OK && r < ctx->core.size; r++)
        if (counts[r])
            st = ctx->be.ops->memcpy(&ctx->be, (char *)d->recv + displs[r], hr + displs[r], bytes);
    free(counts);
    free(displs);
    free(hs);
    free(hr);
    return symaddr_agree_status(&ctx->core, st, fn);
}

/* reduce: every node reduces to its node rank 0, the leaders combine the nodes' results in
 * node order through MPI, and the root's node passes the total from its leader to the root.
 * recv is the scratch of the ranks that are not the root. */
static symaddr_status_t reduce_nodes(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                     void *stream)
{
    static const char fn[] = "symaddr_reduce";
    symaddr_coll_desc_t to_leader = *d;
    to_leader.root = 0;
    symaddr_status_t st = settle(ctx, launch(ctx, &to_leader, stream), stream, fn);
    if (st != SYMADDR_OK)
        return st;
    if (ctx->coll.leaders != MPI_COMM_NULL) /* the total is kept on the root's node */
        st = leaders_combine(ctx, d->recv, d->count, d->dtype, d->op, d->root >= 0);
    st = symaddr_agree_status(&ctx->core, st, fn);
    if (st == SYMADDR_OK && d->root > 0) /* the root's node: from its leader to the root */
        st = node_bcast(ctx, d->recv, d->recv_pb, d->count, d->dtype, 0, stream);
    return st;
}

/* gather and scatter: the root's node moves its blocks in the kernel, MPI the blocks of the
 * ranks on other nodes (staged through the host). */
static symaddr_status_t rooted_nodes(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                     void *stream, const char *fn)
{
    bool gather = d->kind == SYMADDR_COLL_GATHER;
    size_t bytes = d->count * symaddr_dtype_size(d->dtype), total = bytes * (size_t)ctx->core.size;
    int me = ctx->core.rank, n = ctx->core.size, root = d->root_rank;
    symaddr_status_t st = d->root >= 0 ? launch(ctx, d, stream) : SYMADDR_OK;
    if ((st = settle(ctx, st, stream, fn)) != SYMADDR_OK)
        return st;
    /* counts[r]: bytes between rank r and the root (on the root: each rank off its node; off
     * the root's node: this rank's own block, to or from the root), at displs[r] */
    int *counts = calloc((size_t)n, sizeof(int)), *displs = calloc((size_t)n, sizeof(int));
    int *none = calloc((size_t)n, sizeof(int));
    char *host = me == root ? malloc(total) : malloc(bytes);
    st = counts && displs && none && host ? SYMADDR_OK : SYMADDR_ERR_NO_MEMORY;
    if (st == SYMADDR_OK && me == root) {
        for (int r = 0; r < n; r++) {
            counts[r] = (int)bytes;
            displs[r] = (int)(bytes * (size_t)r);
        }
        for (int q = 0; q < ctx->core.boot.node_size; q++) /* the kernel moved these */
            counts[ctx->core.boot.node_to_rank[q]] = 0;
    } else if (st == SYMADDR_OK && d->root < 0) {
        counts[root] = (int)bytes;
    }
    /* the data leave from: gather, each rank's send; scatter, the root's */
    if (st == SYMADDR_OK && (gather ? d->root < 0 : me == root))
        st = ctx->be.ops->memcpy(&ctx->be, host, d->send, me == root ? total : bytes);
    bool sends = gather ? me != root : me == root; /* else it receives, or neither */
    if (st == SYMADDR_OK)
        st = symaddr_mpi_alltoallv(&ctx->core.boot, ctx->core.comm, host, sends ? counts : none,
                                   displs, host, sends ? none : counts, displs,
                                   symaddr_bootstrap_deadline(&ctx->core.boot, 0));
    if (st == SYMADDR_OK && gather && me == root)
        for (int r = 0; st == SYMADDR_OK && r < n; r++)
            if (counts[r])
                st = ctx->be.ops->memcpy(&ctx->be, (char *)d->recv + displs[r], host + displs[r],
                                         bytes);
    if (st == SYMADDR_OK && !gather && d->root < 0)
        st = ctx->be.ops->memcpy(&ctx->be, d->recv, host, bytes);
    free(counts);
    free(displs);
    free(none);
    free(host);
    return symaddr_agree_status(&ctx->core, st, fn);
}

static symaddr_status_t gather_nodes(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                     void *stream)
{
    return rooted_nodes(ctx, d, stream, "symaddr_gather");
}

static symaddr_status_t scatter_nodes(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                      void *stream)
{
    return rooted_nodes(ctx, d, stream, "symaddr_scatter");
}

/* ---- the calls: one row per collective, one driver --------------------------------------------
 */

/* The kernel kind for a message of bytes per rank of dt, and the bytes of work that size its
 * grid. */
typedef symaddr_coll_kind_t (*kind_fn_t)(const symaddr_context_t *ctx, size_t bytes,
                                         symaddr_dtype_t dt, size_t *work_p);

#define FIXED_KIND(name, kind, work)                                                               \
    static symaddr_coll_kind_t name(const symaddr_context_t *ctx, size_t bytes,                    \
                                    symaddr_dtype_t dt, size_t *work_p)                            \
    {                                                                                              \
        (void)ctx;                                                                                 \
        (void)dt;                                                                                  \
        *work_p = (work);                                                                          \
        return kind;                                                                               \
    }
FIXED_KIND(rs_kind, SYMADDR_COLL_REDUCE_SCATTER, bytes)
FIXED_KIND(ag_kind, SYMADDR_COLL_ALLGATHER, bytes *(size_t)ctx->core.boot.node_size)
FIXED_KIND(bc_kind, SYMADDR_COLL_BROADCAST, bytes)
FIXED_KIND(a2a_kind, SYMADDR_COLL_ALLTOALL, bytes *(size_t)ctx->core.boot.node_size)
FIXED_KIND(reduce_kind, SYMADDR_COLL_REDUCE, bytes)
FIXED_KIND(gather_kind, SYMADDR_COLL_GATHER, bytes)
FIXED_KIND(scatter_kind, SYMADDR_COLL_SCATTER, bytes)

typedef struct coll_row {
    const char *name;
    bool send_all, recv_all; /* the buffer holds a block per rank (count each) */
    bool reduces, rooted;    /* takes op; takes root */
    bool mpi_all;            /* between nodes, MPI carries every rank's block at once */
    overlap_rule_t rule;     /* which overlaps of send and recv are legal */
    kind_fn_t kind;
    symaddr_status_t (*nodes)(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                              void *stream); /* the node's kernel and the step between nodes */
} coll_row_t;

enum {
    ROW_ALLREDUCE,
    ROW_REDUCE_SCATTER,
    ROW_ALLGATHER,
    ROW_BROADCAST,
    ROW_ALLTOALL,
    ROW_REDUCE,
    ROW_GATHER,
    ROW_SCATTER
};

static const coll_row_t rows[] = {
    [ROW_ALLREDUCE] = {.name = "symaddr_allreduce",
                       .reduces = true,
                       .rule = in_place_or_apart,
                       .kind = allreduce_kind,
                       .nodes = allreduce_nodes},
    [ROW_REDUCE_SCATTER] = {.name = "symaddr_reduce_scatter",
                            .send_all = true,
                            .reduces = true,
                            .rule = rs_rule,
                            .kind = rs_kind,
                            .nodes = reduce_scatter_nodes},
    [ROW_ALLGATHER] = {.name = "symaddr_allgather",
                       .recv_all = true,
                       .rule = ag_rule,
                       .kind = ag_kind,
                       .nodes = allgather_nodes},
    [ROW_BROADCAST] = {.name = "symaddr_broadcast",
                       .rooted = true,
                       .rule = in_place_or_apart,
                       .kind = bc_kind,
                       .nodes = broadcast_nodes},
    [ROW_ALLTOALL] = {.name = "symaddr_alltoall",
                      .send_all = true,
                      .recv_all = true,
                      .mpi_all = true,
                      .rule = a2a_rule,
                      .kind = a2a_kind,
                      .nodes = alltoall_nodes},
    [ROW_REDUCE] = {.name = "symaddr_reduce",
                    .reduces = true,
                    .rooted = true,
                    .rule = in_place_or_apart,
                    .kind = reduce_kind,
                    .nodes = reduce_nodes},
    [ROW_GATHER] = {.name = "symaddr_gather",
                    .recv_all = true,
                    .rooted = true,
                    .mpi_all = true,
                    .rule = ag_rule,
                    .kind = gather_kind,
                    .nodes = gather_nodes},
    [ROW_SCATTER] = {.name = "symaddr_scatter",
                     .send_all = true,
                     .rooted = true,
                     .mpi_all = true,
                     .rule = rs_rule,
                     .kind = scatter_kind,
                     .nodes = scatter_nodes},
};

/* Every collective: sizes and arguments checked, the agreement (validation mode), then the
 * node's kernel on the caller's stream and, across nodes, the row's step. */
static symaddr_status_t coll_run(symaddr_context_t *ctx, const coll_row_t *row, const void *send,
                                 void *recv, size_t count, symaddr_dtype_t dt, symaddr_redop_t op,
                                 int root, void *stream)
{
    symaddr_coll_desc_t d;
    size_t bytes, total, work = 0;
    symaddr_status_t st =
        sizes(ctx, count, dt, row->reduces ? (int)op : SYMADDR_SUM, &bytes, &total, row->name);
    if (st == SYMADDR_OK && row->rooted && (root < 0 || root >= ctx->core.size))
        st = symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG, "%s: root %d is not a rank (0..%d)",
                               row->name, root, ctx->core.size - 1);
    if (st == SYMADDR_OK && symaddr_multi_node(ctx))
        st = mpi_fits(ctx, row->mpi_all ? total : bytes, row->name);
    symaddr_coll_kind_t kind = row->kind(ctx, bytes, dt, &work);
    if ((st = coll_begin(ctx, st, row->rule, kind, send, row->send_all ? total : bytes, recv,
                         row->recv_all ? total : bytes, count, dt, row->reduces ? op : SYMADDR_SUM,
                         row->rooted ? root : 0, work, &d)) != SYMADDR_OK ||
        count == 0)
        return st;
    if (row->rooted) { /* the kernel takes the root's node rank; -1 on another node */
        d.root = -1;
        d.root_rank = root;
        for (int q = 0; q < ctx->core.boot.node_size; q++)
            if (ctx->core.boot.node_to_rank[q] == root)
                d.root = q;
    }
    return symaddr_multi_node(ctx) ? row->nodes(ctx, &d, stream) : launch(ctx, &d, stream);
}

symaddr_status_t symaddr_allreduce(symaddr_context_t *ctx, const void *send, void *recv,
                                   size_t count, symaddr_dtype_t dtype, symaddr_redop_t op,
                                   void *stream)
{
    GUARDED(ctx, rows[ROW_ALLREDUCE].name,
            coll_run(ctx, &rows[ROW_ALLREDUCE], send, recv, count, dtype, op, 0, stream));
}

symaddr_status_t symaddr_reduce_scatter(symaddr_context_t *ctx, const void *send, void *recv,
                                        size_t count, symaddr_dtype_t dtype, symaddr_redop_t op,
                                        void *stream)
{
    GUARDED(ctx, rows[ROW_REDUCE_SCATTER].name,
            coll_run(ctx, &rows[ROW_REDUCE_SCATTER], send, recv, count, dtype, op, 0, stream));
}

symaddr_status_t symaddr_allgather(symaddr_context_t *ctx, const void *send, void *recv,
                                   size_t count, symaddr_dtype_t dtype, void *stream)
{
    GUARDED(ctx, rows[ROW_ALLGATHER].name,
            coll_run(ctx, &rows[ROW_ALLGATHER], send, recv, count, dtype, SYMADDR_SUM, 0, stream));
}

symaddr_status_t symaddr_broadcast(symaddr_context_t *ctx, const void *send, void *recv,
                                   size_t count, symaddr_dtype_t dtype, int root, void *stream)
{
    GUARDED(
        ctx, rows[ROW_BROADCAST].name,
        coll_run(ctx, &rows[ROW_BROADCAST], send, recv, count, dtype, SYMADDR_SUM, root, stream));
}

symaddr_status_t symaddr_alltoall(symaddr_context_t *ctx, const void *send, void *recv,
                                  size_t count, symaddr_dtype_t dtype, void *stream)
{
    GUARDED(ctx, rows[ROW_ALLTOALL].name,
            coll_run(ctx, &rows[ROW_ALLTOALL], send, recv, count, dtype, SYMADDR_SUM, 0, stream));
}

symaddr_status_t symaddr_reduce(symaddr_context_t *ctx, const void *send, void *recv, size_t count,
                                symaddr_dtype_t dtype, symaddr_redop_t op, int root, void *stream)
{
    GUARDED(ctx, rows[ROW_REDUCE].name,
            coll_run(ctx, &rows[ROW_REDUCE], send, recv, count, dtype, op, root, stream));
}

symaddr_status_t symaddr_gather(symaddr_context_t *ctx, const void *send, void *recv, size_t count,
                                symaddr_dtype_t dtype, int root, void *stream)
{
    GUARDED(ctx, rows[ROW_GATHER].name,
            coll_run(ctx, &rows[ROW_GATHER], send, recv, count, dtype, SYMADDR_SUM, root, stream));
}

symaddr_status_t symaddr_scatter(symaddr_context_t *ctx, const void *send, void *recv, size_t count,
                                 symaddr_dtype_t dtype, int root, void *stream)
{
    GUARDED(ctx, rows[ROW_SCATTER].name,
            coll_run(ctx, &rows[ROW_SCATTER], send, recv, count, dtype, SYMADDR_SUM, root, stream));
}

static symaddr_status_t barrier_(symaddr_context_t *ctx, void *stream)
{
    symaddr_coll_desc_t d;
    symaddr_status_t st;
    static const uint64_t no_offsets[2] = {0, 0};
    if ((st = check_match(ctx, SYMADDR_OK, SYMADDR_COLL_BARRIER, 0, SYMADDR_INT32, 0, 0,
                          no_offsets)) != SYMADDR_OK)
        return st;
    desc_init(ctx, &d, SYMADDR_COLL_BARRIER, 0, SYMADDR_INT32, SYMADDR_SUM, 0);
    if (!symaddr_multi_node(ctx))
        return launch(ctx, &d, stream);
    if ((st = settle(ctx, launch(ctx, &d, stream), stream, "symaddr_barrier")) != SYMADDR_OK)
        return st;
    if (ctx->coll.leaders != MPI_COMM_NULL)
        st = symaddr_mpi_barrier(&ctx->core.boot, ctx->coll.leaders,
                                 symaddr_bootstrap_deadline(&ctx->core.boot, 0));
    st = symaddr_agree_status(&ctx->core, st, "symaddr_barrier");
    return st == SYMADDR_OK ? launch(ctx, &d, stream) : st;
}

symaddr_status_t symaddr_barrier(symaddr_context_t *ctx, void *stream)
{
    GUARDED(ctx, "symaddr_barrier", barrier_(ctx, stream));
}
