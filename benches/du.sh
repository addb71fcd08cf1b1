#!/usr/bin/env bash
# What `du --html` and `du --kernels` cost beside plain `du` and beside reading the file
# (`cat` to /dev/null), for each file named: best of RUNS (default 3) warm-cache runs, with
# offload's peak memory, anonymous (heap, not mapped file pages) and resident (mapped pages
# included), sampled from /proc every few milliseconds.
#
#   benches/du.sh FILE...     # e.g. torch/lib/libtorch_cuda.so, librocblas.so.4
#
# OFFLOAD names the program to time (default target/release/offload). Prints a markdown table.
set -euo pipefail
shopt -s inherit_errexit
here=$(cd "$(dirname "$0")/.." && pwd)
runs=${RUNS:-3}
ours=${OFFLOAD:-$here/target/release/offload}
[ -x "$ours" ] || (cd "$here" && cargo build --release --quiet)
[ $# -gt 0 ] || { echo "usage: benches/du.sh FILE..." >&2; exit 2; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# measure CMD...: see benches/measure.sh.
. "$here/benches/measure.sh"

# best CMD...: the best of $runs runs of CMD; prints "SECONDS ANON_MIB RSS_MIB" of that run.
best() {
  local out best=""
  for _ in $(seq "$runs"); do
    out=$(measure "$@")
    if [ -z "$best" ] || awk -v a="${out%% *}" -v b="${best%% *}" 'BEGIN { exit !(a < b) }'; then
      best=$out
    fi
  done
  echo "$best"
}

printf '| file | work | time | beside cat | anonymous / resident peak |\n'
printf '| --- | --- | --- | --- | --- |\n'
for file in "$@"; do
  cat "$file" >/dev/null
  read -r cat_time _ _ <<<"$(best sh -c "cat '$file' >/dev/null")"
  printf '| %s | cat to /dev/null | %.2f s | 1x | |\n' "$(basename "$file")" "$cat_time"
  for work in "du" "du --html" "du --kernels"; do
    case $work in
      "du") cmd=("$ours" du "$file") ;;
      "du --html") cmd=("$ours" du --html "$scratch/page.html" "$file") ;;
      "du --kernels") cmd=("$ours" du --kernels "$file") ;;
    esac
    read -r t anon rss <<<"$(best "${cmd[@]}")"
    printf '| %s | %s | %.2f s | %.2fx | %s / %s MiB |\n' "$(basename "$file")" "$work" "$t" \
      "$(awk -v a="$t" -v b="$cat_time" 'BEGIN { print a / b }')" "$anon" "$rss"
  done
done
