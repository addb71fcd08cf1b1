#!/usr/bin/env bash
# Times reading and rewriting packages beside the tool a packager would otherwise run on the
# same input, in one run, warm cache:
# - `offload ls` and `offload du` of a wheel beside `unzip -t` of it, and `offload du` of a
#   Debian package beside `dpkg-deb -c` of it;
# - with STRIP=TARGET, `offload strip --keep TARGET` of each package beside what repacking it
#   unchanged costs with the ecosystem's own tools: `python3 -m wheel unpack` then `wheel pack`
#   of a wheel, `dpkg-deb -R` then `dpkg-deb -b` of a Debian package, `cph x` then `cph c` of a
#   conda package; with its size and device code (the `du` total) before and after;
# - with VENV=FOLDER (a Python environment), `offload strip -r --keep gfx90a --prune` of a copy
#   of it in place beside `cp -a` of it, then every RECORD row of the copy checked.
# - with KPACK=1, `offload kpack` of each wheel (a host wheel and device wheels) beside
#   `unzip -q` then `zip -q -r` of it (the bound the split is held to is their sum).
# Prints wall time, peak resident memory (GNU time) and peak anonymous memory (RssAnon sampled
# from /proc: the mapped package and spill files are page cache, not counted) per row.
#
#   [STRIP=sm_90] [KPACK=1] [VENV=FOLDER] benches/packages.sh PACKAGE...
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
  # GNU time says first when the command failed; its figures are the last line.
  read -r seconds rss < <(tail -1 "$times")
  rm -f "$times"
  printf '%-40s %7.2f s %9d KiB resident %8d KiB anonymous\n' "$label" "$seconds" "$rss" "$peak"
}

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Checks every hashed row of every RECORD under the site-packages folders of the environment
# $1 against the file it names.
records_right() {
  python3 - "$1" <<'PY'
import base64, csv, glob, hashlib, os, sys
bad = rows = 0
for record in glob.glob(os.path.join(sys.argv[1], "lib/python*/site-packages/*.dist-info/RECORD")):
    site = os.path.dirname(os.path.dirname(record))
    for path, digest, size in csv.reader(open(record, newline="")):
        if not digest:
            continue
        rows += 1
        data = open(os.path.normpath(os.path.join(site, path)), "rb").read()
        mine = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        bad += mine != digest or int(size) != len(data)
print(f"  RECORD rows checked: {rows}, wrong: {bad}")
sys.exit(1 if bad else 0)
PY
}

# Strips the package $1 to $STRIP into the scratch folder, says its size and device code
# before and after, and checks the result with the ecosystem's tool $2 (a command line).
strip_row() {
  local package=$1 name
  name=$(basename "$package")
  rm -rf "${scratch:?}"/*
  measure "  offload strip --keep $STRIP" "$ours" strip --keep "$STRIP" -o "$scratch/$name" "$package"
  echo "  $(stat -c %s "$package") bytes -> $(stat -c %s "$scratch/$name") bytes"
  "$ours" du "$package" | tail -1 | sed 's/^/  before: /'
  "$ours" du "$scratch/$name" | tail -1 | sed 's/^/  after:  /'
  shift
  if "$@" "$scratch/$name" >/dev/null 2>&1; then
    echo "  $1 accepts the result"
  elif "$@" "$package" >/dev/null 2>&1; then
    echo "  $1 REFUSES the result, and accepts the input" >&2
    exit 1
  else
    echo "  $1 refuses the result, as it refuses the input"
  fi
  rm -rf "${scratch:?}"/*
}

for package in "$@"; do
  name=$(basename "$package")
  cat "$package" >/dev/null
  echo "$name ($(stat -c %s "$package") bytes)"
  case "$package" in
    *.deb)
      measure "  offload du" "$ours" du "$package"
      measure "  dpkg-deb -c" dpkg-deb -c "$package"
      if [ -n "${STRIP:-}" ]; then
        strip_row "$package" dpkg-deb --info
        measure "  dpkg-deb -R" dpkg-deb -R "$package" "$scratch/tree"
        measure "  dpkg-deb -b" dpkg-deb -b "$scratch/tree" "$scratch/$name"
        rm -rf "${scratch:?}"/*
      fi
      ;;
    *.conda | *.tar.bz2)
      measure "  offload du" "$ours" du "$package"
      if [ -n "${STRIP:-}" ]; then
        strip_row "$package" cph x --dest "$scratch/checked"
        measure "  cph x" cph x "$package" --dest "$scratch/tree"
        mkdir -p "$scratch/packed"
        measure "  cph c" cph c "$scratch/tree" "$name" --out-folder "$scratch/packed"
        rm -rf "${scratch:?}"/*
      fi
      ;;
    *)
      measure "  offload ls" "$ours" ls "$package"
      measure "  offload du" "$ours" du "$package"
      measure "  unzip -t" unzip -tq "$package"
      if [ -n "${STRIP:-}" ]; then
        strip_row "$package" python3 -m wheel unpack -d "$scratch/checked"
        if python3 -m wheel unpack -d "$scratch/probe" "$package" >/dev/null 2>&1; then
          rm -rf "$scratch/probe"
          measure "  python3 -m wheel unpack" python3 -m wheel unpack -d "$scratch/unpacked" "$package"
          mkdir -p "$scratch/packed"
          measure "  python3 -m wheel pack" python3 -m wheel pack -d "$scratch/packed" "$scratch"/unpacked/*
        else
          echo "  python3 -m wheel unpack refuses this wheel: no reference"
        fi
        rm -rf "$scratch"/*
      fi
      if [ -n "${KPACK:-}" ]; then
        measure "  offload kpack (host + device wheels)" "$ours" kpack "$package" -o "$scratch/split"
        echo "  $(ls "$scratch/split" | wc -l) wheels, $(du -cb "$scratch"/split/*.whl | tail -1 | cut -f1) bytes"
        mkdir -p "$scratch/unzipped"
        measure "  unzip -q" unzip -q "$package" -d "$scratch/unzipped"
        measure "  zip -q -r" sh -c 'cd "$1" && zip -q -r ../zipped.zip .' sh "$scratch/unzipped"
        rm -rf "${scratch:?}"/*
      fi
      ;;
  esac
done

if [ -n "${VENV:-}" ]; then
  find "$VENV" -type f -exec cat {} + >/dev/null
  rm -rf "$scratch"/*
  echo "$VENV ($(du -sb "$VENV" | cut -f1) bytes)"
  measure "  cp -a" cp -a "$VENV" "$scratch/copy"
  measure "  offload strip -r --keep gfx90a --prune" "$ours" strip -r --keep gfx90a --prune --in-place "$scratch/copy"
  echo "  $(du -sb "$VENV" | cut -f1) bytes -> $(du -sb "$scratch/copy" | cut -f1) bytes"
  records_right "$scratch/copy"
fi
