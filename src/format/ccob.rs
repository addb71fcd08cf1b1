//! Compressed bundles (`CCOB`): a small header, then a zlib or zstd stream of a whole bundle.
//!
//! | version | header (little-endian)                                                        | size |
//! |---------|-------------------------------------------------------------------------------|------|
//! | 1       | magic, u16 version, u16 method, u32 uncompressed size, u64 hash               | 20   |
//! | 2       | magic, u16 version, u16 method, u32 total size, u32 uncompressed size, u64 hash | 24 |
//! | 3       | magic, u16 version, u16 method, u64 total size, u64 uncompressed size, u64 hash | 32 |
//!
//! The method is 0 for zlib and 1 for zstd. The hash is the first 8 bytes of the MD5 digest of
//! the uncompressed bytes, read as a little-endian integer. The total size counts the header
//! and the compressed payload of this bundle only, which is how bundles placed one after
//! another are told apart (their payloads may contain the bytes `CCOB`). Version 1 has no
//! total size: its payload runs to the end of the data.
//!
//! # Example
//!
//! Compress a bundle, check its header, and inflate it back.
//!
//! ```
//! use offload::format::bundle;
//! use offload::format::ccob::{self, CompressOptions, CompressedBundle, Method};
//!
//! let entries: [(&str, &[u8]); 1] = [("hipv4-amdgcn-amd-amdhsa--gfx1100", &[7; 1000])];
//! let plain = bundle::to_vec(&entries, 8);
//! let options = CompressOptions { method: Method::Zlib, level: 9, version: 3 };
//! let (packed, stats) = ccob::compress(&plain, &options).unwrap();
//! assert!(ccob::is_compressed(&packed));
//! assert_eq!(stats.uncompressed, plain.len() as u64);
//! assert_eq!(stats.total, packed.len() as u64);
//! assert!(packed.len() < plain.len());
//!
//! let stored = CompressedBundle::parse(&packed).unwrap().expect("a compressed bundle");
//! assert_eq!(stored.size(), packed.len() as u64);
//! assert_eq!(stored.decompress(ccob::DEFAULT_MAX_DECOMPRESSED).unwrap(), plain);
//! // A limit below the declared size refuses to inflate it.
//! assert!(stored.decompress(16).is_err());
//! ```

use crate::format::bundle::{BundleExtent, EntryRecord, Extent};
use crate::format::error::{Error, ErrorKind, Result};
use crate::format::hashing::{self, HashHere, Hashing};
use crate::format::inflate;
use crate::format::md5::Md5;
use object::endian::{LittleEndian as Le, U16, U32, U64};
use object::pod::{self, Pod};
use std::cell::RefCell;
use std::io::{self, Read, Write};
use std::mem::size_of;

/// The magic that starts a compressed bundle.
pub const MAGIC: &[u8; 4] = b"CCOB";

/// The default cap on the size of a decompressed bundle: 16 GiB.
pub const DEFAULT_MAX_DECOMPRESSED: u64 = 16 << 30;

/// The compression method of a compressed bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// A zlib stream (method 0).
    Zlib,
    /// A zstd frame (method 1).
    Zstd,
}

impl Method {
    /// The value stored in the header.
    pub fn code(self) -> u16 {
        match self {
            Method::Zlib => 0,
            Method::Zstd => 1,
        }
    }

    /// The method stored as `code`.
    pub fn from_code(code: u16) -> Option<Method> {
        match code {
            0 => Some(Method::Zlib),
            1 => Some(Method::Zstd),
            _ => None,
        }
    }

    /// The name LLVM prints: `zlib` or `zstd`.
    pub fn name(self) -> &'static str {
        match self {
            Method::Zlib => "zlib",
            Method::Zstd => "zstd",
        }
    }

    /// The level used when none is given: 6 for zlib, 3 for zstd.
    pub fn default_level(self) -> i32 {
        match self {
            Method::Zlib => 6,
            Method::Zstd => 3,
        }
    }
}

/// The header of version 1 (20 bytes): no total size, 32-bit uncompressed size.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct HeaderV1 {
    magic: [u8; 4],
    version: U16<Le>,
    method: U16<Le>,
    uncompressed_size: U32<Le>,
    hash: U64<Le>,
}

/// The header of version 2 (24 bytes): 32-bit total and uncompressed sizes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct HeaderV2 {
    magic: [u8; 4],
    version: U16<Le>,
    method: U16<Le>,
    total_size: U32<Le>,
    uncompressed_size: U32<Le>,
    hash: U64<Le>,
}

/// The header of version 3 (32 bytes): 64-bit total and uncompressed sizes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct HeaderV3 {
    magic: [u8; 4],
    version: U16<Le>,
    method: U16<Le>,
    total_size: U64<Le>,
    uncompressed_size: U64<Le>,
    hash: U64<Le>,
}

// SAFETY: the headers hold byte arrays only (alignment 1, no padding), and every bit pattern
// is a valid value.
unsafe impl Pod for HeaderV1 {}
// SAFETY: as above.
unsafe impl Pod for HeaderV2 {}
// SAFETY: as above.
unsafe impl Pod for HeaderV3 {}

/// Field offsets shared by every version, for error positions.
mod field_at {
    pub const VERSION: usize = 4;
    pub const METHOD: u64 = 6;
    pub const TOTAL_SIZE: u64 = 8;
}

/// Header size of each version, in memory terms.
fn header_len(version: u16) -> Option<usize> {
    match version {
        1 => Some(size_of::<HeaderV1>()),
        2 => Some(size_of::<HeaderV2>()),
        3 => Some(size_of::<HeaderV3>()),
        _ => None,
    }
}

/// Header size of each version.
pub fn header_size(version: u16) -> Option<u64> {
    header_len(version).map(|len| len as u64)
}

/// Whether `data` starts with the compressed bundle magic.
pub fn is_compressed(data: &[u8]) -> bool {
    data.starts_with(MAGIC)
}

/// The truncated MD5 hash stored in compressed bundle headers.
pub fn truncated_md5(data: &[u8]) -> u64 {
    first_eight(&Md5::digest(data))
}

/// [`truncated_md5`] of each of `messages`, several hashed at once (each in a lane of the
/// vector registers, several times faster than one after another), taken in the order given: `done` is handed each hash with
/// its message's index as soon as it is known.
pub fn truncated_md5s(messages: &[&[u8]], mut done: impl FnMut(usize, u64)) {
    crate::format::md5_lanes::digests(messages, |index, digest| {
        done(index, first_eight(&digest));
    });
}

/// The first 8 bytes of an MD5 digest, read as a little-endian integer.
fn first_eight(digest: &[u8; 16]) -> u64 {
    let [a, b, c, d, e, f, g, h, ..] = *digest;
    u64::from_le_bytes([a, b, c, d, e, f, g, h])
}

/// A parsed compressed bundle header and its payload, borrowing the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressedBundle<'a> {
    /// Format version: 1, 2 or 3.
    pub version: u16,
    /// Compression method.
    pub method: Method,
    /// Total size (header and payload) from the header; `None` for version 1.
    pub total_size: Option<u64>,
    /// Declared size of the uncompressed bundle.
    pub uncompressed_size: u64,
    /// Stored truncated MD5 of the uncompressed bundle.
    pub hash: u64,
    /// The compressed payload.
    pub payload: &'a [u8],
}

/// The header fields every version holds, widened to 64 bits; `None` total size for version 1.
struct Fields {
    method: u16,
    total_size: Option<u64>,
    uncompressed_size: u64,
    hash: u64,
}

/// The version field of the compressed bundle at the start of `data`.
fn read_version(data: &[u8]) -> Result<u16> {
    let at = field_at::VERSION;
    let found = data
        .get(at..)
        .and_then(|rest| pod::from_bytes::<U16<Le>>(rest).ok());
    match found {
        Some((version, _)) => Ok(version.get(Le)),
        None => Err(Error::new(
            at as u64,
            ErrorKind::Truncated {
                what: "compressed bundle version",
                needed: size_of::<U16<Le>>() as u64,
                available: data.len().saturating_sub(at) as u64,
            },
        )),
    }
}

/// The header of `version` at the start of `data`, or the error that `data` is too short for it.
fn read_header<T: Pod>(data: &[u8], version: u16) -> Result<&T> {
    match pod::from_bytes::<T>(data) {
        Ok((header, _)) => Ok(header),
        Err(()) => Err(Error::new(
            0,
            ErrorKind::HeaderTooSmall {
                version,
                needed: size_of::<T>() as u64,
                available: data.len() as u64,
            },
        )),
    }
}

