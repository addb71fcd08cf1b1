#!/usr/bin/env bash
# Makes the LLVM 23 goldens with LLVM 23.1.4's own tools, run in the Debian sid root that
# .ci/sid-root makes (OFFLOAD_SID_ROOT, default /work/sid), as root:
#   image.bin              a small device image (text), the wrapper's input
#   wrapper-{hip,cuda,openmp,openmp-relocatable,sycl}.ll
#                          llvm-offload-wrapper-23's module of image.bin, as llvm-dis-23 prints it
#   bundle-o.bundle        clang-offload-bundler-23 -type=o of no host and two code objects
#   bundle-bc.bundle       clang-offload-bundler-23 -type=bc of two device bitcode files
set -euo pipefail
cd "$(dirname "$0")"
root=${OFFLOAD_SID_ROOT:-/work/sid}
work=$(mktemp -d "$root/tmp/llvm23-samples.XXXXXX")
trap 'rm -rf "$work"' EXIT
inside=/tmp/$(basename "$work")
printf 'device image\n' >image.bin
cp image.bin ../dev/kernel-gfx906.hsaco ../dev/kernel-gfx90a.hsaco "$work/"
cp ../dev/kernel-gfx906.bc ../dev/kernel-gfx90a.bc "$work/"
run() { chroot "$root" sh -c "cd $inside && $*"; }
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
