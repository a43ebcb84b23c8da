/* SPDX-License-Identifier: MIT */
/* Bootstrap: the operations that connect the ranks (MPI's by default, or a runtime's through
 * symaddr_init_bootstrap), the groups built of them (world, node, leaders) and every exchange
 * the library makes (each bounded by a deadline), and a mesh of Unix-domain sockets inside the
 * node to pass file descriptors (SCM_RIGHTS). */
#ifndef SYMADDR_LIB_BOOTSTRAP_H
#define SYMADDR_LIB_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "core/clock.h" /* the deadlines' clock */
#include "symaddr/symaddr.h"

/* A group of the context's ranks that exchange among themselves: the world, a node, the
 * nodes' leaders. Every member makes the same exchanges in the same order; seq counts them,
 * and each message carries it, so that a message of another exchange (an earlier one that ran
 * out of time) is refused, never read as this one's. */
typedef struct symaddr_group {
    int n, me;   /* members; this rank's index among them (-1: not a member) */
    int *ranks;  /* world rank of each member, ascending */
    uint16_t id; /* which group: messages of two groups between one pair never mix */
    uint64_t seq;
} symaddr_group_t;

enum { SYMADDR_GROUP_WORLD = 1, SYMADDR_GROUP_NODE = 2, SYMADDR_GROUP_LEADERS = 3 };

typedef struct symaddr_bootstrap {
    symaddr_bootstrap_ops_t ops; /* the caller's, copied: its table need not outlive init */
    void *state;
    MPI_Comm comm; /* the MPI row's duplicate of the user's communicator; MPI_COMM_NULL else */
    symaddr_group_t world, node, leaders; /* leaders: each node's node rank 0 */
    int rank, size;
    int node_rank, node_size;
    int host_size;     /* ranks of the world on this host (node groups may split it) */
    int *node_to_rank; /* node rank -> world rank (node.ranks) */
    int *socks;        /* connected socket per node peer; -1 for self; NULL until needed */
    uint64_t fd_seq;   /* fd exchanges so far; stale messages carry smaller numbers */
    unsigned timeout_ms;
    uint64_t deadline_ns; /* of the public call in progress (symaddr_now_ns's clock) */
} symaddr_bootstrap_t;

/* Is the MPI this process runs on the one libsymaddr was built with, and did its launcher
 * start it? SYMADDR_ERR_MPI with what to do when the library is another vendor's than the
 * header, or the world is 1 process where the launcher's variables say it started more. */
symaddr_status_t symaddr_bootstrap_mpi_check(char *why, size_t why_len);

/* The MPI whose mpi.h the library was compiled against ("Open MPI 4.1.4", "MPICH 5.0.2"), and
 * its family: 1 for Open MPI, 0 for MPICH and its derivatives, -1 for another. */
#define SYMADDR_MPI_STR_(x) #x
#define SYMADDR_MPI_STR(x) SYMADDR_MPI_STR_(x)
#if defined(OMPI_MAJOR_VERSION)
#define SYMADDR_MPI_HEADER                                                                         \
    "Open MPI " SYMADDR_MPI_STR(OMPI_MAJOR_VERSION) "." SYMADDR_MPI_STR(                           \
        OMPI_MINOR_VERSION) "." SYMADDR_MPI_STR(OMPI_RELEASE_VERSION)
#define SYMADDR_MPI_HEADER_OPENMPI 1
#elif defined(MPICH_VERSION)
#define SYMADDR_MPI_HEADER "MPICH " MPICH_VERSION
#define SYMADDR_MPI_HEADER_OPENMPI 0
#else
#define SYMADDR_MPI_HEADER "MPI " SYMADDR_MPI_STR(MPI_VERSION) "." SYMADDR_MPI_STR(MPI_SUBVERSION)
#define SYMADDR_MPI_HEADER_OPENMPI (-1)
#endif

/* Collective over the ranks the operations connect, bounded by timeout_ms whatever the
 * operations do (short of one that never returns). sim_node_size > 0 splits each host into
 * groups of that many consecutive ranks. The ops are copied; state stays the caller's, and
 * ops->fini(state) runs at symaddr_bootstrap_fini, or here on failure. */
symaddr_status_t symaddr_bootstrap_start(symaddr_bootstrap_t *b, const symaddr_bootstrap_ops_t *ops,
                                         void *state, int rank, int size, int sim_node_size,
                                         unsigned timeout_ms, char *why, size_t why_len);
/* The MPI row: the operations over a duplicate of user_comm, then symaddr_bootstrap_start. */
symaddr_status_t symaddr_bootstrap_init(symaddr_bootstrap_t *b, MPI_Comm user_comm,
                                        int sim_node_size, unsigned timeout_ms, char *why,
                                        size_t why_len);
void symaddr_bootstrap_fini(symaddr_bootstrap_t *b);

