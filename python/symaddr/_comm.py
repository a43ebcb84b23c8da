# SPDX-License-Identifier: MIT
"""The host side's communication calls of a Context: the collectives (one method per row of
the library's list, symaddr_collective_info), put/get, barrier and sync. Stream-ordered on a
GPU, complete on return on the cpu backend."""
import ctypes
import os
import sys
import threading
from typing import Any

from ._arrays import HostArray, address, is_torch, not_an_array
from ._lib import STATUS, SymaddrError, index_of
from ._lib import error as _err
from ._staging import Staging

_ND_SIZE = HostArray.__base__.size.__get__ if HostArray is not None else None  # ndarray's


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def place(frame, files):
    """The place a collective was called from that validation compares across ranks: the
    first frame outside symaddr's package and torch's (shmem.ccl, the fused ops, a torch
    custom op's dispatch all call from one line of their own, which would match whatever
    their callers did), and its file as bytes. files caches each code object's answer: its
    file, or False for a frame passed over."""
    while True:
        code = frame.f_code
        where = files.get(code)
        if where is None:
            torch = sys.modules.get("torch")
            inside = (_PACKAGE,) if torch is None else (
                _PACKAGE, os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)
            where = files[code] = (False if os.path.abspath(code.co_filename).startswith(inside)
                                   else os.fsencode(code.co_filename))
        if where is not False:
            return frame, where
        if frame.f_back is None:  # the whole stack is symaddr's or torch's
            return frame, os.fsencode(code.co_filename)
        frame = frame.f_back


def contiguous(a, what="this call", role="the array"):
    if is_torch(a):
        ok = a.is_contiguous()
    elif hasattr(a, "flags") and (hasattr(type(a), "__array_interface__")  # the class's first:
                                  or hasattr(a, "__array_interface__")):  # an ndarray's builds
        ok = a.flags["C_CONTIGUOUS"]  # a dict (0.5 us)
    else:
        raise not_an_array(what, role, a)
    if not ok:
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s takes contiguous memory, but the array has "
                   "strides %s; pass a contiguous view or a copy (np.ascontiguousarray, "
                   "tensor.contiguous())" % (what, tuple(a.stride() if is_torch(a)
                                                         else a.strides)))
    return a


def not_split(call, n, parts):
    """The error for n elements that a call splits into parts equal parts, and cannot."""
    return _err("SYMADDR_ERR_INVALID_ARG", "%s: %d elements do not split into %d equal parts; "
                "pass a multiple of the context's size" % (call, n, parts))


def writable(a, call, role):
    """INVALID_ARG for an array marked read-only (a NumPy array whose writeable flag is off,
    np.frombuffer of bytes) that a call would write, as NumPy's ufuncs refuse it; torch's
    tensors carry no such mark."""
    flags = getattr(a, "flags", None)
    if flags is not None and not is_torch(a):
        ok = flags["WRITEABLE"]
    else:
        face = getattr(a, "__array_interface__", None)
        ok = face is None or not face["data"][1]
    if not ok:
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: %s is read-only, and the call writes it: "
                   "pass a writable array (a copy, or memory you may write)" % (call, role))


def nbytes_of(a):
    return a.numel() * a.element_size() if is_torch(a) else a.nbytes


def count_of(a):
    return a.numel() if is_torch(a) else int(a.size)


