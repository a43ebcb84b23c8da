/* SPDX-License-Identifier: MIT */
/* What a collective is: one row each, with its kernel kinds, and its public call. A new
 * collective is a row and a call here, its kernel, and (where no row's serves) its step between
 * nodes in nodes.c (doc/extending.md). */
#include "coll/coll.h"

#include <pthread.h>

#define DTYPE_SIZE(E, name, bytes, T) [SYMADDR_##E] = bytes,
#define DTYPE_NAME(E, name, bytes, T) [SYMADDR_##E] = #name,
static const size_t dtype_sizes[SYMADDR_DTYPE_COUNT_] = {SYMADDR_DTYPE_LIST(DTYPE_SIZE)};
static const char *const dtype_names[SYMADDR_DTYPE_COUNT_] = {SYMADDR_DTYPE_LIST(DTYPE_NAME)};

size_t symaddr_dtype_size(symaddr_dtype_t dtype)
{
    return (int)dtype >= 0 && dtype < SYMADDR_DTYPE_COUNT_ ? dtype_sizes[dtype] : 0;
}

const char *symaddr_dtype_name(symaddr_dtype_t dtype)
{
    return (int)dtype >= 0 && dtype < SYMADDR_DTYPE_COUNT_ ? dtype_names[dtype] : NULL;
}

const symaddr_coll_row_t symaddr_coll_barrier_row = {
    .info = {.name = "barrier", .doc = "no rank leaves before every rank has entered"},
    .name = "symaddr_barrier",
    .algos = SYMADDR_COLL_ONE_ALGO(SYMADDR_COLL_BARRIER, "flags"),
};

enum {
    SEND_ALL = SYMADDR_COLLECTIVE_SEND_ALL,
    RECV_ALL = SYMADDR_COLLECTIVE_RECV_ALL,
    REDUCES = SYMADDR_COLLECTIVE_REDUCES,
    ROOTED = SYMADDR_COLLECTIVE_ROOTED,
    ROOT_ONLY = SYMADDR_COLLECTIVE_ROOT_ONLY,
};

