//! LLVM 19's string hash (`llvm::hash_value(StringRef)`) and the iteration order of a
//! `DenseMap` keyed by strings, reproduced so that we can order things as LLVM tools do.
//!
//! clang-offload-packager 19 collects the `key=value` items of an `--image` in a
//! `DenseMap<StringRef, StringRef>` and stores an image's string entries in that map's
//! iteration order. That order is a property of the hash table: the hash is LLVM 19's
//! CityHash-derived `hash_value` with the fixed seed of release builds, truncated to 32 bits;
//! the table starts with 64 buckets, probes quadratically, and doubles before an insertion
//! that would bring it to 3/4 load.
//!
//! LLVM 19 to 22 hash strings so; LLVM 23 hashes a string's bytes with XXH3-64 and XORs the
//! same seed into the result ([`StringHash::Xxh3`]), and its packager still keeps the items in
//! a `DenseMap`, so its table is this one with the other hash.

/// The seed LLVM 19 release builds (without ABI-breaking checks) mix into every hash.
const SEED: u64 = 0xff51_afd7_ed55_8ccd;

const K0: u64 = 0xc3a5_c85c_97cb_3127;
const K1: u64 = 0xb492_b66f_be98_f273;
const K2: u64 = 0x9ae1_6a3b_2f90_404f;
const K3: u64 = 0xc949_d7c7_509e_6557;
const K_MUL: u64 = 0x9ddf_ea08_eb38_2d69;

/// Buckets a `DenseMap` allocates on its first insertion.
const DENSE_MAP_MIN_BUCKETS: usize = 64;

/// `llvm::hash_value(StringRef)` of LLVM 19 (release build): the 64-bit hash of `s`.
///
/// `DenseMap` keys its table with the low 32 bits of this value.
pub fn hash_string(s: &[u8]) -> u64 {
    let len = s.len();
    if len <= 64 {
        return hash_short(s);
    }
    // Whole 64-byte blocks, then the last 64 bytes of the string (overlapping the previous
    // block) when the length is not a multiple of 64.
    let mut blocks = s.chunks_exact(64);
    let mut state = LongState::new(blocks.next().unwrap_or_default());
    for block in blocks.by_ref() {
        state.mix(block);
    }
    if let Some(last) = s
        .last_chunk::<64>()
        .filter(|_| !blocks.remainder().is_empty())
    {
        state.mix(last);
    }
    state.finish(len as u64)
}

/// The low 32 bits of [`hash_string`]: what `DenseMapInfo<StringRef>` returns.
#[cfg(any(test, feature = "internals"))]
pub fn dense_map_hash(s: &[u8]) -> u32 {
    let [a, b, c, d, ..] = hash_string(s).to_le_bytes();
    u32::from_le_bytes([a, b, c, d])
}

/// How a release of LLVM hashes a `StringRef` for `DenseMap`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StringHash {
    /// LLVM 19 to 22: the CityHash-derived `hash_value` ([`dense_map_hash`]).
    City,
    /// LLVM 23: XXH3-64 of the bytes, XORed with the release builds' seed.
    Xxh3,
}

impl StringHash {
    /// The 32 bits `DenseMapInfo<StringRef>` keys the table with.
    pub fn of(self, s: &[u8]) -> u32 {
        let full = match self {
            StringHash::City => hash_string(s),
            StringHash::Xxh3 => xxhash_rust::xxh3::xxh3_64(s) ^ SEED,
        };
        let [a, b, c, d, ..] = full.to_le_bytes();
        u32::from_le_bytes([a, b, c, d])
    }
}

