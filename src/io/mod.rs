//! Inputs mapped into memory; outputs written to a temporary file beside their destination and
//! renamed into place only when complete, so that a failure leaves no partial output.
//!
//! One rule for every output of every command:
//! - a temporary file is made in the destination's folder, readable by its owner only, and
//!   listed so that SIGINT, SIGTERM and SIGHUP remove it ([`remove_temporaries_on_signals`]);
//! - when written, it gets its final mode (the replaced file's, or what the umask leaves of
//!   0666) and its descriptor is closed, so that thousands of outputs never hold thousands of
//!   open files;
//! - the outputs of one command are renamed into place only when every one of them was
//!   written ([`commit_all`]);
//! - an output that replaces a file (in place, or at a path where a file of any kind already
//!   is) is synced before its rename, and its folder after, so that a crash or a power loss
//!   leaves the old file or the whole new one; a new file is not synced, nor a folder that
//!   only gained new files, as `cp` and the compilers do not sync theirs: there was nothing
//!   there to lose. [`set_syncing`] makes a process sync every output and folder
//!   ([`syncing`] says how);
//! - an output never replaces a file that is an input of the same run, except for an
//!   in-place rewrite ([`Output::replace`]), which keeps the file's owner, group, mode and
//!   extended attributes, writes through a symbolic link to its target, and writes into the
//!   same file when it has other hard links;
//! - no output is put in place while an input open in this process has shrunk under its map
//!   (another program truncated it): what was read past its new end was not the file. The
//!   check is for the whole process, which suits a command (or a linker plugin) doing one
//!   operation at a time.

mod ahead;
pub mod beneath;
mod cleanup;
pub mod error;
mod fresh;
mod guard;
mod keep;
pub mod opening;
mod release;
mod reserve;
mod shown;
pub mod slice;
pub mod spill;
mod splicing;
mod syncing;
mod temporary;
mod toward;

pub use ahead::{HeadCopy, HEAD_COPY_FROM};
#[cfg(any(feature = "cli", feature = "internals"))]
pub use cleanup::remove_temporaries_on_signals;
pub use error::{io_message, FileError};
pub use fresh::FreshFolder;
use fresh::{at_name, AtName};
pub use opening::{open_regular, read_small, read_small_text};
pub use release::{release_mapped, releasing, ReleasedInBatches};
pub use shown::{bytes_unless_text, shown};
#[cfg(any(test, feature = "internals"))]
pub use syncing::SYNC_VARIABLE;
pub use syncing::{set_syncing, syncing, Syncing};
pub use temporary::Temporary;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, Read, Seek, Write};
use std::ops::Deref;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use memmap2::Mmap;
use tempfile::{NamedTempFile, TempPath};

use crate::io::error::{FileError as Error, Result};
use cleanup::Listed;
use guard::Guarded;
use keep::Kept;

/// Parts smaller than this are copied through memory; larger ones by the kernel.
const KERNEL_COPY_FROM: usize = 64 << 10;

/// Regular files smaller than this are read rather than mapped: none of their parts is large
/// enough to be copied by the kernel, reading costs less than a map, and a command that holds
/// a tree of a hundred thousand small files holds no map (their number is limited, by
/// `vm.max_map_count`) and no descriptor for them.
const READ_UNDER: u64 = KERNEL_COPY_FROM as u64;

/// An input file open in this process: no output may replace it, and no output is put in
/// place after it shrank under its map.
struct OpenInput {
    dev: u64,
    ino: u64,
    path: PathBuf,
    guard: Option<usize>,
    /// The length of the file when it was mapped (0 when it is not mapped).
    mapped: u64,
    /// The address the file is mapped at (0 when it is not mapped).
    start: usize,
    /// The descriptor of the mapped file, open as long as the input is listed (-1 when it
    /// keeps none): the kernel copies large slices of its map from it.
    fd: std::os::fd::RawFd,
}

/// The inputs open in this process.
static OPEN_INPUTS: Mutex<OpenInputs> = Mutex::new(OpenInputs {
    next: 0,
    inputs: BTreeMap::new(),
    by_start: BTreeMap::new(),
    by_identity: BTreeMap::new(),
});

/// The inputs open in this process, by the number each was listed under, and found by the
/// address of their map and by device and inode without going through them all: a command
/// may hold a hundred thousand.
struct OpenInputs {
    /// The number the next input listed gets.
    next: u64,
    inputs: BTreeMap<u64, OpenInput>,
    /// The inputs mapped, by the address of their map.
    by_start: BTreeMap<usize, u64>,
    /// The inputs open on each file (device, inode), by their numbers.
    by_identity: BTreeMap<(u64, u64), BTreeSet<u64>>,
}

impl OpenInputs {
    /// Lists `input`: the number it is listed under.
    fn add(&mut self, input: OpenInput) -> u64 {
        let number = self.next;
        self.next += 1;
        if input.start != 0 {
            self.by_start.insert(input.start, number);
        }
        self.by_identity
            .entry((input.dev, input.ino))
            .or_default()
            .insert(number);
        self.inputs.insert(number, input);
        number
    }

    /// Takes the input listed under `number` off the list.
    fn remove(&mut self, number: u64) {
        let Some(input) = self.inputs.remove(&number) else {
            return;
        };
        if self.by_start.get(&input.start) == Some(&number) {
            self.by_start.remove(&input.start);
        }
        let identity = (input.dev, input.ino);
        if let Some(numbers) = self.by_identity.get_mut(&identity) {
            numbers.remove(&number);
            if numbers.is_empty() {
                self.by_identity.remove(&identity);
            }
        }
    }

    /// Whether the bytes from `from` to `to` lie inside the map of an input.
    fn maps(&self, from: usize, to: usize) -> bool {
        let Some((_, number)) = self.by_start.range(..=from).next_back() else {
            return false;
        };
        self.inputs
            .get(number)
            .is_some_and(|i| to <= i.start.saturating_add(i.mapped as usize))
    }

    /// An input open on the file `(dev, ino)`.
    fn on(&self, identity: (u64, u64)) -> Option<&OpenInput> {
        let number = self.by_identity.get(&identity)?.first()?;
        self.inputs.get(number)
    }
}

