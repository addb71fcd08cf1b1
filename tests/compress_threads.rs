//! `offload compress` of many bundles of uneven sizes: the bytes do not depend on the number
//! of threads nor on the order the bundles are taken in (largest first), and each bundle's
//! stream is the one a zstd context made for it alone writes, although each thread reuses
//! one context from bundle to bundle, and the bundles of a shared library are made in room
//! lent again from one bundle to the next.

use std::path::Path;

use offload::format::bundle;
use offload::format::ccob::{self, CompressedBundle};

use crate::util::{offload_in, text_output};

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
    bundles_of(sizes, &code_like)
}

/// [`many_bundles`] with the first entry of bundle `i` made by `code` (its size, `i + 1`).
fn bundles_of(sizes: &[usize], code: &dyn Fn(usize, u64) -> Vec<u8>) -> Vec<u8> {
    let mut file = Vec::new();
    for (i, &size) in sizes.iter().enumerate() {
        let code = code(size, i as u64 + 1);
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

    assert_eq!(streams_of(&one, &plain), sizes.len());
}

/// Checks that the compressed bundles of `packed` (found by their magic) hold the plain
/// bundles of `plain` (zero padding between them) in order, each stream the one a fresh zstd
/// context writes: how many there are.
fn streams_of(packed: &[u8], plain: &[u8]) -> usize {
    let mut at = 0;
    let mut plain_at = 0;
    let mut count = 0;
    while let Some(skip) = memchr::memmem::find(&packed[at..], ccob::MAGIC) {
        let stored = CompressedBundle::parse(&packed[at + skip..])
            .unwrap()
            .unwrap();
        let inflated = stored.decompress(ccob::DEFAULT_MAX_DECOMPRESSED).unwrap();
        plain_at += plain[plain_at..].iter().position(|&b| b != 0).unwrap();
        assert_eq!(inflated, plain[plain_at..plain_at + inflated.len()]);
        let header = ccob::header_size(3).unwrap() as usize;
        let payload = &packed[at + skip + header..at + skip + stored.size() as usize];
        assert!(
            payload == fresh_stream(&inflated).as_slice(),
            "bundle {count} is not the stream a fresh context makes"
        );
        plain_at += inflated.len();
        at += skip + stored.size() as usize;
        count += 1;
    }
    count
}

/// Links a shared library in `dir` whose `.hip_fatbin` holds the bundles of `plain` (as
/// [`many_bundles`] lays them out, each on a 4 KiB boundary), each pointed at by a HIP
/// wrapper in `.hipFatBinSegment`, as a HIP library's are: its path, `None` without a C
/// compiler.
fn library_of(dir: &Path, plain: &[u8], name: &str) -> Option<std::path::PathBuf> {
    let cc = crate::util::tool("cc")?;
    let mut asm = String::from("  .section .hip_fatbin,\"a\",@progbits\n");
    let mut wrappers = String::from("  .section .hipFatBinSegment,\"aw\",@progbits\n");
    let mut at = 0;
    let mut k = 0;
    while let Some(skip) = plain[at..].iter().position(|&b| b != 0) {
        let start = at + skip;
        let size = offload::format::bundle::Bundle::parse(&plain[start..])
            .unwrap()
            .unwrap()
            .size() as usize;
        let part = dir.join(format!("{name}.part{k}"));
        std::fs::write(&part, &plain[start..start + size]).unwrap();
        asm += &format!(
            "  .p2align 12\nbundle{k}:\n  .incbin \"{}\"\n",
            part.display()
        );
        wrappers +=
            &format!("  .p2align 3\n  .long 0x48495046\n  .long 1\n  .quad bundle{k}\n  .quad 0\n");
        at = start + size;
        k += 1;
    }
    let source = dir.join(format!("{name}.s"));
    std::fs::write(&source, asm + &wrappers).unwrap();
    let library = dir.join(format!("{name}.so"));
    crate::util::succeed(
        std::process::Command::new(cc)
            .args(["-shared", "-nostdlib", "-o"])
            .arg(&library)
            .arg(&source),
    );
    for part in 0..k {
        std::fs::remove_file(dir.join(format!("{name}.part{part}"))).unwrap();
    }
    std::fs::remove_file(&source).unwrap();
    Some(library)
}

/// The bundles of a library: large ones (made in room, lent again from one to the next and
/// grown when too small) among small ones, the largest neither first nor last.
fn library_sizes() -> Vec<usize> {
    let mut sizes: Vec<usize> = (0..48).map(|i| 3_000 + (i * 6_151) % 200_000).collect();
    for (k, mb) in [
        (3, 4),
        (4, 6),
        (9, 5),
        (10, 9),
        (11, 4),
        (20, 7),
        (21, 4),
        (33, 11),
    ] {
        sizes[k] = (mb << 20) + k * 4099;
    }
    sizes
}

#[test]
fn a_library_of_many_bundles_compresses_to_the_same_bytes_on_one_thread_or_eight() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sizes = library_sizes();
    let plain = many_bundles(&sizes);
    let Some(library) = library_of(d, &plain, "libmany") else {
        return;
    };
    let name = library.file_name().unwrap().to_str().unwrap();
    let one = compressed(d, name, "1", "one.so");
    for run in 0..3 {
        let eight = compressed(d, name, "8", &format!("eight{run}.so"));
        assert!(eight == one, "run {run} on 8 threads differs from 1 thread");
    }
    assert!(one.len() * 2 < std::fs::read(&library).unwrap().len());
    assert_eq!(streams_of(&one, &plain), sizes.len());
    // Decompressed, the library holds its bundles again: those of 4 MiB and more inflated
    // from the streams made in room lent again.
    let (code, _, err) = offload_in(d, &["decompress", "one.so", "-o", "back.so"]);
    assert_eq!(code, 0, "{err}");
    let back = std::fs::read(d.join("back.so")).unwrap();
    for (k, &size) in sizes.iter().enumerate() {
        let code = code_like(size, k as u64 + 1);
        assert!(
            memchr::memmem::find(&back, &code).is_some(),
            "bundle {k} is not in the library decompressed"
        );
    }
}

