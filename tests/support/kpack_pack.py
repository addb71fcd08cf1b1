"""Writes a .kpack archive with AMD's rocm-kpack writer (python/rocm_kpack/kpack.py), so
tests can read what it writes and compare it with what we write.

Usage: kpack_pack.py ROCM_KPACK_PYTHON_DIR OUTPUT SCHEME GROUP FAMILY ARCH,ARCH... \
           [KEY ARCH FILE]...
       kpack_pack.py ROCM_KPACK_PYTHON_DIR OUTPUT SCHEME GROUP FAMILY ARCH,ARCH... \
           --metadata SOURCE_PREFIX [KEY ARCH FILE TARGET]...
  SCHEME is "none" or "zstd-per-kernel"; KEY is "<binary>#<index>". With --metadata, each
  entry gets the metadata map AMD's artifact splitter gives it: {target, source_prefix}.
"""

import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])

from rocm_kpack.compression import NoOpCompressor, ZstdCompressor  # noqa: E402
from rocm_kpack.kpack import PackedKernelArchive  # noqa: E402

output, scheme, group, family, arches = sys.argv[2:7]
compressor = ZstdCompressor() if scheme == "zstd-per-kernel" else NoOpCompressor()
archive = PackedKernelArchive(group, family, arches.split(","), compressor=compressor)
rest = sys.argv[7:]
if rest[:1] == ["--metadata"]:
    prefix, rest = rest[1], rest[2:]
    for i in range(0, len(rest), 4):
        key, arch, path, target = rest[i : i + 4]
        metadata = {"target": target, "source_prefix": prefix}
        data = Path(path).read_bytes()
        archive.add_kernel(archive.prepare_kernel(key, arch, data, metadata=metadata))
else:
    for i in range(0, len(rest), 3):
        key, arch, path = rest[i : i + 3]
        archive.add_kernel(archive.prepare_kernel(key, arch, Path(path).read_bytes()))
archive.finalize_archive()
archive.write(Path(output))
