/* SPDX-License-Identifier: MIT */
/* symaddr-bench's collectives: one row each (shape, bus bandwidth, call, MPI and NCCL
 * references) and the one driver that sizes, checks and times them. */
#ifndef SYMADDR_BENCH_COLL_H
#define SYMADDR_BENCH_COLL_H

/* One row per collective: how the bench sizes it, calls it, and calls the references. */
typedef struct bench_coll {
    const char *name;
    bool send_all, recv_all; /* the buffer holds a block of count per rank */
    bool reduces;            /* takes --op */
    double busbw_num;        /* bus bandwidth = algbw * busbw_num * (n - 1) / n, or algbw when 0 */
    symaddr_status_t (*run)(symaddr_context_t *ctx, const opts_t *o, void *send, void *recv,
                            size_t count, void *stream);
    /* MPI's own collective on host buffers; 0 when MPI has no such reduction (16-bit floats) */
    int (*mpi)(const opts_t *o, MPI_Comm comm, const void *send, void *recv, size_t count);
} bench_coll_t;

static MPI_Datatype mpi_dtype(symaddr_dtype_t dt)
{
    static const MPI_Datatype t[] = {MPI_INT32_T,  MPI_UINT32_T, MPI_INT64_T,
                                     MPI_UINT64_T, MPI_FLOAT,    MPI_DOUBLE};
    return dt < SYMADDR_FLOAT16 ? t[dt] : MPI_DATATYPE_NULL;
}

static const MPI_Op mpi_ops[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};

static symaddr_status_t run_allreduce(symaddr_context_t *ctx, const opts_t *o, void *send,
                                      void *recv, size_t count, void *stream)
{
    return symaddr_allreduce(ctx, send, recv, count, o->dtype, o->redop, stream);
}

/* The MPI reference of a reduction over f16 or bf16, which MPI lacks: the same values widened to
 * f32, reduced by MPI in f32, and rounded back (round to nearest even). send_n and recv_n:
 * elements of each buffer. */
static int mpi_16bit(const bench_coll_t *c, const opts_t *o, MPI_Comm comm, const uint16_t *send,
                     uint16_t *recv, size_t count, size_t send_n, size_t recv_n)
{
    opts_t o32 = *o;
    o32.dtype = SYMADDR_FLOAT32;
    float *s32 = (float *)malloc(send_n * sizeof(float)), *r32 = (float *)malloc(recv_n * 4);
    for (size_t i = 0; i < send_n; i++)
        s32[i] = o->dtype == SYMADDR_BFLOAT16 ? bf16_to_f32(send[i]) : f16_to_f32(send[i]);
    int ok = c->mpi(&o32, comm, s32, r32, count);
    for (size_t i = 0; ok && i < recv_n; i++)
        recv[i] = o->dtype == SYMADDR_BFLOAT16 ? f32_to_bf16(r32[i]) : f32_to_f16(r32[i]);
    free(s32);
    free(r32);
    return ok;
}

/* Elements of a 16-bit reduction further apart than one step of the type (the reference adds
 * in another order, then rounds once). */
static long off_by_more_than_a_step(const uint16_t *a, const uint16_t *b, size_t n)
{
    long w = 0;
    for (size_t i = 0; i < n; i++) {
        int sa = a[i] >> 15, sb = b[i] >> 15, ma = a[i] & 0x7fff, mb = b[i] & 0x7fff;
        w += a[i] != b[i] && (sa != sb || (ma > mb ? ma - mb : mb - ma) > 1) &&
             !(ma == 0 && mb == 0); /* +0 and -0 */
    }
    return w;
}

static int mpi_allreduce(const opts_t *o, MPI_Comm comm, const void *send, void *recv, size_t count)
{
    MPI_Datatype t = mpi_dtype(o->dtype);
    return t != MPI_DATATYPE_NULL &&
           MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, (int)count, t, mpi_ops[o->redop],
                         comm) == MPI_SUCCESS;
}

static symaddr_status_t run_allgather(symaddr_context_t *ctx, const opts_t *o, void *send,
                                      void *recv, size_t count, void *stream)
{
    return symaddr_allgather(ctx, send, recv, count, o->dtype, stream);
}

