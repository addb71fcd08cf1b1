//! Inflating a compressed offload binary: whole, or from its head, inflating only its entries and their
//! strings (and each image's first bytes), so that a listing costs what the metadata takes
//! whatever the binary declares, and inflating the ranges of its images as a stream.

use std::io::{self, Read};

use object::endian::LittleEndian as Le;

use super::{
    field_at, parse_entries, put_u64, read, read_u64, string_entry_size, CompressedPayload,
    Compression, Images, OffloadEntry, RawEntry, ENTRY_SIZE, MAX_ENTRIES, V3_HEADER_SIZE,
};
use crate::format::ccob::{self, Decoding};
use crate::format::error::{Error, ErrorKind, Result};
use crate::format::inflate;

impl CompressedPayload<'_> {
    /// Inflates the binary: the header, with its size set to the inflated size and its
    /// inflated size to 0, then the inflated payload. Parse the result with
    /// [`super::OffloadBinary::parse`].
    ///
    /// Fails without allocating when the declared inflated size is above `limit`, and when the
    /// payload does not inflate to exactly the declared size. Error offsets are from the start
    /// of the compressed binary.
    pub fn inflate(&self, limit: u64) -> Result<Vec<u8>> {
        let header_len = self.header.len() as u64;
        if header_len < V3_HEADER_SIZE {
            return Err(Error::new(
                field_at::ENTRIES_OFFSET,
                ErrorKind::PayloadInHeader {
                    offset: header_len,
                    header: V3_HEADER_SIZE,
                },
            ));
        }
        if self.inflated_size > limit {
            return Err(Error::new(
                field_at::INFLATED_SIZE,
                ErrorKind::InflatedTooLarge {
                    inflated: self.inflated_size,
                    limit,
                },
            ));
        }
        self.check_entry_count()?;
        let declared = self.inflated_size.saturating_sub(header_len);
        let failed = |e: io::Error| Error::new(header_len, ErrorKind::Decompress(e.to_string()));
        let mut reader = self.reader(Decoding::Fresh)?;
        // The buffer grows as real bytes arrive, never past the declared size: a payload that
        // claims gigabytes but holds little costs little.
        let mut out = Vec::new();
        inflate::append(&mut out, self.header, self.inflated_size, header_len)?;
        put_u64(&mut out, field_at::SIZE, self.inflated_size);
        put_u64(&mut out, field_at::INFLATED_SIZE, 0);
        let mut window = inflate::window(declared);
        let mut actual = 0u64;
        while actual <= declared {
            let n = inflate::read_some(&mut reader, &mut window).map_err(failed)?;
            if n == 0 {
                break;
            }
            // One byte past the declared size is enough to know it is wrong.
            let room = declared.saturating_add(1) - actual;
            let piece = inflate::at_most(inflate::at_most(&window, n as u64), room);
            actual += piece.len() as u64;
            if actual <= declared {
                inflate::append(&mut out, piece, self.inflated_size, header_len)?;
            }
        }
        if actual != declared {
            return Err(Error::new(
                header_len,
                ErrorKind::InflatedSizeMismatch { declared, actual },
            ));
        }
        Ok(out)
    }

    /// Refuses, before inflating anything, a binary whose header declares more entries than
    /// [`MAX_ENTRIES`]: their metadata would be inflated and listed for nothing.
    fn check_entry_count(&self) -> Result<()> {
        let count = read_u64(self.header, field_at::ENTRY_SIZE_OR_COUNT, "entry count")?;
        if count > MAX_ENTRIES {
            return Err(Error::new(
                field_at::ENTRY_SIZE_OR_COUNT,
                ErrorKind::TooManyBinaryEntries {
                    count,
                    limit: MAX_ENTRIES,
                },
            ));
        }
        Ok(())
    }

    /// The decoder of the payload.
    fn reader<'s>(&'s self, decoding: Decoding<'s>) -> Result<Box<dyn Read + 's>> {
        let zstd = self.compression == Compression::Zstd;
        ccob::decoder(self.payload, zstd, decoding, self.header.len() as u64)
    }

    /// The header of the inflated binary: the stored one with its size set to the inflated
    /// size and its inflated size to 0.
    fn inflated_header(&self) -> Vec<u8> {
        let mut header = self.header.to_vec();
        put_u64(&mut header, field_at::SIZE, self.inflated_size);
        put_u64(&mut header, field_at::INFLATED_SIZE, 0);
        header
    }

    /// Whether the payload is one [`CompressedPayload::inflate_head`] reads header-first: a
    /// whole header before it, a declared size within `limit` and above a window.
    fn read_head_first(&self, limit: u64) -> bool {
        self.header.len() as u64 >= V3_HEADER_SIZE
            && self.inflated_size <= limit
            && self.inflated_size > HEAD_WINDOW as u64
    }

    /// Inflates the binary only as far as its entries, their strings and the first
    /// [`PEEK`] bytes of each image: a listing or a choice of images needs no more, whatever
    /// the binary's size, and the images' bytes are not held. The whole binary is inflated
    /// instead (as [`CompressedPayload::inflate`] does, with its checks and errors) when it
    /// declares no more than a window (64 KiB), when its head is damaged or cut short, and
    /// when an image's first bytes satisfy `holds_more` (a container inside, whose images
    /// are the device code). Nothing is checked past the head: the stream's end is checked
    /// when it is inflated to its end ([`CompressedPayload::inflate_prefix`]).
    pub fn inflate_head(
        &self,
        limit: u64,
        holds_more: impl Fn(&[u8]) -> bool,
    ) -> Result<PayloadHead> {
        if !self.read_head_first(limit) {
            return self.inflate(limit).map(PayloadHead::Whole);
        }
        self.check_entry_count()?;
        let whole = || self.inflate(limit).map(PayloadHead::Whole);
        let at = self.header.len() as u64;
        let failed = |e: io::Error| Error::new(at, ErrorKind::Decompress(e.to_string()));
        let mut reader = self.reader(Decoding::Fresh)?;
        let mut prefix = self.inflated_header();
        let mut window = vec![0; HEAD_WINDOW];
        // The metadata is walked again only once the prefix has doubled: a head of many
        // entries costs linear time, not a walk per window.
        let mut walk_at = 0;
        let end = loop {
            let n = inflate::read_some(&mut reader, &mut window).map_err(failed)?;
            let room = self.inflated_size.saturating_sub(prefix.len() as u64);
            let piece = inflate::at_most(inflate::at_most(&window, n as u64), room);
            inflate::append(&mut prefix, piece, self.inflated_size, at)?;
            let more = n > 0 && !piece.is_empty();
            if more && prefix.len() < walk_at {
                continue;
            }
            walk_at = prefix.len() * 2;
            match metadata_end(&prefix, self.inflated_size) {
                Metadata::Incomplete if more => continue,
                Metadata::Incomplete | Metadata::Damaged => return whole(),
                Metadata::Ends(end) => break end,
            }
        };
        let Some(peeks) = self.peek_images(&prefix, end, &mut reader, &mut window)? else {
            return whole();
        };
        if peeks.iter().any(|peek| holds_more(peek)) {
            return whole();
        }
        prefix.truncate(usize::try_from(end).unwrap_or(usize::MAX));
        prefix.shrink_to_fit();
        Ok(PayloadHead::Listed(ListedHead {
            prefix,
            inflated_size: self.inflated_size,
            peeks,
        }))
    }

    /// The first [`PEEK`] bytes of each image of the binary whose metadata `prefix` holds
    /// (up to `end`), in entry order: from `prefix` where it reaches, else inflated on from
    /// `reader`, the bytes between kept no longer than a window. `None` when the stream ends
    /// first.
    fn peek_images(
        &self,
        prefix: &[u8],
        end: u64,
        reader: &mut dyn Read,
        window: &mut [u8],
    ) -> Result<Option<Vec<Vec<u8>>>> {
        let entries = parse_entries(
            inflate::at_most(prefix, end),
            VERSION_3,
            read_u64(prefix, field_at::ENTRIES_OFFSET, "entries offset")?,
            read_u64(prefix, field_at::ENTRY_SIZE_OR_COUNT, "entry count")?,
            Images::Beyond(self.inflated_size),
        )?;
        let wanted: Vec<(u64, u64)> = entries
            .iter()
            .map(|e| {
                (
                    e.image_offset,
                    e.image_offset + e.image_size.min(PEEK as u64),
                )
            })
            .collect();
        let mut peeks = vec![Vec::new(); wanted.len()];
        let last = wanted.iter().map(|w| w.1).max().unwrap_or(0);
        let mut copy = |position: u64, piece: &[u8]| {
            let piece_end = position + piece.len() as u64;
            for (peek, &(start, stop)) in peeks.iter_mut().zip(&wanted) {
                let (from, to) = (start.max(position), stop.min(piece_end));
                if from < to {
                    let skip = usize::try_from(from - position).unwrap_or(usize::MAX);
                    let rest = piece.get(skip..).unwrap_or_default();
                    peek.extend_from_slice(inflate::at_most(rest, to - from));
                }
            }
        };
        copy(0, prefix);
        let mut position = prefix.len() as u64;
        let at = self.header.len() as u64;
        while position < last {
            let n = inflate::read_some(reader, window)
                .map_err(|e| Error::new(at, ErrorKind::Decompress(e.to_string())))?;
            if n == 0 {
                return Ok(None);
            }
            let piece = inflate::at_most(window, n as u64);
            copy(position, piece);
            position += piece.len() as u64;
        }
        Ok(Some(peeks))
    }

    /// Inflates the binary up to `end` (a position in the inflated binary, whose first bytes
    /// are its header, as [`CompressedPayload::inflate`] restores it) and hands `sink` each
    /// piece with its position, never holding more than a window of it. When `end` reaches
    /// the declared size, the stream is inflated to its end and must give exactly that size.
    pub fn inflate_prefix(
        &self,
        limit: u64,
        end: u64,
        decoding: Decoding<'_>,
        mut sink: impl FnMut(u64, &[u8]) -> Result<()>,
    ) -> Result<()> {
        let header_len = self.header.len() as u64;
        if header_len < V3_HEADER_SIZE || self.inflated_size > limit {
            // The errors inflating gives for such a binary, before anything is inflated.
            return self.inflate(limit).map(|_| ());
        }
        let header = self.inflated_header();
        let end = end.min(self.inflated_size);
        sink(0, inflate::at_most(&header, end))?;
        let checking = end == self.inflated_size;
        let declared = self.inflated_size - header_len;
        let failed = |e: io::Error| Error::new(header_len, ErrorKind::Decompress(e.to_string()));
        let mut reader = self.reader(decoding)?;
        let mut window = inflate::window(declared);
        let mut position = header_len;
        loop {
            if position >= end && !checking {
                return Ok(());
            }
            let n = inflate::read_some(&mut reader, &mut window).map_err(failed)?;
            if n == 0 || position + n as u64 > self.inflated_size {
                // One byte past the declared size is enough to know it is wrong.
                let actual = (position + n as u64 - header_len).min(declared + 1);
                if n == 0 && actual == declared {
                    return Ok(());
                }
                return Err(Error::new(
                    header_len,
                    ErrorKind::InflatedSizeMismatch { declared, actual },
                ));
            }
            let piece = inflate::at_most(&window, n as u64);
            let wanted = inflate::at_most(piece, end.saturating_sub(position));
            if !wanted.is_empty() {
                sink(position, wanted)?;
            }
            position += piece.len() as u64;
        }
    }

    /// Inflates the whole binary and checks it inflates to its declared size, holding no more
    /// than a window of it.
    pub fn verify(&self, limit: u64, decoding: Decoding<'_>) -> Result<()> {
        self.inflate_prefix(limit, self.inflated_size, decoding, |_, _| Ok(()))
    }
}

