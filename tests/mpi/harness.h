/* SPDX-License-Identifier: MIT */
/* A small harness for tests that run as one MPI job: every rank runs every
 * case; a case fails if any rank's check fails, and passes only if at least
 * one check ran. Rank 0 prints the result of each case and a summary line.
 * Exit status: 0 all passed, 77 all skipped (meson's SKIP), 1 otherwise. */
#ifndef SYMADDR_TESTS_HARNESS_H
#define SYMADDR_TESTS_HARNESS_H

#include <ctype.h>
#include <dirent.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symaddr/symaddr.h"

static int t_rank, t_size, t_fails, t_checks, t_skipped_case;
static int t_passed, t_failed, t_skipped;
static int t_thread_level = MPI_THREAD_SINGLE; /* what MPI provided */
static char t_skip_reason[256];

static inline void t_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "[rank %d] %s:%d: ", t_rank, file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    t_fails++;
}

#define T_CHECK(cond, ...)                                                                         \
    do {                                                                                           \
        t_checks++;                                                                                \
        if (!(cond))                                                                               \
            t_fail(__FILE__, __LINE__, "check failed: " #cond " " __VA_ARGS__);                    \
    } while (0)

/* Status check with the context's error text on failure. */
#define T_STATUS(ctx, expr, want)                                                                  \
    do {                                                                                           \
        symaddr_status_t t_st_ = (expr);                                                           \
        t_checks++;                                                                                \
        if (t_st_ != (want))                                                                       \
            t_fail(__FILE__, __LINE__, "%s returned %s, wanted %s (%s)", #expr,                    \
                   symaddr_strerror(t_st_), symaddr_strerror(want), symaddr_last_error(ctx));      \
    } while (0)

#define T_OK(ctx, expr) T_STATUS(ctx, expr, SYMADDR_OK)

/* Skip the current case with a reason; every rank must agree to skip. */
#define T_SKIP(...)                                                                                \
    do {                                                                                           \
        t_skipped_case = 1;                                                                        \
        snprintf(t_skip_reason, sizeof(t_skip_reason), __VA_ARGS__);                               \
    } while (0)

/* Whether SYMADDR_TEST_CASES (names separated by white space; unset or empty: all) names it. */
static inline int t_wanted(const char *name)
{
    const char *only = getenv("SYMADDR_TEST_CASES");
    size_t n = strlen(name);
    if (!only || !*only)
        return 1;
    for (const char *p = strstr(only, name); p; p = strstr(p + 1, name))
        if ((p == only || isspace((unsigned char)p[-1])) &&
            (isspace((unsigned char)p[n]) || p[n] == 0))
            return 1;
    return 0;
}

static inline void t_run(const char *name, void (*fn)(void *), void *arg)
{
    int local[3], global[3];
    if (!t_wanted(name))
        return;
    t_fails = t_checks = t_skipped_case = 0;
    fn(arg);
    local[0] = t_fails;
    local[1] = t_checks;
    local[2] = t_skipped_case;
    MPI_Allreduce(local, global, 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (global[0] > 0) {
        t_failed++;
        if (t_rank == 0)
            printf("not ok - %s (%d failed checks)\n", name, global[0]);
    } else if (global[2] > 0) {
        t_skipped++;
        if (t_rank == 0)
            printf("skip   - %s: %s\n", name, t_skip_reason);
    } else if (global[1] == 0) {
        t_failed++;
        if (t_rank == 0)
            printf("not ok - %s (no check ran)\n", name);
    } else {
        t_passed++;
        if (t_rank == 0)
            printf("ok     - %s (%d checks)\n", name, global[1]);
    }
    fflush(stdout);
}

#define T_RUN(fn, arg) t_run(#fn, (void (*)(void *))(fn), (arg))

/* For a test whose threads call MPI at once; t_thread_level says what MPI gave. */
static inline void t_init_thread(int *argc, char ***argv, int required)
{
    MPI_Init_thread(argc, argv, required, &t_thread_level);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t_size);
}

static inline void t_init(int *argc, char ***argv) { t_init_thread(argc, argv, MPI_THREAD_SINGLE); }

static inline int t_finish(void)
{
    if (t_rank == 0) {
        printf("%d passed, %d failed, %d skipped\n", t_passed, t_failed, t_skipped);
        fflush(stdout);
    }
    int finalized;
    MPI_Finalized(&finalized); /* OpenSHMEM's shmem_finalize may have ended MPI already */
    if (!finalized)
        MPI_Finalize();
    if (t_failed)
        return 1;
    return t_passed == 0 && t_skipped > 0 ? 77 : 0;
}

/* Create a context on the backend the test runs on, or report why it cannot. */
/* symaddr_init with a setup deadline of at least T_INIT_TIMEOUT_MS, then cfg's own deadline for
 * the steps a test times: a loaded machine can take more than a short timeout to start 8 ranks,
 * and init's own deadline is not what those tests test. *ctx_p only on success. */
#define T_INIT_TIMEOUT_MS 60000u
static inline symaddr_status_t t_context_init(MPI_Comm comm, const symaddr_config_t *cfg,
                                              symaddr_context_t **ctx_p)
{
    symaddr_config_t c;
    symaddr_context_t *ctx = NULL;
    if (cfg)
        c = *cfg;
    else
        symaddr_config_default(&c);
    unsigned want = c.timeout_ms;
    if (c.timeout_ms < T_INIT_TIMEOUT_MS)
        c.timeout_ms = T_INIT_TIMEOUT_MS;
    symaddr_status_t st = symaddr_init(comm, &c, &ctx);
    if (st == SYMADDR_OK && want != c.timeout_ms &&
        (st = symaddr_timeout_set(ctx, want)) != SYMADDR_OK)
        symaddr_finalize(&ctx);
    if (st == SYMADDR_OK)
        *ctx_p = ctx;
    return st;
}

/* t_context_init over MPI_COMM_WORLD as a check: 0 (and a failed check) when there is no context.
 */
#define T_INIT_OK(cfg, ctx_p) t_init_ok_(__FILE__, __LINE__, (cfg), (ctx_p))
static inline int t_init_ok_(const char *file, int line, const symaddr_config_t *cfg,
                             symaddr_context_t **ctx_p)
{
    symaddr_status_t st = t_context_init(MPI_COMM_WORLD, cfg, ctx_p);
    t_checks++;
    if (st != SYMADDR_OK)
        t_fail(file, line, "symaddr_init returned %s", symaddr_strerror(st));
    return st == SYMADDR_OK;
}

static inline symaddr_context_t *t_context(MPI_Comm comm, const symaddr_config_t *cfg)
{
    symaddr_context_t *ctx = NULL;
    symaddr_status_t st = t_context_init(comm, cfg, &ctx);
    if (st == SYMADDR_ERR_UNSUPPORTED) {
        if (t_rank == 0)
            printf("skip   - all: the requested backend cannot run here (%s)\n"
                   "0 passed, 0 failed, 1 skipped\n",
                   symaddr_strerror(st));
        MPI_Finalize();
        exit(77);
    }
    if (st != SYMADDR_OK) {
        fprintf(stderr, "[rank %d] symaddr_init: %s\n", t_rank, symaddr_strerror(st));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return ctx;
}

/* An ipc allocation of n int32 holding rank-distinct values base + i. */
static inline int32_t *t_alloc_i32(symaddr_context_t *ctx, size_t n, int32_t base)
{
    symaddr_provider_t *ipc;
    symaddr_map_t *m;
    int32_t *p = NULL, *h = (int32_t *)malloc(n * sizeof(int32_t));
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &ipc));
    T_OK(ctx, symaddr_symmetric_alloc(ipc, n * sizeof(int32_t), (void **)&p, &m));
    for (size_t i = 0; i < n; i++)
        h[i] = base + (int32_t)i;
    if (p)
        T_OK(ctx, symaddr_memcpy(ctx, p, h, n * sizeof(int32_t)));
    free(h);
    return p;
}

