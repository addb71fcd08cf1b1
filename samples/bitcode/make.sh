#!/usr/bin/env bash
# Makes the bitcode samples in this folder with Debian's LLVM 19 (clang-19, llvm-cat-19), and
# prints the archive symbol table llvm-ar-19 writes for each, which the tests of
# src/format/bitcode.rs expect. Run from anywhere: ./samples/bitcode/make.sh. It works inside
# this folder with relative paths only, so no absolute path ends up in any file.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"

CLANG=${CLANG:-clang-19}
CAT=${CAT:-llvm-cat-19}
AR=${AR:-llvm-ar-19}
NM=${NM:-llvm-nm-19}

LINUX=(--target=x86_64-pc-linux-gnu -c -emit-llvm)
HIP=(-x hip -nogpulib -nogpuinc --offload-arch=gfx90a --cuda-device-only -fgpu-rdc -c -emit-llvm)

"$CLANG" "${LINUX[@]}" -O1 -fcommon symbols.c -o symbols.bc
"$CLANG" --target=x86_64-apple-macos12 -c -emit-llvm -O1 -fcommon symbols.c -o symbols-darwin.bc
"$CLANG" "${LINUX[@]}" -O0 symbols.cpp -o symbols-cxx.bc
"$CLANG" "${LINUX[@]}" -O1 asm.c -o asm.bc
"$CLANG" "${HIP[@]}" -O0 -cuid=device device.hip -o device-gfx90a.bc
"$CLANG" -fopenmp --offload-arch=gfx90a -nogpulib -O2 --offload-device-only -c omp.c \
  -o omp-gfx90a.bc
"$CLANG" "${LINUX[@]}" -O1 -flto=thin -fsanitize=cfi -fvisibility=hidden split.cpp -o split-lto.bc
"$CAT" -b -o concatenated.bc asm.bc symbols.bc

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for bc in symbols.bc symbols-darwin.bc symbols-cxx.bc asm.bc device-gfx90a.bc omp-gfx90a.bc \
  split-lto.bc concatenated.bc; do
  rm -f "$tmp/x.a"
  "$AR" rcs --format=gnu "$tmp/x.a" "$bc"
  echo "== $bc"
  "$NM" --print-armap "$tmp/x.a" | sed -n 's/ in .*//p'
done
