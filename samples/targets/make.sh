#!/usr/bin/env bash
# Makes objects and programs for processors and targets that LLVM 19's table lacks or that LLVM
# 22 dropped: new processors (gfx950, gfx1153, gfx1250, gfx9-4-generic), generic targets beside
# native ones in one program, SPIR-V (amdgcnspirv), the retired gfx940/gfx941, code object v6,
# and what LLVM 22 puts in .llvm.offloading (OpenMP, and HIP as offload kind 4). It then writes
# README.md with what each file holds, as clang-offload-bundler-22 and -19, llvm-objdump-22
# --offloading and llvm-readelf-22 say.
#
# Tools: Debian's clang-22 (with ld.lld-22 through -fuse-ld=lld), clang-offload-bundler-22,
# llvm-objcopy-22, llvm-readelf-22, llvm-objdump-22, and clang-19 and clang-offload-bundler-19
# for the two files LLVM 22 cannot make (retired-gfx940.o) or that show LLVM 19's bundle IDs
# (generic-cov6.o). No ROCm or GPU: HIP is compiled with -nogpulib -nogpuinc, and mixed-app
# links against ../linked/hip-stub.c.
#
# Run from anywhere: ./samples/targets/make.sh. It works inside this folder with relative
# paths only, -ffile-compilation-dir=. and fixed -cuid= values, and compiles omp.c from
# standard input (see omp-22.o below), so running it twice gives the same bytes, in any
# checkout.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

CLANG=${CLANG:-clang-22}
CLANG19=${CLANG19:-clang-19}
BUNDLER=${BUNDLER:-clang-offload-bundler-22}
BUNDLER19=${BUNDLER19:-clang-offload-bundler-19}
OBJCOPY=${OBJCOPY:-llvm-objcopy-22}
READELF=${READELF:-llvm-readelf-22}
OBJDUMP=${OBJDUMP:-llvm-objdump-22}
for tool in "$CLANG" ld.lld-22 "$CLANG19" "$BUNDLER" "$BUNDLER19" "$OBJCOPY" "$READELF" \
  "$OBJDUMP"; do
  command -v "$tool" >/dev/null || { echo "make.sh: $tool not found" >&2; exit 1; }
done

unset OFFLOAD_BUNDLER_COMPRESS OFFLOAD_BUNDLER_VERBOSE OFFLOAD_BUNDLER_COMPRESSION_LEVEL \
  OFFLOAD_BUNDLER_IGNORE_ENV_VAR COMPRESSED_BUNDLE_FORMAT_VERSION
export SOURCE_DATE_EPOCH=0 LC_ALL=C

OUTPUTS=(mixed-app mixed-app-z new-arches.o spirv.o retired-gfx940.o generic-cov6.o omp-22.o
  rdc-22.o)
rm -rf tmp "${OUTPUTS[@]}"
mkdir tmp
trap 'rm -rf tmp' EXIT

# -ffile-compilation-dir=.: the SPIR-V module embeds the device compile's command line
# (llvm.cmdline), which otherwise names this folder's absolute path.
HIP=(-x hip -nogpulib -nogpuinc -O2 -ffile-compilation-dir=.)
# Translation unit 1 (kernel.hip): native gfx1100, its generic target, and gfx90a.
TU1=(--offload-arch=gfx1100 --offload-arch=gfx11-generic --offload-arch=gfx90a)
# Translation unit 2 (vadd.hip): no native gfx11 code, so a gfx1100 device loads the generic.
TU2=(--offload-arch=gfx11-generic --offload-arch=gfx90a:xnack-)

"$CLANG" -O2 -c ../linked/main.c -o tmp/main.o
"$CLANG" -O2 -c ../linked/hip-stub.c -o tmp/hip-stub.o

# ---- mixed-app: two non-rdc TUs, so .hip_fatbin holds two bundles -----------------------------
"$CLANG" "${HIP[@]}" "${TU1[@]}" -c -cuid=targets-tu1 ../src/kernel.hip -o tmp/tu1.o
"$CLANG" "${HIP[@]}" "${TU2[@]}" -c -cuid=targets-tu2 ../src/vadd.hip -o tmp/tu2.o
"$CLANG" -fuse-ld=lld tmp/main.o tmp/tu1.o tmp/tu2.o tmp/hip-stub.o -o mixed-app

