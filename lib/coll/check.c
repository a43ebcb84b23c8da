/* SPDX-License-Identifier: MIT */
/* The checks of a collective call: its sizes, dtype, op and root, its buffers (symmetric, in
 * bounds, mapped on the node, overlapping only as the collective allows), and in validation
 * mode the agreement that every rank passed the same. */
#include "coll/coll.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One buffer of a call: what the caller passed, and what the checks found. */
typedef struct coll_buf {
    const char *what; /* "send" or "recv" */
    const void *ptr;
    size_t bytes;                 /* the call reaches from ptr */
    const uint64_t *pb, *host_pb; /* its table, in device and host memory */
    uint64_t table;               /* which table: the same number on every rank */
    uint64_t shift; /* this rank's shift of the table (symaddr_backing_t.offset): its bytes'
                     * offsets from its own entry less this are the same on every rank */
} coll_buf_t;

/* b->ptr is symmetric memory of this context, element-aligned, b->bytes in bounds and mapped on
 * every node peer; fills b's tables. *bits_p collects the address bits of the pointer and of
 * every peer's copy (for d->vec). */
static symaddr_status_t sym_buffer(symaddr_context_t *ctx, const symaddr_coll_call_t *call,
                                   coll_buf_t *b, uint64_t *bits_p)
{
    const char *fn = call->row->name, *what = b->what;
    const void *ptr = b->ptr;
    size_t align = symaddr_dtype_size(call->dtype);
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
    if (b->bytes > r->map.range_bytes - ((uint64_t)(uintptr_t)ptr - r->map.range_base))
        return symaddr_set_error(ctx, SYMADDR_ERR_OUT_OF_BOUNDS,
                                 "%s: %s needs %zu bytes from %p, past the end of its "
                                 "registration",
                                 fn, what, b->bytes, ptr);
    *bits_p |= (uint64_t)(uintptr_t)ptr;
    for (int q = 0; q < ctx->core.boot.node_size; q++) {
        uint64_t base = r->map.host_peer_bases[ctx->core.boot.node_to_rank[q]];
        if (base == 0)
            return symaddr_set_error(ctx, SYMADDR_ERR_UNREACHABLE,
                                     "%s: %s is not mapped on node rank %d", fn, what, q);
        *bits_p |= base;
    }
    b->pb = r->map.peer_bases;
    b->host_pb = r->map.host_peer_bases;
    /* every registration has a table of its own (a heap allocation's too), numbered by the
     * collective call that made it */
    b->table = r->serial;
    b->shift = r->backing ? r->backing->offset : 0;
    return SYMADDR_OK;
}

/* Where a call was made, as the ranks compare it: the source file and line the header's macros
 * or a binding named. A call made without them has an empty name and is not compared: a code
 * address would be, but a compiler may copy a call site (jump threading), so that ranks at one
 * source line return from different addresses. */
typedef struct coll_where {
    uint64_t pos;
    uint32_t is_line;
    char name[44];
} coll_where_t;

static void where_of(const symaddr_coll_site_t *site, coll_where_t *w)
{
    memset(w, 0, sizeof(*w));
    const char *name = site->file;
    if (name) { /* a negative line: the binding staged this call's recv */
        w->pos = (uint64_t)(site->line < 0 ? -(int64_t)site->line : site->line);
        w->is_line = site->line < 0 ? 2 : 1;
        /* the tail, which tells files apart */
        size_t n = strlen(name);
        memcpy(w->name, n < sizeof(w->name) ? name : name + n - (sizeof(w->name) - 1),
               n < sizeof(w->name) ? n : sizeof(w->name) - 1);
    }
}

static const char *where_text(const coll_where_t *w, char *buf, size_t n)
{
    snprintf(buf, n, "%.44s:%llu%s", w->name, (unsigned long long)w->pos,
             w->is_line == 2 ? " (recv staged)" : "");
    return buf;
}

/* Text for a registration's table number (coll_buf_t.table). */
static const char *table_text(uint64_t table, char *buf, size_t n)
{
    snprintf(buf, n, "the registration of collective call %llu", (unsigned long long)table);
    return buf;
}

