//! A folder of new files built whole before it is put in place: for a command that writes
//! many small outputs (`extract -r -o OUT`), each output taking a temporary name and a rename
//! of its own costs more than the copy itself, and a record of each held until the end costs
//! memory that grows with the number of outputs.
//!
//! For a folder that does not exist yet, the folder is made empty beside its destination,
//! under a hidden temporary name open to its owner only (until it gets the mode `mkdir` would
//! give it, just before its rename). For a folder that exists ([`FreshFolder::inside`]), it
//! is made inside it, hidden and open to its owner only: a staging folder. Either is listed
//! so that SIGINT, SIGTERM and SIGHUP remove it; each output is created in it by its name,
//! through the folder's descriptor, with `O_EXCL` (never through a link, never over a file).
//! On any error it is removed with everything in it, and nothing is in place. An output
//! whose input turns out damaged is removed by its name in the folder.
//!
//! When all are written, a new folder is renamed to its destination, once, only if nothing
//! took that name meanwhile. A staging folder's files are renamed into the folder that
//! exists, each over what is at its name (as [`Output::create`] would replace it: a regular
//! file's mode is kept, a file replaced is synced before and the folder after; a device or a
//! FIFO there is written into as it is, when the output is made), reading the staging
//! folder's names through its descriptor as they are moved, then the staging folder goes.
//! With [`Syncing::Everything`](super::Syncing), the file system is synced before the
//! renames and the destination's parent (or the folder that exists) after them.

use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::fd::FromRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::beneath::Folder;
use super::cleanup::{self, Listed};
use super::error::{FileError as Error, Result};
use super::{folder_of, keep, not_an_input, syncing, written_directly, Output, Sink, Syncing};

/// What an output renamed to `path` finds there.
pub(super) enum AtName {
    /// Nothing.
    Free,
    /// A device, a FIFO, or a descriptor of this process (`/dev/stdout`): written into, not
    /// replaced.
    Device,
    /// A file (or a link), which the output replaces: the output takes `mode`, the mode of
    /// the regular file replaced, or what the umask leaves of 0666.
    Taken { mode: u32 },
}

/// What is at `path`, for an output that is to take its place: a folder there (a link to one
/// too) or an input of this process by its own name is an error.
pub(super) fn at_name(path: &Path) -> Result<AtName> {
    if written_directly(path) {
        return Ok(AtName::Device);
    }
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(Error::io(path, io::Error::from_raw_os_error(libc::EISDIR)));
    }
    not_an_input(path)?;
    let Ok(existing) = std::fs::symlink_metadata(path) else {
        return Ok(AtName::Free);
    };
    let mode = match existing.is_file() {
        true => existing.mode() & 0o777,
        false => 0o666 & !keep::umask(),
    };
    Ok(AtName::Taken { mode })
}

/// A new folder being filled, not yet at its destination; or a staging folder inside a
/// folder that exists, its files not yet moved into it.
pub struct FreshFolder {
    // Field order is drop order: the folder's descriptor is closed, the folder removed with
    // what it holds, then it leaves the signals' list.
    folder: Folder,
    temp: Option<tempfile::TempDir>,
    _listed: Listed,
    destination: PathBuf,
    /// The folder that exists, open, when this is its staging folder.
    into: Option<Folder>,
}

/// `name` as a C string; a NUL in it is an invalid argument.
fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

impl FreshFolder {
    /// Makes the empty folder that will become `destination`, beside it (its parent must
    /// exist; `destination` must not).
    pub fn new(destination: &Path) -> Result<FreshFolder> {
        let mut prefix = OsString::from(".");
        prefix.push(destination.file_name().unwrap_or(OsStr::new("output")));
        prefix.push(".");
        FreshFolder::made(destination, folder_of(destination), &prefix, None)
    }

    /// Makes an empty staging folder inside the folder `destination`, which exists: hidden,
    /// open to its owner only, its files moved into `destination` by [`FreshFolder::place`].
    pub fn inside(destination: &Path) -> Result<FreshFolder> {
        let into =
            Folder::open(destination, Path::new("")).map_err(|e| Error::io(destination, e))?;
        FreshFolder::made(
            destination,
            destination,
            OsStr::new(".staging."),
            Some(into),
        )
    }

    /// Makes the folder, hidden (`prefix`, then a random part and `.tmp`), open to its owner
    /// only and listed for the signals' clean-up, in the folder `parent`; for `destination`,
    /// and into the folder `into` when it is a staging folder.
    fn made(
        destination: &Path,
        parent: &Path,
        prefix: &OsStr,
        into: Option<Folder>,
    ) -> Result<FreshFolder> {
        let (temp, listed) = cleanup::listed(
            || {
                tempfile::Builder::new()
                    .prefix(prefix)
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
            into,
        })
    }

