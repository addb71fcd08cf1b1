#!/usr/bin/env bash
# The speed table of docs/benchmarks.md: each command of offload beside the reference for the
# same work, both timed in this run (best of RUNS, default 3, warm cache), with offload's peak
# memory: anonymous (heap, not mapped file pages) and resident (mapped pages included), sampled
# from /proc every few milliseconds.
#
#   benches/speed.sh [WORKDIR]
#
# Inputs (benches/inputs.sh finds or fetches them; each can be named instead): librocsparse
# (1.3 GB, 111 bundles), Debian sid's librocsolver (1.96 GB, 235 bundles), JAX's ROCm 7 XLA
# plugin (459 MB, 45 compressed bundles), PyTorch's libtorch_cuda.so and Debian sid's rocBLAS
# 6.4.4 tree (rows left out without them), and a tree of 50,000 small bundles made here. The table
# also replaces the one between the speed-table markers of docs/benchmarks.md, and its plot
# (benches/plot.py: each ratio as a bar beside its target) docs/images/speed.svg, unless
# DOCS=0, ROWS or ONLY is set, or OFFLOAD names another program; WORKDIR/speed.svg is written
# in every case. Needs zstd, python3 with zstandard, and GNU coreutils. OFFLOAD names the
# program to time (default target/release/offload). Prints a markdown table; WORKDIR (default
# /tmp/offload-speed) is emptied first. RUNS=N takes the best of N runs; PAIRED=N instead the
# medians of N runs of each command beside its reference, in turn (for a busy machine);
# ROWS=REGEX (or ONLY=REGEX) times only the rows whose work it matches (`ROWS=librocsolver`).
# The row of the system's zstd times offload built with the system-zstd feature (needs
# pkg-config and libzstd's development files), built into target/system-zstd when it is timed.
set -euo pipefail
shopt -s inherit_errexit
here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/offload-speed}
runs=${RUNS:-3}
ours=${OFFLOAD:-$here/target/release/offload}
[ -x "$ours" ] || (cd "$here" && cargo build --release --quiet)
. "$here/benches/inputs.sh"

rm -rf "$work" && mkdir -p "$work"
cd "$work"

# measure CMD... and best PREPARE CMD...: see benches/measure.sh.
. "$here/benches/measure.sh"


# Python with zstandard (Debian's python3-zstandard is for /usr/bin/python3).
py=python3
python3 -c 'import zstandard' 2>/dev/null || py=/usr/bin/python3
$py -c 'import zstandard' || { echo "speed.sh: python3 with zstandard is needed" >&2; exit 1; }

# The reference for a check of every stream: one core inflating each of the plugin's compressed
# bundles' streams and hashing the bytes with MD5 (OpenSSL's, through Python's hashlib).
cat > inflate_md5.py <<'PY'
import hashlib, json, struct, subprocess, sys, zstandard
path, ours = sys.argv[1], sys.argv[2]
rows = json.loads(subprocess.run([ours, "ls", "--json", path], check=True, capture_output=True).stdout)
places = sorted({(r["compressed_bundle"]["offset"], r["compressed_bundle"]["size"])
                 for r in rows if r.get("compressed_bundle")})
with open(path, "rb") as f:
    for offset, size in places:
        f.seek(offset)
        data = f.read(size)
        version = struct.unpack_from("<H", data, 4)[0]
        header = {1: 16, 2: 24, 3: 32}[version]
        md5 = hashlib.md5()
        reader = zstandard.ZstdDecompressor().stream_reader(data[header:])
        while chunk := reader.read(1 << 20):
            md5.update(chunk)
PY

table=$work/table.md
exec 3>&1 >"$table"
printf '| work | reference | reference time | offload | ratio | target | offload anonymous / resident peak |\n'
printf '| --- | --- | --- | --- | --- | --- | --- |\n'
# paired N REF-PREPARE REF-CMD PREPARE CMD...: N runs of the reference and of CMD in turn,
# each after its PREPARE; prints "REF_SECONDS SECONDS RATIO ANON_MIB RSS_MIB": the median
# times, the median of the N ratios (each run beside the reference run just before it, so
# that a busy machine weighs on both alike) and the largest peaks.
paired() {
  local n=$1 ref_prepare=$2 ref_cmd=$3 prepare=$4; shift 4
  local runs_file=${table%.md}.paired
  : >"$runs_file"
  for _ in $(seq "$n"); do
    sh -c "$ref_prepare"
    read -r rt _ _ <<<"$(measure sh -c "$ref_cmd")"
    sh -c "$prepare"
    echo "$rt $(measure "$@")" >>"$runs_file"
  done
  python3 - "$runs_file" <<'PY'
import statistics, sys
rows = [list(map(float, line.split())) for line in open(sys.argv[1])]
ref = statistics.median(r[0] for r in rows)
ours = statistics.median(r[1] for r in rows)
ratio = statistics.median(r[1] / r[0] for r in rows)
print(f"{ref} {ours} {ratio} {max(r[2] for r in rows):.0f} {max(r[3] for r in rows):.0f}")
PY
}

