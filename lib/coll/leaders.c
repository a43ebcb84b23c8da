/* SPDX-License-Identifier: MIT */
/* Between nodes: the copies for MPI, the agreement after a node's kernel, and the leaders'
 * MPI steps that the collectives' steps in nodes.c share. */
#include "coll/coll.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copies of device memory for MPI, which may not be GPU-aware. */
void *symaddr_coll_stage_out(symaddr_context_t *ctx, const void *dev, size_t bytes)
{
    void *h = malloc(bytes ? bytes : 1);
    if (h && ctx->be.ops->memcpy(&ctx->be, h, dev, bytes) != SYMADDR_OK) {
        free(h);
        h = NULL;
    }
    return h;
}

/* A call of symaddr_coll_settle as text: desc_init's identity (kind | dtype << 8 | op << 16,
 * check.c's root << 32) and the count. */
static void call_text(const uint64_t call[2], char *text, size_t size)
{
    const symaddr_coll_row_t *row = symaddr_coll_row_of((symaddr_coll_kind_t)(call[0] & 0xff));
    const char *dtype = symaddr_dtype_name((symaddr_dtype_t)(call[0] >> 8 & 0xff));
    const char *op = symaddr_redop_name((symaddr_redop_t)(call[0] >> 16 & 0xff));
    char root[24] = "", how[32] = "";
    if (row && symaddr_coll_has(row, SYMADDR_COLLECTIVE_ROOTED))
        snprintf(root, sizeof(root), ", root %u", (unsigned)(call[0] >> 32));
    if (row && symaddr_coll_has(row, SYMADDR_COLLECTIVE_REDUCES))
        snprintf(how, sizeof(how), ", op %s", op ? op : "unknown");
    snprintf(text, size, "%s, %s%s%s, count %llu", row ? row->info.name : "an unknown call",
             dtype ? dtype : "an unknown dtype", how, root, (unsigned long long)call[1]);
}

/* The stream's work done, then the failure (if any) any rank met, so that all take the same
 * path, and the call d: its node's kernel compared it within the node, this across nodes, before
 * any data leave for another node (a node of another count would make MPI's exchange fail).
 * The collective, not the algorithm (nodes may measure other thresholds). */
symaddr_status_t symaddr_coll_settle(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                     symaddr_status_t st, void *stream, const char *fn)
{
    uint64_t call[2] = {(d->ident & ~(uint64_t)0xff) |
                            (uint64_t)symaddr_coll_row_of(d->kind)->algos[0].kind,
                        d->count};
    if (st == SYMADDR_OK)
        st = ctx->be.ops->stream_sync(&ctx->be, stream);
    if (st == SYMADDR_OK)
        st = symaddr_coll_status(ctx);
    return symaddr_agree_call(&ctx->core, st, call, call_text, fn);
}

/* MPI counts are ints: messages between nodes are refused past that. */
symaddr_status_t symaddr_coll_mpi_fits(symaddr_context_t *ctx, size_t bytes, const char *fn)
{
    if (bytes <= INT_MAX)
        return SYMADDR_OK;
    return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_SIZE,
                             "%s: %zu bytes would go between nodes in one MPI call, past MPI's "
                             "2 GiB count; split the collective into smaller ones",
                             fn, bytes);
}

/* Node broadcast of count elements of the call of's recv (of its dtype) from node rank 0, in
 * place, on stream: recv with its table and that table's shift, which the broadcast's kernel
 * needs to reach node rank 0's recv where that rank passed it. */
symaddr_status_t symaddr_coll_node_bcast(symaddr_context_t *ctx, const symaddr_coll_desc_t *of,
                                         size_t count, void *stream)
{
    symaddr_coll_desc_t d;
    symaddr_coll_desc_init(ctx, &d, SYMADDR_COLL_BROADCAST, count, of->dtype, SYMADDR_SUM,
                           count * symaddr_dtype_size(of->dtype));
    d.send = d.recv = of->recv;
    d.send_pb = d.recv_pb = of->recv_pb;
    d.send_shift = d.recv_shift = of->recv_shift;
    d.root = 0;
    d.vec = 0;
    return symaddr_coll_launch(ctx, &d, stream);
}

