# SPDX-License-Identifier: MIT
"""The lifetime model, in one place: memory stays mapped while any Python object reaches it.

Arrays and tensors over symaddr memory are plain NumPy arrays and torch tensors. Each is made
over an exporter object (a ctypes buffer, or the object torch.as_tensor keeps), which NumPy
and torch keep alive for as long as any array, view, memoryview, storage or DLPack capsule of
that memory exists. symaddr holds the exporters only weakly, so it knows when the last one is
gone, as mmap knows its exported buffers.

Context.free(x) and AddressMap.unregister() end the registration at once for symaddr (its map,
the collectives and kernel launches refuse it), but the library frees the memory only once no
rank reaches it from Python any more: the ranks agree on that at the next collective memory
call (allocate_symmetric, import_, register, collect, close), with the context's deadline. A
stale view therefore reads the freed allocation's own memory, never another allocation's, and
never faults. close() finalizes at once when no array of the context is left on any rank;
otherwise the memory stays mapped, the context refuses all use, and the library finalizes it
when the interpreter exits."""
import atexit
import gc
import weakref

from ._bootstrap import MpiRanks
from ._lib import STATUS, SymaddrError


class Life:
    """Whether symaddr still serves a registration (its maps, collectives and launches)."""
    __slots__ = ("base", "nbytes", "why", "_what")

    def __init__(self, base, nbytes, what):
        # what: a text, or a format and its arguments (formatted only when a message needs it)
        self.base, self.nbytes, self._what, self.why = base, nbytes, what, None

    @property
    def what(self):
        return self._what if isinstance(self._what, str) else self._what[0] % self._what[1:]

    def end(self, why):
        if self.why is None:
            self.why = why

    @property
    def alive(self):
        return self.why is None

    def check(self):
        if self.why is not None:
            raise SymaddrError(STATUS["SYMADDR_ERR_INVALID_MAP"],
                               "%s was %s: it can no longer be used; keep the memory (or the "
                               "context) until its last use, or allocate anew" % (self.what,
                                                                                self.why))

    def holds(self, addr):
        return self.base <= addr < self.base + max(self.nbytes, 1)


class Registration:
    """One registration a context made (an allocation, an import, a foreign table, a local
    allocation): its map, its Life, what releases it in the library, and weak references to
    the exporters of every array and table made over its memory."""
    __slots__ = ("amap", "life", "release", "base", "kind", "key", "root", "refs", "provider",
                 "poisoned", "owner")

    def __init__(self, amap, life, release, base, kind, key, root=None):
        self.amap, self.life, self.release, self.base = amap, life, release, base
        self.kind, self.key, self.root, self.refs = kind, key, root, []
        self.provider = None
        self.poisoned = None  # validation mode: (address, value) of its table's size word
        # An import's array or tensor, held until the library releases the registration: the
        # library maps its memory until then, so its allocator must not hand it out again.
        self.owner = None

    def end(self, why):
        """End the registration for symaddr (its Life), and drop the table its map kept: from
        now on only the user's own arrays and tables of its memory keep it reached."""
        self.life.end(why)
        if self.amap is not None:
            self.amap._table = None

    def exported(self, exporter):
        """Remember an exporter of this registration's memory (held weakly)."""
        self.refs.append(weakref.ref(exporter))
        if len(self.refs) > 8:  # drop the dead ones now and then
            self.refs = [r for r in self.refs if r() is not None]

    def reached(self):
        """Whether any Python object still reaches this registration's memory."""
        return any(r() is not None for r in self.refs)


