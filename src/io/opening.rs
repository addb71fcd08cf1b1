//! Opening files whose type is not known in advance without blocking on them, and reading
//! the small files that are not inputs (topology, sysfs, the loader's configuration) to a
//! bound.
//!
//! A path checked with `stat` may be replaced by a FIFO before it is opened, and opening a
//! FIFO for reading waits for a writer. So files are opened with `O_NONBLOCK` (which returns
//! at once for a FIFO, and changes nothing for a regular file) and their type is taken from
//! the descriptor (`fstat`), never from the path.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::io::error::{FileError as Error, Result};

/// The most bytes [`read_small`] reads: configuration and topology files are a few hundred
/// bytes; anything larger is not what it claims to be.
pub const SMALL_FILE_LIMIT: u64 = 64 << 10;

/// Opens `path` for reading without waiting on a FIFO or a device, and describes what the
/// descriptor is. The descriptor is left in non-blocking mode: see [`blocking`].
pub fn open_nonblocking(path: &Path) -> io::Result<(File, Metadata)> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let meta = file.metadata()?;
    Ok((file, meta))
}

/// As [`open_nonblocking`], but a symbolic link at `path`'s last name is not followed: it
/// fails (`ELOOP`).
pub fn open_nonblocking_nofollow(path: &Path) -> io::Result<(File, Metadata)> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(path)?;
    let meta = file.metadata()?;
    Ok((file, meta))
}

/// Puts `file` back in blocking mode, for a pipe that is read to its end.
pub fn blocking(file: &File) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor this process holds open.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above; only O_NONBLOCK changes.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The first `len` bytes of `file` read from its current position, fewer if it ends first:
/// in one read as a rule, where reading to the end takes two or three.
pub fn read_up_to(file: &File, len: u64) -> io::Result<Vec<u8>> {
    let len = usize::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut bytes = vec![0u8; len];
    let mut filled = 0;
    while let Some(rest @ [_, ..]) = bytes.get_mut(filled..) {
        match (&*file).read(rest) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    bytes.truncate(filled);
    Ok(bytes)
}

/// Opens `path`, which must be a regular file (a file found in a folder, checked again on
/// the descriptor): anything else is an error naming it, not a wait.
pub fn open_regular(path: &Path) -> Result<(File, Metadata)> {
    let (file, meta) = open_nonblocking(path).map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(not_regular(path));
    }
    Ok((file, meta))
}

/// The bytes of `path`, a small regular file that is not an input: a topology or sysfs file,
/// the loader's configuration. A FIFO, a device (`/dev/zero` behind a symbolic link) or a
/// file larger than `limit` bytes is an error naming it; nothing is read without a bound.
pub fn read_small(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let (file, _) = open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(Error::file(
            path,
            format!("larger than {} KiB; not read further", limit >> 10),
        ));
    }
    Ok(bytes)
}

/// [`read_small`] to [`SMALL_FILE_LIMIT`], as text (bytes that are not UTF-8 are replaced).
pub fn read_small_text(path: &Path) -> Result<String> {
    let bytes = read_small(path, SMALL_FILE_LIMIT)?;
    Ok(String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into()))
}

/// The error for a path that is not a regular file where one is needed.
fn not_regular(path: &Path) -> Error {
    Error::file(
        path,
        "not a regular file (a FIFO, device, socket or folder); not read",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_fifos_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let name = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let e = read_small(&fifo, SMALL_FILE_LIMIT).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let e = read_small(&zero, SMALL_FILE_LIMIT).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
    }

    #[test]
    fn a_file_past_the_bound_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'x'; 100]).unwrap();
        assert!(read_small(&big, 100).is_ok());
        let e = read_small(&big, 99).unwrap_err().to_string();
        assert!(e.contains("larger than"), "{e}");
    }
}
