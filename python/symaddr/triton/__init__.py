# SPDX-License-Identifier: MIT
"""symaddr's device API (symaddr/device.h) as Triton functions over pointer + table. Any
@triton.jit kernel may call them, with any provider's map: symaddr's own (heap, ipc, vmm), an
import, or a foreign table (MPI windows, OpenSHMEM, NVSHMEM, torch symmetric memory).

Two forms here, and the legacy one in symaddr.triton.heap:
- explicit, as the seed's P0: a pointer (or a block of pointers), the target rank, the map's
  peer_bases and this rank (cur_rank):
      remote = translate(dst + offs, peer, peer_bases, cur_rank)
      store(dst + offs, x, peer, peer_bases, cur_rank, mask=m)
- bound: a SymmetricBuffer (Context.bind(t), one kernel argument) and element offsets:
      x = buffer_load(buf, offs, peer, mask=m)
- symaddr.triton.heap: Iris's device API in full, with its names, argument order and keywords
  (translate(ptr, from_rank, to_rank, heap_bases), load, store, copy, get, put and every
  atomic); its table slot takes heap_bases or any map's peer_bases.

Every form has load, store, put, get, copy, translate, the atomics add, sub, and, or, xor,
min, max, cas and xchg, and the signals. put, get, copy and put_signal take one order in every
form, Iris's, the source before the destination (explicit: put(from_ptr, to_ptr, from_rank,
to_rank, peer_bases), Iris's own signature; bound: buffer_put(src, buf, offsets, to_rank));
0.1's order (the destination first) still works, with a FutureWarning when the kernel
compiles.

Each call translates once: two loads of the table. A kernel that makes many accesses to one
peer translates its base pointer once (translate) and then uses tl.load/tl.store, as the seed's
put_kernel does. peer_bases[r] == 0 means rank r is not reachable by loads and stores (another
node): test reachable() first; a translated pointer of such a rank is 0 + offset, which faults.
Atomics take Triton's own sem ("relaxed", "acquire", "release", "acq_rel") and scope ("cta",
"gpu", "sys"); between processes on one GPU or across GPUs use scope="sys".
Signals are NVSHMEM's: signal_set, signal_add, put_signal (data, then its flag),
signal_wait_until(sig, cmp, value) with cmp "eq", "ne", "gt", "ge", "lt" or "le", bounded in
time (a clock, not a count of polls; default SYMADDR_TIMEOUT_MS at import, not the context's:
pass timeout_ns=ctx.timeout_ms * 1000000 for that) and returning OK or TIMEOUT, and fence and
quiet. A block of flags waits for every lane's."""
import os

import triton
import triton.language as tl

from .._lib import load as _load
from .._lib import validating as _validating


def _interpreter_index_check() -> bool:
    """Warns (and returns True) where Triton's interpreter is on, takes a loop bound that is a
    kernel argument as int() of a 1-element array (Triton 3.6 and before) and NumPy refuses
    that (2.4 on): such a kernel raises TypeError "only 0-dimensional arrays can be converted
    to Python scalars" (triton-lang/triton#9171). symaddr's own kernels loop without it."""
    try:
        if not triton.knobs.runtime.interpret:
            return False
        import inspect

        import numpy as np
        from triton.runtime import interpreter
        if "int(self.handle.data))" not in inspect.getsource(interpreter._patch_lang_tensor):
            return False
    except Exception:  # noqa: BLE001  (a Triton without these: nothing to say)
        return False
    try:
        int(np.array([1]))
        return False
    except Exception:  # noqa: BLE001  (TypeError, or the DeprecationWarning made an error)
        pass
    import warnings
    warnings.warn(
        "symaddr.triton: Triton %s's interpreter (TRITON_INTERPRET=1) takes a loop bound that "
        "is a kernel argument (range(0, n)) as int() of a 1-element array, which NumPy %s "
        "refuses: such a kernel raises TypeError('only 0-dimensional arrays can be converted "
        "to Python scalars') (triton-lang/triton#9171). symaddr's kernels loop without it; "
        "for kernels of your own, use numpy<2.4 with the interpreter, or a Triton with that "
        "fix" % (triton.__version__, np.__version__), RuntimeWarning, stacklevel=3)
    return True


