/* SPDX-License-Identifier: MIT */
/* The cpu backend is the reference for the GPU ones: every collective and RMA path runs on a
 * cpu context and on a GPU context of the same process with the same random inputs, and the
 * bytes must match: integers exactly, and floats bit for bit too, since every backend reduces
 * in node-rank order with the same conversions. SKIP without a GPU backend and device. */
#include "harness.h"

#include <math.h>

static const size_t counts[] = {1, 7, 1001, 70001};
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))
#define MAXBYTES ((size_t)70001 * 8 * 8)

typedef struct side {
    symaddr_context_t *ctx;
    symaddr_provider_t *ipc;
    char *a, *b; /* symmetric, MAXBYTES each */
} side_t;

static void side_init(side_t *s, symaddr_backend_kind_t kind)
{
    symaddr_config_t cfg;
    symaddr_map_t *m;
    symaddr_config_default(&cfg);
    cfg.backend = kind;
    s->ctx = t_context(MPI_COMM_WORLD, &cfg);
    T_OK(s->ctx, symaddr_provider_get(s->ctx, SYMADDR_PROVIDER_IPC, &s->ipc));
    T_OK(s->ctx, symaddr_symmetric_alloc(s->ipc, MAXBYTES, (void **)&s->a, &m));
    T_OK(s->ctx, symaddr_symmetric_alloc(s->ipc, MAXBYTES, (void **)&s->b, &m));
}

static void side_fini(side_t *s)
{
    T_OK(s->ctx, symaddr_symmetric_free(s->ipc, s->a));
    T_OK(s->ctx, symaddr_symmetric_free(s->ipc, s->b));
    T_OK(s->ctx, symaddr_finalize(&s->ctx));
}

/* Random values of dt, small enough that no integer sum or product overflows. */
static void fill(void *h, symaddr_dtype_t dt, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        int v = (int)((seed >> 16) % 7) - 3;
        float f = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
        switch (dt) {
        case SYMADDR_INT32: ((int32_t *)h)[i] = v; break;
        case SYMADDR_UINT32: ((uint32_t *)h)[i] = (uint32_t)(v + 3); break;
        case SYMADDR_INT64: ((int64_t *)h)[i] = v; break;
        case SYMADDR_UINT64: ((uint64_t *)h)[i] = (uint64_t)(v + 3); break;
        case SYMADDR_FLOAT32: ((float *)h)[i] = f; break;
        case SYMADDR_FLOAT64: ((double *)h)[i] = f; break;
        default: { /* f16 and bf16: the bits of a value in range, no NaN */
            uint16_t bits = (uint16_t)(((seed >> 4) & 0x3fff) | ((seed & 1) << 15));
            ((uint16_t *)h)[i] = bits;
        }
        }
    }
}

/* Run one collective (c) on both sides with the same input and compare the outputs. */
enum {
    C_ALLREDUCE,
    C_REDUCE_SCATTER,
    C_REDUCE,
    C_ALLGATHER,
    C_BROADCAST,
    C_ALLTOALL,
    C_GATHER,
    C_SCATTER,
    C_PUT,
    C_GET
};
static const char *const cname[] = {
    "allreduce", "reduce_scatter", "reduce",  "allgather", "broadcast",
    "alltoall",  "gather",         "scatter", "put",       "get"};

static symaddr_status_t run(side_t *s, int c, size_t n, symaddr_dtype_t dt, symaddr_redop_t op)
{
    size_t es = symaddr_dtype_size(dt);
    switch (c) {
    case C_ALLREDUCE: return symaddr_allreduce(s->ctx, s->a, s->b, n, dt, op, NULL);
    case C_REDUCE_SCATTER: return symaddr_reduce_scatter(s->ctx, s->a, s->b, n, dt, op, NULL);
    case C_ALLGATHER: return symaddr_allgather(s->ctx, s->a, s->b, n, dt, NULL);
    case C_BROADCAST: return symaddr_broadcast(s->ctx, s->a, s->b, n, dt, t_size - 1, NULL);
    case C_ALLTOALL: return symaddr_alltoall(s->ctx, s->a, s->b, n, dt, NULL);
    case C_REDUCE: return symaddr_reduce(s->ctx, s->a, s->b, n, dt, op, t_size - 1, NULL);
    case C_GATHER: return symaddr_gather(s->ctx, s->a, s->b, n, dt, t_size - 1, NULL);
    case C_SCATTER: return symaddr_scatter(s->ctx, s->a, s->b, n, dt, t_size - 1, NULL);
    case C_PUT: return symaddr_put(s->ctx, s->b, s->a, n * es, (t_rank + 1) % t_size, NULL);
    default: return symaddr_get(s->ctx, s->b, s->a, n * es, (t_rank + 1) % t_size, NULL);
    }
}

