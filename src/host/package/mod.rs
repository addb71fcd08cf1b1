//! Packages as containers of files, and their manifests (`manifest`): wheels and any zip (`zip`), Debian packages (`deb`),
//! tarballs plain or compressed with gzip, xz, zstd or bzip2 (`tar`), and conda packages (a
//! `.conda` is a zip of zstd tarballs, a `.tar.bz2` a tarball). Each reader hands its members
//! one at a time to a visitor, named by their path in the package, without unpacking anything
//! to disk: a member stored plain in a zip is a slice of the package; one compressed is
//! inflated once, into memory while small and into an unnamed spill file beyond that
//! ([`crate::io::spill`]); a tarball is read as a stream, never held whole.
//!
//! Only members that may hold device code are read whole: the rule is their first bytes
//! ([`may_hold_device_code`]), the same one the walk of folders follows, never their name; a
//! zip member is inflated as far as its first bytes to decide. A member whose name would
//! leave the folder it is unpacked into (absolute, or with a `..` component) is damage.
//!
//! The name of a member, wherever it is shown, is `PACKAGE!member/path`, and deeper
//! `PACKAGE!inner.tar.zst!member` ([`member_path`]).

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::format::bare::{BareImage, BareKind};
use crate::format::container::Container;

pub mod deb;
pub mod manifest;
pub mod tar;
pub mod tar_edit;
pub mod tree;
pub mod variant;
pub mod wheel;
pub mod zip;
pub mod zip_write;

/// What separates a package's name from its member's.
pub const SEPARATOR: u8 = b'!';

/// How many bytes of a member decide whether it may hold device code.
pub const HEAD: usize = 512;

/// The kinds of package read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A zip: a wheel, a `.conda`'s outer file, any `.zip`.
    Zip,
    /// A Debian package: an ar archive whose first member is `debian-binary`.
    Deb,
    /// A tarball, plain or compressed.
    Tar(tar::Compression),
}

/// The kind of package `data` starts, if any. A compressed stream counts only when what it
/// inflates to starts with a tar header.
pub fn kind(data: &[u8]) -> Option<Kind> {
    if zip::is_zip(data) {
        return Some(Kind::Zip);
    }
    if deb::is_deb(data) {
        return Some(Kind::Deb);
    }
    tar::compression_of(data).map(Kind::Tar)
}

/// A member of a package, where a scan reads it: the name it is shown by, the outermost
/// package and the member's path in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageMember {
    /// The name it is shown by: `PACKAGE!member`, `PACKAGE!inner.tar.zst!member`.
    pub name: PathBuf,
    /// The outermost package: the file named.
    pub package: PathBuf,
    /// The member's path in the outermost package, the names of packages in packages joined
    /// by `!`.
    pub member: Vec<u8>,
    /// A number unique among the members of one scan: bytes of different members are told
    /// apart by it, whatever their addresses.
    pub number: usize,
    /// Whether the member is a linked ELF program or shared library (see
    /// [`crate::host::is_linked_elf`]), as a file is told when it is not in a package.
    pub linked: bool,
}

impl PackageMember {
    /// The member `name` of the package at `path`, itself the member `outer` of a package
    /// when it is one; numbered `number`.
    pub fn new(path: &Path, outer: Option<&PackageMember>, name: &[u8], number: usize) -> Self {
        let (package, member) = match outer {
            Some(outer) => {
                let mut member = outer.member.clone();
                member.push(SEPARATOR);
                member.extend_from_slice(name);
                (outer.package.clone(), member)
            }
            None => (path.to_path_buf(), name.to_vec()),
        };
        PackageMember {
            name: member_path(path, name),
            package,
            member,
            number,
            linked: false,
        }
    }

    /// The member's last name in its package: its file name (`libx.so` of `lib/libx.so`).
    pub fn file_name(&self) -> &[u8] {
        let last = self.member.rsplit(|&b| b == SEPARATOR).next();
        let last = last.unwrap_or_default();
        last.rsplit(|&b| b == b'/').next().unwrap_or(last)
    }
}