#[test]
fn a_damaged_bundle_amid_large_ones_leaves_no_output_and_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sizes = library_sizes();
    let mut plain = many_bundles(&sizes);
    // Bundle 22, after the first large ones are made and before the last: an entry ID with a
    // control character, which no bundle is written with.
    let mut at = 0;
    for _ in 0..22 {
        at += plain[at..].iter().position(|&b| b != 0).unwrap();
        at += offload::format::bundle::Bundle::parse(&plain[at..])
            .unwrap()
            .unwrap()
            .size() as usize;
    }
    let id = memchr::memmem::find(&plain[at..], b"gfx1100").unwrap() + at;
    plain[id + 6] = 0x01;
    let Some(library) = library_of(d, &plain, "libdamaged") else {
        return;
    };
    let temporary = d.join("tmp");
    std::fs::create_dir(&temporary).unwrap();
    let before = crate::util::file_names(d);
    for threads in ["1", "8"] {
        let (code, _, err) = text_output(
            crate::util::offload()
                .current_dir(d)
                .env("TMPDIR", &temporary)
                .args(["compress", "-j", threads, "libdamaged.so", "-o", "out.so"]),
        );
        assert_ne!(code, 0, "{threads} threads");
        assert!(err.contains("libdamaged.so"), "{threads} threads: {err}");
        assert!(
            err.contains("control character"),
            "{threads} threads: {err}"
        );
        assert_eq!(crate::util::file_names(d), before, "{threads} threads");
        assert!(crate::util::file_names(&temporary).is_empty());
    }
    assert!(library.exists());
}

