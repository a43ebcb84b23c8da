/* SPDX-License-Identifier: MIT */
/* symaddr_init_bootstrap: symaddr started by a runtime's operations, not by MPI.
 *   test_bootstrap               under mpiexec: the test's own operations over MPI
 *                                point-to-point (through the table, not symaddr's MPI row)
 *   test_bootstrap --sockets N   N processes of its own, forked and joined by socket pairs,
 *                                that make no MPI call at all
 * Every case checks exact values (distinct per rank, odd counts) or the status each rank gets. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

typedef struct hdr {
    uint32_t epoch;
    uint32_t pad;
    uint64_t bytes;
} hdr_t;

/* The test's transport: one per process, the state its operations get. */
typedef struct tr {
    int rank, size;
    int *socks;     /* sockets: a connected socket per peer (-1 for self); NULL under MPI */
    uint32_t epoch; /* the case in progress: messages of earlier ones are dropped */
    int calls;      /* sendrecv calls in this case */
    int fail_at;    /* the call that returns fail_status (0: none) */
    symaddr_status_t fail_status;
    int corrupt_at; /* the call whose message gets a byte of symaddr's frame flipped */
    int finis;      /* ops.fini calls */
    int halves;     /* node_key: two nodes of the lower and upper half of the ranks */
} tr_t;

static tr_t T;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The fault a case asked for, on this call: a status to return, or a message to spoil. */
static int inject(tr_t *t, symaddr_status_t *st)
{
    t->calls++;
    if (t->fail_at && t->calls == t->fail_at) {
        *st = t->fail_status;
        return 1;
    }
    return 0;
}

/* The message a case spoils in transit: the first byte of symaddr's frame (its exchange
 * number) in this call's send. */
static void spoil(const tr_t *t, int to, char *payload, size_t bytes)
{
    if (to >= 0 && t->corrupt_at && t->calls == t->corrupt_at && bytes > 0)
        payload[0] ^= 0x40;
}

