/* SPDX-License-Identifier: MIT */
/* The record each rank sends its node peers for one allocation, and the check every received
 * record passes before it is used. */
#ifndef SYMADDR_LIB_EXCH_H
#define SYMADDR_LIB_EXCH_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/backend.h"

typedef struct exch {
    symaddr_ipc_handle_t handle;
    uint64_t root;   /* root address in its owner */
    uint64_t offset; /* registered range's offset in the root */
    int32_t status;
    int32_t pad_;
} exch_t;

#define SYMADDR_EXCH_MAX_BYTES ((uint64_t)1 << 48)

/* SYMADDR_OK when rec describes something a peer can open: a known handle kind, a plausible
 * size, an offset inside it, and a descriptor when the kind needs one. */
static inline symaddr_status_t symaddr_exch_check(const exch_t *rec, bool got_fd)
{
    const symaddr_ipc_handle_t *h = &rec->handle;
    if (rec->status != SYMADDR_OK)
        return SYMADDR_ERR_PEER;
    if (h->kind > SYMADDR_HANDLE_VMM_FABRIC || h->bytes == 0 || h->bytes > SYMADDR_EXCH_MAX_BYTES)
        return SYMADDR_ERR_PEER;
    if (rec->offset >= h->bytes || rec->root == 0 || rec->root + h->bytes < rec->root)
        return SYMADDR_ERR_PEER;
    if (got_fd != (h->fd >= 0))
        return SYMADDR_ERR_PEER; /* the record and the socket disagree */
    if (h->kind == SYMADDR_HANDLE_VMM && !got_fd)
        return SYMADDR_ERR_PEER;
    return SYMADDR_OK;
}

#endif
