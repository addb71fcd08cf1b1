//! An archive made and read back a part at a time: where its stored code objects go, worked
//! out one by one from their sizes ([`Placing`]); its table of contents written a key at a
//! time; and the table checked as it is read ([`check`]), so that an archive of any number of
//! code objects is written and checked without its table held whole.
//!
//! # Example
//!
//! Write a two-entry archive in parts and check it.
//!
//! ```
//! use offload::format::kpack::{check, table, ArchiveInfo, Placing, Scheme, TocEntry};
//!
//! let info = ArchiveInfo {
//!     group_name: "app".into(),
//!     gfx_arch_family: "gfx90a".into(),
//!     gfx_arches: vec!["gfx90a".into()],
//!     scheme: Scheme::None,
//! };
//! let code: [&[u8]; 2] = [b"first", b"second"];
//! let mut placing = Placing::new(Scheme::None);
//! let stored: Vec<_> = code.iter().map(|c| placing.place(c.len() as u64).unwrap()).collect();
//! let entries: Vec<TocEntry> = (0..2)
//!     .map(|i| TocEntry {
//!         key: format!("lib/a.so#{i}"),
//!         arch: "gfx90a".into(),
//!         ordinal: i,
//!         original_size: code[i as usize].len() as u64,
//!         metadata: None,
//!     })
//!     .collect();
//! let mut keys = Vec::new();
//! let count = table::write_keys(&mut keys, &entries);
//!
//! let mut file = placing.header();
//! file.extend_from_slice(&placing.count_field());
//! for c in code {
//!     file.extend_from_slice(&placing.size_field(c.len() as u64));
//!     file.extend_from_slice(c);
//! }
//! file.extend_from_slice(&table::table_head(&info, count));
//! file.extend_from_slice(&keys);
//! file.extend_from_slice(&placing.table_tail());
//! stored.iter().for_each(|s| table::write_blob(&mut file, *s));
//!
//! let checked = check(&file).unwrap();
//! assert_eq!((checked.entries, checked.stored, checked.largest_ordinal), (2, 2, Some(1)));
//! ```

use std::collections::HashMap;

use object::endian::{LittleEndian as Le, U32, U64};
use object::pod;

use super::msgpack::{self, Cursor, Head, Value};
use super::{
    kpack_error, table_of, u32_le, ArchiveInfo, Header, KpackError, Scheme, Stored, Toc, TocEntry,
    BLOB_ALIGNMENT, BLOB_START, MAGIC, VERSION,
};
use crate::format::error::{Error, ErrorKind, Result};

/// Where an archive's stored code objects go, worked out one at a time from their sizes: back
/// to back from [`BLOB_ALIGNMENT`] on (under `zstd-per-kernel`, the `u32` count first and each
/// frame's `u32` size before it), the table after the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placing {
    scheme: Scheme,
    count: u64,
    end: u64,
}

impl Placing {
    /// Nothing placed yet, for code objects stored by `scheme`.
    pub fn new(scheme: Scheme) -> Placing {
        Placing {
            scheme,
            count: 0,
            end: BLOB_ALIGNMENT + Placing::prefix(scheme),
        }
    }

    /// The bytes before each stored code object (its size), and before the first (the count).
    fn prefix(scheme: Scheme) -> u64 {
        match scheme {
            Scheme::None => 0,
            Scheme::ZstdPerKernel => 4,
        }
    }

    /// Places a stored code object of `size` bytes after those placed before it: where it
    /// goes. Fails when a `zstd-per-kernel` frame's size, or their count, does not fit its
    /// `u32` field.
    pub fn place(&mut self, size: u64) -> Result<Stored> {
        if self.scheme == Scheme::ZstdPerKernel {
            let limit = u64::from(u32::MAX);
            let count = self.count + 1;
            let too_large = (size > limit).then_some(size);
            if let Some(value) = too_large.or((count > limit).then_some(count)) {
                let what = "zstd frame size or count";
                return Err(Error::new(0, ErrorKind::FieldOverflow { what, value }));
            }
        }
        self.end += Placing::prefix(self.scheme);
        let stored = Stored {
            offset: self.end,
            size,
        };
        self.end += size;
        self.count += 1;
        Ok(stored)
    }

    /// How many are placed.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Where the table of contents starts: the end of the last code object placed.
    pub fn toc_offset(&self) -> u64 {
        self.end
    }

