//! The record a split keeps of the bundles it empties, so that merging can make them again as
//! they were: for each code-object index, its bundle's entry IDs as spelled, in their order
//! (the host entry's too), and how the bundle was stored (plain, or compressed: the CCOB
//! version, the method and the level where the stream shows it).
//!
//! It lives in the reference under a key of its own, [`RECORD_KEY`]; AMD's loader and its
//! Python reader look their two keys up by name and pass over any other. Entry IDs and bundle
//! shapes are each written once, the indices naming a shape by number, so the reference stays
//! small however many wrappers a binary has:
//!
//! ```text
//! "offload_bundles": {
//!   "ids": ["host-x86_64-unknown-linux--", "hipv4-amdgcn-amd-amdhsa--gfx90a", ...],
//!   "shapes": [{"ids": [0, 1, ...], "storage": "plain"},
//!              {"ids": [0, 2], "storage": {"version": 3, "method": "zstd", "level": nil}}],
//!   "bundle_of": [0, 0, 1, ...]
//! }
//! ```
//!
//! # Example
//!
//! Record two code objects of the same bundle shape, write the record into a reference, and read
//! it back.
//!
//! ```
//! use offload::format::kpack::msgpack;
//! use offload::format::kpack::record::{BundleRecord, BundleShape, Storage, RECORD_KEY};
//!
//! let shape = BundleShape {
//!     ids: vec!["host-x86_64-unknown-linux-gnu-".into(), "hipv4-amdgcn-amd-amdhsa--gfx1100".into()],
//!     storage: Storage::Plain,
//! };
//! let mut record = BundleRecord::default();
//! record.push(shape.clone());
//! record.push(shape.clone());
//! assert_eq!(record.shapes.len(), 1, "an equal shape is shared");
//!
//! let mut reference = Vec::new();
//! msgpack::write_map_header(&mut reference, 1);
//! msgpack::write_str(&mut reference, RECORD_KEY);
//! record.write(&mut reference);
//! let read = BundleRecord::from_reference(&reference).unwrap().expect("a record");
//! assert_eq!(read, record);
//! assert_eq!(read.shape(1), Some(&shape));
//! ```

use std::collections::HashMap;

use super::msgpack::{self, Value};
use super::{Result, Toc};
use crate::format::ccob::Method;

/// The reference's key holding the record.
pub const RECORD_KEY: &str = "offload_bundles";

/// The largest reference AMD's loader reads: it parses at most this many bytes from the
/// reference's start, so a longer one fails to load.
pub const LOADER_REFERENCE_LIMIT: usize = 64 * 1024;

/// How a bundle was stored in the binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Storage {
    /// An uncompressed bundle.
    Plain,
    /// A compressed bundle (CCOB).
    Compressed {
        /// The header's version: 1, 2 or 3.
        version: u16,
        /// The compression method.
        method: Method,
        /// The level, where the stream showed it; `None` when it could not be known.
        level: Option<i32>,
    },
}

/// What a bundle was, apart from its code objects: its entry IDs in order, and its storage.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BundleShape {
    /// The entry IDs, as spelled and in the order the bundle held them.
    pub ids: Vec<String>,
    /// How the bundle was stored.
    pub storage: Storage,
}

/// The shapes of a split binary's bundles, by code-object index.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BundleRecord {
    /// Each distinct shape once.
    pub shapes: Vec<BundleShape>,
    /// For each code-object index, its shape's place in `shapes`.
    pub shape_of: Vec<usize>,
}

impl BundleRecord {
    /// Records `shape` as the next code-object index's, sharing an equal shape recorded
    /// before.
    pub fn push(&mut self, shape: BundleShape) {
        let number = match self.shapes.iter().position(|s| *s == shape) {
            Some(number) => number,
            None => {
                self.shapes.push(shape);
                self.shapes.len() - 1
            }
        };
        self.shape_of.push(number);
    }

    /// The shape of code-object `index`'s bundle, if recorded.
    pub fn shape(&self, index: u64) -> Option<&BundleShape> {
        let number = *self.shape_of.get(usize::try_from(index).ok()?)?;
        self.shapes.get(number)
    }