/* A leader's recv holds its node's result: the leaders combine them through MPI in node order,
 * and those that keep the total write it into their recv (the others' stays their node's).
 * Leaders only; the caller agrees on the status. */
symaddr_status_t symaddr_coll_leaders_combine(symaddr_context_t *ctx, void *recv, size_t count,
                                              symaddr_dtype_t dt, symaddr_redop_t op, bool keep)
{
    size_t bytes = count * symaddr_dtype_size(dt);
    int nl;
    nl = ctx->core.boot.leaders.n;
    char *mine = symaddr_coll_stage_out(ctx, recv, bytes), *all = malloc(bytes * (size_t)nl);
    symaddr_status_t st = mine && all ? SYMADDR_OK : SYMADDR_ERR_NO_MEMORY;
    if (st == SYMADDR_OK)
        st = symaddr_boot_allgather(&ctx->core.boot, &ctx->core.boot.leaders, mine, all, bytes,
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
symaddr_status_t symaddr_coll_leaders_allreduce(symaddr_context_t *ctx,
                                                const symaddr_coll_desc_t *of, void *stream)
{
    symaddr_status_t st = SYMADDR_OK;
    if (ctx->core.boot.leaders.me >= 0)
        st = symaddr_coll_leaders_combine(ctx, of->recv, of->count, of->dtype, of->op, true);
    st = symaddr_agree_status(&ctx->core, st, "symaddr_allreduce (between nodes)");
    if (st == SYMADDR_OK)
        st = symaddr_coll_node_bcast(ctx, of, of->count, stream);
    return st;
}

/* Leaders swap their nodes' blocks as (rank, block) records through MPI. */
symaddr_status_t symaddr_coll_leaders_allgather(symaddr_context_t *ctx, void *recv, size_t bytes)
{
    const symaddr_bootstrap_t *b = &ctx->core.boot;
    size_t rec = sizeof(int64_t) + bytes, mine_bytes;
    int nl;
    nl = ctx->core.boot.leaders.n;
    if (!symaddr_size_mul(rec, (size_t)ctx->core.size, &mine_bytes) || mine_bytes > INT_MAX)
        return symaddr_coll_mpi_fits(ctx, SIZE_MAX, "symaddr_allgather");
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
        st = symaddr_boot_allgather(&ctx->core.boot, &ctx->core.boot.leaders, &mine, counts,
                                    sizeof(int), deadline);
    for (int l = 0, off = 0; st == SYMADDR_OK && l < nl; off += counts[l], l++)
        displs[l] = off;
    if (st == SYMADDR_OK)
        st = symaddr_boot_allgatherv(&ctx->core.boot, &ctx->core.boot.leaders, out, mine, in,
                                     counts, displs, deadline);
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

/* The root node's leader holds the data; leaders pass it on through MPI. */
symaddr_status_t symaddr_coll_leaders_broadcast(symaddr_context_t *ctx, void *recv, size_t bytes,
                                                int has_root)
{
    int nl, from = 0, *flags;
    uint64_t deadline = symaddr_bootstrap_deadline(&ctx->core.boot, 0);
    nl = ctx->core.boot.leaders.n;
    flags = malloc(sizeof(int) * (size_t)nl);
    void *h = symaddr_coll_stage_out(ctx, recv, bytes);
    symaddr_status_t st = flags && h ? SYMADDR_OK : SYMADDR_ERR_NO_MEMORY;
    if (st == SYMADDR_OK)
        st = symaddr_boot_allgather(&ctx->core.boot, &ctx->core.boot.leaders, &has_root, flags,
                                    sizeof(int), deadline);
    for (int l = 0; st == SYMADDR_OK && l < nl; l++)
        if (flags[l])
            from = l;
    if (st == SYMADDR_OK)
        st = symaddr_boot_bcast(&ctx->core.boot, &ctx->core.boot.leaders, h, bytes, from, deadline);
    if (st == SYMADDR_OK && !has_root)
        st = ctx->be.ops->memcpy(&ctx->be, recv, h, bytes);
    free(flags);
    free(h);
    return st;
}
