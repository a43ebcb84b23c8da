/* SPDX-License-Identifier: MIT */
/* Registrations: allocate and free through a provider, import, foreign tables, unregister,
 * and the lookups over them. Collective calls check locally, then agree, so that every rank
 * returns the same status. */
#include "internal.h"
#include "providers/provider.h"

#include <stdlib.h>
#include <string.h>


static const symaddr_provider_ops_t *const provider_ops[SYMADDR_PROVIDER_COUNT_] = {
    [SYMADDR_PROVIDER_HEAP] = &symaddr_provider_heap_ops,
    [SYMADDR_PROVIDER_IPC] = &symaddr_provider_ipc_ops,
    [SYMADDR_PROVIDER_VMM] = &symaddr_provider_vmm_ops,
};

static symaddr_status_t check_size(symaddr_context_t *ctx, size_t bytes, const char *fn)
{
    if (bytes == 0 || bytes > SYMADDR_MAX_BYTES)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_SIZE,
                                 "%s: size %zu is %s; pass 1 to 2^48 bytes", fn, bytes,
                                 bytes ? "too large" : "zero");
    return SYMADDR_OK;
}

/* Reserve a registry slot and a registration up front, so that publishing after
 * the collective part cannot fail on memory. */
static symaddr_status_t new_registration(symaddr_context_t *ctx, symaddr_registration_t **r_p,
                                         const char *fn)
{
    if (symaddr_registry_reserve(&ctx->reg) != SYMADDR_OK ||
        !(*r_p = calloc(1, sizeof(**r_p))))
        return symaddr_set_error(ctx, SYMADDR_ERR_NO_MEMORY, "%s: out of host memory", fn);
    return SYMADDR_OK;
}

symaddr_status_t symaddr_provider_get(symaddr_context_t *ctx, symaddr_provider_kind_t kind,
                                      symaddr_provider_t **provider_p)
{
    if (!ctx || !provider_p)
        return SYMADDR_ERR_INVALID_ARG;
    if ((int)kind < 0 || kind >= SYMADDR_PROVIDER_COUNT_ || !provider_ops[kind])
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "symaddr_provider_get: provider %d cannot allocate; use "
                                 "SYMADDR_PROVIDER_HEAP, _IPC or _VMM "
                                 "(symaddr_import and symaddr_register_peer_table for others)",
                                 (int)kind);
    if (kind == SYMADDR_PROVIDER_HEAP && !ctx->has_heap)
        return symaddr_set_error(ctx, SYMADDR_ERR_UNSUPPORTED,
                                 "symaddr_provider_get: this context has no heap (heap_bytes "
                                 "is 0); set heap_bytes or SYMADDR_HEAP_SIZE");
    if (kind == SYMADDR_PROVIDER_VMM && !ctx->be.ops->vmm_alloc)
        return symaddr_set_error(ctx, SYMADDR_ERR_UNSUPPORTED,
                                 "symaddr_provider_get: the %s backend has no VMM memory%s; use "
                                 "SYMADDR_PROVIDER_IPC",
                                 ctx->be.ops->name,
                                 ctx->be.ops->kind == SYMADDR_BACKEND_HIP
                                     ? " in this build (it needs a ROCm with hipMemCreate)"
                                     : "");
    *provider_p = &ctx->providers[kind];
    return SYMADDR_OK;
}

symaddr_status_t symaddr_allocate_symmetric_(symaddr_provider_t *provider, size_t bytes,
                                             void **ptr_p, symaddr_map_t **map_p)
{
    static const char fn[] = "symaddr_allocate_symmetric";
    symaddr_registration_t *r = NULL;
    symaddr_context_t *ctx = provider->ctx;
    symaddr_status_t st = SYMADDR_OK;

    if (!ptr_p || !map_p)
        st = symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG, "%s: ptr_p and map_p must not be "
                               "NULL", fn);
    if (st == SYMADDR_OK)
        st = check_size(ctx, bytes, fn);
    if (st == SYMADDR_OK)
        st = new_registration(ctx, &r, fn);
    st = symaddr_agree(ctx, SYMADDR_OP_ALLOCATE, bytes, (uint64_t)provider->kind, st, fn);
    if (st == SYMADDR_OK) {
        r->serial = ctx->seq;
        st = provider_ops[provider->kind]->alloc(ctx, bytes, r);
    }
    if (st != SYMADDR_OK) {
        free(r);
        return st;
    }
    *ptr_p = (void *)(uintptr_t)r->map.range_base;
    *map_p = &r->map;
    return SYMADDR_OK;
}