# ---- mixed-app-z: the same with --offload-compress (clang-22 writes CCOB version 3) -----------
"$CLANG" "${HIP[@]}" "${TU1[@]}" --offload-compress -c -cuid=targets-tu1 ../src/kernel.hip \
  -o tmp/tu1-z.o
"$CLANG" "${HIP[@]}" "${TU2[@]}" --offload-compress -c -cuid=targets-tu2 ../src/vadd.hip \
  -o tmp/tu2-z.o
"$CLANG" -fuse-ld=lld tmp/main.o tmp/tu1-z.o tmp/tu2-z.o tmp/hip-stub.o -o mixed-app-z

# ---- new-arches.o: processors LLVM 19 does not know ---------------------------------------------
# clang-22 refuses gfx950 beside gfx950:xnack+ ("invalid offload arch combinations": a feature
# is named for every arch of a processor or for none), so gfx950 comes as xnack+ and xnack-.
"$CLANG" "${HIP[@]}" --offload-arch=gfx950:xnack+ --offload-arch=gfx950:xnack- \
  --offload-arch=gfx1250 --offload-arch=gfx1153 \
  --offload-arch=gfx9-4-generic:sramecc+:xnack- -c -cuid=targets-new ../src/kernel.hip \
  -o new-arches.o

# ---- spirv.o: SPIR-V for any AMD GPU beside native gfx1100 code -------------------------------
# clang-22 translates with the external llvm-spirv unless told to use its own SPIR-V backend.
"$CLANG" "${HIP[@]}" --offload-arch=amdgcnspirv --offload-arch=gfx1100 -use-spirv-backend -c \
  -cuid=targets-spirv ../src/kernel.hip -o spirv.o

# ---- retired-gfx940.o: clang-19, processors LLVM 21 removed ------------------------------------
"$CLANG19" "${HIP[@]}" --offload-arch=gfx940 --offload-arch=gfx941:xnack+ \
  --offload-arch=gfx942 -c -cuid=targets-retired ../src/kernel.hip -o retired-gfx940.o

# ---- generic-cov6.o: clang-19, generic targets (they need code object version 6) -------------
# clang-19 warns that code object v6 "is still in development"; the warning is expected.
"$CLANG19" "${HIP[@]}" -mcode-object-version=6 --offload-arch=gfx11-generic \
  --offload-arch=gfx10-3-generic -c -cuid=targets-cov6 ../src/kernel.hip -o generic-cov6.o \
  2> >(grep -v 'code object v6 is still in development' >&2)

# ---- omp-22.o: OpenMP, .llvm.offloading with OffloadBinaries (kind openmp) --------------------
# clang names offload entries after the device and inode numbers of the source file, or, when
# it reads standard input, after a hash of the name "-": compiling from standard input keeps
# the bytes the same in every checkout. -nogpulib: no OpenMP device runtime is needed to
# compile (libomp-22-dev is not installed).
"$CLANG" -fopenmp --offload-arch=gfx11-generic --offload-arch=gfx1100 -nogpulib -O2 -c -x c - \
  -o omp-22.o < ../src/omp.c

# ---- rdc-22.o: HIP -fgpu-rdc through the new offload driver ------------------------------------
# The old driver (clang-22's default) would write __CLANG_OFFLOAD_BUNDLE__ sections instead;
# the new one writes .llvm.offloading with bitcode images whose offload kind is HIP = 4.
"$CLANG" "${HIP[@]}" --offload-new-driver -fgpu-rdc --offload-arch=gfx950 \
  --offload-arch=gfx11-generic -c -cuid=targets-rdc ../src/vadd.hip -o rdc-22.o

# =================================================================================================
# Find what each file holds, for README.md.