# row WORK REFERENCE-NAME TARGET REF-PREPARE REF-CMD -- PREPARE CMD...: the best of $runs runs
# of each, or with PAIRED=N the medians of N paired runs (see `paired`). ONLY=REGEX keeps the
# rows whose work it matches (grep -E).
row() {
  local work=$1 reference=$2 target=$3 ref_prepare=$4 ref_cmd=$5; shift 5
  [ "$1" = -- ] && shift
  # ROWS=REGEX times only the rows whose work it matches (the page is then left alone).
  [[ -z "${ROWS:-}" || "$work" =~ $ROWS ]] || return 0
  local prepare=$1; shift
  if [ -n "${ONLY:-}" ] && ! grep -qE "$ONLY" <<<"$work"; then
    return
  fi
  local ref ours_out rt ot ratio anon rss
  if [ -n "${PAIRED:-}" ]; then
    read -r rt ot ratio anon rss <<<"$(paired "$PAIRED" "$ref_prepare" "$ref_cmd" "$prepare" "$@")"
  else
    ref=$(best "$ref_prepare" sh -c "$ref_cmd")
    ours_out=$(best "$prepare" "$@")
    read -r rt _ _ <<<"$ref"
    read -r ot anon rss <<<"$ours_out"
    ratio=$(awk -v a="$ot" -v b="$rt" 'BEGIN { print a / b }')
  fi
  printf '| %s | %s | %.2f s | %.2f s | %.2fx | %s | %s / %s MiB |\n' \
    "$work" "$reference" "$rt" "$ot" "$ratio" "$target" "$anon" "$rss"
}

cat "$lib" "$plugin" >/dev/null
row "extract librocsparse --arch gfx90a:xnack-" "cat of the library" "0.5x" \
  true "cat '$lib' >/dev/null" -- "rm -rf out" "$ours" extract "$lib" --arch gfx90a:xnack- -o out
row "kpack librocsparse -o DIR" "cp of the library" "1.2x" \
  "rm -f copy" "cp '$lib' copy" -- "rm -rf split" "$ours" kpack "$lib" -o split
rm -rf split copy out
[ -z "${ONLY:-}" ] || grep -qE "$ONLY" <<<"wrapper" && head -c $((256 << 20)) /dev/urandom > image.bin
row "wrapper --filetype=obj, 256 MiB image" "cat of the image into a file" "1.5x" \
  "rm -f copy" "cat image.bin > copy" -- "rm -f w.o" "$ours" wrapper --kind=hip --filetype=obj -o w.o image.bin
row "wrapper --filetype=bc, 256 MiB image" "cat of the image into a file" "2x" \
  "rm -f copy" "cat image.bin > copy" -- "rm -f w.bc" "$ours" wrapper --kind=hip --filetype=bc -o w.bc image.bin
rm -f image.bin w.o w.bc copy
row "ls of the plugin" "cat of the plugin" "0.5x, 128 MiB resident" \
  true "cat '$plugin' >/dev/null" -- true "$ours" ls "$plugin"
reference="$py inflate_md5.py '$plugin' '$ours'"
row "verify the plugin" "inflate + MD5, one core" "0.55x" true "$reference" -- true "$ours" verify "$plugin"
row "strip --keep gfx942 the plugin" "inflate + MD5, one core" "0.65x" \
  true "$reference" -- "rm -f stripped.so" "$ours" strip --keep gfx942 "$plugin" -o stripped.so
row "decompress the plugin" "inflate + MD5, one core" "0.75x" \
  true "$reference" -- "rm -f plain.so" "$ours" decompress "$plugin" -o plain.so
rm -f stripped.so plain.so
row "compress librocsparse" "zstd -T2 -3 --long of the library" "1.5x" \
  "rm -f lib.zst" "zstd -q -T2 -3 --long '$lib' -o lib.zst" -- "rm -f packed.so" "$ours" compress "$lib" -o packed.so
