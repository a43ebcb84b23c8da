# SPDX-License-Identifier: MIT
"""The symaddr Python package on the cpu backend with NumPy arrays:
    mpiexec -n 4 python3 tests/python/test_numpy.py
Exact values from distinct per-rank data (rank + 1), odd sizes and views at odd offsets,
against mpi4py's own collectives; every failure raises SymaddrError with its status. Prints the
harness's summary line."""
import array
import os
import sys

if os.environ.get("SYMADDR_TEST_PYTHONPATH"):  # the source tree's package, before an installed one
    sys.path.insert(0, os.environ["SYMADDR_TEST_PYTHONPATH"])

import faulthandler  # noqa: E402

from mpi4py import MPI  # noqa: E402  (initialises MPI before symaddr)
import numpy as np  # noqa: E402

# A rank that fails inside a case while its peers wait in MPI would hang them: fail instead.
faulthandler.dump_traceback_later(240, exit=True)

import symaddr as sa  # noqa: E402
from mpi_cases import Cases, check, refused  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
cases = Cases(comm)
N = 1001  # odd


def mpi_allreduce(a, op):
    """MPI's own allreduce of a NumPy array (buffer form: every rank takes the same path)."""
    out = np.empty_like(a)
    comm.Allreduce(np.ascontiguousarray(a), out, op=op)
    return out


ctx = sa.Context(backend="cpu")
check(ctx.rank == rank and ctx.size == size and ctx.backend == "cpu", "context")


def test_backend_from_the_environment():
    """Context() runs on SYMADDR_BACKEND's backend: it passed backend="auto" for it, which ran
    the cuda backend with SYMADDR_BACKEND=cpu on the GPU machine (the suite's cpu tests failed
    there) and the cpu backend with SYMADDR_BACKEND=cuda where cuda is not built."""
    lib = sa.load()
    missing = [n for n in ("cuda", "hip") if not lib.symaddr_backend_built(lib.abi["backend"][n])]
    old = os.environ.get("SYMADDR_BACKEND")
    try:
        os.environ["SYMADDR_BACKEND"] = "cpu"
        with sa.Context() as c:
            check(c.backend == "cpu", "SYMADDR_BACKEND=cpu ran %s" % c.backend)
        if not missing:
            return
        os.environ["SYMADDR_BACKEND"] = missing[0]
        refused("Context() with SYMADDR_BACKEND=%s, not built" % missing[0], sa.Context,
                [missing[0]], "SYMADDR_ERR_UNSUPPORTED")
    finally:
        if old is None:
            os.environ.pop("SYMADDR_BACKEND", None)
        else:
            os.environ["SYMADDR_BACKEND"] = old


def test_version():
    v = sa.version()
    check(len(v) == 3 and all(isinstance(x, int) for x in v), "version %s" % (v,))


def test_collectives():
    for dtype in (np.float32, np.int32, np.float64, np.int64):
        a, amap = ctx.allocate_symmetric(size * N + 3, dtype)
        r, _ = ctx.allocate_symmetric(size * N + 3, dtype)
        mine = (np.arange(size * N) % 7 + 1).astype(dtype) * (rank + 1)
        send, recv = a[3:3 + N], r[3:3 + N]  # views at an odd offset (3 elements)
        send[:] = mine[:N]
        ctx.allreduce(send, recv)
        check(np.array_equal(recv, mpi_allreduce(mine[:N], MPI.SUM)), "allreduce %s" % dtype)
        ctx.allreduce(send, recv, op="max")
        check(np.array_equal(recv, mpi_allreduce(mine[:N], MPI.MAX)), "max %s" % dtype)
        ctx.allreduce(send)  # in place
        check(np.array_equal(send, mpi_allreduce(mine[:N], MPI.SUM)), "in place %s" % dtype)
        gathered = r[3:3 + size * N]
        send[:] = mine[:N]
        ctx.allgather(send, gathered)
        want = np.empty(size * N, dtype)
        comm.Allgather(mine[:N], want)
        check(np.array_equal(gathered, want), "allgather %s" % dtype)
        big = a[3:3 + size * N]
        big[:] = mine
        ctx.reduce_scatter(big, recv)
        want = np.empty(N, dtype)
        comm.Reduce_scatter_block(mine, want, op=MPI.SUM)
        check(np.array_equal(recv, want), "reduce_scatter %s" % dtype)
        ctx.alltoall(big, gathered)
        want = np.empty(size * N, dtype)
        comm.Alltoall(mine, want)
        check(np.array_equal(gathered, want), "alltoall %s" % dtype)
        root = size - 1
        send[:] = mine[:N]
        ctx.broadcast(send, recv, root=root)
        want = mine[:N].copy()
        comm.Bcast(want, root=root)
        check(np.array_equal(recv, want), "broadcast %s" % dtype)
        ctx.reduce(send, recv, op="max", root=root)
        want = np.empty(N, dtype)
        comm.Reduce(mine[:N], want, op=MPI.MAX, root=root)
        check(rank != root or np.array_equal(recv, want), "reduce %s" % dtype)
        gathered[:] = 0
        ctx.gather(send, gathered, root=root)
        want = np.zeros(size * N, dtype)
        comm.Gather(mine[:N], want, root=root)
        check(np.array_equal(gathered, want), "gather %s (zeros off the root)" % dtype)
        big[:] = mine
        ctx.scatter(big, recv, root=root)
        want = np.empty(N, dtype)
        comm.Scatter(mine, want, root=root)
        check(np.array_equal(recv, want), "scatter %s" % dtype)
        gathered[:] = 0  # a root of NumPy's integers (refused as "not a rank" before)
        ctx.gather(send, gathered, root=np.int64(root))
        want = np.zeros(size * N, dtype)
        comm.Gather(mine[:N], want, root=root)
        check(np.array_equal(gathered, want), "gather %s, root np.int64" % dtype)
        for bad in (-1, size, "0", True, 1.0):  # True was taken as rank 1
            try:
                ctx.gather(send, gathered, root=bad)
                check(False, "gather with root %r was accepted" % (bad,))
            except sa.SymaddrError as e:
                check(e.name == "SYMADDR_ERR_INVALID_ARG" and "is not a rank" in str(e),
                      "root %r: %s" % (bad, e))
        check(amap.peer_bases[rank] == a.__array_interface__["data"][0], "the map's own base")
        ctx.free(a)
        ctx.free(r)



