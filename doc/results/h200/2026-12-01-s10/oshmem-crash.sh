#!/usr/bin/env bash
# Which setting the foreign-openshmem-cpu crash in Open MPI's shmem_init follows.
B=${B:-build-cuda}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none SYMADDR_BACKEND=cpu SYMADDR_TEST_PROVIDER=ipc
export OMPI_MCA_osc='^rdma' OMPI_MCA_sshmem_base_start_address=87960930222080 SYMADDR_TIMEOUT_MS=60000
root=/tmp/symaddr-cmocka
export LD_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
one() { # label, env...
    local label=$1; shift
    local ok=0 fail=0 codes=""
    for i in $(seq 1 ${N:-10}); do
        p=$(( (i * 37) % 255 + 1 ))
        env "$@" MALLOC_PERTURB_=${PERT:-$p} timeout 60 mpiexec -n ${NP:-8} $B/tests/mpi_foreign_openshmem_cpu >/tmp/o.log 2>&1
        rc=$?
        if [ $rc = 0 ]; then ok=$((ok+1)); else fail=$((fail+1)); codes="$codes p$p:rc$rc"; cp /tmp/o.log $OUT/osh-$label-$i.log; fi
    done
    echo "$label: ok $ok fail $fail $codes"
}
ucx_info -v | head -3
ompi_info | grep -E "Open MPI:|spml|sshmem|memheap" | head
ompi_info --all 2>/dev/null | grep -E "MCA (sshmem|spml|memheap)" | head
one default
one mmap OMPI_MCA_sshmem=mmap
one sysv OMPI_MCA_sshmem=sysv
one ucx OMPI_MCA_sshmem=ucx
one nostart OMPI_MCA_sshmem_base_start_address=0
