# SPDX-License-Identifier: MIT
"""Iris's API on symaddr, so that ROCm/iris's own unit tests run against symaddr with nothing
changed in them: their `import iris` finds this package (scripts/iris-suite.sh puts it first
on PYTHONPATH). The device functions are symaddr.triton.heap's, name for name; the host side
is what those tests call: iris.iris(heap_size) and its get_rank, get_num_ranks,
get_heap_bases, zeros/ones/full/empty/arange (and their _like forms) on the heap, and barrier.
Each iris.iris() is a symaddr.Context with a heap of heap_size bytes (the one before it is
closed, as each Iris test makes its own)."""
import torch
from mpi4py import MPI  # noqa: F401  (initialises MPI before symaddr)

import symaddr
from symaddr.triton.heap import (atomic_add, atomic_and, atomic_cas, atomic_max,  # noqa: F401
                                 atomic_min, atomic_or, atomic_sub, atomic_xchg, atomic_xor,
                                 copy, get, load, put, store, translate)

_current = None


class iris:  # noqa: N801  (Iris's own name)
    """A symaddr context with a heap, as Iris's iris.iris(heap_size) is one heap."""

    def __init__(self, heap_size=1 << 30):
        global _current
        if _current is not None:
            _current._ctx.close()
        self._ctx = symaddr.Context(heap_bytes=heap_size)
        _current = self

    def get_rank(self):
        """This rank."""
        return self._ctx.rank

    def get_num_ranks(self):
        """Ranks of the context."""
        return self._ctx.size

    def get_heap_bases(self):
        """The heap's table (int64, device-resident): Iris's heap_bases."""
        return self._ctx.heap_bases

    def barrier(self):
        """Every rank's work so far is done and visible (Iris's: synchronize, then MPI)."""
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        self._ctx.barrier()
        if torch.cuda.is_available():
            torch.cuda.synchronize()

    def _alloc(self, size, dtype):
        shape = tuple(size[0]) if len(size) == 1 and not isinstance(size[0], int) else size
        return self._ctx.allocate_symmetric(shape, dtype or torch.float32, provider="heap")[0]

    def empty(self, *size, dtype=None, device=None, **kw):
        """Uninitialised heap memory."""
        return self._alloc(size, dtype)

    def zeros(self, *size, dtype=None, device=None, **kw):
        """Zeros on the heap."""
        return self._alloc(size, dtype).zero_()

    def ones(self, *size, dtype=None, device=None, **kw):
        """Ones on the heap."""
        return self._alloc(size, dtype).fill_(1)

    def full(self, size, fill_value, dtype=None, device=None, **kw):
        """fill_value on the heap."""
        return self._alloc((size,) if isinstance(size, int) else (tuple(size),),
                           dtype).fill_(fill_value)

    def arange(self, start, end=None, step=1, dtype=None, device=None, **kw):
        """torch.arange's values on the heap."""
        values = torch.arange(start, end, step, dtype=dtype) if end is not None else \
            torch.arange(start, dtype=dtype)
        t = self._alloc((values.numel(),), values.dtype)
        t.copy_(values)
        return t

    def zeros_like(self, t, dtype=None, **kw):
        """Zeros of t's shape and dtype on the heap."""
        return self.zeros(tuple(t.shape), dtype=dtype or t.dtype)

    def ones_like(self, t, dtype=None, **kw):
        """Ones of t's shape and dtype on the heap."""
        return self.ones(tuple(t.shape), dtype=dtype or t.dtype)

    def empty_like(self, t, dtype=None, **kw):
        """Heap memory of t's shape and dtype."""
        return self.empty(tuple(t.shape), dtype=dtype or t.dtype)
