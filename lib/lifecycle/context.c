/* SPDX-License-Identifier: MIT */
/* Lifecycle of a context: init (communicators, backend, heap, locality, collectives),
 * finalize, the per-call guard, and the accessors. */
#include "lifecycle/context.h"
#include "providers/provider.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <string.h>
#include <unistd.h>

/* fork() children of this process so far, counted by a pthread_atfork handler in the child: a
 * context made before a fork refuses collective calls in the child, since its peers pair their
 * calls with the parent's. A counter costs the calls nothing; getpid() is a system call. */
static unsigned symaddr_forks;
static pthread_once_t forks_once = PTHREAD_ONCE_INIT;

static void count_fork(void) { symaddr_forks++; }
static void forks_register(void) { pthread_atfork(NULL, NULL, count_fork); }
static void symaddr_forks_watch(void) { pthread_once(&forks_once, forks_register); }

symaddr_status_t symaddr_call_enter(symaddr_context_t *ctx, const char *fn)
{
    if (ctx->core.forks != symaddr_forks)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "%s: this process is a fork() of the one that created the "
                                 "context; the context's peers take part with the parent, not "
                                 "with a child: make collective calls in the parent only",
                                 fn);
    if (__atomic_exchange_n(&ctx->core.busy, 1, __ATOMIC_ACQUIRE)) {
        /* Ranks pair calls by their order, and where threads race the peers may have paired
         * the call in flight with this one: the call in flight breaks the context as it
         * leaves, so that no later call returns OK. */
        __atomic_store_n(&ctx->core.raced, 1, __ATOMIC_RELEASE);
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "%s: another thread is in a collective or allocation call on "
                                 "this context; make such calls from one thread at a time (or "
                                 "give each thread its own context). The context is broken",
                                 fn);
    }
    if (ctx->core.broken != SYMADDR_OK) {
        __atomic_store_n(&ctx->core.busy, 0, __ATOMIC_RELEASE);
        return symaddr_set_error(ctx, SYMADDR_ERR_BROKEN,
                                 "%s: the context is broken: an earlier call returned %s on some "
                                 "rank, so the ranks no longer agree on its state; finalize it "
                                 "and create a new one",
                                 fn, symaddr_strerror(ctx->core.broken));
    }
    symaddr_bootstrap_call_begin(&ctx->core.boot);
    ctx->be.why[0] = 0; /* a message of this call quotes only this call's refusals */
    return SYMADDR_OK;
}

symaddr_status_t symaddr_call_leave(symaddr_context_t *ctx, symaddr_status_t st, const char *fn)
{
    symaddr_bootstrap_call_end(&ctx->core.boot);
    if (__atomic_load_n(&ctx->core.raced, __ATOMIC_ACQUIRE)) {
        symaddr_core_break(&ctx->core, SYMADDR_ERR_BROKEN);
        if (st == SYMADDR_OK && ctx->core.coll_call)
            st = symaddr_set_error(ctx, SYMADDR_ERR_BROKEN,
                                   "%s: another thread entered a collective call of this context "
                                   "during this one, so the ranks may have paired it with a "
                                   "different call and its result may be another call's; the "
                                   "context is broken: finalize it",
                                   fn);
    }
    ctx->core.coll_call = 0;
    __atomic_store_n(&ctx->core.busy, 0, __ATOMIC_RELEASE);
    return st;
}

/* The settings that change what ranks exchange or how they pair their calls: the ranks of a
 * context must agree on each, as resolved (a default and the value it stands for are alike).
 * The node size is agreed by the bootstrap already, before it splits the communicator. */
typedef struct {
    const char *field, *var;
} setting_t;

static const setting_t settings[] = {
    {"backend", "SYMADDR_BACKEND"},
    {"validate", "SYMADDR_VALIDATE"},
    {"heap_bytes", "SYMADDR_HEAP_SIZE"},
    {"allreduce_algo", "SYMADDR_ALLREDUCE"},
    {"twoshot_bytes", "SYMADDR_TWOSHOT_BYTES"},
    {"ll_bytes", "SYMADDR_LL_BYTES"},
    {"lamport_bytes", "SYMADDR_LAMPORT_BYTES"},
    {"retain_bytes", "SYMADDR_RETAIN_BYTES"},
    {"hip_finegrained", "SYMADDR_HIP_FINEGRAINED"},
    {"no_call_check", "SYMADDR_NO_CALL_CHECK"},
};
enum { SETTINGS = sizeof(settings) / sizeof(settings[0]) };

