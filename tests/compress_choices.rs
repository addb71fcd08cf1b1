//! `offload compress --format-version`, the version it writes by default, compressing what is
//! compressed already (a no-op that reads only the bundle's header), and stripping compressed
//! bundles, which stay compressed as they were.

use std::path::Path;

use offload::format::bundle;
use offload::format::ccob::{self, CompressOptions, CompressedBundle, Method};

use crate::util::{offload, offload_in, samples_dir, text_output};

/// The (version, method code) of every compressed bundle in `bytes`, found by their magic
/// and walked by their sizes.
fn compressed_bundles(bytes: &[u8]) -> Vec<(u16, Method)> {
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(skip) = memchr::memmem::find(&bytes[at..], ccob::MAGIC) {
        let bundle = CompressedBundle::parse(&bytes[at + skip..])
            .unwrap()
            .unwrap();
        found.push((bundle.version, bundle.method));
        at += skip + bundle.size() as usize;
    }
    found
}

/// A bare bundle file of two bundles, plain.
fn plain_bundles(dir: &Path) -> &'static str {
    std::fs::copy(
        samples_dir().join("clang/kernel-fatbin.hip_fatbin"),
        dir.join("plain.bundle"),
    )
    .unwrap();
    "plain.bundle"
}

#[test]
fn the_format_version_is_chosen_or_follows_the_llvm_release() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plain = plain_bundles(d);
    for (version, expected) in [("2", 2), ("3", 3)] {
        let (code, _, err) = offload_in(
            d,
            &["compress", plain, "--format-version", version, "-o", "v.z"],
        );
        assert_eq!(code, 0, "{err}");
        let bytes = std::fs::read(d.join("v.z")).unwrap();
        assert_eq!(compressed_bundles(&bytes), [(expected, Method::Zstd)]);
    }
    // Without the flag: what the LLVM release it stands in for writes.
    for (release, expected) in [("19", 2), ("22", 3)] {
        let (code, _, err) = text_output(
            offload()
                .current_dir(d)
                .env("OFFLOAD_LLVM_VERSION", release)
                .args(["compress", plain, "--method", "zlib", "-o", "d.z"]),
        );
        assert_eq!(code, 0, "{err}");
        let bytes = std::fs::read(d.join("d.z")).unwrap();
        assert_eq!(compressed_bundles(&bytes), [(expected, Method::Zlib)]);
    }
    let (code, _, err) = offload_in(d, &["compress", plain, "--format-version", "1", "-o", "x"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("invalid value '1' for '--format-version <FORMAT_VERSION>'"),
        "{err}"
    );
    assert!(!d.join("x").exists());
}

/// A compressed bundle (version 3, zstd) of a bundle with a 2 MiB entry that does not
/// compress.
fn compressed_stream() -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let code: Vec<u8> = (0..2 << 20)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    let plain = bundle::to_vec(
        &[
            ("host-x86_64-unknown-linux-gnu-", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", &code),
        ],
        4096,
    );
    let options = CompressOptions {
        method: Method::Zstd,
        level: 3,
        version: 3,
    };
    ccob::compress(&plain, &options).unwrap().0
}

/// [`compressed_stream`] with its stream cut after its first half: its header inflates, the
/// rest fails.
fn cut_stream() -> Vec<u8> {
    let mut whole = compressed_stream();
    whole.truncate(whole.len() / 2);
    let total = whole.len() as u64;
    whole[8..16].copy_from_slice(&total.to_le_bytes());
    whole
}

