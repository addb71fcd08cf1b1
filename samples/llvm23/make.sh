#!/usr/bin/env bash
# Makes the LLVM 23 samples and goldens with LLVM 23.1.4's own tools, run in the Debian sid
# root that .ci/sid-root makes (OFFLOAD_SID_ROOT, default /work/sid), as root:
#   image.bin              a small device image (text), the wrapper's input
#   wrapper-{hip,cuda,openmp,openmp-relocatable,sycl}.ll
#                          llvm-offload-wrapper-23's module of image.bin, as llvm-dis-23 prints it
#   bundle-o.bundle        clang-offload-bundler-23 -type=o of no host and two code objects
#   bundle-bc.bundle       clang-offload-bundler-23 -type=bc of two device bitcode files
# and objects of clang-23, whose new offload driver (the default for HIP) embeds version 2
# offload binaries in .llvm.offloading:
#   hip-rdc.o         HIP -fgpu-rdc for gfx90a and gfx1030: bitcode images
#   hip.o             HIP without -fgpu-rdc: code objects linked into a .hip_fatbin bundle
#   hip-compressed.o  hip.o's build with --offload-compress
#   omp.o             OpenMP for gfx90a (its entry names carry the source file's device and
#                     inode numbers, so each run writes other bytes)
#   three.bin         llvm-offload-binary-23 packing three small files, one with an extra key
#   many-keys.bin     two of them with four and seven extra keys (the order of string entries)
# and what clang-23 and clang-linker-wrapper-23 link from them (hip-stub-23.c stands in for the
# HIP runtime; no OpenMP program: Debian's LLVM 23 has no AMDGPU OpenMP device runtime):
#   librdc.a               the -fgpu-rdc objects of kernel.hip and vadd.hip in an archive
#   hip-rdc-app            those objects device-linked by --hip-link -fgpu-rdc
#   hip-rdc-lib-app        the same, the device code taken from librdc.a (a static device library)
#   hip-compressed-app     a program of hip-compressed.o
#   cuda.o, cuda-rdc.o     CUDA by clang-23 for sm_80 (-c; -fgpu-rdc): ptxas and fatbinary from
#                          NVIDIA's PyPI wheels, found on PATH, copied into the root
# (hip-rdc-gfx90a.o, ls.txt and objdump-hip-rdc-gfx90a.txt are golden outputs the tests
# compare with: `offload strip --keep gfx90a` of hip-rdc.o, `offload ls`, llvm-objdump-23.)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
root=${OFFLOAD_SID_ROOT:-/work/sid}
work=$(mktemp -d "$root/tmp/llvm23-samples.XXXXXX")
trap 'rm -rf "$work"' EXIT
inside=/tmp/$(basename "$work")
run() { chroot "$root" sh -c "cd $inside && PATH=/usr/lib/llvm-23/bin:\$PATH $*"; }

# The wrapper's modules and the bundler's bundles.
printf 'device image\n' >image.bin
cp image.bin ../dev/kernel-gfx906.hsaco ../dev/kernel-gfx90a.hsaco "$work/"
cp ../dev/kernel-gfx906.bc ../dev/kernel-gfx90a.bc "$work/"
for kind in hip cuda openmp sycl; do
  run "llvm-offload-wrapper-23 --kind=$kind -o w.bc image.bin && llvm-dis-23 w.bc -o -" >"wrapper-$kind.ll"
done
run "llvm-offload-wrapper-23 --kind=openmp --relocatable -o w.bc image.bin && llvm-dis-23 w.bc -o -" \
  >wrapper-openmp-relocatable.ll
targets=hipv4-amdgcn-amd-amdhsa--gfx906,hipv4-amdgcn-amd-amdhsa--gfx90a
run "clang-offload-bundler-23 -type=o -targets=host-x86_64-unknown-linux-gnu,$targets \
  -input=/dev/null -input=kernel-gfx906.hsaco -input=kernel-gfx90a.hsaco -output=o.bundle"
run "clang-offload-bundler-23 -type=bc -targets=$targets \
  -input=kernel-gfx906.bc -input=kernel-gfx90a.bc -output=bc.bundle"
cp "$work/o.bundle" bundle-o.bundle
cp "$work/bc.bundle" bundle-bc.bundle

