//! The bundle entries `llvm-readobj --offloading` (LLVM 22) lists before its usual output, one
//! `<entry ID>\tfile://<file>#offset=<n>&size=<n>` line each, found as that tool finds them, so
//! that `offload ls --uri=readobj` prints the same lines.
//!
//! LLVM 22 looks only into ELF files (and the ELF members of archives, named by their member
//! name, offsets counted from the member's start). In every section whose contents start with
//! a bundle or a compressed bundle it reads one bundle after another:
//! - after a bundle, the next one is the next bundle magic (found by searching), so compressed
//!   bundles that follow plain ones are not listed;
//! - a compressed bundle reaches to the next `CCOB` (or the section's end), and the entries
//!   after it are listed with their offsets *in the decompressed bundle* and their
//!   decompressed sizes: not a byte range of the file. Plain bundles after it are not listed.
//!
//! Host entries are listed like the others. Offload binaries (`.llvm.offloading`) are not.
//!
//! # Example
//!
//! The lines `llvm-readobj --offloading` prints for an object that holds a bundle (made here
//! by wrapping one, as `llvm-offload-wrapper --kind=hip` does).
//!
//! ```
//! use offload::format::bundle;
//! use offload::ops::readobj;
//! use offload::ops::wrapper::{self, FileType, OffloadKind, OffloadWrapperConfig, Relocatable};
//! use offload::target::processor::LlvmVersion;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let fatbin = dir.path().join("kernels.hipfb");
//! let entries: [(&str, &[u8]); 2] = [
//!     ("host-x86_64-unknown-linux-gnu-", b""),
//!     ("hipv4-amdgcn-amd-amdhsa--gfx90a", b"code for gfx90a"),
//! ];
//! std::fs::write(&fatbin, bundle::to_vec(&entries, 4096))?;
//! let object = dir.path().join("wrapper.o");
//! wrapper::wrap_llvm22(&OffloadWrapperConfig {
//!     kind: OffloadKind::Hip,
//!     triple: "x86_64-unknown-linux-gnu".into(),
//!     output: object.clone(),
//!     file_type: FileType::Object,
//!     images: vec![fatbin.clone()],
//!     bundle: None,
//!     llvm: LlvmVersion::V22,
//!     relocatable: Relocatable::No,
//! })?;
//!
//! let listed = readobj::readobj_entries(&object)?;
//! let ids: Vec<&str> = listed.iter().map(|entry| entry.id.as_str()).collect();
//! assert_eq!(ids, ["host-x86_64-unknown-linux-gnu-", "hipv4-amdgcn-amd-amdhsa--gfx90a"]);
//! assert_eq!(listed[1].size, 15);
//! assert!(listed[1].line().starts_with("hipv4-amdgcn-amd-amdhsa--gfx90a\tfile://"));
//! // A bare bundle is no ELF file: LLVM lists nothing for it.
//! assert!(readobj::readobj_entries(&fatbin)?.is_empty());
//! # Ok(())
//! # }
//! ```

use std::path::Path;

use memchr::memmem;
use object::{Object, ObjectSection};

use crate::error::{Error, Result};
use crate::format::bundle::{self, Bundle};
use crate::format::ccob::{self, CompressedBundle, DEFAULT_MAX_DECOMPRESSED};
use crate::host::archive::read_members;
use crate::io::Input;

/// One line of `llvm-readobj --offloading`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadobjEntry {
    /// The bundle entry ID, as stored.
    pub id: String,
    /// The file as named on the command line, or the archive member's name.
    pub file: String,
    /// Where LLVM says the entry is: its offset in `file`, or, after a compressed bundle, in
    /// the decompressed bundle.
    pub offset: u64,
    /// The entry's size (decompressed, after a compressed bundle).
    pub size: u64,
}

impl ReadobjEntry {
    /// The line as LLVM prints it, with its newline.
    pub fn line(&self) -> String {
        format!(
            "{}\tfile://{}#offset={}&size={}\n",
            self.id, self.file, self.offset, self.size
        )
    }
}

/// The entries `llvm-readobj-22 --offloading` lists for the file at `path`, in its order. Files
/// that are neither ELF nor archives have none, as LLVM lists none for them.
#[tracing::instrument(skip_all, fields(file = %path.display()))]
pub fn readobj_entries(path: &Path) -> Result<Vec<ReadobjEntry>> {
    let input = Input::open(path)?;
    let name = path.to_string_lossy().into_owned();
    let mut entries = Vec::new();
    if input.starts_with(b"!<arch>\n") || input.starts_with(b"!<thin>\n") {
        for member in read_members(path, &input)? {
            let context = format!("member '{}'", member.name);
            elf_entries(path, &context, &member.name, &member.data, &mut entries)?;
        }
    } else {
        elf_entries(path, "", &name, &input, &mut entries)?;
    }
    input.intact()?;
    Ok(entries)
}

/// The entries of the ELF file `data` (named `name` in the lines), when it is one.
fn elf_entries(
    path: &Path,
    context: &str,
    name: &str,
    data: &[u8],
    into: &mut Vec<ReadobjEntry>,
) -> Result<()> {
    if !matches!(
        object::FileKind::parse(data),
        Ok(object::FileKind::Elf32 | object::FileKind::Elf64)
    ) {
        return Ok(());
    }
    let file =
        object::File::parse(data).map_err(|e| Error::file(path, format!("{context}: {e}")))?;
    for section in file.sections() {
        // Sections without contents in the file (SHT_NOBITS) hold no bundle.
        let Some((section_offset, _)) = section.file_range() else {
            continue;
        };
        let contents = section.data().unwrap_or_default();
        if !(bundle::is_bundle(contents) || ccob::is_compressed(contents)) {
            continue;
        }
        let section_name = section.name().unwrap_or("?");
        let place = Place {
            path,
            context: if context.is_empty() {
                format!("section '{section_name}'")
            } else {
                format!("{context}, section '{section_name}'")
            },
            name,
            section_offset,
        };
        place.walk(contents, into)?;
    }
    Ok(())
}

