/* SPDX-License-Identifier: MIT */
/* The collectives' f16/bf16 conversions (lib/device/coll_convert.h, the cpu build) against
 * references: the compiler's _Float16 for f16, a plain round-to-nearest-even for bf16. f16 to
 * f32 and bf16 to f32 are checked for every input; f32 to f16 and bf16 for every f32 near a
 * rounding boundary (each representable value, each midpoint and the floats either side of
 * it) and for 2^24 more spread over every exponent. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "symaddr/device.h"
#include "coll_convert.h"

static float fbits(uint32_t u) { return symaddr_f32_of_bits_(u); }
static uint32_t bits(float f) { return symaddr_bits_of_f32_(f); }

/* The rule for NaNs, which IEEE leaves open (x86's): quiet, the sign and the payload's top bits
 * kept. */
static uint16_t f16_nan(uint32_t u)
{
    return (uint16_t)(((u >> 16) & 0x8000u) | 0x7e00u | ((u >> 13) & 0x1ffu));
}
static uint16_t bf16_nan(uint32_t u) { return (uint16_t)((u >> 16) | 0x40u); }
static int is_nan(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

/* bf16 by definition: the nearer of the two bf16 values around x, ties to the even one. */
static uint16_t bf16_ref(uint32_t u)
{
    if (is_nan(u))
        return bf16_nan(u);
    uint16_t lo = (uint16_t)(u >> 16), hi = (uint16_t)(lo + 1);
    uint32_t rest = u & 0xffffu;
    if (rest > 0x8000u || (rest == 0x8000u && (lo & 1)))
        return hi; /* carries into the exponent when it must: to inf past the largest */
    return lo;
}

static long checked;

static void check_f32(uint32_t u)
{
    float f = fbits(u);
    uint16_t want_bf = bf16_ref(u), got_bf = f32_to_bf16(f);
    if (got_bf != want_bf)
        fail_msg("f32_to_bf16(0x%08x) = 0x%04x, want 0x%04x", u, got_bf, want_bf);
#if defined(__FLT16_MAX__)
    _Float16 h = (_Float16)f;
    uint16_t want;
    memcpy(&want, &h, sizeof(want));
    if (is_nan(u))
        want = f16_nan(u);
    uint16_t got = f32_to_f16(f);
    if (got != want)
        fail_msg("f32_to_f16(0x%08x = %.9g) = 0x%04x, want 0x%04x", u, (double)f, got, want);
#endif
    checked++;
}

/* f32 to either: every f32 within 2 ulps of an f16 value, of a midpoint between two, and of a
 * bf16 boundary; then a spread of 2^24 (a stride through all 2^32 patterns). */
static void test_from_f32(void **state)
{
    (void)state;
    for (uint32_t s = 0; s < 2; s++)
        for (uint32_t h = 0; h < 0x7c00u; h++) {
            uint16_t hb = (uint16_t)(h | s << 15);
#if defined(__FLT16_MAX__)
            _Float16 a, b;
            memcpy(&a, &hb, 2);
            uint16_t hn = (uint16_t)(hb + 1);
            memcpy(&b, &hn, 2);
            double mid = ((double)a + (double)b) / 2; /* exact in a float: 12 bits */
            uint32_t points[2] = {bits((float)a), bits((float)mid)};
#else
            uint32_t points[2] = {bits(f16_to_f32(hb)), 0};
#endif
            for (int k = 0; k < 2; k++)
                for (int d = -2; d <= 2; d++)
                    check_f32(points[k] + (uint32_t)d);
        }
    for (uint32_t hi = 0; hi < 0x10000u; hi++)
        for (int d = -2; d <= 2; d++)
            check_f32((hi << 16 | 0x8000u) + (uint32_t)d);
    for (uint64_t u = 0; u < (1ull << 32); u += 257)
        check_f32((uint32_t)u);
    check_f32(0x7f800000u);
    check_f32(0xff800000u);
    check_f32(0x7fc00000u);
    check_f32(0xffa00001u);
    print_message("%ld f32 values checked\n", checked);
#if !defined(__FLT16_MAX__)
    skip(); /* bf16 was checked; f16 needs the compiler's _Float16 as its reference */
#endif
}

static void test_to_f32(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        uint32_t got = bits(bf16_to_f32((uint16_t)h));
        assert_int_equal(got, h << 16);
        got = bits(f16_to_f32((uint16_t)h));
        if ((h & 0x7fffu) > 0x7c00u) { /* NaN: quiet, sign and payload kept */
            assert_int_equal(got, (h & 0x8000u) << 16 | 0x7fc00000u | (h & 0x3ffu) << 13);
            continue;
        }
#if defined(__FLT16_MAX__)
        _Float16 x;
        uint16_t hb = (uint16_t)h;
        memcpy(&x, &hb, 2);
        if (got != bits((float)x))
            fail_msg("f16_to_f32(0x%04x) = 0x%08x, want 0x%08x", h, got, bits((float)x));
        /* and back: every f16 value survives the round trip */
        assert_int_equal(f32_to_f16(fbits(got)), h);
#endif
    }
}

/* The runs the tiles convert (F16C on x86 cpus that have it) give the scalar functions' bits:
 * every f16, and f32 values around every f16 value and midpoint, NaNs and infinities. */
