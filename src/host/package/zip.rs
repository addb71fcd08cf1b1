//! Zip files (wheels, the outer file of a `.conda`, any `.zip`), read from their central
//! directory: the end-of-central-directory record (and ZIP64's), each central directory
//! entry, and each member's local header, every offset and size checked against the file.
//! Members stored plain (method 0) are slices of the file; deflated ones (method 8) are
//! inflated once, never past the size the central directory declares (a member that would is
//! a zip bomb, and damage). A central directory that lies (a member outside the file or
//! inside the directory, a local header that names another member or stores other sizes,
//! members that share bytes) is damage that stops the reading.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use object::endian::{LittleEndian as Le, U16, U32, U64};
use object::pod::{self, Pod};

use crate::error::{Error, Result};
use crate::host::package::{
    checked_name, gather, member_error, Budget, Budgeted, Member, Visit, HEAD,
};

/// The signatures of the records read.
const LOCAL_HEADER: u32 = 0x0403_4b50;
const CENTRAL_HEADER: u32 = 0x0201_4b50;
const END: u32 = 0x0605_4b50;
const END64_LOCATOR: u32 = 0x0706_4b50;
const END64: u32 = 0x0606_4b50;

/// The compression methods read: stored and deflated.
const STORED: u16 = 0;
const DEFLATED: u16 = 8;

/// The flag of an encrypted member.
const ENCRYPTED: u16 = 1;

/// The ZIP64 extended information extra field.
const ZIP64_EXTRA: u16 = 0x0001;

/// A value that says the real one is in the ZIP64 records.
const IN_ZIP64_32: u32 = 0xffff_ffff;
const IN_ZIP64_16: u16 = 0xffff;

#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct EndRecord {
    signature: U32<Le>,
    disk: U16<Le>,
    directory_disk: U16<Le>,
    entries_on_disk: U16<Le>,
    entries: U16<Le>,
    directory_size: U32<Le>,
    directory_offset: U32<Le>,
    comment_len: U16<Le>,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct End64Locator {
    signature: U32<Le>,
    disk: U32<Le>,
    end64_offset: U64<Le>,
    disks: U32<Le>,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct End64Record {
    signature: U32<Le>,
    record_size: U64<Le>,
    made_by: U16<Le>,
    needed: U16<Le>,
    disk: U32<Le>,
    directory_disk: U32<Le>,
    entries_on_disk: U64<Le>,
    entries: U64<Le>,
    directory_size: U64<Le>,
    directory_offset: U64<Le>,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct CentralHeader {
    signature: U32<Le>,
    made_by: U16<Le>,
    needed: U16<Le>,
    flags: U16<Le>,
    method: U16<Le>,
    time: U16<Le>,
    date: U16<Le>,
    crc: U32<Le>,
    compressed_size: U32<Le>,
    size: U32<Le>,
    name_len: U16<Le>,
    extra_len: U16<Le>,
    comment_len: U16<Le>,
    disk: U16<Le>,
    internal: U16<Le>,
    external: U32<Le>,
    local_offset: U32<Le>,
}

#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct LocalHeader {
    signature: U32<Le>,
    needed: U16<Le>,
    flags: U16<Le>,
    method: U16<Le>,
    time: U16<Le>,
    date: U16<Le>,
    crc: U32<Le>,
    compressed_size: U32<Le>,
    size: U32<Le>,
    name_len: U16<Le>,
    extra_len: U16<Le>,
}

// SAFETY: the structures hold byte arrays only (alignment 1, no padding), and every bit
// pattern is a valid value.
unsafe impl Pod for EndRecord {}
// SAFETY: as above.
unsafe impl Pod for End64Locator {}
// SAFETY: as above.
unsafe impl Pod for End64Record {}
// SAFETY: as above.
unsafe impl Pod for CentralHeader {}
// SAFETY: as above.
unsafe impl Pod for LocalHeader {}

/// Whether `data` starts as a zip does: a local header, or the end record of an empty zip.
pub fn is_zip(data: &[u8]) -> bool {
    data.starts_with(b"PK\x03\x04") || data.starts_with(b"PK\x05\x06")
}

/// One member as the central directory lists it.
#[derive(Debug, Clone)]
struct Entry<'a> {
    name: &'a [u8],
    /// Where its central directory entry is, for errors.
    at: u64,
    flags: u16,
    method: u16,
    /// The CRC-32 of its contents, as the central directory gives it.
    crc: u32,
    compressed_size: u64,
    size: u64,
    local_offset: u64,
    /// Its whole central directory entry (header, name, extra fields, comment) in the file.
    central: std::ops::Range<u64>,
}

/// The structure `T` at `offset` of `data`, or `None` when it does not fit.
fn record<T: Pod>(data: &[u8], offset: u64) -> Option<&T> {
    let start = usize::try_from(offset).ok()?;
    pod::from_bytes::<T>(data.get(start..)?)
        .ok()
        .map(|(t, _)| t)
}

/// `data[offset..offset + len]`, or `None` when it is not all in `data`.
fn bytes_at(data: &[u8], offset: u64, len: u64) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    let end = usize::try_from(offset.checked_add(len)?).ok()?;
    data.get(start..end)
}

