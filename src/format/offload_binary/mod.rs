//! OffloadBinary: the container (magic `10 FF 10 AD`) that clang's offload driver embeds in
//! `.llvm.offloading` sections and clang-offload-packager writes, read and written as LLVM
//! does.
//!
//! Layout, all integers little-endian, offsets from the start of the binary:
//!
//! | part         | fields                                                                   | size   |
//! |--------------|--------------------------------------------------------------------------|--------|
//! | header       | magic, u32 version, u64 size, u64 entries offset, u64 entry size (v1) or entry count (v2+), u64 inflated size (v3 only) | 32 or 40 |
//! | entry        | u16 image kind, u16 offload kind, u32 flags, u64 string entries offset, u64 string count, u64 image offset, u64 image size | 40 |
//! | string entry | u64 key offset, u64 value offset, u64 value size (v2+ only)              | 16 or 24 |
//!
//! Writers place the header, the entries, every entry's string entries, one string table
//! (LLVM's `StringTableBuilder`, ELF flavour) and zero padding to 8, then the images back to
//! back and zero padding to 8. Keys are NUL-terminated; version 1 values are NUL-terminated
//! too, later ones have a size and may hold any bytes.
//!
//! LLVM 19 reads and writes version 1 only, one image per binary; a section holds binaries one
//! after another. LLVM 23 writes version 2, which holds several images in one binary (its
//! entries, then every string entry, then one shared string table, then the images). Version 3 adds the inflated size: when it is not 0, everything after the header is one zstd frame (when it
//! starts with the zstd magic) or zlib stream which inflates to the rest of the binary.
//!
//! # Example
//!
//! Write an offload binary of one image, as clang-offload-packager does, and read it back.
//!
//! ```
//! use offload::format::offload_binary::{
//!     self, HipEncoding, ImageKind, OffloadBinary, OffloadKind, OffloadingImage,
//! };
//!
//! let strings: [(&[u8], &[u8]); 2] = [(b"triple", b"amdgcn-amd-amdhsa"), (b"arch", b"gfx90a")];
//! let image = OffloadingImage {
//!     image_kind: ImageKind::Object,
//!     offload_kind: OffloadKind::Hip(HipEncoding::BitFlag),
//!     flags: 0,
//!     strings: &strings,
//!     image: b"code for gfx90a",
//! };
//! let bytes = offload_binary::write(offload_binary::VERSION_1, &[image]).unwrap();
//! assert!(bytes.starts_with(&offload_binary::MAGIC));
//!
//! let binary = OffloadBinary::parse(&bytes).unwrap();
//! assert_eq!(binary.version(), 1);
//! assert_eq!(binary.size(), bytes.len() as u64);
//! let entry = &binary.entries()[0];
//! assert_eq!(entry.image_kind, ImageKind::Object);
//! assert_eq!(entry.triple(), b"amdgcn-amd-amdhsa");
//! assert_eq!(entry.arch(), b"gfx90a");
//! assert_eq!(entry.image, b"code for gfx90a");
//! ```

use std::io::Write;

use object::endian::{LittleEndian as Le, U16, U32, U64};
use object::pod::{self, Pod};

use crate::format::error::{Error, ErrorKind, Result};
use crate::llvm::adt::strtab::{Flavor, StringTable};

mod apart;
mod head;

pub use head::{ListedHead, PayloadHead, PEEK};

/// The magic bytes that start an offload binary.
pub const MAGIC: [u8; 4] = [0x10, 0xff, 0x10, 0xad];

/// Alignment of offload binaries, of their images and of their sizes.
pub const ALIGNMENT: u64 = 8;

/// The default cap on the size of an inflated (decompressed) binary: 16 GiB.
pub const DEFAULT_MAX_INFLATED: u64 = 16 << 30;

/// The version LLVM 19 reads and writes.
pub const VERSION_1: u32 = 1;

/// The version LLVM 23 writes: one binary holding every image.
pub const VERSION_2: u32 = 2;

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Bytes LLVM 19 requires of a buffer before it reads a version-1 header and its entry.
const LLVM19_MINIMUM: u64 = 72;

const ENTRY_SIZE: u64 = 40;

/// The most entries a binary is read with. A binary holds an entry per image and target (a
/// few, or a few hundred for a library built for every processor); a compressed binary of
/// entries that all share one image and one string table would otherwise list a million rows
/// from a few kilobytes.
pub const MAX_ENTRIES: u64 = 1 << 16;

/// Header size of version 3, which adds the inflated size.
const V3_HEADER_SIZE: u64 = V3_HEADER_LEN as u64;

/// [`V3_HEADER_SIZE`] in memory terms.
const V3_HEADER_LEN: usize = 40;

/// The header of versions 1 and 2; version 3 follows it with a `u64` inflated size.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct RawHeader {
    magic: [u8; 4],
    version: U32<Le>,
    size: U64<Le>,
    entries_offset: U64<Le>,
    /// Version 1: the size of the entry (40). Later versions: the number of entries.
    entry_size_or_count: U64<Le>,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct RawEntry {
    image_kind: U16<Le>,
    offload_kind: U16<Le>,
    flags: U32<Le>,
    string_offset: U64<Le>,
    num_strings: U64<Le>,
    image_offset: U64<Le>,
    image_size: U64<Le>,
}

/// A version 1 string entry; later versions add a `u64` value size.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct RawStringEntry {
    key_offset: U64<Le>,
    value_offset: U64<Le>,
}

// SAFETY: the structures hold byte arrays only (alignment 1, no padding), and every bit
// pattern is a valid value.
unsafe impl Pod for RawHeader {}
// SAFETY: as above.
unsafe impl Pod for RawEntry {}
// SAFETY: as above.
unsafe impl Pod for RawStringEntry {}

/// Field offsets inside the structures, for error positions.
mod field_at {
    pub const VERSION: u64 = 4;
    pub const SIZE: u64 = 8;
    pub const ENTRIES_OFFSET: u64 = 16;
    pub const ENTRY_SIZE_OR_COUNT: u64 = 24;
    pub const INFLATED_SIZE: u64 = 32;
    pub const STRING_OFFSET: u64 = 8;
    pub const IMAGE_OFFSET: u64 = 24;
    pub const VALUE_OFFSET: u64 = 8;
    pub const VALUE_SIZE: u64 = 16;
}

/// What an image holds (`ImageKind` in LLVM).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ImageKind {
    /// No kind (0).
    None,
    /// An object file, e.g. an AMDGPU code object (1).
    Object,
    /// LLVM bitcode (2).
    Bitcode,
    /// An NVIDIA cubin (3).
    Cubin,
    /// An NVIDIA fatbinary (4).
    Fatbinary,
    /// PTX assembly (5).
    Ptx,
    /// SPIR-V (6; LLVM 20 and later, unknown to LLVM 19).
    Spirv,
    /// A value no LLVM version defines, kept as stored.
    Unknown(u16),
}

impl ImageKind {
    /// The kind stored as `raw`.
    pub fn from_raw(raw: u16) -> ImageKind {
        match raw {
            0 => ImageKind::None,
            1 => ImageKind::Object,
            2 => ImageKind::Bitcode,
            3 => ImageKind::Cubin,
            4 => ImageKind::Fatbinary,
            5 => ImageKind::Ptx,
            6 => ImageKind::Spirv,
            other => ImageKind::Unknown(other),
        }
    }

    /// The value stored in an entry.
    pub fn raw(self) -> u16 {
        match self {
            ImageKind::None => 0,
            ImageKind::Object => 1,
            ImageKind::Bitcode => 2,
            ImageKind::Cubin => 3,
            ImageKind::Fatbinary => 4,
            ImageKind::Ptx => 5,
            ImageKind::Spirv => 6,
            ImageKind::Unknown(raw) => raw,
        }
    }

    /// The name LLVM gives the kind (`getImageKindName`), used as a file extension: `o`, `bc`,
    /// `cubin`, `fatbin`, `s`, `spv`, and `""` for the others. LLVM 19 has no SPIR-V kind; see
    /// [`ImageKind::name_llvm19`].
    pub fn name(self) -> &'static str {
        match self {
            ImageKind::Spirv => "spv",
            other => other.name_llvm19(),
        }
    }

    /// The name LLVM 19 gives the kind: as [`ImageKind::name`], but `""` for SPIR-V.
    pub fn name_llvm19(self) -> &'static str {
        match self {
            ImageKind::Object => "o",
            ImageKind::Bitcode => "bc",
            ImageKind::Cubin => "cubin",
            ImageKind::Fatbinary => "fatbin",
            ImageKind::Ptx => "s",
            _ => "",
        }
    }

    /// The kind LLVM 19 gives a name (`getImageKind`, case-sensitive): the inverse of
    /// [`ImageKind::name_llvm19`], and [`ImageKind::None`] for anything else, `spv` included.
    pub fn from_name_llvm19(name: &[u8]) -> ImageKind {
        match name {
            b"o" => ImageKind::Object,
            b"bc" => ImageKind::Bitcode,
            b"cubin" => ImageKind::Cubin,
            b"fatbin" => ImageKind::Fatbinary,
            b"s" => ImageKind::Ptx,
            _ => ImageKind::None,
        }
    }

    /// The kind clang-offload-packager 19 gives an input file: bitcode when the contents start
    /// with a bitcode magic (raw or wrapper), otherwise from the extension after the last `.`
    /// of the file name.
    pub fn of_packager_input_llvm19(path: &[u8], contents: &[u8]) -> ImageKind {
        if contents.starts_with(b"BC\xc0\xde") || contents.starts_with(b"\xde\xc0\x17\x0b") {
            return ImageKind::Bitcode;
        }
        let file_name = match path.iter().rposition(|&b| b == b'/') {
            Some(slash) => path.split_at(slash + 1).1,
            None => path,
        };
        if file_name == b"." || file_name == b".." {
            return ImageKind::None;
        }
        match file_name.iter().rposition(|&b| b == b'.') {
            Some(dot) => ImageKind::from_name_llvm19(file_name.split_at(dot + 1).1),
            None => ImageKind::None,
        }
    }

    /// The text `llvm-objdump --offloading` prints for the kind: `elf`, `llvm ir`, `cubin`,
    /// `fatbinary`, `ptx`, or `<none>` (SPIR-V included).
    pub fn objdump_name(self) -> &'static str {
        match self {
            ImageKind::Object => "elf",
            ImageKind::Bitcode => "llvm ir",
            ImageKind::Cubin => "cubin",
            ImageKind::Fatbinary => "fatbinary",
            ImageKind::Ptx => "ptx",
            _ => "<none>",
        }
    }
}

