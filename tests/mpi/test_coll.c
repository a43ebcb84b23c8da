/* SPDX-License-Identifier: MIT */
/* Collectives against MPI's own collectives on the same data (exact for
 * integers, a tolerance for floats; f16 and bf16 against a sequential
 * reference, MPI having no such types): every collective x dtype x op, odd
 * counts below and above the algorithm switch, in place, views, mixed
 * providers, a simulated 2-node layout, 1000 back-to-back allreduces, bad
 * arguments and a timeout. */
#include "core/algos.h"
#include "harness.h"

#include <math.h>

#define DT_NAME(E, name, bytes, T) #name,
static const char *const dt_names[] = {SYMADDR_DTYPE_LIST(DT_NAME)};
static const char *const op_names[] = {"sum", "prod", "min", "max"};
/* Odd counts; 70001 elements puts every dtype above the 256 KiB default switch but 16-bit. */
static const size_t counts[] = {1, 7, 1001, 70001};
#define NCOUNTS (sizeof(counts) / sizeof(counts[0]))
#define MAXCOUNT 70001
#define VIEW 3 /* odd element offset of every view */

/* ---- host values of each dtype ------------------------------------------------------------- */

static uint16_t to_bf16(double v)
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static double from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The test's values are small integers, which f16 holds exactly up to 2048. */
static uint16_t to_f16(double v)
{
    if (v == 0)
        return 0;
    uint16_t sign = v < 0 ? 0x8000 : 0;
    double a = fabs(v);
    int e = (int)floor(log2(a));
    double m = a / ldexp(1.0, e) - 1.0;
    return (uint16_t)(sign | ((e + 15) << 10) | (uint16_t)lround(m * 1024));
}

static double from_f16(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e ? ldexp(1.0 + m / 1024.0, e - 15) : ldexp(m / 1024.0, -14);
    return (h & 0x8000) ? -v : v;
}

static void put_value(symaddr_dtype_t dt, void *buf, size_t i, double v)
{
    switch (dt) {
    case SYMADDR_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case SYMADDR_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case SYMADDR_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case SYMADDR_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case SYMADDR_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case SYMADDR_FLOAT64: ((double *)buf)[i] = v; break;
    case SYMADDR_FLOAT16: ((uint16_t *)buf)[i] = to_f16(v); break;
    default: ((uint16_t *)buf)[i] = to_bf16(v); break;
    }
}

static double get_value(symaddr_dtype_t dt, const void *buf, size_t i)
{
    switch (dt) {
    case SYMADDR_INT32: return ((const int32_t *)buf)[i];
    case SYMADDR_UINT32: return ((const uint32_t *)buf)[i];
    case SYMADDR_INT64: return (double)((const int64_t *)buf)[i];
    case SYMADDR_UINT64: return (double)((const uint64_t *)buf)[i];
    case SYMADDR_FLOAT32: return ((const float *)buf)[i];
    case SYMADDR_FLOAT64: return ((const double *)buf)[i];
    case SYMADDR_FLOAT16: return from_f16(((const uint16_t *)buf)[i]);
    default: return from_bf16(((const uint16_t *)buf)[i]);
    }
}

static int is_signed(symaddr_dtype_t dt) { return dt != SYMADDR_UINT32 && dt != SYMADDR_UINT64; }

/* Distinct per rank, exact in every dtype, and no overflow under op across 8+ ranks. */
static double gen(symaddr_dtype_t dt, int op, int rank, size_t i)
{
    switch (op) {
    case SYMADDR_SUM: return (double)((rank + 1) * (int)(i % 7 + 1));
    case SYMADDR_PROD: return (double)(((size_t)rank + i) % 3 == 0 ? 2 : 1);
    default: {
        int v = (int)((rank * 37 + (int)(i % 1000) * 13) % 101);
        return is_signed(dt) ? v - 50 : v;
    }
    }
}

static MPI_Datatype mpi_type(symaddr_dtype_t dt)
{
    static const MPI_Datatype t[] = {MPI_INT32_T,  MPI_UINT32_T, MPI_INT64_T,
                                     MPI_UINT64_T, MPI_FLOAT,    MPI_DOUBLE};
    return dt < SYMADDR_FLOAT16 ? t[dt] : MPI_DATATYPE_NULL;
}

static MPI_Op mpi_op(int op)
{
    static const MPI_Op o[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
    return o[op];
}

static double apply(int op, double a, double b)
{
    switch (op) {
    case SYMADDR_SUM: return a + b;
    case SYMADDR_PROD: return a * b;
    case SYMADDR_MIN: return b < a ? b : a;
    default: return b > a ? b : a;
    }
}

/* Elements of got that differ from want beyond the dtype's tolerance. */
static long mismatches(symaddr_dtype_t dt, const void *got, const void *want, size_t n)
{
    double tol = dt == SYMADDR_FLOAT16    ? 1e-3
                 : dt == SYMADDR_BFLOAT16 ? 1e-2
                 : dt >= SYMADDR_FLOAT32  ? 1e-6
                                          : 0;
    long bad = 0;
    for (size_t i = 0; i < n; i++) {
        double g = get_value(dt, got, i), w = get_value(dt, want, i);
        int wrong = tol == 0 ? memcmp((const char *)got + i * symaddr_dtype_size(dt),
                                      (const char *)want + i * symaddr_dtype_size(dt),
                                      symaddr_dtype_size(dt)) != 0
                             : !(fabs(g - w) <= tol * fmax(1.0, fabs(w)));
        if (wrong && bad == 0)
            fprintf(stderr, "[rank %d] first wrong element %zu of %zu: got %g, want %g\n", t_rank,
                    i, n, g, w);
        bad += wrong;
    }
    return bad;
}

/* Sequential reduction of every rank's host input, for the types MPI lacks. */
static void seq_reduce(symaddr_dtype_t dt, int op, const void *mine, void *out, size_t n,
                       size_t stride_off)
{
    size_t esz = symaddr_dtype_size(dt), bytes = n * esz;
    char *all = malloc(bytes * (size_t)t_size);
    MPI_Allgather((const char *)mine + stride_off, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE,
                  MPI_COMM_WORLD);
    for (size_t i = 0; i < n; i++) {
        double acc = get_value(dt, all, i);
        for (int r = 1; r < t_size; r++)
            acc = apply(op, acc, get_value(dt, all + bytes * (size_t)r, i));
        put_value(dt, out, i, acc);
    }
    free(all);
}

/* ---- fixture --------------------------------------------------------------------------------- */

typedef struct fix {
    symaddr_context_t *ctx;
    symaddr_provider_t *heap, *ipc;
    char *a, *b; /* symmetric, from two providers, MAXCOUNT * size * 8 bytes + a view offset */
    char *h_in, *h_out, *h_ref;
    size_t cap;
} fix_t;

static void fix_init_cap(fix_t *f, symaddr_context_t *ctx, size_t cap)
{
    symaddr_map_t *m;
    f->ctx = ctx;
    f->cap = cap;
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_HEAP, &f->heap));
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &f->ipc));
    T_OK(ctx, symaddr_symmetric_alloc(f->ipc, f->cap, (void **)&f->a, &m));
    T_OK(ctx, symaddr_symmetric_alloc(f->ipc, f->cap, (void **)&f->b, &m));
    f->h_in = malloc(f->cap);
    f->h_out = malloc(f->cap);
    f->h_ref = malloc(f->cap);
}

static void fix_init(fix_t *f, symaddr_context_t *ctx)
{
    fix_init_cap(f, ctx, (MAXCOUNT + VIEW) * sizeof(double) * (size_t)t_size);
}

static void fix_fini(fix_t *f)
{
    T_OK(f->ctx, symaddr_symmetric_free(f->ipc, f->a));
    T_OK(f->ctx, symaddr_symmetric_free(f->ipc, f->b));
    free(f->h_in);
    free(f->h_out);
    free(f->h_ref);
}

static void upload(fix_t *f, void *dev, size_t bytes)
{
    T_OK(f->ctx, symaddr_memcpy(f->ctx, dev, f->h_in, bytes));
}

static void download(fix_t *f, const void *dev, size_t bytes)
{
    T_OK(f->ctx, symaddr_stream_sync(f->ctx, NULL));
    T_OK(f->ctx, symaddr_memcpy(f->ctx, f->h_out, dev, bytes));
}

/* ---- allreduce ------------------------------------------------------------------------------- */

/* One allreduce of count elements: views at VIEW elements into a (send) and b (recv). */
static long one_allreduce(fix_t *f, symaddr_dtype_t dt, int op, size_t n, int inplace)
{
    size_t esz = symaddr_dtype_size(dt), bytes = n * esz;
    char *send = f->a + VIEW * esz, *recv = inplace ? send : f->b + VIEW * esz;
    for (size_t i = 0; i < n; i++)
        put_value(dt, f->h_in, i, gen(dt, op, t_rank, i));
    upload(f, send, bytes);
    if (mpi_type(dt) != MPI_DATATYPE_NULL)
        MPI_Allreduce(f->h_in, f->h_ref, (int)n, mpi_type(dt), mpi_op(op), MPI_COMM_WORLD);
    else
        seq_reduce(dt, op, f->h_in, f->h_ref, n, 0);
    T_OK(f->ctx, symaddr_allreduce(f->ctx, send, recv, n, dt, (symaddr_redop_t)op, NULL));
    download(f, recv, bytes);
    MPI_Barrier(MPI_COMM_WORLD); /* the next case overwrites send */
    return mismatches(dt, f->h_out, f->h_ref, n);
}

static void allreduce_matrix(symaddr_allreduce_algo_t algo)
{
    symaddr_config_t cfg;
    symaddr_context_t *ctx;
    fix_t f;
    symaddr_config_default(&cfg);
    cfg.allreduce_algo = algo;
    ctx = t_context(MPI_COMM_WORLD, &cfg);
    fix_init(&f, ctx);
    for (int dt = 0; dt < SYMADDR_DTYPE_COUNT_; dt++)
        for (int op = 0; op < SYMADDR_REDOP_COUNT_; op++)
            for (size_t c = 0; c < NCOUNTS; c++) {
                long bad = one_allreduce(&f, (symaddr_dtype_t)dt, op, counts[c], c % 2);
                T_CHECK(bad == 0, "allreduce %s %s count %zu%s: %ld wrong", dt_names[dt],
                        op_names[op], counts[c], c % 2 ? " in place" : "", bad);
            }
    fix_fini(&f);
    T_OK(ctx, symaddr_finalize(&ctx));
}

static void test_allreduce_auto(void *u)
{
    (void)u;
    allreduce_matrix(SYMADDR_ALLREDUCE_AUTO);
}
static void test_allreduce_oneshot(void *u)
{
    (void)u;
    allreduce_matrix(SYMADDR_ALLREDUCE_ONESHOT);
}
static void test_allreduce_twoshot(void *u)
{
    (void)u;
    allreduce_matrix(SYMADDR_ALLREDUCE_TWOSHOT);
}
static void test_allreduce_twoshot_get(void *u)
{
    (void)u;
    allreduce_matrix(SYMADDR_ALLREDUCE_TWOSHOT_GET);
}
static void test_allreduce_twoshot_copy(void *u)
{
    (void)u;
    allreduce_matrix(SYMADDR_ALLREDUCE_TWOSHOT_COPY);
}
static void test_allreduce_ll(void *u)
{
    (void)u;
    allreduce_matrix(SYMADDR_ALLREDUCE_LL);
}
static void test_allreduce_lamport(void *u)
{
    (void)u;
    allreduce_matrix(SYMADDR_ALLREDUCE_LAMPORT); /* integers and f64 take LL */
}

