//! Rewriting the section of offload containers of a linked program or shared library: the
//! containers are rewritten and packed at the start of the section, the pointers to them move
//! along, and the bytes freed are cut out of the file where the format allows it. Containers
//! that outgrow the section (decompressed) move to a new loaded segment at the end of the
//! file instead, and the emptied section gives its whole pages back.
//!
//! The work is read -> plan -> write. [`plan`] knows no file format: it finds and rewrites the
//! containers, packs them, says where each moves and what every pointer must become, and puts
//! the new file together. One module per file format reads the program (its headers and the
//! places that point into the section) and writes the plan out: [`elf`] for ELF programs and
//! shared libraries.
//!
//! Anything that cannot be kept valid is refused: a relocation into the bytes that go, a
//! pointer to no container's start, too little room.

pub mod elf;
pub mod kpack_elf;
pub mod plan;

pub use plan::{
    ContainerBoundary, ContainerSize, InflateContainer, NewProgram, RewriteContainer, Rewriting,
};

use super::error::Result;

/// Rewrites the `.hip_fatbin` of the ELF program or library `file`. The containers in the
/// section are found and rewritten as `how` says, in parallel, each with its bytes and its
/// offset in the section. Returns `None` when nothing changes. The rewritten containers are
/// packed (into a temporary file when large) as they are made (see [`plan::pack`]); the
/// caller writes the new file around them ([`NewProgram::around`]).
///
/// When sections follow `.hip_fatbin` in its segment, the segment is split in two: the first
/// part ends after the packed bundles, the second (a new `PT_LOAD`) maps the sections that
/// followed at their old addresses from their new offsets, and the program header table, one
/// entry longer, is written after the packed bundles, inside the first part, where the loader
/// finds it. Only 64-bit little-endian files (x86-64, AArch64) are rewritten.
pub fn rewrite_hip_fatbin<'a>(
    file: &'a [u8],
    how: &Rewriting<'_>,
) -> Result<Option<NewProgram<'a>>> {
    elf::rewrite(file, how)
}
