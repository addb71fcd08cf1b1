//! A Debian package's `md5sums` (lines of `<md5 in hex>  <path>`, the path relative to the
//! root without a leading `/`) and the `Installed-Size` field of its `control` file.
//!
//! `Installed-Size` is in KiB, as `dpkg-gencontrol` counts it: it walks the package's build
//! tree (the tree itself and `DEBIAN/` included) and adds, for each regular file or symbolic
//! link, its size in 1024-byte units rounded up (a link's size is the length of its target;
//! a file with several hard links counts once), and 1 for anything else (each folder, device
//! or FIFO). So a file rewritten from `before` bytes to `after` changes the total by
//! `ceil(after / 1024) - ceil(before / 1024)`, and a file removed takes its
//! `ceil(size / 1024)` away: [`installed_size`] adjusts a total so.

use super::{hex, Counts, Edit, ManifestError};

/// An MD5 digest.
pub type Md5 = [u8; 16];

/// The `md5sums` `data` with the lines of files `edit` names changed: a file removed loses
/// its line, a file rewritten gets its new digest. `edit` is asked of each line's path.
/// Every other byte stays; a line that is not `<32 hex digits>  <path>` is an error.
pub fn update_md5sums(
    data: &[u8],
    mut edit: impl FnMut(&[u8]) -> Option<Edit<Md5>>,
) -> Result<(Vec<u8>, Counts), ManifestError> {
    let mut out = Vec::with_capacity(data.len());
    let mut counts = Counts::default();
    let mut at = 0;
    for line in data.split_inclusive(|&b| b == b'\n') {
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        let (digest, path) = md5sums_line(text).ok_or_else(|| {
            ManifestError::new(at, "not a line of md5sums (<32 hex digits>  <path>)")
        })?;
        match edit(path) {
            Some(Edit::Removed) => counts.removed += 1,
            Some(Edit::Rewritten { digest: new, .. }) => {
                let new = hex(&new);
                if !digest.eq_ignore_ascii_case(new.as_bytes()) {
                    counts.rewritten += 1;
                }
                out.extend_from_slice(new.as_bytes());
                out.extend_from_slice(line.get(digest.len()..).unwrap_or_default());
            }
            None => out.extend_from_slice(line),
        }
        at += line.len();
    }
    Ok((out, counts))
}

/// The digest and path of a line of `md5sums` (`<32 hex digits>  <path>`).
fn md5sums_line(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let digest = line.get(..32)?;
    let path = line.get(32..)?.strip_prefix(b"  ")?;
    (digest.iter().all(u8::is_ascii_hexdigit) && !path.is_empty()).then_some((digest, path))
}

/// A line of `md5sums` for `path` of digest `digest` (as `md5sum` writes it).
#[cfg(any(test, feature = "internals"))]
pub fn md5sums_line_of(path: &[u8], digest: &Md5) -> Vec<u8> {
    let mut line = hex(digest).into_bytes();
    line.extend_from_slice(b"  ");
    line.extend_from_slice(path);
    line.push(b'\n');
    line
}

/// A file's size in `Installed-Size` units: 1024-byte blocks, rounded up.
pub fn kib(size: u64) -> u64 {
    size.div_ceil(1024)
}

/// The `Installed-Size` `total` after files changed: each `(before, after)` is a file's size
/// before and after (`None` once removed), as `dpkg-gencontrol` would count the tree again.
pub fn installed_size(total: u64, changes: &[(u64, Option<u64>)]) -> u64 {
    changes.iter().fold(total, |total, &(before, after)| {
        total
            .saturating_sub(kib(before))
            .saturating_add(after.map_or(0, kib))
    })
}

/// The value of the field `Installed-Size` of the control file `control`, if it has one.
pub fn installed_size_of(control: &[u8]) -> Result<Option<u64>, ManifestError> {
    let Some((value, at)) = field(control, b"Installed-Size") else {
        return Ok(None);
    };
    let text = std::str::from_utf8(value.trim_ascii()).ok();
    text.and_then(|t| t.parse().ok())
        .map(Some)
        .ok_or_else(|| ManifestError::new(at, "Installed-Size is not a number"))
}

