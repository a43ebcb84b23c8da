"""symaddr.iris beyond the host class: Iris's DeviceContext (over the heap's table and over an
ipc tensor's own, validated as the explicit form) and shmem.ccl (all_reduce with every Iris
variant, ops Iris lacks, reduce_scatter in torch's and Iris's forms, all_gather, all_to_all in
Iris's column layout, broadcast, barrier, refusals), exact on integer-valued data against
references computed here, heap and ipc tensors, f32, f16 and bf16; a CUDA graph of ccl calls
replayed (GPU only).
    TRITON_INTERPRET=1 SYMADDR_BACKEND=cpu mpiexec -n 3 python3 tests/python/test_iris_ccl.py
(or under torchrun). Prints the harness's summary."""
import os
import sys

if os.environ.get("SYMADDR_TEST_PYTHONPATH"):  # the source tree's package, before an installed one
    sys.path.insert(0, os.environ["SYMADDR_TEST_PYTHONPATH"])

import faulthandler  # noqa: E402

faulthandler.dump_traceback_later(float(os.environ.get("SYMADDR_TEST_DEADLINE", "600")),
                                  exit=True)

import torch  # noqa: E402

from mpi_cases import check, launch  # noqa: E402

_, _, cases = launch()  # mpiexec's MPI (initialised before symaddr), or torchrun's group
import symaddr.iris as iris  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from symaddr import SymaddrError  # noqa: E402
from symaddr.iris import DeviceContext  # noqa: E402
from symaddr.iris.ccl import Config, ReduceOp  # noqa: E402

shmem = iris.iris(1 << 24)
rank, size = shmem.get_rank(), shmem.get_num_ranks()
DEV = shmem.get_device()
DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def raises(what, fn, exc, words=()):
    try:
        fn()
    except exc as e:
        check(all(w in str(e) for w in words), "%s: %s" % (what, e))
        return
    raise AssertionError("%s passed, want %s" % (what, exc.__name__))


def value(r, shape, dtype, k=0):
    """Rank r's data: small integers, distinct per rank and element (exact in bf16 sums)."""
    n = 1
    for d in shape:
        n *= d
    i = torch.arange(n, device=DEV)
    return (((i * 7 + r * 13 + k) % 23) - 11).to(dtype).reshape(shape)


# ---- DeviceContext ----------------------------------------------------------------------

@triton.jit
def k_ring(context_tensor, src, dst, counter, n, rank: tl.constexpr, world_size: tl.constexpr,
           BLOCK: tl.constexpr):
    """Put src into the right neighbour's dst, get the left's src into dst + n, and add 1 to
    every rank's counter, through DeviceContext's methods."""
    ctx = DeviceContext.initialize(context_tensor, rank, world_size)
    offs = tl.arange(0, BLOCK)
    m = offs < n
    right = (rank + 1) % world_size
    left = (rank + world_size - 1) % world_size
    ctx.put(src + offs, dst + offs, right, mask=m)
    ctx.get(src + offs, dst + n + offs, left, mask=m)
    x = ctx.load(src + offs, left, mask=m, other=0)
    ctx.store(dst + 2 * n + offs, x * 2, rank, mask=m)
    for r in range(world_size):
        ctx.atomic_add(counter, 1, r, sem="relaxed", scope="sys")