fn open_inputs() -> std::sync::MutexGuard<'static, OpenInputs> {
    OPEN_INPUTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The bytes of an input file: a memory map for regular files, a buffer otherwise (standard
/// input, pipes, `/dev/null`, empty files). A regular file keeps its handle so that ranges of
/// it can be copied to an output by the kernel, without passing through this process's memory.
pub struct Input {
    // Field order is drop order: the guard ends before the map is unmapped.
    guard: Option<Guarded>,
    data: Data,
    file: Option<File>,
    /// The offset in `file` of the first byte (0 but for a part of a temporary file).
    file_at: u64,
    path: PathBuf,
    identity: Option<(u64, u64)>,
    /// The number it is listed under among the inputs open.
    listed: Option<u64>,
}

enum Data {
    Mapped(Mmap),
    Owned(Vec<u8>),
}

impl Deref for Input {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.data {
            Data::Mapped(map) => map,
            Data::Owned(bytes) => bytes,
        }
    }
}

impl Drop for Input {
    fn drop(&mut self) {
        if let Some(number) = self.listed {
            open_inputs().remove(number);
        }
    }
}

/// Checks that `path`, an output about to be written under the folder `root` (both made
/// already, but for `path` itself), resolves inside it: its folder, symbolic links followed,
/// lies under `root`'s real path. A name built from file content, or a link already in the
/// output folder, must not carry a write elsewhere.
pub fn inside(root: &Path, path: &Path) -> Result<()> {
    let real_root = fs::canonicalize(root).map_err(|e| Error::io(root, e))?;
    let folder = match path.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => Path::new("."),
    };
    let real = fs::canonicalize(folder).map_err(|e| Error::io(folder, e))?;
    let named = path.file_name().is_some_and(|n| n != ".." && n != ".");
    if real.starts_with(&real_root) && named {
        return Ok(());
    }
    Err(Error::msg(format!(
        "'{}': resolves to '{}', outside the output folder '{}'; nothing was written",
        shown(&path),
        shown(&real),
        shown(&real_root)
    )))
}

impl Input {
    /// Opens `path` (`-` for standard input) and maps or reads it. Regular files are mapped;
    /// pipes and standard input are read to their end; a device is read only when it ends at
    /// once (`/dev/null`): one that does not (`/dev/zero`) is refused, not read without end.
    pub fn open(path: &Path) -> Result<Input> {
        if path.as_os_str() == "-" {
            let mut bytes = Vec::new();
            io::stdin()
                .lock()
                .read_to_end(&mut bytes)
                .map_err(|e| Error::io(path, e))?;
            return Ok(Input::from_bytes(bytes));
        }
        // Without waiting: a FIFO with no writer (a file replaced by one after a walk saw
        // it) reads as empty instead of blocking the command.
        let (mut file, meta) = opening::open_nonblocking(path).map_err(|e| Error::io(path, e))?;
        let kind = meta.file_type();
        if meta.is_dir() {
            return Err(Error::io(path, io::Error::from_raw_os_error(libc::EISDIR)));
        }
        if meta.is_file() {
            return Input::regular(path, file, &meta);
        }
        let mut input = Input::from_bytes(Vec::new());
        input.path = path.to_path_buf();
        if kind.is_char_device() || kind.is_block_device() || kind.is_socket() {
            let mut probe = [0u8; 1];
            match file.read(&mut probe) {
                Ok(0) => return Ok(input),
                Err(e) if e.kind() != io::ErrorKind::WouldBlock => return Err(Error::io(path, e)),
                // Bytes, or none yet from a device that would make us wait (a terminal).
                _ => {
                    return Err(Error::file(
                        path,
                        "not a regular file, a pipe or standard input: devices are not read",
                    ))
                }
            }
        }
        // A pipe: its writer, if it has one, is waited for now, as a shell pipeline expects.
        opening::blocking(&file).map_err(|e| Error::io(path, e))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| Error::io(path, e))?;
        input.data = Data::Owned(bytes);
        Ok(input)
    }

    /// Opens `path` only if it is a regular file, mapped; `None` for anything else (a
    /// folder, a FIFO, a device), which is not read. Opened without blocking and checked on
    /// the descriptor, so a FIFO put in the file's place is never waited on.
    pub fn open_regular(path: &Path) -> Result<Option<Input>> {
        let (file, meta) = match opening::open_nonblocking(path) {
            Ok(opened) => opened,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path, e)),
        };
        if !meta.is_file() {
            return Ok(None);
        }
        Input::regular(path, file, &meta).map(Some)
    }

    /// The regular file `file` (opened from `path`, described by `meta`), mapped (read, when
    /// smaller than [`READ_UNDER`]) and counted among the open inputs.
    fn regular(path: &Path, file: File, meta: &fs::Metadata) -> Result<Input> {
        let mut input = Input::from_bytes(Vec::new());
        input.path = path.to_path_buf();
        if meta.len() > 0 && meta.len() < READ_UNDER {
            // What the file holds now, up to the size it had: it may not grow under us.
            let bytes = opening::read_up_to(&file, meta.len()).map_err(|e| Error::io(path, e))?;
            input.data = Data::Owned(bytes);
        } else if meta.len() > 0 {
            // SAFETY: the map is read-only and private to this process. A file that another
            // process truncates while we read it is caught by the guard, not by a signal.
            let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(path, e))?;
            input.guard = Some(Guarded::new(map.as_ptr(), map.len()));
            input.data = Data::Mapped(map);
        }
        // A file read holds no descriptor: its bytes are copied from memory anyway.
        let (mapped, start) = match &input.data {
            Data::Mapped(map) => (map.len() as u64, map.as_ptr() as usize),
            Data::Owned(_) => (0, 0),
        };
        if mapped > 0 {
            input.file = Some(file);
        }
        let fd = input.file.as_ref().map_or(-1, AsRawFd::as_raw_fd);
        input.identity = Some((meta.dev(), meta.ino()));
        input.listed = Some(open_inputs().add(OpenInput {
            dev: meta.dev(),
            ino: meta.ino(),
            path: path.to_path_buf(),
            guard: input.guard.as_ref().and_then(Guarded::slot),
            mapped,
            start,
            fd,
        }));
        Ok(input)
    }

    /// The device and inode of a regular file opened, which name it whatever path it was
    /// reached by; `None` for other inputs.
    pub fn identity(&self) -> Option<(u64, u64)> {
        self.identity
    }

    /// An input held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Input {
        Input {
            guard: None,
            data: Data::Owned(bytes),
            file: None,
            file_at: 0,
            path: PathBuf::from("-"),
            identity: None,
            listed: None,
        }
    }

    /// The first `len` bytes of `file`, a temporary file this process made and no other
    /// process changes, mapped: its slices are copied to outputs by the kernel.
    pub fn from_temporary(file: File, len: u64) -> io::Result<Input> {
        let mut input = Input::from_bytes(Vec::new());
        input.path = PathBuf::from("(temporary file)");
        if len > 0 {
            let len =
                usize::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
            // SAFETY: read-only and private; the file is unnamed and written by nobody else.
            let map = unsafe { memmap2::MmapOptions::new().len(len).map(&file) }?;
            input.data = Data::Mapped(map);
        }
        input.file = Some(file);
        Ok(input)
    }

    /// This input without its file's descriptor: the map stays (it needs none), so its
    /// bytes read the same and it still counts as an input of this process, but its ranges
    /// are copied to outputs through memory rather than by the kernel. For a command that
    /// holds thousands of inputs at once, so as not to hold as many descriptors.
    pub fn without_descriptor(mut self) -> Input {
        if matches!(self.data, Data::Mapped(_)) {
            if let Some(number) = self.listed {
                if let Some(listed) = open_inputs().inputs.get_mut(&number) {
                    listed.fd = -1;
                }
            }
            self.file = None;
        }
        self
    }

    /// Whether `part` is a slice of this input's bytes.
    pub fn holds(&self, part: &[u8]) -> bool {
        crate::io::slice::offset_within(self, part).is_some()
    }

    /// An error if the file shrank while it was mapped: what was read past its new end was
    /// zeros, not the file.
    pub fn intact(&self) -> Result<()> {
        if self.guard.as_ref().is_some_and(Guarded::shrank) {
            return Err(shrank(&self.path));
        }
        Ok(())
    }

    /// Lets the system drop the pages wholly inside `part` (a slice of this input) from this
    /// process's memory, once they are read: touched again, they are read again from the
    /// file, the same bytes (the map is read-only). For bytes read in once (a large file
    /// whose compressed bundles are inflated one after another) this keeps what the process
    /// holds to what it works on. An input held in memory is left as it is.
    pub fn release(&self, part: &[u8]) {
        let Data::Mapped(map) = &self.data else {
            return;
        };
        let Some(start) = crate::io::slice::offset_within(map, part) else {
            return;
        };
        let page = 4096;
        let first = start.next_multiple_of(page);
        let end = (start + part.len()) / page * page;
        if end > first {
            // SAFETY: the map is read-only and private: dropping its pages loses nothing, and
            // a slice that borrows them reads the same bytes from the file again.
            let _ = unsafe {
                map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, first, end - first)
            };
        }
    }

    /// Where `part` (a slice of this input) starts in the file, if this input is a mapped
    /// file and `part` lies inside it.
    fn file_range(&self, part: &[u8]) -> Option<(&File, u64)> {
        let file = self.file.as_ref()?;
        let base = self.as_ptr() as usize;
        let start = (part.as_ptr() as usize).checked_sub(base)?;
        (start + part.len() <= self.len()).then_some((file, self.file_at + start as u64))
    }
}

