//! What can be wrong in a kpack archive, a kpack reference or a split binary's HIP wrapper.
//!
//! # Example
//!
//! ```
//! use offload::format::kpack::{Archive, KpackError};
//! use offload::format::ErrorKind;
//!
//! let error = Archive::parse(b"PKZIP, not a kpack archive").unwrap_err();
//! assert_eq!(error.kind, ErrorKind::Kpack(KpackError::NotAnArchive));
//! assert_eq!(error.offset, 0);
//! assert_eq!(KpackError::NotAnArchive.to_string(), "not a kpack archive (no KPAK magic)");
//! ```

/// What is wrong with an archive, a reference or a wrapper.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KpackError {
    /// The file does not start with `KPAK`.
    #[error("not a kpack archive (no KPAK magic)")]
    NotAnArchive,
    /// A version other than 1.
    #[error("kpack archive version {0}; only version 1 is known")]
    UnsupportedVersion(u32),
    /// The table of contents starts past the end of the file.
    #[error(
        "kpack table of contents at {toc_offset:#x} starts past the end of the file ({len:#x})"
    )]
    TocPastEnd {
        /// Its declared offset.
        toc_offset: u64,
        /// The file's length.
        len: u64,
    },
    /// A field of the table of contents or reference is missing or of the wrong kind.
    #[error("kpack {path}: expected {expected}, found {found}")]
    Field {
        /// Where the field is, e.g. `toc["lib/a.so#0"]["gfx90a"].ordinal`.
        path: String,
        /// What it should be, e.g. `"an integer"`.
        expected: &'static str,
        /// What it is (`"missing"`, or the kind of value found).
        found: &'static str,
    },
    /// A compression scheme this reader does not know.
    #[error("kpack compression scheme {0:?} is unknown (known: \"none\", \"zstd-per-kernel\")")]
    UnknownScheme(String),
    /// A stored region lies outside the file.
    #[error("kpack {what} at {offset:#x}, {size} bytes, lies past the end of the file ({len:#x})")]
    RegionPastEnd {
        /// What it is.
        what: String,
        /// Its offset.
        offset: u64,
        /// Its size.
        size: u64,
        /// The file's length.
        len: u64,
    },
    /// An entry names an ordinal that the archive does not have.
    #[error("kpack entry {entry} names code object {ordinal}, but the archive stores {count}")]
    NoSuchOrdinal {
        /// The entry's key and processor.
        entry: String,
        /// Its ordinal.
        ordinal: u64,
        /// How many stored code objects there are.
        count: u64,
    },
    /// A compressed code object inflates to other than its declared size.
    #[error("kpack entry {entry} inflates to {actual} bytes, but its original_size is {declared}")]
    InflatedSize {
        /// The entry's key and processor.
        entry: String,
        /// The declared size.
        declared: u64,
        /// Bytes it inflated to (at most one past the declared size).
        actual: u64,
    },
    /// A code object stored plain whose size is not its declared one.
    #[error(
        "kpack entry {entry} is stored as {stored} bytes, but its original_size is {declared}"
    )]
    StoredSize {
        /// The entry's key and processor.
        entry: String,
        /// The declared size.
        declared: u64,
        /// The stored size.
        stored: u64,
    },
    /// A compressed code object declares more than the caller's limit.
    #[error(
        "kpack entry {entry} inflates to {declared} bytes, more than the limit of {limit} bytes \
         (raise it with --max-decompressed-size)"
    )]
    TooLarge {
        /// The entry's key and processor.
        entry: String,
        /// The declared size.
        declared: u64,
        /// The limit.
        limit: u64,
    },
    /// A zstd frame does not inflate.
    #[error("kpack entry {entry}: zstd: {message}")]
    Zstd {
        /// The entry's key and processor.
        entry: String,
        /// The decoder's message.
        message: String,
    },
    /// A HIP wrapper with a magic other than `HIPF` or `HIPK`.
    #[error("HIP wrapper magic {0:#010x} is neither HIPF nor HIPK")]
    BadWrapperMagic(u32),
}
