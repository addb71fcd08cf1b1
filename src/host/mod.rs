//! Where offload data lives in host files: object files and their sections.
//!
//! These readers and rewriters take hostile files as `format` does, under the same rules:
//! indexing and narrowing `as` casts are denied. An offset or count read from a file is looked
//! up with `get` and is an error, or nothing, when it does not fit; an index the code found
//! itself (a section found by name, a segment found by address) goes through an accessor that
//! says so; each value written to a narrower field of the format is checked first, and the
//! few helpers that truncate say why.

#![deny(clippy::indexing_slicing, clippy::cast_possible_truncation)]

pub mod archive;
pub mod error;
pub mod kpack;
pub mod ld_so;
pub mod objcopy;
pub mod package;
pub mod program;
pub mod scan;

pub use error::{Error, ErrorKind};

use object::{FileKind, Object, ObjectSection};

/// The prefix of the names of sections that hold bundle entries in a fat object.
pub const BUNDLE_SECTION_PREFIX: &str = "__CLANG_OFFLOAD_BUNDLE__";

/// Why the bundle sections of an object file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BundleSectionsError {
    /// The file does not parse as an object file.
    #[error(transparent)]
    Object(#[from] object::Error),
    /// A bundle section's contents cannot be read.
    #[error("section {name}: {source}")]
    Section {
        /// The section's name.
        name: String,
        /// Why its contents cannot be read.
        source: object::Error,
    },
}

/// The bundle entries stored as `__CLANG_OFFLOAD_BUNDLE__<entry ID>` sections of an object
/// file, in section order: (entry ID, section contents). The host entry of such an object is
/// a single zero byte standing for the object itself.
pub fn bundle_sections(data: &[u8]) -> Result<Vec<(&str, &[u8])>, BundleSectionsError> {
    let file = object::File::parse(data)?;
    let mut out = Vec::new();
    for section in file.sections() {
        let Ok(name) = section.name() else { continue };
        if let Some(id) = name.strip_prefix(BUNDLE_SECTION_PREFIX) {
            let contents = section
                .data()
                .map_err(|source| BundleSectionsError::Section {
                    name: name.to_string(),
                    source,
                })?;
            out.push((id, contents));
        }
    }
    Ok(out)
}

/// Whether `data` is an object file (ELF, COFF, PE, Mach-O, XCOFF) that parses, which is what
/// makes clang-offload-bundler use its object handler for `-type=o` and `-type=a`.
pub fn is_object_file(data: &[u8]) -> bool {
    let object_kind = matches!(
        FileKind::parse(data),
        Ok(FileKind::Elf32
            | FileKind::Elf64
            | FileKind::Coff
            | FileKind::CoffBig
            | FileKind::Pe32
            | FileKind::Pe64
            | FileKind::MachO32
            | FileKind::MachO64
            | FileKind::Xcoff32
            | FileKind::Xcoff64)
    );
    object_kind && object::File::parse(data).is_ok()
}

/// Whether `input` is a linked ELF program or shared library of a host (not an object, an
/// archive or another format, nor a device's code object: an AMDGPU code object or a cubin is
/// a shared object too, but one a runtime loads onto a device, not one the host loader maps),
/// whose offload images are registered with a runtime as they are.
pub fn is_linked_elf(input: &[u8]) -> bool {
    // ELF's e_type of a program (ET_EXEC) and of a shared library (ET_DYN).
    const ET_EXEC: u16 = 2;
    const ET_DYN: u16 = 3;
    let header = match object::FileKind::parse(input) {
        Ok(object::FileKind::Elf64) => input.get(16..20).and_then(<[u8]>::first_chunk::<4>),
        _ => None,
    };
    let Some(&[t0, t1, m0, m1]) = header else {
        return false;
    };
    let (e_type, machine) = (u16::from_le_bytes([t0, t1]), u16::from_le_bytes([m0, m1]));
    let device = [object::elf::EM_AMDGPU, object::elf::EM_CUDA]
        .into_iter()
        .any(|m| m == object::elf::Machine(machine));
    (e_type == ET_EXEC || e_type == ET_DYN) && !device
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundles_bitcode_and_truncated_headers_are_not_objects() {
        assert!(!is_object_file(b"__CLANG_OFFLOAD_BUNDLE__"));
        assert!(!is_object_file(b"BC\xc0\xde"));
        assert!(!is_object_file(b"\x7fELF\x02\x01\x01"));
        assert!(!is_object_file(b""));
    }

    #[test]
    fn a_device_code_object_is_not_a_linked_program() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert!(is_linked_elf(&exe));
        for machine in [object::elf::EM_AMDGPU, object::elf::EM_CUDA] {
            let mut device = exe.clone();
            device
                .get_mut(18..20)
                .unwrap()
                .copy_from_slice(&machine.0.to_le_bytes());
            assert!(!is_linked_elf(&device));
        }
        assert!(!is_linked_elf(exe.get(..19).unwrap()));
    }

    #[test]
    fn this_test_binary_is_an_object() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert!(is_object_file(&exe));
    }
}