rm -f lib.zst packed.so
# PyTorch's CUDA library (libtorch_cuda.so of the torch wheel for Linux x86-64, 520 MB in 2.15;
# the row is left out without it).
if [ -f "$torch_cuda" ]; then
  cat "$torch_cuda" >/dev/null
  row "strip --keep sm_90 libtorch_cuda.so" "cp of the library" "0.5x" \
    "rm -f copy" "cp '$torch_cuda' copy" -- "rm -f sm90.so" "$ours" strip --keep sm_90 "$torch_cuda" -o sm90.so
  rm -f copy sm90.so
  # du --kernels inflates every cubin and reads its symbol table: beside the inflating alone
  # (each cubin's zstd stream inflated by one core, the list of streams made beforehand).
  cat > inflate_cuda.py <<'PY'
import json, sys, zstandard
path, listing = sys.argv[1], sys.argv[2]
rows = json.load(open(listing))
places = sorted({(r["cuda"]["stored_offset"], r["cuda"]["stored_size"])
                 for r in rows if (r.get("cuda") or {}).get("compression") == "zstd"})
with open(path, "rb") as f:
    for offset, size in places:
        f.seek(offset)
        reader = zstandard.ZstdDecompressor().stream_reader(f.read(size))
        while reader.read(1 << 20):
            pass
PY
  row "du --kernels libtorch_cuda.so" "inflate every cubin, one core" "anonymous under 128 MiB" \
    "'$ours' ls --json '$torch_cuda' >cubins.json" "$py inflate_cuda.py '$torch_cuda' cubins.json" \
    -- true "$ours" du --kernels "$torch_cuda"
  rm -f cubins.json
else
  echo "speed.sh: no libtorch_cuda.so ($torch_cuda): its row is left out" >&2
fi
# The largest library at hand (235 bundles of up to 190 MB): memory that follows the work
# (a few bundles at a time), not the library.
cat "$solver" >/dev/null
row "compress librocsolver" "zstd -T2 -3 --long of the library" "1.2x, anonymous under 128 MiB" \
  "rm -f lib.zst" "zstd -q -T2 -3 --long '$solver' -o lib.zst" -- "rm -f packed.so" "$ours" compress "$solver" -o packed.so
rm -f lib.zst packed.so
# The same work with the zstd release the reference links, the system's (offload built with
# the system-zstd feature, into a target folder of its own, only when the row is timed; also
# when OFFLOAD names another program): the frames are then LLVM's byte for byte, and the row
# above less this one is what the vendored release's frames cost.
system_zstd="compress librocsolver, the reference's zstd release (system-zstd)"
if [[ -z "${ROWS:-}" || "$system_zstd" =~ $ROWS ]] &&
  { [ -z "${ONLY:-}" ] || grep -qE "$ONLY" <<<"$system_zstd"; }; then
  (cd "$here" && cargo build --release --quiet --features system-zstd --target-dir "$here/target/system-zstd")
  row "$system_zstd" "zstd -T2 -3 --long of the library" "1.2x" \
    "rm -f lib.zst" "zstd -q -T2 -3 --long '$solver' -o lib.zst" -- \
    "rm -f packed.so" "$here/target/system-zstd/release/offload" compress "$solver" -o packed.so
  rm -f lib.zst packed.so
fi
# The same work beside the zstd CLI of the release offload vendors (1.5.7, Debian sid's, run
# from the sid root OFFLOAD_SID_ROOT names, when it has zstd): each side then runs the same
# zstd code, and the ratio is what offload adds to it (LLVM's frames, one a bundle, and their
# MD5s).
sid_zstd="compress librocsolver, beside the zstd release offload vendors"
sid=${OFFLOAD_SID_ROOT:-}
if [ -n "$sid" ] && [ -x "$sid/usr/bin/zstd" ] && [[ -z "${ROWS:-}" || "$sid_zstd" =~ $ROWS ]] &&
  { [ -z "${ONLY:-}" ] || grep -qE "$ONLY" <<<"$sid_zstd"; }; then
  zstd_sid="'$sid/lib64/ld-linux-x86-64.so.2' --library-path '$sid/usr/lib/x86_64-linux-gnu' '$sid/usr/bin/zstd'"
  row "$sid_zstd" "zstd 1.5.7 -T2 -3 --long of the library" "1.2x" \
    "rm -f lib.zst" "$zstd_sid -q -T2 -3 --long '$solver' -o lib.zst" -- \
    "rm -f packed.so" "$ours" compress "$solver" -o packed.so
  rm -f lib.zst packed.so
