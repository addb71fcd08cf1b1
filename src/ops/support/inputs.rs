//! The files a command works on: the files named, and the files found in the folders named
//! (their own files, or with `recursive` every file of the tree), in a stable order.
//!
//! Files found in a folder are taken only when their first bytes say they may hold device
//! code (an object file, program, shared library, archive, one of the containers or a
//! package, by the rule of [`crate::host::package::may_hold_device_code`]); the
//! others (sources, scripts, data) are skipped without being read further, unless every file
//! is asked for (a copy of a whole tree). Symbolic links met in a folder are skipped unless
//! they are followed or kept: a link may lead out of the tree, or to a file the walk meets
//! anyway. When they are followed, a link back to a folder being walked is a loop, reported
//! and not entered; kept, a link is a file of its own, to be made again as a link.
//!
//! The entries of each folder are looked at in parallel (their types, and the first bytes of
//! its files), then added in the order of their sorted names: the walk finds what one thread
//! would, in the same order, however many look.

use std::collections::HashSet;
use std::fs;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::error::Error;

pub use super::found::{Found, FoundList};

/// How folders are walked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WalkOptions {
    /// Walk folders to their last level (else only a folder's own files).
    pub recursive: bool,
    /// What becomes of symbolic links met in folders.
    pub links: Links,
    /// Which files met in folders are taken.
    pub files: Taken,
}

/// What becomes of a symbolic link met in a folder.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Links {
    /// It is skipped.
    #[default]
    Skip,
    /// It is followed: the file or folder it leads to is walked as if it were there.
    Follow,
    /// It is taken as it is, a file of its own ([`Found::link`]).
    Keep,
}

/// Which files met in folders are taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Taken {
    /// Those whose first bytes say they may hold device code.
    #[default]
    MayHoldDeviceCode,
    /// Those whose first bytes say a loader can load them: ELF executables and shared
    /// libraries (what `check` follows).
    Loadable,
    /// Every one.
    Every,
}

/// What a walk found: the files, in order, and what it could not walk (a folder that cannot
/// be read, a symbolic link loop).
#[derive(Debug, Default)]
pub struct Walk {
    /// The files, named ones as named and found ones in the order of a sorted walk: held out
    /// of memory ([`FoundList`]).
    pub files: FoundList,
    /// Folders that could not be read, each naming its path.
    pub errors: Vec<Error>,
    /// Symbolic links skipped because they lead back into a folder being walked.
    pub loops: Vec<PathBuf>,
    /// Files skipped because their first bytes hold no device code.
    pub skipped: usize,
    /// Entries skipped because they are not regular files, folders or links.
    pub special: SpecialFiles,
    /// Folders inside the folders named that were not walked (without `recursive`).
    pub not_walked: usize,
    /// Whether the list of files could not be written (its error is among `errors`).
    list_failed: bool,
}

/// How many entries of each kind that holds no file to read a walk met and skipped.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SpecialFiles {
    /// Named pipes.
    pub fifos: usize,
    /// Character and block devices.
    pub devices: usize,
    /// Sockets.
    pub sockets: usize,
}

impl SpecialFiles {
    /// Counts the entry of type `kind`, when it is one of these.
    fn count(&mut self, kind: fs::FileType) {
        if kind.is_fifo() {
            self.fifos += 1;
        } else if kind.is_char_device() || kind.is_block_device() {
            self.devices += 1;
        } else if kind.is_socket() {
            self.sockets += 1;
        }
    }

    /// `2 FIFOs, 1 device`; `None` when there were none.
    pub fn summary(&self) -> Option<String> {
        let parts: Vec<String> = [
            (self.fifos, "FIFO", "FIFOs"),
            (self.devices, "device", "devices"),
            (self.sockets, "socket", "sockets"),
        ]
        .into_iter()
        .filter(|(n, _, _)| *n > 0)
        .map(|(n, one, many)| format!("{n} {}", if n == 1 { one } else { many }))
        .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }
}

/// The files of `roots`: each file named, and the files of each folder named.
pub fn walk(roots: &[PathBuf], options: WalkOptions) -> Walk {
    let mut walk = Walk::default();
    for root in roots {
        match fs::metadata(root) {
            Ok(meta) if meta.is_dir() => {
                let mut ancestors = HashSet::from([(meta.dev(), meta.ino())]);
                let top = Level {
                    folder: root,
                    relative: Path::new(""),
                    through_link: false,
                };
                walk_folder(top, options, &mut ancestors, &mut walk);
            }
            // A file named (or a path that cannot be read: the command names it).
            _ => {
                let relative = root.file_name().map_or(root.as_path(), Path::new);
                walk.add(root, relative, None, false);
            }
        }
    }
    if let Err(e) = walk.files.seal() {
        if !walk.list_failed {
            walk.errors.push(list_failed(e));
        }
    }
    walk
}

