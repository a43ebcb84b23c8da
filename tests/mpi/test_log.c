/* SPDX-License-Identifier: MIT */
/* symaddr's log: SYMADDR_DEBUG=INFO prints what a context runs on and each collective's
 * algorithm when it changes, TRACE adds allocations, SYMADDR_DEBUG_SUBSYS filters, and
 * SYMADDR_DEBUG_FILE takes the lines; WARN, the default, prints nothing on a clean run. Lines
 * are caught through the config's logger. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

#define MAX_LINES 256

static struct {
    int n;
    char line[MAX_LINES][320];
} g_log;

static void catch_line(void *cookie, const char *line)
{
    (void)cookie;
    if (g_log.n < MAX_LINES)
        snprintf(g_log.line[g_log.n], sizeof(g_log.line[0]), "%s", line);
    g_log.n++;
}

/* How many caught lines contain text. */
static int lines_with(const char *text)
{
    int k = 0;
    for (int i = 0; i < g_log.n && i < MAX_LINES; i++)
        k += strstr(g_log.line[i], text) != NULL;
    return k;
}

static void set_env(const char *level, const char *subsys, const char *file)
{
    level ? setenv("SYMADDR_DEBUG", level, 1) : unsetenv("SYMADDR_DEBUG");
    subsys ? setenv("SYMADDR_DEBUG_SUBSYS", subsys, 1) : unsetenv("SYMADDR_DEBUG_SUBSYS");
    file ? setenv("SYMADDR_DEBUG_FILE", file, 1) : unsetenv("SYMADDR_DEBUG_FILE");
}

/* A context logging into g_log (or, with own_file, where the environment says). */
static symaddr_context_t *logged_context(int own_file)
{
    symaddr_config_t cfg;
    symaddr_context_t *ctx = NULL;
    symaddr_config_default(&cfg);
    if (!own_file)
        cfg.logger = catch_line;
    memset(&g_log, 0, sizeof(g_log));
    T_OK(NULL, symaddr_init(MPI_COMM_WORLD, &cfg, &ctx));
    return ctx;
}

/* A clean run's calls: an allocation, allreduces of 8 B (twice), 4 MiB and 8 B again, a free.
 * 8 B is Lamport and 4 MiB (past Lamport's largest, 2 MiB) two-shot on every backend. */
static void clean_run(symaddr_context_t *ctx)
{
    symaddr_provider_t *prov;
    symaddr_map_t *m;
    float *buf;
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &prov));
    T_OK(ctx, symaddr_symmetric_alloc(prov, 4 << 20, (void **)&buf, &m));
    T_OK(ctx, symaddr_allreduce(ctx, buf, buf, 2, SYMADDR_FLOAT32, SYMADDR_SUM, NULL));
    T_OK(ctx, symaddr_allreduce(ctx, buf, buf, 2, SYMADDR_FLOAT32, SYMADDR_SUM, NULL));
    T_OK(ctx, symaddr_allreduce(ctx, buf, buf, 1 << 20, SYMADDR_FLOAT32, SYMADDR_SUM, NULL));
    T_OK(ctx, symaddr_allreduce(ctx, buf, buf, 2, SYMADDR_FLOAT32, SYMADDR_SUM, NULL));
    T_OK(ctx, symaddr_stream_sync(ctx, NULL));
    T_OK(ctx, symaddr_symmetric_free(prov, buf));
}

/* A misspelled SYMADDR_* variable is named on rank 0 with the nearest known one, once per
 * process (the first init); the suite's own SYMADDR_TEST_* variables are not warned about.
 * Before, both were ignored without a word. Runs first: no init of this process came before. */
