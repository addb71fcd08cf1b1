//! Bytes made in order that may be too large to hold: a rewritten region of containers, the
//! packed bundles of a program. They stay in memory while small and move to an unnamed
//! temporary file once they pass [`IN_MEMORY`], so the memory a rewrite needs does not grow
//! with what it writes.
//!
//! Some parts are known only by their size when they are placed: a compressed bundle being
//! decompressed is inflated later, straight into its place. [`Spill::reserve`] leaves room
//! for such a part and [`Spill::fill`] writes all of them in parallel, each at its offset,
//! without holding any whole.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

use rayon::prelude::*;

use crate::io::Input;

/// The most a spill holds in memory before it moves to a temporary file.
pub const IN_MEMORY: u64 = 32 << 20;

/// Bytes being made, in order: in memory, then in a temporary file once they grow large, or
/// from the first byte at their place in the file they are made for ([`Spill::toward`]).
#[derive(Debug)]
pub struct Spill {
    store: Store,
    len: u64,
    /// The most bytes it may make where it is: made toward a file whose later bytes are
    /// another's, it moves to a temporary file of its own rather than reach them.
    room: u64,
}

#[derive(Debug)]
enum Store {
    Memory(Vec<u8>),
    /// In a file, from `base`: written at offsets, never through the file's own position,
    /// which another writer of the same open file may be using.
    File {
        file: BufWriter<Positioned>,
        base: u64,
    },
}

/// A file written at an offset of its own, which each write moves on.
#[derive(Debug)]
struct Positioned {
    file: File,
    at: u64,
}

impl Write for Positioned {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.file.write_at(buf, self.at)?;
        self.at += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Store {
    /// The file `file` from `base`, written through a buffer of `buffer` bytes.
    fn file(file: File, base: u64, buffer: usize) -> Store {
        Store::File {
            file: BufWriter::with_capacity(buffer, Positioned { file, at: base }),
            base,
        }
    }
}

/// Makes `file` at least `len` bytes long, never shorter.
fn grow_to(file: &File, len: u64) -> io::Result<()> {
    if file.metadata()?.len() < len {
        file.set_len(len)?;
    }
    Ok(())
}

/// Writes the bytes of a hole into the sink it is given, which takes them in order and refuses
/// more than the hole holds.
pub type WriteHole<'w, T, E> =
    dyn Fn(&Hole<T>, &mut dyn FnMut(&[u8]) -> io::Result<()>) -> Result<(), E> + Sync + 'w;

/// A part of a [`Spill`] reserved for bytes written later: its offset and size, and what the
/// writer needs to make them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hole<T> {
    /// The offset of its first byte.
    pub at: u64,
    /// Its size.
    pub size: u64,
    /// What it is to hold.
    pub what: T,
}

impl Default for Spill {
    fn default() -> Self {
        Spill::new()
    }
}

impl Spill {
    /// Nothing yet.
    pub fn new() -> Spill {
        Spill {
            store: Store::Memory(Vec::new()),
            len: 0,
            room: u64::MAX,
        }
    }

    /// Nothing yet, kept in an unnamed temporary file from the first byte: for bytes that
    /// must not take memory however few (many spills held at once).
    pub fn on_disk() -> io::Result<Spill> {
        Ok(Spill {
            store: Store::file(tempfile::tempfile()?, 0, 1 << 16),
            len: 0,
            room: u64::MAX,
        })
    }

    /// Nothing yet, made straight into `file` from its offset `base` (the file they are
    /// made for, at their place in it, so that they need not be copied there): written at
    /// offsets only, so another writer of the file keeps its own position. At most `room`
    /// bytes are made there: were there to be more, those made move to a temporary file, and
    /// the rest follow them there. What is made is read back mapped ([`Spill::finish`]); the
    /// file only grows.
    pub fn toward(file: File, base: u64, room: u64) -> Spill {
        Spill {
            store: Store::file(file, base, 1 << 20),
            len: 0,
            room,
        }
    }

    /// The number of bytes made (holes included).
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether nothing was made.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `bytes`.
    pub fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.make_room(bytes.len() as u64)?;
        match &mut self.store {
            Store::Memory(held) => held.extend_from_slice(bytes),
            Store::File { file, .. } => file.write_all(bytes)?,
        }
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Appends `part`, a slice of `input`. Once the bytes are in a file, a large part of a
    /// file input is copied by the kernel from that file: its pages are neither read into
    /// this process nor kept mapped.
    pub fn append_part(&mut self, input: &Input, part: &[u8]) -> io::Result<()> {
        self.make_room(part.len() as u64)?;
        let source = input.file_range(part);
        match (&mut self.store, source) {
            (Store::File { file, .. }, Some((source, offset)))
                if part.len() >= super::KERNEL_COPY_FROM =>
            {
                copy_into(file, source, offset, part.len() as u64)?;
                self.len += part.len() as u64;
                Ok(())
            }
            _ => self.append(part),
        }
    }