def _interpreter_splat_fix() -> bool:
    """Where Triton's interpreter broadcasts a scalar comparison as the comparison's operand
    type, not as booleans (Triton 3.9: its comparisons keep the operands' type in the handle,
    and create_splat casts to it), a block mask made of one (`mask & (r != rank)`) reaches
    tl.store as int32 and the interpreter refuses it ("mask has unsupported dtype"): keep
    booleans boolean when broadcast. Probed, so that a Triton without the fault is left as it
    is; compiled kernels are not concerned. Returns whether it applied."""
    try:
        if not triton.knobs.runtime.interpret:
            return False
        import numpy as np
        from triton.runtime import interpreter
        builder = interpreter.InterpreterBuilder
        scalar = interpreter.TensorHandle(np.bool_(True), tl.int32)  # as a comparison leaves it
        probe = builder.create_splat(builder(), tl.block_type(tl.int1, [2]), scalar)
        if probe.data.dtype == np.bool_:
            return False
    except Exception:  # noqa: BLE001  (an interpreter of another shape: nothing to mend)
        return False
    splat = builder.create_splat

    def create_splat(self, ret_ty, arg):
        out = splat(self, ret_ty, arg)
        if getattr(arg.data, "dtype", None) == np.bool_ and out.data.dtype != np.bool_:
            return interpreter.TensorHandle(out.data.astype(np.bool_), out.dtype)
        return out
    builder.create_splat = create_splat
    return True


_interpreter_index_check()
_interpreter_splat_fix()
_abi = _load().abi
_status, _hdr = _abi["status"], _abi["table_header"]
OK = tl.constexpr(_status["SYMADDR_OK"])
TIMEOUT = tl.constexpr(_status["SYMADDR_ERR_TIMEOUT"])

# Validation of translations, compiled in when SYMADDR_VALIDATE is set at import (a
# compile-time switch: without it translate is the two loads and the add it always was).
VALIDATE = tl.constexpr(_validating(os.environ.get("SYMADDR_VALIDATE")))

_MAGIC = tl.constexpr(_hdr["magic"])
_MAGIC_AT, _INFO_AT = tl.constexpr(_hdr["magic_at"]), tl.constexpr(_hdr["info_at"])
_BYTES_AT, _ERROR_AT = tl.constexpr(_hdr["bytes_at"]), tl.constexpr(_hdr["error_at"])
_OUT_OF_BOUNDS = tl.constexpr(-_status["SYMADDR_ERR_OUT_OF_BOUNDS"])
_BAD_RANK = tl.constexpr(-_status["SYMADDR_ERR_INVALID_ARG"])
_UNREACHABLE = tl.constexpr(-_status["SYMADDR_ERR_UNREACHABLE"])
_UNKNOWN_TABLE = tl.constexpr(-_status["SYMADDR_ERR_INVALID_MAP"])
# this process's validation area (libsymaddr's, mapped for the GPU at the same address): the
# word that records a table without symaddr's header, and the sink refused lanes point into
_area = _abi["validation_area"]
_STRAY, _SINK = tl.constexpr(_area["stray"]), tl.constexpr(_area["sink"])
_SINK_SPAN = tl.constexpr(_area["sink_span"])


# ---- explicit form: (ptr, ..., target_rank, peer_bases, cur_rank) ---------------------------