/* 32 bits of the buffers a non-rooted collective's kernels reach on its peers (where, as
 * check_match takes it), the same on every rank that passes the same ones. */
static uint32_t buffers_hash(const symaddr_coll_row_t *row, const uint64_t where[4])
{
    uint64_t h = 0x243f6a8885a308d3ull;
    for (int b = 0; b < 2; b++)
        if (row->peers & (b ? SYMADDR_COLL_PEER_RECV : SYMADDR_COLL_PEER_SEND)) {
            for (int i = b; i < 4; i += 2) {
                h = (h ^ where[i]) * 0x9e3779b97f4a7c15ull;
                h ^= h >> 31;
            }
        }
    return (uint32_t)(h ^ h >> 32);
}

/* In validation mode every rank learns whether the others passed the same arguments and
 * whether any rank's arguments were bad; all then return the same status. where: send's and
 * recv's offsets in their registrations, then their tables (coll_buf_t.table). Without it a bad
 * argument fails on its rank alone, and the peers time out. With SYMADDR_VALIDATE=1 the ranks
 * also compare where they made the call: two calls of one collective and count that a skipped
 * call would pair carry nothing else that tells them apart. */
symaddr_status_t symaddr_coll_check_match(symaddr_context_t *ctx, symaddr_status_t local,
                                          symaddr_coll_kind_t kind, size_t count,
                                          symaddr_dtype_t dt, int op, int root,
                                          const uint64_t where[4], const symaddr_coll_site_t *site)
{
    if (!ctx->core.cfg.validate)
        return local;
    const symaddr_coll_row_t *row = symaddr_coll_row_of(kind);
    symaddr_status_t st = symaddr_agree_status(&ctx->core, local, row->name);
    if (st != SYMADDR_OK)
        return st;
    enum { WORDS = 9 };
    typedef struct {
        uint64_t w[WORDS];
        coll_where_t at;
    } match_t;
    /* a rooted collective's kernels reach the peers' buffers where those ranks passed them
     * (coll_publish), so there the offsets may differ */
    bool at_own = symaddr_coll_has(row, SYMADDR_COLLECTIVE_ROOTED);
    bool send_reached = !at_own && row->peers & SYMADDR_COLL_PEER_SEND;
    bool recv_reached = !at_own && row->peers & SYMADDR_COLL_PEER_RECV;
    match_t mine = {.w = {(uint64_t)row->algos[0].kind, count, (uint64_t)dt, (uint64_t)op,
                          (uint64_t)root, send_reached ? where[0] : 0, recv_reached ? where[1] : 0,
                          send_reached ? where[2] : 0, recv_reached ? where[3] : 0}};
    if (ctx->core.cfg.validate == SYMADDR_VALIDATE_ON)
        where_of(site, &mine.at);
    symaddr_agree_rec_t *rec;
    st = symaddr_agree_exchange(&ctx->core, SYMADDR_AGREE_MATCH, SYMADDR_OK, &mine, sizeof(mine),
                                row->name, &rec);
    if (st != SYMADDR_OK) {
        free(rec);
        return st;
    }
    _Static_assert(sizeof(match_t) <= SYMADDR_AGREE_PAYLOAD, "a match fits an agreement");
    const match_t *all0 = (const match_t *)rec[0].payload;
    const uint64_t *first = all0->w;
    for (int r = 0; r < ctx->core.size && st == SYMADDR_OK; r++) {
        match_t *all_r = (match_t *)rec[r].payload;
        all_r->at.name[sizeof(all_r->at.name) - 1] = '\0'; /* a peer's text ends in its record */
        const uint64_t *theirs = all_r->w;
        const coll_where_t *at = &all_r->at, *at0 = &all0->at;
        char a[96], b[96];
        if (memcmp(theirs, first, 5 * sizeof(uint64_t)) != 0)
            st = symaddr_set_error(ctx, SYMADDR_ERR_MISMATCH,
                                   "%s: rank %d passed a different collective, count (%llu, rank "
                                   "0: %llu), dtype, op or root than rank 0; every rank must pass "
                                   "the same",
                                   row->name, r, (unsigned long long)theirs[1],
                                   (unsigned long long)first[1]);
        else if (memcmp(theirs + 5, first + 5, 2 * sizeof(uint64_t)) != 0)
            st = symaddr_set_error(
                ctx, SYMADDR_ERR_MISMATCH,
                "%s: rank %d passed %s at byte %llu of its registration, rank 0 "
                "at byte %llu; kernels reach a peer's %s at this rank's offset, "
                "so every rank must pass it at the same one",
                row->name, r, theirs[5] != first[5] ? "send" : "recv",
                (unsigned long long)(theirs[5] != first[5] ? theirs[5] : theirs[6]),
                (unsigned long long)(theirs[5] != first[5] ? first[5] : first[6]),
                theirs[5] != first[5] ? "send" : "recv");
        else if (at->name[0] && strcmp(at->name, at0->name) == 0 &&
                 (at->pos != at0->pos || at->is_line != at0->is_line))
            st = symaddr_set_error(
                ctx, SYMADDR_ERR_MISMATCH,
                "%s: rank %d made this call at %s, rank 0 at %s: a rank that skipped a call "
                "pairs its next one with the call the others made instead (every rank must make "
                "the same calls in the same order); if the program makes this collective from "
                "different places on purpose, set SYMADDR_VALIDATE=args to compare the "
                "arguments only",
                row->name, r, where_text(at, a, sizeof(a)), where_text(at0, b, sizeof(b)));
        else if (memcmp(theirs + 7, first + 7, 2 * sizeof(uint64_t)) != 0)
            st = symaddr_set_error(
                ctx, SYMADDR_ERR_MISMATCH,
                "%s: rank %d passed %s in %s, rank 0 in %s; kernels reach a peer's %s in the "
                "registration this rank passed, so every rank must pass the same allocation",
                row->name, r, theirs[7] != first[7] ? "send" : "recv",
                table_text(theirs[7] != first[7] ? theirs[7] : theirs[8], a, sizeof(a)),
                table_text(theirs[7] != first[7] ? first[7] : first[8], b, sizeof(b)),
                theirs[7] != first[7] ? "send" : "recv");
    }
    free(rec);
    return st;
}

