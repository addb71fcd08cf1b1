#!/usr/bin/env bash
# Makes programs that carry device code as data of their own, not in the sections the HIP
# toolchain writes: a bundle embedded in .rodata by the assembler's .incbin, a compressed
# bundle as the C array `xxd -i` writes (in .data), the first program without its section
# headers, and an object that holds the same bundle in .rodata and in sections that hold no
# data (machine code, debug strings, a note). It then writes README.md with where each bundle
# lies, found with llvm-readelf-22 (section offsets) and grep (magic positions).
#
# Tools: Debian's clang-22 (the device code, and the xxd program linked with ld.lld-22 through
# -fuse-ld=lld), gcc and GNU ld (the .incbin program), xxd, llvm-objcopy-22, llvm-readelf-22,
# clang-offload-bundler-22, GNU grep and awk. No ROCm or GPU: HIP is compiled with -nogpulib
# -nogpuinc.
#
# Run from anywhere: ./samples/embedded/make.sh. It works inside this folder with relative
# paths only and a fixed -cuid=, so running it twice gives the same bytes.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

CLANG=${CLANG:-clang-22}
GCC=${GCC:-gcc}
OBJCOPY=${OBJCOPY:-llvm-objcopy-22}
READELF=${READELF:-llvm-readelf-22}
BUNDLER=${BUNDLER:-clang-offload-bundler-22}
for tool in "$CLANG" ld.lld-22 "$GCC" xxd "$OBJCOPY" "$READELF" "$BUNDLER"; do
  command -v "$tool" >/dev/null || { echo "make.sh: $tool not found" >&2; exit 1; }
done

unset OFFLOAD_BUNDLER_COMPRESS OFFLOAD_BUNDLER_VERBOSE OFFLOAD_BUNDLER_COMPRESSION_LEVEL \
  OFFLOAD_BUNDLER_IGNORE_ENV_VAR COMPRESSED_BUNDLE_FORMAT_VERSION
export SOURCE_DATE_EPOCH=0 LC_ALL=C

OUTPUTS=(kernel.bundle kernel-z.bundle incbin-app incbin-app-nosections xxd-app decoys.o)
rm -rf tmp "${OUTPUTS[@]}"
mkdir tmp
trap 'rm -rf tmp' EXIT

# ---- the device code: kernel.hip for gfx90a and gfx1100, bundled by the driver ---------------
# --offload-device-only -c with --gpu-bundle-output: a bundle of the two code objects and an
# empty host entry, the file a program loads with hipModuleLoadData.
HIP=(-x hip -nogpulib -nogpuinc -O2 --offload-arch=gfx90a --offload-arch=gfx1100
  --offload-device-only --gpu-bundle-output -c -cuid=embedded)
"$CLANG" "${HIP[@]}" ../src/kernel.hip -o kernel.bundle
# The same compressed (clang-22 writes CCOB version 3, zstd).
"$CLANG" "${HIP[@]}" --offload-compress ../src/kernel.hip -o kernel-z.bundle

# ---- incbin-app: the bundle in .rodata through .incbin (gcc, GNU as and ld) -----------------
"$GCC" -O2 incbin.c -o incbin-app
# ---- incbin-app-nosections: the same without section headers ---------------------------------
"$OBJCOPY" --strip-sections incbin-app incbin-app-nosections

# ---- xxd-app: the compressed bundle as a C array in .data (clang-22, ld.lld-22) --------------
xxd -i kernel-z.bundle > tmp/kernel-z.h
"$CLANG" -O2 -Itmp -fuse-ld=lld xxd.c -o xxd-app

# ---- decoys.o: the bundle in .rodata, .text, .debug_str and .note.decoy ------------------------
"$CLANG" -c decoys.s -o decoys.o

# =================================================================================================
# Find where each bundle lies, for README.md.

fail() { echo "make.sh: $*" >&2; touch tmp/failed; exit 1; }
hex() { printf '0x%x' "$1"; }
# magics FILE MAGIC: where MAGIC starts in FILE, in hex, comma-separated.
magics() {
  grep -obUaF "$2" "$1" | cut -d: -f1 | while read -r o; do hex "$o"; echo; done | paste -sd, - |
    sed 's/,/, /g'
}
# section FILE NAME: "`NAME` (TYPE, flags FLAGS) at OFF, size SIZE", from llvm-readelf -S.
section() {
  local name type flags off size
  read -r name type off size flags < <("$READELF" -SW "$1" | sed -n 's/^ *\[ *[0-9]*\] //p' |
    awk -v n="$2" '$1 == n { print $1, $2, $4, $5, (NF == 10) ? $7 : "-"; exit }')
  [ -n "${name:-}" ] || fail "$1 has no section $2"
  echo "\`$name\` ($type, flags $flags) at $(hex $((16#$off))), size $(hex $((16#$size)))"
}
# ids FILE: what clang-offload-bundler-22 -list prints, in its order.
ids() { "$BUNDLER" -list -type=o -input="$1" 2>&1 | sed 's/.*/`&`/' | paste -sd, - | sed 's/,/, /g'; }
# ccob FILE: "CCOB version V, total size T".
ccob() {
  echo "CCOB version $(od -An -tu2 -j 4 -N2 "$1" | tr -d ' '), total size" \
    "$(hex "$(od -An -tu8 -j 8 -N8 "$1" | tr -d ' ')")"
}
# segments FILE: the file ranges and flags of its PT_LOAD segments.
segments() {
  local off filesz flags out=()
  while read -r off filesz flags; do
    out+=("$(hex $((off)))..$(hex $((off + filesz))) ($flags)")
  done < <("$READELF" -lW "$1" | awk '$1 == "LOAD" {
    flags = $7; if ($8 ~ /^[RWE]+$/) flags = flags " " $8; print $2, $5, flags }')
  local IFS=,
  echo "${out[*]}" | sed 's/,/, /g'
}

