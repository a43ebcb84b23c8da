/* SPDX-License-Identifier: MIT */
#include "registry.h"

#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct symaddr_registry_snapshot {
    size_t count, cap;
    uint64_t retired_at;                    /* the epoch it was replaced in */
    struct symaddr_registry_snapshot *next; /* retired list */
    uint64_t *bases; /* by_addr[i]'s range, so that a lookup reads no registration */
    uint64_t *ends;
    symaddr_registration_t **by_addr; /* sorted by range */
    symaddr_registration_t **by_map;  /* sorted by the registration's address */
};

static symaddr_registry_snapshot_t *snap_alloc(size_t cap)
{
    size_t room = cap ? cap : 1, per = 2 * sizeof(uint64_t) + 2 * sizeof(void *);
    symaddr_registry_snapshot_t *s = malloc(sizeof(*s) + per * room);
    if (!s)
        return NULL;
    s->count = 0;
    s->cap = cap;
    s->bases = (uint64_t *)(s + 1);
    s->ends = s->bases + room;
    s->by_addr = (symaddr_registration_t **)(s->ends + room);
    s->by_map = s->by_addr + room;
    return s;
}

/* A new snapshot for need entries, with room to grow. */
static symaddr_registry_snapshot_t *snap_grow(size_t need)
{
    return snap_alloc(2 * need > 16 ? 2 * need : 16);
}

static void reclaim(symaddr_registry_t *reg);

/* The snapshot a writer fills next: the spare when it is large enough. The snapshot the last
 * change retired was usually still being read then; lookups have moved on since, so reclaim
 * first: a steady stream of changes then cycles through three snapshots without allocating. */
static symaddr_registry_snapshot_t *snap_take(symaddr_registry_t *reg, size_t need)
{
    if (!reg->spare || reg->spare->cap < need)
        reclaim(reg);
    symaddr_registry_snapshot_t *s = reg->spare;
    if (s && s->cap >= need) {
        reg->spare = NULL;
        return s;
    }
    return snap_grow(need);
}

/* For a remove, which must not fail: without new memory, wait for lookups to leave a retired
 * snapshot (lookups are short and never wait). */
static symaddr_registry_snapshot_t *snap_take_or_wait(symaddr_registry_t *reg, size_t need)
{
    symaddr_registry_snapshot_t *s;
    while (!(s = snap_take(reg, need)) && reg->retired) {
        sched_yield();
        reclaim(reg);
    }
    return s;
}

/* ---- readers ------------------------------------------------------------------------------ */

/* A lookup shows its epoch with a plain store, and a writer makes every running thread's stores
 * visible with membarrier(2) before it reads the slots: the cost of ordering moves from every
 * lookup to the rare writer. Without membarrier, each lookup's store is sequentially consistent
 * instead. */
static int use_membarrier = -1; /* -1: not asked yet */
static pthread_once_t membarrier_once = PTHREAD_ONCE_INIT;

static void membarrier_setup(void)
{
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0);
    int ok = cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
             syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0;
    __atomic_store_n(&use_membarrier, ok, __ATOMIC_RELEASE);
}

/* Writer side, before it reads the reader slots. */
static void readers_fence(void)
{
    if (__atomic_load_n(&use_membarrier, __ATOMIC_ACQUIRE) == 1 &&
        syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) == 0)
        return;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Each thread that looks up holds one reader slot of every registry, by a process-wide index
 * claimed on its first lookup and given back when it exits. */
static unsigned slot_used[SYMADDR_REGISTRY_SLOTS];
static pthread_key_t slot_key;
static pthread_once_t slot_once = PTHREAD_ONCE_INIT;
static __thread unsigned my_slot; /* index + 1; 0: none yet */

static void slot_release(void *p)
{
    __atomic_store_n(&slot_used[(uintptr_t)p - 1], 0, __ATOMIC_RELEASE);
}

static void slot_key_make(void) { pthread_key_create(&slot_key, slot_release); }

