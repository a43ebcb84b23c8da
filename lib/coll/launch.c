/* SPDX-License-Identifier: MIT */
/* The driver of the collective calls (each a row of table.c, with its public call there): the
 * node's kernel on the caller's stream and, across nodes, the row's step between them; the
 * barrier; the team. */
#include "coll/coll.h"
#include "symaddr/team.h"

#include <stdlib.h>
#include <string.h>

/* The node as kernels see it, over sync area a: the host collectives' (sync) or users' team
 * kernels' (team). */
static void team_fill(const symaddr_context_t *ctx, const symaddr_backing_t *a, symaddr_team_t *t)
{
    t->sync = (uint64_t *)a->root;
    t->sync_pb = a->dev_table;
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

static symaddr_status_t team_get(symaddr_context_t *ctx, symaddr_team_t *team_p)
{
    symaddr_status_t st = symaddr_coll_team_open(ctx);
    if (st == SYMADDR_OK)
        team_fill(ctx, &ctx->coll.team, team_p);
    return st;
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
    if (ctx->coll.team.dev_table) { /* local once the team area is there */
        team_fill(ctx, &ctx->coll.team, team_p);
        return SYMADDR_OK;
    }
    GUARDED(ctx, "symaddr_team_get", team_get(ctx, team_p));
}

void symaddr_coll_desc_init(symaddr_context_t *ctx, symaddr_coll_desc_t *d,
                            symaddr_coll_kind_t kind, size_t count, symaddr_dtype_t dt,
                            symaddr_redop_t op, size_t work_bytes)
{
    memset(d, 0, sizeof(*d));
    d->kind = kind;
    d->dtype = dt;
    d->op = op;
    d->count = count;
    team_fill(ctx, &ctx->coll.sync, &d->team);
    d->args_offset = ctx->coll.args_offset;
    d->ident_offset = ctx->coll.ident_offset;
    /* what node peers compare in the kernel (coll_ident_send); a user's call adds its root
     * (check.c), the steps between nodes keep their call's dtype and op */
    d->ident = (uint64_t)kind | (uint64_t)dt << 8 | (uint64_t)op << 16;
    d->ident_step = !ctx->core.cfg.no_call_check;
    d->stage_offset = ctx->coll.stage_offset;
    d->ll_offset = ctx->coll.ll_offset;
    /* A block of 512 threads moves 16 KiB a sweep: one block for small messages keeps the
     * barriers cheap, and large ones get enough blocks to keep the links busy, up to what the
     * GPU holds resident for every rank that shares it. */
    size_t blocks = (work_bytes + (16u << 10) - 1) / (16u << 10);
    /* LL and Lamport: one step per thread (8 bytes of LL's, 16 of Lamport's: work_bytes / 32
     * either way) and a thread more for the call's identity (coll_ident_thread). Lamport's in
     * blocks of lamport_threads (their pushes and loads then spread over more SMs), or more
     * where the steps outnumber the grid's threads (doc/performance.md). */
    if ((kind == SYMADDR_COLL_ALLREDUCE_LAMPORT || kind == SYMADDR_COLL_ALLREDUCE_LL) &&
        !ctx->be.ops->immediate) {
        size_t steps = (work_bytes + 31) / 32 + 1, threads = SYMADDR_COLL_THREADS;
        if (kind == SYMADDR_COLL_ALLREDUCE_LAMPORT)
            for (threads = ctx->coll.lamport_threads;
                 threads < SYMADDR_COLL_THREADS && steps > threads * ctx->coll.max_blocks;)
                threads *= 2;
        blocks = (steps + threads - 1) / threads;
        d->threads = (unsigned)threads;
    }
    if (ctx->be.ops->immediate || blocks < 1)
        blocks = 1;
    d->blocks = (unsigned)(blocks > ctx->coll.max_blocks ? ctx->coll.max_blocks : blocks);
}

/* INFO: the algorithm of a collective, when it is not the one this context last logged. */
static void log_algorithm(symaddr_context_t *ctx, const symaddr_coll_desc_t *d)
{
    const symaddr_coll_row_t *row = symaddr_coll_row_of(d->kind);
    int *last = &ctx->coll.logged[row->algos[0].kind];
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
                    row->info.name, shown, unit, symaddr_dtype_name(d->dtype),
                    symaddr_coll_algo_of(d->kind)->name);
}

