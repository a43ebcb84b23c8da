# SPDX-License-Identifier: MIT
"""Context: a symaddr context, its settings, its Team and its lifetime. Its memory is in
_memory (allocations, local memory) and _registrations (imports, foreign tables); the
collectives and one-sided calls are in _comm; what keeps memory mapped while Python reaches
it is in _lifetime."""
import ctypes
import os
import weakref
from typing import Any, Optional

from ._comm import Communication, add_collectives
from ._memory import Memory
from ._registrations import Registrations
from ._validation import Validation
from ._lib import STATUS, SymaddrError, choice, index_of, int_of, int_range, load
from ._lib import error as _err
from ._lib import validating as _validating
from ._bootstrap import MpiRanks, TorchRanks, torch_group_ready
from ._lifetime import Life, Lifetimes, Registration, finalize_at_exit
from ._maps import Team


class Context(Memory, Registrations, Validation, Communication):
    """A symaddr context over an MPI communicator (mpi4py; default COMM_WORLD) or a
    torch.distributed process group (group=; under torchrun with no MPI launcher, the default
    group is the default). Settings of symaddr_config_t go as keyword arguments
    (timeout_ms=..., heap_bytes=...); backend is one of the library's backend names (default:
    SYMADDR_BACKEND's, else auto). close()
    (or the end of a with block) finalizes it.

    Over a process group, MPI is never initialised (libsymaddr is linked to it, but makes no
    MPI call): the library starts through symaddr_init_bootstrap, with messages over a gloo
    group of its own on the group's ranks, which also carry the steps of the collectives
    between nodes. Everything else is the same.

    Arrays and tensors it hands out are plain NumPy arrays and torch tensors, and their memory
    stays mapped while any of them (or a view) exists: free() and close() end symaddr's use of
    the memory at once, and the library releases it once no rank reaches it from Python
    (symaddr._lifetime says how)."""

    def __init__(self, comm: Any = None, backend: Optional[str] = None, lib: Any = None,
                 group: Any = None, **config: Any) -> None:
        self._h = None
        if comm is not None and group is not None:
            raise _err("SYMADDR_ERR_INVALID_ARG", "Context(comm=, group=): pass one, an mpi4py "
                       "communicator or a torch.distributed process group")
        over_torch = group is not None or (comm is None and torch_group_ready())
        MPI = None
        if not over_torch:
            from mpi4py import MPI
        # load() refuses another MPI's mpi4py, then makes the library global (a library passed
        # in is one load() made: the same checks); over torch it stays local, as MPI is unused
        self._lib = load(lib._name if lib is not None else None, mpi=MPI)
        add_collectives(Context, self._lib)
        self._regs = {}  # address of the library's symaddr_map_t -> Registration
        self._by_base = {}  # base address of a live allocation -> its Registration
        self._freed = {}  # base address of a freed allocation not yet released -> the same
        self._plain = {}  # address of an empty_local() array -> its Registration
        self._keep = []  # bytes the config points to
        self._itemsizes = {}  # dtype -> bytes of one element
        self._providers = {}  # provider kind -> its handle
        self._out = (ctypes.byref(ctypes.c_void_p()), ctypes.byref(ctypes.c_void_p()))
        cfg = self._lib.Config()
        self._lib.symaddr_config_default(ctypes.byref(cfg))
        if backend is not None:  # else SYMADDR_BACKEND's, as symaddr_config_default read it
            cfg.backend = choice("backend", backend, self._lib.abi["backend"])
        settable = [f for f in self._lib.Config.field_names
                    if f not in ("size", "backend", "logger", "logger_cookie")]
        accepts = {c["field"]: "%s (as %s takes)" % (c["accepts"], c["name"])
                   for c in self._lib.abi["config_vars"]}
        for k, v in config.items():
            if k not in settable:
                raise _err("SYMADDR_ERR_INVALID_ARG", "Context() has no setting %r: use one of "
                           "%s (symaddr_config_t's fields)" % (k, ", ".join(settable)))
            if k == "debug_file":
                v = str(v).encode()
                self._keep.append(v)
                v = ctypes.cast(ctypes.c_char_p(v), ctypes.c_void_p)
            if k == "validate" and isinstance(v, str):  # the names of symaddr_validate_t
                v = self._lib.abi["validate"].get(v.strip().lower(), v)
            ctype = dict(self._lib.Config._fields_)[k]
            if not isinstance(v, bool) and index_of(v) is not None and \
                    ctype is not ctypes.c_void_p:  # NumPy's integers too; a flag takes a bool
                v = index_of(v)
                lo, hi = int_range(ctype)
                if not lo <= v <= hi:  # ctypes would wrap it (-1 to the largest value)
                    raise _err("SYMADDR_ERR_INVALID_ARG", "setting %s=%d: pass %s" % (
                        k, v, accepts.get(k, "%d to %d" % (lo, hi))))
            try:
                setattr(cfg, k, v)
            except TypeError:
                allowed = accepts.get(k, "a value of its type (%s)" % ctype.__name__)
                if k == "validate":
                    allowed = "True or False, or one of %s (or their values %s)" % (
                        ", ".join('"%s"' % n for n in self._lib.abi["validate"]),
                        ", ".join(map(str, self._lib.abi["validate"].values())))
                raise _err("SYMADDR_ERR_INVALID_ARG", "setting %s=%r: pass %s" % (k, v, allowed))
        h = ctypes.c_void_p()
        if over_torch:
            ranks = TorchRanks(self._lib, group)
            st = self._lib.symaddr_init_bootstrap(ctypes.byref(ranks.ops), None, ranks.rank,
                                                  ranks.size, ctypes.byref(cfg), ctypes.byref(h))
            if st != 0 and ranks.last_error:  # what torch.distributed said
                self._check(st, "torch.distributed: " + ranks.last_error)
            self._check(st)
            self.comm = None
        else:
            ranks = self._init_mpi(MPI, comm, cfg, h)
        self._h = h
        self._life = Life(0, 0, "this context")
        # the context's own tables (heap_bases): released with the context
        self._own = Registration(None, self._life, None, 0, "context", None)
        self._lifetimes = Lifetimes(ranks, cfg.timeout_ms)
        self._ranks = ranks
        self.rank = self._lib.symaddr_rank(self._h)
        self.size = self._lib.symaddr_size(self._h)
        self.node_rank = self._lib.symaddr_node_rank(self._h)
        self.node_size = self._lib.symaddr_node_size(self._h)
        self.backend = self._lib.symaddr_backend_name(self._lib.symaddr_backend(self._h)).decode()
        self.device = self._lib.symaddr_device(self._h)  # the GPU's ordinal; -1 on the cpu
        self._heap_bases = None
        self._maps_made = 0  # AddressMap._serial's count
        self._team = None
        self._plans = {}  # symaddr.triton.collectives' compiled kernels over this Team
        self._calls = {}  # and what their calls compute once per count, dtype, op (and arrays)
        self._broken = None
        self.timeout_ms = cfg.timeout_ms
        # validation mode: kernels' refused translations are raised by the next host call
        self.validating = _validating(config["validate"] if "validate" in config
                                      else os.environ.get("SYMADDR_VALIDATE"))
        self._init_comm()

    def _init_mpi(self, MPI, comm, cfg, h):
        if comm is None:
            comm = MPI.COMM_WORLD
        elif not isinstance(comm, MPI.Intracomm) or comm == MPI.COMM_NULL:
            raise _err("SYMADDR_ERR_INVALID_ARG", "Context(comm=%r): %s" % (comm, (
                "this rank is not in the communicator (a Split with MPI.UNDEFINED): make the "
                "Context on its ranks alone" if isinstance(comm, MPI.Comm) and
                comm == MPI.COMM_NULL else "pass an mpi4py intracommunicator that this rank "
                "is in (MPI.COMM_WORLD, or one of comm.Split or comm.Create)")))
        self._check(self._lib.symaddr_init(ctypes.c_void_p(MPI._handleof(comm)),
                                           ctypes.byref(cfg), ctypes.byref(h)))
        self.comm = comm
        return MpiRanks(comm)

    @property
    def group(self) -> Any:
        """The torch.distributed process group the context runs on (symaddr's own gloo group
        over the ranks of the one given); None for a context over MPI."""
        return getattr(getattr(self, "_ranks", None), "group", None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __reduce__(self):  # copy, deepcopy and pickle: a second owner of the handle
        raise TypeError("a symaddr.Context cannot be copied or pickled: it is this process's "
                        "handle of a collective state that close() ends; pass the object itself")

    def __repr__(self):
        state = "open" if self._h else "closed"
        return "<symaddr.Context %s: rank %s of %s, backend %s>" % (
            state, getattr(self, "rank", "?"), getattr(self, "size", "?"),
            getattr(self, "backend", "?"))

    def _open(self):
        if not self._h:
            raise _err("SYMADDR_ERR_INVALID_ARG", "the context is closed: create a new "
                       "symaddr.Context")
        if self._broken:
            raise _err("SYMADDR_ERR_BROKEN", self._broken)
        return self._h

    def _check(self, status, more=""):
        if status != 0:
            text = self._lib.symaddr_strerror(status).decode()
            # a context's own message, or this thread's failed init's
            why = (self._lib.symaddr_last_error(self._h or None) or b"").decode()
            if why:
                text = "%s: %s" % (text, why)
            if more:
                text = "%s (%s)" % (text, more)
            if status == STATUS["SYMADDR_ERR_BROKEN"] and getattr(self, "_broken", "") is None:
                self._broken = text  # the Triton calls, which make no C call, refuse it too
            raise SymaddrError(status, text)

    def close(self) -> None:
        """Finalize the context (collective). Its maps refuse use at once. When no rank
        reaches the context's memory from Python any more (no array, view or table of it is
        left), the library finalizes now; otherwise the memory stays mapped and the library
        finalizes when the interpreter exits."""
        if not self._h:
            return
        if self._ranks.finalized():  # its MPI (or gloo) calls would abort the job
            self._h = None
            raise _err("SYMADDR_ERR_MPI", "close: MPI (or torch.distributed) was finalized "
                       "first: close every symaddr.Context before MPI.Finalize() or "
                       "destroy_process_group() (a with block does); this one is left as it "
                       "is until the process ends")
        self._lifetimes.reap_local()
        h, self._h = self._h, None
        self._team, self._plans, self._calls = None, {}, {}
        self._stage_tensor = None  # a view of the workspace, which finalize frees
        regs = list(self._regs.values()) + list(self._plain.values()) + [self._own]
        for reg in regs:
            reg.end("released when its context was closed")
        self._life.end("closed")
        lt = self._lifetimes
        try:
            reached = not lt.agree([0 if lt.reached(regs) else 1])[0]
        except SymaddrError:
            reached = lt.reached(regs)  # a peer is gone: only this rank's own arrays count
        self._regs.clear()
        self._by_base.clear()
        self._freed.clear()
        self._plain.clear()
        lt.forget()
        lt.ranks.free(abandoned=bool(lt.broken))
        lib = self._lib

        def finalize():
            st = lib.symaddr_finalize(ctypes.byref(h))
            if st != 0:
                raise SymaddrError(st, lib.symaddr_strerror(st).decode())

        if reached:
            finalize_at_exit(finalize)
        else:
            finalize()

    def set_timeout(self, timeout_ms: int) -> None:
        """Bound this rank's later waits on its peers by timeout_ms (> 0): the host calls
        that start after it, the lifetime agreements, and the Team's kernels (the Team is
        remade with it). Local, not collective: set the same value on every rank."""
        ctype = self._lib.symaddr_timeout_set.argtypes[1]  # its prototype's type
        ms = int_of(timeout_ms, ctype)
        if ms is None:  # ctypes would wrap -5
            raise _err("SYMADDR_ERR_INVALID_ARG", "set_timeout: timeout_ms=%r: pass an int of "
                       "milliseconds, 1 to %d" % (timeout_ms, int_range(ctype)[1]))
        timeout_ms = ms
        self._check(self._lib.symaddr_timeout_set(self._h, timeout_ms))
        self.timeout_ms = timeout_ms
        self._lifetimes.timeout_s = timeout_ms / 1000.0
        if self._team is not None:
            self._team = self._team._replace(timeout_ns=timeout_ms * 1000000)
            self._plans = {}  # compiled for the old Team's values

    def team(self) -> Team:
        """The context's Team (symaddr.triton.team): made by the first call, which is
        collective (every rank calls it, as any collective; the host functions of
        symaddr.triton.collectives call it for you), then kept. A context of more than one
        node (real hosts, or node_size / SYMADDR_NODE_SIZE) has none: SYMADDR_ERR_UNREACHABLE,
        on every rank."""
        if self._team is None and self.node_size != self.size:
            # its kernels store into every rank's sync area: an entry 0 is address 0 + offset
            self._open()
            raise _err("SYMADDR_ERR_UNREACHABLE", "Context.team: this context's %d ranks are on "
                       "more than one node (rank %d's has %d; real hosts, or node_size / "
                       "SYMADDR_NODE_SIZE), and a team's kernels (symaddr.triton.collectives, "
                       "the fused kernels) reach every rank's memory by loads and stores: use "
                       "the Context's host collectives (ctx.allreduce, ...), which go through "
                       "MPI across nodes, or a Context over one node's ranks (comm=)"
                       % (self.size, self.rank, self.node_size))
        if self._team is None:
            from .triton.team import sync_words
            import numpy as np
            dtype = np.int64
            if self.backend != "cpu":
                import torch
                dtype = torch.int64
            sync, smap = self.allocate_symmetric((sync_words(self.size),), dtype)
            table = smap._host_table()
            odd = [r for r in range(self.size) if table[r] % 16]
            if odd:  # the same table on every rank: every rank raises
                self.free(sync)
                raise _err("SYMADDR_ERR_UNSUPPORTED", "Context.team: the sync area (an ipc "
                           "allocation) of rank(s) %s is not on 16 bytes, which the team "
                           "kernels' 16-byte stores need; the backend's allocator gave it: "
                           "report this with the backend's name" % odd)
            sync[:] = 0
            self.barrier()  # every rank's sync area is clear before any kernel uses it
            if self.backend != "cpu":
                self.sync()
            self._team = Team(sync, smap.peer_bases, self.rank, self.timeout_ms * 1000000)
        return self._team

    def collect(self) -> None:
        """Release (collectively) the freed allocations and unregistered tables that no rank
        reaches from Python any more; allocate_symmetric, import_ and register do this too."""
        self._open()
        self._lifetimes.reap(collect=True)
        if self.validating:
            self._check_tables()

    @property
    def heap_bases(self) -> Any:
        """The context-wide table of the heap (int64, zero-copy), for kernels in the heap_bases
        form (symaddr.triton.heap): it translates every heap allocation's pointers, as each
        one's own peer_bases does, but validation bounds it to the whole heap (each heap
        allocation's own table, to that allocation)."""
        self._open()
        table = self._heap_bases() if self._heap_bases is not None else None
        if table is None:
            table = self._table(self._heap_table(), self.size, self._own, self.backend != "cpu")
            self._heap_bases = weakref.ref(table)
        return table
