#!/usr/bin/env bash
# Times `offload kpack` splitting and merging a large PE DLL, beside `cp` of the same file and
# AMD's COFF transform (rocm-kpack's python/rocm_kpack/coff/kpack_transform.py) on the same
# input, alone and with AMD's archive writer (tests/support/kpack_split_pe.py). The DLL is
# built here by clang-22 and lld-link-22 for x86_64-pc-windows-msvc: a translation unit with
# a 24 MiB initialized device table for four processors, and samples/src/kernel.hip for two.
# Prints wall time and peak memory (GNU time `%e s %M KiB`) per row.
#
#   benches/kpack_pe.sh [WORKDIR]
#
# WORKDIR (default /tmp/offload-kpack-pe) is emptied first. The AMD rows need ROCM_KPACK_DIR
# (default /work/shared/oracles/rocm-kpack) and /usr/bin/python3 with msgpack and zstandard.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/offload-kpack-pe}
oracle=${ROCM_KPACK_DIR:-/work/shared/oracles/rocm-kpack}
[ -x /usr/bin/time ] || { echo "kpack_pe.sh: GNU time (/usr/bin/time) not found" >&2; exit 1; }
ours="${CARGO_TARGET_DIR:-$here/target}/release/offload"
[ -x "$ours" ] || (cd "$here" && cargo build --release --quiet --bin offload)
rm -rf "$work" && mkdir -p "$work"
cd "$work"

target=--target=x86_64-pc-windows-msvc
hip() { # hip SOURCE OUT ARCH...
  local source=$1 out=$2; shift 2
  clang-22 -x hip -nogpulib -nogpuinc -O2 "$target" -mno-incremental-linker-compatible -c \
    -cuid="$out" "${@/#/--offload-arch=}" "$source" -o "$out.obj"
}
{ sed -n 1,11p "$here/samples/src/kernel.hip"
  echo '__device__ unsigned table[6 << 20] = {1, 2, 3, 4, 5, 6, 7, 8};'
  echo '__global__ void kbig(unsigned *out, unsigned n) { out[n] = table[n]; }'
} > big.hip
hip big.hip big gfx906 gfx90a gfx1100 gfx942
hip "$here/samples/src/kernel.hip" small gfx906 gfx90a
for c in hip-stub win-crt; do
  clang-22 "$target" -O2 -c "$here/samples/linked/$c.c" -o "$c.obj"
done
lld-link-22 -machine:x64 -nodefaultlib -Brepro -release -dll -noentry \
  big.obj small.obj hip-stub.obj win-crt.obj -out:big.dll
echo "big.dll: $(stat -c %s big.dll) bytes"

row() { # row NAME CMD...
  local label=$1; shift
  sync
  if /usr/bin/time -f "%e s %M KiB" -o time.out "$@" >/dev/null 2>time.err; then
    printf '%-44s %s\n' "$label" "$(tail -1 time.out)"
  else
    printf '%-44s failed: %s\n' "$label" "$(tail -1 time.err)"
  fi
}
cat > transform.py <<'EOF'
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1] + "/python")
from rocm_kpack.coff.kpack_transform import kpack_offload_binary
kpack_offload_binary(Path("big.dll"), Path("amd-t.dll"), [".kpack/big_@GFXARCH@.kpack"], "big.dll")
EOF
row "cp big.dll" cp big.dll copy.dll
row "offload kpack big.dll -o ours" "$ours" kpack big.dll -o ours --name big
row "offload kpack --merge ours/big.dll" "$ours" kpack --merge ours/big.dll -o merged
cmp -s merged/big.dll big.dll && echo "merged/big.dll: byte for byte big.dll"
row "AMD's COFF transform (no archives)" /usr/bin/python3 transform.py "$oracle"
row "AMD's transform and archive writer" /usr/bin/python3 \
  "$here/tests/support/kpack_split_pe.py" "$oracle/python" big.dll amd/big.dll amd/.kpack big \
  big.dll ".kpack/big_@GFXARCH@.kpack"
for a in ours/.kpack/*.kpack; do
  cmp -s "$a" "amd/.kpack/$(basename "$a")" && echo "$(basename "$a"): the same as AMD's"
done
