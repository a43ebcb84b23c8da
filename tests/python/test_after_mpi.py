# SPDX-License-Identifier: MIT
"""A program that finalizes MPI (MPI.Finalize()) before it closes a symaddr.Context: close()
raises SymaddrError SYMADDR_ERR_MPI saying to close contexts first, on every rank, and the
process ends normally (a context closed while its memory was reached, finalized at exit, is
skipped). Before, close() made an MPI call after MPI_Finalize and Open MPI aborted the job
("The MPI_Comm_test_inter() function was called after MPI_FINALIZE").

    python3 tests/python/test_after_mpi.py MPIEXEC        (not under mpiexec: it starts one)"""
import os
import re
import subprocess
import sys

CASE = r"""
import os
from mpi4py import MPI
import numpy as np
import symaddr as sa
kept = sa.Context(backend="cpu")
view = kept.allocate_symmetric(4, np.int32)[0][1:]
kept.close()  # its memory still reached (view): finalized at exit
ctx = sa.Context(backend="cpu")
x, _ = ctx.allocate_symmetric(4, np.int32)
MPI.Finalize()
try:
    ctx.close()
    said = "close after MPI.Finalize returned"
except sa.SymaddrError as e:
    said = "%s %s" % (e.name, e)
# one write of the whole line: after MPI_Finalize the launcher forwards what each rank writes
# as it comes, and print()'s separate writes of a line and its newline once came interleaved
os.write(1, ("rank %d: %s\n" % (ctx.rank, said)).encode())
"""


def main():
    mpiexec = sys.argv[1] if len(sys.argv) > 1 else "mpiexec"
    env = dict(os.environ)
    if os.environ.get("SYMADDR_TEST_PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["SYMADDR_TEST_PYTHONPATH"]
    try:
        run = subprocess.run([mpiexec, "-n", "2", sys.executable, "-c", CASE], env=env,
                             capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        print("not ok - the job still ran after 120 s")
        return 1
    # each rank's report, wherever the launcher put it in the job's output
    said = re.findall(r"rank (\d+): ([^\n]*?)(?=rank \d+: |\n|$)", run.stdout)
    good = (sorted(r for r, _ in said) == ["0", "1"] and
            all("SYMADDR_ERR_MPI" in s and "before MPI.Finalize" in s for _, s in said))
    if run.returncode != 0 or not good:
        print("not ok - rc %d; stdout: %s; stderr: %s" % (run.returncode, run.stdout[-600:],
                                                           run.stderr[-600:]))
        return 1
    print("ok     - close after MPI.Finalize raises SYMADDR_ERR_MPI on both ranks, rc 0")
    print("1 passed, 0 failed, 0 skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
