#!/usr/bin/env bash
# A/B of the fused allreduce + RMSNorm on one GPU (2 ranks, MPS): base (exp/base.tar) against the tree.
set -u
export PATH=/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
rm -rf /tmp/base && mkdir -p /tmp/base && tar -xf exp/base.tar -C /tmp/base
( cd /tmp/base && meson setup build-b -Dgpu=cuda -Dtests=false >/dev/null && ninja -C build-b >$OUT/build-base.log 2>&1; echo "base rc $?" ) &
( OUT=$OUT tools/h200-run.sh build; echo "new rc $?" ) &
wait
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d && echo "mps: started"
for g in --graph ""; do
  for v in base new base new; do
    B=build-cuda; [ $v = base ] && B=/tmp/base/build-b
    echo "== $v fused ${g:-eager}" | tee -a $OUT/fab-$v.txt
    CUDA_VISIBLE_DEVICES=0 timeout 100 mpiexec -n 2 $B/tools/symaddr-bench fused_rmsnorm --iters 200 --warmup 20 \
      --rounds 3 $g 2>&1 | grep -vE "^#" >> $OUT/fab-$v.txt
  done
done
OUT=$OUT TEST_RANKS=8 TESTS="${TESTS:-team-cuda example-allreduce-rmsnorm-cuda coll-cuda graph-cuda}" tools/h200-run.sh test
OUT=$OUT TEST_RANKS=2 TESTS="${TESTS:-team-cuda example-allreduce-rmsnorm-cuda coll-cuda graph-cuda}" tools/h200-run.sh test
echo quit | nvidia-cuda-mps-control