/* Lamport at its largest message, a whole slot less the chunk of the call's identity (2 MiB
 * between 2 ranks), and just past it (it takes the next algorithm), for f32, f16 and bf16, in
 * place and out. */
static void test_allreduce_lamport_slot(void *u)
{
    static const symaddr_dtype_t dts[] = {SYMADDR_FLOAT32, SYMADDR_FLOAT16, SYMADDR_BFLOAT16};
    symaddr_config_t cfg;
    symaddr_context_t *ctx;
    symaddr_team_t team;
    fix_t f;
    (void)u;
    symaddr_config_default(&cfg);
    cfg.allreduce_algo = SYMADDR_ALLREDUCE_LAMPORT;
    ctx = t_context(MPI_COMM_WORLD, &cfg);
    T_OK(ctx, symaddr_team_get(ctx, &team));
    size_t largest = team.lamport_slot - 16;
    fix_init_cap(&f, ctx, largest + 64 * sizeof(double));
    for (size_t k = 0; k < sizeof(dts) / sizeof(dts[0]); k++) {
        size_t es = symaddr_dtype_size(dts[k]);
        size_t ns[] = {largest / es, largest / es - 3, largest / es + 5};
        for (int c = 0; c < 3; c++) {
            long bad = one_allreduce(&f, dts[k], SYMADDR_SUM, ns[c], c == 1);
            T_CHECK(bad == 0, "lamport allreduce %s sum count %zu (largest %llu B)%s: %ld wrong",
                    dt_names[dts[k]], ns[c], (unsigned long long)largest, c == 1 ? " in place" : "",
                    bad);
        }
    }
    fix_fini(&f);
    T_OK(ctx, symaddr_finalize(&ctx));
}

/* f32 allreduce (sum) of n elements with values v(rank, i) from view offset off; the number of
 * elements whose bits differ from the sequential sum in rank order. */
static long f32_sum_case(fix_t *f, size_t n, size_t off, float (*v)(int r, size_t i, int k), int k)
{
    float *send = (float *)f->a + off, *recv = (float *)f->b + off, *in = (float *)f->h_in;
    for (size_t i = 0; i < n; i++)
        in[i] = v(t_rank, i, k);
    upload(f, send, n * sizeof(float));
    MPI_Barrier(MPI_COMM_WORLD);
    T_OK(f->ctx, symaddr_allreduce(f->ctx, send, recv, n, SYMADDR_FLOAT32, SYMADDR_SUM, NULL));
    download(f, recv, n * sizeof(float));
    MPI_Barrier(MPI_COMM_WORLD);
    long bad = 0;
    for (size_t i = 0; i < n; i++) {
        float want = v(0, i, k), got;
        for (int r = 1; r < t_size; r++)
            want += v(r, i, k);
        memcpy(&got, (float *)f->h_out + i, sizeof(got));
        uint32_t a, b;
        memcpy(&a, &want, 4);
        memcpy(&b, &got, 4);
        bad += isnan(want) ? !isnan(got) : a != b;
    }
    return bad;
}

static float v_marker(int r, size_t i, int k)
{
    uint32_t u;
    float x;
    (void)k;
    switch (i % 5) {
    case 0: u = r == 0 ? 0xffffffffu : 0x3f800000u; break; /* Lamport's "empty", as data */
    case 1: u = 0x80000000u; break;                        /* -0.0 on every rank */
    case 2: u = 0xfffffffeu; break;                        /* the NaN it is sent as */
    default: return (float)((r + 1) * (int)(i + 1));
    }
    memcpy(&x, &u, 4);
    return x;
}

static float v_call(int r, size_t i, int k) { return (float)((r + 1) + 16 * (int)i + 4096 * k); }

/* Lamport: data that looks like its marker, -0.0 kept, aligned and odd views, and sizes that
 * shrink and grow between calls (a slot left full by a larger call would be read as arrived),
 * forced and mixed with the other algorithms by auto. */
static void test_lamport(void *u)
{
    static const size_t sizes[] = {1001, 3, 1001, 1, 257, 1001, 2, 64, 1001};
    static const size_t mixed[] = {5, 20000, 31, 3, 20000, 7, 1, 20000, 30};
    (void)u;
    for (int automatic = 0; automatic < 2; automatic++) {
        symaddr_config_t cfg;
        fix_t f;
        symaddr_config_default(&cfg);
        cfg.allreduce_algo = automatic ? SYMADDR_ALLREDUCE_AUTO : SYMADDR_ALLREDUCE_LAMPORT;
        symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, &cfg);
        fix_init(&f, ctx);
        for (size_t off = 0; off < 2 && !automatic; off++) {
            long bad = f32_sum_case(&f, 1001, off ? VIEW : 0, v_marker, 0);
            T_CHECK(bad == 0, "marker-like data, view %zu: %ld wrong", off ? VIEW : 0, bad);
        }
        const size_t *seq = automatic ? mixed : sizes;
        for (int k = 0; k < 3 * 9; k++) {
            size_t n = seq[k % 9];
            long bad = f32_sum_case(&f, n, k % 2 ? VIEW : 0, v_call, k);
            T_CHECK(bad == 0, "%s call %d of %zu: %ld wrong", automatic ? "auto" : "lamport", k, n,
                    bad);
        }
        fix_fini(&f);
        T_OK(ctx, symaddr_finalize(&ctx));
    }
}

/* symaddr.h's promise on NaNs and rounding, through every algorithm: f32 sums of values that
 * round (so that the order of the sum shows in the bits), and NaNs of distinct signs and
 * payloads on some ranks, against the sequential sum in rank order. A result that is not a NaN
 * has the reference's bits on every algorithm; a NaN is a NaN, its sign and payload undefined:
 * how many of those differ from the reference's is printed (cpu, 2-4 ranks: Lamport about 40%,
 * the others none). */
static float v_nan(int r, size_t i, int k)
{
    uint32_t u;
    float x;
    (void)k;
    switch (i % 6) {
    case 0: u = 0x7fc00000u | (uint32_t)(r + 1) << 4 | (uint32_t)i; break; /* every rank */
    case 1: u = r == 1 % t_size ? 0xffc00123u : 0x3f800000u; break;        /* one rank */
    case 2: u = r == 0 ? 0x7fa00001u : 0xbf800000u; break;                 /* signalling */
    case 3: u = r == t_size - 1 ? 0xffffffffu : 0x40000000u; break;        /* Lamport's empty */
    default: return 1.0f / (float)(r + 3) + (float)i * 0.001f;             /* rounds */
    }
    memcpy(&x, &u, 4);
    return x;
}

static void test_nan_bits(void *u)
{
    (void)u;
    for (int a = SYMADDR_ALLREDUCE_ONESHOT; a < SYMADDR_ALLREDUCE_ALGO_COUNT_; a++) {
        symaddr_config_t cfg;
        fix_t f;
        symaddr_config_default(&cfg);
        cfg.allreduce_algo = (symaddr_allreduce_algo_t)a;
        symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, &cfg);
        fix_init(&f, ctx);
        size_t n = 1003;
        float *send = (float *)f.a, *recv = (float *)f.b, *in = (float *)f.h_in;
        for (size_t i = 0; i < n; i++)
            in[i] = v_nan(t_rank, i, 0);
        upload(&f, send, n * sizeof(float));
        MPI_Barrier(MPI_COMM_WORLD);
        T_OK(ctx, symaddr_allreduce(ctx, send, recv, n, SYMADDR_FLOAT32, SYMADDR_SUM, NULL));
        download(&f, recv, n * sizeof(float));
        /* symaddr.h's order: each node's ranks in node-rank order, then the nodes' sums in the
         * order of their first ranks (one node: rank order) */
        const symaddr_locality_t *loc;
        T_OK(ctx, symaddr_locality_get(ctx, &loc));
        int *leader = malloc(sizeof(int) * (size_t)t_size);
        MPI_Allgather(&loc->node_ranks[0], 1, MPI_INT, leader, 1, MPI_INT, MPI_COMM_WORLD);
        long wrong = 0, nan_bits = 0, nans = 0;
        for (size_t i = 0; i < n; i++) {
            float want = 0, got;
            for (int l = 0; l < t_size; l++) { /* l: a node's first rank, in order */
                if (leader[l] != l)
                    continue;
                float node = v_nan(l, i, 0);
                for (int r = l + 1; r < t_size; r++)
                    if (leader[r] == l)
                        node += v_nan(r, i, 0);
                want = l == 0 ? node : want + node;
            }
            memcpy(&got, (float *)f.h_out + i, sizeof(got));
            uint32_t wb, gb;
            memcpy(&wb, &want, 4);
            memcpy(&gb, &got, 4);
            if (isnan(want)) {
                nans++;
                wrong += !isnan(got);
                nan_bits += gb != wb;
            } else {
                wrong += gb != wb;
            }
        }
        T_CHECK(wrong == 0, "%s: %ld of %zu wrong (a NaN lost, or a number's bits differ)",
                symaddr_allreduce_algo_name((symaddr_allreduce_algo_t)a), wrong, n);
        if (t_rank == 0)
            printf("# NaN bits, %s: %ld of %ld NaN results differ from the reference's in sign or "
                   "payload\n",
                   symaddr_allreduce_algo_name((symaddr_allreduce_algo_t)a), nan_bits, nans);
        free(leader);
        fix_fini(&f);
        T_OK(ctx, symaddr_finalize(&ctx));
    }
}

/* ---- the other collectives ------------------------------------------------------------------ */

/* reduce, gather and scatter to and from root, against MPI's (or, for the types MPI lacks,
 * a sequential reduction); only the root's result of reduce and gather is defined. */
