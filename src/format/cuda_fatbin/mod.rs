//! CUDA fat binaries (`.nv_fatbin`, `__nv_fatbin`): a 16-byte header (magic `0xba55ed50`,
//! version, header size, size of what follows) before the entries (cubins and PTX). Several
//! fat binaries placed one after another are each aligned to 8 bytes.
//!
//! Each entry is a header of at least 64 bytes and its payload, back to back with no end
//! marker. The fixed part of an entry's header, as NVIDIA's tools write it (CUDA 12 and 13):
//! kind (1 PTX, 2 ELF), 0x0101, the header's size, the payload's size (padded to 8), the
//! compressed stream's exact size (0 when stored plain), the offset of the ptxas options, the
//! code version (minor, major), the SM number, the offset and length of an identifier, flags,
//! a reserved word, and the inflated size (0 when stored plain). Flag 0x2000 marks NVIDIA's
//! LZ4-like compression, 0x8000 zstd (CUDA 12.4 on); 0x100000 an arch-specific cubin
//! (`sm_90a`), 0x200000 a family one (`sm_100f`). Entries are copied verbatim when a fat
//! binary is written back, compressed or not.
//!
//! # Example
//!
//! A fat binary of one PTX entry for `compute_80`, made by hand, and its entries read back.
//!
//! ```
//! use offload::format::cuda_fatbin::{self, EntryKind};
//!
//! let ptx = b".version 8.0\n.target sm_80\n\0\0\0";
//! let mut entry = Vec::new();
//! entry.extend(1u16.to_le_bytes()); // kind: PTX
//! entry.extend(0x0101u16.to_le_bytes());
//! entry.extend(64u32.to_le_bytes()); // header size
//! entry.extend((ptx.len() as u64).to_le_bytes()); // payload size
//! entry.extend([0; 8]); // compressed size, ptxas options
//! entry.extend(0u16.to_le_bytes()); // minor
//! entry.extend(8u16.to_le_bytes()); // major
//! entry.extend(80u32.to_le_bytes()); // SM
//! entry.resize(64, 0); // identifier, flags, reserved, inflated size
//! entry.extend(ptx);
//! let mut fatbin = cuda_fatbin::MAGIC.to_vec();
//! fatbin.extend(1u16.to_le_bytes()); // version
//! fatbin.extend(16u16.to_le_bytes()); // header size
//! fatbin.extend((entry.len() as u64).to_le_bytes());
//! fatbin.extend(&entry);
//!
//! assert!(cuda_fatbin::is_fatbin(&fatbin));
//! assert_eq!(cuda_fatbin::size(&fatbin).unwrap(), fatbin.len() as u64);
//! let entries: Vec<_> = cuda_fatbin::entries(&fatbin).collect::<Result<_, _>>().unwrap();
//! assert_eq!(entries.len(), 1);
//! assert_eq!(entries[0].kind, EntryKind::Ptx);
//! assert_eq!(entries[0].target_name(), "compute_80");
//! assert_eq!(entries[0].payload, ptx);
//! ```

pub mod error;

use object::endian::{LittleEndian as LE, U16, U32, U64};
use object::pod::Pod;

use crate::format::ccob::Decoding;
pub use crate::format::cuda_fatbin::error::CudaError;
use crate::format::error::{Error, ErrorKind, Result};
use crate::format::image_target::{ImageTarget, Producer};

/// The magic, as stored (little-endian `0xba55ed50`).
pub const MAGIC: [u8; 4] = [0x50, 0xed, 0x55, 0xba];

/// The fixed part of a fat binary's header.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub struct Header {
    /// [`MAGIC`].
    pub magic: U32<LE>,
    /// The format version.
    pub version: U16<LE>,
    /// The size of the header, this fixed part included.
    pub header_size: U16<LE>,
    /// The size of what follows the header.
    pub fat_size: U64<LE>,
}

// SAFETY: plain data of unaligned integer fields, no padding.
unsafe impl Pod for Header {}

/// The size of [`Header`].
const FIXED: usize = std::mem::size_of::<Header>();

/// The triple of CUDA device code.
pub use crate::format::bare::CUDA_TRIPLE as TRIPLE;

/// Whether `data` starts with a fat binary's magic.
pub fn is_fatbin(data: &[u8]) -> bool {
    data.starts_with(&MAGIC)
}

/// The bytes the fat binary at the start of `data` occupies: its header and what follows.
pub fn size(data: &[u8]) -> Result<u64> {
    let (header, _) = object::pod::from_bytes::<Header>(data).map_err(|()| {
        Error::new(
            0,
            ErrorKind::FatbinHeaderTooShort {
                size: data.len() as u64,
                fixed: FIXED as u64,
            },
        )
    })?;
    let header_size = u64::from(header.header_size.get(LE));
    let fat_size = header.fat_size.get(LE);
    if header_size < FIXED as u64 {
        return Err(Error::new(
            6,
            ErrorKind::FatbinHeaderTooShort {
                size: header_size,
                fixed: FIXED as u64,
            },
        ));
    }
    header_size
        .checked_add(fat_size)
        .filter(|&end| end <= data.len() as u64)
        .ok_or_else(|| {
            Error::new(
                0,
                ErrorKind::FatbinPastEnd {
                    size: fat_size,
                    header: header_size,
                },
            )
        })
}