    /// Appends `part`, a large slice of a mapped input file kept as it is: once the spill is in
    /// a file (packed toward the output), copied there by the kernel from the input's file at
    /// once, so that no writer copies it later; else written from the map.
    pub fn append_mapped(&mut self, part: &[u8]) -> io::Result<()> {
        self.make_room(part.len() as u64)?;
        if let Store::File { file, .. } = &mut self.store {
            file.flush()?;
            let target = file.get_mut();
            if let Some(copied) = copy_mapped_at(part, &target.file, target.at) {
                copied?;
                target.at += part.len() as u64;
                self.len += part.len() as u64;
                return Ok(());
            }
        }
        self.append(part)
    }

    /// Appends `len` bytes of `source` from its start (a file this process made, such as a
    /// room's): copied by the kernel once the spill is in a file, read from `bytes` (the same
    /// bytes, mapped) while it is in memory.
    pub fn append_file(&mut self, source: &File, bytes: &[u8]) -> io::Result<()> {
        self.make_room(bytes.len() as u64)?;
        match &mut self.store {
            Store::File { file, .. } if bytes.len() >= super::KERNEL_COPY_FROM => {
                copy_into(file, source, 0, bytes.len() as u64)?;
                self.len += bytes.len() as u64;
                Ok(())
            }
            _ => self.append(bytes),
        }
    }

    /// Appends `len` bytes of `source` (a file this process writes) from `offset`: copied by
    /// the kernel once the spill is in a file, read in while it is in memory.
    pub fn append_copy(&mut self, source: &File, offset: u64, len: u64) -> io::Result<()> {
        self.make_room(len)?;
        match &mut self.store {
            Store::File { file, .. } => copy_into(file, source, offset, len)?,
            Store::Memory(held) => {
                let start = held.len();
                held.resize(
                    start + usize::try_from(len).map_err(|_| too_large_for_a_file())?,
                    0,
                );
                source.read_exact_at(held.get_mut(start..).unwrap_or_default(), offset)?;
            }
        }
        self.len += len;
        Ok(())
    }

    /// Appends zeros up to the next multiple of `boundary`.
    pub fn pad_to(&mut self, boundary: u64) -> io::Result<()> {
        let zeros = self.len.next_multiple_of(boundary.max(1)) - self.len;
        self.reserve(zeros).map(drop)
    }

    /// Leaves `size` bytes (zeros until written) for a part made later; returns its offset.
    pub fn reserve(&mut self, size: u64) -> io::Result<u64> {
        let at = self.len;
        self.make_room(size)?;
        match &mut self.store {
            Store::Memory(held) => held.resize(held.len() + size as usize, 0),
            // A hole in the file: it reads as zeros, and costs no disk until written. Its
            // length is set now, so that the parts copied into holes never extend the file.
            Store::File { file, base } => {
                file.flush()?;
                let end = (base.checked_add(at))
                    .and_then(|at| at.checked_add(size))
                    .ok_or_else(too_large_for_a_file)?;
                grow_to(&file.get_ref().file, end)?;
                file.get_mut().at = end;
            }
        }
        self.len += size;
        Ok(at)
    }

    /// Leaves `size` bytes for a part written later, as [`Spill::reserve`] does, in a file
    /// whatever their number: a hole there costs neither memory nor disk, where zeros in
    /// memory would cost both (for a part the writer copies from a file straight into its
    /// place, never into the spill).
    pub fn reserve_sparse(&mut self, size: u64) -> io::Result<u64> {
        if size > 0 && matches!(self.store, Store::Memory(_)) {
            self.make_room(IN_MEMORY.saturating_add(1))?;
        }
        self.reserve(size)
    }

    /// Moves the bytes to a temporary file when `more` of them would make too many to hold,
    /// or more than there is room for where they are ([`Spill::toward`]).
    fn make_room(&mut self, more: u64) -> io::Result<()> {
        let after = self.len.saturating_add(more);
        match &mut self.store {
            Store::Memory(held) if after > IN_MEMORY => {
                let mut store = Store::file(tempfile::tempfile()?, 0, 1 << 20);
                if let Store::File { file, .. } = &mut store {
                    file.write_all(held)?;
                }
                self.store = store;
            }
            Store::File { file, base } if after > self.room => {
                file.flush()?;
                let moved = tempfile::tempfile()?;
                copy_range_at(&file.get_ref().file, *base, self.len, &moved, 0)?;
                // Holes at the end are part of it too.
                moved.set_len(self.len)?;
                self.store = Store::File {
                    file: BufWriter::with_capacity(
                        1 << 20,
                        Positioned {
                            file: moved,
                            at: self.len,
                        },
                    ),
                    base: 0,
                };
                self.room = u64::MAX;
            }
            _ => {}
        }
        Ok(())
    }

