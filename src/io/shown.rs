//! How text that comes from files is shown to people: names of files and folders, entry IDs,
//! archive keys, targets. Such text may hold a newline or a terminal escape sequence that
//! would fake a line of output or recolour the terminal, so every human (non-JSON) output
//! passes it through [`shown`]; JSON output carries the exact text, escaped by JSON itself.
//!
//! The rule, that of `ls --escape` with hexadecimal for the rest: a backslash is doubled;
//! newline, tab, carriage return, and escape are written `\n`, `\t`, `\r` and `\e`; any other
//! control character (C0, DEL, C1) and any byte that is not part of valid UTF-8 is written
//! `\xHH`. Everything else, printable Unicode included, is shown as it is, so ordinary names
//! read unchanged.
//!
//! JSON strings are text: a name that is not UTF-8 is carried beside its text (where each
//! invalid sequence became U+FFFD) as its bytes in base64 ([`bytes_unless_text`]).

use std::borrow::Cow;
use std::ffi::OsStr;
use std::fmt::Write;
use std::os::unix::ffi::OsStrExt;

/// `text` (a name, a path, an ID) escaped for a human reader by the rule of this module;
/// borrowed unchanged when nothing needs escaping.
pub fn shown<T: AsRef<OsStr> + ?Sized>(text: &T) -> Cow<'_, str> {
    let bytes = text.as_ref().as_bytes();
    if let Ok(plain) = std::str::from_utf8(bytes) {
        if !plain.chars().any(needs_escape) {
            return Cow::Borrowed(plain);
        }
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                '\x1b' => out.push_str("\\e"),
                c if c.is_control() => {
                    // C0, DEL and C1: one or two bytes in UTF-8, each written in hex.
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        let _ = write!(out, "\\x{b:02x}");
                    }
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c == '\\' || c.is_control()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn control_characters_and_stray_bytes_are_escaped() {
        assert_eq!(shown("lib/a.o"), "lib/a.o");
        assert_eq!(shown("gfx90a:xnack+ é"), "gfx90a:xnack+ é");
        assert_eq!(shown("a\nb\x1b[31mc"), "a\\nb\\e[31mc");
        assert_eq!(shown("t\tr\r\\"), "t\\tr\\r\\\\");
        assert_eq!(shown("\x07\x7f\u{85}"), "\\x07\\x7f\\xc2\\x85");
        assert_eq!(shown(OsStr::from_bytes(b"x\xffy")), "x\\xffy");
    }
}

/// The bytes of `name` in base64 (the standard alphabet, padded), when they are not UTF-8:
/// what JSON output carries beside a name's text so that no name is lost; `None` for a name
/// that is text.
pub fn bytes_unless_text<T: AsRef<OsStr> + ?Sized>(name: &T) -> Option<String> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = name.as_ref().as_bytes();
    if std::str::from_utf8(bytes).is_ok() {
        return None;
    }
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * k) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod base64_tests {
    use super::bytes_unless_text;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    #[test]
    fn names_that_are_not_text_are_given_as_base64() {
        let b = |bytes: &[u8]| bytes_unless_text(OsStr::from_bytes(bytes));
        assert_eq!(b(b"plain name"), None);
        assert_eq!(b(b"a\xff").as_deref(), Some("Yf8="));
        assert_eq!(b(b"\xff\xfe").as_deref(), Some("//4="));
        assert_eq!(b(b"ab\xffc").as_deref(), Some("YWL/Yw=="));
        assert_eq!(b(b"abc\xff\x00\x01").as_deref(), Some("YWJj/wAB"));
    }
}
