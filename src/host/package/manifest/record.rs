//! A wheel's `RECORD` (and an installed distribution's, in its `.dist-info`): CSV rows of
//! `path,sha256=<digest>,size`, the digest in URL-safe base64 without padding; a file listed
//! without a hash (the `RECORD` itself, compiled `.pyc`) has empty hash and size fields.
//!
//! The CSV is Python's `csv` module's default dialect: fields separated by `,`, a field holding
//! `,`, `"`, CR or LF written in double quotes with each `"` doubled, rows ending in CRLF (pip
//! writes them so) or LF (or a lone CR, which the reader takes as well). An update rewrites
//! only the hash and size fields of the rows of files rewritten (the path field kept as it was
//! written) and drops the rows of files removed: every other byte, line ends and order
//! included, stays.

use std::borrow::Cow;
use std::ops::Range;

use super::{Counts, Edit, ManifestError, Sha256};

/// One field of a row: where its text lies in the manifest, and its value once unquoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field<'a> {
    /// Its bytes as written, quotes included.
    pub raw: Range<usize>,
    /// Its value.
    pub value: Cow<'a, [u8]>,
}

/// One row of a `RECORD`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row<'a> {
    /// Its bytes, line end aside.
    pub text: Range<usize>,
    /// Its line end: CRLF, LF, CR, or nothing for a last row without one.
    pub end: Range<usize>,
    /// Its fields (none for an empty line).
    pub fields: Vec<Field<'a>>,
}

impl Row<'_> {
    /// The path the row lists, if it lists one.
    pub fn path(&self) -> Option<&[u8]> {
        self.fields.first().map(|f| f.value.as_ref())
    }

    /// Whether the row lists its file without hash and size (the `RECORD` itself, `.pyc`).
    pub fn unhashed(&self) -> bool {
        self.fields
            .iter()
            .skip(1)
            .take(2)
            .all(|f| f.value.is_empty())
    }
}

/// The rows of the `RECORD` `data`, in order; an unterminated quoted field is an error.
pub fn parse(data: &[u8]) -> Result<Vec<Row<'_>>, ManifestError> {
    let mut rows = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let row = parse_row(data, at)?;
        at = row.end.end;
        rows.push(row);
    }
    Ok(rows)
}

/// The row starting at `start` of `data`.
fn parse_row(data: &[u8], start: usize) -> Result<Row<'_>, ManifestError> {
    let mut fields = Vec::new();
    let mut at = start;
    loop {
        let (field, next) = parse_field(data, at)?;
        // A line with nothing on it is a row without fields, as Python's reader gives it.
        let empty_line = fields.is_empty() && field.raw.is_empty();
        match data.get(next) {
            Some(b',') => {
                fields.push(field);
                at = next + 1;
            }
            _ => {
                if !empty_line {
                    fields.push(field);
                }
                let end = line_end(data, next);
                return Ok(Row {
                    text: start..next,
                    end: next..end,
                    fields,
                });
            }
        }
    }
}

/// Where the line end at `at` of `data` ends (CRLF, LF, CR, or none at the end).
fn line_end(data: &[u8], at: usize) -> usize {
    match (data.get(at), data.get(at + 1)) {
        (Some(b'\r'), Some(b'\n')) => at + 2,
        (Some(b'\r' | b'\n'), _) => at + 1,
        _ => at,
    }
}

/// The field starting at `start` of `data`, and where it stops (at `,`, a line end or the
/// end). As Python's reader (not strict): text after a closing quote is part of the field.
fn parse_field(data: &[u8], start: usize) -> Result<(Field<'_>, usize), ManifestError> {
    let plain_end = |from: usize| {
        data.get(from..)
            .and_then(|rest| memchr::memchr3(b',', b'\r', b'\n', rest))
            .map_or(data.len(), |n| from + n)
    };
    if data.get(start) != Some(&b'"') {
        let end = plain_end(start);
        let value = Cow::Borrowed(data.get(start..end).unwrap_or_default());
        return Ok((
            Field {
                raw: start..end,
                value,
            },
            end,
        ));
    }
    let mut value = Vec::new();
    let mut at = start + 1;
    loop {
        let rest = data.get(at..).unwrap_or_default();
        let Some(quote) = memchr::memchr(b'"', rest) else {
            return Err(ManifestError::new(
                start,
                "a quoted field is not closed before the end",
            ));
        };
        value.extend_from_slice(rest.get(..quote).unwrap_or_default());
        at += quote + 1;
        if data.get(at) == Some(&b'"') {
            value.push(b'"');
            at += 1;
            continue;
        }
        let end = plain_end(at);
        value.extend_from_slice(data.get(at..end).unwrap_or_default());
        let field = Field {
            raw: start..end,
            value: Cow::Owned(value),
        };
        return Ok((field, end));
    }
}

