/* SPDX-License-Identifier: MIT */
/* symaddr-bench: one MPI program for symaddr's benchmarks, nccl-tests style.
 *
 *   mpirun -np N symaddr-bench OP [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP]
 *          [-c 0|1] [-d DTYPE] [-o OP] [-r ROOT] ... (symaddr-bench --help lists them all:
 *          nccl-tests' flags, where they mean the same)
 *
 * put/get: every rank copies to (from) its right neighbour through the
 *   symmetric mapping; reference: the same kernel copying inside the rank's own
 *   allocation, in the same run.
 * translate: a copy kernel that translates every access against the same kernel
 *   given the raw peer pointer; the ratio is the cost of translation.
 * latency: ranks 0 and 1 ping-pong an 8-byte put plus a signal inside one
 *   kernel; the time is one way.
 * init: symaddr_init timed by phase (its TRACE line) against MPI_Init in the same job.
 * fused_rmsnorm: examples/allreduce_rmsnorm.h's fused kernel against the unfused pipeline
 *   (and NCCL's, with --compare nccl), bf16 [tokens, 6144] for tokens 1 to 128.
 * Times are the slowest rank's. The kernels are built for one backend (the GPU
 * one when configured; symaddr-bench-cpu is always the cpu build). */
#include <time.h>

#include "bench/harness.h"
#include "bench/rma.h"
#include "bench/coll.h"
#include "bench/alloc.h"
#include "bench/fused.h"

/* One row per op that is not a collective; the collectives are coll.h's rows. */
typedef struct bench_op {
    const char *name;
    int (*run)(symaddr_context_t *ctx, const opts_t *o);
} bench_op_t;

static const bench_op_t bench_ops[] = {
    {"put", run_copy},        {"get", run_copy},      {"translate", run_copy},
    {"latency", run_latency}, {"atomic", run_atomic}, {"alloc", run_alloc},
    {"lookup", run_lookup},   {"init", run_init},     {"fused_rmsnorm", run_fused},
};

static const bench_op_t *find_op(const char *name)
{
    for (size_t i = 0; i < sizeof(bench_ops) / sizeof(bench_ops[0]); i++)
        if (!strcmp(bench_ops[i].name, name))
            return &bench_ops[i];
    return NULL;
}

static int bench_op_known(const char *name) { return find_op(name) || find_coll(name); }

static void bench_ops_print(FILE *f)
{
    for (size_t i = 0; i < sizeof(bench_ops) / sizeof(bench_ops[0]); i++)
        fprintf(f, " %s", bench_ops[i].name);
    const bench_coll_t *colls;
    for (int i = 0, n = bench_colls_get(&colls); i < n; i++)
        fprintf(f, " %s", colls[i].name);
}

int main(int argc, char **argv)
{
    opts_t o;
    symaddr_context_t *ctx;

    /* --help and --version need no MPI (help2man makes the man page from them at build time) */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return usage(stdout), 0;
        if (!strcmp(argv[i], "--version")) {
            int major, minor, patch;
            symaddr_version(&major, &minor, &patch);
            printf("symaddr-bench (symaddr) %d.%d.%d\n", major, minor, patch);
            return 0;
        }
    }
    struct timespec t0, t1; /* MPI_Wtime needs MPI_Init first */
    clock_gettime(CLOCK_MONOTONIC, &t0);
    MPI_Init(&argc, &argv);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    g_mpi_init_seconds = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    int wrank;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    int rc = parse(argc, argv, &o, wrank);
    if (rc) {
        MPI_Finalize();
        return rc == 1 ? 0 : rc;
    }
    symaddr_config_t cfg;
    symaddr_config_default(&cfg);
    if (o.algo != SYMADDR_ALLREDUCE_AUTO)
        cfg.allreduce_algo = o.algo;
    if (o.backend != SYMADDR_BACKEND_AUTO)
        cfg.backend = o.backend;
    if (symaddr_init(MPI_COMM_WORLD, &cfg, &ctx) != SYMADDR_OK) {
        if (wrank == 0)
            fprintf(stderr, "symaddr-bench: symaddr_init: %s\n", symaddr_last_error(NULL));
        MPI_Finalize();
        return 1;
    }
    const bench_op_t *op = find_op(o.op);
    rc = op ? op->run(ctx, &o) : run_collective(ctx, &o);
    symaddr_finalize(&ctx);
    MPI_Finalize();
    return rc;
}
