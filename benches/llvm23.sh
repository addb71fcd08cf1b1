#!/usr/bin/env bash
# Times our tools standing in for LLVM 23.1.4's beside LLVM's own, run in the Debian sid root
# that .ci/sid-root makes, on the same large images, in one run: packing and unpacking version 2
# offload binaries (llvm-offload-binary-23), and wrapping an image as HIP and OpenMP bitcode
# (llvm-offload-wrapper-23). Prints wall time and peak memory (GNU time `%e s %M KiB`) per row,
# then whether the outputs are the same bytes.
#
#   benches/llvm23.sh [SIZE_MIB]
#
# SIZE_MIB (default 256) is the size of each of the two images (random bytes). The root is
# OFFLOAD_SID_ROOT (default /var/tmp/offload-sid); OFFLOAD_BIN names the `offload` to time
# instead of building the release one. Run as root (chroot).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
size=${1:-256}
root=${OFFLOAD_SID_ROOT:-/var/tmp/offload-sid}
[ -x /usr/bin/time ] || { echo "llvm23.sh: GNU time (/usr/bin/time) not found" >&2; exit 1; }
[ -x "$root/usr/bin/llvm-offload-binary-23" ] || {
  echo "llvm23.sh: no LLVM 23 in $root (.ci/sid-root makes it)" >&2
  exit 1
}
ours=${OFFLOAD_BIN:-}
if [ -z "$ours" ]; then
  (cd "$here" && cargo build --release --quiet)
  ours="$here/target/release/offload"
fi
work=$(mktemp -d "$root/tmp/llvm23-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
inside=/tmp/$(basename "$work")
mkdir -p "$work/bin"
cp "$ours" "$work/bin/llvm-offload-binary-23"
cp "$ours" "$work/bin/llvm-offload-wrapper-23"
head -c $((size << 20)) /dev/urandom >"$work/a.bin"
head -c $((size << 20)) /dev/urandom >"$work/b.bin"

row() { # row NAME PROGRAM ARGS... (PROGRAM run in the root's work folder)
  local label=$1; shift
  sync
  if /usr/bin/time -f "%e s %M KiB" -o "$work/time.out" \
    chroot "$root" sh -c 'cd "$0" && shift && exec "$@"' "$inside" - "$@" >/dev/null 2>"$work/time.err"; then
    printf '%-56s %s\n' "$label" "$(tail -1 "$work/time.out")"
  else
    printf '%-56s failed (%s)\n' "$label" "$(tail -1 "$work/time.err")"
  fi
}

cat "$work/a.bin" "$work/b.bin" >/dev/null
row "cat a.bin b.bin > copy" sh -c 'cat a.bin b.bin > copy'
rm -f "$work/copy"
images="--image=file=a.bin,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=hip
--image=file=b.bin,triple=amdgcn-amd-amdhsa,arch=gfx942,kind=hip"
# shellcheck disable=SC2086
row "llvm-offload-binary-23 -o llvm.out (two images)" llvm-offload-binary-23 -o llvm.out $images
# shellcheck disable=SC2086
row "offload as llvm-offload-binary-23 -o ours.out" bin/llvm-offload-binary-23 -o ours.out $images
row "llvm-offload-binary-23 llvm.out --image=arch=gfx942" \
  llvm-offload-binary-23 llvm.out --image=file=llvm.img,arch=gfx942
row "offload as llvm-offload-binary-23 ours.out --image=arch=gfx942" \
  bin/llvm-offload-binary-23 ours.out --image=file=ours.img,arch=gfx942
cmp -s "$work/llvm.out" "$work/ours.out" && echo "packed: the same bytes" || echo "packed: DIFFERENT"
cmp -s "$work/llvm.img" "$work/ours.img" && echo "unpacked: the same bytes" || echo "unpacked: DIFFERENT"
for kind in hip openmp; do
  row "llvm-offload-wrapper-23 --kind=$kind a.bin" llvm-offload-wrapper-23 --kind=$kind -o llvm.bc a.bin
  row "offload as llvm-offload-wrapper-23 --kind=$kind a.bin" \
    bin/llvm-offload-wrapper-23 --kind=$kind -o ours.bc a.bin
  cmp -s "$work/llvm.bc" "$work/ours.bc" && echo "wrapped ($kind): the same bytes" ||
    echo "wrapped ($kind): DIFFERENT"
done
