/* SPDX-License-Identifier: MIT */
/* symaddr-bench's harness: options, the --json writer, timing, the checks every op shares,
 * and the reference libraries (MPI, NCCL loaded at run time). The ops live beside it, one
 * file per family, and symaddr-bench.hip lists them. */
#ifndef SYMADDR_BENCH_HARNESS_H
#define SYMADDR_BENCH_HARNESS_H

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../json.h"

#include "symaddr/launch.h"
#include "symaddr/device.h"
#include "symaddr/symaddr.h"

#if defined(SYMADDR_BENCH_NCCL) || defined(SYMADDR_BENCH_NVSHMEM)
#include <dlfcn.h>
#endif
#if defined(SYMADDR_BENCH_NCCL)
#include <nccl.h>
#endif
#if defined(SYMADDR_BENCH_NVSHMEM)
#define NVSHMEM_HOSTLIB_ONLY /* the host library's calls only: no device code of NVSHMEM's */
#include <nvshmem.h>
#include <nvshmemx.h>
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
    size_t step;   /* -i: sizes min, min + step, ...; 0: multiply by factor */
    double factor; /* -f */
    int iters, warmup, check;
    int graph;    /* -G N: replay a graph of the iters calls N times (cuda); 0: a loop */
    int blocking; /* -z 1: a stream sync after every call */
    int root;     /* -r: broadcast's root */
    int one_pair;
    int rounds;  /* collectives, fused_rmsnorm: timings of each side, in turn; the median shown */
    int threads; /* lookup: threads looking up at once */
    symaddr_provider_kind_t provider;
    const char *json, *csv, *compare;
    symaddr_dtype_t dtype;
    symaddr_redop_t redop;
    symaddr_allreduce_algo_t algo;
    symaddr_backend_kind_t backend;
} opts_t;

/* Whether name is an op of the bench (symaddr-bench.hip's list, coll.h's rows). */
static int bench_op_known(const char *name);
/* the bench's ops, as the usage lists them */
static void bench_ops_print(FILE *f);

/* The index whose name(i) is s, from 0 until name returns NULL; -1 if none: the library's own
 * names (dtypes, operators, algorithms, providers, backends), never a copy. */
static int lookup_name(const char *(*name)(int), const char *s)
{
    for (int i = 0; name(i); i++)
        if (!strcmp(name(i), s))
            return i;
    return -1;
}

static const char *dtype_at(int i) { return symaddr_dtype_name((symaddr_dtype_t)i); }
static const char *redop_at(int i) { return symaddr_redop_name((symaddr_redop_t)i); }
static const char *algo_at(int i)
{
    return symaddr_allreduce_algo_name((symaddr_allreduce_algo_t)i);
}
/* the providers that allocate (import and foreign register memory of others) */
static const symaddr_provider_kind_t bench_providers[] = {
    SYMADDR_PROVIDER_HEAP, SYMADDR_PROVIDER_IPC, SYMADDR_PROVIDER_VMM};
static const char *provider_at(int i)
{
    return i >= 0 && i < (int)(sizeof(bench_providers) / sizeof(bench_providers[0]))
               ? symaddr_provider_name(bench_providers[i])
               : NULL;
}
static const char *backend_at(int i)
{
    return i < SYMADDR_BACKEND_COUNT_ ? symaddr_backend_name((symaddr_backend_kind_t)i) : NULL;
}

/* "a|b|c" of a name function, for the usage and the messages */
static const char *names_of(const char *(*name)(int), char *buf, size_t len)
{
    buf[0] = 0;
    for (int i = 0; name(i); i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? "|" : "", name(i));
    return buf;
}

