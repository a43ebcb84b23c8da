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
    char why[100];       /* the rank's error text where its local status failed */
} symaddr_call_t;

/* Every agreement exchange on the context's communicator moves records of this one size,
 * whatever it carries: ranks in different agreements (one rank allocating while its peers
 * compare a collective's arguments) then never match records of different sizes, where MPI
 * truncated one (and Open MPI aborted the job) or a rank read bytes no peer sent. Each record
 * says which kind of agreement and which call it belongs to, and is checked on arrival. */
enum { SYMADDR_AGREE_PAYLOAD = 192, SYMADDR_AGREE_NAME = 48 };
typedef struct symaddr_agree_rec {
    uint32_t magic;                /* SYMADDR_AGREE_MAGIC */
    uint16_t kind;                 /* SYMADDR_AGREE_* */
    uint16_t bytes;                /* of payload that the kind uses */
    int32_t status;                /* the rank's local status */
    int32_t broken;                /* its context broken (core.broken): then every rank's is */
    char call[SYMADDR_AGREE_NAME]; /* the call it is made for, NUL-terminated */
    uint64_t payload[SYMADDR_AGREE_PAYLOAD / 8];
} symaddr_agree_rec_t;

/* Kinds of agreement. */
enum {
    SYMADDR_AGREE_STATUS = 1, /* statuses and a call's two words (agree_status, agree_call) */
    SYMADDR_AGREE_OP,         /* a registration's call (symaddr_agree) */
    SYMADDR_AGREE_MATCH,      /* a collective's arguments (validation mode) */
};

/* The exchange every agreement makes: this rank's record (kind, local status, bytes of
 * payload) to every rank, and every rank's back into *all_p (size records, freed by the
 * caller; NULL when the exchange itself failed). Returns SYMADDR_OK where every rank is in the
 * same kind of agreement of the same call; SYMADDR_ERR_MISMATCH on every rank where some rank
 * is in another; SYMADDR_ERR_PEER where a record is malformed; the exchange's own failure
 * (timeout, MPI), which breaks the context. Every record's broken flag breaks this context. */
symaddr_status_t symaddr_agree_exchange(symaddr_core_t *core, unsigned kind, symaddr_status_t local,
                                        const void *payload, size_t bytes, const char *opname,
                                        symaddr_agree_rec_t **all_p);

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