@triton.jit
def _validated_delta(ptr, target_rank, peer_bases, cur_rank, mask):
    """Validation mode's translation distance, lane by lane: peer_bases[target] -
    peer_bases[cur_rank] where every byte of the lane's element lies in the table's own
    allocation on this rank and the target is a reachable rank of the table. A lane that breaks
    that is refused: its distance leads into this process's sink (no allocation), and the
    status goes to the table's error word, which the next host call of the context raises. A
    table without symaddr's header (a copy of a map's peer_bases, another library's table) is
    refused whole, recorded in the process's stray word. Lanes outside mask are not checked.
    Returns the distances and which lanes passed."""
    magic = tl.load(peer_bases + _MAGIC_AT)
    info = tl.load(peer_bases + _INFO_AT)
    unknown = magic != _MAGIC
    checking = (magic == _MAGIC) & (((info >> 32) & 1) == 1)
    world = tl.where(unknown, 1, info & 0xFFFFFFFF)
    rank_ok = (target_rank >= 0) & (target_rank < world)
    here_ok = (cur_rank >= 0) & (cur_rank < world)
    local_base = tl.load(peer_bases + tl.where(here_ok, cur_rank, 0)).to(tl.int64)
    remote_base = tl.load(peer_bases + tl.where(rank_ok, target_rank, 0)).to(tl.int64)
    at = tl.cast(ptr, tl.int64)
    offset = at - local_base
    size: tl.constexpr = (ptr.dtype.element_ty.primitive_bitwidth + 7) // 8
    outside = (offset < 0) | (offset > tl.load(peer_bases + _BYTES_AT) - size) | (here_ok == 0)
    code = tl.where(outside, _OUT_OF_BOUNDS,
                    tl.where(rank_ok, tl.where(remote_base == 0, _UNREACHABLE, 0), _BAD_RANK))
    refused = (checking & (code != 0)) | unknown
    if mask is None:
        bad = refused
    else:
        bad = refused & mask
    flag = (peer_bases + _ERROR_AT).to(tl.pointer_type(tl.int32), bitcast=True)
    tl.atomic_max(flag + (code * 0), code, mask=bad & (unknown == 0), sem="relaxed", scope="sys")
    stray = tl.full([], _STRAY, tl.int64).to(tl.pointer_type(tl.int32))
    tl.atomic_max(stray + (code * 0), code * 0 + _UNKNOWN_TABLE, mask=bad & unknown,
                  sem="relaxed", scope="sys")
    sink = _SINK + (at & (_SINK_SPAN - 1)) - at
    return tl.where(refused, sink, remote_base - local_base), refused == 0


@triton.jit
def translate(ptr, target_rank, peer_bases, cur_rank):
    """ptr (this rank's, a pointer or a block of them) as rank target_rank's copy:
    peer_bases[target_rank] + (ptr - peer_bases[cur_rank]). Under SYMADDR_VALIDATE every lane
    is checked: one whose element lies outside the table's allocation (another allocation's
    table, heap_bases for an ipc tensor, past the end), with a rank out of range or an
    unreachable one, or any lane of a table that is not symaddr's (a copy of peer_bases) is
    refused: its pointer leads into a sink of this process that no allocation shares (what a
    load through it reads is no rank's data), and the context's next host call raises the
    status. The accessors (load, store, put, get, copy, the atomics) skip refused lanes: their
    loads return other."""
    if VALIDATE:
        delta, ok = _validated_delta(ptr, target_rank, peer_bases, cur_rank, None)
        byte_ptr = ptr.to(tl.pointer_type(tl.int8), bitcast=True)
        return (byte_ptr + delta).to(ptr.dtype, bitcast=True)
    else:
        local_base = tl.load(peer_bases + cur_rank).to(tl.int64)
        remote_base = tl.load(peer_bases + target_rank).to(tl.int64)
        byte_ptr = ptr.to(tl.pointer_type(tl.int8), bitcast=True)
        return (byte_ptr + (remote_base - local_base)).to(ptr.dtype, bitcast=True)


@triton.jit
def reachable(target_rank, peer_bases):
    """Whether loads and stores reach rank target_rank's copy (its peer_bases entry is not 0)."""
    return tl.load(peer_bases + target_rank) != 0


