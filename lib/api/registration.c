/* SPDX-License-Identifier: MIT */
/* Registrations: every kind of memory goes through its provider's ops (lib/providers/):
 * allocate and free, import and the foreign tables, unregister, teardown, and the lookups over
 * them. Collective calls check locally, then agree, so that every rank returns the same
 * status. */
#include "api/registration.h"
#include "providers/provider.h"

#include <stdlib.h>
#include <string.h>

/* Reserve a registry slot and a registration up front, so that publishing after
 * the collective part cannot fail on memory. */
static symaddr_status_t new_registration(symaddr_context_t *ctx, symaddr_registration_t **r_p,
                                         const char *fn)
{
    if (symaddr_registry_reserve(&ctx->reg) != SYMADDR_OK || !(*r_p = calloc(1, sizeof(**r_p))))
        return symaddr_set_error(ctx, SYMADDR_ERR_NO_MEMORY, "%s: out of host memory", fn);
    return SYMADDR_OK;
}

symaddr_status_t symaddr_provider_get(symaddr_context_t *ctx, symaddr_provider_kind_t kind,
                                      symaddr_provider_t **provider_p)
{
    static const char fn[] = "symaddr_provider_get";
    if (!ctx || !provider_p)
        return SYMADDR_ERR_INVALID_ARG;
    if ((int)kind < 0 || kind >= SYMADDR_PROVIDER_COUNT_ ||
        symaddr_provider_ops(kind)->alloc == symaddr_provider_alloc_unsupported)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "%s: provider %d cannot allocate; use SYMADDR_PROVIDER_HEAP, _IPC "
                                 "or _VMM (symaddr_import and symaddr_register_peer_table for "
                                 "others)",
                                 fn, (int)kind);
    symaddr_status_t st = symaddr_provider_ops(kind)->usable(ctx, fn);
    if (st == SYMADDR_OK)
        *provider_p = &ctx->providers[kind];
    return st;
}

symaddr_status_t symaddr_symmetric_alloc_(symaddr_provider_t *provider, size_t bytes, void **ptr_p,
                                          symaddr_map_t **map_p)
{
    static const char fn[] = "symaddr_symmetric_alloc";
    symaddr_registration_t *r = NULL;
    symaddr_context_t *ctx = provider->ctx;
    symaddr_status_t st = SYMADDR_OK;

    if (!ptr_p || !map_p)
        st = symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                               "%s: ptr_p and map_p must not be "
                               "NULL",
                               fn);
    if (st == SYMADDR_OK)
        st = symaddr_check_size(&ctx->core.err, bytes, fn);
    if (st == SYMADDR_OK)
        st = new_registration(ctx, &r, fn);
    uint64_t t0 = symaddr_now_ns();
    st = symaddr_agree(&ctx->core, SYMADDR_OP_ALLOCATE, bytes, (uint64_t)provider->kind, st, fn);
    uint64_t t1 = symaddr_now_ns();
    if (st == SYMADDR_OK) {
        r->serial = ctx->core.seq;
        r->allocated = true;
        st = symaddr_provider_ops(provider->kind)->alloc(ctx, bytes, r);
    }
    if (st != SYMADDR_OK) {
        free(r);
        return st;
    }
    *ptr_p = (void *)(uintptr_t)r->map.range_base;
    *map_p = &r->map;
    SYMADDR_LOG(&ctx->core, SYMADDR_LOG_TRACE, SYMADDR_SUB_ALLOC,
                "symaddr_symmetric_alloc: %zu B from %s at %p (call %llu; us: agree %.1f, "
                "provider %.1f)",
                bytes, symaddr_provider_ops(provider->kind)->name, *ptr_p,
                (unsigned long long)r->serial, (t1 - t0) / 1e3, (symaddr_now_ns() - t1) / 1e3);
    return SYMADDR_OK;
}

symaddr_status_t symaddr_symmetric_alloc(symaddr_provider_t *provider, size_t bytes, void **ptr_p,
                                         symaddr_map_t **map_p)
{
    if (!provider)
        return SYMADDR_ERR_INVALID_ARG;
    GUARDED(provider->ctx, "symaddr_symmetric_alloc",
            symaddr_symmetric_alloc_(provider, bytes, ptr_p, map_p));
}

