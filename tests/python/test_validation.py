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

from mpi_cases import check, launch, refused  # noqa: E402
rank, size, cases = launch()  # mpiexec's MPI (initialised before symaddr), or torchrun's group
import numpy as np  # noqa: E402

faulthandler.dump_traceback_later(240, exit=True)

import symaddr as sa  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from symaddr import triton as st  # noqa: E402
from symaddr.triton import heap as iris  # noqa: E402

right = (rank + 1) % size
left = (rank - 1) % size
N = 37  # odd: the last block is masked
BLOCK = 64

TORCH = os.environ.get("SYMADDR_TEST_ARRAYS", "numpy") == "torch"  # torch CUDA tensors, compiled
ctx = sa.Context(backend=os.environ.get("SYMADDR_BACKEND", "cpu"))
check(ctx.validating and st.VALIDATE, "validation on in the context and in symaddr.triton")
if TORCH:
    import torch
    F32 = torch.float32
else:
    F32 = np.float32


def H(a):
    """A NumPy copy of an array's values."""
    if TORCH:
        torch.cuda.synchronize()
        return a.detach().cpu().numpy()
    return np.array(a)


def local(n):
    """n float32 of this rank's own memory (not symmetric)."""
    if TORCH:
        return torch.empty(n, dtype=F32, device="cuda")
    return ctx.empty_local(n, F32)


def set_(a, values):
    if TORCH:
        a.copy_(torch.as_tensor(np.ascontiguousarray(values), dtype=F32))
    else:
        a[...] = values


def settle():
    if TORCH:
        torch.cuda.synchronize()
    ctx.barrier()
    if TORCH:
        torch.cuda.synchronize()


def drop(a):
    if not TORCH:
        ctx.free_local(a)


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


def test_correct_kernels():
    """The seed's store and a load over views at an odd offset, each through its own
    allocation's table, and Iris's store over heap_bases for a heap allocation: exact, and
    no host call refuses anything."""
    whole, wmap = ctx.allocate_symmetric(N + 3, F32)
    dst = whole[3:]
    src = local(N)
    set_(src, mine(rank))
    set_(dst, np.zeros(N))
    settle()
    k_store[(1,)](dst, src, N, right, wmap.peer_bases, rank, BLOCK=BLOCK)
    settle()
    check(np.array_equal(H(dst), mine(left)), "store through the view's own table")
    out = local(N)
    k_load[(1,)](out, dst, N, right, wmap.peer_bases, rank, BLOCK=BLOCK)
    settle()
    check(np.array_equal(H(out), mine(rank)), "load through the view's own table")
    h, _ = ctx.allocate_symmetric(N, F32, provider="heap")
    set_(h, np.zeros(N))
    settle()
    k_iris_store[(1,)](h, N, float(rank + 1), rank, right, ctx.heap_bases, BLOCK=BLOCK)
    settle()
    check(np.all(H(h) == left + 1), "Iris's store over heap_bases for a heap allocation")
    ctx.sync()
    for a in (whole, h):
        ctx.free(a)
    for a in (src, out):
        drop(a)


def test_heap_bases_for_ipc():
    """Iris's store given heap_bases for an ipc tensor: refused, the peer's copy untouched,
    OUT_OF_BOUNDS from the next host call; the call after it is clean."""
    x, _ = ctx.allocate_symmetric(N, F32)
    set_(x, mine(rank))
    settle()
    k_iris_store[(1,)](x, N, -7.0, rank, right, ctx.heap_bases, BLOCK=BLOCK)
    refused("barrier after the kernel", ctx.barrier, ["refused by validation"],
            "SYMADDR_ERR_OUT_OF_BOUNDS")
    settle()
    check(np.array_equal(H(x), mine(rank)), "no store landed: %s" % H(x)[:3])
    ctx.free(x)


