# SPDX-License-Identifier: MIT
"""Validation mode for Triton kernels (SYMADDR_VALIDATE=1 at import of symaddr.triton): a
pointer translated with a table that is not its allocation's, a view past its allocation, or
a rank out of range is refused in the kernel (the access skipped, the status recorded in the
table's header) and raised by the context's next host call, on the rank that made it; a
correct kernel is never refused.
    SYMADDR_VALIDATE=1 TRITON_INTERPRET=1 mpiexec -n 3 python3 tests/python/test_validation.py
Exact values from distinct per-rank data; prints the harness's summary line."""
import os
import sys

if os.environ.get("SYMADDR_TEST_PYTHONPATH"):  # the source tree's package, before an installed one
    sys.path.insert(0, os.environ["SYMADDR_TEST_PYTHONPATH"])
os.environ.setdefault("SYMADDR_VALIDATE", "1")  # before symaddr.triton is imported

import faulthandler  # noqa: E402

from mpi4py import MPI  # noqa: E402  (initialises MPI before symaddr)
import numpy as np  # noqa: E402

faulthandler.dump_traceback_later(240, exit=True)

import symaddr as sa  # noqa: E402
from mpi_cases import Cases, check  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from symaddr import triton as st  # noqa: E402
from symaddr.triton import heap as iris  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right = (rank + 1) % size
left = (rank - 1) % size
cases = Cases(comm)
N = 37  # odd: the last block is masked
BLOCK = 64

ctx = sa.Context(backend="cpu")
check(ctx.validating and st.VALIDATE, "validation on in the context and in symaddr.triton")


@triton.jit
def k_store(dst, src, n, peer, table, cur, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    st.store(dst + offs, tl.load(src + offs, mask=m), peer, table, cur, mask=m)


@triton.jit
def k_store_at(dst, skip, src, n, peer, table, cur, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    st.store(dst + skip + offs, tl.load(src + offs, mask=m), peer, table, cur, mask=m)


@triton.jit
def k_load(out, src, n, peer, table, cur, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, st.load(src + offs, peer, table, cur, mask=m, other=-1.0), mask=m)


@triton.jit
def k_iris_store(dst, n, value, cur, peer, heap_bases, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    iris.store(dst + offs, value, cur, peer, heap_bases, mask=offs < n)


def mine(r):
    return (np.arange(N) % 13 + 100 * (r + 1)).astype(np.float32)


def refused(fn, status):
    """fn (a host call after the kernel) raises status on every rank."""
    try:
        fn()
    except sa.SymaddrError as e:
        check(e.name == status and "refused by validation" in str(e), str(e))
        return
    raise AssertionError("no error, want %s" % status)


def test_correct_kernels():
    """The seed's store and a load over views at an odd offset, each through its own
    allocation's table, and Iris's store over heap_bases for a heap allocation: exact, and
    no host call refuses anything."""
    whole, wmap = ctx.allocate_symmetric(N + 3, np.float32)
    dst = whole[3:]
    src = ctx.empty_local(N, np.float32)
    src[:] = mine(rank)
    dst[:] = 0
    ctx.barrier()
    k_store[(1,)](dst, src, N, right, wmap.peer_bases, rank, BLOCK=BLOCK)
    ctx.barrier()
    check(np.array_equal(dst, mine(left)), "store through the view's own table")
    out = ctx.empty_local(N, np.float32)
    k_load[(1,)](out, dst, N, right, wmap.peer_bases, rank, BLOCK=BLOCK)
    ctx.barrier()
    check(np.array_equal(out, mine(rank)), "load through the view's own table")
    h, _ = ctx.allocate_symmetric(N, np.float32, provider="heap")
    h[:] = 0
    ctx.barrier()
    k_iris_store[(1,)](h, N, float(rank + 1), rank, right, ctx.heap_bases, BLOCK=BLOCK)
    ctx.barrier()
    check(np.all(h == left + 1), "Iris's store over heap_bases for a heap allocation")
    ctx.sync()
    for a in (whole, h):
        ctx.free(a)
    for a in (src, out):
        ctx.free_local(a)


def test_heap_bases_for_ipc():
    """Iris's store given heap_bases for an ipc tensor: refused, the peer's copy untouched,
    OUT_OF_BOUNDS from the next host call; the call after it is clean."""
    x, _ = ctx.allocate_symmetric(N, np.float32)
    x[:] = mine(rank)
    ctx.barrier()
    k_iris_store[(1,)](x, N, -7.0, rank, right, ctx.heap_bases, BLOCK=BLOCK)
    refused(ctx.barrier, "SYMADDR_ERR_OUT_OF_BOUNDS")
    ctx.barrier()
    check(np.array_equal(x, mine(rank)), "no store landed: %s" % x[:3])
    ctx.free(x)


def test_other_allocations_table():
    """One allocation's peer_bases for another's pointer: the load's refused lanes read
    `other`; OUT_OF_BOUNDS from the next host call."""
    a, amap = ctx.allocate_symmetric(N, np.float32)
    b, _ = ctx.allocate_symmetric(N, np.float32)
    b[:] = mine(rank)
    out = ctx.empty_local(N, np.float32)
    ctx.barrier()
    k_load[(1,)](out, b, N, right, amap.peer_bases, rank, BLOCK=BLOCK)
    refused(ctx.sync, "SYMADDR_ERR_OUT_OF_BOUNDS")
    check(np.all(out == -1.0), "refused lanes read other: %s" % out[:3])
    ctx.barrier()
    ctx.free(a)
    ctx.free(b)
    ctx.free_local(out)


def test_past_the_end_and_bad_rank():
    """A pointer past its allocation's end (allocation_bytes: the whole backing allocation),
    and a rank out of range: OUT_OF_BOUNDS, then INVALID_ARG; only the lanes inside landed."""
    x, xmap = ctx.allocate_symmetric(N, np.float32)
    room = xmap.allocation_bytes // 4  # elements of the backing allocation
    whole = sa._arrays.host_array(xmap.allocation_base, (room,), np.float32, None)[0]
    whole[:] = 5
    src = ctx.empty_local(8, np.float32)
    src[:] = -3
    ctx.barrier()
    k_store_at[(1,)](x, room - 4, src, 8, right, xmap.peer_bases, rank, BLOCK=8)
    refused(ctx.barrier, "SYMADDR_ERR_OUT_OF_BOUNDS")
    ctx.barrier()
    check(np.all(whole[:room - 4] == 5) and np.all(whole[room - 4:] == -3),
          "the 4 lanes inside the allocation landed, the rest were refused: %s" % whole[-6:])
    whole[:] = 5
    ctx.barrier()
    k_store_at[(1,)](x, 0, src, 8, size + 2, xmap.peer_bases, rank, BLOCK=8)
    refused(ctx.barrier, "SYMADDR_ERR_INVALID_ARG")
    ctx.barrier()
    check(np.all(whole == 5), "nothing landed")
    del whole
    ctx.free(x)
    ctx.free_local(src)


for name, fn in (("correct kernels are not refused", test_correct_kernels),
                 ("heap_bases for an ipc tensor", test_heap_bases_for_ipc),
                 ("another allocation's table", test_other_allocations_table),
                 ("a view past its allocation; a rank out of range",
                  test_past_the_end_and_bad_rank)):
    cases.run(name, fn)
ctx.close()
sys.exit(cases.finish())
