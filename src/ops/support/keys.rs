//! A map, and a set, of 128-bit keys (hashes of names and paths) whose entries are not the
//! process's own memory once they are many: what a command remembers of each file of a
//! tree (that a name was given, that a library was checked) without holding it on the heap.
//!
//! The entries are an open-addressing table (linear probing, at most three quarters full),
//! held in memory while it is small ([`MEMORY_SLOTS`]), then in an unnamed temporary file,
//! mapped: its pages are the page cache's, which the kernel may write out and drop, not
//! anonymous memory. The table grows by doubling, each time into a new file (the entries
//! moved over, the old file gone). The file's blocks are reserved when it is made, so that a
//! full disk is an error then, not a fault when a page is written later.

// What the commands do not use yet is there for the tests and the crate's internals.
#![cfg_attr(not(any(test, feature = "internals")), allow(dead_code))]

use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The bytes of one slot: the key (16, little-endian), then a word (8, little-endian): 0 in
/// an empty slot, else the value plus one. No key is kept out as a mark of an empty slot.
const SLOT: usize = 24;

/// The slots of a new table.
const FIRST_SLOTS: usize = 64;

/// The slots of the largest table held in memory (48 KiB): a larger one is in a file.
pub const MEMORY_SLOTS: usize = 2048;

/// The largest value a [`KeyMap`] holds.
pub const MAX_VALUE: u64 = u64::MAX - 1;

/// A map of 128-bit keys to values of up to [`MAX_VALUE`] (see the module's comment).
pub struct KeyMap {
    slots: Slots,
    /// How many keys it holds.
    len: usize,
    /// Where its temporary files are made: the system's folder for them when `None`.
    folder: Option<PathBuf>,
}

/// Where the slots are.
enum Slots {
    /// In memory, while they are few.
    Memory(Vec<u8>),
    /// In an unnamed temporary file, mapped (the map keeps the file, which goes with it).
    Mapped(memmap2::MmapMut),
}

impl Default for KeyMap {
    fn default() -> Self {
        KeyMap::new()
    }
}

impl std::fmt::Debug for KeyMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let place = match self.slots {
            Slots::Memory(_) => "in memory",
            Slots::Mapped(_) => "in a file",
        };
        write!(
            f,
            "KeyMap({} keys, {} slots {place})",
            self.len,
            self.slots()
        )
    }
}

impl KeyMap {
    /// An empty map, whose temporary files go to the system's folder for them.
    pub fn new() -> KeyMap {
        KeyMap {
            slots: Slots::Memory(vec![0; FIRST_SLOTS * SLOT]),
            len: 0,
            folder: None,
        }
    }

    /// An empty map with room for `keys` keys before it grows: in a temporary file at once
    /// when that is too many for memory, so that a file that cannot be made is an error
    /// before anything is done, not in the middle of it.
    pub fn with_capacity(keys: usize) -> io::Result<KeyMap> {
        KeyMap::new().sized(keys)
    }

    /// An empty map whose temporary files are made in `folder`, with room for `keys` keys
    /// (see [`KeyMap::with_capacity`]).
    pub fn in_folder(folder: &Path, keys: usize) -> io::Result<KeyMap> {
        let map = KeyMap {
            folder: Some(folder.to_path_buf()),
            ..KeyMap::new()
        };
        map.sized(keys)
    }

    /// This empty map with room for `keys` keys.
    fn sized(mut self, keys: usize) -> io::Result<KeyMap> {
        let mut slots = FIRST_SLOTS;
        while keys.saturating_mul(4) > slots.saturating_mul(3) && slots < usize::MAX / 4 {
            slots *= 2;
        }
        if slots > MEMORY_SLOTS {
            self.slots = self.mapped(slots)?;
        } else if slots > FIRST_SLOTS {
            self.slots = Slots::Memory(vec![0; slots * SLOT]);
        }
        Ok(self)
    }

    /// How many keys it holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The value of `key`, if it holds it.
    pub fn get(&self, key: u128) -> Option<u64> {
        let (_, word) = self.find(key);
        word.checked_sub(1)
    }

    /// Whether it holds `key`.
    pub fn contains(&self, key: u128) -> bool {
        self.get(key).is_some()
    }

