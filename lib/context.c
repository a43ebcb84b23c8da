/* SPDX-License-Identifier: MIT */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_HEAP_BYTES ((size_t)64 << 20)
#define DEFAULT_TIMEOUT_MS 60000u
/* auto picks LL up to these sizes (measured crossovers with one-shot) */
#define LL_BYTES_GPU ((size_t)32 << 10)
#define LL_BYTES_CPU ((size_t)128)

const char *symaddr_strerror(symaddr_status_t status)
{
    switch (status) {
    case SYMADDR_OK: return "SYMADDR_OK: success";
    case SYMADDR_ERR_INVALID_ARG: return "SYMADDR_ERR_INVALID_ARG: an argument is NULL or out of range";
    case SYMADDR_ERR_INVALID_SIZE: return "SYMADDR_ERR_INVALID_SIZE: size is zero or overflows";
    case SYMADDR_ERR_NO_MEMORY: return "SYMADDR_ERR_NO_MEMORY: out of host, device or heap memory";
    case SYMADDR_ERR_NOT_FOUND: return "SYMADDR_ERR_NOT_FOUND: pointer is not inside any registration";
    case SYMADDR_ERR_DOUBLE_FREE: return "SYMADDR_ERR_DOUBLE_FREE: pointer was already freed";
    case SYMADDR_ERR_INVALID_MAP: return "SYMADDR_ERR_INVALID_MAP: map was freed or is not from this context";
    case SYMADDR_ERR_MISMATCH: return "SYMADDR_ERR_MISMATCH: ranks disagree on a collective call";
    case SYMADDR_ERR_BACKEND: return "SYMADDR_ERR_BACKEND: the GPU runtime or the OS refused a call";
    case SYMADDR_ERR_UNSUPPORTED: return "SYMADDR_ERR_UNSUPPORTED: not available with this backend or build";
    case SYMADDR_ERR_TIMEOUT: return "SYMADDR_ERR_TIMEOUT: a wait ran past its timeout";
    case SYMADDR_ERR_MPI: return "SYMADDR_ERR_MPI: an MPI call failed";
    case SYMADDR_ERR_PEER: return "SYMADDR_ERR_PEER: another rank failed its part of a collective";
    case SYMADDR_ERR_ALREADY_REGISTERED: return "SYMADDR_ERR_ALREADY_REGISTERED: range overlaps a registered range";
    case SYMADDR_ERR_OUT_OF_BOUNDS: return "SYMADDR_ERR_OUT_OF_BOUNDS: pointer lies outside its map";
    case SYMADDR_ERR_UNREACHABLE: return "SYMADDR_ERR_UNREACHABLE: target rank has no load/store path";
    case SYMADDR_ERR_WRONG_PROVIDER: return "SYMADDR_ERR_WRONG_PROVIDER: memory belongs to another provider";
    case SYMADDR_ERR_NOT_SHAREABLE: return "SYMADDR_ERR_NOT_SHAREABLE: memory cannot be exported to peers";
    }
    return "SYMADDR_ERR_UNKNOWN: not a symaddr status";
}

symaddr_status_t symaddr_set_error(symaddr_context_t *ctx, symaddr_status_t status,
                                   const char *fmt, ...)
{
    va_list ap;
    if (!ctx)
        return status;
    pthread_mutex_lock(&ctx->err_lock);
    va_start(ap, fmt);
    vsnprintf(ctx->err, sizeof(ctx->err), fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&ctx->err_lock);
    return status;
}

const char *symaddr_last_error(const symaddr_context_t *ctx)
{
    return ctx ? ctx->err : "no context (NULL)";
}

size_t symaddr_align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

static const char *op_name(uint64_t op)
{
    switch (op) {
    case SYMADDR_OP_ALLOCATE: return "symaddr_allocate_symmetric";
    case SYMADDR_OP_FREE: return "symaddr_free_symmetric";
    case SYMADDR_OP_IMPORT: return "symaddr_import";
    case SYMADDR_OP_UNREGISTER: return "symaddr_unregister";
    case SYMADDR_OP_FINALIZE: return "symaddr_finalize";
    case SYMADDR_OP_REGISTER: return "symaddr_register_peer_table";
    }
    return "an unknown call";
}

