/* SPDX-License-Identifier: MIT */
/* Descriptor passing inside a node. Each rank listens on a Unix socket in a directory of its
 * own under a fresh random name, mode 0700, and only then tells its node peers the path over
 * MPI, so nobody can take the name first and no other user can even connect (connect needs
 * search permission on the directory): an abstract name, which anyone reads in /proc/net/unix,
 * let another user's flood of connections fill the backlog until the peers' connects ran out of
 * time. A connection is checked before anything is read from it: the connecting process must
 * be one of the node peers MPI named (SO_PEERCRED pid and uid), else it is closed at once, so
 * that a stranger can neither join nor stall the mesh. The peer then presents the node's
 * secret. The listeners close, and their paths go, as soon as the mesh is built. */
#include "bootstrap.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

typedef symaddr_bootstrap_hello_t hello_t;
#define HELLO_MAGIC SYMADDR_BOOTSTRAP_HELLO_MAGIC
#define NAME_BYTES 16
#define PATH_BYTES 108 /* sockaddr_un's sun_path */

typedef struct fdmsg {
    uint64_t seq;
    int32_t has_fd;
    int32_t pad_;
} fdmsg_t;

/* What each rank tells its node peers over MPI. */
typedef struct peer_rec {
    char path[PATH_BYTES]; /* its listener's */
    int32_t pid;
    int32_t status;
} peer_rec_t;

void (*symaddr_bootstrap_listen_hook)(const struct sockaddr_un *addr, unsigned addr_len,
                                      int node_rank) = NULL;
void (*symaddr_bootstrap_fd_hook)(int node_rank, uint64_t seq) = NULL;

static socklen_t sock_addr(struct sockaddr_un *sa, const char *path)
{
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    size_t n = strnlen(path, sizeof(sa->sun_path) - 1);
    memcpy(sa->sun_path, path, n);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
}

/* Milliseconds left until deadline_ns, at least 0, for poll. */
static int ms_left(uint64_t deadline_ns)
{
    uint64_t now = symaddr_now_ns();
    if (now >= deadline_ns)
        return 0;
    uint64_t ms = (deadline_ns - now + 999999) / 1000000;
    return ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

/* Wait until fd has events; 0 when it has, -1 on timeout or error. */
static int wait_fd(int fd, short events, uint64_t deadline_ns)
{
    for (;;) {
        struct pollfd p = {.fd = fd, .events = events};
        int left = ms_left(deadline_ns);
        int r = poll(&p, 1, left);
        if (r > 0)
            return (p.revents & events) ? 0 : -1;
        if (r == 0 || (r < 0 && errno != EINTR))
            return -1;
    }
}

/* A listener at path: <base>/symaddr-<32 random hex digits>/s, in a directory this rank made
 * with mode 0700, under the first of $XDG_RUNTIME_DIR, $TMPDIR and /tmp that leaves room for
 * it; a name someone holds already is skipped. */
static int listen_private(char path[PATH_BYTES], int backlog)
{
    const char *bases[] = {getenv("XDG_RUNTIME_DIR"), getenv("TMPDIR"), "/tmp"};
    int e = ENAMETOOLONG;
    for (size_t k = 0; k < sizeof(bases) / sizeof(bases[0]); k++) {
        if (!bases[k] || bases[k][0] != '/')
            continue;
        for (int attempt = 0; attempt < 16; attempt++) {
            uint8_t name[NAME_BYTES];
            if (getrandom(name, NAME_BYTES, 0) != NAME_BYTES)
                return -1;
            int n = snprintf(path, PATH_BYTES, "%s/symaddr-", bases[k]);
            for (int i = 0; i < NAME_BYTES && n > 0 && n < PATH_BYTES; i++)
                n += snprintf(path + n, PATH_BYTES - (size_t)n, "%02x", name[i]);
            if (n < 0 || n + 3 > PATH_BYTES) /* and "/s" */
                break;
            if (mkdir(path, 0700) != 0) {
                e = errno;
                if (e == EEXIST)
                    continue;
                break; /* the next base */
            }
            chmod(path, 0700); /* whatever the umask */
            memcpy(path + n, "/s", 3);
            struct sockaddr_un sa;
            socklen_t len = sock_addr(&sa, path);
            int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
            if (s >= 0 && bind(s, (struct sockaddr *)&sa, len) == 0 && listen(s, backlog) == 0)
                return s;
            e = errno;
            if (s >= 0)
                close(s);
            unlink(path);
            path[n] = '\0';
            rmdir(path);
            break;
        }
    }
    errno = e;
    return -1;
}

/* Whether path is a listener of listen_private's: a socket at <base>/symaddr-<hex>/s. */
static bool is_listener(char path[PATH_BYTES])
{
    struct stat st;
    path[PATH_BYTES - 1] = '\0';
    size_t n = strlen(path), hex = 2 * NAME_BYTES, tail = strlen("/symaddr-") + hex + 2;
    if (n < tail || strcmp(path + n - 2, "/s") != 0 ||
        strncmp(path + n - tail, "/symaddr-", strlen("/symaddr-")) != 0)
        return false;
    for (size_t i = n - 2 - hex; i < n - 2; i++)
        if (!strchr("0123456789abcdef", path[i]))
            return false;
    return lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_uid == getuid();
}

/* Remove a listener's path and its directory. */
static void remove_path(char path[PATH_BYTES])
{
    path[PATH_BYTES - 1] = '\0';
    unlink(path);
    char *slash = strrchr(path, '/');
    if (slash) {
        *slash = '\0';
        rmdir(path);
    }
}

/* Close the listener and remove its path. */
static void unlisten(int s, char path[PATH_BYTES])
{
    close(s);
    remove_path(path);
}

/* Connect to node rank k's listener and introduce ourselves; the socket, or -1. */
static int connect_peer(const peer_rec_t *peer, const hello_t *h, uint64_t deadline_ns)
{
    struct sockaddr_un sa;
    socklen_t len = sock_addr(&sa, peer->path);
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0)
        return -1;
    /* A full backlog answers EAGAIN: the listener drops strangers at once, so retry. */
    while (connect(s, (struct sockaddr *)&sa, len) != 0) {
        if ((errno != EAGAIN && errno != EINTR) || symaddr_now_ns() >= deadline_ns) {
            close(s);
            return -1;
        }
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    if (wait_fd(s, POLLOUT, deadline_ns) != 0 ||
        send(s, h, sizeof(*h), MSG_NOSIGNAL) != (ssize_t)sizeof(*h)) {
        close(s);
        return -1;
    }
    return s;
}

/* The node rank of the process behind s when it is a node peer that should connect to us and
 * has not yet; -1 for anyone else. Nothing is read from s. */
static int identify(const symaddr_bootstrap_t *b, const peer_rec_t *peers, int s)
{
    struct ucred cred;
    socklen_t clen = sizeof(cred);
    if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &clen) != 0 || cred.uid != getuid())
        return -1;
    for (int q = b->node_rank + 1; q < b->node_size; q++)
        if (peers[q].pid == cred.pid && b->socks[q] < 0)
            return q;
    return -1;
}

