/* SPDX-License-Identifier: MIT */
/* The providers of symaddr, one row per kind, and the stubs for verbs a provider lacks. */
#include "provider.h"

#include <stdlib.h>

static const symaddr_provider_ops_t *const providers[SYMADDR_PROVIDER_COUNT_] = {
    [SYMADDR_PROVIDER_HEAP] = &symaddr_provider_heap_ops,
    [SYMADDR_PROVIDER_IPC] = &symaddr_provider_ipc_ops,
    [SYMADDR_PROVIDER_IMPORT] = &symaddr_provider_import_ops,
    [SYMADDR_PROVIDER_FOREIGN] = &symaddr_provider_foreign_ops,
    [SYMADDR_PROVIDER_VMM] = &symaddr_provider_vmm_ops,
};

_Static_assert(sizeof(providers) / sizeof(providers[0]) == SYMADDR_PROVIDER_COUNT_,
               "every provider kind has its ops");

const symaddr_provider_ops_t *symaddr_provider_ops(symaddr_provider_kind_t kind)
{
    return providers[kind];
}

symaddr_mem_kind_t symaddr_provider_user_kind(const symaddr_context_t *ctx)
{
    return ctx->core.cfg.hip_finegrained ? SYMADDR_MEM_COHERENT : SYMADDR_MEM_BULK;
}

uint64_t symaddr_provider_caps_bulk(symaddr_context_t *ctx)
{
    return ctx->be.ops->caps[SYMADDR_MEM_BULK];
}

uint64_t symaddr_provider_caps_user(symaddr_context_t *ctx)
{
    return ctx->be.ops->caps[symaddr_provider_user_kind(ctx)];
}

uint64_t symaddr_provider_caps_vouched(symaddr_context_t *ctx)
{
    (void)ctx;
    return 0;
}

symaddr_status_t symaddr_provider_usable_always(symaddr_context_t *ctx, const char *fn)
{
    (void)ctx, (void)fn;
    return SYMADDR_OK;
}

symaddr_status_t symaddr_provider_alloc_unsupported(symaddr_context_t *ctx, size_t bytes,
                                                    symaddr_registration_t *r)
{
    (void)bytes, (void)r;
    return symaddr_set_error(ctx, SYMADDR_ERR_UNSUPPORTED,
                             "this provider does not allocate; use SYMADDR_PROVIDER_HEAP, _IPC "
                             "or _VMM");
}

symaddr_status_t symaddr_provider_check_unsupported(symaddr_context_t *ctx,
                                                    const symaddr_register_args_t *a,
                                                    const char *fn)
{
    (void)a;
    return symaddr_set_error(ctx, SYMADDR_ERR_UNSUPPORTED,
                             "%s: this provider only allocates; register memory with "
                             "symaddr_import or a peer table",
                             fn);
}

symaddr_status_t symaddr_provider_reg_unsupported(symaddr_context_t *ctx,
                                                  const symaddr_register_args_t *a,
                                                  symaddr_registration_t *r)
{
    (void)a, (void)r;
    return symaddr_set_error(ctx, SYMADDR_ERR_UNSUPPORTED, "this provider only allocates");
}

void symaddr_provider_detach_nothing(symaddr_context_t *ctx, symaddr_registration_t *r)
{
    (void)ctx, (void)r;
}

bool symaddr_provider_retain_never(symaddr_context_t *ctx, symaddr_registration_t *r)
{
    (void)ctx, (void)r;
    return false;
}

bool symaddr_provider_retain_backing(symaddr_context_t *ctx, symaddr_registration_t *r)
{
    if (!symaddr_backing_retain(ctx, r->backing))
        return false;
    r->backing = NULL;
    return true;
}

void symaddr_provider_detach_peers(symaddr_context_t *ctx, symaddr_registration_t *r)
{
    symaddr_backing_close_peers(ctx, r->backing);
}

void symaddr_provider_release_backing(symaddr_context_t *ctx, symaddr_registration_t *r)
{
    symaddr_backing_release(ctx, r->backing);
    free(r->backing);
    r->backing = NULL;
}

/* Teardown, written once: every registration drops its mappings of peers' memory, then (the
 * node's ranks having done the same) every one releases its own. regs are out of the
 * registry already; the whole context (its heap and sync area) goes too when whole is set. A
 * broken context, or a peer that does not come, skips the wait: this rank releases all the
 * same. */
symaddr_status_t symaddr_teardown(symaddr_context_t *ctx, symaddr_registration_t **regs, size_t n,
                                  bool whole)
{
    symaddr_status_t st = SYMADDR_OK;
    for (size_t i = 0; i < n; i++)
        symaddr_provider_ops(regs[i]->map.provider)->detach(ctx, regs[i]);
    if (whole) {
        if (ctx->has_heap)
            symaddr_backing_close_peers(ctx, &ctx->heap.backing);
        symaddr_coll_close_peers(ctx);
        symaddr_retained_close_peers(ctx);
    }
    if (ctx->core.broken == SYMADDR_OK &&
        (st = symaddr_boot_barrier(&ctx->core.boot, &ctx->core.boot.node,
                                   symaddr_bootstrap_agree_deadline(&ctx->core.boot))) !=
            SYMADDR_OK)
        symaddr_core_break(&ctx->core, st);
    for (size_t i = 0; i < n; i++) {
        symaddr_provider_ops(regs[i]->map.provider)->release(ctx, regs[i]);
        free(regs[i]);
    }
    if (whole) {
        symaddr_retained_release(ctx);
        symaddr_coll_fini(ctx);
        if (ctx->has_heap)
            symaddr_heap_fini(ctx);
    }
    return st;
}