/* This rank's values, in the order of settings[]. */
static void settings_of(const symaddr_context_t *ctx, uint64_t v[SETTINGS])
{
    const symaddr_config_t *c = &ctx->core.cfg;
    const uint64_t mine[] = {(uint64_t)ctx->be.ops->kind,
                             (uint64_t)c->validate,
                             c->heap_bytes,
                             (uint64_t)c->allreduce_algo,
                             c->twoshot_bytes,
                             c->ll_bytes,
                             c->lamport_bytes,
                             c->retain_bytes,
                             (uint64_t)(c->hip_finegrained != 0),
                             (uint64_t)c->no_call_check};
    _Static_assert(sizeof(mine) / sizeof(mine[0]) == SETTINGS, "a value for every setting");
    memcpy(v, mine, sizeof(mine));
}

/* Retained backings this rank can hold: a quarter of its descriptor limit, one each (the rest
 * is the program's, MPI's and the live allocations'). */
static uint64_t retain_count_here(void)
{
    struct rlimit lim;
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY)
        return 1u << 16;
    return lim.rlim_cur / 4 < (1u << 16) ? lim.rlim_cur / 4 : 1u << 16;
}

/* The names of this process's SYMADDR_* variables that symaddr does not know, hashed
 * (FNV-1a): equal on ranks with the same misspellings. */
static uint64_t unknown_vars_hash(void)
{
    uint64_t h = 14695981039346656037ull;
    char why[256];
    for (int i = 0; (i = symaddr_config_unknown(environ, i, why, sizeof(why))) >= 0; i++)
        for (const char *c = environ[i]; *c && *c != '='; c++)
            h = (h ^ (uint8_t)*c) * 1099511628211ull;
    return h;
}

/* Every rank sees every rank's settings, so all reach the same verdict: MISMATCH naming the
 * first setting that differs, its variable and two ranks' values. The ranks also learn the
 * retention bound by descriptors that all of them can hold. */
static symaddr_status_t same_everywhere(symaddr_context_t *ctx, bool *unknown_differs_p)
{
    enum { N = SETTINGS + 2 };
    uint64_t mine[N], *all = malloc(sizeof(mine) * (size_t)ctx->core.size);
    if (!all) /* cannot take part: the peers time out, as they would if this rank had died */
        return symaddr_core_break(
            &ctx->core,
            symaddr_set_error(ctx, SYMADDR_ERR_NO_MEMORY, "symaddr_init: out of host memory"));
    settings_of(ctx, mine);
    mine[SETTINGS] = retain_count_here();
    mine[SETTINGS + 1] = unknown_vars_hash(); /* compared for a warning only */
    symaddr_status_t st =
        symaddr_boot_allgather(&ctx->core.boot, &ctx->core.boot.world, mine, all, sizeof(mine),
                               symaddr_bootstrap_agree_deadline(&ctx->core.boot));
    if (st != SYMADDR_OK)
        symaddr_set_error(ctx, st, "symaddr_init: MPI_Allgather of the settings failed");
    *unknown_differs_p =
        st == SYMADDR_OK && all[ctx->core.rank * N + SETTINGS + 1] != all[SETTINGS + 1];
    ctx->retain_count = SIZE_MAX;
    for (int r = 0; st == SYMADDR_OK && r < ctx->core.size; r++)
        if (all[r * N + SETTINGS] < ctx->retain_count)
            ctx->retain_count = (size_t)all[r * N + SETTINGS];
    for (int k = 0; st == SYMADDR_OK && k < SETTINGS; k++)
        for (int r = 1; st == SYMADDR_OK && r < ctx->core.size; r++)
            if (all[r * N + k] != all[k])
                st = symaddr_set_error(
                    ctx, SYMADDR_ERR_MISMATCH,
                    "symaddr_init: %s (symaddr_config_t.%s) is %llu on rank 0 but %llu on rank "
                    "%d; set it alike on every rank",
                    settings[k].var, settings[k].field, (unsigned long long)all[k],
                    (unsigned long long)all[r * N + k], r);
    free(all);
    return st;
}

