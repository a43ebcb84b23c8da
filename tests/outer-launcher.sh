#!/bin/bash
# SPDX-License-Identifier: MIT
# usage: outer-launcher.sh BUILDDIR
# `mpirun -np 2 meson test --suite unit --suite mpi`, as users type it: outer rank 0 runs every
# test (each mpi test as its own job), outer rank 1 reports every test skipped, nothing fails,
# and the two summaries add up to one suite.
set -euo pipefail
build=$1
out=$(mktemp)
trap 'rm -f "$out"' EXIT
total=$(meson test -C "$build" --list --suite unit --suite mpi 2>/dev/null | grep -c ' / ')
rc=0
timeout 3600 mpirun -np 2 --oversubscribe --tag-output \
    meson test -C "$build" --suite unit --suite mpi --print-errorlogs >"$out" 2>&1 || rc=$?
# one summary count of outer rank R: count R NAME
# (no such line prints nothing: set -e must not end the script before it shows mpirun's output)
count() { { grep -a "^\[1,$1\]<stdout>:$2:" "$out" || true; } | tail -1 | awk '{print $NF}'; }
ok0=$(count 0 Ok) fail0=$(count 0 Fail) skip0=$(count 0 Skipped) tout0=$(count 0 Timeout)
ok1=$(count 1 Ok) fail1=$(count 1 Fail) skip1=$(count 1 Skipped)
# PyPI's meson (1.9) prints only the counts that are not 0, and Ok and Fail (Debian 12's 1.0
# prints every count): a summary printed without a count has 0 of it
if [ -n "$ok0" ]; then skip0=${skip0:-0} tout0=${tout0:-0}; fi
if [ -n "$ok1" ]; then skip1=${skip1:-0}; fi
echo "outer rank 0: Ok ${ok0:-?} Fail ${fail0:-?} Skipped ${skip0:-?} Timeout ${tout0:-?}"
echo "outer rank 1: Ok ${ok1:-?} Fail ${fail1:-?} Skipped ${skip1:-?}"
echo "tests in the unit and mpi suites: $total; mpirun exit status $rc"
if [ "$rc" = 0 ] && [ "${fail0:-x}" = 0 ] && [ "${tout0:-x}" = 0 ] && [ "${ok0:-0}" -gt 0 ] &&
   [ $((ok0 + skip0)) = "$total" ] && [ "${ok1:-x}" = 0 ] && [ "${fail1:-x}" = 0 ] &&
   [ "${skip1:-x}" = "$total" ]; then
    echo "outer launcher: the suite ran once, on outer rank 0"
    exit 0
fi
echo "outer launcher: FAILED; mpirun's output:" >&2
tail -c 20000 "$out" >&2
exit 1
