# SPDX-License-Identifier: MIT
"""Benchmarks of the Python package, each against its reference in the same run. Under MPI:

    mpiexec -n 8 python -m symaddr.bench alloc [--iters 200] [--rounds 5] [--bytes 4096]
                                               [--held N]
        allocate_symmetric + free from Python against symaddr_symmetric_alloc + _free called
        directly through ctypes, alternately in rounds (goal: at most 1.5x the C calls + 20 us);
        --held: with N views of freed allocations kept all along
    mpiexec -n 2 python -m symaddr.bench put [--example FILE]
        the seed's Triton put_kernel (symaddr.triton.p0, or FILE's) against symaddr_put
        (Context.put), same buffers, 64 MiB to 1 GiB (GPU backends, torch)
    mpiexec -n 8 python -m symaddr.bench allreduce
        Context.allreduce against symaddr_allreduce called directly, eager and replayed from a
        CUDA graph (Python's share of a host collective), and the Triton one-shot
        (symaddr.triton.collectives), f32, 8 B to 1 MiB (GPU backends, torch); on the cpu
        backend, NumPy arrays, eager only (no graph, no Triton column); --c-json FILE adds
        the C binary's times (symaddr-bench allreduce --json FILE, run just before) beside
    mpiexec -n 8 python -m symaddr.bench triton [--dtype bfloat16]
        symaddr.triton.collectives' one-shot and two-shot allreduce and all-gather against
        symaddr_allreduce and symaddr_allgather (the C calls, same buffers), eager and replayed
        from a CUDA graph, 8 B to 1 MiB (GPU backends, torch)
    mpiexec -n 8 python -m symaddr.bench fused [--example examples/triton_fused.py]
        the example's fused GEMM + allreduce and all-gather + GEMM against their unfused pairs
        (the GEMM, then the Triton collective) and against torch.mm with the host collective,
        bf16 with f32 accumulation, M = 1 to 128 tokens, N = K = 4096 and 8192, eager and
        graph-replayed; exact (integer-valued data; torch's bf16 out within its rounding), and
        each row ends with ctx.sync(), which reports a failed team kernel
    mpiexec -n 2 python -m symaddr.bench launch
        host time a call of a small Triton collective (a kept compiled kernel started
        directly) against the same kernel launched through Triton's JIT, and the C call
    mpiexec -n 8 python -m symaddr.bench ccl [--dtype bfloat16]
        symaddr.iris's shmem.ccl.all_reduce against Context.allreduce and the C call, eager and
        graph-replayed, its two_shot variant against the Triton two-shot, and
        torch.ops.symaddr.all_reduce eager against torch.compile, 8 B to 64 MiB (GPU, torch)

alloc and allreduce run on every backend; put, triton, fused, launch and ccl need a GPU
backend and torch. Rank 0 prints one table per benchmark: the best round of each, and their
ratio."""
import argparse
import ctypes
import importlib.util
import time

import symaddr


def _alloc(ctx, a):
    import numpy as np
    n = a.bytes // 4
    dtype = np.float32
    if ctx.backend != "cpu":
        import torch
        dtype = torch.float32
    t, _ = ctx.allocate_symmetric((n,), dtype, provider=a.provider)  # a provider refused here
    ctx.free(t)
    lib, kind = ctx._lib, ctx._lib.abi["provider"][a.provider]
    prov = ctypes.c_void_p()
    ctx._check(lib.symaddr_provider_get(ctx._h, kind, ctypes.byref(prov)))
    ptr, m = ctypes.c_void_p(), ctypes.c_void_p()

    def c_pairs():
        for _ in range(a.iters):
            ctx._check(lib.symaddr_symmetric_alloc(prov, a.bytes, ctypes.byref(ptr),
                                                   ctypes.byref(m)))
            ctx._check(lib.symaddr_symmetric_free(prov, ptr))

    def py_pairs():
        for _ in range(a.iters):
            t, _ = ctx.allocate_symmetric((n,), dtype, provider=a.provider)
            ctx.free(t)

    held = []  # views of freed allocations kept, as a program that keeps results does
    for _ in range(a.held):
        t, _ = ctx.allocate_symmetric((n,), dtype, provider=a.provider)
        held.append(t[1:])
        ctx.free(t)
    best = {"c": float("inf"), "python": float("inf")}
    c_pairs()  # warm-up: retention and caches as in steady state
    py_pairs()
    if a.profile and ctx.rank == 0:  # where Python's time goes, on rank 0 (its peers wait)
        import cProfile
        import pstats
        prof = cProfile.Profile()
        prof.runcall(py_pairs)
        pstats.Stats(prof).sort_stats("tottime").print_stats(12)
    elif a.profile:
        py_pairs()
    for _ in range(a.rounds):
        for name, fn in (("c", c_pairs), ("python", py_pairs)):
            ctx.barrier()
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], (time.perf_counter() - t0) / a.iters)
    if ctx.rank == 0:
        c_us, py_us = best["c"] * 1e6, best["python"] * 1e6
        bound = 1.5 * c_us + 20
        print("# symaddr.bench alloc: %d ranks, backend %s, provider %s, %d B, %d pairs x %d "
              "rounds (best round), %d views of freed allocations held" % (
                  ctx.size, ctx.backend, a.provider, a.bytes, a.iters, a.rounds, a.held))
        print("# %12s %12s %8s %14s %s" % ("C us/pair", "Python us", "ratio", "bound 1.5C+20",
                                           "goal"))
        print("  %12.1f %12.1f %8.3f %14.1f %s" % (c_us, py_us, py_us / c_us, bound,
                                                   "met" if py_us <= bound else "NOT MET"))


