"""Reads the kpack reference of a split ELF binary with AMD's rocm-kpack reader
(python/rocm_kpack/kpack_transform.py, read_kpack_ref_marker) and prints it as JSON, so tests
can check what that reader makes of references we write.

Usage: kpack_ref.py ROCM_KPACK_PYTHON_DIR BINARY
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])

from rocm_kpack.kpack_transform import read_kpack_ref_marker  # noqa: E402

print(json.dumps(read_kpack_ref_marker(Path(sys.argv[2]))))
