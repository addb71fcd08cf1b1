//! Text bundles: entries of a text format (preprocessed source, LLVM IR, assembly,
//! dependency files) laid end to end, each between comment lines that carry its entry ID.
//!
//! An entry is written as `\n<C> __CLANG_OFFLOAD_BUNDLE____START__ <ID>\n`, its text verbatim,
//! then `\n<C> __CLANG_OFFLOAD_BUNDLE____END__ <ID>\n`, where `<C>` is the format's line
//! comment. There is no header, so a text bundle starts with a newline.
//!
//! # Example
//!
//! Write a text bundle of two entries with the comment marker of LLVM IR, and parse it.
//!
//! ```
//! use offload::format::text_bundle;
//!
//! let comment = text_bundle::comment_for_type("ll").unwrap();
//! assert_eq!(comment, ";");
//! let entries: [(&str, &[u8]); 2] = [
//!     ("host-x86_64-unknown-linux-gnu-", b"; host code"),
//!     ("hip-amdgcn-amd-amdhsa--gfx90a", b"; device code"),
//! ];
//! let mut text = Vec::new();
//! text_bundle::write(&mut text, comment, &entries).unwrap();
//! assert_eq!(text.len() as u64, text_bundle::size(comment, &[(entries[0].0, 11), (entries[1].0, 13)]));
//!
//! let read = text_bundle::parse(&text, comment).unwrap();
//! assert_eq!(read.len(), 2);
//! assert_eq!(read[1].id, "hip-amdgcn-amd-amdhsa--gfx90a");
//! assert_eq!(read[1].data, b"; device code");
//! ```

use crate::format::error::{Error, ErrorKind, Result};
use memchr::memmem;
use std::io::{self, Write};

/// The file types of clang-offload-bundler's `-type` that are text, with their comment marker.
pub const TEXT_TYPES: &[(&str, &str)] = &[
    ("i", "//"),
    ("ii", "//"),
    ("cui", "//"),
    ("hipi", "//"),
    ("d", "#"),
    ("ll", ";"),
    ("s", "#"),
];

/// The line comment of text file type `file_type`, or `None` if it is not a text type.
pub fn comment_for_type(file_type: &str) -> Option<&'static str> {
    TEXT_TYPES
        .iter()
        .find(|(t, _)| *t == file_type)
        .map(|(_, c)| *c)
}

fn start_marker(comment: &str) -> Vec<u8> {
    format!("\n{comment} __CLANG_OFFLOAD_BUNDLE____START__ ").into_bytes()
}

fn end_marker(comment: &str) -> Vec<u8> {
    format!("\n{comment} __CLANG_OFFLOAD_BUNDLE____END__ ").into_bytes()
}

/// One entry of a text bundle, borrowing the bundle's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextEntry<'a> {
    /// The entry ID from the start marker.
    pub id: &'a str,
    /// Offset of the entry's text from the start of the bundle.
    pub offset: u64,
    /// The entry's text.
    pub data: &'a [u8],
}

/// Parses every entry of a text bundle with comment marker `comment`, in file order. Text
/// outside the markers is ignored; a file without markers has no entries. A start marker
/// without a matching end marker is an error.
pub fn parse<'a>(data: &'a [u8], comment: &str) -> Result<Vec<TextEntry<'a>>> {
    let start = start_marker(comment);
    let end = end_marker(comment);
    let start_finder = memmem::Finder::new(&start);
    let end_finder = memmem::Finder::new(&end);
    let mut entries = Vec::new();
    let mut pos = 0;
    // Each slice below starts where a search just found something, so the `get`s that cut
    // them never come up empty but for a search that ran to the end of the data.
    while let Some(found) = start_finder.find(data.get(pos..).unwrap_or_default()) {
        let marker = pos + found;
        let id_start = marker + start.len();
        let id_line = data.get(id_start..).unwrap_or_default();
        let id_len = memchr::memchr(b'\n', id_line)
            .ok_or_else(|| Error::new(marker as u64, ErrorKind::UnterminatedStartMarker))?;
        let (id_bytes, from_newline) = id_line.split_at(id_len);
        let id = std::str::from_utf8(id_bytes).map_err(|_| {
            Error::new(
                id_start as u64,
                ErrorKind::EntryIdNotUtf8 {
                    index: entries.len() as u64,
                },
            )
        })?;
        let text_start = id_start + id_len + 1;
        let text = from_newline.get(1..).unwrap_or_default();
        let text_len = end_finder.find(text).ok_or_else(|| {
            Error::new(
                marker as u64,
                ErrorKind::MissingEndMarker { id: id.to_string() },
            )
        })?;
        let (entry_text, from_end_marker) = text.split_at(text_len);
        entries.push(TextEntry {
            id,
            offset: text_start as u64,
            data: entry_text,
        });
        // Skip the end marker line; its ID is not checked.
        let after = text_start + text_len + end.len();
        let end_line = from_end_marker.get(end.len()..).unwrap_or_default();
        pos = memchr::memchr(b'\n', end_line).map_or(data.len(), |n| after + n + 1);
    }
    Ok(entries)
}

/// Writes the start marker of entry `id`.
pub fn write_start<W: Write + ?Sized>(out: &mut W, comment: &str, id: &str) -> io::Result<()> {
    out.write_all(&start_marker(comment))?;
    out.write_all(id.as_bytes())?;
    out.write_all(b"\n")
}