symaddr_status_t symaddr_agree(symaddr_context_t *ctx, uint64_t op, uint64_t arg0,
                               uint64_t arg1, symaddr_status_t local, const char *opname)
{
    symaddr_call_t mine, *all;
    symaddr_status_t st = SYMADDR_OK;

    memset(&mine, 0, sizeof(mine));
    mine.seq = ++ctx->seq;
    mine.op = op;
    mine.arg0 = arg0;
    mine.arg1 = arg1;
    mine.status = local;
    if (local != SYMADDR_OK)
        snprintf(mine.why, sizeof(mine.why), "%.99s", ctx->err);
    all = malloc(sizeof(*all) * (size_t)ctx->size);
    if (!all) /* cannot take part: peers then block in MPI, as MPI itself would */
        return symaddr_set_error(ctx, SYMADDR_ERR_NO_MEMORY, "%s: out of host memory", opname);
    if (MPI_Allgather(&mine, sizeof(mine), MPI_BYTE, all, sizeof(mine), MPI_BYTE, ctx->comm) !=
        MPI_SUCCESS) {
        free(all);
        return symaddr_set_error(ctx, SYMADDR_ERR_MPI, "%s: MPI_Allgather failed", opname);
    }
    for (int r = 0; r < ctx->size && st == SYMADDR_OK; r++) {
        if (all[r].status == SYMADDR_OK)
            continue;
        st = (symaddr_status_t)all[r].status;
        if (r != ctx->rank || local == SYMADDR_OK)
            symaddr_set_error(ctx, st, "%s failed on rank %d: %.100s", opname, r, all[r].why);
    }
    for (int r = 0; r < ctx->size && st == SYMADDR_OK; r++) {
        const symaddr_call_t *a = &all[r], *b = &all[0];
        if (a->seq != b->seq || a->op != b->op)
            st = symaddr_set_error(ctx, SYMADDR_ERR_MISMATCH,
                                   "%s: rank %d is in collective call #%llu (%s) while rank 0 is "
                                   "in call #%llu (%s); every rank must make the same collective "
                                   "calls in the same order",
                                   opname, r, (unsigned long long)a->seq, op_name(a->op),
                                   (unsigned long long)b->seq, op_name(b->op));
        else if (a->arg0 != b->arg0 || a->arg1 != b->arg1)
            st = symaddr_set_error(ctx, SYMADDR_ERR_MISMATCH,
                                   "%s: rank %d passed (%llu, %llu) but rank 0 passed (%llu, "
                                   "%llu); pass the same size and provider on every rank",
                                   opname, r, (unsigned long long)a->arg0,
                                   (unsigned long long)a->arg1, (unsigned long long)b->arg0,
                                   (unsigned long long)b->arg1);
    }
    free(all);
    return st;
}

symaddr_status_t symaddr_agree_status(symaddr_context_t *ctx, symaddr_status_t local,
                                      const char *opname)
{
    int32_t mine = local, *all = malloc(sizeof(int32_t) * (size_t)ctx->size);
    symaddr_status_t st = SYMADDR_OK;

    if (!all)
        return symaddr_set_error(ctx, SYMADDR_ERR_NO_MEMORY, "%s: out of host memory", opname);
    if (MPI_Allgather(&mine, 1, MPI_INT32_T, all, 1, MPI_INT32_T, ctx->comm) != MPI_SUCCESS) {
        free(all);
        return symaddr_set_error(ctx, SYMADDR_ERR_MPI, "%s: MPI_Allgather failed", opname);
    }
    for (int r = 0; r < ctx->size; r++) {
        if (all[r] == SYMADDR_OK)
            continue;
        st = (symaddr_status_t)all[r];
        if (r != ctx->rank && local == SYMADDR_OK)
            symaddr_set_error(ctx, st, "%s failed on rank %d (%s); see that rank's message",
                              opname, r, symaddr_strerror(st));
        break;
    }
    free(all);
    return st;
}

/* ---- configuration ---------------------------------------------------------------------- */