def test_plain_recv():
    """Every collective with a plain NumPy recv at an odd offset (staged through the
    context's workspace), against MPI; op "avg", mpi4py's ops, a raw stream handle; off the
    root a rooted collective leaves recv alone, as MPI does."""
    a, _ = ctx.allocate_symmetric(size * N + 3, np.float64)
    mine = (np.arange(size * N) % 7 + 1).astype(np.float64) * (rank + 1)
    send, big = a[3:3 + N], a[3:3 + size * N]
    send[:] = mine[:N]
    store = np.full(size * N + 5, -9.0)
    recv, gathered = store[5:5 + N], store[5:5 + size * N]  # plain memory, odd offset
    for op, mop in (("sum", MPI.SUM), (MPI.MAX, MPI.MAX), (MPI.PROD, MPI.PROD),
                    ("min", MPI.MIN)):
        out = ctx.allreduce(send, recv, op=op, stream=0)
        check(out is recv and np.array_equal(recv, mpi_allreduce(mine[:N], mop)),
              "allreduce %s into plain memory" % op)
    ctx.allreduce(send, recv, op="avg")
    check(np.allclose(recv, mpi_allreduce(mine[:N], MPI.SUM) / size), "avg")
    ctx.allgather(send, gathered)
    want = np.empty(size * N)
    comm.Allgather(mine[:N], want)
    check(np.array_equal(gathered, want), "allgather into plain memory")
    big[:] = mine
    ctx.reduce_scatter(big, recv, op="avg")
    want = np.empty(N)
    comm.Reduce_scatter_block(mine, want, op=MPI.SUM)
    check(np.allclose(recv, want / size), "reduce_scatter avg into plain memory")
    ctx.alltoall(big, gathered)
    comm.Alltoall(mine, want := np.empty(size * N))
    check(np.array_equal(gathered, want), "alltoall into plain memory")
    root = size - 1
    send[:] = mine[:N]
    ctx.broadcast(send, recv, root=root)
    want = mine[:N].copy()
    comm.Bcast(want, root=root)
    check(np.array_equal(recv, want), "broadcast into plain memory")
    recv[:] = -5
    ctx.reduce(send, recv, op=MPI.SUM, root=root)
    want = np.empty(N)
    comm.Reduce(mine[:N], want, op=MPI.SUM, root=root)
    check(np.array_equal(recv, want) if rank == root else np.all(recv == -5),
          "reduce into plain memory, recv untouched off the root")
    gathered[:] = -5
    ctx.gather(send, gathered, root=root)
    want = np.zeros(size * N)
    comm.Gather(mine[:N], want, root=root)
    check(np.array_equal(gathered, want) if rank == root else np.all(gathered == -5),
          "gather into plain memory, recv untouched off the root")
    ctx.scatter(big, recv, root=root)
    comm.Scatter(mine, want := np.empty(N), root=root)
    check(np.array_equal(recv, want), "scatter into plain memory")
    check(store[4] == -9.0 and store[5 + size * N - 1] != -9.0, "nothing written outside recv")
    try:
        ctx.allreduce(np.zeros(N), recv)
        raise AssertionError("a plain send passed")
    except sa.SymaddrError as e:
        check(e.name == "SYMADDR_ERR_NOT_FOUND" and "send is not symmetric" in str(e)
              and "allocate_symmetric" in str(e) and "Context.allreduce" in str(e), str(e))
    ints, _ = ctx.allocate_symmetric(N, np.int32)
    try:
        ctx.allreduce(ints, op="avg")
        raise AssertionError("avg of int32 passed")
    except sa.SymaddrError as e:
        check("floating-point" in str(e), str(e))
    ctx.free(ints)
    ctx.free(a)

def test_rooted_idioms():
    """Rooted collectives as MPI programs write them. Off the root, gather takes recv=None
    (returned as None, as mpi4py's Gather does; reduce's None is its in-place form, as MPI's
    Reduce with recvbuf=None off the root). The ranks' recv may be of two kinds, plain memory
    (staged) on some and symmetric on others, for reduce, broadcast and scatter (each rank's
    recv is its own); gather's every rank's recv is where its root's lies (the library
    compares that allocation): plain or None with a plain root, and a symmetric root with
    peers of None is refused on every rank with MISMATCH, at once. Each in a new context,
    below and past the size to which a rooted call grows the workspace on every rank (forced
    to 64 bytes: past it the ranks agree whether any stages), where calls between symmetric
    buffers leave the workspace unmade, and in validation mode, which takes the mix. Exact against MPI; nothing written outside the
    root's recv. Before, a root that staged while its peers did not (MPI's reduce idiom)
    waited for them in the workspace's allocation until the timeout."""
    mine = (np.arange(size * N) % 11 + 1) * (rank + 3)
    store = np.full(size * N + 4, -9, np.int64)
    for grow, validate in ((None, 0), (64, 0), (None, 1)):  # 1: SYMADDR_VALIDATE_ON
        with sa.Context(backend="cpu", timeout_ms=20000, validate=validate) as c:
            if grow is not None:
                c._rooted_grow = grow
            a, _ = c.allocate_symmetric(size * N + 3, np.int64)
            sym, _ = c.allocate_symmetric(size * N + 4, np.int64)
            send, big = a[3:3 + N], a[3:3 + size * N]
            send[:] = mine[:N]
            big[:] = mine
            if grow is not None:  # symmetric recv on every rank: no workspace
                part = sym[2:2 + N]
                c.reduce(send, part, root=0)
                c.broadcast(send, part, root=0)
                c.scatter(big, part, root=0)
                check(c._stage is None, "symmetric past %d bytes: workspace %s" % (
                    grow, c._stage))
            for root in sorted({0, size - 1}):
                for root_kind, peer_kind in (("plain", None), ("symmetric", None),
                                             ("plain", "symmetric"), ("symmetric", "plain")):
                    kind = root_kind if rank == root else peer_kind
                    what = "grow %s, validate %d, root %d %s, peers %s" % (
                        grow, validate, root, root_kind, peer_kind)
                    mem = store if kind in ("plain", None) else sym
                    mem[:] = -9
                    part = mem[2:2 + N]
                    got = c.reduce(send, part if kind else None, op="sum", root=root)
                    want = np.empty(N, np.int64)
                    comm.Reduce(mine[:N], want, op=MPI.SUM, root=root)
                    if rank == root:
                        check(got is part and np.array_equal(part, want) and mem[1] == -9 and
                              mem[2 + N] == -9, "%s: reduce" % what)
                    else:
                        check(np.all(mem == -9) and np.array_equal(send, mine[:N]),
                              "%s: reduce wrote off the root" % what)
                    if peer_kind is None:
                        if root_kind == "plain":  # gather's peers stage too: one allocation
                            got = c.gather(send, mem[2:2 + size * N] if rank == root else None,
                                           root=root)
                            want = np.empty(size * N, np.int64)
                            comm.Gather(mine[:N], want, root=root)
                            check((got is None) == (rank != root), "%s: gather returns" % what)
                            if rank == root:
                                check(np.array_equal(got, want) and mem[1] == -9 and
                                      mem[2 + size * N] == -9, "%s: gather" % what)
                        continue
                    got = c.broadcast(send, part, root=root)
                    want = mine[:N].copy()
                    comm.Bcast(want, root=root)
                    check(got is part and np.array_equal(part, want), "%s: broadcast" % what)
                    got = c.scatter(big, part, root=root)
                    comm.Scatter(mine, want, root=root)
                    check(got is part and np.array_equal(part, want) and mem[1] == -9 and
                          mem[2 + N] == -9, "%s: scatter" % what)
    with sa.Context(backend="cpu", timeout_ms=20000) as other:  # the refusal breaks it
        x, _ = other.allocate_symmetric(N, np.int64)
        whole, _ = other.allocate_symmetric(size * N, np.int64)
        x[:] = mine[:N]
        refused("gather to a symmetric root, peers None",
                lambda: other.gather(x, whole if rank == 0 else None, root=0),
                ["allocation"], "SYMADDR_ERR_MISMATCH")