static symaddr_status_t launch_kernel(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                      void *stream)
{
    symaddr_status_t st = ctx->be.ops->coll->launch(d, stream);
    if (st == SYMADDR_ERR_UNSUPPORTED)
        return symaddr_set_error(ctx, st,
                                 "%s: node groups larger than 64 ranks are not "
                                 "supported",
                                 symaddr_coll_row_of(d->kind)->name);
    if (st != SYMADDR_OK)
        return symaddr_set_error(ctx, st, "%s: the %s runtime refused the launch: %s",
                                 symaddr_coll_row_of(d->kind)->name, ctx->be.ops->name,
                                 symaddr_launch_why);
    /* The cpu backend ran it already: report a failure now. */
    return ctx->be.ops->immediate ? symaddr_coll_status(ctx) : SYMADDR_OK;
}

/* Two-shot-copy queues its copies before its kernel's verdict is known, so a count that differs
 * between node ranks would write past a peer's recv: the node's ranks compare the call on the
 * host first (validation mode compared it already). One exchange of 16 bytes a call, at sizes
 * where the copies take tens of microseconds and more. */
static symaddr_status_t copy_agree(symaddr_context_t *ctx, const symaddr_coll_desc_t *d)
{
    symaddr_bootstrap_t *b = &ctx->core.boot;
    uint64_t mine[2] = {d->ident, d->count},
             (*all)[2] = malloc(sizeof(mine) * (size_t)b->node_size);
    if (!all)
        return symaddr_core_break(
            &ctx->core,
            symaddr_set_error(ctx, SYMADDR_ERR_NO_MEMORY, "symaddr_allreduce: out of host memory"));
    symaddr_status_t st = symaddr_boot_allgather(b, &b->node, mine, all, sizeof(mine),
                                                 symaddr_bootstrap_agree_deadline(b));
    if (st != SYMADDR_OK)
        st = symaddr_set_error(ctx, st,
                               "symaddr_allreduce: the node's ranks could not compare the call "
                               "within %u ms; the context is broken",
                               ctx->core.cfg.timeout_ms);
    for (int q = 0; q < b->node_size && st == SYMADDR_OK; q++)
        if (all[q][0] != mine[0] || all[q][1] != mine[1])
            st = symaddr_set_error(
                ctx, SYMADDR_ERR_MISMATCH,
                "symaddr_allreduce: node rank %d passed another count (%llu, this rank %llu), "
                "dtype or op; every rank must pass the same. No copy was queued; the context "
                "is broken",
                q, (unsigned long long)all[q][1], (unsigned long long)mine[1]);
    free(all);
    return st == SYMADDR_OK ? st : symaddr_core_break(&ctx->core, st);
}

/* Two-shot-copy's all-gather, after its kernel reduced this rank's part into recv: the copy
 * engine pushes the part into every node peer's recv, then a barrier keeps each rank in the
 * call until the peers' copies into its recv are done. Nothing else touches a peer's copy of
 * this part meanwhile: in place, it is the peer's send there, which only this rank read, in
 * the kernel before. A failed kernel's copies move data that the call then reports as failed;
 * a refused copy keeps this rank from the barrier, so that its peers time out rather than
 * return without its part. */
symaddr_status_t symaddr_coll_gather_by_copy(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                             void *stream)
{
    size_t es = symaddr_dtype_size(d->dtype), lo, hi;
    const symaddr_bootstrap_t *b = &ctx->core.boot;
    uint64_t off = (uint64_t)(uintptr_t)d->recv - d->recv_host_pb[ctx->core.rank];
    symaddr_status_t st = ctx->core.cfg.validate ? SYMADDR_OK : copy_agree(ctx, d);
    if (st != SYMADDR_OK)
        return st;
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
    symaddr_coll_desc_init(ctx, &bar, SYMADDR_COLL_BARRIER, 0, SYMADDR_INT32, SYMADDR_SUM, 0);
    return launch_kernel(ctx, &bar, stream);
}

symaddr_status_t symaddr_coll_launch(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                     void *stream)
{
    log_algorithm(ctx, d);
    symaddr_status_t st = launch_kernel(ctx, d, stream);
    symaddr_status_t (*after)(symaddr_context_t *, const symaddr_coll_desc_t *, void *) =
        symaddr_coll_algo_of(d->kind)->after;
    return st == SYMADDR_OK && after ? after(ctx, d, stream) : st;
}

/* Every collective: sizes and arguments checked, the agreement (validation mode), then the
 * node's kernel on the caller's stream and, across nodes, the row's step. */