    /// Starts writing the new file `name` of the folder (`path`, its final path, names it in
    /// messages): created by its name in the folder's descriptor, failing when the name is
    /// taken. It is in place when the folder is; until then [`FreshFolder::remove`] takes
    /// it out.
    ///
    /// In a staging folder, what is at `path` is weighed first, as [`Output::create`] does: a
    /// folder there, or an input of this process by its own name, is an error; a device or a
    /// FIFO is written into now, as it is; a regular file's mode is the output's.
    pub fn create(&self, name: &OsStr, path: &Path) -> Result<Output> {
        self.create_file(name, path, None)
    }

    /// [`FreshFolder::create`], the new file given `mode` whatever is at `path` (an output
    /// made from an input takes the input's). `name` may be a path of names below the folder,
    /// whose folders [`FreshFolder::make_folders`] made.
    pub fn create_with_mode(&self, name: &OsStr, path: &Path, mode: u32) -> Result<Output> {
        self.create_file(name, path, Some(mode))
    }

    /// Creates the file `name` (its final path `path`), of mode `given`, else of the mode of
    /// the file it replaces, else of what the umask leaves of 0666.
    fn create_file(&self, name: &OsStr, path: &Path, given: Option<u32>) -> Result<Output> {
        let mode = match self.into.is_some().then(|| at_name(path)).transpose()? {
            Some(AtName::Device) => return Output::direct(path),
            Some(AtName::Taken { mode }) => Some(mode),
            Some(AtName::Free) | None => None,
        };
        let mode = given.or(mode);
        let c = c_name(name).map_err(|e| Error::io(path, e))?;
        let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC;
        // Not while a signal's clean-up removes the folder: a file made then would keep it.
        let fd = cleanup::uninterrupted(|| {
            // SAFETY: `c` is NUL-terminated and outlives the call; the descriptor is a folder
            // this value holds open. The mode is what the umask leaves of 0666, as for any
            // new file.
            let fd = unsafe { libc::openat(self.folder.raw(), c.as_ptr(), flags, 0o666) };
            match fd {
                fd if fd < 0 => Err(io::Error::last_os_error()),
                fd => Ok(fd),
            }
        })
        .map_err(|e| Error::io(path, e))?;
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let file = unsafe { File::from_raw_fd(fd) };
        if let Some(mode) = mode {
            file.set_permissions(std::fs::Permissions::from_mode(mode))
                .map_err(|e| Error::io(path, e))?;
        }
        Ok(Output::with_sink_sized(
            path,
            Sink::Direct(file),
            SMALL_BUFFER,
        ))
    }

    /// Makes the folders of `relative` (names below the folder, `path` the final path of the
    /// last) that are not there yet. In a staging folder, a name of `relative` that is
    /// something else than a folder in the folder that exists (a file, a link) is an error:
    /// nothing is written through it.
    pub fn make_folders(&self, relative: &Path, path: &Path) -> Result<()> {
        let mut made = PathBuf::new();
        let names = relative.components().count();
        for (n, name) in relative.components().enumerate() {
            made.push(name);
            // The final path of `made`: `path` without its last names.
            let at = path.ancestors().nth(names - n - 1).unwrap_or(path);
            // Each name before it was found a folder, not a link: `made` is reached through
            // folders only.
            if let Some(into) = &self.into {
                let there = into
                    .identity(made.as_os_str())
                    .map_err(|e| Error::io(at, e))?;
                let folder = into
                    .is_folder(made.as_os_str())
                    .map_err(|e| Error::io(at, e))?;
                if there.is_some() && !folder {
                    let e = io::Error::from_raw_os_error(libc::ENOTDIR);
                    return Err(Error::io(at, e));
                }
            }
            let c = c_name(made.as_os_str()).map_err(|e| Error::io(at, e))?;
            // Not while a signal's clean-up removes the folder: a folder made then would
            // keep it.
            cleanup::uninterrupted(|| {
                // SAFETY: `c` is NUL-terminated and outlives the call; the descriptor is a
                // folder this value holds open.
                match unsafe { libc::mkdirat(self.folder.raw(), c.as_ptr(), 0o777) } {
                    0 => Ok(()),
                    _ => match io::Error::last_os_error() {
                        e if e.raw_os_error() == Some(libc::EEXIST) => Ok(()),
                        e => Err(e),
                    },
                }
            })
            .map_err(|e| Error::io(at, e))?;
        }
        Ok(())
    }

