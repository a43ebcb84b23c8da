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

/* The exchange of an agreement, with a deadline of its own: a call that failed earlier still
 * tells its peers so. */
static symaddr_status_t exchange(symaddr_core_t *core, const void *mine, void *all, size_t bytes,
                                 const char *opname)
{
    symaddr_status_t st = symaddr_mpi_allgather(&core->boot, core->comm, mine, all, bytes,
                                                symaddr_bootstrap_agree_deadline(&core->boot));
    if (st == SYMADDR_OK)
        return SYMADDR_OK;
    symaddr_core_break(core, st);
    core->broken_told = true; /* the peers are gone or as stuck: none waits for a word of it */
    if (st == SYMADDR_ERR_TIMEOUT)
        return symaddr_error_set(&core->err, st,
                                 "%s: timed out after %u ms waiting for every rank to "
                                 "reach the call; a rank exited, is stopped or skipped the call. "
                                 "The context is broken: finalize it",
                                 opname, core->cfg.timeout_ms);
    return symaddr_error_set(&core->err, st,
                             "%s: MPI failed while the ranks compared their results; "
                             "the context is broken: finalize it",
                             opname);
}

symaddr_status_t symaddr_agree(symaddr_core_t *core, uint64_t op, uint64_t arg0, uint64_t arg1,
                               symaddr_status_t local, const char *opname)
{
    symaddr_call_t mine, *all;
    symaddr_status_t st = SYMADDR_OK;

    memset(&mine, 0, sizeof(mine));
    mine.seq = ++core->seq;
    mine.op = op;
    mine.arg0 = arg0;
    mine.arg1 = arg1;
    mine.status = local;
    mine.broken = core->broken;
    if (local != SYMADDR_OK)
        snprintf(mine.why, sizeof(mine.why), "%.99s", core->err.text);
    all = malloc(sizeof(*all) * (size_t)core->size);
    if (!all) /* cannot take part: the peers time out, as they would if this rank had died */
        return symaddr_core_break(core, symaddr_error_set(&core->err, SYMADDR_ERR_NO_MEMORY,
                                                          "%s: out of host memory", opname));
    if ((st = exchange(core, &mine, all, sizeof(mine), opname)) != SYMADDR_OK) {
        free(all);
        return st;
    }
    for (int r = 0; r < core->size; r++)
        symaddr_core_break(core, (symaddr_status_t)all[r].broken);
    core->broken_told = core->broken != SYMADDR_OK; /* every rank saw the same flags */
    for (int r = 0; r < core->size && st == SYMADDR_OK; r++) {
        if (all[r].status == SYMADDR_OK)
            continue;
        st = (symaddr_status_t)all[r].status;
        if (r != core->rank || local == SYMADDR_OK)
            symaddr_error_set(&core->err, st, "%s failed on rank %d: %.100s", opname, r,
                              all[r].why);
    }
    for (int r = 0; r < core->size && st == SYMADDR_OK; r++) {
        const symaddr_call_t *a = &all[r], *b = &all[0];
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
    free(all);
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
    /* each rank's status, and whether its context broke (a failure only its node's kernel
     * saw): then every rank's does, so that all skip the same later exchanges */
    struct {
        int32_t status, broken;
        uint64_t call[2];
    } mine = {local, core->broken, {call[0], call[1]}},
      *all = malloc(sizeof(mine) * (size_t)core->size);
    symaddr_status_t st = SYMADDR_OK;

    if (!all)
        return symaddr_core_break(core, symaddr_error_set(&core->err, SYMADDR_ERR_NO_MEMORY,
                                                          "%s: out of host memory", opname));
    if ((st = exchange(core, &mine, all, sizeof(mine), opname)) != SYMADDR_OK) {
        free(all);
        return st;
    }
    for (int r = 0; r < core->size; r++)
        symaddr_core_break(core, (symaddr_status_t)all[r].broken);
    core->broken_told = core->broken != SYMADDR_OK; /* every rank saw the same flags */
    for (int r = 0; r < core->size; r++) {
        if (all[r].status == SYMADDR_OK)
            continue;
        st = (symaddr_status_t)all[r].status;
        if (r != core->rank && local == SYMADDR_OK)
            symaddr_error_set(&core->err, st, "%s failed on rank %d (%s); see that rank's message",
                              opname, r, symaddr_strerror(st));
        break;
    }
    for (int r = 1; r < core->size && st == SYMADDR_OK; r++) {
        const uint64_t *a = all[r].call, *b = all[0].call;
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
    free(all);
    return st;
}
