# SPDX-License-Identifier: MIT
"""Fused kernels in Triton, written on symaddr.triton.team's blocks alone and synchronised on
the device, each checked against its unfused pair (a separate collective and a separate
computation) and a NumPy reference:

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
from symaddr.triton.team import (team_aligned, team_barrier, team_begin, team_end,
                                 team_programs, team_reduce_tile, team_translate)


@triton.jit
def allreduce_rmsnorm_kernel(team, x, x_pb, residual, weight, out, H, eps,
                             N_RANKS: tl.constexpr, BLOCK_H: tl.constexpr):
    """out[row] = RMSNorm(sum over ranks of x[row] + residual[row]) * weight; one program a
    row of H elements (x symmetric, the rest any memory)."""
    call = team_begin(team)
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_H)
    m = offs < H
    if team_barrier(team, call, 1, N_RANKS):  # every rank's x is ready
        v = team_reduce_tile(x + row * H, x_pb, offs, m, team, N_RANKS)
        v = v + tl.load(residual + row * H + offs, mask=m, other=0.0).to(tl.float32)
        rms = tl.sqrt(tl.sum(v * v, axis=0) / H + eps)
        y = v / rms * tl.load(weight + offs, mask=m, other=0.0).to(tl.float32)
        tl.store(out + row * H + offs, y.to(out.dtype.element_ty), mask=m)
        team_barrier(team, call, 2, N_RANKS)  # no rank still reads x
    team_end(team, call)


@triton.jit
def rmsnorm_kernel(x, residual, weight, out, H, eps, BLOCK_H: tl.constexpr):
    """The unfused pair's second half: RMSNorm(x + residual) * weight, one program a row."""
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_H)
    m = offs < H
    v = tl.load(x + row * H + offs, mask=m, other=0.0).to(tl.float32)
    v = v + tl.load(residual + row * H + offs, mask=m, other=0.0).to(tl.float32)
    rms = tl.sqrt(tl.sum(v * v, axis=0) / H + eps)
    y = v / rms * tl.load(weight + offs, mask=m, other=0.0).to(tl.float32)
    tl.store(out + row * H + offs, y.to(out.dtype.element_ty), mask=m)


