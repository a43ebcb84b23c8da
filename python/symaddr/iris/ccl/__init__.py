# SPDX-License-Identifier: MIT
"""Iris's collectives (`shmem.ccl`, `from iris.ccl import Config, ReduceOp`) on symaddr's:
all_reduce, reduce_scatter, all_gather, all_to_all, reduce, gather, scatter, broadcast, barrier.

Each call takes Iris's arguments, order and defaults, and runs a collective of symaddr's.
Inputs may be any tensors on the device, as Iris's newer ccl takes them: symmetric memory is
read where it lies; another tensor is first copied into the context's staging workspace
(stream-ordered; made at the first eager call of a size, so that a CUDA graph captures later
calls with no allocation; the ranks pass inputs of one kind).
- the host collectives of symaddr.Context (C kernels, symaddr_allreduce and its kin) by
  default: every op ("sum", "prod", "min", "max", "avg"), every dtype they take, tensors of any
  provider (heap, ipc, vmm, an import; Iris's take heap tensors only), and captured by a CUDA
  graph like any stream-ordered call (Iris's do not capture);
- symaddr.triton.collectives' Triton kernels where a Config names a variant that has one
  (below).

Iris's all_reduce variants, and what each runs here:
    "atomic" (Iris's default), "spinlock": the host allreduce with the library's own choice
        of algorithm (Lamport, LL, one-shot or two-shot by size); symaddr has no kernel that
        accumulates by atomics or under a lock, and these are its fastest.
    "one_shot": symaddr.triton.collectives.allreduce(algo="oneshot"); in place (output is
        input), "twoshot", which works in place.
    "two_shot": algo="twoshot" (output symmetric; else "oneshot", which writes any memory).
    "ring": the nearest, "twoshot" (a reduce-scatter pass and an all-gather pass, as a ring's,
        in two steps instead of 2 (n - 1)).
Iris's reduce variants ("one_shot", "two_shot", "ring", "two_phase") each run symaddr's
reduce. Iris's all_gather variants ("persistent", "partitioned", "ring", "pull") each run symaddr's
allgather, checked as Iris checks them ("partitioned": comm_sms divisible by the world size);
"tdm", its Gluon kernel's, raises NotImplementedError.
A variant's Triton kernels reduce "sum", "min" and "max"; "prod" and "avg", and a staged
(plain) input, run the host allreduce whatever the variant. all_reduce_distribution, block sizes, comm_sms, swizzle_size
and the ring settings are Iris's kernel tuning: they are checked as Iris checks them and do not
change symaddr's results. use_gluon=True raises NotImplementedError (symaddr has no Gluon
kernels: use_gluon=False runs symaddr's).

async_op=False waits for the result on the current stream (as Iris's barrier at the end); True
returns at once, stream-ordered. Neither synchronises while the stream is being captured, so a
call with a workspace made before capture replays from a CUDA graph with no host step. group:
None or a torch.distributed group of every rank of the context, which run symaddr's
collectives; or, for all_reduce, reduce_scatter, all_gather and all_to_all, a subgroup (a
torch.distributed group of some of the object's ranks, as Iris's process-group tests make
them, torch.distributed initialised before iris.iris()): each member reads the others' inputs
where they lie and reduces or gathers them with torch's ops, between two barriers of the group
(torch.distributed's, on the host: synchronous, not capturable, whatever async_op; every op;
any variant). For the other calls, and for speed, make an Iris object over the subgroup with
iris.iris(heap_size, group=pg), whose calls run symaddr's collectives."""
import enum
import sys
from dataclasses import dataclass
from typing import Any, Optional

import torch  # (symaddr.iris, this package's parent, imports it first)

from symaddr._lib import error as _err
from symaddr._validation import _capturing
from symaddr.triton import collectives as _tcoll

AUTOTUNE = "autotune"  # Iris's marker for a tuned config: symaddr's choice, as the default

_VARIANTS = ("atomic", "ring", "two_shot", "one_shot", "spinlock")
_TRITON_ALGO = {"one_shot": "oneshot", "two_shot": "twoshot", "ring": "twoshot"}
# Iris's all_gather variants ("tdm": its Gluon kernel's); each runs symaddr's allgather
_GATHER_VARIANTS = ("persistent", "partitioned", "ring", "pull", "tdm")
_REDUCE_VARIANTS = ("one_shot", "two_shot", "ring", "two_phase")  # each runs symaddr's reduce


