#!/usr/bin/env bash
# Times `offload bundler` and clang-offload-bundler-19 (or the release LLVM_RELEASE names, 19 or
# 22: LLVM_RELEASE=22 benches/compare.sh) on the same large inputs, one after the
# other in the same run, and prints wall time, peak memory (max RSS) and the ratio of each.
#
#   benches/compare.sh [WORKDIR]      (default: a temporary folder, removed afterwards)
#
# Inputs: three 256 MiB device images (random bytes, so nothing is compressible by accident)
# and a small host file. Needs clang-offload-bundler-19 and GNU time (/usr/bin/time).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
release=${LLVM_RELEASE:-19}
# Our personalities stand in for the release measured against.
export OFFLOAD_LLVM_VERSION=$release
llvm=${LLVM_BUNDLER:-clang-offload-bundler-$release}
command -v "$llvm" >/dev/null || { echo "compare.sh: $llvm not found" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "compare.sh: GNU time (/usr/bin/time) not found: apt-get install time" >&2; exit 1; }

(cd "$here" && cargo build --release --quiet)
ours="$here/target/release/offload"

work=${1:-$(mktemp -d)}
[ -n "${1:-}" ] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"
cd "$work"
for i in 1 2 3; do
  [ -f dev$i.bin ] || head -c $((256 << 20)) /dev/urandom > dev$i.bin
done
[ -f host.bin ] || head -c 4096 /dev/urandom > host.bin
targets=host-x86_64-unknown-linux-gnu,hipv4-amdgcn-amd-amdhsa--gfx906,hipv4-amdgcn-amd-amdhsa--gfx90a,hipv4-amdgcn-amd-amdhsa--gfx1030

# measure LABEL CMD... -> prints "LABEL seconds maxrss_kib"
measure() {
  local label=$1; shift
  sync
  /usr/bin/time -f "%e %M" -o time.out "$@" >/dev/null
  read -r secs kib < time.out
  echo "$label $secs $kib"
}

row() { # name llvm_line ours_line
  read -r _ ls lk <<<"$2"; read -r _ os ok <<<"$3"
  awk -v n="$1" -v ls="$ls" -v lk="$lk" -v os="$os" -v ok="$ok" 'BEGIN {
    printf "%-34s %9.2f s %8.1f MiB | %9.2f s %8.1f MiB | %6.3fx time\n", n, ls, lk/1024, os, ok/1024, (ls > 0 ? os/ls : 0) }'
}

printf "%-34s %24s | %24s |\n" "" "LLVM $release tool" "offload"

# Bundle 768 MiB (3 x 256 MiB + host), binary, 4096 alignment.
l=$(measure llvm "$llvm" -type=o -bundle-align=4096 -targets=$targets \
      -input=host.bin -input=dev1.bin -input=dev2.bin -input=dev3.bin -output=llvm.bundle)
o=$(measure ours "$ours" bundler -type=o -bundle-align=4096 -targets=$targets \
      -input=host.bin -input=dev1.bin -input=dev2.bin -input=dev3.bin -output=ours.bundle)
row "bundle 3 x 256 MiB" "$l" "$o"
cmp llvm.bundle ours.bundle && echo "  same bytes"

# Unbundle one 256 MiB entry.
l=$(measure llvm "$llvm" -unbundle -type=o -targets=hipv4-amdgcn-amd-amdhsa--gfx90a \
      -input=llvm.bundle -output=llvm.gfx90a)
o=$(measure ours "$ours" bundler -unbundle -type=o -targets=hipv4-amdgcn-amd-amdhsa--gfx90a \
      -input=llvm.bundle -output=ours.gfx90a)
row "unbundle one 256 MiB entry" "$l" "$o"
cmp llvm.gfx90a ours.gfx90a && echo "  same bytes"

# List.
l=$(measure llvm "$llvm" -list -type=o -input=llvm.bundle)
o=$(measure ours "$ours" bundler -list -type=o -input=llvm.bundle)
row "list" "$l" "$o"
rm -f llvm.bundle ours.bundle llvm.gfx90a ours.gfx90a

# Bundle 3 x 256 MiB into a host object (LLVM runs llvm-objcopy), then take the host back out.
hostobj=$here/samples/elf/c-x86_64-linux-gnu.o
l=$(measure llvm "$llvm" -type=o -targets=$targets \
      -input="$hostobj" -input=dev1.bin -input=dev2.bin -input=dev3.bin -output=llvm-fat.o)
o=$(measure ours "$ours" bundler -type=o -targets=$targets \
      -input="$hostobj" -input=dev1.bin -input=dev2.bin -input=dev3.bin -output=ours-fat.o)
