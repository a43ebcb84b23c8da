# SPDX-License-Identifier: MIT
"""libsymaddr through ctypes: where the library is, its prototypes, and every enum value, name
and struct layout, read from the library itself (symaddr_abi_json), never copied."""
import ctypes
import glob
import json
import operator
import os
import subprocess
from typing import Any

# symaddr's dtype names as NumPy and torch spell them (the library's names, another library's
# spelling: not a copy of an enum)
ARRAY_NAMES = {"float": "float32", "double": "float64", "half": "float16"}


class SymaddrError(RuntimeError):
    """A symaddr call failed: .status is the symaddr_status_t (an int), .name its name
    ("SYMADDR_ERR_MISMATCH"), and the text is the library's message or the module's."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.name = STATUS_NAMES.get(status, "SYMADDR_ERR_UNKNOWN") if STATUS_NAMES else None


STATUS_NAMES = {}  # value -> name, filled from the library once it is loaded
STATUS = {}  # name -> value


def error(name, text):
    """SymaddrError of the status called name ("SYMADDR_ERR_INVALID_ARG"), saying text."""
    return SymaddrError(STATUS[name], text)

_TYPES = {"int": ctypes.c_int, "unsigned": ctypes.c_uint, "size_t": ctypes.c_size_t,
          "uint64": ctypes.c_uint64, "ptr": ctypes.c_void_p}


def _packaged_library():
    """The libsymaddr that `pip install .` put beside this file, if any."""
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("libsymaddr.so.0", "libsymaddr.so"):
        if os.path.exists(os.path.join(here, name)):
            return os.path.join(here, name)
    found = sorted(glob.glob(os.path.join(here, "libsymaddr.so*")))
    return found[0] if found else None


def library_path():
    """$SYMADDR_LIB, else the library the package carries, else pkg-config's symaddr, else
    the dynamic loader's search for libsymaddr.so.0."""
    if os.environ.get("SYMADDR_LIB"):
        return os.environ["SYMADDR_LIB"]
    own = _packaged_library()
    if own:
        return own
    try:
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "symaddr"],
                                capture_output=True, text=True, check=True).stdout.strip()
        if libdir and os.path.exists(os.path.join(libdir, "libsymaddr.so.0")):
            return os.path.join(libdir, "libsymaddr.so.0")
    except (OSError, subprocess.CalledProcessError):
        pass
    return "libsymaddr.so.0"


def _struct(name, layout):
    """A ctypes Structure laid out as the library says (fields at the library's offsets)."""
    fields, at = [], 0
    for fname, ftype, offset, nbytes in layout["fields"]:
        ct = _TYPES[ftype]
        if ctypes.sizeof(ct) != nbytes:
            raise SymaddrError(-7, "%s.%s is %d bytes in libsymaddr but %s here" % (
                name, fname, nbytes, ftype))
        if offset > at:
            fields.append(("_pad%d" % at, ctypes.c_char * (offset - at)))
        fields.append((fname, ct))
        at = offset + nbytes
    if layout["size"] > at:
        fields.append(("_tail", ctypes.c_char * (layout["size"] - at)))
    cls = type(name, (ctypes.Structure,), {"_fields_": fields})
    if ctypes.sizeof(cls) != layout["size"]:
        raise SymaddrError(-7, "%s: ctypes lays it out in %d bytes, libsymaddr in %d" % (
            name, ctypes.sizeof(cls), layout["size"]))
    cls.field_names = tuple(f[0] for f in layout["fields"])
    return cls


_loaded = {}


def int_range(ctype):
    """(lowest, highest) of an integer ctypes type: a Python int past them would wrap."""
    bits = 8 * ctypes.sizeof(ctype)
    signed = ctype(-1).value == -1
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def choice(kind, value, table):
    """table[value], or a SymaddrError naming the allowed values."""
    if isinstance(value, str) and value in table:  # (a list would raise TypeError)
        return table[value]
    raise error("SYMADDR_ERR_INVALID_ARG", "%r is not a symaddr %s: use one of %s" % (
        value, kind, ", ".join(sorted(table, key=str))))


def index_of(v):
    """v as a Python int where Python indexes with it (an int, NumPy's integers, a 0-d integer
    tensor: operator.index), else None. A bool is None: True for a rank or a count is a slip
    (an argument out of place), not a 1."""
    if type(v) is int:  # the common case, without a call
        return v
    if isinstance(v, bool):
        return None
    try:
        return operator.index(v)
    except TypeError:
        return None


