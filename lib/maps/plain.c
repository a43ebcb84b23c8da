/* SPDX-License-Identifier: MIT */
/* symaddr_mem_alloc's allocations, which only the context that made them frees, on every
 * backend (a GPU runtime would free any device pointer). */
#include "maps/maps.h"

#include <stdlib.h>

struct plain_alloc {
    void *ptr;
    size_t bytes;
    struct plain_alloc *next;
};

symaddr_status_t symaddr_plain_add(symaddr_context_t *ctx, void *ptr, size_t bytes)
{
    struct plain_alloc *a = malloc(sizeof(*a));
    if (!a)
        return SYMADDR_ERR_NO_MEMORY;
    a->ptr = ptr;
    a->bytes = bytes;
    pthread_mutex_lock(&ctx->core.err.lock);
    a->next = ctx->plain;
    ctx->plain = a;
    pthread_mutex_unlock(&ctx->core.err.lock);
    return SYMADDR_OK;
}

void *symaddr_plain_take(symaddr_context_t *ctx, void *ptr, bool *overlap_p)
{
    struct plain_alloc *a = NULL;
    pthread_mutex_lock(&ctx->core.err.lock);
    struct plain_alloc **pa = &ctx->plain;
    while (*pa && (*pa)->ptr != ptr)
        pa = &(*pa)->next;
    a = *pa;
    *overlap_p = a && symaddr_registry_overlaps(&ctx->reg, (uintptr_t)ptr, a->bytes);
    if (a && !*overlap_p)
        *pa = a->next;
    pthread_mutex_unlock(&ctx->core.err.lock);
    if (!a || *overlap_p)
        return NULL;
    free(a);
    return ptr;
}

void symaddr_plain_fini(symaddr_context_t *ctx)
{
    while (ctx->plain) {
        struct plain_alloc *a = ctx->plain;
        ctx->plain = a->next;
        ctx->be.ops->mem_free(&ctx->be, a->ptr);
        free(a);
    }
}