static int mpi_allgather(const opts_t *o, MPI_Comm comm, const void *send, void *recv, size_t count)
{
    int b = (int)(count * symaddr_dtype_size(o->dtype));
    return MPI_Allgather(send, b, MPI_BYTE, recv, b, MPI_BYTE, comm) == MPI_SUCCESS;
}

static symaddr_status_t run_reduce_scatter(symaddr_context_t *ctx, const opts_t *o, void *send,
                                           void *recv, size_t count, void *stream)
{
    return symaddr_reduce_scatter(ctx, send, recv, count, o->dtype, o->redop, stream);
}

static int mpi_reduce_scatter(const opts_t *o, MPI_Comm comm, const void *send, void *recv,
                              size_t count)
{
    MPI_Datatype t = mpi_dtype(o->dtype);
    return t != MPI_DATATYPE_NULL &&
           MPI_Reduce_scatter_block(send, recv, (int)count, t, mpi_ops[o->redop], comm) ==
               MPI_SUCCESS;
}

static symaddr_status_t run_broadcast(symaddr_context_t *ctx, const opts_t *o, void *send,
                                      void *recv, size_t count, void *stream)
{
    return symaddr_broadcast(ctx, send, recv, count, o->dtype, 0, stream);
}

static int mpi_broadcast(const opts_t *o, MPI_Comm comm, const void *send, void *recv, size_t count)
{
    int rank;
    size_t b = count * symaddr_dtype_size(o->dtype);
    MPI_Comm_rank(comm, &rank);
    if (rank == 0 && send != recv)
        memcpy(recv, send, b);
    return MPI_Bcast(recv, (int)b, MPI_BYTE, 0, comm) == MPI_SUCCESS;
}

static symaddr_status_t run_alltoall(symaddr_context_t *ctx, const opts_t *o, void *send,
                                     void *recv, size_t count, void *stream)
{
    return symaddr_alltoall(ctx, send, recv, count, o->dtype, stream);
}

static int mpi_alltoall(const opts_t *o, MPI_Comm comm, const void *send, void *recv, size_t count)
{
    int b = (int)(count * symaddr_dtype_size(o->dtype));
    return MPI_Alltoall(send, b, MPI_BYTE, recv, b, MPI_BYTE, comm) == MPI_SUCCESS;
}

static const bench_coll_t bench_colls[] = {
    {"allreduce", false, false, true, 2, run_allreduce, mpi_allreduce},
    {"allgather", false, true, false, 1, run_allgather, mpi_allgather},
    {"reduce_scatter", true, false, true, 1, run_reduce_scatter, mpi_reduce_scatter},
    {"broadcast", false, false, false, 0, run_broadcast, mpi_broadcast},
    {"alltoall", true, true, false, 1, run_alltoall, mpi_alltoall},
};
#define NCOLLS (int)(sizeof(bench_colls) / sizeof(bench_colls[0]))

static const bench_coll_t *find_coll(const char *name)
{
    for (int i = 0; i < NCOLLS; i++)
        if (!strcmp(bench_colls[i].name, name))
            return &bench_colls[i];
    return NULL;
}

static double busbw_factor(const bench_coll_t *c, int n)
{
    return c->busbw_num ? c->busbw_num * (n - 1) / n : 1.0;
}

/* size S is the larger of the two buffers, as nccl-tests reports it. */
static void coll_shape(const bench_coll_t *c, size_t S, size_t esz, int n, size_t *count,
                       size_t *sb, size_t *rb)
{
    size_t per = c->send_all || c->recv_all ? S / esz / (size_t)n : S / esz;
    *count = per;
    *sb = c->send_all ? per * esz * (size_t)n : per * esz;
    *rb = c->recv_all ? per * esz * (size_t)n : per * esz;
}

