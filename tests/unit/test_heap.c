/* SPDX-License-Identifier: MIT */
/* Heap sub-allocator: alignment, first fit, exhaustion and coalescing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "maps/maps.h"

static symaddr_heap_t heap_new(size_t bytes)
{
    symaddr_heap_t h;
    memset(&h, 0, sizeof(h));
    h.bytes = bytes;
    h.cap = 2; /* small, so that releases grow the free list */
    h.free_list = malloc(sizeof(*h.free_list) * h.cap);
    h.free_list[0].off = 0;
    h.free_list[0].len = bytes;
    h.nfree = 1;
    return h;
}

static void test_reserve_release(void **state)
{
    symaddr_heap_t h = heap_new(4096);
    size_t off[16];
    (void)state;
    for (int i = 0; i < 16; i++) {
        assert_int_equal(symaddr_heap_reserve(&h, 1 + (size_t)i * 15, &off[i]), SYMADDR_OK);
        assert_int_equal(off[i], (size_t)i * 256); /* 256-byte aligned, first fit */
    }
    assert_int_equal(symaddr_heap_reserve(&h, 1, &off[0]), SYMADDR_ERR_NO_MEMORY);
    /* Free every other block: holes of 256 bytes, none fits 300. */
    for (int i = 0; i < 16; i += 2)
        symaddr_heap_release(&h, off[i], 1 + (size_t)i * 15);
    assert_int_equal(h.nfree, 8);
    size_t o;
    assert_int_equal(symaddr_heap_reserve(&h, 300, &o), SYMADDR_ERR_NO_MEMORY);
    /* Freeing the rest coalesces back into one block. */
    for (int i = 1; i < 16; i += 2)
        symaddr_heap_release(&h, off[i], 1 + (size_t)i * 15);
    assert_int_equal(h.nfree, 1);
    assert_int_equal(h.free_list[0].off, 0);
    assert_int_equal(h.free_list[0].len, 4096);
    assert_int_equal(symaddr_heap_reserve(&h, 4096, &o), SYMADDR_OK);
    assert_int_equal(o, 0);
    assert_int_equal(symaddr_heap_reserve(&h, SIZE_MAX, &o), SYMADDR_ERR_INVALID_SIZE);
    free(h.free_list);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve_release),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
