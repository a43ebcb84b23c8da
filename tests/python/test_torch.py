# SPDX-License-Identifier: MIT
"""The symaddr Python package on torch tensors (any GPU count; several ranks may share one)
and on torch symmetric memory (one rank per GPU):
    mpirun -np 2 python3 tests/python/test_torch.py
Exact values from distinct per-rank data against NCCL's all_reduce (through torch) and a
sequential reference; prints the harness's summary line."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

from mpi4py import MPI  # noqa: E402  (initialises MPI before symaddr)
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.distributed._symmetric_memory as symm_mem  # noqa: E402

import symaddr as sa  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
passed = failed = skipped = 0


# SYMADDR_TEST_CASES="a b": run only those cases (the rest are not counted)
ONLY = os.environ.get("SYMADDR_TEST_CASES", "").split()


def case(name, fn):
    global passed, failed, skipped
    if ONLY and name not in ONLY:
        return
    try:
        res = fn()
        ok = 1 if res is None else 2  # 2: skipped with a reason
    except Exception as e:  # noqa: BLE001
        ok, res = 0, "%s: %s" % (type(e).__name__, e)
    worst = comm.allreduce(ok, op=MPI.MIN)
    if rank == 0:
        if worst == 0:
            print("not ok - %s (%s)" % (name, res), flush=True)
        elif ok == 2:
            print("skip   - %s: %s" % (name, res), flush=True)
        else:
            print("ok     - %s" % name, flush=True)
    if worst == 0:
        failed += 1
    elif ok == 2:
        skipped += 1
    else:
        passed += 1


ndev = torch.cuda.device_count()
# torch symmetric memory (and NCCL under it) refuses two ranks on one GPU; symaddr does not, so
# the package's own tensor cases run on any GPU count and only the symm_mem cases need one each.
one_per_gpu = ndev >= size
torch.cuda.set_device(rank % ndev)
if one_per_gpu:
    port = comm.bcast(29500 + os.getpid() % 1000 if rank == 0 else None)
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:%d" % port, rank=rank,
                            world_size=size, device_id=torch.device("cuda", rank % ndev))
    group = dist.group.WORLD
ctx = sa.Context(comm, backend="cuda")
N = 1001  # odd


def needs_symm_mem(fn):
    def run():
        if not one_per_gpu:
            return ("torch symmetric memory needs one GPU per rank (%d ranks, %d GPUs)"
                    % (size, ndev))
        return fn()
    return run


def values(r, n, dtype):
    return (((torch.arange(n, device="cuda") % 7) + 1) * (r + 1)).to(dtype)  # exact in bf16


def test_own_collectives():
    """ctx.allocate's tensors: allreduce, allgather, broadcast at an odd offset, against a
    sequential reference of every rank's values."""
    for dtype in (torch.float32, torch.bfloat16, torch.int32):
        a, amap = ctx.allocate(N + 3, dtype)
        assert amap.peer_bases[rank] == a.data_ptr(), "the map's own entry is not the tensor"
        send = a[3:]
        send.copy_(values(rank, N, dtype))
        out = ctx.empty(N + 1, dtype)
        ctx.allreduce(send, out[1:])
        ctx.sync()
        ref = sum(values(r, N, torch.float64) for r in range(size))
        bad = int((out[1:].double() != ref).sum())
        assert bad == 0, "allreduce %s: %d of %d wrong" % (dtype, bad, N)
        gathered = ctx.empty(N * size, dtype)
        ctx.allgather(send, gathered)
        ctx.sync()
        for r in range(size):
            part = gathered[r * N:(r + 1) * N]
            assert bool((part == values(r, N, dtype)).all()), "allgather %s: rank %d's part" % (
                dtype, r)
        root = size - 1
        ctx.broadcast(send, out[1:], root=root)
        ctx.sync()
        assert bool((out[1:] == values(root, N, dtype)).all()), "broadcast %s" % dtype
        for t in (a, out, gathered):
            ctx.free(t)


def put_ring(dst, barrier):
    """Each rank puts its values into its right neighbour's dst; checks its left one's."""
    dst.zero_()
    src = values(rank, N, torch.float32)
    torch.cuda.synchronize()
    barrier()
    ctx.put(dst, src, (rank + 1) % size)
    ctx.sync()
    barrier()
    ctx.sync()
    left = (rank + size - 1) % size
    assert bool((dst == values(left, N, torch.float32)).all()), "put landed wrong"


