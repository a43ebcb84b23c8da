# SPDX-License-Identifier: MIT
"""symaddr from Python: contexts, symmetric allocations, imports and foreign peer tables, the
collectives and put/get, through ctypes over libsymaddr. NumPy arrays on the cpu backend, torch
tensors on cuda (torch symmetric memory included).

    from mpi4py import MPI
    import numpy as np
    import symaddr

    with symaddr.Context(backend="cpu") as ctx:          # MPI_COMM_WORLD
        a, amap = ctx.allocate(1000, np.float32)         # symmetric: every rank's copy
        a[:] = ctx.rank + 1
        ctx.allreduce(a)                                 # in place
        ctx.put(a, a, (ctx.rank + 1) % ctx.size)         # into the right neighbour's copy
        ctx.free(a)

    ctx = symaddr.Context(backend="cuda")                # torch on cuda
    buf = symm_mem.empty(n, dtype=torch.bfloat16, device="cuda")
    m = ctx.register_symm_mem(buf, symm_mem.rendezvous(buf, group))   # torch's peer table
    ctx.allreduce(buf, out)

Every failure raises SymaddrError with the status (.status, a symaddr_status_t) and the
library's message. libsymaddr is found through $SYMADDR_LIB, else pkg-config's symaddr (its
libdir), else the dynamic loader's search for libsymaddr.so.0.
"""
import ctypes
import os
import subprocess

__all__ = ["Context", "Map", "SymaddrError", "load", "version"]

_CAP_LOAD_STORE = 1 << 0
_CAP_ATOMICS = 1 << 1
_PROVIDERS = {"heap": 0, "ipc": 1, "vmm": 2}  # symaddr_provider_kind_t

BACKENDS = {"auto": 0, "cpu": 1, "cuda": 2, "hip": 3}
REDOPS = {"sum": 0, "prod": 1, "min": 2, "max": 3}
# symaddr's dtype names as NumPy and torch spell them
_ARRAY_NAMES = {"float": "float32", "double": "float64", "half": "float16"}
# symaddr_status_t values the module raises itself
_ERR_INVALID_ARG, _ERR_MISMATCH, _ERR_OUT_OF_BOUNDS = -1, -7, -14


class SymaddrError(RuntimeError):
    """A symaddr call failed: .status is the symaddr_status_t, the text is the library's."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class _Config(ctypes.Structure):
    # mirrors symaddr_config_t (include/symaddr/symaddr.h); its size field says whether it
    # still does
    _fields_ = [
        ("size", ctypes.c_size_t),
        ("backend", ctypes.c_int),
        ("device", ctypes.c_int),
        ("heap_bytes", ctypes.c_size_t),
        ("node_size", ctypes.c_int),
        ("validate", ctypes.c_int),
        ("timeout_ms", ctypes.c_uint),
        ("allreduce_algo", ctypes.c_int),
        ("twoshot_bytes", ctypes.c_size_t),
        ("ll_bytes", ctypes.c_size_t),
        ("logger", ctypes.c_void_p),
        ("logger_cookie", ctypes.c_void_p),
        ("lamport_bytes", ctypes.c_size_t),
        ("debug_level", ctypes.c_int),
        ("debug_subsys", ctypes.c_uint),
        ("debug_file", ctypes.c_char_p),
        ("retain_bytes", ctypes.c_size_t),
        ("hip_finegrained", ctypes.c_int),
    ]


class _Map(ctypes.Structure):
    # mirrors symaddr_map_t, which has no size field: Map checks each one against what the
    # context knows (its rank, size and range), so that a layout change is caught
    _fields_ = [
        ("peer_bases", ctypes.c_void_p),
        ("host_peer_bases", ctypes.POINTER(ctypes.c_uint64)),
        ("local_rank", ctypes.c_int),
        ("world_size", ctypes.c_int),
        ("allocation_base", ctypes.c_uint64),
        ("allocation_bytes", ctypes.c_uint64),
        ("capabilities", ctypes.c_uint64),
        ("range_base", ctypes.c_uint64),
        ("range_bytes", ctypes.c_uint64),
        ("error_flag", ctypes.c_void_p),
        ("provider", ctypes.c_int),
    ]


def _library_path():
    """$SYMADDR_LIB, else libsymaddr.so.0 in pkg-config's libdir of symaddr, else the name."""
    if os.environ.get("SYMADDR_LIB"):
        return os.environ["SYMADDR_LIB"]
    try:
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "symaddr"],
                                capture_output=True, text=True, check=True).stdout.strip()
        if libdir and os.path.exists(os.path.join(libdir, "libsymaddr.so.0")):
            return os.path.join(libdir, "libsymaddr.so.0")
    except (OSError, subprocess.CalledProcessError):
        pass
    return "libsymaddr.so.0"


