/* SPDX-License-Identifier: MIT */
/**
 * @file symaddr.h
 * @brief Host API of symaddr: contexts, symmetric address maps, providers.
 *
 * A context is created collectively over an MPI communicator. Providers hand
 * out memory together with an address map (symaddr_map_t) whose device-resident
 * peer_bases table lets kernels translate a local pointer to a peer's pointer:
 *
 *     remote = peer_bases[target] + (ptr - peer_bases[local_rank])
 *
 * Every call documented as collective must be made by every rank of the
 * context's communicator, in the same order, with matching arguments.
 * Allocations, frees, imports and registrations compare their arguments and order across ranks
 * and report a mismatch as SYMADDR_ERR_MISMATCH on every rank; collectives compare them in
 * validation mode (symaddr_config_t.validate). Without it, within a node: ranks in the same
 * kernel that pass another collective, count, dtype, op or root return SYMADDR_ERR_MISMATCH on
 * every rank of the node, and none writes past its recv (the barrier-based kernels write
 * nothing; the LL and Lamport allreduces, which compare the call in one more step after their
 * data, may have written their own recv, with data of no use); ranks in different kernels
 * (another algorithm) time out, SYMADDR_ERR_TIMEOUT or SYMADDR_ERR_BROKEN. A config with
 * no_call_check set leaves that step out of the LL and Lamport allreduces (auto's kernels for
 * small messages; the step costs a fifth of such a call at 8 ranks on one GPU). Ranks of one
 * node in the same one of these kernels that pass another count, dtype or op then get: where a
 * call moves as many 16-byte chunks (LL: 8-byte steps) as the call that moves fewest,
 * SYMADDR_OK, with its own op over every rank's chunks read as its own dtype (a shorter call's
 * missing bytes as zeros): data of no use; where it moves more, SYMADDR_ERR_TIMEOUT or
 * SYMADDR_ERR_BROKEN, and every later call of the node's ranks SYMADDR_ERR_BROKEN. Nothing past
 * a recv is written; between nodes the agreement below still compares the calls. The two-shot
 * allreduce by the copy engine (SYMADDR_ALLREDUCE_TWOSHOT_COPY) queues its copies before the
 * kernel's verdict is known, so its node ranks compare the call on the host first (one
 * exchange of 16 bytes a call): another count, dtype or op returns SYMADDR_ERR_MISMATCH there
 * too, with no copy queued. Between nodes, the ranks agree on each node kernel's outcome
 * before any data leave a node, and that agreement compares every rank's collective, count,
 * dtype, op and root: nodes that disagree (each agreeing within itself) return
 * SYMADDR_ERR_MISMATCH on every rank, where a node's kernel may have written its ranks' recv
 * with that node's part, never past it.
 *
 * Deadlines. Every wait on another rank, in MPI or in a kernel, is bounded by the context's
 * timeout (symaddr_config_t.timeout_ms): a call waits at most that long for its data and as
 * long again for the ranks to agree on its outcome, so a call returns within twice the
 * timeout even when a peer died. The ranks of a program must therefore reach each collective
 * call within the timeout of one another.
 *
 * After a timeout. A collective that times out on one rank fails on every rank of its node:
 * the rank that gave up returns SYMADDR_ERR_TIMEOUT, the others SYMADDR_ERR_TIMEOUT or
 * SYMADDR_ERR_BROKEN, and a late rank that arrives afterwards fails too; no rank returns
 * SYMADDR_OK with wrong data. A rank that had finished its own part before a peer gave up can
 * have returned SYMADDR_OK for that call, with complete data. The context is then broken: every
 * later collective, allocation, free, import or registration returns SYMADDR_ERR_BROKEN on every
 * rank, and the only thing to do is symaddr_finalize (then a new context). The same holds when
 * the ranks could not agree on the outcome of a call in time. A call that failed for another
 * reason (a bad argument, out of memory, a descriptor exchange that ran out of time while the
 * agreement did not) leaves the context usable.
 *
 * Several ranks on one GPU. Every collective kernel's grid is bounded so that the kernels of
 * all of the context's ranks on a GPU are resident at once (their blocks wait for each other).
 * The bound counts the context's own ranks: run one context's collectives at a time on a GPU,
 * and give the GPU to the collective while it waits (MPS, or the runtime's time slicing).
 *
 * Threads. symaddr_lookup, symaddr_translate_host, symaddr_buffer_bind, symaddr_last_error,
 * the accessors, and symaddr_mem_alloc/symaddr_mem_free/symaddr_memcpy may be called from
 * any thread at any time. The collective calls (collectives, allocate and free, import,
 * registrations, unregister, finalize) must be made by one thread at a time per context, in
 * the same order on every rank. A second thread that enters one while another is inside
 * returns SYMADDR_ERR_INVALID_ARG ("another thread is in a collective ... call on this
 * context") without taking part, and the race breaks the context: ranks pair calls by their
 * order, so the peers may have paired the call in flight with the refused one. The call in
 * flight returns SYMADDR_ERR_BROKEN instead of OK when it is a collective (an allocation,
 * import or registration keeps its result; its memory goes at finalize), and every later call
 * returns SYMADDR_ERR_BROKEN on this rank, so that the peers' matching calls time out. The
 * race is seen only on a rank where the two calls overlap: before the first overlap, one rank's
 * first call can meet another rank's second, and calls of the same collective, count and dtype
 * cannot tell each other apart, so those return OK with the other call's data. Give each thread
 * its own context to run collectives concurrently.
 *
 * fork(). A child of a process that created a context cannot take part in the context's
 * collective calls (its peers pair their calls with the parent's): there they return
 * SYMADDR_ERR_INVALID_ARG without reaching a peer. The parent's context is unaffected.
 *
 * Trust. Symmetric memory is shared with the node's ranks of the context only: descriptors go
 * to the processes MPI names as peers (checked by process id and user id before anything is
 * read; the sockets lie in directories of mode 0700 under $XDG_RUNTIME_DIR, $TMPDIR or /tmp, so
 * that another user cannot connect), the sockets and their paths go once the node's peers are
 * connected, and shared memory files are
 * the owner's alone (mode 0600). Processes of the same user are inside that boundary: like any
 * of the user's memory, they can reach it through /proc.
 */
#ifndef SYMADDR_SYMADDR_H
#define SYMADDR_SYMADDR_H

#include <stddef.h>
#include <stdint.h>

/* symaddr uses no MPI C++ bindings, whose headers break -Werror C++ builds (Open MPI's casts
 * between function types): C++ users get MPI's C interface, unless they asked otherwise. */
#if defined(__cplusplus)
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1 /**< no Open MPI C++ bindings */
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1 /**< no MPICH C++ bindings */
#endif
#endif
#include <mpi.h>

#include "symaddr/types.h"
#include "symaddr/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(SYMADDR_BUILDING) && defined(__GNUC__)
#define SYMADDR_API __attribute__((visibility("default")))
#else
/** Marks the library's exported functions. */
#define SYMADDR_API
#endif
#if defined(__GNUC__)
#define SYMADDR_DEPRECATED(use) __attribute__((deprecated("use " use)))
#else
/** Marks a name kept for one release, and says which to @p use instead. */
#define SYMADDR_DEPRECATED(use)
#endif

/** Every backend, X(E, name) in value order: SYMADDR_BACKEND_<E>, and its name as
 *  SYMADDR_BACKEND, symaddr_backend_name and the tools spell it. */
#define SYMADDR_BACKEND_LIST(X) X(AUTO, auto) X(CPU, cpu) X(CUDA, cuda) X(HIP, hip)

/** Backends. AUTO picks the GPU backend when one is built and a device is present. */
typedef enum symaddr_backend_kind {
    SYMADDR_BACKEND_AUTO = 0,
    SYMADDR_BACKEND_CPU = 1,
    SYMADDR_BACKEND_CUDA = 2,
    SYMADDR_BACKEND_HIP = 3,
    SYMADDR_BACKEND_COUNT_ = 4
} symaddr_backend_kind_t;

/** Providers: who allocated the memory behind a map. */
typedef enum symaddr_provider_kind {
    SYMADDR_PROVIDER_HEAP = 0,    /**< sub-allocated from the context's symmetric heap */
    SYMADDR_PROVIDER_IPC = 1,     /**< one device allocation per call */
    SYMADDR_PROVIDER_IMPORT = 2,  /**< a buffer someone else allocated */
    SYMADDR_PROVIDER_FOREIGN = 3, /**< a table supplied by another symmetric library */
    SYMADDR_PROVIDER_VMM = 4,     /**< hipMemCreate/cuMemCreate memory, shared by fd or fabric
                                       handle; one allocation per call */
    SYMADDR_PROVIDER_COUNT_ = 5
} symaddr_provider_kind_t;

