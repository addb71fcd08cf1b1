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
