/* SPDX-License-Identifier: MIT */
#include "maps/registry.h"

#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A snapshot holds its entries in chunks of at most CHUNK, twice: by range (for lookups) and by
 * the registration's address (to tell whether a map is a live registration's). A change copies
 * the one chunk it touches on each side and the two small arrays of chunk pointers; the other
 * chunks are shared with the snapshot before, so a change costs a few kilobytes of copying
 * however many registrations live, and lookups, which read the same memory, are not slowed by
 * a writer rewriting all of it. */
#define CHUNK 256
#define POOL_CHUNKS 16   /* freed chunks kept for the next changes */
#define RECLAIM_EVERY 64 /* retired snapshots kept before they are reclaimed */

typedef struct reg_chunk {
    size_t n;
    uint64_t born, died;    /* the first and last snapshots that hold it (died: once replaced) */
    struct reg_chunk *link; /* in the garbage, or in the pool */
    uint64_t key[CHUNK];    /* the range's base, or the registration's address */
    uint64_t end[CHUNK];    /* the range's end (by range only) */
    symaddr_registration_t *r[CHUNK];
} reg_chunk_t;

struct symaddr_registry_snapshot {
    size_t count;                           /* live registrations */
    size_t cap;                             /* chunks each side's arrays hold */
    uint64_t seq;                           /* its number: changes before it */
    struct symaddr_registry_snapshot *next; /* retired list */
    size_t na, nm;                          /* chunks by range, by registration */
    reg_chunk_t **ac, **mc;
    uint64_t *afirst, *mfirst; /* each chunk's first key: where a search starts */
};

/* One side of a snapshot: its chunks, their first keys and how many. */
typedef struct side {
    reg_chunk_t **c;
    uint64_t *first;
    size_t *n;
} side_t;

static side_t side_of(symaddr_registry_snapshot_t *s, int by_map)
{
    side_t v = {by_map ? s->mc : s->ac, by_map ? s->mfirst : s->afirst, by_map ? &s->nm : &s->na};
    return v;
}

static symaddr_registry_snapshot_t *snap_alloc(size_t cap)
{
    size_t room = cap ? cap : 1;
    symaddr_registry_snapshot_t *s =
        malloc(sizeof(*s) + room * (2 * sizeof(reg_chunk_t *) + 2 * sizeof(uint64_t)));
    if (!s)
        return NULL;
    memset(s, 0, sizeof(*s));
    s->cap = cap;
    s->ac = (reg_chunk_t **)(s + 1);
    s->mc = s->ac + room;
    s->afirst = (uint64_t *)(s->mc + room);
    s->mfirst = s->afirst + room;
    return s;
}

static void reclaim(symaddr_registry_t *reg);

/* The snapshot a writer fills next: the spare when it is large enough, else a new one (small:
 * the chunks are shared). */
static symaddr_registry_snapshot_t *snap_take(symaddr_registry_t *reg, size_t cap)
{
    symaddr_registry_snapshot_t *s = reg->spare;
    if (s && s->cap >= cap) {
        reg->spare = NULL;
        s->count = s->na = s->nm = 0;
        return s;
    }
    return snap_alloc(2 * cap > 16 ? 2 * cap : 16);
}

static reg_chunk_t *chunk_take(symaddr_registry_t *reg)
{
    reg_chunk_t *c = reg->pool;
    if (c) {
        reg->pool = c->link;
        reg->npool--;
        return c;
    }
    return malloc(sizeof(reg_chunk_t));
}

static void chunk_drop(symaddr_registry_t *reg, reg_chunk_t *c)
{
    if (reg->npool < POOL_CHUNKS) {
        c->link = reg->pool;
        reg->pool = c;
        reg->npool++;
    } else {
        free(c);
    }
}

/* ---- readers ------------------------------------------------------------------------------ */

/* A lookup shows the snapshot it reads with a plain store, and a writer makes every running
 * thread's stores visible with membarrier(2) before it reads the slots: the cost of ordering
 * moves from every lookup to the rare writer. Without membarrier, each lookup's store is
 * sequentially consistent instead. */
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

/* Enter a lookup: the snapshot stays valid until read_end. The slot shows it before it is read,
 * and is checked against cur after: a writer that retired it first either sees the slot, or
 * the lookup sees the new cur and tries again (the writer's membarrier or the lookup's
 * sequentially consistent store orders the two). */
