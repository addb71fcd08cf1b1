//! The iteration order of LLVM's `StringMap`, reproduced.
//!
//! clang-offload-bundler lists bundle entries, visits them when unbundling and picks output
//! targets in the order its `StringMap`s iterate, which is a property of their hash table, not
//! of the file. To print the same lines in the same order we keep a table laid out exactly as
//! LLVM 19 lays it out: XXH3-64 of the key truncated to 32 bits, 16 buckets to start,
//! quadratic probing, growth to twice the size past 3/4 load, tombstones on removal. LLVM 23
//! probes linearly instead and closes the hole a removal leaves by shifting entries back
//! ([`Probing::Linear`]).

use xxhash_rust::xxh3::xxh3_64;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    Empty,
    Tombstone,
    Full(usize),
}

/// A bucket of the table: what it holds, and the full hash of its key.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Bucket {
    slot: Slot,
    hash: u32,
}

const EMPTY: Bucket = Bucket {
    slot: Slot::Empty,
    hash: 0,
};

/// How a release's `StringMap` probes for a free bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Probing {
    /// LLVM 19 to 22: steps of 1, 2, 3, ...; a removal leaves a tombstone.
    #[default]
    Quadratic,
    /// LLVM 23: steps of 1; a removal shifts later entries of the run back into the hole.
    Linear,
}

/// A map from byte-string keys to values whose iteration order is that of LLVM's
/// `llvm::StringMap` after the same sequence of insertions and removals.
///
/// Bucket numbers are masked by the table size (a power of two) and entry numbers only ever
/// grow, so every lookup finds what it names; a lookup that did not would find nothing.
#[derive(Clone)]
pub struct StringMap<V> {
    buckets: Vec<Bucket>,
    entries: Vec<Option<(Box<[u8]>, V)>>,
    items: usize,
    tombstones: usize,
    probing: Probing,
}

impl<V> Default for StringMap<V> {
    fn default() -> Self {
        Self::new()
    }
}

/// The 32-bit hash LLVM 19's `StringMap` keys its table with: the low half of XXH3-64.
pub fn key_hash(key: &[u8]) -> u32 {
    let [a, b, c, d, ..] = xxh3_64(key).to_le_bytes();
    u32::from_le_bytes([a, b, c, d])
}

impl<V> StringMap<V> {
    /// An empty map (LLVM allocates its 16 buckets on the first insertion).
    pub fn new() -> Self {
        Self::with_probing(Probing::Quadratic)
    }

    /// An empty map that probes as `probing` says.
    pub fn with_probing(probing: Probing) -> Self {
        StringMap {
            buckets: Vec::new(),
            entries: Vec::new(),
            items: 0,
            tombstones: 0,
            probing,
        }
    }

    /// The step after `probe` steps were taken, and the next probe number.
    fn step(&self, probe: usize) -> (usize, usize) {
        match self.probing {
            Probing::Quadratic => (probe, probe + 1),
            Probing::Linear => (1, probe),
        }
    }

    /// Number of keys in the map.
    #[cfg(any(test, feature = "internals"))]
    pub fn len(&self) -> usize {
        self.items
    }

    /// Whether the map has no keys.
    pub fn is_empty(&self) -> bool {
        self.items == 0
    }

    /// The key of entry `index`, unless it was removed.
    fn key_of(&self, index: usize) -> Option<&[u8]> {
        self.entries.get(index)?.as_ref().map(|(k, _)| &**k)
    }

    /// The slot of `bucket` and its hash; a bucket past the table reads as empty.
    fn bucket(&self, bucket: usize) -> Bucket {
        self.buckets.get(bucket).copied().unwrap_or(EMPTY)
    }

    /// Finds the bucket for `key`: the bucket holding it, or the one an insertion would use.
    fn lookup_bucket(&mut self, key: &[u8], hash: u32) -> usize {
        if self.buckets.is_empty() {
            self.buckets = vec![EMPTY; 16];
        }
        let mask = self.buckets.len() - 1;
        let mut bucket = hash as usize & mask;
        let mut probe = 1;
        let mut first_tombstone = None;
        loop {
            let found = self.bucket(bucket);
            match found.slot {
                Slot::Empty => {
                    let chosen = first_tombstone.unwrap_or(bucket);
                    if let Some(chosen) = self.buckets.get_mut(chosen) {
                        chosen.hash = hash;
                    }
                    return chosen;
                }
                Slot::Tombstone => {
                    first_tombstone.get_or_insert(bucket);
                }
                Slot::Full(index) => {
                    if found.hash == hash && self.key_of(index) == Some(key) {
                        return bucket;
                    }
                }
            }
            let (step, next) = self.step(probe);
            bucket = (bucket + step) & mask;
            probe = next;
        }
    }

