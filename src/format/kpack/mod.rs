//! kpack: device code moved out of a binary into per-processor `.kpack` archives, and the
//! small records a split binary keeps to find it again.
//!
//! - The archive: a 16-byte header (`KPAK`, version 1, the table's offset), the code objects
//!   from byte 64 on, and at the end a MessagePack table of contents keyed
//!   `"<binary>#<code-object index>"`, then by processor. Code objects are stored plain
//!   (`"none"`: back to back, the table lists each one's offset and size) or compressed one zstd
//!   frame each (`"zstd-per-kernel"`: a `u32` count, then a `u32` size before each frame). A
//!   table entry names its code object by ordinal, an index into those lists.
//! - The reference (`.rocm_kpack_ref` in ELF, `.kpackrf` in PE): a MessagePack map of the
//!   binary's name as archives key it and the archive paths to search, `@GFXARCH@` standing for
//!   a processor; a split by this crate adds the record of the bundles it emptied
//!   ([`record`]), under a key of its own.
//! - The HIP wrapper of a split binary: magic `HIPK` instead of `HIPF`, its pointer at the
//!   reference, and in its `reserved1` field the code-object index the loader asks for.
//!
//! The layouts are those AMD's rocm-kpack writes (python/rocm_kpack/kpack.py, compression.py)
//! and its loader reads (runtime/src/archive.cpp, toc_parser.cpp, compression.cpp).
//!
//! # Example
//!
//! Build an archive of two code objects for gfx1100 and gfx1101, one zstd frame each, and read
//! one back.
//!
//! ```
//! use offload::format::kpack::{Archive, ArchiveWriter, Scheme};
//!
//! let mut writer = ArchiveWriter::new("app", "gfx110X", &["gfx1100", "gfx1101"], Scheme::ZstdPerKernel);
//! writer.add("lib/libapp.so#0", "gfx1100", b"code for gfx1100").unwrap();
//! writer.add("lib/libapp.so#0", "gfx1101", b"code for gfx1101").unwrap();
//! let bytes = writer.finish();
//! assert!(bytes.starts_with(b"KPAK"));
//!
//! let archive = Archive::parse(&bytes).unwrap();
//! assert!(archive.has_arch("gfx1101"));
//! let entry = archive.find("lib/libapp.so#0", "gfx1101").expect("listed");
//! assert_eq!(entry.original_size, 16);
//! assert_eq!(&*archive.code_object(entry, 1 << 20).unwrap(), b"code for gfx1101");
//! ```

pub mod error;
pub mod msgpack;
pub mod record;
pub mod table;
pub mod wrapper;

use std::borrow::Cow;
use std::io::Read;

use object::endian::{LittleEndian as Le, U32, U64};
use object::pod::{self, Pod};

use crate::format::ccob::Decoding;
use crate::format::error::{Error, ErrorKind, Result};
use crate::format::inflate;
pub use crate::format::kpack::error::KpackError;
use crate::format::kpack::msgpack::Value;
pub use crate::format::kpack::table::{check, Checked, Placing};
use crate::target::target_id::TargetId;

/// The archive's magic bytes.
pub const MAGIC: [u8; 4] = *b"KPAK";
/// The only archive version there is.
pub const VERSION: u32 = 1;
/// Where the stored code objects start: the header padded to this alignment.
pub const BLOB_ALIGNMENT: u64 = 64;
/// [`BLOB_ALIGNMENT`] as a buffer length.
const BLOB_START: usize = 64;
/// The zstd level AMD's splitter compresses with.
pub const ZSTD_LEVEL: i32 = 3;
/// The magic of a HIP wrapper whose code was moved to kpack archives (`HIPK`).
pub const HIPK_MAGIC: u32 = 0x4B50_4948;
/// The magic of an ordinary HIP wrapper (`HIPF`).
pub const HIPF_MAGIC: u32 = 0x4849_5046;
/// The name of the ELF section holding the reference.
pub const ELF_REF_SECTION: &str = ".rocm_kpack_ref";
/// The name of the PE section holding the reference.
pub const PE_REF_SECTION: &str = ".kpackrf";
/// The longest processor key ([`is_processor_key`]) taken from a file: far longer than any
/// target ID (`gfx90a:sramecc+:xnack-` is 22 bytes).
pub const MAX_PROCESSOR_KEY: usize = 64;

/// Whether `key` can be a processor key of an archive, and so a part of an archive's file
/// name and of a bundle entry ID: a target ID (a processor of lowercase letters, digits and
/// `-`, starting with a letter, then `:feature+` or `:feature-` items of lowercase letters and
/// digits), at most [`MAX_PROCESSOR_KEY`] bytes. Nothing else reaches a path or an entry ID:
/// no `/`, `.`, space, control character or empty name.
pub fn is_processor_key(key: &str) -> bool {
    let word = |w: &str, extra: &[u8]| {
        !w.is_empty()
            && w.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || extra.contains(&b))
    };
    let Some(id) = TargetId::parse_syntax(key) else {
        return false;
    };
    key.len() <= MAX_PROCESSOR_KEY
        && id.processor.starts_with(|c: char| c.is_ascii_lowercase())
        && word(id.processor, b"-")
        && id.features.iter().all(|(name, _)| word(name, b""))
}

/// What `@GFXARCH@` in a search path stands for.
pub const GFXARCH: &str = "@GFXARCH@";

/// The archive header, as stored.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
struct Header {
    magic: [u8; 4],
    version: U32<Le>,
    toc_offset: U64<Le>,
}

// SAFETY: plain old data of byte arrays and unaligned integers.
unsafe impl Pod for Header {}

/// A HIP wrapper (`__hip_fatbin_wrapper`, in `.hipFatBinSegment`), as stored (x86-64).
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub struct HipWrapper {
    /// `HIPF` or `HIPK`.
    pub magic: U32<Le>,
    /// The wrapper version (1).
    pub version: U32<Le>,
    /// The address of the bundle (`HIPF`) or of the reference (`HIPK`); in a position-
    /// independent file the stored value may be 0 and the address is a relocation's addend.
    pub binary: U64<Le>,
    /// Unused by `HIPF`; the code-object index for `HIPK`.
    pub reserved1: U64<Le>,
}

// SAFETY: plain old data of unaligned integers.
unsafe impl Pod for HipWrapper {}