/// The iteration order of an LLVM 19 to 22 `DenseMap<StringRef, _>` after inserting `keys` in
/// the given order (nothing erased); [`dense_map_order_with`] for another release's hash. A key given more than once is kept where its first insertion
/// put it.
///
/// For clang-offload-packager's string entries, pass every item of the `--image` in
/// command-line order, `file` and `kind` included (they occupy buckets, and so move the
/// others), then drop `file` and `kind` from the result.
#[cfg(any(test, feature = "internals"))]
pub fn dense_map_order<'a>(keys: &[&'a [u8]]) -> Vec<&'a [u8]> {
    dense_map_order_with(StringHash::City, keys)
}

/// The iteration order of a `DenseMap<StringRef, _>` whose keys are hashed by `hash`, after
/// inserting `keys` in the given order (nothing erased).
pub fn dense_map_order_with<'a>(hash: StringHash, keys: &[&'a [u8]]) -> Vec<&'a [u8]> {
    let mut table = DenseTable {
        buckets: Vec::new(),
        entries: 0,
        hash,
    };
    for key in keys {
        table.insert(key);
    }
    table
        .buckets
        .into_iter()
        .flatten()
        .map(|(_, k)| k)
        .collect()
}

// The fetches read words at offsets that each length class guarantees to lie inside the
// string; a word that did not would read as 0 rather than panic.

/// The little-endian 64-bit word at `at` of `s`.
fn fetch64(s: &[u8], at: usize) -> u64 {
    s.get(at..)
        .and_then(<[u8]>::first_chunk::<8>)
        .map_or(0, |word| u64::from_le_bytes(*word))
}

/// The little-endian 32-bit word at `at` of `s`.
fn fetch32(s: &[u8], at: usize) -> u64 {
    s.get(at..)
        .and_then(<[u8]>::first_chunk::<4>)
        .map_or(0, |word| u64::from(u32::from_le_bytes(*word)))
}

/// The byte at `at` of `s`.
fn fetch8(s: &[u8], at: usize) -> u64 {
    s.get(at).map_or(0, |byte| u64::from(*byte))
}

fn shift_mix(v: u64) -> u64 {
    v ^ (v >> 47)
}

fn hash_16_bytes(low: u64, high: u64) -> u64 {
    let mut a = (low ^ high).wrapping_mul(K_MUL);
    a ^= a >> 47;
    let mut b = (high ^ a).wrapping_mul(K_MUL);
    b ^= b >> 47;
    b.wrapping_mul(K_MUL)
}

/// The hash of a string of at most 64 bytes; one formula per length class.
fn hash_short(s: &[u8]) -> u64 {
    match s.len() {
        0 => K2 ^ SEED,
        1..=3 => hash_1_to_3(s),
        4..=8 => hash_4_to_8(s),
        9..=16 => hash_9_to_16(s),
        17..=32 => hash_17_to_32(s),
        _ => hash_33_to_64(s),
    }
}

fn hash_1_to_3(s: &[u8]) -> u64 {
    let len = s.len();
    let first = fetch8(s, 0);
    let middle = fetch8(s, len >> 1);
    let last = fetch8(s, len - 1);
    // Both sums fit in 32 bits, as in LLVM, where they are 32-bit values.
    let y = first + (middle << 8);
    let z = len as u64 + (last << 2);
    shift_mix(y.wrapping_mul(K2) ^ z.wrapping_mul(K3) ^ SEED).wrapping_mul(K2)
}

fn hash_4_to_8(s: &[u8]) -> u64 {
    let len = s.len();
    let a = fetch32(s, 0);
    hash_16_bytes(
        (len as u64).wrapping_add(a << 3),
        SEED ^ fetch32(s, len - 4),
    )
}

fn hash_9_to_16(s: &[u8]) -> u64 {
    let len = s.len();
    let a = fetch64(s, 0);
    let b = fetch64(s, len - 8);
    hash_16_bytes(
        SEED ^ a,
        // The length is 9 to 16 here.
        b.wrapping_add(len as u64)
            .rotate_right(u32::try_from(len).unwrap_or(0)),
    ) ^ b
}

