/* SPDX-License-Identifier: MIT */
/* Host side of the collectives: argument checks, algorithm choice, and the
 * hierarchical path (symmetric memory inside a node, MPI between nodes). */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

size_t symaddr_dtype_size(symaddr_dtype_t dtype)
{
    static const size_t sizes[SYMADDR_DTYPE_COUNT_] = {4, 4, 8, 8, 4, 8, 2, 2};
    return (int)dtype >= 0 && dtype < SYMADDR_DTYPE_COUNT_ ? sizes[dtype] : 0;
}

static const char *const coll_names[] = {
    "symaddr_barrier",        "symaddr_allreduce", "symaddr_allreduce", "symaddr_allreduce",
    "symaddr_reduce_scatter", "symaddr_allgather", "symaddr_broadcast", "symaddr_alltoall",
};

/* ---- setup -------------------------------------------------------------------------------- */

symaddr_status_t symaddr_coll_init(symaddr_context_t *ctx)
{
    symaddr_coll_t *c = &ctx->coll;
    const symaddr_bootstrap_t *b = &ctx->boot;
    size_t stage_offset = symaddr_align_up(
        sizeof(uint64_t) * (SYMADDR_SYNC_WORDS + (size_t)SYMADDR_COLL_MAX_BLOCKS * b->node_size),
        256);
    size_t ll_offset = stage_offset + 2 * SYMADDR_COLL_STAGE_BYTES;
    size_t sync_bytes = ll_offset + 2 * (size_t)b->node_size * SYMADDR_COLL_LL_INBOX;
    void *zeros = calloc(1, sync_bytes);
    symaddr_status_t st = zeros ? SYMADDR_OK : SYMADDR_ERR_NO_MEMORY;

    c->leaders = MPI_COMM_NULL;
    if (MPI_Comm_split(ctx->comm, b->node_rank == 0 ? 0 : MPI_UNDEFINED, ctx->rank, &c->leaders) !=
        MPI_SUCCESS)
        st = SYMADDR_ERR_MPI;
    if (st == SYMADDR_OK)
        st = ctx->be.ops->mem_alloc(&ctx->be, sync_bytes, &c->sync.root);
    if (st == SYMADDR_OK)
        st = ctx->be.ops->memcpy(&ctx->be, c->sync.root, zeros, sync_bytes);
    if (st == SYMADDR_OK)
        st = ctx->be.ops->local_alloc(&ctx->be, sizeof(int) * (size_t)b->node_size,
                                      (void **)&c->node_ranks);
    if (st == SYMADDR_OK)
        st = ctx->be.ops->memcpy(&ctx->be, c->node_ranks, b->node_to_rank,
                                 sizeof(int) * (size_t)b->node_size);
    c->stage_offset = stage_offset;
    c->ll_offset = ll_offset;
    free(zeros);
    if (st != SYMADDR_OK)
        symaddr_set_error(ctx, st, "symaddr_init: cannot set up the collectives' sync area");
    st = symaddr_agree_status(ctx, st, "symaddr_init (collectives)");
    if (st == SYMADDR_OK) {
        c->sync.root_bytes = sync_bytes;
        c->sync.owned = true;
        st = symaddr_mapping_open(ctx, &c->sync, 0);
    }
    if (st != SYMADDR_OK) {
        symaddr_coll_fini(ctx);
        return st;
    }
    c->ready = true;
    return SYMADDR_OK;
}

void symaddr_coll_close_peers(symaddr_context_t *ctx)
{
    if (ctx->coll.ready)
        symaddr_mapping_close_peers(ctx, &ctx->coll.sync);
}

void symaddr_coll_fini(symaddr_context_t *ctx)
{
    symaddr_coll_t *c = &ctx->coll;
    if (c->sync.dev_table)
        symaddr_mapping_release(ctx, &c->sync);
    else if (c->sync.root)
        ctx->be.ops->mem_free(&ctx->be, c->sync.root);
    if (c->node_ranks)
        ctx->be.ops->local_free(&ctx->be, c->node_ranks);
    if (c->leaders != MPI_COMM_NULL)
        MPI_Comm_free(&c->leaders);
    memset(c, 0, sizeof(*c));
    c->leaders = MPI_COMM_NULL;
}