/* The members of group g (size n, world ranks ascending, this rank among them or not) as a
 * group: ranks is copied. */
symaddr_status_t symaddr_group_init(symaddr_group_t *g, uint16_t id, const int *ranks, int n,
                                    int my_rank);
void symaddr_group_fini(symaddr_group_t *g);

/* Start of a public call: its waits on peers share one deadline, timeout_ms from now. */
/* The end of a call: agreements outside one take a fresh deadline. */
void symaddr_bootstrap_call_end(symaddr_bootstrap_t *b);
/* An agreement's: a fresh timeout, but within a call at most the call's deadline plus the
 * timeout, so that the call returns within twice the timeout of its start. */
uint64_t symaddr_bootstrap_agree_deadline(const symaddr_bootstrap_t *b);
void symaddr_bootstrap_call_begin(symaddr_bootstrap_t *b);
/* The call's deadline, or a fresh one (timeout_ms from now) when fresh is set. */
uint64_t symaddr_bootstrap_deadline(const symaddr_bootstrap_t *b, int fresh);

/* The group's exchanges, built of the operations' sendrecv (the world's allgather and barrier of
 * the operations' own where they have them), waited for until deadline_ns: SYMADDR_OK, the
 * operation's failure (SYMADDR_ERR_MPI from MPI's), SYMADDR_ERR_TIMEOUT, or SYMADDR_ERR_PEER
 * when a message of another exchange arrived. The caller's buffers are never written after
 * the return. Every member calls; a rank outside the group gets SYMADDR_OK at once. */
symaddr_status_t symaddr_boot_allgather(symaddr_bootstrap_t *b, symaddr_group_t *g,
                                        const void *mine, void *all, size_t bytes,
                                        uint64_t deadline_ns);
/* all receives counts[i] bytes from member i at displs[i]; mine_bytes equals this rank's. */
symaddr_status_t symaddr_boot_allgatherv(symaddr_bootstrap_t *b, symaddr_group_t *g,
                                         const void *mine, int mine_bytes, void *all,
                                         const int *counts, const int *displs,
                                         uint64_t deadline_ns);
/* send_counts[i] bytes at send + send_displs[i] go to member i, recv takes recv_counts[i]
 * bytes from member i at recv + recv_displs[i]. */
symaddr_status_t symaddr_boot_alltoallv(symaddr_bootstrap_t *b, symaddr_group_t *g,
                                        const void *send, const int *send_counts,
                                        const int *send_displs, void *recv, const int *recv_counts,
                                        const int *recv_displs, uint64_t deadline_ns);
/* out[k] = the minimum (max 0) or maximum (max 1) of the members' in[k]. */
symaddr_status_t symaddr_boot_allreduce_int(symaddr_bootstrap_t *b, symaddr_group_t *g,
                                            const int *in, int *out, int count, int max,
                                            uint64_t deadline_ns);
/* root is a member index. */
symaddr_status_t symaddr_boot_bcast(symaddr_bootstrap_t *b, symaddr_group_t *g, void *buf,
                                    size_t bytes, int root, uint64_t deadline_ns);
symaddr_status_t symaddr_boot_barrier(symaddr_bootstrap_t *b, symaddr_group_t *g,
                                      uint64_t deadline_ns);

/* Collective over the node: every rank sends my_fd (may be -1) to every node peer;
 * fds_out[node_rank] receives peer's descriptor (-1 for self or none). The socket mesh is set
 * up on first use; only ranks of the node can join it. Bounded by the call's deadline. A
 * failed exchange leaves the mesh usable: later exchanges discard what is left of it. */
symaddr_status_t symaddr_bootstrap_fd_alltoall(symaddr_bootstrap_t *b, int my_fd, int *fds_out,
                                               char *why, size_t why_len);

/* The first message on a mesh connection: who the peer says it is. */
#define SYMADDR_BOOTSTRAP_HELLO_MAGIC 0x73796d6164647232ull /* "symaddr2" */
typedef struct symaddr_bootstrap_hello {
    uint64_t magic;
    uint8_t secret[16];
    int32_t node_rank;
    int32_t pid;
} symaddr_bootstrap_hello_t;

/* Test seam: called on every rank once its listener is up and before it accepts peers, with
 * the listener's address. The security test uses it to let a foreign process try to join. */
struct sockaddr_un;
extern void (*symaddr_bootstrap_listen_hook)(const struct sockaddr_un *addr, unsigned addr_len,
                                             int node_rank);

/* Test seam: called at the start of every descriptor exchange, before anything is sent. */
extern void (*symaddr_bootstrap_fd_hook)(int node_rank, uint64_t seq);

/* Node-wide allgather of fixed-size records, bounded by the call's deadline. */
symaddr_status_t symaddr_bootstrap_node_allgather(symaddr_bootstrap_t *b, const void *mine,
                                                  void *all, size_t bytes);

#endif
