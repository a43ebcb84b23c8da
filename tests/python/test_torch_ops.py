"""torch.ops.symaddr.*, the functional collectives and fused ops as torch custom ops: each
exact in eager mode (plain and symmetric inputs, integer-valued data); a tensor-parallel MLP
(column-parallel then row-parallel linear layers, unfused and fused, and a sequence-parallel
form with all_gather and reduce_scatter) traced by torch.compile(fullgraph=True) with no graph
break (torch._dynamo.explain) and exact against eager; on the GPU the compiled model (inductor)
captured in a CUDA graph and replayed with new data, exact. On the cpu backend the compile
uses the aot_eager backend (inductor's C++ build is the GPU run's).
    TRITON_INTERPRET=1 SYMADDR_BACKEND=cpu mpiexec -n 3 python3 tests/python/test_torch_ops.py
(or under torchrun). Prints the harness's summary."""
import os
import sys

if os.environ.get("SYMADDR_TEST_PYTHONPATH"):  # the source tree's package, before an installed one
    sys.path.insert(0, os.environ["SYMADDR_TEST_PYTHONPATH"])

import faulthandler  # noqa: E402

faulthandler.dump_traceback_later(float(os.environ.get("SYMADDR_TEST_DEADLINE", "900")),
                                  exit=True)

import torch  # noqa: E402

from mpi_cases import check, launch  # noqa: E402

_, _, cases = launch()  # mpiexec's MPI (initialised before symaddr), or torchrun's group
import symaddr  # noqa: E402
from symaddr import ops  # noqa: E402

ctx = symaddr.Context(heap_bytes=1 << 24)
rank, size = ctx.rank, ctx.size
G = ops.group_name(ctx)
DEV = torch.device("cuda", torch.cuda.current_device()) if ctx.backend != "cpu" else \
    torch.device("cpu")
S = torch.ops.symaddr
DT = torch.float32 if DEV.type == "cpu" else torch.bfloat16  # (the interpreter's bf16 dot)
FAULT = ops._interpreter_fault()  # the interpreter cannot run the GEMM kernels (test_ops)


def ints(r, shape, k=0, lo=-1, span=3):
    n = 1
    for d in shape:
        n *= d
    return ((torch.arange(n) * 7 + r * 5 + k) % span + lo).float().reshape(shape)


def test_eager_collectives():
    """all_reduce (sum, max, avg), all_reduce_, all_gather, reduce_scatter, all_to_all; plain
    inputs (staged) and symmetric ones; exact."""
    x = ints(rank, (3 * size, 5)).to(DEV)
    every = torch.stack([ints(r, (3 * size, 5)) for r in range(size)])
    check(torch.equal(S.all_reduce(x, "sum", G).cpu(), every.sum(0)), "all_reduce sum")
    check(torch.equal(S.all_reduce(x, "max", G).cpu(), every.max(0).values), "all_reduce max")
    check(torch.equal(S.all_reduce(x, "avg", G).cpu(), every.sum(0) / size), "all_reduce avg")
    sym, _ = ctx.allocate_symmetric(tuple(x.shape), torch.float32)
    sym.copy_(x)
    check(torch.equal(S.all_reduce(sym, "sum", G).cpu(), every.sum(0)) and
          torch.equal(sym.cpu(), every[rank]), "symmetric input, left as it was")
    y = x.clone()
    S.all_reduce_(y, "sum", G)
    check(torch.equal(y.cpu(), every.sum(0)), "all_reduce_ in place")
    check(torch.equal(S.all_gather(x, G).cpu(), every.reshape(-1, 5)), "all_gather")
    check(torch.equal(S.reduce_scatter(x, "sum", G).cpu(),
                      every.sum(0)[rank * 3:(rank + 1) * 3]), "reduce_scatter")
    a2a = S.all_to_all(x, G).cpu()
    want = torch.cat([every[j].reshape(size, 3, 5)[rank] for j in range(size)])
    check(torch.equal(a2a, want), "all_to_all")
    ctx.sync()