fail() { echo "make.sh: $*" >&2; touch tmp/failed; exit 1; }
hex() { printf '0x%x' "$1"; }
u64() { od -An -tu8 -j "$2" -N8 "$1" | tr -d ' '; }
# Section "OFF SIZE" (decimal) by name, from llvm-readelf -S.
sec_elf() {
  local off size
  read -r off size < <("$READELF" -SW "$1" | sed -n 's/^ *\[ *[0-9]*\] //p' |
    awk -v n="$2" '$1 == n { print $4, $5; exit }')
  [ -n "${off:-}" ] || fail "$1 has no $2"
  echo $((16#$off)) $((16#$size))
}
# starts FILE OFF SIZE: where bundles and CCOBs start in FILE[OFF, OFF+SIZE); linkers place them
# on 4096 boundaries of the section, so only those are looked at.
starts() {
  local o
  for ((o = $2; o < $2 + $3; o += 4096)); do
    case $(head -c $((o + 4)) "$1" | tail -c 4 | od -An -tx1 | tr -d ' ') in
      5f5f434c | 43434f42) echo "$o" ;;
    esac
  done
}
# slice FILE OFF END OUT: FILE[OFF, END) into OUT; a CCOB is cut at its header's total size
# (version 3: u64 at +8), since clang-offload-bundler-22 refuses one with bytes after it.
slice() {
  local end=$3
  if [ "$(head -c $(($2 + 4)) "$1" | tail -c 4)" = CCOB ]; then
    end=$(($2 + $(u64 "$1" $(($2 + 8)))))
  fi
  # head first: tail reads all it writes, so no SIGPIPE ends the pipeline early.
  head -c "$end" "$1" | tail -c +$(($2 + 1)) > "$4"
}
# bundles FILE: each bundle or CCOB of FILE's .hip_fatbin as tmp/FILE.N (N from 1).
bundles() {
  local off size n=0 prev=
  read -r off size < <(sec_elf "$1" .hip_fatbin)
  for o in $(starts "$1" "$off" "$size") $((off + size)); do
    if [ -n "$prev" ]; then n=$((n + 1)); slice "$1" "$prev" "$o" "tmp/$1.$n"; fi
    prev=$o
  done
  [ "$n" -gt 0 ] || fail "no bundle in $1"
}
# ids BUNDLER FILE: what BUNDLER -list prints, in its order, as `a`, `b`.
ids() {
  "$1" -list -type=o -input="$2" 2>&1 | sed 's/.*/`&`/' | paste -sd, - | sed 's/,/, /g'
}
# images FILE: the images llvm-objdump-22 --offloading lists, as arch (kind, producer).
images() {
  "$OBJDUMP" --offloading "$1" | awk '
    $1 == "kind" { $1 = ""; kind = substr($0, 2) } $1 == "arch" { arch = $2 }
    $1 == "triple" { triple = $2 }
    $1 == "producer" { printf "%s`%s %s` (%s, producer %s)", sep, triple, arch, kind, $2; sep = ", " }'
}
# kinds FILE: the OffloadKind field (u16 at +2 of the entry at EntriesOffset) of each
# OffloadBinary in FILE's .llvm.offloading, one after another at their 8-aligned sizes.
kinds() {
  local off size o out=()
  read -r off size < <(sec_elf "$1" .llvm.offloading)
  for ((o = off; o < off + size; )); do
    out+=("$(od -An -tu2 -j $((o + $(u64 "$1" $((o + 16))) + 2)) -N2 "$1" | tr -d ' ')")
    o=$((o + ($(u64 "$1" $((o + 8))) + 7) / 8 * 8))
  done
  echo "${out[*]}"
}

for f in mixed-app mixed-app-z new-arches.o spirv.o retired-gfx940.o generic-cov6.o; do
  bundles "$f"
done
for f in mixed-app mixed-app-z; do
  "$OBJCOPY" --dump-section ".hip_fatbin=tmp/$f.hip_fatbin" "$f" tmp/scratch
done
for n in 1 2; do
  [ -e "tmp/mixed-app.$n" ] && [ -e "tmp/mixed-app-z.$n" ] || fail "mixed-app lacks bundle $n"
done
[ ! -e tmp/mixed-app.3 ] && [ ! -e tmp/mixed-app-z.3 ] || fail "mixed-app has a third bundle"
section() { # FILE: "at OFF, size SIZE" of .hip_fatbin
  local off size
  read -r off size < <(sec_elf "$1" .hip_fatbin)
  echo "\`.hip_fatbin\` at $(hex "$off"), size $(hex "$size")"
}
where() { # FILE N: the offset of bundle N in FILE
  starts "$1" $(sec_elf "$1" .hip_fatbin) | sed -n "$2p" | xargs printf '0x%x'
}
ccob() { # FILE: "CCOB version V, total size T"
  echo "CCOB version $(od -An -tu2 -j 4 -N2 "$1" | tr -d ' '), total size $(hex "$(u64 "$1" 8)")"
}

{
  cat <<EOF
# Samples for new processors, generic targets and SPIR-V

Made by \`make.sh\` (in this folder) with:

- \`$("$CLANG" --version | head -1)\` (\`$CLANG\`, linking with \`ld.lld-22\` through \`-fuse-ld=lld\`)
- \`$("$BUNDLER" --version | sed -n 's/^ *//; /version/p' | head -1)\` (\`$BUNDLER\`)
- \`$("$CLANG19" --version | head -1)\` (\`$CLANG19\`)
- \`$("$BUNDLER19" --version | sed -n 's/^ *//; /version/p' | head -1)\` (\`$BUNDLER19\`)

HIP sources are \`../src/kernel.hip\` and \`../src/vadd.hip\`, compiled with
\`-x hip -nogpulib -nogpuinc -O2 -ffile-compilation-dir=.\` and a fixed \`-cuid=\`; the program links
\`../linked/main.c\` and \`../linked/hip-stub.c\` (a stand-in for the HIP runtime). Running
\`make.sh\` twice, or in another checkout, gives the same bytes.

## Files

| file | made by | holds |
| --- | --- | --- |
| \`mixed-app\` | clang-22: TU 1 \`kernel.hip\` with \`--offload-arch=gfx1100 --offload-arch=gfx11-generic --offload-arch=gfx90a\`, TU 2 \`vadd.hip\` with \`--offload-arch=gfx11-generic --offload-arch=gfx90a:xnack-\`, each \`-c\`, then linked | x86-64 ELF executable, $(section mixed-app): two bundles, TU 1's at $(where mixed-app 1), TU 2's at $(where mixed-app 2). A gfx1100 device loads TU 1's native code and TU 2's generic code |
| \`mixed-app-z\` | the same with \`--offload-compress\` | $(section mixed-app-z): two CCOBs (TU 1's at $(where mixed-app-z 1): $(ccob tmp/mixed-app-z.1); TU 2's at $(where mixed-app-z 2): $(ccob tmp/mixed-app-z.2)), zstd |
| \`new-arches.o\` | clang-22, \`kernel.hip\`, \`--offload-arch=gfx950:xnack+ --offload-arch=gfx950:xnack- --offload-arch=gfx1250 --offload-arch=gfx1153 --offload-arch=gfx9-4-generic:sramecc+:xnack-\` | object, $(section new-arches.o): one bundle. Plain \`gfx950\` is not there: clang-22 refuses it beside \`gfx950:xnack+\` (\`invalid offload arch combinations\`) |
| \`spirv.o\` | clang-22, \`kernel.hip\`, \`--offload-arch=amdgcnspirv --offload-arch=gfx1100 -use-spirv-backend\` | object, $(section spirv.o): one bundle, a SPIR-V module (\`spirv64-amd-amdhsa\`, \`amdgcnspirv\`) and a gfx1100 code object |
| \`retired-gfx940.o\` | clang-19, \`kernel.hip\`, \`--offload-arch=gfx940 --offload-arch=gfx941:xnack+ --offload-arch=gfx942\` | object, $(section retired-gfx940.o): one bundle. LLVM 21 removed gfx940 and gfx941 |
| \`generic-cov6.o\` | clang-19, \`kernel.hip\`, \`-mcode-object-version=6 --offload-arch=gfx11-generic --offload-arch=gfx10-3-generic\` | object, $(section generic-cov6.o): one bundle, code object v6 (generic targets need it; clang-19 warns that v6 is "still in development") |
| \`omp-22.o\` | clang-22, \`../src/omp.c\` read from standard input, \`-fopenmp --offload-arch=gfx11-generic --offload-arch=gfx1100 -nogpulib -O2 -c -x c -\` | object, \`.llvm.offloading\` (type LLVM_OFFLOADING, flags E): $(images omp-22.o); OffloadKind fields $(kinds omp-22.o). The kernel is \`$(grep -aom1 '__omp_offloading_[0-9a-f]*_[0-9a-f]*_main_l[0-9]*' omp-22.o)\`: clang names it after the source file's device and inode numbers, or, for standard input (no file to ask), after 0xdeadf17e and a hash of the name, which keeps the bytes the same in every checkout |
| \`rdc-22.o\` | clang-22, \`vadd.hip\`, \`--offload-new-driver -fgpu-rdc --offload-arch=gfx950 --offload-arch=gfx11-generic -c\` | object, \`.llvm.offloading\`: $(images rdc-22.o); OffloadKind fields $(kinds rdc-22.o) (HIP is 4 since LLVM 21, 3 before) |

## Entry IDs

What \`clang-offload-bundler-22 -list -type=o\` and \`clang-offload-bundler-19 -list -type=o\`
print, in their order (a hash table's, not the file's), for each bundle cut out of
\`.hip_fatbin\` (\`llvm-objcopy --dump-section\`, or the byte range above; a CCOB cut at its
total size). Neither lists anything given the objects themselves: \`-type=o\` looks for
\`__CLANG_OFFLOAD_BUNDLE__\` sections, which only \`-fgpu-rdc\` objects of the old driver have.

| bundle | clang-offload-bundler-22 -list | clang-offload-bundler-19 -list |
| --- | --- | --- |
| \`mixed-app\`, TU 1 | $(ids "$BUNDLER" tmp/mixed-app.1) | $(ids "$BUNDLER19" tmp/mixed-app.1) |
| \`mixed-app\`, TU 2 | $(ids "$BUNDLER" tmp/mixed-app.2) | $(ids "$BUNDLER19" tmp/mixed-app.2) |
| \`mixed-app-z\`, TU 1 | $(ids "$BUNDLER" tmp/mixed-app-z.1) | CCOB version 3: LLVM 19 cannot read it |
| \`mixed-app-z\`, TU 2 | $(ids "$BUNDLER" tmp/mixed-app-z.2) | as above |
| \`new-arches.o\` | $(ids "$BUNDLER" tmp/new-arches.o.1) | $(ids "$BUNDLER19" tmp/new-arches.o.1) |
| \`spirv.o\` | $(ids "$BUNDLER" tmp/spirv.o.1) | $(ids "$BUNDLER19" tmp/spirv.o.1) |
| \`retired-gfx940.o\` | $(ids "$BUNDLER" tmp/retired-gfx940.o.1) | $(ids "$BUNDLER19" tmp/retired-gfx940.o.1) |
| \`generic-cov6.o\` | $(ids "$BUNDLER" tmp/generic-cov6.o.1) | $(ids "$BUNDLER19" tmp/generic-cov6.o.1) |

Given the whole \`.hip_fatbin\` of \`mixed-app\`, clang-offload-bundler-22 lists only TU 1's
bundle: $(ids "$BUNDLER" tmp/mixed-app.hip_fatbin). Given that of \`mixed-app-z\` it fails:
\`$("$BUNDLER" -list -type=o -input=tmp/mixed-app-z.hip_fatbin 2>&1 | head -1 | sed 's/^[^:]*: //')\`.

## What to expect

- clang-22 names the host entry \`host-x86_64-unknown-linux-gnu-\` (four fields and an empty
  environment); clang-19 \`host-x86_64-unknown-linux--\` (three fields, then two empty ones).
- \`retired-gfx940.o\`: LLVM 22 no longer knows gfx940 and gfx941, so
  \`clang-offload-bundler-22 -unbundle -targets=hipv4-amdgcn-amd-amdhsa--gfx940\` on its bundle
  returns the **gfx941:xnack+** code object (both IDs lose their processor and the first entry
  in bundle order wins). clang-offload-bundler-19 returns the gfx940 one.
- \`generic-cov6.o\`, \`mixed-app\` and the other generic code objects have
  \`EI_ABIVERSION\` 4 (code object v6): generic processors exist only from v6 on. clang-22 makes
  v6 by default.
- \`omp-22.o\` and \`rdc-22.o\` carry no bundle: their device code is LLVM bitcode in version-1
  OffloadBinaries, which \`clang-offload-bundler\` does not read; \`llvm-objdump-22 --offloading\`
  and \`llvm-offload-binary-22\` do.
EOF
} > README.md
[ ! -e tmp/failed ] || { echo "make.sh: README.md is incomplete" >&2; exit 1; }

echo "targets: $(du -ch "${OUTPUTS[@]}" | tail -1 | cut -f1)"