static void test_runs(void **state)
{
    (void)state;
    static uint16_t h[65536], h2[65536 * 5];
    static float f[65536], g[65536 * 5];
    for (uint32_t i = 0; i < 65536; i++)
        h[i] = (uint16_t)i;
    f16_to_f32_n(h, f, 65536);
    for (uint32_t i = 0; i < 65536; i++)
        if (bits(f[i]) != bits(f16_to_f32(h[i])))
            fail_msg("f16_to_f32_n at 0x%04x: 0x%08x, the scalar 0x%08x", i, bits(f[i]),
                     bits(f16_to_f32(h[i])));
    int n = 0;
    for (uint32_t i = 0; i < 65536; i++)
        for (int d = -2; d <= 2; d++) /* each value, and the floats around its midpoint */
            g[n++] = fbits(bits(f16_to_f32(h[i])) + (d ? 0x1000u + (uint32_t)d : 0));
    f32_to_f16_n(g, h2, n);
    for (int i = 0; i < n; i++)
        if (h2[i] != f32_to_f16(g[i]))
            fail_msg("f32_to_f16_n of 0x%08x: 0x%04x, the scalar 0x%04x", bits(g[i]), h2[i],
                     f32_to_f16(g[i]));
    /* bf16: every bf16, and f32 values around every bf16 boundary, NaNs included */
    static float fb[65536 * 3];
    static uint16_t hb[65536 * 3];
    bf16_to_f32_n(h, f, 65536);
    for (uint32_t i = 0; i < 65536; i++)
        if (bits(f[i]) != i << 16)
            fail_msg("bf16_to_f32_n at 0x%04x: 0x%08x", i, bits(f[i]));
    n = 0;
    for (uint32_t i = 0; i < 65536; i++)
        for (int d = -1; d <= 1; d++)
            fb[n++] = fbits((i << 16 | 0x8000u) + (uint32_t)d);
    f32_to_bf16_n(fb, hb, n);
    for (int i = 0; i < n; i++)
        if (hb[i] != bf16_ref(bits(fb[i])))
            fail_msg("f32_to_bf16_n of 0x%08x: 0x%04x, want 0x%04x", bits(fb[i]), hb[i],
                     bf16_ref(bits(fb[i])));
#if defined(SYMADDR_CVT_F16C_)
    print_message("runs: f16 %s F16C, bf16 %s AVX2\n", symaddr_have_f16c_() ? "by" : "without",
                  symaddr_have_avx2_() ? "by" : "without");
#endif
}

/* The one-pass sums of rows (the cpu's f16 and bf16 allreduce tiles) give the bits of
 * converting each row, adding the rows in order and converting the sum back: 1 to 8 rows of every
 * kind of value, NaNs (one in eight), infinities and subnormals included, at an odd offset; f32
 * rows alike. Of an odd length they do the whole lanes and leave the rest untouched. Summing the
 * rows in another order fails it. */
static void test_sum_rows(void **state)
{
    (void)state;
    enum { ROWS = 8, LEN = 1001, BASE = 3, LANES = LEN / 8 * 8 };
    static uint16_t data[ROWS][BASE + LEN];
    static float acc[LEN];
    static uint16_t h16[LEN];
    const uint16_t *src[ROWS];
    uint32_t x = 12345;
    for (int q = 0; q < ROWS; q++) {
        for (int i = 0; i < BASE + LEN; i++) {
            x = x * 1103515245u + 12345u;
            data[q][i] = (uint16_t)(x >> 16);
            if ((x & 7) == 0) /* a NaN of either format, payload and sign from x */
                data[q][i] |= 0x7fc0u | 0x7e00u;
        }
        src[q] = data[q];
    }
    for (int f16 = 0; f16 < 2; f16++)
        for (int m = 1; m <= ROWS; m++) {
            h16[LANES] = 0x1234;
            int done =
                f16 ? f16_sum_rows(h16, src, m, BASE, LEN) : bf16_sum_rows(h16, src, m, BASE, LEN);
            if (!done)
                continue; /* no one-pass sum on this cpu: the tiles add a row at a time */
            assert_int_equal(done, LANES);
            assert_int_equal(h16[LANES], 0x1234);
            for (int i = 0; i < done; i++) {
                float want = f16 ? f16_to_f32(src[0][BASE + i]) : bf16_to_f32(src[0][BASE + i]);
                for (int q = 1; q < m; q++)
                    want += f16 ? f16_to_f32(src[q][BASE + i]) : bf16_to_f32(src[q][BASE + i]);
                uint16_t w16 = f16 ? f32_to_f16(want) : f32_to_bf16(want);
                if (h16[i] != w16)
                    fail_msg("%s_sum_rows of %d rows at %d: 0x%04x, row by row 0x%04x",
                             f16 ? "f16" : "bf16", m, i, h16[i], w16);
            }
        }
    /* f32 rows: pairs of the same values as bits of floats */
    static float fdata[ROWS][BASE + LEN];
    const float *fsrc[ROWS];
    for (int q = 0; q < ROWS; q++) {
        for (int i = 0; i < BASE + LEN; i++)
            fdata[q][i] = fbits((uint32_t)data[q][i] << 16 | data[(q + 1) % ROWS][i]);
        fsrc[q] = fdata[q];
    }
    for (int m = 1; m <= ROWS; m++) {
        acc[LANES] = 1.5f;
        int done = f32_sum_rows(acc, fsrc, m, BASE, LEN);
        if (!done)
            continue;
        assert_int_equal(done, LANES);
        assert_true(acc[LANES] == 1.5f);
        for (int i = 0; i < done; i++) {
            float want = fsrc[0][BASE + i];
            for (int q = 1; q < m; q++)
                want += fsrc[q][BASE + i];
            if (bits(acc[i]) != bits(want))
                fail_msg("f32_sum_rows of %d rows at %d: 0x%08x, row by row 0x%08x", m, i,
                         bits(acc[i]), bits(want));
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_to_f32),
        cmocka_unit_test(test_from_f32),
        cmocka_unit_test(test_runs),
        cmocka_unit_test(test_sum_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