/// How an archive stores its code objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Scheme {
    /// `"none"`: as they are.
    None,
    /// `"zstd-per-kernel"`: one zstd frame each.
    ZstdPerKernel,
}

impl Scheme {
    /// The name the table of contents uses.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::None => "none",
            Scheme::ZstdPerKernel => "zstd-per-kernel",
        }
    }

    fn from_name(name: &str) -> Option<Scheme> {
        [Scheme::None, Scheme::ZstdPerKernel]
            .into_iter()
            .find(|s| s.name() == name)
    }
}

fn kpack_error(offset: u64, e: KpackError) -> Error {
    Error::new(offset, ErrorKind::Kpack(e))
}

/// The table-of-contents key of code object `index` of `binary`: `"<binary>#<index>"`.
pub fn toc_key(binary: &str, index: u64) -> String {
    format!("{binary}#{index}")
}

/// A table-of-contents key split into the binary's name and the code-object index, when it
/// has that form.
pub fn split_toc_key(key: &str) -> Option<(&str, u64)> {
    let (binary, index) = key.rsplit_once('#')?;
    Some((binary, index.parse().ok()?))
}

/// One code object an archive lists: which binary's which code object, for which processor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelEntry<'a> {
    /// `"<binary>#<index>"`.
    pub key: &'a str,
    /// The processor, with features if any (`gfx90a:xnack-`).
    pub arch: &'a str,
    /// What it is: `"hsaco"`.
    pub kind: &'a str,
    /// Its index among the stored code objects.
    pub ordinal: u64,
    /// Its size as a code object (inflated).
    pub original_size: u64,
}

impl KernelEntry<'_> {
    /// `key @ arch`, for messages.
    pub fn name(&self) -> String {
        format!("{} @ {}", self.key, self.arch)
    }
}

/// Where one stored code object lies in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    /// Offset of its bytes (its zstd frame, for `zstd-per-kernel`) from the file's start.
    pub offset: u64,
    /// Their count.
    pub size: u64,
}

/// A parsed `.kpack` archive, borrowing the file's bytes.
#[derive(Debug, Clone)]
pub struct Archive<'a> {
    data: &'a [u8],
    /// Where the table of contents starts.
    pub toc_offset: u64,
    /// The group the archive belongs to (`blas`, `torch`), if the table names one.
    pub group_name: Option<&'a str>,
    /// The processor family of the archive's name (`gfx110X`), if the table names one.
    pub gfx_arch_family: Option<&'a str>,
    /// The processors the loader may pick this archive for, as written (with features).
    pub gfx_arches: Vec<&'a str>,
    /// How code objects are stored.
    pub scheme: Scheme,
    /// The stored code objects, by ordinal.
    pub stored: Vec<Stored>,
    /// The table's entries, in its order.
    pub entries: Vec<KernelEntry<'a>>,
}

impl<'a> Archive<'a> {
    /// Parses an archive: header, table of contents, and the index of stored code objects
    /// (their places are checked against the file; nothing is inflated).
    pub fn parse(data: &'a [u8]) -> Result<Archive<'a>> {
        let (toc_offset, toc_bytes) = table_of(data)?;
        let (toc, _) = msgpack::read(toc_bytes).map_err(|e| Error::from(e).rebased(toc_offset))?;
        Toc {
            data,
            at: toc_offset,
        }
        .archive(&toc)
    }

    /// The file's bytes.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// The entry for code object `key` (`"<binary>#<index>"`) and processor `arch`, compared
    /// as exact strings, as the loader does.
    pub fn find(&self, key: &str, arch: &str) -> Option<&KernelEntry<'a>> {
        self.entries.iter().find(|e| e.key == key && e.arch == arch)
    }

    /// Whether `arch` (exactly as written) is one of the archive's processors.
    pub fn has_arch(&self, arch: &str) -> bool {
        self.gfx_arches.contains(&arch)
    }

    /// Where `entry`'s code object is stored.
    pub fn stored_of(&self, entry: &KernelEntry<'_>) -> Result<Stored> {
        usize::try_from(entry.ordinal)
            .ok()
            .and_then(|i| self.stored.get(i))
            .copied()
            .ok_or_else(|| {
                kpack_error(
                    self.toc_offset,
                    KpackError::NoSuchOrdinal {
                        entry: entry.name(),
                        ordinal: entry.ordinal,
                        count: self.stored.len() as u64,
                    },
                )
            })
    }

    /// The stored bytes of `entry` (its zstd frame, for `zstd-per-kernel`) and where they lie.
    pub fn stored_bytes(&self, entry: &KernelEntry<'_>) -> Result<(Stored, &'a [u8])> {
        let stored = self.stored_of(entry)?;
        let bytes = region(self.data, stored.offset, stored.size).ok_or_else(|| {
            kpack_error(
                stored.offset,
                KpackError::NoSuchOrdinal {
                    entry: entry.name(),
                    ordinal: entry.ordinal,
                    count: self.stored.len() as u64,
                },
            )
        })?;
        Ok((stored, bytes))
    }

    /// Reads the code object of `entry` whole, through a window, with the decoder `decoding`
    /// says, handing `sink` its bytes: checks that a plain one is as long as its
    /// `original_size` says, and that a compressed one inflates to exactly that (refusing
    /// more than `limit`).
    pub fn read_code_object(
        &self,
        entry: &KernelEntry<'_>,
        limit: u64,
        decoding: Decoding<'_>,
        mut sink: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let (stored, bytes) = self.stored_bytes(entry)?;
        match self.scheme {
            Scheme::None if stored.size != entry.original_size => {
                let e = KpackError::StoredSize {
                    entry: entry.name(),
                    declared: entry.original_size,
                    stored: stored.size,
                };
                Err(kpack_error(stored.offset, e))
            }
            Scheme::None => sink(bytes),
            Scheme::ZstdPerKernel => {
                inflate_frame(bytes, entry, stored.offset, limit, decoding, sink)
            }
        }
    }

