# SPDX-License-Identifier: MIT
"""The team blocks' loads from and stores to peers, in 16-byte vectors where they can be.
translate adds a table's difference (peer_bases[r] - peer_bases[rank]) that Triton cannot see
the alignment of, so a translated block of pointers loads one element an instruction even
where this rank's pointer is a multiple of 16 (on an H200 the two-shot's remote loads were
all ld.global.b32). A block that finds every difference of its table a multiple of 16 bytes
(aligned(), one load of the table) takes the HINT path, whose difference Triton knows to be
one, and vectorises as far as this rank's own pointers and masks allow; any other table takes
the plain one. Validation mode takes the checked accessors always. Also the blocks' reductions
and gathers over every rank, on these accessors."""
import triton
import triton.language as tl

from . import VALIDATE, translate
from . import load as _checked_load
from . import store as _checked_store


@triton.jit
def lanes(N_RANKS: tl.constexpr):
    """0 .. N_RANKS - 1 rounded up to a power of two (a block's length), one lane a rank."""
    tl.static_assert(N_RANKS <= 1024, "symaddr.triton.team: at most 1024 ranks a node")
    P: tl.constexpr = (1 if N_RANKS <= 1 else 2 if N_RANKS <= 2 else 4 if N_RANKS <= 4 else
                       8 if N_RANKS <= 8 else 16 if N_RANKS <= 16 else 32 if N_RANKS <= 32
                       else 64 if N_RANKS <= 64 else 128 if N_RANKS <= 128 else
                       256 if N_RANKS <= 256 else 512 if N_RANKS <= 512 else 1024)
    return tl.arange(0, P)


@triton.jit
def aligned(pb, rank, N_RANKS: tl.constexpr):
    """Whether every entry of the table pb (N_RANKS ranks) differs from this rank's by a
    multiple of 16 bytes: then a peer's copy of a pointer is as aligned as this rank's."""
    ranks = lanes(N_RANKS)
    here = tl.load(pb + rank).to(tl.int64)
    there = tl.load(pb + ranks, mask=ranks < N_RANKS, other=here).to(tl.int64)
    return tl.max(((there - here) & 15).to(tl.int32), 0) == 0


@triton.jit
def _moved(ptr, r, pb, rank):
    """translate(ptr, r, pb, rank) with its difference known to be a multiple of 16 bytes (an
    aligned() table's)."""
    delta = tl.load(pb + r).to(tl.int64) - tl.load(pb + rank).to(tl.int64)
    byte_ptr = ptr.to(tl.pointer_type(tl.int8), bitcast=True)
    return (byte_ptr + tl.multiple_of(delta, 16)).to(ptr.dtype, bitcast=True)


@triton.jit
def peer_load(ptr, r, pb, rank, mask, HINT: tl.constexpr):
    """tl.load of rank r's copy of ptr (the table pb); HINT: pb is aligned()."""
    if VALIDATE:
        v = _checked_load(ptr, r, pb, rank, mask=mask)
    elif HINT:
        v = tl.load(_moved(ptr, r, pb, rank), mask=mask)
    else:
        v = tl.load(translate(ptr, r, pb, rank), mask=mask)
    return v


@triton.jit
def peer_store(ptr, value, r, pb, rank, mask, HINT: tl.constexpr):
    """tl.store into rank r's copy of ptr (the table pb); HINT: pb is aligned()."""
    if VALIDATE:
        _checked_store(ptr, value, r, pb, rank, mask=mask)
    elif HINT:
        tl.store(_moved(ptr, r, pb, rank), value, mask=mask)
    else:
        tl.store(translate(ptr, r, pb, rank), value, mask=mask)


@triton.jit
def _combine(acc, v, OP: tl.constexpr):
    if OP == "max":
        return tl.maximum(acc, v)
    elif OP == "min":
        return tl.minimum(acc, v)
    else:
        return acc + v


@triton.jit
def _wide(v):
    """v as it accumulates, as the C collectives': f32 for 16-bit floating point, its own type
    otherwise (f64 summed in f32 lost its low bits)."""
    if v.dtype.is_floating() and v.dtype.primitive_bitwidth < 32:
        return v.to(tl.float32)
    else:
        return v


@triton.jit
def _reduce(x, x_pb, offs, mask, team, N_RANKS: tl.constexpr, OP: tl.constexpr,
            HINT: tl.constexpr):
    """Every rank's x[offs] combined in rank order from rank 0, wide (team_reduce_tile)."""
    acc = _wide(peer_load(x + offs, 0, x_pb, team.rank, mask, HINT))
    for r in tl.static_range(1, N_RANKS):
        acc = _combine(acc, _wide(peer_load(x + offs, r, x_pb, team.rank, mask, HINT)), OP)
    return acc


@triton.jit
def _gather(src, x_pb, out, count, mask, team, N_RANKS: tl.constexpr, HINT: tl.constexpr,
            shift=0):
    """out[r * count] = rank r's src, every r (out any memory); shift: rank r's src lies
    (r - rank) * shift elements from this rank's (an all-gather in place: count, and this
    rank's own part is where it stays)."""
    for r in tl.static_range(N_RANKS):
        v = peer_load(src + (r - team.rank) * shift, r, x_pb, team.rank, mask, HINT)
        tl.store(out + r * count, v, mask=mask & ((r != team.rank) | (shift == 0)))
