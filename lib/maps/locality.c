/* SPDX-License-Identifier: MIT */
/* The locality map: peer classes from the node groups and device identities, reachability
 * from the runtime. Collectives and RMA may consult it; translation never does. */
#include "maps/maps.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct loc_rec {
    int32_t device;
    char pci[28];
    char host[64];
} loc_rec_t;

symaddr_status_t symaddr_locality_init(symaddr_context_t *ctx)
{
    symaddr_locality_t *l = &ctx->loc;
    const symaddr_bootstrap_t *b = &ctx->core.boot;
    size_t n = (size_t)ctx->core.size;
    loc_rec_t mine, *all = calloc(n, sizeof(*all));
    uint8_t *cls = calloc(3 * n, 1);
    int *dev = calloc(n, sizeof(int));
    bool gpu = !ctx->be.ops->host_memory;

    memset(&mine, 0, sizeof(mine));
    mine.device = gpu ? ctx->be.device : -1;
    ctx->be.ops->device_id(&ctx->be, mine.pci, sizeof(mine.pci));
    gethostname(mine.host, sizeof(mine.host) - 1);
    symaddr_status_t st = all && cls && dev ? SYMADDR_OK : SYMADDR_ERR_NO_MEMORY;
    if (st == SYMADDR_OK)
        st = symaddr_boot_allgather(&ctx->core.boot, &ctx->core.boot.world, &mine, all,
                                    sizeof(mine), symaddr_bootstrap_deadline(&ctx->core.boot, 0));
    if (st != SYMADDR_OK) {
        free(all);
        free(cls);
        free(dev);
        return symaddr_set_error(ctx, st, "symaddr_init: cannot build the locality map");
    }
    uint8_t *direct = cls + n, *atomics = cls + 2 * n;
    /* Ranks whose kernels share this rank's processor, whatever node group they are in: the
     * same GPU of the same host (every rank of the host on the cpu backend). */
    ctx->gpu_sharers = 0;
    for (size_t r = 0; r < n; r++) {
        dev[r] = all[r].device;
        cls[r] = SYMADDR_PEER_REMOTE;
        ctx->gpu_sharers += !strcmp(all[r].host, mine.host) && !strcmp(all[r].pci, mine.pci);
    }
    for (int q = 0; q < b->node_size; q++) {
        int r = b->node_to_rank[q];
        bool same_gpu = gpu && strcmp(all[r].pci, mine.pci) == 0;
        cls[r] = r == ctx->core.rank ? SYMADDR_PEER_SELF
                 : same_gpu          ? SYMADDR_PEER_SAME_GPU
                                     : SYMADDR_PEER_SAME_NODE;
        direct[r] = (uint8_t)(same_gpu || r == ctx->core.rank ||
                              ctx->be.ops->can_access_peer(&ctx->be, mine.device, all[r].device));
        atomics[r] =
            direct[r] && (ctx->be.ops->caps[SYMADDR_MEM_BULK] & SYMADDR_CAP_SYSTEM_ATOMICS);
    }
    ctx->node_gpu_shared = false;
    for (int q = 0; q < b->node_size; q++)
        for (int p = 0; p < q; p++) {
            const loc_rec_t *x = &all[b->node_to_rank[p]], *y = &all[b->node_to_rank[q]];
            ctx->node_gpu_shared |= gpu && !strcmp(x->host, y->host) && !strcmp(x->pci, y->pci);
        }
    int stride = b->node_size > 1 ? b->node_to_rank[1] - b->node_to_rank[0] : 1;
    for (int q = 2; q < b->node_size; q++)
        if (b->node_to_rank[q] - b->node_to_rank[q - 1] != stride)
            stride = 0;
    free(all);
    l->world_size = ctx->core.size;
    l->local_rank = ctx->core.rank;
    l->node_size = b->node_size;
    l->node_rank = b->node_rank;
    l->node_ranks = b->node_to_rank;
    l->rank_stride = stride;
    l->peer_class = cls;
    l->direct_access = direct;
    l->system_atomics = atomics;
    l->device = dev;
    return SYMADDR_OK;
}

void symaddr_locality_fini(symaddr_context_t *ctx)
{
    free((void *)ctx->loc.peer_class);
    free((void *)ctx->loc.device);
    memset(&ctx->loc, 0, sizeof(ctx->loc));
}

symaddr_status_t symaddr_locality_get(symaddr_context_t *ctx, const symaddr_locality_t **loc_p)
{
    if (!ctx || !loc_p)
        return SYMADDR_ERR_INVALID_ARG;
    *loc_p = &ctx->loc;
    return SYMADDR_OK;
}
