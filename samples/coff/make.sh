#!/usr/bin/env bash
# Makes COFF relocatable objects with Debian's clang-19 for the llvm-objcopy comparisons of
# tests/objcopy_coff.rs: x86-64, AArch64 and x86 Windows objects, MSVC and MinGW flavours, a
# HIP host object and a HIP -fgpu-rdc fat object (bundled by the clang driver through
# llvm-objcopy). Run from anywhere; works inside this folder with relative paths only, and
# -mno-incremental-linker-compatible keeps the time stamps at 0, so the bytes are the same on
# every run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
CLANG=${CLANG:-clang-19}
command -v "$CLANG" >/dev/null || { echo "make.sh: $CLANG not found" >&2; exit 1; }
rm -f ./*.obj
COFF=(-mno-incremental-linker-compatible -O1 -c)
for target in x86_64-pc-windows-msvc aarch64-pc-windows-msvc; do
  "$CLANG" --target="$target" "${COFF[@]}" -g -gno-codeview-command-line -fdebug-compilation-dir=. -ffunction-sections -fdata-sections cxx.cpp \
    -o "cxx-$target.obj"
done
for target in x86_64-w64-windows-gnu i686-pc-windows-msvc aarch64-pc-windows-msvc; do
  "$CLANG" --target="$target" "${COFF[@]}" weak-and-file-symbols.c \
    -o "weak-and-file-symbols-$target.obj"
done
HIP=(-x hip --target=x86_64-pc-windows-msvc -nogpulib -nogpuinc --offload-arch=gfx906
  -mno-incremental-linker-compatible -O1 -cuid=kernel)
"$CLANG" "${HIP[@]}" --cuda-host-only -c ../src/kernel.hip -o kernel-host-x86_64-pc-windows-msvc.obj
"$CLANG" "${HIP[@]}" -fgpu-rdc -c ../src/kernel.hip -o kernel-rdc-x86_64-pc-windows-msvc.obj
echo "coff: $(du -ch ./*.obj | tail -1 | cut -f1)"
