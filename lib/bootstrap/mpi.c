/* SPDX-License-Identifier: MIT */
/* The MPI row of the bootstrap's operations, the default and the only one built in: byte
 * exchanges over a duplicate of the user's communicator, each nonblocking MPI waited for until
 * a deadline, so that a peer that died or stopped costs a timeout, never a hang. */
#include "bootstrap.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* An MPI operation still posted after its wait ran out: MPI cannot cancel a collective (nor
 * reliably a send), so its buffer lives until it completes or the process ends. */
typedef struct parked {
    MPI_Request req;
    void *buf;
    struct parked *next;
} parked_t;

typedef struct mpi_state {
    MPI_Comm comm;
    parked_t *parked;
} mpi_state_t;

#define TAG 0x5359 /* the bootstrap's point-to-point messages on its own communicator */

/* Operations of finalized contexts that MPI still holds (mpi_fini). */
static parked_t *orphans;
static pthread_mutex_t orphans_lock = PTHREAD_MUTEX_INITIALIZER;

/* Completed parked operations give their buffers back. */
static void reap(mpi_state_t *m)
{
    for (parked_t **pp = &m->parked; *pp;) {
        parked_t *p = *pp;
        int done = 0;
        if (MPI_Test(&p->req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done) {
            *pp = p->next;
            free(p->buf);
            free(p);
        } else {
            pp = &p->next;
        }
    }
}

static void park(mpi_state_t *m, MPI_Request req, void *buf)
{
    parked_t *p = malloc(sizeof(*p));
    if (p) { /* without memory the buffer leaks, which is all that is safe */
        p->req = req;
        p->buf = buf;
        p->next = m->parked;
        m->parked = p;
    }
}

/* Wait for n requests until timeout_ms from now. bufs[i] belongs to request i: on SYMADDR_OK
 * they are the caller's again; on a failure this takes them all, parking those of requests
 * still posted and freeing the rest. status_p, if given, receives request 0's status. */
static symaddr_status_t wait_reqs(mpi_state_t *m, MPI_Request *req, void **bufs, int n,
                                  unsigned timeout_ms, MPI_Status *status_p)
{
    uint64_t deadline_ns = symaddr_now_ns() + (uint64_t)timeout_ms * 1000000u;
    symaddr_status_t st = SYMADDR_OK;
    if (m->parked)
        reap(m);
    for (unsigned spin = 0; st == SYMADDR_OK; spin++) {
        int left = 0;
        for (int i = 0; i < n; i++) {
            int done = 0;
            MPI_Status s;
            if (req[i] == MPI_REQUEST_NULL)
                continue;
            /* an error completes and frees the request */
            if (MPI_Test(&req[i], &done, &s) != MPI_SUCCESS)
                st = SYMADDR_ERR_MPI;
            else if (done && i == 0 && status_p)
                *status_p = s;
            left += !done && req[i] != MPI_REQUEST_NULL;
        }
        if (st != SYMADDR_OK || left == 0)
            break;
        if ((spin & 255) == 255) {
            if (symaddr_now_ns() >= deadline_ns) {
                st = SYMADDR_ERR_TIMEOUT;
                break;
            }
            if (spin > 4096) {
                struct timespec ts = {0, 20000};
                nanosleep(&ts, NULL); /* a long wait: leave the core to the ranks that share it */
            } else {
                sched_yield();
            }
        }
    }
    if (st != SYMADDR_OK)
        for (int k = 0; k < n; k++) {
            if (req[k] != MPI_REQUEST_NULL)
                park(m, req[k], bufs[k]);
            else
                free(bufs[k]);
            bufs[k] = NULL;
        }
    return st;
}

/* Sends and receives on buffers of the operation's own: a late completion never writes the
 * caller's memory. */
static symaddr_status_t mpi_sendrecv(void *state, int to, const void *send, size_t send_bytes,
                                     int from, void *recv, size_t recv_bytes, unsigned timeout_ms)
{
    mpi_state_t *m = state;
    MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    void *bufs[2] = {malloc(recv_bytes + 1), malloc(send_bytes + 1)};
    symaddr_status_t st = SYMADDR_OK;
    if (send_bytes >= (size_t)0x7fffffff || recv_bytes >= (size_t)0x7fffffff)
        st = SYMADDR_ERR_INVALID_SIZE;
    else if (!bufs[0] || !bufs[1])
        st = SYMADDR_ERR_NO_MEMORY;
    /* one byte more than expected: a longer message is seen, not truncated into an error */
    else if (from >= 0 && MPI_Irecv(bufs[0], (int)recv_bytes + 1, MPI_BYTE, from, TAG, m->comm,
                                    &req[0]) != MPI_SUCCESS)
        st = SYMADDR_ERR_MPI;
    else if (to >= 0 &&
             (memcpy(bufs[1], send, send_bytes), MPI_Isend(bufs[1], (int)send_bytes, MPI_BYTE, to,
                                                           TAG, m->comm, &req[1])) != MPI_SUCCESS)
        st = SYMADDR_ERR_MPI;
    if (st != SYMADDR_OK) {
        if (req[0] != MPI_REQUEST_NULL)
            park(m, req[0], bufs[0]);
        else
            free(bufs[0]);
        free(bufs[1]);
        return st;
    }
    MPI_Status s;
    st = wait_reqs(m, req, bufs, 2, timeout_ms, &s);
    if (st != SYMADDR_OK)
        return st;
    if (from >= 0) {
        int count = -1;
        MPI_Get_count(&s, MPI_BYTE, &count);
        if (count != (int)recv_bytes)
            st = SYMADDR_ERR_PEER; /* the peer is in another exchange */
        else
            memcpy(recv, bufs[0], recv_bytes);
    }
    free(bufs[0]);
    free(bufs[1]);
    return st;
}

static symaddr_status_t mpi_allgather(void *state, const void *mine, void *all, size_t bytes,
                                      unsigned timeout_ms)
{
    mpi_state_t *m = state;
    MPI_Request req;
    int n;
    MPI_Comm_size(m->comm, &n);
    if (bytes > (size_t)0x7fffffff / (size_t)n)
        return SYMADDR_ERR_INVALID_SIZE;
    /* send and receive never start at one address, even with nothing to send: Open MPI's
     * non-blocking collectives take send == recv for in place */
    size_t apart = (bytes + 15) / 16 * 16 + 16;
    void *buf = malloc(apart + bytes * (size_t)n + 1);
    if (!buf)
        return SYMADDR_ERR_NO_MEMORY;
    memcpy(buf, mine, bytes);
    if (MPI_Iallgather(buf, (int)bytes, MPI_BYTE, (char *)buf + apart, (int)bytes, MPI_BYTE,
                       m->comm, &req) != MPI_SUCCESS) {
        free(buf);
        return SYMADDR_ERR_MPI;
    }
    symaddr_status_t st = wait_reqs(m, &req, &buf, 1, timeout_ms, NULL);
    if (st == SYMADDR_OK) {
        memcpy(all, (char *)buf + apart, bytes * (size_t)n);
        free(buf);
    }
    return st;
}

static symaddr_status_t mpi_barrier(void *state, unsigned timeout_ms)
{
    mpi_state_t *m = state;
    MPI_Request req;
    void *none = NULL;
    if (MPI_Ibarrier(m->comm, &req) != MPI_SUCCESS)
        return SYMADDR_ERR_MPI;
    return wait_reqs(m, &req, &none, 1, timeout_ms, NULL);
}

/* An operation still posted (a peer died, or gave up on this rank) keeps its communicator and
 * buffer: freeing either under MPI would be erroneous. They stay on the process's list of
 * orphans, held rather than lost, until the process ends. */
static void mpi_fini(void *state)
{
    mpi_state_t *m = state;
    reap(m);
    if (m->parked) {
        pthread_mutex_lock(&orphans_lock);
        parked_t *last = m->parked;
        while (last->next)
            last = last->next;
        last->next = orphans;
        orphans = m->parked;
        pthread_mutex_unlock(&orphans_lock);
    } else if (m->comm != MPI_COMM_NULL) {
        MPI_Comm_free(&m->comm);
    }
    free(m);
}

static const symaddr_bootstrap_ops_t mpi_ops = {
    .version = SYMADDR_BOOTSTRAP_OPS_VERSION,
    .sendrecv = mpi_sendrecv,
    .allgather = mpi_allgather,
    .barrier = mpi_barrier,
    .fini = mpi_fini,
};

symaddr_status_t symaddr_bootstrap_mpi_check(char *why, size_t why_len)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING]; /* MPICH's bound is 8 KiB */
    int len = 0, world = 0;
    const char *rebuild = "start the program with the mpiexec of the MPI symaddr was built with, "
                          "or rebuild symaddr with the launcher's MPI (meson setup -Dmpicc=<its "
                          "mpicc>, or that MPI's bin folder first on PATH)";
    if (MPI_Get_library_version(lib, &len) != MPI_SUCCESS)
        lib[0] = '\0';
    lib[sizeof(lib) - 1] = '\0';
    int line = (int)strcspn(lib, "\n");
    int lib_openmpi = strstr(lib, "Open MPI") != NULL;
    /* Open MPI's library always names itself; MPICH's derivatives name themselves variously */
    if (SYMADDR_MPI_HEADER_OPENMPI >= 0 && lib[0] && lib_openmpi != SYMADDR_MPI_HEADER_OPENMPI) {
        snprintf(why, why_len,
                 "libsymaddr was compiled against " SYMADDR_MPI_HEADER "'s mpi.h but runs on "
                 "another MPI's library (%.*s), whose handles it cannot read: link it to the MPI "
                 "it was built with (LD_LIBRARY_PATH), or rebuild symaddr with this one "
                 "(meson setup -Dmpicc=<its mpicc>)",
                 line > 120 ? 120 : line, lib);
        return SYMADDR_ERR_MPI;
    }
    /* A launcher of another MPI starts every process as a singleton of this one: N jobs of
     * one rank, each of which would run the program alone. The launchers say how many they
     * started (Hydra and PMI-1: PMI_SIZE, MPI_LOCALNRANKS; Open MPI's: OMPI_COMM_WORLD_SIZE). */
    static const char *const vars[] = {"PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS"};
    if (MPI_Comm_size(MPI_COMM_WORLD, &world) != MPI_SUCCESS || world != 1)
        return SYMADDR_OK;
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 1) {
            snprintf(why, why_len,
                     "MPI_COMM_WORLD has 1 process, but the launcher started %d (%s=%s): this "
                     "libsymaddr was built with " SYMADDR_MPI_HEADER " (%.*s) and another MPI's "
                     "launcher started it, so every process runs alone; %s",
                     atoi(v), vars[i], v, line > 80 ? 80 : line, lib, rebuild);
            return SYMADDR_ERR_MPI;
        }
    }
    return SYMADDR_OK;
}