/* Choose and start the backend; local part of symaddr_init. */
static symaddr_status_t backend_start(symaddr_context_t *ctx)
{
    const symaddr_config_t *cfg = &ctx->core.cfg;
    const symaddr_backend_ops_t *ops;
    char why[256] = "";
    int ndev;

    if (cfg->backend == SYMADDR_BACKEND_AUTO) {
        ops = symaddr_backend_gpu();
        if (!ops || ops->device_count() <= 0)
            ops = symaddr_backend_ops_get(SYMADDR_BACKEND_CPU);
    } else {
        ops = symaddr_backend_ops_get(cfg->backend);
        if (!ops)
            return symaddr_set_error(ctx, SYMADDR_ERR_UNSUPPORTED,
                                     "symaddr_init: backend '%s' is not built into this "
                                     "library; reconfigure with -Dgpu=%s, or use "
                                     "SYMADDR_BACKEND=cpu",
                                     symaddr_backend_name(cfg->backend),
                                     symaddr_backend_name(cfg->backend));
    }
    if (!ops->tuning || !ops->allocator || !ops->vmm_missing || !ops->coll || !ops->kernels)
        return symaddr_set_error(ctx, SYMADDR_ERR_BACKEND,
                                 "symaddr_init: the %s backend's row lacks its tuning, allocator, "
                                 "vmm_missing, coll or kernels (lib/backend.h says what a row "
                                 "needs); this build of symaddr is broken",
                                 ops->name);
    ndev = ops->device_count();
    if (ndev <= 0)
        return symaddr_set_error(ctx, SYMADDR_ERR_UNSUPPORTED,
                                 "symaddr_init: backend '%s' sees no device on this host; use "
                                 "SYMADDR_BACKEND=cpu",
                                 ops->name);
    int device = cfg->device >= 0 ? cfg->device : ctx->core.boot.node_rank % ndev;
    if (device >= ndev)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "symaddr_init: device %d requested but only %d visible", device,
                                 ndev);
    ctx->be.ops = ops;
    symaddr_status_t st = ops->init(&ctx->be, device, why, sizeof(why));
    if (st != SYMADDR_OK) {
        ctx->be.ops = NULL;
        return symaddr_set_error(ctx, st, "symaddr_init: %s", why);
    }
    return SYMADDR_OK;
}

static void context_free(symaddr_context_t *ctx)
{
    symaddr_locality_fini(ctx);
    symaddr_plain_fini(ctx);
    if (ctx->be.ops)
        ctx->be.ops->fini(&ctx->be);
    symaddr_bootstrap_fini(&ctx->core.boot);
    symaddr_registry_fini(&ctx->reg);
    pthread_mutex_destroy(&ctx->core.err.lock);
    free(ctx->debug_file);
    free(ctx);
}

/* INFO, once per context: what it runs on and with. */
/* symaddr_validate_t's values as the INFO line names them (symaddr_config_check bounds it) */
static const char *const validate_names[] = {"off", "on", "args"};
_Static_assert(sizeof(validate_names) / sizeof(validate_names[0]) == SYMADDR_VALIDATE_ARGS + 1,
               "a name for every symaddr_validate_t");

