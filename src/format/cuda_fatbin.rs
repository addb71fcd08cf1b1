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

use object::endian::{LittleEndian as LE, U16, U32, U64};
use object::pod::Pod;

use super::error::{Error, ErrorKind, Result};
use super::image_target::{ImageTarget, Producer};

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
pub const TRIPLE: &str = "nvptx64-nvidia-cuda";

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
    /// the payload's start.
    pub fn contents<'a>(
        &self,
        payload: &'a [u8],
        limit: u64,
    ) -> Result<std::borrow::Cow<'a, [u8]>> {
        let inflated: std::borrow::Cow<'a, [u8]> = match self.compression {
            Compression::None => std::borrow::Cow::Borrowed(payload),
            Compression::Lz => {
                std::borrow::Cow::Owned(lz_inflate(payload, self.inflated_size, limit)?)
            }
            Compression::Zstd => {
                std::borrow::Cow::Owned(zstd_inflate(payload, self.inflated_size, limit)?)
            }
        };
        let len = match self.kind {
            EntryKind::Ptx => memchr::memchr(0, &inflated).unwrap_or(inflated.len()),
            EntryKind::Elf => elf_extent(&inflated).unwrap_or(inflated.len()),
            EntryKind::Other(_) => inflated.len(),
        };
        Ok(match inflated {
            std::borrow::Cow::Borrowed(bytes) => {
                std::borrow::Cow::Borrowed(bytes.get(..len).unwrap_or(bytes))
            }
            std::borrow::Cow::Owned(mut bytes) => {
                bytes.truncate(len);
                std::borrow::Cow::Owned(bytes)
            }
        })
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

/// A fat binary of `kept` (entries of `fatbin`, in order), each copied as it is stored, under
/// `fatbin`'s own header.
pub fn write_kept(fatbin: &[u8], kept: &[Entry<'_>]) -> Vec<u8> {
    let header_size = object::pod::from_bytes::<Header>(fatbin)
        .map_or(FIXED, |(h, _)| usize::from(h.header_size.get(LE)));
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

/// The bytes an ELF's headers say it spans: past its section and program header tables and
/// every section's contents. `None` when `bytes` is no 64-bit little-endian ELF.
fn elf_extent(bytes: &[u8]) -> Option<usize> {
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

/// Inflates a zstd frame that must give `size` bytes, never more than `limit`.
fn zstd_inflate(stream: &[u8], size: u64, limit: u64) -> Result<Vec<u8>> {
    if size > limit {
        return Err(Error::new(0, ErrorKind::TooLarge { limit }));
    }
    let failed = |e: std::io::Error| Error::new(0, ErrorKind::Decompress(e.to_string()));
    let mut reader = zstd::stream::read::Decoder::with_buffer(stream).map_err(failed)?;
    let mut out = Vec::new();
    let mut window = super::inflate::window(size);
    loop {
        let n = super::inflate::read_some(&mut reader, &mut window).map_err(failed)?;
        if n == 0 {
            break;
        }
        let total = out.len() as u64 + n as u64;
        if total > size {
            return Err(inflated_size_wrong(size, total));
        }
        super::inflate::append(
            &mut out,
            super::inflate::at_most(&window, n as u64),
            size,
            0,
        )?;
    }
    if out.len() as u64 != size {
        return Err(inflated_size_wrong(size, out.len() as u64));
    }
    Ok(out)
}

/// The error for a payload that inflates to `actual` bytes where its header says `declared`.
fn inflated_size_wrong(declared: u64, actual: u64) -> Error {
    Error::new(
        0,
        ErrorKind::Cuda(CudaError::InflatedSize { declared, actual }),
    )
}

/// Inflates NVIDIA's LZ4-like stream (LZ4's block format: a token of two 4-bit lengths,
/// literals, a 2-byte little-endian offset back, matches of at least 4 bytes; lengths of 15
/// go on in bytes of 255) that must give `size` bytes, never more than `limit`.
fn lz_inflate(stream: &[u8], size: u64, limit: u64) -> Result<Vec<u8>> {
    let too_large = || Error::new(0, ErrorKind::TooLarge { limit });
    if size > limit {
        return Err(too_large());
    }
    let wanted = usize::try_from(size).map_err(|_| too_large())?;
    let mut out: Vec<u8> = Vec::new();
    out.try_reserve_exact(wanted)
        .map_err(|_| Error::new(0, ErrorKind::OutOfMemory { bytes: size }))?;
    let damaged = |at: usize, why: &'static str| {
        Error::new(at as u64, ErrorKind::Cuda(CudaError::LzDamaged(why)))
    };
    let mut pos = 0usize;
    while let Some(&token) = stream.get(pos) {
        pos += 1;
        let literals = lz_length(stream, &mut pos, usize::from(token >> 4))
            .ok_or_else(|| damaged(pos, "a length runs past the end"))?;
        let text = stream
            .get(pos..pos.saturating_add(literals))
            .ok_or_else(|| damaged(pos, "literals run past the end"))?;
        if out.len() + text.len() > wanted {
            return Err(inflated_size_wrong(size, (out.len() + text.len()) as u64));
        }
        out.extend_from_slice(text);
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
        if back == 0 || back > out.len() {
            return Err(damaged(pos, "a match reaches before the start"));
        }
        if out.len().saturating_add(length) > wanted {
            return Err(inflated_size_wrong(size, (out.len() + length) as u64));
        }
        // Byte by byte from `back` before the end: a match may overlap what it writes.
        for _ in 0..length {
            let byte = out.get(out.len() - back).copied().unwrap_or_default();
            out.push(byte);
        }
    }
    if out.len() != wanted {
        return Err(inflated_size_wrong(size, out.len() as u64));
    }
    Ok(out)
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

/// What is wrong with a CUDA fat binary's entries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CudaError {
    /// Fewer bytes than an entry's fixed header.
    #[error("CUDA fat binary entry of {available} bytes, shorter than its {needed}-byte header")]
    EntryTruncated {
        /// The fixed header's size.
        needed: u64,
        /// The bytes there are.
        available: u64,
    },
    /// An entry header smaller than its fixed part.
    #[error("CUDA fat binary entry header of {size} bytes, shorter than its 64 fixed bytes")]
    EntryHeaderTooShort {
        /// The size it gives.
        size: u64,
    },
    /// An entry's payload runs past the end of its fat binary.
    #[error("CUDA fat binary entry payload of {size} bytes runs past the end of its fat binary ({available} bytes left)")]
    EntryPastEnd {
        /// The payload size it gives.
        size: u64,
        /// The bytes left after its header.
        available: u64,
    },
    /// A compressed payload inflates to a size other than its header's.
    #[error("CUDA fat binary entry inflates to {actual} bytes, but its header says {declared}")]
    InflatedSize {
        /// What the header says.
        declared: u64,
        /// What it inflated to (or would at least).
        actual: u64,
    },
    /// An LZ-compressed payload is damaged.
    #[error("CUDA fat binary entry's compressed payload is damaged: {0}")]
    LzDamaged(&'static str),
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;

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
}
