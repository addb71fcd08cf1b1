#!/usr/bin/env bash
# Stripping real libraries to one target, beside copying them (cp, the least any rewrite
# costs) and, for CUDA libraries with cuobjdump on PATH, beside `cuobjdump -xelf` of the same
# target (NVIDIA's nearest tool: it extracts what strip keeps). Prints, per library, the size
# before and after, and the time and peak memory of each, in one run.
#   benches/real_strip.sh LIBRARY TARGET [LIBRARY TARGET]...
# For example, PyPI's torch CUDA wheel's torch/lib/libtorch_cuda.so with sm_90, and Debian's
# librccl.so.1.0 (librccl1, unpacked with dpkg -x) with gfx90a. Needs a release build (cargo
# build --release), GNU time, and the library's size free in $TMPDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
offload=$PWD/target/release/offload
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

measure() { # NAME CMD... -> "NAME: S s, K KB peak"
  local name=$1
  shift
  /usr/bin/time -f "$name: %e s, %M KB peak" "$@" >"$work/out" 2>"$work/err" || {
    cat "$work/err" >&2
    return 1
  }
  grep -F "$name: " "$work/err"
}

while [ $# -ge 2 ]; do
  lib=$1 target=$2
  shift 2
  echo "== $lib, --keep $target: $(stat -c %s "$lib") bytes"
  cat "$lib" >/dev/null
  measure "cp" cp "$lib" "$work/copy"
  rm -f "$work/copy"
  measure "offload strip --keep $target" "$offload" strip --keep "$target" "$lib" -o "$work/out.so"
  grep -F "device images" "$work/out" || true
  echo "after: $(stat -c %s "$work/out.so") bytes"
  rm -f "$work/out.so"
  if [[ $target == sm_* ]] && command -v cuobjdump >/dev/null; then
    mkdir -p "$work/x"
    (cd "$work/x" && measure "cuobjdump -xelf $target" cuobjdump -xelf "$target" "$lib")
    rm -rf "$work/x"
  fi
done
