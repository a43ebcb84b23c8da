/* SPDX-License-Identifier: MIT */
/* What the host hands a collective kernel: pointers, their tables, and the
 * context's synchronisation area. Kernels see nothing else. */
#ifndef SYMADDR_LIB_DEVICE_COLLECTIVES_H
#define SYMADDR_LIB_DEVICE_COLLECTIVES_H

#include <stddef.h>
#include <stdint.h>

#include "symaddr/types.h"

#define SYMADDR_COLL_MAX_BLOCKS 128
/* Threads of a GPU collective's block, unless its descriptor says otherwise. */
#define SYMADDR_COLL_THREADS 512
/* Rows of barrier flags, one word per node peer each: one per block, and the grid barrier's
 * (row team.max_blocks, which no block index reaches). */
#define SYMADDR_COLL_FLAG_ROWS (SYMADDR_COLL_MAX_BLOCKS + 1)
/* Words of a block's row of published arguments (coll_publish): epoch, identity, count, table,
 * offset, padding to 64 bytes. */
#define SYMADDR_COLL_ARGS_WORDS 8
/* The identity words of every collective (coll_ident_send): one per (epoch parity, block, node
 * rank), node_size of them a row. */
#define SYMADDR_COLL_IDENT_BYTES(node_size)                                                        \
    (2 * (size_t)SYMADDR_COLL_MAX_BLOCKS * (size_t)(node_size) * sizeof(uint64_t))
/* One-shot allreduce stages its input in the sync area, in one of two slots picked by the
 * epoch's parity: a rank reuses a slot only after every peer passed the next epoch's barrier,
 * so one barrier per call is enough. */
#define SYMADDR_COLL_STAGE_BYTES ((size_t)256 << 10)
/* The LL allreduce pushes up to this many bytes into every peer's inbox as 8-byte packets of
 * 4 data bytes and a 4-byte flag (the epoch): an inbox holds twice as many bytes, and each rank
 * has one per (epoch parity, node peer). */
#define SYMADDR_COLL_LL_BYTES ((size_t)32 << 10)
#define SYMADDR_COLL_LL_INBOX (2 * SYMADDR_COLL_LL_BYTES + 16) /* and the identity step */
/* The Lamport allreduce pushes 16-byte stores whose 32-bit words carry their own arrival
 * marker: a word of all ones is "not arrived". Each rank has three buffers of one slot per node
 * peer, used in turn by successive Lamport calls (SYMADDR_SYNC_LAMPORT; the epoch modulo 3
 * would repeat a buffer where the epoch wraps); the reader resets what it took. The slots share
 * SYMADDR_COLL_LAMPORT_AREA bytes per buffer, so a call moves at most that over the node size
 * (and at most SYMADDR_COLL_LAMPORT_MAX), and each slot has one more chunk, for the call's
 * identity (coll_ident_words). */
#define SYMADDR_COLL_LAMPORT_AREA ((size_t)4 << 20)
#define SYMADDR_COLL_LAMPORT_MAX ((size_t)2 << 20)

typedef enum symaddr_coll_kind {
    SYMADDR_COLL_BARRIER,
    SYMADDR_COLL_ALLREDUCE_ONESHOT,
    SYMADDR_COLL_ALLREDUCE_TWOSHOT,
    SYMADDR_COLL_ALLREDUCE_LL,
    SYMADDR_COLL_ALLREDUCE_LAMPORT,
    SYMADDR_COLL_ALLREDUCE_TWOSHOT_GET,
    SYMADDR_COLL_ALLREDUCE_TWOSHOT_COPY, /* the kernel reduces; the host's copies gather */
    SYMADDR_COLL_REDUCE_SCATTER,
    SYMADDR_COLL_ALLGATHER,
    SYMADDR_COLL_BROADCAST,
    SYMADDR_COLL_ALLTOALL,
    SYMADDR_COLL_REDUCE,  /* loads of every peer's send into the root's recv */
    SYMADDR_COLL_GATHER,  /* stores of every rank's send into its block of the root's recv */
    SYMADDR_COLL_SCATTER, /* loads of this rank's block of the root's send */
    SYMADDR_COLL_KIND_COUNT_
} symaddr_coll_kind_t;

typedef struct symaddr_coll_desc {
    symaddr_coll_kind_t kind;
    symaddr_dtype_t dtype;
    symaddr_redop_t op;
    const void *send;
    const uint64_t *send_pb; /* send's table (world-indexed) */
    void *recv;
    const uint64_t *recv_pb;
    const uint64_t *recv_host_pb; /* recv's table in host memory, for the host's copies */
    size_t stage_offset;          /* byte offset of the two staging slots in the sync area */
    size_t ll_offset;             /* byte offset of the LL inboxes in the sync area */
    /* Rooted collectives: the rows where each rank publishes the buffer peers reach
     * (coll_publish), and what a rank compares with its peers' rows: the call's identity and
     * the buffers' tables, by a number every rank gives the same registration. */
    size_t args_offset;
    /* Every collective: the words by which ranks check that they are in the same call
     * (coll_ident_send), and what they carry: the collective, dtype, op, root (and count). */
    size_t ident_offset;
    uint64_t ident;
    uint64_t send_table, recv_table;
    uint64_t send_shift, recv_shift; /* the tables' shift on this rank (an import's view) */
    size_t count;                    /* elements: total (allreduce), per rank (others) */
    int root; /* node rank of the root (broadcast, reduce, gather, scatter); -1: another node */
    int root_rank; /* the root's rank in the context (the host's steps between nodes) */
    /* The node group the kernel runs over, as symaddr_team_get gives it to users' kernels;
     * allgather and alltoall place blocks by rank in the context's communicator. */
    symaddr_team_t team;
    unsigned blocks;
    unsigned threads; /* per block; 0: SYMADDR_COLL_THREADS (1 on the cpu) */
    int vec;          /* every buffer and peer base is 16-byte aligned */
    int ident_step;   /* LL and Lamport: the kernel with the identity step, and its thread */
} symaddr_coll_desc_t;

#endif
