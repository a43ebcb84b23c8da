# SPDX-License-Identifier: MIT
"""Fused collective + compute ops on torch tensors, one Triton kernel each
(symaddr.triton.fused), synchronised on the device with no host step, so that a CUDA graph
captures them:

    out = symaddr.ops.matmul_all_reduce(ctx, a, b)            # sum over ranks of a @ b
    out = symaddr.ops.matmul_reduce_scatter(ctx, a, b, "sum", scatter_dim=0)
    a_full, [out] = symaddr.ops.all_gather_matmul(ctx, a_shard, [b], gather_dim=0)
    y = symaddr.ops.all_reduce_rmsnorm(ctx, x, residual, weight, eps)

all_gather_matmul and matmul_reduce_scatter take torch's signatures
(torch.ops.symm_mem.fused_all_gather_matmul and fused_matmul_reduce_scatter) with a
symaddr.Context in the group's place. Operands are 2-D torch tensors of bf16, fp16 or f32
(one dtype), on the context's device, each rank's own; any memory of any provider: an operand
the peers read (all_gather_matmul's a_shard, all_reduce_rmsnorm's x) that is not symmetric is
copied into a symmetric buffer of the context first. The GEMMs accumulate in f32 (f32 operands
multiply as Triton's tl.dot does by default, in TF32 on NVIDIA GPUs) and write the output's
dtype. The symmetric buffers (the f32 partial products, the staged operands) are made at a
shape's first call and kept for the next (collective: every rank calls each op in the same
order, as every collective).

torch custom ops (importing symaddr.ops defines them), functional, for torch.compile
(fullgraph: no graph break) and CUDA graphs, each with a fake form for tracing; group is
symaddr.ops.group_name(ctx):
    torch.ops.symaddr.all_reduce(x, reduce_op, group) -> new tensor; all_reduce_(x, ...) in
    place; all_gather(x, group) (along dimension 0); reduce_scatter(x, reduce_op, group)
    (dimension 0); all_to_all(x, group); matmul_all_reduce(a, b, group);
    matmul_reduce_scatter(a, b, reduce_op, scatter_dim, group); all_gather_matmul(a, b, group)
    (rows); all_reduce_rmsnorm(x, residual, weight, eps, group).
Their inputs may be any tensors: one that is not symmetric memory is copied into a buffer of
the context's (the collectives': its staging workspace, grown at a call's first size whatever
its input; the fused ops': a buffer per shape, made at its first call). Run the model once
eagerly before a graph's capture, as torch's own warm-up does (torch.compile's
mode="reduce-overhead" makes one warm-up run): a capture cannot allocate, and a call that would
raises SYMADDR_ERR_UNSUPPORTED saying so. Inductor's graphs copy each input into a buffer of
their own before each replay; the collectives stage that copy, the fused ops ask for
symmetric inputs to be marked static (torch._dynamo.mark_static_address(t)), so that the
graph reads them where they are."""
from typing import Any, List, Optional, Sequence, Tuple

import triton

from symaddr._lib import SymaddrError
from symaddr._lib import error as _err
from symaddr._validation import _capturing
from symaddr.triton import fused as _k
from symaddr.triton.team import team_programs

_DTYPES = ("float32", "float16", "bfloat16")


def _torch():
    import torch
    return torch


def _matrix(ctx, call: str, role: str, t: Any, dtype: Any = None) -> Any:
    torch = _torch()
    if not torch.is_tensor(t) or t.dim() != 2:
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: %s must be a 2-D torch tensor, got %s" % (
            call, role, tuple(t.shape) if torch.is_tensor(t) else type(t).__name__))
    if str(t.dtype).replace("torch.", "") not in _DTYPES or (dtype is not None and
                                                              t.dtype != dtype):
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: %s is %s: pass %s" % (
            call, role, t.dtype, dtype if dtype is not None else "bf16, fp16 or f32"))
    return t.contiguous()


_dot_ok = {}
_fault = []


