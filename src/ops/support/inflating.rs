//! Inflating many compressed bundles at once, in parallel across bundles, within a memory
//! budget: a zstd decoder reading through a window holds another as large as its frame asks
//! (up to 128 MiB, zstd's default limit), so the streams in flight together may never ask for
//! more than [`BUDGET`], whatever the file or the number of threads. A large zstd stream
//! inflated whole is made at once in a mapped temporary file instead ([`mapped_room`]), which
//! needs no window: file pages the kernel writes out and drops, not memory the process holds.

use std::sync::{Arc, Condvar, Mutex};

use crate::format::ccob::INFLATE_IN_ROOM_FROM as ROOM_FROM;
use crate::format::ccob::{CompressedBundle, Decoding, Method, ZstdContext};
use crate::format::container::Room;
use crate::format::cuda_fatbin::{Compression, Stored};
use crate::format::error::Result;
use crate::format::stream::CompressedStream;
use crate::io::spill::MappedRoom;

/// The most the decoders in flight may hold at once.
pub const BUDGET: u64 = 192 << 20;

/// The largest window a zstd decoder accepts by default (`ZSTD_WINDOWLOG_LIMIT_DEFAULT`).
const ZSTD_WINDOW_LIMIT: u64 = 128 << 20;

/// The buffer [`CompressedBundle::inflate_prefix`] reads through, beside the decoder.
const READ_WINDOW: u64 = 1 << 20;

/// What inflating `bundle` holds at most: the decoder's window (never larger than the stream
/// it inflates, nor than zstd's limit; zlib's is 32 KiB) and the buffer read through.
pub fn memory_of(bundle: &CompressedBundle<'_>) -> u64 {
    match bundle.method {
        Method::Zstd => memory_of_zstd(bundle.uncompressed_size),
        Method::Zlib => (32 << 10) + READ_WINDOW,
    }
}

/// What inflating `bundle` whole (to check it, or to write all of it) holds at most: a large
/// zstd stream is inflated in room ([`mapped_room`]) with no window, and only the decoder's
/// own tables stay in memory; others as [`memory_of`] says. A damaged stream is inflated
/// again through a window to tell how, one at a time, beside what the budget counts.
pub fn memory_of_whole(bundle: &CompressedBundle<'_>) -> u64 {
    match bundle.method {
        Method::Zstd if bundle.uncompressed_size >= ROOM_FROM => DECODER,
        _ => memory_of(bundle),
    }
}

/// What inflating `stream` whole holds at most, as [`memory_of_whole`] says of a compressed
/// bundle (a compressed offload binary is read through a window).
pub fn memory_of_whole_stream(stream: &CompressedStream<'_>) -> u64 {
    match stream {
        CompressedStream::Bundle(bundle) => memory_of_whole(bundle),
        _ => memory_of_stream(stream),
    }
}

/// What a zstd decoder given all of its output at once holds: its tables (about 160 KiB),
/// counted generously.
const DECODER: u64 = 1 << 20;

/// Room for a large stream inflated whole, or a large compressed bundle made by a rewrite: a
/// mapped unnamed temporary file, so that the bundles on every thread are not held in memory.
pub fn mapped_room(capacity: usize) -> std::io::Result<Box<dyn Room>> {
    Ok(Box::new(MappedRoom::new(capacity)?))
}

impl Room for MappedRoom {
    fn space(&mut self) -> &mut [u8] {
        MappedRoom::space(self)
    }

    fn keep(&mut self, len: usize) {
        MappedRoom::keep(self, len);
    }

    fn bytes(&self) -> &[u8] {
        MappedRoom::bytes(self)
    }

    fn file(&self) -> Option<&std::fs::File> {
        Some(MappedRoom::file(self))
    }
}

/// What inflating `stream`, whole or in part, with room from a [`Budget`] holds at most: a
/// large zstd compressed bundle is inflated into room either way (as far as it is read), as
/// [`memory_of_whole`] says; others through a window, as [`memory_of`] says.
pub fn memory_of_stream(stream: &CompressedStream<'_>) -> u64 {
    if let CompressedStream::Bundle(bundle) = stream {
        return memory_of_whole(bundle);
    }
    if stream.is_zstd() {
        memory_of_zstd(stream.inflated_size())
    } else {
        (32 << 10) + READ_WINDOW
    }
}

