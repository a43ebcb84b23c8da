/* SPDX-License-Identifier: MIT */
/* symaddr-bench: one MPI program for symaddr's benchmarks, nccl-tests style.
 *
 *   mpirun -np N symaddr-bench put|get|translate|latency [-b MIN] [-e MAX] [-f FACTOR]
 *          [--iters N] [--warmup N] [--provider heap|ipc] [--check] [--json FILE]
 *
 * put/get: every rank copies to (from) its right neighbour through the
 *   symmetric mapping; reference: the same kernel copying inside the rank's own
 *   allocation, in the same run.
 * translate: a copy kernel that translates every access against the same kernel
 *   given the raw peer pointer; the ratio is the cost of translation.
 * latency: ranks 0 and 1 ping-pong an 8-byte put plus a signal inside one
 *   kernel; the time is one way.
 * Times are the slowest rank's. The kernels are built for one backend (the GPU
 * one when configured; symaddr-bench-cpu is always the cpu build). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "symaddr/device.h"
#include "symaddr/symaddr.h"

#if defined(SYMADDR_KERNELS_CPU)
#define BENCH_BACKEND SYMADDR_BACKEND_CPU
#elif defined(SYMADDR_USE_CUDA)
#define BENCH_BACKEND SYMADDR_BACKEND_CUDA
#else
#define BENCH_BACKEND SYMADDR_BACKEND_HIP
#endif

typedef struct v16 {
    uint64_t a, b;
} v16_t;

/* Translation on every access, as the least careful user would write it. */
__global__ void copy_translated(v16_t *dst, const v16_t *src, size_t n, int target,
                                const uint64_t *peer_bases, int me)
{
    for (size_t i = symaddr_grid_thread(); i < n; i += symaddr_grid_threads())
        *(v16_t *)symaddr_translate(dst + i, target, peer_bases, me) = src[i];
}

__global__ void copy_raw(v16_t *remote_dst, const v16_t *src, size_t n)
{
    for (size_t i = symaddr_grid_thread(); i < n; i += symaddr_grid_threads())
        remote_dst[i] = src[i];
}

__global__ void pingpong(uint64_t *buf, uint64_t *sig, int peer, int iters, int initiator,
                         const uint64_t *pb_buf, const uint64_t *pb_sig, int me, int *status)
{
    int st = SYMADDR_OK;
    for (int i = 1; i <= iters && st == SYMADDR_OK; i++) {
        if (!initiator)
            st = symaddr_signal_wait_until(sig, (uint64_t)i, 10ull * 1000000000ull);
        symaddr_store_u64(buf, (uint64_t)i, peer, pb_buf, me);
        symaddr_signal_set(sig, (uint64_t)i, peer, pb_sig, me);
        if (initiator)
            st = symaddr_signal_wait_until(sig, (uint64_t)i, 10ull * 1000000000ull);
    }
    *status = st;
}

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
        fprintf(stderr, "usage: symaddr-bench put|get|translate|latency [-b MIN] [-e MAX] [-f FACTOR] [--iters N] "
                        "[--warmup N] [--provider heap|ipc] [--check] [--json FILE]\n");
    return 2;
}

static int parse(int argc, char **argv, opts_t *o, int rank)
{
    memset(o, 0, sizeof(*o));
    o->min = 8;
    o->max = 64 << 20;
    o->factor = 2;
    o->iters = 20;
    o->warmup = 5;
    o->provider = SYMADDR_PROVIDER_IPC;
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
        } else if (!o->op && (!strcmp(a, "put") || !strcmp(a, "get") || !strcmp(a, "translate") ||
                              !strcmp(a, "latency")))
            o->op = a;
        else return usage(rank);
    }
    if (!o->op || o->min == 0 || o->max < o->min || o->factor <= 1 || o->iters <= 0)
        return usage(rank);
    return 0;
}

enum { MODE_PUT, MODE_GET, MODE_TRANSLATED, MODE_RAW };

static unsigned blocks_for(size_t n)
{
    size_t b = (n + 255) / 256;
    return b == 0 ? 1u : b > 1024 ? 1024u : (unsigned)b;
}