/// A member handed to a visitor: its name in the package and its bytes.
pub struct Member<'a> {
    /// Its path in the package, as stored (a tar member's without a leading `./`).
    pub name: &'a [u8],
    /// Its bytes.
    pub bytes: &'a [u8],
}

/// How many bytes the packages of one scan may still inflate, shared by the packages nested
/// in them: a zip bomb nested in a zip bomb costs no more than one.
pub type Budget = std::cell::Cell<u64>;

/// A reader that takes what it gives from a [`Budget`], and fails once it is spent.
struct Budgeted<'b, R> {
    read: R,
    budget: &'b Budget,
}

impl<R: std::io::Read> std::io::Read for Budgeted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.read.read(buf)?;
        let left = self.budget.get().checked_sub(n as u64).ok_or_else(|| {
            std::io::Error::other(
                "the packages of this file inflate to more than --max-decompressed-size allows: not read further",
            )
        })?;
        self.budget.set(left);
        Ok(n)
    }
}

/// What a visitor does with each member that may hold device code.
pub type Visit<'v> = dyn FnMut(&Member<'_>) -> Result<()> + 'v;

/// Reads the package `data` (of kind `kind`, at `path`) and calls `visit` for each member that
/// may hold device code, in package order. Damage that spares the other members (a member
/// named to leave its folder, one that inflates past its size) is returned, each error naming
/// the package, the member and the byte offset; damage that leaves nothing to trust (a zip's
/// central directory pointing outside the file) is the `Err`. What members inflate to is
/// taken from `budget`; once it is spent, the reading stops with an error.
pub fn read(
    path: &Path,
    data: &[u8],
    kind: Kind,
    budget: &Budget,
    visit: &mut Visit<'_>,
) -> Result<Vec<Error>> {
    match kind {
        Kind::Zip => zip::read(path, data, budget, visit),
        Kind::Deb => deb::read(path, data, visit),
        Kind::Tar(compression) => tar::read(path, data, compression, budget, visit),
    }
}