fn shrank(path: &Path) -> Error {
    Error::io(
        path,
        io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the file shrank while it was being read (another program changed it); nothing was written",
        ),
    )
}

/// The input open in this process that shrank under its map: a page of it was gone when it
/// was read, or the file is now shorter than its map. A path that names another file now
/// (one renamed over it, as an in-place rewrite of another input of the run does) says
/// nothing of the file mapped.
fn shrunk_input() -> Option<PathBuf> {
    let inputs = open_inputs();
    inputs
        .inputs
        .values()
        .find(|i| {
            i.guard.is_some_and(guard::slot_shrank)
                || (i.mapped > 0
                    && fs::metadata(&i.path)
                        .is_ok_and(|m| (m.dev(), m.ino()) == (i.dev, i.ino) && m.len() < i.mapped))
        })
        .map(|i| i.path.clone())
}

/// An error if an input open in this process shrank under its map while it was read: a
/// command that lets its inputs go before its outputs are put in place asks before it does.
pub fn inputs_intact() -> Result<()> {
    match shrunk_input() {
        Some(path) => Err(shrank(&path)),
        None => Ok(()),
    }
}

/// An error writing `path`. The system answers EFAULT when it is given pages of a map whose
/// file was truncated: that is said as the input that shrank.
fn write_error(path: &Path, e: io::Error) -> Error {
    if e.raw_os_error() == Some(libc::EFAULT) {
        if let Some(input) = shrunk_input() {
            return shrank(&input);
        }
    }
    Error::io(path, e)
}

/// The system's error for a temporary file that could not be made in `dir`, without the
/// temporary name that `tempfile` adds: messages name the destination instead.
fn plain_os_error(e: io::Error, dir: &Path) -> io::Error {
    if let Err(dir_error) = fs::metadata(dir) {
        return dir_error;
    }
    let code = match e.kind() {
        io::ErrorKind::NotFound => libc::ENOENT,
        io::ErrorKind::PermissionDenied => libc::EACCES,
        io::ErrorKind::StorageFull => libc::ENOSPC,
        io::ErrorKind::ReadOnlyFilesystem => libc::EROFS,
        _ => return e,
    };
    io::Error::from_raw_os_error(code)
}

/// How a finished temporary file takes its destination's place.
enum Placing {
    /// Renamed over the destination, after getting `mode` (and what `kept` has); `synced`
    /// first, and its folder after, when it replaces a file or the process syncs everything.
    Rename {
        mode: u32,
        kept: Option<Kept>,
        synced: bool,
    },
    /// Its bytes written into the destination, an existing file with other hard links, which
    /// keeps its inode (and so its owner, mode and attributes, given again after the write),
    /// then synced.
    WriteThrough { kept: Kept },
}

impl Placing {
    /// How the rewrite in place of `file` (described by `meta`) takes its place: written
    /// into it when it has other hard links, else renamed over it; its owner, mode and
    /// attributes kept either way.
    fn in_place(file: &File, meta: &fs::Metadata) -> io::Result<Placing> {
        let kept = Kept::read(file, meta)?;
        Ok(if meta.nlink() > 1 {
            Placing::WriteThrough { kept }
        } else {
            Placing::Rename {
                mode: meta.mode() & 0o7777,
                kept: Some(kept),
                synced: true,
            }
        })
    }

    /// Whether the temporary file is synced before it takes its place. A file written through
    /// is synced once written into instead: the temporary file is only read back.
    fn synced(&self) -> bool {
        matches!(self, Placing::Rename { synced: true, .. })
    }
}

enum Sink {
    Temp {
        // Field order is drop order: the file is removed before it leaves the list.
        file: NamedTempFile,
        listed: Listed,
        placing: Placing,
    },
    Direct(File),
    Stdout(io::Stdout),
}

struct SinkWriter(Sink);

