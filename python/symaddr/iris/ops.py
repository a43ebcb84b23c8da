# SPDX-License-Identifier: MIT
"""Iris's fused ops (`shmem.ops.matmul_all_reduce(output, A, B)`, or `iris.ops.*(shmem, ...)`)
on symaddr.ops' kernels, with Iris's names, argument order and shapes:

    matmul_all_reduce(output (M, N), A (M, K), B (K, N))      output = sum over ranks of A @ B
    all_gather_matmul(output (M, N), A_sharded (M, K_local), B (K, N))
                                        output = [every rank's A_sharded along K] @ B
    matmul_all_gather(output (world * M, N), A (M, K), B (K, N))
                                        output = every rank's A @ B stacked along M
    matmul_reduce_scatter(output (M, N / world), A (M, K), B (K, N))
                                        output = this rank's columns of sum over ranks of A @ B

bias (N,) is added once, to the result (Iris's matmul_all_reduce leaves it out). config and
workspace are accepted and change nothing: symaddr's kernels pick their own tiles and keep their
buffers in the context. matmul_all_gather runs unfused (the GEMM, then the library's
all-gather; symaddr has no fused kernel for it). async_op=False waits for the result (not while
the stream is being captured), True returns at once, stream-ordered. Each returns workspace."""
from typing import Any

import torch

from symaddr import ops as _ops

FusedConfig = dict  # Iris's tuning record: accepted, unused (symaddr's kernels pick their own)


class FusedWorkspace:
    """Iris's workspace: symaddr keeps its buffers in the context, so this holds nothing."""


def _finish(shmem: Any, output: Any, result: Any, bias: Any, async_op: bool) -> None:
    if result is not output:
        output.copy_(result)
    if bias is not None:
        output.add_(bias)
    shmem.ccl._done(async_op)


def matmul_all_reduce(shmem: Any, output_tensor: Any, A: Any, B: Any, bias: Any = None,
                      async_op: bool = False, config: Any = None, workspace: Any = None) -> Any:
    """output = sum over ranks of A @ B (+ bias once); output any memory."""
    out = output_tensor if output_tensor.is_contiguous() else None
    _finish(shmem, output_tensor, _ops.matmul_all_reduce(shmem.context, A, B, out=out), bias,
            async_op)
    return workspace


def all_gather_matmul(shmem: Any, output_tensor: Any, A_sharded: Any, B: Any, bias: Any = None,
                      async_op: bool = False, config: Any = None, workspace: Any = None) -> Any:
    """output (M, N) = every rank's A_sharded (M, K_local) side by side along K, @ B (K, N)."""
    _, (out,) = _ops.all_gather_matmul(shmem.context, A_sharded, [B], gather_dim=1,
                                       return_A=False)
    _finish(shmem, output_tensor, out, bias, async_op)
    return workspace


def matmul_all_gather(shmem: Any, output_tensor: Any, A: Any, B: Any, bias: Any = None,
                      async_op: bool = False, config: Any = None, workspace: Any = None) -> Any:
    """output (world * M, N) = every rank's A @ B (+ bias) stacked along M (unfused)."""
    local = torch.matmul(A, B)
    if bias is not None:
        local = local + bias
    shmem.context.allgather(shmem.as_symmetric(local.contiguous()), output_tensor)
    shmem.ccl._done(async_op)
    return workspace


def matmul_reduce_scatter(shmem: Any, output_tensor: Any, A: Any, B: Any, bias: Any = None,
                          async_op: bool = False, config: Any = None,
                          workspace: Any = None) -> Any:
    """output (M, N / world) = this rank's columns of the sum over ranks of A @ B (+ bias's
    columns once)."""
    ctx = shmem.context
    out = _ops.matmul_reduce_scatter(ctx, A, B, "sum", scatter_dim=1)
    n = out.shape[1]
    _finish(shmem, output_tensor, out, None if bias is None else
            bias[ctx.rank * n:(ctx.rank + 1) * n], async_op)
    return workspace


class OpsNamespace:
    """shmem.ops: the ops above with this Iris object filled in."""

    def __init__(self, shmem: Any) -> None:
        self._shmem = shmem

    def matmul_all_reduce(self, output_tensor, A, B, bias=None, async_op=False, config=None,
                          workspace=None):
        """See symaddr.iris.ops.matmul_all_reduce."""
        return matmul_all_reduce(self._shmem, output_tensor, A, B, bias, async_op, config,
                                 workspace)

    def all_gather_matmul(self, output_tensor, A_sharded, B, bias=None, async_op=False,
                          config=None, workspace=None):
        """See symaddr.iris.ops.all_gather_matmul."""
        return all_gather_matmul(self._shmem, output_tensor, A_sharded, B, bias, async_op,
                                 config, workspace)

    def matmul_all_gather(self, output_tensor, A, B, bias=None, async_op=False, config=None,
                          workspace=None):
        """See symaddr.iris.ops.matmul_all_gather."""
        return matmul_all_gather(self._shmem, output_tensor, A, B, bias, async_op, config,
                                 workspace)

    def matmul_reduce_scatter(self, output_tensor, A, B, bias=None, async_op=False, config=None,
                              workspace=None):
        """See symaddr.iris.ops.matmul_reduce_scatter."""
        return matmul_reduce_scatter(self._shmem, output_tensor, A, B, bias, async_op, config,
                                     workspace)


__all__ = ["FusedConfig", "FusedWorkspace", "OpsNamespace", "matmul_all_reduce",
           "all_gather_matmul", "matmul_all_gather", "matmul_reduce_scatter"]