    /// Writes every hole of `holes` (each as [`Spill::reserve`] left it, in increasing order)
    /// in parallel: `write` is given the hole and a sink that takes exactly its size. The
    /// first failure, in the order of `holes`, is the one returned; `failed` makes the error
    /// for a hole the spill could not take, or left part empty.
    pub fn fill<T: Sync, E: Send>(
        &mut self,
        holes: &[Hole<T>],
        write: &WriteHole<'_, T, E>,
        failed: &(dyn Fn(&Hole<T>, io::Error) -> E + Sync),
    ) -> Result<(), E> {
        let Some(first) = holes.first() else {
            return Ok(());
        };
        match &mut self.store {
            Store::File { file, base } => {
                file.flush().map_err(|e| failed(first, e))?;
                if *base == 0 {
                    return fill_file(&file.get_ref().file, holes, write, failed);
                }
                // The holes at their places in the file; each is told its place in the spill.
                let placed: Vec<Hole<&Hole<T>>> = (holes.iter())
                    .map(|hole| Hole {
                        at: *base + hole.at,
                        size: hole.size,
                        what: hole,
                    })
                    .collect();
                let write =
                    |hole: &Hole<&Hole<T>>, sink: &mut dyn FnMut(&[u8]) -> io::Result<()>| {
                        write(hole.what, sink)
                    };
                fill_file(&file.get_ref().file, &placed, &write, &|hole, e| {
                    failed(hole.what, e)
                })
            }
            Store::Memory(held) => fill_in(held, 0, holes, write, failed),
        }
    }

    /// The bytes made: in memory, or the temporary file mapped.
    pub fn finish(self) -> io::Result<Spilled> {
        Ok(match self.store {
            Store::Memory(held) => Spilled::Bytes(held),
            Store::File { file, base } => {
                let file = file
                    .into_inner()
                    .map_err(io::IntoInnerError::into_error)?
                    .file;
                // Holes at the end are part of it too.
                let end = base
                    .checked_add(self.len)
                    .ok_or_else(too_large_for_a_file)?;
                grow_to(&file, end)?;
                Spilled::File(Input::from_temporary_part(file, base, self.len)?)
            }
        })
    }
}

/// Writes every hole of `holes` into `file`, each at its offset there (in increasing order, not
/// overlapping), in parallel, as [`Spill::fill`] does.
pub fn fill_file<T: Sync, E: Send>(
    file: &File,
    holes: &[Hole<T>],
    write: &WriteHole<'_, T, E>,
    failed: &(dyn Fn(&Hole<T>, io::Error) -> E + Sync),
) -> Result<(), E> {
    holes
        .par_iter()
        // One hole at a time: holes differ in size by thousands of times (a code object of a
        // few kilobytes beside one of megabytes), so halves of the list can be far apart in
        // work; taken one by one, a thread done early takes the next rather than waiting.
        .with_max_len(1)
        .map(|hole| {
            let mut at = hole.at;
            let end = hole.at + hole.size;
            write(hole, &mut |bytes| {
                if at + bytes.len() as u64 > end {
                    return Err(overfilled());
                }
                // A large slice of a mapped input file is copied by the kernel, file to file.
                match copy_mapped_at(bytes, file, at) {
                    Some(copied) => copied?,
                    None => file.write_all_at(bytes, at)?,
                }
                at += bytes.len() as u64;
                Ok(())
            })?;
            check_full(hole, at, failed)
        })
        .collect::<Vec<_>>()
        .into_iter()
        // The first failure in the order of the holes, whichever thread met it first.
        .collect()
}

/// Writes `part` into `target` at offset `at` by the kernel (`copy_file_range`, no bytes through
/// this process) when it is a large slice of a mapped input file; `None` when it is not one,
/// or the kernel cannot copy between these files: the caller writes the bytes itself. A
/// source that ends early (shrunk under its map) is an `UnexpectedEof` error.
fn copy_mapped_at(part: &[u8], target: &File, at: u64) -> Option<io::Result<()>> {
    if part.len() < super::KERNEL_COPY_FROM {
        return None;
    }
    let from = part.as_ptr() as usize;
    // The slice borrows the map, so its input stays listed, and its descriptor open, while
    // the kernel copies: the descriptor can be used once the list is unlocked.
    let (fd, offset) = mapped_range(from, from + part.len())?;
    // Through this thread's pipe first (see `splicing`); what it leaves, by copy_file_range.
    let spliced =
        match super::splicing::splice_at(fd, offset, target.as_raw_fd(), at, part.len() as u64) {
            Ok(n) => n as usize,
            Err(e) => return Some(Err(e)),
        };
    let (mut from, mut to) = (
        (offset + spliced as u64) as libc::loff_t,
        (at + spliced as u64) as libc::loff_t,
    );
    let mut left = part.len() - spliced;
    while left > 0 {
        let chunk = left.min(super::syncing::WRITE_BACK_STEP as usize);
        // SAFETY: both descriptors are open (see above); the offsets are valid pointers and
        // neither file's position is used.
        let copied =
            unsafe { libc::copy_file_range(fd, &mut from, target.as_raw_fd(), &mut to, chunk, 0) };
        if copied < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                // Nothing copied yet: the caller writes the bytes. Part copied: the rest is
                // written here from the map.
                Some(
                    libc::EXDEV | libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP | libc::EPERM,
                ) => {
                    if left == part.len() {
                        None
                    } else {
                        let done = part.len() - left;
                        Some(
                            target.write_all_at(
                                part.get(done..).unwrap_or_default(),
                                at + done as u64,
                            ),
                        )
                    }
                }
                _ => Some(Err(e)),
            };
        }
        if copied == 0 {
            return Some(Err(io::ErrorKind::UnexpectedEof.into()));
        }
        left -= copied as usize;
    }
    Some(Ok(()))
}