static size_t in_elems(int c, size_t n)
{
    return c == C_REDUCE_SCATTER || c == C_ALLTOALL || c == C_SCATTER ? n * (size_t)t_size : n;
}

static size_t out_elems(int c, size_t n)
{
    return c == C_ALLGATHER || c == C_ALLTOALL || c == C_GATHER ? n * (size_t)t_size : n;
}

/* Run c on both sides with the input in, into outputs filled with a pattern first, and read
 * the outputs back into o1 (cpu) and o2: the first element where they differ, or out_elems. */
static size_t run_both(side_t *cpu, side_t *gpu, int c, size_t n, symaddr_dtype_t dt,
                       symaddr_redop_t op, const void *in, char *o1, char *o2)
{
    size_t es = symaddr_dtype_size(dt), ni = in_elems(c, n), no = out_elems(c, n);
    memset(o1, 0x5a, no * es);
    T_OK(cpu->ctx, symaddr_memcpy(cpu->ctx, cpu->a, in, ni * es));
    T_OK(gpu->ctx, symaddr_memcpy(gpu->ctx, gpu->a, in, ni * es));
    T_OK(cpu->ctx, symaddr_memcpy(cpu->ctx, cpu->b, o1, no * es));
    T_OK(gpu->ctx, symaddr_memcpy(gpu->ctx, gpu->b, o1, no * es));
    MPI_Barrier(MPI_COMM_WORLD);
    T_OK(cpu->ctx, run(cpu, c, n, dt, op));
    T_OK(gpu->ctx, run(gpu, c, n, dt, op));
    T_OK(cpu->ctx, symaddr_stream_sync(cpu->ctx, NULL));
    T_OK(gpu->ctx, symaddr_stream_sync(gpu->ctx, NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    T_OK(cpu->ctx, symaddr_memcpy(cpu->ctx, o1, cpu->b, no * es));
    T_OK(gpu->ctx, symaddr_memcpy(gpu->ctx, o2, gpu->b, no * es));
    size_t first = no;
    for (size_t i = 0; i < no && first == no; i++)
        if (memcmp(o1 + i * es, o2 + i * es, es) != 0)
            first = i;
    return first;
}

static void compare(side_t *cpu, side_t *gpu, int c, symaddr_dtype_t dt, symaddr_redop_t op)
{
    char *in = malloc(MAXBYTES), *o1 = malloc(MAXBYTES), *o2 = malloc(MAXBYTES);
    for (size_t k = 0; k < NCOUNTS; k++) {
        size_t n = counts[k];
        fill(in, dt, in_elems(c, n),
             (unsigned)(t_rank * 7919 + (int)dt * 131 + (int)op * 17 + (int)k));
        size_t first = run_both(cpu, gpu, c, n, dt, op, in, o1, o2);
        T_CHECK(first == out_elems(c, n),
                "%s %s op %d count %zu: cpu and %s differ first at element %zu", cname[c],
                symaddr_dtype_name(dt), (int)op, n, symaddr_backend_name(symaddr_backend(gpu->ctx)),
                first);
    }
    free(in);
    free(o1);
    free(o2);
}

/* f16 and bf16 values the GPU converts by other instructions than the common ones, mixed one in
 * eight into ordinary values: zeros, subnormals, the largest finite values (whose sums
 * overflow), infinities and NaNs with payloads. Sums and products see no NaN and no infinity of
 * either sign, since the arithmetic of each backend picks its own NaN bits (inf - inf, 0 * inf),
 * and products no value that could overflow; min and max pick an operand, so they see every
 * value. No pair of all-ones halves: Lamport sends that word with its lowest bit cleared. */
static const uint16_t f16_special[] = {0x0000, 0x8000, 0x0001, 0x83ff, 0x0400, 0x3c00, 0x7bff,
                                       0xfbff, 0x7c00, 0xfc00, 0x7c01, 0xfe00, 0x7d55, 0xfdff};
static const uint16_t bf16_special[] = {0x0000, 0x8000, 0x0001, 0x807f, 0x0080, 0x3f80, 0x7f7f,
                                        0xff7f, 0x7f80, 0xff80, 0x7f81, 0xffc0, 0x7faa, 0xffbf};
/* how many of the first values of each list a sum (finite) and a product (no overflow) see */
#define SUM_SPECIALS 8
#define PROD_SPECIALS 6

static void fill_special(void *h, symaddr_dtype_t dt, size_t n, unsigned seed, unsigned nsp)
{
    const uint16_t *sp = dt == SYMADDR_FLOAT16 ? f16_special : bf16_special;
    fill(h, dt, n, seed);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        if ((seed >> 12) % 8 == 0)
            ((uint16_t *)h)[i] = sp[(seed >> 16) % nsp];
    }
}

static void compare_special(side_t *cpu, side_t *gpu, int c, symaddr_dtype_t dt, symaddr_redop_t op)
{
    size_t n = 70001, no = out_elems(c, n);
    unsigned nsp = op == SYMADDR_SUM    ? SUM_SPECIALS
                   : op == SYMADDR_PROD ? PROD_SPECIALS
                                        : (unsigned)(sizeof(f16_special) / 2);
    uint16_t *in = malloc(in_elems(c, n) * 2), *o1 = malloc(no * 2), *o2 = malloc(no * 2);
    fill_special(in, dt, in_elems(c, n), (unsigned)(t_rank * 7919 + (int)dt * 131 + (int)op * 17),
                 nsp);
    size_t first = run_both(cpu, gpu, c, n, dt, op, in, (char *)o1, (char *)o2);
    T_CHECK(first == no,
            "%s %s op %d, special values: cpu and %s differ first at element %zu "
            "(%#06x against %#06x)",
            cname[c], symaddr_dtype_name(dt), (int)op,
            symaddr_backend_name(symaddr_backend(gpu->ctx)), first, first < no ? o1[first] : 0,
            first < no ? o2[first] : 0);
    free(in);
    free(o1);
    free(o2);
}

static side_t g_cpu, g_gpu;

/* The conversions of f16 and bf16 at their edges, in the tiles of the reduce-scatter and in
 * each allreduce algorithm the GPU picks at this size. */
static void test_special_values(void *u)
{
    (void)u;
    symaddr_dtype_t dts[] = {SYMADDR_FLOAT16, SYMADDR_BFLOAT16};
    for (int k = 0; k < 2; k++)
        for (int op = 0; op < SYMADDR_REDOP_COUNT_; op++) {
            compare_special(&g_cpu, &g_gpu, C_ALLREDUCE, dts[k], (symaddr_redop_t)op);
            compare_special(&g_cpu, &g_gpu, C_REDUCE_SCATTER, dts[k], (symaddr_redop_t)op);
        }
}

static void test_reductions(void *u)
{
    (void)u;
    for (int dt = 0; dt < SYMADDR_DTYPE_COUNT_; dt++)
        for (int op = 0; op < SYMADDR_REDOP_COUNT_; op++) {
            compare(&g_cpu, &g_gpu, C_ALLREDUCE, (symaddr_dtype_t)dt, (symaddr_redop_t)op);
            compare(&g_cpu, &g_gpu, C_REDUCE_SCATTER, (symaddr_dtype_t)dt, (symaddr_redop_t)op);
            compare(&g_cpu, &g_gpu, C_REDUCE, (symaddr_dtype_t)dt, (symaddr_redop_t)op);
        }
}

static void test_movement(void *u)
{
    (void)u;
    for (int dt = 0; dt < SYMADDR_DTYPE_COUNT_; dt++)
        for (int c = C_ALLGATHER; c <= C_GET; c++)
            compare(&g_cpu, &g_gpu, c, (symaddr_dtype_t)dt, SYMADDR_SUM);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    symaddr_backend_kind_t gpu = symaddr_backend_built(SYMADDR_BACKEND_CUDA) ? SYMADDR_BACKEND_CUDA
                                 : symaddr_backend_built(SYMADDR_BACKEND_HIP)
                                     ? SYMADDR_BACKEND_HIP
                                     : SYMADDR_BACKEND_AUTO;
    symaddr_config_t cfg;
    symaddr_context_t *probe = NULL;
    symaddr_config_default(&cfg);
    cfg.backend = gpu;
    if (gpu == SYMADDR_BACKEND_AUTO || symaddr_init(MPI_COMM_WORLD, &cfg, &probe) != SYMADDR_OK) {
        if (t_rank == 0)
            printf("skip   - all: no GPU backend %s; the cpu reference has nothing to check\n"
                   "0 passed, 0 failed, 1 skipped\n",
                   gpu == SYMADDR_BACKEND_AUTO ? "is built" : "can run here");
        MPI_Finalize();
        return 77;
    }
    symaddr_finalize(&probe);
    side_init(&g_cpu, SYMADDR_BACKEND_CPU);
    side_init(&g_gpu, gpu);
    if (t_rank == 0)
        printf("# cpu against %s, %d ranks\n", symaddr_backend_name(gpu), t_size);
    T_RUN(test_reductions, NULL);
    T_RUN(test_movement, NULL);
    T_RUN(test_special_values, NULL);
    side_fini(&g_cpu);
    side_fini(&g_gpu);
    return t_finish();
}