impl Walk {
    /// Adds a file to the list (see [`FoundList::push`]); the list failing to be written is
    /// an error of the walk, reported once, and the list stays empty from then on: no
    /// command works on part of a walk's files without saying so.
    fn add(&mut self, path: &Path, relative: &Path, link: Option<&Path>, through_link: bool) {
        if self.list_failed {
            return;
        }
        if let Err(e) = self.files.push(path, relative, link, through_link) {
            self.list_failed = true;
            self.errors.push(list_failed(e));
        }
    }
}

/// The error of a walk whose list of files could not be written to its temporary file.
fn list_failed(e: std::io::Error) -> Error {
    Error::msg(format!(
        "the list of the files walked could not be written to a temporary file: {e}"
    ))
}

/// A folder being walked: its path, its path below the root, and whether the walk reached it
/// through a symbolic link.
#[derive(Clone, Copy)]
struct Level<'a> {
    folder: &'a Path,
    relative: &'a Path,
    through_link: bool,
}

/// Adds the files of the folder `level` to `walk`. `ancestors` holds the device and inode of
/// each folder being walked. What each entry is, and for a file whether its first bytes are
/// taken, is learnt for all the folder's entries in parallel; they are then added in order.
fn walk_folder(
    level: Level<'_>,
    options: WalkOptions,
    ancestors: &mut HashSet<(u64, u64)>,
    walk: &mut Walk,
) {
    use rayon::prelude::*;
    let Some(names) = sorted_names(level.folder, walk) else {
        return;
    };
    let met: Vec<Met> = names
        .par_iter()
        .map(|name| meet(&level.folder.join(name), options))
        .collect();
    for (name, met) in names.into_iter().zip(met) {
        let path = level.folder.join(&name);
        let relative = level.relative.join(&name);
        match met {
            Met::Nothing => {}
            Met::Unreachable(e) => walk.errors.push(e),
            Met::Loop => walk.loops.push(path),
            Met::Link(to) => walk.add(&path, &relative, Some(&to), false),
            Met::Special(kind) => walk.special.count(kind),
            Met::File { taken, is_link } if taken => {
                walk.add(&path, &relative, None, level.through_link || is_link);
            }
            Met::File { .. } => walk.skipped += 1,
            Met::Folder { .. } if !options.recursive => walk.not_walked += 1,
            Met::Folder { id, is_link } => {
                if !ancestors.insert(id) {
                    walk.loops.push(path);
                    continue;
                }
                let below = Level {
                    folder: &path,
                    relative: &relative,
                    through_link: level.through_link || is_link,
                };
                walk_folder(below, options, ancestors, walk);
                ancestors.remove(&id);
            }
        }
    }
}

/// The names in `folder`, sorted; `None` when it cannot be read (the error added to `walk`).
fn sorted_names(folder: &Path, walk: &mut Walk) -> Option<Vec<std::ffi::OsString>> {
    let entries = match fs::read_dir(folder) {
        Ok(entries) => entries,
        Err(e) => {
            walk.errors.push(unreachable(folder, e));
            return None;
        }
    };
    let mut names = Vec::new();
    for entry in entries {
        match entry {
            Ok(entry) => names.push(entry.file_name()),
            Err(e) => walk.errors.push(Error::io(folder, e)),
        }
    }
    names.sort();
    Some(names)
}

/// What an entry of a folder is to the walk, learnt on its own (beside the folder's other
/// entries, in parallel).
enum Met {
    /// Passed by: gone since the folder was read, a link skipped, a broken link.
    Nothing,
    /// It could not be reached or read: the error.
    Unreachable(Error),
    /// A loop of symbolic links.
    Loop,
    /// A symbolic link kept as one ([`Links::Keep`]), and what it points to.
    Link(PathBuf),
    /// A FIFO, device or socket, of this type.
    Special(fs::FileType),
    /// A regular file (reached through a link followed, or not), and whether it is taken.
    File { taken: bool, is_link: bool },
    /// A folder (reached through a link followed, or not), with its device and inode.
    Folder { id: (u64, u64), is_link: bool },
}