    /// The file's first [`BLOB_ALIGNMENT`] bytes: the header, which says where the table
    /// starts, and its zero padding.
    pub fn header(&self) -> Vec<u8> {
        let header = Header {
            magic: MAGIC,
            version: U32::new(Le, VERSION),
            toc_offset: U64::new(Le, self.end),
        };
        let mut head = pod::bytes_of(&header).to_vec();
        head.resize(BLOB_START, 0);
        head
    }

    /// What comes between the header and the first stored code object: the `u32` frame count
    /// of `zstd-per-kernel`, nothing for `"none"`.
    pub fn count_field(&self) -> Vec<u8> {
        self.size_field(self.count)
    }

    /// What comes just before a stored code object of `size` bytes: its `u32` frame size for
    /// `zstd-per-kernel`, nothing for `"none"`.
    pub fn size_field(&self, size: u64) -> Vec<u8> {
        match self.scheme {
            Scheme::None => Vec::new(),
            Scheme::ZstdPerKernel => u32_le(size).to_vec(),
        }
    }

    /// The table's fields after its `toc` map: the scheme, then the zstd area's place, or the
    /// header of the `blobs` array, whose elements ([`write_blob`]) follow, one for each code
    /// object placed.
    pub fn table_tail(&self) -> Vec<u8> {
        let mut out = Vec::new();
        msgpack::write_str(&mut out, "compression_scheme");
        msgpack::write_str(&mut out, self.scheme.name());
        match self.scheme {
            Scheme::None => {
                msgpack::write_str(&mut out, "blobs");
                let count = usize::try_from(self.count).unwrap_or(usize::MAX);
                msgpack::write_array_header(&mut out, count);
            }
            Scheme::ZstdPerKernel => {
                msgpack::write_str(&mut out, "zstd_offset");
                msgpack::write_uint(&mut out, BLOB_ALIGNMENT);
                msgpack::write_str(&mut out, "zstd_size");
                msgpack::write_uint(&mut out, self.end - BLOB_ALIGNMENT);
            }
        }
        out
    }
}

/// The table of contents up to its `toc` map's header, for a map of `keys` keys, whose
/// parts ([`write_keys`]) follow; its fields in the splitter's order.
pub fn table_head(info: &ArchiveInfo, keys: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let scheme_fields = match info.scheme {
        Scheme::None => 1,
        Scheme::ZstdPerKernel => 2,
    };
    msgpack::write_map_header(&mut out, 6 + scheme_fields);
    msgpack::write_str(&mut out, "format_version");
    msgpack::write_uint(&mut out, u64::from(VERSION));
    msgpack::write_str(&mut out, "group_name");
    msgpack::write_str(&mut out, &info.group_name);
    msgpack::write_str(&mut out, "gfx_arch_family");
    msgpack::write_str(&mut out, &info.gfx_arch_family);
    msgpack::write_str(&mut out, "gfx_arches");
    msgpack::write_array_header(&mut out, info.gfx_arches.len());
    info.gfx_arches
        .iter()
        .for_each(|a| msgpack::write_str(&mut out, a));
    msgpack::write_str(&mut out, "toc");
    msgpack::write_map_header(&mut out, keys);
    out
}

/// Appends the `toc` map's keys of `entries`, each once, in first-added order, with its
/// processors' entries in added order; gives how many keys. The parts written for several
/// lists of entries, one after another, are the map of all of them when no key is in two.
pub fn write_keys(out: &mut Vec<u8>, entries: &[TocEntry]) -> usize {
    let mut keys: Vec<(&str, Vec<&TocEntry>)> = Vec::new();
    let mut place: HashMap<&str, usize> = HashMap::new();
    for entry in entries {
        let at = *place.entry(&entry.key).or_insert_with(|| {
            keys.push((&entry.key, Vec::new()));
            keys.len() - 1
        });
        if let Some((_, list)) = keys.get_mut(at) {
            list.push(entry);
        }
    }
    for (key, list) in &keys {
        msgpack::write_str(out, key);
        msgpack::write_map_header(out, list.len());
        for entry in list {
            write_entry(out, entry);
        }
    }
    keys.len()
}

/// Appends one processor's entry of a key: the processor, then its map.
fn write_entry(out: &mut Vec<u8>, entry: &TocEntry) {
    msgpack::write_str(out, &entry.arch);
    msgpack::write_map_header(out, 3 + usize::from(entry.metadata.is_some()));
    msgpack::write_str(out, "type");
    msgpack::write_str(out, "hsaco");
    msgpack::write_str(out, "ordinal");
    msgpack::write_uint(out, entry.ordinal);
    msgpack::write_str(out, "original_size");
    msgpack::write_uint(out, entry.original_size);
    if let Some(metadata) = &entry.metadata {
        msgpack::write_str(out, "metadata");
        msgpack::write_map_header(out, 2);
        msgpack::write_str(out, "target");
        msgpack::write_str(out, &metadata.target);
        msgpack::write_str(out, "source_prefix");
        msgpack::write_str(out, &metadata.source_prefix);
    }
}