symaddr_status_t symaddr_bootstrap_init(symaddr_bootstrap_t *b, MPI_Comm user_comm,
                                        int sim_node_size, unsigned timeout_ms, char *why,
                                        size_t why_len)
{
    mpi_state_t *m = calloc(1, sizeof(*m));
    MPI_Comm *dup = malloc(sizeof(MPI_Comm));
    MPI_Request req;
    int rank, size;
    symaddr_status_t st;

    memset(b, 0, sizeof(*b));
    b->comm = MPI_COMM_NULL;
    b->node.me = b->leaders.me = -1;
    if (!m || !dup) {
        free(m);
        free(dup);
        snprintf(why, why_len, "out of host memory");
        return SYMADDR_ERR_NO_MEMORY;
    }
    m->comm = MPI_COMM_NULL;
    /* The one step every rank must reach first: a rank that never calls symaddr_init costs
     * the others a timeout here. */
    if (MPI_Comm_idup(user_comm, dup, &req) != MPI_SUCCESS) {
        free(dup);
        free(m);
        snprintf(why, why_len, "MPI refused to duplicate the communicator");
        return SYMADDR_ERR_MPI;
    }
    void *owned = dup;
    st = wait_reqs(m, &req, &owned, 1, timeout_ms, NULL);
    if (st != SYMADDR_OK) {
        if (st == SYMADDR_ERR_TIMEOUT)
            snprintf(why, why_len,
                     "timed out after %u ms waiting for every rank of the "
                     "communicator to call symaddr_init; did a rank exit or skip it?",
                     timeout_ms);
        else
            snprintf(why, why_len, "MPI refused to duplicate the communicator");
        mpi_fini(m); /* the duplicate, if it ever completes, stays MPI's */
        return st;
    }
    m->comm = *dup;
    free(dup);
    /* MPI errors come back as statuses, so that symaddr reports them instead of MPI
     * aborting the job. */
    MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(m->comm, &rank);
    MPI_Comm_size(m->comm, &size);
    st = symaddr_bootstrap_start(b, &mpi_ops, m, rank, size, sim_node_size, timeout_ms, why,
                                 why_len);
    if (st == SYMADDR_OK)
        b->comm = m->comm;
    return st;
}
