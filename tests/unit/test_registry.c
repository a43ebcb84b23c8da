/* SPDX-License-Identifier: MIT */
/* Registry: sorted insert, overlap refusal, interior lookup, double-free
 * naming, map ownership, lookups from several threads at once, and a long random run
 * against a plain model (enough entries for chunks to split and empty). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "maps/registry.h"

static symaddr_registration_t *reg_new(uint64_t base, uint64_t bytes)
{
    symaddr_registration_t *r = calloc(1, sizeof(*r));
    r->map.range_base = base;
    r->map.range_bytes = bytes;
    return r;
}

static void test_insert_lookup(void **state)
{
    symaddr_registry_t reg;
    symaddr_registration_t *r[5], *found;
    (void)state;
    assert_int_equal(symaddr_registry_init(&reg), 0);
    /* Inserted out of order, looked up at first, interior and last byte. */
    const uint64_t bases[5] = {0x5000, 0x1000, 0x3000, 0x9001, 0x2000};
    for (int i = 0; i < 5; i++) {
        r[i] = reg_new(bases[i], 0x800 + (uint64_t)i);
        assert_int_equal(symaddr_registry_insert(&reg, r[i]), SYMADDR_OK);
    }
    for (int i = 0; i < 5; i++) {
        uint64_t last = bases[i] + 0x800 + (uint64_t)i - 1;
        assert_int_equal(symaddr_registry_find(&reg, (void *)(uintptr_t)bases[i], &found),
                         SYMADDR_OK);
        assert_ptr_equal(found, r[i]);
        assert_int_equal(symaddr_registry_find(&reg, (void *)(uintptr_t)(bases[i] + 0x3ff), &found),
                         SYMADDR_OK);
        assert_ptr_equal(found, r[i]);
        assert_int_equal(symaddr_registry_find(&reg, (void *)(uintptr_t)last, &found), SYMADDR_OK);
        assert_ptr_equal(found, r[i]);
        assert_int_equal(symaddr_registry_find(&reg, (void *)(uintptr_t)(last + 1), &found),
                         SYMADDR_ERR_NOT_FOUND);
        assert_ptr_equal(symaddr_registry_owner(&reg, &r[i]->map), r[i]);
    }
    assert_int_equal(symaddr_registry_find(&reg, (void *)0x10, &found), SYMADDR_ERR_NOT_FOUND);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(symaddr_registry_remove(&reg, r[i]), SYMADDR_OK);
        assert_null(symaddr_registry_owner(&reg, &r[i]->map));
        free(r[i]);
    }
    assert_int_equal(symaddr_registry_count(&reg), 0);
    symaddr_registry_fini(&reg);
}

static void test_overlap_refused(void **state)
{
    symaddr_registry_t reg;
    symaddr_registration_t *a = reg_new(0x1000, 0x100);
    (void)state;
    symaddr_registry_init(&reg);
    assert_int_equal(symaddr_registry_insert(&reg, a), SYMADDR_OK);
    const uint64_t clash[][2] = {{0x1000, 1}, {0xf00, 0x101}, {0x10ff, 0x10}, {0x800, 0x1000}};
    for (size_t i = 0; i < 4; i++) {
        symaddr_registration_t *b = reg_new(clash[i][0], clash[i][1]);
        assert_true(symaddr_registry_overlaps(&reg, clash[i][0], clash[i][1]));
        assert_int_equal(symaddr_registry_insert(&reg, b), SYMADDR_ERR_ALREADY_REGISTERED);
        free(b);
    }
    /* Touching ranges are fine. */
    symaddr_registration_t *before = reg_new(0xf00, 0x100), *after = reg_new(0x1100, 1);
    assert_int_equal(symaddr_registry_insert(&reg, before), SYMADDR_OK);
    assert_int_equal(symaddr_registry_insert(&reg, after), SYMADDR_OK);
    symaddr_registration_t *zero = reg_new(0x9000, 0);
    assert_int_equal(symaddr_registry_insert(&reg, zero), SYMADDR_ERR_INVALID_SIZE);
    free(zero);
    symaddr_registry_remove(&reg, a);
    symaddr_registry_remove(&reg, before);
    symaddr_registry_remove(&reg, after);
    free(a);
    free(before);
    free(after);
    symaddr_registry_fini(&reg);
}

