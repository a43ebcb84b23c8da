/* SPDX-License-Identifier: MIT */
/* Handle exchange and peer tables, shared by every provider that maps peers'
 * memory (heap, ipc, import). */
#include "maps/maps.h"
#include "maps/exch.h"
#include "symaddr/device.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static symaddr_peer_root_t *cache_find(symaddr_context_t *ctx, int rank, uint64_t owner_base)
{
    for (symaddr_peer_root_t *p = ctx->peer_roots; p; p = p->next)
        if (p->rank == rank && p->owner_base == owner_base)
            return p;
    return NULL;
}

static void peer_root_put(symaddr_context_t *ctx, symaddr_peer_root_t *p)
{
    if (--p->refs > 0)
        return;
    for (symaddr_peer_root_t **pp = &ctx->peer_roots; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    ctx->be.ops->handle_close(&ctx->be, p->ptr, p->bytes);
    free(p);
}

void symaddr_backing_close_peers(symaddr_context_t *ctx, symaddr_backing_t *m)
{
    if (!m->peers)
        return;
    for (int r = 0; r < ctx->core.size; r++)
        if (m->peers[r]) {
            peer_root_put(ctx, m->peers[r]);
            m->peers[r] = NULL;
        }
}

/* The tables and the peer list; the root stays. */
static void release_tables(symaddr_context_t *ctx, symaddr_backing_t *m)
{
    if (m->dev_table)
        ctx->be.ops->local_free(&ctx->be, m->dev_table - SYMADDR_TABLE_HEADER);
    free(m->host_table);
    free(m->peers);
    m->dev_table = m->host_table = NULL;
    m->peers = NULL;
}

void symaddr_backing_release(symaddr_context_t *ctx, symaddr_backing_t *m)
{
    release_tables(ctx, m);
    if (m->owned && m->root)
        (m->vmm ? ctx->be.ops->vmm_free : ctx->be.ops->mem_free)(&ctx->be, m->root);
    m->root = NULL;
}

bool symaddr_backing_retain(symaddr_context_t *ctx, symaddr_backing_t *m)
{
    size_t budget = ctx->core.cfg.retain_bytes;
    if (!m->owned || m->root_bytes > budget || ctx->retain_count == 0 ||
        ctx->core.broken != SYMADDR_OK)
        return false;
    symaddr_retained_flush_to(ctx, budget - m->root_bytes, ctx->retain_count - 1);
    m->older = ctx->retained;
    ctx->retained = m;
    return true;
}

/* The link to the newest retained backing of asked bytes (vmm or not); NULL when none. */
static symaddr_backing_t **retained_link(symaddr_context_t *ctx, size_t asked, bool vmm)
{
    for (symaddr_backing_t **p = &ctx->retained; *p; p = &(*p)->older)
        if ((*p)->asked == asked && (*p)->vmm == vmm)
            return p;
    return NULL;
}

bool symaddr_backing_retained(symaddr_context_t *ctx, size_t asked, bool vmm)
{
    return retained_link(ctx, asked, vmm) != NULL;
}

symaddr_backing_t *symaddr_backing_take(symaddr_context_t *ctx, size_t asked, bool vmm)
{
    symaddr_backing_t **p = retained_link(ctx, asked, vmm), *m = p ? *p : NULL;
    if (m) {
        *p = m->older;
        m->older = NULL;
    }
    return m;
}

/* The retained backings past the newest keep bytes and keep_count backings, unlinked, oldest
 * last. */
static symaddr_backing_t *retained_cut(symaddr_context_t *ctx, size_t keep, size_t keep_count)
{
    size_t kept = 0, count = 0;
    for (symaddr_backing_t **p = &ctx->retained; *p; p = &(*p)->older, count++) {
        if (kept + (*p)->root_bytes > keep || count >= keep_count) {
            symaddr_backing_t *cut = *p;
            *p = NULL;
            return cut;
        }
        kept += (*p)->root_bytes;
    }
    return NULL;
}

static void release_list(symaddr_context_t *ctx, symaddr_backing_t *m)
{
    while (m) {
        symaddr_backing_t *older = m->older;
        symaddr_backing_release(ctx, m);
        free(m);
        m = older;
    }
}

symaddr_status_t symaddr_retained_flush(symaddr_context_t *ctx, size_t keep)
{
    return symaddr_retained_flush_to(ctx, keep, SIZE_MAX);
}

symaddr_status_t symaddr_retained_flush_to(symaddr_context_t *ctx, size_t keep, size_t keep_count)
{
    symaddr_backing_t *cut = retained_cut(ctx, keep, keep_count);
    symaddr_status_t st = SYMADDR_OK;
    if (!cut)
        return SYMADDR_OK;
    for (symaddr_backing_t *m = cut; m; m = m->older)
        symaddr_backing_close_peers(ctx, m);
    /* a peer may free its root only once nobody maps it; a broken context cannot wait */
    if (ctx->core.broken == SYMADDR_OK &&
        (st = symaddr_boot_barrier(&ctx->core.boot, &ctx->core.boot.node,
                                   symaddr_bootstrap_agree_deadline(&ctx->core.boot))) !=
            SYMADDR_OK)
        symaddr_core_break(&ctx->core, st);
    release_list(ctx, cut);
    return st;
}

void symaddr_retained_close_peers(symaddr_context_t *ctx)
{
    for (symaddr_backing_t *m = ctx->retained; m; m = m->older)
        symaddr_backing_close_peers(ctx, m);
}

void symaddr_retained_release(symaddr_context_t *ctx)
{
    release_list(ctx, ctx->retained);
    ctx->retained = NULL;
}

symaddr_status_t symaddr_backing_fits(symaddr_context_t *ctx, size_t asked, size_t bytes,
                                      const char *what, const char *fix)
{
    /* Host memory is every rank of the host's, taken at first touch: past what the host holds
     * the allocation would succeed and the OOM killer end the job later. */
    size_t total = ctx->be.ops->mem_total(&ctx->be), all = 0;
    size_t sharers = ctx->be.ops->host_memory && ctx->core.boot.host_size > 0
                         ? (size_t)ctx->core.boot.host_size
                         : 1;
    if (symaddr_size_mul(bytes, sharers, &all) && (!total || all <= total))
        return SYMADDR_OK;
    return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_SIZE,
                             "%s of %zu bytes per rank%s%zu%s is more than the %zu bytes of %s "
                             "memory; %s",
                             what, asked, sharers > 1 ? ", for " : " (", sharers,
                             sharers > 1 ? " ranks on this host," : " rank)", total,
                             ctx->be.ops->host_memory ? "host" : "device", fix);
}