/// Bytes inflated at a time while reading a compressed binary's head: its entries and
/// strings take a few KiB.
const HEAD_WINDOW: usize = 64 << 10;

/// Bytes of each image [`CompressedPayload::inflate_head`] keeps: enough to tell any
/// container's magic, and what an image is (an ELF file, bitcode, SPIR-V).
pub const PEEK: usize = 32;

/// The version whose header has an inflated size.
const VERSION_3: u32 = 3;

/// What the first bytes of a compressed binary tell, from
/// [`CompressedPayload::inflate_head`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadHead {
    /// Its entries and their strings, and the first bytes of each image.
    Listed(ListedHead),
    /// The whole binary inflated, as [`CompressedPayload::inflate`] gives it.
    Whole(Vec<u8>),
}

/// The head of an inflated binary: everything up to the end of its entries' strings, and the
/// first [`PEEK`] bytes of each image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedHead {
    prefix: Vec<u8>,
    inflated_size: u64,
    peeks: Vec<Vec<u8>>,
}

impl ListedHead {
    /// The entries, in stored order, each with its image's offset and size in the inflated
    /// binary and no image bytes.
    pub fn entries(&self) -> Result<Vec<OffloadEntry<'_>>> {
        parse_entries(
            &self.prefix,
            VERSION_3,
            read_u64(&self.prefix, field_at::ENTRIES_OFFSET, "entries offset")?,
            read_u64(&self.prefix, field_at::ENTRY_SIZE_OR_COUNT, "entry count")?,
            Images::Beyond(self.inflated_size),
        )
    }

    /// The first bytes (up to [`PEEK`]) of the image of entry `index`.
    pub fn peek(&self, index: usize) -> &[u8] {
        self.peeks.get(index).map_or(&[], Vec::as_slice)
    }
}

