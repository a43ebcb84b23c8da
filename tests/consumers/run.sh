#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the consumers of an installed symaddr (PREFIX: where `meson install` put it) and runs
# each with 2 ranks: CMake (find_package) from C, C++, CUDA (where nvcc is) and a static link,
# make (pkg-config), and Meson with symaddr as a subproject of the source tree (SRC). First, every public header compiles as users'
# strict builds do: C99, C11, GNU11 (-pedantic) and C++11, C++17, warnings as errors, with no
# flags but pkg-config's.
set -euo pipefail
PREFIX=$1 SRC=$(cd "$(dirname "$0")/../.." && pwd) WORK=${WORK:-$(mktemp -d)}
here=$(cd "$(dirname "$0")" && pwd)
libdir=$(find "$PREFIX" -name libsymaddr.so -printf '%h\n' | head -1)
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PKG_CONFIG_PATH=$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 SYMADDR_BACKEND=cpu
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# MPIEXEC: the launcher of the MPI symaddr was built with (default: PATH's); Open MPI's wants
# --oversubscribe for more ranks than cores, MPICH's Hydra has no such flag.
mpiexec=${MPIEXEC:-mpiexec}
over=
if "$mpiexec" --version 2>&1 | grep -qE "Open MPI|OpenRTE"; then
    over=--oversubscribe
fi
run() { "$mpiexec" -n 2 $over "$@"; }

headers=$(cd "$(pkg-config --variable=includedir symaddr)" && ls symaddr/*.h)
probe=$WORK/headers.c
for h in $headers; do echo "#include <$h>"; done >"$probe"
echo 'int main(void) { return (int)(symaddr_clock_ns() & 0) + SYMADDR_OK; }' >>"$probe"
cp "$probe" "$WORK/headers.cpp"
for std in c99 c11 gnu11; do
    cc -std=$std -pedantic -Wall -Wextra -Werror $(pkg-config --cflags symaddr) "$probe" \
        -o "$WORK/headers-$std" $(pkg-config --libs symaddr)
done
for std in c++11 c++17; do
    c++ -std=$std -Wall -Wextra -Werror $(pkg-config --cflags symaddr) "$WORK/headers.cpp" \
        -o "$WORK/headers-$std" $(pkg-config --libs symaddr)
done
echo "-- headers: $(echo $headers | wc -w) public headers compile as c99, c11, gnu11, c++11, c++17"

cp -r "$here" "$WORK/consumers"
for d in cmake cmake-static make meson; do cp "$here/consumer.c" "$WORK/consumers/$d/"; done # one source
cp "$here/consumer.c" "$WORK/consumers/cmake-cxx/consumer.cpp"
cp "$here/consumer.c" "$WORK/consumers/cmake-cuda/consumer.cu"
# cmake_consumer FOLDER [ARGS...]: configure, build and run one CMake project
cmake_consumer() {
    local d=$1
    shift
    cmake -S "$WORK/consumers/$d" -B "$WORK/$d-build" -DCMAKE_PREFIX_PATH="$PREFIX" "$@" >/dev/null
    cmake --build "$WORK/$d-build" >/dev/null
    run "$WORK/$d-build/consumer"
}
n=3
echo "-- cmake: find_package(symaddr), project(C)"
cmake_consumer cmake
echo "-- cmake: project(CXX), no C enabled"
cmake_consumer cmake-cxx
n=$((n + 1))
echo "-- cmake: symaddr::symaddr_static (libsymaddr.a)"
cmake_consumer cmake-static
n=$((n + 1))
nvcc=$(command -v nvcc || true)
[ -n "$nvcc" ] || [ ! -x /usr/local/cuda/bin/nvcc ] || nvcc=/usr/local/cuda/bin/nvcc
if [ -n "$nvcc" ]; then
    echo "-- cmake: project(CXX CUDA), the consumer built by nvcc"
    cmake_consumer cmake-cuda -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES=90
    n=$((n + 1))
else
    echo "-- cmake: project(CXX CUDA): SKIP, no nvcc here"
fi
echo "-- cmake: project(HIP): SKIP, CMake's HIP language needs ROCm's hip-lang package, which" \
     "Debian's ROCm 5.2 lacks (the hip backend's own build is compile-checked by .ci/run)"

echo "-- make: pkg-config --cflags --libs symaddr"
make -s -C "$WORK/consumers/make" consumer
run "$WORK/consumers/make/consumer"

echo "-- meson: dependency('symaddr') from a subproject"
mkdir -p "$WORK/consumers/meson/subprojects"
ln -s "$SRC" "$WORK/consumers/meson/subprojects/symaddr"
env -u PKG_CONFIG_PATH meson setup --force-fallback-for=symaddr "$WORK/meson-build" \
    "$WORK/consumers/meson" >/dev/null
ninja -C "$WORK/meson-build" >/dev/null
run "$WORK/meson-build/consumer"
echo "consumers: $n built and run"