# clang-23's objects and a packed binary.
cp ../src/kernel.hip ../src/omp.c "$work"/
printf 'AAAAAAAAAAAAA' >"$work/a.bin"
printf 'BBBBBBBBBBBBBBBBBBBBBB' >"$work/b.bin"
printf 'CCC' >"$work/c.bin"
HIP="-x hip -nogpulib -nogpuinc -O2 --offload-arch=gfx90a --offload-arch=gfx1030 -cuid=akernel"
run clang-23 "$HIP" -fgpu-rdc -c kernel.hip -o hip-rdc.o
run clang-23 "$HIP" -c kernel.hip -o hip.o
run clang-23 "$HIP" --offload-compress -c kernel.hip -o hip-compressed.o
run clang-23 -O2 -fopenmp --offload-arch=gfx90a -nogpulib -c omp.c -o omp.o
run llvm-offload-binary-23 -o three.bin \
  --image=file=a.bin,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=hip \
  --image=file=b.bin,triple=amdgcn-amd-amdhsa,arch=gfx1030,kind=hip,foo=bar \
  --image=file=c.bin,triple=nvptx64-nvidia-cuda,arch=sm_70,kind=openmp
run llvm-offload-binary-23 -o many-keys.bin \
  --image=file=a.bin,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=hip,zz=1,aa=2,mm=3,b=4 \
  --image=file=b.bin,x=1,y=2,z=3,w=4,v=5,u=6,t=7,triple=amdgcn-amd-amdhsa,arch=gfx1030
cp ../src/vadd.hip ../linked/main.c "$work/"
mkdir -p "$work/llvm23" "$work/linked"
cp hip-stub-23.c "$work/llvm23/"
cp ../linked/hip-stub.c "$work/linked/"
export SOURCE_DATE_EPOCH=0 ZERO_AR_DATE=1
run clang-23 "$HIP" -fgpu-rdc -c -cuid=rdc-a kernel.hip -o rdc-a.o
run clang-23 "$HIP" -fgpu-rdc -c -cuid=rdc-b vadd.hip -o rdc-b.o
run clang-23 -O2 -c main.c -o main.o
run clang-23 -O2 -c llvm23/hip-stub-23.c -o stub.o
run llvm-ar-23 rcsD librdc.a rdc-a.o rdc-b.o
LINK="--hip-link -no-hip-rt -fgpu-rdc --offload-arch=gfx90a --offload-arch=gfx1030 -fuse-ld=lld"
run clang-23 "$LINK" main.o rdc-a.o rdc-b.o stub.o -o hip-rdc-app
run clang-23 "$LINK" main.o librdc.a stub.o -o hip-rdc-lib-app
run clang-23 -fuse-ld=lld main.o hip-compressed.o stub.o -o hip-compressed-app
mkdir -p "$root/opt/cuda/bin"
for tool in ptxas fatbinary nvlink; do cp "$(command -v "$tool")" "$root/opt/cuda/bin/"; done
printf '__attribute__((global)) void scale(float *x, float a) { x[0] *= a; }\n' >"$work/k.cu"
CUDA="-x cuda --offload-arch=sm_80 -nocudainc -nocudalib --cuda-path=/opt/cuda -O2"
run PATH=/opt/cuda/bin:\$PATH clang-23 "$CUDA" -c k.cu -o cuda.o
run PATH=/opt/cuda/bin:\$PATH clang-23 "$CUDA" -fgpu-rdc -c k.cu -o cuda-rdc.o
for f in hip-rdc.o hip.o hip-compressed.o omp.o three.bin many-keys.bin librdc.a hip-rdc-app \
  hip-rdc-lib-app hip-compressed-app cuda.o cuda-rdc.o; do
  cp "$work/$f" .
done

# A bundle of 30 entries (the host and 29 processors): clang-offload-bundler-23 lists them in
# the order of its StringMap, which probes linearly since LLVM 23 (22 lists them otherwise).
procs="gfx900 gfx902 gfx904 gfx906 gfx908 gfx909 gfx90a gfx90c gfx942 gfx950 gfx1010 gfx1011
  gfx1012 gfx1013 gfx1030 gfx1031 gfx1032 gfx1033 gfx1034 gfx1035 gfx1036 gfx1100 gfx1101 gfx1102
  gfx1103 gfx1150 gfx1151 gfx1200 gfx1201"
targets=host-x86_64-unknown-linux-gnu
inputs=-input=/dev/null
for p in $procs; do
  targets="$targets,hipv4-amdgcn-amd-amdhsa--$p"
  echo "$p" >"$work/$p.co"
  inputs="$inputs -input=$p.co"
done
run "clang-offload-bundler-23 -type=o -targets=$targets $inputs -output=b30.bundle"
run "clang-offload-bundler-23 -list -type=o -input=b30.bundle" >list-30-entries.txt