def int_of(v, ctype):
    """v as an int that the integer ctypes type ctype holds as it is (index_of's ints, within
    int_range(ctype)), else None: ctypes would wrap -1 to the largest value."""
    i = index_of(v)
    if i is None:
        return None
    lo, hi = int_range(ctype)
    return i if lo <= i <= hi else None


def default_timeout_ms():
    """The timeout a context gets without a timeout_ms setting: $SYMADDR_TIMEOUT_MS, else the
    library's default."""
    text = os.environ.get("SYMADDR_TIMEOUT_MS", "").strip()
    if text.isdigit() and int(text) > 0:
        return int(text)
    lib = load()
    cfg = lib.Config()
    lib.symaddr_config_default(ctypes.byref(cfg))
    return cfg.timeout_ms


def validating(value):
    """Whether a SYMADDR_VALIDATE value or a validate setting turns validation on (as
    libsymaddr reads them: 1, yes, true, on, or args, and the setting's ints, 2 for args;
    unset or 0, no, false, off: off)."""
    if isinstance(value, bool) or index_of(value) is not None:  # symaddr_config_t.validate
        return value != 0
    return str(value or "0").strip().lower() in ("1", "yes", "true", "on", "args")


def mpi_mismatch(lib: Any, mpi: Any) -> None:
    """Raise SymaddrError(SYMADDR_ERR_MPI) when mpi4py runs on another MPI than the one
    libsymaddr was built with (Open MPI against MPICH or a derivative): the library would read
    mpi4py's communicator handle as its own MPI's and crash, or find MPI not initialised."""
    family = lib.abi.get("mpi", {}).get("family", "other")
    try:
        running = mpi.Get_library_version().splitlines()[0].strip()
    except Exception:  # introspection: an mpi4py without it is not refused here
        return
    if family == "other" or ("Open MPI" in running) == (family == "Open MPI"):
        return
    raise error("SYMADDR_ERR_MPI", "mpi4py runs on %s, but libsymaddr (%s) was built with %s: "
                "use an mpi4py of the MPI symaddr was built with (the same environment's), or "
                "rebuild symaddr with mpi4py's MPI (its mpicc first on PATH, then `pip install "
                ".`)" % (running[:60], getattr(lib, "_name", "?"), lib.abi["mpi"]["header"]))


def _fast_calls(lib, path):
    """Put the compiled module _fast (python/symaddr/_fast.c) in ctypes' place for the hot call,
    symaddr_collective_run_at, where one built for this interpreter lies beside the library
    (the wheel's package folder, a build folder): ctypes' conversion of its eleven arguments
    is most of what Python adds to a small collective. Its path, or None (ctypes stays):
    none there, or SYMADDR_NO_FAST_CALL=1."""
    if os.environ.get("SYMADDR_NO_FAST_CALL", "0") not in ("", "0"):
        return None
    import importlib.machinery
    import importlib.util
    folder = os.path.dirname(os.path.abspath(path))
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        where = os.path.join(folder, "_fast" + suffix)
        if not os.path.exists(where):
            continue
        try:
            spec = importlib.util.spec_from_file_location("symaddr._fast", where)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            bind = module.bind
        except (ImportError, AttributeError, OSError):  # not ours, or another build's
            return None
        f = lib.symaddr_collective_run_at
        lib.symaddr_collective_run_at = bind(ctypes.cast(f, ctypes.c_void_p).value)
        lib.symaddr_collective_run_at_ctypes = f
        return where
    return None