static int usage(FILE *f)
{
    char d[128], op[64], al[128], pr[64], be[64];
    fprintf(
        f,
        "Usage: symaddr-bench OP [OPTION]...\n"
        "Time one of symaddr's operations OP under mpirun, against a reference (MPI, NCCL,\n"
        "NVSHMEM)\n"
        "on the same buffers; nccl-tests' flags where they mean the same.\n\n"
        "  -b, --minbytes SIZE      smallest size (default 8; 1K, 64M, 1.5G, ...)\n"
        "  -e, --maxbytes SIZE      largest size (default 64M)\n"
        "  -f, --stepfactor F       multiply the size by F (default 2)\n"
        "  -i, --stepbytes SIZE     or add SIZE to it\n"
        "  -n, --iters N            timed calls per size (default 20)\n"
        "  -w, --warmup_iters N     untimed calls first (default 5)\n"
        "  -c, --check 0|1          check every size against MPI (collectives) or the\n"
        "                           expected bytes (put, get, translate); --check alone is 1\n"
        "  -d, --datatype %s\n"
        "  -o, --op %s\n"
        "  -r, --root R             broadcast's root (default 0)\n"
        "  -z, --blocking 0|1       a stream sync after every call (default 0)\n"
        "  -G, --cudagraph N        capture the iters calls in a graph, replay it N times\n"
        "                           (cuda; --graph is -G 1)\n"
        "  -R, --rounds N           collectives and fused_rmsnorm: N timings of symaddr and of\n"
        "                           the reference in turn, the median of each shown (1 to 15)\n"
        "  -a, --algo %s\n"
        "  -p, --provider %s\n"
        "  -B, --backend %s\n"
        "  -C, --compare mpi|nccl|rccl|nvshmem   the reference, timed on the same buffers\n"
        "                           (nvshmem: allreduce, put and get, on NVSHMEM's memory,\n"
        "                           which symaddr registers; several ranks on a GPU allowed)\n"
        "  -J, --json FILE          the table as JSON (scripts/plot-bench reads it)\n"
        "  -S, --csv FILE           the table as CSV\n"
        "      --one-pair           put, get: only rank 0 copies, to or from rank 1\n"
        "      --threads N          lookup: N threads look up at once, 1 to 64; each makes\n"
        "                           iters x 50,000 lookups a round, and iters x 100\n"
        "                           allocate+free are timed\n"
        "  -h, --help               this text\n"
        "      --version            symaddr's version\n"
        "  OP:",
        names_of(dtype_at, d, sizeof(d)), names_of(redop_at, op, sizeof(op)),
        names_of(algo_at, al, sizeof(al)), names_of(provider_at, pr, sizeof(pr)),
        names_of(backend_at, be, sizeof(be)));
    bench_ops_print(f);
    fprintf(f, "\n");
    return 2;
}

/* A bad argument: one line saying what and what is allowed, on rank 0; the run ends with 2. */
static int bad_arg(int rank, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad_arg(int rank, const char *fmt, ...)
{
    if (rank == 0) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "symaddr-bench: ");
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, " (symaddr-bench --help lists the options)\n");
        va_end(ap);
    }
    return 2;
}

/* An integer from lo to hi, whole text; 0 on success. */
static int parse_int(const char *s, long lo, long hi, int *v)
{
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (errno || end == s || *end || x < lo || x > hi)
        return 1;
    *v = (int)x;
    return 0;
}

