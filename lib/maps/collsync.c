/* SPDX-License-Identifier: MIT */
/* The collectives' sync area, set up with the context: epochs, status, barrier flags, staging,
 * LL inboxes and, across nodes, the reduce-scatter scratch; the grid bound; and the status the
 * kernels record. The calls themselves are in the other files of lib/coll/. */
#include "maps/maps.h"
#include "symaddr/team.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(SYMADDR_CONFIG_LL_MAX_BYTES == SYMADDR_COLL_LL_BYTES,
               "config.h and the LL inboxes disagree on the largest LL size");
_Static_assert(SYMADDR_CONFIG_LAMPORT_MAX_BYTES == SYMADDR_COLL_LAMPORT_MAX,
               "config.h and the Lamport buffers disagree on the largest Lamport size");

#define SCRATCH_BYTES ((size_t)1 << 20) /* reduce-scatter between nodes, per chunk */

/* The grid of every collective kernel is bounded so that the blocks of all the ranks sharing
 * a GPU are resident at once: a block that waits for a peer's block never holds the SM that
 * block needs. Ranks of other node groups on the same GPU (simulated nodes) count too, since
 * their kernels run at the same time. The bound is agreed on the node, since block b waits for
 * the peers' block b. One context's collectives at a time per GPU keep within it. */
static symaddr_status_t grid_bound(symaddr_context_t *ctx, unsigned *blocks_p)
{
    int sharing = ctx->gpu_sharers;
    unsigned resident = ctx->be.ops->coll->resident_blocks(ctx->be.device);
    unsigned mine = resident == UINT_MAX ? SYMADDR_COLL_MAX_BLOCKS
                                         : resident / (unsigned)(sharing > 0 ? sharing : 1);
    if (mine > SYMADDR_COLL_MAX_BLOCKS)
        mine = SYMADDR_COLL_MAX_BLOCKS;
    if (mine == 0)
        mine = 1;
    int in = (int)mine, out = 0;
    symaddr_status_t st =
        symaddr_boot_allreduce_int(&ctx->core.boot, &ctx->core.boot.node, &in, &out, 1, 0,
                                   symaddr_bootstrap_deadline(&ctx->core.boot, 0));
    if (st == SYMADDR_OK)
        *blocks_p = (unsigned)out;
    return st;
}

/* One node peer's slot in a Lamport buffer: the buffer's bytes shared by the node, whole
 * 16-byte chunks, at most what one call may move, and the chunk of the call's identity. */
static size_t lamport_slot_bytes(int node_size)
{
    size_t slot = SYMADDR_COLL_LAMPORT_AREA / (size_t)node_size / 16 * 16;
    return (slot < SYMADDR_COLL_LAMPORT_MAX ? slot : SYMADDR_COLL_LAMPORT_MAX) + 16;
}

/* A sync area of bytes with the layout of c (every Lamport word empty), allocated and filled;
 * the caller opens it to the peers. */
static symaddr_status_t area_alloc(symaddr_context_t *ctx, symaddr_backing_t *a, size_t bytes)
{
    const symaddr_coll_t *c = &ctx->coll;
    char *zeros = calloc(1, bytes);
    if (zeros) /* every Lamport word starts empty */
        memset(zeros + c->lamport_offset, 0xff, c->scratch_offset - c->lamport_offset);
    symaddr_status_t st = zeros ? SYMADDR_OK : SYMADDR_ERR_NO_MEMORY;
    if (st == SYMADDR_OK)
        st = ctx->be.ops->mem_alloc(&ctx->be, bytes, SYMADDR_MEM_COHERENT, &a->root);
    if (st == SYMADDR_OK)
        st = ctx->be.ops->memcpy(&ctx->be, a->root, zeros, bytes);
    free(zeros);
    a->root_bytes = bytes;
    a->owned = true;
    a->caps = ctx->be.ops->caps[SYMADDR_MEM_COHERENT];
    return st;
}

static void area_free(symaddr_context_t *ctx, symaddr_backing_t *a)
{
    if (a->dev_table)
        symaddr_backing_release(ctx, a);
    else if (a->root)
        ctx->be.ops->mem_free(&ctx->be, a->root);
    memset(a, 0, sizeof(*a));
}

