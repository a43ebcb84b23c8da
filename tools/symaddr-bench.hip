/* SPDX-License-Identifier: MIT */
/* symaddr-bench: one MPI program for symaddr's benchmarks, nccl-tests style.
 *
 *   mpirun -np N symaddr-bench put|get|translate|latency [-b MIN] [-e MAX] [-f FACTOR]
 *          [--iters N] [--warmup N] [--provider heap|ipc|vmm] [--check] [--json FILE]
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

#if defined(SYMADDR_BENCH_NCCL)
#include <dlfcn.h>
#include <nccl.h>
#endif

#if defined(SYMADDR_KERNELS_CPU)
#define BENCH_BACKEND SYMADDR_BACKEND_CPU
#elif defined(SYMADDR_USE_CUDA)
#define BENCH_BACKEND SYMADDR_BACKEND_CUDA
#else
#define BENCH_BACKEND SYMADDR_BACKEND_HIP
#endif

/* 16-byte aligned: one 16-byte access per element, as the library's own copies make. */
typedef struct v16 {
    uint64_t a, b;
} __attribute__((aligned(16))) v16_t;

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
    int iters, warmup, check, graph, one_pair;
    symaddr_provider_kind_t provider;
    const char *json, *compare;
    symaddr_dtype_t dtype;
    symaddr_redop_t redop;
    symaddr_allreduce_algo_t algo;
    const char *backend;
} opts_t;

/* Whether name is a collective of the bench (bench_colls, below). */
static int is_coll(const char *name);
#define DTYPE_NAME(E, name, bytes, T) #name,
static const char *const dtype_names[] = {SYMADDR_DTYPE_LIST(DTYPE_NAME)};
static const char *const redop_names[] = {"sum", "prod", "min", "max"};

static int lookup_name(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], s))
            return i;
    return -1;
}

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'K':
    case 'k': v *= 1024; break;
    case 'M':
    case 'm': v *= 1024 * 1024; break;
    case 'G':
    case 'g': v *= 1024 * 1024 * 1024; break;
    }
    return (size_t)v;
}

static int usage(int rank)
{
    if (rank == 0)
        fprintf(stderr,
                "usage: symaddr-bench OP [-b MIN] [-e MAX] [-f FACTOR] [--iters N] [--warmup N]\n"
                "         [--provider heap|ipc|vmm] [--check] [--json FILE]\n"
                "         [--dtype int32|uint32|int64|uint64|float|double|half|bfloat16]\n"
                "         [--op sum|prod|min|max] [--algo auto|oneshot|twoshot|ll]\n"
                "         [--compare mpi|nccl|rccl] [--graph] [--backend auto|cpu|cuda|hip]\n"
                "         [--one-pair]  (put/get: only rank 0 copies, to or from rank 1)\n"
                "  OP: put get atomic translate latency alloc lookup allreduce allgather\n"
                "      reduce_scatter broadcast alltoall\n");
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
    o->dtype = SYMADDR_FLOAT32;
    o->redop = SYMADDR_SUM;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-b") && v)
            o->min = parse_size(argv[++i]);
        else if (!strcmp(a, "-e") && v)
            o->max = parse_size(argv[++i]);
        else if (!strcmp(a, "-f") && v)
            o->factor = atof(argv[++i]);
        else if (!strcmp(a, "--iters") && v)
            o->iters = atoi(argv[++i]);
        else if (!strcmp(a, "--warmup") && v)
            o->warmup = atoi(argv[++i]);
        else if (!strcmp(a, "--json") && v)
            o->json = argv[++i];
        else if (!strcmp(a, "--check"))
            o->check = 1;
        else if (!strcmp(a, "--graph"))
            o->graph = 1;
        else if (!strcmp(a, "--one-pair"))
            o->one_pair = 1;
        else if (!strcmp(a, "--compare") && v)
            o->compare = argv[++i];
        else if (!strcmp(a, "--backend") && v)
            o->backend = argv[++i];
        else if (!strcmp(a, "--dtype") && v) {
            int k = lookup_name(dtype_names, SYMADDR_DTYPE_COUNT_, argv[++i]);
            if (k < 0)
                return usage(rank);
            o->dtype = (symaddr_dtype_t)k;
        } else if (!strcmp(a, "--op") && v) {
            int k = lookup_name(redop_names, 4, argv[++i]);
            if (k < 0)
                return usage(rank);
            o->redop = (symaddr_redop_t)k;
        } else if (!strcmp(a, "--algo") && v) {
            static const char *const algos[] = {"auto", "oneshot", "twoshot", "ll"};
            int k = lookup_name(algos, 4, argv[++i]);
            if (k < 0)
                return usage(rank);
            o->algo = (symaddr_allreduce_algo_t)k;
        } else if (!strcmp(a, "--provider") && v) {
            v = argv[++i];
            if (!strcmp(v, "heap"))
                o->provider = SYMADDR_PROVIDER_HEAP;
            else if (!strcmp(v, "ipc"))
                o->provider = SYMADDR_PROVIDER_IPC;
            else if (!strcmp(v, "vmm"))
                o->provider = SYMADDR_PROVIDER_VMM;
            else
                return usage(rank);
        } else if (!o->op && (!strcmp(a, "put") || !strcmp(a, "get") || !strcmp(a, "translate") ||
                              !strcmp(a, "latency") || !strcmp(a, "atomic") ||
                              !strcmp(a, "alloc") || !strcmp(a, "lookup") || is_coll(a)))
            o->op = a;
        else
            return usage(rank);
    }
    if (!o->op || o->min == 0 || o->max < o->min || o->factor <= 1 || o->iters <= 0)
        return usage(rank);
    if (o->compare && strcmp(o->compare, "mpi") && strcmp(o->compare, "nccl") &&
        strcmp(o->compare, "rccl"))
        return usage(rank);
    return 0;
}