@triton.jit
def _hinted(ptr, hint: tl.constexpr):
    """ptr with Iris's vectorisation hint (tl.multiple_of and tl.max_contiguous), if any; a
    scalar pointer takes none (Triton refuses a hint there)."""
    if hint is not None:
        if ptr.type.is_block():
            ptr = tl.max_contiguous(tl.multiple_of(ptr, hint), hint)
    return ptr


@triton.jit
def _checked(ptr, target_rank, peer_bases, cur_rank, mask, hint: tl.constexpr):
    """Validation mode's translated pointer (hinted) and the mask an access uses: the lanes
    validation refuses leave the mask (the access skips them; the next host call raises the
    status)."""
    delta, ok = _validated_delta(ptr, target_rank, peer_bases, cur_rank, mask)
    byte_ptr = ptr.to(tl.pointer_type(tl.int8), bitcast=True)
    p = (byte_ptr + delta).to(ptr.dtype, bitcast=True)
    if mask is None:
        m = ok
    else:
        m = mask & ok
    return _hinted(p, hint), m


@triton.jit
def load(ptr, target_rank, peer_bases, cur_rank, mask=None, other=None, cache_modifier=None,
         volatile=False, hint: tl.constexpr = None):
    """tl.load from rank target_rank's copy of ptr (mask, other, cache_modifier and volatile
    as tl.load takes them; hint: a vectorisation hint for the translated pointer)."""
    if VALIDATE:
        p, m = _checked(ptr, target_rank, peer_bases, cur_rank, mask, hint)
        return tl.load(p, mask=m, other=other, cache_modifier=cache_modifier, volatile=volatile)
    else:
        p = _hinted(translate(ptr, target_rank, peer_bases, cur_rank), hint)
        return tl.load(p, mask=mask, other=other, cache_modifier=cache_modifier, volatile=volatile)


@triton.jit
def store(ptr, value, target_rank, peer_bases, cur_rank, mask=None, cache_modifier=None,
          hint: tl.constexpr = None):
    """tl.store into rank target_rank's copy of ptr."""
    if VALIDATE:
        p, m = _checked(ptr, target_rank, peer_bases, cur_rank, mask, hint)
        tl.store(p, value, mask=m, cache_modifier=cache_modifier)
    else:
        p = _hinted(translate(ptr, target_rank, peer_bases, cur_rank), hint)
        tl.store(p, value, mask=mask, cache_modifier=cache_modifier)


@triton.jit
def atomic_add(ptr, val, target_rank, peer_bases, cur_rank, mask=None, sem=None, scope=None,
               hint: tl.constexpr = None):
    """tl.atomic_add on rank target_rank's copy of ptr; returns the old values."""
    if VALIDATE:
        p, m = _checked(ptr, target_rank, peer_bases, cur_rank, mask, hint)
        return tl.atomic_add(p, val, mask=m, sem=sem, scope=scope)
    else:
        p = _hinted(translate(ptr, target_rank, peer_bases, cur_rank), hint)
        return tl.atomic_add(p, val, mask=mask, sem=sem, scope=scope)


@triton.jit
def atomic_sub(ptr, val, target_rank, peer_bases, cur_rank, mask=None, sem=None, scope=None,
               hint: tl.constexpr = None):
    """Subtract val atomically on rank target_rank's copy of ptr; returns the old values."""
    if VALIDATE:
        p, m = _checked(ptr, target_rank, peer_bases, cur_rank, mask, hint)
        return tl.atomic_add(p, -val, mask=m, sem=sem, scope=scope)
    else:
        p = _hinted(translate(ptr, target_rank, peer_bases, cur_rank), hint)
        return tl.atomic_add(p, -val, mask=mask, sem=sem, scope=scope)


@triton.jit
def atomic_and(ptr, val, target_rank, peer_bases, cur_rank, mask=None, sem=None, scope=None,
               hint: tl.constexpr = None):
    """tl.atomic_and on rank target_rank's copy of ptr; returns the old values."""
    if VALIDATE:
        p, m = _checked(ptr, target_rank, peer_bases, cur_rank, mask, hint)
        return tl.atomic_and(p, val, mask=m, sem=sem, scope=scope)
    else:
        p = _hinted(translate(ptr, target_rank, peer_bases, cur_rank), hint)
        return tl.atomic_and(p, val, mask=mask, sem=sem, scope=scope)