/// How far the metadata of an inflated binary reaches, from [`metadata_end`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Metadata {
    /// Past the bytes at hand, inside the binary.
    Incomplete,
    /// A region of it lies outside the binary: the whole binary's parse tells which.
    Damaged,
    /// Up to this offset: the end of the furthest entry, string entry or string.
    Ends(u64),
}

/// How far the entries of the version 3 binary of `inflated` bytes whose first bytes are
/// `prefix` (its header at least) and their strings reach.
fn metadata_end(prefix: &[u8], inflated: u64) -> Metadata {
    let have = prefix.len() as u64;
    let (Ok(entries_offset), Ok(count)) = (
        read_u64(prefix, field_at::ENTRIES_OFFSET, ""),
        read_u64(prefix, field_at::ENTRY_SIZE_OR_COUNT, ""),
    ) else {
        return Metadata::Damaged;
    };
    let mut furthest = Reach::new(have, inflated);
    furthest.region(entries_offset, count.checked_mul(ENTRY_SIZE));
    if furthest.stopped() {
        return furthest.result();
    }
    for index in 0..count.min(MAX_ENTRIES) {
        let Some(offset) = index
            .checked_mul(ENTRY_SIZE)
            .and_then(|o| o.checked_add(entries_offset))
        else {
            return Metadata::Damaged;
        };
        let Ok(raw) = read::<RawEntry>(prefix, offset, "") else {
            return Metadata::Damaged;
        };
        furthest.within(raw.image_offset.get(Le), raw.image_size.get(Le));
        let (strings, num) = (raw.string_offset.get(Le), raw.num_strings.get(Le));
        furthest.region(strings, num.checked_mul(string_entry_size(VERSION_3)));
        for i in 0..num {
            if furthest.stopped() {
                return furthest.result();
            }
            let Some(at) = i
                .checked_mul(string_entry_size(VERSION_3))
                .and_then(|o| o.checked_add(strings))
                .filter(|at| at.checked_add(field_at::VALUE_SIZE).is_some())
            else {
                return Metadata::Damaged;
            };
            let (Ok(key), Ok(value), Ok(size)) = (
                read_u64(prefix, at, ""),
                read_u64(prefix, at + field_at::VALUE_OFFSET, ""),
                read_u64(prefix, at + field_at::VALUE_SIZE, ""),
            ) else {
                return Metadata::Damaged;
            };
            furthest.c_string(prefix, key);
            furthest.region(value, Some(size));
        }
        if furthest.stopped() {
            return furthest.result();
        }
    }
    furthest.result()
}