/// Appends one element of the `blobs` array of a `"none"` archive.
pub fn write_blob(out: &mut Vec<u8>, stored: Stored) {
    msgpack::write_map_header(out, 2);
    msgpack::write_str(out, "offset");
    msgpack::write_uint(out, stored.offset);
    msgpack::write_str(out, "size");
    msgpack::write_uint(out, stored.size);
}

/// What [`check`] counted in an archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// The table's entries.
    pub entries: u64,
    /// The stored code objects.
    pub stored: u64,
    /// The largest ordinal an entry names, if there is an entry.
    pub largest_ordinal: Option<u64>,
}

/// Checks the archive `data` as [`Archive::parse`](super::Archive::parse) does (the header,
/// the table's fields, each stored code object inside the file, each entry's fields), reading
/// its table a value at a time: nothing of it is held, however many entries it has. A `blobs`
/// list is checked whatever the scheme. Gives what it counted.
pub fn check(data: &[u8]) -> Result<Checked> {
    let (at, bytes) = table_of(data)?;
    let mut walk = Walk {
        toc: Toc { data, at },
        cursor: Cursor::new(bytes),
    };
    let count = match walk.head()? {
        Head::Map(n) => n,
        other => return Err(walk.mismatch("table of contents", "a map", &other)),
    };
    // The fields other than the two long lists, the first of each name (as `get` finds it).
    let mut fields: Vec<(Value<'_>, Value<'_>)> = Vec::new();
    let mut entries = None;
    let mut blobs = None;
    for _ in 0..count {
        let key = walk.value()?;
        let seen = match key {
            Value::Str(b"toc") => entries.is_some(),
            Value::Str(b"blobs") => blobs.is_some(),
            _ => fields.iter().any(|(k, _)| *k == key),
        };
        let first = !seen;
        match key {
            Value::Str(b"toc") if first => entries = Some(walk.entries()?),
            Value::Str(b"blobs") if first => blobs = Some(walk.blobs()?),
            _ => {
                let value = walk.value()?;
                if first {
                    fields.push((key, value));
                }
            }
        }
    }
    let fields = Value::Map(fields);
    let toc = &walk.toc;
    let (scheme, _) = toc.scheme_and_arches(&fields)?;
    let stored = match (scheme, blobs) {
        (Scheme::None, Some(blobs)) => blobs,
        (Scheme::None, None) => return Err(toc.field_error("toc.blobs", "an array", None)),
        (Scheme::ZstdPerKernel, _) => {
            let start = toc.uint_field(&fields, "zstd_offset", "toc")?;
            let size = toc.uint_field(&fields, "zstd_size", "toc")?;
            let mut frames = 0;
            toc.each_frame(start, size, &mut |_| frames += 1)?;
            frames
        }
    };
    let (entries, largest_ordinal) =
        entries.ok_or_else(|| toc.field_error("toc.toc", "a map", None))?;
    Ok(Checked {
        entries,
        stored,
        largest_ordinal,
    })
}

/// A table being read a value at a time.
struct Walk<'a> {
    toc: Toc<'a>,
    cursor: Cursor<'a>,
}

