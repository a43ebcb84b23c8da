/* SPDX-License-Identifier: MIT */
/* Provider ops: how symaddr_allocate_symmetric gets memory and how it gives it back. */
#ifndef SYMADDR_LIB_PROVIDER_H
#define SYMADDR_LIB_PROVIDER_H

#include "../internal.h"

typedef struct symaddr_provider_ops {
    size_t size;
    const char *name;
    /* Collective; fills r->mapping, r->heap_off and publishes r. Every rank
     * returns the same status; on failure nothing is left allocated. */
    symaddr_status_t (*alloc)(symaddr_context_t *ctx, size_t bytes, symaddr_registration_t *r);
    /* Collective, after the ranks agreed; r is already out of the registry. */
    void (*free)(symaddr_context_t *ctx, symaddr_registration_t *r);
} symaddr_provider_ops_t;

extern const symaddr_provider_ops_t symaddr_provider_heap_ops;
extern const symaddr_provider_ops_t symaddr_provider_ipc_ops;
extern const symaddr_provider_ops_t symaddr_provider_vmm_ops;

#endif