def _interpreter_fault() -> str:
    """Why Triton's interpreter cannot run symaddr.ops' GEMM kernels here ("" when it can, and
    compiled): Triton 3.6's takes a loop bound that is a kernel argument as int() of a
    1-element array, which NumPy 2.4 refuses (triton-lang/triton#9171); the GEMMs loop over K
    and over their tiles so (a while loop instead would lose the compiled pipelining)."""
    if not triton.knobs.runtime.interpret:
        return ""
    if not _fault:
        torch = _torch()
        a = torch.ones((16, 16))
        out = torch.zeros((16, 16))
        try:
            _k.matmul_kernel[(1,)](a, a, out, 16, 16, 16, BM=16, BN=16, BK=16)
            why = "" if bool((out == 16).all()) else "its f32 GEMM computed a wrong product"
        except Exception as e:  # noqa: BLE001  (the interpreter wraps what it met)
            why = ("Triton %s's interpreter cannot loop to a runtime bound here "
                   "(triton-lang/triton#9171): %s" % (triton.__version__, e))
        _fault.append(why)
    return _fault[0]


def _interpreted_dot_ok(dtype: Any) -> bool:
    """Whether tl.dot of dtype is right here: compiled, yes; under Triton's interpreter, a
    probe (Triton 3.6's multiplies bf16 as garbage: 6e9 for -8)."""
    if not triton.knobs.runtime.interpret:
        return True
    ok = _dot_ok.get(dtype)
    if ok is None:
        torch = _torch()
        a = torch.ones((16, 16), dtype=dtype)
        out = torch.zeros((16, 16), dtype=dtype)
        try:
            _k.matmul_kernel[(1,)](a, a, out, 16, 16, 16, BM=16, BN=16, BK=16)
            ok = bool((out.float() == 16).all())
        except Exception:  # noqa: BLE001  (the interpreter refused it)
            ok = False
        _dot_ok[dtype] = ok
    return ok


def _gemm_runs(call: str, dtype: Any) -> None:
    """SYMADDR_ERR_UNSUPPORTED where this Triton cannot run a GEMM of dtype right (under its
    interpreter only), before any launch: never a wrong product."""
    why = _interpreter_fault()
    if not why and not _interpreted_dot_ok(dtype):
        why = ("Triton %s's interpreter (TRITON_INTERPRET=1) multiplies %s wrong (tl.dot): pass "
               "fp16 or f32 operands there" % (triton.__version__, dtype))
    if why:
        raise _err("SYMADDR_ERR_UNSUPPORTED", "%s: %s; or run compiled on a GPU" % (call, why))


def _space(ctx, key: Tuple, shape: Tuple[int, ...], dtype: Any) -> Any:
    """A symmetric tensor of the context's, one per key (made once: collective)."""
    cache = ctx.__dict__.setdefault("_fused_buffers", {})
    t = cache.get(key)
    if t is None:
        if ctx.backend != "cpu" and _capturing():  # an allocation would end the capture
            raise _err("SYMADDR_ERR_UNSUPPORTED", "symaddr.ops: a buffer of %s %s (%s) would "
                       "be made inside a CUDA graph's capture, which cannot allocate: make the "
                       "same call once before the capture; under torch.compile(mode=\"reduce-"
                       "overhead\"), whose graphs copy each input into a buffer of their own, "
                       "mark a symmetric input with torch._dynamo.mark_static_address(t)"
                       % (tuple(shape), dtype, key[0]))
        t, _ = ctx.allocate_symmetric(shape, dtype)
        cache[key] = t
    return t


def _symmetric_map(ctx, call: str, role: str, t: Any) -> Tuple[Any, Any]:
    """t and its map where t is symmetric memory of ctx, else a symmetric copy of it (a
    buffer of the context's per call, role, shape and dtype, made at the first call: make it
    before a graph's capture with one eager call) and the copy's map."""
    try:
        return t, ctx.get_symmetric_address_map(t)
    except SymaddrError as e:
        if e.name != "SYMADDR_ERR_NOT_FOUND":
            raise
    s = _space(ctx, (call, role, tuple(t.shape), t.dtype), tuple(t.shape), t.dtype)
    s.copy_(t)
    return s, ctx.get_symmetric_address_map(s)


def _symmetric(ctx, call: str, role: str, t: Any) -> Tuple[Any, Any]:
    """t (or its symmetric copy, _symmetric_map) and its table."""
    s, m = _symmetric_map(ctx, call, role, t)
    return s, m.peer_bases


