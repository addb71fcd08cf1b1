#!/usr/bin/env bash
# Times reading packages beside the tool a packager would otherwise run on the same file, in
# one run, warm cache: `offload ls` and `offload du` of a wheel beside `unzip -t` of it, and
# `offload du` of a Debian package beside `dpkg-deb -c` of it. Prints wall time, peak resident
# memory (GNU time) and peak anonymous memory (RssAnon sampled from /proc: the mapped package
# and spill files are page cache, not counted) per row.
#
#   benches/packages.sh PACKAGE...
#
# Each PACKAGE is a wheel (`.whl`, any zip) or a Debian package (`.deb`); for example PyPI's
# CUDA `torch` wheel (`pip download --no-deps torch`) and Debian sid's `librccl1`
# (`apt-get download librccl1`). OFFLOAD_BIN names the `offload` to time instead of building
# the release one.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || { echo "usage: benches/packages.sh PACKAGE..." >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "packages.sh: GNU time (/usr/bin/time) not found" >&2; exit 1; }
ours=${OFFLOAD_BIN:-}
if [ -z "$ours" ]; then
  (cd "$here" && cargo build --release --quiet)
  ours="$here/target/release/offload"
fi

# Runs a command with its output discarded; prints `LABEL: S s, RSS KiB resident, ANON KiB
# anonymous`.
measure() {
  local label=$1
  shift
  local times
  times=$(mktemp)
  /usr/bin/time -f "%e %M" -o "$times" "$@" >/dev/null 2>&1 &
  local pid=$! peak=0 anon child
  while kill -0 "$pid" 2>/dev/null; do
    child=$(pgrep -P "$pid" | head -1 || true)
    if [ -n "$child" ]; then
      anon=$(awk '/^RssAnon/ {print $2}' "/proc/$child/status" 2>/dev/null || true)
      if [ -n "$anon" ] && [ "$anon" -gt "$peak" ]; then peak=$anon; fi
    fi
    sleep 0.02
  done
  wait "$pid" || true
  read -r seconds rss <"$times"
  rm -f "$times"
  printf '%-40s %7.2f s %9d KiB resident %8d KiB anonymous\n' "$label" "$seconds" "$rss" "$peak"
}

for package in "$@"; do
  name=$(basename "$package")
  cat "$package" >/dev/null
  echo "$name ($(stat -c %s "$package") bytes)"
  case "$package" in
    *.deb)
      measure "  offload du" "$ours" du "$package"
      measure "  dpkg-deb -c" dpkg-deb -c "$package"
      ;;
    *)
      measure "  offload ls" "$ours" ls "$package"
      measure "  offload du" "$ours" du "$package"
      measure "  unzip -t" unzip -tq "$package"
      ;;
  esac
done