static symaddr_status_t mesh_build(symaddr_bootstrap_t *b, char *why, size_t why_len)
{
    uint8_t secret[16];
    peer_rec_t mine, *peers = NULL;
    int listener = -1, st = SYMADDR_OK, all_st = SYMADDR_OK;
    uint64_t deadline = symaddr_bootstrap_deadline(b, 0);
    int32_t pid = (int32_t)getpid();
    int *pending = NULL; /* accepted node peers whose hello is not in yet */

    b->socks = malloc(sizeof(int) * (size_t)b->node_size);
    peers = calloc((size_t)b->node_size, sizeof(*peers));
    pending = malloc(sizeof(int) * (size_t)b->node_size);
    if (!b->socks || !peers || !pending) {
        free(peers);
        free(pending);
        free(b->socks);
        b->socks = NULL;
        snprintf(why, why_len, "out of host memory for the socket mesh");
        return SYMADDR_ERR_NO_MEMORY;
    }
    for (int i = 0; i < b->node_size; i++)
        b->socks[i] = pending[i] = -1;
    if (b->node_rank == 0 && getrandom(secret, sizeof(secret), 0) != (ssize_t)sizeof(secret))
        memset(secret, 0, sizeof(secret)); /* the pid check still stands; rank 0 reports it */
    memset(&mine, 0, sizeof(mine));
    mine.pid = pid;
    listener = listen_private(mine.path, b->node_size + 64);
    if (listener < 0) {
        snprintf(why, why_len,
                 "cannot listen on a Unix-domain socket in a private directory under "
                 "$XDG_RUNTIME_DIR, $TMPDIR or /tmp: %s; make one of them writable",
                 strerror(errno));
        st = SYMADDR_ERR_BACKEND;
    }
    mine.status = st;
    symaddr_status_t mst = symaddr_boot_bcast(b, &b->node, secret, sizeof(secret), 0, deadline);
    if (mst == SYMADDR_OK)
        mst = symaddr_bootstrap_node_allgather(b, &mine, peers, sizeof(mine));
    if (mst != SYMADDR_OK) {
        snprintf(why, why_len,
                 mst == SYMADDR_ERR_TIMEOUT
                     ? "timed out after %u ms exchanging socket names with the "
                       "node; did a rank exit?"
                     : "MPI failed exchanging socket names with the node (%u ms)",
                 b->timeout_ms);
        st = mst;
        goto out;
    }
    for (int q = 0; q < b->node_size && st == SYMADDR_OK; q++)
        if (peers[q].status != SYMADDR_OK) {
            snprintf(why, why_len, "node rank %d could not set up its socket", q);
            st = SYMADDR_ERR_PEER;
        }
    if (st != SYMADDR_OK)
        goto out;

    if (symaddr_bootstrap_listen_hook) {
        struct sockaddr_un sa;
        socklen_t len = sock_addr(&sa, mine.path);
        symaddr_bootstrap_listen_hook(&sa, len, b->node_rank);
    }
    hello_t h = {.magic = HELLO_MAGIC, .node_rank = b->node_rank, .pid = pid};
    memcpy(h.secret, secret, sizeof(secret));
    for (int k = 0; k < b->node_rank && st == SYMADDR_OK; k++) {
        if ((b->socks[k] = connect_peer(&peers[k], &h, deadline)) < 0) {
            snprintf(why, why_len, "cannot connect to node rank %d: %s", k, strerror(errno));
            st = SYMADDR_ERR_BACKEND;
        }
    }
    /* Accept the higher node ranks. Strangers are closed before anything is read; a peer's
     * hello is read whenever it arrives, so no connection holds up another. */
    for (int missing = b->node_size - 1 - b->node_rank; missing > 0 && st == SYMADDR_OK;) {
        struct pollfd p[b->node_size + 1];
        int np = 0;
        p[np++] = (struct pollfd){.fd = listener, .events = POLLIN};
        for (int q = 0; q < b->node_size; q++)
            if (pending[q] >= 0)
                p[np++] = (struct pollfd){.fd = pending[q], .events = POLLIN};
        int r = poll(p, (nfds_t)np, ms_left(deadline));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            snprintf(why, why_len, "timed out after %u ms waiting for %d node peer(s) to connect",
                     b->timeout_ms, missing);
            st = SYMADDR_ERR_TIMEOUT;
            break;
        }
        if (p[0].revents & POLLIN) {
            int s;
            while ((s = accept4(listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
                int q = identify(b, peers, s);
                if (q < 0 || pending[q] >= 0)
                    close(s); /* not a node peer, or one already pending */
                else
                    pending[q] = s;
            }
        }
        for (int q = 0; q < b->node_size; q++) {
            hello_t got;
            if (pending[q] < 0)
                continue;
            ssize_t n = recv(pending[q], &got, sizeof(got), 0);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                continue;
            if (n == (ssize_t)sizeof(got) && got.magic == HELLO_MAGIC &&
                memcmp(got.secret, secret, sizeof(secret)) == 0 && got.node_rank == q &&
                got.pid == peers[q].pid) {
                b->socks[q] = pending[q];
                missing--;
            } else {
                close(pending[q]); /* the peer's process, but not speaking symaddr */
            }
            pending[q] = -1;
        }
    }
    /* Whatever is still queued did not pass: accept it only to close it, so that it hears
     * the refusal now instead of hanging on a dropped backlog. */
    for (int s; (s = accept4(listener, NULL, NULL, SOCK_CLOEXEC)) >= 0;)
        close(s);
    int st_in = (int)st, st_all = 0;
    mst = symaddr_boot_allreduce_int(b, &b->node, &st_in, &st_all, 1, 0, deadline);
    all_st = st_all;
    if (mst != SYMADDR_OK && st == SYMADDR_OK) {
        snprintf(why, why_len, "timed out after %u ms confirming the socket mesh with the node",
                 b->timeout_ms);
        st = mst;
    } else if (st == SYMADDR_OK && all_st != SYMADDR_OK) {
        snprintf(why, why_len, "a node peer could not join the socket mesh");
        st = SYMADDR_ERR_PEER;
    }
out:
    if (listener >= 0)
        unlisten(listener, mine.path);
    /* A peer that died before closing its listener left its path: the survivors remove it
     * (the same user's, and the process is gone), so that nothing outlives a failed start. */
    for (int q = 0; st != SYMADDR_OK && q < b->node_size; q++)
        if (q != b->node_rank && peers[q].pid > 0 && peers[q].path[0] == '/' &&
            kill(peers[q].pid, 0) != 0 && errno == ESRCH && is_listener(peers[q].path))
            remove_path(peers[q].path);
    for (int q = 0; q < b->node_size; q++)
        if (pending[q] >= 0)
            close(pending[q]);
    free(pending);
    free(peers);
    if (st != SYMADDR_OK) {
        for (int i = 0; i < b->node_size; i++)
            if (b->socks[i] >= 0)
                close(b->socks[i]);
        free(b->socks);
        b->socks = NULL;
    }
    return (symaddr_status_t)st;
}

static symaddr_status_t send_fd(int sock, uint64_t seq, int fd, uint64_t deadline_ns)
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
    for (;;) {
        ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n == (ssize_t)sizeof(m))
            return SYMADDR_OK;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            if (wait_fd(sock, POLLOUT, deadline_ns) != 0)
                return SYMADDR_ERR_TIMEOUT;
            continue;
        }
        return SYMADDR_ERR_PEER;
    }
}

