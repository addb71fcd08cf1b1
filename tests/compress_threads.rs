//! `offload compress` of many bundles of uneven sizes: the bytes do not depend on the number
//! of threads nor on the order the bundles are taken in (largest first), and each bundle's
//! stream is the one a zstd context made for it alone writes, although each thread reuses
//! one context from bundle to bundle.

use std::path::Path;

use offload::format::bundle;
use offload::format::ccob::{self, CompressedBundle};

use crate::util::offload_in;

/// Bytes that compress as code does, some runs repeated far apart (for long-distance
/// matching), from `seed`.
fn code_like(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        if state % 5 == 0 && out.len() > 4096 {
            // A run copied from far back.
            let from = (state >> 8) as usize % (out.len() - 2048);
            let run = 256 + (state >> 40) as usize % 1792;
            out.extend_from_within(from..from + run);
        } else {
            out.extend((0..16).map(|i| ((state >> (i * 4)) & 0x1f) as u8));
        }
    }
    out.truncate(len);
    out
}

/// A bare file of `sizes.len()` plain bundles one after another, of two entries each, the
/// first about the size given.
fn many_bundles(sizes: &[usize]) -> Vec<u8> {
    let mut file = Vec::new();
    for (i, &size) in sizes.iter().enumerate() {
        let code = code_like(size, i as u64 + 1);
        let small = code_like(300 + i * 7, i as u64 + 1000);
        let entries: [(&str, &[u8]); 2] = [
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", &code),
            ("hipv4-amdgcn-amd-amdhsa--gfx1100", &small),
        ];
        file.extend_from_slice(&bundle::to_vec(&entries, 4096));
        // Zero padding to the next 4 KiB, as a section of bundles has.
        file.resize(file.len().next_multiple_of(4096), 0);
    }
    file
}

/// Compresses `input` (in `dir`) with `threads` threads into `output`, read back.
fn compressed(dir: &Path, input: &str, threads: &str, output: &str) -> Vec<u8> {
    let (code, _, err) = offload_in(
        dir,
        &[
            "compress",
            input,
            "-j",
            threads,
            "--format-version",
            "3",
            "-o",
            output,
        ],
    );
    assert_eq!(code, 0, "{err}");
    std::fs::read(dir.join(output)).unwrap()
}

/// The payload a zstd context made for `plain` alone writes, at LLVM's parameters.
fn fresh_stream(plain: &[u8]) -> Vec<u8> {
    let mut compressor = zstd::bulk::Compressor::new(3).unwrap();
    compressor
        .set_parameter(zstd::zstd_safe::CParameter::EnableLongDistanceMatching(
            true,
        ))
        .unwrap();
    compressor.compress(plain).unwrap()
}

#[test]
fn many_uneven_bundles_compress_to_the_same_bytes_on_one_thread_or_eight() {
    // Large ones among small ones, the largest neither first nor last: a few go through the
    // room made for large bundles (4 MiB and more), a few are hashed aside (8 MiB and more).
    let mut sizes: Vec<usize> = (0..40).map(|i| 2_000 + (i * 7_919) % 300_000).collect();
    sizes[5] = 9 << 20;
    sizes[17] = 5 << 20;
    sizes[18] = 12 << 20;
    sizes[30] = 4 << 20;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plain = many_bundles(&sizes);
    std::fs::write(d.join("many.bundles"), &plain).unwrap();

    let one = compressed(d, "many.bundles", "1", "one.z");
    for run in 0..3 {
        let eight = compressed(d, "many.bundles", "8", &format!("eight{run}.z"));
        assert!(eight == one, "run {run} on 8 threads differs from 1 thread");
    }

    // Every bundle is there, in order, each stream the one a fresh context writes.
    let mut at = 0;
    let mut plain_at = 0;
    let mut count = 0;
    while let Some(skip) = memchr::memmem::find(&one[at..], ccob::MAGIC) {
        let stored = CompressedBundle::parse(&one[at + skip..]).unwrap().unwrap();
        let inflated = stored.decompress(ccob::DEFAULT_MAX_DECOMPRESSED).unwrap();
        plain_at += plain[plain_at..].iter().position(|&b| b != 0).unwrap();
        assert_eq!(inflated, plain[plain_at..plain_at + inflated.len()]);
        let header = ccob::header_size(3).unwrap() as usize;
        let payload = &one[at + skip + header..at + skip + stored.size() as usize];
        assert!(
            payload == fresh_stream(&inflated).as_slice(),
            "bundle {count} is not the stream a fresh context makes"
        );
        plain_at += inflated.len();
        at += skip + stored.size() as usize;
        count += 1;
    }
    assert_eq!(count, sizes.len());
}