#[test]
fn compressing_what_is_compressed_alike_reads_only_the_header_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bytes = cut_stream();
    std::fs::write(d.join("cut.z"), &bytes).unwrap();
    // The whole stream cannot be inflated: decompressing fails.
    let (code, _, err) = offload_in(d, &["decompress", "cut.z", "-o", "never"]);
    assert_eq!(code, 1, "{err}");
    // Compressing it as it is compressed inflates no more than its header.
    let (code, out, err) = offload_in(
        d,
        &["compress", "cut.z", "--format-version", "3", "-o", "out"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        format!(
            "cut.z: 1 bundle already compressed with zstd, format version 3, left as they were: nothing to do\n\
             cut.z: 1 device images went to 1, {0} bytes to {0} (0 bundles or binaries rewritten)\n",
            bytes.len()
        )
    );
    assert_eq!(std::fs::read(d.join("out")).unwrap(), bytes);
    // In place, the file is not even written.
    let before = std::fs::metadata(d.join("cut.z"))
        .unwrap()
        .modified()
        .unwrap();
    let (code, _, err) = offload_in(
        d,
        &["compress", "cut.z", "--format-version", "3", "--in-place"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(d.join("cut.z")).unwrap(), bytes);
    assert_eq!(
        std::fs::metadata(d.join("cut.z"))
            .unwrap()
            .modified()
            .unwrap(),
        before
    );
}

#[test]
fn another_format_version_rewrites_only_the_header() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bytes = compressed_stream();
    std::fs::write(d.join("cut.z"), &bytes).unwrap();
    let (code, out, err) = offload_in(
        d,
        &["compress", "cut.z", "--format-version", "2", "-o", "v2"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.ends_with("(1 bundles or binaries rewritten)\n"),
        "{out}"
    );
    let v2 = std::fs::read(d.join("v2")).unwrap();
    let (old, new) = (
        CompressedBundle::parse(&bytes).unwrap().unwrap(),
        CompressedBundle::parse(&v2).unwrap().unwrap(),
    );
    assert_eq!((new.version, new.method), (2, Method::Zstd));
    assert_eq!(new.payload, old.payload);
    assert_eq!(
        (new.uncompressed_size, new.hash),
        (old.uncompressed_size, old.hash)
    );
    assert_eq!(v2.len(), bytes.len() - 8);
    // Version 2 holds sizes in 32 bits: a bundle that says it inflates past 4 GiB is refused.
    let mut huge = bytes.clone();
    huge[16..24].copy_from_slice(&(5u64 << 30).to_le_bytes());
    std::fs::write(d.join("huge.z"), &huge).unwrap();
    let (code, _, err) = offload_in(
        d,
        &["compress", "huge.z", "--format-version", "2", "-o", "x"],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("version 2 uncompressed size 5368709120 does not fit in its header field"),
        "{err}"
    );
    assert!(!d.join("x").exists());
}

#[test]
fn stripped_compressed_bundles_keep_their_version_and_method() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plain = plain_bundles(d);
    for (version, method) in [("2", "zlib"), ("3", "zstd"), ("2", "zstd"), ("3", "zlib")] {
        let (code, _, err) = offload_in(
            d,
            &[
                "compress",
                plain,
                "--format-version",
                version,
                "--method",
                method,
                "-o",
                "z",
            ],
        );
        assert_eq!(code, 0, "{err}");
        let before = compressed_bundles(&std::fs::read(d.join("z")).unwrap());
        let (code, out, err) = offload_in(d, &["strip", "z", "--keep", "gfx90a", "-o", "s"]);
        assert_eq!(code, 0, "{err}");
        assert!(out.starts_with("z: 2 device images went to 1,"), "{out}");
        let after = compressed_bundles(&std::fs::read(d.join("s")).unwrap());
        assert_eq!(after, before, "{version} {method}");
    }
    // A program of LLVM 22 with version 3 bundles: stripped, they stay version 3, zstd.
    let program = samples_dir().join("targets/mixed-app-z");
    let before = compressed_bundles(&std::fs::read(&program).unwrap());
    assert_eq!(before, [(3, Method::Zstd), (3, Method::Zstd)]);
    let (code, _, err) = offload_in(
        d,
        &[
            "strip",
            program.to_str().unwrap(),
            "--keep",
            "gfx1100",
            "-o",
            "app",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        compressed_bundles(&std::fs::read(d.join("app")).unwrap()),
        before
    );
}