    /// The code object of `entry`: borrowed when stored plain, inflated (refusing more than
    /// `limit` bytes, and any size but `original_size`) when compressed.
    pub fn code_object(&self, entry: &KernelEntry<'_>, limit: u64) -> Result<Cow<'a, [u8]>> {
        let (stored, bytes) = self.stored_bytes(entry)?;
        match self.scheme {
            Scheme::None => Ok(Cow::Borrowed(bytes)),
            Scheme::ZstdPerKernel => {
                let mut out = Vec::new();
                let cap = entry.original_size;
                inflate_frame(
                    bytes,
                    entry,
                    stored.offset,
                    limit,
                    Decoding::Fresh,
                    |piece| inflate::append(&mut out, piece, cap, stored.offset),
                )?;
                Ok(Cow::Owned(out))
            }
        }
    }
}

/// `size` bytes of `data` from `offset`, if they are all there.
/// The header of the archive `data`, checked: where its table of contents starts, and the
/// bytes from there to the end.
fn table_of(data: &[u8]) -> Result<(u64, &[u8])> {
    let (header, _) = pod::from_bytes::<Header>(data).map_err(|()| {
        Error::new(
            0,
            ErrorKind::Truncated {
                what: "kpack header",
                needed: 16,
                available: data.len() as u64,
            },
        )
    })?;
    if header.magic != MAGIC {
        return Err(kpack_error(0, KpackError::NotAnArchive));
    }
    let version = header.version.get(Le);
    if version != VERSION {
        return Err(kpack_error(4, KpackError::UnsupportedVersion(version)));
    }
    let toc_offset = header.toc_offset.get(Le);
    let len = data.len() as u64;
    let toc_bytes = usize::try_from(toc_offset)
        .ok()
        .and_then(|at| data.get(at..))
        .filter(|rest| !rest.is_empty())
        .ok_or_else(|| kpack_error(8, KpackError::TocPastEnd { toc_offset, len }))?;
    Ok((toc_offset, toc_bytes))
}

fn region(data: &[u8], offset: u64, size: u64) -> Option<&[u8]> {
    let start = usize::try_from(offset).ok()?;
    let end = start.checked_add(usize::try_from(size).ok()?)?;
    data.get(start..end)
}

/// Inflates `frame`, the stored zstd frame of `entry` (at offset `at` of its archive), through
/// a window with the decoder `decoding` says, handing `sink` the bytes in order: never more
/// than `entry.original_size` of them, which must be all the frame gives, and refused when
/// that is over `limit`.
pub fn inflate_frame(
    frame: &[u8],
    entry: &KernelEntry<'_>,
    at: u64,
    limit: u64,
    decoding: Decoding<'_>,
    mut sink: impl FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let declared = entry.original_size;
    if declared > limit {
        let e = KpackError::TooLarge {
            entry: entry.name(),
            declared,
            limit,
        };
        return Err(kpack_error(at, e));
    }
    let zstd_error = |message: String| {
        kpack_error(
            at,
            KpackError::Zstd {
                entry: entry.name(),
                message,
            },
        )
    };
    let mut reader: Box<dyn Read + '_> = match decoding {
        Decoding::Fresh => Box::new(
            zstd::stream::read::Decoder::with_buffer(frame)
                .map_err(|e| zstd_error(e.to_string()))?,
        ),
        Decoding::Reusing(context) | Decoding::Into(context, _) => {
            Box::new(zstd::stream::read::Decoder::with_context(frame, context))
        }
    };
    let mut window = inflate::window(declared);
    let mut total = 0u64;
    loop {
        let n =
            inflate::read_some(&mut reader, &mut window).map_err(|e| zstd_error(e.to_string()))?;
        if n == 0 {
            break;
        }
        let piece = window.get(..n).unwrap_or_default();
        let kept = inflate::at_most(piece, declared - total);
        if !kept.is_empty() {
            sink(kept)?;
        }
        total += n as u64;
        if total > declared {
            break;
        }
    }
    if total != declared {
        let e = KpackError::InflatedSize {
            entry: entry.name(),
            declared,
            actual: total.min(declared.saturating_add(1)),
        };
        return Err(kpack_error(at, e));
    }
    Ok(())
}

/// The little-endian `u32` at `*at` in `area` (which starts at `base` in the file), which is
/// `what`; moves `at` past it.
fn le_u32(area: &[u8], at: &mut u64, base: u64, what: &'static str) -> Result<u32> {
    let bytes = region(area, *at, 4).ok_or_else(|| {
        Error::new(
            base + *at,
            ErrorKind::Truncated {
                what,
                needed: 4,
                available: (area.len() as u64).saturating_sub(*at),
            },
        )
    })?;
    *at += 4;
    Ok(pod::from_bytes::<U32<Le>>(bytes).map_or(0, |(n, _)| n.get(Le)))
}

/// Reading the table of contents of a file; errors point at the table's offset.
struct Toc<'a> {
    data: &'a [u8],
    at: u64,
}

impl<'a> Toc<'a> {
    fn field_error(&self, path: &str, expected: &'static str, found: Option<&Value<'_>>) -> Error {
        let e = KpackError::Field {
            path: path.to_string(),
            expected,
            found: found.map_or("missing", Value::kind),
        };
        kpack_error(self.at, e)
    }