def test_other_allocations_table():
    """One allocation's peer_bases for another's pointer: the load's refused lanes read
    `other`; OUT_OF_BOUNDS from the next host call."""
    a, amap = ctx.allocate_symmetric(N, F32)
    b, _ = ctx.allocate_symmetric(N, F32)
    set_(b, mine(rank))
    out = local(N)
    settle()
    k_load[(1,)](out, b, N, right, amap.peer_bases, rank, BLOCK=BLOCK)
    refused("sync after the kernel", ctx.sync, ["refused by validation"],
            "SYMADDR_ERR_OUT_OF_BOUNDS")
    check(np.all(H(out) == -1.0), "refused lanes read other: %s" % H(out)[:3])
    settle()
    ctx.free(a)
    ctx.free(b)
    drop(out)


def test_past_the_end_and_bad_rank():
    """A pointer past its allocation's end (allocation_bytes: the whole backing allocation),
    and a rank out of range: OUT_OF_BOUNDS, then INVALID_ARG; only the lanes inside landed."""
    x, xmap = ctx.allocate_symmetric(N, F32)
    room = xmap.allocation_bytes // 4  # elements of the backing allocation
    whole = (sa._arrays.torch_tensor(xmap.allocation_base, (room,), F32, ctx._device())[0]
             if TORCH else sa._arrays.host_array(xmap.allocation_base, (room,), F32, None)[0])
    set_(whole, np.full(room, 5.0))
    src = local(8)
    set_(src, np.full(8, -3.0))
    settle()
    k_store_at[(1,)](x, room - 4, src, 8, right, xmap.peer_bases, rank, BLOCK=8)
    refused("barrier after the kernel", ctx.barrier, ["refused by validation"],
            "SYMADDR_ERR_OUT_OF_BOUNDS")
    settle()
    got = H(whole)
    check(np.all(got[:room - 4] == 5) and np.all(got[room - 4:] == -3),
          "the 4 lanes inside the allocation landed, the rest were refused: %s" % got[-6:])
    set_(whole, np.full(room, 5.0))
    settle()
    k_store_at[(1,)](x, 0, src, 8, size + 2, xmap.peer_bases, rank, BLOCK=8)
    refused("barrier after the kernel", ctx.barrier, ["refused by validation"],
            "SYMADDR_ERR_INVALID_ARG")
    settle()
    check(np.all(H(whole) == 5), "nothing landed")
    del whole
    ctx.free(x)
    drop(src)



def test_freed_table():
    """A kernel given the table of an allocation that was freed (the table kept from before):
    refused, nothing lands, and the next host call raises INVALID_MAP."""
    x, xmap = ctx.allocate_symmetric(N, F32)
    table = xmap.peer_bases
    set_(x, mine(rank))
    src = local(N)
    set_(src, np.full(N, -3.0))
    # the destination as a plain array of the same memory, so that only the table is stale
    dst = x if TORCH else sa._arrays.host_array(xmap.allocation_base, (N,), F32, None)[0]
    settle()
    ctx.free(x)
    try:  # under the interpreter the launch itself refuses the table; compiled, the next call
        k_store[(1,)](dst, src, N, right, table, rank, BLOCK=BLOCK)
        settle()
        raise AssertionError("a freed table passed")
    except sa.SymaddrError as e:
        check(e.name == "SYMADDR_ERR_INVALID_MAP" and "freed" in str(e), str(e))
    if not TORCH:  # the same table as a plain array: the kernel runs, refused, as compiled
        raw = sa._arrays.host_array(table.__array_interface__["data"][0], (size,), np.int64,
                                    None)[0]
        k_store[(1,)](dst, src, N, right, raw, rank, BLOCK=BLOCK)
        try:
            settle()
            raise AssertionError("a freed table passed")
        except sa.SymaddrError as e:
            check(e.name == "SYMADDR_ERR_INVALID_MAP" and "freed" in str(e), str(e))
    settle()
    check(np.array_equal(H(x), mine(rank)), "nothing landed through the freed table")
    drop(src)


