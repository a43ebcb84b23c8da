/* SPDX-License-Identifier: MIT */
/* The context's symmetric heap: one backend allocation per rank, exchanged once
 * at init, then sub-allocated first-fit. Every rank runs the same sequence of
 * collective reserve/release calls, so offsets agree without communication. */
#include "maps/maps.h"

#include <stdlib.h>
#include <string.h>

#define HEAP_ALIGN 256

symaddr_status_t symaddr_heap_init(symaddr_context_t *ctx)
{
    symaddr_heap_t *h = &ctx->heap;
    size_t bytes = 0;
    symaddr_status_t st = SYMADDR_OK;

    memset(h, 0, sizeof(*h));
    if (!symaddr_align_up(ctx->core.cfg.heap_bytes, HEAP_ALIGN, &bytes))
        st = symaddr_set_error(ctx, SYMADDR_ERR_INVALID_SIZE,
                               "symaddr_init: a symmetric heap of %zu bytes overflows; lower "
                               "heap_bytes or SYMADDR_HEAP_SIZE",
                               ctx->core.cfg.heap_bytes);
    else
        st = symaddr_backing_fits(ctx, ctx->core.cfg.heap_bytes, bytes,
                                  "symaddr_init: a symmetric heap",
                                  "lower heap_bytes or SYMADDR_HEAP_SIZE");
    h->bytes = bytes;
    h->cap = 16;
    h->free_list = malloc(sizeof(*h->free_list) * h->cap);
    if (st == SYMADDR_OK && !h->free_list)
        st = symaddr_set_error(ctx, SYMADDR_ERR_NO_MEMORY, "symaddr_init: out of host memory");
    if (st == SYMADDR_OK && (st = ctx->be.ops->mem_alloc(&ctx->be, bytes, SYMADDR_MEM_BULK,
                                                         &h->backing.root)) != SYMADDR_OK)
        symaddr_set_error(ctx, st,
                          "symaddr_init: cannot allocate a %zu-byte symmetric heap (%s); lower "
                          "heap_bytes or SYMADDR_HEAP_SIZE",
                          bytes, symaddr_runtime_says(ctx));
    st = symaddr_agree_status(&ctx->core, st, "symaddr_init (heap)");
    if (st == SYMADDR_OK) {
        h->backing.root_bytes = bytes;
        h->backing.owned = true;
        h->backing.caps = ctx->be.ops->caps[SYMADDR_MEM_BULK];
        st = symaddr_backing_open(ctx, &h->backing, 0);
    }
    if (st != SYMADDR_OK) {
        if (h->backing.root)
            ctx->be.ops->mem_free(&ctx->be, h->backing.root);
        free(h->free_list);
        memset(h, 0, sizeof(*h));
        return st;
    }
    h->free_list[0].off = 0;
    h->free_list[0].len = bytes;
    h->nfree = 1;
    ctx->has_heap = true;
    return SYMADDR_OK;
}

void symaddr_heap_fini(symaddr_context_t *ctx)
{
    symaddr_backing_release(ctx, &ctx->heap.backing);
    free(ctx->heap.free_list);
    memset(&ctx->heap, 0, sizeof(ctx->heap));
    ctx->has_heap = false;
}

symaddr_status_t symaddr_heap_reserve(symaddr_heap_t *h, size_t bytes, size_t *off_p)
{
    size_t len;
    if (!symaddr_align_up(bytes, HEAP_ALIGN, &len))
        return SYMADDR_ERR_INVALID_SIZE;
    for (size_t i = 0; i < h->nfree; i++) {
        struct heap_block *b = &h->free_list[i];
        if (b->len < len)
            continue;
        *off_p = b->off;
        b->off += len;
        b->len -= len;
        if (b->len == 0) {
            memmove(b, b + 1, (h->nfree - i - 1) * sizeof(*b));
            h->nfree--;
        }
        return SYMADDR_OK;
    }
    return SYMADDR_ERR_NO_MEMORY;
}

/* The free list stays sorted by offset and coalesced. Growing it can fail only
 * when the heap is fragmented into thousands of holes; the block is then lost
 * to the heap (on every rank alike) rather than corrupting it. */
void symaddr_heap_release(symaddr_heap_t *h, size_t off, size_t bytes)
{
    size_t len = (bytes + HEAP_ALIGN - 1) / HEAP_ALIGN * HEAP_ALIGN, i = 0; /* reserved once */
    while (i < h->nfree && h->free_list[i].off < off)
        i++;
    bool merge_prev = i > 0 && h->free_list[i - 1].off + h->free_list[i - 1].len == off;
    bool merge_next = i < h->nfree && off + len == h->free_list[i].off;
    if (merge_prev && merge_next) {
        h->free_list[i - 1].len += len + h->free_list[i].len;
        memmove(&h->free_list[i], &h->free_list[i + 1], (h->nfree - i - 1) * sizeof(*h->free_list));
        h->nfree--;
    } else if (merge_prev) {
        h->free_list[i - 1].len += len;
    } else if (merge_next) {
        h->free_list[i].off = off;
        h->free_list[i].len += len;
    } else {
        if (h->nfree == h->cap) {
            struct heap_block *nb = realloc(h->free_list, sizeof(*nb) * h->cap * 2);
            if (!nb)
                return;
            h->free_list = nb;
            h->cap *= 2;
        }
        memmove(&h->free_list[i + 1], &h->free_list[i], (h->nfree - i) * sizeof(*h->free_list));
        h->free_list[i].off = off;
        h->free_list[i].len = len;
        h->nfree++;
    }
}
