#!/usr/bin/env bash
# Makes the CUDA samples with NVIDIA's nvcc and the goldens with its cuobjdump, both from PyPI:
#   pip download --no-deps nvidia-cuda-nvcc nvidia-cuda-runtime nvidia-cuda-crt nvidia-nvvm \
#     nvidia-cuda-cuobjdump; unzip each wheel into one folder NV
#   samples/cuda/make.sh NV/nvidia/cu13/bin
# nvcc needs only gcc as its host compiler; no GPU. Made with CUDA 13.5.37.
set -euo pipefail
bin=$(cd "$1" && pwd)
cd "$(dirname "$0")"
two="-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]"
"$bin/nvcc" -c kernel.cu -o gencode.o $two --compress-mode=none
"$bin/nvcc" -c kernel.cu -o gencode-zstd.o $two --compress-mode=size
"$bin/nvcc" -c kernel.cu -o gencode-lz.o $two --compress-mode=speed
"$bin/nvcc" -c kernel.cu -o arch-specific.o --compress-mode=none \
  -gencode arch=compute_90a,code=[sm_90a,compute_90a] \
  -gencode arch=compute_100f,code=sm_100f -gencode arch=compute_120,code=sm_120
"$bin/nvcc" -c kernel.cu -o compress-all.o $two -Xfatbin -compress-all
# Relocatable device code: the fat binary goes to __nv_relfatbin.
"$bin/nvcc" -c -rdc=true kernel.cu -o rdc.o $two --compress-mode=none
# Linked: a shared library and a program, against no CUDA runtime (the tests bring a
# stand-in, tests/support/cuda_runtime.c).
"$bin/nvcc" -shared -Xcompiler -fPIC kernel.cu -o libkernel.so $two -cudart none \
  --compress-mode=none
mkdir -p tmp
cc -shared -fPIC -Wl,-soname,libcudart_standin.so -o tmp/libcudart_standin.so \
  ../../tests/support/cuda_runtime.c
"$bin/nvcc" app.cu -o app $two -cudart none --compress-mode=size -Xlinker tmp/libcudart_standin.so
rm -rf tmp
# clang's new offload driver (clang-22, no CUDA headers or libraries): a fat binary in
# .nv_fatbin, and with -fgpu-rdc, relocatable cubins in offload binaries in .llvm.offloading.
new="clang++-22 -x cuda --offload-new-driver -nocudainc -nocudalib --cuda-path=$bin/.. \
  --offload-arch=sm_80 --offload-arch=sm_90 -Wno-unknown-cuda-version"
$new -c ../linked/kscale.cu -o clang-new-driver.o
$new -fgpu-rdc -c ../linked/kscale.cu -o clang-new-driver-rdc.o
rm -rf extracted
for o in gencode gencode-zstd gencode-lz arch-specific compress-all rdc clang-new-driver; do
  mkdir -p "extracted/$o"
  (cd "extracted/$o" && "$bin/cuobjdump" --extract-elf all "../../$o.o" >/dev/null &&
    "$bin/cuobjdump" --extract-ptx all "../../$o.o" >/dev/null)
  "$bin/cuobjdump" --list-elf --list-ptx "$o.o" >"extracted/$o.list"
done
