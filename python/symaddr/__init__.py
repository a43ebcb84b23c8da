# SPDX-License-Identifier: MIT
"""symaddr from Python: symmetric allocations with their address maps, imports and foreign
peer tables, the collectives and put/get, over NumPy arrays (cpu backend) and torch tensors
(any backend), and Triton device functions over pointer + table (symaddr.triton).

    from mpi4py import MPI
    import torch, symaddr

    ctx = symaddr.Context()                                     # MPI_COMM_WORLD
    src, src_map = ctx.allocate_symmetric((N,), dtype=torch.float32)
    dst, dst_map = ctx.allocate_symmetric((N,), dtype=torch.float32)
    put_kernel[grid](src, dst, dst_map.peer_bases, N, peer,
                     CUR_RANK=dst_map.local_rank, BLOCK=1024)

`dst_map.peer_bases` is the library's own device-resident table of the allocation (int64,
world_size entries, zero-copy): peer_bases[r] is where this process reaches rank r's copy,
peer_bases[local_rank] == allocation_base, 0 where rank r is not reachable by loads and stores.

Memory stays mapped while Python reaches it: arrays and tensors are plain NumPy arrays and
torch tensors, and free() or close() releases the memory once no rank holds an array, view or
table of it (symaddr._lifetime). Every failure raises SymaddrError with the status (.status, .name) and a message that says what
to do. libsymaddr is the one the package carries (pip install .), else $SYMADDR_LIB, else
pkg-config's symaddr, else the dynamic loader's libsymaddr.so.0.
"""
from ._lib import STATUS, SymaddrError, load, version
from ._maps import AddressMap, Map, SymmetricBuffer
from ._context import Context
from ._comm import add_collectives as _add_collectives

__all__ = ["Context", "AddressMap", "SymmetricBuffer", "SymaddrError", "load", "version",
           "Map", "STATUS"]


def __getattr__(name):
    if name == "__version__":  # the library's, read when asked (import needs no library)
        return "%d.%d.%d" % version()
    if name == "capability":  # SYMADDR_CAP_* bits by name ("load_store", "atomics", ...)
        return dict(load().abi["capability"])
    raise AttributeError("module 'symaddr' has no attribute %r" % name)


try:
    _add_collectives(Context, load())
except SymaddrError:
    pass  # no library here yet: Context() then reports it