/* 0: run; 1: --help printed, exit 0; 2: a bad argument, reported on rank 0. */
static int parse(int argc, char **argv, opts_t *o, int rank)
{
    enum { OPT_ONE_PAIR = 256, OPT_THREADS, OPT_GRAPH };
    static const struct option longs[] = {
        {"minbytes", required_argument, NULL, 'b'},
        {"maxbytes", required_argument, NULL, 'e'},
        {"stepfactor", required_argument, NULL, 'f'},
        {"stepbytes", required_argument, NULL, 'i'},
        {"iters", required_argument, NULL, 'n'},
        {"warmup_iters", required_argument, NULL, 'w'},
        {"warmup", required_argument, NULL, 'w'},
        {"check", optional_argument, NULL, 'c'},
        {"datatype", required_argument, NULL, 'd'},
        {"dtype", required_argument, NULL, 'd'},
        {"op", required_argument, NULL, 'o'},
        {"root", required_argument, NULL, 'r'},
        {"blocking", required_argument, NULL, 'z'},
        {"cudagraph", required_argument, NULL, 'G'},
        {"graph", no_argument, NULL, OPT_GRAPH},
        {"rounds", required_argument, NULL, 'R'},
        {"algo", required_argument, NULL, 'a'},
        {"provider", required_argument, NULL, 'p'},
        {"backend", required_argument, NULL, 'B'},
        {"compare", required_argument, NULL, 'C'},
        {"json", required_argument, NULL, 'J'},
        {"csv", required_argument, NULL, 'S'},
        {"one-pair", no_argument, NULL, OPT_ONE_PAIR},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
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
    o->backend = SYMADDR_BACKEND_AUTO;
    opterr = 0; /* getopt's own messages would come from every rank */
    optind = 1;
    char names[128];
    int c, k;
    while ((c = getopt_long(argc, argv, "b:e:f:i:n:w:c:d:o:r:z:G:R:a:p:B:C:J:S:h", longs, NULL)) !=
           -1) {
        const char *v = optarg;
        switch (c) {
        case 'b':
        case 'e':
        case 'i': {
            size_t x;
            symaddr_status_t st = symaddr_size_parse(v, &x);
            if (st != SYMADDR_OK)
                return bad_arg(rank,
                               "invalid size '%s' for -%c (%s): use base-10 bytes with an "
                               "optional K, M, G or T, e.g. 64M, 1.5G or 4096",
                               v, c, symaddr_strerror(st));
            *(c == 'b' ? &o->min : c == 'e' ? &o->max : &o->step) = x;
            break;
        }
        case 'f': {
            char *end;
            o->factor = strtod(v, &end);
            if (end == v || *end || !(o->factor > 1) || o->factor > 1e6)
                return bad_arg(rank, "invalid factor '%s' for -f: a number above 1, e.g. 2", v);
            break;
        }
        case 'n':
            if (parse_int(v, 1, 1 << 30, &o->iters))
                return bad_arg(rank, "invalid count '%s' for -n: an integer from 1", v);
            break;
        case 'w':
            if (parse_int(v, 0, 1 << 30, &o->warmup))
                return bad_arg(rank, "invalid count '%s' for -w: an integer from 0", v);
            break;
        case 'c':
            if (!v)
                o->check = 1;
            else if (parse_int(v, 0, 1 << 30, &o->check))
                return bad_arg(rank, "invalid value '%s' for -c: 0 (no check) or 1", v);
            o->check = o->check != 0;
            break;
        case 'd':
            if ((k = lookup_name(dtype_at, v)) < 0)
                return bad_arg(rank, "invalid datatype '%s': one of %s", v,
                               names_of(dtype_at, names, sizeof(names)));
            o->dtype = (symaddr_dtype_t)k;
            break;
        case 'o':
            if ((k = lookup_name(redop_at, v)) < 0)
                return bad_arg(rank, "invalid op '%s': one of %s", v,
                               names_of(redop_at, names, sizeof(names)));
            o->redop = (symaddr_redop_t)k;
            break;
        case 'r':
            if (parse_int(v, 0, 1 << 30, &o->root))
                return bad_arg(rank, "invalid root '%s' for -r: a rank from 0", v);
            break;
        case 'z':
            if (parse_int(v, 0, 1, &o->blocking))
                return bad_arg(rank, "invalid value '%s' for -z: 0 or 1", v);
            break;
        case 'G':
            if (parse_int(v, 0, 1 << 20, &o->graph))
                return bad_arg(rank, "invalid count '%s' for -G: graph launches, from 0", v);
            break;
        case OPT_GRAPH: o->graph = 1; break;
        case 'R':
            if (parse_int(v, 1, BENCH_ROUNDS_MAX, &o->rounds))
                return bad_arg(rank, "invalid count '%s' for -R: 1 to %d", v, BENCH_ROUNDS_MAX);
            break;
        case 'a':
            if ((k = lookup_name(algo_at, v)) < 0)
                return bad_arg(rank, "invalid algorithm '%s': one of %s", v,
                               names_of(algo_at, names, sizeof(names)));
            o->algo = (symaddr_allreduce_algo_t)k;
            break;
        case 'p':
            if ((k = lookup_name(provider_at, v)) < 0)
                return bad_arg(rank, "invalid provider '%s': one of %s", v,
                               names_of(provider_at, names, sizeof(names)));
            o->provider = bench_providers[k];
            break;
        case 'B':
            if ((k = lookup_name(backend_at, v)) < 0)
                return bad_arg(rank, "invalid backend '%s': one of %s", v,
                               names_of(backend_at, names, sizeof(names)));
            o->backend = (symaddr_backend_kind_t)k;
            break;
        case 'C':
            if (strcmp(v, "mpi") && strcmp(v, "nccl") && strcmp(v, "rccl") && strcmp(v, "nvshmem"))
                return bad_arg(
                    rank, "invalid reference '%s' for --compare: mpi, nccl, rccl or nvshmem", v);
            o->compare = v;
            break;
        case 'J': o->json = v; break;
        case 'S': o->csv = v; break;
        case OPT_ONE_PAIR: o->one_pair = 1; break;
        case OPT_THREADS:
            if (parse_int(v, 1, 64, &o->threads))
                return bad_arg(rank, "invalid count '%s' for --threads: 1 to 64", v);
            break;
        case 'h':
            if (rank == 0)
                usage(stdout);
            return 1;
        case ':': return bad_arg(rank, "option %s needs a value", argv[optind - 1]);
        default:
            if (optopt && strchr("befinwdorzGRapBCJS", optopt))
                return bad_arg(rank, "option -%c needs a value", optopt);
            if (optopt)
                return bad_arg(rank, "invalid option '-%c'", optopt);
            return bad_arg(rank, "invalid option '%s'", argv[optind - 1]);
        }
    }
    for (; optind < argc; optind++) {
        if (o->op)
            return bad_arg(rank, "one OP only: '%s' after '%s'", argv[optind], o->op);
        if (!bench_op_known(argv[optind])) {
            if (rank == 0) {
                fprintf(stderr, "symaddr-bench: invalid OP '%s'; the ops:", argv[optind]);
                bench_ops_print(stderr);
                fprintf(stderr, "\n");
            }
            return 2;
        }
        o->op = argv[optind];
    }
    if (!o->op) {
        if (rank == 0)
            usage(stderr);
        return 2;
    }
    if (o->min == 0 || o->max < o->min)
        return bad_arg(rank, "sizes: -b must be at least 1 and -e at least -b (got %zu and %zu)",
                       o->min, o->max);
    return 0;
}

/* The size after s: s + step, or s * factor. */
static double next_size(const opts_t *o, double s)
{
    return o->step ? s + (double)o->step : s * o->factor;
}

/* ---- the --json file: a table through the tools' one JSON writer -------------------------- */

/* {"key": value, ..., "rows": [{"key": number, ...}, ...]}; inactive when f is NULL. */
static void json_open(json_out_t *j, const char *path)
{
    FILE *f = path ? fopen(path, "w") : NULL;
    if (path && !f)
        fprintf(stderr, "symaddr-bench: cannot write %s: %s\n", path, strerror(errno));
    json_init(j, f);
    json_begin(j, '{', 0);
}

static void json_row(json_out_t *j)
{
    if (!j->f)
        return;
    if (!j->rows++) {
        json_key(j, "rows");
        json_begin(j, '[', 0);
    }
    json_begin(j, '{', 1);
}

static void json_row_end(json_out_t *j) { json_end(j, '}'); }

static void json_close(json_out_t *j)
{
    if (!j->f)
        return;
    if (!j->rows) {
        json_key(j, "rows");
        json_begin(j, '[', 0);
    }
    json_end(j, ']');
    json_end(j, '}');
    fputc('\n', j->f);
    fclose(j->f);
    j->f = NULL;
}

/* ---- the reference libraries' loader ------------------------------------------------------ */

#if defined(SYMADDR_BENCH_NCCL) || defined(SYMADDR_BENCH_NVSHMEM)
/* One symbol of a reference library and where its address goes. */
typedef struct {
    void **slot;
    const char *name;
} ref_sym_t;

/* dlopen @p soname (RTLD_GLOBAL) and fill @p n slots from it, agreed over the context's ranks:
 * 0 when every rank has them all; else why, in @p why (@p hint: where the library lies). */
static int ref_load(symaddr_context_t *ctx, const char *soname, const char *what, const char *hint,
                    const ref_sym_t *syms, size_t n, char *why, size_t len)
{
    void *h = dlopen(soname, RTLD_NOW | RTLD_GLOBAL);
    int ok = h != NULL, all_ok;
    if (!h)
        snprintf(why, len, "cannot load %s (%s); add %s to LD_LIBRARY_PATH", soname, dlerror(),
                 hint);
    for (size_t i = 0; i < n && ok; i++)
        if (!(*syms[i].slot = dlsym(h, syms[i].name))) {
            snprintf(why, len, "%s has no %s: too old for this build", soname, syms[i].name);
            ok = 0;
        }
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, symaddr_comm(ctx));
    if (!all_ok && ok)
        snprintf(why, len, "another rank could not load %s", what);
    return !all_ok;
}
#define REF_SYM(table, field, name)                                                                \
    {                                                                                              \
        (void **)&table.field, #name                                                               \
    }
