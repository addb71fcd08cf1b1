#!/usr/bin/env bash
# Makes finished binaries (executables, a shared library, a PE image, archives) and host objects
# for other hosts and formats, each holding device code the way the toolchains leave it, and
# writes README.md with where each bundle or OffloadBinary sits, found with llvm-readelf-19 /
# llvm-readobj-19 (section offsets) and grep (magic positions).
#
# Tools: Debian's clang-19, ld.lld-19 (through -fuse-ld=lld), lld-link-19, llvm-mc-19, llvm-ar-19, llvm-lipo-19,
# llvm-objcopy-19, llvm-readelf-19, llvm-readobj-19, llvm-objdump-19, clang-offload-bundler-19,
# clang-offload-packager-19, libomp-19-dev (for the OpenMP device runtime), gcc's C runtime
# files, GNU grep and od. No ROCm, CUDA or GPU: HIP is compiled with -nogpulib -nogpuinc and
# linked against hip-stub.c.
#
# Run from anywhere: ./samples/linked/make.sh. It works inside this folder with relative paths
# only and fixed -cuid= values, so running it twice gives the same bytes. The OpenMP files
# (omp-app, omp-msvc.obj, nested.a) depend on the checkout: clang names OpenMP offload entries
# after the device and inode numbers of ../src/omp.c.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

CLANG=${CLANG:-clang-19}
LLD_LINK=${LLD_LINK:-lld-link-19}
MC=${MC:-llvm-mc-19}
AR=${AR:-llvm-ar-19}
LIPO=${LIPO:-llvm-lipo-19}
OBJCOPY=${OBJCOPY:-llvm-objcopy-19}
READELF=${READELF:-llvm-readelf-19}
READOBJ=${READOBJ:-llvm-readobj-19}
OBJDUMP=${OBJDUMP:-llvm-objdump-19}
BUNDLER=${BUNDLER:-clang-offload-bundler-19}
PACKAGER=${PACKAGER:-clang-offload-packager-19}
for tool in "$CLANG" ld.lld-19 "$LLD_LINK" "$MC" "$AR" "$LIPO" "$OBJCOPY" "$READELF" "$READOBJ" \
  "$OBJDUMP" "$BUNDLER" "$PACKAGER"; do
  command -v "$tool" >/dev/null || { echo "make.sh: $tool not found" >&2; exit 1; }
done

unset OFFLOAD_BUNDLER_COMPRESS OFFLOAD_BUNDLER_VERBOSE OFFLOAD_BUNDLER_COMPRESSION_LEVEL \
  OFFLOAD_BUNDLER_IGNORE_ENV_VAR COMPRESSED_BUNDLE_FORMAT_VERSION
export SOURCE_DATE_EPOCH=0 ZERO_AR_DATE=1 LC_ALL=C

OUTPUTS=(hip-app libhip.so hip-rdc-app omp-app omp-jit-app aarch64-kernel.o i386-kernel.o kernel-msvc.obj
  omp-msvc.obj hip-app.exe macho-offload.o macho-offload-x86_64.o macho-universal nested.a
  bundle-in-binary.bin cuda.fatbin cuda-fatbin.o)
rm -rf tmp "${OUTPUTS[@]}"
mkdir tmp
trap 'rm -rf tmp' EXIT

HIP=(-x hip -nogpulib -nogpuinc -O2)
TWO=(--offload-arch=gfx906 --offload-arch=gfx90a)
XNACK=(--offload-arch=gfx90a:xnack+ --offload-arch=gfx90a:xnack-)
# kernel.hip a second time in one program: rename its global symbols.
RENAME=(-Dkfun=kfun_z -Dscale=scale_z)
WIN=(--target=x86_64-pc-windows-msvc -mno-incremental-linker-compatible)

"$CLANG" -O2 -c main.c -o tmp/main.o
"$CLANG" -O2 -c hip-stub.c -o tmp/hip-stub.o

# ---- 1. hip-app: three non-rdc HIP objects, one .hip_fatbin bundle each ----------------------
"$CLANG" "${HIP[@]}" "${TWO[@]}" -c -cuid=linked-a ../src/kernel.hip -o tmp/hip-a.o
"$CLANG" "${HIP[@]}" "${XNACK[@]}" -c -cuid=linked-b ../src/vadd.hip -o tmp/hip-b.o
"$CLANG" "${HIP[@]}" "${TWO[@]}" "${RENAME[@]}" --offload-compress -c -cuid=linked-c \
  ../src/kernel.hip -o tmp/hip-c.o
"$CLANG" -fuse-ld=lld tmp/main.o tmp/hip-a.o tmp/hip-b.o tmp/hip-c.o tmp/hip-stub.o -o hip-app

# ---- 2. libhip.so: two -fPIC HIP objects, the second compressed ------------------------------
# The HIP entry points stay undefined, as when a library links against libamdhip64.so.
"$CLANG" "${HIP[@]}" -fPIC "${TWO[@]}" -c -cuid=linked-so-a ../src/vadd.hip -o tmp/so-a.o
"$CLANG" "${HIP[@]}" -fPIC --offload-arch=gfx90a --offload-compress -c -cuid=linked-so-b \
  ../src/kernel.hip -o tmp/so-b.o
