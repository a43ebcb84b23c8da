/* SPDX-License-Identifier: MIT */
/**
 * @file types.h
 * @brief Types shared by the host API (symaddr.h) and the device library (device.h).
 */
#ifndef SYMADDR_TYPES_H
#define SYMADDR_TYPES_H

#include <stdint.h>

/** Status codes. SYMADDR_OK is zero, errors are negative. */
typedef enum symaddr_status {
    SYMADDR_OK = 0,
    SYMADDR_ERR_INVALID_ARG = -1,         /**< NULL or out-of-range argument */
    SYMADDR_ERR_INVALID_SIZE = -2,        /**< zero or overflowing size */
    SYMADDR_ERR_NO_MEMORY = -3,           /**< host or device allocation failed */
    SYMADDR_ERR_NOT_FOUND = -4,           /**< pointer is not inside any registration */
    SYMADDR_ERR_DOUBLE_FREE = -5,         /**< pointer was already freed */
    SYMADDR_ERR_INVALID_MAP = -6,         /**< map was freed or belongs to another context */
    SYMADDR_ERR_MISMATCH = -7,            /**< ranks disagreed on a collective call */
    SYMADDR_ERR_BACKEND = -8,             /**< the GPU runtime or the OS refused a call */
    SYMADDR_ERR_UNSUPPORTED = -9,         /**< not available on this backend or build */
    SYMADDR_ERR_TIMEOUT = -10,            /**< a wait ran past its timeout */
    SYMADDR_ERR_MPI = -11,                /**< an MPI call failed */
    SYMADDR_ERR_PEER = -12,               /**< another rank failed its part of a collective */
    SYMADDR_ERR_ALREADY_REGISTERED = -13, /**< range overlaps a registered range */
    SYMADDR_ERR_OUT_OF_BOUNDS = -14,      /**< pointer outside its map (validation mode) */
    SYMADDR_ERR_UNREACHABLE = -15,        /**< target rank has no load/store path */
    SYMADDR_ERR_WRONG_PROVIDER = -16,     /**< pointer belongs to another provider */
    SYMADDR_ERR_NOT_SHAREABLE = -17,      /**< memory cannot be exported to peers */
    SYMADDR_ERR_BROKEN = -18,             /**< an earlier collective timed out or failed on some
                                               rank: the context can only be finalized */
    SYMADDR_ERR_LAST_ = -19,              /**< one past the last status, for range checks */
} symaddr_status_t;

/** Capability bits of a map. */
#define SYMADDR_CAP_LOAD_STORE (1ull << 0)     /**< peers are load/store reachable */
#define SYMADDR_CAP_ATOMICS (1ull << 1)        /**< remote atomics work */
#define SYMADDR_CAP_SYSTEM_ATOMICS (1ull << 2) /**< system-scope atomics work */
#define SYMADDR_CAP_OWNED (1ull << 3)          /**< symaddr frees the memory on free */
#define SYMADDR_CAP_FABRIC                                                                         \
    (1ull << 4) /**< shared through a fabric handle (VMM), so                                      \
                     peers on other nodes of the fabric could                                      \
                     map it too */
#define SYMADDR_CAP_COHERENT                                                                       \
    (1ull << 5) /**< a peer's stores become visible to a kernel polling this memory while it       \
                     runs, without a kernel boundary: signal waits on it are defined (on AMD       \
                     GPUs only fine-grained memory; NVIDIA GPUs and the cpu: all memory) */
/** Every capability bit symaddr defines; symaddr_register_peer_table refuses any other. */
#define SYMADDR_CAP_ALL_                                                                           \
    (SYMADDR_CAP_LOAD_STORE | SYMADDR_CAP_ATOMICS | SYMADDR_CAP_SYSTEM_ATOMICS |                   \
     SYMADDR_CAP_OWNED | SYMADDR_CAP_FABRIC | SYMADDR_CAP_COHERENT)