    fn str_field(&self, map: &Value<'a>, key: &str, path: &str) -> Result<&'a str> {
        let value = map.get(key);
        value
            .and_then(Value::as_str)
            .ok_or_else(|| self.field_error(&format!("{path}.{key}"), "a string", value))
    }

    fn uint_field(&self, map: &Value<'a>, key: &str, path: &str) -> Result<u64> {
        let value = map.get(key);
        value.and_then(Value::as_u64).ok_or_else(|| {
            self.field_error(&format!("{path}.{key}"), "a non-negative integer", value)
        })
    }

    fn archive(&self, toc: &Value<'a>) -> Result<Archive<'a>> {
        if toc.as_map().is_none() {
            return Err(self.field_error("table of contents", "a map", Some(toc)));
        }
        let (scheme, gfx_arches) = self.scheme_and_arches(toc)?;
        let optional = |key| toc.get(key).and_then(Value::as_str);
        let stored = match scheme {
            Scheme::None => self.blobs(toc)?,
            Scheme::ZstdPerKernel => self.frames(toc)?,
        };
        Ok(Archive {
            data: self.data,
            toc_offset: self.at,
            group_name: optional("group_name"),
            gfx_arch_family: optional("gfx_arch_family"),
            gfx_arches,
            scheme,
            stored,
            entries: self.entries(toc)?,
        })
    }

    /// The table's `compression_scheme` and `gfx_arches`.
    fn scheme_and_arches(&self, toc: &Value<'a>) -> Result<(Scheme, Vec<&'a str>)> {
        let scheme_name = self.str_field(toc, "compression_scheme", "toc")?;
        let scheme = Scheme::from_name(scheme_name)
            .ok_or_else(|| kpack_error(self.at, KpackError::UnknownScheme(scheme_name.into())))?;
        let arches = toc.get("gfx_arches");
        let gfx_arches = arches
            .and_then(Value::as_array)
            .ok_or_else(|| self.field_error("toc.gfx_arches", "an array", arches))?
            .iter()
            .enumerate()
            .map(|(i, a)| {
                a.as_str().ok_or_else(|| {
                    self.field_error(&format!("toc.gfx_arches[{i}]"), "a string", Some(a))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((scheme, gfx_arches))
    }

    /// The `blobs` list of a `"none"` archive, each checked against the file.
    fn blobs(&self, toc: &Value<'a>) -> Result<Vec<Stored>> {
        let blobs = toc.get("blobs");
        let list = blobs
            .and_then(Value::as_array)
            .ok_or_else(|| self.field_error("toc.blobs", "an array", blobs))?;
        list.iter()
            .enumerate()
            .map(|(i, blob)| self.blob(i, blob))
            .collect()
    }

    /// Blob `i` of the `blobs` list, checked against the file.
    fn blob(&self, i: usize, blob: &Value<'a>) -> Result<Stored> {
        let path = format!("toc.blobs[{i}]");
        let stored = Stored {
            offset: self.uint_field(blob, "offset", &path)?,
            size: self.uint_field(blob, "size", &path)?,
        };
        self.check_region(&format!("code object {i}"), stored)?;
        Ok(stored)
    }

    fn check_region(&self, what: &str, stored: Stored) -> Result<()> {
        match region(self.data, stored.offset, stored.size) {
            Some(_) => Ok(()),
            None => Err(kpack_error(
                self.at,
                KpackError::RegionPastEnd {
                    what: what.to_string(),
                    offset: stored.offset,
                    size: stored.size,
                    len: self.data.len() as u64,
                },
            )),
        }
    }

    /// The frames of a `"zstd-per-kernel"` archive: `u32` count, then `u32` size and frame.
    fn frames(&self, toc: &Value<'a>) -> Result<Vec<Stored>> {
        let start = self.uint_field(toc, "zstd_offset", "toc")?;
        let size = self.uint_field(toc, "zstd_size", "toc")?;
        let mut frames = Vec::new();
        self.each_frame(start, size, &mut |frame| frames.push(frame))?;
        Ok(frames)
    }

    /// Hands each frame of the zstd area of `size` bytes at `start` to `each`, checked
    /// against the area.
    fn each_frame(&self, start: u64, size: u64, each: &mut dyn FnMut(Stored)) -> Result<()> {
        let whole = Stored {
            offset: start,
            size,
        };
        self.check_region("zstd area", whole)?;
        let area = region(self.data, start, size).unwrap_or_default();
        let mut at = 0u64;
        let count = le_u32(area, &mut at, start, "kpack zstd frame count")?;
        // Each frame takes at least its 4-byte size: a count beyond that is a lie.
        if u64::from(count) > size / 4 {
            return Err(Error::new(
                start,
                ErrorKind::Truncated {
                    what: "kpack zstd frame list",
                    needed: u64::from(count) * 4,
                    available: size - 4,
                },
            ));
        }
        for i in 0..count {
            let frame_size = u64::from(le_u32(area, &mut at, start, "kpack zstd frame size")?);
            let frame = Stored {
                offset: start + at,
                size: frame_size,
            };
            if region(area, at, frame_size).is_none() {
                let e = KpackError::RegionPastEnd {
                    what: format!("zstd frame {i}"),
                    offset: frame.offset,
                    size: frame_size,
                    len: start + size,
                };
                return Err(kpack_error(frame.offset, e));
            }
            at += frame_size;
            each(frame);
        }
        Ok(())
    }

    /// The `toc` map: key -> processor -> entry.
    fn entries(&self, toc: &Value<'a>) -> Result<Vec<KernelEntry<'a>>> {
        let map = toc.get("toc");
        let keys = map
            .and_then(Value::as_map)
            .ok_or_else(|| self.field_error("toc.toc", "a map", map))?;
        let mut entries = Vec::new();
        for (key, arches) in keys {
            let (key, path) = self.key(key)?;
            let arches = arches
                .as_map()
                .ok_or_else(|| self.field_error(&path, "a map", Some(arches)))?;
            for (arch, entry) in arches {
                entries.push(self.entry(key, &path, arch, entry)?);
            }
        }
        Ok(entries)
    }

    /// A key of the `toc` map, and the path of its map of processors for messages.
    fn key(&self, key: &Value<'a>) -> Result<(&'a str, String)> {
        let key = key
            .as_str()
            .ok_or_else(|| self.field_error("toc.toc key", "a string", Some(key)))?;
        Ok((key, format!("toc[{key:?}]")))
    }

    /// The entry of `key` (its map at `path`) for the processor `arch`.
    fn entry(
        &self,
        key: &'a str,
        path: &str,
        arch: &Value<'a>,
        entry: &Value<'a>,
    ) -> Result<KernelEntry<'a>> {
        let arch = arch
            .as_str()
            .ok_or_else(|| self.field_error(&format!("{path} key"), "a string", Some(arch)))?;
        let path = format!("{path}[{arch:?}]");
        Ok(KernelEntry {
            key,
            arch,
            kind: entry.get("type").and_then(Value::as_str).unwrap_or("hsaco"),
            ordinal: self.uint_field(entry, "ordinal", &path)?,
            original_size: self.uint_field(entry, "original_size", &path)?,
        })
    }
}

/// Where the parts of an archive go, from the sizes of its stored code objects alone, so that
/// a writer can stream the code objects from where they are: the first [`BLOB_ALIGNMENT`]
/// bytes (header and padding), the stored code objects back to back from there (each
/// `zstd-per-kernel` frame after its `u32` size, the count first), then the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveLayout {
    /// The header and its zero padding: the file's first [`BLOB_ALIGNMENT`] bytes.
    pub head: Vec<u8>,
    /// Where each stored code object goes, by ordinal.
    pub stored: Vec<Stored>,
    /// The table of contents, at the end of the file.
    pub toc: Vec<u8>,
    /// Where the table starts: the size of everything before it.
    pub toc_offset: u64,
}

impl ArchiveLayout {
    /// What comes between the head and the first stored code object: the `u32` frame count
    /// of `zstd-per-kernel`, nothing for `"none"`.
    pub fn count_field(&self, scheme: Scheme) -> Vec<u8> {
        match scheme {
            Scheme::None => Vec::new(),
            Scheme::ZstdPerKernel => u32_le(self.stored.len() as u64).to_vec(),
        }
    }

    /// What comes just before stored code object `ordinal`: its `u32` frame size for
    /// `zstd-per-kernel`, nothing for `"none"`.
    pub fn size_field(&self, scheme: Scheme, ordinal: usize) -> Vec<u8> {
        match (scheme, self.stored.get(ordinal)) {
            (Scheme::ZstdPerKernel, Some(s)) => u32_le(s.size).to_vec(),
            _ => Vec::new(),
        }
    }
}

/// `n` as a little-endian `u32` field ([`layout`] checked that it fits).
fn u32_le(n: u64) -> [u8; 4] {
    u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes()
}

/// One entry of an archive's table: code object `key` (`"<binary>#<index>"`) for processor
/// `arch`, stored as ordinal `ordinal`, `original_size` bytes once inflated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TocEntry {
    /// `"<binary>#<index>"`.
    pub key: String,
    /// The processor.
    pub arch: String,
    /// The stored code object it names (several entries may name one).
    pub ordinal: u64,
    /// Its size as a code object.
    pub original_size: u64,
    /// The entry's `metadata` map, written when present.
    pub metadata: Option<EntryMetadata>,
}

/// An entry's `metadata` map, as AMD's splitter writes it: where the code object came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryMetadata {
    /// The bundle entry ID the code object had (`hipv4-amdgcn-amd-amdhsa--gfx90a`).
    pub target: String,
    /// The folder the binary's path in the key is under (`stage`).
    pub source_prefix: String,
}

/// What an archive says of itself in its table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArchiveInfo {
    /// The group the archive belongs to (`blas`).
    pub group_name: String,
    /// The processor family its name gives (`gfx110X`, or the one processor).
    pub gfx_arch_family: String,
    /// The processors the loader may pick it for.
    pub gfx_arches: Vec<String>,
    /// How code objects are stored.
    pub scheme: Scheme,
}

/// Lays out an archive of `stored_sizes` (the bytes of each stored code object: plain, or its
/// zstd frame) and `entries`, as AMD's splitter lays it out (table fields in its order).
/// Fails when a `zstd-per-kernel` size or count does not fit its `u32` field.
pub fn layout(
    info: &ArchiveInfo,
    stored_sizes: &[u64],
    entries: &[TocEntry],
) -> Result<ArchiveLayout> {
    let mut placing = Placing::new(info.scheme);
    let stored = stored_sizes
        .iter()
        .map(|size| placing.place(*size))
        .collect::<Result<Vec<_>>>()?;
    let mut keys = Vec::new();
    let count = table::write_keys(&mut keys, entries);
    let mut toc = table::table_head(info, count);
    toc.extend_from_slice(&keys);
    toc.extend_from_slice(&placing.table_tail());
    if info.scheme == Scheme::None {
        stored.iter().for_each(|s| table::write_blob(&mut toc, *s));
    }
    Ok(ArchiveLayout {
        head: placing.header(),
        stored,
        toc,
        toc_offset: placing.toc_offset(),
    })
}

/// Builds a `.kpack` archive in memory, laid out as AMD's splitter lays it out: header, zero
/// padding to 64, the stored code objects in the order they were added, then the table (its
/// fields in the splitter's order). See [`layout`] to write an archive without holding it.
#[derive(Debug, Clone)]
pub struct ArchiveWriter {
    info: ArchiveInfo,
    /// Stored bytes (plain, or a zstd frame) and the entry naming them.
    kernels: Vec<(TocEntry, Vec<u8>)>,
}

impl ArchiveWriter {
    /// An empty archive of `group_name`, named for `gfx_arch_family`, that the loader picks for
    /// `gfx_arches`, storing code objects by `scheme`.
    pub fn new(
        group_name: &str,
        gfx_arch_family: &str,
        gfx_arches: &[&str],
        scheme: Scheme,
    ) -> ArchiveWriter {
        ArchiveWriter {
            info: ArchiveInfo {
                group_name: group_name.to_string(),
                gfx_arch_family: gfx_arch_family.to_string(),
                gfx_arches: gfx_arches.iter().map(|a| a.to_string()).collect(),
                scheme,
            },
            kernels: Vec::new(),
        }
    }

    /// Adds `code_object` as `key` (`"<binary>#<index>"`) for processor `arch`; its ordinal is
    /// the number added before it. Compresses it now under `zstd-per-kernel`.
    pub fn add(&mut self, key: &str, arch: &str, code_object: &[u8]) -> Result<()> {
        self.add_entry(key, arch, code_object, None)
    }

    /// As [`ArchiveWriter::add`], the entry carrying `metadata`.
    pub fn add_with_metadata(
        &mut self,
        key: &str,
        arch: &str,
        code_object: &[u8],
        metadata: EntryMetadata,
    ) -> Result<()> {
        self.add_entry(key, arch, code_object, Some(metadata))
    }

    fn add_entry(
        &mut self,
        key: &str,
        arch: &str,
        code_object: &[u8],
        metadata: Option<EntryMetadata>,
    ) -> Result<()> {
        let stored = match self.info.scheme {
            Scheme::None => code_object.to_vec(),
            Scheme::ZstdPerKernel => compress_code_object(code_object)?,
        };
        let entry = TocEntry {
            key: key.to_string(),
            arch: arch.to_string(),
            ordinal: self.kernels.len() as u64,
            original_size: code_object.len() as u64,
            metadata,
        };
        self.kernels.push((entry, stored));
        Ok(())
    }

    /// The archive's bytes.
    pub fn finish(&self) -> Vec<u8> {
        let sizes: Vec<u64> = self.kernels.iter().map(|(_, s)| s.len() as u64).collect();
        let entries: Vec<TocEntry> = self.kernels.iter().map(|(e, _)| e.clone()).collect();
        // Frame sizes were checked against their u32 fields as code objects were added.
        let Ok(plan) = layout(&self.info, &sizes, &entries) else {
            return Vec::new();
        };
        let mut out = plan.head.clone();
        out.extend_from_slice(&plan.count_field(self.info.scheme));
        for (ordinal, (_, stored)) in self.kernels.iter().enumerate() {
            out.extend_from_slice(&plan.size_field(self.info.scheme, ordinal));
            out.extend_from_slice(stored);
        }
        out.extend_from_slice(&plan.toc);
        out
    }
}

/// One code object compressed as `zstd-per-kernel` stores it: a zstd frame at the splitter's
/// level, checked to fit the `u32` size field.
pub fn compress_code_object(code_object: &[u8]) -> Result<Vec<u8>> {
    let frame = zstd::bulk::compress(code_object, ZSTD_LEVEL)
        .map_err(|e| Error::new(0, ErrorKind::Compress(e.to_string())))?;
    if frame.len() as u64 > u64::from(u32::MAX) {
        let what = "zstd frame size";
        let value = frame.len() as u64;
        return Err(Error::new(0, ErrorKind::FieldOverflow { what, value }));
    }
    Ok(frame)
}

/// A split binary's reference to its archives (the `.rocm_kpack_ref` section).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KpackRef<'a> {
    /// The binary's name as the archives key it (`lib/libfoo.so`).
    pub kernel_name: &'a str,
    /// Archive paths, relative to the binary's folder unless absolute, `@GFXARCH@` standing
    /// for a processor.
    pub kpack_search_paths: Vec<&'a str>,
}

impl<'a> KpackRef<'a> {
    /// Parses the reference at the start of `data` (bytes after it are ignored, as the loader
    /// ignores them). Like the loader, it needs both fields and at least one path, and skips
    /// paths that are not strings.
    pub fn parse(data: &'a [u8]) -> Result<KpackRef<'a>> {
        let (value, _) = msgpack::read(data)?;
        let toc = Toc { data, at: 0 };
        if value.as_map().is_none() {
            return Err(toc.field_error("reference", "a map", Some(&value)));
        }
        let kernel_name = toc.str_field(&value, "kernel_name", "reference")?;
        let paths = value.get("kpack_search_paths");
        let kpack_search_paths: Vec<&str> = paths
            .and_then(Value::as_array)
            .ok_or_else(|| toc.field_error("reference.kpack_search_paths", "an array", paths))?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        if kpack_search_paths.is_empty() {
            let empty = paths
                .and_then(Value::as_array)
                .is_some_and(|a| a.is_empty());
            let e = KpackError::Field {
                path: "reference.kpack_search_paths".to_string(),
                expected: "at least one path (a UTF-8 string)",
                found: if empty {
                    "an empty array"
                } else {
                    "an array with no UTF-8 string"
                },
            };
            return Err(kpack_error(0, e));
        }
        Ok(KpackRef {
            kernel_name,
            kpack_search_paths,
        })
    }

    /// The reference's bytes, keys in the splitter's order (`kpack_search_paths` first).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        msgpack::write_map_header(&mut out, 2);
        self.write_keys(&mut out);
        out
    }