static void info_report(symaddr_context_t *ctx)
{
    const symaddr_core_t *c = &ctx->core;
    if (!symaddr_log_on(&c->cfg, SYMADDR_LOG_INFO, SYMADDR_SUB_ALL))
        return;
    if (c->rank == 0) {
        char built[64] = "";
        for (int k = SYMADDR_BACKEND_CPU; k < SYMADDR_BACKEND_COUNT_; k++)
            if (symaddr_backend_built((symaddr_backend_kind_t)k))
                snprintf(built + strlen(built), sizeof(built) - strlen(built), " %s",
                         symaddr_backend_name((symaddr_backend_kind_t)k));
        SYMADDR_LOG(c, SYMADDR_LOG_INFO, SYMADDR_SUB_INIT,
                    "symaddr %d.%d.%d, backends built:%s, validation %s", SYMADDR_VERSION_MAJOR,
                    SYMADDR_VERSION_MINOR, SYMADDR_VERSION_PATCH, built,
                    validate_names[c->cfg.validate]);
        for (int i = 0;; i++) {
            const char *name, *v;
            if (!symaddr_config_var(i, &name, NULL, NULL))
                break;
            if ((v = getenv(name)) && *v)
                SYMADDR_LOG(c, SYMADDR_LOG_INFO, SYMADDR_SUB_ENV, "%s=%s", name, v);
        }
    }
    SYMADDR_LOG(c, SYMADDR_LOG_INFO, SYMADDR_SUB_INIT,
                "rank %d of %d: backend %s, device %d (%d ranks of the context on it); node group "
                "of %d ranks, node rank %d",
                c->rank, c->size, ctx->be.ops->name, symaddr_device(ctx), ctx->gpu_sharers,
                c->boot.node_size, c->boot.node_rank);
    if (ctx->be.wall_clock_khz && ctx->be.wall_clock_khz != 100000u)
        SYMADDR_LOG(c, SYMADDR_LOG_INFO, SYMADDR_SUB_INIT,
                    "device wall clock %u kHz, not the 100 MHz symaddr_clock_ns assumes: the "
                    "collectives' kernel deadlines are scaled by %.4f",
                    ctx->be.wall_clock_khz, ctx->be.wall_clock_khz / 100000.0);
    char get[48] = "never", copy[48] = "never";
    if (ctx->coll.twoshot_get_bytes != SIZE_MAX)
        snprintf(get, sizeof(get), "from %zu B", ctx->coll.twoshot_get_bytes);
    if (ctx->coll.twoshot_copy_bytes != SIZE_MAX)
        snprintf(copy, sizeof(copy), "from %zu B", ctx->coll.twoshot_copy_bytes);
    SYMADDR_LOG(c, SYMADDR_LOG_INFO, SYMADDR_SUB_COLL,
                "collectives: auto allreduce lamport to %zu B, ll to %zu B, two-shot from %zu B, "
                "by loads only %s, all-gather by the copy engine %s; grids of at most %u blocks; "
                "timeout %u ms",
                c->cfg.lamport_bytes, c->cfg.ll_bytes, c->cfg.twoshot_bytes, get, copy,
                ctx->coll.max_blocks, c->cfg.timeout_ms);
    /* each provider that allocates: usable here, or why not (the error text is kept as it was) */
    char saved[sizeof(ctx->core.err.text)];
    memcpy(saved, ctx->core.err.text, sizeof(saved));
    for (int k = 0; k < SYMADDR_PROVIDER_COUNT_; k++) {
        const symaddr_provider_ops_t *ops = symaddr_provider_ops((symaddr_provider_kind_t)k);
        if (ops->alloc == symaddr_provider_alloc_unsupported)
            continue;
        /* what its maps get (maps/backing.c): the memory's capabilities, owned */
        uint64_t caps = ops->caps(ctx) | SYMADDR_CAP_OWNED;
        if (ops->usable(ctx, "symaddr_init") == SYMADDR_OK)
            SYMADDR_LOG(c, SYMADDR_LOG_INFO, SYMADDR_SUB_ALLOC,
                        "provider %s: allocates here, maps with capabilities 0x%llx:%s%s%s%s%s",
                        ops->name, (unsigned long long)caps,
                        caps & SYMADDR_CAP_LOAD_STORE ? " load/store" : "",
                        caps & SYMADDR_CAP_ATOMICS ? " atomics" : "",
                        caps & SYMADDR_CAP_SYSTEM_ATOMICS ? " system-atomics" : "",
                        caps & SYMADDR_CAP_COHERENT ? " coherent" : "", " owned");
        else
            SYMADDR_LOG(c, SYMADDR_LOG_INFO, SYMADDR_SUB_ALLOC, "provider %s: not here: %s",
                        ops->name, ctx->core.err.text);
    }
    memcpy(ctx->core.err.text, saved, sizeof(saved));
}

