#!/usr/bin/env bash
# Times the readers of compressed bundles beside the commands that bound them, in one run:
# `offload ls`, `extract --arch`, `verify` and `ls --verify` on the input benches/make-compressed.sh
# makes (33 CCOB v3 bundles, 2 GB inflated, in an object's `.hip_fatbin`), and `ls`,
# `extract` and `verify` on an uncompressed library. Prints wall time, peak memory (max RSS)
# and each ratio against its reference:
#   ls            `cat FILE >/dev/null`                               (target: at most 2x)
#   extract       `zstd -d` of every stream to /dev/null              (target: at most 1.5x)
#   verify        `zstd -d` of every stream, then `md5sum` of what
#                 they inflate to: inflating and hashing on one core  (target: at most 0.6x)
#   strip         `zstd -d` of every stream to /dev/null              (target: at most 2x)
#   decompress    `zstd -d` of every stream into one file, synced     (no target; shown)
#   rewrites of the library: `cp FILE` and sync
#
#   benches/compressed.sh [WORKDIR] [LIBRARY]
#
# WORKDIR (default /tmp/offload-compressed) keeps the generated input between runs. LIBRARY
# is the uncompressed HIP library (default: librocsparse under /work/bench/rocsparse). Needs
# zstd, GNU time (/usr/bin/time), llvm-objcopy-22.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/offload-compressed}
lib=${2:-/work/bench/rocsparse/usr/lib/x86_64-linux-gnu/librocsparse.so.0.1}
command -v zstd >/dev/null || { echo "compressed.sh: zstd not found: apt-get install zstd" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "compressed.sh: GNU time (/usr/bin/time) not found" >&2; exit 1; }

"$here/benches/make-compressed.sh" "$work" "$lib" >/dev/null
ours="$here/target/release/offload"
cd "$work"
fat=fat.o
# Late in every bundle: the 24th of 25 processors.
arch=gfx1101

# measure CMD... -> "seconds maxrss_kib"; the command's output is thrown away.
measure() {
  /usr/bin/time -f "%e %M" -o time.out "$@" >/dev/null 2>time.err || {
    echo "compressed.sh: failed: $*" >&2; cat time.err >&2; }
  tail -1 time.out
}
# row NAME "OURS" "REFERENCE" REFNAME
row() {
  read -r os ok <<<"$2"; read -r rs rk <<<"$3"
  awk -v n="$1" -v os="$os" -v ok="$ok" -v rs="$rs" -v rk="$rk" -v r="$4" 'BEGIN {
    printf "| %-38s | %7.2f s | %7.1f MiB | %-30s | %7.2f s | %6.2fx |\n",
      n, os, ok/1024, r, rs, (rs > 0 ? os/rs : 0) }'
}

# Warm the cache.
cat "$fat" plain/* streams/* "$lib" >/dev/null
cat_fat=$(measure cat "$fat")
cat_lib=$(measure cat "$lib")
zstd_all=$(measure zstd -q -d -c streams/*.zst)
md5_all=$(measure md5sum plain/*)
read -r zs _ <<<"$zstd_all"; read -r ms _ <<<"$md5_all"
one_core=$(awk -v a="$zs" -v b="$ms" 'BEGIN { print a + b, 0 }')

echo "| command | ours | peak | reference | reference time | ratio |"
echo "| --- | --- | --- | --- | --- | --- |"
row "ls (compressed)" "$(measure "$ours" ls "$fat")" "$cat_fat" "cat FILE"
rm -rf out
row "extract --arch $arch (compressed)" "$(measure "$ours" extract "$fat" --arch $arch -o out)" \
  "$zstd_all" "zstd -d of every stream"
rm -rf out
row "verify (compressed)" "$(measure "$ours" verify "$fat")" "$one_core" "zstd -d + md5sum, one core"
row "ls --verify (compressed)" "$(measure "$ours" ls --verify "$fat")" "$one_core" \
  "zstd -d + md5sum, one core"
row "strip --keep $arch -o OUT (compressed)" \
  "$(measure "$ours" strip "$fat" --keep $arch -o stripped.o)" "$zstd_all" "zstd -d of every stream"
zstd_file=$(measure sh -c 'zstd -q -d -c streams/*.zst >inflated.out && sync inflated.out')
row "decompress -o OUT (compressed)" "$(measure "$ours" decompress "$fat" -o plain.o)" \
  "$zstd_file" "zstd -d into a file, synced"
rm -f stripped.o plain.o inflated.out
cp_lib=$(measure sh -c "cp '$lib' copy.so && sync copy.so")
rm -f copy.so
row "ls (librocsparse)" "$(measure "$ours" ls "$lib")" "$cat_lib" "cat FILE"
row "strip --keep gfx90a:xnack+ (librocsparse)" \
  "$(measure "$ours" strip "$lib" --keep gfx90a:xnack+ -o stripped.so)" "$cp_lib" "cp FILE, synced"
row "compress -o OUT (librocsparse)" "$(measure "$ours" compress "$lib" -o z.so)" "$cp_lib" \
  "cp FILE, synced"
row "decompress -o OUT (librocsparse compressed)" \
  "$(measure "$ours" decompress z.so -o plain.so)" "$cp_lib" "cp FILE, synced"
rm -f stripped.so z.so plain.so
row "extract --arch gfx90a (librocsparse)" \
  "$(measure "$ours" extract "$lib" --arch gfx90a:xnack+ -o out)" "$cat_lib" "cat FILE"
rm -rf out
row "verify (librocsparse)" "$(measure "$ours" verify "$lib")" "$cat_lib" "cat FILE"
rm -f time.out time.err
