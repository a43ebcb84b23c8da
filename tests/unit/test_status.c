/* SPDX-License-Identifier: MIT */
/* Status strings and configuration defaults from the environment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "symaddr/symaddr.h"

static void test_strerror(void **state)
{
    (void)state;
    for (int s = 0; s >= SYMADDR_ERR_NOT_SHAREABLE; s--) {
        const char *t = symaddr_strerror((symaddr_status_t)s);
        assert_non_null(t);
        assert_true(strncmp(t, "SYMADDR_", 8) == 0);
        assert_null(strstr(t, "UNKNOWN"));
    }
    assert_non_null(strstr(symaddr_strerror((symaddr_status_t)-999), "UNKNOWN"));
    assert_string_equal(symaddr_last_error(NULL), "no context (NULL)");
}

static void test_config_env(void **state)
{
    symaddr_config_t cfg;
    (void)state;
    unsetenv("SYMADDR_BACKEND");
    unsetenv("SYMADDR_HEAP_SIZE");
    unsetenv("SYMADDR_NODE_SIZE");
    unsetenv("SYMADDR_TIMEOUT_MS");
    symaddr_config_default(&cfg);
    assert_int_equal(cfg.backend, SYMADDR_BACKEND_AUTO);
    assert_int_equal(cfg.device, -1);
    assert_int_equal(cfg.heap_bytes, (size_t)64 << 20);
    assert_int_equal(cfg.node_size, 0);
    assert_int_equal(cfg.timeout_ms, 60000);
    setenv("SYMADDR_BACKEND", "CPU", 1);
    setenv("SYMADDR_HEAP_SIZE", "3M", 1);
    setenv("SYMADDR_NODE_SIZE", "4", 1);
    setenv("SYMADDR_TIMEOUT_MS", "1500", 1);
    symaddr_config_default(&cfg);
    assert_int_equal(cfg.backend, SYMADDR_BACKEND_CPU);
    assert_int_equal(cfg.heap_bytes, (size_t)3 << 20);
    assert_int_equal(cfg.node_size, 4);
    assert_int_equal(cfg.timeout_ms, 1500);
    setenv("SYMADDR_BACKEND", "gpu9", 1);
    setenv("SYMADDR_HEAP_SIZE", "lots", 1);
    symaddr_config_default(&cfg);
    assert_true((int)cfg.backend < 0); /* symaddr_init reports it */
    assert_int_equal(cfg.heap_bytes, SIZE_MAX);
    assert_int_equal(symaddr_backend_built(SYMADDR_BACKEND_CPU), 1);
    assert_string_equal(symaddr_backend_name(SYMADDR_BACKEND_HIP), "hip");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_strerror),
        cmocka_unit_test(test_config_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
