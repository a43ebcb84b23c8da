# SPDX-License-Identifier: MIT
"""Collectives written in Triton on symaddr.triton's device functions alone, over any
provider's memory, synchronised on the device: no host call before or after a kernel, so a
stream of calls runs back to back and a CUDA graph replays them. Each is a host function that
launches one kernel (allreduce(ctx, x, out, op, algo), reduce_scatter, allgather, alltoall,
broadcast) made of the blocks a user's own kernel calls (symaddr.triton.team:
team_allreduce_oneshot, team_allreduce_twoshot, team_reduce_scatter, team_allgather,
team_alltoall, team_broadcast, between team_begin and team_end). A kernel takes at most
team_programs(ctx) programs, so that every program of every rank sharing the GPU is resident
at once, each taking tiles of `block` (growing to BLOCK_MAX for large calls) in turn."""
import triton
import triton.language as tl

from symaddr._arrays import HostArray
from symaddr._arrays import address as _address
from symaddr._comm import mpi_op_name as _mpi_op_name
from symaddr._comm import contiguous as _contiguous
from symaddr._comm import count_of as _count
from symaddr._lib import error as _err
from symaddr._lib import index_of as _index_of
from symaddr.triton._checks import (BLOCK_MAX, _checked, _itemsize, _movable, _parts,
                                    _peer_bases, _reducible)
from symaddr.triton.team import (LAMPORT_SLOT, MAX_BLOCKS, call_ident, team_allgather,
                                 team_allreduce_lamport, team_allreduce_oneshot,
                                 team_allreduce_twoshot, team_alltoall, team_begin,
                                 team_broadcast, team_end, team_programs,
                                 team_reduce_scatter, twoshot_part)


# ---- one kernel per host function -------------------------------------------------------------

def _allreduce_body(team, x, x_pb, out, out_pb, n, rounds, ident: tl.int64,
                    N_RANKS: tl.constexpr, BLOCK: tl.constexpr, OP: tl.constexpr,
                    TWO_SHOT: tl.constexpr):
    first = team_begin(team)
    if TWO_SHOT:  # the program's tiles in one call (the block loops over them)
        team_allreduce_twoshot(team, first, x, x_pb, out, out_pb, tl.program_id(0), n, N_RANKS,
                               BLOCK, OP, ident, rounds)
        team_end(team, first)
    else:
        # A tile a round, each a call of the sync area (see _grid). A while loop, not
        # range(0, rounds): Triton 3.6's interpreter takes a runtime bound's index as int() of
        # a 1-element array, which NumPy 2.4 refuses (TypeError; triton-lang/triton#9171)
        r = 0
        while r < rounds:
            offs = (tl.program_id(0) + r * tl.num_programs(0)) * BLOCK + tl.arange(0, BLOCK)
            team_allreduce_oneshot(team, first + r, x, x_pb, out, offs, offs < n, N_RANKS, OP,
                                   ident)
            r += 1
        team_end(team, first + rounds - 1)


# Each kernel twice: Triton's JIT specialises the runtime arguments (a pointer's alignment lets
# it vectorise), and calls of at most SMALL_BYTES a rank, where the launch is most of the time,
# take them unspecialised (Triton's tuples are, and the Team's are fixed per Team): the kernel
# Triton compiled for one such call fits every later call of the same dtypes and constexprs
# (their integers fit an i32; the identity is an i64), and _launch starts it without Triton's
# binder.
SMALL_BYTES = 64 * 1024
# The Lamport one-shot's tiles: LAMPORT_TILE bytes a program (on an H100 at 8 ranks, 64 KiB of
# f32 took 8.1 us a call graph-replayed in 32 tiles of 2 KiB, 11.5 in 64 of 1 KiB), larger
# where team_programs has too few programs for them (_lamport_grid), to LAMPORT_SLOT bytes and
# LAMPORT_WORDS elements of all ranks, which bound the call (_lamport_bytes): the ranks' tiles
# are held in registers, and with 64 programs of 8192 words (8 ranks' 4 KiB f32 tiles, or 2 KiB
# bf16 ones) an H100 could not hold every rank's programs at once, which waited until the
# timeout
LAMPORT_TILE = 2048
LAMPORT_WORDS = 4096
_allreduce_kernel = triton.jit(_allreduce_body)
_allreduce_small = triton.jit(
    do_not_specialize=["x", "x_pb", "out", "out_pb", "n", "rounds", "ident"])(_allreduce_body)


