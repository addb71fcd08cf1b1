//! Offload binaries (`0x10FF10AD`) in files: raw, in the `.llvm.offloading` sections of ELF,
//! COFF and Mach-O files, and in the members of archives, however deep.
//!
//! Where LLVM 19 looks: ELF sections of type `SHT_LLVM_OFFLOADING` whatever their name, COFF
//! sections whose name starts with `.llvm.offloading`, every member of an archive. We also
//! read Mach-O `__LLVM,__offloading` sections, skip zero padding between binaries in one
//! section (LLVM 19 fails on it), and inflate compressed binaries of newer LLVM.

use std::path::Path;

use object::read::elf::{ElfFile, FileHeader, SectionHeader};
use object::{FileKind, Object, ObjectSection};

use crate::container::archive::read_members;
use crate::error::{Error, Result};
use crate::format::offload_binary::{self, OffloadBinary};

/// The ELF section type of `.llvm.offloading`.
pub const SHT_LLVM_OFFLOADING: u32 = 0x6fff_4c0b;

/// How deep archives and compressed binaries may nest.
const MAX_DEPTH: usize = 8;

/// One offload binary found in a file.
#[derive(Debug)]
pub struct Found<'a> {
    /// The name LLVM gives the buffer the binary came from: the file as named for a file, the
    /// member's name for an archive member.
    pub source: &'a str,
    /// The archive members that hold it, outermost first (empty outside archives).
    pub members: &'a [String],
    /// The section that holds it, if any.
    pub section: Option<&'a str>,
    /// Its byte offset in the file, or `None` when it is not stored as such (it was
    /// inflated, or read from the member file of a thin archive).
    pub offset: Option<u64>,
    /// Whether it was stored compressed.
    pub compressed: bool,
    /// The binary.
    pub binary: &'a OffloadBinary<'a>,
}

/// A scan of one file.
struct Scan<'f, 'v> {
    path: &'f Path,
    file: &'f [u8],
    visit: &'v mut dyn FnMut(&Found<'_>) -> Result<()>,
    limit: u64,
}

impl Scan<'_, '_> {
    /// The offset of `part` in the file, when `part` lies in the file's bytes.
    fn offset_of(&self, part: &[u8]) -> Option<u64> {
        let base = self.file.as_ptr() as usize;
        let start = part.as_ptr() as usize;
        (start >= base && start + part.len() <= base + self.file.len())
            .then(|| (start - base) as u64)
    }

    fn context(&self, members: &[String], section: Option<&str>) -> String {
        let mut parts: Vec<String> = members.iter().map(|m| format!("member '{m}'")).collect();
        if let Some(section) = section {
            parts.push(format!("section '{section}'"));
        }
        parts.join(", ")
    }

    fn format_error(
        &self,
        members: &[String],
        section: Option<&str>,
        e: crate::format::Error,
    ) -> Error {
        let context = self.context(members, section);
        if context.is_empty() {
            Error::format(self.path, e)
        } else {
            Error::format_in(self.path, &context, e)
        }
    }

