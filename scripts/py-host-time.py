#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Python's own host time a call (µs, best of 9 x 5000, rank 0), with the C collective and the
Triton launch replaced by no-ops, so that what is left is the package's work alone: the
Triton host functions (symaddr.triton.collectives), Context.allreduce and broadcast (past the
workspace's size: with the ranks' agreement whether one stages), on torch's CPU
tensors (--array torch) or NumPy arrays on the cpu backend, or torch's CUDA tensors on a GPU
backend (--backend cuda, where the rows after them time what a real call adds: the ctypes call
of symaddr_collective_run_at refused at once, and torch's raw current stream). Compare two
trees by their PYTHONPATH:

    PYTHONPATH=python mpiexec -n 2 python3 scripts/py-host-time.py --array torch
"""
import argparse
import timeit

import symaddr
from symaddr.triton import collectives as tc

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("--array", choices=("torch", "numpy"), default="torch")
ap.add_argument("--n", type=int, default=1024, help="elements (f32) of each call")
ap.add_argument("--backend", default="cpu", help="cpu (default), or a GPU backend (torch only)")
a = ap.parse_args()
ctx = symaddr.Context(backend=a.backend)
gpu = ctx.backend != "cpu"
if gpu and a.array != "torch":
    raise SystemExit("py-host-time.py: a GPU backend takes --array torch")
if a.array == "torch":
    import torch
    dev = "cuda" if gpu else "cpu"
    dtype, plain = torch.float32, (lambda n: torch.empty(n, device=dev))
else:
    import numpy as np
    dtype, plain = np.float32, (lambda n: np.empty(n, np.float32))
x, _ = ctx.allocate_symmetric((a.n,), dtype)
y, _ = ctx.allocate_symmetric((a.n,), dtype)
out, gathered = plain(a.n), plain(a.n * ctx.size)
# larger than the workspace the staged allreduce makes below: a rooted call past the size to
# which every rank grows it at once (_rooted_grow, forced to 0) agrees whether a rank stages
x8, _ = ctx.allocate_symmetric((8 * a.n,), dtype)
y8, _ = ctx.allocate_symmetric((8 * a.n,), dtype)


def best(fn):
    return min(timeit.repeat(fn, number=5000, repeat=9)) / 5000 * 1e6


ctx.allreduce(x, out)  # the staging workspace made (collective), before the no-op
lib = ctx._lib
real = lib.symaddr_collective_run_at
lib.symaddr_collective_run_at = lambda *args: 0  # returns OK at once: no collective
# before ctx.team(): on the cpu backend a context with a Team checks it after each host call
times = [(name, best(fn)) for name, fn in (
    ("Context.allreduce, symmetric recv", lambda: ctx.allreduce(x, y)),
    ("Context.allreduce, in place", lambda: ctx.allreduce(x)),
    ("Context.allreduce, plain recv (staged)", lambda: ctx.allreduce(x, out)))]
ctx._rooted_grow = 0
times += [(name, best(fn)) for name, fn in (
    ("Context.broadcast, symmetric recv", lambda: ctx.broadcast(x, y, root=0)),
    ("Context.broadcast, symmetric, past the workspace", lambda: ctx.broadcast(x8, y8, root=0)))]
lib.symaddr_collective_run_at = real
if gpu:  # what a real call adds to the package's work, each alone
    import ctypes
    index = lib.collectives["allreduce"][0]
    stream = torch._C._cuda_getCurrentRawStream(x.get_device())
    slow = getattr(lib, "symaddr_collective_run_at_ctypes", real)
    times += [(name, best(fn)) for name, fn in (
        ("%s: symaddr_collective_run_at(NULL, ...) refused" % (
            "the compiled call" if lib.fast else "ctypes"),
         lambda: real(None, index, x.data_ptr(), y.data_ptr(), a.n, 0, 0, 0, stream, b"f", 1)),
        ("ctypes: symaddr_collective_run_at(NULL, ...) refused",
         lambda: slow(None, index, x.data_ptr(), y.data_ptr(), a.n, 0, 0, 0, stream, b"f", 1)),
        ("torch._C._cuda_getCurrentRawStream(device)",
         lambda: torch._C._cuda_getCurrentRawStream(x.get_device())))]
    # the real C collective (8 B) through ctypes: its host time a call (200 calls, then a
    # sync, not timed) and its time a call with the sync, against the C binary's (which
    # times its loop with the sync); both ranks run the same calls
    import time
    from mpi4py import MPI
    lib.symaddr_allreduce.restype = ctypes.c_int
    lib.symaddr_allreduce.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_size_t, ctypes.c_int,
                                                              ctypes.c_int, ctypes.c_void_p]
    code, op = lib.dtypes["float32"], lib.abi["redop"]["sum"]
    args = (ctx._h, x.data_ptr(), y.data_ptr(), 2, code, op)
    def c_loop(name, st, call=None):
        call = call or (lambda: lib.symaddr_allreduce(*args, st))
        host, wall, events = [], [], []
        for _ in range(9):
            torch.cuda.synchronize()
            MPI.COMM_WORLD.Barrier()
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            t0 = time.perf_counter()
            start.record()
            for _ in range(200):
                call()
            t1 = time.perf_counter()
            stop.record()
            stop.synchronize()
            t2 = time.perf_counter()
            host.append((t1 - t0) / 200 * 1e6)
            wall.append((t2 - t0) / 200 * 1e6)
            events.append(start.elapsed_time(stop) * 1e3 / 200)
        what = name if name.startswith(("ctx.", "torch.")) else "symaddr_allreduce 8 B, " + name
        return [("%s: host a call" % what, min(host)),
                ("%s: with the sync" % what, min(wall)),
                ("%s: CUDA events" % what, min(events))]
    times += c_loop("NULL stream", None) + c_loop("torch's current stream", stream)
    # the same after one real Triton collective in the process (symaddr.bench allreduce
    # runs one between its C and Python loops)
    tc.oneshot_allreduce(ctx, x, out)
    torch.cuda.synchronize()
    times += c_loop("after a Triton one-shot", stream)
    # the Python calls of the same 8 B, real: Context.allreduce into symmetric memory and into
    # a plain tensor (staged), and the torch op (a new plain tensor: staged)
    from symaddr import ops
    x2, y2, out2 = x[:2], y[:2], torch.empty(2, device="cuda")
    group = ops.group_name(ctx)
    for name, fn in (("ctx.allreduce 8 B, symmetric recv", lambda: ctx.allreduce(x2, y2)),
                     ("ctx.allreduce 8 B, plain recv", lambda: ctx.allreduce(x2, out2)),
                     ("torch.ops.symaddr.all_reduce 8 B",
                      lambda: torch.ops.symaddr.all_reduce(x2, "sum", group))):
        fn()
        times += c_loop(name, stream, fn)
ctx.team()
tc._launch = lambda *args, **kw: None  # no kernel: the host function's own work
times += [(name, best(fn)) for name, fn in (
    ("symaddr.triton.collectives.allreduce, oneshot",
     lambda: tc.allreduce(ctx, x, out, algo="oneshot")),
    ("symaddr.triton.collectives.allreduce, twoshot",
     lambda: tc.allreduce(ctx, x, y, algo="twoshot")),
    ("symaddr.triton.collectives.allreduce, lamport",
     lambda: tc.allreduce(ctx, x, out, algo="lamport")),
    ("symaddr.triton.collectives.allgather", lambda: tc.allgather(ctx, x, gathered)),
    ("get_symmetric_address_map(x).peer_bases",
     lambda: ctx.get_symmetric_address_map(x).peer_bases))]
if ctx.rank == 0:
    print("# Python's host time a call, %s, %d f32, %d ranks, backend %s (µs)" % (
        a.array, a.n, ctx.size, ctx.backend))
    for name, t in times:
        print("  %-50s %7.2f" % (name, t))
ctx.barrier()
ctx.close()
