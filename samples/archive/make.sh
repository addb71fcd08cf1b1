#!/usr/bin/env bash
# Makes heterogeneous device archives with Debian's clang-19 and llvm-ar-19: -fgpu-rdc objects
# of the sample kernels for several targets (with xnack variants), a plain host object, and
# archives of them in GNU, thin and BSD form. Run from anywhere; works inside this folder with
# relative paths only.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
CLANG=${CLANG:-clang-19}
AR=${AR:-llvm-ar-19}
BUNDLER=${BUNDLER:-clang-offload-bundler-19}
export ZERO_AR_DATE=1
rm -f ./*.o ./*.a ./*.bc ./*.txt
HIP=(-x hip -nogpulib -nogpuinc -O2 -fgpu-rdc -c)
"$CLANG" "${HIP[@]}" --offload-arch=gfx906 --offload-arch=gfx90a:xnack+ --offload-arch=gfx90a:xnack- \
  -cuid=akernel ../src/kernel.hip -o kernel-rdc.o
"$CLANG" "${HIP[@]}" --offload-arch=gfx906 --offload-arch=gfx90a \
  -cuid=avadd ../src/vadd.hip -o vadd-rdc.o
"$CLANG" "${HIP[@]}" --offload-arch=gfx908:sramecc+:xnack- \
  -cuid=avadd908 ../src/vadd.hip -o vadd908-rdc.o
"$CLANG" -O2 -c -x c - -o plain-host.o <<'SRC'
int host_only(int x) { return x + 1; }
SRC
"$AR" rcD libmulti.a kernel-rdc.o vadd-rdc.o plain-host.o vadd908-rdc.o
"$AR" rcDT libthin.a kernel-rdc.o vadd-rdc.o
"$AR" rcD --format=bsd libbsd.a vadd-rdc.o kernel-rdc.o
"$AR" rcD --format=coff libcoff.a kernel-rdc.o vadd-rdc.o
# Members of every kind: a plain bundle, a compressed bundle, a fat object, and text.
T=hipv4-amdgcn-amd-amdhsa--
"$BUNDLER" -type=bc -targets=host-x86_64-unknown-linux-gnu,${T}gfx906,${T}gfx90a \
  -input=/dev/null -input=../dev/kernel-gfx906.bc -input=../dev/kernel-gfx90a.bc -output=kbundle.bc
"$BUNDLER" -type=bc -compress -compression-level=9 -targets=${T}gfx906,${T}gfx90a:xnack- \
  -input=../dev/vadd-gfx906.bc -input=../dev/vadd-gfx90a.bc -output=vcompressed.bc
echo "release notes, not a bundle" > notes.txt
"$AR" rcD libmixed.a kbundle.bc vcompressed.bc notes.txt kernel-rdc.o
rm -f kbundle.bc vcompressed.bc notes.txt
echo "archive: $(du -ch ./*.o ./*.a | tail -1 | cut -f1)"