static long long env_ll(const char *name, long long dflt)
{
    const char *v = getenv(name);
    char *end;
    if (!v || !*v)
        return dflt;
    errno = 0;
    long long x = strtoll(v, &end, 0);
    if (errno || end == v)
        return -1; /* reported by symaddr_init as out of range */
    switch (*end) {
    case 'k': case 'K': x <<= 10; end++; break;
    case 'm': case 'M': x <<= 20; end++; break;
    case 'g': case 'G': x <<= 30; end++; break;
    }
    return *end ? -1 : x;
}

void symaddr_config_default(symaddr_config_t *cfg)
{
    const char *b = getenv("SYMADDR_BACKEND");
    if (!cfg)
        return;
    memset(cfg, 0, sizeof(*cfg));
    cfg->backend = SYMADDR_BACKEND_AUTO;
    if (b && *b) {
        if (!strcasecmp(b, "cpu"))
            cfg->backend = SYMADDR_BACKEND_CPU;
        else if (!strcasecmp(b, "cuda"))
            cfg->backend = SYMADDR_BACKEND_CUDA;
        else if (!strcasecmp(b, "hip"))
            cfg->backend = SYMADDR_BACKEND_HIP;
        else if (strcasecmp(b, "auto"))
            cfg->backend = (symaddr_backend_kind_t)-1;
    }
    cfg->device = -1;
    long long heap = env_ll("SYMADDR_HEAP_SIZE", (long long)DEFAULT_HEAP_BYTES);
    cfg->heap_bytes = heap < 0 ? SIZE_MAX : (size_t)heap;
    long long ns = env_ll("SYMADDR_NODE_SIZE", 0);
    cfg->node_size = ns > INT_MAX ? -1 : (int)ns;
    cfg->validate = (int)env_ll("SYMADDR_VALIDATE", SYMADDR_VALIDATE_DEFAULT);
    long long t = env_ll("SYMADDR_TIMEOUT_MS", DEFAULT_TIMEOUT_MS);
    cfg->timeout_ms = (t <= 0 || t > UINT_MAX) ? 0 : (unsigned)t;
    const char *a = getenv("SYMADDR_ALLREDUCE");
    cfg->allreduce_algo = SYMADDR_ALLREDUCE_AUTO;
    if (a && !strcasecmp(a, "oneshot"))
        cfg->allreduce_algo = SYMADDR_ALLREDUCE_ONESHOT;
    else if (a && !strcasecmp(a, "twoshot"))
        cfg->allreduce_algo = SYMADDR_ALLREDUCE_TWOSHOT;
    else if (a && !strcasecmp(a, "ll"))
        cfg->allreduce_algo = SYMADDR_ALLREDUCE_LL;
    else if (a && *a && strcasecmp(a, "auto"))
        cfg->allreduce_algo = (symaddr_allreduce_algo_t)-1;
    long long ts = env_ll("SYMADDR_TWOSHOT_BYTES", 0);
    cfg->twoshot_bytes = ts < 0 ? SIZE_MAX : (size_t)ts;
    long long ll = env_ll("SYMADDR_LL_BYTES", -1);
    cfg->ll_bytes = ll < 0 ? SIZE_MAX : (size_t)ll;
}

const char *symaddr_backend_name(symaddr_backend_kind_t kind)
{
    switch (kind) {
    case SYMADDR_BACKEND_AUTO: return "auto";
    case SYMADDR_BACKEND_CPU: return "cpu";
    case SYMADDR_BACKEND_CUDA: return "cuda";
    case SYMADDR_BACKEND_HIP: return "hip";
    }
    return "unknown";
}

const symaddr_backend_ops_t *symaddr_backend_ops_get(symaddr_backend_kind_t kind)
{
    if (kind == SYMADDR_BACKEND_CPU)
        return &symaddr_backend_cpu_ops;
    if (symaddr_backend_gpu_ops && symaddr_backend_gpu_ops->kind == kind)
        return symaddr_backend_gpu_ops;
    return NULL;
}

int symaddr_backend_built(symaddr_backend_kind_t kind)
{
    return symaddr_backend_ops_get(kind) != NULL;
}

