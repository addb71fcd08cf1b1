//! Tarballs, plain or compressed with gzip, xz, zstd or bzip2, read as one stream: ustar
//! headers (with their name prefix), GNU long names (`././@LongLink`) and pax `path` records.
//! A member is read as far as its first bytes; when they say it may hold device code it is
//! gathered into memory, or a spill file once large, and handed over; otherwise the stream is
//! read past it. The tarball is never held whole, inflated or not. Offsets in errors are in
//! the tar stream (what a compressed tarball inflates to).

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};
use crate::host::package::{
    checked_name, fill, gather, member_error, Budget, Budgeted, Member, Visit, HEAD,
};

/// How a tarball is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Plain.
    None,
    /// gzip (`.tar.gz`, `.tgz`, a Debian package's `data.tar.gz`).
    Gzip,
    /// xz (`.tar.xz`).
    Xz,
    /// zstd (`.tar.zst`, the tarballs of a `.conda`).
    Zstd,
    /// bzip2 (`.tar.bz2`, conda's older packages).
    Bzip2,
}

/// The size of a tar block.
pub(super) const BLOCK: usize = 512;

/// The most an xz decoder may hold (its dictionary): xz's presets ask at most 64 MiB.
const XZ_MEMORY: u64 = 256 << 20;

/// The most a long name or pax record may take.
const MAX_METADATA: u64 = 1 << 20;

/// The compression whose magic `data` starts with, if any (a plain tarball is not told here).
pub fn compression_magic(data: &[u8]) -> Option<Compression> {
    if data.starts_with(&[0x1f, 0x8b]) {
        Some(Compression::Gzip)
    } else if data.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        Some(Compression::Xz)
    } else if data.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Some(Compression::Zstd)
    } else if data.starts_with(b"BZh") {
        Some(Compression::Bzip2)
    } else {
        None
    }
}

/// How `data` stores a tarball, if it is one: plain, when it starts with a ustar header, or
/// compressed, when what its first bytes inflate to does.
pub fn compression_of(data: &[u8]) -> Option<Compression> {
    if is_header(data) {
        return Some(Compression::None);
    }
    let compression = compression_magic(data)?;
    let mut stream = decoder(data, compression).ok()?;
    let mut head = [0u8; BLOCK];
    let got = fill(&mut *stream, &mut head).ok()?;
    is_header(head.get(..got)?).then_some(compression)
}

/// Whether `block` starts with a ustar (POSIX or GNU) header.
pub fn is_header(block: &[u8]) -> bool {
    block.get(257..262) == Some(b"ustar") && block.len() >= BLOCK
}

/// A reader of what `data` inflates to.
pub(super) fn decoder<'a>(
    data: &'a [u8],
    compression: Compression,
) -> std::io::Result<Box<dyn Read + 'a>> {
    Ok(match compression {
        Compression::None => Box::new(data),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(data)),
        Compression::Xz => {
            let stream =
                xz2::stream::Stream::new_stream_decoder(XZ_MEMORY, xz2::stream::CONCATENATED)
                    .map_err(std::io::Error::other)?;
            Box::new(xz2::read::XzDecoder::new_stream(data, stream))
        }
        Compression::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(data)?),
        Compression::Bzip2 => Box::new(bzip2::read::MultiBzDecoder::new(data)),
    })
}

/// What a header says.
pub(super) struct Header {
    /// Where it is in the tar stream.
    pub(super) at: u64,
    /// Its name (the ustar prefix joined), before any long name replaces it.
    pub(super) name: Vec<u8>,
    /// Its type flag.
    pub(super) kind: u8,
    /// The size of its data.
    pub(super) size: u64,
    /// Its link name field.
    pub(super) link: Vec<u8>,
}

/// A symbolic or hard link member of a tarball.
pub struct Link<'a> {
    /// Its path in the tarball, as a member's is given (without a leading `./`).
    pub name: &'a [u8],
    /// What it points to, as stored: for a symbolic link, a path from its folder or an
    /// absolute one; for a hard link, another member's path in the tarball.
    pub target: &'a [u8],
    /// Whether it is a hard link.
    pub hard: bool,
}

/// The stream being read, and where it is.
pub(super) struct Stream<'r> {
    pub(super) read: Box<dyn Read + 'r>,
    pub(super) at: u64,
}

