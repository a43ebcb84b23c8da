/* SPDX-License-Identifier: MIT */
/* symaddr-bench: one MPI program for symaddr's benchmarks, nccl-tests style.
 *
 *   mpirun -np N symaddr-bench put|get [-b MIN] [-e MAX] [-f FACTOR] [--iters N]
 *          [--warmup N] [--provider heap|ipc] [--check] [--json FILE]
 *
 * put/get: every rank copies to (from) its right neighbour through the
 * symmetric mapping; the reference is the same kernel copying inside the
 * rank's own allocation, measured in the same run. Times are the slowest
 * rank's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symaddr/symaddr.h"

typedef struct opts {
    const char *op;
    size_t min, max;
    double factor;
    int iters, warmup, check;
    symaddr_provider_kind_t provider;
    const char *json;
} opts_t;

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'K': case 'k': v *= 1024; break;
    case 'M': case 'm': v *= 1024 * 1024; break;
    case 'G': case 'g': v *= 1024 * 1024 * 1024; break;
    }
    return (size_t)v;
}

static int usage(int rank)
{
    if (rank == 0)
        fprintf(stderr, "usage: symaddr-bench put|get [-b MIN] [-e MAX] [-f FACTOR] [--iters N] "
                        "[--warmup N] [--provider heap|ipc] [--check] [--json FILE]\n");
    return 2;
}

static int parse(int argc, char **argv, opts_t *o, int rank)
{
    *o = (opts_t){.op = NULL, .min = 8, .max = 64 << 20, .factor = 2, .iters = 20, .warmup = 5,
                  .provider = SYMADDR_PROVIDER_IPC};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-b") && v) o->min = parse_size(argv[++i]);
        else if (!strcmp(a, "-e") && v) o->max = parse_size(argv[++i]);
        else if (!strcmp(a, "-f") && v) o->factor = atof(argv[++i]);
        else if (!strcmp(a, "--iters") && v) o->iters = atoi(argv[++i]);
        else if (!strcmp(a, "--warmup") && v) o->warmup = atoi(argv[++i]);
        else if (!strcmp(a, "--json") && v) o->json = argv[++i];
        else if (!strcmp(a, "--check")) o->check = 1;
        else if (!strcmp(a, "--provider") && v) {
            v = argv[++i];
            if (!strcmp(v, "heap")) o->provider = SYMADDR_PROVIDER_HEAP;
            else if (!strcmp(v, "ipc")) o->provider = SYMADDR_PROVIDER_IPC;
            else return usage(rank);
        } else if (!o->op && (!strcmp(a, "put") || !strcmp(a, "get"))) o->op = a;
        else return usage(rank);
    }
    if (!o->op || o->min == 0 || o->max < o->min || o->factor <= 1 || o->iters <= 0)
        return usage(rank);
    return 0;
}

/* Time iters calls; returns the slowest rank's seconds per call. */
static double time_loop(symaddr_context_t *ctx, const opts_t *o, int put, int remote, char *dst,
                        char *src, size_t bytes)
{
    int rank = symaddr_rank(ctx), size = symaddr_size(ctx);
    int target = remote ? (rank + 1) % size : rank;
    double t0 = 0, mine, worst;
    symaddr_status_t st = SYMADDR_OK;
    for (int i = -o->warmup; i < o->iters && st == SYMADDR_OK; i++) {
        if (i == 0) {
            symaddr_stream_sync(ctx, NULL);
            MPI_Barrier(symaddr_comm(ctx));
            t0 = MPI_Wtime();
        }
        st = put ? symaddr_put(ctx, dst, src, bytes, target, NULL)
                 : symaddr_get(ctx, dst, src, bytes, target, NULL);
    }
    symaddr_stream_sync(ctx, NULL);
    mine = (MPI_Wtime() - t0) / o->iters;
    if (st != SYMADDR_OK) {
        fprintf(stderr, "symaddr-bench: %s\n", symaddr_last_error(ctx));
        MPI_Abort(symaddr_comm(ctx), 1);
    }
    MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, symaddr_comm(ctx));
    return worst;
}