def test_args_mode():
    """Context(validate=2), SYMADDR_VALIDATE_ARGS, the C field's value for "args": a validating
    context like validate=1 (the library compares the calls' arguments, this package raises
    the kernels' refusals). Before, the package read the int 2 as off: the refused store of
    test_heap_bases_for_ipc was never raised."""
    with sa.Context(backend=ctx.backend, validate=2) as vctx:
        check(vctx.validating, "validate=2: not validating")
        x, _ = vctx.allocate_symmetric(N, F32)
        set_(x, mine(rank))
        vctx.barrier()
        k_iris_store[(1,)](x, N, -7.0, rank, right, vctx.heap_bases, BLOCK=BLOCK)
        refused("barrier after the kernel", vctx.barrier, ["refused by validation"],
                "SYMADDR_ERR_OUT_OF_BOUNDS")
        vctx.barrier()
        check(np.array_equal(H(x), mine(rank)), "no store landed: %s" % H(x)[:3])
        vctx.free(x)
    for value, on in ((0, False), (1, True), (True, True), (False, False)):
        with sa.Context(backend=ctx.backend, validate=value) as c:
            check(c.validating == on, "validate=%r: validating %s" % (value, c.validating))


LANES = 4096  # a block far past the allocations below (the store)
M = 64  # elements of each allocation: 256 bytes, so a heap's next allocation starts right after


@triton.jit
def k_forms(dst, buf, src, out, peer, table, cur, FORM: tl.constexpr, LANES: tl.constexpr):
    """One form of access, LANES lanes from dst's first element into rank peer's copy (or, for
    the loads, from it into out); no mask unless the form says so (a mask only narrows)."""
    offs = tl.arange(0, LANES)
    v = tl.load(src + offs)
    if FORM == "translate":
        tl.store(st.translate(dst + offs, peer, table, cur), v)
    elif FORM == "store":
        st.store(dst + offs, v, peer, table, cur)
    elif FORM == "store masked":
        st.store(dst + offs, v, peer, table, cur, mask=offs < LANES)
    elif FORM == "buffer_store":
        st.buffer_store(buf, offs, v, peer)
    elif FORM == "buffer_store masked":
        st.buffer_store(buf, offs, v, peer, mask=offs < LANES)
    elif FORM == "atomic_add":
        st.atomic_add(dst + offs, v, peer, table, cur)
    elif FORM == "buffer_atomic_add":
        st.buffer_atomic_add(buf, offs, v, peer)
    elif FORM == "atomic_add masked":
        st.atomic_add(dst + offs, v, peer, table, cur, mask=offs < LANES)
    elif FORM == "put":
        st.put(src + offs, dst + offs, cur, peer, table)
    elif FORM == "buffer_put":
        st.buffer_put(src + offs, buf, offs, peer)
    elif FORM == "iris store":
        iris.store(dst + offs, v, cur, peer, table)
    elif FORM == "load":
        tl.store(out + offs, st.load(dst + offs, peer, table, cur, other=-1.0))
    elif FORM == "buffer_load":
        tl.store(out + offs, st.buffer_load(buf, offs, peer, other=-1.0))
    else:  # "get"
        st.get(dst + offs, out + offs, cur, peer, table)


STORES = ("translate", "store", "store masked", "buffer_store", "buffer_store masked",
          "atomic_add", "buffer_atomic_add", "atomic_add masked", "put", "buffer_put",
          "iris store")
LOADS = ("load", "buffer_load", "get")


