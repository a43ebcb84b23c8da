/* SPDX-License-Identifier: MIT */
/* The maps layer: how memory is backed and mapped (backings, peer roots, the symmetric heap,
 * the collectives' sync area, plain allocations, locality), and the context that holds them.
 * Providers, the lifecycle and the entry points build on it; it includes nothing above it. */
#ifndef SYMADDR_LIB_MAPS_H
#define SYMADDR_LIB_MAPS_H

#include <stdbool.h>

#include "symaddr/symaddr.h"
#include "backends/backend.h"
#include "core/core.h"
#include "maps/registry.h"

/* A peer's root as opened in this process. Cached by (rank, owner's address),
 * so a root is opened once however many registrations use it. */
typedef struct symaddr_peer_root {
    int rank;
    uint64_t owner_base; /* the root's address in its owner */
    void *ptr;           /* where it is mapped here */
    size_t bytes;
    int refs;
    struct symaddr_peer_root *next;
} symaddr_peer_root_t;

/* The memory behind one or more registrations: the local root and the peers'. */
typedef struct symaddr_backing {
    void *root;
    size_t root_bytes;
    bool owned;                  /* symaddr allocated root and frees it */
    bool vmm;                    /* root came from vmm_alloc */
    bool fabric;                 /* exported as a fabric handle */
    symaddr_peer_root_t **peers; /* world_size entries; NULL for self and other nodes */
    uint64_t *dev_table;         /* peer_bases, then the validation error flag */
    uint64_t *host_table;
    uint64_t caps; /* SYMADDR_CAP_* of the memory itself (before OWNED, FABRIC) */
    /* Where this rank's registered pointer lies in root (an import's view; 0 for allocations):
     * open_peers shifts every peer's entry by it, so that views map to views, and a byte's
     * offset from a rank's own entry is its offset from the registered pointer plus this rank's
     * own shift. What ranks compare or publish is the offset from the registered pointer. */
    size_t offset;
    size_t asked;                  /* the allocation's size as its caller asked (retention) */
    struct symaddr_backing *older; /* next in the context's retained list */
} symaddr_backing_t;

/* The handle symaddr_provider_get returns; what a kind does is in providers/. */
struct symaddr_provider {
    symaddr_context_t *ctx;
    symaddr_provider_kind_t kind;
};

/* Sub-allocator of the symmetric heap: deterministic, so every rank computes
 * the same offsets from the same sequence of collective calls. */
typedef struct symaddr_heap {
    symaddr_backing_t backing; /* its table is the legacy heap_bases */
    size_t bytes;
    struct heap_block {
        size_t off, len;
    } * free_list;
    size_t nfree, cap;
} symaddr_heap_t;

/* Collective state: a symmetric sync area (epoch, status, flags, staging, LL inboxes and,
 * across nodes, the reduce-scatter scratch) and the node's ranks. */
typedef struct symaddr_coll {
    symaddr_backing_t sync;
    /* the sync area of the caller's team kernels (symaddr_team_get sets it up), laid out as
     * sync but for the scratch: what they leave behind never reaches the host collectives */
    symaddr_backing_t team;
    int *node_ranks;     /* device copy of boot.node_to_rank */
    size_t args_offset;  /* of the rooted collectives' published arguments (a row per block) */
    size_t ident_offset; /* of every collective's identity words (coll_ident_send) */
    size_t stage_offset; /* of the one-shot staging slots in the sync area */
    size_t ll_offset;
    size_t lamport_offset, lamport_slot;  /* three buffers of node_size slots */
    size_t scratch_offset, scratch_bytes; /* 0 bytes on one node */
    unsigned max_blocks;       /* grid bound: what the GPU holds resident for every rank on it */
    size_t twoshot_get_bytes;  /* auto's two-shot goes by loads only from here */
    size_t twoshot_copy_bytes; /* and gathers by the copy engine from here */
    unsigned lamport_threads;  /* a Lamport block's threads, where the chunks allow */
    bool ready;
    int logged[SYMADDR_COLL_KIND_COUNT_]; /* per collective, the kind last logged (+1) */
} symaddr_coll_t;

/* One context: the core the floor works on, then what the layers from backends up add. */
struct symaddr_context {
    symaddr_core_t core; /* ranks, bootstrap, settings, error, call counter, health */
    symaddr_backend_t be;
    symaddr_registry_t reg;
    symaddr_provider_t providers[SYMADDR_PROVIDER_COUNT_];
    symaddr_heap_t heap;
    bool has_heap;
    symaddr_peer_root_t *peer_roots; /* cache of opened peer roots */
    symaddr_backing_t *retained;     /* freed ipc/vmm backings still mapped, newest first */
    size_t retain_count; /* most backings retained: each holds descriptors (the same on every
                            rank: the least any rank's descriptor limit allows) */
    symaddr_coll_t coll;
    symaddr_locality_t loc;
    int gpu_sharers;           /* ranks of the context on this rank's GPU, across node groups too */
    bool node_gpu_shared;      /* two ranks of this node group run on one GPU (same on each) */
    struct plain_alloc *plain; /* symaddr_mem_alloc's allocations, which only this context frees */
    char *debug_file;          /* the context's copy of cfg.debug_file */
    size_t rma_copy_bytes;     /* put and get to another GPU go by the copy engine from here */
};

/* Whether the context spans more than one node group. */
static inline bool symaddr_multi_node(const symaddr_context_t *ctx)
{
    return ctx->core.boot.node_size < ctx->core.size;
}

/* The runtime's words for the backend's last refusal in this call, for a message. */
static inline const char *symaddr_runtime_says(const symaddr_context_t *ctx)
{
    return ctx->be.why[0] ? ctx->be.why : "no detail from the runtime";
}

