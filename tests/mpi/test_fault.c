/* SPDX-License-Identifier: MIT */
/* A rank dies (SIGKILL) at a chosen point; the survivors must come back with an error within
 * twice the timeout, not hang. Points: before symaddr_init, while symaddr_init builds the
 * descriptor mesh, during an allocation's descriptor exchange, before a free, before finalize, and
 * mid- collective (then also a signal wait). Each survivor writes "<what> <status> <milliseconds>"
 * to DIR/rank-N; tests/fault.sh checks the files and that nothing of symaddr's outlives the
 * job. Run as: test_fault DIR POINT. The victims are rank 1, or the ranks SYMADDR_TEST_VICTIMS
 * lists ("2 3": every rank of a host, tests/hosts/suite.sh); SYMADDR_TEST_CRASH names a
 * survivor that crashes there instead (tests/check-fault-rerun). */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"
#include "symaddr/device.h"
#include "symaddr/symaddr.h"

/* The deadline under test: fault.sh passes it (SYMADDR_TEST_FAULT_TIMEOUT_MS) and bounds each
 * survivor's return by a multiple of it, long enough that a loaded machine's scheduling delay
 * cannot reach the bound (1000 ms with a bound of 2500 failed by 9 ms under ASan beside
 * another CI). */
static unsigned timeout_ms(void)
{
    const char *v = getenv("SYMADDR_TEST_FAULT_TIMEOUT_MS");
    long ms = v ? strtol(v, NULL, 10) : 0;
    return ms > 0 ? (unsigned)ms : 2000u;
}
#define TIMEOUT_MS timeout_ms()
#define SETUP_TIMEOUT_MS 60000
static int g_rank;
static bool g_victim;
static FILE *g_out;
static double g_t0;

/* Whether this rank is one SYMADDR_TEST_VICTIMS lists (default "1"). */
static bool is_victim(int rank)
{
    const char *list = getenv("SYMADDR_TEST_VICTIMS");
    char *end;
    if (!list || !*list)
        return rank == 1;
    for (const char *p = list; *p; p = end) {
        long r = strtol(p, &end, 10);
        if (end == p) {
            end = (char *)p + 1; /* a separator */
            continue;
        }
        if (r == rank)
            return true;
    }
    return false;
}

static void die_if_victim(void)
{
    if (g_victim)
        kill(getpid(), SIGKILL);
    /* a survivor's own crash, which tests/check-fault-rerun makes: fault.sh must fail it */
    const char *crash = getenv("SYMADDR_TEST_CRASH");
    if (crash && *crash && atoi(crash) == g_rank)
        raise(SIGSEGV);
}

static void on_listen(const struct sockaddr_un *addr, unsigned len, int node_rank)
{
    (void)addr, (void)len, (void)node_rank;
    die_if_victim();
}

static void on_exchange(int node_rank, uint64_t seq)
{
    (void)node_rank, (void)seq;
    die_if_victim();
}

static void report(const char *what, symaddr_status_t st)
{
    fprintf(g_out, "%s %d %.0f\n", what, (int)st, (MPI_Wtime() - g_t0) * 1e3);
    fflush(g_out);
}

/* A survivor that crashes says so in its file before it dies ("crashed SIG 0"), then the
 * handler before it (Open MPI's, a sanitizer's) runs: tests/fault.sh runs a step again only
 * where no survivor wrote anything (its launcher's crash took them), never over a rank's. */
static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
#define N_CRASH_SIGNALS (sizeof(crash_signals) / sizeof(crash_signals[0]))
static struct sigaction g_before[N_CRASH_SIGNALS];

static void on_crash(int sig)
{
    char line[] = "crashed 00 0\n"; /* no stdio in a handler */
    line[8] = (char)('0' + sig / 10 % 10);
    line[9] = (char)('0' + sig % 10);
    ssize_t ignored = write(fileno(g_out), line, sizeof(line) - 1);
    (void)ignored;
    for (size_t i = 0; i < N_CRASH_SIGNALS; i++)
        if (crash_signals[i] == sig)
            sigaction(sig, &g_before[i], NULL);
    raise(sig); /* delivered to the handler before, or the default, on return */
}

static void say_crashes(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_crash;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_CRASH_SIGNALS; i++)
        sigaction(crash_signals[i], &sa, &g_before[i]);
}

/* A step before the point failed: say so in the rank's file (tests/fault.sh fails on the
 * line and prints it), then leave as the other outcomes do. */
