//! The start of an output copied from its input ahead of the writer, on a thread of its own:
//! a program whose device code lies far into the file keeps everything before it at the same
//! offsets, and those bytes can be on their way while the device code is still being planned
//! and packed. The writer then steps over them.
//!
//! The copy touches only the bytes before the offset it was started with, and every other
//! writer keeps out of them until it is done: bytes made at their place in the output below
//! that offset wait for the copy first ([`HeadCopy::cut`]). The writer, which writes the
//! output from its start in order, steps over a part of the input only where it goes at its
//! own offset and the copy covered it; every other byte it writes over what the copy left.

use std::io::{self, Seek};
use std::thread::JoinHandle;

use super::error::Result;
use super::{write_error, Input, Output, Sink};

/// Copies shorter than this are left to the writer: a thread costs more than they take.
pub const HEAD_COPY_FROM: u64 = 4 << 20;

/// A copy of the first bytes of an input into an output at the same offsets, under way or
/// done ([`Output::copy_head`]). Dropped, it waits for the copy to end.
pub struct HeadCopy {
    thread: Option<JoinHandle<io::Result<()>>>,
    /// The input's device and inode.
    identity: (u64, u64),
    /// How many bytes from the start are claimed as the input's.
    len: u64,
    /// Whether the copy failed: nothing is then claimed.
    failed: bool,
}

impl HeadCopy {
    /// How many bytes from the start the copy claims.
    pub fn len(&self) -> u64 {
        if self.failed {
            0
        } else {
            self.len
        }
    }

    /// Whether it claims no byte.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits for the copy, then claims no more than the first `len` bytes: bytes are about to
    /// be made at their place from `len` on, over what the copy wrote there.
    pub fn cut(&mut self, len: u64) {
        self.wait();
        self.len = self.len.min(len);
    }

    fn wait(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.failed |= !matches!(thread.join(), Ok(Ok(())));
        }
    }
}

impl Drop for HeadCopy {
    fn drop(&mut self) {
        self.wait();
    }
}

impl Output {
    /// Starts copying the first `len` bytes of `input` into this output's file at the same
    /// offsets, on a thread of its own. `None` when the output is not a file written at
    /// offsets, the input has no file, or `len` is too short to be worth it
    /// ([`HEAD_COPY_FROM`]).
    pub fn copy_head(&self, input: &Input, len: u64) -> Option<HeadCopy> {
        if len < HEAD_COPY_FROM {
            return None;
        }
        let part = input.get(..usize::try_from(len).ok()?)?;
        // A whole file, from its start: the output's offsets are the file's.
        let (source, offset) = input.file_range(part).filter(|&(_, offset)| offset == 0)?;
        let identity = input.identity()?;
        let source = source.try_clone().ok()?;
        let target = self.lend_file()?;
        let thread = std::thread::Builder::new()
            .name("offload-head".into())
            .spawn(move || super::spill::copy_range_at(&source, offset, len, &target, 0))
            .ok()?;
        Some(HeadCopy {
            thread: Some(thread),
            identity,
            len,
            failed: false,
        })
    }

    /// Takes the bytes `head` copied as written: the writer steps over the parts of its input
    /// that go at their own offsets among them. Waits for the copy; one that failed claims
    /// nothing, and the writer writes every byte. Returns how many bytes are claimed.
    pub fn adopt_head(&mut self, mut head: HeadCopy) -> u64 {
        head.wait();
        if !head.is_empty() {
            self.head = Some((head.identity, head.len()));
        }
        head.len()
    }

    /// Steps over the start of `part` of `input`, which the copy of the head put at the
    /// output's current offset already: how many bytes of it are stepped over (none unless
    /// the part is the input's from that very offset).
    pub(super) fn step_over_head(&mut self, input: &Input, offset: u64, len: u64) -> Result<u64> {
        let Some((identity, end)) = self.head else {
            return Ok(0);
        };
        if offset >= end || input.identity() != Some(identity) {
            return Ok(0);
        }
        let Sink::Temp { file, .. } = &mut self.sink.get_mut().0 else {
            return Ok(0);
        };
        let file = file.as_file_mut();
        let here = file
            .stream_position()
            .map_err(|e| write_error(&self.path, e))?;
        if here != offset {
            return Ok(0);
        }
        let over = len.min(end - offset);
        file.seek(io::SeekFrom::Start(offset + over))
            .map_err(|e| write_error(&self.path, e))?;
        Ok(over)
    }

