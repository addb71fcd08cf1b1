#!/usr/bin/env bash
# Makes the sample files in this folder with Debian's LLVM 19 tools (clang-19,
# clang-offload-bundler-19, llvm-objcopy-19, llvm-ar-19) and writes README.md.
#
# Run from anywhere: ./samples/make.sh. It works inside samples/ with relative paths only, so
# no absolute path ends up in any file, and it is deterministic: running it twice gives the
# same bytes. Outputs: dev/ host/ clang/ bundles/ damaged/ and README.md (src/ is input).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"

CLANG=${CLANG:-clang-19}
BUNDLER=${BUNDLER:-clang-offload-bundler-19}
OBJCOPY=${OBJCOPY:-llvm-objcopy-19}
AR=${AR:-llvm-ar-19}

for tool in "$CLANG" "$BUNDLER" "$OBJCOPY" "$AR"; do
  command -v "$tool" >/dev/null || { echo "make.sh: $tool not found" >&2; exit 1; }
done

# Keep the environment from changing what the bundler writes.
unset OFFLOAD_BUNDLER_COMPRESS OFFLOAD_BUNDLER_VERBOSE OFFLOAD_BUNDLER_COMPRESSION_LEVEL \
  OFFLOAD_BUNDLER_IGNORE_ENV_VAR COMPRESSED_BUNDLE_FORMAT_VERSION
export SOURCE_DATE_EPOCH=0 ZERO_AR_DATE=1

rm -rf dev host clang bundles
mkdir -p dev host clang bundles

# HIP without the HIP headers or device libraries: the sources declare what they need.
HIP=(-x hip -nogpulib -nogpuinc -O2)
DEV=("${HIP[@]}" --cuda-device-only --no-gpu-bundle-output)
HOST=("${HIP[@]}" --cuda-host-only --offload-arch=gfx906)

# An arch with features as it appears in file names: ':' becomes '_' (as LLVM names archive
# members).
fname() { printf '%s' "${1//:/_}"; }

# ---- device code: one target per file, not bundled -------------------------------------
for arch in gfx906 gfx90a gfx90a:xnack+ gfx90a:xnack- gfx908:sramecc+:xnack-; do
  f=$(fname "$arch")
  "$CLANG" "${DEV[@]}" --offload-arch="$arch" -c -cuid=kernel src/kernel.hip -o "dev/kernel-$f.hsaco"
done
for arch in gfx906 gfx90a; do
  "$CLANG" "${DEV[@]}" --offload-arch="$arch" -c -emit-llvm -cuid=kernel src/kernel.hip -o "dev/kernel-$arch.bc"
  "$CLANG" "${DEV[@]}" --offload-arch="$arch" -S -emit-llvm -cuid=kernel src/kernel.hip -o "dev/kernel-$arch.ll"
  "$CLANG" "${DEV[@]}" --offload-arch="$arch" -S -cuid=kernel src/kernel.hip -o "dev/kernel-$arch.s"
  "$CLANG" "${DEV[@]}" --offload-arch="$arch" -E -cuid=kernel src/kernel.hip -o "dev/kernel-$arch.hipi"
  "$CLANG" "${DEV[@]}" --offload-arch="$arch" -MM -MT "kernel-$arch.o" src/kernel.hip -o "dev/kernel-$arch.d"
  "$CLANG" "${DEV[@]}" --offload-arch="$arch" -c -cuid=vadd src/vadd.hip -o "dev/vadd-$arch.hsaco"
  # Relocatable device object (-fgpu-rdc keeps it unlinked).
  "$CLANG" "${DEV[@]}" --offload-arch="$arch" -fgpu-rdc -c -emit-llvm -cuid=vadd src/vadd.hip -o "dev/vadd-$arch.bc"
done
# OpenMP device bitcode for gfx906.
"$CLANG" -fopenmp --offload-arch=gfx906 -nogpulib -O2 --offload-device-only -c src/omp.c \
  -o dev/omp-gfx906.bc