def test_eager_fused():
    """matmul_all_reduce, matmul_reduce_scatter, all_gather_matmul, all_reduce_rmsnorm."""
    if FAULT:
        return "SKIP: " + FAULT
    m, k, n = 2 * size, 16, 4 * size
    a, b = ints(rank, (m, k)).to(DEV, DT), ints(rank, (k, n), 1).to(DEV, DT)
    total = sum(ints(r, (m, k)) @ ints(r, (k, n), 1) for r in range(size))
    check(torch.equal(S.matmul_all_reduce(a, b, G).float().cpu(), total), "matmul_all_reduce")
    check(torch.equal(S.matmul_reduce_scatter(a, b, "sum", 0, G).float().cpu(),
                      total[rank * 2:(rank + 1) * 2]), "matmul_reduce_scatter")
    got = S.all_gather_matmul(a, ints(0, (k, n), 2).to(DEV, DT), G).float().cpu()
    gathered = torch.cat([ints(r, (m, k)) for r in range(size)])
    check(torch.equal(got, gathered @ ints(0, (k, n), 2)), "all_gather_matmul")
    x = ints(rank, (3, 33)).to(DEV)
    res, w = ints(9, (3, 33)).to(DEV), (0.5 + torch.arange(33) % 3).float().to(DEV)
    v = sum(ints(r, (3, 33)) for r in range(size)) + res.cpu()
    want = v / torch.sqrt((v * v).mean(1, keepdim=True) + 1e-6) * w.cpu()
    check(torch.allclose(S.all_reduce_rmsnorm(x, res, w, 1e-6, G).cpu(), want, rtol=1e-5,
                         atol=1e-6), "all_reduce_rmsnorm")
    ctx.sync()


def mlp(x, w1, w2):
    """Megatron's MLP: column-parallel w1 (no communication), row-parallel w2, all_reduce."""
    h = torch.relu(x @ w1)
    return S.all_reduce(h @ w2, "sum", G) + 1


def mlp_fused(x, w1, w2):
    return S.matmul_all_reduce(torch.relu(x @ w1), w2, G) * 2


def mlp_seq(x_shard, w1, w2):
    """Sequence-parallel: all_gather the rows, the two layers, reduce_scatter back."""
    x = S.all_gather(x_shard, G)
    h = torch.relu(x @ w1)
    return S.reduce_scatter(h @ w2, "sum", G) - 3


def model_args(k=0):
    t, hdim, f = 2 * size, 16, 8  # tokens, hidden, this rank's slice of the MLP's width
    x = ints(0, (t, hdim), k).to(DEV, DT)  # replicated
    w1 = ints(rank, (hdim, f), k + 1).to(DEV, DT)
    w2 = ints(rank, (f, hdim), k + 2).to(DEV, DT)
    return x, w1, w2


def reference(fn, k=0):
    """What fn computes, from every rank's weights on the CPU (f32, exact)."""
    x = ints(0, (2 * size, 16), k)
    parts = [torch.relu(x @ ints(r, (16, 8), k + 1)) @ ints(r, (8, 16), k + 2)
             for r in range(size)]
    total = sum(parts)
    if fn is mlp:
        return total + 1
    if fn is mlp_fused:
        return total * 2
    return total[rank * 2:(rank + 1) * 2] - 3


def backend():
    return "inductor" if DEV.type == "cuda" else "aot_eager"


def compile_models(models):
    """torch.compile(fullgraph=True) of each model: no graph break, exact against eager and
    the CPU reference."""
    torch._dynamo.reset()
    for fn in models:
        args = model_args()
        if fn is mlp_seq:
            args = (ints(rank, (2, 16)).to(DEV, DT), args[1], args[2])  # this rank's rows
        explain = torch._dynamo.explain(fn)(*args)
        check(explain.graph_break_count == 0 and explain.graph_count == 1,
              "%s: %d graphs, %d breaks (%s)" % (fn.__name__, explain.graph_count,
                                                explain.graph_break_count,
                                                explain.break_reasons[:1]))
        eager = fn(*args)
        compiled = torch.compile(fn, fullgraph=True, backend=backend())(*args)
        check(torch.equal(compiled, eager), "%s: compiled == eager" % fn.__name__)
        if fn is not mlp_seq:
            check(torch.equal(eager.float().cpu(), reference(fn)), "%s: the reference"
                  % fn.__name__)
        else:
            x = torch.cat([ints(r, (2, 16)) for r in range(size)])
            parts = [torch.relu(x @ ints(r, (16, 8), 1)) @ ints(r, (8, 16), 2)
                     for r in range(size)]
            check(torch.equal(eager.float().cpu(), sum(parts)[rank * 2:(rank + 1) * 2] - 3),
                  "mlp_seq: the reference")
    ctx.sync()