def load(path=None, mpi=None):
    """libsymaddr as a ctypes library, with .abi (the parsed symaddr_abi_json), the structs
    .Config, .Map and .Buffer, and the prototypes the package uses. Loaded once per path.

    mpi (mpi4py's MPI, as Context() passes it): first refuse an mpi4py of another MPI
    (mpi_mismatch), then make the library global, with its MPI: Open MPI's plugins look their
    symbols up there. Until then it is loaded local, so that its MPI cannot take the place of
    another MPI's symbols in an mpi4py loaded later (which calls then reach the wrong MPI)."""
    path = path or library_path()
    if path in _loaded:
        lib = _loaded[path]
        if mpi is not None and not lib.global_:
            mpi_mismatch(lib, mpi)
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)  # the same library, promoted
            lib.global_ = True
        return lib
    try:
        lib = ctypes.CDLL(path, mode=ctypes.RTLD_LOCAL)
        lib.symaddr_abi_json.restype = ctypes.c_char_p
    except (OSError, AttributeError) as e:
        raise SymaddrError(-1, "cannot load libsymaddr from %s (%s): install the package with "
                           "`pip install .` from symaddr's source, or set SYMADDR_LIB to the "
                           "library" % (path, e))
    abi = json.loads(lib.symaddr_abi_json().decode())
    lib.abi = abi
    STATUS.update(abi["status"])
    STATUS_NAMES.update({v: k for k, v in abi["status"].items()})
    s = abi["structs"]
    lib.Config = _struct("symaddr_config_t", s["symaddr_config_t"])
    lib.Map = _struct("symaddr_map_t", s["symaddr_map_t"])
    lib.Buffer = _struct("symaddr_buffer_t", s["symaddr_buffer_t"])
    lib.BootstrapOps = _struct("symaddr_bootstrap_ops_t", s["symaddr_bootstrap_ops_t"])
    vp, st, sz, i = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.c_int
    mapp = ctypes.POINTER(vp)  # symaddr_map_t **: the address, read with Map.from_address
    protos = {
        "symaddr_config_default": (None, [ctypes.POINTER(lib.Config)]),
        "symaddr_init": (st, [vp, ctypes.POINTER(lib.Config), ctypes.POINTER(vp)]),
        "symaddr_init_bootstrap": (st, [ctypes.POINTER(lib.BootstrapOps), vp, i, i,
                                        ctypes.POINTER(lib.Config), ctypes.POINTER(vp)]),
        "symaddr_finalize": (st, [ctypes.POINTER(vp)]),
        "symaddr_timeout_set": (st, [vp, ctypes.c_uint]),
        "symaddr_version": (None, [ctypes.POINTER(i)] * 3),
        "symaddr_strerror": (ctypes.c_char_p, [st]),
        "symaddr_last_error": (ctypes.c_char_p, [vp]),
        "symaddr_backend": (i, [vp]),
        "symaddr_backend_name": (ctypes.c_char_p, [i]),
        "symaddr_rank": (i, [vp]),
        "symaddr_device": (i, [vp]),
        "symaddr_size": (i, [vp]),
        "symaddr_node_rank": (i, [vp]),
        "symaddr_node_size": (i, [vp]),
        "symaddr_provider_get": (st, [vp, i, ctypes.POINTER(vp)]),
        "symaddr_symmetric_alloc": (st, [vp, sz, ctypes.POINTER(vp), mapp]),
        "symaddr_symmetric_free": (st, [vp, vp]),
        "symaddr_mem_alloc": (st, [vp, sz, ctypes.POINTER(vp)]),
        "symaddr_mem_free": (st, [vp, vp]),
        "symaddr_import": (st, [vp, vp, sz, mapp]),
        "symaddr_register_peer_table": (st, [vp, vp, sz, ctypes.POINTER(ctypes.c_uint64),
                                             ctypes.c_uint64, mapp]),
        "symaddr_unregister": (st, [vp, vp]),
        "symaddr_lookup": (st, [vp, vp, mapp]),
        "symaddr_heap_bases_get": (ctypes.POINTER(ctypes.c_uint64), [vp]),
        "symaddr_collective_run_at": (st, [vp, i, vp, vp, sz, i, i, i, vp, ctypes.c_char_p, i]),
        "symaddr_barrier": (st, [vp, vp]),
        "symaddr_put": (st, [vp, vp, vp, sz, i, vp]),
        "symaddr_get": (st, [vp, vp, vp, sz, i, vp]),
        "symaddr_stream_sync": (st, [vp, vp]),
        "symaddr_dtype_name": (ctypes.c_char_p, [i]),
        "symaddr_memcpy": (st, [vp, vp, vp, sz]),
    }
    for name, (res, args) in protos.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    lib.fast = _fast_calls(lib, path)
    # array dtype name -> symaddr_dtype_t
    lib.dtypes = {ARRAY_NAMES.get(k, k): v for k, v in abi["dtype"].items()}
    # collective name -> (its index for symaddr_collective_run_at, its SYMADDR_COLLECTIVE_* flags)
    lib.collectives = {c["name"]: (k, c["flags"]) for k, c in enumerate(abi["collectives"])}
    lib.global_ = False
    _loaded[path] = lib
    return load(path, mpi)


def version(lib=None):
    """The version of the libsymaddr that runs, as (major, minor, patch)."""
    lib = lib or load()
    v = [ctypes.c_int() for _ in range(3)]
    lib.symaddr_version(*[ctypes.byref(x) for x in v])
    return tuple(x.value for x in v)
