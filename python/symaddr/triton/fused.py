# SPDX-License-Identifier: MIT
"""Fused kernels on symaddr.triton.team's blocks, synchronised on the device (symaddr.ops and
symaddr.iris.ops launch them; examples/triton_fused.py shows them bare):

- allreduce_rmsnorm_kernel: allreduce + residual add + RMSNorm, one program a row;
- gemm_allreduce_kernel: GEMM + allreduce (a row-parallel linear layer) or + reduce-scatter
  (a window of the output: each rank reduces only its rows or columns), each output tile
  reduced across ranks as it leaves the GEMM;
- allgather_gemm_kernel: all-gather (rows) + GEMM, the gathered input never materialised;
- allgather_k_gemm_kernel: all-gather along K + GEMM (Iris's all_gather_matmul), every rank's
  K-slice read where it lies;
- matmul_kernel and rmsnorm_kernel: the unfused pairs' local halves."""
import triton
import triton.language as tl

from symaddr.triton.team import (team_aligned, team_barrier, team_begin, team_end,
                                 team_reduce_tile, team_translate)


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
def _gemm_reduce(team, call, a, b, partial, partial_pb, out, M, N, K, row_lo, row_hi, col_lo,
                 col_hi, N_RANKS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                 BK: tl.constexpr):
    """Every tile of a @ b into partial (symmetric, M x N, f32); once every rank's tiles are
    there, the tiles of the window [row_lo, row_hi) x [col_lo, col_hi) reduced from every
    rank into out (the window's shape, row-major, any memory)."""
    tiles_n = tl.cdiv(N, BN)
    tiles = tl.cdiv(M, BM) * tiles_n
    for t in range(tl.program_id(0), tiles, tl.num_programs(0)):
        rm = (t // tiles_n) * BM + tl.arange(0, BM)
        rn = (t % tiles_n) * BN + tl.arange(0, BN)
        acc = _gemm_tile(a + rm * K, rm < M, b, rn, N, K, BK)
        tl.store(partial + rm[:, None] * N + rn[None, :], acc,
                 mask=(rm[:, None] < M) & (rn[None, :] < N))
    if team_barrier(team, call, 1, N_RANKS):  # every rank's tiles are in its partial
        wn = tl.cdiv(col_hi - col_lo, BN)
        wtiles = tl.cdiv(row_hi - row_lo, BM) * wn
        for t in range(tl.program_id(0), wtiles, tl.num_programs(0)):
            rm = row_lo + (t // wn) * BM + tl.arange(0, BM)
            rn = col_lo + (t % wn) * BN + tl.arange(0, BN)
            inside = (rm[:, None] < row_hi) & (rn[None, :] < col_hi)
            total = team_reduce_tile(partial, partial_pb, rm[:, None] * N + rn[None, :], inside,
                                     team, N_RANKS)
            tl.store(out + (rm[:, None] - row_lo) * (col_hi - col_lo) + (rn[None, :] - col_lo),
                     total.to(out.dtype.element_ty), mask=inside)
        team_barrier(team, call, 2, N_RANKS)  # no rank still reads partial


@triton.jit
def gemm_allreduce_kernel(team, a, b, partial, partial_pb, out, M, N, K,
                          N_RANKS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                          BK: tl.constexpr):
    """out (M x N, any memory) = the sum over ranks of their a (M x K) @ b (K x N): each
    program multiplies its tiles (every num_programs-th), leaves them in partial (symmetric),
    and once every rank's tiles are there reduces them from every rank."""
    call = team_begin(team)
    _gemm_reduce(team, call, a, b, partial, partial_pb, out, M, N, K, 0, M, 0, N, N_RANKS, BM,
                 BN, BK)
    team_end(team, call)


@triton.jit
def gemm_reduce_scatter_kernel(team, a, b, partial, partial_pb, out, M, N, K, row_lo, row_hi,
                               col_lo, col_hi, N_RANKS: tl.constexpr, BM: tl.constexpr,
                               BN: tl.constexpr, BK: tl.constexpr):
    """out (the window's shape, any memory) = the window [row_lo, row_hi) x [col_lo, col_hi)
    of the sum over ranks of their a @ b: a reduce-scatter of the GEMM's output, each rank
    passing its own window (its rows, or its columns)."""
    call = team_begin(team)
    _gemm_reduce(team, call, a, b, partial, partial_pb, out, M, N, K, row_lo, row_hi, col_lo,
                 col_hi, N_RANKS, BM, BN, BK)
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
def _k_gathered(a, a_pb, team, b, out, M, N, KL, N_RANKS: tl.constexpr, BM: tl.constexpr,
                BN: tl.constexpr, BK: tl.constexpr, ALIGNED: tl.constexpr):
    tiles_n = tl.cdiv(N, BN)
    tiles = tl.cdiv(M, BM) * tiles_n
    for t in range(tl.program_id(0), tiles, tl.num_programs(0)):
        rm = (t // tiles_n) * BM + tl.arange(0, BM)
        rn = (t % tiles_n) * BN + tl.arange(0, BN)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for i in range(0, N_RANKS):
            r = (team.rank + i) % N_RANKS  # each rank starts at its own slice
            # a masked row (past M) reads nothing: row 0's pointer, within a (validation
            # checks each lane's translation, and refused one past a's end)
            rows = team_translate(a + tl.where(rm < M, rm, 0) * KL, r, a_pb, team, ALIGNED)
            acc += _gemm_tile(rows, rm < M, b + r * KL * N, rn, N, KL, BK)
        tl.store(out + rm[:, None] * N + rn[None, :], acc.to(out.dtype.element_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def allgather_k_gemm_kernel(team, a, a_pb, b, out, M, N, KL, N_RANKS: tl.constexpr,
                            BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """out (M x N, any memory) = [every rank's a (M x KL, symmetric) side by side along K] @ b
    (N_RANKS * KL x N, any memory): Iris's all_gather_matmul, each rank's K-slice read where it
    lies (once every rank's a is ready), the gathered input never materialised."""
    call = team_begin(team)
    if team_barrier(team, call, 1, N_RANKS):  # every rank's a is ready
        if team_aligned(a_pb, team, N_RANKS):
            _k_gathered(a, a_pb, team, b, out, M, N, KL, N_RANKS, BM, BN, BK, True)
        else:
            _k_gathered(a, a_pb, team, b, out, M, N, KL, N_RANKS, BM, BN, BK, False)
        team_barrier(team, call, 2, N_RANKS)  # no rank still reads a
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
