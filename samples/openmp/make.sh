#!/usr/bin/env bash
# Makes host objects whose .llvm.offloading sections hold OffloadBinaries, as clang's offload
# driver embeds them, with Debian's clang-19, ld.lld-19, llvm-ar-19 and
# clang-offload-packager-19. Run from anywhere; works inside this folder with relative paths
# only. See README.md for what each file is.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
CLANG=${CLANG:-clang-19}
LLD=${LLD:-ld.lld-19}
AR=${AR:-llvm-ar-19}
PACKAGER=${PACKAGER:-clang-offload-packager-19}
for tool in "$CLANG" "$LLD" "$AR" "$PACKAGER"; do
  command -v "$tool" >/dev/null || { echo "make.sh: $tool not found" >&2; exit 1; }
done
export ZERO_AR_DATE=1
rm -f ./*.o ./*.a ./*.bin

# OpenMP for two GPUs: one OffloadBinary (bitcode) per GPU in .llvm.offloading.
OMP=(-fopenmp --offload-arch=gfx90a,gfx906 -nogpulib -O2 -c)
"$CLANG" "${OMP[@]}" ../src/omp.c -o omp.o
"$CLANG" "${OMP[@]}" -foffload-lto ../src/omp.c -o omp-lto.o
"$CLANG" "${OMP[@]}" saxpy.c -o saxpy.o

# A partial link keeps the excluded section: its .llvm.offloading holds the four binaries of
# both objects one after another.
"$LLD" -r omp.o saxpy.o -o partial.o

# An archive of such objects.
"$AR" rcD libomp.a omp.o saxpy.o

# HIP through the new offload driver: producer hip, a target ID with a feature.
"$CLANG" -x hip --offload-new-driver -fgpu-rdc --offload-arch=gfx906 \
  --offload-arch=gfx90a:xnack+ -nogpulib -nogpuinc -O2 -c ../src/kernel.hip \
  -o hip-rdc.o

# A code object packaged by hand (kind elf, an extra key) and embedded in a host object.
"$CLANG" --target=amdgcn-amd-amdhsa -mcpu=gfx906 -nogpulib -O2 -c -x c - -o device-gfx906.o <<'SRC'
int device_value(int x) { return 3 * x + 1; }
SRC
"$PACKAGER" -o device.bin \
  --image=file=device-gfx906.o,triple=amdgcn-amd-amdhsa,arch=gfx906,kind=openmp,note=handmade
rm -f device-gfx906.o
"$CLANG" -O2 -c -x c - -Xclang -fembed-offload-object=device.bin -o embedded.o <<'SRC'
int host_value(int x) { return x + 1; }
SRC

echo "openmp: $(du -ch ./*.o ./*.a ./*.bin | tail -1 | cut -f1)"