/* Over sockets: header and payload out, header and payload in, both at once under poll. */
static symaddr_status_t sock_sendrecv(void *state, int to, const void *sbuf, size_t send_bytes,
                                      int from, void *rbuf, size_t recv_bytes, unsigned timeout_ms)
{
    tr_t *t = state;
    symaddr_status_t st = SYMADDR_OK;
    if (inject(t, &st))
        return st;
    hdr_t h = {.epoch = t->epoch, .bytes = send_bytes}, in;
    size_t out_len = to >= 0 ? sizeof(h) + send_bytes : 0, out_off = 0;
    char *out = malloc(sizeof(h) + send_bytes + 1); /* the header is written either way */
    if (!out)
        return SYMADDR_ERR_NO_MEMORY;
    memcpy(out, &h, sizeof(h));
    if (send_bytes)
        memcpy(out + sizeof(h), sbuf, send_bytes);
    spoil(t, to, out + sizeof(h), send_bytes);
    size_t in_off = 0, skip = 0, pay_off = 0;
    int in_done = from < 0, hdr_done = 0;
    double end = now_s() + timeout_ms / 1e3;
    while (st == SYMADDR_OK && (out_off < out_len || !in_done)) {
        struct pollfd p[2];
        int np = 0, left_ms = (int)((end - now_s()) * 1e3) + 1;
        if (left_ms <= 0) {
            st = SYMADDR_ERR_TIMEOUT;
            break;
        }
        if (out_off < out_len)
            p[np++] = (struct pollfd){.fd = t->socks[to], .events = POLLOUT};
        if (!in_done)
            p[np++] = (struct pollfd){.fd = t->socks[from], .events = POLLIN};
        if (poll(p, (nfds_t)np, left_ms) < 0 && errno != EINTR) {
            st = SYMADDR_ERR_PEER;
            break;
        }
        if (out_off < out_len && (p[0].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t n =
                send(t->socks[to], out + out_off, out_len - out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n < 0 && errno != EAGAIN)
                st = SYMADDR_ERR_PEER;
            else if (n > 0)
                out_off += (size_t)n;
        }
        if (in_done || st != SYMADDR_OK || !(p[np - 1].revents & (POLLIN | POLLHUP)))
            continue;
        char sink[4096], *dst;
        size_t want;
        if (!hdr_done) {
            dst = (char *)&in + in_off;
            want = sizeof(in) - in_off;
        } else if (skip) {
            dst = sink;
            want = skip < sizeof(sink) ? skip : sizeof(sink);
        } else {
            dst = (char *)rbuf + pay_off;
            want = recv_bytes - pay_off;
        }
        ssize_t n = want ? recv(t->socks[from], dst, want, MSG_DONTWAIT) : 0;
        if (want && (n == 0 || (n < 0 && errno != EAGAIN))) {
            st = SYMADDR_ERR_PEER; /* the peer closed its end */
            break;
        }
        if (n < 0)
            continue;
        if (!hdr_done) {
            in_off += (size_t)n;
            if (in_off < sizeof(in))
                continue;
            hdr_done = 1;
            if (in.epoch < t->epoch) { /* an earlier case's: dropped */
                skip = in.bytes;
                if (!skip)
                    hdr_done = in_off = 0;
                continue;
            }
            if (in.epoch != t->epoch || in.bytes != recv_bytes)
                st = SYMADDR_ERR_PEER;
        } else if (skip) {
            skip -= (size_t)n;
            if (!skip)
                hdr_done = in_off = 0;
            continue;
        } else {
            pay_off += (size_t)n;
        }
        in_done = hdr_done && !skip && pay_off == recv_bytes;
    }
    free(out);
    return st;
}

/* Sends given up on: MPI may still read them until it is finalized. */
static void *kept[256];
static int nkept;
/* The transport's own communicator: messages of cases that failed on purpose are drained from
 * it at the end (MPICH's MPI_Finalize aborts on unmatched messages of MPI_COMM_WORLD). */
static MPI_Comm tcomm = MPI_COMM_NULL;

/* Over MPI point-to-point, a tag per case; a receive that ran out is cancelled. */
static symaddr_status_t mpi_sendrecv(void *state, int to, const void *send, size_t send_bytes,
                                     int from, void *recv, size_t recv_bytes, unsigned timeout_ms)
{
    tr_t *t = state;
    symaddr_status_t st = SYMADDR_OK;
    if (inject(t, &st))
        return st;
    int tag = (int)(t->epoch & 0x7fff);
    MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    char *in = malloc(recv_bytes + 1), *out = malloc(send_bytes + 1);
    if (send_bytes)
        memcpy(out, send, send_bytes);
    spoil(t, to, out, send_bytes);
    if (from >= 0)
        MPI_Irecv(in, (int)recv_bytes + 1, MPI_BYTE, from, tag, tcomm, &req[0]);
    if (to >= 0)
        MPI_Isend(out, (int)send_bytes, MPI_BYTE, to, tag, tcomm, &req[1]);
    double end = now_s() + timeout_ms / 1e3;
    MPI_Status s[2];
    int done = 0;
    while (!done && now_s() < end)
        MPI_Testall(2, req, &done, s);
    if (!done) {
        if (req[0] != MPI_REQUEST_NULL) {
            MPI_Cancel(&req[0]);
            MPI_Wait(&req[0], MPI_STATUS_IGNORE);
        }
        if (req[1] != MPI_REQUEST_NULL && nkept < (int)(sizeof(kept) / sizeof(kept[0]))) {
            MPI_Request_free(&req[1]); /* its buffer stays until MPI is finalized */
            kept[nkept++] = out;
        } else {
            if (req[1] != MPI_REQUEST_NULL)
                MPI_Wait(&req[1], MPI_STATUS_IGNORE);
            free(out);
        }
        free(in);
        return SYMADDR_ERR_TIMEOUT;
    }
    int count = 0;
    if (from >= 0)
        MPI_Get_count(&s[0], MPI_BYTE, &count);
    if (from >= 0 && count != (int)recv_bytes)
        st = SYMADDR_ERR_PEER;
    else if (from >= 0)
        memcpy(recv, in, recv_bytes);
    free(in);
    free(out);
    return st;
}

static symaddr_status_t halves_key(void *state, char *key, size_t key_bytes, unsigned timeout_ms)
{
    tr_t *t = state;
    (void)timeout_ms;
    snprintf(key, key_bytes, "half-%d", t->rank < (t->size + 1) / 2);
    return SYMADDR_OK;
}

static void count_fini(void *state) { ((tr_t *)state)->finis++; }

static symaddr_bootstrap_ops_t ops_of(const tr_t *t)
{
    symaddr_bootstrap_ops_t ops = {.version = SYMADDR_BOOTSTRAP_OPS_VERSION,
                                   .sendrecv = t->socks ? sock_sendrecv : mpi_sendrecv,
                                   .fini = count_fini};
    if (t->halves)
        ops.node_key = halves_key;
    return ops;
}

/* A case's fresh start: its own epoch, no fault. */
static void begin(void)
{
    T.epoch++;
    T.calls = T.fail_at = T.corrupt_at = T.finis = T.halves = 0;
}

static symaddr_config_t config(unsigned timeout_ms, int node_size)
{
    symaddr_config_t cfg;
    symaddr_config_default(&cfg);
    cfg.timeout_ms = timeout_ms;
    cfg.node_size = node_size;
    return cfg;
}

/* allreduce, allgather and broadcast of distinct int32 values, a put and a get to a peer in
 * reach, each checked element by element. */
static void exercise(symaddr_context_t *ctx)
{
    enum { N = 1001 };
    int me = symaddr_rank(ctx), n = symaddr_size(ctx);
    symaddr_provider_t *prov;
    int32_t *a, *g, local[N], want;
    symaddr_map_t *ma, *mg;
    const symaddr_locality_t *loc;
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &prov));
    T_OK(ctx, symaddr_symmetric_alloc(prov, sizeof(int32_t) * N, (void **)&a, &ma));
    T_OK(ctx, symaddr_symmetric_alloc(prov, sizeof(int32_t) * N * (size_t)n, (void **)&g, &mg));
    for (int i = 0; i < N; i++)
        a[i] = me * 1000 + i * 3 - 7;
    T_OK(ctx, symaddr_allgather(ctx, a, g, N, SYMADDR_INT32, NULL));
    int bad = 0;
    for (int r = 0; r < n; r++)
        for (int i = 0; i < N; i++)
            bad += g[(size_t)r * N + i] != r * 1000 + i * 3 - 7;
    T_CHECK(bad == 0, "allgather: %d wrong", bad);
    T_OK(ctx, symaddr_allreduce(ctx, a, a, N, SYMADDR_INT32, SYMADDR_SUM, NULL));
    bad = 0;
    for (int i = 0; i < N; i++) {
        want = 1000 * n * (n - 1) / 2 + n * (i * 3 - 7);
        bad += a[i] != want;
    }
    T_CHECK(bad == 0, "allreduce: %d wrong", bad);
    for (int i = 0; i < N; i++)
        a[i] = me == n - 1 ? 5 * i + 11 : -1;
    T_OK(ctx, symaddr_broadcast(ctx, a, a, N, SYMADDR_INT32, n - 1, NULL));
    bad = 0;
    for (int i = 0; i < N; i++)
        bad += a[i] != 5 * i + 11;
    T_CHECK(bad == 0, "broadcast: %d wrong", bad);
    /* a put into the next rank in reach, then its get back */
    T_OK(ctx, symaddr_locality_get(ctx, &loc));
    int t = me;
    for (int k = 1; k < n; k++)
        if (loc->direct_access[(me + k) % n]) {
            t = (me + k) % n;
            break;
        }
    for (int i = 0; i < N; i++)
        local[i] = me * 7 + i;
    T_OK(ctx, symaddr_barrier(ctx, NULL));
    T_OK(ctx, symaddr_put(ctx, g, local, sizeof(local), t, NULL));
    T_OK(ctx, symaddr_stream_sync(ctx, NULL));
    T_OK(ctx, symaddr_barrier(ctx, NULL));
    memset(local, 0, sizeof(local));
    T_OK(ctx, symaddr_get(ctx, local, g, sizeof(local), t, NULL));
    T_OK(ctx, symaddr_stream_sync(ctx, NULL));
    bad = 0;
    for (int i = 0; i < N; i++)
        bad += local[i] != me * 7 + i;
    T_CHECK(bad == 0, "put to and get from rank %d: %d wrong", t, bad);
    T_OK(ctx, symaddr_barrier(ctx, NULL));
    T_OK(ctx, symaddr_symmetric_free(prov, g));
    T_OK(ctx, symaddr_symmetric_free(prov, a));
}