    /// The reference's bytes with `record` under [`record::RECORD_KEY`] after the splitter's
    /// two keys, which readers look up by name.
    pub fn to_bytes_recording(&self, record: &record::BundleRecord) -> Vec<u8> {
        let mut out = Vec::new();
        msgpack::write_map_header(&mut out, 3);
        self.write_keys(&mut out);
        msgpack::write_str(&mut out, record::RECORD_KEY);
        record.write(&mut out);
        out
    }

    /// Appends the splitter's two keys and their values.
    fn write_keys(&self, out: &mut Vec<u8>) {
        msgpack::write_str(out, "kpack_search_paths");
        msgpack::write_array_header(out, self.kpack_search_paths.len());
        for path in &self.kpack_search_paths {
            msgpack::write_str(out, path);
        }
        msgpack::write_str(out, "kernel_name");
        msgpack::write_str(out, self.kernel_name);
    }
}

/// What a HIP wrapper says about its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wrapped {
    /// `HIPF`: the code is a bundle at this address.
    Bundle {
        /// The stored pointer.
        binary: u64,
    },
    /// `HIPK`: the code is in kpack archives; the reference is at this address.
    Kpack {
        /// The stored pointer to the reference.
        reference: u64,
        /// The code-object index the loader asks for.
        index: u64,
    },
}

