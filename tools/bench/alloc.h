/* SPDX-License-Identifier: MIT */
/* symaddr-bench's host-side ops: symmetric allocation and lookup. */
#ifndef SYMADDR_BENCH_ALLOC_H
#define SYMADDR_BENCH_ALLOC_H

#include <pthread.h>
#include <sched.h>

static int run_alloc(symaddr_context_t *ctx, const opts_t *o)
{
    int rank = symaddr_rank(ctx);
    if (rank == 0) {
        printf("# symaddr-bench alloc: %d ranks, backend %s: allocate_symmetric + free, per call\n",
               symaddr_size(ctx), symaddr_backend_name(symaddr_backend(ctx)));
        printf(
            "# reference: the backend's plain allocation + free (symaddr_mem_alloc); first: the\n"
            "# first call of a size (ipc: a handle exchange; later ones take back the memory\n"
            "# retained at free, up to SYMADDR_RETAIN_BYTES: %s)\n",
            getenv("SYMADDR_RETAIN_BYTES") ? getenv("SYMADDR_RETAIN_BYTES") : "256M");
        printf("%8s %12s %12s %12s %8s %12s\n", "provider", "size(B)", "time(us)", "plain(us)",
               "ratio", "first(us)");
    }
    for (int k = 0; k < 2; k++) {
        symaddr_provider_kind_t kind = k ? SYMADDR_PROVIDER_IPC : SYMADDR_PROVIDER_HEAP;
        symaddr_provider_t *prov;
        if (symaddr_provider_get(ctx, kind, &prov))
            continue;
        for (double s = (double)o->min; s <= (double)o->max; s = next_size(o, s)) {
            size_t bytes = (size_t)s;
            void *p;
            symaddr_map_t *m;
            symaddr_status_t st = SYMADDR_OK;
            MPI_Barrier(symaddr_comm(ctx));
            double t0 = MPI_Wtime(), first = 0;
            for (int i = 0; i < o->iters + 1 && st == SYMADDR_OK; i++) {
                st = symaddr_symmetric_alloc(prov, bytes, &p, &m);
                if (st == SYMADDR_OK)
                    st = symaddr_symmetric_free(prov, p);
                if (i == 0) {
                    first = MPI_Wtime() - t0;
                    t0 = MPI_Wtime();
                }
            }
            double t = now_max(ctx, (MPI_Wtime() - t0) / o->iters);
            first = now_max(ctx, first);
            MPI_Barrier(symaddr_comm(ctx));
            t0 = MPI_Wtime();
            for (int i = 0; i < o->iters; i++)
                if (symaddr_mem_alloc(ctx, bytes, &p) == SYMADDR_OK)
                    symaddr_mem_free(ctx, p);
            double tp = now_max(ctx, (MPI_Wtime() - t0) / o->iters);
            if (rank == 0 && st == SYMADDR_OK)
                printf("%8s %12zu %12.2f %12.2f %8.2f %12.2f\n", k ? "ipc" : "heap", bytes, t * 1e6,
                       tp * 1e6, t / tp, first * 1e6);
            else if (rank == 0)
                printf("%8s %12zu %12s (%s)\n", k ? "ipc" : "heap", bytes, "failed",
                       symaddr_last_error(ctx));
            if (st != SYMADDR_OK)
                break;
        }
    }
    return 0;
}

/* Lookups of interior pointers by o->threads threads at once, with 1 and 10,000 live
 * allocations; then allocate+free of the heap with 4 threads looking up meanwhile, against
 * the same alone. Each thread is pinned to a core of its own where the rank has enough, warms
 * up, then starts with the others; a round reports its slowest thread, and LOOKUP_ROUNDS rounds
 * show how steady the machine is. */
enum {
    LOOKUP_LIVE = 10000,
    LOOKUP_CALLS = 50000, /* per thread and round, times --iters (20: a million) */
    LOOKUP_ROUNDS = 5,
    LOOKUP_WRITES = 100 /* allocate+free, times --iters (20: 2000) */
};

typedef struct lookup_job {
    symaddr_context_t *ctx;
    void **p;
    symaddr_map_t **m; /* the map each of p was allocated with */
    int n, calls;      /* live pointers to pick from; lookups to make (0: until stop) */
    const int *stop;   /* with calls == 0 */
    double seconds;    /* wall time of the calls */
    long wrong, done;  /* lookups that missed; lookups made */
    unsigned seed;
    int cpu;               /* to pin to; -1: none */
    pthread_barrier_t *go; /* timed calls start together (NULL: at once) */
} lookup_job_t;