symaddr_status_t symaddr_coll_status(symaddr_context_t *ctx)
{
    uint64_t word = 0;
    const uint64_t zero = 0;
    uint64_t *status = (uint64_t *)ctx->coll.sync.root + SYMADDR_SYNC_STATUS;
    if (!ctx->coll.ready || ctx->be.ops->memcpy(&ctx->be, &word, status, sizeof(word)) != SYMADDR_OK)
        return SYMADDR_OK;
    if (word == 0)
        return SYMADDR_OK;
    ctx->be.ops->memcpy(&ctx->be, status, &zero, sizeof(zero));
    return symaddr_set_error(ctx, (symaddr_status_t) - (int64_t)word,
                             "a collective waited more than %u ms for a rank of its node: a peer "
                             "exited, or ranks called different collectives",
                             ctx->cfg.timeout_ms);
}

/* ---- argument checks ---------------------------------------------------------------------- */

/* *bits_p collects the address bits of ptr and of every peer's copy (for d->vec). */
static symaddr_status_t sym_buffer(symaddr_context_t *ctx, const void *ptr, size_t bytes,
                                   const uint64_t **pb_p, uint64_t *bits_p, const char *fn,
                                   const char *what)
{
    symaddr_registration_t *r;
    if (!ptr)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG, "%s: %s is NULL", fn, what);
    if (symaddr_registry_find(&ctx->reg, ptr, &r) != SYMADDR_OK)
        return symaddr_set_error(ctx, SYMADDR_ERR_NOT_FOUND,
                                 "%s: %s %p is not symmetric memory of this context; allocate it "
                                 "with symaddr_allocate_symmetric or register it",
                                 fn, what, ptr);
    if (bytes > r->map.range_bytes - ((uint64_t)(uintptr_t)ptr - r->map.range_base))
        return symaddr_set_error(ctx, SYMADDR_ERR_OUT_OF_BOUNDS,
                                 "%s: %s needs %zu bytes from %p, past the end of its "
                                 "registration",
                                 fn, what, bytes, ptr);
    *bits_p |= (uint64_t)(uintptr_t)ptr;
    for (int q = 0; q < ctx->boot.node_size; q++) {
        uint64_t base = r->map.host_peer_bases[ctx->boot.node_to_rank[q]];
        if (base == 0)
            return symaddr_set_error(ctx, SYMADDR_ERR_UNREACHABLE,
                                     "%s: %s is not mapped on node rank %d", fn, what, q);
        *bits_p |= base;
    }
    *pb_p = r->map.peer_bases;
    return SYMADDR_OK;
}

/* In validation mode every rank learns whether the others passed the same arguments and
 * whether any rank's arguments were bad; all then return the same status. Without it a bad
 * argument fails on its rank alone, and the peers time out. */
static symaddr_status_t check_match(symaddr_context_t *ctx, symaddr_status_t local,
                                    symaddr_coll_kind_t kind, size_t count, symaddr_dtype_t dt,
                                    int op, int root)
{
    if (!ctx->cfg.validate)
        return local;
    symaddr_status_t st = symaddr_agree_status(ctx, local, coll_names[kind]);
    if (st != SYMADDR_OK)
        return st;
    uint64_t mine[5] = {kind == SYMADDR_COLL_ALLREDUCE_TWOSHOT || kind == SYMADDR_COLL_ALLREDUCE_LL
                            ? (uint64_t)SYMADDR_COLL_ALLREDUCE_ONESHOT
                            : (uint64_t)kind,
                        count, (uint64_t)dt, (uint64_t)op, (uint64_t)root};
    uint64_t lo[5], hi[5];
    MPI_Allreduce(mine, lo, 5, MPI_UINT64_T, MPI_MIN, ctx->comm);
    MPI_Allreduce(mine, hi, 5, MPI_UINT64_T, MPI_MAX, ctx->comm);
    if (memcmp(lo, hi, sizeof(lo)) != 0)
        return symaddr_set_error(ctx, SYMADDR_ERR_MISMATCH,
                                 "%s: ranks passed different collectives, counts (%llu..%llu), "
                                 "dtypes, ops or roots; every rank must pass the same",
                                 coll_names[kind], (unsigned long long)lo[1],
                                 (unsigned long long)hi[1]);
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
    d->sync = ctx->coll.sync.root;
    d->sync_pb = ctx->coll.sync.dev_table;
    d->node_ranks = ctx->coll.node_ranks;
    d->node_size = ctx->boot.node_size;
    d->node_rank = ctx->boot.node_rank;
    d->rank = ctx->rank;
    d->timeout_ns = (uint64_t)ctx->cfg.timeout_ms * 1000000u;
    /* A block of 512 threads moves 16 KiB a sweep: one block for small messages keeps the
     * barriers cheap, and large ones get enough blocks to keep the links busy. */
    size_t blocks = (work_bytes + (16u << 10) - 1) / (16u << 10);
    if (ctx->be.ops->kind == SYMADDR_BACKEND_CPU || blocks < 1)
        blocks = 1;
    d->blocks = (unsigned)(blocks > SYMADDR_COLL_MAX_BLOCKS ? SYMADDR_COLL_MAX_BLOCKS : blocks);
}