def test_compile_fullgraph():
    """The unfused and sequence-parallel MLPs under torch.compile(fullgraph=True): no graph
    break, exact against eager and the CPU reference."""
    compile_models((mlp, mlp_seq))


def test_compile_fullgraph_fused():
    """The MLP of the fused matmul_all_reduce, likewise."""
    if FAULT:
        return "SKIP: " + FAULT
    compile_models((mlp_fused,))


def test_compiled_graph_capture():
    """The compiled model (inductor) captured in a CUDA graph after an eager warm-up, replayed
    with new inputs copied in: exact against the reference each time."""
    if DEV.type != "cuda":
        return "SKIP: CUDA graphs need the GPU (this run is on the cpu backend)"
    for fn in (mlp, mlp_fused):
        compiled = torch.compile(fn, fullgraph=True, backend="inductor")
        args = [a.clone() for a in model_args()]
        compiled(*args)  # warm-up: compiles, and makes the staging buffers
        torch.cuda.synchronize()
        ctx.barrier()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.stream(s):
            with torch.cuda.graph(graph, stream=s):
                out = compiled(*args)
        for k in range(5):
            for dst, src in zip(args, model_args(k)):
                dst.copy_(src)
            torch.cuda.synchronize()
            ctx.barrier()
            graph.replay()
            torch.cuda.synchronize()
            check(torch.equal(out.float().cpu(), reference(fn, k)), "%s: replay %d"
                  % (fn.__name__, k))
            ctx.barrier()


