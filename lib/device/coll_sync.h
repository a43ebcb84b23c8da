/* SPDX-License-Identifier: MIT */
/* Synchronisation of the collective kernels: epochs, one deadline per call, failures that
 * break every node peer's context, the barrier with flags a waiter can poison, and the end of a
 * call. Part of collectives.hip. */
#ifndef SYMADDR_LIB_DEVICE_COLL_SYNC_H
#define SYMADDR_LIB_DEVICE_COLL_SYNC_H

/* ---- synchronisation ---------------------------------------------------------------------- */

/* A flag a waiter gave up on: it tells the late signaller that its peer left without it. */
#define COLL_POISON (~(uint64_t)0)

/* The call's number. Every kernel reads it first: under a programmatic dependent launch, this
 * is where it lets the next kernel be scheduled and waits for the previous one to end. */
SYMADDR_DEVFN uint64_t coll_epoch(const symaddr_coll_desc_t &d)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    return *(volatile uint64_t *)&d.sync[SYMADDR_SYNC_EPOCH] + 1;
}

/* One deadline for every wait of the call, from the kernel's start. */
SYMADDR_DEVFN uint64_t coll_deadline(const symaddr_coll_desc_t &d)
{
    return symaddr_clock_ns() + d.timeout_ns;
}

SYMADDR_DEVFN int coll_failed(const symaddr_coll_desc_t &d)
{
    return *(volatile uint64_t *)&d.sync[SYMADDR_SYNC_STATUS] != 0;
}

/* This rank failed the collective with status st: record it (the first failure sticks, and
 * the host reads it), and break the context of every node peer too, so that none of them
 * returns OK from this collective or any later one. */
SYMADDR_DEVFN void coll_fail(const symaddr_coll_desc_t &d, symaddr_status_t st)
{
    symaddr_prim_cas_u64(&d.sync[SYMADDR_SYNC_STATUS], 0, (uint64_t) - (int64_t)st, 1);
    for (int q = 0; q < d.node_size; q++) {
        if (q == d.node_rank)
            continue;
        uint64_t *peer = (uint64_t *)symaddr_translate(&d.sync[SYMADDR_SYNC_STATUS],
                                                       d.node_ranks[q], d.sync_pb, d.rank);
        if (peer)
            symaddr_prim_cas_u64(peer, 0, (uint64_t) - (int64_t)SYMADDR_ERR_BROKEN, 1);
    }
}

/* Whether flag value v reached want. Values only grow, by at most a few steps past what a
 * waiter wants, so the difference decides even across a wrap of 64 bits. */
SYMADDR_DEVFN int coll_reached(uint64_t v, uint64_t want)
{
    return v != COLL_POISON && (int64_t)(v - want) >= 0;
}

/* Wait for this rank's flag to reach want; 0 on failure. Giving up is settled with the
 * signaller on the flag itself: the waiter swaps in COLL_POISON only if the signal has not
 * landed, and the signaller sees the poison when it arrives. So a waiter that timed out and
 * the late rank it waited for both fail. */
SYMADDR_DEVFN int coll_wait_flag(const symaddr_coll_desc_t &d, uint64_t *flag, uint64_t want,
                                 uint64_t deadline)
{
    for (unsigned spin = 0;; spin++) {
        uint64_t v = *(volatile uint64_t *)flag;
        if (coll_reached(v, want)) {
            symaddr_fence();
            return 1;
        }
        if ((spin & 63) == 63) {
            if (v == COLL_POISON || coll_failed(d))
                return 0; /* a peer failed and told us */
            if (symaddr_clock_ns() > deadline) {
                for (;;) {
                    uint64_t seen = symaddr_prim_cas_u64(flag, v, COLL_POISON, 1);
                    if (seen == v) {
                        coll_fail(d, SYMADDR_ERR_TIMEOUT);
                        return 0;
                    }
                    if (coll_reached(seen, want)) {
                        symaddr_fence();
                        return 1;
                    }
                    v = seen;
                }
            }
            symaddr_yield();
        }
    }
}

/* All node peers' blocks of this index reach the phase; 0 after a failure (recorded). Thread
 * q of the block signals and waits for node peer q, so the peers are served in parallel. */
SYMADDR_DEVFN int coll_barrier(const symaddr_coll_desc_t &d, uint64_t epoch, int phase,
                               uint64_t deadline)
{
    int ok = 1;
    uint64_t value = epoch * 4 + (uint64_t)phase;
    uint64_t *flags = d.sync + SYMADDR_SYNC_WORDS + (size_t)symaddr_block_index() * d.node_size;
    symaddr_block_sync();
    for (int q = (int)symaddr_block_thread(); q < d.node_size; q += (int)symaddr_block_threads()) {
        if (q == d.node_rank)
            continue;
        uint64_t *r =
            (uint64_t *)symaddr_translate(&flags[d.node_rank], d.node_ranks[q], d.sync_pb, d.rank);
        symaddr_fence();
        if (symaddr_prim_swap_u64(r, value, 1) == COLL_POISON) {
            coll_fail(d, SYMADDR_ERR_BROKEN); /* that peer gave up on this rank */
            ok = 0;
        }
    }
    for (int q = (int)symaddr_block_thread(); q < d.node_size && ok;
         q += (int)symaddr_block_threads())
        if (q != d.node_rank && !coll_wait_flag(d, &flags[q], value, deadline))
            ok = 0;
    return symaddr_block_all(ok);
}

SYMADDR_DEVFN void coll_fence_device(void)
{
#if SYMADDR_ON_GPU
    __threadfence();
#else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/* The end of a call: the last block to get here publishes the epoch (and, for a Lamport call,
 * which buffer the next one takes: every block read it at its start). */
SYMADDR_DEVFN void coll_finish(const symaddr_coll_desc_t &d, uint64_t epoch,
                               uint64_t lamport_next = ~(uint64_t)0)
{
    symaddr_block_sync();
    if (symaddr_block_thread() == 0) {
        /* Only this rank's next kernels read these words, after this one ends: the blocks need
         * ordering among themselves (device scope), not towards peers. */
        coll_fence_device();
        uint64_t done =
            symaddr_grid_blocks() == 1 ? 0 : symaddr_prim_add_u64(&d.sync[SYMADDR_SYNC_DONE], 1, 0);
        if (done == symaddr_grid_blocks() - 1) {
            d.sync[SYMADDR_SYNC_DONE] = 0;
            if (lamport_next != ~(uint64_t)0)
                d.sync[SYMADDR_SYNC_LAMPORT] = lamport_next;
            coll_fence_device();
            *(volatile uint64_t *)&d.sync[SYMADDR_SYNC_EPOCH] = epoch;
        }
    }
}

#endif