#if defined(SYMADDR_BENCH_NCCL)
/* NCCL's collective of the row named c->name, on the same buffers and stream. */
static int nccl_coll(const opts_t *o, const bench_coll_t *c, const void *send, void *recv,
                     size_t count, void *stream)
{
    static const ncclDataType_t types[] = {ncclInt32,   ncclUint32,  ncclInt64,   ncclUint64,
                                           ncclFloat32, ncclFloat64, ncclFloat16, ncclBfloat16};
    static const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMin, ncclMax};
    ncclDataType_t t = types[o->dtype];
    cudaStream_t s = (cudaStream_t)stream;
    ncclResult_t r;
    if (!strcmp(c->name, "allreduce"))
        r = nccl.all_reduce(send, recv, count, t, ops[o->redop], nccl.comm, s);
    else if (!strcmp(c->name, "allgather"))
        r = nccl.all_gather(send, recv, count, t, nccl.comm, s);
    else if (!strcmp(c->name, "reduce_scatter"))
        r = nccl.reduce_scatter(send, recv, count, t, ops[o->redop], nccl.comm, s);
    else if (!strcmp(c->name, "broadcast"))
        r = nccl.broadcast(send, recv, count, t, 0, nccl.comm, s);
    else
        r = nccl.all_to_all(send, recv, count, t, nccl.comm, s);
    return r == ncclSuccess;
}
#endif