/// Reads the zip `data` (at `path`), calling `visit` for each member that may hold device
/// code (see [`super::read`]).
pub fn read(
    path: &Path,
    data: &[u8],
    budget: &Budget,
    visit: &mut Visit<'_>,
) -> Result<Vec<Error>> {
    let (entries, _) = checked_entries(path, data)?;
    let mut problems = Vec::new();
    for entry in &entries {
        if entry.name.ends_with(b"/") && entry.size == 0 {
            continue;
        }
        if let Err(e) = checked_name(path, entry.name, entry.local_offset) {
            problems.push(e);
            continue;
        }
        match member(path, data, entry, budget, visit) {
            Ok(()) => {}
            Err(Damage::Member(e)) => problems.push(e),
            Err(Damage::Visit(e)) => return Err(e),
        }
    }
    Ok(problems)
}

/// The names of the zip `data`'s members (at `path`), folders and names that would leave the
/// package left out, in the central directory's order.
pub fn names<'d>(path: &Path, data: &'d [u8]) -> Result<Vec<&'d [u8]>> {
    let (entries, _) = checked_entries(path, data)?;
    Ok(entries
        .iter()
        .filter(|e| !e.name.ends_with(b"/"))
        .filter(|e| checked_name(path, e.name, e.local_offset).is_ok())
        .map(|e| e.name)
        .collect())
}

/// The central directory's entries of the zip `data` (at `path`), their offsets and sizes
/// checked against the file, and the central directory's offset.
fn checked_entries<'d>(path: &Path, data: &'d [u8]) -> Result<(Vec<Entry<'d>>, u64)> {
    let bad = |message: String| Error::file(path, message);
    let (directory_offset, directory_size, count) = directory(data).map_err(bad)?;
    let entries = entries(data, directory_offset, directory_size, count).map_err(bad)?;
    check_layout(data, &entries, directory_offset).map_err(bad)?;
    Ok((entries, directory_offset))
}

/// Where the central directory is: its offset, its size, and the number of entries declared.
fn directory(data: &[u8]) -> std::result::Result<(u64, u64, u64), String> {
    let len = data.len() as u64;
    let size = std::mem::size_of::<EndRecord>() as u64;
    // The end record is the last record: its comment runs to the end of the file.
    let earliest = len.saturating_sub(size + u64::from(u16::MAX));
    let mut at = len.checked_sub(size).ok_or_else(|| {
        format!("not a zip: {len} bytes, too few for an end of central directory record")
    })?;
    let end = loop {
        if let Some(end) = record::<EndRecord>(data, at) {
            let comment_end = at + size + u64::from(end.comment_len.get(Le));
            if end.signature.get(Le) == END && comment_end == len {
                break end;
            }
        }
        if at == earliest {
            return Err("no end of central directory record in the last 64 KiB".into());
        }
        at -= 1;
    };
    if end.disk.get(Le) != 0 || end.directory_disk.get(Le) != 0 {
        return Err(format!(
            "end of central directory record at offset {at:#x}: a zip split across disks"
        ));
    }
    let zip64 = end.entries.get(Le) == IN_ZIP64_16
        || end.directory_size.get(Le) == IN_ZIP64_32
        || end.directory_offset.get(Le) == IN_ZIP64_32;
    if zip64 {
        return directory64(data, at);
    }
    Ok((
        u64::from(end.directory_offset.get(Le)),
        u64::from(end.directory_size.get(Le)),
        u64::from(end.entries.get(Le)),
    ))
}

/// [`directory`] from the ZIP64 records, whose locator lies before the end record at `end_at`.
fn directory64(data: &[u8], end_at: u64) -> std::result::Result<(u64, u64, u64), String> {
    let locator_at = end_at.checked_sub(std::mem::size_of::<End64Locator>() as u64);
    let locator = locator_at
        .and_then(|at| record::<End64Locator>(data, at))
        .filter(|l| l.signature.get(Le) == END64_LOCATOR)
        .ok_or_else(|| {
            format!("end of central directory record at offset {end_at:#x} asks for ZIP64 records, and there is no ZIP64 locator before it")
        })?;
    let at = locator.end64_offset.get(Le);
    let end = record::<End64Record>(data, at)
        .filter(|e| e.signature.get(Le) == END64)
        .ok_or_else(|| {
            format!("the ZIP64 locator points at offset {at:#x}, where there is no ZIP64 end of central directory record")
        })?;
    if end.disk.get(Le) != 0 || end.directory_disk.get(Le) != 0 {
        return Err(format!(
            "ZIP64 end of central directory record at offset {at:#x}: a zip split across disks"
        ));
    }
    Ok((
        end.directory_offset.get(Le),
        end.directory_size.get(Le),
        end.entries.get(Le),
    ))
}

/// The entries of the central directory at `offset` (`size` bytes, `count` entries declared).
fn entries(
    data: &[u8],
    offset: u64,
    size: u64,
    count: u64,
) -> std::result::Result<Vec<Entry<'_>>, String> {
    let directory = bytes_at(data, offset, size).ok_or_else(|| {
        format!(
            "the central directory at offset {offset:#x} ({size} bytes) runs past the end of the file ({:#x})",
            data.len()
        )
    })?;
    let header = std::mem::size_of::<CentralHeader>() as u64;
    let mut entries = Vec::new();
    let mut at = 0u64;
    while at < size {
        let here = offset + at;
        let central = record::<CentralHeader>(directory, at)
            .filter(|c| c.signature.get(Le) == CENTRAL_HEADER)
            .ok_or_else(|| {
                format!("central directory entry {} at offset {here:#x}: no central directory header there", entries.len())
            })?;
        let name_len = u64::from(central.name_len.get(Le));
        let extra_len = u64::from(central.extra_len.get(Le));
        let comment_len = u64::from(central.comment_len.get(Le));
        let name = bytes_at(directory, at + header, name_len);
        let extra = bytes_at(directory, at + header + name_len, extra_len);
        let (Some(name), Some(extra)) = (name, extra) else {
            return Err(format!(
                "central directory entry at offset {here:#x}: its name and extra fields run past the directory's end"
            ));
        };
        let mut entry = with_zip64(central, name, here, extra)?;
        let len = header + name_len + extra_len + comment_len;
        entry.central = here..here + len;
        entries.push(entry);
        at += len;
    }
    if entries.len() as u64 != count {
        return Err(format!(
            "the central directory at offset {offset:#x} holds {} entries; the end record declares {count}",
            entries.len()
        ));
    }
    Ok(entries)
}