def test_own_put_get():
    a = ctx.empty(N, torch.float32)
    put_ring(a, ctx.barrier)
    got = torch.empty(N, dtype=torch.float32, device="cuda")
    ctx.get(got, a, (rank + 1) % size)
    ctx.sync()
    assert bool((got == values(rank, N, torch.float32)).all()), "get read wrong"
    ctx.barrier()
    ctx.sync()
    ctx.free(a)


def test_own_errors():
    try:
        ctx.allreduce(torch.zeros(4, dtype=torch.complex64, device="cuda"))
        raise AssertionError("complex64 was accepted")
    except sa.SymaddrError as e:  # the package names the dtype and what it takes
        assert "complex64" in str(e) and "bfloat16" in str(e), str(e)
    a = ctx.empty(16, torch.float32)
    try:  # refused by the library itself, with its status and message
        ctx.put(a, torch.zeros(16, device="cuda"), size)
        raise AssertionError("a put to rank %d of %d was accepted" % (size, size))
    except sa.SymaddrError as e:
        assert e.status == -1 and "is not a rank of this context" in str(e), (e.status, str(e))
    ctx.free(a)
    try:
        ctx.free(torch.zeros(4, device="cuda"))
        raise AssertionError("a tensor symaddr did not allocate was freed")
    except sa.SymaddrError as e:
        assert e.status != 0


def test_table_is_buffer_ptrs():
    buf = symm_mem.empty(N, dtype=torch.float32, device="cuda")
    h = symm_mem.rendezvous(buf, group.group_name)
    m = ctx.register_symm_mem(buf, h)
    assert m.peer_bases == list(h.buffer_ptrs), (m.peer_bases, list(h.buffer_ptrs))
    m.unregister()
    dist.barrier()


def test_allreduce_symm_to_own():
    for dtype in (torch.float32, torch.bfloat16):
        buf = symm_mem.empty(N + 3, dtype=dtype, device="cuda")
        h = symm_mem.rendezvous(buf, group.group_name)
        m = ctx.register_symm_mem(buf, h)
        own = ctx.empty(N + 3, dtype)
        send = buf[3:]  # a view at an odd element offset
        send.copy_(values(rank, N, dtype))
        torch.cuda.synchronize()
        ref = values(rank, N, torch.float32)
        dist.all_reduce(ref)  # NCCL's sum of the same values
        ctx.allreduce(send, own[3:])  # foreign send, own recv: one kernel
        ctx.sync()
        got = own[3:].float()
        bad = int((got != ref).sum())
        assert bad == 0, "%s: %d of %d wrong" % (dtype, bad, N)
        dist.barrier()
        m.unregister()
        ctx.free(own)
        # symaddr left torch's memory alone
        assert bool((send == values(rank, N, dtype)).all())


def test_put_own_to_symm():
    buf = symm_mem.empty(N, dtype=torch.float32, device="cuda")
    h = symm_mem.rendezvous(buf, group.group_name)
    m = ctx.register_symm_mem(buf, h)
    put_ring(buf, dist.barrier)
    m.unregister()


def test_bad_inputs():
    buf = symm_mem.empty(16, dtype=torch.float32, device="cuda")
    h = symm_mem.rendezvous(buf, group.group_name)
    try:
        ctx.register(buf, 64, list(h.buffer_ptrs)[:-1])
        raise AssertionError("a short table was accepted")
    except sa.SymaddrError as e:
        assert "entries" in str(e)
    try:
        ctx.allreduce(torch.zeros(4, dtype=torch.complex64, device="cuda"))
        raise AssertionError("complex64 was accepted")
    except sa.SymaddrError as e:  # the package names the dtype and what it takes
        assert "complex64" in str(e) and "bfloat16" in str(e), str(e)
    # A table whose own entry is not the buffer: the library's own check, on every rank.
    bad = list(h.buffer_ptrs)
    bad[rank] += 256
    try:
        ctx.register(buf, 64, bad)
        raise AssertionError("a wrong own entry was accepted")
    except sa.SymaddrError as e:
        assert e.status == -1, e.status
    dist.barrier()



