/* SPDX-License-Identifier: MIT */
/* symaddr-info: what a context sees: backend, ranks, node groups and the
 * reachability of every rank from every other through a test allocation. */
#include <stdio.h>
#include <stdlib.h>

#include "symaddr/symaddr.h"

int main(int argc, char **argv)
{
    symaddr_context_t *ctx;
    symaddr_provider_t *ipc;
    symaddr_map_t *map;
    void *ptr;
    symaddr_status_t st;

    MPI_Init(&argc, &argv);
    if ((st = symaddr_init(MPI_COMM_WORLD, NULL, &ctx)) != SYMADDR_OK) {
        fprintf(stderr, "symaddr-info: %s\n", symaddr_strerror(st));
        MPI_Finalize();
        return 1;
    }
    int rank = symaddr_rank(ctx), size = symaddr_size(ctx);
    st = symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &ipc);
    if (st == SYMADDR_OK)
        st = symaddr_allocate_symmetric(ipc, 4096, &ptr, &map);
    if (st != SYMADDR_OK) {
        fprintf(stderr, "symaddr-info: %s\n", symaddr_last_error(ctx));
        symaddr_finalize(&ctx);
        MPI_Finalize();
        return 1;
    }
    char *row = malloc((size_t)size + 1), *all = malloc((size_t)size * ((size_t)size + 1));
    for (int t = 0; t < size; t++)
        row[t] = t == rank ? 'S' : map->host_peer_bases[t] ? 'L' : '-';
    row[size] = 0;
    MPI_Gather(row, size + 1, MPI_CHAR, all, size + 1, MPI_CHAR, 0, symaddr_comm(ctx));
    if (rank == 0) {
        printf("symaddr %d.%d.%d\n", SYMADDR_VERSION_MAJOR, SYMADDR_VERSION_MINOR,
               SYMADDR_VERSION_PATCH);
        printf("backend      %s\n", symaddr_backend_name(symaddr_backend(ctx)));
        printf("ranks        %d (%d per node group)\n", size, symaddr_node_size(ctx));
        printf("capabilities 0x%llx\n", (unsigned long long)map->capabilities);
        printf("reachability (S self, L load/store, - none)\n");
        for (int r = 0; r < size; r++)
            printf("  rank %3d   %s\n", r, all + (size_t)r * ((size_t)size + 1));
    }
    free(row);
    free(all);
    symaddr_free_symmetric(ipc, ptr);
    symaddr_finalize(&ctx);
    MPI_Finalize();
    return 0;
}