static void run_rooted(fix_t *f, symaddr_dtype_t dt, int op, size_t n, int root)
{
    size_t esz = symaddr_dtype_size(dt), bytes = n * esz, all = bytes * (size_t)t_size;
    char *send = f->a + VIEW * esz, *recv = f->b + VIEW * esz;
    long bad = 0;

    /* reduce */
    for (size_t i = 0; i < n; i++)
        put_value(dt, f->h_in, i, gen(dt, op, t_rank, i));
    upload(f, send, bytes);
    if (mpi_type(dt) != MPI_DATATYPE_NULL)
        MPI_Reduce(f->h_in, f->h_ref, (int)n, mpi_type(dt), mpi_op(op), root, MPI_COMM_WORLD);
    else
        seq_reduce(dt, op, f->h_in, f->h_ref, n, 0);
    T_OK(f->ctx, symaddr_reduce(f->ctx, send, recv, n, dt, (symaddr_redop_t)op, root, NULL));
    download(f, recv, bytes);
    bad = t_rank == root ? mismatches(dt, f->h_out, f->h_ref, n) : 0;
    T_CHECK(bad == 0, "reduce %s %s count %zu root %d: %ld wrong", dt_names[dt], op_names[op], n,
            root, bad);
    MPI_Barrier(MPI_COMM_WORLD);

    /* gather: recv's other bytes on the root, and every non-root recv, stay as they were */
    memset(f->h_ref, 0x5a, all);
    T_OK(f->ctx, symaddr_memcpy(f->ctx, recv, f->h_ref, all));
    MPI_Barrier(MPI_COMM_WORLD);
    for (size_t i = 0; i < n; i++)
        put_value(dt, f->h_in, i, gen(dt, op, t_rank, i));
    upload(f, send, bytes);
    MPI_Gather(f->h_in, (int)bytes, MPI_BYTE, f->h_ref, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD);
    T_OK(f->ctx, symaddr_gather(f->ctx, send, recv, n, dt, root, NULL));
    download(f, recv, all);
    if (t_rank != root)
        memset(f->h_ref, 0x5a, all); /* untouched */
    bad = memcmp(f->h_out, f->h_ref, all) != 0 ? mismatches(dt, f->h_out, f->h_ref, n * t_size) : 0;
    T_CHECK(bad == 0 && memcmp(f->h_out, f->h_ref, all) == 0,
            "gather %s count %zu root %d: %ld wrong", dt_names[dt], n, root, bad);
    MPI_Barrier(MPI_COMM_WORLD);

    /* scatter: only the root's send counts, so the others' hold other values */
    for (size_t i = 0; i < n * (size_t)t_size; i++)
        put_value(dt, f->h_in, i, gen(dt, op, t_rank, i));
    upload(f, send, all);
    MPI_Scatter(f->h_in, (int)bytes, MPI_BYTE, f->h_ref, (int)bytes, MPI_BYTE, root,
                MPI_COMM_WORLD);
    T_OK(f->ctx, symaddr_scatter(f->ctx, send, recv, n, dt, root, NULL));
    download(f, recv, bytes);
    bad = mismatches(dt, f->h_out, f->h_ref, n);
    T_CHECK(bad == 0, "scatter %s count %zu root %d: %ld wrong", dt_names[dt], n, root, bad);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void run_others(fix_t *f, symaddr_dtype_t dt, int op, size_t n, int root)
{
    size_t esz = symaddr_dtype_size(dt), bytes = n * esz, all = bytes * (size_t)t_size;
    char *send = f->a + VIEW * esz, *recv = f->b + VIEW * esz;
    int native = mpi_type(dt) != MPI_DATATYPE_NULL;
    long bad;

    /* reduce_scatter: send holds size blocks of n. */
    for (size_t i = 0; i < n * (size_t)t_size; i++)
        put_value(dt, f->h_in, i, gen(dt, op, t_rank, i));
    upload(f, send, all);
    if (native)
        MPI_Reduce_scatter_block(f->h_in, f->h_ref, (int)n, mpi_type(dt), mpi_op(op),
                                 MPI_COMM_WORLD);
    else /* block r of the result reduces every rank's block r */
        for (int r = 0; r < t_size; r++) {
            char *tmp = malloc(bytes);
            seq_reduce(dt, op, f->h_in, tmp, n, bytes * (size_t)r);
            if (r == t_rank)
                memcpy(f->h_ref, tmp, bytes);
            free(tmp);
        }
    T_OK(f->ctx, symaddr_reduce_scatter(f->ctx, send, recv, n, dt, (symaddr_redop_t)op, NULL));
    download(f, recv, bytes);
    bad = mismatches(dt, f->h_out, f->h_ref, n);
    T_CHECK(bad == 0, "reduce_scatter %s %s count %zu: %ld wrong", dt_names[dt], op_names[op], n,
            bad);
    MPI_Barrier(MPI_COMM_WORLD);

    /* allgather */
    for (size_t i = 0; i < n; i++)
        put_value(dt, f->h_in, i, gen(dt, op, t_rank, i));
    upload(f, send, bytes);
    MPI_Allgather(f->h_in, (int)bytes, MPI_BYTE, f->h_ref, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
    T_OK(f->ctx, symaddr_allgather(f->ctx, send, recv, n, dt, NULL));
    download(f, recv, all);
    bad = mismatches(dt, f->h_out, f->h_ref, n * (size_t)t_size);
    T_CHECK(bad == 0, "allgather %s count %zu: %ld wrong", dt_names[dt], n, bad);
    MPI_Barrier(MPI_COMM_WORLD);

    /* broadcast */
    memcpy(f->h_ref, f->h_in, bytes);
    MPI_Bcast(f->h_ref, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD);
    T_OK(f->ctx, symaddr_broadcast(f->ctx, send, recv, n, dt, root, NULL));
    download(f, recv, bytes);
    bad = mismatches(dt, f->h_out, f->h_ref, n);
    T_CHECK(bad == 0, "broadcast %s count %zu root %d: %ld wrong", dt_names[dt], n, root, bad);
    MPI_Barrier(MPI_COMM_WORLD);

    /* alltoall */
    for (size_t i = 0; i < n * (size_t)t_size; i++)
        put_value(dt, f->h_in, i, gen(dt, SYMADDR_SUM, t_rank, i));
    upload(f, send, all);
    MPI_Alltoall(f->h_in, (int)bytes, MPI_BYTE, f->h_ref, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
    T_OK(f->ctx, symaddr_alltoall(f->ctx, send, recv, n, dt, NULL));
    download(f, recv, all);
    bad = mismatches(dt, f->h_out, f->h_ref, n * (size_t)t_size);
    T_CHECK(bad == 0, "alltoall %s count %zu: %ld wrong", dt_names[dt], n, bad);
    MPI_Barrier(MPI_COMM_WORLD);

    run_rooted(f, dt, op, n, root);
}

static void test_others(void *u)
{
    fix_t f;
    (void)u;
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, NULL);
    fix_init(&f, ctx);
    for (int dt = 0; dt < SYMADDR_DTYPE_COUNT_; dt++)
        for (size_t c = 0; c < NCOUNTS - 1; c++)
            run_others(&f, (symaddr_dtype_t)dt, (int)(c + (size_t)dt) % SYMADDR_REDOP_COUNT_,
                       counts[c], (int)(c * 3 + 1) % t_size);
    fix_fini(&f);
    T_OK(ctx, symaddr_finalize(&ctx));
}

/* In place: reduce_scatter into this rank's block, allgather from it. */
static void test_in_place_forms(void *u)
{
    fix_t f;
    const size_t n = 1001;
    (void)u;
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, NULL);
    fix_init(&f, ctx);
    int32_t *buf = (int32_t *)f.a + VIEW, *h = (int32_t *)f.h_in, *ref = (int32_t *)f.h_ref;
    for (size_t i = 0; i < n * (size_t)t_size; i++)
        h[i] = t_rank * 1000 + (int)i;
    upload(&f, buf, n * (size_t)t_size * 4);
    MPI_Reduce_scatter_block(h, ref, (int)n, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
    T_OK(ctx, symaddr_reduce_scatter(ctx, buf, buf + n * (size_t)t_rank, n, SYMADDR_INT32,
                                     SYMADDR_SUM, NULL));
    download(&f, buf + n * (size_t)t_rank, n * 4);
    T_CHECK(memcmp(f.h_out, ref, n * 4) == 0, "in-place reduce_scatter");
    MPI_Barrier(MPI_COMM_WORLD);
    upload(&f, buf, n * (size_t)t_size * 4);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, h, (int)n, MPI_INT32_T, MPI_COMM_WORLD);
    T_OK(ctx, symaddr_allgather(ctx, buf + n * (size_t)t_rank, buf, n, SYMADDR_INT32, NULL));
    download(&f, buf, n * (size_t)t_size * 4);
    T_CHECK(memcmp(f.h_out, h, n * (size_t)t_size * 4) == 0, "in-place allgather");
    MPI_Barrier(MPI_COMM_WORLD);
    T_STATUS(ctx, symaddr_alltoall(ctx, buf, buf + 1, n, SYMADDR_INT32, NULL),
             SYMADDR_ERR_INVALID_ARG);

    /* reduce in place at the root (send == recv), gather from the root's block of recv,
     * scatter into this rank's block of send */
    int root = t_size - 1;
    for (size_t i = 0; i < n; i++)
        h[i] = t_rank * 1000 + (int)i;
    upload(&f, buf, n * 4);
    MPI_Reduce(h, ref, (int)n, MPI_INT32_T, MPI_MAX, root, MPI_COMM_WORLD);
    T_OK(ctx, symaddr_reduce(ctx, buf, buf, n, SYMADDR_INT32, SYMADDR_MAX, root, NULL));
    download(&f, buf, n * 4);
    T_CHECK(t_rank != root || memcmp(f.h_out, ref, n * 4) == 0, "in-place reduce");
    MPI_Barrier(MPI_COMM_WORLD);
    for (size_t i = 0; i < n * (size_t)t_size; i++)
        h[i] = t_rank * 1000 + (int)i;
    upload(&f, buf, n * (size_t)t_size * 4);
    MPI_Barrier(MPI_COMM_WORLD);
    if (t_rank == root)
        MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, h, (int)n, MPI_INT32_T, root,
                   MPI_COMM_WORLD);
    else
        MPI_Gather(h + n * (size_t)t_rank, (int)n, MPI_INT32_T, NULL, 0, MPI_DATATYPE_NULL, root,
                   MPI_COMM_WORLD);
    T_OK(ctx, symaddr_gather(ctx, buf + n * (size_t)t_rank, buf, n, SYMADDR_INT32, root, NULL));
    download(&f, buf, n * (size_t)t_size * 4);
    T_CHECK(t_rank != root || mismatches(SYMADDR_INT32, f.h_out, h, n * (size_t)t_size) == 0,
            "in-place gather");
    MPI_Barrier(MPI_COMM_WORLD);
    for (size_t i = 0; i < n * (size_t)t_size; i++)
        h[i] = t_rank * 1000 + (int)i;
    upload(&f, buf, n * (size_t)t_size * 4);
    MPI_Barrier(MPI_COMM_WORLD);
    if (t_rank == root)
        MPI_Scatter(h, (int)n, MPI_INT32_T, MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, root,
                    MPI_COMM_WORLD);
    else
        MPI_Scatter(NULL, 0, MPI_DATATYPE_NULL, ref, (int)n, MPI_INT32_T, root, MPI_COMM_WORLD);
    if (t_rank == root)
        memcpy(ref, h + n * (size_t)root, n * 4);
    T_OK(ctx, symaddr_scatter(ctx, buf, buf + n * (size_t)t_rank, n, SYMADDR_INT32, root, NULL));
    download(&f, buf + n * (size_t)t_rank, n * 4);
    T_CHECK(memcmp(f.h_out, ref, n * 4) == 0, "in-place scatter");
    MPI_Barrier(MPI_COMM_WORLD);
    /* the root's own block is the only in-place form */
    T_STATUS(ctx, symaddr_gather(ctx, buf + 1, buf, n, SYMADDR_INT32, root, NULL),
             SYMADDR_ERR_INVALID_ARG);
    T_STATUS(ctx, symaddr_scatter(ctx, buf, buf + 1, n, SYMADDR_INT32, root, NULL),
             SYMADDR_ERR_INVALID_ARG);
    T_STATUS(ctx, symaddr_reduce(ctx, buf, buf + 1, n, SYMADDR_INT32, SYMADDR_SUM, root, NULL),
             SYMADDR_ERR_INVALID_ARG);
    fix_fini(&f);
    T_OK(ctx, symaddr_finalize(&ctx));
}

/* The first all int32 of f->b's copy on this rank, checked against want where the call writes
 * ([lo, hi) in elements; want NULL: not checked there) and against the sentinel elsewhere. */
static long outside_and_inside(fix_t *f, size_t all, size_t lo, size_t hi, const int32_t *want,
                               int broken)
{
    long bad = 0;
    /* a broken context refuses symaddr_stream_sync: its call ran on the default stream, which
     * the copy follows */
    if (broken)
        T_OK(f->ctx, symaddr_memcpy(f->ctx, f->h_out, f->b, all * 4));
    else
        download(f, f->b, all * 4);
    const int32_t *got = (const int32_t *)f->h_out;
    for (size_t i = 0; i < all; i++)
        bad += i >= lo && i < hi ? want && got[i] != want[i - lo] : got[i] != -7;
    return bad;
}

static void fill_b(fix_t *f, size_t all)
{
    for (size_t i = 0; i < all; i++)
        ((int32_t *)f->h_in)[i] = -7;
    upload(f, f->b, all * 4);
}

