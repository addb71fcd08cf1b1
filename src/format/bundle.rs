//! Binary bundles: the `__CLANG_OFFLOAD_BUNDLE__` header and its entries.
//!
//! Layout (all integers little-endian u64): the 24-byte magic, the entry count, one record per
//! entry (payload offset from the start of the bundle, payload size, ID length, ID bytes with
//! no terminator), then the payloads at their offsets with zero bytes between. The writer
//! places payloads in record order, each at the next multiple of the bundle alignment, and
//! ends the file at the end of the last payload, as LLVM 19 does.
//!
//! # Example
//!
//! Write a bundle of a host entry and one code object, then read it back.
//!
//! ```
//! use offload::format::bundle::{self, Bundle};
//!
//! let entries: [(&str, &[u8]); 2] = [
//!     ("host-x86_64-unknown-linux-gnu-", b""),
//!     ("hipv4-amdgcn-amd-amdhsa--gfx90a", b"code for gfx90a"),
//! ];
//! let bytes = bundle::to_vec(&entries, 4096);
//! assert!(bundle::is_bundle(&bytes));
//!
//! let read = Bundle::parse(&bytes).unwrap().expect("a bundle");
//! let ids: Vec<&str> = read.entries().iter().map(|entry| entry.id).collect();
//! assert_eq!(ids, ["host-x86_64-unknown-linux-gnu-", "hipv4-amdgcn-amd-amdhsa--gfx90a"]);
//! assert_eq!(read.entries()[1].data, b"code for gfx90a");
//! // The code object starts on the 4096-byte boundary asked for.
//! assert_eq!(read.entries()[1].offset, 4096);
//! assert_eq!(read.size(), bytes.len() as u64);
//! ```

use crate::format::error::{Error, ErrorKind, Result};
use crate::format::inflate;
pub use crate::llvm::adt::string_map::Probing;
use crate::llvm::adt::string_map::StringMap;
use object::endian::{LittleEndian as Le, U64};
use object::pod::{self, Pod};
use std::io::{self, Write};
use std::mem::size_of;

/// The magic string that starts a binary bundle (and marks text bundle entries).
pub const MAGIC: &[u8; 24] = b"__CLANG_OFFLOAD_BUNDLE__";

/// An entry record before its ID bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct RecordPrefix {
    /// Offset of the payload from the start of the bundle.
    offset: U64<Le>,
    /// Size of the payload.
    size: U64<Le>,
    /// Length of the ID that follows.
    id_len: U64<Le>,
}

// SAFETY: the record holds byte arrays only (alignment 1, no padding), and every bit pattern
// is a valid value.
unsafe impl Pod for RecordPrefix {}

/// The fields of [`RecordPrefix`], with their offsets in it, in the order they are checked.
const RECORD_FIELDS: [(u64, &str); 3] = [
    (0, "bundle entry offset"),
    (8, "bundle entry size"),
    (16, "bundle entry ID length"),
];

/// Bytes of an entry record before its ID: offset, size and ID length.
const RECORD_FIXED: u64 = size_of::<RecordPrefix>() as u64;

/// One entry of a binary bundle, borrowing the bundle's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BundleEntry<'a> {
    /// Position of the entry's record in the header, from 0.
    pub index: usize,
    /// The bundle entry ID as stored.
    pub id: &'a str,
    /// Offset of the payload from the start of the bundle.
    pub offset: u64,
    /// The payload.
    pub data: &'a [u8],
}

/// A parsed binary bundle.
#[derive(Debug, Clone)]
pub struct Bundle<'a> {
    entries: Vec<BundleEntry<'a>>,
    header_size: u64,
    size: u64,
}

/// Whether `data` starts with the bundle magic.
pub fn is_bundle(data: &[u8]) -> bool {
    data.starts_with(MAGIC)
}

/// `data[start..end]`: `None` when `data` stops before `end`.
fn slice(data: &[u8], start: u64, end: u64) -> Option<&[u8]> {
    data.get(usize::try_from(start).ok()?..usize::try_from(end).ok()?)
}