def device_context_case(provider):
    n = 37
    if provider == "heap":
        src = shmem.zeros(n, dtype=torch.int32)
        dst = shmem.zeros(3 * n, dtype=torch.int32)
        counter = shmem.zeros(1, dtype=torch.int32)
        ct = shmem.get_device_context()
    else:  # one ipc allocation for all three: its own table
        whole, _ = shmem.allocate_symmetric((5 * n,), torch.int32, provider=provider)
        whole.zero_()
        src, dst, counter = whole[:n], whole[n:4 * n], whole[4 * n:4 * n + 1]
        ct = shmem.get_device_context(whole)
    check(ct.dtype == torch.int64 and ct.numel() == size + 3 and int(ct[0]) == rank and
          int(ct[1]) == size, "%s: context tensor [rank, size, bases..., table]" % provider)
    src.copy_(torch.arange(n, dtype=torch.int32, device=DEV) + 1000 * (rank + 1))
    shmem.barrier()
    k_ring[(1,)](ct, src, dst, counter, n, rank, size, BLOCK=64)
    shmem.barrier()
    left = (rank - 1) % size
    want = torch.arange(n, dtype=torch.int32, device=DEV) + 1000 * (left + 1)
    check(torch.equal(dst[:n], want), "%s: put from the left neighbour" % provider)
    check(torch.equal(dst[n:2 * n], want), "%s: get of the left neighbour's" % provider)
    check(torch.equal(dst[2 * n:], want * 2), "%s: load, then store here" % provider)
    check(int(counter[0]) == size, "%s: every rank's atomic_add: %d" % (provider, int(counter[0])))
    shmem.barrier()


def test_device_context_heap():
    """DeviceContext over get_device_context(): the heap's table."""
    device_context_case("heap")


def test_device_context_ipc():
    """DeviceContext over get_device_context(t): an ipc allocation's own table."""
    device_context_case("ipc")


@triton.jit
def k_past(context_tensor, buf, n, rank: tl.constexpr, world_size: tl.constexpr,
           BLOCK: tl.constexpr):
    ctx = DeviceContext.initialize(context_tensor, rank, world_size)
    offs = tl.arange(0, BLOCK)
    ctx.store(buf + offs, offs, (rank + 1) % world_size, mask=offs < n)


def test_device_context_validated():
    """Under SYMADDR_VALIDATE, a DeviceContext store past an ipc allocation's end (through its
    own table) is refused lane by lane and raised at the next host call; the lanes inside land."""
    if not shmem.context.validating:
        return "SKIP: validation is off (run with SYMADDR_VALIDATE=1)"
    n = 11
    t, _ = shmem.allocate_symmetric((n,), torch.int32, provider="ipc")
    t.fill_(-1)
    ct = shmem.get_device_context(t)
    shmem.barrier()
    k_past[(1,)](ct, t, n + 5, rank, size, BLOCK=32)
    raised = None
    try:
        shmem.barrier()
    except SymaddrError as e:
        raised = e
    check(raised is not None and raised.name == "SYMADDR_ERR_OUT_OF_BOUNDS",
          "the store past the end raised: %r" % (raised,))
    shmem.context.barrier()
    check(torch.equal(t, torch.arange(n, dtype=torch.int32, device=DEV)),
          "the lanes inside landed: %s" % t.tolist())


# ---- ccl --------------------------------------------------------------------------------

def test_all_reduce_variants():
    """Every Iris variant, f32/f16/bf16, out of place and in place, heap tensors, odd shapes."""
    shape = (3, 37)
    for dtype in DTYPES:
        want = sum(value(r, shape, dtype).float() for r in range(size)).to(dtype)
        for variant in (None, "atomic", "spinlock", "one_shot", "two_shot", "ring"):
            config = None if variant is None else Config(all_reduce_variant=variant)
            x = shmem.zeros(shape, dtype=dtype)
            out = shmem.zeros(shape, dtype=dtype)
            x.copy_(value(rank, shape, dtype))
            shmem.barrier()
            ws = shmem.ccl.all_reduce_preamble(out, x, config=config)
            shmem.ccl.all_reduce(out, x, config=config, workspace=ws)
            check(torch.equal(out, want), "%s %s: out of place" % (variant, dtype))
            shmem.ccl.all_reduce(x, x, config=config)
            check(torch.equal(x, want), "%s %s: in place" % (variant, dtype))
            shmem.barrier()


