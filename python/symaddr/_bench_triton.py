# SPDX-License-Identifier: MIT
"""symaddr.bench's benchmarks of the Triton collectives (`python -m symaddr.bench triton`), of
the fused kernels (`python -m symaddr.bench fused`) and of symaddr.iris's ccl and the torch
custom ops (`python -m symaddr.bench ccl`), each against its reference in the same run; the
timing helpers are bench's."""
import symaddr
from symaddr.bench import _c_call, _graphed_each, _load_example, _sizes, _timed_each


def _triton(ctx, a):
    """symaddr.triton.collectives against the C collectives, same buffers, eager and graphed."""
    import torch
    from symaddr.triton import collectives as tc
    dtype = getattr(torch, a.dtype)
    size, rank = ctx.size, ctx.rank
    esize = torch.empty((), dtype=dtype).element_size()
    if rank == 0:
        print("# symaddr.bench triton: %d ranks, backend %s, %s, best of %d rounds x %d calls "
              "(us a call, the slowest rank's); C: symaddr_allreduce/symaddr_allgather; "
              "tri1/triL/tri2: the Triton one-shot (barriers), Lamport one-shot (up to %d "
              "KiB here) and two-shot allreduce, triag: the Triton all-gather (one kernel each, "
              "synchronised on the device); g: replayed from a CUDA graph; bw2, bwag: the "
              "two-shot's and the all-gather's bus bandwidth over the C call's (graph-replayed)"
              % (size, ctx.backend, a.dtype, a.rounds, a.iters,
                 tc._lamport_bytes(size, esize) // 1024))
        print("# %9s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %5s %5s %6s" % (
            "bytes", "C ar", "tri1", "triL", "tri2", "gC ar", "gtri1", "gtriL", "gtri2",
            "C ag", "triag", "gC ag", "gtriag", "bw2", "bwag", "wrong"))
    for nbytes in _sizes(max(8, esize * size, a.min_bytes or 0), a.max_bytes, 4):
        n = nbytes // esize // size * size  # two-shot and all-gather: a multiple of size
        x, _ = ctx.allocate_symmetric((n,), dtype)
        ref, _ = ctx.allocate_symmetric((n,), dtype)
        two, _ = ctx.allocate_symmetric((n,), dtype)
        gref, _ = ctx.allocate_symmetric((n * size,), dtype)
        one = torch.empty(n, dtype=dtype, device="cuda")
        lam = torch.empty(n, dtype=dtype, device="cuda")
        lamport = tc._lamport_fits(x, n, size)
        gout = torch.empty(n * size, dtype=dtype, device="cuda")
        # small integers: every sum is exact in bf16 and f16 too
        x.copy_((torch.arange(n, device="cuda") % 7 + rank).to(dtype))
        c_ar = _c_call(ctx, "allreduce", x, ref, n, dtype)
        c_ag = _c_call(ctx, "allgather", x, gref, n, dtype)
        fns = [c_ar, lambda: tc.allreduce(ctx, x, one, algo="oneshot"),
               lambda: tc.allreduce(ctx, x, lam, algo="lamport"),
               lambda: tc.allreduce(ctx, x, two, algo="twoshot")]
        if not lamport:
            fns[2] = None
        timed = [f for f in fns if f is not None]

        def spread(values):  # None where a call was not timed
            values = iter(values)
            return [None if f is None else next(values) for f in fns]
        t = spread(_timed_each(ctx, timed, a.iters, a.rounds))
        g = spread(_graphed_each(ctx, timed, a.iters, a.rounds))
        ag = [c_ag, lambda: tc.allgather(ctx, x, gout)]
        t_ag = _timed_each(ctx, ag, a.iters, a.rounds)
        g_ag = _graphed_each(ctx, ag, a.iters, a.rounds)
        torch.cuda.synchronize()
        ctx.barrier()
        want = (torch.arange(n, device="cuda") % 7 * size + size * (size - 1) // 2).to(dtype)
        gwant = torch.cat([(torch.arange(n, device="cuda") % 7 + r).to(dtype)
                           for r in range(size)])
        if not lamport:
            lam.copy_(want)
        wrong = sum(int((o != want).sum()) for o in (ref, one, lam, two))
        wrong += sum(int((o != gwant).sum()) for o in (gref, gout))
        from mpi4py import MPI
        wrong = MPI.COMM_WORLD.allreduce(wrong)
        failed = _failure(ctx)
        if rank == 0:
            print("  %9d %s %5.2f %5.2f %6d%s" % (n * esize, " ".join(
                "%8s" % "-" if v is None else "%8.2f" % (v * 1e6) for v in t + g + t_ag + g_ag),
                g[0] / g[3], g_ag[0] / g_ag[1], wrong,
                failed and "  (a kernel failed: %s)" % failed), flush=True)
        ctx.barrier()
        for b in (gref, two, ref, x):
            ctx.free(b)


def _fused(ctx, a):
    """The example's fused GEMM + allreduce and all-gather + GEMM against their unfused pairs
    (the example's matmul kernel, then the Triton collective) and against torch (torch.mm,
    then the host collective, or the host collective, then torch.mm), eager and
    graph-replayed."""
    import torch
    import triton
    from mpi4py import MPI
    from symaddr.triton import collectives as tc
    from symaddr.triton.team import team_programs
    ex = _load_example(a.example, "triton_fused.py")
    size, rank = ctx.size, ctx.rank
    team = ctx.team()
    bf16 = torch.bfloat16
    if rank == 0:
        print("# symaddr.bench fused: %d ranks, backend %s, bf16 in, best of %d rounds x %d "
              "calls (us a call, the slowest rank's); gemm+ar: each rank multiplies its K / %d "
              "slice, the tiles reduced across ranks; ag+gemm: M rows a rank gathered, times "
              "this rank's N / %d columns. fused and unfused (the example's matmul kernel, then "
              "symaddr.triton.collectives): f32 accumulation and out, exact; torch: torch.mm "
              "and ctx.allreduce / ctx.allgather, bf16 out, checked within bf16's rounding "
              "(2^-8 of the summed magnitudes, once a rank); g: graph-replayed; x: the time "
              "over the fused kernel's"
              % (size, ctx.backend, a.rounds, a.iters, size, size))
        print("# %-8s %4s %5s %-18s %9s %9s %9s %9s %9s %9s %7s %7s  %s" % (
            "kernel", "M", "N=K", "BM,BN,BK,warps", "fused", "unfused", "torch", "g fused",
            "g unfused", "g torch", "g x unf", "g x tch", "wrong f/u/t (eager, graph)"))

    def ints(shape, seed):  # integer-valued: every product and sum exact in f32
        g = torch.Generator(device="cuda").manual_seed(seed)
        return torch.randint(-2, 3, shape, generator=g, device="cuda").to(bf16)

    def fused_launch(rows, n, bm):  # a fused GEMM's grid (resident at once) and keywords
        cfg = ex.gemm_config(rows, n, team_programs(ctx, triton.cdiv(rows, bm)
                                                    * triton.cdiv(n, 32)))
        return (team_programs(ctx, triton.cdiv(rows, cfg["BM"]) * triton.cdiv(n, cfg["BN"])),
                ), cfg

    for nk in a.nk:
        for m in a.m:
            bm, bn, bk = max(16, min(64, triton.next_power_of_2(m))), 64, 64  # unfused
            # GEMM + allreduce: a (m x K / size) @ b (K / size x N), summed over ranks
            kl = nk // size
            am, bm_ = ints((m, kl), 11 + rank), ints((kl, nk), 23 + rank)
            partial, pmap = ctx.allocate_symmetric((m * nk,), torch.float32)
            tpart, _ = ctx.allocate_symmetric((m * nk,), bf16)
            out = torch.empty(m * nk, dtype=torch.float32, device="cuda")
            tout, _ = ctx.allocate_symmetric((m * nk,), bf16)  # the C call's fastest form
            grid = (triton.cdiv(m, bm) * triton.cdiv(nk, bn),)
            fgrid, cfg = fused_launch(m, nk, bm)

            def fused_ar():
                ex.gemm_allreduce_kernel[fgrid](team, am, bm_, partial, pmap.peer_bases, out, m,
                                               nk, kl, N_RANKS=size, **cfg)

            unf = torch.empty(m * nk, dtype=torch.float32, device="cuda")

            def unfused_ar():
                ex.matmul_kernel[grid](am, bm_, partial, m, nk, kl, BM=bm, BN=bn, BK=bk)
                tc.allreduce(ctx, partial, unf)

            def torch_ar():
                torch.mm(am, bm_, out=tpart.view(m, nk))
                ctx.allreduce(tpart, tout)

            parts = [(ints((m, kl), 11 + r).float() @ ints((kl, nk), 23 + r).float()).flatten()
                     for r in range(size)]
            _fused_row(ctx, a, "gemm+ar", m, nk, cfg, (fused_ar, unfused_ar, torch_ar),
                       (out, unf, tout), sum(parts), sum(p.abs() for p in parts) * size / 256)
            for buf in (tout, tpart, partial):
                ctx.free(buf)
            # all-gather + GEMM: every rank's a (m x K) @ this rank's b (K x N / size)
            nl = nk // size
            abuf, amap = ctx.allocate_symmetric((m * nk,), bf16)
            abuf.copy_(ints((m * nk,), 31 + rank))
            b = ints((nk, nl), 41 + rank)
            aout = torch.empty(size * m * nl, dtype=torch.float32, device="cuda")
            gathered = torch.empty(size * m * nk, dtype=bf16, device="cuda")
            tgath, _ = ctx.allocate_symmetric((size * m * nk,), bf16)
            uout = torch.empty(size * m * nl, dtype=torch.float32, device="cuda")
            tout = torch.empty((size * m, nl), dtype=bf16, device="cuda")
            ctx.barrier()
            grid, cfg = fused_launch(size * m, nl, bm)
            ugrid = (triton.cdiv(size * m, bm) * triton.cdiv(nl, bn),)

            def fused_ag():
                ex.allgather_gemm_kernel[grid](team, abuf, amap.peer_bases, b, aout, m, nl, nk,
                                               N_RANKS=size, **cfg)

            def unfused_ag():
                tc.allgather(ctx, abuf, gathered)
                ex.matmul_kernel[ugrid](gathered, b, uout, size * m, nl, nk, BM=bm, BN=bn,
                                        BK=bk)

            def torch_ag():
                ctx.allgather(abuf, tgath)
                torch.mm(tgath.view(size * m, nk), b, out=tout)

            want = (torch.cat([ints((m * nk,), 31 + r) for r in range(size)]).view(
                size * m, nk).float() @ b.float()).flatten()
            _fused_row(ctx, a, "ag+gemm", m, nk, cfg, (fused_ag, unfused_ag, torch_ag),
                       (aout, uout, tout.view(-1)), want, want.abs() / 256)
            ctx.barrier()
            ctx.free(tgath)
            ctx.free(abuf)
    MPI.COMM_WORLD.Barrier()


def _fused_row(ctx, a, name, m, nk, cfg, fns, outs, want, bound):
    """One row of the fused benchmark: fns (fused, unfused, torch) timed eager and replayed;
    outs their results, checked against want after each (exact; torch's within bound, bf16's
    rounding) and counted apart."""
    import torch
    from mpi4py import MPI

    def wrong():  # elements off, per output, summed over the ranks
        torch.cuda.synchronize()
        w = [int((o != want).sum()) for o in outs[:2]]
        w.append(int(((outs[2].float() - want).abs() > bound).sum()))
        return [MPI.COMM_WORLD.allreduce(v) for v in w]
    t = _timed_each(ctx, fns, a.iters, a.rounds)
    w_eager = wrong()
    for o in outs:
        o.fill_(-1)  # so that the replays must write them again
    g = _graphed_each(ctx, fns, a.iters, a.rounds)
    w_graph = wrong()
    failed = _failure(ctx)
    if ctx.rank == 0:
        tiles = "%d,%d,%d,%d" % (cfg["BM"], cfg["BN"], cfg["BK"], cfg["num_warps"])
        print("  %-8s %4d %5d %-18s %s %7.3f %7.3f  %s %s%s" % (
            name, m, nk, tiles, " ".join("%9.2f" % (v * 1e6) for v in t + g), g[1] / g[0],
            g[2] / g[0], "/".join(map(str, w_eager)), "/".join(map(str, w_graph)),
            failed and "  (a kernel failed: %s)" % failed), flush=True)


def _failure(ctx):
    """What ctx.sync() raises ("" when nothing): a team kernel that failed on a GPU (a
    timeout, say) is told at the next sync, and every later team kernel fails at once."""
    import symaddr
    try:
        ctx.sync()
    except symaddr.SymaddrError as e:
        return e.name
    return ""


def _launch(ctx, a):
    """Host time a call (µs, the slowest rank's, best of the rounds) of a small Triton
    collective and of its launch alone: symaddr.triton.collectives' Lamport allreduce (the kept
    kernel started directly), the same kernel launched through Triton's JIT (its binder and
    cache lookup every call), the kept CompiledKernel alone (through Triton's runner, and its
    launcher called directly as the host function does where no launch hook is set),
    Context.allreduce (the C call) on the same buffers (out is plain memory, which the C call
    stages through symmetric memory), and the one-shot allreduce and all-gather host
    functions."""
    import time

    import torch
    from mpi4py import MPI
    from symaddr.triton import collectives as tc
    n = 256  # 1 KiB of f32: one program
    x, _ = ctx.allocate_symmetric((n,), torch.float32)
    x.fill_(ctx.rank)
    out = torch.empty(n, device="cuda")
    gathered = torch.empty(n * ctx.size, device="cuda")
    team = ctx.team()
    tc.allreduce(ctx, x, out, algo="lamport")  # compiles and keeps the kernel, and its plan
    # the arguments the host function passes, from the plan it keeps (not a copy of them that
    # the kernel's signature could leave behind)
    grid, rounds, ident, tail, warps = ctx._calls[(n, x.dtype, "sum", "lamport")]
    args = (team, x, out, n, rounds, ident) + tail
    grid3 = grid + (1,) * (3 - len(grid))
    kept = [k for k in ctx._plans.values()]
    if len(kept) != 1:
        raise SystemExit("symaddr.bench launch: %d kept kernels, want 1" % len(kept))
    device = torch.cuda.current_device()
    calls = [("symaddr.triton.collectives.allreduce (lamport)",
              lambda: tc.allreduce(ctx, x, out, algo="lamport")),
             ("its kernel through Triton's JIT",
              lambda: tc._lamport_kernel[grid](*args, num_warps=warps)),
             ("its kept kernel: CompiledKernel[grid]", lambda: kept[0][grid3](
                 *args, stream=torch._C._cuda_getCurrentRawStream(device))),
             ("its kept kernel's launcher (Triton 3.6's run)", lambda: kept[0].run(
                 *grid3, torch._C._cuda_getCurrentRawStream(device), kept[0].function,
                 kept[0].packed_metadata, None, None, None, *args)),
             ("Context.allreduce (the C call)", lambda: ctx.allreduce(x, out)),
             # the barrier kernels' host functions look up x's map and table each call
             ("symaddr.triton.collectives.allreduce (oneshot)",
              lambda: tc.allreduce(ctx, x, out, algo="oneshot")),
             ("symaddr.triton.collectives.allgather", lambda: tc.allgather(ctx, x, gathered))]
    if not tc._HOOKS:  # another Triton's launcher may take other arguments
        calls = [c for c in calls if "run)" not in c[0]]
    best = [float("inf")] * len(calls)
    for _ in range(a.rounds):
        for i, (_, call) in enumerate(calls):  # in turn, so a slower spell falls on all
            torch.cuda.synchronize()
            ctx.barrier()
            start = time.perf_counter()
            for _ in range(a.iters):
                call()
            best[i] = min(best[i], (time.perf_counter() - start) / a.iters)
            torch.cuda.synchronize()
    best = [MPI.COMM_WORLD.allreduce(b, op=MPI.MAX) for b in best]
    torch.cuda.synchronize()
    ctx.barrier()
    want = torch.full((n,), float(ctx.size * (ctx.size - 1) // 2), device="cuda")
    every = torch.arange(ctx.size, device="cuda", dtype=torch.float32).repeat_interleave(n)
    wrong = MPI.COMM_WORLD.allreduce(int((out != want).sum()) + int((gathered != every).sum()))
    if ctx.rank == 0:
        print("# symaddr.bench launch: %d ranks, backend %s, 1 KiB f32, host us a call (the "
              "slowest rank's), best of %d rounds x %d calls" % (ctx.size, ctx.backend,
                                                                 a.rounds, a.iters))
        for (name, _), b in zip(calls, best):
            print("  %-48s %8.2f" % (name, b * 1e6))
        print("  wrong elements after the last call: %d" % wrong)
    ctx.free(x)


def _ccl(ctx, a):
    """symaddr.iris's shmem.ccl.all_reduce (Iris's call: output, input, async_op=True as a
    serving engine calls it in a loop) against ctx.allreduce and the C call on the same
    buffers, eager and graph-replayed; its two_shot variant against the Triton two-shot it
    runs; and torch.ops.symaddr.all_reduce eager against the same op under torch.compile."""
    import torch
    from symaddr import ops
    from symaddr.iris.ccl import CCL, Config
    from symaddr.triton import collectives as tc

    class Host:  # what CCL reads of an Iris object, over this context
        context = ctx

        @staticmethod
        def is_symmetric(t):
            try:
                ctx.get_symmetric_address_map(t)
                return True
            except symaddr.SymaddrError:
                return False
    ccl = CCL(Host())
    two = Config(all_reduce_variant="two_shot")
    group = ops.group_name(ctx)
    dtype = getattr(torch, a.dtype)
    size = torch.finfo(dtype).bits // 8

    def op(y):
        return torch.ops.symaddr.all_reduce(y, "sum", group)
    compiled = torch.compile(op, fullgraph=True, dynamic=True)  # once for every size
    # the same under inductor's CUDA graphs (mode="reduce-overhead"): a small op's way to shed
    # torch.compile's own per-call host work (guards, wrappers)
    replayed = torch.compile(op, mode="reduce-overhead", fullgraph=True, dynamic=True)
    if ctx.rank == 0:
        print("# symaddr.bench ccl: %d ranks, backend %s, %s, best of %d rounds x %d calls "
              "(us a call, the slowest rank's); C: symaddr_allreduce called directly; ctx: "
              "Context.allreduce; ccl: shmem.ccl.all_reduce(out, x, async_op=True); ccl2: "
              "Config(all_reduce_variant='two_shot'), tri2: the Triton two-shot it runs; op: "
              "torch.ops.symaddr.all_reduce eager, comp: under torch.compile, comp g: "
              "torch.compile(mode='reduce-overhead'); g: graph-replayed"
              % (ctx.size, ctx.backend, a.dtype, a.rounds, a.iters))
        print("# %9s %8s %8s %8s %7s %8s %8s %7s %8s %8s %8s %8s %7s %8s %7s %5s" % (
            "bytes", "C", "ctx", "ccl", "ccl/ctx", "ctx g", "ccl g", "g ratio", "ccl2",
            "tri2", "op", "comp", "comp/op", "comp g", "cg/op", "wrong"))
    for nbytes in _sizes(max(8, size * ctx.size), a.max_bytes, 8):
        n = nbytes // size
        x, _ = ctx.allocate_symmetric((n,), dtype)
        out, _ = ctx.allocate_symmetric((n,), dtype)
        t, _ = ctx.allocate_symmetric((n,), dtype)  # the two-shot's in-place buffer
        x.fill_(ctx.rank + 1)
        c_call = _c_call(ctx, "allreduce", x, out, n, dtype)

        def ctx_call():
            ctx.allreduce(x, out)

        def ccl_call():
            ccl.all_reduce(out, x, async_op=True)

        def ccl2_call():
            ccl.all_reduce(t, t, config=two, async_op=True)

        def tri2_call():
            tc.allreduce(ctx, t, t, algo="twoshot")

        def op_call():
            return op(x)

        def comp_call():
            return compiled(x)

        def replayed_call():
            return replayed(x)
        ts = _timed_each(ctx, [c_call, ctx_call, ccl_call, ccl2_call, tri2_call, op_call,
                               comp_call, replayed_call], a.iters, a.rounds)
        g_ctx, g_ccl = _graphed_each(ctx, [ctx_call, ccl_call], a.iters, a.rounds)
        torch.cuda.synchronize()
        ccl_call()
        torch.cuda.synchronize()
        want = ctx.size * (ctx.size + 1) / 2
        wrong = (int((out.float() != want).sum()) + int((op_call().float() != want).sum()) +
                 int((replayed_call().float() != want).sum()))
        if ctx.rank == 0:
            us = [v * 1e6 for v in ts]
            print("  %9d %8.2f %8.2f %8.2f %7.3f %8.2f %8.2f %7.3f %8.2f %8.2f %8.2f %8.2f "
                  "%7.3f %8.2f %7.3f %5d" % (
                      nbytes, us[0], us[1], us[2], us[2] / us[1], g_ctx * 1e6, g_ccl * 1e6,
                      g_ccl / g_ctx, us[3], us[4], us[5], us[6], us[6] / us[5], us[7],
                      us[7] / us[5], wrong))
        ctx.barrier()
        for b in (t, out, x):
            ctx.free(b)
