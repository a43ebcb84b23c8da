/* SPDX-License-Identifier: MIT */
/* The bottom of the library: status names, the per-context error text, and size arithmetic
 * that refuses to wrap. Imports nothing of symaddr but its public header. */
#include "core/status.h"

#include "symaddr/symaddr.h" /* the public declarations: their visibility */

#include <stdio.h>

static const char *const status_text[] = {
    [0] = "SYMADDR_OK: success",
    [-SYMADDR_ERR_INVALID_ARG] = "SYMADDR_ERR_INVALID_ARG: an argument is NULL or out of range",
    [-SYMADDR_ERR_INVALID_SIZE] = "SYMADDR_ERR_INVALID_SIZE: size is zero or overflows",
    [-SYMADDR_ERR_NO_MEMORY] = "SYMADDR_ERR_NO_MEMORY: out of host, device or heap memory",
    [-SYMADDR_ERR_NOT_FOUND] = "SYMADDR_ERR_NOT_FOUND: pointer is not inside any registration",
    [-SYMADDR_ERR_DOUBLE_FREE] = "SYMADDR_ERR_DOUBLE_FREE: pointer was already freed",
    [-SYMADDR_ERR_INVALID_MAP] =
        "SYMADDR_ERR_INVALID_MAP: map was freed or is not from this context",
    [-SYMADDR_ERR_MISMATCH] = "SYMADDR_ERR_MISMATCH: ranks disagree on a collective call",
    [-SYMADDR_ERR_BACKEND] = "SYMADDR_ERR_BACKEND: the GPU runtime or the OS refused a call",
    [-SYMADDR_ERR_UNSUPPORTED] =
        "SYMADDR_ERR_UNSUPPORTED: not available with this backend or build",
    [-SYMADDR_ERR_TIMEOUT] = "SYMADDR_ERR_TIMEOUT: a wait ran past its timeout",
    [-SYMADDR_ERR_MPI] = "SYMADDR_ERR_MPI: an MPI call failed",
    [-SYMADDR_ERR_PEER] = "SYMADDR_ERR_PEER: another rank failed its part of a collective",
    [-SYMADDR_ERR_ALREADY_REGISTERED] =
        "SYMADDR_ERR_ALREADY_REGISTERED: range overlaps a registered range",
    [-SYMADDR_ERR_OUT_OF_BOUNDS] = "SYMADDR_ERR_OUT_OF_BOUNDS: pointer lies outside its map",
    [-SYMADDR_ERR_UNREACHABLE] = "SYMADDR_ERR_UNREACHABLE: target rank has no load/store path",
    [-SYMADDR_ERR_WRONG_PROVIDER] =
        "SYMADDR_ERR_WRONG_PROVIDER: memory belongs to another provider",
    [-SYMADDR_ERR_NOT_SHAREABLE] = "SYMADDR_ERR_NOT_SHAREABLE: memory cannot be exported to peers",
    [-SYMADDR_ERR_BROKEN] = "SYMADDR_ERR_BROKEN: a collective on this context timed out or failed "
                            "on some rank earlier; finalize the context and create a new one",
};

_Static_assert(sizeof(status_text) / sizeof(status_text[0]) == -SYMADDR_ERR_LAST_,
               "every status has its text");

symaddr_validation_area_t symaddr_validation_area_ __attribute__((aligned(4096)));

const char *symaddr_strerror(symaddr_status_t status)
{
    if ((int)status > 0 || (int)status <= SYMADDR_ERR_LAST_ || !status_text[-(int)status])
        return "SYMADDR_ERR_UNKNOWN: not a symaddr status";
    return status_text[-(int)status];
}

symaddr_status_t symaddr_error_vset(symaddr_error_t *e, symaddr_status_t status, const char *fmt,
                                    va_list ap)
{
    pthread_mutex_lock(&e->lock);
    vsnprintf(e->text, sizeof(e->text), fmt, ap);
    pthread_mutex_unlock(&e->lock);
    return status;
}

symaddr_status_t symaddr_error_set(symaddr_error_t *e, symaddr_status_t status, const char *fmt,
                                   ...)
{
    va_list ap;
    va_start(ap, fmt);
    symaddr_error_vset(e, status, fmt, ap);
    va_end(ap);
    return status;
}

bool symaddr_size_mul(size_t a, size_t b, size_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

bool symaddr_size_add(size_t a, size_t b, size_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

bool symaddr_align_up(size_t v, size_t a, size_t *out)
{
    size_t r;
    if (__builtin_add_overflow(v, a - 1, &r))
        return false;
    *out = r / a * a;
    return true;
}

symaddr_status_t symaddr_check_size(symaddr_error_t *e, size_t bytes, const char *fn)
{
    if (bytes == 0 || bytes > SYMADDR_MAX_BYTES)
        return symaddr_error_set(e, SYMADDR_ERR_INVALID_SIZE,
                                 "%s: size %zu is %s; pass 1 to 2^48 bytes", fn, bytes,
                                 bytes ? "too large" : "zero");
    return SYMADDR_OK;
}

void symaddr_version(int *major_p, int *minor_p, int *patch_p)
{
    if (major_p)
        *major_p = SYMADDR_VERSION_MAJOR;
    if (minor_p)
        *minor_p = SYMADDR_VERSION_MINOR;
    if (patch_p)
        *patch_p = SYMADDR_VERSION_PATCH;
}
