//! Disk reserved for an output before its bytes are written.
//!
//! A file that grows as it is written asks the file system for room a page at a time: on
//! ext4 each page written past what the file holds reserves its block then (delayed
//! allocation), which is a fifth of what writing a large file costs. Blocks allocated
//! beforehand, in one call (`fallocate`), are only filled: a 239 MB output is written in
//! 62 ms rather than 77. The reservation may be larger than what is written (a rewrite
//! reserves its input's size before it knows the output's): the file is cut where its writer
//! ends ([`Output::end_here`]), which gives the rest back.

use std::os::fd::AsRawFd;

use super::{Output, Sink};

/// Outputs shorter than this are written as they grow: a reservation saves less than its call.
pub const RESERVE_FROM: u64 = 4 << 20;

impl Output {
    /// Reserves the disk for an output of `len` bytes before they are written (see the
    /// module's notes), when it is a file written at offsets, `len` is at least
    /// [`RESERVE_FROM`] and the file is shorter. Where the file system cannot, or the disk has
    /// no room for `len` bytes now, nothing is reserved and the bytes are written as ever
    /// (a disk that is truly full is then said when they are). Called while no other thread
    /// writes the file: a reservation that fails gives the file its length back.
    pub fn reserve(&mut self, len: u64) {
        if len < RESERVE_FROM {
            return;
        }
        let Sink::Temp { file, .. } = &self.sink.get_ref().0 else {
            return;
        };
        let file = file.as_file();
        let Ok(from) = file.metadata().map(|meta| meta.len()) else {
            return;
        };
        let (Ok(start), Ok(more)) = (
            libc::off_t::try_from(from),
            libc::off_t::try_from(len.saturating_sub(from)),
        ) else {
            return;
        };
        if more == 0 {
            return;
        }
        // SAFETY: the descriptor is open; the call only allocates blocks of the file from its
        // end on and makes it that much longer.
        if unsafe { libc::fallocate(file.as_raw_fd(), 0, start, more) } == 0 {
            self.reserved = true;
        } else {
            // Blocks allocated before the call failed may have lengthened the file.
            let _ = file.set_len(from);
        }
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use std::fs;
    use std::path::Path;

    use super::super::tests::serial;
    use super::*;
    use crate::io::Input;

    #[test]
    fn a_reserved_output_ends_where_its_writer_ends() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let bytes: Vec<u8> = (0..(9u32 << 20)).map(|i| (i % 251) as u8).collect();
        fs::write(dir.path().join("in"), &bytes).unwrap();
        let input = Input::open(&dir.path().join("in")).unwrap();
        let path = dir.path().join("out");
        let mut out = Output::create(&path).unwrap();
        out.reserve(16 << 20);
        out.write_bytes(b"made").unwrap();
        // Reserved for more than is written, and again for less: the file is as long as the
        // first reservation while it is written.
        out.reserve(8 << 20);
        out.write_part(&input, &input[4..6 << 20]).unwrap();
        let written = out.written_so_far().unwrap().unwrap();
        // The read-back sees the file as written, not as reserved.
        assert_eq!(fs::metadata(&written).unwrap().len(), 6 << 20);
        out.write_part(&input, &input[6 << 20..]).unwrap();
        out.commit().unwrap();
        let mut expected = b"made".to_vec();
        expected.extend_from_slice(&bytes[4..]);
        assert!(fs::read(&path).unwrap() == expected);
    }

    #[test]
    fn short_outputs_and_outputs_in_order_reserve_nothing() {
        let _serial = serial();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let mut out = Output::create(&path).unwrap();
        out.reserve(RESERVE_FROM - 1);
        assert!(!out.reserved);
        out.write_bytes(b"short").unwrap();
        out.commit().unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"short");
        // A device is written in order: nothing to reserve, and nothing to cut.
        let mut null = Output::create(Path::new("/dev/null")).unwrap();
        null.reserve(64 << 20);
        assert!(!null.reserved);
        null.write_bytes(b"gone").unwrap();
        null.commit().unwrap();
    }
}
