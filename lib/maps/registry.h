/* SPDX-License-Identifier: MIT */
/* Registry of live registrations. Lookups take no lock: each change publishes a new immutable
 * snapshot, sorted by range (in chunks that unchanged parts share), and retires the old one.
 * Each lookup thread shows in a slot of its own the snapshot it reads; a retired snapshot is
 * freed once no slot shows it, and a replaced chunk once no snapshot a slot shows holds it, so
 * that a lookup preempted inside its read holds one snapshot, not every one since. Writers take
 * a mutex and never wait for lookups, so lookups never hold up allocate and free. */
#ifndef SYMADDR_LIB_REGISTRY_H
#define SYMADDR_LIB_REGISTRY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symaddr/symaddr.h"

struct symaddr_backing;

typedef struct symaddr_registration {
    symaddr_map_t map;               /* handed to the user; first member */
    struct symaddr_backing *backing; /* the heap's for heap memory, else its own */
    size_t heap_off;                 /* heap sub-allocations only */
    uint64_t *own_table;             /* a heap sub-allocation's table of its own (its bounds for
                                        validation, the heap's entries shifted to it) */
    uint64_t *own_host_table;
    uint64_t serial; /* number of the collective call that made it */
    bool allocated;  /* by its provider's alloc, not brought by the caller */
} symaddr_registration_t;

/* Freed bases remembered to name a double free, until their address is registered again. */
#define SYMADDR_FREED_MEMORY ((size_t)1 << 20)
#define SYMADDR_REGISTRY_SLOTS 256 /* threads that look up at once without a lock */

typedef struct symaddr_registry_snapshot symaddr_registry_snapshot_t;

typedef struct symaddr_registry {
    /* What every lookup reads, on a cache line of its own whatever the context's alignment:
     * the writers' fields below change several times a change, and beside cur each of those
     * stores took the line from the lookups, and their next reads took it back. */
    char pad_before_[64];
    symaddr_registry_snapshot_t *cur; /* read with atomics */
    /* SYMADDR_REGISTRY_SLOTS slots, a cache line each (allocated aligned: a registry sits
     * inside a context that is not), so that readers never write to a line another reads. */
    struct symaddr_registry_reader {
        const symaddr_registry_snapshot_t *held; /* what its thread reads; NULL when idle */
    } __attribute__((aligned(64))) * readers;
    char pad_after_[64 - 2 * sizeof(void *)];
    symaddr_registry_snapshot_t *retired; /* replaced, maybe still read */
    symaddr_registry_snapshot_t *spare;   /* a free one, filled by the next change */
    struct reg_chunk *pool;               /* free chunks for the next changes */
    struct reg_chunk *garbage;            /* replaced chunks a held snapshot may still hold */
    size_t npool;
    size_t nretired;       /* snapshots on the retired list */
    size_t reclaim_at;     /* nretired at which the next change reclaims */
    uint64_t reclaims;     /* reclaims by changes so far (each a membarrier): for the tests */
    size_t ngarbage;       /* chunks on garbage */
    uint64_t seq;          /* the current snapshot's number: changes so far */
    pthread_mutex_t write; /* writers: insert, remove, the freed set */
    uint64_t *freed;       /* sorted */
    size_t nfreed, capfreed;
} symaddr_registry_t;

int symaddr_registry_init(symaddr_registry_t *reg);
void symaddr_registry_fini(symaddr_registry_t *reg);

/* SYMADDR_ERR_ALREADY_REGISTERED when [base, base+bytes) overlaps a live range;
 * SYMADDR_ERR_NO_MEMORY when the new snapshot cannot be made. */
symaddr_status_t symaddr_registry_insert(symaddr_registry_t *reg, symaddr_registration_t *r);
/* Room for one more registration, taken before a collective call so that inserting after it
 * cannot run out of memory. */
symaddr_status_t symaddr_registry_reserve(symaddr_registry_t *reg);
/* Whether [base, base+bytes) overlaps a live range. */
bool symaddr_registry_overlaps(symaddr_registry_t *reg, uint64_t base, uint64_t bytes);
/* Removes r and remembers its base as freed. Without memory for the new snapshot it waits for
 * the lookups in flight to leave a retired one, so it does not fail for a live r. */
symaddr_status_t symaddr_registry_remove(symaddr_registry_t *reg, symaddr_registration_t *r);

/* The registration holding ptr; NOT_FOUND, or DOUBLE_FREE when ptr is the base of a range
 * removed earlier and not registered since. */
symaddr_status_t symaddr_registry_find(symaddr_registry_t *reg, const void *ptr,
                                       symaddr_registration_t **r_p);
/* The same, without the freed set: for lookups from any thread. */
symaddr_status_t symaddr_registry_lookup(symaddr_registry_t *reg, const void *ptr,
                                         symaddr_registration_t **r_p);
/* Whether map is a live registration's map; never dereferences map. */
symaddr_registration_t *symaddr_registry_owner(symaddr_registry_t *reg, const symaddr_map_t *map);

/* The registration holding ptr in snapshot s, which the caller holds (for the tests). */
symaddr_registration_t *symaddr_registry_find_in_(const symaddr_registry_snapshot_t *s,
                                                  const void *ptr);
/* How many registrations are live. */
size_t symaddr_registry_count(symaddr_registry_t *reg);
/* Any registration (for teardown); NULL when empty. */
symaddr_registration_t *symaddr_registry_last(symaddr_registry_t *reg);

#endif
