#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Random calls of symaddr.triton.collectives against a sequential computation, for a given
time: the Lamport, two-shot, one-shot and "auto" allreduce, reduce-scatter, all-gather,
all-to-all and broadcast (the Lamport, two-shot, reduce-scatter, all-gather and broadcast in
place or not; the Lamport's x and out symmetric or plain memory); f32, f64, f16, bf16,
int32 and int64; sum, max, min; odd counts, views at odd offsets, x and out from the heap or ipc
provider or imports (at an interior offset that differs per rank), tiles of 16 to 1024 elements
and 1 to 4 programs (so that calls take several rounds).
Every rank draws the same calls (one seed); each checks its result exactly (floating point: the
data are small integers, the reference rounded once to the dtype). Prints the rank-calls and the
wrong elements; exit status 1 if any was wrong.

    PYTHONPATH=python TRITON_INTERPRET=1 mpiexec -n 3 python3 scripts/triton-soak.py 60
    SYMADDR_BACKEND=cuda mpiexec -n 8 python3 scripts/triton-soak.py 120 --array torch
"""
import numpy as np

import symaddr.triton.collectives as tc
import _soak as soak

run = soak.start(__doc__, 1234)
a, ctx, rank, size, rng = run.args, run.ctx, run.rank, run.size, run.rng
dtype_of, put, host, plain = run.dtype_of, run.put, run.host, run.plain
if a.array == "torch":
    import torch
real_programs = tc.team_programs
calls = wrong = 0
while soak.running(run):
    name = str(rng.choice(["float32", "int32", "float16", "bfloat16", "float64", "int64"]))
    dtype = dtype_of(name)
    n = max(size, int(rng.integers(1, 3000)) // size * size)
    off = int(rng.integers(0, 5))
    providers = [str(p) for p in rng.choice(["heap", "ipc", "import"], 2)]
    block, cap = int(2 ** rng.integers(4, 11)), int(rng.integers(1, 5))
    kind = str(rng.choice(["lamport", "auto", "twoshot", "oneshot", "reduce_scatter",
                           "allgather", "alltoall", "broadcast"]))
    if kind == "lamport" and name not in ("float32", "float16", "bfloat16"):
        name, dtype = "float32", dtype_of("float32")  # the Lamport's dtypes
    if kind in ("lamport", "auto") and rng.random() < 0.5:
        n = max(size, (8, 1000, 2048)[int(rng.integers(0, 3))] // size * size)  # kept plans
    reducing = ("lamport", "auto", "oneshot", "reduce_scatter")
    op = str(rng.choice(["sum", "max", "min"])) if kind in reducing else "sum"
    root = int(rng.integers(0, size))
    in_place = bool(rng.random() < 0.5)  # every kind but the one-shot and all-to-all
    every = np.stack([np.arange(n) % 97 + 3 * q - 40 for q in range(size)]).astype(np.float64)
    x, free_x = soak.symmetric(run, n + off, dtype, providers[0])
    xs, o, free_o, c = x[off:], None, None, n // size
    put(xs, every[rank])
    reduced = {"sum": every.sum(0), "max": every.max(0), "min": every.min(0)}[op]
    tc.team_programs = lambda ctx_, tiles, per_sm=1: max(
        1, min(int(tiles), cap, real_programs(ctx_, tiles, per_sm)))
    try:
        if kind == "lamport":  # x and out symmetric or plain memory; out = x or apart
            if rng.random() < 0.5:
                xs = plain(n, dtype)
                put(xs, every[rank])
            out = xs if in_place else plain(n, dtype) if rng.random() < 0.5 else None
            got, want = tc.allreduce(ctx, xs, out, op=op, algo="lamport"), reduced
        elif kind == "auto":  # x symmetric (the one-shot's and two-shot's), in place or not
            got = tc.allreduce(ctx, xs, xs if in_place else None, op=op, block=block)
            want = reduced
        elif kind == "twoshot":  # into another allocation, or in place
            if not in_place:
                o, free_o = soak.symmetric(run, n + off, dtype, providers[1])
            got = tc.allreduce(ctx, xs, xs if o is None else o[off:], algo="twoshot",
                               block=block)
            want = reduced
        elif kind == "oneshot":
            got, want = tc.allreduce(ctx, xs, op=op, algo="oneshot", block=block), reduced
        elif kind == "reduce_scatter":  # into a new array, or in place (x's own part)
            got = tc.reduce_scatter(ctx, xs, xs[rank * c:(rank + 1) * c] if in_place else None,
                                    op=op, block=block)
            want = reduced[rank * c:(rank + 1) * c]
        elif kind == "allgather" and in_place:  # x as this rank's part of out
            got = tc.allgather(ctx, xs[rank * c:(rank + 1) * c], xs, block=block)
            want = every[np.arange(size)[:, None], np.arange(size)[:, None] * c +
                         np.arange(c)].reshape(-1)
        elif kind == "allgather":
            got, want = tc.allgather(ctx, xs, block=block), every.reshape(-1)
        elif kind == "alltoall":
            got = tc.alltoall(ctx, xs, block=block)
            want = every[:, rank * c:(rank + 1) * c].reshape(-1)
        else:
            got = tc.broadcast(ctx, xs, xs if in_place else None, root=root, block=block)
            want = every[root]
        ctx.barrier()  # the results complete (stream-ordered on a GPU)
        if a.array == "torch" and torch.cuda.is_available():
            torch.cuda.synchronize()
        bad = int((host(got) != run.rounded(want, dtype)).sum())
    finally:
        tc.team_programs = real_programs
    if bad:
        print("rank %d: %s %s n=%d offset=%d block=%d programs<=%d op=%s providers=%s: %d "
              "wrong" % (rank, kind, name, n, off, block, cap, op, providers, bad), flush=True)
    wrong, calls = wrong + bad, calls + 1
    for free in (free_x, free_o):
        if free is not None:
            free()
soak.finish(run, "triton-soak", calls, wrong)