@triton.jit
def atomic_or(ptr, val, target_rank, peer_bases, cur_rank, mask=None, sem=None, scope=None,
              hint: tl.constexpr = None):
    """tl.atomic_or on rank target_rank's copy of ptr; returns the old values."""
    if VALIDATE:
        p, m = _checked(ptr, target_rank, peer_bases, cur_rank, mask, hint)
        return tl.atomic_or(p, val, mask=m, sem=sem, scope=scope)
    else:
        p = _hinted(translate(ptr, target_rank, peer_bases, cur_rank), hint)
        return tl.atomic_or(p, val, mask=mask, sem=sem, scope=scope)


@triton.jit
def atomic_xor(ptr, val, target_rank, peer_bases, cur_rank, mask=None, sem=None, scope=None,
               hint: tl.constexpr = None):
    """tl.atomic_xor on rank target_rank's copy of ptr; returns the old values."""
    if VALIDATE:
        p, m = _checked(ptr, target_rank, peer_bases, cur_rank, mask, hint)
        return tl.atomic_xor(p, val, mask=m, sem=sem, scope=scope)
    else:
        p = _hinted(translate(ptr, target_rank, peer_bases, cur_rank), hint)
        return tl.atomic_xor(p, val, mask=mask, sem=sem, scope=scope)


@triton.jit
def atomic_min(ptr, val, target_rank, peer_bases, cur_rank, mask=None, sem=None, scope=None,
               hint: tl.constexpr = None):
    """tl.atomic_min on rank target_rank's copy of ptr; returns the old values."""
    if VALIDATE:
        p, m = _checked(ptr, target_rank, peer_bases, cur_rank, mask, hint)
        return tl.atomic_min(p, val, mask=m, sem=sem, scope=scope)
    else:
        p = _hinted(translate(ptr, target_rank, peer_bases, cur_rank), hint)
        return tl.atomic_min(p, val, mask=mask, sem=sem, scope=scope)


@triton.jit
def atomic_max(ptr, val, target_rank, peer_bases, cur_rank, mask=None, sem=None, scope=None,
               hint: tl.constexpr = None):
    """tl.atomic_max on rank target_rank's copy of ptr; returns the old values."""
    if VALIDATE:
        p, m = _checked(ptr, target_rank, peer_bases, cur_rank, mask, hint)
        return tl.atomic_max(p, val, mask=m, sem=sem, scope=scope)
    else:
        p = _hinted(translate(ptr, target_rank, peer_bases, cur_rank), hint)
        return tl.atomic_max(p, val, mask=mask, sem=sem, scope=scope)


@triton.jit
def atomic_cas(ptr, cmp, val, target_rank, peer_bases, cur_rank, sem=None, scope=None,
               hint: tl.constexpr = None):
    """tl.atomic_cas on rank target_rank's copy of ptr; returns the old values."""
    return tl.atomic_cas(_hinted(translate(ptr, target_rank, peer_bases, cur_rank), hint), cmp,
                         val, sem=sem, scope=scope)


@triton.jit
def atomic_xchg(ptr, val, target_rank, peer_bases, cur_rank, mask=None, sem=None, scope=None,
                hint: tl.constexpr = None):
    """tl.atomic_xchg on rank target_rank's copy of ptr; returns the old values."""
    if VALIDATE:
        p, m = _checked(ptr, target_rank, peer_bases, cur_rank, mask, hint)
        return tl.atomic_xchg(p, val, mask=m, sem=sem, scope=scope)
    else:
        p = _hinted(translate(ptr, target_rank, peer_bases, cur_rank), hint)
        return tl.atomic_xchg(p, val, mask=mask, sem=sem, scope=scope)