symaddr_status_t symaddr_allocate_symmetric(symaddr_provider_t *provider, size_t bytes,
                                            void **ptr_p, symaddr_map_t **map_p)
{
    if (!provider)
        return SYMADDR_ERR_INVALID_ARG;
    GUARDED(provider->ctx, "symaddr_allocate_symmetric",
            symaddr_allocate_symmetric_(provider, bytes, ptr_p, map_p));
}

/* Local checks shared by free and unregister. */
static symaddr_status_t find_for_release(symaddr_context_t *ctx, const void *ptr,
                                         symaddr_registration_t **r_p, const char *fn)
{
    symaddr_status_t st = symaddr_registry_find(&ctx->reg, ptr, r_p);
    if (st == SYMADDR_ERR_DOUBLE_FREE)
        return symaddr_set_error(ctx, st, "%s: %p was already freed", fn, ptr);
    if (st != SYMADDR_OK)
        return symaddr_set_error(ctx, st, "%s: %p was not allocated or registered by this "
                                 "context", fn, ptr);
    if ((*r_p)->map.range_base != (uint64_t)(uintptr_t)ptr)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "%s: %p points inside an allocation; pass the pointer "
                                 "symaddr_allocate_symmetric returned",
                                 fn, ptr);
    return SYMADDR_OK;
}

symaddr_status_t symaddr_free_symmetric_(symaddr_provider_t *provider, void *ptr)
{
    static const char fn[] = "symaddr_free_symmetric";
    symaddr_registration_t *r = NULL;
    symaddr_context_t *ctx = provider->ctx;
    symaddr_status_t st;

    if (!ptr)
        st = symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG, "%s: ptr is NULL", fn);
    else
        st = find_for_release(ctx, ptr, &r, fn);
    if (st == SYMADDR_OK && r->map.provider != provider->kind)
        st = symaddr_set_error(ctx, SYMADDR_ERR_WRONG_PROVIDER,
                               "%s: %p belongs to another provider; free it with the provider "
                               "that allocated it (imports: symaddr_unregister)",
                               fn, ptr);
    if (st == SYMADDR_OK) /* ranks' kernels may still use the memory */
        st = ctx->be.ops->stream_sync(&ctx->be, NULL);
    st = symaddr_agree(ctx, SYMADDR_OP_FREE, st == SYMADDR_OK ? r->serial : 0,
                       (uint64_t)provider->kind, st, fn);
    if (st != SYMADDR_OK)
        return st;
    symaddr_registry_remove(&ctx->reg, r);
    provider_ops[provider->kind]->free(ctx, r);
    free(r);
    return SYMADDR_OK;
}

symaddr_status_t symaddr_free_symmetric(symaddr_provider_t *provider, void *ptr)
{
    if (!provider)
        return SYMADDR_ERR_INVALID_ARG;
    GUARDED(provider->ctx, "symaddr_free_symmetric", symaddr_free_symmetric_(provider, ptr));
}

static symaddr_status_t import_(symaddr_context_t *ctx, void *ptr, size_t bytes,
                                symaddr_map_t **map_p)
{
    static const char fn[] = "symaddr_import";
    symaddr_registration_t *r = NULL;
    symaddr_mapping_t *m = NULL;
    void *root = NULL;
    size_t root_bytes = 0;
    symaddr_status_t st = SYMADDR_OK;

    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    if (!ptr || !map_p)
        st = symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG, "%s: ptr and map_p must not be NULL",
                               fn);
    if (st == SYMADDR_OK)
        st = check_size(ctx, bytes, fn);
    if (st == SYMADDR_OK && ctx->be.ops->mem_range(&ctx->be, ptr, &root, &root_bytes))
        st = symaddr_set_error(ctx, SYMADDR_ERR_NOT_SHAREABLE,
                               "%s: %p is not in memory from the %s allocator; allocate it with "
                               "%s or symaddr_mem_alloc",
                               fn, ptr, ctx->be.ops->name,
                               ctx->be.ops->kind == SYMADDR_BACKEND_CPU ? "symaddr_mem_alloc"
                                                                        : "hipMalloc/cudaMalloc");
    if (st == SYMADDR_OK && (char *)ptr + bytes > (char *)root + root_bytes)
        st = symaddr_set_error(ctx, SYMADDR_ERR_NOT_SHAREABLE,
                               "%s: %zu bytes at %p run past the end of their allocation "
                               "(%zu bytes at %p)",
                               fn, bytes, ptr, root_bytes, root);
    if (st == SYMADDR_OK && symaddr_registry_overlaps(&ctx->reg, (uintptr_t)ptr, bytes))
        st = symaddr_set_error(ctx, SYMADDR_ERR_ALREADY_REGISTERED,
                               "%s: [%p, +%zu) overlaps a registered range; use symaddr_lookup "
                               "to find its map",
                               fn, ptr, bytes);
    if (st == SYMADDR_OK)
        st = new_registration(ctx, &r, fn);
    if (st == SYMADDR_OK && !(m = calloc(1, sizeof(*m))))
        st = symaddr_set_error(ctx, SYMADDR_ERR_NO_MEMORY, "%s: out of host memory", fn);
    st = symaddr_agree(ctx, SYMADDR_OP_IMPORT, bytes, 0, st, fn);
    if (st == SYMADDR_OK) {
        r->serial = ctx->seq;
        m->root = root;
        m->root_bytes = root_bytes;
        st = symaddr_mapping_open(ctx, m, (size_t)((char *)ptr - (char *)root));
    }
    if (st != SYMADDR_OK) {
        free(m);
        free(r);
        return st;
    }
    r->mapping = m;
    symaddr_registration_publish(ctx, r, SYMADDR_PROVIDER_IMPORT, ptr, bytes, ctx->be.ops->caps);
    *map_p = &r->map;
    return SYMADDR_OK;
}

