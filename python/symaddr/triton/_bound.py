# SPDX-License-Identifier: MIT
"""symaddr.triton's bound form: a SymmetricBuffer (Context.bind(t), one kernel argument) and
element offsets. Imported into symaddr.triton: use them from there."""
import triton
import triton.language as tl

from . import (VALIDATE, _checked, atomic_add, atomic_and, atomic_cas, atomic_max, atomic_min,
               atomic_or, atomic_sub, atomic_xchg, atomic_xor, load, store, translate)
from ._order import _deprecated_order, _is_buffer
from ._signals import (DEFAULT_TIMEOUT_NS, _put_signal, fence, quiet, signal_add, signal_set,
                       signal_wait_until)

# ---- bound form: (SymmetricBuffer, offsets, ...) ---------------------------------------------

@triton.jit
def buffer_translate(buf, offsets, target_rank):
    """Pointers to elements offsets of rank target_rank's copy of buf."""
    return translate(buf.ptr + offsets, target_rank, buf.peer_bases, buf.local_rank)


@triton.jit
def buffer_load(buf, offsets, from_rank, mask=None, other=None):
    """tl.load of elements offsets of rank from_rank's copy of buf (refused lanes under
    validation read other)."""
    return load(buf.ptr + offsets, from_rank, buf.peer_bases, buf.local_rank, mask=mask,
                other=other)


@triton.jit
def buffer_store(buf, offsets, value, to_rank, mask=None):
    """tl.store of value into elements offsets of rank to_rank's copy of buf (refused lanes
    under validation store nothing)."""
    store(buf.ptr + offsets, value, to_rank, buf.peer_bases, buf.local_rank, mask=mask)


@triton.jit
def buffer_atomic_add(buf, offsets, val, to_rank, mask=None, sem=None, scope=None):
    """atomic_add on rank to_rank's copy of buf[offsets]; returns the old values."""
    return atomic_add(buf.ptr + offsets, val, to_rank, buf.peer_bases, buf.local_rank,
                      mask=mask, sem=sem, scope=scope)


@triton.jit
def buffer_atomic_cas(buf, offsets, cmp, val, to_rank, sem=None, scope=None):
    """atomic_cas on rank to_rank's copy of buf[offsets]; returns the old values."""
    return atomic_cas(buf.ptr + offsets, cmp, val, to_rank, buf.peer_bases, buf.local_rank,
                      sem=sem, scope=scope)


@triton.jit
def buffer_atomic_xchg(buf, offsets, val, to_rank, mask=None, sem=None, scope=None):
    """atomic_xchg on rank to_rank's copy of buf[offsets]; returns the old values."""
    return atomic_xchg(buf.ptr + offsets, val, to_rank, buf.peer_bases, buf.local_rank,
                       mask=mask, sem=sem, scope=scope)


@triton.jit
def buffer_atomic_sub(buf, offsets, val, to_rank, mask=None, sem=None, scope=None):
    """atomic_sub on rank to_rank's copy of buf[offsets]; returns the old values."""
    return atomic_sub(buf.ptr + offsets, val, to_rank, buf.peer_bases, buf.local_rank, mask=mask,
                     sem=sem, scope=scope)


@triton.jit
def buffer_atomic_and(buf, offsets, val, to_rank, mask=None, sem=None, scope=None):
    """atomic_and on rank to_rank's copy of buf[offsets]; returns the old values."""
    return atomic_and(buf.ptr + offsets, val, to_rank, buf.peer_bases, buf.local_rank, mask=mask,
                     sem=sem, scope=scope)


@triton.jit
def buffer_atomic_or(buf, offsets, val, to_rank, mask=None, sem=None, scope=None):
    """atomic_or on rank to_rank's copy of buf[offsets]; returns the old values."""
    return atomic_or(buf.ptr + offsets, val, to_rank, buf.peer_bases, buf.local_rank, mask=mask,
                     sem=sem, scope=scope)


@triton.jit
def buffer_atomic_xor(buf, offsets, val, to_rank, mask=None, sem=None, scope=None):
    """atomic_xor on rank to_rank's copy of buf[offsets]; returns the old values."""
    return atomic_xor(buf.ptr + offsets, val, to_rank, buf.peer_bases, buf.local_rank, mask=mask,
                     sem=sem, scope=scope)


@triton.jit
def buffer_atomic_min(buf, offsets, val, to_rank, mask=None, sem=None, scope=None):
    """atomic_min on rank to_rank's copy of buf[offsets]; returns the old values."""
    return atomic_min(buf.ptr + offsets, val, to_rank, buf.peer_bases, buf.local_rank, mask=mask,
                     sem=sem, scope=scope)


@triton.jit
def buffer_atomic_max(buf, offsets, val, to_rank, mask=None, sem=None, scope=None):
    """atomic_max on rank to_rank's copy of buf[offsets]; returns the old values."""
    return atomic_max(buf.ptr + offsets, val, to_rank, buf.peer_bases, buf.local_rank, mask=mask,
                     sem=sem, scope=scope)


