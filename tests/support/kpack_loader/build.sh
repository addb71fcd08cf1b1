#!/usr/bin/env bash
# Builds AMD's kpack loader (rocm-kpack/runtime) from its sources with plain g++, linked into
# the driver tests/support/kpack_load.cpp, as OUTPUT (default: ./kpack_load).
# Needs g++, libmsgpack-cxx-dev and libzstd-dev (Debian 12). The loader's CMake setup asks for
# package names Debian does not use, so its sources are compiled directly.
#
# Usage: build.sh [ROCM_KPACK_DIR [OUTPUT]]
#   ROCM_KPACK_DIR defaults to /work/shared/oracles/rocm-kpack.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
kpack="${1:-/work/shared/oracles/rocm-kpack}"
output="${2:-kpack_load}"
runtime="$kpack/runtime"
# MSGPACK_NO_BOOST: msgpack-cxx 4 otherwise wants Boost headers for its optional types.
exec g++ -std=c++17 -O1 -DMSGPACK_NO_BOOST \
  -I"$runtime/include" -I"$runtime/src" \
  "$here/../kpack_load.cpp" "$runtime"/src/*.cpp \
  -lzstd -o "$output"
