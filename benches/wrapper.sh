#!/usr/bin/env bash
# Times `offload wrapper` writing native objects of one large image beside `cat` of the image to
# a file (the floor: the object is the image plus a few KiB) and, when installed, LLVM 22's
# llvm-offload-wrapper writing bitcode and clang-22 compiling it to the same object, in one run,
# and prints wall time, peak memory (max RSS) and the ratio to `cat`.
#
#   benches/wrapper.sh [WORKDIR]      (default: a temporary folder, removed afterwards)
#
# Input: one 256 MiB image of random bytes (SIZE_MIB=N for another size). Needs GNU time.
# Targets: a native object takes at most 1.5x the time of `cat` and less than 32 MiB. Every
# output of offload reaches the disk before it is renamed into place (fsync), so the time is
# held to `cat` followed by `sync` of the copy, the same work; plain `cat` is shown beside it.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
size_mib=${SIZE_MIB:-256}
[ -x /usr/bin/time ] || { echo "wrapper.sh: GNU time (/usr/bin/time) not found: apt-get install time" >&2; exit 1; }

(cd "$here" && cargo build --release --quiet)
ours="$here/target/release/offload"

work=${1:-$(mktemp -d)}
[ -n "${1:-}" ] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"
cd "$work"
[ -f image.bin ] || head -c $((size_mib << 20)) /dev/urandom > image.bin

# measure CMD... -> prints "seconds maxrss_kib"; the output files are removed first, so that
# every command writes to new files as `cat` does.
measure() {
  rm -f copy.bin w.o w.obj w.bc
  sync
  /usr/bin/time -f "%e %M" -o time.out "$@" >/dev/null
  cat time.out
}

read -r plain_s plain_k < <(measure sh -c 'cat image.bin > copy.bin')
read -r cat_s cat_k < <(measure sh -c 'cat image.bin > copy.bin && sync copy.bin')
row() { # label seconds kib
  awk -v n="$1" -v s="$2" -v k="$3" -v c="$cat_s" 'BEGIN {
    printf "%-58s %7.2f s %9.1f MiB %7.2fx cat+sync\n", n, s, k/1024, (c > 0 ? s/c : 0) }'
}
row "cat image > file" "$plain_s" "$plain_k"
row "cat image > file && sync file (the reference)" "$cat_s" "$cat_k"
worst=0
check() { # label seconds kib: a native object, held to the targets
  row "$@"
  awk -v s="$2" -v k="$3" -v c="$cat_s" 'BEGIN { exit !(s <= 1.5 * c + 0.05 && k < 32 * 1024) }' \
    || { echo "  ^ misses the target (<= 1.5x cat, < 32 MiB)"; worst=1; }
}
read -r s k < <(measure "$ours" wrapper --kind=hip -o w.o image.bin)
check "offload wrapper --kind=hip -o w.o (ELF x86-64)" "$s" "$k"
read -r s k < <(measure "$ours" wrapper --kind=hip --triple=x86_64-pc-windows-msvc -o w.obj image.bin)
check "offload wrapper --kind=hip -o w.obj (COFF x86-64)" "$s" "$k"
read -r s k < <(measure "$ours" wrapper --kind=openmp --triple=aarch64-linux-gnu -o w.o image.bin)
check "offload wrapper --kind=openmp -o w.o (ELF AArch64)" "$s" "$k"
read -r s k < <(measure "$ours" wrapper -target=x86_64-pc-windows-msvc -o w.obj image.bin)
check "offload wrapper (clang-offload-wrapper) -o w.obj (COFF)" "$s" "$k"
if command -v llvm-offload-wrapper-22 >/dev/null && command -v clang-22 >/dev/null; then
  read -r s k < <(measure llvm-offload-wrapper-22 --kind=hip -o w.bc image.bin)
  row "llvm-offload-wrapper-22 --kind=hip -o w.bc" "$s" "$k"
  read -r s k < <(measure sh -c 'llvm-offload-wrapper-22 --kind=hip -o w.bc image.bin && clang-22 -c w.bc -o w.o')
  row "  then clang-22 -c w.bc -o w.o (both)" "$s" "$k"
fi
exit $worst
