/* SPDX-License-Identifier: MIT */
/* Validation mode (SYMADDR_VALIDATE_ON) compares where each rank made a collective: a correct
 * program is never refused for it. Built three times, at -O0, -O2 and -O3 (tests/meson.build),
 * and run as one MPMD job whose binaries share a file name (the -O0 and the optimised builds
 * of one program):
 * - one source line that GCC's jump threading copies at -O2 and -O3 (a call between two tests
 *   of the same flag: ranks that took the branch return from one copy, the others from the
 *   other; refused as "a rank skipped a call" when places were code addresses);
 * - the same line in binaries built at different optimisations (refused when they shared a
 *   file name);
 * - and a rank that does skip a call is still refused, in every build: the place is the source
 *   line the header's macros pass. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

static volatile int g_touched;

static __attribute__((noinline)) void before(void) { g_touched += 1; }
static __attribute__((noinline)) void after(void) { g_touched += 2; }

/* The call GCC copies at -O2: one copy for the path through before(), one for the other. */
static __attribute__((noinline)) symaddr_status_t threaded(symaddr_context_t *ctx, int flag,
                                                           int32_t *x, int32_t *out, size_t n)
{
    if (flag)
        before();
    symaddr_status_t st = symaddr_allreduce(ctx, x, out, n, SYMADDR_INT32, SYMADDR_SUM, NULL);
    if (flag)
        after();
    return st;
}

static __attribute__((noinline)) symaddr_status_t threaded_bcast(symaddr_context_t *ctx, int root,
                                                                 int32_t *x, size_t n)
{
    if (root == t_rank)
        before();
    symaddr_status_t st = symaddr_broadcast(ctx, x, x, n, SYMADDR_INT32, root, NULL);
    if (root == t_rank)
        after();
    return st;
}

static symaddr_context_t *validating(void)
{
    symaddr_config_t cfg;
    symaddr_context_t *ctx;
    symaddr_config_default(&cfg);
    cfg.validate = SYMADDR_VALIDATE_ON;
    return T_INIT_OK(&cfg, &ctx) ? ctx : NULL;
}

/* Each rank in turn takes the branch; every call is OK with exact data. */
static void test_copied_call_site(void *u)
{
    (void)u;
    symaddr_context_t *ctx = validating();
    if (!ctx)
        return;
    const size_t n = 37;
    int32_t *x = t_alloc_i32(ctx, n, 10 * (t_rank + 1)), *out = t_alloc_i32(ctx, n, -7);
    const int32_t sum = 10 * t_size * (t_size + 1) / 2; /* of 10 (r + 1) over ranks */
    for (int flagged = 0; flagged < t_size; flagged++) {
        symaddr_status_t st = threaded(ctx, t_rank == flagged, x, out, n);
        T_CHECK(st == SYMADDR_OK, "allreduce, rank %d through before(): %s (%s)", flagged,
                symaddr_strerror(st), symaddr_last_error(ctx));
        if (st != SYMADDR_OK)
            break;
        T_CHECK(t_count_wrong(ctx, out, n, t_size, sum) == 0, "allreduce, rank %d flagged: wrong",
                flagged);
    }
    for (int root = 0; root < t_size; root++) {
        int32_t *b = t_alloc_i32(ctx, n, 1000 * (t_rank + 1));
        symaddr_status_t st = threaded_bcast(ctx, root, b, n);
        T_CHECK(st == SYMADDR_OK, "broadcast from %d: %s (%s)", root, symaddr_strerror(st),
                symaddr_last_error(ctx));
        T_CHECK(st != SYMADDR_OK || t_count_wrong(ctx, b, n, 1, 1000 * (root + 1)) == 0,
                "broadcast from %d: wrong", root);
        T_OK(ctx, symaddr_barrier(ctx, NULL));
        t_free_i32(ctx, b);
        if (st != SYMADDR_OK)
            break;
    }
    t_free_i32(ctx, out);
    t_free_i32(ctx, x);
    T_OK(ctx, symaddr_finalize(&ctx));
}

/* The last rank skips the first of two calls of one count and dtype, made on two lines:
 * MISMATCH on every rank, naming both places, and no data moves. */
static void test_skip_still_refused(void *u)
{
    (void)u;
    if (t_size < 2) {
        T_SKIP("needs 2 ranks");
        return;
    }
    symaddr_context_t *ctx = validating();
    if (!ctx)
        return;
    int32_t *x = t_alloc_i32(ctx, 8, t_rank), *out = t_alloc_i32(ctx, 8, -7);
    symaddr_status_t st;
    if (t_rank != t_size - 1)
        st = symaddr_allreduce(ctx, x, out, 8, SYMADDR_INT32, SYMADDR_SUM, NULL);
    else
        st = symaddr_allreduce(ctx, x, out, 8, SYMADDR_INT32, SYMADDR_SUM, NULL);
    T_CHECK(st == SYMADDR_ERR_MISMATCH, "a skipped call returned %s", symaddr_strerror(st));
    T_CHECK(strstr(symaddr_last_error(ctx), "test_sites.c:") != NULL &&
                strstr(symaddr_last_error(ctx), "skipped a call") != NULL,
            "the message names the source places: %s", symaddr_last_error(ctx));
    T_CHECK(t_count_wrong(ctx, out, 8, 1, -7) == 0, "recv changed by a refused call");
    t_free_i32(ctx, out);
    t_free_i32(ctx, x);
    T_OK(ctx, symaddr_finalize(&ctx));
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    T_RUN(test_copied_call_site, NULL);
    T_RUN(test_skip_still_refused, NULL);
    return t_finish();
}