static const symaddr_registry_snapshot_t *read_begin(symaddr_registry_t *reg, unsigned *slot)
{
    *slot = reader_slot();
    if (*slot == SYMADDR_REGISTRY_SLOTS) { /* more threads than slots: the writers' lock */
        pthread_mutex_lock(&reg->write);
        return reg->cur;
    }
    const symaddr_registry_snapshot_t **held = &reg->readers[*slot].held;
    symaddr_registry_snapshot_t *s = __atomic_load_n(&reg->cur, __ATOMIC_ACQUIRE);
    for (;;) {
        if (__atomic_load_n(&use_membarrier, __ATOMIC_RELAXED) == 1) {
            __atomic_store_n(held, s, __ATOMIC_RELAXED);
            __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the writer's membarrier orders the rest */
        } else {
            __atomic_store_n(held, s, __ATOMIC_SEQ_CST);
        }
        symaddr_registry_snapshot_t *now = __atomic_load_n(&reg->cur, __ATOMIC_SEQ_CST);
        if (now == s)
            return s;
        s = now;
    }
}

static void read_end(symaddr_registry_t *reg, unsigned slot)
{
    if (slot == SYMADDR_REGISTRY_SLOTS)
        pthread_mutex_unlock(&reg->write);
    else
        __atomic_store_n(&reg->readers[slot].held, NULL, __ATOMIC_RELEASE);
}

/* Free what no lookup can reach any more: each retired snapshot no slot shows, and each
 * replaced chunk that no shown snapshot holds (one shown holds it when its number lies within
 * the chunk's life). Freed chunks go to the pool, a freed snapshot becomes the spare. A slot
 * showing a snapshot already freed belongs to a lookup that will try again: it holds nothing. */
static void reclaim(symaddr_registry_t *reg)
{
    uint64_t held[SYMADDR_REGISTRY_SLOTS];
    size_t nheld = 0;
    if (!reg->retired && !reg->garbage)
        return;
    readers_fence();
    for (unsigned i = 0; i < SYMADDR_REGISTRY_SLOTS; i++) {
        const symaddr_registry_snapshot_t *h =
            __atomic_load_n(&reg->readers[i].held, __ATOMIC_SEQ_CST);
        if (!h || h == reg->cur)
            continue; /* cur's chunks are not garbage */
        for (symaddr_registry_snapshot_t *r = reg->retired; r; r = r->next)
            if (r == h) {
                held[nheld++] = r->seq;
                break;
            }
    }
    for (symaddr_registry_snapshot_t **pp = &reg->retired; *pp;) {
        symaddr_registry_snapshot_t *r = *pp;
        bool shown = false;
        for (size_t k = 0; k < nheld && !shown; k++)
            shown = held[k] == r->seq;
        if (shown) {
            pp = &r->next;
            continue;
        }
        *pp = r->next;
        reg->nretired--;
        if (!reg->spare || reg->spare->cap < r->cap) {
            free(reg->spare);
            reg->spare = r;
        } else {
            free(r);
        }
    }
    for (reg_chunk_t **pp = &reg->garbage; *pp;) {
        reg_chunk_t *c = *pp;
        bool needed = false;
        for (size_t k = 0; k < nheld && !needed; k++)
            needed = c->born <= held[k] && held[k] <= c->died;
        if (needed) {
            pp = &c->link;
            continue;
        }
        *pp = c->link;
        reg->ngarbage--;
        chunk_drop(reg, c);
    }
}

/* Writer: make next current and retire the old one; the chunks next replaced were old's last
 * (made: the chunks next brought, which it is the first to hold). Nothing waits for lookups. */
static void publish(symaddr_registry_t *reg, symaddr_registry_snapshot_t *next,
                    reg_chunk_t *replaced, reg_chunk_t *const *made, int nmade)
{
    next->seq = reg->seq + 1;
    for (int k = 0; k < nmade; k++)
        made[k]->born = next->seq;
    symaddr_registry_snapshot_t *old = __atomic_exchange_n(&reg->cur, next, __ATOMIC_SEQ_CST);
    reg->seq = next->seq;
    while (replaced) {
        reg_chunk_t *c = replaced;
        replaced = c->link;
        c->died = old->seq;
        c->link = reg->garbage;
        reg->garbage = c;
        reg->ngarbage++;
    }
    old->next = reg->retired;
    reg->retired = old;
    /* Reclaiming costs a membarrier, which interrupts every thread looking up: once per
     * RECLAIM_EVERY changes, by when the lookups that held these snapshots are usually gone.
     * What a lookup still holds (its thread preempted inside it) waits for a later reclaim,
     * RECLAIM_EVERY changes on, rather than making every change try again. */
    if (++reg->nretired >= reg->reclaim_at) {
        reclaim(reg);
        reg->reclaims++;
        reg->reclaim_at = reg->nretired + RECLAIM_EVERY;
    }
}