row "bundle 3 x 256 MiB into an object" "$l" "$o"
cmp llvm-fat.o ours-fat.o && echo "  same bytes"
l=$(measure llvm "$llvm" -unbundle -type=o -targets=host-x86_64-unknown-linux-gnu \
      -input=llvm-fat.o -output=llvm-host.o)
o=$(measure ours "$ours" bundler -unbundle -type=o -targets=host-x86_64-unknown-linux-gnu \
      -input=llvm-fat.o -output=ours-host.o)
row "host object out of a 768 MiB one" "$l" "$o"
cmp llvm-host.o ours-host.o && echo "  same bytes"
rm -f llvm-fat.o ours-fat.o llvm-host.o ours-host.o

# Pack 3 x 256 MiB into offload binaries, then unpack one.
packer=${LLVM_PACKAGER:-clang-offload-packager-$release}
if command -v "$packer" >/dev/null; then
  images=()
  for i in 1 2 3; do images+=("--image=file=dev$i.bin,triple=amdgcn-amd-amdhsa,arch=gfx90$i,kind=openmp"); done
  l=$(measure llvm "$packer" -o llvm.pack "${images[@]}")
  o=$(measure ours "$ours" packager -o ours.pack "${images[@]}")
  row "pack 3 x 256 MiB (packager)" "$l" "$o"
  cmp llvm.pack ours.pack && echo "  same bytes"
  l=$(measure llvm "$packer" llvm.pack --image=arch=gfx902,file=llvm.img)
  o=$(measure ours "$ours" packager llvm.pack --image=arch=gfx902,file=ours.img)
  row "unpack one 256 MiB image" "$l" "$o"
  cmp llvm.img ours.img && echo "  same bytes"
  rm -f llvm.pack ours.pack llvm.img ours.img
fi