    /// Appends the record as a MessagePack map (the value of [`RECORD_KEY`]).
    pub fn write(&self, out: &mut Vec<u8>) {
        let mut ids: Vec<&str> = Vec::new();
        let mut id_number: HashMap<&str, usize> = HashMap::new();
        for id in self.shapes.iter().flat_map(|s| &s.ids) {
            id_number.entry(id.as_str()).or_insert_with(|| {
                ids.push(id);
                ids.len() - 1
            });
        }
        msgpack::write_map_header(out, 3);
        msgpack::write_str(out, "ids");
        msgpack::write_array_header(out, ids.len());
        for id in &ids {
            msgpack::write_str(out, id);
        }
        msgpack::write_str(out, "shapes");
        msgpack::write_array_header(out, self.shapes.len());
        for shape in &self.shapes {
            msgpack::write_map_header(out, 2);
            msgpack::write_str(out, "ids");
            msgpack::write_array_header(out, shape.ids.len());
            for id in &shape.ids {
                msgpack::write_uint(out, id_number.get(id.as_str()).map_or(0, |&n| n as u64));
            }
            msgpack::write_str(out, "storage");
            write_storage(out, shape.storage);
        }
        msgpack::write_str(out, "bundle_of");
        msgpack::write_array_header(out, self.shape_of.len());
        for &number in &self.shape_of {
            msgpack::write_uint(out, number as u64);
        }
    }

    /// The record in the reference `data` (a MessagePack map), `None` when it has none (a
    /// binary split by AMD's splitter). A record that is there must be whole: every field of
    /// the right type, every number naming an entry, no ID twice in a bundle.
    pub fn from_reference(data: &[u8]) -> Result<Option<BundleRecord>> {
        let (value, _) = msgpack::read(data)?;
        let Some(record) = value.get(RECORD_KEY) else {
            return Ok(None);
        };
        let toc = Toc { data, at: 0 };
        let path = format!("reference.{RECORD_KEY}");
        let ids = array(&toc, record, "ids", &path)?
            .iter()
            .enumerate()
            .map(|(i, id)| {
                id.as_str().ok_or_else(|| {
                    toc.field_error(&format!("{path}.ids[{i}]"), "a string", Some(id))
                })
            })
            .collect::<Result<Vec<&str>>>()?;
        let shapes = array(&toc, record, "shapes", &path)?
            .iter()
            .enumerate()
            .map(|(i, shape)| read_shape(&toc, shape, &format!("{path}.shapes[{i}]"), &ids))
            .collect::<Result<Vec<_>>>()?;
        let shape_of = array(&toc, record, "bundle_of", &path)?
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let at = format!("{path}.bundle_of[{i}]");
                number_below(&toc, n, shapes.len(), &at, "the number of a shape")
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(BundleRecord { shapes, shape_of }))
    }
}

/// Writes `storage`: `"plain"`, or a map of the version, method and level.
fn write_storage(out: &mut Vec<u8>, storage: Storage) {
    match storage {
        Storage::Plain => msgpack::write_str(out, "plain"),
        Storage::Compressed {
            version,
            method,
            level,
        } => {
            msgpack::write_map_header(out, 3);
            msgpack::write_str(out, "version");
            msgpack::write_uint(out, u64::from(version));
            msgpack::write_str(out, "method");
            msgpack::write_str(out, method.name());
            msgpack::write_str(out, "level");
            match level {
                Some(level) => msgpack::write_int(out, i64::from(level)),
                None => msgpack::write_value(out, &Value::Nil),
            }
        }
    }
}

/// The array at `key` of the map `map` (at `path`).
fn array<'v, 'a>(
    toc: &Toc<'_>,
    map: &'v Value<'a>,
    key: &str,
    path: &str,
) -> Result<&'v [Value<'a>]> {
    let value = map.get(key);
    value
        .and_then(Value::as_array)
        .ok_or_else(|| toc.field_error(&format!("{path}.{key}"), "an array", value))
}

/// `value` (at `path`) as a number below `bound`.
fn number_below(
    toc: &Toc<'_>,
    value: &Value<'_>,
    bound: usize,
    path: &str,
    expected: &'static str,
) -> Result<usize> {
    value
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n < bound)
        .ok_or_else(|| toc.field_error(path, expected, Some(value)))
}

/// One shape (at `path`), its IDs numbers into `ids`.
fn read_shape(toc: &Toc<'_>, shape: &Value<'_>, path: &str, ids: &[&str]) -> Result<BundleShape> {
    let numbers = array(toc, shape, "ids", path)?;
    let mut spelled: Vec<String> = Vec::with_capacity(numbers.len());
    for (i, n) in numbers.iter().enumerate() {
        let at = format!("{path}.ids[{i}]");
        let number = number_below(toc, n, ids.len(), &at, "the number of an entry ID")?;
        let id = ids.get(number).copied().unwrap_or_default();
        if spelled.iter().any(|s| s == id) {
            return Err(toc.field_error(&at, "an entry ID not already in the bundle", Some(n)));
        }
        spelled.push(id.to_string());
    }
    Ok(BundleShape {
        ids: spelled,
        storage: read_storage(toc, shape.get("storage"), &format!("{path}.storage"))?,
    })
}

