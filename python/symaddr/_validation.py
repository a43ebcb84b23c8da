# SPDX-License-Identifier: MIT
"""Validation mode's host side (a base class of Context): kernels record the accesses
validation refused in their table's header (symaddr.triton's translate; device.h's in C), and
the context's next barrier, sync, collective or put/get raises them; a freed allocation's own
table is poisoned so that a kernel still given it is refused."""
import ctypes
import sys

from ._lib import STATUS, SymaddrError


def _capturing() -> bool:
    """Whether torch's current CUDA stream is being captured (False without torch)."""
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch.cuda.is_available() and
                    torch.cuda.is_current_stream_capturing())
    except Exception:  # noqa: BLE001  (a torch without CUDA: nothing is captured)
        return False


class Validation:
    """The tables' error words, read and cleared (a base class of Context)."""

    def _heap_table(self):
        """The address of the context-wide heap table (heap_bases), None without a heap."""
        return ctypes.cast(self._lib.symaddr_heap_bases_get(self._h), ctypes.c_void_p).value

    def _read_clear(self, addr):
        """The 32-bit word at addr (host or device memory), set to 0 if it was not."""
        if self.backend == "cpu":
            word = ctypes.c_uint32.from_address(addr)
            value = word.value
            if value:
                word.value = 0
            return value
        word = ctypes.c_uint32()
        self._check(self._lib.symaddr_stream_sync(self._h, None))
        self._check(self._lib.symaddr_memcpy(self._h, ctypes.byref(word), ctypes.c_void_p(addr),
                                             4))
        if word.value:
            zero = ctypes.c_uint32(0)
            self._check(self._lib.symaddr_memcpy(self._h, ctypes.c_void_p(addr),
                                                 ctypes.byref(zero), 4))
        return word.value

    def _read_word(self, addr, ctype):
        """The value of ctype at addr, host or device memory."""
        if self.backend == "cpu":
            return ctype.from_address(addr).value
        word = ctype()
        self._check(self._lib.symaddr_memcpy(self._h, ctypes.byref(word), ctypes.c_void_p(addr),
                                             ctypes.sizeof(word)))
        return word.value

    def _write_word(self, addr, value, ctype):
        """Store value (a ctypes type's) at addr, host or device memory."""
        if self.backend == "cpu":
            ctype.from_address(addr).value = value
        else:
            word = ctype(value)
            self._check(self._lib.symaddr_memcpy(self._h, ctypes.c_void_p(addr),
                                                 ctypes.byref(word), ctypes.sizeof(word)))

    def _poison(self, reg):
        """Validation mode: a freed allocation's own table (a heap allocation's too; never the
        context-wide heap_bases) says its allocation has no bytes, so that a kernel still given
        it is refused and the next host call raises INVALID_MAP. _unpoison puts the size back before
        the library releases the allocation (retention may hand the same table out again)."""
        m = self._lib.Map.from_address(reg.key)
        heap = self._heap_table()
        if reg.kind == "allocation" and m.peer_bases and m.peer_bases != heap:
            at = m.peer_bases + 8 * self._lib.abi["table_header"]["bytes_at"]
            reg.poisoned = (at, self._read_word(at, ctypes.c_uint64))
            self._write_word(at, 0, ctypes.c_uint64)

    def _unpoison(self, reg):
        if reg.poisoned is not None:
            self._write_word(reg.poisoned[0], reg.poisoned[1], ctypes.c_uint64)
            reg.poisoned = None

    def _check_tables(self):
        """Validation mode: raise the access a kernel made through one of this context's tables
        that validation refused (symaddr.triton's translate records it in the table's
        header), and clear it. Not while torch's current stream is being captured into a CUDA
        graph (reading the words waits for the stream, which a capture refuses and is then
        invalidated): the next host call outside the capture reads them."""
        if self.backend != "cpu" and _capturing():
            return
        at = self._lib.abi["table_header"]["error_at"] * 8
        heap = self._heap_table()
        words, dead = {}, set()
        for reg in list(self._regs.values()) + self._lifetimes.pending:
            m = self._lib.Map.from_address(reg.key)
            words.setdefault(m.error_flag, reg.life.what)
            if not reg.life.alive and m.peer_bases != heap:  # its own table, poisoned
                dead.add(m.error_flag)
        if heap:
            words[heap + at] = "the heap (heap_bases)"
        stray = self._lib.abi["validation_area"]["stray"]
        code = self._read_clear(stray)
        if code:  # the process's word: a table without symaddr's header
            raise SymaddrError(STATUS["SYMADDR_ERR_INVALID_MAP"], "a kernel passed "
                               "symaddr.triton a table that is not one of symaddr's (a copy of "
                               "a map's peer_bases, torch.clone or .copy() of it, or another "
                               "library's table): validation cannot check it, so every access "
                               "through it was refused. Pass the map's own peer_bases "
                               "(map.peer_bases), the context's heap_bases for heap memory, or "
                               "register another library's table with ctx.register() and pass "
                               "its map's peer_bases")
        for addr, what in words.items():
            code = self._read_clear(addr)
            if code and addr in dead:
                raise SymaddrError(STATUS["SYMADDR_ERR_INVALID_MAP"], "a kernel used the table "
                                   "of %s after it was freed or unregistered: its accesses "
                                   "were refused; keep the memory until its last kernel"
                                   % what)
            if code:
                st = -int(ctypes.c_int32(code).value)
                raise SymaddrError(st, "%s: a kernel's access through the table of %s was "
                                   "refused by validation: translate each pointer with its own "
                                   "allocation's peer_bases (heap_bases only for heap "
                                   "allocations), within the allocation, to a reachable rank"
                                   % (self._lib.symaddr_strerror(st).decode(), what))

    def _check_team(self):
        """A Triton team kernel's failure (symaddr.triton.team records it in the team's sync
        area): raised once, and the context is broken, as after a C team kernel's."""
        team = self._team
        if team is None:
            return
        addr = team.sync.data_ptr() if hasattr(team.sync, "data_ptr") else \
            team.sync.__array_interface__["data"][0]
        code = self._read_clear(addr)
        if code:
            st = -int(ctypes.c_int32(code).value)
            why = self._lib.symaddr_strerror(st).decode()
            if st == STATUS["SYMADDR_ERR_INVALID_ARG"]:
                from .triton.team import MAX_BLOCKS
                why = ("a program id past symaddr.triton.team.MAX_BLOCKS (%d): launch at most "
                       "that many programs and loop over the tiles" % MAX_BLOCKS)
            elif st == STATUS["SYMADDR_ERR_MISMATCH"]:
                why = ("ranks called another collective, count, dtype, op or root, or passed "
                       "a buffer the peers reach (x, a two-shot's out) in another allocation "
                       "or at another offset of it (the call identities of a team block "
                       "differed): pass the same on every rank")
            self._broken = ("a Triton team kernel failed on this rank or a peer (%s): the "
                            "context is broken; create a new Context" % why)
            raise SymaddrError(st, self._broken)