def load(path=None):
    """libsymaddr as a ctypes library with the prototypes this module uses."""
    path = path or _library_path()
    try:
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError as e:
        raise SymaddrError(_ERR_INVALID_ARG, "cannot load %s (%s): set SYMADDR_LIB to the "
                           "library, or PKG_CONFIG_PATH to where symaddr.pc lies" % (path, e))
    vp, st, sz, i = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_int
    mapp = ctypes.POINTER(ctypes.POINTER(_Map))
    protos = {
        "symaddr_config_default": (None, [ctypes.POINTER(_Config)]),
        "symaddr_init": (st, [vp, ctypes.POINTER(_Config), ctypes.POINTER(vp)]),
        "symaddr_finalize": (st, [ctypes.POINTER(vp)]),
        "symaddr_version": (None, [ctypes.POINTER(i)] * 3),
        "symaddr_strerror": (ctypes.c_char_p, [st]),
        "symaddr_last_error": (ctypes.c_char_p, [vp]),
        "symaddr_backend": (i, [vp]),
        "symaddr_backend_name": (ctypes.c_char_p, [i]),
        "symaddr_rank": (i, [vp]),
        "symaddr_size": (i, [vp]),
        "symaddr_provider_get": (st, [vp, i, ctypes.POINTER(vp)]),
        "symaddr_symmetric_alloc": (st, [vp, sz, ctypes.POINTER(vp), mapp]),
        "symaddr_symmetric_free": (st, [vp, vp]),
        "symaddr_mem_alloc": (st, [vp, sz, ctypes.POINTER(vp)]),
        "symaddr_mem_free": (st, [vp, vp]),
        "symaddr_import": (st, [vp, vp, sz, mapp]),
        "symaddr_register_peer_table": (st, [vp, vp, sz, ctypes.POINTER(ctypes.c_uint64),
                                             ctypes.c_uint64, mapp]),
        "symaddr_unregister": (st, [vp, ctypes.POINTER(_Map)]),
        "symaddr_allreduce": (st, [vp, vp, vp, sz, i, i, vp]),
        "symaddr_allgather": (st, [vp, vp, vp, sz, i, vp]),
        "symaddr_reduce_scatter": (st, [vp, vp, vp, sz, i, i, vp]),
        "symaddr_broadcast": (st, [vp, vp, vp, sz, i, i, vp]),
        "symaddr_alltoall": (st, [vp, vp, vp, sz, i, vp]),
        "symaddr_barrier": (st, [vp, vp]),
        "symaddr_put": (st, [vp, vp, vp, sz, i, vp]),
        "symaddr_get": (st, [vp, vp, vp, sz, i, vp]),
        "symaddr_stream_sync": (st, [vp, vp]),
        "symaddr_dtype_name": (ctypes.c_char_p, [i]),
    }
    for name, (res, args) in protos.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    # array dtype name -> symaddr_dtype_t, from the library's own list
    lib.dtypes = {}
    while True:
        name = lib.symaddr_dtype_name(len(lib.dtypes))
        if not name:
            break
        lib.dtypes[_ARRAY_NAMES.get(name.decode(), name.decode())] = len(lib.dtypes)
    return lib


def version(lib=None):
    """The version of the libsymaddr that runs, as (major, minor, patch)."""
    lib = lib or load()
    v = [ctypes.c_int() for _ in range(3)]
    lib.symaddr_version(*[ctypes.byref(x) for x in v])
    return tuple(x.value for x in v)


# ---- arrays: NumPy on the host, torch on a GPU ----------------------------------------------

def _is_torch(a):
    return hasattr(a, "data_ptr") and hasattr(a, "element_size")


def _ptr(a):
    """The address of an array's first element (an int passes as is)."""
    if isinstance(a, int):
        return a
    if _is_torch(a):
        return a.data_ptr()
    return a.__array_interface__["data"][0]


def _nbytes(a):
    return a.numel() * a.element_size() if _is_torch(a) else a.nbytes


def _count(a):
    return a.numel() if _is_torch(a) else a.size


def _contiguous(a):
    if not (a.is_contiguous() if _is_torch(a) else a.flags["C_CONTIGUOUS"]):
        raise SymaddrError(_ERR_INVALID_ARG, "symaddr takes contiguous arrays; pass a copy "
                           "(np.ascontiguousarray or tensor.contiguous())")
    return a


