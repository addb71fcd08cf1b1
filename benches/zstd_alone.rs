//! The floor of `offload compress` on a library: the CPU time of the zstd library alone at
//! the parameters LLVM's bundler uses (level 3, long-distance matching, one frame per bundle,
//! one context reused), and of the MD5 each header carries, over every plain bundle of the
//! file, on one thread, nothing read or written but the mapped input.
//!
//!   cargo bench --bench zstd_alone -- LIBRARY
//!
//! Prints the bundles' total size, what they compress to, and the CPU seconds (user + system)
//! of each part (the MD5s one after another, and side by side as `compress` takes them). Beside `zstd -T2 -3 --long` of the same file (`/usr/bin/time`), it tells how
//! near the per-bundle frames LLVM's bytes need can come.

use offload::format::{bundle, ccob};
use std::time::Instant;

/// CPU seconds (user + system) of this process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes the struct it is given and nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// The plain bundles of `data`, each whole, found by their magic.
fn bundles(data: &[u8]) -> Vec<&[u8]> {
    let magic = b"__CLANG_OFFLOAD_BUNDLE__";
    let mut found = Vec::new();
    let mut pos = 0;
    while let Some(at) = memchr::memmem::find(&data[pos..], magic) {
        let start = pos + at;
        match bundle::Bundle::parse(&data[start..]) {
            Ok(Some(parsed)) => {
                let size = parsed.size() as usize;
                found.push(&data[start..start + size]);
                pos = start + size.max(1);
            }
            _ => pos = start + 1,
        }
    }
    found
}

fn timed<T>(what: &str, work: impl FnOnce() -> T) -> T {
    let (cpu, wall) = (cpu_seconds(), Instant::now());
    let result = work();
    println!(
        "{what}: {:.2} s CPU, {:.2} s wall",
        cpu_seconds() - cpu,
        wall.elapsed().as_secs_f64()
    );
    result
}

fn main() {
    let Some(path) = std::env::args().skip(1).find(|a| !a.starts_with('-')) else {
        eprintln!("usage: cargo bench --bench zstd_alone -- LIBRARY");
        return;
    };
    let file = std::fs::File::open(&path).expect("the library opens");
    // SAFETY: the file is only read, and is not changed while the bench runs.
    let data = unsafe { memmap2::Mmap::map(&file) }.expect("the library maps");
    let found = bundles(&data);
    let total: usize = found.iter().map(|b| b.len()).sum();
    println!("{} plain bundles, {total} bytes", found.len());
    // Read once, so that the timings below are of warm pages.
    timed("reading", || {
        found
            .iter()
            .map(|b| b.iter().step_by(4096).count())
            .sum::<usize>()
    });
    let options = ccob::CompressOptions::default();
    let packed = timed("zstd -3 --long per bundle, one thread", || {
        found
            .iter()
            .map(|b| {
                ccob::compress_payload(b, &options)
                    .expect("compresses")
                    .len()
            })
            .sum::<usize>()
    });
    println!("compressed to {packed} bytes");
    timed("MD5 per bundle, one thread", || {
        found
            .iter()
            .map(|b| ccob::truncated_md5(b))
            .fold(0, u64::wrapping_add)
    });
    timed("MD5 of all bundles side by side, one thread", || {
        let mut sum = 0u64;
        ccob::truncated_md5s(&found, |_, hash| sum = sum.wrapping_add(hash));
        sum
    });
}
