# SPDX-License-Identifier: MIT
"""symaddr.triton.team's Lamport allreduce (team_allreduce_lamport, exported there): a one-shot
with no barrier, whose data marks its own arrival. A module of its own on team's helpers and
sync-area layout."""
import triton
import triton.language as tl

from . import translate
from ._peers import _combine, _wide
from ._peers import lanes as _lanes
from ._signals import _now_ns
from .team import (_BROKEN, _MAX_PROGRAMS, _MISMATCH, _SLOT, _SLOT_WORDS, _STRIDE, _TIMEOUT,
                   _TOO_MANY, FLAGS_AT, _block_word, _in_peers, _narrow, team_fail,
                   team_failed)


@triton.jit
def _lamport_word(v):
    """v's bits plus one, so that memory's 0 means "not arrived": all ones (a NaN) goes with
    its lowest bit cleared first, so that no value is sent as 0 (16 and 32 bits)."""
    tl.static_assert((v.dtype.primitive_bitwidth == 16) | (v.dtype.primitive_bitwidth == 32),
                     "team_allreduce_lamport: 16- and 32-bit floating point")
    if v.dtype.primitive_bitwidth == 16:
        bits = v.to(tl.uint16, bitcast=True)
        bits = bits - (bits == 0xFFFF).to(tl.uint16)
    else:
        bits = v.to(tl.uint32, bitcast=True)
        bits = bits - (bits == 0xFFFFFFFF).to(tl.uint32)
    return bits + 1


@triton.jit
def _most(v, rank):
    """The largest of v (one value a thread) over every thread of the program: a reduction
    over a vector with an element in every thread, which crosses the warps (rank, a runtime
    value, keeps the compiler from folding it into v)."""
    lanes = tl.arange(0, 1024)
    return tl.max(tl.where(lanes < rank + 1024, v.to(tl.int32), 0), 0)


@triton.jit
def _arrived(got, seen, rank):
    """Whether every word of got (each rank's tile, 0 where not arrived) and of seen (each
    rank's identity word) arrived, the same in every thread: the least word over the ranks
    within each thread, one reduction over the tile, then one over every thread's view (_most),
    as a tile smaller than the program's threads has a word in several threads, each loading
    its own copy (a poll that let one copy decide failed on a GPU). It reduced by tile, by
    rank and by warp before, three reductions across the warps and a flag a comparison: 286
    PTX instructions a turn at f32 tiles of 512, 1.20x the C call's time replayed at 128 KiB."""
    least = tl.min(got, 0)  # unsigned words: 0 where some rank's has not arrived
    mine = tl.min(tl.where(tl.min(seen, 0) != 0, least, 0), 0) != 0
    return _most(mine == 0, rank) == 0


@triton.jit
def _lamport_row(got, ranks, q, dtype: tl.constexpr):
    """Rank q's row of the words waited for (got: one row a rank), as dtype. A sum with one
    term that is not 0, in integers: exact."""
    row = tl.sum(tl.where(ranks[:, None] == q, got, 0), axis=0).to(got.dtype)
    return (row - 1).to(dtype, bitcast=True)


@triton.jit
def _lamport_id(team, b, r, N_RANKS: tl.constexpr):
    """The identity word of rank(s) r, this program, buffer b in this rank's sync area: after
    the barriers' flags and identity rows (team.sync_words has the layout)."""
    at = FLAGS_AT + 2 * _MAX_PROGRAMS * N_RANKS
    return team.sync + at + (b * N_RANKS + r) * _MAX_PROGRAMS + tl.program_id(0)


@triton.jit
def _lamport_ptr(team, b, r, N_RANKS: tl.constexpr, word_ty: tl.constexpr):
    """The slot of rank(s) r, this program, buffer b in this rank's sync area, as word_ty:
    after the three buffers' identity words and a word that puts the slots on 16 bytes."""
    at = FLAGS_AT + 2 * _MAX_PROGRAMS * N_RANKS + 3 * N_RANKS * _MAX_PROGRAMS + 1
    slot = (b * N_RANKS + r) * _MAX_PROGRAMS + tl.program_id(0)
    return (team.sync + at + slot * _SLOT_WORDS).to(tl.pointer_type(word_ty), bitcast=True)