@triton.jit(do_not_specialize=["x", "out", "n", "rounds", "ident"])
def _lamport_kernel(team, x, out, n: tl.int32, rounds: tl.int32, ident: tl.int64,
                    N_RANKS: tl.constexpr, BLOCK: tl.constexpr, OP: tl.constexpr,
                    ROUNDS: tl.constexpr):
    call = team_begin(team)
    if ROUNDS:  # more tiles than programs: a tile a round, each a call (_lamport_grid)
        r = 0
        while r < rounds:  # not range(0, rounds): see _allreduce_body
            at = r * tl.num_programs(0) * BLOCK
            team_allreduce_lamport(team, call + r, x + at, out + at, n - at, N_RANKS, BLOCK,
                                   OP, ident)
            r += 1
        team_end(team, call + rounds - 1)
    else:  # one tile a program, without the loop: on an H200 the loop cost 0.3-1 us replayed
        team_allreduce_lamport(team, call, x, out, n, N_RANKS, BLOCK, OP, ident)
        team_end(team, call)


def _move_body(team, x, x_pb, out, count, root, rounds, ident: tl.int64, shift,
               N_RANKS: tl.constexpr, BLOCK: tl.constexpr, KIND: tl.constexpr,
               OP: tl.constexpr):
    first = team_begin(team)
    r = 0
    while r < rounds:  # a tile a round (see _grid); not range(0, rounds): see _allreduce_body
        call = first + r
        offs = (tl.program_id(0) + r * tl.num_programs(0)) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < count
        if KIND == "reduce_scatter":
            team_reduce_scatter(team, call, x, x_pb, out, count, offs, mask, N_RANKS, OP, ident)
        elif KIND == "allgather":
            team_allgather(team, call, x, x_pb, out, count, offs, mask, N_RANKS, ident, shift)
        elif KIND == "alltoall":
            team_alltoall(team, call, x, x_pb, out, count, offs, mask, N_RANKS, ident)
        else:
            team_broadcast(team, call, x, x_pb, out, root, offs, mask, N_RANKS, ident)
        r += 1
    team_end(team, first + rounds - 1)


_move_kernel = triton.jit(_move_body)
_move_small = triton.jit(
    do_not_specialize=["x", "x_pb", "out", "count", "root", "rounds", "ident", "shift"])(
        _move_body)


