//! Zips written from scratch, member by member: what makes a wheel that did not exist before
//! (a device wheel), and the host wheel of a split, whose members are copied from the fat
//! wheel as they lie, or written anew, or added.
//!
//! New members get the DOS time of 1980-01-01 00:00 (the same bytes from the same inputs, as
//! reproducible builds want), Unix modes in their external attributes, and ZIP64 fields only
//! when a size or offset needs them.

use std::io::Write;

use crate::error::Result;
use crate::host::package::zip::{self, NewSizes, Stored};
use crate::io::spill::{Spill, Spilled};
use crate::io::{Input, Output};

/// The stored method.
pub const STORED: u16 = 0;
/// The deflate method.
pub const DEFLATED: u16 = 8;

const LOCAL: u32 = 0x0403_4b50;
const CENTRAL: u32 = 0x0201_4b50;
/// 1980-01-01 as a DOS date (the time is 00:00:00, 0).
const DOS_DATE: u16 = (1 << 5) | 1;
/// Made by Unix (3), zip 3.0.
const MADE_BY: u16 = (3 << 8) | 30;
const NEEDED: u16 = 20;
const NEEDED_ZIP64: u16 = 45;
/// Names that are not ASCII are UTF-8 (general purpose flag bit 11).
const UTF8: u16 = 1 << 11;
const FULL32: u64 = 0xffff_ffff;

/// A member's contents made ready to be written: compressed as its method says, with its
/// CRC-32 and sizes.
pub struct Packed {
    /// The method.
    pub method: u16,
    /// The bytes as stored: the contents themselves when stored, else the deflated bytes.
    stored: Option<Spilled>,
    /// CRC-32 and sizes.
    pub sizes: NewSizes,
}

/// The most deflated bytes a member packed keeps in memory; larger ones wait in a file.
const IN_MEMORY: usize = 1 << 20;

/// `contents` made ready to be written with `method` (stored, or deflated at the usual level):
/// deflated bytes wait in memory, or in a temporary file when large.
pub fn pack(contents: &[u8], method: u16) -> std::io::Result<Packed> {
    let mut crc = flate2::Crc::new();
    crc.update(contents);
    let (stored, compressed_size) = if method == STORED {
        (None, contents.len() as u64)
    } else {
        // Many members may wait packed at once: beyond a mebibyte they wait on the disk.
        let spill = if contents.len() > IN_MEMORY {
            Spill::on_disk()?
        } else {
            Spill::new()
        };
        let mut encoder = flate2::write::DeflateEncoder::new(spill, flate2::Compression::default());
        encoder.write_all(contents)?;
        let spilled = encoder.finish()?.finish()?;
        let len = spilled.len();
        (Some(spilled), len)
    };
    Ok(Packed {
        method: if method == STORED { STORED } else { DEFLATED },
        stored,
        sizes: NewSizes {
            crc: crc.sum(),
            compressed_size,
            size: contents.len() as u64,
        },
    })
}

/// A zip being written to an output: members in the order added, then the central directory.
pub struct ZipWriter<'o> {
    out: &'o mut Output,
    at: u64,
    central: Vec<u8>,
    count: u64,
}

