//! MD5 of many messages at once, one message in each lane of the vector registers.
//!
//! One MD5 cannot be split (each of a block's 64 steps waits on the one before), so one core
//! hashes one message at about 800 MB/s however wide its registers. Sixteen messages side by
//! side make sixteen independent chains that one vector instruction advances together: the
//! compressed bundles of a library, each needing its own hash, are hashed this way several
//! times faster than one after another. A message takes a lane while it has whole blocks;
//! when its lane runs out, its last bytes are hashed on their own ([`Md5::resumed`]) and the
//! next message takes the lane.
//!
//! The steps are written for arrays of lanes, which the compiler turns into vector
//! instructions; on x86-64 the same code is also built for AVX-512 and AVX2, chosen when
//! the processor has them.

use crate::format::md5::{schedule, Md5, SINES, START};

/// Messages hashed side by side.
const LANES: usize = 16;

/// One word of every lane.
type Lanes = [u32; LANES];

/// Hashes each of `messages`, taking them in the order given, and hands `done` each digest
/// with the message's index as soon as it is known.
pub(crate) fn digests(messages: &[&[u8]], mut done: impl FnMut(usize, [u8; 16])) {
    let mut next = messages.iter().enumerate();
    // Each lane's message (its index, its length) and its whole blocks not yet hashed.
    let mut lanes: [Option<(usize, usize, &[u8])>; LANES] = [None; LANES];
    let mut state: [Lanes; 4] = START.map(|word| [word; LANES]);
    loop {
        for (l, lane) in lanes.iter_mut().enumerate() {
            if lane.is_some() {
                continue;
            }
            // The next message with a whole block; shorter ones are hashed at once.
            for (index, &message) in next.by_ref() {
                let whole = message.len() - message.len() % 64;
                if let Some(blocks) = message.get(..whole).filter(|b| !b.is_empty()) {
                    *lane = Some((index, message.len(), blocks));
                    for (word, start) in state.iter_mut().zip(START) {
                        if let Some(w) = word.get_mut(l) {
                            *w = start;
                        }
                    }
                    break;
                }
                done(index, Md5::digest(message));
            }
        }
        // As many blocks as the shortest message in a lane has left.
        let Some(count) = lanes.iter().flatten().map(|(_, _, b)| b.len() / 64).min() else {
            return;
        };
        let taken = count * 64;
        let inputs: [&[u8]; LANES] = lanes.map(|lane| {
            lane.and_then(|(_, _, b)| b.get(..taken))
                .unwrap_or_default()
        });
        hash_blocks(&mut state, &inputs, count);
        for (l, lane) in lanes.iter_mut().enumerate() {
            let Some((index, len, blocks)) = lane else {
                continue;
            };
            *blocks = blocks.get(taken..).unwrap_or_default();
            if !blocks.is_empty() {
                continue;
            }
            let words = state.map(|word| word.get(l).copied().unwrap_or_default());
            let whole = *len - *len % 64;
            let mut md5 = Md5::resumed(words, whole as u64);
            if let Some(message) = messages.get(*index) {
                md5.update(message.get(whole..).unwrap_or_default());
            }
            done(*index, md5.finalize());
            *lane = None;
        }
    }
}

/// Hashes `count` blocks of each lane's input into `state` (a lane whose input is empty is
/// given zeros: its state is not read), with the widest instructions the processor has.
fn hash_blocks(state: &mut [Lanes; 4], inputs: &[&[u8]; LANES], count: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the processor has AVX-512F, checked just above.
            return unsafe { hash_blocks_avx512(state, inputs, count) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2, checked just above.
            return unsafe { hash_blocks_avx2(state, inputs, count) };
        }
    }
    hash_blocks_portable(state, inputs, count);
}

/// [`hash_blocks_portable`] built for AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn hash_blocks_avx512(state: &mut [Lanes; 4], inputs: &[&[u8]; LANES], count: usize) {
    hash_blocks_portable(state, inputs, count);
}

/// [`hash_blocks_portable`] built for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn hash_blocks_avx2(state: &mut [Lanes; 4], inputs: &[&[u8]; LANES], count: usize) {
    hash_blocks_portable(state, inputs, count);
}

