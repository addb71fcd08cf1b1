#!/usr/bin/env bash
# Makes damaged copies of sample bundles in this folder (called by ../make.sh, after bundles/
# exists; also runnable alone). Needs python3. Each file and what LLVM 19 does with it is
# listed in README.md here.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
rm -f -- *.bc *.ll *.bin README.md

python3 - <<'PY'
import hashlib, struct, zlib

def rd(p):
    with open(p, 'rb') as f:
        return f.read()

def wr(name, data):
    with open(name, 'wb') as f:
        f.write(data)

def records(b):
    """(record offset, entry offset, size, id) for each record of a binary bundle."""
    n = struct.unpack_from('<Q', b, 24)[0]
    at, out = 32, []
    for _ in range(n):
        off, size, idlen = struct.unpack_from('<QQQ', b, at)
        out.append((at, off, size, b[at + 24:at + 24 + idlen]))
        at += 24 + idlen
    return out, at

def put64(b, at, v):
    b = bytearray(b)
    struct.pack_into('<Q', b, at, v)
    return bytes(b)

bc = rd('../bundles/kernel.bc')          # host, gfx906, gfx90a: 3 records
recs, hdr_end = records(bc)
r0, r1, r2 = recs

# Binary bundles.
wr('magic-only.bc', bc[:24])                                 # magic, no count
wr('short-count.bc', bc[:28])                                # count cut in half
wr('count-only.bc', bc[:32])                                 # count = 3, no records
wr('cut-in-record0.bc', bc[:r0[0] + 12])                     # first record cut
wr('cut-in-record1.bc', bc[:r1[0] + 12])                     # second record cut
wr('cut-in-payload.bc', bc[:len(bc) - 100])                  # last payload runs past EOF
wr('count-too-big.bc', put64(bc, 24, 4))                     # 4 entries declared, 3 present
wr('count-huge.bc', put64(bc, 24, 0xffffffffffffffff))      # absurd entry count
wr('size-past-eof-first.bc', put64(bc, r0[0] + 8, len(bc)))  # record 0 size past EOF
wr('size-past-eof-second.bc', put64(bc, r1[0] + 8, len(bc))) # record 1 size past EOF
wr('size-overflow.bc', put64(bc, r1[0] + 8, 0xfffffffffffffff0))  # offset + size overflows
wr('offset-zero-second.bc', put64(bc, r1[0], 0))             # record 1 at offset 0
wr('idlen-huge.bc', put64(bc, r1[0] + 16, 0x7fffffffffffffff))   # ID length past EOF

# Text bundle without its last end marker.
ll = rd('../bundles/kernel.ll')
cut = ll.rindex(b'\n; __CLANG_OFFLOAD_BUNDLE____END__ ')
wr('no-end-marker.ll', ll[:cut])

# Compressed bundles (CCOB version 2: magic, u16 version, u16 method, u32 total size,
# u32 uncompressed size, u64 hash, then the zstd frame).
z = rd('../bundles/kernel-z.bc')
total, usize = struct.unpack_from('<II', z, 8)
def with32(b, at, v):
    b = bytearray(b)
    struct.pack_into('<I', b, at, v)
    return bytes(b)
def with16(b, at, v):
    b = bytearray(b)
    struct.pack_into('<H', b, at, v)
    return bytes(b)
