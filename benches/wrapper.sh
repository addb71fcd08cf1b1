#!/usr/bin/env bash
# Times `offload wrapper` writing bitcode (each module shape) and native objects (each kind and
# host) for one large image, beside `cat` of the image (plain, and synced as our outputs are:
# the bounds are bitcode at most 2x that, native objects 1.5x, both under 32 MiB peak) and LLVM
# 22's llvm-offload-wrapper writing the HIP module (and clang-22 compiling it to an object), in
# one run. Prints wall time and peak memory (GNU time `%e s %M KiB`) per row, then the sizes.
#
#   benches/wrapper.sh [WORKDIR] [SIZE_MIB]
#
# WORKDIR (default /tmp/offload-wrapper) is emptied first; SIZE_MIB defaults to 256 (random
# bytes). The LLVM row is skipped when llvm-offload-wrapper-22 is missing. OFFLOAD_BIN names
# the `offload` to time instead of building the release one.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/offload-wrapper}
size=${2:-256}
[ -x /usr/bin/time ] || { echo "wrapper.sh: GNU time (/usr/bin/time) not found" >&2; exit 1; }
ours=${OFFLOAD_BIN:-}
if [ -z "$ours" ]; then
  (cd "$here" && cargo build --release --quiet)
  ours="$here/target/release/offload"
fi
rm -rf "$work" && mkdir -p "$work"
cd "$work"
head -c $((size << 20)) /dev/urandom > image.bin

row() { # row NAME CMD...
  local label=$1; shift
  sync
  if /usr/bin/time -f "%e s %M KiB" -o time.out "$@" >/dev/null 2>time.err; then
    printf '%-52s %s\n' "$label" "$(tail -1 time.out)"
  else
    printf '%-52s failed (%s)\n' "$label" "$(tail -1 time.err)"
  fi
}

cat image.bin >/dev/null
row "cat IMAGE > copy" sh -c 'cat image.bin > copy'
rm -f copy
# Our outputs are synced before they are put in place; cat's are not.
row "cat IMAGE > copy, then sync it" sh -c 'cat image.bin > copy && sync copy'
rm -f copy
row "offload wrapper --kind=hip -o w.bc" "$ours" wrapper --kind=hip -o ours-hip.bc image.bin
row "offload wrapper --kind=openmp -o w.bc" "$ours" wrapper --kind=openmp -o ours-omp.bc image.bin
row "offload wrapper -target=x86_64-pc-linux-gnu -o w.bc" \
  "$ours" wrapper -target=x86_64-pc-linux-gnu -o ours-14.bc image.bin
row "offload wrapper -target=x86_64-pc-linux-gnu -o w.o" \
  "$ours" wrapper -target=x86_64-pc-linux-gnu -o ours-14.o image.bin
row "offload wrapper -target=x86_64-pc-windows-msvc -o w.obj" \
  "$ours" wrapper -target=x86_64-pc-windows-msvc -o ours-14.obj image.bin
row "offload wrapper --kind=hip -o w.o" "$ours" wrapper --kind=hip -o ours-hip.o image.bin
row "offload wrapper --kind=hip (windows-msvc) -o w.obj" \
  "$ours" wrapper --kind=hip --triple=x86_64-pc-windows-msvc -o ours-hip.obj image.bin
row "offload wrapper --kind=openmp (aarch64) -o w.o" \
  "$ours" wrapper --kind=openmp --triple=aarch64-linux-gnu -o ours-omp-a64.o image.bin
if command -v llvm-offload-wrapper-22 >/dev/null; then
  row "llvm-offload-wrapper-22 --kind=hip -o w.bc" llvm-offload-wrapper-22 --kind=hip -o llvm-hip.bc image.bin
  if command -v clang-22 >/dev/null; then
    row "  then clang-22 -c w.bc -o w.o" clang-22 -c llvm-hip.bc -o llvm-hip.o
  fi
fi
ls -l ./*.bc ./*.o ./*.obj | awk '{ printf "  %-16s %d bytes\n", $9, $5 }'
