# SPDX-License-Identifier: MIT
"""The legacy form: the context-wide heap_bases table (Context.heap_bases, the peer_bases of
every heap allocation) with Iris's names and argument order, so that a kernel written for
Iris's device API runs on symaddr by changing its import:

    from symaddr.triton import heap as iris
    iris.store(buffer + offsets, 1, cur_rank, target_rank, heap_bases, mask=mask)

Every function is the explicit form of symaddr.triton with the ranks reordered: the pointer is
this rank's (from_rank for writes and atomics, to_rank for load, as Iris names them)."""
import triton
import triton.language as tl  # noqa: F401  (Triton's interpreter patches the jit functions' tl)

from symaddr import triton as sym


@triton.jit
def translate(ptr, from_rank, to_rank, heap_bases):
    """ptr of from_rank (this rank) as to_rank's copy."""
    return sym.translate(ptr, to_rank, heap_bases, from_rank)


@triton.jit
def load(pointer, to_rank, from_rank, heap_bases, mask=None):
    """Load from from_rank's copy of pointer; to_rank is this rank (Iris's order)."""
    return sym.load(pointer, from_rank, heap_bases, to_rank, mask=mask)


@triton.jit
def store(pointer, value, from_rank, to_rank, heap_bases, mask=None):
    """Store into to_rank's copy of pointer; from_rank is this rank."""
    sym.store(pointer, value, to_rank, heap_bases, from_rank, mask=mask)


@triton.jit
def get(from_ptr, to_ptr, from_rank, to_rank, heap_bases, mask=None):
    """to_ptr (local, to_rank is this rank) = from_rank's copy of from_ptr."""
    sym.get(to_ptr, from_ptr, from_rank, heap_bases, to_rank, mask=mask)


@triton.jit
def put(from_ptr, to_ptr, from_rank, to_rank, heap_bases, mask=None):
    """to_rank's copy of to_ptr = from_ptr (local, from_rank is this rank)."""
    sym.put(to_ptr, from_ptr, to_rank, heap_bases, from_rank, mask=mask)


@triton.jit
def atomic_add(pointer, val, from_rank, to_rank, heap_bases, mask=None, sem=None, scope=None):
    return sym.atomic_add(pointer, val, to_rank, heap_bases, from_rank, mask=mask, sem=sem,
                          scope=scope)


@triton.jit
def atomic_cas(pointer, cmp, val, from_rank, to_rank, heap_bases, sem=None, scope=None):
    return sym.atomic_cas(pointer, cmp, val, to_rank, heap_bases, from_rank, sem=sem,
                          scope=scope)


@triton.jit
def atomic_xchg(pointer, val, from_rank, to_rank, heap_bases, mask=None, sem=None, scope=None):
    return sym.atomic_xchg(pointer, val, to_rank, heap_bases, from_rank, mask=mask, sem=sem,
                           scope=scope)


@triton.jit
def signal_set(pointer, value, from_rank, to_rank, heap_bases):
    sym.signal_set(pointer, value, to_rank, heap_bases, from_rank)


@triton.jit
def signal_wait_until(pointer, value, max_spins):
    return sym.signal_wait_until(pointer, value, max_spins)
