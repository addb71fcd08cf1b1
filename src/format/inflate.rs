//! Inflating zlib and zstd streams through a fixed window, so that what a stream declares never
//! decides what is allocated: a buffer grows only as real bytes arrive, and only as far as the
//! caller means to keep them.

use std::io::{self, Read};

use crate::format::error::{Error, ErrorKind, Result};

/// Room for bytes too large to hold, given by the layer that writes them (a mapped temporary
/// file): a compressed bundle is made, or a large stream inflated, straight into it rather
/// than into memory.
pub trait Room: Send + Sync {
    /// Every byte of the room, to write into.
    fn space(&mut self) -> &mut [u8];
    /// Keeps the first `len` bytes of the room, those written.
    fn keep(&mut self, len: usize);
    /// The bytes kept.
    fn bytes(&self) -> &[u8];
    /// The file the room's bytes are pages of, from its start, when they are a file's: its
    /// bytes are then copied elsewhere by the kernel, never read through the map.
    fn file(&self) -> Option<&std::fs::File> {
        None
    }
}

/// Gives room of a size in bytes.
pub type MakeRoom<'a> = dyn Fn(usize) -> io::Result<Box<dyn Room>> + Sync + 'a;

/// zstd streams inflated whole into room, when there is some: those declaring 4 MiB or more
/// (smaller ones go through a window, where they cost less than a file).
pub const ROOM_FROM: u64 = 4 << 20;