/// What inflating a zstd stream of `size` bytes (a compressed bundle's, or a code object
/// stored compressed in a `.kpack` archive) holds at most.
pub fn memory_of_zstd(size: u64) -> u64 {
    size.min(ZSTD_WINDOW_LIMIT) + READ_WINDOW
}

/// What inflating the payload of a CUDA fat binary's entry, stored as `stored`, holds at
/// most: a zstd stream's as [`memory_of_zstd`]; an LZ stream's 64 KiB of history, the window
/// inflated beyond it and a match of up to a window; nothing for a plain one.
pub fn memory_of_cuda(stored: &Stored) -> u64 {
    match stored.compression {
        Compression::Zstd => memory_of_zstd(stored.inflated_size),
        Compression::Lz => 3 << 20,
        Compression::None => 0,
    }
}

/// Memory handed out to the streams in flight, and the zstd decoders kept between streams:
/// together never more than [`BUDGET`]. A decoder kept holds the window of the largest stream
/// it inflated; reused, it inflates the next stream without allocating (and faulting in) a
/// window again, which is most of what a fresh decoder costs beyond the inflation itself.
pub struct Budget {
    state: Mutex<State>,
    freed: Condvar,
    /// Room given back by the large streams inflated in it, for the next: its pages stay
    /// mapped and are written again rather than faulted in anew (at most one per stream in
    /// flight, page cache, not memory the process holds).
    rooms: Arc<Mutex<Vec<MappedRoom>>>,
}

/// Room of a [`Budget`] lent to one stream, given back when dropped.
struct Lent {
    room: Option<MappedRoom>,
    rooms: Arc<Mutex<Vec<MappedRoom>>>,
}

impl Room for Lent {
    fn space(&mut self) -> &mut [u8] {
        self.room
            .as_mut()
            .map(MappedRoom::space)
            .unwrap_or_default()
    }

    fn keep(&mut self, len: usize) {
        if let Some(room) = &mut self.room {
            room.keep(len);
        }
    }

    fn bytes(&self) -> &[u8] {
        self.room
            .as_ref()
            .map(MappedRoom::bytes)
            .unwrap_or_default()
    }

    fn file(&self) -> Option<&std::fs::File> {
        self.room.as_ref().map(MappedRoom::file)
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        if let Some(room) = self.room.take() {
            self.rooms
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(room);
        }
    }
}

struct State {
    /// What the streams in flight and the idle decoders hold.
    used: u64,
    /// Decoders not in use, with what each holds.
    idle: Vec<(u64, ZstdContext)>,
}

impl Default for Budget {
    fn default() -> Self {
        Budget::new()
    }
}

impl Budget {
    /// An untouched budget.
    pub fn new() -> Budget {
        Budget {
            state: Mutex::new(State {
                used: 0,
                idle: Vec::new(),
            }),
            freed: Condvar::new(),
            rooms: Arc::default(),
        }
    }

    /// Room of at least `capacity` bytes, lent until it is dropped: the smallest given back
    /// by an earlier stream or bundle that is large enough, else the largest grown, else new
    /// (so that no more are kept than are in use at once). Room used again keeps its pages
    /// mapped: written again, they are not faulted in anew.
    pub fn lend(&self, capacity: usize) -> std::io::Result<Box<dyn Room>> {
        let mut rooms = self.rooms.lock().unwrap_or_else(|e| e.into_inner());
        let size = |room: &mut MappedRoom| room.space().len();
        let smallest_fitting = (rooms.iter_mut().enumerate())
            .map(|(k, room)| (size(room), k))
            .filter(|&(len, _)| len >= capacity)
            .min();
        let largest = (rooms.iter_mut().enumerate())
            .map(|(k, room)| (size(room), k))
            .max();
        let room = match smallest_fitting.or(largest) {
            Some((_, k)) => {
                let mut room = rooms.swap_remove(k);
                drop(rooms);
                room.grow(capacity)?;
                room
            }
            None => {
                drop(rooms);
                MappedRoom::new(capacity)?
            }
        };
        Ok(Box::new(Lent {
            room: Some(room),
            rooms: Arc::clone(&self.rooms),
        }))
    }