int main(int argc, char **argv)
{
    opts_t o;
    symaddr_context_t *ctx;
    symaddr_provider_t *prov;
    symaddr_map_t *m1, *m2;
    char *a, *b;
    symaddr_status_t st;

    MPI_Init(&argc, &argv);
    int wrank;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    if (parse(argc, argv, &o, wrank)) {
        MPI_Finalize();
        return 2;
    }
    if ((st = symaddr_init(MPI_COMM_WORLD, NULL, &ctx)) != SYMADDR_OK) {
        MPI_Finalize();
        return 1;
    }
    int rank = symaddr_rank(ctx), size = symaddr_size(ctx);
    int put = !strcmp(o.op, "put");
    st = symaddr_provider_get(ctx, o.provider, &prov);
    if (st == SYMADDR_OK)
        st = symaddr_allocate_symmetric(prov, o.max, (void **)&a, &m1);
    if (st == SYMADDR_OK)
        st = symaddr_allocate_symmetric(prov, o.max, (void **)&b, &m2);
    if (st != SYMADDR_OK) {
        if (rank == 0)
            fprintf(stderr, "symaddr-bench: %s\n", symaddr_last_error(ctx));
        symaddr_finalize(&ctx);
        MPI_Finalize();
        return 1;
    }
    unsigned char *host = malloc(o.max);
    for (size_t i = 0; i < o.max; i++)
        host[i] = (unsigned char)(rank * 31 + i * 7 + 1);
    symaddr_memcpy(ctx, a, host, o.max);

    FILE *json = NULL;
    if (rank == 0) {
        printf("# symaddr-bench %s: %d ranks, backend %s, provider %s\n", o.op, size,
               symaddr_backend_name(symaddr_backend(ctx)),
               o.provider == SYMADDR_PROVIDER_HEAP ? "heap" : "ipc");
        printf("# reference: the same kernel copying inside the rank's own allocation\n");
        printf("%12s %12s %10s %12s %10s %8s %7s\n", "size(B)", "time(us)", "GB/s", "local(us)",
               "GB/s", "ratio", "#wrong");
        if (o.json && !(json = fopen(o.json, "w")))
            fprintf(stderr, "symaddr-bench: cannot write %s\n", o.json);
        if (json)
            fprintf(json, "{\"op\": \"%s\", \"ranks\": %d, \"backend\": \"%s\", \"rows\": [", o.op,
                    size, symaddr_backend_name(symaddr_backend(ctx)));
    }
    int first = 1;
    for (double s = (double)o.min; s <= (double)o.max; s *= o.factor) {
        size_t bytes = (size_t)s;
        /* put: a (local) -> b on the right neighbour; get: a on the right neighbour -> b. */
        double t_remote = time_loop(ctx, &o, put, 1, b, a, bytes);
        long wrong = 0, all_wrong = 0;
        if (o.check) {
            MPI_Barrier(symaddr_comm(ctx));
            unsigned char *got = malloc(bytes);
            symaddr_memcpy(ctx, got, b, bytes);
            int from = put ? (rank + size - 1) % size : (rank + 1) % size;
            for (size_t i = 0; i < bytes; i++)
                wrong += got[i] != (unsigned char)(from * 31 + i * 7 + 1);
            free(got);
            MPI_Allreduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, symaddr_comm(ctx));
            MPI_Barrier(symaddr_comm(ctx));
        }
        double t_local = time_loop(ctx, &o, put, 0, b, a, bytes);
        if (rank == 0) {
            char wrong_s[24] = "-";
            if (o.check)
                snprintf(wrong_s, sizeof(wrong_s), "%ld", all_wrong);
            printf("%12zu %12.2f %10.2f %12.2f %10.2f %8.3f %7s\n", bytes, t_remote * 1e6,
                   bytes / t_remote / 1e9, t_local * 1e6, bytes / t_local / 1e9,
                   t_local / t_remote, wrong_s);
            if (json)
                fprintf(json, "%s\n  {\"bytes\": %zu, \"time_us\": %.3f, \"ref_time_us\": %.3f, "
                              "\"wrong\": %ld}",
                        first ? "" : ",", bytes, t_remote * 1e6, t_local * 1e6, all_wrong);
            first = 0;
        }
        if (all_wrong)
            break;
    }
    if (json) {
        fprintf(json, "\n]}\n");
        fclose(json);
    }
    free(host);
    symaddr_free_symmetric(prov, a);
    symaddr_free_symmetric(prov, b);
    symaddr_finalize(&ctx);
    MPI_Finalize();
    return 0;
}