/**
 * The symmetric address map of one registration.
 *
 * Invariant: peer_bases[local_rank] == allocation_base.
 * peer_bases[r] == 0 means rank r is not load/store reachable (another node).
 * The map is owned by the library; it stays valid until the registration is
 * freed or unregistered.
 */
typedef struct symaddr_map {
    uint64_t *peer_bases;             /**< device-resident, world_size entries */
    const uint64_t *host_peer_bases;  /**< host copy of peer_bases */
    int local_rank;                   /**< rank in the context's communicator */
    int world_size;                   /**< size of the context's communicator */
    uint64_t allocation_base;         /**< backing allocation (root) on this rank */
    uint64_t allocation_bytes;        /**< size of the backing allocation */
    uint64_t capabilities;            /**< SYMADDR_CAP_* bits */
    uint64_t range_base;              /**< the range the caller registered or got */
    uint64_t range_bytes;             /**< its size */
    uint32_t *error_flag;             /**< device-resident; validation mode stores a status here */
    symaddr_provider_kind_t provider; /**< who owns the memory */
} symaddr_map_t;

/** Allreduce algorithm: LL (every rank stores its input into every peer's inbox as flagged
 *  packets: no barrier, for up to 32 KiB), Lamport (the same push with 16-byte stores whose
 *  data marks its own arrival: f32, f16 and bf16, up to 4 MiB over the node size and at most
 *  2 MiB; other types take LL), one-shot (every rank reads every peer's staged input, up to
 *  256 KiB), two-shot (reduce-scatter by loads, all-gather by stores), two-shot-get (both
 *  by loads, with a barrier between) and two-shot-copy (reduce-scatter by loads, all-gather by
 *  the copy engine, which pushes each rank's reduced part into every peer's recv, then a
 *  barrier) for large messages. A message too large for the chosen one takes the next. Auto
 *  picks Lamport (LL for integers and f64: LL) up to lamport_bytes (ll_bytes), then one-shot,
 *  then two-shot from twoshot_bytes, by loads only where the backend measured it faster (GPU:
 *  from 32 MiB where every rank of the node has its own GPU, never where some share one; cpu:
 *  never), and with the copy engine from where the backend measured that faster (CUDA: from
 *  32 MiB where every rank of the node has its own GPU; cpu, HIP: never).
 *
 *  Every algorithm reduces in node-rank order, so a result that is not a NaN has the same bits
 *  whichever algorithm a backend runs. Across nodes, each node's result (in node-rank order) is
 *  combined with the others' in the order of the nodes' first ranks: on one node that is rank
 *  order, on several a floating-point sum may differ in its last bits from one in rank order. A
 * result that is a NaN is a NaN on every algorithm, but its sign and payload (all bits but the
 * exponent's) are not defined, and Lamport's differ from the others': Lamport marks a 32-bit word
 * that has not arrived by all ones, so an input word of all ones is sent with its lowest bit
 * cleared; and where several ranks' inputs are NaNs, which one's payload survives depends on how
 * the kernel was compiled (GPUs return their canonical NaN). */
typedef enum symaddr_allreduce_algo {
    SYMADDR_ALLREDUCE_AUTO = 0,
    SYMADDR_ALLREDUCE_ONESHOT = 1,
    SYMADDR_ALLREDUCE_TWOSHOT = 2,
    SYMADDR_ALLREDUCE_LL = 3,
    SYMADDR_ALLREDUCE_LAMPORT = 4,
    SYMADDR_ALLREDUCE_TWOSHOT_GET = 5,
    SYMADDR_ALLREDUCE_TWOSHOT_COPY = 6,
} symaddr_allreduce_algo_t;

/** A context: the ranks of a communicator, the backend they run on, their allocations. */
typedef struct symaddr_context symaddr_context_t;
/** A context's provider of one kind (symaddr_provider_get). */
typedef struct symaddr_provider symaddr_provider_t;

/** Receives each line symaddr would otherwise print (to $SYMADDR_DEBUG_FILE or stderr): a
 *  failed symaddr_init's reason on rank 0, and the INFO and TRACE lines that debug_level asks
 *  for, each prefixed "host:pid:rank [node_rank] symaddr LEVEL", without its newline. */
typedef void (*symaddr_logger_t)(void *cookie, const char *line);

/** Values of symaddr_config_t.validate ($SYMADDR_VALIDATE: 0, 1 or args). */
typedef enum symaddr_validate {
    SYMADDR_VALIDATE_OFF = 0,  /**< no checks across ranks beyond the allocations' */
    SYMADDR_VALIDATE_ON = 1,   /**< every rank's collective call is compared with rank 0's: its
                                    collective, count, dtype, op, root, offsets, and where the
                                    program made it (below); device accesses are checked */
    SYMADDR_VALIDATE_ARGS = 2, /**< as ON, but not where the calls were made: for programs that
                                    make one collective from different places on purpose */
} symaddr_validate_t;

/** Context settings; fill with symaddr_config_default() (defaults and the SYMADDR_* variables)
 *  or SYMADDR_CONFIG_INITIALIZER (defaults only) first, then change fields. */
typedef struct symaddr_config {
    size_t size; /**< sizeof(symaddr_config_t) of the symaddr the caller was built
                      with; set by symaddr_config_default and the initializer */
    symaddr_backend_kind_t backend; /**< default: $SYMADDR_BACKEND, else AUTO */
    int device;          /**< GPU ordinal; -1 (default) = node rank modulo device count */
    size_t heap_bytes;   /**< symmetric heap size per rank; default $SYMADDR_HEAP_SIZE (K, M, G
                              or T suffix) or 64 MiB; at most the node's (cpu) or the device's
                              memory, or symaddr_init refuses it */
    int node_size;       /**< >0 splits each host into simulated nodes of this many ranks;
                              default $SYMADDR_NODE_SIZE or 0 (real nodes) */
    int validate;        /**< a symaddr_validate_t: whether collectives compare their
                              arguments, and where they were made, across ranks, and device
                              functions built with SYMADDR_VALIDATE check every access through
                              this context's tables; default $SYMADDR_VALIDATE, else the
                              -Dvalidate build option */
    unsigned timeout_ms; /**< deadline of every wait on a peer, MPI's and kernels'; default
                              $SYMADDR_TIMEOUT_MS or 60000 */
    symaddr_allreduce_algo_t allreduce_algo; /**< default $SYMADDR_ALLREDUCE (auto, oneshot,
                                                  twoshot, ll, lamport), else auto */
    size_t twoshot_bytes;    /**< auto picks two-shot from this many bytes on; default
                                  $SYMADDR_TWOSHOT_BYTES, else 0: the backend's own (2 KiB on
                                  cpu, 256 KiB on GPUs). One-shot stages at most 256 KiB. */
    size_t ll_bytes;         /**< auto picks LL up to this many bytes where it does not pick
                                  Lamport (at most 32 KiB; 0: never);
                                  default $SYMADDR_LL_BYTES, else SIZE_MAX: the backend's own */
    symaddr_logger_t logger; /**< NULL (default): stderr */
    void *logger_cookie;     /**< passed to @p logger with each line */
    size_t lamport_bytes;    /**< auto picks Lamport for f32, f16 and bf16 up to this many bytes (at
                                  most 2 MiB, and 4 MiB over the node size; 0: never); default
                                  $SYMADDR_LAMPORT_BYTES, else SIZE_MAX: the backend's own (on a
                                  GPU, 2 MiB and 4 MiB over the node size, 1 MiB where ranks
                                  share a GPU) */
    int debug_level;         /**< 0 (WARN: failures only), 1 (INFO: once per context, what it
                                  runs on and with, and each collective's algorithm when it
                                  changes), 2 (TRACE: every allocation, import, registration and
                                  exchange too); default $SYMADDR_DEBUG, else 0 */
    unsigned debug_subsys;   /**< INFO and TRACE lines of these subsystems only: bits of INIT 1,
                                  BOOT 2, ALLOC 4, COLL 8, RMA 16, ENV 32; default
                                  $SYMADDR_DEBUG_SUBSYS (a comma list, ^ to negate), else all */
    const char *debug_file;  /**< where lines go when there is no logger (%h: host, %p: pid);
                                  default $SYMADDR_DEBUG_FILE, else NULL: stderr */
    size_t retain_bytes;     /**< ipc and vmm allocations freed by symaddr_symmetric_free stay
                                  mapped, up to this many bytes per rank, and a later allocation
                                  of the same size takes one back without a handle exchange
                                  (the oldest go first; all go when an allocation runs out of
                                  memory, and at symaddr_finalize); 0 frees at once (a use after
                                  free then faults instead of reaching retained memory). The
                                  same on every rank, or symaddr_init refuses it. Default
                                  $SYMADDR_RETAIN_BYTES, else 256 MiB */
    int hip_finegrained;     /**< hip: users' ipc allocations are fine-grained (coherent with
                                  peer GPUs without a kernel boundary, system-scope atomics
                                  defined; SYMADDR_CAP_COHERENT and _SYSTEM_ATOMICS) instead of
                                  coarse-grained (faster bulk traffic); the collectives' own
                                  flags always are. Default $SYMADDR_HIP_FINEGRAINED, else 0 */
    int no_call_check;       /**< 1: the LL and Lamport allreduces leave out the step in which
                                  node peers compare their call's collective, count, dtype and
                                  op (one 16-byte store and load per peer: about 0.9 us of 4.6
                                  replayed from a graph at 8 ranks on one H100, at most 6 %
                                  at 2 ranks); ranks that then pass another count or
                                  op get what this header's preamble lists, OK with data of no
                                  use included. The same on every rank, or symaddr_init refuses
                                  it. Default $SYMADDR_NO_CALL_CHECK, else 0 */
} symaddr_config_t;