impl Stream<'_> {
    /// Reads until `buf` is full or the stream ends; returns how many bytes it read.
    pub(super) fn block(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let got = fill(&mut *self.read, buf)?;
        self.at += got as u64;
        Ok(got)
    }

    /// Reads past `len` bytes; how many there were.
    pub(super) fn skip(&mut self, len: u64) -> std::io::Result<u64> {
        let skipped = std::io::copy(&mut (&mut self.read).take(len), &mut std::io::sink())?;
        self.at += skipped;
        Ok(skipped)
    }
}

/// Reads the tarball `data` (stored as `compression`, at `path`), calling `visit` for each
/// member that may hold device code (see [`super::read`]).
pub fn read(
    path: &Path,
    data: &[u8],
    compression: Compression,
    budget: &Budget,
    visit: &mut Visit<'_>,
) -> Result<Vec<Error>> {
    read_listing(
        path,
        data,
        compression,
        budget,
        visit,
        &mut |_| {},
        &mut |_| {},
    )
}

/// [`read`], calling `links` for each symbolic or hard link member and `files` with the name
/// of each regular member, named as checked.
pub fn read_listing(
    path: &Path,
    data: &[u8],
    compression: Compression,
    budget: &Budget,
    visit: &mut Visit<'_>,
    links: &mut dyn FnMut(&Link<'_>),
    files: &mut dyn FnMut(&[u8]),
) -> Result<Vec<Error>> {
    let mut read = decoder(data, compression).map_err(|e| Error::io(path, e))?;
    if compression != Compression::None {
        // What a compressed tarball inflates to is taken from the budget; a plain one costs
        // no more than its bytes.
        read = Box::new(Budgeted { read, budget });
    }
    let mut stream = Stream { read, at: 0 };
    let mut problems = Vec::new();
    let mut long_name: Option<Vec<u8>> = None;
    let mut long_link: Option<Vec<u8>> = None;
    while let Some(mut header) = next_header(path, &mut stream)? {
        let padded = header
            .size
            .checked_next_multiple_of(BLOCK as u64)
            .ok_or_else(|| {
                member_error(
                    path,
                    &header.name,
                    format!(
                        "tar header at offset {:#x}: a size of {} bytes, past what any file holds",
                        header.at, header.size
                    ),
                )
            })?;
        match header.kind {
            // A GNU long name or link target, or a pax header: the next member's name and
            // link target.
            b'L' | b'K' | b'x' => {
                let text = metadata(path, &mut stream, &header)?;
                let gnu = || Some(text.split(|&b| b == 0).next().unwrap_or_default().to_vec());
                match header.kind {
                    b'L' => long_name = gnu().or(long_name),
                    b'K' => long_link = gnu().or(long_link),
                    _ => {
                        long_name = pax_value(&text, b"path").or(long_name);
                        long_link = pax_value(&text, b"linkpath").or(long_link);
                    }
                }
                skip(path, &mut stream, &header, padded - header.size)?;
                continue;
            }
            _ => {}
        }
        if let Some(name) = long_name.take() {
            header.name = name;
        }
        if let Some(link) = long_link.take() {
            header.link = link;
        }
        let name = strip_dot(&header.name).to_vec();
        let regular = matches!(header.kind, b'0' | 0 | b'7');
        let named = !name.is_empty();
        if named && header.kind != b'g' {
            if let Err(e) = checked_name(path, &name, header.at) {
                problems.push(e);
                skip(path, &mut stream, &header, padded)?;
                continue;
            }
        }
        if !regular || !named {
            if named && matches!(header.kind, b'1' | b'2') {
                links(&Link {
                    name: &name,
                    target: &header.link,
                    hard: header.kind == b'1',
                });
            }
            skip(path, &mut stream, &header, padded)?;
            continue;
        }
        files(&name);
        member(path, &mut stream, &header, &name, visit)?;
        skip(path, &mut stream, &header, padded - header.size)?;
    }
    Ok(problems)
}

/// Reads the member `header` describes (named `name`), hands it to `visit` when its first
/// bytes say it may hold device code, and reads past its data (not its padding).
fn member(
    path: &Path,
    stream: &mut Stream<'_>,
    header: &Header,
    name: &[u8],
    visit: &mut Visit<'_>,
) -> Result<()> {
    let io = |e: std::io::Error| member_error(path, name, format!("reading it: {e}"));
    let mut head = vec![0u8; usize::try_from(header.size).unwrap_or(HEAD).min(HEAD)];
    let got = stream.block(&mut head).map_err(io)?;
    if got < head.len() {
        return Err(truncated(path, name, header));
    }
    let rest = header.size - got as u64;
    if !super::may_hold_device_code(&head) {
        if stream.skip(rest).map_err(io)? < rest {
            return Err(truncated(path, name, header));
        }
        return Ok(());
    }
    let mut bounded = (&mut stream.read).take(rest);
    let bytes = gather(&mut bounded, &head, header.size).map_err(|e| match e {
        Some(e) => io(e),
        None => truncated(path, name, header),
    })?;
    stream.at += bytes.len() - got as u64;
    if bytes.len() < header.size {
        return Err(truncated(path, name, header));
    }
    visit(&Member {
        name,
        bytes: bytes.bytes(),
    })
}

/// The error of a member whose data the stream ends within.
pub(super) fn truncated(path: &Path, name: &[u8], header: &Header) -> Error {
    member_error(
        path,
        name,
        format!(
            "member with header at offset {:#x} of the tar stream declares {} bytes, and the stream ends before them: truncated",
            header.at, header.size
        ),
    )
}

/// Reads past `len` bytes of padding or data after `header`'s member.
pub(super) fn skip(path: &Path, stream: &mut Stream<'_>, header: &Header, len: u64) -> Result<()> {
    let skipped = stream
        .skip(len)
        .map_err(|e| member_error(path, &header.name, format!("reading it: {e}")))?;
    if skipped < len {
        return Err(truncated(path, &header.name, header));
    }
    Ok(())
}

/// The next header, `None` at the end of the archive (a zero block, or the stream's end).
pub(super) fn next_header(path: &Path, stream: &mut Stream<'_>) -> Result<Option<Header>> {
    let at = stream.at;
    let mut block = [0u8; BLOCK];
    let got = stream
        .block(&mut block)
        .map_err(|e| Error::file(path, format!("tar stream at offset {at:#x}: {e}")))?;
    if got == 0 || block.iter().all(|&b| b == 0) {
        return Ok(None);
    }
    let raw_name = field(&block, 0, 100).to_vec();
    if got < BLOCK {
        return Err(member_error(
            path,
            &raw_name,
            format!("tar header at offset {at:#x}: the stream ends within it: truncated"),
        ));
    }
    let stored = octal(field(&block, 148, 8));
    let sum = checksum(&block);
    if stored != Some(sum) {
        return Err(member_error(
            path,
            &raw_name,
            format!(
                "tar header at offset {at:#x}: its checksum says {}, its bytes add up to {sum}: not a tar header, not read further",
                stored.map_or_else(|| "nothing readable".to_string(), |s| s.to_string())
            ),
        ));
    }
    let size = size(block.get(124..136).unwrap_or_default()).ok_or_else(|| {
        member_error(
            path,
            &raw_name,
            format!("tar header at offset {at:#x}: unreadable size"),
        )
    })?;
    let mut name = raw_name;
    let prefix = field(&block, 345, 155);
    if block.get(257..263) == Some(b"ustar\0") && !prefix.is_empty() {
        let mut whole = prefix.to_vec();
        whole.push(b'/');
        whole.extend_from_slice(&name);
        name = whole;
    }
    Ok(Some(Header {
        at,
        name,
        kind: block.get(156).copied().unwrap_or(0),
        size,
        link: field(&block, 157, 100).to_vec(),
    }))
}

/// A NUL-terminated field of `block`.
pub(super) fn field(block: &[u8], start: usize, len: usize) -> &[u8] {
    let raw = block.get(start..start + len).unwrap_or_default();
    raw.split(|&b| b == 0).next().unwrap_or_default()
}

/// An octal number, spaces and NULs around it allowed.
pub(super) fn octal(raw: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(raw).ok()?;
    let text = text.trim_matches(|c| c == ' ' || c == '\0');
    if text.is_empty() {
        return Some(0);
    }
    u64::from_str_radix(text, 8).ok()
}

/// A size field: octal, or base-256 (GNU's, for sizes of 8 GiB and more) when its first bit
/// is set.
fn size(raw: &[u8]) -> Option<u64> {
    match raw.split_first() {
        Some((&first, rest)) if first & 0x80 != 0 => {
            let mut value = u64::from(first & 0x3f);
            for &b in rest {
                value = value.checked_mul(256)?.checked_add(u64::from(b))?;
            }
            Some(value)
        }
        _ => octal(raw.split(|&b| b == 0).next().unwrap_or_default()),
    }
}

/// The data of a long name or pax header member, bounded.
pub(super) fn metadata(path: &Path, stream: &mut Stream<'_>, header: &Header) -> Result<Vec<u8>> {
    if header.size > MAX_METADATA {
        return Err(member_error(
            path,
            &header.name,
            format!(
                "tar header at offset {:#x}: a long name or pax header of {} bytes (at most {MAX_METADATA} read)",
                header.at, header.size
            ),
        ));
    }
    let mut text = vec![0u8; usize::try_from(header.size).unwrap_or(0)];
    let got = stream
        .block(&mut text)
        .map_err(|e| member_error(path, &header.name, format!("reading it: {e}")))?;
    if got < text.len() {
        return Err(truncated(path, &header.name, header));
    }
    Ok(text)
}

/// The checksum of the header `block`: the sum of its bytes, its checksum field counted as
/// spaces.
pub(super) fn checksum(block: &[u8]) -> u64 {
    block
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            if (148..156).contains(&i) {
                32
            } else {
                u64::from(b)
            }
        })
        .sum()
}

