//! The iteration order of LLVM's `StringMap`, reproduced.
//!
//! clang-offload-bundler lists bundle entries, visits them when unbundling and picks output
//! targets in the order its `StringMap`s iterate, which is a property of their hash table, not
//! of the file. To print the same lines in the same order we keep a table laid out exactly as
//! LLVM 19 lays it out: XXH3-64 of the key truncated to 32 bits, 16 buckets to start,
//! quadratic probing, growth to twice the size past 3/4 load, tombstones on removal.

use xxhash_rust::xxh3::xxh3_64;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    Empty,
    Tombstone,
    Full(usize),
}

/// A map from byte-string keys to values whose iteration order is that of LLVM 19's
/// `llvm::StringMap` after the same sequence of insertions and removals.
#[derive(Clone)]
pub struct StringMap<V> {
    slots: Vec<Slot>,
    hashes: Vec<u32>,
    entries: Vec<Option<(Box<[u8]>, V)>>,
    items: usize,
    tombstones: usize,
}

impl<V> Default for StringMap<V> {
    fn default() -> Self {
        Self::new()
    }
}

/// The 32-bit hash LLVM 19's `StringMap` keys its table with.
pub fn key_hash(key: &[u8]) -> u32 {
    xxh3_64(key) as u32
}

impl<V> StringMap<V> {
    /// An empty map (LLVM allocates its 16 buckets on the first insertion).
    pub fn new() -> Self {
        StringMap {
            slots: Vec::new(),
            hashes: Vec::new(),
            entries: Vec::new(),
            items: 0,
            tombstones: 0,
        }
    }

    /// Number of keys in the map.
    pub fn len(&self) -> usize {
        self.items
    }

    /// Whether the map has no keys.
    pub fn is_empty(&self) -> bool {
        self.items == 0
    }

    /// Finds the bucket for `key`: the bucket holding it, or the one an insertion would use.
    fn lookup_bucket(&mut self, key: &[u8], hash: u32) -> usize {
        if self.slots.is_empty() {
            self.slots = vec![Slot::Empty; 16];
            self.hashes = vec![0; 16];
        }
        let mask = self.slots.len() - 1;
        let mut bucket = hash as usize & mask;
        let mut probe = 1;
        let mut first_tombstone = None;
        loop {
            match self.slots[bucket] {
                Slot::Empty => {
                    let chosen = first_tombstone.unwrap_or(bucket);
                    self.hashes[chosen] = hash;
                    return chosen;
                }
                Slot::Tombstone => {
                    first_tombstone.get_or_insert(bucket);
                }
                Slot::Full(index) => {
                    if self.hashes[bucket] == hash {
                        if let Some((k, _)) = &self.entries[index] {
                            if **k == *key {
                                return bucket;
                            }
                        }
                    }
                }
            }
            bucket = (bucket + probe) & mask;
            probe += 1;
        }
    }

    /// Sets `key` to `value`. A new key takes a bucket; an existing key keeps its bucket and
    /// gets the new value, as `map[key] = value` does in LLVM.
    pub fn insert(&mut self, key: &[u8], value: V) {
        let hash = key_hash(key);
        let bucket = self.lookup_bucket(key, hash);
        match self.slots[bucket] {
            Slot::Full(index) => {
                if let Some(entry) = &mut self.entries[index] {
                    entry.1 = value;
                }
            }
            slot => {
                if slot == Slot::Tombstone {
                    self.tombstones -= 1;
                }
                self.entries.push(Some((key.into(), value)));
                self.slots[bucket] = Slot::Full(self.entries.len() - 1);
                self.items += 1;
                self.rehash_if_needed();
            }
        }
    }

    fn rehash_if_needed(&mut self) {
        let buckets = self.slots.len();
        let new_size = if self.items * 4 > buckets * 3 {
            buckets * 2
        } else if buckets - (self.items + self.tombstones) <= buckets / 8 {
            buckets
        } else {
            return;
        };
        let mut slots = vec![Slot::Empty; new_size];
        let mut hashes = vec![0; new_size];
        let mask = new_size - 1;
        for (slot, hash) in self.slots.iter().zip(&self.hashes) {
            if let Slot::Full(index) = *slot {
                let mut bucket = *hash as usize & mask;
                let mut probe = 1;
                while slots[bucket] != Slot::Empty {
                    bucket = (bucket + probe) & mask;
                    probe += 1;
                }
                slots[bucket] = Slot::Full(index);
                hashes[bucket] = *hash;
            }
        }
        self.slots = slots;
        self.hashes = hashes;
        self.tombstones = 0;
    }

    fn find(&self, key: &[u8]) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let hash = key_hash(key);
        let mask = self.slots.len() - 1;
        let mut bucket = hash as usize & mask;
        let mut probe = 1;
        loop {
            match self.slots[bucket] {
                Slot::Empty => return None,
                Slot::Tombstone => {}
                Slot::Full(index) => {
                    if self.hashes[bucket] == hash
                        && self.entries[index]
                            .as_ref()
                            .is_some_and(|(k, _)| **k == *key)
                    {
                        return Some(bucket);
                    }
                }
            }
            bucket = (bucket + probe) & mask;
            probe += 1;
        }
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        let bucket = self.find(key)?;
        match self.slots[bucket] {
            Slot::Full(index) => self.entries[index].as_ref().map(|(_, v)| v),
            _ => None,
        }
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.find(key).is_some()
    }

    /// Removes `key`, leaving a tombstone in its bucket as LLVM does, and returns its value.
    pub fn remove(&mut self, key: &[u8]) -> Option<V> {
        let bucket = self.find(key)?;
        let Slot::Full(index) = self.slots[bucket] else {
            return None;
        };
        self.slots[bucket] = Slot::Tombstone;
        self.items -= 1;
        self.tombstones += 1;
        self.entries[index].take().map(|(_, v)| v)
    }

    /// The keys and values in LLVM's iteration order: bucket by bucket.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &V)> {
        self.slots.iter().filter_map(move |slot| match *slot {
            Slot::Full(index) => self.entries[index].as_ref().map(|(k, v)| (&**k, v)),
            _ => None,
        })
    }
}

#[cfg(test)]
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