impl HipWrapper {
    /// The size of a wrapper.
    pub const SIZE: usize = 24;

    /// Reads the wrapper at the start of `data`.
    pub fn parse(data: &[u8]) -> Result<Wrapped> {
        let (wrapper, _) = pod::from_bytes::<HipWrapper>(data).map_err(|()| {
            Error::new(
                0,
                ErrorKind::Truncated {
                    what: "HIP wrapper",
                    needed: Self::SIZE as u64,
                    available: data.len() as u64,
                },
            )
        })?;
        let binary = wrapper.binary.get(Le);
        match wrapper.magic.get(Le) {
            HIPF_MAGIC => Ok(Wrapped::Bundle { binary }),
            HIPK_MAGIC => Ok(Wrapped::Kpack {
                reference: binary,
                index: wrapper.reserved1.get(Le),
            }),
            other => Err(kpack_error(0, KpackError::BadWrapperMagic(other))),
        }
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn any_entries_survive_write_then_read(
            kernels in proptest::collection::btree_map(
                ("[a-z/._]{1,30}", 0u64..40, "gfx[0-9a-f]{3,4}(:xnack[+-])?"),
                proptest::collection::vec(any::<u8>(), 0..400),
                0..12,
            ),
            zstd in any::<bool>(),
        ) {
            let scheme = if zstd { Scheme::ZstdPerKernel } else { Scheme::None };
            let mut w = ArchiveWriter::new("g", "fam", &["gfx90a"], scheme);
            for ((binary, index, arch), code) in &kernels {
                w.add(&toc_key(binary, *index), arch, code).unwrap();
            }
            let bytes = w.finish();
            let archive = Archive::parse(&bytes).unwrap();
            prop_assert_eq!(archive.entries.len(), kernels.len());
            for ((binary, index, arch), code) in &kernels {
                let entry = archive.find(&toc_key(binary, *index), arch).unwrap();
                prop_assert_eq!(&*archive.code_object(entry, 1 << 20).unwrap(), code.as_slice());
            }
        }
    }

