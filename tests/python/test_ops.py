"""symaddr.ops and symaddr.iris.ops, the fused collective + compute ops: matmul_all_reduce,
matmul_reduce_scatter (rows and columns, sum and avg), all_gather_matmul (rows and K, with and
without A), all_reduce_rmsnorm, and Iris's four ops through shmem.ops; bf16, fp16 and f32,
heap, ipc and plain operands, odd shapes; each exact on integer-valued data against its
unfused pair (torch.matmul, then the library's collective), RMSNorm within f32's rounding.
    TRITON_INTERPRET=1 SYMADDR_BACKEND=cpu mpiexec -n 3 python3 tests/python/test_ops.py
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
import symaddr.iris as iris  # noqa: E402
from symaddr import SymaddrError, ops  # noqa: E402
from symaddr.triton import fused  # noqa: E402

shmem = iris.iris(1 << 24)
ctx = shmem.context
rank, size = ctx.rank, ctx.size
DEV = shmem.get_device()
# Where Triton's interpreter cannot run the GEMM kernels (NumPy 2.4, or its emulation in
# .ci/run: triton-lang/triton#9171) symaddr.ops refuses them (SYMADDR_ERR_UNSUPPORTED) and the
# GEMM cases SKIP saying so; bf16 where this Triton multiplies it right (compiled; not Triton
# 3.6's interpreter, which symaddr.ops refuses: test_bf16_refused)
FAULT = ops._interpreter_fault()
BF16 = not FAULT and ops._interpreted_dot_ok(torch.bfloat16)
DTYPES = (torch.float32, torch.bfloat16, torch.float16) if BF16 else (torch.float32,
                                                                      torch.float16)


def ints(r, shape, k=0):
    """Rank r's operand: -1, 0 and 1 (products and their sums stay exact in every dtype)."""
    n = shape[0] * shape[1]
    return ((torch.arange(n) * 7 + r * 5 + k) % 3 - 1).float().reshape(shape)


def ref_mm(r, m, k, n):
    """Rank r's A @ B in f32 on the CPU (exact: small integers)."""
    return ints(r, (m, k)) @ ints(r, (k, n), 1)


def gemm(fn):
    """A GEMM case: SKIP where the interpreter cannot run the GEMM kernels, saying why."""
    def case():
        return "SKIP: " + FAULT if FAULT else fn()
    case.__doc__ = fn.__doc__
    case.__code__ = case.__code__.replace(co_firstlineno=fn.__code__.co_firstlineno)
    return case


def on(t, dtype, provider=None):
    if provider is None:
        return t.to(DEV, dtype)
    s, _ = ctx.allocate_symmetric(tuple(t.shape), dtype, provider=provider)
    s.copy_(t)
    return s


@gemm
def test_matmul_all_reduce():
    """Fused == torch.matmul then ctx.allreduce == the exact sum, each dtype."""
    m, k, n = 7, 24, 40
    want = sum(ref_mm(r, m, k, n) for r in range(size))
    for dt in DTYPES:
        a, b = on(ints(rank, (m, k)), dt), on(ints(rank, (k, n), 1), dt)
        got = ops.matmul_all_reduce(ctx, a, b)
        unf = shmem.zeros(m, n, dtype=dt)
        unf.copy_(torch.matmul(a.float(), b.float()).to(dt))
        ctx.allreduce(unf)
        check(torch.equal(got.cpu().float(), want), "%s: fused exact" % dt)
        check(torch.equal(unf.cpu().float(), want), "%s: unfused pair exact" % dt)
        out = torch.full((m, n), -5.0, dtype=dt, device=DEV)
        check(ops.matmul_all_reduce(ctx, a, b, out=out) is out and
              torch.equal(out.cpu().float(), want), "%s: into out" % dt)
    ctx.sync()


