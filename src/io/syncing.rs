//! Which outputs reach the disk before they take their place, and the system calls that put
//! them there.
//!
//! An output that replaces a file (an in-place rewrite, or a destination that already exists)
//! is synced before it is renamed over the file, and its folder after: a power loss then
//! leaves the old file or the whole new one, never an empty or partial file where a good one
//! was. A new file is not synced, nor a folder that only gained new files, as `cp`, `objcopy`,
//! `strip -o` and the compilers do not: a power loss may lose a file that was not there
//! before, and syncing thousands of small outputs costs more than writing them.
//!
//! A program that wants every output on the disk when it ends says so once, for the whole
//! process ([`set_syncing`]), as the command line's `--sync` and `OFFLOAD_SYNC=1` do. It is a
//! setting of the process, like the umask, rather than an argument of every output: it is a
//! choice of the program that runs the operations, not of the operations themselves.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// The environment variable that makes a program sync every output, as `--sync` does: set to
/// anything but an empty string or `0`.
pub const SYNC_VARIABLE: &str = "OFFLOAD_SYNC";

/// Which outputs are synced: each before it is put in place, and the folder it is put in after.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Syncing {
    /// The outputs that replace a file (in place, or over an existing file), and their
    /// folders. The default.
    #[default]
    Replacements,
    /// Every output written to a file, and every folder one is put in.
    Everything,
}

impl Syncing {
    /// What `SYNC_VARIABLE` asks for: [`Syncing::Everything`] when it is set to anything but
    /// an empty string or `0`, else the default.
    pub fn from_env() -> Syncing {
        match std::env::var_os(SYNC_VARIABLE) {
            Some(value) if !value.is_empty() && value != "0" => Syncing::Everything,
            _ => Syncing::Replacements,
        }
    }
}

/// Whether every output is synced: the process's [`Syncing`].
static EVERYTHING: AtomicBool = AtomicBool::new(false);

/// Chooses which outputs this process syncs from now on. A program sets it once, at its start,
/// before it writes anything.
pub fn set_syncing(syncing: Syncing) {
    EVERYTHING.store(syncing == Syncing::Everything, Ordering::Relaxed);
}

/// Which outputs this process syncs.
pub fn syncing() -> Syncing {
    if EVERYTHING.load(Ordering::Relaxed) {
        Syncing::Everything
    } else {
        Syncing::Replacements
    }
}

/// Syncs the data and metadata of `file`, the output `path` (named in errors and, under test,
/// in the record of what was synced).
pub(super) fn sync_file(file: &File, path: &Path) -> io::Result<()> {
    record(path);
    file.sync_all()
}

/// Syncs the folder `folder`, so that the names just put in it stay. A folder that cannot be
/// opened for syncing (no read permission) is left unsynced.
pub(super) fn sync_folder(folder: &Path) -> io::Result<()> {
    // As a folder, without waiting: a FIFO put in its place is not opened.
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NONBLOCK)
        .open(folder);
    match opened {
        Ok(dir) => {
            record(folder);
            dir.sync_all()
        }
        Err(_) => Ok(()),
    }
}

/// What is done after each stretch the kernel copies into an output.
pub(super) type AfterCopy = fn(&File, u64);

/// How much is copied between two starts of write-back.
pub(super) const WRITE_BACK_STEP: u64 = 32 << 20;

/// Starts writing to the disk the last `len` bytes written to `target` (at its position),
/// without waiting: the disk then writes while the next bytes are copied, and the sync that
/// ends the output has little left to wait for. Only for an output that will be synced: for
/// any other, the system writes when it chooses.
pub(super) fn start_write_back(target: &File, len: u64) {
    if len < WRITE_BACK_STEP / 2 {
        return;
    }
    // SAFETY: `target` is an open descriptor; the call only reads its position and hints.
    unsafe {
        let end = libc::lseek(target.as_raw_fd(), 0, libc::SEEK_CUR);
        if end >= len as libc::off64_t {
            libc::sync_file_range(
                target.as_raw_fd(),
                end - len as libc::off64_t,
                len as libc::off64_t,
                libc::SYNC_FILE_RANGE_WRITE,
            );
        }
    }
}

/// Leaves what was copied to the system: for an output that is not synced.
pub(super) fn leave_write_back(_: &File, _: u64) {}

/// Asks the system to start writing all of `file` to the disk now, without waiting: the sync
/// that follows then finds less to do.
pub(super) fn start_write_back_all(file: &File) {
    // SAFETY: a plain system call on an open descriptor; a failure only leaves the writing to
    // the sync.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
    }
}

/// What was synced in this process, in order: the outputs by their destination, the folders
/// by their path. For the tests of which outputs are synced.
#[cfg(test)]
static SYNCED: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Notes that `path` was synced (under test only).
#[cfg(test)]
fn record(path: &Path) {
    SYNCED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(path.to_path_buf());
}

#[cfg(not(test))]
fn record(_: &Path) {}

/// What was synced under the folder `dir` (itself included), in order.
#[cfg(test)]
pub(super) fn synced_under(dir: &Path) -> Vec<std::path::PathBuf> {
    SYNCED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .filter(|p| p.starts_with(dir))
        .cloned()
        .collect()
}
