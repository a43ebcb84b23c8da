# SPDX-License-Identifier: MIT
"""Device-side synchronisation for Triton kernels, mirroring symaddr/team.h: a team handle
(Context.team(): the context's ranks and a symmetric sync area of the team's own) and @triton.jit
functions over it, so that a kernel synchronises with its peers' kernels without a host call
before or after it.

    call = team_begin(team)                        # every program, first
    ok = team_barrier(team, call, 1, N_RANKS)      # this program meets the same program of
    ...                                            # every rank (phases 1 to 3 of a call)
    team_end(team, call)                           # every program, last

A kernel that uses them is one collective call of the team: every rank launches it, in the
same order relative to the team's other kernels, with the same grid of at most MAX_BLOCKS (64)
programs, all resident at once with the peers' on a shared GPU: a kernel with more work loops
over its tiles (see examples/triton_fused.py). A program past MAX_BLOCKS fails the call with
SYMADDR_ERR_INVALID_ARG (its barriers return False) rather than write past the sync area.
Each program numbers its calls in device memory (its epoch in the sync area), so a stream of
calls, and a CUDA graph replaying them, never pair one call's flags with another's. A kernel
that makes several calls numbers them itself (call, call + 1, ..., then team_end with the last):
a team_begin after a team_end in one kernel may read the epoch before another warp of the
program has stored it (on an H200, calls in rounds timed out and read wrong data so).
Every wait is bounded by the team's timeout (a clock); a peer that is late past it, or a call
ahead (a rank skipped a call), fails the call: team_barrier returns False, the status is
recorded in this rank's sync area and SYMADDR_ERR_BROKEN in every peer's (MISMATCH where the
ranks' blocks disagree on the call: team_fail), and the context's next host call raises it and
breaks the context, as the C team kernels do."""
import functools
import hashlib
import math
import os

import triton
import triton.language as tl

from . import VALIDATE, translate
from .._lib import load as _load
from ._peers import _gather, _moved, _reduce, aligned, peer_load, peer_store
from ._peers import lanes as _lanes
from ._signals import _CLOCK, _now_ns

_status = _load().abi["status"]
_TIMEOUT = tl.constexpr(-_status["SYMADDR_ERR_TIMEOUT"])
_MISMATCH = tl.constexpr(-_status["SYMADDR_ERR_MISMATCH"])
_BROKEN = tl.constexpr(-_status["SYMADDR_ERR_BROKEN"])
_TOO_MANY = tl.constexpr(-_status["SYMADDR_ERR_INVALID_ARG"])  # more programs than MAX_BLOCKS
_INTERPRETED = tl.constexpr(_CLOCK == "python")  # Triton's interpreter runs the kernels

# The sync area, in int64 words: the status, then one epoch per program, then one flag per
# program and rank (written by that rank into this rank's copy), then as many identity words
# (the call's, written by that rank before its flag of phase 1: _team_barrier).
STATUS_AT = tl.constexpr(0)
EPOCH_AT = tl.constexpr(1)
MAX_BLOCKS = 64
_MAX_PROGRAMS = tl.constexpr(MAX_BLOCKS)  # the same, as kernels read it
FLAGS_AT = tl.constexpr(1 + MAX_BLOCKS)
# A call's flag values step by 4 (phases 1 to 3): a peer at most one call phase ahead is
# fine, one a whole call ahead skipped nothing this rank made (or this rank skipped one)
_STRIDE = tl.constexpr(4)