/// The fat binaries in `data`, one after another, each aligned to 8 bytes (zero padding
/// between them skipped): the offset and bytes of each. The walk stops where no magic
/// follows; a damaged one is an error at its offset, and ends the walk.
pub fn split(data: &[u8]) -> impl Iterator<Item = Result<(usize, &[u8])>> {
    let mut pos = 0usize;
    let mut failed = false;
    std::iter::from_fn(move || {
        let zeros = data
            .get(pos..)?
            .iter()
            .position(|&b| b != 0)
            .filter(|zeros| zeros % 8 == 0)?;
        pos += zeros;
        // Fewer bytes than a header, magic or not, end the walk as padding would.
        let here = data
            .get(pos..)
            .filter(|d| !failed && is_fatbin(d) && d.len() >= FIXED)?;
        // The size is checked against the bytes there, so it fits in a usize.
        match size(here).map(|size| usize::try_from(size).unwrap_or(usize::MAX)) {
            Ok(size) => {
                let start = pos;
                let bytes = here.get(..size)?;
                pos = (start + size).next_multiple_of(8);
                Some(Ok((start, bytes)))
            }
            Err(e) => {
                failed = true;
                Some(Err(e.rebased(pos as u64)))
            }
        }
    })
}

/// What an entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// PTX text, compiled by the driver for the device at load time.
    Ptx,
    /// A cubin: an ELF for one SM.
    Elf,
    /// A kind this reader does not know, kept as it is.
    Other(u16),
}

/// How an entry's payload is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// As it is.
    None,
    /// NVIDIA's LZ4-like scheme (flags 0x1000 or 0x2000).
    Lz,
    /// A zstd frame (flag 0x8000, or a zstd magic under a compressed size).
    Zstd,
}

impl Compression {
    /// Its name in listings: `none`, `lz` or `zstd`.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz => "lz",
            Compression::Zstd => "zstd",
        }
    }
}

/// Flag of an entry compressed with NVIDIA's LZ4-like scheme (the older value).
const FLAG_COMPRESSED: u64 = 0x1000;
/// Flag of an entry compressed with NVIDIA's LZ4-like scheme.
const FLAG_COMPRESSED2: u64 = 0x2000;
/// Flag of an entry compressed with zstd.
const FLAG_ZSTD: u64 = 0x8000;
/// Flag of a cubin for one SM only (`sm_90a`).
const FLAG_ARCH_SPECIFIC: u64 = 0x10_0000;
/// Flag of a cubin for an SM family (`sm_100f`).
const FLAG_FAMILY: u64 = 0x20_0000;
/// The magic of a zstd frame.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// The fixed part of an entry's header.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
struct EntryHeader {
    kind: U16<LE>,
    unknown: U16<LE>,
    header_size: U32<LE>,
    payload_size: U64<LE>,
    compressed_size: U32<LE>,
    options_offset: U32<LE>,
    minor: U16<LE>,
    major: U16<LE>,
    arch: U32<LE>,
    name_offset: U32<LE>,
    name_len: U32<LE>,
    flags: U64<LE>,
    reserved: U64<LE>,
    inflated_size: U64<LE>,
}

// SAFETY: plain data of unaligned integer fields, no padding.
unsafe impl Pod for EntryHeader {}

/// The size of [`EntryHeader`].
const ENTRY_FIXED: usize = std::mem::size_of::<EntryHeader>();

/// One entry of a fat binary.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// Its offset in the fat binary (from the fat binary's header).
    pub offset: usize,
    /// What it holds.
    pub kind: EntryKind,
    /// The SM number (80 for `sm_80`).
    pub arch: u32,
    /// The code version, major and minor (PTX ISA version for PTX).
    pub version: (u16, u16),
    /// The flags.
    pub flags: u64,
    /// Its header, whole.
    pub header: &'a [u8],
    /// Its payload as stored: the compressed stream, or the plain bytes with their padding.
    pub payload: &'a [u8],
    /// The size its payload inflates to (the stored size when plain).
    pub inflated_size: u64,
    /// The identifier the header names, if any.
    pub name: Option<&'a [u8]>,
    /// The bytes it occupies: its header and its payload with the padding.
    pub size: usize,
}

impl<'a> Entry<'a> {
    /// How the payload is stored.
    pub fn compression(&self) -> Compression {
        let compressed_flag = self.flags & (FLAG_COMPRESSED | FLAG_COMPRESSED2 | FLAG_ZSTD) != 0;
        if self.flags & FLAG_ZSTD != 0 || (compressed_flag && self.payload.starts_with(&ZSTD_MAGIC))
        {
            Compression::Zstd
        } else if compressed_flag {
            Compression::Lz
        } else {
            Compression::None
        }
    }

    /// The SM's name as NVIDIA's tools write it: `sm_80`, `sm_90a` (arch-specific),
    /// `sm_100f` (a family).
    pub fn sm(&self) -> String {
        let suffix = if self.flags & FLAG_ARCH_SPECIFIC != 0 {
            "a"
        } else if self.flags & FLAG_FAMILY != 0 {
            "f"
        } else {
            ""
        };
        format!("sm_{}{suffix}", self.arch)
    }

    /// The target's name as NVIDIA's tools write it: the SM of a cubin (`sm_80`, `sm_90a`,
    /// `sm_100f`), the virtual architecture of PTX (`compute_90`); the SM number of an entry
    /// of another kind.
    pub fn target_name(&self) -> String {
        match self.kind {
            EntryKind::Ptx => format!("compute_{}", &self.sm()["sm_".len()..]),
            EntryKind::Elf | EntryKind::Other(_) => self.sm(),
        }
    }

    /// What the entry is for: CUDA, for NVPTX, with [`Entry::target_name`] as its target ID.
    pub fn target(&self) -> ImageTarget {
        ImageTarget {
            producer: Producer::Cuda,
            triple: TRIPLE.to_string(),
            target_id: self.target_name(),
        }
    }

    /// What the entry holds, in a word: `cubin`, `ptx`, or `kind-N`.
    pub fn kind_name(&self) -> String {
        match self.kind {
            EntryKind::Ptx => "ptx".into(),
            EntryKind::Elf => "cubin".into(),
            EntryKind::Other(kind) => format!("kind-{kind}"),
        }
    }

