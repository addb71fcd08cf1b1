//! The hashes of the plain bundles a rewrite compresses, taken ahead on a thread of their own.
//!
//! A compressed bundle's header carries the MD5 of its bytes. Taken by the thread that
//! compresses the bundle (or one beside it), each MD5 runs alone at the speed of one chain of
//! dependent steps, a sixth of the time zstd takes; taken for all the bundles of a region at
//! once, several side by side in the lanes of the vector registers
//! ([`ccob::truncated_md5s`]), they cost a fraction of that. The hashing thread takes the
//! bundles in the order they are compressed in ([`Order`]), and a hash is asked for only
//! once its bundle is compressed, so that the threads compressing rarely wait for one: taken
//! largest first while a program's section is compressed from its start, the hashes of the
//! first bundles came last, and both threads compressing librocsolver waited for them as
//! long as the hashing of all 1.9 GB took.

use std::sync::{Condvar, Mutex, MutexGuard};

use crate::format::ccob;

/// The order the bundles are compressed in, which their hashing follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Order {
    /// The largest first (the containers of a region, [`crate::ops::support::largest_first`]).
    LargestFirst,
    /// As given (the containers of a program's section, from its start).
    AsGiven,
}

/// The hashes of the bundles being hashed ahead, or last hashed.
#[derive(Default)]
pub(super) struct HashedAhead {
    found: Mutex<Found>,
    ready: Condvar,
}

/// Where each bundle lies in memory (its address and length: a bundle is known by the very
/// slice it is compressed from) with its index, sorted; the hashes known; and whether the
/// hashing is under way (once it is over, a hash still missing never comes).
#[derive(Default)]
struct Found {
    places: Vec<(usize, usize, usize)>,
    hashes: Vec<Option<u64>>,
    hashing: bool,
}

impl HashedAhead {
    /// Nothing hashed yet.
    pub(super) fn new() -> Self {
        HashedAhead::default()
    }

    /// Hashes every one of `bundles` in `order`, making each hash known as soon as it is
    /// taken (to run on a thread of its own while the bundles are compressed).
    pub(super) fn hash_all(&self, bundles: &[&[u8]], order: Order) {
        let mut bundles = bundles.to_vec();
        if order == Order::LargestFirst {
            bundles.sort_by_key(|b| std::cmp::Reverse(b.len()));
        }
        {
            let mut found = self.lock();
            found.places = (bundles.iter().enumerate())
                .map(|(index, b)| (b.as_ptr() as usize, b.len(), index))
                .collect();
            found.places.sort_unstable();
            found.hashes = vec![None; bundles.len()];
            found.hashing = true;
        }
        /// Says the hashing is over however it ends, so that no one waits for a hash
        /// that will not come.
        struct Over<'a>(&'a HashedAhead);
        impl Drop for Over<'_> {
            fn drop(&mut self) {
                self.0.lock().hashing = false;
                self.0.ready.notify_all();
            }
        }
        let _over = Over(self);
        ccob::truncated_md5s(&bundles, |index, hash| {
            if let Some(slot) = self.lock().hashes.get_mut(index) {
                *slot = Some(hash);
            }
            self.ready.notify_all();
            // Hashed long before most are compressed, the bundles' pages would all be
            // resident at once; those a thread compressing reads are mapped again from the
            // page cache, a fault for many pages.
            if let Some(bundle) = bundles.get(index) {
                crate::io::release_mapped(bundle);
            }
        });
    }

    /// The hash of `bytes` when they are one of the bundles being hashed (the same slice),
    /// waiting for it to be taken; `None` for other bytes, or when the hashing ended without
    /// it.
    pub(super) fn get(&self, bytes: &[u8]) -> Option<u64> {
        let mut found = self.lock();
        let key = (bytes.as_ptr() as usize, bytes.len());
        let at = (found.places)
            .binary_search_by_key(&key, |&(start, len, _)| (start, len))
            .ok()?;
        let &(_, _, index) = found.places.get(at)?;
        loop {
            match found.hashes.get(index) {
                Some(Some(hash)) => return Some(*hash),
                Some(None) if found.hashing => {
                    found = self.ready.wait(found).unwrap_or_else(|e| e.into_inner());
                }
                _ => return None,
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Found> {
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
        let bundles = [
            &data[0..1000],
            &data[1000..150_000],
            &data[150_000..150_010],
        ];
        let ahead = HashedAhead::new();
        for order in [Order::LargestFirst, Order::AsGiven] {
            *ahead.lock() = Found::default();
            std::thread::scope(|scope| {
                scope.spawn(|| ahead.hash_all(&bundles, order));
                // Until the hashing starts, a bundle is not known; then its hash is waited for.
                while ahead.lock().places.is_empty() {
                    std::thread::yield_now();
                }
                for bundle in &bundles {
                    let hash = ahead.get(bundle);
                    assert_eq!(hash, Some(ccob::truncated_md5(bundle)), "{order:?}");
                }
            });
        }
        // The same start, another length; another start.
        assert_eq!(ahead.get(&data[0..999]), None);
        assert_eq!(ahead.get(&data[1..1000]), None);
    }

    #[test]
    fn once_the_hashing_is_over_a_missing_hash_is_not_waited_for() {
        let data = vec![1u8; 100];
        let ahead = HashedAhead::new();
        ahead.hash_all(&[&data[..]], Order::AsGiven);
        ahead.lock().hashes[0] = None;
        assert_eq!(ahead.get(&data), None);
    }
}
