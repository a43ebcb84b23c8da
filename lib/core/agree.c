/* SPDX-License-Identifier: MIT */
/* Agreement: every rank of a collective call learns every other rank's verdict, so that all
 * return the same status. An agreement that times out leaves the ranks unsure of each other's
 * outcome, so the context is then broken: every later call returns SYMADDR_ERR_BROKEN. */
#include "core/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *op_name(uint64_t op)
{
    static const char *const names[] = {
        [SYMADDR_OP_ALLOCATE] = "symaddr_symmetric_alloc",
        [SYMADDR_OP_FREE] = "symaddr_symmetric_free",
        [SYMADDR_OP_IMPORT] = "symaddr_import",
        [SYMADDR_OP_UNREGISTER] = "symaddr_unregister",
        [SYMADDR_OP_REGISTER] = "symaddr_register_peer_table",
        [SYMADDR_OP_FINALIZE] = "symaddr_finalize",
    };
    return op < sizeof(names) / sizeof(names[0]) && names[op] ? names[op] : "an unknown call";
}

symaddr_status_t symaddr_core_break(symaddr_core_t *core, symaddr_status_t why)
{
    if (core->broken == SYMADDR_OK)
        core->broken = why;
    return why;
}

#define SYMADDR_AGREE_MAGIC 0x53594147u /* "SYAG" */

static const char *kind_name(unsigned kind)
{
    switch (kind) {
    case SYMADDR_AGREE_STATUS: return "its status";
    case SYMADDR_AGREE_OP: return "a registration";
    case SYMADDR_AGREE_MATCH: return "a collective's arguments";
    default: return "an unknown agreement";
    }
}

/* Whether a peer's record is one: its magic, a payload that fits, statuses symaddr has, and a
 * NUL-terminated name (forced, so that no message reads past it). */
static bool rec_sane(symaddr_agree_rec_t *r)
{
    r->call[SYMADDR_AGREE_NAME - 1] = '\0';
    return r->magic == SYMADDR_AGREE_MAGIC && r->bytes <= SYMADDR_AGREE_PAYLOAD && r->status <= 0 &&
           r->status > SYMADDR_ERR_LAST_ && r->broken <= 0 && r->broken > SYMADDR_ERR_LAST_;
}

symaddr_status_t symaddr_agree_exchange(symaddr_core_t *core, unsigned kind, symaddr_status_t local,
                                        const void *payload, size_t bytes, const char *opname,
                                        symaddr_agree_rec_t **all_p)
{
    symaddr_agree_rec_t mine, *all;
    symaddr_status_t st;

    *all_p = NULL;
    if (bytes > SYMADDR_AGREE_PAYLOAD) /* a caller's bug: refused where every rank makes it */
        return symaddr_error_set(&core->err, SYMADDR_ERR_INVALID_SIZE,
                                 "%s: an agreement of %zu bytes (at most %d)", opname, bytes,
                                 (int)SYMADDR_AGREE_PAYLOAD);
    memset(&mine, 0, sizeof(mine)); /* no byte of this process's memory goes out unset */
    mine.magic = SYMADDR_AGREE_MAGIC;
    mine.kind = (uint16_t)kind;
    mine.bytes = (uint16_t)bytes;
    mine.status = local;
    mine.broken = core->broken;
    snprintf(mine.call, sizeof(mine.call), "%s", opname);
    if (bytes)
        memcpy(mine.payload, payload, bytes);
    all = malloc(sizeof(*all) * (size_t)core->size);
    if (!all) /* cannot take part: the peers time out, as they would if this rank had died */
        return symaddr_core_break(core, symaddr_error_set(&core->err, SYMADDR_ERR_NO_MEMORY,
                                                          "%s: out of host memory", opname));
    /* a deadline of its own: a call that failed earlier still tells its peers so */
    st = symaddr_boot_allgather(&core->boot, &core->boot.world, &mine, all, sizeof(mine),
                                symaddr_bootstrap_agree_deadline(&core->boot));
    if (st != SYMADDR_OK) {
        free(all);
        symaddr_core_break(core, st);
        core->broken_told = true; /* the peers are gone or as stuck: none waits for a word */
        if (st == SYMADDR_ERR_TIMEOUT)
            return symaddr_error_set(&core->err, st,
                                     "%s: timed out after %u ms waiting for every rank to "
                                     "reach the call; a rank exited, is stopped or skipped the "
                                     "call. The context is broken: finalize it",
                                     opname, core->cfg.timeout_ms);
        return symaddr_error_set(&core->err, st,
                                 "%s: MPI failed while the ranks compared their results; "
                                 "the context is broken: finalize it",
                                 opname);
    }
    for (int r = 0; r < core->size; r++)
        if (!rec_sane(&all[r])) {
            /* not a record of this library's: nothing in it can be trusted, so the context
             * cannot go on with the peers either */
            free(all);
            symaddr_core_break(core, SYMADDR_ERR_PEER);
            core->broken_told = true;
            return symaddr_error_set(&core->err, SYMADDR_ERR_PEER,
                                     "%s: rank %d sent a malformed agreement record; are all "
                                     "ranks running the same symaddr? The context is broken: "
                                     "finalize it",
                                     opname, r);
        }
    for (int r = 0; r < core->size; r++)
        symaddr_core_break(core, (symaddr_status_t)all[r].broken);
    core->broken_told = core->broken != SYMADDR_OK; /* every rank saw the same flags */
    *all_p = all;
    for (int r = 1; r < core->size; r++) {
        if (all[r].kind == all[0].kind && strcmp(all[r].call, all[0].call) == 0)
            continue;
        /* a rank whose context broke left its exchanges posted: a later call of a rank that
         * came after meets one of those, and the break, not the calls, is what happened */
        if (core->broken != SYMADDR_OK)
            return symaddr_error_set(&core->err, SYMADDR_ERR_BROKEN,
                                     "%s: the context is broken (%s on some rank); rank %d "
                                     "left an earlier call's exchange behind: finalize it",
                                     opname, symaddr_strerror(core->broken), r);
        return symaddr_error_set(&core->err, SYMADDR_ERR_MISMATCH,
                                 "%s: rank %d is in %s (agreeing on %s) while rank 0 is in "
                                 "%s (agreeing on %s); every rank must make the same "
                                 "collective calls in the same order",
                                 opname, r, all[r].call, kind_name(all[r].kind), all[0].call,
                                 kind_name(all[0].kind));
    }
    return SYMADDR_OK;
}