/// The descriptor and file offset of the bytes from `from` to `to`, when they lie inside the
/// map of an input that keeps its descriptor.
fn mapped_range(from: usize, to: usize) -> Option<(std::os::fd::RawFd, u64)> {
    let inputs = super::open_inputs();
    let (start, number) = inputs.by_start.range(..=from).next_back()?;
    let input = inputs.inputs.get(number)?;
    (input.fd >= 0 && to <= start.saturating_add(input.mapped as usize))
        .then(|| (input.fd, (from - start) as u64))
}

/// Writes every hole of `holes` into `held`, whose first byte is at offset `base` of what the
/// holes' offsets count (in increasing order, not overlapping), in parallel, as
/// [`Spill::fill`] does.
pub fn fill_in<T: Sync, E: Send>(
    held: &mut [u8],
    base: u64,
    holes: &[Hole<T>],
    write: &WriteHole<'_, T, E>,
    failed: &(dyn Fn(&Hole<T>, io::Error) -> E + Sync),
) -> Result<(), E> {
    let Some(parts) = disjoint(held, base, holes) else {
        // Only a hole can lie outside.
        return holes
            .first()
            .map_or(Ok(()), |first| Err(failed(first, overfilled())));
    };
    parts
        .into_par_iter()
        .zip(holes.par_iter())
        .map(|(part, hole)| {
            let mut filled = 0usize;
            write(hole, &mut |bytes| {
                let to = part
                    .get_mut(filled..filled + bytes.len())
                    .ok_or_else(overfilled)?;
                to.copy_from_slice(bytes);
                filled += bytes.len();
                Ok(())
            })?;
            check_full(hole, hole.at + filled as u64, failed)
        })
        .collect::<Vec<_>>()
        .into_iter()
        .collect()
}

/// An error unless `hole` was written up to its end (`at` is where its writing stopped).
fn check_full<T, E>(
    hole: &Hole<T>,
    at: u64,
    failed: &(dyn Fn(&Hole<T>, io::Error) -> E + Sync),
) -> Result<(), E> {
    if at == hole.at + hole.size {
        return Ok(());
    }
    let message = format!("{} of {} bytes written", at - hole.at, hole.size);
    Err(failed(
        hole,
        io::Error::new(io::ErrorKind::WriteZero, message),
    ))
}

/// The error for bytes written past a hole's end.
fn overfilled() -> io::Error {
    io::Error::new(
        io::ErrorKind::WriteZero,
        "more bytes than the room left for them",
    )
}

/// The error for a size past what a file offset holds.
fn too_large_for_a_file() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "a part too large for a file")
}

/// Copies `len` bytes of `source` from `offset` into `target` at `at`, by the kernel where it
/// can (through a buffer where it cannot), neither file's position used or moved.
pub(super) fn copy_range_at(
    source: &File,
    offset: u64,
    len: u64,
    target: &File,
    at: u64,
) -> io::Result<()> {
    // Through this thread's pipe first (see `splicing`); what it leaves, by copy_file_range.
    let spliced =
        super::splicing::splice_at(source.as_raw_fd(), offset, target.as_raw_fd(), at, len)?;
    let (mut from, mut to) = (
        (offset + spliced) as libc::loff_t,
        (at + spliced) as libc::loff_t,
    );
    let mut left = len - spliced;
    while left > 0 {
        let chunk = left.min(super::syncing::WRITE_BACK_STEP) as usize;
        // SAFETY: both descriptors are open; the offsets are valid pointers, and neither
        // file's position is used.
        let copied = unsafe {
            libc::copy_file_range(
                source.as_raw_fd(),
                &mut from,
                target.as_raw_fd(),
                &mut to,
                chunk,
                0,
            )
        };
        if copied < 0 {
            let e = io::Error::last_os_error();
            if !matches!(
                e.raw_os_error(),
                Some(libc::EXDEV | libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP | libc::EPERM)
            ) {
                return Err(e);
            }
            let mut buffer = vec![0u8; (1 << 20).min(left as usize)];
            while left > 0 {
                let want = buffer.len().min(left as usize);
                let part = buffer.get_mut(..want).unwrap_or_default();
                let got = source.read_at(part, from as u64)?;
                if got == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                target.write_all_at(part.get(..got).unwrap_or_default(), to as u64)?;
                (from, to) = (from + got as libc::loff_t, to + got as libc::loff_t);
                left -= got as u64;
            }
            return Ok(());
        }
        if copied == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        left -= copied as u64;
    }
    Ok(())
}