def _timed(ctx, fn, iters, rounds):
    """Best time of one call of fn over rounds of iters calls, in seconds (CUDA events),
    the slowest rank's."""
    return _timed_each(ctx, [fn], iters, rounds)[0]


def _timed_each(ctx, fns, iters, rounds):
    """_timed of each of fns, their rounds taken in turn (a round of each, then the next), so
    that a slower spell of a shared machine falls on all of them alike."""
    import torch
    from mpi4py import MPI
    best = [float("inf")] * len(fns)
    for fn in fns:
        fn()  # compiled and warm before the clock starts
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            ctx.barrier()
            torch.cuda.synchronize()
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(iters):
                fn()
            stop.record()
            stop.synchronize()
            best[i] = min(best[i], start.elapsed_time(stop) * 1e-3 / iters)
    return [MPI.COMM_WORLD.allreduce(b, op=MPI.MAX) for b in best]


def _sizes(lo, hi, factor):
    s = lo
    while s <= hi:
        yield s
        s *= factor


def _put(ctx, a):
    import torch
    import triton
    if a.example:
        mod = _load_example(a.example, "triton_put.py")
    else:
        from symaddr.triton import p0 as mod  # the package's own copy of the seed's kernel
    peer = (ctx.rank + 1) % ctx.size
    if ctx.rank == 0:
        print("# symaddr.bench put: %d ranks, backend %s, every rank puts to the next; the "
              "seed's Triton put_kernel against symaddr_put on the same ipc buffers, best of "
              "%d rounds x %d" % (ctx.size, ctx.backend, a.rounds, a.iters))
        print("# %12s %14s %14s %8s %6s" % ("bytes", "triton GB/s", "symaddr GB/s", "ratio",
                                            "wrong"))
    for nbytes in _sizes(a.min_bytes or 64 << 20, a.max_bytes, 2):
        n = nbytes // 4
        src, _ = ctx.allocate_symmetric((n,), torch.float32)
        dst, dmap = ctx.allocate_symmetric((n,), torch.float32)
        src.fill_(ctx.rank + 1)

        def tri():
            mod.put_kernel[(triton.cdiv(n, 1024),)](src, dst, dmap.peer_bases, n, peer,
                                                    CUR_RANK=dmap.local_rank, BLOCK=1024)

        def lib():
            ctx.put(dst, src, peer)

        t_tri = _timed(ctx, tri, a.iters, a.rounds)
        dst.fill_(0)
        torch.cuda.synchronize()
        ctx.barrier()
        tri()
        torch.cuda.synchronize()
        ctx.barrier()
        wrong = int((dst != (ctx.rank - 1) % ctx.size + 1).sum())
        t_lib = _timed(ctx, lib, a.iters, a.rounds)
        if ctx.rank == 0:
            print("  %12d %14.1f %14.1f %8.3f %6d" % (nbytes, nbytes / t_tri / 1e9,
                                                      nbytes / t_lib / 1e9, t_lib / t_tri,
                                                      wrong))
        ctx.barrier()
        ctx.free(dst)
        ctx.free(src)