def _out(call: str, out: Any, shape: Tuple[int, ...], like: Any) -> Any:
    torch = _torch()
    if out is None:
        return torch.empty(shape, dtype=like.dtype, device=like.device)
    if tuple(out.shape) != shape or out.dtype != like.dtype or not out.is_contiguous():
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: out is %s %s: pass a contiguous %s %s" % (
            call, tuple(out.shape), out.dtype, shape, like.dtype))
    return out


_SHARED = 160 << 10  # bytes of shared memory a GEMM's pipeline may take (H100/H200: 227 KiB)


def _grid(ctx, m: int, n: int, itemsize: int) -> Tuple[dict, int]:
    """The GEMM's tile sizes and its programs (co-resident, each looping over its tiles); the
    K step halved until the pipeline's tiles fit in shared memory (gemm_config's are for
    16-bit operands: f32 at 64 x 128 x 128, 3 stages, asked 288 KiB on an H200)."""
    cfg = _k.gemm_config(m, n, team_programs(ctx, 1 << 20))
    while (cfg["BM"] + cfg["BN"]) * cfg["BK"] * itemsize * cfg["num_stages"] > _SHARED and \
            cfg["BK"] > 32:
        cfg["BK"] //= 2
    tiles = triton.cdiv(m, cfg["BM"]) * triton.cdiv(n, cfg["BN"])
    return cfg, team_programs(ctx, tiles)


def _gemm_reduce(ctx, call, a, b, out, window):
    m, k = a.shape
    n = b.shape[1]
    _gemm_runs(call, a.dtype)
    partial = _space(ctx, ("partial", m, n), (m, n), _torch().float32)
    pb = ctx.get_symmetric_address_map(partial).peer_bases
    cfg, programs = _grid(ctx, m, n, a.element_size())
    if window is None:
        _k.gemm_allreduce_kernel[(programs,)](ctx.team(), a, b, partial, pb, out, m, n, k,
                                              N_RANKS=ctx.size, **cfg)
    else:
        _k.gemm_reduce_scatter_kernel[(programs,)](ctx.team(), a, b, partial, pb, out, m, n, k,
                                                   *window, N_RANKS=ctx.size, **cfg)
    return out


def matmul_all_reduce(ctx, a: Any, b: Any, out: Optional[Any] = None) -> Any:
    """out (M x N) = the sum over ranks of their a (M x K) @ b (K x N): a row-parallel linear
    layer, each output tile reduced across ranks as it leaves the GEMM. Returns out."""
    call = "symaddr.ops.matmul_all_reduce"
    a = _matrix(ctx, call, "a", a)
    b = _matrix(ctx, call, "b", b, a.dtype)
    if a.shape[1] != b.shape[0]:
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: a is %s, b %s: a's columns must be b's "
                   "rows" % (call, tuple(a.shape), tuple(b.shape)))
    out = _out(call, out, (a.shape[0], b.shape[1]), a)
    return _gemm_reduce(ctx, call, a, b, out, None)


def matmul_reduce_scatter(ctx, A: Any, B: Any, reduce_op: str = "sum", scatter_dim: int = 0,
                          out: Optional[Any] = None) -> Any:
    """torch's fused_matmul_reduce_scatter: this rank's part (along scatter_dim, 0 rows or 1
    columns) of the reduction over ranks of their A (M x K) @ B (K x N); reduce_op "sum" or
    "avg". The split dimension must divide by the context's size. Returns the part."""
    call = "symaddr.ops.matmul_reduce_scatter"
    A = _matrix(ctx, call, "A", A)
    B = _matrix(ctx, call, "B", B, A.dtype)
    if reduce_op not in ("sum", "avg"):
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: reduce_op=%r: pass \"sum\" or \"avg\"" % (
            call, reduce_op))
    m, n = A.shape[0], B.shape[1]
    if A.shape[1] != B.shape[0] or scatter_dim not in (0, 1, -1, -2):
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: A %s, B %s, scatter_dim %r: A's columns "
                   "must be B's rows, scatter_dim 0 or 1" % (call, tuple(A.shape),
                                                              tuple(B.shape), scatter_dim))
    dim = scatter_dim % 2
    whole = (m, n)[dim]
    if whole % ctx.size:
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: the output's dimension %d (%d) does not split "
                   "into %d equal parts" % (call, dim, whole, ctx.size))
    part = whole // ctx.size
    lo = ctx.rank * part
    window = (lo, lo + part, 0, n) if dim == 0 else (0, m, lo, lo + part)
    out = _out(call, out, (part, n) if dim == 0 else (m, part), A)
    _gemm_reduce(ctx, call, A, B, out, window)
    if reduce_op == "avg":
        out.div_(ctx.size)
    return out