impl Write for SinkWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.0 {
            // The file itself: errors without the temporary name in them.
            Sink::Temp { file, .. } => file.as_file_mut().write(buf),
            Sink::Direct(file) => file.write(buf),
            Sink::Stdout(out) => out.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.0 {
            Sink::Temp { file, .. } => file.as_file_mut().flush(),
            Sink::Direct(file) => file.flush(),
            Sink::Stdout(out) => out.flush(),
        }
    }
}

/// An output being written: to a temporary file in the destination's folder that
/// [`Output::commit`] puts in place, or straight to standard output (`-`), to a device or pipe
/// (`/dev/null`, `/dev/stdout`). Dropping an uncommitted output deletes the temporary file.
pub struct Output {
    path: PathBuf,
    sink: io::BufWriter<SinkWriter>,
    beneath: Option<beneath::Beneath>,
    /// The input (its device and inode) whose first bytes, this many, were copied to the
    /// same offsets ahead of the writer ([`Output::adopt_head`]).
    head: Option<((u64, u64), u64)>,
    /// Whether disk was reserved for it ([`Output::reserve`]): the file may reach past what
    /// was written.
    reserved: bool,
}

/// Whether `path` names a descriptor (`/proc/self/fd/1`, `/dev/fd/1`, or a link to one such as
/// `/dev/stdout`), a device or a pipe (`/dev/null`, a FIFO): written to as it is, never
/// replaced. A regular file elsewhere under `/dev` (`/dev/shm/x`) is an ordinary output.
fn written_directly(path: &Path) -> bool {
    let descriptor = |p: &Path| p.starts_with("/proc") || p.starts_with("/dev/fd");
    descriptor(path)
        || fs::read_link(path).is_ok_and(|target| descriptor(&target))
        || fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// The folder a temporary file for `path` goes in.
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Refuses to replace a file that an input of this process is (the same device and inode),
/// unless what is replaced is only another name of it: a symbolic link to it, or another
/// hard link, which the rename replaces while the input stays whole under its own name. The
/// input's own name (its only link, or the very name it was opened by, folders on the way
/// followed) is refused.
fn not_an_input(path: &Path) -> Result<()> {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return Ok(());
    };
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    let inputs = open_inputs();
    let Some(input) = inputs.on((meta.dev(), meta.ino())) else {
        return Ok(());
    };
    if meta.nlink() > 1 && !same_name(path, &input.path) {
        return Ok(());
    }
    Err(Error::file(
        path,
        format!(
            "is the input '{}'; refusing to write over an input",
            shown(&input.path)
        ),
    ))
}

/// Whether `a` and `b` are one name: the same name in the same folder (folders compared by
/// device and inode, reached through links as named).
fn same_name(a: &Path, b: &Path) -> bool {
    let folder = |p: &Path| fs::metadata(folder_of(p)).map(|m| (m.dev(), m.ino())).ok();
    a.file_name() == b.file_name() && folder(a).is_some() && folder(a) == folder(b)
}

impl Output {
    /// Starts writing into the device, FIFO or descriptor `path`, as it is.
    fn direct(path: &Path) -> Result<Output> {
        let file = OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        Ok(Output::with_sink(path, Sink::Direct(file)))
    }

    /// Starts writing `path` (`-` for standard output): a new file, or one that replaces what
    /// is there (a symbolic link is replaced, not written through). The new file has the mode
    /// of the regular file it replaces, or what the umask leaves of 0666.
    pub fn create(path: &Path) -> Result<Output> {
        if path.as_os_str() == "-" {
            return Ok(Output::with_sink(path, Sink::Stdout(io::stdout())));
        }
        let (mode, synced) = match at_name(path)? {
            AtName::Device => return Output::direct(path),
            // A new file waits for no disk.
            AtName::Free => (0o666 & !keep::umask(), syncing() == Syncing::Everything),
            // What is there is replaced, whatever it is: the new file must be whole on the
            // disk before it takes that place.
            AtName::Taken { mode } => (mode, true),
        };
        let placing = Placing::Rename {
            mode,
            kept: None,
            synced,
        };
        Output::temporary(path, folder_of(path), placing)
    }

    /// Starts rewriting the existing file `path` in place. The result keeps the file's owner,
    /// group, mode and extended attributes (ACLs and file capabilities too); where the owner
    /// cannot be kept, setuid and setgid are dropped. A symbolic link is followed: its target
    /// is rewritten and the link stays. A file with other hard links is written into, so every
    /// name sees the new bytes (that last copy is not atomic, as with GNU strip); any other
    /// file is replaced atomically.
    pub fn replace(path: &Path) -> Result<Output> {
        let target = fs::canonicalize(path).map_err(|e| Error::io(path, e))?;
        let (file, meta) = opening::open_nonblocking(&target).map_err(|e| Error::io(path, e))?;
        if !meta.is_file() {
            return Err(Error::file(
                path,
                "not a regular file: only regular files are rewritten in place",
            ));
        }
        let placing = Placing::in_place(&file, &meta).map_err(|e| Error::io(path, e))?;
        let mut out = Output::temporary(&target, folder_of(&target), placing)?;
        out.path = target;
        Ok(out)
    }

    fn temporary(path: &Path, dir: &Path, placing: Placing) -> Result<Output> {
        // Named after the output, its bytes as they are.
        let mut prefix = std::ffi::OsString::from(".");
        prefix.push(path.file_name().unwrap_or_default());
        prefix.push(".");
        let (file, listed) = cleanup::listed(
            || {
                tempfile::Builder::new()
                    .prefix(&prefix)
                    .suffix(".tmp")
                    .permissions(Permissions::from_mode(0o600))
                    .tempfile_in(dir)
            },
            |f: &NamedTempFile| f.path(),
        )
        .map_err(|e| Error::io(path, plain_os_error(e, dir)))?;
        Ok(Output::with_sink(
            path,
            Sink::Temp {
                file,
                listed,
                placing,
            },
        ))
    }

    fn with_sink(path: &Path, sink: Sink) -> Output {
        Output::with_sink_sized(path, sink, 1 << 20)
    }

    /// An output to `sink` through a buffer of `buffer` bytes.
    fn with_sink_sized(path: &Path, sink: Sink, buffer: usize) -> Output {
        Output {
            path: path.to_path_buf(),
            sink: io::BufWriter::with_capacity(buffer, SinkWriter(sink)),
            beneath: None,
            head: None,
            reserved: false,
        }
    }

