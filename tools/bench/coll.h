/* SPDX-License-Identifier: MIT */
/* symaddr-bench's collectives: one row each (shape, bus bandwidth, call, MPI and NCCL
 * references) and the one driver that sizes, checks and times them. */
#ifndef SYMADDR_BENCH_COLL_H
#define SYMADDR_BENCH_COLL_H

/* Where the in-place form puts send and recv (nccl-tests' convention, and symaddr's only
 * legal overlaps), from the collective's shape (symaddr_collective_flag_t). */
typedef enum {
    IN_PLACE_NONE,       /* none: alltoall */
    IN_PLACE_SAME,       /* send == recv */
    IN_PLACE_RECV_BLOCK, /* send is this rank's block of recv (allgather) */
    IN_PLACE_SEND_BLOCK, /* recv is this rank's block of send (reduce_scatter) */
} in_place_t;

typedef int (*mpi_ref_t)(const opts_t *o, MPI_Comm comm, const void *send, void *recv,
                         size_t count);

/* One row per collective of the library (symaddr_collective_info): its shape from there, its
 * MPI reference from mpi_refs below. */
typedef struct bench_coll {
    const char *name;
    int index;               /* symaddr_collective_run's */
    bool send_all, recv_all; /* the buffer holds a block of count per rank */
    bool reduces;            /* takes --op */
    bool rooted;             /* takes --root */
    bool root_only;          /* only the root's recv is the result (reduce, gather) */
    in_place_t in_place;
    double busbw_num; /* bus bandwidth = algbw * busbw_num * (n - 1) / n, or algbw when 0 */
    /* MPI's own collective on host buffers; 0 when MPI has no such reduction (16-bit floats);
     * NULL: none known here, so --check and --compare mpi are refused */
    mpi_ref_t mpi;
} bench_coll_t;

/* MPI's type and op for symaddr's (MPI_DATATYPE_NULL: MPI has none, the 16-bit floats):
 * switches, so that a dtype or op symaddr adds stops the build here (-Wswitch) instead of
 * reading past a table. */
static MPI_Datatype mpi_dtype(symaddr_dtype_t dt)
{
    switch (dt) {
    case SYMADDR_INT32: return MPI_INT32_T;
    case SYMADDR_UINT32: return MPI_UINT32_T;
    case SYMADDR_INT64: return MPI_INT64_T;
    case SYMADDR_UINT64: return MPI_UINT64_T;
    case SYMADDR_FLOAT32: return MPI_FLOAT;
    case SYMADDR_FLOAT64: return MPI_DOUBLE;
    case SYMADDR_FLOAT16:
    case SYMADDR_BFLOAT16:
    case SYMADDR_DTYPE_COUNT_: break;
    }
    return MPI_DATATYPE_NULL;
}

static MPI_Op mpi_op(symaddr_redop_t op)
{
    switch (op) {
    case SYMADDR_SUM: return MPI_SUM;
    case SYMADDR_PROD: return MPI_PROD;
    case SYMADDR_MIN: return MPI_MIN;
    case SYMADDR_MAX: return MPI_MAX;
    case SYMADDR_REDOP_COUNT_: break;
    }
    return MPI_OP_NULL;
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
        s32[i] = o->dtype == SYMADDR_BFLOAT16 ? symaddr_bf16_to_f32_(send[i])
                                              : symaddr_f16_to_f32_(send[i]);
    int ok = c->mpi(&o32, comm, s32, r32, count);
    for (size_t i = 0; ok && i < recv_n; i++)
        recv[i] = o->dtype == SYMADDR_BFLOAT16 ? symaddr_f32_to_bf16_(r32[i])
                                               : symaddr_f32_to_f16_(r32[i]);
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
           MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, (int)count, t, mpi_op(o->redop),
                         comm) == MPI_SUCCESS;
}

static int mpi_allgather(const opts_t *o, MPI_Comm comm, const void *send, void *recv, size_t count)
{
    int b = (int)(count * symaddr_dtype_size(o->dtype));
    return MPI_Allgather(send, b, MPI_BYTE, recv, b, MPI_BYTE, comm) == MPI_SUCCESS;
}

