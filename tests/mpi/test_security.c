/* SPDX-License-Identifier: MIT */
/* Handle exchange is owner-only: a process outside the communicator that knows the socket's
 * full name and sends a well-formed hello is refused while the mesh is being built, and cannot
 * connect at all afterwards; it never receives a descriptor. A stranger holding connections
 * open without a word does not slow the start, no rank's socket name can be derived from
 * another's, so none can be taken first, and another user cannot connect at all. */
#include "harness.h"

#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bootstrap/bootstrap.h"

static struct sockaddr_un g_addr;
static socklen_t g_len;
static pid_t g_child = -1;
static int g_report[2]; /* child -> parent: what the intruder saw */

/* The intruder: connect with the right name, claim to be node rank 1, wait for anything. */
static void intrude(void)
{
    char verdict = 'x';
    int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    if (connect(s, (struct sockaddr *)&g_addr, g_len) != 0) {
        verdict = 'c'; /* could not connect */
    } else {
        symaddr_bootstrap_hello_t h;
        memset(&h, 0, sizeof(h));
        h.magic = SYMADDR_BOOTSTRAP_HELLO_MAGIC;
        /* It cannot know the node's secret; the check on who it is comes first anyway. */
        h.node_rank = 1;
        h.pid = getpid();
        send(s, &h, sizeof(h), MSG_NOSIGNAL);
        char queued = 'q';
        if (write(g_report[1], &queued, 1) != 1) /* the hook waits for this */
            _exit(2);
        char buf[64];
        union {
            char b[CMSG_SPACE(sizeof(int))];
            struct cmsghdr a;
        } u;
        struct iovec iov = {buf, sizeof(buf)};
        struct msghdr msg = {0};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = u.b;
        msg.msg_controllen = sizeof(u.b);
        struct pollfd p = {s, POLLIN, 0};
        if (poll(&p, 1, 20000) <= 0)
            verdict = 't'; /* left hanging */
        else if (recvmsg(s, &msg, 0) <= 0)
            verdict = 'r'; /* refused: closed on us */
        else
            verdict = msg.msg_controllen ? 'F' : 'm'; /* got a descriptor / a message */
    }
    if (write(g_report[1], &verdict, 1) != 1)
        _exit(2);
    _exit(0);
}

/* Once: a child that runs body, and its first report read back; complains unless it is want. */
static void start_child(pid_t *pid, void (*body)(void), char want, const char *complaint)
{
    if (*pid >= 0 || pipe(g_report) != 0)
        return;
    if ((*pid = fork()) < 0)
        return;
    if (*pid == 0)
        body();
    char c = 0;
    if (read(g_report[0], &c, 1) != 1 || c != want)
        fprintf(stderr, "[rank 0] %s\n", complaint);
}

static void hook(const struct sockaddr_un *addr, unsigned len, int node_rank)
{
    if (node_rank != 0 || g_child >= 0)
        return;
    memcpy(&g_addr, addr, len);
    g_len = len;
    /* The intruder is queued on the listener before this rank accepts anyone. */
    start_child(&g_child, intrude, 'q', "the intruder could not even connect");
}

static void test_intruder_refused(void *unused)
{
    (void)unused;
    symaddr_bootstrap_listen_hook = hook;
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, NULL); /* builds the mesh */
    symaddr_bootstrap_listen_hook = NULL;
    symaddr_provider_t *ipc;
    symaddr_map_t *m;
    void *p;
    /* A full exchange works for the real ranks. */
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &ipc));
    T_OK(ctx, symaddr_symmetric_alloc(ipc, 4096, &p, &m));
    T_OK(ctx, symaddr_symmetric_free(ipc, p));
    if (t_rank == 0 && t_size > 1) {
        char verdict = '?';
        T_CHECK(g_child > 0, "no intruder was started");
        T_CHECK(read(g_report[0], &verdict, 1) == 1);
        T_CHECK(verdict == 'r',
                "the intruder saw '%c' (r: refused, F: got a descriptor, "
                "m: got a message, t: left waiting)",
                verdict);
        waitpid(g_child, NULL, 0);
        /* After the mesh is built nobody can even connect. */
        int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        T_CHECK(connect(s, (struct sockaddr *)&g_addr, g_len) != 0, "listener still open");
        close(s);
    } else if (t_size == 1) {
        T_SKIP("one rank builds no socket mesh");
    } else {
        T_CHECK(1); /* rank 0 hosts the intruder */
    }
    T_OK(ctx, symaddr_finalize(&ctx));
}

