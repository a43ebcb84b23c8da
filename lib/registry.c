/* SPDX-License-Identifier: MIT */
#include "registry.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

struct symaddr_registry_snapshot {
    size_t count, cap;
    uint64_t *bases;                   /* by_addr[i]->map.range_base, searched without chasing
                                          pointers */
    symaddr_registration_t **by_addr;  /* sorted by range */
    symaddr_registration_t **by_map;   /* sorted by the registration's address */
};

static symaddr_registry_snapshot_t *snap_alloc(size_t cap)
{
    size_t per = sizeof(uint64_t) + 2 * sizeof(void *);
    symaddr_registry_snapshot_t *s = malloc(sizeof(*s) + per * (cap ? cap : 1));
    if (!s)
        return NULL;
    s->count = 0;
    s->cap = cap;
    s->bases = (uint64_t *)(s + 1);
    s->by_addr = (symaddr_registration_t **)(s->bases + (cap ? cap : 1));
    s->by_map = s->by_addr + (cap ? cap : 1);
    return s;
}

/* The snapshot a writer fills next: the spare when it is large enough. */
static symaddr_registry_snapshot_t *snap_take(symaddr_registry_t *reg, size_t need)
{
    symaddr_registry_snapshot_t *s = reg->spare;
    if (s && s->cap >= need) {
        reg->spare = NULL;
        return s;
    }
    return snap_alloc(need < 16 ? 16 : 2 * need);
}

/* ---- readers ------------------------------------------------------------------------------ */

static unsigned reader_slot(void)
{
    static unsigned next;
    static __thread unsigned slot = ~0u;
    if (slot == ~0u)
        slot = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED) % SYMADDR_REGISTRY_SLOTS;
    return slot;
}

/* Enter a lookup: the snapshot stays valid until read_end(reg, *ticket). */
static const symaddr_registry_snapshot_t *read_begin(symaddr_registry_t *reg, unsigned *ticket)
{
    unsigned s = reader_slot();
    for (;;) {
        unsigned g = __atomic_load_n(&reg->gen, __ATOMIC_ACQUIRE) & 1;
        __atomic_fetch_add(&reg->readers[s].n[g], 1, __ATOMIC_SEQ_CST);
        if ((__atomic_load_n(&reg->gen, __ATOMIC_SEQ_CST) & 1) == g) {
            *ticket = s * 2 + g;
            return __atomic_load_n(&reg->cur, __ATOMIC_ACQUIRE);
        }
        __atomic_fetch_sub(&reg->readers[s].n[g], 1, __ATOMIC_RELEASE);
    }
}

static void read_end(symaddr_registry_t *reg, unsigned ticket)
{
    __atomic_fetch_sub(&reg->readers[ticket / 2].n[ticket % 2], 1, __ATOMIC_RELEASE);
}

/* Writer: make next current, wait until no lookup can still hold the old one, and keep the old
 * one as the spare. */
static void publish(symaddr_registry_t *reg, symaddr_registry_snapshot_t *next)
{
    symaddr_registry_snapshot_t *old = __atomic_exchange_n(&reg->cur, next, __ATOMIC_SEQ_CST);
    unsigned g = __atomic_fetch_add(&reg->gen, 1, __ATOMIC_SEQ_CST) & 1;
    for (unsigned s = 0; s < SYMADDR_REGISTRY_SLOTS; s++)
        while (__atomic_load_n(&reg->readers[s].n[g], __ATOMIC_ACQUIRE) != 0)
            sched_yield();
    if (reg->spare && (!old || reg->spare->cap >= old->cap)) {
        free(old);
    } else {
        free(reg->spare);
        reg->spare = old;
    }
}

/* ---- sorted arrays ------------------------------------------------------------------------ */

/* First index whose range_base is > addr. */
static size_t upper_by_addr(const symaddr_registry_snapshot_t *s, uint64_t addr)
{
    size_t lo = 0, hi = s->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->bases[mid] <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* First index whose entry address is >= r. */
static size_t lower_by_map(const symaddr_registry_snapshot_t *s, uintptr_t r)
{
    size_t lo = 0, hi = s->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)s->by_map[mid] < r)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static symaddr_registration_t *find_in(const symaddr_registry_snapshot_t *s, uint64_t addr)
{
    size_t i = upper_by_addr(s, addr);
    if (i == 0)
        return NULL;
    symaddr_registration_t *r = s->by_addr[i - 1];
    return addr - r->map.range_base < r->map.range_bytes ? r : NULL;
}