    /// Runs `work`, which inflates a stream holding up to `bytes` with the decoder it is
    /// given (and room for a large zstd stream inflated whole), once that much of the budget is free (at once when nothing else runs: a single
    /// stream larger than the budget still runs, alone).
    pub fn run<T>(&self, bytes: u64, work: impl FnOnce(Decoding<'_>) -> T) -> T {
        let bytes = bytes.min(BUDGET);
        let (held, mut context) = self.take(bytes);
        let lend = |capacity| self.lend(capacity);
        let result = work(Decoding::Into(&mut context, &lend));
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.idle.push((held, context));
        self.freed.notify_all();
        result
    }

    /// A decoder for a stream holding `bytes`, and what it holds then: an idle one when it
    /// fits, else a new one; idle decoders are dropped to make room, and the caller waits
    /// while the streams in flight hold too much.
    fn take(&self, bytes: u64) -> (u64, ZstdContext) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            // The largest idle decoder first: its window may already be large enough.
            state.idle.sort_by_key(|(held, _)| *held);
            if let Some(&(held, _)) = state.idle.last() {
                let grown = held.max(bytes);
                if state.used - held + grown <= BUDGET {
                    if let Some((held, context)) = state.idle.pop() {
                        state.used = state.used - held + grown;
                        return (grown, context);
                    }
                }
                let (freed, _) = state.idle.remove(0);
                state.used -= freed;
                continue;
            }
            if state.used + bytes <= BUDGET || state.used == 0 {
                state.used += bytes;
                return (bytes, ZstdContext::create());
            }
            state = self.freed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// Inflates `stream` up to the end of the furthest of `ranges` (positions in what it
/// inflates to), within `limit`, with the decoder `decoding` says, and hands `each` the bytes
/// of every range as they arrive, in order, with the range's index: never more than a window
/// of the stream is held.
pub fn each_range(
    stream: &CompressedStream<'_>,
    limit: u64,
    ranges: &[(u64, u64)],
    decoding: Decoding<'_>,
    mut each: impl FnMut(usize, &[u8]) -> Result<()>,
) -> Result<()> {
    let end = ranges.iter().map(|r| r.1).max().unwrap_or(0);
    if end == 0 {
        return Ok(());
    }
    stream.inflate_prefix(limit, end, decoding, |position, piece| {
        let piece_end = position + piece.len() as u64;
        for (k, &(start, end)) in ranges.iter().enumerate() {
            let (from, to) = (start.max(position), end.min(piece_end));
            if from < to {
                // Both within the piece, whose length is a usize.
                let bytes = &piece[(from - position) as usize..(to - position) as usize];
                each(k, bytes)?;
            }
        }
        Ok(())
    })
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;
    use crate::format::error::ErrorKind;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn each_range_gets_its_bytes_whatever_the_windows() {
        use crate::format::ccob::{compress, CompressOptions};
        // Three windows and more, so that ranges straddle the pieces.
        let data: Vec<u8> = (0..(3 << 20) + 12345u32).map(|i| (i % 251) as u8).collect();
        let (ccob, _) = compress(&data, &CompressOptions::default()).unwrap();
        let bundle = CompressedStream::Bundle(CompressedBundle::parse(&ccob).unwrap().unwrap());
        let ranges = [(5, 6), ((1 << 20) - 3, (2 << 20) + 7), (0, 0), (100, 200)];
        let mut got = vec![Vec::new(); ranges.len()];
        each_range(&bundle, u64::MAX, &ranges, Decoding::Fresh, |k, bytes| {
            got[k].extend_from_slice(bytes);
            Ok(())
        })
        .unwrap();
        for (range, bytes) in ranges.iter().zip(&got) {
            assert_eq!(bytes.as_slice(), &data[range.0 as usize..range.1 as usize]);
        }
        // To the end: the stream is checked, and a wrong hash is an error.
        let mut bad = ccob.clone();
        bad[16] ^= 1;
        let bad = CompressedStream::Bundle(CompressedBundle::parse(&bad).unwrap().unwrap());
        let end = data.len() as u64;
        let mut context = ZstdContext::create();
        for _ in 0..2 {
            let reusing = Decoding::Reusing(&mut context);
            assert!(each_range(&bad, u64::MAX, &[(end - 1, end)], reusing, |_, _| Ok(())).is_err());
            let reusing = Decoding::Reusing(&mut context);
            assert!(each_range(&bad, u64::MAX, &[(0, end - 1)], reusing, |_, _| Ok(())).is_ok());
        }
    }

    #[test]
    fn a_large_stream_read_in_part_is_inflated_into_room_with_the_same_bytes_and_errors() {
        use crate::format::ccob::{compress, CompressOptions};
        // Past the size from which streams go into room, in several frames' worth of input
        // steps, read in part by two threads sharing one budget again and again, so that
        // contexts left inside a frame are given to the next stream.
        let data = varied((9 << 20) + 4321, 7);
        let (ccob, _) = compress(&data, &CompressOptions::default()).unwrap();
        let bundle = CompressedStream::Bundle(CompressedBundle::parse(&ccob).unwrap().unwrap());
        assert_eq!(memory_of_stream(&bundle), DECODER);
        let budget = Budget::new();
        let ranges: Vec<[(u64, u64); 2]> = (1..24u64)
            .map(|k| {
                [
                    (k * 1000, k * 1000 + 77),
                    (k * 300_001, (k * 400_009) % (9 << 20)),
                ]
            })
            .collect();
        let read = |pair: &[(u64, u64); 2]| {
            let mut got = vec![Vec::new(); 2];
            budget.run(memory_of_stream(&bundle), |decoding| {
                each_range(&bundle, u64::MAX, pair, decoding, |k, bytes| {
                    got[k].extend_from_slice(bytes);
                    Ok(())
                })
            })?;
            Ok::<_, crate::format::Error>(got)
        };
        let got: Vec<_> = std::thread::scope(|scope| {
            let halves = ranges.split_at(ranges.len() / 2);
            let one = scope.spawn(|| halves.0.iter().map(read).collect::<Vec<_>>());
            let two = scope.spawn(|| halves.1.iter().map(read).collect::<Vec<_>>());
            let mut all = one.join().unwrap();
            all.extend(two.join().unwrap());
            all
        });
        for (pair, got) in ranges.iter().zip(got) {
            let got = got.unwrap();
            for (&(start, end), bytes) in pair.iter().zip(got) {
                let want = data.get(start as usize..end as usize).unwrap_or_default();
                assert_eq!(bytes, want, "{start}..{end}");
            }
        }
        // Damage before the end asked for: the error a window gives.
        let mut bad = ccob.clone();
        let middle = bad.len() / 2;
        bad[middle..middle + (64 << 10)].fill(0xff);
        let bad = CompressedStream::Bundle(CompressedBundle::parse(&bad).unwrap().unwrap());
        let far = [(0, (9 << 20) - 1)];
        let windowed = each_range(&bad, u64::MAX, &far, Decoding::Fresh, |_, _| Ok(()));
        let roomed = budget.run(memory_of_stream(&bad), |decoding| {
            each_range(&bad, u64::MAX, &far, decoding, |_, _| Ok(()))
        });
        assert!(windowed.is_err());
        assert_eq!(
            format!("{:?}", roomed.unwrap_err()),
            format!("{:?}", windowed.unwrap_err())
        );
    }

    /// Bytes that compress a little and differ from one `seed` to the next: `len` of them.
    fn varied(len: usize, seed: u32) -> Vec<u8> {
        let mut x = seed.wrapping_mul(2_654_435_761) | 1;
        (0..len)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                if i % 3 == 0 {
                    (x >> 24) as u8
                } else {
                    (i / 7) as u8
                }
            })
            .collect()
    }

