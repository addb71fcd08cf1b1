//! conda's record of a package installed in an environment, `conda-meta/<package>.json`: its
//! `files` (paths relative to the environment's prefix) and `paths_data.paths`, one object per
//! file with its `_path`, `path_type`, `sha256` (of the file as the package holds it),
//! `sha256_in_prefix` (as installed, when conda wrote one) and `size_in_bytes`.
//!
//! A package's own `info/paths.json` lists its files the same way, its `paths` at the top
//! level: [`update`] edits both.
//!
//! An update edits the text in place: the values of a rewritten file's digests and size are
//! replaced, a removed file's string in `files` and object in `paths` are cut out with the
//! separator before them (the first, with the one after), and nothing else moves. Parsing the
//! JSON and writing it again would give conda's `indent=2, sort_keys=True` output only by
//! chance (key order, escapes, number forms): the bytes around the values edited stay as
//! they are instead.

use std::ops::Range;

use super::{hex, Counts, Edit, ManifestError, Sha256};

/// How deep arrays and objects may nest (serde_json's own limit).
const DEPTH: usize = 128;

/// A JSON value and where its text lies.
#[derive(Debug)]
struct Node {
    range: Range<usize>,
    kind: Kind,
}

/// What a JSON value is, with the nodes it holds.
#[derive(Debug)]
enum Kind {
    /// A string.
    String,
    /// A number, `true`, `false` or `null`.
    Scalar,
    /// An array: its items.
    Array(Vec<Node>),
    /// An object: its members' keys (decoded) and values.
    Object(Vec<(String, Node)>),
}

/// A reader of the text of a JSON document already checked to be one.
struct Reader<'a> {
    data: &'a [u8],
}

impl Reader<'_> {
    /// Where the first byte that is not white space is, from `at`.
    fn skip_space(&self, mut at: usize) -> usize {
        while matches!(self.data.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            at += 1;
        }
        at
    }

    /// The value whose text starts at `at` (white space skipped), nested `depth` deep.
    fn value(&self, at: usize, depth: usize) -> Result<Node, ManifestError> {
        let start = self.skip_space(at);
        if depth > DEPTH {
            return Err(ManifestError::new(start, "nested too deep"));
        }
        match self.data.get(start) {
            Some(b'"') => {
                let end = self.string_end(start)?;
                Ok(Node {
                    range: start..end,
                    kind: Kind::String,
                })
            }
            Some(b'[') => self.array(start, depth),
            Some(b'{') => self.object(start, depth),
            Some(_) => {
                let mut end = start;
                while self.data.get(end).is_some_and(|b| {
                    !matches!(b, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
                }) {
                    end += 1;
                }
                Ok(Node {
                    range: start..end,
                    kind: Kind::Scalar,
                })
            }
            None => Err(ManifestError::new(start, "a value is missing at the end")),
        }
    }

    /// Where the string starting at `start` (its opening quote) ends, past its closing quote.
    fn string_end(&self, start: usize) -> Result<usize, ManifestError> {
        let mut at = start + 1;
        loop {
            match self.data.get(at) {
                Some(b'"') => return Ok(at + 1),
                Some(b'\\') => at += 2,
                Some(_) => at += 1,
                None => return Err(ManifestError::new(start, "a string is not closed")),
            }
        }
    }

    /// The byte at `at` (white space skipped) and where it is.
    fn next(&self, at: usize) -> (Option<u8>, usize) {
        let at = self.skip_space(at);
        (self.data.get(at).copied(), at)
    }

    /// The array starting at `start` (its `[`).
    fn array(&self, start: usize, depth: usize) -> Result<Node, ManifestError> {
        let mut items = Vec::new();
        let (first, mut at) = self.next(start + 1);
        if first == Some(b']') {
            return Ok(Node {
                range: start..at + 1,
                kind: Kind::Array(items),
            });
        }
        loop {
            let item = self.value(at, depth + 1)?;
            let (after, where_) = self.next(item.range.end);
            items.push(item);
            match after {
                Some(b',') => at = where_ + 1,
                Some(b']') => {
                    return Ok(Node {
                        range: start..where_ + 1,
                        kind: Kind::Array(items),
                    })
                }
                _ => return Err(ManifestError::new(where_, "expected , or ] in an array")),
            }
        }
    }

    /// The object starting at `start` (its `{`).
    fn object(&self, start: usize, depth: usize) -> Result<Node, ManifestError> {
        let mut members = Vec::new();
        let (first, mut at) = self.next(start + 1);
        if first == Some(b'}') {
            return Ok(Node {
                range: start..at + 1,
                kind: Kind::Object(members),
            });
        }
        loop {
            let key = self.value(at, depth + 1)?;
            let name = match key.kind {
                Kind::String => self.text(&key.range)?,
                _ => return Err(ManifestError::new(key.range.start, "a key is not a string")),
            };
            let (colon, where_) = self.next(key.range.end);
            if colon != Some(b':') {
                return Err(ManifestError::new(where_, "expected : after a key"));
            }
            let value = self.value(where_ + 1, depth + 1)?;
            let (after, where_) = self.next(value.range.end);
            members.push((name, value));
            match after {
                Some(b',') => at = where_ + 1,
                Some(b'}') => {
                    return Ok(Node {
                        range: start..where_ + 1,
                        kind: Kind::Object(members),
                    })
                }
                _ => return Err(ManifestError::new(where_, "expected , or } in an object")),
            }
        }
    }

    /// The string whose text (quotes included) is at `range`, decoded.
    fn text(&self, range: &Range<usize>) -> Result<String, ManifestError> {
        let raw = self.data.get(range.clone()).unwrap_or_default();
        serde_json::from_slice(raw)
            .map_err(|e| ManifestError::new(range.start, format!("a string: {e}")))
    }
}