"$CLANG" -fuse-ld=lld -shared -fPIC tmp/so-a.o tmp/so-b.o -o libhip.so

# ---- 3. hip-rdc-app: -fgpu-rdc objects, device-linked by clang --hip-link --------------------
# -no-hip-rt: without it the driver adds -lamdhip64, which does not exist here.
"$CLANG" "${HIP[@]}" -fgpu-rdc "${TWO[@]}" -c -cuid=linked-rdc-a ../src/kernel.hip -o tmp/rdc-a.o
"$CLANG" "${HIP[@]}" -fgpu-rdc "${TWO[@]}" -c -cuid=linked-rdc-b ../src/vadd.hip -o tmp/rdc-b.o
"$CLANG" --hip-link -no-hip-rt -fgpu-rdc "${TWO[@]}" -fuse-ld=lld \
  tmp/main.o tmp/rdc-a.o tmp/rdc-b.o tmp/hip-stub.o -o hip-rdc-app

# ---- 4. omp-app: OpenMP through clang-linker-wrapper ---------------------------------------------
# Compiled with -nogpulib, but linked without it: the device link needs the OpenMP device
# runtime (libomptarget.devicertl.a from libomp-19-dev) for __kmpc_target_init and friends.
"$CLANG" -fopenmp --offload-arch=gfx906,gfx90a -nogpulib -O2 -c ../src/omp.c -o tmp/omp.o
"$CLANG" -fopenmp --offload-arch=gfx906,gfx90a -fuse-ld=lld -L/usr/lib/llvm-19/lib \
  tmp/omp.o -o omp-app
# The same as bitcode the OpenMP runtime compiles when it loads it (-fopenmp-target-jit).
"$CLANG" -fopenmp --offload-arch=gfx906,gfx90a -fopenmp-target-jit -nogpulib -O2 -c ../src/omp.c \
  -o tmp/omp-jit.o
"$CLANG" -fopenmp --offload-arch=gfx906,gfx90a -fopenmp-target-jit -fuse-ld=lld \
  -L/usr/lib/llvm-19/lib tmp/omp-jit.o -o omp-jit-app

# ---- 5. HIP host objects for other ELF hosts ---------------------------------------------------
"$CLANG" "${HIP[@]}" --target=aarch64-linux-gnu --offload-arch=gfx90a -c -cuid=linked-arm \
  ../src/kernel.hip -o aarch64-kernel.o
"$CLANG" "${HIP[@]}" --target=i386-linux-gnu --offload-arch=gfx90a -c -cuid=linked-386 \
  ../src/kernel.hip -o i386-kernel.o

# ---- 6. COFF objects and a PE image --------------------------------------------------------------
"$CLANG" "${HIP[@]}" "${WIN[@]}" --offload-arch=gfx906 -c -cuid=linked-msvc \
  ../src/kernel.hip -o kernel-msvc.obj
# -nogpuinc keeps the device compile away from the OpenMP wrapper headers, which include the
# Linux <stdint.h> and fail for a Windows host.
"$CLANG" -fopenmp "${WIN[@]}" --offload-arch=gfx906 -nogpulib -nogpuinc -O2 -c ../src/omp.c \
  -o omp-msvc.obj
"$CLANG" "${HIP[@]}" "${WIN[@]}" "${TWO[@]}" -c -cuid=linked-exe-a ../src/kernel.hip \
  -o tmp/exe-a.obj
"$CLANG" "${HIP[@]}" "${WIN[@]}" --offload-arch=gfx90a --offload-compress -c -cuid=linked-exe-b \
  ../src/vadd.hip -o tmp/exe-b.obj
for c in main hip-stub win-crt; do
  "$CLANG" "${WIN[@]}" -O2 -c "$c.c" -o "tmp/$c.obj"
done
"$LLD_LINK" -nodefaultlib -entry:main -subsystem:console -Brepro tmp/main.obj tmp/exe-a.obj \
  tmp/exe-b.obj tmp/hip-stub.obj tmp/win-crt.obj -out:hip-app.exe

# ---- 7. Mach-O: assembled, since clang 19 cannot emit offload sections for Mach-O ---------------
# Copied to .o first: the packager takes the image kind from the extension (.o: elf).
for arch in gfx90a gfx906; do
  cp "../dev/kernel-$arch.hsaco" "tmp/kernel-$arch.o"
  "$PACKAGER" -o "tmp/$arch.bin" \
    --image=file="tmp/kernel-$arch.o,triple=amdgcn-amd-amdhsa,arch=$arch,kind=hip"
done
macho() { # arch image output
  cat > tmp/macho.s <<EOF
	.text
	.globl	_host_value
_host_value:
	ret

	.section	__LLVM,__offloading
	.p2align	3
	.incbin	"$2"
EOF
  "$MC" -triple="$1-apple-macos" -filetype=obj tmp/macho.s -o "$3"
}
macho arm64 tmp/gfx90a.bin macho-offload.o
macho x86_64 tmp/gfx906.bin macho-offload-x86_64.o
"$LIPO" -create macho-offload-x86_64.o macho-offload.o -output macho-universal