static symaddr_status_t launch(symaddr_context_t *ctx, const symaddr_coll_desc_t *d, void *stream)
{
    symaddr_status_t st = ctx->be.ops->coll->launch(d, stream);
    if (st == SYMADDR_ERR_UNSUPPORTED)
        return symaddr_set_error(ctx, st, "%s: node groups larger than 64 ranks are not "
                                 "supported", coll_names[d->kind]);
    if (st != SYMADDR_OK)
        return symaddr_set_error(ctx, st, "%s: the %s runtime refused the launch",
                                 coll_names[d->kind], ctx->be.ops->name);
    /* The cpu backend ran it already: report a timeout now. */
    return ctx->be.ops->kind == SYMADDR_BACKEND_CPU ? symaddr_coll_status(ctx) : SYMADDR_OK;
}

static symaddr_status_t common_checks(symaddr_context_t *ctx, symaddr_dtype_t dt, int op,
                                      const char *fn)
{
    if (!symaddr_dtype_size(dt))
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG, "%s: dtype %d is not a "
                                 "symaddr_dtype_t", fn, (int)dt);
    if (op < 0 || op >= SYMADDR_REDOP_COUNT_)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG, "%s: op %d is not a "
                                 "symaddr_redop_t", fn, op);
    return SYMADDR_OK;
}

/* ---- between nodes ------------------------------------------------------------------------ */

static bool multi_node(const symaddr_context_t *ctx) { return ctx->boot.node_size < ctx->size; }

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

/* Host sync, then the failure (if any) any rank met, so that all take the same path. */
static symaddr_status_t settle(symaddr_context_t *ctx, symaddr_status_t st, const char *fn)
{
    if (st == SYMADDR_OK)
        st = ctx->be.ops->stream_sync(&ctx->be, NULL);
    if (st == SYMADDR_OK)
        st = symaddr_coll_status(ctx);
    return symaddr_agree_status(ctx, st, fn);
}

/* Node broadcast of count elements of recv from node rank root (in place). */
static symaddr_status_t node_bcast(symaddr_context_t *ctx, void *recv, const uint64_t *pb,
                                   size_t count, symaddr_dtype_t dt, int root)
{
    symaddr_coll_desc_t d;
    desc_init(ctx, &d, SYMADDR_COLL_BROADCAST, count, dt, SYMADDR_SUM,
              count * symaddr_dtype_size(dt));
    d.send = recv;
    d.send_pb = pb;
    d.recv = recv;
    d.recv_pb = pb;
    d.root = root;
    return launch(ctx, &d, NULL);
}

/* recv holds each node's result; leaders combine them through MPI in node order, then every
 * node broadcasts the total from its leader. */
static symaddr_status_t leaders_allreduce(symaddr_context_t *ctx, void *recv, const uint64_t *pb,
                                          size_t count, symaddr_dtype_t dt, symaddr_redop_t op)
{
    size_t bytes = count * symaddr_dtype_size(dt);
    symaddr_status_t st = SYMADDR_OK;
    if (ctx->coll.leaders != MPI_COMM_NULL) {
        int nl;
        MPI_Comm_size(ctx->coll.leaders, &nl);
        char *mine = stage_out(ctx, recv, bytes), *all = malloc(bytes * (size_t)nl);
        if (!mine || !all) {
            st = SYMADDR_ERR_NO_MEMORY;
        } else if (MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE,
                                 ctx->coll.leaders) != MPI_SUCCESS) {
            st = SYMADDR_ERR_MPI;
        } else {
            for (int l = 1; l < nl; l++)
                symaddr_coll_cpu.host_reduce(dt, op, all, all + bytes * (size_t)l, count);
            st = ctx->be.ops->memcpy(&ctx->be, recv, all, bytes);
        }
        free(mine);
        free(all);
    }
    st = symaddr_agree_status(ctx, st, "symaddr_allreduce (between nodes)");
    if (st == SYMADDR_OK)
        st = node_bcast(ctx, recv, pb, count, dt, 0);
    return st;
}