def _cdiv(a, b):
    return -(-a // b)


def _pow2(n):
    """The least power of two at or above n (n >= 1)."""
    return 1 << (n - 1).bit_length()


def _grid(ctx, n, block):
    """(programs,), their block and the tiles each takes (rounds) for n elements: at most
    team_programs(ctx) programs, because a barrier waits for the same program of every peer,
    and one that cannot be scheduled while the others wait is reached only at the timeout (8
    ranks on one H200: a 2 MiB call took 64 programs, the calls after it read wrong data).
    The block grows from `block` to BLOCK_MAX first, then the rounds. Plain integers
    (triton.cdiv and next_power_of_2 are jit functions: a few us a call from Python)."""
    n = max(n, 1)
    if type(block) is not int:  # checked by _checked: NumPy's integers too
        block = _index_of(block)
    cap = team_programs(ctx, _cdiv(n, block))
    block = max(block, min(BLOCK_MAX, _pow2(_cdiv(n, cap))))
    programs = min(_cdiv(n, block), cap)
    return (programs,), block, _cdiv(_cdiv(n, block), programs)


def _lamport_tile(ranks, itemsize):
    """The Lamport one-shot's tile (elements a program, a power of two) of its largest calls at
    `ranks` ranks: a slot, and LAMPORT_WORDS of all ranks."""
    words = 1 << ((LAMPORT_WORDS // ranks).bit_length() - 1)
    return min(LAMPORT_SLOT // itemsize, words)


def _lamport_bytes(ranks, itemsize):
    """The most bytes a rank the Lamport one-shot takes: MAX_BLOCKS of its largest tiles,
    one round where the GPU has room for them: at 8 ranks 128 KiB of f32 and 64 KiB of bf16
    or f16, at 2 ranks 256 KiB."""
    return MAX_BLOCKS * _lamport_tile(ranks, itemsize) * itemsize


def _lamport_grid(ctx, n, itemsize):
    """The Lamport one-shot's tile (elements a program), (programs,) and the tiles each takes
    (rounds) for n elements: at most team_programs(ctx) programs as _grid, though 4 a
    multiprocessor (its programs are small), of LAMPORT_TILE bytes while there are programs
    for them, else larger, to _lamport_tile's where that is larger, then rounds (on an H100 at
    8 ranks, before the tiles moved in 16-byte vectors, 128 KiB of f32 took 14.8 us a call
    graph-replayed in 64 tiles of 2 KiB, 20.5 in two rounds of 1 KiB tiles)."""
    n = max(n, 1)
    block = min(LAMPORT_TILE // itemsize, _pow2(n))  # within a slot: LAMPORT_SLOT is larger
    programs = team_programs(ctx, _cdiv(n, block), per_sm=4)
    block = max(block, min(_lamport_tile(ctx.size, itemsize),
                           _pow2(_cdiv(n, programs))))
    tiles = _cdiv(n, block)
    return block, (min(programs, tiles),), _cdiv(tiles, programs)


def _lamport_warps(block, itemsize):
    """The Lamport one-shot's warps for tiles of `block` elements: one 16-byte vector of each
    rank's tile a thread, so that the reduction over the ranks stays in each thread. On an
    H100 at 8 ranks, graph-replayed, 32 B took 3.99 us a call in one warp where four took 4.58
    (Triton's default, whose threads shared a tile's ranks), 32 KiB 7.19 in two where four
    took 9.24 (both in 16-byte vectors)."""
    return max(1, min(16, block * itemsize // 512))


def _warps(block):
    """The warps of a program of `block` elements: 16 elements a thread, 4 to 16 warps. On an
    H200 at 8 ranks, 4 MiB calls (blocks of 8192, 16 programs) took 1.7x (two-shot) and 1.3x
    (all-gather) longer with Triton's default of 4."""
    return max(4, min(16, block // 512))


SPECIALISED = ("specialised",)  # _launch's key of a kernel whose runtime arguments Triton
# specialises


def _launch(ctx, kernel, grid, key, args, num_warps=4):
    """kernel[grid](*args) (args: every parameter in order, the constexprs' values last; its
    num_warps follows from BLOCK, so a key's kernel keeps its warps). key: what the kernel
    Triton compiles for one call depends on beyond the device, so that every later call of
    the key can take it: the tensors' dtypes and the constexprs where Triton specialises no
    runtime argument (the *_small kernels, the Lamport one), SPECIALISED where it does (the
    key is then _specialised(args), on NVIDIA GPUs; the device: Triton launches on the
    current one). After a key's first launch through Triton's JIT the kernel it compiled is
    started directly on the current device's current stream (its launcher, or
    CompiledKernel[grid] where a launch hook is set), about a third of the host time of a
    launch through Triton's JIT (python -m symaddr.bench launch; doc/performance.md). Under
    the interpreter, and for key None, every call goes through the JIT."""
    ctx._open()  # a closed or broken context launches nothing (its failed calls raised)
    if key is SPECIALISED:  # AMD's Triton specialises a tensor's size too: the JIT there
        key = _specialised(args) if ctx.backend == "cuda" else None
    if ctx.backend == "cpu" or key is None:
        kernel[grid](*args, num_warps=num_warps)
        return
    import torch
    device = torch._C._cuda_getDevice()  # torch.cuda.current_device() less its lazy init
    key = (device, kernel) + key
    compiled = ctx._plans.get(key)
    if compiled is not None:
        grid = grid + (1,) * (3 - len(grid))
        stream = torch._C._cuda_getCurrentRawStream(device)
        if _HOOKS and not (_HOOKS.launch_enter_hook.calls or _HOOKS.launch_exit_hook.calls):
            compiled.run(grid[0], grid[1], grid[2], stream, compiled.function,
                         compiled.packed_metadata, None, None, None, *args)
        else:  # its runner calls Triton's launch hooks (a profiler's) as the JIT's does
            compiled[grid](*args, stream=stream)
        return
    compiled = kernel[grid](*args, num_warps=num_warps)
    if isinstance(compiled, _CompiledKernel):
        ctx._plans[key] = compiled


try:
    from triton.compiler import CompiledKernel as _CompiledKernel
except ImportError:  # a Triton without it: every call through the JIT
    _CompiledKernel = ()
# Triton 3.6's launch hooks, where none is set a kept kernel's launcher is called directly:
# CompiledKernel[grid] makes a runner, launch metadata and two calls of the (empty) hook
# chains each launch. Another Triton's launcher may take other arguments: its runner then.
try:
    from triton import knobs as _knobs
    _HOOKS = _knobs.runtime if triton.__version__.split(".")[:2] == ["3", "6"] else None
except ImportError:
    _HOOKS = None


def _specialised(args):
    """The key of what Triton 3.6's JIT specialises a kernel on among args (native_specialize_
    impl on NVIDIA GPUs): a tensor's dtype and 16-byte alignment, an integer's type (i32,
    i64, u64), whether it is 1 and whether 16 divides it; other values (the constexprs) as
    they are. A kernel compiled for one call fits every call of an equal key (the key tells
    apart at least what Triton's does)."""
    key = []
    for a in args:
        if type(a) is int:
            key.append((a == 1, a % 16 == 0, -2**31 <= a < 2**31, a < 2**63))
        elif isinstance(a, tuple):  # the Team: Triton flattens it
            key.append(_specialised(a))
        elif hasattr(a, "data_ptr"):
            key.append((a.dtype, a.data_ptr() % 16 == 0))
        else:
            key.append(a)
    return tuple(key)


_OPS = ("sum", "max", "min")


def _op_name(op, call):
    """op ("sum", "max", "min", or mpi4py's MPI.SUM, MPI.MAX, MPI.MIN, as Context's
    collectives take them) by its name, which the call's identity hashes: ranks that pass
    "sum" and MPI.SUM make one call."""
    name = op if type(op) is str else _mpi_op_name(op)
    if name in _OPS:
        return name
    raise _err("SYMADDR_ERR_INVALID_ARG", "%s: op %r: pass \"sum\", \"max\" or \"min\" (or "
               "mpi4py's MPI.SUM, MPI.MAX, MPI.MIN)" % (call, op))


def _op(name):
    """The blocks' OP of an op's name: None for the sum."""
    return None if name == "sum" else name


def _arg(a):
    """a as a kernel argument: a plain NumPy array as a view that Triton's interpreter takes
    (symaddr's HostArray); tensors and symaddr's arrays as they are."""
    if HostArray is not None and type(a).__name__ == "ndarray":
        return a.view(HostArray)
    return a


def _lamport_fits(x, n, ranks):
    """Whether the Lamport one-shot takes x of n elements at `ranks` ranks: 16- or 32-bit
    floating point of at most _lamport_bytes."""
    kind = getattr(x.dtype, "kind", None)  # NumPy's (ml_dtypes' bfloat16 is a kind "V")
    if kind is None:
        floating = x.dtype.is_floating_point
    else:
        floating = kind == "f" or str(x.dtype) == "bfloat16"
    size = _itemsize(x)
    return floating and size <= 4 and n * size <= _lamport_bytes(ranks, size)


ALGOS = ("auto", "lamport", "oneshot", "twoshot")


def allreduce(ctx, x, out=None, op="sum", algo="auto", block=1024):
    """out = the reduction over ranks of x (op "sum", "max", "min", or mpi4py's MPI.SUM,
    MPI.MAX, MPI.MIN), in one kernel with no host barrier. algo
    "lamport": 16- or 32-bit floating point of at most 64 to 256 KiB, by the ranks and dtype
    (_lamport_bytes: 128 KiB of f32 at 8 ranks, 256 KiB at 2), x and out any memory (out may
    be x), no barrier (the data marks its own arrival); "oneshot": x symmetric (any
    provider), out any memory apart from x (default a new array), two barriers; "twoshot": x
    and out symmetric (any provider; out = x, in place, or apart from it; no default), two
    barriers, each element read and written twice a rank where the one-shot reads it once
    from every rank;
    "auto" (the default): "lamport" where it takes x, else "twoshot" in place (out = x), else
    "oneshot" (which a rank takes whatever memory its out is, so that ranks passing different
    kinds of out make one call). From about 1 MiB an out-of-place call with a symmetric out is
    faster as "twoshot" (on one H200, 8 ranks, 64 MiB: 308 against 1317 us). Returns out."""
    call = "symaddr.triton.collectives.allreduce"
    _contiguous(x, call, "x")
    n = _count(x)
    op = _op_name(op, call)
    plan = None
    if algo == "auto" or algo == "lamport":  # (an algo that is no key is not one of them)
        plan = ctx._calls.get((n, x.dtype, op, algo))
    if plan is not None:  # a Lamport call of this count, dtype, op and algo went before
        out = _checked(ctx, call, x, out, n, block, x_at=0, hint="out = x")
        grid, rounds, ident, tail, warps = plan
        args = (ctx.team(), _arg(x), _arg(out), n, rounds, ident) + tail
        _launch(ctx, _lamport_kernel, grid, (x.dtype, out.dtype) + tail, args, warps)
        return out
    # a barrier call over the same arrays went before: its plan holds their registrations'
    # tables and the call's identity until a registration starts or ends (Context forgets
    # its plans then: a freed x is refused by the call that follows, through _peer_bases)
    key = None
    if algo in ALGOS and type(block) is int:
        key = (n, x.dtype, op, algo, block, _address(x, call, "x"),
               None if out is None else _address(out, call, "out"))
        plan = ctx._calls.get(key)
        if plan is not None:
            out = _checked(ctx, call, x, out, n, block, x_at=plan[-2], hint=plan[-1])
            return _allreduce_start(ctx, x, out, n, plan)
    if algo not in ALGOS:
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: algo %r: pass one of %s" % (
            call, algo, ", ".join('"%s"' % a for a in ALGOS)))
    _reducible(ctx, call, x)
    fits, requested = _lamport_fits(x, n, ctx.size), algo
    same = out is not None and (out is x or _address(out, call, "out") == _address(x, call, "x"))
    if algo == "auto":
        algo = "lamport" if fits else "twoshot" if same else "oneshot"
    elif algo == "twoshot" and out is None:  # a new array would be plain memory
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: algo=\"twoshot\" writes a symmetric out, "
                   "which out=None (a new plain array) is not: pass out=x (in place) or a "
                   "symmetric array apart from x (ctx.allocate_symmetric())" % call)
    elif algo == "lamport" and not fits:
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: algo \"lamport\" takes 16- or 32-bit "
                   "floating point of at most %d bytes (%d elements of %s here): use "
                   "\"oneshot\" or \"twoshot\"" % (
                       call, _lamport_bytes(ctx.size, _itemsize(x)), n, x.dtype))
    # in place: the Lamport's peers never read x; the two-shot's read a rank's part of it only
    # before that rank writes it
    in_place = algo in ("lamport", "twoshot")
    x_at = 0 if in_place else None
    hint = "out = x" if in_place else " (out = x itself: algo=\"twoshot\"%s)" % (
        ", or \"lamport\"" if fits else "")
    out = _checked(ctx, call, x, out, n, block, x_at=x_at, hint=hint)
    ctx.team()  # made (collective) before a plan is kept: its sync area's registration
    # would forget the plan
    if algo == "lamport":
        block, grid, rounds = _lamport_grid(ctx, n, _itemsize(x))
        tail = (ctx.size, block, _op(op), rounds > 1)  # the constexprs
        ident = call_ident("allreduce", n, x.dtype, op)  # x and out are each rank's own
        args = (ctx.team(), _arg(x), _arg(out), n, rounds, ident) + tail
        warps = _lamport_warps(block, _itemsize(x))
        _launch(ctx, _lamport_kernel, grid, (x.dtype, out.dtype) + tail, args, warps)
        _keep(ctx, (n, x.dtype, op, requested), (grid, rounds, ident, tail, warps))
        return out
    two, at = algo == "twoshot", []
    out_pb = (_peer_bases(ctx, call, out, "out", "the two-shot's peers read their part of "
                          "the result from it", at) if two else None)
    grid, block, rounds = _grid(ctx, twoshot_part(n, ctx.size) if two else n, block)
    x_pb = _peer_bases(ctx, call, x, "x", "the peers read it" + (
        "; algo=\"lamport\" takes any memory" if fits else ""), at)
    # the kernel adds the algorithm; a two-shot in place writes the peers' x, one apart their
    # out: ranks that differ would each miss the other's part, so they make different calls;
    # so do ranks whose x (or two-shot out) is another registration, or elsewhere in it
    ident = call_ident("allreduce in place" if two and same else "allreduce", n, x.dtype, op,
                       where=at)
    plan = (grid, x_pb, out_pb, rounds, ident, (ctx.size, block, _op(op), two), x_at, hint)
    if key is not None:
        _keep(ctx, key, plan)
    return _allreduce_start(ctx, x, out, n, plan)


def _allreduce_start(ctx, x, out, n, plan):
    """The barrier allreduce's launch for its plan (allreduce's): out (checked) = the
    reduction of x. Returns out."""
    grid, x_pb, out_pb, rounds, ident, tail = plan[:6]
    team = ctx.team()
    out_pb = team.sync_pb if out_pb is None else out_pb  # the one-shot's: any out
    args = (team, _arg(x), x_pb, _arg(out), out_pb, n, rounds, ident) + tail
    if n * _itemsize(x) <= SMALL_BYTES:
        _launch(ctx, _allreduce_small, grid, (x.dtype, x_pb.dtype, out.dtype, out_pb.dtype)
                + tail, args, _warps(tail[1]))
    else:
        _launch(ctx, _allreduce_kernel, grid, SPECIALISED, args, _warps(tail[1]))
    return out


def _move(ctx, kind, x, out, count, root=0, op="sum", block=1024, shift=0):
    call = "symaddr.triton.collectives." + kind
    key = (kind, count, x.dtype, op, root, block, shift, _address(x, call, "x"))
    plan = ctx._calls.get(key)  # a call over the same x went before (as allreduce's)
    if plan is None:
        ctx.team()  # (as allreduce's)
        grid, block, rounds = _grid(ctx, count, block)
        where = []
        x_pb = _peer_bases(ctx, call, x, "x", "the peers read it", where)
        if shift:  # x is this rank's part of out: where out starts agrees
            where[1] -= ctx.rank * shift * _itemsize(x)
        # in place, an all-gather reads a peer's part where that peer's own lies: ranks that
        # differ would read each other's wrong parts, so they make different calls; so do
        # ranks whose x is another registration, or elsewhere in it
        ident = call_ident(kind + (" in place" if shift else ""), count, x.dtype, op, root,
                           where=where)
        plan = _keep(ctx, key, (grid, block, rounds, x_pb, ident))
    grid, block, rounds, x_pb, ident = plan
    args = (ctx.team(), _arg(x), x_pb, _arg(out), count, root, rounds, ident, shift, ctx.size,
            block, kind, _op(op))
    if count * _itemsize(x) <= SMALL_BYTES:
        _launch(ctx, _move_small, grid, (x.dtype, x_pb.dtype, out.dtype) + args[9:], args,
                _warps(block))
    else:
        _launch(ctx, _move_kernel, grid, SPECIALISED, args, _warps(block))
    return out


def _keep(ctx, key, plan):
    """plan, kept in ctx._calls under key for the calls like this one. Returns plan."""
    if len(ctx._calls) > 4096:  # a program's few counts and arrays, or many: then start over
        ctx._calls.clear()
    ctx._calls[key] = plan
    return plan


def reduce_scatter(ctx, x, out=None, op="sum", block=1024):
    """out (any memory, n / size elements) = the reduction over ranks (op as allreduce's) of
    their part x[rank * n / size:] of x (symmetric, n a multiple of the size). In place: out is
    that part of x itself (a rank's part is read only by the rank that writes it, reads first).
    One kernel, no host barrier. Returns out."""
    call = "symaddr.triton.collectives.reduce_scatter"
    count = _parts(ctx, call, _contiguous(x, call, "x"))
    _reducible(ctx, call, x)
    op = _op_name(op, call)
    out = _checked(ctx, call, x, out, count, block, x_at=-ctx.rank * count,
                   hint="out = x[rank * n / size:(rank + 1) * n / size]")
    return _move(ctx, "reduce_scatter", x, out, count, op=op, block=block)


def allgather(ctx, x, out=None, block=1024):
    """out[r * n:(r + 1) * n] (any memory) = rank r's x (symmetric, n elements). In place, x
    is this rank's part of out on every rank, out[rank * n:(rank + 1) * n], as torch's
    all_gather_into_tensor takes it (out then symmetric: x's allocation holds it). One
    kernel, no host barrier. Returns out."""
    call = "symaddr.triton.collectives.allgather"
    count = _count(_contiguous(x, call, "x"))
    _movable(call, x)
    hint = "x = out[rank * n:(rank + 1) * n]"
    out = _checked(ctx, call, x, out, ctx.size * count, block, x_at=ctx.rank * count,
                   hint=hint)
    shift, to = 0, _address(out, call, "out")
    if to + ctx.rank * count * _itemsize(x) == _address(x, call, "x"):
        m = ctx.get_symmetric_address_map(x)  # the peers' parts are read where they lie
        lo = to - m.allocation_base
        if lo < 0 or lo + _itemsize(x) * ctx.size * count > m.allocation_bytes:
            raise _err("SYMADDR_ERR_INVALID_ARG", "%s: in place (%s), out must lie in x's "
                       "symmetric allocation, which the peers read it through" % (call, hint))
        shift = count
    return _move(ctx, "allgather", x, out, count, block=block, shift=shift)


def alltoall(ctx, x, out=None, block=1024):
    """out[r * c:(r + 1) * c] (any memory) = rank r's x[rank * c:(rank + 1) * c] (x symmetric,
    size * c elements). One kernel, no host barrier. Returns out."""
    call = "symaddr.triton.collectives.alltoall"
    count = _parts(ctx, call, _contiguous(x, call, "x"))
    _movable(call, x)
    return _move(ctx, "alltoall", x, _checked(ctx, call, x, out, _count(x), block), count,
                 block=block)


def broadcast(ctx, x, out=None, root=0, block=1024):
    """out (any memory, or x itself: in place, as torch's broadcast) = rank root's x
    (symmetric). One kernel, no host barrier."""
    call = "symaddr.triton.collectives.broadcast"
    count = _count(_contiguous(x, call, "x"))
    _movable(call, x)
    root = ctx._root(root, call)
    return _move(ctx, "broadcast", x, _checked(ctx, call, x, out, count, block, x_at=0,
                                               hint="out = x"), count, root=root, block=block)


def oneshot_allreduce(ctx, x, out, block=1024):
    """allreduce(ctx, x, out, "sum", "oneshot"): the name of the first version."""
    return allreduce(ctx, x, out, algo="oneshot", block=block)