    /// Gives `key` the value `value`: the value it had before, if it had one. An error when
    /// `value` is over [`MAX_VALUE`], or when the table grows and its new temporary file
    /// cannot be made, sized or mapped; the map is as it was then.
    pub fn insert(&mut self, key: u128, value: u64) -> io::Result<Option<u64>> {
        if value > MAX_VALUE {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a table's value {value} is over {MAX_VALUE}"),
            ));
        }
        let (mut at, word) = self.find(key);
        if let Some(old) = word.checked_sub(1) {
            self.put(at, key, value + 1);
            return Ok(Some(old));
        }
        // At most three quarters full, so that a search soon meets an empty slot.
        if (self.len + 1) * 4 > self.slots() * 3 {
            self.grow()?;
            at = self.find(key).0;
        }
        self.put(at, key, value + 1);
        self.len += 1;
        Ok(None)
    }

    /// The number of slots (a power of two).
    fn slots(&self) -> usize {
        self.bytes().len() / SLOT
    }

    /// Every slot's bytes.
    fn bytes(&self) -> &[u8] {
        match &self.slots {
            Slots::Memory(bytes) => bytes,
            Slots::Mapped(map) => map,
        }
    }

    /// The slot of `key`, or the empty slot where it would go, and that slot's word.
    fn find(&self, key: u128) -> (usize, u64) {
        let bytes = self.bytes();
        let mask = bytes.len() / SLOT - 1;
        let mut at = home(key) & mask;
        loop {
            let (held, word) = read(bytes, at);
            if word == 0 || held == key {
                return (at, word);
            }
            at = (at + 1) & mask;
        }
    }

    /// Writes `key` and `word` into slot `at`.
    fn put(&mut self, at: usize, key: u128, word: u64) {
        let bytes = match &mut self.slots {
            Slots::Memory(bytes) => bytes.as_mut_slice(),
            Slots::Mapped(map) => map.as_mut(),
        };
        write(bytes, at, key, word);
    }

    /// Doubles the table: in memory while it stays small, else in a new temporary file.
    fn grow(&mut self) -> io::Result<()> {
        let slots = self.slots() * 2;
        let mut grown = if slots <= MEMORY_SLOTS {
            Slots::Memory(vec![0; slots * SLOT])
        } else {
            self.mapped(slots)?
        };
        let target = match &mut grown {
            Slots::Memory(bytes) => bytes.as_mut_slice(),
            Slots::Mapped(map) => map.as_mut(),
        };
        let mask = slots - 1;
        for slot in self.bytes().chunks_exact(SLOT) {
            let (key, word) = read(slot, 0);
            if word == 0 {
                continue;
            }
            let mut at = home(key) & mask;
            while read(target, at).1 != 0 {
                at = (at + 1) & mask;
            }
            write(target, at, key, word);
        }
        self.slots = grown;
        Ok(())
    }

    /// `slots` empty slots in a new unnamed temporary file, its blocks reserved, mapped.
    fn mapped(&self, slots: usize) -> io::Result<Slots> {
        let folder = self.folder.clone().unwrap_or_else(std::env::temp_dir);
        let size = slots * SLOT;
        let made = tempfile::tempfile_in(&folder).and_then(|file| {
            let len = libc::off_t::try_from(size).map_err(io::Error::other)?;
            // SAFETY: the descriptor is the file's, open for writing; no memory is passed.
            let failed = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) };
            if failed != 0 {
                return Err(io::Error::from_raw_os_error(failed));
            }
            // SAFETY: the file is unnamed and this process's alone, so nothing else changes
            // or truncates it while it is mapped; it keeps its size while the map lives.
            let map = unsafe { memmap2::MmapMut::map_mut(&file) }?;
            Ok(Slots::Mapped(map))
        });
        made.map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "a temporary file of {size} bytes in '{}' for a table of {} keys: {}",
                    crate::io::shown(&folder),
                    self.len,
                    crate::io::io_message(&e)
                ),
            )
        })
    }
}

/// Where the search for `key` starts, before it is cut to the table's size: a hash of the
/// whole key, so that keys alike in some of their bits spread as well as any.
fn home(key: u128) -> usize {
    xxhash_rust::xxh3::xxh3_64(&key.to_le_bytes()) as usize
}

