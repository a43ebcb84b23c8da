# SPDX-License-Identifier: MIT
"""The Python suites' harness: each case runs on every rank, and a case passes only where every
rank passed it (MPI's MIN of the outcomes), so no rank reports a pass its peers did not make.
A case that returns a text starting "SKIP" is skipped, with that reason. Prints one line a case
and the summary line "N passed, N failed, N skipped". SYMADDR_TEST_CASES="a b" runs only the
cases whose name holds one of those words (the rest are not counted). A rank whose case failed
waits for its peers' outcomes at most SYMADDR_TEST_CASE_WAIT_S seconds (120), then aborts the
job, saying so: a peer may be waiting inside the case, at an MPI call the failed rank left.
Cases(group=pg) takes the outcomes over a torch.distributed process group instead (a test
started by torchrun, with no MPI in the process)."""
import os
import sys
import time
import traceback
from array import array



class Cases:
    def __init__(self, comm=None, group=None):
        self.group = group
        if group is not None:
            import torch.distributed as dist
            self.comm, self.rank = None, dist.get_rank(group)
        else:
            from mpi4py import MPI
            self.comm = comm or MPI.COMM_WORLD
            self.rank = self.comm.Get_rank()
        self.passed = self.failed = self.skipped = 0

    def run(self, name, fn):
        only = os.environ.get("SYMADDR_TEST_CASES", "").split()
        if only and not any(w in name for w in only):
            return
        try:
            why = fn() or ""
            ok = 2 if why.startswith("SKIP") else 1
        except Exception as e:  # noqa: BLE001
            ok, why = 0, "%s: %s" % (type(e).__name__, e)
            traceback.print_exc()
        worst = self._outcome(ok, name, why)
        if self.rank == 0:
            if worst == 2:
                print("skip   - %s (%s)" % (name, why), flush=True)
            else:
                print(("ok     - %s" % name) if worst else ("not ok - %s (%s)" % (name, why)),
                      flush=True)
        if worst == 2:
            self.skipped += 1
        elif worst:
            self.passed += 1
        else:
            self.failed += 1
            if not ok:
                print("[rank %d] %s" % (self.rank, why), file=sys.stderr, flush=True)

    def _outcome(self, ok, name, why):
        """The MIN of every rank's outcome. A rank whose case failed waits a bounded time: a
        peer still inside the case at an MPI barrier held every rank until the test's own limit
        (300 s at each rank count on the GPU machine, 2026-12-04)."""
        if self.group is not None:
            return self._outcome_torch(ok, name, why)
        from mpi4py import MPI
        mine, worst = array("i", [ok]), array("i", [0])
        req = self.comm.Iallreduce(mine, worst, op=MPI.MIN)
        if ok:
            req.Wait()
            return worst[0]
        wait = float(os.environ.get("SYMADDR_TEST_CASE_WAIT_S", "120"))
        deadline = time.monotonic() + wait
        while not req.Test():
            if time.monotonic() > deadline:
                print("[rank %d] %s failed here (%s), and the other ranks did not finish the "
                      "case within %g s (SYMADDR_TEST_CASE_WAIT_S): one waits inside it for "
                      "this rank, so the job is aborted" % (self.rank, name, why, wait),
                      file=sys.stderr, flush=True)
                # the launcher forwards what the rank wrote before it tears the job down:
                # MPICH's Hydra dropped this line once when the abort followed at once (CI under
                # load, 2026-12-07)
                time.sleep(0.5)
                self.comm.Abort(1)
            time.sleep(0.001)
        return worst[0]

    def _outcome_torch(self, ok, name, why):
        import datetime
        import torch
        import torch.distributed as dist
        t = torch.tensor([ok], dtype=torch.int32)
        work = dist.all_reduce(t, op=dist.ReduceOp.MIN, group=self.group, async_op=True)
        wait = float(os.environ.get("SYMADDR_TEST_CASE_WAIT_S", "120"))
        try:
            work.wait(datetime.timedelta(seconds=wait))
        except RuntimeError:
            print("[rank %d] %s: the other ranks did not finish the case within %g s "
                  "(SYMADDR_TEST_CASE_WAIT_S); this rank exits" % (self.rank, name, wait),
                  file=sys.stderr, flush=True)
            os._exit(1)
        return int(t[0])

    def barrier(self):
        """Every rank of the job got here (MPI's or torch.distributed's barrier)."""
        if self.group is not None:
            import torch.distributed as dist
            dist.barrier(group=self.group)
        else:
            self.comm.Barrier()

    def finish(self):
        """The summary line on rank 0; the process's exit status."""
        if self.rank == 0:
            print("%d passed, %d failed, %d skipped" % (self.passed, self.failed, self.skipped),
                  flush=True)
        return 1 if self.failed else 0


def launch():
    """(rank, size, Cases) of the job's launcher: torchrun (TORCHELASTIC_RUN_ID set: a gloo
    process group, and no MPI in the process) or mpiexec (mpi4py's COMM_WORLD)."""
    if "TORCHELASTIC_RUN_ID" in os.environ:
        import torch.distributed as dist
        if not dist.is_initialized():
            dist.init_process_group("gloo")
        return dist.get_rank(), dist.get_world_size(), Cases(group=dist.group.WORLD)
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    return comm.Get_rank(), comm.Get_size(), Cases(comm)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def refused(what, fn, words=(), name="SYMADDR_ERR_INVALID_ARG"):
    """fn() raises symaddr's SymaddrError name on this rank, its message holding every word."""
    from symaddr import SymaddrError  # here, not at the top: test_harness runs without symaddr
    try:
        fn()
    except SymaddrError as e:
        check(e.name == name and all(w in str(e) for w in words), "%s: %s" % (what, e))
        return
    raise AssertionError("%s passed, want %s" % (what, name))