/* ---- a silent stranger ------------------------------------------------------------------- */

static pid_t g_silent = -1;

/* Connects to every symaddr listener of this host it can see and holds the connections open
 * without a word, as any process of the same user can: the paths are in /proc/net/unix. */
static void hold_silent(void)
{
    int held = 0;
    FILE *f = fopen("/proc/net/unix", "r");
    char line[512];
    while (f && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = 0;
        char *at = strrchr(line, ' '); /* the last field: the path, or @name when abstract */
        if (!at || !strstr(at, "symaddr-"))
            continue;
        at++;
        struct sockaddr_un sa;
        memset(&sa, 0, sizeof(sa));
        sa.sun_family = AF_UNIX;
        size_t n = strlen(at);
        if (n >= sizeof(sa.sun_path))
            continue;
        memcpy(sa.sun_path, at, n);
        if (at[0] == '@')
            sa.sun_path[0] = '\0';
        int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        if (connect(s, (struct sockaddr *)&sa,
                    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (at[0] != '@'))) == 0)
            held++;
    }
    if (f)
        fclose(f);
    char c = held ? 'h' : 'n';
    if (write(g_report[1], &c, 1) != 1)
        _exit(2);
    pause(); /* silent until killed */
    _exit(0);
}

static void silent_hook(const struct sockaddr_un *addr, unsigned len, int node_rank)
{
    (void)addr, (void)len;
    if (node_rank == 0)
        start_child(&g_silent, hold_silent, 'h', "the silent stranger could not connect");
}

static void test_silent_stranger(void *unused)
{
    symaddr_config_t cfg;
    (void)unused;
    if (t_size == 1) {
        T_SKIP("one rank builds no socket mesh");
        return;
    }
    symaddr_config_default(&cfg);
    cfg.timeout_ms = 30000;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    symaddr_bootstrap_listen_hook = silent_hook;
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, &cfg); /* builds the mesh */
    symaddr_bootstrap_listen_hook = NULL;
    double took = MPI_Wtime() - t0, worst;
    MPI_Allreduce(&took, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    T_CHECK(worst < 10, "symaddr_init took %.1f s with a silent stranger connected (timeout 30 s)",
            worst);
    if (t_rank == 0) {
        T_CHECK(g_silent > 0, "no stranger was started");
        kill(g_silent, SIGKILL);
        waitpid(g_silent, NULL, 0);
    }
    symaddr_provider_t *ipc;
    symaddr_map_t *m;
    void *p;
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &ipc));
    T_OK(ctx, symaddr_symmetric_alloc(ipc, 4096, &p, &m));
    T_OK(ctx, symaddr_symmetric_free(ipc, p));
    T_OK(ctx, symaddr_finalize(&ctx));
}

/* ---- another user ------------------------------------------------------------------------- */

/* A process of another user (nobody) that knows the listener's path cannot even connect, so
 * that it cannot fill the backlog either: an abstract socket name, which anyone can read in
 * /proc/net/unix, let another user's flood of connections fail 2 of 12 inits. */
static pid_t g_other = -1;
static void connect_as_nobody(void)
{
    char verdict = 'u'; /* could not become nobody */
    if (setgroups(0, NULL) == 0 && setgid(65534) == 0 && setuid(65534) == 0) {
        int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
        verdict = connect(s, (struct sockaddr *)&g_addr, g_len) == 0 ? 'q' : 'c';
    }
    if (write(g_report[1], &verdict, 1) != 1)
        _exit(2);
    _exit(0);
}