/* Record the error text on ctx and return status. */
#define symaddr_set_error(ctx, status, ...)                                                        \
    symaddr_error_set(&(ctx)->core.err, (status), __VA_ARGS__)

/* Collective: export m->root, exchange {handle, root, offset} over the node,
 * open (or reuse) every peer's root and build the tables. offset is the
 * registered range's offset in the root; peers' tables are shifted so that
 * translation lands on the same offset of their range. Every rank returns the
 * same status; on failure nothing stays open and m->root is left to the caller. */
symaddr_status_t symaddr_backing_open(symaddr_context_t *ctx, symaddr_backing_t *m, size_t offset);
/* Drop the references to peers' roots (closing the last ones). */
void symaddr_backing_close_peers(symaddr_context_t *ctx, symaddr_backing_t *m);
/* Free the tables and, if owned, the root. */
void symaddr_backing_release(symaddr_context_t *ctx, symaddr_backing_t *m);

/* Retention (cfg.retain_bytes): a freed ipc or vmm backing stays mapped for a later allocation
 * of the same size. Every rank's list changes in the same collective calls in the same order,
 * so the ranks hold the same backings and take back the same one, without communicating.
 * retain: keep m (owned, fits the budgets of bytes and of backings (retain_count) once older
 * ones are let go; those are released collectively); false leaves m to the caller. take: the
 * newest of asked bytes, or NULL.
 * flush: release the oldest until at most keep bytes stay (collective: a node barrier
 * between dropping peers' roots and freeing this rank's). */
bool symaddr_backing_retain(symaddr_context_t *ctx, symaddr_backing_t *m);
/* Whether a retained backing of asked bytes (vmm or not) is there to take back. */
bool symaddr_backing_retained(symaddr_context_t *ctx, size_t asked, bool vmm);
symaddr_backing_t *symaddr_backing_take(symaddr_context_t *ctx, size_t asked, bool vmm);
symaddr_status_t symaddr_retained_flush(symaddr_context_t *ctx, size_t keep);
/* flush, keeping also at most keep_count backings */
symaddr_status_t symaddr_retained_flush_to(symaddr_context_t *ctx, size_t keep, size_t keep_count);
/* Finalize's halves of a flush, around its own node barrier. */
void symaddr_retained_close_peers(symaddr_context_t *ctx);
void symaddr_retained_release(symaddr_context_t *ctx);

/* SYMADDR_ERR_INVALID_SIZE, with a message naming what and fix, where bytes a rank (asked by
 * the caller, bytes once rounded) times the ranks sharing the memory (a host's for host
 * memory) is more than the host or device holds; the same verdict on every rank of a host. */
symaddr_status_t symaddr_backing_fits(symaddr_context_t *ctx, size_t asked, size_t bytes,
                                      const char *what, const char *fix);

/* Tables for a backing whose host_table is filled in: device copy and error flag. */
symaddr_status_t symaddr_backing_upload(symaddr_context_t *ctx, symaddr_backing_t *m);
/* Tables of their own for bytes at off of m (a heap sub-allocation): m's entries shifted by off
 * (translation unchanged), the header bounding validation to the sub-allocation. */
symaddr_status_t symaddr_backing_sub_table(symaddr_context_t *ctx, const symaddr_backing_t *m,
                                           size_t off, size_t bytes, uint64_t **dev_p,
                                           uint64_t **host_p);
void symaddr_backing_sub_table_free(symaddr_context_t *ctx, uint64_t *dev, uint64_t *host);

/* Fill r->map from its backing (capabilities: the backing's), or from r's own table and range
 * where it has one, and register it; frees nothing on failure. */
symaddr_status_t symaddr_registration_publish(symaddr_context_t *ctx, symaddr_registration_t *r,
                                              symaddr_provider_kind_t kind, void *range_base,
                                              size_t range_bytes);

/* symaddr_mem_alloc's allocations of this context (plain.c): record one, take one back (NULL
 * when ptr is not one, or while a registration overlaps it: *overlap_p), free what is left. */
symaddr_status_t symaddr_plain_add(symaddr_context_t *ctx, void *ptr, size_t bytes);
void *symaddr_plain_take(symaddr_context_t *ctx, void *ptr, bool *overlap_p);
void symaddr_plain_fini(symaddr_context_t *ctx);

symaddr_status_t symaddr_locality_init(symaddr_context_t *ctx);
void symaddr_locality_fini(symaddr_context_t *ctx);

symaddr_status_t symaddr_coll_init(symaddr_context_t *ctx);
void symaddr_coll_close_peers(symaddr_context_t *ctx);
void symaddr_coll_fini(symaddr_context_t *ctx);
/* The collective failure recorded on the device, if any: it breaks the context, and stays. */
symaddr_status_t symaddr_coll_status(symaddr_context_t *ctx);
/* Collective: the team area, on the first call; SYMADDR_OK once it is there. */
symaddr_status_t symaddr_coll_team_open(symaddr_context_t *ctx);
/* Test seam (collective, idle context): the next collective runs as number next, as if every
 * earlier one had completed. */
symaddr_status_t symaddr_coll_set_epoch(symaddr_context_t *ctx, uint64_t next);

symaddr_status_t symaddr_heap_init(symaddr_context_t *ctx);
void symaddr_heap_fini(symaddr_context_t *ctx);
symaddr_status_t symaddr_heap_reserve(symaddr_heap_t *heap, size_t bytes, size_t *off_p);
void symaddr_heap_release(symaddr_heap_t *heap, size_t off, size_t bytes);

#endif