/* ---- searches ----------------------------------------------------------------------------- */

/* First index of v[0, n) whose value is > x. Without branches on the data (the compiler makes
 * the step a conditional move), so that a lookup costs the same whatever the pointer. */
static size_t upper_in(const uint64_t *v, size_t n, uint64_t x)
{
    const uint64_t *b = v;
    if (n == 0)
        return 0;
    while (n > 1) {
        size_t half = n / 2;
        b = b[half] <= x ? b + half : b;
        n -= half;
    }
    return (size_t)(b - v) + (*b <= x);
}

/* The chunk of a side where key belongs (the last whose first key is <= key; the first if
 * none), or none on an empty side: its index in *t_p. */
static reg_chunk_t *chunk_of(const reg_chunk_t *const *c, const uint64_t *first, size_t n,
                             uint64_t key, size_t *t_p)
{
    size_t k = upper_in(first, n, key);
    *t_p = k ? k - 1 : 0;
    return n ? (reg_chunk_t *)c[*t_p] : NULL;
}

static symaddr_registration_t *find_in(const symaddr_registry_snapshot_t *s, uint64_t addr)
{
    size_t k = upper_in(s->afirst, s->na, addr);
    if (k == 0)
        return NULL;
    const reg_chunk_t *c = s->ac[k - 1];
    size_t i = upper_in(c->key, c->n, addr); /* >= 1: the chunk's first base is <= addr */
    return i > 0 && addr < c->end[i - 1] ? c->r[i - 1] : NULL;
}

static bool overlaps_in(const symaddr_registry_snapshot_t *s, uint64_t base, uint64_t end)
{
    size_t k = upper_in(s->afirst, s->na, base);
    if (k == 0) /* every range starts after base */
        return s->na && s->ac[0]->key[0] < end;
    const reg_chunk_t *c = s->ac[k - 1];
    size_t i = upper_in(c->key, c->n, base);
    if (i > 0 && c->end[i - 1] > base)
        return true;
    if (i < c->n)
        return c->key[i] < end;
    return k < s->na && s->ac[k]->key[0] < end;
}

/* The registration whose address is key, or NULL. */
static symaddr_registration_t *owner_in(const symaddr_registry_snapshot_t *s, uint64_t key)
{
    size_t k = upper_in(s->mfirst, s->nm, key);
    if (k == 0)
        return NULL;
    const reg_chunk_t *c = s->mc[k - 1];
    size_t j = upper_in(c->key, c->n, key);
    return j > 0 && c->key[j - 1] == key ? c->r[j - 1] : NULL;
}

/* ---- changes ------------------------------------------------------------------------------ */

/* next's side = cur's with the chunk at t replaced by the n chunks of with (0, 1 or 2). */
static void side_replace(side_t next, const side_t cur, size_t t, int had, reg_chunk_t *const *with,
                         size_t n)
{
    size_t m = 0;
    for (size_t k = 0; k < t && k < *cur.n; k++)
        next.c[m++] = cur.c[k];
    for (size_t k = 0; k < n; k++)
        next.c[m++] = with[k];
    for (size_t k = t + (had ? 1 : 0); k < *cur.n; k++)
        next.c[m++] = cur.c[k];
    for (size_t k = 0; k < m; k++)
        next.first[k] = next.c[k]->key[0];
    *next.n = m;
}

/* Entry idx of a chunk with (key, end, r) put in at pos. */
static void entry_at(const reg_chunk_t *old, size_t pos, size_t idx, uint64_t key, uint64_t end,
                     symaddr_registration_t *r, uint64_t *k_p, uint64_t *e_p,
                     symaddr_registration_t **r_p)
{
    if (idx == pos) {
        *k_p = key, *e_p = end, *r_p = r;
        return;
    }
    size_t o = idx < pos ? idx : idx - 1;
    *k_p = old->key[o], *e_p = old->end[o], *r_p = old->r[o];
}

