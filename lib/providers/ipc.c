/* SPDX-License-Identifier: MIT */
/* ipc provider: one plain backend allocation per call, with its own peer table; peers open
 * it through the runtime's IPC handles (memfds on the cpu backend). */
#include "provider.h"

#include <stdlib.h>

/* Shared with the vmm provider, which differs only in how the memory is made. */
symaddr_status_t symaddr_provider_mapped_alloc(symaddr_context_t *ctx, size_t bytes,
                                               symaddr_registration_t *r, bool vmm)
{
    symaddr_backing_t *m = calloc(1, sizeof(*m));
    size_t mapped = bytes;
    symaddr_status_t st = !m    ? SYMADDR_ERR_NO_MEMORY
                          : vmm ? ctx->be.ops->vmm_alloc(&ctx->be, bytes, &m->root, &mapped)
                                : ctx->be.ops->mem_alloc(&ctx->be, bytes, &m->root);
    if (st != SYMADDR_OK)
        symaddr_set_error(ctx, st,
                          "symaddr_symmetric_alloc: cannot allocate %zu bytes of %s "
                          "%smemory: %s",
                          bytes, ctx->be.ops->name, vmm ? "VMM " : "", symaddr_runtime_says(ctx));
    st = symaddr_agree_status(&ctx->core, st, "symaddr_symmetric_alloc");
    if (st == SYMADDR_OK) {
        m->root_bytes = mapped;
        m->owned = true;
        m->vmm = vmm;
        st = symaddr_backing_open(ctx, m, 0);
    }
    if (st != SYMADDR_OK) {
        if (m && m->root)
            (vmm ? ctx->be.ops->vmm_free : ctx->be.ops->mem_free)(&ctx->be, m->root);
        free(m);
        return st;
    }
    r->backing = m;
    return symaddr_registration_publish(ctx, r, vmm ? SYMADDR_PROVIDER_VMM : SYMADDR_PROVIDER_IPC,
                                        m->root, bytes, ctx->be.ops->caps);
}

static symaddr_status_t ipc_alloc(symaddr_context_t *ctx, size_t bytes, symaddr_registration_t *r)
{
    return symaddr_provider_mapped_alloc(ctx, bytes, r, false);
}

const symaddr_provider_ops_t symaddr_provider_ipc_ops = {
    .size = sizeof(symaddr_provider_ops_t),
    .name = "ipc",
    .usable = symaddr_provider_usable_always,
    .alloc = ipc_alloc,
    .check = symaddr_provider_check_unsupported,
    .reg = symaddr_provider_reg_unsupported,
    .detach = symaddr_provider_detach_peers,
    .release = symaddr_provider_release_mapping,
};