/* A device table of world entries from host (header in front): what validation reads. */
static symaddr_status_t upload(symaddr_context_t *ctx, const uint64_t *host, size_t bytes,
                               uint64_t caps, uint64_t **dev_table_p)
{
    size_t n = SYMADDR_TABLE_HEADER + (size_t)ctx->core.size;
    uint64_t *staged = malloc(n * sizeof(uint64_t));
    void *dev;
    symaddr_status_t st = staged ? ctx->be.ops->local_alloc(&ctx->be, n * sizeof(uint64_t), &dev)
                                 : SYMADDR_ERR_NO_MEMORY;
    if (st != SYMADDR_OK) {
        free(staged);
        return st;
    }
    /* The header lets validation mode check accesses from the table alone. */
    uint64_t *table = staged + SYMADDR_TABLE_HEADER;
    table[SYMADDR_HDR_MAGIC] = SYMADDR_TABLE_MAGIC;
    table[SYMADDR_HDR_INFO] = (uint64_t)(uint32_t)ctx->core.size |
                              ((uint64_t)(ctx->core.cfg.validate != 0) << 32) |
                              ((caps & SYMADDR_HDR_CAPS_MASK) << SYMADDR_HDR_CAPS_SHIFT);
    table[SYMADDR_HDR_BYTES] = bytes;
    table[SYMADDR_HDR_ERROR] = 0;
    memcpy(table, host, sizeof(uint64_t) * (size_t)ctx->core.size);
    st = ctx->be.ops->memcpy(&ctx->be, dev, staged, n * sizeof(uint64_t));
    free(staged);
    if (st != SYMADDR_OK) {
        ctx->be.ops->local_free(&ctx->be, dev);
        return st;
    }
    *dev_table_p = (uint64_t *)dev + SYMADDR_TABLE_HEADER;
    return SYMADDR_OK;
}

symaddr_status_t symaddr_backing_upload(symaddr_context_t *ctx, symaddr_backing_t *m)
{
    return upload(ctx, m->host_table, m->root_bytes, m->caps, &m->dev_table);
}