/** Every element type, as X(SUFFIX, name, bytes, C type of its bits): one list feeds the
 *  names, the sizes, the kernels built for each type, the benchmark and the tests. Adding a
 *  type: a line here, an enum value below, and its traits in lib/device/coll_types.h. */
#define SYMADDR_DTYPE_LIST(X)                                                                      \
    X(INT32, int32, 4, int32_t)                                                                    \
    X(UINT32, uint32, 4, uint32_t)                                                                 \
    X(INT64, int64, 8, int64_t)                                                                    \
    X(UINT64, uint64, 8, uint64_t)                                                                 \
    X(FLOAT32, float, 4, float)                                                                    \
    X(FLOAT64, double, 8, double)                                                                  \
    X(FLOAT16, half, 2, uint16_t)                                                                  \
    X(BFLOAT16, bfloat16, 2, uint16_t)

/** Element types of collectives. f16 and bf16 accumulate in f32. */
typedef enum symaddr_dtype {
    SYMADDR_INT32 = 0,
    SYMADDR_UINT32 = 1,
    SYMADDR_INT64 = 2,
    SYMADDR_UINT64 = 3,
    SYMADDR_FLOAT32 = 4,
    SYMADDR_FLOAT64 = 5,
    SYMADDR_FLOAT16 = 6,
    SYMADDR_BFLOAT16 = 7,
    SYMADDR_DTYPE_COUNT_ = 8
} symaddr_dtype_t;

/** Reduction operators. */
typedef enum symaddr_redop {
    SYMADDR_SUM = 0,
    SYMADDR_PROD = 1,
    SYMADDR_MIN = 2,
    SYMADDR_MAX = 3,
    SYMADDR_REDOP_COUNT_ = 4
} symaddr_redop_t;

/** A pointer bound to its map (symaddr_buffer_bind), safe to pass to a kernel by value. */
typedef struct symaddr_buffer {
    void *ptr;                  /**< local pointer inside the map's allocation */
    const uint64_t *peer_bases; /**< the map's device table */
    int local_rank;             /**< this rank: the table's own entry */
    uint64_t caps;              /**< SYMADDR_CAP_* of the map */
} symaddr_buffer_t;

/** The context's node as a kernel sees it (symaddr_team_get), passed to a kernel by value:
 *  what the collective blocks of symaddr/team.h work on. */
typedef struct symaddr_team {
    uint64_t *sync;          /**< this rank's sync area (device memory) */
    const uint64_t *sync_pb; /**< its peer table */
    const int *node_ranks;   /**< device array: node rank -> rank of the context */
    int node_rank;           /**< this rank's place in the node */
    int node_size;           /**< the node's ranks */
    int rank;                /**< this rank in the context */
    unsigned max_blocks;     /**< most blocks a grid of team blocks may have on this GPU */
    uint64_t lamport_offset; /**< the Lamport buffers, in bytes into the sync area */
    uint64_t lamport_slot;   /**< bytes of one peer's slot: the most one Lamport call moves */
    uint64_t timeout_ns;     /**< deadline of every wait of a call */
    int pdl; /**< 1 where a kernel of team blocks may be launched as a programmatic dependent
                  (CUDA, no other rank on this GPU), as symaddr's own collectives are */
} symaddr_team_t;

/** Words at the start of every rank's sync area; the barrier flags follow. */
enum {
    SYMADDR_SYNC_EPOCH = 0,   /**< calls completed by this rank */
    SYMADDR_SYNC_DONE = 1,    /**< blocks of the running call that began (their tickets) */
    SYMADDR_SYNC_STATUS = 2,  /**< first failure (-status), sticky until the host reads it */
    SYMADDR_SYNC_LAMPORT = 3, /**< the Lamport buffer of the next Lamport call: 0, 1 or 2 */
    SYMADDR_SYNC_GRID = 4,    /**< blocks that reached the running grid barrier */
    SYMADDR_SYNC_RELEASE = 5, /**< the last grid barrier passed (its flag value) */
    SYMADDR_SYNC_WORDS = 6,
};

#endif /* SYMADDR_TYPES_H */