/* This exchange's message from sock, dropping what earlier, failed exchanges left queued.
 * SYMADDR_OK with *fd_p (-1 when the peer sent none); TIMEOUT; PEER for a malformed message
 * or one from a later exchange; NO_MEMORY when the descriptor could not be received because
 * this process has no descriptor left. */
static symaddr_status_t recv_fd(int sock, uint64_t seq, int *fd_p, uint64_t deadline_ns)
{
    for (;;) {
        fdmsg_t m;
        struct iovec iov = {.iov_base = &m, .iov_len = sizeof(m)};
        union {
            char buf[CMSG_SPACE(sizeof(int))];
            struct cmsghdr align;
        } u;
        struct msghdr msg = {.msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = u.buf,
                             .msg_controllen = sizeof(u.buf)};
        int fd = -1;
        ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            if (wait_fd(sock, POLLIN, deadline_ns) != 0)
                return SYMADDR_ERR_TIMEOUT;
            continue;
        }
        for (struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                memcpy(&fd, CMSG_DATA(c), sizeof(int));
        if (n != (ssize_t)sizeof(m)) {
            if (fd >= 0)
                close(fd);
            return SYMADDR_ERR_PEER;
        }
        if (m.seq < seq) { /* left over from an exchange that failed */
            if (fd >= 0)
                close(fd);
            continue;
        }
        if (m.has_fd && fd < 0 && (msg.msg_flags & MSG_CTRUNC))
            return SYMADDR_ERR_NO_MEMORY; /* the kernel dropped it: no descriptor slot left */
        if (m.seq != seq || (msg.msg_flags & MSG_CTRUNC) || (m.has_fd != 0) != (fd >= 0)) {
            if (fd >= 0)
                close(fd);
            return SYMADDR_ERR_PEER;
        }
        *fd_p = fd;
        return SYMADDR_OK;
    }
}