/// Runs offload in `dir` with `args`, its standard output as bytes.
fn bytes_out(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = crate::util::offload()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn a_large_section_packed_straight_into_the_output_is_what_standard_output_gets() {
    // Into a file, a section of more than 32 MiB is packed at its place in the new file as
    // its bundles are made; standard output is written in order, the packed bundles copied
    // in after what comes before them. Both must be the same bytes, whether the section
    // shrinks (compressed, stripped) or outgrows its place (decompressed: its bundles go to
    // a new segment at the end, and those made at the section's place move out first).
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plain = many_bundles(&library_sizes());
    assert!(plain.len() > 40 << 20);
    let Some(library) = library_of(d, &plain, "libplaced") else {
        return;
    };
    let name = library.file_name().unwrap().to_str().unwrap();
    let steps: [(&str, &[&str]); 3] = [
        ("packed.so", &["compress", "-j", "8", name]),
        ("kept.so", &["strip", "--keep", "gfx90a", "packed.so"]),
        ("back.so", &["decompress", "-j", "8", "packed.so"]),
    ];
    for (output, args) in steps {
        let into_file = [args, &["-o", output]].concat();
        let (code, _, err) = offload_in(d, &into_file);
        assert_eq!(code, 0, "{err}");
        let to_stdout = bytes_out(d, &[args, &["-o", "-"]].concat());
        let written = std::fs::read(d.join(output)).unwrap();
        assert!(
            written == to_stdout,
            "{args:?}: the file and standard output differ"
        );
    }
    let back = std::fs::read(d.join("back.so")).unwrap();
    assert!(back.len() > std::fs::read(d.join("packed.so")).unwrap().len() * 2);
    // Rewritten in place with nothing to change, the library's folder is not written to:
    // no new file is made for a rewrite that changes nothing.
    let folder_changed = || std::fs::metadata(d).unwrap().modified().unwrap();
    let before = folder_changed();
    let (code, out, err) = offload_in(d, &["strip", "--remove", "gfx942", "--in-place", name]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("(0 bundles or binaries rewritten)"), "{out}");
    assert_eq!(folder_changed(), before);
    // In place, the same bytes again.
    std::fs::copy(&library, d.join("inplace.so")).unwrap();
    let (code, _, err) = offload_in(d, &["compress", "-j", "8", "--in-place", "inplace.so"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        std::fs::read(d.join("inplace.so")).unwrap() == std::fs::read(d.join("packed.so")).unwrap()
    );
    assert!(!crate::util::file_names(d)
        .iter()
        .any(|n| n.ends_with(".tmp")));
}

#[test]
fn a_large_section_that_outgrows_its_place_is_what_standard_output_gets() {
    // Most of the bundles are noise, which zstd leaves as large as it is: compressed, the
    // section is still over 32 MiB and is packed in the new file; decompressed, it outgrows
    // that place while it is made there, so what is made moves to a temporary file of its own
    // and its bundles go to a new segment at the end.
    let noise_or_code = |len: usize, seed: u64| {
        if seed % 4 != 0 {
            crate::util::noise(seed, len)
        } else {
            code_like(len, seed)
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plain = bundles_of(&library_sizes(), &noise_or_code);
    let Some(library) = library_of(d, &plain, "libnoisy") else {
        return;
    };
    let name = library.file_name().unwrap().to_str().unwrap();
    let packed = compressed(d, name, "8", "packed.so");
    assert!(packed.len() > 34 << 20, "{} bytes compressed", packed.len());
    let (code, _, err) = offload_in(d, &["decompress", "-j", "8", "packed.so", "-o", "back.so"]);
    assert_eq!(code, 0, "{err}");
    let to_stdout = bytes_out(d, &["decompress", "packed.so", "-o", "-"]);
    let back = std::fs::read(d.join("back.so")).unwrap();
    assert!(back == to_stdout, "the file and standard output differ");
    assert!(back.len() > packed.len() + (4 << 20));
    assert_eq!(streams_of(&packed, &plain), library_sizes().len());
    for (k, &size) in library_sizes().iter().enumerate() {
        let code = noise_or_code(size, k as u64 + 1);
        assert!(
            memchr::memmem::find(&back, &code).is_some(),
            "bundle {k} is not in the library decompressed"
        );
    }
}