    /// Scans one buffer (the file, a member, an inflated binary).
    fn buffer(
        &mut self,
        source: &str,
        data: &[u8],
        members: &[String],
        depth: usize,
    ) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(Error::msg(format!(
                "'{}': {}: containers nest more than {MAX_DEPTH} deep",
                self.path.display(),
                self.context(members, None)
            )));
        }
        if data.starts_with(&offload_binary::MAGIC) {
            return self.binaries(source, data, members, None, depth);
        }
        match FileKind::parse(data) {
            Ok(FileKind::Archive) => self.archive(data, members, depth),
            Ok(FileKind::Elf32) => {
                match ElfFile::<object::elf::FileHeader32<object::Endianness>>::parse(data) {
                    Ok(elf) => self.elf(source, &elf, members, depth),
                    Err(_) => Ok(()),
                }
            }
            Ok(FileKind::Elf64) => {
                match ElfFile::<object::elf::FileHeader64<object::Endianness>>::parse(data) {
                    Ok(elf) => self.elf(source, &elf, members, depth),
                    Err(_) => Ok(()),
                }
            }
            Ok(
                FileKind::Coff
                | FileKind::CoffBig
                | FileKind::Pe32
                | FileKind::Pe64
                | FileKind::MachO32
                | FileKind::MachO64,
            ) => self.named_sections(source, data, members, depth),
            _ => Ok(()),
        }
    }

    fn archive(&mut self, data: &[u8], members: &[String], depth: usize) -> Result<()> {
        let list = read_members(self.path, data)?;
        for member in &list {
            let mut path = members.to_vec();
            path.push(member.name.clone());
            self.buffer(&member.name, &member.data, &path, depth + 1)?;
        }
        Ok(())
    }

    fn elf<H: FileHeader<Endian = object::Endianness>>(
        &mut self,
        source: &str,
        elf: &ElfFile<'_, H>,
        members: &[String],
        depth: usize,
    ) -> Result<()> {
        let endian = elf.endian();
        for section in elf.sections() {
            if section.elf_section_header().sh_type(endian).0 != SHT_LLVM_OFFLOADING {
                continue;
            }
            let name = section.name().unwrap_or("").to_string();
            let data = section.data().map_err(|e| {
                Error::msg(format!(
                    "'{}': {}: {e}",
                    self.path.display(),
                    self.context(members, Some(&name))
                ))
            })?;
            self.binaries(source, data, members, Some(&name), depth)?;
        }
        Ok(())
    }

    /// COFF and PE sections named `.llvm.offloading*`, Mach-O `__LLVM,__offloading`.
    fn named_sections(
        &mut self,
        source: &str,
        data: &[u8],
        members: &[String],
        depth: usize,
    ) -> Result<()> {
        let Ok(file) = object::File::parse(data) else {
            return Ok(());
        };
        let macho = matches!(file.format(), object::BinaryFormat::MachO);
        for section in file.sections() {
            let name = section.name().unwrap_or("");
            let wanted = if macho {
                name == "__offloading" && section.segment_name().ok().flatten() == Some("__LLVM")
            } else {
                name.starts_with(".llvm.offloading")
            };
            if !wanted {
                continue;
            }
            let name = name.to_string();
            let bytes = section.data().map_err(|e| {
                Error::msg(format!(
                    "'{}': {}: {e}",
                    self.path.display(),
                    self.context(members, Some(&name))
                ))
            })?;
            self.binaries(source, bytes, members, Some(&name), depth)?;
        }
        Ok(())
    }

    /// The binaries placed one after another in `data`.
    fn binaries(
        &mut self,
        source: &str,
        data: &[u8],
        members: &[String],
        section: Option<&str>,
        depth: usize,
    ) -> Result<()> {
        for (at, binary) in offload_binary::split(data) {
            let binary = binary.map_err(|e| {
                let e = match self.offset_of(data) {
                    Some(base) => e.rebased(base),
                    None => e,
                };
                self.format_error(members, section, e)
            })?;
            if let Some(payload) = binary.compressed() {
                let inflated = payload.inflate(self.limit).map_err(|e| {
                    let e = match self.offset_of(data) {
                        Some(base) => e.rebased(base + at),
                        None => e,
                    };
                    self.format_error(members, section, e)
                })?;
                self.inflated(source, &inflated, members, section, depth)?;
                continue;
            }
            let offset = self.offset_of(binary.bytes());
            (self.visit)(&Found {
                source,
                members,
                section,
                offset,
                compressed: false,
                binary: &binary,
            })?;
        }
        Ok(())
    }

    fn inflated(
        &mut self,
        source: &str,
        data: &[u8],
        members: &[String],
        section: Option<&str>,
        depth: usize,
    ) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(Error::msg(format!(
                "'{}': compressed offload binaries nest more than {MAX_DEPTH} deep",
                self.path.display()
            )));
        }
        let binary =
            OffloadBinary::parse(data).map_err(|e| self.format_error(members, section, e))?;
        (self.visit)(&Found {
            source,
            members,
            section,
            offset: None,
            compressed: true,
            binary: &binary,
        })
    }
}

/// Calls `visit` for every offload binary in `file` (the bytes of the file at `path`, which
/// `source` names as LLVM names the buffer: the path as given), in file order. A file that
/// holds none, or is of a kind that holds none, is not an error; a binary that does not parse
/// is, with the file, member, section and offset. Compressed binaries are inflated up to
/// `limit` bytes.
pub fn for_each_offload_binary(
    path: &Path,
    source: &str,
    file: &[u8],
    limit: u64,
    visit: &mut dyn FnMut(&Found<'_>) -> Result<()>,
) -> Result<()> {
    let mut scan = Scan {
        path,
        file,
        visit,
        limit,
    };
    scan.buffer(source, file, &[], 0)
}