/// The entry `central` describes, its sizes and offset read from the ZIP64 extra field
/// when they say they are there.
fn with_zip64<'a>(
    central: &CentralHeader,
    name: &'a [u8],
    at: u64,
    mut extra: &[u8],
) -> std::result::Result<Entry<'a>, String> {
    let mut entry = Entry {
        name,
        at,
        flags: central.flags.get(Le),
        method: central.method.get(Le),
        crc: central.crc.get(Le),
        compressed_size: u64::from(central.compressed_size.get(Le)),
        size: u64::from(central.size.get(Le)),
        local_offset: u64::from(central.local_offset.get(Le)),
        central: at..at,
    };
    let wanted = [
        entry.size == u64::from(IN_ZIP64_32),
        entry.compressed_size == u64::from(IN_ZIP64_32),
        entry.local_offset == u64::from(IN_ZIP64_32),
    ];
    if !wanted.contains(&true) {
        return Ok(entry);
    }
    while let Some((head, rest)) = extra.split_first_chunk::<4>() {
        let id = u16::from_le_bytes([head[0], head[1]]);
        let len = usize::from(u16::from_le_bytes([head[2], head[3]]));
        let Some(field) = rest.get(..len) else { break };
        if id == ZIP64_EXTRA {
            let mut values = field
                .chunks_exact(8)
                .map(|c| c.first_chunk::<8>().map_or(0, |b| u64::from_le_bytes(*b)));
            let targets = [
                &mut entry.size,
                &mut entry.compressed_size,
                &mut entry.local_offset,
            ];
            for (target, want) in targets.into_iter().zip(wanted) {
                if want {
                    *target = values.next().ok_or_else(|| {
                        format!("central directory entry at offset {at:#x}: the ZIP64 extra field lacks a size or offset it must hold")
                    })?;
                }
            }
            return Ok(entry);
        }
        extra = rest.get(len..).unwrap_or_default();
    }
    Err(format!(
        "central directory entry at offset {at:#x}: sizes or offset in a ZIP64 extra field it does not have"
    ))
}