/* This thread's slot, or SYMADDR_REGISTRY_SLOTS when every slot is taken. */
static unsigned reader_slot(void)
{
    if (my_slot)
        return my_slot - 1;
    pthread_once(&slot_once, slot_key_make);
    for (unsigned i = 0; i < SYMADDR_REGISTRY_SLOTS; i++)
        if (!__atomic_exchange_n(&slot_used[i], 1, __ATOMIC_ACQ_REL)) {
            my_slot = i + 1;
            pthread_setspecific(slot_key, (void *)(uintptr_t)my_slot);
            return i;
        }
    return SYMADDR_REGISTRY_SLOTS;
}

/* Enter a lookup: the snapshot stays valid until read_end. The slot shows the epoch at entry,
 * so that a writer frees a snapshot only once no lookup that may have seen it is still in. */
static const symaddr_registry_snapshot_t *read_begin(symaddr_registry_t *reg, unsigned *slot)
{
    *slot = reader_slot();
    if (*slot == SYMADDR_REGISTRY_SLOTS) { /* more threads than slots: the writers' lock */
        pthread_mutex_lock(&reg->write);
        return reg->cur;
    }
    uint64_t e = __atomic_load_n(&reg->epoch, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&use_membarrier, __ATOMIC_RELAXED) == 1) {
        __atomic_store_n(&reg->readers[*slot].epoch, e, __ATOMIC_RELAXED);
        __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the writer's membarrier orders the rest */
    } else {
        __atomic_store_n(&reg->readers[*slot].epoch, e, __ATOMIC_SEQ_CST);
    }
    return __atomic_load_n(&reg->cur, __ATOMIC_SEQ_CST);
}

static void read_end(symaddr_registry_t *reg, unsigned slot)
{
    if (slot == SYMADDR_REGISTRY_SLOTS)
        pthread_mutex_unlock(&reg->write);
    else
        __atomic_store_n(&reg->readers[slot].epoch, 0, __ATOMIC_RELEASE);
}

/* Retired snapshots that no lookup can hold any more: kept as the spare or freed. */
static void reclaim(symaddr_registry_t *reg)
{
    uint64_t oldest = UINT64_MAX;
    if (!reg->retired)
        return;
    readers_fence();
    for (unsigned i = 0; i < SYMADDR_REGISTRY_SLOTS; i++) {
        uint64_t e = __atomic_load_n(&reg->readers[i].epoch, __ATOMIC_SEQ_CST);
        if (e && e < oldest)
            oldest = e;
    }
    for (symaddr_registry_snapshot_t **pp = &reg->retired; *pp;) {
        symaddr_registry_snapshot_t *r = *pp;
        if (r->retired_at < oldest) { /* every lookup in now began after it was replaced */
            *pp = r->next;
            if (!reg->spare || reg->spare->cap < r->cap) {
                free(reg->spare);
                reg->spare = r;
            } else {
                free(r);
            }
        } else {
            pp = &r->next;
        }
    }
}

/* Writer: make next current and retire the old one; nothing waits for lookups. */
static void publish(symaddr_registry_t *reg, symaddr_registry_snapshot_t *next)
{
    symaddr_registry_snapshot_t *old = __atomic_exchange_n(&reg->cur, next, __ATOMIC_SEQ_CST);
    old->retired_at = __atomic_fetch_add(&reg->epoch, 1, __ATOMIC_SEQ_CST);
    old->next = reg->retired;
    reg->retired = old;
    reclaim(reg);
}

/* ---- sorted arrays ------------------------------------------------------------------------ */

/* dst = src[0, n) with v of es bytes inserted at index i. */
static void copy_with(void *dst, const void *src, size_t n, size_t i, const void *v, size_t es)
{
    memcpy(dst, src, i * es);
    memcpy((char *)dst + i * es, v, es);
    memcpy((char *)dst + (i + 1) * es, (const char *)src + i * es, (n - i) * es);
}

/* dst = src[0, n) without index i (es-byte elements). */
static void copy_without(void *dst, const void *src, size_t n, size_t i, size_t es)
{
    memcpy(dst, src, i * es);
    memcpy((char *)dst + i * es, (const char *)src + (i + 1) * es, (n - i - 1) * es);
}

