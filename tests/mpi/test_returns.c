/* SPDX-License-Identifier: MIT */
/* The bad-argument cases of every public function that returns a status, on one rank: each
 * line "RET function status" is one call's result, which tests/check-returns compares with the
 * statuses symaddr.h documents for that function. A status a function returns but does not
 * document fails the check (SIZE_MAX to symaddr_put gave an undocumented INVALID_SIZE). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symaddr/symaddr.h"

static int calls;
#define RET(fn, call)                                                                              \
    do {                                                                                           \
        symaddr_status_t st_ = (call);                                                             \
        printf("RET %s %d\n", #fn, (int)st_);                                                      \
        calls++;                                                                                   \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    static int plain[64];
    symaddr_context_t *ctx = NULL, *none = NULL;
    symaddr_config_t cfg;
    symaddr_map_t *m = NULL, *m2 = NULL;
    symaddr_provider_t *ipc = NULL, *heap = NULL;
    const symaddr_locality_t *loc;
    void *p = NULL, *q = NULL, *r;
    size_t v;

    /* init and the context */
    RET(symaddr_init, symaddr_init(MPI_COMM_NULL, NULL, &none));
    RET(symaddr_init, symaddr_init(MPI_COMM_WORLD, NULL, NULL));
    symaddr_config_default(&cfg);
    cfg.size = 8;
    RET(symaddr_init, symaddr_init(MPI_COMM_WORLD, &cfg, &none));
    symaddr_config_default(&cfg);
    cfg.backend = (symaddr_backend_kind_t)42;
    RET(symaddr_init, symaddr_init(MPI_COMM_WORLD, &cfg, &none));
    symaddr_config_default(&cfg);
    cfg.heap_bytes = (size_t)1 << 50;
    RET(symaddr_init, symaddr_init(MPI_COMM_WORLD, &cfg, &none));
    if (symaddr_init(MPI_COMM_WORLD, NULL, &ctx) != SYMADDR_OK) {
        fprintf(stderr, "test_returns: symaddr_init failed: %s\n", symaddr_last_error(NULL));
        return 1;
    }
    RET(symaddr_finalize, symaddr_finalize(NULL));
    RET(symaddr_finalize, symaddr_finalize(&none));
    RET(symaddr_timeout_set, symaddr_timeout_set(NULL, 10));
    RET(symaddr_timeout_set, symaddr_timeout_set(ctx, 0));
    RET(symaddr_locality_get, symaddr_locality_get(NULL, &loc));
    RET(symaddr_locality_get, symaddr_locality_get(ctx, NULL));
    RET(symaddr_provider_get, symaddr_provider_get(NULL, SYMADDR_PROVIDER_IPC, &ipc));
    RET(symaddr_provider_get, symaddr_provider_get(ctx, (symaddr_provider_kind_t)99, &ipc));
    RET(symaddr_provider_get, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IMPORT, &ipc));
    RET(symaddr_provider_get, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, NULL));
    if (symaddr_backend(ctx) == SYMADDR_BACKEND_CPU)
        RET(symaddr_provider_get, symaddr_provider_get(ctx, SYMADDR_PROVIDER_VMM, &ipc));
    symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &ipc);
    symaddr_provider_get(ctx, SYMADDR_PROVIDER_HEAP, &heap);

    /* allocation */
    RET(symaddr_symmetric_alloc, symaddr_symmetric_alloc(NULL, 64, &p, &m));
    RET(symaddr_symmetric_alloc, symaddr_symmetric_alloc(ipc, 0, &p, &m));
    RET(symaddr_symmetric_alloc, symaddr_symmetric_alloc(ipc, SIZE_MAX, &p, &m));
    RET(symaddr_symmetric_alloc, symaddr_symmetric_alloc(ipc, 64, NULL, &m));
    RET(symaddr_symmetric_alloc, symaddr_symmetric_alloc(heap, (size_t)1 << 40, &p, &m));
    symaddr_symmetric_alloc(ipc, 4096, &p, &m);
    symaddr_symmetric_alloc(ipc, 4096, &q, &m2);
    RET(symaddr_symmetric_free, symaddr_symmetric_free(NULL, p));
    RET(symaddr_symmetric_free, symaddr_symmetric_free(ipc, NULL));
    RET(symaddr_symmetric_free, symaddr_symmetric_free(ipc, plain));
    RET(symaddr_symmetric_free, symaddr_symmetric_free(ipc, (char *)p + 8));
    void *gone;
    symaddr_map_t *gm;
    symaddr_symmetric_alloc(ipc, 512, &gone, &gm);
    symaddr_symmetric_free(ipc, gone);
    RET(symaddr_symmetric_free, symaddr_symmetric_free(ipc, gone));

    /* registrations */
    void *local = NULL;
    RET(symaddr_mem_alloc, symaddr_mem_alloc(NULL, 64, &local));
    RET(symaddr_mem_alloc, symaddr_mem_alloc(ctx, 0, &local));
    RET(symaddr_mem_alloc, symaddr_mem_alloc(ctx, SIZE_MAX, &local));
    RET(symaddr_mem_alloc, symaddr_mem_alloc(ctx, 64, NULL));
    symaddr_mem_alloc(ctx, 4096, &local);
    RET(symaddr_import, symaddr_import(NULL, local, 64, &m2));
    RET(symaddr_import, symaddr_import(ctx, NULL, 64, &m2));
    RET(symaddr_import, symaddr_import(ctx, local, 0, &m2));
    RET(symaddr_import, symaddr_import(ctx, local, 64, NULL));
    RET(symaddr_import, symaddr_import(ctx, p, 64, &m2));
    uint64_t peers[1] = {(uint64_t)(uintptr_t)local};
    RET(symaddr_register_peer_table, symaddr_register_peer_table(NULL, local, 64, peers, 0, &m2));
    RET(symaddr_register_peer_table, symaddr_register_peer_table(ctx, NULL, 64, peers, 0, &m2));
    RET(symaddr_register_peer_table, symaddr_register_peer_table(ctx, local, 64, NULL, 0, &m2));
    RET(symaddr_register_peer_table, symaddr_register_peer_table(ctx, local, 0, peers, 0, &m2));
    RET(symaddr_register_ptr_fn, symaddr_register_ptr_fn(NULL, local, 64, NULL, NULL, 0, &m2));
    RET(symaddr_register_ptr_fn, symaddr_register_ptr_fn(ctx, local, 64, NULL, NULL, 0, &m2));
    RET(symaddr_register_openshmem, symaddr_register_openshmem(NULL, local, 64, &m2));
    RET(symaddr_register_openshmem, symaddr_register_openshmem(ctx, NULL, 64, &m2));
    RET(symaddr_register_nvshmem, symaddr_register_nvshmem(NULL, local, 64, &m2));
    RET(symaddr_register_nvshmem, symaddr_register_nvshmem(ctx, local, 64, &m2));
    RET(symaddr_unregister, symaddr_unregister(NULL, m));
    RET(symaddr_unregister, symaddr_unregister(ctx, NULL));
    RET(symaddr_unregister, symaddr_unregister(ctx, m));
    RET(symaddr_lookup, symaddr_lookup(NULL, p, &m2));
    RET(symaddr_lookup, symaddr_lookup(ctx, NULL, &m2));
    RET(symaddr_lookup, symaddr_lookup(ctx, p, NULL));
    RET(symaddr_lookup, symaddr_lookup(ctx, plain, &m2));
    RET(symaddr_translate_host, symaddr_translate_host(NULL, p, 0, &r));
    RET(symaddr_translate_host, symaddr_translate_host(m, p, 0, NULL));
    RET(symaddr_translate_host, symaddr_translate_host(m, plain, 0, &r));
    RET(symaddr_translate_host, symaddr_translate_host(m, p, 99, &r));
    RET(symaddr_translate_host, symaddr_translate_host(m, p, -1, &r));
    RET(symaddr_mem_free, symaddr_mem_free(NULL, local));
    RET(symaddr_mem_free, symaddr_mem_free(ctx, plain));

    /* one-sided */
    RET(symaddr_memcpy, symaddr_memcpy(NULL, p, plain, 8));
    RET(symaddr_memcpy, symaddr_memcpy(ctx, NULL, plain, 8));
    RET(symaddr_memcpy, symaddr_memcpy(ctx, p, plain, SIZE_MAX - 8));
    RET(symaddr_put, symaddr_put(NULL, p, plain, 8, 0, NULL));
    RET(symaddr_put, symaddr_put(ctx, NULL, plain, 8, 0, NULL));
    RET(symaddr_put, symaddr_put(ctx, plain, plain + 8, 8, 0, NULL));
    RET(symaddr_put, symaddr_put(ctx, p, plain, 8, 99, NULL));
    RET(symaddr_put, symaddr_put(ctx, p, plain, 8192, 0, NULL));
    RET(symaddr_put, symaddr_put(ctx, p, plain, SIZE_MAX - 8, 0, NULL));
    RET(symaddr_get, symaddr_get(NULL, plain, p, 8, 0, NULL));
    RET(symaddr_get, symaddr_get(ctx, plain, NULL, 8, 0, NULL));
    RET(symaddr_get, symaddr_get(ctx, plain, plain + 8, 8, 0, NULL));
    RET(symaddr_get, symaddr_get(ctx, plain, p, 8, 99, NULL));
    RET(symaddr_get, symaddr_get(ctx, plain, p, 8192, 0, NULL));
    RET(symaddr_get, symaddr_get(ctx, plain, p, SIZE_MAX - 8, 0, NULL));
    RET(symaddr_stream_atomic_add_i32,
        symaddr_stream_atomic_add_i32(NULL, (int32_t *)p, 1, 0, NULL));
    RET(symaddr_stream_atomic_add_i32,
        symaddr_stream_atomic_add_i32(ctx, (int32_t *)plain, 1, 0, NULL));
    RET(symaddr_stream_atomic_add_i32,
        symaddr_stream_atomic_add_i32(ctx, (int32_t *)p, 1, 99, NULL));
    RET(symaddr_stream_atomic_add_u32,
        symaddr_stream_atomic_add_u32(ctx, (uint32_t *)plain, 1, 0, NULL));
    RET(symaddr_stream_atomic_add_i64,
        symaddr_stream_atomic_add_i64(ctx, (int64_t *)p, 1, -1, NULL));
    RET(symaddr_stream_atomic_add_u64,
        symaddr_stream_atomic_add_u64(ctx, (uint64_t *)((char *)p + 4), 1, 0, NULL));
    symaddr_buffer_t buf;
    RET(symaddr_buffer_bind, symaddr_buffer_bind(NULL, p, &buf));
    RET(symaddr_buffer_bind, symaddr_buffer_bind(m, p, NULL));
    RET(symaddr_buffer_bind, symaddr_buffer_bind(m, plain, &buf));
    RET(symaddr_map_check, symaddr_map_check(NULL, m));
    RET(symaddr_map_check, symaddr_map_check(ctx, NULL));
    RET(symaddr_map_check, symaddr_map_check(ctx, (const symaddr_map_t *)plain));
    symaddr_team_t team;
    RET(symaddr_team_get, symaddr_team_get(NULL, &team));
    RET(symaddr_team_get, symaddr_team_get(ctx, NULL));

    /* collectives: each with a NULL context, a NULL or plain buffer, a bad dtype, op and root,
     * a count too large, and overlapping buffers */
    char *a = p, *b = q;