/// Checks that every member's local header and data lie in the file before the central
/// directory, and that no two members share bytes (overlapping members make a small zip
/// inflate to many times its size).
fn check_layout(
    data: &[u8],
    entries: &[Entry<'_>],
    directory_offset: u64,
) -> std::result::Result<(), String> {
    let mut ranges: Vec<(u64, u64, &Entry<'_>)> = Vec::with_capacity(entries.len());
    for entry in entries {
        let start = entry.local_offset;
        let end = data_range(data, entry)
            .map(|(at, len)| at + len)
            .map_err(|e| in_entry(entry, &e))?;
        if end > directory_offset {
            return Err(in_entry(
                entry,
                &format!("its data ends at {end:#x}, inside the central directory (at {directory_offset:#x})"),
            ));
        }
        ranges.push((start, end, entry));
    }
    ranges.sort_by_key(|&(start, _, _)| start);
    for pair in ranges.windows(2) {
        if let [(_, end, first), (start, _, second)] = pair {
            if start < end {
                return Err(format!(
                    "members '{}' and '{}' share bytes (at {start:#x}): not read",
                    crate::io::shown(OsStr::from_bytes(first.name)),
                    crate::io::shown(OsStr::from_bytes(second.name)),
                ));
            }
        }
    }
    Ok(())
}

/// `message` about `entry`, naming it and where its central directory entry is.
fn in_entry(entry: &Entry<'_>, message: &str) -> String {
    format!(
        "member '{}' (central directory entry at offset {:#x}): {message}",
        crate::io::shown(OsStr::from_bytes(entry.name)),
        entry.at
    )
}

/// Where `entry`'s data lies in `data` (offset, stored size), its local header checked
/// against the central directory.
fn data_range(data: &[u8], entry: &Entry<'_>) -> std::result::Result<(u64, u64), String> {
    let at = entry.local_offset;
    let local = record::<LocalHeader>(data, at)
        .filter(|l| l.signature.get(Le) == LOCAL_HEADER)
        .ok_or_else(|| {
            format!(
                "no local header at offset {at:#x} (the file is {:#x} bytes)",
                data.len()
            )
        })?;
    let header = std::mem::size_of::<LocalHeader>() as u64;
    let name_len = u64::from(local.name_len.get(Le));
    let extra_len = u64::from(local.extra_len.get(Le));
    let name = bytes_at(data, at + header, name_len).ok_or_else(|| {
        format!("the local header at offset {at:#x} runs past the end of the file")
    })?;
    if name != entry.name {
        return Err(format!(
            "the local header at offset {at:#x} names another member, '{}'",
            crate::io::shown(OsStr::from_bytes(name))
        ));
    }
    if local.method.get(Le) != entry.method {
        return Err(format!(
            "the local header at offset {at:#x} says another compression method"
        ));
    }
    // With a data descriptor (flag 3) or ZIP64, the local sizes may be zero or 0xffffffff.
    let local_sizes = (
        u64::from(local.compressed_size.get(Le)),
        u64::from(local.size.get(Le)),
    );
    let descriptor = local.flags.get(Le) & 0x8 != 0;
    let plain = local_sizes.0 != u64::from(IN_ZIP64_32) && local_sizes.1 != u64::from(IN_ZIP64_32);
    if !descriptor && plain && local_sizes != (entry.compressed_size, entry.size) {
        return Err(format!(
            "the local header at offset {at:#x} stores sizes {} and {}; the central directory {} and {}",
            local_sizes.0, local_sizes.1, entry.compressed_size, entry.size
        ));
    }
    let start = at + header + name_len + extra_len;
    if bytes_at(data, start, entry.compressed_size).is_none() {
        return Err(format!(
            "its {} bytes at offset {start:#x} run past the end of the file ({:#x}): truncated",
            entry.compressed_size,
            data.len()
        ));
    }
    Ok((start, entry.compressed_size))
}

/// Why a member was not read: damage of its own, or an error of the visitor's.
enum Damage {
    Member(Error),
    Visit(Error),
}

/// Reads `entry` of the zip `data` and hands it to `visit` when its first bytes say it may
/// hold device code.
fn member(
    path: &Path,
    data: &[u8],
    entry: &Entry<'_>,
    budget: &Budget,
    visit: &mut Visit<'_>,
) -> std::result::Result<(), Damage> {
    let damage = |message: String| Damage::Member(member_error(path, entry.name, message));
    // Checked by `check_layout`.
    let (start, len) = data_range(data, entry).map_err(damage)?;
    let stored = bytes_at(data, start, len).unwrap_or_default();
    if entry.flags & ENCRYPTED != 0 {
        return Err(damage(format!(
            "member at offset {:#x} is encrypted: not read",
            entry.local_offset
        )));
    }
    match entry.method {
        STORED => {
            if len != entry.size {
                return Err(damage(format!(
                    "stored member at offset {start:#x} holds {len} bytes; its size says {}",
                    entry.size
                )));
            }
            let head = stored.get(..HEAD).unwrap_or(stored);
            if !super::may_hold_device_code(head) {
                return Ok(());
            }
            crc_checked(entry, start, stored).map_err(damage)?;
            visit(&Member {
                name: entry.name,
                bytes: stored,
            })
            .map_err(Damage::Visit)
        }
        DEFLATED => inflated(path, stored, start, entry, budget, visit),
        method => {
            tracing::debug!(method, "zip member in a compression method not read");
            Err(damage(format!(
                "member at offset {:#x} is compressed with method {method}, which is not read (only stored and deflated)",
                entry.local_offset
            )))
        }
    }
}

/// Inflates the deflated member `entry` (its stream `stored`, at `start` in the file) as far
/// as its first bytes, and whole when they say it may hold device code, then hands it over.
fn inflated(
    path: &Path,
    stored: &[u8],
    start: u64,
    entry: &Entry<'_>,
    budget: &Budget,
    visit: &mut Visit<'_>,
) -> std::result::Result<(), Damage> {
    let damage = |message: String| Damage::Member(member_error(path, entry.name, message));
    let failed = |e: std::io::Error| damage(format!("deflated stream at offset {start:#x}: {e}"));
    let mut stream = Budgeted {
        read: flate2::read::DeflateDecoder::new(stored),
        budget,
    };
    let mut head = vec![0u8; HEAD];
    let got = super::fill(&mut stream, &mut head).map_err(failed)?;
    head.truncate(got);
    if !super::may_hold_device_code(&head) {
        return Ok(());
    }
    if got as u64 > entry.size {
        return Err(damage(format!(
            "deflated member at offset {start:#x} inflates past the {} bytes its size says: not read",
            entry.size
        )));
    }
    // Never more than the size declared, and one byte over it is a bomb.
    let mut bounded = (&mut stream).take(entry.size.saturating_sub(got as u64).saturating_add(1));
    let bytes = match gather(&mut bounded, &head, entry.size) {
        Ok(bytes) => bytes,
        Err(None) => {
            return Err(damage(format!(
                "deflated member at offset {start:#x} inflates past the {} bytes its size says: not read",
                entry.size
            )))
        }
        Err(Some(e)) => return Err(failed(e)),
    };
    if bytes.len() != entry.size {
        return Err(damage(format!(
            "deflated member at offset {start:#x} inflates to {} bytes; its size says {}: truncated",
            bytes.len(),
            entry.size
        )));
    }
    crc_checked(entry, start, bytes.bytes()).map_err(damage)?;
    visit(&Member {
        name: entry.name,
        bytes: bytes.bytes(),
    })
    .map_err(Damage::Visit)
}

/// Refuses the contents `bytes` of the member `entry` (its data at `start`) when their
/// CRC-32 is not the one the central directory gives: a member damaged in the file would
/// otherwise be listed, extracted or rewritten as if whole.
fn crc_checked(entry: &Entry<'_>, start: u64, bytes: &[u8]) -> std::result::Result<(), String> {
    let mut crc = flate2::Crc::new();
    crc.update(bytes);
    if crc.sum() == entry.crc {
        return Ok(());
    }
    Err(format!(
        "member at offset {start:#x}: its bytes' CRC-32 is {:#010x}; the central directory says {:#010x}",
        crc.sum(),
        entry.crc
    ))
}

/// One member of a zip as it lies in the file, for a writer that copies it byte for byte or
/// writes it anew.
#[derive(Debug, Clone)]
pub struct Stored<'a> {
    /// Its name.
    pub name: &'a [u8],
    /// Its compression method: stored (0) or deflated (8).
    pub method: u16,
    /// Its size, as the central directory gives it.
    pub size: u64,
    /// Its bytes in the file: local header, data, data descriptor, up to the next member
    /// (or the central directory).
    pub span: std::ops::Range<u64>,
    /// Its whole central directory entry.
    pub central: std::ops::Range<u64>,
    entry: Entry<'a>,
}

/// A zip as it lies in the file: its members in file order, and the comment of its end record.
#[derive(Debug, Clone)]
pub struct Layout<'a> {
    /// The members, by where they lie in the file.
    pub members: Vec<Stored<'a>>,
    /// The members in central directory order, as indices into `members`.
    pub order: Vec<usize>,
    /// The zip's comment.
    pub comment: &'a [u8],
}