def all_gather_matmul(ctx, A_shard: Any, Bs: Sequence[Any], gather_dim: int = 0,
                      return_A: bool = True) -> Tuple[Optional[Any], List[Any]]:
    """torch's fused_all_gather_matmul: (A, [A @ B for B in Bs]) where A is every rank's
    A_shard stacked along gather_dim, 0 (rows: M x K shards, A of size * M rows) or 1 (K:
    M x K_local shards, each B of size * K_local rows). The GEMMs read the peers' shards where
    they lie (A is never materialised for them); return_A=False returns None in A's place,
    True gathers A as well (the library's all-gather). Returns (A or None, outputs)."""
    call = "symaddr.ops.all_gather_matmul"
    torch = _torch()
    a = _matrix(ctx, call, "A_shard", A_shard)
    if gather_dim not in (0, 1, -1, -2):
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: gather_dim=%r: pass 0 (rows) or 1 (K)" % (
            call, gather_dim))
    dim = gather_dim % 2
    a, a_pb = _symmetric(ctx, call, "A_shard", a)
    m, k = a.shape
    outs = []
    for i, b in enumerate(Bs):
        b = _matrix(ctx, call, "Bs[%d]" % i, b, a.dtype)
        want_k = k if dim == 0 else ctx.size * k
        if b.shape[0] != want_k:
            raise _err("SYMADDR_ERR_INVALID_ARG", "%s: Bs[%d] has %d rows: the gathered A has "
                       "%d columns" % (call, i, b.shape[0], want_k))
        _gemm_runs(call, a.dtype)
        n = b.shape[1]
        rows = ctx.size * m if dim == 0 else m
        out = torch.empty((rows, n), dtype=a.dtype, device=a.device)
        cfg, programs = _grid(ctx, rows, n, a.element_size())
        if dim == 0:
            _k.allgather_gemm_kernel[(programs,)](ctx.team(), a, a_pb, b, out, m, n, k,
                                                  N_RANKS=ctx.size, **cfg)
        else:
            _k.allgather_k_gemm_kernel[(programs,)](ctx.team(), a, a_pb, b, out, m, n, k,
                                                    N_RANKS=ctx.size, **cfg)
        outs.append(out)
    full = None
    if return_A:
        full = ctx.allgather(a, torch.empty((ctx.size * m, k), dtype=a.dtype, device=a.device))
        if dim == 1:  # rank-major blocks of rows: side by side along K instead
            full = full.view(ctx.size, m, k).permute(1, 0, 2).reshape(m, ctx.size * k)
    return full, outs


def all_reduce_rmsnorm(ctx, x: Any, residual: Any, weight: Any, eps: float = 1e-6,
                       out: Optional[Any] = None) -> Any:
    """out = RMSNorm(sum over ranks of x + residual) * weight, row by row (x and residual
    rows x H, weight H): one kernel, each row reduced from every rank and normalised while in
    registers (f32). Returns out (x's shape and dtype)."""
    call = "symaddr.ops.all_reduce_rmsnorm"
    torch = _torch()
    x = _matrix(ctx, call, "x", x.reshape(-1, x.shape[-1]) if torch.is_tensor(x) else x)
    res = _matrix(ctx, call, "residual", residual.reshape(x.shape) if torch.is_tensor(residual)
                  and residual.numel() == x.numel() else residual, x.dtype)
    w = weight.contiguous()
    if tuple(res.shape) != tuple(x.shape) or w.numel() != x.shape[1]:
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: x %s, residual %s, weight %s: pass residual "
                   "of x's shape and weight of its last dimension" % (
                       call, tuple(x.shape), tuple(res.shape), tuple(w.shape)))
    xs, x_pb = _symmetric(ctx, call, "x", x)
    rows, h = x.shape
    o = _out(call, out.reshape(rows, h) if out is not None else None, (rows, h), x)
    _k.allreduce_rmsnorm_kernel[(rows,)](ctx.team(), xs, x_pb, res, w, o, h, float(eps),
                                         N_RANKS=ctx.size, BLOCK_H=triton.next_power_of_2(h))
    return o