/* ---- the calls ---------------------------------------------------------------------------- */

/* Whether [a, a+an) and [b, b+bn) overlap. */
static bool overlap(const void *a, size_t an, const void *b, size_t bn)
{
    return (const char *)a < (const char *)b + bn && (const char *)b < (const char *)a + an;
}

/* Checks shared by every collective, then (validation mode) the agreement; fills d. local is
 * the caller's own verdict on the arguments (an overlap rule). */
static symaddr_status_t coll_begin(symaddr_context_t *ctx, symaddr_status_t local,
                                   symaddr_coll_kind_t kind, const void *send, size_t send_bytes,
                                   void *recv, size_t recv_bytes, size_t count,
                                   symaddr_dtype_t dt, symaddr_redop_t op, int root,
                                   size_t work_bytes, symaddr_coll_desc_t *d)
{
    const char *fn = coll_names[kind];
    const uint64_t *spb = NULL, *rpb = NULL;
    /* reduce-scatter reads at send + node_rank * count elements */
    uint64_t bits = kind == SYMADDR_COLL_REDUCE_SCATTER ? count * symaddr_dtype_size(dt) : 0;
    symaddr_status_t st = common_checks(ctx, dt, op, fn);
    if (st == SYMADDR_OK)
        st = sym_buffer(ctx, send, send_bytes, &spb, &bits, fn, "send");
    if (st == SYMADDR_OK)
        st = sym_buffer(ctx, recv, recv_bytes, &rpb, &bits, fn, "recv");
    if (st == SYMADDR_OK)
        st = local;
    if ((st = check_match(ctx, st, kind, count, dt, op, root)) != SYMADDR_OK)
        return st;
    desc_init(ctx, d, kind, count, dt, op, work_bytes);
    d->send = send;
    d->send_pb = spb;
    d->recv = recv;
    d->recv_pb = rpb;
    d->root = root;
    d->stage_offset = ctx->coll.stage_offset;
    d->ll_offset = ctx->coll.ll_offset;
    d->vec = (bits & 15) == 0;
    return SYMADDR_OK;
}

symaddr_status_t symaddr_allreduce(symaddr_context_t *ctx, const void *send, void *recv,
                                   size_t count, symaddr_dtype_t dtype, symaddr_redop_t op,
                                   void *stream)
{
    symaddr_coll_desc_t d;
    symaddr_status_t st;
    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    size_t bytes = count * symaddr_dtype_size(dtype);
    symaddr_allreduce_algo_t algo = ctx->cfg.allreduce_algo;
    if (algo == SYMADDR_ALLREDUCE_AUTO)
        algo = bytes <= ctx->cfg.ll_bytes        ? SYMADDR_ALLREDUCE_LL
               : bytes < ctx->cfg.twoshot_bytes ? SYMADDR_ALLREDUCE_ONESHOT
                                                : SYMADDR_ALLREDUCE_TWOSHOT;
    if (algo == SYMADDR_ALLREDUCE_LL && bytes > SYMADDR_COLL_LL_BYTES)
        algo = SYMADDR_ALLREDUCE_ONESHOT; /* an inbox holds at most this much */
    if (algo == SYMADDR_ALLREDUCE_ONESHOT && bytes > SYMADDR_COLL_STAGE_BYTES)
        algo = SYMADDR_ALLREDUCE_TWOSHOT; /* one-shot stages at most this much */
    symaddr_coll_kind_t kind = algo == SYMADDR_ALLREDUCE_LL        ? SYMADDR_COLL_ALLREDUCE_LL
                               : algo == SYMADDR_ALLREDUCE_ONESHOT ? SYMADDR_COLL_ALLREDUCE_ONESHOT
                                                                   : SYMADDR_COLL_ALLREDUCE_TWOSHOT;
    /* LL: one thread per 8 bytes; two-shot: each rank reduces its share */
    size_t work = kind == SYMADDR_COLL_ALLREDUCE_TWOSHOT ? bytes / (size_t)ctx->boot.node_size
                  : kind == SYMADDR_COLL_ALLREDUCE_LL    ? bytes * 4
                                                         : bytes;
    if ((st = coll_begin(ctx, SYMADDR_OK, kind, send, bytes, recv, bytes, count, dtype, op, 0,
                         work, &d)) != SYMADDR_OK ||
        count == 0)
        return st;
    if (!multi_node(ctx))
        return launch(ctx, &d, stream);
    st = settle(ctx, launch(ctx, &d, stream), "symaddr_allreduce");
    return st == SYMADDR_OK ? leaders_allreduce(ctx, recv, d.recv_pb, count, dtype, op) : st;
}