/// The key and word of slot `at` of `bytes` (an empty slot where there is none).
fn read(bytes: &[u8], at: usize) -> (u128, u64) {
    let slot = bytes.get(at * SLOT..).and_then(|s| s.first_chunk::<SLOT>());
    let Some(slot) = slot else {
        return (0, 0);
    };
    let (key, word) = slot.split_at(16);
    let key = key.try_into().map_or(0, u128::from_le_bytes);
    let word = word.try_into().map_or(0, u64::from_le_bytes);
    (key, word)
}

/// Writes `key` and `word` into slot `at` of `bytes`.
fn write(bytes: &mut [u8], at: usize, key: u128, word: u64) {
    if let Some(slot) = bytes.get_mut(at * SLOT..(at + 1) * SLOT) {
        let (k, w) = slot.split_at_mut(16);
        k.copy_from_slice(&key.to_le_bytes());
        w.copy_from_slice(&word.to_le_bytes());
    }
}

/// A set of 128-bit keys: a [`KeyMap`] whose values say nothing.
#[derive(Debug, Default)]
pub struct KeySet(KeyMap);

impl KeySet {
    /// An empty set, whose temporary files go to the system's folder for them.
    pub fn new() -> KeySet {
        KeySet(KeyMap::new())
    }

    /// An empty set with room for `keys` keys (see [`KeyMap::with_capacity`]).
    pub fn with_capacity(keys: usize) -> io::Result<KeySet> {
        KeyMap::with_capacity(keys).map(KeySet)
    }

    /// An empty set whose temporary files are made in `folder`, with room for `keys` keys.
    pub fn in_folder(folder: &Path, keys: usize) -> io::Result<KeySet> {
        KeyMap::in_folder(folder, keys).map(KeySet)
    }

    /// How many keys it holds.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether it holds `key`.
    pub fn contains(&self, key: u128) -> bool {
        self.0.contains(key)
    }

    /// Adds `key`: whether it was new. An error when the table grows and its new temporary
    /// file cannot be made (see [`KeyMap::insert`]); the set is as it was then.
    pub fn insert(&mut self, key: u128) -> io::Result<bool> {
        Ok(self.0.insert(key, 0)?.is_none())
    }
}

