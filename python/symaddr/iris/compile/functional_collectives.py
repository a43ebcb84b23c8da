# SPDX-License-Identifier: MIT
"""Iris's functional collectives for torch.compile, on symaddr's torch custom ops:

    from symaddr.iris.compile import functional_collectives as fc
    fc.setup(shmem)                          # the Iris object whose ranks the ops span
    y = torch.ops.iris.all_reduce(x)         # a new tensor: the sum over the ranks
    g = torch.ops.iris.all_gather(x, world_size)      # along dimension 0
    s = torch.ops.iris.reduce_scatter(x, world_size)  # the sum, this rank's rows

(and fc.all_reduce(x), fc.all_gather(x), fc.reduce_scatter(x), the same calls eagerly). Each
op has a fake form, so torch.compile traces a model that calls them with no graph break, and
runs torch.ops.symaddr's op of the same name over setup's object: any tensor (a plain one is
staged through the context's workspace), every dtype symaddr's collectives take, captured by
CUDA graphs. world_size must be the object's rank count. config is Iris's ccl Config: taken,
with no effect on what runs (symaddr's host collectives)."""
from typing import Any, Optional

import torch

from symaddr import ops as _ops

_setup = {}  # "group": torch.ops.symaddr's group name of setup's object; "size": its ranks


class CompileContext:
    """What setup() made: the Iris object, its config, and the group name the ops use."""

    def __init__(self, shmem: Any, config: Any, group: str) -> None:
        self.shmem, self.config, self.group = shmem, config, group


def setup(shmem: Any, config: Optional[Any] = None) -> CompileContext:
    """Make torch.ops.iris.* run over shmem's ranks (an Iris object of symaddr.iris); the last
    setup wins, as Iris's."""
    ctx = shmem.context
    group = _ops.group_name(ctx)
    _setup.update(group=group, size=ctx.size)
    return CompileContext(shmem, config, group)


def _group(call: str, world_size: Optional[int] = None) -> str:
    group = _setup.get("group")
    if group is None:
        raise RuntimeError("torch.ops.iris.%s: call iris.compile.functional_collectives."
                           "setup(shmem) first" % call)
    if world_size is not None and world_size != _setup["size"]:
        raise ValueError("torch.ops.iris.%s: world_size %d, but setup's Iris object has %d "
                         "ranks" % (call, world_size, _setup["size"]))
    return group


_library = torch.library.Library("iris", "DEF")  # the definitions live as long as this object
_library.define("all_reduce(Tensor x) -> Tensor")
_library.define("all_gather(Tensor x, int world_size) -> Tensor")
_library.define("reduce_scatter(Tensor x, int world_size) -> Tensor")


def _all_reduce(x):
    return torch.ops.symaddr.all_reduce(x, "sum", _group("all_reduce"))


def _all_gather(x, world_size):
    return torch.ops.symaddr.all_gather(x, _group("all_gather", world_size))


def _reduce_scatter(x, world_size):
    return torch.ops.symaddr.reduce_scatter(x, "sum", _group("reduce_scatter", world_size))


for _name, _fn in (("all_reduce", _all_reduce), ("all_gather", _all_gather),
                   ("reduce_scatter", _reduce_scatter)):
    _library.impl(_name, _fn, "CompositeExplicitAutograd")
torch.library.register_fake(
    "iris::all_reduce", lambda x: torch.empty_like(x, memory_format=torch.contiguous_format),
    lib=_library)
torch.library.register_fake(
    "iris::all_gather", lambda x, world_size: x.new_empty((world_size * x.shape[0],) +
                                                          tuple(x.shape[1:])), lib=_library)
torch.library.register_fake(
    "iris::reduce_scatter", lambda x, world_size: x.new_empty((x.shape[0] // world_size,) +
                                                              tuple(x.shape[1:])), lib=_library)


def all_reduce(x: torch.Tensor) -> torch.Tensor:
    """torch.ops.iris.all_reduce(x): the sum over setup's ranks, a new tensor."""
    return torch.ops.iris.all_reduce(x)


def all_gather(x: torch.Tensor) -> torch.Tensor:
    """torch.ops.iris.all_gather(x, world_size): every rank's x along dimension 0."""
    return torch.ops.iris.all_gather(x, _setup.get("size") or 1)


def reduce_scatter(x: torch.Tensor) -> torch.Tensor:
    """torch.ops.iris.reduce_scatter(x, world_size): the sum, this rank's part of dim 0."""
    return torch.ops.iris.reduce_scatter(x, _setup.get("size") or 1)


__all__ = ["CompileContext", "setup", "all_reduce", "all_gather", "reduce_scatter"]