# ---- host code ---------------------------------------------------------------------------
"$CLANG" "${HOST[@]}" -c -emit-llvm -cuid=kernel src/kernel.hip -o host/kernel.bc
"$CLANG" "${HOST[@]}" -S -emit-llvm -cuid=kernel src/kernel.hip -o host/kernel.ll
"$CLANG" "${HOST[@]}" -S -cuid=kernel src/kernel.hip -o host/kernel.s
"$CLANG" "${HOST[@]}" -c -cuid=kernel src/kernel.hip -o host/kernel.o
"$CLANG" "${HOST[@]}" -E -cuid=kernel src/kernel.hip -o host/kernel.hipi
"$CLANG" "${HOST[@]}" -c -cuid=vadd src/vadd.hip -o host/vadd.o
"$CLANG" "${HOST[@]}" -MM -MT kernel.o src/kernel.hip -o host/kernel.d
"$CLANG" -fopenmp --offload-arch=gfx906 -nogpulib -O2 --offload-host-only -E src/omp.c -o host/omp.i
"$CLANG" -fopenmp --offload-arch=gfx906 -nogpulib -O2 --offload-host-only -c -emit-llvm src/omp.c \
  -o host/omp.bc

# ---- files clang itself bundles -------------------------------------------------------------
TWO=(--offload-arch=gfx906 --offload-arch=gfx90a)
# Host object with a .hip_fatbin section (a binary bundle, 4096-aligned, empty host entry).
"$CLANG" "${HIP[@]}" "${TWO[@]}" -c -cuid=kernel src/kernel.hip -o clang/kernel-fatbin.o
"$OBJCOPY" --dump-section .hip_fatbin=clang/kernel-fatbin.hip_fatbin clang/kernel-fatbin.o
# The same, compressed: .hip_fatbin holds a CCOB.
"$CLANG" "${HIP[@]}" "${TWO[@]}" --offload-compress -c -cuid=kernel src/kernel.hip -o clang/kernel-fatbin-z.o
"$OBJCOPY" --dump-section .hip_fatbin=clang/kernel-fatbin-z.hip_fatbin clang/kernel-fatbin-z.o
# Relocatable device code: an object bundle (__CLANG_OFFLOAD_BUNDLE__* sections) made through
# llvm-objcopy by the driver.
"$CLANG" "${HIP[@]}" "${TWO[@]}" -fgpu-rdc -c -cuid=vadd src/vadd.hip -o clang/vadd-rdc.o
# Device-only compile: the driver bundles the code objects with an empty host entry.
"$CLANG" "${HIP[@]}" "${TWO[@]}" --cuda-device-only -c -cuid=kernel src/kernel.hip -o clang/kernel-device.o
# Host and device together for -E, -S, -emit-llvm: the driver bundles the outputs.
"$CLANG" "${HIP[@]}" "${TWO[@]}" -E -cuid=kernel src/kernel.hip -o clang/kernel.hipi
"$CLANG" "${HIP[@]}" "${TWO[@]}" -S -emit-llvm -cuid=kernel src/kernel.hip -o clang/kernel.ll
"$CLANG" "${HIP[@]}" "${TWO[@]}" -S -cuid=kernel src/kernel.hip -o clang/kernel.s
"$CLANG" "${HIP[@]}" "${TWO[@]}" -c -emit-llvm -cuid=kernel src/kernel.hip -o clang/kernel.bc
# OpenMP host object with a .llvm.offloading section (OffloadBinary, not a bundle).
"$CLANG" -fopenmp --offload-arch=gfx906 -nogpulib -O2 -c src/omp.c -o clang/omp.o

# ---- bundles made by clang-offload-bundler-19 ---------------------------------------------------
B=bundles
H3=host-x86_64-unknown-linux          # what the HIP driver passes (3-field triple)
H4=host-x86_64-unknown-linux-gnu
D=hipv4-amdgcn-amd-amdhsa-
# The HIP driver's way: -type=o, an empty host from /dev/null, 4096 alignment.
"$BUNDLER" -type=o -bundle-align=4096 -targets="$H3,$D-gfx906,$D-gfx90a" \
  -input=/dev/null -input=dev/kernel-gfx906.hsaco -input=dev/kernel-gfx90a.hsaco \
  -output="$B/kernel-hip.o"