/* Local checks shared by free and unregister. */
static symaddr_status_t find_for_release(symaddr_context_t *ctx, const void *ptr,
                                         symaddr_registration_t **r_p, const char *fn)
{
    symaddr_status_t st = symaddr_registry_find(&ctx->reg, ptr, r_p);
    if (st == SYMADDR_ERR_DOUBLE_FREE)
        return symaddr_set_error(ctx, st, "%s: %p was already freed", fn, ptr);
    if (st != SYMADDR_OK)
        return symaddr_set_error(ctx, st,
                                 "%s: %p was not allocated or registered by this "
                                 "context",
                                 fn, ptr);
    if ((*r_p)->map.range_base != (uint64_t)(uintptr_t)ptr)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "%s: %p points inside an allocation; pass the pointer "
                                 "symaddr_symmetric_alloc returned",
                                 fn, ptr);
    return SYMADDR_OK;
}

/* The collective end of a registration: every rank agrees on which, then it is torn down. */
static symaddr_status_t release_(symaddr_context_t *ctx, symaddr_registration_t *r,
                                 symaddr_status_t st, uint64_t op, uint64_t arg1, const char *fn)
{
    uint64_t t0 = symaddr_now_ns();
    if (st == SYMADDR_OK) /* ranks' kernels may still use the memory */
        st = ctx->be.ops->stream_sync(&ctx->be, NULL);
    uint64_t t1 = symaddr_now_ns();
    st = symaddr_agree(&ctx->core, op, st == SYMADDR_OK ? r->serial : 0, arg1, st, fn);
    if (st != SYMADDR_OK)
        return st;
    uint64_t t2 = symaddr_now_ns();
    void *base = (void *)(uintptr_t)r->map.range_base;
    unsigned long long bytes = r->map.range_bytes, serial = r->serial;
    symaddr_registry_remove(&ctx->reg, r);
    if (symaddr_provider_ops(r->map.provider)->retain(ctx, r)) {
        free(r);
        /* kept, so nothing collective follows: a second round makes a rank that came after
         * its peers gave up time out too (teardown's barrier does it otherwise) */
        st = symaddr_agree_status(&ctx->core, SYMADDR_OK, fn);
    } else
        st = symaddr_teardown(ctx, &r, 1, false);
    SYMADDR_LOG(&ctx->core, SYMADDR_LOG_TRACE, SYMADDR_SUB_ALLOC,
                "%s: %p (+%llu B, call %llu; us: sync %.1f, agree %.1f, teardown %.1f)", fn, base,
                bytes, serial, (t1 - t0) / 1e3, (t2 - t1) / 1e3, (symaddr_now_ns() - t2) / 1e3);
    return st;
}

symaddr_status_t symaddr_symmetric_free_(symaddr_provider_t *provider, void *ptr)
{
    static const char fn[] = "symaddr_symmetric_free";
    symaddr_registration_t *r = NULL;
    symaddr_context_t *ctx = provider->ctx;
    symaddr_status_t st;

    if (!ptr)
        st = symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG, "%s: ptr is NULL", fn);
    else
        st = find_for_release(ctx, ptr, &r, fn);
    if (st == SYMADDR_OK && (!r->allocated || r->map.provider != provider->kind))
        st = symaddr_set_error(ctx, SYMADDR_ERR_WRONG_PROVIDER,
                               "%s: %p belongs to another provider; free it with the provider "
                               "that allocated it (imports: symaddr_unregister)",
                               fn, ptr);
    return release_(ctx, r, st, SYMADDR_OP_FREE, (uint64_t)provider->kind, fn);
}

symaddr_status_t symaddr_symmetric_free(symaddr_provider_t *provider, void *ptr)
{
    if (!provider)
        return SYMADDR_ERR_INVALID_ARG;
    GUARDED(provider->ctx, "symaddr_symmetric_free", symaddr_symmetric_free_(provider, ptr));
}

