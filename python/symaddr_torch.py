# SPDX-License-Identifier: MIT
"""symaddr for PyTorch users: torch symmetric memory (or any tensor plus its peers' pointers)
as a symaddr map, and symaddr's allreduce and put on it, through ctypes over libsymaddr.

    import torch.distributed._symmetric_memory as symm_mem
    import symaddr_torch as sa

    ctx = sa.Context()                        # MPI_COMM_WORLD through mpi4py, cuda backend
    buf = symm_mem.empty(n, dtype=torch.bfloat16, device="cuda")
    handle = symm_mem.rendezvous(buf, group)
    m = ctx.register_symm_mem(buf, handle)    # handle.buffer_ptrs is the peer table
    ctx.allreduce(buf, out)                   # out: a tensor symaddr knows too
    ctx.put(dst, src, target)
    m.unregister()                            # forgets the table; torch still owns the memory

symaddr never frees memory it did not allocate. Ranks of the context must be the ranks of the
torch group, in the same order (checked). libsymaddr is found through $SYMADDR_LIB, else the
dynamic loader's search for libsymaddr.so.0.
"""
import ctypes
import os

_CAP_LOAD_STORE = 1 << 0
_CAP_ATOMICS = 1 << 1
_PROVIDER_IPC = 1  # symaddr_provider_kind_t

BACKENDS = {"auto": 0, "cpu": 1, "cuda": 2, "hip": 3}
REDOPS = {"sum": 0, "prod": 1, "min": 2, "max": 3}
# symaddr's dtype names that torch spells otherwise
_TORCH_NAMES = {"float": "float32", "double": "float64", "half": "float16"}


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
    ]


class _Map(ctypes.Structure):
    # mirrors symaddr_map_t
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


def load(path=None):
    """libsymaddr as a ctypes library with the prototypes this module uses."""
    lib = ctypes.CDLL(path or os.environ.get("SYMADDR_LIB", "libsymaddr.so.0"),
                      mode=ctypes.RTLD_GLOBAL)
    vp, st, sz, i = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_int
    protos = {
        "symaddr_config_default": (None, [ctypes.POINTER(_Config)]),
        "symaddr_init": (st, [vp, ctypes.POINTER(_Config), ctypes.POINTER(vp)]),
        "symaddr_finalize": (st, [ctypes.POINTER(vp)]),
        "symaddr_strerror": (ctypes.c_char_p, [st]),
        "symaddr_last_error": (ctypes.c_char_p, [vp]),
        "symaddr_rank": (i, [vp]),
        "symaddr_size": (i, [vp]),
        "symaddr_register_peer_table": (st, [vp, vp, sz, ctypes.POINTER(ctypes.c_uint64),
                                             ctypes.c_uint64, ctypes.POINTER(ctypes.POINTER(_Map))]),
        "symaddr_unregister": (st, [vp, ctypes.POINTER(_Map)]),
        "symaddr_allreduce": (st, [vp, vp, vp, sz, i, i, vp]),
        "symaddr_put": (st, [vp, vp, vp, sz, i, vp]),
        "symaddr_stream_sync": (st, [vp, vp]),
        "symaddr_provider_get": (st, [vp, i, ctypes.POINTER(vp)]),
        "symaddr_symmetric_alloc": (st, [vp, sz, ctypes.POINTER(vp),
                                            ctypes.POINTER(ctypes.POINTER(_Map))]),
        "symaddr_symmetric_free": (st, [vp, vp]),
    }
    protos["symaddr_dtype_name"] = (ctypes.c_char_p, [i])
    for name, (res, args) in protos.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    # torch dtype name -> symaddr_dtype_t, from the library's own list
    lib.dtypes = {}
    while True:
        name = lib.symaddr_dtype_name(len(lib.dtypes))
        if not name:
            break
        lib.dtypes[_TORCH_NAMES.get(name.decode(), name.decode())] = len(lib.dtypes)
    return lib


def _dtype_of(tensor, lib):
    name = str(tensor.dtype).replace("torch.", "")
    if name not in lib.dtypes:
        raise SymaddrError(-1, "symaddr has no reduction for %s; use one of %s"
                           % (tensor.dtype, ", ".join(sorted(lib.dtypes))))
    return lib.dtypes[name]


def _stream_of(stream):
    """A torch.cuda.Stream (or None: the current one) as the raw handle symaddr takes."""
    if stream is None:
        import torch
        stream = torch.cuda.current_stream()
    return ctypes.c_void_p(stream.cuda_stream)


def _comm_handle(comm):
    """The C MPI_Comm of an mpi4py communicator (Open MPI: a pointer)."""
    from mpi4py import MPI
    comm = comm or MPI.COMM_WORLD
    return ctypes.c_void_p(MPI._handleof(comm))


class Map:
    """A registration: the peer table of one buffer. unregister() forgets it."""

    def __init__(self, ctx, ptr):
        self._ctx, self._ptr = ctx, ptr

    @property
    def peer_bases(self):
        m = self._ptr.contents
        return [m.host_peer_bases[r] for r in range(m.world_size)]

    def unregister(self):
        if self._ptr is not None:
            self._ctx._check(self._ctx._lib.symaddr_unregister(self._ctx._h, self._ptr))
            self._ptr = None