def every_lane(provider):
    """Every form, a block of LANES lanes from an allocation of M elements into the right
    neighbour's copy: exactly its M lanes land there, the rest are refused (OUT_OF_BOUNDS from
    the next host call) and land nowhere: not past the allocation (on the heap, the next
    allocation starts right there), not in this rank's own copy (before, a block was checked by
    its lowest lane: 100 of 100 elements of the next allocation were overwritten, and a
    refusal put the peer's values into this rank's copy). Loads read `other` on refused
    lanes."""
    a, amap = ctx.allocate_symmetric(M, F32, provider=provider)
    b, _ = ctx.allocate_symmetric(M, F32, provider=provider)
    buf = ctx.bind(a)
    src, out = local(LANES), local(LANES)
    vals = (np.arange(LANES) + 1000 * (rank + 1)).astype(np.float32)
    set_(src, vals)
    before = (np.arange(M) + 100000 * (rank + 1)).astype(np.float32)
    for form in STORES + LOADS:
        set_(a, before)
        set_(b, before)
        set_(out, np.full(LANES, -5.0))
        settle()
        k_forms[(1,)](a, buf, src, out, right, amap.peer_bases, rank, FORM=form, LANES=LANES)
        refused("%s %s" % (provider, form), ctx.barrier, ["refused by validation"],
                "SYMADDR_ERR_OUT_OF_BOUNDS")
        settle()
        lefts = (np.arange(M) + 1000 * (left + 1)).astype(np.float32)
        want_a = before if form in LOADS else (
            before + lefts if "atomic_add" in form else lefts)
        check(np.array_equal(H(a), want_a), "%s %s: this rank's allocation %s" % (
            provider, form, H(a)[[0, M - 1]]))
        check(np.array_equal(H(b), before), "%s %s: the next allocation written: %s" % (
            provider, form, H(b)[:4]))
        if form in LOADS:
            mine = (np.arange(M) + 100000 * (right + 1)).astype(np.float32)
            rest = -5.0 if form == "get" else -1.0  # get stores nothing on a refused lane
            check(np.array_equal(H(out)[:M], mine) and np.all(H(out)[M:] == rest),
                  "%s %s: the lanes past the allocation read %s" % (provider, form,
                                                                     H(out)[M:M + 3]))
    for x in (a, b):
        ctx.free(x)
    for x in (src, out):
        drop(x)


def test_every_lane_ipc():
    every_lane("ipc")


def test_every_lane_heap():
    """The heap's allocations lie one after another: an allocation's own table (its map's
    peer_bases) bounds every form to it; heap_bases still covers the whole heap."""
    a, amap = ctx.allocate_symmetric(M, F32, provider="heap")
    b, bmap = ctx.allocate_symmetric(M, F32, provider="heap")
    check(bmap.allocation_base == amap.allocation_base + 4 * M and amap.allocation_bytes == 4 * M,
          "heap allocations at 0x%x and 0x%x (%d bytes)" % (amap.allocation_base,
                                                              bmap.allocation_base,
                                                              amap.allocation_bytes))
    ctx.free(a)
    ctx.free(b)
    every_lane("heap")


@triton.jit
def k_copied(dst, src, peer, table, cur, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    st.store(dst + offs, tl.load(src + offs), peer, table, cur)


def test_copied_table():
    """A copy of a map's peer_bases (NumPy's copy, as torch.clone) has no header: validation
    refuses every access through it and the next host call raises INVALID_MAP naming what to
    pass; nothing lands. Before, a copy passed unchecked (wrong writes, or SIGSEGV)."""
    x, xmap = ctx.allocate_symmetric(N, F32)
    set_(x, mine(rank))
    src = local(64)
    set_(src, np.full(64, -3.0))
    copied = xmap.peer_bases.clone() if TORCH else xmap.peer_bases.copy()
    settle()
    k_copied[(1,)](x, src, right, copied, rank, BLOCK=32)
    refused("a copied table", ctx.barrier, ["not one of symaddr's", "map.peer_bases"],
            "SYMADDR_ERR_INVALID_MAP")
    settle()
    check(np.array_equal(H(x), mine(rank)), "a store through a copied table landed: %s" % H(x)[:3])
    settle()  # every rank has looked before its left neighbour stores through the map's own
    k_copied[(1,)](x, src, right, xmap.peer_bases, rank, BLOCK=32)  # the map's own: exact
    settle()
    check(np.all(H(x)[:32] == -3.0) and np.array_equal(H(x)[32:], mine(rank)[32:]),
          "the map's own table: %s" % H(x)[:3])
    ctx.free(x)
    drop(src)


for name, fn in (("correct kernels are not refused", test_correct_kernels),
                 ("heap_bases for an ipc tensor", test_heap_bases_for_ipc),
                 ("another allocation's table", test_other_allocations_table),
                 ("a view past its allocation; a rank out of range",
                  test_past_the_end_and_bad_rank),
                 ("a freed allocation's table", test_freed_table),
                 ("validate=2 (args) validates", test_args_mode),
                 ("every lane of every form, ipc", test_every_lane_ipc),
                 ("every lane of every form, heap allocations their own", test_every_lane_heap),
                 ("a copied table is refused", test_copied_table)):
    cases.run(name, fn)
ctx.close()
sys.exit(cases.finish())
