"""symaddr.iris, Iris's host API as Iris programs call it: iris.iris(heap_size), its ranks and
device, tensor creation with torch's signatures (every shape form, dtype defaults, out=,
requires_grad, layouts, memory formats, generators, zero elements), is_symmetric,
as_symmetric, allocate_symmetric, broadcast, logging with the rank, and Iris's device
functions over heap_bases in a Triton kernel. Exact values against torch's own calls.
    TRITON_INTERPRET=1 SYMADDR_BACKEND=cpu mpiexec -n 3 python3 tests/python/test_iris_host.py
(or under torchrun, where the context is torch.distributed's). Prints the harness's summary."""
import logging
import os
import sys

if os.environ.get("SYMADDR_TEST_PYTHONPATH"):  # the source tree's package, before an installed one
    sys.path.insert(0, os.environ["SYMADDR_TEST_PYTHONPATH"])

import faulthandler  # noqa: E402

faulthandler.dump_traceback_later(float(os.environ.get("SYMADDR_TEST_DEADLINE", "600")),
                                  exit=True)

import numpy as np  # noqa: E402
import torch  # noqa: E402

from mpi_cases import check, launch  # noqa: E402

_, _, cases = launch()  # mpiexec's MPI (initialised before symaddr), or torchrun's group
import symaddr  # noqa: E402
import symaddr.iris as iris  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

shmem = iris.iris(1 << 24)
rank, size = shmem.get_rank(), shmem.get_num_ranks()
DEV = shmem.get_device()


def raises(what, fn, exc=ValueError, words=()):
    try:
        fn()
    except exc as e:
        check(all(w in str(e) for w in words), "%s: %s" % (what, e))
        return
    raise AssertionError("%s passed, want %s" % (what, exc.__name__))


def test_ranks_and_device():
    """Ranks, device, compute units and the heap's table."""
    check(0 <= rank < size and shmem.cur_rank == rank and shmem.num_ranks == size, "ranks")
    check(DEV == torch.device(shmem.device), "device %s" % DEV)
    check(shmem.get_cu_count() > 0, "compute units")
    hb = shmem.get_heap_bases()
    check(hb.shape == (size,) and hb.dtype == torch.int64, "heap_bases: %s %s" % (
        tuple(hb.shape), hb.dtype))
    x = shmem.zeros(5)
    check(int(hb[rank]) <= x.data_ptr() < int(hb[rank]) + (1 << 24), "a tensor in the heap")


def test_shapes_and_dtypes():
    """Every shape form torch takes, torch's default dtype, full's inferred dtype."""
    for size_args in ((2, 3), ((2, 3),), (((2, 3),),), (torch.Size([2, 3]),), ([2, 3],)):
        t = shmem.zeros(*size_args)
        check(tuple(t.shape) == (2, 3) and t.dtype == torch.get_default_dtype(),
              "zeros%r: %s %s" % (size_args, tuple(t.shape), t.dtype))
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        check(shmem.ones(4).dtype == torch.float64, "dtype=None is torch's default dtype")
    finally:
        torch.set_default_dtype(old)
    for fill, want in ((7, torch.int64), (1.5, torch.get_default_dtype()), (True, torch.bool)):
        t = shmem.full((3,), fill)
        check(t.dtype == want and torch.equal(t, torch.full((3,), fill, device=DEV)),
              "full(%r): %s" % (fill, t.dtype))
    check(torch.equal(shmem.ones(2, 5, dtype=torch.int32),
                      torch.ones(2, 5, dtype=torch.int32, device=DEV)), "ones")
    check(shmem.empty(3, 4, dtype=torch.bfloat16).shape == (3, 4), "empty")
    raises("zeros(-1)", lambda: shmem.zeros(-1), ValueError, ["negative"])
    raises("zeros('a')", lambda: shmem.zeros("a"), TypeError)


