"""Reads a .kpack archive with AMD's rocm-kpack reader (python/rocm_kpack/kpack.py) and prints
one line per table entry, `KEY ARCH SIZE MD5` (the code object's size and MD5 once read and
inflated by that reader), so tests can check what it makes of archives we write.

Usage: kpack_read.py ROCM_KPACK_PYTHON_DIR ARCHIVE
"""

import hashlib
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])

from rocm_kpack.kpack import PackedKernelArchive  # noqa: E402

archive = PackedKernelArchive.read(Path(sys.argv[2]))
for key, arches in archive.toc.items():
    for arch in arches:
        code = archive.get_kernel(key, arch)
        print(key, arch, len(code), hashlib.md5(code).hexdigest())