@gemm
def test_matmul_reduce_scatter():
    """Rows and columns, sum and avg, against the exact sum's part."""
    m, k, n = 3 * size, 24, 8 * size
    total = sum(ref_mm(r, m, k, n) for r in range(size))
    for dt in DTYPES:
        a, b = on(ints(rank, (m, k)), dt), on(ints(rank, (k, n), 1), dt)
        rows = ops.matmul_reduce_scatter(ctx, a, b, "sum", scatter_dim=0)
        check(torch.equal(rows.cpu().float(), total[rank * 3:(rank + 1) * 3]), "%s rows" % dt)
        cols = ops.matmul_reduce_scatter(ctx, a, b, "sum", scatter_dim=1)
        check(torch.equal(cols.cpu().float(), total[:, rank * 8:(rank + 1) * 8]),
              "%s columns" % dt)
    a, b = on(ints(rank, (m, k)), torch.float32), on(ints(rank, (k, n), 1), torch.float32)
    avg = ops.matmul_reduce_scatter(ctx, a, b, "avg", scatter_dim=0)
    check(torch.equal(avg.cpu(), total[rank * 3:(rank + 1) * 3] / size), "avg")
    unf = shmem.zeros(m // size, n)
    ctx.reduce_scatter(on(torch.matmul(a, b).cpu(), torch.float32, "heap"), unf)
    check(torch.equal(unf.cpu(), total[rank * 3:(rank + 1) * 3]), "the unfused pair")
    ctx.sync()


@gemm
def test_all_gather_matmul():
    """Rows (torch's default) and K (Iris's), A_shard heap, ipc and plain (staged), with A."""
    m, k, n = 5, 24, 40
    for dt in DTYPES:
        for provider in ("heap", "ipc", None):
            a = on(ints(rank, (m, k)), dt, provider)
            b = on(ints(0, (k, n), 1), dt)
            full, (out,) = ops.all_gather_matmul(ctx, a, [b], gather_dim=0)
            gathered = torch.cat([ints(r, (m, k)) for r in range(size)])
            check(torch.equal(out.cpu().float(), gathered @ ints(0, (k, n), 1)),
                  "%s %s rows: out" % (dt, provider))
            check(torch.equal(full.cpu().float(), gathered), "%s %s rows: A" % (dt, provider))
            bk = on(ints(0, (size * k, n), 2), dt)
            none, (outk,) = ops.all_gather_matmul(ctx, a, [bk], gather_dim=1, return_A=False)
            side = torch.cat([ints(r, (m, k)) for r in range(size)], dim=1)
            check(none is None and torch.equal(outk.cpu().float(), side @ ints(0, (size * k, n), 2)),
                  "%s %s K" % (dt, provider))
        unf = shmem.zeros(size * m, k, dtype=dt)
        ctx.allgather(on(ints(rank, (m, k)), dt, "heap"), unf)
        check(torch.equal(torch.matmul(unf.float(), b.float()).cpu(),
                          gathered @ ints(0, (k, n), 1)), "%s: the unfused pair" % dt)
    ctx.sync()


def test_all_reduce_rmsnorm():
    """Fused == the unfused pair (ctx.allreduce, then the same RMSNorm as a kernel of its own)
    and a torch reference within f32's rounding; x heap and plain."""
    rows, h, eps = 5, 67, 1e-6
    xs = [((torch.arange(rows * h) * 7 + r * 13) % 23 - 11).float().reshape(rows, h) / 8
          for r in range(size)]
    res = ((torch.arange(rows * h) % 19 - 9).float() / 4).reshape(rows, h)
    w = 0.5 + (torch.arange(h) % 5).float() / 8
    v = sum(xs) + res
    want = v / torch.sqrt((v * v).mean(1, keepdim=True) + eps) * w
    for provider in ("heap", None):
        x = on(xs[rank], torch.float32, provider)
        y = ops.all_reduce_rmsnorm(ctx, x, res.to(DEV), w.to(DEV), eps)
        summed = on(xs[rank], torch.float32, "heap")
        ctx.allreduce(summed)
        unf = torch.empty(rows, h, device=DEV)
        import triton
        fused.rmsnorm_kernel[(rows,)](summed, res.to(DEV), w.to(DEV), unf, h, eps,
                                      BLOCK_H=triton.next_power_of_2(h))
        ctx.sync()
        check(torch.allclose(y.cpu(), want, rtol=1e-5, atol=1e-6), "%s: the reference"
              % provider)
        check(torch.allclose(y, unf, rtol=1e-6, atol=1e-6), "%s: the unfused pair" % provider)


@gemm
def test_iris_ops():
    """shmem.ops with Iris's arguments: output first, bias once, K-gathered all_gather_matmul,
    matmul_all_gather along M, matmul_reduce_scatter along N."""
    m, k, n = 6, 24, 8 * size
    dt = DTYPES[-1]
    a, b = on(ints(rank, (m, k)), dt, "heap"), on(ints(rank, (k, n), 1), dt)
    bias = (torch.arange(n) % 4).to(DEV, dt)
    total = sum(ref_mm(r, m, k, n) for r in range(size))
    out = shmem.zeros(m, n, dtype=dt)
    shmem.ops.matmul_all_reduce(out, a, b, bias=bias)
    check(torch.equal(out.cpu().float(), total + bias.cpu().float()), "matmul_all_reduce")
    rs = shmem.zeros(m, n // size, dtype=dt)
    shmem.ops.matmul_reduce_scatter(rs, a, b)
    check(torch.equal(rs.cpu().float(), total[:, rank * 8:(rank + 1) * 8]),
          "matmul_reduce_scatter: this rank's columns")
    bk = on(ints(0, (size * k, n), 2), dt)
    ag = shmem.zeros(m, n, dtype=dt)
    shmem.ops.all_gather_matmul(ag, a, bk)
    side = torch.cat([ints(r, (m, k)) for r in range(size)], dim=1)
    check(torch.equal(ag.cpu().float(), side @ ints(0, (size * k, n), 2)), "all_gather_matmul")
    mg = shmem.zeros(size * m, n, dtype=dt)
    shmem.ops.matmul_all_gather(mg, a, b)
    check(torch.equal(mg.cpu().float(), torch.cat([ref_mm(r, m, k, n) for r in range(size)])),
          "matmul_all_gather")
    shmem.barrier()


def test_bf16_refused():
    """Where tl.dot of bf16 is wrong (Triton 3.6's interpreter), bf16 operands are refused
    with SYMADDR_ERR_UNSUPPORTED, never multiplied into a wrong result."""
    if BF16:
        return "SKIP: bf16 multiplies right here (tested in every case above)"
    if FAULT:
        return "SKIP: " + FAULT
    a = on(ints(rank, (4, 8)), torch.bfloat16)
    try:
        ops.matmul_all_reduce(ctx, a, a.t().contiguous())
    except SymaddrError as e:
        check(e.name == "SYMADDR_ERR_UNSUPPORTED" and "fp16 or f32" in str(e), str(e))
        return
    raise AssertionError("bf16 under the interpreter passed")


def test_refusals():
    """Shapes, dtypes and dimensions each op refuses, before any launch."""
    a = on(ints(rank, (4, 8)), torch.float32)

    def refused(what, fn, words):
        try:
            fn()
        except SymaddrError as e:
            check(e.name == "SYMADDR_ERR_INVALID_ARG" and all(w in str(e) for w in words),
                  "%s: %s" % (what, e))
            return
        raise AssertionError("%s passed" % what)
    refused("inner dimensions", lambda: ops.matmul_all_reduce(ctx, a, a), ["b's rows"])
    refused("dtypes", lambda: ops.matmul_all_reduce(ctx, a, a.t().contiguous().half()),
            ["torch.float16"])
    refused("int", lambda: ops.matmul_all_reduce(ctx, a.int(), a.t().int()), ["bf16"])
    refused("1-D", lambda: ops.matmul_all_reduce(ctx, a.reshape(-1), a), ["2-D"])
    refused("split", lambda: ops.matmul_reduce_scatter(ctx, a, on(ints(0, (8, 3 * size + 1)),
                                                                   torch.float32),
                                                       scatter_dim=1), ["equal parts"])
    refused("reduce_op", lambda: ops.matmul_reduce_scatter(ctx, a, a.t(), "max"), ["avg"])
    refused("gather_dim", lambda: ops.all_gather_matmul(ctx, a, [a.t()], gather_dim=2),
            ["gather_dim"])
    refused("Bs rows", lambda: ops.all_gather_matmul(ctx, a, [a]), ["columns"])
    ctx.sync()


for name, fn in sorted(((k, v) for k, v in list(globals().items()) if k.startswith("test_")),
                       key=lambda kv: kv[1].__code__.co_firstlineno):
    cases.run(name[5:].replace("_", " "), fn)
shmem.context.close()
code = cases.finish()
if cases.group is not None:
    import torch.distributed as dist
    dist.destroy_process_group()
sys.exit(code)