    /// Whether the payload is stored compressed.
    pub fn is_compressed(&self) -> bool {
        self.compression() != Compression::None
    }

    /// The payload's bytes, inflated when compressed (refusing more than `limit` bytes),
    /// as NVIDIA's tools extract them: a cubin without its padding (the extent its ELF
    /// headers give), PTX up to its terminating NUL.
    pub fn contents(&self, limit: u64) -> Result<std::borrow::Cow<'a, [u8]>> {
        let at = self.offset as u64 + self.header.len() as u64;
        self.stored()
            .contents(self.payload, limit)
            .map_err(|e| e.rebased(at))
    }

    /// How its payload is stored: enough to read it again from the payload's bytes.
    pub fn stored(&self) -> Stored {
        Stored {
            kind: self.kind,
            compression: self.compression(),
            inflated_size: self.inflated_size,
        }
    }

    /// The entry's bytes as stored in `fatbin`: header and payload with its padding.
    fn stored_in(&self, fatbin: &'a [u8]) -> &'a [u8] {
        fatbin
            .get(self.offset..self.offset + self.size)
            .unwrap_or_default()
    }
}

/// How an entry's payload is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    /// What the entry holds.
    pub kind: EntryKind,
    /// How the payload is compressed.
    pub compression: Compression,
    /// The size it inflates to (the stored size when plain).
    pub inflated_size: u64,
}

impl Stored {
    /// The bytes of the payload stored as `payload`, inflated when compressed (refusing more
    /// than `limit` bytes), as NVIDIA's tools extract them: a cubin without its padding (the
    /// extent its ELF headers give), PTX up to its terminating NUL. Offsets in errors are from
    /// the payload's start. A compressed payload is held whole: [`Stored::contents_to`] hands
    /// it on through a window instead.
    pub fn contents<'a>(
        &self,
        payload: &'a [u8],
        limit: u64,
    ) -> Result<std::borrow::Cow<'a, [u8]>> {
        if self.compression != Compression::None {
            let mut held = Vec::new();
            self.contents_to(payload, limit, Decoding::Fresh, &mut |piece| {
                crate::format::inflate::append(&mut held, piece, self.inflated_size, 0)
            })?;
            return Ok(std::borrow::Cow::Owned(held));
        }
        let len = match self.kind {
            EntryKind::Ptx => memchr::memchr(0, payload).unwrap_or(payload.len()),
            EntryKind::Elf => elf_extent(payload).unwrap_or(payload.len()),
            EntryKind::Other(_) => payload.len(),
        };
        Ok(std::borrow::Cow::Borrowed(
            payload.get(..len).unwrap_or(payload),
        ))
    }

    /// Hands `sink` the contents [`Stored::contents`] gives, in order, a window at a time:
    /// never more than a window of a compressed payload is held, whatever it inflates to (a
    /// cubin is inflated twice, first to find the extent its ELF headers give). The stream is
    /// inflated to its end and checked whatever the cut. Returns the contents' size.
    pub fn contents_to(
        &self,
        payload: &[u8],
        limit: u64,
        mut decoding: Decoding<'_>,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<u64> {
        if self.compression == Compression::None {
            let contents = self.contents(payload, limit)?;
            sink(&contents)?;
            return Ok(contents.len() as u64);
        }
        let mut left = match self.kind {
            EntryKind::Elf => {
                let mut extent = ElfExtent::default();
                self.inflate_to(payload, limit, again(&mut decoding), &mut |piece| {
                    extent.feed(piece);
                    Ok(())
                })?;
                extent.end(self.inflated_size).unwrap_or(self.inflated_size)
            }
            EntryKind::Ptx | EntryKind::Other(_) => self.inflated_size,
        };
        let mut handed = 0u64;
        self.inflate_to(payload, limit, decoding, &mut |piece| {
            let mut piece = crate::format::inflate::at_most(piece, left);
            if let (EntryKind::Ptx, Some(nul)) = (self.kind, memchr::memchr(0, piece)) {
                piece = piece.get(..nul).unwrap_or_default();
                left = piece.len() as u64;
            }
            left -= piece.len() as u64;
            handed += piece.len() as u64;
            match piece.is_empty() {
                true => Ok(()),
                false => sink(piece),
            }
        })?;
        Ok(handed)
    }

    /// Hands `sink` every byte the payload stored as `payload` inflates to (its stored bytes
    /// when plain), a window at a time, and checks that they are as many as its header says;
    /// a header declaring more than `limit` is refused first. Offsets in errors are from the
    /// payload's start.
    pub fn inflate_to(
        &self,
        payload: &[u8],
        limit: u64,
        decoding: Decoding<'_>,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        if self.compression != Compression::None && self.inflated_size > limit {
            return Err(Error::new(0, ErrorKind::TooLarge { limit }));
        }
        match self.compression {
            Compression::None => sink(payload),
            Compression::Lz => lz_inflate_to(payload, self.inflated_size, sink),
            Compression::Zstd => zstd_inflate_to(payload, self.inflated_size, decoding, sink),
        }
    }
}

/// `decoding` lent for one more stream.
fn again<'d>(decoding: &'d mut Decoding<'_>) -> Decoding<'d> {
    match decoding {
        Decoding::Fresh => Decoding::Fresh,
        Decoding::Reusing(context) => Decoding::Reusing(context),
        Decoding::Into(context, rooms) => Decoding::Into(context, *rooms),
    }
}