/* The calling thread's last failure without a context (symaddr_last_error(NULL)), as
 * ncclGetLastError(NULL) has it: a failed symaddr_init leaves no context to ask. */
static __thread char thread_error[768];

/* symaddr_init's failure before a context exists to hold the text. */
static symaddr_status_t init_refused(const symaddr_config_t *cfg, symaddr_status_t st,
                                     const char *why)
{
    snprintf(thread_error, sizeof(thread_error), "symaddr_init: %s", why);
    symaddr_log(cfg, -1, -1, SYMADDR_LOG_WARN, SYMADDR_SUB_INIT, "%s", thread_error);
    return st;
}

/* A misspelled SYMADDR_* variable would be ignored without a word: rank 0 names each one, and
 * the nearest variable of symaddr, once per process (the environment is the process's); any
 * other rank whose misspellings differ from rank 0's (an MPMD job) names its own. */
static void warn_unknown_vars(symaddr_context_t *ctx, bool differs)
{
    static int checked;
    char why[256];
    if ((ctx->core.rank != 0 && !differs) || __atomic_exchange_n(&checked, 1, __ATOMIC_RELAXED))
        return;
    for (int i = 0; (i = symaddr_config_unknown(environ, i, why, sizeof(why))) >= 0; i++)
        symaddr_log(&ctx->core.cfg, 0, ctx->core.boot.node_rank, SYMADDR_LOG_WARN, SYMADDR_SUB_ENV,
                    "symaddr_init: %s", why);
}

/* The start of a context, over MPI (comm) or over a runtime's operations (ops). */
static symaddr_status_t init_context(MPI_Comm comm, const symaddr_bootstrap_ops_t *ops, void *state,
                                     int rank, int size, const symaddr_config_t *cfg,
                                     symaddr_context_t **ctx_p);

symaddr_status_t symaddr_init(MPI_Comm comm, const symaddr_config_t *cfg, symaddr_context_t **ctx_p)
{
    symaddr_status_t st = SYMADDR_OK;
    char why[512] = "";
    int initialized = 0, finalized = 0;

    if (comm == MPI_COMM_NULL)
        return SYMADDR_ERR_INVALID_ARG;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
        return init_refused(cfg, SYMADDR_ERR_MPI, "call MPI_Init before symaddr_init");
    if ((st = symaddr_bootstrap_mpi_check(why, sizeof(why))) != SYMADDR_OK)
        return init_refused(cfg, st, why);
    int inter = 0; /* MPI_Comm_split_type of an intercommunicator crashed Open MPI */
    if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return init_refused(cfg, SYMADDR_ERR_INVALID_ARG,
                            "comm is an intercommunicator; pass an intracommunicator (one "
                            "MPI_Intercomm_merge makes of it)");
    return init_context(comm, NULL, NULL, 0, 0, cfg, ctx_p);
}

symaddr_status_t symaddr_init_bootstrap(const symaddr_bootstrap_ops_t *ops, void *state, int rank,
                                        int size, const symaddr_config_t *cfg,
                                        symaddr_context_t **ctx_p)
{
    char why[256];
    if (!ops || !ops->sendrecv)
        return init_refused(cfg, SYMADDR_ERR_INVALID_ARG,
                            "symaddr_init_bootstrap: ops and ops->sendrecv must be given");
    if (ops->version != SYMADDR_BOOTSTRAP_OPS_VERSION) {
        snprintf(why, sizeof(why),
                 "symaddr_init_bootstrap: ops->version is %u, this symaddr knows %d: build "
                 "against this symaddr's header",
                 ops->version, SYMADDR_BOOTSTRAP_OPS_VERSION);
        return init_refused(cfg, SYMADDR_ERR_INVALID_ARG, why);
    }
    if (size < 1 || rank < 0 || rank >= size) {
        snprintf(why, sizeof(why),
                 "symaddr_init_bootstrap: rank %d of size %d: pass 0 <= rank < size", rank, size);
        if (ops->fini)
            ops->fini(state);
        return init_refused(cfg, SYMADDR_ERR_INVALID_ARG, why);
    }
    return init_context(MPI_COMM_NULL, ops, state, rank, size, cfg, ctx_p);
}