# ---- 8. nested.a: an OpenMP object and a HIP object --------------------------------------------
cp ../openmp/omp.o tmp/omp-openmp.o
"$AR" rcD nested.a tmp/omp-openmp.o tmp/hip-a.o

# ---- 9. bundle-in-binary.bin: OffloadBinaries whose images are bundles ---------------------------
# The packager takes the image kind from the file extension: .o gives elf, .fatbin fatbinary.
cp ../bundles/kernel-hip-z.o tmp/kernel-hip-z.fatbin
"$PACKAGER" -o bundle-in-binary.bin \
  --image=file=../bundles/kernel-hip.o,triple=amdgcn-amd-amdhsa,arch=gfx906,kind=hip \
  --image=file=tmp/kernel-hip-z.fatbin,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=hip

# ---- 10. CUDA: a hand-made fat binary embedded by clang's CUDA host compile --------------------
"$MC" -triple=x86_64-linux-gnu -filetype=obj cuda-fatbin.s -o tmp/cuda-fatbin-mc.o
"$OBJCOPY" --dump-section .nv_fatbin=cuda.fatbin tmp/cuda-fatbin-mc.o
"$CLANG" -x cuda --cuda-host-only -nocudainc -nocudalib --cuda-gpu-arch=sm_80 -O2 \
  -Xclang -fcuda-include-gpubinary -Xclang cuda.fatbin -c kscale.cu -o cuda-fatbin.o

# =================================================================================================
# Find what each file holds, for README.md.

