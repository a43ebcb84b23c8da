/* SPDX-License-Identifier: MIT */
#include "bootstrap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

symaddr_status_t symaddr_bootstrap_init(symaddr_bootstrap_t *b, MPI_Comm user_comm,
                                        int sim_node_size, unsigned timeout_ms, char *why,
                                        size_t why_len)
{
    MPI_Comm host_comm = MPI_COMM_NULL;
    MPI_Group node_group, group;
    int *node_ranks = NULL;

    memset(b, 0, sizeof(*b));
    b->comm = b->node_comm = MPI_COMM_NULL;
    b->timeout_ms = timeout_ms;
    if (MPI_Comm_dup(user_comm, &b->comm) != MPI_SUCCESS)
        goto err_mpi;
    MPI_Comm_rank(b->comm, &b->rank);
    MPI_Comm_size(b->comm, &b->size);
    if (MPI_Comm_split_type(b->comm, MPI_COMM_TYPE_SHARED, b->rank, MPI_INFO_NULL, &host_comm) !=
        MPI_SUCCESS)
        goto err_mpi;
    if (sim_node_size > 0) {
        int host_rank;
        MPI_Comm_rank(host_comm, &host_rank);
        if (MPI_Comm_split(host_comm, host_rank / sim_node_size, b->rank, &b->node_comm) !=
            MPI_SUCCESS)
            goto err_mpi;
        MPI_Comm_free(&host_comm);
    } else {
        b->node_comm = host_comm;
    }
    host_comm = MPI_COMM_NULL;
    MPI_Comm_rank(b->node_comm, &b->node_rank);
    MPI_Comm_size(b->node_comm, &b->node_size);

    b->node_to_rank = malloc(sizeof(int) * (size_t)b->node_size);
    node_ranks = malloc(sizeof(int) * (size_t)b->node_size);
    if (!b->node_to_rank || !node_ranks) {
        snprintf(why, why_len, "out of host memory for %d node ranks", b->node_size);
        free(node_ranks);
        symaddr_bootstrap_fini(b);
        return SYMADDR_ERR_NO_MEMORY;
    }
    for (int i = 0; i < b->node_size; i++)
        node_ranks[i] = i;
    MPI_Comm_group(b->node_comm, &node_group);
    MPI_Comm_group(b->comm, &group);
    MPI_Group_translate_ranks(node_group, b->node_size, node_ranks, group, b->node_to_rank);
    MPI_Group_free(&node_group);
    MPI_Group_free(&group);
    free(node_ranks);
    return SYMADDR_OK;

err_mpi:
    snprintf(why, why_len, "MPI refused to duplicate or split the communicator");
    if (host_comm != MPI_COMM_NULL)
        MPI_Comm_free(&host_comm);
    symaddr_bootstrap_fini(b);
    return SYMADDR_ERR_MPI;
}

void symaddr_bootstrap_fini(symaddr_bootstrap_t *b)
{
    if (b->socks) {
        for (int i = 0; i < b->node_size; i++)
            if (b->socks[i] >= 0)
                close(b->socks[i]);
        free(b->socks);
    }
    free(b->node_to_rank);
    if (b->node_comm != MPI_COMM_NULL)
        MPI_Comm_free(&b->node_comm);
    if (b->comm != MPI_COMM_NULL)
        MPI_Comm_free(&b->comm);
    memset(b, 0, sizeof(*b));
    b->comm = b->node_comm = MPI_COMM_NULL;
}

symaddr_status_t symaddr_bootstrap_node_allgather(symaddr_bootstrap_t *b, const void *mine,
                                                  void *all, size_t bytes)
{
    return MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, b->node_comm) ==
                   MPI_SUCCESS
               ? SYMADDR_OK
               : SYMADDR_ERR_MPI;
}