@triton.jit
def _gemm_tile(rows, inside, b, rn, N, K, BK: tl.constexpr):
    """The rows of a that rows points at (each K long, read where inside) @ b[:, rn] (K x N),
    accumulated in f32."""
    acc = tl.zeros((rows.shape[0], rn.shape[0]), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        rk = k * BK + tl.arange(0, BK)
        acc += tl.dot(tl.load(rows[:, None] + rk[None, :],
                              mask=inside[:, None] & (rk[None, :] < K), other=0.0),
                      tl.load(b + rk[:, None] * N + rn[None, :],
                              mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0))
    return acc


@triton.jit
def gemm_allreduce_kernel(team, a, b, partial, partial_pb, out, M, N, K,
                          N_RANKS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                          BK: tl.constexpr):
    """out (M x N, any memory) = the sum over ranks of their a (M x K) @ b (K x N): each
    program multiplies its tiles (every num_programs-th), leaves them in partial (symmetric),
    and once every rank's tiles are there reduces them from every rank."""
    call = team_begin(team)
    tiles_n = tl.cdiv(N, BN)
    tiles = tl.cdiv(M, BM) * tiles_n
    for t in range(tl.program_id(0), tiles, tl.num_programs(0)):
        rm = (t // tiles_n) * BM + tl.arange(0, BM)
        rn = (t % tiles_n) * BN + tl.arange(0, BN)
        acc = _gemm_tile(a + rm * K, rm < M, b, rn, N, K, BK)
        tl.store(partial + rm[:, None] * N + rn[None, :], acc,
                 mask=(rm[:, None] < M) & (rn[None, :] < N))
    if team_barrier(team, call, 1, N_RANKS):  # every rank's tiles are in its partial
        for t in range(tl.program_id(0), tiles, tl.num_programs(0)):
            rm = (t // tiles_n) * BM + tl.arange(0, BM)
            rn = (t % tiles_n) * BN + tl.arange(0, BN)
            tile = rm[:, None] * N + rn[None, :]
            inside = (rm[:, None] < M) & (rn[None, :] < N)
            total = team_reduce_tile(partial, partial_pb, tile, inside, team, N_RANKS)
            tl.store(out + tile, total.to(out.dtype.element_ty), mask=inside)
        team_barrier(team, call, 2, N_RANKS)  # no rank still reads partial
    team_end(team, call)


@triton.jit
def _gathered_times_b(a, a_pb, team, b, out, rm, rn, M, N, K, N_RANKS: tl.constexpr,
                      BK: tl.constexpr, ALIGNED: tl.constexpr):
    """out[rm, rn] = rows rm of every rank's a (M x K, symmetric) stacked in rank order, read
    where they lie (row r is rank r // M's row r % M), @ b[:, rn] (K x N): the tile of b is
    read once for the rows of every rank. ALIGNED: a_pb is team_aligned (the rows load in
    16-byte vectors; translated plainly, one element an instruction, this GEMM ran at as
    little as half the unfused pair's speed)."""
    inside = rm < N_RANKS * M
    src = tl.where(inside, rm // M, team.rank)  # a masked row reads nothing: any valid rank
    rows = team_translate(a + tl.where(inside, rm % M, 0) * K, src, a_pb, team, ALIGNED)
    acc = _gemm_tile(rows, inside, b, rn, N, K, BK)
    tl.store(out + rm[:, None] * N + rn[None, :], acc.to(out.dtype.element_ty),
             mask=inside[:, None] & (rn[None, :] < N))


@triton.jit
def _allgather_gemm(team, call, a, a_pb, b, out, M, N, K, N_RANKS: tl.constexpr,
                    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                    ALIGNED: tl.constexpr):
    """allgather_gemm_kernel's tiles: this rank's rows first, then the rest."""
    tiles_n = tl.cdiv(N, BN)
    tiles = tl.cdiv(N_RANKS * M, BM) * tiles_n
    lo = team.rank * M  # this rank's rows of the gathered input: [lo, lo + M)
    for t in range(tl.program_id(0), tiles, tl.num_programs(0)):
        row0 = (t // tiles_n) * BM
        if (row0 >= lo) & (tl.minimum(row0 + BM, N_RANKS * M) <= lo + M):
            _gathered_times_b(a, a_pb, team, b, out, row0 + tl.arange(0, BM),
                              (t % tiles_n) * BN + tl.arange(0, BN), M, N, K, N_RANKS, BK,
                              ALIGNED)
    if N_RANKS > 1:  # (one rank: every tile was its own)
        if team_barrier(team, call, 1, N_RANKS):  # every rank's a is ready
            for t in range(tl.program_id(0), tiles, tl.num_programs(0)):
                row0 = (t // tiles_n) * BM
                if (row0 < lo) | (tl.minimum(row0 + BM, N_RANKS * M) > lo + M):
                    _gathered_times_b(a, a_pb, team, b, out, row0 + tl.arange(0, BM),
                                      (t % tiles_n) * BN + tl.arange(0, BN), M, N, K, N_RANKS,
                                      BK, ALIGNED)
            team_barrier(team, call, 2, N_RANKS)  # no rank still reads a


@triton.jit
def allgather_gemm_kernel(team, a, a_pb, b, out, M, N, K, N_RANKS: tl.constexpr,
                          BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """out (N_RANKS * M x N, any memory) = every rank's a (M x K, symmetric) stacked in rank
    order @ b (K x N, any memory), the gathered input never materialised. A tile of BM rows
    may hold several ranks' rows, so that b (the weight, which a GEMM of few rows spends its
    time reading) is read once. Tiles of this rank's rows alone come first, with no wait; the
    rest once every rank's a is ready. Each program takes every num_programs-th tile."""
    call = team_begin(team)
    if team_aligned(a_pb, team, N_RANKS):
        _allgather_gemm(team, call, a, a_pb, b, out, M, N, K, N_RANKS, BM, BN, BK, True)
    else:
        _allgather_gemm(team, call, a, a_pb, b, out, M, N, K, N_RANKS, BM, BN, BK, False)
    team_end(team, call)


@triton.jit
def matmul_kernel(a, b, out, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """The unfused pairs' GEMM: out (M x N) = a (M x K) @ b (K x N), local memory."""
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BN)
    rm = (pid // tiles_n) * BM + tl.arange(0, BM)
    rn = (pid % tiles_n) * BN + tl.arange(0, BN)
    acc = _gemm_tile(a + rm * K, rm < M, b, rn, N, K, BK)
    tl.store(out + rm[:, None] * N + rn[None, :], acc.to(out.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def gemm_config(m: int, n: int, programs: int) -> dict:
    """Tile sizes and launch options of a fused GEMM of m rows and n columns run by `programs`
    programs, as keywords of the kernel's launch. Up to 32 rows the GEMM spends its time
    reading the weight (b): each program streams its own column tiles of b, as many tiles as
    programs where n allows (32 to 256 columns), in steps of 32 KiB of b. From 64 rows on,
    128 x 128 tiles of b. (From a sweep on one H200, 2026-12-04, M = 1 and 128, N = K = 4096
    and 8192 at 2 ranks, 4096 at 8: the best of 11 configurations at 8 of the 12 shapes,
    within 28% of it at the others.)"""
    bm = max(16, min(64, triton.next_power_of_2(m)))
    if bm >= 64:
        return {"BM": bm, "BN": 128, "BK": 128, "num_warps": 8, "num_stages": 3}
    bn = 32
    while bn < 256 and n // (2 * bn) >= programs:
        bn *= 2
    return {"BM": bm, "BN": bn, "BK": max(64, min(256, 16384 // bn)),
            "num_warps": 8 if bn >= 64 else 4, "num_stages": 3}


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
