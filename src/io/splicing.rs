//! The kernel's copies from file to file, through a pipe this thread keeps, in rounds that
//! start on the target's 64 KiB boundaries.
//!
//! `copy_file_range` on a file system that cannot share blocks (ext4) moves the bytes through
//! a pipe of the kernel's, 16 pages a round. A copy into an offset that is not a multiple of
//! 64 KiB, or from one whose place in its page differs from the target's, leaves every round
//! across the target's 64 KiB boundaries, and the target's page cache is then built of small
//! pieces (folios) rather than 64 KiB ones: measured here (Linux 6.18, ext4), copying
//! librocsolver (1.96 GB) at offsets 4 KiB apart took 0.73 s against 0.54 s at equal ones, and
//! `kpack --merge`'s 1,882 code objects took 0.74 s against `cp`'s 0.53 s for the whole file.
//! Through a pipe of our own, the first round stops at the target's next 64 KiB boundary and
//! every other round is a multiple of 64 KiB, wherever the source bytes start: the same copies
//! took 0.50 s, and the whole file 0.45 s.
//!
//! Where the kernel cannot splice between two files, or has no room for a pipe this size, the
//! copy is left to the caller's `copy_file_range` (see [`splice_at`]).

use std::cell::RefCell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The boundary the target's rounds start on.
const ALIGN: u64 = 64 << 10;

/// The pipe's size asked for: the most Linux gives a process without privileges by default
/// (`/proc/sys/fs/pipe-max-size`).
const PIPE_SIZE: libc::c_int = 1 << 20;

/// The page size the pipe's slots hold (each slot holds at most one page of the source).
const PAGE: u64 = 4096;

/// This thread's pipe, made on first use; `None` inside when one cannot be had (too small, or
/// refused), so that the copies go on by `copy_file_range` without asking again.
struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    /// The bytes one round moves: a multiple of [`ALIGN`] that fits the pipe's slots whatever
    /// the source's place in its first page.
    round: u64,
}

std::thread_local! {
    static PIPE: RefCell<Option<Option<Pipe>>> = const { RefCell::new(None) };
}

/// A pipe of [`PIPE_SIZE`], or `None` when the kernel gives less than two rounds' worth of
/// boundary (a pipe that cannot hold 64 KiB past a page's start gains nothing).
fn make_pipe() -> Option<Pipe> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return None;
    }
    // SAFETY: pipe2 succeeded: both descriptors are open and owned by nothing else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fcntl on an open descriptor; a refusal leaves the pipe at its size.
    let size = unsafe {
        libc::fcntl(write.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_SIZE);
        libc::fcntl(write.as_raw_fd(), libc::F_GETPIPE_SZ)
    };
    let room = u64::try_from(size).ok()?.checked_sub(PAGE)?;
    let round = room / ALIGN * ALIGN;
    (round >= 2 * ALIGN).then_some(Pipe { read, write, round })
}

/// Whether `a` and `b` are the same file: a copy within one file is left to
/// `copy_file_range`, which refuses ranges that overlap.
fn same_file(a: RawFd, b: RawFd) -> bool {
    let stat = |fd: RawFd| {
        // SAFETY: fstat writes the struct it is given; a failure is answered below.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            (libc::fstat(fd, &mut st) == 0).then_some((st.st_dev, st.st_ino))
        }
    };
    match (stat(a), stat(b)) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

/// Whether an error of `splice` says the kernel cannot splice between these files (the caller
/// copies another way) rather than that the copy failed.
fn refused(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINVAL | libc::ENOSYS | libc::EOPNOTSUPP | libc::EPERM | libc::EBADF)
    )
}

