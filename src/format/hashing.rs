//! The MD5 hash of what a compressed bundle's stream inflates to, taken beside the inflating:
//! for a large stream, on a thread of its own, so that hashing one window overlaps inflating
//! (and writing) the next. MD5 runs at about 600 MB/s on one core, slower than zstd inflates;
//! on the inflating thread it would be most of the time a check of a stream takes.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use crate::format::md5::Md5;

/// Streams that declare at least this many bytes are hashed on a thread of their own.
pub(crate) const ASIDE_FROM: u64 = 8 << 20;

/// Windows in flight between the inflating thread and the hashing one: one being inflated into,
/// one being hashed, one waiting.
const WINDOWS: usize = 3;

/// Where the windows of an inflating stream go to be hashed.
pub(crate) trait Hashing {
    /// A window to inflate the next piece into (all of it is the window's length).
    fn window(&mut self) -> Vec<u8>;
    /// The first `len` bytes of `window` are the next piece of the stream: hash them. The
    /// window comes back through a later [`Hashing::window`].
    fn hash(&mut self, window: Vec<u8>, len: usize);
}

/// Hashing on the inflating thread, through one window.
pub(crate) struct HashHere {
    md5: Md5,
    window: Vec<u8>,
}

impl HashHere {
    /// Hashing through a window of `len` bytes.
    pub(crate) fn new(len: usize) -> HashHere {
        HashHere {
            md5: Md5::new(),
            window: vec![0; len],
        }
    }

    /// The digest of every piece hashed.
    pub(crate) fn finish(self) -> [u8; 16] {
        self.md5.finalize()
    }
}

impl Hashing for HashHere {
    fn window(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.window)
    }

    fn hash(&mut self, window: Vec<u8>, len: usize) {
        self.md5.update(window.get(..len).unwrap_or(&window));
        self.window = window;
    }
}

/// Hashing on another thread: windows go there full and come back empty.
struct HashAside {
    pieces: SyncSender<(Vec<u8>, usize)>,
    free: Receiver<Vec<u8>>,
    made: usize,
    len: usize,
}

impl Hashing for HashAside {
    fn window(&mut self) -> Vec<u8> {
        if let Ok(window) = self.free.try_recv() {
            return window;
        }
        if self.made < WINDOWS {
            self.made += 1;
            return vec![0; self.len];
        }
        // Waits for the hashing thread to give one back; should it be gone, a new one.
        self.free.recv().unwrap_or_else(|_| vec![0; self.len])
    }

    fn hash(&mut self, window: Vec<u8>, len: usize) {
        // The hashing thread ends only once this side is dropped.
        let _ = self.pieces.send((window, len));
    }
}

/// Runs `inflate` with windows of `len` bytes hashed on a thread of their own, and returns what
/// it returns with the digest of every piece it handed over. The digest is `None` when the
/// hashing thread panicked.
pub(crate) fn aside<T>(
    len: usize,
    inflate: impl FnOnce(&mut dyn Hashing) -> T,
) -> (T, Option<[u8; 16]>) {
    std::thread::scope(|scope| {
        let (pieces, to_hash) = sync_channel::<(Vec<u8>, usize)>(WINDOWS);
        let (give_back, free) = sync_channel::<Vec<u8>>(WINDOWS);
        let hasher = scope.spawn(move || {
            let mut md5 = Md5::new();
            for (window, len) in to_hash {
                md5.update(window.get(..len).unwrap_or(&window));
                let _ = give_back.send(window);
            }
            md5.finalize()
        });
        let mut hashing = HashAside {
            pieces,
            free,
            made: 0,
            len,
        };
        let result = inflate(&mut hashing);
        drop(hashing);
        (result, hasher.join().ok())
    })
}

/// Hands `keep` the pieces of `bytes` (a stream inflated whole), a window at a time, while
/// they are hashed: on a thread of their own when they are [`ASIDE_FROM`] or more and `keep`
/// has work to do with them. Returns what `keep` said (its first error stops it) and the
/// digest of all of `bytes`, `None` when the hashing thread panicked.
pub(crate) fn beside<E>(
    bytes: &[u8],
    mut keep: impl FnMut(&[u8]) -> Result<(), E>,
) -> (Result<(), E>, Option<[u8; 16]>) {
    let mut pieces = bytes.chunks(crate::format::inflate::WINDOW);
    if (bytes.len() as u64) < ASIDE_FROM {
        return (pieces.try_for_each(keep), Some(Md5::digest(bytes)));
    }
    std::thread::scope(|scope| {
        let hasher = scope.spawn(|| Md5::digest(bytes));
        let kept = pieces.try_for_each(&mut keep);
        (kept, hasher.join().ok())
    })
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// Hands `data` over in pieces of `piece` bytes through `hashing`, as an inflating stream
    /// does.
    fn feed(hashing: &mut dyn Hashing, data: &[u8], piece: usize) {
        for chunk in data.chunks(piece) {
            let mut window = hashing.window();
            window[..chunk.len()].copy_from_slice(chunk);
            hashing.hash(window, chunk.len());
        }
    }

    #[test]
    fn both_ways_give_the_digest_of_the_whole() {
        let data: Vec<u8> = (0..3_000_017u32)
            .map(|i| (i * 7 + i / 251).to_le_bytes()[0])
            .collect();
        for piece in [1, 63, 64, 4096, 1 << 20] {
            // Each piece comes in a window of its own: small pieces in small windows, some
            // 20,000 of them rather than millions, each size still crossing MD5's blocks.
            let (window, len) = if piece < 4096 {
                (4096, piece * 20_000 + 17)
            } else {
                (1 << 20, data.len())
            };
            let data = &data[..len];
            let whole = Md5::digest(data);
            let mut here = HashHere::new(window);
            feed(&mut here, data, piece);
            assert_eq!(here.finish(), whole, "here, pieces of {piece}");
            let ((), digest) = aside(window, |hashing| feed(hashing, data, piece));
            assert_eq!(digest, Some(whole), "aside, pieces of {piece}");
        }
    }

    #[test]
    fn no_more_windows_than_three_are_made() {
        let ((), digest) = aside(16, |hashing| {
            let windows: Vec<Vec<u8>> = (0..3).map(|_| hashing.window()).collect();
            for window in windows {
                hashing.hash(window, 0);
            }
            // A fourth comes back from the hashing thread rather than being made.
            let again = hashing.window();
            assert_eq!(again.len(), 16);
            hashing.hash(again, 16);
        });
        assert_eq!(digest, Some(Md5::digest(&[0u8; 16])));
    }
}