/// What the entry `path` of a folder is, through a symbolic link when `options` follow them,
/// and, for a regular file, whether `options` take it.
fn meet(path: &Path, options: WalkOptions) -> Met {
    let (meta, is_link) = match entry_metadata(path, options) {
        Ok(found) => found,
        Err(met) => return met,
    };
    if meta.is_dir() {
        Met::Folder {
            id: (meta.dev(), meta.ino()),
            is_link,
        }
    } else if meta.is_file() {
        let taken = match options.files {
            Taken::Every => true,
            Taken::MayHoldDeviceCode => may_hold_device_code(path),
            Taken::Loadable => read_head(path).is_none_or(|head| head_is_loadable(&head)),
        };
        Met::File { taken, is_link }
    } else {
        Met::Special(meta.file_type())
    }
}

/// What the entry `path` of a folder is, through a symbolic link when `options` follow them,
/// and whether it is such a link; else what the walk makes of it: gone, unreadable, a link
/// skipped, kept or broken, or a loop of links.
fn entry_metadata(path: &Path, options: WalkOptions) -> Result<(fs::Metadata, bool), Met> {
    let link_meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        // Gone since the folder was read.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Met::Nothing),
        Err(e) => return Err(Met::Unreachable(unreachable(path, e))),
    };
    if !link_meta.file_type().is_symlink() {
        return Ok((link_meta, false));
    }
    match options.links {
        Links::Skip => {
            tracing::debug!(path = %path.display(), "symbolic link skipped");
            return Err(Met::Nothing);
        }
        Links::Keep => {
            return Err(match fs::read_link(path) {
                Ok(to) => Met::Link(to),
                Err(e) => Met::Unreachable(Error::io(path, e)),
            })
        }
        Links::Follow => {}
    }
    match fs::metadata(path) {
        Ok(meta) => Ok((meta, true)),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => Err(Met::Loop),
        Err(_) => {
            tracing::debug!(path = %path.display(), "broken symbolic link skipped");
            Err(Met::Nothing)
        }
    }
}

/// The error for `path`, which the walk could not reach or read: one deeper than the
/// system's path limit says so, since every command opens files by their path.
fn unreachable(path: &Path, e: std::io::Error) -> Error {
    if e.raw_os_error() == Some(libc::ENAMETOOLONG) {
        return Error::file(
            path,
            format!(
                "longer than the system's path limit ({} bytes): not walked, nor anything below it",
                libc::PATH_MAX
            ),
        );
    }
    Error::io(path, e)
}

/// Whether the first bytes of the file at `path` are those of a file that may hold device
/// code: an object file, program or library (ELF, COFF, PE, Mach-O), an archive, a kpack
/// archive, a binary or text bundle, a compressed bundle, an offload binary, a CUDA fat
/// binary or a package (a zip or wheel, a Debian package, a tarball). A file that cannot be read is taken (the command says why it cannot be read).
pub fn may_hold_device_code(path: &Path) -> bool {
    read_head(path).is_none_or(|head| head_may_hold_device_code(&head))
}

/// Whether the first bytes of the file at `path` are those of a package (a zip or wheel, a
/// Debian package, a tarball or any compressed stream): read, never rewritten.
pub fn is_package(path: &Path) -> bool {
    read_head(path).is_some_and(|head| crate::host::package::looks_like_package(&head))
}

