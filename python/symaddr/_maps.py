# SPDX-License-Identifier: MIT
"""Address maps and bound buffers: what Python sees of a registration's symaddr_map_t."""
import collections
import ctypes

from ._lib import error as _err
from ._lib import index_of


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

    def __init__(self, ctx, addr, reg, torch_kind):
        m = ctx._lib.Map.from_address(addr)  # the library's own struct, read live
        if m.world_size != ctx.size or m.local_rank != ctx.rank:
            raise _err("SYMADDR_ERR_MISMATCH", "libsymaddr's map says rank %d of %d, the context "
                       "%d of %d: use the symaddr package of the library it loads"
                       % (m.local_rank, m.world_size, ctx.rank, ctx.size))
        self._ctx, self._addr, self._s, self._torch = ctx, addr, m, torch_kind
        # its number among the context's registrations, the same on every rank (they are made
        # collectively, in one order): the Triton collectives' identity holds it
        ctx._maps_made += 1
        self._serial = ctx._maps_made
        self._reg, self._life = reg, reg.life
        # peer_bases, made at its first use and kept while the registration lives (a kernel
        # launch asks for it each call: on the cpu backend 1.9 us to make); dropped when the
        # registration ends (Registration.end), so that it never keeps freed memory reached
        self._table = None
        self._far = None  # the ranks whose entry is 0, once asked (the table never changes)

    def _m(self):
        self._life.check()
        return self._s

    def __reduce__(self):  # copy, deepcopy and pickle
        raise TypeError("a symaddr AddressMap cannot be copied or pickled: it is this process's "
                        "view of a registration of its context (its peer_bases are addresses "
                        "valid in this process only); pass the map itself, or "
                        "ctx.get_symmetric_address_map(array) where it is needed")

    @property
    def peer_bases(self):
        """The library's device-resident table of this registration, zero-copy: int64 (Triton
        and torch handle int64 well and uint64 poorly; addresses fit in 63 bits), world_size
        entries; a torch tensor for torch memory (on the GPU on GPU backends), a NumPy array
        on the cpu backend."""
        m = self._m()
        table = self._table
        if table is None:
            table = self._table = self._ctx._table(m.peer_bases, m.world_size, self._reg,
                                                   self._torch)
        return table

    @property
    def local_rank(self):
        """This rank's index in the map's communicator (the context's rank)."""
        return self._m().local_rank

    @property
    def world_size(self):
        """Ranks in the map's communicator: entries of peer_bases."""
        return self._m().world_size

    @property
    def allocation_base(self):
        """This rank's base of the backing allocation (the root, not a view): peer_bases's own
        entry."""
        return self._m().allocation_base

    @property
    def allocation_bytes(self):
        """Bytes of the backing allocation on this rank (the root's)."""
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
        """Start of the registered range on this rank (an import's view may start past the root)."""
        return self._m().range_base

    @property
    def range_bytes(self):
        """Bytes of the registered range."""
        return self._m().range_bytes

    def reachable(self, rank: int) -> bool:
        """Whether this process reaches rank's copy by loads and stores (peer_bases[rank] != 0).
        A kernel that stores to an unreachable peer writes to address 0 + offset: test this
        first, or use symaddr.triton.reachable in the kernel."""
        m = self._m()
        r = index_of(rank)
        if r is None or not 0 <= r < m.world_size:
            raise _err("SYMADDR_ERR_INVALID_ARG", "reachable: rank %r is not in 0..%d" % (
                rank, m.world_size - 1))
        return self._host_table()[r] != 0

    def _host_table(self):
        """The host's copy of peer_bases (world_size entries), as a ctypes array of uint64."""
        return ctypes.cast(self._m().host_peer_bases, ctypes.POINTER(ctypes.c_uint64))

    def _unreachable(self):
        """The ranks whose peer_bases entry is 0, as a tuple (kept: a collective asks it each
        call)."""
        m = self._m()
        if self._far is None:
            table = self._host_table()
            self._far = tuple(r for r in range(m.world_size) if table[r] == 0)
        return self._far

    def check_reachable(self, ranks) -> None:
        """Raise SYMADDR_ERR_UNREACHABLE unless every rank of ranks (or the one rank) is
        reachable."""
        far = [r for r in ([ranks] if index_of(ranks) is not None else ranks)
               if not self.reachable(r)]
        if far:
            raise _err("SYMADDR_ERR_UNREACHABLE", "ranks %s are on another node of rank %d: "
                       "their peer_bases entries are 0; reach them with put/get or the "
                       "collectives, which go through MPI" % (far, self._ctx.rank))

    def unregister(self) -> None:
        """Forget an import or a foreign table (collective); allocations go with
        Context.free(). The map refuses use at once; the library releases its table once no
        rank reaches it from Python (symaddr._lifetime)."""
        self._ctx._unregister(self)

    def __repr__(self):
        if not self._life.alive:
            return "<symaddr AddressMap of %s: %s>" % (self._life.what, self._life.why)
        m = self._s
        return ("<symaddr AddressMap %s: rank %d of %d, allocation 0x%x (%d bytes), caps 0x%x>"
                % (self.provider, m.local_rank, m.world_size, m.allocation_base,
                   m.allocation_bytes, m.capabilities))


Map = AddressMap  # the name of 0.1.0


Team = collections.namedtuple("Team", ["sync", "sync_pb", "rank", "timeout_ns"])
Team.__doc__ = """The context's ranks as a Triton kernel sees them (Context.team()), for the
device-side synchronisation of symaddr.triton.team and the collectives of
symaddr.triton.collectives: sync, the team's own symmetric sync area (int64); sync_pb its
table; rank, this rank; timeout_ns, the bound of every wait. One kernel argument."""
