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

Every failure raises SymaddrError with the status (.status, .name) and a message that says what
to do. libsymaddr is the one the package carries (pip install .), else $SYMADDR_LIB, else
pkg-config's symaddr, else the dynamic loader's libsymaddr.so.0.
"""
import collections
import ctypes
import os
import sys
import warnings

from . import _arrays
from ._arrays import Life, address, check_life, is_torch
from ._lib import STATUS, SymaddrError, load, version

__all__ = ["Context", "AddressMap", "SymmetricBuffer", "SymaddrError", "load", "version",
           "Map"]


def __getattr__(name):
    if name == "__version__":  # the library's, read when asked (import needs no library)
        return "%d.%d.%d" % version()
    if name == "capability":  # SYMADDR_CAP_* bits by name ("load_store", "atomics", ...)
        return dict(load().abi["capability"])
    raise AttributeError("module 'symaddr' has no attribute %r" % name)


def _err(name, text):
    return SymaddrError(STATUS[name], text)


def _choice(kind, value, table):
    """table[value], or a SymaddrError naming the allowed values."""
    if value in table:
        return table[value]
    raise _err("SYMADDR_ERR_INVALID_ARG", "%r is not a symaddr %s: use one of %s" % (
        value, kind, ", ".join(sorted(table, key=str))))


def _contiguous(a, what="this call"):
    ok = a.is_contiguous() if is_torch(a) else a.flags["C_CONTIGUOUS"]
    if not ok:
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s takes contiguous memory, but the array has "
                   "strides %s; pass a contiguous view or a copy (np.ascontiguousarray, "
                   "tensor.contiguous())" % (what, tuple(a.stride() if is_torch(a)
                                                         else a.strides)))
    return a


def _nbytes(a):
    return a.numel() * a.element_size() if is_torch(a) else a.nbytes


def _count(a):
    return a.numel() if is_torch(a) else int(a.size)


def _stream_of(a, stream):
    """The raw stream symaddr takes: a torch.cuda.Stream (None: the current one) for CUDA
    tensors, none for host memory."""
    if a is not None and not (is_torch(a) and a.is_cuda):
        return None
    if stream is None:
        import torch
        if not torch.cuda.is_available():
            return None
        stream = torch.cuda.current_stream()
    return ctypes.c_void_p(stream.cuda_stream)


def _comm_handle(comm):
    """The C MPI_Comm of an mpi4py communicator."""
    from mpi4py import MPI
    comm = comm or MPI.COMM_WORLD
    return ctypes.c_void_p(MPI._handleof(comm))


def _shape(shape):
    if type(shape) is int and shape >= 0:  # the common case, first
        return (shape,)
    if type(shape) is tuple and all(type(n) is int and n >= 0 for n in shape):
        return shape
    if isinstance(shape, int):
        shape = (shape,)
    try:
        shape = tuple(int(n) for n in shape)
    except TypeError:
        raise _err("SYMADDR_ERR_INVALID_ARG", "shape must be an int or a tuple of ints, not %r"
                   % (shape,))
    if any(n < 0 for n in shape):
        raise _err("SYMADDR_ERR_INVALID_SIZE", "shape %s has a negative extent" % (shape,))
    return shape


# A plain namedtuple (not a subclass): Triton's compiler reads the field names from the class's
# own _fields, so a kernel can say buf.ptr.
SymmetricBuffer = collections.namedtuple("SymmetricBuffer",
                                         ["ptr", "peer_bases", "capabilities", "local_rank"])
SymmetricBuffer.__doc__ = """A pointer bound to its map, by value (Context.bind): ptr is the
array itself (a pointer in a Triton kernel), peer_bases its map's table, capabilities its
SYMADDR_CAP_* bits, local_rank this rank. Passes to a @triton.jit kernel as one argument; the
symaddr.triton buffer_* functions take it with element offsets."""


class AddressMap:
    """The address map of one registration (an allocation, an import or a foreign table):
    peer_bases, local_rank, world_size, allocation_base, allocation_bytes, capabilities,
    provider. Every view of the registration's memory has this map. It refuses use once the
    registration was freed or unregistered, or its context closed."""

    def __init__(self, ctx, addr, life, torch_kind):
        m = ctx._lib.Map.from_address(addr)  # the library's own struct, read live
        if m.world_size != ctx.size or m.local_rank != ctx.rank:
            raise _err("SYMADDR_ERR_MISMATCH", "libsymaddr's map says rank %d of %d, the context "
                       "%d of %d: use the symaddr package of the library it loads"
                       % (m.local_rank, m.world_size, ctx.rank, ctx.size))
        self._ctx, self._addr, self._s, self._life, self._torch = ctx, addr, m, life, torch_kind
        self._table = None

    def _m(self):
        self._life.check()
        return self._s

    @property
    def peer_bases(self):
        """The library's device-resident table of this registration, zero-copy: int64 (Triton
        and torch handle int64 well and uint64 poorly; addresses fit in 63 bits), world_size
        entries; a torch tensor for torch memory (on the GPU on GPU backends), a NumPy array
        on the cpu backend."""
        m = self._m()
        if self._table is None:
            self._table = self._ctx._table(m.peer_bases, m.world_size, self._life, self._torch)
        return self._table

    @property
    def local_rank(self):
        return self._m().local_rank

    @property
    def world_size(self):
        return self._m().world_size

    @property
    def allocation_base(self):
        """This rank's base of the backing allocation (the root, not a view): peer_bases's own
        entry."""
        return self._m().allocation_base

    @property
    def allocation_bytes(self):
        return self._m().allocation_bytes

    @property
    def capabilities(self):
        """SYMADDR_CAP_* bits (symaddr.capability names them)."""
        return self._m().capabilities

    @property
    def provider(self):
        """Who owns the memory: "heap", "ipc", "vmm", "import" or "foreign"."""
        kind = self._m().provider
        return next(k for k, v in self._ctx._lib.abi["provider"].items() if v == kind)

    @property
    def range_base(self):
        return self._m().range_base

    @property
    def range_bytes(self):
        return self._m().range_bytes

    def reachable(self, rank):
        """Whether this process reaches rank's copy by loads and stores (peer_bases[rank] != 0).
        A kernel that stores to an unreachable peer writes to address 0 + offset: test this
        first, or use symaddr.triton.reachable in the kernel."""
        m = self._m()
        if not 0 <= rank < m.world_size:
            raise _err("SYMADDR_ERR_INVALID_ARG", "rank %d is not in 0..%d" % (
                rank, m.world_size - 1))
        return ctypes.cast(m.host_peer_bases, ctypes.POINTER(ctypes.c_uint64))[rank] != 0

    def check_reachable(self, ranks):
        """Raise SYMADDR_ERR_UNREACHABLE unless every rank of ranks is reachable."""
        far = [r for r in ranks if not self.reachable(r)]
        if far:
            raise _err("SYMADDR_ERR_UNREACHABLE", "ranks %s are on another node of rank %d: "
                       "their peer_bases entries are 0; reach them with put/get or the "
                       "collectives, which go through MPI" % (far, self._ctx.rank))

    def unregister(self):
        """Forget an import or a foreign table (collective); allocations go with free()."""
        self._ctx._unregister(self)

    def __repr__(self):
        if not self._life.alive:
            return "<symaddr AddressMap of %s: %s>" % (self._life.what, self._life.why)
        m = self._s
        return ("<symaddr AddressMap %s: rank %d of %d, allocation 0x%x (%d bytes), caps 0x%x>"
                % (self.provider, m.local_rank, m.world_size, m.allocation_base,
                   m.allocation_bytes, m.capabilities))


Map = AddressMap  # the name of 0.1.0


class _Reg:
    """One registration the context made: its map, life, what frees it, its key (the address
    of the library's symaddr_map_t), and for an allocation the array allocate_symmetric gave."""
    __slots__ = ("amap", "life", "provider", "base", "kind", "key", "root")

    def __init__(self, amap, life, provider, base, kind, key, root=None):
        self.amap, self.life, self.provider, self.base, self.kind = amap, life, provider, base, kind
        self.key, self.root = key, root


class Context:
    """A symaddr context over an MPI communicator (mpi4py; default COMM_WORLD). Settings of
    symaddr_config_t go as keyword arguments (timeout_ms=..., heap_bytes=...); backend is one
    of the library's backend names. close() (or the end of a with block) finalizes it."""

    def __init__(self, comm=None, backend="auto", lib=None, **config):
        self._h = None
        self._lib = lib if lib is not None else load()
        _add_collectives(self._lib)
        self._regs = {}  # address of the library's symaddr_map_t -> _Reg
        self._by_base = {}  # base address of an allocation -> _Reg
        self._plain = {}  # address of an empty_local() array -> its Life
        self._keep = []  # bytes the config points to
        self._itemsizes = {}  # dtype -> bytes of one element
        self._providers = {}  # provider kind -> its handle
        self._out = (ctypes.byref(ctypes.c_void_p()), ctypes.byref(ctypes.c_void_p()))
        cfg = self._lib.Config()
        self._lib.symaddr_config_default(ctypes.byref(cfg))
        cfg.backend = _choice("backend", backend, self._lib.abi["backend"])
        settable = [f for f in self._lib.Config.field_names
                    if f not in ("size", "backend", "logger", "logger_cookie")]
        for k, v in config.items():
            if k not in settable:
                raise _err("SYMADDR_ERR_INVALID_ARG", "Context() has no setting %r: use one of "
                           "%s (symaddr_config_t's fields)" % (k, ", ".join(settable)))
            if k == "debug_file":
                v = str(v).encode()
                self._keep.append(v)
                v = ctypes.cast(ctypes.c_char_p(v), ctypes.c_void_p)
            try:
                setattr(cfg, k, v)
            except TypeError as e:
                raise _err("SYMADDR_ERR_INVALID_ARG", "setting %s=%r: %s" % (k, v, e))
        h = ctypes.c_void_p()
        self._check(self._lib.symaddr_init(_comm_handle(comm), ctypes.byref(cfg),
                                           ctypes.byref(h)))
        self._h = h
        self._life = Life(0, 0, "this context")
        self.rank = self._lib.symaddr_rank(self._h)
        self.size = self._lib.symaddr_size(self._h)
        self.node_rank = self._lib.symaddr_node_rank(self._h)
        self.node_size = self._lib.symaddr_node_size(self._h)
        self.backend = self._lib.symaddr_backend_name(self._lib.symaddr_backend(self._h)).decode()
        self.device = self._lib.symaddr_device(self._h)  # the GPU's ordinal; -1 on the cpu
        self._heap_bases = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _open(self):
        if not self._h:
            raise _err("SYMADDR_ERR_INVALID_ARG", "the context is closed: create a new "
                       "symaddr.Context")
        return self._h

    def _check(self, status):
        if status != 0:
            text = self._lib.symaddr_strerror(status).decode()
            # a context's own message, or this thread's failed init's
            why = (self._lib.symaddr_last_error(self._h or None) or b"").decode()
            if why:
                text = "%s: %s" % (text, why)
            raise SymaddrError(status, text)

    def close(self):
        """Finalize the context (collective). Its arrays and maps refuse use afterwards."""
        if self._h:
            h, self._h = self._h, None
            for reg in list(self._regs.values()):
                reg.life.end("released when its context was closed")
            for life in self._plain.values():
                life.end("released when its context was closed")
            self._life.end("closed")
            self._regs.clear()
            self._by_base.clear()
            self._plain.clear()
            st = self._lib.symaddr_finalize(ctypes.byref(h))
            if st != 0:
                raise SymaddrError(st, self._lib.symaddr_strerror(st).decode())

    # ---- arrays of the backend's kind ------------------------------------------------------

    def _device(self):
        """torch's name of the context's device: its tensors are made there, never copied."""
        return "cpu" if self.backend == "cpu" else "cuda:%d" % self.device

    def _array(self, addr, shape, dtype, life, torch_kind=None):
        """shape elements of dtype at addr, without a copy: a torch tensor for a torch dtype,
        else a NumPy array (cpu backend only)."""
        if torch_kind is None:
            torch_kind = _arrays.torch_dtype_of(dtype) is not None
        if torch_kind:
            return _arrays.torch_tensor(addr, shape, dtype, self._device(), life)
        if self.backend != "cpu":
            raise _err("SYMADDR_ERR_INVALID_ARG", "%s memory is on the GPU: pass a torch dtype "
                       "(torch.float32, ...), not %r" % (self.backend, dtype))
        return _arrays.host_array(addr, shape, dtype, life)

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

    def _table(self, addr, n, life, torch_kind):
        """n int64 entries of a table at addr (device memory on GPU backends), zero-copy."""
        if torch_kind or self.backend != "cpu":
            import torch
            return _arrays.torch_tensor(addr, (n,), torch.int64, self._device(), life)
        return _arrays.host_array(addr, (n,), "int64", life)

    # ---- memory ----------------------------------------------------------------------------

    def allocate_symmetric(self, shape, dtype, provider="ipc"):
        """A symmetric allocation (collective): the array (a torch tensor for a torch dtype, on
        the GPU on GPU backends; a NumPy array for a NumPy dtype on the cpu backend) and its
        AddressMap. provider: "ipc" (one allocation per call), "heap" (the context's heap,
        whose table is the context-wide heap_bases) or "vmm". An allocation taken back from
        retention or the heap keeps what its last user left: clear it if you need zeros. Free
        it with free()."""
        h = self._open()
        shape = _shape(shape)
        kind = self._lib.abi["provider"].get(provider)
        if kind is None:
            _choice("provider", provider, self._lib.abi["provider"])
        count = 1
        for n in shape:
            count *= n
        nbytes = count * self._itemsize(dtype)
        if nbytes >= 1 << 63:
            raise _err("SYMADDR_ERR_INVALID_SIZE", "shape %s of %s is %d bytes: too large" % (
                shape, dtype, nbytes))
        prov = self._providers.get(kind)
        if prov is None:
            prov = ctypes.c_void_p()
            self._check(self._lib.symaddr_provider_get(h, kind, ctypes.byref(prov)))
            self._providers[kind] = prov
        # out-parameters of the context's own (its collective calls are one thread's at a time)
        out_ptr, out_map = self._out
        st = self._lib.symaddr_symmetric_alloc(prov, nbytes, out_ptr, out_map)
        if st:
            self._check(st)
        addr, key = out_ptr._obj.value, out_map._obj.value
        life = Life(addr, nbytes, ("a %s allocation of %d bytes at 0x%x", provider, nbytes,
                                   addr))
        torch_kind = _arrays.torch_dtype_of(dtype) is not None
        try:
            amap = AddressMap(self, key, life, torch_kind)
            a = self._array(addr, shape, dtype, life, torch_kind)
        except SymaddrError:
            self._lib.symaddr_symmetric_free(prov, addr)
            raise
        reg = _Reg(amap, life, prov, addr, "allocation", key, a)
        self._regs[key] = reg
        self._by_base[addr] = reg
        return a, amap

    def allocate(self, numel, dtype, provider="ipc"):
        """allocate_symmetric((numel,), dtype, provider): the name of 0.1.0."""
        warnings.warn("Context.allocate(numel, ...) is Context.allocate_symmetric(shape, ...)",
                      DeprecationWarning, stacklevel=2)
        return self.allocate_symmetric((numel,), dtype, provider)

    def empty(self, shape, dtype, provider="ipc"):
        """allocate_symmetric()'s array alone (get_symmetric_address_map finds its map)."""
        return self.allocate_symmetric(shape, dtype, provider)[0]

    def free(self, a):
        """Free an array that allocate_symmetric() returned (collective). Its views and map
        refuse use afterwards."""
        self._open()
        life = getattr(a, "_symaddr_life", None)
        if life is not None and not life.alive:
            raise _err("SYMADDR_ERR_DOUBLE_FREE", "%s was %s already; free each allocation "
                       "once" % (life.what, life.why))
        reg = self._by_base.get(life.base) if life is not None else None
        if reg is not None and reg.root is a:  # the array allocate_symmetric gave: no lookup
            addr = life.base
        else:
            addr = address(a)
            reg = self._by_base.get(addr)
        if reg is None:
            raise _err("SYMADDR_ERR_INVALID_ARG", "this array does not start an allocation of "
                       "this context; free the array allocate_symmetric() returned")
        del self._by_base[addr]
        self._regs.pop(reg.key, None)
        reg.life.end("freed by Context.free")
        st = self._lib.symaddr_symmetric_free(reg.provider, addr)
        if st:
            self._check(st)

    def empty_local(self, shape, dtype):
        """A plain allocation of this rank (symaddr_mem_alloc): import_() makes it symmetric.
        Free it with free_local()."""
        h = self._open()
        shape = _shape(shape)
        count = 1
        for n in shape:
            count *= n
        nbytes = count * self._itemsize(dtype)
        ptr = ctypes.c_void_p()
        self._check(self._lib.symaddr_mem_alloc(h, nbytes, ctypes.byref(ptr)))
        life = Life(ptr.value, nbytes, "a local allocation of %d bytes" % nbytes)
        self._plain[ptr.value] = life
        return self._array(ptr.value, shape, dtype, life)

    def free_local(self, a):
        self._open()
        addr = address(a)
        if addr not in self._plain:
            raise _err("SYMADDR_ERR_INVALID_ARG", "this array is not from empty_local()")
        self._plain.pop(addr).end("freed by Context.free_local")
        self._check(self._lib.symaddr_mem_free(self._h, ctypes.c_void_p(addr)))

    @property
    def heap_bases(self):
        """The context-wide table of the heap (int64, zero-copy): the legacy table that every
        heap allocation's peer_bases is, for kernels in the heap_bases form
        (symaddr.triton.heap)."""
        self._open()
        if self._heap_bases is None:
            addr = ctypes.cast(self._lib.symaddr_heap_bases_get(self._h), ctypes.c_void_p).value
            self._heap_bases = self._table(addr, self.size, self._life, self.backend != "cpu")
        return self._heap_bases

    # ---- maps --------------------------------------------------------------------------------

    def get_symmetric_address_map(self, a):
        """The AddressMap of the registration that holds a (an array, a view at any offset, or
        an address): its allocation's root map, whoever registered it."""
        h = self._open()
        check_life(a)
        addr = address(a)
        m = ctypes.c_void_p()
        st = self._lib.symaddr_lookup(h, ctypes.c_void_p(addr), ctypes.byref(m))
        if st == STATUS["SYMADDR_ERR_NOT_FOUND"]:
            raise _err("SYMADDR_ERR_NOT_FOUND", "0x%x is in no registration of this context: "
                       "allocate it with allocate_symmetric(), or register it with import_() "
                       "or register()" % addr)
        self._check(st)
        reg = self._regs.get(m.value)
        if reg is None:
            raise _err("SYMADDR_ERR_NOT_FOUND", "0x%x is registered, but not through this "
                       "Python context" % addr)
        return reg.amap

    def bind(self, a):
        """SymmetricBuffer(ptr=a, peer_bases, capabilities, local_rank): a bound to its map,
        one kernel argument for the symaddr.triton buffer_* functions."""
        amap = self.get_symmetric_address_map(a)
        return SymmetricBuffer(a, amap.peer_bases, amap.capabilities, amap.local_rank)

    def _register(self, out, base, nbytes, what, torch_kind):
        life = Life(base, nbytes, what)
        amap = AddressMap(self, out.value, life, torch_kind)
        key = out.value
        self._regs[key] = _Reg(amap, life, None, base, "registration", key)
        return amap

    def import_(self, a):
        """Register an array of the backend's plain allocator (empty_local(), cudaMalloc,
        torch's caching allocator: an interior pointer is fine) as symmetric (collective); its
        map's unregister() forgets it."""
        h = self._open()
        check_life(a)
        _contiguous(a, "import_")
        out = ctypes.c_void_p()
        self._check(self._lib.symaddr_import(h, ctypes.c_void_p(address(a)), _nbytes(a),
                                             ctypes.byref(out)))
        return self._register(out, address(a), _nbytes(a), "an import of %d bytes" % _nbytes(a),
                              is_torch(a))

    def register(self, ptr, nbytes, peer_ptrs, caps=None):
        """Register nbytes at ptr (an int or an array) whose copy on rank r is at peer_ptrs[r]
        (0: unreachable): memory another library owns (MPI windows, OpenSHMEM, NVSHMEM, torch
        symmetric memory). Collective."""
        h = self._open()
        torch_kind = is_torch(ptr)
        ptr = address(ptr)
        peers = [int(p) for p in peer_ptrs]
        if len(peers) != self.size:
            raise _err("SYMADDR_ERR_INVALID_ARG", "peer_ptrs has %d entries, the context %d "
                       "ranks" % (len(peers), self.size))
        if caps is None:
            cap = self._lib.abi["capability"]
            caps = cap["load_store"] | cap["atomics"]
        table = (ctypes.c_uint64 * self.size)(*peers)
        out = ctypes.c_void_p()
        self._check(self._lib.symaddr_register_peer_table(
            h, ctypes.c_void_p(ptr), nbytes, table, caps, ctypes.byref(out)))
        return self._register(out, ptr, nbytes, "a foreign table of %d bytes" % nbytes,
                              torch_kind)

    def register_tensor(self, tensor, peer_ptrs, **kw):
        """Any contiguous array plus the addresses of its peers' copies."""
        _contiguous(tensor, "register_tensor")
        return self.register(tensor, _nbytes(tensor), peer_ptrs, **kw)

    def register_symm_mem(self, tensor, handle, **kw):
        """A torch symmetric-memory tensor and its rendezvous handle: the handle's
        buffer_ptrs is the table of its whole buffer, so every view of it translates."""
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
        return amap

    def _unregister(self, amap):
        h = self._open()
        key = amap._addr
        if self._regs.get(key) is None or self._regs[key].amap is not amap:
            amap._life.check()
            raise _err("SYMADDR_ERR_INVALID_MAP", "this map is not a registration of this "
                       "context")
        reg = self._regs[key]
        if reg.kind == "allocation":
            raise _err("SYMADDR_ERR_INVALID_ARG", "an allocation's map goes with "
                       "Context.free(array), not unregister()")
        del self._regs[key]
        reg.life.end("unregistered")
        self._check(self._lib.symaddr_unregister(h, ctypes.c_void_p(amap._addr)))

    # ---- collectives (stream-ordered on a GPU; complete on return on the cpu) -------------

    def _dtype_of(self, a):
        name = str(a.dtype).replace("torch.", "")
        if name not in self._lib.dtypes:
            raise _err("SYMADDR_ERR_INVALID_ARG", "symaddr has no dtype for %s; use one of %s"
                       % (a.dtype, ", ".join(sorted(self._lib.dtypes))))
        return self._lib.dtypes[name]

    def _op(self, op):
        return _choice("reduction op", op, self._lib.abi["redop"])

    def _pair(self, send, recv, send_per_recv, what):
        self._open()
        recv = send if recv is None else recv
        for a in (send, recv):
            check_life(a)
            _contiguous(a, what)
        if send.dtype != recv.dtype:
            raise _err("SYMADDR_ERR_INVALID_ARG", "%s: send is %s, recv %s: pass one dtype"
                       % (what, send.dtype, recv.dtype))
        if _count(send) * send_per_recv[1] != _count(recv) * send_per_recv[0]:
            raise _err("SYMADDR_ERR_INVALID_ARG", "%s: send has %d elements and recv %d; it "
                       "wants %d:%d" % (what, _count(send), _count(recv), *send_per_recv))
        return recv, ctypes.c_void_p(address(send)), ctypes.c_void_p(address(recv))

    def _root(self, root, what):
        if not isinstance(root, int) or not 0 <= root < self.size:
            raise _err("SYMADDR_ERR_INVALID_ARG", "%s: root %r is not a rank of this context "
                       "(0..%d)" % (what, root, self.size - 1))
        return root

    def _collective(self, name, send, recv, op, root, stream):
        """Every collective method (made by _add_collectives): the shape of send and recv
        checked against the library's row, then symaddr_collective_run_at with the file and
        line that called the method, which validation mode compares across ranks."""
        index, flags = self._lib.collectives[name]
        bits = self._lib.abi["collective_flag"]
        per = (self.size if flags & bits["send_all"] else 1,
               self.size if flags & bits["recv_all"] else 1)
        recv, s, r = self._pair(send, recv, per, name)
        if _count(send) % per[0]:
            raise _err("SYMADDR_ERR_INVALID_ARG", "%s: %d elements do not split into %d equal "
                       "parts; pass a multiple of the context's size"
                       % (name, _count(send), per[0]))
        caller = sys._getframe(2)  # the method's caller: _collective <- Context.<name> <- it
        self._check(self._lib.symaddr_collective_run_at(
            self._h, index, s, r, _count(send) // per[0], self._dtype_of(send),
            self._op(op) if flags & bits["reduces"] else 0,
            self._root(root, name) if flags & bits["rooted"] else 0, _stream_of(send, stream),
            os.fsencode(caller.f_code.co_filename), caller.f_lineno))
        return recv

    def barrier(self, stream=None):
        h = self._open()
        self._check(self._lib.symaddr_barrier(
            h, None if self.backend == "cpu" else _stream_of(None, stream)))

    # ---- one-sided ------------------------------------------------------------------------

    def _rma(self, dst, src, target, stream, fn, name):
        self._open()
        for a in (dst, src):
            check_life(a)
            _contiguous(a, name)
        if not isinstance(target, int):
            raise _err("SYMADDR_ERR_INVALID_ARG", "%s: target %r is not a rank (an int)" % (
                name, target))
        local = src if name == "put" else dst
        nbytes = _nbytes(local)
        if _nbytes(dst if name == "put" else src) < nbytes:
            raise _err("SYMADDR_ERR_OUT_OF_BOUNDS", "%s: the symmetric array (%d bytes) is "
                       "smaller than the local one (%d bytes)" % (
                           name, _nbytes(dst if name == "put" else src), nbytes))
        self._check(fn(self._h, ctypes.c_void_p(address(dst)), ctypes.c_void_p(address(src)),
                       nbytes, target, _stream_of(local, stream)))

    def put(self, dst, src, target, stream=None):
        """Copy src (local) into rank target's copy of dst (symmetric); both contiguous."""
        self._rma(dst, src, target, stream, self._lib.symaddr_put, "put")

    def get(self, dst, src, target, stream=None):
        """Copy rank target's copy of src (symmetric) into dst (local); both contiguous."""
        self._rma(dst, src, target, stream, self._lib.symaddr_get, "get")

    def sync(self, stream=None):
        """Wait for the stream's symaddr work (and report a failure any rank met)."""
        h = self._open()
        self._check(self._lib.symaddr_stream_sync(
            h, None if self.backend == "cpu" else _stream_of(None, stream)))


_COLLECTIVE = """def {name}(self, send, recv{recv}{op}{root}, stream=None):
    return self._collective({name!r}, send, recv, {op_arg}, {root_arg}, stream)
"""


def _add_collectives(lib):
    """A method of Context for every collective the library lists (symaddr_collective_info),
    with the signature its C call has: (send, recv[, op][, root], stream); recv defaults to
    None (in place) where send and recv have one shape."""
    bits = lib.abi["collective_flag"]
    for c in lib.abi["collectives"]:
        name, flags = c["name"], c["flags"]
        if name in vars(Context):
            continue
        send_all, recv_all = flags & bits["send_all"], flags & bits["recv_all"]
        reduces, rooted = flags & bits["reduces"], flags & bits["rooted"]
        code = _COLLECTIVE.format(name=name, recv="" if send_all or recv_all else "=None",
                                  op=', op="sum"' if reduces else "",
                                  root=", root=0" if rooted else "",
                                  op_arg="op" if reduces else "None",
                                  root_arg="root" if rooted else "None")
        space = {}
        exec(code, space)  # as collections.namedtuple: a real signature for help() and callers
        fn = space[name]
        shape = ("count: the elements of send and recv; in place when recv is None or send"
                 if not (send_all or recv_all) else
                 "count: send's elements, recv holds size * count; in place when send is this "
                 "rank's block of recv" if not send_all else
                 "count: recv's elements, send holds size * count; in place when recv is this "
                 "rank's block of send" if not recv_all else
                 "send and recv hold size * count elements and must not overlap")
        fn.__doc__ = "%s (%s). Returns recv." % (c["doc"], shape)
        fn.__qualname__ = "Context." + name
        fn.__module__ = __name__
        setattr(Context, name, fn)


try:
    _add_collectives(load())
except SymaddrError:
    pass  # no library here yet: Context() then reports it