impl<'o> ZipWriter<'o> {
    /// A zip written to `out` from its first byte.
    pub fn new(out: &'o mut Output) -> ZipWriter<'o> {
        ZipWriter {
            out,
            at: 0,
            central: Vec::new(),
            count: 0,
        }
    }

    /// Adds a new member `name` with Unix `mode` holding `contents` (a slice of `source` when
    /// given, so that stored bytes are copied by the kernel), packed as `packed`.
    pub fn add(
        &mut self,
        name: &[u8],
        mode: u32,
        contents: &[u8],
        source: Option<&Input>,
        packed: &Packed,
    ) -> Result<()> {
        let sizes = packed.sizes;
        let offset = self.at;
        let zip64_sizes = sizes.size >= FULL32 || sizes.compressed_size >= FULL32;
        let flags = if name.is_ascii() { 0 } else { UTF8 };
        let needed = if zip64_sizes { NEEDED_ZIP64 } else { NEEDED };
        let mut local = Vec::with_capacity(30 + name.len() + 20);
        put32(&mut local, LOCAL);
        put16(&mut local, needed);
        put16(&mut local, flags);
        put16(&mut local, packed.method);
        put16(&mut local, 0);
        put16(&mut local, DOS_DATE);
        put32(&mut local, sizes.crc);
        let local_extra = if zip64_sizes {
            put32(&mut local, u32::MAX);
            put32(&mut local, u32::MAX);
            zip64_extra(&[sizes.size, sizes.compressed_size])
        } else {
            put32(&mut local, low32(sizes.compressed_size));
            put32(&mut local, low32(sizes.size));
            Vec::new()
        };
        put16(&mut local, len16(name.len()));
        put16(&mut local, len16(local_extra.len()));
        local.extend_from_slice(name);
        local.extend_from_slice(&local_extra);
        self.out.write_bytes(&local)?;
        self.write_data(contents, source, packed)?;
        self.at += local.len() as u64 + sizes.compressed_size;

        let mut wide = Vec::new();
        let size = field(sizes.size, &mut wide);
        let compressed = field(sizes.compressed_size, &mut wide);
        let local_offset = field(offset, &mut wide);
        let extra = if wide.is_empty() {
            Vec::new()
        } else {
            zip64_extra(&wide)
        };
        let c = &mut self.central;
        put32(c, CENTRAL);
        put16(c, MADE_BY);
        put16(
            c,
            if wide.is_empty() {
                NEEDED
            } else {
                NEEDED_ZIP64
            },
        );
        put16(c, flags);
        put16(c, packed.method);
        put16(c, 0);
        put16(c, DOS_DATE);
        put32(c, sizes.crc);
        put32(c, compressed);
        put32(c, size);
        put16(c, len16(name.len()));
        put16(c, len16(extra.len()));
        put16(c, 0);
        put16(c, 0);
        put16(c, 0);
        put32(c, (0o100_000 | (mode & 0o7777)) << 16);
        put32(c, local_offset);
        c.extend_from_slice(name);
        c.extend_from_slice(&extra);
        self.count += 1;
        Ok(())
    }

    /// Copies the member `stored` of the zip `data` as it lies there (headers, data, data
    /// descriptor), only its offset changed.
    pub fn copy(
        &mut self,
        package: &std::path::Path,
        data: &Input,
        stored: &Stored<'_>,
    ) -> Result<()> {
        let fail = |message: String| super::member_error(package, stored.name, message);
        let part = slice(data, &stored.span)
            .ok_or_else(|| fail("its bytes run past the end of the file".into()))?;
        let entry = zip::central_entry(data, stored, self.at, None).map_err(fail)?;
        self.out.write_part(data, part)?;
        self.at += part.len() as u64;
        self.central.extend_from_slice(&entry);
        self.count += 1;
        Ok(())
    }

    /// Writes the member `stored` of the zip `data` anew with the contents `packed` (a slice
    /// of `source` when stored and given): its name, times, modes and extra fields kept.
    pub fn replace(
        &mut self,
        package: &std::path::Path,
        data: &Input,
        stored: &Stored<'_>,
        contents: &[u8],
        source: Option<&Input>,
        packed: &Packed,
    ) -> Result<()> {
        let fail = |message: String| super::member_error(package, stored.name, message);
        let header = zip::local_header(data, stored, packed.sizes).map_err(fail)?;
        let entry = zip::central_entry(data, stored, self.at, Some(packed.sizes)).map_err(fail)?;
        self.out.write_bytes(&header)?;
        self.write_data(contents, source, packed)?;
        self.at += header.len() as u64 + packed.sizes.compressed_size;
        self.central.extend_from_slice(&entry);
        self.count += 1;
        Ok(())
    }

    /// Writes a member's data as `packed` holds it: its deflated bytes, or `contents` stored
    /// (copied by the kernel from `source` when given).
    fn write_data(
        &mut self,
        contents: &[u8],
        source: Option<&Input>,
        packed: &Packed,
    ) -> Result<()> {
        let written = match (&packed.stored, source) {
            (Some(spilled), _) => match spilled.input() {
                Some(input) => self.out.write_part(input, spilled.bytes()),
                None => self.out.write_bytes(spilled.bytes()),
            },
            (None, Some(input)) => self.out.write_part(input, contents),
            (None, None) => self.out.write_bytes(contents),
        };
        Ok(written?)
    }

    /// Writes the central directory and the end records; returns the zip's size.
    pub fn finish(self) -> Result<u64> {
        self.out.write_bytes(&self.central)?;
        let size = self.central.len() as u64;
        let end = zip::end_records(self.count, self.at, size, b"");
        self.out.write_bytes(&end)?;
        Ok(self.at + size + end.len() as u64)
    }
}

/// A 32-bit field for `value`, or the mark that sends it to the ZIP64 field (which then gets
/// it).
fn field(value: u64, wide: &mut Vec<u64>) -> u32 {
    if value >= FULL32 {
        wide.push(value);
        u32::MAX
    } else {
        low32(value)
    }
}

fn low32(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

fn len16(len: usize) -> u16 {
    u16::try_from(len).unwrap_or(u16::MAX)
}

fn zip64_extra(values: &[u64]) -> Vec<u8> {
    let mut extra = Vec::with_capacity(4 + 8 * values.len());
    put16(&mut extra, 1);
    put16(&mut extra, len16(8 * values.len()));
    for value in values {
        extra.extend_from_slice(&value.to_le_bytes());
    }
    extra
}

fn put16(out: &mut Vec<u8>, value: u16) {
    out.extend_from_slice(&value.to_le_bytes());
}

fn put32(out: &mut Vec<u8>, value: u32) {
    out.extend_from_slice(&value.to_le_bytes());
}

/// `data[range]`, when it is all there.
fn slice<'d>(data: &'d [u8], range: &std::ops::Range<u64>) -> Option<&'d [u8]> {
    let start = usize::try_from(range.start).ok()?;
    let end = usize::try_from(range.end).ok()?;
    data.get(start..end)
}
