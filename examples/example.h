/* SPDX-License-Identifier: MIT */
/* What the examples share: one kernel source for every backend (symaddr/launch.h's launches),
 * and a check that stops every rank on a failed call. */
#ifndef SYMADDR_EXAMPLE_H
#define SYMADDR_EXAMPLE_H

#include <stdio.h>
#include <stdlib.h>

#include "symaddr/launch.h"
#include "symaddr/symaddr.h"

/* Stop every rank with the call's status and symaddr's words for it. */
#define CHECK(ctx, call)                                                                           \
    do {                                                                                           \
        symaddr_status_t st_ = (call);                                                             \
        if (st_ != SYMADDR_OK) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, symaddr_strerror(st_),          \
                    symaddr_last_error(ctx));                                                      \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)

#endif
