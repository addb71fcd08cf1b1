#!/usr/bin/env bash
# How the cost of each command grows with its input: synthetic programs doubling from 16 MB to
# 4 GB, and synthetic trees of small programs from 100 to 100,000 files; for each step, one
# run (best of RUNS, default 1) of ls, du, du --kernels, strip, kpack, kpack --merge and extract
# with its time and peak memory, anonymous (heap, not mapped file pages) and resident (mapped
# pages included), sampled from /proc every few milliseconds.
#
#   benches/growth.sh [WORKDIR]
#
# The inputs are made here from the committed sample code objects (samples/dev), by offload
# itself and cc: code objects padded with random bytes to 1 MiB, bundled (offload bundler)
# into three bundles of mixed targets; each bundle of a program a copy of one of them, with a
# counter written into each code object's padding so that no two are alike; each wrapped in a
# host object of its own (offload wrapper --kind=hip, one registration per bundle, as one per
# translation unit) and all linked into one shared library (cc -shared, .hip_fatbin first). A
# tree is copies of three small libraries of one unpadded bundle each, 100 to a folder, in
# nested folders.
#
# SIZES="16 32 ..." (MB, default 16 to 4096 doubling) and FILES="100 237 ..." (default nine
# steps of x2.37 from 100 to 100,000; FILES= leaves trees out, SIZES= programs) choose the
# steps. OFFLOAD names the program to time (default target/release/offload). WORKDIR (default
# /tmp/offload-growth) is emptied first; each program is deleted before the next is made (the
# 4 GB step needs 4 GB for the input and up to 4 GB for an output); the trees and their
# outputs are moved aside and deleted together once all are measured (about 10 GB). Writes
# WORKDIR/growth.tsv (input, step, bytes, command, seconds, anonymous MiB, resident MiB) and,
# unless DOCS=0, the plot docs/images/growth.svg (benches/plot.py) and the table between the
# growth-table markers of docs/benchmarks.md.
set -euo pipefail
shopt -s inherit_errexit
here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/offload-growth}
runs=${RUNS:-1}
ours=${OFFLOAD:-$here/target/release/offload}
[ -x "$ours" ] || (cd "$here" && cargo build --release --quiet)
sizes=${SIZES-16 32 64 128 256 512 1024 2048 4096}
files=${FILES-100 237 562 1334 3162 7499 17783 42170 100000}
command -v cc >/dev/null || { echo "growth.sh: cc is needed to link the programs" >&2; exit 1; }

rm -rf "$work" && mkdir -p "$work"
cd "$work"
started=$(date +%s)

# measure CMD... and best PREPARE CMD...: see benches/measure.sh.
. "$here/benches/measure.sh"


# variants PAD ALIGN DIR: the three bundles a program's bundles are copies of, from code
# objects padded to PAD bytes, aligned to ALIGN as the bundler's -bundle-align (the HIP
# driver's 4096 for programs; for the trees' small libraries, the sample code objects as they
# are, unaligned, to keep 100,000 of them small).
variants() {
  local pad=$1 align=$2 dir=$3 f
  mkdir -p "$dir"
  for f in kernel-gfx906 kernel-gfx90a kernel-gfx90a_xnack+ kernel-gfx90a_xnack- \
    kernel-gfx908_sramecc+_xnack-; do
    python3 - "$here/samples/dev/$f.hsaco" "$dir/$f.co" "$pad" <<'PY'
import os, sys
source, out, pad = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = open(source, "rb").read()
open(out, "wb").write(data + os.urandom(max(pad - len(data), 0)))
PY
  done
  local host=host-x86_64-unknown-linux-gnu- dev=hipv4-amdgcn-amd-amdhsa--
  (cd "$dir" &&
    "$ours" bundler -type=o -bundle-align=$align -targets=$host,${dev}gfx906,${dev}gfx90a \
      -input=/dev/null -input=kernel-gfx906.co -input=kernel-gfx90a.co -output=a.bundle &&
    "$ours" bundler -type=o -bundle-align=$align \
      -targets=$host,${dev}gfx90a:xnack+,${dev}gfx90a:xnack- -input=/dev/null \
      -input=kernel-gfx90a_xnack+.co -input=kernel-gfx90a_xnack-.co -output=b.bundle &&
    "$ours" bundler -type=o -bundle-align=$align \
      -targets=$host,${dev}gfx906,${dev}gfx908:sramecc+:xnack-,${dev}gfx90a -input=/dev/null \
      -input=kernel-gfx906.co -input=kernel-gfx908_sramecc+_xnack-.co -input=kernel-gfx90a.co \
      -output=c.bundle)
}

