//! Debian packages: an ar archive whose first member is `debian-binary`, then `control.tar.*`
//! (the package's manifest: `control`, `md5sums`, scripts) and `data.tar.*` (its files,
//! compressed with gzip, xz, zstd or bzip2). The members are read as any archive's
//! ([`crate::host::archive::read_members`]); the tarballs among them are packages of their
//! own, read in turn by whoever visits them, so that a library in the data tarball is named
//! `PACKAGE.deb!data.tar.xz!usr/lib/libx.so`.

use std::path::Path;

use crate::error::{Error, Result};
use crate::host::archive::read_members;
use crate::host::package::{checked_name, Member, Visit, HEAD};

/// Whether `data` starts as a Debian package does.
pub fn is_deb(data: &[u8]) -> bool {
    data.starts_with(b"!<arch>\ndebian-binary")
}

/// Reads the Debian package `data` (at `path`), calling `visit` for each member that may hold
/// device code (see [`super::read`]).
pub fn read(path: &Path, data: &[u8], visit: &mut Visit<'_>) -> Result<Vec<Error>> {
    let mut problems = Vec::new();
    for member in read_members(path, data)? {
        let name = member.name.trim_end_matches('/').as_bytes();
        let at = crate::io::slice::offset_within(data, &member.data).map_or(0, |at| at as u64);
        if let Err(e) = checked_name(path, name, at) {
            problems.push(e);
            continue;
        }
        let head = member.data.get(..HEAD).unwrap_or(&member.data);
        if !super::may_hold_device_code(head) {
            continue;
        }
        visit(&Member {
            name,
            bytes: &member.data,
        })?;
    }
    Ok(problems)
}