symaddr_status_t symaddr_coll_init(symaddr_context_t *ctx)
{
    symaddr_coll_t *c = &ctx->coll;
    const symaddr_bootstrap_t *b = &ctx->core.boot;
    c->args_offset =
        sizeof(uint64_t) * (SYMADDR_SYNC_WORDS + (size_t)SYMADDR_COLL_FLAG_ROWS * b->node_size);
    c->ident_offset =
        c->args_offset + sizeof(uint64_t) * SYMADDR_COLL_ARGS_WORDS * SYMADDR_COLL_MAX_BLOCKS;
    c->stage_offset = (c->ident_offset + SYMADDR_COLL_IDENT_BYTES(b->node_size) + 255) / 256 * 256;
    c->ll_offset = c->stage_offset + 2 * SYMADDR_COLL_STAGE_BYTES;
    c->lamport_offset = c->ll_offset + 2 * (size_t)b->node_size * SYMADDR_COLL_LL_INBOX;
    c->lamport_slot = lamport_slot_bytes(b->node_size);
    c->scratch_offset = c->lamport_offset + 3 * (size_t)b->node_size * c->lamport_slot;
    c->scratch_bytes = symaddr_multi_node(ctx) ? SCRATCH_BYTES : 0;

    symaddr_status_t st = grid_bound(ctx, &c->max_blocks);
    if (st == SYMADDR_OK)
        st = area_alloc(ctx, &c->sync, c->scratch_offset + c->scratch_bytes);
    if (st == SYMADDR_OK)
        st = ctx->be.ops->local_alloc(&ctx->be, sizeof(int) * (size_t)b->node_size,
                                      (void **)&c->node_ranks);
    if (st == SYMADDR_OK)
        st = ctx->be.ops->memcpy(&ctx->be, c->node_ranks, b->node_to_rank,
                                 sizeof(int) * (size_t)b->node_size);
    if (st != SYMADDR_OK)
        symaddr_set_error(ctx, st, "symaddr_init: cannot set up the collectives' sync area: %s",
                          symaddr_runtime_says(ctx));
    st = symaddr_agree_status(&ctx->core, st, "symaddr_init (collectives)");
    if (st == SYMADDR_OK)
        st = symaddr_backing_open(ctx, &c->sync, 0);
    if (st != SYMADDR_OK) {
        symaddr_coll_fini(ctx);
        return st;
    }
    c->ready = true;
    return SYMADDR_OK;
}

/* The team area is a second sync area, set up by the first symaddr_team_get rather than by
 * init: most programs never run a team kernel, and init's time and memory stay theirs. */
symaddr_status_t symaddr_coll_team_open(symaddr_context_t *ctx)
{
    symaddr_coll_t *c = &ctx->coll;
    if (c->team.dev_table)
        return SYMADDR_OK;
    symaddr_status_t st = area_alloc(ctx, &c->team, c->scratch_offset);
    if (st != SYMADDR_OK)
        symaddr_set_error(ctx, st,
                          "symaddr_team_get: cannot set up the sync area of team kernels: %s",
                          symaddr_runtime_says(ctx));
    st = symaddr_agree_status(&ctx->core, st, "symaddr_team_get");
    if (st == SYMADDR_OK)
        st = symaddr_backing_open(ctx, &c->team, 0);
    if (st != SYMADDR_OK)
        area_free(ctx, &c->team);
    return st;
}

void symaddr_coll_close_peers(symaddr_context_t *ctx)
{
    if (ctx->coll.ready)
        symaddr_backing_close_peers(ctx, &ctx->coll.sync);
    if (ctx->coll.team.dev_table)
        symaddr_backing_close_peers(ctx, &ctx->coll.team);
}

void symaddr_coll_fini(symaddr_context_t *ctx)
{
    symaddr_coll_t *c = &ctx->coll;
    area_free(ctx, &c->team);
    area_free(ctx, &c->sync);
    if (c->node_ranks)
        ctx->be.ops->local_free(&ctx->be, c->node_ranks);
    memset(c, 0, sizeof(*c));
}

/* The first failure recorded in area a, as the kernels wrote it (0: none). */
static uint64_t area_status(symaddr_context_t *ctx, const symaddr_backing_t *a)
{
    uint64_t word = 0;
    if (a->root && ctx->be.ops->memcpy(&ctx->be, &word, (uint64_t *)a->root + SYMADDR_SYNC_STATUS,
                                       sizeof(word)) != SYMADDR_OK)
        word = 0;
    return word;
}

