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
# Relocatable device code in a shared library: each translation unit's fat binary goes to
# __nv_relfatbin (its wrapper registered through __cudaRegisterLinkedBinary_*), the device
# link's to .nv_fatbin (a version 2 wrapper listing the others); without the device link
# (librelfatbin.so), __nv_relfatbin alone.
mkdir -p tmp
for u in rdc-scale rdc-twice; do
  "$bin/nvcc" -rdc=true -Xcompiler -fPIC -c $u.cu -o tmp/$u.o $two --compress-mode=none
done
"$bin/nvcc" -dlink -Xcompiler -fPIC tmp/rdc-scale.o tmp/rdc-twice.o -o tmp/rdc-dlink.o $two \
  --compress-mode=none
g++ -shared tmp/rdc-scale.o tmp/rdc-twice.o tmp/rdc-dlink.o -o librdc.so
g++ -shared tmp/rdc-scale.o tmp/rdc-twice.o -o librelfatbin.so
rm -rf tmp
# Bare cubins and PTX as nvcc writes them with -cubin and -ptx (arch-specific and family SMs).
mkdir -p bare
for arch in sm_89 sm_90a sm_100a sm_100f; do
  "$bin/nvcc" -cubin -arch=$arch kernel.cu -o "bare/kernel-$arch.cubin"
done
"$bin/nvcc" -ptx -arch=compute_100a kernel.cu -o bare/kernel-compute_100a.ptx
rm -rf extracted
for o in gencode gencode-zstd gencode-lz arch-specific compress-all rdc clang-new-driver; do
  mkdir -p "extracted/$o"
  (cd "extracted/$o" && "$bin/cuobjdump" --extract-elf all "../../$o.o" >/dev/null &&
    "$bin/cuobjdump" --extract-ptx all "../../$o.o" >/dev/null)
  "$bin/cuobjdump" --list-elf --list-ptx "$o.o" >"extracted/$o.list"
done
# Both runtimes in one program (as chipStar, SYCL and ZLUDA builds carry them): clang-22 and
# ld.lld-22 only, from a HIP object (.hip_fatbin, gfx90a and gfx1100) and a clang CUDA host
# object embedding nvcc's fat binary of gencode.o (.nv_fatbin: sm_80, sm_90, compute_90;
# registered as CUDA 12 does, given as the SDK version since no CUDA is installed),
# as a shared library (wrappers set by R_X86_64_RELATIVE) and a program linked against the
# stand-ins of both runtimes.
mkdir -p tmp
llvm-objcopy-22 --dump-section=.nv_fatbin=tmp/gencode.fatbin gencode.o tmp/gencode.o
clang-22 -x cuda --cuda-host-only -nocudainc -nocudalib --cuda-gpu-arch=sm_80 -fPIC -O2 \
  -Xclang -target-sdk-version=12.0 \
  -Xclang -fcuda-include-gpubinary -Xclang tmp/gencode.fatbin -c ../linked/kscale.cu \
  -o tmp/mixed-cuda.o
clang-22 -x hip -nogpulib -nogpuinc -O2 -fPIC --offload-arch=gfx90a --offload-arch=gfx1100 \
  -cuid=mixed -c ../src/kernel.hip -o tmp/mixed-hip.o
clang-22 -fuse-ld=lld -shared tmp/mixed-cuda.o tmp/mixed-hip.o -o libmixed.so
clang-22 -O2 -c ../linked/main.c -o tmp/main.o
clang-22 -O2 -c ../linked/hip-stub.c -o tmp/hip-stub.o
clang-22 -O2 -c ../../tests/support/cuda_runtime.c -o tmp/cuda-standin.o
clang-22 -fuse-ld=lld tmp/main.o tmp/mixed-cuda.o tmp/mixed-hip.o tmp/hip-stub.o \
  tmp/cuda-standin.o -o mixed-app
# A fat binary as an offload binary image (kind fatbin) in .llvm.offloading of an object:
# clang-offload-packager-22 packs nvcc's fat binary of gencode-zstd.o, clang-22 embeds it.
llvm-objcopy-22 --dump-section=.nv_fatbin=tmp/zstd.fatbin gencode-zstd.o tmp/zstd.o
clang-offload-packager-22 -o tmp/zstd.bin \
  --image=file=tmp/zstd.fatbin,triple=nvptx64-nvidia-cuda,arch=sm_80,kind=cuda
clang-22 -O2 -c ../linked/main.c -Xclang -fembed-offload-object=tmp/zstd.bin \
  -o fatbin-in-offload-binary.o
rm -rf tmp