def test_all_reduce_ops_and_providers():
    """ReduceOp's PROD, MIN, MAX, AVG (Iris has SUM only), torch's ReduceOp and names; an ipc
    tensor; a plain output tensor."""
    shape = (41,)
    x, _ = shmem.allocate_symmetric(shape, torch.float32, provider="ipc")
    x.copy_(value(rank, shape, torch.float32))
    vals = torch.stack([value(r, shape, torch.float32) for r in range(size)])
    sign = torch.where(vals.abs() > 1, torch.sign(vals), torch.ones_like(vals))  # small products
    refs = {ReduceOp.SUM: vals.sum(0), ReduceOp.MIN: vals.min(0).values,
            ReduceOp.MAX: vals.max(0).values, ReduceOp.AVG: vals.sum(0) / size}
    shmem.barrier()
    for op, want in refs.items():
        for variant in (None, "two_shot"):
            out = torch.zeros(shape, device=DEV)  # plain: not symmetric
            shmem.ccl.all_reduce(out, x, op=op, config=Config(all_reduce_variant=variant)
                                 if variant else None)
            check(torch.equal(out, want), "%s, variant %s, ipc input, plain output" % (op,
                                                                                       variant))
    x.copy_(sign[rank])
    shmem.barrier()
    out = shmem.zeros(shape)
    shmem.ccl.all_reduce(out, x, op=ReduceOp.PROD, config=Config(all_reduce_variant="ring"))
    check(torch.equal(out, sign.prod(0)), "PROD (a Triton variant runs the host allreduce)")
    shmem.ccl.all_reduce(out, x, op="max")
    check(torch.equal(out, sign.max(0).values), "op by name")
    if sys.modules.get("torch.distributed") is not None and torch.distributed.is_available():
        shmem.ccl.all_reduce(out, x, op=torch.distributed.ReduceOp.MIN)
        check(torch.equal(out, sign.min(0).values), "torch.distributed.ReduceOp.MIN")
    shmem.barrier()


