//! The hashes of the plain bundles a rewrite compresses, taken ahead on a thread of their own.
//!
//! A compressed bundle's header carries the MD5 of its bytes. Taken by the thread that
//! compresses the bundle (or one beside it), each MD5 runs alone at the speed of one chain of
//! dependent steps, a sixth of the time zstd takes; taken for all the bundles of a region at
//! once, several side by side in the lanes of the vector registers
//! ([`ccob::truncated_md5s`]), they cost a fraction of that. The hashing thread takes the
//! bundles largest first, the order they are compressed in, and a hash is asked for only
//! once its bundle is compressed, so that the threads compressing rarely wait for one.

use std::sync::{Condvar, Mutex};

use crate::format::ccob;

/// Bundles whose hashes are taken ahead, and the hashes found so far.
pub(super) struct HashedAhead<'d> {
    /// The bundles' bytes, largest first.
    bundles: Vec<&'d [u8]>,
    /// Where each bundle starts in memory, with its index in `bundles`, sorted: a bundle is
    /// known by the very slice it is compressed from.
    starts: Vec<(usize, usize)>,
    found: Mutex<Found>,
    ready: Condvar,
}

/// The hashes known, and whether the hashing thread is done (then a hash still missing never
/// comes: it is taken by whoever asks).
struct Found {
    hashes: Vec<Option<u64>>,
    done: bool,
}

impl<'d> HashedAhead<'d> {
    /// Hashes to be taken of `bundles` (by [`HashedAhead::hash_all`]).
    pub(super) fn new(mut bundles: Vec<&'d [u8]>) -> Self {
        bundles.sort_by_key(|b| std::cmp::Reverse(b.len()));
        let mut starts: Vec<(usize, usize)> = (bundles.iter().enumerate())
            .map(|(index, b)| (b.as_ptr() as usize, index))
            .collect();
        starts.sort_unstable();
        let hashes = vec![None; bundles.len()];
        HashedAhead {
            bundles,
            starts,
            found: Mutex::new(Found {
                hashes,
                done: false,
            }),
            ready: Condvar::new(),
        }
    }

    /// Whether there is nothing to hash.
    pub(super) fn is_empty(&self) -> bool {
        self.bundles.is_empty()
    }

    /// Hashes every bundle, making each hash known as soon as it is taken (to run on a thread
    /// of its own while the bundles are compressed).
    pub(super) fn hash_all(&self) {
        /// Says the hashing is over however it ends, so that no one waits for a hash
        /// that will not come.
        struct Over<'a, 'd>(&'a HashedAhead<'d>);
        impl Drop for Over<'_, '_> {
            fn drop(&mut self) {
                self.0.lock().done = true;
                self.0.ready.notify_all();
            }
        }
        let _over = Over(self);
        ccob::truncated_md5s(&self.bundles, |index, hash| {
            if let Some(slot) = self.lock().hashes.get_mut(index) {
                *slot = Some(hash);
            }
            self.ready.notify_all();
        });
    }

    /// The hash of `bytes` when they are one of the bundles (the same slice), waiting for it
    /// to be taken; `None` for other bytes, or when the hashing ended without it.
    pub(super) fn get(&self, bytes: &[u8]) -> Option<u64> {
        let at = self
            .starts
            .binary_search_by_key(&(bytes.as_ptr() as usize), |&(start, _)| start)
            .ok()?;
        let &(_, index) = self.starts.get(at)?;
        if self.bundles.get(index)?.len() != bytes.len() {
            return None;
        }
        let mut found = self.lock();
        loop {
            match found.hashes.get(index) {
                Some(Some(hash)) => return Some(*hash),
                Some(None) if !found.done => {
                    found = self.ready.wait(found).unwrap_or_else(|e| e.into_inner());
                }
                _ => return None,
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Found> {
        self.found.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn each_bundle_gets_its_own_hash_and_other_bytes_none() {
        let data: Vec<u8> = (0..200_000u32).map(|k| (k * 7 + k / 13) as u8).collect();
        let bundles = vec![
            &data[0..1000],
            &data[1000..150_000],
            &data[150_000..150_010],
        ];
        let ahead = HashedAhead::new(bundles.clone());
        std::thread::scope(|scope| {
            scope.spawn(|| ahead.hash_all());
            for bundle in &bundles {
                assert_eq!(ahead.get(bundle), Some(ccob::truncated_md5(bundle)));
            }
        });
        // The same start, another length; another start.
        assert_eq!(ahead.get(&data[0..999]), None);
        assert_eq!(ahead.get(&data[1..1000]), None);
    }

    #[test]
    fn once_the_hashing_is_over_a_missing_hash_is_not_waited_for() {
        let data = vec![1u8; 100];
        let ahead = HashedAhead::new(vec![&data[..]]);
        ahead.lock().done = true;
        assert_eq!(ahead.get(&data), None);
    }
}
