# SPDX-License-Identifier: MIT
"""Fused kernels in Triton (symaddr.triton.fused, which symaddr.ops launches as library calls),
written on symaddr.triton.team's blocks alone and synchronised on the device, each checked
against its unfused pair (a separate collective and a separate computation) and a NumPy
reference:

- allreduce + residual add + RMSNorm (the Triton twin of examples/allreduce_rmsnorm.hip):
  each program reduces its row from every rank and normalises it while it is in registers;
- GEMM + allreduce (a row-parallel linear layer): each rank multiplies its K-slice, and each
  output tile is reduced across ranks as it leaves the GEMM;
- all-gather + GEMM (a column-parallel linear layer over sequence-parallel input): tiles of
  this rank's rows alone first, with no wait, then, once the peers' input is ready, tiles
  whose rows are read where they lie on their ranks, several ranks' rows a tile, so that each
  tile of the weight is read once: the gathered input is never materialised.

    mpiexec -n 2 python examples/triton_fused.py                      # GPUs, torch, compiled
    TRITON_INTERPRET=1 SYMADDR_BACKEND=cpu mpiexec -n 3 python examples/triton_fused.py

The GEMM kernels launch at most symaddr.triton.team.team_programs() programs, each looping over
its tiles (FUSED_PROGRAMS=n: at most n, so that small shapes loop too). Prints "fused: ok" on
every rank, or exits 1."""
import os
import sys

from mpi4py import MPI  # (initialises MPI before symaddr)
import numpy as np
import triton
import triton.language as tl

import symaddr
from symaddr.triton import collectives as tc
from symaddr.triton.fused import (_allgather_gemm, allgather_gemm_kernel,  # noqa: F401
                                  allreduce_rmsnorm_kernel, gemm_allreduce_kernel, gemm_config,
                                  matmul_kernel, rmsnorm_kernel)
from symaddr.triton.team import team_programs


@triton.jit
def _count_kernel(out, n):
    acc = 0
    for _ in range(0, n):
        acc += 1
    tl.store(out, acc)