# program MIB OUT: a shared library of at least MIB MiB of bundles, copies of the variants in
# turn, each code object's last 8 bytes of padding replaced by the bundle's number.
program() {
  local mib=$1 out=$2
  rm -rf objects && mkdir objects
  python3 - "$ours" "$mib" variants/a.bundle variants/b.bundle variants/c.bundle <<'PY'
import struct, subprocess, sys, os
ours, mib, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
variants = []
for path in paths:
    data = bytearray(open(path, "rb").read())
    count = struct.unpack_from("<Q", data, 24)[0]
    at, ends = 32, []
    for _ in range(count):
        offset, size, id_size = struct.unpack_from("<QQQ", data, at)
        at += 24 + id_size
        if size >= 16:
            ends.append(offset + size - 8)
    variants.append((data, ends))
written = number = 0
while written < mib << 20:
    data, ends = variants[number % len(variants)]
    for end in ends:
        struct.pack_into("<Q", data, end, number)
    name = f"objects/{number:05}"
    with open(name + ".bin", "wb") as f:
        f.write(data)
    subprocess.run([ours, "wrapper", "--kind=hip", "--filetype=obj", "-o", name + ".o",
                    name + ".bin"], check=True)
    os.remove(name + ".bin")
    written += len(data)
    number += 1
PY
  # .hip_fatbin goes first, in the first segment: where the linker puts it by default, between
  # the code and its data, past 2 GiB it leaves the code's PC-relative references out of reach.
  printf 'SECTIONS { .hip_fatbin : ALIGN(4096) { KEEP(*(.hip_fatbin)) } } INSERT BEFORE .hash;\n' \
    >objects/first.ld
  cc -shared -nostdlib -Wl,-T,objects/first.ld -o "$out" objects/*.o
  rm -rf objects
}

# tree N: N small libraries in tree/, 100 to a folder, ten folders to a folder above.
tree() {
  local n=$1
  rm -rf tree
  python3 - "$n" small/a.so small/b.so small/c.so <<'PY'
import os, sys
n, sources = int(sys.argv[1]), [open(p, "rb").read() for p in sys.argv[2:]]
for i in range(n):
    folder = f"tree/{i // 10000}/{i // 1000 % 10}/{i // 100 % 10}"
    if i % 100 == 0:
        os.makedirs(folder, exist_ok=True)
    with open(f"{folder}/lib{i}.so", "wb") as f:
        f.write(sources[i % len(sources)])
PY
}

tsv=$work/growth.tsv
printf 'input\tstep\tbytes\tcommand\tseconds\tanonymous_mib\tresident_mib\n' >"$tsv"
# record INPUT STEP BYTES COMMAND-NAME PREPARE CMD...: one row of the TSV (and of stdout).
record() {
  local input=$1 step=$2 bytes=$3 name=$4 prepare=$5; shift 5
  local t anon rss
  read -r t anon rss <<<"$(best "$prepare" "$@")"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$input" "$step" "$bytes" "$name" "$t" "$anon" "$rss" |
    tee -a "$tsv"
}

if [ -n "$sizes" ]; then
  variants $((1 << 20)) 4096 variants
  for mib in $sizes; do
    program "$mib" lib.so
    bytes=$(stat -c %s lib.so)
    cat lib.so >/dev/null
    record program "$mib" "$bytes" ls true "$ours" ls lib.so
    record program "$mib" "$bytes" du true "$ours" du lib.so
    record program "$mib" "$bytes" "du --kernels" true "$ours" du --kernels lib.so
    record program "$mib" "$bytes" "strip --keep gfx90a" "rm -f out.so" \
      "$ours" strip --keep gfx90a lib.so -o out.so
    rm -f out.so
    record program "$mib" "$bytes" "extract --arch gfx90a" "rm -rf out" \
      "$ours" extract --arch gfx90a lib.so -o out
    rm -rf out
    record program "$mib" "$bytes" kpack "rm -rf split" "$ours" kpack lib.so -o split
    rm -f lib.so
    record program "$mib" "$bytes" "kpack --merge" "rm -rf merged" \
      "$ours" kpack --merge split/lib.so -o merged
    rm -rf split merged
  done
fi

# aside PATH...: moved out of the way rather than deleted, until the trees are done. On ext4
# without a journal a new file does not take the inode of one deleted in the last minute:
# creating 100,000 files just after deleting 100,000 spends most of its time looking past
# them, which is the file system's cost, not the command's.
aside() {
  mkdir -p aside
  local path
  for path in "$@"; do
    [ ! -e "$path" ] || mv "$path" "aside/$path.$(date +%s%N)"
  done
}

if [ -n "$files" ]; then
  variants 0 1 small
  for v in a b c; do
    "$ours" wrapper --kind=hip --filetype=obj -o small/$v.o small/$v.bundle
    cc -shared -nostdlib -Wl,-z,noseparate-code -Wl,-z,max-page-size=4096 -o small/$v.so \
      small/$v.o
  done
  for n in $files; do
    tree "$n"
    bytes=$(du -sb tree | cut -f1)
    record tree "$n" "$bytes" "ls -r" true "$ours" ls -r tree
    record tree "$n" "$bytes" "du -r" true "$ours" du -r tree
    record tree "$n" "$bytes" "du -r --kernels" true "$ours" du -r --kernels tree
    record tree "$n" "$bytes" "strip -r --keep gfx90a" true \
      "$ours" strip -r --keep gfx90a tree -o out
    aside out
    record tree "$n" "$bytes" "extract -r --arch gfx90a" true \
      "$ours" extract -r --arch gfx90a tree -o out
    aside out
    record tree "$n" "$bytes" "kpack -r" true "$ours" kpack -r tree -o split
    aside split tree
  done
  rm -rf aside
fi
echo "growth.sh: $(($(date +%s) - started)) s" >&2

if [ "${DOCS:-1}" != 0 ]; then
  python3 "$here/benches/plot.py" growth "$tsv" "$here/docs/images/growth.svg" \
    "$here/docs/benchmarks.md"
fi