/** The built-in defaults, without the environment: symaddr_config_t cfg =
 *  SYMADDR_CONFIG_INITIALIZER; (C99, or C++20: designated). symaddr_config_default starts
 *  from it, then takes the -Dvalidate build option and the SYMADDR_* variables into account.
 *  Fields it leaves out are zero. */
#define SYMADDR_CONFIG_INITIALIZER                                                                 \
    {                                                                                              \
        .size = sizeof(symaddr_config_t), .backend = SYMADDR_BACKEND_AUTO, .device = -1,           \
        .heap_bytes = (size_t)64 << 20, .timeout_ms = 60000u,                                      \
        .allreduce_algo = SYMADDR_ALLREDUCE_AUTO, .ll_bytes = SIZE_MAX, .lamport_bytes = SIZE_MAX, \
        .debug_subsys = 63u, .retain_bytes = (size_t)256 << 20,                                    \
    }

/**
 * The SYMADDR_* variables symaddr reads, one per @p index from 0: its name, default and
 * meaning (for symaddr-info -e and the like).
 * @return 1 and the strings; 0 past the last variable.
 */
SYMADDR_API int symaddr_config_var(int index, const char **name_p, const char **default_p,
                                   const char **doc_p);

/** What the variable of @p index (as symaddr_config_var numbers them) accepts: its allowed values
 *  or the form of its value, e.g. "WARN, INFO or TRACE".
 *  @return a static string; NULL past the last variable. */
SYMADDR_API const char *symaddr_config_var_accepts(int index);

/** Fill @p cfg with defaults, taking the SYMADDR_* environment variables into account. */
SYMADDR_API void symaddr_config_default(symaddr_config_t *cfg);

/**
 * Create a context over @p comm (collective over @p comm). The communicator is duplicated.
 * @param comm the ranks of the context
 * @param cfg settings, or NULL for symaddr_config_default()
 * @param ctx_p the new context
 * Every SYMADDR_* variable is parsed strictly: a value that does not parse is refused with a
 * message naming the variable, never replaced by a default.
 * @return SYMADDR_OK; SYMADDR_ERR_INVALID_ARG if @p ctx_p is NULL, @p comm is MPI_COMM_NULL or
 *         an intercommunicator, a setting is out of range or cfg->size is not this symaddr's
 * sizeof(symaddr_config_t); SYMADDR_ERR_INVALID_SIZE for a heap larger than the memory;
 * SYMADDR_ERR_TIMEOUT when a rank does not reach symaddr_init within the timeout;
 * SYMADDR_ERR_UNSUPPORTED if the requested backend is not built or has no device; SYMADDR_ERR_MPI
 * if MPI is not initialised or an MPI call failed; SYMADDR_ERR_BACKEND / SYMADDR_ERR_NO_MEMORY when
 * the heap cannot be set up; SYMADDR_ERR_PEER when another rank failed. @p ctx_p is written only on
 * success.
 */
SYMADDR_API symaddr_status_t symaddr_init(MPI_Comm comm, const symaddr_config_t *cfg,
                                          symaddr_context_t **ctx_p);

/** The version of symaddr_bootstrap_ops_t this header describes. */
#define SYMADDR_BOOTSTRAP_OPS_VERSION 1

/**
 * What a runtime other than MPI gives symaddr to start it (symaddr_init_bootstrap): a way to
 * move bytes between two ranks, and optionally faster world-wide exchanges and its own idea
 * of which ranks share a node. symaddr builds every exchange it needs of these (its records'
 * allgathers, barriers, broadcasts, the node split, its agreements, and the steps of its
 * collectives between nodes); each message it sends carries the exchange it belongs to, and
 * one of another exchange is refused (SYMADDR_ERR_PEER), never read as data.
 *
 * Every operation gets the time left of the wait symaddr is in (timeout_ms, at least 1) and
 * must return within it, SYMADDR_ERR_TIMEOUT when the peer did not come; any status other than
 * SYMADDR_OK is returned by the symaddr call that made the exchange, on this rank, and breaks
 * the context as a timeout does. symaddr cannot stop an operation that never returns: the
 * call in it does not return either, so an operation without a deadline of its own makes
 * every symaddr wait as unbounded as it is. Operations are called from the thread of the
 * symaddr call, one at a time per context, never concurrently.
 */
typedef struct symaddr_bootstrap_ops {
    unsigned version; /**< SYMADDR_BOOTSTRAP_OPS_VERSION */
    /** Required. Send @p send_bytes at @p send to rank @p to and receive exactly
     *  @p recv_bytes from rank @p from into @p recv, both at once (post both before waiting
     *  for either: two ranks that send to each other must not deadlock). @p to or @p from is
     *  -1 (with 0 bytes) when that half is absent. Messages from one rank to another arrive
     *  in the order sent, and a receive of n bytes takes the sender's message of n bytes. */
    symaddr_status_t (*sendrecv)(void *state, int to, const void *send, size_t send_bytes, int from,
                                 void *recv, size_t recv_bytes, unsigned timeout_ms);
    /** Optional (NULL: built of sendrecv). Every rank's @p bytes at @p all + rank * bytes,
     *  over every rank of the bootstrap. */
    symaddr_status_t (*allgather)(void *state, const void *mine, void *all, size_t bytes,
                                  unsigned timeout_ms);
    /** Optional (NULL: built of sendrecv). Returns once every rank of the bootstrap called. */
    symaddr_status_t (*barrier)(void *state, unsigned timeout_ms);
    /** Optional (NULL: the host's name and boot id). Writes a string, equal on exactly the ranks
     *  that share memory (one node), into @p key of @p key_bytes. Called once by every rank
     *  during init. */
    symaddr_status_t (*node_key)(void *state, char *key, size_t key_bytes, unsigned timeout_ms);
    /** Optional. Called once, when the context no longer uses @p state: at the end of
     *  symaddr_finalize, or of a symaddr_init_bootstrap that failed. */
    void (*fini)(void *state);
} symaddr_bootstrap_ops_t;

/**
 * Create a context over the ranks that @p ops connect, without MPI (collective over them):
 * MPI need not be initialised, and symaddr makes no MPI call for this context (symaddr_comm
 * returns MPI_COMM_NULL). Everything else is as symaddr_init's, timeouts included: each wait
 * ends by cfg->timeout_ms whatever the operations do, short of one that never returns (see
 * symaddr_bootstrap_ops_t).
 * @param ops the operations; copied, so the table need not outlive the call
 * @param state passed to every operation; the caller's, until ops->fini
 * @param rank this rank, 0 to size - 1, one per process
 * @param size the number of ranks
 * @param cfg settings, or NULL for symaddr_config_default()
 * @param ctx_p the new context
 * @return as symaddr_init's, and SYMADDR_ERR_INVALID_ARG for a NULL @p ops or ops->sendrecv,
 *         an ops->version this library does not know, or a @p rank outside 0 to @p size - 1;
 *         the operations' own failures as they return them.
 */
SYMADDR_API symaddr_status_t symaddr_init_bootstrap(const symaddr_bootstrap_ops_t *ops, void *state,
                                                    int rank, int size, const symaddr_config_t *cfg,
                                                    symaddr_context_t **ctx_p);