    /// Makes the symbolic link `name` (below the folder; `path` its final path) to `target`.
    pub fn link(&self, target: &Path, name: &OsStr, path: &Path) -> Result<()> {
        let to = c_name(target.as_os_str()).map_err(|e| Error::io(path, e))?;
        let c = c_name(name).map_err(|e| Error::io(path, e))?;
        cleanup::uninterrupted(|| {
            // SAFETY: both names are NUL-terminated and outlive the call; the descriptor is a
            // folder this value holds open.
            match unsafe { libc::symlinkat(to.as_ptr(), self.folder.raw(), c.as_ptr()) } {
                0 => Ok(()),
                _ => Err(io::Error::last_os_error()),
            }
        })
        .map_err(|e| Error::io(path, e))
    }

    /// A path to read the file `name` made in the folder by, while the folder is not placed;
    /// `None` when it is not there (an output written into a device as it is).
    pub fn staged(&self, name: &OsStr) -> Option<PathBuf> {
        self.folder.identity(name).ok()??;
        Some(self.folder.path().join(name))
    }

    /// Removes the file `name` made in the folder (the outputs of an input that failed).
    /// In a staging folder, an output written into a device as it is has nothing to remove.
    pub fn remove(&self, name: &OsStr) -> Result<()> {
        match self.folder.unlink(name) {
            Err(e) if self.into.is_some() && e.kind() == io::ErrorKind::NotFound => Ok(()),
            unlinked => unlinked.map_err(|e| Error::io(self.destination.join(name), e)),
        }
    }

    /// Puts the folder at its destination, unless something is there by now; or, for a
    /// staging folder, its files into the folder that exists.
    pub fn place(mut self) -> Result<()> {
        let destination = self.destination.clone();
        if let Some(into) = self.into.take() {
            return self.move_into(&into);
        }
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

impl FreshFolder {
    /// Moves every file of the staging folder into `into` (the destination, open), then
    /// removes the staging folder. A signal waits for the moves to end: the folder gets all
    /// of its new files or, until the first is moved, none.
    fn move_into(mut self, into: &Folder) -> Result<()> {
        let destination = self.destination.clone();
        let everything = syncing() == Syncing::Everything;
        if everything {
            // SAFETY: the descriptor is a folder this value holds open.
            if unsafe { libc::syncfs(self.folder.raw()) } != 0 {
                return Err(Error::io(&destination, io::Error::last_os_error()));
            }
        }
        let mut replaced = false;
        // The output a move failed for, to name in the error.
        let mut failed = None;
        cleanup::uninterrupted(|| {
            let mut moves = Moves {
                synced: everything,
                failed: &mut failed,
            };
            replaced = moves.all(&self.folder, into, &destination)?;
            Ok(())
        })
        .map_err(|e: io::Error| Error::io(failed.as_deref().unwrap_or(&destination), e))?;
        if let Some(temp) = self.temp.take() {
            temp.close().map_err(|e| Error::io(&destination, e))?;
        }
        if everything || replaced {
            super::syncing::sync_folder(&destination).map_err(|e| Error::io(&destination, e))?;
        }
        Ok(())
    }
}

/// The files of a staging folder being moved into the folder that exists.
struct Moves<'m> {
    /// Whether the whole file system was synced before.
    synced: bool,
    /// The output a move failed for, to name in the error.
    failed: &'m mut Option<PathBuf>,
}

impl Moves<'_> {
    /// Moves everything of the folder `from` into `into` (`path`); gives whether it replaced
    /// a file. A folder of `from` where `into` has a folder has its files moved into that one,
    /// and goes; any other is moved whole.
    fn all(&mut self, from: &Folder, into: &Folder, path: &Path) -> io::Result<bool> {
        let mut replaced = false;
        // Names are read as their files leave: read again until none is left, so that none
        // is missed.
        while from.each_name(&mut |name| {
            let path = path.join(name);
            let moved = self.one(from, into, name, &path);
            if moved.is_err() && self.failed.is_none() {
                *self.failed = Some(path);
            }
            replaced |= moved?;
            Ok(())
        })? > 0
        {}
        Ok(replaced)
    }