def test_put_get_and_import():
    own, _ = ctx.allocate_symmetric(N, np.float32)
    local = ctx.empty_local(N, np.float32)
    m = ctx.import_(local)  # plain memory made symmetric
    check(len(m.peer_bases) == size and all(m.peer_bases), "import's table")
    src = np.arange(N, dtype=np.float32) + 1000 * (rank + 1)
    right, left = (rank + 1) % size, (rank - 1) % size
    ctx.barrier()
    ctx.put(own, src, right)
    ctx.put(local, src, right)
    ctx.barrier()
    want = np.arange(N, dtype=np.float32) + 1000 * (left + 1)
    check(np.array_equal(own, want) and np.array_equal(local, want), "put from the left")
    got = np.empty(N, np.float32)
    ctx.get(got, own, right)  # the right neighbour holds its left's (this rank's) data
    check(np.array_equal(got, src), "get from the right")
    ctx.barrier()
    m.unregister()
    ctx.free_local(local)
    ctx.free(own)


def test_errors_raise():
    a, _ = ctx.allocate_symmetric(16, np.float32)
    try:
        ctx.allreduce(a, a.astype(np.float64))
        raise AssertionError("mismatched dtypes passed")
    except sa.SymaddrError as e:
        check(e.status < 0 and "dtype" in str(e), "dtype refusal: %s" % e)
    try:
        ctx.allreduce(np.zeros(4, np.complex64))
        raise AssertionError("complex passed")
    except sa.SymaddrError as e:
        check("no dtype" in str(e), "complex refusal: %s" % e)
    for name, call in (("put", lambda: ctx.put(a, np.zeros(16, np.int32), (rank + 1) % size)),
                       ("get", lambda: ctx.get(np.zeros(16, np.uint32), a, (rank + 1) % size))):
        try:  # a copy of bytes from another dtype returned OK, its values reinterpreted
            call()
            raise AssertionError("%s of another dtype passed" % name)
        except sa.SymaddrError as e:
            check(e.name == "SYMADDR_ERR_INVALID_ARG" and "dtype" in str(e),
                  "%s of another dtype: %s" % (name, e))
    right, left = (rank + 1) % size, (rank - 1) % size
    got = np.zeros(16, np.float32)
    a[:] = rank
    ctx.barrier()
    ctx.get(got, a, np.int64(right))  # a rank of NumPy's integers ("not a rank" before)
    check(np.all(got == right), "get from np.int64(%d): %s" % (right, got[:4]))
    ctx.barrier()
    ctx.put(a, np.full(16, rank, np.float32), np.int32(right))
    ctx.barrier()
    check(np.all(a == left), "put to np.int32(%d): %s" % (right, a[:4]))
    refused("put to target True", lambda: ctx.put(a, got, True), ["not a rank"])  # rank 1
    # element counts a row refuses, said as the rule (was "it wants 1:3"); recv=None is no
    # in-place form of gather at the root, whose recv holds size * count (off the root it is
    # MPI's idiom: test_rooted_idioms; the root alone is refused here, so no peer waits)
    if rank == 0:
        refused("gather, recv=None", lambda: ctx.gather(a, None, root=0),
                ["Context.gather", "recv must hold the context's size (%d) times send's "
                 "elements: %d" % (size, 16 * size), "recv=None", "pass a recv of that size",
                 "off the root of a gather"])
    refused("allgather into 15", lambda: ctx.allgather(a, got[:15]),
            ["send has 16 elements and recv 15", "times send's elements: %d" % (16 * size)])
    refused("reduce_scatter of 16 into 16", lambda: ctx.reduce_scatter(a, got),
            ["send must hold the context's size (%d) times recv's elements: %d"
             % (size, 16 * size)])
    refused("allreduce into 15", lambda: ctx.allreduce(a, got[:15]),
            ["send has 16 elements and recv 15; send and recv must hold the same number"])
    ctx.set_timeout(np.int64(ctx.timeout_ms))  # refused before
    ctx.barrier()
    for bad in (-5, 1.5, "a", 1 << 40, True):  # ctypes wrapped -5 to 49 days, and 2**40 to 0
        try:
            ctx.set_timeout(bad)
            raise AssertionError("set_timeout(%r) passed" % (bad,))
        except sa.SymaddrError as e:
            check(e.name == "SYMADDR_ERR_INVALID_ARG" and "set_timeout" in str(e),
                  "set_timeout(%r): %s" % (bad, e))
    check(ctx.timeout_ms > 0, "the timeout kept")
    try:  # memory of another allocator: the C message named symaddr_mem_alloc twice
        ctx.import_(np.zeros(16, np.float32))
        raise AssertionError("an import of NumPy's own memory passed")
    except sa.SymaddrError as e:
        check(e.name == "SYMADDR_ERR_NOT_SHAREABLE" and "ctx.empty_local(" in str(e) and
              "symaddr_mem_alloc or symaddr_mem_alloc" not in str(e), "import_: %s" % e)
    try:  # a handle of another kind raised AttributeError
        ctx.register_symm_mem(a, None)
        raise AssertionError("register_symm_mem with no handle passed")
    except sa.SymaddrError as e:
        check(e.name == "SYMADDR_ERR_INVALID_ARG" and "rendezvous" in str(e),
              "register_symm_mem: %s" % e)
    # a stream that is no stream: passed over silently on the cpu backend (and a raw handle
    # -1 went to C as 2^64 - 1 on a GPU); the same refusal on every backend
    for stream in ("s", -1, 1 << 64, 1.5):
        for what, fn in (("allreduce", lambda: ctx.allreduce(a, np.zeros(16, np.float32),
                                                             stream=stream)),
                         ("barrier", lambda: ctx.barrier(stream=stream)),
                         ("sync", lambda: ctx.sync(stream=stream)),
                         ("put", lambda: ctx.put(a, np.zeros(16, np.float32), rank,
                                                 stream=stream))):
            refused("%s with stream=%r" % (what, stream), fn, ["stream="])
    ctx.barrier(stream=0)
    ctx.sync(stream=np.uint64(0))
    for provider in ("import", "foreign", "nccl", None, []):  # C's names, or TypeError
        refused("provider %r" % (provider,), lambda: ctx.allocate_symmetric(
            3, np.int32, provider=provider), ['allocate_symmetric: provider', '"heap", "ipc"'])
    for dtype in (object, "i8,O"):  # an array of pointers over memory it did not fill: its
        for make in (lambda: ctx.allocate_symmetric(3, dtype),  # repr crashed the interpreter
                     lambda: ctx.empty_local(3, dtype)):
            refused("an array of %s" % dtype, make, ["Python objects"])
    # comm: MPI.COMM_NULL (a Split with MPI.UNDEFINED) was taken as COMM_WORLD (falsy), so the
    # ranks outside a sub-communicator joined a context of the whole world; a Group made
    # symaddr_init crash in MPI_Comm_idup (SIGSEGV); a str raised mpi4py's TypeError
    sub = comm.Split(0 if rank % 2 == 0 else MPI.UNDEFINED, rank)
    for what, bad in (("COMM_NULL", MPI.COMM_NULL), ("a group", comm.Get_group()),
                      ("a str", "world")) + ((("off the Split", sub),) if rank % 2 else ()):
        refused("Context(comm=%s)" % what, lambda: sa.Context(comm=bad, backend="cpu"),
                ["Context(comm="])
    if rank % 2 == 0:  # the Split's own ranks make their context
        with sa.Context(comm=sub, backend="cpu") as on_sub:
            check(on_sub.size == (size + 1) // 2 and on_sub.rank == rank // 2,
                  "a context of the Split: rank %d of %d" % (on_sub.rank, on_sub.size))
        sub.Free()
    other = sa.Context(backend="cpu", timeout_ms=np.int64(ctx.timeout_ms + 1))  # refused before
    check(other.timeout_ms == ctx.timeout_ms + 1, "timeout_ms=np.int64: %r" % other.timeout_ms)
    other.close()
    for setting in ({"retain_bytes": -1}, {"timeout_ms": 1 << 40}, {"node_size": -2},
                    {"timeout_ms": np.int64(-1)}):
        try:
            sa.Context(backend="cpu", **setting).close()
            raise AssertionError("Context(%s) passed" % setting)
        except sa.SymaddrError as e:
            check(e.name == "SYMADDR_ERR_INVALID_ARG" and list(setting)[0] in str(e),
                  "Context(%s): %s" % (setting, e))
    try:
        ctx.put(np.zeros(16, np.float32), a, (rank + 1) % size)  # dst not symmetric
        raise AssertionError("an unregistered dst passed")
    except sa.SymaddrError as e:
        check(e.status == -4, "unregistered refusal, want SYMADDR_ERR_NOT_FOUND: %s (%d)"
              % (e, e.status))
    try:
        ctx.register(a, 64, [0] * (size + 1))
        raise AssertionError("a table of the wrong length passed")
    except sa.SymaddrError as e:
        check("entries" in str(e), "table refusal: %s" % e)
    # values ctypes wrapped (a peer address -1 was registered as 2^64 - 1, caps -1 as every
    # capability, nbytes -1 reported as 18446744073709551615) or refused with its own errors
    local = ctx.empty_local(16, np.int32)
    addr = local.__array_interface__["data"][0]
    peers = comm.allgather(addr)
    others = [p if r == rank else -1 for r, p in enumerate(peers)]
    for what, fn in (("a peer -1", lambda: ctx.register(local, 64, others)),
                     ("a peer past 2^64", lambda: ctx.register(local, 64, [
                         p if r == rank else 1 << 64 for r, p in enumerate(peers)])),
                     ("a peer 1.5", lambda: ctx.register(local, 64, [
                         p if r == rank else 1.5 for r, p in enumerate(peers)])),
                     ("nbytes -1", lambda: ctx.register(local, -1, peers)),
                     ("nbytes 1.5", lambda: ctx.register(local, 1.5, peers)),
                     ("caps -1", lambda: ctx.register(local, 64, peers, caps=-1)),
                     ("caps 'load'", lambda: ctx.register(local, 64, peers, caps="load")),
                     ("ptr -4096", lambda: ctx.register(-4096, 64, peers))):
        refused("register with %s" % what, fn, ["register: "])
    # a bit that is no capability: refused by the library on every rank (kept before)
    refused("register with caps 1 << 40", lambda: ctx.register(local, 64, peers, caps=1 << 40),
            ["does not define (0x10000000000)"])
    fmap = ctx.register(local, np.int64(64), [np.uint64(p) for p in peers])  # NumPy's ints
    check(fmap.reachable(np.int64(rank)) and fmap.allocation_bytes == 64, "NumPy's ints")
    fmap.check_reachable(rank)  # one rank (it raised TypeError)
    refused("reachable('0')", lambda m=fmap: m.reachable("0"))
    fmap.unregister()
    del fmap
    ctx.free_local(local)
    # something that is not an array, to every call that takes one: INVALID_ARG naming the
    # call, never an AttributeError from inside the package
    calls = {"get_symmetric_address_map": lambda v: ctx.get_symmetric_address_map(v),
             "bind": lambda v: ctx.bind(v), "free": lambda v: ctx.free(v),
             "free_local": lambda v: ctx.free_local(v), "import_": lambda v: ctx.import_(v),
             "register": lambda v: ctx.register(v, 8, [0] * size),
             "allreduce": lambda v: ctx.allreduce(v), "put": lambda v: ctx.put(v, a, rank)}
    for name, call in calls.items():
        for bad, kind in (("x", "str"), ([1.0, 2.0], "list"), (None, "NoneType"),
                          (array.array("d", [1.0]), "array.array")):
            try:
                call(bad)
                raise AssertionError("%s(%r) passed" % (name, bad))
            except sa.SymaddrError as e:
                check(e.status == sa.STATUS["SYMADDR_ERR_INVALID_ARG"] and name in str(e)
                      and "of type %s," % kind in str(e),
                      "%s(%r): want INVALID_ARG naming the call and the type, got %s (%d)"
                      % (name, bad, e, e.status))
    ctx.free(a)