@triton.jit
def team_allreduce_lamport(team, call, x, out, n, N_RANKS: tl.constexpr, BLOCK: tl.constexpr,
                           OP: tl.constexpr = None, ident=0):
    """out (any memory, n elements) = the reduction of every rank's x (any memory: it is not
    read by the peers), floating point only, with no barrier: each rank stores its tile
    (this program's BLOCK elements, at most LAMPORT_SLOT bytes) into its slot of every
    peer's sync area, where the data marks its own arrival, and the same program of every
    rank waits for every peer's, reduces them in rank order and empties its slots for a later
    call. A program's calls use three buffers in turn, so a peer at most two calls ahead
    never writes a slot this rank still reads. With the tile goes the call's identity and
    number: a peer of another call, collective, count, dtype or op, or a call ahead or
    behind, fails the call with MISMATCH; one late past the timeout with TIMEOUT. Every
    program of a kernel launches on every rank (the same grid). The tiles move whole (0.0
    past n) in 16-byte vectors (ctx.team()'s sync area is on 16 bytes on every rank): launch
    BLOCK * itemsize / 16 threads (num_warps=BLOCK * itemsize // 512, at least 1), one vector
    of each rank's tile a thread, as symaddr.triton.collectives.allreduce does. Returns True,
    or False after a failure (recorded for the host; out is then not written)."""
    tl.static_assert(x.dtype.element_ty.is_floating(),
                     "team_allreduce_lamport: floating point only (the data marks its own "
                     "arrival; use team_allreduce_oneshot for integers)")
    tl.static_assert(BLOCK * x.dtype.element_ty.primitive_bitwidth // 8 <= _SLOT,
                     "team_allreduce_lamport: a tile of at most LAMPORT_SLOT bytes")
    pid = tl.program_id(0)
    code = tl.zeros((), tl.int32)
    if pid >= _MAX_PROGRAMS:  # no slots for this program
        code = tl.full((), _TOO_MANY, tl.int32)
    elif not team_failed(team):  # a team that failed before leaves at once
        j = tl.arange(0, BLOCK)
        mask = pid * BLOCK + j < n
        word = _lamport_word(tl.load(x + pid * BLOCK + j, mask=mask, other=0))
        # the slots' words move in 16-byte vectors, the whole tile unmasked (the words past n
        # carry 0.0): masked by n, each word moved an instruction (1.27x the C call's time
        # graph-replayed at 128 KiB on an H100), and a masked poll sets every word it skips
        b = call % 3
        mine = _lamport_ptr(team, b, team.rank, N_RANKS, word.dtype)
        mine_id = _lamport_id(team, b, team.rank, N_RANKS)
        idw = (_block_word(ident, 7, OP) | (1 << 46)) + ((call & 0xFFFF) << 47)
        for k in tl.static_range(N_RANKS):  # from the next rank on, to spread the stores
            r = (team.rank + 1 + k) % N_RANKS
            dst = tl.multiple_of(translate(mine, r, team.sync_pb, team.rank) + j, 16)
            tl.store(dst, word)
            tl.store(translate(mine_id, r, team.sync_pb, team.rank), idw)
        ranks = _lanes(N_RANKS)
        live = ranks < N_RANKS
        # this call's flag at phase 0 in every peer: a peer in a barrier of the call (another
        # collective) fails it with MISMATCH, as this rank does on seeing its flag there
        flag = team.sync + FLAGS_AT + pid * N_RANKS + team.rank
        tl.store(_in_peers(team, flag, ranks, live),
                 tl.full(ranks.shape, 0, tl.int64) + call * _STRIDE, mask=live)
        flags = team.sync + FLAGS_AT + pid * N_RANKS + ranks
        rows = _lamport_ptr(team, b, ranks, N_RANKS, word.dtype)
        ids = _lamport_id(team, b, ranks, N_RANKS)
        tile = tl.multiple_of(rows[:, None] + j[None, :], [16, 16])
        inside = live[:, None]
        got = tl.load(tile, mask=inside, other=1, volatile=True)
        seen = tl.load(ids, mask=live, other=idw, volatile=True)
        here = _arrived(got, seen, team.rank)
        start = _now_ns()
        late = False
        other = False
        turn = 0
        # every warp leaves the loop at the same turn: each polls its own copy of the small
        # vectors (seen, the flags) and reads its own clock, and the loop and what follows it
        # meet at the block's barriers (its reductions), which warps that left at different
        # turns would pair wrongly (on an H200: words emptied under a warp still waiting)
        while (not here) & (not late) & (not other):
            got = tl.load(tile, mask=inside, other=1, volatile=True)
            seen = tl.load(ids, mask=live, other=idw, volatile=True)
            here = _arrived(got, seen, team.rank)
            turn = (turn + 1) & 7
            if (turn == 0) & (not here):  # the exits of a failure, every 8th turn (a turn
                # that all warps take: turn and here are the block's)
                phase = tl.load(flags, mask=live, other=0, volatile=True) - call * _STRIDE
                # one reduction for both: 2 where a peer is in another call, else 1 if late
                why = _most(2 * (tl.max(((phase > 0) & (phase < _STRIDE)).to(tl.int32), 0)
                                 != 0).to(tl.int32) +
                            ((_now_ns() - start > team.timeout_ns) | team_failed(team)).to(
                                tl.int32), team.rank)
                other = why >= 2
                late = why == 1
        if other:
            code = tl.full((), _MISMATCH, tl.int32)
        elif not here:
            code = tl.full((), _TIMEOUT, tl.int32)
        else:
            if tl.max((seen != idw).to(tl.int32), 0) != 0:
                code = tl.full((), _MISMATCH, tl.int32)
            else:  # rank order from rank 0, as team_reduce_tile, from the words waited for
                acc = _wide(_lamport_row(got, ranks, 0, x.dtype.element_ty))
                for q in tl.static_range(1, N_RANKS):
                    acc = _combine(acc, _wide(_lamport_row(got, ranks, q, x.dtype.element_ty)),
                                   OP)
                tl.store(out + pid * BLOCK + j, _narrow(acc, out.dtype.element_ty), mask=mask)
            # empty for a later call, once every thread has its words: a warp that saw them
            # all could otherwise empty them under a warp still waiting for them
            tl.debug_barrier()
            tl.store(tile, tl.zeros(got.shape, got.dtype), mask=inside)
            tl.store(ids, tl.zeros(seen.shape, seen.dtype), mask=live)
    else:
        code = tl.full((), _BROKEN, tl.int32)
    if code != 0:
        team_fail(team, code, N_RANKS)
    return code == 0

