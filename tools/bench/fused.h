/* SPDX-License-Identifier: MIT */
/* symaddr-bench fused_rmsnorm: the fused allreduce + residual add + RMSNorm of
 * examples/allreduce_rmsnorm.h, bf16 [tokens, HIDDEN], against (b) symaddr_allreduce followed by
 * the same RMSNorm as a kernel of its own and, with --compare nccl, (c) NCCL's allreduce followed
 * by that kernel; on the same buffers and stream. The two parts of (b) are timed alone too, so
 * that what fusing saves can be read off the table. */
#ifndef SYMADDR_BENCH_FUSED_H
#define SYMADDR_BENCH_FUSED_H

#include "allreduce_rmsnorm.h"

static int run_fused(symaddr_context_t *ctx, const opts_t *o)
{
    static const int tokens[] = {1, 2, 4, 6, 8, 16, 32, 64, 128};
    const int max_rows = 128;
    int rank = symaddr_rank(ctx), n = symaddr_size(ctx);
    int with_nccl = o->compare && !strcmp(o->compare, "nccl");
    symaddr_team_t team;
    symaddr_provider_t *prov;
    symaddr_map_t *xm, *sm, *rm, *ym;
    uint16_t *x = NULL, *sum = NULL, *res = NULL, *w = NULL, *y = NULL;
    void *stream = NULL;
    if (!kernels_match(ctx, o) || !reference_available(ctx, o))
        return 2;
    if (o->compare && !with_nccl) {
        if (rank == 0)
            fprintf(stderr, "symaddr-bench: fused_rmsnorm compares with nccl only\n");
        return 2;
    }
    size_t bytes = (size_t)max_rows * HIDDEN * 2;
    if (symaddr_team_get(ctx, &team) != SYMADDR_OK ||
        symaddr_provider_get(ctx, o->provider, &prov) != SYMADDR_OK ||
        symaddr_symmetric_alloc(prov, bytes, (void **)&x, &xm) != SYMADDR_OK ||
        symaddr_symmetric_alloc(prov, bytes, (void **)&sum, &sm) != SYMADDR_OK ||
        symaddr_symmetric_alloc(prov, bytes, (void **)&res, &rm) != SYMADDR_OK ||
        symaddr_symmetric_alloc(prov, bytes, (void **)&y, &ym) != SYMADDR_OK ||
        symaddr_mem_alloc(ctx, HIDDEN * 2, (void **)&w) != SYMADDR_OK) {
        if (rank == 0)
            fprintf(stderr, "symaddr-bench: %s\n", symaddr_last_error(ctx));
        return 1;
    }
    if (team.node_size != n) {
        if (rank == 0)
            fprintf(stderr,
                    "symaddr-bench: fused_rmsnorm reduces over one node; the context "
                    "spans %d ranks, the node %d\n",
                    n, team.node_size);
        return 2;
    }
    /* Small values of every rank and a weight near 1: the times do not depend on them. */
    uint16_t *h = (uint16_t *)malloc(bytes);
    for (size_t i = 0; i < bytes / 2; i++)
        h[i] = to_bf((float)((int)(i % 13) - 6) / 8.0f * (float)(rank + 1));
    symaddr_memcpy(ctx, x, h, bytes);
    symaddr_memcpy(ctx, res, h, bytes);
    symaddr_memcpy(ctx, w, h, HIDDEN * 2);
    free(h);
    stream = graph_stream_create(o);
    json_out_t json = {};
    if (rank == 0) {
        char rounds_s[64];
        printf("# symaddr-bench fused_rmsnorm: %d ranks, backend %s, bf16 [tokens, %d]%s; "
               "fused: one kernel; unfused: symaddr_allreduce + RMSNorm kernel%s%s\n",
               n, symaddr_backend_name(symaddr_backend(ctx)), HIDDEN, o->graph ? ", graph" : "",
               with_nccl ? "; nccl: ncclAllReduce + the same RMSNorm kernel" : "",
               rounds_note(o, rounds_s, sizeof(rounds_s)));
        printf("# fused: one Lamport call up to %d tokens, a two-shot above\n",
               fused_rows_per_call(&team));
        printf("%7s %9s %10s %12s %7s %13s %8s", "tokens", "bytes", "fused(us)", "unfused(us)",
               "ratio", "allreduce(us)", "norm(us)");
        if (with_nccl)
            printf(" %9s %7s", "nccl(us)", "ratio");
        printf("\n");
        json_open(&json, o->json);
        json_str(&json, "op", o->op);
        json_num(&json, "ranks", n, 0);
        json_str(&json, "backend", symaddr_backend_name(symaddr_backend(ctx)));
        json_str(&json, "dtype", "bfloat16");
        json_num(&json, "hidden", HIDDEN, 0);
        json_num(&json, "graph", o->graph, 0);
        json_str(&json, "reference", with_nccl ? "nccl + rmsnorm" : "symaddr_allreduce + rmsnorm");
    }
    int rc = 0;
    for (size_t k = 0; k < sizeof(tokens) / sizeof(tokens[0]) && rc == 0; k++) {
        int rows = tokens[k];
        size_t count = (size_t)rows * HIDDEN;
        /* fused, unfused, allreduce, norm, nccl: the slowest rank's, each round in turn */
        double worst_r[5][BENCH_ROUNDS_MAX] = {};
        symaddr_status_t st = SYMADDR_OK;
        for (int r = 0; r < o->rounds && st == SYMADDR_OK; r++) {
            double t[5] = {0, 0, 0, 0, 0};
            st = time_calls(
                ctx, o, stream,
                [&] {
                    return fused_launch(&team, x, xm->peer_bases, res, rm->peer_bases, w, y,
                                        ym->peer_bases, rows, stream)
                               ? SYMADDR_OK
                               : SYMADDR_ERR_BACKEND;
                },
                &t[0]);
            if (st == SYMADDR_OK)
                st = time_calls(
                    ctx, o, stream,
                    [&] {
                        symaddr_status_t s = symaddr_allreduce(ctx, x, sum, count, SYMADDR_BFLOAT16,
                                                               SYMADDR_SUM, stream);
                        return s == SYMADDR_OK && !rmsnorm_launch(sum, res, w, y, rows, stream)
                                   ? SYMADDR_ERR_BACKEND
                                   : s;
                    },
                    &t[1]);
            if (st == SYMADDR_OK)
                st = time_calls(
                    ctx, o, stream,
                    [&] {
                        return symaddr_allreduce(ctx, x, sum, count, SYMADDR_BFLOAT16, SYMADDR_SUM,
                                                 stream);
                    },
                    &t[2]);
            if (st == SYMADDR_OK)
                st = time_calls(
                    ctx, o, stream,
                    [&] {
                        return rmsnorm_launch(sum, res, w, y, rows, stream) ? SYMADDR_OK
                                                                            : SYMADDR_ERR_BACKEND;
                    },
                    &t[3]);
#if defined(SYMADDR_BENCH_NCCL)
            if (st == SYMADDR_OK && with_nccl)
                st = time_calls(
                    ctx, o, stream,
                    [&] {
                        ncclResult_t r = nccl.all_reduce(x, sum, count, ncclBfloat16, ncclSum,
                                                         nccl.comm, (cudaStream_t)stream);
                        int launched = rmsnorm_launch(sum, res, w, y, rows, stream);
                        return r == ncclSuccess && launched ? SYMADDR_OK : SYMADDR_ERR_BACKEND;
                    },
                    &t[4]);
#endif
            double worst[5];
            MPI_Allreduce(t, worst, 5, MPI_DOUBLE, MPI_MAX, symaddr_comm(ctx));
            for (int j = 0; j < 5; j++)
                worst_r[j][r] = worst[j];
        }
        if (st != SYMADDR_OK) {
            if (rank == 0)
                fprintf(stderr, "symaddr-bench: fused_rmsnorm at %d tokens: %s: %s\n", rows,
                        symaddr_strerror(st),
                        *symaddr_last_error(ctx) ? symaddr_last_error(ctx)
                                                 : "a kernel of the example was refused at launch");
            rc = 1;
            break;
        }
        double worst[5];
        for (int j = 0; j < 5; j++)
            worst[j] = median_of(worst_r[j], o->rounds);
        if (rank == 0) {
            printf("%7d %9zu %10.2f %12.2f %7.3f %13.2f %8.2f", rows, count * 2, worst[0] * 1e6,
                   worst[1] * 1e6, worst[0] / worst[1], worst[2] * 1e6, worst[3] * 1e6);
            if (with_nccl)
                printf(" %9.2f %7.3f", worst[4] * 1e6, worst[0] / worst[4]);
            printf("\n");
            json_row(&json);
            json_num(&json, "tokens", rows, 0);
            json_num(&json, "bytes", (double)(count * 2), 0);
            json_num(&json, "time_us", worst[0] * 1e6, 3);
            json_num(&json, "unfused_us", worst[1] * 1e6, 3);
            json_num(&json, "allreduce_us", worst[2] * 1e6, 3);
            json_num(&json, "norm_us", worst[3] * 1e6, 3);
            json_num(&json, "ref_time_us", worst[with_nccl ? 4 : 1] * 1e6, 3);
            json_row_end(&json);
        }
    }
    if (rank == 0)
        json_close(&json);
    graph_stream_destroy(stream);
    symaddr_symmetric_free(prov, res);
    symaddr_symmetric_free(prov, y);
    symaddr_mem_free(ctx, w);
    symaddr_symmetric_free(prov, x);
    symaddr_symmetric_free(prov, sum);
    return rc;
}

#endif