/// Inflates the zstd frames of `payload` at once into room of exactly `declared` bytes made by
/// `rooms`, with `context`: a decoder given all of its output needs no window of its own, so
/// a large stream costs file pages, not memory. The room holds the stream when it inflates to
/// exactly `declared` bytes (its first `declared`, should the room be larger); `None` when room cannot be had, or the stream is damaged, shorter
/// or longer: the caller inflates it again through a window, which tells exactly how. The
/// room is never larger than `declared`, which the caller has held to its limit.
pub(crate) fn zstd_in_room(
    payload: &[u8],
    declared: u64,
    context: &mut zstd::zstd_safe::DCtx<'static>,
    rooms: &(dyn Fn(usize) -> io::Result<Box<dyn Room>> + Sync + '_),
) -> Option<Box<dyn Room>> {
    let len = usize::try_from(declared).ok()?;
    let mut room = rooms(len).ok()?;
    // Room kept from an earlier stream may be larger.
    let space = room.space().get_mut(..len)?;
    let made = context.decompress(space, payload).ok()?;
    if made as u64 != declared {
        return None;
    }
    room.keep(made);
    Some(room)
}

/// Input handed to a decoder writing into room at a time, when it must be able to stop: a
/// decoder given a whole frame and room for all of it makes the whole frame at once.
const ROOM_STEP: usize = 1 << 20;

/// Inflates the zstd frames of `payload` into room of `declared` bytes made by `rooms`, with
/// `context`, only until at least `end` bytes are made: the decoder writes into the room as
/// its window (zstd's stable output buffer), so a stream read in part costs file pages, not a
/// window as large as its frame in memory. The room holds at least `end` bytes (and whatever
/// the last block made beyond them); `None` when room cannot be had, or the stream is damaged
/// or shorter: the caller inflates it again through a window, which tells exactly how.
/// `context` is left as it was given, ready for the next stream.
pub(crate) fn zstd_prefix_in_room(
    payload: &[u8],
    declared: u64,
    end: u64,
    context: &mut zstd::zstd_safe::DCtx<'static>,
    rooms: &(dyn Fn(usize) -> io::Result<Box<dyn Room>> + Sync + '_),
) -> Option<Box<dyn Room>> {
    use zstd::zstd_safe::{DParameter, ResetDirective};
    let len = usize::try_from(declared).ok()?;
    let end = usize::try_from(end).ok()?.min(len);
    let mut room = rooms(len).ok()?;
    let space = room.space().get_mut(..len)?;
    // Parameters are set only between frames: a context kept from a stream read in part is
    // still inside its frame.
    let made = context
        .reset(ResetDirective::SessionOnly)
        .and_then(|_| context.set_parameter(DParameter::StableOutBuffer(true)))
        .ok()
        .and_then(|_| prefix_into(space, payload, end, context));
    // A frame left half made, and the stable buffer, must not reach the next stream.
    let reset = context.reset(ResetDirective::SessionOnly).is_ok()
        && context
            .set_parameter(DParameter::StableOutBuffer(false))
            .is_ok();
    let made = made.filter(|_| reset)?;
    room.keep(made);
    Some(room)
}

/// Decodes `payload` into `space` with `context` (its output buffer stable) until at least
/// `end` bytes are made, feeding [`ROOM_STEP`] bytes of input at a time; how many were made,
/// or `None` on an error or a stream that ends first.
fn prefix_into(
    space: &mut [u8],
    payload: &[u8],
    end: usize,
    context: &mut zstd::zstd_safe::DCtx<'static>,
) -> Option<usize> {
    use zstd::zstd_safe::{InBuffer, OutBuffer};
    let (mut made, mut read) = (0usize, 0usize);
    while made < end {
        let fed = read.saturating_add(ROOM_STEP).min(payload.len());
        let mut input = InBuffer::around(payload.get(..fed)?);
        input.set_pos(read);
        let mut output = OutBuffer::around_pos(&mut *space, made);
        let left = context.decompress_stream(&mut output, &mut input).ok()?;
        let (now_made, now_read) = (output.pos(), input.pos());
        let stuck = now_made == made && now_read == read && fed == payload.len();
        // A frame that ends with the payload, short of `end`: the stream is shorter.
        let ended = left == 0 && now_read == payload.len() && now_made < end;
        if stuck || ended {
            return None;
        }
        (made, read) = (now_made, now_read);
    }
    Some(made)
}

/// Bytes inflated at a time.
pub(crate) const WINDOW: usize = 1 << 20;

/// A window for `expected` bytes of output: [`WINDOW`] bytes at most, and not much more than the
/// output, so that small streams stay cheap.
pub(crate) fn window(expected: u64) -> Vec<u8> {
    vec![0; window_len(expected)]
}

/// The length of [`window`]`(expected)`.
pub(crate) fn window_len(expected: u64) -> usize {
    let wanted = usize::try_from(expected.saturating_add(1)).unwrap_or(WINDOW);
    wanted.clamp(4096, WINDOW)
}

/// The first `n` bytes of `bytes`, or all of them when there are fewer.
pub(crate) fn at_most(bytes: &[u8], n: u64) -> &[u8] {
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    bytes.get(..n).unwrap_or(bytes)
}

/// Fills as much of `window` as the next read of `reader` gives: 0 at the end of the stream.
pub(crate) fn read_some<R: Read + ?Sized>(reader: &mut R, window: &mut [u8]) -> io::Result<usize> {
    loop {
        match reader.read(window) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Appends `bytes` to `out`, which is never to hold more than `cap` bytes: its capacity doubles
/// as real bytes arrive but never past `cap`, and memory that cannot be had is an error (at
/// `offset`), not an abort.
pub(crate) fn append(out: &mut Vec<u8>, bytes: &[u8], cap: u64, offset: u64) -> Result<()> {
    let needed = out.len() + bytes.len();
    if needed > out.capacity() {
        let doubled = out.capacity().saturating_mul(2).max(64 << 10) as u64;
        let target = doubled.min(cap).max(needed as u64);
        let target = usize::try_from(target).unwrap_or(usize::MAX);
        out.try_reserve_exact(target - out.len()).map_err(|_| {
            Error::new(
                offset,
                ErrorKind::OutOfMemory {
                    bytes: target as u64,
                },
            )
        })?;
    }
    out.extend_from_slice(bytes);
    Ok(())
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;

    #[test]
    fn growth_stops_at_the_cap() {
        let mut out = Vec::new();
        append(&mut out, &[1; 1000], 100_000, 0).unwrap();
        assert!(out.capacity() >= 1000 && out.capacity() <= 100_000);
        for _ in 0..99 {
            append(&mut out, &[1; 1000], 100_000, 0).unwrap();
        }
        assert_eq!(out.len(), 100_000);
        assert_eq!(out.capacity(), 100_000);
    }
}