/* First index whose range_base is > addr. Without branches on the data (the compiler makes
 * the step a conditional move), so that a lookup costs the same whatever the pointer. */
static size_t upper_by_addr(const symaddr_registry_snapshot_t *s, uint64_t addr)
{
    const uint64_t *b = s->bases;
    size_t n = s->count;
    if (n == 0)
        return 0;
    while (n > 1) {
        size_t half = n / 2;
        b = b[half] <= addr ? b + half : b;
        n -= half;
    }
    return (size_t)(b - s->bases) + (*b <= addr);
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
    return i > 0 && addr < s->ends[i - 1] ? s->by_addr[i - 1] : NULL;
}

static bool overlaps_in(const symaddr_registry_snapshot_t *s, uint64_t base, uint64_t end)
{
    size_t i = upper_by_addr(s, base);
    return (i > 0 && s->ends[i - 1] > base) || (i < s->count && s->bases[i] < end);
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
    pthread_once(&membarrier_once, membarrier_setup);
    memset(reg, 0, sizeof(*reg));
    reg->epoch = 1; /* 0 marks an idle reader slot */
    reg->cur = snap_alloc(0);
    if (!reg->cur || posix_memalign((void **)&reg->readers, 64,
                                    SYMADDR_REGISTRY_SLOTS * sizeof(*reg->readers))) {
        free(reg->cur);
        reg->cur = NULL;
        reg->readers = NULL;
        return -1;
    }
    memset(reg->readers, 0, SYMADDR_REGISTRY_SLOTS * sizeof(*reg->readers));
    if (pthread_mutex_init(&reg->write, NULL) != 0) {
        free(reg->cur);
        free(reg->readers);
        reg->cur = NULL;
        reg->readers = NULL;
        return -1;
    }
    return 0;
}

void symaddr_registry_fini(symaddr_registry_t *reg)
{
    while (reg->retired) {
        symaddr_registry_snapshot_t *r = reg->retired;
        reg->retired = r->next;
        free(r);
    }
    free(reg->cur);
    free(reg->spare);
    free(reg->freed);
    free(reg->readers);
    pthread_mutex_destroy(&reg->write);
    memset(reg, 0, sizeof(*reg));
}

symaddr_status_t symaddr_registry_reserve(symaddr_registry_t *reg)
{
    pthread_mutex_lock(&reg->write);
    symaddr_status_t st = SYMADDR_OK;
    size_t need = reg->cur->count + 1;
    if (!reg->spare || reg->spare->cap < need) {
        symaddr_registry_snapshot_t *s = snap_grow(need);
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
        copy_with(next->bases, cur->bases, n, i, &base, sizeof(base));
        copy_with(next->ends, cur->ends, n, i, &end, sizeof(end));
        copy_with(next->by_addr, cur->by_addr, n, i, &r, sizeof(r));
        copy_with(next->by_map, cur->by_map, n, j, &r, sizeof(r));
        next->count = n + 1;
        publish(reg, next);
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
        symaddr_registry_snapshot_t *next = snap_take_or_wait(reg, n - 1);
        if (next) {
            size_t i = upper_by_addr(cur, r->map.range_base) - 1; /* bases are unique */
            copy_without(next->bases, cur->bases, n, i, sizeof(*cur->bases));
            copy_without(next->ends, cur->ends, n, i, sizeof(*cur->ends));
            copy_without(next->by_addr, cur->by_addr, n, i, sizeof(*cur->by_addr));
            copy_without(next->by_map, cur->by_map, n, j, sizeof(*cur->by_map));
            next->count = n - 1;
            publish(reg, next);
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

size_t symaddr_registry_count(symaddr_registry_t *reg)
{
    return __atomic_load_n(&reg->cur, __ATOMIC_ACQUIRE)->count;
}

symaddr_registration_t *symaddr_registry_last(symaddr_registry_t *reg)
{
    const symaddr_registry_snapshot_t *s = __atomic_load_n(&reg->cur, __ATOMIC_ACQUIRE);
    return s->count ? s->by_addr[s->count - 1] : NULL;
}