symaddr_status_t symaddr_backing_sub_table(symaddr_context_t *ctx, const symaddr_backing_t *m,
                                           size_t off, size_t bytes, uint64_t **dev_p,
                                           uint64_t **host_p)
{
    uint64_t *host = calloc((size_t)ctx->core.size + 1, sizeof(uint64_t));
    if (!host)
        return SYMADDR_ERR_NO_MEMORY;
    for (int r = 0; r < ctx->core.size; r++) /* 0 stays 0: a rank no load reaches */
        host[r] = m->host_table[r] ? m->host_table[r] + off : 0;
    symaddr_status_t st = upload(ctx, host, bytes, m->caps, dev_p);
    if (st != SYMADDR_OK) {
        free(host);
        return st;
    }
    *host_p = host;
    return SYMADDR_OK;
}

void symaddr_backing_sub_table_free(symaddr_context_t *ctx, uint64_t *dev, uint64_t *host)
{
    if (dev)
        ctx->be.ops->local_free(&ctx->be, dev - SYMADDR_TABLE_HEADER);
    free(host);
}

/* Local part of symaddr_backing_open once every node peer's record and descriptor are in. */
static symaddr_status_t open_peers(symaddr_context_t *ctx, symaddr_backing_t *m, const exch_t *all,
                                   int *fds, size_t offset)
{
    const symaddr_bootstrap_t *b = &ctx->core.boot;
    symaddr_status_t st = SYMADDR_OK;

    for (int q = 0; q < b->node_size; q++) {
        int r = b->node_to_rank[q];
        if (q == b->node_rank || st != SYMADDR_OK)
            continue;
        if (all[q].status != SYMADDR_OK) {
            st = SYMADDR_ERR_PEER;
            symaddr_set_error(ctx, st, "rank %d could not export its memory", r);
            continue;
        }
        if (symaddr_exch_check(&all[q], fds[q] >= 0) != SYMADDR_OK) {
            st = symaddr_set_error(ctx, SYMADDR_ERR_PEER,
                                   "rank %d sent a malformed handle record; are all ranks "
                                   "running the same symaddr?",
                                   r);
            continue;
        }
        symaddr_peer_root_t *p = cache_find(ctx, r, all[q].root);
        if (!p) {
            symaddr_ipc_handle_t h = all[q].handle;
            p = calloc(1, sizeof(*p));
            if (!p) {
                st = symaddr_set_error(ctx, SYMADDR_ERR_NO_MEMORY, "out of host memory");
                continue;
            }
            h.fd = fds[q];
            fds[q] = -1; /* handle_open consumes it */
            st = ctx->be.ops->handle_open(&ctx->be, &h, &p->ptr);
            if (st != SYMADDR_OK) {
                free(p);
                symaddr_set_error(ctx, st, "cannot open rank %d's memory handle (%llu bytes)", r,
                                  (unsigned long long)h.bytes);
                continue;
            }
            p->rank = r;
            p->owner_base = all[q].root;
            p->bytes = h.bytes;
            p->next = ctx->peer_roots;
            ctx->peer_roots = p;
        }
        p->refs++;
        m->peers[r] = p;
        m->host_table[r] = (uint64_t)(uintptr_t)p->ptr + all[q].offset - offset;
    }
    return st;
}