@triton.jit
def _put(dst, src, target_rank, peer_bases, cur_rank, mask=None, other=None,
         load_cache_modifier=None, store_cache_modifier=None, hint: tl.constexpr = None):
    """Rank target_rank's copy of dst (symmetric) = this rank's src (local), element-wise."""
    if VALIDATE:
        p, m = _checked(dst, target_rank, peer_bases, cur_rank, mask, hint)
        v = tl.load(src, mask=m, other=other, cache_modifier=load_cache_modifier)
        tl.store(p, v, mask=m, cache_modifier=store_cache_modifier)
    else:
        p = _hinted(translate(dst, target_rank, peer_bases, cur_rank), hint)
        v = tl.load(src, mask=mask, other=other, cache_modifier=load_cache_modifier)
        tl.store(p, v, mask=mask, cache_modifier=store_cache_modifier)


@triton.jit
def _get(dst, src, target_rank, peer_bases, cur_rank, mask=None, other=None,
         load_cache_modifier=None, store_cache_modifier=None, hint: tl.constexpr = None):
    """This rank's dst (local) = rank target_rank's copy of src (symmetric), element-wise."""
    if VALIDATE:
        p, m = _checked(src, target_rank, peer_bases, cur_rank, mask, hint)
        v = tl.load(p, mask=m, other=other, cache_modifier=load_cache_modifier)
        tl.store(dst, v, mask=m, cache_modifier=store_cache_modifier)
    else:
        p = _hinted(translate(src, target_rank, peer_bases, cur_rank), hint)
        v = tl.load(p, mask=mask, other=other, cache_modifier=load_cache_modifier)
        tl.store(dst, v, mask=mask, cache_modifier=store_cache_modifier)


@triton.jit
def _copy(dst, src, to_rank, from_rank, peer_bases, cur_rank, mask=None, other=None,
          load_cache_modifier=None, store_cache_modifier=None, hint: tl.constexpr = None):
    """Rank to_rank's copy of dst = rank from_rank's copy of src (both symmetric, this rank's
    pointers); one of the two ranks is usually this one."""
    if VALIDATE:
        s, ms = _checked(src, from_rank, peer_bases, cur_rank, mask, hint)
        d, md = _checked(dst, to_rank, peer_bases, cur_rank, ms, hint)
        v = tl.load(s, mask=md, other=other, cache_modifier=load_cache_modifier)
        tl.store(d, v, mask=md, cache_modifier=store_cache_modifier)
    else:
        s = _hinted(translate(src, from_rank, peer_bases, cur_rank), hint)
        d = _hinted(translate(dst, to_rank, peer_bases, cur_rank), hint)
        v = tl.load(s, mask=mask, other=other, cache_modifier=load_cache_modifier)
        tl.store(d, v, mask=mask, cache_modifier=store_cache_modifier)


# ---- put, get, copy: one order in every form, Iris's (source, then destination) -------------

from ._order import _deprecated_order, _is_table  # noqa: E402


@triton.jit
def put(from_ptr, to_ptr, from_rank, to_rank, peer_bases, mask=None, other=None,
        load_cache_modifier=None, store_cache_modifier=None, hint: tl.constexpr = None):
    """to_rank's copy of to_ptr (symmetric) = from_ptr (local), element-wise; from_rank is this
    rank. Iris's put (symaddr.triton.heap.put); a 0.x call put(dst, src, target_rank,
    peer_bases, cur_rank) still works, with a FutureWarning when the kernel compiles."""
    if _is_table(to_rank):
        _deprecated_order("put")
        _put(from_ptr, to_ptr, from_rank, to_rank, peer_bases, mask, other, load_cache_modifier,
             store_cache_modifier, hint)
    else:
        _put(to_ptr, from_ptr, to_rank, peer_bases, from_rank, mask, other, load_cache_modifier,
             store_cache_modifier, hint)