/// The fields of the header of `version` at the start of `data`.
fn read_fields(data: &[u8], version: u16) -> Result<Fields> {
    Ok(match version {
        1 => {
            let h = read_header::<HeaderV1>(data, version)?;
            Fields {
                method: h.method.get(Le),
                total_size: None,
                uncompressed_size: u64::from(h.uncompressed_size.get(Le)),
                hash: h.hash.get(Le),
            }
        }
        2 => {
            let h = read_header::<HeaderV2>(data, version)?;
            Fields {
                method: h.method.get(Le),
                total_size: Some(u64::from(h.total_size.get(Le))),
                uncompressed_size: u64::from(h.uncompressed_size.get(Le)),
                hash: h.hash.get(Le),
            }
        }
        3 => {
            let h = read_header::<HeaderV3>(data, version)?;
            Fields {
                method: h.method.get(Le),
                total_size: Some(h.total_size.get(Le)),
                uncompressed_size: h.uncompressed_size.get(Le),
                hash: h.hash.get(Le),
            }
        }
        _ => {
            return Err(Error::new(
                field_at::VERSION as u64,
                ErrorKind::UnknownCompressedVersion(version),
            ))
        }
    })
}

impl<'a> CompressedBundle<'a> {
    /// Parses the compressed bundle at the start of `data`: `Ok(None)` if `data` does not start
    /// with the magic. For versions 2 and 3 the payload ends at the header's total size; for
    /// version 1 it runs to the end of `data`.
    pub fn parse(data: &'a [u8]) -> Result<Option<CompressedBundle<'a>>> {
        if !is_compressed(data) {
            return Ok(None);
        }
        let version = read_version(data)?;
        let fields = read_fields(data, version)?;
        let method = Method::from_code(fields.method).ok_or_else(|| {
            Error::new(
                field_at::METHOD,
                ErrorKind::UnknownCompressionMethod(fields.method),
            )
        })?;
        let header = header_len(version).unwrap_or(0);
        let payload = match fields.total_size {
            None => data.get(header..),
            Some(total) => usize::try_from(total)
                .ok()
                .filter(|end| *end >= header)
                .and_then(|end| data.get(header..end)),
        };
        let payload = payload.ok_or_else(|| {
            Error::new(
                field_at::TOTAL_SIZE,
                ErrorKind::BadTotalSize {
                    total: fields.total_size.unwrap_or(0),
                    header: header as u64,
                    available: data.len() as u64,
                },
            )
        })?;
        Ok(Some(CompressedBundle {
            version,
            method,
            total_size: fields.total_size,
            uncompressed_size: fields.uncompressed_size,
            hash: fields.hash,
            payload,
        }))
    }

    /// The compression level the stream shows, where it names one: a zlib stream's header
    /// keeps a level class (`FLEVEL`) whose classes 0 and 2 stand for levels 0 or 1 and 6
    /// alone (zlib's deflate, level 0 only writing stored blocks); a zstd frame keeps no level.
    pub fn known_level(&self) -> Option<i32> {
        if self.method != Method::Zlib {
            return None;
        }
        let [_, flags, first, ..] = *self.payload else {
            return None;
        };
        match flags >> 6 {
            // The first block's type (bits 1-2 of its first byte): 0 is a stored block.
            0 if (first >> 1) & 3 == 0 => Some(0),
            0 => Some(1),
            2 => Some(6),
            _ => None,
        }
    }

    /// Size of the header.
    pub fn header_size(&self) -> u64 {
        header_size(self.version).unwrap_or(0)
    }

    /// Bytes this bundle occupies: header and payload.
    pub fn size(&self) -> u64 {
        self.header_size() + self.payload.len() as u64
    }

    /// Decompresses the payload, refusing to produce more than `limit` bytes whatever the
    /// header declares, and checks the result against the declared size and the stored hash.
    /// All of it is returned: [`CompressedBundle::inflate_bundle`] keeps only the bundle.
    pub fn decompress(&self, limit: u64) -> Result<Vec<u8>> {
        let at = self.header_size();
        let cap = self.uncompressed_size.min(limit);
        let mut out = Vec::new();
        self.inflate(limit, Decoding::Fresh, |piece| {
            inflate::append(&mut out, piece, cap, at)
        })?;
        Ok(out)
    }

    /// Decompresses the payload as [`CompressedBundle::decompress`] does (the same limit, the
    /// same checks of the whole stream's size and hash) but keeps only the bundle it starts
    /// with, as LLVM's unbundler reads only that: the bytes up to the end of its header or of
    /// its furthest payload. What follows is inflated through a window and hashed, never held,
    /// so a few bytes that inflate to gigabytes of padding cost no memory.
    ///
    /// `Ok(Err(e))` is a sound stream whose bundle has a damaged header: `e` is what
    /// [`Bundle::parse`](crate::format::bundle::Bundle::parse) says of the whole stream, at an offset
    /// in it. A stream that does not start with a bundle (a text bundle, an object) is
    /// returned whole.
    pub fn inflate_bundle(&self, limit: u64) -> Result<Result<Vec<u8>>> {
        let mut out = Vec::new();
        let cap = self.uncompressed_size.min(limit);
        let at = self.header_size();
        let kept =
            self.inflate_bundle_to(limit, |piece| inflate::append(&mut out, piece, cap, at))?;
        out.shrink_to_fit();
        Ok(kept.map(|_| out))
    }

    /// Inflates as [`CompressedBundle::inflate_bundle`] does, handing `sink` the bytes it
    /// would keep, in order, instead of holding them: only the bundle's header is held until
    /// the bundle's end is known. Returns how many bytes `sink` took; `Ok(Err(e))` as
    /// `inflate_bundle` (then `sink` took nothing).
    pub fn inflate_bundle_to(
        &self,
        limit: u64,
        sink: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<Result<u64>> {
        self.inflate_bundle_with(limit, Decoding::Fresh, sink)
    }

    /// [`CompressedBundle::inflate_bundle_to`] with the decoder `decoding` says: given room
    /// ([`Decoding::Into`]), a large zstd stream is inflated there at once and handed on from
    /// there, which needs no window (for a frame made in one piece, as large as the stream).
    pub fn inflate_bundle_with(
        &self,
        limit: u64,
        decoding: Decoding<'_>,
        mut sink: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<Result<u64>> {
        let at = self.header_size();
        let mut extent = BundleExtent::new(self.uncompressed_size);
        let mut keep = Keep::Unknown;
        let mut head = Vec::new();
        let mut given = 0u64;
        let mut damage = None;
        self.inflate(limit, decoding, |piece| {
            if keep == Keep::Unknown {
                let cap = self.uncompressed_size.min(limit);
                inflate::append(&mut head, piece, cap, at)?;
                keep = match extent.advance(&head) {
                    Ok(Extent::Unknown) => return Ok(()),
                    Ok(Extent::NotABundle) => Keep::All,
                    Ok(Extent::Ends(end)) => Keep::UpTo(end),
                    Err(e) => {
                        damage = Some(e);
                        head = Vec::new();
                        keep = Keep::UpTo(0);
                        return Ok(());
                    }
                };
                let held = std::mem::take(&mut head);
                let piece = match keep {
                    Keep::UpTo(end) => inflate::at_most(&held, end),
                    _ => &held[..],
                };
                given += piece.len() as u64;
                return sink(piece);
            }
            if damage.is_some() {
                return Ok(());
            }
            let piece = match keep {
                Keep::UpTo(end) => inflate::at_most(piece, end.saturating_sub(given)),
                Keep::All | Keep::Unknown => piece,
            };
            if piece.is_empty() {
                return Ok(());
            }
            given += piece.len() as u64;
            sink(piece)
        })?;
        if let Some(e) = damage {
            return Ok(Err(e));
        }
        if keep == Keep::Unknown && !head.is_empty() {
            // The stream ended before the bundle's header did: kept whole, as before.
            given += head.len() as u64;
            sink(&head)?;
        }
        Ok(Ok(given))
    }

    /// Inflates the payload through a window, handing `keep` the bytes within the declared size
    /// piece by piece, then checks the stream against the declared size and the stored hash.
    /// Bytes past the declared size are only counted, up to `limit`. A large stream is hashed
    /// on a thread of its own as it is inflated ([`hashing::aside`]).
    fn inflate(
        &self,
        limit: u64,
        decoding: Decoding<'_>,
        mut keep: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let decoding = match decoding {
            Decoding::Into(context, rooms)
                if self.method == Method::Zstd && self.uncompressed_size >= inflate::ROOM_FROM =>
            {
                let declared = self.uncompressed_size;
                if let Some(room) = inflate::zstd_in_room(self.payload, declared, context, rooms) {
                    let bytes = room.bytes();
                    let (kept, digest) = hashing::beside(bytes, &mut keep);
                    kept?;
                    let failed = || {
                        let at = self.header_size();
                        Error::new(at, ErrorKind::Decompress("hashing failed".into()))
                    };
                    return self.check(bytes.len() as u64, &digest.ok_or_else(failed)?);
                }
                // Damaged, or no room: inflated again through a window to tell how, one such
                // stream at a time.
                let _alone = WINDOWED.lock().unwrap_or_else(|e| e.into_inner());
                return self.inflate(limit, Decoding::Fresh, keep);
            }
            other => other,
        };
        let at = self.header_size();
        let mut reader = self.reader(decoding)?;
        // Sized by the limit, not the declared size: a stream that runs past what it declares
        // is still read to the limit, to tell how long it is.
        let len = inflate::window_len(limit);
        let (total, digest) = if self.uncompressed_size >= hashing::ASIDE_FROM {
            let (total, digest) = hashing::aside(len, |hashing| {
                self.pump(&mut reader, limit, &mut keep, hashing)
            });
            let failed = || Error::new(at, ErrorKind::Decompress("hashing failed".into()));
            (total?, digest.ok_or_else(failed)?)
        } else {
            let mut here = HashHere::new(len);
            let total = self.pump(&mut reader, limit, &mut keep, &mut here)?;
            (total, here.finish())
        };
        self.check(total, &digest)
    }

    /// Checks that a stream inflated to `total` bytes of MD5 `digest` is the one the header
    /// declares.
    fn check(&self, total: u64, digest: &[u8; 16]) -> Result<()> {
        let at = self.header_size();
        if total != self.uncompressed_size {
            return Err(Error::new(
                at,
                ErrorKind::SizeMismatch {
                    declared: self.uncompressed_size,
                    actual: total,
                },
            ));
        }
        let computed = first_eight(digest);
        if computed != self.hash {
            return Err(Error::new(
                at,
                ErrorKind::HashMismatch {
                    stored: self.hash,
                    computed,
                },
            ));
        }
        Ok(())
    }

    /// Inflates `reader` to its end into the windows of `hashing`, handing `keep` and then
    /// `hashing` the bytes within the declared size; returns how many bytes the stream held.
    fn pump(
        &self,
        reader: &mut dyn Read,
        limit: u64,
        keep: &mut dyn FnMut(&[u8]) -> Result<()>,
        hashing: &mut dyn Hashing,
    ) -> Result<u64> {
        let at = self.header_size();
        let failed = |e: io::Error| Error::new(at, ErrorKind::Decompress(e.to_string()));
        let mut total = 0u64;
        loop {
            let mut window = hashing.window();
            let n = inflate::read_some(reader, &mut window).map_err(failed)?;
            if n == 0 {
                return Ok(total);
            }
            let declared_left = self.uncompressed_size.saturating_sub(total);
            total += n as u64;
            if total > limit {
                return Err(Error::new(at, ErrorKind::TooLarge { limit }));
            }
            let within = inflate::at_most(&window, (n as u64).min(declared_left)).len();
            keep(inflate::at_most(&window, within as u64))?;
            hashing.hash(window, within);
        }
    }
}

/// A zstd decoder's state, kept from one stream to the next so that its window (as large as
/// the stream, up to 128 MiB) is not allocated, and its pages not touched anew, for each.
pub type ZstdContext = zstd::zstd_safe::DCtx<'static>;

/// zstd streams inflated whole in the room of [`Decoding::Into`]: those declaring this many
/// bytes or more.
pub const INFLATE_IN_ROOM_FROM: u64 = inflate::ROOM_FROM;

/// Gives room of at least a size in bytes for [`Decoding::Into`].
pub type RoomFor<'c> = dyn Fn(usize) -> io::Result<Box<dyn inflate::Room>> + Sync + 'c;

/// Held while a stream that failed to inflate in room is inflated again through a window, so
/// that damaged streams take one window at a time, however many threads meet them.
static WINDOWED: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Which decoder inflates a stream.
pub enum Decoding<'c> {
    /// A new one, dropped after the stream.
    Fresh,
    /// This zstd context, kept by the caller (a zlib stream needs none).
    Reusing(&'c mut ZstdContext),
    /// This zstd context, and room from the caller for a zstd stream inflated whole that
    /// declares at least [`INFLATE_IN_ROOM_FROM`] bytes: inflated there at once, it needs no
    /// window (which is as large as the stream for a frame made in one piece).
    Into(&'c mut ZstdContext, &'c RoomFor<'c>),
}

/// The decoder of `payload`, a zstd frame when `zstd` (with the decoder `decoding` says), else
/// a zlib stream; an error is placed at `at`, where the payload starts.
pub(crate) fn decoder<'s>(
    payload: &'s [u8],
    zstd: bool,
    decoding: Decoding<'s>,
    at: u64,
) -> Result<Box<dyn Read + 's>> {
    Ok(match (zstd, decoding) {
        (true, Decoding::Fresh) => Box::new(
            zstd::stream::read::Decoder::with_buffer(payload)
                .map_err(|e| Error::new(at, ErrorKind::Decompress(e.to_string())))?,
        ),
        (true, Decoding::Reusing(context) | Decoding::Into(context, _)) => {
            Box::new(zstd::stream::read::Decoder::with_context(payload, context))
        }
        (false, _) => Box::new(flate2::read::ZlibDecoder::new(payload)),
    })
}

/// Bytes inflated at a time while looking for a bundle's header: its records take a few KiB,
/// and zstd hands out a block (at most 128 KiB) at a time anyway.
const HEAD_WINDOW: usize = 64 << 10;

/// What the first bytes of a compressed bundle's stream tell, from
/// [`CompressedBundle::inflate_head`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    /// The stream starts with a bundle: the records of its header, and where it ends in the
    /// stream (the end of its header or of its furthest payload).
    Bundle {
        /// The entries, in header order.
        entries: Vec<EntryRecord>,
        /// Where the bundle ends in the stream.
        end: u64,
    },
    /// The stream holds no bundle at its start (a text bundle, an object): what
    /// [`CompressedBundle::inflate_bundle`] gives, the whole stream, checked.
    Whole(Vec<u8>),
}

impl CompressedBundle<'_> {
    /// The decoder of the payload.
    fn reader<'s>(&'s self, decoding: Decoding<'s>) -> Result<Box<dyn Read + 's>> {
        let zstd = self.method == Method::Zstd;
        decoder(self.payload, zstd, decoding, self.header_size())
    }