symaddr_status_t symaddr_backing_open(symaddr_context_t *ctx, symaddr_backing_t *m, size_t offset)
{
    const symaddr_bootstrap_t *b = &ctx->core.boot;
    exch_t mine, *all = NULL;
    int *fds = NULL;
    symaddr_status_t st;
    char why[256] = "";
    /* phase ends for TRACE: export, handle allgather, descriptor exchange, opens, table */
    uint64_t t[6] = {symaddr_now_ns()};

    memset(&mine, 0, sizeof(mine));
    mine.handle.fd = -1;
    mine.root = (uint64_t)(uintptr_t)m->root;
    mine.offset = offset;
    m->offset = offset;
    m->peers = calloc((size_t)ctx->core.size, sizeof(*m->peers));
    m->host_table = calloc((size_t)ctx->core.size + 1, sizeof(uint64_t));
    all = calloc((size_t)b->node_size, sizeof(*all));
    fds = malloc(sizeof(int) * (size_t)b->node_size);
    st = (m->peers && m->host_table && all && fds) ? SYMADDR_OK : SYMADDR_ERR_NO_MEMORY;
    if (st == SYMADDR_OK && b->node_size > 1)
        st = ctx->be.ops->handle_export(&ctx->be, m->root, m->root_bytes, &mine.handle);
    t[1] = symaddr_now_ns();
    mine.status = st;
    m->fabric = st == SYMADDR_OK && mine.handle.kind == SYMADDR_HANDLE_VMM_FABRIC;
    if (st != SYMADDR_OK)
        symaddr_set_error(ctx, st, "cannot export %zu bytes at %p to node peers", m->root_bytes,
                          m->root);
    /* Both exchanges run even after a local failure, so that no peer is left waiting. */
    if (all &&
        symaddr_bootstrap_node_allgather(&ctx->core.boot, &mine, all, sizeof(mine)) != SYMADDR_OK &&
        st == SYMADDR_OK)
        st = symaddr_set_error(ctx, SYMADDR_ERR_MPI, "MPI_Allgather of handles failed");
    t[2] = symaddr_now_ns();
    if (fds) {
        symaddr_status_t fst = symaddr_bootstrap_fd_alltoall(
            &ctx->core.boot, st == SYMADDR_OK ? mine.handle.fd : -1, fds, why, sizeof(why));
        if (fst != SYMADDR_OK && st == SYMADDR_OK)
            st = symaddr_set_error(ctx, fst, "descriptor exchange: %s", why);
    }
    t[3] = symaddr_now_ns();
    if (st == SYMADDR_OK)
        st = open_peers(ctx, m, all, fds, offset);
    t[4] = symaddr_now_ns();
    if (m->host_table)
        m->host_table[ctx->core.rank] = (uint64_t)(uintptr_t)m->root;
    if (st == SYMADDR_OK)
        st = symaddr_backing_upload(ctx, m);
    t[5] = symaddr_now_ns();
    for (int q = 0; fds && q < b->node_size; q++)
        if (fds[q] >= 0)
            close(fds[q]);
    free(fds);
    free(all);
    st = symaddr_agree_status(&ctx->core, st, "handle exchange");
    SYMADDR_LOG(&ctx->core, SYMADDR_LOG_TRACE, SYMADDR_SUB_BOOT,
                "handle exchange: %zu B at %p with %d node peers%s: %s (us: export %.1f, "
                "allgather %.1f, descriptors %.1f, open %.1f, table %.1f, agree %.1f)",
                m->root_bytes, m->root, b->node_size - 1, m->fabric ? " (fabric handles)" : "",
                symaddr_strerror(st), (t[1] - t[0]) / 1e3, (t[2] - t[1]) / 1e3, (t[3] - t[2]) / 1e3,
                (t[4] - t[3]) / 1e3, (t[5] - t[4]) / 1e3, (symaddr_now_ns() - t[5]) / 1e3);
    if (st != SYMADDR_OK) { /* the caller frees its root */
        symaddr_backing_close_peers(ctx, m);
        release_tables(ctx, m);
    }
    return st;
}

symaddr_status_t symaddr_registration_publish(symaddr_context_t *ctx, symaddr_registration_t *r,
                                              symaddr_provider_kind_t kind, void *range_base,
                                              size_t range_bytes)
{
    symaddr_backing_t *m = r->backing;
    symaddr_map_t *map = &r->map;
    bool own = r->own_table != NULL; /* a sub-allocation: its own bounds and table */

    map->peer_bases = own ? r->own_table : m->dev_table;
    map->host_peer_bases = own ? r->own_host_table : m->host_table;
    map->local_rank = ctx->core.rank;
    map->world_size = ctx->core.size;
    map->allocation_base = own ? (uint64_t)(uintptr_t)range_base : (uint64_t)(uintptr_t)m->root;
    map->allocation_bytes = own ? range_bytes : m->root_bytes;
    map->capabilities =
        m->caps | (m->owned ? SYMADDR_CAP_OWNED : 0) | (m->fabric ? SYMADDR_CAP_FABRIC : 0);
    map->range_base = (uint64_t)(uintptr_t)range_base;
    map->range_bytes = range_bytes;
    map->error_flag = (uint32_t *)(map->peer_bases + SYMADDR_HDR_ERROR);
    map->provider = kind;
    return symaddr_registry_insert(&ctx->reg, r);
}