/// The control file `control` with its `Installed-Size` field set to `kib` (the field name,
/// its spacing and the rest of the file as they were); a control file without one is
/// returned as it is, `None`.
pub fn with_installed_size(control: &[u8], kib: u64) -> Option<Vec<u8>> {
    let (value, at) = field(control, b"Installed-Size")?;
    let start = at + (value.len() - value.trim_ascii_start().len());
    let end = at + value.trim_ascii_end().len();
    let mut out = control.get(..start)?.to_vec();
    out.extend_from_slice(kib.to_string().as_bytes());
    out.extend_from_slice(control.get(end..)?);
    Some(out)
}

/// The value of the field `name` (matched without regard to case) of the first paragraph of
/// `control`, on its line (after the colon, line end aside), and its offset.
fn field<'a>(control: &'a [u8], name: &[u8]) -> Option<(&'a [u8], usize)> {
    let mut at = 0;
    for line in control.split_inclusive(|&b| b == b'\n') {
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if text.is_empty() {
            // The end of the first paragraph.
            return None;
        }
        if let Some(colon) = memchr::memchr(b':', text) {
            let key = text.get(..colon)?;
            if key.eq_ignore_ascii_case(name) {
                return Some((text.get(colon + 1..)?, at + colon + 1));
            }
        }
        at += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::md5::Md5 as Hasher;

    #[test]
    fn md5sums_lines_are_rewritten_and_removed_and_the_rest_stays() {
        let a = Hasher::digest(b"a");
        let b = Hasher::digest(b"b");
        let mut data = md5sums_line_of(b"usr/bin/demo", &a);
        data.extend(md5sums_line_of(b"usr/lib/libdemo.so", &a));
        data.extend(md5sums_line_of(b"usr/lib/kernels_gfx906.co", &a));
        data.extend(md5sums_line_of(b"usr/share/doc/demo/copyright", &a));
        let (same, counts) = update_md5sums(&data, |_| None).unwrap();
        assert_eq!((&same, counts), (&data, Counts::default()));
        let (new, counts) = update_md5sums(&data, |path| match path {
            b"usr/lib/libdemo.so" => Some(Edit::Rewritten { digest: b, size: 1 }),
            b"usr/lib/kernels_gfx906.co" => Some(Edit::Removed),
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
        let mut expected = md5sums_line_of(b"usr/bin/demo", &a);
        expected.extend(md5sums_line_of(b"usr/lib/libdemo.so", &b));
        expected.extend(md5sums_line_of(b"usr/share/doc/demo/copyright", &a));
        assert_eq!(new, expected);
        // As md5sum writes them.
        assert_eq!(
            String::from_utf8(md5sums_line_of(b"x", &Hasher::digest(b"abc"))).unwrap(),
            "900150983cd24fb0d6963f7d28e17f72  x\n"
        );
        let e = update_md5sums(b"0123  short\n", |_| None).unwrap_err();
        assert_eq!(e.offset, 0);
    }

    #[test]
    fn installed_size_counts_each_file_in_kib_rounded_up() {
        assert_eq!([0, 1, 1024, 1025].map(kib), [0, 1, 1, 2]);
        // A 3000-byte file (3 KiB) rewritten to 1000 (1 KiB), a 10-byte one removed (1 KiB).
        assert_eq!(installed_size(100, &[(3000, Some(1000)), (10, None)]), 97);
        let control = b"Package: demo\nVersion: 1.0\ninstalled-size:  1234\nDescription: x\n y\n";
        assert_eq!(installed_size_of(control).unwrap(), Some(1234));
        let new = with_installed_size(control, 97).unwrap();
        assert_eq!(
            new,
            b"Package: demo\nVersion: 1.0\ninstalled-size:  97\nDescription: x\n y\n".to_vec()
        );
        assert_eq!(installed_size_of(&new).unwrap(), Some(97));
        // Round trip: the size set is the size read, the file otherwise the same.
        assert_eq!(with_installed_size(&new, 1234).unwrap(), control.to_vec());
        assert_eq!(with_installed_size(b"Package: demo\n", 1), None);
        assert!(installed_size_of(b"Installed-Size: many\n").is_err());
    }
}
