#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Set up a fresh Debian 12 / Ubuntu 24.04 machine, build symaddr, and either
#   ./quickstart.sh run    run the 8-rank demo benchmark on the best backend
#   ./quickstart.sh test   run the full test suite (unit, headers, mpi)
# MESON_ARGS adds options to the build (e.g. MESON_ARGS=-Dwerror=true). Set-up prints one line
# per step; apt's, meson's and ninja's own output goes to quickstart.log (QUICKSTART_LOG).
set -euo pipefail
cd "$(dirname "$0")"
log=${QUICKSTART_LOG:-$PWD/quickstart.log}
: >"$log"

# One line for a step; its output to the log, and on failure the log's end and its name.
step() {
    local what=$1
    shift
    echo "quickstart: $what"
    if ! "$@" >>"$log" 2>&1; then
        tail -n 20 "$log" >&2
        echo "quickstart: $what failed; the full log is $log" >&2
        exit 1
    fi
}

mode=${1:-}
case "$mode" in run|test) ;; *) echo "usage: $0 run|test" >&2; exit 2 ;; esac

need=()
command -v mpicc >/dev/null || need+=(openmpi-bin libopenmpi-dev)
command -v meson >/dev/null || need+=(meson)
command -v ninja >/dev/null || need+=(ninja-build)
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v c++ >/dev/null || need+=(g++)
command -v python3 >/dev/null || need+=(python3)
pkg-config --exists cmocka 2>/dev/null || need+=(libcmocka-dev)
command -v help2man >/dev/null || need+=(help2man) # the man pages, from the tools' --help
if [ ${#need[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    step "updating the package lists" $sudo apt-get update -qq
    step "installing ${#need[@]} packages (${need[*]})" env DEBIAN_FRONTEND=noninteractive \
        $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

# mpirun refuses root unless told; tests and demos run as whoever calls this.
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1

build=${BUILD_DIR:-build}
# shellcheck disable=SC2086
[ -f "$build/build.ninja" ] || step "configuring $build" meson setup "$build" ${MESON_ARGS:-}
step "building $(ninja -C "$build" -n 2>/dev/null | grep -c '^\[') targets" ninja -C "$build"

if [ "$mode" = run ]; then
    mpiexec -n 8 --oversubscribe "$build/tools/symaddr-info"
    exec mpiexec -n 8 --oversubscribe "$build/tools/symaddr-bench" allreduce -b 8 -e 16M -f 8 \
        --check --compare mpi
fi

status=0
meson test -C "$build" --print-errorlogs || status=$?
# One closing line for any CI reader: "N passed, N failed, N skipped".
python3 - "$build/meson-logs/testlog.json" <<'PY'
import json, sys
counts = {"OK": 0, "FAIL": 0, "SKIP": 0}
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    key = "OK" if r in ("OK", "EXPECTEDFAIL") else "SKIP" if r == "SKIP" else "FAIL"
    counts[key] += 1
print(f'{counts["OK"]} passed, {counts["FAIL"]} failed, {counts["SKIP"]} skipped')
PY
exit $status
