/* SPDX-License-Identifier: MIT */
/* The one list of allreduce algorithms. It includes nothing: config.c reads the names from it,
 * lib/coll/algo.c the rest. */
#ifndef SYMADDR_LIB_COLL_ALGOS_H
#define SYMADDR_LIB_COLL_ALGOS_H

/* X(E, name, dtypes, largest, work, fallback), one row per SYMADDR_ALLREDUCE_<E> but auto:
 * - name: as SYMADDR_ALLREDUCE, the INFO log, the bench and Python spell it;
 * - its kernel kind is SYMADDR_COLL_ALLREDUCE_<E>;
 * - dtypes: ANY, or FLOATS (f32, f16, bf16: Lamport marks a word not yet arrived by a NaN);
 * - largest: the most bytes a call may move (STAGE: one-shot's staging; INBOX: an LL inbox;
 *   SLOT: a node peer's Lamport slot; NONE);
 * - work: the bytes of work that size the grid (BYTES; SHARE: a node rank's share; X2: one
 *   thread per 16 bytes of payload and flag; X4: per 8);
 * - fallback: the algorithm that takes a message this one cannot. */
#define SYMADDR_ALLREDUCE_ALGO_LIST(X)                                                             \
    X(ONESHOT, "oneshot", ANY, STAGE, BYTES, TWOSHOT)                                              \
    X(TWOSHOT, "twoshot", ANY, NONE, SHARE, TWOSHOT)                                               \
    X(LL, "ll", ANY, INBOX, X4, ONESHOT)                                                           \
    X(LAMPORT, "lamport", FLOATS, SLOT, X2, LL)                                                    \
    X(TWOSHOT_GET, "twoshot-get", ANY, NONE, SHARE, TWOSHOT)                                       \
    X(TWOSHOT_COPY, "twoshot-copy", ANY, NONE, SHARE, TWOSHOT)

#define SYMADDR_ALLREDUCE_ALGO_ONE_(E, name, dtypes, largest, work, fallback) +1
/* auto and the rows */
#define SYMADDR_ALLREDUCE_ALGO_COUNT_ (1 SYMADDR_ALLREDUCE_ALGO_LIST(SYMADDR_ALLREDUCE_ALGO_ONE_))

#endif