/* Choose and start the backend; local part of symaddr_init. */
static symaddr_status_t backend_start(symaddr_context_t *ctx)
{
    const symaddr_config_t *cfg = &ctx->cfg;
    const symaddr_backend_ops_t *ops;
    char why[256] = "";
    int ndev;

    if (cfg->backend == SYMADDR_BACKEND_AUTO) {
        ops = symaddr_backend_gpu_ops;
        if (!ops || ops->device_count() <= 0)
            ops = &symaddr_backend_cpu_ops;
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
    ndev = ops->device_count();
    if (ndev <= 0)
        return symaddr_set_error(ctx, SYMADDR_ERR_UNSUPPORTED,
                                 "symaddr_init: backend '%s' sees no device on this host; use "
                                 "SYMADDR_BACKEND=cpu",
                                 ops->name);
    int device = cfg->device >= 0 ? cfg->device : ctx->boot.node_rank % ndev;
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

static symaddr_status_t check_config(symaddr_context_t *ctx)
{
    const symaddr_config_t *c = &ctx->cfg;
    if ((int)c->backend < 0 || c->backend > SYMADDR_BACKEND_HIP)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "symaddr_init: unknown backend; set SYMADDR_BACKEND to auto, "
                                 "cpu, cuda or hip");
    if (c->node_size < 0)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "symaddr_init: node_size must be >= 0 (check SYMADDR_NODE_SIZE)");
    if (c->heap_bytes > ((size_t)1 << 46))
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_SIZE,
                                 "symaddr_init: heap_bytes is out of range (check "
                                 "SYMADDR_HEAP_SIZE, e.g. 64M)");
    if ((int)c->allreduce_algo < 0 || c->allreduce_algo > SYMADDR_ALLREDUCE_LL)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "symaddr_init: allreduce_algo must be auto, oneshot, twoshot or "
                                 "ll (check SYMADDR_ALLREDUCE)");
    if (c->ll_bytes != SIZE_MAX && c->ll_bytes > SYMADDR_COLL_LL_BYTES)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_SIZE,
                                 "symaddr_init: ll_bytes is at most 32 KiB, the LL inbox (check "
                                 "SYMADDR_LL_BYTES)");
    if (c->twoshot_bytes > ((size_t)1 << 40))
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_SIZE,
                                 "symaddr_init: twoshot_bytes is out of range (check "
                                 "SYMADDR_TWOSHOT_BYTES)");
    if (c->timeout_ms == 0)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "symaddr_init: timeout_ms must be > 0 (check SYMADDR_TIMEOUT_MS)");
    return SYMADDR_OK;
}

static void context_free(symaddr_context_t *ctx)
{
    symaddr_locality_fini(ctx);
    if (ctx->be.ops)
        ctx->be.ops->fini(&ctx->be);
    symaddr_bootstrap_fini(&ctx->boot);
    symaddr_registry_fini(&ctx->reg);
    pthread_mutex_destroy(&ctx->err_lock);
    free(ctx);
}

