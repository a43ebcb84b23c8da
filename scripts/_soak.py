# SPDX-License-Identifier: MIT
"""What the soak scripts (triton-soak.py, host-soak.py) share: their arguments, context and
draws, the arrays (NumPy's on the cpu backend, or torch's on the context's device; values in
and out as float64, references rounded as the dtype rounds them) and the summary."""
import argparse
import sys
import time
import types

import numpy as np
from mpi4py import MPI

import symaddr


def start(doc, seed):
    """The run of a soak script whose docstring is doc: its arguments (seconds, --array,
    --seed), the context, the generator of its draws (the same on every rank) and the
    arrays' helpers (arrays())."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("seconds", type=float, help="how long rank 0 keeps drawing calls")
    ap.add_argument("--array", choices=("numpy", "torch"), default="numpy",
                    help="numpy (cpu backend) or torch (the context's device)")
    ap.add_argument("--seed", type=int, default=seed)
    args = ap.parse_args()
    ctx = symaddr.Context()
    return types.SimpleNamespace(args=args, comm=MPI.COMM_WORLD, ctx=ctx, rank=ctx.rank,
                                 size=ctx.size, rng=np.random.default_rng(args.seed),
                                 began=time.time(), **vars(arrays(args.array, ctx)))


def symmetric(run, n, dtype, provider):
    """n elements of symmetric memory and what frees them: an allocation of provider, or
    ("import") plain memory imported at an interior offset that differs per rank."""
    ctx = run.ctx
    if provider != "import":
        arr, _ = ctx.allocate_symmetric((n,), dtype, provider=provider)
        return arr, lambda: ctx.free(arr)
    lead, local = 1 + 2 * ctx.rank, ctx.backend == "cpu"  # the cpu backend shares its own
    whole = ctx.empty_local((n + lead,), dtype) if local else run.plain(n + lead, dtype)
    imported = ctx.import_(whole[lead:])

    def release():
        imported.unregister()
        if local:
            ctx.free_local(whole)
    return whole[lead:], release


def running(run):
    """Whether to draw another call: rank 0's time is not up (every rank asks, in step)."""
    return run.comm.bcast(time.time() - run.began < run.args.seconds if run.rank == 0
                          else None)


def finish(run, name, calls, wrong):
    """Print the rank-calls and wrong elements of every rank, close the context, and exit 1
    if any element was wrong."""
    calls, wrong = run.comm.reduce(calls, root=0), run.comm.reduce(wrong, root=0)
    if run.rank == 0:
        print("%s: %d ranks, %s, %.0f s: %d rank-calls, %d wrong elements" % (
            name, run.size, run.args.array, time.time() - run.began, calls, wrong), flush=True)
    run.ctx.close()
    sys.exit(1 if run.comm.bcast(wrong if run.rank == 0 else None) else 0)


def arrays(kind, ctx):
    """The helpers of kind ("numpy" or "torch") over ctx's device: dtype_of(name),
    put(dst, values), host(t) (float64 NumPy), plain(n, dtype) (memory no provider made),
    rounded(values, dtype) (a reference rounded once to dtype) and divided(values, dtype)
    (op "avg" as Context computes it: the sum in dtype, then /= the context's size)."""
    if kind == "torch":
        import torch

        def dtype_of(name):
            return getattr(torch, name)

        def put(dst, values):
            dst.copy_(torch.tensor(np.asarray(values, np.float64)).to(dst.dtype))

        def host(t):
            return t.double().cpu().numpy()

        def plain(n, dtype):
            return torch.empty(n, dtype=dtype,
                               device="cpu" if ctx.backend == "cpu" else ctx.device)

        def in_dtype(values, dtype):
            return torch.tensor(np.asarray(values, np.float64)).to(dtype)
    else:
        import ml_dtypes  # NumPy's bfloat16

        def dtype_of(name):
            return np.dtype(ml_dtypes.bfloat16 if name == "bfloat16" else name)

        def put(dst, values):
            dst[:] = np.asarray(values).astype(dst.dtype)

        def host(t):
            return np.asarray(t, np.float64)

        def plain(n, dtype):
            return np.empty(n, dtype)

        def in_dtype(values, dtype):
            return np.asarray(values, np.float64).astype(dtype)

    def rounded(values, dtype):
        return host(in_dtype(values, dtype))

    def divided(values, dtype):
        t = in_dtype(values, dtype)
        t /= ctx.size
        return host(t)

    return types.SimpleNamespace(dtype_of=dtype_of, put=put, host=host, plain=plain,
                                 rounded=rounded, divided=divided)