static void test_unknown_variable(void *u)
{
    (void)u;
    set_env(NULL, NULL, NULL);
    setenv("SYMADDR_HEAP_SIZ", "1M", 1);
    setenv("SYMADDR_FROBNICATE", "1", 1);
    setenv("SYMADDR_TEST_UNUSED", "1", 1);
    symaddr_context_t *ctx = logged_context(0);
    T_OK(ctx, symaddr_finalize(&ctx));
    int near = lines_with("SYMADDR_HEAP_SIZ is set but is not a variable of symaddr: did you "
                          "mean SYMADDR_HEAP_SIZE?");
    int far = lines_with("SYMADDR_FROBNICATE is set but is not a variable of symaddr; "
                         "symaddr-info -e lists them all");
    T_CHECK(near == (t_rank == 0) && far == (t_rank == 0) && lines_with("SYMADDR_TEST_") == 0 &&
                g_log.n == 2 * (t_rank == 0),
            "rank %d: %d lines, the misspelling in %d, the unknown name in %d; the first: %s",
            t_rank, g_log.n, near, far, g_log.line[0]);
    ctx = logged_context(0); /* once per process */
    T_OK(ctx, symaddr_finalize(&ctx));
    T_CHECK(g_log.n == 0, "a second init warned again: %s", g_log.line[0]);
    unsetenv("SYMADDR_HEAP_SIZ");
    unsetenv("SYMADDR_FROBNICATE");
    unsetenv("SYMADDR_TEST_UNUSED");
}

static void test_warn_is_quiet(void *u)
{
    (void)u;
    set_env(NULL, NULL, NULL);
    symaddr_context_t *ctx = logged_context(0);
    clean_run(ctx);
    T_OK(ctx, symaddr_finalize(&ctx));
    T_CHECK(g_log.n == 0, "WARN printed %d lines on a clean run, the first: %s", g_log.n,
            g_log.line[0]);
}

static void test_info_names_the_algorithm(void *u)
{
    (void)u;
    char prefix[128], host[64] = "";
    set_env("INFO", NULL, NULL);
    symaddr_context_t *ctx = logged_context(0);
    int node_rank = symaddr_node_rank(ctx), backend = symaddr_backend(ctx);
    clean_run(ctx);
    T_OK(ctx, symaddr_finalize(&ctx));
    gethostname(host, sizeof(host) - 1);
    if (strchr(host, '.'))
        *strchr(host, '.') = 0;
    snprintf(prefix, sizeof(prefix), "%s:%d:%d [%d] symaddr INFO ", host, (int)getpid(), t_rank,
             node_rank);
    T_CHECK(g_log.n > 0 && g_log.n < MAX_LINES, "%d lines", g_log.n);
    T_CHECK(lines_with(prefix) == g_log.n, "%d of %d lines start \"%s\"", lines_with(prefix),
            g_log.n, prefix);
    if (t_rank == 0)
        T_CHECK(lines_with("symaddr 0.") == 1 && lines_with("SYMADDR_DEBUG=INFO") == 1,
                "rank 0 names the version and the variables in force");
    T_CHECK(lines_with(backend == SYMADDR_BACKEND_CPU ? "backend cpu" : "backend ") == 1,
            "the backend, once");
    T_CHECK(lines_with("provider ipc: allocates here, maps with capabilities") == 1 &&
                lines_with(" load/store") >= 1,
            "the providers and their capabilities");
    /* 8 B, again (not printed), 4 MiB, 8 B (printed again) */
    T_CHECK(lines_with("allreduce 8 B float: lamport") == 2,
            "allreduce 8 B printed %d times, want 2 (once per change)",
            lines_with("allreduce 8 B float: lamport"));
    T_CHECK(lines_with("allreduce 4 MiB float: two-shot") == 1, "the 4 MiB allreduce's algorithm");
    /* the crossovers, once, in words where one is never taken (not SIZE_MAX's digits) */
    T_CHECK(lines_with("collectives: auto allreduce lamport to ") == 1 &&
                lines_with("by loads only never, ") + lines_with("by loads only from ") == 1 &&
                lines_with("copy engine never; ") + lines_with("copy engine from ") == 1 &&
                lines_with("18446744073709551615") == 0,
            "the auto allreduce's crossovers, once and readable");
    T_CHECK(lines_with("TRACE") == 0, "INFO printed TRACE lines");
}