/* Rooted collectives where the non-roots pass their buffers at other offsets than the root, as
 * MPI programs do (MPI ignores a non-root's recv of gather, and MPI_IN_PLACE puts the root's
 * send inside its recv): the data come from and go to the root's buffers wherever the root
 * passed them, and nothing of any rank outside the receive buffer is written. Before: every
 * rank returned OK, the root's recv had 128 of 192 elements wrong and 128 int32 of the root's
 * memory outside recv were overwritten. A buffer in another allocation than the root's is
 * refused with MISMATCH on every rank, and nothing is written. */
static void test_rooted_offsets(void *u)
{
    fix_t f;
    const size_t n = 67, all = n * (size_t)t_size + 400;
    (void)u;
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, NULL);
    fix_init(&f, ctx);
    int32_t *mine = malloc(n * (size_t)t_size * 4), *want = malloc(n * (size_t)t_size * 4);
    for (size_t i = 0; i < n * (size_t)t_size; i++)
        mine[i] = t_rank * 1000 + (int)i;
    for (int root = 0; root<t_size; root += t_size> 1 ? t_size - 1 : 1) {
        /* the root's buffers at VIEW elements, every other rank's at its own odd offset */
        size_t at = t_rank == root ? VIEW : 11 + 2 * (size_t)t_rank;
        int32_t *b = (int32_t *)f.b + at, *a = (int32_t *)f.a + at;

        /* gather, the root in place (send = its block of recv) */
        fill_b(&f, all);
        memcpy(f.h_in, mine, n * 4);
        upload(&f, t_rank == root ? b + n * (size_t)root : a, n * 4);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Gather(mine, (int)n, MPI_INT32_T, want, (int)n, MPI_INT32_T, root, MPI_COMM_WORLD);
        T_OK(ctx, symaddr_gather(ctx, t_rank == root ? b + n * (size_t)root : a, b, n,
                                 SYMADDR_INT32, root, NULL));
        if (t_rank == root) {
            T_CHECK(outside_and_inside(&f, all, at, at + n * (size_t)t_size, want, 0) == 0,
                    "gather to root %d in place: recv exact, the rest untouched", root);
        } else { /* a non-root's recv is never written */
            T_CHECK(outside_and_inside(&f, all, 0, 0, want, 0) == 0,
                    "gather: rank %d's recv untouched", t_rank);
        }
        MPI_Barrier(MPI_COMM_WORLD);

        /* scatter and broadcast: the root's send at its offset, the others' send elsewhere */
        fill_b(&f, all);
        memcpy(f.h_in, mine, n * (size_t)t_size * 4);
        upload(&f, a, n * (size_t)t_size * 4);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Scatter(mine, (int)n, MPI_INT32_T, want, (int)n, MPI_INT32_T, root, MPI_COMM_WORLD);
        T_OK(ctx, symaddr_scatter(ctx, a, b, n, SYMADDR_INT32, root, NULL));
        T_CHECK(outside_and_inside(&f, all, at, at + n, want, 0) == 0,
                "scatter from root %d: rank %d's recv exact, the rest untouched", root, t_rank);
        MPI_Barrier(MPI_COMM_WORLD);
        fill_b(&f, all);
        MPI_Barrier(MPI_COMM_WORLD);
        memcpy(want, mine, n * 4);
        MPI_Bcast(want, (int)n, MPI_INT32_T, root, MPI_COMM_WORLD);
        T_OK(ctx, symaddr_broadcast(ctx, a, b, n, SYMADDR_INT32, root, NULL));
        T_CHECK(outside_and_inside(&f, all, at, at + n, want, 0) == 0,
                "broadcast from root %d: rank %d's recv exact, the rest untouched", root, t_rank);
        MPI_Barrier(MPI_COMM_WORLD);

        /* reduce, the root in place in recv, the others' send elsewhere in that allocation */
        fill_b(&f, all);
        memcpy(f.h_in, mine, n * 4);
        upload(&f, b, n * 4);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Reduce(mine, want, (int)n, MPI_INT32_T, MPI_SUM, root, MPI_COMM_WORLD);
        T_OK(ctx, symaddr_reduce(ctx, b, b, n, SYMADDR_INT32, SYMADDR_SUM, root, NULL));
        if (t_rank == root)
            T_CHECK(outside_and_inside(&f, all, at, at + n, want, 0) == 0,
                    "reduce to root %d in place: recv exact, the rest untouched", root);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    fix_fini(&f);
    T_OK(ctx, symaddr_finalize(&ctx));

    /* a non-root's buffer in another allocation than the root's: refused on every rank */
    for (int k = 0; k < 2 && t_size > 1; k++) {
        ctx = t_context(MPI_COMM_WORLD, NULL);
        fix_init(&f, ctx);
        fill_b(&f, all);
        MPI_Barrier(MPI_COMM_WORLD);
        int32_t *other = (int32_t *)(t_rank == 1 ? f.a : f.b);
        symaddr_status_t st = k == 0 ? symaddr_gather(ctx, f.a + n * 4 * (size_t)t_size, other, n,
                                                      SYMADDR_INT32, 0, NULL)
                                     : symaddr_reduce(ctx, other, f.b + 4 * all, n, SYMADDR_INT32,
                                                      SYMADDR_SUM, 0, NULL);
        if (st == SYMADDR_OK)
            st = symaddr_stream_sync(ctx, NULL);
        T_CHECK(st == SYMADDR_ERR_MISMATCH, "%s with rank 1's buffer in another allocation: %s",
                k == 0 ? "gather" : "reduce", symaddr_strerror(st));
        /* the ranks of the node that found it say why; other nodes name a rank that did */
        T_CHECK(strstr(symaddr_last_error(ctx), "same allocation") != NULL ||
                    (symaddr_node_size(ctx) < t_size &&
                     strstr(symaddr_last_error(ctx), "see that rank's message") != NULL),
                "message: %s", symaddr_last_error(ctx));
        /* the root's recv (gather) may hold the blocks of ranks that matched it */
        size_t hi = k == 0 && t_rank == 0 ? n * (size_t)t_size : 0;
        T_CHECK(outside_and_inside(&f, all, 0, hi, NULL, 1) == 0,
                "%s: nothing written outside the root's recv", k == 0 ? "gather" : "reduce");
        symaddr_finalize(&ctx);
        free(f.h_in);
        free(f.h_out);
        free(f.h_ref);
    }
    free(mine);
    free(want);
}

/* Imports at interior offsets that differ per rank: an import's table is shifted by each rank's
 * offset, so a rank's byte offset from its own table entry is not its peers'. Every collective
 * over them is exact, with and without validation (before: broadcast, scatter, gather and reduce
 * returned OK with the root's data shifted by the difference of the ranks' offsets, and
 * validation refused a correct allreduce over them with MISMATCH). */
static void test_rooted_imports(void *u)
{
    const size_t n = 37, all = n * (size_t)t_size, lead = 64;
    int32_t *mine = malloc(all * 4), *want = malloc(all * 4), *got = malloc(all * 4);
    (void)u;
    for (size_t i = 0; i < all; i++)
        mine[i] = t_rank * 1000 + (int)i;
    /* one node, then (3 ranks or more) simulated nodes of 2 ranks, whose steps between nodes
     * broadcast a node's result from its leader's recv */
    for (int layout = 0; layout < (t_size > 2 ? 4 : 2); layout++) {
        int validate = layout % 2;
        symaddr_config_t cfg;
        symaddr_config_default(&cfg);
        cfg.validate = validate ? SYMADDR_VALIDATE_ON : SYMADDR_VALIDATE_OFF;
        cfg.node_size = layout / 2 ? 2 : 0;
        symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, &cfg);
        char *raw_s, *raw_r;
        symaddr_map_t *ms, *mr;
        T_OK(ctx, symaddr_mem_alloc(ctx, (lead + all) * 4, (void **)&raw_s));
        T_OK(ctx, symaddr_mem_alloc(ctx, (lead + all) * 4, (void **)&raw_r));
        int32_t *s = (int32_t *)raw_s + (1 + 2 * t_rank) % lead;
        int32_t *r = (int32_t *)raw_r + (3 + t_rank) % lead;
        T_OK(ctx, symaddr_import(ctx, s, all * 4, &ms));
        T_OK(ctx, symaddr_import(ctx, r, all * 4, &mr));
        for (int root = 0; root<t_size; root += t_size> 1 ? t_size - 1 : 1) {
            for (int k = 0; k < 6; k++) {
                static const char *const names[] = {"broadcast", "scatter",   "gather",
                                                    "reduce",    "allreduce", "allgather"};
                symaddr_status_t st;
                int writes = (k != 2 && k != 3) || t_rank == root;
                size_t got_n = k == 2 || k == 5 ? all : n;
                T_OK(ctx, symaddr_memcpy(ctx, s, mine, all * 4));
                for (size_t i = 0; i < all; i++)
                    got[i] = -7;
                T_OK(ctx, symaddr_memcpy(ctx, r, got, all * 4));
                MPI_Barrier(MPI_COMM_WORLD);
                switch (k) {
                case 0:
                    memcpy(want, mine, n * 4);
                    MPI_Bcast(want, (int)n, MPI_INT32_T, root, MPI_COMM_WORLD);
                    st = symaddr_broadcast(ctx, s, r, n, SYMADDR_INT32, root, NULL);
                    break;
                case 1:
                    MPI_Scatter(mine, (int)n, MPI_INT32_T, want, (int)n, MPI_INT32_T, root,
                                MPI_COMM_WORLD);
                    st = symaddr_scatter(ctx, s, r, n, SYMADDR_INT32, root, NULL);
                    break;
                case 2:
                    MPI_Gather(mine, (int)n, MPI_INT32_T, want, (int)n, MPI_INT32_T, root,
                               MPI_COMM_WORLD);
                    st = symaddr_gather(ctx, s, r, n, SYMADDR_INT32, root, NULL);
                    break;
                case 3:
                    MPI_Reduce(mine, want, (int)n, MPI_INT32_T, MPI_SUM, root, MPI_COMM_WORLD);
                    st = symaddr_reduce(ctx, s, r, n, SYMADDR_INT32, SYMADDR_SUM, root, NULL);
                    break;
                case 4:
                    MPI_Allreduce(mine, want, (int)n, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD);
                    st = symaddr_allreduce(ctx, s, r, n, SYMADDR_INT32, SYMADDR_SUM, NULL);
                    break;
                default:
                    MPI_Allgather(mine, (int)n, MPI_INT32_T, want, (int)n, MPI_INT32_T,
                                  MPI_COMM_WORLD);
                    st = symaddr_allgather(ctx, s, r, n, SYMADDR_INT32, NULL);
                    break;
                }
                if (st == SYMADDR_OK)
                    st = symaddr_stream_sync(ctx, NULL);
                T_CHECK(st == SYMADDR_OK,
                        "%s from/to root %d over imports at other offsets%s%s: %s", names[k], root,
                        validate ? " (validation)" : "", cfg.node_size ? " (nodes of 2)" : "",
                        symaddr_last_error(ctx));
                T_OK(ctx, symaddr_memcpy(ctx, got, r, all * 4));
                long bad = 0;
                for (size_t i = 0; i < all; i++)
                    bad += writes && i < got_n ? got[i] != want[i] : k != 3 && got[i] != -7;
                T_CHECK(bad == 0,
                        "%s, root %d%s%s: rank %d's recv exact and the rest untouched "
                        "(%ld wrong; element 0 %d, want %d)",
                        names[k], root, validate ? " (validation)" : "",
                        cfg.node_size ? " (nodes of 2)" : "", t_rank, bad, got[0],
                        writes ? want[0] : -7);
            }
        }
        T_OK(ctx, symaddr_unregister(ctx, ms));
        T_OK(ctx, symaddr_unregister(ctx, mr));
        T_OK(ctx, symaddr_mem_free(ctx, raw_s));
        T_OK(ctx, symaddr_mem_free(ctx, raw_r));
        T_OK(ctx, symaddr_finalize(&ctx));
    }
    free(mine);
    free(want);
    free(got);
}