/// The layout of the zip `data` (at `path`): every offset and size checked as [`read`] checks
/// them, and every member's name as a member's path. An error names the package (and the
/// member).
pub fn layout<'a>(path: &Path, data: &'a [u8]) -> Result<Layout<'a>> {
    let (entries, directory_offset) = checked_entries(path, data)?;
    let mut by_offset: Vec<usize> = (0..entries.len()).collect();
    by_offset.sort_by_key(|&i| entries.get(i).map_or(0, |e| e.local_offset));
    let mut members = Vec::with_capacity(entries.len());
    let mut order = vec![0; entries.len()];
    for (k, &i) in by_offset.iter().enumerate() {
        let Some(entry) = entries.get(i) else {
            continue;
        };
        checked_name(path, entry.name, entry.local_offset)?;
        let end = by_offset
            .get(k + 1)
            .and_then(|&n| entries.get(n))
            .map_or(directory_offset, |next| next.local_offset);
        if bytes_at(
            data,
            entry.central.start,
            entry.central.end - entry.central.start,
        )
        .is_none()
        {
            return Err(member_error(
                path,
                entry.name,
                format!(
                    "its central directory entry at offset {:#x} runs past the end of the file",
                    entry.at
                ),
            ));
        }
        if let Some(slot) = order.get_mut(i) {
            *slot = k;
        }
        members.push(Stored {
            name: entry.name,
            method: entry.method,
            size: entry.size,
            span: entry.local_offset..end,
            central: entry.central.clone(),
            entry: entry.clone(),
        });
    }
    Ok(Layout {
        members,
        order,
        comment: end_comment(data),
    })
}

/// The comment of the end record of `data`, a zip whose end record was found.
fn end_comment(data: &[u8]) -> &[u8] {
    let size = std::mem::size_of::<EndRecord>();
    let earliest = data.len().saturating_sub(size + usize::from(u16::MAX));
    let mut at = data.len().saturating_sub(size);
    loop {
        if let Some(end) = record::<EndRecord>(data, at as u64) {
            let len = usize::from(end.comment_len.get(Le));
            if end.signature.get(Le) == END && at + size + len == data.len() {
                return data.get(at + size..).unwrap_or_default();
            }
        }
        if at <= earliest {
            return &[];
        }
        at -= 1;
    }
}

/// Hands `visit` the member `stored` of the zip `data` (at `path`) when its first bytes say it
/// may hold device code: a stored member as a slice of `data`, a deflated one inflated (into
/// memory, or a spill file when large), never past its size. Damage is an error naming the
/// package and the member.
pub fn visit_member(
    path: &Path,
    data: &[u8],
    stored: &Stored<'_>,
    budget: &Budget,
    visit: &mut Visit<'_>,
) -> Result<()> {
    match member(path, data, &stored.entry, budget, visit) {
        Ok(()) => Ok(()),
        Err(Damage::Member(e) | Damage::Visit(e)) => Err(e),
    }
}

/// The whole of the member `stored` of the zip `data` (at `path`), whatever its first bytes:
/// for a small member read as text (a wheel's `RECORD`). More than `most` bytes, or damage, is
/// an error naming the package and the member.
pub fn whole_member<'d>(
    path: &Path,
    data: &'d [u8],
    stored: &Stored<'_>,
    most: u64,
) -> Result<std::borrow::Cow<'d, [u8]>> {
    let entry = &stored.entry;
    let damage = |message: String| member_error(path, entry.name, message);
    let (start, len) = data_range(data, entry).map_err(damage)?;
    let raw = bytes_at(data, start, len).unwrap_or_default();
    if entry.size > most {
        return Err(damage(format!(
            "{} bytes: more than the {most} read",
            entry.size
        )));
    }
    // Stored, the member is a slice of the package, borrowed, not copied.
    let bytes = match entry.method {
        STORED => std::borrow::Cow::Borrowed(raw),
        DEFLATED => {
            let mut out = Vec::new();
            let mut stream = flate2::read::DeflateDecoder::new(raw).take(entry.size.saturating_add(1));
            stream
                .read_to_end(&mut out)
                .map_err(|e| damage(format!("deflated stream at offset {start:#x}: {e}")))?;
            std::borrow::Cow::Owned(out)
        }
        method => {
            return Err(damage(format!(
                "member at offset {:#x} is compressed with method {method}, which is not read (only stored and deflated)",
                entry.local_offset
            )))
        }
    };
    if bytes.len() as u64 != entry.size {
        return Err(damage(format!(
            "member at offset {start:#x} holds {} bytes; its size says {}",
            bytes.len(),
            entry.size
        )));
    }
    crc_checked(entry, start, &bytes).map_err(damage)?;
    Ok(bytes)
}