def _graphed_each(ctx, fns, iters, rounds):
    """Best time of one call of each of fns replayed from a CUDA graph of iters calls (the
    slowest rank's), in seconds; their rounds taken in turn."""
    import torch
    from mpi4py import MPI
    graphs = []
    for fn in fns:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            fn()  # warm, outside the capture
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()
        ctx.barrier()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(iters):
                fn()
        graphs.append(graph)
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, graph in enumerate(graphs):
            torch.cuda.synchronize()
            ctx.barrier()
            torch.cuda.synchronize()
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            graph.replay()
            stop.record()
            stop.synchronize()
            best[i] = min(best[i], start.elapsed_time(stop) * 1e-3 / iters)
    return [MPI.COMM_WORLD.allreduce(b, op=MPI.MAX) for b in best]


def _allreduce_cpu(ctx, a):
    """The cpu backend's form of _allreduce: NumPy arrays, eager, each call timed to its
    return (the cpu backend runs a collective at its call), rounds of C and Python taken in
    turn, the slowest rank's best."""
    import numpy as np
    from mpi4py import MPI
    binary = _binary_times(a.c_json, ctx, "allreduce")
    if ctx.rank == 0:
        print("# symaddr.bench allreduce: %d ranks, backend cpu, f32, best of %d rounds x %d "
              "calls; C: symaddr_allreduce called directly; py: Context.allreduce (CPU "
              "timings: compare the ratio)" % (ctx.size, a.rounds, a.iters))
        print("# %9s %9s %9s %9s %8s %6s%s" % (
            "bytes", "C us", "py us", "py-C us", "py/C", "wrong",
            _binary_head(binary)))
    for nbytes in _sizes(8, a.max_bytes, 4):
        n = nbytes // 4
        x, _ = ctx.allocate_symmetric((n,), np.float32)
        ref, _ = ctx.allocate_symmetric((n,), np.float32)
        x[:] = ctx.rank + 1
        c_call = _c_call(ctx, "allreduce", x, ref, n, "float32")

        def py_call():
            ctx.allreduce(x, ref)

        best = [float("inf"), float("inf")]
        for fn in (c_call, py_call):
            fn()
        for _ in range(a.rounds):
            for i, fn in enumerate((c_call, py_call)):
                ctx.barrier()
                t0 = time.perf_counter()
                for _ in range(a.iters):
                    fn()
                best[i] = min(best[i], (time.perf_counter() - t0) / a.iters)
        t_c, t_py = (MPI.COMM_WORLD.allreduce(b, op=MPI.MAX) for b in best)
        wrong = int((ref != ctx.size * (ctx.size + 1) / 2).sum())
        if ctx.rank == 0:
            print("  %9d %9.2f %9.2f %9.2f %8.3f %6d%s" % (
                nbytes, t_c * 1e6, t_py * 1e6, (t_py - t_c) * 1e6, t_py / t_c, wrong,
                _binary_cells(binary, nbytes, t_py)))
        ctx.barrier()
        ctx.free(ref)
        ctx.free(x)


def _allreduce(ctx, a):
    """ctx.allreduce against symaddr_allreduce called directly (ctypes), eager and replayed
    from a CUDA graph: Python's share of a host collective; and the Triton one-shot."""
    if ctx.backend == "cpu":
        return _allreduce_cpu(ctx, a)
    binary = _binary_times(a.c_json, ctx, "allreduce")
    import torch
    from symaddr.triton import collectives as tc
    if ctx.rank == 0:
        print("# symaddr.bench allreduce: %d ranks, backend %s, f32, best of %d rounds x %d "
              "calls; C: symaddr_allreduce called directly; py: Context.allreduce; "
              "graph: replayed from a CUDA graph; triton: the Triton one-shot (one kernel, "
              "synchronised on the device)" % (ctx.size, ctx.backend, a.rounds, a.iters))
        print("# %9s %9s %9s %9s %11s %11s %11s %10s %6s%s" % (
            "bytes", "C us", "py us", "py-C us", "C graph us", "py graph us", "py/C graph",
            "triton us", "wrong", _binary_head(binary)))
    for nbytes in _sizes(8, a.max_bytes, 4):
        n = nbytes // 4
        x, _ = ctx.allocate_symmetric((n,), torch.float32)
        ref, _ = ctx.allocate_symmetric((n,), torch.float32)
        out = torch.empty(n, dtype=torch.float32, device="cuda")  # the Triton kernel's: local
        x.fill_(ctx.rank + 1)

        c_call = _c_call(ctx, "allreduce", x, ref, n, torch.float32)

        def py_call():
            ctx.allreduce(x, ref)

        t_c, t_py, t_tri = _timed_each(
            ctx, [c_call, py_call, lambda: tc.oneshot_allreduce(ctx, x, out)], a.iters,
            a.rounds)
        g_c, g_py = _graphed_each(ctx, [c_call, py_call], a.iters, a.rounds)
        torch.cuda.synchronize()
        want = ctx.size * (ctx.size + 1) / 2
        wrong = int((out != want).sum()) + int((ref != want).sum())
        if ctx.rank == 0:
            print("  %9d %9.2f %9.2f %9.2f %11.2f %11.2f %11.3f %10.2f %6d%s" % (
                nbytes, t_c * 1e6, t_py * 1e6, (t_py - t_c) * 1e6, g_c * 1e6, g_py * 1e6,
                g_py / g_c, t_tri * 1e6, wrong,
                _binary_cells(binary, nbytes, t_py)))
        ctx.barrier()
        ctx.free(ref)
        ctx.free(x)