/// `value` as Python's `csv` writer writes a field: in double quotes, each `"` doubled, when it
/// holds `,`, `"`, CR or LF; else as it is.
#[cfg_attr(not(any(test, feature = "internals")), allow(dead_code))]
pub fn quoted(value: &[u8]) -> Cow<'_, [u8]> {
    if !value
        .iter()
        .any(|b| matches!(b, b',' | b'"' | b'\r' | b'\n'))
    {
        return Cow::Borrowed(value);
    }
    let mut text = Vec::with_capacity(value.len() + 2);
    text.push(b'"');
    for &byte in value {
        if byte == b'"' {
            text.push(b'"');
        }
        text.push(byte);
    }
    text.push(b'"');
    Cow::Owned(text)
}

/// The hash field of a file of digest `digest`: `sha256=` and the digest in URL-safe base64
/// without padding.
pub fn hash_field(digest: &Sha256) -> String {
    format!("sha256={}", urlsafe_base64(digest))
}

/// A row listing `path` (its digest and size, or none), line end aside, as pip writes it.
#[cfg_attr(not(any(test, feature = "internals")), allow(dead_code))]
pub fn row(path: &[u8], file: Option<(&Sha256, u64)>) -> Vec<u8> {
    let mut text = quoted(path).into_owned();
    match file {
        Some((digest, size)) => {
            text.extend_from_slice(format!(",{},{size}", hash_field(digest)).as_bytes());
        }
        None => text.extend_from_slice(b",,"),
    }
    text
}

/// `bytes` in URL-safe base64 (RFC 4648 section 5) without padding.
pub fn urlsafe_base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let digit = |six: u32| {
        char::from(
            ALPHABET
                .get(usize::try_from(six & 63).unwrap_or(0))
                .copied()
                .unwrap_or(b'A'),
        )
    };
    let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let mut word = 0u32;
        for (i, &byte) in chunk.iter().enumerate() {
            word |= u32::from(byte) << (16 - 8 * i);
        }
        // Three bytes make four digits; a chunk of one or two bytes, two or three.
        for i in 0..=chunk.len() {
            text.push(digit(word >> (18 - 6 * i)));
        }
    }
    text
}

/// The `RECORD` `data` with the rows of files `edit` names changed: a file removed loses its
/// row; a file rewritten gets its new hash and size (a row without hash and size stays so).
/// `edit` is asked of each row's path. Every other byte stays.
pub fn update(
    data: &[u8],
    mut edit: impl FnMut(&[u8]) -> Option<Edit<Sha256>>,
) -> Result<(Vec<u8>, Counts), ManifestError> {
    let rows = parse(data)?;
    let mut out = Vec::with_capacity(data.len());
    let mut counts = Counts::default();
    let bytes = |range: &Range<usize>| data.get(range.clone()).unwrap_or_default();
    for row in &rows {
        let whole = row.text.start..row.end.end;
        match row.path().and_then(&mut edit) {
            Some(Edit::Removed) => counts.removed += 1,
            Some(Edit::Rewritten { digest, size }) if !row.unhashed() => {
                let (Some(path), Some(size_field)) = (row.fields.first(), row.fields.get(2)) else {
                    // A row of a path alone, or of no size: no size to give it.
                    out.extend_from_slice(bytes(&whole));
                    continue;
                };
                let mut new = bytes(&path.raw).to_vec();
                new.extend_from_slice(format!(",{},{size}", hash_field(&digest)).as_bytes());
                // Fields past the size, if any, stay as they were.
                new.extend_from_slice(bytes(&(size_field.raw.end..row.text.end)));
                if new != bytes(&row.text) {
                    counts.rewritten += 1;
                }
                out.extend_from_slice(&new);
                out.extend_from_slice(bytes(&row.end));
            }
            _ => out.extend_from_slice(bytes(&whole)),
        }
    }
    Ok((out, counts))
}

