/* SPDX-License-Identifier: MIT */
/* ipc and vmm providers: one backend allocation per call, with its own peer table. The ipc
 * one shares runtime IPC handles (memfds on cpu); the vmm one VMM memory's fds or fabric
 * handles. */
#include "provider.h"

#include <stdlib.h>

static symaddr_status_t mapped_alloc(symaddr_context_t *ctx, size_t bytes,
                                     symaddr_registration_t *r, bool vmm)
{
    symaddr_mapping_t *m = calloc(1, sizeof(*m));
    size_t mapped = bytes;
    symaddr_status_t st = !m    ? SYMADDR_ERR_NO_MEMORY
                          : vmm ? ctx->be.ops->vmm_alloc(&ctx->be, bytes, &m->root, &mapped)
                                : ctx->be.ops->mem_alloc(&ctx->be, bytes, &m->root);
    if (st != SYMADDR_OK)
        symaddr_set_error(ctx, st, "symaddr_allocate_symmetric: cannot allocate %zu bytes of %s "
                          "%smemory: %s", bytes, ctx->be.ops->name, vmm ? "VMM " : "",
                          ctx->be.why);
    st = symaddr_agree_status(ctx, st, "symaddr_allocate_symmetric");
    if (st == SYMADDR_OK) {
        m->root_bytes = mapped;
        m->owned = true;
        m->vmm = vmm;
        st = symaddr_mapping_open(ctx, m, 0);
    }
    if (st != SYMADDR_OK) {
        if (m && m->root)
            (vmm ? ctx->be.ops->vmm_free : ctx->be.ops->mem_free)(&ctx->be, m->root);
        free(m);
        return st;
    }
    r->mapping = m;
    return symaddr_registration_publish(ctx, r, vmm ? SYMADDR_PROVIDER_VMM : SYMADDR_PROVIDER_IPC,
                                        m->root, bytes, ctx->be.ops->caps);
}

static symaddr_status_t ipc_alloc(symaddr_context_t *ctx, size_t bytes, symaddr_registration_t *r)
{
    return mapped_alloc(ctx, bytes, r, false);
}

static symaddr_status_t vmm_alloc(symaddr_context_t *ctx, size_t bytes, symaddr_registration_t *r)
{
    return mapped_alloc(ctx, bytes, r, true);
}

static void ipc_free(symaddr_context_t *ctx, symaddr_registration_t *r)
{
    symaddr_mapping_close_peers(ctx, r->mapping);
    /* No rank releases memory while a peer may still have it mapped. A peer that does not
     * come breaks the context; the memory is released all the same. */
    if (symaddr_mpi_barrier(&ctx->boot, ctx->boot.node_comm,
                            symaddr_bootstrap_deadline(&ctx->boot, 1)) != SYMADDR_OK)
        symaddr_context_break(ctx, SYMADDR_ERR_TIMEOUT);
    symaddr_mapping_release(ctx, r->mapping);
    free(r->mapping);
    r->mapping = NULL;
}

const symaddr_provider_ops_t symaddr_provider_ipc_ops = {
    .size = sizeof(symaddr_provider_ops_t),
    .name = "ipc",
    .alloc = ipc_alloc,
    .free = ipc_free,
};

const symaddr_provider_ops_t symaddr_provider_vmm_ops = {
    .size = sizeof(symaddr_provider_ops_t),
    .name = "vmm",
    .alloc = vmm_alloc,
    .free = ipc_free,
};
