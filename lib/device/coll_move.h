/* SPDX-License-Identifier: MIT */
/* The kernel of the collectives that only move data: allgather, broadcast, alltoall, gather,
 * scatter and the barrier. Part of collectives.hip. */
#ifndef SYMADDR_LIB_DEVICE_COLL_MOVE_H
#define SYMADDR_LIB_DEVICE_COLL_MOVE_H

/* Data movement only: allgather (stores), broadcast (loads from the root), alltoall (stores),
 * gather (stores into the root), scatter (loads from the root), barrier. bytes is per rank. The
 * first barrier makes every send ready, the second keeps each send until its readers are
 * done. */
__global__ void k_move(symaddr_coll_desc_t d, size_t bytes)
{
    int broken;
    symaddr_team_call_t call = coll_begin(d, &broken);
    const char *send = (const char *)d.send;
    char *recv = (char *)d.recv;
    size_t t = symaddr_grid_thread(), nt = symaddr_grid_threads();
    if (d.kind == SYMADDR_COLL_GATHER)
        coll_publish(d, call, recv, d.recv_pb, d.recv_table, d.recv_shift);
    else if (d.kind == SYMADDR_COLL_BROADCAST || d.kind == SYMADDR_COLL_SCATTER)
        coll_publish(d, call, send, d.send_pb, d.send_table, d.send_shift);
    if (!coll_barrier_first(d, call, broken))
        goto finish;
    switch (d.kind) {
    case SYMADDR_COLL_ALLGATHER:
        symaddr_team_allgather_bytes(&d.team, send, recv + bytes * (size_t)d.team.rank, d.recv_pb,
                                     bytes);
        break;
    case SYMADDR_COLL_BROADCAST: { /* loads from the root's send, where it passed it */
        const char *from = coll_published(d, call, d.root, d.send_pb, d.send_table, d.send_shift);
        if (from && from != recv)
            symaddr_copy_bytes_(recv, from, bytes, t, nt);
        break;
    }
    case SYMADDR_COLL_ALLTOALL:
        for (int k = 0; k < d.team.node_size; k++) {
            int q = (d.team.node_rank + k) % d.team.node_size;
            symaddr_copy_bytes_(
                symaddr_team_peer(&d.team, recv + bytes * (size_t)d.team.rank, d.recv_pb, q),
                send + bytes * (size_t)d.team.node_ranks[q], bytes, t, nt);
        }
        break;
    case SYMADDR_COLL_GATHER: { /* stores into the root's recv, where it passed it */
        char *to = coll_published(d, call, d.root, d.recv_pb, d.recv_table, d.recv_shift);
        if (to && to + bytes * (size_t)d.team.rank != send) /* the root's own block in place */
            symaddr_copy_bytes_(to + bytes * (size_t)d.team.rank, send, bytes, t, nt);
        break;
    }
    case SYMADDR_COLL_SCATTER: { /* loads from the root's send, where it passed it */
        const char *from = coll_published(d, call, d.root, d.send_pb, d.send_table, d.send_shift);
        if (from && from + bytes * (size_t)d.team.rank != recv)
            symaddr_copy_bytes_(recv, from + bytes * (size_t)d.team.rank, bytes, t, nt);
        break;
    }
    default: break;
    }
    if (d.kind != SYMADDR_COLL_BARRIER)
        symaddr_team_barrier_block(&d.team, &call, 2);
finish:
    symaddr_team_end(&d.team, &call, 0);
}

/* The kinds k_move serves, for collectives.hip's launch: one with its case above. */
#define MOVE_KINDS(X) X(BARRIER) X(ALLGATHER) X(BROADCAST) X(ALLTOALL) X(GATHER) X(SCATTER)

#endif