static bool overlaps_in(const symaddr_registry_snapshot_t *s, uint64_t base, uint64_t end)
{
    size_t i = upper_by_addr(s, base);
    if (i > 0) {
        const symaddr_map_t *prev = &s->by_addr[i - 1]->map;
        if (prev->range_base + prev->range_bytes > base)
            return true;
    }
    return i < s->count && s->by_addr[i]->map.range_base < end;
}

/* ---- the freed set ------------------------------------------------------------------------ */

static size_t lower_freed(const symaddr_registry_t *reg, uint64_t v)
{
    size_t lo = 0, hi = reg->nfreed;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (reg->freed[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool freed_has(const symaddr_registry_t *reg, uint64_t v)
{
    size_t i = lower_freed(reg, v);
    return i < reg->nfreed && reg->freed[i] == v;
}

static void freed_add(symaddr_registry_t *reg, uint64_t v)
{
    size_t i = lower_freed(reg, v);
    if (i < reg->nfreed && reg->freed[i] == v)
        return;
    if (reg->nfreed == SYMADDR_FREED_MEMORY)
        reg->nfreed = 0; /* forget the oldest all at once: a double free then reads NOT_FOUND */
    if (reg->nfreed == reg->capfreed) {
        size_t cap = reg->capfreed ? 2 * reg->capfreed : 64;
        uint64_t *f = realloc(reg->freed, cap * sizeof(*f));
        if (!f)
            return; /* only the name of a later double free is lost */
        reg->freed = f;
        reg->capfreed = cap;
    }
    i = lower_freed(reg, v);
    memmove(reg->freed + i + 1, reg->freed + i, (reg->nfreed - i) * sizeof(*reg->freed));
    reg->freed[i] = v;
    reg->nfreed++;
}

static void freed_forget(symaddr_registry_t *reg, uint64_t base, uint64_t end)
{
    size_t i = lower_freed(reg, base), j = i;
    while (j < reg->nfreed && reg->freed[j] < end)
        j++;
    memmove(reg->freed + i, reg->freed + j, (reg->nfreed - j) * sizeof(*reg->freed));
    reg->nfreed -= j - i;
}

/* ---- the registry ------------------------------------------------------------------------- */

int symaddr_registry_init(symaddr_registry_t *reg)
{
    memset(reg, 0, sizeof(*reg));
    reg->cur = snap_alloc(0);
    return reg->cur && pthread_mutex_init(&reg->write, NULL) == 0 ? 0 : -1;
}

void symaddr_registry_fini(symaddr_registry_t *reg)
{
    free(reg->cur);
    free(reg->spare);
    free(reg->freed);
    pthread_mutex_destroy(&reg->write);
    memset(reg, 0, sizeof(*reg));
}

symaddr_status_t symaddr_registry_reserve(symaddr_registry_t *reg)
{
    pthread_mutex_lock(&reg->write);
    symaddr_status_t st = SYMADDR_OK;
    size_t need = reg->cur->count + 1;
    if (!reg->spare || reg->spare->cap < need) {
        symaddr_registry_snapshot_t *s = snap_alloc(2 * need < 16 ? 16 : 2 * need);
        if (s) {
            free(reg->spare);
            reg->spare = s;
        } else {
            st = SYMADDR_ERR_NO_MEMORY;
        }
    }
    pthread_mutex_unlock(&reg->write);
    return st;
}

bool symaddr_registry_overlaps(symaddr_registry_t *reg, uint64_t base, uint64_t bytes)
{
    unsigned t;
    const symaddr_registry_snapshot_t *s = read_begin(reg, &t);
    bool o = overlaps_in(s, base, base + bytes);
    read_end(reg, t);
    return o;
}

symaddr_status_t symaddr_registry_insert(symaddr_registry_t *reg, symaddr_registration_t *r)
{
    uint64_t base = r->map.range_base, end = base + r->map.range_bytes;
    symaddr_status_t st = SYMADDR_OK;

    if (r->map.range_bytes == 0 || end < base)
        return SYMADDR_ERR_INVALID_SIZE;
    pthread_mutex_lock(&reg->write);
    const symaddr_registry_snapshot_t *cur = reg->cur;
    symaddr_registry_snapshot_t *next = NULL;
    if (overlaps_in(cur, base, end)) {
        st = SYMADDR_ERR_ALREADY_REGISTERED;
    } else if (!(next = snap_take(reg, cur->count + 1))) {
        st = SYMADDR_ERR_NO_MEMORY;
    } else {
        size_t i = upper_by_addr(cur, base), j = lower_by_map(cur, (uintptr_t)r), n = cur->count;
        memcpy(next->bases, cur->bases, i * sizeof(*cur->bases));
        next->bases[i] = base;
        memcpy(next->bases + i + 1, cur->bases + i, (n - i) * sizeof(*cur->bases));
        memcpy(next->by_addr, cur->by_addr, i * sizeof(*cur->by_addr));
        next->by_addr[i] = r;
        memcpy(next->by_addr + i + 1, cur->by_addr + i, (n - i) * sizeof(*cur->by_addr));
        memcpy(next->by_map, cur->by_map, j * sizeof(*cur->by_map));
        next->by_map[j] = r;
        memcpy(next->by_map + j + 1, cur->by_map + j, (n - j) * sizeof(*cur->by_map));
        next->count = n + 1;
        publish(reg, next);
        reg->count = n + 1;
        freed_forget(reg, base, end);
    }
    pthread_mutex_unlock(&reg->write);
    return st;
}

symaddr_status_t symaddr_registry_remove(symaddr_registry_t *reg, symaddr_registration_t *r)
{
    symaddr_status_t st = SYMADDR_ERR_NOT_FOUND;

    pthread_mutex_lock(&reg->write);
    const symaddr_registry_snapshot_t *cur = reg->cur;
    size_t j = lower_by_map(cur, (uintptr_t)r), n = cur->count;
    if (j < n && cur->by_map[j] == r) {
        /* the spare, the snapshot retired last, holds at least n - 1 entries */
        symaddr_registry_snapshot_t *next = snap_take(reg, n - 1);
        if (next) {
            size_t i = upper_by_addr(cur, r->map.range_base) - 1; /* bases are unique */
            memcpy(next->bases, cur->bases, i * sizeof(*cur->bases));
            memcpy(next->bases + i, cur->bases + i + 1, (n - i - 1) * sizeof(*cur->bases));
            memcpy(next->by_addr, cur->by_addr, i * sizeof(*cur->by_addr));
            memcpy(next->by_addr + i, cur->by_addr + i + 1, (n - i - 1) * sizeof(*cur->by_addr));
            memcpy(next->by_map, cur->by_map, j * sizeof(*cur->by_map));
            memcpy(next->by_map + j, cur->by_map + j + 1, (n - j - 1) * sizeof(*cur->by_map));
            next->count = n - 1;
            publish(reg, next);
            reg->count = n - 1;
            freed_add(reg, r->map.range_base);
            st = SYMADDR_OK;
        } else {
            st = SYMADDR_ERR_NO_MEMORY;
        }
    }
    pthread_mutex_unlock(&reg->write);
    return st;
}

symaddr_status_t symaddr_registry_lookup(symaddr_registry_t *reg, const void *ptr,
                                         symaddr_registration_t **r_p)
{
    unsigned t;
    const symaddr_registry_snapshot_t *s = read_begin(reg, &t);
    symaddr_registration_t *r = find_in(s, (uint64_t)(uintptr_t)ptr);
    read_end(reg, t);
    if (!r)
        return SYMADDR_ERR_NOT_FOUND;
    *r_p = r;
    return SYMADDR_OK;
}

symaddr_status_t symaddr_registry_find(symaddr_registry_t *reg, const void *ptr,
                                       symaddr_registration_t **r_p)
{
    symaddr_status_t st = symaddr_registry_lookup(reg, ptr, r_p);
    if (st == SYMADDR_OK || !ptr)
        return st;
    pthread_mutex_lock(&reg->write);
    if (freed_has(reg, (uint64_t)(uintptr_t)ptr))
        st = SYMADDR_ERR_DOUBLE_FREE;
    pthread_mutex_unlock(&reg->write);
    return st;
}

symaddr_registration_t *symaddr_registry_owner(symaddr_registry_t *reg, const symaddr_map_t *map)
{
    unsigned t;
    symaddr_registration_t *found = NULL;
    const symaddr_registry_snapshot_t *s = read_begin(reg, &t);
    size_t j = lower_by_map(s, (uintptr_t)map);
    if (j < s->count && (const void *)s->by_map[j] == (const void *)map)
        found = s->by_map[j];
    read_end(reg, t);
    return found;
}

symaddr_registration_t *symaddr_registry_last(symaddr_registry_t *reg)
{
    const symaddr_registry_snapshot_t *s = __atomic_load_n(&reg->cur, __ATOMIC_ACQUIRE);
    return s->count ? s->by_addr[s->count - 1] : NULL;
}