def test_methods_from_the_library():
    """Context has one method per collective the library lists, with its C call's parameters,
    and a collective the package has never heard of gets one too."""
    import inspect
    lib = ctx._lib
    bits = lib.abi["collective_flag"]
    names = [c["name"] for c in lib.abi["collectives"]]
    check(set(names) >= {"allreduce", "reduce_scatter", "allgather", "broadcast", "alltoall",
                         "reduce", "gather", "scatter"}, "the library's list: %s" % names)
    for c in lib.abi["collectives"]:
        params = list(inspect.signature(getattr(sa.Context, c["name"])).parameters)
        want = (["self", "send", "recv"] + (["op"] if c["flags"] & bits["reduces"] else [])
                + (["root"] if c["flags"] & bits["rooted"] else []) + ["stream"])
        check(params == want, "%s takes %s, want %s" % (c["name"], params, want))
    fake = type("Lib", (), {"abi": {"collective_flag": bits, "collectives": [
        {"name": "a_new_collective", "doc": "new", "flags": bits["reduces"] | bits["rooted"]}]}})
    sa._add_collectives(sa.Context, fake)
    try:
        f = sa.Context.a_new_collective
        check(str(inspect.signature(f)) == "(self, send, recv=None, op='sum', root=0, "
              "stream=None)" and f.__doc__.startswith("new"), "generated: %s" % inspect.signature(f))
    finally:
        del sa.Context.a_new_collective
    a, _ = ctx.allocate_symmetric(size * 3, np.int32)
    try:
        ctx.allgather(a[:3], a, op="max")
        raise AssertionError("allgather took an op")
    except TypeError:
        pass
    b, _ = ctx.allocate_symmetric(size * 3, np.int32)
    try:  # one element short of size blocks: Python's own check, before the library's
        ctx.alltoall(a[:size * 3 - 1], b[:size * 3 - 1])
        check(size == 1, "alltoall of %d elements over %d ranks passed" % (size * 3 - 1, size))
    except sa.SymaddrError as e:
        check(e.name == "SYMADDR_ERR_INVALID_ARG" and "equal parts" in str(e),
              "alltoall split: %s" % e)
    ctx.free(b)
    ctx.free(a)