symaddr_status_t symaddr_bootstrap_fd_alltoall(symaddr_bootstrap_t *b, int my_fd, int *fds_out,
                                               char *why, size_t why_len)
{
    symaddr_status_t st = SYMADDR_OK;
    uint64_t deadline = symaddr_bootstrap_deadline(b, 0);

    for (int i = 0; i < b->node_size; i++)
        fds_out[i] = -1;
    if (b->node_size == 1)
        return SYMADDR_OK;
    if (!b->socks && (st = mesh_build(b, why, why_len)) != SYMADDR_OK)
        return st;
    /* Numbered before anything can fail, so that every rank numbers every exchange alike. */
    uint64_t seq = ++b->fd_seq;
    if (symaddr_bootstrap_fd_hook)
        symaddr_bootstrap_fd_hook(b->node_rank, seq);
    for (int p = 0; p < b->node_size && st == SYMADDR_OK; p++) {
        if (p == b->node_rank || (st = send_fd(b->socks[p], seq, my_fd, deadline)) == SYMADDR_OK)
            continue;
        if (st == SYMADDR_ERR_TIMEOUT)
            snprintf(why, why_len,
                     "timed out after %u ms sending a descriptor to node rank %d; "
                     "is it stopped?",
                     b->timeout_ms, p);
        else
            snprintf(why, why_len, "cannot send a descriptor to node rank %d: it is gone", p);
    }
    for (int p = 0; p < b->node_size && st == SYMADDR_OK; p++) {
        if (p == b->node_rank)
            continue;
        st = recv_fd(b->socks[p], seq, &fds_out[p], deadline);
        if (st == SYMADDR_ERR_TIMEOUT)
            snprintf(why, why_len,
                     "timed out after %u ms waiting for node rank %d's descriptor; did it exit?",
                     b->timeout_ms, p);
        else if (st == SYMADDR_ERR_NO_MEMORY)
            snprintf(why, why_len,
                     "out of file descriptors: could not receive node rank %d's "
                     "descriptor; raise the limit (ulimit -n)",
                     p);
        else if (st != SYMADDR_OK)
            snprintf(why, why_len, "node rank %d sent a malformed descriptor message", p);
    }
    if (st == SYMADDR_OK)
        return SYMADDR_OK;
    for (int i = 0; i < b->node_size; i++)
        if (fds_out[i] >= 0) {
            close(fds_out[i]);
            fds_out[i] = -1;
        }
    return st;
}