/**
 * Release every registration, the heap and the communicators (collective), and set *ctx_p to NULL.
 * Peers' mappings are closed before any rank releases memory. A broken context does not wait
 * for its peers: it only releases what this rank holds, and returns SYMADDR_OK (the call that
 * broke it returned the failure, on every rank). A failure that only this node's kernels
 * recorded since the last call (a team kernel of yours, a collective on a stream) is told to
 * the other nodes here: finalize returns it, or SYMADDR_ERR_BROKEN, on every rank, without
 * waiting out the timeout. Plain memory from symaddr_mem_alloc that was not freed is freed.
 * Call it before MPI_Finalize: it makes MPI calls, which MPI refuses after MPI_Finalize.
 * @return SYMADDR_OK; SYMADDR_ERR_INVALID_ARG if @p ctx_p or *ctx_p is NULL, or another thread
 *         is in a call on the context; SYMADDR_ERR_TIMEOUT when a peer did not reach finalize
 *         within the timeout (the context is released all the same), and on that late peer
 *         too once it comes (as for allocations and frees: no rank returns OK from a finalize
 *         its peers gave up on); a node's failure first seen here, as said above;
 *         SYMADDR_ERR_MPI if MPI was finalized first (nothing is released and *ctx_p is left
 *         as it was: the process's end releases it).
 */
SYMADDR_API symaddr_status_t symaddr_finalize(symaddr_context_t **ctx_p);

/**
 * Set the deadline of this rank's waits on its peers (symaddr_config_t.timeout_ms) for the
 * calls that start after it returns. Local, not collective: set the same value on every rank,
 * for example a generous one for symaddr_init and the first allocations and a short one for
 * the step a test or a watchdog times.
 * @return SYMADDR_OK; SYMADDR_ERR_INVALID_ARG if @p ctx is NULL, @p timeout_ms is 0, or
 *         another thread is in a call on the context.
 */
SYMADDR_API symaddr_status_t symaddr_timeout_set(symaddr_context_t *ctx, unsigned timeout_ms);

/** The version of the library linked at run time, which may differ from the header's
 *  SYMADDR_VERSION_MAJOR, _MINOR and _PATCH the caller was built with; any pointer may be NULL. */
SYMADDR_API void symaddr_version(int *major_p, int *minor_p, int *patch_p);

/** Name of a status ("SYMADDR_ERR_MISMATCH: ..."); never NULL. */
SYMADDR_API const char *symaddr_strerror(symaddr_status_t status);

/** Text of the last error on @p ctx, saying what went wrong and what to do; "" if none. With
 *  @p ctx NULL: the calling thread's last failed symaddr_init, on every rank (its reason, e.g.
 *  a variable that does not parse), or "" if none; safe from any thread. */
SYMADDR_API const char *symaddr_last_error(const symaddr_context_t *ctx);

/** The backend this context runs on, and its name ("cpu", "cuda", "hip"). */
SYMADDR_API symaddr_backend_kind_t symaddr_backend(const symaddr_context_t *ctx);
/** The name of a backend kind: "auto", "cpu", "cuda" or "hip". */
SYMADDR_API const char *symaddr_backend_name(symaddr_backend_kind_t kind);

/** Whether @p kind was compiled into this library (CPU always is). */
SYMADDR_API int symaddr_backend_built(symaddr_backend_kind_t kind);

/** GPU ordinal the context uses; -1 on the cpu backend. */
SYMADDR_API int symaddr_device(const symaddr_context_t *ctx);

/** Rank and size in the context's communicator; node rank and size in its node group. */
SYMADDR_API int symaddr_rank(const symaddr_context_t *ctx);
/** Ranks of the context's communicator. */
SYMADDR_API int symaddr_size(const symaddr_context_t *ctx);
/** This rank's place in its node group. */
SYMADDR_API int symaddr_node_rank(const symaddr_context_t *ctx);
/** Ranks of this rank's node group. */
SYMADDR_API int symaddr_node_size(const symaddr_context_t *ctx);

/** The duplicated communicator the context runs on (do not free it); MPI_COMM_NULL for a
 *  context of symaddr_init_bootstrap. */
SYMADDR_API MPI_Comm symaddr_comm(const symaddr_context_t *ctx);

/** How a rank relates to another (symaddr_locality_t.peer_class). */
typedef enum symaddr_peer_class {
    SYMADDR_PEER_SELF = 0,
    SYMADDR_PEER_SAME_GPU = 1,  /**< another process on the same GPU */
    SYMADDR_PEER_SAME_NODE = 2, /**< same node: another GPU, or the cpu backend's shared memory */
    SYMADDR_PEER_FABRIC = 3,    /**< another node, reachable through a memory fabric */
    SYMADDR_PEER_REMOTE = 4,    /**< another node, reachable only through MPI */
} symaddr_peer_class_t;

/** The locality map: what lies between this rank and every other, and what traffic costs.
 *  It is separate from the address maps: translation never depends on it. */
typedef struct symaddr_locality {
    int world_size;                /**< ranks of the context */
    int local_rank;                /**< this rank */
    int node_size;                 /**< ranks of this rank's node group */
    int node_rank;                 /**< this rank's place in it */
    const int *node_ranks;         /**< ranks of this rank's node group, in node-rank order */
    int rank_stride;               /**< constant step between consecutive node_ranks; 0 if none */
    const uint8_t *peer_class;     /**< world_size entries of symaddr_peer_class_t */
    const uint8_t *direct_access;  /**< world_size entries: load/store reachable */
    const uint8_t *system_atomics; /**< world_size entries: system-scope atomics work */
    const int *device;             /**< world_size entries: GPU ordinal, -1 on cpu */
} symaddr_locality_t;

/** The context's locality map (owned by the context). @return SYMADDR_OK;
 *  SYMADDR_ERR_INVALID_ARG for NULL. */
SYMADDR_API symaddr_status_t symaddr_locality_get(symaddr_context_t *ctx,
                                                  const symaddr_locality_t **loc_p);

/**
 * Get the context's provider of @p kind (HEAP, IPC or VMM; the others are reached through
 * symaddr_import and symaddr_register_peer_table). The provider lives as long as @p ctx.
 * @return SYMADDR_OK; SYMADDR_ERR_INVALID_ARG for a NULL argument or another kind;
 *         SYMADDR_ERR_UNSUPPORTED for HEAP when the context has heap_bytes == 0, and for VMM
 *         on a backend without VMM memory (cpu; hip built against ROCm without it).
 */
SYMADDR_API symaddr_status_t symaddr_provider_get(symaddr_context_t *ctx,
                                                  symaddr_provider_kind_t kind,
                                                  symaddr_provider_t **provider_p);

/**
 * Allocate @p bytes of symmetric memory on every rank (collective). Its contents are not
 * cleared: an allocation taken back from retention (SYMADDR_RETAIN_BYTES) or from the heap keeps
 * what its last user wrote, and fresh GPU memory is what the runtime gives; fresh memory of
 * the cpu backend is zero. Clear it where zeros matter.
 * @return SYMADDR_OK with *ptr_p and *map_p set; SYMADDR_ERR_INVALID_ARG for a NULL argument;
 *         SYMADDR_ERR_INVALID_SIZE for 0 or an overflowing size; SYMADDR_ERR_MISMATCH when ranks
 *         pass different sizes or providers, or call in a different order; SYMADDR_ERR_NO_MEMORY
 *         when memory (or heap space) runs out; SYMADDR_ERR_BACKEND when export or open fails.
 *         Every rank returns the same status; on error nothing is allocated anywhere.
 */
SYMADDR_API symaddr_status_t symaddr_symmetric_alloc(symaddr_provider_t *provider, size_t bytes,
                                                     void **ptr_p, symaddr_map_t **map_p);

/**
 * Free memory from symaddr_symmetric_alloc (collective). Peers' mappings are closed before
 * any rank releases its memory.
 * A pointer is the only handle: once its address is handed out again by a later allocation,
 * freeing the old pointer frees the new allocation; symaddr cannot tell the two apart. Until
 * then, freeing it again is reported as a double free (symaddr remembers up to 2^20 freed
 * addresses per context).
 * @return SYMADDR_OK; SYMADDR_ERR_INVALID_ARG for NULL; SYMADDR_ERR_DOUBLE_FREE if @p ptr was
 *         freed and its address not allocated again since; SYMADDR_ERR_NOT_FOUND if it was never
 *         allocated; SYMADDR_ERR_WRONG_PROVIDER if it belongs to another provider;
 *         SYMADDR_ERR_MISMATCH if ranks free different allocations; SYMADDR_ERR_BROKEN on a
 *         broken context; SYMADDR_ERR_TIMEOUT when a peer did not come (the context then breaks).
 */
SYMADDR_API symaddr_status_t symaddr_symmetric_free(symaddr_provider_t *provider, void *ptr);