fi
merge="kpack --merge librocsolver's split"
if [[ -z "${ROWS:-}" || "$merge" =~ $ROWS ]]; then
  "$ours" kpack "$solver" -o split >/dev/null
  row "$merge" "cp of the library" "1.5x, anonymous under 128 MiB" \
    "rm -f copy" "cp '$solver' copy" -- "rm -rf merged" "$ours" kpack --merge "split/$(basename "$solver")" -o merged
  rm -rf split merged copy
fi
# A tree of 50,000 small files (12 KB each: copies of a committed sample bundle, 50 folders
# of 10 folders of 100): memory that follows the file at work, not the number of files.
small_extract="extract -r of 50,000 small files"
small_ls="ls -r of 50,000 small files"
small_json="ls -r --json of 50,000 small files"
small_du="du -r of 50,000 small files"
small_strip="strip -r --keep gfx90a of 50,000 small files"
small=0
for name in "$small_extract" "$small_ls" "$small_json" "$small_du" "$small_strip"; do
  [[ -z "${ROWS:-}" || "$name" =~ $ROWS ]] && small=1
done
if [ "$small" = 1 ]; then
  python3 "$here/benches/small_tree.py" "$here/samples/clang/kernel-fatbin.hip_fatbin" tree
  # The last run's output is moved aside, not deleted, before the next: on ext4 without a
  # journal, a new file does not take the inode of one deleted in the last minute, and
  # creating 50,000 files just after deleting 50,000 spends most of its time looking past
  # them (the kernel's recently_deleted), for the reference as for offload.
  aside='mkdir -p aside && for f in copy out; do [ ! -e $f ] || mv $f aside/$f.$(date +%s%N); done'
  row "$small_extract" "cp -r of the tree" "1.5x, anonymous flat in the files" \
    "$aside" "cp -r tree copy" -- "$aside" "$ours" extract -r tree --arch gfx90a -o out
  rm -rf copy out aside
  # ls -r opens and reads every file (the walk reads each file's first bytes, the scan the
  # small file whole), so the reference reads every file's bytes too; `ls -lR` would only
  # stat them.
  row "$small_ls" "cat of every file of the tree (find, xargs)" "anonymous flat in the files" \
    true "find tree -type f -print0 | xargs -0 cat >/dev/null" -- true "$ours" ls -r tree
  row "$small_json" "cat of every file of the tree (find, xargs)" "anonymous flat in the files" \
    true "find tree -type f -print0 | xargs -0 cat >/dev/null" -- true "$ours" ls -r --json tree
  row "$small_du" "cat of every file of the tree (find, xargs)" "anonymous flat in the files" \
    true "find tree -type f -print0 | xargs -0 cat >/dev/null" -- true "$ours" du -r tree
  row "$small_strip" "cp -r of the tree" "anonymous flat in the files" \
    "$aside" "cp -r tree copy" -- "$aside" "$ours" strip -r --keep gfx90a tree -o out
  rm -rf tree copy out aside
fi
# Debian sid's rocBLAS tree (the rows are left out without it): a few large libraries and
# Tensile's code object files.
if [ -d "$rocblas" ]; then
  row "ls -r of rocBLAS's tree" "cat of every file of the tree (find, xargs)" "anonymous under 128 MiB" \
    true "find '$rocblas' -type f -print0 | xargs -0 cat >/dev/null" -- true "$ours" ls -r "$rocblas"
  row "du -r of rocBLAS's tree" "cat of every file of the tree (find, xargs)" "anonymous under 128 MiB" \
    true "find '$rocblas' -type f -print0 | xargs -0 cat >/dev/null" -- true "$ours" du -r "$rocblas"
else
  echo "speed.sh: no rocBLAS tree ($rocblas): its rows are left out" >&2
fi
exec 1>&3 3>&-
cat "$table"
# The plot of the table: each ratio as a bar beside its target (benches/plot.py).
python3 "$here/benches/plot.py" speed "$table" "$work/speed.svg"
if [ "${DOCS:-1}" != 0 ] && [ -z "${OFFLOAD:-}" ] && [ -z "${ROWS:-}" ] && [ -z "${ONLY:-}" ]; then
  python3 "$here/benches/plot.py" page "$here/docs/benchmarks.md" speed "$table"
  cp "$work/speed.svg" "$here/docs/images/speed.svg"
fi