def test_sequences_and_random():
    """arange, linspace, rand, randn, randint and uniform: torch's values (the same
    generator seed gives torch's own draws)."""
    check(torch.equal(shmem.arange(5), torch.arange(5, device=DEV)), "arange(5)")
    check(torch.equal(shmem.arange(1.0, 2.0, 0.25), torch.arange(1.0, 2.0, 0.25, device=DEV)),
          "arange(1.0, 2.0, 0.25)")
    check(torch.equal(shmem.arange(10, 1, -3), torch.arange(10, 1, -3, device=DEV)),
          "arange(10, 1, -3)")
    check(torch.equal(shmem.linspace(0, 1, 5), torch.linspace(0, 1, 5, device=DEV)),
          "linspace")
    for name in ("rand", "randn"):
        g1, g2 = torch.Generator(device=DEV), torch.Generator(device=DEV)
        g1.manual_seed(17 + rank)
        g2.manual_seed(17 + rank)
        got = getattr(shmem, name)(3, 7, generator=g1)
        check(torch.equal(got, getattr(torch, name)(3, 7, generator=g2, device=DEV)), name)
    g1, g2 = torch.Generator(device=DEV), torch.Generator(device=DEV)
    g1.manual_seed(5)
    g2.manual_seed(5)
    got = shmem.randint(3, 10, (4, 5), generator=g1)
    check(got.dtype == torch.int64 and
          torch.equal(got, torch.randint(3, 10, (4, 5), generator=g2, device=DEV)), "randint")
    check(shmem.randint(4, (9,)).max() < 4, "randint(high, size)")
    u = shmem.uniform((1000,), low=-2.0, high=3.0)
    check(u.dtype == torch.float and bool((u >= -2.0).all() and (u < 3.0).all()), "uniform")


def test_keywords():
    """out=, requires_grad, device, layout, memory formats and the _like forms."""
    out = shmem.zeros(6, dtype=torch.int32)
    got = shmem.ones(2, 3, out=out, dtype=torch.int32)
    check(got.data_ptr() == out.data_ptr() and tuple(got.shape) == (2, 3) and
          bool((out == 1).all()), "out= is filled and returned")
    # Iris's exceptions and words (its tests match them): RuntimeError, element count first
    raises("out= of plain memory", lambda: shmem.zeros(6, out=torch.zeros(6, device=DEV)),
           RuntimeError, ["not on the symmetric heap"])
    raises("out= of another size", lambda: shmem.zeros(5, out=out, dtype=torch.int32),
           RuntimeError, ["has 6 elements, but 5 are required"])
    raises("out= of another dtype", lambda: shmem.zeros(6, out=out, dtype=torch.int64),
           RuntimeError, ["has dtype torch.int32, but torch.int64 is required"])
    a = shmem.allocate(7, torch.int16)
    check(tuple(a.shape) == (7,) and a.dtype == torch.int16 and shmem.is_symmetric(a) and
          shmem._Iris__on_symmetric_heap(a) and shmem._Iris__on_symmetric_heap(
              shmem.allocate(0, torch.int16)) and
          not shmem._Iris__on_symmetric_heap(torch.zeros(7, device=DEV)),
          "allocate(n, dtype), Iris's private heap check")
    check(shmem._Iris__allocate(3, torch.int64).shape == (3,), "Iris's private allocate")
    raises("arange(1, 5, 0)", lambda: shmem.arange(1, 5, 0), ValueError, ["step must be non-zero"])
    raises("arange(5, 1)", lambda: shmem.arange(5, 1), ValueError, ["inconsistent with step"])
    check(shmem.arange(5, 0, -1).tolist() == [5, 4, 3, 2, 1], "arange(5, 0, -1)")
    check(shmem.zeros(3, requires_grad=True).requires_grad, "requires_grad")
    other = "cuda:0" if DEV.type == "cpu" else "cpu"
    raises("device=%s" % other, lambda: shmem.zeros(3, device=other), RuntimeError,
           ["Device mismatch", str(DEV)])
    check(shmem.zeros(3, device=DEV).device == DEV, "device= this rank's")
    raises("layout=sparse_coo", lambda: shmem.zeros(3, layout=torch.sparse_coo))
    cl = shmem.empty(2, 3, 4, 5, memory_format=torch.channels_last)
    check(cl.is_contiguous(memory_format=torch.channels_last), "empty(channels_last)")
    src = torch.arange(120.0, device=DEV).reshape(2, 3, 4, 5).to(
        memory_format=torch.channels_last)
    z = shmem.zeros_like(src)
    check(z.is_contiguous(memory_format=torch.channels_last) and bool((z == 0).all()),
          "zeros_like keeps channels_last")
    check(torch.equal(shmem.full_like(src, 3.0), torch.full_like(src, 3.0)), "full_like")
    check(torch.equal(shmem.ones_like(src, dtype=torch.int16),
                      torch.ones_like(src, dtype=torch.int16)), "ones_like(dtype=)")
    e = shmem.empty_like(src, memory_format=torch.contiguous_format)
    check(e.is_contiguous(), "empty_like(contiguous_format)")
    g1, g2 = torch.Generator(device=DEV), torch.Generator(device=DEV)
    g1.manual_seed(3)
    g2.manual_seed(3)
    r = shmem.randint_like(src, 2, 9, generator=g1)
    check(torch.equal(r, torch.randint(2, 9, src.shape, generator=g2, device=DEV,
                                       dtype=src.dtype)), "randint_like")


