# The benchmark inputs, found or fetched into INPUTS (default /work/bench), for benches/speed.sh
# and benches/memory.sh (sourced: sets lib, solver, plugin, torch_cuda and rocblas). Each can
# be named instead:
#   LIBROCSPARSE  librocsparse.so (Debian's librocsparse0, 1.3 GB)
#   LIBROCSOLVER  librocsolver.so (Debian sid's librocsolver0, 1.96 GB)
#   PLUGIN        JAX's ROCm 7 XLA plugin (PyPI's jax-rocm7-pjrt, 459 MB)
#   TORCH_CUDA    PyTorch's libtorch_cuda.so (PyPI's torch for Linux x86-64, 520 MB)
#   ROCBLAS_TREE  Debian sid's librocblas4 6.4.4 unpacked (4.1 GB in 1,355 files)
# Debian sid's packages come through the sid root of .ci/sid-root (OFFLOAD_SID_ROOT, else
# /var/tmp/offload-sid), whose apt knows sid; without it, those inputs are left out with a
# message. Fetching needs the network; what is found is used as it is.
inputs=${INPUTS:-/work/bench}
mkdir -p "$inputs"

# sid_unpack PACKAGE DIR: Debian sid's PACKAGE unpacked into INPUTS/DIR, by the sid root's apt.
sid_unpack() {
  local root=${OFFLOAD_SID_ROOT:-/var/tmp/offload-sid}
  [ -x "$root/usr/bin/apt-get" ] || { echo "inputs.sh: no sid root ($root) for $1" >&2; return 0; }
  chroot "$root" sh -c "rm -rf /tmp/bench-debs && mkdir -p /tmp/bench-debs && cd /tmp/bench-debs &&
    apt-get -qq -o Acquire::Check-Valid-Until=false update && apt-get download -q $1" >/dev/null 2>&1 ||
    { echo "inputs.sh: $1 could not be downloaded" >&2; return 0; }
  dpkg -x "$root"/tmp/bench-debs/"$1"_*.deb "$inputs/$2"
  rm -rf "$root/tmp/bench-debs"
}

lib=${LIBROCSPARSE:-$(find "$inputs/rocsparse" -name 'librocsparse.so.*.*' 2>/dev/null | head -n 1)}
if [ ! -f "$lib" ]; then
  (cd "$inputs" && apt-get download librocsparse0 >/dev/null && dpkg -x librocsparse0_*.deb rocsparse)
  lib=$(find "$inputs/rocsparse" -name 'librocsparse.so.*.*' | head -n 1)
fi
solver=${LIBROCSOLVER:-$(find "$inputs/rocsolver" -name 'librocsolver.so.*.*' 2>/dev/null | head -n 1)}
if [ ! -f "$solver" ]; then
  sid_unpack librocsolver0 rocsolver
  solver=$(find "$inputs/rocsolver" -name 'librocsolver.so.*.*' 2>/dev/null | head -n 1)
fi
plugin=${PLUGIN:-$inputs/jax/x/jax_plugins/xla_rocm7/xla_rocm_plugin.so}
if [ ! -f "$plugin" ]; then
  (cd "$inputs" && python3 -m pip download -q --no-deps -d jax jax-rocm7-pjrt &&
    cd jax && python3 -m zipfile -e jax_rocm7_pjrt-*.whl x)
fi
torch_cuda=${TORCH_CUDA:-$inputs/torch/torch/lib/libtorch_cuda.so}
if [ ! -f "$torch_cuda" ] && [ -z "${TORCH_CUDA:-}" ]; then
  (cd "$inputs" && python3 -m pip download -q --no-deps -d torchw torch &&
    python3 -m zipfile -e torchw/torch-*.whl torch) || echo "inputs.sh: no torch wheel" >&2
fi
rocblas=${ROCBLAS_TREE:-$inputs/rocblas}
if [ ! -d "$rocblas" ] && [ -z "${ROCBLAS_TREE:-}" ]; then
  sid_unpack librocblas4 rocblas
fi