static int mpi_reduce_scatter(const opts_t *o, MPI_Comm comm, const void *send, void *recv,
                              size_t count)
{
    MPI_Datatype t = mpi_dtype(o->dtype);
    return t != MPI_DATATYPE_NULL &&
           MPI_Reduce_scatter_block(send, recv, (int)count, t, mpi_op(o->redop), comm) ==
               MPI_SUCCESS;
}

static int mpi_broadcast(const opts_t *o, MPI_Comm comm, const void *send, void *recv, size_t count)
{
    int rank;
    size_t b = count * symaddr_dtype_size(o->dtype);
    MPI_Comm_rank(comm, &rank);
    if (rank == o->root && send != recv)
        memcpy(recv, send, b);
    return MPI_Bcast(recv, (int)b, MPI_BYTE, o->root, comm) == MPI_SUCCESS;
}

static int mpi_alltoall(const opts_t *o, MPI_Comm comm, const void *send, void *recv, size_t count)
{
    int b = (int)(count * symaddr_dtype_size(o->dtype));
    return MPI_Alltoall(send, b, MPI_BYTE, recv, b, MPI_BYTE, comm) == MPI_SUCCESS;
}

static int mpi_reduce(const opts_t *o, MPI_Comm comm, const void *send, void *recv, size_t count)
{
    MPI_Datatype t = mpi_dtype(o->dtype);
    int rank;
    MPI_Comm_rank(comm, &rank);
    return t != MPI_DATATYPE_NULL &&
           MPI_Reduce(send == recv && rank == o->root ? MPI_IN_PLACE : send, recv, (int)count, t,
                      mpi_op(o->redop), o->root, comm) == MPI_SUCCESS;
}

static int mpi_gather(const opts_t *o, MPI_Comm comm, const void *send, void *recv, size_t count)
{
    int b = (int)(count * symaddr_dtype_size(o->dtype));
    return MPI_Gather(send, b, MPI_BYTE, recv, b, MPI_BYTE, o->root, comm) == MPI_SUCCESS;
}

static int mpi_scatter(const opts_t *o, MPI_Comm comm, const void *send, void *recv, size_t count)
{
    int b = (int)(count * symaddr_dtype_size(o->dtype));
    return MPI_Scatter(send, b, MPI_BYTE, recv, b, MPI_BYTE, o->root, comm) == MPI_SUCCESS;
}

/* MPI's collective for each of symaddr's, by the library's name for it. */
static const struct {
    const char *name;
    mpi_ref_t mpi;
} mpi_refs[] = {
    {"allreduce", mpi_allreduce},
    {"allgather", mpi_allgather},
    {"reduce_scatter", mpi_reduce_scatter},
    {"broadcast", mpi_broadcast},
    {"alltoall", mpi_alltoall},
    {"reduce", mpi_reduce},
    {"gather", mpi_gather},
    {"scatter", mpi_scatter},
};

/* The library's collectives as the bench's rows, made once. */
static int bench_colls_get(const bench_coll_t **rows_p)
{
    static bench_coll_t rows[64];
    static int n = -1;
    if (n < 0) {
        n = 0;
        for (int i = 0; i < symaddr_collective_count() && n < 64; i++, n++) {
            const symaddr_collective_info_t *info = symaddr_collective_info(i);
            bench_coll_t *c = &rows[n];
            unsigned f = info->flags;
            c->name = info->name;
            c->index = i;
            c->send_all = f & SYMADDR_COLLECTIVE_SEND_ALL;
            c->recv_all = f & SYMADDR_COLLECTIVE_RECV_ALL;
            c->reduces = f & SYMADDR_COLLECTIVE_REDUCES;
            c->rooted = f & SYMADDR_COLLECTIVE_ROOTED;
            c->root_only = f & SYMADDR_COLLECTIVE_ROOT_ONLY;
            c->in_place = c->send_all && c->recv_all ? IN_PLACE_NONE
                          : c->recv_all              ? IN_PLACE_RECV_BLOCK
                          : c->send_all              ? IN_PLACE_SEND_BLOCK
                                                     : IN_PLACE_SAME;
            /* nccl-tests': 2(n-1)/n for allreduce, (n-1)/n where a buffer holds every rank's
             * block, algbw for broadcast and reduce */
            c->busbw_num = c->send_all || c->recv_all ? 1 : c->reduces && !c->rooted ? 2 : 0;
            c->mpi = NULL;
            for (size_t k = 0; k < sizeof(mpi_refs) / sizeof(mpi_refs[0]); k++)
                if (!strcmp(mpi_refs[k].name, c->name))
                    c->mpi = mpi_refs[k].mpi;
        }
    }
    *rows_p = rows;
    return n;
}