/**
 * Register @p bytes at @p ptr, memory someone else allocated with the backend's plain allocator
 * (hipMalloc/cudaMalloc, or symaddr_mem_alloc), collectively. @p ptr may point inside the
 * allocation. The allocation root is exported and each root is opened once per context: imports
 * of several views of one allocation share one mapping.
 * @return SYMADDR_OK with *map_p set; SYMADDR_ERR_INVALID_ARG / SYMADDR_ERR_INVALID_SIZE for bad
 *         arguments; SYMADDR_ERR_NOT_SHAREABLE if the memory does not come from an exportable
 *         allocation or the range runs past its end; SYMADDR_ERR_ALREADY_REGISTERED if it overlaps
 *         a registered range or is memory symaddr owns (its heap, or a freed allocation it keeps
 *         mapped for reuse); SYMADDR_ERR_MISMATCH if ranks pass different sizes.
 */
SYMADDR_API symaddr_status_t symaddr_import(symaddr_context_t *ctx, void *ptr, size_t bytes,
                                            symaddr_map_t **map_p);

/**
 * Record memory owned by another symmetric library: @p host_peer_addrs[r] is the address at which
 * this process reaches rank r's copy of the buffer, or 0 when unreachable;
 * host_peer_addrs[rank] must equal @p local_ptr. Collective, so that ranks agree on the size.
 * symaddr never frees or unmaps the memory.
 * @p caps: SYMADDR_CAP_* bits (SYMADDR_CAP_OWNED is dropped: symaddr never owns the memory).
 * @return SYMADDR_OK with *map_p set; SYMADDR_ERR_INVALID_ARG when an argument is NULL,
 *         host_peer_addrs[rank] != local_ptr, or @p caps has a bit that is no SYMADDR_CAP_*;
 *         SYMADDR_ERR_INVALID_SIZE for 0 bytes; SYMADDR_ERR_ALREADY_REGISTERED on overlap.
 *         A refusal on one rank fails the call on every rank.
 */
SYMADDR_API symaddr_status_t symaddr_register_peer_table(symaddr_context_t *ctx, void *local_ptr,
                                                         size_t bytes,
                                                         const uint64_t *host_peer_addrs,
                                                         uint64_t caps, symaddr_map_t **map_p);

/** A `*_ptr(ptr, pe)`-style function of another symmetric library (shmem_ptr, nvshmem_ptr,
 *  rocshmem_ptr): where this process reaches PE @p pe's copy of @p ptr, or NULL if it cannot. */
typedef void *(*symaddr_peer_ptr_fn_t)(const void *ptr, int pe);

/**
 * The generic adapter for such libraries (collective): builds the peer table from @p fn and
 * registers it as symaddr_register_peer_table does. Rank r of the context is PE
 * @p pe_of_rank[r], or PE r when @p pe_of_rank is NULL. A NULL from @p fn leaves that peer
 * unreachable (base 0). symaddr never frees the memory. For example, with rocSHMEM (C++: its
 * rocshmem_ptr is in namespace rocshmem; the C++ overload below takes its host form, whose
 * pointer parameter is not const in rocSHMEM 3):
 *
 *     using rocshmem::rocshmem_ptr;
 *     symaddr_register_ptr_fn(ctx, buf, bytes, rocshmem_ptr, NULL, SYMADDR_CAP_LOAD_STORE, &map);
 *
 * @return as symaddr_register_peer_table; SYMADDR_ERR_INVALID_ARG also when @p fn is NULL.
 */
SYMADDR_API symaddr_status_t symaddr_register_ptr_fn(symaddr_context_t *ctx, void *local_ptr,
                                                     size_t bytes, symaddr_peer_ptr_fn_t fn,
                                                     const int *pe_of_rank, uint64_t caps,
                                                     symaddr_map_t **map_p);

/**
 * Register OpenSHMEM symmetric memory (from shmem_malloc), collectively: every rank passes its
 * own copy of the same symmetric object. Peers come from shmem_ptr, the PE of each rank from
 * exchanging shmem_my_pe() over the context's communicator; a peer shmem_ptr cannot reach is
 * left unreachable. The program must have initialised OpenSHMEM (shmem_init) first; symaddr
 * finds shmem_ptr in the running program and never frees the memory. OpenSHMEM's heap is host
 * memory, so the context must run on the cpu backend. With Open MPI's oshmem, run with
 * OMPI_MCA_osc=^rdma: its rdma one-sided component crashes MPI_Finalize after shmem_finalize.
 * @return as symaddr_register_ptr_fn; SYMADDR_ERR_UNSUPPORTED when symaddr was built without
 *         OpenSHMEM's header, the program has not loaded OpenSHMEM, or the context is not on the
 *         cpu backend; SYMADDR_ERR_NOT_SHAREABLE when [ptr, ptr + bytes) is not on the
 *         symmetric heap. Every rank returns the same status.
 */
SYMADDR_API symaddr_status_t symaddr_register_openshmem(symaddr_context_t *ctx, void *ptr,
                                                        size_t bytes, symaddr_map_t **map_p);

/**
 * Register NVSHMEM symmetric memory (from nvshmem_malloc) as symaddr_register_openshmem does,
 * through nvshmem_ptr and nvshmem_my_pe. The context must run on the cuda backend, on the GPU
 * NVSHMEM was initialised on.
 * @return as symaddr_register_openshmem, with NVSHMEM and the cuda backend in place of
 *         OpenSHMEM and the cpu one.
 */
SYMADDR_API symaddr_status_t symaddr_register_nvshmem(symaddr_context_t *ctx, void *ptr,
                                                      size_t bytes, symaddr_map_t **map_p);

/**
 * Forget a map made by symaddr_import, symaddr_register_peer_table, symaddr_register_ptr_fn,
 * symaddr_register_openshmem or symaddr_register_nvshmem (collective: every rank unregisters its
 * map of the same registration).
 * Imported roots are closed when their last view goes; foreign memory is never unmapped.
 * A map handle, like symaddr_symmetric_free's pointer, is an address: once unregistered, a later
 * registration may be given the same handle, and unregistering the old one then ends the new one;
 * until then it returns SYMADDR_ERR_INVALID_MAP. (Python's maps name their own registration:
 * unregister() and free() of an ended one raise, whatever lives at its address.)
 * @return SYMADDR_OK; SYMADDR_ERR_INVALID_ARG for a NULL context or map;
 *         SYMADDR_ERR_INVALID_MAP if @p map is not live in @p ctx;
 *         SYMADDR_ERR_WRONG_PROVIDER for a map from symaddr_symmetric_alloc.
 */
SYMADDR_API symaddr_status_t symaddr_unregister(symaddr_context_t *ctx, symaddr_map_t *map);

/**
 * Find the map of the registration that contains @p ptr (any interior pointer). O(log n) and
 * lock-free: safe to call from several threads at once, and never holds up allocation or free.
 * @return SYMADDR_OK; SYMADDR_ERR_INVALID_ARG for NULL; SYMADDR_ERR_NOT_FOUND otherwise.
 */
SYMADDR_API symaddr_status_t symaddr_lookup(symaddr_context_t *ctx, const void *ptr,
                                            symaddr_map_t **map_p);

/**
 * Host-side translation of @p ptr, which must lie inside @p map's registered range
 * ([range_base, range_base + range_bytes): an import serves its view, not the rest of its
 * allocation; the same rule as symaddr_buffer_bind), to rank @p target's copy. Validation mode
 * in kernels checks the allocation's bounds, which is all a table knows.
 * @return SYMADDR_OK; SYMADDR_ERR_INVALID_ARG for NULL or a target out of range;
 *         SYMADDR_ERR_OUT_OF_BOUNDS if ptr is outside the map's range; SYMADDR_ERR_UNREACHABLE
 *         if peer_bases[target] == 0.
 */
SYMADDR_API symaddr_status_t symaddr_translate_host(const symaddr_map_t *map, const void *ptr,
                                                    int target, void **remote_p);

/**
 * Legacy context-wide table of the symmetric heap (device-resident, one entry per rank): it
 * translates any heap allocation's pointer, and validation bounds it to the whole heap. Each
 * heap allocation's map has a table of its own, its entries shifted to the allocation (the same
 * translation), which validation bounds to that allocation.
 * @return NULL when the context has no heap.
 */
SYMADDR_API uint64_t *symaddr_heap_bases_get(symaddr_context_t *ctx);

/** Plain, non-symmetric device memory (hipMalloc/cudaMalloc; shared memory on cpu). Only the
 *  context that allocated it frees it: symaddr_mem_free on another context returns
 *  SYMADDR_ERR_NOT_FOUND and leaves the memory alone.
 *  @return SYMADDR_OK with *ptr_p set; SYMADDR_ERR_INVALID_ARG for a NULL argument;
 *          SYMADDR_ERR_INVALID_SIZE for 0 or a size past what the backend can map;
 *          SYMADDR_ERR_NO_MEMORY when memory runs out; SYMADDR_ERR_BACKEND when the runtime
 *          refuses. */
