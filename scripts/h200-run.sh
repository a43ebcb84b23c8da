#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build and test symaddr's cuda backend on a GPU machine that has nvcc and Open MPI but
# no cmocka package: the Debian cmocka debs travel in .deps/ (see doc/gpu.md).
# Logs go to $OUT (default ./gpu-out); the ignored folders it reads (.deps, .whl, .iris) must
# travel with the tree. Extra arguments pick steps: build test bench coll
# cpucoll sanitize p2p nccl small small1 speed1 dtypes1 cpudtypes large put fused info
# onegpu ab abmove python validation wheel torch torchrun pybench pyshare nvshmem pyab soak iris irispy graphs mps-on mps-off pack (ab: BASE_TAR=base.tar scripts/h200-run.sh build mps-on ab, the
# tar from git archive). NCCL_INCLUDE=DIR
# builds --compare nccl; NP=n sets the rank count of p2p, nccl and small; TESTS="a b" limits the
# test step to those suites; ROUNDS=n times each size n times in turn with its reference (small,
# fused: 3); ITERS=n sets the calls per timing of small (50).
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
steps=${*:-build test bench info}

if ! pkg-config --exists cmocka 2>/dev/null && ls .deps/*.deb >/dev/null 2>&1; then
    root=/tmp/symaddr-cmocka
    for f in .deps/*.deb; do dpkg -x "$f" "$root"; done
    mkdir -p "$root/pc"
    sed "s|/usr|$root/usr|g" "$root"/usr/lib/x86_64-linux-gnu/pkgconfig/cmocka.pc > "$root/pc/cmocka.pc"
    export PKG_CONFIG_PATH="$root/pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    export LD_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Every invocation looks for the MPS daemon where mps-on starts it: a client that looks
# elsewhere runs without MPS, time-sliced against its peers.
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
# NVSHMEM_ROOT=auto: the pip package's NVSHMEM (nvidia/nvshmem beside torch), for the build
# (-Dnvshmem_root: foreign-nvshmem-cuda and symaddr-bench --compare nvshmem) and the nvshmem step
if [ "${NVSHMEM_ROOT:-}" = auto ]; then
    NVSHMEM_ROOT=$(python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "nvshmem"))')
fi
[ -z "${NVSHMEM_ROOT:-}" ] || export LD_LIBRARY_PATH=$NVSHMEM_ROOT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
B=${B:-build-cuda}
BASE=${BASE:-/tmp/symaddr-base}
rc=0
for s in $steps; do
    case $s in
    build)
        # BASE_TAR=<git archive of a base revision>: built beside the tree, for the ab step.
        if [ -n "${BASE_TAR:-}" ]; then
            rm -rf $BASE && mkdir -p $BASE && tar -xf "$BASE_TAR" -C $BASE &&
                (cd $BASE && meson setup build-base -Dgpu=cuda -Dtests=false &&
                    ninja -C build-base) >"$OUT/build-base.log" 2>&1 &
            bpid=$!
        fi
        rm -rf $B
        { meson setup $B -Dgpu=cuda -Dwerror=true ${NCCL_INCLUDE:+-Dnccl_include=$NCCL_INCLUDE} \
              ${NVSHMEM_ROOT:+-Dnvshmem_root=$NVSHMEM_ROOT} \
              ${MESON_ARGS:-} && ninja -C $B; } >"$OUT/build.log" 2>&1 || {
            tail -40 "$OUT/build.log"; exit 1; }
        [ -z "${bpid:-}" ] || wait $bpid || { tail -20 "$OUT/build-base.log"; exit 1; }
        echo "build: ok${BASE_TAR:+ (and the base)}" ;;
    test)
        # TEST_RANKS=n reruns the suite with n ranks per mpi test (log: test-n.log).
        # TEST_SLICE=k/n runs every n-th test from the k-th (1-based) of meson's list: the whole
        # suite in n calls of the device tool, each under its 10 minutes (log: ...-slice-k.log)
        log="$OUT/test${TEST_RANKS:+-$TEST_RANKS}${TEST_SLICE:+-slice-${TEST_SLICE%/*}}.log"
        [ -n "${TEST_RANKS:-}" ] && meson configure $B -Dtest_ranks=$TEST_RANKS >/dev/null
        if [ -n "${TEST_SLICE:-}" ]; then
            TESTS=$(meson test -C $B --list 2>/dev/null | sed -n 's|^.* / ||p' |
                    awk -v k="${TEST_SLICE%/*}" -v n="${TEST_SLICE#*/}" '(NR - k) % n == 0')
        fi
        meson test -C $B --print-errorlogs ${TESTS:-} >"$log" 2>&1 || rc=1
        grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout):" "$log" ;;
    bench)
        for op in put get; do
            mpiexec -n 8 $B/tools/symaddr-bench $op -b 8 -e 256M -f 8 --check \
                2>&1 | tee -a "$OUT/bench.txt"
        done
        for np in 2 8; do
            mpiexec -n $np $B/tools/symaddr-bench translate -b 1M -e 1G -f 8 --iters 20 \
                2>&1 | tee -a "$OUT/bench.txt"
        done
        mpiexec -n 2 $B/tools/symaddr-bench latency --iters 2000 2>&1 | tee -a "$OUT/bench.txt"
        mpiexec -n 2 $B/tools/symaddr-bench put -b 1M -e 1G -f 8 --check 2>&1 | tee -a "$OUT/bench.txt"
        mpiexec -n 8 $B/tools/symaddr-bench atomic 2>&1 | tee -a "$OUT/bench.txt"
        mpiexec -n 8 $B/tools/symaddr-bench alloc -b 4K -e 64M -f 16 --iters 20 2>&1 | tee -a "$OUT/bench.txt"
        mpiexec -n 8 $B/tools/symaddr-bench lookup 2>&1 | tee -a "$OUT/bench.txt" ;;
    coll)
        for a in "--dtype float" "--dtype bfloat16"; do
            mpiexec -n 8 $B/tools/symaddr-bench allreduce $a -b 8 -e 256M -f 4 --iters 20 \
                --warmup 3 --check --compare mpi --json "$OUT/gpu-allreduce-${a#--dtype }.json" \
                2>&1 | tee -a "$OUT/coll.txt"
        done
        mpiexec -n 8 $B/tools/symaddr-bench allreduce -b 8 -e 1M -f 8 --iters 20 --graph \
            2>&1 | tee -a "$OUT/coll.txt"
        for op in allgather reduce_scatter broadcast alltoall reduce gather scatter; do
            mpiexec -n 8 $B/tools/symaddr-bench $op -b 1K -e 64M -f 16 --iters 10 --check \
                --root 3 --compare mpi 2>&1 | tee -a "$OUT/coll.txt"
        done
        mpiexec -n 8 $B/tools/symaddr-bench init -n 5 2>&1 | tee -a "$OUT/coll.txt"
        mpiexec -n 8 $B/tools/symaddr-bench allreduce --compare nccl 2>&1 | tee -a "$OUT/coll.txt" ;;
    cpucoll)
        SYMADDR_BACKEND=cpu mpiexec -n 8 --bind-to core $B/tools/symaddr-bench-cpu allreduce \
            -b 8 -e 64M -f 4 --iters 30 --check --compare mpi --json "$OUT/cpu-allreduce.json" \
            2>&1 | tee -a "$OUT/cpucoll.txt"
        for op in alloc lookup; do
            SYMADDR_BACKEND=cpu mpiexec -n 8 --bind-to core $B/tools/symaddr-bench-cpu $op \
                -b 4K -e 64M -f 16 --iters 20 2>&1 | tee -a "$OUT/cpucoll.txt"
        done ;;
    sanitize)
        # compute-sanitizer (memcheck, racecheck, synccheck) at 2 ranks over the RMA test, the
        # team test, every allreduce algorithm (SAN_ALGOS, default: every name the bench lists),
        # every other collective, and a Triton allreduce and allgather from Python (compiled,
        # torch CUDA tensors). Run mps-off first. SAN_TESTS, SAN_OPS (set, even empty) and
        # SAN_TRITON=0 narrow a run to what an earlier one did not reach.
        export SYMADDR_BACKEND=cuda
        algos=${SAN_ALGOS-$($B/tools/symaddr-bench --help | sed -n 's/.*--algo //p' | tr '|' ' ')}
        ops=${SAN_OPS-$($B/tools/symaddr-bench --help | sed -n 's/.*OP: .*fused_rmsnorm allreduce //p')}
        for tool in ${SAN_TOOLS:-memcheck racecheck synccheck}; do
            for t in ${SAN_TESTS-rma team}; do
                timeout 200 mpiexec -n 2 compute-sanitizer --tool $tool $B/tests/mpi_${t}_cuda \
                    >>"$OUT/sanitize.txt" 2>&1
                echo "$t $tool rc=$?" | tee -a "$OUT/sanitize.txt"
            done
            for a in $algos; do
                timeout 100 mpiexec -n 2 compute-sanitizer --tool $tool $B/tools/symaddr-bench \
                    allreduce -b 64 -e 1M -f 64 --iters 2 --warmup 1 --algo $a --check \
                    >>"$OUT/sanitize.txt" 2>&1
                echo "allreduce $a $tool rc=$?" | tee -a "$OUT/sanitize.txt"
            done
            for op in $ops; do
                timeout 100 mpiexec -n 2 compute-sanitizer --tool $tool $B/tools/symaddr-bench \
                    $op -b 64 -e 1M -f 64 --iters 2 --warmup 1 --root 1 --check \
                    >>"$OUT/sanitize.txt" 2>&1
                echo "$op $tool rc=$?" | tee -a "$OUT/sanitize.txt"
            done
            [ "${SAN_TRITON:-1}" = 0 ] && continue
            SYMADDR_LIB=$PWD/$B/libsymaddr.so.0 PYTHONPATH=$PWD/python timeout 300 mpiexec -n 2 \
                compute-sanitizer --tool $tool python3 scripts/san-triton.py >>"$OUT/sanitize.txt" 2>&1
            echo "triton allreduce+allgather $tool rc=$?" | tee -a "$OUT/sanitize.txt"
        done
        grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|rc=" "$OUT/sanitize.txt" ;;
    python)
        # The Python suite on the GPU: symaddr.triton compiled for real on torch CUDA tensors
        # (PY_RANKS, default 2 and 8 ranks on one GPU: start MPS first), torch CPU tensors on
        # the cpu backend under Triton's interpreter, test_torch.py, the Triton put example,
        # the wheel (pip install . into a folder), and the benchmarks against symaddr's own
        # calls (put 64 MiB-1 GiB at 2 ranks, allreduce 8 B-1 MiB at 2 and 8, alloc at 8).
        # .whl/ carries meson-python and pyproject-metadata, which the machine lacks.
        export SYMADDR_LIB=$PWD/$B/libsymaddr.so.0 SYMADDR_TEST_PYTHONPATH=$PWD/python
        export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
        for n in ${PY_RANKS:-2 8}; do
            SYMADDR_TEST_ARRAYS=torch SYMADDR_BACKEND=cuda mpiexec -n $n python3 \
                tests/python/test_triton.py >"$OUT/python-triton-cuda-$n.log" 2>&1 || rc=1
            echo "test_triton.py, torch CUDA tensors, compiled, $n ranks:"
            grep -E "^(ok|not ok|skip)|passed" "$OUT/python-triton-cuda-$n.log"
        done
        SYMADDR_TEST_ARRAYS=torch SYMADDR_BACKEND=cpu TRITON_INTERPRET=1 mpiexec -n 3 python3 \
            tests/python/test_triton.py >"$OUT/python-triton-torch-cpu-3.log" 2>&1 || rc=1
        echo "test_triton.py, torch CPU tensors, cpu backend, interpreter, 3 ranks:"
        grep -E "^(not ok|skip)|passed" "$OUT/python-triton-torch-cpu-3.log"
        SYMADDR_BACKEND=cuda mpiexec -n 2 python3 tests/python/test_torch.py \
            >"$OUT/python-torch-2.log" 2>&1 || rc=1
        grep -E "^(not ok|skip)|passed" "$OUT/python-torch-2.log"
        for n in ${PY_RANKS:-2 8}; do  # validation of Triton kernels, compiled
            SYMADDR_VALIDATE=1 SYMADDR_TEST_ARRAYS=torch SYMADDR_BACKEND=cuda mpiexec -n $n \
                python3 tests/python/test_validation.py >"$OUT/python-validation-$n.log" 2>&1 || rc=1
            echo "test_validation.py, torch CUDA tensors, compiled, $n ranks:"
            grep -E "^(ok|not ok|skip)|passed" "$OUT/python-validation-$n.log"
        done
        python3 tests/python/test_ptx.py 2>&1 | tee "$OUT/python-ptx.log" | grep passed
        SYMADDR_BACKEND=cuda mpiexec -n 2 python3 examples/triton_put.py 2>&1 | tee -a "$OUT/python-bench.txt"
        for n in ${PY_RANKS:-2 8}; do
            SYMADDR_BACKEND=cuda mpiexec -n $n python3 examples/triton_fused.py 2>&1 |
                tee -a "$OUT/python-fused.txt" | sort | uniq -c | head -3
        done
        "$0" wheel || rc=1
        for what in "2 put" "2 allreduce" "8 allreduce" "8 alloc --profile"; do
            set -- $what
            n=$1; shift; mpiexec -n $n python3 -m symaddr.bench "$@" 2>&1 | tee -a "$OUT/python-bench.txt"
        done ;;
    validation)
        # Validation compiled: test_validation.py on torch CUDA tensors at PY_RANKS ranks (every
        # lane of every form, heap allocations' own tables, copied tables: the sink and stray
        # word in host memory the backend registered), the C suites that validate (rma, maps),
        # and test_ptx (the PTX without validation unchanged).
        export SYMADDR_LIB=$PWD/$B/libsymaddr.so.0 SYMADDR_TEST_PYTHONPATH=$PWD/python
        export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
        for n in ${PY_RANKS:-2 8}; do
            SYMADDR_VALIDATE=1 SYMADDR_TEST_ARRAYS=torch SYMADDR_BACKEND=cuda timeout 300 \
                mpiexec -n $n python3 tests/python/test_validation.py \
                >"$OUT/python-validation-$n.log" 2>&1 || rc=1
            echo "test_validation.py, torch CUDA tensors, compiled, $n ranks:"
            grep -E "^(ok|not ok|skip)|passed" "$OUT/python-validation-$n.log"
        done
        meson test -C $B --print-errorlogs rma-cuda rma-cuda-vmm maps-cuda \
            >"$OUT/validation-c.log" 2>&1 || rc=1
        grep -E "^ *[0-9]+/[0-9]+ |^(Ok|Fail):" "$OUT/validation-c.log"
        python3 tests/python/test_ptx.py >"$OUT/python-ptx.log" 2>&1 || rc=1
        grep -E "^not ok|passed" "$OUT/python-ptx.log" ;;
    wheel)
        # pip install . into a folder (meson-python from .whl/), then import it from elsewhere.
        { python3 -m pip install -q --no-index --no-deps --target /tmp/whl-site .whl/*.whl &&
          PYTHONPATH=/tmp/whl-site python3 -m pip install -v --no-build-isolation --no-deps \
              --target /tmp/symaddr-site . ; } >"$OUT/python-wheel.log" 2>&1 || rc=1
        (cd /tmp && env -u SYMADDR_LIB -u PYTHONPATH PYTHONPATH=/tmp/symaddr-site python3 -c 'import symaddr
print("wheel: symaddr", symaddr.__version__, "library", symaddr._lib.library_path())') 2>&1 |
            tee -a "$OUT/python-wheel.log" ;;
    torch)
        # test_torch.py and test_triton.py (torch CUDA tensors, compiled) at PY_RANKS ranks on one
        # GPU (MPS on). TREE=dir runs them from a copy of the tree (a base's python/ and
        # examples/, which test_triton imports, beside this tree's tests/python: the before side
        # of a regression test).
        export SYMADDR_LIB=$PWD/$B/libsymaddr.so.0 PYTHONUNBUFFERED=1 SYMADDR_BACKEND=cuda
        t=${TREE:-.}
        for n in ${PY_RANKS:-2 8}; do
            for f in ${PY_FILES:-test_torch test_triton}; do
                log="$OUT/$f-$n${TREE:+-$(basename $TREE)}.log"
                SYMADDR_TEST_ARRAYS=torch SYMADDR_TEST_PYTHONPATH=$PWD/$t/python timeout 300 \
                    mpiexec -n $n python3 $t/tests/python/$f.py >"$log" 2>&1 || rc=1
                echo "$f.py, $n ranks${TREE:+ ($TREE)}:"
                grep -E "^(not ok|skip)|passed" "$log"
            done
        done ;;
    torchrun)
        # Context over torch.distributed (gloo), no MPI in the process: tests/python/
        # test_torchrun.py under torchrun on the cuda backend, Triton compiled, validation on, at
        # TR_RANKS (default 2 and 8) ranks on one GPU (mps-on first).
        for n in ${TR_RANKS:-2 8}; do
            SYMADDR_LIB=$PWD/$B/libsymaddr.so.0 SYMADDR_TEST_PYTHONPATH=$PWD/python \
                SYMADDR_BACKEND=cuda SYMADDR_VALIDATE=1 timeout 400 python3 -m \
                torch.distributed.run --standalone --nproc-per-node $n \
                tests/python/test_torchrun.py >>"$OUT/torchrun.txt" 2>&1
            echo "torchrun $n ranks rc=$?" | tee -a "$OUT/torchrun.txt"
        done
        grep -E "^(ok|not ok|skip)|passed|rc=" "$OUT/torchrun.txt" ;;
    pybench)
        # symaddr.triton's collectives against the C ones, the fused kernels against their
        # unfused pairs, and symaddr.iris's ccl and the torch ops against the calls they make,
        # PY_RANKS ranks on one GPU (MPS on): python -m symaddr.bench triton (f32, bf16), fused,
        # ccl (f32, bf16) (PYBENCH: a ;-separated list); each under PYBENCH_TIMEOUT s (240).
        export SYMADDR_LIB=$PWD/$B/libsymaddr.so.0 PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
        export SYMADDR_BACKEND=cuda
        IFS=';' read -ra benches <<<"${PYBENCH:-triton;triton --dtype bfloat16;fused;ccl;ccl --dtype bfloat16}"
        for n in ${PY_RANKS:-2 8}; do
            for what in "${benches[@]}"; do
                echo "== $n ranks: $what" >>"$OUT/pybench.txt"
                timeout ${PYBENCH_TIMEOUT:-240} mpiexec -n $n python3 -m symaddr.bench $what \
                    >>"$OUT/pybench.txt" 2>&1
                r=$?
                [ $r = 0 ] || { rc=1; echo "rc=$r ($n ranks: $what)" >>"$OUT/pybench.txt"; }
                # a job killed by its timeout leaves MPS refusing the next clients ("busy or
                # unavailable"): restart it
                [ $r != 124 ] || { echo quit | nvidia-cuda-mps-control; sleep 2
                                   nvidia-cuda-mps-control -d; }
            done
        done
        grep -v "^\[" "$OUT/pybench.txt" | tail -80 ;;
    nvshmem)
        # NVSHMEM as the reference for several ranks on one GPU (NVSHMEM_ROOT=auto at the build;
        # mps-on first): foreign-nvshmem-cuda, then symaddr-bench put, get and allreduce (f32,
        # bf16) --compare nvshmem on NVSHMEM's memory registered with symaddr, 8 B-NVSH_MAX
        # (1G), at NVSH_RANKS (2 8) ranks (NVSH_OPS: some of put get allreduce allreduce-bf16).
        export SYMADDR_BACKEND=cuda
        for n in ${NVSH_RANKS:-2 8}; do
            timeout 200 mpiexec -n $n $B/tests/mpi_foreign_nvshmem_cuda >>"$OUT/nvshmem.txt" 2>&1
            echo "foreign-nvshmem-cuda, $n ranks: rc=$?" | tee -a "$OUT/nvshmem.txt"
            for op in ${NVSH_OPS:-put get allreduce allreduce-bf16}; do
                case $op in
                put|get) what="$op -f 8 --check" ;;
                allreduce) what="allreduce -f 4 -R 3 --check" ;;
                allreduce-bf16) what="allreduce -f 4 -R 3 -d bfloat16 --check" ;;
                esac
                timeout 300 mpiexec -n $n $B/tools/symaddr-bench $what -b 8 -e ${NVSH_MAX:-1G} \
                    --compare nvshmem >>"$OUT/nvshmem.txt" 2>&1
                echo "symaddr-bench $what --compare nvshmem, $n ranks: rc=$?" |
                    tee -a "$OUT/nvshmem.txt"
            done
        done
        grep -v "^\[" "$OUT/nvshmem.txt" | grep -vi "warn" | tail -150 ;;
    pyshare)
        # Python's share of a small collective at SHARE_RANKS (2) ranks on one GPU (mps-on
        # first): symaddr-bench allreduce (the C binary), python -m symaddr.bench allreduce
        # (Context.allreduce against the ctypes call, eager and graph-replayed), 8 B-32 KiB, in
        # turn SHARE_ROUNDS (2) times (SHARE_AB=1: python's again through ctypes), and
        # scripts/py-host-time.py (the package's work a call, the C call a no-op; what the
        # compiled call, ctypes and torch's stream add).
        export SYMADDR_LIB=$PWD/$B/libsymaddr.so.0 PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
        export SYMADDR_BACKEND=cuda
        n=${SHARE_RANKS:-2}
        for round in $(seq ${SHARE_ROUNDS:-2}); do
            timeout 120 mpiexec -n $n $B/tools/symaddr-bench allreduce -b 8 -e 32K -f 4 -n 200 -w 20 -R 5 \
                --json "$OUT/pyshare-c-$round.json" >>"$OUT/pyshare.txt" 2>&1 || rc=1
            timeout 200 mpiexec -n $n python3 -m symaddr.bench allreduce --max-bytes 32768 \
                --c-json "$OUT/pyshare-c-$round.json" >>"$OUT/pyshare.txt" 2>&1 || rc=1
            # SHARE_AB=1: the same through ctypes (SYMADDR_NO_FAST_CALL=1), against one run
            [ -z "${SHARE_AB:-}" ] || { echo "# ctypes (SYMADDR_NO_FAST_CALL=1):"
                SYMADDR_NO_FAST_CALL=1 timeout 200 mpiexec -n $n -x SYMADDR_NO_FAST_CALL \
                    python3 -m symaddr.bench allreduce --max-bytes 32768 \
                    --c-json "$OUT/pyshare-c-$round.json"; } >>"$OUT/pyshare.txt" 2>&1 || rc=1
        done
        timeout 200 mpiexec -n $n python3 scripts/py-host-time.py --backend cuda \
            >>"$OUT/pyshare.txt" 2>&1 || rc=1
        grep -v "^\[" "$OUT/pyshare.txt" | tail -60 ;;
    pyab)
        # A/B of the Python package: BASE_TAR's python/ (a git archive) against the tree's, both
        # on the tree's library, python -m symaddr.bench $PYAB (default "triton --max-bytes
        # 65536") at PY_RANKS ranks (8) on one GPU (MPS on), base and tree in turn twice;
        # pyab.txt, and per size the tree's best over the base's for each column.
        [ -n "${BASE_TAR:-}" ] || { echo "pyab: BASE_TAR=<git archive of the base> first"; exit 1; }
        rm -rf $BASE/python && mkdir -p $BASE && tar -xf "$BASE_TAR" -C $BASE python || exit 1
        export SYMADDR_LIB=$PWD/$B/libsymaddr.so.0 PYTHONUNBUFFERED=1 SYMADDR_BACKEND=cuda
        for n in ${PY_RANKS:-8}; do
            for v in base tree base tree; do
                py=$PWD/python
                [ $v = base ] && py=$BASE/python
                echo "== $n $v" >>"$OUT/pyab.txt"
                PYTHONPATH=$py timeout ${PYBENCH_TIMEOUT:-240} mpiexec -n $n python3 -m \
                    symaddr.bench ${PYAB:-triton --max-bytes 65536} >>"$OUT/pyab.txt" 2>&1 || rc=1
            done
        done
        python3 - "$OUT/pyab.txt" <<'PY'
import sys
runs, head = {}, None
for line in open(sys.argv[1]):
    f = line.split()
    if line.startswith("=="):
        cur = runs.setdefault((f[1], f[2]), [])
        cur.append({})
    elif line.startswith("#") and "bytes" in f:  # names of two words: one
        head = line.replace("C ar", "C_ar").replace("C ag", "C_ag").split()[2:]
    elif f and f[0].isdigit() and head:
        cur[-1][int(f[0])] = f[1:]
for n in sorted({k[0] for k in runs}):
    base, tree = runs.get((n, "base"), []), runs.get((n, "tree"), [])
    if not base or not tree or not all(base + tree):
        print(f"pyab {n} ranks: a run printed no table (see pyab.txt)")
        continue
    for i, col in enumerate(head):
        def best(t, s):
            v = [float(r[s][i]) for r in t if s in r and r[s][i] not in ("-",)]
            return min(v) if v else None
        sizes = sorted(base[0])
        ratios = [(best(tree, s), best(base, s)) for s in sizes]
        if col in ("bw2", "bwag", "wrong") or not any(b and t for t, b in ratios):
            continue
        print(f"pyab {n} ranks {col}: tree/base at {sizes[0]}-{sizes[-1]} B:",
              " ".join(f"{t / b:.3f}" if t and b else "-" for t, b in ratios))
    if head[-1] == "wrong":  # (the fused bench's counts are per output: see pyab.txt)
        print(f"pyab {n} ranks: wrong", sum(int(r[s][-1]) for r in base + tree for s in r))
PY
        ;;
    soak)
        # scripts/triton-soak.py and host-soak.py (SOAKS: either): random Triton and host
        # collectives from Python (torch CUDA tensors, compiled) against a sequential
        # computation for SOAK_S seconds (60) each at PY_RANKS ranks (MPS on).
        export SYMADDR_LIB=$PWD/$B/libsymaddr.so.0 PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
        for n in ${PY_RANKS:-2 8}; do
            for soak in ${SOAKS:-triton-soak host-soak}; do
                SYMADDR_BACKEND=cuda timeout $((${SOAK_S:-60} + 120)) mpiexec -n $n python3 \
                    scripts/$soak.py ${SOAK_S:-60} --array torch >>"$OUT/soak.txt" 2>&1 || rc=1
                grep -E "wrong" "$OUT/soak.txt" | tail -3
            done
        done ;;
    iris)
        # ROCm/iris's own tests through tests/iris (IRIS_TESTS: their folders, carried in .iris/;
        # IRIS_RANKS ranks on one GPU, MPS on; several ranks with the one-GPU device mapping).
        export SYMADDR_LIB=$PWD/$B/libsymaddr.so.0 SYMADDR_BACKEND=cuda
        for n in ${IRIS_RANKS:-1 2}; do
            OUT=$OUT SYMADDR_IRIS_ONE_GPU=$([ $n -gt 1 ] && echo 1 || echo 0) scripts/iris-suite.sh \
                ${IRIS_TESTS:-.iris/tests/unittests .iris/tests/ccl} -- $n | tee -a "$OUT/iris-suite.txt"
        done ;;
    irispy)
        # symaddr.iris and symaddr.ops on the GPU, compiled: test_iris_host.py, test_iris_ccl.py
        # (DeviceContext, ccl, a CUDA graph of ccl calls), test_ops.py and test_torch_ops.py
        # (inductor, a CUDA graph of the compiled model) at PY_RANKS ranks
        # (2 8) on one GPU (mps-on first); test_iris_ccl again with validation on at 2.
        export SYMADDR_LIB=$PWD/$B/libsymaddr.so.0 SYMADDR_TEST_PYTHONPATH=$PWD/python
        export PYTHONUNBUFFERED=1 SYMADDR_BACKEND=cuda
        for n in ${PY_RANKS:-2 8}; do
            for f in test_iris_host test_iris_ccl test_ops test_torch_ops; do
                timeout 300 mpiexec -n $n python3 tests/python/$f.py >"$OUT/$f-$n.log" 2>&1 || rc=1
                echo "$f.py, $n ranks:"; grep -E "^(not ok|skip)|passed" "$OUT/$f-$n.log"
            done
        done
        SYMADDR_VALIDATE=1 timeout 300 mpiexec -n 2 python3 tests/python/test_iris_ccl.py \
            >"$OUT/test_iris_ccl-validated-2.log" 2>&1 || rc=1
        echo "test_iris_ccl.py, validation on, 2 ranks:"
        grep -E "^(not ok|skip)|passed" "$OUT/test_iris_ccl-validated-2.log" ;;
    graphs)
        # Every host collective and the barrier captured in a CUDA graph of its own and replayed
        # REPLAYS (1000) times with new data, exact, and every allreduce algorithm's graph, at
        # PY_RANKS (2 8) ranks on one GPU (mps-on first).
        for n in ${PY_RANKS:-2 8}; do
            SYMADDR_BACKEND=cuda SYMADDR_TEST_REPLAYS=${REPLAYS:-1000} timeout 300 mpiexec -n $n \
                $B/tests/mpi_graph_cuda >"$OUT/graphs-$n.log" 2>&1 || rc=1
            echo "graphs, $n ranks, ${REPLAYS:-1000} replays:"
            grep -E "^(ok|not ok|skip)|passed|check failed" "$OUT/graphs-$n.log" | sort | uniq -c
        done ;;
    mps-on)
        # Without MPS, kernels of ranks that share a GPU are time-sliced, never concurrent.
        mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
        nvidia-cuda-mps-control -d && echo "mps: started" ;;
    mps-off)
        echo quit | nvidia-cuda-mps-control && echo "mps: stopped" ;;
    p2p)
        # Put/get between GPUs: one pair, then every rank at once, against the runtime's peer copy.
        for prov in ipc vmm; do
            for op in put get; do
                for pair in --one-pair ""; do
                    mpiexec -n ${NP:-2} $B/tools/symaddr-bench $op -b 64K -e 1G -f 4 --iters 20 \
                        --check --provider $prov $pair 2>&1 | tee -a "$OUT/p2p.txt"
                done
            done
        done ;;
    nccl)
        # Allreduce against NCCL in the same run, one rank per GPU (NCCL refuses two); reduce
        # and broadcast to a root other than 0 as well.
        for op in reduce broadcast; do
            timeout 150 mpiexec -n ${NP:-2} $B/tools/symaddr-bench $op -b 8 -e 256M -f 8 -r 1 \
                --iters 20 --compare nccl 2>&1 | tee -a "$OUT/nccl.txt"
        done
        for dt in float bfloat16; do
            for g in "" --graph; do
                timeout 150 mpiexec -n ${NP:-2} $B/tools/symaddr-bench allreduce --dtype $dt -b 8 -e ${NCCL_MAX:-1G} -f 4 \
                    --iters 20 --warmup 5 --compare nccl $g ${ROUNDS:+--rounds $ROUNDS} \
                    --json "$OUT/allreduce-$dt${g:+-graph}.json" 2>&1 | tee -a "$OUT/nccl.txt"
            done
        done ;;
    small)
        # Small allreduce, each algorithm that serves it, graph-replayed and eager, against NCCL
        # in the same run when COMPARE=nccl (one rank per GPU).
        for dt in float bfloat16; do
            for g in --graph ""; do
                for a in ${ALGOS:-lamport ll auto}; do
                    timeout 120 mpiexec -n ${NP:-2} $B/tools/symaddr-bench allreduce --dtype $dt \
                        -b ${SMALL_MIN:-8} -e ${SMALL_MAX:-1M} -f 2 --iters ${ITERS:-50} \
                        --warmup 10 --algo $a $g --check \
                        --rounds ${ROUNDS:-3} ${COMPARE:+--compare $COMPARE} 2>&1 | tee -a "$OUT/small.txt"
                done
            done
        done ;;
    speed1)
        # One GPU shared by 2 or 8 ranks (start MPS first): translation, f16/bf16 against f32,
        # small allreduce by algorithm, and lookups by thread count (host only).
        export CUDA_VISIBLE_DEVICES=0
        for np in 2 8; do
            for g in --graph ""; do
                mpiexec -n $np $B/tools/symaddr-bench translate -b 1M -e 1G -f 8 --iters 50 $g \
                    2>&1 | tee -a "$OUT/speed1.txt"
            done
        done
        for dt in float bfloat16 half; do
            mpiexec -n 8 $B/tools/symaddr-bench allreduce --dtype $dt -b 1M -e 256M -f 4 \
                --iters 20 --check 2>&1 | tee -a "$OUT/speed1.txt"
        done
        for a in ll lamport auto; do
            mpiexec -n 2 $B/tools/symaddr-bench allreduce -b 8 -e 64K -f 2 --iters 50 --graph \
                --algo $a --check 2>&1 | tee -a "$OUT/speed1.txt"
        done
        for t in 1 8; do # unbound: Open MPI binds a lone rank, and its threads, to one core
            mpiexec -n 1 --bind-to none $B/tools/symaddr-bench lookup --threads $t 2>&1 |
                tee -a "$OUT/speed1.txt"
        done
        for dt in float bfloat16 half; do
            SYMADDR_BACKEND=cpu mpiexec -n 8 --bind-to core $B/tools/symaddr-bench-cpu allreduce \
                --dtype $dt -b 1M -e 64M -f 4 --iters 10 2>&1 | tee -a "$OUT/speed1.txt"
        done ;;
    large)
        # Allreduce from 32 MiB to 4 GiB against NCCL, one rank per GPU; ALGOS="a b" per algorithm.
        for a in ${ALGOS:-auto}; do
            for dt in float bfloat16; do
                timeout 200 mpiexec -n ${NP:-2} $B/tools/symaddr-bench allreduce --dtype $dt \
                    -b ${LARGE_MIN:-32M} -e 4G -f 2 --iters 10 --warmup 3 --compare nccl --algo $a \
                    ${ROUNDS:+--rounds $ROUNDS} \
                    --json "$OUT/large-$dt-$a.json" 2>&1 | tee -a "$OUT/large.txt"
            done
        done ;;
    put)
        # put, one pair, against the runtime's peer copy, ipc and vmm (2 GPUs).
        for prov in ipc vmm; do
            mpiexec -n 2 $B/tools/symaddr-bench put -b 64M -e 1G -f 4 --iters 20 --check \
                --provider $prov --one-pair 2>&1 | tee -a "$OUT/put.txt"
        done ;;
    fused)
        # The fused allreduce + residual + RMSNorm of examples/ against symaddr_allreduce + the same
        # RMSNorm kernel, and NCCL's allreduce + that kernel when COMPARE=nccl (one rank per GPU);
        # ONEGPU=1 puts NP ranks on GPU 0 (start MPS first). Graph-replayed, then eager.
        for g in --graph ""; do
            ${ONEGPU:+env CUDA_VISIBLE_DEVICES=0} mpiexec -n ${NP:-2} $B/tools/symaddr-bench \
                fused_rmsnorm --iters 50 --warmup 5 --rounds ${ROUNDS:-3} $g \
                ${COMPARE:+--compare $COMPARE} \
                --json "$OUT/fused-${NP:-2}${ONEGPU:+-onegpu}${g:+-graph}.json" 2>&1 |
                tee -a "$OUT/fused.txt"
        done ;;
    small1)
        # Small allreduce with NP ranks on GPU 0 (start MPS first), graph-replayed, by algorithm.
        for a in ${ALGOS:-lamport ll auto}; do
            CUDA_VISIBLE_DEVICES=0 timeout 60 mpiexec -n ${NP:-2} $B/tools/symaddr-bench allreduce \
                -b ${SMALL_MIN:-8} -e ${SMALL_MAX:-64K} -f 4 --iters 50 --graph --check --algo $a 2>&1 |
                tee -a "$OUT/small1-${NP:-2}.txt"
        done ;;
    dtypes1)
        # f32 against f16 and bf16 on GPU 0 with 8 ranks (start MPS first): the allreduce and its
        # reduce-scatter half alone, the same bytes, two rounds in turn.
        export CUDA_VISIBLE_DEVICES=0
        for round in 1 2; do
            for op in allreduce reduce_scatter; do
                for dt in float bfloat16 half; do
                    timeout 60 mpiexec -n 8 $B/tools/symaddr-bench $op --dtype $dt -b 1M -e 256M \
                        -f 4 --iters 20 2>&1 | tee -a "$OUT/dtypes1.txt"
                done
            done
        done ;;
    cpudtypes)
        # The cpu backend's allreduce by dtype, 8 ranks on 16 cores, three rounds in turn.
        for round in 1 2 3; do
            for dt in float bfloat16 half; do
                SYMADDR_BACKEND=cpu timeout 120 mpiexec -n 8 --bind-to core \
                    $B/tools/symaddr-bench-cpu allreduce --dtype $dt -b 1M -e 64M -f 4 --iters 10 \
                    2>&1 | tee -a "$OUT/cpudtypes.txt"
            done
        done ;;
    ab)
        # A/B of the small allreduce, NP ranks on GPU 0 (start MPS first), or spread over the
        # GPUs with ALLGPUS=1: the base that build made from BASE_TAR against the tree, in turn
        # twice per dtype (DTYPES), graph-replayed then eager; ab-base.txt and ab-tree.txt, and
        # the tree's best over the base's best.
        [ -x $BASE/build-base/tools/symaddr-bench ] || { echo "ab: build with BASE_TAR first"; exit 1; }
        pin="env CUDA_VISIBLE_DEVICES=0"
        [ -z "${ALLGPUS:-}" ] || pin=""
        for g in --graph ""; do
            for dt in ${DTYPES:-float bfloat16 half}; do
                for v in base tree base tree; do
                    bin=$B/tools/symaddr-bench
                    [ $v = base ] && bin=$BASE/build-base/tools/symaddr-bench
                    echo "== $dt ${g:-eager}" >>"$OUT/ab-$v.txt"
                    $pin timeout 100 mpiexec -n ${NP:-2} $bin allreduce \
                        --dtype $dt -b 8 -e ${SMALL_MAX:-32K} -f 4 --iters ${ITERS:-200} \
                        --warmup 20 --algo ${ALGOS:-lamport} $g --check --rounds 3 2>&1 |
                        grep -v "^#" >>"$OUT/ab-$v.txt"
                done
            done
        done
        python3 - "$OUT" <<'PY'
import sys
def tables(path):
    out = {}
    for line in open(path):
        f = line.split()
        if line.startswith("=="):
            cur = out.setdefault(line[3:].strip(), [])
            cur.append({})
        elif len(f) >= 8 and f[0].isdigit():
            k = 5 if "." not in f[4] else 4  # revisions before the root column: one fewer
            cur[-1][int(f[0])] = (float(f[k]), int(f[k + 3]))
    return out
base, tree = tables(sys.argv[1] + "/ab-base.txt"), tables(sys.argv[1] + "/ab-tree.txt")
for k in base:
    runs = base[k] + tree.get(k, [])
    if len(runs) < 2 or not all(runs):
        print(f"ab {k}: a run printed no table (see ab-base.txt, ab-tree.txt)")
        continue
    sizes = sorted(base[k][0])
    best = lambda t, s: min(run[s][0] for run in t[k])
    wrong = sum(run[s][1] for t in (base, tree) for run in t[k] for s in sizes)
    print(f"ab {k}: tree/base at {sizes[0]}-{sizes[-1]} B:",
          " ".join(f"{best(tree, s) / best(base, s):.3f}" for s in sizes), f"(#wrong {wrong})")
PY
        ;;
    abmove)
        # A/B of the data-moving collectives (k_move: allgather, broadcast, alltoall; NP ranks,
        # default 8, on GPU 0, start MPS first): the base that build made from BASE_TAR against
        # the tree, in turn twice; abmove.txt, and the tree's best time over the base's per size.
        [ -x $BASE/build-base/tools/symaddr-bench ] || { echo "abmove: build with BASE_TAR first"; exit 1; }
        for op in ${MOVE_OPS:-allgather broadcast alltoall}; do
            for v in base tree base tree; do
                bin=$B/tools/symaddr-bench
                [ $v = base ] && bin=$BASE/build-base/tools/symaddr-bench
                echo "== $op $v" >>"$OUT/abmove.txt"
                CUDA_VISIBLE_DEVICES=0 timeout 60 mpiexec -n ${NP:-8} $bin $op -b 1K -e 64M -f 8 \
                    --iters ${ITERS:-20} --warmup 5 --check 2>&1 | grep -v "^#" >>"$OUT/abmove.txt"
            done
        done
        python3 - "$OUT/abmove.txt" <<'PY'
import sys
runs = {}
for line in open(sys.argv[1]):
    f = line.split()
    if line.startswith("=="):
        cur = runs.setdefault((f[1], f[2]), [])
        cur.append({})
    elif len(f) >= 8 and f[0].isdigit():
        k = 5 if "." not in f[4] else 4  # revisions before the root column: one fewer
        cur[-1][int(f[0])] = (float(f[k]), int(f[k + 3]))
for op in sorted({k[0] for k in runs}):
    base, tree = runs.get((op, "base"), []), runs.get((op, "tree"), [])
    if not base or not tree or not all(base + tree):
        print(f"abmove {op}: a run printed no table (see abmove.txt)")
        continue
    sizes = sorted(base[0])
    best = lambda t, s: min(r[s][0] for r in t if s in r)
    wrong = sum(r[s][1] for r in base + tree for s in r)
    print(f"abmove {op}: tree/base at {sizes[0]}-{sizes[-1]} B:",
          " ".join(f"{best(tree, s) / best(base, s):.3f}" for s in sizes), f"(#wrong {wrong})")
PY
        ;;
    pack)
        # The device tool brings back at most 8 files: everything in one archive, written
        # outside $OUT first (tar of a folder it writes into fails: "file changed as we read
        # it", and the files stayed, too many to come back)
        tgz=$(mktemp --suffix=.tgz)
        (cd "$OUT" && tar czf "$tgz" . && find . -mindepth 1 -delete && mv "$tgz" results.tgz) ||
            rc=1 ;;
    info)
        mpiexec -n 8 $B/tools/symaddr-info 2>&1 | tee "$OUT/info.txt" ;;
    onegpu)
        # Named mpi tests (ONEGPU_TESTS) with NP ranks sharing GPU 0 (log: onegpu-NP.log).
        for t in ${ONEGPU_TESTS:-vmm-cuda maps-cuda coll-cuda}; do
            exe=$B/tests/mpi_${t%-cuda}
            [ -x ${exe}_cuda ] && exe=${exe}_cuda # tests with kernels are built per backend
            CUDA_VISIBLE_DEVICES=0 SYMADDR_BACKEND=cuda SYMADDR_TEST_PROVIDER=ipc \
                timeout 300 mpiexec -n ${NP:-2} $exe \
                >>"$OUT/onegpu-${NP:-2}.log" 2>&1
            echo "onegpu np=${NP:-2} $t rc=$?" | tee -a "$OUT/onegpu-${NP:-2}.log"
        done
        grep -E "^not ok|passed,|rc=" "$OUT/onegpu-${NP:-2}.log" ;;
    esac
done
exit $rc