/// The fields of a local header or central directory entry a writer changes for a member
/// written anew.
#[derive(Debug, Clone, Copy)]
pub struct NewSizes {
    /// The CRC-32 of its bytes.
    pub crc: u32,
    /// Its size as stored.
    pub compressed_size: u64,
    /// Its size.
    pub size: u64,
}

/// `extra` without its ZIP64 field, then one holding `values` (when there are any).
fn extra_with_zip64(extra: &[u8], values: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(extra.len() + 4 + 8 * values.len());
    let mut rest = extra;
    while let Some((head, tail)) = rest.split_first_chunk::<4>() {
        let id = u16::from_le_bytes([head[0], head[1]]);
        let len = usize::from(u16::from_le_bytes([head[2], head[3]]));
        let Some(field) = tail.get(..len) else {
            // A field that runs past the end is kept as it was.
            out.extend_from_slice(rest);
            rest = &[];
            break;
        };
        if id != ZIP64_EXTRA {
            out.extend_from_slice(head);
            out.extend_from_slice(field);
        }
        rest = tail.get(len..).unwrap_or_default();
    }
    out.extend_from_slice(rest);
    if !values.is_empty() {
        out.extend_from_slice(&ZIP64_EXTRA.to_le_bytes());
        // At most three values: 24 bytes.
        let len = u16::try_from(8 * values.len()).unwrap_or(24);
        out.extend_from_slice(&len.to_le_bytes());
        for value in values {
            out.extend_from_slice(&value.to_le_bytes());
        }
    }
    out
}

/// A 32-bit field for `value`, or the mark that says it is in the ZIP64 field (which then
/// gets it).
fn field32(value: u64, zip64: &mut Vec<u64>) -> u32 {
    match u32::try_from(value) {
        Ok(v) if v != IN_ZIP64_32 => v,
        _ => {
            zip64.push(value);
            IN_ZIP64_32
        }
    }
}

/// The version needed to extract a member with ZIP64 fields.
const ZIP64_VERSION: u16 = 45;

/// The local header of `stored` (in `data`) written anew for its new `sizes`: no data
/// descriptor, the sizes in a ZIP64 field when they need one; name, times, flags and other
/// extra fields kept.
pub fn local_header(
    data: &[u8],
    stored: &Stored<'_>,
    sizes: NewSizes,
) -> std::result::Result<Vec<u8>, String> {
    let at = stored.span.start;
    let local = record::<LocalHeader>(data, at).ok_or("no local header")?;
    let header = std::mem::size_of::<LocalHeader>() as u64;
    let name_len = u64::from(local.name_len.get(Le));
    let extra = bytes_at(
        data,
        at + header + name_len,
        u64::from(local.extra_len.get(Le)),
    )
    .ok_or("the local header runs past the end of the file")?;
    let mut zip64 = Vec::new();
    // The ZIP64 field of a local header holds both sizes, or none.
    let fits = |v: u64| u32::try_from(v).ok().filter(|&v| v != IN_ZIP64_32);
    let (size, compressed) = match (fits(sizes.size), fits(sizes.compressed_size)) {
        (Some(size), Some(compressed)) => (size, compressed),
        _ => {
            zip64 = vec![sizes.size, sizes.compressed_size];
            (IN_ZIP64_32, IN_ZIP64_32)
        }
    };
    let extra = extra_with_zip64(extra, &zip64);
    let mut new = *local;
    new.name_len = U16::new(
        Le,
        u16::try_from(stored.name.len()).map_err(|_| "name too long")?,
    );
    new.flags = U16::new(Le, local.flags.get(Le) & !0x8);
    new.crc = U32::new(Le, sizes.crc);
    new.size = U32::new(Le, size);
    new.compressed_size = U32::new(Le, compressed);
    new.extra_len = U16::new(
        Le,
        u16::try_from(extra.len()).map_err(|_| "extra fields too long")?,
    );
    if !zip64.is_empty() {
        new.needed = U16::new(Le, local.needed.get(Le).max(ZIP64_VERSION));
    }
    let mut out = pod::bytes_of(&new).to_vec();
    out.extend_from_slice(stored.name);
    out.extend_from_slice(&extra);
    Ok(out)
}

/// The sizes and CRC-32 of `stored` as they are, for a member copied under a new name.
pub fn sizes_of(stored: &Stored<'_>) -> NewSizes {
    NewSizes {
        crc: stored.entry.crc,
        compressed_size: stored.entry.compressed_size,
        size: stored.entry.size,
    }
}

/// The bytes of `stored` as stored (after its local header, before any data descriptor).
pub fn data_of<'d>(data: &'d [u8], stored: &Stored<'_>) -> Option<&'d [u8]> {
    let at = stored.span.start;
    let local = record::<LocalHeader>(data, at)?;
    let start = at
        .checked_add(std::mem::size_of::<LocalHeader>() as u64)?
        .checked_add(u64::from(local.name_len.get(Le)))?
        .checked_add(u64::from(local.extra_len.get(Le)))?;
    bytes_at(data, start, stored.entry.compressed_size)
}

