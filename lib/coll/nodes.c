/* SPDX-License-Identifier: MIT */
/* Each collective's step between nodes, after its node's kernel: symmetric memory inside a
 * node, MPI between the nodes' leaders (leaders.c). */
#include "coll/coll.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* allreduce: the leaders combine their nodes' results, then every node broadcasts the total. */
symaddr_status_t symaddr_coll_allreduce_nodes(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                              void *stream)
{
    symaddr_status_t st = symaddr_coll_settle(ctx, d, symaddr_coll_launch(ctx, d, stream), stream,
                                              "symaddr_allreduce");
    return st == SYMADDR_OK ? symaddr_coll_leaders_allreduce(ctx, d, stream) : st;
}

/* Between nodes: every rank's block in turn is allreduced, a chunk at a time, into the sync
 * area's scratch (the same buffer on every rank, as a collective needs), and its owner copies
 * the chunk out to recv. The ranks first compare the call itself: the chunks' allreduces would
 * name another call, or find another count only after some chunks. */
symaddr_status_t symaddr_coll_reduce_scatter_nodes(symaddr_context_t *ctx,
                                                   const symaddr_coll_desc_t *d0, void *stream)
{
    const symaddr_coll_t *c = &ctx->coll;
    size_t es = symaddr_dtype_size(d0->dtype), chunk = c->scratch_bytes / es, work = 0;
    char *scratch = (char *)c->sync.root + c->scratch_offset;
    symaddr_status_t st =
        symaddr_coll_settle(ctx, d0, SYMADDR_OK, stream, symaddr_coll_row_of(d0->kind)->name);
    for (int b = 0; b < ctx->core.size && st == SYMADDR_OK; b++) {
        const char *src = (const char *)d0->send + (size_t)b * d0->count * es;
        /* every rank cuts every block alike, so that all make the same calls */
        for (size_t off = 0; off < d0->count && st == SYMADDR_OK; off += chunk) {
            size_t n = d0->count - off < chunk ? d0->count - off : chunk;
            symaddr_coll_desc_t d;
            symaddr_coll_desc_init(ctx, &d,
                                   symaddr_coll_allreduce_kind(ctx, n * es, d0->dtype, &work), n,
                                   d0->dtype, d0->op, work);
            d.send = src + off * es;
            d.send_pb = d0->send_pb;
            d.recv = scratch;
            d.recv_pb = c->sync.dev_table;
            d.recv_host_pb = c->sync.host_table;
            d.vec = d0->vec && ((uintptr_t)d.send & 15) == 0;
            st = symaddr_coll_allreduce_nodes(ctx, &d, stream);
            if (st == SYMADDR_OK && b == ctx->core.rank)
                st = ctx->be.ops->stream_sync(&ctx->be, stream);
            if (st == SYMADDR_OK && b == ctx->core.rank)
                st = ctx->be.ops->memcpy(&ctx->be, (char *)d0->recv + off * es, scratch, n * es);
        }
    }
    return st;
}

symaddr_status_t symaddr_coll_allgather_nodes(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                              void *stream)
{
    static const char fn[] = "symaddr_allgather";
    size_t bytes = d->count * symaddr_dtype_size(d->dtype);
    symaddr_status_t st =
        symaddr_coll_settle(ctx, d, symaddr_coll_launch(ctx, d, stream), stream, fn);
    if (st != SYMADDR_OK)
        return st;
    if (ctx->core.boot.leaders.me >= 0)
        st = symaddr_coll_leaders_allgather(ctx, d->recv, bytes);
    st = symaddr_agree_status(&ctx->core, st, fn);
    return st == SYMADDR_OK
               ? symaddr_coll_node_bcast(ctx, d, d->count * (size_t)ctx->core.size, stream)
               : st;
}

/* broadcast: the root's node runs its kernel, the leaders pass the data on, the other nodes
 * broadcast it from their leader. */
