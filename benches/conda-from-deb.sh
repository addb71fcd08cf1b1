#!/usr/bin/env bash
# Makes a conda package of the files a Debian package installs, with conda-package-handling
# (`cph`, from PyPI), to stand in for a conda package of the same libraries: its
# `info/index.json` names it, and its `info/paths.json` lists every file with its sha256 and
# size, as conda-build writes them.
#
#   benches/conda-from-deb.sh PACKAGE.deb OUT.conda    (or OUT.tar.bz2)
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: benches/conda-from-deb.sh PACKAGE.deb OUT.conda" >&2; exit 2; }
deb=$1
out=$(realpath -m "$2")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dpkg-deb -x "$deb" "$work/prefix"
name=$(dpkg-deb -f "$deb" Package)
version=$(dpkg-deb -f "$deb" Version | tr -c 'A-Za-z0-9.\n' '_')
mkdir -p "$work/prefix/info"
python3 - "$work/prefix" "$name" "$version" <<'PY'
import hashlib, json, os, sys
prefix, name, version = sys.argv[1:4]
paths = []
for root, dirs, files in os.walk(prefix):
    dirs.sort()
    for f in sorted(files):
        full = os.path.join(root, f)
        rel = os.path.relpath(full, prefix)
        if rel.startswith("info/") or os.path.islink(full):
            continue
        data = open(full, "rb").read()
        paths.append({"_path": rel, "path_type": "hardlink",
                      "sha256": hashlib.sha256(data).hexdigest(), "size_in_bytes": len(data)})
json.dump({"paths": paths, "paths_version": 1}, open(os.path.join(prefix, "info/paths.json"), "w"), indent=2, sort_keys=True)
json.dump({"name": name, "version": version, "build": "0", "build_number": 0,
           "subdir": "linux-64", "depends": []},
          open(os.path.join(prefix, "info/index.json"), "w"), indent=2, sort_keys=True)
PY
cph c "$work/prefix" "$(basename "$out")" --out-folder "$(dirname "$out")" >/dev/null
echo "$out"