/// The first 512 bytes of the file at `path` (fewer for a shorter file); `None` when it
/// cannot be read.
fn read_head(path: &Path) -> Option<Vec<u8>> {
    let mut head = vec![0u8; 512];
    // Not waiting on a FIFO put in the file's place since the folder was read.
    let (mut file, _) = crate::io::open_regular(path).ok()?;
    let mut len = 0;
    while len < head.len() {
        match file.read(&mut head[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(_) => return None,
        }
    }
    head.truncate(len);
    Some(head)
}

/// Whether `head` starts an ELF executable or shared library (`ET_EXEC`, `ET_DYN`) of
/// either byte order.
fn head_is_loadable(head: &[u8]) -> bool {
    let (Some(b"\x7fELF"), Some(&data), Some(&[a, b])) = (
        head.get(..4),
        head.get(5),
        head.get(16..18).and_then(|t| t.first_chunk::<2>()),
    ) else {
        return false;
    };
    let e_type = if data == 2 {
        u16::from_be_bytes([a, b])
    } else {
        u16::from_le_bytes([a, b])
    };
    matches!(e_type, 2 | 3)
}

/// The rule of [`crate::host::package::may_hold_device_code`], which packages' members follow
/// too: one rule for files met in folders and in packages.
fn head_may_hold_device_code(head: &[u8]) -> bool {
    crate::host::package::may_hold_device_code(head)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A walk's findings as text, to compare walks.
    fn described(walk: &Walk) -> String {
        let errors: Vec<String> = walk.errors.iter().map(|e| e.to_string()).collect();
        format!(
            "{:?}\n{errors:?}\n{:?}\n{} skipped, {:?}, {} not walked",
            walk.files, walk.loops, walk.skipped, walk.special, walk.not_walked
        )
    }

    #[test]
    fn entries_met_in_parallel_are_added_in_the_order_of_one_thread() {
        // Folders of 300 entries of every kind a walk meets: files it takes and skips, links
        // to files, to folders, broken and in a loop, FIFOs, and folders below.
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("tree");
        for folder in ["", "a", "a/b", "c"] {
            let at = root.join(folder);
            fs::create_dir_all(&at).unwrap();
            for k in 0..300u32 {
                let name = at.join(format!("e{k:03}"));
                match k % 6 {
                    0 => fs::write(&name, b"\x7fELF\x02\x01\x01").unwrap(),
                    1 => fs::write(&name, b"#!/bin/sh\n").unwrap(),
                    2 => std::os::unix::fs::symlink(format!("e{:03}", k - 2), &name).unwrap(),
                    3 => std::os::unix::fs::symlink(format!("e{k:03}"), &name).unwrap(),
                    4 if k % 12 == 4 => {
                        let c = std::ffi::CString::new(name.as_os_str().as_encoded_bytes());
                        // SAFETY: a NUL-terminated path; mkfifo reads nothing else.
                        assert_eq!(unsafe { libc::mkfifo(c.unwrap().as_ptr(), 0o600) }, 0);
                    }
                    4 => std::os::unix::fs::symlink("..", &name).unwrap(),
                    _ => fs::write(&name, b"CCOB\x03\x00").unwrap(),
                }
            }
        }
        let walked = |threads: usize, links: Links| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let options = WalkOptions {
                recursive: true,
                links,
                files: Taken::MayHoldDeviceCode,
            };
            pool.install(|| described(&walk(std::slice::from_ref(&root), options)))
        };
        for links in [Links::Skip, Links::Follow, Links::Keep] {
            let one = walked(1, links);
            for _ in 0..3 {
                assert_eq!(walked(8, links), one, "{links:?}");
            }
        }
        let skip = walk(
            std::slice::from_ref(&root),
            WalkOptions {
                recursive: true,
                ..WalkOptions::default()
            },
        );
        // Per folder: 50 ELF heads and 50 compressed bundles taken, 50 scripts skipped, 25
        // FIFOs; links skipped.
        assert_eq!(skip.files.len(), 400);
        assert_eq!((skip.skipped, skip.special.fifos), (200, 100));
        let files: Vec<Found> = skip.files.iter().collect();
        assert!(files.windows(2).all(|w| w[0].path < w[1].path));
    }

    #[test]
    fn heads_that_may_hold_device_code() {
        assert!(head_may_hold_device_code(b"\x7fELF\x02\x01\x01"));
        assert!(head_may_hold_device_code(b"!<arch>\nfoo"));
        assert!(head_may_hold_device_code(b"__CLANG_OFFLOAD_BUNDLE__\x02"));
        assert!(head_may_hold_device_code(b"CCOB\x03\x00"));
        assert!(head_may_hold_device_code(
            b"; __CLANG_OFFLOAD_BUNDLE____START__ hip"
        ));
        assert!(head_may_hold_device_code(b"\x64\x86\x03\x00"));
        assert!(!head_may_hold_device_code(b"#!/bin/sh\necho hi\n"));
        assert!(!head_may_hold_device_code(b"import os\n"));
        assert!(head_may_hold_device_code(
            b"\x03\x02\x23\x07\x00\x04\x01\x00"
        ));
        assert!(head_may_hold_device_code(
            b"//\n// Generated by NVIDIA NVVM Compiler\n.version 9.1\n.target sm_90a\n"
        ));
        assert!(!head_may_hold_device_code(
            b"// .version 9.1\n.target sm_90a\n"
        ));
        assert!(!head_may_hold_device_code(b""));
    }
}