/// [`read`], also calling `files` with the name of each regular member (all of them, whatever
/// they hold; names that would leave the package left out) and `links` for each symbolic or
/// hard link a tarball holds. A Debian package hands over neither: its files and links are
/// in its data tarball, read in turn.
pub fn read_listing(
    path: &Path,
    data: &[u8],
    kind: Kind,
    budget: &Budget,
    visit: &mut Visit<'_>,
    links: &mut dyn FnMut(&tar::Link<'_>),
    files: &mut dyn FnMut(&[u8]),
) -> Result<Vec<Error>> {
    match kind {
        Kind::Tar(compression) => {
            tar::read_listing(path, data, compression, budget, visit, links, files)
        }
        Kind::Zip => {
            for name in zip::names(path, data)? {
                files(name);
            }
            read(path, data, kind, budget, visit)
        }
        Kind::Deb => read(path, data, kind, budget, visit),
    }
}

/// The name shown for `member` of the package at `package`: `PACKAGE!member`.
pub fn member_path(package: &Path, member: &[u8]) -> PathBuf {
    let mut name = package.as_os_str().as_bytes().to_vec();
    name.push(SEPARATOR);
    name.extend_from_slice(member);
    PathBuf::from(OsString::from_vec(name))
}

/// The error `message` about `member` of the package at `package`, naming both.
pub fn member_error(package: &Path, member: &[u8], message: impl Into<String>) -> Error {
    Error::file(member_path(package, member), message)
}

/// `name` checked as a member's path: an error when it would resolve outside the folder it is
/// unpacked into (absolute, or holding a `..` component) or holds a NUL byte.
pub fn checked_name(package: &Path, name: &[u8], offset: u64) -> Result<()> {
    let why = if name.first() == Some(&b'/') {
        Some("an absolute name")
    } else if name
        .split(|&b| b == b'/' || b == b'\\')
        .any(|part| part == b"..")
    {
        Some("a name with a '..' component")
    } else if name.contains(&0) {
        Some("a name with a NUL byte")
    } else {
        None
    };
    match why {
        Some(why) => Err(member_error(
            package,
            name,
            format!(
                "member at offset {offset:#x} has {why}, which would leave its folder: not read"
            ),
        )),
        None => Ok(()),
    }
}

/// Whether `head`, the first bytes of a file, are those of a package, by their magic alone
/// (a compressed stream of any kind counts: what it inflates to is not read here).
pub fn looks_like_package(head: &[u8]) -> bool {
    zip::is_zip(head)
        || deb::is_deb(head)
        || tar::compression_magic(head).is_some()
        || tar::is_header(head)
}

/// Whether `head`, the first bytes of a file or member, are those of one that may hold
/// device code: an object file, program or library (ELF, COFF, PE, Mach-O), an archive, LLVM
/// bitcode, a kpack archive, a binary or text bundle, a compressed bundle, an offload binary,
/// a CUDA fat binary, a bare SPIR-V or PTX image, or a package (which may hold any of them).
pub fn may_hold_device_code(head: &[u8]) -> bool {
    const TEXT_BUNDLE: &[u8] = b"__CLANG_OFFLOAD_BUNDLE____START__";
    const OBJECT_MAGICS: [&[u8]; 8] = [
        b"\x7fELF",
        b"MZ",
        b"!<arch>\n",
        b"!<thin>\n",
        b"\xcf\xfa\xed\xfe",
        b"\xce\xfa\xed\xfe",
        b"\xca\xfe\xba\xbe",
        b"BC\xc0\xde",
    ];
    if OBJECT_MAGICS.iter().any(|magic| head.starts_with(magic))
        || head.starts_with(&crate::format::kpack::MAGIC)
        || head.starts_with(crate::format::bare::SPIRV_MAGIC)
        || BareImage::parse(head).is_some_and(|image| image.kind == BareKind::Ptx)
        || Container::at_start(head).is_some()
        || head.windows(TEXT_BUNDLE.len()).any(|w| w == TEXT_BUNDLE)
        || looks_like_package(head)
    {
        return true;
    }
    // A COFF object has no magic: its machine field says what it is.
    let machine = head.first_chunk::<2>().map(|m| u16::from_le_bytes(*m));
    matches!(
        machine,
        Some(0x8664 | 0xaa64 | 0x14c | 0x1c4 | 0xa641 | 0xa64e)
    )
}

/// Copies what `read` gives after `head`, to its end, into memory or, past
/// [`crate::io::spill::IN_MEMORY`] bytes, a spill file; more than `most` bytes is `Err(None)`, a read that fails `Err(Some(error))`.
fn gather(
    read: &mut dyn std::io::Read,
    head: &[u8],
    most: u64,
) -> std::result::Result<crate::io::spill::Spilled, Option<std::io::Error>> {
    let mut spill = crate::io::spill::Spill::new();
    spill.append(head).map_err(Some)?;
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = match read.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Some(e)),
        };
        if spill.len().saturating_add(n as u64) > most {
            return Err(None);
        }
        spill
            .append(buf.get(..n).unwrap_or_default())
            .map_err(Some)?;
    }
    spill.finish().map_err(Some)
}

/// Reads from `read` until `buf` is full or the stream ends; returns how many bytes it holds.
fn fill(read: &mut dyn std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut len = 0;
    while let Some(rest) = buf.get_mut(len..).filter(|rest| !rest.is_empty()) {
        match read.read(rest) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_leave_the_folder_are_refused() {
        let p = Path::new("p.whl");
        assert!(checked_name(p, b"a/b/lib.so", 0).is_ok());
        assert!(checked_name(p, b"a/..b/lib.so", 0).is_ok());
        for bad in [&b"/etc/x"[..], b"../x", b"a/../../x", b"a\\..\\x", b"a\0b"] {
            let e = checked_name(p, bad, 0x10).unwrap_err().to_string();
            assert!(e.contains("p.whl!"), "{e}");
            assert!(e.contains("0x10"), "{e}");
        }
    }

    #[test]
    fn heads_that_may_hold_device_code() {
        assert!(may_hold_device_code(b"\x7fELF\x02\x01\x01"));
        assert!(may_hold_device_code(b"!<arch>\nfoo"));
        assert!(may_hold_device_code(b"PK\x03\x04"));
        assert!(!may_hold_device_code(b"import os\n"));
        assert!(!may_hold_device_code(b""));
    }
}