/* Ranks that share a host by the transport's own account: every rank in the socket mode, MPI's
 * shared-memory split under mpiexec (the reference for symaddr's host-name agreement). */
static int host_ranks(int *host_rank_p)
{
    if (T.socks) {
        *host_rank_p = T.rank;
        return T.size;
    }
    MPI_Comm host;
    int n;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, T.rank, MPI_INFO_NULL, &host);
    MPI_Comm_size(host, &n);
    MPI_Comm_rank(host, host_rank_p);
    MPI_Comm_free(&host);
    return n;
}

static void test_start(void *arg)
{
    (void)arg;
    int hr, hn = host_ranks(&hr);
    begin();
    symaddr_bootstrap_ops_t ops = ops_of(&T);
    symaddr_config_t cfg = config(T_INIT_TIMEOUT_MS, 0);
    symaddr_context_t *ctx = NULL;
    T_OK(NULL, symaddr_init_bootstrap(&ops, &T, T.rank, T.size, &cfg, &ctx));
    if (!ctx)
        return;
    T_CHECK(symaddr_rank(ctx) == T.rank && symaddr_size(ctx) == T.size);
    T_CHECK(symaddr_comm(ctx) == MPI_COMM_NULL, "a context of the operations has no communicator");
    T_CHECK(symaddr_node_size(ctx) == hn && symaddr_node_rank(ctx) == hr,
            "node %d of %d, the transport says %d of %d", symaddr_node_rank(ctx),
            symaddr_node_size(ctx), hr, hn);
    exercise(ctx);
    T_CHECK(T.finis == 0);
    T_OK(ctx, symaddr_finalize(&ctx));
    T_CHECK(T.finis == 1, "ops.fini ran %d times at finalize", T.finis);
    if (T.socks) {
        int init = 1;
        MPI_Initialized(&init);
        T_CHECK(!init, "no MPI call was made");
    }
}