    /// Refuses a bundle that declares more than `limit` bytes before anything is inflated.
    fn check_declared(&self, limit: u64) -> Result<()> {
        if self.uncompressed_size > limit {
            return Err(Error::new(
                self.header_size(),
                ErrorKind::TooLarge { limit },
            ));
        }
        Ok(())
    }

    /// Inflates the stream only until the header of the bundle it starts with is complete,
    /// and reads its records: a listing needs no more, whatever the bundle's size. Nothing is
    /// hashed then, except in a stream that declares no more than a window (64 KiB): that one
    /// is inflated whole and checked as [`CompressedBundle::decompress`] checks it, which
    /// costs no more than its header. A bundle declaring more than `limit`
    /// bytes is refused, and a header that is damaged (or claims payloads past the declared
    /// size) is the error [`Bundle::parse`](crate::format::bundle::Bundle::parse) gives for the whole
    /// stream.
    pub fn inflate_head(&self, limit: u64) -> Result<Head> {
        self.check_declared(limit)?;
        if self.uncompressed_size <= HEAD_WINDOW as u64 {
            return self.inflate_small(limit);
        }
        if self.method != Method::Zstd {
            return self.head_with(limit, Decoding::Fresh);
        }
        HEAD_DECODER.with(|cell| match cell.try_borrow_mut() {
            Ok(mut kept) => {
                let context = kept.get_or_insert_with(ZstdContext::create);
                self.head_with(limit, Decoding::Reusing(context))
            }
            Err(_) => self.head_with(limit, Decoding::Fresh),
        })
    }

