#!/usr/bin/env bash
# Checks the kernel catalogues of Debian sid's rocBLAS and hipBLASLt for five processors, and
# times `offload check` beside `offload ls` of the same library, warm cache. The packages are
# fetched with `apt-get download` inside a Debian sid root (made by .ci/sid-root) and unpacked
# outside it with `dpkg-deb -x`.
#
#   benches/catalogues.sh [SID_ROOT]       (default: $OFFLOAD_SID_ROOT)
#
# Expected on rocBLAS 6.4.4: gfx1031, gfx1151 and gfx1152 fail (no catalogue), gfx90a and
# gfx1100 pass. OFFLOAD_BIN names the `offload` to time instead of building the release one.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-${OFFLOAD_SID_ROOT:?give the Debian sid root}}
ours=${OFFLOAD_BIN:-}
if [ -z "$ours" ]; then
  (cd "$here" && cargo build --release --quiet)
  ours="$here/target/release/offload"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chroot "$root" sh -c 'mkdir -p /tmp/catalogues && cd /tmp/catalogues && apt-get download -q librocblas4 libhipblaslt1' >/dev/null
for deb in "$root"/tmp/catalogues/*.deb; do
  dpkg-deb -x "$deb" "$work"
  echo "$(basename "$deb")"
done
lib="$work/usr/lib/x86_64-linux-gnu"
devices=(--device gfx1031 --device gfx1151 --device gfx1152 --device gfx90a --device gfx1100)
for library in "$lib"/librocblas.so.4.* "$lib"/libhipblaslt.so.1.*; do
  [ -f "$library" ] || continue
  cat "$library" >/dev/null
  echo "$(basename "$library")"
  /usr/bin/time -f "  offload ls     %e s, %M KiB resident" "$ours" ls "$library" >/dev/null
  /usr/bin/time -f "  offload check  %e s, %M KiB resident" "$ours" check "${devices[@]}" "$library" \
    >"$work/report.txt" || true
  sed -n '/^Kernel catalogues/,$p' "$work/report.txt" | sed 's/^/  /' | head -40
done
