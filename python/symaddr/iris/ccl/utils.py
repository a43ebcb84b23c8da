# SPDX-License-Identifier: MIT
"""Iris's iris.ccl.utils: what a group of ranks is, as its collectives see it."""
import sys
from typing import Any, Tuple

__all__ = ["extract_group_info"]


def extract_group_info(group: Any, shmem: Any) -> Tuple[int, int, int, int, int]:
    """(rank_in_group, rank_global, world_size, rank_start, rank_stride) of this rank in group
    (a torch.distributed group, or None: every rank of shmem), as Iris's: rank_global is
    torch.distributed's rank (shmem's where group is None), rank_start the group's first
    global rank and rank_stride the step between its ranks (1 for a group of one). A group
    whose ranks are not evenly spaced raises ValueError, as Iris's kernels, which address
    ranks as rank_start + i * rank_stride, cannot run it (symaddr.iris's collectives take any
    group)."""
    if group is None:
        rank = shmem.get_rank()
        return rank, rank, shmem.get_num_ranks(), 0, 1
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_initialized():
        raise ValueError("extract_group_info(group=%r): torch.distributed is not initialised"
                         % (group,))
    ranks = list(dist.get_process_group_ranks(group))
    me = dist.get_rank()
    if me not in ranks:
        raise ValueError("extract_group_info: rank %d is not in the group %s" % (me, ranks))
    stride = ranks[1] - ranks[0] if len(ranks) > 1 else 1
    if stride <= 0 or ranks != list(range(ranks[0], ranks[0] + stride * len(ranks), stride)):
        raise ValueError("extract_group_info: the group's ranks %s are not evenly spaced "
                         "(rank_start + i * rank_stride)" % ranks)
    return ranks.index(me), me, len(ranks), ranks[0], stride