static int run_collective(symaddr_context_t *ctx, const opts_t *o)
{
    const bench_coll_t *c = find_coll(o->op);
    int rank = symaddr_rank(ctx), n = symaddr_size(ctx);
    size_t esz = symaddr_dtype_size(o->dtype);
    int cpu = symaddr_backend(ctx) == SYMADDR_BACKEND_CPU, with_mpi = o->compare != NULL;
    int with_nccl = with_mpi && !strcmp(o->compare, "nccl");
    symaddr_provider_t *prov;
    symaddr_map_t *m;
    char *send, *recv;
    void *stream = NULL;
    if (!reference_available(ctx, o))
        return 2;
    if (o->graph && cpu) {
        if (rank == 0)
            fprintf(stderr, "symaddr-bench: --graph needs a GPU backend\n");
        return 2;
    }
    size_t max = o->max < esz * (size_t)n ? esz * (size_t)n : o->max;
    if (symaddr_provider_get(ctx, o->provider, &prov) != SYMADDR_OK ||
        symaddr_symmetric_alloc(prov, max, (void **)&send, &m) != SYMADDR_OK ||
        symaddr_symmetric_alloc(prov, max, (void **)&recv, &m) != SYMADDR_OK) {
        if (rank == 0)
            fprintf(stderr, "symaddr-bench: %s\n", symaddr_last_error(ctx));
        return 1;
    }
    char *hs = (char *)malloc(max), *hr = (char *)malloc(max), *hm = (char *)malloc(max);
    /* Small integers: exact in every dtype and under every op. */
    for (size_t i = 0; i < max / esz; i++) {
        int v = o->redop == SYMADDR_PROD ? 1 + (int)((i + (size_t)rank) % 3 == 0)
                                         : (rank + 1) * (int)(i % 7 + 1);
        switch (o->dtype) {
        case SYMADDR_INT32: ((int32_t *)hs)[i] = v; break;
        case SYMADDR_UINT32: ((uint32_t *)hs)[i] = (uint32_t)v; break;
        case SYMADDR_INT64: ((int64_t *)hs)[i] = v; break;
        case SYMADDR_UINT64: ((uint64_t *)hs)[i] = (uint64_t)v; break;
        case SYMADDR_FLOAT32: ((float *)hs)[i] = (float)v; break;
        case SYMADDR_FLOAT64: ((double *)hs)[i] = v; break;
        default: { /* 16-bit floats: v < 64 is exact; bf16 and f16 bit patterns of v */
            float f = (float)v;
            uint32_t u;
            memcpy(&u, &f, 4);
            ((uint16_t *)hs)[i] =
                o->dtype == SYMADDR_BFLOAT16
                    ? (uint16_t)(u >> 16)
                    : (uint16_t)((((u >> 23) & 0xff) - 112) << 10 | ((u >> 13) & 0x3ff));
        }
        }
    }
    symaddr_memcpy(ctx, send, hs, max);
    stream = graph_stream_create(o);
    json_out_t json = {};
    if (rank == 0) {
        char rounds_s[64];
        printf("# symaddr-bench %s: %d ranks, backend %s, dtype %s, op %s, algorithm %s%s%s%s\n",
               o->op, n, symaddr_backend_name(symaddr_backend(ctx)), dtype_names[o->dtype],
               redop_names[o->redop], algo_names[o->algo], o->graph ? ", graph" : "",
               with_nccl  ? ", reference: NCCL on the same buffers and stream"
               : with_mpi ? (cpu ? ", reference: MPI on the same buffers"
                                 : ", reference: MPI, host-staged (MPI is not GPU-aware here)")
                          : "",
               rounds_note(o, rounds_s, sizeof(rounds_s)));
        if (o->check && c->reduces && esz == 2)
            printf("# --check: against MPI on the same values in f32, rounded back to %s; "
                   "wrong: more than one step of %s apart\n",
                   dtype_names[o->dtype], dtype_names[o->dtype]);
        printf("%12s %12s %8s %6s %10s %9s %9s %7s", "size(B)", "count", "type", "redop",
               "time(us)", "algbw", "busbw", "#wrong");
        if (with_mpi)
            printf(" %10s %9s %8s", with_nccl ? "nccl(us)" : "mpi(us)", "busbw", "speedup");
        printf("\n");
        json_open(&json, o->json);
        json_str(&json, "op", o->op);
        json_num(&json, "ranks", n, 0);
        json_str(&json, "backend", symaddr_backend_name(symaddr_backend(ctx)));
        json_str(&json, "dtype", dtype_names[o->dtype]);
        json_str(&json, "redop", redop_names[o->redop]);
        json_num(&json, "graph", o->graph, 0);
        json_str(&json, "algo", algo_names[o->algo]);
        json_str(&json, "reference", with_mpi ? o->compare : "");
    }
    double start = MPI_Wtime();
    long wrong_total = 0; /* over every size: a run that found any fails */
    for (double s = (double)o->min; s <= (double)max; s *= o->factor) {
        size_t count, sb, rb;
        coll_shape(c, (size_t)s, esz, n, &count, &sb, &rb);
        if (count == 0)
            continue;
        symaddr_status_t st = SYMADDR_OK;
        /* Correctness first: symaddr against MPI on the same input. */
        long wrong = -1;
        if (o->check) {
            st = c->run(ctx, o, send, recv, count, NULL);
            if (st == SYMADDR_OK)
                st = symaddr_stream_sync(ctx, NULL);
            symaddr_memcpy(ctx, hr, recv, rb);
            if (c->reduces && esz == 2) {
                int ok = mpi_16bit(c, o, symaddr_comm(ctx), (const uint16_t *)hs, (uint16_t *)hm,
                                   count, sb / 2, rb / 2);
                long w =
                    ok ? off_by_more_than_a_step((const uint16_t *)hr, (const uint16_t *)hm, rb / 2)
                       : 0;
                MPI_Allreduce(&w, &wrong, 1, MPI_LONG, MPI_SUM, symaddr_comm(ctx));
                if (!ok)
                    wrong = -1;
            } else if (c->mpi(o, symaddr_comm(ctx), hs, hm, count)) {
                long w = 0;
                for (size_t i = 0; i < rb; i += esz)
                    w += memcmp(hr + i, hm + i, esz) != 0;
                MPI_Allreduce(&w, &wrong, 1, MPI_LONG, MPI_SUM, symaddr_comm(ctx));
            }
            wrong_total += wrong > 0 ? wrong : 0;
        }
        /* rounds timings of each, in turn, so that a stall of the machine in one of them
         * shows as an outlier round, which the median leaves out, on both sides alike */
        double worst_r[BENCH_ROUNDS_MAX] = {0}, tm_r[BENCH_ROUNDS_MAX] = {0};
        int mpi_ok = 1;
        for (int r = 0; r < o->rounds; r++) {
            double t = 0, tm = 0;
            if (st == SYMADDR_OK)
                st = time_calls(
                    ctx, o, stream, [&] { return c->run(ctx, o, send, recv, count, stream); }, &t);
            if (st != SYMADDR_OK) {
                fprintf(stderr, "symaddr-bench: rank %d: %s (%s)\n", rank, symaddr_strerror(st),
                        symaddr_last_error(ctx));
                MPI_Abort(symaddr_comm(ctx), 1);
            }
            MPI_Allreduce(&t, &worst_r[r], 1, MPI_DOUBLE, MPI_MAX, symaddr_comm(ctx));
            if (with_nccl && mpi_ok) {
#if defined(SYMADDR_BENCH_NCCL)
                mpi_ok = time_calls(
                             ctx, o, stream,
                             [&] {
                                 return nccl_coll(o, c, send, recv, count, stream)
                                            ? SYMADDR_OK
                                            : SYMADDR_ERR_BACKEND;
                             },
                             &tm) == SYMADDR_OK;
#endif
                MPI_Allreduce(&tm, &tm_r[r], 1, MPI_DOUBLE, MPI_MAX, symaddr_comm(ctx));
            } else if (with_mpi && mpi_ok) {
                /* The same data through MPI: directly on the cpu backend's host memory, staged
                 * through the host on a GPU, which is what such a user has to do. */
                char *ms = cpu ? send : hs, *mr = cpu ? recv : hm;
                for (int i = -o->warmup; i < o->iters && mpi_ok; i++) {
                    if (i == 0) {
                        MPI_Barrier(symaddr_comm(ctx));
                        tm = MPI_Wtime();
                    }
                    if (!cpu)
                        symaddr_memcpy(ctx, hs, send, sb);
                    mpi_ok = c->mpi(o, symaddr_comm(ctx), ms, mr, count);
                    if (!cpu)
                        symaddr_memcpy(ctx, recv, hm, rb);
                }
                tm = (MPI_Wtime() - tm) / o->iters;
                MPI_Allreduce(&tm, &tm_r[r], 1, MPI_DOUBLE, MPI_MAX, symaddr_comm(ctx));
            }
        }
        double worst = median_of(worst_r, o->rounds), tm_worst = median_of(tm_r, o->rounds);
        if (rank == 0) {
            double algbw = (double)(size_t)s / worst / 1e9;
            char wrong_s[24] = "-";
            if (wrong >= 0)
                snprintf(wrong_s, sizeof(wrong_s), "%ld", wrong);
            else if (o->check)
                snprintf(wrong_s, sizeof(wrong_s), "n/a");
            printf("%12zu %12zu %8s %6s %10.2f %9.2f %9.2f %7s", (size_t)s, count,
                   dtype_names[o->dtype], c->reduces ? redop_names[o->redop] : "none", worst * 1e6,
                   algbw, algbw * busbw_factor(c, n), wrong_s);
            if (with_mpi && mpi_ok)
                printf(" %10.2f %9.2f %8.2f", tm_worst * 1e6,
                       (double)(size_t)s / tm_worst / 1e9 * busbw_factor(c, n), tm_worst / worst);
            else if (with_mpi)
                printf(" %10s %9s %8s", "n/a", "n/a", "n/a");
            printf("\n");
            fflush(stdout);
            json_row(&json);
            json_num(&json, "bytes", (double)(size_t)s, 0);
            json_num(&json, "count", (double)count, 0);
            json_num(&json, "time_us", worst * 1e6, 3);
            json_num(&json, "algbw", algbw, 4);
            json_num(&json, "busbw", algbw * busbw_factor(c, n), 4);
            json_num(&json, "wrong", (double)wrong, 0);
            if (with_mpi && mpi_ok) {
                json_num(&json, "ref_time_us", tm_worst * 1e6, 3);
                json_num(&json, "ref_busbw",
                         (double)(size_t)s / tm_worst / 1e9 * busbw_factor(c, n), 4);
            }
            json_row_end(&json);
            if (MPI_Wtime() - start > 3)
                fprintf(stderr, "symaddr-bench: %s %zu bytes done (%.0f s)\n", o->op, (size_t)s,
                        MPI_Wtime() - start);
        }
    }
    json_close(&json);
    graph_stream_destroy(stream);
    free(hs);
    free(hr);
    free(hm);
    symaddr_symmetric_free(prov, send);
    symaddr_symmetric_free(prov, recv);
#if defined(SYMADDR_BENCH_NCCL)
    if (with_nccl && nccl.comm)
        nccl.comm_destroy(nccl.comm);
#endif
    if (wrong_total && rank == 0)
        fprintf(stderr, "symaddr-bench: %s returned %ld wrong elements\n", o->op, wrong_total);
    return wrong_total ? 1 : 0;
}

#endif