/* Put (key, end, r) into a side: the chunk it belongs to is copied with it (split in two when
 * full) into chunks of the pool, which go on made[*nmade]. The replaced chunk goes on *garbage.
 * 0: out of memory. */
static int side_insert(symaddr_registry_t *reg, side_t next, const side_t cur, uint64_t key,
                       uint64_t end, symaddr_registration_t *r, reg_chunk_t **garbage,
                       reg_chunk_t **made, int *nmade)
{
    size_t t;
    reg_chunk_t *old = chunk_of((const reg_chunk_t *const *)cur.c, cur.first, *cur.n, key, &t);
    size_t n = old ? old->n : 0, pos = old ? upper_in(old->key, n, key) : 0, m = n + 1;
    size_t parts = m > CHUNK ? 2 : 1, h = parts == 2 ? m / 2 : m;
    reg_chunk_t *with[2] = {chunk_take(reg), parts == 2 ? chunk_take(reg) : NULL};
    if (!with[0] || (parts == 2 && !with[1])) {
        for (int k = 0; k < 2; k++)
            if (with[k])
                chunk_drop(reg, with[k]);
        return 0;
    }
    with[0]->n = h;
    if (with[1])
        with[1]->n = m - h;
    for (size_t idx = 0; idx < m; idx++) {
        reg_chunk_t *c = idx < h ? with[0] : with[1];
        size_t at = idx < h ? idx : idx - h;
        entry_at(old, pos, idx, key, end, r, &c->key[at], &c->end[at], &c->r[at]);
    }
    side_replace(next, cur, t, old != NULL, with, parts);
    for (size_t k = 0; k < parts; k++)
        made[(*nmade)++] = with[k];
    if (old) {
        old->link = *garbage;
        *garbage = old;
    }
    return 1;
}

/* Take key out of a side (it is there): its chunk is copied without it (onto made[*nmade]), or
 * dropped when it held nothing else. 0: out of memory. */
static int side_remove(symaddr_registry_t *reg, side_t next, const side_t cur, uint64_t key,
                       reg_chunk_t **garbage, reg_chunk_t **made, int *nmade)
{
    size_t t;
    reg_chunk_t *old = chunk_of((const reg_chunk_t *const *)cur.c, cur.first, *cur.n, key, &t);
    size_t pos = upper_in(old->key, old->n, key) - 1;
    reg_chunk_t *c = NULL;
    if (old->n > 1) {
        if (!(c = chunk_take(reg)))
            return 0;
        made[(*nmade)++] = c;
        c->n = old->n - 1;
        for (size_t i = 0, o = 0; i < old->n; i++) {
            if (i == pos)
                continue;
            c->key[o] = old->key[i], c->end[o] = old->end[i], c->r[o] = old->r[i];
            o++;
        }
    }
    side_replace(next, cur, t, 1, &c, c ? 1 : 0);
    old->link = *garbage;
    *garbage = old;
    return 1;
}

/* The capacity the snapshot after s needs at most (a split adds a chunk to a side). A change
 * also takes at most two chunks a side from the pool. */
static size_t snap_need(const symaddr_registry_snapshot_t *s)
{
    return (s->na > s->nm ? s->na : s->nm) + 2;
}

/* Whether the pool holds n chunks, after allocating what it lacks. */
static bool pool_fill(symaddr_registry_t *reg, size_t n)
{
    while (reg->npool < n) {
        reg_chunk_t *c = malloc(sizeof(*c));
        if (!c)
            return false;
        chunk_drop(reg, c);
    }
    return true;
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
    if (j == i)
        return; /* nothing to forget, and freed may still be NULL */
    memmove(reg->freed + i, reg->freed + j, (reg->nfreed - j) * sizeof(*reg->freed));
    reg->nfreed -= j - i;
}

/* ---- the registry ------------------------------------------------------------------------- */