def _reduce_here(vctx, send, recv):
    vctx.allreduce(send, recv)  # the only line this helper makes its call from


def test_skipped_call_found():
    """A rank that skips a call: with validation on, the ranks compare the file and line each
    made its call from, and the call rank 1 makes in another's place fails with
    SYMADDR_ERR_MISMATCH on every rank, naming both lines; recv keeps its data. A recv staged
    on one rank and symmetric on the others is refused the same way. With
    validate=SYMADDR_VALIDATE_ARGS a program that makes one collective from two lines on purpose
    gets exact sums."""
    if size < 2:
        return
    on, args = 1, 2  # symaddr_validate_t
    vctx = sa.Context(backend="cpu", validate=on)
    a, _ = vctx.allocate_symmetric(11, np.int32)
    a2, _ = vctx.allocate_symmetric(11, np.int32)
    out, _ = vctx.allocate_symmetric(11, np.int32)
    a[:] = np.arange(11, dtype=np.int32) + rank + 1
    a2[:] = np.arange(11, dtype=np.int32) + 100 * (rank + 1)
    out[:] = -7
    try:
        if rank == 1:
            vctx.allreduce(a2, out)  # rank 1 skipped _reduce_here's call
        else:
            _reduce_here(vctx, a, out)
        raise AssertionError("the call rank 1 skipped passed: %s" % out)
    except sa.SymaddrError as e:
        check(e.name == "SYMADDR_ERR_MISMATCH" and "test_numpy.py:" in str(e)
              and "skipped a call" in str(e), "skipped call: %s" % e)
    check(np.array_equal(out, np.full(11, -7, np.int32)), "a refused call wrote %s" % out)
    # recv staged on rank 0 only (plain memory) and symmetric elsewhere: refused, not mixed
    plain = np.full(11, -7, np.int32)
    vctx.allreduce(a2, plain)  # staged on every rank (the workspace is made): exact
    check(np.array_equal(plain, mpi_allreduce(a2, MPI.SUM)), "staged: %s" % plain)
    plain[:] = -7
    try:
        vctx.allreduce(a2, plain if rank == 0 else out)
        raise AssertionError("recv of two kinds passed")
    except sa.SymaddrError as e:
        check(e.name == "SYMADDR_ERR_MISMATCH" and "(recv staged)" in str(e), str(e))
    check(np.all(plain == -7) and np.all(out == -7), "the refused call wrote")
    vctx.allreduce(a2, out)  # every rank, one line: exact
    check(np.array_equal(out, mpi_allreduce(a2, MPI.SUM)), "after the refusal: %s" % out)
    for x in (out, a2, a):
        vctx.free(x)
    vctx.close()
    vctx = sa.Context(backend="cpu", validate=args)
    a, _ = vctx.allocate_symmetric(11, np.int32)
    out, _ = vctx.allocate_symmetric(11, np.int32)
    a[:] = np.arange(11, dtype=np.int32) + rank + 1
    if rank == 1:
        vctx.allreduce(a, out)
    else:
        _reduce_here(vctx, a, out)
    check(np.array_equal(out, mpi_allreduce(a, MPI.SUM)), "two lines, arguments only: %s" % out)
    vctx.free(out)
    vctx.free(a)
    vctx.close()


def test_messages_name_the_argument():
    """Each refusal names the argument, what was passed and what is allowed: a timeout out of
    range names the variable's values (before: "pass 0 to 4294967295", though 0 is refused),
    validate names its values (before: none), a bool is no shape (before: True made (1,)).
    validate takes the names of symaddr_validate_t too."""
    for kw, words in (({"timeout_ms": -1}, ["timeout_ms=-1", "1 to 4294967295"]),
                      ({"validate": "maybe"}, ["validate='maybe'", '"args"', "True or False"]),
                      ({"heap_bytes": -5}, ["heap_bytes=-5", "byte count"])):
        refused("Context(%s)" % kw, lambda: sa.Context(backend="cpu", **kw), words)
    for shape in (True, (3, True), [False]):
        refused("allocate_symmetric(%r)" % (shape,),
                lambda: ctx.allocate_symmetric(shape, np.int32), ["shape", repr(shape)])
    with sa.Context(backend="cpu", validate="args") as c:
        check(c.validating, "validate='args' validates")
    with sa.Context(backend="cpu", validate="off") as c:
        check(not c.validating, "validate='off' does not")