/// The entries of the fat binary `fatbin` (header included), in order: each, or the error
/// that ends the walk (at its offset in the fat binary).
pub fn entries(fatbin: &[u8]) -> impl Iterator<Item = Result<Entry<'_>>> {
    let (start, end) = match object::pod::from_bytes::<Header>(fatbin) {
        Ok((header, _)) => (
            usize::from(header.header_size.get(LE)),
            size(fatbin).map_or(0, |size| usize::try_from(size).unwrap_or(0)),
        ),
        Err(()) => (0, 0),
    };
    let mut pos = start;
    let mut failed = false;
    std::iter::from_fn(move || {
        if failed || pos >= end {
            return None;
        }
        match entry_at(fatbin.get(..end).unwrap_or_default(), pos) {
            Ok((entry, next)) => {
                pos = next;
                Some(Ok(entry))
            }
            Err(e) => {
                failed = true;
                Some(Err(e))
            }
        }
    })
}

/// The entry at `pos` of `fatbin` (cut at the fat binary's end), and where the next starts.
fn entry_at(fatbin: &[u8], pos: usize) -> Result<(Entry<'_>, usize)> {
    let bad = |offset: usize, what: CudaError| Error::new(offset as u64, ErrorKind::Cuda(what));
    let here = fatbin.get(pos..).unwrap_or_default();
    let (fixed, _) = object::pod::from_bytes::<EntryHeader>(here).map_err(|()| {
        let needed = ENTRY_FIXED as u64;
        let available = here.len() as u64;
        bad(pos, CudaError::EntryTruncated { needed, available })
    })?;
    let header_size = fixed.header_size.get(LE) as usize;
    let payload_size = fixed.payload_size.get(LE);
    if header_size < ENTRY_FIXED {
        let size = header_size as u64;
        return Err(bad(pos + 4, CudaError::EntryHeaderTooShort { size }));
    }
    if header_size > here.len() {
        let (needed, available) = (header_size as u64, here.len() as u64);
        return Err(bad(pos, CudaError::EntryTruncated { needed, available }));
    }
    let left = here.len().saturating_sub(header_size);
    let past_end = || {
        let (size, available) = (payload_size, left as u64);
        bad(pos + 8, CudaError::EntryPastEnd { size, available })
    };
    // Within `here`, so the sizes fit in a usize.
    let payload_len = usize::try_from(payload_size)
        .ok()
        .filter(|&size| size <= left)
        .ok_or_else(past_end)?;
    let (header, payload) = here.split_at(header_size);
    let compressed = fixed.compressed_size.get(LE) as usize;
    let stored = if compressed > 0 {
        compressed.min(payload_len)
    } else {
        payload_len
    };
    let name = match (
        fixed.name_offset.get(LE) as usize,
        fixed.name_len.get(LE) as usize,
    ) {
        (_, 0) => None,
        (offset, len) => here.get(offset..offset.saturating_add(len)),
    };
    let entry = Entry {
        offset: pos,
        kind: match fixed.kind.get(LE) {
            1 => EntryKind::Ptx,
            2 => EntryKind::Elf,
            other => EntryKind::Other(other),
        },
        arch: fixed.arch.get(LE),
        version: (fixed.major.get(LE), fixed.minor.get(LE)),
        flags: fixed.flags.get(LE),
        header,
        payload: payload.get(..stored).unwrap_or_default(),
        inflated_size: match fixed.inflated_size.get(LE) {
            0 => stored as u64,
            size => size,
        },
        name,
        size: header_size + payload_len,
    };
    Ok((entry, pos + header_size + payload_len))
}

/// The payloads, as stored, of the compressed entries of the fat binary at the start of
/// `data`, in order (up to any damage, which the walk of [`entries`] reports): what a rewrite
/// that copies entries as they are stored knows it wrote.
pub fn compressed_payloads(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    let end = size(data).map_or(0, |size| usize::try_from(size).unwrap_or(0));
    entries(data.get(..end).unwrap_or_default())
        .map_while(Result::ok)
        .filter(Entry::is_compressed)
        .map(|entry| entry.payload)
}