fail() { echo "make.sh: $*" >&2; touch tmp/failed; exit 1; }
hex() { printf '0x%x' "$1"; }
u16() { od -An -tu2 -j "$2" -N2 "$1" | tr -d ' '; }
u32() { od -An -tu4 -j "$2" -N4 "$1" | tr -d ' '; }
u64() { od -An -tu8 -j "$2" -N8 "$1" | tr -d ' '; }
# all_zero FILE OFF LEN: the LEN bytes at OFF are zero.
all_zero() { [ "$3" -eq 0 ] || ! od -An -tx1 -v -j "$2" -N "$3" "$1" | tr -d ' \n' | grep -q '[^0]'; }
# hits FILE PERL-REGEX LO HI: offsets of the pattern in [LO, HI).
hits() {
  grep -obUaP "$2" "$1" | cut -d: -f1 | while read -r o; do
    if [ "$o" -ge "$3" ] && [ "$o" -lt "$4" ]; then echo "$o"; fi
  done || true
}
# Section "OFF SIZE" (decimal) by name. ELF: llvm-readelf -S; COFF, PE, Mach-O: llvm-readobj -S
# (for a PE image, the size is the VirtualSize, not the raw size padded to the file alignment).
sec_elf() {
  local off size
  read -r off size < <("$READELF" -SW "$1" | sed -n 's/^ *\[ *[0-9]*\] //p' |
    awk -v n="$2" '$1 == n { print $4, $5; exit }')
  [ -n "${off:-}" ] && echo $((16#$off)) $((16#$size))
}
sec_readobj() {
  local off size vsize
  read -r off size vsize < <("$READOBJ" -S "$1" | awk -v n="$2" '
    /^ *Name: / { name = $2; vsize = 0; off = ""; size = "" }
    /^ *VirtualSize: / { vsize = $2 }
    /^ *(RawDataSize|Size): / { size = $2 }
    /^ *(PointerToRawData|Offset): / { off = $2 }
    /^ *}/ && name == n && off != "" { print off, size, vsize; exit }')
  [ -n "${off:-}" ] || return 0
  if [ $((vsize)) -gt 0 ]; then echo $((off)) $((vsize)); else echo $((off)) $((size)); fi
}
# bundle_end FILE OFF: end of the uncompressed bundle at OFF (end of its last entry).
bundle_end() {
  local f=$1 b=$2 n p i end=0 e
  n=$(u64 "$f" $((b + 24)))
  p=$((b + 32))
  for ((i = 0; i < n; i++)); do
    e=$(($(u64 "$f" "$p") + $(u64 "$f" $((p + 8)))))
    ((e > end)) && end=$e
    p=$((p + 24 + $(u64 "$f" $((p + 16)))))
  done
  echo $((b + (end > p - b ? end : p - b)))
}
# ccob_end FILE OFF: the header's total size (u32 in version 2, u64 in version 3).
ccob_end() {
  case $(u16 "$1" $(($2 + 4))) in
    2) echo $(($2 + $(u32 "$1" $(($2 + 8))))) ;;
    3) echo $(($2 + $(u64 "$1" $(($2 + 8))))) ;;
    *) fail "unexpected CCOB version at $2 in $1" ;;
  esac
}
# Entry IDs of the bundle or CCOB in FILE[OFF, END), as clang-offload-bundler-19 -list says.
bundle_ids() {
  tail -c +$(($2 + 1)) "$1" | head -c $(($3 - $2)) > tmp/one.bundle
  "$BUNDLER" -list -type=o -input=tmp/one.bundle | sort | sed 's/.*/`&`/' | paste -sd, - |
    sed 's/,/, /g'
}
# Image of the OffloadBinary in FILE[OFF, END), as llvm-objdump-19 --offloading says.
ob_image() {
  tail -c +$(($2 + 1)) "$1" | head -c $(($3 - $2)) > tmp/one.bin
  "$OBJDUMP" --offloading tmp/one.bin | awk '
    $1 == "kind" { $1 = ""; kind = substr($0, 2) } $1 == "arch" { arch = $2 }
    $1 == "triple" { triple = $2 } $1 == "producer" { producer = $2 }
    END { printf "%s %s (kind %s, producer %s)", triple, arch, kind, producer }'
}
# contents FILE OFF SIZE: the bundles, CCOBs and OffloadBinaries in FILE[OFF, OFF+SIZE), one
# after another, with the zero padding between them; every gap is checked to be zeros.
contents() {
  local f=$1 lo=$2 hi=$(($2 + $3)) o end prev=$2 out=()
  while read -r o; do
    [ -n "$o" ] || continue
    # A magic inside the previous item is part of it (a nested container).
    [ "$o" -ge "$prev" ] || continue
    all_zero "$f" "$prev" $((o - prev)) || fail "non-zero gap in $f at $prev"
    [ "$o" -gt "$prev" ] && out+=("$((o - prev)) zero bytes")
    case $(head -c $((o + 4)) "$f" | tail -c 4 | od -An -tx1 | tr -d ' ') in
      5f5f434c) end=$(bundle_end "$f" "$o")
        out+=("bundle $(hex "$o")..$(hex "$end") [$(bundle_ids "$f" "$o" "$end")]") ;;
      43434f42) end=$(ccob_end "$f" "$o")
        out+=("CCOB v$(u16 "$f" $((o + 4))) $(hex "$o")..$(hex "$end") [$(bundle_ids "$f" "$o" "$end")]") ;;
      10ff10ad) end=$((o + $(u64 "$f" $((o + 8)))))
        out+=("OffloadBinary $(hex "$o")..$(hex "$end") [$(ob_image "$f" "$o" "$end")]") ;;
    esac
    prev=$end
  done < <({ hits "$f" '__CLANG_OFFLOAD_BUNDLE__' "$lo" "$hi"; hits "$f" 'CCOB' "$lo" "$hi"
    hits "$f" '\x10\xff\x10\xad' "$lo" "$hi"; } | sort -n)
  [ "$prev" -le "$hi" ] || fail "contents run past the section in $f"
  all_zero "$f" "$prev" $((hi - prev)) || fail "non-zero tail in $f at $prev"
  [ "$hi" -gt "$prev" ] && out+=("$((hi - prev)) zero bytes")
  local IFS=';'
  echo "${out[*]}" | sed 's/;/; /g'
}
# where KIND FILE SECTION [BASE DATA]: "`SECTION` at OFF, size SIZE: contents". With BASE and
# DATA, FILE is a copy of the part of DATA at BASE (an archive member, a Mach-O slice): the
# section is found in FILE, its contents are read from DATA, and offsets are in DATA.
where() {
  local kind=$1 f=$2 s=$3 base=${4:-0} data=${5:-$2} off size
  if [ "$kind" = elf ]; then read -r off size < <(sec_elf "$f" "$s")
  else read -r off size < <(sec_readobj "$f" "$s"); fi
  [ -n "${off:-}" ] || fail "no section $s in $f"
  printf '`%s` at %s, size %s: %s' "$s" "$(hex $((off + base)))" "$(hex "$size")" \
    "$(contents "$data" $((off + base)) "$size")"
}
# wrappers KIND FILE SECTION MAGIC-REGEX: where the registration structures are and what their
# pointer field holds; for ELF files with dynamic relocations, also the addend of the
# R_X86_64_RELATIVE relocation that fills the field in at load time.
wrappers() {
  local kind=$1 f=$2 s=$3 re=$4 off size o ptr addr=0 rel out=()
  if [ "$kind" = elf ]; then
    read -r off size < <(sec_elf "$f" "$s")
    addr=$("$READELF" -SW "$f" | sed -n 's/^ *\[ *[0-9]*\] //p' | awk -v n="$s" '$1 == n { print $3 }')
    addr=$((16#$addr))
  else read -r off size < <(sec_readobj "$f" "$s"); fi
  for o in $(hits "$f" "$re" "$off" $((off + size))); do
    if [ "$kind" = elf ] && [ "$(head -c 5 "$f" | tail -c 1 | od -An -tu1 | tr -d ' ')" = 1 ]; then
      ptr=$(u32 "$f" $((o + 8)))
    else
      ptr=$(u64 "$f" $((o + 8)))
    fi
    rel=
    if [ "$kind" = elf ]; then
      rel=$("$READELF" -rW "$f" | awk -v p="$(printf '%016x' $((addr + o - off + 8)))" \
        '($1 "") == (p "") && $3 == "R_X86_64_RELATIVE" { print $4 }')
    fi
    out+=("$(hex "$o") -> $(hex "$ptr")${rel:+ (R_X86_64_RELATIVE at $(hex $((addr + o - off + 8))), addend $(hex $((16#$rel))))}")
  done
  local IFS=';'
  printf '`%s` at %s: %s' "$s" "$(hex "$off")" "$(echo "${out[*]}" | sed 's/;/, /g')"
}
# Archive member "NAME OFF SIZE" (data offset) from the GNU archive header list.
member() {
  local f=$1 name=$2 p=8 size
  while [ "$p" -lt "$(stat -c %s "$f")" ]; do
    size=$(head -c $((p + 58)) "$f" | tail -c 10 | tr -d ' ')
    if [ "$(head -c $((p + 16)) "$f" | tail -c 16 | tr -d ' ')" = "$name/" ]; then
      echo $((p + 60)) "$size"; return
    fi
    p=$((p + 60 + size + size % 2))
  done
  fail "no member $name in $f"
}
slice() { # universal FILE ARCH: offset of the slice
  "$OBJDUMP" --macho --universal-headers "$1" |
    awk -v a="$2" '$1 == "architecture" { cur = $2 } cur == a && $1 == "offset" { print $2; exit }'
}
magic_at() { hits "$1" "$2" 0 "$(stat -c %s "$1")" | while read -r o; do hex "$o"; done | paste -sd, -; }

A_OMP=$(member nested.a omp-openmp.o)
A_HIP=$(member nested.a hip-a.o)
S_X86=$(slice macho-universal x86_64)
S_ARM=$(slice macho-universal arm64)
# Copies of the archive members, to find their sections in.
extract() { tail -c +$(($2 + 1)) "$1" | head -c "$3" > "$4"; }
extract nested.a ${A_OMP% *} ${A_OMP#* } tmp/m-omp.o
extract nested.a ${A_HIP% *} ${A_HIP#* } tmp/m-hip.o
cmp -s tmp/m-omp.o ../openmp/omp.o && cmp -s tmp/m-hip.o tmp/hip-a.o ||
  fail "the members of nested.a are not the objects put in"
cmp -s <(tail -c +$((S_X86 + 1)) macho-universal | head -c "$(stat -c %s macho-offload-x86_64.o)") \
  macho-offload-x86_64.o && cmp -s <(tail -c +$((S_ARM + 1)) macho-universal |
  head -c "$(stat -c %s macho-offload.o)") macho-offload.o ||
  fail "the slices of macho-universal are not the objects put in"
{
  cat <<EOF
# Linked and foreign-format samples

Made by \`make.sh\` in this folder with Debian's LLVM 19 (\`$("$CLANG" --version | head -n1)\`),
gcc's C runtime files and libomp-19-dev. Run \`./samples/linked/make.sh\` to make them again; it
works here with relative paths and fixed \`-cuid=\` values, so the files are the same on every
run. The exception is the OpenMP code (\`omp-app\`, \`omp-msvc.obj\`, \`nested.a\`): clang names
OpenMP offload entries after the device and inode numbers of \`../src/omp.c\`
(\`__omp_offloading_<dev>_<inode>_main_l4\`), so their sizes and offsets change with the
checkout. The tables below are written by \`make.sh\` from what it finds in the files.

There is no ROCm, CUDA or GPU here. HIP is compiled with \`-nogpulib -nogpuinc\` and linked
against \`hip-stub.c\`, which defines the HIP runtime entry points the host code calls
(\`__hipRegisterFatBinary\`, \`__hipRegisterFunction\`, \`__hipRegisterVar\`,
\`__hipUnregisterFatBinary\`, \`__hipPushCallConfiguration\`, \`__hipPopCallConfiguration\`,
\`hipLaunchKernel\`) as functions that do nothing. Sources: \`main.c\` (an empty \`main\`),
\`hip-stub.c\`, \`win-crt.c\` (\`atexit\` and \`_fltused\` for a link without the Windows C
runtime), \`kscale.cu\` (a CUDA kernel) and \`cuda-fatbin.s\` (a hand-made CUDA fat binary); the
kernels are \`../src/kernel.hip\`, \`../src/vadd.hip\` and \`../src/omp.c\`.

## How the files were made

| file | how it was made |
| --- | --- |
| \`hip-app\` | x86-64 ELF executable, \`clang-19 -fuse-ld=lld\` (ld.lld-19) from \`main.c\`, three HIP objects compiled separately (old driver, non-rdc) and \`hip-stub.c\`: A = \`kernel.hip\` for gfx906 and gfx90a; B = \`vadd.hip\` for \`gfx90a:xnack+\` and \`gfx90a:xnack-\`; C = \`kernel.hip\` (symbols renamed with \`-D\`) for gfx906 and gfx90a with \`--offload-compress\` |
| \`libhip.so\` | x86-64 ELF shared library, \`-shared -fPIC\` (ld.lld-19) from two \`-fPIC\` HIP objects: \`vadd.hip\` for gfx906 and gfx90a, and \`kernel.hip\` for gfx90a with \`--offload-compress\`; the HIP entry points are left undefined |
| \`hip-rdc-app\` | x86-64 ELF executable from two \`-fgpu-rdc\` objects (\`kernel.hip\`, \`vadd.hip\`, gfx906 and gfx90a), \`clang-19 --hip-link -no-hip-rt -fgpu-rdc\`: the driver links the device code of both objects (lld for amdgcn, no device libraries needed) and bundles it into one bundle. \`-no-hip-rt\` leaves out \`-lamdhip64\`, which does not exist here |
| \`omp-app\` | x86-64 ELF executable, \`clang-19 -fopenmp --offload-arch=gfx906,gfx90a\` (new driver, clang-linker-wrapper-19). The object is compiled with \`-nogpulib\`; the link is not, because the device link needs the OpenMP device runtime \`libomptarget.devicertl.a\` from libomp-19-dev (\`-L/usr/lib/llvm-19/lib\`) for \`__kmpc_target_init\` and the like. The images are linked AMDGPU code objects. It is not meant to run: \`libomptarget.so.19.1\` is in \`/usr/lib/llvm-19/lib\`, which is not on the library path |
| \`omp-jit-app\` | the same with \`-fopenmp-target-jit\`: its images are LLVM bitcode, which the OpenMP runtime compiles for the device when it loads them |
| \`aarch64-kernel.o\` | \`kernel.hip\`, \`--target=aarch64-linux-gnu --offload-arch=gfx90a -c\`: an AArch64 ELF host object |
| \`i386-kernel.o\` | the same with \`--target=i386-linux-gnu\`: ELF32, a 16-byte wrapper and REL (not RELA) relocations |
| \`kernel-msvc.obj\` | \`kernel.hip\`, \`--target=x86_64-pc-windows-msvc --offload-arch=gfx906 -c\`: a COFF object |
| \`omp-msvc.obj\` | \`omp.c\`, \`-fopenmp --target=x86_64-pc-windows-msvc --offload-arch=gfx906 -nogpulib -nogpuinc -c\` (without \`-nogpuinc\` the device compile includes the Linux \`<stdint.h>\` and fails) |
| \`hip-app.exe\` | PE32+ image, \`lld-link-19 -nodefaultlib -entry:main -subsystem:console -Brepro\` from \`main.c\`, \`hip-stub.c\`, \`win-crt.c\` and two HIP objects for x86_64-pc-windows-msvc: \`kernel.hip\` for gfx906 and gfx90a, \`vadd.hip\` for gfx90a with \`--offload-compress\` |
| \`macho-offload.o\` | arm64 Mach-O object, \`llvm-mc-19 -triple=arm64-apple-macos -filetype=obj\` from a \`.s\` file with a \`_host_value\` function and \`.section __LLVM,__offloading\` + \`.incbin\` of an OffloadBinary made by \`clang-offload-packager-19 --image=file=kernel-gfx90a.o,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=hip\`, \`kernel-gfx90a.o\` being a copy of \`../dev/kernel-gfx90a.hsaco\` (the packager takes the image kind from the extension: \`.o\` gives \`elf\`; clang 19 cannot make Mach-O offload objects) |
| \`macho-offload-x86_64.o\` | the same for \`x86_64-apple-macos\`, with a copy of \`../dev/kernel-gfx906.hsaco\` (arch gfx906) |
| \`macho-universal\` | \`llvm-lipo-19 -create macho-offload-x86_64.o macho-offload.o\`: a universal (fat) Mach-O file |
| \`nested.a\` | GNU archive, \`llvm-ar-19 rcD\` of \`omp-openmp.o\` (a copy of \`../openmp/omp.o\`: \`.llvm.offloading\`, bitcode images) and \`hip-a.o\` (object A of \`hip-app\`: \`.hip_fatbin\`) |
| \`bundle-in-binary.bin\` | \`clang-offload-packager-19\` with two images that are themselves clang offload bundles: \`../bundles/kernel-hip.o\` (a plain bundle, gfx906 and gfx90a code objects, arch key gfx906) and \`../bundles/kernel-hip-z.o\` copied to \`kernel-hip-z.fatbin\` (a CCOB, arch key gfx90a). The packager takes the image kind from the file extension: \`.o\` gives \`elf\`, \`.fatbin\` gives \`fatbinary\` |
| \`cuda.fatbin\` | \`cuda-fatbin.s\` assembled by \`llvm-mc-19\` and dumped with \`llvm-objcopy-19 --dump-section .nv_fatbin=\`: a CUDA fat binary, header (u32 magic 0xBA55ED50, u16 version 1, u16 header size 16, u64 size of the rest = 0x88) and one PTX entry (entry header 0x40 bytes: kind 1, 0x0101, header size 0x40, payload size 0x48, version 7.0, sm_80, flags 0x11) with 0x48 bytes of PTX text |
| \`cuda-fatbin.o\` | \`kscale.cu\`, \`clang-19 -x cuda --cuda-host-only -nocudainc -nocudalib --cuda-gpu-arch=sm_80 -Xclang -fcuda-include-gpubinary -Xclang cuda.fatbin -c\`: a real clang CUDA host object embedding \`cuda.fatbin\` |

## Where the device code is

Offsets are file offsets, in hex; \`a..b\` is the half-open byte range of one bundle, CCOB or
OffloadBinary. Section offsets and sizes are from \`llvm-readelf-19 -S\` (ELF) or
\`llvm-readobj-19 -S\` (COFF, PE, Mach-O; for PE the VirtualSize, for Mach-O plus the slice
offset); the starts are where the magics \`__CLANG_OFFLOAD_BUNDLE__\`, \`CCOB\` and
\`10 FF 10 AD\` are; the ends are from the headers (the end of the last entry of a bundle, the
total size of a CCOB, the size field of an OffloadBinary). Entry IDs are what
\`clang-offload-bundler-19 -list\` says (sorted) for those bytes, images what \`llvm-objdump-19
--offloading\` says. The gaps are all zero bytes.

| file | device code |
| --- | --- |
| \`hip-app\` | $(where elf hip-app .hip_fatbin) |
| \`libhip.so\` | $(where elf libhip.so .hip_fatbin) |
| \`hip-rdc-app\` | $(where elf hip-rdc-app .hip_fatbin) |
| \`omp-app\` | $(where elf omp-app .llvm.offloading) |
| \`aarch64-kernel.o\` | $(where elf aarch64-kernel.o .hip_fatbin) |
| \`i386-kernel.o\` | $(where elf i386-kernel.o .hip_fatbin) |
| \`kernel-msvc.obj\` | $(where coff kernel-msvc.obj .hip_fatbin) |
| \`omp-msvc.obj\` | $(where coff omp-msvc.obj .llvm.offloading) |
| \`hip-app.exe\` | $(where coff hip-app.exe .hip_fat) |
| \`macho-offload.o\` | $(where coff macho-offload.o __offloading) |
| \`macho-offload-x86_64.o\` | $(where coff macho-offload-x86_64.o __offloading) |
| \`macho-universal\` | x86_64 slice at $(hex "$S_X86"): $(where coff macho-offload-x86_64.o __offloading "$S_X86" macho-universal) — arm64 slice at $(hex "$S_ARM"): $(where coff macho-offload.o __offloading "$S_ARM" macho-universal) |
| \`nested.a\` | member \`omp-openmp.o\` (data at $(hex "${A_OMP% *}"), size $(hex "${A_OMP#* }")): $(where elf tmp/m-omp.o .llvm.offloading "${A_OMP% *}" nested.a) — member \`hip-a.o\` (data at $(hex "${A_HIP% *}"), size $(hex "${A_HIP#* }")): $(where elf tmp/m-hip.o .hip_fatbin "${A_HIP% *}" nested.a) |
| \`bundle-in-binary.bin\` | $(contents bundle-in-binary.bin 0 "$(stat -c %s bundle-in-binary.bin)"); inside them: bundle at $(magic_at bundle-in-binary.bin '__CLANG_OFFLOAD_BUNDLE__'), CCOB at $(magic_at bundle-in-binary.bin 'CCOB') |
| \`cuda.fatbin\` | CUDA fat binary at $(magic_at cuda.fatbin '\x50\xed\x55\xba'), $(hex "$(stat -c %s cuda.fatbin)") bytes (header 0x10, entry header 0x40, PTX 0x48) |
| \`cuda-fatbin.o\` | \`.nv_fatbin\` at $(hex "$(sec_elf cuda-fatbin.o .nv_fatbin | cut -d' ' -f1)"), size $(hex "$(sec_elf cuda-fatbin.o .nv_fatbin | cut -d' ' -f2)"): the bytes of \`cuda.fatbin\` (magic at $(magic_at cuda-fatbin.o '\x50\xed\x55\xba')) |

In \`nested.a\` the bitcode images inside the OpenMP binaries are listed by \`llvm-objdump-19
--offloading\` as kind \`llvm ir\`. In \`bundle-in-binary.bin\` the first image, at 0x90, is the
plain bundle; the second binary's image is the CCOB.

## Registration structures

The HIP wrapper (\`__hip_fatbin_wrapper\`: u32 magic 0x48495046, bytes \`46 50 49 48\` "FPIH",
u32 version 1, pointer to the bundle, pointer 0) and the CUDA one (\`__cuda_fatbin_wrapper\`,
magic 0x466243B1, bytes \`b1 43 62 46\`). \`x -> y\`: wrapper at file offset x, its pointer field
holds y. In relocatable objects y is 0 and a relocation against \`.hip_fatbin\` fills it in. The
ELF executables are position-independent (Debian's clang-19 links PIE by default), and ld.lld
does not write the value of a dynamic relocation into the place: in \`hip-app\`,
\`hip-rdc-app\` and \`libhip.so\` y is 0 and the \`R_X86_64_RELATIVE\` relocation in
\`.rela.dyn\` holds the bundle's virtual address as its addend (GNU ld would also write it
into the place). There the \`.hip_fatbin\` address equals its file offset, so the addends are
the file offsets of the bundles. The PE image has the virtual address in place (and a base
relocation in \`.reloc\`).

| file | wrappers |
| --- | --- |
| \`hip-app\` | $(wrappers elf hip-app .hipFatBinSegment 'FPIH') |
| \`libhip.so\` | $(wrappers elf libhip.so .hipFatBinSegment 'FPIH') |
| \`hip-rdc-app\` | $(wrappers elf hip-rdc-app .hipFatBinSegment 'FPIH') (both TUs point at the one device-linked bundle) |
| \`aarch64-kernel.o\` | $(wrappers elf aarch64-kernel.o .hipFatBinSegment 'FPIH') |
| \`i386-kernel.o\` | $(wrappers elf i386-kernel.o .hipFatBinSegment 'FPIH') (16 bytes: two 4-byte pointers) |
| \`kernel-msvc.obj\` | $(wrappers coff kernel-msvc.obj .hipFatBinSegment 'FPIH') |
| \`hip-app.exe\` | $(wrappers coff hip-app.exe .hipFatB 'FPIH') (image base 0x140000000) |
| \`cuda-fatbin.o\` | $(wrappers elf cuda-fatbin.o .nvFatBinSegment '\xb1\x43\x62\x46') |

## Section names, flags and alignment

EOF
  echo '| file | section | type / characteristics | flags | align |'
  echo '| --- | --- | --- | --- | --- |'
  for f in hip-app libhip.so hip-rdc-app omp-app aarch64-kernel.o i386-kernel.o cuda-fatbin.o; do
    "$READELF" -SW "$f" | sed -n 's/^ *\[ *[0-9]*\] //p' |
      awk -v f="$f" '$1 ~ /^(\.hip_fatbin|\.hipFatBinSegment|\.hip_gpubin_handle|\.llvm\.offloading|\.nv_fatbin|\.nvFatBinSegment)$/ {
        flg = (NF == 10) ? $7 : "-"; printf "| `%s` | `%s` | %s | %s | %s |\n", f, $1, $2, flg, $NF }'
  done
  for f in kernel-msvc.obj omp-msvc.obj hip-app.exe; do
    "$READOBJ" -S "$f" | awk -v f="$f" '
      /^ *Name: / { name = $2 }
      /^ *Characteristics \[/ { ch = $3; gsub(/[()]/, "", ch) }
      /IMAGE_SCN_ALIGN_/ { al = $1; sub(/IMAGE_SCN_ALIGN_/, "", al); sub(/BYTES/, "", al) }
      /^ *}/ && name ~ /^\.(hip|llvm\.off)/ { printf "| `%s` | `%s` | %s | | %s |\n", f, name, ch, (al == "" ? "-" : al); al = "" }
      /^ *}/ { name = ""; al = "" }'
  done
  for f in macho-offload.o macho-offload-x86_64.o; do
    "$READOBJ" -S "$f" | awk -v f="$f" '
      /^ *Name: / { name = $2 } /^ *Segment: / { seg = $2 } /^ *Alignment: / { al = 2 ^ $2 }
      /^ *Type: / { ty = $2 }
      /^ *}/ && name == "__offloading" { printf "| `%s` | `%s,%s` | %s | | %d |\n", f, seg, name, ty, al }'
  done
  cat <<'EOF'

## What to expect

- Linkers concatenate the `.hip_fatbin` input sections, each padded to its 4096 alignment with
  zeros, so a linked `.hip_fatbin` is a run of bundles and CCOBs on 4096 boundaries (relative to
  the section start, which is itself 4096-aligned) with zero padding in between. Only the last
  one is not followed by padding; the section ends where it ends.
- After `--hip-link -fgpu-rdc` there is one bundle per device-link group (here one), and every
  TU's wrapper points at it. The executable also has `.hip_gpubin_handle`.
- In `omp-app` the linker wrapper re-emits the images in `.llvm.offloading` with type
  `SHT_LLVM_OFFLOADING` and flags `A` (allocated), so the section survives the final link; in
  objects it is `E` (excluded) and the linker drops it.
- COFF objects keep the full names `.hip_fatbin`, `.hipFatBinSegment` and `.llvm.offloading`
  (through the string table, `/192`-style names), with `IMAGE_SCN_ALIGN_4096BYTES` on
  `.hip_fatbin`, but the data is not 4096-aligned in the file (`PointerToRawData` is just where
  the writer was). `.hipFatBinSegment` is read-only in COFF (0x40400040). A PE image has no
  string table for section names: lld-link truncates them to `.hip_fat` and `.hipFatB`. The raw
  size is padded to the file alignment (512), so the bundle run ends at the VirtualSize.
- Mach-O sections are `segment,section` (`__LLVM,__offloading`); `llvm-objdump-19 --offloading`
  refuses Mach-O. In `macho-universal` each slice's section offset is relative to its slice.
EOF
} > README.md
[ ! -e tmp/failed ] || { echo "make.sh: README.md is incomplete" >&2; exit 1; }

echo "linked: $(du -ch "${OUTPUTS[@]}" | tail -1 | cut -f1)"
