//! The search for containers in bytes that may hold one anywhere (the data sections of a
//! program): one pass that finds where any of the searched magics starts.
//!
//! A pass per magic would read a section of hundreds of megabytes seven times. Instead, each
//! magic is first recognised by two of its bytes, its first and its third, at `BLOCK`
//! positions at once: with AVX2, each byte's two nibbles are looked up in tables that give
//! the magics it can be that byte of (a byte shuffle each); elsewhere the bytes are compared
//! with every magic's (the compiler turns the comparisons into vector instructions). The
//! positions that hold a magic's pair, rare, are then compared with its whole magic.
//!
//! # Example
//!
//! Find a bundle in the middle of other bytes.
//!
//! ```
//! use offload::format::{bundle, search};
//!
//! let mut data = vec![b'.'; 100];
//! data.extend(bundle::to_vec(&[("hip-amdgcn-amd-amdhsa--gfx90a", b"code")], 8));
//! assert_eq!(search::first_magic(&data), Some(100));
//! assert_eq!(search::first_magic(b"no magic here"), None);
//! ```

use crate::format::{bare, bundle, ccob, offload_binary};
use crate::llvm::bitcode::reader as bitcode;

/// The magics searched for: those of the containers a scan finds by their magic, in the
/// order of [`crate::format::container::CONTAINERS`] (a test checks them against it), then
/// those that start a bare device image embedded as data (see [`crate::format::bare`]): ELF
/// (a code object or cubin), LLVM bitcode, SPIR-V, and PTX's `.version` directive.
pub(crate) const MAGICS: [&[u8]; 7] = [
    bundle::MAGIC,
    ccob::MAGIC,
    &offload_binary::MAGIC,
    ELF_MAGIC,
    &bitcode::RAW_MAGIC,
    bare::SPIRV_MAGIC,
    bare::PTX_MAGIC,
];

/// How many of [`MAGICS`] are containers'; those after them start bare device images.
pub(crate) const CONTAINER_MAGICS: usize = 3;

/// The magic of an ELF file: a bare code object or cubin embedded in a program's data starts
/// with it.
pub const ELF_MAGIC: &[u8] = b"\x7fELF";

/// Where the second byte each magic is first recognised by lies in it. The third byte: in the
/// read-only data of large programs (C++ names, tables), pairs of the first and third bytes
/// match in fewer blocks than those of the first and fourth (`_` and `L` three bytes apart,
/// 3 and 7 four bytes apart, are common).
const SECOND: usize = 2;

/// How many positions are compared at once.
const BLOCK: usize = 32;

// A block's positions are the bits of a `u32`.
const _: () = assert!(BLOCK <= 32);

/// The first and the [`SECOND`] byte of each magic.
const PAIRS: [(u8, u8); MAGICS.len()] = pairs();

// Evaluated while compiling: a magic shorter than SECOND + 1 bytes fails the build.
#[allow(clippy::indexing_slicing)]
const fn pairs() -> [(u8, u8); MAGICS.len()] {
    let mut pairs = [(0, 0); MAGICS.len()];
    let mut i = 0;
    while i < MAGICS.len() {
        pairs[i] = (MAGICS[i][0], MAGICS[i][SECOND]);
        i += 1;
    }
    pairs
}

/// The position in `data` of the first byte where one of the searched magics starts (bundles, compressed bundles, offload binaries, ELF files).
pub fn first_magic(data: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2, the one feature the function is compiled for.
        return unsafe { first_magic_avx2(data) };
    }
    first_magic_here(data)
}

/// Each magic's bit (the `i`th of [`MAGICS`], bit `i`) under every value of one nibble of the
/// byte at `offset` of the magics (its high nibble if `high`): what a byte's nibbles are looked
/// up in, 32 positions at once, by the vector search.
// Evaluated while compiling: every index is below the magics' lengths and 16.
#[allow(clippy::indexing_slicing)]
const fn nibble_table(offset: usize, high: bool) -> [u8; 16] {
    let mut table = [0u8; 16];
    let mut i = 0;
    while i < MAGICS.len() {
        let byte = MAGICS[i][offset];
        let nibble = if high { byte >> 4 } else { byte & 0x0f };
        table[nibble as usize] |= 1 << i;
        i += 1;
    }
    table
}

// A magic's bit is one of a byte's eight.
const _: () = assert!(MAGICS.len() <= 8);

/// The tables of [`nibble_table`]: the first byte's low and high nibbles, then the
/// [`SECOND`] byte's.
const NIBBLES: [[u8; 16]; 4] = [
    nibble_table(0, false),
    nibble_table(0, true),
    nibble_table(SECOND, false),
    nibble_table(SECOND, true),
];