/// Copies `len` bytes of `source` from `offset` to the end of what `file` holds, by the
/// kernel, after what is buffered.
fn copy_into(
    file: &mut BufWriter<Positioned>,
    source: &File,
    offset: u64,
    len: u64,
) -> io::Result<()> {
    file.flush()?;
    let target = file.get_mut();
    copy_range_at(source, offset, len, &target.file, target.at)?;
    target.at += len;
    Ok(())
}

/// The parts of `held` (whose first byte is at offset `base`) the `holes` cover (in
/// increasing order of offset, not overlapping), each its own slice; `None` when one lies
/// outside it.
fn disjoint<'h, T>(held: &'h mut [u8], base: u64, holes: &[Hole<T>]) -> Option<Vec<&'h mut [u8]>> {
    let mut parts = Vec::with_capacity(holes.len());
    let mut rest = held;
    let mut consumed = base;
    for hole in holes {
        let skip = usize::try_from(hole.at.checked_sub(consumed)?).ok()?;
        let (_, from_hole) = rest.split_at_mut_checked(skip)?;
        let (part, after) = from_hole.split_at_mut_checked(usize::try_from(hole.size).ok()?)?;
        parts.push(part);
        rest = after;
        consumed = hole.at + hole.size;
    }
    Some(parts)
}

impl Write for Spill {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.append(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Parts made in parallel and written out later in an order of their own (a package's
/// members, compressed again): each put on the shelf as it is made, in one unnamed temporary
/// file, and found again by its place. What is made waits on the disk, not in memory.
#[derive(Debug)]
pub struct Shelf {
    file: File,
    end: std::sync::Mutex<u64>,
}

/// Where a part lies on a [`Shelf`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shelved {
    /// The offset of its first byte.
    pub at: u64,
    /// Its size.
    pub len: u64,
}

impl Shelf {
    /// An empty shelf.
    pub fn new() -> io::Result<Shelf> {
        Ok(Shelf {
            file: tempfile::tempfile()?,
            end: std::sync::Mutex::new(0),
        })
    }

    /// Puts `bytes` on the shelf; many threads may put at once.
    pub fn put(&self, bytes: &[u8]) -> io::Result<Shelved> {
        let shelved = self.reserve(bytes.len() as u64)?;
        self.put_at(shelved, 0, bytes)?;
        Ok(shelved)
    }

    /// Sets aside `len` bytes of the shelf for a part written later, piece by piece, with
    /// [`Shelf::put_at`]; many threads may reserve at once. What is set aside and never
    /// written takes no room on the disk.
    pub fn reserve(&self, len: u64) -> io::Result<Shelved> {
        let mut end = self.end.lock().unwrap_or_else(|e| e.into_inner());
        let at = *end;
        *end = at.checked_add(len).ok_or(io::ErrorKind::InvalidInput)?;
        Ok(Shelved { at, len })
    }

    /// Writes `bytes` `offset` bytes into the part `shelved` (reserved): refused if they
    /// would pass its end.
    pub fn put_at(&self, shelved: Shelved, offset: u64, bytes: &[u8]) -> io::Result<()> {
        let fits = offset
            .checked_add(bytes.len() as u64)
            .is_some_and(|end| end <= shelved.len);
        if !fits {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "more bytes than the part set aside for them",
            ));
        }
        self.file.write_all_at(bytes, shelved.at + offset)
    }

    /// The file the parts are in, to copy them from by their places.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Everything put on the shelf, mapped to be read: each part's bytes at its place.
    pub fn into_input(self) -> io::Result<Input> {
        let end = self.end.into_inner().unwrap_or_else(|e| e.into_inner());
        self.file.set_len(end)?;
        Input::from_temporary(self.file, end)
    }
}

/// Room to make bytes in whose size is known only as a bound (a compressed bundle): an
/// unnamed temporary file as large as the bound, mapped to be written. What is made there is
/// file pages the kernel may write out and drop, not memory the process holds, so making a
/// large part costs no more memory than a small one; the file goes when the room does.
pub struct MappedRoom {
    map: memmap2::MmapMut,
    file: File,
    len: usize,
}

impl MappedRoom {
    /// Room of `capacity` bytes (at least one), all zeros.
    pub fn new(capacity: usize) -> io::Result<MappedRoom> {
        let file = tempfile::tempfile()?;
        file.set_len(capacity.max(1) as u64)?;
        // SAFETY: the file is unnamed and this process's alone, so nothing else changes or
        // truncates it while it is mapped; it keeps its size until the map goes.
        let map = unsafe { memmap2::MmapMut::map_mut(&file) }?;
        Ok(MappedRoom { map, file, len: 0 })
    }

    /// Makes the room `capacity` bytes large when it is smaller, keeping what it holds. The
    /// pages written so far stay mapped, so that room used again is written without faulting
    /// them in anew (most of what writing a fresh room costs the kernel).
    pub fn grow(&mut self, capacity: usize) -> io::Result<()> {
        if capacity <= self.map.len() {
            return Ok(());
        }
        self.file.set_len(capacity as u64)?;
        // SAFETY: the file is unnamed and this process's alone, and now at least as large as
        // the new map; no slice of the old map outlives this borrow of the room.
        unsafe {
            self.map
                .remap(capacity, memmap2::RemapOptions::new().may_move(true))
        }
    }