#endif

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
    decltype(&ncclReduce) reduce;
    decltype(&ncclAlltoAll) all_to_all;
} nccl;

/* 0 on success; else why, in @p why. Collective over the context's communicator. */
static int nccl_open(symaddr_context_t *ctx, char *why, size_t len)
{
    static const ref_sym_t syms[] = {
        REF_SYM(nccl, get_unique_id, ncclGetUniqueId),
        REF_SYM(nccl, comm_init_rank, ncclCommInitRank),
        REF_SYM(nccl, comm_destroy, ncclCommDestroy),
        REF_SYM(nccl, error_string, ncclGetErrorString),
        REF_SYM(nccl, all_reduce, ncclAllReduce),
        REF_SYM(nccl, all_gather, ncclAllGather),
        REF_SYM(nccl, reduce_scatter, ncclReduceScatter),
        REF_SYM(nccl, broadcast, ncclBroadcast),
        REF_SYM(nccl, reduce, ncclReduce),
        REF_SYM(nccl, all_to_all, ncclAlltoAll),
    };
    if (ref_load(ctx, "libnccl.so.2", "NCCL", "its folder", syms, sizeof(syms) / sizeof(syms[0]),
                 why, len))
        return 1;
    int ok, all_ok;
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

/* ---- NVSHMEM as the reference: its host library loaded at run time ----------------------- */

/* Whether --compare names NVSHMEM (whatever this build has). */
static int with_nvshmem(const opts_t *o) { return o->compare && !strcmp(o->compare, "nvshmem"); }

#if defined(SYMADDR_BENCH_NVSHMEM)
static struct {
    int on; /* initialised: finalise at the end */
    decltype(&nvshmemx_get_uniqueid) get_uniqueid;
    decltype(&nvshmemx_set_attr_uniqueid_args) set_uniqueid_args;
    decltype(&nvshmemx_hostlib_init_attr) init;
    decltype(&nvshmemx_hostlib_finalize) finalize;
    decltype(&nvshmem_malloc) malloc;
    decltype(&nvshmem_free) free;
    decltype(&nvshmemx_putmem_on_stream) put;
    decltype(&nvshmemx_getmem_on_stream) get;
    decltype(&nvshmemx_float_sum_reduce_on_stream) sum_f32;
    decltype(&nvshmemx_half_sum_reduce_on_stream) sum_f16;
    decltype(&nvshmemx_bfloat16_sum_reduce_on_stream) sum_bf16;
} nvsh;

/* 0 on success; else why, in @p why. Collective: NVSHMEM started by unique id over the
 * context's communicator (no NVSHMEM launcher), its heap sized for @p heap bytes unless
 * NVSHMEM_SYMMETRIC_SIZE says otherwise. @p shared_coll: ranks share a GPU and the run times a
 * collective, which NVSHMEM aborts (not refuses) in its "limited MPG" mode: so MPS must be on,
 * and NVSHMEM is asked for its full mode without capping each process's SMs
 * (NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 unless set), which symaddr's kernels have
 * whole too. */
static int nvshmem_open(symaddr_context_t *ctx, size_t heap, int shared_coll, char *why, size_t len)
{
    char size_s[32];
    snprintf(size_s, sizeof(size_s), "%zu", heap + ((size_t)64 << 20));
    setenv("NVSHMEM_SYMMETRIC_SIZE", size_s, 0);
    if (shared_coll) {
        int mps = 0, all_mps;
        cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled, symaddr_device(ctx));
        MPI_Allreduce(&mps, &all_mps, 1, MPI_INT, MPI_MIN, symaddr_comm(ctx));
        if (!all_mps) {
            snprintf(why, len,
                     "NVSHMEM runs no collective where ranks share a GPU without MPS (its "
                     "'limited MPG' mode aborts them): start the MPS server "
                     "(nvidia-cuda-mps-control -d), or time put and get");
            return 1;
        }
        setenv("NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "1", 0);
    }
    static const ref_sym_t syms[] = {
        REF_SYM(nvsh, get_uniqueid, nvshmemx_get_uniqueid),
        REF_SYM(nvsh, set_uniqueid_args, nvshmemx_set_attr_uniqueid_args),
        REF_SYM(nvsh, init, nvshmemx_hostlib_init_attr),
        REF_SYM(nvsh, finalize, nvshmemx_hostlib_finalize),
        REF_SYM(nvsh, malloc, nvshmem_malloc),
        REF_SYM(nvsh, free, nvshmem_free),
        REF_SYM(nvsh, put, nvshmemx_putmem_on_stream),
        REF_SYM(nvsh, get, nvshmemx_getmem_on_stream),
        REF_SYM(nvsh, sum_f32, nvshmemx_float_sum_reduce_on_stream),
        REF_SYM(nvsh, sum_f16, nvshmemx_half_sum_reduce_on_stream),
        REF_SYM(nvsh, sum_bf16, nvshmemx_bfloat16_sum_reduce_on_stream),
    };
    if (ref_load(ctx, "libnvshmem_host.so.3", "NVSHMEM",
                 "its folder (the pip package nvidia/nvshmem/lib)", syms,
                 sizeof(syms) / sizeof(syms[0]), why, len))
        return 1;
    int ok, all_ok;
    nvshmemx_uniqueid_t id = NVSHMEMX_UNIQUEID_INITIALIZER;
    nvshmemx_init_attr_t attr = NVSHMEMX_INIT_ATTR_INITIALIZER;
    int st = 0;
    if (symaddr_rank(ctx) == 0)
        st = nvsh.get_uniqueid(&id);
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, symaddr_comm(ctx));
    if (st == 0)
        st = nvsh.set_uniqueid_args(symaddr_rank(ctx), symaddr_size(ctx), &id, &attr);
    if (st == 0)
        st = nvsh.init(NVSHMEMX_INIT_WITH_UNIQUEID, &attr);
    ok = st == 0;
    nvsh.on = ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, symaddr_comm(ctx));
    if (!all_ok) {
        snprintf(why, len,
                 "NVSHMEM's initialisation failed (%s; several ranks on one GPU need the MPS "
                 "server)",
                 ok ? "on another rank" : "here");
        return 1;
    }
    return 0;
}

