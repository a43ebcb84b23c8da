/* SPDX-License-Identifier: MIT */
/* vmm provider: VMM memory (cuMemCreate/hipMemCreate) per call, shared with peers by
 * descriptor or fabric handle; otherwise the ipc provider's path. */
#include "provider.h"

symaddr_status_t symaddr_provider_mapped_alloc(symaddr_context_t *ctx, size_t bytes,
                                               symaddr_registration_t *r, bool vmm);

static symaddr_status_t vmm_usable(symaddr_context_t *ctx, const char *fn)
{
    if (ctx->be.ops->vmm_alloc)
        return SYMADDR_OK;
    return symaddr_set_error(ctx, SYMADDR_ERR_UNSUPPORTED,
                             "%s: the %s backend has no VMM memory%s; use SYMADDR_PROVIDER_IPC", fn,
                             ctx->be.ops->name, ctx->be.ops->vmm_missing);
}

static symaddr_status_t vmm_alloc(symaddr_context_t *ctx, size_t bytes, symaddr_registration_t *r)
{
    return symaddr_provider_mapped_alloc(ctx, bytes, r, true);
}

const symaddr_provider_ops_t symaddr_provider_vmm_ops = {
    .size = sizeof(symaddr_provider_ops_t),
    .name = "vmm",
    .caps = symaddr_provider_caps_user,
    .usable = vmm_usable,
    .alloc = vmm_alloc,
    .check = symaddr_provider_check_unsupported,
    .reg = symaddr_provider_reg_unsupported,
    .retain = symaddr_provider_retain_backing,
    .detach = symaddr_provider_detach_peers,
    .release = symaddr_provider_release_backing,
};
