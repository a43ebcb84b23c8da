/* SPDX-License-Identifier: MIT */
/* MPI bootstrap: the context's communicator, its node group, every collective MPI call the
 * library makes (each bounded by a deadline), and a mesh of Unix-domain sockets inside the
 * node to pass file descriptors (SCM_RIGHTS). */
#ifndef SYMADDR_LIB_BOOTSTRAP_H
#define SYMADDR_LIB_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "core/clock.h" /* the deadlines' clock */
#include "symaddr/types.h"

/* A collective MPI operation still posted after its wait ran out: MPI cannot cancel one, so
 * its buffers live until it completes or the bootstrap is torn down. */
typedef struct symaddr_mpi_parked {
    MPI_Request req;
    void *buf;
    struct symaddr_mpi_parked *next;
} symaddr_mpi_parked_t;

typedef struct symaddr_bootstrap {
    MPI_Comm comm;      /* duplicate of the user's communicator */
    MPI_Comm node_comm; /* ranks that share memory (maybe a simulated node) */
    int rank, size;
    int node_rank, node_size;
    int host_size;     /* ranks of the communicator on this host (node groups may split it) */
    int *node_to_rank; /* node rank -> rank in comm */
    int *socks;        /* connected socket per node peer; -1 for self; NULL until needed */
    uint64_t fd_seq;   /* fd exchanges so far; stale messages carry smaller numbers */
    unsigned timeout_ms;
    uint64_t deadline_ns; /* of the public call in progress (symaddr_now_ns's clock) */
    symaddr_mpi_parked_t *parked;
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

/* Collective over user_comm, bounded by timeout_ms where MPI allows it (duplicating the
 * communicator; MPI has no nonblocking split). sim_node_size > 0 splits each host into groups
 * of that many consecutive ranks. */
symaddr_status_t symaddr_bootstrap_init(symaddr_bootstrap_t *b, MPI_Comm user_comm,
                                        int sim_node_size, unsigned timeout_ms, char *why,
                                        size_t why_len);
void symaddr_bootstrap_fini(symaddr_bootstrap_t *b);

/* Start of a public call: its waits on peers share one deadline, timeout_ms from now. */
/* The end of a call: agreements outside one take a fresh deadline. */
void symaddr_bootstrap_call_end(symaddr_bootstrap_t *b);
/* An agreement's: a fresh timeout, but within a call at most the call's deadline plus the
 * timeout, so that the call returns within twice the timeout of its start. */
uint64_t symaddr_bootstrap_agree_deadline(const symaddr_bootstrap_t *b);
void symaddr_bootstrap_call_begin(symaddr_bootstrap_t *b);
/* The call's deadline, or a fresh one (timeout_ms from now) when fresh is set. */
uint64_t symaddr_bootstrap_deadline(const symaddr_bootstrap_t *b, int fresh);

/* Nonblocking MPI collectives waited for until deadline_ns: SYMADDR_OK, SYMADDR_ERR_MPI when
 * MPI reports an error, or SYMADDR_ERR_TIMEOUT, the operation then left posted with buffers of
 * its own (the caller's are never written after the return). */
symaddr_status_t symaddr_mpi_allgather(symaddr_bootstrap_t *b, MPI_Comm comm, const void *mine,
                                       void *all, size_t bytes, uint64_t deadline_ns);
symaddr_status_t symaddr_mpi_allgatherv(symaddr_bootstrap_t *b, MPI_Comm comm, const void *mine,
                                        int mine_bytes, void *all, const int *counts,
                                        const int *displs, uint64_t deadline_ns);
/* MPI_Alltoallv of bytes: send_counts[r] bytes at send + send_displs[r] go to rank r, recv
 * takes recv_counts[r] bytes from rank r at recv + recv_displs[r]. */
symaddr_status_t symaddr_mpi_alltoallv(symaddr_bootstrap_t *b, MPI_Comm comm, const void *send,
                                       const int *send_counts, const int *send_displs, void *recv,
                                       const int *recv_counts, const int *recv_displs,
                                       uint64_t deadline_ns);
symaddr_status_t symaddr_mpi_allreduce(symaddr_bootstrap_t *b, MPI_Comm comm, const void *in,
                                       void *out, int count, MPI_Datatype type, MPI_Op op,
                                       uint64_t deadline_ns);
symaddr_status_t symaddr_mpi_bcast(symaddr_bootstrap_t *b, MPI_Comm comm, void *buf, size_t bytes,
                                   int root, uint64_t deadline_ns);
symaddr_status_t symaddr_mpi_barrier(symaddr_bootstrap_t *b, MPI_Comm comm, uint64_t deadline_ns);

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
