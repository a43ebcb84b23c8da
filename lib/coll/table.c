/* SPDX-License-Identifier: MIT */
/* What a collective is: one row each, and what each kernel kind serves. A new collective is
 * a row here, its public call in launch.c, its step between nodes in nodes.c, and its kernel
 * (doc/extending.md). */
#include "coll/coll.h"

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
    .name = "symaddr_barrier",
    .collective = "barrier",
    .kind = SYMADDR_COLL_BARRIER,
};

const symaddr_coll_row_t symaddr_coll_allreduce_row = {
    .name = "symaddr_allreduce",
    .collective = "allreduce",
    .kind = SYMADDR_COLL_ALLREDUCE_ONESHOT,
    .choose = symaddr_coll_allreduce_kind,
    .reduces = true,
    .peers = SYMADDR_COLL_PEER_SEND | SYMADDR_COLL_PEER_RECV,
    .rule = symaddr_coll_in_place_or_apart,
    .nodes = symaddr_coll_allreduce_nodes,
};

const symaddr_coll_row_t symaddr_coll_reduce_scatter_row = {
    .name = "symaddr_reduce_scatter",
    .collective = "reduce_scatter",
    .kind = SYMADDR_COLL_REDUCE_SCATTER,
    .send_all = true,
    .reduces = true,
    .peers = SYMADDR_COLL_PEER_SEND,
    .rule = symaddr_coll_rs_rule,
    .nodes = symaddr_coll_reduce_scatter_nodes,
};

const symaddr_coll_row_t symaddr_coll_allgather_row = {
    .name = "symaddr_allgather",
    .collective = "allgather",
    .kind = SYMADDR_COLL_ALLGATHER,
    .recv_all = true,
    .node_work = true,
    .peers = SYMADDR_COLL_PEER_RECV,
    .rule = symaddr_coll_ag_rule,
    .nodes = symaddr_coll_allgather_nodes,
};

const symaddr_coll_row_t symaddr_coll_broadcast_row = {
    .name = "symaddr_broadcast",
    .collective = "broadcast",
    .kind = SYMADDR_COLL_BROADCAST,
    .rooted = true,
    .peers = SYMADDR_COLL_PEER_SEND,
    .rule = symaddr_coll_in_place_or_apart,
    .nodes = symaddr_coll_broadcast_nodes,
};

const symaddr_coll_row_t symaddr_coll_alltoall_row = {
    .name = "symaddr_alltoall",
    .collective = "alltoall",
    .kind = SYMADDR_COLL_ALLTOALL,
    .send_all = true,
    .recv_all = true,
    .node_work = true,
    .mpi_all = true,
    .peers = SYMADDR_COLL_PEER_RECV,
    .rule = symaddr_coll_a2a_rule,
    .nodes = symaddr_coll_alltoall_nodes,
};

const symaddr_coll_row_t symaddr_coll_reduce_row = {
    .name = "symaddr_reduce",
    .collective = "reduce",
    .kind = SYMADDR_COLL_REDUCE,
    .reduces = true,
    .rooted = true,
    .peers = SYMADDR_COLL_PEER_SEND,
    .rule = symaddr_coll_in_place_or_apart,
    .nodes = symaddr_coll_reduce_nodes,
};

const symaddr_coll_row_t symaddr_coll_gather_row = {
    .name = "symaddr_gather",
    .collective = "gather",
    .kind = SYMADDR_COLL_GATHER,
    .recv_all = true,
    .rooted = true,
    .mpi_all = true,
    .peers = SYMADDR_COLL_PEER_RECV,
    .rule = symaddr_coll_ag_rule,
    .nodes = symaddr_coll_rooted_nodes,
};

const symaddr_coll_row_t symaddr_coll_scatter_row = {
    .name = "symaddr_scatter",
    .collective = "scatter",
    .kind = SYMADDR_COLL_SCATTER,
    .send_all = true,
    .rooted = true,
    .mpi_all = true,
    .peers = SYMADDR_COLL_PEER_SEND,
    .rule = symaddr_coll_rs_rule,
    .nodes = symaddr_coll_rooted_nodes,
};

/* Every kernel kind: its collective and, for the INFO log, its algorithm. */
const symaddr_coll_kind_info_t symaddr_coll_kinds[SYMADDR_COLL_KIND_COUNT_] = {
    [SYMADDR_COLL_BARRIER] = {.coll = &symaddr_coll_barrier_row, .algo = "flags"},
    [SYMADDR_COLL_ALLREDUCE_ONESHOT] = {.coll = &symaddr_coll_allreduce_row, .algo = "one-shot"},
    [SYMADDR_COLL_ALLREDUCE_TWOSHOT] = {.coll = &symaddr_coll_allreduce_row, .algo = "two-shot"},
    [SYMADDR_COLL_ALLREDUCE_LL] = {.coll = &symaddr_coll_allreduce_row, .algo = "ll"},
    [SYMADDR_COLL_ALLREDUCE_LAMPORT] = {.coll = &symaddr_coll_allreduce_row, .algo = "lamport"},
    [SYMADDR_COLL_ALLREDUCE_TWOSHOT_GET] = {.coll = &symaddr_coll_allreduce_row,
                                            .algo = "two-shot by loads"},
    [SYMADDR_COLL_ALLREDUCE_TWOSHOT_COPY] = {.coll = &symaddr_coll_allreduce_row,
                                             .algo = "two-shot, all-gather by the copy engine",
                                             .after = symaddr_coll_gather_by_copy},
    [SYMADDR_COLL_REDUCE_SCATTER] = {.coll = &symaddr_coll_reduce_scatter_row, .algo = "loads"},
    [SYMADDR_COLL_ALLGATHER] = {.coll = &symaddr_coll_allgather_row, .algo = "stores"},
    [SYMADDR_COLL_BROADCAST] = {.coll = &symaddr_coll_broadcast_row, .algo = "loads from the root"},
    [SYMADDR_COLL_ALLTOALL] = {.coll = &symaddr_coll_alltoall_row, .algo = "stores"},
    [SYMADDR_COLL_REDUCE] = {.coll = &symaddr_coll_reduce_row, .algo = "the root's loads"},
    [SYMADDR_COLL_GATHER] = {.coll = &symaddr_coll_gather_row, .algo = "stores into the root"},
    [SYMADDR_COLL_SCATTER] = {.coll = &symaddr_coll_scatter_row, .algo = "loads from the root"},
};
