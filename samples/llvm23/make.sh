#!/usr/bin/env bash
# Makes objects with clang-23, whose new offload driver (the default for HIP) embeds version 2
# offload binaries in .llvm.offloading, run in the Debian sid root OFFLOAD_SID_ROOT (see
# .ci/sid-root):
#   hip-rdc.o         HIP -fgpu-rdc for gfx90a and gfx1030: bitcode images
#   hip.o             HIP without -fgpu-rdc: code objects linked into a .hip_fatbin bundle
#   hip-compressed.o  hip.o's build with --offload-compress
#   omp.o             OpenMP for gfx90a
#   three.bin         llvm-offload-binary-23 packing three small files, one with an extra key
#   hip-rdc-gfx90a.o  hip-rdc.o stripped by `offload strip --keep gfx90a` (a golden file)
#   ls.txt, objdump-hip-rdc-gfx90a.txt  golden outputs of `offload ls` and llvm-objdump-23
# Run from anywhere.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
ROOT=${OFFLOAD_SID_ROOT:-/work/sid}
work=$(mktemp -d "$ROOT/tmp/llvm23.XXXXXX")
trap 'rm -rf "$work"' EXIT
inside=${work#"$ROOT"}
cp ../src/kernel.hip ../src/omp.c "$work"/
printf 'AAAAAAAAAAAAA' >"$work/a.bin"
printf 'BBBBBBBBBBBBBBBBBBBBBB' >"$work/b.bin"
printf 'CCC' >"$work/c.bin"
run() { chroot "$ROOT" sh -c "cd $inside && PATH=/usr/lib/llvm-23/bin:\$PATH $*"; }
HIP="-x hip -nogpulib -nogpuinc -O2 --offload-arch=gfx90a --offload-arch=gfx1030 -cuid=akernel"
run clang-23 "$HIP" -fgpu-rdc -c kernel.hip -o hip-rdc.o
run clang-23 "$HIP" -c kernel.hip -o hip.o
run clang-23 "$HIP" --offload-compress -c kernel.hip -o hip-compressed.o
run clang-23 -O2 -fopenmp --offload-arch=gfx90a -nogpulib -c omp.c -o omp.o
run llvm-offload-binary-23 -o three.bin \
  --image=file=a.bin,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=hip \
  --image=file=b.bin,triple=amdgcn-amd-amdhsa,arch=gfx1030,kind=hip,foo=bar \
  --image=file=c.bin,triple=nvptx64-nvidia-cuda,arch=sm_70,kind=openmp
for f in hip-rdc.o hip.o hip-compressed.o omp.o three.bin; do
  cp "$work/$f" .
done
echo "llvm23: $(du -ch ./*.o ./*.bin | tail -1 | cut -f1)"