class Lifetimes:
    """A context's registrations that symaddr ended but the library has not yet released
    (pending), and the agreement that releases them once no rank reaches them."""

    def __init__(self, ranks, timeout_ms):
        self.ranks = ranks  # _bootstrap's MpiRanks or TorchRanks: the agreement's exchange
        self.timeout_s = timeout_ms / 1000.0
        self.pending = []  # collective releases, in the order every rank ended them
        self.pending_bytes = 0
        # what the last release kept (some rank still reached it): counted out of the batch,
        # so that views held for long do not make every allocation agree on them again
        self.kept, self.kept_bytes = 0, 0
        self._ended = {}  # address -> the pending registration that holds it, or None
        self.local = []  # releases of this rank alone (free_local)
        self.broken = None

    def reap_local(self):
        keep = []
        for reg in self.local:
            if reg.reached():
                keep.append(reg)
                continue
            try:
                reg.release(reg)
            except SymaddrError as e:
                # still imported: its unregistration waits for its own tables' views
                if e.name != "SYMADDR_ERR_ALREADY_REGISTERED":
                    raise
                keep.append(reg)
        self.local = keep

    def agree(self, flags):
        """The elementwise AND of flags (ints 0/1) over every rank, within the context's
        deadline (the ranks' nonblocking MIN and a test loop)."""
        if self.broken:
            raise SymaddrError(STATUS["SYMADDR_ERR_BROKEN"], self.broken)
        if self.ranks.finalized():  # the runtime's call would abort the job
            raise SymaddrError(STATUS["SYMADDR_ERR_MPI"], "MPI (or torch.distributed) was "
                               "finalized first: close every symaddr.Context before "
                               "MPI.Finalize() or destroy_process_group()")
        return self.ranks.agree_min(flags, self.timeout_s, self._abandon)

    def _abandon(self, why):
        """Break the context's agreements (the runtime still holds the abandoned request and
        its buffers, and the communicator, which close() then does not free); the message
        this context's later agreements raise."""
        self.broken = why + "; create a new Context"
        return self.broken

    # Releases wait for this many pending registrations or bytes, so that a loop of allocate
    # and free (whose last array is still referenced at the next allocation) pays one
    # agreement per batch, not one per allocation.
    BATCH, BATCH_BYTES = 64, 256 << 20

    def end(self, reg):
        """reg's use is over for symaddr: the library releases it once no rank reaches it."""
        self.pending.append(reg)
        self.pending_bytes += reg.life.nbytes
        self._ended.clear()

    def ended_at(self, addr):
        """The pending registration that holds addr, or None. Remembered per address until
        the pending list changes: a loop of collectives passes the same tensors call after
        call, and a scan of up to BATCH registrations per argument cost microseconds."""
        cache = self._ended
        if addr in cache:
            return cache[addr]
        found = next((reg for reg in self.pending if reg.life.holds(addr)), None)
        if len(cache) > 4096:
            cache.clear()
        cache[addr] = found
        return found

    def forget(self):
        """Drop every pending and local registration (the context's close released them)."""
        self.pending, self.local, self.pending_bytes = [], [], 0
        self.kept, self.kept_bytes = 0, 0
        self._ended.clear()

    def due(self):
        """Whether an allocation should release pending memory first: a batch ended since the
        last release (the same answer on every rank: the pending list and what the last release
        kept are). What some rank still reached at the last release counts only once a batch
        more ended: with 1,000 views held, every allocation agreed on them again (0.8 to 7.3 ms
        a call, 2026-12-06). A larger batch would let fewer freed allocations come back from
        retention (each new one costs a handle exchange): one batch is the better trade."""
        return (len(self.pending) - self.kept >= self.BATCH or
                self.pending_bytes - self.kept_bytes >= self.BATCH_BYTES)

    def reap(self, collect=False):
        """Release (collectively) every pending registration that no rank reaches. Every rank
        calls it at the same points, with the same pending list."""
        self.reap_local()
        if not self.pending:
            return
        if collect and any(reg.reached() for reg in self.pending):
            gc.collect()  # arrays kept only by a reference cycle
        agreed = self.agree([0 if reg.reached() else 1 for reg in self.pending])
        keep, first_error = [], None
        for reg, free in zip(self.pending, agreed):
            if not free:
                keep.append(reg)
                continue
            try:
                reg.release(reg)
            except SymaddrError as e:
                first_error = first_error or e
        self.pending = keep
        self.pending_bytes = sum(reg.life.nbytes for reg in keep)
        self.kept, self.kept_bytes = len(keep), self.pending_bytes
        self._ended.clear()
        self.reap_local()
        if first_error is not None:
            raise first_error

    def reached(self, regs):
        """Whether this rank reaches any of regs (or any pending or local registration)."""
        regs = list(regs) + self.pending + self.local
        if any(reg.reached() for reg in regs):
            gc.collect()
        return any(reg.reached() for reg in regs)


# Contexts whose close() found memory still reached: finalized when the interpreter exits.
_at_exit = []


def finalize_at_exit(finalize):
    """Call finalize when the interpreter exits (registered now, after mpi4py's own exit
    handler, so that it runs before MPI is finalized)."""
    if not _at_exit:
        atexit.register(_finalize_left)
    _at_exit.append(finalize)


def _finalize_left():
    if MpiRanks.finalized():  # the program finalized MPI itself: finalize would abort the job
        _at_exit.clear()
    while _at_exit:
        try:
            _at_exit.pop()()
        except SymaddrError:
            pass  # the process ends: nothing is left to report it to