/// A fat binary of `kept` (entries of `fatbin`, in order), each copied as it is stored, under
/// `fatbin`'s own header.
pub fn write_kept(fatbin: &[u8], kept: &[Entry<'_>]) -> Vec<u8> {
    let header_size = header_size(fatbin);
    let header = fatbin.get(..header_size).unwrap_or_default();
    let mut out = header.to_vec();
    for entry in kept {
        out.extend_from_slice(entry.stored_in(fatbin));
    }
    let fat_size = out.len().saturating_sub(header_size) as u64;
    if let Some(field) = out.get_mut(8..16) {
        field.copy_from_slice(&fat_size.to_le_bytes());
    }
    out
}

/// The fat binary [`write_kept`] writes, as its new header and the stretches of `fatbin` that
/// follow it, in order (offset and length; entries side by side in `fatbin` make one
/// stretch): so that a writer may copy the entries from the file without holding them.
/// `None` when the header is too short to hold the size field [`write_kept`] sets (a damaged
/// one, whose entries' bytes that field would overwrite).
pub fn kept_stretches(fatbin: &[u8], kept: &[Entry<'_>]) -> Option<Copied> {
    let header_size = header_size(fatbin);
    let mut head = fatbin.get(..header_size).unwrap_or_default().to_vec();
    if head.len() < 16 {
        return None;
    }
    let mut stretches: Vec<(usize, usize)> = Vec::new();
    let mut stored = 0usize;
    for entry in kept {
        let bytes = entry.stored_in(fatbin);
        if bytes.is_empty() {
            continue;
        }
        stored += bytes.len();
        match stretches.last_mut() {
            Some((at, len)) if *at + *len == entry.offset => *len += bytes.len(),
            _ => stretches.push((entry.offset, bytes.len())),
        }
    }
    let fat_size = (head.len() + stored).saturating_sub(header_size) as u64;
    head.get_mut(8..16)?
        .copy_from_slice(&fat_size.to_le_bytes());
    Some(Copied { head, stretches })
}

/// New bytes made of a head of their own and stretches of the old container's bytes that
/// follow it, unchanged: a fat binary of kept entries ([`kept_stretches`]), which a writer
/// copies from the file rather than through memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copied {
    /// The bytes made here, first.
    pub head: Vec<u8>,
    /// The stretches of the container that follow, in order: (offset in it, length).
    pub stretches: Vec<(usize, usize)>,
}

impl Copied {
    /// How many bytes they are.
    pub fn len(&self) -> u64 {
        let stretches: usize = self.stretches.iter().map(|&(_, len)| len).sum();
        (self.head.len() + stretches) as u64
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The head, then each stretch of `container` (the old container's bytes), in order.
    pub fn parts<'b>(&'b self, container: &'b [u8]) -> impl Iterator<Item = &'b [u8]> {
        std::iter::once(&self.head[..]).chain(self.stretches.iter().map(|&(at, len)| {
            at.checked_add(len)
                .and_then(|end| container.get(at..end))
                .unwrap_or_default()
        }))
    }

    /// The new bytes in memory, `container` being the old container's bytes.
    pub fn to_vec(&self, container: &[u8]) -> Vec<u8> {
        self.parts(container).collect::<Vec<_>>().concat()
    }
}

/// The size of the header of the fat binary at the start of `fatbin`, as it says.
fn header_size(fatbin: &[u8]) -> usize {
    object::pod::from_bytes::<Header>(fatbin)
        .map_or(FIXED, |(h, _)| usize::from(h.header_size.get(LE)))
}

/// The bytes an ELF's headers say it spans: past its section and program header tables and
/// every section's contents. `None` when `bytes` is no 64-bit little-endian ELF.
pub fn elf_extent(bytes: &[u8]) -> Option<usize> {
    use object::read::elf::{FileHeader, SectionHeader};
    let header = object::elf::FileHeader64::<LE>::parse(bytes).ok()?;
    let sections = header.section_headers(LE, bytes).ok()?;
    let table_end =
        |offset: u64, count: u16, size: u16| offset.checked_add(u64::from(count) * u64::from(size));
    let mut end = table_end(
        header.e_shoff.get(LE),
        header.e_shnum.get(LE),
        header.e_shentsize.get(LE),
    )?;
    end = end.max(table_end(
        header.e_phoff.get(LE),
        header.e_phnum.get(LE),
        header.e_phentsize.get(LE),
    )?);
    for section in sections {
        if section.sh_type(LE) != object::elf::SHT_NOBITS {
            end = end.max(section.sh_offset(LE).checked_add(section.sh_size(LE))?);
        }
    }
    usize::try_from(end).ok().filter(|&end| end <= bytes.len())
}

/// The extent [`elf_extent`] gives, found from an ELF's bytes as they stream past: only its
/// file header and one section header at a time are held.
#[derive(Default)]
struct ElfExtent {
    /// The bytes fed so far.
    seen: u64,
    /// The file header's bytes, as they arrive.
    head: [u64; 8],
    /// What is known once the file header is whole.
    found: Option<Extent>,
}

/// What [`ElfExtent`] knows past the file header.
enum Extent {
    /// No extent: the bytes are no ELF, or its headers do not read.
    Unknown,
    /// The section header table is read as it passes.
    Reading(SectionTable),
}

/// The walk of an ELF's section header table as its bytes pass.
struct SectionTable {
    /// Its offset.
    offset: u64,
    /// Its headers: from the file header, or from section 0's `sh_size` when that is 0.
    count: Option<u64>,
    /// The headers read whole.
    read: u64,
    /// The bytes of the one being read.
    current: [u64; 8],
    /// How many of them have arrived.
    filled: usize,
    /// The extent so far.
    end: u64,
}

/// The size of an ELF file header and of a section header, 64-bit.
const ELF_HEADER: usize = 64;

impl ElfExtent {
    /// Takes the next bytes of the ELF.
    fn feed(&mut self, piece: &[u8]) {
        let at = self.seen;
        self.seen += piece.len() as u64;
        if self.found.is_none() {
            // Fewer than 64 bytes came before: the header is not whole yet.
            let have = usize::try_from(at).unwrap_or(ELF_HEADER);
            let take = fill(object::pod::bytes_of_slice_mut(&mut self.head), have, piece);
            if have + take < ELF_HEADER {
                return;
            }
            self.found = Some(self.table());
            // The section headers may start within the file header.
            let head = self.head;
            self.feed_table(0, object::pod::bytes_of_slice(&head));
            self.feed_table(at + take as u64, piece.get(take..).unwrap_or_default());
            return;
        }
        self.feed_table(at, piece);
    }

    /// What the whole file header says of the section header table, as [`elf_extent`] reads
    /// it with `object`: a 64-bit little-endian ELF, its table of 64-byte headers; the extent
    /// starts past both header tables.
    fn table(&self) -> Extent {
        use object::read::elf::FileHeader;
        let bytes = object::pod::bytes_of_slice(&self.head);
        let Ok(header) = object::elf::FileHeader64::<LE>::parse(bytes) else {
            return Extent::Unknown;
        };
        let table_end = |offset: u64, count: u16, size: u16| {
            offset.checked_add(u64::from(count) * u64::from(size))
        };
        let (offset, count) = (header.e_shoff.get(LE), header.e_shnum.get(LE));
        let entry_size = header.e_shentsize.get(LE);
        let sections = table_end(offset, count, entry_size);
        let program = table_end(
            header.e_phoff.get(LE),
            header.e_phnum.get(LE),
            header.e_phentsize.get(LE),
        );
        let (Some(sections), Some(program)) = (sections, program) else {
            return Extent::Unknown;
        };
        if offset != 0 && usize::from(entry_size) != ELF_HEADER {
            return Extent::Unknown;
        }
        Extent::Reading(SectionTable {
            offset,
            count: match (offset, count) {
                // No table: no section headers to read.
                (0, _) => Some(0),
                (_, 0) => None,
                (_, count) => Some(u64::from(count)),
            },
            read: 0,
            current: [0; 8],
            filled: 0,
            end: sections.max(program),
        })
    }

    /// Takes the bytes `piece`, at `at` in the ELF, as far as they hold section headers.
    fn feed_table(&mut self, at: u64, mut piece: &[u8]) {
        let Some(Extent::Reading(table)) = &mut self.found else {
            return;
        };
        let mut at = at;
        while table.count.is_none_or(|count| table.read < count) {
            let next = table.read * ELF_HEADER as u64 + table.filled as u64;
            let Some(wanted) = table.offset.checked_add(next) else {
                self.found = Some(Extent::Unknown);
                return;
            };
            let end = at + piece.len() as u64;
            if wanted < at || wanted >= end {
                return;
            }
            // Before `end`, so within the piece.
            let skip = usize::try_from(wanted - at).unwrap_or(usize::MAX);
            piece = piece.get(skip..).unwrap_or_default();
            at = wanted;
            let current = object::pod::bytes_of_slice_mut(&mut table.current);
            table.filled += fill(current, table.filled, piece);
            if table.filled == ELF_HEADER && !table.section_read() {
                self.found = Some(Extent::Unknown);
                return;
            }
        }
    }

    /// The extent, once the `size` bytes of the ELF have passed: `None` when they are no ELF,
    /// its headers do not read, or they say it spans more than `size`.
    fn end(&self, size: u64) -> Option<u64> {
        let Some(Extent::Reading(table)) = &self.found else {
            return None;
        };
        let count = table.count?;
        let table_end = table
            .offset
            .checked_add(count.checked_mul(ELF_HEADER as u64)?)?;
        (table.read == count && table_end <= size && table.end <= size).then_some(table.end)
    }
}

/// Copies the first bytes of `piece` into `buffer` past its first `filled`, as many as fit:
/// how many that is.
fn fill(buffer: &mut [u8], filled: usize, piece: &[u8]) -> usize {
    let room = buffer.get_mut(filled..).unwrap_or_default();
    let n = room.len().min(piece.len());
    for (to, from) in room.iter_mut().zip(piece) {
        *to = *from;
    }
    n
}

impl SectionTable {
    /// Takes the section header just read whole; `false` when the extent cannot be known.
    fn section_read(&mut self) -> bool {
        use object::read::elf::SectionHeader;
        let bytes = object::pod::bytes_of_slice(&self.current);
        let Ok((header, _)) = object::pod::from_bytes::<object::elf::SectionHeader64<LE>>(bytes)
        else {
            return false;
        };
        if self.count.is_none() {
            // An extended count, as section 0's size, read as `object` reads it.
            match u32::try_from(header.sh_size(LE)) {
                Ok(0) => {
                    self.count = Some(0);
                    return true;
                }
                Ok(count) => self.count = Some(u64::from(count)),
                Err(_) => return false,
            }
        }
        if header.sh_type(LE) != object::elf::SHT_NOBITS {
            match header.sh_offset(LE).checked_add(header.sh_size(LE)) {
                Some(end) => self.end = self.end.max(end),
                None => return false,
            }
        }
        self.read += 1;
        self.filled = 0;
        true
    }
}

/// Hands `sink` what a zstd frame that must give `size` bytes inflates to, a window at a
/// time, with the decoder `decoding` says.
fn zstd_inflate_to(
    stream: &[u8],
    size: u64,
    decoding: Decoding<'_>,
    sink: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let failed = |e: std::io::Error| Error::new(0, ErrorKind::Decompress(e.to_string()));
    let mut reader: Box<dyn std::io::Read + '_> = match decoding {
        Decoding::Fresh => {
            Box::new(zstd::stream::read::Decoder::with_buffer(stream).map_err(failed)?)
        }
        Decoding::Reusing(context) | Decoding::Into(context, _) => {
            Box::new(zstd::stream::read::Decoder::with_context(stream, context))
        }
    };
    let mut window = crate::format::inflate::window(size);
    let mut total = 0u64;
    loop {
        let n = crate::format::inflate::read_some(&mut reader, &mut window).map_err(failed)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > size {
            return Err(inflated_size_wrong(size, total));
        }
        sink(crate::format::inflate::at_most(&window, n as u64))?;
    }
    if total != size {
        return Err(inflated_size_wrong(size, total));
    }
    Ok(())
}

/// The error for a payload that inflates to `actual` bytes where its header says `declared`.
fn inflated_size_wrong(declared: u64, actual: u64) -> Error {
    Error::new(
        0,
        ErrorKind::Cuda(CudaError::InflatedSize { declared, actual }),
    )
}

/// The most an LZ match reaches back: its offset is 16 bits.
const LZ_HISTORY: usize = 1 << 16;

/// Bytes an LZ stream inflates to before they are handed on.
const LZ_FLUSH: usize = 1 << 20;

/// Hands `sink` what NVIDIA's LZ4-like stream (LZ4's block format: a token of two 4-bit
/// lengths, literals, a 2-byte little-endian offset back, matches of at least 4 bytes;
/// lengths of 15 go on in bytes of 255) that must give `size` bytes inflates to, a window at
/// a time: only the last 64 KiB, which a match may reach back into, are kept between windows.
fn lz_inflate_to(
    stream: &[u8],
    size: u64,
    sink: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let damaged = |at: usize, why: &'static str| {
        Error::new(at as u64, ErrorKind::Cuda(CudaError::LzDamaged(why)))
    };
    let mut out = LzOutput {
        held: Vec::new(),
        total: 0,
        size,
        sink,
    };
    let mut pos = 0usize;
    while let Some(&token) = stream.get(pos) {
        pos += 1;
        let literals = lz_length(stream, &mut pos, usize::from(token >> 4))
            .ok_or_else(|| damaged(pos, "a length runs past the end"))?;
        let text = stream
            .get(pos..pos.saturating_add(literals))
            .ok_or_else(|| damaged(pos, "literals run past the end"))?;
        out.literals(text)?;
        pos += literals;
        if pos == stream.len() {
            break;
        }
        let back = match stream.get(pos..pos + 2) {
            Some(&[low, high]) => usize::from(u16::from_le_bytes([low, high])),
            _ => return Err(damaged(pos, "a match offset runs past the end")),
        };
        pos += 2;
        let length = lz_length(stream, &mut pos, usize::from(token & 0x0f))
            .ok_or_else(|| damaged(pos, "a length runs past the end"))?
            .saturating_add(4);
        if back == 0 || back as u64 > out.total {
            return Err(damaged(pos, "a match reaches before the start"));
        }
        out.repeat(back, length)?;
    }
    out.finish()
}

/// What an LZ stream has inflated to: the bytes not handed on yet, after the 64 KiB a match
/// may reach back into.
struct LzOutput<'s> {
    /// The last bytes inflated: at least the last [`LZ_HISTORY`] (or all so far).
    held: Vec<u8>,
    /// The bytes inflated so far.
    total: u64,
    /// What the stream must inflate to.
    size: u64,
    sink: &'s mut dyn FnMut(&[u8]) -> Result<()>,
}