/* send from the heap, recv from an import, and the reverse with ipc. */
static void test_mixed_providers(void *u)
{
    const size_t n = 4099;
    symaddr_map_t *m, *mi;
    float *hs, *root, *h = malloc(n * sizeof(float)), *ref = malloc(n * sizeof(float));
    float *got = malloc(n * sizeof(float));
    (void)u;
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, NULL);
    symaddr_provider_t *heap;
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_HEAP, &heap));
    T_OK(ctx, symaddr_symmetric_alloc(heap, n * sizeof(float), (void **)&hs, &m));
    T_OK(ctx, symaddr_mem_alloc(ctx, (n + 8) * sizeof(float), (void **)&root));
    T_OK(ctx, symaddr_import(ctx, root + 1, n * sizeof(float), &mi));
    for (size_t i = 0; i < n; i++)
        h[i] = (float)(t_rank + 1) * (float)(i % 5);
    T_OK(ctx, symaddr_memcpy(ctx, hs, h, n * sizeof(float)));
    MPI_Allreduce(h, ref, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    T_OK(ctx, symaddr_allreduce(ctx, hs, root + 1, n, SYMADDR_FLOAT32, SYMADDR_SUM, NULL));
    T_OK(ctx, symaddr_stream_sync(ctx, NULL));
    T_OK(ctx, symaddr_memcpy(ctx, got, root + 1, n * sizeof(float)));
    T_CHECK(memcmp(got, ref, n * sizeof(float)) == 0, "heap -> import allreduce");
    MPI_Barrier(MPI_COMM_WORLD);
    T_OK(ctx, symaddr_allreduce(ctx, root + 1, hs, n, SYMADDR_FLOAT32, SYMADDR_MAX, NULL));
    T_OK(ctx, symaddr_stream_sync(ctx, NULL));
    T_OK(ctx, symaddr_memcpy(ctx, got, hs, n * sizeof(float)));
    T_CHECK(memcmp(got, ref, n * sizeof(float)) == 0, "import -> heap allreduce (max of equal)");
    MPI_Barrier(MPI_COMM_WORLD);
    T_OK(ctx, symaddr_unregister(ctx, mi));
    T_OK(ctx, symaddr_mem_free(ctx, root));
    T_OK(ctx, symaddr_finalize(&ctx));
    free(h);
    free(ref);
    free(got);
}

/* Two simulated nodes of size/2: inside on symmetric memory, between through MPI; with auto's
 * allreduce, and with two-shot-copy, whose copies then reach the scratch of reduce-scatter's
 * step between nodes too. */
static void two_nodes(symaddr_allreduce_algo_t algo)
{
    fix_t f;
    symaddr_context_t *ctx = t_two_node_context_algo(algo);
    if (!ctx)
        return;
    int host = t_host_size(), want = host < t_size / 2 ? host : t_size / 2;
    T_CHECK(symaddr_node_size(ctx) == want, "node size %d, want %d (%d ranks on this host)",
            symaddr_node_size(ctx), want, host);
    fix_init(&f, ctx);
    const symaddr_dtype_t dts[] = {SYMADDR_INT32, SYMADDR_FLOAT32, SYMADDR_BFLOAT16};
    for (int k = 0; k < 3; k++)
        for (int op = 0; op < SYMADDR_REDOP_COUNT_; op++) {
            long bad = one_allreduce(&f, dts[k], op, 70001, op % 2);
            T_CHECK(bad == 0, "2-node allreduce %s %s: %ld wrong", dt_names[dts[k]], op_names[op],
                    bad);
            bad = one_allreduce(&f, dts[k], op, 7, 0);
            T_CHECK(bad == 0, "2-node allreduce %s %s count 7: %ld wrong", dt_names[dts[k]],
                    op_names[op], bad);
        }
    for (int k = 0; k < 3; k++)
        run_others(&f, dts[k], k, 1001, (k * 5 + 2) % t_size);
    T_OK(ctx, symaddr_barrier(ctx, NULL));
    T_OK(ctx, symaddr_stream_sync(ctx, NULL));
    fix_fini(&f);
    T_OK(ctx, symaddr_finalize(&ctx));
}

static void test_two_nodes(void *u)
{
    (void)u;
    two_nodes(SYMADDR_ALLREDUCE_AUTO);
    two_nodes(SYMADDR_ALLREDUCE_TWOSHOT_COPY);
}

/* A failure one node's kernel finds (a rooted gather whose recv a rank of the root's node passed
 * in another allocation) breaks the context on every node, not only there: the next call returns
 * BROKEN at once on every rank, and finalize returns OK everywhere. Before, the other
 * node's ranks went on, waited out the timeout in the next call and in finalize, and their
 * finalize message reached a communicator the first node had freed: across real hosts, the next
 * context's MPI_Comm_split crashed in Open MPI (issue 46). Then a fresh context works. */
static void test_node_failure_agrees(void *u)
{
    fix_t f;
    const size_t n = 67;
    (void)u;
    if (t_size < 4) { /* the root's node needs a second rank */
        T_SKIP("needs 4 or more ranks (two nodes of two), have %d", t_size);
        return;
    }
    symaddr_context_t *ctx = t_two_node_context();
    if (!ctx)
        return;
    fix_init(&f, ctx);
    /* a short timeout: a rank that still waits on a broken node costs this, not minutes */
    T_OK(ctx, symaddr_timeout_set(ctx, 3000));
    MPI_Barrier(MPI_COMM_WORLD);
    symaddr_status_t st = symaddr_gather(ctx, f.a + n * 4 * (size_t)t_size, t_rank == 1 ? f.a : f.b,
                                         n, SYMADDR_INT32, 0, NULL);
    if (st == SYMADDR_OK)
        st = symaddr_stream_sync(ctx, NULL);
    T_CHECK(st == SYMADDR_ERR_MISMATCH, "gather, rank 1's recv in another allocation: %s",
            symaddr_strerror(st));
    T_STATUS(ctx, symaddr_barrier(ctx, NULL), SYMADDR_ERR_BROKEN);
    T_STATUS(ctx, symaddr_allreduce(ctx, f.a, f.b, n, SYMADDR_INT32, SYMADDR_SUM, NULL),
             SYMADDR_ERR_BROKEN);
    int mine = symaddr_finalize(&ctx), *all = malloc(sizeof(int) * (size_t)t_size), differ = 0;
    MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < t_size; r++)
        differ += all[r] != all[0];
    T_CHECK(differ == 0 && mine == SYMADDR_OK,
            "finalize of the broken context: rank %d returned %s, rank 0 %s", t_rank,
            symaddr_strerror(mine), symaddr_strerror(all[0]));
    free(all);
    free(f.h_in);
    free(f.h_out);
    free(f.h_ref);

    /* a fresh two-node context: exact */
    ctx = t_two_node_context();
    fix_init(&f, ctx);
    long bad = one_allreduce(&f, SYMADDR_INT32, SYMADDR_SUM, 1001, 0);
    T_CHECK(bad == 0, "allreduce on a fresh context: %ld wrong", bad);
    fix_fini(&f);
    T_OK(ctx, symaddr_finalize(&ctx));
}

/* The mismatch tests' context (cfg, its calls under a 5 s timeout, its setup under the long
 * one), and a (rank * 1000 + i) and b (-7) of cap int32 each; h is a host buffer of cap. */
static symaddr_context_t *mismatch_begin(symaddr_config_t *cfg, size_t cap, int32_t **a_p,
                                         int32_t **b_p, int32_t **h_p)
{
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, cfg);
    symaddr_provider_t *ipc;
    symaddr_map_t *m;
    int32_t *h = malloc(cap * 4);
    T_OK(ctx, symaddr_provider_get(ctx, SYMADDR_PROVIDER_IPC, &ipc));
    T_OK(ctx, symaddr_symmetric_alloc(ipc, cap * 4, (void **)a_p, &m));
    T_OK(ctx, symaddr_symmetric_alloc(ipc, cap * 4, (void **)b_p, &m));
    for (size_t i = 0; i < cap; i++)
        h[i] = t_rank * 1000 + (int)i;
    T_OK(ctx, symaddr_memcpy(ctx, *a_p, h, cap * 4));
    for (size_t i = 0; i < cap; i++)
        h[i] = -7;
    T_OK(ctx, symaddr_memcpy(ctx, *b_p, h, cap * 4));
    T_OK(ctx, symaddr_timeout_set(ctx, 5000));
    MPI_Barrier(MPI_COMM_WORLD);
    *h_p = h;
    return ctx;
}

/* Nothing of b past its first wrote elements written; then the context and h go. */
static void mismatch_end(symaddr_context_t **ctx_p, const int32_t *b, int32_t *h, size_t wrote,
                         size_t cap, const char *what)
{
    T_OK(*ctx_p, symaddr_memcpy(*ctx_p, h, b, cap * 4));
    long past = 0;
    for (size_t i = wrote; i < cap; i++)
        past += h[i] != -7;
    T_CHECK(past == 0, "%s: %ld elements past rank %d's recv written", what, past, t_rank);
    MPI_Barrier(MPI_COMM_WORLD);
    symaddr_finalize(ctx_p);
    free(h);
}

/* Without validation mode, ranks that disagree on a collective's count or op all return
 * MISMATCH (the barrier-based kernels compare the call's identity in their first barrier, the
 * LL and Lamport allreduces in one more step after their data), and no rank writes past its
 * recv. Before, allgather, reduce-scatter and alltoall of another count, and two-shot allreduce
 * and reduce-scatter of another op, returned OK on every rank; so did the LL and Lamport
 * allreduces of another op (and of another count, or timed out). */