@triton.jit
def _buffer_copy(dst, dst_offsets, src, src_offsets, to_rank, from_rank, mask=None, other=None):
    if VALIDATE:  # a lane refused at either end moves nothing
        s, ms = _checked(src.ptr + src_offsets, from_rank, src.peer_bases, src.local_rank, mask,
                         None)
        d, md = _checked(dst.ptr + dst_offsets, to_rank, dst.peer_bases, dst.local_rank, ms,
                         None)
        tl.store(d, tl.load(s, mask=md, other=other), mask=md)
    else:
        data = tl.load(buffer_translate(src, src_offsets, from_rank), mask=mask, other=other)
        tl.store(buffer_translate(dst, dst_offsets, to_rank), data, mask=mask)


@triton.jit
def buffer_copy(src, dst, offsets, from_rank, to_rank, dst_offsets=None, mask=None, other=None):
    """Rank to_rank's copy of dst[dst_offsets] = rank from_rank's copy of src[offsets] (two
    SymmetricBuffers; dst_offsets defaults to offsets). Source first, as every form's put, get
    and copy; a 0.x call buffer_copy(dst, dst_offsets, src, src_offsets, to_rank, from_rank)
    still works, with a FutureWarning when the kernel compiles."""
    if _is_buffer(dst):
        if dst_offsets is None:
            _buffer_copy(dst, offsets, src, offsets, to_rank, from_rank, mask, other)
        else:
            _buffer_copy(dst, dst_offsets, src, offsets, to_rank, from_rank, mask, other)
    else:
        _deprecated_order("buffer_copy")
        _buffer_copy(src, dst, offsets, from_rank, to_rank, dst_offsets, mask, other)


@triton.jit
def buffer_put(src, buf, offsets, to_rank, mask=None):
    """Rank to_rank's copy of buf[offsets] = this rank's src (a block of local pointers). A 0.x
    call buffer_put(buf, offsets, src, to_rank) still works, with a FutureWarning when the
    kernel compiles."""
    if _is_buffer(src):
        _deprecated_order("buffer_put")
        buffer_store(src, buf, tl.load(offsets, mask=mask), to_rank, mask=mask)
    else:
        buffer_store(buf, offsets, tl.load(src, mask=mask), to_rank, mask=mask)


@triton.jit
def buffer_get(buf, offsets, dst, from_rank, mask=None):
    """This rank's dst (a block of local pointers) = rank from_rank's copy of buf[offsets]. A
    0.x call buffer_get(dst, buf, offsets, from_rank) still works, with a FutureWarning when
    the kernel compiles."""
    if _is_buffer(offsets):
        _deprecated_order("buffer_get")
        _buffer_get(buf, offsets, dst, from_rank, mask)
    else:
        _buffer_get(dst, buf, offsets, from_rank, mask)


@triton.jit
def _buffer_get(dst, buf, offsets, from_rank, mask):
    """dst = rank from_rank's copy of buf[offsets]; under validation a refused lane stores
    nothing into dst."""
    if VALIDATE:
        p, m = _checked(buf.ptr + offsets, from_rank, buf.peer_bases, buf.local_rank, mask, None)
        tl.store(dst, tl.load(p, mask=m), mask=m)
    else:
        tl.store(dst, tl.load(buffer_translate(buf, offsets, from_rank), mask=mask), mask=mask)


@triton.jit
def buffer_signal_set(buf, index, value, to_rank):
    """signal_set on element index of rank to_rank's copy of buf."""
    signal_set(buf.ptr + index, value, to_rank, buf.peer_bases, buf.local_rank)


@triton.jit
def buffer_signal_add(buf, index, value, to_rank):
    """signal_add on element index of rank to_rank's copy of buf."""
    signal_add(buf.ptr + index, value, to_rank, buf.peer_bases, buf.local_rank)


@triton.jit
def buffer_signal_wait_until(buf, index, cmp, value,
                             timeout_ns=DEFAULT_TIMEOUT_NS):
    """signal_wait_until on element index of this rank's buf."""
    return signal_wait_until(buf.ptr + index, cmp, value, timeout_ns)


@triton.jit
def buffer_put_signal(src, buf, offsets, sig, sig_index, sig_value, to_rank, mask=None,
                      sig_op: tl.constexpr = None):
    """put_signal from src (local pointers) into buf[offsets] of rank to_rank, then its
    sig[sig_index] (sig: a SymmetricBuffer). A 0.x call buffer_put_signal(buf, offsets, src,
    sig, ...) still works, with a FutureWarning when the kernel compiles."""
    if _is_buffer(src):
        _deprecated_order("buffer_put_signal")
        _put_signal(src.ptr + buf, offsets, sig.ptr + sig_index, sig_value, to_rank,
                    src.peer_bases, src.local_rank, mask=mask, sig_op=sig_op,
                    sig_peer_bases=sig.peer_bases)
    else:
        _put_signal(buf.ptr + offsets, src, sig.ptr + sig_index, sig_value, to_rank,
                    buf.peer_bases, buf.local_rank, mask=mask, sig_op=sig_op,
                    sig_peer_bases=sig.peer_bases)


@triton.jit
def buffer_fence(buf):
    """fence through buf's table."""
    fence(buf.peer_bases)


@triton.jit
def buffer_quiet(buf):
    """quiet through buf's table."""
    quiet(buf.peer_bases)