/// How a HIP image's offload kind is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HipEncoding {
    /// The value 3, which LLVM 20 and earlier write (LLVM 22's `kind=hip` does not match it).
    Sequential,
    /// The value 4 (a bit flag), which LLVM 21 and later write (LLVM 19's `kind=hip` does not
    /// match it).
    BitFlag,
}

/// The programming model that produced an image (`OffloadKind` in LLVM).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OffloadKind {
    /// No kind (0).
    None,
    /// OpenMP (1).
    OpenMp,
    /// CUDA (2).
    Cuda,
    /// HIP: 3 up to LLVM 20, 4 from LLVM 21.
    Hip(HipEncoding),
    /// SYCL (8; LLVM 21 and later).
    Sycl,
    /// A value no LLVM version defines, kept as stored.
    Unknown(u16),
}

impl OffloadKind {
    /// The kind stored as `raw`.
    pub fn from_raw(raw: u16) -> OffloadKind {
        match raw {
            0 => OffloadKind::None,
            1 => OffloadKind::OpenMp,
            2 => OffloadKind::Cuda,
            3 => OffloadKind::Hip(HipEncoding::Sequential),
            4 => OffloadKind::Hip(HipEncoding::BitFlag),
            8 => OffloadKind::Sycl,
            other => OffloadKind::Unknown(other),
        }
    }

    /// The value stored in an entry.
    pub fn raw(self) -> u16 {
        match self {
            OffloadKind::None => 0,
            OffloadKind::OpenMp => 1,
            OffloadKind::Cuda => 2,
            OffloadKind::Hip(HipEncoding::Sequential) => 3,
            OffloadKind::Hip(HipEncoding::BitFlag) => 4,
            OffloadKind::Sycl => 8,
            OffloadKind::Unknown(raw) => raw,
        }
    }

    /// The name of the kind, whichever LLVM version wrote it: `none`, `openmp`, `cuda`, `hip`
    /// (both encodings), `sycl`; unknown values are `none`, as LLVM prints them.
    pub fn name(self) -> &'static str {
        match self {
            OffloadKind::OpenMp => "openmp",
            OffloadKind::Cuda => "cuda",
            OffloadKind::Hip(_) => "hip",
            OffloadKind::Sycl => "sycl",
            OffloadKind::None | OffloadKind::Unknown(_) => "none",
        }
    }

    /// The name LLVM 19 prints (`llvm-objdump --offloading` producer, packager matching): as
    /// [`OffloadKind::name`], but only the value 3 is `hip`, and SYCL is `none`.
    pub fn name_llvm19(self) -> &'static str {
        match self {
            OffloadKind::OpenMp => "openmp",
            OffloadKind::Cuda => "cuda",
            OffloadKind::Hip(HipEncoding::Sequential) => "hip",
            _ => "none",
        }
    }

    /// The kind LLVM 19 gives a name (`getOffloadKind`, case-sensitive): `openmp`, `cuda`,
    /// `hip` (the value 3), and [`OffloadKind::None`] for anything else.
    pub fn from_name_llvm19(name: &[u8]) -> OffloadKind {
        match name {
            b"openmp" => OffloadKind::OpenMp,
            b"cuda" => OffloadKind::Cuda,
            b"hip" => OffloadKind::Hip(HipEncoding::Sequential),
            _ => OffloadKind::None,
        }
    }

    /// The kind LLVM 22 gives a name (`getOffloadKind`, case-sensitive): `openmp`, `cuda`,
    /// `hip` (the value 4), `sycl`, and [`OffloadKind::None`] for anything else.
    pub fn from_name_llvm22(name: &[u8]) -> OffloadKind {
        match name {
            b"hip" => OffloadKind::Hip(HipEncoding::BitFlag),
            b"sycl" => OffloadKind::Sycl,
            other => OffloadKind::from_name_llvm19(other),
        }
    }

    /// Which encoding a HIP kind uses; `None` for other kinds.
    pub fn hip_encoding(self) -> Option<HipEncoding> {
        match self {
            OffloadKind::Hip(encoding) => Some(encoding),
            _ => None,
        }
    }
}

/// How a version 3 binary's payload is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Compression {
    /// A zlib stream.
    Zlib,
    /// A zstd frame.
    Zstd,
}

/// One image of an offload binary and its metadata, borrowing the binary's bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffloadEntry<'a> {
    /// Position of the entry in the binary, from 0.
    pub index: usize,
    /// The format version of the binary that holds it (1 to 3): LLVM 19 and 22 read only 1.
    pub binary_version: u32,
    /// What the image holds.
    pub image_kind: ImageKind,
    /// What produced it.
    pub offload_kind: OffloadKind,
    /// The entry's flags (0 from LLVM 19; bit 0 marks a metadata-only entry in newer LLVM).
    pub flags: u32,
    /// The string entries, `(key, value)` without terminators, in stored order. A key may
    /// repeat; LLVM keeps its first position and its last value (see [`OffloadEntry::get`]).
    pub strings: Vec<(&'a [u8], &'a [u8])>,
    /// Offset of the image from the start of the binary.
    pub image_offset: u64,
    /// Size of the image, as its entry declares it.
    pub image_size: u64,
    /// The image bytes; empty for an entry read from a compressed binary's head alone
    /// ([`ListedHead::entries`]), whose image is not inflated.
    pub image: &'a [u8],
}

impl<'a> OffloadEntry<'a> {
    /// The value LLVM reads for `key`: that of the last string entry with this key.
    pub fn get(&self, key: &[u8]) -> Option<&'a [u8]> {
        self.strings
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
    }

    /// The `triple` string, empty when there is none (as LLVM reads it).
    pub fn triple(&self) -> &'a [u8] {
        self.get(b"triple").unwrap_or_default()
    }

    /// The `arch` string, empty when there is none (as LLVM reads it).
    pub fn arch(&self) -> &'a [u8] {
        self.get(b"arch").unwrap_or_default()
    }
}

/// The compressed payload of a version 3 binary, borrowing the binary's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressedPayload<'a> {
    /// The bytes before the payload (the header), which the inflated binary keeps but for its
    /// size and inflated size fields.
    pub header: &'a [u8],
    /// The compressed bytes, up to the binary's size.
    pub payload: &'a [u8],
    /// The declared size of the inflated binary, header included.
    pub inflated_size: u64,
    /// How the payload is compressed, told by its first bytes.
    pub compression: Compression,
}

/// What a binary holds after its header.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Body<'a> {
    Entries(Vec<OffloadEntry<'a>>),
    Compressed(CompressedPayload<'a>),
}

/// A parsed offload binary, borrowing the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffloadBinary<'a> {
    bytes: &'a [u8],
    version: u32,
    entries_offset: u64,
    entry_size_or_count: u64,
    inflated_size: Option<u64>,
    body: Body<'a>,
}

fn read<'d, T: Pod>(data: &'d [u8], offset: u64, what: &'static str) -> Result<&'d T> {
    let found = usize::try_from(offset)
        .ok()
        .and_then(|start| data.get(start..))
        .and_then(|rest| pod::from_bytes::<T>(rest).ok());
    match found {
        Some((value, _)) => Ok(value),
        None => Err(Error::new(
            offset,
            ErrorKind::Truncated {
                what,
                needed: std::mem::size_of::<T>() as u64,
                available: (data.len() as u64).saturating_sub(offset),
            },
        )),
    }
}

fn read_u64(data: &[u8], offset: u64, what: &'static str) -> Result<u64> {
    read::<U64<Le>>(data, offset, what).map(|v| v.get(Le))
}

/// The bytes `[offset, offset + size)` of `bytes`, checked to lie inside it; the error is
/// reported at `field`, the position of the field that declares the region.
fn region(
    bytes: &[u8],
    what: impl FnOnce() -> String,
    field: u64,
    offset: u64,
    size: u64,
) -> Result<&[u8]> {
    let limit = bytes.len() as u64;
    let found = offset
        .checked_add(size)
        .and_then(|end| Some(usize::try_from(offset).ok()?..usize::try_from(end).ok()?))
        .and_then(|range| bytes.get(range));
    match found {
        Some(region) => Ok(region),
        None => Err(Error::new(
            field,
            ErrorKind::RegionOutOfBounds {
                what: what(),
                offset,
                size,
                limit,
            },
        )),
    }
}

