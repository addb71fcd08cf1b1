#!/usr/bin/env bash
# Times `offload ls`, `extract` and `verify` on a compressed (version 3) offload binary of one
# 400 MiB image, zlib level 1 (2.8 MB on disk), beside Python's zlib inflating its payload
# whole, the least a reader that holds the binary does. The binary is written here by Python
# from the format's layout (no LLVM release writes version 3 yet). Prints wall time and peak
# memory (GNU time `%e s %M KiB`) per row.
#
#   benches/offload_binary_head.sh [WORKDIR]
#
# WORKDIR (default /tmp/offload-binary-head) is emptied first.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/offload-binary-head}
[ -x /usr/bin/time ] || { echo "offload_binary_head.sh: GNU time not found" >&2; exit 1; }
ours="${CARGO_TARGET_DIR:-$here/target}/release/offload"
[ -x "$ours" ] || (cd "$here" && cargo build --release --quiet --bin offload)
rm -rf "$work" && mkdir -p "$work"
cd "$work"

python3 - <<'PY'
import struct, zlib
image_size = 400 << 20
strings = [(b"triple", b"amdgcn-amd-amdhsa"), (b"arch", b"gfx90a")]
entries_at, strings_at = 40, 80
table_at = strings_at + 24 * len(strings)
table, places = b"", []
for key, value in strings:
    key_at = table_at + len(table); table += key + b"\0"
    value_at = table_at + len(table); table += value + b"\0"
    places.append((key_at, value_at, len(value)))
image_at = (table_at + len(table) + 7) // 8 * 8
inflated = image_at + image_size
entry = struct.pack("<HHIQQQQ", 1, 1, 0, strings_at, len(strings), image_at, image_size)
meta = entry + b"".join(struct.pack("<QQQ", *p) for p in places) + table
meta += b"\0" * (image_at - 40 - len(meta))
deflate = zlib.compressobj(1)
block = (b"\x7fELF" + bytes(range(256)) * 16)[:4096]
payload = deflate.compress(meta)
payload += b"".join(deflate.compress(block) for _ in range(image_size // 4096))
payload += deflate.flush()
header = struct.pack("<4sIQQQQ", b"\x10\xff\x10\xad", 3, 40 + len(payload), 40, 1, inflated)
open("big.offbin", "wb").write(header + payload)
PY

row() { # row NAME COMMAND...
  local name=$1; shift
  /usr/bin/time -f "$name: %e s %M KiB" "$@" >/dev/null 2>time.txt || true
  tail -1 time.txt
}
row "python3 zlib, inflate whole" python3 -c \
  "import zlib; zlib.decompress(open('big.offbin','rb').read()[40:])"
row "offload ls" "$ours" ls big.offbin
row "offload extract --arch gfx90a" "$ours" extract --arch gfx90a big.offbin -o out
row "offload verify" "$ours" verify big.offbin