static void test_trace_and_subsystems(void *u)
{
    (void)u;
    set_env("TRACE", "^COLL", NULL);
    symaddr_context_t *ctx = logged_context(0);
    clean_run(ctx);
    T_OK(ctx, symaddr_finalize(&ctx));
    T_CHECK(lines_with("TRACE symaddr_symmetric_alloc: 4194304 B from ipc") == 1 &&
                lines_with("TRACE symaddr_symmetric_free: ") == 1,
            "the allocation and the free, traced");
    T_CHECK(lines_with("handle exchange") >= 1, "the handle exchanges, traced");
    T_CHECK(lines_with("allreduce") == 0, "^COLL still printed %d allreduce lines",
            lines_with("allreduce"));
    set_env("TRACE", "COLL", NULL);
    ctx = logged_context(0);
    clean_run(ctx);
    T_OK(ctx, symaddr_finalize(&ctx));
    T_CHECK(lines_with("symaddr_symmetric_alloc") == 0 && lines_with("allreduce 8 B") == 2,
            "COLL alone: no allocation lines, the allreduce lines");
}

static void test_bad_values_refused(void *u)
{
    (void)u;
    static const char *const bad[][2] = {{"LOUD", NULL}, {"INFO", "COLL,NOPE"}};
    for (int k = 0; k < 2; k++) {
        symaddr_config_t cfg;
        symaddr_context_t *ctx = NULL;
        set_env(bad[k][0], bad[k][1], NULL);
        symaddr_config_default(&cfg);
        cfg.logger = catch_line;
        memset(&g_log, 0, sizeof(g_log));
        T_STATUS(NULL, symaddr_init(MPI_COMM_WORLD, &cfg, &ctx), SYMADDR_ERR_INVALID_ARG);
        T_CHECK(ctx == NULL);
        /* every rank can read why, without a context (before: "no context (NULL)") */
        T_CHECK(strstr(symaddr_last_error(NULL), k == 0 ? "SYMADDR_DEBUG='LOUD' is not valid"
                                                        : "SYMADDR_DEBUG_SUBSYS") != NULL,
                "symaddr_last_error(NULL): '%s'", symaddr_last_error(NULL));
        if (t_rank == 0)
            T_CHECK(lines_with(k == 0 ? "SYMADDR_DEBUG='LOUD' is not valid"
                                      : "SYMADDR_DEBUG_SUBSYS='COLL,NOPE' is not valid") == 1,
                    "the refusal names the variable: %s", g_log.line[0]);
    }
}

static void test_file(void *u)
{
    (void)u;
    char path[256], host[64] = "";
    set_env("INFO", NULL, "/tmp/symaddr-test-log-%h-%p.txt");
    symaddr_context_t *ctx = logged_context(1);
    clean_run(ctx);
    T_OK(ctx, symaddr_finalize(&ctx));
    gethostname(host, sizeof(host) - 1);
    snprintf(path, sizeof(path), "/tmp/symaddr-test-log-%s-%d.txt", host, (int)getpid());
    FILE *f = fopen(path, "r");
    T_CHECK(f != NULL, "no %s", path);
    int n = 0, algo = 0;
    char line[512];
    while (f && fgets(line, sizeof(line), f))
        n++, algo += strstr(line, "allreduce 8 B float: lamport") != NULL;
    if (f)
        fclose(f);
    unlink(path);
    T_CHECK(n >= 4 && algo == 2, "%s: %d lines, %d naming the 8 B allreduce", path, n, algo);
}

/* SYMADDR_DEBUG_FILE where another local user may plant names: a FIFO at the name does not
 * hold the job (before, it hung forever), a symbolic link is not followed (before, the file it
 * named gained the lines), a new file is the owner's alone (0600; before, 0644), and a pattern
 * longer than 255 characters is refused instead of cut. Each rank uses a private folder. */