    /// Sets `key` to `value`. A new key takes a bucket; an existing key keeps its bucket and
    /// gets the new value, as `map[key] = value` does in LLVM.
    pub fn insert(&mut self, key: &[u8], value: V) {
        let hash = key_hash(key);
        let bucket = self.lookup_bucket(key, hash);
        let Some(found) = self.buckets.get_mut(bucket) else {
            return;
        };
        match found.slot {
            Slot::Full(index) => {
                if let Some(Some(entry)) = self.entries.get_mut(index) {
                    entry.1 = value;
                }
            }
            slot => {
                if slot == Slot::Tombstone {
                    self.tombstones -= 1;
                }
                found.slot = Slot::Full(self.entries.len());
                self.entries.push(Some((key.into(), value)));
                self.items += 1;
                self.rehash_if_needed();
            }
        }
    }

    fn rehash_if_needed(&mut self) {
        let size = self.buckets.len();
        let new_size = if self.items * 4 > size * 3 {
            size * 2
        } else if size - (self.items + self.tombstones) <= size / 8 {
            size
        } else {
            return;
        };
        let mut buckets = vec![EMPTY; new_size];
        let mask = new_size - 1;
        for old in &self.buckets {
            if let Slot::Full(_) = old.slot {
                let mut bucket = old.hash as usize & mask;
                let mut probe = 1;
                while buckets.get(bucket).is_some_and(|b| b.slot != Slot::Empty) {
                    let (step, next) = self.step(probe);
                    bucket = (bucket + step) & mask;
                    probe = next;
                }
                if let Some(new) = buckets.get_mut(bucket) {
                    *new = *old;
                }
            }
        }
        self.buckets = buckets;
        self.tombstones = 0;
    }

    /// The bucket holding `key` and the number of its entry.
    fn find(&self, key: &[u8]) -> Option<(usize, usize)> {
        if self.buckets.is_empty() {
            return None;
        }
        let hash = key_hash(key);
        let mask = self.buckets.len() - 1;
        let mut bucket = hash as usize & mask;
        let mut probe = 1;
        loop {
            let found = self.bucket(bucket);
            match found.slot {
                Slot::Empty => return None,
                Slot::Tombstone => {}
                Slot::Full(index) => {
                    if found.hash == hash && self.key_of(index) == Some(key) {
                        return Some((bucket, index));
                    }
                }
            }
            let (step, next) = self.step(probe);
            bucket = (bucket + step) & mask;
            probe = next;
        }
    }