symaddr_status_t symaddr_coll_run(symaddr_context_t *ctx, const symaddr_coll_call_t *call,
                                  void *stream)
{
    symaddr_coll_desc_t d;
    ctx->core.coll_call = 1; /* a thread racing it makes its OK a BROKEN (symaddr_call_leave) */
    symaddr_status_t st = symaddr_coll_begin(ctx, call, &d);
    if (st != SYMADDR_OK || call->count == 0)
        return st;
    if (symaddr_coll_has(call->row, SYMADDR_COLLECTIVE_ROOTED)) {
        /* the kernel takes the root's node rank; -1 on another node */
        d.root = -1;
        d.root_rank = call->root;
        for (int q = 0; q < ctx->core.boot.node_size; q++)
            if (ctx->core.boot.node_to_rank[q] == call->root)
                d.root = q;
    }
    return symaddr_multi_node(ctx) ? call->row->nodes(ctx, &d, stream)
                                   : symaddr_coll_launch(ctx, &d, stream);
}

/* Collective index made at site: its row's call, or INVALID_ARG with a message that says how
 * to find an index. fn is the public entry's name. */
static symaddr_status_t run_index(symaddr_context_t *ctx, const char *fn, symaddr_coll_site_t site,
                                  int index, const void *send, void *recv, size_t count,
                                  symaddr_dtype_t dtype, symaddr_redop_t op, int root, void *stream)
{
    const symaddr_coll_row_t *row = symaddr_coll_row_at(index);
    if (!row && ctx)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "%s: collective %d is not one of this library's %d "
                                 "(0..symaddr_collective_count() - 1); look it up by name with "
                                 "symaddr_collective_info",
                                 fn, index, symaddr_collective_count());
    if (!row)
        return SYMADDR_ERR_INVALID_ARG;
    SYMADDR_COLL_CALL_AT(ctx, row->algos[0].kind, site, .send = send, .recv = recv, .count = count,
                         .dtype = dtype, .op = op, .root = root);
}

/* Set by the header's macros just before the call they wrap, on the calling thread. */
static __thread symaddr_coll_site_t next_site;

void symaddr_call_site_set(const char *file, int line)
{
    next_site.file = file;
    next_site.line = line;
}

symaddr_coll_site_t symaddr_coll_site_take(void)
{
    symaddr_coll_site_t s = next_site;
    next_site.file = NULL;
    return s;
}

symaddr_status_t symaddr_collective_run(symaddr_context_t *ctx, int index, const void *send,
                                        void *recv, size_t count, symaddr_dtype_t dtype,
                                        symaddr_redop_t op, int root, void *stream)
{
    const symaddr_coll_site_t site = symaddr_coll_site_take();
    return run_index(ctx, "symaddr_collective_run", site, index, send, recv, count, dtype, op, root,
                     stream);
}

symaddr_status_t symaddr_collective_run_at(symaddr_context_t *ctx, int index, const void *send,
                                           void *recv, size_t count, symaddr_dtype_t dtype,
                                           symaddr_redop_t op, int root, void *stream,
                                           const char *file, int line)
{
    symaddr_coll_site_t site = symaddr_coll_site_take(); /* a macro's place, if any, is spent */
    site.file = file;
    site.line = line;
    return run_index(ctx, "symaddr_collective_run_at", site, index, send, recv, count, dtype, op,
                     root, stream);
}

static symaddr_status_t barrier_(symaddr_context_t *ctx, void *stream,
                                 const symaddr_coll_site_t *site)
{
    symaddr_coll_desc_t d;
    symaddr_status_t st;
    ctx->core.coll_call = 1;
    static const uint64_t nowhere[4] = {0, 0, 0, 0};
    if ((st = symaddr_coll_check_match(ctx, SYMADDR_OK, SYMADDR_COLL_BARRIER, 0, SYMADDR_INT32, 0,
                                       0, nowhere, site)) != SYMADDR_OK)
        return st;
    symaddr_coll_desc_init(ctx, &d, SYMADDR_COLL_BARRIER, 0, SYMADDR_INT32, SYMADDR_SUM, 0);
    if (!symaddr_multi_node(ctx))
        return symaddr_coll_launch(ctx, &d, stream);
    if ((st = symaddr_coll_settle(ctx, &d, symaddr_coll_launch(ctx, &d, stream), stream,
                                  symaddr_coll_barrier_row.name)) != SYMADDR_OK)
        return st;
    if (ctx->core.boot.leaders.me >= 0)
        st = symaddr_boot_barrier(&ctx->core.boot, &ctx->core.boot.leaders,
                                  symaddr_bootstrap_deadline(&ctx->core.boot, 0));
    st = symaddr_agree_status(&ctx->core, st, symaddr_coll_barrier_row.name);
    return st == SYMADDR_OK ? symaddr_coll_launch(ctx, &d, stream) : st;
}

symaddr_status_t symaddr_barrier(symaddr_context_t *ctx, void *stream)
{
    const symaddr_coll_site_t site = symaddr_coll_site_take();
    GUARDED(ctx, symaddr_coll_barrier_row.name, barrier_(ctx, stream, &site));
}