static void test_identity_mismatch(void *u)
{
    static const struct {
        const char *what;
        symaddr_allreduce_algo_t algo;
        int kind; /* 0 allreduce, 1 reduce_scatter, 2 allgather, 3 alltoall */
        int op;   /* 1: the last rank reduces with MAX, else count - 1 */
        int f32;  /* f32 rather than int32 (Lamport takes floats only) */
    } cases[] = {
        {"two-shot allreduce, count", SYMADDR_ALLREDUCE_TWOSHOT, 0, 0, 0},
        {"two-shot allreduce, op", SYMADDR_ALLREDUCE_TWOSHOT, 0, 1, 0},
        {"one-shot allreduce, count", SYMADDR_ALLREDUCE_ONESHOT, 0, 0, 0},
        {"two-shot-by-loads allreduce, op", SYMADDR_ALLREDUCE_TWOSHOT_GET, 0, 1, 0},
        {"two-shot-copy allreduce, count", SYMADDR_ALLREDUCE_TWOSHOT_COPY, 0, 0, 0},
        {"reduce_scatter, count", SYMADDR_ALLREDUCE_AUTO, 1, 0, 0},
        {"reduce_scatter, op", SYMADDR_ALLREDUCE_AUTO, 1, 1, 0},
        {"allgather, count", SYMADDR_ALLREDUCE_AUTO, 2, 0, 0},
        {"alltoall, count", SYMADDR_ALLREDUCE_AUTO, 3, 0, 0},
        {"LL allreduce, count", SYMADDR_ALLREDUCE_LL, 0, 0, 0},
        {"LL allreduce, op", SYMADDR_ALLREDUCE_LL, 0, 1, 0},
        {"Lamport allreduce, count", SYMADDR_ALLREDUCE_LAMPORT, 0, 0, 1},
        {"Lamport allreduce, op", SYMADDR_ALLREDUCE_LAMPORT, 0, 1, 1},
    };
    (void)u;
    if (t_size < 2) {
        T_SKIP("needs 2 ranks that disagree, have %d", t_size);
        return;
    }
    const size_t n = 301, cap = n * (size_t)t_size + 64;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        symaddr_config_t cfg;
        symaddr_config_default(&cfg);
        cfg.allreduce_algo = cases[c].algo;
        int32_t *a, *b, *h;
        symaddr_context_t *ctx = mismatch_begin(&cfg, cap, &a, &b, &h);
        int last = t_rank == t_size - 1;
        size_t count = last && !cases[c].op ? n - 1 : n;
        symaddr_redop_t op = last && cases[c].op ? SYMADDR_MAX : SYMADDR_SUM;
        symaddr_dtype_t dt = cases[c].f32 ? SYMADDR_FLOAT32 : SYMADDR_INT32; /* both 4 bytes */
        /* recv elements: allgather and alltoall receive count from every rank */
        size_t wrote = cases[c].kind >= 2 ? count * (size_t)t_size : count;
        symaddr_status_t st = cases[c].kind == 0 ? symaddr_allreduce(ctx, a, b, count, dt, op, NULL)
                              : cases[c].kind == 1
                                  ? symaddr_reduce_scatter(ctx, a, b, count, dt, op, NULL)
                              : cases[c].kind == 2 ? symaddr_allgather(ctx, a, b, count, dt, NULL)
                                                   : symaddr_alltoall(ctx, a, b, count, dt, NULL);
        if (st == SYMADDR_OK)
            st = symaddr_stream_sync(ctx, NULL);
        T_CHECK(st == SYMADDR_ERR_MISMATCH, "%s: the last rank disagrees, rank %d returned %s",
                cases[c].what, t_rank, symaddr_strerror(st));
        mismatch_end(&ctx, b, h, wrote, cap, cases[c].what);
    }
}

/* With no_call_check the LL and Lamport allreduces leave out the step that compares the call,
 * and ranks that disagree get what symaddr.h's preamble says: the last rank reduces with MAX
 * (every rank returns OK, each with its own op over every rank's data), or passes count - 1,
 * one 16-byte chunk (LL: 8-byte step) fewer (it returns OK with the sums of every rank's first
 * count - 1 elements, the others TIMEOUT or BROKEN, and none writes past its recv). Across
 * nodes (tests/hosts) the agreement between them compares the calls: no rank returns OK, and
 * ranks of another op get MISMATCH. */
static void test_identity_unchecked(void *u)
{
    static const struct {
        const char *what;
        symaddr_allreduce_algo_t algo;
        symaddr_dtype_t dt;
        int op; /* 1: the last rank reduces with MAX, else count - 1 */
    } cases[] = {
        {"LL allreduce, op", SYMADDR_ALLREDUCE_LL, SYMADDR_INT32, 1},
        {"Lamport allreduce, op", SYMADDR_ALLREDUCE_LAMPORT, SYMADDR_FLOAT32, 1},
        {"LL allreduce, count", SYMADDR_ALLREDUCE_LL, SYMADDR_INT32, 0},
        {"Lamport allreduce, count", SYMADDR_ALLREDUCE_LAMPORT, SYMADDR_FLOAT32, 0},
    };
    (void)u;
    if (t_size < 2) {
        T_SKIP("needs 2 ranks that disagree, have %d", t_size);
        return;
    }
    const size_t n = 301, cap = n * (size_t)t_size + 64; /* 1204 bytes; 1200 one chunk fewer */
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        symaddr_config_t cfg;
        symaddr_config_default(&cfg);
        cfg.allreduce_algo = cases[c].algo;
        cfg.no_call_check = 1;
        int32_t *a, *b, *h;
        symaddr_context_t *ctx = mismatch_begin(&cfg, cap, &a, &b, &h);
        int f32 = cases[c].dt == SYMADDR_FLOAT32, last = t_rank == t_size - 1;
        for (size_t i = 0; f32 && i < n; i++) { /* the same values as floats */
            float v = (float)(t_rank * 1000 + (int)i);
            memcpy(&h[i], &v, 4);
        }
        if (f32)
            T_OK(ctx, symaddr_memcpy(ctx, a, h, n * 4));
        MPI_Barrier(MPI_COMM_WORLD);
        size_t count = last && !cases[c].op ? n - 1 : n;
        symaddr_redop_t op = last && cases[c].op ? SYMADDR_MAX : SYMADDR_SUM;
        symaddr_status_t st = symaddr_allreduce(ctx, a, b, count, cases[c].dt, op, NULL);
        if (st == SYMADDR_OK)
            st = symaddr_stream_sync(ctx, NULL);
        int nodes = symaddr_node_size(ctx) < t_size, ok_here = !nodes && (cases[c].op || last);
        int want_ok = ok_here                ? st == SYMADDR_OK
                      : nodes && cases[c].op ? st == SYMADDR_ERR_MISMATCH
                      : nodes                ? st != SYMADDR_OK
                              : st == SYMADDR_ERR_TIMEOUT || st == SYMADDR_ERR_BROKEN;
        T_CHECK(want_ok, "%s, no_call_check%s: rank %d returned %s", cases[c].what,
                nodes ? " (nodes)" : "", t_rank, symaddr_strerror(st));
        if (st == SYMADDR_OK) { /* own op over every rank's first count elements */
            T_OK(ctx, symaddr_memcpy(ctx, h, b, count * 4));
            long bad = 0;
            for (size_t i = 0; i < count; i++) {
                long want = op == SYMADDR_MAX
                                ? (t_size - 1) * 1000L + (long)i
                                : 1000L * t_size * (t_size - 1) / 2 + (long)i * t_size;
                float v;
                memcpy(&v, &h[i], 4);
                bad += f32 ? v != (float)want : h[i] != want;
            }
            T_CHECK(bad == 0, "%s, no_call_check: rank %d has %ld of %zu wrong", cases[c].what,
                    t_rank, bad, count);
        }
        mismatch_end(&ctx, b, h, count, cap, cases[c].what);
    }
}

/* Nodes that disagree, each node agreeing within itself (simulated nodes of 2 ranks; the last
 * node passes another count, op or root): no node's kernel can see it, the step between nodes
 * must. Every rank returns MISMATCH, and none writes past its recv. */
static void test_identity_nodes(void *u)
{
    static const struct {
        const char *what;
        int kind;  /* 0 allreduce, 1 reduce_scatter, 2 allgather, 3 alltoall, 4 broadcast,
                      5 reduce, 6 gather */
        int other; /* 0: count - 1, 1: MAX, 2: root */
    } cases[] = {
        {"allreduce, count", 0, 0}, {"allreduce, op", 0, 1},   {"reduce_scatter, op", 1, 1},
        {"allgather, count", 2, 0}, {"alltoall, count", 3, 0}, {"broadcast, root", 4, 2},
        {"reduce, op", 5, 1},       {"gather, root", 6, 2},
    };
    (void)u;
    if (t_size < 3) {
        T_SKIP("needs 2 simulated nodes of at most 2 ranks, have %d ranks", t_size);
        return;
    }
    const size_t n = 301, cap = n * (size_t)t_size + 64;
    int odd = t_rank / 2 == (t_size - 1) / 2; /* on the last node */
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        symaddr_config_t cfg;
        symaddr_config_default(&cfg);
        cfg.node_size = 2;
        int32_t *a, *b, *h;
        symaddr_context_t *ctx = mismatch_begin(&cfg, cap, &a, &b, &h);
        int k = cases[c].kind, other = cases[c].other;
        size_t count = odd && other == 0 ? n - 1 : n;
        symaddr_redop_t op = odd && other == 1 ? SYMADDR_MAX : SYMADDR_SUM;
        int root = odd && other == 2 ? t_size - 1 : 0;
        size_t wrote = k == 2 || k == 3 || k == 6 ? count * (size_t)t_size : count;
        symaddr_status_t st =
            k == 0   ? symaddr_allreduce(ctx, a, b, count, SYMADDR_INT32, op, NULL)
            : k == 1 ? symaddr_reduce_scatter(ctx, a, b, count, SYMADDR_INT32, op, NULL)
            : k == 2 ? symaddr_allgather(ctx, a, b, count, SYMADDR_INT32, NULL)
            : k == 3 ? symaddr_alltoall(ctx, a, b, count, SYMADDR_INT32, NULL)
            : k == 4 ? symaddr_broadcast(ctx, a, b, count, SYMADDR_INT32, root, NULL)
            : k == 5 ? symaddr_reduce(ctx, a, b, count, SYMADDR_INT32, op, root, NULL)
                     : symaddr_gather(ctx, a, b, count, SYMADDR_INT32, root, NULL);
        if (st == SYMADDR_OK)
            st = symaddr_stream_sync(ctx, NULL);
        T_CHECK(st == SYMADDR_ERR_MISMATCH, "%s: the last node disagrees, rank %d returned %s",
                cases[c].what, t_rank, symaddr_strerror(st));
        /* the message names both calls: rank 0's and the last node's */
        static const char *const names[] = {"allreduce", "reduce_scatter", "allgather", "alltoall",
                                            "broadcast", "reduce",         "gather"};
        char want[2][96];
        for (int w = 0; w < 2; w++) { /* 0: rank 0's call, 1: the last node's */
            char how[16] = "", root[24] = "";
            if (k == 0 || k == 1 || k == 5)
                snprintf(how, sizeof(how), ", op %s", w && other == 1 ? "max" : "sum");
            if (k >= 4)
                snprintf(root, sizeof(root), ", root %d", w && other == 2 ? t_size - 1 : 0);
            snprintf(want[w], sizeof(want[w]), "(%s, %s%s%s, count %zu)", names[k],
                     symaddr_dtype_name(SYMADDR_INT32), how, root, w && other == 0 ? n - 1 : n);
        }
        const char *msg = symaddr_last_error(ctx);
        T_CHECK(strstr(msg, want[0]) && strstr(msg, want[1]),
                "%s: rank %d's message \"%s\" does not name both %s and %s", cases[c].what, t_rank,
                msg, want[0], want[1]);
        mismatch_end(&ctx, b, h, wrote, cap, cases[c].what);
    }
}

/* 1000 allreduces, no host synchronisation in between: the counters keep counting.
 * x <- allreduce(x) with x = rank + 1 at first: then x_{k+1} = size * x_k mod 2^64. */
static void test_back_to_back(void *u)
{
    fix_t f;
    (void)u;
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, NULL);
    fix_init(&f, ctx);
    uint64_t *x = (uint64_t *)f.a, *y = (uint64_t *)f.b, h[5], want;
    for (int i = 0; i < 5; i++)
        h[i] = (uint64_t)t_rank + 1 + (uint64_t)i;
    T_OK(ctx, symaddr_memcpy(ctx, x, h, sizeof(h)));
    MPI_Barrier(MPI_COMM_WORLD);
    symaddr_status_t st = SYMADDR_OK;
    for (int k = 0; k < 1000 && st == SYMADDR_OK; k++)
        st = symaddr_allreduce(ctx, k % 2 ? y : x, k % 2 ? x : y, 5, SYMADDR_UINT64, SYMADDR_SUM,
                               NULL);
    T_OK(ctx, st);
    T_OK(ctx, symaddr_stream_sync(ctx, NULL));
    T_OK(ctx, symaddr_memcpy(ctx, h, x, sizeof(h)));
    int bad = 0;
    for (int i = 0; i < 5; i++) {
        want = 0;
        for (int r = 0; r < t_size; r++)
            want += (uint64_t)r + 1 + (uint64_t)i;
        for (int k = 1; k < 1000; k++)
            want *= (uint64_t)t_size;
        bad += h[i] != want;
    }
    T_CHECK(bad == 0, "%d of 5 wrong after 1000 allreduces", bad);
    MPI_Barrier(MPI_COMM_WORLD);
    fix_fini(&f);
    T_OK(ctx, symaddr_finalize(&ctx));
}

