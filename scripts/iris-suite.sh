#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs ROCm/iris's own device-function unit tests against symaddr, with nothing changed in
# them: their `import iris` finds tests/iris/iris (Iris's device API from symaddr.triton.heap
# and the host calls those tests make). The tests stay upstream: pass their folder.
#   scripts/iris-suite.sh IRIS/tests/unittests [RANKS...]     (default ranks: 2)
# Prints one line a file and rank count: its pytest summary. Needs torch, pytest and a GPU
# backend (the tests compare against device="cuda" tensors).
set -uo pipefail
dir=${1:?usage: scripts/iris-suite.sh IRIS_TESTS_DIR [RANKS...]}
shift
here=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONPATH="$here/tests/iris:$here/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
out=${OUT:-/tmp}/iris-suite
mkdir -p "$out"
rc=0
for n in ${*:-2}; do
    for f in "$dir"/test_load*.py "$dir"/test_store*.py "$dir"/test_get*.py "$dir"/test_put*.py \
             "$dir"/test_copy*.py "$dir"/test_atomic_*.py; do
        [ -e "$f" ] || continue
        name=$(basename "$f" .py)
        # every rank runs the file's cases in one order (pytest's, without xdist)
        timeout 600 mpiexec -n "$n" python3 -m pytest -q -p no:cacheprovider -p no:xdist "$f" \
            >"$out/$name-$n.log" 2>&1 || rc=1
        # each rank prints its own summary (colours stripped): both are shown
        echo "$name, $n ranks: $(sed 's/\x1b\[[0-9;]*m//g' "$out/$name-$n.log" |
            grep -E '[0-9]+ (passed|failed|error)' | tr '\n' ';')"
    done
done
exit $rc