/// [`first_magic`] with AVX2: each of 32 positions looks its first and [`SECOND`] byte's
/// nibbles up in [`NIBBLES`] (one byte shuffle per nibble), which gives the magics whose
/// pair it holds, exactly; the positions with one are then compared with the whole magic.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn first_magic_avx2(data: &[u8]) -> Option<usize> {
    use std::arch::x86_64::{
        __m256i, _mm256_and_si256, _mm256_broadcastsi128_si256, _mm256_cmpeq_epi8,
        _mm256_loadu_si256, _mm256_movemask_epi8, _mm256_set1_epi8, _mm256_setzero_si256,
        _mm256_shuffle_epi8, _mm256_srli_epi16, _mm_loadu_si128,
    };
    let table = |nibbles: &[u8; 16]| {
        // SAFETY: 16 bytes are read from an array of 16.
        _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(nibbles.as_ptr().cast()) })
    };
    let [low_first, high_first, low_second, high_second] = NIBBLES.each_ref().map(table);
    let low = _mm256_set1_epi8(0x0f);
    // The magics each of 32 bytes is the first (or the SECOND) byte of.
    let bits = |bytes: __m256i, low_table: __m256i, high_table: __m256i| {
        let low_nibbles = _mm256_and_si256(bytes, low);
        let high_nibbles = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), low);
        _mm256_and_si256(
            _mm256_shuffle_epi8(low_table, low_nibbles),
            _mm256_shuffle_epi8(high_table, high_nibbles),
        )
    };
    let mut at = 0;
    while at + BLOCK + SECOND <= data.len() {
        // SAFETY: both loads read 32 bytes from `at` and from `at + SECOND`, the last of
        // them below `at + BLOCK + SECOND`, which is at most the data's length.
        let (first, second) = unsafe {
            let here = data.as_ptr().add(at);
            (
                _mm256_loadu_si256(here.cast()),
                _mm256_loadu_si256(here.add(SECOND).cast()),
            )
        };
        let pairs = _mm256_and_si256(
            bits(first, low_first, high_first),
            bits(second, low_second, high_second),
        );
        let none = _mm256_movemask_epi8(_mm256_cmpeq_epi8(pairs, _mm256_setzero_si256()));
        let mut hits = !(none as u32);
        while hits != 0 {
            let p = at + hits.trailing_zeros() as usize;
            if magic_at(data, p) {
                return Some(p);
            }
            hits &= hits - 1;
        }
        at += BLOCK;
    }
    // The last positions, fewer than a block.
    (at..data.len()).find(|&p| magic_at(data, p))
}

/// [`first_magic`] for the instructions this function is compiled for.
#[inline(always)]
fn first_magic_here(data: &[u8]) -> Option<usize> {
    let mut at = 0;
    while let Some(block) = data.get(at..at + BLOCK + SECOND) {
        let Ok(block) = block.try_into() else {
            break;
        };
        // The rare block where a pair matches is looked at again, position by position, and
        // only the positions that hold a pair are compared with the magics.
        let mut pairs = if pair_in_block(block) {
            pairs_in_block(block)
        } else {
            0
        };
        while pairs != 0 {
            let p = at + pairs.trailing_zeros() as usize;
            if magic_at(data, p) {
                return Some(p);
            }
            pairs &= pairs - 1;
        }
        at += BLOCK;
    }
    // The last positions, fewer than a block.
    (at..data.len()).find(|&p| magic_at(data, p))
}

/// Whether one of the [`BLOCK`] positions at the start of `block` holds the first and the
/// [`SECOND`] byte of a magic. Written without branches, so that it compiles to comparisons
/// of whole vectors, and without closures, so that it is quick in a build without
/// optimisations too (the tests').
#[inline(always)]
// Every index is below BLOCK + SECOND, the array's length.
#[allow(clippy::indexing_slicing)]
fn pair_in_block(block: &[u8; BLOCK + SECOND]) -> bool {
    let [(a0, b0), (a1, b1), (a2, b2), (a3, b3), (a4, b4), (a5, b5), (a6, b6)] = PAIRS;
    let mut hits = false;
    for i in 0..BLOCK {
        let (a, b) = (block[i], block[i + SECOND]);
        hits |= (a == a0) & (b == b0)
            | (a == a1) & (b == b1)
            | (a == a2) & (b == b2)
            | (a == a3) & (b == b3)
            | (a == a4) & (b == b4)
            | (a == a5) & (b == b5)
            | (a == a6) & (b == b6);
    }
    hits
}