/* Validation mode: bad arguments on one rank fail every rank with the same status. */
static void test_bad_arguments(void *u)
{
    symaddr_config_t cfg;
    fix_t f;
    static int plain[64];
    (void)u;
    symaddr_config_default(&cfg);
    cfg.validate = 1;
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, &cfg);
    fix_init(&f, ctx);
    int last = t_size - 1;
    T_STATUS(ctx,
             symaddr_allreduce(ctx, t_rank == last ? (void *)plain : f.a, f.b, 8, SYMADDR_INT32,
                               SYMADDR_SUM, NULL),
             SYMADDR_ERR_NOT_FOUND);
    if (t_size > 1) { /* a count, and a dtype, that one rank alone passes */
        T_STATUS(
            ctx,
            symaddr_allreduce(ctx, f.a, f.b, t_rank == 0 ? 9 : 8, SYMADDR_INT32, SYMADDR_SUM, NULL),
            SYMADDR_ERR_MISMATCH);
        T_STATUS(ctx,
                 symaddr_allreduce(ctx, f.a, f.b, 8,
                                   t_rank == 1 ? (symaddr_dtype_t)42 : SYMADDR_INT32, SYMADDR_SUM,
                                   NULL),
                 SYMADDR_ERR_INVALID_ARG);
    }
    T_STATUS(ctx, symaddr_allreduce(ctx, f.a, f.b, f.cap, SYMADDR_INT32, SYMADDR_SUM, NULL),
             SYMADDR_ERR_OUT_OF_BOUNDS);
    T_STATUS(ctx, symaddr_broadcast(ctx, f.a, f.b, 8, SYMADDR_INT32, t_size, NULL),
             SYMADDR_ERR_INVALID_ARG);
    T_STATUS(ctx, symaddr_allgather(ctx, f.a, f.b, 8, SYMADDR_INT32, NULL), SYMADDR_OK);
    T_STATUS(ctx, symaddr_alltoall(ctx, f.a, f.a, 8, SYMADDR_INT32, NULL), SYMADDR_ERR_INVALID_ARG);
    /* rooted: a root out of range on every rank, a root that differs between ranks */
    T_STATUS(ctx, symaddr_reduce(ctx, f.a, f.b, 8, SYMADDR_INT32, SYMADDR_SUM, -1, NULL),
             SYMADDR_ERR_INVALID_ARG);
    T_CHECK(strstr(symaddr_last_error(ctx), "root -1 is not a rank") != NULL, "message: %s",
            symaddr_last_error(ctx));
    T_STATUS(ctx, symaddr_gather(ctx, f.a, f.b, 8, SYMADDR_INT32, t_size, NULL),
             SYMADDR_ERR_INVALID_ARG);
    T_STATUS(ctx, symaddr_scatter(ctx, f.a, f.b, 8, SYMADDR_INT32, t_size + 5, NULL),
             SYMADDR_ERR_INVALID_ARG);
    if (t_size > 1)
        T_STATUS(ctx, symaddr_gather(ctx, f.a, f.b, 8, SYMADDR_INT32, t_rank == 0, NULL),
                 SYMADDR_ERR_MISMATCH);
    T_STATUS(ctx, symaddr_reduce(ctx, f.a, f.b, 8, SYMADDR_INT32, (symaddr_redop_t)9, 0, NULL),
             SYMADDR_ERR_INVALID_ARG);
    T_STATUS(ctx, symaddr_scatter(ctx, f.a, f.b, f.cap, SYMADDR_INT32, 0, NULL),
             SYMADDR_ERR_OUT_OF_BOUNDS);
    T_STATUS(ctx, symaddr_allreduce(NULL, f.a, f.b, 8, SYMADDR_INT32, SYMADDR_SUM, NULL),
             SYMADDR_ERR_INVALID_ARG);
    T_OK(ctx, symaddr_stream_sync(ctx, NULL));
    fix_fini(&f);
    T_OK(ctx, symaddr_finalize(&ctx));
}

/* Validation mode: ranks that pass different ops, dtypes, roots or algorithms' sizes get
 * SYMADDR_ERR_MISMATCH on every rank, on every backend, and no collective runs. */
static void test_validate_mismatch(void *u)
{
    symaddr_config_t cfg;
    fix_t f;
    (void)u;
    if (t_size < 2) {
        T_SKIP("needs 2 ranks: the ranks' arguments disagree");
        return;
    }
    symaddr_config_default(&cfg);
    cfg.validate = 1;
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, &cfg);
    fix_init(&f, ctx);
    symaddr_redop_t op = t_rank % 2 ? SYMADDR_MAX : SYMADDR_SUM;
    static const size_t n[] = {5, 3000, 40000}; /* LL, one-shot and two-shot sizes of i32 */
    for (size_t k = 0; k < 3; k++) {
        T_STATUS(ctx, symaddr_allreduce(ctx, f.a, f.b, n[k], SYMADDR_INT32, op, NULL),
                 SYMADDR_ERR_MISMATCH);
        T_CHECK(strstr(symaddr_last_error(ctx), "different") != NULL, "message: %s",
                symaddr_last_error(ctx));
    }
    T_STATUS(ctx, symaddr_reduce_scatter(ctx, f.a, f.b, 8, SYMADDR_INT32, op, NULL),
             SYMADDR_ERR_MISMATCH);
    T_STATUS(ctx,
             symaddr_allgather(ctx, f.a, f.b, 8, t_rank % 2 ? SYMADDR_UINT32 : SYMADDR_INT32, NULL),
             SYMADDR_ERR_MISMATCH);
    T_STATUS(ctx, symaddr_broadcast(ctx, f.a, f.b, 8, SYMADDR_INT32, t_rank % 2, NULL),
             t_size > 1 ? SYMADDR_ERR_MISMATCH : SYMADDR_OK);
    /* Views at offsets that differ between ranks, where kernels reach the peers' copy at this
     * rank's offset (before, each returned OK with data from the wrong place); the in-place
     * forms' rank-dependent blocks stay legal, and so do rooted collectives, whose kernels
     * reach the peers' buffers where those passed them (test_rooted_offsets checks the data). */
    if (t_size > 1) {
        size_t off = t_rank % 2 ? 64 : 0;
        T_STATUS(ctx, symaddr_allreduce(ctx, f.a + off, f.b, 8, SYMADDR_INT32, SYMADDR_SUM, NULL),
                 SYMADDR_ERR_MISMATCH);
        T_CHECK(strstr(symaddr_last_error(ctx), "send at byte") != NULL &&
                    strstr(symaddr_last_error(ctx), "same one") != NULL,
                "message: %s", symaddr_last_error(ctx));
        T_STATUS(ctx, symaddr_allgather(ctx, f.a, f.b + off, 8, SYMADDR_INT32, NULL),
                 SYMADDR_ERR_MISMATCH);
        T_CHECK(strstr(symaddr_last_error(ctx), "recv at byte") != NULL, "message: %s",
                symaddr_last_error(ctx));
        T_OK(ctx, symaddr_broadcast(ctx, f.a + off, f.b, 8, SYMADDR_INT32, 0, NULL));
        T_OK(ctx, symaddr_gather(ctx, f.a, f.b + off, 8, SYMADDR_INT32, 0, NULL));
        T_OK(ctx, symaddr_scatter(ctx, f.a + off, f.b, 8, SYMADDR_INT32, 0, NULL));
        T_OK(ctx, symaddr_reduce(ctx, f.a + off, f.b, 8, SYMADDR_INT32, SYMADDR_SUM, 0, NULL));
        T_OK(ctx, symaddr_allgather(ctx, f.a + off, f.b, 8, SYMADDR_INT32, NULL));
        T_OK(ctx, symaddr_reduce_scatter(ctx, f.a, f.b + off, 8, SYMADDR_INT32, SYMADDR_SUM, NULL));
    }
    T_OK(ctx, symaddr_stream_sync(ctx, NULL));
    /* The context still works afterwards. */
    T_OK(ctx, symaddr_allreduce(ctx, f.a, f.b, 8, SYMADDR_INT32, SYMADDR_SUM, NULL));
    T_OK(ctx, symaddr_stream_sync(ctx, NULL));
    fix_fini(&f);
    T_OK(ctx, symaddr_finalize(&ctx));
}

/* The other-allocation tests' data: f->a and a new ipc allocation (returned) of n int32 each
 * hold rank * 1000 + i. */
static char *other_allocation(fix_t *f, size_t n)
{
    symaddr_map_t *m;
    char *c = NULL;
    T_OK(f->ctx, symaddr_symmetric_alloc(f->ipc, n * sizeof(int32_t), (void **)&c, &m));
    int32_t *h = (int32_t *)f->h_in;
    for (size_t i = 0; i < n; i++)
        h[i] = t_rank * 1000 + (int)i;
    T_OK(f->ctx, symaddr_memcpy(f->ctx, f->a, h, n * sizeof(int32_t)));
    T_OK(f->ctx, symaddr_memcpy(f->ctx, c, h, n * sizeof(int32_t)));
    return c;
}

/* Ranks that pass different allocations at the same offset, where kernels reach the peers
 * copy: validation refuses the call on every rank, naming both registrations. It compared the
 * offsets only: a two-shot allreduce whose rank 1 passed another allocation as send returned OK
 * on every rank, with that allocation's peer copies in the sums. The same allocation on every
 * rank stays OK and exact. */
static void test_validate_other_allocation(void *u)
{
    symaddr_config_t cfg;
    fix_t f;
    (void)u;
    if (t_size < 2) {
        T_SKIP("needs 2 ranks: the ranks' buffers differ");
        return;
    }
    symaddr_config_default(&cfg);
    cfg.validate = 1;
    cfg.allreduce_algo = SYMADDR_ALLREDUCE_TWOSHOT; /* its peers load send where it lies */
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, &cfg);
    fix_init(&f, ctx);
    const size_t n = 1001;
    char *c = other_allocation(&f, n);
    T_STATUS(
        ctx,
        symaddr_allreduce(ctx, t_rank == 1 ? c : f.a, f.b, n, SYMADDR_INT32, SYMADDR_SUM, NULL),
        SYMADDR_ERR_MISMATCH);
    T_CHECK(strstr(symaddr_last_error(ctx), "passed send in the registration of collective") !=
                    NULL &&
                strstr(symaddr_last_error(ctx), "same allocation") != NULL,
            "message: %s", symaddr_last_error(ctx));
    /* recv: the all-gather's peers store into it */
    T_STATUS(ctx, symaddr_allgather(ctx, f.a, t_rank == 1 ? c : f.b, 1, SYMADDR_INT32, NULL),
             SYMADDR_ERR_MISMATCH);
    T_CHECK(strstr(symaddr_last_error(ctx), "passed recv in") != NULL, "message: %s",
            symaddr_last_error(ctx));
    T_OK(ctx, symaddr_allreduce(ctx, f.a, f.b, n, SYMADDR_INT32, SYMADDR_SUM, NULL));
    T_OK(ctx, symaddr_stream_sync(ctx, NULL));
    int32_t *got = (int32_t *)f.h_out;
    T_OK(ctx, symaddr_memcpy(ctx, got, f.b, n * sizeof(int32_t)));
    long wrong = 0;
    for (size_t i = 0; i < n; i++)
        wrong += got[i] != 1000 * t_size * (t_size - 1) / 2 + t_size * (int)i;
    T_CHECK(wrong == 0, "the allreduce over one allocation after the refusals: %ld wrong", wrong);
    T_OK(ctx, symaddr_symmetric_free(f.ipc, c));
    fix_fini(&f);
    T_OK(ctx, symaddr_finalize(&ctx));
}

