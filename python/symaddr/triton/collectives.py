# SPDX-License-Identifier: MIT
"""Collectives written in Triton on symaddr.triton's device functions alone, over any
provider's memory: a one-shot allreduce (every rank loads every peer's input and sums in rank
order, so every rank gets the same bits) and an all-gather (every rank stores its part into
every peer). The rank count is a compile-time constant: the loops over peers unroll. The host functions put a barrier before the kernel (the peers' inputs are ready)
and after it (every load and store is done before the memory is reused)."""
import triton
import triton.language as tl

from symaddr._comm import count_of as _count  # elements of a NumPy array or a tensor
from symaddr import triton as st


@triton.jit
def oneshot_allreduce_kernel(out, x, n, peer_bases, cur_rank, n_ranks: tl.constexpr,
                             BLOCK: tl.constexpr):
    """out (local) = sum over ranks of their x (symmetric), accumulated in f32 (integers in
    their own type), in rank order."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    first = st.load(x + offs, 0, peer_bases, cur_rank, mask=m)
    acc = first.to(tl.float32) if first.dtype.is_floating() else first
    for t in range(1, n_ranks):
        v = st.load(x + offs, t, peer_bases, cur_rank, mask=m)
        acc += v.to(tl.float32) if v.dtype.is_floating() else v
    tl.store(out + offs, acc.to(out.dtype.element_ty), mask=m)


@triton.jit
def allgather_kernel(out, x, n, peer_bases, cur_rank, n_ranks: tl.constexpr,
                     BLOCK: tl.constexpr):
    """Block cur_rank of every rank's out (symmetric, n_ranks * n elements) = this rank's x."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m)
    for t in range(0, n_ranks):
        st.store(out + cur_rank * n + offs, v, t, peer_bases, cur_rank, mask=m)


def oneshot_allreduce(ctx, x, out, block=1024):
    """out = the sum of every rank's x; x is symmetric (any provider), out any local array."""
    xmap = ctx.get_symmetric_address_map(x)
    n = _count(x)
    ctx.barrier()
    oneshot_allreduce_kernel[(triton.cdiv(n, block),)](out, x, n, xmap.peer_bases,
                                                       xmap.local_rank, xmap.world_size,
                                                       BLOCK=block)
    ctx.barrier()
    return out


def allgather(ctx, x, out, block=1024):
    """out[r * n:(r + 1) * n] = rank r's x; out is symmetric (any provider)."""
    omap = ctx.get_symmetric_address_map(out)
    n = _count(x)
    ctx.barrier()
    allgather_kernel[(triton.cdiv(n, block),)](out, x, n, omap.peer_bases, omap.local_rank,
                                               omap.world_size, BLOCK=block)
    ctx.barrier()
    return out
