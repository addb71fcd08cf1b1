"""Splits one PE image (EXE or DLL) with AMD's rocm-kpack COFF code: the code objects each HIP
wrapper (in `.hipFatB`) registers are read with its fat-binary parser and written, keyed
`<NAME>#<wrapper index>`, to one archive per processor by its archive writer; then its COFF
transform (python/rocm_kpack/coff/kpack_transform.py) adds `.kpackrf`, turns the wrappers into
HIPK and empties `.hip_fat`. AMD's artifact splitter does not handle PE images yet, so this
script drives those functions the way it drives their ELF counterparts.

Usage: kpack_split_pe.py ROCM_KPACK_PYTHON_DIR INPUT OUTPUT KPACK_DIR PREFIX NAME SEARCH_PATH
  Archives are written to KPACK_DIR/PREFIX_<processor>.kpack; SEARCH_PATH goes into `.kpackrf`.
"""

import struct
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])

from rocm_kpack.ccob_parser import extract_code_objects_from_fatbin  # noqa: E402
from rocm_kpack.coff.kpack_transform import kpack_offload_binary  # noqa: E402
from rocm_kpack.coff.surgery import CoffSurgery  # noqa: E402
from rocm_kpack.compression import NoOpCompressor  # noqa: E402
from rocm_kpack.kpack import PackedKernelArchive  # noqa: E402

source, output, kpack_dir, prefix, name, search_path = sys.argv[2:8]
surgery = CoffSurgery.load(Path(source))
wrappers = surgery.find_section(".hipFatB")
fatbin = surgery.find_section(".hip_fat")
fatbin_end = fatbin.rva + fatbin.virtual_size
starts = []
for i in range(wrappers.virtual_size // 24):
    address = surgery.read_pointer_at_rva(wrappers.rva + i * 24 + 8)
    starts.append(surgery.va_to_rva(address))
ends = sorted(set(starts[1:] + [fatbin_end]))

by_arch = {}
for i, start in enumerate(starts):
    end = min(e for e in ends + [fatbin_end] if e > start)
    at = surgery.rva_to_file_offset(start)
    data = bytes(surgery.data[at : at + (end - start)])
    for code_object in extract_code_objects_from_fatbin(data):
        arch = code_object.target.split("--", 1)[1]
        by_arch.setdefault(arch, []).append((f"{name}#{i}", code_object.data))

Path(kpack_dir).mkdir(parents=True, exist_ok=True)
for arch, kernels in sorted(by_arch.items()):
    archive = PackedKernelArchive(prefix, arch, [arch], compressor=NoOpCompressor())
    for key, data in kernels:
        archive.add_kernel(archive.prepare_kernel(key, arch, data))
    archive.finalize_archive()
    archive.write(Path(kpack_dir) / f"{prefix}_{arch}.kpack")

kpack_offload_binary(Path(source), Path(output), [search_path], name)
