//! A folder of new files built whole before it is put in place: for a command that writes
//! many small outputs into a folder that does not exist yet (`extract -r -o NEW`), each output
//! taking a temporary name and a rename of its own costs more than the copy itself.
//!
//! The folder is made empty beside its destination, under a hidden temporary name open to
//! its owner only (until it gets the mode `mkdir` would give it, just before its rename), and
//! listed so that SIGINT, SIGTERM and SIGHUP remove it; each output is created in it by its
//! name, through the folder's descriptor, with `O_EXCL` (never through a link, never over a
//! file). When all are written, the folder is renamed to its
//! destination, once, only if nothing took that name meanwhile; until then it is removed,
//! with everything in it, on any error. An output whose input turns out damaged is removed
//! by its name in the folder. With [`Syncing::Everything`](super::Syncing), the file system
//! is synced before the rename and the destination's parent after it.

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::FromRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::beneath::Folder;
use super::cleanup::{self, Listed};
use super::error::{FileError as Error, Result};
use super::{folder_of, syncing, Output, Sink, Syncing};

/// A new folder being filled, not yet at its destination.
pub struct FreshFolder {
    // Field order is drop order: the folder's descriptor is closed, the folder removed with
    // what it holds, then it leaves the signals' list.
    folder: Folder,
    temp: Option<tempfile::TempDir>,
    _listed: Listed,
    destination: PathBuf,
}

/// `name` as a C string; a NUL in it is an invalid argument.
fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

impl FreshFolder {
    /// Makes the empty folder that will become `destination`, beside it (its parent must
    /// exist; `destination` must not).
    pub fn new(destination: &Path) -> Result<FreshFolder> {
        let parent = folder_of(destination);
        let mut prefix = OsString::from(".");
        prefix.push(destination.file_name().unwrap_or(OsStr::new("output")));
        prefix.push(".");
        let (temp, listed) = cleanup::listed(
            || {
                tempfile::Builder::new()
                    .prefix(&prefix)
                    .suffix(".tmp")
                    .permissions(std::fs::Permissions::from_mode(0o700))
                    .tempdir_in(parent)
            },
            tempfile::TempDir::path,
        )
        .map_err(|e| Error::io(destination, e))?;
        let folder =
            Folder::open(temp.path(), Path::new("")).map_err(|e| Error::io(destination, e))?;
        Ok(FreshFolder {
            folder,
            temp: Some(temp),
            _listed: listed,
            destination: destination.to_path_buf(),
        })
    }

    /// Starts writing the new file `name` of the folder (`path`, its final path, names it in
    /// messages): created by its name in the folder's descriptor, failing when the name is
    /// taken. It is in place when the folder is; until then [`FreshFolder::remove`] takes
    /// it out.
    pub fn create(&self, name: &OsStr, path: &Path) -> Result<Output> {
        let c = c_name(name).map_err(|e| Error::io(path, e))?;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC;
        // SAFETY: `c` is NUL-terminated and outlives the call; the descriptor is a folder this
        // value holds open. The mode is what the umask leaves of 0666, as for any new file.
        let fd = unsafe { libc::openat(self.folder.raw(), c.as_ptr(), flags, 0o666) };
        if fd < 0 {
            return Err(Error::io(path, io::Error::last_os_error()));
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let file = unsafe { File::from_raw_fd(fd) };
        Ok(Output::with_sink_sized(
            path,
            Sink::Direct(file),
            SMALL_BUFFER,
        ))
    }

    /// Removes the file `name` made in the folder (the outputs of an input that failed).
    pub fn remove(&self, name: &OsStr) -> Result<()> {
        self.folder
            .unlink(name)
            .map_err(|e| Error::io(self.destination.join(name), e))
    }

    /// Puts the folder at its destination, unless something is there by now.
    pub fn place(mut self) -> Result<()> {
        let destination = self.destination.clone();
        if syncing() == Syncing::Everything {
            // SAFETY: the descriptor is a folder this value holds open.
            if unsafe { libc::syncfs(self.folder.raw()) } != 0 {
                return Err(Error::io(&destination, io::Error::last_os_error()));
            }
        }
        // The mode of a folder made by `mkdir`, now that it is whole.
        let mode = 0o777 & !super::keep::umask();
        // SAFETY: the descriptor is a folder this value holds open.
        if unsafe { libc::fchmod(self.folder.raw(), mode) } != 0 {
            return Err(Error::io(&destination, io::Error::last_os_error()));
        }
        let Some(temp) = self.temp.take() else {
            return Err(Error::file(&destination, "the folder was placed already"));
        };
        let from = c_name(temp.path().as_os_str()).map_err(|e| Error::io(&destination, e))?;
        let to = c_name(destination.as_os_str()).map_err(|e| Error::io(&destination, e))?;
        // SAFETY: both names are NUL-terminated and outlive the call.
        let renamed = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                from.as_ptr(),
                libc::AT_FDCWD,
                to.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        if renamed != 0 {
            let e = io::Error::last_os_error();
            // Dropped, it removes the folder and what it holds.
            drop(temp);
            return Err(Error::io(&destination, e));
        }
        // In place: the folder is no temporary any more.
        let _kept = temp.keep();
        if syncing() == Syncing::Everything {
            let parent = folder_of(&destination);
            super::syncing::sync_folder(parent).map_err(|e| Error::io(parent, e))?;
        }
        Ok(())
    }
}

/// The buffer of an output of a fresh folder: outputs are small and many.
const SMALL_BUFFER: usize = 64 << 10;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folder_appears_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let destination = dir.path().join("out");
        let fresh = FreshFolder::new(&destination).unwrap();
        let mut out = fresh
            .create(OsStr::new("a"), &destination.join("a"))
            .unwrap();
        out.write_bytes(b"one").unwrap();
        out.close().unwrap();
        // A name taken is refused, never written over.
        assert!(fresh
            .create(OsStr::new("a"), &destination.join("a"))
            .is_err());
        assert!(!destination.exists());
        fresh.place().unwrap();
        assert_eq!(std::fs::read(destination.join("a")).unwrap(), b"one");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1);

        // Dropped unplaced, nothing is left; placed over a name taken meanwhile, neither.
        let other = dir.path().join("other");
        let fresh = FreshFolder::new(&other).unwrap();
        fresh.create(OsStr::new("b"), &other.join("b")).unwrap();
        drop(fresh);
        let fresh = FreshFolder::new(&other).unwrap();
        std::fs::create_dir(&other).unwrap();
        assert!(fresh.place().is_err());
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 2);
        assert_eq!(std::fs::read_dir(&other).unwrap().count(), 0);
    }
}
