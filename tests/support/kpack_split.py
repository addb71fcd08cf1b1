"""Runs AMD's rocm-kpack artifact splitter (python/rocm_kpack/tools/split_artifacts.py) under
Python 3.11: the splitter asks `tempfile.TemporaryDirectory` for `delete=False`, which only
Python 3.12 accepts, so this wrapper gives 3.11's class that argument before running it.

Usage: kpack_split.py ROCM_KPACK_PYTHON_DIR SPLITTER_ARGUMENTS...
"""

import runpy
import sys
import tempfile


class _KeptTemporaryDirectory(tempfile.TemporaryDirectory):
    """A temporary directory that, with delete=False, is left in place."""

    def __init__(self, *args, delete=True, **kwargs):
        super().__init__(*args, **kwargs)
        if not delete:
            # Detach the finalizer that would remove the directory.
            self._finalizer.detach()


if sys.version_info < (3, 12):
    tempfile.TemporaryDirectory = _KeptTemporaryDirectory

package_dir = sys.argv[1]
sys.path.insert(0, package_dir)
sys.argv = [package_dir + "/rocm_kpack/tools/split_artifacts.py"] + sys.argv[2:]
runpy.run_path(sys.argv[0], run_name="__main__")