/// Checks that a bundle `len` bytes long holds `needed` bytes of `what` at `at`.
fn check_room(len: u64, at: u64, needed: u64, what: &'static str) -> Result<u64> {
    at.checked_add(needed)
        .filter(|end| *end <= len)
        .ok_or_else(|| {
            Error::new(
                at,
                ErrorKind::Truncated {
                    what,
                    needed,
                    available: len.saturating_sub(at),
                },
            )
        })
}

/// The `T` at `at` of a bundle `len` bytes long of which `data` holds the first bytes: an
/// error when the bundle is too short for it, `None` when `data` is.
fn read<'d, T: Pod>(
    data: &'d [u8],
    len: u64,
    at: u64,
    what: &'static str,
) -> Result<Option<&'d T>> {
    let end = check_room(len, at, size_of::<T>() as u64, what)?;
    Ok(slice(data, at, end)
        .and_then(|bytes| pod::from_bytes::<T>(bytes).ok().map(|(value, _)| value)))
}

/// An entry record of a bundle header, checked.
struct Record<'a> {
    id: &'a str,
    offset: u64,
    /// End of the payload.
    end: u64,
}

/// What the header holds next.
enum Step<'a> {
    Record(Record<'a>),
    /// The header is over.
    End,
    /// The bytes so far stop inside the header.
    NeedMore,
}

/// Reads the records of a bundle header one by one, from its first bytes as they arrive: every
/// check is made against the bundle's whole length, so that the first bytes alone tell the
/// error that the whole bundle gives. A step that needs bytes not there yet changes nothing.
#[derive(Debug)]
struct Records {
    /// Length of the data the bundle starts.
    len: u64,
    /// Where the next record starts.
    at: u64,
    /// Records not read yet; `None` before the count is read.
    left: Option<u64>,
    index: u64,
}

impl Records {
    fn new(len: u64) -> Records {
        Records {
            len,
            at: MAGIC.len() as u64,
            left: None,
            index: 0,
        }
    }

    /// The next record of the header in `data`, its first bytes (the magic checked).
    fn next<'d>(&mut self, data: &'d [u8]) -> Result<Step<'d>> {
        let len = self.len;
        let left = match self.left {
            Some(left) => left,
            None => {
                let Some(count) = read::<U64<Le>>(data, len, self.at, "bundle entry count")? else {
                    return Ok(Step::NeedMore);
                };
                let count = count.get(Le);
                let at = self.at + 8;
                if count > (len - at) / RECORD_FIXED {
                    return Err(Error::new(self.at, ErrorKind::TooManyEntries { count }));
                }
                self.at = at;
                self.left = Some(count);
                count
            }
        };
        if left == 0 {
            return Ok(Step::End);
        }
        let (record, index) = (self.at, self.index);
        // Each field is checked on its own, so that a record cut short names the first field
        // that does not fit.
        for (field, what) in RECORD_FIELDS {
            check_room(len, record + field, 8, what)?;
        }
        let Some(prefix) = read::<RecordPrefix>(data, len, record, "bundle entry offset")? else {
            return Ok(Step::NeedMore);
        };
        let (offset, size, id_len) = (
            prefix.offset.get(Le),
            prefix.size.get(Le),
            prefix.id_len.get(Le),
        );
        let at = record + RECORD_FIXED;
        let id_end = check_room(len, at, id_len, "bundle entry ID")?;
        let Some(id_bytes) = slice(data, at, id_end) else {
            return Ok(Step::NeedMore);
        };
        let id = std::str::from_utf8(id_bytes)
            .map_err(|_| Error::new(at, ErrorKind::EntryIdNotUtf8 { index }))?;
        if offset == 0 {
            return Err(Error::new(record, ErrorKind::EntryAtZero { index }));
        }
        let end = offset
            .checked_add(size)
            .filter(|end| *end <= len)
            .ok_or_else(|| {
                Error::new(
                    record,
                    ErrorKind::EntryOutOfBounds {
                        index,
                        offset,
                        size,
                        len,
                    },
                )
            })?;
        self.at = id_end;
        self.left = Some(left - 1);
        self.index += 1;
        Ok(Step::Record(Record { id, offset, end }))
    }
}