SYMADDR_API symaddr_status_t symaddr_mem_alloc(symaddr_context_t *ctx, size_t bytes, void **ptr_p);
/** Free memory of symaddr_mem_alloc (of this context).
 *  @return SYMADDR_OK; SYMADDR_ERR_INVALID_ARG for a NULL context; SYMADDR_ERR_NOT_FOUND when
 *          @p ptr is not this context's plain allocation. */
SYMADDR_API symaddr_status_t symaddr_mem_free(symaddr_context_t *ctx, void *ptr);

/** Copy between any host or device pointers (peer mappings included); blocks until done.
 *  @return SYMADDR_OK; SYMADDR_ERR_INVALID_ARG for a NULL context or pointer;
 *          SYMADDR_ERR_INVALID_SIZE if @p bytes run past the end of the address space;
 *          SYMADDR_ERR_BACKEND if the runtime refuses the copy. */
SYMADDR_API symaddr_status_t symaddr_memcpy(symaddr_context_t *ctx, void *dst, const void *src,
                                            size_t bytes);

/**
 * Stream-ordered copy of @p bytes from local @p src to rank @p target's copy of @p dst, which
 * must lie inside a registration (any provider; views included). Immediate on the cpu backend.
 * CUDA moves 64 KiB and more to a rank on another GPU by the copy engine (cudaMemcpyAsync),
 * and the rest by a kernel; HIP always by a kernel.
 * @return SYMADDR_OK; SYMADDR_ERR_INVALID_ARG for NULL or a target out of range;
 *         SYMADDR_ERR_INVALID_SIZE if @p bytes at src run past the end of the address space;
 *         SYMADDR_ERR_NOT_FOUND if dst is not registered; SYMADDR_ERR_OUT_OF_BOUNDS if
 *         [dst, dst+bytes) runs past its registration; SYMADDR_ERR_UNREACHABLE if the target has
 *         no load/store path; SYMADDR_ERR_BACKEND if the runtime refuses the launch or copy.
 */
SYMADDR_API symaddr_status_t symaddr_put(symaddr_context_t *ctx, void *dst, const void *src,
                                         size_t bytes, int target, void *stream);

/** The reverse of symaddr_put: @p src is symmetric (translated to @p target), @p dst local;
 *  the same path by size and target. @return as symaddr_put, for src. */
SYMADDR_API symaddr_status_t symaddr_get(symaddr_context_t *ctx, void *dst, const void *src,
                                         size_t bytes, int target, void *stream);

/**
 * Stream-ordered remote atomic add of @p value to rank @p target's copy of @p ptr (symmetric
 * memory of any provider), at system scope, launched from the host (kernels use device.h's
 * symaddr_atomic_add_<type>). Immediate on the cpu backend.
 * @return as symaddr_put; SYMADDR_ERR_INVALID_ARG also when @p ptr is not aligned to its type.
 */
SYMADDR_API symaddr_status_t symaddr_stream_atomic_add_i32(symaddr_context_t *ctx, int32_t *ptr,
                                                           int32_t value, int target, void *stream);
/** symaddr_stream_atomic_add_i32 for uint32_t. */
SYMADDR_API symaddr_status_t symaddr_stream_atomic_add_u32(symaddr_context_t *ctx, uint32_t *ptr,
                                                           uint32_t value, int target,
                                                           void *stream);
/** symaddr_stream_atomic_add_i32 for int64_t. */
SYMADDR_API symaddr_status_t symaddr_stream_atomic_add_i64(symaddr_context_t *ctx, int64_t *ptr,
                                                           int64_t value, int target, void *stream);
/** symaddr_stream_atomic_add_i32 for uint64_t. */
SYMADDR_API symaddr_status_t symaddr_stream_atomic_add_u64(symaddr_context_t *ctx, uint64_t *ptr,
                                                           uint64_t value, int target,
                                                           void *stream);

/**
 * Bind @p ptr to @p map for the device library's buffer form.
 * @return SYMADDR_OK with *buf_p set; SYMADDR_ERR_INVALID_ARG for NULL;
 *         SYMADDR_ERR_OUT_OF_BOUNDS if @p ptr is not inside the map's registered range.
 */
SYMADDR_API symaddr_status_t symaddr_buffer_bind(const symaddr_map_t *map, void *ptr,
                                                 symaddr_buffer_t *buf_p);

/**
 * Report (and clear) the first access that validation mode refused through @p map's table.
 * Waits for the device first.
 * @return SYMADDR_OK when none; else the refused access's status (SYMADDR_ERR_OUT_OF_BOUNDS for
 *         a pointer paired with the wrong map, SYMADDR_ERR_UNREACHABLE, SYMADDR_ERR_INVALID_ARG
 *         for a bad target); SYMADDR_ERR_INVALID_MAP if @p map is not live in @p ctx.
 */
SYMADDR_API symaddr_status_t symaddr_map_check(symaddr_context_t *ctx, const symaddr_map_t *map);

/* ---- collectives ---------------------------------------------------------------------------
 * Stream-ordered on the GPU (capturable in a graph when the communicator is one node), immediate
 * on the cpu backend. send and recv must be symmetric memory of this context (any provider,
 * views included), aligned to their elements, at the same offset of their registration on
 * every rank (kernels reach a peer's copy at this rank's offset; the in-place blocks named
 * below excepted). Rooted collectives (broadcast, reduce, gather, scatter) are the exception:
 * there a rank reaches a peer's buffer where that peer passed it (the root's recv of gather,
 * the root's send of scatter and broadcast, each rank's send of reduce), so every rank may
 * pass its buffers at any offset, as MPI allows; they must lie in the same allocation or
 * registration on every rank (the heap's allocations count as one), else every rank of the
 * node gets SYMADDR_ERR_MISMATCH and the context breaks, and a rooted collective never writes
 * outside the root's recv. Rooted calls also compare collective, root, count, dtype and op in
 * their kernel, with the same result; every other collective's kernel compares the collective,
 * count, dtype and op, and which registration and offset each buffer it reaches on a peer is
 * (so ranks passing another allocation, or another offset, get SYMADDR_ERR_MISMATCH on every
 * rank of the node rather than another buffer's data). Every rank must call the same
 * collectives in the same order with the same count, dtype, op and root; validation mode
 * (symaddr_config_t.validate) checks that, and that every buffer the kernels reach on a peer is
 * the same allocation or registration (the heap's allocations count as one) at the same offset
 * on every rank, and returns SYMADDR_ERR_MISMATCH on every rank. Calls pair by their order, as
 * MPI's and NCCL's do: a rank that skips a call pairs its next one with the call the others made
 * instead. Where both have the same collective, count, dtype, op, root and buffers, only where the
 * program made them tells them apart: without validation they return OK with each other's data, and
 * the others' next call times out. With SYMADDR_VALIDATE_ON each rank also sends where it made the
 * call: the source file and line, which this header's macros pass for every collective and barrier
 * call of a C or C++ program (symaddr_call_site_set), and a binding passes with
 * symaddr_collective_run_at. Two ranks whose calls name the same file (its last 43 characters) at
 * different lines get SYMADDR_ERR_MISMATCH, with both places in the message. A source line is what
 * a compiler cannot copy and what two builds of one program share: a call site GCC duplicates at
 * -O2, and MPMD ranks running an -O0 and an -O2 build of one source, are one place. Not compared by
 * place: calls from different files, calls made without a place (through a function pointer,
 * or with SYMADDR_NO_CALL_SITES defined), and two calls from one place (a loop whose body a
 * rank skipped once still pairs by order). A program that makes one collective from different
 * places on purpose (a root's branch and the others') sets SYMADDR_VALIDATE_ARGS. What places
 * cannot tell apart, so that a skipped call there still pairs with the next one and returns OK
 * with its data: two calls through one helper function (both have the helper's line), calls
 * from different files or without a place, and two calls on one line. A framework's wrapper
 * passes its caller's file and line with symaddr_call_site_set before the call (or
 * symaddr_collective_run_at), so that validation compares its users' places. A wait
 * that times out (a peer exited or is stopped) is reported by the call on the cpu backend and by
 * symaddr_stream_sync on the GPU, as SYMADDR_ERR_TIMEOUT or SYMADDR_ERR_BROKEN (see "After a
 * timeout" above). Across nodes (real, or simulated by node_size) collectives run inside each
 * node on symmetric memory and between nodes through MPI, synchronising with the caller's
 * stream; at most 2 GiB per rank travels between nodes in one call.
 *
 * send and recv are either the same buffer (in place) or do not overlap, except for the
 * in-place forms named below.
 *
 * Each returns SYMADDR_OK; SYMADDR_ERR_INVALID_ARG for a NULL context or buffer, a bad dtype,
 * op or root, a buffer not aligned to its elements, overlapping buffers other than the in-place
 * forms, or another thread in a call on the context; SYMADDR_ERR_INVALID_SIZE when count times
 * the element size (times the ranks, for the per-rank forms) overflows or passes 2^48 bytes;
 * SYMADDR_ERR_NOT_FOUND when a buffer is not symmetric; SYMADDR_ERR_OUT_OF_BOUNDS when it is
 * too small for count; SYMADDR_ERR_MISMATCH (validation mode); SYMADDR_ERR_TIMEOUT and
 * SYMADDR_ERR_BROKEN (cpu backend; on the GPU, symaddr_stream_sync); SYMADDR_ERR_BROKEN on a
 * broken context; SYMADDR_ERR_BACKEND for a failed launch, with the runtime's reason.
 */