FREED_AT_MODULE_LEVEL = None  # a freed tensor kept as a global while this module's kernels compile


def test_lifetimes():
    """Every route to a freed tensor's memory on a torch CUDA tensor (views, storage,
    from_dlpack, __cuda_array_interface__, copy_, clone, ...) reads the freed allocation's own
    memory, never another's; a freed tensor kept as a module global does not stop a Triton
    kernel of this module from compiling; the map refuses use (INVALID_MAP); the memory is
    released once no rank holds it; torch.compile works over symaddr tensors."""
    global FREED_AT_MODULE_LEVEL
    import triton
    import triton.language as tl
    from symaddr import triton as st
    for retain in (256 << 20, 0):
        c = sa.Context(comm, backend="cuda", retain_bytes=retain)
        x, xmap = c.allocate_symmetric((N,), torch.float32)
        base = xmap.allocation_base
        x.copy_(torch.arange(N, dtype=torch.float32, device="cuda") + 1000 * (rank + 1))
        want = x.clone()
        v = x[3:]
        FREED_AT_MODULE_LEVEL = x
        c.free(x)
        y, ymap = c.allocate_symmetric((N,), torch.float32)
        y.fill_(100)
        assert not ymap.allocation_base <= base < ymap.allocation_base + 4 * N, "reused"
        kept = [v.view(torch.int32), x.untyped_storage(), torch.from_dlpack(v),
                torch.as_tensor(v, device="cuda")]
        assert v.__cuda_array_interface__["data"][0] == v.data_ptr()
        assert torch.equal(kept[2], want[3:]) and torch.equal(x.clone(), want)
        assert torch.equal(v.view(torch.int32).view(torch.float32), want[3:])
        try:
            xmap.peer_bases
            raise AssertionError("a freed map's peer_bases passed")
        except sa.SymaddrError as e:
            assert e.name == "SYMADDR_ERR_INVALID_MAP", e.name
        for cls in (type(x), type(xmap)):  # introspection of dead objects
            assert isinstance(getattr(cls, "__module__", ""), str)
        assert "freed" in repr(xmap) and not hasattr(x, "no_such_attribute")

        @triton.jit
        def k(dst, src, n, peer, table, cur, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            m = offs < n
            st.store(dst + offs, tl.load(src + offs, mask=m), peer, table, cur, mask=m)
        src = torch.full((N,), float(rank + 1), device="cuda")
        y.fill_(0)
        torch.cuda.synchronize()
        c.barrier()
        k[(1,)](y, src, 64, (rank + 1) % size, ymap.peer_bases, rank, BLOCK=64)
        torch.cuda.synchronize()
        c.barrier()
        torch.cuda.synchronize()
        left = (rank - 1) % size
        assert torch.all(y[:64] == left + 1), "a kernel of this module compiled and ran"
        v.copy_(torch.full_like(v, -1.0))  # writes the freed allocation's own memory
        torch.cuda.synchronize()
        assert torch.all(y[64:] == 0) and torch.all(x[3:] == -1), "another allocation written"
        FREED_AT_MODULE_LEVEL = None
        del x, v, kept
        c.collect()
        import ctypes
        m = ctypes.c_void_p()
        st_ = c._lib.symaddr_lookup(c._h, ctypes.c_void_p(base), ctypes.byref(m))
        assert st_ == sa.STATUS["SYMADDR_ERR_NOT_FOUND"], "released once nobody holds it"
        f = torch.compile(lambda t: (t * 2 + 1).sum())
        assert float(f(y)) == float((y * 2 + 1).sum()), "torch.compile over a symaddr tensor"
        c.free(y)
        del y
        c.close()


def replay_in_graph(x, launches, replays):
    """Runs every launch once outside a capture (Triton compiles, the library sets up), then
    captures x += 1 and the launches in one CUDA graph and replays it `replays` times with no
    host call between replays; returns after every rank's last replay."""
    ctx.team()
    torch.cuda.synchronize()
    ctx.barrier()
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for launch in launches:
            launch()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        x.add_(1)
        for launch in launches:
            launch()
    for _ in range(replays):
        graph.replay()
    torch.cuda.synchronize()
    ctx.barrier()
    ctx.sync()


def test_graph_replay():
    """A CUDA graph of [x += 1, the Triton one-shot allreduce, the Triton two-shot, ctx's own
    allreduce], replayed 1,000 times with no host call between replays: every call stays
    exact (the team's call numbers live in device memory)."""
    from symaddr.triton import collectives as tc
    n = 2 * size + 3
    x, _ = ctx.allocate_symmetric((n,), torch.float32)
    two, _ = ctx.allocate_symmetric((n,), torch.float32)
    own, _ = ctx.allocate_symmetric((n,), torch.float32)
    one = torch.empty(n, dtype=torch.float32, device="cuda")
    x.copy_(torch.arange(n, dtype=torch.float32, device="cuda") + rank)
    replays = 1000
    replay_in_graph(x, [lambda: tc.allreduce(ctx, x, one),
                        lambda: tc.allreduce(ctx, x, two, algo="twoshot"),
                        lambda: ctx.allreduce(x, own)], replays)
    base = torch.arange(n, dtype=torch.float32, device="cuda") * size + size * (size - 1) / 2
    want = base + size * replays  # x += 1 once a replay (a capture runs nothing)
    for name, got in (("one-shot", one), ("two-shot", two), ("ctx.allreduce", own)):
        assert torch.equal(got, want), "%s after %d replays: %s" % (name, replays, got[:4])
    for a in (own, two, x):
        ctx.free(a)


def test_graph_every():
    """Every host collective the library lists (symmetric recv, and a plain one, staged) and
    every Triton collective, captured in one CUDA graph after x += 1 and replayed 1,000 times
    with no host call between replays: after the last replay each result equals MPI's own
    collective of every rank's x (int32, odd counts: exact)."""
    from symaddr.triton import collectives as tc
    k, replays, root = 3, 1000, size - 1
    n = k * size
    bits = ctx._lib.abi["collective_flag"]
    mpi = {"allreduce": lambda s, r: comm.Allreduce(s, r),
           "reduce_scatter": lambda s, r: comm.Reduce_scatter_block(s, r),
           "allgather": lambda s, r: comm.Allgather(s, r),
           "broadcast": lambda s, r: (r.__setitem__(slice(None), s), comm.Bcast(r, root=root)),
           "alltoall": lambda s, r: comm.Alltoall(s, r),
           "reduce": lambda s, r: comm.Reduce(s, r, root=root),
           "gather": lambda s, r: comm.Gather(s, r, root=root),
           "scatter": lambda s, r: comm.Scatter(s, r, root=root)}
    x, _ = ctx.allocate_symmetric((n,), torch.int32)
    x.copy_(values(rank, n, torch.int32))
    calls, outs = [], []  # (name, launch), (name, recv, mpi reference, checked here)
    for c in ctx._lib.abi["collectives"]:
        name, flags = c["name"], c["flags"]
        assert name in mpi, "%s: no MPI reference in this test" % name
        send_all, recv_all = flags & bits["send_all"], flags & bits["recv_all"]
        m = n if send_all and recv_all else n // size if send_all else n * size if recv_all \
            else n
        kw = {"root": root} if flags & bits["rooted"] else {}
        mine = not (flags & bits["root_only"]) or rank == root
        for plain in (False, True):
            r = torch.full((m,), -1, dtype=torch.int32, device="cuda") if plain else \
                ctx.allocate_symmetric((m,), torch.int32)[0]
            r.fill_(-1)
            calls.append((name, lambda f=getattr(ctx, name), r=r, kw=kw: f(x, r, **kw)))
            outs.append(("ctx.%s%s" % (name, " (plain recv)" if plain else ""), r, name, mine))
    for name, fn, m, kw in (("allreduce", tc.allreduce, n, {}),
                            ("allreduce", tc.allreduce, n, {"algo": "twoshot"}),
                            ("reduce_scatter", tc.reduce_scatter, n // size, {}),
                            ("allgather", tc.allgather, n * size, {}),
                            ("alltoall", tc.alltoall, n, {}),
                            ("broadcast", tc.broadcast, n, {"root": root})):
        if kw.get("algo") == "twoshot":  # its out is symmetric (a peer writes its part)
            r = ctx.allocate_symmetric((m,), torch.int32)[0]
            r.fill_(-1)
        else:
            r = torch.full((m,), -1, dtype=torch.int32, device="cuda")
        calls.append((name, lambda fn=fn, r=r, kw=kw: fn(ctx, x, r, **kw)))
        outs.append(("symaddr.triton.collectives.%s %s" % (name, kw), r, name, True))
    replay_in_graph(x, [launch for _, launch in calls], replays)
    final = x.cpu().numpy()
    assert (final == values(rank, n, torch.int32).cpu().numpy() + replays).all(), \
        "x after %d replays: %s" % (replays, final[:4])
    import numpy as np
    bad = []
    for what, r, name, mine in outs:
        want = np.full(r.numel(), -1, dtype=np.int32)
        mpi[name](final, want)
        if mine and not (r.cpu().numpy() == want).all():
            bad.append("%s: %s, want %s" % (what, r.cpu().numpy()[:4], want[:4]))
    assert not bad, "after %d replays, %d of %d wrong: %s" % (replays, len(bad), len(outs),
                                                               "; ".join(bad))
    for what, r, _, _ in outs:
        if ("plain" not in what and what.startswith("ctx.")) or "twoshot" in what:
            ctx.free(r)
    ctx.free(x)


def _replays_outlive_growth(c, capture, result, grow, every):
    """capture() captured in a CUDA graph on a side stream, then grow(m) (an eager call of m
    int32s past the workspace, returning its sum) and a new allocation: each of three replays
    leaves result exact against every, and the new allocation as it was."""
    c.barrier()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(s):
        with torch.cuda.graph(graph, stream=s):
            capture()
    big = grow(1 << 16)  # 256 KiB: past the workspace
    torch.cuda.synchronize()
    assert bool((big == size * (size + 1) // 2).all()), "the growing call: %s" % big[:4]
    z, _ = c.allocate_symmetric((1024,), torch.int32)
    z.fill_(7)
    for k in range(3):
        torch.cuda.synchronize()
        c.barrier()
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(result.cpu(), every), "replay %d: %s, want %s" % (
            k, result.cpu()[:4], every[:4])
        assert bool((z == 7).all()), "replay %d wrote an allocation made after it" % k
    c.barrier()
    del graph


def test_graph_outlives_workspace():
    """A CUDA graph that captured staged allreduces (plain recv: written through the context's
    workspace), then an eager staged call larger than the workspace, which grows it, and a new
    allocation of the old workspace's size: each replay stays exact and the new allocation
    keeps its values (the old workspace was freed at the growth, and the replays wrote memory
    no longer theirs)."""
    n = 2 * size + 1
    every = sum(values(r, n, torch.int32) for r in range(size)).cpu()
    with sa.Context(comm, backend="cuda") as c:
        x, _ = c.allocate_symmetric((n,), torch.int32)
        x.copy_(values(rank, n, torch.int32))
        out = torch.full((n,), -1, dtype=torch.int32, device="cuda")
        c.allreduce(x, out)  # the workspace made, eager (4 KiB)
        torch.cuda.synchronize()

        def capture():
            out.fill_(-1)
            c.allreduce(x, out)

        kept = []  # y lives through the replays, as the new allocation's neighbour

        def grow(m):
            y, _ = c.allocate_symmetric((m,), torch.int32)
            y.fill_(rank + 1)
            kept.append(y)
            big = torch.zeros(m, dtype=torch.int32, device="cuda")
            return c.allreduce(y, big)
        _replays_outlive_growth(c, capture, out, grow, every)


def test_graph_outlives_staged_input():
    """As graph_outlives_workspace, for an input staged into the workspace with nothing
    staged out: torch.ops.symaddr.all_reduce_ of a plain tensor (copied into the workspace,
    reduced there in place, copied back) captured in a CUDA graph, then an eager call that
    grows the workspace and a new allocation: each replay exact, the new allocation kept
    (before, nothing marked the workspace captured on this route, so the growth freed it
    under the graph)."""
    from symaddr import ops
    n = 2 * size + 1
    every = sum(values(r, n, torch.int32) for r in range(size)).cpu()
    with sa.Context(comm, backend="cuda") as c:
        group = ops.group_name(c)
        x = torch.empty(n, dtype=torch.int32, device="cuda")
        x.copy_(values(rank, n, torch.int32))
        torch.ops.symaddr.all_reduce_(x, "sum", group)  # the workspace made, eager
        torch.cuda.synchronize()
        assert torch.equal(x.cpu(), every), "eager: %s" % x.cpu()[:4]

        def capture():
            x.copy_(values(rank, n, torch.int32))
            torch.ops.symaddr.all_reduce_(x, "sum", group)

        def grow(m):
            big = torch.full((m,), rank + 1, dtype=torch.int32, device="cuda")
            torch.ops.symaddr.all_reduce_(big, "sum", group)
            return big
        _replays_outlive_growth(c, capture, x, grow, every)


def test_import_reuse():
    """An import keeps its tensor until the library releases it. Rank 0 drops its imported
    tensor while registered and makes a plain recv of the same size: torch's caching
    allocator used to hand it the import's block at once, the allgather took that recv for
    symmetric memory on rank 0 alone, and ranks read values no peer wrote (seen at 8 ranks
    on one H200). Exact against a sequential reference."""
    n = 2 * size + 1
    x, _ = ctx.allocate_symmetric((n,), torch.int32)
    x.copy_(values(rank, n, torch.int32))
    a = torch.zeros(n * size, dtype=torch.int32, device="cuda")
    old = a.data_ptr()
    amap = ctx.import_(a)
    if rank == 0:
        del a
    plain = torch.full((n * size,), -1, dtype=torch.int32, device="cuda")
    assert plain.data_ptr() != old, "the import's memory went to a new tensor"
    ctx.allgather(x, plain)
    torch.cuda.synchronize()
    want = torch.cat([values(r, n, torch.int32) for r in range(size)])
    if not torch.equal(plain, want):
        ws = ctx._stage_view(ctx._stage[0], n * size * 4).view(torch.int32) if ctx._stage else None
        print("[rank %d] import_reuse: wrong %s, got %s; workspace %s wrong %s; x %s" % (
            rank, (plain != want).nonzero().flatten()[:8].tolist(), plain[:10].tolist(),
            None if ws is None else hex(ctx._stage[0]),
            None if ws is None else (ws != want).nonzero().flatten()[:8].tolist(),
            x[:10].tolist()), file=sys.stderr, flush=True)
    assert torch.equal(plain, want), "allgather into a plain tensor: %s" % (
        (plain != want).nonzero().flatten()[:8].tolist())
    amap.unregister()
    ctx.free(x)


def test_rooted_kinds():
    """Rooted collectives on CUDA tensors with each rank's recv of its own kind, as MPI
    programs pass them: reduce into a plain root's recv with None off the root, broadcast
    and scatter with a symmetric root's recv and plain peers' and the other way round; in
    a new context (no workspace yet) below and past the size to which a rooted call grows
    the workspace on every rank (forced to 16 bytes: the ranks then agree whether any
    stages), where symmetric recv on every rank make no workspace. Exact (int32) against
    MPI's own collectives."""
    import numpy as np
    n, root = 2 * size + 3, size - 1
    mine = values(rank, n * size, torch.int32)
    every = comm.allgather(mine.cpu().numpy())
    for grow in (None, 16):  # (n int32 are 28 bytes and more)
        with sa.Context(comm, backend="cuda") as c:
            if grow is not None:
                c._rooted_grow = grow
            x, _ = c.allocate_symmetric((n * size,), torch.int32)
            x.copy_(mine)
            sym, _ = c.allocate_symmetric((n,), torch.int32)
            if grow is not None:
                for name, src in (("reduce", x[:n]), ("broadcast", x[:n]), ("scatter", x)):
                    getattr(c, name)(src, sym, root=root)
                assert c._stage is None, "symmetric past %d bytes: workspace %s" % (
                    grow, c._stage)
            for root_plain in (True, False):
                what = "grow %s, root %s" % (grow, "plain" if root_plain else "symmetric")
                plain = torch.full((n,), -1, dtype=torch.int32, device="cuda")
                theirs = plain if (rank == root) == root_plain else sym
                sym.fill_(-1)
                got = c.reduce(x[:n], theirs if rank == root or not root_plain else None,
                               root=root)
                torch.cuda.synchronize()
                want = np.sum([e[:n] for e in every], axis=0, dtype=np.int32)
                if rank == root:
                    assert got is theirs and (theirs.cpu().numpy() == want).all(), \
                        "%s: reduce %s" % (what, theirs[:4])
                got = c.broadcast(x[:n], theirs, root=root)
                torch.cuda.synchronize()
                assert got is theirs and (theirs.cpu().numpy() == every[root][:n]).all(), \
                    "%s: broadcast %s" % (what, theirs[:4])
                got = c.scatter(x, theirs, root=root)
                torch.cuda.synchronize()
                want = every[root][rank * n:(rank + 1) * n]
                assert got is theirs and (theirs.cpu().numpy() == want).all(), \
                    "%s: scatter %s" % (what, theirs[:4])


def test_staged_stream():
    """A staged recv's copy and avg's division run on the collective's stream. Stream 0 is the
    legacy default stream itself: torch.cuda.ExternalStream(0) is a new pooled stream on torch
    2.11 (pytorch#182960), so the copy out of the workspace ran unordered with the collective
    and an 8-rank allgather into a plain tensor read the previous call's sums (seen on one
    H200). Here each rank holds its stream busy (torch.cuda._sleep) before the calls, so a copy
    on any other stream runs first and reads the workspace as the last call left it."""
    dev = torch.device("cuda", torch.cuda.current_device())
    assert ctx._torch_stream(0, dev).cuda_stream == 0, "stream 0 is not the default stream"
    side = torch.cuda.Stream()
    assert ctx._torch_stream(side.cuda_stream, dev).cuda_stream == side.cuda_stream
    n = 2 * size + 1
    x, _ = ctx.allocate_symmetric((n,), torch.float32)
    x.copy_(values(rank, n, torch.float32))
    total = sum(values(r, n, torch.float32) for r in range(size))
    everyone = torch.cat([values(r, n, torch.float32) for r in range(size)])
    for stream in (None, 0, side):
        summed = torch.full((n,), -1.0, device="cuda")
        gathered = torch.full((n * size,), -1.0, device="cuda")
        averaged = torch.full((n,), -1.0, device="cuda")
        torch.cuda.synchronize()
        ctx.barrier()
        s = side if stream is side else torch.cuda.default_stream()
        with torch.cuda.stream(s):
            torch.cuda._sleep(50_000_000)  # tens of ms on the calls' stream
            ctx.allreduce(x, summed, stream=stream)
            torch.cuda._sleep(50_000_000)
            ctx.allgather(x, gathered, stream=stream)
            ctx.allreduce(x, averaged, op="avg", stream=stream)
        torch.cuda.synchronize()
        ctx.barrier()
        assert torch.equal(summed, total), "stream %r: staged allreduce" % (stream,)
        assert torch.equal(gathered, everyone), "stream %r: staged allgather: %s" % (
            stream, gathered[:4].tolist())
        assert torch.allclose(averaged, total / size), "stream %r: avg" % (stream,)
    ctx.free(x)


case("own_collectives", test_own_collectives)
case("own_put_get", test_own_put_get)
case("own_errors", test_own_errors)
case("lifetimes", test_lifetimes)
case("graph_replay", test_graph_replay)
case("graph_every", test_graph_every)
case("graph_outlives_workspace", test_graph_outlives_workspace)
case("graph_outlives_staged_input", test_graph_outlives_staged_input)
case("import_reuse", test_import_reuse)
case("staged_stream", test_staged_stream)
case("rooted_kinds", test_rooted_kinds)
case("table_is_buffer_ptrs", needs_symm_mem(test_table_is_buffer_ptrs))
case("allreduce_symm_to_own", needs_symm_mem(test_allreduce_symm_to_own))
case("put_own_to_symm", needs_symm_mem(test_put_own_to_symm))
case("bad_inputs", needs_symm_mem(test_bad_inputs))
ctx.close()
if one_per_gpu:
    dist.destroy_process_group()
if rank == 0:
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped), flush=True)
sys.exit(1 if failed else 0)