symaddr_status_t symaddr_reduce_scatter(symaddr_context_t *ctx, const void *send, void *recv,
                                        size_t count, symaddr_dtype_t dtype, symaddr_redop_t op,
                                        void *stream)
{
    symaddr_coll_desc_t d;
    symaddr_status_t st = SYMADDR_OK;
    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    size_t bytes = count * symaddr_dtype_size(dtype), total = bytes * (size_t)ctx->size;
    if (recv != (const char *)send + bytes * (size_t)ctx->rank &&
        overlap(recv, bytes, send, total))
        st = symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                               "symaddr_reduce_scatter: recv overlaps send other than at this "
                               "rank's block (send + rank * count), the only in-place form");
    if ((st = coll_begin(ctx, st, SYMADDR_COLL_REDUCE_SCATTER, send, total, recv, bytes, count,
                         dtype, op, 0, bytes, &d)) != SYMADDR_OK ||
        count == 0)
        return st;
    if (!multi_node(ctx))
        return launch(ctx, &d, stream);
    /* Between nodes: the full hierarchical allreduce into a symmetric temporary. */
    symaddr_provider_t *ipc = &ctx->providers[SYMADDR_PROVIDER_IPC];
    symaddr_map_t *tm;
    void *tmp;
    if ((st = symaddr_allocate_symmetric(ipc, total, &tmp, &tm)) != SYMADDR_OK)
        return st;
    st = symaddr_allreduce(ctx, send, tmp, count * (size_t)ctx->size, dtype, op, stream);
    if (st == SYMADDR_OK)
        st = ctx->be.ops->memcpy(&ctx->be, recv, (char *)tmp + bytes * (size_t)ctx->rank, bytes);
    st = settle(ctx, st, "symaddr_reduce_scatter");
    symaddr_status_t fst = symaddr_free_symmetric(ipc, tmp);
    return st != SYMADDR_OK ? st : fst;
}

