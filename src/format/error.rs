//! Format errors: what was wrong and at which byte offset of the buffer being parsed.
//!
//! # Example
//!
//! A bundle cut short: the error names what was cut and the byte offset where.
//!
//! ```
//! use offload::format::bundle::Bundle;
//! use offload::format::ErrorKind;
//!
//! let whole = offload::format::bundle::to_vec(&[("hip-amdgcn-amd-amdhsa--gfx90a", b"code")], 8);
//! let error = Bundle::parse(&whole[..30]).unwrap_err();
//! assert!(matches!(error.kind, ErrorKind::Truncated { .. }), "{error}");
//! assert_eq!(error.offset, 24);
//! assert!(error.to_string().starts_with("offset 0x18: truncated"));
//! // Found in a buffer 4096 bytes into a file, the offset is moved to the file's.
//! assert_eq!(error.rebased(4096).offset, 4120);
//! ```

use crate::format::cuda_fatbin::error::CudaError;
use crate::format::kpack::error::KpackError;
use crate::format::kpack::msgpack::{self, MsgpackError};

/// A format error: the byte offset in the parsed buffer where the problem was found, and what
/// the problem is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("offset {offset:#x}: {kind}")]
pub struct Error {
    /// Byte offset, from the start of the parsed buffer, of the field that is wrong.
    pub offset: u64,
    /// What is wrong with it.
    pub kind: ErrorKind,
}

impl Error {
    /// An error of `kind` at `offset`.
    pub fn new(offset: u64, kind: ErrorKind) -> Self {
        Error { offset, kind }
    }

    /// The same error with its offset moved by `base`, for a buffer that starts `base` bytes
    /// into a larger one.
    #[must_use]
    pub fn rebased(mut self, base: u64) -> Self {
        self.offset = self.offset.saturating_add(base);
        self
    }
}