def test_reduce_scatter_forms():
    """torch's form (output = this rank's part) and Iris's (output of input's shape)."""
    m, n = 5 * size, 7
    x = shmem.zeros(m, n, dtype=torch.float32)
    x.copy_(value(rank, (m, n), torch.float32))
    total = sum(value(r, (m, n), torch.float32) for r in range(size))
    out = shmem.zeros(m // size, n)
    shmem.barrier()
    shmem.ccl.reduce_scatter(out, x)
    check(torch.equal(out, total[rank * 5:(rank + 1) * 5]), "torch's form: this rank's part")
    full = shmem.zeros(m, n)
    shmem.ccl.reduce_scatter(full, x, config=Config(all_reduce_distribution=1))
    check(torch.equal(full, total), "Iris's form: every element reduced")
    shmem.barrier()


def test_all_gather_and_all_to_all():
    """all_gather along dimension 0; all_to_all in Iris's (M, N * world) column layout, heap
    and ipc, each dtype."""
    for dtype in DTYPES:
        m, n = 3, 5
        x = shmem.zeros(m, n, dtype=dtype)
        x.copy_(value(rank, (m, n), dtype))
        out = shmem.zeros(size * m, n, dtype=dtype)
        shmem.barrier()
        shmem.ccl.all_gather(out, x)
        want = torch.cat([value(r, (m, n), dtype) for r in range(size)])
        check(torch.equal(out, want), "all_gather %s" % dtype)
        for variant in ("persistent", "partitioned", "ring", "pull"):  # Iris's, each ours
            out.zero_()
            config = Config(all_gather_variant=variant, comm_sms=8 * size)
            ws = shmem.ccl.all_gather_preamble(out, x, config=config)  # Iris's newer form
            shmem.barrier()
            check(shmem.ccl.all_gather(out, x, config=config, workspace=ws) is ws,
                  "all_gather returns its workspace")
            check(torch.equal(out, want), "all_gather %s, %s" % (dtype, variant))
        if size > 1:
            raises("all_gather_preamble of a short output", lambda: shmem.ccl.all_gather_preamble(
                x, x), SymaddrError, ["times input's rows"])
        for provider in ("heap", "ipc"):
            inp, _ = shmem.allocate_symmetric((m, n * size), dtype, provider=provider)
            inp.copy_(value(rank, (m, n * size), dtype, k=1))
            o = shmem.zeros(m, n * size, dtype=dtype)
            shmem.barrier()
            shmem.ccl.all_to_all(o, inp)
            want = torch.cat([value(j, (m, n * size), dtype, k=1)[:, rank * n:(rank + 1) * n]
                              for j in range(size)], dim=1)
            check(torch.equal(o, want), "all_to_all %s %s: column blocks" % (dtype, provider))
        shmem.barrier()


def test_broadcast_and_barrier():
    """broadcast_tensor from a root other than 0, in-place broadcast, barrier."""
    src = size - 1
    x = shmem.zeros(4, 9, dtype=torch.int32)
    x.copy_(value(rank, (4, 9), torch.int32))
    out = shmem.zeros(4, 9, dtype=torch.int32)
    shmem.barrier()
    shmem.ccl.broadcast_tensor(out, x, src=src)
    check(torch.equal(out, value(src, (4, 9), torch.int32)), "broadcast_tensor")
    shmem.ccl.broadcast(x, src=0)
    check(torch.equal(x, value(0, (4, 9), torch.int32)), "broadcast in place")
    shmem.ccl.barrier()
    shmem.ccl.barrier(async_op=True)
    shmem.barrier()


def test_reduce():
    """reduce to a root other than 0 (sum and max; each of Iris's reduce_variant names, with
    its preamble's workspace): exact on the root; on the other ranks output = their input (as
    torch.distributed.reduce leaves a non-root's tensor, which Iris's graph-capture test
    compares with)."""
    src = size - 1
    x = shmem.zeros(3, 7, dtype=torch.int32)
    x.copy_(value(rank, (3, 7), torch.int32))
    every = torch.stack([value(r, (3, 7), torch.int32) for r in range(size)])
    for variant, op, want in (("two_shot", None, every.sum(0)),
                              ("one_shot", ReduceOp.MAX, every.max(0).values),
                              ("ring", ReduceOp.SUM, every.sum(0)),
                              ("two_phase", "sum", every.sum(0))):
        out = shmem.full((3, 7), -5, dtype=torch.int32)
        config = Config(reduce_variant=variant, num_warps=8, barrier_mode="device")
        ws = shmem.ccl.reduce_preamble(out, x, root=src, config=config)
        shmem.barrier()
        shmem.ccl.reduce(out, x, root=src, op=op, config=config, workspace=ws)
        got = out.cpu()
        check(torch.equal(got, want.cpu()) if rank == src else
              torch.equal(got, value(rank, (3, 7), torch.int32).cpu()),
              "reduce %s to rank %d: rank %d's output" % (variant, src, rank))
    raises("reduce variant", lambda: Config(reduce_variant="tree"), ValueError, ["'one_shot'"])
    shmem.barrier()


def test_gather_scatter():
    """gather to and scatter from a root other than 0, Iris's layouts (dimension 0): exact;
    gather leaves the other ranks' output as it was."""
    root = size - 1
    x = shmem.zeros(2, 5, dtype=torch.int32)
    x.copy_(value(rank, (2, 5), torch.int32))
    out = shmem.full((2 * size, 5), -3, dtype=torch.int32)
    shmem.barrier()
    shmem.ccl.gather(out, x, dst=root, config=Config(block_size_m=32, block_size_n=64))
    want = torch.cat([value(r, (2, 5), torch.int32) for r in range(size)]).cpu()
    check(torch.equal(out.cpu(), want if rank == root else torch.full_like(want, -3)),
          "gather to rank %d: rank %d's output" % (root, rank))
    whole = shmem.zeros(2 * size, 5, dtype=torch.int32)
    if rank == root:
        whole.copy_(torch.arange(10 * size, dtype=torch.int32, device=DEV).reshape(-1, 5))
    mine = shmem.zeros(2, 5, dtype=torch.int32)
    shmem.barrier()
    shmem.ccl.scatter(mine, whole, src=root)
    check(torch.equal(mine.cpu(), torch.arange(10 * rank, 10 * rank + 10,
                                               dtype=torch.int32).reshape(2, 5)),
          "scatter from rank %d: rank %d's rows" % (root, rank))
    shmem.barrier()


def test_functional_collectives():
    """Iris's iris.compile.functional_collectives: setup(shmem), then torch.ops.iris.all_reduce,
    all_gather and reduce_scatter (and fc's eager forms) exact on plain tensors, traced by
    torch.compile(fullgraph=True) with no graph break and exact against eager; before setup,
    and with another world size, refused saying why."""
    from symaddr.iris.compile import functional_collectives as fc
    saved = dict(fc._setup)
    fc._setup.clear()
    raises("before setup", lambda: fc.all_reduce(torch.ones(3, device=DEV)), RuntimeError,
           ["setup(shmem)"])
    fc._setup.update(saved)
    fc.setup(shmem, config=Config(all_reduce_variant="two_shot"))
    x = value(rank, (2 * size, 3), torch.float32).to(DEV)
    every = torch.stack([value(r, (2 * size, 3), torch.float32) for r in range(size)]).cpu()
    check(torch.equal(fc.all_reduce(x).cpu(), every.sum(0)), "all_reduce")
    check(torch.equal(torch.ops.iris.all_gather(x, size).cpu(), every.reshape(-1, 3)),
          "all_gather")
    check(torch.equal(fc.reduce_scatter(x).cpu(), every.sum(0)[2 * rank:2 * rank + 2]),
          "reduce_scatter")
    raises("world size", lambda: torch.ops.iris.all_gather(x, size + 1), ValueError,
           ["ranks"])

    if size > 4:  # as the suite's other compiles: 8 ranks' compiles on CI's 2 cores take minutes
        shmem.barrier()
        return None

    def model(t):
        return torch.ops.iris.reduce_scatter(torch.ops.iris.all_reduce(t) * 2, size) + 1
    explain = torch._dynamo.explain(model)(x)
    check(explain.graph_break_count == 0, "graph breaks: %d" % explain.graph_break_count)
    compiled = torch.compile(model, fullgraph=True,
                             backend="inductor" if DEV.type == "cuda" else "aot_eager")(x)
    check(torch.equal(compiled.cpu(), every.sum(0)[2 * rank:2 * rank + 2] * size * 2 + 1),
          "compiled model")
    shmem.barrier()


def test_plain_inputs():
    """Every ccl call with plain (not symmetric) input tensors, as Iris's newer ccl takes them
    (its graph-capture tests pass torch.randn tensors): staged through the context's
    workspace, exact; broadcast in both of Iris's forms (tensor, src) and (output, input,
    src=)."""
    m, n = 3, 7
    want_sum = sum(value(r, (m, n), torch.float32) for r in range(size))
    x = value(rank, (m, n), torch.float32).clone()  # torch's memory, not the heap
    out = torch.full((m, n), -7.0, device=DEV)
    shmem.ccl.all_reduce(out, x)
    check(torch.equal(out, want_sum), "all_reduce, plain input and output")
    sym_out = shmem.full((m, n), -7.0, dtype=torch.float32)
    shmem.ccl.all_reduce(sym_out, x, op=ReduceOp.MAX)
    check(torch.equal(sym_out, torch.stack([value(r, (m, n), torch.float32)
                                            for r in range(size)]).amax(0)),
          "all_reduce max, plain input, symmetric output")
    shmem.ccl.all_reduce(out, x, config=Config(all_reduce_variant="one_shot"))
    check(torch.equal(out, want_sum), "all_reduce one_shot (Triton), plain input")
    y = x.clone()
    shmem.ccl.all_reduce(y, y)
    check(torch.equal(y, want_sum), "all_reduce in place, plain")
    shmem.ccl.reduce_scatter(out, x)
    check(torch.equal(out, want_sum), "reduce_scatter, Iris's form")
    g = torch.full((size * m, n), -7.0, device=DEV)
    shmem.ccl.all_gather(g, x)
    check(torch.equal(g, torch.cat([value(r, (m, n), torch.float32) for r in range(size)])),
          "all_gather, plain input")
    root = size - 1
    b = x.clone()
    shmem.ccl.broadcast(b, root)  # (tensor, src), in place
    check(torch.equal(b, value(root, (m, n), torch.float32)), "broadcast(tensor, src)")
    o = torch.full((m, n), -7.0, device=DEV)
    shmem.ccl.broadcast(o, x, src=root)  # Iris's newer (output, input, src=)
    check(torch.equal(o, value(root, (m, n), torch.float32)), "broadcast(output, input, src=)")
    r_out = torch.full((m, n), -7.0, device=DEV)
    shmem.ccl.reduce(r_out, x, root=0)
    check(torch.equal(r_out, want_sum if rank == 0 else x), "reduce, plain input")
    g.fill_(-7.0)
    shmem.ccl.gather(g, x, dst=root)
    if rank == root:
        check(torch.equal(g, torch.cat([value(r, (m, n), torch.float32) for r in range(size)])),
              "gather, plain input")
    whole = torch.cat([value(r, (m, n), torch.float32, k=3) for r in range(size)])
    o.fill_(-7.0)
    shmem.ccl.scatter(o, whole.clone(), src=0)
    check(torch.equal(o, value(rank, (m, n), torch.float32, k=3)), "scatter, plain input")
    shmem.barrier()


def test_subgroups():
    """all_reduce (sum, max; in place), reduce_scatter (both forms), all_gather and all_to_all
    over torch.distributed subgroups of the Iris object's ranks (strided: even and odd ranks;
    consecutive: the first two and the rest), exact against references computed here; a call
    that takes no subgroup raises NotImplementedError, and extract_group_info says where a
    rank is. Needs torch.distributed (torchrun) and 3 ranks."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_initialized():
        return "SKIP: torch.distributed is not initialised (run under torchrun)"
    if size < 3:
        return "SKIP: a subgroup of some ranks needs 3"
    from symaddr.iris.ccl.utils import extract_group_info
    strided = [dist.new_group(list(range(k, size, 2))) for k in (0, 1)]
    consecutive = [dist.new_group([0, 1]), dist.new_group(list(range(2, size)))]
    for groups in (strided, consecutive):
        group = next(g for g in groups if rank in dist.get_process_group_ranks(g))
        ranks = dist.get_process_group_ranks(group)
        g, i = len(ranks), ranks.index(rank)
        info = extract_group_info(group, shmem)
        check(info[:3] == (i, rank, g), "extract_group_info: %s in %s" % (info, ranks))
        for dt in (torch.float32, torch.bfloat16):
            def sym(shape, fill):  # the same allocation on every rank, whatever its group
                whole = shmem.full((6 * 4 * size * size,), fill, dtype=dt)
                n = 1
                for d in shape:
                    n *= d
                return whole[:n].view(shape)
            x = sym((6, 4 * g), 0)
            x.copy_(value(rank, (6, 4 * g), dt))
            mine = [value(r, (6, 4 * g), dt).float() for r in ranks]
            out = sym((6, 4 * g), -7.0)
            shmem.ccl.all_reduce(out, x, group=group)
            check(torch.equal(out.float(), sum(mine)), "%s %s: all_reduce" % (ranks, dt))
            shmem.ccl.all_reduce(out, x, op=ReduceOp.MAX, group=group,
                                 config=Config(all_reduce_variant="two_shot"))
            check(torch.equal(out.float(), torch.stack(mine).amax(0)),
                  "%s %s: all_reduce max" % (ranks, dt))
            part = sym((24,), -7.0)
            shmem.ccl.reduce_scatter(part, x, group=group)
            check(torch.equal(part.float(), sum(mine).reshape(-1)[i * 24:(i + 1) * 24]),
                  "%s %s: reduce_scatter, torch's form" % (ranks, dt))
            gathered = sym((6 * g, 4 * g), -7.0)
            shmem.ccl.all_gather(gathered, x, group=group)
            check(torch.equal(gathered.float(), torch.cat(mine)), "%s %s: all_gather" % (
                ranks, dt))
            a2a = sym((6, 4 * g), -7.0)
            shmem.ccl.all_to_all(a2a, x, group=group)
            want = torch.cat([mine[j][:, i * 4:(i + 1) * 4] for j in range(g)], dim=1)
            check(torch.equal(a2a.float(), want), "%s %s: all_to_all" % (ranks, dt))
            shmem.ccl.all_reduce(x, x, group=group)  # in place
            check(torch.equal(x.float(), sum(mine)), "%s %s: all_reduce in place" % (ranks, dt))
        raises("broadcast over a subgroup", lambda: shmem.ccl.broadcast(x, src=0, group=group),
               NotImplementedError, ["all_reduce, reduce_scatter", "iris.iris(heap_size, "
                                     "group=pg)"])
    shmem.barrier()


def _all_reduce_here(out, x, **kw):
    shmem.ccl.all_reduce(out, x, **kw)  # the only line this helper calls from


def _all_gather_here(out, x):
    shmem.ccl.all_gather(out, x)  # the only line this helper calls from


def test_skipped_ccl_call_found():
    """Under SYMADDR_VALIDATE, ranks compare the place each called a shmem.ccl collective
    from (the caller's file and line): a rank that calls it from another line than its peers
    (it skipped one of theirs) is refused with SYMADDR_ERR_MISMATCH on every rank, naming this
    file, and out keeps its data: all_reduce (its direct path and, with op=, the general one)
    and all_gather. Before, every ccl call named one line of ccl.py, so it passed."""
    if not shmem.context.validating:
        return "SKIP: validation is off (run with SYMADDR_VALIDATE=1)"
    if size < 2:
        return "SKIP: one rank"
    x = shmem.zeros((5, 7), dtype=torch.float32)
    out = shmem.full((5, 7), -7.0, dtype=torch.float32)
    g = shmem.full((5 * size, 7), -7.0, dtype=torch.float32)
    x.copy_(value(rank, (5, 7), torch.float32))
    shmem.barrier()
    for what, here, there, written in (
            ("all_reduce", lambda: _all_reduce_here(out, x),
             lambda: shmem.ccl.all_reduce(out, x), out),
            ("all_reduce(op=MAX)", lambda: _all_reduce_here(out, x, op=ReduceOp.MAX),
             lambda: shmem.ccl.all_reduce(out, x, op=ReduceOp.MAX), out),
            ("all_gather", lambda: _all_gather_here(g, x), lambda: shmem.ccl.all_gather(g, x),
             g)):
        try:
            there() if rank == 1 else here()
            raise AssertionError("%s: the call rank 1 made from another line passed" % what)
        except SymaddrError as e:
            check(e.name == "SYMADDR_ERR_MISMATCH" and "test_iris_ccl.py:" in str(e),
                  "%s, skipped call: %s" % (what, e))
        check(bool((written == -7).all()), "%s: a refused call wrote its output" % what)
    _all_reduce_here(out, x)  # every rank, one line: exact
    check(torch.equal(out, sum(value(r, (5, 7), torch.float32) for r in range(size))),
          "after the refusal")
    shmem.barrier()


def test_refusals():
    """Bad Configs as Iris refuses them; use_gluon; a subgroup; mismatched shapes; a bad op."""
    raises("variant", lambda: Config(all_reduce_variant="tree"), ValueError, ["one_shot"])
    raises("distribution", lambda: Config(all_reduce_distribution=2), ValueError, ["striding"])
    raises("block size", lambda: Config(block_size_m=0), ValueError, ["block_size_m"])
    raises("slice", lambda: Config(all_reduce_ring_slice_n=48), ValueError, ["power of two"])
    raises("gather variant", lambda: Config(all_gather_variant="tree"), ValueError,
           ["'partitioned'"])
    raises("all_to_all variant", lambda: Config(all_to_all_variant="x"), ValueError, ["tdm"])
    x, out = shmem.zeros(8), shmem.zeros(9)
    gathered = shmem.zeros(8 * size)
    raises("tdm", lambda: shmem.ccl.all_gather(gathered, x, config=Config(
        all_gather_variant="tdm")), NotImplementedError, ["'persistent'"])
    if size > 1:  # comm_sms indivisible by the world size
        raises("partitioned", lambda: shmem.ccl.all_gather(gathered, x, config=Config(
            all_gather_variant="partitioned", comm_sms=size * 5 + 1)), ValueError,
               ["divisible"])
    raises("gluon", lambda: shmem.ccl.all_reduce(x, x, config=Config(use_gluon=True)),
           NotImplementedError, ["use_gluon=False"])
    raises("shapes", lambda: shmem.ccl.all_reduce(out, x), SymaddrError, ["input's shape"])
    raises("op", lambda: shmem.ccl.all_reduce(x, x, op="xor"), ValueError, ["ReduceOp"])
    raises("group", lambda: shmem.ccl.all_reduce(x, x, group=object()), NotImplementedError,
           ["group=pg"])
    shmem.barrier()


def test_graph_replay():
    """all_reduce, all_gather and broadcast_tensor captured in one CUDA graph (a workspace
    made before capture), replayed with new data each time: exact."""
    if DEV.type != "cuda":
        return "SKIP: CUDA graphs need the GPU (this run is on %s)" % DEV
    x = shmem.zeros(3, 37)
    out = shmem.zeros(3, 37)
    g = shmem.zeros(size * 3, 37)
    b = shmem.zeros(3, 37)
    ws = shmem.ccl.all_reduce_preamble(out, x)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    shmem.barrier()
    with torch.cuda.stream(s):
        with torch.cuda.graph(graph, stream=s):
            shmem.ccl.all_reduce(out, x, workspace=ws)
            shmem.ccl.all_gather(g, x)
            shmem.ccl.broadcast_tensor(b, x, src=size - 1)
    for k in range(20):
        x.copy_(value(rank, (3, 37), torch.float32, k))
        shmem.barrier()
        graph.replay()
        torch.cuda.synchronize()
        shmem.barrier()
        want = sum(value(r, (3, 37), torch.float32, k) for r in range(size))
        check(torch.equal(out, want), "replay %d: all_reduce" % k)
        check(torch.equal(g, torch.cat([value(r, (3, 37), torch.float32, k)
                                        for r in range(size)])), "replay %d: all_gather" % k)
        check(torch.equal(b, value(size - 1, (3, 37), torch.float32, k)),
              "replay %d: broadcast" % k)
        shmem.barrier()


for name, fn in sorted(((k, v) for k, v in list(globals().items()) if k.startswith("test_")),
                       key=lambda kv: kv[1].__code__.co_firstlineno):
    cases.run(name[5:].replace("_", " "), fn)
shmem.context.close()
code = cases.finish()
if cases.group is not None:
    import torch.distributed as dist
    dist.destroy_process_group()
sys.exit(code)
