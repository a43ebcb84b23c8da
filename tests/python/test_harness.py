# SPDX-License-Identifier: MIT
"""The Python suites' harness (mpi_cases) never holds a job past a failed case's bound: a case
that raises on rank 0 while rank 1 waits inside it at an MPI barrier ends the job within
SYMADDR_TEST_CASE_WAIT_S (here 2 s), with a message naming the case, instead of holding both
ranks until the test's own limit (300 s a file on the GPU machine, 2026-12-04).

    python3 tests/python/test_harness.py MPIEXEC        (not under mpiexec: it starts one)"""
import os
import subprocess
import sys
import time

CASE = r"""
import sys
from mpi4py import MPI
sys.path.insert(0, sys.argv[1])
from mpi_cases import Cases
comm = MPI.COMM_WORLD
cases = Cases(comm)

def fails_on_rank_0():
    if comm.rank == 0:
        raise RuntimeError("rank 0's check")
    comm.Barrier()  # rank 1 waits here for rank 0, which has left the case

cases.run("a case that fails on rank 0 while rank 1 waits inside it", fails_on_rank_0)
sys.exit(cases.finish())
"""


def main():
    mpiexec = sys.argv[1] if len(sys.argv) > 1 else "mpiexec"
    env = dict(os.environ, SYMADDR_TEST_CASE_WAIT_S="2")
    start = time.monotonic()
    try:
        run = subprocess.run([mpiexec, "-n", "2", sys.executable, "-c", CASE,
                              os.path.dirname(os.path.abspath(__file__))],
                             env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        print("not ok - the job still ran after 120 s (its bound is 2 s)")
        return 1
    took = time.monotonic() - start
    said = "did not finish the case within 2 s" in run.stderr
    if run.returncode == 0 or not said:
        print("not ok - rc %d after %.1f s; stderr: %s" % (run.returncode, took,
                                                           run.stderr[-600:]))
        return 1
    print("ok     - a failed case while a peer waits inside it ends the job (rc %d) in %.1f s, "
          "saying why" % (run.returncode, took))
    print("1 passed, 0 failed, 0 skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