/* Nodes of the operations' own key, and simulated nodes of SYMADDR_NODE_SIZE's: the steps
 * between nodes (leaders' allgather, broadcast, reduction) over the operations too. */
static void test_nodes(void *arg)
{
    (void)arg;
    int hr, hn = host_ranks(&hr);
    for (int round = 0; round < 2; round++) {
        begin();
        T.halves = round == 0 && T.socks;
        int sim = round == 1 ? 2 : 0;
        if (round == 0 && !T.socks)
            continue; /* MPI's host split is test_start's */
        int lower = T.rank < (T.size + 1) / 2;
        int want_size =
            T.halves ? (lower ? (T.size + 1) / 2 : T.size / 2) : (hn - hr / 2 * 2 >= 2 ? 2 : 1);
        int want_rank = T.halves ? (lower ? T.rank : T.rank - (T.size + 1) / 2) : hr % 2;
        symaddr_bootstrap_ops_t ops = ops_of(&T);
        symaddr_config_t cfg = config(T_INIT_TIMEOUT_MS, sim);
        symaddr_context_t *ctx = NULL;
        T_OK(NULL, symaddr_init_bootstrap(&ops, &T, T.rank, T.size, &cfg, &ctx));
        if (!ctx)
            continue;
        T_CHECK(symaddr_node_size(ctx) == want_size && symaddr_node_rank(ctx) == want_rank,
                "round %d: node %d of %d, wanted %d of %d", round, symaddr_node_rank(ctx),
                symaddr_node_size(ctx), want_rank, want_size);
        exercise(ctx);
        T_OK(ctx, symaddr_finalize(&ctx));
        T_CHECK(T.finis == 1);
    }
}

static void test_bad_args(void *arg)
{
    (void)arg;
    begin();
    symaddr_context_t *ctx = NULL;
    symaddr_bootstrap_ops_t ops = ops_of(&T), bad = ops;
    T_STATUS(NULL, symaddr_init_bootstrap(NULL, &T, T.rank, T.size, NULL, &ctx),
             SYMADDR_ERR_INVALID_ARG);
    bad.sendrecv = NULL;
    T_STATUS(NULL, symaddr_init_bootstrap(&bad, &T, T.rank, T.size, NULL, &ctx),
             SYMADDR_ERR_INVALID_ARG);
    T_CHECK(strstr(symaddr_last_error(NULL), "sendrecv") != NULL, "%s", symaddr_last_error(NULL));
    bad = ops;
    bad.version = SYMADDR_BOOTSTRAP_OPS_VERSION + 1;
    T_STATUS(NULL, symaddr_init_bootstrap(&bad, &T, T.rank, T.size, NULL, &ctx),
             SYMADDR_ERR_INVALID_ARG);
    T_CHECK(strstr(symaddr_last_error(NULL), "version") != NULL, "%s", symaddr_last_error(NULL));
    T_CHECK(T.finis == 0, "a table refused unread is not the context's: no fini");
    T_STATUS(NULL, symaddr_init_bootstrap(&ops, &T, T.size, T.size, NULL, &ctx),
             SYMADDR_ERR_INVALID_ARG);
    T_STATUS(NULL, symaddr_init_bootstrap(&ops, &T, -1, T.size, NULL, &ctx),
             SYMADDR_ERR_INVALID_ARG);
    T_CHECK(strstr(symaddr_last_error(NULL), "0 <= rank < size") != NULL, "%s",
            symaddr_last_error(NULL));
    T_CHECK(T.finis == 2, "fini of an accepted table: %d", T.finis);
    T_CHECK(ctx == NULL);
}