/// The members of `node` named `name`, when it is an object.
fn members<'n>(node: &'n Node, name: &'n str) -> impl Iterator<Item = &'n Node> {
    let members = match &node.kind {
        Kind::Object(members) => members.as_slice(),
        _ => &[],
    };
    members
        .iter()
        .filter(move |(k, _)| k == name)
        .map(|(_, v)| v)
}

/// The items of `node`, when it is an array.
fn items(node: &Node) -> &[Node] {
    match &node.kind {
        Kind::Array(items) => items,
        _ => &[],
    }
}

/// The cuts that remove the items of the array `array` that `removed` marks, with their
/// separators: all of them, or each after the first kept with the separator before it, and
/// those before the first kept with the separator after them.
fn cuts(array: &Node, removed: &[bool]) -> Vec<(Range<usize>, Vec<u8>)> {
    let items = items(array);
    let Some(kept) = removed.iter().position(|r| !r) else {
        if items.is_empty() {
            return Vec::new();
        }
        // Nothing left: `[]`, as Python writes an empty list.
        let inside = array.range.start + 1..array.range.end.saturating_sub(1);
        return vec![(inside, Vec::new())];
    };
    let mut cuts = Vec::new();
    if let (Some(first), Some(kept)) = (items.first(), items.get(kept)) {
        if first.range.start < kept.range.start {
            cuts.push((first.range.start..kept.range.start, Vec::new()));
        }
    }
    for (i, pair) in items.windows(2).enumerate() {
        if let ([before, item], Some(true)) = (pair, removed.get(i + 1)) {
            if i + 1 > kept {
                cuts.push((before.range.end..item.range.end, Vec::new()));
            }
        }
    }
    cuts
}

/// The conda record `data` with the entries of files `edit` names changed: a file removed
/// leaves `files` and `paths_data.paths`; a file rewritten gets its new `sha256` (and
/// `sha256_in_prefix`, where there is one) and `size_in_bytes`. `edit` is asked of each path
/// the record lists. Every other byte stays.
pub fn update(
    data: &[u8],
    mut edit: impl FnMut(&str) -> Option<Edit<Sha256>>,
) -> Result<(Vec<u8>, Counts), ManifestError> {
    if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(data) {
        return Err(ManifestError::new(offset_of(data, &e), e.to_string()));
    }
    let reader = Reader { data };
    let root = reader.value(0, 0)?;
    if !matches!(root.kind, Kind::Object(_)) {
        return Err(ManifestError::new(root.range.start, "not a JSON object"));
    }
    let mut replaced: Vec<(Range<usize>, Vec<u8>)> = Vec::new();
    let mut removed_paths = std::collections::BTreeSet::new();
    let mut rewritten_paths = std::collections::BTreeSet::new();
    for files in members(&root, "files") {
        let mut removed = Vec::new();
        for item in items(files) {
            let path = match item.kind {
                Kind::String => Some(reader.text(&item.range)?),
                _ => None,
            };
            let edited = path.as_deref().and_then(&mut edit);
            if edited == Some(Edit::Removed) {
                removed_paths.extend(path);
            }
            removed.push(edited == Some(Edit::Removed));
        }
        replaced.extend(cuts(files, &removed));
    }
    // A record's `paths_data.paths`; a package's `info/paths.json` has them at the top.
    let paths = members(&root, "paths_data")
        .flat_map(|d| members(d, "paths"))
        .chain(members(&root, "paths"));
    for paths in paths {
        let mut removed = Vec::new();
        for item in items(paths) {
            let path = match members(item, "_path").next() {
                Some(
                    node @ Node {
                        kind: Kind::String, ..
                    },
                ) => Some(reader.text(&node.range)?),
                _ => None,
            };
            let edited = path.as_deref().and_then(&mut edit);
            removed.push(edited == Some(Edit::Removed));
            match edited {
                Some(Edit::Removed) => {
                    removed_paths.extend(path);
                }
                Some(Edit::Rewritten { digest, size }) => {
                    let values = new_values(item, &digest, size);
                    let changed = values
                        .iter()
                        .any(|(range, new)| data.get(range.clone()) != Some(new.as_slice()));
                    if changed {
                        rewritten_paths.extend(path);
                    }
                    replaced.extend(values);
                }
                None => {}
            }
        }
        replaced.extend(cuts(paths, &removed));
    }
    let counts = Counts {
        rewritten: rewritten_paths.len(),
        removed: removed_paths.len(),
    };
    Ok((spliced(data, replaced), counts))
}