/**
 * The context's node as a kernel sees it, for the collective blocks of symaddr/team.h in the
 * caller's own kernels: pass *team_p to the kernel by value. The team stays valid until
 * finalize. A kernel that runs team blocks counts as one collective call of the context: every
 * rank of the node must launch it, in the same order relative to the other collectives, with
 * the same grid of at most team_p->max_blocks blocks.
 *
 * The first call on a context is collective (every rank calls it, as any collective): it sets
 * up the team kernels' own sync area, apart from the one symaddr's host collectives use, so
 * that what a team kernel leaves there (a Lamport chunk pushed and never taken, a call one rank
 * skipped) never reaches symaddr_allreduce and the others. Later calls are local.
 *
 * @return SYMADDR_OK; SYMADDR_ERR_INVALID_ARG for NULL, or while another thread is in a
 * collective call of the context (first call only); SYMADDR_ERR_BROKEN on a broken context;
 * SYMADDR_ERR_NO_MEMORY or SYMADDR_ERR_BACKEND when the sync area cannot be set up, and
 * SYMADDR_ERR_TIMEOUT when a rank did not make its first call within the timeout (first call
 * only, on every rank).
 */
SYMADDR_API symaddr_status_t symaddr_team_get(symaddr_context_t *ctx, symaddr_team_t *team_p);

/** recv[i] = op over ranks of send[i], i < count. send == recv is in place. */
SYMADDR_API symaddr_status_t symaddr_allreduce(symaddr_context_t *ctx, const void *send, void *recv,
                                               size_t count, symaddr_dtype_t dtype,
                                               symaddr_redop_t op, void *stream);
/** recv[r * count + i] = rank r's send[i]. */
SYMADDR_API symaddr_status_t symaddr_allgather(symaddr_context_t *ctx, const void *send, void *recv,
                                               size_t count, symaddr_dtype_t dtype, void *stream);
/** recv[i] = op over ranks of send[rank * count + i]: count is the per-rank result. */
SYMADDR_API symaddr_status_t symaddr_reduce_scatter(symaddr_context_t *ctx, const void *send,
                                                    void *recv, size_t count, symaddr_dtype_t dtype,
                                                    symaddr_redop_t op, void *stream);
/** recv[i] = root's send[i] on every rank (root's recv too). */
SYMADDR_API symaddr_status_t symaddr_broadcast(symaddr_context_t *ctx, const void *send, void *recv,
                                               size_t count, symaddr_dtype_t dtype, int root,
                                               void *stream);
/** Reduce to a root: root's recv[i] = op over ranks of send[i], i < count. recv must be
 *  symmetric memory of count elements on every rank too; on the other ranks its contents are
 *  unspecified afterwards (between nodes it carries a node's partial result). send == recv is
 *  in place. As ncclReduce and MPI_Reduce. */
SYMADDR_API symaddr_status_t symaddr_reduce(symaddr_context_t *ctx, const void *send, void *recv,
                                            size_t count, symaddr_dtype_t dtype, symaddr_redop_t op,
                                            int root, void *stream);
/** Gather to a root: root's recv[r * count + i] = rank r's send[i]. recv must be symmetric
 *  memory of size * count elements on every rank; only the root's is written. In place: send is
 *  the root's block of recv (recv + rank * count), as MPI_IN_PLACE. As MPI_Gather. */
SYMADDR_API symaddr_status_t symaddr_gather(symaddr_context_t *ctx, const void *send, void *recv,
                                            size_t count, symaddr_dtype_t dtype, int root,
                                            void *stream);
/** Scatter from a root: recv[i] = root's send[rank * count + i] on every rank. send must be
 *  symmetric memory of size * count elements on every rank; only the root's is read. In place:
 *  recv is this rank's block of send (send + rank * count). As MPI_Scatter. */
SYMADDR_API symaddr_status_t symaddr_scatter(symaddr_context_t *ctx, const void *send, void *recv,
                                             size_t count, symaddr_dtype_t dtype, int root,
                                             void *stream);
/** recv[r * count + i] = rank r's send[rank * count + i]. send and recv must not overlap. */
SYMADDR_API symaddr_status_t symaddr_alltoall(symaddr_context_t *ctx, const void *send, void *recv,
                                              size_t count, symaddr_dtype_t dtype, void *stream);
/** Bits of symaddr_collective_info_t.flags: a collective's shape. Its in-place form follows
 *  from it: neither SEND_ALL nor RECV_ALL, send == recv; RECV_ALL alone, send is this rank's
 *  block of recv (recv + rank * count); SEND_ALL alone, recv is this rank's block of send; both,
 *  none. */
typedef enum {
    SYMADDR_COLLECTIVE_SEND_ALL = 1,   /**< send holds count elements per rank */
    SYMADDR_COLLECTIVE_RECV_ALL = 2,   /**< recv holds count elements per rank */
    SYMADDR_COLLECTIVE_REDUCES = 4,    /**< takes op */
    SYMADDR_COLLECTIVE_ROOTED = 8,     /**< takes root */
    SYMADDR_COLLECTIVE_ROOT_ONLY = 16, /**< only the root's recv holds the result */
} symaddr_collective_flag_t;

/** A data collective as bindings and tools list it (symaddr_collective_info). */
typedef struct symaddr_collective_info {
    const char *name; /**< "allreduce": its call is symaddr_allreduce */
    const char *doc;  /**< what the call computes, one line */
    unsigned flags;   /**< SYMADDR_COLLECTIVE_* bits */
} symaddr_collective_info_t;

/** How many data collectives this library has (every collective call above; not the barrier).
 *  Their calls all take (ctx, send, recv, count, dtype[, op][, root], stream), op where
 *  SYMADDR_COLLECTIVE_REDUCES and root where SYMADDR_COLLECTIVE_ROOTED. */
SYMADDR_API int symaddr_collective_count(void);

/** Data collective @p index, 0 to symaddr_collective_count() - 1, in the order of this library
 *  (look one up by its name: a later version may add collectives between them).
 *  @return a static record, never freed; NULL when @p index is out of range. */
SYMADDR_API const symaddr_collective_info_t *symaddr_collective_info(int index);

/**
 * Run data collective @p index exactly as its own call would (the same checks, kernels and
 * messages, which name that call): for bindings and tools that serve every collective through
 * one entry. @p op is read only where the collective has SYMADDR_COLLECTIVE_REDUCES, @p root
 * only where it has SYMADDR_COLLECTIVE_ROOTED.
 * @return what the collective's call returns, as symaddr_allreduce; SYMADDR_ERR_INVALID_ARG also
 *         for an index out of range (and a NULL context).
 */
SYMADDR_API symaddr_status_t symaddr_collective_run(symaddr_context_t *ctx, int index,
                                                    const void *send, void *recv, size_t count,
                                                    symaddr_dtype_t dtype, symaddr_redop_t op,
                                                    int root, void *stream);

/**
 * symaddr_collective_run, made at @p file and @p line of the program: for bindings (Python
 * passes its caller's file and line) and wrappers (C++'s std::source_location), whose calls
 * all come from one place in the binding. With validation on (SYMADDR_VALIDATE_ON), ranks
 * whose calls name the same file at different lines get SYMADDR_ERR_MISMATCH. A negative
 * @p line is line -@p line of a call whose recv the binding staged through a workspace of its
 * own (Python's recv that is not symmetric memory): a rank that staged and one that did not
 * get SYMADDR_ERR_MISMATCH too, since their recv are different allocations. A NULL @p file
 * names no place: the call is compared by its arguments only.
 * @return as symaddr_collective_run.
 */
SYMADDR_API symaddr_status_t symaddr_collective_run_at(symaddr_context_t *ctx, int index,
                                                       const void *send, void *recv, size_t count,
                                                       symaddr_dtype_t dtype, symaddr_redop_t op,
                                                       int root, void *stream, const char *file,
                                                       int line);

/** No rank leaves before every rank has entered (stream-ordered on the GPU). */
SYMADDR_API symaddr_status_t symaddr_barrier(symaddr_context_t *ctx, void *stream);

