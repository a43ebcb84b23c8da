/* SPDX-License-Identifier: MIT */
/* The names of 0.1.0 still link and still work: an allocation through them carries exact
 * rank-distinct values to the neighbour, and the heap's table is the heap map's. */
#include "harness.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static void test_old_names(symaddr_context_t *ctx)
{
    symaddr_provider_t *heap;
    symaddr_map_t *m;
    int32_t *p, v = 0, mine = 1000 + t_rank;
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_HEAP, &heap));
    T_OK(ctx, symaddr_allocate_symmetric(heap, 4096, (void **)&p, &m));
    T_CHECK(symaddr_get_heap_bases(ctx) == symaddr_heap_bases_get(ctx), "heap table");
    T_OK(ctx, symaddr_memcpy(ctx, p, &mine, sizeof(mine)));
    MPI_Barrier(MPI_COMM_WORLD);
    void *remote;
    int right = (t_rank + 1) % t_size;
    T_OK(ctx, symaddr_translate_host(m, p, right, &remote));
    T_OK(ctx, symaddr_memcpy(ctx, &v, remote, sizeof(v)));
    T_CHECK(v == 1000 + right, "read %d from rank %d", v, right);
    MPI_Barrier(MPI_COMM_WORLD);
    T_OK(ctx, symaddr_free_symmetric(heap, p));
    T_STATUS(ctx, symaddr_free_symmetric(heap, p), SYMADDR_ERR_DOUBLE_FREE);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, NULL);
    T_RUN(test_old_names, ctx);
    symaddr_finalize(&ctx);
    return t_finish();
}