/// Where a bundle ends, told from its first bytes as they arrive (a stream being inflated), so
/// that whatever follows the bundle need not be kept.
#[derive(Debug)]
pub struct BundleExtent {
    records: Records,
    end: u64,
    entries: Vec<EntryRecord>,
}

/// An entry as its header record names it, without its payload: what the first bytes of a
/// bundle tell of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryRecord {
    /// The bundle entry ID.
    pub id: String,
    /// Offset of the payload from the start of the bundle.
    pub offset: u64,
    /// Size of the payload.
    pub size: u64,
}

/// What the first bytes of some data tell of the bundle that starts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent {
    /// They stop inside the magic or the header: more are needed.
    Unknown,
    /// The data does not start with a bundle.
    NotABundle,
    /// The bundle ends here: the end of its header or of its furthest payload, whichever is
    /// further (what [`Bundle::size`] gives).
    Ends(u64),
}

impl BundleExtent {
    /// For a bundle at the start of `len` bytes of data.
    pub fn new(len: u64) -> BundleExtent {
        BundleExtent {
            records: Records::new(len),
            end: 0,
            entries: Vec::new(),
        }
    }

    /// The records read so far, in header order: all of them once [`BundleExtent::advance`]
    /// says where the bundle ends.
    pub fn entries(&self) -> &[EntryRecord] {
        &self.entries
    }

    /// Reads what `prefix`, the first bytes of the data (more of them at each call), holds of
    /// the header. A damaged header is the error [`Bundle::parse`] gives for the whole data.
    pub fn advance(&mut self, prefix: &[u8]) -> Result<Extent> {
        if prefix.len() < MAGIC.len() {
            return Ok(if MAGIC.starts_with(prefix) {
                Extent::Unknown
            } else {
                Extent::NotABundle
            });
        }
        if !is_bundle(prefix) {
            return Ok(Extent::NotABundle);
        }
        loop {
            match self.records.next(prefix)? {
                Step::Record(record) => {
                    self.end = self.end.max(record.end);
                    self.entries.push(EntryRecord {
                        id: record.id.to_string(),
                        offset: record.offset,
                        size: record.end - record.offset,
                    });
                }
                Step::End => return Ok(Extent::Ends(self.end.max(self.records.at))),
                Step::NeedMore => return Ok(Extent::Unknown),
            }
        }
    }
}

/// The entry IDs, in header order, of the bundle that `prefix` starts: the first bytes of a
/// bundle `len` bytes long (a stream being inflated). `Ok(None)` while `prefix` stops inside
/// the header, or when it does not start with a bundle; a damaged header is the error
/// [`Bundle::parse`] gives for the whole data.
pub fn entry_ids(prefix: &[u8], len: u64) -> Result<Option<Vec<&str>>> {
    if !is_bundle(prefix) {
        return Ok(None);
    }
    let mut records = Records::new(len);
    let mut ids = Vec::new();
    loop {
        match records.next(prefix)? {
            Step::Record(record) => ids.push(record.id),
            Step::End => return Ok(Some(ids)),
            Step::NeedMore => return Ok(None),
        }
    }
}