/* Whether [a, a+an) and [b, b+bn) overlap. */
static bool overlap(const void *a, size_t an, const void *b, size_t bn)
{
    return (const char *)a < (const char *)b + bn && (const char *)b < (const char *)a + an;
}

/* send and recv either the same buffer or apart. */
static symaddr_status_t in_place_or_apart(symaddr_context_t *ctx, const void *send,
                                          const void *recv, size_t bytes, const char *fn)
{
    if (send != recv && overlap(send, bytes, recv, bytes))
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "%s: send and recv overlap without being the same buffer; pass "
                                 "send == recv for in place, or buffers that do not overlap",
                                 fn);
    return SYMADDR_OK;
}

/* part apart from whole, or this rank's block of it (whole + rank * count), the only in-place
 * form where one buffer holds a block per rank (recv a block of send, or send of recv). */
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

/* The overlaps a collective allows follow from its shape (symaddr_collective_flag_t). */
static symaddr_status_t overlap_rule(symaddr_context_t *ctx, const symaddr_coll_row_t *row,
                                     const void *send, const void *recv, size_t bytes, size_t total)
{
    bool send_all = symaddr_coll_has(row, SYMADDR_COLLECTIVE_SEND_ALL),
         recv_all = symaddr_coll_has(row, SYMADDR_COLLECTIVE_RECV_ALL);
    if (send_all && recv_all) {
        if (overlap(send, total, recv, total))
            return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                     "%s: send and recv overlap; in-place %s is not supported, "
                                     "use separate buffers",
                                     row->name, row->info.name);
        return SYMADDR_OK;
    }
    if (send_all)
        return block_rule(ctx, recv, "recv", send, "send", bytes, total, row->name);
    if (recv_all)
        return block_rule(ctx, send, "send", recv, "recv", bytes, total, row->name);
    return in_place_or_apart(ctx, send, recv, bytes, row->name);
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