/* MODE_PEER_*: the runtime's peer copy (cudaMemcpyPeer, hipMemcpyPeer) of the same bytes. */
enum { MODE_PUT, MODE_GET, MODE_TRANSLATED, MODE_RAW, MODE_PEER_PUT, MODE_PEER_GET };

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
#if !defined(SYMADDR_KERNELS_CPU)
    const symaddr_locality_t *loc = NULL;
    symaddr_map_t *peer_map = NULL;
    int peer_dev = 0;
    if (mode == MODE_PEER_PUT || mode == MODE_PEER_GET) {
        char *mapped = mode == MODE_PEER_PUT ? dst : src;
        st = symaddr_locality_get(ctx, &loc);
        if (st == SYMADDR_OK)
            st = symaddr_lookup(ctx, mapped, &peer_map);
        if (st == SYMADDR_OK)
            st = symaddr_translate_host(peer_map, mapped, target, &raw);
        if (st == SYMADDR_OK)
            peer_dev = loc->device[target];
    }
#endif
    int active = !o->one_pair || rank == 0;
    for (int i = -o->warmup; i < o->iters && st == SYMADDR_OK; i++) {
        if (i == 0) {
            symaddr_stream_sync(ctx, NULL);
            MPI_Barrier(symaddr_comm(ctx));
            t0 = MPI_Wtime();
        }
        if (!active)
            continue;
        size_t n = bytes / sizeof(v16_t);
        switch (mode) {
        case MODE_PUT: st = symaddr_put(ctx, dst, src, bytes, target, NULL); break;
        case MODE_GET: st = symaddr_get(ctx, dst, src, bytes, target, NULL); break;
        case MODE_TRANSLATED:
            st = SYMADDR_LAUNCH(copy_translated, blocks_for(n), 256, NULL, (v16_t *)dst,
                                (const v16_t *)src, n, target, dst_map->peer_bases, rank);
            break;
#if !defined(SYMADDR_KERNELS_CPU)
        case MODE_PEER_PUT:
            st = hipMemcpyPeerAsync(raw, peer_dev, src, symaddr_device(ctx), bytes, NULL) ==
                         hipSuccess
                     ? SYMADDR_OK
                     : SYMADDR_ERR_BACKEND;
            break;
        case MODE_PEER_GET:
            st = hipMemcpyPeerAsync(dst, symaddr_device(ctx), raw, peer_dev, bytes, NULL) ==
                         hipSuccess
                     ? SYMADDR_OK
                     : SYMADDR_ERR_BACKEND;
            break;
#endif
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

/* ---- the --json file: one writer for every table ------------------------------------------ */

/* {"key": value, ..., "rows": [{"key": number, ...}, ...]}; inactive when f is NULL. */
typedef struct json_out {
    FILE *f;
    int fields, rows, in_row;
} json_out_t;

static void json_open(json_out_t *j, const char *path)
{
    memset(j, 0, sizeof(*j));
    if (path && !(j->f = fopen(path, "w")))
        fprintf(stderr, "symaddr-bench: cannot write %s\n", path);
    if (j->f)
        fputc('{', j->f);
}

static void json_key(json_out_t *j, const char *key)
{
    fprintf(j->f, "%s\"%s\": ", j->fields++ ? ", " : "", key);
}

static void json_str(json_out_t *j, const char *key, const char *v)
{
    if (j->f) {
        json_key(j, key);
        fprintf(j->f, "\"%s\"", v);
    }
}

/* A number with prec digits after the point (0 for integers). */
static void json_num(json_out_t *j, const char *key, double v, int prec)
{
    if (j->f) {
        json_key(j, key);
        fprintf(j->f, "%.*f", prec, v);
    }
}

static void json_row(json_out_t *j)
{
    if (!j->f)
        return;
    if (!j->rows++ && !j->in_row)
        fprintf(j->f, "%s\"rows\": [", j->fields ? ", " : "");
    fprintf(j->f, "%s\n  {", j->rows > 1 ? "," : "");
    j->fields = 0;
}

static void json_row_end(json_out_t *j)
{
    if (j->f)
        fputc('}', j->f);
}

static void json_close(json_out_t *j)
{
    if (!j->f)
        return;
    fprintf(j->f, "%s\n]}\n", j->rows ? "" : (j->fields ? ", \"rows\": [" : "\"rows\": ["));
    fclose(j->f);
    j->f = NULL;
}

/* ---- collectives ------------------------------------------------------------------------------
 */

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

static int is_coll(const char *name) { return find_coll(name) != NULL; }

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

/* ---- NCCL as the reference: loaded at run time, on the same buffers and stream ------------ */

#if defined(SYMADDR_BENCH_NCCL)
static struct {
    ncclComm_t comm;
    decltype(&ncclGetUniqueId) get_unique_id;
    decltype(&ncclCommInitRank) comm_init_rank;
    decltype(&ncclCommDestroy) comm_destroy;
    decltype(&ncclGetErrorString) error_string;
    decltype(&ncclAllReduce) all_reduce;
    decltype(&ncclAllGather) all_gather;
    decltype(&ncclReduceScatter) reduce_scatter;
    decltype(&ncclBroadcast) broadcast;
    decltype(&ncclAlltoAll) all_to_all;
} nccl;

/* 0 on success; else why, in @p why. Collective over the context's communicator. */
static int nccl_open(symaddr_context_t *ctx, char *why, size_t len)
{
    void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_GLOBAL);
    int ok = h != NULL, all_ok;
    if (!h)
        snprintf(why, len, "cannot load libnccl.so.2 (%s); add its folder to LD_LIBRARY_PATH",
                 dlerror());
#define NCCL_SYM(field, name)                                                                      \
    if (ok && !(*(void **)&nccl.field = dlsym(h, #name))) {                                        \
        snprintf(why, len, "libnccl.so.2 has no %s: too old for this build", #name);               \
        ok = 0;                                                                                    \
    }
    NCCL_SYM(get_unique_id, ncclGetUniqueId)
    NCCL_SYM(comm_init_rank, ncclCommInitRank)
    NCCL_SYM(comm_destroy, ncclCommDestroy)
    NCCL_SYM(error_string, ncclGetErrorString)
    NCCL_SYM(all_reduce, ncclAllReduce)
    NCCL_SYM(all_gather, ncclAllGather)
    NCCL_SYM(reduce_scatter, ncclReduceScatter)
    NCCL_SYM(broadcast, ncclBroadcast)
    NCCL_SYM(all_to_all, ncclAlltoAll)
#undef NCCL_SYM
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, symaddr_comm(ctx));
    if (!all_ok) {
        if (ok)
            snprintf(why, len, "another rank could not load NCCL");
        return 1;
    }
    ncclUniqueId id;
    ncclResult_t r = ncclSuccess;
    if (symaddr_rank(ctx) == 0)
        r = nccl.get_unique_id(&id);
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, symaddr_comm(ctx));
    if (r == ncclSuccess)
        r = nccl.comm_init_rank(&nccl.comm, symaddr_size(ctx), id, symaddr_rank(ctx));
    ok = r == ncclSuccess;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, symaddr_comm(ctx));
    if (!all_ok) {
        snprintf(why, len, "ncclCommInitRank failed: %s",
                 ok ? "on another rank" : nccl.error_string(r));
        return 1;
    }
    return 0;
}

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

/* A reference library that cannot run here says why, on every rank, and the run stops. */
static int reference_available(symaddr_context_t *ctx, const opts_t *o)
{
    if (!o->compare || !strcmp(o->compare, "mpi"))
        return 1;
    int rank = symaddr_rank(ctx), dev = symaddr_device(ctx), size = symaddr_size(ctx);
    char why[512] = "";
    if (dev < 0) {
        snprintf(why, sizeof(why), "%s needs a GPU backend; this context runs on cpu", o->compare);
    } else {
        int *devs = (int *)malloc(sizeof(int) * (size_t)size);
        MPI_Comm node;
        int nsize;
        MPI_Comm_split_type(symaddr_comm(ctx), MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
        MPI_Comm_size(node, &nsize);
        MPI_Allgather(&dev, 1, MPI_INT, devs, 1, MPI_INT, node);
        for (int i = 0; i < nsize && !why[0]; i++)
            for (int j = i + 1; j < nsize && !why[0]; j++)
                if (devs[i] == devs[j])
                    snprintf(why, sizeof(why),
                             "%s refuses two ranks on one GPU (node ranks %d and %d both use "
                             "device %d); run one rank per GPU",
                             o->compare, i, j, devs[i]);
        MPI_Comm_free(&node);
        free(devs);
#if defined(SYMADDR_BENCH_NCCL)
        if (!why[0] && !strcmp(o->compare, "nccl") && nccl_open(ctx, why, sizeof(why)) == 0)
            return 1;
#endif
        if (!why[0])
            snprintf(why, sizeof(why),
                     "--compare %s: this symaddr-bench was built without %s's header; "
                     "reconfigure with -Dnccl_include=DIR (the folder holding nccl.h)",
                     o->compare, o->compare);
    }
    if (rank == 0)
        fprintf(stderr, "symaddr-bench: %s\n", why);
    return 0;
}

/* Seconds per call: iters calls after the warm-up, in a loop, or with --graph as one replay
 * of a graph that captured them (after a warm-up replay). The same for symaddr and for the
 * reference library. Returns the first failing call's status, SYMADDR_ERR_BACKEND when the
 * graph cannot be made, else the final stream sync's. */
template <typename Call>
static symaddr_status_t time_calls(symaddr_context_t *ctx, const opts_t *o, void *stream, Call call,
                                   double *seconds_p)
{
    symaddr_status_t st = SYMADDR_OK;
    double t0 = 0;
    for (int i = -o->warmup; i < (o->graph ? 0 : o->iters) && st == SYMADDR_OK; i++) {
        if (i == 0) {
            symaddr_stream_sync(ctx, stream);
            MPI_Barrier(symaddr_comm(ctx));
            t0 = MPI_Wtime();
        }
        st = call();
    }
#if defined(SYMADDR_USE_CUDA)
    if (o->graph && st == SYMADDR_OK) {
        cudaStream_t s = (cudaStream_t)stream;
        cudaGraph_t g;
        cudaGraphExec_t gexec = NULL;
        symaddr_stream_sync(ctx, stream);
        cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
        for (int i = 0; i < o->iters && st == SYMADDR_OK; i++)
            st = call();
        cudaStreamEndCapture(s, &g);
        if (st == SYMADDR_OK && cudaGraphInstantiate(&gexec, g, 0) != cudaSuccess)
            st = SYMADDR_ERR_BACKEND;
        cudaGraphDestroy(g);
        if (st == SYMADDR_OK) {
            cudaGraphLaunch(gexec, s); /* warm-up replay */
            symaddr_stream_sync(ctx, stream);
            MPI_Barrier(symaddr_comm(ctx));
            t0 = MPI_Wtime();
            cudaGraphLaunch(gexec, s);
        }
        if (gexec)
            cudaGraphExecDestroy(gexec);
    }
#endif
    symaddr_status_t sst = symaddr_stream_sync(ctx, stream);
    *seconds_p = (MPI_Wtime() - t0) / o->iters;
    return st == SYMADDR_OK ? sst : st;
}

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
#if defined(SYMADDR_USE_CUDA)
    if (o->graph)
        cudaStreamCreate((cudaStream_t *)&stream);
#endif
    json_out_t json = {};
    if (rank == 0) {
        printf("# symaddr-bench %s: %d ranks, backend %s, dtype %s, op %s%s%s\n", o->op, n,
               symaddr_backend_name(symaddr_backend(ctx)), dtype_names[o->dtype],
               redop_names[o->redop], o->graph ? ", graph" : "",
               with_nccl  ? ", reference: NCCL on the same buffers and stream"
               : with_mpi ? (cpu ? ", reference: MPI on the same buffers"
                                 : ", reference: MPI, host-staged (MPI is not GPU-aware here)")
                          : "");
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
        json_str(&json, "reference", with_mpi ? o->compare : "");
    }
    double start = MPI_Wtime();
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
            if (c->mpi(o, symaddr_comm(ctx), hs, hm, count)) {
                long w = 0;
                for (size_t i = 0; i < rb; i += esz)
                    w += memcmp(hr + i, hm + i, esz) != 0;
                MPI_Allreduce(&w, &wrong, 1, MPI_LONG, MPI_SUM, symaddr_comm(ctx));
            }
        }
        double t = 0, worst, tm = 0, tm_worst = 0;
        if (st == SYMADDR_OK)
            st = time_calls(
                ctx, o, stream, [&] { return c->run(ctx, o, send, recv, count, stream); }, &t);
        if (st != SYMADDR_OK) {
            fprintf(stderr, "symaddr-bench: rank %d: %s (%s)\n", rank, symaddr_strerror(st),
                    symaddr_last_error(ctx));
            MPI_Abort(symaddr_comm(ctx), 1);
        }
        MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, symaddr_comm(ctx));
        int mpi_ok = 1;
        if (with_nccl) {
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
            MPI_Allreduce(&tm, &tm_worst, 1, MPI_DOUBLE, MPI_MAX, symaddr_comm(ctx));
        } else if (with_mpi) {
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
            MPI_Allreduce(&tm, &tm_worst, 1, MPI_DOUBLE, MPI_MAX, symaddr_comm(ctx));
        }
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
#if defined(SYMADDR_USE_CUDA)
    if (stream)
        cudaStreamDestroy((cudaStream_t)stream);
