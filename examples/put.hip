/* SPDX-License-Identifier: MIT */
/* The put kernel every allocator ships a copy of, written once against symaddr: each rank
 * writes its data into its right neighbour's copy of a symmetric buffer, translating the
 * address once per thread from the buffer's peer table.
 *
 *   mpiexec -n 4 ./example-put
 */
#include "example.h"
#include "symaddr/device.h"

#define N 1001 /* odd, so that the grid-stride loop has a tail */

__global__ void put_kernel(float *dst, const float *src, size_t n, int target,
                           const uint64_t *peer_bases, int local_rank)
{
    if (!symaddr_reachable(target, peer_bases)) /* another node: symaddr_put goes through MPI */
        return;
    /* translation hoisted: one table lookup per thread, then plain stores */
    float *remote = (float *)symaddr_translate(dst, target, peer_bases, local_rank);
    for (size_t i = symaddr_grid_thread(); i < n; i += symaddr_grid_threads())
        remote[i] = src[i];
}

int main(int argc, char **argv)
{
    symaddr_context_t *ctx;
    symaddr_provider_t *prov;
    symaddr_map_t *src_map, *dst_map;
    float *src, *dst, host[N];

    MPI_Init(&argc, &argv);
    CHECK(NULL, symaddr_init(MPI_COMM_WORLD, NULL, &ctx));
    int rank = symaddr_rank(ctx), size = symaddr_size(ctx);
    CHECK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &prov));
    CHECK(ctx, symaddr_symmetric_alloc(prov, sizeof(host), (void **)&src, &src_map));
    CHECK(ctx, symaddr_symmetric_alloc(prov, sizeof(host), (void **)&dst, &dst_map));

    for (int i = 0; i < N; i++)
        host[i] = (float)(rank + 1) * 1000.0f + (float)i;
    CHECK(ctx, symaddr_memcpy(ctx, src, host, sizeof(host)));
    CHECK(ctx, symaddr_barrier(ctx, NULL)); /* every dst exists before anyone writes into it */

    CHECK(ctx, SYMADDR_KERNEL_LAUNCH(put_kernel, 4, 256, NULL, dst, src, (size_t)N,
                                     (rank + 1) % size, dst_map->peer_bases, rank));
    CHECK(ctx, symaddr_stream_sync(ctx, NULL));
    CHECK(ctx, symaddr_barrier(ctx, NULL)); /* every put has landed */
    CHECK(ctx, symaddr_stream_sync(ctx, NULL));

    /* dst now holds the left neighbour's data: rank + 1 of that rank */
    int from = (rank + size - 1) % size, wrong = 0;
    CHECK(ctx, symaddr_memcpy(ctx, host, dst, sizeof(host)));
    for (int i = 0; i < N; i++)
        wrong += host[i] != (float)(from + 1) * 1000.0f + (float)i;
    int all_wrong = 0;
    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("example-put: %d ranks, backend %s, %d of %d elements wrong\n", size,
               symaddr_backend_name(symaddr_backend(ctx)), all_wrong, N * size);

    CHECK(ctx, symaddr_symmetric_free(prov, src));
    CHECK(ctx, symaddr_symmetric_free(prov, dst));
    CHECK(ctx, symaddr_finalize(&ctx));
    MPI_Finalize();
    return all_wrong ? 1 : 0;
}