# Six entries (the StringMap order differs from the file order), hip and hipv4 kinds.
"$BUNDLER" -type=o -targets="$H3,$D-gfx906,$D-gfx90a:xnack+,$D-gfx90a:xnack-,$D-gfx908:sramecc+:xnack-,hip-amdgcn-amd-amdhsa--gfx90a" \
  -input=/dev/null -input=dev/kernel-gfx906.hsaco -input=dev/kernel-gfx90a_xnack+.hsaco \
  -input=dev/kernel-gfx90a_xnack-.hsaco -input=dev/kernel-gfx908_sramecc+_xnack-.hsaco \
  -input=dev/kernel-gfx90a.hsaco -output="$B/kernel-6.o"
# Host-less HIP bundle (every kind hip/hipv4), align 1. (With -type=o this crashes LLVM 19:
# input #0, a code object, parses as an object file and there is no host.)
"$BUNDLER" -type=bc -targets="$D-gfx906,hip-amdgcn-amd-amdhsa--gfx90a" \
  -input=dev/kernel-gfx906.bc -input=dev/kernel-gfx90a.bc -output="$B/kernel-nohost.bc"
# Bitcode: host plus two devices.
"$BUNDLER" -type=bc -targets="$H4,$D-gfx906,$D-gfx90a" \
  -input=host/kernel.bc -input=dev/kernel-gfx906.bc -input=dev/kernel-gfx90a.bc \
  -output="$B/kernel.bc"
# Text bundles.
"$BUNDLER" -type=ll -targets="$H4,$D-gfx906,$D-gfx90a" \
  -input=host/kernel.ll -input=dev/kernel-gfx906.ll -input=dev/kernel-gfx90a.ll -output="$B/kernel.ll"
"$BUNDLER" -type=s -targets="$H4,$D-gfx906" \
  -input=host/kernel.s -input=dev/kernel-gfx906.s -output="$B/kernel.s"
"$BUNDLER" -type=hipi -targets="$H4,$D-gfx906,$D-gfx90a" \
  -input=host/kernel.hipi -input=dev/kernel-gfx906.hipi -input=dev/kernel-gfx90a.hipi \
  -output="$B/kernel.hipi"
"$BUNDLER" -type=i -targets="$H4,openmp-amdgcn-amd-amdhsa--gfx906" \
  -input=host/omp.i -input=host/omp.i -output="$B/omp.i"
# OpenMP bitcode bundle.
"$BUNDLER" -type=bc -targets="$H4,openmp-amdgcn-amd-amdhsa--gfx906" \
  -input=host/omp.bc -input=dev/omp-gfx906.bc -output="$B/omp.bc"
# Object handler: a real host object, so llvm-objcopy adds __CLANG_OFFLOAD_BUNDLE__ sections.
"$BUNDLER" -type=o -targets="$H4,$D-gfx906,$D-gfx90a" \
  -input=host/vadd.o -input=dev/vadd-gfx906.hsaco -input=dev/vadd-gfx90a.hsaco \
  -output="$B/vadd-fat.o"
# Two spellings that standardise to the same ID: a bundle with a duplicate entry ID.
"$BUNDLER" -type=bc -targets="$H4,$D-gfx906,hipv4-amdgcn-amd-amdhsa-gfx906" \
  -input=host/kernel.bc -input=dev/kernel-gfx906.bc -input=dev/kernel-gfx90a.bc \
  -output="$B/dup-id.bc"
# Compressed bundles (zstd level 3, CCOB version 2): by flag and by environment variable.
"$BUNDLER" -type=bc -compress -targets="$H4,$D-gfx906,$D-gfx90a" \
  -input=host/kernel.bc -input=dev/kernel-gfx906.bc -input=dev/kernel-gfx90a.bc \
  -output="$B/kernel-z.bc"