#endif
    free(hs);
    free(hr);
    free(hm);
    symaddr_symmetric_free(prov, send);
    symaddr_symmetric_free(prov, recv);
#if defined(SYMADDR_BENCH_NCCL)
    if (with_nccl && nccl.comm)
        nccl.comm_destroy(nccl.comm);
#endif
    return 0;
}

/* Ops that launch this tool's own kernels need the backend they were built for. */
static int kernels_match(symaddr_context_t *ctx, const opts_t *o)
{
    if (symaddr_backend(ctx) == BENCH_BACKEND)
        return 1;
    if (symaddr_rank(ctx) == 0)
        fprintf(stderr,
                "symaddr-bench: '%s' runs its own kernels, built for the %s backend, "
                "but the context runs on %s; run %s with SYMADDR_BACKEND=%s\n",
                o->op, symaddr_backend_name(BENCH_BACKEND),
                symaddr_backend_name(symaddr_backend(ctx)),
                BENCH_BACKEND == SYMADDR_BACKEND_CPU ? "symaddr-bench-cpu" : "symaddr-bench",
                symaddr_backend_name(BENCH_BACKEND));
    return 0;
}

/* ---- atomics, allocation, lookup ----------------------------------------------------------------
 */

__global__ void atomic_loop(uint64_t *ctr, int target, int n, const uint64_t *pb, int me)
{
    for (int i = 0; i < n; i++)
        symaddr_atomic_fetch_add_u64(ctr, 1, target, pb, me);
}