symaddr_status_t symaddr_init(MPI_Comm comm, const symaddr_config_t *cfg,
                              symaddr_context_t **ctx_p)
{
    symaddr_context_t *ctx;
    symaddr_status_t st = SYMADDR_OK;
    char why[256] = "";
    int initialized = 0, finalized = 0;

    if (comm == MPI_COMM_NULL)
        return SYMADDR_ERR_INVALID_ARG;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized) {
        fprintf(stderr, "symaddr_init: call MPI_Init before symaddr_init\n");
        return SYMADDR_ERR_MPI;
    }
    ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return SYMADDR_ERR_NO_MEMORY;
    pthread_mutex_init(&ctx->err_lock, NULL);
    symaddr_registry_init(&ctx->reg);
    if (cfg)
        ctx->cfg = *cfg;
    else
        symaddr_config_default(&ctx->cfg);
    /* The communicator is split before the config is checked, so that every rank
     * reaches the agreement below whatever its own arguments were. */
    st = symaddr_bootstrap_init(&ctx->boot, comm, ctx->cfg.node_size > 0 ? ctx->cfg.node_size : 0,
                                ctx->cfg.timeout_ms ? ctx->cfg.timeout_ms : DEFAULT_TIMEOUT_MS,
                                why, sizeof(why));
    if (st != SYMADDR_OK) {
        fprintf(stderr, "symaddr_init: %s\n", why);
        context_free(ctx);
        return st;
    }
    ctx->comm = ctx->boot.comm;
    ctx->rank = ctx->boot.rank;
    ctx->size = ctx->boot.size;
    for (int k = 0; k < SYMADDR_PROVIDER_COUNT_; k++) {
        ctx->providers[k].ctx = ctx;
        ctx->providers[k].kind = (symaddr_provider_kind_t)k;
    }

    if (!ctx_p)
        st = symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG, "symaddr_init: ctx_p is NULL");
    if (st == SYMADDR_OK)
        st = check_config(ctx);
    if (st == SYMADDR_OK)
        st = backend_start(ctx);
    st = symaddr_agree_status(ctx, st, "symaddr_init");
    if (st == SYMADDR_OK && ctx->cfg.twoshot_bytes == 0) /* measured crossovers, 8 ranks */
        ctx->cfg.twoshot_bytes = ctx->be.ops->kind == SYMADDR_BACKEND_CPU ? 2u << 10 : 256u << 10;
    if (st == SYMADDR_OK && ctx->cfg.ll_bytes == SIZE_MAX)
        ctx->cfg.ll_bytes = ctx->be.ops->kind == SYMADDR_BACKEND_CPU ? LL_BYTES_CPU : LL_BYTES_GPU;
    if (st == SYMADDR_OK && ctx->cfg.heap_bytes > 0)
        st = symaddr_heap_init(ctx);
    if (st == SYMADDR_OK)
        st = symaddr_agree_status(ctx, symaddr_locality_init(ctx), "symaddr_init (locality)");
    if (st == SYMADDR_OK)
        st = symaddr_coll_init(ctx);
    if (st != SYMADDR_OK) {
        if (ctx->rank == 0 || ctx_p == NULL)
            fprintf(stderr, "symaddr: %s\n", ctx->err);
        if (ctx->has_heap) {
            symaddr_mapping_close_peers(ctx, &ctx->heap.mapping);
            MPI_Barrier(ctx->comm);
            symaddr_heap_fini(ctx);
        }
        context_free(ctx);
        return st;
    }
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
    ctx->be.ops->stream_sync(&ctx->be, NULL);
    /* Every rank first drops its mappings of peers' memory; only then does any rank
     * release memory that peers had mapped. */
    MPI_Barrier(ctx->comm);
    size_t n = ctx->reg.count, k = 0;
    symaddr_registration_t **all = malloc(sizeof(*all) * (n ? n : 1));
    while (all && (r = symaddr_registry_last(&ctx->reg))) {
        symaddr_registry_remove(&ctx->reg, r);
        if (r->mapping != &ctx->heap.mapping)
            symaddr_mapping_close_peers(ctx, r->mapping);
        all[k++] = r;
    }
    if (ctx->has_heap)
        symaddr_mapping_close_peers(ctx, &ctx->heap.mapping);
    symaddr_coll_close_peers(ctx);
    MPI_Barrier(ctx->comm);
    symaddr_coll_fini(ctx);
    for (size_t i = 0; i < k; i++) {
        if (all[i]->mapping != &ctx->heap.mapping) {
            symaddr_mapping_release(ctx, all[i]->mapping);
            free(all[i]->mapping);
        }
        free(all[i]);
    }
    free(all);
    if (ctx->has_heap)
        symaddr_heap_fini(ctx);
    context_free(ctx);
    *ctx_p = NULL;
    return SYMADDR_OK;
}

symaddr_backend_kind_t symaddr_backend(const symaddr_context_t *ctx)
{
    return ctx && ctx->be.ops ? ctx->be.ops->kind : SYMADDR_BACKEND_AUTO;
}

int symaddr_device(const symaddr_context_t *ctx)
{
    return ctx && ctx->be.ops && ctx->be.ops->kind != SYMADDR_BACKEND_CPU ? ctx->be.device : -1;
}

int symaddr_rank(const symaddr_context_t *ctx) { return ctx ? ctx->rank : -1; }
int symaddr_size(const symaddr_context_t *ctx) { return ctx ? ctx->size : -1; }
int symaddr_node_rank(const symaddr_context_t *ctx) { return ctx ? ctx->boot.node_rank : -1; }
int symaddr_node_size(const symaddr_context_t *ctx) { return ctx ? ctx->boot.node_size : -1; }
MPI_Comm symaddr_comm(const symaddr_context_t *ctx) { return ctx ? ctx->comm : MPI_COMM_NULL; }