static char g_other_saw = '?';
static void other_hook(const struct sockaddr_un *addr, unsigned len, int node_rank)
{
    if (node_rank != 0 || g_other >= 0)
        return;
    memcpy(&g_addr, addr, len);
    g_len = len;
    if (pipe(g_report) != 0 || (g_other = fork()) < 0)
        return;
    if (g_other == 0)
        connect_as_nobody();
    if (read(g_report[0], &g_other_saw, 1) != 1)
        g_other_saw = '?';
}

static void test_other_user_cannot_connect(void *unused)
{
    (void)unused;
    if (t_size == 1) {
        T_SKIP("one rank builds no socket mesh");
        return;
    }
    if (geteuid() != 0) {
        T_SKIP("acting as another user (nobody) needs root");
        return;
    }
    symaddr_bootstrap_listen_hook = other_hook;
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, NULL);
    symaddr_bootstrap_listen_hook = NULL;
    if (t_rank == 0) {
        T_CHECK(g_other > 0, "no process of another user was started");
        T_CHECK(g_other_saw == 'c',
                "a process of user nobody saw '%c' connecting to the listener at %s (c: refused, "
                "q: connected, u: could not become nobody)",
                g_other_saw, g_addr.sun_path);
        waitpid(g_other, NULL, 0);
    } else {
        T_CHECK(1); /* rank 0 hosts the other user */
    }
    T_OK(ctx, symaddr_finalize(&ctx));
}

/* ---- names nobody can take first ------------------------------------------------------------ */

static char g_name[108];
static void name_hook(const struct sockaddr_un *addr, unsigned len, int node_rank)
{
    (void)node_rank;
    (void)len;
    const char *dir = strstr(addr->sun_path, "/symaddr-"); /* <base>/symaddr-<random>/s */
    if (dir)
        snprintf(g_name, sizeof(g_name), "%.*s", (int)strcspn(dir + 1, "/"), dir + 1);
}

static void test_unguessable_names(void *unused)
{
    (void)unused;
    if (t_size == 1) {
        T_SKIP("one rank builds no socket mesh");
        return;
    }
    memset(g_name, 0, sizeof(g_name));
    symaddr_bootstrap_listen_hook = name_hook;
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, NULL);
    symaddr_bootstrap_listen_hook = NULL;
    char *all = malloc(sizeof(g_name) * (size_t)t_size);
    MPI_Allgather(g_name, sizeof(g_name), MPI_CHAR, all, sizeof(g_name), MPI_CHAR, MPI_COMM_WORLD);
    const char *mine = all + sizeof(g_name) * (size_t)t_rank;
    T_CHECK(strncmp(mine, "symaddr-", 8) == 0 && strlen(mine) >= 8 + 32, "name '%s'", mine);
    /* Apart from the prefix no two names share even their first random byte pair... by
     * chance they may, so compare whole random parts, and require no rank-number suffix. */
    for (int r = 0; r < t_size; r++) {
        const char *other = all + sizeof(g_name) * (size_t)r;
        if (r != t_rank)
            T_CHECK(strcmp(mine + 8, other + 8) != 0 && strncmp(mine + 8, other + 8, 16) != 0,
                    "rank %d's name '%s' shares its first 8 random bytes with rank %d's '%s'",
                    t_rank, mine, r, other);
    }
    T_CHECK(strchr(mine + 8, '-') == NULL, "the name carries a rank number: '%s'", mine);
    free(all);
    T_OK(ctx, symaddr_finalize(&ctx));
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    T_RUN(test_intruder_refused, NULL);
    T_RUN(test_silent_stranger, NULL);
    T_RUN(test_unguessable_names, NULL);
    T_RUN(test_other_user_cannot_connect, NULL);
    return t_finish();
}
