# SPDX-License-Identifier: MIT
"""A Context's memory: symmetric allocations (allocate_symmetric, free) and local ones
(empty_local, free_local), handed out as arrays of the backend's kind (a base class of
Context; its tables of registrations are the Context's)."""
import ctypes
import warnings
import weakref
from typing import Any, Sequence, Tuple, Union

from . import _arrays
from ._lib import STATUS, SymaddrError
from ._lib import error as _err
from ._lifetime import Life, Registration
from ._maps import AddressMap

Shape = Union[int, Sequence[int]]


class Memory:
    """Allocation and release of a Context's memory, and the arrays it hands out."""

    # ---- arrays of the backend's kind ------------------------------------------------------

    def _device(self):
        """torch's name of the context's device: its tensors are made there, never copied."""
        return "cpu" if self.backend == "cpu" else "cuda:%d" % self.device

    def _array(self, addr, shape, dtype, reg, torch_kind=None):
        """shape elements of dtype at addr, without a copy: a torch tensor for a torch dtype,
        else a NumPy array (cpu backend only). reg keeps a weak reference to its exporter."""
        if torch_kind is None:
            torch_kind = _arrays.torch_dtype_of(dtype) is not None
        if torch_kind:
            a, exporter = _arrays.torch_tensor(addr, shape, dtype, self._device())
        elif self.backend != "cpu":
            raise _err("SYMADDR_ERR_INVALID_ARG", "%s memory is on the GPU: pass a torch dtype "
                       "(torch.float32, ...), not %r" % (self.backend, dtype))
        else:
            a, exporter = _arrays.host_array(addr, shape, dtype, reg.life)
        reg.exported(exporter)
        return a

    def _itemsize(self, dtype):
        size = self._itemsizes.get(dtype)
        if size is None:
            if _arrays.torch_dtype_of(dtype) is not None:
                import torch
                size = torch.empty(0, dtype=dtype).element_size()
            else:
                size = _arrays.numpy_dtype(dtype).itemsize
            self._itemsizes[dtype] = size
        return size

    def _table(self, addr, n, reg, torch_kind):
        """n int64 entries of a table at addr (device memory on GPU backends), zero-copy."""
        if torch_kind or self.backend != "cpu":
            import torch
            return self._array(addr, (n,), torch.int64, reg, True)
        return self._array(addr, (n,), "int64", reg, False)

    def _nbytes(self, shape, dtype):
        count = 1
        for n in shape:
            count *= n
        nbytes = count * self._itemsize(dtype)
        if nbytes >= 1 << 63:
            raise _err("SYMADDR_ERR_INVALID_SIZE", "shape %s of %s is %d bytes: too large" % (
                shape, dtype, nbytes))
        return nbytes

    def _freed_at(self, addr):
        """Raise INVALID_MAP when addr lies in a registration this context ended but the
        library still holds (its memory stays mapped for the views Python keeps)."""
        reg = self._lifetimes.ended_at(addr)
        if reg is not None:
            reg.life.check()

    # ---- memory ----------------------------------------------------------------------------

    def allocate_symmetric(self, shape: Shape, dtype: Any,
                           provider: str = "ipc") -> Tuple[Any, AddressMap]:
        """A symmetric allocation (collective): the array (a torch tensor for a torch dtype, on
        the GPU on GPU backends; a NumPy array for a NumPy dtype on the cpu backend) and its
        AddressMap. provider: "ipc" (one allocation per call), "heap" (the context's heap: the
        map's table is the allocation's own, bounded to it, and the context-wide heap_bases
        covers every heap allocation) or "vmm". An allocation taken back from
        retention or the heap keeps what its last user left: clear it if you need zeros. Free
        it with free()."""
        h = self._open()
        shape = _arrays.shape_tuple(shape)
        kind = self._lib.abi["provider"].get(provider) if isinstance(provider, str) else None
        if kind is None:
            raise self._not_allocating(provider, "is not a symaddr provider")
        nbytes = self._nbytes(shape, dtype)
        lt = self._lifetimes
        if lt.local:
            lt.reap_local()
        if lt.pending and lt.due():
            lt.reap()
        prov = self._providers.get(kind)
        if prov is None:
            prov = ctypes.c_void_p()
            st = self._lib.symaddr_provider_get(h, kind, ctypes.byref(prov))
            if st == STATUS["SYMADDR_ERR_INVALID_ARG"]:  # a provider of imports
                raise self._not_allocating(provider, "cannot allocate (import_() and "
                                           "register() make its maps)")
            self._check(st)
            self._providers[kind] = prov
        # out-parameters of the context's own (its collective calls are one thread's at a time)
        out_ptr, out_map = self._out
        st = self._lib.symaddr_symmetric_alloc(prov, nbytes, out_ptr, out_map)
        if st == STATUS["SYMADDR_ERR_NO_MEMORY"] and lt.pending:
            lt.reap(collect=True)  # every rank got NO_MEMORY: release what nobody reaches
            st = self._lib.symaddr_symmetric_alloc(prov, nbytes, out_ptr, out_map)
        if st:
            self._check(st)
        addr, key = out_ptr._obj.value, out_map._obj.value
        life = Life(addr, nbytes, ("a %s allocation of %d bytes at 0x%x", provider, nbytes,
                                   addr))
        reg = Registration(None, life, self._release_allocation, addr, "allocation", key)
        torch_kind = _arrays.torch_dtype_of(dtype) is not None
        try:
            reg.amap = AddressMap(self, key, reg, torch_kind)
            a = self._array(addr, shape, dtype, reg, torch_kind)
            reg.root = weakref.ref(a)  # free(a) knows its own array without its address
            reg.provider = prov
        except SymaddrError:
            self._lib.symaddr_symmetric_free(prov, addr)
            raise
        self._regs[key] = reg
        self._by_base[addr] = reg
        self._registrations_changed()
        return a, reg.amap

    def _not_allocating(self, provider, why):
        """INVALID_ARG for allocate_symmetric's provider, naming those that allocate: the
        library's providers that symaddr_provider_get does not refuse as INVALID_ARG (vmm on
        the cpu backend is one: its own refusal, UNSUPPORTED, says why)."""
        can = []
        for name, kind in self._lib.abi["provider"].items():
            p = ctypes.c_void_p()
            if self._lib.symaddr_provider_get(self._h, kind, ctypes.byref(p)) != \
                    STATUS["SYMADDR_ERR_INVALID_ARG"]:
                can.append('"%s"' % name)
        return _err("SYMADDR_ERR_INVALID_ARG", "allocate_symmetric: provider %r %s: pass one "
                    "of %s" % (provider, why, ", ".join(can)))

    def _release_allocation(self, reg):
        self._freed.pop(reg.base, None)
        self._registrations_changed()
        self._unpoison(reg)
        self._check(self._lib.symaddr_symmetric_free(reg.provider, reg.base))

    def allocate(self, numel: int, dtype: Any, provider: str = "ipc") -> Tuple[Any, AddressMap]:
        """allocate_symmetric((numel,), dtype, provider): the name of 0.1.0."""
        warnings.warn("Context.allocate(numel, ...) is Context.allocate_symmetric(shape, ...)",
                      DeprecationWarning, stacklevel=2)
        return self.allocate_symmetric((numel,), dtype, provider)

    def empty(self, shape: Shape, dtype: Any, provider: str = "ipc") -> Any:
        """allocate_symmetric()'s array alone (get_symmetric_address_map finds its map)."""
        return self.allocate_symmetric(shape, dtype, provider)[0]

    def free(self, a: Any) -> None:
        """Free an allocation (collective): a is the array allocate_symmetric() returned, or
        its AddressMap. Its map refuses use at once, and so do the collectives, put/get and
        kernel launches given its memory; the library releases the memory once no rank
        reaches it from Python (until then a view kept reads the freed allocation's own
        memory, never another's)."""
        self._open()
        life = getattr(a, "_symaddr_life", None) if _arrays.HostArray is not None and \
            isinstance(a, _arrays.HostArray) else None
        reg = self._by_base.get(life.base) if life is not None else None
        if reg is not None and reg.root is not None and reg.root() is a:
            addr = life.base  # the array allocate_symmetric gave: no address to compute
        elif isinstance(a, AddressMap):
            # the map's own registration, never whatever lives at its address now: a stale
            # map once freed the allocation made after its own was released
            if a._ctx is not self:
                raise _err("SYMADDR_ERR_INVALID_MAP", "free: this map is of another context: "
                           "free it with the context that made it")
            if not a._life.alive:
                raise self._double_free(a._reg)
            if a._reg.kind != "allocation":
                raise _err("SYMADDR_ERR_INVALID_ARG", "free: this map is of %s: unregister it "
                           "with its unregister()" % a._life.what)
            addr = a._life.base
        else:
            addr = _arrays.address(a, "free", checked=False)
            # an array, view or table of a registration that ended: its memory stays mapped
            # while it is reached, so nothing else lives there; whatever it is, freed already
            dead = life if life is not None and not life.alive else None
            ended = self._lifetimes.ended_at(addr) if self._lifetimes.pending else None
            if dead is not None or ended is not None:
                raise self._double_free(ended if ended is not None else self._freed.get(
                    dead.base), dead)
        reg = self._by_base.pop(addr, None)
        if reg is None:
            dead = self._freed.get(addr)
            if dead is not None:
                raise self._double_free(dead)
            raise _err("SYMADDR_ERR_INVALID_ARG", "this array does not start an allocation of "
                       "this context; free the array allocate_symmetric() returned")
        self._regs.pop(reg.key, None)
        reg.end("freed by Context.free")
        self._registrations_changed()  # no plan keeps its table, nor takes it
        self._freed[addr] = reg
        self._lifetimes.end(reg)
        if self.validating:
            self._poison(reg)

    def _double_free(self, reg, life=None):
        """DOUBLE_FREE naming what was freed (reg's life, or life where reg is gone)."""
        life = reg.life if reg is not None else life
        return _err("SYMADDR_ERR_DOUBLE_FREE", "%s was %s already; free each allocation once"
                    % (life.what, life.why))

    def empty_local(self, shape: Shape, dtype: Any) -> Any:
        """A plain allocation of this rank (symaddr_mem_alloc): import_() makes it symmetric.
        Free it with free_local()."""
        h = self._open()
        shape = _arrays.shape_tuple(shape)
        nbytes = self._nbytes(shape, dtype)
        ptr = ctypes.c_void_p()
        self._check(self._lib.symaddr_mem_alloc(h, nbytes, ctypes.byref(ptr)))
        life = Life(ptr.value, nbytes, "a local allocation of %d bytes" % nbytes)
        reg = Registration(None, life, self._release_local, ptr.value, "local", None)
        self._plain[ptr.value] = reg
        return self._array(ptr.value, shape, dtype, reg)

    def _release_local(self, reg):
        self._check(self._lib.symaddr_mem_free(self._h, ctypes.c_void_p(reg.base)))

    def free_local(self, a: Any) -> None:
        """Free an array of empty_local() (this rank alone): released once no Python object
        reaches it."""
        self._open()
        reg = self._plain.pop(_arrays.address(a, "free_local", checked=False), None)
        if reg is None:
            raise _err("SYMADDR_ERR_INVALID_ARG", "this array is not from empty_local()")
        reg.end("freed by Context.free_local")
        self._lifetimes.local.append(reg)
        self._lifetimes.reap_local()