/// The kinds of format error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ErrorKind {
    /// A field or structure does not fit in the buffer.
    #[error("truncated {what}: needs {needed} bytes, {available} left in the file")]
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Bytes it needs.
        needed: u64,
        /// Bytes left in the buffer.
        available: u64,
    },
    /// A bundle entry's payload lies outside the buffer or overflows.
    #[error("{}", entry_out_of_bounds(*.index, *.offset, *.size, *.len))]
    EntryOutOfBounds {
        /// Index of the entry, from 0.
        index: u64,
        /// Its declared offset.
        offset: u64,
        /// Its declared size.
        size: u64,
        /// Length of the buffer.
        len: u64,
    },
    /// A bundle entry has offset 0, which would place it over the header.
    #[error("bundle entry {index} has offset 0, inside the header")]
    EntryAtZero {
        /// Index of the entry, from 0.
        index: u64,
    },
    /// A bundle declares more entries than its header can hold.
    #[error("bundle header declares {count} entries, more than the data can hold")]
    TooManyEntries {
        /// Declared number of entries.
        count: u64,
    },
    /// A bundle entry ID is not valid UTF-8.
    #[error("bundle entry {index} has an ID that is not valid UTF-8")]
    EntryIdNotUtf8 {
        /// Index of the entry, from 0.
        index: u64,
    },
    /// A bundle entry ID holds a control character: no bundle is written with it.
    #[error(
        "bundle entry {index} has an ID holding the control character U+{code:04X}, which no bundle is written with"
    )]
    EntryIdUnwritable {
        /// Index of the entry, from 0.
        index: u64,
        /// The character's code point.
        code: u32,
    },
    /// A text bundle's start marker has no matching end marker.
    #[error("text bundle entry '{id}' has no end marker")]
    MissingEndMarker {
        /// The entry ID of the unterminated bundle.
        id: String,
    },
    /// A text bundle's start marker line does not end.
    #[error("text bundle start marker is not followed by a line end")]
    UnterminatedStartMarker,
    /// A compressed bundle is shorter than the header of its version.
    #[error(
        "Compressed bundle header size too small: version {version} needs {needed} \
         bytes, {available} present"
    )]
    HeaderTooSmall {
        /// The version.
        version: u16,
        /// Header size of that version.
        needed: u64,
        /// Bytes present.
        available: u64,
    },
    /// A compressed bundle has a version this reader does not know.
    #[error("unknown compressed bundle version {0}")]
    UnknownCompressedVersion(u16),
    /// A compressed bundle names a compression method this reader does not know.
    #[error("Unknown compressing method {0} (0 is zlib, 1 is zstd)")]
    UnknownCompressionMethod(u16),
    /// A compressed bundle's total-size field is impossible.
    #[error("{}", bad_total_size(*.total, *.header, *.available))]
    BadTotalSize {
        /// The declared total size.
        total: u64,
        /// The header size of that version.
        header: u64,
        /// Bytes available from the start of the bundle.
        available: u64,
    },
    /// Decompression failed.
    #[error("could not decompress: {0}")]
    Decompress(String),
    /// Compression failed.
    #[error("could not compress: {0}")]
    Compress(String),
    /// The payload decompressed to a size other than the declared one.
    #[error("compressed bundle decompresses to {actual} bytes, but its header says {declared}")]
    SizeMismatch {
        /// Declared uncompressed size.
        declared: u64,
        /// Actual uncompressed size.
        actual: u64,
    },
    /// The decompressed payload's hash differs from the stored one.
    #[error("compressed bundle hash mismatch: stored {stored:#018x}, computed {computed:#018x}")]
    HashMismatch {
        /// The hash stored in the header.
        stored: u64,
        /// The hash of the decompressed bytes.
        computed: u64,
    },
    /// The payload decompresses to more than the allowed limit.
    #[error(
        "compressed bundle decompresses to more than the limit of {limit} bytes (raise \
         it with --max-decompressed-size)"
    )]
    TooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// Where a container must start (a region that holds only containers), bytes that start
    /// none.
    #[error("bytes that are no bundle, compressed bundle or offload binary")]
    NotAContainer,
    /// Containers nested in one another deeper than the limit.
    #[error("containers nest more than {limit} deep")]
    NestedTooDeep {
        /// The limit.
        limit: usize,
    },
    /// A compressed bundle whose inflated bytes are no bundle.
    #[error("a compressed bundle that does not hold a bundle")]
    NoBundleInside,
    /// A CUDA fat binary header shorter than its fixed part.
    #[error("CUDA fat binary header of {size} bytes, shorter than its {fixed} fixed bytes")]
    FatbinHeaderTooShort {
        /// The size it gives (or the bytes there are).
        size: u64,
        /// The size of the fixed part.
        fixed: u64,
    },
    /// A CUDA fat binary whose declared size runs past the end of its region.
    #[error(
        "CUDA fat binary of {size} bytes after a {header}-byte header runs past the end \
         of the section"
    )]
    FatbinPastEnd {
        /// The size of what follows the header.
        size: u64,
        /// The size of the header.
        header: u64,
    },
    /// A value is too large for the field that must hold it.
    #[error("{what} {value} does not fit in its header field")]
    FieldOverflow {
        /// The field.
        what: &'static str,
        /// The value.
        value: u64,
    },
    /// The data does not start with the magic of the format being read.
    #[error("the data does not start with the {format} magic")]
    BadMagic {
        /// The format expected, e.g. `offload binary`.
        format: &'static str,
    },
    /// An offload binary has a version this reader does not know (it knows 1 to 3).
    #[error("unknown offload binary version {0} (known: 1, 2 and 3)")]
    UnknownOffloadBinaryVersion(u32),
    /// An offload binary's size field is smaller than its header, or runs past the end of the
    /// data.
    #[error("{}", bad_binary_size(*.size, *.header, *.available))]
    BadBinarySize {
        /// The declared size.
        size: u64,
        /// The header size of the binary's version.
        header: u64,
        /// Bytes available from the start of the binary.
        available: u64,
    },
    /// A region that a structure declares by offset and size (an offload binary's entries, an
    /// entry's string entries or image, a string) does not lie inside the structure, or its
    /// end overflows.
    #[error("{}", region_out_of_bounds(.what, *.offset, *.size, *.limit))]
    RegionOutOfBounds {
        /// What the region is, e.g. `image of entry 1`.
        what: String,
        /// Its declared start.
        offset: u64,
        /// Its declared size.
        size: u64,
        /// Where the enclosing structure ends.
        limit: u64,
    },
    /// A NUL-terminated string starts past the end of the structure holding it, or has no NUL
    /// before that end.
    #[error("{}", unterminated_string(.what, *.offset, *.limit))]
    UnterminatedString {
        /// What the string is, e.g. `key of string entry 2 of entry 0`.
        what: String,
        /// Where the string starts.
        offset: u64,
        /// Where the enclosing structure ends.
        limit: u64,
    },
    /// A compressed offload binary's payload starts inside its header.
    #[error(
        "compressed offload binary payload starts at {offset:#x}, inside the {header}-byte header"
    )]
    PayloadInHeader {
        /// The declared start of the payload.
        offset: u64,
        /// The header size.
        header: u64,
    },
    /// A compressed offload binary declares an inflated size smaller than its header.
    #[error(
        "compressed offload binary inflated size {inflated} is smaller than its header \
         ({header} bytes)"
    )]
    BadInflatedSize {
        /// The declared inflated size.
        inflated: u64,
        /// Bytes before the compressed payload, which the inflated binary keeps.
        header: u64,
    },
    /// A compressed offload binary declares an inflated size above the caller's limit.
    #[error(
        "compressed offload binary inflates to {inflated} bytes, more than the limit of \
         {limit} bytes (raise it with --max-decompressed-size)"
    )]
    InflatedTooLarge {
        /// The declared inflated size.
        inflated: u64,
        /// The limit in bytes.
        limit: u64,
    },
    /// An offload binary declares more entries than a binary is read with.
    #[error(
        "offload binary declares {count} entries, more than the {limit} a binary is read \
         with (a binary holds one entry per image and target)"
    )]
    TooManyBinaryEntries {
        /// The declared number of entries.
        count: u64,
        /// The most entries read.
        limit: u64,
    },
    /// A version 2 or 3 offload binary's entries table starts inside its header.
    #[error("offload binary entries table starts at {offset:#x}, inside the {header}-byte header")]
    EntriesInHeader {
        /// The declared start of the entries table.
        offset: u64,
        /// The header size.
        header: u64,
    },
    /// Two entries of a version 2 or 3 offload binary claim overlapping image bytes.
    #[error(
        "image of entry {second} at {offset:#x} overlaps the image of entry {first}, which \
         ends at {end:#x}"
    )]
    OverlappingImages {
        /// The entry whose image comes first.
        first: usize,
        /// The entry whose image starts inside the first one's.
        second: usize,
        /// Where the second image starts.
        offset: u64,
        /// Where the first image ends.
        end: u64,
    },
    /// A compressed offload binary's payload inflates to a size other than the declared one.
    #[error(
        "compressed offload binary payload inflates to {actual} bytes, but its header \
         says {declared}"
    )]
    InflatedSizeMismatch {
        /// Declared size of the inflated payload (the inflated size less the header).
        declared: u64,
        /// Size it actually inflates to (at most one byte more than declared is read).
        actual: u64,
    },
    /// The memory to hold inflated bytes could not be had.
    #[error("not enough memory to hold {bytes} inflated bytes")]
    OutOfMemory {
        /// The bytes that were to be held.
        bytes: u64,
    },
    /// A MessagePack value is malformed.
    #[error(transparent)]
    Msgpack(#[from] MsgpackError),
    /// A kpack archive, reference or wrapper is wrong.
    #[error(transparent)]
    Kpack(#[from] KpackError),
    /// A CUDA fat binary's entries are wrong.
    #[error(transparent)]
    Cuda(#[from] CudaError),
}

/// A bundle entry's message: where it ends, or that its end overflows.
fn entry_out_of_bounds(index: u64, offset: u64, size: u64, len: u64) -> String {
    match offset.checked_add(size) {
        Some(end) => {
            format!("bundle entry {index} ends at {end:#x}, past the end of the data ({len:#x})")
        }
        None => {
            format!(
                "bundle entry {index} has offset {offset:#x} and size {size:#x}, which overflow"
            )
        }
    }
}

/// A compressed bundle's total size: below its header, or past the end of the data.
fn bad_total_size(total: u64, header: u64, available: u64) -> String {
    if total < header {
        format!("compressed bundle total size {total} is smaller than its header ({header} bytes)")
    } else {
        format!(
            "compressed bundle total size {total} is past the end of the data ({available} bytes left)"
        )
    }
}

/// An offload binary's size: below its header, or past the end of the data.
fn bad_binary_size(size: u64, header: u64, available: u64) -> String {
    if size < header {
        format!("offload binary size {size} is smaller than its header ({header} bytes)")
    } else {
        format!("offload binary size {size} is past the end of the data ({available} bytes left)")
    }
}

/// A region's message: where it ends, or that its end overflows.
fn region_out_of_bounds(what: &str, offset: u64, size: u64, limit: u64) -> String {
    match offset.checked_add(size) {
        Some(end) => format!(
            "{what} at {offset:#x} ends at {end:#x}, past the end of the binary ({limit:#x})"
        ),
        None => format!("{what} has offset {offset:#x} and size {size:#x}, which overflow"),
    }
}

/// A string's message: it starts past the end, or has no NUL before the end.
fn unterminated_string(what: &str, offset: u64, limit: u64) -> String {
    if offset >= limit {
        format!("{what} starts at {offset:#x}, past the end of the binary ({limit:#x})")
    } else {
        format!(
            "{what} at {offset:#x} has no NUL terminator before the end of the binary ({limit:#x})"
        )
    }
}

/// MessagePack errors are format errors at the same offset.
impl From<msgpack::Error> for Error {
    fn from(error: msgpack::Error) -> Self {
        Error::new(error.offset, ErrorKind::Msgpack(error.kind))
    }
}

/// Result of a format operation.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::cuda_fatbin::CudaError;
    use crate::format::kpack::msgpack::{self, MsgpackError};
    use crate::format::kpack::KpackError;

    /// A sample of every kind of format error, and its message at offset 0x42 as it read
    /// before the messages were derived: any change here changes what users see.
    type Sample = (ErrorKind, &'static str);

    /// Bundles and text bundles.
    fn bundle_samples() -> Vec<Sample> {
        vec![
            (
                ErrorKind::Truncated {
                    what: "bundle header",
                    needed: 24,
                    available: 3,
                },
                "offset 0x42: truncated bundle header: needs 24 bytes, 3 left in the file",
            ),
            (
                ErrorKind::EntryOutOfBounds {
                    index: 2,
                    offset: 0x40,
                    size: 0x100,
                    len: 0x80,
                },
                "offset 0x42: bundle entry 2 ends at 0x140, past the end of the data (0x80)",
            ),
            (
                ErrorKind::EntryOutOfBounds {
                    index: 1,
                    offset: u64::MAX,
                    size: 2,
                    len: 0x80,
                },
                "offset 0x42: bundle entry 1 has offset 0xffffffffffffffff and size 0x2, which overflow",
            ),
            (
                ErrorKind::EntryAtZero { index: 3 },
                "offset 0x42: bundle entry 3 has offset 0, inside the header",
            ),
            (
                ErrorKind::TooManyEntries { count: 1 << 40 },
                "offset 0x42: bundle header declares 1099511627776 entries, more than the data can hold",
            ),
            (
                ErrorKind::EntryIdNotUtf8 { index: 0 },
                "offset 0x42: bundle entry 0 has an ID that is not valid UTF-8",
            ),
            (
                ErrorKind::MissingEndMarker {
                    id: "hip-amdgcn-amd-amdhsa--gfx90a".into(),
                },
                "offset 0x42: text bundle entry 'hip-amdgcn-amd-amdhsa--gfx90a' has no end marker",
            ),
            (
                ErrorKind::UnterminatedStartMarker,
                "offset 0x42: text bundle start marker is not followed by a line end",
            ),
        ]
    }

    /// Compressed bundles, and containers nested in one another.
    fn compressed_bundle_samples() -> Vec<Sample> {
        vec![
            (
                ErrorKind::HeaderTooSmall {
                    version: 3,
                    needed: 32,
                    available: 20,
                },
                "offset 0x42: Compressed bundle header size too small: version 3 needs 32 bytes, 20 present",
            ),
            (
                ErrorKind::UnknownCompressedVersion(9),
                "offset 0x42: unknown compressed bundle version 9",
            ),
            (
                ErrorKind::UnknownCompressionMethod(7),
                "offset 0x42: Unknown compressing method 7 (0 is zlib, 1 is zstd)",
            ),
            (
                ErrorKind::BadTotalSize {
                    total: 10,
                    header: 32,
                    available: 100,
                },
                "offset 0x42: compressed bundle total size 10 is smaller than its header (32 bytes)",
            ),
            (
                ErrorKind::BadTotalSize {
                    total: 200,
                    header: 32,
                    available: 100,
                },
                "offset 0x42: compressed bundle total size 200 is past the end of the data (100 bytes left)",
            ),
            (
                ErrorKind::Decompress("zstd: corrupted block".into()),
                "offset 0x42: could not decompress: zstd: corrupted block",
            ),
            (
                ErrorKind::Compress("zlib: out of memory".into()),
                "offset 0x42: could not compress: zlib: out of memory",
            ),
            (
                ErrorKind::SizeMismatch {
                    declared: 100,
                    actual: 99,
                },
                "offset 0x42: compressed bundle decompresses to 99 bytes, but its header says 100",
            ),
            (
                ErrorKind::HashMismatch {
                    stored: 0x1234,
                    computed: 0xdead_beef,
                },
                "offset 0x42: compressed bundle hash mismatch: stored 0x0000000000001234, computed 0x00000000deadbeef",
            ),
            (
                ErrorKind::TooLarge { limit: 1 << 30 },
                "offset 0x42: compressed bundle decompresses to more than the limit of 1073741824 bytes (raise it with --max-decompressed-size)",
            ),
            (
                ErrorKind::NotAContainer,
                "offset 0x42: bytes that are no bundle, compressed bundle or offload binary",
            ),
            (
                ErrorKind::NestedTooDeep { limit: 8 },
                "offset 0x42: containers nest more than 8 deep",
            ),
            (
                ErrorKind::NoBundleInside,
                "offset 0x42: a compressed bundle that does not hold a bundle",
            ),
        ]
    }

    /// Offload binaries.
    fn offload_binary_samples() -> Vec<Sample> {
        vec![
            (
                ErrorKind::FieldOverflow {
                    what: "entry count",
                    value: 1 << 33,
                },
                "offset 0x42: entry count 8589934592 does not fit in its header field",
            ),
            (
                ErrorKind::BadMagic {
                    format: "offload binary",
                },
                "offset 0x42: the data does not start with the offload binary magic",
            ),
            (
                ErrorKind::UnknownOffloadBinaryVersion(4),
                "offset 0x42: unknown offload binary version 4 (known: 1, 2 and 3)",
            ),
            (
                ErrorKind::BadBinarySize {
                    size: 16,
                    header: 48,
                    available: 1000,
                },
                "offset 0x42: offload binary size 16 is smaller than its header (48 bytes)",
            ),
            (
                ErrorKind::BadBinarySize {
                    size: 2000,
                    header: 48,
                    available: 1000,
                },
                "offset 0x42: offload binary size 2000 is past the end of the data (1000 bytes left)",
            ),
            (
                ErrorKind::RegionOutOfBounds {
                    what: "image of entry 1".into(),
                    offset: 0x60,
                    size: 0x200,
                    limit: 0x100,
                },
                "offset 0x42: image of entry 1 at 0x60 ends at 0x260, past the end of the binary (0x100)",
            ),
            (
                ErrorKind::RegionOutOfBounds {
                    what: "entries".into(),
                    offset: 0x60,
                    size: u64::MAX,
                    limit: 0x100,
                },
                "offset 0x42: entries has offset 0x60 and size 0xffffffffffffffff, which overflow",
            ),
            (
                ErrorKind::UnterminatedString {
                    what: "key of string entry 2 of entry 0".into(),
                    offset: 0x120,
                    limit: 0x100,
                },
                "offset 0x42: key of string entry 2 of entry 0 starts at 0x120, past the end of the binary (0x100)",
            ),
            (
                ErrorKind::UnterminatedString {
                    what: "value of string entry 0 of entry 1".into(),
                    offset: 0xf0,
                    limit: 0x100,
                },
                "offset 0x42: value of string entry 0 of entry 1 at 0xf0 has no NUL terminator before the end of the binary (0x100)",
            ),
        ]
    }

    /// Compressed offload binaries.
    fn compressed_offload_binary_samples() -> Vec<Sample> {
        vec![
            (
                ErrorKind::PayloadInHeader {
                    offset: 0x10,
                    header: 64,
                },
                "offset 0x42: compressed offload binary payload starts at 0x10, inside the 64-byte header",
            ),
            (
                ErrorKind::BadInflatedSize {
                    inflated: 10,
                    header: 64,
                },
                "offset 0x42: compressed offload binary inflated size 10 is smaller than its header (64 bytes)",
            ),
            (
                ErrorKind::InflatedTooLarge {
                    inflated: 1 << 40,
                    limit: 1 << 30,
                },
                "offset 0x42: compressed offload binary inflates to 1099511627776 bytes, more than the limit of 1073741824 bytes (raise it with --max-decompressed-size)",
            ),
            (
                ErrorKind::TooManyBinaryEntries {
                    count: 1 << 20,
                    limit: 1 << 16,
                },
                "offset 0x42: offload binary declares 1048576 entries, more than the 65536 a binary is read with (a binary holds one entry per image and target)",
            ),
            (
                ErrorKind::InflatedSizeMismatch {
                    declared: 100,
                    actual: 101,
                },
                "offset 0x42: compressed offload binary payload inflates to 101 bytes, but its header says 100",
            ),
            (
                ErrorKind::OutOfMemory { bytes: 1 << 40 },
                "offset 0x42: not enough memory to hold 1099511627776 inflated bytes",
            ),
        ]
    }

    /// kpack archives, references and wrappers, and their MessagePack.
    fn kpack_samples() -> Vec<Sample> {
        vec![
            (
                ErrorKind::Msgpack(MsgpackError::ReservedByte),
                "offset 0x42: msgpack: reserved type byte 0xc1",
            ),
            (
                ErrorKind::Msgpack(MsgpackError::TooDeep),
                "offset 0x42: msgpack: arrays and maps nest deeper than 64",
            ),
            (
                ErrorKind::Msgpack(MsgpackError::CountPastEnd {
                    what: "map",
                    count: 9,
                    available: 4,
                }),
                "offset 0x42: msgpack: map of 9 elements cannot fit in the 4 bytes left",
            ),
            (
                ErrorKind::Kpack(KpackError::NotAnArchive),
                "offset 0x42: not a kpack archive (no KPAK magic)",
            ),
            (
                ErrorKind::Kpack(KpackError::UnsupportedVersion(2)),
                "offset 0x42: kpack archive version 2; only version 1 is known",
            ),
            (
                ErrorKind::Kpack(KpackError::TocPastEnd {
                    toc_offset: 0x1000,
                    len: 0x800,
                }),
                "offset 0x42: kpack table of contents at 0x1000 starts past the end of the file (0x800)",
            ),
            (
                ErrorKind::Kpack(KpackError::Field {
                    path: "toc[\"lib/a.so#0\"][\"gfx90a\"].ordinal".into(),
                    expected: "an integer",
                    found: "missing",
                }),
                "offset 0x42: kpack toc[\"lib/a.so#0\"][\"gfx90a\"].ordinal: expected an integer, found missing",
            ),
            (
                ErrorKind::Kpack(KpackError::UnknownScheme("lz4".into())),
                "offset 0x42: kpack compression scheme \"lz4\" is unknown (known: \"none\", \"zstd-per-kernel\")",
            ),
            (
                ErrorKind::Kpack(KpackError::RegionPastEnd {
                    what: "blob 3".into(),
                    offset: 0x40,
                    size: 4096,
                    len: 0x100,
                }),
                "offset 0x42: kpack blob 3 at 0x40, 4096 bytes, lies past the end of the file (0x100)",
            ),
        ]
    }

    /// The entries of kpack archives.
    fn kpack_entry_samples() -> Vec<Sample> {
        let entry = || "lib/a.so#0 gfx90a".to_string();
        vec![
            (
                ErrorKind::Kpack(KpackError::NoSuchOrdinal {
                    entry: entry(),
                    ordinal: 5,
                    count: 2,
                }),
                "offset 0x42: kpack entry lib/a.so#0 gfx90a names code object 5, but the archive stores 2",
            ),
            (
                ErrorKind::Kpack(KpackError::InflatedSize {
                    entry: entry(),
                    declared: 10,
                    actual: 11,
                }),
                "offset 0x42: kpack entry lib/a.so#0 gfx90a inflates to 11 bytes, but its original_size is 10",
            ),
            (
                ErrorKind::Kpack(KpackError::StoredSize {
                    entry: entry(),
                    declared: 10,
                    stored: 9,
                }),
                "offset 0x42: kpack entry lib/a.so#0 gfx90a is stored as 9 bytes, but its original_size is 10",
            ),
            (
                ErrorKind::Kpack(KpackError::TooLarge {
                    entry: entry(),
                    declared: 1 << 40,
                    limit: 1 << 30,
                }),
                "offset 0x42: kpack entry lib/a.so#0 gfx90a inflates to 1099511627776 bytes, more than the limit of 1073741824 bytes (raise it with --max-decompressed-size)",
            ),
            (
                ErrorKind::Kpack(KpackError::Zstd {
                    entry: entry(),
                    message: "Unknown frame descriptor".into(),
                }),
                "offset 0x42: kpack entry lib/a.so#0 gfx90a: zstd: Unknown frame descriptor",
            ),
            (
                ErrorKind::Kpack(KpackError::BadWrapperMagic(0x4849_5058)),
                "offset 0x42: HIP wrapper magic 0x48495058 is neither HIPF nor HIPK",
            ),
        ]
    }

    /// CUDA fat binaries.
    fn cuda_samples() -> Vec<Sample> {
        vec![
            (
                ErrorKind::FatbinHeaderTooShort { size: 8, fixed: 16 },
                "offset 0x42: CUDA fat binary header of 8 bytes, shorter than its 16 fixed bytes",
            ),
            (
                ErrorKind::FatbinPastEnd {
                    size: 4096,
                    header: 16,
                },
                "offset 0x42: CUDA fat binary of 4096 bytes after a 16-byte header runs past the end of the section",
            ),
            (
                ErrorKind::Cuda(CudaError::EntryTruncated {
                    needed: 64,
                    available: 10,
                }),
                "offset 0x42: CUDA fat binary entry of 10 bytes, shorter than its 64-byte header",
            ),
            (
                ErrorKind::Cuda(CudaError::EntryHeaderTooShort { size: 32 }),
                "offset 0x42: CUDA fat binary entry header of 32 bytes, shorter than its 64 fixed bytes",
            ),
            (
                ErrorKind::Cuda(CudaError::EntryPastEnd {
                    size: 4096,
                    available: 100,
                }),
                "offset 0x42: CUDA fat binary entry payload of 4096 bytes runs past the end of its fat binary (100 bytes left)",
            ),
            (
                ErrorKind::Cuda(CudaError::InflatedSize {
                    declared: 100,
                    actual: 50,
                }),
                "offset 0x42: CUDA fat binary entry inflates to 50 bytes, but its header says 100",
            ),
            (
                ErrorKind::Cuda(CudaError::LzDamaged("a match reaches before the start")),
                "offset 0x42: CUDA fat binary entry's compressed payload is damaged: a match reaches before the start",
            ),
        ]
    }

    #[test]
    fn every_message_reads_as_before() {
        let samples = [
            bundle_samples(),
            compressed_bundle_samples(),
            offload_binary_samples(),
            compressed_offload_binary_samples(),
            kpack_samples(),
            kpack_entry_samples(),
            cuda_samples(),
        ];
        let samples: Vec<Sample> = samples.into_iter().flatten().collect();
        assert_eq!(samples.len(), 58);
        for (kind, expected) in samples {
            assert_eq!(Error::new(0x42, kind).to_string(), expected);
        }
    }

    #[test]
    fn msgpack_messages_read_as_before() {
        let cases: [(&[u8], &str); 4] = [
            (
                b"\x92\x01\xa5ab",
                "offset 0x3: truncated msgpack string: needs 5 bytes, 2 left in the file",
            ),
            (
                b"\x81\xa1a\xc1",
                "offset 0x3: msgpack: reserved type byte 0xc1",
            ),
            (
                b"\xdd\xff\xff\xff\xff\x00",
                "offset 0x0: msgpack: array of 4294967295 elements cannot fit in the 1 bytes left",
            ),
            (
                &[0x91; 100],
                "offset 0x40: msgpack: arrays and maps nest deeper than 64",
            ),
        ];
        for (bytes, expected) in cases {
            assert_eq!(msgpack::read(bytes).unwrap_err().to_string(), expected);
        }
    }
}