    /// Every byte of the room, to write into.
    pub fn space(&mut self) -> &mut [u8] {
        &mut self.map
    }

    /// Keeps the first `len` bytes (at most the room's size): those written.
    pub fn keep(&mut self, len: usize) {
        self.len = len.min(self.map.len());
    }

    /// The bytes kept.
    pub fn bytes(&self) -> &[u8] {
        self.map.get(..self.len).unwrap_or_default()
    }

    /// The file the room maps, from its start.
    pub fn file(&self) -> &File {
        &self.file
    }
}

impl std::fmt::Debug for MappedRoom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MappedRoom({} of {} bytes)", self.len, self.map.len())
    }
}

/// Bytes a [`Spill`] made.
pub enum Spilled {
    /// Held in memory.
    Bytes(Vec<u8>),
    /// In a temporary file, mapped: slices of it are copied out by the kernel.
    File(Input),
}

impl Spilled {
    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Spilled::Bytes(bytes) => bytes,
            Spilled::File(input) => input,
        }
    }

    /// The number of bytes.
    pub fn len(&self) -> u64 {
        self.bytes().len() as u64
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The input that holds them, when in a file (for copying its slices by the kernel).
    pub fn input(&self) -> Option<&Input> {
        match self {
            Spilled::Bytes(_) => None,
            Spilled::File(input) => Some(input),
        }
    }

    /// Takes the bytes out, leaving none in their place.
    pub fn take(&mut self) -> Spilled {
        std::mem::replace(self, Spilled::Bytes(Vec::new()))
    }

    /// The bytes as an input: held in memory, or the temporary file mapped.
    pub fn into_input(self) -> Input {
        match self {
            Spilled::Bytes(bytes) => Input::from_bytes(bytes),
            Spilled::File(input) => input,
        }
    }

    /// The bytes in memory (read from the file when there).
    pub fn into_vec(self) -> Vec<u8> {
        match self {
            Spilled::Bytes(bytes) => bytes,
            Spilled::File(input) => input.to_vec(),
        }
    }
}

