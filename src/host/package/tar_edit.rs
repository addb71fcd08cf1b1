//! Tarballs written again: the tar stream is read once, in place when plain, inflated into a
//! spill otherwise ([`crate::io::spill`]: memory while small, an unnamed file beyond that),
//! each member's headers and data located in it ([`layout`]); a writer then copies each
//! member's bytes as they were, leaves a member out whole (its pax and long-name headers
//! too), or gives it new data with only its size fields and checksums changed
//! ([`headers_for`]), and compresses the stream again as it was stored ([`Encoder`]).
//!
//! The layout refuses what a rewrite must not trust: a header whose checksum is wrong, a
//! member the stream ends within, a member named to leave its folder, a link pointing
//! outside it. Nothing is unpacked to disk and no link is ever followed.

use std::io::{Read, Write};
use std::ops::Range;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::tar::{
    decoder, metadata, next_header, octal, pax_value, skip, strip_dot, Compression, Stream, BLOCK,
};
use super::{checked_name, member_error, Budget, Budgeted};
use crate::error::{Error, Result};
use crate::io::spill::{Spill, Spilled};

/// One member of a tarball as it lies in the tar stream.
#[derive(Debug, Clone)]
pub struct Entry {
    /// All of it: its pax and long-name headers, its header, its data and the padding.
    pub span: Range<u64>,
    /// Where its own header block is (after its pax and long-name headers).
    pub header: u64,
    /// Its pax extended header, if it has one: where that header block is, and its records.
    pub pax: Option<(u64, Range<u64>)>,
    /// Its name, without the leading `./`.
    pub name: Vec<u8>,
    /// Its type flag (`0` a file, `2` a symbolic link, `5` a folder, ...).
    pub kind: u8,
    /// Its data, padding aside.
    pub data: Range<u64>,
    /// What a hard link links to (its name, without the leading `./`); empty for others.
    pub hard_link: Vec<u8>,
}

impl Entry {
    /// Whether it is a regular file.
    pub fn regular(&self) -> bool {
        matches!(self.kind, b'0' | 0 | b'7') && !self.name.is_empty()
    }
}

/// A tarball's stream and where its members are.
#[derive(Debug)]
pub struct Layout<'d> {
    /// The tar stream: the file itself when plain, what it inflates to otherwise.
    pub stream: TarBytes<'d>,
    /// The members, in order.
    pub entries: Vec<Entry>,
    /// What follows the last member: the end blocks, and whatever the stream holds after them.
    pub end: Range<u64>,
}

/// Where a tar stream's bytes are.
#[derive(Debug)]
pub enum TarBytes<'d> {
    /// In the file read (a plain tarball): not copied.
    File(&'d [u8]),
    /// Inflated into a spill.
    Inflated(Spilled),
}

impl Layout<'_> {
    /// The bytes of `range` of the stream.
    pub fn bytes(&self, range: &Range<u64>) -> &[u8] {
        let start = usize::try_from(range.start).unwrap_or(usize::MAX);
        let end = usize::try_from(range.end).unwrap_or(usize::MAX);
        let all = match &self.stream {
            TarBytes::File(bytes) => bytes,
            TarBytes::Inflated(spilled) => spilled.bytes(),
        };
        all.get(start..end).unwrap_or_default()
    }
}

/// A reader that keeps a copy of everything it reads in a spill.
struct Tee<'s, R> {
    read: R,
    spill: &'s mut Spill,
}

impl<R: Read> Read for Tee<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.read.read(buf)?;
        self.spill.append(buf.get(..n).unwrap_or_default())?;
        Ok(n)
    }
}

/// What extension headers said of the member that follows them.
#[derive(Default)]
struct Pending {
    start: Option<u64>,
    name: Option<Vec<u8>>,
    link: Option<Vec<u8>>,
    pax: Option<(u64, Range<u64>)>,
}

