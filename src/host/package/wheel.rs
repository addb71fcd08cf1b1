//! What makes a zip a wheel: its `.dist-info` folder, the name and version its `METADATA`
//! gives, the tags of its `WHEEL` and its file name, and the text of new wheels' metadata.
//! A wheel split into a host wheel and device wheels, or merged back, is written with these.

use crate::host::package::manifest::{record, Sha256};

/// A wheel's identity, as its files give it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The `.dist-info` folder's name (`torch-2.10.0.dist-info`).
    pub dist_info: String,
    /// `Name` of `METADATA`, as written.
    pub name: String,
    /// `Version` of `METADATA`, as written.
    pub version: String,
    /// The `Tag` lines of `WHEEL`, in order.
    pub tags: Vec<String>,
}

/// The single `.dist-info` folder at the top of a wheel whose member names are `names`.
pub fn dist_info<'a>(names: impl Iterator<Item = &'a [u8]>) -> Result<String, String> {
    let mut found = std::collections::BTreeSet::new();
    for name in names {
        let Some(slash) = name.iter().position(|&b| b == b'/') else {
            continue;
        };
        let top = name.get(..slash).unwrap_or_default();
        if top.ends_with(b".dist-info") {
            found.insert(String::from_utf8_lossy(top).into_owned());
        }
    }
    let count = found.len();
    match (found.pop_first(), count) {
        (Some(one), 1) => Ok(one),
        _ => Err(format!(
            "not a wheel: it holds {count} .dist-info folders at its top, where a wheel holds one"
        )),
    }
}

/// The value of the first header `field` of the RFC 822 headers `text` (up to the first blank
/// line), spaces trimmed.
pub fn header<'t>(text: &'t str, field: &str) -> Option<&'t str> {
    headers(text).find_map(|(name, value)| name.eq_ignore_ascii_case(field).then_some(value))
}

/// Every header line of `text` (up to the first blank line) as name and value.
pub fn headers(text: &str) -> impl Iterator<Item = (&str, &str)> {
    text.lines()
        .take_while(|line| !line.trim_end_matches('\r').is_empty())
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim(), value.trim()))
}

/// The identity of a wheel from its `.dist-info` folder's name and the texts of its
/// `METADATA` and `WHEEL`.
pub fn identity(dist_info: &str, metadata: &str, wheel: &str) -> Result<Identity, String> {
    let (Some(name), Some(version)) = (header(metadata, "Name"), header(metadata, "Version"))
    else {
        return Err(format!("{dist_info}/METADATA: no Name or no Version"));
    };
    let tags: Vec<String> = headers(wheel)
        .filter(|(field, _)| field.eq_ignore_ascii_case("Tag"))
        .map(|(_, tag)| tag.to_string())
        .collect();
    if tags.is_empty() || tags.iter().any(|t| t.split('-').count() != 3) {
        return Err(format!(
            "{dist_info}/WHEEL: no Tag, or one not of the form python-abi-platform"
        ));
    }
    Ok(Identity {
        dist_info: dist_info.to_string(),
        name: name.to_string(),
        version: version.to_string(),
        tags,
    })
}

/// A name as package indexes compare names (PEP 503): lower case, each run of `-`, `_` and
/// `.` one `-`.
pub fn normalized(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut run = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !run {
                out.push('-');
            }
            run = true;
        } else {
            out.extend(c.to_lowercase());
            run = false;
        }
    }
    out
}

/// The tag part of a wheel's file name (`cp312-cp312-manylinux_2_28_x86_64`): its last three
/// `-`-separated fields, when the name is a wheel's.
pub fn tag_part(file_name: &str) -> Option<&str> {
    let stem = file_name.strip_suffix(".whl")?;
    let mut dashes = stem.rmatch_indices('-').map(|(at, _)| at);
    let (_, _, third) = (dashes.next()?, dashes.next()?, dashes.next()?);
    // A name and a version before the tags.
    dashes.next()?;
    stem.get(third + 1..)
}

/// The file name of the wheel of distribution `name`, `version` and tags `tags`.
pub fn file_name(name: &str, version: &str, tags: &str) -> String {
    format!("{}-{version}-{tags}.whl", name.replace('-', "_"))
}