impl std::fmt::Debug for Spilled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Spilled::Bytes(bytes) => write!(f, "Spilled::Bytes({} bytes)", bytes.len()),
            Spilled::File(input) => write!(f, "Spilled::File({} bytes)", input.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spill of `pieces` (bytes, or holes of a size filled with their index repeated).
    fn made(pieces: &[Result<&[u8], u64>], start_in_file: bool) -> Vec<u8> {
        let mut spill = Spill::new();
        if start_in_file {
            spill.make_room(IN_MEMORY + 1).unwrap();
        }
        let mut holes = Vec::new();
        for (k, piece) in pieces.iter().enumerate() {
            match piece {
                Ok(bytes) => spill.append(bytes).unwrap(),
                Err(size) => {
                    let at = spill.reserve(*size).unwrap();
                    holes.push(Hole {
                        at,
                        size: *size,
                        what: k as u8,
                    });
                }
            }
            spill.pad_to(8).unwrap();
        }
        let write = |hole: &Hole<u8>, sink: &mut dyn FnMut(&[u8]) -> io::Result<()>| {
            // In uneven pieces, as an inflating stream hands them over.
            for chunk in vec![hole.what; hole.size as usize].chunks(7) {
                sink(chunk).map_err(|e| e.to_string())?;
            }
            Ok(())
        };
        spill.fill(&holes, &write, &|_, e| e.to_string()).unwrap();
        let len = spill.len();
        let bytes = spill.finish().unwrap();
        assert_eq!(bytes.len(), len);
        bytes.bytes().to_vec()
    }

    #[test]
    fn holes_are_filled_in_place_in_memory_and_in_a_file() {
        let pieces: [Result<&[u8], u64>; 5] = [Ok(b"abc"), Err(20), Ok(b"defgh"), Err(1), Err(9)];
        let mut expected = b"abc\0\0\0\0\0".to_vec();
        expected.extend([1u8; 20]);
        expected.extend([0u8; 4]);
        expected.extend(b"defgh\0\0\0");
        expected.extend([3u8; 1]);
        expected.extend([0u8; 7]);
        expected.extend([4u8; 9]);
        expected.extend([0u8; 7]);
        assert_eq!(made(&pieces, false), expected);
        assert_eq!(made(&pieces, true), expected);
    }

    #[test]
    fn a_hole_written_short_or_long_is_an_error() {
        for start_in_file in [false, true] {
            let mut spill = Spill::new();
            if start_in_file {
                spill.make_room(IN_MEMORY + 1).unwrap();
            }
            let holes = [
                Hole {
                    at: spill.reserve(4).unwrap(),
                    size: 4,
                    what: 3usize,
                },
                Hole {
                    at: spill.reserve(4).unwrap(),
                    size: 4,
                    what: 5usize,
                },
            ];
            let write = |hole: &Hole<usize>, sink: &mut dyn FnMut(&[u8]) -> io::Result<()>| {
                sink(&vec![7; hole.what]).map_err(|e| e.to_string())
            };
            let failed = |hole: &Hole<usize>, e: io::Error| format!("at {}: {e}", hole.at);
            assert_eq!(
                spill.fill(&holes, &write, &failed),
                Err("at 0: 3 of 4 bytes written".to_string())
            );
            let only_long = &holes[1..];
            assert_eq!(
                spill.fill(only_long, &write, &failed),
                Err("more bytes than the room left for them".to_string())
            );
        }
    }

    #[test]
    fn parts_of_a_file_are_appended_by_the_kernel_with_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("input");
        let bytes: Vec<u8> = (0..(3u32 << 20)).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &bytes).unwrap();
        let input = Input::open(&path).unwrap();
        let mut spill = Spill::new();
        let mut want = Vec::new();
        // In memory first, then past what it holds, in a file; small parts and large.
        for (k, (from, len)) in [(5, 100), (0, 3 << 20), (7, 1 << 20), (9, 30 << 20)]
            .into_iter()
            .enumerate()
        {
            let part = if k == 3 {
                &bytes[..]
            } else {
                &bytes[from..from + len]
            };
            let repeats = if k == 3 { len / bytes.len() } else { 1 };
            for _ in 0..repeats {
                spill.append_part(&input, part).unwrap();
                want.extend_from_slice(part);
            }
            spill.pad_to(4096).unwrap();
            want.resize(want.len().next_multiple_of(4096), 0);
        }
        assert_eq!(spill.len(), want.len() as u64);
        let made = spill.finish().unwrap();
        assert!(made.input().is_some());
        assert!(made.bytes() == &want[..]);
    }

    #[test]
    fn mapped_room_keeps_what_was_written() {
        let mut room = MappedRoom::new(10_000).unwrap();
        assert_eq!(room.space().len(), 10_000);
        room.space()[..5].copy_from_slice(b"hello");
        room.keep(5);
        assert_eq!(room.bytes(), b"hello");
        room.keep(20_000);
        assert_eq!(room.bytes().len(), 10_000);
    }

    #[test]
    fn mapped_room_grown_keeps_what_was_written_and_never_shrinks() {
        let mut room = MappedRoom::new(10_000).unwrap();
        room.space()[..5].copy_from_slice(b"hello");
        room.space()[9_999] = 7;
        room.keep(5);
        room.grow(3 << 20).unwrap();
        assert_eq!(room.space().len(), 3 << 20);
        assert_eq!(room.bytes(), b"hello");
        assert_eq!(room.space()[9_999], 7);
        // Past the old end: zeros, written like any other byte.
        assert!(room.space()[10_000..].iter().all(|&b| b == 0));
        room.space()[(3 << 20) - 1] = 9;
        room.grow(100).unwrap();
        assert_eq!(room.space().len(), 3 << 20);
        assert_eq!(room.space()[(3 << 20) - 1], 9);
    }

    #[test]
    fn large_spills_move_to_a_file() {
        let mut spill = Spill::new();
        spill.append(&[1; 1000]).unwrap();
        let at = spill.reserve(IN_MEMORY).unwrap();
        assert!(matches!(spill.store, Store::File { .. }));
        let holes = [Hole {
            at,
            size: IN_MEMORY,
            what: (),
        }];
        let write = |_: &Hole<()>, sink: &mut dyn FnMut(&[u8]) -> io::Result<()>| {
            let chunk = vec![9u8; 1 << 20];
            for _ in 0..IN_MEMORY >> 20 {
                sink(&chunk)?;
            }
            Ok::<(), io::Error>(())
        };
        spill.fill(&holes, &write, &|_, e| e).unwrap();
        let done = spill.finish().unwrap();
        assert!(done.input().is_some());
        let bytes = done.bytes();
        assert_eq!(bytes.len() as u64, 1000 + IN_MEMORY);
        assert!(bytes[..1000].iter().all(|&b| b == 1));
        assert!(bytes[1000..].iter().all(|&b| b == 9));
    }

    #[test]
    fn parts_put_on_a_shelf_from_many_threads_are_found_whole_by_their_places() {
        let shelf = Shelf::new().unwrap();
        let parts: Vec<Vec<u8>> = (0..400u32)
            .map(|k| (0..(k * 37 % 5000)).map(|i| (i ^ k) as u8).collect())
            .collect();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(8)
            .build()
            .unwrap();
        let places: Vec<Shelved> =
            pool.install(|| parts.par_iter().map(|p| shelf.put(p).unwrap()).collect());
        let mut total = 0;
        for (part, place) in parts.iter().zip(&places) {
            let mut back = vec![0u8; place.len as usize];
            shelf.file().read_exact_at(&mut back, place.at).unwrap();
            assert!(back == *part);
            total += place.len;
        }
        // No two parts overlap, and nothing lies between them.
        let mut spans: Vec<(u64, u64)> = places.iter().map(|p| (p.at, p.at + p.len)).collect();
        spans.sort_unstable();
        assert!(spans.windows(2).all(|w| w[0].1 == w[1].0));
        assert_eq!(spans.last().unwrap().1, total);
    }

    #[test]
    fn parts_reserved_and_written_in_pieces_from_many_threads_read_back_mapped() {
        let shelf = Shelf::new().unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(8)
            .build()
            .unwrap();
        // Each part set aside larger than what is written into it, in pieces of 13 bytes.
        let written: Vec<(Shelved, Vec<u8>)> = pool.install(|| {
            (0..300u32)
                .into_par_iter()
                .map(|k| {
                    let part: Vec<u8> = (0..(k * 53 % 7000)).map(|i| ((i * 7) ^ k) as u8).collect();
                    let place = shelf.reserve(part.len() as u64 + 100).unwrap();
                    for (n, piece) in part.chunks(13).enumerate() {
                        shelf.put_at(place, n as u64 * 13, piece).unwrap();
                    }
                    (place, part)
                })
                .collect()
        });
        let last = written.iter().map(|(p, _)| p.at + p.len).max().unwrap();
        // A piece passing its part's end is refused.
        let (first, _) = written[0];
        let error = shelf.put_at(first, first.len - 1, b"ab").unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
        let input = shelf.into_input().unwrap();
        assert_eq!(input.len() as u64, last);
        for (place, part) in &written {
            let at = place.at as usize;
            assert!(input[at..at + part.len()] == part[..]);
            // What was set aside and not written reads as zeros.
            assert!(input[at + part.len()..at + place.len as usize]
                .iter()
                .all(|&b| b == 0));
        }
    }

    #[test]
    fn holes_of_uneven_sizes_copied_by_the_kernel_on_many_threads_get_every_byte() {
        // Holes from a few bytes to past the largest step one kernel copy takes, filled from a
        // mapped file on eight threads, one hole at a time: the same bytes on every run, and
        // the file exactly as long as the spill.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("input");
        let source: Vec<u8> = (0..(40u32 << 20)).map(|i| (i % 241) as u8).collect();
        std::fs::write(&path, &source).unwrap();
        let input = Input::open(&path).unwrap();
        let step = super::super::syncing::WRITE_BACK_STEP as usize;
        let sizes = [
            7usize,
            64 << 10,
            1,
            step + 4099,
            3 << 20,
            100,
            (64 << 10) - 1,
            5,
        ];
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(8)
            .build()
            .unwrap();
        for _ in 0..3 {
            let mut spill = Spill::new();
            spill.make_room(IN_MEMORY + 1).unwrap();
            let (mut holes, mut want) = (Vec::new(), Vec::new());
            for (k, &size) in sizes.iter().enumerate() {
                spill.append(b"head").unwrap();
                want.extend_from_slice(b"head");
                let from = k * 4093;
                let at = spill.reserve(size as u64).unwrap();
                holes.push(Hole {
                    at,
                    size: size as u64,
                    what: from,
                });
                want.extend_from_slice(&source[from..from + size]);
            }
            let write = |hole: &Hole<usize>, sink: &mut dyn FnMut(&[u8]) -> io::Result<()>| {
                sink(&input[hole.what..hole.what + hole.size as usize])
            };
            pool.install(|| spill.fill(&holes, &write, &|_, e| e))
                .unwrap();
            assert_eq!(spill.len(), want.len() as u64);
            let made = spill.finish().unwrap();
            assert_eq!(made.len(), want.len() as u64);
            assert!(made.bytes() == want.as_slice());
        }
    }

    #[test]
    fn a_spill_written_through_write_keeps_every_byte() {
        let mut spill = Spill::new();
        let bytes: Vec<u8> = (0..(IN_MEMORY + 4096)).map(|i| (i % 251) as u8).collect();
        for chunk in bytes.chunks(1 << 20) {
            spill.write_all(chunk).unwrap();
        }
        let made = spill.finish().unwrap();
        assert!(matches!(made, Spilled::File(_)));
        assert!(made.bytes() == bytes.as_slice());
    }

    #[test]
    fn a_scratch_output_gives_back_what_was_written_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let input_path = dir.path().join("in");
        let source: Vec<u8> = (0..(3u32 << 20)).map(|i| (i % 253) as u8).collect();
        std::fs::write(&input_path, &source).unwrap();
        let input = crate::io::Input::open(&input_path).unwrap();
        let mut out = crate::io::Output::scratch(std::path::Path::new("member")).unwrap();
        out.write_bytes(b"head").unwrap();
        out.write_part(&input, &input[1..]).unwrap();
        let made = out.into_scratch().unwrap().unwrap();
        assert_eq!(&made[..4], b"head");
        assert!(made[4..] == source[1..]);
        // A file's output is not a scratch one.
        let other = crate::io::Output::create(&dir.path().join("out")).unwrap();
        assert!(other.into_scratch().unwrap().is_none());
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["in"]);
    }
}