    /// Starts writing an unnamed temporary file, for a file made whole before it is used as
    /// the input of a next step (a package's member, compressed after it is written): it
    /// takes disk, not memory, and leaves nothing behind. `path` names it in errors.
    pub fn scratch(path: &Path) -> Result<Output> {
        let file = tempfile::tempfile().map_err(|e| Error::io(path, e))?;
        Ok(Output::with_sink(path, Sink::Direct(file)))
    }

    /// What a [`Output::scratch`] output holds, mapped to be read: `None` for any other
    /// output.
    pub fn into_scratch(self) -> Result<Option<Input>> {
        let path = self.path;
        let writer = self
            .sink
            .into_inner()
            .map_err(|e| write_error(&path, e.into_error()))?;
        let Sink::Direct(file) = writer.0 else {
            return Ok(None);
        };
        let len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        Input::from_temporary(file, len)
            .map(Some)
            .map_err(|e| Error::io(&path, e))
    }

    /// The destination path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Gives the new file `mode` instead of the default (an output made from an input takes
    /// the input's, so that a program stays executable). No effect on an in-place rewrite,
    /// which keeps the file's own mode.
    pub fn set_mode(&mut self, new: u32) {
        if let Sink::Temp {
            placing: Placing::Rename {
                mode, kept: None, ..
            },
            ..
        } = &mut self.sink.get_mut().0
        {
            *mode = new & 0o777;
        }
    }

    /// Writes all of `data`, naming the output on failure.
    pub fn write_bytes(&mut self, data: &[u8]) -> Result<()> {
        self.sink
            .write_all(data)
            .map_err(|e| write_error(&self.path, e))
    }