    /// [`CompressedBundle::inflate_head`] of a stream larger than a window, with the decoder
    /// `decoding` gives.
    fn head_with(&self, limit: u64, decoding: Decoding<'_>) -> Result<Head> {
        let at = self.header_size();
        let failed = |e: io::Error| Error::new(at, ErrorKind::Decompress(e.to_string()));
        let mut reader = self.reader(decoding)?;
        let mut extent = BundleExtent::new(self.uncompressed_size);
        let mut prefix = Vec::new();
        let mut window = vec![0; HEAD_WINDOW];
        let end = loop {
            let n = inflate::read_some(&mut reader, &mut window).map_err(failed)?;
            let room = self.uncompressed_size.saturating_sub(prefix.len() as u64);
            let piece = inflate::at_most(inflate::at_most(&window, n as u64), room);
            inflate::append(&mut prefix, piece, self.uncompressed_size, at)?;
            match extent.advance(&prefix)? {
                Extent::Unknown if n > 0 => continue,
                // Cut short inside the header, or no bundle: the whole stream says which.
                Extent::Unknown | Extent::NotABundle => {
                    return Ok(Head::Whole(self.inflate_bundle(limit)??));
                }
                Extent::Ends(end) => break end,
            }
        };
        Ok(Head::Bundle {
            entries: extent.entries().to_vec(),
            end,
        })
    }

    /// [`CompressedBundle::inflate_head`] of a stream no longer than a window: inflated whole
    /// and checked, since that costs no more than its header.
    fn inflate_small(&self, limit: u64) -> Result<Head> {
        let plain = self.inflate_bundle(limit)??;
        Ok(match crate::format::bundle::Bundle::parse(&plain)? {
            Some(bundle) => Head::Bundle {
                entries: bundle.records(),
                end: bundle.size(),
            },
            None => Head::Whole(plain),
        })
    }

    /// Inflates the stream up to `end` (a position in it) and hands `sink` each piece with its
    /// position, never holding more than a window of it (a large zstd stream given room, with
    /// [`Decoding::Into`], is inflated that far into the room instead, which needs no window,
    /// and handed on from there). The stream must reach `end` within its declared size. When
    /// `end` is the declared size, the stream is read to its end and checked (size and hash)
    /// in the same pass; short of it, nothing is hashed.
    pub fn inflate_prefix(
        &self,
        limit: u64,
        end: u64,
        decoding: Decoding<'_>,
        mut sink: impl FnMut(u64, &[u8]) -> Result<()>,
    ) -> Result<()> {
        self.check_declared(limit)?;
        let mut position = 0u64;
        if end >= self.uncompressed_size {
            return self.inflate(limit, decoding, |piece| {
                sink(position, piece)?;
                position += piece.len() as u64;
                Ok(())
            });
        }
        let decoding = match decoding {
            Decoding::Into(context, rooms)
                if self.method == Method::Zstd && self.uncompressed_size >= inflate::ROOM_FROM =>
            {
                let (payload, declared) = (self.payload, self.uncompressed_size);
                if let Some(room) =
                    inflate::zstd_prefix_in_room(payload, declared, end, context, rooms)
                {
                    let made = inflate::at_most(room.bytes(), end);
                    for piece in made.chunks(inflate::WINDOW) {
                        sink(position, piece)?;
                        position += piece.len() as u64;
                    }
                    return Ok(());
                }
                // Damaged, or no room: inflated again through a window to tell how, one such
                // stream at a time.
                let _alone = WINDOWED.lock().unwrap_or_else(|e| e.into_inner());
                return self.inflate_prefix(limit, end, Decoding::Fresh, sink);
            }
            other => other,
        };
        let at = self.header_size();
        let failed = |e: io::Error| Error::new(at, ErrorKind::Decompress(e.to_string()));
        let mut reader = self.reader(decoding)?;
        let mut window = inflate::window(end);
        while position < end {
            let n = inflate::read_some(&mut reader, &mut window).map_err(failed)?;
            if n == 0 {
                return Err(Error::new(
                    at,
                    ErrorKind::SizeMismatch {
                        declared: self.uncompressed_size,
                        actual: position,
                    },
                ));
            }
            let piece = inflate::at_most(&window, (n as u64).min(end - position));
            sink(position, piece)?;
            position += piece.len() as u64;
        }
        Ok(())
    }

    /// Inflates the whole stream and checks it against the declared size and the stored
    /// hash, holding no more than a window of it.
    pub fn verify(&self, limit: u64, decoding: Decoding<'_>) -> Result<()> {
        self.check_declared(limit)?;
        self.inflate(limit, decoding, |_| Ok(()))
    }
}

/// How much of an inflating stream [`CompressedBundle::inflate_bundle`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// Everything so far: where the bundle ends is not known yet.
    Unknown,
    /// Everything: the stream does not start with a bundle.
    All,
    /// The bytes before this offset.
    UpTo(u64),
}

/// Compressed bundles placed one after another, split by each header's total size. Zero bytes
/// between them (linker alignment padding) are skipped; anything else is an error. Version 1
/// bundles carry no size and so end the sequence.
pub struct CompressedBundles<'a> {
    data: &'a [u8],
    pos: usize,
    failed: bool,
}

/// Iterates over the compressed bundles in `data`, with the offset of each.
pub fn split(data: &[u8]) -> CompressedBundles<'_> {
    CompressedBundles {
        data,
        pos: 0,
        failed: false,
    }
}

impl<'a> Iterator for CompressedBundles<'a> {
    type Item = Result<(u64, CompressedBundle<'a>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let rest = self.data.get(self.pos..)?;
        let skip = rest.iter().position(|b| *b != 0)?;
        let at = self.pos + skip;
        let here = rest.get(skip..)?;
        let result = match CompressedBundle::parse(here) {
            Ok(Some(bundle)) => {
                self.pos = at + header_len(bundle.version).unwrap_or(0) + bundle.payload.len();
                Ok((at as u64, bundle))
            }
            Ok(None) => Err(Error::new(
                at as u64,
                ErrorKind::Decompress(
                    "data after a compressed bundle is not another compressed bundle".into(),
                ),
            )),
            Err(e) => Err(e.rebased(at as u64)),
        };
        self.failed = result.is_err();
        Some(result)
    }
}

/// How to write a compressed bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressOptions {
    /// Compression method.
    pub method: Method,
    /// Compression level (zstd clamps it to its range; zlib takes 0 to 9, -1 for default).
    pub level: i32,
    /// Header version to write: 1, 2 or 3 (version 1 has no total size, so a reader takes
    /// its stream to run to the end of the data).
    pub version: u16,
}

impl Default for CompressOptions {
    fn default() -> Self {
        CompressOptions {
            method: Method::Zstd,
            level: Method::Zstd.default_level(),
            version: 2,
        }
    }
}

impl CompressOptions {
    /// The header version LLVM `llvm`'s clang-offload-bundler writes unless told otherwise:
    /// 2 for LLVM 19, 3 from LLVM 22 on.
    pub fn default_version(llvm: crate::target::processor::LlvmVersion) -> u16 {
        match llvm {
            crate::target::processor::LlvmVersion::V19 => 2,
            crate::target::processor::LlvmVersion::V22
            | crate::target::processor::LlvmVersion::V23 => 3,
        }
    }

    /// Refuses a bundle of `uncompressed` bytes that this header version cannot describe
    /// (versions 1 and 2 hold sizes in 32 bits): checked before any input is read or compressed.
    pub fn check_size(&self, uncompressed: u64) -> Result<()> {
        let what = match self.version {
            1 => VERSION_1_UNCOMPRESSED_SIZE,
            2 => VERSION_2_UNCOMPRESSED_SIZE,
            _ => return Ok(()),
        };
        if u32::try_from(uncompressed).is_err() {
            return Err(Error::new(
                0,
                ErrorKind::FieldOverflow {
                    what,
                    value: uncompressed,
                },
            ));
        }
        Ok(())
    }
}

/// The field a version 2 header cannot hold more than 4 GiB in.
const VERSION_2_UNCOMPRESSED_SIZE: &str = "version 2 uncompressed size";
/// The field a version 1 header cannot hold more than 4 GiB in.
const VERSION_1_UNCOMPRESSED_SIZE: &str = "version 1 uncompressed size";

/// Figures about one compression, for verbose output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressStats {
    /// Size before compression.
    pub uncompressed: u64,
    /// Size of the whole compressed bundle, header included.
    pub total: u64,
    /// The truncated MD5 stored.
    pub hash: u64,
}

