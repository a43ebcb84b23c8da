# SPDX-License-Identifier: MIT
"""Maps of a Context: finding a registration's map from any view, binding, and memory someone
else allocated (imports, foreign peer tables, torch symmetric memory); a base class of
Context."""
import ctypes
from typing import Any, Optional, Sequence

from ._arrays import address, is_torch
from ._comm import contiguous, nbytes_of
from ._lib import STATUS, SymaddrError, int_of
from ._lib import error as _err
from ._lifetime import Life, Registration
from ._maps import AddressMap, SymmetricBuffer


def _word(v, role, what):
    """v as the unsigned 64-bit int that register passes to C (an int or NumPy's), else
    INVALID_ARG: ctypes would wrap -1 to 2^64 - 1 (a peer address a kernel then follows)."""
    w = int_of(v, ctypes.c_uint64)
    if w is None:
        raise _err("SYMADDR_ERR_INVALID_ARG", "register: %s=%r: pass %s, an int from 0 to "
                   "2^64 - 1" % (role, v, what))
    return w


class Registrations:
    """get_symmetric_address_map, bind, import_, register and unregistration (a base class
    of Context)."""

    def get_symmetric_address_map(self, a: Any) -> AddressMap:
        """The AddressMap of the registration that holds a (an array, a view at any offset, or
        an address): its allocation's root map, whoever registered it."""
        self._open()
        addr = address(a, "get_symmetric_address_map")
        if self._lifetimes.pending:
            self._freed_at(addr)
        st, m = self._lookup(addr)
        if st == STATUS["SYMADDR_ERR_NOT_FOUND"]:
            raise _err("SYMADDR_ERR_NOT_FOUND", "0x%x is in no registration of this context: "
                       "allocate it with allocate_symmetric(), or register it with import_() "
                       "or register()" % addr)
        self._check(st)
        reg = self._regs.get(m)
        if reg is None:
            raise _err("SYMADDR_ERR_NOT_FOUND", "0x%x is registered, but not through this "
                       "Python context" % addr)
        return reg.amap

    def bind(self, a: Any) -> SymmetricBuffer:
        """SymmetricBuffer(ptr=a, peer_bases, capabilities, local_rank): a bound to its map,
        one kernel argument for the symaddr.triton buffer_* functions."""
        address(a, "bind")
        amap = self.get_symmetric_address_map(a)
        return SymmetricBuffer(a, amap.peer_bases, amap.capabilities, amap.local_rank)

    def _register(self, out, base, nbytes, what, torch_kind, owner):
        life = Life(base, nbytes, what)
        key = out.value
        reg = Registration(None, life, self._release_registration, base, "registration", key)
        reg.owner = None if isinstance(owner, int) else owner
        reg.amap = AddressMap(self, key, reg, torch_kind)
        self._regs[key] = reg
        self._registrations_changed()
        return reg.amap

    def _release_registration(self, reg):
        self._registrations_changed()
        self._check(self._lib.symaddr_unregister(self._h, ctypes.c_void_p(reg.key)))
        reg.owner = None

    def import_(self, a: Any) -> AddressMap:
        """Register an array of the backend's plain allocator (empty_local(), cudaMalloc,
        torch's caching allocator: an interior pointer is fine) as symmetric (collective); its
        map's unregister() forgets it. The registration holds a until the library releases it
        (after unregister(), once no rank reaches its memory), so that its allocator cannot
        hand that memory to another array meanwhile."""
        h = self._open()
        contiguous(a, "import_")
        addr, nbytes = address(a, "import_"), nbytes_of(a)
        if self._lifetimes.pending or self._lifetimes.local:
            self._lifetimes.reap()
            self._freed_at(addr)
        out = ctypes.c_void_p()
        st = self._lib.symaddr_import(h, ctypes.c_void_p(addr), nbytes, ctypes.byref(out))
        try:
            self._check(st)
        except SymaddrError as e:
            if e.name != "SYMADDR_ERR_NOT_SHAREABLE":
                raise
            raise SymaddrError(st, "%s; from Python: %s" % (e, (
                "ctx.empty_local(shape, dtype)" if self.backend == "cpu" else
                "a torch tensor of the CUDA or HIP caching allocator, or ctx.empty_local("
                "shape, dtype)"))) from None
        return self._register(out, addr, nbytes, "an import of %d bytes" % nbytes, is_torch(a),
                              a)

    def register(self, ptr: Any, nbytes: int, peer_ptrs: Sequence[int],
                 caps: Optional[int] = None) -> AddressMap:
        """Register nbytes at ptr (an int or an array) whose copy on rank r is at peer_ptrs[r]
        (0: unreachable): memory another library owns (MPI windows, OpenSHMEM, NVSHMEM, torch
        symmetric memory). Collective. An array or tensor passed as ptr is held until the
        library releases the registration."""
        h = self._open()
        torch_kind, owner = is_torch(ptr), ptr
        ptr = _word(address(ptr, "register", "ptr"), "ptr", "an address")
        nbytes = _word(nbytes, "nbytes", "a count of bytes")
        peers = [_word(p, "peer_ptrs[%d]" % i, "an address (0: unreachable)")
                 for i, p in enumerate(peer_ptrs)]
        if len(peers) != self.size:
            raise _err("SYMADDR_ERR_INVALID_ARG", "peer_ptrs has %d entries, the context %d "
                       "ranks" % (len(peers), self.size))
        cap = self._lib.abi["capability"]
        if caps is None:
            caps = cap["load_store"] | cap["atomics"]
        caps = _word(caps, "caps", "a sum of capability bits (%s)" % ", ".join(
            "%s=%d" % kv for kv in cap.items()))
        if self._lifetimes.pending or self._lifetimes.local:
            self._lifetimes.reap()
        table = (ctypes.c_uint64 * self.size)(*peers)
        out = ctypes.c_void_p()
        self._check(self._lib.symaddr_register_peer_table(
            h, ctypes.c_void_p(ptr), nbytes, table, caps, ctypes.byref(out)))
        return self._register(out, ptr, nbytes, "a foreign table of %d bytes" % nbytes,
                              torch_kind, owner)

    def register_tensor(self, tensor: Any, peer_ptrs: Sequence[int], **kw: Any) -> AddressMap:
        """Any contiguous array plus the addresses of its peers' copies."""
        contiguous(tensor, "register_tensor")
        return self.register(tensor, nbytes_of(tensor), peer_ptrs, **kw)

    def register_symm_mem(self, tensor: Any, handle: Any, **kw: Any) -> AddressMap:
        """A torch symmetric-memory tensor and its rendezvous handle: the handle's
        buffer_ptrs is the table of its whole buffer, so every view of it translates."""
        if not all(hasattr(handle, k) for k in ("world_size", "rank", "buffer_ptrs",
                                                "buffer_size")):
            raise _err("SYMADDR_ERR_INVALID_ARG", "register_symm_mem: handle is a %s, not a "
                       "torch symmetric-memory handle: pass torch.distributed."
                       "_symmetric_memory.rendezvous(tensor, group)'s" % type(handle).__name__)
        if handle.world_size != self.size or handle.rank != self.rank:
            raise _err("SYMADDR_ERR_MISMATCH", "the torch group (rank %d of %d) must be the "
                       "symaddr context (rank %d of %d), in the same order"
                       % (handle.rank, handle.world_size, self.rank, self.size))
        base = handle.buffer_ptrs[handle.rank]
        if not base <= tensor.data_ptr() < base + handle.buffer_size:
            raise _err("SYMADDR_ERR_OUT_OF_BOUNDS", "the tensor does not lie in the handle's "
                       "buffer")
        amap = self.register(base, handle.buffer_size, handle.buffer_ptrs, **kw)
        amap._torch = True
        self._regs[amap._addr].owner = (tensor, handle)
        return amap

    def _unregister(self, amap):
        self._open()
        key = amap._addr
        reg = self._regs.get(key)
        if reg is None or reg.amap is not amap:
            amap._life.check()
            raise _err("SYMADDR_ERR_INVALID_MAP", "this map is not a registration of this "
                       "context")
        if reg.kind == "allocation":
            raise _err("SYMADDR_ERR_INVALID_ARG", "an allocation's map goes with "
                       "Context.free(array), not unregister()")
        del self._regs[key]
        reg.end("unregistered")
        self._registrations_changed()  # no plan keeps its table, nor takes it
        self._lifetimes.end(reg)
        if self.validating:
            self._poison(reg)
        self._lifetimes.reap()  # at once, unless a rank still holds a view of its table