def test_workspace_growth_mixed():
    """Validation on, a recv staged on rank 0 only at the workspace's first growth (a
    collective allocation) while its peers pass symmetric memory (their collective compares
    its arguments): SYMADDR_ERR_MISMATCH on every rank, naming both calls, and the next call is
    exact. Before, the two agreements exchanged records of different sizes: SYMADDR_ERR_MPI,
    one rank a status symaddr does not have with a message from reused memory, or an abort of
    the job by Open MPI (MPI_ERR_TRUNCATE)."""
    if size < 2:
        return "SKIP: needs 2 ranks"
    vctx = sa.Context(backend="cpu", validate=1)
    x, _ = vctx.allocate_symmetric(1000, np.float32)
    sym, _ = vctx.allocate_symmetric(1000, np.float32)
    x[:] = np.arange(1000, dtype=np.float32) % 17 + rank + 1
    plain = np.full(1000, -7, np.float32)
    sym[:] = -7
    try:
        vctx.allreduce(x, plain if rank == 0 else sym)
        raise AssertionError("a staged recv on rank 0 only passed")
    except sa.SymaddrError as e:
        check(e.name == "SYMADDR_ERR_MISMATCH" and "symaddr_symmetric_alloc" in str(e) and
              "symaddr_allreduce" in str(e) and str(e).isprintable(), str(e))
    check(np.all(plain == -7) and np.all(sym == -7), "the refused call wrote")
    vctx.allreduce(x, sym)
    check(np.array_equal(sym, mpi_allreduce(x, MPI.SUM)), "the next call: %s" % sym[:4])
    for a in (sym, x):
        vctx.free(a)
    vctx.close()


