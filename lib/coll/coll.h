/* SPDX-License-Identifier: MIT */
/* The collectives module: what a collective and a kernel kind are (table.c), the allreduce
 * algorithms (algo.c), the argument checks (check.c), the launch and the public calls
 * (launch.c), and the steps between nodes (leaders.c, nodes.c). Nothing outside lib/coll/
 * includes this header. */
#ifndef SYMADDR_LIB_COLL_COLL_H
#define SYMADDR_LIB_COLL_COLL_H

#include "lifecycle/context.h"

/* The node's kernel and, across nodes, the step between them. */
typedef symaddr_status_t (*symaddr_coll_nodes_t)(symaddr_context_t *ctx,
                                                 const symaddr_coll_desc_t *d, void *stream);
/* The kernel kind for a message of bytes per rank of dt, and the bytes of work that size its
 * grid. */
typedef symaddr_coll_kind_t (*symaddr_coll_choose_t)(const symaddr_context_t *ctx, size_t bytes,
                                                     symaddr_dtype_t dt, size_t *work_p);

/* PEER_SEND, PEER_RECV: the buffers a collective's kernels reach on peers by translating this
 * rank's own pointer, so that every rank must pass them at the same offset of the
 * registration. */
enum { SYMADDR_COLL_PEER_SEND = 1, SYMADDR_COLL_PEER_RECV = 2 };

/* A kernel kind of a collective: the algorithm it names in the INFO log, and the host's step
 * after its kernel (two-shot-copy's all-gather), if any. */
typedef struct symaddr_coll_algo {
    symaddr_coll_kind_t kind;
    const char *name;
    symaddr_status_t (*after)(symaddr_context_t *ctx, const symaddr_coll_desc_t *d, void *stream);
} symaddr_coll_algo_t;

/* A collective: one row of table.c. */
typedef struct symaddr_coll_row {
    symaddr_collective_info_t info;   /* what symaddr_collective_info shows: name, doc, shape */
    const char *name;                 /* the public call's */
    const symaddr_coll_algo_t *algos; /* its kinds, the first where choose is NULL; ends at a
                                         NULL name */
    symaddr_coll_choose_t choose;
    bool node_work; /* its kernel's work is a block per node rank */
    bool mpi_all;   /* between nodes, MPI carries every rank's block at once */
    unsigned peers; /* SYMADDR_COLL_PEER_* */
    symaddr_coll_nodes_t nodes;
} symaddr_coll_row_t;

/* One kind, for a row's algos: ONE_ALGO(SYMADDR_COLL_GATHER, "stores into the root"). */
#define SYMADDR_COLL_ONE_ALGO(kind_, name_)                                                        \
    (const symaddr_coll_algo_t[])                                                                  \
    {                                                                                              \
        {.kind = (kind_), .name = (name_)}, { .name = NULL }                                       \
    }

static inline bool symaddr_coll_has(const symaddr_coll_row_t *r, unsigned flag)
{
    return (r->info.flags & flag) != 0;
}

/* table.c: a kind's collective and algorithm (NULL for no kind); the data collectives by
 * public index, and the barrier */
const symaddr_coll_row_t *symaddr_coll_row_of(symaddr_coll_kind_t kind);
const symaddr_coll_algo_t *symaddr_coll_algo_of(symaddr_coll_kind_t kind);
const symaddr_coll_row_t *symaddr_coll_row_at(int index);
extern const symaddr_coll_row_t symaddr_coll_barrier_row;

/* algo.c */
symaddr_coll_kind_t symaddr_coll_allreduce_kind(const symaddr_context_t *ctx, size_t bytes,
                                                symaddr_dtype_t dt, size_t *work_p);

/* check.c: the overlap rules, the agreement of validation mode, and the checks of a call */
/* Where the program made a call: the file and line the header's macros (symaddr_call_site_set)
 * or a binding (symaddr_collective_run_at) named, which validation mode compares; NULL file
 * for a call made without them (not compared by place). */
typedef struct symaddr_coll_site {
    const char *file;
    int line;
} symaddr_coll_site_t;
/* The place symaddr_call_site_set named for this thread's call, then forgotten. */
symaddr_coll_site_t symaddr_coll_site_take(void);
symaddr_status_t symaddr_coll_check_match(symaddr_context_t *ctx, symaddr_status_t local,
                                          symaddr_coll_kind_t kind, size_t count,
                                          symaddr_dtype_t dt, int op, int root,
                                          const uint64_t where[4], const symaddr_coll_site_t *site);
