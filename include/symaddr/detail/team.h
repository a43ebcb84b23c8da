/* SPDX-License-Identifier: MIT */
/* What symaddr/team.h's blocks are made of: the halves of symaddr_team_begin, the barrier
 * flags' arithmetic, the 8- and 16-byte accesses and the Lamport slots. symaddr's own
 * collectives use them; a user's kernel calls team.h's documented blocks instead. Included by
 * team.h only, after symaddr_team_call_t. */
#ifndef SYMADDR_DETAIL_TEAM_H
#define SYMADDR_DETAIL_TEAM_H

#ifndef SYMADDR_TEAM_H
#error "include symaddr/team.h, not symaddr/detail/team.h"
#endif

/* team.h's blocks that these use, defined there */
SYMADDR_DEVFN void symaddr_team_fail(const symaddr_team_t *t, symaddr_status_t st);
SYMADDR_DEVFN int symaddr_team_failed(const symaddr_team_t *t);
SYMADDR_DEVFN void *symaddr_team_peer(const symaddr_team_t *t, const void *p, const uint64_t *pb,
                                      int q);

/* Loops over a fixed number of peers unrolled on a GPU, so that their words stay in registers (a
 * loop indexing an array is otherwise left to local memory). */
#if SYMADDR_ON_GPU
#define SYMADDR_TEAM_UNROLL_ _Pragma("unroll")
#else
#define SYMADDR_TEAM_UNROLL_
#endif

/* symaddr_team_begin in two halves, for a kernel that issues loads of its own between them,
 * so that they are in flight with the call's words (one trip, not two). The first: the peers'
 * sync areas stay where they are for the context's life: found before the wait, while the
 * previous kernel may still run, they cost a push no table loads after it (kernels that do not
 * push drop these loads). */