/**
 * Names the source place (@p file, @p line) of this thread's next collective call (the nine
 * collectives, symaddr_collective_run and symaddr_barrier), which validation mode
 * (SYMADDR_VALIDATE_ON) compares across ranks. The macros below call it with each call's
 * __FILE__ and __LINE__, so that a C or C++ program needs nothing else: a place in the source
 * is what a compiler cannot copy (GCC's jump threading duplicates a call site at -O2), and what
 * two builds of one program share (an -O0 and an -O2 binary of one source, run as MPMD ranks).
 * The place is used by the next such call only. Define SYMADDR_NO_CALL_SITES before including
 * this header to call the functions directly: those calls, and calls through a function pointer,
 * are not compared by place (their arguments still are).
 */
SYMADDR_API void symaddr_call_site_set(const char *file, int line);

#if !defined(SYMADDR_NO_CALL_SITES) && !defined(SYMADDR_DOXYGEN)
#define symaddr_allreduce(...)                                                                     \
    (symaddr_call_site_set(__FILE__, __LINE__), symaddr_allreduce(__VA_ARGS__))
#define symaddr_allgather(...)                                                                     \
    (symaddr_call_site_set(__FILE__, __LINE__), symaddr_allgather(__VA_ARGS__))
#define symaddr_reduce_scatter(...)                                                                \
    (symaddr_call_site_set(__FILE__, __LINE__), symaddr_reduce_scatter(__VA_ARGS__))
#define symaddr_broadcast(...)                                                                     \
    (symaddr_call_site_set(__FILE__, __LINE__), symaddr_broadcast(__VA_ARGS__))
#define symaddr_reduce(...) (symaddr_call_site_set(__FILE__, __LINE__), symaddr_reduce(__VA_ARGS__))
#define symaddr_gather(...) (symaddr_call_site_set(__FILE__, __LINE__), symaddr_gather(__VA_ARGS__))
#define symaddr_scatter(...)                                                                       \
    (symaddr_call_site_set(__FILE__, __LINE__), symaddr_scatter(__VA_ARGS__))
#define symaddr_alltoall(...)                                                                      \
    (symaddr_call_site_set(__FILE__, __LINE__), symaddr_alltoall(__VA_ARGS__))
#define symaddr_collective_run(...)                                                                \
    (symaddr_call_site_set(__FILE__, __LINE__), symaddr_collective_run(__VA_ARGS__))
#define symaddr_barrier(...)                                                                       \
    (symaddr_call_site_set(__FILE__, __LINE__), symaddr_barrier(__VA_ARGS__))
#endif

/** Size in bytes of one element of @p dtype, 0 for an invalid dtype. */
SYMADDR_API size_t symaddr_dtype_size(symaddr_dtype_t dtype);

/** Name of @p dtype ("int32", ..., "half", "bfloat16"), NULL for an invalid dtype. */
SYMADDR_API const char *symaddr_dtype_name(symaddr_dtype_t dtype);

/**
 * Parse a size as every SYMADDR_* size variable and the tools take it: base 10 digits (a leading
 * zero is not octal), an optional fraction, an optional K, M, G or T (powers of 1024) followed
 * by nothing, "B" or "iB", or a bare "B"; "16M", "16MiB", "1.5G" and "4096" parse, "0x10",
 * " 16M", "-1", "1.1" (not whole bytes) and "16MX" do not.
 * @return SYMADDR_OK with *bytes_p set; SYMADDR_ERR_INVALID_ARG if @p text or @p bytes_p is NULL
 *         or the text is not a size; SYMADDR_ERR_INVALID_SIZE if it does not fit a size_t or
 *         does not come to whole bytes. *bytes_p is written only on success.
 */
SYMADDR_API symaddr_status_t symaddr_size_parse(const char *text, size_t *bytes_p);

/** Name of @p op ("sum", "prod", "min", "max"), NULL for an invalid operator. */
SYMADDR_API const char *symaddr_redop_name(symaddr_redop_t op);

/** What this library was built with, as one line: its GPU backend and architectures, the
 *  validation default, OpenSHMEM and NVSHMEM support, the compiler, and the MPI header.
 *  @return a static string, never NULL. */
SYMADDR_API const char *symaddr_build_info(void);

/** Name of an allreduce algorithm as SYMADDR_ALLREDUCE spells it ("auto", "oneshot", "twoshot",
 *  "ll", "lamport", "twoshot-get", "twoshot-copy"), NULL for an invalid value. */
SYMADDR_API const char *symaddr_allreduce_algo_name(symaddr_allreduce_algo_t algo);

/** Name of a provider kind ("heap", "ipc", "import", "foreign", "vmm"), NULL for an invalid
 *  kind. */
SYMADDR_API const char *symaddr_provider_name(symaddr_provider_kind_t kind);

/**
 * This library's names, values and layouts as one JSON object, for bindings that must not keep
 * copies of this header: "version", the enums "status", "backend", "provider", "redop" and
 * "dtype" (name: value), "dtype_bytes", "capability" (SYMADDR_CAP_* bits by lower-case name),
 * "collective_flag" (SYMADDR_COLLECTIVE_* bits by lower-case name), "collectives" (as
 * symaddr_collective_info lists them: [{"name", "doc", "flags"}, ...], in index order),
 * and "structs": symaddr_config_t, symaddr_map_t and symaddr_buffer_t as {"size", "fields":
 * [[name, type, offset, bytes], ...]}, type one of "int", "unsigned", "size_t", "uint64", "ptr".
 * @return a static string, never NULL; safe from any thread.
 */
SYMADDR_API const char *symaddr_abi_json(void);

/** Wait for the work queued on @p stream (a hipStream_t/cudaStream_t; NULL = default).
 *  Also reports SYMADDR_ERR_TIMEOUT or SYMADDR_ERR_BROKEN when a collective on the context
 *  failed; the context is then broken.
 *  @return SYMADDR_OK; SYMADDR_ERR_INVALID_ARG for a NULL context; SYMADDR_ERR_TIMEOUT,
 *          SYMADDR_ERR_BROKEN as above; SYMADDR_ERR_BACKEND when the runtime reports an error. */
SYMADDR_API symaddr_status_t symaddr_stream_sync(symaddr_context_t *ctx, void *stream);

/* ---- names of 0.1.0, kept for one release ---------------------------------------------------
 * One verb per act: memory is alloc'ed and freed (symaddr_mem_alloc, symaddr_symmetric_alloc),
 * getters end in _get, and symaddr_unregister ends both symaddr_import and every register. */

/** Deprecated: symaddr_symmetric_alloc(@p provider, @p bytes, @p ptr_p, @p map_p). */
SYMADDR_API SYMADDR_DEPRECATED("symaddr_symmetric_alloc") symaddr_status_t
    symaddr_allocate_symmetric(symaddr_provider_t *provider, size_t bytes, void **ptr_p,
                               symaddr_map_t **map_p);
/** Deprecated: symaddr_symmetric_free(@p provider, @p ptr). */
SYMADDR_API SYMADDR_DEPRECATED("symaddr_symmetric_free") symaddr_status_t
    symaddr_free_symmetric(symaddr_provider_t *provider, void *ptr);
/** Deprecated: symaddr_heap_bases_get. */
SYMADDR_API SYMADDR_DEPRECATED("symaddr_heap_bases_get") uint64_t *symaddr_get_heap_bases(
    symaddr_context_t *ctx);

#ifdef __cplusplus
}

#include <type_traits>

/** C++: symaddr_register_ptr_fn for a ptr function whose pointer parameter is not const
 *  (rocSHMEM 3's host rocshmem::rocshmem_ptr(void *, int)); @p fn is called only during the
 *  call, from the calling thread. A template that takes exactly that function type, so that a
 *  NULL or nullptr @p fn still means the C function (no ambiguity). */
template <typename F,
          typename = typename std::enable_if<std::is_same<F, void *(*)(void *, int)>::value>::type>
inline symaddr_status_t symaddr_register_ptr_fn(symaddr_context_t *ctx, void *local_ptr,
                                                size_t bytes, F fn, const int *pe_of_rank,
                                                uint64_t caps, symaddr_map_t **map_p)
{
    static thread_local void *(*held)(void *, int);
    struct adapt {
        static void *call(const void *ptr, int pe) { return held(const_cast<void *>(ptr), pe); }
    };
    held = fn;
    return fn ? symaddr_register_ptr_fn(ctx, local_ptr, bytes, &adapt::call, pe_of_rank, caps,
                                        map_p)
              : symaddr_register_ptr_fn(ctx, local_ptr, bytes, (symaddr_peer_ptr_fn_t)0, pe_of_rank,
                                        caps, map_p);
}
#endif

#endif /* SYMADDR_SYMADDR_H */