/// The `RECORD` `data` with the paths `rename` gives a new name (`Some`) written anew, as
/// Python's `csv` writer writes a field; every other byte stays.
pub fn renamed(
    data: &[u8],
    rename: impl Fn(&[u8]) -> Option<Vec<u8>>,
) -> Result<Vec<u8>, ManifestError> {
    let rows = parse(data)?;
    let mut out = Vec::with_capacity(data.len());
    let mut at = 0;
    for row in &rows {
        let (Some(path), Some(new)) = (row.fields.first(), row.path().and_then(&rename)) else {
            continue;
        };
        out.extend_from_slice(data.get(at..path.raw.start).unwrap_or_default());
        out.extend_from_slice(&quoted(&new));
        at = path.raw.end;
    }
    out.extend_from_slice(data.get(at..).unwrap_or_default());
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const RECORD: &[u8] =
        b"demo/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\r\n\
\"demo/a,b.co\",sha256=ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0,3\r\n\
\"demo/say \"\"hi\"\".co\",sha256=ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0,3\r\n\
demo/__pycache__/__init__.cpython-312.pyc,,\r\n\
../../../bin/demo,sha256=ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0,3\n\
demo-1.0.dist-info/RECORD,,";

    #[test]
    fn rows_read_as_pythons_csv_reads_them_and_write_back_byte_for_byte() {
        let rows = parse(RECORD).unwrap();
        let paths: Vec<&[u8]> = rows.iter().filter_map(Row::path).collect();
        assert_eq!(
            paths,
            [
                &b"demo/__init__.py"[..],
                b"demo/a,b.co",
                b"demo/say \"hi\".co",
                b"demo/__pycache__/__init__.cpython-312.pyc",
                b"../../../bin/demo",
                b"demo-1.0.dist-info/RECORD",
            ]
        );
        assert!(rows[3].unhashed() && !rows[0].unhashed());
        assert_eq!(&RECORD[rows[4].end.clone()], b"\n");
        assert!(rows[5].end.is_empty());
        let written: Vec<u8> = rows
            .iter()
            .flat_map(|r| RECORD[r.text.start..r.end.end].iter().copied())
            .collect();
        assert_eq!(written, RECORD);
        // Nothing edited: the same bytes.
        let (same, counts) = update(RECORD, |_| None).unwrap();
        assert_eq!((same.as_slice(), counts), (RECORD, Counts::default()));
    }

    #[test]
    fn an_update_changes_hash_and_size_of_rewritten_files_and_drops_removed_ones() {
        let digest = crate::host::package::manifest::sha256(b"new contents");
        let (new, counts) = update(RECORD, |path| match path {
            b"demo/a,b.co" => Some(Edit::Rewritten { digest, size: 12 }),
            b"demo/say \"hi\".co" => Some(Edit::Removed),
            // Listed without a hash: stays so.
            b"demo/__pycache__/__init__.cpython-312.pyc" => {
                Some(Edit::Rewritten { digest, size: 1 })
            }
            _ => None,
        })
        .unwrap();
        assert_eq!(
            counts,
            Counts {
                rewritten: 1,
                removed: 1
            }
        );
        let expected = format!(
            "demo/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\r\n\
             \"demo/a,b.co\",{},12\r\n\
             demo/__pycache__/__init__.cpython-312.pyc,,\r\n\
             ../../../bin/demo,sha256=ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0,3\n\
             demo-1.0.dist-info/RECORD,,",
            hash_field(&digest)
        );
        assert_eq!(String::from_utf8(new).unwrap(), expected);
    }

    #[test]
    fn base64_is_urlsafe_without_padding() {
        // As Python's base64.urlsafe_b64encode(...).rstrip(b"=") gives them.
        assert_eq!(urlsafe_base64(b""), "");
        assert_eq!(urlsafe_base64(b"f"), "Zg");
        assert_eq!(urlsafe_base64(b"fo"), "Zm8");
        assert_eq!(urlsafe_base64(b"foo"), "Zm9v");
        assert_eq!(urlsafe_base64(&[0xfb, 0xff]), "-_8");
        assert_eq!(
            hash_field(&crate::host::package::manifest::sha256(b"")),
            "sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"
        );
    }

    #[test]
    fn an_unclosed_quote_is_an_error_at_its_offset() {
        let e = parse(b"a,b,c\n\"open,x,1\n").unwrap_err();
        assert_eq!(e.offset, 6);
    }

    proptest! {
        #[test]
        fn rows_written_read_back(
            rows in proptest::collection::vec(
                (proptest::collection::vec(any::<u8>(), 1..20), any::<Option<([u8; 32], u64)>>()),
                0..8,
            ),
            crlf in any::<bool>(),
        ) {
            let end: &[u8] = if crlf { b"\r\n" } else { b"\n" };
            let mut data = Vec::new();
            for (path, file) in &rows {
                data.extend(row(path, file.as_ref().map(|(d, s)| (d, *s))));
                data.extend_from_slice(end);
            }
            let parsed = parse(&data).unwrap();
            prop_assert_eq!(parsed.len(), rows.len());
            for (read, (path, file)) in parsed.iter().zip(&rows) {
                prop_assert_eq!(read.path(), Some(path.as_slice()));
                prop_assert_eq!(read.unhashed(), file.is_none());
            }
        }
    }
}