__all__ = ["matmul_all_reduce", "matmul_reduce_scatter", "all_gather_matmul",
           "all_reduce_rmsnorm"]


# ---- torch custom ops: torch.ops.symaddr.*, traced by torch.compile, captured by graphs ----

_contexts = {}  # group name -> weak reference to its Context
_LIBRARIES = []


def group_name(ctx) -> str:
    """The name torch.ops.symaddr.* take for ctx (their group argument, as torch's functional
    collectives take a group's name): "symaddr:<n>:<size>", the same on every rank (each names
    its contexts in the order it made the calls)."""
    import weakref
    name = ctx.__dict__.get("_group_name")
    if name is None:  # the size in the name: the ops' fake shapes depend on it, and a compiled
        # graph cached on disk (inductor's) is keyed by the name, not by the context
        name = ctx.__dict__["_group_name"] = "symaddr:%d:%d" % (len(_contexts), ctx.size)
        _contexts[name] = weakref.ref(ctx)
    return name


def _context(group: str):
    ref = _contexts.get(group)
    ctx = ref() if ref is not None else None
    if ctx is None or not ctx._h:
        raise _err("SYMADDR_ERR_INVALID_ARG", "torch.ops.symaddr: group %r names no open "
                   "symaddr.Context of this process: pass symaddr.ops.group_name(ctx)" % group)
    return ctx