static inline void t_free_i32(symaddr_context_t *ctx, int32_t *p)
{
    symaddr_provider_t *ipc;
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &ipc));
    T_OK(ctx, symaddr_symmetric_free(ipc, p));
}

/* Elements of p (n int32) other than mul * i + add. */
static inline int t_count_wrong(symaddr_context_t *ctx, const int32_t *p, size_t n, int32_t mul,
                                int32_t add)
{
    int32_t *h = (int32_t *)malloc(n * sizeof(int32_t));
    int bad = 0;
    T_OK(ctx, symaddr_stream_sync(ctx, NULL));
    T_OK(ctx, symaddr_memcpy(ctx, h, p, n * sizeof(int32_t)));
    for (size_t i = 0; i < n; i++)
        bad += h[i] != mul * (int32_t)i + add;
    free(h);
    return bad;
}

/* Entries of a directory whose names contain @p part (NULL: every entry), -1 if it cannot be
 * read. A shared directory (/dev/shm) is counted by symaddr's names only: other jobs make files
 * there too. */
static inline int t_count_named(const char *path, const char *part)
{
    DIR *d = opendir(path);
    int n = 0;
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.' && (!part || strstr(e->d_name, part));
    closedir(d);
    return n;
}

/* Entries of a directory of this process's own (/proc/self/fd), -1 if it cannot be read. */
static inline int t_count_entries(const char *path) { return t_count_named(path, NULL); }

/* A context over two simulated nodes of t_size / 2 ranks whose allreduce is algo, or NULL and a
 * SKIP when the number of ranks is odd. */
static inline symaddr_context_t *t_two_node_context_algo(symaddr_allreduce_algo_t algo)
{
    symaddr_config_t cfg;
    if (t_size % 2) {
        T_SKIP("needs an even number of ranks, have %d", t_size);
        return NULL;
    }
    symaddr_config_default(&cfg);
    cfg.node_size = t_size / 2;
    cfg.allreduce_algo = algo;
    return t_context(MPI_COMM_WORLD, &cfg);
}

/* The ranks on this rank's host: a simulated node never spans hosts, so across real hosts a
 * node of t_two_node_context holds the smaller of this and t_size / 2. */
static inline int t_host_size(void)
{
    MPI_Comm host;
    int n;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, t_rank, MPI_INFO_NULL, &host);
    MPI_Comm_size(host, &n);
    MPI_Comm_free(&host);
    return n;
}

static inline symaddr_context_t *t_two_node_context(void)
{
    return t_two_node_context_algo(SYMADDR_ALLREDUCE_AUTO);
}

#endif