/// The new values of the digests and size of the file whose object is `item`, each with the
/// text it replaces.
fn new_values(item: &Node, digest: &Sha256, size: u64) -> Vec<(Range<usize>, Vec<u8>)> {
    let quoted = format!("\"{}\"", hex(digest)).into_bytes();
    let mut values = Vec::new();
    for key in ["sha256", "sha256_in_prefix"] {
        for node in members(item, key).filter(|n| matches!(n.kind, Kind::String)) {
            values.push((node.range.clone(), quoted.clone()));
        }
    }
    for node in members(item, "size_in_bytes").filter(|n| matches!(n.kind, Kind::Scalar)) {
        values.push((node.range.clone(), size.to_string().into_bytes()));
    }
    values
}

/// `data` with each range of `replaced` (none overlapping) replaced by its bytes.
fn spliced(data: &[u8], mut replaced: Vec<(Range<usize>, Vec<u8>)>) -> Vec<u8> {
    replaced.sort_by_key(|(range, _)| range.start);
    let mut out = Vec::with_capacity(data.len());
    let mut at = 0;
    for (range, new) in replaced {
        if range.start < at {
            // Inside a cut already made (a value of an object removed).
            continue;
        }
        out.extend_from_slice(data.get(at..range.start).unwrap_or_default());
        out.extend_from_slice(&new);
        at = range.end;
    }
    out.extend_from_slice(data.get(at..).unwrap_or_default());
    out
}

