//! Adding and removing sections of relocatable objects the way `llvm-objcopy` 19 does, byte
//! for byte, so that fat objects equal the ones clang-offload-bundler-19 makes.
//!
//! Only the two edits the bundler needs are supported: appending sections with the flags of
//! `--set-section-flags=NAME=readonly,exclude`, and removing every section whose name matches a
//! predicate (`--regex --remove-section=...`). The result is described as pieces at offsets
//! ([`Rewritten`]) so that large section contents are copied from their files, never gathered
//! in memory.

use std::borrow::Cow;
use std::io::{self, Write};

use object::FileKind;

use crate::format::bundle::write_zeros;
use crate::host::error::{Error, ErrorKind, Result};
use crate::io::{Input, Output};

mod coff;
mod elf;

/// New contents for a section, asked with the section's name and contents: `None` keeps them.
/// They may be borrowed (from a temporary file, say) for as long as the rewritten object.
pub type Replace<'r, 'a> = dyn Fn(&[u8], &[u8]) -> Option<Cow<'a, [u8]>> + 'r;

/// A section to append: its name and contents.
#[derive(Debug, Clone, Copy)]
pub struct AddedSection<'a> {
    /// The full section name.
    pub name: &'a str,
    /// The section contents.
    pub data: &'a [u8],
}

/// One piece of a rewritten object: bytes to place at an offset.
#[derive(Debug, Clone)]
pub struct Piece<'a> {
    /// Offset of the first byte in the output.
    pub offset: u64,
    /// The bytes: borrowed from an input, or built anew.
    pub data: Cow<'a, [u8]>,
}

/// A rewritten object: pieces in increasing offset order that do not overlap; every byte not
/// covered by a piece is zero.
#[derive(Debug, Clone, Default)]
pub struct Rewritten<'a> {
    /// The pieces, sorted by offset.
    pub pieces: Vec<Piece<'a>>,
    /// The size of the whole output.
    pub size: u64,
}

impl<'a> Rewritten<'a> {
    fn push(&mut self, offset: u64, data: impl Into<Cow<'a, [u8]>>) {
        let data = data.into();
        if !data.is_empty() {
            self.pieces.push(Piece { offset, data });
        }
    }

    fn finish(mut self, size: u64) -> Self {
        self.pieces.sort_by_key(|p| p.offset);
        self.size = size;
        self
    }

    /// Writes the object to `out`, filling the gaps between pieces with zeros; `write_piece`
    /// writes one piece (so a caller can copy large borrowed pieces from their file).
    pub fn write_with<W: Write>(
        &self,
        out: &mut W,
        mut write_piece: impl FnMut(&mut W, &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        self.each_chunk(|chunk| match chunk {
            Chunk::Zeros(count) => write_zeros(out, count),
            Chunk::Piece(data) => write_piece(out, data),
        })
    }

    /// Writes the object to `out`, filling the gaps between pieces with zeros. A piece cut
    /// from one of `sources` is copied from that input's file (by the kernel when it is large);
    /// the others are written from memory.
    pub fn write_to(&self, out: &mut Output, sources: &[&Input]) -> crate::error::Result<()> {
        self.each_chunk(|chunk| match chunk {
            Chunk::Zeros(count) => {
                write_zeros(out, count).map_err(|e| crate::error::Error::io(out.path(), e))
            }
            Chunk::Piece(data) => match sources.iter().find(|input| input.holds(data)) {
                Some(input) => Ok(out.write_part(input, data)?),
                None => Ok(out.write_bytes(data)?),
            },
        })
    }

    /// The whole object in memory.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(usize::try_from(self.size).unwrap_or(0));
        self.write_with(&mut out, |o, d| o.write_all(d))
            .expect("writing to memory cannot fail");
        out
    }

    /// Hands the object to `write` in order: the zeros before each piece, the piece, and the
    /// zeros after the last.
    fn each_chunk<E>(
        &self,
        mut write: impl FnMut(Chunk<'_>) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let mut at = 0;
        for piece in &self.pieces {
            write(Chunk::Zeros(piece.offset - at))?;
            write(Chunk::Piece(&piece.data))?;
            at = piece.offset + piece.data.len() as u64;
        }
        write(Chunk::Zeros(self.size - at))
    }
}

/// A stretch of a rewritten object, as written out.
enum Chunk<'a> {
    /// This many zero bytes.
    Zeros(u64),
    /// A piece's bytes.
    Piece(&'a [u8]),
}

/// Appends `added` to the relocatable object `host`, as
/// `llvm-objcopy --add-section=NAME=FILE --set-section-flags=NAME=readonly,exclude` does.
pub fn add_sections<'a>(host: &'a [u8], added: &[AddedSection<'a>]) -> Result<Rewritten<'a>> {
    match FileKind::parse(host) {
        Ok(FileKind::Elf32 | FileKind::Elf64) => {
            elf::rewrite(host, added, &|_| false, &|_, _| None)
        }
        Ok(FileKind::Coff | FileKind::CoffBig | FileKind::Pe32 | FileKind::Pe64) => {
            coff::rewrite(host, added, &|_| false, &|_, _| None)
        }
        _ => Err(unsupported_kind(host)),
    }
}

/// Removes every section whose name satisfies `remove`, as
/// `llvm-objcopy --regex --remove-section=PATTERN` does.
pub fn remove_sections<'a>(
    host: &'a [u8],
    remove: &dyn Fn(&[u8]) -> bool,
) -> Result<Rewritten<'a>> {
    match FileKind::parse(host) {
        Ok(FileKind::Elf32 | FileKind::Elf64) => elf::rewrite(host, &[], remove, &|_, _| None),
        Ok(FileKind::Coff | FileKind::CoffBig | FileKind::Pe32 | FileKind::Pe64) => {
            coff::rewrite(host, &[], remove, &|_, _| None)
        }
        _ => Err(unsupported_kind(host)),
    }
}

/// Removes the sections `remove` selects and gives others new contents: `replace` is asked
/// for each section of plain data (ELF `SHT_PROGBITS`, `SHT_LLVM_OFFLOADING`; COFF sections
/// neither code nor uninitialised) with its name and contents, and returns the new contents or
/// `None` to keep them. A symbol covering a whole replaced section follows its new size; a
/// section that relocations apply to cannot be replaced, nor a COFF COMDAT section, nor can a
/// COFF section grow (llvm-objcopy refuses that too). ELF and COFF relocatable objects; laid
/// out as llvm-objcopy lays out what it rewrites.
pub fn rewrite_sections<'a>(
    host: &'a [u8],
    remove: &dyn Fn(&[u8]) -> bool,
    replace: &Replace<'_, 'a>,
) -> Result<Rewritten<'a>> {
    match FileKind::parse(host) {
        Ok(FileKind::Elf32 | FileKind::Elf64) => elf::rewrite(host, &[], remove, replace),
        Ok(FileKind::Coff | FileKind::CoffBig | FileKind::Pe32 | FileKind::Pe64) => {
            coff::rewrite(host, &[], remove, replace)
        }
        _ => Err(unsupported_kind(host)),
    }
}

/// The error for a host that is neither an ELF nor a COFF object.
fn unsupported_kind(host: &[u8]) -> Error {
    let kind = match FileKind::parse(host) {
        Ok(kind) => format!("{kind:?}"),
        Err(_) => "unknown".to_string(),
    };
    Error::new(0, ErrorKind::UnsupportedKind { kind })
}
