/* SPDX-License-Identifier: MIT */
/* MPI bootstrap: the context's communicator, its node group, and a mesh of
 * Unix-domain sockets inside the node to pass file descriptors (SCM_RIGHTS). */
#ifndef SYMADDR_LIB_BOOTSTRAP_H
#define SYMADDR_LIB_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "symaddr/symaddr.h"

typedef struct symaddr_bootstrap {
    MPI_Comm comm;      /* duplicate of the user's communicator */
    MPI_Comm node_comm; /* ranks that share memory (maybe a simulated node) */
    int rank, size;
    int node_rank, node_size;
    int *node_to_rank;  /* node rank -> rank in comm */
    int *socks;         /* connected socket per node peer; -1 for self; NULL until needed */
    uint64_t fd_seq;    /* fd exchanges so far, checked by the receiver */
    unsigned timeout_ms;
} symaddr_bootstrap_t;

/* Collective over user_comm. sim_node_size > 0 splits each host into groups of
 * that many consecutive ranks. */
symaddr_status_t symaddr_bootstrap_init(symaddr_bootstrap_t *b, MPI_Comm user_comm,
                                        int sim_node_size, unsigned timeout_ms, char *why,
                                        size_t why_len);
void symaddr_bootstrap_fini(symaddr_bootstrap_t *b);

/* Collective over the node: every rank sends my_fd (may be -1) to every node
 * peer; fds_out[node_rank] receives peer's descriptor (-1 for self or none).
 * The socket mesh is set up on first use; only ranks of the node can join it. */
symaddr_status_t symaddr_bootstrap_fd_alltoall(symaddr_bootstrap_t *b, int my_fd, int *fds_out,
                                               char *why, size_t why_len);

/* The first message on a mesh connection: who the peer says it is. */
#define SYMADDR_BOOTSTRAP_HELLO_MAGIC 0x73796d6164647231ull /* "symaddr1" */
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

/* Node-wide allgather of fixed-size records. */
symaddr_status_t symaddr_bootstrap_node_allgather(symaddr_bootstrap_t *b, const void *mine,
                                                  void *all, size_t bytes);

#endif