OFFLOAD_BUNDLER_COMPRESS=1 "$BUNDLER" -type=o -bundle-align=4096 -targets="$H3,$D-gfx906,$D-gfx90a" \
  -input=/dev/null -input=dev/kernel-gfx906.hsaco -input=dev/kernel-gfx90a.hsaco \
  -output="$B/kernel-hip-z.o"
"$BUNDLER" -type=ll -compress -targets="$H4,$D-gfx906" \
  -input=host/kernel.ll -input=dev/kernel-gfx906.ll -output="$B/kernel-z.ll"
# Two CCOBs back to back (LLVM 19 cannot read this; newer versions can).
cat "$B/kernel-z.bc" "$B/kernel-hip-z.o" > "$B/two-ccob.bin"
# Two uncompressed bundles back to back (LLVM 19 reads only the first).
cat "$B/kernel-nohost.bc" "$B/kernel.bc" > "$B/two-bundles.bin"
# A heterogeneous device archive: an object bundle and a binary bundle as members
# (deterministic: zero dates, uids and modes).
rm -f "$B/libvadd.a"
"$AR" rcD "$B/libvadd.a" clang/vadd-rdc.o "$B/kernel-nohost.bc"

# ---- damaged copies --------------------------------------------------------------------------
bash damaged/make.sh