/// Reads the tarball `data` (stored as `compression`, at `path`) into a [`Layout`]. What it
/// inflates to is taken from `budget`. A symbolic link to an absolute name is allowed when
/// `absolute_links` says so (a Debian package's files are unpacked at the root, where such a
/// link stays inside); a link that climbs out with `..` never is.
pub fn layout<'d>(
    path: &Path,
    data: &'d [u8],
    compression: Compression,
    budget: &Budget,
    absolute_links: bool,
) -> Result<Layout<'d>> {
    if compression == Compression::None {
        // Read in place: a plain tarball costs no more than its bytes, and is not copied.
        let mut stream = Stream {
            read: Box::new(data),
            at: 0,
        };
        let (entries, end_at) = entries(path, &mut stream, absolute_links)?;
        return Ok(Layout {
            stream: TarBytes::File(data),
            entries,
            end: end_at..data.len() as u64,
        });
    }
    let mut spill = Spill::new();
    let (entries, end_at) = {
        let read = decoder(data, compression).map_err(|e| Error::io(path, e))?;
        let read: Box<dyn Read> = Box::new(Budgeted { read, budget });
        let tee = Tee {
            read,
            spill: &mut spill,
        };
        let mut stream = Stream {
            read: Box::new(tee),
            at: 0,
        };
        let found = entries(path, &mut stream, absolute_links)?;
        // The end blocks and anything after them, kept as they are.
        stream
            .skip(u64::MAX)
            .map_err(|e| Error::file(path, format!("tar stream: {e}")))?;
        found
    };
    let stream = spill.finish().map_err(|e| Error::io(path, e))?;
    let end = end_at..stream.len();
    Ok(Layout {
        stream: TarBytes::Inflated(stream),
        entries,
        end,
    })
}

/// The members of the tar stream, and where the end blocks start.
fn entries(
    path: &Path,
    stream: &mut Stream<'_>,
    absolute_links: bool,
) -> Result<(Vec<Entry>, u64)> {
    let mut found = Vec::new();
    let mut pending = Pending::default();
    loop {
        let at = stream.at;
        let Some(header) = next_header(path, stream)? else {
            if pending.start.is_some() {
                return Err(Error::file(
                    path,
                    format!("tar stream at offset {at:#x}: a pax or long-name header with no member after it: truncated"),
                ));
            }
            return Ok((found, at));
        };
        let padded = header.size.checked_next_multiple_of(BLOCK as u64);
        let padded = padded.ok_or_else(|| {
            member_error(
                path,
                &header.name,
                format!(
                    "tar header at offset {at:#x}: a size of {} bytes, past what any file holds",
                    header.size
                ),
            )
        })?;
        let data_at = at + BLOCK as u64;
        if matches!(header.kind, b'L' | b'K' | b'x') {
            let text = metadata(path, stream, &header)?;
            pending.start.get_or_insert(at);
            match header.kind {
                b'x' => {
                    pending.pax = Some((at, data_at..data_at + header.size));
                    pending.name = pax_value(&text, b"path").or(pending.name.take());
                    pending.link = pax_value(&text, b"linkpath").or(pending.link.take());
                }
                kind => {
                    let value = text.split(|&b| b == 0).next().unwrap_or_default().to_vec();
                    let slot = if kind == b'L' {
                        &mut pending.name
                    } else {
                        &mut pending.link
                    };
                    *slot = Some(value);
                }
            }
            skip(path, stream, &header, padded - header.size)?;
            continue;
        }
        let taken = std::mem::take(&mut pending);
        let name = strip_dot(taken.name.as_deref().unwrap_or(&header.name)).to_vec();
        let link = taken.link.unwrap_or_else(|| header.link.clone());
        if !name.is_empty() && header.kind != b'g' {
            checked_name(path, &name, at)?;
            checked_link(path, &name, header.kind, &link, at, absolute_links)?;
        }
        skip(path, stream, &header, padded)?;
        found.push(Entry {
            span: taken.start.unwrap_or(at)..stream.at,
            header: at,
            pax: taken.pax,
            name,
            kind: header.kind,
            data: data_at..data_at + header.size,
            hard_link: if header.kind == b'1' {
                strip_dot(&link).to_vec()
            } else {
                Vec::new()
            },
        });
    }
}

