#!/usr/bin/env bash
# Pruning an installed library tree to one processor, beside what a packager does without the
# tool: copying the tree (cp -a) and deleting by name (find -delete). Prints the time and peak
# memory of each step and du's totals before and after.
#   benches/prune.sh [TREE] [PROCESSOR]
# TREE defaults to rocBLAS 6.4.4 as Debian installs it (librocblas4, unpacked with dpkg -x into
# /work/bench/rocblas), PROCESSOR to gfx90a. Needs a release build (cargo build --release) and
# twice the tree's size free in $TMPDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
tree=${1:-/work/bench/rocblas/usr}
keep=${2:-gfx90a}
offload=$PWD/target/release/offload
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

measure() {
  local name=$1
  shift
  /usr/bin/time -f "$name: %e s, %M KB peak" "$@" >"$work/out" 2>"$work/err" || {
    cat "$work/err" >&2
    return 1
  }
  grep -F "$name: " "$work/err"
}

sync
echo "tree: $tree ($(du -sb "$tree" | cut -f1) bytes, $(find "$tree" -type f | wc -l) files)"
measure "offload du -r" "$offload" du -r "$tree"
grep -E '^\(all\)' "$work/out" || tail -1 "$work/out"
measure "offload du -r --keep $keep" "$offload" du -r --keep "$keep" "$tree"
tail -1 "$work/out"
measure "cp -a (the whole tree)" cp -a "$tree" "$work/copy"
measure "offload strip -r --keep $keep --prune --prune-named -o" \
  "$offload" strip -r --keep "$keep" --prune --prune-named -o "$work/pruned" "$tree"
grep -E '^total' "$work/out"
rm -rf "$work/pruned"
measure "offload strip -r --keep $keep --prune --prune-named --in-place (on the copy)" \
  "$offload" strip -r --keep "$keep" --prune --prune-named --in-place "$work/copy"
echo "after: $(du -sb "$work/copy" | cut -f1) bytes, $(find "$work/copy" -type f | wc -l) files"
measure "offload du -r (after)" "$offload" du -r "$work/copy"
grep -E '^gfx|^\(all\)' "$work/out" | grep '(total)' || true
measure "offload check -r --device $keep (after)" "$offload" check --device "$keep" "$work/copy" -r || true
tail -3 "$work/out"
# What a packager does by hand: copy, then delete the files named for other processors.
rm -rf "$work/copy"
measure "cp -a, then find -delete by name" sh -c \
  "cp -a '$tree' '$work/byname' && find '$work/byname' -type f -name '*gfx*' ! -name '*$keep*' -delete"
echo "by name: $(du -sb "$work/byname" | cut -f1) bytes"