/* An operation's own failure comes back from init on its rank; the others give up within
 * the timeout, and no rank gets a context. */
static void test_failing_op(void *arg)
{
    (void)arg;
    begin();
    if (T.rank == 0) {
        T.fail_at = 2;
        T.fail_status = SYMADDR_ERR_BACKEND;
    }
    symaddr_bootstrap_ops_t ops = ops_of(&T);
    symaddr_config_t cfg = config(1500, 0);
    symaddr_context_t *ctx = NULL;
    double t0 = now_s();
    symaddr_status_t st = symaddr_init_bootstrap(&ops, &T, T.rank, T.size, &cfg, &ctx);
    double took = now_s() - t0;
    if (T.rank == 0)
        T_CHECK(st == SYMADDR_ERR_BACKEND, "rank 0: %s", symaddr_strerror(st));
    else
        T_CHECK(st == SYMADDR_ERR_TIMEOUT || st == SYMADDR_ERR_PEER, "%s", symaddr_strerror(st));
    T_CHECK(ctx == NULL && T.finis == 1);
    T_CHECK(took < 60.0, "gave up after %.1f s (timeout 1.5 s)", took);
}

/* A message spoiled in transit (its exchange number) is refused where it arrives, never read
 * as the exchange's data. */
static void test_spoiled_message(void *arg)
{
    (void)arg;
    begin();
    if (T.rank == 0)
        T.corrupt_at = 1;
    symaddr_bootstrap_ops_t ops = ops_of(&T);
    symaddr_config_t cfg = config(1500, 0);
    symaddr_context_t *ctx = NULL;
    symaddr_status_t st = symaddr_init_bootstrap(&ops, &T, T.rank, T.size, &cfg, &ctx);
    /* rank 0's first message goes to rank size - 1 (Bruck's first step, distance 1) */
    if (T.rank == T.size - 1)
        T_CHECK(st == SYMADDR_ERR_PEER, "the receiver of the spoiled message: %s (%s)",
                symaddr_strerror(st), symaddr_last_error(NULL));
    else
        T_CHECK(st != SYMADDR_OK, "%s", symaddr_strerror(st));
    T_CHECK(ctx == NULL);
}

/* A rank that never calls init costs the others a timeout, not a hang. */
static void test_late_rank(void *arg)
{
    (void)arg;
    begin();
    if (T.rank == T.size - 1)
        return; /* the late rank: the others' checks are the case's */
    symaddr_bootstrap_ops_t ops = ops_of(&T);
    symaddr_config_t cfg = config(1500, 0);
    symaddr_context_t *ctx = NULL;
    double t0 = now_s();
    symaddr_status_t st = symaddr_init_bootstrap(&ops, &T, T.rank, T.size, &cfg, &ctx);
    double took = now_s() - t0;
    T_CHECK(st == SYMADDR_ERR_TIMEOUT || st == SYMADDR_ERR_PEER, "%s", symaddr_strerror(st));
    T_CHECK(took >= 1.4 || st == SYMADDR_ERR_PEER, "gave up after %.2f s", took);
    T_CHECK(took < 60.0, "gave up after %.1f s (timeout 1.5 s)", took);
    T_CHECK(ctx == NULL && T.finis == 1);
}

static const struct {
    const char *name;
    void (*fn)(void *);
} cases[] = {
    {"test_start", test_start},
    {"test_nodes", test_nodes},
    {"test_bad_args", test_bad_args},
    {"test_failing_op", test_failing_op},
    {"test_spoiled_message", test_spoiled_message},
    {"test_late_rank", test_late_rank},
};
enum { NCASES = sizeof(cases) / sizeof(cases[0]) };

