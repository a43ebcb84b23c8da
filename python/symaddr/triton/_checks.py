# SPDX-License-Identifier: MIT
"""The checks of symaddr.triton.collectives' host functions: their buffers as the kernels
index them (_checked), x's table (_peer_bases), a count's parts (_parts), before any launch."""
import sys

from symaddr._arrays import HostArray
from symaddr._arrays import address as _address
from symaddr._arrays import is_torch as _is_torch
from symaddr._comm import contiguous as _contiguous
from symaddr._comm import count_of as _count
from symaddr._comm import nbytes_of as _nbytes
from symaddr._comm import not_split as _not_split
from symaddr._comm import writable as _writable
from symaddr._lib import SymaddrError as _SymaddrError
from symaddr._lib import error as _err
from symaddr._lib import index_of as _index_of

BLOCK_MAX = 8192  # the elements of a program's tile at most (they live in registers)


def _empty_like(x, count):
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return torch.empty(count, dtype=x.dtype, device=x.device)
    import numpy as np
    return np.empty(count, dtype=x.dtype).view(HostArray)


def _checked(ctx, call, x, out, n_out, block, x_at=None, hint=""):
    """out, after it was checked against x (contiguous already) as the kernel indexes them
    (flat, from their first element): an array or tensor, contiguous, of x's dtype and device,
    of exactly n_out elements and apart from x (a barrier kernel's peers read x until its last
    barrier), or, for a call that works in place, with x at element x_at of out exactly (0:
    out is x; negative: out lies in x); hint: what to pass instead. out None: a new
    array (of x's shape where it has x's size). SYMADDR_ERR_INVALID_ARG before any launch
    otherwise: a kernel would write past out. Each rank checks its own arguments, so a rank
    refused makes no call, and its peers fail at the kernel's first wait, as for a skipped
    call."""
    b = block if type(block) is int else _index_of(block)
    if b is None or not 0 < b <= BLOCK_MAX or b & (b - 1):
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: block=%r: pass a power of two of at most %d"
                   % (call, block, BLOCK_MAX))
    if out is None:  # x's shape where out is x's size (allreduce, alltoall, broadcast)
        _aligned(_address(x, call, "x"), _itemsize(x), call, "x")
        out = _empty_like(x, n_out)
        return out.reshape(x.shape) if n_out == _count(x) else out
    if type(out) is type(x) and type(x).__name__ == "Tensor":  # torch's, on a GPU: cheapest
        dev = x.get_device()  # -1 off CUDA: meta's too
        if out.is_contiguous() and out.dtype == x.dtype and out.get_device() == dev and (
                dev >= 0 or out.is_cpu and x.is_cpu) and out.numel() == n_out:
            at, to, size = x.data_ptr(), out.data_ptr(), x.element_size()
            if (not (at < to + n_out * size and to < at + x.numel() * size) or (
                    x_at is not None and at - to == x_at * size)) and not (at | to) % size:
                return out
    _contiguous(out, call, "out")  # the rest, and each refusal's message
    _writable(out, call, "out")
    torch_x = _is_torch(x)
    if torch_x != _is_torch(out) or (torch_x and x.device != out.device):
        def kind(a):
            return "a torch tensor on %s" % a.device if _is_torch(a) else "a NumPy array"
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: x is %s, out %s: pass out of x's kind and "
                   "device" % (call, kind(x), kind(out)))
    if out.dtype != x.dtype:
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: x is %s, out %s: pass out of x's dtype"
                   % (call, x.dtype, out.dtype))
    if _count(out) != n_out:
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: out has %d elements, x %d: it takes out of "
                   "%d" % (call, _count(out), _count(x), n_out))
    at, to = _address(x, call, "x"), _address(out, call, "out")
    _aligned(at, _itemsize(x), call, "x")
    _aligned(to, _itemsize(out), call, "out")
    if at < to + _nbytes(out) and to < at + _nbytes(x) and not (
            x_at is not None and at - to == x_at * _itemsize(x)):
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: out overlaps x, %s" % (call, (
            "not where the call works in place (a program would overwrite what a peer has "
            "not read yet): pass %s, or memory apart from x" % hint) if x_at is not None else (
            "which the peers read until the kernel's last barrier: pass another out" + hint)))
    return out


