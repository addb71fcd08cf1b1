#!/usr/bin/env bash
# Times `offload kpack` splitting a large HIP library into one archive per processor, beside
# `cp` of the same file (the bound: at most 1.5x) and AMD's Python splitter (rocm-kpack's
# split_artifacts.py, through tests/support/kpack_split.py), in one run. Then times merging
# the split library back. Prints wall time and peak memory (GNU time `%e s %M KiB`) per row.
#
#   benches/kpack.sh [WORKDIR] [LIBRARY]
#
# WORKDIR (default /tmp/offload-kpack) is emptied first. LIBRARY defaults to librocsparse
# under /work/bench/rocsparse (1.3 GB, 111 bundles, 7 processors). The Python row needs
# ROCM_KPACK_DIR (default /work/shared/oracles/rocm-kpack), /usr/bin/python3 with msgpack
# and zstandard, and clang-offload-bundler-22; it is skipped when they are missing, and cut
# off after PYTHON_TIMEOUT seconds (default 1800); PYTHON=0 skips it.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/offload-kpack}
lib=${2:-/work/bench/rocsparse/usr/lib/x86_64-linux-gnu/librocsparse.so.0.1}
oracle=${ROCM_KPACK_DIR:-/work/shared/oracles/rocm-kpack}
[ -x /usr/bin/time ] || { echo "kpack.sh: GNU time (/usr/bin/time) not found" >&2; exit 1; }
ours="$here/target/release/offload"
[ -x "$ours" ] || (cd "$here" && cargo build --release --quiet)
rm -rf "$work" && mkdir -p "$work"
cd "$work"
name=$(basename "$lib")

row() { # row NAME CMD...
  local label=$1; shift
  sync
  if /usr/bin/time -f "%e s %M KiB" -o time.out "$@" >/dev/null 2>time.err; then
    printf '%-44s %s\n' "$label" "$(tail -1 time.out)"
  else
    printf '%-44s failed (%s)\n' "$label" "$(tail -1 time.err)"
  fi
}

cat "$lib" >/dev/null
row "cp FILE" cp "$lib" copy
rm -f copy
# Our outputs are synced before they are put in place; cp's are not.
row "cp FILE, then sync it" sh -c 'cp "$1" copy && sync copy' sh "$lib"
rm -f copy
row "offload kpack FILE -o OUT" "$ours" kpack "$lib" -o split
row "offload kpack FILE -o OUT --compression zstd" "$ours" kpack "$lib" -o split-zstd --compression zstd
rm -rf split-zstd
row "offload kpack --merge (split back)" "$ours" kpack --merge split/"$name" -o merged
du -b split/"$name" split/.kpack merged/"$name" | sed 's/^/  /'
rm -rf merged

if [ "${PYTHON:-1}" != 0 ] && [ -f "$oracle/python/rocm_kpack/kpack.py" ] && command -v clang-offload-bundler-22 >/dev/null \
   && /usr/bin/python3 -c 'import msgpack, zstandard' 2>/dev/null; then
  mkdir -p py/in/k_lib_gfx/stage/lib
  ln "$lib" py/in/k_lib_gfx/stage/lib/"$name" 2>/dev/null || cp "$lib" py/in/k_lib_gfx/stage/lib/"$name"
  echo stage >py/in/k_lib_gfx/artifact_manifest.txt
  bundler=$(readlink -f "$(command -v clang-offload-bundler-22)")
  row "rocm-kpack split_artifacts.py (Python)" timeout "${PYTHON_TIMEOUT:-1800}" \
    env PATH="$(dirname "$bundler"):$PATH" /usr/bin/python3 "$here/tests/support/kpack_split.py" \
    "$oracle/python" --artifact-dir py/in/k_lib_gfx --output-dir py/out \
    --artifact-prefix k_lib --tmp-dir py/tmp --clang-offload-bundler "$bundler"
  rm -rf py
else
  echo "rocm-kpack split_artifacts.py (Python)        skipped (PYTHON=0, or rocm-kpack, python3-msgpack or clang-offload-bundler-22 missing)"
fi
rm -rf split time.out time.err
