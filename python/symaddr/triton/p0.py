# SPDX-License-Identifier: MIT
"""The seed's P0 kernel: the put every allocator ships, written once over pointer + table, as
the allocator-agnostic boundary's thread writes it. examples/triton_put.py runs it, and
`python -m symaddr.bench put` times it against symaddr_put from an installed package."""
import triton
import triton.language as tl


@triton.jit
def put_kernel(src,
               dst, dst_peer_bases,
               n_elements,
               target_rank,
               CUR_RANK: tl.constexpr,
               BLOCK: tl.constexpr):
    """Rank target_rank's copy of dst[0:n_elements] = this rank's src, translated through
    dst's own table: two loads of the table, however many elements follow."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    local_base = tl.load(dst_peer_bases + CUR_RANK)
    remote_base = tl.load(dst_peer_bases + target_rank)
    remote_dst = (dst.to(tl.pointer_type(tl.int8), bitcast=True)
                  + (remote_base - local_base)).to(dst.dtype, bitcast=True)
    tl.store(remote_dst + offs, tl.load(src + offs, mask=mask), mask=mask)
