# SPDX-License-Identifier: MIT
"""The put kernel every allocator ships, written once, in Triton (symaddr/triton/p0.py): the
P0 flow of the allocator-agnostic boundary, as its thread writes it. Each rank puts its src into its right
neighbour's dst through dst's address map, then checks what its left neighbour put.

    mpiexec -n 4 python examples/triton_put.py           # GPUs: torch CUDA tensors, compiled
    TRITON_INTERPRET=1 SYMADDR_BACKEND=cpu mpiexec -n 4 python examples/triton_put.py
                                                         # no GPU: Triton's interpreter

Without torch (the cpu backend), the same kernel runs on NumPy arrays over symaddr's shared
memory. Prints "put: ok" on every rank; every rank exits 1 if any rank read a wrong element."""
import os
import sys

from mpi4py import MPI  # first: initialises MPI before symaddr
import triton

import symaddr
from symaddr.triton.p0 import put_kernel  # the kernel, as the P0 thread writes it


def main():
    try:
        import torch
        float32 = torch.float32
    except ImportError:  # the cpu backend without torch: NumPy arrays
        import numpy as np
        torch, float32 = None, np.float32
    provider = symaddr.Context(backend=os.environ.get("SYMADDR_BACKEND", "auto"))
    N = 100003  # odd: the last block is partial
    src, src_map = provider.allocate_symmetric((N,), dtype=float32)
    dst, dst_map = provider.allocate_symmetric((N,), dtype=float32)
    rank, size = dst_map.local_rank, dst_map.world_size
    peer = (rank + 1) % size
    src[:] = 0.5 * (rank + 1)
    dst[:] = -1
    provider.barrier()  # every peer's dst exists and holds -1

    grid = (triton.cdiv(N, 1024),)
    put_kernel[grid](
        src,
        dst, dst_map.peer_bases,   # int64[world_size], device-resident
        N,
        peer,
        CUR_RANK=dst_map.local_rank,
        BLOCK=1024,
    )
    if torch is not None and dst.is_cuda:
        torch.cuda.synchronize()
    provider.barrier()  # every put landed

    left = (rank - 1) % size
    got = dst.cpu().numpy() if torch is not None else dst
    bad = int((got != 0.5 * (left + 1)).sum())
    provider.free(dst)
    provider.free(src)
    provider.close()
    print("put: %s (rank %d, %d elements from rank %d, %d wrong)" % (
        "ok" if bad == 0 else "FAILED", rank, N, left, bad), flush=True)
    # every rank exits 1 when any rank read a wrong element, so mpiexec's status is the run's
    return 1 if MPI.COMM_WORLD.allreduce(bad) else 0


if __name__ == "__main__":
    sys.exit(main())