/* The data collectives, in the order of their public index. */
static const symaddr_coll_row_t rows[] = {
    {
        .info = {.name = "allreduce",
                 .doc = "recv[i] = op over ranks of send[i]",
                 .flags = REDUCES},
        .name = "symaddr_allreduce",
        .algos =
            (const symaddr_coll_algo_t[]){
                {.kind = SYMADDR_COLL_ALLREDUCE_ONESHOT, .name = "one-shot"},
                {.kind = SYMADDR_COLL_ALLREDUCE_TWOSHOT, .name = "two-shot"},
                {.kind = SYMADDR_COLL_ALLREDUCE_LL, .name = "ll"},
                {.kind = SYMADDR_COLL_ALLREDUCE_LAMPORT, .name = "lamport"},
                {.kind = SYMADDR_COLL_ALLREDUCE_TWOSHOT_GET, .name = "two-shot by loads"},
                {.kind = SYMADDR_COLL_ALLREDUCE_TWOSHOT_COPY,
                 .name = "two-shot, all-gather by the copy engine",
                 .after = symaddr_coll_gather_by_copy},
                {.name = NULL},
            },
        .choose = symaddr_coll_allreduce_kind,
        .peers = SYMADDR_COLL_PEER_SEND | SYMADDR_COLL_PEER_RECV,
        .nodes = symaddr_coll_allreduce_nodes,
    },
    {
        .info = {.name = "reduce_scatter",
                 .doc = "recv[i] = op over ranks of send[rank * count + i]",
                 .flags = SEND_ALL | REDUCES},
        .name = "symaddr_reduce_scatter",
        .algos = SYMADDR_COLL_ONE_ALGO(SYMADDR_COLL_REDUCE_SCATTER, "loads"),
        .peers = SYMADDR_COLL_PEER_SEND,
        .nodes = symaddr_coll_reduce_scatter_nodes,
    },
    {
        .info = {.name = "allgather",
                 .doc = "recv[r * count + i] = rank r's send[i]",
                 .flags = RECV_ALL},
        .name = "symaddr_allgather",
        .algos = SYMADDR_COLL_ONE_ALGO(SYMADDR_COLL_ALLGATHER, "stores"),
        .node_work = true,
        .peers = SYMADDR_COLL_PEER_RECV,
        .nodes = symaddr_coll_allgather_nodes,
    },
    {
        .info = {.name = "broadcast",
                 .doc = "recv[i] = root's send[i] on every rank",
                 .flags = ROOTED},
        .name = "symaddr_broadcast",
        .algos = SYMADDR_COLL_ONE_ALGO(SYMADDR_COLL_BROADCAST, "loads from the root"),
        .peers = SYMADDR_COLL_PEER_SEND,
        .nodes = symaddr_coll_broadcast_nodes,
    },
    {
        .info = {.name = "alltoall",
                 .doc = "recv[r * count + i] = rank r's send[rank * count + i]",
                 .flags = SEND_ALL | RECV_ALL},
        .name = "symaddr_alltoall",
        .algos = SYMADDR_COLL_ONE_ALGO(SYMADDR_COLL_ALLTOALL, "stores"),
        .node_work = true,
        .mpi_all = true,
        .peers = SYMADDR_COLL_PEER_RECV,
        .nodes = symaddr_coll_alltoall_nodes,
    },
    {
        .info = {.name = "reduce",
                 .doc = "root's recv[i] = op over ranks of send[i]; recv is symmetric on every "
                        "rank, unspecified off the root",
                 .flags = REDUCES | ROOTED | ROOT_ONLY},
        .name = "symaddr_reduce",
        .algos = SYMADDR_COLL_ONE_ALGO(SYMADDR_COLL_REDUCE, "the root's loads"),
        .peers = SYMADDR_COLL_PEER_SEND,
        .nodes = symaddr_coll_reduce_nodes,
    },
    {
        .info = {.name = "gather",
                 .doc = "root's recv[r * count + i] = rank r's send[i]; only the root's recv is "
                        "written",
                 .flags = RECV_ALL | ROOTED | ROOT_ONLY},
        .name = "symaddr_gather",
        .algos = SYMADDR_COLL_ONE_ALGO(SYMADDR_COLL_GATHER, "stores into the root"),
        .mpi_all = true,
        .peers = SYMADDR_COLL_PEER_RECV,
        .nodes = symaddr_coll_rooted_nodes,
    },
    {
        .info = {.name = "scatter",
                 .doc = "recv[i] = root's send[rank * count + i]; only the root's send is read",
                 .flags = SEND_ALL | ROOTED},
        .name = "symaddr_scatter",
        .algos = SYMADDR_COLL_ONE_ALGO(SYMADDR_COLL_SCATTER, "loads from the root"),
        .mpi_all = true,
        .peers = SYMADDR_COLL_PEER_SEND,
        .nodes = symaddr_coll_rooted_nodes,
    },
};
enum { ROWS = sizeof(rows) / sizeof(rows[0]) };

/* Each kind's row and algorithm, found once from the rows. */
static const symaddr_coll_row_t *row_of[SYMADDR_COLL_KIND_COUNT_];
static const symaddr_coll_algo_t *algo_of[SYMADDR_COLL_KIND_COUNT_];
static pthread_once_t kinds_once = PTHREAD_ONCE_INIT;

static void index_row(const symaddr_coll_row_t *r)
{
    for (const symaddr_coll_algo_t *a = r->algos; a->name; a++) {
        row_of[a->kind] = r;
        algo_of[a->kind] = a;
    }
}

static void index_kinds(void)
{
    index_row(&symaddr_coll_barrier_row);
    for (int i = 0; i < ROWS; i++)
        index_row(&rows[i]);
}