impl<'a> Walk<'a> {
    /// The next value's head; an error's offset is the file's.
    fn head(&mut self) -> Result<Head<'a>> {
        let at = self.toc.at;
        self.cursor.head().map_err(|e| Error::from(e).rebased(at))
    }

    /// The next value, whole.
    fn value(&mut self) -> Result<Value<'a>> {
        let at = self.toc.at;
        self.cursor.value().map_err(|e| Error::from(e).rebased(at))
    }

    /// The error for a value at `path` that is not `expected`.
    fn mismatch(&self, path: &str, expected: &'static str, found: &Head<'_>) -> Error {
        let found = match found {
            Head::Map(_) => "map",
            Head::Array(_) => "array",
            Head::Value(value) => value.kind(),
        };
        let path = path.to_string();
        kpack_error(
            self.toc.at,
            KpackError::Field {
                path,
                expected,
                found,
            },
        )
    }

    /// The `toc` map, key by key and processor by processor: its number of entries and their
    /// largest ordinal.
    fn entries(&mut self) -> Result<(u64, Option<u64>)> {
        let keys = match self.head()? {
            Head::Map(n) => n,
            other => return Err(self.mismatch("toc.toc", "a map", &other)),
        };
        let (mut count, mut largest) = (0u64, None);
        for _ in 0..keys {
            let key = self.value()?;
            let (key, path) = self.toc.key(&key)?;
            let arches = match self.head()? {
                Head::Map(n) => n,
                other => return Err(self.mismatch(&path, "a map", &other)),
            };
            for _ in 0..arches {
                let arch = self.value()?;
                let entry = self.value()?;
                let entry = self.toc.entry(key, &path, &arch, &entry)?;
                count += 1;
                largest = largest.max(Some(entry.ordinal));
            }
        }
        Ok((count, largest))
    }

    /// The `blobs` list, each checked against the file: how many.
    fn blobs(&mut self) -> Result<u64> {
        let count = match self.head()? {
            Head::Array(n) => n,
            other => return Err(self.mismatch("toc.blobs", "an array", &other)),
        };
        for i in 0..count {
            let blob = self.value()?;
            self.toc.blob(i, &blob)?;
        }
        Ok(count as u64)
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;
    use crate::format::kpack::{layout, Archive, EntryMetadata};

    fn info(scheme: Scheme) -> ArchiveInfo {
        ArchiveInfo {
            group_name: "app".into(),
            gfx_arch_family: "gfx90a".into(),
            gfx_arches: vec!["gfx90a".into(), "gfx90a:xnack+".into()],
            scheme,
        }
    }

    /// An archive of `sizes` stored code objects (zeros) and entries naming them.
    fn archive(scheme: Scheme, sizes: &[u64]) -> Vec<u8> {
        let entries: Vec<TocEntry> = (0..sizes.len() as u64)
            .flat_map(|i| {
                ["gfx90a", "gfx90a:xnack+"].map(|arch| TocEntry {
                    key: format!("lib/a.so#{}", i / 2),
                    arch: arch.into(),
                    ordinal: i,
                    original_size: 100,
                    metadata: Some(EntryMetadata {
                        target: format!("hipv4-amdgcn-amd-amdhsa--{arch}"),
                        source_prefix: "stage".into(),
                    }),
                })
            })
            .collect();
        let plan = layout(&info(scheme), sizes, &entries).unwrap();
        let mut out = plan.head.clone();
        out.extend_from_slice(&plan.count_field(scheme));
        for (i, size) in sizes.iter().enumerate() {
            out.extend_from_slice(&plan.size_field(scheme, i));
            out.resize(out.len() + *size as usize, 0);
        }
        out.extend_from_slice(&plan.toc);
        out
    }

    #[test]
    fn check_counts_what_parse_reads() {
        for scheme in [Scheme::None, Scheme::ZstdPerKernel] {
            let data = archive(scheme, &[10, 20, 30, 5]);
            let parsed = Archive::parse(&data).unwrap();
            let checked = check(&data).unwrap();
            assert_eq!(checked.entries, parsed.entries.len() as u64);
            assert_eq!(checked.stored, parsed.stored.len() as u64);
            assert_eq!(checked.largest_ordinal, Some(3));
        }
    }

    #[test]
    fn check_refuses_what_parse_refuses() {
        for scheme in [Scheme::None, Scheme::ZstdPerKernel] {
            let data = archive(scheme, &[10, 20]);
            // Cut anywhere, or a byte of the table changed: both agree on failing.
            let toc_at = Archive::parse(&data).unwrap().toc_offset as usize;
            for cut in (0..data.len()).step_by(7) {
                let short = &data[..cut];
                assert!(check(short).is_err(), "cut at {cut}");
                assert!(Archive::parse(short).is_err(), "cut at {cut}");
            }
            for at in toc_at..data.len() {
                let mut bad = data.clone();
                bad[at] = 0xc1;
                assert_eq!(
                    check(&bad).is_err(),
                    Archive::parse(&bad).is_err(),
                    "byte {at}"
                );
            }
        }
    }

    #[test]
    fn placing_matches_the_layout() {
        for scheme in [Scheme::None, Scheme::ZstdPerKernel] {
            let sizes = [3, 0, 70];
            let plan = layout(&info(scheme), &sizes, &[]).unwrap();
            let mut placing = Placing::new(scheme);
            for (size, stored) in sizes.iter().zip(&plan.stored) {
                assert_eq!(placing.place(*size).unwrap(), *stored);
            }
            assert_eq!(placing.toc_offset(), plan.toc_offset);
            assert_eq!(placing.header(), plan.head);
        }
        let mut placing = Placing::new(Scheme::ZstdPerKernel);
        assert!(placing.place(u64::from(u32::MAX) + 1).is_err());
    }
}
