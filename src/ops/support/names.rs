//! How names, which are bytes (file names, paths), are carried in JSON without loss: a field
//! holds the name as text, each byte sequence that is not UTF-8 made U+FFFD ([`text`]), and a
//! field beside it named with `_bytes` after it holds, only for a name that is not UTF-8, its
//! exact bytes in base64 ([`crate::io::bytes_unless_text`]). `ls --json` documents the form.

use std::ffi::OsStr;

use serde::Serializer;

/// Serializes `name` as text, U+FFFD for each byte sequence that is not UTF-8 (serde's
/// `serialize_with`).
pub fn text<T: AsRef<OsStr>, S: Serializer>(name: &T, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&name.as_ref().to_string_lossy())
}

/// [`text`] for a name that may be missing: `null` then.
pub fn optional_text<T: AsRef<OsStr>, S: Serializer>(
    name: &Option<T>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match name {
        Some(name) => text(name, s),
        None => s.serialize_none(),
    }
}

/// The bytes of a name that may be missing, in base64, when it is there and not UTF-8.
pub fn optional_bytes<T: AsRef<OsStr>>(name: Option<&T>) -> Option<String> {
    name.and_then(crate::io::bytes_unless_text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStrExt;
    use std::path::PathBuf;

    #[derive(serde::Serialize)]
    struct Named {
        #[serde(serialize_with = "text")]
        path: PathBuf,
        #[serde(serialize_with = "optional_text")]
        by: Option<PathBuf>,
    }

    #[test]
    fn names_are_text_with_replacement_characters() {
        let named = Named {
            path: PathBuf::from(OsStr::from_bytes(b"a\xff\n")),
            by: None,
        };
        let json = serde_json::to_string(&named).unwrap();
        assert_eq!(json, "{\"path\":\"a\u{FFFD}\\n\",\"by\":null}");
        assert_eq!(optional_bytes(Some(&named.path)).as_deref(), Some("Yf8K"));
        assert_eq!(optional_bytes(None::<&PathBuf>), None);
    }
}