    /// Ends the file where its writer is: a head copied ahead, or disk reserved
    /// ([`Output::reserve`]), may reach past the end of what was written.
    pub(super) fn end_past_head(&mut self) -> Result<()> {
        if self.head.is_some() || self.reserved {
            self.end_here()?;
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use std::fs;
    use std::os::unix::fs::FileExt;

    use std::path::Path;

    use super::super::tests::serial;
    use super::*;

    /// `len` bytes that do not repeat.
    fn noise(len: usize) -> Vec<u8> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    }

    /// An input of `len` bytes of noise, and the path of an output beside it.
    fn setup(len: usize) -> (tempfile::TempDir, Vec<u8>, Input, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let bytes = noise(len);
        fs::write(dir.path().join("in"), &bytes).unwrap();
        let input = Input::open(&dir.path().join("in")).unwrap();
        let out = dir.path().join("out");
        (dir, bytes, input, out)
    }

    #[test]
    fn the_writer_steps_over_the_head_and_writes_the_rest() {
        let _serial = serial();
        let (_dir, bytes, input, path) = setup(9 << 20);
        let head = 5 << 20;
        let mut out = Output::create(&path).unwrap();
        let copy = out.copy_head(&input, head).unwrap();
        out.adopt_head(copy);
        // A part that starts at its own offset inside the head: stepped over up to its end.
        let over = out.step_over_head(&input, 0, 1 << 20).unwrap();
        assert_eq!(over, 1 << 20);
        out.write_part(&input, &input[1 << 20..]).unwrap();
        out.commit().unwrap();
        assert!(fs::read(&path).unwrap() == bytes);
    }

    #[test]
    fn bytes_elsewhere_than_their_offset_are_written_over_the_head() {
        let _serial = serial();
        let (_dir, bytes, input, path) = setup(6 << 20);
        let mut out = Output::create(&path).unwrap();
        let copy = out.copy_head(&input, 6 << 20).unwrap();
        out.adopt_head(copy);
        out.write_bytes(b"moved by 7").unwrap();
        out.write_part(&input, &input[..]).unwrap();
        out.commit().unwrap();
        let written = fs::read(&path).unwrap();
        assert_eq!(&written[..10], b"moved by 7");
        assert!(written[10..] == bytes[..]);
    }

    #[test]
    fn a_cut_head_waits_and_leaves_what_is_made_past_the_cut() {
        let _serial = serial();
        let (_dir, bytes, input, path) = setup(8 << 20);
        let mut out = Output::create(&path).unwrap();
        let mut copy = out.copy_head(&input, 8 << 20).unwrap();
        assert!(copy.thread.is_some());
        copy.cut(6 << 20);
        assert!(copy.thread.is_none() && copy.len() == 6 << 20);
        // Made at its place past the cut, over what the copy wrote there.
        let made = vec![0x5au8; 2 << 20];
        out.lend_file()
            .unwrap()
            .write_all_at(&made, 6 << 20)
            .unwrap();
        out.adopt_head(copy);
        assert_eq!(out.step_over_head(&input, 0, 8 << 20).unwrap(), 6 << 20);
        out.write_bytes(&made).unwrap();
        out.commit().unwrap();
        let written = fs::read(&path).unwrap();
        assert!(written[..6 << 20] == bytes[..6 << 20]);
        assert!(written[6 << 20..] == made[..]);
    }

    #[test]
    fn the_file_ends_where_the_writer_does_not_where_the_head_did() {
        let _serial = serial();
        let (_dir, bytes, input, path) = setup(8 << 20);
        let mut out = Output::create(&path).unwrap();
        let copy = out.copy_head(&input, 8 << 20).unwrap();
        out.adopt_head(copy);
        out.write_part(&input, &input[..5 << 20]).unwrap();
        let temp = out.written_so_far().unwrap().unwrap();
        assert_eq!(fs::metadata(temp).unwrap().len(), 5 << 20);
        out.commit().unwrap();
        assert!(fs::read(&path).unwrap() == bytes[..5 << 20]);
    }

    #[test]
    fn short_heads_other_inputs_and_outputs_in_order_are_not_copied_ahead() {
        let _serial = serial();
        let (dir, _bytes, input, path) = setup(6 << 20);
        let out = Output::create(&path).unwrap();
        assert!(out.copy_head(&input, HEAD_COPY_FROM - 1).is_none());
        assert!(Output::create(Path::new("-"))
            .unwrap()
            .copy_head(&input, 5 << 20)
            .is_none());
        let in_memory = Input::from_bytes(noise(6 << 20));
        assert!(out.copy_head(&in_memory, 5 << 20).is_none());
        // Another input's parts are written, whatever their offsets.
        let mut out = out;
        let copy = out.copy_head(&input, 5 << 20).unwrap();
        out.adopt_head(copy);
        fs::write(dir.path().join("other"), noise(1 << 20)).unwrap();
        let other = Input::open(&dir.path().join("other")).unwrap();
        assert_eq!(out.step_over_head(&other, 0, 1 << 20).unwrap(), 0);
    }
}