impl<'a> Bundle<'a> {
    /// Parses the bundle at the start of `data`. Returns `Ok(None)` when `data` does not start
    /// with the magic (not a bundle), and an error naming the offset of the first field that
    /// is truncated, out of bounds or overflowing. Bytes after the last payload are ignored.
    pub fn parse(data: &'a [u8]) -> Result<Option<Bundle<'a>>> {
        if !is_bundle(data) {
            return Ok(None);
        }
        let mut records = Records::new(data.len() as u64);
        let mut entries = Vec::new();
        let mut size = 0;
        loop {
            match records.next(data)? {
                Step::Record(record) => {
                    size = record.end.max(size);
                    // Every check is against the length of `data`: it holds what records name.
                    let Some(payload) = slice(data, record.offset, record.end) else {
                        unreachable!("a record names bytes past the data's length");
                    };
                    entries.push(BundleEntry {
                        index: entries.len(),
                        id: record.id,
                        offset: record.offset,
                        data: payload,
                    });
                }
                Step::End => break,
                // Every check is against the length of `data`: it holds whatever a step needs.
                Step::NeedMore => unreachable!("a step needs bytes past the data's length"),
            }
        }
        Ok(Some(Bundle {
            entries,
            header_size: records.at,
            size: size.max(records.at),
        }))
    }

    /// The entries in header order.
    pub fn entries(&self) -> &[BundleEntry<'a>] {
        &self.entries
    }

    /// Each entry's ID, offset and size, as the header records them.
    pub fn records(&self) -> Vec<EntryRecord> {
        self.entries()
            .iter()
            .map(|e| EntryRecord {
                id: e.id.to_string(),
                offset: e.offset,
                size: e.data.len() as u64,
            })
            .collect()
    }

    /// Size of the header: magic, count and records.
    pub fn header_size(&self) -> u64 {
        self.header_size
    }

    /// Size of the bundle: up to the end of the header or of the last payload, whichever is
    /// further. Bytes past it (padding, another bundle) are not part of this bundle.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The entries in the order clang-offload-bundler lists and visits them: the iteration
    /// order of its map from ID to entry, whose probing the release decides. An ID stored
    /// twice appears once, where its first record put it, with the payload of its last record.
    pub fn entries_in_llvm_order(&self, probing: Probing) -> Vec<BundleEntry<'a>> {
        let mut map = StringMap::with_probing(probing);
        for entry in &self.entries {
            map.insert(entry.id.as_bytes(), *entry);
        }
        map.iter().map(|(_, e)| *e).collect()
    }
}

/// Where each entry of a bundle goes: computed from IDs and payload sizes alone, so that a
/// writer can stream payloads from their sources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleLayout {
    /// The header bytes: magic, count and records.
    pub header: Vec<u8>,
    /// The offset of each payload, in entry order.
    pub offsets: Vec<u64>,
    /// Total size of the bundle.
    pub size: u64,
}

/// Lays out a bundle of `entries` (ID and payload size, in order) with each payload offset a
/// multiple of `align` (any value from 1; LLVM does not require a power of two).
pub fn layout<S: AsRef<str>>(entries: &[(S, u64)], align: u64) -> Result<BundleLayout> {
    let overflow = |what| {
        Error::new(
            0,
            ErrorKind::FieldOverflow {
                what,
                value: u64::MAX,
            },
        )
    };
    if align == 0 {
        return Err(Error::new(
            0,
            ErrorKind::FieldOverflow {
                what: "bundle alignment",
                value: 0,
            },
        ));
    }
    let mut header_size = MAGIC.len() as u64 + 8;
    for (id, _) in entries {
        header_size = header_size
            .checked_add(RECORD_FIXED + id.as_ref().len() as u64)
            .ok_or_else(|| overflow("bundle header size"))?;
    }
    let mut offsets = Vec::with_capacity(entries.len());
    let mut cursor = header_size;
    for (_, size) in entries {
        cursor = cursor
            .checked_next_multiple_of(align)
            .ok_or_else(|| overflow("bundle entry offset"))?;
        offsets.push(cursor);
        cursor = cursor
            .checked_add(*size)
            .ok_or_else(|| overflow("bundle size"))?;
    }
    // Only a hint: a header too large for memory fails when it is built.
    let mut header = Vec::with_capacity(usize::try_from(header_size).unwrap_or(0));
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(pod::bytes_of(&U64::new(Le, entries.len() as u64)));
    for ((id, size), offset) in entries.iter().zip(&offsets) {
        let id = id.as_ref().as_bytes();
        let prefix = RecordPrefix {
            offset: U64::new(Le, *offset),
            size: U64::new(Le, *size),
            id_len: U64::new(Le, id.len() as u64),
        };
        header.extend_from_slice(pod::bytes_of(&prefix));
        header.extend_from_slice(id);
    }
    Ok(BundleLayout {
        header,
        offsets,
        size: cursor,
    })
}