def _staged(ctx, t: Any, out_bytes: int) -> Any:
    """t contiguous where it is symmetric memory of ctx, else its copy in the context's
    staging workspace, past the out_bytes a staged recv takes there. Every call grows the
    workspace to both parts whatever t is, so that a CUDA graph captures the call with no
    allocation: inductor's graphs (mode="reduce-overhead") copy a symmetric input into a
    buffer of their own before the capture, which the op then stages."""
    t = t.contiguous()
    nbytes = t.numel() * t.element_size()
    off = -(-out_bytes // 256) * 256  # (aligned for any dtype's view)
    base = ctx._workspace(off + nbytes)
    p = t.data_ptr()
    if (ctx._known.get(p) or ctx._lookup(p))[0] == 0:
        return t
    if not ctx._stage_captured and ctx.backend != "cpu" and ctx._capturing():
        # a graph that replays this copy (and the call on the copy) writes this workspace:
        # kept mapped when a later call outgrows it (Staging._workspace)
        ctx._stage_captured = True
    return ctx._stage_view(base + off, nbytes).view(t.dtype).view(t.shape).copy_(t)


def _register() -> bool:
    """Define torch.ops.symaddr.* with their fake (meta) forms; False without torch.library's
    infer_schema and register_fake (torch < 2.5)."""
    torch = _torch()
    lib = getattr(torch, "library", None)
    if lib is None or not hasattr(lib, "infer_schema") or not hasattr(lib, "register_fake"):
        return False
    # torch.library.Library's define + impl rather than custom_op: the same op and schema
    # (inferred from the function), without custom_op's per-call wrapping (on an H100 it took
    # an eager all_reduce of 8 B from 11 to 57 us)
    library = lib.Library("symaddr", "DEF")
    _LIBRARIES.append(library)  # the definitions last as long as the Library object

    class Op:
        def __init__(self, name):
            self.name = name

        def register_fake(self, fake):
            lib.register_fake("symaddr::" + self.name, fake, lib=library)
            return fake

    def op(name, mutates=()):
        def define(fn):
            library.define(name + lib.infer_schema(fn, mutates_args=mutates))
            library.impl(name, fn, "CompositeExplicitAutograd")
            return Op(name)
        return define

    @op("all_reduce")
    def all_reduce(x: torch.Tensor, reduce_op: str, group: str) -> torch.Tensor:
        ctx = _context(group)
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
        ctx.allreduce(_staged(ctx, x, out.numel() * out.element_size()), out, op=reduce_op)
        return out

    @all_reduce.register_fake
    def _(x, reduce_op, group):
        return torch.empty_like(x, memory_format=torch.contiguous_format)

    @op("all_reduce_", mutates=("x",))
    def all_reduce_(x: torch.Tensor, reduce_op: str, group: str) -> None:
        ctx = _context(group)
        s = _staged(ctx, x, 0)  # in place: no recv staged
        ctx.allreduce(s, s, op=reduce_op)
        if s.data_ptr() != x.data_ptr():
            x.copy_(s.view(x.shape))

    @all_reduce_.register_fake
    def _(x, reduce_op, group):
        return None

    @op("all_gather")
    def all_gather(x: torch.Tensor, group: str) -> torch.Tensor:
        ctx = _context(group)
        out = x.new_empty((ctx.size * x.shape[0],) + tuple(x.shape[1:]))
        ctx.allgather(_staged(ctx, x, out.numel() * out.element_size()), out)
        return out

    @all_gather.register_fake
    def _(x, group):
        return x.new_empty((_context(group).size * x.shape[0],) + tuple(x.shape[1:]))

    @op("reduce_scatter")
    def reduce_scatter(x: torch.Tensor, reduce_op: str, group: str) -> torch.Tensor:
        ctx = _context(group)
        out = x.new_empty((x.shape[0] // ctx.size,) + tuple(x.shape[1:]))
        ctx.reduce_scatter(_staged(ctx, x, out.numel() * out.element_size()), out, op=reduce_op)
        return out

    @reduce_scatter.register_fake
    def _(x, reduce_op, group):
        return x.new_empty((x.shape[0] // _context(group).size,) + tuple(x.shape[1:]))

    @op("all_to_all")
    def all_to_all(x: torch.Tensor, group: str) -> torch.Tensor:
        ctx = _context(group)
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
        ctx.alltoall(_staged(ctx, x, out.numel() * out.element_size()), out)
        return out

    @all_to_all.register_fake
    def _(x, group):
        return torch.empty_like(x, memory_format=torch.contiguous_format)

    @op("matmul_all_reduce")
    def mm_ar(a: torch.Tensor, b: torch.Tensor, group: str) -> torch.Tensor:
        return matmul_all_reduce(_context(group), a, b)

    @mm_ar.register_fake
    def _(a, b, group):
        return a.new_empty((a.shape[0], b.shape[1]))

    @op("matmul_reduce_scatter")
    def mm_rs(a: torch.Tensor, b: torch.Tensor, reduce_op: str, scatter_dim: int,
              group: str) -> torch.Tensor:
        return matmul_reduce_scatter(_context(group), a, b, reduce_op, scatter_dim)

    @mm_rs.register_fake
    def _(a, b, reduce_op, scatter_dim, group):
        n = _context(group).size
        m, cols = a.shape[0], b.shape[1]
        return a.new_empty((m // n, cols) if scatter_dim % 2 == 0 else (m, cols // n))

    @op("all_gather_matmul")
    def ag_mm(a: torch.Tensor, b: torch.Tensor, group: str) -> torch.Tensor:
        return all_gather_matmul(_context(group), a, [b], 0, return_A=False)[1][0]

    @ag_mm.register_fake
    def _(a, b, group):
        return a.new_empty((_context(group).size * a.shape[0], b.shape[1]))

    @op("all_reduce_rmsnorm")
    def ar_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float,
                group: str) -> torch.Tensor:
        return all_reduce_rmsnorm(_context(group), x, residual, weight, eps).view(x.shape)

    @ar_norm.register_fake
    def _(x, residual, weight, eps, group):
        return torch.empty_like(x, memory_format=torch.contiguous_format)

    return True


try:
    REGISTERED = _register()
except ImportError:  # no torch: symaddr.ops' functions need it anyway
    REGISTERED = False
__all__ += ["group_name", "REGISTERED"]