/// The NUL-terminated string at `offset` of `bytes`, without its terminator; the error is
/// reported at `field`, the position of the field holding the offset.
fn c_string(bytes: &[u8], offset: u64, field: u64, what: impl FnOnce() -> String) -> Result<&[u8]> {
    let tail = usize::try_from(offset).ok().and_then(|o| bytes.get(o..));
    match tail.and_then(|t| Some(t.split_at(memchr::memchr(0, t)?).0)) {
        Some(s) => Ok(s),
        None => Err(Error::new(
            field,
            ErrorKind::UnterminatedString {
                what: what(),
                offset,
                limit: bytes.len() as u64,
            },
        )),
    }
}

/// Checks that `data` starts with the magic: a prefix of it is a truncated binary, anything
/// else no offload binary at all.
fn check_magic(data: &[u8]) -> Result<()> {
    if data.starts_with(&MAGIC) {
        return Ok(());
    }
    if data.len() < MAGIC.len() && MAGIC.starts_with(data) {
        return Err(Error::new(
            0,
            ErrorKind::Truncated {
                what: "offload binary magic",
                needed: MAGIC.len() as u64,
                available: data.len() as u64,
            },
        ));
    }
    Err(Error::new(
        0,
        ErrorKind::BadMagic {
            format: "offload binary",
        },
    ))
}

/// The header of the binary at the start of some data, and the binary's bytes as the header's
/// size delimits them.
struct Framed<'a> {
    header: &'a RawHeader,
    version: u32,
    header_size: u64,
    bytes: &'a [u8],
}

impl<'a> Framed<'a> {
    /// Checks the magic, the version, and the size against the header and the data.
    fn find(data: &'a [u8]) -> Result<Framed<'a>> {
        check_magic(data)?;
        let available = data.len() as u64;
        let header: &RawHeader = read(data, 0, "offload binary header")?;
        let version = header.version.get(Le);
        let header_size = header_size(version).ok_or_else(|| {
            Error::new(
                field_at::VERSION,
                ErrorKind::UnknownOffloadBinaryVersion(version),
            )
        })?;
        let minimum = if version == VERSION_1 {
            LLVM19_MINIMUM
        } else {
            header_size
        };
        if available < minimum {
            return Err(Error::new(
                0,
                ErrorKind::Truncated {
                    what: "offload binary header",
                    needed: minimum,
                    available,
                },
            ));
        }
        let size = header.size.get(Le);
        let bytes = usize::try_from(size)
            .ok()
            .filter(|_| size >= header_size)
            .and_then(|size| data.get(..size));
        let Some(bytes) = bytes else {
            return Err(Error::new(
                field_at::SIZE,
                ErrorKind::BadBinarySize {
                    size,
                    header: header_size,
                    available,
                },
            ));
        };
        Ok(Framed {
            header,
            version,
            header_size,
            bytes,
        })
    }
}

impl<'a> OffloadBinary<'a> {
    /// Parses the offload binary at the start of `data`, which may go on past it (the header's
    /// size says where the binary ends). Versions 1 to 3 are read; a compressed version 3
    /// binary is parsed up to its payload (see [`OffloadBinary::compressed`]).
    ///
    /// Beyond what LLVM 19 checks of a version 1 binary (at least 72 bytes of data, the
    /// magic, the size against the data, the entry and the entry size inside the binary),
    /// every region is checked to lie inside the binary: the entries, each entry's string
    /// entries and image, and each string (with its NUL terminator, or its size). Errors give
    /// the offset, from the start of `data`, of the field that is wrong.
    pub fn parse(data: &'a [u8]) -> Result<OffloadBinary<'a>> {
        let Framed {
            header,
            version,
            header_size,
            bytes,
        } = Framed::find(data)?;
        let entries_offset = header.entries_offset.get(Le);
        let entry_size_or_count = header.entry_size_or_count.get(Le);
        let inflated_size = match version {
            3 => Some(read_u64(bytes, field_at::INFLATED_SIZE, "inflated size")?),
            _ => None,
        };
        let body = match inflated_size {
            Some(inflated) if inflated != 0 => Body::Compressed(compressed_payload(
                bytes,
                header_size,
                entries_offset,
                inflated,
            )?),
            _ => Body::Entries(parse_entries(
                bytes,
                version,
                entries_offset,
                entry_size_or_count,
                Images::Within,
            )?),
        };
        Ok(OffloadBinary {
            bytes,
            version,
            entries_offset,
            entry_size_or_count,
            inflated_size,
            body,
        })
    }

    /// The format version: 1, 2 or 3.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// Size of the binary in bytes, from its header.
    pub fn size(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// The binary's bytes, `size` of them.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Offset of the entries (for a compressed binary, of the payload).
    pub fn entries_offset(&self) -> u64 {
        self.entries_offset
    }

    /// The header's fourth field: the entry size for version 1 (40 as LLVM writes it), the
    /// number of entries for later versions.
    pub fn entry_size_or_count(&self) -> u64 {
        self.entry_size_or_count
    }

    /// The inflated size of a version 3 binary (0 when it is not compressed); `None` for
    /// earlier versions, which have no such field.
    pub fn inflated_size(&self) -> Option<u64> {
        self.inflated_size
    }

    /// The images and their metadata in stored order: one for version 1, any number for
    /// later versions, none while compressed.
    pub fn entries(&self) -> &[OffloadEntry<'a>] {
        match &self.body {
            Body::Entries(entries) => entries,
            Body::Compressed(_) => &[],
        }
    }

    /// The compressed payload of a compressed version 3 binary.
    pub fn compressed(&self) -> Option<&CompressedPayload<'a>> {
        match &self.body {
            Body::Compressed(payload) => Some(payload),
            Body::Entries(_) => None,
        }
    }
}

/// Header size of each known version.
fn header_size(version: u32) -> Option<u64> {
    match version {
        1 | 2 => Some(32),
        3 => Some(V3_HEADER_SIZE),
        _ => None,
    }
}

/// Size of a string entry of each version.
fn string_entry_size(version: u32) -> u64 {
    if version == VERSION_1 {
        16
    } else {
        24
    }
}

fn compressed_payload(
    bytes: &[u8],
    header_size: u64,
    entries_offset: u64,
    inflated_size: u64,
) -> Result<CompressedPayload<'_>> {
    let size = bytes.len() as u64;
    if entries_offset < header_size {
        return Err(Error::new(
            field_at::ENTRIES_OFFSET,
            ErrorKind::PayloadInHeader {
                offset: entries_offset,
                header: header_size,
            },
        ));
    }
    let split = usize::try_from(entries_offset)
        .ok()
        .and_then(|at| bytes.split_at_checked(at));
    let Some((header, payload)) = split else {
        return Err(Error::new(
            field_at::ENTRIES_OFFSET,
            ErrorKind::RegionOutOfBounds {
                what: "compressed payload".into(),
                offset: entries_offset,
                size: 0,
                limit: size,
            },
        ));
    };
    if inflated_size < entries_offset {
        return Err(Error::new(
            field_at::INFLATED_SIZE,
            ErrorKind::BadInflatedSize {
                inflated: inflated_size,
                header: entries_offset,
            },
        ));
    }
    let compression = if payload.starts_with(&ZSTD_MAGIC) {
        Compression::Zstd
    } else {
        Compression::Zlib
    };
    Ok(CompressedPayload {
        header,
        payload,
        inflated_size,
        compression,
    })
}

fn parse_entries(
    bytes: &[u8],
    version: u32,
    entries_offset: u64,
    entry_size_or_count: u64,
    images: Images,
) -> Result<Vec<OffloadEntry<'_>>> {
    let count = if version == VERSION_1 {
        // LLVM 19 checks the declared entry size against the binary, though it reads 40
        // bytes whatever it says.
        region(
            bytes,
            || "entry (by its declared size)".into(),
            field_at::ENTRY_SIZE_OR_COUNT,
            32,
            entry_size_or_count,
        )?;
        1
    } else {
        let header = header_size(version).unwrap_or(V3_HEADER_SIZE);
        if entries_offset < header && entry_size_or_count != 0 {
            return Err(Error::new(
                field_at::ENTRIES_OFFSET,
                ErrorKind::EntriesInHeader {
                    offset: entries_offset,
                    header,
                },
            ));
        }
        entry_size_or_count
    };
    if count > MAX_ENTRIES {
        return Err(Error::new(
            field_at::ENTRY_SIZE_OR_COUNT,
            ErrorKind::TooManyBinaryEntries {
                count,
                limit: MAX_ENTRIES,
            },
        ));
    }
    region(
        bytes,
        || format!("{count} entries"),
        field_at::ENTRIES_OFFSET,
        entries_offset,
        count.saturating_mul(ENTRY_SIZE),
    )?;
    // The check above bounds the count by the binary's size, so it fits in a `usize`.
    let count = usize::try_from(count).unwrap_or(0);
    let mut entries = Vec::with_capacity(count);
    for index in 0..count {
        // Inside the binary, as the check above found.
        let offset = entries_offset.saturating_add((index as u64).saturating_mul(ENTRY_SIZE));
        entries.push(parse_entry(bytes, version, offset, index, images)?);
    }
    if version != VERSION_1 {
        apart::check_images_apart(&entries, entries_offset)?;
    }
    Ok(entries)
}

/// Where the images of the entries parsed are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Images {
    /// In the bytes parsed, which are the whole binary.
    Within,
    /// Past the bytes parsed (the head of an inflated binary), inside a binary of this size.
    Beyond(u64),
}