impl LzOutput<'_> {
    /// Refuses `more` bytes past the declared size.
    fn room(&self, more: usize) -> Result<()> {
        let total = self.total.saturating_add(more as u64);
        match total > self.size {
            true => Err(inflated_size_wrong(self.size, total)),
            false => Ok(()),
        }
    }

    /// Appends literal bytes.
    fn literals(&mut self, text: &[u8]) -> Result<()> {
        self.room(text.len())?;
        self.held.extend_from_slice(text);
        self.total += text.len() as u64;
        self.spill()
    }

    /// Appends `length` bytes copied from `back` before the end (`back` no more than what was
    /// inflated). A match may overlap what it writes: the bytes it makes repeat with a period
    /// of `back`, so each copy may take as many whole periods as are already written.
    fn repeat(&mut self, back: usize, length: usize) -> Result<()> {
        self.room(length)?;
        // Where the repetition starts, counted in bytes inflated.
        let origin = self.total - back as u64;
        let mut left = length;
        while left > 0 {
            let held_from = self.total - self.held.len() as u64;
            // Whole periods written since the origin, or since the first byte held after a
            // spill (which keeps more than a period): at least one.
            let since =
                usize::try_from(self.total - origin.max(held_from)).unwrap_or(self.held.len());
            let periods = since / back * back;
            let n = left.min(periods).min(LZ_FLUSH);
            let from = self.held.len() - periods;
            self.held.extend_from_within(from..from + n);
            self.total += n as u64;
            left -= n;
            self.spill()?;
        }
        Ok(())
    }

    /// Hands on what is held beyond the history once a window's worth has gathered.
    fn spill(&mut self) -> Result<()> {
        if self.held.len() >= LZ_HISTORY + LZ_FLUSH {
            let out = self.held.len() - LZ_HISTORY;
            (self.sink)(self.held.get(..out).unwrap_or_default())?;
            self.held.drain(..out);
        }
        Ok(())
    }

    /// Hands on the rest, once the stream is read: it must have given the declared size.
    fn finish(self) -> Result<()> {
        if self.total != self.size {
            return Err(inflated_size_wrong(self.size, self.total));
        }
        match self.held.is_empty() {
            true => Ok(()),
            false => (self.sink)(&self.held),
        }
    }
}