/// The byte offset serde_json's error `e` points at in `data` (it counts lines and columns).
fn offset_of(data: &[u8], e: &serde_json::Error) -> usize {
    let line_start = data
        .split_inclusive(|&b| b == b'\n')
        .take(e.line().saturating_sub(1))
        .map(<[u8]>::len)
        .sum::<usize>();
    line_start + e.column().saturating_sub(1)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::host::package::manifest::sha256;

    /// A record as conda writes it (`indent=2, sort_keys=True`), with a key conda never
    /// sorts first, to see that order is kept.
    const RECORD: &str = r#"{
  "name": "demo",
  "build": "0",
  "files": [
    "bin/demo",
    "lib/libdemo.so",
    "lib/k\u00e9rnels_gfx906.co",
    "share/demo.txt"
  ],
  "paths_data": {
    "paths": [
      {
        "_path": "bin/demo",
        "path_type": "hardlink",
        "sha256": "aaaa",
        "sha256_in_prefix": "bbbb",
        "size_in_bytes": 10
      },
      {
        "_path": "lib/libdemo.so",
        "path_type": "hardlink",
        "sha256": "cccc",
        "size_in_bytes": 20
      },
      {
        "_path": "lib/k\u00e9rnels_gfx906.co",
        "path_type": "hardlink",
        "sha256": "dddd",
        "size_in_bytes": 30
      },
      {
        "_path": "share/demo.txt",
        "path_type": "hardlink",
        "sha256": "eeee",
        "size_in_bytes": 40
      }
    ],
    "paths_version": 1
  },
  "version": "1.0"
}
"#;

    #[test]
    fn nothing_edited_is_the_same_bytes() {
        let (same, counts) = update(RECORD.as_bytes(), |_| None).unwrap();
        assert_eq!(
            (String::from_utf8(same).unwrap(), counts),
            (RECORD.to_string(), Counts::default())
        );
    }

    #[test]
    fn a_rewritten_file_gets_its_digests_and_size_and_a_removed_one_goes() {
        let digest = sha256(b"x");
        let (new, counts) = update(RECORD.as_bytes(), |path| match path {
            "lib/libdemo.so" => Some(Edit::Rewritten { digest, size: 7 }),
            "bin/demo" => Some(Edit::Rewritten { digest, size: 8 }),
            "lib/k\u{e9}rnels_gfx906.co" => Some(Edit::Removed),
            _ => None,
        })
        .unwrap();
        assert_eq!(
            counts,
            Counts {
                rewritten: 2,
                removed: 1
            }
        );
        let h = hex(&digest);
        let expected = RECORD
            .replace("\"aaaa\"", &format!("\"{h}\""))
            .replace("\"bbbb\"", &format!("\"{h}\""))
            .replace("\"cccc\"", &format!("\"{h}\""))
            .replace("\"size_in_bytes\": 10", "\"size_in_bytes\": 8")
            .replace("\"size_in_bytes\": 20", "\"size_in_bytes\": 7")
            .replace(",\n    \"lib/k\\u00e9rnels_gfx906.co\"", "")
            .replace(
                ",\n      {\n        \"_path\": \"lib/k\\u00e9rnels_gfx906.co\",\n        \"path_type\": \"hardlink\",\n        \"sha256\": \"dddd\",\n        \"size_in_bytes\": 30\n      }",
                "",
            );
        let new = String::from_utf8(new).unwrap();
        assert_eq!(new, expected);
        let value: serde_json::Value = serde_json::from_str(&new).unwrap();
        assert_eq!(value["files"].as_array().unwrap().len(), 3);
        assert_eq!(value["paths_data"]["paths"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn removing_the_first_the_last_or_every_item_leaves_valid_json() {
        let every = |path: &str| (path != "share/demo.txt").then_some(Edit::Removed);
        for remove in [
            &(|p: &str| (p == "bin/demo").then_some(Edit::Removed)) as &dyn Fn(&str) -> _,
            &|p: &str| (p == "share/demo.txt").then_some(Edit::Removed),
            &|_: &str| Some(Edit::Removed),
            &every,
        ] {
            let (new, _) = update(RECORD.as_bytes(), remove).unwrap();
            let value: serde_json::Value = serde_json::from_slice(&new).unwrap();
            let files = value["files"].as_array().unwrap();
            let paths = value["paths_data"]["paths"].as_array().unwrap();
            assert_eq!(files.len(), paths.len());
            for (file, path) in files.iter().zip(paths) {
                assert_eq!(file, &path["_path"]);
                assert!(remove(file.as_str().unwrap()).is_none());
            }
        }
        let (none_left, _) = update(RECORD.as_bytes(), |_| Some(Edit::Removed)).unwrap();
        let text = String::from_utf8(none_left).unwrap();
        assert!(
            text.contains("\"files\": [],") && text.contains("\"paths\": [],"),
            "{text}"
        );
    }

    #[test]
    fn a_damaged_record_is_an_error_at_its_offset() {
        let e = update(b"{\n  \"files\": [\n    \"a\",\n  ]\n}", |_| None).unwrap_err();
        assert_eq!(e.offset, 26, "{e}");
        assert!(update(b"[1]", |_| None).is_err());
    }

    #[test]
    fn a_packages_paths_json_is_edited_as_a_record_is() {
        let paths = "{\n  \"paths\": [\n    {\n      \"_path\": \"lib/a.so\",\n      \"path_type\": \"hardlink\",\n      \"sha256\": \"aaaa\",\n      \"size_in_bytes\": 10\n    },\n    {\n      \"_path\": \"lib/b.co\",\n      \"sha256\": \"bbbb\",\n      \"size_in_bytes\": 20\n    }\n  ],\n  \"paths_version\": 1\n}";
        let digest = sha256(b"x");
        let (new, counts) = update(paths.as_bytes(), |path| match path {
            "lib/a.so" => Some(Edit::Rewritten { digest, size: 5 }),
            "lib/b.co" => Some(Edit::Removed),
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
            "{{\n  \"paths\": [\n    {{\n      \"_path\": \"lib/a.so\",\n      \"path_type\": \"hardlink\",\n      \"sha256\": \"{}\",\n      \"size_in_bytes\": 5\n    }}\n  ],\n  \"paths_version\": 1\n}}",
            hex(&digest)
        );
        assert_eq!(String::from_utf8(new).unwrap(), expected);
    }
}
