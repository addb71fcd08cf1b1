//! Rewriting the section of offload containers of a linked program or shared library: the
//! containers are rewritten and packed at the start of the section, the pointers to them move
//! along, and the bytes freed are cut out of the file where the format allows it. Containers
//! that outgrow the section (decompressed) move to a new loaded segment (a new section, in a PE image) at the
//! end of the file instead, and the emptied section gives its whole pages back.
//!
//! The work is read -> plan -> write. [`plan`] knows no file format: it finds and rewrites the
//! containers, packs them, says where each moves and what every pointer must become, and puts
//! the new file together. One module per file format reads the program (its headers and the
//! places that point into the section) and writes the plan out: [`elf`] for ELF programs and
//! shared libraries (with [`elf_joined`] for sections of device code side by side, cut as
//! one), [`pe`] for PE executables and DLLs.
//!
//! Anything that cannot be kept valid is refused: a relocation into the bytes that go, a
//! pointer to no container's start, too little room.

pub mod elf;
pub mod elf_joined;
mod in_order;
pub mod kpack_elf;
pub mod kpack_pe;
pub mod pe;
pub mod plan;

pub use plan::{fill_hole, AllContainers, Destination, Fill, Inflating, NewProgram, Rewriting};
#[cfg(any(test, feature = "internals"))]
pub use plan::{ContainerBoundary, ContainerSize, InflateContainer, RewriteContainer};

use object::pod::{self, Pod};
use object::{LittleEndian as LE, U32, U64};

use crate::host::error::Result;

/// The magic of a HIP wrapper, `"FPIH"` read little-endian.
const HIP_WRAPPER_MAGIC: u32 = 0x4849_5046;

/// A wrapper that registers a container with its runtime (CUDA's `__fatBinC_Wrapper_t`, and
/// its HIP twin): its `binary` points at the container.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
struct Wrapper {
    magic: U32<LE>,
    version: U32<LE>,
    binary: U64<LE>,
    unused: U64<LE>,
}

// SAFETY: the structure holds byte arrays only (alignment 1, no padding), and every bit
// pattern is a valid value.
unsafe impl Pod for Wrapper {}

/// The whole records of `T` that `bytes` holds (a trailing part of one is left out).
fn records<T: Pod>(bytes: &[u8]) -> &[T] {
    pod::slice_from_bytes(bytes, bytes.len() / size_of::<T>()).map_or(&[], |(records, _)| records)
}

/// Rewrites the HIP device code (`.hip_fatbin`; `.hip_fat` in a PE image) of the ELF or PE
/// program or library `file`. The containers in the section are found and rewritten as `how`
/// says, in parallel, each with its bytes and its offset in the section. Returns `None` when
/// nothing changes. The rewritten containers are packed (into a temporary file when large) as
/// they are made (see [`plan::pack`]); the caller writes the new file around them
/// ([`NewProgram::around`]).
///
/// In an ELF file, when sections follow `.hip_fatbin` in its segment, the segment is split in
/// two: the first part ends after the packed bundles, the second (a new `PT_LOAD`) maps the
/// sections that followed at their old addresses from their new offsets, and the program
/// header table, one entry longer, is written after the packed bundles, inside the first part,
/// where the loader finds it. In a PE image every section keeps its RVA and the raw data of
/// later sections moves back (see [`pe`]). Only 64-bit little-endian files (x86-64, AArch64)
/// are rewritten.
pub fn rewrite_hip_fatbin<'a>(
    file: &'a [u8],
    how: &Rewriting<'_>,
) -> Result<Option<NewProgram<'a>>> {
    if is_pe(file) {
        pe::rewrite(file, how)
    } else {
        elf_joined::rewrite(file, how)
    }
}

/// The name of the section of device code in `file`, as the rewriting names it in messages:
/// `.hip_fat` in a PE image; in an ELF file, of `.hip_fatbin` and `.nv_fatbin`, the one whose
/// bytes hold the file offset `offset`, else the first it has (`.hip_fatbin` when it has
/// neither).
pub fn device_section_name(file: &[u8], offset: u64) -> &'static str {
    use object::read::{Object, ObjectSection};
    if is_pe(file) {
        return ".hip_fat";
    }
    let Ok(parsed) = object::File::parse(file) else {
        return ".hip_fatbin";
    };
    let present: Vec<(&'static str, Option<(u64, u64)>)> =
        crate::format::container::PROGRAM_SECTIONS
            .iter()
            .filter_map(|p| Some((p.section, parsed.section_by_name(p.section)?.file_range())))
            .collect();
    let holds = |range: Option<(u64, u64)>| {
        range.is_some_and(|(start, size)| offset >= start && offset - start < size)
    };
    present
        .iter()
        .find(|(_, range)| holds(*range))
        .or(present.first())
        .map_or(".hip_fatbin", |(name, _)| name)
}

/// Whether `file` is read as a PE image: it starts with the DOS header's `MZ` (the PE reader
/// says what is wrong past that).
fn is_pe(file: &[u8]) -> bool {
    file.starts_with(b"MZ")
}