SYMADDR_DEVFN void symaddr_team_enter_(const symaddr_team_t *t, symaddr_team_call_t *c)
{
    SYMADDR_TEAM_UNROLL_
    for (int k = 0; k < SYMADDR_TEAM_HELD; k++) {
        int q = t->node_rank + k;
        q -= q < t->node_size ? 0 : t->node_size;
        c->to[k] = 0;
        if (k < t->node_size)
            c->to[k] = (int64_t)(t->sync_pb[t->node_ranks[q]] - t->sync_pb[t->rank]);
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* The second half: the call's words. */
SYMADDR_DEVFN void symaddr_team_open_(const symaddr_team_t *t, symaddr_team_call_t *c)
{
    c->epoch = *(volatile uint64_t *)&t->sync[SYMADDR_SYNC_EPOCH] + 1;
    c->buf = *(volatile uint64_t *)&t->sync[SYMADDR_SYNC_LAMPORT];
    c->deadline = symaddr_clock_ns() + t->timeout_ns;
    c->ticket = 0;
    /* The block whose ticket is last knows that every block of the grid has read the call's
     * words, and rewrites them at its end (symaddr_team_end). Its threads hand their values to
     * the barrier so that they have arrived before the ticket is taken; taking it here rather
     * than at the end hides the atomic's trip behind the call's work (doc/performance.md). */
    if (symaddr_grid_blocks() > 1) {
        (void)symaddr_block_all((c->epoch | c->buf) != ~(uint64_t)0);
        if (symaddr_block_thread() == 0)
            c->ticket = symaddr_prim_add_u64(&t->sync[SYMADDR_SYNC_DONE], 1, 0);
    }
}

/* Whether flag value v reached want. Values only grow, by at most a few steps past what a
 * waiter wants, so the difference decides even across a wrap of 64 bits. */
SYMADDR_DEVFN int symaddr_team_reached_(uint64_t v, uint64_t want)
{
    return v != SYMADDR_TEAM_POISON && (int64_t)(v - want) >= 0;
}

/* A waiter's deadline passed without the signal: settled on one word, @p word. For a barrier
 * between ranks that is the signaller's own slot of the row, where it records its arrival
 * before it signals anyone: if the value is there, the signaller arrived and was stopped while
 * signalling, and the wait is over, as it is for every other peer. Otherwise the poison goes
 * there, the signaller fails when it arrives, and no peer passes this barrier: every rank fails
 * the call, none returns OK from it. For a wait on this rank's own blocks it is the flag
 * itself, which the last block swaps its release into. */
SYMADDR_DEVFN int symaddr_team_give_up_(const symaddr_team_t *t, uint64_t *word, uint64_t want)
{
    uint64_t v = *(volatile uint64_t *)word;
    for (;;) {
        if (symaddr_team_reached_(v, want)) {
            symaddr_fence();
            return 1;
        }
        uint64_t seen =
            v == SYMADDR_TEAM_POISON ? v : symaddr_prim_cas_u64(word, v, SYMADDR_TEAM_POISON, 1);
        if (seen == v) { /* poisoned, by this rank or an earlier waiter */
            symaddr_team_fail(t, SYMADDR_ERR_TIMEOUT);
            return 0;
        }
        v = seen;
    }
}

/* Wait for this rank's flag to reach want; 0 on failure. Past the deadline it settles with the
 * signaller (symaddr_team_give_up_) on the signaller's own slot @p arrived, or on the flag
 * itself where that is NULL (a wait on this rank's own blocks). Where @p word is not NULL it
 * is loaded with every load of the flag, in flight with it, and *seen_p gets the load made with
 * the one that saw the flag reached: it may be older than that (loads are not ordered), so a
 * caller that wants another value loads it again (after this return's fence: then exact). */
SYMADDR_DEVFN int symaddr_team_wait_flag_(const symaddr_team_t *t, uint64_t *flag, uint64_t want,
                                          uint64_t deadline, uint64_t *arrived,
                                          const volatile uint64_t *word, uint64_t *seen_p)
{
    for (unsigned spin = 0;; spin++) {
        uint64_t v = *(volatile uint64_t *)flag, w = word ? *word : 0;
        if (symaddr_team_reached_(v, want)) {
            symaddr_fence();
            if (word)
                *seen_p = w;
            return 1;
        }
        if ((spin & 63) == 63) {
            if (v == SYMADDR_TEAM_POISON || symaddr_team_failed(t))
                return 0; /* a peer failed and told us */
            if (symaddr_clock_ns() > deadline)
                return symaddr_team_give_up_(t, arrived ? arrived : flag, want);
            symaddr_yield();
        }
    }
}

/* The flag value of @p phase (1 to 3) of call @p epoch: values grow with the epoch and wrap
 * with it, and none is SYMADDR_TEAM_POISON (all ones), which epoch * 4 + phase would be at
 * phase 3 of epoch 2^62 - 1. */
SYMADDR_HOSTDEVFN uint64_t symaddr_team_flag_value_(uint64_t epoch, int phase)
{
    return epoch * 4 + (uint64_t)phase - 1;
}

/* This rank reached @p value on flag row @p flags: recorded in its own slot of its own row
 * (which no peer signals into) before it signals anyone, so that one word decides for every peer
 * at once whether it arrived (symaddr_team_give_up_). 0, and the call failed, where a peer gave
 * up on it first: it then signals no one. */
SYMADDR_DEVFN int symaddr_team_arrive_(const symaddr_team_t *t, uint64_t *flags, uint64_t value)
{
    symaddr_fence(); /* this rank's stores before its arrival */
    if (symaddr_prim_swap_u64(&flags[t->node_rank], value, 1) == SYMADDR_TEAM_POISON) {
        symaddr_team_fail(t, SYMADDR_ERR_BROKEN);
        return 0;
    }
    return 1;
}

/* Signal node peers first, first + stride, ... that this rank reached value on flag row flags
 * (one word per node rank, the signaller's), and wait until those peers signalled it back.
 * After symaddr_team_arrive_. Where @p words is not NULL, *same_p becomes 0 unless each peer q
 * met stored @p want in words[q] before it signalled (loaded with the flag: no extra trip). */
SYMADDR_DEVFN int symaddr_team_meet_(const symaddr_team_t *t, const symaddr_team_call_t *c,
                                     uint64_t *flags, uint64_t value, int first, int stride,
                                     const volatile uint64_t *words, uint64_t want, int *same_p)
{
    int ok = 1;
    for (int q = first; q < t->node_size; q += stride) {
        if (q == t->node_rank)
            continue;
        uint64_t *r = (uint64_t *)symaddr_team_peer(t, &flags[t->node_rank], t->sync_pb, q);
        symaddr_fence();
        /* no peer poisons this slot: one that gives up settles on this rank's own slot */
        symaddr_prim_swap_u64(r, value, 1);
    }
    for (int q = first; q < t->node_size && ok; q += stride) {
        uint64_t seen = want;
        if (q == t->node_rank)
            continue;
        ok = symaddr_team_wait_flag_(t, &flags[q], value, c->deadline,
                                     (uint64_t *)symaddr_team_peer(t, &flags[q], t->sync_pb, q),
                                     words ? &words[q] : NULL, &seen);
        if (ok && words && seen != want && words[q] != want)
            *same_p = 0;
    }
    return ok;
}

/* symaddr_team_barrier_block; where @p words is not NULL it also checks, before anyone
 * passes, that every node peer q stored @p want in words[q] before it arrived (a collective's
 * identity: lib/device/collectives.hip): thread q met peer q and loaded its word with its flag,
 * so the check costs no step of its own. A difference fails the call with
 * SYMADDR_ERR_MISMATCH. @p broken: thread 0's view, loaded early, of whether the team failed
 * before the call (then the block leaves at once, all together). */
SYMADDR_DEVFN int symaddr_team_barrier_check_(const symaddr_team_t *t, const symaddr_team_call_t *c,
                                              int phase, const volatile uint64_t *words,
                                              uint64_t want, int broken)
{
    uint64_t *flags = t->sync + SYMADDR_SYNC_WORDS + (size_t)symaddr_block_index() * t->node_size;
    uint64_t value = symaddr_team_flag_value_(c->epoch, phase);
    int first = (int)symaddr_block_thread(), stride = (int)symaddr_block_threads(), same = 1;
    symaddr_block_sync();
    int ok = first == 0 ? !broken && symaddr_team_arrive_(t, flags, value) : 1;
    /* thread q of the block signals and waits for node peer q, so peers are served at once */
    if (!symaddr_block_all(ok))
        return 0;
    ok = symaddr_team_meet_(t, c, flags, value, first, stride, words, want, &same);
    if (ok && !same)
        symaddr_team_fail(t, SYMADDR_ERR_MISMATCH);
    return symaddr_block_all(ok && same);
}

/* 8 bytes as one single-copy-atomic store or load, for the LL packets (data and flag in one
 * word): PTX's volatile 64-bit access; on AMD GPUs and the cpu a relaxed 64-bit atomic, which
 * LLVM's AMDGPU memory model lowers to one global_store_dwordx2 / global_load_dwordx2 (the
 * load with glc: read past the L1). tests/amd/check-isa checks the instructions. */
SYMADDR_DEVFN void symaddr_team_st8_(uint64_t *p, uint64_t v)
{
#if defined(__CUDA_ARCH__)
    *(volatile uint64_t *)p = v;
#else
    __atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

SYMADDR_DEVFN uint64_t symaddr_team_ld8_(const uint64_t *p)
{
#if defined(__CUDA_ARCH__)
    return *(const volatile uint64_t *)p;
#else
    return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

/* 16 bytes as one store or load; each 32-bit word is seen whole by a poller, which is all the
 * protocol needs. */
SYMADDR_DEVFN void symaddr_team_st16_(uint32_t *p, const uint32_t w[4])
{
#if defined(__CUDA_ARCH__)
    asm volatile("st.volatile.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w[0]), "r"(w[1]),
                 "r"(w[2]), "r"(w[3])
                 : "memory");
#elif defined(__HIP__) /* one 16-byte access; the cpu form below serves nvcc's host pass */
    typedef uint32_t v4u __attribute__((ext_vector_type(4)));
    v4u v = {w[0], w[1], w[2], w[3]};
    *(volatile v4u *)p = v;
#else
    for (int k = 0; k < 4; k++)
        __atomic_store_n(&p[k], w[k], __ATOMIC_RELAXED);
#endif
}

SYMADDR_DEVFN void symaddr_team_ld16_(const uint32_t *p, uint32_t w[4])
{
#if defined(__CUDA_ARCH__)
    asm volatile("ld.volatile.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                 : "l"(p)
                 : "memory");
#elif defined(__HIP__)
    typedef uint32_t v4u __attribute__((ext_vector_type(4)));
    v4u v = *(const volatile v4u *)p;
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
#else
    for (int k = 0; k < 4; k++)
        w[k] = __atomic_load_n(&p[k], __ATOMIC_RELAXED);
#endif
}

/* Node rank q's slot of this rank's Lamport buffer of call c. */
SYMADDR_DEVFN uint32_t *symaddr_team_slot_(const symaddr_team_t *t, const symaddr_team_call_t *c,
                                           int q)
{
    return (uint32_t *)((char *)t->sync + t->lamport_offset +
                        ((size_t)c->buf * (size_t)t->node_size + (size_t)q) * t->lamport_slot);
}

#endif