symaddr_status_t symaddr_import(symaddr_context_t *ctx, void *ptr, size_t bytes,
                                symaddr_map_t **map_p)
{
    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    GUARDED(ctx, "symaddr_import", import_(ctx, ptr, bytes, map_p));
}

static symaddr_status_t register_peer_table_(symaddr_context_t *ctx, void *local_ptr,
                                             size_t bytes, const uint64_t *host_peer_addrs,
                                             uint64_t caps, symaddr_map_t **map_p)
{
    static const char fn[] = "symaddr_register_peer_table";
    symaddr_registration_t *r = NULL;
    symaddr_mapping_t *m = NULL;
    symaddr_status_t st = SYMADDR_OK;

    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    if (!local_ptr || !host_peer_addrs || !map_p)
        st = symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                               "%s: local_ptr, host_peer_addrs and map_p must not be NULL", fn);
    if (st == SYMADDR_OK)
        st = check_size(ctx, bytes, fn);
    if (st == SYMADDR_OK && host_peer_addrs[ctx->rank] != (uint64_t)(uintptr_t)local_ptr)
        st = symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                               "%s: host_peer_addrs[%d] is 0x%llx but must equal local_ptr %p",
                               fn, ctx->rank, (unsigned long long)host_peer_addrs[ctx->rank],
                               local_ptr);
    if (st == SYMADDR_OK && symaddr_registry_overlaps(&ctx->reg, (uintptr_t)local_ptr, bytes))
        st = symaddr_set_error(ctx, SYMADDR_ERR_ALREADY_REGISTERED,
                               "%s: [%p, +%zu) overlaps a registered range", fn, local_ptr,
                               bytes);
    if (st == SYMADDR_OK)
        st = new_registration(ctx, &r, fn);
    if (st == SYMADDR_OK && (!(m = calloc(1, sizeof(*m))) ||
                             !(m->host_table = calloc((size_t)ctx->size + 1, sizeof(uint64_t)))))
        st = symaddr_set_error(ctx, SYMADDR_ERR_NO_MEMORY, "%s: out of host memory", fn);
    if (st == SYMADDR_OK) {
        memcpy(m->host_table, host_peer_addrs, sizeof(uint64_t) * (size_t)ctx->size);
        m->root = local_ptr;
        m->root_bytes = bytes;
        st = symaddr_mapping_upload(ctx, m);
        if (st != SYMADDR_OK)
            symaddr_set_error(ctx, st, "%s: cannot place the peer table in device memory", fn);
    }
    st = symaddr_agree(ctx, SYMADDR_OP_REGISTER, bytes, 0, st, fn);
    if (st != SYMADDR_OK) {
        if (m)
            symaddr_mapping_release(ctx, m);
        free(m);
        free(r);
        return st;
    }
    r->serial = ctx->seq;
    r->mapping = m;
    symaddr_registration_publish(ctx, r, SYMADDR_PROVIDER_FOREIGN, local_ptr, bytes,
                                 caps & ~SYMADDR_CAP_OWNED);
    *map_p = &r->map;
    return SYMADDR_OK;
}