static void nvshmem_close(void)
{
    if (nvsh.on)
        nvsh.finalize();
    nvsh.on = 0;
}

/* @p bytes of NVSHMEM's symmetric memory, registered with symaddr (symaddr_register_nvshmem):
 * the buffers both libraries run on. Collective. */
static symaddr_status_t nvshmem_buffer(symaddr_context_t *ctx, size_t bytes, char **p,
                                       symaddr_map_t **m)
{
    *p = (char *)nvsh.malloc(bytes);
    int ok = *p != NULL, all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, symaddr_comm(ctx));
    if (!all_ok)
        return SYMADDR_ERR_NO_MEMORY;
    return symaddr_register_nvshmem(ctx, *p, bytes, m);
}

static void nvshmem_buffer_free(symaddr_context_t *ctx, char *p, symaddr_map_t *m)
{
    if (m)
        symaddr_unregister(ctx, m);
    if (p)
        nvsh.free(p);
}
#else
static void nvshmem_close(void) {}
#endif

/* A buffer of @p bytes both symaddr and the reference run on: NVSHMEM's, registered, where
 * @p nvshmem (--compare nvshmem), else symaddr's own from @p prov. Collective. */
static symaddr_status_t bench_buffer(symaddr_context_t *ctx, int nvshmem, symaddr_provider_t *prov,
                                     size_t bytes, char **p, symaddr_map_t **m)
{
#if defined(SYMADDR_BENCH_NVSHMEM)
    if (nvshmem)
        return nvshmem_buffer(ctx, bytes, p, m);
#else
    (void)ctx;
    (void)nvshmem;
#endif
    return symaddr_symmetric_alloc(prov, bytes, (void **)p, m);
}

