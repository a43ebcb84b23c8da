#!/usr/bin/env bash
# base (HEAD tar), Y (the tree), W (Y, no NaN mending on the store), V (Y, none on the load): graph-replayed small allreduce, lamport
# (as run for ab2; ab0 ran base Y X, ab1 base Y Z X, the same way; variants.patch has each)
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}; mkdir -p $OUT
export PATH=/opt/torch/.venv/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
V="base Y W V"
rm -rf /tmp/v && mkdir -p /tmp/v/base /tmp/v/Y /tmp/v/W /tmp/v/V
tar -xf exp/base.tar -C /tmp/v/base
for v in Y W V; do
  tar --exclude=./exp --exclude='./build*' --exclude=./.deps --exclude=./.git -cf - . | tar -xf - -C /tmp/v/$v
done
cp exp/W.h /tmp/v/W/lib/device/coll_convert.h
cp exp/V.h /tmp/v/V/lib/device/coll_convert.h
for v in $V; do
  (cd /tmp/v/$v && meson setup b -Dgpu=cuda -Dtests=false >/dev/null && ninja -C b tools/symaddr-bench) > $OUT/build-$v.log 2>&1 &
done
wait
for v in $V; do ls -la /tmp/v/$v/b/tools/symaddr-bench || { tail -20 $OUT/build-$v.log; exit 1; }; done
for v in $V; do
  o=$(find /tmp/v/$v/b -name "collectives_gpu.o" | head -1)
  /usr/local/cuda/bin/cuobjdump -sass $o > /tmp/v/$v.sass 2>/dev/null
  python3 - /tmp/v/$v.sass $v <<'PY' >> $OUT/sass.txt
import sys,re
cur=None; n={}
for l in open(sys.argv[1]):
    m=re.search(r'Function : (\S+)',l)
    if m: cur=m.group(1); n[cur]=0; continue
    if cur and re.match(r'\s+/\*[0-9a-f]{4}\*/\s',l): n[cur]+=1
for k,v in n.items():
    if 'lamport' in k and 'ELi0E' in k: print(sys.argv[2],k[:40],v)
PY
done
cat $OUT/sass.txt
nvidia-smi -pm 1 >/dev/null 2>&1
for dt in half bfloat16 float; do
  for v in $V $V; do
    echo "== $dt graph" >> $OUT/ab-$v.txt
    CUDA_VISIBLE_DEVICES=0 timeout 100 mpiexec -n 2 /tmp/v/$v/b/tools/symaddr-bench allreduce --dtype $dt -b 8 -e 32K -f 4 --iters 200 --warmup 20 --algo lamport --graph --check --rounds 3 2>&1 | grep -v "^#" >> $OUT/ab-$v.txt
  done
done
python3 - $OUT <<'PY'
import sys
def tables(path):
    out = {}
    for line in open(path):
        f = line.split()
        if line.startswith("=="):
            cur = out.setdefault(line[3:].strip(), []); cur.append({})
        elif len(f) >= 8 and f[0].isdigit():
            cur[-1][int(f[0])] = (float(f[4]), int(f[7]))
    return out
t = {v: tables(f"{sys.argv[1]}/ab-{v}.txt") for v in ("base","Y","W","V")}
for k in t["base"]:
    sizes = sorted(t["base"][k][0])
    best = lambda v, s: min(run[s][0] for run in t[v][k])
    wrong = sum(run[s][1] for v in t for run in t[v][k] for s in sizes)
    print(k, "base us:", " ".join(f"{best('base',s):.2f}" for s in sizes))
    for v in ("Y","W","V"):
        print(k, v+"/base:", " ".join(f"{best(v,s)/best('base',s):.3f}" for s in sizes), f"(#wrong {wrong})")
PY
