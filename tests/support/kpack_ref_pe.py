"""Reads a split PE image with AMD's rocm-kpack COFF code: its `.kpackrf` reference as its
reader makes it (python/rocm_kpack/coff/kpack_transform.py, read_kpack_ref_marker), and the
errors and warnings of its structural checks (python/rocm_kpack/coff/verify.py, verify_all,
which runs llvm-objdump too), printed as one JSON object, so tests can check what that code
makes of PE images we split.

Usage: kpack_ref_pe.py ROCM_KPACK_PYTHON_DIR IMAGE LLVM_OBJDUMP
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])

from rocm_kpack.coff.kpack_transform import read_kpack_ref_marker  # noqa: E402
from rocm_kpack.coff.verify import verify_all  # noqa: E402

image = Path(sys.argv[2])
checked = verify_all(image, sys.argv[3])
print(
    json.dumps(
        {
            "marker": read_kpack_ref_marker(image),
            "errors": checked.errors,
            "warnings": checked.warnings,
        }
    )
)