/* Frees what bench_buffer gave (@p p NULL: nothing). */
static void bench_buffer_free(symaddr_context_t *ctx, int nvshmem, symaddr_provider_t *prov,
                              char *p, symaddr_map_t *m)
{
#if defined(SYMADDR_BENCH_NVSHMEM)
    if (nvshmem) {
        nvshmem_buffer_free(ctx, p, m);
        return;
    }
#else
    (void)ctx;
    (void)nvshmem;
    (void)m;
#endif
    if (p)
        symaddr_symmetric_free(prov, p);
}

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
        int shared = 0; /* ranks of this node share a GPU */
        for (int i = 0; i < nsize && !why[0]; i++)
            for (int j = i + 1; j < nsize && !why[0]; j++)
                if (devs[i] == devs[j] && !(shared = with_nvshmem(o)))
                    snprintf(why, sizeof(why),
                             "%s refuses two ranks on one GPU (node ranks %d and %d both use "
                             "device %d); run one rank per GPU",
                             o->compare, i, j, devs[i]);
        MPI_Allreduce(MPI_IN_PLACE, &shared, 1, MPI_INT, MPI_MAX, symaddr_comm(ctx));
        MPI_Comm_free(&node);
        free(devs);
#if defined(SYMADDR_BENCH_NCCL)
        if (!why[0] && !strcmp(o->compare, "nccl") && nccl_open(ctx, why, sizeof(why)) == 0)
            return 1;