/// `metadata` with `lines` added at the end of its headers (before the blank line that starts
/// its body, or at its end), each ended as the headers are ended.
pub fn with_header_lines(metadata: &[u8], lines: &[String]) -> Vec<u8> {
    let crlf = metadata.windows(2).any(|w| w == b"\r\n");
    let end: &[u8] = if crlf { b"\r\n" } else { b"\n" };
    let mut at = 0;
    let mut body = None;
    while at < metadata.len() {
        let line_end = metadata
            .get(at..)
            .and_then(|rest| rest.iter().position(|&b| b == b'\n'))
            .map_or(metadata.len(), |n| at + n + 1);
        let line = metadata.get(at..line_end).unwrap_or_default();
        if line == b"\n" || line == b"\r\n" {
            body = Some(at);
            break;
        }
        at = line_end;
    }
    let split = body.unwrap_or(metadata.len());
    let (head, rest) = metadata.split_at(split);
    let mut out = head.to_vec();
    if !out.is_empty() && !out.ends_with(b"\n") {
        out.extend_from_slice(end);
    }
    for line in lines {
        out.extend_from_slice(line.as_bytes());
        out.extend_from_slice(end);
    }
    out.extend_from_slice(rest);
    out
}

/// `metadata` without the header lines `drop` says go (their ends with them).
pub fn without_header_lines(metadata: &[u8], drop: impl Fn(&str) -> bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(metadata.len());
    let mut in_head = true;
    for line in metadata.split_inclusive(|&b| b == b'\n') {
        if in_head && (line == b"\n" || line == b"\r\n") {
            in_head = false;
        }
        let text = String::from_utf8_lossy(line);
        if in_head && drop(text.trim_end()) {
            continue;
        }
        out.extend_from_slice(line);
    }
    out
}

/// A `RECORD` listing `files` (path, SHA-256 and size) then itself, unhashed.
pub fn record_of(files: &[(Vec<u8>, Sha256, u64)], record_path: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for (path, digest, size) in files {
        out.extend_from_slice(&record::row(path, Some((digest, *size))));
        out.push(b'\n');
    }
    out.extend_from_slice(&record::row(record_path, None));
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_comes_from_dist_info_metadata_and_wheel() {
        let names: [&[u8]; 3] = [
            b"k/lib.so",
            b"k-1.0.dist-info/METADATA",
            b"k-1.0.dist-info/RECORD",
        ];
        assert_eq!(dist_info(names.into_iter()).unwrap(), "k-1.0.dist-info");
        let two: [&[u8]; 2] = [b"a-1.dist-info/METADATA", b"b-1.dist-info/METADATA"];
        assert!(dist_info(two.into_iter())
            .unwrap_err()
            .contains("2 .dist-info"));
        let id = identity(
            "k-1.0.dist-info",
            "Metadata-Version: 2.1\nName: K-demo\nVersion: 1.0+rocm7\n\nbody: x\n",
            "Wheel-Version: 1.0\nTag: py3-none-linux_x86_64\nTag: py3-none-any\n",
        )
        .unwrap();
        assert_eq!(
            (id.name.as_str(), id.version.as_str()),
            ("K-demo", "1.0+rocm7")
        );
        assert_eq!(id.tags, ["py3-none-linux_x86_64", "py3-none-any"]);
        assert!(identity("k", "Name: k\n", "Tag: a-b-c\n").is_err());
        assert!(identity("k", "Name: k\nVersion: 1\n", "Tag: a-b\n").is_err());
    }

    #[test]
    fn names_tags_and_file_names_are_the_packaging_ones() {
        assert_eq!(
            normalized("Amd_Torch..Device-GFX942"),
            "amd-torch-device-gfx942"
        );
        assert_eq!(
            tag_part("torch-2.10.0+rocm7.1-cp313-cp313-manylinux_2_28_x86_64.whl"),
            Some("cp313-cp313-manylinux_2_28_x86_64")
        );
        assert_eq!(tag_part("k-1.0-1-py3-none-any.whl"), Some("py3-none-any"));
        assert_eq!(tag_part("py3-none-any.whl"), None);
        assert_eq!(
            file_name("amd-torch-device-gfx942", "2.10.0", "py3-none-any"),
            "amd_torch_device_gfx942-2.10.0-py3-none-any.whl"
        );
    }

    #[test]
    fn header_lines_go_before_the_body_and_come_out_again() {
        let metadata = b"Name: k\nVersion: 1\n\nThe description.\n\nMore.\n";
        let lines = [
            "Requires-Dist: a".to_string(),
            "Provides-Extra: b".to_string(),
        ];
        let added = with_header_lines(metadata, &lines);
        assert_eq!(
            added,
            b"Name: k\nVersion: 1\nRequires-Dist: a\nProvides-Extra: b\n\nThe description.\n\nMore.\n"
        );
        let back = without_header_lines(&added, |l| lines.iter().any(|x| x == l));
        assert_eq!(back, metadata);
        assert_eq!(
            with_header_lines(b"Name: k", &lines),
            b"Name: k\nRequires-Dist: a\nProvides-Extra: b\n"
        );
        // A line of the body like a header stays.
        let kept = without_header_lines(&added, |l| l == "More.");
        assert_eq!(kept, added);
    }
}