/// The central directory entry of `stored` (in `data`) for its member now at `offset`, with
/// its new `sizes` when it was written anew; values that do not fit in 32 bits go to a ZIP64
/// field. Everything else (name, times, modes, other extra fields, comment) is kept.
pub fn central_entry(
    data: &[u8],
    stored: &Stored<'_>,
    offset: u64,
    sizes: Option<NewSizes>,
) -> std::result::Result<Vec<u8>, String> {
    let at = stored.central.start;
    let central = record::<CentralHeader>(data, at).ok_or("no central directory entry")?;
    let header = std::mem::size_of::<CentralHeader>() as u64;
    let name_len = u64::from(central.name_len.get(Le));
    let extra_len = u64::from(central.extra_len.get(Le));
    let comment_len = u64::from(central.comment_len.get(Le));
    let extra = bytes_at(data, at + header + name_len, extra_len);
    let comment = bytes_at(data, at + header + name_len + extra_len, comment_len);
    let (Some(extra), Some(comment)) = (extra, comment) else {
        return Err("the central directory entry runs past the end of the file".into());
    };
    let entry = &stored.entry;
    let (crc, size, compressed) = match sizes {
        Some(s) => (s.crc, s.size, s.compressed_size),
        None => (central.crc.get(Le), entry.size, entry.compressed_size),
    };
    let mut zip64 = Vec::new();
    let mut new = *central;
    new.name_len = U16::new(
        Le,
        u16::try_from(stored.name.len()).map_err(|_| "name too long")?,
    );
    // In the order the ZIP64 field holds them: size, compressed size, offset.
    new.size = U32::new(Le, field32(size, &mut zip64));
    new.compressed_size = U32::new(Le, field32(compressed, &mut zip64));
    new.local_offset = U32::new(Le, field32(offset, &mut zip64));
    new.crc = U32::new(Le, crc);
    if sizes.is_some() {
        new.flags = U16::new(Le, central.flags.get(Le) & !0x8);
    }
    if !zip64.is_empty() {
        new.needed = U16::new(Le, central.needed.get(Le).max(ZIP64_VERSION));
    }
    let extra = extra_with_zip64(extra, &zip64);
    new.extra_len = U16::new(
        Le,
        u16::try_from(extra.len()).map_err(|_| "extra fields too long")?,
    );
    let mut out = pod::bytes_of(&new).to_vec();
    out.extend_from_slice(stored.name);
    out.extend_from_slice(&extra);
    out.extend_from_slice(comment);
    Ok(out)
}