/// A length of LZ4's block format that starts as `nibble`: 15 goes on with the bytes at
/// `pos`, each added, until one below 255. `None` when the stream ends first.
fn lz_length(stream: &[u8], pos: &mut usize, nibble: usize) -> Option<usize> {
    let mut length = nibble;
    if nibble == 15 {
        loop {
            let byte = *stream.get(*pos)?;
            *pos += 1;
            length = length.checked_add(usize::from(byte))?;
            if byte != 255 {
                break;
            }
        }
    }
    Some(length)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;

    /// An LZ stream inflated whole, uncut.
    fn lz_inflate(stream: &[u8], size: u64, limit: u64) -> Result<Vec<u8>> {
        let stored = Stored {
            kind: EntryKind::Other(0),
            compression: Compression::Lz,
            inflated_size: size,
        };
        stored
            .contents(stream, limit)
            .map(std::borrow::Cow::into_owned)
    }

    fn fatbin(payload: usize) -> Vec<u8> {
        let mut out = MAGIC.to_vec();
        out.extend_from_slice(&1u16.to_le_bytes());
        out.extend_from_slice(&16u16.to_le_bytes());
        out.extend_from_slice(&(payload as u64).to_le_bytes());
        out.resize(16 + payload, 0xcc);
        out
    }

    #[test]
    fn fat_binaries_one_after_another_are_split_on_8_byte_boundaries() {
        let mut data = fatbin(5);
        data.resize(24, 0);
        data.extend(fatbin(8));
        let found: Vec<(usize, usize)> = split(&data)
            .map(|r| r.map(|(at, bytes)| (at, bytes.len())).unwrap())
            .collect();
        assert_eq!(found, [(0, 21), (24, 24)]);
    }

    #[test]
    fn damage_is_an_error_at_its_offset() {
        let mut short = fatbin(4);
        short[6] = 8;
        let e = size(&short).unwrap_err();
        assert_eq!(e.offset, 6);
        assert!(e.to_string().contains("header of 8 bytes"), "{e}");
        let mut long = fatbin(4);
        long[8] = 200;
        let e = split(&long).next().unwrap().unwrap_err();
        assert!(e.to_string().contains("runs past the end"), "{e}");
        assert!(size(&MAGIC).is_err());
    }

    #[test]
    fn lz_streams_inflate_with_overlapping_matches_and_damage_is_refused() {
        // "abc", then a match 3 back of 4 + 5 bytes (overlapping), then "Z" as last literals.
        let stream = [0x35, b'a', b'b', b'c', 3, 0, 0x10, b'Z'];
        assert_eq!(lz_inflate(&stream, 13, 100).unwrap(), b"abcabcabcabcZ");
        // A size other than declared, a match before the start, a cut offset.
        assert!(lz_inflate(&stream, 12, 100)
            .unwrap_err()
            .to_string()
            .contains("inflates to"));
        assert!(lz_inflate(&stream, 14, 100)
            .unwrap_err()
            .to_string()
            .contains("inflates to"));
        let before = [0x10, b'a', 9, 0];
        assert!(lz_inflate(&before, 5, 100)
            .unwrap_err()
            .to_string()
            .contains("before the start"));
        let cut = [0x10, b'a', 9];
        assert!(lz_inflate(&cut, 5, 100)
            .unwrap_err()
            .to_string()
            .contains("offset runs past"));
        // A literal length of 15 and more goes on in bytes.
        let mut long = vec![0xf0, 3];
        long.extend([b'x'; 18]);
        assert_eq!(lz_inflate(&long, 18, 100).unwrap(), [b'x'; 18]);
        assert!(lz_inflate(&long, 18, 17).is_err());
    }

    /// The extent [`ElfExtent`] finds with the bytes fed `step` at a time.
    fn streamed_extent(bytes: &[u8], step: usize) -> Option<usize> {
        let mut extent = ElfExtent::default();
        for piece in bytes.chunks(step) {
            extent.feed(piece);
        }
        extent.end(bytes.len() as u64).map(|end| end as usize)
    }

    #[test]
    fn the_extent_found_as_bytes_stream_is_the_one_read_whole() {
        let folder =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/cuda/extracted");
        let mut cubins = Vec::new();
        for sample in std::fs::read_dir(folder).unwrap() {
            let sample = sample.unwrap().path();
            if !sample.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(sample).unwrap() {
                let path = file.unwrap().path();
                if path.extension().is_some_and(|e| e == "cubin") {
                    cubins.push(std::fs::read(path).unwrap());
                }
            }
        }
        assert!(cubins.len() > 5);
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut found = 0;
        for cubin in &cubins {
            // As stored: padded, and with more after the extent.
            let mut padded = cubin.clone();
            padded.resize(cubin.len() + 100, 0);
            let shoff = u64::from_le_bytes(cubin[0x28..0x30].try_into().unwrap()) as usize;
            for round in 0..200 {
                let mut bytes = padded.clone();
                if round > 0 {
                    // Damage in the file header or the section header table.
                    let region = if round % 2 == 0 {
                        0..64
                    } else {
                        shoff..shoff + 256
                    };
                    let last = bytes.len() - 1;
                    let at = (region.start + next() as usize % region.len()).min(last);
                    bytes[at] = next() as u8;
                }
                let whole = elf_extent(&bytes);
                found += usize::from(whole.is_some());
                for step in [1, 7, 64, 4096, bytes.len()] {
                    assert_eq!(
                        streamed_extent(&bytes, step),
                        whole,
                        "round {round}, step {step}"
                    );
                }
            }
            assert_eq!(streamed_extent(&padded, 64), Some(cubin.len()));
        }
        // Most damage leaves an extent; some does not.
        assert!(
            found > cubins.len() * 50 && found < cubins.len() * 200,
            "{found}"
        );
        // Too short, no ELF, a table past the end.
        assert_eq!(streamed_extent(&cubins[0][..63], 8), None);
        assert_eq!(streamed_extent(&[0; 4096], 100), None);
        assert_eq!(
            streamed_extent(&cubins[0][..cubins[0].len() - 1], 3),
            elf_extent(&cubins[0][..cubins[0].len() - 1])
        );
    }

    #[test]
    fn lz_streams_longer_than_the_window_inflate_as_whole() {
        // Literals, a long overlapping match of period 3, literals, a match 60000 back.
        let mut stream = vec![0xff, 3 + 250];
        stream.extend((0..18 + 250).map(|i| (i * 7 % 256) as u8));
        // ... matched 3 back for 4 + 15 + 255 * 12000 bytes.
        stream.extend_from_slice(&[3, 0]);
        stream.extend(std::iter::repeat_n(255, 12000));
        stream.push(0);
        let mut expected: Vec<u8> = (0..18 + 250).map(|i| (i * 7 % 256) as u8).collect();
        for _ in 0..4 + 15 + 255 * 12000 {
            expected.push(expected[expected.len() - 3]);
        }
        // The last literals.
        stream.extend_from_slice(&[0x20, b'e', b'n']);
        expected.extend_from_slice(b"en");
        let size = expected.len() as u64;
        assert_eq!(lz_inflate(&stream, size, size).unwrap(), expected);
        let mut pieces = 0;
        let stored = Stored {
            kind: EntryKind::Other(0),
            compression: Compression::Lz,
            inflated_size: size,
        };
        let mut again = Vec::new();
        stored
            .contents_to(&stream, size, Decoding::Fresh, &mut |piece| {
                pieces += 1;
                again.extend_from_slice(piece);
                Ok(())
            })
            .unwrap();
        assert!(pieces > 2);
        assert!(again == expected);
    }
}