    fn two_kernels(scheme: Scheme) -> Vec<u8> {
        let mut w = ArchiveWriter::new("k_lib", "gfx90a", &["gfx90a", "gfx90a:xnack-"], scheme);
        w.add("lib/a.so#0", "gfx90a", &[1; 100]).unwrap();
        w.add("lib/a.so#1", "gfx90a", &[2; 30]).unwrap();
        w.add("lib/a.so#0", "gfx90a:xnack-", &[3; 7]).unwrap();
        w.finish()
    }

    #[test]
    fn plain_archives_round_trip() {
        let bytes = two_kernels(Scheme::None);
        assert_eq!(&bytes[..8], b"KPAK\x01\x00\x00\x00");
        assert_eq!(bytes[16..64], [0; 48]);
        // Stored back to back from 64, not aligned one by one.
        assert_eq!(bytes[64..164], [1; 100]);
        assert_eq!(bytes[164..194], [2; 30]);
        let archive = Archive::parse(&bytes).unwrap();
        assert_eq!(archive.toc_offset, 201);
        assert_eq!(archive.scheme, Scheme::None);
        assert_eq!(archive.group_name, Some("k_lib"));
        assert_eq!(archive.gfx_arches, ["gfx90a", "gfx90a:xnack-"]);
        let e = archive.find("lib/a.so#0", "gfx90a:xnack-").unwrap();
        assert_eq!((e.ordinal, e.original_size, e.kind), (2, 7, "hsaco"));
        assert_eq!(&*archive.code_object(e, 0).unwrap(), [3; 7]);
        assert!(archive.find("lib/a.so#1", "gfx90a:xnack-").is_none());
        assert_eq!(archive.entries.len(), 3);
    }

    #[test]
    fn compressed_archives_round_trip() {
        let bytes = two_kernels(Scheme::ZstdPerKernel);
        let archive = Archive::parse(&bytes).unwrap();
        assert_eq!(archive.scheme, Scheme::ZstdPerKernel);
        assert_eq!(archive.stored.len(), 3);
        assert_eq!(archive.stored[0].offset, 72);
        let e = archive.find("lib/a.so#0", "gfx90a").unwrap();
        assert_eq!(&*archive.code_object(e, 1000).unwrap(), [1; 100]);
        let err = archive.code_object(e, 99).unwrap_err();
        assert_eq!(
            err.to_string(),
            "offset 0x48: kpack entry lib/a.so#0 @ gfx90a inflates to 100 bytes, more than the \
             limit of 99 bytes (raise it with --max-decompressed-size)"
        );
    }

    #[test]
    fn layouts_place_shared_code_objects_once_and_empty_archives_read() {
        let info = ArchiveInfo {
            group_name: "g".into(),
            gfx_arch_family: "gfx90a".into(),
            gfx_arches: vec!["gfx90a".into()],
            scheme: Scheme::ZstdPerKernel,
        };
        // No code object: the frame count is still there, and the archive reads.
        let empty = layout(&info, &[], &[]).unwrap();
        let mut bytes = empty.head.clone();
        bytes.extend_from_slice(&empty.count_field(info.scheme));
        bytes.extend_from_slice(&empty.toc);
        assert_eq!(empty.toc_offset, 68);
        let archive = Archive::parse(&bytes).unwrap();
        assert!(archive.entries.is_empty() && archive.stored.is_empty());
        // Two keys naming one stored code object.
        let code = [5u8; 40];
        let frame = compress_code_object(&code).unwrap();
        let entries: Vec<TocEntry> = ["a#0", "a#1"]
            .iter()
            .map(|key| TocEntry {
                key: key.to_string(),
                arch: "gfx90a".into(),
                ordinal: 0,
                original_size: 40,
                metadata: None,
            })
            .collect();
        let plan = layout(&info, &[frame.len() as u64], &entries).unwrap();
        let mut bytes = plan.head.clone();
        bytes.extend_from_slice(&plan.count_field(info.scheme));
        bytes.extend_from_slice(&plan.size_field(info.scheme, 0));
        bytes.extend_from_slice(&frame);
        bytes.extend_from_slice(&plan.toc);
        let archive = Archive::parse(&bytes).unwrap();
        for key in ["a#0", "a#1"] {
            let entry = archive.find(key, "gfx90a").unwrap();
            assert_eq!(&*archive.code_object(entry, 100).unwrap(), &code[..]);
        }
        assert_eq!(archive.stored.len(), 1);
    }

    #[test]
    fn a_wrong_original_size_is_caught() {
        let mut w = ArchiveWriter::new("g", "gfx900", &["gfx900"], Scheme::ZstdPerKernel);
        w.add("a#0", "gfx900", &[9; 50]).unwrap();
        let mut bytes = w.finish();
        // original_size 50 -> 51 (a positive fixint in the table).
        let at = bytes.len() - 1 - bytes.iter().rev().position(|b| *b == 50).unwrap();
        bytes[at] = 51;
        let archive = Archive::parse(&bytes).unwrap();
        let e = archive.find("a#0", "gfx900").unwrap();
        let err = archive.code_object(e, 1 << 20).unwrap_err();
        assert!(
            err.to_string().ends_with(
                "kpack entry a#0 @ gfx900 inflates to 50 bytes, but its original_size is 51"
            ),
            "{err}"
        );
    }

    #[test]
    fn damaged_archives_give_clear_errors() {
        let good = two_kernels(Scheme::None);
        let message = |bytes: &[u8]| Archive::parse(bytes).unwrap_err().to_string();
        assert_eq!(
            message(&good[..10]),
            "offset 0x0: truncated kpack header: needs 16 bytes, 10 left in the file"
        );
        let mut bad = good.clone();
        bad[0] = b'X';
        assert_eq!(
            message(&bad),
            "offset 0x0: not a kpack archive (no KPAK magic)"
        );
        let mut bad = good.clone();
        bad[4] = 2;
        assert_eq!(
            message(&bad),
            "offset 0x4: kpack archive version 2; only version 1 is known"
        );
        let mut bad = good.clone();
        bad[8..16].copy_from_slice(&10_000u64.to_le_bytes());
        assert_eq!(
            message(&bad),
            format!(
                "offset 0x8: kpack table of contents at 0x2710 starts past the end of the file ({:#x})",
                good.len()
            )
        );
        // The table cut short.
        let cut = &good[..good.len() - 3];
        assert!(message(cut).contains("truncated"), "{}", message(cut));
        // A blob that claims more than the file holds.
        let mut w = ArchiveWriter::new("g", "gfx900", &["gfx900"], Scheme::None);
        w.add("a#0", "gfx900", &[0; 1000]).unwrap();
        let mut bytes = w.finish();
        let toc_offset = 1064;
        let size_at = bytes.len() - 2;
        assert_eq!(bytes[size_at - 1..], [0xcd, 0x03, 0xe8]);
        bytes[size_at] = 0xff;
        assert_eq!(
            message(&bytes),
            format!(
                "offset {toc_offset:#x}: kpack code object 0 at 0x40, 65512 bytes, lies past the end of the file ({:#x})",
                bytes.len()
            )
        );
    }