def _dtype_of(a, lib):
    name = str(a.dtype).replace("torch.", "")
    if name not in lib.dtypes:
        raise SymaddrError(_ERR_INVALID_ARG, "symaddr has no dtype for %s; use one of %s"
                           % (a.dtype, ", ".join(sorted(lib.dtypes))))
    return lib.dtypes[name]


def _stream_of(a, stream):
    """The raw stream symaddr takes: a torch.cuda.Stream (None: the current one) for tensors,
    none for NumPy arrays."""
    if a is not None and not _is_torch(a):
        return None
    if stream is None:
        import torch
        if not torch.cuda.is_available():
            return None
        stream = torch.cuda.current_stream()
    return ctypes.c_void_p(stream.cuda_stream)


def _comm_handle(comm):
    """The C MPI_Comm of an mpi4py communicator (Open MPI: a pointer)."""
    from mpi4py import MPI
    comm = comm or MPI.COMM_WORLD
    return ctypes.c_void_p(MPI._handleof(comm))


class Map:
    """A registration: the peer table of one buffer. unregister() forgets it (imports and
    foreign tables; allocations go with Context.free)."""

    def __init__(self, ctx, ptr, base, nbytes):
        m = ptr.contents
        if (m.world_size != ctx.size or m.local_rank != ctx.rank or m.range_base != base
                or m.range_bytes != nbytes):
            raise SymaddrError(_ERR_MISMATCH, "libsymaddr's symaddr_map_t is not the layout this "
                               "module mirrors: use the symaddr Python package of the same "
                               "symaddr")
        self._ctx, self._ptr = ctx, ptr

    @property
    def peer_bases(self):
        """Where this process reaches each rank's copy of the buffer (0: unreachable)."""
        m = self._ptr.contents
        return [m.host_peer_bases[r] for r in range(m.world_size)]

    @property
    def capabilities(self):
        return self._ptr.contents.capabilities

    def unregister(self):
        if self._ptr is not None:
            self._ctx._check(self._ctx._lib.symaddr_unregister(self._ctx._h, self._ptr))
            self._ptr = None


