/* SPDX-License-Identifier: MIT */
/* ipc provider: one plain backend allocation per call, with its own peer table; peers open
 * it through the runtime's IPC handles (memfds on the cpu backend). */
#include "provider.h"

#include <stdlib.h>

/* One attempt at this rank's root, agreed by every rank. */
static symaddr_status_t try_root(symaddr_context_t *ctx, symaddr_backing_t *m, size_t bytes,
                                 bool vmm, size_t *mapped_p)
{
    symaddr_status_t st =
        symaddr_backing_fits(ctx, bytes, bytes, "symaddr_symmetric_alloc: an allocation",
                             "allocate less (the ranks of a host share its memory)");
    if (st != SYMADDR_OK)
        return symaddr_agree_status(&ctx->core, st, "symaddr_symmetric_alloc");
    st = !m    ? SYMADDR_ERR_NO_MEMORY
         : vmm ? ctx->be.ops->vmm_alloc(&ctx->be, bytes, &m->root, mapped_p)
               : ctx->be.ops->mem_alloc(&ctx->be, bytes, symaddr_provider_user_kind(ctx), &m->root);
    if (st != SYMADDR_OK)
        symaddr_set_error(ctx, st,
                          "symaddr_symmetric_alloc: cannot allocate %zu bytes of %s "
                          "%smemory: %s",
                          bytes, ctx->be.ops->name, vmm ? "VMM " : "", symaddr_runtime_says(ctx));
    return symaddr_agree_status(&ctx->core, st, "symaddr_symmetric_alloc");
}

/* This rank's root: when a rank ran out, what retention holds may be what is missing, so every
 * rank lets it all go and tries once more. */
static symaddr_status_t new_root(symaddr_context_t *ctx, symaddr_backing_t *m, size_t bytes,
                                 bool vmm, size_t *mapped_p)
{
    symaddr_status_t st = try_root(ctx, m, bytes, vmm, mapped_p);
    if (st == SYMADDR_OK || st == SYMADDR_ERR_BROKEN || st == SYMADDR_ERR_INVALID_SIZE ||
        !ctx->retained)
        return st;
    if (m)
        symaddr_backing_release(ctx, m); /* the root this rank did get */
    return symaddr_retained_flush(ctx, 0) == SYMADDR_OK ? try_root(ctx, m, bytes, vmm, mapped_p)
                                                        : st;
}

/* Shared with the vmm provider, which differs only in how the memory is made. */
symaddr_status_t symaddr_provider_mapped_alloc(symaddr_context_t *ctx, size_t bytes,
                                               symaddr_registration_t *r, bool vmm)
{
    if (symaddr_backing_retained(ctx, bytes, vmm)) {
        /* Every rank takes back the same one: mapped, tables and all. Nothing else after the
         * call's agreement is collective, so a second round makes a rank that came after its
         * peers gave up time out too, instead of returning OK alone. */
        symaddr_status_t st =
            symaddr_agree_status(&ctx->core, SYMADDR_OK, "symaddr_symmetric_alloc");
        if (st != SYMADDR_OK)
            return st;
        symaddr_backing_t *m = symaddr_backing_take(ctx, bytes, vmm);
        uint32_t zero = 0;
        r->backing = m;
        st = symaddr_registration_publish(ctx, r, vmm ? SYMADDR_PROVIDER_VMM : SYMADDR_PROVIDER_IPC,
                                          m->root, bytes);
        if (st == SYMADDR_OK && ctx->core.cfg.validate) /* no fault of the last user's */
            st = ctx->be.ops->memcpy(&ctx->be, r->map.error_flag, &zero, sizeof(zero));
        return st;
    }
    symaddr_backing_t *m = calloc(1, sizeof(*m));
    if (m) {
        m->owned = true;
        m->vmm = vmm;
    }
    size_t mapped = bytes;
    symaddr_status_t st = new_root(ctx, m, bytes, vmm, &mapped);
    if (st == SYMADDR_OK) {
        m->root_bytes = mapped;
        m->asked = bytes;
        m->caps = symaddr_provider_caps_user(ctx);
        st = symaddr_backing_open(ctx, m, 0);
        /* Out of descriptors in the exchange: what retention holds may be what is missing.
         * Every rank got the same status and holds the same retained list, so all retry. */
        if (st == SYMADDR_ERR_NO_MEMORY && ctx->retained &&
            symaddr_retained_flush(ctx, 0) == SYMADDR_OK)
            st = symaddr_backing_open(ctx, m, 0);
    }
    if (st != SYMADDR_OK) {
        if (m)
            symaddr_backing_release(ctx, m); /* the root, if this rank has one */
        free(m);
        return st;
    }
    r->backing = m;
    return symaddr_registration_publish(ctx, r, vmm ? SYMADDR_PROVIDER_VMM : SYMADDR_PROVIDER_IPC,
                                        m->root, bytes);
}

static symaddr_status_t ipc_alloc(symaddr_context_t *ctx, size_t bytes, symaddr_registration_t *r)
{
    return symaddr_provider_mapped_alloc(ctx, bytes, r, false);
}

const symaddr_provider_ops_t symaddr_provider_ipc_ops = {
    .size = sizeof(symaddr_provider_ops_t),
    .name = "ipc",
    .caps = symaddr_provider_caps_user,
    .usable = symaddr_provider_usable_always,
    .alloc = ipc_alloc,
    .check = symaddr_provider_check_unsupported,
    .reg = symaddr_provider_reg_unsupported,
    .retain = symaddr_provider_retain_backing,
    .detach = symaddr_provider_detach_peers,
    .release = symaddr_provider_release_backing,
};
