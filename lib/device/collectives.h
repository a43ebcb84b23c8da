/* SPDX-License-Identifier: MIT */
/* What the host hands a collective kernel: pointers, their tables, and the
 * context's synchronisation area. Kernels see nothing else. */
#ifndef SYMADDR_LIB_DEVICE_COLLECTIVES_H
#define SYMADDR_LIB_DEVICE_COLLECTIVES_H

#include <stddef.h>
#include <stdint.h>

#include "symaddr/types.h"

#define SYMADDR_COLL_MAX_BLOCKS 128
/* One-shot allreduce stages its input in the sync area, in one of two slots picked by the
 * epoch's parity: a rank reuses a slot only after every peer passed the next epoch's barrier,
 * so one barrier per call is enough. */
#define SYMADDR_COLL_STAGE_BYTES ((size_t)256 << 10)
/* The LL allreduce pushes up to this many bytes into every peer's inbox as 8-byte packets of
 * 4 data bytes and a 4-byte flag (the epoch): an inbox holds twice as many bytes, and each rank
 * has one per (epoch parity, node peer). */
#define SYMADDR_COLL_LL_BYTES ((size_t)32 << 10)
#define SYMADDR_COLL_LL_INBOX (2 * SYMADDR_COLL_LL_BYTES)
/* The Lamport allreduce pushes 16-byte stores whose 32-bit words carry their own arrival
 * marker: a word of all ones is "not arrived". Each rank has three buffers of one slot per node
 * peer, used in turn by successive Lamport calls (SYMADDR_SYNC_LAMPORT; the epoch modulo 3
 * would repeat a buffer where the epoch wraps); the reader resets what it took. The slots share
 * SYMADDR_COLL_LAMPORT_AREA bytes per buffer, so a call moves at most that over the node size
 * (and at most SYMADDR_COLL_LAMPORT_MAX). */
#define SYMADDR_COLL_LAMPORT_AREA ((size_t)1 << 20)
#define SYMADDR_COLL_LAMPORT_MAX ((size_t)512 << 10)
#define SYMADDR_COLL_LAMPORT_EMPTY 0xffffffffu

/* Words at the start of every rank's sync area; flags follow. */
enum {
    SYMADDR_SYNC_EPOCH = 0,   /* collectives completed by this rank */
    SYMADDR_SYNC_DONE = 1,    /* blocks of the running collective that finished */
    SYMADDR_SYNC_STATUS = 2,  /* first failure (-status), sticky until the host reads it */
    SYMADDR_SYNC_LAMPORT = 3, /* the Lamport buffer of the next Lamport call: 0, 1 or 2 */
    SYMADDR_SYNC_WORDS = 4,
};

typedef enum symaddr_coll_kind {
    SYMADDR_COLL_BARRIER,
    SYMADDR_COLL_ALLREDUCE_ONESHOT,
    SYMADDR_COLL_ALLREDUCE_TWOSHOT,
    SYMADDR_COLL_ALLREDUCE_LL,
    SYMADDR_COLL_ALLREDUCE_LAMPORT,
    SYMADDR_COLL_REDUCE_SCATTER,
    SYMADDR_COLL_ALLGATHER,
    SYMADDR_COLL_BROADCAST,
    SYMADDR_COLL_ALLTOALL,
} symaddr_coll_kind_t;

typedef struct symaddr_coll_desc {
    symaddr_coll_kind_t kind;
    symaddr_dtype_t dtype;
    symaddr_redop_t op;
    const void *send;
    const uint64_t *send_pb; /* send's table (world-indexed) */
    void *recv;
    const uint64_t *recv_pb;
    size_t stage_offset;                 /* byte offset of the two staging slots in the sync area */
    size_t ll_offset;                    /* byte offset of the LL inboxes in the sync area */
    size_t lamport_offset, lamport_slot; /* the Lamport buffers, and one peer's slot in one */
    size_t count;                        /* elements: total (allreduce), per rank (others) */
    int root;                            /* node rank of the broadcast root */
    /* allgather and alltoall place blocks by rank in the context's communicator */
    /* The node group the kernel runs over. */
    uint64_t *sync; /* this rank's sync area */
    const uint64_t *sync_pb;
    const int *node_ranks; /* device array: node rank -> world rank */
    int node_size, node_rank, rank;
    unsigned blocks;
    int vec; /* every buffer and peer base is 16-byte aligned */
    int pdl; /* launch as a programmatic dependent (CUDA): only when no other rank shares the GPU,
                whose kernels an early-resident one could keep from the SMs */
    uint64_t timeout_ns;
} symaddr_coll_desc_t;

#endif
