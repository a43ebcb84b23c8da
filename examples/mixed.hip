/* SPDX-License-Identifier: MIT */
/* One kernel over memory from three owners, each reached through its own map: a buffer another
 * library allocated (on the cpu backend an MPI-3 shared window, registered by its peer table),
 * a view of plain memory imported at an odd offset, and symaddr's own symmetric memory. The
 * kernel reads its right neighbour's copy of the first two and writes their sum into its own.
 *
 *   mpiexec -n 4 ./example-mixed-cpu
 * On a GPU backend the window's host memory cannot serve a kernel; that part is skipped and said
 * so, and the rest runs.
 */
#include "example.h"
#include "symaddr/device.h"

#define N 1001
#define VIEW 3 /* the imported view starts this many floats into its allocation */

__global__ void mixed(float *own, const float *foreign, const uint64_t *foreign_pb,
                      const float *view, const uint64_t *view_pb, size_t n, int target, int me)
{
    /* one translation per map and thread, then plain loads */
    const float *f =
        foreign ? (const float *)symaddr_translate(foreign, target, foreign_pb, me) : NULL;
    const float *v = (const float *)symaddr_translate(view, target, view_pb, me);
    for (size_t i = symaddr_grid_thread(); i < n; i += symaddr_grid_threads())
        own[i] = (f ? f[i] : 0.0f) + v[i];
}

static float foreign_of(int rank, size_t i) { return (float)(rank + 1) * 1000.0f + (float)i; }
static float view_of(int rank, size_t i) { return (float)(rank + 1) * 0.5f + (float)(i % 9); }

int main(int argc, char **argv)
{
    symaddr_context_t *ctx;
    symaddr_provider_t *prov;
    symaddr_map_t *own_map, *view_map, *foreign_map = NULL;
    float *own, *plain, *foreign = NULL, host[N];
    MPI_Comm node;
    MPI_Win win = MPI_WIN_NULL;

    MPI_Init(&argc, &argv);
    CHECK(NULL, symaddr_init(MPI_COMM_WORLD, NULL, &ctx));
    int rank = symaddr_rank(ctx), size = symaddr_size(ctx), node_size;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &node_size);
    if (node_size != size) {
        if (rank == 0)
            printf("example-mixed: SKIP: run on one node (%d of %d ranks here)\n", node_size, size);
        MPI_Comm_free(&node);
        CHECK(ctx, symaddr_finalize(&ctx));
        MPI_Finalize();
        return 77;
    }
    int gpu = symaddr_backend(ctx) != SYMADDR_BACKEND_CPU;

    /* 1. another library's memory: an MPI shared window, with MPI's own peer addresses */
    if (!gpu) {
        uint64_t peers[64];
        MPI_Win_allocate_shared(sizeof(host), sizeof(float), MPI_INFO_NULL, node, &foreign, &win);
        for (int r = 0; r < size && r < 64; r++) {
            MPI_Aint bytes;
            int unit;
            void *base;
            MPI_Win_shared_query(win, r, &bytes, &unit, &base);
            peers[r] = (uint64_t)(uintptr_t)base;
        }
        for (size_t i = 0; i < N; i++)
            foreign[i] = foreign_of(rank, i);
        CHECK(ctx, symaddr_register_peer_table(ctx, foreign, sizeof(host), peers,
                                               SYMADDR_CAP_LOAD_STORE, &foreign_map));
    } else if (rank == 0) {
        printf("example-mixed: the MPI window part is skipped: its host memory cannot serve a "
               "GPU kernel\n");
    }

    /* 2. plain memory, imported as a view at an odd offset */
    CHECK(ctx, symaddr_mem_alloc(ctx, sizeof(host) + VIEW * sizeof(float), (void **)&plain));
    for (size_t i = 0; i < N; i++)
        host[i] = view_of(rank, i);
    CHECK(ctx, symaddr_memcpy(ctx, plain + VIEW, host, sizeof(host)));
    CHECK(ctx, symaddr_import(ctx, plain + VIEW, sizeof(host), &view_map));

    /* 3. symaddr's own */
    CHECK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &prov));
    CHECK(ctx, symaddr_symmetric_alloc(prov, sizeof(host), (void **)&own, &own_map));
    CHECK(ctx, symaddr_barrier(ctx, NULL)); /* every rank's data is in place */
    CHECK(ctx, symaddr_stream_sync(ctx, NULL));

    int target = (rank + 1) % size;
    CHECK(ctx, SYMADDR_KERNEL_LAUNCH(mixed, 4, 256, NULL, own, foreign,
                                     foreign_map ? foreign_map->peer_bases : NULL, plain + VIEW,
                                     view_map->peer_bases, (size_t)N, target, rank));
    CHECK(ctx, symaddr_stream_sync(ctx, NULL));
    CHECK(ctx, symaddr_memcpy(ctx, host, own, sizeof(host)));
    int wrong = 0;
    for (size_t i = 0; i < N; i++)
        wrong += host[i] != (gpu ? 0.0f : foreign_of(target, i)) + view_of(target, i);
    int all_wrong = 0;
    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("example-mixed: %d ranks, backend %s, %s: %d of %d elements wrong\n", size,
               symaddr_backend_name(symaddr_backend(ctx)),
               gpu ? "imported view and symaddr's memory" : "window, imported view and own",
               all_wrong, N * size);

    CHECK(ctx, symaddr_barrier(ctx, NULL)); /* no rank still reads a peer's memory */
    CHECK(ctx, symaddr_stream_sync(ctx, NULL));
    CHECK(ctx, symaddr_symmetric_free(prov, own));
    CHECK(ctx, symaddr_unregister(ctx, view_map));
    CHECK(ctx, symaddr_mem_free(ctx, plain));
    if (foreign_map)
        CHECK(ctx, symaddr_unregister(ctx, foreign_map));
    CHECK(ctx, symaddr_finalize(&ctx));
    if (win != MPI_WIN_NULL)
        MPI_Win_free(&win);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return all_wrong ? 1 : 0;
}