[ "$("$READELF" -hW incbin-app-nosections | awk '/Number of section headers/ { print $NF }')" = 0 ] ||
  fail "incbin-app-nosections still has section headers"
[ "$(magics incbin-app __CLANG_OFFLOAD_BUNDLE__)" = \
  "$(magics incbin-app-nosections __CLANG_OFFLOAD_BUNDLE__)" ] ||
  fail "the bundle moved when the section headers were removed"

{
  cat <<EOF
# Device code embedded as data

Made by \`make.sh\` (in this folder) with:

- \`$("$CLANG" --version | head -1)\` (\`$CLANG\`; \`xxd-app\` linked with \`ld.lld-22\` through \`-fuse-ld=lld\`)
- \`$("$GCC" --version | head -1)\` and \`$(ld --version | head -1)\` (\`incbin-app\`)
- \`$(xxd --version 2>&1 | head -1)\`

Programs that load their device code themselves (\`hipModuleLoadData\`) often carry it as data
of their own rather than in \`.hip_fatbin\`: a file embedded by the assembler's \`.incbin\`, or
the C array \`xxd -i\` writes. \`offload\` finds it by its magic in the sections that hold data,
and not in those that hold machine code, symbols, debug information or notes.

The device code is \`../src/kernel.hip\` for gfx90a and gfx1100, compiled by clang-22 with
\`-x hip -nogpulib -nogpuinc -O2 --offload-arch=gfx90a --offload-arch=gfx1100
--offload-device-only --gpu-bundle-output -c -cuid=embedded\` (and \`--offload-compress\` for
\`kernel-z.bundle\`). Running \`make.sh\` twice gives the same bytes.

## Files

| file | made by | device code |
| --- | --- | --- |
| \`kernel.bundle\` | clang-22, as above | a bundle, $(hex "$(stat -c %s kernel.bundle)") bytes: $(ids kernel.bundle) |
| \`kernel-z.bundle\` | the same with \`--offload-compress\` | $(ccob kernel-z.bundle), zstd: the same entries |
| \`incbin-app\` | \`gcc -O2 incbin.c\`: top-level \`asm\` with \`.section .rodata\`, \`.balign 64\`, \`.incbin "kernel.bundle"\` | $(section incbin-app .rodata): the bundle at $(magics incbin-app __CLANG_OFFLOAD_BUNDLE__) |
| \`incbin-app-nosections\` | \`llvm-objcopy-22 --strip-sections incbin-app\`: no section headers, the segments as they were | the bundle at $(magics incbin-app-nosections __CLANG_OFFLOAD_BUNDLE__); loadable segments $(segments incbin-app-nosections) |
| \`xxd-app\` | \`xxd -i kernel-z.bundle\` included by \`xxd.c\` (\`unsigned char kernel_z_bundle[]\`), \`clang-22 -O2 -fuse-ld=lld\` | $(section xxd-app .data): the compressed bundle at $(magics xxd-app CCOB) |
| \`decoys.o\` | \`clang-22 -c decoys.s\`: the bundle by \`.incbin\` in four sections | the bundle at $(magics decoys.o __CLANG_OFFLOAD_BUNDLE__), in $(section decoys.o .text), $(section decoys.o .rodata), $(section decoys.o .debug_str) and $(section decoys.o .note.decoy) |

## What to expect

- \`offload ls\` lists the two device entries (and the empty host entry) of each program's
  bundle, in \`.rodata\` or \`.data\`, and in \`incbin-app-nosections\` with no section: without
  section headers, the loadable segments are searched.
- In \`decoys.o\` only the bundle in \`.rodata\` is listed: \`.text\` is machine code
  (\`SHF_EXECINSTR\`), \`.debug_str\` debug information and \`.note.decoy\` a note
  (\`SHT_NOTE\`), where no program keeps data.
EOF
} > README.md
[ ! -e tmp/failed ] || { echo "make.sh: README.md is incomplete" >&2; exit 1; }

echo "embedded: $(du -ch "${OUTPUTS[@]}" | tail -1 | cut -f1)"