/// The records that end a zip whose central directory of `count` entries lies at `offset`
/// (`size` bytes): the ZIP64 end record and its locator when a value does not fit the end
/// record, then the end record with `comment`.
pub fn end_records(count: u64, offset: u64, size: u64, comment: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let zip64 = count >= u64::from(IN_ZIP64_16)
        || offset >= u64::from(IN_ZIP64_32)
        || size >= u64::from(IN_ZIP64_32);
    if zip64 {
        let end64_at = offset + size;
        let end64 = End64Record {
            signature: U32::new(Le, END64),
            record_size: U64::new(Le, (std::mem::size_of::<End64Record>() - 12) as u64),
            made_by: U16::new(Le, ZIP64_VERSION),
            needed: U16::new(Le, ZIP64_VERSION),
            disk: U32::new(Le, 0),
            directory_disk: U32::new(Le, 0),
            entries_on_disk: U64::new(Le, count),
            entries: U64::new(Le, count),
            directory_size: U64::new(Le, size),
            directory_offset: U64::new(Le, offset),
        };
        out.extend_from_slice(pod::bytes_of(&end64));
        let locator = End64Locator {
            signature: U32::new(Le, END64_LOCATOR),
            disk: U32::new(Le, 0),
            end64_offset: U64::new(Le, end64_at),
            disks: U32::new(Le, 1),
        };
        out.extend_from_slice(pod::bytes_of(&locator));
    }
    let count16 = u16::try_from(count)
        .ok()
        .filter(|&c| c != IN_ZIP64_16)
        .unwrap_or(IN_ZIP64_16);
    let comment = comment.get(..usize::from(u16::MAX)).unwrap_or(comment);
    let end = EndRecord {
        signature: U32::new(Le, END),
        disk: U16::new(Le, 0),
        directory_disk: U16::new(Le, 0),
        entries_on_disk: U16::new(Le, count16),
        entries: U16::new(Le, count16),
        directory_size: U32::new(Le, u32::try_from(size).unwrap_or(IN_ZIP64_32)),
        directory_offset: U32::new(Le, u32::try_from(offset).unwrap_or(IN_ZIP64_32)),
        comment_len: U16::new(Le, u16::try_from(comment.len()).unwrap_or(0)),
    };
    out.extend_from_slice(pod::bytes_of(&end));
    out.extend_from_slice(comment);
    out
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;

    /// A zip of `members` stored plain, as (name, bytes), with the central directory's
    /// entries pointing where `offsets` says (each member's own local header by default).
    fn zip(members: &[(&[u8], &[u8])], offsets: Option<&[u32]>) -> Vec<u8> {
        let mut out = Vec::new();
        let mut central = Vec::new();
        for (i, (name, data)) in members.iter().enumerate() {
            let at = out.len() as u32;
            let mut crc = flate2::Crc::new();
            crc.update(data);
            let crc = crc.sum().to_le_bytes();
            out.extend_from_slice(&LOCAL_HEADER.to_le_bytes());
            out.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            out.extend_from_slice(&crc);
            out.extend_from_slice(&(data.len() as u32).to_le_bytes());
            out.extend_from_slice(&(data.len() as u32).to_le_bytes());
            out.extend_from_slice(&(name.len() as u16).to_le_bytes());
            out.extend_from_slice(&[0, 0]);
            out.extend_from_slice(name);
            out.extend_from_slice(data);
            let at = offsets.map_or(at, |o| o[i]);
            central.extend_from_slice(&CENTRAL_HEADER.to_le_bytes());
            central.extend_from_slice(&[20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            central.extend_from_slice(&crc);
            central.extend_from_slice(&(data.len() as u32).to_le_bytes());
            central.extend_from_slice(&(data.len() as u32).to_le_bytes());
            central.extend_from_slice(&(name.len() as u16).to_le_bytes());
            central.extend_from_slice(&[0; 12]);
            central.extend_from_slice(&at.to_le_bytes());
            central.extend_from_slice(name);
        }
        let directory = out.len() as u32;
        out.extend_from_slice(&central);
        out.extend_from_slice(&END.to_le_bytes());
        out.extend_from_slice(&[0, 0, 0, 0]);
        out.extend_from_slice(&(members.len() as u16).to_le_bytes());
        out.extend_from_slice(&(members.len() as u16).to_le_bytes());
        out.extend_from_slice(&(central.len() as u32).to_le_bytes());
        out.extend_from_slice(&directory.to_le_bytes());
        out.extend_from_slice(&[0, 0]);
        out
    }

    /// The names of the members `read` hands over, or its error.
    fn names(data: &[u8]) -> std::result::Result<Vec<Vec<u8>>, String> {
        let mut seen = Vec::new();
        let budget = Budget::new(u64::MAX);
        read(Path::new("p.zip"), data, &budget, &mut |m| {
            seen.push(m.name.to_vec());
            Ok(())
        })
        .map_err(|e| e.to_string())?;
        Ok(seen)
    }

    #[test]
    fn stored_members_that_may_hold_device_code_are_handed_over() {
        let data = zip(
            &[(b"a.so", b"\x7fELF...."), (b"b.py", b"import os\n")],
            None,
        );
        assert_eq!(names(&data).unwrap(), [b"a.so".to_vec()]);
    }

    #[test]
    fn a_local_header_naming_another_member_is_refused() {
        let mut data = zip(&[(b"a.so", b"\x7fELF....")], None);
        data[30] = b'x';
        let e = names(&data).unwrap_err();
        assert!(e.contains("names another member, 'x.so'"), "{e}");
    }

    #[test]
    fn members_sharing_bytes_are_refused() {
        let data = zip(
            &[(b"a.so", b"\x7fELF"), (b"a.so", b"\x7fELF")],
            Some(&[0, 0]),
        );
        let e = names(&data).unwrap_err();
        assert!(e.contains("share bytes"), "{e}");
    }

    #[test]
    fn an_entry_count_that_is_not_the_directory_s_is_refused() {
        let mut data = zip(&[(b"a.so", b"\x7fELF")], None);
        let end = data.len() - 22;
        data[end + 10] = 7;
        let e = names(&data).unwrap_err();
        assert!(e.contains("the end record declares 7"), "{e}");
    }

    #[test]
    fn a_member_written_anew_reads_back_and_the_others_stay() {
        let data = zip(
            &[(b"a.so", b"\x7fELF...."), (b"b.py", b"import os\n")],
            None,
        );
        let layout = layout(Path::new("p.zip"), &data).unwrap();
        let new: &[u8] = b"\x7fELF.";
        let mut crc = flate2::Crc::new();
        crc.update(new);
        let sizes = NewSizes {
            crc: crc.sum(),
            compressed_size: new.len() as u64,
            size: new.len() as u64,
        };
        let mut out = local_header(&data, &layout.members[0], sizes).unwrap();
        out.extend_from_slice(new);
        let second = out.len() as u64;
        let span = &layout.members[1].span;
        out.extend_from_slice(&data[span.start as usize..span.end as usize]);
        let directory = out.len() as u64;
        out.extend(central_entry(&data, &layout.members[0], 0, Some(sizes)).unwrap());
        out.extend(central_entry(&data, &layout.members[1], second, None).unwrap());
        let size = out.len() as u64 - directory;
        out.extend(end_records(2, directory, size, b"hi"));
        let mut seen = Vec::new();
        let budget = Budget::new(u64::MAX);
        let problems = read(Path::new("q.zip"), &out, &budget, &mut |m| {
            seen.push((m.name.to_vec(), m.bytes.to_vec()));
            Ok(())
        })
        .unwrap();
        assert!(problems.is_empty());
        assert_eq!(seen, [(b"a.so".to_vec(), new.to_vec())]);
        assert_eq!(end_comment(&out), b"hi");
        // Sizes past 32 bits go to a ZIP64 field, which the reader takes.
        let big = NewSizes {
            crc: 0,
            compressed_size: 5 << 30,
            size: 6 << 30,
        };
        let header = local_header(&data, &layout.members[0], big).unwrap();
        assert_eq!(&header[18..26], &[0xff; 8]);
        assert_eq!(&header[34..38], &[1, 0, 16, 0]);
        let entry = central_entry(&data, &layout.members[0], 0, Some(big)).unwrap();
        let central = record::<CentralHeader>(&entry, 0).unwrap();
        let (name, extra) = (&entry[46..50], &entry[50..]);
        let read = with_zip64(central, name, 0, extra).unwrap();
        assert_eq!(
            (read.size, read.compressed_size, read.local_offset),
            (6 << 30, 5 << 30, 0)
        );
    }
}