/// Writes the end marker of entry `id`.
pub fn write_end<W: Write + ?Sized>(out: &mut W, comment: &str, id: &str) -> io::Result<()> {
    out.write_all(&end_marker(comment))?;
    out.write_all(id.as_bytes())?;
    out.write_all(b"\n")
}

/// The size of the text bundle [`write`](fn@write) makes of `entries` (ID and text size), saturating.
pub fn size<S: AsRef<str>>(comment: &str, entries: &[(S, u64)]) -> u64 {
    let markers = (start_marker(comment).len() + end_marker(comment).len()) as u64;
    entries.iter().fold(0u64, |total, (id, text)| {
        let lines = 2 * (id.as_ref().len() as u64 + 1);
        total.saturating_add(markers + lines).saturating_add(*text)
    })
}

/// Writes a whole text bundle of `entries` (ID and text), in order.
pub fn write<W: Write + ?Sized>(
    out: &mut W,
    comment: &str,
    entries: &[(&str, &[u8])],
) -> io::Result<()> {
    for (id, data) in entries {
        write_start(out, comment, id)?;
        out.write_all(data)?;
        write_end(out, comment, id)?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_size_is_what_writing_gives() {
        let entries: [(&str, &[u8]); 2] = [
            ("host-x86_64-unknown-linux-gnu-", b"define void @f() {}\n"),
            ("hip-amdgcn-amd-amdhsa--gfx90a", b""),
        ];
        let mut written = Vec::new();
        write(&mut written, ";", &entries).unwrap();
        let sizes: Vec<(&str, u64)> = entries
            .iter()
            .map(|(id, t)| (*id, t.len() as u64))
            .collect();
        assert_eq!(size(";", &sizes), written.len() as u64);
        assert_eq!(size("//", &[("x", u64::MAX)]), u64::MAX);
    }

    #[test]
    fn bytes_match_a_text_bundle_written_by_llvm_19() {
        let mut out = Vec::new();
        write(
            &mut out,
            ";",
            &[
                (
                    "host-x86_64-unknown-linux-gnu-",
                    b"host line1\nhost line2\n",
                ),
                ("openmp-amdgcn-amd-amdhsa--gfx906", b"dev line\n"),
            ],
        )
        .unwrap();
        let expected = "\n; __CLANG_OFFLOAD_BUNDLE____START__ host-x86_64-unknown-linux-gnu-\nhost line1\nhost line2\n\n; __CLANG_OFFLOAD_BUNDLE____END__ host-x86_64-unknown-linux-gnu-\n\n; __CLANG_OFFLOAD_BUNDLE____START__ openmp-amdgcn-amd-amdhsa--gfx906\ndev line\n\n; __CLANG_OFFLOAD_BUNDLE____END__ openmp-amdgcn-amd-amdhsa--gfx906\n";
        assert_eq!(String::from_utf8(out.clone()).unwrap(), expected);
        let entries = parse(&out, ";").unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].id, "host-x86_64-unknown-linux-gnu-");
        assert_eq!(entries[0].data, b"host line1\nhost line2\n");
        assert_eq!(entries[1].data, b"dev line\n");
    }

    #[test]
    fn every_text_type_has_its_comment() {
        assert_eq!(comment_for_type("ll"), Some(";"));
        assert_eq!(comment_for_type("s"), Some("#"));
        assert_eq!(comment_for_type("d"), Some("#"));
        assert_eq!(comment_for_type("i"), Some("//"));
        assert_eq!(comment_for_type("cui"), Some("//"));
        assert_eq!(comment_for_type("bc"), None);
    }

    #[test]
    fn wrong_comment_finds_nothing() {
        let mut out = Vec::new();
        write(&mut out, ";", &[("a", b"x")]).unwrap();
        assert!(parse(&out, "#").unwrap().is_empty());
        assert!(parse(b"plain text\n", ";").unwrap().is_empty());
    }

    #[test]
    fn damaged_markers_are_errors() {
        let mut out = Vec::new();
        write(
            &mut out,
            "#",
            &[("host-x86_64-unknown-linux-gnu-", b"text")],
        )
        .unwrap();
        let no_end = &out[..out.len() - 40];
        let err = parse(no_end, "#").unwrap_err();
        assert_eq!(err.offset, 0);
        assert!(matches!(err.kind, ErrorKind::MissingEndMarker { .. }));
        let start_only = b"\n# __CLANG_OFFLOAD_BUNDLE____START__ host";
        assert_eq!(
            parse(start_only, "#").unwrap_err().kind,
            ErrorKind::UnterminatedStartMarker
        );
    }

    proptest! {
        #[test]
        fn any_entries_survive_write_then_read(
            entries in proptest::collection::vec(("[a-z0-9:+_-]{1,40}", "[ -~\n]{0,200}"), 0..6),
        ) {
            let refs: Vec<(&str, &[u8])> = entries.iter().map(|(id, d)| (id.as_str(), d.as_bytes())).collect();
            let mut out = Vec::new();
            write(&mut out, "//", &refs).unwrap();
            let parsed = parse(&out, "//").unwrap();
            prop_assert_eq!(parsed.len(), refs.len());
            for (entry, (id, data)) in parsed.iter().zip(&refs) {
                prop_assert_eq!(entry.id, *id);
                prop_assert_eq!(entry.data, *data);
            }
        }
    }
}