symaddr_status_t symaddr_coll_broadcast_nodes(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                              void *stream)
{
    static const char fn[] = "symaddr_broadcast";
    size_t bytes = d->count * symaddr_dtype_size(d->dtype);
    symaddr_status_t st = d->root >= 0 ? symaddr_coll_launch(ctx, d, stream) : SYMADDR_OK;
    if ((st = symaddr_coll_settle(ctx, d, st, stream, fn)) != SYMADDR_OK)
        return st;
    if (ctx->core.boot.leaders.me >= 0)
        st = symaddr_coll_leaders_broadcast(ctx, d->recv, bytes, d->root >= 0);
    st = symaddr_agree_status(&ctx->core, st, fn);
    if (st == SYMADDR_OK && d->root < 0)
        st = symaddr_coll_node_bcast(ctx, d, d->count, stream);
    return st;
}

/* alltoall: the blocks for other nodes go through MPI; the node's own moved in the kernel. */
symaddr_status_t symaddr_coll_alltoall_nodes(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                             void *stream)
{
    static const char fn[] = "symaddr_alltoall";
    size_t bytes = d->count * symaddr_dtype_size(d->dtype), total = bytes * (size_t)ctx->core.size;
    symaddr_status_t st =
        symaddr_coll_settle(ctx, d, symaddr_coll_launch(ctx, d, stream), stream, fn);
    if (st != SYMADDR_OK)
        return st;
    int *counts = calloc((size_t)ctx->core.size, sizeof(int));
    int *displs = calloc((size_t)ctx->core.size, sizeof(int));
    char *hs = symaddr_coll_stage_out(ctx, d->send, total), *hr = malloc(total);
    st = counts && displs && hs && hr ? SYMADDR_OK : SYMADDR_ERR_NO_MEMORY;
    for (int r = 0; st == SYMADDR_OK && r < ctx->core.size; r++) {
        displs[r] = (int)(bytes * (size_t)r);
        counts[r] = (int)bytes;
    }
    for (int q = 0; st == SYMADDR_OK && q < ctx->core.boot.node_size; q++)
        counts[ctx->core.boot.node_to_rank[q]] = 0;
    if (st == SYMADDR_OK)
        st = symaddr_boot_alltoallv(&ctx->core.boot, &ctx->core.boot.world, hs, counts, displs, hr,
                                    counts, displs, symaddr_bootstrap_deadline(&ctx->core.boot, 0));
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
symaddr_status_t symaddr_coll_reduce_nodes(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                           void *stream)
{
    static const char fn[] = "symaddr_reduce";
    symaddr_coll_desc_t to_leader = *d;
    to_leader.root = 0;
    symaddr_status_t st =
        symaddr_coll_settle(ctx, d, symaddr_coll_launch(ctx, &to_leader, stream), stream, fn);
    if (st != SYMADDR_OK)
        return st;
    if (ctx->core.boot.leaders.me >= 0) /* the total is kept on the root's node */
        st = symaddr_coll_leaders_combine(ctx, d->recv, d->count, d->dtype, d->op, d->root >= 0);
    st = symaddr_agree_status(&ctx->core, st, fn);
    if (st == SYMADDR_OK && d->root > 0) /* the root's node: from its leader to the root */
        st = symaddr_coll_node_bcast(ctx, d, d->count, stream);
    return st;
}

/* gather and scatter: the root's node moves its blocks in the kernel, MPI the blocks of the
 * ranks on other nodes (staged through the host). */
symaddr_status_t symaddr_coll_rooted_nodes(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                           void *stream)
{
    const char *fn = symaddr_coll_row_of(d->kind)->name;
    bool gather = d->kind == SYMADDR_COLL_GATHER;
    size_t bytes = d->count * symaddr_dtype_size(d->dtype), total = bytes * (size_t)ctx->core.size;
    int me = ctx->core.rank, n = ctx->core.size, root = d->root_rank;
    symaddr_status_t st = d->root >= 0 ? symaddr_coll_launch(ctx, d, stream) : SYMADDR_OK;
    if ((st = symaddr_coll_settle(ctx, d, st, stream, fn)) != SYMADDR_OK)
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
        st = symaddr_boot_alltoallv(&ctx->core.boot, &ctx->core.boot.world, host,
                                    sends ? counts : none, displs, host, sends ? none : counts,
                                    displs, symaddr_bootstrap_deadline(&ctx->core.boot, 0));
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
