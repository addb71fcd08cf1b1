#!/usr/bin/env bash
# The memory table of docs/benchmarks.md: every command of offload that reads device code, on
# every input of the speed table, with its time and its peaks of memory: anonymous (heap, not
# mapped file pages), which must stay under 128 MiB plus what the threads' compression
# windows need (docs/safety.md), and resident (mapped pages of the input included: page cache,
# reported beside).
#
#   benches/memory.sh [WORKDIR]
#
# Inputs as benches/speed.sh finds them (benches/inputs.sh: LIBROCSPARSE, LIBROCSOLVER, PLUGIN,
# TORCH_CUDA, ROCBLAS_TREE, INPUTS; an input not found is left out with a message), and a tree
# of 50,000 small bundles made here. One run of each command (memory does not vary from run to
# run the way time does). OFFLOAD names the program (default target/release/offload). Prints the table
# and, unless DOCS=0, OFFLOAD or ONLY is set, writes it between the memory-table markers of
# docs/benchmarks.md. ONLY=REGEX runs only the rows whose command or input it matches.
set -euo pipefail
shopt -s inherit_errexit
here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/offload-memory}
ours=${OFFLOAD:-$here/target/release/offload}
[ -x "$ours" ] || (cd "$here" && cargo build --release --quiet)
. "$here/benches/inputs.sh"

# measure CMD...: see benches/measure.sh.
. "$here/benches/measure.sh"

rm -rf "$work" && mkdir -p "$work"
cd "$work"
table=$work/table.md
exec 3>&1 >"$table"
printf '| input | command | time | anonymous / resident peak | under 128 MiB + T x 10 MiB |\n'
printf '| --- | --- | --- | --- | --- |\n'
# The bound of docs/safety.md for this machine's threads (one zstd context of ~10 MiB each).
threads=${RAYON_NUM_THREADS:-$(nproc)}
bound=$((128 + threads * 10))

# run INPUT-NAME COMMAND-SHOWN CMD...: one run of CMD in an emptied out/ folder, as a row.
run() {
  local input=$1 shown=$2; shift 2
  if [ -n "${ONLY:-}" ] && ! grep -qE "$ONLY" <<<"$input $shown"; then
    return
  fi
  rm -rf out && mkdir out
  local seconds anon rss verdict=yes
  read -r seconds anon rss <<<"$(measure "$@")"
  if [ -z "$anon" ]; then
    printf '| %s | `%s` | failed | - | **no** |\n' "$input" "$shown"
    return
  fi
  [ "$anon" -lt "$bound" ] || verdict="**no**"
  printf '| %s | `%s` | %.2f s | %s / %s MiB | %s |\n' "$input" "$shown" "$seconds" "$anon" "$rss" "$verdict"
  rm -rf out
}

# library NAME PATH ARCH DEVICE: the commands on one library (ARCH the target --keep and --arch
# take, DEVICE one `check` finds code for in every bundle).
library() {
  local name=$1 path=$2 arch=$3 device=$4
  if [ ! -f "$path" ]; then
    echo "memory.sh: no $name ($path): its rows are left out" >&2
    return
  fi
  cat "$path" >/dev/null
  run "$name" "ls" "$ours" ls "$path"
  run "$name" "ls --json" "$ours" ls --json "$path"
  run "$name" "du" "$ours" du "$path"
  run "$name" "du --kernels" "$ours" du --kernels "$path"
  run "$name" "du --html" "$ours" du --html out/page.html "$path"
  run "$name" "targets" "$ours" targets "$path"
  MEASURE_OK="0 1" run "$name" "check --device $device" "$ours" check --device "$device" "$path"
  run "$name" "verify" "$ours" verify "$path"
  run "$name" "extract --arch $arch" "$ours" extract --arch "$arch" "$path" -o out
  run "$name" "extract --arch $arch -o X.a" "$ours" extract --arch "$arch" "$path" -o out/dev.a
  run "$name" "strip --keep $arch" "$ours" strip --keep "$arch" "$path" -o out/stripped
  run "$name" "compress" "$ours" compress "$path" -o out/compressed
  run "$name" "decompress" "$ours" decompress "$path" -o out/plain
  run "$name" "kpack" "$ours" kpack "$path" -o out
  # A split of HIP code only (a CUDA library has nothing to merge back).
  if [[ "$arch" == gfx* ]] && { [ -z "${ONLY:-}" ] || grep -qE "$ONLY" <<<"$name kpack --merge"; }; then
    rm -rf split && "$ours" kpack "$path" -o split >/dev/null
    run "$name" "kpack --merge" "$ours" kpack --merge "split/$(basename "$path")" -o out/merged
    rm -rf split
  fi
}

# tree NAME PATH ARCH: the commands that walk a tree.
tree() {
  local name=$1 path=$2 arch=$3
  run "$name" "ls -r" "$ours" ls -r "$path"
  run "$name" "ls -r --json" "$ours" ls -r --json "$path"
  run "$name" "du -r" "$ours" du -r "$path"
  run "$name" "du -r --kernels" "$ours" du -r --kernels "$path"
  run "$name" "verify -r" "$ours" verify -r "$path"
  # check's status 1 is its verdict (some code does not load on the device), not a failure.
  MEASURE_OK="0 1" run "$name" "check -r --device $arch" "$ours" check -r --device "$arch" "$path"
  run "$name" "extract -r --arch $arch -o NEW" "$ours" extract -r --arch "$arch" "$path" -o out/new
  run "$name" "extract -r --arch $arch -o EXISTING" "$ours" extract -r --arch "$arch" "$path" -o out
  run "$name" "strip -r --keep $arch" "$ours" strip -r --keep "$arch" "$path" -o out/tree
  run "$name" "compress -r" "$ours" compress -r "$path" -o out/tree
  run "$name" "kpack -r" "$ours" kpack -r "$path" -o out
}

library librocsolver "$solver" gfx90a gfx90a
library librocsparse "$lib" gfx90a gfx90a:xnack-
library "the JAX plugin" "$plugin" gfx942 gfx942
library libtorch_cuda.so "$torch_cuda" sm_90 sm_90
if [ -d "$rocblas" ]; then
  tree "rocBLAS's tree" "$rocblas" gfx90a
else
  echo "memory.sh: no rocBLAS tree ($rocblas): its rows are left out" >&2
fi
# The tree of 50,000 small files speed.sh makes (12 KB each, 50 folders of 10 folders of 100).
python3 "$here/benches/small_tree.py" "$here/samples/clang/kernel-fatbin.hip_fatbin" small
tree "50,000 small files" small gfx90a
rm -rf small
exec 1>&3 3>&-
cat "$table"
if [ "${DOCS:-1}" != 0 ] && [ -z "${OFFLOAD:-}" ] && [ -z "${ONLY:-}" ]; then
  python3 "$here/benches/plot.py" page "$here/docs/benchmarks.md" memory "$table"
fi
