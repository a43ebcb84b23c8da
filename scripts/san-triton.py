# SPDX-License-Identifier: MIT
"""Triton collectives for compute-sanitizer (scripts/h200-run.sh sanitize): every allreduce
algorithm of symaddr.triton.collectives and an allgather, compiled, on torch CUDA tensors,
checked exact; prints "triton: N passed" or exits 1.
    mpiexec -n 2 compute-sanitizer --tool memcheck python3 scripts/san-triton.py"""
import sys

from mpi4py import MPI  # first: initialises MPI before symaddr
import torch

import symaddr
from symaddr.triton import collectives as coll


def sync(t) -> None:
    if t.is_cuda:
        torch.cuda.synchronize()


def main() -> int:
    ctx = symaddr.Context()
    rank, size = ctx.rank, ctx.size
    n, bad, done = 1001, 0, 0
    x, _ = ctx.allocate_symmetric((n,), dtype=torch.float32)
    out, _ = ctx.allocate_symmetric((n,), dtype=torch.float32)
    i = torch.arange(n, device=x.device, dtype=torch.float32)
    want = sum((r + 1) * 10 + (i % 13) for r in range(size))
    for algo in coll.ALGOS:
        x.copy_((rank + 1) * 10 + (i % 13))
        ctx.barrier()
        res = coll.allreduce(ctx, x, out if algo != "twoshot" else x, algo=algo)
        sync(x)
        bad += int((res != want).sum())
        done += 1
        ctx.barrier()
    g, _ = ctx.allocate_symmetric((n * size,), dtype=torch.float32)
    x.copy_((rank + 1) * 10 + (i % 13))
    ctx.barrier()
    coll.allgather(ctx, x, g)
    sync(x)
    want = torch.cat([(r + 1) * 10 + (i % 13) for r in range(size)])
    bad += int((g != want).sum())
    done += 1
    ctx.barrier()
    print(f"[{rank}] triton: {done} passed" if not bad else f"[{rank}] triton: {bad} wrong")
    ctx.close()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
