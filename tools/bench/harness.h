/* SPDX-License-Identifier: MIT */
/* symaddr-bench's harness: options, the --json writer, timing, the checks every op shares,
 * and the reference libraries (MPI, NCCL loaded at run time). The ops live beside it, one
 * file per family, and symaddr-bench.hip lists them. */
#ifndef SYMADDR_BENCH_HARNESS_H
#define SYMADDR_BENCH_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"
#include "symaddr/device.h"
#include "symaddr/symaddr.h"
#include "coll_convert.h" /* the collectives' own f16/bf16 rounding, for the 16-bit references */

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

#define BENCH_ROUNDS_MAX 15 /* the most --rounds, and what median_of takes */

typedef struct opts {
    const char *op;
    size_t min, max;
    double factor;
    int iters, warmup, check, graph, one_pair;
    int rounds;  /* collectives, fused_rmsnorm: timings of each side, in turn; the median shown */
    int threads; /* lookup: threads looking up at once */
    symaddr_provider_kind_t provider;
    const char *json, *compare;
    symaddr_dtype_t dtype;
    symaddr_redop_t redop;
    symaddr_allreduce_algo_t algo;
    const char *backend;
} opts_t;

/* Whether name is an op of the bench (symaddr-bench.hip's list, coll.h's rows). */
static int bench_op_known(const char *name);
#define DTYPE_NAME(E, name, bytes, T) #name,
static const char *const dtype_names[] = {SYMADDR_DTYPE_LIST(DTYPE_NAME)};
static const char *const redop_names[] = {"sum", "prod", "min", "max"};
/* symaddr_allreduce_algo_t's values, as SYMADDR_ALLREDUCE spells them */
static const char *const algo_names[] = {"auto",    "oneshot",     "twoshot",     "ll",
                                         "lamport", "twoshot-get", "twoshot-copy"};

static int lookup_name(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(names[i], s))
            return i;
    return -1;
}

/* symaddr's own size parser; a size it refuses ends the run with the reason. */
static size_t parse_size(const char *s, int rank)
{
    size_t v;
    symaddr_status_t st = symaddr_size_parse(s, &v);
    if (st != SYMADDR_OK) {
        if (rank == 0)
            fprintf(stderr,
                    "symaddr-bench: invalid size '%s' (%s): use base-10 bytes with an optional "
                    "K, M, G or T, e.g. 64M, 1.5G or 4096\n",
                    s, symaddr_strerror(st));
        exit(2);
    }
    return v;
}

static int usage(int rank)
{
    if (rank == 0)
        fprintf(stderr,
                "usage: symaddr-bench OP [-b MIN] [-e MAX] [-f FACTOR] [--iters N] [--warmup N]\n"
                "         [--provider heap|ipc|vmm] [--check] [--json FILE]\n"
                "         [--dtype int32|uint32|int64|uint64|float|double|half|bfloat16]\n"
                "         [--op sum|prod|min|max] [--algo "
                "auto|oneshot|twoshot|twoshot-get|twoshot-copy|ll|lamport]\n"
                "         [--compare mpi|nccl|rccl] [--graph] [--backend auto|cpu|cuda|hip]\n"
                "         [--one-pair]  (put/get: only rank 0 copies, to or from rank 1)\n"
                "         [--threads N]  (lookup: N threads look up at once, 1 to 64; each makes\n"
                "                         --iters x 50,000 lookups a round, and --iters x 100\n"
                "                         allocate+free are timed)\n"
                "         [--rounds N]  (collectives and fused_rmsnorm: N timings of symaddr and\n"
                "                        of the reference in turn, the median of each shown; 1 to\n"
                "                        15)\n"
                "  OP: put get atomic translate latency alloc lookup allreduce allgather\n"
                "      reduce_scatter broadcast alltoall fused_rmsnorm\n");
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
    o->threads = 1;
    o->rounds = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-b") && v)
            o->min = parse_size(argv[++i], rank);
        else if (!strcmp(a, "-e") && v)
            o->max = parse_size(argv[++i], rank);
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
        else if (!strcmp(a, "--threads") && v)
            o->threads = atoi(argv[++i]);
        else if (!strcmp(a, "--rounds") && v)
            o->rounds = atoi(argv[++i]);
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
            int k = lookup_name(algo_names, (int)(sizeof(algo_names) / sizeof(algo_names[0])),
                                argv[++i]);
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
        } else if (!o->op && bench_op_known(a))
            o->op = a;
        else
            return usage(rank);
    }
    if (!o->op || o->min == 0 || o->max < o->min || o->factor <= 1 || o->iters <= 0 ||
        o->threads < 1 || o->threads > 64 || o->rounds < 1 || o->rounds > BENCH_ROUNDS_MAX)
        return usage(rank);
    if (o->compare && strcmp(o->compare, "mpi") && strcmp(o->compare, "nccl") &&
        strcmp(o->compare, "rccl"))
        return usage(rank);
    return 0;
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

/* The stream a --graph run captures on (a stream of its own: the legacy default stream cannot
 * be captured); NULL otherwise, and on the cpu. */
static void *graph_stream_create(const opts_t *o)
{
    void *stream = NULL;
#if defined(SYMADDR_USE_CUDA)
    if (o->graph)
        cudaStreamCreate((cudaStream_t *)&stream);
#else
    (void)o;
#endif
    return stream;
}

static void graph_stream_destroy(void *stream)
{
#if defined(SYMADDR_USE_CUDA)
    if (stream)
        cudaStreamDestroy((cudaStream_t)stream);
#else
    (void)stream;
#endif
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

/* What a table's header says of --rounds: "" for one timing. */
static const char *rounds_note(const opts_t *o, char *buf, size_t size)
{
    buf[0] = 0;
    if (o->rounds > 1)
        snprintf(buf, size, "; times: the median of %d rounds, in turn", o->rounds);
    return buf;
}

/* The median of v[0, n), n <= BENCH_ROUNDS_MAX (the upper one of an even n). */
static double median_of(const double *v, int n)
{
    double s[BENCH_ROUNDS_MAX];
    for (int i = 0; i < n; i++) { /* insertion sort: n is small */
        int j = i;
        for (; j > 0 && s[j - 1] > v[i]; j--)
            s[j] = s[j - 1];
        s[j] = v[i];
    }
    return s[n / 2];
}

static double now_max(symaddr_context_t *ctx, double t)
{
    double w;
    MPI_Allreduce(&t, &w, 1, MPI_DOUBLE, MPI_MAX, symaddr_comm(ctx));
    return w;
}

#endif
