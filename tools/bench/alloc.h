/* SPDX-License-Identifier: MIT */
/* symaddr-bench's host-side ops: symmetric allocation and lookup. */
#ifndef SYMADDR_BENCH_ALLOC_H
#define SYMADDR_BENCH_ALLOC_H

static int run_alloc(symaddr_context_t *ctx, const opts_t *o)
{
    int rank = symaddr_rank(ctx);
    if (rank == 0) {
        printf("# symaddr-bench alloc: %d ranks, backend %s: allocate_symmetric + free, per call\n",
               symaddr_size(ctx), symaddr_backend_name(symaddr_backend(ctx)));
        printf("# reference: the backend's plain allocation + free (symaddr_mem_alloc)\n");
        printf("%8s %12s %12s %12s %8s\n", "provider", "size(B)", "time(us)", "plain(us)", "ratio");
    }
    for (int k = 0; k < 2; k++) {
        symaddr_provider_kind_t kind = k ? SYMADDR_PROVIDER_IPC : SYMADDR_PROVIDER_HEAP;
        symaddr_provider_t *prov;
        if (symaddr_provider_get(ctx, kind, &prov))
            continue;
        for (double s = (double)o->min; s <= (double)o->max; s *= o->factor) {
            size_t bytes = (size_t)s;
            void *p;
            symaddr_map_t *m;
            symaddr_status_t st = SYMADDR_OK;
            MPI_Barrier(symaddr_comm(ctx));
            double t0 = MPI_Wtime();
            for (int i = 0; i < o->iters && st == SYMADDR_OK; i++) {
                st = symaddr_symmetric_alloc(prov, bytes, &p, &m);
                if (st == SYMADDR_OK)
                    st = symaddr_symmetric_free(prov, p);
            }
            double t = now_max(ctx, (MPI_Wtime() - t0) / o->iters);
            MPI_Barrier(symaddr_comm(ctx));
            t0 = MPI_Wtime();
            for (int i = 0; i < o->iters; i++)
                if (symaddr_mem_alloc(ctx, bytes, &p) == SYMADDR_OK)
                    symaddr_mem_free(ctx, p);
            double tp = now_max(ctx, (MPI_Wtime() - t0) / o->iters);
            if (rank == 0 && st == SYMADDR_OK)
                printf("%8s %12zu %12.2f %12.2f %8.2f\n", k ? "ipc" : "heap", bytes, t * 1e6,
                       tp * 1e6, t / tp);
            else if (rank == 0)
                printf("%8s %12zu %12s (%s)\n", k ? "ipc" : "heap", bytes, "failed",
                       symaddr_last_error(ctx));
            if (st != SYMADDR_OK)
                break;
        }
    }
    return 0;
}

/* Lookups of interior pointers with 10,000 live allocations, against the same with one. */
static int run_lookup(symaddr_context_t *ctx, const opts_t *o)
{
    enum { LIVE = 10000, LOOKUPS = 1000000 };
    symaddr_provider_t *heap;
    symaddr_map_t *m, *found;
    void **p = (void **)calloc(LIVE, sizeof(void *));
    int rank = symaddr_rank(ctx), ok = 1;
    (void)o;
    if (symaddr_provider_get(ctx, SYMADDR_PROVIDER_HEAP, &heap))
        return 1;
    double t[2];
    int live[2] = {1, LIVE}, n = 0;
    for (int k = 0; k < 2; k++) {
        while (n < live[k] && ok)
            ok = symaddr_symmetric_alloc(heap, 256, &p[n++], &m) == SYMADDR_OK;
        if (!ok)
            break;
        unsigned x = 12345;
        double t0 = MPI_Wtime();
        for (int i = 0; i < LOOKUPS; i++) {
            x = x * 1103515245u + 12345u;
            int j = (int)(x % (unsigned)n);
            ok &= symaddr_lookup(ctx, (char *)p[j] + (x >> 8) % 256, &found) == SYMADDR_OK;
        }
        t[k] = now_max(ctx, (MPI_Wtime() - t0) / LOOKUPS);
    }
    if (rank == 0 && ok) {
        printf("# symaddr-bench lookup: %d ranks, backend %s, heap allocations of 256 B\n",
               symaddr_size(ctx), symaddr_backend_name(symaddr_backend(ctx)));
        printf("%12s %14s %8s\n", "live", "ns/lookup", "ratio");
        printf("%12d %14.1f %8s\n", 1, t[0] * 1e9, "1.00");
        printf("%12d %14.1f %8.2f\n", LIVE, t[1] * 1e9, t[1] / t[0]);
    } else if (rank == 0) {
        fprintf(stderr, "symaddr-bench: lookup: %s (raise SYMADDR_HEAP_SIZE)\n",
                symaddr_last_error(ctx));
    }
    for (int i = 0; i < n; i++)
        if (p[i])
            symaddr_symmetric_free(heap, p[i]);
    free(p);
    return ok ? 0 : 1;
}

#endif