@triton.jit
def get(from_ptr, to_ptr, from_rank, to_rank, peer_bases, mask=None, other=None,
        load_cache_modifier=None, store_cache_modifier=None, hint: tl.constexpr = None):
    """to_ptr (local) = to_rank's copy of from_ptr (symmetric), element-wise; from_rank is this
    rank, the one whose address space both pointers are in. Iris's get
    (symaddr.triton.heap.get); a 0.x call get(dst, src, target_rank, peer_bases, cur_rank)
    still works, with a FutureWarning when the kernel compiles."""
    if _is_table(to_rank):
        _deprecated_order("get")
        _get(from_ptr, to_ptr, from_rank, to_rank, peer_bases, mask, other, load_cache_modifier,
             store_cache_modifier, hint)
    else:
        _get(to_ptr, from_ptr, to_rank, peer_bases, from_rank, mask, other, load_cache_modifier,
             store_cache_modifier, hint)


@triton.jit
def copy(src_ptr, dst_ptr, from_rank, to_rank, cur_rank, peer_bases, mask=None, other=None,
         load_cache_modifier=None, store_cache_modifier=None, hint: tl.constexpr = None):
    """to_rank's copy of dst_ptr = from_rank's copy of src_ptr (both symmetric, this rank's
    pointers; cur_rank is this rank, usually one of the two). Iris's copy
    (symaddr.triton.heap.copy); a 0.x call copy(dst, src, to_rank, from_rank, peer_bases,
    cur_rank) still works, with a FutureWarning when the kernel compiles."""
    if _is_table(cur_rank):
        _deprecated_order("copy")
        _copy(src_ptr, dst_ptr, from_rank, to_rank, cur_rank, peer_bases, mask, other,
              load_cache_modifier, store_cache_modifier, hint)
    else:
        _copy(dst_ptr, src_ptr, to_rank, from_rank, peer_bases, cur_rank, mask, other,
              load_cache_modifier, store_cache_modifier, hint)


# the signals and the bound form, defined on the functions above
from ._signals import (CMP_EQ, CMP_GE, CMP_GT, CMP_LE, CMP_LT, CMP_NE,  # noqa: E402,F401
                       DEFAULT_TIMEOUT_NS, fence, put_signal, quiet, signal_add, signal_set,
                       signal_wait_until)
from ._bound import (  # noqa: E402
    buffer_translate, buffer_load, buffer_store, buffer_atomic_add, buffer_atomic_cas,
    buffer_atomic_xchg, buffer_atomic_sub, buffer_atomic_and, buffer_atomic_or, buffer_atomic_xor,
    buffer_atomic_min, buffer_atomic_max, buffer_copy, buffer_put, buffer_get, buffer_signal_set,
    buffer_signal_add, buffer_signal_wait_until, buffer_put_signal, buffer_fence, buffer_quiet)

# the public device API of the explicit and bound forms (symaddr.triton.heap has Iris's)
__all__ = ["OK", "TIMEOUT", "VALIDATE", "translate", "reachable", "load", "store", "put", "get",
           "copy", "atomic_add", "atomic_sub", "atomic_and", "atomic_or", "atomic_xor",
           "atomic_min", "atomic_max", "atomic_cas", "atomic_xchg", "CMP_EQ", "CMP_NE",
           "CMP_GT", "CMP_GE", "CMP_LT", "CMP_LE", "DEFAULT_TIMEOUT_NS", "signal_set",
           "signal_add", "signal_wait_until", "put_signal", "fence", "quiet",
           "buffer_translate", "buffer_load", "buffer_store", "buffer_atomic_add",
           "buffer_atomic_cas", "buffer_atomic_xchg", "buffer_atomic_sub",
           "buffer_atomic_and", "buffer_atomic_or", "buffer_atomic_xor",
           "buffer_atomic_min", "buffer_atomic_max", "buffer_copy", "buffer_put",
           "buffer_get", "buffer_signal_set", "buffer_signal_add",
           "buffer_signal_wait_until", "buffer_put_signal", "buffer_fence",
           "buffer_quiet"]