    /// Writes `part`, a slice of `input`. When both are files the kernel copies the bytes
    /// (`copy_file_range` from the part's own offset), so large payloads never pass through
    /// this process's memory. No file position is shared: many outputs may copy from one
    /// input at once.
    pub fn write_part(&mut self, input: &Input, part: &[u8]) -> Result<()> {
        let Some((source, offset)) = input.file_range(part) else {
            return self.write_bytes(part);
        };
        if part.len() < KERNEL_COPY_FROM || matches!(self.sink.get_ref().0, Sink::Stdout(_)) {
            return self.write_bytes(part);
        }
        self.sink.flush().map_err(|e| write_error(&self.path, e))?;
        // Bytes the copy of the head put at their place already are stepped over.
        let over = self.step_over_head(input, offset, part.len() as u64)?;
        let (offset, len) = (offset + over, part.len() as u64 - over);
        if len == 0 {
            return Ok(());
        }
        let after = self.after_copy();
        let target = match &mut self.sink.get_mut().0 {
            Sink::Temp { file, .. } => file.as_file_mut(),
            Sink::Direct(file) => file,
            Sink::Stdout(_) => unreachable!("standard output is written above"),
        };
        copy_range(source, offset, len, target, after).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                shrank(&input.path)
            } else {
                Error::io(&self.path, e)
            }
        })
    }

    /// Writes `len` bytes of `source` from its offset `offset` (a file this process wrote, such
    /// as a temporary one): copied by the kernel into a file output, through a small buffer
    /// to standard output.
    pub fn write_file_range(&mut self, source: &File, offset: u64, len: u64) -> Result<()> {
        if matches!(self.sink.get_ref().0, Sink::Stdout(_)) {
            let mut buffer = vec![0u8; (1 << 20).min(len as usize)];
            let mut done = 0u64;
            while done < len {
                let n = buffer.len().min((len - done) as usize);
                source
                    .read_exact_at(&mut buffer[..n], offset + done)
                    .map_err(|e| Error::io(&self.path, e))?;
                self.write_bytes(&buffer[..n])?;
                done += n as u64;
            }
            return Ok(());
        }
        self.sink.flush().map_err(|e| write_error(&self.path, e))?;
        let after = self.after_copy();
        let target = match &mut self.sink.get_mut().0 {
            Sink::Temp { file, .. } => file.as_file_mut(),
            Sink::Direct(file) => file,
            Sink::Stdout(_) => unreachable!("standard output is written above"),
        };
        copy_range(source, offset, len, target, after).map_err(|e| Error::io(&self.path, e))
    }

    /// Writes what a spill made, `made`, whose `holes` (offsets counted in `made`) `fill`
    /// writes. Into a file, the rest goes first, in order, each hole left as a hole in the file,
    /// and the holes are written after, in parallel, each at its place: their bytes are written
    /// once, never through a temporary file. To standard output, a pipe or a device, each hole
    /// is written in its turn. `fill` is given a sink that takes exactly a hole's size; the
    /// first failure in the order of the holes is the one returned, and an output that cannot
    /// take the bytes is said as such.
    pub fn write_spilled<T: Copy + Sync, E: From<Error> + Send>(
        &mut self,
        made: &spill::Spilled,
        holes: &[spill::Hole<T>],
        fill: &spill::WriteHole<'_, T, E>,
    ) -> std::result::Result<(), E> {
        if let Some(stepped) = self.step_over(made, holes, fill) {
            return stepped;
        }
        let bytes = made.bytes();
        let mut later = Vec::with_capacity(holes.len());
        let mut pos = 0usize;
        for hole in holes {
            let (at, end) = (hole.at as usize, (hole.at + hole.size) as usize);
            let before = bytes.get(pos..at).ok_or_else(|| self.misplaced(hole))?;
            self.write_made(made, before)?;
            match self.leave_hole(hole.size)? {
                Some(out_at) => later.push(spill::Hole {
                    at: out_at,
                    ..*hole
                }),
                None => self.fill_in_line(hole, fill)?,
            }
            pos = end;
        }
        let rest = match bytes.get(pos..) {
            Some(rest) => rest,
            None => return Err(E::from(self.misplaced(&holes[holes.len() - 1]))),
        };
        self.write_made(made, rest)?;
        self.fill_later(&later, fill)
    }

    /// An error for a hole that does not lie after the one before it, within what a spill
    /// made.
    fn misplaced<T>(&self, hole: &spill::Hole<T>) -> Error {
        Error::file(
            &self.path,
            format!(
                "a part of {} bytes at {:#x} overlaps the one before it",
                hole.size, hole.at
            ),
        )
    }

    /// Writes `part`, a slice of what a spill made: copied by the kernel from its temporary file.
    fn write_made(&mut self, made: &spill::Spilled, part: &[u8]) -> Result<()> {
        match made.input() {
            Some(held) => self.write_part(held, part),
            None => self.write_bytes(part),
        }
    }

    /// Leaves `len` bytes of the file for bytes written later at their place: their offset;
    /// `None` for an output written in order only (standard output, a pipe, a device).
    fn leave_hole(&mut self, len: u64) -> Result<Option<u64>> {
        let Sink::Temp { .. } = &self.sink.get_ref().0 else {
            return Ok(None);
        };
        self.sink.flush().map_err(|e| write_error(&self.path, e))?;
        let Sink::Temp { file, .. } = &mut self.sink.get_mut().0 else {
            return Ok(None);
        };
        let file = file.as_file_mut();
        let left = (|| {
            let at = io::Seek::stream_position(file)?;
            let end = at.checked_add(len).ok_or(io::ErrorKind::InvalidInput)?;
            // A hole in the file: it costs no disk until written. The file reaches past it
            // once it is written, or once what follows it is: its length need not be set.
            io::Seek::seek(file, io::SeekFrom::Start(end))?;
            Ok(at)
        })();
        left.map(Some).map_err(|e| write_error(&self.path, e))
    }

    /// The file written at offsets, once what was written in order is flushed; `None` when the
    /// output is written in order only.
    fn positioned(&mut self) -> Option<&File> {
        self.sink.flush().ok()?;
        match &self.sink.get_ref().0 {
            Sink::Temp { file, .. } => Some(file.as_file()),
            _ => None,
        }
    }

    /// Writes the bytes of `hole` where the output is now, in order.
    fn fill_in_line<T, E: From<Error>>(
        &mut self,
        hole: &spill::Hole<T>,
        fill: &spill::WriteHole<'_, T, E>,
    ) -> std::result::Result<(), E> {
        let mut written = 0u64;
        let path = self.path.clone();
        let sink = &mut self.sink;
        let mut take = |bytes: &[u8]| {
            if written + bytes.len() as u64 > hole.size {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "more bytes than the room left for them",
                ));
            }
            sink.write_all(bytes)?;
            written += bytes.len() as u64;
            Ok(())
        };
        catching(&path, hole, &mut take, fill)?;
        if written != hole.size {
            return Err(E::from(Error::file(
                &path,
                format!("{written} of {} bytes were written", hole.size),
            )));
        }
        Ok(())
    }

    /// What follows each stretch the kernel copies into this output: the start of its
    /// write-back when the output will be synced, nothing otherwise.
    fn after_copy(&self) -> syncing::AfterCopy {
        match &self.sink.get_ref().0 {
            Sink::Temp { placing, .. } if placing.synced() => syncing::start_write_back,
            _ => syncing::leave_write_back,
        }
    }

    /// Flushes what was written and, when the output will be synced, asks the system to start
    /// writing it to the disk now, without waiting: the sync when the output is closed then
    /// finds less to do, and several outputs written one after another reach the disk while
    /// the next are made. An output that is not synced is left to the system.
    pub fn start_writeback(&mut self) -> Result<()> {
        self.sink.flush().map_err(|e| Error::io(&self.path, e))?;
        if let Sink::Temp { file, placing, .. } = &self.sink.get_ref().0 {
            if placing.synced() {
                syncing::start_write_back_all(file.as_file());
            }
        }
        Ok(())
    }

    /// Flushes what was written to the file.
    pub fn flush(&mut self) -> Result<()> {
        self.sink.flush().map_err(|e| Error::io(&self.path, e))
    }

    /// Flushes what was written and returns the temporary file that holds it, to read it back
    /// before committing; `None` when the output is not a temporary file.
    pub fn written_so_far(&mut self) -> Result<Option<PathBuf>> {
        self.end_past_head()?;
        self.sink.flush().map_err(|e| Error::io(&self.path, e))?;
        Ok(match &self.sink.get_ref().0 {
            Sink::Temp { file, .. } => Some(file.path().to_path_buf()),
            _ => None,
        })
    }

    /// Finishes writing: flushes, gives the temporary file its final mode, owner and
    /// attributes, syncs it to the disk when it is to be renamed over a file (or the process
    /// syncs every output) and closes it. Nothing is in place yet.
    pub fn close(mut self) -> Result<Closed> {
        self.end_past_head()?;
        let path = self.path;
        let beneath = self.beneath;
        let writer = self
            .sink
            .into_inner()
            .map_err(|e| write_error(&path, e.into_error()))?;
        let state = match writer.0 {
            Sink::Temp {
                file,
                listed,
                placing,
            } => {
                if let Placing::Rename { mode, kept, .. } = &placing {
                    let handle = file.as_file();
                    match kept {
                        Some(kept) => kept.give(handle),
                        None => handle.set_permissions(Permissions::from_mode(*mode)),
                    }
                    .map_err(|e| Error::io(&path, e))?;
                }
                if placing.synced() {
                    syncing::sync_file(file.as_file(), &path).map_err(|e| Error::io(&path, e))?;
                }
                ClosedState::Temp {
                    temp: file.into_temp_path(),
                    listed,
                    placing,
                }
            }
            Sink::Direct(mut file) => {
                file.flush().map_err(|e| Error::io(&path, e))?;
                ClosedState::Done
            }
            Sink::Stdout(mut out) => {
                out.flush().map_err(|e| Error::io(&path, e))?;
                ClosedState::Done
            }
        };
        Ok(Closed {
            path,
            state,
            beneath,
        })
    }

    /// Finishes the output and puts it in place (renamed; synced before and its folder after
    /// when it replaces a file).
    pub fn commit(self) -> Result<()> {
        commit_all(vec![self])
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.sink.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.sink.flush()
    }
}

/// Runs `fill` for `hole` into `sink`; when the sink refuses bytes (the disk is full), that
/// refusal, said of the output `path`, is the error, whatever `fill` made of it.
fn catching<T, E: From<Error>>(
    path: &Path,
    hole: &spill::Hole<T>,
    sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    fill: &spill::WriteHole<'_, T, E>,
) -> std::result::Result<(), E> {
    let mut refused = None;
    let filled = fill(hole, &mut |bytes| {
        sink(bytes).map_err(|e| {
            let kind = e.kind();
            refused = Some(e);
            io::Error::from(kind)
        })
    });
    match refused {
        Some(e) => Err(E::from(write_error(path, e))),
        None => filled,
    }
}