static double now_max(symaddr_context_t *ctx, double t)
{
    double w;
    MPI_Allreduce(&t, &w, 1, MPI_DOUBLE, MPI_MAX, symaddr_comm(ctx));
    return w;
}

static int run_atomic(symaddr_context_t *ctx, const opts_t *o)
{
    int rank = symaddr_rank(ctx), n = symaddr_size(ctx), iters = o->iters * 50;
    symaddr_provider_t *prov;
    symaddr_map_t *m;
    uint64_t *ctr, zero[1] = {0}, got[2];
    if (!kernels_match(ctx, o))
        return 2;
    if (symaddr_provider_get(ctx, o->provider, &prov) ||
        symaddr_symmetric_alloc(prov, 2 * sizeof(uint64_t), (void **)&ctr, &m))
        return 1;
    double t[2];
    for (int k = 0; k < 2; k++) { /* 0: every rank adds to rank 0's counter; 1: its own */
        symaddr_memcpy(ctx, ctr + k, zero, sizeof(uint64_t));
        MPI_Barrier(symaddr_comm(ctx));
        double t0 = MPI_Wtime();
        symaddr_status_t st = SYMADDR_LAUNCH(atomic_loop, 1, 1, NULL, ctr + k, k ? rank : 0, iters,
                                             m->peer_bases, rank);
        if (st == SYMADDR_OK)
            st = symaddr_stream_sync(ctx, NULL);
        if (st != SYMADDR_OK) {
            fprintf(stderr, "symaddr-bench: atomic: %s\n", symaddr_strerror(st));
            MPI_Abort(symaddr_comm(ctx), 1);
        }
        t[k] = now_max(ctx, (MPI_Wtime() - t0) / iters);
        MPI_Barrier(symaddr_comm(ctx));
    }
    symaddr_memcpy(ctx, got, ctr, sizeof(got));
    long wrong = rank == 0 ? got[0] != (uint64_t)n * (uint64_t)iters : 0, all = 0;
    wrong += got[1] != (uint64_t)iters;
    MPI_Allreduce(&wrong, &all, 1, MPI_LONG, MPI_SUM, symaddr_comm(ctx));
    if (rank == 0) {
        printf("# symaddr-bench atomic: %d ranks, backend %s: fetch_add_u64, %d per rank\n", n,
               symaddr_backend_name(symaddr_backend(ctx)), iters);
        printf("# reference: the same kernel on the rank's own counter\n");
        printf("%22s %12s %12s %8s %7s\n", "", "time(us)", "local(us)", "ratio", "#wrong");
        printf("%22s %12.3f %12.3f %8.2f %7ld\n", "all ranks -> rank 0", t[0] * 1e6, t[1] * 1e6,
               t[0] / t[1], all);
    }
    symaddr_symmetric_free(prov, ctr);
    return 0;
}

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
    symaddr_config_t cfg;
    symaddr_config_default(&cfg);
    if (o.algo != SYMADDR_ALLREDUCE_AUTO)
        cfg.allreduce_algo = o.algo;
    if (o.backend) {
        static const char *const names[] = {"auto", "cpu", "cuda", "hip"};
        int k = lookup_name(names, 4, o.backend);
        if (k < 0) {
            usage(wrank);
            MPI_Finalize();
            return 2;
        }
        cfg.backend = (symaddr_backend_kind_t)k;
    }
    if ((st = symaddr_init(MPI_COMM_WORLD, &cfg, &ctx)) != SYMADDR_OK) {
        MPI_Finalize();
        return 1;
    }
    int rank = symaddr_rank(ctx), size = symaddr_size(ctx);
    if (is_coll(o.op) || !strcmp(o.op, "alloc") || !strcmp(o.op, "lookup") ||
        !strcmp(o.op, "atomic")) {
        int rc = !strcmp(o.op, "alloc")    ? run_alloc(ctx, &o)
                 : !strcmp(o.op, "lookup") ? run_lookup(ctx, &o)
                 : !strcmp(o.op, "atomic") ? run_atomic(ctx, &o)
                                           : run_collective(ctx, &o);
        symaddr_finalize(&ctx);
        MPI_Finalize();
        return rc;
    }
    int mode = !strcmp(o.op, "put") ? MODE_PUT : !strcmp(o.op, "get") ? MODE_GET : -1;
    int latency = !strcmp(o.op, "latency");
    if (mode < 0 && !kernels_match(ctx, &o)) {
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
        st = symaddr_symmetric_alloc(prov, o.max, (void **)&a, &m1);
    if (st == SYMADDR_OK)
        st = symaddr_symmetric_alloc(prov, o.max, (void **)&b, &m2);
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

    json_out_t json = {};
    if (rank == 0) {
        printf("# symaddr-bench %s: %d ranks, backend %s, provider %s\n", o.op, size,
               symaddr_backend_name(symaddr_backend(ctx)),
               o.provider == SYMADDR_PROVIDER_HEAP  ? "heap"
               : o.provider == SYMADDR_PROVIDER_VMM ? "vmm"
                                                    : "ipc");
        json_open(&json, o.json);
        json_str(&json, "op", o.op);
        json_num(&json, "ranks", size, 0);
        json_str(&json, "backend", symaddr_backend_name(symaddr_backend(ctx)));
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
            json_row(&json);
            json_num(&json, "bytes", 8, 0);
            json_num(&json, "time_us", worst * 1e6, 3);
            json_num(&json, "wrong", all_bad, 0);
            json_row_end(&json);
        }
        symaddr_mem_free(ctx, status);
    } else {
        int peer_ref =
            (mode == MODE_PUT || mode == MODE_GET) && BENCH_BACKEND != SYMADDR_BACKEND_CPU;
        if (rank == 0) {
            if (o.one_pair)
                printf("# one pair: rank 0 %s rank 1, the other ranks idle\n",
                       mode == MODE_GET ? "reads from" : "writes to");
            if (mode < 0)
                printf("# reference: the same copy kernel given the raw peer pointer\n");
            else
                printf("# reference: the same kernel copying inside the rank's own allocation\n");
            if (peer_ref)
                printf("# and the runtime's peer copy (cudaMemcpyPeer/hipMemcpyPeer) of the same "
                       "bytes to the same peer; peer ratio > 1: symaddr is faster\n");
            printf("%12s %12s %10s %12s %10s %8s %7s", "size(B)", "time(us)", "GB/s",
                   mode < 0 ? "raw(us)" : "local(us)", "GB/s", "ratio", "#wrong");
            if (peer_ref)
                printf(" %10s %10s %8s", "peer(us)", "GB/s", "peer/sym");
            printf("\n");
        }
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
                int receiver = mode == MODE_GET ? 0 : 1;
                for (size_t i = 0; i < bytes && (!o.one_pair || rank == receiver); i++)
                    wrong += got[i] != (unsigned char)(from * 31 + i * 7 + 1);
                free(got);
                MPI_Allreduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, symaddr_comm(ctx));
                MPI_Barrier(symaddr_comm(ctx));
            }
            double t_ref = mode < 0 ? time_loop(ctx, &o, MODE_RAW, 1, b, a, bytes, m2)
                                    : time_loop(ctx, &o, mode, 0, b, a, bytes, m2);
            double t_peer =
                peer_ref ? time_loop(ctx, &o, mode == MODE_PUT ? MODE_PEER_PUT : MODE_PEER_GET, 1,
                                     b, a, bytes, m2)
                         : 0;
            if (rank == 0) {
                char wrong_s[24] = "-";
                if (o.check)
                    snprintf(wrong_s, sizeof(wrong_s), "%ld", all_wrong);
                /* ratio > 1 means symaddr's path is slower than the reference. */
                printf("%12zu %12.2f %10.2f %12.2f %10.2f %8.3f %7s", bytes, t_sym * 1e6,
                       bytes / t_sym / 1e9, t_ref * 1e6, bytes / t_ref / 1e9, t_sym / t_ref,
                       wrong_s);
                if (peer_ref)
                    printf(" %10.2f %10.2f %8.3f", t_peer * 1e6, bytes / t_peer / 1e9,
                           t_peer / t_sym);
                printf("\n");
                json_row(&json);
                json_num(&json, "bytes", (double)bytes, 0);
                json_num(&json, "time_us", t_sym * 1e6, 3);
                json_num(&json, "ref_time_us", t_ref * 1e6, 3);
                json_num(&json, "wrong", (double)all_wrong, 0);
                if (peer_ref)
                    json_num(&json, "peer_time_us", t_peer * 1e6, 3);
                json_row_end(&json);
            }
            if (all_wrong)
                break;
        }
    }
    json_close(&json);
    free(host);
    symaddr_symmetric_free(prov, a);
    symaddr_symmetric_free(prov, b);
    symaddr_finalize(&ctx);
    MPI_Finalize();
    return 0;
}