# Then the Lamport buffers (team_allreduce_lamport): three, used in turn by a program's calls;
# in each, one identity word and one slot of LAMPORT_SLOT bytes for each rank and program,
# written by that rank into this rank's copy (the identity words first, then a word of
# padding that puts the slots on 16 bytes, then the slots). Empty is 0 (the area starts
# cleared). 4 KiB: 64 programs take 256 KiB in one round at 2 ranks (at 8, tiles of 2 KiB at
# most: collectives' LAMPORT_WORDS); 6.3 MiB of sync area a rank at 8 ranks.
LAMPORT_SLOT = 4096
_SLOT = tl.constexpr(LAMPORT_SLOT)
_SLOT_WORDS = tl.constexpr(LAMPORT_SLOT // 8)


_PART = tl.constexpr(16)  # a two-shot part's elements: a multiple of it (aligned loads)


def twoshot_part(n, ranks):
    """The elements of a rank's part of n in team_allreduce_twoshot, which its tiles cover."""
    return -(-n // (ranks * _PART.value)) * _PART.value


def sync_words(size):
    """int64 words of a team's sync area for size ranks."""
    return 2 + MAX_BLOCKS + 2 * MAX_BLOCKS * size + 3 * size * MAX_BLOCKS * (1 + LAMPORT_SLOT // 8)


def call_ident(kind, count, dtype, op=None, root=0, where=()):
    """The identity of a collective call as the team's blocks take it (their ident argument):
    a hash of kind, count, dtype, op and root (and where: integers that must agree too, as
    symaddr.triton.collectives passes which registration each buffer the peers reach is and
    where in it), the same on every rank that passes the same values. The blocks' ranks
    compare it, with the block's own kind and op, before they touch a peer's memory: ranks
    that disagree fail the call with SYMADDR_ERR_MISMATCH rather than return another call's
    data. symaddr.triton.collectives passes it; a kernel of your own passes it too, or 0,
    which still compares the blocks' kinds and ops."""
    where = tuple(where)
    try:  # a hash a call otherwise: a program's few shapes are looked up, by value and type
        return _ident(kind, count, dtype, op, root, where, type(kind), type(dtype), type(op))
    except TypeError:  # an argument that cannot be a key (an unhashable dtype)
        return _ident.__wrapped__(kind, count, dtype, op, root, where)


@functools.lru_cache(maxsize=256)
def _ident(kind, count, dtype, op, root, where, *types):
    """call_ident's hash; types only key the cache: values of two types that compare equal
    (NumPy's dtype and its scalar type) may print differently."""
    key = (str(kind), int(count), str(dtype), str(op), int(root))
    text = repr(key + (tuple(int(w) for w in where),) if where else key).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=5).digest(), "little")


def team_programs(ctx, tiles, per_sm=1):
    """The programs a team kernel of `tiles` tiles launches (it loops over the rest): at most
    MAX_BLOCKS, and on a GPU at most per_sm a multiprocessor shared among the ranks that share
    the GPU (mps_sharing), so that every program of every rank is resident at once (a program
    waiting at a barrier for a peer's program that cannot be scheduled would wait until the
    timeout)."""
    cap = MAX_BLOCKS
    if ctx.backend != "cpu":
        key = (ctx.device, ctx.node_size, per_sm)
        cap = _caps.get(key)
        if cap is None:  # asked once: a small collective's host time counts
            import torch
            sms = torch.cuda.get_device_properties(ctx.device).multi_processor_count
            sharing = mps_sharing(-(-ctx.node_size // max(1, torch.cuda.device_count())),
                                  os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"))
            cap = _caps[key] = min(MAX_BLOCKS, max(1, per_sm * sms // sharing))
    return max(1, min(int(tiles), cap))


def mps_sharing(ranks, percentage):
    """How many of the ranks on one GPU share a multiprocessor's room for team kernels: all of
    them, or under an MPS partition (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, a client's cap on the
    multiprocessors it occupies, which the device's multiprocessor count then reports) as many
    as the ranks' caps overlap: 8 ranks at 12.5% do not, so each takes its cap alone."""
    try:
        share = float(percentage)
    except (TypeError, ValueError):  # unset, or not a number: MPS takes no partition
        return ranks
    if not 0 < share < 100:
        return ranks
    return max(1, min(ranks, math.ceil(ranks * share / 100 - 1e-9)))


_caps = {}  # (device, node size, per_sm) -> team_programs' bound


@triton.jit
def team_begin(team):
    """This program's next call: its number (epoch), read from the sync area (0 for a program
    past MAX_BLOCKS, whose barriers fail the call: the area has no words for it)."""
    pid = tl.program_id(0)
    return tl.load(team.sync + EPOCH_AT + pid, mask=pid < _MAX_PROGRAMS, other=-1,
                   volatile=True) + 1


@triton.jit
def team_end(team, call):
    """This program's call is over: its number stays in the sync area for the next one."""
    pid = tl.program_id(0)
    tl.store(team.sync + EPOCH_AT + pid, call, mask=pid < _MAX_PROGRAMS)


@triton.jit
def team_failed(team):
    """Whether a call of this rank failed, or a peer's failure broke the team."""
    return tl.load(team.sync + STATUS_AT, volatile=True) != 0


@triton.jit
def team_fail(team, code, N_RANKS: tl.constexpr):
    """Record -code (the first failure sticks) here, and BROKEN in every peer's sync area
    (MISMATCH where the failure that stuck here is MISMATCH, this rank's or a peer's: ranks
    that disagree on a call all learn why, also through a rank that left its wait on seeing
    a peer's failure before its own)."""
    zero = tl.zeros((), tl.int64)
    code = code.to(tl.int64)
    old = tl.atomic_cas(team.sync + STATUS_AT, zero, code, sem="relaxed", scope="sys")
    stuck = tl.where(old != 0, old, code)
    theirs = tl.where(stuck == _MISMATCH, stuck, tl.full((), _BROKEN, tl.int64))
    for r in tl.static_range(N_RANKS):
        if r != team.rank:
            tl.atomic_cas(translate(team.sync + STATUS_AT, r, team.sync_pb, team.rank), zero,
                          theirs, sem="relaxed", scope="sys")


@triton.jit
def team_barrier(team, call, phase: tl.constexpr, N_RANKS: tl.constexpr):
    """This program meets the same program of every rank at phase (1 to 3) of call: its
    earlier stores (local and to peers) are visible to their later loads. True, or False
    after a failure (recorded: a peer late past the team's timeout, a call ahead, or a
    program past MAX_BLOCKS, which fails with SYMADDR_ERR_INVALID_ARG)."""
    return _team_barrier(team, call, phase, N_RANKS, 0, False)


@triton.jit
def _in_peers(team, p, ranks, live):
    """p (in this rank's sync area) in the sync area of each live lane's rank: translate for
    a block of ranks, whose lanes past the team read no table entry."""
    here = tl.load(team.sync_pb + team.rank).to(tl.int64)
    there = tl.load(team.sync_pb + ranks, mask=live, other=0).to(tl.int64)
    return (p.to(tl.pointer_type(tl.int8), bitcast=True) + (there - here)).to(p.dtype,
                                                                             bitcast=True)


@triton.jit
def _team_barrier(team, call, phase: tl.constexpr, N_RANKS: tl.constexpr, word,
                  CHECK: tl.constexpr):
    """team_barrier; with CHECK, each rank also stores word (the call's identity) into its
    row of every peer before its flag, and compares every peer's after the wait: ranks of
    another call fail it with MISMATCH. A peer rewrites the row at its next checked barrier,
    after this call's next phase, which this rank has not reached.
    One lane a rank, as the C blocks' thread a peer: the program signals every peer at once
    and polls every flag in one load, so a barrier costs one trip whatever the ranks. The
    program's threads meet first, so each lane's release (system scope, cumulative) orders
    every thread's earlier stores before its flag; each lane's acquire after the wait, and
    the threads' meeting after it, order the peers' stores before every thread's later loads."""
    tl.debug_barrier()
    pid = tl.program_id(0)
    code = tl.zeros((), tl.int32)
    if pid < _MAX_PROGRAMS:
        value = call * _STRIDE + phase
        ranks = _lanes(N_RANKS)
        live = ranks < N_RANKS
        mine = team.sync + FLAGS_AT + pid * N_RANKS + team.rank  # my flag in each copy
        rows = _MAX_PROGRAMS * N_RANKS  # the identity rows, after the flags
        theirs = _in_peers(team, mine, ranks, live)
        if CHECK:  # the same lane's release below orders it before the flag
            tl.atomic_xchg(theirs + rows, tl.full(ranks.shape, 0, tl.int64) + word, mask=live,
                           sem="relaxed", scope="sys")
        tl.atomic_xchg(theirs, tl.full(ranks.shape, 0, tl.int64) + value, mask=live,
                       sem="release", scope="sys")
        flags = team.sync + FLAGS_AT + pid * N_RANKS + ranks
        seen = tl.load(flags, mask=live, other=value, volatile=True)
        start = _now_ns()
        late = False
        while (tl.min(seen - value, 0) < 0) & (not late):
            seen = tl.load(flags, mask=live, other=value, volatile=True)
            late = (_now_ns() - start > team.timeout_ns) | team_failed(team)
        # acquire: each lane's peer's stores before its flag, before this program's loads
        seen = tl.atomic_add(flags, tl.zeros(ranks.shape, tl.int64), mask=live, sem="acquire",
                             scope="sys")
        seen = tl.where(live, seen, value)
        # a call ahead, or a peer in a Lamport call of this number (its flag: phase 0)
        bad = (seen >= value + _STRIDE) | (seen == call * _STRIDE)
        if CHECK:  # after the flag's acquire: this call's word
            other = tl.load(flags + rows, mask=live, other=word, volatile=True)
            bad = bad | ((seen >= value) & (other != word))
        ahead = tl.max(bad.to(tl.int32), 0) != 0
        short = tl.min(seen - value, 0) < 0  # a peer late past the timeout
        code = tl.where(ahead, _MISMATCH, tl.where(short, _TIMEOUT, code))
    else:  # no flags for this program: writing them would write past the sync area
        code = tl.full((), _TOO_MANY, tl.int32)
    if code != 0:
        team_fail(team, code, N_RANKS)
    tl.debug_barrier()
    return code == 0


@triton.jit
def _block_word(ident, KIND: tl.constexpr, OP: tl.constexpr):
    """The word a block's ranks compare (_team_barrier): call_ident's hash (40 bits; 0 where
    the kernel passes none) with the block's kind and op above it."""
    opc: tl.constexpr = 1 if OP == "max" else (2 if OP == "min" else 0)
    # in 64 bits whatever ident's type: Triton passes an integer argument that fits as an i32
    return ident + tl.zeros((), tl.int64) + (KIND << 40) + (opc << 44)


# ---- the collectives' blocks: each on one program's tile (offs, mask) of a call ----------------
# Each takes ident, the call's identity (call_ident: 0 where the kernel passes none), and its
# ranks compare it with their kind and op at the first barrier: ranks of another collective,
# count, dtype, op or root fail the call with MISMATCH before any reads a peer's memory.
# Reductions (OP "sum", "max", "min"; None is "sum") combine the ranks in rank order from rank 0,
# accumulating 16-bit floating point in f32 and rounding once, other types in their own, as the C
# collectives do: integers and max/min are exact and equal the C collectives' bit for bit; a
# float sum equals theirs where their order is rank order too (symaddr_allreduce's one-shot and
# two-shot).

@triton.jit
def _narrow(acc, dtype: tl.constexpr):
    """acc (f32 for 16-bit floating point) in the output's dtype, rounded to nearest even as
    the C collectives round. Triton's interpreter truncates f32 to bf16, so there the rounding is
    done on the bits (a NaN stays a quiet NaN)."""
    if dtype.is_bf16() and _INTERPRETED:
        bits = acc.to(tl.uint32, bitcast=True)
        even = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).to(tl.uint16)
        nan = ((bits >> 16) | 0x40).to(tl.uint16)
        return tl.where((bits & 0x7FFFFFFF) > 0x7F800000, nan, even).to(dtype, bitcast=True)
    else:
        return acc.to(dtype)


@triton.jit
def team_aligned(x_pb, team, N_RANKS: tl.constexpr):
    """Whether every rank's copy under the table x_pb lies a multiple of 16 bytes from this
    rank's (every provider's allocations; an import at per-rank offsets may not): then
    team_translate(..., ALIGNED=True) keeps a pointer's alignment. One load of the table."""
    return aligned(x_pb, team.rank, N_RANKS)


@triton.jit
def team_translate(ptr, r, x_pb, team, ALIGNED: tl.constexpr):
    """Rank r's copy of ptr (x_pb its table; r may be a block, one rank a pointer), as
    symaddr.triton.translate. ALIGNED (a table team_aligned found so) tells Triton that the
    difference is a multiple of 16 bytes, so loads through the pointer vectorise as far as
    ptr's own alignment allows (a plain translation loads one element an instruction).
    Validation mode checks the translation, as translate does."""
    if VALIDATE or not ALIGNED:
        p = translate(ptr, r, x_pb, team.rank)
    else:
        p = _moved(ptr, r, x_pb, team.rank)
    return p


@triton.jit
def team_reduce_tile(x, x_pb, offs, mask, team, N_RANKS: tl.constexpr, OP: tl.constexpr = None):
    """The reduction over every rank of its x[offs] (x symmetric, x_pb its table), in rank
    order, wide (f32 for 16-bit floating point)."""
    if aligned(x_pb, team.rank, N_RANKS):  # the loads in vectors (symaddr.triton._peers)
        acc = _reduce(x, x_pb, offs, mask, team, N_RANKS, OP, True)
    else:
        acc = _reduce(x, x_pb, offs, mask, team, N_RANKS, OP, False)
    return acc


@triton.jit
def team_allreduce_oneshot(team, call, x, x_pb, out, offs, mask, N_RANKS: tl.constexpr,
                           OP: tl.constexpr = None, ident=0):
    """out[offs] (any memory) = the reduction of every rank's x[offs] (symmetric): a barrier
    (the peers' x is ready), loads from every rank, a barrier (no peer still reads x).
    Returns True, or False after a failure (recorded for the host)."""
    ok = _team_barrier(team, call, 1, N_RANKS, _block_word(ident, 1, OP), True)
    if ok:
        acc = team_reduce_tile(x, x_pb, offs, mask, team, N_RANKS, OP)
        tl.store(out + offs, _narrow(acc, out.dtype.element_ty), mask=mask)
        ok = team_barrier(team, call, 2, N_RANKS)
    return ok


@triton.jit
def _twoshot_tiles(team, x, x_pb, out, out_pb, tile, rounds, chunk, n, N_RANKS: tl.constexpr,
                   BLOCK: tl.constexpr, OP: tl.constexpr, HINT: tl.constexpr):
    k = 0
    while k < rounds:  # not range(0, rounds): see symaddr.triton.collectives._allreduce_body
        offs = (tile + k * tl.num_programs(0)) * BLOCK + tl.arange(0, BLOCK)
        mine = team.rank * chunk + offs
        m = (offs < chunk) & (mine < n)
        v = _narrow(_reduce(x, x_pb, mine, m, team, N_RANKS, OP, HINT), out.dtype.element_ty)
        for j in tl.static_range(N_RANKS):  # from this rank's own on, to spread the stores
            peer_store(out + mine, v, (team.rank + j) % N_RANKS, out_pb, team.rank, m, HINT)
        k += 1


@triton.jit
def team_allreduce_twoshot(team, call, x, x_pb, out, out_pb, tile, n, N_RANKS: tl.constexpr,
                           BLOCK: tl.constexpr, OP: tl.constexpr = None, ident=0, rounds=1):
    """out (symmetric, n elements; x itself, or apart from it) = the reduction of every rank's x
    (symmetric), as the C two-shot: between two barriers, each rank reduces its part of n (loads
    from every rank) and stores it into every rank's out; in place, an element is read and
    written by its part's rank alone, reads first. The part is twoshot_part(n, N_RANKS)
    elements, a multiple of 16, so every rank's part is as aligned as x and out (in vectors
    where the tables allow: symaddr.triton._peers); this program takes its tiles tile, tile +
    num_programs(0), ... (rounds of them, BLOCK elements each) in the one call. A rank moves 16
    parts of n/N_RANKS at 8 ranks (reads 8, writes 8), where a reduce into its own out, a
    barrier and a gather by loads (this block's earlier form) moved 25."""
    chunk = tl.cdiv(n, N_RANKS * _PART) * _PART
    ok = _team_barrier(team, call, 1, N_RANKS, _block_word(ident, 2, OP), True)
    if ok:
        if aligned(x_pb, team.rank, N_RANKS) & aligned(out_pb, team.rank, N_RANKS):
            _twoshot_tiles(team, x, x_pb, out, out_pb, tile, rounds, chunk, n, N_RANKS, BLOCK,
                           OP, True)
        else:
            _twoshot_tiles(team, x, x_pb, out, out_pb, tile, rounds, chunk, n, N_RANKS, BLOCK,
                           OP, False)
        ok = team_barrier(team, call, 2, N_RANKS)
    return ok


@triton.jit
def team_reduce_scatter(team, call, x, x_pb, out, count, offs, mask, N_RANKS: tl.constexpr,
                        OP: tl.constexpr = None, ident=0):
    """out[offs] (any memory, count elements) = the reduction over ranks of their
    x[rank * count + offs] (x symmetric, N_RANKS * count elements)."""
    ok = _team_barrier(team, call, 1, N_RANKS, _block_word(ident, 3, OP), True)
    if ok:
        acc = team_reduce_tile(x + team.rank * count, x_pb, offs, mask, team, N_RANKS, OP)
        tl.store(out + offs, _narrow(acc, out.dtype.element_ty), mask=mask)
        ok = team_barrier(team, call, 2, N_RANKS)
    return ok


@triton.jit
def team_allgather(team, call, x, x_pb, out, count, offs, mask, N_RANKS: tl.constexpr,
                   ident=0, shift=0):
    """out[r * count + offs] (any memory) = rank r's x[offs] (symmetric), every r. In place,
    x is this rank's part of out (out[rank * count:], in x's allocation) on every rank and
    shift is count: rank r's x is read where it lies, at r's part."""
    ok = _team_barrier(team, call, 1, N_RANKS, _block_word(ident, 4, None), True)
    if ok:
        if aligned(x_pb, team.rank, N_RANKS):  # the loads in vectors (symaddr.triton._peers)
            _gather(x + offs, x_pb, out + offs, count, mask, team, N_RANKS, True, shift)
        else:
            _gather(x + offs, x_pb, out + offs, count, mask, team, N_RANKS, False, shift)
        ok = team_barrier(team, call, 2, N_RANKS)
    return ok


@triton.jit
def team_alltoall(team, call, x, x_pb, out, count, offs, mask, N_RANKS: tl.constexpr,
                  ident=0):
    """out[r * count + offs] (any memory) = rank r's x[rank * count + offs] (symmetric)."""
    ok = _team_barrier(team, call, 1, N_RANKS, _block_word(ident, 5, None), True)
    if ok:
        src = x + team.rank * count + offs
        if aligned(x_pb, team.rank, N_RANKS):
            _gather(src, x_pb, out + offs, count, mask, team, N_RANKS, True)
        else:
            _gather(src, x_pb, out + offs, count, mask, team, N_RANKS, False)
        ok = team_barrier(team, call, 2, N_RANKS)
    return ok


@triton.jit
def team_broadcast(team, call, x, x_pb, out, root, offs, mask, N_RANKS: tl.constexpr,
                   ident=0):
    """out[offs] (any memory; x itself too) = rank root's x[offs] (symmetric)."""
    word = _block_word(ident, 6, None) + root  # root: in the word where ident is 0 too
    ok = _team_barrier(team, call, 1, N_RANKS, word, True)
    if ok:
        if aligned(x_pb, team.rank, N_RANKS):
            v = peer_load(x + offs, root, x_pb, team.rank, mask, True)
        else:
            v = peer_load(x + offs, root, x_pb, team.rank, mask, False)
        # in place the root keeps its x as it is, which its peers read meanwhile
        same = out.to(tl.int64) == x.to(tl.int64)
        tl.store(out + offs, v, mask=mask & ((team.rank != root) | (not same)))
        ok = team_barrier(team, call, 2, N_RANKS)
    return ok


def __getattr__(name):
    """team_allreduce_lamport: the Lamport block, in a module of its own (symaddr.triton.
    _lamport) on the helpers above, is part of this module's interface as of team.h's; looked
    up when first asked for, since that module imports this one."""
    if name == "team_allreduce_lamport":
        from ._lamport import team_allreduce_lamport
        return team_allreduce_lamport
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def __dir__():
    return sorted(list(globals()) + ["team_allreduce_lamport"])
