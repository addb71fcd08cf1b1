//! Files inside a tree reached through folder descriptors, so that what a walk deletes or
//! replaces is inside the tree even while the tree changes under it.
//!
//! A walk finds a file by its path; by the time it acts, a folder on that path may have been
//! swapped for a symbolic link to somewhere else. Acting again by path would follow it. Here
//! the folder holding the file is opened from the tree's root one name at a time, each with
//! `O_NOFOLLOW`: a name that is now a link stops the walk there. The file is then removed or
//! replaced by its name in that folder (`unlinkat`, and renames into the folder's
//! `/proc/self/fd` path, which the kernel resolves to the folder itself, wherever it is now),
//! and only when the name still holds the file that was read (same device and inode, the name
//! itself not followed).

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use super::error::FileError as Error;
use super::{opening, Output, Placing, Result};

/// A device and inode: which file a name held when it was read.
pub type Identity = (u64, u64);

/// A folder of a tree, open.
#[derive(Debug)]
pub struct Folder {
    fd: OwnedFd,
}

/// The error for a name that no longer holds the file that was read.
fn changed() -> io::Error {
    io::Error::other(
        "it changed while it was being read (another file is at its name now); left as it is",
    )
}

/// `name` as a C string; a NUL in it is an invalid argument.
fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

impl Folder {
    /// Opens the folder `relative` below `root`, `root` as named (links in it followed: the
    /// user named it), then each name of `relative` without following a symbolic link: a
    /// name that is a link fails with `ELOOP` or `ENOTDIR`. `relative` holds plain names only.
    pub fn open(root: &Path, relative: &Path) -> io::Result<Folder> {
        let root = if root.as_os_str().is_empty() {
            Path::new(".")
        } else {
            root
        };
        let mut folder = Folder::at(libc::AT_FDCWD, &c_name(root.as_os_str())?, 0)?;
        for component in relative.components() {
            match component {
                Component::Normal(name) => {
                    folder = Folder::at(folder.fd.as_raw_fd(), &c_name(name)?, libc::O_NOFOLLOW)?;
                }
                Component::CurDir => {}
                _ => return Err(io::Error::from_raw_os_error(libc::EINVAL)),
            }
        }
        Ok(folder)
    }

    /// Opens the folder `name` in this folder, a symbolic link not followed (`ELOOP`,
    /// `ENOTDIR`).
    pub fn child(&self, name: &OsStr) -> io::Result<Folder> {
        Folder::at(self.fd.as_raw_fd(), &c_name(name)?, libc::O_NOFOLLOW)
    }

    /// Opens the folder `name` in the folder `dir`, with `flags` beside those of a folder.
    fn at(dir: libc::c_int, name: &CString, flags: libc::c_int) -> io::Result<Folder> {
        let flags = flags | libc::O_DIRECTORY | libc::O_RDONLY | libc::O_CLOEXEC;
        // SAFETY: `name` is a NUL-terminated string that outlives the call; `dir` is a folder
        // descriptor this process holds open, or AT_FDCWD.
        let fd = unsafe { libc::openat(dir, name.as_ptr(), flags) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Folder { fd })
    }

    /// The folder's descriptor, for the calls of the other modules of `io`.
    pub(super) fn raw(&self) -> libc::c_int {
        self.fd.as_raw_fd()
    }

