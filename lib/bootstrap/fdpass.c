/* SPDX-License-Identifier: MIT */
/* Descriptor passing inside a node. Each rank listens on an abstract Unix
 * socket whose name carries a random secret shared over MPI; a connecting peer
 * must present the secret and be the process MPI says it is (SO_PEERCRED).
 * The listeners close as soon as the mesh is built, so no process outside the
 * communicator can obtain descriptors. */
#include "bootstrap.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

typedef symaddr_bootstrap_hello_t hello_t;
#define HELLO_MAGIC SYMADDR_BOOTSTRAP_HELLO_MAGIC

typedef struct fdmsg {
    uint64_t seq;
    int32_t has_fd;
    int32_t pad_;
} fdmsg_t;

void (*symaddr_bootstrap_listen_hook)(const struct sockaddr_un *addr, unsigned addr_len,
                                      int node_rank) = NULL;

static socklen_t sock_name(struct sockaddr_un *sa, const uint8_t secret[16], int node_rank)
{
    char name[80];
    int n = snprintf(name, sizeof(name), "symaddr-");
    for (int i = 0; i < 16; i++)
        n += snprintf(name + n, sizeof(name) - (size_t)n, "%02x", secret[i]);
    n += snprintf(name + n, sizeof(name) - (size_t)n, "-%d", node_rank);
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    memcpy(sa->sun_path + 1, name, (size_t)n); /* leading NUL: abstract namespace */
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

static int elapsed_ms(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int)((t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000);
}

/* Wait until fd is readable; 0 on success, -1 on timeout or error. */
static int wait_readable(int fd, const struct timespec *t0, unsigned timeout_ms)
{
    for (;;) {
        int left = (int)timeout_ms - elapsed_ms(t0);
        if (left <= 0)
            return -1;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = poll(&p, 1, left);
        if (r > 0)
            return (p.revents & POLLIN) ? 0 : -1;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

static symaddr_status_t mesh_build(symaddr_bootstrap_t *b, char *why, size_t why_len)
{
    uint8_t secret[16];
    int32_t *pids = NULL;
    int listener = -1, st = SYMADDR_OK, all_st;
    struct sockaddr_un sa;
    struct timespec t0;
    int32_t pid = (int32_t)getpid();

    b->socks = malloc(sizeof(int) * (size_t)b->node_size);
    pids = malloc(sizeof(int32_t) * (size_t)b->node_size);
    if (!b->socks || !pids) {
        free(pids);
        free(b->socks);
        b->socks = NULL;
        snprintf(why, why_len, "out of host memory for the socket mesh");
        return SYMADDR_ERR_NO_MEMORY;
    }
    for (int i = 0; i < b->node_size; i++)
        b->socks[i] = -1;
    if (b->node_rank == 0 && getrandom(secret, sizeof(secret), 0) != (ssize_t)sizeof(secret))
        st = SYMADDR_ERR_BACKEND;
    MPI_Bcast(secret, sizeof(secret), MPI_BYTE, 0, b->node_comm);
    MPI_Allgather(&pid, 1, MPI_INT32_T, pids, 1, MPI_INT32_T, b->node_comm);

    listener = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    socklen_t len = sock_name(&sa, secret, b->node_rank);
    if (st || listener < 0 || bind(listener, (struct sockaddr *)&sa, len) != 0 ||
        listen(listener, b->node_size) != 0) {
        snprintf(why, why_len, "cannot listen on a Unix-domain socket: %s", strerror(errno));
        st = SYMADDR_ERR_BACKEND;
    }
    MPI_Allreduce(&st, &all_st, 1, MPI_INT, MPI_MIN, b->node_comm);
    if (all_st != SYMADDR_OK) {
        if (st == SYMADDR_OK)
            snprintf(why, why_len, "a node peer could not set up its socket");
        st = st ? st : SYMADDR_ERR_PEER;
        goto out;
    }

    if (symaddr_bootstrap_listen_hook) {
        len = sock_name(&sa, secret, b->node_rank);
        symaddr_bootstrap_listen_hook(&sa, len, b->node_rank);
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int k = 0; k < b->node_rank && st == SYMADDR_OK; k++) {
        hello_t h = {.magic = HELLO_MAGIC, .node_rank = b->node_rank, .pid = pid};
        memcpy(h.secret, secret, sizeof(secret));
        int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        len = sock_name(&sa, secret, k);
        if (s < 0 || connect(s, (struct sockaddr *)&sa, len) != 0 ||
            send(s, &h, sizeof(h), MSG_NOSIGNAL) != (ssize_t)sizeof(h)) {
            snprintf(why, why_len, "cannot connect to node rank %d: %s", k, strerror(errno));
            if (s >= 0)
                close(s);
            st = SYMADDR_ERR_BACKEND;
            break;
        }
        b->socks[k] = s;
    }
    for (int pending = b->node_size - 1 - b->node_rank; pending > 0 && st == SYMADDR_OK;) {
        if (wait_readable(listener, &t0, b->timeout_ms) != 0) {
            snprintf(why, why_len, "timed out after %u ms waiting for %d node peer(s) to connect",
                     b->timeout_ms, pending);
            st = SYMADDR_ERR_TIMEOUT;
            break;
        }
        int s = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        hello_t h;
        struct ucred cred;
        socklen_t clen = sizeof(cred);
        if (s < 0)
            continue;
        /* Anything that fails the handshake is dropped; the real peer may still come. */
        if (wait_readable(s, &t0, b->timeout_ms) != 0 ||
            recv(s, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || h.magic != HELLO_MAGIC ||
            memcmp(h.secret, secret, sizeof(secret)) != 0 || h.node_rank <= b->node_rank ||
            h.node_rank >= b->node_size || b->socks[h.node_rank] >= 0 ||
            getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0 ||
            cred.pid != pids[h.node_rank] || cred.uid != getuid()) {
            close(s);
            continue;
        }
        b->socks[h.node_rank] = s;
        pending--;
    }
    /* Whatever is still queued did not pass the handshake: accept it only to close it, so that
     * it hears the refusal now instead of hanging on a dropped backlog. */
    for (struct pollfd p = {.fd = listener, .events = POLLIN}; poll(&p, 1, 0) > 0;) {
        int s = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        if (s < 0)
            break;
        close(s);
    }
    MPI_Allreduce(&st, &all_st, 1, MPI_INT, MPI_MIN, b->node_comm);
    if (st == SYMADDR_OK && all_st != SYMADDR_OK) {
        snprintf(why, why_len, "a node peer could not join the socket mesh");
        st = SYMADDR_ERR_PEER;
    }
out:
    if (listener >= 0)
        close(listener);
    free(pids);
    if (st != SYMADDR_OK) {
        for (int i = 0; i < b->node_size; i++)
            if (b->socks[i] >= 0)
                close(b->socks[i]);
        free(b->socks);
        b->socks = NULL;
    }
    return (symaddr_status_t)st;
}

static int send_fd(int sock, uint64_t seq, int fd)
{
    fdmsg_t m = {.seq = seq, .has_fd = fd >= 0};
    struct iovec iov = {.iov_base = &m, .iov_len = sizeof(m)};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0) {
        memset(&u, 0, sizeof(u));
        msg.msg_control = u.buf;
        msg.msg_controllen = sizeof(u.buf);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    return sendmsg(sock, &msg, MSG_NOSIGNAL) == (ssize_t)sizeof(m) ? 0 : -1;
}

/* Returns 0 and *fd_p (-1 when the peer sent none), or -1. */
static int recv_fd(int sock, uint64_t seq, int *fd_p)
{
    fdmsg_t m;
    struct iovec iov = {.iov_base = &m, .iov_len = sizeof(m)};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                         .msg_controllen = sizeof(u.buf)};
    int fd = -1;
    ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    for (struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
            memcpy(&fd, CMSG_DATA(c), sizeof(int));
    if (n != (ssize_t)sizeof(m) || m.seq != seq || (msg.msg_flags & MSG_CTRUNC) ||
        (m.has_fd != 0) != (fd >= 0)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *fd_p = fd;
    return 0;
}

symaddr_status_t symaddr_bootstrap_fd_alltoall(symaddr_bootstrap_t *b, int my_fd, int *fds_out,
                                               char *why, size_t why_len)
{
    symaddr_status_t st;
    struct timespec t0;

    for (int i = 0; i < b->node_size; i++)
        fds_out[i] = -1;
    if (b->node_size == 1)
        return SYMADDR_OK;
    if (!b->socks && (st = mesh_build(b, why, why_len)) != SYMADDR_OK)
        return st;
    uint64_t seq = ++b->fd_seq;
    for (int p = 0; p < b->node_size; p++) {
        if (p != b->node_rank && send_fd(b->socks[p], seq, my_fd) != 0) {
            snprintf(why, why_len, "cannot send a descriptor to node rank %d: %s", p,
                     strerror(errno));
            st = SYMADDR_ERR_PEER;
            goto err;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int p = 0; p < b->node_size; p++) {
        if (p == b->node_rank)
            continue;
        if (wait_readable(b->socks[p], &t0, b->timeout_ms) != 0) {
            snprintf(why, why_len,
                     "timed out after %u ms waiting for node rank %d's descriptor; did it exit?",
                     b->timeout_ms, p);
            st = SYMADDR_ERR_TIMEOUT;
            goto err;
        }
        if (recv_fd(b->socks[p], seq, &fds_out[p]) != 0) {
            snprintf(why, why_len, "node rank %d sent a malformed descriptor message", p);
            st = SYMADDR_ERR_PEER;
            goto err;
        }
    }
    return SYMADDR_OK;
err:
    for (int i = 0; i < b->node_size; i++)
        if (fds_out[i] >= 0) {
            close(fds_out[i]);
            fds_out[i] = -1;
        }
    return st;
}
