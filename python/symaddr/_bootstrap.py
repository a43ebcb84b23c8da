# SPDX-License-Identifier: MIT
"""How a Context's ranks reach each other from Python: an MPI communicator (mpi4py; the library
starts with symaddr_init) or a torch.distributed process group (the library starts with
symaddr_init_bootstrap over the group's point-to-point messages, and MPI is never
initialised). Both give the lifetimes' agreement (a MIN of flags within the context's
deadline) and say whether their runtime is still up."""
import array
import atexit
import ctypes
import datetime
import os
import sys
import time
from typing import Any, Callable, List

from ._lib import STATUS, SymaddrError
from ._lib import error as _err

# Operations a peer never completed: their runtime still holds the requests and buffers.
_orphans: List[Any] = []

# The variables a launcher of MPI sets for its ranks (Open MPI, PMIx, Hydra and PMI-1, Slurm's
# PMI): with none of them, a process that torchrun started is not an MPI rank.
_MPI_LAUNCHED = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS")


def torch_group_ready() -> bool:
    """Whether torch.distributed is initialised over more than one process, in a process that
    no MPI launcher started: Context() then starts over torch.distributed's default group."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is None or not dist.is_available() or not dist.is_initialized():
            return False
        return dist.get_world_size() > 1 and not any(v in os.environ for v in _MPI_LAUNCHED)
    except Exception:  # introspection: a torch without these is not one to start over
        return False


class MpiRanks:
    """The ranks of an mpi4py communicator (a Dup of symaddr's own for the agreements)."""

    def __init__(self, comm: Any) -> None:
        self.comm = comm.Dup()

    @staticmethod
    def finalized() -> bool:
        mpi = sys.modules.get("mpi4py.MPI")
        return mpi is not None and mpi.Is_finalized()

    def agree_min(self, flags: List[int], timeout_s: float, abandon: Callable) -> List[int]:
        from mpi4py import MPI
        send, recv = array.array("i", flags), array.array("i", flags)
        req = self.comm.Iallreduce(send, recv, op=MPI.MIN)
        start = time.monotonic()
        deadline, spin_until = start + timeout_s, start + 2e-4
        pause = 1e-5
        try:
            while not req.Test():
                now = time.monotonic()
                if now < spin_until:  # the peers are usually here already: test again at
                    continue  # once (a time.sleep(0) each turn made it 190 us, not 2)
                if now > deadline:
                    _orphans.append((req, send, recv))
                    raise SymaddrError(STATUS["SYMADDR_ERR_TIMEOUT"], abandon(
                        "a peer did not come to agree which freed memory no rank reaches any "
                        "more (timeout %.0f ms)" % (timeout_s * 1e3)))
                time.sleep(pause)
                pause = min(pause * 2, 1e-3)
        except SymaddrError:
            raise
        except BaseException as e:  # Ctrl-C in the wait: MPI still writes recv when peers come
            _orphans.append((req, send, recv))
            abandon("an agreement which freed memory no rank reaches was interrupted (%s)" %
                    type(e).__name__)
            raise
        return list(recv)

    def free(self, abandoned: bool) -> None:
        if not abandoned:  # an agreement a peer never came to still uses the communicator
            self.comm.Free()


class TorchRanks:
    """The ranks of a torch.distributed process group, through a gloo group of symaddr's own
    over the same ranks (CPU messages, whatever the user's group's backend is): the library's
    bootstrap operations (symaddr_bootstrap_ops_t) and the lifetimes' agreement."""

    def __init__(self, lib: Any, group: Any) -> None:
        import torch
        import torch.distributed as dist
        self.torch, self.dist = torch, dist
        if not dist.is_available() or not dist.is_initialized():
            raise _err("SYMADDR_ERR_INVALID_ARG", "Context(group=): torch.distributed is not "
                       "initialised: call torch.distributed.init_process_group first (torchrun "
                       "sets its variables)")
        if group is None or group is dist.group.WORLD:
            ranks = list(range(dist.get_world_size()))
            self.group = dist.new_group(backend="gloo")  # collective over the default group
        else:
            if not isinstance(group, dist.ProcessGroup):
                raise _err("SYMADDR_ERR_INVALID_ARG", "Context(group=%r): pass a "
                           "torch.distributed ProcessGroup (dist.group.WORLD, or one of "
                           "dist.new_group)" % (group,))
            ranks = dist.get_process_group_ranks(group)
            if dist.get_rank() not in ranks:
                raise _err("SYMADDR_ERR_INVALID_ARG", "Context(group=): this rank is not in "
                           "the group: make the Context on its ranks alone")
            self.group = dist.new_group(ranks=ranks, backend="gloo",
                                        use_local_synchronization=True)
        self.rank, self.size = self.group.rank(), self.group.size()
        self.last_error = ""
        st, vp, sz, i, u = (ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                            ctypes.c_uint)
        sendrecv_t = ctypes.CFUNCTYPE(st, vp, i, vp, sz, i, vp, sz, u)
        allgather_t = ctypes.CFUNCTYPE(st, vp, vp, vp, sz, u)
        barrier_t = ctypes.CFUNCTYPE(st, vp, u)
        # the callbacks live as long as this object, which atexit keeps (below): the library
        # may call them until the process ends (a finalize deferred to the exit)
        self._callbacks = (sendrecv_t(self._op(self._sendrecv)),
                           allgather_t(self._op(self._allgather)),
                           barrier_t(self._op(self._barrier)))
        ops = lib.BootstrapOps()
        ops.version = lib.abi["bootstrap_ops_version"]
        ops.sendrecv, ops.allgather, ops.barrier = [
            ctypes.cast(c, ctypes.c_void_p) for c in self._callbacks]
        self.ops = ops
        # torch's gloo groups left to the interpreter's teardown ended processes with
        # "terminate called without an active exception" (1 run in 4 of a program that
        # exited without destroy_process_group): symaddr's own goes before that
        atexit.register(self._destroy_group)

    def _destroy_group(self):
        try:
            if self.dist.is_initialized() and self.group is not None:
                self.dist.destroy_process_group(self.group)
        except Exception:  # noqa: BLE001  the process is ending: nothing to tell
            pass
        self.group = None  # a later operation fails (SYMADDR_ERR_PEER), never reaches gloo

    # -- the library's operations: a status, never an exception (ctypes would print and drop
    #    it, and return 0) --------------------------------------------------------------------
    def _gone(self):
        """A status where the group can no longer carry messages (destroy_process_group ran, or
        the process is exiting: a context whose memory was still reached finalizes then)."""
        if self.group is not None and self.dist.is_initialized():
            return 0
        self.last_error = "torch.distributed was destroyed before the context was finalized"
        return STATUS["SYMADDR_ERR_PEER"]

    def _op(self, fn):
        """fn as one of the library's operations: its status, SYMADDR_ERR_PEER where the group
        is gone or fn raised."""
        def op(_state, *args):
            gone = self._gone()
            if gone:
                return gone
            try:
                return fn(*args)
            except Exception as e:  # noqa: BLE001
                self.last_error = "%s: %s" % (type(e).__name__, e)
                return STATUS["SYMADDR_ERR_PEER"]
        return op

    def _wait(self, works, timeout_ms, keep):
        timeout = datetime.timedelta(milliseconds=max(int(timeout_ms), 1))
        try:
            for w in works:
                w.wait(timeout)
            return 0
        except Exception as e:  # noqa: BLE001  gloo raises RuntimeError on a timeout too
            _orphans.append((works, keep))  # gloo may still write or read them
            self.last_error = "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200])
            timed_out = "imed out" in str(e) or "imeout" in str(e)
            return STATUS["SYMADDR_ERR_TIMEOUT" if timed_out else "SYMADDR_ERR_PEER"]

    def _bytes(self, addr, n):
        torch = self.torch
        if n == 0:
            return torch.empty(0, dtype=torch.uint8)
        return torch.frombuffer((ctypes.c_char * n).from_address(addr), dtype=torch.uint8)

    def _sendrecv(self, to, send, send_bytes, frm, recv, recv_bytes, timeout_ms):
        works, keep = [], []
        if frm >= 0:
            got = self.torch.empty(recv_bytes, dtype=self.torch.uint8)
            works.append(self.group.recv([got], frm, 0))
            keep.append(got)
        if to >= 0:  # a copy: the library's buffer goes when this returns
            out = self._bytes(send, send_bytes).clone()
            works.append(self.group.send([out], to, 0))
            keep.append(out)
        st = self._wait(works, timeout_ms, keep)
        if st == 0 and frm >= 0 and recv_bytes:
            ctypes.memmove(recv, got.data_ptr(), recv_bytes)
        return st

    def _allgather(self, mine, out, nbytes, timeout_ms):
        inp = self._bytes(mine, nbytes).clone()
        outs = [self.torch.empty(nbytes, dtype=self.torch.uint8) for _ in range(self.size)]
        st = self._wait([self.group.allgather([outs], [inp])], timeout_ms, [inp, outs])
        if st == 0 and nbytes:
            for r, t in enumerate(outs):
                ctypes.memmove(out + r * nbytes, t.data_ptr(), nbytes)
        return st

    def _barrier(self, timeout_ms):
        return self._wait([self.group.barrier()], timeout_ms, [])

    # -- Python's own ----------------------------------------------------------------------
    def finalized(self) -> bool:
        return not self.dist.is_initialized()

    def agree_min(self, flags: List[int], timeout_s: float, abandon: Callable) -> List[int]:
        if self._gone():  # never the default group in its place
            raise SymaddrError(STATUS["SYMADDR_ERR_PEER"], self.last_error)
        t = self.torch.tensor(flags, dtype=self.torch.int32)
        work = self.dist.all_reduce(t, op=self.dist.ReduceOp.MIN, group=self.group,
                                    async_op=True)
        if self._wait([work], timeout_s * 1e3, [t]) != 0:
            raise SymaddrError(STATUS["SYMADDR_ERR_TIMEOUT"], abandon(
                "a peer did not come to agree which freed memory no rank reaches any more "
                "(timeout %.0f ms; %s)" % (timeout_s * 1e3, self.last_error)))
        return [int(v) for v in t.tolist()]

    def free(self, abandoned: bool) -> None:
        """Nothing now: the gloo group lives until the process ends (_destroy_group), since a
        finalize deferred to the exit may still use it."""