def _binary_times(path, ctx, op):
    """{bytes: µs} of symaddr-bench's out-of-place column from its --json file (path: None
    for none), checked to be the same op, rank count and backend as this run's."""
    if not path:
        return {}
    import json
    try:
        with open(path) as f:
            t = json.load(f)
    except (OSError, ValueError) as e:
        raise SystemExit("symaddr.bench: --c-json %s: %s (write it with symaddr-bench %s "
                         "--json FILE)" % (path, e, op))
    want = (op, ctx.size, ctx.backend)
    got = (t.get("op"), t.get("ranks"), t.get("backend"))
    if got != want or t.get("dtype") != "float" or t.get("graph"):
        raise SystemExit("symaddr.bench: --c-json %s is symaddr-bench's %s at %s ranks on %s "
                         "(%s, graph %s); this run is %s at %s ranks on %s, float, eager" % (
                             path, *got, t.get("dtype"), t.get("graph"), *want))
    return {int(r["bytes"]): float(r["time_us"]) for r in t.get("rows", [])}


def _binary_head(binary):
    """The heads of the C binary's columns (none without --c-json)."""
    return " %9s %10s" % ("bin us", "py-bin us") if binary else ""


def _binary_cells(binary, nbytes, t_py):
    """The C binary's time at nbytes and Python's (t_py, seconds) over it, µs; '-' where the
    binary's file has no such size; nothing without --c-json."""
    if not binary:
        return ""
    b = binary.get(nbytes)
    return " %9s %10s" % ("-", "-") if b is None else " %9.2f %10.2f" % (b, t_py * 1e6 - b)


def _c_call(ctx, name, send, recv, n, dtype, op="sum"):
    """A function that calls the C collective name (symaddr_allreduce or symaddr_allgather)
    directly through ctypes on torch's current stream (the default stream on the cpu
    backend, over NumPy arrays)."""
    lib = ctx._lib
    fn = getattr(lib, "symaddr_" + name)
    fn.restype = ctypes.c_int
    code = lib.dtypes[str(dtype).replace("torch.", "")]
    if name == "allreduce":
        fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                                                ctypes.c_void_p]
        args = (ctx._h, send.data_ptr(), recv.data_ptr(), n, code, lib.abi["redop"][op])
    else:
        fn.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
        args = (ctx._h, send.data_ptr(), recv.data_ptr(), n, code)
    if ctx.backend == "cpu":
        def call():
            st = fn(*args, None)
            if st:
                ctx._check(st)
        return call
    import torch

    def call():
        st = fn(*args, torch.cuda.current_stream().cuda_stream)
        if st:
            ctx._check(st)
    return call