/// The value of the pax record `key` of `records` (`LEN key=VALUE\n`), the last if several.
pub(super) fn pax_value(records: &[u8], key: &[u8]) -> Option<Vec<u8>> {
    let mut rest = records;
    let mut found = None;
    while !rest.is_empty() {
        let space = rest.iter().position(|&b| b == b' ')?;
        let len: usize = std::str::from_utf8(rest.get(..space)?).ok()?.parse().ok()?;
        let record = rest.get(space + 1..len)?;
        let record = record.strip_suffix(b"\n").unwrap_or(record);
        let value = record
            .strip_prefix(key)
            .and_then(|rest| rest.strip_prefix(b"="));
        if let Some(value) = value {
            found = Some(value.to_vec());
        }
        rest = rest.get(len..)?;
    }
    found
}

/// `name` without the leading `./` (and `/`-only parts of it) tar writes.
pub(super) fn strip_dot(name: &[u8]) -> &[u8] {
    let mut name = name;
    while let Some(rest) = name.strip_prefix(b"./") {
        name = rest;
    }
    if name == b"." {
        return &[];
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_octal_and_base_256() {
        assert_eq!(size(b"00000001750\0"), Some(1000));
        assert_eq!(
            size(&[0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0]),
            Some(0x1000)
        );
        assert_eq!(size(b"zz"), None);
    }

    #[test]
    fn pax_paths_are_read() {
        assert_eq!(
            pax_value(b"19 path=a/b/c.so.1\n11 uid=100\n", b"path").as_deref(),
            Some(&b"a/b/c.so.1"[..])
        );
        assert_eq!(pax_value(b"11 uid=100\n", b"path"), None);
        assert_eq!(pax_value(b"99 path=x\n", b"path"), None);
    }

    #[test]
    fn a_size_past_any_file_is_an_error() {
        let mut block = [0u8; BLOCK];
        block[..4].copy_from_slice(b"big\0");
        block[124] = 0x80;
        block[128..136].fill(0xff);
        block[156] = b'0';
        block[257..263].copy_from_slice(b"ustar\0");
        block[148..156].fill(b' ');
        let sum: u32 = block.iter().map(|&b| u32::from(b)).sum();
        block[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
        let budget = Budget::new(u64::MAX);
        let e = read(
            Path::new("t.tar"),
            &block,
            Compression::None,
            &budget,
            &mut |_| Ok(()),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("t.tar!big") && e.contains("past what any file holds"),
            "{e}"
        );
    }

    #[test]
    fn leading_dots_are_dropped() {
        assert_eq!(strip_dot(b"./././usr/lib"), b"usr/lib");
        assert_eq!(strip_dot(b"./"), b"");
    }
}