/// One `splice`, retried when a signal interrupts it.
fn splice(
    from: RawFd,
    from_at: Option<u64>,
    to: RawFd,
    to_at: Option<u64>,
    len: u64,
    flags: u32,
) -> io::Result<u64> {
    let mut from_off = from_at.map(|o| o as libc::loff_t);
    let mut to_off = to_at.map(|o| o as libc::loff_t);
    loop {
        let from_ptr = from_off
            .as_mut()
            .map_or(std::ptr::null_mut(), |o| o as *mut _);
        let to_ptr = to_off
            .as_mut()
            .map_or(std::ptr::null_mut(), |o| o as *mut _);
        // SAFETY: both descriptors are open; the offsets are null or valid pointers.
        let moved = unsafe { libc::splice(from, from_ptr, to, to_ptr, len as usize, flags) };
        if moved >= 0 {
            return Ok(moved as u64);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Copies `len` bytes of the file `source` at offset `from` into the file `target` at offset
/// `to`, by the kernel through this thread's pipe (see the module's notes); neither file's
/// position is used or moved. The bytes copied: all of `len`, or fewer (none, possibly) when
/// the kernel cannot splice between these files, they are one file, or no pipe can be had: the
/// caller copies the rest another way. A source that ends early is an `UnexpectedEof` error.
pub(super) fn splice_at(
    source: RawFd,
    from: u64,
    target: RawFd,
    to: u64,
    len: u64,
) -> io::Result<u64> {
    if len == 0 || same_file(source, target) {
        return Ok(0);
    }
    PIPE.with(|cell| {
        let Ok(mut kept) = cell.try_borrow_mut() else {
            return Ok(0);
        };
        let Some(pipe) = kept.get_or_insert_with(make_pipe) else {
            return Ok(0);
        };
        let copied = copy_through(pipe, source, from, target, to, len);
        if !matches!(copied, Ok(n) if n == len) {
            // What failed may have left bytes in the pipe: the next copy takes a new one.
            *kept = None;
        }
        match copied {
            Err((done, e)) if refused(&e) => Ok(done),
            Err((_, e)) => Err(e),
            Ok(done) => Ok(done),
        }
    })
}

/// [`splice_at`]'s rounds through `pipe`; on failure, the bytes written before it with the
/// error.
fn copy_through(
    pipe: &Pipe,
    source: RawFd,
    from: u64,
    target: RawFd,
    to: u64,
    len: u64,
) -> Result<u64, (u64, io::Error)> {
    let (read, write) = (pipe.read.as_raw_fd(), pipe.write.as_raw_fd());
    let mut done = 0;
    while done < len {
        let at = to + done;
        let boundary = (ALIGN - at % ALIGN) % ALIGN;
        let round = (len - done).min(if boundary > 0 { boundary } else { pipe.round });
        // Into the pipe: without waiting, so that a pipe fuller than planned cannot stop the
        // thread that alone empties it.
        let mut filled = 0;
        while filled < round {
            let moved = splice(
                source,
                Some(from + done + filled),
                write,
                None,
                round - filled,
                libc::SPLICE_F_NONBLOCK,
            );
            match moved {
                Ok(0) => return Err((done, io::ErrorKind::UnexpectedEof.into())),
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && filled > 0 => break,
                Err(e) => return Err((done, e)),
            }
        }
        // Out of it, into the target at its offset.
        let mut emptied = 0;
        while emptied < filled {
            match splice(read, None, target, Some(at + emptied), filled - emptied, 0) {
                Ok(0) => return Err((done + emptied, io::ErrorKind::WriteZero.into())),
                Ok(n) => emptied += n,
                Err(e) => return Err((done + emptied, e)),
            }
        }
        done += filled;
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom, Write};

    /// Bytes that differ from place to place (a xorshift sequence), `len` of them.
    fn varied(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    fn file_with(bytes: &[u8]) -> std::fs::File {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        file
    }

    fn contents(file: &mut std::fs::File) -> Vec<u8> {
        let mut all = Vec::new();
        file.seek(SeekFrom::Start(0)).unwrap();
        file.read_to_end(&mut all).unwrap();
        all
    }

    #[test]
    fn every_byte_lands_at_its_place_whatever_the_offsets() {
        let data = varied(5 << 20, 7);
        let source = file_with(&data);
        // Offsets in and out of step with each other and with pages and 64 KiB boundaries;
        // lengths of less than a round, several rounds, and a round and a byte.
        for (from, to, len) in [
            (0u64, 0u64, 5u64 << 20),
            (100, 0, 3 << 20),
            (0, 100, 3 << 20),
            (4096, 65536 - 4096, (2 << 20) + 1),
            (12345, 70000, 1 << 20),
            (1, 65535, 200),
            (65536, 65536, 65536),
        ] {
            let mut target = file_with(&varied(64, 3));
            let done = splice_at(source.as_raw_fd(), from, target.as_raw_fd(), to, len).unwrap();
            assert_eq!(done, len, "{from} {to} {len}");
            let all = contents(&mut target);
            assert_eq!(all.len() as u64, (to + len).max(64));
            let (from, to, len) = (from as usize, to as usize, len as usize);
            assert!(
                all[to..to + len] == data[from..from + len],
                "{from} {to} {len}"
            );
            assert!(all[..to.min(64)] == varied(64, 3)[..to.min(64)]);
            assert!(all[64.min(to)..to].iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn a_source_that_ends_early_is_an_error_and_the_next_copy_is_whole() {
        let data = varied(3 << 20, 11);
        let short = file_with(&data[..(1 << 20) + 5]);
        let target = tempfile::tempfile().unwrap();
        let e = splice_at(short.as_raw_fd(), 0, target.as_raw_fd(), 0, 3 << 20).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        // The pipe the failure left bytes in is gone: the next copy on this thread has only
        // its own bytes.
        let source = file_with(&data);
        let mut target = tempfile::tempfile().unwrap();
        let done = splice_at(source.as_raw_fd(), 100, target.as_raw_fd(), 0, 2 << 20).unwrap();
        assert_eq!(done, 2 << 20);
        assert!(contents(&mut target) == data[100..100 + (2 << 20)]);
    }

    #[test]
    fn within_one_file_nothing_is_copied_here() {
        let file = file_with(&varied(1 << 20, 5));
        assert_eq!(
            splice_at(file.as_raw_fd(), 0, file.as_raw_fd(), 1 << 20, 1 << 19).unwrap(),
            0
        );
    }

    #[test]
    fn a_target_the_kernel_cannot_splice_into_is_left_to_the_caller() {
        let source = file_with(&varied(1 << 20, 9));
        let dir = tempfile::tempdir().unwrap();
        let appending = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.path().join("a"))
            .unwrap();
        let done = splice_at(source.as_raw_fd(), 0, appending.as_raw_fd(), 0, 1 << 20).unwrap();
        assert_eq!(done, 0);
        assert_eq!(appending.metadata().unwrap().len(), 0);
    }

    #[test]
    fn threads_copying_at_once_each_copy_their_own_bytes() {
        // 64 pieces of 300,007 bytes, out of step with pages and with each other, copied by 8
        // threads (every eighth piece each) into one file 13 bytes further on; three times.
        const PIECE: u64 = 300_007;
        let data = varied(64 * PIECE as usize, 13);
        let source = file_with(&data);
        for _ in 0..3 {
            let mut target = tempfile::tempfile().unwrap();
            std::thread::scope(|scope| {
                for k in 0..8u64 {
                    let (source, target) = (&source, &target);
                    scope.spawn(move || {
                        for piece in (k..64).step_by(8) {
                            let at = piece * PIECE;
                            let done = splice_at(
                                source.as_raw_fd(),
                                at,
                                target.as_raw_fd(),
                                at + 13,
                                PIECE,
                            );
                            assert_eq!(done.unwrap(), PIECE);
                        }
                    });
                }
            });
            let all = contents(&mut target);
            assert_eq!(all.len(), data.len() + 13);
            assert!(
                all[13..] == data[..],
                "{}",
                all[13..]
                    .iter()
                    .zip(&data)
                    .position(|(a, b)| a != b)
                    .unwrap_or(0)
            );
        }
    }
}