fn hash_17_to_32(s: &[u8]) -> u64 {
    let len = s.len();
    let a = fetch64(s, 0).wrapping_mul(K1);
    let b = fetch64(s, 8);
    let c = fetch64(s, len - 8).wrapping_mul(K2);
    let d = fetch64(s, len - 16).wrapping_mul(K0);
    let low = a
        .wrapping_sub(b)
        .rotate_right(43)
        .wrapping_add((c ^ SEED).rotate_right(30))
        .wrapping_add(d);
    let high = a
        .wrapping_add((b ^ K3).rotate_right(20))
        .wrapping_sub(c)
        .wrapping_add(len as u64)
        .wrapping_add(SEED);
    hash_16_bytes(low, high)
}

fn hash_33_to_64(s: &[u8]) -> u64 {
    let len = s.len();
    let mut z = fetch64(s, 24);
    let mut a = fetch64(s, 0).wrapping_add(
        (len as u64)
            .wrapping_add(fetch64(s, len - 16))
            .wrapping_mul(K0),
    );
    let mut b = a.wrapping_add(z).rotate_right(52);
    let mut c = a.rotate_right(37);
    a = a.wrapping_add(fetch64(s, 8));
    c = c.wrapping_add(a.rotate_right(7));
    a = a.wrapping_add(fetch64(s, 16));
    let vf = a.wrapping_add(z);
    let vs = b.wrapping_add(a.rotate_right(31)).wrapping_add(c);

    a = fetch64(s, 16).wrapping_add(fetch64(s, len - 32));
    z = fetch64(s, len - 8);
    b = a.wrapping_add(z).rotate_right(52);
    c = a.rotate_right(37);
    a = a.wrapping_add(fetch64(s, len - 24));
    c = c.wrapping_add(a.rotate_right(7));
    a = a.wrapping_add(fetch64(s, len - 16));
    let wf = a.wrapping_add(z);
    let ws = b.wrapping_add(a.rotate_right(31)).wrapping_add(c);

    let r = shift_mix(
        vf.wrapping_add(ws)
            .wrapping_mul(K2)
            .wrapping_add(wf.wrapping_add(vs).wrapping_mul(K0)),
    );
    shift_mix((SEED ^ r.wrapping_mul(K0)).wrapping_add(vs)).wrapping_mul(K2)
}

/// The seven-word state that strings longer than 64 bytes are folded into, 64 bytes at a
/// time.
struct LongState {
    h: [u64; 7],
}

impl LongState {
    /// The state after the first 64-byte block.
    fn new(first_block: &[u8]) -> Self {
        let h4 = SEED.wrapping_mul(K1);
        let h5 = shift_mix(SEED);
        let mut state = LongState {
            h: [
                0,
                SEED,
                hash_16_bytes(SEED, K1),
                (SEED ^ K1).rotate_right(49),
                h4,
                h5,
                hash_16_bytes(h4, h5),
            ],
        };
        state.mix(first_block);
        state
    }

    /// Folds 32 bytes into the pair `(a, b)`.
    fn mix_32(s: &[u8], a: &mut u64, b: &mut u64) {
        *a = a.wrapping_add(fetch64(s, 0));
        let c = fetch64(s, 24);
        *b = b.wrapping_add(*a).wrapping_add(c).rotate_right(21);
        let d = *a;
        *a = a.wrapping_add(fetch64(s, 8).wrapping_add(fetch64(s, 16)));
        *b = b.wrapping_add(a.rotate_right(44)).wrapping_add(d);
        *a = a.wrapping_add(c);
    }