    /// A compressed bundle (version 3) declaring `declared` bytes, with the MD5 of `plain`,
    /// whose stream is `plain` compressed in one frame.
    fn bundle_of(plain: &[u8], declared: u64) -> Vec<u8> {
        use crate::format::ccob::{header, truncated_md5, CompressOptions};
        let stream = zstd::bulk::compress(plain, 3).unwrap();
        let options = CompressOptions {
            version: 3,
            ..CompressOptions::default()
        };
        let total = 32 + stream.len() as u64;
        let mut bytes = header(&options, total, declared, truncated_md5(plain)).unwrap();
        bytes.extend_from_slice(&stream);
        bytes
    }

    /// What inflating `ccob` whole gives, and the error, through `budget` (in room when large)
    /// or through a window.
    fn inflated(ccob: &[u8], limit: u64, budget: Option<&Budget>) -> Result<Vec<u8>> {
        let bundle = CompressedBundle::parse(ccob)?.unwrap();
        let end = bundle.uncompressed_size;
        let mut got = Vec::new();
        let mut work = |decoding: Decoding<'_>| {
            bundle.inflate_prefix(limit, end, decoding, |position, piece| {
                assert_eq!(position, got.len() as u64);
                got.extend_from_slice(piece);
                Ok(())
            })
        };
        match budget {
            Some(budget) => budget.run(memory_of_whole(&bundle), work)?,
            None => work(Decoding::Fresh)?,
        }
        Ok(got)
    }

    #[test]
    fn large_streams_inflate_in_room_to_the_same_bytes_on_many_threads() {
        let sizes = [
            ROOM_FROM as usize,
            (ROOM_FROM as usize) + 4097,
            9 << 20,
            1 << 20,
        ];
        let plains: Vec<Vec<u8>> = (0..sizes.len())
            .map(|k| varied(sizes[k], k as u32))
            .collect();
        let bundles: Vec<Vec<u8>> = plains
            .iter()
            .map(|p| bundle_of(p, p.len() as u64))
            .collect();
        for (bundle, plain) in bundles.iter().zip(&plains) {
            assert_eq!(&inflated(bundle, u64::MAX, None).unwrap(), plain);
        }
        let budget = Budget::new();
        std::thread::scope(|s| {
            for thread in 0..8 {
                let (budget, bundles, plains) = (&budget, &bundles, &plains);
                s.spawn(move || {
                    for round in 0..3 {
                        let k = (thread + round) % bundles.len();
                        let got = inflated(&bundles[k], u64::MAX, Some(budget)).unwrap();
                        assert!(
                            got == plains[k],
                            "thread {thread}, round {round}, bundle {k}"
                        );
                    }
                });
            }
        });
    }

    #[test]
    fn large_streams_damaged_or_too_large_are_refused_as_through_a_window() {
        let plain = varied(6 << 20, 7);
        let sound = bundle_of(&plain, plain.len() as u64);
        let mut cases: Vec<(&str, Vec<u8>, u64)> = Vec::new();
        // A byte changed in the stream, and the stream cut short.
        let mut damaged = sound.clone();
        let middle = damaged.len() / 2;
        damaged[middle] ^= 0x55;
        cases.push(("damaged", damaged, u64::MAX));
        let mut cut = sound.clone();
        cut.truncate(sound.len() - 1000);
        let total = (cut.len() as u64).to_le_bytes();
        cut[8..16].copy_from_slice(&total);
        cases.push(("cut short", cut, u64::MAX));
        // Another hash.
        let mut hashed = sound.clone();
        hashed[24] ^= 1;
        cases.push(("another hash", hashed, u64::MAX));
        // Declaring less than it inflates to, within the limit and past it.
        cases.push(("declares less", bundle_of(&plain, 5 << 20), u64::MAX));
        cases.push((
            "past the limit",
            bundle_of(&plain, 5 << 20),
            (5 << 20) + 100,
        ));
        // Declaring far more than it inflates to, and more than the limit.
        cases.push(("declares more", bundle_of(&plain, 15 << 30), 16 << 30));
        cases.push((
            "declares past the limit",
            bundle_of(&plain, 1 << 40),
            16 << 30,
        ));
        let budget = Budget::new();
        for (what, ccob, limit) in &cases {
            let windowed = inflated(ccob, *limit, None).unwrap_err();
            let in_room = inflated(ccob, *limit, Some(&budget)).unwrap_err();
            assert_eq!(in_room.to_string(), windowed.to_string(), "{what}");
        }
        let past = inflated(&cases[4].1, cases[4].2, Some(&budget)).unwrap_err();
        assert!(matches!(past.kind, ErrorKind::TooLarge { .. }), "{past}");
    }

    #[test]
    fn work_in_flight_never_holds_more_than_the_budget() {
        let budget = Budget::new();
        let held = AtomicU64::new(0);
        let most = AtomicU64::new(0);
        let sizes = [
            BUDGET / 2 + 1,
            BUDGET / 3,
            BUDGET,
            BUDGET * 4,
            1 << 20,
            BUDGET / 2,
        ];
        std::thread::scope(|s| {
            for size in sizes.iter().cycle().take(24) {
                let (budget, held, most) = (&budget, &held, &most);
                s.spawn(move || {
                    let weight = (*size).min(BUDGET);
                    budget.run(*size, |_| {
                        let now = held.fetch_add(weight, Ordering::SeqCst) + weight;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(std::time::Duration::from_millis(2));
                        held.fetch_sub(weight, Ordering::SeqCst);
                    })
                });
            }
        });
        assert!(most.load(Ordering::SeqCst) <= BUDGET);
        assert_eq!(held.load(Ordering::SeqCst), 0);
    }
}
