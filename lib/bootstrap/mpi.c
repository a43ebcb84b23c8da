/* SPDX-License-Identifier: MIT */
/* The communicators of a context and every collective MPI call symaddr makes. Each call is
 * nonblocking MPI waited for until a deadline, so that a peer that died or stopped costs a
 * timeout, never a hang. */
#include "bootstrap.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void reap(symaddr_bootstrap_t *b);

/* Operations of finalized contexts that MPI still holds (symaddr_bootstrap_fini). */
static symaddr_mpi_parked_t *orphans;
static pthread_mutex_t orphans_lock = PTHREAD_MUTEX_INITIALIZER;

uint64_t symaddr_bootstrap_deadline(const symaddr_bootstrap_t *b, int fresh)
{
    if (fresh || b->deadline_ns == 0)
        return symaddr_now_ns() + (uint64_t)b->timeout_ms * 1000000u;
    return b->deadline_ns;
}

uint64_t symaddr_bootstrap_agree_deadline(const symaddr_bootstrap_t *b)
{
    uint64_t fresh = symaddr_bootstrap_deadline(b, 1);
    /* within a call, no later than its own deadline plus the timeout: twice the timeout from
     * the call's start, whatever ran out before */
    uint64_t cap = b->deadline_ns + (uint64_t)b->timeout_ms * 1000000u;
    return b->deadline_ns && cap < fresh ? cap : fresh;
}

void symaddr_bootstrap_call_end(symaddr_bootstrap_t *b) { b->deadline_ns = 0; }

void symaddr_bootstrap_call_begin(symaddr_bootstrap_t *b)
{
    if (b->parked)
        reap(b);
    b->deadline_ns = symaddr_bootstrap_deadline(b, 1);
}