    /// Folds one 64-byte block into the state.
    fn mix(&mut self, s: &[u8]) {
        let [mut h0, mut h1, mut h2, mut h3, mut h4, mut h5, mut h6] = self.h;
        h0 = h0
            .wrapping_add(h1)
            .wrapping_add(h3)
            .wrapping_add(fetch64(s, 8))
            .rotate_right(37)
            .wrapping_mul(K1);
        h1 = h1
            .wrapping_add(h4)
            .wrapping_add(fetch64(s, 48))
            .rotate_right(42)
            .wrapping_mul(K1);
        h0 ^= h6;
        h1 = h1.wrapping_add(h3.wrapping_add(fetch64(s, 40)));
        h2 = h2.wrapping_add(h5).rotate_right(33).wrapping_mul(K1);
        h3 = h4.wrapping_mul(K1);
        h4 = h0.wrapping_add(h5);
        let (low, high) = s.split_at(32.min(s.len()));
        Self::mix_32(low, &mut h3, &mut h4);
        h5 = h2.wrapping_add(h6);
        h6 = h1.wrapping_add(fetch64(s, 16));
        Self::mix_32(high, &mut h5, &mut h6);
        // The first and third words trade places after every block.
        self.h = [h2, h1, h0, h3, h4, h5, h6];
    }

    fn finish(&self, len: u64) -> u64 {
        let [h0, h1, h2, h3, h4, h5, h6] = self.h;
        hash_16_bytes(
            hash_16_bytes(h3, h5)
                .wrapping_add(shift_mix(h1).wrapping_mul(K1))
                .wrapping_add(h2),
            hash_16_bytes(h4, h6)
                .wrapping_add(shift_mix(len).wrapping_mul(K1))
                .wrapping_add(h0),
        )
    }
}

/// An open-addressing table laid out as LLVM's `DenseMap` lays out its buckets.
struct DenseTable<'a> {
    buckets: Vec<Option<(u32, &'a [u8])>>,
    entries: usize,
    hash: StringHash,
}

impl<'a> DenseTable<'a> {
    /// The bucket holding `key` (`Ok`) or the empty bucket where it would go (`Err`); the
    /// table must have buckets.
    fn find(&self, key: &[u8], hash: u32) -> Result<usize, usize> {
        let mask = self.buckets.len() - 1;
        let mut bucket = hash as usize & mask;
        let mut step = 1;
        loop {
            match self.buckets.get(bucket).copied().flatten() {
                None => return Err(bucket),
                Some((h, k)) if h == hash && k == key => return Ok(bucket),
                Some(_) => {
                    bucket = (bucket + step) & mask;
                    step += 1;
                }
            }
        }
    }

    fn insert(&mut self, key: &'a [u8]) {
        let hash = self.hash.of(key);
        if !self.buckets.is_empty() && self.find(key, hash).is_ok() {
            return;
        }
        let buckets = self.buckets.len();
        let new_entries = self.entries + 1;
        // LLVM grows before placing the new key: to twice the buckets when the table would
        // reach 3/4 load, or rehashes in place when fewer than 1/8 of the buckets would stay
        // empty (only tombstones can cause that, and nothing is erased here).
        if new_entries * 4 >= buckets * 3 {
            self.grow(buckets * 2);
        } else if buckets - new_entries <= buckets / 8 {
            self.grow(buckets);
        }
        if let Err(bucket) = self.find(key, hash) {
            if let Some(empty) = self.buckets.get_mut(bucket) {
                *empty = Some((hash, key));
                self.entries = new_entries;
            }
        }
    }