fn parse_entry(
    bytes: &[u8],
    version: u32,
    offset: u64,
    index: usize,
    images: Images,
) -> Result<OffloadEntry<'_>> {
    let raw: &RawEntry = read(bytes, offset, "offload binary entry")?;
    let string_offset = raw.string_offset.get(Le);
    let num_strings = raw.num_strings.get(Le);
    let string_size = string_entry_size(version);
    region(
        bytes,
        || format!("string entries of entry {index}"),
        offset + field_at::STRING_OFFSET,
        string_offset,
        num_strings.saturating_mul(string_size),
    )?;
    let image_offset = raw.image_offset.get(Le);
    let image_size = raw.image_size.get(Le);
    let what = || format!("image of entry {index}");
    let image = match images {
        Images::Within => region(
            bytes,
            what,
            offset + field_at::IMAGE_OFFSET,
            image_offset,
            image_size,
        )?,
        Images::Beyond(size) => {
            let end = image_offset.checked_add(image_size);
            if end.is_none_or(|end| end > size) {
                return Err(Error::new(
                    offset + field_at::IMAGE_OFFSET,
                    ErrorKind::RegionOutOfBounds {
                        what: what(),
                        offset: image_offset,
                        size: image_size,
                        limit: size,
                    },
                ));
            }
            &[]
        }
    };
    // The check above bounds the count by the binary's size, so it fits in a `usize`.
    let num_strings = usize::try_from(num_strings).unwrap_or(0);
    let mut strings = Vec::with_capacity(num_strings);
    for i in 0..num_strings {
        let entry_at = string_offset + i as u64 * string_size;
        let raw_string: &RawStringEntry = read(bytes, entry_at, "string entry")?;
        let key = c_string(bytes, raw_string.key_offset.get(Le), entry_at, || {
            format!("key of string entry {i} of entry {index}")
        })?;
        let value_offset = raw_string.value_offset.get(Le);
        let value_field = entry_at + field_at::VALUE_OFFSET;
        let value = if version == VERSION_1 {
            c_string(bytes, value_offset, value_field, || {
                format!("value of string entry {i} of entry {index}")
            })?
        } else {
            let value_size = read_u64(bytes, entry_at + field_at::VALUE_SIZE, "string entry")?;
            region(
                bytes,
                || format!("value of string entry {i} of entry {index}"),
                value_field,
                value_offset,
                value_size,
            )?
        };
        strings.push((key, value));
    }
    Ok(OffloadEntry {
        index,
        binary_version: version,
        image_kind: ImageKind::from_raw(raw.image_kind.get(Le)),
        offload_kind: OffloadKind::from_raw(raw.offload_kind.get(Le)),
        flags: raw.flags.get(Le),
        strings,
        image_offset,
        image_size,
        image,
    })
}

/// The offload binaries placed one after another in `data` (what a linker makes of several
/// `.llvm.offloading` sections): see [`Split`].
pub fn split(data: &[u8]) -> Split<'_> {
    Split {
        data,
        offset: 0,
        failed: false,
    }
}

/// Iterator over the offload binaries in a buffer: each binary's size gives where the next
/// one may start, and runs of zero bytes before a binary (alignment padding) are skipped.
/// Yields each binary's offset with the binary or the error that stopped the iteration;
/// error offsets are from the start of the whole buffer.
#[derive(Debug, Clone)]
pub struct Split<'a> {
    data: &'a [u8],
    offset: usize,
    failed: bool,
}

impl<'a> Iterator for Split<'a> {
    type Item = (u64, Result<OffloadBinary<'a>>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let rest = self.data.get(self.offset..)?;
        let skip = rest.iter().position(|&b| b != 0)?;
        let start = self.offset + skip;
        let at = start as u64;
        match OffloadBinary::parse(rest.get(skip..)?) {
            Ok(binary) => {
                // The size is at least a header, so the iteration always advances.
                self.offset = start + binary.bytes.len();
                Some((at, Ok(binary)))
            }
            Err(e) => {
                self.failed = true;
                Some((at, Err(e.rebased(at))))
            }
        }
    }
}

/// One entry to lay out: an image's metadata and the size of the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryLayoutInput<'s> {
    /// What the image holds.
    pub image_kind: ImageKind,
    /// What produced it.
    pub offload_kind: OffloadKind,
    /// The entry's flags.
    pub flags: u32,
    /// The string entries in the order to store them.
    pub strings: &'s [(&'s [u8], &'s [u8])],
    /// Size of the image in bytes.
    pub image_size: u64,
}

/// An image and its metadata, to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffloadingImage<'s> {
    /// What the image holds.
    pub image_kind: ImageKind,
    /// What produced it.
    pub offload_kind: OffloadKind,
    /// The entry's flags.
    pub flags: u32,
    /// The string entries in the order to store them.
    pub strings: &'s [(&'s [u8], &'s [u8])],
    /// The image bytes.
    pub image: &'s [u8],
}

impl<'s> OffloadingImage<'s> {
    fn layout_input(&self) -> EntryLayoutInput<'s> {
        EntryLayoutInput {
            image_kind: self.image_kind,
            offload_kind: self.offload_kind,
            flags: self.flags,
            strings: self.strings,
            image_size: self.image.len() as u64,
        }
    }
}

/// Where everything of a binary goes, computed from metadata and image sizes alone, so that a
/// writer can stream the images from their sources: write [`Layout::head`], then the images
/// back to back, then [`Layout::tail_padding`] zero bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Every byte before the first image: header, entries, string entries, string table and
    /// zero padding to 8.
    pub head: Vec<u8>,
    /// The offset of each image, in entry order (images follow each other with no padding).
    pub image_offsets: Vec<u64>,
    /// Total size of the binary: a multiple of 8.
    pub size: u64,
    /// Zero bytes after the last image, up to `size`.
    pub tail_padding: u64,
}

fn align(value: u64) -> Option<u64> {
    value
        .checked_add(ALIGNMENT - 1)
        .map(|v| v & !(ALIGNMENT - 1))
}

fn overflow(what: &'static str) -> Error {
    Error::new(
        0,
        ErrorKind::FieldOverflow {
            what,
            value: u64::MAX,
        },
    )
}

/// Where the parts of a binary go, before any of its bytes are written.
struct Plan {
    header_size: u64,
    string_entry_size: u64,
    /// Offset of the first string entry (the end of the entries).
    strings_offset: u64,
    table: StringTable,
    table_offset: u64,
    /// Size of everything before the first image, padded.
    data_size: u64,
    image_offsets: Vec<u64>,
    images_end: u64,
    size: u64,
}

