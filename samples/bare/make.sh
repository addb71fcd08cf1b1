#!/usr/bin/env bash
# Makes the samples of bare device images in no container, with clang-22, gcc and ar:
#   kernel.spv    an OpenCL kernel compiled to SPIR-V by clang-22 (spirv64)
#   bare.a        an archive of a cubin and PTX nvcc wrote (extracted by cuobjdump, see
#                 ../cuda/make.sh), a code object and device bitcode clang wrote (../dev)
#   embedded.o    a host object whose .rodata holds each of them as data, as `.incbin` or
#                 `xxd -i` puts them (PTX as a C string, with its NUL), between other bytes
set -euo pipefail
cd "$(dirname "$0")"
printf '__kernel void twice(__global float *x) { x[get_global_id(0)] *= 2.0f; }\n' >kernel.cl
clang-22 --target=spirv64 -c kernel.cl -o kernel.spv
rm kernel.cl
cubin=../cuda/extracted/gencode/gencode.1.sm_80.cubin
ptx=../cuda/extracted/gencode/gencode.1.sm_90.ptx
co=../dev/kernel-gfx90a_xnack+.hsaco
bc=../dev/kernel-gfx90a.bc
rm -f bare.a
ar rcD bare.a "$cubin" "$ptx" "$co" "$bc"
cat >embedded.s <<ASM
  .section .rodata
  .balign 16
  .ascii "some data first, with .version in it and an ELF word: \177ELF"
  .balign 16
  .globl cubin
cubin:
  .incbin "$cubin"
  .balign 16
  .globl ptx
ptx:
  .incbin "$ptx"
  .byte 0
  .ascii "after the text"
  .balign 16
  .globl code_object
code_object:
  .incbin "$co"
  .balign 16
  .globl spirv
spirv:
  .incbin "kernel.spv"
  .balign 16
  .globl bitcode
bitcode:
  .incbin "$bc"
  .ascii "BC and a few more bytes"
ASM
gcc -c embedded.s -o embedded.o
rm embedded.s