    /// A path that names this folder for as long as it is open, wherever it is now: names
    /// joined to it resolve in this folder (`/proc/self/fd/N`).
    pub fn path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
    }

    /// The file `name` holds in this folder, the name itself not followed; `None` when there
    /// is none.
    pub fn identity(&self, name: &OsStr) -> io::Result<Option<Identity>> {
        Ok(self.stat(name)?.map(|stat| (stat.st_dev, stat.st_ino)))
    }

    /// Whether `name` in this folder is a folder (the name itself not followed); `false`
    /// when nothing is there.
    pub(super) fn is_folder(&self, name: &OsStr) -> io::Result<bool> {
        Ok(self
            .stat(name)?
            .is_some_and(|stat| stat.st_mode & libc::S_IFMT == libc::S_IFDIR))
    }

    /// What `fstatat` says of `name` in this folder, the name itself not followed; `None`
    /// when nothing is there.
    fn stat(&self, name: &OsStr) -> io::Result<Option<libc::stat>> {
        let c = c_name(name)?;
        let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: `c` is NUL-terminated and `stat` is a buffer of the size fstatat writes.
        let status = unsafe {
            libc::fstatat(
                self.fd.as_raw_fd(),
                c.as_ptr(),
                stat.as_mut_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
        if status != 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::NotFound => Ok(None),
                _ => Err(e),
            };
        }
        // SAFETY: fstatat succeeded, so it filled `stat`.
        Ok(Some(unsafe { stat.assume_init() }))
    }

    /// Checks that `name` still holds the file `read`.
    pub fn check(&self, name: &OsStr, read: Identity) -> io::Result<()> {
        match self.identity(name)? {
            Some(now) if now == read => Ok(()),
            _ => Err(changed()),
        }
    }

    /// Removes `name` from this folder, when it still holds the file `read`.
    pub fn remove(&self, name: &OsStr, read: Identity) -> io::Result<()> {
        self.check(name, read)?;
        self.unlink(name)
    }

    /// Calls `f` with the name of each entry of this folder (`.` and `..` aside), read
    /// through its descriptor a buffer at a time, never listed whole: `f` may move or remove
    /// the entries it is given. Gives how many there were.
    pub fn each_name(&self, f: &mut dyn FnMut(&OsStr) -> io::Result<()>) -> io::Result<usize> {
        // SAFETY: duplicates a descriptor this value holds open.
        let fd = unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just made and is owned by nothing else; the stream owns it next.
        let dir = unsafe { libc::fdopendir(fd) };
        if dir.is_null() {
            let e = io::Error::last_os_error();
            // SAFETY: `fd` is still ours when fdopendir fails.
            unsafe { libc::close(fd) };
            return Err(e);
        }
        let stream = Stream(dir);
        // The duplicate shares the descriptor's offset: from the first entry.
        // SAFETY: `stream` holds an open directory stream.
        unsafe { libc::rewinddir(stream.0) };
        let mut count = 0;
        loop {
            // SAFETY: errno is this thread's; readdir sets it only on an error.
            unsafe { *libc::__errno_location() = 0 };
            // SAFETY: `stream` holds an open directory stream.
            let entry = unsafe { libc::readdir(stream.0) };
            if entry.is_null() {
                let e = io::Error::last_os_error();
                return match e.raw_os_error() {
                    Some(0) | None => Ok(count),
                    _ => Err(e),
                };
            }
            // SAFETY: readdir gave an entry whose name is NUL-terminated, valid until the
            // next call on the stream.
            let name = unsafe { std::ffi::CStr::from_ptr((*entry).d_name.as_ptr()) };
            let name = OsStr::from_bytes(name.to_bytes());
            if name == "." || name == ".." {
                continue;
            }
            count += 1;
            f(name)?;
        }
    }

    /// Opens the file `name` of this folder to read, a symbolic link not followed.
    pub(super) fn open_file(&self, name: &OsStr) -> io::Result<std::fs::File> {
        let c = c_name(name)?;
        let flags = libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW | libc::O_NONBLOCK;
        // SAFETY: `c` is NUL-terminated; the descriptor is a folder this process holds open.
        let fd = unsafe { libc::openat(self.fd.as_raw_fd(), c.as_ptr(), flags) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        Ok(unsafe { std::fs::File::from_raw_fd(fd) })
    }

    /// Removes `name` from this folder, whatever it holds but a folder (a name in an output
    /// folder that no output takes).
    pub fn unlink(&self, name: &OsStr) -> io::Result<()> {
        let c = c_name(name)?;
        // SAFETY: `c` is NUL-terminated; the descriptor is a folder this process holds open.
        if unsafe { libc::unlinkat(self.fd.as_raw_fd(), c.as_ptr(), 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// A directory stream, closed when dropped.
struct Stream(*mut libc::DIR);

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the stream is open, and closed only here.
        unsafe { libc::closedir(self.0) };
    }
}

/// Where an output that replaces a file of a tree goes: a name in a folder held open, which
/// must still hold the file that was read when the output takes its place.
pub(super) struct Beneath {
    pub(super) folder: Folder,
    name: std::ffi::OsString,
    pub(super) read: Identity,
}

impl Beneath {
    /// The path of the destination, in the open folder, once checked to hold the file read.
    pub(super) fn destination(&self) -> io::Result<PathBuf> {
        self.folder.check(&self.name, self.read)?;
        Ok(self.folder.path().join(&self.name))
    }
}

impl Output {
    /// Starts rewriting in place the file `name` of the open `folder` of a tree (`path` is
    /// how messages name it), which must be the file that was read (`read`) and a regular
    /// file: a symbolic link is not followed. As [`Output::replace`] otherwise; when it takes
    /// its place, the name must still hold that file, and it is renamed in that folder (or
    /// written into, for a file with other hard links), wherever the folder is by then.
    pub fn replace_beneath(
        folder: Folder,
        name: &std::ffi::OsStr,
        path: &Path,
        read: Identity,
    ) -> Result<Output> {
        let beneath = Beneath {
            folder,
            name: name.to_os_string(),
            read,
        };
        let target = beneath.destination().map_err(|e| Error::io(path, e))?;
        let (file, meta) =
            opening::open_nonblocking_nofollow(&target).map_err(|e| Error::io(path, e))?;
        if !meta.is_file() || (meta.dev(), meta.ino()) != read {
            return Err(Error::file(path, "it changed while it was being read (another file is at its name now); left as it is"));
        }
        let placing = Placing::in_place(&file, &meta).map_err(|e| Error::io(path, e))?;
        let mut out = Output::temporary(&target, &beneath.folder.path(), placing)?;
        out.path = path.to_path_buf();
        out.beneath = Some(beneath);
        Ok(out)
    }
}

/// The folder part and the name of `relative` (`a/b/c.so`: `a/b`, `c.so`); `None` for a path
/// that names no file (empty, or ending in `..`).
pub fn split(relative: &Path) -> Option<(&Path, &OsStr)> {
    let name = relative.file_name()?;
    Some((relative.parent().unwrap_or(Path::new("")), name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn identity(path: &Path) -> Identity {
        let meta = std::fs::symlink_metadata(path).unwrap();
        (meta.dev(), meta.ino())
    }

    #[test]
    fn a_link_on_the_way_stops_the_walk_and_a_changed_name_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(tree.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(tree.join("sub/k.co"), b"in").unwrap();
        std::fs::write(outside.join("k.co"), b"out").unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("link")).unwrap();
        let read = identity(&tree.join("sub/k.co"));

        let error = Folder::open(&tree, Path::new("link")).unwrap_err();
        assert!(
            matches!(error.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)),
            "{error}"
        );
        let folder = Folder::open(&tree, Path::new("sub")).unwrap();
        // Another file at the name: not removed.
        let other = identity(&outside.join("k.co"));
        assert!(folder.remove(OsStr::new("k.co"), other).is_err());
        assert!(tree.join("sub/k.co").exists());
        // The folder moved away is still the one open.
        std::fs::rename(tree.join("sub"), tree.join("moved")).unwrap();
        assert_eq!(
            std::fs::read(folder.path().join("k.co")).unwrap(),
            b"in".to_vec()
        );
        folder.remove(OsStr::new("k.co"), read).unwrap();
        assert!(!tree.join("moved/k.co").exists());
        assert!(outside.join("k.co").exists());
        assert!(Folder::open(&tree, Path::new("../outside")).is_err());
    }
}