/* Completed parked operations give their buffers back. */
static void reap(symaddr_bootstrap_t *b)
{
    for (symaddr_mpi_parked_t **pp = &b->parked; *pp;) {
        symaddr_mpi_parked_t *p = *pp;
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

/* Wait for req until deadline_ns. buf belongs to the operation: freed here, or kept with the
 * request when the wait runs out. */
static symaddr_status_t wait_req(symaddr_bootstrap_t *b, MPI_Request req, void *buf,
                                 uint64_t deadline_ns)
{
    for (unsigned spin = 0;; spin++) {
        int done = 0;
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return SYMADDR_ERR_MPI; /* MPI completed and freed the request with its error */
        if (done)
            return SYMADDR_OK;
        if ((spin & 255) == 255) {
            if (symaddr_now_ns() >= deadline_ns) {
                symaddr_mpi_parked_t *p = malloc(sizeof(*p));
                if (p) { /* without memory the buffer leaks, which is all that is safe */
                    p->req = req;
                    p->buf = buf;
                    p->next = b->parked;
                    b->parked = p;
                }
                return SYMADDR_ERR_TIMEOUT;
            }
            if (spin > 4096) {
                struct timespec ts = {0, 20000};
                nanosleep(&ts, NULL); /* a long wait: leave the core to the ranks that share it */
            } else {
                sched_yield();
            }
        }
    }
}

/* Runs start(send copy, recv copy) on buffers of the operation's own, then copies out. The two
 * never start at one address, even with nothing to send: Open MPI's non-blocking collectives
 * take send == recv for in place, and then exchange other messages than the peers expect. */
#define RUN_OWNED(b, send, send_bytes, recv, recv_bytes, deadline, start)                          \
    do {                                                                                           \
        MPI_Request req_;                                                                          \
        size_t apart_ = ((send_bytes) + 15) / 16 * 16 + 16;                                        \
        char *buf_ = malloc(apart_ + (recv_bytes) + 1);                                            \
        if (!buf_)                                                                                 \
            return SYMADDR_ERR_NO_MEMORY;                                                          \
        char *s_ = buf_, *r_ = buf_ + apart_;                                                      \
        (void)s_;                                                                                  \
        if ((send_bytes) > 0)                                                                      \
            memcpy(s_, (send), (send_bytes));                                                      \
        if ((start) != MPI_SUCCESS) {                                                              \
            free(buf_);                                                                            \
            return SYMADDR_ERR_MPI;                                                                \
        }                                                                                          \
        symaddr_status_t st_ = wait_req((b), req_, buf_, (deadline));                              \
        if (st_ == SYMADDR_OK && (recv_bytes) > 0)                                                 \
            memcpy((recv), r_, (recv_bytes));                                                      \
        if (st_ != SYMADDR_ERR_TIMEOUT)                                                            \
            free(buf_);                                                                            \
        return st_;                                                                                \
    } while (0)

symaddr_status_t symaddr_mpi_allgather(symaddr_bootstrap_t *b, MPI_Comm comm, const void *mine,
                                       void *all, size_t bytes, uint64_t deadline_ns)
{
    int n;
    MPI_Comm_size(comm, &n);
    if (bytes > (size_t)0x7fffffff)
        return SYMADDR_ERR_INVALID_SIZE;
    size_t total = bytes * (size_t)n;
    RUN_OWNED(b, mine, bytes, all, total, deadline_ns,
              MPI_Iallgather(s_, (int)bytes, MPI_BYTE, r_, (int)bytes, MPI_BYTE, comm, &req_));
}

/* Bytes a vector collective's buffer spans: the end of its last block. */
static size_t extent(MPI_Comm comm, const int *counts, const int *displs)
{
    int n;
    size_t end = 0;
    MPI_Comm_size(comm, &n);
    for (int i = 0; i < n; i++)
        if ((size_t)displs[i] + (size_t)counts[i] > end)
            end = (size_t)displs[i] + (size_t)counts[i];
    return end;
}

symaddr_status_t symaddr_mpi_allgatherv(symaddr_bootstrap_t *b, MPI_Comm comm, const void *mine,
                                        int mine_bytes, void *all, const int *counts,
                                        const int *displs, uint64_t deadline_ns)
{
    size_t total = extent(comm, counts, displs);
    RUN_OWNED(b, mine, (size_t)mine_bytes, all, total, deadline_ns,
              MPI_Iallgatherv(s_, mine_bytes, MPI_BYTE, r_, counts, displs, MPI_BYTE, comm, &req_));
}

symaddr_status_t symaddr_mpi_alltoallv(symaddr_bootstrap_t *b, MPI_Comm comm, const void *send,
                                       const int *send_counts, const int *send_displs, void *recv,
                                       const int *recv_counts, const int *recv_displs,
                                       uint64_t deadline_ns)
{
    size_t sent = extent(comm, send_counts, send_displs);
    size_t got = extent(comm, recv_counts, recv_displs);
    RUN_OWNED(b, send, sent, recv, got, deadline_ns,
              MPI_Ialltoallv(s_, send_counts, send_displs, MPI_BYTE, r_, recv_counts, recv_displs,
                             MPI_BYTE, comm, &req_));
}

symaddr_status_t symaddr_mpi_allreduce(symaddr_bootstrap_t *b, MPI_Comm comm, const void *in,
                                       void *out, int count, MPI_Datatype type, MPI_Op op,
                                       uint64_t deadline_ns)
{
    int tsize;
    MPI_Type_size(type, &tsize);
    size_t bytes = (size_t)count * (size_t)tsize;
    RUN_OWNED(b, in, bytes, out, bytes, deadline_ns,
              MPI_Iallreduce(s_, r_, count, type, op, comm, &req_));
}

symaddr_status_t symaddr_mpi_bcast(symaddr_bootstrap_t *b, MPI_Comm comm, void *buf, size_t bytes,
                                   int root, uint64_t deadline_ns)
{
    if (bytes > (size_t)0x7fffffff)
        return SYMADDR_ERR_INVALID_SIZE;
    /* send and receive share the buffer: r_ is s_ + bytes, so copy in twice */
    RUN_OWNED(b, buf, bytes, buf, bytes, deadline_ns,
              (memcpy(r_, s_, bytes), MPI_Ibcast(r_, (int)bytes, MPI_BYTE, root, comm, &req_)));
}

symaddr_status_t symaddr_mpi_barrier(symaddr_bootstrap_t *b, MPI_Comm comm, uint64_t deadline_ns)
{
    MPI_Request req;
    if (MPI_Ibarrier(comm, &req) != MPI_SUCCESS)
        return SYMADDR_ERR_MPI;
    return wait_req(b, req, NULL, deadline_ns);
}

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
    MPI_Comm host_comm = MPI_COMM_NULL, *dup = malloc(sizeof(MPI_Comm));
    MPI_Group node_group, group;
    MPI_Request req;
    int *node_ranks = NULL;
    symaddr_status_t st;

    memset(b, 0, sizeof(*b));
    b->comm = b->node_comm = MPI_COMM_NULL;
    b->timeout_ms = timeout_ms;
    if (!dup) {
        snprintf(why, why_len, "out of host memory");
        return SYMADDR_ERR_NO_MEMORY;
    }
    /* The one step every rank must reach first: a rank that never calls symaddr_init costs
     * the others a timeout here. */
    if (MPI_Comm_idup(user_comm, dup, &req) != MPI_SUCCESS) {
        free(dup);
        goto err_mpi;
    }
    st = wait_req(b, req, dup, symaddr_bootstrap_deadline(b, 1));
    if (st != SYMADDR_OK) {
        if (st == SYMADDR_ERR_TIMEOUT)
            snprintf(why, why_len,
                     "timed out after %u ms waiting for every rank of the "
                     "communicator to call symaddr_init; did a rank exit or skip it?",
                     timeout_ms);
        else
            snprintf(why, why_len, "MPI refused to duplicate the communicator");
        if (st != SYMADDR_ERR_TIMEOUT)
            free(dup);
        symaddr_bootstrap_fini(b);
        return st;
    }
    b->comm = *dup;
    free(dup);
    /* MPI errors come back as statuses, so that symaddr reports them instead of MPI
     * aborting the job. */
    MPI_Comm_set_errhandler(b->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(b->comm, &b->rank);
    MPI_Comm_size(b->comm, &b->size);
    /* The split below is collective: ranks that disagree on the node size would call it a
     * different number of times, so they agree first. */
    int sim[2] = {sim_node_size, -sim_node_size}, range[2];
    st = symaddr_mpi_allreduce(b, b->comm, sim, range, 2, MPI_INT, MPI_MAX,
                               symaddr_bootstrap_deadline(b, 1));
    if (st == SYMADDR_OK && range[0] != -range[1]) {
        snprintf(why, why_len,
                 "SYMADDR_NODE_SIZE (symaddr_config_t.node_size) differs between ranks: %d on "
                 "some, %d on others; set it alike on every rank",
                 -range[1], range[0]);
        st = SYMADDR_ERR_MISMATCH;
    } else if (st == SYMADDR_ERR_TIMEOUT) {
        snprintf(why, why_len, "timed out after %u ms comparing the node size of the ranks",
                 timeout_ms);
    } else if (st != SYMADDR_OK) {
        snprintf(why, why_len, "MPI failed while the ranks compared their node size");
    }
    if (st != SYMADDR_OK) {
        symaddr_bootstrap_fini(b);
        return st;
    }
    if (MPI_Comm_split_type(b->comm, MPI_COMM_TYPE_SHARED, b->rank, MPI_INFO_NULL, &host_comm) !=
        MPI_SUCCESS)
        goto err_mpi;
    MPI_Comm_size(host_comm, &b->host_size);
    if (sim_node_size > 0) {
        int host_rank;
        MPI_Comm_rank(host_comm, &host_rank);
        if (MPI_Comm_split(host_comm, host_rank / sim_node_size, b->rank, &b->node_comm) !=
            MPI_SUCCESS)
            goto err_mpi;
        MPI_Comm_free(&host_comm);
    } else {
        b->node_comm = host_comm;
    }
    host_comm = MPI_COMM_NULL;
    MPI_Comm_rank(b->node_comm, &b->node_rank);
    MPI_Comm_size(b->node_comm, &b->node_size);

    b->node_to_rank = malloc(sizeof(int) * (size_t)b->node_size);
    node_ranks = malloc(sizeof(int) * (size_t)b->node_size);
    if (!b->node_to_rank || !node_ranks) {
        snprintf(why, why_len, "out of host memory for %d node ranks", b->node_size);
        free(node_ranks);
        symaddr_bootstrap_fini(b);
        return SYMADDR_ERR_NO_MEMORY;
    }
    for (int i = 0; i < b->node_size; i++)
        node_ranks[i] = i;
    MPI_Comm_group(b->node_comm, &node_group);
    MPI_Comm_group(b->comm, &group);
    MPI_Group_translate_ranks(node_group, b->node_size, node_ranks, group, b->node_to_rank);
    MPI_Group_free(&node_group);
    MPI_Group_free(&group);
    free(node_ranks);
    return SYMADDR_OK;

err_mpi:
    snprintf(why, why_len, "MPI refused to duplicate or split the communicator");
    if (host_comm != MPI_COMM_NULL)
        MPI_Comm_free(&host_comm);
    symaddr_bootstrap_fini(b);
    return SYMADDR_ERR_MPI;
}

void symaddr_bootstrap_fini(symaddr_bootstrap_t *b)
{
    if (b->socks) {
        for (int i = 0; i < b->node_size; i++)
            if (b->socks[i] >= 0)
                close(b->socks[i]);
        free(b->socks);
    }
    free(b->node_to_rank);
    reap(b);
    /* An operation still posted (a peer died, or gave up on this rank) keeps its communicator
     * and buffers: freeing either under MPI would be erroneous. They stay on the process's list
     * of orphans, held rather than lost, until the process ends. */
    if (b->parked) {
        pthread_mutex_lock(&orphans_lock);
        symaddr_mpi_parked_t *last = b->parked;
        while (last->next)
            last = last->next;
        last->next = orphans;
        orphans = b->parked;
        pthread_mutex_unlock(&orphans_lock);
    } else {
        if (b->node_comm != MPI_COMM_NULL)
            MPI_Comm_free(&b->node_comm);
        if (b->comm != MPI_COMM_NULL)
            MPI_Comm_free(&b->comm);
    }
    memset(b, 0, sizeof(*b));
    b->comm = b->node_comm = MPI_COMM_NULL;
}

symaddr_status_t symaddr_bootstrap_node_allgather(symaddr_bootstrap_t *b, const void *mine,
                                                  void *all, size_t bytes)
{
    return symaddr_mpi_allgather(b, b->node_comm, mine, all, bytes,
                                 symaddr_bootstrap_deadline(b, 0));
}
