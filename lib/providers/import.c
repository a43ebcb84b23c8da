/* SPDX-License-Identifier: MIT */
/* import provider: a buffer someone else allocated with the backend's plain allocator (any
 * view of it). Its allocation root is exported and opened by every peer, once per root. */
#include "provider.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static symaddr_status_t import_check(symaddr_context_t *ctx, const symaddr_register_args_t *a,
                                     const char *fn)
{
    void *root = NULL;
    size_t root_bytes = 0;
    const char *alloc = ctx->be.ops->allocator;
    if (ctx->be.ops->mem_range(&ctx->be, a->ptr, &root, &root_bytes) != SYMADDR_OK)
        return symaddr_set_error(ctx, SYMADDR_ERR_NOT_SHAREABLE,
                                 "%s: %p is not in memory from the %s allocator; allocate it "
                                 "with %s%s",
                                 fn, a->ptr, ctx->be.ops->name, alloc,
                                 strcmp(alloc, "symaddr_mem_alloc") == 0 ? ""
                                                                         : " or symaddr_mem_alloc");
    /* Memory symaddr owns but nobody registered now: a freed allocation kept for reuse, or a
     * free range of the heap. An import of it would be taken back from under its importer. */
    bool owned = ctx->has_heap && root == ctx->heap.backing.root;
    for (const symaddr_backing_t *m = ctx->retained; m && !owned; m = m->older)
        owned = m->root == root;
    if (owned)
        return symaddr_set_error(ctx, SYMADDR_ERR_ALREADY_REGISTERED,
                                 "%s: %p is memory symaddr owns (%s); allocate symmetric "
                                 "memory with symaddr_symmetric_alloc instead of importing it",
                                 fn, a->ptr,
                                 root == ctx->heap.backing.root
                                     ? "its symmetric heap"
                                     : "a freed allocation it keeps mapped for reuse");
    if ((char *)a->ptr + a->bytes > (char *)root + root_bytes)
        return symaddr_set_error(ctx, SYMADDR_ERR_NOT_SHAREABLE,
                                 "%s: %zu bytes at %p run past the end of their allocation (%zu "
                                 "bytes at %p)",
                                 fn, a->bytes, a->ptr, root_bytes, root);
    return SYMADDR_OK;
}

static symaddr_status_t import_reg(symaddr_context_t *ctx, const symaddr_register_args_t *a,
                                   symaddr_registration_t *r)
{
    symaddr_backing_t *m = calloc(1, sizeof(*m));
    void *root = NULL;
    size_t root_bytes = 0;
    symaddr_status_t st =
        m ? ctx->be.ops->mem_range(&ctx->be, a->ptr, &root, &root_bytes) : SYMADDR_ERR_NO_MEMORY;
    if (st != SYMADDR_OK)
        symaddr_set_error(ctx, st, "symaddr_import: out of host memory");
    st = symaddr_agree_status(&ctx->core, st, "symaddr_import");
    if (st == SYMADDR_OK) {
        m->root = root;
        m->root_bytes = root_bytes;
        m->caps = symaddr_provider_caps_bulk(ctx);
        st = symaddr_backing_open(ctx, m, (size_t)((char *)a->ptr - (char *)root));
    }
    if (st != SYMADDR_OK) {
        free(m);
        return st;
    }
    r->backing = m;
    return symaddr_registration_publish(ctx, r, SYMADDR_PROVIDER_IMPORT, a->ptr, a->bytes);
}

/* The root is the owner's: only the tables go. */
const symaddr_provider_ops_t symaddr_provider_import_ops = {
    .size = sizeof(symaddr_provider_ops_t),
    .name = "import",
    .caps = symaddr_provider_caps_bulk,
    .usable = symaddr_provider_usable_always,
    .alloc = symaddr_provider_alloc_unsupported,
    .check = import_check,
    .reg = import_reg,
    .retain = symaddr_provider_retain_never,
    .detach = symaddr_provider_detach_peers,
    .release = symaddr_provider_release_backing,
};