/* Leaders swap their nodes' blocks as (rank, block) records through MPI. */
static symaddr_status_t leaders_allgather(symaddr_context_t *ctx, void *recv, size_t bytes)
{
    const symaddr_bootstrap_t *b = &ctx->boot;
    size_t rec = sizeof(int64_t) + bytes;
    int nl;
    MPI_Comm_size(ctx->coll.leaders, &nl);
    int *counts = malloc(sizeof(int) * (size_t)nl), *displs = malloc(sizeof(int) * (size_t)nl);
    int mine = (int)(rec * (size_t)b->node_size);
    char *out = malloc((size_t)mine), *in = malloc(rec * (size_t)ctx->size);
    symaddr_status_t st = counts && displs && out && in ? SYMADDR_OK : SYMADDR_ERR_NO_MEMORY;
    for (int q = 0; st == SYMADDR_OK && q < b->node_size; q++) {
        int64_t r = b->node_to_rank[q];
        memcpy(out + rec * (size_t)q, &r, sizeof(r));
        st = ctx->be.ops->memcpy(&ctx->be, out + rec * (size_t)q + sizeof(r),
                                 (const char *)recv + bytes * (size_t)r, bytes);
    }
    if (st == SYMADDR_OK &&
        MPI_Allgather(&mine, 1, MPI_INT, counts, 1, MPI_INT, ctx->coll.leaders) != MPI_SUCCESS)
        st = SYMADDR_ERR_MPI;
    for (int l = 0, off = 0; st == SYMADDR_OK && l < nl; off += counts[l], l++)
        displs[l] = off;
    if (st == SYMADDR_OK && MPI_Allgatherv(out, mine, MPI_BYTE, in, counts, displs, MPI_BYTE,
                                           ctx->coll.leaders) != MPI_SUCCESS)
        st = SYMADDR_ERR_MPI;
    for (int k = 0; st == SYMADDR_OK && k < ctx->size; k++) {
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

symaddr_status_t symaddr_allgather(symaddr_context_t *ctx, const void *send, void *recv,
                                   size_t count, symaddr_dtype_t dtype, void *stream)
{
    static const char fn[] = "symaddr_allgather";
    symaddr_coll_desc_t d;
    symaddr_status_t st = SYMADDR_OK;
    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    size_t bytes = count * symaddr_dtype_size(dtype), total = bytes * (size_t)ctx->size;
    if (send != (const char *)recv + bytes * (size_t)ctx->rank &&
        overlap(send, bytes, recv, total))
        st = symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                               "%s: send overlaps recv other than at this rank's block "
                               "(recv + rank * count), the only in-place form",
                               fn);
    if ((st = coll_begin(ctx, st, SYMADDR_COLL_ALLGATHER, send, bytes, recv, total, count, dtype,
                         SYMADDR_SUM, 0, bytes * (size_t)ctx->boot.node_size, &d)) !=
            SYMADDR_OK ||
        count == 0)
        return st;
    if (!multi_node(ctx))
        return launch(ctx, &d, stream);
    if ((st = settle(ctx, launch(ctx, &d, stream), fn)) != SYMADDR_OK)
        return st;
    if (ctx->coll.leaders != MPI_COMM_NULL)
        st = leaders_allgather(ctx, recv, bytes);
    st = symaddr_agree_status(ctx, st, fn);
    return st == SYMADDR_OK ? node_bcast(ctx, recv, d.recv_pb, count * (size_t)ctx->size, dtype, 0)
                            : st;
}

/* The root node's leader holds the data; leaders pass it on through MPI. */
static symaddr_status_t leaders_broadcast(symaddr_context_t *ctx, void *recv, size_t bytes,
                                          int has_root)
{
    int nl, from = 0, *flags;
    MPI_Comm_size(ctx->coll.leaders, &nl);
    flags = malloc(sizeof(int) * (size_t)nl);
    void *h = stage_out(ctx, recv, bytes);
    symaddr_status_t st = flags && h ? SYMADDR_OK : SYMADDR_ERR_NO_MEMORY;
    if (st == SYMADDR_OK &&
        MPI_Allgather(&has_root, 1, MPI_INT, flags, 1, MPI_INT, ctx->coll.leaders) != MPI_SUCCESS)
        st = SYMADDR_ERR_MPI;
    for (int l = 0; st == SYMADDR_OK && l < nl; l++)
        if (flags[l])
            from = l;
    if (st == SYMADDR_OK &&
        MPI_Bcast(h, (int)bytes, MPI_BYTE, from, ctx->coll.leaders) != MPI_SUCCESS)
        st = SYMADDR_ERR_MPI;
    if (st == SYMADDR_OK && !has_root)
        st = ctx->be.ops->memcpy(&ctx->be, recv, h, bytes);
    free(flags);
    free(h);
    return st;
}

symaddr_status_t symaddr_broadcast(symaddr_context_t *ctx, const void *send, void *recv,
                                   size_t count, symaddr_dtype_t dtype, int root, void *stream)
{
    static const char fn[] = "symaddr_broadcast";
    symaddr_coll_desc_t d;
    symaddr_status_t st = SYMADDR_OK;
    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    size_t bytes = count * symaddr_dtype_size(dtype);
    if (root < 0 || root >= ctx->size)
        st = symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG, "%s: root %d is not a rank (0..%d)",
                               fn, root, ctx->size - 1);
    /* The kernel takes the root's node rank; -1 when it is on another node. */
    int root_q = -1;
    for (int q = 0; q < ctx->boot.node_size; q++)
        if (ctx->boot.node_to_rank[q] == root)
            root_q = q;
    if ((st = coll_begin(ctx, st, SYMADDR_COLL_BROADCAST, send, bytes, recv, bytes, count, dtype,
                         SYMADDR_SUM, root, bytes, &d)) != SYMADDR_OK ||
        count == 0)
        return st;
    d.root = root_q;
    if (!multi_node(ctx))
        return launch(ctx, &d, stream);
    if (root_q >= 0)
        st = launch(ctx, &d, stream);
    if ((st = settle(ctx, st, fn)) != SYMADDR_OK)
        return st;
    if (ctx->coll.leaders != MPI_COMM_NULL)
        st = leaders_broadcast(ctx, recv, bytes, root_q >= 0);
    st = symaddr_agree_status(ctx, st, fn);
    if (st == SYMADDR_OK && root_q < 0)
        st = node_bcast(ctx, recv, d.recv_pb, count, dtype, 0);
    return st;
}

