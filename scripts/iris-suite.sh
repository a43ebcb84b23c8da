#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs ROCm/iris's own tests against symaddr.iris with nothing changed in them but what
# `import iris` finds: tests/iris (a shim: `from symaddr.iris import *`, and iris.ccl,
# iris.ops, iris.context the same way). The tests stay upstream: pass their folder (Iris's
# tests/unittests, tests/ccl, or several).
#   scripts/iris-suite.sh IRIS_TESTS_DIR... [-- RANKS...]      (default ranks: 2)
# Each file runs under torchrun at each rank count (pytest with tests/iris's plugin, which
# initialises torch.distributed as Iris's own runner does, gloo); IRIS_FILES="glob..." limits
# the files (default test_*.py), IRIS_TIMEOUT their time each (300 s). Devices the tests name
# and the machine lacks are mapped by the plugin, and only so: SYMADDR_IRIS_ONE_GPU=1 (several
# ranks on one GPU: cuda:N is this rank's GPU) or SYMADDR_IRIS_CUDA_AS_CPU=1 (the cpu backend
# under the interpreter: cuda is the CPU). Prints one line a file and rank count: its pytest
# summary (rank 0's); logs in $OUT/iris-suite.
set -uo pipefail
dirs=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do dirs+=("$1"); shift; done
[ $# -gt 0 ] && shift
[ ${#dirs[@]} -gt 0 ] || { echo "usage: scripts/iris-suite.sh IRIS_TESTS_DIR... [-- RANKS...]"; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$here/tests/iris:$here/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
out=${OUT:-/tmp}/iris-suite
mkdir -p "$out"
rc=0
for n in ${*:-2}; do
    for d in "${dirs[@]}"; do
        for pat in ${IRIS_FILES:-test_*.py}; do
            for f in "$d"/$pat; do
                [ -e "$f" ] || continue
                name=$(basename "$(dirname "$f")")-$(basename "$f" .py)
                log="$out/$name-$n.log"
                # the tests' own folder first on the path (their helpers), then the shim
                (cd "$(dirname "$f")" && timeout "${IRIS_TIMEOUT:-300}" python3 -m \
                    torch.distributed.run --standalone --nproc-per-node "$n" -m pytest -q \
                    -p no:cacheprovider -p no:xdist -p symaddr_iris_plugin \
                    "$(basename "$f")") >"$log" 2>&1
                r=$?
                [ $r = 0 ] || rc=1
                summary=$(sed 's/\x1b\[[0-9;]*m//g' "$log" |
                          grep -E '^[=]* ?[0-9]+ (passed|failed|error|skipped)|no tests ran' |
                          head -1 | tr -d '=')
                echo "$name, $n ranks: ${summary:-no summary (rc $r; see $log)}"
            done
        done
    done
done
exit $rc
