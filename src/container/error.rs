//! What can be wrong in a host container (an object file, a program, a shared library) that
//! offload data is read from or rewritten in, and where: every error carries the byte offset
//! of the field or structure at fault, as format errors do.

use std::fmt;

/// An error in a host container: the byte offset of what is wrong, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("offset {offset:#x}: {kind}")]
pub struct Error {
    /// Byte offset, from the start of the file, of the field or structure that is wrong.
    pub offset: u64,
    /// What is wrong with it.
    pub kind: ErrorKind,
}

impl Error {
    /// An error of `kind` at `offset`.
    pub fn new(offset: u64, kind: ErrorKind) -> Self {
        Error { offset, kind }
    }

    /// A format error found in data that starts `base` bytes into the container (a bundle
    /// inside a section, say): its offset counted from the start of the container.
    pub fn in_contents(error: crate::format::Error, base: u64) -> Self {
        let error = error.rebased(base);
        Error::new(error.offset, ErrorKind::Contents(error.kind))
    }
}

/// Container errors reach callers that only know format errors as the same offset and message.
impl From<Error> for crate::format::Error {
    fn from(error: Error) -> Self {
        let kind = match error.kind {
            ErrorKind::Contents(kind) => kind,
            kind => crate::format::ErrorKind::Object(kind.to_string()),
        };
        crate::format::Error::new(error.offset, kind)
    }
}

/// A name in an error message, as the file spells it (not necessarily UTF-8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name(pub String);

impl Name {
    /// The name of raw bytes, invalid UTF-8 replaced.
    pub fn of(bytes: &[u8]) -> Self {
        Name(String::from_utf8_lossy(bytes).into_owned())
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The kinds of container error. Their messages name the structure in the container format's
/// own words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Offload data inside the container (a bundle, a compressed bundle, an offload binary) is
    /// damaged; the offset of the error counts from the start of the container.
    #[error("{0}")]
    Contents(crate::format::ErrorKind),

    // Any file.
    /// The file is of a kind that this edit does not support.
    #[error(
        "sections can be added to ELF and COFF relocatable objects only, not to this {kind} file"
    )]
    UnsupportedKind {
        /// The kind of file, as `object` names it.
        kind: String,
    },

    // Linked ELF programs and shared libraries.
    /// The file does not start with the ELF magic.
    #[error("not an ELF file")]
    NotElf,
    /// The program is not 64-bit little-endian.
    #[error("only 64-bit little-endian programs can be rewritten")]
    UnsupportedProgramClass,
    /// The program is for a machine whose relocations are not known here.
    #[error("machine {machine} is not x86-64 or AArch64")]
    UnsupportedMachine {
        /// `e_machine`.
        machine: u16,
    },
    /// `e_phentsize` or `e_shentsize` is not the size of the class's headers.
    #[error("unexpected program or section header size")]
    HeaderEntrySize,
    /// The program or section header table does not fit in the file.
    #[error("program or section headers lie outside the file")]
    HeadersOutsideFile,
    /// A section or other structure does not fit in the file.
    #[error("{what} lies outside the file")]
    OutsideFile {
        /// What: a section's name (quoted when it comes from the file) or a description.
        what: String,
    },
    /// A dynamic relocation refers to a symbol defined in the section whose bytes move.
    #[error("a dynamic relocation refers to a symbol inside {section}, whose bytes move")]
    RelocationToMovingSymbol {
        /// The section.
        section: String,
    },
    /// A pointer into the section of containers points at no container's start.
    #[error("an address inside {section} ({address:#x}) is not the start of a bundle")]
    PointerIntoBundle {
        /// The section.
        section: String,
        /// The address the pointer holds.
        address: u64,
    },
    /// The rewritten containers are larger than their section.
    #[error(
        "the rewritten bundles ({size} bytes) no longer fit {section} ({room} bytes); \
         growing the section of a linked program is not supported"
    )]
    SectionOutgrown {
        /// The section.
        section: String,
        /// The size of the rewritten containers, packed.
        size: u64,
        /// The size of the section.
        room: u64,
    },
    /// The section of containers lies in no loaded segment.
    #[error("{section} is in no loaded segment")]
    NotLoaded {
        /// The section.
        section: String,
    },
    /// The segment that loads the section does not map it as its offset and address say.
    #[error("the segment that holds {section} does not map it consistently")]
    InconsistentSegment {
        /// The section.
        section: String,
    },
    /// The segment would take the program header table, but maps offsets differently from
    /// the first segment.
    #[error(
        "the segment of {section} does not map offsets as the first segment does; \
         the program header table cannot move there"
    )]
    TableCannotMove {
        /// The section.
        section: String,
    },
    /// A writer bug: two pieces of the new file overlap.
    #[error("internal: overlapping pieces in the rewritten file")]
    OverlappingPieces,
}

/// Result of a container operation.
pub type Result<T> = std::result::Result<T, Error>;
