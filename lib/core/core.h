/* SPDX-License-Identifier: MIT */
/* The part of a context that the floor works on: its ranks, bootstrap, settings, last error,
 * call counter and health. Agreement lives here, so that every layer above can make the ranks
 * settle on one status without knowing the rest of the context. */
#ifndef SYMADDR_LIB_CORE_H
#define SYMADDR_LIB_CORE_H

#include <stdint.h>

#include "symaddr/symaddr.h"
#include "bootstrap/bootstrap.h"
#include "core/config.h"
#include "core/log.h"
#include "core/status.h"

typedef struct symaddr_core {
    MPI_Comm comm;
    int rank, size;
    symaddr_bootstrap_t boot;
    symaddr_config_t cfg;
    symaddr_error_t err;
    uint64_t seq;            /* collective call counter */
    symaddr_status_t broken; /* why the context can only be finalized; SYMADDR_OK while healthy */
    bool broken_told;        /* broken, and every rank knows (an agreement carried it) */
    int busy;                /* a thread is in a collective or allocation call */
    int raced;               /* another thread entered one meanwhile: the context breaks */
    int coll_call;           /* the call in flight is a collective (its result may be mixed) */
    unsigned forks;          /* symaddr_forks when the context was made: a child differs */
} symaddr_core_t;

/* A line of the context's log (log.h), formatted only when it will be printed. */
#define SYMADDR_LOG(core, level, subsys, ...)                                                      \
    do {                                                                                           \
        if (symaddr_log_on(&(core)->cfg, (level), (subsys)))                                       \
            symaddr_log(&(core)->cfg, (core)->rank, (core)->boot.node_rank, (level), (subsys),     \
                        __VA_ARGS__);                                                              \
    } while (0)

/* Mark the context broken (the first reason sticks); returns why. */
symaddr_status_t symaddr_core_break(symaddr_core_t *core, symaddr_status_t why);

/* Collective agreement: every rank contributes its local status and the call's
 * arguments; all return the same status. */
typedef struct symaddr_call {
    uint64_t seq;
    uint64_t op;
    uint64_t arg0, arg1; /* op-specific, must match across ranks */
    int32_t status;      /* local status before the call's collective work */
    int32_t broken;      /* the rank's context broken (core.broken): then every rank's is */
    char why[100];
} symaddr_call_t;

enum {
    SYMADDR_OP_ALLOCATE = 1,
    SYMADDR_OP_FREE,
    SYMADDR_OP_IMPORT,
    SYMADDR_OP_UNREGISTER,
    SYMADDR_OP_REGISTER,
    SYMADDR_OP_FINALIZE,
};

symaddr_status_t symaddr_agree(symaddr_core_t *core, uint64_t op, uint64_t arg0, uint64_t arg1,
                               symaddr_status_t local, const char *opname);
/* Every rank learns whether all succeeded; returns the first failure. */
symaddr_status_t symaddr_agree_status(symaddr_core_t *core, symaddr_status_t local,
                                      const char *opname);
/* A call's two words as text for a MISMATCH message: their layout is the caller's. */
typedef void (*symaddr_call_text_t)(const uint64_t call[2], char *text, size_t size);
/* symaddr_agree_status, and @p call compared with rank 0's: SYMADDR_ERR_MISMATCH on every rank
 * where one differs, its message naming both calls through @p text. */
symaddr_status_t symaddr_agree_call(symaddr_core_t *core, symaddr_status_t local,
                                    const uint64_t call[2], symaddr_call_text_t text,
                                    const char *opname);

#endif
