#!/usr/bin/env bash
# Makes the compressed benchmark input: an object whose `.hip_fatbin` holds compressed bundles
# (CCOB version 3, zstd) of real code objects for 25 processors, 20 to 100 MB inflated each,
# about 2 GB inflated in all: the shape of a ROCm 7 library built with `--offload-compress`.
#
#   benches/make-compressed.sh WORKDIR [LIBRARY]
#
# The code objects are those of an uncompressed HIP library (LIBRARY, by default the 111
# bundles of librocsparse 5.3 unpacked under /work/bench/rocsparse): each bundle takes 25
# different ones, named for 25 processors in turn, so that no bundle compresses better than
# real ones by repeating itself. Writes WORKDIR/fat.o (the
# object), WORKDIR/streams/*.zst (each bundle's zstd frame alone, for `zstd -d`) and
# WORKDIR/plain/*.bundle (each bundle uncompressed). The same inputs give the same bytes.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:?usage: make-compressed.sh WORKDIR [LIBRARY]}
lib=${2:-/work/bench/rocsparse/usr/lib/x86_64-linux-gnu/librocsparse.so.0.1}
[ -f "$lib" ] || { echo "make-compressed.sh: $lib not found" >&2; exit 1; }
command -v llvm-objcopy-22 >/dev/null || { echo "make-compressed.sh: llvm-objcopy-22 not found" >&2; exit 1; }

(cd "$here" && cargo build --release --quiet)
ours="$here/target/release/offload"
mkdir -p "$work"
cd "$work"
[ -f fat.o ] && { echo "make-compressed.sh: $work/fat.o exists"; exit 0; }
rm -rf objects plain streams bundles
mkdir -p objects plain streams bundles

"$ours" ls --json "$lib" > images.json
# Cuts the code objects out of the library (they are stored uncompressed: offsets are the
# file's), then writes one list of 25 per bundle to make.
python3 - "$lib" <<'EOF'
import json, sys
lib = open(sys.argv[1], 'rb')
images = [i for i in json.load(open('images.json')) if i['arch'] and i['size'] > 0]
images.sort(key=lambda i: i['offset'])
paths = []
for n, i in enumerate(images):
    lib.seek(i['offset'])
    path = f'objects/{n:04}.co'
    with open(path, 'wb') as f:
        f.write(lib.read(i['size']))
    paths.append((path, i['size']))
processors = ('gfx700 gfx701 gfx702 gfx801 gfx802 gfx803 gfx900 gfx902 gfx904 gfx906 gfx908 '
              'gfx909 gfx90a gfx90c gfx940 gfx941 gfx942 gfx1010 gfx1011 gfx1012 gfx1030 gfx1031 '
              'gfx1100 gfx1101 gfx1102').split()
# Bundle sizes cycle through 20 to 100 MB; each bundle takes the 25 code objects nearest in
# size to a 25th of its size (code for one kernel file, built for 25 processors, is alike in
# size), until 2 GB are taken.
by_size = sorted(paths, key=lambda p: (p[1], p[0]))
sizes = [n for _, n in by_size]
import bisect
total, bundle = 0, 0
with open('bundles.txt', 'w') as out:
    while total < 2_000_000_000:
        want = 20_000_000 + (bundle * 29_000_000) % 80_000_001
        at = bisect.bisect_left(sizes, want // len(processors))
        first = max(0, min(at - len(processors) // 2, len(by_size) - len(processors)))
        chosen = by_size[first:first + len(processors)]
        out.write(' '.join(p for p, _ in chosen) + '\n')
        total += sum(n for _, n in chosen)
        bundle += 1
with open('processors.txt', 'w') as f:
    f.write(' '.join(processors) + '\n')
EOF
read -r -a processors < processors.txt
targets=host-x86_64-unknown-linux-gnu
for p in "${processors[@]}"; do targets+=",hipv4-amdgcn-amd-amdhsa--$p"; done
: > empty-host
n=0
while read -r -a objects; do
  inputs=(-input=empty-host)
  for o in "${objects[@]}"; do inputs+=(-input="$o"); done
  printf '%s\n' "$(printf '%03d' $n) ${inputs[*]}"
  n=$((n + 1))
done < bundles.txt > jobs.txt
# Two bundles at a time, each compressed by the bundler, as LLVM 22 would write it.
export ours targets
xargs -P 2 -L 1 bash -c '
  n=$0
  "$ours" bundler -type=o -targets="$targets" "$@" -output=plain/$n.bundle
  "$ours" bundler -type=o -targets="$targets" "$@" -output=bundles/$n.ccob \
    -compress -compressed-bundle-version=3
  tail -c +33 bundles/$n.ccob > streams/$n.zst' < jobs.txt
# The bundles one after another, each on a 4096-byte boundary as a linker places them.
python3 - <<'EOF'
import glob
with open('fatbin.bin', 'wb') as out:
    for path in sorted(glob.glob('bundles/*.ccob')):
        data = open(path, 'rb').read()
        out.write(data)
        out.write(b'\0' * (-len(data) % 4096))
EOF
llvm-objcopy-22 --add-section .hip_fatbin=fatbin.bin \
  --set-section-flags .hip_fatbin=alloc,readonly --set-section-alignment .hip_fatbin=4096 \
  "$here/samples/elf/c-x86_64-linux-gnu.o" fat.o
rm -rf objects bundles fatbin.bin empty-host jobs.txt
echo "make-compressed.sh: $(ls streams | wc -l) bundles, $(du -cb plain/*.bundle | tail -1 | cut -f1) bytes inflated, fat.o $(stat -c %s fat.o) bytes"