def _reducible(ctx, call, x):
    """INVALID_ARG for a reduction over a dtype the C collectives have no arithmetic for (the
    library's list): the kernels would reduce in whatever Triton made of it (bool's sum, an
    int8's wrap)."""
    name = str(x.dtype).replace("torch.", "")
    if name not in ctx._lib.dtypes:
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: x is %s; a reduction takes %s (the "
                   "all-gather, all-to-all and broadcast take any real dtype)"
                   % (call, x.dtype, ", ".join(sorted(ctx._lib.dtypes))))


def _movable(call, x):
    """INVALID_ARG for a dtype no Triton kernel takes (complex, strings, objects, records),
    which Triton's binder refused with a KeyError of the dtype's name."""
    dtype = x.dtype
    if _is_torch(x):
        bad = dtype.is_complex
    else:  # NumPy's kinds; ml_dtypes' bfloat16 and float8 are "V" without fields
        bad = dtype.kind in "cOUSMm" or (dtype.kind == "V" and dtype.fields is not None)
    if bad:
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: x is %s, which Triton's kernels do not "
                   "take: pass a real dtype (a complex array as its real view, "
                   "x.view(float dtype))" % (call, dtype))


def _aligned(addr, size, call, role):
    """INVALID_ARG where an argument is not aligned to its elements (a byte-offset view): a
    kernel's loads of it fault on a GPU ("misaligned address"), as the C collectives say."""
    if addr % size:
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: %s at 0x%x is not aligned to its %d-byte "
                   "elements; pass element-aligned memory" % (call, role, addr, size))


def _peer_bases(ctx, call, a, role, why, where=None):
    """The peer_bases of a's registration; a not symmetric: SYMADDR_ERR_NOT_FOUND naming the
    call and the argument; a registration some rank's copy of which this rank does not reach
    (a foreign table with 0 entries): SYMADDR_ERR_UNREACHABLE, as the host collectives say.
    Appends to the list where which registration a is (its number, the same on every rank)
    and a's byte in it, for the call's identity: the peers reach a there."""
    try:
        amap = ctx.get_symmetric_address_map(a)
    except _SymaddrError as e:
        if e.name != "SYMADDR_ERR_NOT_FOUND":
            raise
        raise _err("SYMADDR_ERR_NOT_FOUND", "%s: %s is not symmetric memory of this context "
                   "(%s): allocate it with ctx.allocate_symmetric(), or register it with "
                   "ctx.import_()" % (call, role, why)) from None
    far = amap._unreachable()
    if far:  # the kernel would store to address 0 + offset
        raise _err("SYMADDR_ERR_UNREACHABLE", "%s: %s is not mapped on rank%s %s here (%s "
                   "peer_bases entr%s 0): register it with every rank's address, or pass "
                   "memory every rank reaches (ctx.allocate_symmetric(), ctx.import_())" % (
                       call, role, "s" if len(far) > 1 else "",
                       ", ".join(map(str, far)), "their" if len(far) > 1 else "its",
                       "ies are" if len(far) > 1 else "y is"))
    if where is not None:
        where += (amap._serial, _address(a, call, role) - amap._s.range_base)
    return amap.peer_bases


def _parts(ctx, call, x):
    """x's elements over the context's size: a rank's part (reduce_scatter, alltoall)."""
    n = _count(x)
    if n % ctx.size:
        raise _not_split(call, n, ctx.size)
    return n // ctx.size


def _itemsize(x):
    size = getattr(x.dtype, "itemsize", None)  # NumPy's
    return size if size is not None else x.element_size()