static void test_double_free_named(void **state)
{
    symaddr_registry_t reg;
    symaddr_registration_t *a = reg_new(0x4000, 64), *found;
    (void)state;
    symaddr_registry_init(&reg);
    symaddr_registry_insert(&reg, a);
    assert_int_equal(symaddr_registry_remove(&reg, a), SYMADDR_OK);
    assert_int_equal(symaddr_registry_remove(&reg, a), SYMADDR_ERR_NOT_FOUND);
    assert_int_equal(symaddr_registry_find(&reg, (void *)0x4000, &found), SYMADDR_ERR_DOUBLE_FREE);
    assert_int_equal(symaddr_registry_find(&reg, (void *)0x4001, &found), SYMADDR_ERR_NOT_FOUND);
    /* Reusing the address makes it live again. */
    assert_int_equal(symaddr_registry_insert(&reg, a), SYMADDR_OK);
    assert_int_equal(symaddr_registry_find(&reg, (void *)0x4000, &found), SYMADDR_OK);
    symaddr_registry_remove(&reg, a);
    free(a);
    symaddr_registry_fini(&reg);
}

#define NREG 10000
#define NTHREADS 4

typedef struct {
    symaddr_registry_t *reg;
    symaddr_registration_t **r;
    int bad;
} lookup_arg_t;

static void *lookup_worker(void *p)
{
    lookup_arg_t *a = p;
    for (int i = 0; i < NREG; i++) {
        symaddr_registration_t *found;
        int k = (i * 7919) % NREG;
        void *ptr = (void *)(uintptr_t)(a->r[k]->map.range_base + (uint64_t)(i % 100));
        if (symaddr_registry_find(a->reg, ptr, &found) != SYMADDR_OK || found != a->r[k])
            a->bad++;
    }
    return NULL;
}

static void test_many_concurrent(void **state)
{
    symaddr_registry_t reg;
    symaddr_registration_t **r = malloc(sizeof(*r) * NREG);
    pthread_t th[NTHREADS];
    lookup_arg_t args[NTHREADS];
    (void)state;
    symaddr_registry_init(&reg);
    for (int i = 0; i < NREG; i++) {
        r[i] = reg_new(0x100000 + (uint64_t)((i * 104729) % NREG) * 0x1000, 100);
        assert_int_equal(symaddr_registry_insert(&reg, r[i]), SYMADDR_OK);
    }
    for (int t = 0; t < NTHREADS; t++) {
        args[t] = (lookup_arg_t){&reg, r, 0};
        pthread_create(&th[t], NULL, lookup_worker, &args[t]);
    }
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(args[t].bad, 0);
    }
    for (int i = 0; i < NREG; i++) {
        assert_int_equal(symaddr_registry_remove(&reg, r[i]), SYMADDR_OK);
        free(r[i]);
    }
    free(r);
    symaddr_registry_fini(&reg);
}

/* A double free is named however many other frees came between. */
static void test_double_free_late(void **state)
{
    symaddr_registry_t reg;
    symaddr_registration_t *a = reg_new(0x4000, 64), *found;
    (void)state;
    symaddr_registry_init(&reg);
    symaddr_registry_insert(&reg, a);
    symaddr_registry_remove(&reg, a);
    for (int i = 0; i < 1000; i++) {
        symaddr_registration_t *o = reg_new(0x100000 + (uint64_t)i * 0x1000, 64);
        assert_int_equal(symaddr_registry_insert(&reg, o), SYMADDR_OK);
        assert_int_equal(symaddr_registry_remove(&reg, o), SYMADDR_OK);
        free(o);
    }
    assert_int_equal(symaddr_registry_find(&reg, (void *)0x4000, &found), SYMADDR_ERR_DOUBLE_FREE);
    free(a);
    symaddr_registry_fini(&reg);
}