def _load_example(path, default):
    """The module in path, or (path None) in the source tree's examples/default."""
    import os
    if path is None:
        here = os.path.dirname(os.path.abspath(__file__))
        path = os.path.join(here, "..", "..", "examples", default)
        if not os.path.exists(path):
            raise SystemExit("symaddr.bench: pass --example PATH to %s (it ships in the "
                             "source tree's examples/, not in the package)" % default)
    spec = importlib.util.spec_from_file_location(default.split(".")[0], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# name -> (function, calls per round, largest size) of each benchmark
# (the Triton collectives' and the fused kernels' benchmarks live in _bench_triton)
_BENCHES = {"alloc": (_alloc, 200, 0), "put": (_put, 20, 1 << 30),
            "allreduce": (_allreduce, 200, 1 << 20), "triton": ("_triton", 200, 1 << 20),
            "fused": ("_fused", 20, 0), "launch": ("_launch", 2000, 0),
            "ccl": ("_ccl", 100, 64 << 20)}


def _count(text):
    """argparse's type of a count: an int > 0 (a round of 0 calls timed nothing, and -5
    printed negative times as a goal met)."""
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v <= 0:
        raise argparse.ArgumentTypeError("%r: pass an integer > 0" % text)
    return v


def _count0(text):
    """A count that may be 0 (--held)."""
    try:
        v = int(text)
    except ValueError:
        v = -1
    if v < 0:
        raise argparse.ArgumentTypeError("%r: pass an integer >= 0" % text)
    return v


def _bytes4(text):
    """--bytes of alloc: a count of whole f32 elements (the Python side allocates bytes / 4
    of them; the C side the bytes)."""
    v = _count(text)
    if v % 4:
        raise argparse.ArgumentTypeError("%r: pass a multiple of 4 (f32 elements)" % text)
    return v


def _counts(text):
    """A comma-separated list of counts (--m, --nk)."""
    return [_count(v) for v in text.split(",")]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m symaddr.bench",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("what", nargs="?", default="alloc", choices=list(_BENCHES),
                    help="alloc and allreduce run on every backend; put, triton, fused, "
                    "launch and ccl need a GPU backend and torch")
    ap.add_argument("--iters", type=_count, default=None,
                    help="calls per round (alloc 200, put 20, allreduce and triton 200, "
                    "fused 20, launch 2000, ccl 100)")
    ap.add_argument("--rounds", type=_count, default=5, help="rounds of each, alternately")
    ap.add_argument("--bytes", type=_bytes4, default=4096, help="alloc: bytes per allocation")
    ap.add_argument("--provider", default="ipc", help="alloc: ipc, heap or vmm")
    ap.add_argument("--profile", action="store_true", help="alloc: profile Python on rank 0")
    ap.add_argument("--held", type=_count0, default=0,
                    help="alloc: views of freed allocations held while timing (0)")
    ap.add_argument("--backend", default=None,
                    help="symaddr backend (default: $SYMADDR_BACKEND, else auto)")
    ap.add_argument("--example", default=None,
                    help="put: a file holding a put_kernel of the seed's signature (default: "
                    "the package's, symaddr.triton.p0); fused: examples/triton_fused.py")
    ap.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"),
                    help="triton, ccl: float32, bfloat16 or float16")
    ap.add_argument("--m", type=_counts, default=[1, 16, 64, 128],
                    help="fused: tokens (M), comma-separated")
    ap.add_argument("--nk", type=_counts, default=[4096, 8192],
                    help="fused: N = K, comma-separated")
    ap.add_argument("--min-bytes", type=_count, default=None,
                    help="put: smallest size (64 MiB); triton: smallest size (8 bytes, or "
                    "one element a rank if that is more)")
    ap.add_argument("--c-json", default=None,
                    help="allreduce: symaddr-bench allreduce's --json file of the same ranks "
                    "and backend (f32, eager), whose times are printed beside (bin us)")
    ap.add_argument("--max-bytes", type=_count, default=None,
                    help="put: largest size (1 GiB); allreduce, triton: (1 MiB); ccl: (64 MiB)")
    a = ap.parse_args(argv)
    run, iters, max_bytes = _BENCHES[a.what]
    if isinstance(run, str):
        from . import _bench_triton
        run = getattr(_bench_triton, run)
    a.iters, a.max_bytes = a.iters or iters, a.max_bytes or max_bytes
    try:  # a refused setting (backend, provider) ends the run with the library's message
        ctx = symaddr.Context(backend=a.backend)
    except symaddr.SymaddrError as e:
        raise SystemExit("symaddr.bench %s: %s" % (a.what, e))
    try:
        if a.what not in ("alloc", "allreduce") and ctx.backend == "cpu":
            raise SystemExit("symaddr.bench %s: needs a GPU backend and torch (this context "
                             "runs on the cpu backend, where alloc and allreduce run)" % a.what)
        run(ctx, a)
    except symaddr.SymaddrError as e:
        raise SystemExit("symaddr.bench %s: %s" % (a.what, e))
    finally:
        ctx.close()


if __name__ == "__main__":
    main()