class Context:
    """A symaddr context over an MPI communicator (mpi4py; default COMM_WORLD)."""

    def __init__(self, comm=None, backend="cuda", lib=None, **config):
        self._lib = lib if lib is not None else load()
        self._own = {}  # data_ptr of each tensor from empty() -> its provider
        cfg = _Config()
        self._lib.symaddr_config_default(ctypes.byref(cfg))
        if cfg.size != ctypes.sizeof(_Config):
            raise SymaddrError(-1, "symaddr_torch's config is %d bytes but the library's is %d: "
                               "use the symaddr_torch of the same symaddr"
                               % (ctypes.sizeof(_Config), cfg.size))
        cfg.backend = BACKENDS[backend]
        for k, v in config.items():
            setattr(cfg, k, v)
        self._h = ctypes.c_void_p()
        self._check(self._lib.symaddr_init(_comm_handle(comm), ctypes.byref(cfg),
                                           ctypes.byref(self._h)))
        self.rank = self._lib.symaddr_rank(self._h)
        self.size = self._lib.symaddr_size(self._h)

    def _check(self, status):
        if status != 0:
            text = self._lib.symaddr_strerror(status).decode()
            if getattr(self, "_h", None):
                text = "%s: %s" % (text, (self._lib.symaddr_last_error(self._h) or b"").decode())
            raise SymaddrError(status, text)

    def close(self):
        if self._h:
            self._check(self._lib.symaddr_finalize(ctypes.byref(self._h)))
            self._h = None

    # ---- registration -------------------------------------------------------------------

    def register(self, ptr, nbytes, peer_ptrs, caps=_CAP_LOAD_STORE | _CAP_ATOMICS):
        """Register nbytes at ptr (an int, or a tensor) whose copy on rank r is at
        peer_ptrs[r] (0: unreachable). Collective."""
        if hasattr(ptr, "data_ptr"):
            ptr = ptr.data_ptr()
        peers = list(peer_ptrs)
        if len(peers) != self.size:
            raise SymaddrError(-1, "peer_ptrs has %d entries, the context %d ranks"
                               % (len(peers), self.size))
        table = (ctypes.c_uint64 * self.size)(*peers)
        out = ctypes.POINTER(_Map)()
        self._check(self._lib.symaddr_register_peer_table(
            self._h, ctypes.c_void_p(ptr), nbytes, table, caps, ctypes.byref(out)))
        return Map(self, out)

    def register_tensor(self, tensor, peer_ptrs, **kw):
        """Any contiguous tensor plus the addresses of its peers' copies."""
        if not tensor.is_contiguous():
            raise SymaddrError(-1, "register a contiguous tensor (or its storage)")
        return self.register(tensor.data_ptr(), tensor.numel() * tensor.element_size(),
                             peer_ptrs, **kw)

    def register_symm_mem(self, tensor, handle, **kw):
        """A torch symmetric-memory tensor and its rendezvous handle: the handle's
        buffer_ptrs is the table of its whole buffer, so every view of it translates."""
        if handle.world_size != self.size or handle.rank != self.rank:
            raise SymaddrError(-7, "the torch group (rank %d of %d) must be the symaddr context "
                               "(rank %d of %d), in the same order"
                               % (handle.rank, handle.world_size, self.rank, self.size))
        base = handle.buffer_ptrs[handle.rank]
        if not base <= tensor.data_ptr() < base + handle.buffer_size:
            raise SymaddrError(-14, "the tensor does not lie in the handle's buffer")
        return self.register(base, handle.buffer_size, handle.buffer_ptrs, **kw)

    # ---- symaddr's own memory -------------------------------------------------------------

    def empty(self, numel, dtype):
        """A CUDA tensor in memory of symaddr's ipc provider (collective); free() it."""
        import torch
        esz = torch.empty(0, dtype=dtype).element_size()
        prov, ptr, m = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.POINTER(_Map)()
        self._check(self._lib.symaddr_provider_get(self._h, _PROVIDER_IPC, ctypes.byref(prov)))
        self._check(self._lib.symaddr_symmetric_alloc(prov, numel * esz, ctypes.byref(ptr),
                                                         ctypes.byref(m)))

        class _Raw:  # hands the pointer to torch as bytes, without copying
            __cuda_array_interface__ = {"shape": (numel * esz,), "typestr": "|u1",
                                        "data": (ptr.value, False), "version": 3}

        t = torch.as_tensor(_Raw(), device="cuda").view(dtype)
        self._own[t.data_ptr()] = prov
        return t

    def free(self, tensor):
        """Free a tensor from empty() (collective)."""
        prov = self._own.pop(tensor.data_ptr())
        self._check(self._lib.symaddr_symmetric_free(prov, ctypes.c_void_p(tensor.data_ptr())))

    # ---- operations ---------------------------------------------------------------------

    def allreduce(self, send, recv=None, op="sum", stream=None):
        """recv = op over every rank's send (in place when recv is None or send)."""
        recv = send if recv is None else recv
        if send.numel() != recv.numel() or send.dtype != recv.dtype:
            raise SymaddrError(-7, "send and recv differ in size or dtype")
        self._check(self._lib.symaddr_allreduce(
            self._h, ctypes.c_void_p(send.data_ptr()), ctypes.c_void_p(recv.data_ptr()),
            send.numel(), _dtype_of(send, self._lib), REDOPS[op], _stream_of(stream)))
        return recv

    def put(self, dst, src, target, stream=None):
        """Copy src (local) into rank target's copy of dst."""
        nbytes = src.numel() * src.element_size()
        if dst.numel() * dst.element_size() < nbytes:
            raise SymaddrError(-14, "dst is smaller than src")
        self._check(self._lib.symaddr_put(self._h, ctypes.c_void_p(dst.data_ptr()),
                                          ctypes.c_void_p(src.data_ptr()), nbytes, target,
                                          _stream_of(stream)))

    def sync(self, stream=None):
        self._check(self._lib.symaddr_stream_sync(self._h, _stream_of(stream)))