/// Builds the header of a compressed bundle.
pub fn header(
    options: &CompressOptions,
    total: u64,
    uncompressed: u64,
    hash: u64,
) -> Result<Vec<u8>> {
    let version = U16::new(Le, options.version);
    let method = U16::new(Le, options.method.code());
    let narrow = |what, value: u64| {
        u32::try_from(value).map_err(|_| Error::new(0, ErrorKind::FieldOverflow { what, value }))
    };
    match options.version {
        1 => {
            let header = HeaderV1 {
                magic: *MAGIC,
                version,
                method,
                uncompressed_size: U32::new(Le, narrow(VERSION_1_UNCOMPRESSED_SIZE, uncompressed)?),
                hash: U64::new(Le, hash),
            };
            Ok(pod::bytes_of(&header).to_vec())
        }
        2 => {
            let header = HeaderV2 {
                magic: *MAGIC,
                version,
                method,
                total_size: U32::new(Le, narrow("version 2 total size", total)?),
                uncompressed_size: U32::new(Le, narrow(VERSION_2_UNCOMPRESSED_SIZE, uncompressed)?),
                hash: U64::new(Le, hash),
            };
            Ok(pod::bytes_of(&header).to_vec())
        }
        3 => {
            let header = HeaderV3 {
                magic: *MAGIC,
                version,
                method,
                total_size: U64::new(Le, total),
                uncompressed_size: U64::new(Le, uncompressed),
                hash: U64::new(Le, hash),
            };
            Ok(pod::bytes_of(&header).to_vec())
        }
        v => Err(Error::new(
            field_at::VERSION as u64,
            ErrorKind::UnknownCompressedVersion(v),
        )),
    }
}

/// Compresses `data` into a whole compressed bundle: header and payload.
pub fn compress(data: &[u8], options: &CompressOptions) -> Result<(Vec<u8>, CompressStats)> {
    compress_hashed(data, options, None)
}

/// A hash taken elsewhere, asked for once the bytes are compressed (it may wait for it): the
/// [`truncated_md5`] of the bytes, or `None` to take it after all.
pub type HashElsewhere<'h> = dyn Fn() -> Option<u64> + 'h;

/// [`compress`] of bytes whose hash may be taken elsewhere (`ahead`), rather than beside the
/// compressing.
pub fn compress_hashed(
    data: &[u8],
    options: &CompressOptions,
    ahead: Option<&HashElsewhere<'_>>,
) -> Result<(Vec<u8>, CompressStats)> {
    let header_len = header_size(options.version)
        .ok_or_else(|| Error::new(4, ErrorKind::UnknownCompressedVersion(options.version)))?;
    options.check_size(data.len() as u64)?;
    // A large bundle is hashed on a thread of its own while it is compressed.
    let (payload, hash) = std::thread::scope(|scope| {
        let large = ahead.is_none() && data.len() as u64 >= hashing::ASIDE_FROM;
        let hashing = large.then(|| scope.spawn(|| truncated_md5(data)));
        let payload = compress_payload(data, options);
        let hash = hashing.and_then(|h| h.join().ok());
        let hash = hash.or_else(|| ahead.and_then(|ahead| ahead()));
        (payload, hash.unwrap_or_else(|| truncated_md5(data)))
    });
    let payload = payload
        .map_err(|e| Error::new(0, ErrorKind::Decompress(format!("compression failed: {e}"))))?;
    let total = header_len + payload.len() as u64;
    let mut out = header(options, total, data.len() as u64, hash)?;
    out.extend_from_slice(&payload);
    Ok((
        out,
        CompressStats {
            uncompressed: data.len() as u64,
            total,
            hash,
        },
    ))
}

/// The room [`compress_into`] needs for a bundle of `size` bytes: its header and the most
/// the zstd stream of so many bytes can take. `None` for a zlib stream (made in memory) or a
/// size no buffer can hold.
pub fn compressed_bound(size: usize, options: &CompressOptions) -> Option<usize> {
    if options.method != Method::Zstd {
        return None;
    }
    let header = header_len(options.version)?;
    let bound = zstd::zstd_safe::compress_bound(size);
    // The library's bound saturates rather than failing: a bound below the size overflowed.
    (bound >= size).then_some(bound)?.checked_add(header)
}

/// Compresses `data` with zstd into `out`, room of at least [`compressed_bound`] bytes that
/// the caller gives (a mapped temporary file, so that a large compressed bundle is not held in
/// memory): header and payload, the same bytes [`compress`] makes. The number of bytes
/// written, with the figures.
pub fn compress_into(
    data: &[u8],
    options: &CompressOptions,
    out: &mut [u8],
) -> Result<(usize, CompressStats)> {
    compress_into_hashed(data, options, out, None)
}

/// [`compress_into`] of bytes whose hash may be taken elsewhere, as [`compress_hashed`].
pub fn compress_into_hashed(
    data: &[u8],
    options: &CompressOptions,
    out: &mut [u8],
    ahead: Option<&HashElsewhere<'_>>,
) -> Result<(usize, CompressStats)> {
    let header_len = header_len(options.version)
        .ok_or_else(|| Error::new(4, ErrorKind::UnknownCompressedVersion(options.version)))?;
    options.check_size(data.len() as u64)?;
    let failed =
        |e: io::Error| Error::new(0, ErrorKind::Decompress(format!("compression failed: {e}")));
    if options.method != Method::Zstd {
        return Err(failed(io::Error::other(
            "only a zstd stream is compressed in place",
        )));
    }
    let (head, body) = out
        .split_at_mut_checked(header_len)
        .ok_or_else(|| failed(io::Error::other("no room for the header")))?;
    let (written, hash) = std::thread::scope(|scope| {
        let large = ahead.is_none() && data.len() as u64 >= hashing::ASIDE_FROM;
        let hashing = large.then(|| scope.spawn(|| truncated_md5(data)));
        let written = with_zstd_compressor(options.level, |c| c.compress_to_buffer(data, body));
        let hash = hashing.and_then(|h| h.join().ok());
        let hash = hash.or_else(|| ahead.and_then(|ahead| ahead()));
        (written, hash.unwrap_or_else(|| truncated_md5(data)))
    });
    let written = written.map_err(failed)?;
    let total = (header_len + written) as u64;
    head.copy_from_slice(&header(options, total, data.len() as u64, hash)?);
    Ok((
        header_len + written,
        CompressStats {
            uncompressed: data.len() as u64,
            total,
            hash,
        },
    ))
}

std::thread_local! {
    /// This thread's zstd decoder for the heads of streams ([`CompressedBundle::inflate_head`]),
    /// kept from one stream to the next: made afresh for each, its tables and buffers were
    /// allocated, and their pages faulted in, for every stream a listing reads, which took
    /// longer than inflating the block that holds the head. A head takes the first block or
    /// two of its stream, so the decoder's pages in use stay a few blocks' worth.
    static HEAD_DECODER: RefCell<Option<ZstdContext>> = const { RefCell::new(None) };

    /// This thread's zstd compressor and its level, kept from one bundle to the next: made
    /// afresh for each, its tables were allocated and zeroed again every time (a tenth of the
    /// time a library's bundles took). A context reused makes the same bytes: each frame
    /// starts from the parameters alone, sized by its own input.
    static COMPRESSOR: RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> =
        const { RefCell::new(None) };
}

/// Runs `work` with this thread's zstd compressor at `level` ([`zstd_compressor`]), made on
/// first use or when the level changes (or a fresh one, were the thread's in use already).
fn with_zstd_compressor<T>(
    level: i32,
    work: impl FnOnce(&mut zstd::bulk::Compressor<'static>) -> io::Result<T>,
) -> io::Result<T> {
    COMPRESSOR.with(|cell| {
        let Ok(mut kept) = cell.try_borrow_mut() else {
            return work(&mut zstd_compressor(level)?);
        };
        if !matches!(&*kept, Some((l, _)) if *l == level) {
            // The old one goes first, so that two are never held at once.
            *kept = None;
            *kept = Some((level, zstd_compressor(level)?));
        }
        match kept.as_mut() {
            Some((_, compressor)) => work(compressor),
            None => work(&mut zstd_compressor(level)?),
        }
    })
}

/// A zstd compressor as LLVM sets one up: at `level`, with long-distance matching (and the
/// content size in the frame, the library's default).
fn zstd_compressor(level: i32) -> io::Result<zstd::bulk::Compressor<'static>> {
    let mut cctx = zstd::bulk::Compressor::new(level)?;
    cctx.set_parameter(zstd::zstd_safe::CParameter::EnableLongDistanceMatching(
        true,
    ))?;
    Ok(cctx)
}

