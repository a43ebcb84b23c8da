/* SPDX-License-Identifier: MIT */
/* The public names of 0.1.0, kept for one release so that programs built against it still
 * link; each is the call that replaced it. */
#include "lifecycle/context.h"

symaddr_status_t symaddr_allocate_symmetric(symaddr_provider_t *provider, size_t bytes,
                                            void **ptr_p, symaddr_map_t **map_p)
{
    return symaddr_symmetric_alloc(provider, bytes, ptr_p, map_p);
}

symaddr_status_t symaddr_free_symmetric(symaddr_provider_t *provider, void *ptr)
{
    return symaddr_symmetric_free(provider, ptr);
}

uint64_t *symaddr_get_heap_bases(symaddr_context_t *ctx) { return symaddr_heap_bases_get(ctx); }
