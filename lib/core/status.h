/* SPDX-License-Identifier: MIT */
/* Status text, error recording and overflow-checked size arithmetic: the floor every other
 * file of lib/ stands on. */
#ifndef SYMADDR_LIB_STATUS_H
#define SYMADDR_LIB_STATUS_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symaddr/types.h"

#define SYMADDR_ERRLEN 512

/* The last error of one context: what went wrong and what to do. */
typedef struct symaddr_error {
    pthread_mutex_t lock;
    char text[SYMADDR_ERRLEN];
} symaddr_error_t;

symaddr_status_t symaddr_error_set(symaddr_error_t *e, symaddr_status_t status, const char *fmt,
                                   ...) __attribute__((format(printf, 3, 4)));
symaddr_status_t symaddr_error_vset(symaddr_error_t *e, symaddr_status_t status, const char *fmt,
                                    va_list ap);

/* false when the result does not fit a size_t */
bool symaddr_size_mul(size_t a, size_t b, size_t *out);
bool symaddr_size_add(size_t a, size_t b, size_t *out);
bool symaddr_align_up(size_t v, size_t a, size_t *out);

/* Largest allocation or registration symaddr accepts. */
#define SYMADDR_MAX_BYTES ((size_t)1 << 48)

/* The size of an allocation or registration: 1 to SYMADDR_MAX_BYTES; else the status, with the
 * message recorded in e. */
symaddr_status_t symaddr_check_size(symaddr_error_t *e, size_t bytes, const char *fn);

/* Validation's process-wide area, for Triton kernels: the first refusal of a table that is not
 * one of symaddr's (a copy of a map's peer_bases), which has no header to record it in, and a
 * sink where the refused lanes of symaddr.triton's translate point, so that an access through
 * them reaches no allocation. Host memory, page aligned; a GPU backend registers it with its
 * runtime, which maps it at the same address for kernels (symaddr_abi_json gives the address). */
#define SYMADDR_SINK_SPAN 65536 /* a refused lane points at sink + (its address mod the span) */
typedef struct symaddr_validation_area {
    uint32_t stray; /* -status of the first refusal of an unknown table; 0 if none */
    unsigned char pad_[4096 - sizeof(uint32_t)];
    unsigned char sink[SYMADDR_SINK_SPAN + 4096]; /* room for a lane's access past the span */
} symaddr_validation_area_t;
extern symaddr_validation_area_t symaddr_validation_area_;

#endif