const symaddr_coll_row_t *symaddr_coll_row_of(symaddr_coll_kind_t kind)
{
    pthread_once(&kinds_once, index_kinds);
    return (int)kind >= 0 && kind < SYMADDR_COLL_KIND_COUNT_ ? row_of[kind] : NULL;
}

const symaddr_coll_algo_t *symaddr_coll_algo_of(symaddr_coll_kind_t kind)
{
    pthread_once(&kinds_once, index_kinds);
    return (int)kind >= 0 && kind < SYMADDR_COLL_KIND_COUNT_ ? algo_of[kind] : NULL;
}

const symaddr_coll_row_t *symaddr_coll_row_at(int index)
{
    return index >= 0 && index < ROWS ? &rows[index] : NULL;
}

int symaddr_collective_count(void) { return ROWS; }

const symaddr_collective_info_t *symaddr_collective_info(int index)
{
    return index >= 0 && index < ROWS ? &rows[index].info : NULL;
}

/* The public calls, one per row. */
symaddr_status_t symaddr_allreduce(symaddr_context_t *ctx, const void *send, void *recv,
                                   size_t count, symaddr_dtype_t dtype, symaddr_redop_t op,
                                   void *stream)
{
    SYMADDR_COLL_CALL(ctx, SYMADDR_COLL_ALLREDUCE_ONESHOT, .send = send, .recv = recv,
                      .count = count, .dtype = dtype, .op = op);
}

symaddr_status_t symaddr_reduce_scatter(symaddr_context_t *ctx, const void *send, void *recv,
                                        size_t count, symaddr_dtype_t dtype, symaddr_redop_t op,
                                        void *stream)
{
    SYMADDR_COLL_CALL(ctx, SYMADDR_COLL_REDUCE_SCATTER, .send = send, .recv = recv, .count = count,
                      .dtype = dtype, .op = op);
}

symaddr_status_t symaddr_allgather(symaddr_context_t *ctx, const void *send, void *recv,
                                   size_t count, symaddr_dtype_t dtype, void *stream)
{
    SYMADDR_COLL_CALL(ctx, SYMADDR_COLL_ALLGATHER, .send = send, .recv = recv, .count = count,
                      .dtype = dtype);
}

symaddr_status_t symaddr_broadcast(symaddr_context_t *ctx, const void *send, void *recv,
                                   size_t count, symaddr_dtype_t dtype, int root, void *stream)
{
    SYMADDR_COLL_CALL(ctx, SYMADDR_COLL_BROADCAST, .send = send, .recv = recv, .count = count,
                      .dtype = dtype, .root = root);
}

symaddr_status_t symaddr_alltoall(symaddr_context_t *ctx, const void *send, void *recv,
                                  size_t count, symaddr_dtype_t dtype, void *stream)
{
    SYMADDR_COLL_CALL(ctx, SYMADDR_COLL_ALLTOALL, .send = send, .recv = recv, .count = count,
                      .dtype = dtype);
}

symaddr_status_t symaddr_reduce(symaddr_context_t *ctx, const void *send, void *recv, size_t count,
                                symaddr_dtype_t dtype, symaddr_redop_t op, int root, void *stream)
{
    SYMADDR_COLL_CALL(ctx, SYMADDR_COLL_REDUCE, .send = send, .recv = recv, .count = count,
                      .dtype = dtype, .op = op, .root = root);
}

symaddr_status_t symaddr_gather(symaddr_context_t *ctx, const void *send, void *recv, size_t count,
                                symaddr_dtype_t dtype, int root, void *stream)
{
    SYMADDR_COLL_CALL(ctx, SYMADDR_COLL_GATHER, .send = send, .recv = recv, .count = count,
                      .dtype = dtype, .root = root);
}

symaddr_status_t symaddr_scatter(symaddr_context_t *ctx, const void *send, void *recv, size_t count,
                                 symaddr_dtype_t dtype, int root, void *stream)
{
    SYMADDR_COLL_CALL(ctx, SYMADDR_COLL_SCATTER, .send = send, .recv = recv, .count = count,
                      .dtype = dtype, .root = root);
}