int symaddr_registry_init(symaddr_registry_t *reg)
{
    pthread_once(&membarrier_once, membarrier_setup);
    memset(reg, 0, sizeof(*reg));
    reg->reclaim_at = RECLAIM_EVERY;
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
    while (reg->garbage) {
        reg_chunk_t *c = reg->garbage;
        reg->garbage = c->link;
        free(c);
    }
    if (reg->cur) {
        for (size_t k = 0; k < reg->cur->na; k++)
            free(reg->cur->ac[k]);
        for (size_t k = 0; k < reg->cur->nm; k++)
            free(reg->cur->mc[k]);
    }
    while (reg->pool) {
        reg_chunk_t *c = reg->pool;
        reg->pool = c->link;
        free(c);
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
    size_t need = snap_need(reg->cur);
    if (!reg->spare || reg->spare->cap < need) {
        symaddr_registry_snapshot_t *s = snap_alloc(2 * need);
        if (s) {
            free(reg->spare);
            reg->spare = s;
        } else {
            st = SYMADDR_ERR_NO_MEMORY;
        }
    }
    if (st == SYMADDR_OK && !pool_fill(reg, 4)) /* an insert: two chunks a side */
        st = SYMADDR_ERR_NO_MEMORY;
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
    symaddr_registry_snapshot_t *cur = reg->cur, *next = NULL;
    reg_chunk_t *garbage = NULL, *made[4];
    int nmade = 0;
    if (overlaps_in(cur, base, end)) {
        st = SYMADDR_ERR_ALREADY_REGISTERED;
    } else if (!(next = snap_take(reg, snap_need(cur))) ||
               !side_insert(reg, side_of(next, 0), side_of(cur, 0), base, end, r, &garbage, made,
                            &nmade) ||
               !side_insert(reg, side_of(next, 1), side_of(cur, 1), (uintptr_t)r, 0, r, &garbage,
                            made, &nmade)) {
        /* undo: the new chunks back to the pool; the replaced ones are still cur's */
        st = SYMADDR_ERR_NO_MEMORY;
        while (nmade > 0)
            chunk_drop(reg, made[--nmade]);
        free(next);
    } else {
        next->count = cur->count + 1;
        publish(reg, next, garbage, made, nmade);
        freed_forget(reg, base, end);
    }
    pthread_mutex_unlock(&reg->write);
    return st;
}

symaddr_status_t symaddr_registry_remove(symaddr_registry_t *reg, symaddr_registration_t *r)
{
    symaddr_status_t st = SYMADDR_ERR_NOT_FOUND;

    pthread_mutex_lock(&reg->write);
    symaddr_registry_snapshot_t *cur = reg->cur;
    if (owner_in(cur, (uintptr_t)r) == r) {
        /* must not fail for a live r: without memory, wait for lookups to leave a retired
         * snapshot, whose chunks then come back (lookups are short and never wait) */
        symaddr_registry_snapshot_t *next = NULL;
        bool ready;
        for (;;) {
            if (!next)
                next = snap_take(reg, snap_need(cur));
            ready = next && pool_fill(reg, 2); /* a remove: one chunk a side */
            if (ready || (!reg->retired && !reg->garbage))
                break;
            sched_yield();
            reclaim(reg);
        }
        reg_chunk_t *garbage = NULL, *made[2];
        int nmade = 0;
        if (ready &&
            side_remove(reg, side_of(next, 0), side_of(cur, 0), r->map.range_base, &garbage, made,
                        &nmade) &&
            side_remove(reg, side_of(next, 1), side_of(cur, 1), (uintptr_t)r, &garbage, made,
                        &nmade)) {
            next->count = cur->count - 1;
            publish(reg, next, garbage, made, nmade);
            freed_add(reg, r->map.range_base);
            st = SYMADDR_OK;
        } else {
            free(next);
            st = SYMADDR_ERR_NO_MEMORY;
        }
    }
    pthread_mutex_unlock(&reg->write);
    return st;
}

symaddr_registration_t *symaddr_registry_find_in_(const symaddr_registry_snapshot_t *s,
                                                  const void *ptr)
{
    return find_in(s, (uint64_t)(uintptr_t)ptr);
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
    const symaddr_registry_snapshot_t *s = read_begin(reg, &t);
    symaddr_registration_t *found = owner_in(s, (uintptr_t)map);
    read_end(reg, t);
    return found;
}

size_t symaddr_registry_count(symaddr_registry_t *reg)
{
    unsigned t;
    size_t n = read_begin(reg, &t)->count;
    read_end(reg, t);
    return n;
}

symaddr_registration_t *symaddr_registry_last(symaddr_registry_t *reg)
{
    unsigned t;
    const symaddr_registry_snapshot_t *s = read_begin(reg, &t);
    symaddr_registration_t *r = NULL;
    if (s->na) {
        const reg_chunk_t *c = s->ac[s->na - 1];
        r = c->r[c->n - 1];
    }
    read_end(reg, t);
    return r;
}
