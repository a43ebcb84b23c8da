/* SPDX-License-Identifier: MIT */
/* Handle exchange is owner-only: a process outside the communicator that knows the socket's
 * full name (secret included) and sends a well-formed hello is refused while the mesh is being
 * built, and cannot connect at all afterwards; it never receives a descriptor. */
#include "harness.h"

#include <poll.h>
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
        /* The name is "symaddr-<32 hex digits of secret>-<rank>" after a leading NUL. */
        for (int i = 0; i < 16; i++) {
            unsigned v;
            sscanf(g_addr.sun_path + 1 + 8 + 2 * i, "%2x", &v);
            h.secret[i] = (uint8_t)v;
        }
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

static void hook(const struct sockaddr_un *addr, unsigned len, int node_rank)
{
    if (node_rank != 0 || g_child >= 0)
        return;
    memcpy(&g_addr, addr, len);
    g_len = len;
    if (pipe(g_report) != 0)
        return;
    g_child = fork();
    if (g_child == 0)
        intrude();
    /* The intruder is queued on the listener before this rank accepts anyone. */
    char queued = 0;
    if (read(g_report[0], &queued, 1) != 1 || queued != 'q')
        fprintf(stderr, "[rank 0] the intruder could not even connect\n");
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
    T_OK(ctx, symaddr_allocate_symmetric(ipc, 4096, &p, &m));
    T_OK(ctx, symaddr_free_symmetric(ipc, p));
    if (t_rank == 0 && t_size > 1) {
        char verdict = '?';
        T_CHECK(g_child > 0, "no intruder was started");
        T_CHECK(read(g_report[0], &verdict, 1) == 1);
        T_CHECK(verdict == 'r', "the intruder saw '%c' (r: refused, F: got a descriptor, "
                                "m: got a message, t: left waiting)", verdict);
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

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    T_RUN(test_intruder_refused, NULL);
    return t_finish();
}