def mpi_op_name(op):
    """symaddr's name of an mpi4py reduction op (MPI.SUM: "sum", PROD, MAX, MIN), else None
    (also where mpi4py is not loaded; its ops compare with == but do not hash)."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None or isinstance(op, str):
        return None
    for mpi_op, name in ((mpi.SUM, "sum"), (mpi.PROD, "prod"), (mpi.MAX, "max"),
                         (mpi.MIN, "min")):
        if op == mpi_op:
            return name
    return None


class Communication(Staging):
    """The collectives, put/get, barrier and sync of a Context (a base class of Context)."""

    def _init_comm(self):
        self._stage = None  # (address, bytes, provider) of the staging workspace
        self._stage_tensor = None  # a torch view of the whole workspace (_stage_view)
        self._stage_captured = False  # a staged call may have been captured in a CUDA graph
        self._stage_kept = []  # outgrown workspaces a graph may still write: freed at close
        self._is_capturing = None  # torch's test of its current stream (_capturing)
        self._staging = threading.Lock()  # held by a staged call until its recv is copied
        self._known = {}  # address -> _lookup's answer (cleared when registrations change)
        self._rows = {}  # collective name -> what _collective needs of its row
        self._files = {}  # a caller's code object -> its file name as bytes
        torch = sys.modules.get("torch")
        self._tensor_type = torch.Tensor if torch is not None else ()
        self._dtypes = {}  # the array's dtype -> symaddr_dtype_t
        self._ops = {}  # an op's name -> what _op says of it
        self._raw_stream = None  # torch._C._cuda_getCurrentRawStream, once looked up

    def _dtype_of(self, a):
        code = self._dtypes.get(a.dtype)
        if code is None:
            name = str(a.dtype).replace("torch.", "")
            if name not in self._lib.dtypes:
                raise _err("SYMADDR_ERR_INVALID_ARG", "symaddr has no dtype for %s; use one of "
                           "%s" % (a.dtype, ", ".join(sorted(self._lib.dtypes))))
            code = self._dtypes[a.dtype] = self._lib.dtypes[name]
        return code

    def _op(self, op, what):
        """symaddr_redop_t of op ("sum", ..., or an mpi4py op), and whether it is "avg" (sum,
        then a division by the context's size)."""
        if type(op) is str:  # remembered: mpi4py's ops do not hash
            hit = self._ops.get(op)
            if hit is not None:
                return hit
        table = self._lib.abi["redop"]
        if type(op) is str and op in table:
            hit = self._ops[op] = table[op], False
            return hit
        if op == "avg":
            hit = self._ops[op] = table["sum"], True
            return hit
        name = mpi_op_name(op)
        if name is not None:
            return table[name], False
        raise _err("SYMADDR_ERR_INVALID_ARG", "%s: %r is not a reduction op: use one of %s, "
                   "\"avg\" (floating-point dtypes), or mpi4py's MPI.SUM, MPI.PROD, MPI.MAX, "
                   "MPI.MIN" % (what, op, ", ".join('"%s"' % k for k in sorted(table))))

    def _address(self, a, what, name):
        """a's address, refused when a is not an array or lies in freed memory."""
        addr = address(a, name, what)
        if self._lifetimes.pending:
            self._freed_at(addr)
        return addr

    def _shape_of(self, a, role, call, write=False):
        """(address, elements, dtype) of an array or tensor, contiguous, in memory symaddr
        still serves, and writable where the call writes it (write); torch's tensors first
        (the common and cheapest case)."""
        if type(a) is self._tensor_type:
            if not a.is_contiguous():
                contiguous(a, call)
            addr = a.data_ptr()
            count = a.numel()
        elif type(a) is HostArray:  # symaddr's own NumPy arrays: the next cheapest
            flags = a.flags
            if not flags.c_contiguous:
                contiguous(a, call, role)
            if write and not flags.writeable:
                writable(a, call, role)
            addr = a.data_ptr()  # SymaddrError once its registration was freed
            count = _ND_SIZE(a)  # HostArray.size makes a _Count (for Triton) each call
        else:
            contiguous(a, call, role)
            if write:
                writable(a, call, role)
            addr = self._address(a, role, call)
            return addr, count_of(a), a.dtype
        if self._lifetimes.pending:
            self._freed_at(addr)
        return addr, count, a.dtype

    def _registrations_changed(self):
        """Forget what was found or planned over the registrations, as one starts, ends or
        is released: _lookup's answers and symaddr.triton.collectives' plans (their peer
        tables, which would keep an ended registration reached, and call identities)."""
        self._known.clear()
        self._calls.clear()

    def _lookup(self, addr):
        """(symaddr_lookup's status, the address of its map) for addr: OK and NOT_FOUND are
        remembered until the context's registrations change (a loop of calls passes the same
        arrays call after call)."""
        hit = self._known.get(addr)
        if hit is None:
            m = ctypes.c_void_p()
            hit = (self._lib.symaddr_lookup(self._h, ctypes.c_void_p(addr), ctypes.byref(m)),
                   m.value)
            if hit[0] in (0, STATUS["SYMADDR_ERR_NOT_FOUND"]):
                if len(self._known) > 4096:
                    self._known.clear()
                self._known[addr] = hit
        return hit

    def _row(self, name):
        """The library's row of a collective, as _collective uses it (made once)."""
        row = self._rows.get(name)
        if row is None:
            index, flags = self._lib.collectives[name]
            bits = self._lib.abi["collective_flag"]
            row = self._rows[name] = (
                index, self.size if flags & bits["send_all"] else 1,
                self.size if flags & bits["recv_all"] else 1, bool(flags & bits["reduces"]),
                bool(flags & bits["rooted"]), bool(flags & bits["root_only"]),
                "Context." + name)
        return row

    def _rank_arg(self, v, what, role):
        """v as the int of a rank of this context, else INVALID_ARG naming what and role."""
        r = index_of(v)
        if r is None or not 0 <= r < self.size:
            raise _err("SYMADDR_ERR_INVALID_ARG", "%s: %s %r is not a rank of this context: "
                       "pass an int, 0..%d" % (what, role, v, self.size - 1))
        return r

    def _root(self, root, what):
        return self._rank_arg(root, what, "root")

    def _collective(self, name, send, recv, op, root, stream):
        """Every collective method (made by add_collectives): the shape of send and recv
        checked against the library's row, then symaddr_collective_run_at with the file and
        line that called the method, which validation mode compares across ranks. A recv that
        is not symmetric memory is staged: the collective writes the context's workspace,
        then recv is copied from it (stream-ordered)."""
        index, per_send, per_recv, reduces, rooted, root_only, call = self._row(name)
        h = self._h
        if not h or self._broken:  # closed, or broken by a Triton team kernel's failure
            self._open()
        try:  # this rank's own arguments, before any exchange (free where nothing raises)
            writes = not root_only or self.rank == index_of(root)  # recv (a non-root's is not)
            if recv is None and root_only and per_recv != per_send and not writes:  # MPI's
                # idiom off a gather's root: no recv (reduce's None, of send's shape, is in
                # place); the workspace stands in for it (below)
                s, n_send, dtype = self._shape_of(send, "send", call)
                r, n_recv = None, n_send * per_recv // per_send
            elif recv is None or recv is send:
                s, n_send, dtype = self._shape_of(send, "send", call, writes)
                recv, r, n_recv = send, s, n_send
            else:
                s, n_send, dtype = self._shape_of(send, "send", call)
                r, n_recv, recv_dtype = self._shape_of(recv, "recv", call, writes)
                if recv_dtype != dtype:
                    kinds = ["a torch tensor" if is_torch(a) else "a NumPy array"
                             for a in (send, recv)]
                    raise _err("SYMADDR_ERR_INVALID_ARG", "%s: send is %s, recv %s: pass %s" % (
                        call, *((kinds[0], kinds[1], "recv of send's kind")
                                if kinds[0] != kinds[1] else (dtype, recv_dtype, "one dtype"))))
            if n_send * per_recv != n_recv * per_send:
                raise self._shapes(call, n_send, n_recv, per_send, per_recv, recv is send)
            if n_send % per_send:
                raise not_split(call, n_send, per_send)
            code = self._dtypes.get(dtype)
            if code is None:
                code = self._dtype_of(send)
            op_code, avg = self._op(op, call) if reduces else (0, False)
            if avg and not str(dtype).replace("torch.", "").startswith(("float", "bfloat")):
                raise _err("SYMADDR_ERR_INVALID_ARG", "%s: op=\"avg\" takes floating-point "
                           "data, not %s; reduce with \"sum\" and divide as you need"
                           % (call, dtype))
            known = self._known  # whether s lies in a registration (symaddr_lookup), inline
            if (known.get(s) or self._lookup(s))[0] != 0:
                raise _err("SYMADDR_ERR_NOT_FOUND", "%s: send is not symmetric memory of this "
                           "context: make it with ctx.allocate_symmetric(shape, dtype) (a view "
                           "at any offset will do) or register it with ctx.import_(array); recv "
                           "may be any array or tensor on the context's device" % call)
            caller = sys._getframe(2)  # the caller: _collective <- Context.<name> <- it
            where = self._files.get(caller.f_code)
            if not where:  # not seen yet, or symaddr's own (ccl, ops) or torch's dispatch
                caller, where = place(caller, self._files)
            staged = r is None or r != s and (known.get(r) or self._lookup(r))[0] != 0
            # recv's bytes, the workspace's size wherever one may be needed
            nbytes = nbytes_of(send) // n_send * n_recv if n_send and (staged or rooted) else 0
            if staged and recv is not None:
                if is_torch(recv) != is_torch(send) or (is_torch(recv) and
                                                        recv.device != send.device):
                    raise _err("SYMADDR_ERR_INVALID_ARG", "%s: recv is on %s, send on %s: pass "
                               "recv on the context's device" % (
                                   call, getattr(recv, "device", "the host"),
                                   getattr(send, "device", "the host")))
        except SymaddrError:
            if self.validating:  # the peers learn it through the call's agreement, and raise
                self._refused_here(index, place(sys._getframe(2), self._files)[0])
            raise
        # every rank grows the workspace alike (collective): where it stages (every rank
        # passes a recv of one kind: validation compares the places), and in a rooted call
        # where any rank stages (_rooted_grows), as each rank's recv there is its own
        grows = self._rooted_grows(staged, nbytes) if rooted and n_recv > 0 else staged
        if grows and not self._staging.acquire(False):  # held until recv is copied out
            raise self._two_threads(call)
        try:  # (free in Python 3.11 where nothing raises)
            if grows:
                workspace = self._workspace(nbytes)
                if staged:
                    r = workspace
            if rooted:
                root = self._root(root, name)
            st = self._stream_of(send, stream)
            status = self._lib.symaddr_collective_run_at(
                h, index, s, r, n_send // per_send, code, op_code, root if rooted else 0, st,
                where, -caller.f_lineno if staged and not rooted else caller.f_lineno)
            if status:
                self._check(status)
            if staged and (not root_only or self.rank == root):
                self._copy_out(recv, r, nbytes, st)
            if grows and not self._stage_captured and st is not None and (
                    stream is not None or self._capturing()):  # a caller's stream: may be
                self._stage_captured = True
        finally:
            if grows:
                self._staging.release()
        if staged and self._broken:  # another thread came in while this one copied out
            raise _err("SYMADDR_ERR_BROKEN", self._broken)
        if self.validating:  # after the call, which every rank made: no peer is left waiting
            self._check_tables()
        if self._team is not None and self.backend == "cpu":
            self._check_team()
        if avg and (not rooted or self.rank == root):
            if st is not None and is_torch(recv) and recv.is_cuda:  # on the collective's stream
                import torch
                with torch.cuda.stream(self._torch_stream(st, recv.device)):
                    recv /= self.size
            else:
                recv /= self.size
        return recv

    def _refused_here(self, index, caller):
        """Validation mode: this rank refused its own arguments before any call, so it makes
        the call with none (the library refuses them too), and the call's agreement fails it
        on every rank (SYMADDR_ERR_INVALID_ARG or the like, naming this rank) where the peers
        would wait out the timeout and break the context; this rank's own message stands."""
        self._lib.symaddr_collective_run_at(self._h, index, None, None, 1, 0, 0, 0, None,
                                            os.fsencode(caller.f_code.co_filename),
                                            caller.f_lineno)

    def _shapes(self, call, n_send, n_recv, per_send, per_recv, none):
        """INVALID_ARG for a send and recv whose element counts the collective's row refuses
        (none: recv was None or send itself, the in-place form of a call of one shape)."""
        rule = ("recv must hold the context's size (%d) times send's elements: %d" % (
            self.size, n_send * self.size) if per_recv > per_send else
            "send must hold the context's size (%d) times recv's elements: %d" % (
                self.size, n_recv * self.size) if per_send > per_recv else
            "send and recv must hold the same number")
        why = ("; recv=None (or recv=send) is the in-place form of a call whose send and recv "
               "have one shape only: pass a recv of that size (off the root of a gather, "
               "recv=None is MPI's idiom, and taken)" if none and per_send != per_recv else "")
        return _err("SYMADDR_ERR_INVALID_ARG", "%s: send has %d elements and recv %d; %s%s"
                    % (call, n_send, n_recv, rule, why))

    def _two_threads(self, call):
        """What a staged call that found another thread's staged call in progress raises: the
        C library's rule for two threads in one context's collectives (symaddr.h, Threads),
        here where the other call is past its C call but still copies out of the workspace.
        The context is broken: the peers may have paired the call in progress with this one."""
        self._broken = ("two threads were in collective calls on this context at once (%s): "
                        "ranks pair calls by their order, so the context is broken; create a "
                        "new Context, one a thread for concurrent collectives" % call)
        return _err("SYMADDR_ERR_INVALID_ARG", "%s: another thread is in a collective call on "
                    "this context: give each thread its own symaddr.Context (this one is "
                    "broken now)" % call)

    def barrier(self, stream: Any = None) -> None:
        """Every rank of the context waits for the others (on the stream, on a GPU)."""
        h = self._open()
        self._check(self._lib.symaddr_barrier(h, self._stream_of(None, stream)))
        if self.validating:
            self._check_tables()
        if self._team is not None and self.backend == "cpu":
            self._check_team()

    # ---- one-sided ------------------------------------------------------------------------

    def _rma(self, dst, src, target, stream, fn, name):
        self._open()
        contiguous(dst, name, "dst")
        contiguous(src, name, "src")
        writable(dst, name, "dst")
        target = self._rank_arg(target, name, "target")
        if dst.dtype != src.dtype and str(dst.dtype).replace("torch.", "") != str(
                src.dtype).replace("torch.", ""):  # a copy of bytes would reinterpret them
            raise _err("SYMADDR_ERR_INVALID_ARG", "%s: dst is %s, src %s: pass one dtype (a "
                       "view of the other dtype, .view(dtype), if the bytes are meant)"
                       % (name, dst.dtype, src.dtype))
        local = src if name == "put" else dst
        nbytes = nbytes_of(local)
        if nbytes_of(dst if name == "put" else src) < nbytes:
            raise _err("SYMADDR_ERR_OUT_OF_BOUNDS", "%s: the symmetric array (%d bytes) is "
                       "smaller than the local one (%d bytes)" % (
                           name, nbytes_of(dst if name == "put" else src), nbytes))
        d, s = self._address(dst, "dst", name), self._address(src, "src", name)
        self._check(fn(self._h, ctypes.c_void_p(d), ctypes.c_void_p(s), nbytes, target,
                       self._stream_of(local, stream)))
        if self.validating:
            self._check_tables()

    def put(self, dst: Any, src: Any, target: int, stream: Any = None) -> None:
        """Copy src (local) into rank target's copy of dst (symmetric); both contiguous."""
        self._rma(dst, src, target, stream, self._lib.symaddr_put, "put")

    def get(self, dst: Any, src: Any, target: int, stream: Any = None) -> None:
        """Copy rank target's copy of src (symmetric) into dst (local); both contiguous."""
        self._rma(dst, src, target, stream, self._lib.symaddr_get, "get")

    def sync(self, stream: Any = None) -> None:
        """Wait for the stream's symaddr work (and report a failure any rank met, and in
        validation mode an access a kernel made that validation refused)."""
        h = self._open()
        self._check(self._lib.symaddr_stream_sync(h, self._stream_of(None, stream)))
        if self.validating:
            self._check_tables()
        if self._team is not None:
            self._check_team()


_COLLECTIVE = """def {name}(self, send, recv{recv}{op}{root}, stream=None):
    return self._collective({name!r}, send, recv, {op_arg}, {root_arg}, stream)
"""


def _kinds(flags, bits):
    """What a collective's docstring says of its ranks' recv: of one kind on every rank
    (peers reach it at this rank's offset), or each rank's own (a rooted one: the root
    publishes its buffer), except a gather's: its peers store into the root's recv, so theirs
    lie in its allocation, or are None off the root (MPI's idiom)."""
    if not flags & bits["rooted"]:
        return "every rank passes a recv of the same kind"
    if not flags & bits["root_only"]:
        return "each rank's of either kind"
    if not flags & bits["recv_all"]:
        return "off the root a staged one is left alone; each rank's of either kind"
    return ("off the root a staged one is left alone, and recv may be None (MPI's idiom), "
            "returned as None; every rank's recv lies in the root's allocation, or is plain "
            "or None with a plain root's")


def add_collectives(cls, lib):
    """A method of cls for every collective the library lists (symaddr_collective_info),
    with the signature its C call has: (send, recv[, op][, root], stream); recv defaults to
    None (in place) where send and recv have one shape."""
    bits = lib.abi["collective_flag"]
    for c in lib.abi["collectives"]:
        name, flags = c["name"], c["flags"]
        if name in vars(cls):
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
        ops = (" op: \"sum\", \"prod\", \"max\", \"min\", \"avg\" (floating point: the sum "
               "divided by the size), or mpi4py's MPI.SUM, MPI.PROD, MPI.MAX, MPI.MIN."
               if reduces else "")
        fn.__doc__ = ("%s (%s). send is symmetric memory of this context (an array of "
                      "allocate_symmetric, a view at any offset, an import); recv any "
                      "contiguous array or tensor on the context's device, staged through "
                      "the context's workspace where it is not symmetric (%s).%s stream: a "
                      "torch.cuda.Stream or a raw handle (an int); None: torch's current "
                      "stream. Returns recv." % (c["doc"], shape, _kinds(flags, bits), ops))
        fn.__qualname__ = cls.__name__ + "." + name
        fn.__module__ = "symaddr"
        setattr(cls, name, fn)