/// [`hash_blocks`] in code for any processor, inlined into the builds for wider ones.
#[inline(always)]
fn hash_blocks_portable(state: &mut [Lanes; 4], inputs: &[&[u8]; LANES], count: usize) {
    let mut m: [Lanes; 16] = [[0; LANES]; 16];
    for k in 0..count {
        // The words of block `k` of every lane, word `j` of lane `l` at `m[j][l]`.
        for (l, input) in inputs.iter().enumerate() {
            let block = input.get(k * 64..k * 64 + 64).unwrap_or(&[0; 64]);
            for (word, bytes) in m.iter_mut().zip(block.chunks_exact(4)) {
                if let Some(w) = word.get_mut(l) {
                    *w = u32::from_le_bytes(bytes.try_into().unwrap_or_default());
                }
            }
        }
        one_block(state, &m);
    }
}

/// One block of every lane: the 64 steps of RFC 1321, each on all lanes at once.
// The lane indices run over the arrays' own length.
#[allow(clippy::indexing_slicing)]
#[inline(always)]
fn one_block(state: &mut [Lanes; 4], m: &[Lanes; 16]) {
    let [mut a, mut b, mut c, mut d] = *state;
    // One step: `$a` becomes `$b + (($a + f($b, $c, $d) + sine + word) <<< $s)` in each lane.
    macro_rules! step {
        ($f:ident, $a:ident, $b:ident, $c:ident, $d:ident, $i:expr, $w:expr, $s:expr) => {
            for l in 0..LANES {
                let sum = $a[l]
                    .wrapping_add($f($b[l], $c[l], $d[l]))
                    .wrapping_add(SINES[$i])
                    .wrapping_add(m[$w][l]);
                $a[l] = sum.rotate_left($s).wrapping_add($b[l]);
            }
        };
    }
    schedule!(step, a, b, c, d);
    for (word, new) in state.iter_mut().zip([a, b, c, d]) {
        for (w, n) in word.iter_mut().zip(new) {
            *w = w.wrapping_add(n);
        }
    }
}

/// Round 1: `(x & y) | (!x & z)`.
#[inline(always)]
fn f(x: u32, y: u32, z: u32) -> u32 {
    z ^ (x & (y ^ z))
}

/// Round 2: `(x & z) | (y & !z)`.
#[inline(always)]
fn g(x: u32, y: u32, z: u32) -> u32 {
    (x & z) | (y & !z)
}

/// Round 3: `x ^ y ^ z`.
#[inline(always)]
fn h(x: u32, y: u32, z: u32) -> u32 {
    x ^ y ^ z
}

/// Round 4: `y ^ (x | !z)`.
#[inline(always)]
fn i(x: u32, y: u32, z: u32) -> u32 {
    y ^ (x | !z)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;

    fn bytes(len: usize, seed: u32) -> Vec<u8> {
        (0..len as u32)
            .map(|k| (k.wrapping_add(seed).wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect()
    }

    fn hashed_side_by_side(messages: &[&[u8]]) -> Vec<[u8; 16]> {
        let mut found = vec![None; messages.len()];
        digests(messages, |index, digest| {
            assert!(found[index].replace(digest).is_none(), "{index} twice");
        });
        found
            .into_iter()
            .map(|d| d.expect("every message"))
            .collect()
    }

    #[test]
    fn each_message_gets_its_own_hash_whatever_the_lengths() {
        use md5::Digest;
        // More messages than lanes, of lengths around block boundaries and far apart, so
        // that lanes empty and fill at different times.
        let lengths: Vec<usize> = (0..150)
            .map(|k| match k % 7 {
                0 => 0,
                1 => 55 + k % 3,
                2 => 64 * (k % 5),
                3 => 64 * (k % 9) + 63,
                4 => 5_000 + 97 * k,
                5 => 40_000 - 13 * k,
                _ => 1 + k,
            })
            .collect();
        let data: Vec<Vec<u8>> = (0..lengths.len())
            .map(|k| bytes(lengths[k], k as u32))
            .collect();
        let messages: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
        let got = hashed_side_by_side(&messages);
        for (k, message) in messages.iter().enumerate() {
            let want: [u8; 16] = md5::Md5::digest(message).into();
            assert_eq!(got[k], want, "message {k} of {} bytes", message.len());
        }
    }

    #[test]
    fn the_portable_blocks_are_the_wide_ones() {
        let data: Vec<Vec<u8>> = (0..LANES).map(|l| bytes(64 * 3, l as u32)).collect();
        let inputs: [&[u8]; LANES] = std::array::from_fn(|l| data[l].as_slice());
        let mut portable = START.map(|w| [w; LANES]);
        hash_blocks_portable(&mut portable, &inputs, 3);
        let mut best = START.map(|w| [w; LANES]);
        hash_blocks(&mut best, &inputs, 3);
        assert_eq!(portable, best);
    }

    #[test]
    fn no_messages_nothing_done() {
        digests(&[], |_, _| panic!("nothing to hash"));
    }
}