/// The furthest end of the regions met so far in a binary's head, or why the walk stopped.
struct Reach {
    have: u64,
    inflated: u64,
    end: u64,
    stop: Option<Metadata>,
}

impl Reach {
    fn new(have: u64, inflated: u64) -> Reach {
        Reach {
            have,
            inflated,
            end: 0,
            stop: None,
        }
    }

    fn stopped(&self) -> bool {
        self.stop.is_some()
    }

    fn result(&self) -> Metadata {
        self.stop.unwrap_or(Metadata::Ends(self.end))
    }

    /// A region the head must hold: `size` bytes (`None`: too many to count) from `offset`.
    fn region(&mut self, offset: u64, size: Option<u64>) {
        if self.stop.is_some() {
            return;
        }
        match size.and_then(|size| offset.checked_add(size)) {
            Some(end) if end > self.inflated => self.stop = Some(Metadata::Damaged),
            Some(end) if end > self.have => self.stop = Some(Metadata::Incomplete),
            Some(end) => self.end = self.end.max(end),
            None => self.stop = Some(Metadata::Damaged),
        }
    }

    /// A region that must lie inside the binary, not in the head (an image).
    fn within(&mut self, offset: u64, size: u64) {
        if offset
            .checked_add(size)
            .is_none_or(|end| end > self.inflated)
        {
            self.stop.get_or_insert(Metadata::Damaged);
        }
    }