/// Copies `len` bytes at `offset` of `source` to the end of `target`: by the kernel where it
/// can, else through a buffer, with explicit offsets either way. An input that ends early is
/// an `UnexpectedEof` error.
/// `after` is called with each stretch the kernel copied.
fn copy_range(
    source: &File,
    mut offset: u64,
    len: u64,
    target: &mut File,
    after: syncing::AfterCopy,
) -> io::Result<()> {
    let mut left = len;
    // Through this thread's pipe first (see `splicing`), a write-back step at a time, into a
    // target with a position (not a pipe or a terminal); what the kernel will not splice is
    // copied below.
    if let Ok(mut at) = target.stream_position() {
        while left > 0 {
            let chunk = left.min(syncing::WRITE_BACK_STEP);
            let spliced =
                splicing::splice_at(source.as_raw_fd(), offset, target.as_raw_fd(), at, chunk)?;
            if spliced > 0 {
                at += spliced;
                target.seek(io::SeekFrom::Start(at))?;
                after(target, spliced);
                (offset, left) = (offset + spliced, left - spliced);
            }
            if spliced < chunk {
                break;
            }
        }
    }
    while left > 0 {
        let mut from = offset as libc::loff_t;
        let chunk = left.min(syncing::WRITE_BACK_STEP) as usize;
        // SAFETY: both descriptors are open; `from` is a valid pointer to the input offset,
        // and the output offset is the target's own position.
        let copied = unsafe {
            libc::copy_file_range(
                source.as_raw_fd(),
                &mut from,
                target.as_raw_fd(),
                std::ptr::null_mut(),
                chunk,
                0,
            )
        };
        if copied < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(
                    libc::EXDEV | libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP | libc::EPERM,
                ) => copy_through_buffer(source, offset, left, target),
                _ => Err(e),
            };
        }
        if copied == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        after(target, copied as u64);
        offset += copied as u64;
        left -= copied as u64;
    }
    Ok(())
}

fn copy_through_buffer(
    source: &File,
    mut offset: u64,
    mut left: u64,
    target: &mut File,
) -> io::Result<()> {
    let mut buffer = vec![0u8; (1 << 20).min(left as usize)];
    while left > 0 {
        let want = buffer.len().min(left as usize);
        let got = source.read_at(&mut buffer[..want], offset)?;
        if got == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        target.write_all(&buffer[..got])?;
        offset += got as u64;
        left -= got as u64;
    }
    Ok(())
}

enum ClosedState {
    Temp {
        // Field order is drop order: the file is removed before it leaves the list.
        temp: TempPath,
        listed: Listed,
        placing: Placing,
    },
    Done,
}

/// A written and closed output (synced, if it is to be renamed over a file), not yet in place.
/// Dropping it removes the temporary file.
pub struct Closed {
    path: PathBuf,
    state: ClosedState,
    beneath: Option<beneath::Beneath>,
}

impl Closed {
    /// Puts the output in place; returns the folder to sync, if any: the folder of a synced
    /// output renamed into place.
    fn place(self) -> Result<Option<PathBuf>> {
        let path = self.path;
        let ClosedState::Temp {
            temp,
            listed,
            placing,
        } = self.state
        else {
            return Ok(None);
        };
        // In a tree, the destination is its name in the folder held open, still holding the
        // file read; else the path.
        let (destination, read) = match &self.beneath {
            Some(beneath) => (
                beneath.destination().map_err(|e| Error::io(&path, e))?,
                Some(beneath.read),
            ),
            None => (path.clone(), None),
        };
        match placing {
            Placing::Rename { synced, .. } => {
                temp.persist(&destination)
                    .map_err(|e| Error::io(&path, e.error))?;
                drop(listed);
                match &self.beneath {
                    // The folder's path lasts as long as it is held open: synced now.
                    Some(beneath) if synced => {
                        let folder = beneath.folder.path();
                        syncing::sync_folder(&folder).map_err(|e| Error::io(&path, e))?;
                        Ok(None)
                    }
                    _ => Ok(synced.then(|| folder_of(&destination).to_path_buf())),
                }
            }
            Placing::WriteThrough { kept } => {
                cleanup::uninterrupted(|| write_through(&temp, &destination, &kept, read))
                    .map_err(|e| Error::io(&path, e))?;
                drop(temp);
                drop(listed);
                Ok(None)
            }
        }
    }
}

/// Writes the bytes of the finished file `from` into the existing file `to`, keeping its
/// inode, then gives it back its mode and attributes (writing clears set-ID bits and file
/// capabilities) and syncs it.
fn write_through(from: &Path, to: &Path, kept: &Kept, read: Option<(u64, u64)>) -> io::Result<()> {
    let source = File::open(from)?;
    let len = source.metadata()?.len();
    // Not waiting for a reader should `to` have become a FIFO: that fails with ENXIO. In a
    // tree, `to` is not followed, and must be the file read.
    let nofollow = if read.is_some() { libc::O_NOFOLLOW } else { 0 };
    let mut target = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK | nofollow)
        .open(to)?;
    let meta = target.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    if read.is_some_and(|read| read != (meta.dev(), meta.ino())) {
        return Err(io::Error::other(
            "it changed while it was being read (another file is at its name now); left as it is",
        ));
    }
    copy_range(&source, 0, len, &mut target, syncing::start_write_back)?;
    target.set_len(len)?;
    kept.give(&target)?;
    syncing::sync_file(&target, to)
}

/// Finishes every output, then puts them all in place, in order: an output that fails to be
/// written, or an input that shrank while it was read, leaves none of them in place and
/// removes every temporary file. Each folder a synced output went to is synced once at the
/// end.
pub fn commit_all(outputs: Vec<Output>) -> Result<()> {
    use rayon::prelude::*;
    // Closed in parallel: each sync waits for its own file's writes, not for the others'.
    let closed: Vec<Closed> = outputs
        .into_par_iter()
        .map(Output::close)
        .collect::<Vec<Result<_>>>()
        .into_iter()
        .collect::<Result<_>>()?;
    place_all(closed)
}

