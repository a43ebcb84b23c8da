/* SPDX-License-Identifier: MIT */
/* Internal to symaddr/device.h, which includes it where these are first needed (after the
 * public translate and fence they use): where a remote atomic or signal lands. Not API. */
#ifndef SYMADDR_DETAIL_TARGETS_H
#define SYMADDR_DETAIL_TARGETS_H

#ifndef SYMADDR_DEVICE_H
#error "include symaddr/device.h, not symaddr/detail/targets.h"
#endif

/* Where a system-scope atomic or signal lands: the translated address, or NULL when the access is
 * refused (validation: out of bounds, or the map lacks a capability in need). */
SYMADDR_DEVFN void *symaddr_system_target_(const void *ptr, size_t len, int target,
                                           const uint64_t *peer_bases, int local_rank,
                                           uint64_t need)
{
    void *r = symaddr_translate_n_(ptr, len, target, peer_bases, local_rank);
    return r && !symaddr_validate_caps_(peer_bases, need) ? r : NULL;
}

/* The same for a buffer form that needs the capabilities in need: refused (and recorded under
 * validation) when the map lacks them, whatever the build. */
SYMADDR_DEVFN void *symaddr_buffer_target_(symaddr_buffer_t buf, const void *ptr, size_t len,
                                           int target, uint64_t need)
{
    if ((buf.caps & need) != need) {
        (void)symaddr_validate_caps_(buf.peer_bases, need);
        return NULL;
    }
    return symaddr_translate_n_(ptr, len, target, buf.peer_bases, buf.local_rank);
}

/* Buffer forms of the signals: flag index (64-bit words) of the bound buffer. */
SYMADDR_DEVFN void symaddr_buffer_signal_(symaddr_buffer_t buf, size_t index, uint64_t value,
                                          int target, int add)
{
    uint64_t *r =
        (uint64_t *)symaddr_buffer_target_(buf, (uint64_t *)buf.ptr + index, sizeof(uint64_t),
                                           target, SYMADDR_CAP_COHERENT | SYMADDR_CAP_ATOMICS);
    int sys = (buf.caps & SYMADDR_CAP_SYSTEM_ATOMICS) != 0;
    symaddr_fence();
    if (r)
        add ? (void)symaddr_prim_add_u64(r, value, sys)
            : (void)symaddr_prim_swap_u64(r, value, sys);
}

#endif /* SYMADDR_DETAIL_TARGETS_H */