impl Plan {
    /// Checks `version` and the number of `entries`, and places the string table and the
    /// images.
    fn new(version: u32, entries: &[EntryLayoutInput<'_>]) -> Result<Plan> {
        let header_size = header_size(version)
            .ok_or_else(|| Error::new(0, ErrorKind::UnknownOffloadBinaryVersion(version)))?;
        if version == VERSION_1 && entries.len() != 1 {
            return Err(Error::new(
                0,
                ErrorKind::FieldOverflow {
                    what: "version 1 entry count",
                    value: entries.len() as u64,
                },
            ));
        }
        let string_entry_size = string_entry_size(version);
        let total_strings: u64 = entries.iter().map(|e| e.strings.len() as u64).sum();
        let table = StringTable::build(
            entries
                .iter()
                .flat_map(|e| e.strings.iter().flat_map(|(k, v)| [*k, *v])),
            Flavor::Elf,
        );
        let strings_offset = header_size + entries.len() as u64 * ENTRY_SIZE;
        let table_offset = strings_offset + string_entry_size * total_strings;
        let data_size = align(table_offset + table.bytes.len() as u64)
            .ok_or_else(|| overflow("string table"))?;
        let mut image_offsets = Vec::with_capacity(entries.len());
        let mut images_end = data_size;
        for entry in entries {
            image_offsets.push(images_end);
            images_end = images_end
                .checked_add(entry.image_size)
                .ok_or_else(|| overflow("image size"))?;
        }
        let size = align(images_end).ok_or_else(|| overflow("binary size"))?;
        Ok(Plan {
            header_size,
            string_entry_size,
            strings_offset,
            table,
            table_offset,
            data_size,
            image_offsets,
            images_end,
            size,
        })
    }

    /// Every byte before the first image: header, entries, string entries, string table and
    /// padding.
    fn head(&self, version: u32, entries: &[EntryLayoutInput<'_>]) -> Result<Vec<u8>> {
        let data_len = usize::try_from(self.data_size).map_err(|_| overflow("string table"))?;
        let mut head = Vec::with_capacity(data_len);
        let header = RawHeader {
            magic: MAGIC,
            version: U32::new(Le, version),
            size: U64::new(Le, self.size),
            entries_offset: U64::new(Le, self.header_size),
            entry_size_or_count: U64::new(
                Le,
                if version == VERSION_1 {
                    ENTRY_SIZE
                } else {
                    entries.len() as u64
                },
            ),
        };
        head.extend_from_slice(pod::bytes_of(&header));
        if self.header_size == V3_HEADER_SIZE {
            // Not compressed: the inflated size is 0.
            head.extend_from_slice(&0u64.to_le_bytes());
        }
        self.put_entries(&mut head, entries);
        self.put_string_entries(&mut head, version, entries);
        head.extend_from_slice(&self.table.bytes);
        head.resize(data_len, 0);
        Ok(head)
    }

    /// Appends the entries, each pointing at its string entries and its image.
    fn put_entries(&self, head: &mut Vec<u8>, entries: &[EntryLayoutInput<'_>]) {
        let mut string_offset = self.strings_offset;
        for (entry, image_offset) in entries.iter().zip(&self.image_offsets) {
            let raw = RawEntry {
                image_kind: U16::new(Le, entry.image_kind.raw()),
                offload_kind: U16::new(Le, entry.offload_kind.raw()),
                flags: U32::new(Le, entry.flags),
                string_offset: U64::new(Le, string_offset),
                num_strings: U64::new(Le, entry.strings.len() as u64),
                image_offset: U64::new(Le, *image_offset),
                image_size: U64::new(Le, entry.image_size),
            };
            head.extend_from_slice(pod::bytes_of(&raw));
            string_offset += self.string_entry_size * entry.strings.len() as u64;
        }
    }

    /// Appends the string entries of every entry, pointing into the string table (and, after
    /// version 1, giving each value's size).
    fn put_string_entries(
        &self,
        head: &mut Vec<u8>,
        version: u32,
        entries: &[EntryLayoutInput<'_>],
    ) {
        let at = |s: &[u8]| self.table_offset + u64::from(self.table.offset(s));
        for (key, value) in entries.iter().flat_map(|e| e.strings) {
            let raw = RawStringEntry {
                key_offset: U64::new(Le, at(key)),
                value_offset: U64::new(Le, at(value)),
            };
            head.extend_from_slice(pod::bytes_of(&raw));
            if version != VERSION_1 {
                head.extend_from_slice(&(value.len() as u64).to_le_bytes());
            }
        }
    }
}

/// Lays out a binary of `version` (1, 2 or 3) holding `entries`, as LLVM writes it (LLVM 19
/// for version 1, newer LLVM for versions 2 and 3). Version 1 holds exactly one entry.
pub fn layout(version: u32, entries: &[EntryLayoutInput<'_>]) -> Result<Layout> {
    let plan = Plan::new(version, entries)?;
    let head = plan.head(version, entries)?;
    Ok(Layout {
        head,
        tail_padding: plan.size - plan.images_end,
        size: plan.size,
        image_offsets: plan.image_offsets,
    })
}

/// Lays out a version 1 binary, as clang-offload-packager 19 writes one for each image.
pub fn layout_v1(
    image_kind: ImageKind,
    offload_kind: OffloadKind,
    flags: u32,
    strings: &[(&[u8], &[u8])],
    image_size: u64,
) -> Result<Layout> {
    layout(
        VERSION_1,
        &[EntryLayoutInput {
            image_kind,
            offload_kind,
            flags,
            strings,
            image_size,
        }],
    )
}

/// A version 1 binary, byte for byte as LLVM 19 writes it, with `strings` stored in the
/// given order. (clang-offload-packager 19 stores them in the order of its hash map; see
/// `crate::llvm::adt::hash::dense_map_order`.)
pub fn write_v1(
    image_kind: ImageKind,
    offload_kind: OffloadKind,
    flags: u32,
    strings: &[(&[u8], &[u8])],
    image: &[u8],
) -> Vec<u8> {
    let image = OffloadingImage {
        image_kind,
        offload_kind,
        flags,
        strings,
        image,
    };
    match write(VERSION_1, &[image]) {
        Ok(bytes) => bytes,
        // Sizes of data held in memory cannot overflow a u64, and version 1 with one entry
        // is always valid.
        Err(_) => unreachable!("an in-memory offload binary always has a layout"),
    }
}

/// A binary of `version` (1, 2 or 3) holding `images`, as LLVM writes it. Version 1 holds
/// exactly one image.
pub fn write(version: u32, images: &[OffloadingImage<'_>]) -> Result<Vec<u8>> {
    let inputs: Vec<EntryLayoutInput<'_>> = images.iter().map(|i| i.layout_input()).collect();
    let layout = layout(version, &inputs)?;
    let size = usize::try_from(layout.size).map_err(|_| overflow("binary size"))?;
    let mut out = layout.head;
    out.reserve(size.saturating_sub(out.len()));
    for image in images {
        out.extend_from_slice(image.image);
    }
    out.resize(size, 0);
    Ok(out)
}

/// A compressed version 3 binary holding `images`, as LLVM writes it: the uncompressed
/// binary's header, with its size set to the header and payload and its inflated size to the
/// uncompressed size; then everything after the header, compressed at `level`; then zero
/// padding to 8.
pub fn write_compressed(
    images: &[OffloadingImage<'_>],
    compression: Compression,
    level: i32,
) -> Result<Vec<u8>> {
    let plain = write(3, images)?;
    let (head, body) = plain.split_at(V3_HEADER_LEN);
    let compressed = match compression {
        Compression::Zstd => zstd::bulk::compress(body, level),
        Compression::Zlib => {
            let level = flate2::Compression::new(level.clamp(0, 9) as u32);
            let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), level);
            encoder.write_all(body).and_then(|()| encoder.finish())
        }
    }
    .map_err(|e| Error::new(V3_HEADER_SIZE, ErrorKind::Compress(e.to_string())))?;
    let size = V3_HEADER_SIZE + compressed.len() as u64;
    let padded = align(size).ok_or_else(|| overflow("binary size"))?;
    let padded = usize::try_from(padded).map_err(|_| overflow("binary size"))?;
    let mut out = Vec::with_capacity(padded);
    out.extend_from_slice(head);
    put_u64(&mut out, field_at::SIZE, size);
    put_u64(&mut out, field_at::INFLATED_SIZE, plain.len() as u64);
    out.extend_from_slice(&compressed);
    out.resize(padded, 0);
    Ok(out)
}

/// Overwrites the little-endian `u64` at `offset` of `bytes`: a header just written, which
/// holds it.
fn put_u64(bytes: &mut [u8], offset: u64, value: u64) {
    let field = usize::try_from(offset)
        .ok()
        .and_then(|at| bytes.get_mut(at..))
        .and_then(|rest| rest.first_chunk_mut::<8>());
    if let Some(field) = field {
        *field = value.to_le_bytes();
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;
    use crate::format::inflate;
    use proptest::prelude::*;

    type Strings<'s> = Vec<(&'s [u8], &'s [u8])>;

    /// clang-offload-packager-19 `--image=file=b.o,triple=t2` with `b.o` holding `world!!`.
    const PACKAGER_T2: &[u8] = b"\x10\xff\x10\xad\x01\0\0\0\x70\0\0\0\0\0\0\0\
        \x20\0\0\0\0\0\0\0\x28\0\0\0\0\0\0\0\
        \x01\0\0\0\0\0\0\0\x48\0\0\0\0\0\0\0\x01\0\0\0\0\0\0\0\x68\0\0\0\0\0\0\0\
        \x07\0\0\0\0\0\0\0\
        \x59\0\0\0\0\0\0\0\x60\0\0\0\0\0\0\0\
        \0triple\0t2\0\0\0\0\0\0\
        world!!\0";

    fn v1(strings: &[(&[u8], &[u8])], image: &[u8]) -> Vec<u8> {
        write_v1(ImageKind::Object, OffloadKind::OpenMp, 0, strings, image)
    }

    fn sample() -> Vec<u8> {
        v1(
            &[(b"arch", b"gfx906"), (b"triple", b"amdgcn-amd-amdhsa")],
            b"\x7fELF code object",
        )
    }

    fn put(bytes: &mut [u8], offset: u64, value: u64) {
        put_u64(bytes, offset, value);
    }

    fn error(data: &[u8]) -> Error {
        OffloadBinary::parse(data).expect_err("must not parse")
    }

    #[test]
    fn writes_version_1_as_the_packager_does() {
        let bytes = write_v1(
            ImageKind::Object,
            OffloadKind::None,
            0,
            &[(b"triple", b"t2")],
            b"world!!",
        );
        assert_eq!(bytes, PACKAGER_T2);
    }

    #[test]
    fn reads_what_the_packager_wrote() {
        let binary = OffloadBinary::parse(PACKAGER_T2).unwrap();
        assert_eq!(binary.version(), 1);
        assert_eq!(binary.size(), 0x70);
        assert_eq!(binary.entry_size_or_count(), 40);
        assert_eq!(binary.inflated_size(), None);
        assert!(binary.compressed().is_none());
        let [entry] = binary.entries() else {
            panic!("one entry")
        };
        assert_eq!(entry.image_kind, ImageKind::Object);
        assert_eq!(entry.offload_kind, OffloadKind::None);
        assert_eq!(entry.strings, vec![(&b"triple"[..], &b"t2"[..])]);
        assert_eq!(entry.triple(), b"t2");
        assert_eq!(entry.arch(), b"");
        assert_eq!(entry.image, b"world!!");
        assert_eq!(entry.image_offset, 0x68);
    }

    #[test]
    fn layout_head_image_and_padding_make_the_binary() {
        let strings: Strings = vec![(b"arch", b"gfx90a"), (b"triple", b"amdgcn-amd-amdhsa")];
        let image = b"0123456789abc";
        let layout = layout_v1(
            ImageKind::Bitcode,
            OffloadKind::Hip(HipEncoding::Sequential),
            0,
            &strings,
            image.len() as u64,
        )
        .unwrap();
        let mut joined = layout.head.clone();
        joined.extend_from_slice(image);
        joined.resize(joined.len() + layout.tail_padding as usize, 0);
        assert_eq!(joined.len() as u64, layout.size);
        assert_eq!(layout.image_offsets, vec![layout.head.len() as u64]);
        assert_eq!(
            joined,
            write_v1(
                ImageKind::Bitcode,
                OffloadKind::Hip(HipEncoding::Sequential),
                0,
                &strings,
                image
            )
        );
        assert_eq!(layout.size % 8, 0);
        assert_eq!(layout.head.len() % 8, 0);
    }

    #[test]
    fn repeated_keys_read_as_llvm_reads_them() {
        let bytes = v1(&[(b"k", b"first"), (b"arch", b"a"), (b"k", b"last")], b"");
        let binary = OffloadBinary::parse(&bytes).unwrap();
        let entry = &binary.entries()[0];
        assert_eq!(entry.strings.len(), 3);
        assert_eq!(entry.get(b"k"), Some(&b"last"[..]));
        assert_eq!(entry.get(b"none"), None);
    }

    #[test]
    fn version_2_holds_several_images_and_binary_values() {
        let first: Strings = vec![(b"triple", b"nvptx64"), (b"arch", b"sm_70")];
        let second: Strings = vec![(b"blob", b"a\0b\xff"), (b"triple", b"amdgcn")];
        let images = [
            OffloadingImage {
                image_kind: ImageKind::Cubin,
                offload_kind: OffloadKind::Cuda,
                flags: 0,
                strings: &first,
                image: b"cubin bytes",
            },
            OffloadingImage {
                image_kind: ImageKind::Spirv,
                offload_kind: OffloadKind::Sycl,
                flags: 1,
                strings: &second,
                image: b"spv",
            },
        ];
        let bytes = write(2, &images).unwrap();
        let binary = OffloadBinary::parse(&bytes).unwrap();
        assert_eq!(binary.version(), 2);
        assert_eq!(binary.entry_size_or_count(), 2);
        let entries = binary.entries();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].image, b"cubin bytes");
        // No padding between images.
        assert_eq!(entries[1].image_offset, entries[0].image_offset + 11);
        assert_eq!(entries[1].get(b"blob"), Some(&b"a\0b\xff"[..]));
        assert_eq!(entries[1].flags, 1);
        assert_eq!(entries[1].image_kind, ImageKind::Spirv);
        assert_eq!(bytes.len() % 8, 0);
    }

    /// What llvm-offload-binary-23 writes for three images (`samples/llvm23/three.bin`).
    const LLVM23_THREE: &[u8] = include_bytes!("../../../samples/llvm23/three.bin");

    fn llvm23_images<'s>(
        first: &'s Strings<'s>,
        second: &'s Strings<'s>,
        third: &'s Strings<'s>,
    ) -> [OffloadingImage<'s>; 3] {
        let image = |offload_kind, strings, image| OffloadingImage {
            image_kind: ImageKind::None,
            offload_kind,
            flags: 0,
            strings,
            image,
        };
        [
            image(
                OffloadKind::Hip(HipEncoding::BitFlag),
                first,
                &b"AAAAAAAAAAAAA"[..],
            ),
            image(
                OffloadKind::Hip(HipEncoding::BitFlag),
                second,
                &b"BBBBBBBBBBBBBBBBBBBBBB"[..],
            ),
            image(OffloadKind::OpenMp, third, &b"CCC"[..]),
        ]
    }

    #[test]
    fn writes_version_2_as_llvm_23_does() {
        let first: Strings = vec![(b"arch", b"gfx90a"), (b"triple", b"amdgcn-amd-amdhsa")];
        let second: Strings = vec![
            (b"arch", b"gfx1030"),
            (b"foo", b"bar"),
            (b"triple", b"amdgcn-amd-amdhsa"),
        ];
        let third: Strings = vec![(b"arch", b"sm_70"), (b"triple", b"nvptx64-nvidia-cuda")];
        let images = llvm23_images(&first, &second, &third);
        assert_eq!(write(VERSION_2, &images).unwrap(), LLVM23_THREE);
        let binary = OffloadBinary::parse(LLVM23_THREE).unwrap();
        assert_eq!(binary.version(), VERSION_2);
        let read: Vec<_> = binary
            .entries()
            .iter()
            .map(|e| (e.arch(), e.image))
            .collect();
        assert_eq!(
            read,
            [
                (&b"gfx90a"[..], images[0].image),
                (&b"gfx1030"[..], images[1].image),
                (&b"sm_70"[..], images[2].image),
            ]
        );
    }

    #[test]
    fn damaged_version_2_entries_tables() {
        let mut outside = LLVM23_THREE.to_vec();
        put(&mut outside, field_at::ENTRIES_OFFSET, 0x1a0);
        assert_eq!(
            error(&outside).to_string(),
            "offset 0x10: 3 entries at 0x1a0 ends at 0x218, past the end of the binary (0x1b8)"
        );
        let mut too_many = LLVM23_THREE.to_vec();
        put(&mut too_many, field_at::ENTRY_SIZE_OR_COUNT, 0x1b8);
        assert!(matches!(
            error(&too_many).kind,
            ErrorKind::RegionOutOfBounds {
                size: 0x44c0,
                limit: 0x1b8,
                ..
            }
        ));
        let mut in_header = LLVM23_THREE.to_vec();
        put(&mut in_header, field_at::ENTRIES_OFFSET, 8);
        assert_eq!(
            error(&in_header).to_string(),
            "offset 0x10: offload binary entries table starts at 0x8, inside the 32-byte header"
        );
        // Entry 1's image moved to start inside entry 0's.
        let mut overlapping = LLVM23_THREE.to_vec();
        put(&mut overlapping, 0x20 + 40 + field_at::IMAGE_OFFSET, 0x194);
        assert_eq!(
            error(&overlapping).to_string(),
            "offset 0x60: image of entry 1 at 0x194 overlaps the image of entry 0, which ends at \
             0x19d"
        );
        // Entries may name the very same image; an empty image takes no bytes.
        let mut same = LLVM23_THREE.to_vec();
        put(&mut same, 0x20 + 40 + field_at::IMAGE_OFFSET, 0x190);
        put(&mut same, 0x20 + 40 + field_at::IMAGE_OFFSET + 8, 13);
        assert_eq!(
            OffloadBinary::parse(&same).unwrap().entries()[1].image,
            b"A".repeat(13)
        );
        let mut empty = LLVM23_THREE.to_vec();
        put(&mut empty, 0x20 + 40 + field_at::IMAGE_OFFSET, 0x194);
        put(&mut empty, 0x20 + 40 + field_at::IMAGE_OFFSET + 8, 0);
        assert_eq!(
            OffloadBinary::parse(&empty).unwrap().entries()[1].image,
            b""
        );
    }

    #[test]
    fn version_3_compressed_inflates_to_the_uncompressed_binary() {
        let strings: Strings = vec![(b"triple", b"amdgcn-amd-amdhsa"), (b"arch", b"gfx942")];
        let image = vec![0x5a; 5000];
        let images = [OffloadingImage {
            image_kind: ImageKind::Object,
            offload_kind: OffloadKind::Hip(HipEncoding::BitFlag),
            flags: 0,
            strings: &strings,
            image: &image,
        }];
        let plain = write(3, &images).unwrap();
        assert_eq!(
            OffloadBinary::parse(&plain).unwrap().inflated_size(),
            Some(0)
        );
        for (compression, level) in [(Compression::Zstd, 3), (Compression::Zlib, 6)] {
            let packed = write_compressed(&images, compression, level).unwrap();
            assert_eq!(packed.len() % 8, 0);
            assert!(packed.len() < plain.len());
            let binary = OffloadBinary::parse(&packed).unwrap();
            assert!(binary.entries().is_empty());
            let payload = binary.compressed().unwrap();
            assert_eq!(payload.compression, compression);
            assert_eq!(payload.inflated_size, plain.len() as u64);
            assert_eq!(payload.header.len(), 40);
            let inflated = payload.inflate(DEFAULT_MAX_INFLATED).unwrap();
            assert_eq!(inflated, plain);
            let again = OffloadBinary::parse(&inflated).unwrap();
            assert_eq!(again.entries()[0].image, &image[..]);
        }
    }

    #[test]
    fn an_inflated_binary_never_holds_more_than_it_declares() {
        // An image of several windows, so that the buffer grows while the payload inflates.
        let strings: Strings = vec![(b"triple", b"amdgcn-amd-amdhsa"), (b"arch", b"gfx90a")];
        let image = vec![0; 3 * inflate::WINDOW + 3];
        let images = [OffloadingImage {
            image_kind: ImageKind::Object,
            offload_kind: OffloadKind::OpenMp,
            flags: 0,
            strings: &strings,
            image: &image,
        }];
        let plain = write(3, &images).unwrap();
        for compression in [Compression::Zstd, Compression::Zlib] {
            let packed = write_compressed(&images, compression, 1).unwrap();
            let binary = OffloadBinary::parse(&packed).unwrap();
            let inflated = binary.compressed().unwrap().inflate(u64::MAX).unwrap();
            assert_eq!(inflated, plain);
            // Doubling stops at the declared size, rather than at the next power of two.
            assert_eq!(inflated.capacity(), plain.len());
        }
    }

    #[test]
    fn inflating_checks_the_limit_before_allocating() {
        let strings: Strings = vec![(b"triple", b"x")];
        let images = [OffloadingImage {
            image_kind: ImageKind::Object,
            offload_kind: OffloadKind::OpenMp,
            flags: 0,
            strings: &strings,
            image: &[1; 100],
        }];
        let mut packed = write_compressed(&images, Compression::Zstd, 3).unwrap();
        let binary = OffloadBinary::parse(&packed).unwrap();
        let e = binary.compressed().unwrap().inflate(64).unwrap_err();
        assert_eq!(e.offset, 32);
        assert!(matches!(
            e.kind,
            ErrorKind::InflatedTooLarge { limit: 64, .. }
        ));
        // A header that claims 1 TiB is refused by the limit, not allocated.
        put(&mut packed, 32, 1 << 40);
        let binary = OffloadBinary::parse(&packed).unwrap();
        let e = binary.compressed().unwrap().inflate(1 << 30).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::InflatedTooLarge { .. }));
        // Under the limit, but more than the payload gives.
        let e = binary.compressed().unwrap().inflate(1 << 41).unwrap_err();
        assert_eq!(e.offset, 40);
        assert!(matches!(e.kind, ErrorKind::InflatedSizeMismatch { .. }));
    }

    #[test]
    fn inflating_rejects_bad_payloads() {
        let strings: Strings = vec![(b"triple", b"x")];
        let images = [OffloadingImage {
            image_kind: ImageKind::Object,
            offload_kind: OffloadKind::OpenMp,
            flags: 0,
            strings: &strings,
            image: &[7; 300],
        }];
        let packed = write_compressed(&images, Compression::Zlib, 9).unwrap();
        let plain_len = write(3, &images).unwrap().len() as u64;
        // Claims less than the payload inflates to.
        let mut short = packed.clone();
        put(&mut short, 32, plain_len - 8);
        let binary = OffloadBinary::parse(&short).unwrap();
        let e = binary.compressed().unwrap().inflate(u64::MAX).unwrap_err();
        assert!(matches!(
            e.kind,
            ErrorKind::InflatedSizeMismatch { declared, actual } if actual == declared + 1
        ));
        // Garbage that is neither zstd nor zlib.
        let mut garbage = packed.clone();
        garbage[40..48].copy_from_slice(b"garbage!");
        let binary = OffloadBinary::parse(&garbage).unwrap();
        let payload = binary.compressed().unwrap();
        assert_eq!(payload.compression, Compression::Zlib);
        let e = payload.inflate(u64::MAX).unwrap_err();
        assert_eq!(e.offset, 40);
        assert!(matches!(e.kind, ErrorKind::Decompress(_)));
    }

    #[test]
    fn compressed_header_errors() {
        let strings: Strings = vec![(b"triple", b"x")];
        let images = [OffloadingImage {
            image_kind: ImageKind::Object,
            offload_kind: OffloadKind::OpenMp,
            flags: 0,
            strings: &strings,
            image: b"abc",
        }];
        let packed = write_compressed(&images, Compression::Zstd, 1).unwrap();
        let mut inside = packed.clone();
        put(&mut inside, 16, 32);
        let e = error(&inside);
        assert_eq!(e.offset, 16);
        assert!(matches!(
            e.kind,
            ErrorKind::PayloadInHeader {
                offset: 32,
                header: 40
            }
        ));
        let mut past = packed.clone();
        put(&mut past, 16, packed.len() as u64 + 1);
        let e = error(&past);
        assert_eq!(e.offset, 16);
        assert!(matches!(e.kind, ErrorKind::RegionOutOfBounds { .. }));
        let mut small = packed.clone();
        put(&mut small, 32, 39);
        let e = error(&small);
        assert_eq!(e.offset, 32);
        assert!(matches!(
            e.kind,
            ErrorKind::BadInflatedSize {
                inflated: 39,
                header: 40
            }
        ));
    }

    #[test]
    fn header_errors() {
        let good = sample();
        let e = error(b"\x10\xff");
        assert!(matches!(e.kind, ErrorKind::Truncated { needed: 4, .. }));
        let e = error(b"");
        assert!(matches!(e.kind, ErrorKind::Truncated { needed: 4, .. }));
        let e = error(b"\x7fELF and more bytes");
        assert_eq!(
            e.kind,
            ErrorKind::BadMagic {
                format: "offload binary"
            }
        );
        let e = error(&good[..20]);
        assert!(matches!(
            e.kind,
            ErrorKind::Truncated {
                needed: 32,
                available: 20,
                ..
            }
        ));
        // LLVM 19 wants 72 bytes before it reads a version 1 header.
        let e = error(&good[..71]);
        assert!(matches!(
            e.kind,
            ErrorKind::Truncated {
                needed: 72,
                available: 71,
                ..
            }
        ));
        for version in [0, 4, u32::MAX] {
            let mut bad = good.clone();
            bad[4..8].copy_from_slice(&version.to_le_bytes());
            let e = error(&bad);
            assert_eq!(e.offset, 4);
            assert_eq!(e.kind, ErrorKind::UnknownOffloadBinaryVersion(version));
        }
        let mut bad = good.clone();
        put(&mut bad, 8, 31);
        let e = error(&bad);
        assert_eq!(e.offset, 8);
        assert!(matches!(
            e.kind,
            ErrorKind::BadBinarySize {
                size: 31,
                header: 32,
                ..
            }
        ));
        let mut bad = good.clone();
        put(&mut bad, 8, good.len() as u64 + 8);
        assert!(matches!(error(&bad).kind, ErrorKind::BadBinarySize { .. }));
        // The version 1 entry size must fit after the header, as LLVM 19 checks.
        let mut bad = good.clone();
        put(&mut bad, 24, good.len() as u64);
        let e = error(&bad);
        assert_eq!(e.offset, 24);
        assert!(matches!(
            e.kind,
            ErrorKind::RegionOutOfBounds { offset: 32, .. }
        ));
        // The entry must fit in the binary.
        let mut bad = good.clone();
        put(&mut bad, 16, good.len() as u64 - 39);
        let e = error(&bad);
        assert_eq!(e.offset, 16);
        assert!(matches!(
            e.kind,
            ErrorKind::RegionOutOfBounds { size: 40, .. }
        ));
        // Version 2: a count above the most entries read, refused at the count.
        let mut bad = good.clone();
        bad[4] = 2;
        for count in [u64::MAX / 8, MAX_ENTRIES + 1] {
            put(&mut bad, 24, count);
            let e = error(&bad);
            assert_eq!(e.offset, 24);
            assert_eq!(
                e.kind,
                ErrorKind::TooManyBinaryEntries {
                    count,
                    limit: MAX_ENTRIES
                }
            );
        }
        // A count within it whose entries do not fit: refused at the entries.
        put(&mut bad, 24, MAX_ENTRIES);
        let e = error(&bad);
        assert_eq!(e.offset, 16);
        assert!(matches!(e.kind, ErrorKind::RegionOutOfBounds { .. }));
    }

    #[test]
    fn entry_errors() {
        let good = sample();
        // String entries past the end, and a count whose size overflows.
        for count in [1000, u64::MAX / 4] {
            let mut bad = good.clone();
            put(&mut bad, 32 + 16, count);
            let e = error(&bad);
            assert_eq!(e.offset, 32 + 8);
            assert!(matches!(e.kind, ErrorKind::RegionOutOfBounds { .. }));
            assert!(e.to_string().contains("string entries of entry 0"), "{e}");
        }
        // The image past the end, and an image whose end overflows.
        let mut bad = good.clone();
        put(&mut bad, 32 + 32, 1 << 20);
        let e = error(&bad);
        assert_eq!(e.offset, 32 + 24);
        assert!(e.to_string().contains("image of entry 0"), "{e}");
        let mut bad = good.clone();
        put(&mut bad, 32 + 24, u64::MAX - 2);
        let e = error(&bad);
        assert_eq!(e.offset, 32 + 24);
        assert!(e.to_string().contains("overflow"), "{e}");
    }

    #[test]
    fn string_errors() {
        let good = sample();
        let size = good.len() as u64;
        // Key offset past the end of the binary.
        let mut bad = good.clone();
        put(&mut bad, 72, size);
        let e = error(&bad);
        assert_eq!(e.offset, 72);
        assert!(matches!(e.kind, ErrorKind::UnterminatedString { .. }));
        assert!(
            e.to_string().contains("key of string entry 0 of entry 0"),
            "{e}"
        );
        // A value with no NUL before the end of the binary.
        let image_at = OffloadBinary::parse(&good).unwrap().entries()[0].image_offset;
        let mut bad = good.clone();
        // Fill the image and the padding after it with non-zero bytes.
        for b in &mut bad[image_at as usize..] {
            *b |= 1;
        }
        put(&mut bad, 72 + 16 + 8, image_at);
        let e = error(&bad);
        assert_eq!(e.offset, 72 + 16 + 8);
        assert!(
            e.to_string().contains("value of string entry 1 of entry 0"),
            "{e}"
        );
        assert!(e.to_string().contains("no NUL"), "{e}");
        // Version 2: a value that runs past the end.
        let strings: Strings = vec![(b"triple", b"t")];
        let images = [OffloadingImage {
            image_kind: ImageKind::Object,
            offload_kind: OffloadKind::OpenMp,
            flags: 0,
            strings: &strings,
            image: b"",
        }];
        let mut v2 = write(2, &images).unwrap();
        let string_at = 32 + 40;
        put(&mut v2, string_at + 16, 1 << 30);
        let e = error(&v2);
        assert_eq!(e.offset, string_at + 8);
        assert!(
            e.to_string().contains("value of string entry 0 of entry 0"),
            "{e}"
        );
    }

    #[test]
    fn layout_errors() {
        let e = layout(4, &[]).unwrap_err();
        assert_eq!(e.kind, ErrorKind::UnknownOffloadBinaryVersion(4));
        let e = layout(1, &[]).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::FieldOverflow { value: 0, .. }));
        let input = EntryLayoutInput {
            image_kind: ImageKind::Object,
            offload_kind: OffloadKind::OpenMp,
            flags: 0,
            strings: &[],
            image_size: u64::MAX - 10,
        };
        let e = layout(1, &[input]).unwrap_err();
        assert!(matches!(e.kind, ErrorKind::FieldOverflow { .. }));
        // Version 2 may hold no entry at all.
        let empty = layout(2, &[]).unwrap();
        assert_eq!(empty.size, 40);
        let binary = write(2, &[]).unwrap();
        assert!(OffloadBinary::parse(&binary).unwrap().entries().is_empty());
    }

    #[test]
    fn split_skips_zero_padding_and_stops_at_an_error() {
        let a = sample();
        let b = PACKAGER_T2.to_vec();
        let mut buffer = a.clone();
        buffer.extend_from_slice(&b);
        buffer.extend_from_slice(&[0; 24]);
        buffer.extend_from_slice(&a);
        buffer.extend_from_slice(&[0; 5]);
        let found: Vec<(u64, u64)> = split(&buffer)
            .map(|(at, r)| (at, r.unwrap().size()))
            .collect();
        let second = a.len() as u64;
        let third = second + b.len() as u64 + 24;
        assert_eq!(
            found,
            vec![
                (0, a.len() as u64),
                (second, b.len() as u64),
                (third, a.len() as u64)
            ]
        );

        // Garbage after the first binary: one error, rebased, and then nothing.
        let mut bad = a.clone();
        bad.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3]);
        bad.extend_from_slice(&a);
        let items: Vec<_> = split(&bad).collect();
        assert_eq!(items.len(), 2);
        let (at, result) = &items[1];
        assert_eq!(*at, a.len() as u64 + 8);
        let e = result.as_ref().unwrap_err();
        assert_eq!(e.offset, a.len() as u64 + 8);
        assert_eq!(
            e.kind,
            ErrorKind::BadMagic {
                format: "offload binary"
            }
        );

        // An error inside the second binary is reported at its offset in the buffer.
        let mut bad = a.clone();
        let mut second_binary = a.clone();
        put(&mut second_binary, 32 + 32, 1 << 20);
        bad.extend_from_slice(&second_binary);
        let items: Vec<_> = split(&bad).collect();
        let e = items[1].1.as_ref().unwrap_err();
        assert_eq!(e.offset, a.len() as u64 + 32 + 24);

        assert_eq!(split(&[]).count(), 0);
        assert_eq!(split(&[0; 64]).count(), 0);
    }

    #[test]
    fn kind_names() {
        let names: Vec<(&str, &str, &str)> = (0..8)
            .map(|raw| {
                let kind = ImageKind::from_raw(raw);
                assert_eq!(kind.raw(), raw);
                (kind.name(), kind.name_llvm19(), kind.objdump_name())
            })
            .collect();
        assert_eq!(
            names,
            vec![
                ("", "", "<none>"),
                ("o", "o", "elf"),
                ("bc", "bc", "llvm ir"),
                ("cubin", "cubin", "cubin"),
                ("fatbin", "fatbin", "fatbinary"),
                ("s", "s", "ptx"),
                ("spv", "", "<none>"),
                ("", "", "<none>"),
            ]
        );
        for name in ["o", "bc", "cubin", "fatbin", "s"] {
            assert_eq!(ImageKind::from_name_llvm19(name.as_bytes()).name(), name);
        }
        assert_eq!(ImageKind::from_name_llvm19(b"spv"), ImageKind::None);
        assert_eq!(ImageKind::from_name_llvm19(b"O"), ImageKind::None);

        let kinds: Vec<(u16, &str, &str)> = [0, 1, 2, 3, 4, 8, 5, 16]
            .into_iter()
            .map(|raw| {
                let kind = OffloadKind::from_raw(raw);
                assert_eq!(kind.raw(), raw);
                (raw, kind.name(), kind.name_llvm19())
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                (0, "none", "none"),
                (1, "openmp", "openmp"),
                (2, "cuda", "cuda"),
                (3, "hip", "hip"),
                (4, "hip", "none"),
                (8, "sycl", "none"),
                (5, "none", "none"),
                (16, "none", "none"),
            ]
        );
        assert_eq!(
            OffloadKind::from_raw(3).hip_encoding(),
            Some(HipEncoding::Sequential)
        );
        assert_eq!(
            OffloadKind::from_raw(4).hip_encoding(),
            Some(HipEncoding::BitFlag)
        );
        assert_eq!(OffloadKind::OpenMp.hip_encoding(), None);
        assert_eq!(OffloadKind::from_name_llvm19(b"hip").raw(), 3);
        assert_eq!(OffloadKind::from_name_llvm19(b"HIP"), OffloadKind::None);
        assert_eq!(OffloadKind::from_name_llvm19(b"sycl"), OffloadKind::None);
        assert_eq!(OffloadKind::from_name_llvm22(b"hip").raw(), 4);
        assert_eq!(OffloadKind::from_name_llvm22(b"sycl").raw(), 8);
        assert_eq!(OffloadKind::from_name_llvm22(b"cuda"), OffloadKind::Cuda);
        assert_eq!(OffloadKind::from_name_llvm22(b"hipv4"), OffloadKind::None);
    }

    #[test]
    fn packager_input_kinds() {
        let kind = ImageKind::of_packager_input_llvm19;
        assert_eq!(kind(b"a.o", b""), ImageKind::Object);
        assert_eq!(kind(b"dir.bc/a", b""), ImageKind::None);
        assert_eq!(kind(b"x.tar.fatbin", b""), ImageKind::Fatbinary);
        assert_eq!(kind(b"k.cubin", b""), ImageKind::Cubin);
        assert_eq!(kind(b"k.s", b""), ImageKind::Ptx);
        assert_eq!(kind(b"k.spv", b""), ImageKind::None);
        assert_eq!(kind(b"k.O", b""), ImageKind::None);
        assert_eq!(kind(b"noext", b""), ImageKind::None);
        assert_eq!(kind(b"..", b""), ImageKind::None);
        assert_eq!(kind(b"k.o", b"BC\xc0\xde...."), ImageKind::Bitcode);
        assert_eq!(kind(b"k.o", b"\xde\xc0\x17\x0b...."), ImageKind::Bitcode);
    }

    fn key() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(1u8..=255, 0..12)
    }

    /// Image kind, offload kind, flags, strings and image of one entry.
    type Owned = (u16, u16, u32, Vec<(Vec<u8>, Vec<u8>)>, Vec<u8>);

    fn entry_strategy(binary_values: bool) -> impl Strategy<Value = Owned> {
        let value = if binary_values {
            proptest::collection::vec(any::<u8>(), 0..12).boxed()
        } else {
            key().boxed()
        };
        (
            any::<u16>(),
            any::<u16>(),
            any::<u32>(),
            proptest::collection::vec((key(), value), 0..6),
            proptest::collection::vec(any::<u8>(), 0..40),
        )
    }

    fn round_trip(version: u32, owned: &[Owned]) {
        let strings: Vec<Strings> = owned
            .iter()
            .map(|(.., s, _)| {
                s.iter()
                    .map(|(k, v)| (k.as_slice(), v.as_slice()))
                    .collect()
            })
            .collect();
        let images: Vec<OffloadingImage> = owned
            .iter()
            .zip(&strings)
            .map(
                |((image_kind, offload_kind, flags, _, image), strings)| OffloadingImage {
                    image_kind: ImageKind::from_raw(*image_kind),
                    offload_kind: OffloadKind::from_raw(*offload_kind),
                    flags: *flags,
                    strings,
                    image,
                },
            )
            .collect();
        let bytes = write(version, &images).unwrap();
        let binary = OffloadBinary::parse(&bytes).unwrap();
        assert_eq!(binary.version(), version);
        assert_eq!(binary.size(), bytes.len() as u64);
        assert_eq!(binary.entries().len(), images.len());
        for (entry, image) in binary.entries().iter().zip(&images) {
            assert_eq!(entry.image_kind, image.image_kind);
            assert_eq!(entry.offload_kind, image.offload_kind);
            assert_eq!(entry.flags, image.flags);
            assert_eq!(entry.strings, image.strings);
            assert_eq!(entry.image, image.image);
        }
        if version == 3 {
            let packed = write_compressed(&images, Compression::Zstd, 1).unwrap();
            let parsed = OffloadBinary::parse(&packed).unwrap();
            let inflated = parsed.compressed().unwrap().inflate(u64::MAX).unwrap();
            assert_eq!(inflated, bytes);
        }
    }

    proptest! {
        #[test]
        fn version_1_round_trips(entry in entry_strategy(false)) {
            round_trip(1, &[entry]);
        }

        #[test]
        fn later_versions_round_trip(
            entries in proptest::collection::vec(entry_strategy(true), 0..4),
            version in 2u32..=3,
        ) {
            round_trip(version, &entries);
        }

        #[test]
        fn damaged_binaries_never_panic(
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
            cut in any::<prop::sample::Index>(),
            version in 1u32..=3,
        ) {
            let strings: Strings = vec![(b"triple", b"amdgcn"), (b"arch", b"gfx90a")];
            let image = OffloadingImage {
                image_kind: ImageKind::Object,
                offload_kind: OffloadKind::OpenMp,
                flags: 0,
                strings: &strings,
                image: b"some image bytes",
            };
            let mut bytes = write(version, &[image, image][..if version == 1 { 1 } else { 2 }]).unwrap();
            if version == 3 {
                bytes.extend(write_compressed(&[image], Compression::Zlib, 6).unwrap());
            }
            bytes.extend(bytes.clone());
            for (at, value) in edits {
                let i = at.index(bytes.len());
                bytes[i] = value;
            }
            let bytes = &bytes[..cut.index(bytes.len() + 1)];
            for (_, result) in split(bytes) {
                if let Ok(binary) = result {
                    if let Some(payload) = binary.compressed() {
                        let _ = payload.inflate(1 << 20);
                    }
                }
            }
        }
    }
}
