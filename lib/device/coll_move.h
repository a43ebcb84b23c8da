/* SPDX-License-Identifier: MIT */
/* The kernel of the collectives that only move data: allgather, broadcast, alltoall and the
 * barrier. Part of collectives.hip. */
#ifndef SYMADDR_LIB_DEVICE_COLL_MOVE_H
#define SYMADDR_LIB_DEVICE_COLL_MOVE_H

/* Data movement only: allgather (stores), broadcast (loads from the root), alltoall (stores),
 * barrier. bytes is per rank. */
__global__ void k_move(symaddr_coll_desc_t d, size_t bytes)
{
    uint64_t e = coll_epoch(d), deadline = coll_deadline(d);
    const char *send = (const char *)d.send;
    char *recv = (char *)d.recv;
    size_t t = symaddr_grid_thread(), nt = symaddr_grid_threads();
    if (coll_failed(d) || !coll_barrier(d, e, 1, deadline))
        goto finish;
    switch (d.kind) {
    case SYMADDR_COLL_ALLGATHER:
        for (int k = 0; k < d.node_size; k++) {
            int q = (d.node_rank + k) % d.node_size;
            void *dst = symaddr_translate(recv + bytes * (size_t)d.rank, d.node_ranks[q], d.recv_pb,
                                          d.rank);
            if (dst != (const void *)send)
                symaddr_copy_bytes_(dst, send, bytes, t, nt);
        }
        break;
    case SYMADDR_COLL_BROADCAST: {
        const void *src = symaddr_translate(send, d.node_ranks[d.root], d.send_pb, d.rank);
        if (src != (const void *)recv)
            symaddr_copy_bytes_(recv, src, bytes, t, nt);
        break;
    }
    case SYMADDR_COLL_ALLTOALL:
        for (int k = 0; k < d.node_size; k++) {
            int q = (d.node_rank + k) % d.node_size;
            symaddr_copy_bytes_(symaddr_translate(recv + bytes * (size_t)d.rank, d.node_ranks[q],
                                                  d.recv_pb, d.rank),
                                send + bytes * (size_t)d.node_ranks[q], bytes, t, nt);
        }
        break;
    default: break;
    }
    if (d.kind != SYMADDR_COLL_BARRIER)
        coll_barrier(d, e, 2, deadline);
finish:
    coll_finish(d, e);
}

#endif
