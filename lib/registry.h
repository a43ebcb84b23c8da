/* SPDX-License-Identifier: MIT */
/* Registry of live registrations, sorted by range for O(log n) lookup of any
 * interior pointer. Readers take a shared lock, so lookups run concurrently. */
#ifndef SYMADDR_LIB_REGISTRY_H
#define SYMADDR_LIB_REGISTRY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symaddr/symaddr.h"

struct symaddr_mapping;

typedef struct symaddr_registration {
    symaddr_map_t map;              /* handed to the user; first member */
    struct symaddr_mapping *mapping; /* the heap's for heap memory, else its own */
    size_t heap_off;                 /* heap sub-allocations only */
    uint64_t serial;                 /* number of the collective call that made it */
} symaddr_registration_t;

#define SYMADDR_FREED_MEMORY 64 /* recently freed bases remembered to name double frees */

typedef struct symaddr_registry {
    pthread_rwlock_t lock;
    symaddr_registration_t **by_addr; /* sorted by map.range_base */
    uint64_t *bases;                  /* by_addr[i]->map.range_base, searched without chasing
                                         pointers */
    symaddr_registration_t **by_map;  /* sorted by address of the registration */
    size_t count, cap;
    uint64_t freed[SYMADDR_FREED_MEMORY];
    size_t freed_next;
} symaddr_registry_t;

int symaddr_registry_init(symaddr_registry_t *reg);
void symaddr_registry_fini(symaddr_registry_t *reg);

/* SYMADDR_ERR_ALREADY_REGISTERED when [base, base+bytes) overlaps a live range. */
symaddr_status_t symaddr_registry_insert(symaddr_registry_t *reg, symaddr_registration_t *r);
/* Make room for n more registrations, so that a later insert cannot run out of memory. */
symaddr_status_t symaddr_registry_reserve(symaddr_registry_t *reg, size_t n);
/* Whether [base, base+bytes) overlaps a live range. */
bool symaddr_registry_overlaps(symaddr_registry_t *reg, uint64_t base, uint64_t bytes);
/* Removes r and remembers its base as freed. */
symaddr_status_t symaddr_registry_remove(symaddr_registry_t *reg, symaddr_registration_t *r);

/* NOT_FOUND, or DOUBLE_FREE when ptr is the base of a recently removed range. */
symaddr_status_t symaddr_registry_find(symaddr_registry_t *reg, const void *ptr,
                                       symaddr_registration_t **r_p);
/* Whether map is a live registration's map; never dereferences map. */
symaddr_registration_t *symaddr_registry_owner(symaddr_registry_t *reg, const symaddr_map_t *map);

/* Pop any registration (for teardown); NULL when empty. Not thread-safe. */
symaddr_registration_t *symaddr_registry_last(symaddr_registry_t *reg);

#endif