# Unbundle a heterogeneous archive of 1200 -fgpu-rdc objects for 3 targets.
if [ ! -f hda.a ]; then
  rm -rf hda && mkdir hda
  for i in $(seq -w 0 1199); do
    if (( 10#$i % 2 )); then cp "$here/samples/archive/kernel-rdc.o" hda/k$i.o; else cp "$here/samples/archive/vadd-rdc.o" hda/v$i.o; fi
  done
  (cd hda && llvm-ar-19 rcD ../hda.a ./*.o)
fi
atargets=hipv4-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa--gfx90a:xnack+,hip-amdgcn-amd-amdhsa--gfx90a:xnack-
l=$(measure llvm "$llvm" -unbundle -type=a -targets=$atargets -input=hda.a \
      -output=llvm-1.a -output=llvm-2.a -output=llvm-3.a)
o=$(measure ours "$ours" bundler -unbundle -type=a -targets=$atargets -input=hda.a \
      -output=ours-1.a -output=ours-2.a -output=ours-3.a)
row "archive 1200 members x 3 targets" "$l" "$o"
cmp llvm-1.a ours-1.a && cmp llvm-2.a ours-2.a && cmp llvm-3.a ours-3.a && echo "  same bytes"
rm -f llvm-?.a ours-?.a

# Extract 48 images of 2 MiB each in parallel (every one past the size below which parts are
# copied through memory), beside LLVM unbundling the same 48 targets in one run; every output
# compared.
many_ids=()
# gfx940 and gfx941 are retired in LLVM 22, which writes and finds their entries under an empty
# target ID: it measures gfx950 and gfx9-4-generic instead.
if [ "$release" = 19 ]; then newer="gfx940 gfx941"; else newer="gfx950 gfx9-4-generic"; fi
for p in gfx900 gfx906 gfx908 gfx90a $newer gfx942 gfx1010 gfx1030 gfx1100 gfx1101 gfx1200; do
  for f in :sramecc+:xnack+ :sramecc+:xnack- :sramecc-:xnack+ :sramecc-:xnack-; do many_ids+=("$p$f"); done
done
many_targets=$(printf 'hipv4-amdgcn-amd-amdhsa--%s,' "${many_ids[@]}"); many_targets=${many_targets%,}
if [ ! -f many.bundle ] || [ "$(cat many.release 2>/dev/null)" != "$release" ]; then
  many_inputs=()
  for i in "${!many_ids[@]}"; do
    head -c $((2 << 20)) /dev/urandom > many$i.bin; many_inputs+=("-input=many$i.bin")
  done
  "$llvm" -type=o -bundle-align=4096 -targets="$many_targets" "${many_inputs[@]}" -output=many.bundle
  rm -f many*.bin
  echo "$release" > many.release
fi
rm -rf many-llvm many-ours && mkdir many-llvm
many_outputs=(); for i in "${!many_ids[@]}"; do many_outputs+=("-output=many-llvm/$i"); done
many_arches=(); for id in "${many_ids[@]}"; do many_arches+=(--arch "$id"); done
l=$(measure llvm "$llvm" -unbundle -type=o -targets="$many_targets" -input=many.bundle "${many_outputs[@]}")
o=$(measure ours "$ours" extract many.bundle --exact "${many_arches[@]}" -o many-ours -q)
row "extract 48 x 2 MiB in parallel" "$l" "$o"
same=0
for i in "${!many_ids[@]}"; do
  cmp -s "many-llvm/$i" "many-ours/many.bundle-hipv4-amdgcn-amd-amdhsa--${many_ids[$i]//:/_}.bin" && same=$((same + 1))
done
echo "  $same of ${#many_ids[@]} outputs the same bytes as LLVM's"
rm -rf many-llvm many-ours

# A production HIP library of over 1 GB (Debian's librocsparse0: 111 bundles of 8 targets in
# .hip_fatbin): extract one target and list, beside `cat FILE > /dev/null` in the same run.
if [ -z "${LIBROCSPARSE:-}" ]; then
  if [ ! -f rocsparse/usr/lib/x86_64-linux-gnu/librocsparse.so.0.1 ] && command -v apt-get >/dev/null; then
    (apt-get download librocsparse0 >/dev/null 2>&1 && dpkg-deb -x librocsparse0_*.deb rocsparse) || true
  fi
  LIBROCSPARSE=$(ls rocsparse/usr/lib/x86_64-linux-gnu/librocsparse.so.* 2>/dev/null | head -1 || true)
fi
if [ -n "${LIBROCSPARSE:-}" ] && [ -f "$LIBROCSPARSE" ]; then
  cat "$LIBROCSPARSE" > /dev/null
  c=$(measure cat cat "$LIBROCSPARSE")
  rm -rf extracted
  o=$(measure ours "$ours" extract "$LIBROCSPARSE" --arch gfx90a:xnack+ -o extracted -q)
  row "extract gfx90a:xnack+ (vs cat)" "$c" "$o"
  echo "  $(ls extracted | wc -l) code objects, $(du -sh extracted | cut -f1)"
  o=$(measure ours "$ours" ls "$LIBROCSPARSE")
  row "list (vs cat)" "$c" "$o"
  c=$(measure cp cp "$LIBROCSPARSE" stripped.so)
  o=$(measure ours "$ours" strip stripped.so --keep gfx90a:xnack+ --in-place)
  row "strip in place to one target (vs cp)" "$c" "$o"
  echo "  $(stat -c %s "$LIBROCSPARSE") -> $(stat -c %s stripped.so) bytes"
  rm -f stripped.so
  rm -rf extracted
else
  echo "(no librocsparse: set LIBROCSPARSE=PATH or install apt-get to download it)"
fi

# Compress a bundle of real code objects: the largest translation unit of librocsparse, all
# its targets, bundled with -compress by both tools at the same zstd level.
if [ -n "${LIBROCSPARSE:-}" ] && [ -f "$LIBROCSPARSE" ] && command -v python3 >/dev/null; then
  rm -rf tu && mkdir tu
  "$ours" ls --json "$LIBROCSPARSE" | python3 -c '
import json, sys
images = json.load(sys.stdin)
bundles, current = [], []
for image in images:
    if image["offload_kind"] == "host" and current:
        bundles.append(current)
        current = []
    current.append(image)
bundles.append(current)
largest = max(bundles, key=lambda b: sum(i["size"] for i in b))
for image in largest:
    if image["offload_kind"] != "host":
        print(image["entry_id"], image["offset"], image["size"])
' > tu/entries
  ids=host-x86_64-unknown-linux-gnu; inputs=(-input=/dev/null)
  while read -r id offset size; do
    f="tu/${id//:/_}.co"
    dd if="$LIBROCSPARSE" of="$f" bs=1M iflag=skip_bytes,count_bytes skip="$offset" count="$size" status=none
    ids="$ids,$id"; inputs+=("-input=$f")
  done < tu/entries
  echo "  compression input: $(wc -l < tu/entries) code objects, $(du -ch tu/*.co | tail -1 | cut -f1)"
  l=$(measure llvm "$llvm" -type=o -bundle-align=4096 -compress -compression-level=3 -targets=$ids "${inputs[@]}" -output=llvm.z)
  o=$(measure ours "$ours" bundler -type=o -bundle-align=4096 -compress -compression-level=3 -targets=$ids "${inputs[@]}" -output=ours.z)
  row "compress one TU's code objects, zstd 3" "$l" "$o"
  echo "  sizes: LLVM $(stat -c %s llvm.z) B, ours $(stat -c %s ours.z) B"
  first=$(head -1 tu/entries | cut -d' ' -f1)
  "$llvm" -unbundle -type=o -targets="$first" -input=ours.z -output=back.co \
    && cmp back.co "tu/${first//:/_}.co" && echo "  LLVM unbundles ours to the same code object"
  rm -rf tu llvm.z ours.z back.co
fi