class Context:
    """A symaddr context over an MPI communicator (mpi4py; default COMM_WORLD). Config fields
    (timeout_ms=..., heap_bytes=...) go as keyword arguments."""

    def __init__(self, comm=None, backend="auto", lib=None, **config):
        self._lib = lib if lib is not None else load()
        self._own = {}  # address of each array from allocate() -> (provider, map)
        self._plain = set()  # addresses from empty_local()
        cfg = _Config()
        self._lib.symaddr_config_default(ctypes.byref(cfg))
        if cfg.size != ctypes.sizeof(_Config):
            raise SymaddrError(_ERR_MISMATCH, "this module's config is %d bytes but the "
                               "library's is %d: use the symaddr Python package of the same "
                               "symaddr" % (ctypes.sizeof(_Config), cfg.size))
        cfg.backend = BACKENDS[backend]
        for k, v in config.items():
            setattr(cfg, k, v)
        self._h = ctypes.c_void_p()
        self._check(self._lib.symaddr_init(_comm_handle(comm), ctypes.byref(cfg),
                                           ctypes.byref(self._h)))
        self.rank = self._lib.symaddr_rank(self._h)
        self.size = self._lib.symaddr_size(self._h)
        self.backend = self._lib.symaddr_backend_name(
            self._lib.symaddr_backend(self._h)).decode()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _stream(self, stream):
        """The stream of a call that takes no array: none on the cpu backend."""
        return None if self.backend == "cpu" else _stream_of(None, stream)

    def _check(self, status):
        if status != 0:
            text = self._lib.symaddr_strerror(status).decode()
            if getattr(self, "_h", None):
                text = "%s: %s" % (text, (self._lib.symaddr_last_error(self._h) or b"").decode())
            raise SymaddrError(status, text)

    def close(self):
        """Finalize the context (collective)."""
        if self._h:
            self._check(self._lib.symaddr_finalize(ctypes.byref(self._h)))
            self._h = None

    # ---- memory ---------------------------------------------------------------------------

    def _itemsize(self, dtype):
        """Bytes of one element of dtype (NumPy's on cpu, torch's on a GPU)."""
        if self.backend == "cpu":
            import numpy as np
            return np.dtype(dtype).itemsize
        import torch
        return torch.empty(0, dtype=dtype).element_size()

    def _wrap(self, addr, numel, dtype):
        """numel elements of dtype at addr as an array of the backend's kind, without a copy."""
        nbytes = numel * self._itemsize(dtype)
        if self.backend == "cpu":
            import numpy as np
            buf = (ctypes.c_char * nbytes).from_address(addr)
            return np.frombuffer(buf, dtype=np.dtype(dtype), count=numel)
        import torch

        class _Raw:  # hands the pointer to torch as bytes, without copying
            __cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1",
                                        "data": (addr, False), "version": 3}

        return torch.as_tensor(_Raw(), device="cuda").view(dtype)

    def allocate(self, numel, dtype, provider="ipc"):
        """A symmetric allocation of numel elements (collective): the array (NumPy on cpu,
        torch on a GPU) and its Map. Free it with free()."""
        prov, ptr, m = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.POINTER(_Map)()
        self._check(self._lib.symaddr_provider_get(self._h, _PROVIDERS[provider],
                                                   ctypes.byref(prov)))
        nbytes = numel * self._itemsize(dtype)
        self._check(self._lib.symaddr_symmetric_alloc(prov, nbytes, ctypes.byref(ptr),
                                                      ctypes.byref(m)))
        amap = Map(self, m, ptr.value, nbytes)
        a = self._wrap(ptr.value, numel, dtype)
        self._own[ptr.value] = (prov, amap)
        return a, amap

    def empty(self, numel, dtype):
        """allocate()'s array alone (the map stays with the context)."""
        return self.allocate(numel, dtype)[0]

    def free(self, a):
        """Free an array from allocate() or empty() (collective)."""
        addr = _ptr(a)
        if addr not in self._own:
            raise SymaddrError(_ERR_INVALID_ARG, "this array does not start an allocation of "
                               "this context; free the array allocate() returned")
        prov, _ = self._own.pop(addr)
        self._check(self._lib.symaddr_symmetric_free(prov, ctypes.c_void_p(addr)))

    def empty_local(self, numel, dtype):
        """A plain allocation of this rank (symaddr_mem_alloc): import() makes it symmetric.
        Free it with free_local()."""
        ptr = ctypes.c_void_p()
        self._check(self._lib.symaddr_mem_alloc(self._h, numel * self._itemsize(dtype),
                                                ctypes.byref(ptr)))
        self._plain.add(ptr.value)
        return self._wrap(ptr.value, numel, dtype)

    def free_local(self, a):
        addr = _ptr(a)
        if addr not in self._plain:
            raise SymaddrError(_ERR_INVALID_ARG, "this array is not from empty_local()")
        self._plain.discard(addr)
        self._check(self._lib.symaddr_mem_free(self._h, ctypes.c_void_p(addr)))

    # ---- registration ---------------------------------------------------------------------

    def import_(self, a):
        """Register an array of the backend's plain allocator (empty_local(), cudaMalloc) as
        symmetric (collective); its Map's unregister() forgets it."""
        _contiguous(a)
        out = ctypes.POINTER(_Map)()
        self._check(self._lib.symaddr_import(self._h, ctypes.c_void_p(_ptr(a)), _nbytes(a),
                                             ctypes.byref(out)))
        return Map(self, out, _ptr(a), _nbytes(a))

    def register(self, ptr, nbytes, peer_ptrs, caps=_CAP_LOAD_STORE | _CAP_ATOMICS):
        """Register nbytes at ptr (an int or an array) whose copy on rank r is at peer_ptrs[r]
        (0: unreachable): memory another library owns. Collective."""
        ptr = _ptr(ptr)
        peers = list(peer_ptrs)
        if len(peers) != self.size:
            raise SymaddrError(_ERR_INVALID_ARG, "peer_ptrs has %d entries, the context %d ranks"
                               % (len(peers), self.size))
        table = (ctypes.c_uint64 * self.size)(*peers)
        out = ctypes.POINTER(_Map)()
        self._check(self._lib.symaddr_register_peer_table(
            self._h, ctypes.c_void_p(ptr), nbytes, table, caps, ctypes.byref(out)))
        return Map(self, out, ptr, nbytes)

    def register_tensor(self, tensor, peer_ptrs, **kw):
        """Any contiguous array plus the addresses of its peers' copies."""
        _contiguous(tensor)
        return self.register(_ptr(tensor), _nbytes(tensor), peer_ptrs, **kw)

    def register_symm_mem(self, tensor, handle, **kw):
        """A torch symmetric-memory tensor and its rendezvous handle: the handle's
        buffer_ptrs is the table of its whole buffer, so every view of it translates."""
        if handle.world_size != self.size or handle.rank != self.rank:
            raise SymaddrError(_ERR_MISMATCH, "the torch group (rank %d of %d) must be the "
                               "symaddr context (rank %d of %d), in the same order"
                               % (handle.rank, handle.world_size, self.rank, self.size))
        base = handle.buffer_ptrs[handle.rank]
        if not base <= tensor.data_ptr() < base + handle.buffer_size:
            raise SymaddrError(_ERR_OUT_OF_BOUNDS, "the tensor does not lie in the handle's "
                               "buffer")
        return self.register(base, handle.buffer_size, handle.buffer_ptrs, **kw)

    # ---- collectives (stream-ordered on a GPU; complete on return on the cpu) -------------

    def _pair(self, send, recv, send_per_recv):
        recv = send if recv is None else recv
        _contiguous(send), _contiguous(recv)
        if send.dtype != recv.dtype:
            raise SymaddrError(_ERR_INVALID_ARG, "send is %s, recv %s: pass one dtype"
                               % (send.dtype, recv.dtype))
        if _count(send) * send_per_recv[1] != _count(recv) * send_per_recv[0]:
            raise SymaddrError(_ERR_INVALID_ARG, "send has %d elements and recv %d; this "
                               "collective wants %d:%d" % (_count(send), _count(recv),
                                                           *send_per_recv))
        return recv, ctypes.c_void_p(_ptr(send)), ctypes.c_void_p(_ptr(recv))

    def allreduce(self, send, recv=None, op="sum", stream=None):
        """recv = op over every rank's send (in place when recv is None or send)."""
        recv, s, r = self._pair(send, recv, (1, 1))
        self._check(self._lib.symaddr_allreduce(self._h, s, r, _count(send),
                                                _dtype_of(send, self._lib), REDOPS[op],
                                                _stream_of(send, stream)))
        return recv

    def allgather(self, send, recv, stream=None):
        """recv[r * n:(r + 1) * n] = rank r's send (n elements)."""
        recv, s, r = self._pair(send, recv, (1, self.size))
        self._check(self._lib.symaddr_allgather(self._h, s, r, _count(send),
                                                _dtype_of(send, self._lib),
                                                _stream_of(send, stream)))
        return recv

    def reduce_scatter(self, send, recv, op="sum", stream=None):
        """recv = op over ranks of their send[rank * n:(rank + 1) * n] (n: recv's size)."""
        recv, s, r = self._pair(send, recv, (self.size, 1))
        self._check(self._lib.symaddr_reduce_scatter(self._h, s, r, _count(recv),
                                                     _dtype_of(send, self._lib), REDOPS[op],
                                                     _stream_of(send, stream)))
        return recv

    def broadcast(self, send, recv=None, root=0, stream=None):
        """recv = root's send, on every rank."""
        recv, s, r = self._pair(send, recv, (1, 1))
        self._check(self._lib.symaddr_broadcast(self._h, s, r, _count(send),
                                                _dtype_of(send, self._lib), root,
                                                _stream_of(send, stream)))
        return recv

    def alltoall(self, send, recv, stream=None):
        """recv[r * n:(r + 1) * n] = rank r's send[rank * n:(rank + 1) * n]."""
        recv, s, r = self._pair(send, recv, (1, 1))
        self._check(self._lib.symaddr_alltoall(self._h, s, r, _count(send) // self.size,
                                               _dtype_of(send, self._lib),
                                               _stream_of(send, stream)))
        return recv

    def barrier(self, stream=None):
        self._check(self._lib.symaddr_barrier(self._h, self._stream(stream)))

    # ---- one-sided ------------------------------------------------------------------------

    def put(self, dst, src, target, stream=None):
        """Copy src (local) into rank target's copy of dst (symmetric)."""
        nbytes = _nbytes(src)
        if _nbytes(dst) < nbytes:
            raise SymaddrError(_ERR_OUT_OF_BOUNDS, "dst is smaller than src")
        self._check(self._lib.symaddr_put(self._h, ctypes.c_void_p(_ptr(dst)),
                                          ctypes.c_void_p(_ptr(src)), nbytes, target,
                                          _stream_of(src, stream)))

    def get(self, dst, src, target, stream=None):
        """Copy rank target's copy of src (symmetric) into dst (local)."""
        nbytes = _nbytes(dst)
        if _nbytes(src) < nbytes:
            raise SymaddrError(_ERR_OUT_OF_BOUNDS, "src is smaller than dst")
        self._check(self._lib.symaddr_get(self._h, ctypes.c_void_p(_ptr(dst)),
                                          ctypes.c_void_p(_ptr(src)), nbytes, target,
                                          _stream_of(dst, stream)))

    def sync(self, stream=None):
        """Wait for the stream's symaddr work (and report a failure any rank met)."""
        self._check(self._lib.symaddr_stream_sync(self._h, self._stream(stream)))