static symaddr_status_t init_context(MPI_Comm comm, const symaddr_bootstrap_ops_t *ops, void *state,
                                     int rank, int size, const symaddr_config_t *cfg,
                                     symaddr_context_t **ctx_p)
{
    symaddr_context_t *ctx;
    symaddr_status_t st = SYMADDR_OK;
    char why[512] = "";
    ctx = calloc(1, sizeof(*ctx));
    if (!ctx) {
        if (ops && ops->fini)
            ops->fini(state);
        return SYMADDR_ERR_NO_MEMORY;
    }
    pthread_mutex_init(&ctx->core.err.lock, NULL);
    if (symaddr_registry_init(&ctx->reg) != 0) {
        pthread_mutex_destroy(&ctx->core.err.lock);
        free(ctx);
        if (ops && ops->fini)
            ops->fini(state);
        return init_refused(cfg, SYMADDR_ERR_NO_MEMORY, "out of host memory for the registry");
    }
    if (cfg) /* a config of another layout is read only as far as it goes, then refused */
        memcpy(&ctx->core.cfg, cfg, cfg->size < sizeof(*cfg) ? cfg->size : sizeof(*cfg));
    else
        symaddr_config_default(&ctx->core.cfg);
    /* the log file's name is the context's own: the caller's string (or environment) may go */
    if (ctx->core.cfg.size == sizeof(ctx->core.cfg) && ctx->core.cfg.debug_file)
        ctx->core.cfg.debug_file = ctx->debug_file = strdup(ctx->core.cfg.debug_file);
    /* Phases of init, timed for the TRACE log (symaddr-bench init reads them): bootstrap,
     * backend, agreement on the settings, heap, locality, collectives. */
    uint64_t t[7];
    bool unknown_differs = false;
    t[0] = symaddr_now_ns();
    /* The communicator is split before the config is checked, so that every rank
     * reaches the agreement below whatever its own arguments were. */
    int sim = ctx->core.cfg.node_size > 0 ? ctx->core.cfg.node_size : 0;
    unsigned timeout_ms = ctx->core.cfg.timeout_ms
                              ? ctx->core.cfg.timeout_ms
                              : ((symaddr_config_t)SYMADDR_CONFIG_INITIALIZER).timeout_ms;
    if (ops)
        st = symaddr_bootstrap_start(&ctx->core.boot, ops, state, rank, size, sim, timeout_ms, why,
                                     sizeof(why));
    else
        st = symaddr_bootstrap_init(&ctx->core.boot, comm, sim, timeout_ms, why, sizeof(why));
    if (st != SYMADDR_OK) {
        context_free(ctx);
        return init_refused(cfg, st, why);
    }
    ctx->core.comm = ctx->core.boot.comm;
    ctx->core.rank = ctx->core.boot.rank;
    ctx->core.size = ctx->core.boot.size;
    for (int k = 0; k < SYMADDR_PROVIDER_COUNT_; k++) {
        ctx->providers[k].ctx = ctx;
        ctx->providers[k].kind = (symaddr_provider_kind_t)k;
    }
    symaddr_bootstrap_call_begin(&ctx->core.boot);
    symaddr_forks_watch();
    ctx->core.forks = symaddr_forks;

    t[1] = symaddr_now_ns();
    if (!ctx_p)
        st = symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG, "symaddr_init: ctx_p is NULL");
    if (st == SYMADDR_OK &&
        (st = symaddr_config_check(&ctx->core.cfg, why, sizeof(why))) != SYMADDR_OK)
        symaddr_set_error(ctx, st, "symaddr_init: %s", why);
    if (st == SYMADDR_OK)
        st = backend_start(ctx);
    t[2] = symaddr_now_ns();
    st = symaddr_agree_status(&ctx->core, st, "symaddr_init");
    if (st == SYMADDR_OK && ctx->core.cfg.twoshot_bytes == 0)
        ctx->core.cfg.twoshot_bytes = ctx->be.ops->tuning->twoshot;
    if (st == SYMADDR_OK && ctx->core.cfg.ll_bytes == SIZE_MAX)
        ctx->core.cfg.ll_bytes = ctx->be.ops->tuning->ll;
    if (st == SYMADDR_OK)
        st = same_everywhere(ctx, &unknown_differs);
    warn_unknown_vars(ctx, unknown_differs);
    t[3] = symaddr_now_ns();
    if (st == SYMADDR_OK && ctx->core.cfg.heap_bytes > 0)
        st = symaddr_heap_init(ctx);
    t[4] = symaddr_now_ns();
    if (st == SYMADDR_OK)
        st =
            symaddr_agree_status(&ctx->core, symaddr_locality_init(ctx), "symaddr_init (locality)");
    t[5] = symaddr_now_ns();
    if (st == SYMADDR_OK)
        st = symaddr_coll_init(ctx);
    t[6] = symaddr_now_ns();
    if (st == SYMADDR_OK) {
        ctx->coll.twoshot_get_bytes =
            ctx->node_gpu_shared ? ctx->be.ops->tuning->get_shared : ctx->be.ops->tuning->get;
        ctx->coll.twoshot_copy_bytes =
            ctx->coll.twoshot_get_bytes == SIZE_MAX ? SIZE_MAX : ctx->be.ops->tuning->copy;
        ctx->coll.lamport_threads = ctx->be.ops->tuning->lamport_threads;
        ctx->rma_copy_bytes = ctx->be.ops->tuning->rma_copy;
    }
    if (st == SYMADDR_OK && ctx->core.cfg.lamport_bytes == SIZE_MAX) { /* needs the locality */
        size_t node = ctx->node_gpu_shared ? ctx->be.ops->tuning->lamport_shared
                                           : ctx->be.ops->tuning->lamport_node;
        size_t per_peer = node / (size_t)ctx->core.boot.node_size;
        ctx->core.cfg.lamport_bytes =
            ctx->be.ops->tuning->lamport < per_peer ? ctx->be.ops->tuning->lamport : per_peer;
    }
    if (st != SYMADDR_OK) {
        snprintf(thread_error, sizeof(thread_error), "%s", ctx->core.err.text);
        if (ctx->core.rank == 0 || ctx_p == NULL)
            symaddr_log(&ctx->core.cfg, ctx->core.rank, ctx->core.boot.node_rank, SYMADDR_LOG_WARN,
                        SYMADDR_SUB_INIT, "%s", ctx->core.err.text);
        symaddr_teardown(ctx, NULL, 0, true); /* what was set up of the heap and sync area */
        context_free(ctx);
        return st;
    }
    SYMADDR_LOG(&ctx->core, SYMADDR_LOG_TRACE, SYMADDR_SUB_INIT,
                "symaddr_init: us by phase: bootstrap %.1f, backend %.1f, settings %.1f, heap "
                "%.1f, locality %.1f, collectives %.1f",
                (t[1] - t[0]) / 1e3, (t[2] - t[1]) / 1e3, (t[3] - t[2]) / 1e3, (t[4] - t[3]) / 1e3,
                (t[5] - t[4]) / 1e3, (t[6] - t[5]) / 1e3);
    info_report(ctx);
    symaddr_bootstrap_call_end(&ctx->core.boot);
    *ctx_p = ctx;
    return SYMADDR_OK;
}