    /// Reallocates to the smallest power of two above `at_least - 1` (at least 64 buckets)
    /// and re-inserts the keys walking the old buckets in order.
    fn grow(&mut self, at_least: usize) {
        let size = at_least
            .max(1)
            .next_power_of_two()
            .max(DENSE_MAP_MIN_BUCKETS);
        let old = std::mem::replace(&mut self.buckets, vec![None; size]);
        for (hash, key) in old.into_iter().flatten() {
            if let Err(bucket) = self.find(key, hash) {
                if let Some(empty) = self.buckets.get_mut(bucket) {
                    *empty = Some((hash, key));
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;

    #[test]
    fn every_length_class_hashes_without_panicking() {
        let bytes: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut seen = std::collections::HashSet::new();
        for len in 0..=bytes.len() {
            assert!(seen.insert(hash_string(&bytes[..len])), "length {len}");
        }
    }

    #[test]
    fn empty_string_hashes_to_k2_xor_seed() {
        assert_eq!(hash_string(b""), K2 ^ SEED);
    }

    #[test]
    fn the_last_partial_block_is_read_from_the_end() {
        // Strings of 65..127 bytes share their first block; the last 64 bytes decide the rest.
        let a = [b'a'; 100];
        let mut b = a;
        b[40] = b'b'; // Inside the first block only.
        let mut c = a;
        c[99] = b'c';
        assert_ne!(hash_string(&a), hash_string(&b));
        assert_ne!(hash_string(&a), hash_string(&c));
    }

    #[test]
    fn grow_size_is_the_next_power_of_two() {
        let mut t = DenseTable {
            buckets: Vec::new(),
            entries: 0,
            hash: StringHash::City,
        };
        t.grow(0);
        assert_eq!(t.buckets.len(), 64);
        t.grow(128);
        assert_eq!(t.buckets.len(), 128);
        t.grow(129);
        assert_eq!(t.buckets.len(), 256);
    }

    #[test]
    fn duplicates_keep_their_first_place() {
        let keys: Vec<&[u8]> = vec![b"triple", b"arch", b"triple", b"x"];
        let order = dense_map_order(&keys);
        assert_eq!(order.len(), 3);
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, vec![&b"arch"[..], b"triple", b"x"]);
    }

    #[test]
    fn examples_measured_on_the_packager() {
        // clang-offload-packager-19 stores {triple, arch} as arch, triple, and
        // {extra, arch, triple} as extra, arch, triple (file and kind are in the map too).
        let keys: Vec<&[u8]> = vec![b"file", b"triple", b"arch"];
        let order: Vec<&[u8]> = dense_map_order(&keys)
            .into_iter()
            .filter(|k| *k != b"file")
            .collect();
        assert_eq!(order, vec![&b"arch"[..], b"triple"]);
        let keys: Vec<&[u8]> = vec![b"file", b"extra", b"arch", b"triple"];
        let order: Vec<&[u8]> = dense_map_order(&keys)
            .into_iter()
            .filter(|k| *k != b"file")
            .collect();
        assert_eq!(order, vec![&b"extra"[..], b"arch", b"triple"]);
    }

    #[test]
    fn examples_measured_on_the_packager_of_llvm_23() {
        // llvm-offload-binary-23 with file, triple, arch and kind first, then the extra keys.
        let cases: [(&[&str], &str); 3] = [
            (&["foo"], "arch foo triple"),
            (&["zz", "aa", "mm", "b"], "arch mm triple b zz aa"),
            (
                &["x", "y", "z", "w", "v", "u", "t"],
                "arch triple v x t w y u z",
            ),
        ];
        for (extra, stored) in cases {
            let mut keys: Vec<&[u8]> = vec![b"file", b"triple", b"arch", b"kind"];
            keys.extend(extra.iter().map(|k| k.as_bytes()));
            let order: Vec<&str> = dense_map_order_with(StringHash::Xxh3, &keys)
                .into_iter()
                .filter(|k| *k != b"file" && *k != b"kind")
                .map(|k| std::str::from_utf8(k).unwrap())
                .collect();
            assert_eq!(order.join(" "), stored);
        }
    }

    #[test]
    fn many_keys_keep_every_key_once() {
        let names: Vec<Vec<u8>> = (0..500).map(|i| format!("key{i}").into_bytes()).collect();
        let keys: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
        let order = dense_map_order(&keys);
        assert_eq!(order.len(), 500);
        let mut sorted = order.clone();
        sorted.sort();
        let mut expected = keys.clone();
        expected.sort();
        assert_eq!(sorted, expected);
    }
}