#endif
#if defined(SYMADDR_BENCH_NVSHMEM)
        if (!why[0] && with_nvshmem(o) &&
            nvshmem_open(ctx, 2 * o->max, shared && !strcmp(o->op, "allreduce"), why,
                         sizeof(why)) == 0)
            return 1;
#endif
        if (!why[0])
            snprintf(why, sizeof(why),
                     "--compare %s: this symaddr-bench was built without %s's header; "
                     "reconfigure with %s",
                     o->compare, o->compare,
                     with_nvshmem(o) ? "-Dnvshmem_root=DIR (the folder holding include/nvshmem.h)"
                                     : "-Dnccl_include=DIR (the folder holding nccl.h)");
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

/* Seconds per call: iters calls after the warm-up, in a loop, or with -G N as N replays of a
 * graph that captured them (after a warm-up replay); -z 1 syncs the stream after each. The same for
 * symaddr and for the reference library. Returns the first failing call's status,
 * SYMADDR_ERR_BACKEND when the graph cannot be made, else the final stream sync's. */
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
        if (st == SYMADDR_OK && o->blocking)
            st = symaddr_stream_sync(ctx, stream);
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
            for (int k = 0; k < o->graph; k++) {
                cudaGraphLaunch(gexec, s);
                if (o->blocking)
                    cudaStreamSynchronize(s);
            }
        }
        if (gexec)
            cudaGraphExecDestroy(gexec);
    }
#endif
    symaddr_status_t sst = symaddr_stream_sync(ctx, stream);
    *seconds_p = (MPI_Wtime() - t0) / o->iters / (o->graph ? o->graph : 1);
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