    /// A NUL-terminated string the head must hold, from `offset` of `prefix`.
    fn c_string(&mut self, prefix: &[u8], offset: u64) {
        if self.stop.is_some() {
            return;
        }
        let tail = usize::try_from(offset).ok().and_then(|o| prefix.get(o..));
        match tail.and_then(|t| memchr::memchr(0, t)) {
            Some(nul) => self.end = self.end.max(offset + nul as u64 + 1),
            None if self.have < self.inflated && offset < self.inflated => {
                self.stop = Some(Metadata::Incomplete)
            }
            None => self.stop = Some(Metadata::Damaged),
        }
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;
    use crate::format::offload_binary::{
        write, write_compressed, ImageKind, OffloadBinary, OffloadKind, OffloadingImage,
    };

    type Strings<'s> = Vec<(&'s [u8], &'s [u8])>;

    fn put(bytes: &mut [u8], offset: u64, value: u64) {
        put_u64(bytes, offset, value);
    }

    #[test]
    fn a_head_of_many_windows_of_entries_is_read_whole() {
        // 20,000 entries and their strings: about 2 MB of metadata, many head windows.
        let strings: Strings = vec![(b"triple", b"amdgcn-amd-amdhsa"), (b"arch", b"gfx90a")];
        let image = [0x5a; 8];
        let images: Vec<OffloadingImage<'_>> = (0..20_000)
            .map(|_| OffloadingImage {
                image_kind: ImageKind::Object,
                offload_kind: OffloadKind::OpenMp,
                flags: 0,
                strings: &strings,
                image: &image,
            })
            .collect();
        let packed = write_compressed(&images, Compression::Zstd, 1).unwrap();
        let payload = *OffloadBinary::parse(&packed).unwrap().compressed().unwrap();
        let PayloadHead::Listed(head) = payload.inflate_head(u64::MAX, |_| false).unwrap() else {
            panic!("inflated whole");
        };
        let entries = head.entries().unwrap();
        assert_eq!(entries.len(), 20_000);
        assert!(entries
            .iter()
            .all(|e| e.arch() == b"gfx90a" && e.image_size == 8));
        assert_eq!(head.peek(19_999), &image[..]);
    }

    #[test]
    fn a_compressed_binary_read_from_its_head_lists_its_images_and_inflates_their_ranges() {
        let gfx90a: Strings = vec![(b"triple", b"amdgcn-amd-amdhsa"), (b"arch", b"gfx90a")];
        let gfx942: Strings = vec![(b"triple", b"amdgcn-amd-amdhsa"), (b"arch", b"gfx942")];
        // Three windows and more each, so that the head is far shorter than the binary.
        let first: Vec<u8> = (0..3 * inflate::WINDOW as u32 + 7)
            .map(|i| (i % 251) as u8)
            .collect();
        let second: Vec<u8> = (0..HEAD_WINDOW as u32 * 5)
            .map(|i| (i % 13) as u8)
            .collect();
        let images = [
            OffloadingImage {
                image_kind: ImageKind::Object,
                offload_kind: OffloadKind::OpenMp,
                flags: 0,
                strings: &gfx90a,
                image: &first,
            },
            OffloadingImage {
                image_kind: ImageKind::Bitcode,
                offload_kind: OffloadKind::OpenMp,
                flags: 0,
                strings: &gfx942,
                image: &second,
            },
        ];
        let plain = write(3, &images).unwrap();
        for compression in [Compression::Zstd, Compression::Zlib] {
            let packed = write_compressed(&images, compression, 1).unwrap();
            let payload = *OffloadBinary::parse(&packed).unwrap().compressed().unwrap();
            let PayloadHead::Listed(head) = payload.inflate_head(u64::MAX, |_| false).unwrap()
            else {
                panic!("inflated whole");
            };
            let entries = head.entries().unwrap();
            let whole = OffloadBinary::parse(&plain).unwrap();
            assert_eq!(entries.len(), 2);
            for (listed, stored) in entries.iter().zip(whole.entries()) {
                assert_eq!(listed.strings, stored.strings);
                assert_eq!(listed.image_kind, stored.image_kind);
                assert_eq!(listed.image_offset, stored.image_offset);
                assert_eq!(listed.image_size, stored.image.len() as u64);
                assert!(listed.image.is_empty());
                assert_eq!(head.peek(listed.index), &stored.image[..PEEK]);
                // The range of each image, inflated a window at a time.
                let (start, end) = (listed.image_offset, listed.image_offset + listed.image_size);
                let mut got = Vec::new();
                payload
                    .inflate_prefix(u64::MAX, end, Decoding::Fresh, |at, piece| {
                        let from = start.saturating_sub(at).min(piece.len() as u64) as usize;
                        got.extend_from_slice(&piece[from..]);
                        Ok(())
                    })
                    .unwrap();
                assert_eq!(got, stored.image);
            }
            // The head holds the metadata, not the images.
            assert!(head.prefix.len() < 4096, "{}", head.prefix.len());
            // An image that starts like a container: the binary is inflated whole.
            let whole_head = payload.inflate_head(u64::MAX, |peek| peek == &second[..PEEK]);
            assert_eq!(whole_head.unwrap(), PayloadHead::Whole(plain.clone()));
            // Inflated to its end, it is checked; one byte more declared is an error.
            payload.verify(u64::MAX, Decoding::Fresh).unwrap();
            let mut longer = packed.clone();
            put(&mut longer, field_at::INFLATED_SIZE, plain.len() as u64 + 1);
            let longer = *OffloadBinary::parse(&longer).unwrap().compressed().unwrap();
            assert!(matches!(
                longer.verify(u64::MAX, Decoding::Fresh).unwrap_err().kind,
                ErrorKind::InflatedSizeMismatch { .. }
            ));
            // A head whose entries point past the binary is read whole, for the error.
            let mut damaged = plain.clone();
            put(&mut damaged, 40 + 24, plain.len() as u64);
            let (head_bytes, body) = damaged.split_at(V3_HEADER_SIZE as usize);
            let mut repacked = head_bytes.to_vec();
            repacked.extend_from_slice(&zstd::bulk::compress(body, 1).unwrap());
            let size = repacked.len() as u64;
            put(&mut repacked, field_at::SIZE, size);
            put(&mut repacked, field_at::INFLATED_SIZE, damaged.len() as u64);
            let repacked = *OffloadBinary::parse(&repacked)
                .unwrap()
                .compressed()
                .unwrap();
            assert!(matches!(
                repacked.inflate_head(u64::MAX, |_| false),
                Ok(PayloadHead::Whole(_))
            ));
        }
    }
}