static void test_file_safety(void *u)
{
    (void)u;
    char dir[] = "/tmp/symaddr-log-safety-XXXXXX", pattern[512], path[512], victim[512];
    T_CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    int pid = (int)getpid();
    snprintf(path, sizeof(path), "%s/fifo-%d", dir, pid);
    T_CHECK(mkfifo(path, 0600) == 0, "mkfifo");
    snprintf(pattern, sizeof(pattern), "%s/fifo-%%p", dir);
    set_env("INFO", NULL, pattern);
    alarm(120); /* a hang ends the test (SIGALRM) instead of the suite's timeout */
    symaddr_context_t *ctx = logged_context(1);
    clean_run(ctx);
    T_OK(ctx, symaddr_finalize(&ctx));
    alarm(0);
    unlink(path);

    snprintf(victim, sizeof(victim), "%s/victim", dir);
    int fd = open(victim, O_WRONLY | O_CREAT | O_EXCL, 0600);
    T_CHECK(fd >= 0, "victim");
    close(fd);
    snprintf(path, sizeof(path), "%s/link-%d", dir, pid);
    T_CHECK(symlink(victim, path) == 0, "symlink");
    snprintf(pattern, sizeof(pattern), "%s/link-%%p", dir);
    set_env("INFO", NULL, pattern);
    ctx = logged_context(1);
    clean_run(ctx);
    T_OK(ctx, symaddr_finalize(&ctx));
    struct stat st;
    T_CHECK(stat(victim, &st) == 0 && st.st_size == 0,
            "the file a planted link names gained %lld bytes", (long long)st.st_size);
    unlink(path);
    unlink(victim);

    snprintf(pattern, sizeof(pattern), "%s/new-%%p", dir);
    snprintf(path, sizeof(path), "%s/new-%d", dir, pid);
    set_env("INFO", NULL, pattern);
    ctx = logged_context(1);
    clean_run(ctx);
    T_OK(ctx, symaddr_finalize(&ctx));
    T_CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600 && st.st_size > 0,
            "a new log file: mode %o, %lld bytes", (unsigned)(st.st_mode & 0777),
            (long long)st.st_size);
    unlink(path);

    /* a file another user planted (root runs this part), and one of this user's that others
     * may read: neither is written */
    snprintf(pattern, sizeof(pattern), "%s/planted-%%p", dir);
    snprintf(path, sizeof(path), "%s/planted-%d", dir, pid);
    for (int k = 0; k < 2; k++) {
        if (k == 0 && geteuid() != 0)
            continue; /* only root can plant a file of another user's */
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
        T_CHECK(fd >= 0 && fchmod(fd, 0666) == 0 && (k == 1 || fchown(fd, 65534, 65534) == 0),
                "planted file");
        close(fd);
        set_env("INFO", NULL, pattern);
        ctx = logged_context(1);
        clean_run(ctx);
        T_OK(ctx, symaddr_finalize(&ctx));
        T_CHECK(stat(path, &st) == 0 && st.st_size == 0,
                "%s: the job's lines went into it (%lld bytes)",
                k == 0 ? "another user's file" : "a file others may read", (long long)st.st_size);
        unlink(path);
    }
    rmdir(dir);

    memset(pattern, 'x', 300);
    pattern[0] = '/';
    pattern[300] = 0;
    set_env(NULL, NULL, pattern);
    symaddr_config_t cfg;
    symaddr_config_default(&cfg);
    cfg.logger = catch_line;
    memset(&g_log, 0, sizeof(g_log));
    ctx = NULL;
    T_STATUS(NULL, symaddr_init(MPI_COMM_WORLD, &cfg, &ctx), SYMADDR_ERR_INVALID_ARG);
    if (t_rank == 0)
        T_CHECK(lines_with("SYMADDR_DEBUG_FILE") == 1, "the refusal names the variable: %s",
                g_log.line[0]);
    set_env(NULL, NULL, NULL);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    T_RUN(test_unknown_variable, NULL);
    T_RUN(test_warn_is_quiet, NULL);
    T_RUN(test_info_names_the_algorithm, NULL);
    T_RUN(test_trace_and_subsystems, NULL);
    T_RUN(test_bad_values_refused, NULL);
    T_RUN(test_file, NULL);
    T_RUN(test_file_safety, NULL);
    set_env(NULL, NULL, NULL);
    return t_finish();
}
