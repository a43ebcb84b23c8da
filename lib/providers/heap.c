/* SPDX-License-Identifier: MIT */
/* heap provider: sub-allocations of the context's symmetric heap (lib/symheap.c). Each has a
 * table of its own (the heap's entries shifted to it, bounded to it for validation); the
 * context-wide heap_bases covers them all. The heap's mappings live as long as the context. */
#include "provider.h"

static symaddr_status_t heap_usable(symaddr_context_t *ctx, const char *fn)
{
    if (ctx->has_heap)
        return SYMADDR_OK;
    return symaddr_set_error(ctx, SYMADDR_ERR_UNSUPPORTED,
                             "%s: this context has no heap (heap_bytes is 0); set heap_bytes or "
                             "SYMADDR_HEAP_SIZE",
                             fn);
}

static void heap_tables_free(symaddr_context_t *ctx, symaddr_registration_t *r)
{
    symaddr_backing_sub_table_free(ctx, r->own_table, r->own_host_table);
    r->own_table = r->own_host_table = NULL;
}

static symaddr_status_t heap_alloc(symaddr_context_t *ctx, size_t bytes, symaddr_registration_t *r)
{
    symaddr_heap_t *h = &ctx->heap;
    symaddr_status_t local = symaddr_heap_reserve(h, bytes, &r->heap_off), st = local;
    if (st != SYMADDR_OK)
        symaddr_set_error(ctx, st,
                          "symaddr_symmetric_alloc: the %zu-byte heap has no room for %zu "
                          "bytes; raise heap_bytes (SYMADDR_HEAP_SIZE) or use the ipc provider",
                          h->bytes, bytes);
    /* A table of its own, which bounds validation to this allocation (the heap's would let an
     * overrun into the next allocation pass) and translates as the heap's does. */
    else if ((st = symaddr_backing_sub_table(ctx, &h->backing, r->heap_off, bytes, &r->own_table,
                                             &r->own_host_table)) != SYMADDR_OK)
        symaddr_set_error(ctx, st,
                          "symaddr_symmetric_alloc: no memory for the table of %zu heap "
                          "bytes",
                          bytes);
    /* Same inputs on every rank give the same outcome; agree anyway in case a rank's
     * heap state diverged. */
    symaddr_status_t mine = st;
    st = symaddr_agree_status(&ctx->core, st, "symaddr_symmetric_alloc");
    if (st != SYMADDR_OK) {
        if (local == SYMADDR_OK)
            symaddr_heap_release(h, r->heap_off, bytes);
        if (mine == SYMADDR_OK)
            heap_tables_free(ctx, r);
        return st;
    }
    r->backing = &h->backing;
    return symaddr_registration_publish(ctx, r, SYMADDR_PROVIDER_HEAP,
                                        (char *)h->backing.root + r->heap_off, bytes);
}

static void heap_release(symaddr_context_t *ctx, symaddr_registration_t *r)
{
    symaddr_heap_release(&ctx->heap, r->heap_off, r->map.range_bytes);
    heap_tables_free(ctx, r);
}

const symaddr_provider_ops_t symaddr_provider_heap_ops = {
    .size = sizeof(symaddr_provider_ops_t),
    .name = "heap",
    .caps = symaddr_provider_caps_bulk,
    .usable = heap_usable,
    .alloc = heap_alloc,
    .check = symaddr_provider_check_unsupported,
    .reg = symaddr_provider_reg_unsupported,
    .retain = symaddr_provider_retain_never,
    .detach = symaddr_provider_detach_nothing,
    .release = heap_release,
};