/// A section whose bundles are being listed.
struct Place<'a> {
    path: &'a Path,
    context: String,
    name: &'a str,
    section_offset: u64,
}

impl Place<'_> {
    /// Lists the bundles of `contents` one after another, as LLVM 22 finds them.
    fn walk(&self, contents: &[u8], into: &mut Vec<ReadobjEntry>) -> Result<()> {
        let mut at = 0;
        while at < contents.len() {
            let rest = &contents[at..];
            let next = if ccob::is_compressed(rest) {
                let end = memmem::find(&rest[ccob::MAGIC.len()..], ccob::MAGIC)
                    .map_or(rest.len(), |n| n + ccob::MAGIC.len());
                self.compressed(&rest[..end], at, into)?;
                Some(end)
            } else if bundle::is_bundle(rest) {
                self.plain(rest, at, into)?;
                memmem::find(&rest[bundle::MAGIC.len()..], bundle::MAGIC)
                    .map(|n| n + bundle::MAGIC.len())
            } else {
                None
            };
            match next {
                Some(n) => at += n,
                None => break,
            }
        }
        Ok(())
    }

    /// The entries of the bundle at offset `at` of the section, at their places in the file.
    fn plain(&self, data: &[u8], at: usize, into: &mut Vec<ReadobjEntry>) -> Result<()> {
        let base = self.section_offset + at as u64;
        let parsed = Bundle::parse(data).map_err(|e| self.damage(e.rebased(base)))?;
        for entry in parsed.iter().flat_map(Bundle::entries) {
            into.push(self.entry(entry.id, base + entry.offset, entry.data.len()));
        }
        Ok(())
    }

    /// The entries of the compressed bundle at offset `at` of the section, at their places in
    /// the decompressed bundle (as LLVM 22 prints them).
    fn compressed(&self, data: &[u8], at: usize, into: &mut Vec<ReadobjEntry>) -> Result<()> {
        let base = self.section_offset + at as u64;
        let inflated = CompressedBundle::parse(data)
            .and_then(|c| match c {
                Some(c) => c.decompress(DEFAULT_MAX_DECOMPRESSED).map(Some),
                None => Ok(None),
            })
            .map_err(|e| self.damage(e.rebased(base)))?
            .unwrap_or_default();
        let inside = format!("{}, compressed bundle at offset {base:#x}", self.context);
        let parsed = Bundle::parse(&inflated)
            .map_err(|e| Error::format_in(self.path, &inside, e))?
            .ok_or_else(|| {
                Error::file(
                    self.path,
                    format!("{inside}: the decompressed data is not a bundle"),
                )
            })?;
        for entry in parsed.entries() {
            into.push(self.entry(entry.id, entry.offset, entry.data.len()));
        }
        Ok(())
    }

    fn entry(&self, id: &str, offset: u64, size: usize) -> ReadobjEntry {
        ReadobjEntry {
            id: id.to_string(),
            file: self.name.to_string(),
            offset,
            size: size as u64,
        }
    }

    fn damage(&self, e: crate::format::Error) -> Error {
        Error::format_in(self.path, &self.context, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_as_llvm_prints_them() {
        let entry = ReadobjEntry {
            id: "hipv4-amdgcn-amd-amdhsa--gfx90a".into(),
            file: "./a.out".into(),
            offset: 8192,
            size: 4232,
        };
        assert_eq!(
            entry.line(),
            "hipv4-amdgcn-amd-amdhsa--gfx90a\tfile://./a.out#offset=8192&size=4232\n"
        );
    }

    #[test]
    fn a_bundle_after_a_compressed_one_is_not_found_nor_one_before() {
        let plain = bundle::to_vec(
            &[
                ("host-x86_64-unknown-linux-gnu-", &b""[..]),
                ("hip-x", &b"abc"[..]),
            ],
            8,
        );
        // zlib codes even a short input in bits, so the bundle magic does not show in it (zstd
        // may store it as is, and LLVM would then take it for a bundle).
        let options = ccob::CompressOptions {
            method: ccob::Method::Zlib,
            level: 9,
            version: 3,
        };
        let (packed, _) = ccob::compress(&plain, &options).unwrap();
        assert!(memmem::find(&packed, bundle::MAGIC).is_none());
        let place = Place {
            path: Path::new("f"),
            context: "section 's'".into(),
            name: "f",
            section_offset: 100,
        };
        let ids = |contents: &[u8]| {
            let mut into = Vec::new();
            place.walk(contents, &mut into).unwrap();
            into.iter().map(|e| (e.offset, e.size)).collect::<Vec<_>>()
        };
        let first = Bundle::parse(&plain).unwrap().unwrap().entries()[1].offset;
        let plain_then_packed = [plain.as_slice(), &packed].concat();
        assert_eq!(
            ids(&plain_then_packed),
            [(100 + first, 0), (100 + first, 3)]
        );
        let packed_then_plain = [packed.as_slice(), &plain].concat();
        assert_eq!(ids(&packed_then_plain), [(first, 0), (first, 3)]);
        let two_plain = [plain.as_slice(), &plain].concat();
        let second = 100 + plain.len() as u64 + first;
        assert_eq!(
            ids(&two_plain),
            [(100 + first, 0), (100 + first, 3), (second, 0), (second, 3)]
        );
    }
}