/* A call's arguments: its collective, what the caller passed and where. */
typedef struct symaddr_coll_call {
    const symaddr_coll_row_t *row;
    symaddr_coll_site_t site;
    const void *send;
    void *recv;
    size_t count;
    symaddr_dtype_t dtype;
    symaddr_redop_t op;
    int root;
} symaddr_coll_call_t;
/* Sizes, dtype, op, root and buffers checked, then the agreement (validation mode); fills d. */
symaddr_status_t symaddr_coll_begin(symaddr_context_t *ctx, const symaddr_coll_call_t *call,
                                    symaddr_coll_desc_t *d);

/* launch.c */
void symaddr_coll_desc_init(symaddr_context_t *ctx, symaddr_coll_desc_t *d,
                            symaddr_coll_kind_t kind, size_t count, symaddr_dtype_t dt,
                            symaddr_redop_t op, size_t work_bytes);
symaddr_status_t symaddr_coll_launch(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                     void *stream);
/* A public call: its checks, the node's kernel and, across nodes, the row's step. */
symaddr_status_t symaddr_coll_run(symaddr_context_t *ctx, const symaddr_coll_call_t *call,
                                  void *stream);
/* The guarded body of the public call of kind_'s collective: its arguments and where the
 * program called it, then symaddr_coll_run. */
#define SYMADDR_COLL_CALL(ctx, kind_, ...)                                                         \
    SYMADDR_COLL_CALL_AT(ctx, kind_, symaddr_coll_site_take(), __VA_ARGS__)
/* The same, made at site_. */
#define SYMADDR_COLL_CALL_AT(ctx, kind_, site_, ...)                                               \
    do {                                                                                           \
        const symaddr_coll_call_t call_ = {                                                        \
            .row = symaddr_coll_row_of(kind_), .site = site_, __VA_ARGS__};                        \
        GUARDED(ctx, call_.row->name, symaddr_coll_run(ctx, &call_, stream));                      \
    } while (0)
symaddr_status_t symaddr_coll_gather_by_copy(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                             void *stream);

/* leaders.c: the MPI steps between nodes */
void *symaddr_coll_stage_out(symaddr_context_t *ctx, const void *dev, size_t bytes);
symaddr_status_t symaddr_coll_settle(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                     symaddr_status_t st, void *stream, const char *fn);
symaddr_status_t symaddr_coll_mpi_fits(symaddr_context_t *ctx, size_t bytes, const char *fn);
symaddr_status_t symaddr_coll_node_bcast(symaddr_context_t *ctx, const symaddr_coll_desc_t *of,
                                         size_t count, void *stream);
symaddr_status_t symaddr_coll_leaders_combine(symaddr_context_t *ctx, void *recv, size_t count,
                                              symaddr_dtype_t dt, symaddr_redop_t op, bool keep);
symaddr_status_t symaddr_coll_leaders_allreduce(symaddr_context_t *ctx,
                                                const symaddr_coll_desc_t *of, void *stream);
symaddr_status_t symaddr_coll_leaders_allgather(symaddr_context_t *ctx, void *recv, size_t bytes);
symaddr_status_t symaddr_coll_leaders_broadcast(symaddr_context_t *ctx, void *recv, size_t bytes,
                                                int has_root);

/* nodes.c: each collective's step between nodes, after the node's kernel */
symaddr_status_t symaddr_coll_allreduce_nodes(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                              void *stream);
symaddr_status_t symaddr_coll_reduce_scatter_nodes(symaddr_context_t *ctx,
                                                   const symaddr_coll_desc_t *d, void *stream);
symaddr_status_t symaddr_coll_allgather_nodes(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                              void *stream);
symaddr_status_t symaddr_coll_broadcast_nodes(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                              void *stream);
symaddr_status_t symaddr_coll_alltoall_nodes(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                             void *stream);
symaddr_status_t symaddr_coll_reduce_nodes(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                           void *stream);
symaddr_status_t symaddr_coll_rooted_nodes(symaddr_context_t *ctx, const symaddr_coll_desc_t *d,
                                           void *stream);

#endif