def test_reduce_overhead():
    """torch.compile(mode="reduce-overhead") (inductor's CUDA graphs, which copy each input
    into a buffer of their own before capturing and replaying) of the MLPs, and of each
    collective op over a symmetric input: a warm-up call, the capture, replays with new
    data, each exact. Their capture failed (torch's INTERNAL ASSERT in capture_end): the
    graph's copy of a symmetric input was staged into a buffer first made inside the
    capture."""
    if DEV.type != "cuda":
        return "SKIP: CUDA graphs need the GPU (this run is on the cpu backend)"
    torch._dynamo.reset()
    for fn in (mlp, mlp_fused):
        compiled = torch.compile(fn, mode="reduce-overhead", fullgraph=True)
        for k in range(4):
            ctx.barrier()
            out = compiled(*model_args(k))
            check(torch.equal(out.float().cpu(), reference(fn, k)), "%s: call %d" % (
                fn.__name__, k))
    shape = (3 * size, 5)
    x, _ = ctx.allocate_symmetric(shape, torch.float32)
    every = [torch.stack([ints(r, shape, k) for r in range(size)]) for k in range(4)]
    for name, fn, want in (
            ("all_reduce", lambda t: S.all_reduce(t, "sum", G) * 1, lambda e: e.sum(0)),
            ("all_gather", lambda t: S.all_gather(t, G) * 1, lambda e: e.reshape(-1, 5)),
            ("reduce_scatter", lambda t: S.reduce_scatter(t, "max", G) * 1,
             lambda e: e.max(0).values[rank * 3:(rank + 1) * 3]),
            ("all_to_all", lambda t: S.all_to_all(t, G) * 1,
             lambda e: torch.cat([e[j].reshape(size, 3, 5)[rank] for j in range(size)]))):
        compiled = torch.compile(fn, mode="reduce-overhead", fullgraph=True)
        for k in range(4):
            x.copy_(ints(rank, shape, k))
            ctx.barrier()
            out = compiled(x)
            check(torch.equal(out.cpu(), want(every[k])), "%s over a symmetric input: call %d"
                  % (name, k))
    # a fused op stages a non-symmetric input in a buffer per shape: where the graph's copy
    # of a symmetric input needs one the warm-up did not make, the call is refused naming the
    # remedy (else each call is exact); marked static, the input is read where it is: exact
    res, w = ints(9, (3, 33)).to(DEV), (0.5 + torch.arange(33) % 3).float().to(DEV)
    v, _ = ctx.allocate_symmetric((3, 33), torch.float32)
    v.copy_(ints(rank, (3, 33)))
    total = sum(ints(r, (3, 33)) for r in range(size)) + res.cpu()
    want = total / torch.sqrt((total * total).mean(1, keepdim=True) + 1e-6) * w.cpu()

    def norm(t):
        return S.all_reduce_rmsnorm(t, res, w, 1e-6, G)
    compiled = torch.compile(norm, mode="reduce-overhead", fullgraph=True)
    for k in range(3):
        ctx.barrier()
        try:
            got = compiled(v)
        except symaddr.SymaddrError as e:
            check(e.name == "SYMADDR_ERR_UNSUPPORTED" and "mark_static_address" in str(e),
                  str(e))
            break
        check(torch.allclose(got.cpu(), want, rtol=1e-5, atol=1e-6),
              "all_reduce_rmsnorm over a symmetric input: call %d" % k)
    ctx.barrier()
    torch._dynamo.reset()
    torch._dynamo.mark_static_address(v, guard=True)
    compiled = torch.compile(norm, mode="reduce-overhead", fullgraph=True)
    for k in range(3):
        ctx.barrier()
        check(torch.allclose(compiled(v).cpu(), want, rtol=1e-5, atol=1e-6),
              "all_reduce_rmsnorm over a static symmetric input: call %d" % k)
    ctx.sync()
    ctx.free(v)
    ctx.free(x)


def _all_reduce_here(x):
    return S.all_reduce(x, "sum", G)  # the only line this helper calls from


def test_skipped_op_found():
    """Under SYMADDR_VALIDATE, ranks compare the place each called torch.ops.symaddr.all_reduce
    from: past torch's dispatcher and symaddr's own op, the caller's line. A rank that calls it
    from another line than its peers is refused with SYMADDR_ERR_MISMATCH on every rank naming
    this file (before, every call named one line of symaddr's ops, so it passed)."""
    if not ctx.validating:
        return "SKIP: validation is off (run with SYMADDR_VALIDATE=1)"
    if size < 2:
        return "SKIP: one rank"
    sym, _ = ctx.allocate_symmetric((3, 5), torch.float32)
    sym.copy_(ints(rank, (3, 5)).to(DEV))
    try:
        S.all_reduce(sym, "sum", G) if rank == 1 else _all_reduce_here(sym)
        raise AssertionError("the call rank 1 made from another line passed")
    except symaddr.SymaddrError as e:
        check(e.name == "SYMADDR_ERR_MISMATCH" and "test_torch_ops.py:" in str(e),
              "skipped call: %s" % e)
    got = _all_reduce_here(sym)  # every rank, one line: exact
    check(torch.equal(got.cpu(), sum(ints(r, (3, 5)) for r in range(size))), "after it")
    ctx.sync()
    ctx.free(sym)


def test_bad_group():
    """A group name of no open context is refused, saying what to pass."""
    try:
        S.all_reduce(torch.ones(3, device=DEV), "sum", "symaddr:999")
    except symaddr.SymaddrError as e:
        check("group_name(ctx)" in str(e), str(e))
        return
    raise AssertionError("a bad group passed")


for name, fn in sorted(((k, v) for k, v in list(globals().items()) if k.startswith("test_")),
                       key=lambda kv: kv[1].__code__.co_firstlineno):
    cases.run(name[5:].replace("_", " "), fn)
ctx.close()
code = cases.finish()
if cases.group is not None:
    import torch.distributed as dist
    dist.destroy_process_group()
sys.exit(code)