/// Puts outputs already closed in place, in order, and syncs the folders of those synced (the
/// outputs that replaced a file, or all when the process syncs everything).
pub fn place_all(closed: Vec<Closed>) -> Result<()> {
    inputs_intact()?;
    let mut folders = BTreeSet::new();
    for output in closed {
        if let Some(folder) = output.place()? {
            folders.insert(folder);
        }
    }
    for folder in folders {
        syncing::sync_folder(&folder).map_err(|e| Error::io(&folder, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check for shrunk inputs is for the whole process: tests that write outputs do not
    /// run while an input is shrunk.
    static SERIAL: Mutex<()> = Mutex::new(());

    pub(super) fn serial() -> std::sync::MutexGuard<'static, ()> {
        SERIAL
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    #[test]
    fn a_file_truncated_under_its_map_reads_zeros_and_is_reported() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shrinking");
        fs::write(&path, vec![0xa5u8; 1 << 20]).unwrap();
        let input = Input::open(&path).unwrap();
        assert_eq!(input[100_000], 0xa5);
        input.intact().unwrap();
        OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(4096)
            .unwrap();
        // Past the new end: without the guard, this read is SIGBUS.
        assert_eq!(input[600_000], 0);
        assert_eq!(input[(1 << 20) - 1], 0);
        assert_eq!(input[10], 0xa5);
        let e = input.intact().unwrap_err().to_string();
        assert!(e.contains("shrinking") && e.contains("shrank"), "{e}");
        let out_path = dir.path().join("out");
        // Written by the system from the map (pages past the end: EFAULT), or through the
        // buffer (zeros): either way the output is refused.
        for part in [&input[..], &input[..100_000]] {
            let mut out = Output::create(&out_path).unwrap();
            let e = match out.write_bytes(part) {
                Ok(()) => out.commit().unwrap_err(),
                Err(e) => e,
            };
            assert!(e.to_string().contains("shrinking': the file shrank"), "{e}");
            assert!(!out_path.exists());
        }
    }

    #[test]
    fn temporaries_are_private_until_they_take_their_place() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let mut out = Output::create(&path).unwrap();
        out.write_bytes(b"data").unwrap();
        let temp = out.written_so_far().unwrap().unwrap();
        assert_eq!(fs::metadata(&temp).unwrap().mode() & 0o777, 0o600);
        out.commit().unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().mode() & 0o777,
            0o666 & !keep::umask()
        );
        assert!(!temp.exists());
    }

    /// Writes `bytes` to `out` and puts it in place.
    fn written(mut out: Output, bytes: &[u8]) {
        out.write_bytes(bytes).unwrap();
        out.commit().unwrap();
    }

    /// The process syncs every output until this is dropped.
    struct SyncingEverything;

    impl SyncingEverything {
        fn new() -> SyncingEverything {
            set_syncing(Syncing::Everything);
            SyncingEverything
        }
    }

    impl Drop for SyncingEverything {
        fn drop(&mut self) {
            set_syncing(Syncing::Replacements);
        }
    }

    #[test]
    fn only_an_output_that_replaces_a_file_is_synced_then_its_folder() {
        let _serial = serial();
        let temp = tempfile::tempdir().unwrap();
        let dir = fs::canonicalize(temp.path()).unwrap();
        let synced = || syncing::synced_under(&dir);
        let file = dir.join("out");
        written(Output::create(&file).unwrap(), b"new");
        assert_eq!(fs::read(&file).unwrap(), b"new");
        assert_eq!(synced(), Vec::<PathBuf>::new(), "a new file");
        written(Output::create(&file).unwrap(), b"over");
        assert_eq!(synced(), [file.clone(), dir.clone()], "over a file");
        let link = dir.join("link");
        std::os::unix::fs::symlink("nowhere", &link).unwrap();
        written(Output::create(&link).unwrap(), b"over a link");
        assert_eq!(synced()[2..], [link.clone(), dir.clone()], "over a link");
        written(Output::replace(&file).unwrap(), b"in place");
        assert_eq!(synced()[4..], [file.clone(), dir.clone()], "in place");
        assert_eq!(fs::read(&file).unwrap(), b"in place");
    }

    #[test]
    fn a_file_with_other_names_is_synced_once_written_into() {
        let _serial = serial();
        let temp = tempfile::tempdir().unwrap();
        let dir = fs::canonicalize(temp.path()).unwrap();
        let file = dir.join("out");
        fs::write(&file, b"old").unwrap();
        fs::hard_link(&file, dir.join("other name")).unwrap();
        written(Output::replace(&file).unwrap(), b"new bytes");
        assert_eq!(fs::read(dir.join("other name")).unwrap(), b"new bytes");
        // The file written into, not the temporary file it was copied from; no name changed,
        // so not the folder.
        assert_eq!(syncing::synced_under(&dir), [file]);
    }

    #[test]
    fn syncing_everything_syncs_new_files_and_their_folders() {
        let _serial = serial();
        let _everything = SyncingEverything::new();
        assert_eq!(syncing(), Syncing::Everything);
        let temp = tempfile::tempdir().unwrap();
        let dir = fs::canonicalize(temp.path()).unwrap();
        let sub = dir.join("sub");
        fs::create_dir(&sub).unwrap();
        let (a, b) = (dir.join("a"), sub.join("b"));
        let outputs = vec![Output::create(&a).unwrap(), Output::create(&b).unwrap()];
        commit_all(outputs).unwrap();
        let mut synced = syncing::synced_under(&dir);
        // The files are synced in parallel, in any order; the folders after, in order.
        assert_eq!(synced.len(), 4, "{synced:?}");
        synced[..2].sort();
        assert_eq!(synced, [a, b, dir.clone(), sub]);
    }

    #[test]
    fn an_input_is_never_written_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in");
        fs::write(&path, b"input bytes").unwrap();
        let input = Input::open(&path).unwrap();
        let e = Output::create(&path).err().unwrap().to_string();
        assert!(e.contains("refusing to write over an input"), "{e}");
        // Another name of it is replaced, never written through: a link, another hard link.
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let hard = dir.path().join("hard");
        fs::hard_link(&path, &hard).unwrap();
        for name in [&link, &hard] {
            written(Output::create(name).unwrap(), b"new");
            assert_eq!(fs::read(name).unwrap(), b"new");
            assert!(!fs::symlink_metadata(name).unwrap().file_type().is_symlink());
        }
        assert_eq!(fs::read(&path).unwrap(), b"input bytes");
        // The input's own name, which has other links now, still is refused.
        fs::hard_link(&path, dir.path().join("third")).unwrap();
        assert!(Output::create(&path).is_err());
        drop(input);
        Output::create(&path).unwrap();
    }

    #[test]
    fn descriptors_and_devices_are_written_as_they_are_and_files_under_dev_are_not() {
        for name in ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1", "/dev/null"] {
            assert!(written_directly(Path::new(name)), "{name}");
        }
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("regular");
        fs::write(&file, b"x").unwrap();
        assert!(!written_directly(&file));
        assert!(!written_directly(&dir.path().join("missing")));
        if Path::new("/dev/shm").is_dir() {
            assert!(!written_directly(Path::new("/dev/shm/offload-output-test")));
        }
    }

    #[test]
    fn a_device_that_never_ends_is_refused() {
        let e = Input::open(Path::new("/dev/zero"))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("'/dev/zero'") && e.contains("devices are not read"),
            "{e}"
        );
        assert!(Input::open(Path::new("/dev/null")).unwrap().is_empty());
    }
}
