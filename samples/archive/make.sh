#!/usr/bin/env bash
# Makes heterogeneous device archives with Debian's clang-19 and llvm-ar-19: -fgpu-rdc objects
# of the sample kernels for several targets (with xnack variants), a plain host object, and
# archives of them in GNU, thin and BSD form. Run from anywhere; works inside this folder with
# relative paths only.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
CLANG=${CLANG:-clang-19}
AR=${AR:-llvm-ar-19}
export ZERO_AR_DATE=1
rm -f ./*.o ./*.a
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
echo "archive: $(du -ch ./*.o ./*.a | tail -1 | cut -f1)"