/// A shape's storage (at `path`).
fn read_storage(toc: &Toc<'_>, value: Option<&Value<'_>>, path: &str) -> Result<Storage> {
    let Some(value) = value else {
        return Err(toc.field_error(path, "\"plain\" or a map", None));
    };
    if value.as_str() == Some("plain") {
        return Ok(Storage::Plain);
    }
    if value.as_map().is_none() {
        return Err(toc.field_error(path, "\"plain\" or a map", Some(value)));
    }
    let version = value.get("version");
    let version = version
        .and_then(Value::as_u64)
        .and_then(|v| u16::try_from(v).ok())
        .filter(|v| (1..=3).contains(v))
        .ok_or_else(|| toc.field_error(&format!("{path}.version"), "1, 2 or 3", version))?;
    let method = value.get("method");
    let method = match method.and_then(Value::as_str) {
        Some("zstd") => Method::Zstd,
        Some("zlib") => Method::Zlib,
        _ => {
            let at = format!("{path}.method");
            return Err(toc.field_error(&at, "\"zstd\" or \"zlib\"", method));
        }
    };
    let given = value.get("level");
    let bad_level = || toc.field_error(&format!("{path}.level"), "nil or a 32-bit integer", given);
    let level = match given {
        None | Some(Value::Nil) => None,
        Some(Value::Uint(n)) => Some(i32::try_from(*n).map_err(|_| bad_level())?),
        Some(Value::Int(n)) => Some(i32::try_from(*n).map_err(|_| bad_level())?),
        Some(_) => return Err(bad_level()),
    };
    Ok(Storage::Compressed {
        version,
        method,
        level,
    })
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::format::kpack::KpackRef;

    fn record() -> BundleRecord {
        let mut record = BundleRecord::default();
        let ids = |arches: &[&str]| -> Vec<String> {
            std::iter::once("host-x86_64-unknown-linux--".to_string())
                .chain(
                    arches
                        .iter()
                        .map(|a| format!("hipv4-amdgcn-amd-amdhsa--{a}")),
                )
                .collect()
        };
        record.push(BundleShape {
            ids: ids(&["gfx90a", "gfx1100"]),
            storage: Storage::Plain,
        });
        record.push(BundleShape {
            ids: ids(&["gfx1100"]),
            storage: Storage::Compressed {
                version: 3,
                method: Method::Zstd,
                level: None,
            },
        });
        record.push(BundleShape {
            ids: ids(&["gfx90a", "gfx1100"]),
            storage: Storage::Plain,
        });
        record.push(BundleShape {
            ids: ids(&["gfx1100"]),
            storage: Storage::Compressed {
                version: 1,
                method: Method::Zlib,
                level: Some(-1),
            },
        });
        record
    }

    #[test]
    fn a_record_reads_back_from_its_reference_and_the_reference_still_reads() {
        let record = record();
        assert_eq!(record.shapes.len(), 3, "equal shapes are kept once");
        assert_eq!(record.shape_of, [0, 1, 0, 2]);
        let reference = KpackRef {
            kernel_name: "lib/libk.so",
            kpack_search_paths: vec!["../.kpack/k_@GFXARCH@.kpack"],
        };
        let bytes = reference.to_bytes_recording(&record);
        assert_eq!(KpackRef::parse(&bytes).unwrap(), reference);
        let back = BundleRecord::from_reference(&bytes).unwrap().unwrap();
        assert_eq!(back, record);
        assert_eq!(back.shape(2), record.shape(0));
        assert_eq!(back.shape(4), None);
        // Without a record: none, as for AMD's splitter.
        assert_eq!(
            BundleRecord::from_reference(&reference.to_bytes()).unwrap(),
            None
        );
    }

    #[test]
    fn a_damaged_record_is_an_error_naming_the_field() {
        let reference = KpackRef {
            kernel_name: "k",
            kpack_search_paths: vec!["p"],
        };
        let damaged = |edit: &dyn Fn(&mut Vec<u8>)| {
            let mut written = Vec::new();
            record().write(&mut written);
            edit(&mut written);
            let mut bytes = Vec::new();
            msgpack::write_map_header(&mut bytes, 2);
            msgpack::write_str(&mut bytes, "kernel_name");
            msgpack::write_str(&mut bytes, reference.kernel_name);
            msgpack::write_str(&mut bytes, RECORD_KEY);
            bytes.extend_from_slice(&written);
            BundleRecord::from_reference(&bytes)
                .unwrap_err()
                .to_string()
        };
        // The last shape number (2, a positive fixint) made 9: no such shape.
        let message = damaged(&|r| *r.last_mut().unwrap() = 9);
        assert!(
            message.contains("offload_bundles.bundle_of[3]"),
            "{message}"
        );
        // "plain" misspelled.
        let message = damaged(&|r| {
            let at = r.windows(5).position(|w| w == b"plain").unwrap();
            r[at] = b'P';
        });
        assert!(message.contains("shapes[0].storage"), "{message}");
    }
}