symaddr_status_t symaddr_finalize(symaddr_context_t **ctx_p)
{
    symaddr_context_t *ctx;
    symaddr_registration_t *r;

    if (!ctx_p || !*ctx_p)
        return SYMADDR_ERR_INVALID_ARG;
    ctx = *ctx_p;
    int finalized = 0; /* the teardown's MPI calls would make MPI abort the job */
    if (ctx->core.comm != MPI_COMM_NULL)
        MPI_Finalized(&finalized);
    if (finalized)
        return symaddr_set_error(ctx, SYMADDR_ERR_MPI,
                                 "symaddr_finalize: MPI was finalized first: call "
                                 "symaddr_finalize before MPI_Finalize; this context is left "
                                 "as it is until the process ends");
    if (__atomic_exchange_n(&ctx->core.busy, 1, __ATOMIC_ACQUIRE))
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "symaddr_finalize: another thread is in a call on this "
                                 "context; finalize it once that call returned");
    symaddr_bootstrap_call_begin(&ctx->core.boot);
    ctx->be.ops->stream_sync(&ctx->be, NULL);
    symaddr_coll_status(ctx); /* a collective that failed on the device breaks the context */
    size_t n = symaddr_registry_count(&ctx->reg), k = 0;
    symaddr_registration_t **all = malloc(sizeof(*all) * (n ? n : 1));
    /* k < n and a failed remove (out of memory) both end the loop: it never spins on one entry */
    while (all && k < n && (r = symaddr_registry_last(&ctx->reg)) &&
           symaddr_registry_remove(&ctx->reg, r) == SYMADDR_OK)
        all[k++] = r;
    symaddr_status_t st = symaddr_teardown(ctx, all, k, true);
    free(all);
    /* A rank that came after its peers gave up on the teardown's barrier matched their
     * abandoned ones and passed it: this exchange, which they no longer make, fails it too.
     * A broken context skips it where every rank knows: after an agreement carried the break
     * (it broke every rank's context), or in one node, whose kernels tell every node peer. A
     * failure that only this node's kernels saw takes part, with that failure: the other
     * nodes' ranks, which know nothing of it, would wait out the timeout for it. */
    bool told = ctx->core.broken_told || !symaddr_multi_node(ctx);
    if (st == SYMADDR_OK && (ctx->core.broken == SYMADDR_OK || !told))
        st = symaddr_agree_status(&ctx->core, ctx->core.broken, "symaddr_finalize");
    context_free(ctx);
    *ctx_p = NULL;
    return st;
}