/* Memory or a table the caller brings, through its provider's check and reg. */
static symaddr_status_t register_(symaddr_context_t *ctx, symaddr_provider_kind_t kind,
                                  const symaddr_register_args_t *a, symaddr_map_t **map_p,
                                  const char *fn)
{
    const symaddr_provider_ops_t *ops = symaddr_provider_ops(kind);
    symaddr_registration_t *r = NULL;
    symaddr_status_t st = SYMADDR_OK;

    if (!a->ptr || !map_p)
        st = symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                               "%s: the pointer and map_p must "
                               "not be NULL",
                               fn);
    if (st == SYMADDR_OK)
        st = symaddr_check_size(&ctx->core.err, a->bytes, fn);
    if (st == SYMADDR_OK)
        st = ops->check(ctx, a, fn);
    if (st == SYMADDR_OK && symaddr_registry_overlaps(&ctx->reg, (uintptr_t)a->ptr, a->bytes))
        st = symaddr_set_error(ctx, SYMADDR_ERR_ALREADY_REGISTERED,
                               "%s: [%p, +%zu) overlaps a registered range; use symaddr_lookup "
                               "to find its map",
                               fn, a->ptr, a->bytes);
    if (st == SYMADDR_OK)
        st = new_registration(ctx, &r, fn);
    st = symaddr_agree(&ctx->core, SYMADDR_OP_REGISTER, a->bytes, (uint64_t)kind, st, fn);
    if (st == SYMADDR_OK) {
        r->serial = ctx->core.seq;
        st = ops->reg(ctx, a, r);
    }
    if (st != SYMADDR_OK) {
        free(r);
        return st;
    }
    *map_p = &r->map;
    SYMADDR_LOG(&ctx->core, SYMADDR_LOG_TRACE, SYMADDR_SUB_ALLOC, "%s: %p +%zu B as %s (call %llu)",
                fn, a->ptr, a->bytes, ops->name, (unsigned long long)r->serial);
    return SYMADDR_OK;
}

symaddr_status_t symaddr_import(symaddr_context_t *ctx, void *ptr, size_t bytes,
                                symaddr_map_t **map_p)
{
    symaddr_register_args_t a = {.ptr = ptr, .bytes = bytes};
    GUARDED(ctx, "symaddr_import",
            register_(ctx, SYMADDR_PROVIDER_IMPORT, &a, map_p, "symaddr_import"));
}

symaddr_status_t symaddr_register_peer_table(symaddr_context_t *ctx, void *local_ptr, size_t bytes,
                                             const uint64_t *host_peer_addrs, uint64_t caps,
                                             symaddr_map_t **map_p)
{
    symaddr_register_args_t a = {local_ptr, bytes, host_peer_addrs, caps};
    GUARDED(ctx, "symaddr_register_peer_table",
            register_(ctx, SYMADDR_PROVIDER_FOREIGN, &a, map_p, "symaddr_register_peer_table"));
}

static symaddr_status_t unregister_(symaddr_context_t *ctx, symaddr_map_t *map)
{
    static const char fn[] = "symaddr_unregister";
    symaddr_registration_t *r = NULL;
    symaddr_status_t st = SYMADDR_OK;

    if (!map || !(r = symaddr_registry_owner(&ctx->reg, map)))
        st = symaddr_set_error(ctx, SYMADDR_ERR_INVALID_MAP,
                               "%s: map %p is not live in this context (already unregistered, "
                               "or from another context)",
                               fn, (void *)map);
    else if (r->allocated)
        st = symaddr_set_error(ctx, SYMADDR_ERR_WRONG_PROVIDER,
                               "%s: this map is from symaddr_symmetric_alloc; release it "
                               "with symaddr_symmetric_free",
                               fn);
    return release_(ctx, r, st, SYMADDR_OP_UNREGISTER, 0, fn);
}

symaddr_status_t symaddr_unregister(symaddr_context_t *ctx, symaddr_map_t *map)
{
    GUARDED(ctx, "symaddr_unregister", unregister_(ctx, map));
}

symaddr_status_t symaddr_register_ptr_fn_(symaddr_context_t *ctx, void *local_ptr, size_t bytes,
                                          symaddr_peer_ptr_fn_t fn, const int *pe_of_rank,
                                          uint64_t caps, symaddr_map_t **map_p)
{
    uint64_t *table = calloc((size_t)ctx->core.size, sizeof(uint64_t));
    if (table && fn && local_ptr) {
        for (int r = 0; r < ctx->core.size; r++)
            table[r] = r == ctx->core.rank
                           ? (uint64_t)(uintptr_t)local_ptr
                           : (uint64_t)(uintptr_t)fn(local_ptr, pe_of_rank ? pe_of_rank[r] : r);
    }
    /* A NULL table or fn makes the registration fail on this rank, and so on every rank. */
    symaddr_register_args_t a = {local_ptr, bytes, fn ? table : NULL, caps};
    symaddr_status_t st =
        register_(ctx, SYMADDR_PROVIDER_FOREIGN, &a, map_p, "symaddr_register_ptr_fn");
    free(table);
    if (!fn)
        symaddr_set_error(ctx, st,
                          "symaddr_register_ptr_fn: fn is NULL; pass the library's "
                          "*_ptr(ptr, pe) function");
    return st;
}