def interpreter_fault() -> str:
    """Why Triton's interpreter cannot run these kernels here ("" when it can): before
    triton-lang/triton#9172 it turns a loop bound that is a kernel argument into a Python int
    in a way NumPy 2.4 refuses ("only 0-dimensional arrays can be converted")."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return ""
    out = np.zeros(1, np.int32).view(symaddr._arrays.HostArray)
    try:
        _count_kernel[(1,)](out, 3)
    except Exception as e:  # noqa: BLE001 (the interpreter wraps what it met)
        return (f"Triton {triton.__version__}'s interpreter with NumPy {np.__version__} cannot "
                f"loop to a runtime bound (triton-lang/triton#9171): {e}")
    return "" if int(out[0]) == 3 else f"the interpreter counted {int(out[0])} of 3 iterations"


def main():
    fault = interpreter_fault()
    if fault:
        if MPI.COMM_WORLD.rank == 0:
            print(f"SKIP: {fault}")
        return 77
    ctx = symaddr.Context(backend=os.environ.get("SYMADDR_BACKEND", "auto"))
    rank, size = ctx.rank, ctx.size
    torch = None
    if ctx.backend != "cpu":
        import torch

    def arr(values):  # local memory of the context's device
        if torch is not None:
            return torch.as_tensor(values, device="cuda")
        return np.ascontiguousarray(values).view(symaddr._arrays.HostArray)

    def host(a):
        if torch is not None:
            torch.cuda.synchronize()
            return a.cpu().numpy()
        return np.asarray(a)

    team = ctx.team()
    cap = int(os.environ.get("FUSED_PROGRAMS", "0"))

    def programs(tiles):  # the fused kernels' grid: co-resident programs, each looping
        return min(cap or tiles, team_programs(ctx, tiles))
    wrong = 0
    # allreduce + residual + RMSNorm: rows of H (odd) f32
    rows, H, eps = 5, 67, 1e-6
    xs = [((np.arange(rows * H) * 7 + r * 13) % 23 - 11).astype(np.float32) / 8 * (r + 1)
          for r in range(size)]
    res = (np.arange(rows * H) % 19 - 9).astype(np.float32) / 4
    w = (0.5 + (np.arange(H) % 5) / 8).astype(np.float32)
    x, xmap = ctx.allocate_symmetric((rows * H,), np.float32 if torch is None else torch.float32)
    x[:] = arr(xs[rank])
    ctx.barrier()
    v = sum(xs) + res
    want = (v.reshape(rows, H) / np.sqrt((v.reshape(rows, H) ** 2).mean(1, keepdims=True) + eps)
            * w).ravel()
    out = arr(np.zeros(rows * H, np.float32))
    allreduce_rmsnorm_kernel[(rows,)](team, x, xmap.peer_bases, arr(res), arr(w), out, H, eps,
                                      N_RANKS=size, BLOCK_H=triton.next_power_of_2(H))
    fused = host(out)
    unfused = arr(np.zeros(rows * H, np.float32))
    summed = tc.allreduce(ctx, x)
    rmsnorm_kernel[(rows,)](summed, arr(res), arr(w), unfused, H, eps,
                            BLOCK_H=triton.next_power_of_2(H))
    wrong += int((~np.isclose(fused, want, rtol=1e-5, atol=1e-5)).sum())
    wrong += int((~np.isclose(host(unfused), want, rtol=1e-5, atol=1e-5)).sum())
    # GEMM + allreduce, integer-valued f32 (exact): M tokens, a K-slice per rank
    M, N, K = 5, 48, 40
    As = [((np.arange(M * K) + r) % 7 - 3).astype(np.float32) for r in range(size)]
    Bs = [((np.arange(K * N) * 3 + r) % 5 - 2).astype(np.float32) for r in range(size)]
    partial, pmap = ctx.allocate_symmetric((M * N,), np.float32 if torch is None
                                           else torch.float32)
    gout = arr(np.zeros(M * N, np.float32))
    BM, BN, BK = 16, 16, 16
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    gemm_allreduce_kernel[(programs(grid[0]),)](team, arr(As[rank]), arr(Bs[rank]), partial,
                                                pmap.peer_bases, gout, M, N, K, N_RANKS=size,
                                                BM=BM, BN=BN, BK=BK)
    gwant = sum(As[r].reshape(M, K) @ Bs[r].reshape(K, N) for r in range(size)).ravel()
    wrong += int((host(gout) != gwant).sum())
    # its unfused pair: the GEMM into symmetric memory, then the Triton allreduce
    matmul_kernel[grid](arr(As[rank]), arr(Bs[rank]), partial, M, N, K, BM=BM, BN=BN, BK=BK)
    wrong += int((host(tc.allreduce(ctx, partial)) != gwant).sum())
    # all-gather + GEMM, integer-valued f32 (exact): M rows per rank (odd), this rank's
    # N-slice of the weight; a is a view at an odd offset of its allocation. M = 7: every tile
    # holds several ranks' rows; M = 19: some tiles hold one rank's rows alone (no wait)
    N, K = 40, 24
    Bl = ((np.arange(K * N) + 2 * rank) % 7 - 3).astype(np.float32)
    for M in (7, 19):
        Ar = [((np.arange(M * K) * 5 + 3 * r) % 9 - 4).astype(np.float32) for r in range(size)]
        abuf, amap = ctx.allocate_symmetric((M * K + 3,), np.float32 if torch is None
                                            else torch.float32)
        a = abuf[3:]
        a[:] = arr(Ar[rank])
        ctx.barrier()
        aout = arr(np.zeros(size * M * N, np.float32))
        grid = (programs(triton.cdiv(size * M, BM) * triton.cdiv(N, BN)),)
        allgather_gemm_kernel[grid](team, a, amap.peer_bases, arr(Bl), aout, M, N, K,
                                    N_RANKS=size, BM=BM, BN=BN, BK=BK)
        awant = (np.concatenate(Ar).reshape(size * M, K) @ Bl.reshape(K, N)).ravel()
        wrong += int((host(aout) != awant).sum())
        # its unfused pair: the Triton all-gather, then the GEMM
        gathered = tc.allgather(ctx, a)
        unf = arr(np.zeros(size * M * N, np.float32))
        matmul_kernel[(triton.cdiv(size * M, BM) * triton.cdiv(N, BN),)](
            gathered, arr(Bl), unf, size * M, N, K, BM=BM, BN=BN, BK=BK)
        wrong += int((host(unf) != awant).sum())
        ctx.sync()
        ctx.free(abuf)
    ctx.free(partial)
    ctx.free(x)
    ctx.close()
    print("fused: %s (rank %d of %d: allreduce+RMSNorm, GEMM+allreduce, all-gather+GEMM, "
          "each with its unfused pair: %d wrong)"
          % ("ok" if wrong == 0 else "FAILED", rank, size, wrong), flush=True)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