/* Time iters calls; returns the slowest rank's seconds per call. */
static double time_loop(symaddr_context_t *ctx, const opts_t *o, int mode, int remote, char *dst,
                        char *src, size_t bytes, const symaddr_map_t *dst_map)
{
    int rank = symaddr_rank(ctx), size = symaddr_size(ctx);
    int target = remote ? (rank + 1) % size : rank;
    double t0 = 0, mine, worst;
    symaddr_status_t st = SYMADDR_OK;
    void *raw = NULL;
    if (mode == MODE_RAW)
        st = symaddr_translate_host(dst_map, dst, target, &raw);
    for (int i = -o->warmup; i < o->iters && st == SYMADDR_OK; i++) {
        if (i == 0) {
            symaddr_stream_sync(ctx, NULL);
            MPI_Barrier(symaddr_comm(ctx));
            t0 = MPI_Wtime();
        }
        size_t n = bytes / sizeof(v16_t);
        switch (mode) {
        case MODE_PUT: st = symaddr_put(ctx, dst, src, bytes, target, NULL); break;
        case MODE_GET: st = symaddr_get(ctx, dst, src, bytes, target, NULL); break;
        case MODE_TRANSLATED:
            st = SYMADDR_LAUNCH(copy_translated, blocks_for(n), 256, NULL, (v16_t *)dst,
                                (const v16_t *)src, n, target, dst_map->peer_bases, rank);
            break;
        default:
            st = SYMADDR_LAUNCH(copy_raw, blocks_for(n), 256, NULL, (v16_t *)raw,
                                (const v16_t *)src, n);
        }
    }
    symaddr_stream_sync(ctx, NULL);
    mine = (MPI_Wtime() - t0) / o->iters;
    if (st != SYMADDR_OK) {
        fprintf(stderr, "symaddr-bench: %s (%s)\n", symaddr_strerror(st), symaddr_last_error(ctx));
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
    int mode = !strcmp(o.op, "put") ? MODE_PUT : !strcmp(o.op, "get") ? MODE_GET : -1;
    int latency = !strcmp(o.op, "latency");
    if (mode < 0 && symaddr_backend(ctx) != BENCH_BACKEND) {
        if (rank == 0)
            fprintf(stderr, "symaddr-bench: '%s' runs its own kernels, built for the %s backend, "
                            "but the context runs on %s; run %s with SYMADDR_BACKEND=%s\n",
                    o.op, symaddr_backend_name(BENCH_BACKEND),
                    symaddr_backend_name(symaddr_backend(ctx)),
                    BENCH_BACKEND == SYMADDR_BACKEND_CPU ? "symaddr-bench-cpu" : "symaddr-bench",
                    symaddr_backend_name(BENCH_BACKEND));
        symaddr_finalize(&ctx);
        MPI_Finalize();
        return 2;
    }
    if (latency && size < 2) {
        if (rank == 0)
            fprintf(stderr, "symaddr-bench: latency needs at least 2 ranks\n");
        symaddr_finalize(&ctx);
        MPI_Finalize();
        return 2;
    }
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
    unsigned char *host = (unsigned char *)malloc(o.max);
    for (size_t i = 0; i < o.max; i++)
        host[i] = (unsigned char)(rank * 31 + i * 7 + 1);
    symaddr_memcpy(ctx, a, host, o.max);

    FILE *json = NULL;
    if (rank == 0) {
        printf("# symaddr-bench %s: %d ranks, backend %s, provider %s\n", o.op, size,
               symaddr_backend_name(symaddr_backend(ctx)),
               o.provider == SYMADDR_PROVIDER_HEAP ? "heap" : "ipc");
        if (o.json && !(json = fopen(o.json, "w")))
            fprintf(stderr, "symaddr-bench: cannot write %s\n", o.json);
        if (json)
            fprintf(json, "{\"op\": \"%s\", \"ranks\": %d, \"backend\": \"%s\", \"rows\": [", o.op,
                    size, symaddr_backend_name(symaddr_backend(ctx)));
    }
    if (latency) {
        /* a holds the 8-byte payloads, b the signal: both start at zero. */
        const uint64_t zero[2] = {0, 0};
        int *status = NULL, dev_st = SYMADDR_OK;
        symaddr_memcpy(ctx, a, zero, sizeof(zero));
        symaddr_memcpy(ctx, b, zero, sizeof(zero));
        symaddr_mem_alloc(ctx, sizeof(int), (void **)&status);
        symaddr_stream_sync(ctx, NULL);
        MPI_Barrier(symaddr_comm(ctx));
        double t0 = MPI_Wtime();
        if (rank < 2)
            st = SYMADDR_LAUNCH(pingpong, 1, 1, NULL, (uint64_t *)a, (uint64_t *)b, 1 - rank,
                                o.iters, rank == 0, m1->peer_bases, m2->peer_bases, rank, status);
        symaddr_stream_sync(ctx, NULL);
        double t = (MPI_Wtime() - t0) / o.iters / 2, worst;
        if (rank < 2)
            symaddr_memcpy(ctx, &dev_st, status, sizeof(dev_st));
        MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, symaddr_comm(ctx));
        int bad = st != SYMADDR_OK || dev_st != SYMADDR_OK, all_bad;
        MPI_Allreduce(&bad, &all_bad, 1, MPI_INT, MPI_MAX, symaddr_comm(ctx));
        if (rank == 0) {
            printf("# ranks 0 and 1: 8-byte put + signal, %d round trips in one kernel\n", o.iters);
            printf("%12s %14s %8s\n", "size(B)", "one-way(us)", "status");
            printf("%12d %14.3f %8s\n", 8, worst * 1e6, all_bad ? "TIMEOUT" : "ok");
            if (json)
                fprintf(json, "\n  {\"bytes\": 8, \"time_us\": %.3f, \"wrong\": %d}", worst * 1e6,
                        all_bad);
        }
        symaddr_mem_free(ctx, status);
    } else {
        if (rank == 0) {
            if (mode < 0)
                printf("# reference: the same copy kernel given the raw peer pointer\n");
            else
                printf("# reference: the same kernel copying inside the rank's own allocation\n");
            printf("%12s %12s %10s %12s %10s %8s %7s\n", "size(B)", "time(us)", "GB/s",
                   mode < 0 ? "raw(us)" : "local(us)", "GB/s", "ratio", "#wrong");
        }
        int first = 1;
        for (double s = (double)o.min; s <= (double)o.max; s *= o.factor) {
            size_t bytes = mode < 0 ? (size_t)s / 16 * 16 : (size_t)s;
            if (bytes == 0)
                continue;
            /* put: a (local) -> b on the right neighbour; get: a on the right neighbour -> b. */
            double t_sym = time_loop(ctx, &o, mode < 0 ? MODE_TRANSLATED : mode, 1,
                                     mode == MODE_GET ? b : b, a, bytes, m2);
            long wrong = 0, all_wrong = 0;
            if (o.check) {
                MPI_Barrier(symaddr_comm(ctx));
                unsigned char *got = (unsigned char *)malloc(bytes);
                symaddr_memcpy(ctx, got, b, bytes);
                int from = mode == MODE_GET ? (rank + 1) % size : (rank + size - 1) % size;
                for (size_t i = 0; i < bytes; i++)
                    wrong += got[i] != (unsigned char)(from * 31 + i * 7 + 1);
                free(got);
                MPI_Allreduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, symaddr_comm(ctx));
                MPI_Barrier(symaddr_comm(ctx));
            }
            double t_ref = mode < 0 ? time_loop(ctx, &o, MODE_RAW, 1, b, a, bytes, m2)
                                    : time_loop(ctx, &o, mode, 0, b, a, bytes, m2);
            if (rank == 0) {
                char wrong_s[24] = "-";
                if (o.check)
                    snprintf(wrong_s, sizeof(wrong_s), "%ld", all_wrong);
                /* ratio > 1 means symaddr's path is slower than the reference. */
                printf("%12zu %12.2f %10.2f %12.2f %10.2f %8.3f %7s\n", bytes, t_sym * 1e6,
                       bytes / t_sym / 1e9, t_ref * 1e6, bytes / t_ref / 1e9, t_sym / t_ref,
                       wrong_s);
                if (json)
                    fprintf(json, "%s\n  {\"bytes\": %zu, \"time_us\": %.3f, \"ref_time_us\": %.3f, "
                                  "\"wrong\": %ld}",
                            first ? "" : ",", bytes, t_sym * 1e6, t_ref * 1e6, all_wrong);
                first = 0;
            }
            if (all_wrong)
                break;
        }
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