symaddr_status_t symaddr_agree(symaddr_core_t *core, uint64_t op, uint64_t arg0, uint64_t arg1,
                               symaddr_status_t local, const char *opname)
{
    symaddr_call_t mine;
    symaddr_agree_rec_t *rec;
    symaddr_status_t st;

    memset(&mine, 0, sizeof(mine));
    mine.seq = ++core->seq;
    mine.op = op;
    mine.arg0 = arg0;
    mine.arg1 = arg1;
    if (local != SYMADDR_OK)
        snprintf(mine.why, sizeof(mine.why), "%.99s", core->err.text);
    st = symaddr_agree_exchange(core, SYMADDR_AGREE_OP, local, &mine, sizeof(mine), opname, &rec);
    if (st != SYMADDR_OK) {
        /* peers in another call counted none of this rank's: the next call pairs up again */
        if (st == SYMADDR_ERR_MISMATCH)
            core->seq--;
        free(rec);
        return st;
    }
    for (int r = 0; r < core->size && st == SYMADDR_OK; r++) {
        const symaddr_call_t *a = (const symaddr_call_t *)rec[r].payload;
        if (rec[r].status == SYMADDR_OK)
            continue;
        st = (symaddr_status_t)rec[r].status;
        if (r != core->rank || local == SYMADDR_OK)
            symaddr_error_set(&core->err, st, "%s failed on rank %d: %.*s", opname, r,
                              (int)strnlen(a->why, sizeof(a->why)), a->why);
    }
    for (int r = 0; r < core->size && st == SYMADDR_OK; r++) {
        const symaddr_call_t *a = (const symaddr_call_t *)rec[r].payload,
                             *b = (const symaddr_call_t *)rec[0].payload;
        if (a->seq != b->seq || a->op != b->op)
            st = symaddr_error_set(&core->err, SYMADDR_ERR_MISMATCH,
                                   "%s: rank %d is in collective call #%llu (%s) while rank 0 is "
                                   "in call #%llu (%s); every rank must make the same collective "
                                   "calls in the same order",
                                   opname, r, (unsigned long long)a->seq, op_name(a->op),
                                   (unsigned long long)b->seq, op_name(b->op));
        else if (a->arg0 != b->arg0 || a->arg1 != b->arg1)
            st = symaddr_error_set(&core->err, SYMADDR_ERR_MISMATCH,
                                   "%s: rank %d passed (%llu, %llu) but rank 0 passed (%llu, "
                                   "%llu); pass the same size and provider on every rank",
                                   opname, r, (unsigned long long)a->arg0,
                                   (unsigned long long)a->arg1, (unsigned long long)b->arg0,
                                   (unsigned long long)b->arg1);
    }
    free(rec);
    return st;
}

symaddr_status_t symaddr_agree_status(symaddr_core_t *core, symaddr_status_t local,
                                      const char *opname)
{
    static const uint64_t none[2] = {0, 0};
    return symaddr_agree_call(core, local, none, NULL, opname); /* every rank's alike */
}

symaddr_status_t symaddr_agree_call(symaddr_core_t *core, symaddr_status_t local,
                                    const uint64_t call[2], symaddr_call_text_t text,
                                    const char *opname)
{
    /* each rank's status and call, and whether its context broke (a failure only its node's
     * kernel saw): then every rank's does, so that all skip the same later exchanges */
    symaddr_agree_rec_t *rec;
    symaddr_status_t st = symaddr_agree_exchange(core, SYMADDR_AGREE_STATUS, local, call,
                                                 2 * sizeof(uint64_t), opname, &rec);
    if (st != SYMADDR_OK) {
        free(rec);
        return st;
    }
    for (int r = 0; r < core->size; r++) {
        if (rec[r].status == SYMADDR_OK)
            continue;
        st = (symaddr_status_t)rec[r].status;
        if (r != core->rank && local == SYMADDR_OK)
            symaddr_error_set(&core->err, st, "%s failed on rank %d (%s); see that rank's message",
                              opname, r, symaddr_strerror(st));
        break;
    }
    for (int r = 1; r < core->size && st == SYMADDR_OK; r++) {
        const uint64_t *a = rec[r].payload, *b = rec[0].payload;
        char mine_text[96] = "", first_text[96] = "";
        if (a[0] == b[0] && a[1] == b[1])
            continue;
        if (text) {
            text(a, mine_text, sizeof(mine_text));
            text(b, first_text, sizeof(first_text));
        }
        st = symaddr_error_set(&core->err, SYMADDR_ERR_MISMATCH,
                               "%s: rank %d passed (%s), rank 0 (%s): ranks passed another "
                               "collective, count, dtype, op or root; pass the same on every rank",
                               opname, r, mine_text, first_text);
    }
    free(rec);
    return st;
}