/// Compresses `data` as LLVM does: zstd with long-distance matching and the content size in
/// the frame, or a zlib stream.
pub fn compress_payload(data: &[u8], options: &CompressOptions) -> io::Result<Vec<u8>> {
    match options.method {
        Method::Zstd => with_zstd_compressor(options.level, |c| c.compress(data)),
        Method::Zlib => {
            let level = if options.level < 0 {
                6
            } else {
                options.level.min(9) as u32
            };
            let mut enc =
                flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(level));
            enc.write_all(data)?;
            enc.finish()
        }
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample_bundle() -> Vec<u8> {
        crate::format::bundle::to_vec(
            &[
                ("host-x86_64-unknown-linux-gnu-", b""),
                ("hipv4-amdgcn-amd-amdhsa--gfx906", &[7u8; 5000]),
            ],
            4096,
        )
    }

    #[test]
    fn version_1_is_written_and_a_zlib_stream_shows_the_levels_it_can() {
        let data = sample_bundle();
        for (level, shown) in [
            (0, Some(0)),
            (1, Some(1)),
            (4, None),
            (6, Some(6)),
            (9, None),
        ] {
            let options = CompressOptions {
                method: Method::Zlib,
                level,
                version: 1,
            };
            let (ccob, stats) = compress(&data, &options).unwrap();
            assert_eq!(stats.total, ccob.len() as u64);
            let parsed = CompressedBundle::parse(&ccob).unwrap().unwrap();
            assert_eq!((parsed.version, parsed.total_size), (1, None));
            assert_eq!(parsed.header_size(), 20);
            assert_eq!(parsed.known_level(), shown, "level {level}");
            assert_eq!(parsed.decompress(DEFAULT_MAX_DECOMPRESSED).unwrap(), data);
        }
        let (zstd, _) = compress(&data, &CompressOptions::default()).unwrap();
        let parsed = CompressedBundle::parse(&zstd).unwrap().unwrap();
        assert_eq!(parsed.known_level(), None);
        // Version 1 holds the uncompressed size in 32 bits.
        let v1 = CompressOptions {
            version: 1,
            ..CompressOptions::default()
        };
        assert!(v1.check_size(1 << 32).is_err());
        assert!(v1.check_size(u64::from(u32::MAX)).is_ok());
    }

    #[test]
    fn a_stream_hashed_aside_is_checked_as_one_hashed_in_line() {
        // Past the size from which a stream is hashed on a thread of its own.
        let len = usize::try_from(hashing::ASIDE_FROM).unwrap() + 3 * 4099;
        let data: Vec<u8> = (0..len).map(|i| (i % 251).to_le_bytes()[0]).collect();
        let options = CompressOptions {
            method: Method::Zstd,
            level: 1,
            version: 3,
        };
        let (mut ccob, stats) = compress(&data, &options).unwrap();
        assert_eq!(stats.hash, truncated_md5(&data));
        let parsed = CompressedBundle::parse(&ccob).unwrap().unwrap();
        parsed
            .verify(DEFAULT_MAX_DECOMPRESSED, Decoding::Fresh)
            .unwrap();
        assert_eq!(parsed.decompress(DEFAULT_MAX_DECOMPRESSED).unwrap(), data);
        // The stored hash one off: the stream is refused, naming both.
        ccob[24] ^= 1;
        let parsed = CompressedBundle::parse(&ccob).unwrap().unwrap();
        let err = parsed
            .verify(DEFAULT_MAX_DECOMPRESSED, Decoding::Fresh)
            .unwrap_err();
        assert!(
            matches!(err.kind, ErrorKind::HashMismatch { stored, computed }
                if computed == stats.hash && stored == stats.hash ^ 1),
            "{err:?}"
        );
    }

    #[test]
    fn version_2_round_trip_with_both_methods() {
        let data = sample_bundle();
        for method in [Method::Zstd, Method::Zlib] {
            let options = CompressOptions {
                method,
                level: method.default_level(),
                version: 2,
            };
            let (ccob, stats) = compress(&data, &options).unwrap();
            assert_eq!(&ccob[..4], b"CCOB");
            assert_eq!(u16::from_le_bytes([ccob[4], ccob[5]]), 2);
            assert_eq!(u16::from_le_bytes([ccob[6], ccob[7]]), method.code());
            assert_eq!(
                u32::from_le_bytes(ccob[8..12].try_into().unwrap()) as usize,
                ccob.len()
            );
            assert_eq!(stats.total as usize, ccob.len());
            let parsed = CompressedBundle::parse(&ccob).unwrap().unwrap();
            assert_eq!(parsed.uncompressed_size, data.len() as u64);
            assert_eq!(parsed.decompress(DEFAULT_MAX_DECOMPRESSED).unwrap(), data);
        }
    }

    #[test]
    fn version_3_header_is_32_bytes() {
        let data = sample_bundle();
        let options = CompressOptions {
            version: 3,
            ..Default::default()
        };
        let (ccob, _) = compress(&data, &options).unwrap();
        assert_eq!(
            u64::from_le_bytes(ccob[8..16].try_into().unwrap()) as usize,
            ccob.len()
        );
        assert_eq!(
            u64::from_le_bytes(ccob[16..24].try_into().unwrap()) as usize,
            data.len()
        );
        let parsed = CompressedBundle::parse(&ccob).unwrap().unwrap();
        assert_eq!(parsed.header_size(), 32);
        assert_eq!(parsed.decompress(u64::MAX).unwrap(), data);
    }

    #[test]
    fn version_1_payload_runs_to_the_end() {
        let data = b"hello hello hello".to_vec();
        let payload = compress_payload(&data, &CompressOptions::default()).unwrap();
        let mut v1 = Vec::new();
        v1.extend_from_slice(b"CCOB");
        v1.extend_from_slice(&1u16.to_le_bytes());
        v1.extend_from_slice(&1u16.to_le_bytes());
        v1.extend_from_slice(&(data.len() as u32).to_le_bytes());
        v1.extend_from_slice(&truncated_md5(&data).to_le_bytes());
        v1.extend_from_slice(&payload);
        let parsed = CompressedBundle::parse(&v1).unwrap().unwrap();
        assert_eq!(parsed.total_size, None);
        assert_eq!(parsed.decompress(1 << 20).unwrap(), data);
    }

    /// The words of a xorshift generator from `seed` (not 0): bytes that do not compress.
    fn xorshift(mut x: u32) -> impl Iterator<Item = u32> {
        std::iter::repeat_with(move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        })
    }

    #[test]
    fn the_hash_is_the_first_eight_md5_bytes_little_endian() {
        // MD5("") = d41d8cd98f00b204e9800998ecf8427e
        assert_eq!(truncated_md5(b""), 0x04b2008fd98c1dd4);
    }

    #[test]
    fn concatenated_bundles_split_by_total_size_even_with_magic_in_payload() {
        // Incompressible data that contains the magic: the payload carries "CCOB" verbatim.
        let mut data = Vec::new();
        for x in xorshift(0x1234_5678).take(4000) {
            data.extend_from_slice(&x.to_le_bytes());
            data.extend_from_slice(b"CCOB");
        }
        let (a, _) = compress(
            &data,
            &CompressOptions {
                level: 1,
                ..Default::default()
            },
        )
        .unwrap();
        let (b, _) = compress(
            b"second",
            &CompressOptions {
                version: 3,
                ..Default::default()
            },
        )
        .unwrap();
        let mut stream = a.clone();
        stream.extend_from_slice(&[0; 100]);
        stream.extend_from_slice(&b);
        stream.extend_from_slice(&[0; 7]);
        let parts: Vec<_> = split(&stream).collect::<Result<_>>().unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].0, 0);
        assert_eq!(parts[1].0, a.len() as u64 + 100);
        assert_eq!(parts[0].1.decompress(u64::MAX).unwrap(), data);
        assert_eq!(parts[1].1.decompress(u64::MAX).unwrap(), b"second");
    }

    #[test]
    fn damaged_headers_are_errors_with_offsets() {
        let (ccob, _) = compress(b"payload payload", &CompressOptions::default()).unwrap();
        for cut in 4..24 {
            let err = CompressedBundle::parse(&ccob[..cut]).unwrap_err();
            assert!(err.offset < 24, "{err}");
        }
        let mut bad = ccob.clone();
        bad[4] = 9;
        assert_eq!(
            CompressedBundle::parse(&bad).unwrap_err(),
            Error::new(4, ErrorKind::UnknownCompressedVersion(9))
        );
        let mut bad = ccob.clone();
        bad[6] = 7;
        assert_eq!(
            CompressedBundle::parse(&bad).unwrap_err(),
            Error::new(6, ErrorKind::UnknownCompressionMethod(7))
        );
        let mut bad = ccob.clone();
        bad[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            CompressedBundle::parse(&bad).unwrap_err().kind,
            ErrorKind::BadTotalSize { .. }
        ));
        let mut bad = ccob.clone();
        bad[8..12].copy_from_slice(&3u32.to_le_bytes());
        assert!(matches!(
            CompressedBundle::parse(&bad).unwrap_err().kind,
            ErrorKind::BadTotalSize { .. }
        ));
    }

    #[test]
    fn lies_about_size_or_hash_are_caught() {
        let (ccob, _) = compress(b"payload payload", &CompressOptions::default()).unwrap();
        let mut bad = ccob.clone();
        bad[12..16].copy_from_slice(&(1u32 << 31).to_le_bytes());
        let err = CompressedBundle::parse(&bad)
            .unwrap()
            .unwrap()
            .decompress(1 << 20)
            .unwrap_err();
        assert!(matches!(err.kind, ErrorKind::SizeMismatch { .. }), "{err}");
        let mut bad = ccob.clone();
        bad[16] ^= 1;
        let err = CompressedBundle::parse(&bad)
            .unwrap()
            .unwrap()
            .decompress(1 << 20)
            .unwrap_err();
        assert!(matches!(err.kind, ErrorKind::HashMismatch { .. }), "{err}");
        let mut bad = ccob.clone();
        let n = bad.len();
        bad[n - 3] ^= 0xff;
        assert!(CompressedBundle::parse(&bad)
            .unwrap()
            .unwrap()
            .decompress(1 << 20)
            .is_err());
    }

    #[test]
    fn output_beyond_the_limit_is_refused() {
        let zeros = vec![0u8; 1 << 20];
        let (ccob, _) = compress(&zeros, &CompressOptions::default()).unwrap();
        let parsed = CompressedBundle::parse(&ccob).unwrap().unwrap();
        assert_eq!(
            parsed.decompress(1000).unwrap_err().kind,
            ErrorKind::TooLarge { limit: 1000 }
        );
    }

    /// A small bundle followed by `zeros` zero bytes: what a bomb inflates to.
    fn bundle_then_zeros(zeros: usize) -> (Vec<u8>, Vec<u8>) {
        let bundle = sample_bundle();
        let mut plain = bundle.clone();
        plain.resize(bundle.len() + zeros, 0);
        (bundle, plain)
    }

    fn options(method: Method, version: u16) -> CompressOptions {
        CompressOptions {
            method,
            level: 1,
            version,
        }
    }

    /// Where the declared size and the hash are in a header of `version`.
    fn size_and_hash_at(version: u16) -> (std::ops::Range<usize>, usize) {
        match version {
            2 => (12..16, 16),
            _ => (16..24, 24),
        }
    }

    const ALL: [(Method, u16); 4] = [
        (Method::Zstd, 2),
        (Method::Zstd, 3),
        (Method::Zlib, 2),
        (Method::Zlib, 3),
    ];

    #[test]
    fn a_bundle_and_trailing_zeros_inflate_to_the_bundle_alone() {
        // More than a window of zeros, so that the stream arrives in several pieces.
        let (bundle, plain) = bundle_then_zeros(3 * inflate::WINDOW + 5);
        for (method, version) in ALL {
            let (ccob, _) = compress(&plain, &options(method, version)).unwrap();
            let parsed = CompressedBundle::parse(&ccob).unwrap().unwrap();
            let kept = parsed
                .inflate_bundle(DEFAULT_MAX_DECOMPRESSED)
                .unwrap()
                .unwrap();
            assert_eq!(kept, bundle, "{method:?} v{version}");
            assert!(kept.capacity() < plain.len() / 2, "{}", kept.capacity());
            assert_eq!(parsed.decompress(DEFAULT_MAX_DECOMPRESSED).unwrap(), plain);
        }
    }

    #[test]
    fn a_bomb_with_a_wrong_size_or_hash_is_still_caught() {
        let (_, plain) = bundle_then_zeros(4 * inflate::WINDOW);
        let len = plain.len() as u64;
        for (method, version) in ALL {
            let (ccob, _) = compress(&plain, &options(method, version)).unwrap();
            let (size_at, hash_at) = size_and_hash_at(version);
            let inflate = |bytes: &[u8]| {
                CompressedBundle::parse(bytes)
                    .unwrap()
                    .unwrap()
                    .inflate_bundle(DEFAULT_MAX_DECOMPRESSED)
                    .unwrap_err()
            };
            let mut bad = ccob.clone();
            bad[hash_at] ^= 1;
            let stored = u64::from_le_bytes(bad[hash_at..hash_at + 8].try_into().unwrap());
            assert_eq!(
                inflate(&bad),
                Error::new(
                    header_size(version).unwrap(),
                    ErrorKind::HashMismatch {
                        stored,
                        computed: truncated_md5(&plain)
                    }
                )
            );
            for declared in [len - 1, len + 1] {
                let mut bad = ccob.clone();
                let width = size_at.len();
                bad[size_at.clone()].copy_from_slice(&declared.to_le_bytes()[..width]);
                assert_eq!(
                    inflate(&bad).kind,
                    ErrorKind::SizeMismatch {
                        declared,
                        actual: len
                    }
                );
            }
        }
        // One byte changed far past the bundle, in bytes that are never kept.
        let mut changed = plain.clone();
        *changed.last_mut().unwrap() = 1;
        let (mut ccob, _) = compress(&changed, &CompressOptions::default()).unwrap();
        ccob[16..24].copy_from_slice(&truncated_md5(&plain).to_le_bytes());
        let err = CompressedBundle::parse(&ccob)
            .unwrap()
            .unwrap()
            .inflate_bundle(u64::MAX)
            .unwrap_err();
        assert!(matches!(err.kind, ErrorKind::HashMismatch { .. }), "{err}");
    }

    #[test]
    fn a_bomb_past_the_limit_is_refused() {
        let (bundle, plain) = bundle_then_zeros(2 * inflate::WINDOW);
        let (ccob, _) = compress(&plain, &CompressOptions::default()).unwrap();
        let parsed = CompressedBundle::parse(&ccob).unwrap().unwrap();
        for limit in [bundle.len() as u64, plain.len() as u64 - 1] {
            assert_eq!(
                parsed.inflate_bundle(limit).unwrap_err(),
                Error::new(24, ErrorKind::TooLarge { limit })
            );
        }
        assert_eq!(
            parsed.inflate_bundle(plain.len() as u64).unwrap().unwrap(),
            bundle
        );
    }

    #[test]
    fn a_damaged_bundle_inside_is_what_parsing_the_whole_stream_says() {
        let (bundle, mut plain) = bundle_then_zeros(2 * inflate::WINDOW);
        let parsed = crate::format::bundle::Bundle::parse(&bundle)
            .unwrap()
            .unwrap();
        // The last entry claims a terabyte.
        let record = parsed.header_size() as usize - 24 - parsed.entries()[1].id.len();
        plain[record + 8..record + 16].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let expected = crate::format::bundle::Bundle::parse(&plain).unwrap_err();
        assert!(
            matches!(expected.kind, ErrorKind::EntryOutOfBounds { index: 1, .. }),
            "{expected}"
        );
        let (ccob, _) = compress(&plain, &CompressOptions::default()).unwrap();
        let parsed = CompressedBundle::parse(&ccob).unwrap().unwrap();
        assert_eq!(parsed.inflate_bundle(u64::MAX).unwrap(), Err(expected));
    }

    #[test]
    fn a_stream_that_is_no_bundle_is_kept_whole() {
        let text: Vec<u8> = b"; __CLANG_OFFLOAD_BUNDLE____START__ host-x86_64-unknown-linux-gnu-\n"
            .iter()
            .copied()
            .cycle()
            .take(3 * inflate::WINDOW)
            .collect();
        let (ccob, _) = compress(&text, &CompressOptions::default()).unwrap();
        let parsed = CompressedBundle::parse(&ccob).unwrap().unwrap();
        assert_eq!(parsed.inflate_bundle(u64::MAX).unwrap().unwrap(), text);
    }

    #[test]
    fn the_size_a_version_holds_is_checked_before_compressing() {
        let v2 = CompressOptions::default();
        let v3 = CompressOptions { version: 3, ..v2 };
        assert_eq!(v2.check_size(u64::from(u32::MAX)), Ok(()));
        // The error the header would give, without compressing anything first.
        assert_eq!(
            v2.check_size(1 << 32),
            header(&v2, 10, 1 << 32, 0).map(|_| ())
        );
        assert!(v2.check_size(1 << 32).is_err());
        assert_eq!(v3.check_size(u64::MAX), Ok(()));
    }

    #[test]
    fn version_2_refuses_sizes_over_4_gib() {
        let options = CompressOptions::default();
        assert!(matches!(
            header(&options, 10, 1 << 32, 0).unwrap_err().kind,
            ErrorKind::FieldOverflow { .. }
        ));
        assert!(header(
            &CompressOptions {
                version: 3,
                ..options
            },
            10,
            1 << 32,
            0
        )
        .is_ok());
    }

    /// A bundle whose entries take `len` bytes each, larger than the header window.
    fn large_bundle(len: usize) -> Vec<u8> {
        let a: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
        let b: Vec<u8> = (0..len).map(|i| (i % 241) as u8).collect();
        crate::format::bundle::to_vec(
            &[
                ("host-x86_64-unknown-linux-gnu-", b""),
                ("hipv4-amdgcn-amd-amdhsa--gfx906", &a),
                ("hipv4-amdgcn-amd-amdhsa--gfx90a", &b),
            ],
            4096,
        )
    }

    #[test]
    fn compressing_into_given_room_makes_the_bytes_compressing_in_memory_makes() {
        // Past the size rooms are given from and the size hashed aside, at levels whose
        // blocks are split, in every header version; and a small one.
        let data = large_bundle(9 << 20);
        for (len, level, version) in [
            (5000, 3, 2),
            (9 << 20, 3, 3),
            (6 << 20, 9, 2),
            (6 << 20, 1, 1),
        ] {
            let options = CompressOptions {
                method: Method::Zstd,
                level,
                version,
            };
            let plain = &data[..len];
            let bound = compressed_bound(len, &options).unwrap();
            let mut room = vec![0xa5; bound];
            let (written, stats) = compress_into(plain, &options, &mut room).unwrap();
            let (whole, whole_stats) = compress(plain, &options).unwrap();
            assert!(room[..written] == whole[..], "{len} bytes, level {level}");
            assert_eq!(stats, whole_stats);
        }
        let zlib = CompressOptions {
            method: Method::Zlib,
            ..CompressOptions::default()
        };
        assert_eq!(compressed_bound(100, &zlib), None);
        assert!(compress_into(&data[..100], &zlib, &mut [0; 4096]).is_err());
        assert!(compress_into(&data[..100], &CompressOptions::default(), &mut [0; 10]).is_err());
    }

    #[test]
    fn the_head_of_a_large_stream_gives_the_entries_without_a_hash_check() {
        let plain = large_bundle(3 * HEAD_WINDOW);
        let parsed = crate::format::bundle::Bundle::parse(&plain)
            .unwrap()
            .unwrap();
        let want = parsed.records();
        for (method, version) in ALL {
            let (mut ccob, _) = compress(&plain, &options(method, version)).unwrap();
            let (_, hash_at) = size_and_hash_at(version);
            // A wrong hash is not seen by a listing, only by verify.
            ccob[hash_at] ^= 1;
            let parsed_ccob = CompressedBundle::parse(&ccob).unwrap().unwrap();
            assert_eq!(
                parsed_ccob.inflate_head(u64::MAX).unwrap(),
                Head::Bundle {
                    entries: want.clone(),
                    end: plain.len() as u64
                },
                "{method:?} v{version}"
            );
            let err = parsed_ccob.verify(u64::MAX, Decoding::Fresh).unwrap_err();
            assert!(matches!(err.kind, ErrorKind::HashMismatch { .. }), "{err}");
            // The limit still caps it, before anything is inflated.
            assert_eq!(
                parsed_ccob.inflate_head(1000).unwrap_err().kind,
                ErrorKind::TooLarge { limit: 1000 }
            );
        }
    }

    #[test]
    fn heads_read_in_turn_with_the_thread_s_decoder_are_each_their_own_stream_s() {
        // The decoder kept from one head to the next stops inside each stream: what it had
        // inflated of one must never show in the next, nor a damaged stream's state.
        let plains: Vec<Vec<u8>> = [3, 5, 2]
            .iter()
            .map(|&k| {
                // Bytes that do not compress, so that each stream is many blocks long.
                let a: Vec<u8> = xorshift(0x9e37_79b9_u32.wrapping_mul(k as u32 + 1))
                    .take(k * HEAD_WINDOW)
                    .map(|x| x as u8)
                    .collect();
                let id = format!("hipv4-amdgcn-amd-amdhsa--gfx90{k}");
                crate::format::bundle::to_vec(&[(id.as_str(), a.as_slice())], 4096)
            })
            .collect();
        let ccobs: Vec<Vec<u8>> = plains
            .iter()
            .map(|plain| compress(plain, &CompressOptions::default()).unwrap().0)
            .collect();
        // Damaged past its head, and inside its first block.
        let mut late = ccobs[1].clone();
        let end = late.len();
        late[end / 2..].fill(0xff);
        let mut early = ccobs[1].clone();
        early[64..400].fill(0xff);
        for _ in 0..3 {
            for (plain, ccob) in plains.iter().zip(&ccobs) {
                let records = crate::format::bundle::Bundle::parse(plain)
                    .unwrap()
                    .unwrap()
                    .records();
                let head = CompressedBundle::parse(ccob).unwrap().unwrap();
                assert_eq!(
                    head.inflate_head(u64::MAX).unwrap(),
                    Head::Bundle {
                        entries: records,
                        end: plain.len() as u64
                    }
                );
                // A stream that fails leaves the decoder fit for the next.
                for damaged in [&late, &early] {
                    let broken = CompressedBundle::parse(damaged).unwrap().unwrap();
                    assert!(broken.verify(u64::MAX, Decoding::Fresh).is_err());
                    let _ = broken.inflate_head(u64::MAX);
                }
                let early = CompressedBundle::parse(&early).unwrap().unwrap();
                assert!(early.inflate_head(u64::MAX).is_err());
            }
        }
    }

    #[test]
    fn a_prefix_is_inflated_piece_by_piece_and_checked_only_at_the_end() {
        let plain = large_bundle(2 * inflate::WINDOW);
        let (ccob, _) = compress(&plain, &CompressOptions::default()).unwrap();
        let parsed = CompressedBundle::parse(&ccob).unwrap().unwrap();
        for end in [1, 4096, inflate::WINDOW as u64 + 3, plain.len() as u64] {
            let mut got = Vec::new();
            parsed
                .inflate_prefix(u64::MAX, end, Decoding::Fresh, |at, piece| {
                    assert_eq!(at, got.len() as u64);
                    got.extend_from_slice(piece);
                    Ok(())
                })
                .unwrap();
            assert_eq!(got, &plain[..end as usize]);
        }
        let mut bad = ccob.clone();
        bad[16] ^= 1;
        let bad = CompressedBundle::parse(&bad).unwrap().unwrap();
        let len = plain.len() as u64;
        assert!(bad
            .inflate_prefix(u64::MAX, len - 1, Decoding::Fresh, |_, _| Ok(()))
            .is_ok());
        let err = bad
            .inflate_prefix(u64::MAX, len, Decoding::Fresh, |_, _| Ok(()))
            .unwrap_err();
        assert!(matches!(err.kind, ErrorKind::HashMismatch { .. }), "{err}");
    }

    proptest! {
        #[test]
        fn any_bytes_survive_compress_then_decompress(data in proptest::collection::vec(any::<u8>(), 0..2000), zlib in any::<bool>(), v3 in any::<bool>()) {
            let method = if zlib { Method::Zlib } else { Method::Zstd };
            let options = CompressOptions { method, level: method.default_level(), version: if v3 { 3 } else { 2 } };
            let (ccob, _) = compress(&data, &options).unwrap();
            let parsed = CompressedBundle::parse(&ccob).unwrap().unwrap();
            prop_assert_eq!(parsed.decompress(u64::MAX).unwrap(), data);
        }

        #[test]
        fn the_inflated_bundle_is_the_bundle_the_whole_stream_starts_with(
            payload in proptest::collection::vec(any::<u8>(), 0..300),
            field in 0usize..4,
            value in prop_oneof![Just(0u64), Just(1 << 40), any::<u64>()],
            trailing in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let mut data = crate::format::bundle::to_vec(&[("host-x86_64-unknown-linux-gnu-", b""), ("hip-amdgcn-amd-amdhsa--gfx90a", &payload)], 1);
            // Damage one field: the count, or the second record's offset, size or ID length.
            let record = 32 + 24 + "host-x86_64-unknown-linux-gnu-".len();
            let at = [24, record, record + 8, record + 16][field];
            if value != 1 {
                data[at..at + 8].copy_from_slice(&value.to_le_bytes());
            }
            data.extend_from_slice(&trailing);
            let (ccob, _) = compress(&data, &CompressOptions::default()).unwrap();
            let parsed = CompressedBundle::parse(&ccob).unwrap().unwrap();
            let expected = match crate::format::bundle::Bundle::parse(&data) {
                Ok(Some(bundle)) => Ok(data[..bundle.size() as usize].to_vec()),
                Ok(None) => Ok(data.clone()),
                Err(e) => Err(e),
            };
            prop_assert_eq!(parsed.inflate_bundle(u64::MAX).unwrap(), expected);
        }
    }
}