typedef struct {
    symaddr_registry_t *reg;
    symaddr_registration_t **live;
    int stop, bad;
    long lookups;
} spin_arg_t;

static void *spin_lookups(void *p)
{
    spin_arg_t *a = p;
    for (long i = 0; !__atomic_load_n(&a->stop, __ATOMIC_RELAXED); i++) {
        symaddr_registration_t *found;
        int k = (int)(i % 16);
        if (symaddr_registry_lookup(a->reg, (void *)(uintptr_t)(a->live[k]->map.range_base + 5),
                                    &found) != SYMADDR_OK ||
            found != a->live[k])
            a->bad++;
        a->lookups++;
    }
    return NULL;
}

/* Lookups spinning on 4 threads never hold up allocation and free: 20,000 insert/remove
 * pairs finish (a reader-preferring lock let a writer through about 300 times a second). */
static void test_writers_not_starved(void **state)
{
    symaddr_registry_t reg;
    symaddr_registration_t *live[16], *churn = reg_new(0x900000, 4096);
    pthread_t th[NTHREADS];
    spin_arg_t args[NTHREADS];
    (void)state;
    symaddr_registry_init(&reg);
    for (int i = 0; i < 16; i++) {
        live[i] = reg_new(0x100000 + (uint64_t)i * 0x10000, 0x1000);
        assert_int_equal(symaddr_registry_insert(&reg, live[i]), SYMADDR_OK);
    }
    for (int t = 0; t < NTHREADS; t++) {
        args[t] = (spin_arg_t){&reg, live, 0, 0, 0};
        pthread_create(&th[t], NULL, spin_lookups, &args[t]);
    }
    for (int i = 0; i < 20000; i++) {
        assert_int_equal(symaddr_registry_insert(&reg, churn), SYMADDR_OK);
        assert_int_equal(symaddr_registry_remove(&reg, churn), SYMADDR_OK);
    }
    for (int t = 0; t < NTHREADS; t++) {
        __atomic_store_n(&args[t].stop, 1, __ATOMIC_RELAXED);
        pthread_join(th[t], NULL);
        assert_int_equal(args[t].bad, 0);
        assert_true(args[t].lookups > 0);
    }
    for (int i = 0; i < 16; i++) {
        symaddr_registry_remove(&reg, live[i]);
        free(live[i]);
    }
    free(churn);
    symaddr_registry_fini(&reg);
}

/* Random inserts and removes of ranges in a space of SLOTS, checked after each against a plain
 * array: every lookup, every owner, overlaps, the count and the last entry. */
/* Ranges made in address order (as a heap makes them) fill their chunks instead of halving
 * them; the last range of the address space is found to its last byte, and nothing past it. */
static void test_in_order_and_top(void **state)
{
    enum { N = 300 };
    symaddr_registry_t reg;
    symaddr_registration_t *r[N + 1], *found;
    (void)state;
    assert_int_equal(symaddr_registry_init(&reg), 0);
    for (int i = 0; i < N; i++) {
        r[i] = reg_new(0x100000 + (uint64_t)i * 0x100, 0x100);
        assert_int_equal(symaddr_registry_insert(&reg, r[i]), SYMADDR_OK);
    }
    r[N] = reg_new(UINT64_MAX - 0x100, 0x100); /* ends at UINT64_MAX, exclusive */
    assert_int_equal(symaddr_registry_insert(&reg, r[N]), SYMADDR_OK);
    for (int i = 0; i < N; i++) {
        uint64_t b = 0x100000 + (uint64_t)i * 0x100;
        assert_int_equal(symaddr_registry_lookup(&reg, (void *)(uintptr_t)(b + 0xff), &found),
                         SYMADDR_OK);
        assert_ptr_equal(found, r[i]);
        assert_ptr_equal(symaddr_registry_owner(&reg, &r[i]->map), r[i]);
    }
    assert_int_equal(symaddr_registry_lookup(&reg, (void *)(uintptr_t)(UINT64_MAX - 1), &found),
                     SYMADDR_OK);
    assert_ptr_equal(found, r[N]);
    assert_int_equal(symaddr_registry_lookup(&reg, (void *)(uintptr_t)UINT64_MAX, &found),
                     SYMADDR_ERR_NOT_FOUND);
    assert_int_equal(
        symaddr_registry_lookup(&reg, (void *)(uintptr_t)(0x100000 + N * 0x100), &found),
        SYMADDR_ERR_NOT_FOUND);
    for (int i = 0; i <= N; i++) {
        assert_int_equal(symaddr_registry_remove(&reg, r[i]), SYMADDR_OK);
        free(r[i]);
    }
    assert_int_equal(symaddr_registry_count(&reg), 0);
    symaddr_registry_fini(&reg);
}