/* calls random lookups (until *stop when 0); returns the misses. */
static long lookup_calls(const lookup_job_t *j, long calls, unsigned *x, long *done)
{
    symaddr_map_t *found;
    long wrong = 0, i;
    for (i = 0; calls ? i < calls : !__atomic_load_n(j->stop, __ATOMIC_RELAXED); i++) {
        *x = *x * 1103515245u + 12345u;
        /* live pointers only: with a writer running, p[0, n) stay allocated */
        int k = (int)(*x % (unsigned)j->n);
        char *q = (char *)j->p[k] + (*x >> 8) % 256;
        /* the map the allocation returned, compared without reading it: what a caller reads
         * in it afterwards is not the lookup's time */
        if (symaddr_lookup(j->ctx, q, &found) != SYMADDR_OK || found != j->m[k])
            wrong++;
    }
    *done = i;
    return wrong;
}

/* The reference for the lookup threads' cost to allocation: a thread as busy, without lookups. */
static void *busy_thread(void *arg)
{
    const lookup_job_t *j = (const lookup_job_t *)arg;
    while (!__atomic_load_n(j->stop, __ATOMIC_RELAXED))
        ;
    return NULL;
}

static void *lookup_thread(void *arg)
{
    lookup_job_t *j = (lookup_job_t *)arg;
    unsigned x = j->seed;
    long done;
    if (j->cpu >= 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(j->cpu, &one);
        pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
    }
    if (j->go) {
        j->wrong = lookup_calls(j, j->calls / 4, &x, &done); /* warm the caches */
        pthread_barrier_wait(j->go);
    }
    double t0 = MPI_Wtime();
    j->wrong += lookup_calls(j, j->calls, &x, &j->done);
    j->seconds = MPI_Wtime() - t0;
    return NULL;
}

/* Cpus of this rank's set for threads threads, each on a core of its own (the first hardware
 * thread of each core): the local-th group of threads cores when the set has that many (ranks
 * of a node that share a set take turns), else the first group, which ranks before this one
 * may hold too; with fewer cores than threads, every cpu of the set in turn. -1 each when the
 * set cannot be read. Returns whether every thread has a core that no other thread of this
 * rank, nor of another rank of the node, is pinned to. */
static int lookup_cpus(int threads, int local, int *cpu)
{
    cpu_set_t set;
    int n = 0, first_core[CPU_SETSIZE];
    for (int t = 0; t < threads; t++)
        cpu[t] = -1;
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return 0;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        char path[96];
        int first = c;
        if (!CPU_ISSET(c, &set))
            continue;
        snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list",
                 c);
        FILE *f = fopen(path, "r");
        if (f) {
            if (fscanf(f, "%d", &first) != 1)
                first = c;
            fclose(f);
        }
        if (first == c)
            first_core[n++] = c;
    }
    if (n >= threads) {
        int own = n >= (local + 1) * threads, from = own ? local * threads : 0;
        for (int t = 0; t < threads; t++)
            cpu[t] = first_core[from + t];
        return own;
    }
    n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < threads; c++)
        if (CPU_ISSET(c, &set))
            cpu[n++] = c;
    for (int t = n; t < threads && n > 0; t++)
        cpu[t] = cpu[t % n];
    return 0;
}

/* ns per lookup of the slowest thread (of every rank), with threads threads at once. */
static double lookup_time(symaddr_context_t *ctx, void **p, symaddr_map_t **m, int n, int threads,
                          int calls, const int *cpu, long *wrong)
{
    pthread_t tid[64];
    lookup_job_t jobs[64];
    pthread_barrier_t go;
    double worst = 0;
    pthread_barrier_init(&go, NULL, (unsigned)threads);
    MPI_Barrier(symaddr_comm(ctx));
    for (int t = 0; t < threads; t++) {
        jobs[t] = (lookup_job_t){ctx, p, m, n, calls, NULL, 0, 0, 0, 77u * t + 1, cpu[t], &go};
        pthread_create(&tid[t], NULL, lookup_thread, &jobs[t]);
    }
    for (int t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        double per = jobs[t].seconds / jobs[t].calls;
        worst = per > worst ? per : worst;
        *wrong += jobs[t].wrong;
    }
    pthread_barrier_destroy(&go);
    return now_max(ctx, worst) * 1e9;
}

/* Seconds per allocate+free of 256 B from the heap, with readers threads meanwhile: looking up,
 * or (busy) only spinning. */