def test_symmetry():
    """Every created tensor (zero-element ones too) is symmetric; plain ones are not;
    as_symmetric copies a plain tensor to the heap; allocate_symmetric's peer views."""
    made = [shmem.zeros(4), shmem.arange(3), shmem.zeros(0), shmem.zeros(3, 0),
            shmem.rand(2, 2)]
    check(all(shmem.is_symmetric(t) for t in made), "created tensors are symmetric")
    check(made[2].numel() == 0 and tuple(made[3].shape) == (3, 0), "zero-element tensors")
    plain = torch.arange(6, device=DEV)
    check(not shmem.is_symmetric(plain) and not shmem.is_symmetric("x"), "plain: not")
    s = shmem.as_symmetric(plain)
    check(shmem.is_symmetric(s) and torch.equal(s, plain), "as_symmetric copies")
    check(shmem.as_symmetric(s) is s, "as_symmetric of a symmetric tensor is itself")
    # Iris's allocate_symmetric: the tensor and one view per rank (this rank's: the tensor),
    # each rank's copy where this process reaches it (the table's entry, and what the rank
    # wrote); a view's peer_views at its offset; #546's peer_bases beside them
    for provider in ("heap", "ipc"):
        t, peers = shmem.allocate_symmetric(7, provider=provider)
        pb = peers.peer_bases
        check(isinstance(peers, tuple) and len(peers) == size and peers[rank] is t and
              t.dtype == torch.get_default_dtype() and
              all(p.shape == t.shape and p.dtype == t.dtype for p in peers),
              "%s: one view per rank, this rank's the tensor" % provider)
        check(all(int(pb[r]) == peers[r].data_ptr() for r in range(size)) and
              pb.shape == (size,), "%s: peer_bases[r] is rank r's view" % provider)
        t.copy_(torch.arange(7, dtype=t.dtype, device=DEV) + 10 * rank)
        shmem.barrier()
        check(all(torch.equal(peers[r].cpu(), torch.arange(7.) + 10 * r) for r in range(size)),
              "%s: each view reads its rank's values" % provider)
        w, _ = shmem.allocate_symmetric((4, 6), dtype=torch.int32, provider=provider)
        w.copy_(torch.arange(24, dtype=torch.int32, device=DEV).reshape(4, 6) * (rank + 1))
        shmem.barrier()
        col = shmem.peer_views(w[1:, 2::3])
        check(all(torch.equal(col[r].cpu(), (torch.arange(24, dtype=torch.int32).reshape(4, 6)
                                             * (r + 1))[1:, 2::3]) for r in range(size)),
              "%s: peer_views of a strided view at an offset" % provider)
        shmem.barrier()
    try:
        shmem.peer_views(plain)
        raise AssertionError("peer_views of a plain tensor passed")
    except symaddr.SymaddrError as e:
        check(e.name == "SYMADDR_ERR_NOT_FOUND", str(e))