static void test_against_model(void **state)
{
    enum { SLOTS = 3000, STEPS = 40000 };
    symaddr_registry_t reg;
    symaddr_registration_t *live[SLOTS] = {0}, *found;
    unsigned x = 12345;
    size_t n = 0;
    (void)state;
    assert_int_equal(symaddr_registry_init(&reg), 0);
    for (int step = 0; step < STEPS; step++) {
        x = x * 1103515245u + 12345u;
        size_t k = (x >> 8) % SLOTS;
        uint64_t base = 0x10000 + (uint64_t)k * 0x100, bytes = 1 + (x >> 20) % 0xff;
        /* fill past a few chunks first, then insert and remove evenly */
        int grow = step < STEPS / 4 ? (x & 7) != 0 : (x & 1);
        if (!live[k] && grow) {
            live[k] = reg_new(base, bytes);
            assert_int_equal(symaddr_registry_reserve(&reg), SYMADDR_OK);
            assert_int_equal(symaddr_registry_insert(&reg, live[k]), SYMADDR_OK);
            n++;
        } else if (live[k] && !grow) {
            assert_int_equal(symaddr_registry_remove(&reg, live[k]), SYMADDR_OK);
            assert_null(symaddr_registry_owner(&reg, &live[k]->map));
            free(live[k]);
            live[k] = NULL;
            n--;
        }
        assert_int_equal(symaddr_registry_count(&reg), n);
        if (step % 97 == 0 || step > STEPS - 100) { /* a full check now and then */
            symaddr_registration_t *last = NULL;
            for (size_t j = 0; j < SLOTS; j++) {
                uint64_t b = 0x10000 + (uint64_t)j * 0x100;
                if (live[j]) {
                    last = live[j];
                    assert_int_equal(symaddr_registry_lookup(&reg, (void *)(uintptr_t)b, &found),
                                     SYMADDR_OK);
                    assert_ptr_equal(found, live[j]);
                    uint64_t in = b + live[j]->map.range_bytes - 1;
                    assert_int_equal(symaddr_registry_lookup(&reg, (void *)(uintptr_t)in, &found),
                                     SYMADDR_OK);
                    assert_ptr_equal(found, live[j]);
                    assert_ptr_equal(symaddr_registry_owner(&reg, &live[j]->map), live[j]);
                    assert_true(symaddr_registry_overlaps(&reg, b, 1));
                } else {
                    assert_int_equal(symaddr_registry_lookup(&reg, (void *)(uintptr_t)b, &found),
                                     SYMADDR_ERR_NOT_FOUND);
                    assert_false(symaddr_registry_overlaps(&reg, b, 1));
                }
                if (live[j] && live[j]->map.range_bytes < 0xff) { /* the gap after a range */
                    uint64_t gap = b + live[j]->map.range_bytes;
                    assert_false(symaddr_registry_overlaps(&reg, gap, b + 0x100 - gap));
                    /* one byte more reaches the next slot's range, if it is live */
                    assert_int_equal(symaddr_registry_overlaps(&reg, gap, b + 0x101 - gap),
                                     j + 1 < SLOTS && live[j + 1] != NULL);
                }
            }
            assert_ptr_equal(symaddr_registry_last(&reg), last);
        }
    }
    for (size_t j = 0; j < SLOTS; j++)
        if (live[j]) {
            assert_int_equal(symaddr_registry_remove(&reg, live[j]), SYMADDR_OK);
            free(live[j]);
        }
    assert_int_equal(symaddr_registry_count(&reg), 0);
    assert_null(symaddr_registry_last(&reg));
    symaddr_registry_fini(&reg);
}