static double write_time(symaddr_context_t *ctx, symaddr_provider_t *heap, void **p,
                         symaddr_map_t **m, int n, int readers, bool busy, int writes, long *wrong,
                         long *lookups)
{
    pthread_t tid[4];
    lookup_job_t jobs[4];
    int stop = 0, ok = 1;
    for (int t = 0; t < readers; t++) {
        jobs[t] = (lookup_job_t){ctx, p, m, n, 0, &stop, 0, 0, 0, 99u * t + 5, -1, NULL};
        pthread_create(&tid[t], NULL, busy ? busy_thread : lookup_thread, &jobs[t]);
    }
    MPI_Barrier(symaddr_comm(ctx));
    double t0 = MPI_Wtime();
    for (int i = 0; i < writes && ok; i++) {
        void *q;
        symaddr_map_t *qm;
        ok = symaddr_symmetric_alloc(heap, 256, &q, &qm) == SYMADDR_OK &&
             symaddr_symmetric_free(heap, q) == SYMADDR_OK;
    }
    double t = (MPI_Wtime() - t0) / writes;
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int t = 0; t < readers; t++) {
        pthread_join(tid[t], NULL);
        *wrong += jobs[t].wrong;
        *lookups += jobs[t].done;
    }
    *wrong += !ok;
    return now_max(ctx, t);
}

/* ---- init: symaddr_init by phase, against MPI_Init in the same job ------------------------ */

/* Seconds this rank's MPI_Init took (symaddr-bench's main times it). */
static double g_mpi_init_seconds;

enum { INIT_PHASES = 6 };
static const char *const init_phase[INIT_PHASES] = {"bootstrap", "backend",  "settings",
                                                    "heap",      "locality", "collectives"};

/* The TRACE line of an init: its phases, in us. */
static void catch_phases(void *cookie, const char *line)
{
    double *us = (double *)cookie;
    const char *p = strstr(line, "us by phase: ");
    if (p)
        sscanf(p,
               "us by phase: bootstrap %lf, backend %lf, settings %lf, heap %lf, locality %lf, "
               "collectives %lf",
               &us[0], &us[1], &us[2], &us[3], &us[4], &us[5]);
}

static int run_init(symaddr_context_t *ctx, const opts_t *o)
{
    int rank = symaddr_rank(ctx), n = symaddr_size(ctx), iters = o->iters;
    double *slowest = (double *)calloc((size_t)iters * (INIT_PHASES + 1), sizeof(double));
    for (int i = 0; i < iters; i++) {
        symaddr_config_t cfg;
        symaddr_context_t *c = NULL;
        double us[INIT_PHASES + 1] = {0};
        symaddr_config_default(&cfg);
        cfg.backend = symaddr_backend(ctx);
        cfg.logger = catch_phases;
        cfg.logger_cookie = us;
        cfg.debug_level = 2;  /* TRACE */
        cfg.debug_subsys = 1; /* INIT */
        MPI_Barrier(symaddr_comm(ctx));
        double t0 = MPI_Wtime();
        symaddr_status_t st = symaddr_init(symaddr_comm(ctx), &cfg, &c);
        us[INIT_PHASES] = (MPI_Wtime() - t0) * 1e6;
        if (st != SYMADDR_OK) {
            if (rank == 0)
                fprintf(stderr, "symaddr-bench: init: %s\n", symaddr_last_error(NULL));
            free(slowest);
            return 1;
        }
        symaddr_finalize(&c);
        MPI_Allreduce(us, slowest + (size_t)i * (INIT_PHASES + 1), INIT_PHASES + 1, MPI_DOUBLE,
                      MPI_MAX, symaddr_comm(ctx));
    }
    double mpi_init = 0;
    MPI_Allreduce(&g_mpi_init_seconds, &mpi_init, 1, MPI_DOUBLE, MPI_MAX, symaddr_comm(ctx));
    if (rank == 0) {
        printf("# symaddr-bench init: %d ranks, backend %s, %d inits; times: the slowest rank's, "
               "the median of the inits\n",
               n, symaddr_backend_name(symaddr_backend(ctx)), iters);
        printf("#%-22s %12s\n", " phase", "time(us)");
        double med[INIT_PHASES + 1];
        for (int k = 0; k <= INIT_PHASES; k++) {
            double v[BENCH_ROUNDS_MAX];
            int m = iters < BENCH_ROUNDS_MAX ? iters : BENCH_ROUNDS_MAX;
            for (int i = 0; i < m; i++)
                v[i] = slowest[(size_t)(iters - m + i) * (INIT_PHASES + 1) + k];
            med[k] = median_of(v, m);
            if (k < INIT_PHASES)
                printf(" %-22s %12.1f\n", init_phase[k], med[k]);
        }
        printf(" %-22s %12.1f\n", "symaddr_init", med[INIT_PHASES]);
        printf(" %-22s %12.1f\n", "MPI_Init (this job)", mpi_init * 1e6);
        printf("# symaddr_init / MPI_Init: %.3f (goal: at most 0.5)\n",
               med[INIT_PHASES] / (mpi_init * 1e6));
    }
    free(slowest);
    return 0;
}