    #[test]
    fn table_fields_are_checked() {
        let mut toc = Vec::new();
        msgpack::write_map_header(&mut toc, 2);
        msgpack::write_str(&mut toc, "gfx_arches");
        msgpack::write_uint(&mut toc, 3);
        msgpack::write_str(&mut toc, "compression_scheme");
        msgpack::write_str(&mut toc, "lz4");
        let mut file = vec![0u8; 64];
        file[..4].copy_from_slice(b"KPAK");
        file[4] = 1;
        file[8] = 64;
        file.extend_from_slice(&toc);
        assert_eq!(
            Archive::parse(&file).unwrap_err().to_string(),
            "offset 0x40: kpack compression scheme \"lz4\" is unknown (known: \"none\", \"zstd-per-kernel\")"
        );
        file.truncate(file.len() - 4);
        msgpack::write_str(&mut file, "none");
        assert_eq!(
            Archive::parse(&file).unwrap_err().to_string(),
            "offset 0x40: kpack toc.gfx_arches: expected an array, found integer"
        );
    }

    #[test]
    fn zstd_frame_lists_are_bounded() {
        let mut bytes = two_kernels(Scheme::ZstdPerKernel);
        bytes[64..68].copy_from_slice(&u32::MAX.to_le_bytes());
        let err = Archive::parse(&bytes).unwrap_err();
        assert_eq!(err.offset, 64);
        assert!(err.to_string().contains("kpack zstd frame list"), "{err}");
        let mut bytes = two_kernels(Scheme::ZstdPerKernel);
        bytes[68..72].copy_from_slice(&100_000u32.to_le_bytes());
        let err = Archive::parse(&bytes).unwrap_err();
        assert_eq!(err.offset, 72);
        assert!(
            err.to_string().contains("kpack zstd frame 0 at 0x48"),
            "{err}"
        );
    }

    #[test]
    fn references_round_trip_and_match_the_splitter() {
        // The bytes AMD's splitter wrote for a library (msgpack-python, keys in its order).
        let written = b"\x82\xb2kpack_search_paths\x91\xbf../.kpack/k_lib_@GFXARCH@.kpack\
\xabkernel_name\xb1stage/lib/libk.so";
        let reference = KpackRef::parse(written).unwrap();
        assert_eq!(reference.kernel_name, "stage/lib/libk.so");
        assert_eq!(
            reference.kpack_search_paths,
            ["../.kpack/k_lib_@GFXARCH@.kpack"]
        );
        assert_eq!(reference.to_bytes(), written);
        let mut padded = written.to_vec();
        padded.extend_from_slice(&[0xc1; 8]);
        assert_eq!(KpackRef::parse(&padded).unwrap(), reference);
    }

    #[test]
    fn bad_references_are_refused() {
        let message = |bytes: &[u8]| KpackRef::parse(bytes).unwrap_err().to_string();
        assert_eq!(
            message(b"\x81\xabkernel_name\x01"),
            "offset 0x0: kpack reference.kernel_name: expected a string, found integer"
        );
        let paths = |array: &[u8]| {
            let mut bytes = b"\x82\xabkernel_name\xa1a\xb2kpack_search_paths".to_vec();
            bytes.extend_from_slice(array);
            message(&bytes)
        };
        let expected = "offset 0x0: kpack reference.kpack_search_paths: expected at least one \
                        path (a UTF-8 string), found";
        // A number, a float, a string that is not UTF-8: none is a path.
        for array in [&b"\x91\x01"[..], b"\x91\xca\0\0\0\0", b"\x91\xa2\xff\xfe"] {
            assert_eq!(
                paths(array),
                format!("{expected} an array with no UTF-8 string")
            );
        }
        assert_eq!(paths(b"\x90"), format!("{expected} an empty array"));
        assert_eq!(
            message(b"\x82\xabkernel_name\xff\xb2kpack_search_paths\x91\xa1a"),
            "offset 0x0: kpack reference.kernel_name: expected a string, found negative integer"
        );
        assert_eq!(
            message(b"\x92"),
            "offset 0x0: msgpack: array of 2 elements cannot fit in the 0 bytes left"
        );
    }

    #[test]
    fn wrappers() {
        let mut w = [0u8; 24];
        w[..4].copy_from_slice(b"HIPK");
        w[4] = 1;
        w[8..16].copy_from_slice(&0xe000u64.to_le_bytes());
        w[16] = 3;
        assert_eq!(
            HipWrapper::parse(&w).unwrap(),
            Wrapped::Kpack {
                reference: 0xe000,
                index: 3
            }
        );
        w[..4].copy_from_slice(&HIPF_MAGIC.to_le_bytes());
        assert_eq!(
            HipWrapper::parse(&w).unwrap(),
            Wrapped::Bundle { binary: 0xe000 }
        );
        w[..4].copy_from_slice(b"ABCD");
        assert_eq!(
            HipWrapper::parse(&w).unwrap_err().to_string(),
            "offset 0x0: HIP wrapper magic 0x44434241 is neither HIPF nor HIPK"
        );
        assert!(HipWrapper::parse(&w[..20]).is_err());
    }

    #[test]
    fn keys() {
        assert_eq!(toc_key("lib/a.so", 3), "lib/a.so#3");
        assert_eq!(split_toc_key("lib/a#b.so#12"), Some(("lib/a#b.so", 12)));
        assert_eq!(split_toc_key("lib/a.so"), None);
    }
}
