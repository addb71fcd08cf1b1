//! What a file rewritten in place keeps: its mode, owner and group, and its extended
//! attributes (POSIX ACLs and file capabilities are extended attributes too). Read from the
//! file before the rewrite; given to the new file before it takes the old one's place.

use std::ffi::{CString, OsStr};
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;

/// The mode bits that give a program its owner's or group's rights when it runs.
const SET_ID: u32 = 0o6000;

/// A file's mode, owner, group and extended attributes.
#[derive(Debug, Clone)]
pub struct Kept {
    mode: u32,
    uid: u32,
    gid: u32,
    attributes: Vec<(CString, Vec<u8>)>,
}

impl Kept {
    /// Reads what `file` (described by `meta`) has.
    pub fn read(file: &File, meta: &Metadata) -> io::Result<Kept> {
        Ok(Kept {
            mode: meta.mode() & 0o7777,
            uid: meta.uid(),
            gid: meta.gid(),
            attributes: attributes(file)?,
        })
    }

    /// Gives `file` (a new file, owned by this process) the kept mode, owner, group and
    /// attributes. Where the owner or group cannot be given (an unprivileged process), the
    /// setuid and setgid bits are dropped rather than given to the wrong owner, as `install`
    /// does; attributes that need privileges (`security.*`, `trusted.*`) are left out then.
    pub fn give(&self, file: &File) -> io::Result<()> {
        let fd = file.as_raw_fd();
        let meta = file.metadata()?;
        let mut mode = self.mode;
        if meta.uid() != self.uid || meta.gid() != self.gid {
            // SAFETY: fchown on an open descriptor.
            if unsafe { libc::fchown(fd, self.uid, self.gid) } != 0 {
                mode &= !SET_ID;
            }
        }
        // After fchown, which clears the set-ID bits, so that they stay.
        // SAFETY: fchmod on an open descriptor.
        if unsafe { libc::fchmod(fd, mode as libc::mode_t) } != 0 {
            return Err(io::Error::last_os_error());
        }
        for (name, value) in &self.attributes {
            // SAFETY: name is NUL-terminated, value is a valid buffer of its length.
            let set = unsafe {
                libc::fsetxattr(fd, name.as_ptr(), value.as_ptr().cast(), value.len(), 0)
            };
            if set != 0 {
                let e = io::Error::last_os_error();
                let privileged = name.as_bytes().starts_with(b"security.")
                    || name.as_bytes().starts_with(b"trusted.");
                if !(privileged && e.raw_os_error() == Some(libc::EPERM)) {
                    return Err(io::Error::new(
                        e.kind(),
                        format!(
                            "cannot keep extended attribute {}: {e}",
                            crate::io::shown(OsStr::from_bytes(name.as_bytes()))
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The names and values of a file's extended attributes; none where the file system has none.
fn attributes(file: &File) -> io::Result<Vec<(CString, Vec<u8>)>> {
    let fd = file.as_raw_fd();
    let names = read_sized(|buf, len| {
        // SAFETY: buf is valid for len bytes (or null with len 0).
        unsafe { libc::flistxattr(fd, buf.cast(), len) }
    })?;
    let mut out = Vec::new();
    for name in names.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let Ok(name) = CString::new(name) else {
            continue;
        };
        let value = read_sized(|buf, len| {
            // SAFETY: name is NUL-terminated; buf is valid for len bytes (or null with len 0).
            unsafe { libc::fgetxattr(fd, name.as_ptr(), buf.cast(), len) }
        })?;
        out.push((name, value));
    }
    Ok(out)
}

/// Calls a list/get attribute function twice: for the size, then for the bytes (again if the
/// value grew in between).
fn read_sized(call: impl Fn(*mut u8, usize) -> isize) -> io::Result<Vec<u8>> {
    loop {
        let size = call(std::ptr::null_mut(), 0);
        if size < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::ENOTSUP) => Ok(Vec::new()),
                _ => Err(e),
            };
        }
        let mut buf = vec![0u8; size as usize];
        let got = call(buf.as_mut_ptr(), buf.len());
        if got >= 0 {
            buf.truncate(got as usize);
            return Ok(buf);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ERANGE) {
            return Err(e);
        }
    }
}

/// The process's file mode creation mask, from `/proc/self/status` (reading it with
/// `umask(2)` would change it for every thread for a moment); 022 where that is not known.
pub fn umask() -> u32 {
    static MASK: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *MASK.get_or_init(|| {
        crate::io::read_small_text(std::path::Path::new("/proc/self/status"))
            .ok()
            .and_then(|status| {
                status.lines().find_map(|line| {
                    let value = line.strip_prefix("Umask:")?.trim();
                    u32::from_str_radix(value, 8).ok()
                })
            })
            .unwrap_or(0o022)
    })
}