# ---- README -------------------------------------------------------------------------------------
compiler=$("$CLANG" --version | head -n1)
bundler=$("$BUNDLER" --version 2>&1 | grep -m1 -i version | sed 's/^ *//')
{
  cat <<EOF
# Sample files

Made by \`samples/make.sh\` with:

- compiler: \`$compiler\`
- bundler: \`$bundler\`

Run \`./samples/make.sh\` to make them again (it needs clang-19, clang-offload-bundler-19,
llvm-objcopy-19 and llvm-ar-19, and python3 for \`damaged/\`). The script works inside this folder with relative
paths and fixed \`-cuid=\` values, so the files hold no absolute path and are the same on every
run, with one exception: clang names OpenMP offload entries after the device and inode numbers
of the source file (\`__omp_offloading_<dev>_<inode>_main_l4\`), so \`dev/omp-gfx906.bc\`,
\`host/omp.bc\`, \`clang/omp.o\` and \`bundles/omp.bc\` change with the checkout. After making the
samples again, run \`tests/golden/make.sh\` too. HIP sources are compiled with
\`-nogpulib -nogpuinc\`: they declare what they need themselves.

## src/: sources

| file | what |
| --- | --- |
| \`kernel.hip\` | one HIP kernel and one device variable |
| \`vadd.hip\` | two HIP kernels and a static device function |
| \`omp.c\` | one OpenMP target region |

## dev/: device code, one target per file, not bundled

| file | what |
| --- | --- |
EOF
  for arch in gfx906 gfx90a gfx90a:xnack+ gfx90a:xnack- gfx908:sramecc+:xnack-; do
    echo "| \`kernel-$(fname "$arch").hsaco\` | AMDGPU code object (ELF shared object) for \`$arch\` |"
  done
  for arch in gfx906 gfx90a; do
    echo "| \`kernel-$arch.bc\` / \`.ll\` / \`.s\` / \`.hipi\` / \`.d\` | device bitcode, IR text, assembly, preprocessed source, make dependencies for \`$arch\` |"
    echo "| \`vadd-$arch.hsaco\` | code object of vadd.hip for \`$arch\` |"
    echo "| \`vadd-$arch.bc\` | \`-fgpu-rdc\` device bitcode of vadd.hip for \`$arch\` |"
  done
  cat <<'EOF'
| `omp-gfx906.bc` | OpenMP device bitcode of omp.c for gfx906 |

## host/: host code (`--cuda-host-only`, `--offload-host-only`)

| file | what |
| --- | --- |
| `kernel.bc` / `.ll` / `.s` / `.o` / `.hipi` / `.d` | host side of kernel.hip: bitcode, IR text, assembly, x86-64 ELF object, preprocessed source, make dependencies |
| `vadd.o` | host side of vadd.hip, x86-64 ELF object |
| `omp.i` / `omp.bc` | host side of omp.c: preprocessed source, bitcode |

## clang/: files the clang-19 driver bundles itself (gfx906 and gfx90a)

| file | what |
| --- | --- |
| `kernel-fatbin.o` | host object with `.hip_fatbin` (a binary bundle: empty host entry, 4096-aligned hipv4 entries) |
| `kernel-fatbin.hip_fatbin` | that section's contents, dumped with llvm-objcopy (a bare binary bundle) |
| `kernel-fatbin-z.o` | the same with `--offload-compress`: `.hip_fatbin` holds a CCOB |
| `kernel-fatbin-z.hip_fatbin` | that section's contents (a bare CCOB, version 2, zstd) |
| `vadd-rdc.o` | `-fgpu-rdc` object: `__CLANG_OFFLOAD_BUNDLE__` sections holding device bitcode (hip kind) |
| `kernel-device.o` | `--cuda-device-only -c`: binary bundle of the two code objects and an empty host entry |
| `kernel.hipi` / `.ll` / `.s` | `-E`, `-S -emit-llvm`, `-S` with host and devices: text bundles (hip kind, host last) |
| `kernel.bc` | `-c -emit-llvm` with host and devices: binary bundle |
| `omp.o` | OpenMP host object with `.llvm.offloading` (OffloadBinary, not a bundle) |

## bundles/: made by clang-offload-bundler-19

`H3` = `host-x86_64-unknown-linux` (written `host-x86_64-unknown-linux--`), `H4` =
`host-x86_64-unknown-linux-gnu` (written with a trailing `-`), `D` = `hipv4-amdgcn-amd-amdhsa-`.

| file | type | targets | notes |
| --- | --- | --- | --- |
| `kernel-hip.o` | o | H3, D-gfx906, D-gfx90a | host `/dev/null`, `-bundle-align=4096` (what the HIP driver does) |
| `kernel-6.o` | o | H3, D-gfx906, D-gfx90a:xnack+, D-gfx90a:xnack-, D-gfx908:sramecc+:xnack-, hip-amdgcn-amd-amdhsa--gfx90a | host `/dev/null`, align 1; StringMap order differs from file order |
| `kernel-nohost.bc` | bc | D-gfx906, hip-amdgcn-amd-amdhsa--gfx90a | no host entry (allowed: every kind is hip or hipv4) |
| `kernel.bc` | bc | H4, D-gfx906, D-gfx90a | |
| `kernel.ll` / `kernel.hipi` | ll / hipi | H4, D-gfx906, D-gfx90a | text |
| `kernel.s` | s | H4, D-gfx906 | text |
| `omp.i` | i | H4, openmp-amdgcn-amd-amdhsa--gfx906 | text, the host file twice |
| `omp.bc` | bc | H4, openmp-amdgcn-amd-amdhsa--gfx906 | |
| `vadd-fat.o` | o | H4, D-gfx906, D-gfx90a | host is an ELF object: sections added by llvm-objcopy |
| `dup-id.bc` | bc | H4, D-gfx906, `hipv4-amdgcn-amd-amdhsa-gfx906` | both device IDs standardise to the same name: a duplicate entry ID |
| `kernel-z.bc` | bc | as kernel.bc | `-compress` (CCOB v2, zstd 3) |
| `kernel-hip-z.o` | o | as kernel-hip.o | `OFFLOAD_BUNDLER_COMPRESS=1` |
| `kernel-z.ll` | ll | H4, D-gfx906 | `-compress` |
| `two-ccob.bin` | | | `kernel-z.bc` then `kernel-hip-z.o` |
| `two-bundles.bin` | | | `kernel-nohost.bc` then `kernel.bc` |
| `libvadd.a` | a | | archive (llvm-ar-19 `rcD`) of `../clang/vadd-rdc.o` and `kernel-nohost.bc` |

## damaged/: broken and hand-made copies made by `damaged/make.sh`

See the table in `damaged/README.md`, which also says what LLVM 19 does with each.
EOF
} > README.md

echo "samples: $(du -sh . | cut -f1)"