    /// The value of `key`, if present.
    #[cfg(any(test, feature = "internals"))]
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        let (_, index) = self.find(key)?;
        self.entries.get(index)?.as_ref().map(|(_, v)| v)
    }

    /// Whether `key` is present.
    #[cfg(any(test, feature = "internals"))]
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.find(key).is_some()
    }

    /// Removes `key` as the release does (a tombstone in its bucket, or the entries after it
    /// in its run shifted back), and returns its value.
    pub fn remove(&mut self, key: &[u8]) -> Option<V> {
        let (bucket, index) = self.find(key)?;
        match self.probing {
            Probing::Quadratic => {
                self.buckets.get_mut(bucket)?.slot = Slot::Tombstone;
                self.tombstones += 1;
            }
            Probing::Linear => self.shift_back(bucket),
        }
        self.items -= 1;
        self.entries.get_mut(index)?.take().map(|(_, v)| v)
    }

    /// Empties `hole`, then moves back into it each later entry of the run whose own bucket
    /// does not lie cyclically between the hole and it, until an empty bucket ends the run.
    fn shift_back(&mut self, mut hole: usize) {
        let mask = self.buckets.len() - 1;
        if let Some(b) = self.buckets.get_mut(hole) {
            *b = EMPTY;
        }
        let mut next = hole;
        loop {
            next = (next + 1) & mask;
            let moving = self.bucket(next);
            if moving.slot == Slot::Empty {
                return;
            }
            let home = moving.hash as usize & mask;
            // Whether `home` lies in (hole, next], cyclically: then the entry stays.
            let stays = if hole <= next {
                hole < home && home <= next
            } else {
                hole < home || home <= next
            };
            if !stays {
                if let Some(b) = self.buckets.get_mut(hole) {
                    *b = moving;
                }
                if let Some(b) = self.buckets.get_mut(next) {
                    *b = EMPTY;
                }
                hole = next;
            }
        }
    }

    /// The keys and values in LLVM's iteration order: bucket by bucket.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &V)> {
        self.buckets
            .iter()
            .filter_map(move |bucket| match bucket.slot {
                Slot::Full(index) => self.entries.get(index)?.as_ref().map(|(k, v)| (&**k, v)),
                _ => None,
            })
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;

    fn order(keys: &[&str]) -> Vec<String> {
        let mut map = StringMap::new();
        for k in keys {
            map.insert(k.as_bytes(), ());
        }
        map.iter()
            .map(|(k, _)| String::from_utf8(k.to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn three_bundle_ids_list_in_llvm_order() {
        // clang-offload-bundler-19 -list prints these in this order.
        let keys = [
            "host-x86_64-unknown-linux-gnu-",
            "hipv4-amdgcn-amd-amdhsa--gfx906",
            "hip-amdgcn-amd-amdhsa--gfx90a:xnack+",
        ];
        assert_eq!(
            order(&keys),
            [
                "hipv4-amdgcn-amd-amdhsa--gfx906",
                "hip-amdgcn-amd-amdhsa--gfx90a:xnack+",
                "host-x86_64-unknown-linux-gnu-",
            ]
        );
    }

    #[test]
    fn two_ids_in_llvm_order() {
        let keys = [
            "host-x86_64-unknown-linux-gnu-",
            "hipv4-amdgcn-amd-amdhsa--gfx906",
        ];
        assert_eq!(
            order(&keys),
            [
                "hipv4-amdgcn-amd-amdhsa--gfx906",
                "host-x86_64-unknown-linux-gnu-"
            ]
        );
    }

    #[test]
    fn duplicate_key_keeps_its_slot_and_takes_the_new_value() {
        let mut map = StringMap::new();
        map.insert(b"a", 1);
        map.insert(b"b", 2);
        map.insert(b"a", 3);
        assert_eq!(map.len(), 2);
        assert_eq!(map.get(b"a"), Some(&3));
    }

    #[test]
    fn removal_leaves_others_in_place_and_growth_keeps_every_key() {
        let keys: Vec<String> = (0..100).map(|i| format!("key{i}")).collect();
        let mut map = StringMap::new();
        for (i, k) in keys.iter().enumerate() {
            map.insert(k.as_bytes(), i);
        }
        assert_eq!(map.len(), 100);
        let before: Vec<Vec<u8>> = map.iter().map(|(k, _)| k.to_vec()).collect();
        assert_eq!(map.remove(b"key7"), Some(7));
        assert_eq!(map.remove(b"key7"), None);
        let after: Vec<Vec<u8>> = map.iter().map(|(k, _)| k.to_vec()).collect();
        let expected: Vec<Vec<u8>> = before.into_iter().filter(|k| k != b"key7").collect();
        assert_eq!(after, expected);
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(map.get(k.as_bytes()).copied(), (i != 7).then_some(i));
        }
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod linear_tests {
    use super::{Probing, StringMap};

    #[test]
    fn names_iterate_as_llvm_23_writes_a_functions_symbol_table() {
        // The names of LLVM 23's `.hip.globals_reg`, as its wrapper adds them, and the order
        // llvm-bcanalyzer-23 shows them in.
        let added = [
            "entry",
            "while.entry",
            "if.kind",
            "if.then",
            "if.else",
            "sw.global",
            "sw.managed",
            "sw.surface",
            "sw.texture",
            "if.end",
            "while.end",
            "entry1",
            "addr",
            "aux_addr",
            "kind",
            "name",
            "size",
            "flags",
            "data",
            "type",
            "extern",
            "constant",
            "normalized",
        ];
        let written = [
            "if.else",
            "normalized",
            "while.end",
            "entry1",
            "if.kind",
            "kind",
            "size",
            "aux_addr",
            "type",
            "sw.texture",
            "while.entry",
            "sw.global",
            "entry",
            "constant",
            "if.then",
            "name",
            "sw.managed",
            "extern",
            "addr",
            "sw.surface",
            "if.end",
            "flags",
            "data",
        ];
        let mut map = StringMap::with_probing(Probing::Linear);
        for name in added {
            map.insert(name.as_bytes(), ());
        }
        map.insert(b"entry", ());
        assert_eq!(map.len(), added.len());
        let order: Vec<&[u8]> = map.iter().map(|(k, _)| k).collect();
        let expected: Vec<&[u8]> = written.iter().map(|s| s.as_bytes()).collect();
        assert_eq!(order, expected);
    }

    #[test]
    fn a_removal_shifts_the_run_back_and_lookups_still_find_every_key() {
        let keys: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
        let mut map = StringMap::with_probing(Probing::Linear);
        for (i, k) in keys.iter().enumerate() {
            map.insert(k.as_bytes(), i);
        }
        for (i, k) in keys.iter().enumerate().filter(|(i, _)| i % 3 == 0) {
            assert_eq!(map.remove(k.as_bytes()), Some(i));
        }
        for (i, k) in keys.iter().enumerate() {
            let expected = (i % 3 != 0).then_some(&i);
            assert_eq!(map.get(k.as_bytes()), expected, "{k}");
        }
        // No bucket is left empty inside a run: every key sits at or after its home bucket
        // with no empty bucket between.
        let mask = map.buckets.len() - 1;
        for (at, b) in map.buckets.iter().enumerate() {
            if let super::Slot::Full(_) = b.slot {
                let mut probe = b.hash as usize & mask;
                while probe != at {
                    assert!(map.buckets[probe].slot != super::Slot::Empty);
                    probe = (probe + 1) & mask;
                }
            }
        }
    }
}