/// Writes `count` zero bytes.
pub fn write_zeros<W: Write + ?Sized>(out: &mut W, mut count: u64) -> io::Result<()> {
    const ZEROS: [u8; 4096] = [0; 4096];
    while count > 0 {
        let zeros = inflate::at_most(&ZEROS, count);
        out.write_all(zeros)?;
        count -= zeros.len() as u64;
    }
    Ok(())
}

/// Writes a whole bundle of `entries` (ID and payload) to `out`.
pub fn write<W: Write + ?Sized>(
    out: &mut W,
    entries: &[(&str, &[u8])],
    align: u64,
) -> io::Result<()> {
    let sizes: Vec<(&str, u64)> = entries
        .iter()
        .map(|(id, d)| (*id, d.len() as u64))
        .collect();
    let plan = layout(&sizes, align).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    out.write_all(&plan.header)?;
    let mut cursor = plan.header.len() as u64;
    for ((_, data), offset) in entries.iter().zip(&plan.offsets) {
        write_zeros(out, offset - cursor)?;
        out.write_all(data)?;
        cursor = offset + data.len() as u64;
    }
    Ok(())
}

/// A whole bundle of `entries` in memory.
pub fn to_vec(entries: &[(&str, &[u8])], align: u64) -> Vec<u8> {
    let mut out = Vec::new();
    // Writing to a Vec fails only on an invalid layout, which `align >= 1` rules out.
    if write(&mut out, entries, align.max(1)).is_err() {
        out.clear();
    }
    out
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn layout_matches_llvm_19_offsets() {
        let entries = [
            ("host-x86_64-unknown-linux-gnu-", 4u64),
            ("hipv4-amdgcn-amd-amdhsa--gfx906", 8),
        ];
        let plan = layout(&entries, 1).unwrap();
        assert_eq!(plan.header.len(), 0x8d);
        assert_eq!(plan.offsets, [0x8d, 0x91]);
        let plan = layout(&entries, 16).unwrap();
        assert_eq!(plan.offsets, [0x90, 0xa0]);
        assert_eq!(plan.size, 0xa8);
        let plan = layout(&entries, 3).unwrap();
        assert_eq!(plan.offsets, [0x8d, 0x93]);
    }

    #[test]
    fn bytes_match_a_bundle_written_by_llvm_19() {
        // clang-offload-bundler-19 -type=bc -targets=host-x86_64-unknown-linux-gnu,
        // hipv4-amdgcn-amd-amdhsa-gfx906 with inputs "hosty" and "dev1dev1".
        let mut expected = Vec::new();
        expected.extend_from_slice(MAGIC);
        expected.extend_from_slice(&2u64.to_le_bytes());
        for (off, size, id) in [
            (0x8du64, 5u64, "host-x86_64-unknown-linux-gnu-"),
            (0x92, 8, "hipv4-amdgcn-amd-amdhsa--gfx906"),
        ] {
            expected.extend_from_slice(&off.to_le_bytes());
            expected.extend_from_slice(&size.to_le_bytes());
            expected.extend_from_slice(&(id.len() as u64).to_le_bytes());
            expected.extend_from_slice(id.as_bytes());
        }
        expected.extend_from_slice(b"hostydev1dev1");
        let written = to_vec(
            &[
                ("host-x86_64-unknown-linux-gnu-", b"hosty"),
                ("hipv4-amdgcn-amd-amdhsa--gfx906", b"dev1dev1"),
            ],
            1,
        );
        assert_eq!(written, expected);
        let bundle = Bundle::parse(&written).unwrap().unwrap();
        let order: Vec<&str> = bundle
            .entries_in_llvm_order(Probing::Quadratic)
            .iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(
            order,
            [
                "hipv4-amdgcn-amd-amdhsa--gfx906",
                "host-x86_64-unknown-linux-gnu-"
            ]
        );
        assert_eq!(bundle.size(), written.len() as u64);
    }

    #[test]
    fn not_a_bundle_is_none() {
        assert!(Bundle::parse(b"").unwrap().is_none());
        assert!(Bundle::parse(b"__CLANG_OFFLOAD_BUNDLE_").unwrap().is_none());
        assert!(Bundle::parse(b"\x7fELF").unwrap().is_none());
    }

    fn sample() -> Vec<u8> {
        to_vec(
            &[
                ("host-x86_64-unknown-linux-gnu-", b"h"),
                ("hip-amdgcn-amd-amdhsa--gfx90a", b"0123456789"),
            ],
            8,
        )
    }

    #[test]
    fn every_truncation_is_an_error_with_an_offset() {
        let full = sample();
        let size = Bundle::parse(&full).unwrap().unwrap().size() as usize;
        for cut in MAGIC.len()..size {
            let err = Bundle::parse(&full[..cut]).unwrap_err();
            assert!(err.offset <= cut as u64, "cut {cut}: {err}");
        }
    }

    #[test]
    fn bad_fields_are_reported() {
        let mut data = sample();
        data[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(
            Bundle::parse(&data).unwrap_err(),
            Error::new(24, ErrorKind::TooManyEntries { count: u64::MAX })
        );

        let mut data = sample();
        data[32..40].copy_from_slice(&0u64.to_le_bytes());
        assert_eq!(
            Bundle::parse(&data).unwrap_err(),
            Error::new(32, ErrorKind::EntryAtZero { index: 0 })
        );

        let mut data = sample();
        data[40..48].copy_from_slice(&u64::MAX.to_le_bytes());
        let err = Bundle::parse(&data).unwrap_err();
        assert_eq!(err.offset, 32);
        assert!(err.to_string().contains("overflow"), "{err}");

        let mut data = sample();
        let len = data.len() as u64;
        data[40..48].copy_from_slice(&len.to_le_bytes());
        let err = Bundle::parse(&data).unwrap_err();
        assert!(err.to_string().contains("past the end"), "{err}");

        let mut data = sample();
        data[48..56].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            Bundle::parse(&data).unwrap_err().kind,
            ErrorKind::Truncated {
                what: "bundle entry ID",
                ..
            }
        ));
    }

    #[test]
    fn duplicate_ids_keep_the_first_slot_and_the_last_payload() {
        let data = to_vec(
            &[
                ("a-x86_64---", b"first"),
                ("b-x86_64---", b"b"),
                ("a-x86_64---", b"second"),
            ],
            1,
        );
        let bundle = Bundle::parse(&data).unwrap().unwrap();
        assert_eq!(bundle.entries().len(), 3);
        let ordered = bundle.entries_in_llvm_order(Probing::Quadratic);
        assert_eq!(ordered.len(), 2);
        let a = ordered.iter().find(|e| e.id == "a-x86_64---").unwrap();
        assert_eq!(a.data, b"second");
    }

    /// What a [`BundleExtent`] tells of `data` when its bytes arrive one at a time.
    fn extent_byte_by_byte(data: &[u8]) -> Result<Extent> {
        let mut extent = BundleExtent::new(data.len() as u64);
        for n in 0..=data.len() {
            match extent.advance(&data[..n])? {
                Extent::Unknown => continue,
                found => return Ok(found),
            }
        }
        Ok(Extent::Unknown)
    }

    /// Checks that the extent found from the first bytes is what parsing the whole gives.
    fn extent_agrees_with_parse(data: &[u8]) -> std::result::Result<(), String> {
        let found = extent_byte_by_byte(data);
        let agrees = match Bundle::parse(data) {
            Ok(Some(bundle)) => found == Ok(Extent::Ends(bundle.size())),
            Ok(None) if data.len() < MAGIC.len() && MAGIC.starts_with(data) => {
                found == Ok(Extent::Unknown)
            }
            Ok(None) => found == Ok(Extent::NotABundle),
            Err(e) => found == Err(e),
        };
        if agrees {
            Ok(())
        } else {
            Err(format!("{found:?} vs {:?}", Bundle::parse(data)))
        }
    }

    #[test]
    fn the_extent_is_known_once_the_header_is_there() {
        let mut data = sample();
        let size = Bundle::parse(&data).unwrap().unwrap().size();
        data.extend_from_slice(&[0; 1000]);
        let header = Bundle::parse(&data).unwrap().unwrap().header_size() as usize;
        let mut extent = BundleExtent::new(data.len() as u64);
        assert_eq!(extent.advance(&data[..10]), Ok(Extent::Unknown));
        assert_eq!(extent.advance(&data[..header - 1]), Ok(Extent::Unknown));
        assert_eq!(extent.advance(&data[..header]), Ok(Extent::Ends(size)));
        assert!(size < data.len() as u64);
        // The records, read from the header alone, are those of the whole bundle.
        let parsed = Bundle::parse(&data).unwrap().unwrap();
        let whole = parsed.records();
        assert_eq!(extent.entries(), whole.as_slice());
        assert_eq!(extent.entries().len(), 2);
        assert_eq!(
            BundleExtent::new(100).advance(b"__CLANG_OFFLOAD_BUNDLX"),
            Ok(Extent::NotABundle)
        );
        assert_eq!(
            BundleExtent::new(100).advance(b"\x7fELF"),
            Ok(Extent::NotABundle)
        );
    }

    #[test]
    fn a_payload_past_the_data_is_known_from_the_header_alone() {
        let mut data = sample();
        data[40..48].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let header = 32 + 24 + "host-x86_64-unknown-linux-gnu-".len();
        let mut extent = BundleExtent::new(1 << 33);
        let err = extent.advance(&data[..header]).unwrap_err();
        assert_eq!(err.offset, 32);
        assert_eq!(
            err.kind,
            ErrorKind::EntryOutOfBounds {
                index: 0,
                offset: u64::from_le_bytes(data[32..40].try_into().unwrap()),
                size: 1 << 40,
                len: 1 << 33,
            }
        );
    }

    #[test]
    fn zero_alignment_is_refused() {
        assert!(layout(&[("x", 1u64)], 0).is_err());
    }

    proptest! {
        #[test]
        fn any_entries_survive_write_then_read(
            entries in proptest::collection::vec(("[a-z0-9:+_-]{1,40}", proptest::collection::vec(any::<u8>(), 0..300)), 0..8),
            align in 1u64..5000,
        ) {
            let refs: Vec<(&str, &[u8])> = entries.iter().map(|(id, d)| (id.as_str(), d.as_slice())).collect();
            let data = to_vec(&refs, align);
            let bundle = Bundle::parse(&data).unwrap().unwrap();
            prop_assert_eq!(bundle.entries().len(), refs.len());
            for (entry, (id, payload)) in bundle.entries().iter().zip(&refs) {
                prop_assert_eq!(entry.id, *id);
                prop_assert_eq!(entry.data, *payload);
                prop_assert_eq!(entry.offset % align, 0);
            }
            prop_assert!(bundle.size() == data.len() as u64);
        }

        #[test]
        fn the_extent_from_the_first_bytes_is_what_parsing_the_whole_gives(
            entries in proptest::collection::vec(("[a-z0-9-]{0,12}", 0usize..40), 0..4),
            damage in proptest::collection::vec((any::<prop::sample::Index>(), 0usize..6), 0..3),
            trailing in 0usize..64,
        ) {
            let payloads: Vec<Vec<u8>> = entries.iter().map(|(_, n)| vec![7; *n]).collect();
            let refs: Vec<(&str, &[u8])> = entries.iter().zip(&payloads).map(|((id, _), d)| (id.as_str(), d.as_slice())).collect();
            let mut data = to_vec(&refs, 1);
            let header = Bundle::parse(&data).unwrap().unwrap().header_size() as usize;
            let len = data.len() as u64;
            for (at, value) in damage {
                // A u64 field of the header (after the magic) set to a value that matters.
                let at = MAGIC.len() + at.index(header - MAGIC.len());
                let value = [0, 1, len, len + 1, u64::MAX, 1 << 40][value];
                let end = (at + 8).min(data.len());
                data[at..end].copy_from_slice(&value.to_le_bytes()[..end - at]);
            }
            data.extend(std::iter::repeat_n(0u8, trailing));
            prop_assert_eq!(extent_agrees_with_parse(&data), Ok(()));
            for cut in 0..data.len() {
                prop_assert_eq!(extent_agrees_with_parse(&data[..cut]), Ok(()));
            }
        }
    }
}
