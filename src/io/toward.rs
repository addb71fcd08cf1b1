//! Bytes made straight into an output at their place, before the rest of it is written: a
//! program's packed bundles, compressed into the new file at the offset of their section
//! rather than into a temporary file copied there afterwards ([`Spill::toward`]).
//!
//! The output lends a descriptor of its temporary file, written at offsets only, so its own
//! position stays where its writer left it. When the new file is written, bytes found already
//! at their place are stepped over; bytes made at another place than they turn out to go
//! (the section moved, or another one was packed before it) are first moved out to a file of
//! their own, before anything is written over them.

use std::fs::File;
use std::io::{self, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use super::error::{FileError as Error, Result};
use super::spill::{self, Spill, Spilled};
use super::{catching, write_error, Data, Input, Output, Sink};

impl Output {
    /// A descriptor of the file being written, to make bytes in at their place
    /// ([`Spill::toward`]); `None` for an output written in order only (standard output, a
    /// pipe, a device).
    pub fn lend_file(&self) -> Option<File> {
        match &self.sink.get_ref().0 {
            Sink::Temp { file, .. } => file.as_file().try_clone().ok(),
            _ => None,
        }
    }

    /// Where `made` lies in this output's file, when it was made there ([`Output::lend_file`]).
    fn holding(&self, made: &Spilled) -> Option<u64> {
        let Sink::Temp { file, .. } = &self.sink.get_ref().0 else {
            return None;
        };
        made.input()?.offset_in(file.as_file())
    }

    /// Moves `made` out of this output's file, to a temporary file of its own, when it was made
    /// there at another offset than `at`, where it goes: the bytes written before it would
    /// otherwise be written over it.
    pub fn settle(&self, made: &mut Spilled, at: u64) -> Result<()> {
        let Some(base) = self.holding(made).filter(|&base| base != at) else {
            return Ok(());
        };
        let Sink::Temp { file, .. } = &self.sink.get_ref().0 else {
            return Ok(());
        };
        let moved = (|| {
            let mut spill = Spill::on_disk()?;
            let len = made.len();
            spill.append_copy(file.as_file(), base, len)?;
            spill.finish()
        })()
        .map_err(|e| Error::io(&self.path, e))?;
        *made = moved;
        Ok(())
    }

    /// Steps over `made`, made at its place in this output's file (see [`Output::holding`]),
    /// when the output has reached that place; its `holes` are then written at their places,
    /// in parallel, as [`Output::write_spilled`] writes them. `None` when `made` is not in this
    /// output's file.
    pub(super) fn step_over<T: Copy + Sync, E: From<Error> + Send>(
        &mut self,
        made: &Spilled,
        holes: &[spill::Hole<T>],
        fill: &spill::WriteHole<'_, T, E>,
    ) -> Option<std::result::Result<(), E>> {
        let base = self.holding(made)?;
        Some(self.step_over_at(base, made.len(), holes, fill))
    }

    fn step_over_at<T: Copy + Sync, E: From<Error> + Send>(
        &mut self,
        base: u64,
        len: u64,
        holes: &[spill::Hole<T>],
        fill: &spill::WriteHole<'_, T, E>,
    ) -> std::result::Result<(), E> {
        self.sink.flush().map_err(|e| write_error(&self.path, e))?;
        let Sink::Temp { file, .. } = &mut self.sink.get_mut().0 else {
            return Ok(());
        };
        let file = file.as_file_mut();
        let here = file
            .stream_position()
            .map_err(|e| write_error(&self.path, e))?;
        if here != base {
            return Err(E::from(Error::file(
                &self.path,
                format!(
                    "{len} bytes made at {base:#x} of the new file were to be written at {here:#x}"
                ),
            )));
        }
        let end = base
            .checked_add(len)
            .ok_or_else(|| write_error(&self.path, io::ErrorKind::InvalidInput.into()))?;
        file.seek(io::SeekFrom::Start(end))
            .map_err(|e| write_error(&self.path, e))?;
        let later: Vec<spill::Hole<T>> = (holes.iter())
            .map(|hole| spill::Hole {
                at: base + hole.at,
                ..*hole
            })
            .collect();
        self.fill_later(&later, fill)
    }

    /// Writes the holes `later` left in the file (each at its offset there), in parallel, as
    /// [`Output::write_spilled`] says.
    pub(super) fn fill_later<T: Copy + Sync, E: From<Error> + Send>(
        &mut self,
        later: &[spill::Hole<T>],
        fill: &spill::WriteHole<'_, T, E>,
    ) -> std::result::Result<(), E> {
        let path = self.path.clone();
        let path = &path;
        let Some(file) = self.positioned() else {
            return Ok(());
        };
        let refused = |hole: &spill::Hole<T>, e: io::Error| {
            E::from(Error::file(
                path,
                format!(
                    "{} bytes at {:#x} were to be written: {e}",
                    hole.size, hole.at
                ),
            ))
        };
        spill::fill_file(
            file,
            later,
            &|hole, sink| catching(path, hole, sink, fill),
            &refused,
        )
    }

    /// Ends the file where its writer is now: bytes made beyond that place (and moved out
    /// since, [`Output::settle`]) leave it.
    pub fn end_here(&mut self) -> Result<()> {
        self.sink.flush().map_err(|e| write_error(&self.path, e))?;
        if let Sink::Temp { file, .. } = &mut self.sink.get_mut().0 {
            let file = file.as_file_mut();
            let end = file
                .stream_position()
                .map_err(|e| write_error(&self.path, e))?;
            if file.metadata().map_err(|e| Error::io(&self.path, e))?.len() > end {
                file.set_len(end).map_err(|e| write_error(&self.path, e))?;
            }
        }
        Ok(())
    }
}

impl Input {
    /// The `len` bytes of `file` from its offset `at` (a file this process is writing, whose
    /// bytes there no other writer changes), mapped: its slices are copied by the kernel.
    pub fn from_temporary_part(file: File, at: u64, len: u64) -> io::Result<Input> {
        let mut input = Input::from_bytes(Vec::new());
        input.path = PathBuf::from("(temporary file)");
        if len > 0 {
            let len =
                usize::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
            // SAFETY: read-only and private; the file is this process's own, at least
            // `at + len` bytes long, and the bytes mapped are changed by no one while mapped.
            let map = unsafe { memmap2::MmapOptions::new().offset(at).len(len).map(&file) }?;
            input.data = Data::Mapped(map);
        }
        input.file = Some(file);
        input.file_at = at;
        Ok(input)
    }

    /// Where this input's bytes start in `file` when they are a part of that very file (the
    /// same device and inode), as [`Input::from_temporary_part`] maps one.
    pub fn offset_in(&self, file: &File) -> Option<u64> {
        let id = |f: &File| f.metadata().ok().map(|m| (m.dev(), m.ino()));
        let own = self.file.as_ref()?;
        (id(own).is_some() && id(own) == id(file)).then_some(self.file_at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::spill::Hole;

    /// Fills a hole with the byte it is told.
    fn fill(hole: &Hole<u8>, sink: &mut dyn FnMut(&[u8]) -> io::Result<()>) -> Result<()> {
        let bytes = vec![hole.what; hole.size as usize];
        sink(&bytes).map_err(|e| Error::io(std::path::Path::new("hole"), e))
    }

    /// Bytes made toward an output at `base` (at most `room` of them there): 300 bytes, a
    /// hole of 50 filled with 0x77, 20 bytes; then the output written as 0x01 up to `goes_at`,
    /// the bytes made, and 30 bytes of 0x02. The file written, and the bytes it should be.
    fn written_around(base: u64, room: u64, goes_at: u64) -> (Vec<u8>, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new");
        let mut out = Output::create(&path).unwrap();
        let mut spill = Spill::toward(out.lend_file().unwrap(), base, room);
        let first: Vec<u8> = (0..300u32).map(|i| (i % 251) as u8).collect();
        spill.append(&first).unwrap();
        let at = spill.reserve(50).unwrap();
        spill.append(&[0x33; 20]).unwrap();
        let holes = [Hole {
            at,
            size: 50,
            what: 0x77u8,
        }];
        let mut made = spill.finish().unwrap();
        out.settle(&mut made, goes_at).unwrap();
        out.write_bytes(&vec![1; goes_at as usize]).unwrap();
        out.write_spilled(&made, &holes, &fill).unwrap();
        out.write_bytes(&[2; 30]).unwrap();
        out.end_here().unwrap();
        let written = std::fs::read(out.written_so_far().unwrap().unwrap()).unwrap();
        let mut expected = vec![1; goes_at as usize];
        expected.extend_from_slice(&first);
        expected.extend_from_slice(&[0x77; 50]);
        expected.extend_from_slice(&[0x33; 20]);
        expected.extend_from_slice(&[2; 30]);
        (written, expected)
    }

    #[test]
    fn bytes_made_at_their_place_are_stepped_over_and_their_holes_filled() {
        let (written, expected) = written_around(100, 1000, 100);
        assert_eq!(written, expected);
    }

    #[test]
    fn bytes_made_at_another_place_are_moved_out_first_and_the_file_ends_where_written() {
        // They go before their place: what is written first would overlap them, and the
        // file made longer by them ends where the writing does.
        let (written, expected) = written_around(100, 1000, 40);
        assert_eq!(written, expected);
        // They go after it.
        let (written, expected) = written_around(100, 1000, 160);
        assert_eq!(written, expected);
    }

    #[test]
    fn bytes_more_than_their_room_move_to_a_file_of_their_own() {
        // 370 bytes with room for 320: the 300 made go to a temporary file once the hole
        // would pass the room, and the rest follow them; the output's bytes after the room
        // are never written. With room for 200, none are made in the output.
        for room in [320, 200] {
            let (written, expected) = written_around(100, room, 100);
            assert_eq!(written, expected, "room {room}");
        }
    }

    #[test]
    fn bytes_made_at_their_place_are_refused_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = Output::create(&dir.path().join("new")).unwrap();
        let mut spill = Spill::toward(out.lend_file().unwrap(), 64, 1000);
        spill.append(&[9; 10]).unwrap();
        let made = spill.finish().unwrap();
        out.write_bytes(&[1; 10]).unwrap();
        let error = out.write_spilled(&made, &[], &fill).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("10 bytes made at 0x40 of the new file were to be written at 0xa"),
            "{error}"
        );
    }
}