/* The same without validation: the buffers the kernels reach on the peers join the call's
 * identity, which the node's ranks compare in the kernel, so ranks passing another allocation
 * or another offset fail with MISMATCH on every rank. Before, the two-shot returned OK with
 * the other allocation's peer copies in its sums (one-shot, LL and Lamport stage send and
 * were exact; they refuse it now too, as the contract says). */
static void test_other_allocation(void *u)
{
    (void)u;
    if (t_size < 2) {
        T_SKIP("needs 2 ranks: the ranks' buffers differ");
        return;
    }
    static const symaddr_allreduce_algo_t algos[] = {
        SYMADDR_ALLREDUCE_TWOSHOT, SYMADDR_ALLREDUCE_ONESHOT, SYMADDR_ALLREDUCE_LL,
        SYMADDR_ALLREDUCE_TWOSHOT_GET, SYMADDR_ALLREDUCE_TWOSHOT_COPY};
    const size_t n = 1001;
    for (int k = 0; k < (int)(sizeof(algos) / sizeof(algos[0])) + 2; k++) {
        symaddr_config_t cfg;
        fix_t f;
        symaddr_config_default(&cfg);
        cfg.validate = 0;
        cfg.allreduce_algo = k < 5 ? algos[k] : SYMADDR_ALLREDUCE_TWOSHOT;
        symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, &cfg);
        fix_init(&f, ctx);
        char *c = other_allocation(&f, n);
        int other = t_rank == 1;
        const char *what;
        symaddr_status_t st;
        if (k < 5) { /* send in another allocation */
            what = "allreduce, send in another allocation";
            st = symaddr_allreduce(ctx, other ? c : f.a, f.b, n, SYMADDR_INT32, SYMADDR_SUM, NULL);
        } else if (k == 5) { /* send at another offset of the same allocation */
            what = "allreduce, send at another offset";
            st = symaddr_allreduce(ctx, f.a + (other ? 64 : 0), f.b, n, SYMADDR_INT32, SYMADDR_SUM,
                                   NULL);
        } else { /* recv in another allocation: the all-gather's peers store into it */
            what = "allgather, recv in another allocation";
            st = symaddr_allgather(ctx, f.a, other ? c : f.b, 1, SYMADDR_INT32, NULL);
        }
        if (st == SYMADDR_OK) /* on a GPU the kernel's verdict comes with the stream */
            st = symaddr_stream_sync(ctx, NULL);
        T_CHECK(st == SYMADDR_ERR_MISMATCH || st == SYMADDR_ERR_BROKEN,
                "%s (allreduce algorithm %d): %s", what, (int)cfg.allreduce_algo,
                symaddr_strerror(st));
        /* broken for every later call: the ranks may have paired nothing else */
        T_STATUS(ctx, symaddr_allreduce(ctx, f.a, f.b, n, SYMADDR_INT32, SYMADDR_SUM, NULL),
                 SYMADDR_ERR_BROKEN);
        free(f.h_in); /* the allocations go with the broken context */
        free(f.h_out);
        free(f.h_ref);
        symaddr_finalize(&ctx);
    }
}

/* A rank that never arrives: the others get an error, not a hang, within the timeout: the
 * first to give up returns TIMEOUT and tells the rest, which return TIMEOUT or BROKEN. From
 * then on the context is broken on every rank, the absent one included. */
static void test_timeout(void *u)
{
    symaddr_config_t cfg;
    fix_t f;
    (void)u;
    symaddr_config_default(&cfg);
    symaddr_context_t *ctx = t_context(MPI_COMM_WORLD, &cfg);
    fix_init(&f, ctx);
    T_OK(ctx, symaddr_timeout_set(ctx, 2000)); /* the barrier's; the setup's was the long one */
    int timed_out = 0, any_timed_out = 0;
    if (t_rank != 0) {
        double t0 = MPI_Wtime();
        symaddr_status_t st = symaddr_barrier(ctx, NULL);
        if (st == SYMADDR_OK)
            st = symaddr_stream_sync(ctx, NULL);
        T_CHECK(st == SYMADDR_ERR_TIMEOUT || st == SYMADDR_ERR_BROKEN,
                "barrier without rank 0 returned %s", symaddr_strerror(st));
        timed_out = st == SYMADDR_ERR_TIMEOUT;
        T_CHECK(MPI_Wtime() - t0 < 30, "the timeout took %.1f s", MPI_Wtime() - t0);
        T_CHECK(strstr(symaddr_last_error(ctx), "2000 ms") != NULL, "message: %s",
                symaddr_last_error(ctx));
    }
    MPI_Allreduce(&timed_out, &any_timed_out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    T_CHECK(t_size == 1 || any_timed_out, "no rank reported the timeout itself");
    /* Every rank, rank 0 too, now refuses collectives and allocations on the context. */
    symaddr_status_t st = symaddr_allreduce(ctx, f.a, f.b, 8, SYMADDR_INT32, SYMADDR_SUM, NULL);
    if (st == SYMADDR_OK)
        st = symaddr_stream_sync(ctx, NULL);
    T_CHECK(t_size == 1 || st == SYMADDR_ERR_BROKEN || (t_rank == 0 && st == SYMADDR_ERR_TIMEOUT),
            "the allreduce after the timeout returned %s", symaddr_strerror(st));
    if (t_size > 1) {
        T_STATUS(ctx, symaddr_allreduce(ctx, f.a, f.b, 8, SYMADDR_INT32, SYMADDR_SUM, NULL),
                 SYMADDR_ERR_BROKEN);
        T_CHECK(strstr(symaddr_last_error(ctx), "finalize") != NULL, "message: %s",
                symaddr_last_error(ctx));
    }
    /* Freeing is collective too: refused; finalize releases the memory. */
    if (t_size > 1)
        T_STATUS(ctx, symaddr_symmetric_free(f.ipc, f.a), SYMADDR_ERR_BROKEN);
    MPI_Barrier(MPI_COMM_WORLD);
    free(f.h_in);
    free(f.h_out);
    free(f.h_ref);
    T_OK(ctx, symaddr_finalize(&ctx));
}

/* The algorithm settings: read from the environment, and refused when out of range. */
static void test_algo_config(void *u)
{
    symaddr_config_t cfg;
    symaddr_context_t *ctx = NULL;
    (void)u;
    setenv("SYMADDR_ALLREDUCE", "ll", 1);
    setenv("SYMADDR_LL_BYTES", "4096", 1);
    symaddr_config_default(&cfg);
    T_CHECK(cfg.allreduce_algo == SYMADDR_ALLREDUCE_LL && cfg.ll_bytes == 4096);
    unsetenv("SYMADDR_LL_BYTES");
    setenv("SYMADDR_ALLREDUCE", "twoshot-copy", 1); /* the last name */
    symaddr_config_default(&cfg);
    T_CHECK(cfg.allreduce_algo == SYMADDR_ALLREDUCE_TWOSHOT_COPY,
            "SYMADDR_ALLREDUCE=twoshot-copy read as %d", (int)cfg.allreduce_algo);
    setenv("SYMADDR_ALLREDUCE", "fastest", 1);
    symaddr_config_default(&cfg);
    T_STATUS(NULL, symaddr_init(MPI_COMM_WORLD, &cfg, &ctx), SYMADDR_ERR_INVALID_ARG);
    T_CHECK(ctx == NULL);
    unsetenv("SYMADDR_ALLREDUCE");
    symaddr_config_default(&cfg);
    T_CHECK(cfg.ll_bytes == SIZE_MAX, "ll_bytes default: %zu", cfg.ll_bytes);
    cfg.ll_bytes = 64 << 10; /* past the 32 KiB inbox */
    T_STATUS(NULL, symaddr_init(MPI_COMM_WORLD, &cfg, &ctx), SYMADDR_ERR_INVALID_SIZE);
    cfg.ll_bytes = 0; /* never LL */
    T_CHECK(cfg.lamport_bytes == SIZE_MAX, "lamport_bytes default: %zu", cfg.lamport_bytes);
    cfg.lamport_bytes = ((size_t)2 << 20) + 16; /* past the largest slot (2 MiB) */
    T_STATUS(NULL, symaddr_init(MPI_COMM_WORLD, &cfg, &ctx), SYMADDR_ERR_INVALID_SIZE);
    T_CHECK(ctx == NULL);
    setenv("SYMADDR_LAMPORT_BYTES", "2K", 1);
    symaddr_config_default(&cfg);
    T_CHECK(cfg.lamport_bytes == 2048, "SYMADDR_LAMPORT_BYTES=2K read as %zu", cfg.lamport_bytes);
    setenv("SYMADDR_LAMPORT_BYTES", "lots", 1);
    symaddr_config_default(&cfg);
    T_STATUS(NULL, symaddr_init(MPI_COMM_WORLD, &cfg, &ctx), SYMADDR_ERR_INVALID_SIZE);
    T_CHECK(ctx == NULL);
    unsetenv("SYMADDR_LAMPORT_BYTES");
    symaddr_config_default(&cfg);
    cfg.ll_bytes = 0;
    cfg.lamport_bytes = 0; /* never Lamport either */
    ctx = t_context(MPI_COMM_WORLD, &cfg);
    T_CHECK(ctx != NULL);
    T_OK(ctx, symaddr_finalize(&ctx));
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv);
    symaddr_context_t *probe = t_context(MPI_COMM_WORLD, NULL);
    if (t_rank == 0)
        printf("# backend %s, %d ranks\n", symaddr_backend_name(symaddr_backend(probe)), t_size);
    symaddr_finalize(&probe);
    T_RUN(test_allreduce_auto, NULL);
    T_RUN(test_allreduce_oneshot, NULL);
    T_RUN(test_allreduce_twoshot, NULL);
    T_RUN(test_allreduce_twoshot_get, NULL);
    T_RUN(test_allreduce_twoshot_copy, NULL);
    T_RUN(test_allreduce_lamport_slot, NULL);
    T_RUN(test_allreduce_ll, NULL);
    T_RUN(test_allreduce_lamport, NULL);
    T_RUN(test_lamport, NULL);
    T_RUN(test_nan_bits, NULL);
    T_RUN(test_others, NULL);
    T_RUN(test_in_place_forms, NULL);
    T_RUN(test_rooted_offsets, NULL);
    T_RUN(test_rooted_imports, NULL);
    T_RUN(test_mixed_providers, NULL);
    T_RUN(test_two_nodes, NULL);
    T_RUN(test_node_failure_agrees, NULL);
    T_RUN(test_identity_mismatch, NULL);
    T_RUN(test_identity_unchecked, NULL);
    T_RUN(test_identity_nodes, NULL);
    T_RUN(test_back_to_back, NULL);
    T_RUN(test_bad_arguments, NULL);
    T_RUN(test_validate_mismatch, NULL);
    T_RUN(test_validate_other_allocation, NULL);
    T_RUN(test_other_allocation, NULL);
    T_RUN(test_timeout, NULL);
    T_RUN(test_algo_config, NULL);
    return t_finish();
}
