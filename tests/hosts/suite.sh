#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The multi-node path across real hosts (network, UTS, IPC and mount namespaces: hosts.sh),
# with no SYMADDR_NODE_SIZE: symaddr-info's node groups, the maps, RMA and backend suites at
# 2 hosts x 2 ranks, 2 x 4 and 4 x 2, symaddr_init_bootstrap's cases at 2 x 2, the
# collectives (every case of test_coll), against MPI's own collectives, and a whole
# host killed at each fault point (tests/fault.sh).
#   tests/hosts/suite.sh BUILD_DIR      (cpu backend; exit 77 where hosts cannot be made)
# Bugs this stage found, each fixed with a regression test: test_coll's test_two_nodes right
# after test_rooted_offsets at 2 x 2 crashed in Open MPI's mca_pml_ob1_add_comm, in the
# MPI_Comm_split of the next symaddr_init (a failure one node's kernel saw broke only that
# node's context; test_node_failure_agrees); test_two_nodes at 4 x 2 expected a node of 4 on
# hosts of 2 (the test);
# test_maps' test_simulated_nodes at 4 hosts x 2 (it expected one host's split), test_rma's
# put_kernel (it wrote through a peer_bases entry of 0 off the node; test_rma's cases that
# reach every rank skip across nodes, saying so), test_nan_bits (sums across nodes are not in
# rank order: symaddr.h now says the order, and the test checks it).
set -euo pipefail
cd "$(dirname "$0")/../.."
B=$(readlink -f "$1")
H=tests/hosts/hosts.sh
"$H" check || exit $?
run() { "$H" run "$1" "$2" --keep "$B" -- "${@:3}"; }
export SYMADDR_BACKEND=cpu SYMADDR_TIMEOUT_MS=20000 OMPI_ALLOW_RUN_AS_ROOT=1 \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
start=$SECONDS
info=$(run 2 2 "$B/tools/symaddr-info")
echo "$info" | grep -E "^ranks|^  rank"
echo "$info" | grep -q "2 per node group" || { echo "symaddr-info: not 2 ranks a node" >&2; exit 1; }
for shape in "2 2" "2 4" "4 2"; do
    echo "-- mpi_maps, mpi_rma_cpu (put_kernel within each host, a stream across the hosts) and"
    echo "   mpi_backend at $shape (hosts x ranks)"
    run $shape "$B/tests/mpi_maps" | grep -E "^(not ok|skip)|passed"
    run $shape "$B/tests/mpi_rma_cpu" | grep -E "^(ok|not ok)|passed"
    run $shape "$B/tests/mpi_backend" | grep -E "^(not ok|skip)|passed"
done
echo "-- mpi_bootstrap at 2 2: symaddr_init_bootstrap over the test's own MPI point-to-point,"
echo "   its nodes from the host names (the hosts' own)"
run 2 2 "$B/tests/mpi_bootstrap" | grep -E "^(ok|not ok|skip)|passed"
echo "-- mpi_coll at 2 2: every case (2 x 4 and 4 x 2 pass too, in 150 s each: not in CI)"
run 2 2 "$B/tests/mpi_coll" | grep -E "^(ok|not ok|skip)|passed"
echo "-- faults at 2 2: both ranks of host h2 killed at init, mesh, alloc, free, finalize, a"
echo "   collective; h1's ranks must fail within twice the timeout, h1's /dev/shm and /tmp clean"
TMPDIR=$B FAULT_HOST_TMP=/tmp "$H" shell 2 2 --keep "$B" -- \
    sh -c 'tests/fault.sh "$HOSTS_MPIRUN" 4 "$0" "2 3"' "$B/tests/mpi_fault" |
    grep -E "returned|passed|FAIL|stopped|run again"
echo "hosts: $((SECONDS - start)) s"