static int run_lookup(symaddr_context_t *ctx, const opts_t *o)
{
    symaddr_provider_t *heap;
    void **p = (void **)calloc(LOOKUP_LIVE, sizeof(void *));
    symaddr_map_t **m = (symaddr_map_t **)calloc(LOOKUP_LIVE, sizeof(symaddr_map_t *));
    int rank = symaddr_rank(ctx), ok = p && m, n = 0, live[2] = {1, LOOKUP_LIVE}, cpu[64];
    long wrong = 0, lookups = 0, all_wrong;
    double t[2][LOOKUP_ROUNDS], med[2] = {0, 0}, w[3] = {0, 0, 0};
    int local = 0;
    MPI_Comm node;
    if (MPI_Comm_split_type(symaddr_comm(ctx), MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
        MPI_Comm_rank(node, &local);
        MPI_Comm_free(&node);
    }
    int own = lookup_cpus(o->threads, local, cpu);
    if (symaddr_provider_get(ctx, SYMADDR_PROVIDER_HEAP, &heap)) {
        free(p);
        free(m);
        return 1;
    }
    for (int k = 0; k < 2 && ok; k++) {
        while (n < live[k] && ok)
            ok = symaddr_symmetric_alloc(heap, 256, &p[n], &m[n]) == SYMADDR_OK, n++;
        for (int r = 0; r < LOOKUP_ROUNDS && ok; r++)
            t[k][r] = lookup_time(ctx, p, m, n, o->threads, o->iters * LOOKUP_CALLS, cpu, &wrong);
        if (ok)
            med[k] = median_of(t[k], LOOKUP_ROUNDS);
    }
    if (ok) {
        long none = 0;
        w[0] = write_time(ctx, heap, p, m, n, 0, false, o->iters * LOOKUP_WRITES, &wrong, &none);
        w[1] = write_time(ctx, heap, p, m, n, 4, false, o->iters * LOOKUP_WRITES, &wrong, &lookups);
        w[2] = write_time(ctx, heap, p, m, n, 4, true, o->iters * LOOKUP_WRITES, &wrong, &none);
    }
    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, symaddr_comm(ctx));
    if (rank == 0 && ok) {
        printf("# symaddr-bench lookup: %d ranks, backend %s, heap allocations of 256 B, "
               "%d lookup thread%s per rank, %s\n",
               symaddr_size(ctx), symaddr_backend_name(symaddr_backend(ctx)), o->threads,
               o->threads > 1 ? "s" : "",
               own ? "each pinned to a core of its own" : "pinned to cpus they may share");
        if (!own)
            printf("# threads may share cpus (this rank's, or other ranks' of the node), so each "
                   "may wait for the others: run one rank with mpiexec --bind-to none to measure "
                   "contention\n");
        printf("# ns/lookup: the slowest thread's mean over %d calls; the median of %d rounds, "
               "then each round\n",
               o->iters * LOOKUP_CALLS, LOOKUP_ROUNDS);
        printf("%12s %14s %8s %7s  %s\n", "live", "ns/lookup", "ratio", "#wrong", "rounds");
        for (int k = 0; k < 2; k++) {
            char nw[24] = "-";
            if (k)
                snprintf(nw, sizeof(nw), "%ld", all_wrong);
            printf("%12d %14.1f %8.2f %7s ", live[k], med[k], med[k] / med[0], nw);
            for (int r = 0; r < LOOKUP_ROUNDS; r++)
                printf(" %.1f", t[k][r]);
            printf("\n");
        }
        printf("# allocate+free of 256 B with %d live: alone, with 4 threads looking up (%ld "
               "lookups meanwhile on rank 0), and with 4 threads only spinning; rate: against "
               "alone; vs busy: the lookup threads' rate over the spinning threads' (goal: at "
               "least 0.5)\n",
               LOOKUP_LIVE, lookups);
        printf("%12s %14s %8s %8s\n", "lookups", "us/alloc+free", "rate", "vs busy");
        printf("%12s %14.2f %8s %8s\n", "none", w[0] * 1e6, "1.00", "");
        printf("%12s %14.2f %8.2f %8.2f\n", "4 threads", w[1] * 1e6, w[0] / w[1], w[2] / w[1]);
        printf("%12s %14.2f %8.2f %8s\n", "4 busy only", w[2] * 1e6, w[0] / w[2], "1.00");
    } else if (rank == 0) {
        fprintf(stderr, "symaddr-bench: lookup: %s (raise SYMADDR_HEAP_SIZE)\n",
                symaddr_last_error(ctx));
    }
    for (int i = 0; i < n; i++)
        if (p[i])
            symaddr_symmetric_free(heap, p[i]);
    free(p);
    free(m);
    return ok && !all_wrong ? 0 : 1;
}

#endif