class ReduceOp(enum.Enum):
    """Reductions: Iris's SUM and the others symaddr's collectives take."""
    SUM = "sum"
    PROD = "prod"
    MIN = "min"
    MAX = "max"
    AVG = "avg"


@dataclass
class Config:
    """Iris's collective settings, with its names, defaults and checks. Of these, only
    all_reduce_variant changes what runs (see the module's text); use_gluon=True is refused at
    the call."""
    block_size_m: int = 128
    block_size_n: int = 128
    swizzle_size: int = 6
    comm_sms: int = 64
    num_xcds: Optional[int] = None
    chunk_size: Optional[int] = None
    use_gluon: bool = False
    all_reduce_variant: str = "atomic"
    all_reduce_distribution: int = 0
    all_reduce_num_rings: int = 1
    all_reduce_ring_slice_n: Optional[int] = None
    reduce_scatter_variant: str = "two_shot"
    broadcast_variant: str = "auto"
    all_gather_variant: str = "persistent"
    all_to_all_variant: str = "default"
    reduce_variant: str = "two_shot"
    # Iris's newer kernel tuning (warps, stages, waves, chunking, its barrier's mode): taken
    # and kept, no effect on what symaddr runs
    all_reduce_num_warps: int = 8
    all_reduce_num_stages: int = 1
    all_reduce_waves_per_eu: int = 1
    all_reduce_push_chunk_n: int = 0
    barrier_mode: str = "device"
    num_stages: int = 1
    num_warps: int = 4
    threads_per_warp: Optional[int] = None
    waves_per_eu: int = 0

    def __post_init__(self) -> None:
        if self.num_xcds is None:
            self.num_xcds = 1  # chiplets (XCDs) are AMD's; one elsewhere
        if self.chunk_size is None:
            self.chunk_size = min(self.swizzle_size * self.swizzle_size,
                                  max(self.comm_sms // self.num_xcds, 1))
        for name in ("block_size_m", "block_size_n", "swizzle_size", "comm_sms", "num_xcds",
                     "all_reduce_num_rings"):
            if getattr(self, name) <= 0:
                raise ValueError("%s must be positive, got %r" % (name, getattr(self, name)))
        if self.all_reduce_variant not in _VARIANTS:
            raise ValueError("all_reduce_variant must be one of: %s, got %r" % (
                ", ".join(repr(v) for v in _VARIANTS), self.all_reduce_variant))
        if self.all_reduce_distribution not in (0, 1):
            raise ValueError("all_reduce_distribution must be 0 (striding) or 1 (block), got "
                             "%r" % (self.all_reduce_distribution,))
        if self.all_reduce_ring_slice_n is None:
            self.all_reduce_ring_slice_n = self.block_size_n
        s = self.all_reduce_ring_slice_n
        if s <= 0 or self.block_size_n % s or s & (s - 1):
            raise ValueError("all_reduce_ring_slice_n must be a positive power of two dividing "
                             "block_size_n (%d), got %r" % (self.block_size_n, s))
        if self.all_gather_variant not in _GATHER_VARIANTS:
            raise ValueError("all_gather_variant must be one of: %s, got %r" % (
                ", ".join(repr(v) for v in _GATHER_VARIANTS), self.all_gather_variant))
        if self.reduce_variant not in _REDUCE_VARIANTS:
            raise ValueError("reduce_variant must be one of: %s, got %r" % (
                ", ".join(repr(v) for v in _REDUCE_VARIANTS), self.reduce_variant))
        if self.all_to_all_variant not in ("default", "tdm"):
            raise ValueError("all_to_all_variant must be 'default' or 'tdm' (gluon only), got "
                             "%r" % (self.all_to_all_variant,))
        if self.reduce_scatter_variant not in ("two_shot", "ring_chunked"):
            raise ValueError("reduce_scatter_variant must be 'two_shot' or 'ring_chunked', got "
                             "%r" % (self.reduce_scatter_variant,))


@dataclass
class Workspace:
    """What all_reduce_preamble prepared: the call's shape, dtype and the collective it runs.
    symaddr's collectives keep their own buffers in the context, made at its creation, so a
    workspace holds no memory: passing one (made before a CUDA graph's capture) or not
    changes nothing but the checks skipped."""
    shape: tuple
    dtype: Any
    runs: str  # "host" or a symaddr.triton.collectives algorithm


def _op_name(op: Any) -> str:
    if op is None:
        return "sum"
    if isinstance(op, ReduceOp):
        return op.value
    if isinstance(op, str) and op.lower() in {o.value for o in ReduceOp}:
        return op.lower()
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available():
        for name in ("SUM", "PRODUCT", "MIN", "MAX", "AVG"):
            if op == getattr(dist.ReduceOp, name, None):
                return {"PRODUCT": "prod"}.get(name, name.lower())
    raise ValueError("op=%r: pass a symaddr.iris.ccl.ReduceOp (SUM, PROD, MIN, MAX, AVG), "
                     "torch.distributed.ReduceOp's, or their names" % (op,))


def _global_ranks(ctx: Any) -> Optional[list]:
    """torch.distributed's global rank of each rank of ctx (by ctx's rank), where
    torch.distributed is initialised as the Iris object is made (collective, as that is);
    else None."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    group = getattr(ctx._ranks, "group", None)  # a context over a torch.distributed group
    if group is not None:
        return list(dist.get_process_group_ranks(group))
    comm = getattr(ctx._ranks, "comm", None)  # over MPI: its ranks tell theirs
    return list(comm.allgather(dist.get_rank())) if comm is not None else None


class CCL:
    """shmem.ccl: Iris's collectives over this Iris object's context (see the module)."""

    def __init__(self, iris: Any) -> None:
        self._iris = iris
        self._staging = {}  # (shape, dtype) -> heap tensors of all_to_all's blocks
        self._globals = _global_ranks(iris.context)  # a subgroup's ranks, matched (_members)

    # -- helpers ---------------------------------------------------------------------------
    @property
    def _ctx(self):
        return self._iris.context

    def _group(self, group: Any, call: str) -> None:
        """A call that runs over every rank of the Iris object only: group None, or a group
        of them all; a subgroup raises NotImplementedError naming what takes one."""
        if self._members(group, call) is not None:
            raise NotImplementedError(
                "%s(group=<a subgroup>): symaddr.iris runs all_reduce, reduce_scatter, "
                "all_gather and all_to_all over a subgroup; for this call make an Iris object "
                "over the subgroup, iris.iris(heap_size, group=pg), and call its ccl" % call)

    def _members(self, group: Any, call: str) -> Optional[list]:
        """None for every rank of the Iris object (group None, or a group of them all in
        their order), else the ranks of this object (its context's) in group, in the group's
        order, this rank among them."""
        if group is None:
            return None
        dist = sys.modules.get("torch.distributed")
        try:
            ranks = list(dist.get_process_group_ranks(group))
        except Exception:  # noqa: BLE001  (not a group torch knows)
            raise NotImplementedError(
                "%s(group=%r): pass None or a torch.distributed group (dist.new_group); for "
                "another kind of group make an Iris object over it, iris.iris(heap_size, "
                "group=pg)" % (call, group)) from None
        size = self._ctx.size
        if self._globals is None:
            if ranks == list(range(size)) and dist.get_world_size() == size:
                return None  # torch's world is this object's
            raise NotImplementedError(
                "%s(group=...): torch.distributed was not initialised when this Iris object "
                "was made, so its ranks cannot be matched with the group's: initialise it "
                "first (torch.distributed.init_process_group), then iris.iris()" % call)
        where = {g: i for i, g in enumerate(self._globals)}
        outside = [g for g in ranks if g not in where]
        if outside:
            raise _err("SYMADDR_ERR_INVALID_ARG", "%s: ranks %s of the group are not ranks of "
                       "this Iris object (global ranks %s)" % (call, outside, self._globals))
        members = [where[g] for g in ranks]
        if self._ctx.rank not in members:
            raise _err("SYMADDR_ERR_INVALID_ARG", "%s: this rank (%d) is not in the group %s: "
                       "call it on the group's ranks only" % (call, self._ctx.rank, ranks))
        return None if members == list(range(size)) else members

    def _in_group(self, group: Any, call: str, input_tensor: Any, compute: Any,
                  output: Any) -> None:
        """output = compute(views) over a subgroup, views[r] rank r's input (its peer view):
        read once every member's input is complete (the stream synchronised, then the group's
        torch.distributed barrier), and written to output after a second barrier, when no
        member still reads (output may be the input, in place). Synchronous (async_op is
        moot), and never captured: the barriers are the host's."""
        if _capturing():
            raise _err("SYMADDR_ERR_UNSUPPORTED", "%s(group=<a subgroup>) synchronises the "
                       "group's ranks on the host (torch.distributed.barrier): a CUDA graph "
                       "cannot capture it; capture calls over every rank, or make an Iris "
                       "object over the subgroup, iris.iris(heap_size, group=pg)" % call)
        views = self._iris.peer_views(input_tensor)
        dist = sys.modules["torch.distributed"]
        self._ctx.sync()
        dist.barrier(group=group)
        result = compute(views)
        self._ctx.sync()
        dist.barrier(group=group)
        output.copy_(result)
        self._ctx.sync()

    def _input(self, t: Any, output: Any = None) -> Any:
        """t where it is symmetric memory of the context (contiguous), else its copy in the
        context's staging workspace, past the part a plain output takes there: Iris's newer
        ccl takes any tensor. Stream-ordered, and capturable once an eager call of the same
        sizes made the workspace. The ranks pass inputs of one kind (each stages, or none)."""
        ctx = self._iris._ctx
        p = t.data_ptr()
        if t.is_contiguous() and (ctx._known.get(p) or ctx._lookup(p))[0] == 0:
            return t
        from symaddr import ops
        return ops._staged(ctx, t, 0 if output is None else
                           output.numel() * output.element_size())

    @staticmethod
    def _reduced(parts: list, op: str) -> Any:
        """op over parts (tensors of one shape), elementwise."""
        stacked = torch.stack(parts)
        if op in ("sum", "avg"):
            total = stacked.sum(0)
            return total / len(parts) if op == "avg" else total
        if op == "prod":
            return stacked.prod(0)
        return stacked.amin(0) if op == "min" else stacked.amax(0)

    @staticmethod
    def _config(config: Any, call: str) -> Any:
        if config is None or config is AUTOTUNE:
            return None
        if getattr(config, "use_gluon", False):
            raise NotImplementedError(
                "%s: use_gluon=True: symaddr has no Gluon kernels; pass use_gluon=False (the "
                "default), which runs symaddr's own" % call)
        return config

    def _done(self, async_op: bool) -> None:
        """Iris's end of a synchronous call: the result complete (the stream waited for, and
        a failure any rank met raised), unless the stream is being captured."""
        if async_op:
            return
        if _capturing():
            return
        self._ctx.sync()

    def _same(self, call: str, out: Any, inp: Any) -> None:
        if tuple(out.shape) != tuple(inp.shape) or out.dtype != inp.dtype:
            raise _err("SYMADDR_ERR_INVALID_ARG", "%s: output is %s %s, input %s %s: pass an "
                       "output of input's shape and dtype" % (call, tuple(out.shape), out.dtype,
                                                             tuple(inp.shape), inp.dtype))

    def _plan(self, output: Any, input_tensor: Any, op: str, config: Any) -> str:
        """"host", or the symaddr.triton.collectives algorithm a variant runs."""
        variant = getattr(config, "all_reduce_variant", "atomic")
        algo = _TRITON_ALGO.get(variant)
        if algo is None or op not in ("sum", "min", "max"):
            return "host"
        if output is input_tensor or output.data_ptr() == input_tensor.data_ptr():
            return "twoshot"  # in place: the one-shot writes memory apart from x
        if algo == "twoshot" and not self._iris.is_symmetric(output):
            return "oneshot"
        return algo

    # -- Iris's calls ----------------------------------------------------------------------
    def all_reduce_preamble(self, output_tensor: Any, input_tensor: Any, config: Any = None,
                            workspace: Optional[Workspace] = None) -> Workspace:
        """Check an all_reduce's arguments and say what it will run (a Workspace to pass to
        all_reduce, made before a CUDA graph's capture where the call is captured)."""
        config = self._config(config, "all_reduce_preamble")
        self._same("all_reduce_preamble", output_tensor, input_tensor)
        return Workspace(tuple(input_tensor.shape), input_tensor.dtype,
                         self._plan(output_tensor, input_tensor, "sum", config))

    def all_reduce(self, output_tensor: Any, input_tensor: Any, op: Any = None,
                   group: Any = None, async_op: bool = False, config: Any = None,
                   workspace: Optional[Workspace] = None) -> Optional[Workspace]:
        """output = op over ranks of input (same shape; input any tensor, read where it lies
        when it is symmetric memory of any provider, else staged; output any, or input
        itself). op: ReduceOp.SUM (default), PROD, MIN, MAX, AVG. config's
        all_reduce_variant picks the kernel (see the module). Returns the workspace."""
        if op is None and group is None and config is None:  # Iris's usual call: the host sum
            if output_tensor is not input_tensor and (
                    output_tensor.shape != input_tensor.shape or
                    output_tensor.dtype != input_tensor.dtype):
                self._same("symaddr.iris.ccl.all_reduce", output_tensor, input_tensor)
            ctx = self._iris._ctx
            p = input_tensor.data_ptr()
            if (ctx._known.get(p) or ctx._lookup(p))[0] or not input_tensor.is_contiguous():
                input_tensor = self._input(input_tensor, output_tensor)  # a plain input
            # Context.allreduce's body, called from here: a frame less a call
            ctx._collective("allreduce", input_tensor, output_tensor, "sum", None, None)
            if not async_op:
                self._done(False)
            return workspace
        call = "symaddr.iris.ccl.all_reduce"
        members = self._members(group, call)
        config = self._config(config, call)
        op = _op_name(op)
        self._same(call, output_tensor, input_tensor)
        staged = self._input(input_tensor, output_tensor)
        if members is not None:  # a subgroup: any variant reduces the members' inputs
            self._in_group(group, call, staged,
                           lambda views: self._reduced([views[r] for r in members], op),
                           output_tensor)
            return workspace
        # a staged input (in the workspace, which symaddr.triton's kernels do not take) runs
        # the host allreduce whatever the variant
        runs = self._plan(output_tensor, input_tensor, op, config) \
            if staged is input_tensor else "host"
        input_tensor = staged
        if runs == "host":
            self._ctx.allreduce(input_tensor, output_tensor, op=op)
        else:
            _tcoll.allreduce(self._ctx, input_tensor, output_tensor, op=op, algo=runs)
        self._done(async_op)
        return workspace

    def reduce_scatter(self, output_tensor: Any, input_tensor: Any, op: Any = None,
                       group: Any = None, async_op: bool = False, config: Any = None,
                       workspace: Any = None) -> None:
        """torch's form, output of input's elements over the ranks: output = op over ranks of
        input's part of this rank (reduce_scatter_tensor). Iris's form, output of input's
        shape: every element of output is reduced (Iris reduces the tiles its
        all_reduce_distribution assigns to this rank and leaves the rest unspecified: a
        superset of it)."""
        call = "symaddr.iris.ccl.reduce_scatter"
        members = self._members(group, call)
        self._config(config, call)
        op = _op_name(op)
        input_tensor = self._input(input_tensor, output_tensor)
        if members is not None:  # a subgroup: reduced from the members' inputs
            n, g = output_tensor.numel(), len(members)
            same = tuple(output_tensor.shape) == tuple(input_tensor.shape)
            if not same and input_tensor.numel() != n * g:
                raise _err("SYMADDR_ERR_INVALID_ARG", "%s: input has %d elements, output %d: "
                           "pass an output of input's shape (Iris's form) or of 1/%d of its "
                           "elements (torch's)" % (call, input_tensor.numel(), n, g))
            i = members.index(self._ctx.rank)

            def compute(views):
                full = self._reduced([views[r] for r in members], op)
                return full if same else full.reshape(-1)[i * n:(i + 1) * n]
            self._in_group(group, call, input_tensor, compute, output_tensor.view(-1)
                           if not same else output_tensor)
            return
        if tuple(output_tensor.shape) == tuple(input_tensor.shape):
            self._ctx.allreduce(input_tensor, output_tensor, op=op)
        else:
            self._ctx.reduce_scatter(input_tensor, output_tensor, op=op)
        self._done(async_op)

    def reduce_preamble(self, output_tensor: Any, input_tensor: Any, root: int = 0,
                        config: Any = None, workspace: Optional[Workspace] = None) -> Workspace:
        """Check a reduce's arguments (a Workspace to pass to reduce, made before a CUDA
        graph's capture where the call is captured)."""
        config = self._config(config, "reduce_preamble")
        self._same("reduce_preamble", output_tensor, input_tensor)
        self._ctx._rank_arg(root, "reduce_preamble", "root")
        return Workspace(tuple(input_tensor.shape), input_tensor.dtype, "host")

    def reduce(self, output_tensor: Any, input_tensor: Any, root: int = 0, op: Any = None,
               group: Any = None, async_op: bool = False, config: Any = None,
               workspace: Optional[Workspace] = None) -> Optional[Workspace]:
        """output on root = op over ranks of input (same shape; input any tensor, staged
        unless symmetric memory of any provider; output any); on the other ranks output =
        their input, as torch.distributed.reduce leaves a non-root's tensor (Iris's newer
        tests expect it; RCCL leaves it unspecified). Every reduce_variant runs symaddr's
        reduce; op as all_reduce's."""
        call = "symaddr.iris.ccl.reduce"
        self._group(group, call)
        self._config(config, call)
        self._same(call, output_tensor, input_tensor)
        self._ctx.reduce(self._input(input_tensor, output_tensor), output_tensor,
                         op=_op_name(op), root=root)
        if self._ctx.rank != root and output_tensor.data_ptr() != input_tensor.data_ptr():
            output_tensor.copy_(input_tensor)  # stream-ordered, after the reduce read input
        self._done(async_op)
        return workspace

    def gather(self, output_tensor: Any, input_tensor: Any, dst: int = 0, group: Any = None,
               async_op: bool = False, config: Any = None) -> None:
        """output (world * M, ...) on dst = every rank's input (M, ...) in rank order, along
        dimension 0; other ranks' output is left as it was. input any tensor (staged unless
        symmetric, any provider), output any."""
        call = "symaddr.iris.ccl.gather"
        self._group(group, call)
        self._config(config, call)
        self._ctx.gather(self._input(input_tensor, output_tensor), output_tensor, root=dst)
        self._done(async_op)

    def scatter(self, output_tensor: Any, input_tensor: Any, src: int = 0, group: Any = None,
                async_op: bool = False, config: Any = None) -> None:
        """output (M, ...) on rank r = rows [r * M, (r + 1) * M) of src's input (world * M,
        ...), which every rank allocates alike (symmetric memory, any provider; only src's
        is read). output any."""
        call = "symaddr.iris.ccl.scatter"
        self._group(group, call)
        self._config(config, call)
        self._ctx.scatter(self._input(input_tensor, output_tensor), output_tensor, root=src)
        self._done(async_op)

    def all_gather_preamble(self, output_tensor: Any, input_tensor: Any, config: Any = None,
                            workspace: Optional[Workspace] = None) -> Workspace:
        """Check an all_gather's arguments (a Workspace to pass to all_gather, made before a
        CUDA graph's capture where the call is captured; symaddr's allgather keeps its own
        buffers, so it holds none)."""
        call = "all_gather_preamble"
        config = self._config(config, call)
        self._gather_shapes(call, output_tensor, input_tensor, self._ctx.size)
        return Workspace(tuple(input_tensor.shape), input_tensor.dtype, "host")

    @staticmethod
    def _gather_shapes(call: str, output: Any, inp: Any, world: int) -> None:
        if output.numel() != inp.numel() * world or output.dtype != inp.dtype:
            raise _err("SYMADDR_ERR_INVALID_ARG", "%s: output %s %s, input %s %s: pass an "
                       "output of %d times input's rows, of its dtype" % (
                           call, tuple(output.shape), output.dtype, tuple(inp.shape),
                           inp.dtype, world))

    def all_gather(self, output_tensor: Any, input_tensor: Any, group: Any = None,
                   async_op: bool = False, config: Any = None,
                   workspace: Optional[Workspace] = None) -> Optional[Workspace]:
        """output (world * M, ...) = every rank's input (M, ...) in rank order, along dimension
        0 (torch's all_gather_into_tensor). input any tensor (staged unless symmetric, any
        provider), output any.
        Returns the workspace (all_gather_preamble's, which changes nothing here)."""
        call = "symaddr.iris.ccl.all_gather"
        members = self._members(group, call)
        config = self._config(config, call)
        variant = getattr(config, "all_gather_variant", "persistent")
        if variant == "tdm":
            raise NotImplementedError("%s: all_gather_variant='tdm' is Iris's Gluon kernel; "
                                      "symaddr has no Gluon kernels: pass 'persistent' (any "
                                      "variant runs symaddr's allgather)" % call)
        if variant == "partitioned" and config.comm_sms % self._ctx.size:
            raise ValueError("comm_sms (%d) must be divisible by world_size (%d) for the "
                             "partitioned all_gather" % (config.comm_sms, self._ctx.size))
        input_tensor = self._input(input_tensor, output_tensor)
        if members is not None:  # a subgroup: the members' inputs in the group's order
            self._gather_shapes(call, output_tensor, input_tensor, len(members))
            self._in_group(group, call, input_tensor,
                           lambda views: torch.stack([views[r] for r in members]),
                           output_tensor.view(len(members), *input_tensor.shape))
            return workspace
        self._ctx.allgather(input_tensor, output_tensor)
        self._done(async_op)
        return workspace

    def all_to_all(self, output_tensor: Any, input_tensor: Any, group: Any = None,
                   async_op: bool = False, config: Any = None) -> None:
        """Iris's layout: input and output (M, N * world); input[:, j*N:(j+1)*N] goes to rank
        j, output[:, j*N:(j+1)*N] comes from rank j (a 1-D tensor is one row). The column
        blocks are gathered into rank-major order in a heap buffer of this object's (made at
        the first call of each shape and dtype, kept for the next: collective), moved by the
        library's all-to-all, and put back."""
        call = "symaddr.iris.ccl.all_to_all"
        members = self._members(group, call)
        self._config(config, call)
        self._same(call, output_tensor, input_tensor)
        world = self._ctx.size if members is None else len(members)
        rows = input_tensor.reshape(-1, input_tensor.shape[-1]) if input_tensor.dim() else None
        if rows is None or rows.shape[1] % world:
            raise _err("SYMADDR_ERR_INVALID_ARG", "%s: input %s: its last dimension must split "
                       "into %d column blocks (one per rank)" % (call, tuple(input_tensor.shape),
                                                                 world))
        m, n = rows.shape[0], rows.shape[1] // world
        if members is not None:  # a subgroup: block i of member j's input is this rank's
            i = members.index(self._ctx.rank)  # (i its place in the group)
            self._in_group(group, call, input_tensor,
                           lambda views: torch.stack([views[r].reshape(m, world, n)[:, i, :]
                                                      for r in members], 1),
                           output_tensor.view(m, world, n))
            return
        key = (m, n, input_tensor.dtype)
        if key not in self._staging:
            self._staging[key] = (self._iris.empty(world, m, n, dtype=input_tensor.dtype),
                                  self._iris.empty(world, m, n, dtype=input_tensor.dtype))
        send, recv = self._staging[key]
        send.copy_(rows.view(m, world, n).transpose(0, 1))
        self._ctx.alltoall(send, recv)
        output_tensor.view(m, world, n).copy_(recv.transpose(0, 1))
        self._done(async_op)

    def broadcast_tensor(self, output_tensor: Any, input_tensor: Any, src: int = 0,
                         group: Any = None, async_op: bool = False, config: Any = None) -> None:
        """output (every rank) = src's input (symmetric, any provider)."""
        call = "symaddr.iris.ccl.broadcast_tensor"
        self._group(group, call)
        self._config(config, call)
        self._same(call, output_tensor, input_tensor)
        self._ctx.broadcast(self._input(input_tensor, output_tensor), output_tensor, root=src)
        self._done(async_op)

    def broadcast(self, tensor: Any, input_tensor: Any = None, src: int = 0, group: Any = None,
                  async_op: bool = False, config: Any = None) -> None:
        """tensor (every rank, in place) = src's tensor, as torch.distributed.broadcast; or,
        in Iris's newer form broadcast(output, input, src=...), output = src's input (as
        broadcast_tensor). broadcast(tensor, 2) is the first form, src 2."""
        if input_tensor is not None and not hasattr(input_tensor, "data_ptr"):
            input_tensor, src = None, input_tensor  # broadcast(tensor, src)
        if input_tensor is not None:
            return self.broadcast_tensor(tensor, input_tensor, src=src, group=group,
                                         async_op=async_op, config=config)
        call = "symaddr.iris.ccl.broadcast"
        self._group(group, call)
        self._config(config, call)
        staged = self._input(tensor, tensor)
        self._ctx.broadcast(staged, tensor, root=src)
        self._done(async_op)

    def barrier(self, group: Any = None, async_op: bool = False) -> None:
        """No rank's stream passes before every rank's reached it (stream-ordered, capturable);
        async_op=False waits for it here too."""
        self._group(group, "symaddr.iris.ccl.barrier")
        self._ctx.barrier()
        self._done(async_op)


__all__ = ["AUTOTUNE", "CCL", "Config", "ReduceOp", "Workspace"]
