#!/usr/bin/env bash
# f32 against bf16 (and f16) Lamport allreduce, 2 ranks on one GPU under MPS; base and variant v1.
set -u
export PATH=/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log CUDA_VISIBLE_DEVICES=0
rm -rf /tmp/v1 && mkdir -p /tmp/v1 && tar --exclude=./build-cuda --exclude=./exp --exclude=./.deps --exclude=./.git -cf - . | tar -xf - -C /tmp/v1
R=$PWD; (cd /tmp/v1 && patch -p1 -s < $R/exp/v1.patch) || exit 1
( meson setup build-a -Dgpu=cuda -Dtests=false >/dev/null && ninja -C build-a >$OUT/build-a.log 2>&1; echo "a rc $?" ) &
( cd /tmp/v1 && meson setup build-b -Dgpu=cuda -Dtests=false >/dev/null && ninja -C build-b >$OUT/build-b.log 2>&1; echo "b rc $?" ) &
wait
so=$(find build-a -name 'libsymaddr.so.*.*' | head -1); echo "lib $so"
for k in 4 7 6; do
  cuobjdump -sass -fun "_Z19k_allreduce_lamportILi${k}ELi0EEv17symaddr_coll_desc" $so > $OUT/sass-a-$k.txt 2>&1
  cuobjdump -sass -fun "_Z19k_allreduce_lamportILi${k}ELi0EEv17symaddr_coll_desc" $(find /tmp/v1/build-b -name 'libsymaddr.so.*.*' | head -1) > $OUT/sass-b-$k.txt 2>&1
done
wc -l $OUT/sass-*.txt
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY; nvidia-cuda-mps-control -d && echo "mps: started"
for g in --graph ""; do
  for dt in float bfloat16 half; do
    for v in a b; do
      B=build-a; [ $v = b ] && B=/tmp/v1/build-b
      echo "== $v $dt ${g:-eager}"
      timeout 100 mpiexec -n 2 $B/tools/symaddr-bench allreduce --dtype $dt -b 8 -e 64K -f 4 \
        --iters 200 --warmup 20 --algo lamport $g --check --rounds 3 2>&1 | grep -vE "^#" | tee -a $OUT/bf16-$v.txt
    done
  done
done
echo quit | nvidia-cuda-mps-control