/// The [`BLOCK`] positions at the start of `block` that hold the first and the [`SECOND`]
/// byte of a magic, a bit each (the lowest for the first position).
#[inline(always)]
// Every index is below BLOCK + SECOND, the array's length.
#[allow(clippy::indexing_slicing)]
fn pairs_in_block(block: &[u8; BLOCK + SECOND]) -> u32 {
    let [(a0, b0), (a1, b1), (a2, b2), (a3, b3), (a4, b4), (a5, b5), (a6, b6)] = PAIRS;
    let mut hits = 0u32;
    for i in 0..BLOCK {
        let (a, b) = (block[i], block[i + SECOND]);
        let hit = (a == a0) & (b == b0)
            | (a == a1) & (b == b1)
            | (a == a2) & (b == b2)
            | (a == a3) & (b == b3)
            | (a == a4) & (b == b4)
            | (a == a5) & (b == b5)
            | (a == a6) & (b == b6);
        hits |= u32::from(hit) << i;
    }
    hits
}

/// Whether one of [`MAGICS`] starts at `position` of `data`: only a magic whose pair the
/// position holds is compared whole.
#[inline(always)]
fn magic_at(data: &[u8], position: usize) -> bool {
    let Some(rest) = data.get(position..) else {
        return false;
    };
    let (Some(&first), Some(&second)) = (rest.first(), rest.get(SECOND)) else {
        return false;
    };
    PAIRS
        .iter()
        .zip(MAGICS)
        .any(|(&pair, magic)| pair == (first, second) && rest.starts_with(magic))
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::format::container::{Container, CONTAINERS};

    #[test]
    fn the_magics_are_those_of_the_containers_found_by_magic() {
        let found: Vec<&[u8]> = CONTAINERS
            .into_iter()
            .filter(|c| c.found_by_magic())
            .map(Container::magic)
            .collect();
        assert_eq!(found, MAGICS[..CONTAINER_MAGICS]);
        assert_eq!(MAGICS[CONTAINER_MAGICS], ELF_MAGIC);
    }

    /// The first position of any magic, one magic at a time: what the search must agree with.
    fn slowly(data: &[u8]) -> Option<usize> {
        MAGICS
            .iter()
            .filter_map(|m| memchr::memmem::find(data, m))
            .min()
    }

    #[test]
    fn finds_each_magic_at_every_position_of_a_block_and_past_the_last() {
        for magic in MAGICS {
            for position in 0..3 * BLOCK + 7 {
                for len in [position + magic.len(), position + magic.len() + 5, 200] {
                    if len < position + magic.len() {
                        continue;
                    }
                    // Bytes that hold each magic's pair but never a whole magic.
                    let mut data: Vec<u8> = (0..len)
                        .map(|i| match i % 7 {
                            0 => b'_',
                            SECOND => b'C',
                            _ => b'L',
                        })
                        .collect();
                    data[position..position + magic.len()].copy_from_slice(magic);
                    assert_eq!(
                        first_magic(&data),
                        slowly(&data),
                        "{magic:x?} at {position}"
                    );
                    assert_eq!(first_magic_here(&data), slowly(&data));
                }
            }
        }
    }

    #[test]
    fn the_vector_search_agrees_with_one_magic_at_a_time_on_random_bytes() {
        // Random bytes (a fixed sequence) with whole magics, and each magic but its last
        // byte, planted at random places: every start agrees with the plain search.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut below =
            move |n: usize| usize::try_from(next() % u64::try_from(n).unwrap()).unwrap();
        let mut data: Vec<u8> = (0..70_000).map(|_| below(256).to_le_bytes()[0]).collect();
        for k in 0..60 {
            let magic = MAGICS[k % MAGICS.len()];
            let at = below(data.len() - magic.len());
            let cut = if k % 3 == 0 {
                magic.len() - 1
            } else {
                magic.len()
            };
            data[at..at + cut].copy_from_slice(&magic[..cut]);
        }
        let mut from = 0;
        while from < data.len() {
            let rest = &data[from..];
            assert_eq!(first_magic(rest), slowly(rest), "from {from}");
            assert_eq!(first_magic_here(rest), slowly(rest), "from {from}");
            from += 1 + below(997);
        }
    }

    #[test]
    fn the_first_of_several_magics_is_found() {
        let mut data = vec![0u8; 300];
        data[250..254].copy_from_slice(ccob::MAGIC);
        data[100..104].copy_from_slice(&offload_binary::MAGIC);
        data[40..64].copy_from_slice(bundle::MAGIC);
        assert_eq!(first_magic(&data), Some(40));
        assert_eq!(first_magic(&data[41..]), Some(59));
        assert_eq!(first_magic(&data[101..]), Some(149));
        assert_eq!(first_magic(&data[251..]), None);
        assert_eq!(first_magic(&[]), None);
        assert_eq!(first_magic(b"CCO"), None);
    }
}