symaddr_status_t symaddr_timeout_set(symaddr_context_t *ctx, unsigned timeout_ms)
{
    if (!ctx)
        return SYMADDR_ERR_INVALID_ARG;
    if (timeout_ms == 0)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "symaddr_timeout_set: timeout_ms must be > 0");
    if (__atomic_exchange_n(&ctx->core.busy, 1, __ATOMIC_ACQUIRE))
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "symaddr_timeout_set: another thread is in a call on this "
                                 "context; set the timeout between calls");
    /* the bootstrap's copy bounds MPI and descriptor waits, the config's the kernels' */
    ctx->core.cfg.timeout_ms = timeout_ms;
    ctx->core.boot.timeout_ms = timeout_ms;
    __atomic_store_n(&ctx->core.busy, 0, __ATOMIC_RELEASE);
    return SYMADDR_OK;
}

symaddr_backend_kind_t symaddr_backend(const symaddr_context_t *ctx)
{
    return ctx && ctx->be.ops ? ctx->be.ops->kind : SYMADDR_BACKEND_AUTO;
}

int symaddr_device(const symaddr_context_t *ctx)
{
    return ctx && ctx->be.ops && !ctx->be.ops->host_memory ? ctx->be.device : -1;
}

const char *symaddr_last_error(const symaddr_context_t *ctx)
{
    return ctx ? ctx->core.err.text : thread_error;
}

int symaddr_rank(const symaddr_context_t *ctx) { return ctx ? ctx->core.rank : -1; }
int symaddr_size(const symaddr_context_t *ctx) { return ctx ? ctx->core.size : -1; }
int symaddr_node_rank(const symaddr_context_t *ctx) { return ctx ? ctx->core.boot.node_rank : -1; }
int symaddr_node_size(const symaddr_context_t *ctx) { return ctx ? ctx->core.boot.node_size : -1; }
MPI_Comm symaddr_comm(const symaddr_context_t *ctx) { return ctx ? ctx->core.comm : MPI_COMM_NULL; }
