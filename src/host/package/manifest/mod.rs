//! The manifests that packages keep of their files (a wheel's `RECORD`, conda's
//! `conda-meta/<package>.json`, Debian's `md5sums` and `Installed-Size`), kept right when files
//! they list are rewritten or removed: each codec reads its manifest, changes the entries of
//! those files only, and leaves every other byte as it was.
//!
//! [`installed`] finds the manifests of the environments installed in a tree (a Python
//! `site-packages`, a conda prefix) and brings them up to date after a rewrite of the tree.

pub mod conda;
pub mod debian;
pub mod installed;
pub mod record;

/// What became of a file a manifest lists: rewritten (its new digest, by the manifest's
/// algorithm, and size), or removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edit<D> {
    /// Rewritten: its new digest and size in bytes.
    Rewritten {
        /// The digest of its new contents.
        digest: D,
        /// Its new size in bytes.
        size: u64,
    },
    /// Removed.
    Removed,
}

/// A SHA-256 digest.
pub type Sha256 = [u8; 32];

/// How many of a manifest's entries an update changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Entries given a new digest and size.
    pub rewritten: usize,
    /// Entries removed.
    pub removed: usize,
}

impl Counts {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.rewritten == 0 && self.removed == 0
    }
}

/// Why a manifest cannot be read: what is wrong, and at which byte offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("offset {offset:#x}: {message}")]
pub struct ManifestError {
    /// The byte offset, from the start of the manifest, where the problem was found.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

impl ManifestError {
    /// The error `message` at `offset`.
    pub fn new(offset: usize, message: impl Into<String>) -> ManifestError {
        ManifestError {
            offset,
            message: message.into(),
        }
    }
}

/// The SHA-256 of `data`.
pub fn sha256(data: &[u8]) -> Sha256 {
    use sha2::Digest;
    sha2::Sha256::digest(data).into()
}

/// Lower-case hexadecimal, as conda and `md5sum` write digests.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        for nibble in [byte >> 4, byte & 0xf] {
            // A nibble is below 16: always a digit of the table.
            text.push(char::from(
                DIGITS.get(usize::from(nibble)).copied().unwrap_or(b'0'),
            ));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_and_hex_are_the_usual_ones() {
        assert_eq!(
            hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(hex(&[0x00, 0x0f, 0xf0, 0xff]), "000ff0ff");
    }
}