/* A lookup whose thread stops inside it (preempted, here a reader slot left showing the
 * snapshot it read) keeps that snapshot and its chunks readable, and nothing else: the changes
 * meanwhile free and reuse the rest, so that memory stays bounded (with the slot showing an
 * epoch, every snapshot since stayed: 2000 changes held 1936 snapshots and every chunk they
 * replaced, and each change allocated anew). Reclamation stays amortised:
 * at most one reclaim (a membarrier) per 64 changes, not one per change. Once the lookup
 * leaves, the next reclaims free what it held. */
static void test_reclaim_amortised_under_a_stuck_lookup(void **state)
{
    symaddr_registry_t reg;
    enum { CHANGES = 2000 };
    (void)state;
    symaddr_registry_init(&reg);
    symaddr_registration_t *keep = reg_new(0x10000, 100);
    assert_int_equal(symaddr_registry_insert(&reg, keep), SYMADDR_OK);
    /* the last slot: no thread of this test takes it */
    struct symaddr_registry_reader *stuck = &reg.readers[SYMADDR_REGISTRY_SLOTS - 1];
    const symaddr_registry_snapshot_t *held = __atomic_load_n(&reg.cur, __ATOMIC_SEQ_CST);
    __atomic_store_n(&stuck->held, held, __ATOMIC_SEQ_CST);
    uint64_t before = reg.reclaims;
    for (int i = 0; i < CHANGES / 2; i++) {
        symaddr_registration_t *r = reg_new(0x100000 + (uint64_t)i * 0x1000, 100);
        assert_int_equal(symaddr_registry_insert(&reg, r), SYMADDR_OK);
        assert_int_equal(symaddr_registry_remove(&reg, r), SYMADDR_OK);
        free(r);
    }
    uint64_t during = reg.reclaims - before;
    assert_true(during <= CHANGES / 64 + 1);
    assert_true(reg.nretired <= 64 + 1); /* the held one, and those since the last reclaim */
    /* a chunk per change and side at most until the pool fills, then the pool's */
    /* replaced chunks kept: the held snapshot's, and those since the last reclaim */
    assert_true(reg.ngarbage <= 2 + 4 * 64);
    /* what the stuck lookup reads is intact (ASan and valgrind see a freed chunk read) */
    assert_ptr_equal(symaddr_registry_find_in_(held, (void *)0x10010), keep);
    __atomic_store_n(&stuck->held, NULL, __ATOMIC_SEQ_CST);
    for (int i = 0; i < 2 * 64; i++) {
        symaddr_registration_t *r = reg_new(0x100000 + (uint64_t)i * 0x1000, 100);
        assert_int_equal(symaddr_registry_insert(&reg, r), SYMADDR_OK);
        assert_int_equal(symaddr_registry_remove(&reg, r), SYMADDR_OK);
        free(r);
    }
    assert_true(reg.nretired < 2 * 64); /* the lookup left: what it held is gone */
    symaddr_registration_t *found;
    assert_int_equal(symaddr_registry_lookup(&reg, (void *)0x10010, &found), SYMADDR_OK);
    assert_ptr_equal(found, keep);
    assert_int_equal(symaddr_registry_remove(&reg, keep), SYMADDR_OK);
    free(keep);
    symaddr_registry_fini(&reg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_insert_lookup),
        cmocka_unit_test(test_overlap_refused),
        cmocka_unit_test(test_double_free_named),
        cmocka_unit_test(test_many_concurrent),
        cmocka_unit_test(test_double_free_late),
        cmocka_unit_test(test_writers_not_starved),
        cmocka_unit_test(test_in_order_and_top),
        cmocka_unit_test(test_against_model),
        cmocka_unit_test(test_reclaim_amortised_under_a_stuck_lookup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