/// A 128-bit hash of a path that tells paths apart as `Path`'s equality does (by their
/// components: `a//b` and `a/b` are one path), to remember paths without holding them.
pub fn path_key(path: &Path) -> u128 {
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    for component in path.components() {
        hasher.update(component.as_os_str().as_encoded_bytes());
        hasher.update(&[0]);
    }
    hasher.digest128()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    /// The numbers of a simple generator (splitmix64): random enough keys, the same each run.
    fn random(seed: u64) -> impl Iterator<Item = u128> {
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        std::iter::from_fn(move || Some((u128::from(next()) << 64) | u128::from(next())))
    }

    #[test]
    fn a_set_and_a_map_say_what_they_hold() {
        let mut set = KeySet::new();
        assert!(set.is_empty());
        assert!(set.insert(7).unwrap());
        assert!(!set.insert(7).unwrap());
        assert!(set.contains(7) && !set.contains(0));
        let mut map = KeyMap::new();
        assert_eq!(map.insert(u128::MAX, 2).unwrap(), None);
        assert_eq!(map.insert(u128::MAX, 3).unwrap(), Some(2));
        assert_eq!(
            (map.get(u128::MAX), map.get(1), map.len()),
            (Some(3), None, 1)
        );
        assert_eq!(format!("{map:?}"), "KeyMap(1 keys, 64 slots in memory)");
    }

    #[test]
    fn values_are_kept_and_updated_across_the_move_to_a_file_and_doublings() {
        let mut map = KeyMap::new();
        let n = MEMORY_SLOTS * 8;
        for k in 0..n as u128 {
            assert_eq!(map.insert(k * 3, k as u64).unwrap(), None);
            // Each key before it still there at each size.
            if (k as usize).is_power_of_two() {
                assert!((0..=k).all(|j| map.get(j * 3) == Some(j as u64)), "{map:?}");
            }
        }
        assert!(matches!(map.slots, Slots::Mapped(_)), "{map:?}");
        assert_eq!(map.slots(), MEMORY_SLOTS * 16);
        assert_eq!(map.len(), n);
        for k in 0..n as u128 {
            assert_eq!(
                map.insert(k * 3, MAX_VALUE - k as u64).unwrap(),
                Some(k as u64)
            );
            assert!(!map.contains(k * 3 + 1));
        }
        assert_eq!(map.len(), n);
        assert!((0..n as u128).all(|k| map.get(k * 3) == Some(MAX_VALUE - k as u64)));
        assert!(map.insert(5, u64::MAX).is_err());
        assert_eq!(map.get(5), None);
    }

    #[test]
    fn a_million_random_keys_are_what_a_hash_set_holds() {
        let mut set = KeySet::new();
        let mut std_set = HashSet::new();
        // Each key inserted twice, some of them: the second time is no new key.
        for (i, key) in random(1).take(1_000_000).enumerate() {
            let again = if i % 3 == 0 { key } else { key >> 1 };
            assert_eq!(set.insert(again).unwrap(), std_set.insert(again));
            assert_eq!(set.insert(key).unwrap(), std_set.insert(key));
        }
        assert_eq!(set.len(), std_set.len());
        assert!(std_set.iter().all(|&key| set.contains(key)));
        let absent = random(2).take(100_000).filter(|k| !std_set.contains(k));
        assert!(absent.map(|k| set.contains(k)).all(|held| !held));
    }

    #[test]
    fn keys_alike_in_their_low_or_high_bits_and_the_extreme_keys_are_kept() {
        let mut map = KeyMap::new();
        let mut std_map = HashMap::new();
        let keys = (0..5000u128)
            .map(|k| k << 64)
            .chain((0..5000u128).map(|k| (k << 100) | 0xffff))
            .chain((1..5000u128).map(|k| k << 20))
            .chain([0, u128::MAX, u128::MAX - 1, 1]);
        for (value, key) in keys.enumerate() {
            let old = std_map.insert(key, value as u64);
            assert_eq!(map.insert(key, value as u64).unwrap(), old);
        }
        assert_eq!(map.len(), std_map.len());
        assert!(std_map.iter().all(|(&k, &v)| map.get(k) == Some(v)));
        let mut extremes = KeySet::new();
        assert!(!extremes.contains(0) && !extremes.contains(u128::MAX));
        assert!(extremes.insert(0).unwrap());
        assert!(!extremes.contains(u128::MAX));
        assert!(extremes.insert(u128::MAX).unwrap());
        assert!(!extremes.insert(0).unwrap());
        assert!(extremes.contains(0) && extremes.contains(u128::MAX));
        assert_eq!(extremes.len(), 2);
    }

    #[test]
    fn a_table_whose_file_cannot_be_made_says_where_and_stays_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let error = KeySet::in_folder(&missing, MEMORY_SLOTS).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
        assert!(
            error.to_string().contains("for a table of 0 keys: "),
            "{error}"
        );
        let mut set = KeySet::in_folder(&missing, MEMORY_SLOTS / 2).unwrap();
        let held = MEMORY_SLOTS * 3 / 4;
        for key in 0..held as u128 {
            assert!(set.insert(key).unwrap());
        }
        let error = set.insert(u128::MAX).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
        let message = error.to_string();
        assert!(
            message.starts_with(&format!(
                "a temporary file of {} bytes in '{}' for a table of {held} keys: ",
                MEMORY_SLOTS * 2 * SLOT,
                missing.display()
            )),
            "{message}"
        );
        assert_eq!(set.len(), held);
        assert!(!set.contains(u128::MAX));
        assert!((0..held as u128).all(|key| set.contains(key)));
        // Once the folder is there, the table grows into it.
        std::fs::create_dir(&missing).unwrap();
        assert!(set.insert(u128::MAX).unwrap());
        assert!(set.contains(u128::MAX) && set.contains(0));
        let sized = KeySet::in_folder(&missing, MEMORY_SLOTS).unwrap();
        assert_eq!(
            format!("{sized:?}"),
            "KeySet(KeyMap(0 keys, 4096 slots in a file))"
        );
        let small = KeyMap::with_capacity(100).unwrap();
        assert_eq!(format!("{small:?}"), "KeyMap(0 keys, 256 slots in memory)");
    }
}
