/* SPDX-License-Identifier: MIT */
/* The smallest program on an installed symaddr: a symmetric allocation, an allreduce of
 * rank + 1, checked against the sum. Built by CMake, make with pkg-config, and Meson. */
#include <stdio.h>

#include <symaddr/symaddr.h>

int main(int argc, char **argv)
{
    symaddr_context_t *ctx;
    symaddr_provider_t *prov;
    symaddr_map_t *map;
    float *buf, host[3];
    int major, minor, patch, wrong = 0;

    MPI_Init(&argc, &argv);
    symaddr_version(&major, &minor, &patch);
    if (symaddr_init(MPI_COMM_WORLD, NULL, &ctx) != SYMADDR_OK ||
        symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &prov) != SYMADDR_OK ||
        symaddr_symmetric_alloc(prov, sizeof(host), (void **)&buf, &map) != SYMADDR_OK) {
        fprintf(stderr, "consumer: setup failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int rank = symaddr_rank(ctx), size = symaddr_size(ctx);
    for (int i = 0; i < 3; i++)
        host[i] = (float)(rank + 1) * (float)(i + 1);
    symaddr_memcpy(ctx, buf, host, sizeof(host));
    symaddr_status_t st = symaddr_allreduce(ctx, buf, buf, 3, SYMADDR_FLOAT32, SYMADDR_SUM, NULL);
    if (st == SYMADDR_OK)
        st = symaddr_stream_sync(ctx, NULL);
    symaddr_memcpy(ctx, host, buf, sizeof(host));
    for (int i = 0; i < 3; i++)
        wrong += host[i] != (float)(size * (size + 1) / 2) * (float)(i + 1);
    if (rank == 0)
        printf("consumer: symaddr %d.%d.%d (header %d.%d.%d), %d ranks, %s, %d wrong\n", major,
               minor, patch, SYMADDR_VERSION_MAJOR, SYMADDR_VERSION_MINOR, SYMADDR_VERSION_PATCH,
               size, symaddr_strerror(st), wrong);
    symaddr_symmetric_free(prov, buf);
    symaddr_finalize(&ctx);
    MPI_Finalize();
    return st == SYMADDR_OK && wrong == 0 ? 0 : 1;
}