#define COLL_CASES_OF(name, fn, ...)                                                               \
    RET(name, fn(NULL, a, b, 4, SYMADDR_INT32, __VA_ARGS__));                                      \
    RET(name, fn(ctx, NULL, b, 4, SYMADDR_INT32, __VA_ARGS__));                                    \
    RET(name, fn(ctx, plain, b, 4, SYMADDR_INT32, __VA_ARGS__));                                   \
    RET(name, fn(ctx, a, b, 4, (symaddr_dtype_t)99, __VA_ARGS__));                                 \
    RET(name, fn(ctx, a + 1, b, 4, SYMADDR_INT32, __VA_ARGS__));                                   \
    RET(name, fn(ctx, a, b, 2048, SYMADDR_INT32, __VA_ARGS__));                                    \
    RET(name, fn(ctx, a, b, SIZE_MAX / 2, SYMADDR_INT32, __VA_ARGS__));                            \
    RET(name, fn(ctx, a, a + 4, 4, SYMADDR_INT32, __VA_ARGS__))
#define COLL_CASES(fn, ...) COLL_CASES_OF(fn, fn, __VA_ARGS__)
    COLL_CASES(symaddr_allreduce, SYMADDR_SUM, NULL);
    RET(symaddr_allreduce,
        symaddr_allreduce(ctx, a, b, 4, SYMADDR_INT32, (symaddr_redop_t)9, NULL));
    COLL_CASES(symaddr_reduce_scatter, SYMADDR_SUM, NULL);
    COLL_CASES(symaddr_allgather, NULL);
    COLL_CASES(symaddr_alltoall, NULL);
    COLL_CASES(symaddr_broadcast, 0, NULL);
    RET(symaddr_broadcast, symaddr_broadcast(ctx, a, b, 4, SYMADDR_INT32, 5, NULL));
    COLL_CASES(symaddr_reduce, SYMADDR_SUM, 0, NULL);
    RET(symaddr_reduce, symaddr_reduce(ctx, a, b, 4, SYMADDR_INT32, SYMADDR_SUM, -1, NULL));
    RET(symaddr_reduce, symaddr_reduce(ctx, a, b, 4, SYMADDR_INT32, (symaddr_redop_t)-1, 0, NULL));
    COLL_CASES(symaddr_gather, 0, NULL);
    RET(symaddr_gather, symaddr_gather(ctx, a, b, 4, SYMADDR_INT32, 3, NULL));
    COLL_CASES(symaddr_scatter, 0, NULL);
    RET(symaddr_scatter, symaddr_scatter(ctx, a, b, 4, SYMADDR_INT32, 3, NULL));
    /* the one entry for every collective: the same cases, a bad op and root, and an index out
     * of range, whose message must say where the indices come from */