symaddr_status_t symaddr_register_ptr_fn(symaddr_context_t *ctx, void *local_ptr, size_t bytes,
                                         symaddr_peer_ptr_fn_t fn, const int *pe_of_rank,
                                         uint64_t caps, symaddr_map_t **map_p)
{
    GUARDED(ctx, "symaddr_register_ptr_fn",
            symaddr_register_ptr_fn_(ctx, local_ptr, bytes, fn, pe_of_rank, caps, map_p));
}

symaddr_status_t symaddr_lookup(symaddr_context_t *ctx, const void *ptr, symaddr_map_t **map_p)
{
    symaddr_registration_t *r;
    if (!ctx || !ptr || !map_p)
        return SYMADDR_ERR_INVALID_ARG;
    symaddr_status_t st = symaddr_registry_lookup(&ctx->reg, ptr, &r);
    if (st != SYMADDR_OK)
        return st;
    *map_p = &r->map;
    return SYMADDR_OK;
}

symaddr_status_t symaddr_translate_host(const symaddr_map_t *map, const void *ptr, int target,
                                        void **remote_p)
{
    if (!map || !ptr || !remote_p || target < 0 || target >= map->world_size)
        return SYMADDR_ERR_INVALID_ARG;
    uint64_t p = (uint64_t)(uintptr_t)ptr, me = map->host_peer_bases[map->local_rank];
    /* the map's registered range, as symaddr_buffer_bind: an import serves its view alone */
    if (p - map->range_base >= map->range_bytes)
        return SYMADDR_ERR_OUT_OF_BOUNDS;
    if (map->host_peer_bases[target] == 0)
        return SYMADDR_ERR_UNREACHABLE;
    *remote_p = (void *)(uintptr_t)(map->host_peer_bases[target] + (p - me));
    return SYMADDR_OK;
}

uint64_t *symaddr_heap_bases_get(symaddr_context_t *ctx)
{
    return ctx && ctx->has_heap ? ctx->heap.backing.dev_table : NULL;
}

symaddr_status_t symaddr_buffer_bind(const symaddr_map_t *map, void *ptr, symaddr_buffer_t *buf_p)
{
    if (!map || !ptr || !buf_p)
        return SYMADDR_ERR_INVALID_ARG;
    if ((uint64_t)(uintptr_t)ptr - map->range_base >= map->range_bytes)
        return SYMADDR_ERR_OUT_OF_BOUNDS;
    buf_p->ptr = ptr;
    buf_p->peer_bases = map->peer_bases;
    buf_p->local_rank = map->local_rank;
    buf_p->caps = map->capabilities;
    return SYMADDR_OK;
}

symaddr_status_t symaddr_map_check(symaddr_context_t *ctx, const symaddr_map_t *map)
{
    uint32_t flag = 0;
    const uint32_t zero = 0;
    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    if (!map || !symaddr_registry_owner(&ctx->reg, map))
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_MAP,
                                 "symaddr_map_check: map %p is not live in this context",
                                 (const void *)map);
    symaddr_status_t st = ctx->be.ops->stream_sync(&ctx->be, NULL);
    if (st == SYMADDR_OK)
        st = ctx->be.ops->memcpy(&ctx->be, &flag, map->error_flag, sizeof(flag));
    if (st != SYMADDR_OK)
        return symaddr_set_error(ctx, st, "symaddr_map_check: cannot read the error flag");
    if (flag == 0)
        return SYMADDR_OK;
    ctx->be.ops->memcpy(&ctx->be, map->error_flag, &zero, sizeof(zero));
    st = (symaddr_status_t) - (int32_t)flag;
    return symaddr_set_error(ctx, st,
                             "a device access through the table of map %p was refused (%s); "
                             "check that each pointer is translated with its own map's table",
                             (const void *)map, symaddr_strerror(st));
}