/// Refuses a hard link whose target would leave the folder, and a symbolic link that points
/// outside it (`absolute_links` allows one to an absolute name).
fn checked_link(
    path: &Path,
    name: &[u8],
    kind: u8,
    link: &[u8],
    at: u64,
    absolute_links: bool,
) -> Result<()> {
    match kind {
        b'1' => checked_name(path, strip_dot(link), at),
        b'2' => {
            let outside = if link.first() == Some(&b'/') {
                !absolute_links
            } else {
                climbs_out(name, link)
            };
            if outside {
                return Err(member_error(
                    path,
                    name,
                    format!(
                        "member at offset {at:#x} is a symbolic link to '{}', outside the folder it is unpacked into: not rewritten",
                        crate::io::shown(std::ffi::OsStr::from_bytes(link))
                    ),
                ));
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Whether the relative link `target` of the member `name` climbs above the tarball's top.
fn climbs_out(name: &[u8], target: &[u8]) -> bool {
    let mut depth = name.split(|&b| b == b'/').filter(|p| !p.is_empty()).count();
    // The link resolves from the folder the member is in.
    depth = depth.saturating_sub(1);
    for part in target.split(|&b| b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return true,
            },
            _ => depth += 1,
        }
    }
    false
}

/// The header blocks of `entry` (its pax and long-name headers and its own) for data of
/// `size` bytes: the size fields and checksums changed, a pax `size` record too when there is
/// one; every other byte as it was. An error says why the header cannot say so.
pub fn headers_for(
    layout: &Layout<'_>,
    entry: &Entry,
    size: u64,
) -> std::result::Result<Vec<u8>, String> {
    let block_end = entry.header + BLOCK as u64;
    let mut out = Vec::new();
    let mut from = entry.span.start;
    let mut pax_sized = false;
    if let Some((pax_at, records)) = &entry.pax {
        let old = layout.bytes(records);
        if pax_value(old, b"size").is_some() {
            pax_sized = true;
            let new = pax_with(old, b"size", size.to_string().as_bytes())
                .ok_or("its pax records are not LEN key=value lines")?;
            out.extend_from_slice(layout.bytes(&(from..*pax_at)));
            let mut block = block_at(layout, *pax_at)?;
            set_size(&mut block, new.len() as u64, false)?;
            out.extend_from_slice(&block);
            out.extend_from_slice(&new);
            out.resize(out.len().next_multiple_of(BLOCK), 0);
            from = records.start + (records.end - records.start).next_multiple_of(BLOCK as u64);
        }
    }
    out.extend_from_slice(layout.bytes(&(from..entry.header)));
    let mut block = block_at(layout, entry.header)?;
    set_size(&mut block, size, pax_sized)?;
    out.extend_from_slice(&block);
    debug_assert!(block_end <= entry.data.start);
    Ok(out)
}

/// The header block at `at`.
fn block_at(layout: &Layout<'_>, at: u64) -> std::result::Result<[u8; BLOCK], String> {
    let bytes = layout.bytes(&(at..at + BLOCK as u64));
    bytes
        .try_into()
        .map_err(|_| format!("no header block at offset {at:#x}"))
}

/// Sets the size field of the header `block` to `size` (octal as the field was written, or
/// GNU's base-256 once 11 octal digits are too few) and its checksum again. When a pax record
/// carries the size (`pax_sized`) and octal cannot, an octal field is left as the writer left
/// it, as readers take the record's.
fn set_size(
    block: &mut [u8; BLOCK],
    size: u64,
    pax_sized: bool,
) -> std::result::Result<(), String> {
    let field = block.get_mut(124..136).ok_or("no size field")?;
    let octal_field = field.first().is_some_and(|&b| b & 0x80 == 0);
    if !(pax_sized && octal_field && size >= 1 << 33) {
        set_number(field, size);
    }
    let sum = super::tar::checksum(block);
    let checksum = block.get_mut(148..156).ok_or("no checksum field")?;
    set_octal_like(checksum, sum);
    Ok(())
}

/// Writes `value` in the numeric `field`: in octal, with as many digits as the field held
/// (its terminator kept), or in base-256 when they are too few.
fn set_number(field: &mut [u8], value: u64) {
    let base_256 = field.first().is_some_and(|&b| b & 0x80 != 0);
    if base_256 || !set_octal_like(field, value) {
        let be = value.to_be_bytes();
        field.fill(0);
        let len = field.len();
        let from = len.saturating_sub(be.len());
        let skip = be.len().saturating_sub(len);
        if let (Some(slot), Some(tail)) = (field.get_mut(from..), be.get(skip..)) {
            slot.copy_from_slice(tail);
        }
        if let Some(first) = field.first_mut() {
            *first = 0x80;
        }
    }
}

/// Writes `value` in octal over the digits of `field`, zero-padded to their number, the
/// bytes around them as they were; when the field holds no digits, as `%0No\0` (N one less
/// than its length, or 6 with a trailing space for a checksum). False when it does not fit.
fn set_octal_like(field: &mut [u8], value: u64) -> bool {
    let digits = field.iter().position(|b| b.is_ascii_digit());
    let (start, len) = match digits {
        Some(start) => {
            let len = field
                .get(start..)
                .unwrap_or_default()
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            (start, len)
        }
        None if field.len() == 8 => {
            field.copy_from_slice(b"000000\0 ");
            (0, 6)
        }
        None => {
            field.fill(0);
            (0, field.len().saturating_sub(1))
        }
    };
    let text = format!("{value:0len$o}");
    if text.len() > len {
        return false;
    }
    if let Some(slot) = field.get_mut(start..start + len) {
        slot.copy_from_slice(text.as_bytes());
    }
    octal(text.as_bytes()) == Some(value)
}

/// The pax `records` with the value of `key` set to `value` (each record's length written
/// again), every other record as it was.
fn pax_with(records: &[u8], key: &[u8], value: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(records.len() + 8);
    let mut rest = records;
    while !rest.is_empty() {
        let space = rest.iter().position(|&b| b == b' ')?;
        let len: usize = std::str::from_utf8(rest.get(..space)?).ok()?.parse().ok()?;
        let record = rest.get(..len)?;
        let body = record.get(space + 1..)?;
        let matches = body.strip_prefix(key).is_some_and(|r| r.starts_with(b"="));
        if matches {
            // "LEN key=value\n", LEN counting its own digits.
            let inner = key.len() + value.len() + 3;
            let mut total = inner + 1;
            while total != inner + total.to_string().len() {
                total = inner + total.to_string().len();
            }
            out.extend_from_slice(total.to_string().as_bytes());
            out.push(b' ');
            out.extend_from_slice(key);
            out.push(b'=');
            out.extend_from_slice(value);
            out.push(b'\n');
        } else {
            out.extend_from_slice(record);
        }
        rest = rest.get(len..)?;
    }
    Some(out)
}

/// A writer compressing as a tarball was stored.
pub enum Encoder<W: Write> {
    /// Plain.
    None(W),
    /// gzip.
    Gzip(flate2::write::GzEncoder<W>),
    /// xz.
    Xz(xz2::write::XzEncoder<W>),
    /// zstd.
    Zstd(zstd::stream::write::Encoder<'static, W>),
    /// bzip2.
    Bzip2(bzip2::write::BzEncoder<W>),
}

/// The levels tarballs are compressed again at: those of the tools that make packages.
/// gzip 9 and xz 6 are `dpkg-deb`'s defaults (xz's own default preset too); bzip2 9 is
/// `bzip2`'s and conda's; zstd 19 is what conda-package-handling writes a `.conda`'s tarballs
/// at, 3 what `dpkg-deb` and the `zstd` tool use.
pub mod levels {
    /// gzip.
    pub const GZIP: u32 = 9;
    /// xz.
    pub const XZ: u32 = 6;
    /// bzip2.
    pub const BZIP2: u32 = 9;
    /// zstd, in a `.conda`.
    pub const ZSTD_CONDA: i32 = 19;
    /// zstd, elsewhere.
    pub const ZSTD: i32 = 3;
}

impl<W: Write> Encoder<W> {
    /// Compresses into `out` as `compression` says, zstd at `zstd_level`.
    pub fn new(out: W, compression: Compression, zstd_level: i32) -> std::io::Result<Self> {
        Ok(match compression {
            Compression::None => Encoder::None(out),
            Compression::Gzip => Encoder::Gzip(flate2::write::GzEncoder::new(
                out,
                flate2::Compression::new(levels::GZIP),
            )),
            Compression::Xz => {
                // On as many threads as the job runs (as `dpkg-deb` compresses xz): blocks
                // compressed side by side, one valid xz stream.
                let threads = u32::try_from(rayon::current_num_threads()).unwrap_or(1);
                let stream = xz2::stream::MtStreamBuilder::new()
                    .threads(threads.max(1))
                    .preset(levels::XZ)
                    .check(xz2::stream::Check::Crc64)
                    .encoder()
                    .map_err(std::io::Error::other)?;
                Encoder::Xz(xz2::write::XzEncoder::new_stream(out, stream))
            }
            Compression::Zstd => {
                let mut encoder = zstd::stream::write::Encoder::new(out, zstd_level)?;
                encoder.include_checksum(true)?;
                Encoder::Zstd(encoder)
            }
            Compression::Bzip2 => Encoder::Bzip2(bzip2::write::BzEncoder::new(
                out,
                bzip2::Compression::new(levels::BZIP2),
            )),
        })
    }

    /// Ends the stream; the writer back.
    pub fn finish(self) -> std::io::Result<W> {
        match self {
            Encoder::None(w) => Ok(w),
            Encoder::Gzip(e) => e.finish(),
            Encoder::Xz(e) => e.finish(),
            Encoder::Zstd(e) => e.finish(),
            Encoder::Bzip2(e) => e.finish(),
        }
    }

    fn inner(&mut self) -> &mut dyn Write {
        match self {
            Encoder::None(w) => w,
            Encoder::Gzip(e) => e,
            Encoder::Xz(e) => e,
            Encoder::Zstd(e) => e,
            Encoder::Bzip2(e) => e,
        }
    }
}

impl<W: Write> Write for Encoder<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner().write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner().flush()
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// A ustar header block of `name`, `kind`, `size`, linking to `link`.
    fn header(name: &[u8], kind: u8, size: u64, link: &[u8]) -> [u8; BLOCK] {
        let mut block = [0u8; BLOCK];
        block[..name.len()].copy_from_slice(name);
        block[100..108].copy_from_slice(b"0000644\0");
        block[124..136].copy_from_slice(format!("{size:011o}\0").as_bytes());
        block[156] = kind;
        block[157..157 + link.len()].copy_from_slice(link);
        block[257..265].copy_from_slice(b"ustar\x0000");
        block[148..156].copy_from_slice(b"        ");
        let sum: u64 = block.iter().map(|&b| u64::from(b)).sum();
        block[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
        block
    }

    fn tar(members: &[([u8; BLOCK], &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (h, data) in members {
            out.extend_from_slice(h);
            out.extend_from_slice(data);
            out.resize(out.len().next_multiple_of(BLOCK), 0);
        }
        out.extend_from_slice(&[0u8; 2 * BLOCK]);
        out
    }

    fn laid(data: &[u8]) -> Result<Layout<'_>> {
        let budget = Budget::new(u64::MAX);
        layout(Path::new("t.tar"), data, Compression::None, &budget, false)
    }

    #[test]
    fn a_header_given_a_new_size_reads_back_with_it_and_its_other_bytes_kept() {
        let data = tar(&[(header(b"a/lib.so", b'0', 1000, b""), &[7u8; 1000])]);
        let layout = laid(&data).unwrap();
        assert_eq!(layout.entries.len(), 1);
        let entry = &layout.entries[0];
        assert_eq!(
            (entry.data.clone(), entry.name.as_slice()),
            (512..1512, &b"a/lib.so"[..])
        );
        assert_eq!(layout.end, 1536..2560);
        let new = headers_for(&layout, entry, 10).unwrap();
        assert_eq!(new, header(b"a/lib.so", b'0', 10, b"").to_vec());
        // Too large for 11 octal digits: base-256.
        let big = headers_for(&layout, entry, 1 << 40).unwrap();
        assert_eq!(big[124], 0x80);
        assert_eq!(&big[124..136], &[0x80, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0]);
        let sum = super::super::tar::checksum(&big);
        assert_eq!(octal(&big[148..154]), Some(sum));
    }

    #[test]
    fn a_pax_size_record_is_written_again() {
        assert_eq!(
            pax_with(b"12 size=100\n10 uid=10\n", b"size", b"99").unwrap(),
            b"11 size=99\n10 uid=10\n".to_vec()
        );
        assert_eq!(
            pax_with(b"11 size=99\n", b"size", b"100").unwrap(),
            b"12 size=100\n".to_vec()
        );
        // A length of 2 digits would make 100 bytes: it takes 3, and the record 101.
        let value = vec![b'1'; 91];
        let new = pax_with(b"11 size=99\n", b"size", &value).unwrap();
        assert_eq!(new.len(), 101);
        assert!(new.starts_with(b"101 size="));
    }

    #[test]
    fn a_pax_header_with_a_size_record_is_given_the_new_size() {
        let records: &[u8] = b"12 size=700\n15 path=long/x\n";
        let data = tar(&[
            (
                header(b"PaxHeader/x", b'x', records.len() as u64, b""),
                records,
            ),
            (header(b"x", b'0', 700, b""), &[1u8; 700]),
        ]);
        let layout = laid(&data).unwrap();
        let entry = &layout.entries[0];
        assert_eq!(entry.name, b"long/x");
        assert_eq!(entry.span.start, 0);
        let new = headers_for(&layout, entry, 1500).unwrap();
        let records = b"13 size=1500\n15 path=long/x\n";
        let mut expected = header(b"PaxHeader/x", b'x', records.len() as u64, b"").to_vec();
        expected.extend_from_slice(records);
        expected.resize(BLOCK * 2, 0);
        expected.extend_from_slice(&header(b"x", b'0', 1500, b""));
        assert_eq!(new, expected);
        // Past 11 octal digits, the record carries it; the octal field stays.
        let big = headers_for(&layout, entry, 1 << 34).unwrap();
        assert_eq!(&big[2 * BLOCK + 124..2 * BLOCK + 136], b"00000001274\0");
    }

    #[test]
    fn damage_is_refused() {
        let bad = |data: &[u8], what: &str| {
            let e = laid(data).unwrap_err().to_string();
            assert!(e.contains(what), "{e}");
        };
        let mut data = tar(&[(header(b"x", b'0', 3, b""), b"abc")]);
        data[0] = b'y';
        bad(&data, "checksum");
        let data = tar(&[(header(b"x", b'0', 3000, b""), b"abc")]);
        bad(&data[..1024], "truncated");
        bad(&tar(&[(header(b"../x", b'0', 0, b""), b"")]), "t.tar!../x");
        bad(&tar(&[(header(b"/x", b'0', 0, b""), b"")]), "absolute");
        bad(
            &tar(&[(header(b"a/l", b'2', 0, b"../../x"), b"")]),
            "symbolic link",
        );
        bad(
            &tar(&[(header(b"a/l", b'2', 0, b"/etc/x"), b"")]),
            "symbolic link",
        );
        bad(&tar(&[(header(b"a/l", b'1', 0, b"../x"), b"")]), "'..'");
        assert!(laid(&tar(&[(header(b"a/l", b'2', 0, b"../b/x"), b"")])).is_ok());
        let budget = Budget::new(u64::MAX);
        let links = tar(&[(header(b"a/l", b'2', 0, b"/etc/x"), b"")]);
        assert!(layout(Path::new("t"), &links, Compression::None, &budget, true).is_ok());
    }

    #[test]
    fn damaged_bytes_anywhere_are_an_error_or_a_layout_never_a_panic() {
        let records: &[u8] = b"12 size=700\n";
        let data = tar(&[
            (
                header(b"PaxHeader/x", b'x', records.len() as u64, b""),
                records,
            ),
            (header(b"x", b'0', 700, b""), &[1u8; 700]),
            (header(b"l", b'1', 0, b"x"), b""),
        ]);
        for at in 0..data.len() {
            for value in [0u8, 0x80, b'7', b'/', b'.', 0xff] {
                let mut bad = data.clone();
                bad[at] = value;
                if let Ok(layout) = laid(&bad) {
                    for entry in &layout.entries {
                        let _ = headers_for(&layout, entry, 1 << 40);
                        let _ = headers_for(&layout, entry, 3);
                    }
                }
                let _ = laid(&bad[..at]);
            }
        }
    }

    #[test]
    fn links_climbing_out_are_told() {
        assert!(!climbs_out(b"a/b/l", b"../x"));
        assert!(!climbs_out(b"a/b/l", b"../../x"));
        assert!(climbs_out(b"a/b/l", b"../../../x"));
        assert!(climbs_out(b"l", b".."));
        assert!(!climbs_out(b"a/l", b"./b/../../a"));
    }
}