#define RUN(ctx_, ...) symaddr_collective_run(ctx_, k, __VA_ARGS__)
    for (int k = 0; k < symaddr_collective_count(); k++) {
        COLL_CASES_OF(symaddr_collective_run, RUN, SYMADDR_SUM, 0, NULL);
        RET(symaddr_collective_run, RUN(ctx, a, b, 4, SYMADDR_INT32, (symaddr_redop_t)9, 0, NULL));
        RET(symaddr_collective_run, RUN(ctx, a, b, 4, SYMADDR_INT32, SYMADDR_SUM, 5, NULL));
    }
#define RUN_AT(ctx_, ...) symaddr_collective_run_at(ctx_, k, __VA_ARGS__, __FILE__, __LINE__)
    for (int k = 0; k < symaddr_collective_count(); k++) {
        COLL_CASES_OF(symaddr_collective_run_at, RUN_AT, SYMADDR_SUM, 0, NULL);
        RET(symaddr_collective_run_at,
            RUN_AT(ctx, a, b, 4, SYMADDR_INT32, (symaddr_redop_t)9, 0, NULL));
    }
    for (int k = -1; k <= symaddr_collective_count(); k += symaddr_collective_count() + 1) {
        RET(symaddr_collective_run, RUN(ctx, a, b, 4, SYMADDR_INT32, SYMADDR_SUM, 0, NULL));
        if (!strstr(symaddr_last_error(ctx), "symaddr_collective_info")) {
            printf("not ok - collective %d out of range: \"%s\"\n", k, symaddr_last_error(ctx));
            return 1;
        }
        RET(symaddr_collective_run_at, RUN_AT(ctx, a, b, 4, SYMADDR_INT32, SYMADDR_SUM, 0, NULL));
    }
    RET(symaddr_barrier, symaddr_barrier(NULL, NULL));
    RET(symaddr_stream_sync, symaddr_stream_sync(NULL, NULL));

    /* sizes */
    RET(symaddr_size_parse, symaddr_size_parse(NULL, &v));
    RET(symaddr_size_parse, symaddr_size_parse("16M", NULL));
    RET(symaddr_size_parse, symaddr_size_parse("16MX", &v));
    RET(symaddr_size_parse, symaddr_size_parse("1.1", &v));
    RET(symaddr_size_parse, symaddr_size_parse("99999999999T", &v));

    symaddr_symmetric_free(ipc, p);
    symaddr_symmetric_free(ipc, q);
    symaddr_mem_free(ctx, local);
    symaddr_finalize(&ctx);
    printf("CALLS %d\n", calls);
    MPI_Finalize();
    return 0;
}
