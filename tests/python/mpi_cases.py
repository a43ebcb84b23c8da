# SPDX-License-Identifier: MIT
"""The Python suites' harness: each case runs on every rank, and a case passes only where every
rank passed it (MPI's MIN of the outcomes), so no rank reports a pass its peers did not make.
A case that returns a text starting "SKIP" is skipped, with that reason. Prints one line a case
and the summary line "N passed, N failed, N skipped". SYMADDR_TEST_CASES="a b" runs only the
cases whose name holds one of those words (the rest are not counted)."""
import os
import sys
import traceback

from mpi4py import MPI


class Cases:
    def __init__(self, comm=None):
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
        worst = self.comm.allreduce(ok, op=MPI.MIN)
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

    def finish(self):
        """The summary line on rank 0; the process's exit status."""
        if self.rank == 0:
            print("%d passed, %d failed, %d skipped" % (self.passed, self.failed, self.skipped),
                  flush=True)
        return 1 if self.failed else 0


def check(cond, what):
    if not cond:
        raise AssertionError(what)
