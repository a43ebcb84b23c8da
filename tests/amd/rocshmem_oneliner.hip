/* SPDX-License-Identifier: MIT */
/* The README's rocSHMEM one-liner, compiled against rocSHMEM's own header (-Drocshmem_include):
 * its host rocshmem_ptr takes a pointer that is const in some releases and not in others, and
 * symaddr_register_ptr_fn takes both. */
#include <rocshmem/rocshmem.hpp>
#include <symaddr/symaddr.h>

using rocshmem::rocshmem_ptr;

symaddr_status_t register_rocshmem(symaddr_context_t *ctx, void *buf, size_t bytes,
                                   symaddr_map_t **map_p)
{
    return symaddr_register_ptr_fn(ctx, buf, bytes, rocshmem_ptr, NULL, SYMADDR_CAP_LOAD_STORE,
                                   map_p);
}
