/* SPDX-License-Identifier: MIT */
/* Providers: every kind of memory symaddr hands out or records comes through one of these ops
 * tables, one file each under lib/providers/. A provider either allocates (alloc) or takes
 * what the caller brings (check, then reg); every one detaches from its peers and releases
 * its own. Verbs a provider lacks point to the shared stubs below, never to NULL. The core
 * (registration.c) runs the agreement around each verb and tears down in one place. */
#ifndef SYMADDR_LIB_PROVIDER_H
#define SYMADDR_LIB_PROVIDER_H

#include "maps/maps.h"

/* What symaddr_import and the foreign registrations bring. */
typedef struct symaddr_register_args {
    void *ptr;
    size_t bytes;
    const uint64_t *peer_addrs; /* foreign: where this process reaches each rank's copy */
    uint64_t caps;              /* foreign: SYMADDR_CAP_* the caller vouches for */
} symaddr_register_args_t;

typedef struct symaddr_provider_ops {
    size_t size; /* sizeof(symaddr_provider_ops_t): callers never read past it */
    const char *name;
    /* The SYMADDR_CAP_* its maps get from the memory it makes or takes (OWNED and FABRIC come
     * on top; a foreign registration's are the caller's). */
    uint64_t (*caps)(symaddr_context_t *ctx);
    /* Local: SYMADDR_OK when this context can use the provider, else why not. */
    symaddr_status_t (*usable)(symaddr_context_t *ctx, const char *fn);
    /* Collective, after the ranks agreed on the call: allocate bytes on every rank, fill
     * r->backing and publish r. Every rank returns the same status; on failure nothing stays
     * allocated. */
    symaddr_status_t (*alloc)(symaddr_context_t *ctx, size_t bytes, symaddr_registration_t *r);
    /* Local, before the agreement: whether the caller's memory or table can be registered. */
    symaddr_status_t (*check)(symaddr_context_t *ctx, const symaddr_register_args_t *a,
                              const char *fn);
    /* Collective, after the agreement: build r's backing from what the caller brought and
     * publish r. Every rank returns the same status. */
    symaddr_status_t (*reg)(symaddr_context_t *ctx, const symaddr_register_args_t *a,
                            symaddr_registration_t *r);
    /* After the ranks agreed to free r (every rank decides alike): keep its memory mapped for
     * a later allocation and return true (r->backing passes to the context), or return false
     * to detach and release it. */
    bool (*retain)(symaddr_context_t *ctx, symaddr_registration_t *r);
    /* Local: drop this process's mappings of peers' memory. */
    void (*detach)(symaddr_context_t *ctx, symaddr_registration_t *r);
    /* Local, once every node peer detached: free (what symaddr owns) or forget this rank's
     * memory, and the tables. */
    void (*release)(symaddr_context_t *ctx, symaddr_registration_t *r);
} symaddr_provider_ops_t;

/* The ops of a kind; never NULL for a kind of symaddr_provider_kind_t. */
const symaddr_provider_ops_t *symaddr_provider_ops(symaddr_provider_kind_t kind);

/* caps of memory from the backend's plain allocator (bulk), of users' ipc and vmm memory (bulk,
 * or coherent where the config asks: hip_finegrained), and of memory another library owns. */
uint64_t symaddr_provider_caps_bulk(symaddr_context_t *ctx);
uint64_t symaddr_provider_caps_user(symaddr_context_t *ctx);
uint64_t symaddr_provider_caps_vouched(symaddr_context_t *ctx);
/* The kind of memory symaddr_provider_caps_user describes. */
symaddr_mem_kind_t symaddr_provider_user_kind(const symaddr_context_t *ctx);

/* Stubs for the verbs a provider lacks. */
symaddr_status_t symaddr_provider_usable_always(symaddr_context_t *ctx, const char *fn);
symaddr_status_t symaddr_provider_alloc_unsupported(symaddr_context_t *ctx, size_t bytes,
                                                    symaddr_registration_t *r);
symaddr_status_t symaddr_provider_check_unsupported(symaddr_context_t *ctx,
                                                    const symaddr_register_args_t *a,
                                                    const char *fn);
symaddr_status_t symaddr_provider_reg_unsupported(symaddr_context_t *ctx,
                                                  const symaddr_register_args_t *a,
                                                  symaddr_registration_t *r);
void symaddr_provider_detach_nothing(symaddr_context_t *ctx, symaddr_registration_t *r);
bool symaddr_provider_retain_never(symaddr_context_t *ctx, symaddr_registration_t *r);
/* retain of the allocating providers with a mapping of their own (ipc, vmm). */
bool symaddr_provider_retain_backing(symaddr_context_t *ctx, symaddr_registration_t *r);
/* detach and release of a registration with a mapping of its own. */
void symaddr_provider_detach_peers(symaddr_context_t *ctx, symaddr_registration_t *r);
void symaddr_provider_release_backing(symaddr_context_t *ctx, symaddr_registration_t *r);

/* Detach every registration of regs (out of the registry already) from its peers, wait for
 * the node, release them all; the context's heap and sync area too when whole is set. */
symaddr_status_t symaddr_teardown(symaddr_context_t *ctx, symaddr_registration_t **regs, size_t n,
                                  bool whole);

extern const symaddr_provider_ops_t symaddr_provider_heap_ops;
extern const symaddr_provider_ops_t symaddr_provider_ipc_ops;
extern const symaddr_provider_ops_t symaddr_provider_vmm_ops;
extern const symaddr_provider_ops_t symaddr_provider_import_ops;
extern const symaddr_provider_ops_t symaddr_provider_foreign_ops;

#endif