def test_read_only_recv():
    """A read-only recv, in-place send or get's dst (np.frombuffer of bytes, or a view whose
    writeable flag is off) is refused with INVALID_ARG and left unwritten, as NumPy's own ufuncs
    refuse it; before, the collective wrote it: the bytes object, immutable to Python, read
    the sum. A read-only send, and a non-root's recv that reduce and gather ignore, pass."""
    a, _ = ctx.allocate_symmetric(4, np.int32)
    y, _ = ctx.allocate_symmetric(4, np.int32)
    a[:] = rank + 1
    y[:] = 0
    frozen = bytes(16)
    ro = np.zeros(4, np.int32)
    ro.flags.writeable = False
    ro_sym, ro_a = y.view(), a.view()
    ro_sym.flags.writeable = False
    ro_a.flags.writeable = False
    ro_g = np.zeros(size, np.int32)
    ro_g.flags.writeable = False
    ctx.barrier()
    for what, fn in (("staged recv over bytes", lambda: ctx.allreduce(
                         a, np.frombuffer(frozen, np.int32))),
                     ("staged recv read-only", lambda: ctx.allgather(a[:1], ro_g)),
                     ("symmetric recv read-only", lambda: ctx.allreduce(a, ro_sym)),
                     ("in place, read-only", lambda: ctx.allreduce(ro_a)),
                     ("get into read-only", lambda: ctx.get(ro, a, (rank + 1) % size)),
                     ("put to a read-only dst", lambda: ctx.put(ro_sym, a, (rank + 1) % size))):
        refused(what, fn, ["read-only"])
    ctx.barrier()
    check(frozen == bytes(16) and not ro.any() and not ro_g.any() and not y.any() and
          np.all(a == rank + 1), "a refused call wrote: %r %s %s %s %s" % (frozen, ro, ro_g, y,
                                                                          a))
    out = np.zeros(4, np.int32)
    ctx.allreduce(ro_a, out)  # a read-only send is read only
    check(np.all(out == size * (size + 1) // 2), "read-only send: %s" % out)
    got = np.zeros(4 * size, np.int32) if rank == 0 else np.zeros(0, np.int32)
    ignored = np.zeros(4 * size, np.int32)
    ignored.flags.writeable = False
    ctx.gather(a, got if rank == 0 else ignored, root=0)  # a non-root's recv is not written
    if rank == 0:
        check(np.array_equal(got, np.repeat(np.arange(1, size + 1), 4)), "gather: %s" % got)
    ctx.free(a)
    ctx.free(y)


def test_refused_on_one_rank():
    """A refusal that one rank decides alone (a read-only plain recv at the root of reduce and
    gather): with validation on, the root raises its INVALID_ARG and its peers raise at once
    too (the call's agreement tells them), where they waited out the whole timeout and the
    context broke; the next call is exact. Without validation the peers time out, as
    symaddr.h and README say of a skipped call."""
    import time
    if size < 2:
        return "SKIP: needs 2 ranks"
    timeout_ms = 20000
    vctx = sa.Context(backend="cpu", validate=1, timeout_ms=timeout_ms)
    x, _ = vctx.allocate_symmetric(16, np.int32)
    x[:] = np.arange(16, dtype=np.int32) + rank + 1
    vctx.gather(x, np.zeros(16 * size, np.int32), root=0)  # the workspace made, on every rank
    for name in ("reduce", "gather"):
        out = np.zeros(16 * (size if name == "gather" else 1), np.int32)
        out.flags.writeable = False
        t0 = time.monotonic()
        try:
            getattr(vctx, name)(x, out, root=0)
            raise AssertionError("%s with a read-only recv at the root passed" % name)
        except sa.SymaddrError as e:
            took = time.monotonic() - t0
            check(took < timeout_ms / 2000, "%s: rank %d raised after %.1f s" % (name, rank,
                                                                               took))
            check(e.name == "SYMADDR_ERR_INVALID_ARG" and ("read-only" in str(e) if rank == 0
                                                           else "rank 0" in str(e)),
                  "%s on rank %d: %s" % (name, rank, e))
        check(not out.any(), "the refused call wrote")
    y, _ = vctx.allocate_symmetric(16, np.int32)
    vctx.allreduce(x, y)
    check(np.array_equal(y, mpi_allreduce(x, MPI.SUM)), "the next call: %s" % y[:4])
    for a in (y, x):
        vctx.free(a)
    vctx.close()


def test_no_call_check():
    """Context(no_call_check=True) leaves out the step in which the LL and Lamport allreduces
    (auto's below 128 bytes of f32 on the cpu backend) compare the call: ranks that disagree on
    the op then return as symaddr.h says, each with its own op over every rank's data; with the
    step (the default) every rank raises SYMADDR_ERR_MISMATCH."""
    last = rank == size - 1
    op = "max" if last else "sum"
    mine = np.arange(16, dtype=np.float32) + 100 * rank
    for unchecked in (False, True):
        with sa.Context(backend="cpu", no_call_check=unchecked) as c:
            a, _ = c.allocate_symmetric(16, np.float32)
            a[:] = mine
            try:
                c.allreduce(a, op=op)
                got = "OK"
            except sa.SymaddrError as e:
                got = e.name
            if not unchecked:
                check(got == "SYMADDR_ERR_MISMATCH", "op differs, with the step: %s" % got)
                continue
            # both on every rank: MPI's own calls must match
            sums, maxes = mpi_allreduce(mine, MPI.SUM), mpi_allreduce(mine, MPI.MAX)
            want = maxes if last else sums
            check(got == "OK" and np.array_equal(a, want),
                  "op differs, no_call_check: %s, %s against %s" % (got, a[:4], want[:4]))


def test_two_threads_staged():
    """Thread A's staged collective is past its C call, copying its result out of the
    context's workspace, when thread B enters another staged collective (forced here: A's
    copy waits until B's call has returned or raised). B's call ran and wrote the workspace,
    so A returned OK with B's result (and a regrown workspace would have been freed under A's
    copy). Now B is refused with INVALID_ARG, A's call raises BROKEN, and the context is
    broken on every rank (symaddr.h's rule for two threads in one context's calls)."""
    import threading
    short = sa.Context(backend="cpu")
    a, _ = short.allocate_symmetric(9, np.int32)
    b, _ = short.allocate_symmetric(9, np.int32)
    a[:] = np.arange(9) + rank
    b[:] = -100 * (rank + 1)
    out_a, out_b = np.zeros(9, np.int32), np.zeros(9, np.int32)
    short.allreduce(a, out_a)  # the workspace made
    got = {}

    def thread_b():
        try:
            short.allreduce(b, out_b)
            got["b"] = "OK"
        except sa.SymaddrError as e:
            got["b"] = e.name

    original = short._copy_out

    def copy_out_after_b(*args):  # the scheduler switching to B here
        t = threading.Thread(target=thread_b)
        t.start()
        t.join(60)
        return original(*args)

    short._copy_out = copy_out_after_b
    try:
        short.allreduce(a, out_a)
        got["a"] = "OK"
    except sa.SymaddrError as e:
        got["a"] = e.name
    short._copy_out = original
    want_a = mpi_allreduce(a, MPI.SUM)
    check(got == {"a": "SYMADDR_ERR_BROKEN", "b": "SYMADDR_ERR_INVALID_ARG"},
          "A %s (%s its own sum), B %s" % (got.get("a"), "is" if np.array_equal(
              out_a, want_a) else "is not", got.get("b")))
    try:
        short.allreduce(a, out_a)
        raise AssertionError("the broken context's next call returned OK")
    except sa.SymaddrError as e:
        check(e.name == "SYMADDR_ERR_BROKEN", str(e))
    short.close()


def test_fast_call():
    """The compiled call (python/symaddr/_fast.c) in ctypes' place for
    symaddr_collective_run_at: in use where the build made it (SYMADDR_TEST_FAST_CALL=1, set
    by meson), off with SYMADDR_NO_FAST_CALL=1; the same results as ctypes' call of the same
    function, exact against mpi4py's; its arguments refused as ctypes refuses them; and the GIL
    released while the call waits for a late peer (a thread of this rank runs meanwhile)."""
    import threading
    import time
    import types
    from symaddr import _lib
    lib = ctx._lib
    want_fast = os.environ.get("SYMADDR_TEST_FAST_CALL")
    if want_fast is not None:
        check(bool(lib.fast) == (want_fast == "1"), "the compiled call: %r, the build made "
              "it: %s" % (lib.fast, want_fast))
    if not lib.fast:
        return
    fast, slow = lib.symaddr_collective_run_at, lib.symaddr_collective_run_at_ctypes
    index, code = lib.collectives["allreduce"][0], lib.dtypes["int32"]
    x, _ = ctx.allocate_symmetric(37, np.int32)
    y, _ = ctx.allocate_symmetric(37, np.int32)
    x[:] = np.arange(37) * (rank + 3) - 11
    want = mpi_allreduce(x, MPI.SUM)
    for f in (fast, slow):
        y[:] = -1
        status = f(ctx._h, index, x.data_ptr(), y.data_ptr(), 37, code, 0, 0, None, b"t.py", 7)
        check(status == 0 and np.array_equal(y, want), "%s: status %d, %d of 37 exact" % (
            f, status, np.sum(y == want)))
    # a refusal of the library, the same from both (no context: INVALID_ARG, nothing runs)
    same = (None, index, x.data_ptr(), y.data_ptr(), 37, code, 0, 0, None, b"t.py", 7)
    check(fast(*same) == slow(*same) == sa.STATUS["SYMADDR_ERR_INVALID_ARG"],
          "a NULL context: %d and %d" % (fast(*same), slow(*same)))
    for args, kind in (((None, index, "x", 0, 1, code, 0, 0, None, b"f", 1), TypeError),
                       ((None, index, 0, 0, -1, code, 0, 0, None, b"f", 1), OverflowError),
                       ((None, 1 << 40, 0, 0, 1, code, 0, 0, None, b"f", 1), OverflowError),
                       ((None, index, 0, 0, 1, code, 0, 0, None, "f", 1), TypeError),
                       ((None, index), TypeError)):
        try:
            fast(*args)
            raise AssertionError("fast call of %r returned" % (args,))
        except kind:
            pass
    # the loader: SYMADDR_NO_FAST_CALL=1 leaves ctypes' call
    stand_in = types.SimpleNamespace(symaddr_collective_run_at=slow)
    os.environ["SYMADDR_NO_FAST_CALL"] = "1"
    try:
        check(_lib._fast_calls(stand_in, os.path.join(os.path.dirname(lib.fast), "libx.so"))
              is None and stand_in.symaddr_collective_run_at is slow, "SYMADDR_NO_FAST_CALL=1")
    finally:
        del os.environ["SYMADDR_NO_FAST_CALL"]
    check(_lib._fast_calls(stand_in, os.path.join(os.path.dirname(lib.fast), "libx.so"))
          == lib.fast and stand_in.symaddr_collective_run_at is not slow, "the loader")
    # a file of that name that is not the module (not an extension at all) leaves ctypes
    import importlib.machinery
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "_fast" + importlib.machinery.EXTENSION_SUFFIXES[0]), "w") as f:
            f.write("not a shared object")
        other = types.SimpleNamespace(symaddr_collective_run_at=slow)
        check(_lib._fast_calls(other, os.path.join(d, "libsymaddr.so.0")) is None and
              other.symaddr_collective_run_at is slow, "a foreign _fast beside the library")
    # the GIL: rank 0 waits in the call for rank 1, which comes 2 s late; rank 0's thread
    # steps meanwhile (held, the GIL would stop it for the whole wait: its longest gap between
    # two steps would be the whole wait, where released it is the interpreter's switch
    # interval, or what a loaded machine adds to it)
    gap, stop = [0.0], threading.Event()

    def step():
        last = time.monotonic()
        while not stop.is_set():
            now = time.monotonic()
            gap[0] = max(gap[0], now - last)
            last = now
    comm.Barrier()
    t = threading.Thread(target=step)
    if rank == 0:
        t.start()
    elif rank == 1:
        time.sleep(2.0)
    y[:] = -1
    start = time.monotonic()
    ctx.allreduce(x, y)
    waited = time.monotonic() - start
    stop.set()
    if rank == 0:
        t.join(10)
    check(np.array_equal(y, want), "the late call: exact")
    if rank == 0:
        check(waited > 1.5 and gap[0] < waited / 2, "the call waited %.2f s for a peer, and "
              "a thread of this rank stood still for %.2f s at most: the GIL was held" % (
                  waited, gap[0]))
    ctx.free(x)
    ctx.free(y)


