//! Criterion benchmarks of the codecs: bundle header parsing, entry ordering, text bundle
//! parsing, compressed bundle splitting and round trips, and the search for magics.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use offload::format::{bundle, ccob, text_bundle};
use std::hint::black_box;

fn entries(n: usize, size: usize) -> (Vec<String>, Vec<Vec<u8>>) {
    let ids = (0..n)
        .map(|i| format!("hipv4-amdgcn-amd-amdhsa--gfx{}", 900 + i))
        .collect();
    let data = (0..n).map(|i| vec![(i % 251) as u8; size]).collect();
    (ids, data)
}

fn bench_bundle(c: &mut Criterion) {
    let (ids, data) = entries(64, 4096);
    let refs: Vec<(&str, &[u8])> = ids
        .iter()
        .map(String::as_str)
        .zip(data.iter().map(Vec::as_slice))
        .collect();
    let bytes = bundle::to_vec(&refs, 4096);
    c.bench_function("bundle header parse, 64 entries", |b| {
        b.iter(|| {
            bundle::Bundle::parse(black_box(&bytes))
                .unwrap()
                .unwrap()
                .entries()
                .len()
        })
    });
    c.bench_function("bundle entries in LLVM order, 64 entries", |b| {
        let parsed = bundle::Bundle::parse(&bytes).unwrap().unwrap();
        b.iter(|| {
            black_box(&parsed)
                .entries_in_llvm_order(offload::llvm::adt::string_map::Probing::Quadratic)
                .len()
        })
    });
    c.bench_function("bundle layout, 64 entries", |b| {
        let sizes: Vec<(&str, u64)> = ids.iter().map(|s| (s.as_str(), 4096u64)).collect();
        b.iter(|| bundle::layout(black_box(&sizes), 4096).unwrap().size)
    });
}

fn bench_text(c: &mut Criterion) {
    let (ids, _) = entries(8, 0);
    let body = "define void @f() {\n  ret void\n}\n".repeat(20_000);
    let refs: Vec<(&str, &[u8])> = ids.iter().map(|s| (s.as_str(), body.as_bytes())).collect();
    let mut bytes = Vec::new();
    text_bundle::write(&mut bytes, ";", &refs).unwrap();
    let mut group = c.benchmark_group("text bundle");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("parse 8 entries", |b| {
        b.iter(|| text_bundle::parse(black_box(&bytes), ";").unwrap().len())
    });
    group.finish();
}

fn bench_ccob(c: &mut Criterion) {
    let (ids, data) = entries(4, 1 << 20);
    let refs: Vec<(&str, &[u8])> = ids
        .iter()
        .map(String::as_str)
        .zip(data.iter().map(Vec::as_slice))
        .collect();
    let plain = bundle::to_vec(&refs, 4096);
    let options = ccob::CompressOptions::default();
    let (one, _) = ccob::compress(&plain, &options).unwrap();
    let mut stream = Vec::new();
    for _ in 0..64 {
        stream.extend_from_slice(&one);
        stream.resize(stream.len().next_multiple_of(4096), 0);
    }
    c.bench_function("split a stream of 64 compressed bundles", |b| {
        b.iter(|| ccob::split(black_box(&stream)).count())
    });
    let mut group = c.benchmark_group("compressed bundle");
    group.throughput(Throughput::Bytes(plain.len() as u64));
    group.sample_size(20);
    group.bench_function("compress 4 MiB, zstd 3", |b| {
        b.iter(|| ccob::compress(black_box(&plain), &options).unwrap().1.total)
    });
    group.bench_function("decompress and verify 4 MiB", |b| {
        let parsed = ccob::CompressedBundle::parse(&one).unwrap().unwrap();
        b.iter(|| parsed.decompress(u64::MAX).unwrap().len())
    });
    group.finish();
}

/// Scanning 1 GiB of host data for the magics: random bytes (a few chance magics, which the
/// search steps over), the work of a search through the data of a large library that holds
/// no device code there.
fn bench_scan(c: &mut Criterion) {
    use offload::format::container::next_magic;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut data = vec![0u8; 1 << 30];
    for chunk in data.chunks_exact_mut(8) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        chunk.copy_from_slice(&state.to_le_bytes());
    }
    let mut group = c.benchmark_group("scan");
    group.throughput(Throughput::Bytes(data.len() as u64));
    group.sample_size(10);
    group.bench_function("search 1 GiB for the magics", |b| {
        b.iter(|| {
            let (mut at, mut found) = (0, 0);
            while let Some(k) = next_magic(black_box(&data[at..])) {
                at += k + 1;
                found += 1;
            }
            found
        })
    });
    group.finish();
}

criterion_group!(benches, bench_bundle, bench_text, bench_ccob, bench_scan);
criterion_main!(benches);