symaddr_status_t symaddr_coll_status(symaddr_context_t *ctx)
{
    if (!ctx->coll.ready)
        return SYMADDR_OK;
    /* a failed team kernel breaks the context as a failed collective does */
    uint64_t word = area_status(ctx, &ctx->coll.sync);
    if (word == 0)
        word = area_status(ctx, &ctx->coll.team);
    if (word == 0)
        return SYMADDR_OK;
    symaddr_status_t st = (symaddr_status_t) - (int64_t)word;
    symaddr_core_break(&ctx->core, st);
    if (st == SYMADDR_ERR_MISMATCH)
        return symaddr_set_error(ctx, st,
                                 "the ranks of the node disagreed on a collective call: its "
                                 "kind, root, count, dtype or op, or a buffer peers reach (a "
                                 "rooted collective's: the root's recv of gather, the send of "
                                 "scatter, broadcast and reduce, which any rank may pass at any "
                                 "offset but in the same allocation or registration; any other "
                                 "collective's send and recv, which every rank passes in the "
                                 "same allocation at the same offset; SYMADDR_VALIDATE=1 names "
                                 "the argument). A rooted collective wrote nothing outside the "
                                 "root's recv, which may hold the blocks of ranks that matched "
                                 "it. The context is broken on every rank: finalize it");
    if (st == SYMADDR_ERR_TIMEOUT)
        return symaddr_set_error(ctx, st,
                                 "a collective waited more than %u ms for a rank of its node: a "
                                 "peer exited, is stopped, or ranks called different "
                                 "collectives. The context is broken on every rank: finalize it",
                                 ctx->core.cfg.timeout_ms);
    return symaddr_set_error(ctx, st,
                             "a rank of the node gave up on a collective after "
                             "waiting %u ms for a peer (one exited, is stopped, or ranks called "
                             "different collectives): the context is broken on every rank, "
                             "finalize it",
                             ctx->core.cfg.timeout_ms);
}

symaddr_status_t symaddr_coll_set_epoch(symaddr_context_t *ctx, uint64_t next)
{
    const symaddr_coll_t *c = &ctx->coll;
    size_t flags = (size_t)SYMADDR_COLL_FLAG_ROWS * (size_t)ctx->core.boot.node_size;
    size_t inboxes = 2 * (size_t)ctx->core.boot.node_size * SYMADDR_COLL_LL_INBOX;
    size_t lamport = 3 * (size_t)ctx->core.boot.node_size * c->lamport_slot;
    uint64_t *w = malloc(sizeof(uint64_t) * (SYMADDR_SYNC_WORDS + flags));
    char *zeros = calloc(1, inboxes + lamport);
    symaddr_status_t st =
        w && zeros ? ctx->be.ops->stream_sync(&ctx->be, NULL) : SYMADDR_ERR_NO_MEMORY;
    if (st == SYMADDR_OK)
        st = symaddr_boot_barrier(&ctx->core.boot, &ctx->core.boot.world,
                                  symaddr_bootstrap_deadline(&ctx->core.boot, 1));
    if (st == SYMADDR_OK) {
        memset(w, 0, sizeof(uint64_t) * SYMADDR_SYNC_WORDS);
        w[SYMADDR_SYNC_EPOCH] = next - 1;
        /* every phase of next - 1 passed: its phase 3 */
        w[SYMADDR_SYNC_RELEASE] = symaddr_team_flag_value_(next - 1, 3);
        for (size_t i = 0; i < flags; i++)
            w[SYMADDR_SYNC_WORDS + i] = w[SYMADDR_SYNC_RELEASE];
        st = ctx->be.ops->memcpy(&ctx->be, c->sync.root, w,
                                 sizeof(uint64_t) * (SYMADDR_SYNC_WORDS + flags));
    }
    if (st == SYMADDR_OK) { /* the Lamport buffers follow the LL inboxes */
        memset(zeros + inboxes, 0xff, lamport);
        st = ctx->be.ops->memcpy(&ctx->be, (char *)c->sync.root + c->ll_offset, zeros,
                                 inboxes + lamport);
    }
    if (st == SYMADDR_OK)
        st = symaddr_boot_barrier(&ctx->core.boot, &ctx->core.boot.world,
                                  symaddr_bootstrap_deadline(&ctx->core.boot, 1));
    free(w);
    free(zeros);
    return st;
}
