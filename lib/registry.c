/* SPDX-License-Identifier: MIT */
#include "registry.h"

#include <stdlib.h>
#include <string.h>

int symaddr_registry_init(symaddr_registry_t *reg)
{
    memset(reg, 0, sizeof(*reg));
    return pthread_rwlock_init(&reg->lock, NULL);
}

void symaddr_registry_fini(symaddr_registry_t *reg)
{
    free(reg->by_addr);
    free(reg->bases);
    free(reg->by_map);
    pthread_rwlock_destroy(&reg->lock);
    memset(reg, 0, sizeof(*reg));
}

/* First index whose range_base is > addr. */
static size_t upper_by_addr(const symaddr_registry_t *reg, uint64_t addr)
{
    size_t lo = 0, hi = reg->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (reg->bases[mid] <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* First index whose entry address is >= r. */
static size_t lower_by_map(const symaddr_registry_t *reg, uintptr_t r)
{
    size_t lo = 0, hi = reg->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)reg->by_map[mid] < r)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void insert_at(symaddr_registration_t **a, size_t n, size_t i, symaddr_registration_t *r)
{
    memmove(a + i + 1, a + i, (n - i) * sizeof(*a));
    a[i] = r;
}

static void remove_at(symaddr_registration_t **a, size_t n, size_t i)
{
    memmove(a + i, a + i + 1, (n - i - 1) * sizeof(*a));
}

static void forget_freed(symaddr_registry_t *reg, uint64_t base)
{
    for (size_t i = 0; i < SYMADDR_FREED_MEMORY; i++)
        if (reg->freed[i] == base)
            reg->freed[i] = 0;
}

static symaddr_status_t reserve_locked(symaddr_registry_t *reg, size_t n)
{
    if (reg->count + n <= reg->cap)
        return SYMADDR_OK;
    size_t cap = reg->cap ? reg->cap : 64;
    while (cap < reg->count + n)
        cap *= 2;
    symaddr_registration_t **a = realloc(reg->by_addr, cap * sizeof(*a));
    if (!a)
        return SYMADDR_ERR_NO_MEMORY;
    reg->by_addr = a;
    symaddr_registration_t **m = realloc(reg->by_map, cap * sizeof(*m));
    if (!m)
        return SYMADDR_ERR_NO_MEMORY;
    reg->by_map = m;
    uint64_t *b = realloc(reg->bases, cap * sizeof(*b));
    if (!b)
        return SYMADDR_ERR_NO_MEMORY;
    reg->bases = b;
    reg->cap = cap;
    return SYMADDR_OK;
}

symaddr_status_t symaddr_registry_reserve(symaddr_registry_t *reg, size_t n)
{
    pthread_rwlock_wrlock(&reg->lock);
    symaddr_status_t st = reserve_locked(reg, n);
    pthread_rwlock_unlock(&reg->lock);
    return st;
}

static bool overlaps_locked(const symaddr_registry_t *reg, uint64_t base, uint64_t end)
{
    size_t i = upper_by_addr(reg, base);
    if (i > 0) {
        const symaddr_map_t *prev = &reg->by_addr[i - 1]->map;
        if (prev->range_base + prev->range_bytes > base)
            return true;
    }
    return i < reg->count && reg->by_addr[i]->map.range_base < end;
}

bool symaddr_registry_overlaps(symaddr_registry_t *reg, uint64_t base, uint64_t bytes)
{
    pthread_rwlock_rdlock(&reg->lock);
    bool o = overlaps_locked(reg, base, base + bytes);
    pthread_rwlock_unlock(&reg->lock);
    return o;
}

symaddr_status_t symaddr_registry_insert(symaddr_registry_t *reg, symaddr_registration_t *r)
{
    uint64_t base = r->map.range_base, end = base + r->map.range_bytes;
    symaddr_status_t st = SYMADDR_OK;

    if (r->map.range_bytes == 0 || end < base)
        return SYMADDR_ERR_INVALID_SIZE;
    pthread_rwlock_wrlock(&reg->lock);
    if (reg->count == reg->cap && (st = reserve_locked(reg, 1)) != SYMADDR_OK)
        goto out;
    if (overlaps_locked(reg, base, end)) {
        st = SYMADDR_ERR_ALREADY_REGISTERED;
        goto out;
    }
    size_t i = upper_by_addr(reg, base);
    insert_at(reg->by_addr, reg->count, i, r);
    memmove(reg->bases + i + 1, reg->bases + i, (reg->count - i) * sizeof(*reg->bases));
    reg->bases[i] = base;
    insert_at(reg->by_map, reg->count, lower_by_map(reg, (uintptr_t)r), r);
    reg->count++;
    forget_freed(reg, base);
out:
    pthread_rwlock_unlock(&reg->lock);
    return st;
}

symaddr_status_t symaddr_registry_remove(symaddr_registry_t *reg, symaddr_registration_t *r)
{
    symaddr_status_t st = SYMADDR_ERR_NOT_FOUND;

    pthread_rwlock_wrlock(&reg->lock);
    size_t j = lower_by_map(reg, (uintptr_t)r);
    if (j < reg->count && reg->by_map[j] == r) {
        size_t i = upper_by_addr(reg, r->map.range_base);
        /* i - 1 is r: ranges do not overlap, so bases are unique. */
        remove_at(reg->by_addr, reg->count, i - 1);
        memmove(reg->bases + i - 1, reg->bases + i, (reg->count - i) * sizeof(*reg->bases));
        remove_at(reg->by_map, reg->count, j);
        reg->count--;
        reg->freed[reg->freed_next] = r->map.range_base;
        reg->freed_next = (reg->freed_next + 1) % SYMADDR_FREED_MEMORY;
        st = SYMADDR_OK;
    }
    pthread_rwlock_unlock(&reg->lock);
    return st;
}

symaddr_status_t symaddr_registry_find(symaddr_registry_t *reg, const void *ptr,
                                       symaddr_registration_t **r_p)
{
    uint64_t addr = (uint64_t)(uintptr_t)ptr;
    symaddr_status_t st = SYMADDR_ERR_NOT_FOUND;

    pthread_rwlock_rdlock(&reg->lock);
    size_t i = upper_by_addr(reg, addr);
    if (i > 0) {
        symaddr_registration_t *r = reg->by_addr[i - 1];
        if (addr - r->map.range_base < r->map.range_bytes) {
            *r_p = r;
            st = SYMADDR_OK;
        }
    }
    if (st != SYMADDR_OK && addr != 0)
        for (size_t k = 0; k < SYMADDR_FREED_MEMORY; k++)
            if (reg->freed[k] == addr)
                st = SYMADDR_ERR_DOUBLE_FREE;
    pthread_rwlock_unlock(&reg->lock);
    return st;
}

symaddr_registration_t *symaddr_registry_owner(symaddr_registry_t *reg, const symaddr_map_t *map)
{
    symaddr_registration_t *found = NULL;

    pthread_rwlock_rdlock(&reg->lock);
    size_t j = lower_by_map(reg, (uintptr_t)map);
    if (j < reg->count && (const void *)reg->by_map[j] == (const void *)map)
        found = reg->by_map[j];
    pthread_rwlock_unlock(&reg->lock);
    return found;
}

symaddr_registration_t *symaddr_registry_last(symaddr_registry_t *reg)
{
    return reg->count ? reg->by_addr[reg->count - 1] : NULL;
}
