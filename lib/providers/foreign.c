/* SPDX-License-Identifier: MIT */
/* foreign provider: memory another symmetric library owns, recorded from the table of where
 * this process reaches each rank's copy. symaddr never frees or unmaps it. */
#include "provider.h"

#include <stdlib.h>
#include <string.h>

static symaddr_status_t foreign_check(symaddr_context_t *ctx, const symaddr_register_args_t *a,
                                      const char *fn)
{
    if (!a->peer_addrs)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG, "%s: the peer table is NULL", fn);
    if (a->peer_addrs[ctx->core.rank] != (uint64_t)(uintptr_t)a->ptr)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "%s: host_peer_addrs[%d] is 0x%llx but must equal local_ptr %p",
                                 fn, ctx->core.rank,
                                 (unsigned long long)a->peer_addrs[ctx->core.rank], a->ptr);
    /* a bit symaddr does not define would mean a capability a later version might */
    if (a->caps & ~SYMADDR_CAP_ALL_)
        return symaddr_set_error(ctx, SYMADDR_ERR_INVALID_ARG,
                                 "%s: caps 0x%llx has bits symaddr does not define (0x%llx): "
                                 "pass a combination of SYMADDR_CAP_LOAD_STORE, _ATOMICS, "
                                 "_SYSTEM_ATOMICS, _FABRIC and _COHERENT",
                                 fn, (unsigned long long)a->caps,
                                 (unsigned long long)(a->caps & ~SYMADDR_CAP_ALL_));
    return SYMADDR_OK;
}

static symaddr_status_t foreign_reg(symaddr_context_t *ctx, const symaddr_register_args_t *a,
                                    symaddr_registration_t *r)
{
    static const char fn[] = "symaddr_register_peer_table";
    symaddr_backing_t *m = calloc(1, sizeof(*m));
    symaddr_status_t st = SYMADDR_OK;
    if (!m || !(m->host_table = calloc((size_t)ctx->core.size + 1, sizeof(uint64_t))))
        st = symaddr_set_error(ctx, SYMADDR_ERR_NO_MEMORY, "%s: out of host memory", fn);
    if (st == SYMADDR_OK) {
        memcpy(m->host_table, a->peer_addrs, sizeof(uint64_t) * (size_t)ctx->core.size);
        m->root = a->ptr;
        m->root_bytes = a->bytes;
        m->caps = a->caps & ~SYMADDR_CAP_OWNED;
        if ((st = symaddr_backing_upload(ctx, m)) != SYMADDR_OK)
            symaddr_set_error(ctx, st, "%s: cannot place the peer table in device memory: %s", fn,
                              symaddr_runtime_says(ctx));
    }
    st = symaddr_agree_status(&ctx->core, st, fn);
    if (st != SYMADDR_OK) {
        if (m)
            symaddr_backing_release(ctx, m);
        free(m);
        return st;
    }
    r->backing = m;
    return symaddr_registration_publish(ctx, r, SYMADDR_PROVIDER_FOREIGN, a->ptr, a->bytes);
}

/* The memory is the other library's: only the table goes (the backing owns nothing). */
const symaddr_provider_ops_t symaddr_provider_foreign_ops = {
    .size = sizeof(symaddr_provider_ops_t),
    .name = "foreign",
    .caps = symaddr_provider_caps_vouched,
    .usable = symaddr_provider_usable_always,
    .alloc = symaddr_provider_alloc_unsupported,
    .check = foreign_check,
    .reg = foreign_reg,
    .retain = symaddr_provider_retain_never,
    .detach = symaddr_provider_detach_nothing,
    .release = symaddr_provider_release_backing,
};