symaddr_status_t symaddr_alltoall(symaddr_context_t *ctx, const void *send, void *recv,
                                  size_t count, symaddr_dtype_t dtype, void *stream)
{
    static const char fn[] = "symaddr_alltoall";
    symaddr_coll_desc_t d;
    symaddr_status_t st = SYMADDR_OK;
    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    size_t bytes = count * symaddr_dtype_size(dtype), total = bytes * (size_t)ctx->size;
    if (overlap(send, total, recv, total))
        st = symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                               "%s: send and recv overlap; in-place alltoall is not supported, "
                               "use separate buffers",
                               fn);
    if ((st = coll_begin(ctx, st, SYMADDR_COLL_ALLTOALL, send, total, recv, total, count, dtype,
                         SYMADDR_SUM, 0, bytes * (size_t)ctx->boot.node_size, &d)) !=
            SYMADDR_OK ||
        count == 0)
        return st;
    if (!multi_node(ctx))
        return launch(ctx, &d, stream);
    if ((st = settle(ctx, launch(ctx, &d, stream), fn)) != SYMADDR_OK)
        return st;
    /* Blocks for other nodes go through MPI; the node's own already moved. */
    int *counts = calloc((size_t)ctx->size, sizeof(int));
    int *displs = calloc((size_t)ctx->size, sizeof(int));
    char *hs = stage_out(ctx, send, total), *hr = malloc(total);
    st = counts && displs && hs && hr ? SYMADDR_OK : SYMADDR_ERR_NO_MEMORY;
    for (int r = 0; st == SYMADDR_OK && r < ctx->size; r++) {
        displs[r] = (int)(bytes * (size_t)r);
        counts[r] = (int)bytes;
    }
    for (int q = 0; st == SYMADDR_OK && q < ctx->boot.node_size; q++)
        counts[ctx->boot.node_to_rank[q]] = 0;
    if (st == SYMADDR_OK && MPI_Alltoallv(hs, counts, displs, MPI_BYTE, hr, counts, displs,
                                          MPI_BYTE, ctx->comm) != MPI_SUCCESS)
        st = SYMADDR_ERR_MPI;
    for (int r = 0; st == SYMADDR_OK && r < ctx->size; r++)
        if (counts[r])
            st = ctx->be.ops->memcpy(&ctx->be, (char *)recv + displs[r], hr + displs[r], bytes);
    free(counts);
    free(displs);
    free(hs);
    free(hr);
    return symaddr_agree_status(ctx, st, fn);
}

symaddr_status_t symaddr_barrier(symaddr_context_t *ctx, void *stream)
{
    symaddr_coll_desc_t d;
    symaddr_status_t st;
    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    if ((st = check_match(ctx, SYMADDR_OK, SYMADDR_COLL_BARRIER, 0, SYMADDR_INT32, 0, 0)) !=
        SYMADDR_OK)
        return st;
    desc_init(ctx, &d, SYMADDR_COLL_BARRIER, 0, SYMADDR_INT32, SYMADDR_SUM, 0);
    if (!multi_node(ctx))
        return launch(ctx, &d, stream);
    if ((st = settle(ctx, launch(ctx, &d, stream), "symaddr_barrier")) != SYMADDR_OK)
        return st;
    if (ctx->coll.leaders != MPI_COMM_NULL)
        MPI_Barrier(ctx->coll.leaders);
    return launch(ctx, &d, stream);
}