static const bench_coll_t *find_coll(const char *name)
{
    const bench_coll_t *rows;
    int n = bench_colls_get(&rows);
    for (int i = 0; i < n; i++)
        if (!strcmp(rows[i].name, name))
            return &rows[i];
    return NULL;
}

static double busbw_factor(const bench_coll_t *c, int n)
{
    return c->busbw_num ? c->busbw_num * (n - 1) / n : 1.0;
}

/* symaddr's side of a row: the library's own entry for every collective. */
static symaddr_status_t coll_run(symaddr_context_t *ctx, const opts_t *o, const bench_coll_t *c,
                                 void *send, void *recv, size_t count, void *stream)
{
    return symaddr_collective_run(ctx, c->index, send, recv, count, o->dtype, o->redop, o->root,
                                  stream);
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
/* NCCL's type and op for symaddr's: switches, so that a dtype or op symaddr adds stops the
 * build here (-Wswitch) instead of reading past a table. */
static int nccl_type(symaddr_dtype_t dt, ncclDataType_t *t_p)
{
    switch (dt) {
    case SYMADDR_INT32: return *t_p = ncclInt32, 1;
    case SYMADDR_UINT32: return *t_p = ncclUint32, 1;
    case SYMADDR_INT64: return *t_p = ncclInt64, 1;
    case SYMADDR_UINT64: return *t_p = ncclUint64, 1;
    case SYMADDR_FLOAT32: return *t_p = ncclFloat32, 1;
    case SYMADDR_FLOAT64: return *t_p = ncclFloat64, 1;
    case SYMADDR_FLOAT16: return *t_p = ncclFloat16, 1;
    case SYMADDR_BFLOAT16: return *t_p = ncclBfloat16, 1;
    case SYMADDR_DTYPE_COUNT_: break;
    }
    return 0;
}

static int nccl_op(symaddr_redop_t op, ncclRedOp_t *op_p)
{
    switch (op) {
    case SYMADDR_SUM: return *op_p = ncclSum, 1;
    case SYMADDR_PROD: return *op_p = ncclProd, 1;
    case SYMADDR_MIN: return *op_p = ncclMin, 1;
    case SYMADDR_MAX: return *op_p = ncclMax, 1;
    case SYMADDR_REDOP_COUNT_: break;
    }
    return 0;
}

/* NCCL's collective of the row named c->name, on the same buffers and stream. */
static int nccl_coll(const opts_t *o, const bench_coll_t *c, const void *send, void *recv,
                     size_t count, void *stream)
{
    ncclDataType_t t;
    ncclRedOp_t op;
    if (!nccl_type(o->dtype, &t) || !nccl_op(o->redop, &op))
        return 0;
    cudaStream_t s = (cudaStream_t)stream;
    ncclResult_t r;
    if (!strcmp(c->name, "allreduce"))
        r = nccl.all_reduce(send, recv, count, t, op, nccl.comm, s);
    else if (!strcmp(c->name, "allgather"))
        r = nccl.all_gather(send, recv, count, t, nccl.comm, s);
    else if (!strcmp(c->name, "reduce_scatter"))
        r = nccl.reduce_scatter(send, recv, count, t, op, nccl.comm, s);
    else if (!strcmp(c->name, "broadcast"))
        r = nccl.broadcast(send, recv, count, t, o->root, nccl.comm, s);
    else if (!strcmp(c->name, "reduce"))
        r = nccl.reduce(send, recv, count, t, op, o->root, nccl.comm, s);
    else if (!strcmp(c->name, "alltoall"))
        r = nccl.all_to_all(send, recv, count, t, nccl.comm, s);
    else
        return 0; /* NCCL has no gather or scatter of its own */
    return r == ncclSuccess;
}
#endif

#if defined(SYMADDR_BENCH_NVSHMEM)
/* NVSHMEM's allreduce (sum) of the world team on stream: 1 on success. */
static int nvshmem_coll(const opts_t *o, const void *send, void *recv, size_t count, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    switch (o->dtype) {
    case SYMADDR_FLOAT32:
        return nvsh.sum_f32(NVSHMEM_TEAM_WORLD, (float *)recv, (const float *)send, count, s) == 0;
    case SYMADDR_FLOAT16:
        return nvsh.sum_f16(NVSHMEM_TEAM_WORLD, (half *)recv, (const half *)send, count, s) == 0;
    case SYMADDR_BFLOAT16:
        return nvsh.sum_bf16(NVSHMEM_TEAM_WORLD, (__nv_bfloat16 *)recv, (const __nv_bfloat16 *)send,
                             count, s) == 0;
    default: return 0;
    }
}
#endif

/* The buffers of one form: out of place, send and recv apart; in place, as the row says. */
static void coll_buffers(const bench_coll_t *c, int in_place, char *send, char *recv, size_t count,
                         size_t esz, int rank, char **s_p, char **r_p)
{
    size_t block = count * esz * (size_t)rank;
    *s_p = send;
    *r_p = recv;
    if (!in_place)
        return;
    switch (c->in_place) {
    case IN_PLACE_SAME: *s_p = recv; break;
    case IN_PLACE_RECV_BLOCK: *s_p = recv + block; break;
    case IN_PLACE_SEND_BLOCK: *r_p = send + block; break;
    case IN_PLACE_NONE: break;
    }
}

/* One form's result at one size: its median time (seconds, the slowest rank's), and the wrong
 * elements against MPI's result hm (-1: not checked). */
typedef struct {
    double time;
    long wrong;
} coll_result_t;

/* Correctness first (the input hs placed where the form reads it), then rounds timings of
 * symaddr and, out of place, of the reference in turn: a stall of the machine in one shows as an
 * outlier round, which the median leaves out, on both sides alike. */
static void coll_measure(symaddr_context_t *ctx, const opts_t *o, const bench_coll_t *c,
                         int in_place, char *send, char *recv, size_t count, size_t sb, size_t rb,
                         const char *hs, char *hr, const char *hm, int ref_ok, void *stream,
                         coll_result_t *res, coll_result_t *ref)
{
    int rank = symaddr_rank(ctx), cpu = symaddr_backend(ctx) == SYMADDR_BACKEND_CPU;
    int with_nccl = o->compare && !strcmp(o->compare, "nccl");
    size_t esz = symaddr_dtype_size(o->dtype);
    char *s, *r;
    coll_buffers(c, in_place, send, recv, count, esz, rank, &s, &r);
    symaddr_memcpy(ctx, s, hs, sb);
    symaddr_status_t st = SYMADDR_OK;
    res->wrong = -1;
    if (o->check) {
        st = coll_run(ctx, o, c, s, r, count, NULL);
        if (st == SYMADDR_OK)
            st = symaddr_stream_sync(ctx, NULL);
        symaddr_memcpy(ctx, hr, r, rb);
        long w = 0;
        if (c->root_only && rank != o->root)
            ; /* another rank's recv is not the result */
        else if (c->reduces && esz == 2)
            w = off_by_more_than_a_step((const uint16_t *)hr, (const uint16_t *)hm, rb / 2);
        else
            for (size_t i = 0; i < rb; i += esz)
                w += memcmp(hr + i, hm + i, esz) != 0;
        MPI_Allreduce(&w, &res->wrong, 1, MPI_LONG, MPI_SUM, symaddr_comm(ctx));
        if (!ref_ok)
            res->wrong = -1;
    }
    double t_r[BENCH_ROUNDS_MAX] = {0}, tm_r[BENCH_ROUNDS_MAX] = {0};
    int mpi_ok = ref && o->compare;
    for (int k = 0; k < o->rounds; k++) {
        double t = 0, tm = 0;
        if (st == SYMADDR_OK)
            st = time_calls(
                ctx, o, stream, [&] { return coll_run(ctx, o, c, s, r, count, stream); }, &t);
        if (st != SYMADDR_OK) {
            fprintf(stderr, "symaddr-bench: rank %d: %s (%s)\n", rank, symaddr_strerror(st),
                    symaddr_last_error(ctx));
            MPI_Abort(symaddr_comm(ctx), 1);
        }
        MPI_Allreduce(&t, &t_r[k], 1, MPI_DOUBLE, MPI_MAX, symaddr_comm(ctx));
        if (with_nvshmem(o) && mpi_ok) {
#if defined(SYMADDR_BENCH_NVSHMEM)
            mpi_ok = time_calls(
                         ctx, o, stream,
                         [&] {
                             return nvshmem_coll(o, s, r, count, stream) ? SYMADDR_OK
                                                                         : SYMADDR_ERR_BACKEND;
                         },
                         &tm) == SYMADDR_OK;
#endif
            MPI_Allreduce(&tm, &tm_r[k], 1, MPI_DOUBLE, MPI_MAX, symaddr_comm(ctx));
        } else if (with_nccl && mpi_ok) {
#if defined(SYMADDR_BENCH_NCCL)
            mpi_ok = time_calls(
                         ctx, o, stream,
                         [&] {
                             return nccl_coll(o, c, s, r, count, stream) ? SYMADDR_OK
                                                                         : SYMADDR_ERR_BACKEND;
                         },
                         &tm) == SYMADDR_OK;
#endif
            MPI_Allreduce(&tm, &tm_r[k], 1, MPI_DOUBLE, MPI_MAX, symaddr_comm(ctx));
        } else if (mpi_ok) {
            /* The same data through MPI: directly on the cpu backend's host memory, staged
             * through the host on a GPU, which is what such a user has to do. */
            char *hs_ = (char *)hs, *ms = cpu ? s : hs_, *mr = cpu ? r : hr;
            for (int i = -o->warmup; i < o->iters && mpi_ok; i++) {
                if (i == 0) {
                    MPI_Barrier(symaddr_comm(ctx));
                    tm = MPI_Wtime();
                }
                if (!cpu)
                    symaddr_memcpy(ctx, hs_, s, sb);
                mpi_ok = c->mpi(o, symaddr_comm(ctx), ms, mr, count);
                if (!cpu)
                    symaddr_memcpy(ctx, r, hr, rb);
            }
            tm = (MPI_Wtime() - tm) / o->iters;
            MPI_Allreduce(&tm, &tm_r[k], 1, MPI_DOUBLE, MPI_MAX, symaddr_comm(ctx));
        }
    }
    res->time = median_of(t_r, o->rounds);
    if (ref)
        ref->time = mpi_ok ? median_of(tm_r, o->rounds) : -1;
}

/* nccl-tests' column layout: size, count, type, redop, root, then time, algbw, busbw and #wrong
 * of each form, then the reference's time, busbw and speed-up (out of place). */
#define COLL_HEAD "%13s %13s %9s %7s %6s"
#define COLL_FORM "%10s %8s %8s %7s"
#define COLL_REF "%12s %10s %8s"

static void coll_form_cells(const coll_result_t *r, size_t bytes, double factor, int have,
                            int check)
{
    if (!have) {
        printf(" " COLL_FORM, "n/a", "n/a", "n/a", "n/a");
        return;
    }
    char wrong[24] = "N/A";
    if (r->wrong >= 0)
        snprintf(wrong, sizeof(wrong), "%ld", r->wrong);
    else if (check)
        snprintf(wrong, sizeof(wrong), "n/a");
    double algbw = (double)bytes / r->time / 1e9;
    printf(" %10.2f %8.2f %8.2f %7s", r->time * 1e6, algbw, algbw * factor, wrong);
}

static int run_collective(symaddr_context_t *ctx, const opts_t *o)
{
    const bench_coll_t *c = find_coll(o->op);
    int rank = symaddr_rank(ctx), n = symaddr_size(ctx);
    size_t esz = symaddr_dtype_size(o->dtype);
    int cpu = symaddr_backend(ctx) == SYMADDR_BACKEND_CPU, with_mpi = o->compare != NULL;
    int with_nccl = with_mpi && !strcmp(o->compare, "nccl");
    int has_in_place = c->in_place != IN_PLACE_NONE;
    symaddr_provider_t *prov;
    char *send, *recv;
    void *stream = NULL;
    if (c->rooted && o->root >= n) {
        if (rank == 0)
            fprintf(stderr, "symaddr-bench: invalid root %d for -r: a rank from 0 to %d\n", o->root,
                    n - 1);
        return 2;
    }
    if (with_nvshmem(o) && (strcmp(c->name, "allreduce") || o->redop != SYMADDR_SUM ||
                            (o->dtype != SYMADDR_FLOAT32 && o->dtype != SYMADDR_FLOAT16 &&
                             o->dtype != SYMADDR_BFLOAT16))) {
        if (rank == 0)
            fprintf(stderr,
                    "symaddr-bench: --compare nvshmem times allreduce (sum of float, "
                    "half or bfloat16), put and get: run %s against nccl or mpi\n",
                    c->name);
        return 2;
    }
    if (!reference_available(ctx, o))
        return 2;
    if (!c->mpi && (o->check || (with_mpi && !with_nccl && !with_nvshmem(o)))) {
        if (rank == 0)
            fprintf(stderr,
                    "symaddr-bench: %s has no MPI reference here (tools/bench/coll.h, "
                    "mpi_refs): run it without --check and --compare mpi\n",
                    c->name);
        return 2;
    }
    if (o->graph && cpu) {
        if (rank == 0)
            fprintf(stderr, "symaddr-bench: -G (graphs) needs a GPU backend\n");
        return 2;
    }
    size_t max = o->max < esz * (size_t)n ? esz * (size_t)n : o->max;
    symaddr_map_t *maps[2] = {NULL, NULL};
    send = recv = NULL;
    symaddr_status_t ast = symaddr_provider_get(ctx, o->provider, &prov);
    if (ast == SYMADDR_OK)
        ast = bench_buffer(ctx, with_nvshmem(o), prov, max, &send, &maps[0]);
    if (ast == SYMADDR_OK)
        ast = bench_buffer(ctx, with_nvshmem(o), prov, max, &recv, &maps[1]);
    if (ast != SYMADDR_OK) {
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
    stream = graph_stream_create(o);
    json_out_t json = {};
    FILE *csv = NULL;
    const char *dtype = symaddr_dtype_name(o->dtype), *redop = symaddr_redop_name(o->redop);
    const char *algo = symaddr_allreduce_algo_name(o->algo);
    const char *ref = with_mpi ? o->compare : NULL;
    if (rank == 0) {
        char rounds_s[64], graph_s[48] = "";
        if (o->graph)
            snprintf(graph_s, sizeof(graph_s), ", a graph replayed %d times", o->graph);
        printf("# symaddr-bench %s: %d ranks, backend %s, dtype %s, op %s, algorithm %s, root "
               "%d, %d iterations after %d warm-up%s%s%s%s\n",
               o->op, n, symaddr_backend_name(symaddr_backend(ctx)), dtype, redop, algo,
               c->rooted ? o->root : -1, o->iters, o->warmup, graph_s,
               o->blocking ? ", a sync after every call" : "",
               with_nvshmem(o) ? ", reference: NVSHMEM on the same buffers (NVSHMEM's, "
                                 "registered with symaddr) and stream"
               : with_nccl     ? ", reference: NCCL on the same buffers and stream"
               : with_mpi      ? (cpu ? ", reference: MPI on the same buffers"
                                      : ", reference: MPI, host-staged (MPI is not GPU-aware here)")
                               : "",
               rounds_note(o, rounds_s, sizeof(rounds_s)));
        if (o->check && c->reduces && esz == 2)
            printf("# --check: against MPI on the same values in f32, rounded back to %s; "
                   "wrong: more than one step of %s apart\n",
                   dtype, dtype);
        if (!has_in_place)
            printf("# %s has no in-place form: its in-place columns are n/a\n", o->op);
        printf("#\n#%13s %13s %9s %7s %6s %-35s %-35s", "", "", "", "", "", "   out-of-place",
               "   in-place");
        if (with_mpi)
            printf(" %s", "   reference, out-of-place");
        printf("\n#" COLL_HEAD " " COLL_FORM " " COLL_FORM, "size", "count", "type", "redop",
               "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
        if (with_mpi) {
            char t[24], b[24];
            snprintf(t, sizeof(t), "%s_time", ref);
            snprintf(b, sizeof(b), "%s_busbw", ref);
            printf(" " COLL_REF, t, b, "speedup");
        }
        printf("\n#" COLL_HEAD " " COLL_FORM " " COLL_FORM, "(B)", "(elements)", "", "", "", "(us)",
               "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
        if (with_mpi)
            printf(" " COLL_REF, "(us)", "(GB/s)", "(x)");
        printf("\n");
        json_open(&json, o->json);
        json_str(&json, "op", o->op);
        json_num(&json, "ranks", n, 0);
        json_str(&json, "backend", symaddr_backend_name(symaddr_backend(ctx)));
        json_str(&json, "dtype", dtype);
        json_str(&json, "redop", redop);
        json_num(&json, "root", c->rooted ? o->root : -1, 0);
        json_num(&json, "graph", o->graph, 0);
        json_num(&json, "blocking", o->blocking, 0);
        json_str(&json, "algo", algo);
        json_str(&json, "reference", with_mpi ? o->compare : "");
        if (o->csv && !(csv = fopen(o->csv, "w")))
            fprintf(stderr, "symaddr-bench: cannot write %s: %s\n", o->csv, strerror(errno));
        if (csv)
            fprintf(csv, "op,ranks,backend,dtype,redop,root,bytes,count,time_us,algbw,busbw,"
                         "wrong,ip_time_us,ip_algbw,ip_busbw,ip_wrong,ref_time_us,ref_busbw\n");
    }
    double start = MPI_Wtime(), bw_sum = 0, ref_bw_sum = 0;
    int bw_n = 0, ref_bw_n = 0;
    long wrong_total = 0; /* over every size and form: a run that found any fails */
    for (double sz = (double)o->min; sz <= (double)max; sz = next_size(o, sz)) {
        size_t count, sb, rb, bytes = (size_t)sz;
        coll_shape(c, bytes, esz, n, &count, &sb, &rb);
        if (count == 0)
            continue;
        /* MPI's result on the same input: the reference of both forms */
        int ref_ok = 1;
        if (o->check) {
            if (c->reduces && esz == 2)
                ref_ok = mpi_16bit(c, o, symaddr_comm(ctx), (const uint16_t *)hs, (uint16_t *)hm,
                                   count, sb / 2, rb / 2);
            else
                ref_ok = c->mpi(o, symaddr_comm(ctx), hs, hm, count);
        }
        coll_result_t out = {0, -1}, in = {0, -1}, refr = {-1, -1};
        coll_measure(ctx, o, c, 0, send, recv, count, sb, rb, hs, hr, hm, ref_ok, stream, &out,
                     &refr);
        if (has_in_place)
            coll_measure(ctx, o, c, 1, send, recv, count, sb, rb, hs, hr, hm, ref_ok, stream, &in,
                         NULL);
        wrong_total += (out.wrong > 0 ? out.wrong : 0) + (in.wrong > 0 ? in.wrong : 0);
        if (rank != 0)
            continue;
        double f = busbw_factor(c, n), bw = (double)bytes / out.time / 1e9 * f;
        double ip_bw = has_in_place ? (double)bytes / in.time / 1e9 * f : 0;
        double ref_bw = refr.time > 0 ? (double)bytes / refr.time / 1e9 * f : 0;
        bw_sum += bw + ip_bw;
        bw_n += 1 + has_in_place;
        ref_bw_sum += ref_bw;
        ref_bw_n += refr.time > 0;
        printf(" %13zu %13zu %9s %7s %6d", bytes, count, dtype, c->reduces ? redop : "none",
               c->rooted ? o->root : -1);
        coll_form_cells(&out, bytes, f, 1, o->check);
        coll_form_cells(&in, bytes, f, has_in_place, o->check);
        if (with_mpi && refr.time > 0)
            printf(" %12.2f %10.2f %8.2f", refr.time * 1e6, ref_bw, refr.time / out.time);
        else if (with_mpi)
            printf(" " COLL_REF, "n/a", "n/a", "n/a");
        printf("\n");
        fflush(stdout);
        json_row(&json);
        json_num(&json, "bytes", (double)bytes, 0);
        json_num(&json, "count", (double)count, 0);
        json_num(&json, "time_us", out.time * 1e6, 3);
        json_num(&json, "algbw", (double)bytes / out.time / 1e9, 4);
        json_num(&json, "busbw", bw, 4);
        json_num(&json, "wrong", (double)out.wrong, 0);
        if (has_in_place) {
            json_num(&json, "ip_time_us", in.time * 1e6, 3);
            json_num(&json, "ip_algbw", (double)bytes / in.time / 1e9, 4);
            json_num(&json, "ip_busbw", ip_bw, 4);
            json_num(&json, "ip_wrong", (double)in.wrong, 0);
        }
        if (refr.time > 0) {
            json_num(&json, "ref_time_us", refr.time * 1e6, 3);
            json_num(&json, "ref_busbw", ref_bw, 4);
        }
        json_row_end(&json);
        if (csv) {
            fprintf(csv, "%s,%d,%s,%s,%s,%d,%zu,%zu,%.3f,%.4f,%.4f,%ld,", o->op, n,
                    symaddr_backend_name(symaddr_backend(ctx)), dtype, c->reduces ? redop : "none",
                    c->rooted ? o->root : -1, bytes, count, out.time * 1e6,
                    (double)bytes / out.time / 1e9, bw, out.wrong);
            if (has_in_place)
                fprintf(csv, "%.3f,%.4f,%.4f,%ld,", in.time * 1e6, (double)bytes / in.time / 1e9,
                        ip_bw, in.wrong);
            else
                fprintf(csv, ",,,,");
            if (refr.time > 0)
                fprintf(csv, "%.3f,%.4f\n", refr.time * 1e6, ref_bw);
            else
                fprintf(csv, ",\n");
        }
        if (MPI_Wtime() - start > 3)
            fprintf(stderr, "symaddr-bench: %s %zu bytes done (%.0f s)\n", o->op, bytes,
                    MPI_Wtime() - start);
    }
    if (rank == 0) {
        if (o->check)
            printf("# Wrong elements       : %ld %s\n", wrong_total, wrong_total ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %g\n", bw_n ? bw_sum / bw_n : 0.0);
        if (ref_bw_n)
            printf("# Avg bus bandwidth of %s, out-of-place: %g\n", ref, ref_bw_sum / ref_bw_n);
        printf("#\n");
    }
    json_close(&json);
    if (csv)
        fclose(csv);
    graph_stream_destroy(stream);
    free(hs);
    free(hr);
    free(hm);
    bench_buffer_free(ctx, with_nvshmem(o), prov, send, maps[0]);
    bench_buffer_free(ctx, with_nvshmem(o), prov, recv, maps[1]);
    nvshmem_close();
#if defined(SYMADDR_BENCH_NCCL)
    if (with_nccl && nccl.comm)
        nccl.comm_destroy(nccl.comm);
#endif
    if (wrong_total && rank == 0)
        fprintf(stderr, "symaddr-bench: %s returned %ld wrong elements\n", o->op, wrong_total);
    return wrong_total ? 1 : 0;
}

#endif