symaddr_status_t symaddr_register_peer_table(symaddr_context_t *ctx, void *local_ptr,
                                             size_t bytes, const uint64_t *host_peer_addrs,
                                             uint64_t caps, symaddr_map_t **map_p)
{
    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    GUARDED(ctx, "symaddr_register_peer_table",
            register_peer_table_(ctx, local_ptr, bytes, host_peer_addrs, caps, map_p));
}

static symaddr_status_t unregister_(symaddr_context_t *ctx, symaddr_map_t *map)
{
    static const char fn[] = "symaddr_unregister";
    symaddr_registration_t *r = NULL;
    symaddr_status_t st = SYMADDR_OK;

    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    if (!map || !(r = symaddr_registry_owner(&ctx->reg, map)))
        st = symaddr_set_error(ctx, SYMADDR_ERR_INVALID_MAP,
                               "%s: map %p is not live in this context (already unregistered, "
                               "or from another context)",
                               fn, (void *)map);
    else if (r->map.provider != SYMADDR_PROVIDER_IMPORT &&
             r->map.provider != SYMADDR_PROVIDER_FOREIGN)
        st = symaddr_set_error(ctx, SYMADDR_ERR_WRONG_PROVIDER,
                               "%s: this map is from symaddr_allocate_symmetric; release it "
                               "with symaddr_free_symmetric",
                               fn);
    if (st == SYMADDR_OK)
        st = ctx->be.ops->stream_sync(&ctx->be, NULL);
    st = symaddr_agree(ctx, SYMADDR_OP_UNREGISTER, st == SYMADDR_OK ? r->serial : 0, 0, st, fn);
    if (st != SYMADDR_OK)
        return st;
    symaddr_registry_remove(&ctx->reg, r);
    /* Only this process's mappings of peers go; the memory itself is the owner's. */
    symaddr_mapping_close_peers(ctx, r->mapping);
    symaddr_mapping_release(ctx, r->mapping);
    free(r->mapping);
    free(r);
    return SYMADDR_OK;
}

symaddr_status_t symaddr_unregister(symaddr_context_t *ctx, symaddr_map_t *map)
{
    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    GUARDED(ctx, "symaddr_unregister", unregister_(ctx, map));
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
    if (p < map->allocation_base || p - map->allocation_base >= map->allocation_bytes)
        return SYMADDR_ERR_OUT_OF_BOUNDS;
    if (map->host_peer_bases[target] == 0)
        return SYMADDR_ERR_UNREACHABLE;
    *remote_p = (void *)(uintptr_t)(map->host_peer_bases[target] + (p - me));
    return SYMADDR_OK;
}

uint64_t *symaddr_get_heap_bases(symaddr_context_t *ctx)
{
    return ctx && ctx->has_heap ? ctx->heap.mapping.dev_table : NULL;
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

symaddr_status_t symaddr_register_ptr_fn_(symaddr_context_t *ctx, void *local_ptr, size_t bytes,
                                          symaddr_peer_ptr_fn_t fn, const int *pe_of_rank,
                                          uint64_t caps, symaddr_map_t **map_p)
{
    uint64_t *table = calloc((size_t)ctx->size, sizeof(uint64_t));
    if (table && fn && local_ptr) {
        for (int r = 0; r < ctx->size; r++)
            table[r] = r == ctx->rank ? (uint64_t)(uintptr_t)local_ptr
                                      : (uint64_t)(uintptr_t)fn(local_ptr,
                                                               pe_of_rank ? pe_of_rank[r] : r);
    }
    /* A NULL table or fn makes register_peer_table fail on this rank, and so on every rank. */
    symaddr_status_t st = register_peer_table_(ctx, local_ptr, bytes, fn ? table : NULL, caps,
                                               map_p);
    free(table);
    if (!fn)
        symaddr_set_error(ctx, st, "symaddr_register_ptr_fn: fn is NULL; pass the library's "
                          "*_ptr(ptr, pe) function");
    return st;
}

symaddr_status_t symaddr_register_ptr_fn(symaddr_context_t *ctx, void *local_ptr, size_t bytes,
                                         symaddr_peer_ptr_fn_t fn, const int *pe_of_rank,
                                         uint64_t caps, symaddr_map_t **map_p)
{
    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    GUARDED(ctx, "symaddr_register_ptr_fn",
            symaddr_register_ptr_fn_(ctx, local_ptr, bytes, fn, pe_of_rank, caps, map_p));
}
