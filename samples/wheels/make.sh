#!/usr/bin/env bash
# Makes a fat ROCm wheel with Debian's clang-19 and cc: kdemo-1.0-py3-none-linux_x86_64.whl
# holds kdemo/lib/libk.so, a shared library of the two sample HIP sources (two wrappers) for
# gfx90a:xnack+, gfx90a:xnack-, gfx1100 and gfx11-generic, what `offload kpack` splits into a
# host wheel and device wheels. Run from anywhere; works inside this folder with relative paths
# only, and the zip is written by Python with fixed times, so the bytes are the same on every
# run with the same compilers.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
CLANG=${CLANG:-clang-19}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for source in kernel vadd; do
  "$CLANG" -x hip -nogpulib -nogpuinc -O2 -fPIC -c -cuid="w$source" \
    --offload-arch=gfx90a:xnack+ --offload-arch=gfx90a:xnack- --offload-arch=gfx1100 \
    --offload-arch=gfx11-generic -mcode-object-version=6 "../src/$source.hip" -o "$work/$source.o"
done
cc -shared -Wl,--build-id=none "$work/kernel.o" "$work/vadd.o" -o "$work/libk.so"
python3 - "$work/libk.so" <<'PY'
import base64, hashlib, sys, zipfile
files = {
    "kdemo/__init__.py": b"",
    "kdemo/lib/libk.so": open(sys.argv[1], "rb").read(),
    "kdemo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: kdemo\nVersion: 1.0\nSummary: A HIP library for gfx90a, gfx1100 and gfx11-generic\n\nSample of offload-tools.\n",
    "kdemo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: samples/wheels/make.sh\nRoot-Is-Purelib: false\nTag: py3-none-linux_x86_64\n",
}
rows = []
for name, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    rows.append(f"{name},sha256={digest},{len(data)}\n")
rows.append("kdemo-1.0.dist-info/RECORD,,\n")
files["kdemo-1.0.dist-info/RECORD"] = "".join(rows).encode()
with zipfile.ZipFile("kdemo-1.0-py3-none-linux_x86_64.whl", "w") as z:
    for name, data in files.items():
        info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = (0o100755 if name.endswith(".so") else 0o100644) << 16
        z.writestr(info, data)
PY
