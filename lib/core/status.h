/* SPDX-License-Identifier: MIT */
/* Status text, error recording and overflow-checked size arithmetic: the floor every other
 * file of lib/ stands on. */
#ifndef SYMADDR_LIB_STATUS_H
#define SYMADDR_LIB_STATUS_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

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

#endif