static void setup_failed(const char *step, symaddr_status_t st, const symaddr_context_t *ctx)
{
    fprintf(g_out, "setup-%s %d %.0f %s\n", step, (int)st, (MPI_Wtime() - g_t0) * 1e3,
            ctx ? symaddr_last_error(ctx) : "");
    fflush(g_out);
    _exit(1);
}

/* Start the clock at the point: the victim dies there, the survivors go on. */
static void point(const char *at, const char *here)
{
    if (strcmp(at, here) != 0)
        return;
    MPI_Barrier(MPI_COMM_WORLD);
    if (!strcmp(here, "init") || !strcmp(here, "free") || !strcmp(here, "finalize") ||
        !strcmp(here, "coll"))
        die_if_victim();
    if (!strcmp(here, "mesh"))
        symaddr_bootstrap_listen_hook = on_listen;
    if (!strcmp(here, "alloc"))
        symaddr_bootstrap_fd_hook = on_exchange;
    g_t0 = MPI_Wtime();
}

int main(int argc, char **argv)
{
    symaddr_config_t cfg;
    symaddr_context_t *ctx = NULL;
    symaddr_provider_t *ipc;
    symaddr_map_t *m;
    uint64_t *buf = NULL, *more = NULL;
    char path[4096];
    symaddr_status_t st;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    g_victim = is_victim(g_rank);
    g_t0 = MPI_Wtime();
    if (argc < 3)
        return 2;
    const char *at = argv[2];
    snprintf(path, sizeof(path), "%s/rank-%d", argv[1], g_rank);
    g_out = fopen(path, "w");
    if (!g_out)
        return 2;
    say_crashes();
    symaddr_config_default(&cfg);
    cfg.backend = SYMADDR_BACKEND_CPU;
    cfg.timeout_ms = TIMEOUT_MS;

    /* The short deadline is for the step under test: init has the default one unless it is
     * that step, since a loaded machine (or a sanitizer build) can take longer than 1 s for
     * it. */
    bool init_tested = !strcmp(at, "init") || !strcmp(at, "mesh");
    if (!init_tested)
        cfg.timeout_ms = SETUP_TIMEOUT_MS;
    point(at, "init");
    point(at, "mesh"); /* symaddr_init builds it, for the heap's exchange */
    st = symaddr_init(MPI_COMM_WORLD, &cfg, &ctx);
    if (init_tested) {
        report("init", st);
        _exit(0);
    }
    if (st != SYMADDR_OK)
        setup_failed("init", st, NULL);
    if ((st = symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &ipc)) != SYMADDR_OK ||
        (st = symaddr_symmetric_alloc(ipc, 4096, (void **)&buf, &m)) != SYMADDR_OK)
        setup_failed("alloc", st, ctx);
    memset(buf, 0, 4096);
    /* Every rank is here: from now on each wait gets the short deadline under test. */
    if ((st = symaddr_barrier(ctx, NULL)) != SYMADDR_OK ||
        (st = symaddr_timeout_set(ctx, TIMEOUT_MS)) != SYMADDR_OK)
        setup_failed("barrier", st, ctx);
    point(at, "alloc");
    st = symaddr_symmetric_alloc(ipc, 8192, (void **)&more, &m);
    if (!strcmp(at, "alloc")) {
        report("allocate", st);
        _exit(0);
    }
    if (st != SYMADDR_OK)
        setup_failed("allocate", st, ctx);
    point(at, "free");
    st = symaddr_symmetric_free(ipc, more);
    if (!strcmp(at, "free")) {
        report("free", st);
        _exit(0);
    }
    /* Everyone is here and the context works. */
    if (st != SYMADDR_OK || (st = symaddr_barrier(ctx, NULL)) != SYMADDR_OK)
        setup_failed("free", st, ctx);
    point(at, "coll");
    if (!strcmp(at, "coll")) {
        st = symaddr_allreduce(ctx, buf, buf + 8, 8, SYMADDR_UINT64, SYMADDR_SUM, NULL);
        report("allreduce", st);
        /* The victim would have signalled this flag: the caller's own wait, with its own
         * timeout. */
        g_t0 = MPI_Wtime();
        st = symaddr_signal_wait_until(buf + 100, 1, (uint64_t)TIMEOUT_MS * 1000000u);
        report("signal", st);
        _exit(0);
    }
    point(at, "finalize");
    st = symaddr_finalize(&ctx);
    report("finalize", st);
    /* MPI cannot finalize with a dead peer: leave without it; the kernel reclaims the rest. */
    _exit(0);
}