symaddr_status_t symaddr_coll_begin(symaddr_context_t *ctx, const symaddr_coll_call_t *call,
                                    symaddr_coll_desc_t *d)
{
    const symaddr_coll_row_t *row = call->row;
    const char *fn = row->name;
    bool rooted = symaddr_coll_has(row, SYMADDR_COLLECTIVE_ROOTED);
    symaddr_redop_t op = symaddr_coll_has(row, SYMADDR_COLLECTIVE_REDUCES) ? call->op : SYMADDR_SUM;
    int root = rooted ? call->root : 0;
    size_t bytes, total, work = 0;
    symaddr_status_t st = sizes(ctx, call->count, call->dtype, (int)op, &bytes, &total, fn);
    if (st == SYMADDR_OK && rooted && (root < 0 || root >= ctx->core.size))
        st = symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG, "%s: root %d is not a rank (0..%d)",
                               fn, root, ctx->core.size - 1);
    if (st == SYMADDR_OK && symaddr_multi_node(ctx))
        st = symaddr_coll_mpi_fits(ctx, row->mpi_all ? total : bytes, fn);
    symaddr_coll_kind_t kind = row->algos[0].kind;
    if (row->choose)
        kind = row->choose(ctx, bytes, call->dtype, &work);
    else
        work = row->node_work ? bytes * (size_t)ctx->core.boot.node_size : bytes;
    /* the buffers, then where they lie in their registrations (translation keeps the offset) */
    coll_buf_t send = {.what = "send",
                       .ptr = call->send,
                       .bytes = symaddr_coll_has(row, SYMADDR_COLLECTIVE_SEND_ALL) ? total : bytes};
    coll_buf_t recv = {.what = "recv",
                       .ptr = call->recv,
                       .bytes = symaddr_coll_has(row, SYMADDR_COLLECTIVE_RECV_ALL) ? total : bytes};
    /* reduce-scatter reads at send + node_rank * count elements */
    uint64_t bits = kind == SYMADDR_COLL_REDUCE_SCATTER ? bytes : 0;
    if (st == SYMADDR_OK)
        st = sym_buffer(ctx, call, &send, &bits);
    if (st == SYMADDR_OK)
        st = sym_buffer(ctx, call, &recv, &bits);
    if (st == SYMADDR_OK)
        st = overlap_rule(ctx, row, call->send, call->recv, bytes, total);
    uint64_t where[4] = {0, 0, 0, 0};
    if (st == SYMADDR_OK) {
        where[0] = (uint64_t)(uintptr_t)call->send - send.host_pb[ctx->core.rank] - send.shift;
        where[1] = (uint64_t)(uintptr_t)call->recv - recv.host_pb[ctx->core.rank] - recv.shift;
        where[2] = send.table;
        where[3] = recv.table;
    }
    if ((st = symaddr_coll_check_match(ctx, st, kind, call->count, call->dtype, op, root, where,
                                       &call->site)) != SYMADDR_OK)
        return st;
    symaddr_coll_desc_init(ctx, d, kind, call->count, call->dtype, op, work);
    d->send = call->send;
    d->send_pb = send.pb;
    d->recv = call->recv;
    d->recv_pb = recv.pb;
    d->recv_host_pb = recv.host_pb;
    d->root = root;
    d->vec = (bits & 15) == 0;
    d->send_table = send.table;
    d->recv_table = recv.table;
    d->send_shift = send.shift;
    d->recv_shift = recv.shift;
    /* desc_init's identity holds the kind, dtype and op; a user's call adds its root */
    d->ident |= (uint64_t)(uint32_t)root << 32;
    /* Every other collective's kernels reach a peer's send or recv at this rank's offset in
     * this rank's registration: those join the identity the node's ranks compare, so that
     * ranks passing other allocations, or other offsets, fail with MISMATCH rather than read
     * or write the wrong memory (validation mode names them). The rooted ones compare theirs
     * where they publish them. */
    if (!symaddr_coll_has(row, SYMADDR_COLLECTIVE_ROOTED))
        d->ident ^= (uint64_t)buffers_hash(row, where) << 32;
    return SYMADDR_OK;
}