    /// Moves `name` of `from` into `into` (`path` there), over what is there: a file
    /// replaced, the new one is synced first (unless the whole file system was). Gives
    /// whether it replaced a file.
    fn one(&mut self, from: &Folder, into: &Folder, name: &OsStr, path: &Path) -> io::Result<bool> {
        if from.is_folder(name)? && into.is_folder(name)? {
            let replaced = self.all(&from.child(name)?, &into.child(name)?, path)?;
            if replaced && !self.synced {
                super::syncing::sync_folder(path)?;
            }
            let c = c_name(name)?;
            // SAFETY: `c` is NUL-terminated and outlives the call; the descriptor is a
            // folder held open.
            if unsafe { libc::unlinkat(from.raw(), c.as_ptr(), libc::AT_REMOVEDIR) } != 0 {
                return Err(io::Error::last_os_error());
            }
            return Ok(replaced);
        }
        let c = c_name(name)?;
        let replaces = into.identity(name)?.is_some();
        if replaces && !self.synced {
            // A link made is not synced: there is no file of its own to sync.
            if let Ok(file) = from.open_file(name) {
                super::syncing::sync_file(&file, path)?;
            }
        }
        // SAFETY: `c` is NUL-terminated and outlives the call; both descriptors are folders
        // held open.
        let renamed = unsafe { libc::renameat(from.raw(), c.as_ptr(), into.raw(), c.as_ptr()) };
        if renamed != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(replaces)
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

    #[test]
    fn folders_made_in_a_staging_folder_join_those_that_exist() {
        let dir = tempfile::tempdir().unwrap();
        let into = dir.path();
        std::fs::create_dir_all(into.join("a/old")).unwrap();
        std::fs::write(into.join("a/keep"), b"mine").unwrap();
        std::fs::write(into.join("a/b"), b"replaced").unwrap();
        let staging = FreshFolder::inside(into).unwrap();
        for folder in ["a/new/deep", "a/old", "fresh"] {
            staging
                .make_folders(Path::new(folder), &into.join(folder))
                .unwrap();
        }
        for name in ["a/b", "a/new/deep/c", "a/old/d", "fresh/e"] {
            let path = into.join(name);
            let mut out = staging
                .create_with_mode(OsStr::new(name), &path, 0o750)
                .unwrap();
            out.write_bytes(name.as_bytes()).unwrap();
            out.flush().unwrap();
            let staged = staging.staged(OsStr::new(name)).unwrap();
            assert_eq!(std::fs::read(staged).unwrap(), name.as_bytes());
            out.close().unwrap();
        }
        staging
            .link(Path::new("b"), OsStr::new("a/link"), &into.join("a/link"))
            .unwrap();
        // A file of the folder where a folder is to be made is an error.
        assert!(staging
            .make_folders(Path::new("a/keep/x"), &into.join("a/keep/x"))
            .is_err());
        assert!(!into.join("a/new").exists());
        staging.place().unwrap();
        for name in ["a/b", "a/new/deep/c", "a/old/d", "fresh/e"] {
            assert_eq!(std::fs::read(into.join(name)).unwrap(), name.as_bytes());
            let mode = std::fs::metadata(into.join(name)).unwrap().mode() & 0o777;
            assert_eq!(mode, 0o750);
        }
        assert_eq!(std::fs::read(into.join("a/keep")).unwrap(), b"mine");
        assert_eq!(
            std::fs::read_link(into.join("a/link")).unwrap(),
            Path::new("b")
        );
        let mut names: Vec<_> = std::fs::read_dir(into)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["a", "fresh"]);
    }

    #[test]
    fn a_staging_folder_moves_its_files_into_the_folder_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let into = dir.path();
        std::fs::write(into.join("b"), b"old").unwrap();
        std::fs::set_permissions(into.join("b"), std::fs::Permissions::from_mode(0o640)).unwrap();
        let staging = FreshFolder::inside(into).unwrap();
        for name in ["a", "b"] {
            let mut out = staging.create(OsStr::new(name), &into.join(name)).unwrap();
            out.write_bytes(name.as_bytes()).unwrap();
            out.close().unwrap();
        }
        // A folder at an output's name is an error; nothing is in place yet.
        std::fs::create_dir(into.join("c")).unwrap();
        assert!(staging.create(OsStr::new("c"), &into.join("c")).is_err());
        assert!(!into.join("a").exists());
        assert_eq!(std::fs::read(into.join("b")).unwrap(), b"old");
        staging.place().unwrap();
        assert_eq!(std::fs::read(into.join("a")).unwrap(), b"a");
        assert_eq!(std::fs::read(into.join("b")).unwrap(), b"b");
        let mode = std::fs::metadata(into.join("b")).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o640);
        let mut names: Vec<_> = std::fs::read_dir(into)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["a", "b", "c"]);

        // Dropped unplaced, the folder is as it was.
        let staging = FreshFolder::inside(into).unwrap();
        staging.create(OsStr::new("d"), &into.join("d")).unwrap();
        drop(staging);
        assert_eq!(std::fs::read_dir(into).unwrap().count(), 3);
    }
}