wr('ccob-short-header.bin', z[:21])                          # version 2 needs 24 bytes
wr('ccob-bad-method.bin', with16(z, 6, 7))                   # method 7
wr('ccob-cut-payload.bin', z[:len(z) - 40])                  # zstd frame cut
wr('ccob-trailing-bytes.bin', z + b'\0' * 16)                # 16 bytes after the frame
wr('ccob-size-small.bin', with32(z, 12, usize - 1))          # uncompressed size one too small
wr('ccob-size-large.bin', with32(z, 12, usize + 100))        # uncompressed size 100 too large
wr('ccob-bad-hash.bin', z[:16] + bytes(8) + z[24:])          # hash zeroed
wr('ccob-total-small.bin', with32(z, 8, 24))                 # total file size = header only
# Version 3 header (u64 total, u64 uncompressed, u64 hash; 32 bytes), which LLVM 19 misreads.
wr('ccob-v3.bin', b'CCOB' + struct.pack('<HHQQ', 3, 1, len(z) + 8, usize) + z[16:])
# Version 1 header (u32 uncompressed, u64 hash; 20 bytes), which LLVM 18 wrote.
wr('ccob-v1.bin', b'CCOB' + struct.pack('<HHI', 1, 1, usize) + z[16:])
# zlib method (0): LLVM 19 here always writes zstd, so this one is made by hand.
plain = rd('../bundles/kernel.bc')
zl = zlib.compress(plain, 6)
h = hashlib.md5(plain).digest()[:8]
wr('ccob-zlib.bin', b'CCOB' + struct.pack('<HHII', 2, 0, 24 + len(zl), len(plain)) + h + zl)
PY

cat > README.md <<'EOF'
# Damaged and hand-made bundles

Made by `make.sh` here from `../bundles/kernel.bc` (3 entries: host, gfx906, gfx90a),
`../bundles/kernel.ll` and `../bundles/kernel-z.bc` (CCOB version 2, zstd). The last column
says what clang-offload-bundler-19 (19.1.7) does with `-list` (and `-unbundle` where it
differs).

| file | damage | LLVM 19 |
| --- | --- | --- |
| `magic-only.bc` | the 24-byte magic and nothing else | no entries |
| `short-count.bc` | the entry count cut after 4 bytes | no entries |
| `count-only.bc` | count 3, no records | no entries |
| `cut-in-record0.bc` | cut in the middle of the first record | no entries |
| `cut-in-record1.bc` | cut in the middle of the second record | no entries (the first record's payload lies past the cut, so it is dropped before the second is read) |
| `cut-in-payload.bc` | the last 100 bytes removed: the last payload runs past the end | SIGSEGV |
| `count-too-big.bc` | count 4 with 3 records | SIGSEGV |
| `count-huge.bc` | count 2^64-1 | SIGSEGV |
| `size-past-eof-first.bc` | first record's size past the end | no entries |
| `size-past-eof-second.bc` | second record's size past the end | SIGSEGV |
| `size-overflow.bc` | second record's offset + size overflows 64 bits | lists all 3; unbundling gfx906 fails with `LLVM ERROR: IO failure on output stream: Bad address` |
| `offset-zero-second.bc` | second record's offset 0 | SIGSEGV |
| `idlen-huge.bc` | second record's ID length 2^63-1 | SIGSEGV |
| `no-end-marker.ll` | text bundle whose last entry has no end marker | `-list` loops for ever; unbundling that entry reads past the buffer (`Bad address`); the other entries unbundle |
| `ccob-short-header.bin` | the first 21 bytes of a CCOB | `Compressed bundle header size too small` |
| `ccob-bad-method.bin` | compression method 7 | `Unknown compressing method` |
| `ccob-cut-payload.bin` | the zstd frame cut short by 40 bytes | zstd: `Src size is incorrect` |
| `ccob-trailing-bytes.bin` | 16 zero bytes after the CCOB | zstd: `Src size is incorrect` |
| `ccob-size-small.bin` | uncompressed size field one byte too small | zstd: `Destination buffer is too small` |
| `ccob-size-large.bin` | uncompressed size field 100 bytes too large | works |
| `ccob-bad-hash.bin` | hash field zeroed | works (the hash is checked only with `-verbose`) |
| `ccob-total-small.bin` | total file size field = 24 (header only) | works (the field is not read) |
| `ccob-v3.bin` | version 3 header (32 bytes) around the same zstd frame | read as version 2: zstd `Unknown frame descriptor` |
| `ccob-v1.bin` | version 1 header (20 bytes, LLVM 18's format) around the same zstd frame | works |
| `ccob-zlib.bin` | method 0: a zlib stream (level 6) of `kernel.bc`, made with Python's zlib | works |
EOF