@triton.jit
def k_store(dst, n, value, cur, peer, heap_bases, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    iris.store(dst + offs, value + offs, cur, peer, heap_bases, mask=offs < n)


def test_device_functions():
    """iris.store into the right neighbour's copy of a heap tensor, through heap_bases."""
    n = 37
    x = shmem.zeros(n, dtype=torch.int32)
    shmem.barrier()
    k_store[(1,)](x, n, 100 * (rank + 1), rank, (rank + 1) % size, shmem.get_heap_bases(),
                  BLOCK=64)
    shmem.barrier()
    left = (rank - 1) % size
    check(torch.equal(x, torch.arange(n, dtype=torch.int32, device=DEV) + 100 * (left + 1)),
          "the left neighbour's values")


def test_barriers():
    """barrier(stream=, group=) and device_barrier() as Iris's newer host class has them: a
    value written before either is what a peer's kernel reads after it; a group of other
    ranks is refused, naming the remedy."""
    x = shmem.zeros(5, dtype=torch.int32)
    for k, wait in enumerate((lambda: shmem.barrier(),
                              lambda: shmem.barrier(group=None),
                              lambda: shmem.device_barrier())):
        x.fill_(10 * k + rank)
        wait()
        out = torch.zeros(5, dtype=torch.int32, device=DEV)
        k_load[(1,)](x, out, 5, rank, (rank + 1) % size, shmem.get_heap_bases(), BLOCK=8)
        shmem.barrier()
        check(torch.equal(out.cpu(), torch.full((5,), 10 * k + (rank + 1) % size,
                                                dtype=torch.int32)), "barrier form %d" % k)
    for call in (lambda: shmem.barrier(group=object()), lambda: shmem.device_barrier(object())):
        try:
            call()
            raise AssertionError("a group of no ranks passed")
        except NotImplementedError as e:
            check("group=pg" in str(e), str(e))


@triton.jit
def k_load(src, out, n, cur, peer, heap_bases, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out + offs, iris.load(src + offs, cur, peer, heap_bases, mask=offs < n),
             mask=offs < n)


def test_broadcast():
    """A picklable object and a tensor from a source rank, on every rank."""
    src = size - 1
    got = shmem.broadcast({"k": [1, 2.5, "x"], "r": rank} if rank == src else None, src)
    check(got == {"k": [1, 2.5, "x"], "r": src}, "object: %r" % (got,))
    check(shmem.broadcast(42 if rank == 0 else None, 0) == 42, "scalar")
    # Iris's contract: a tensor or an array comes back as a NumPy array
    t = shmem.broadcast(torch.arange(11, dtype=torch.int32).reshape(1, 11) * 7 if rank == src
                        else None, src)
    check(isinstance(t, np.ndarray) and t.dtype == np.int32 and
          (t == np.arange(11, dtype=np.int32).reshape(1, 11) * 7).all(), "tensor: %r" % (t,))
    a = shmem.broadcast(np.arange(5, dtype=np.float64) / 4 if rank == 0 else None)
    check(isinstance(a, np.ndarray) and a.tolist() == [0, 0.25, 0.5, 0.75, 1.0],
          "array, source_rank 0 by default")
    b = shmem.broadcast_tensor(torch.full((3,), -2.5, dtype=torch.bfloat16) if rank == src
                               else None, src)
    check(torch.is_tensor(b) and b.device == DEV and b.dtype == torch.bfloat16 and
          b.tolist() == [-2.5] * 3, "broadcast_tensor: a bf16 tensor on this rank's device")
    raises("broadcast of bf16", lambda: shmem.broadcast(
        torch.ones(2, dtype=torch.bfloat16) if rank == 0 else None, 0), TypeError,
        ["broadcast_tensor"])
    raises("source_rank out of range", lambda: shmem.broadcast(1, size), ValueError, ["rank"])


def test_dropped_objects_closed():
    """An Iris object every rank dropped (del, as Iris's tests do between cases) has its
    context closed at the next iris.iris(); one still held keeps its own."""
    import gc
    a = iris.iris(1 << 20)
    held = a.context
    x = a.zeros(5)
    x.fill_(rank)
    del a, x
    gc.collect()
    b = iris.iris(1 << 20)
    check(not held._h, "the dropped object's context is closed")
    check(shmem.context._h and b.context._h, "the held ones are open")
    y = b.ones(3)
    b.barrier()
    check(torch.equal(y, torch.ones(3, device=DEV)), "the new object works")
    b.context.close()
    del b, y


def test_logging():
    """debug/info/warning/error carry the rank (Iris's record fields and the text)."""
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    h = Keep()
    log = logging.getLogger("symaddr.iris")
    log.addHandler(h)
    log.setLevel(logging.DEBUG)
    try:
        shmem.debug("d")
        shmem.info("i")
        shmem.warning("w")
        shmem.error("e")
    finally:
        log.removeHandler(h)
    check([r.levelno for r in records] == [logging.DEBUG, logging.INFO, logging.WARNING,
                                           logging.ERROR], "four records")
    check(all(r.iris_rank == rank and r.iris_num_ranks == size and
              ("[rank %d/%d]" % (rank, size)) in r.getMessage() for r in records),
          "each names the rank")


for name, fn in sorted(((k, v) for k, v in list(globals().items()) if k.startswith("test_")),
                       key=lambda kv: kv[1].__code__.co_firstlineno):
    cases.run(name[5:].replace("_", " "), fn)
shmem.context.close()
code = cases.finish()
if cases.group is not None:
    import torch.distributed as dist
    dist.destroy_process_group()
sys.exit(code)