def test_bench_arguments():
    """python -m symaddr.bench refuses what it cannot time: a count of 0 or less (--iters -5
    printed negative times as a goal met, --rounds 0 inf), bytes that are no whole f32
    elements, a provider or backend the library refuses (a KeyError's or SymaddrError's
    traceback before), each with its message and no traceback; a short run still prints."""
    import contextlib
    import io
    from symaddr import bench
    for argv, words in ((["alloc", "--iters", "-5"], None), (["alloc", "--rounds", "0"], None),
                        (["alloc", "--bytes", "6"], None), (["fused", "--m", "1,x"], None),
                        (["alloc", "--provider", "nccl"], ["symaddr.bench alloc:", "provider"]),
                        (["alloc", "--provider", "import"], ["cannot allocate", '"ipc"']),
                        (["alloc", "--backend", "gpu"], ["symaddr.bench alloc:", "backend"])):
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                bench.main(argv)
            raise AssertionError("symaddr.bench %s ran" % " ".join(argv))
        except SystemExit as e:
            check(e.code == 2 if words is None else all(w in str(e.code) for w in words),
                  "symaddr.bench %s: %r" % (" ".join(argv), e.code))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        bench.main(["alloc", "--iters", "2", "--rounds", "1"])
    check(rank != 0 or "2 pairs x 1 rounds" in out.getvalue(), "the table: %r" % out.getvalue())
    # allreduce runs on the cpu backend too (before: "needs a GPU backend and torch"): its
    # table's rows, none with a wrong element; what needs a GPU says where alloc and
    # allreduce run
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        bench.main(["allreduce", "--iters", "2", "--rounds", "1", "--max-bytes", "512"])
    rows = [line.split() for line in out.getvalue().splitlines() if not line.startswith("#")]
    check(rank != 0 or ([r[0] for r in rows] == ["8", "32", "128", "512"] and
                        all(r[-1] == "0" for r in rows)), "allreduce's table: %r" % rows)
    try:
        bench.main(["triton"])
        raise AssertionError("symaddr.bench triton ran on the cpu backend")
    except SystemExit as e:
        check("alloc and allreduce run" in str(e.code), "triton on the cpu: %r" % e.code)



def test_other_mpi_refused():
    """An mpi4py of another MPI than libsymaddr's (/usr/bin/python3's Open MPI mpi4py against a
    build of MPICH: SIGSEGV in PMPI_Comm_test_inter before) is refused by Context() with
    SYMADDR_ERR_MPI naming both; this process's own mpi4py is not. The real route runs in CI's
    MPICH stage (tests/other-mpi.sh)."""
    from symaddr._lib import load, mpi_mismatch
    lib = load()
    family = lib.abi["mpi"]["family"]
    check(family in ("Open MPI", "MPICH", "other") and lib.abi["mpi"]["header"],
          "the ABI names the MPI of the header: %r" % lib.abi["mpi"])
    check(mpi_mismatch(lib, MPI) is None, "this process's mpi4py is refused")

    class Other:
        @staticmethod
        def Get_library_version():
            return ("MPICH Version:      5.0.2\nMPICH Release date: x" if family == "Open MPI"
                    else "Open MPI v5.0.11, package: Open MPI")
    if family != "other":
        refused("an mpi4py of another MPI", lambda: mpi_mismatch(lib, Other),
                ["mpi4py runs on", lib.abi["mpi"]["header"], "rebuild symaddr"],
                name="SYMADDR_ERR_MPI")


cases.run("version", test_version)
cases.run("SYMADDR_BACKEND picks Context()'s backend", test_backend_from_the_environment)
cases.run("collectives", test_collectives)
cases.run("a method per collective of the library", test_methods_from_the_library)
cases.run("collectives into plain memory; avg, mpi4py ops", test_plain_recv)
cases.run("rooted collectives in MPI's idioms: recv=None off the root, recv of two kinds",
          test_rooted_idioms)
cases.run("put, get and import", test_put_get_and_import)
cases.run("errors raise SymaddrError", test_errors_raise)
cases.run("a skipped call found by validation", test_skipped_call_found)
cases.run("no_call_check: ranks of another op", test_no_call_check)
cases.run("a refusal one rank decides alone, told to its peers", test_refused_on_one_rank)
cases.run("two threads in staged collectives", test_two_threads_staged)
cases.run("messages name the argument and what is allowed", test_messages_name_the_argument)
cases.run("a staged recv on one rank at the workspace's growth", test_workspace_growth_mixed)
cases.run("read-only buffers are not written", test_read_only_recv)
cases.run("the compiled call in ctypes' place", test_fast_call)
cases.run("python -m symaddr.bench's arguments", test_bench_arguments)
cases.run("an mpi4py of another MPI is refused", test_other_mpi_refused)
ctx.close()
sys.exit(cases.finish())