/* A forked rank: runs each case when the parent says go, and reports its counts. */
static void child(int rank, int size, int *socks, int report, int go)
{
    T.rank = t_rank = rank;
    T.size = t_size = size;
    T.socks = socks;
    for (int c = 0; c < NCASES; c++) {
        char b;
        if (read(go, &b, 1) != 1)
            _exit(2);
        t_fails = t_checks = t_skipped_case = 0;
        if (t_wanted(cases[c].name))
            cases[c].fn(NULL);
        int counts[2] = {t_fails, t_checks};
        if (write(report, counts, sizeof(counts)) != (ssize_t)sizeof(counts))
            _exit(2);
    }
    _exit(0);
}

/* N ranks of its own, one case at a time: a case starts once every rank finished the last. */
static int run_sockets(int n)
{
    int(*pairs)[2] = malloc(sizeof(int[2]) * (size_t)n * (size_t)n);
    int report[2], (*go)[2] = malloc(sizeof(int[2]) * (size_t)n); /* go: one pipe a rank */
    pid_t *pids = calloc((size_t)n, sizeof(pid_t));
    if (pipe(report))
        return 1;
    for (int r = 0; r < n; r++)
        if (pipe(go[r]))
            return 1;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (socketpair(AF_UNIX, SOCK_STREAM, 0, pairs[i * n + j]))
                return 1;
    for (int r = 0; r < n; r++) {
        if ((pids[r] = fork()) == 0) {
            int *socks = malloc(sizeof(int) * (size_t)n);
            for (int q = 0; q < n; q++)
                socks[q] = q == r ? -1 : r < q ? pairs[r * n + q][0] : pairs[q * n + r][1];
            close(report[0]);
            child(r, n, socks, report[1], go[r][0]);
        }
    }
    close(report[1]);
    int failed = 0, passed = 0;
    for (int c = 0; c < NCASES; c++) {
        int fails = 0, checks = 0, got = 0;
        for (int r = 0; r < n; r++)
            if (write(go[r][1], "g", 1) != 1)
                return 1;
        while (got < n) {
            struct pollfd p = {.fd = report[0], .events = POLLIN};
            int counts[2];
            if (poll(&p, 1, 300000) <= 0 ||
                read(report[0], counts, sizeof(counts)) != (ssize_t)sizeof(counts))
                break;
            fails += counts[0];
            checks += counts[1];
            got++;
        }
        if (!t_wanted(cases[c].name) && got == n)
            continue;
        if (got < n) {
            printf("not ok - %s (%d of %d ranks reported within 300 s)\n", cases[c].name, got, n);
            failed++;
            break;
        } else if (fails || checks == 0) {
            printf("not ok - %s (%d failed checks of %d)\n", cases[c].name, fails, checks);
            failed++;
        } else {
            printf("ok     - %s (%d checks)\n", cases[c].name, checks);
            passed++;
        }
        fflush(stdout);
    }
    for (int r = 0; r < n; r++) {
        int status;
        if (failed)
            kill(pids[r], SIGKILL);
        waitpid(pids[r], &status, 0);
        if (!failed && (!WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
            printf("not ok - rank %d exited with status %d\n", r, status);
            failed++;
        }
    }
    printf("%d passed, %d failed, 0 skipped\n", passed, failed);
    free(pairs);
    free(go);
    free(pids);
    return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--sockets") == 0) {
        int n = atoi(argv[2]);
        if (n < 1 || n > 64) {
            fprintf(stderr, "usage: %s [--sockets N (1-64)]\n", argv[0]);
            return 2;
        }
        return run_sockets(n);
    }
    t_init(&argc, &argv);
    T.rank = t_rank;
    T.size = t_size;
    MPI_Comm_dup(MPI_COMM_WORLD, &tcomm);
    for (int c = 0; c < NCASES; c++)
        t_run(cases[c].name, cases[c].fn, NULL);
    for (int round = 0; round < 2; round++) { /* what the failed cases' peers sent, unread */
        MPI_Barrier(MPI_COMM_WORLD);
        for (int flag = 1; flag;) {
            MPI_Status st;
            int count = 0;
            MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, tcomm, &flag, &st);
            if (!flag)
                break;
            MPI_Get_count(&st, MPI_BYTE, &count);
            char *sink = malloc((size_t)count + 1);
            MPI_Recv(sink, count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, tcomm, MPI_STATUS_IGNORE);
            free(sink);
        }
    }
    MPI_Comm_free(&tcomm);
    int rc = t_finish(); /* MPI_Finalize: the sends given up on are over */
    for (int i = 0; i < nkept; i++)
        free(kept[i]);
    return rc;
}
