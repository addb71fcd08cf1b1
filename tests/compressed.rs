//! Reading compressed bundles without inflating them whole: a listing from each bundle's header
//! alone equals the listing from the whole stream; extraction inflates each stream only up to
//! the entries it writes, in parallel, and writes the same bytes; `offload verify` (and
//! `ls --verify`) inflate and hash every stream and name each damaged one with its offset.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::util::{file_names, offload, offload_in, samples_dir, text_output};
use offload::format::bundle;
use offload::format::ccob::{self, CompressOptions, Method, DEFAULT_MAX_DECOMPRESSED};
use offload::host::scan::{scan_reading, DeviceImage, Places, Reading};

/// What a listing tells of one image, whatever the reading: everything but its bytes.
fn seen(image: &DeviceImage<'_>) -> String {
    format!(
        "{:?} {:?} {:?} {} {} {:?} {} {}",
        image.members,
        image.section,
        image.offset,
        image.compressed,
        image.unit,
        image.origin.entry_id(),
        image.target.target_id,
        image.size
    )
}

/// The images of `path` and the problems found, read as `reading` says.
fn listing(path: &Path, reading: Reading) -> (Vec<String>, Vec<String>) {
    let data = fs::read(path).unwrap();
    let mut images = Vec::new();
    let problems = scan_reading(
        path,
        &data,
        Places::Everywhere,
        DEFAULT_MAX_DECOMPRESSED,
        reading,
        &mut |image| {
            // A compressed CUDA entry's bytes are its stream; its size, what that inflates to.
            if !image.origin.stored_compressed() {
                assert_eq!(
                    image.size,
                    image.data.len() as u64 + image.stream.map_or(0, |s| s.end - s.start)
                );
            }
            images.push(seen(image));
        },
    );
    match problems {
        Ok(problems) => (images, problems.iter().map(|p| p.to_string()).collect()),
        Err(e) => (images, vec![e.to_string()]),
    }
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// The samples that hold a compressed bundle somewhere.
fn compressed_samples() -> Vec<PathBuf> {
    files_under(&samples_dir())
        .into_iter()
        .filter(|p| memchr::memmem::find(&fs::read(p).unwrap(), b"CCOB").is_some())
        .collect()
}

#[test]
fn a_listing_from_headers_equals_the_listing_from_whole_streams_on_every_sample() {
    let mut compared = 0;
    for path in files_under(&samples_dir()) {
        let whole = listing(&path, Reading::Whole);
        let headers = listing(&path, Reading::Headers);
        assert_eq!(headers, whole, "{}", path.display());
        compared += usize::from(!whole.0.is_empty());
    }
    assert!(compared > 30, "{compared}");
    assert!(
        compressed_samples().len() >= 8,
        "{:?}",
        compressed_samples()
    );
}

/// A code object for `arch` of `len` bytes: an ELF magic, then bytes that compress a little.
fn code_object(arch: &str, seed: u32, len: usize) -> Vec<u8> {
    let mut bytes = b"\x7fELF".to_vec();
    bytes.extend_from_slice(arch.as_bytes());
    let mut x = seed | 1;
    while bytes.len() < len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        // Few distinct values: compressible, yet no run of zeros.
        bytes.push(b'a' + (x % 7) as u8);
    }
    bytes
}

const HOST: &str = "host-x86_64-unknown-linux-gnu-";
const ARCHES: [&str; 4] = ["gfx906", "gfx90a", "gfx1030", "gfx1100"];

/// A bundle of one host entry and a code object per processor in [`ARCHES`], its entries
/// `len` bytes or so, and those code objects.
fn bundle_of(seed: u32, len: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
    let objects: Vec<Vec<u8>> = ARCHES
        .iter()
        .enumerate()
        .map(|(k, arch)| code_object(arch, seed * 31 + k as u32, len + k * 1000))
        .collect();
    let ids: Vec<String> = ARCHES
        .iter()
        .map(|a| format!("hipv4-amdgcn-amd-amdhsa--{a}"))
        .collect();
    let mut entries: Vec<(&str, &[u8])> = vec![(HOST, b"")];
    entries.extend(
        ids.iter()
            .map(String::as_str)
            .zip(objects.iter().map(Vec::as_slice)),
    );
    (bundle::to_vec(&entries, 4096), objects)
}

/// `count` compressed bundles one after another, each on a 4096-byte boundary: the file, the
/// offset of each compressed bundle, and the code objects of each.
fn compressed_file(count: u32, len: usize) -> (Vec<u8>, Vec<usize>, Vec<Vec<Vec<u8>>>) {
    let mut file = Vec::new();
    let mut offsets = Vec::new();
    let mut objects = Vec::new();
    for n in 0..count {
        let (plain, objs) = bundle_of(n + 1, len + n as usize * 7000);
        let options = CompressOptions {
            method: if n % 3 == 2 {
                Method::Zlib
            } else {
                Method::Zstd
            },
            level: 1,
            version: 3,
        };
        let (ccob, _) = ccob::compress(&plain, &options).unwrap();
        offsets.push(file.len());
        file.extend_from_slice(&ccob);
        file.resize(file.len().next_multiple_of(4096), 0);
        objects.push(objs);
    }
    (file, offsets, objects)
}

/// The bytes of every file in `dir`, sorted.
fn contents(dir: &Path) -> Vec<Vec<u8>> {
    let mut all: Vec<Vec<u8>> = file_names(dir)
        .iter()
        .map(|n| fs::read(dir.join(n)).unwrap())
        .collect();
    all.sort();
    all
}

#[test]
fn parallel_extraction_writes_every_byte_of_every_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let (file, _, objects) = compressed_file(12, 150_000);
    fs::write(dir.path().join("many.bin"), &file).unwrap();
    for arch in ["gfx90a", "gfx1100"] {
        let k = ARCHES.iter().position(|a| *a == arch).unwrap();
        let mut want: Vec<Vec<u8>> = objects.iter().map(|o| o[k].clone()).collect();
        want.sort();
        for round in 0..3 {
            let out = dir.path().join(format!("{arch}-{round}"));
            let (code, _, err) = text_output(
                offload()
                    .current_dir(dir.path())
                    .env("RAYON_NUM_THREADS", "8")
                    .args(["extract", "many.bin", "--arch", arch, "-o"])
                    .arg(&out),
            );
            assert_eq!(code, 0, "{err}");
            assert_eq!(contents(&out), want, "{arch}, round {round}");
            assert!(file_names(&out).iter().all(|n| n.ends_with(".co")));
        }
    }
}

#[test]
fn extraction_writes_what_decompressing_first_writes_on_the_samples() {
    let dir = tempfile::tempdir().unwrap();
    let samples = samples_dir();
    let mut compared = 0;
    for name in [
        "clang/kernel-fatbin-z.o",
        "bundles/kernel-hip-z.o",
        "bundles/kernel-z.bc",
        "bundles/two-ccob.bin",
    ] {
        let plain = dir.path().join(format!("plain-{compared}"));
        let (code, _, err) = text_output(
            offload()
                .arg("decompress")
                .arg(samples.join(name))
                .arg("-o")
                .arg(&plain),
        );
        assert_eq!(code, 0, "{name}: {err}");
        for arch in ["gfx906", "gfx90a"] {
            let (from_z, from_plain) = (dir.path().join("z"), dir.path().join("p"));
            let _ = fs::remove_dir_all(&from_z);
            let _ = fs::remove_dir_all(&from_plain);
            let run = |input: &Path, out: &Path| {
                text_output(
                    offload()
                        .arg("extract")
                        .arg(input)
                        .args(["--arch", arch, "-o"])
                        .arg(out),
                )
            };
            let (code_z, _, err_z) = run(&samples.join(name), &from_z);
            let (code_p, _, err_p) = run(&plain, &from_plain);
            assert_eq!((code_z, code_p), (0, 0), "{name} {arch}: {err_z} {err_p}");
            let got = contents(&from_z);
            assert!(!got.is_empty());
            assert_eq!(got, contents(&from_plain), "{name} {arch}");
            compared += 1;
        }
    }
    assert_eq!(compared, 8);
}

#[test]
fn verify_names_a_bad_hash_that_a_listing_does_not_inflate_to() {
    let dir = tempfile::tempdir().unwrap();
    let (mut file, offsets, objects) = compressed_file(3, 100_000);
    // The second bundle's hash, one bit off: its stream is far larger than a listing reads.
    let hash_at = offsets[1] + 24;
    file[hash_at] ^= 1;
    fs::write(dir.path().join("bad.bin"), &file).unwrap();
    let payload = offsets[1] + 32;

    let (code, out, err) = offload_in(dir.path(), &["ls", "bad.bin"]);
    assert_eq!(
        (code, err.as_str()),
        (0, ""),
        "a listing reads headers only"
    );
    assert_eq!(out.lines().count(), 1 + 3 * 5, "{out}");

    let (code, out, err) = offload_in(dir.path(), &["verify", "bad.bin"]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(out, "bad.bin: 2 compressed bundles sound, 1 damaged\n");
    let stored = u64::from_le_bytes(file[hash_at..hash_at + 8].try_into().unwrap());
    let (plain, _) = bundle_of(2, 107_000);
    assert_eq!(
        err,
        format!(
            "offload verify: error: 'bad.bin': offset {payload:#x}: compressed bundle hash \
             mismatch: stored {stored:#018x}, computed {:#018x}\n",
            ccob::truncated_md5(&plain)
        )
    );
    let (code, out, ls_err) = offload_in(dir.path(), &["ls", "--verify", "bad.bin"]);
    assert_eq!(code, 1);
    assert!(
        out.ends_with("bad.bin: 2 compressed bundles sound, 1 damaged\n"),
        "{out}"
    );
    assert_eq!(ls_err, err.replace("offload verify", "offload ls"));

    // Extraction stops short of the end, where the hash could be checked: it writes the entry.
    let (code, _, err) = offload_in(
        dir.path(),
        &["extract", "bad.bin", "--arch", "gfx1030", "-o", "mid"],
    );
    assert_eq!(code, 0, "{err}");
    let mut want: Vec<Vec<u8>> = objects.iter().map(|o| o[2].clone()).collect();
    want.sort();
    assert_eq!(contents(&dir.path().join("mid")), want);
    // The last entry ends the stream: inflated to its end, it is hashed, and nothing is written.
    let (code, _, err) = offload_in(
        dir.path(),
        &["extract", "bad.bin", "--arch", "gfx1100", "-o", "last"],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!(
            "'bad.bin': offset {payload:#x}: compressed bundle hash mismatch"
        )),
        "{err}"
    );
    assert!(!dir.path().join("last").exists());
    // Beside another file, the damaged one is named and the other's images are still written.
    fs::copy(
        samples_dir().join("targets/mixed-app-z"),
        dir.path().join("good"),
    )
    .unwrap();
    let (code, _, err) = offload_in(
        dir.path(),
        &["extract", "good", "--arch", "gfx1100", "-o", "alone"],
    );
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = offload_in(
        dir.path(),
        &[
            "extract", "bad.bin", "good", "--arch", "gfx1100", "-o", "both", "-j", "8",
        ],
    );
    assert_eq!(code, 1);
    assert_eq!(
        err,
        format!(
            "offload extract: error: 'bad.bin': offset {payload:#x}: compressed bundle hash \
             mismatch: stored {stored:#018x}, computed {:#018x}\n",
            ccob::truncated_md5(&plain)
        )
    );
    let alone = file_names(&dir.path().join("alone"));
    assert!(!alone.is_empty());
    assert_eq!(file_names(&dir.path().join("both")), alone);
    for name in &alone {
        assert!(
            fs::read(dir.path().join("both").join(name)).unwrap()
                == fs::read(dir.path().join("alone").join(name)).unwrap(),
            "{name}"
        );
    }
    assert!(
        out.contains(&format!(
            "total: 2 files, 1 with images written, 1 error; {} images written, ",
            alone.len()
        )),
        "{out}"
    );

    let (code, out, _) = offload_in(dir.path(), &["verify", "bad.bin", "bad.bin"]);
    assert_eq!(code, 1);
    assert_eq!(out.lines().filter(|l| !l.starts_with("total")).count(), 2);
    assert!(
        out.ends_with("\ntotal: 2 files, 2 with compressed bundles, 2 failed; 4 compressed bundles sound, 2 damaged, 632942 bytes inflated to 1775296\n"),
        "{out}"
    );
}

#[test]
fn verify_reports_the_damaged_sample_with_its_offset() {
    let samples = samples_dir();
    let (code, out, err) = offload_in(
        &samples,
        &[
            "verify",
            "damaged/ccob-bad-hash.bin",
            "bundles/two-ccob.bin",
        ],
    );
    assert_eq!(code, 1);
    assert_eq!(
        out,
        "damaged/ccob-bad-hash.bin: 0 compressed bundles sound, 1 damaged\n\
         bundles/two-ccob.bin: 2 compressed bundles sound, 0 damaged\n\
         total: 2 files, 1 with compressed bundles, 1 failed; 2 compressed bundles sound, 1 damaged, 6402 bytes inflated to 24556\n"
    );
    assert_eq!(
        err,
        "offload verify: error: 'damaged/ccob-bad-hash.bin': offset 0x18: compressed bundle \
         hash mismatch: stored 0x0000000000000000, computed 0x00261d8b66d5a6d9\n"
    );
    let (code, out, err) = offload_in(
        &samples,
        &["verify", "targets/mixed-app-z", "linked/hip-app"],
    );
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(
        out,
        "targets/mixed-app-z: 2 compressed bundles sound, 0 damaged\n\
         linked/hip-app: 1 compressed bundle sound, 0 damaged\n\
         total: 2 files, 2 with compressed bundles, 0 failed; 3 compressed bundles sound, 0 damaged, 5741 bytes inflated to 49184\n"
    );
}

#[test]
fn streams_that_fail_or_end_early_are_errors_naming_the_offset() {
    let dir = tempfile::tempdir().unwrap();
    let (file, offsets, _) = compressed_file(2, 100_000);
    // A stream 40000 bytes shorter than its bundle and its header say: the last entry's
    // bytes run past the stream's end.
    let (plain, _) = bundle_of(7, 100_000);
    let short_len = plain.len() - 40_000;
    let (mut short, _) = ccob::compress(
        &plain[..short_len],
        &CompressOptions {
            version: 3,
            ..CompressOptions::default()
        },
    )
    .unwrap();
    short[16..24].copy_from_slice(&(plain.len() as u64).to_le_bytes());
    fs::write(dir.path().join("short.bin"), &short).unwrap();
    let (code, _, err) = offload_in(
        dir.path(),
        &["extract", "short.bin", "--arch", "gfx1100", "-o", "out"],
    );
    assert_eq!(code, 1);
    let mismatch = format!(
        "'short.bin': offset 0x20: compressed bundle decompresses to {short_len} bytes, but its \
         header says {}\n",
        plain.len()
    );
    assert_eq!(err, format!("offload extract: error: {mismatch}"));
    let (code, _, err) = offload_in(dir.path(), &["verify", "short.bin"]);
    assert_eq!(
        (code, err),
        (1, format!("offload verify: error: {mismatch}"))
    );
    // An entry before the cut is still written.
    let (code, _, err) = offload_in(
        dir.path(),
        &["extract", "short.bin", "--arch", "gfx906", "-o", "early"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(file_names(&dir.path().join("early")).len(), 1);
    // The second bundle's payload cut short by its declared total size: the stream fails.
    let mut cut = file.clone();
    let total_at = offsets[1] + 8;
    let total = u64::from_le_bytes(cut[total_at..total_at + 8].try_into().unwrap());
    cut[total_at..total_at + 8].copy_from_slice(&(total - 2000).to_le_bytes());
    fs::write(dir.path().join("cut.bin"), &cut).unwrap();
    let (code, out, err) = offload_in(dir.path(), &["verify", "cut.bin"]);
    assert_eq!(code, 1);
    assert_eq!(out, "cut.bin: 1 compressed bundle sound, 1 damaged\n");
    assert!(
        err.starts_with(&format!(
            "offload verify: error: 'cut.bin': offset {:#x}: could not decompress",
            offsets[1] + 32
        )),
        "{err}"
    );
    let (code, _, err) = offload_in(
        dir.path(),
        &["extract", "cut.bin", "--arch", "gfx1100", "-o", "out"],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!("'cut.bin': offset {:#x}: ", offsets[1] + 32)),
        "{err}"
    );
    assert!(!dir.path().join("out").exists());
}

/// `offload strip` of `name` in `dir` keeping `arch`, with `threads` threads: the exit code,
/// the bytes written (empty when none) and standard error.
fn strip_with(dir: &Path, name: &str, arch: &str, threads: &str) -> (i32, Vec<u8>, String) {
    let out = dir.join(format!("{name}-{arch}-{threads}.out"));
    let _ = fs::remove_file(&out);
    let (code, _, err) = text_output(
        offload()
            .current_dir(dir)
            .env("RAYON_NUM_THREADS", threads)
            .args(["strip", name, "--keep", arch, "-o"])
            .arg(&out),
    );
    (code, fs::read(&out).unwrap_or_default(), err)
}

#[test]
fn parallel_strip_writes_the_bytes_one_thread_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (file, _, _) = compressed_file(12, 150_000);
    fs::write(dir.path().join("many.bin"), &file).unwrap();
    // What the rewrite wrote when it inflated every bundle whole, one after another: its
    // length and the first eight bytes of its MD5.
    let before = [
        ("gfx906", 969_242, 0x8de1_369e_cc36_3959),
        ("gfx1100", 982_831, 0xc738_02bf_a4f5_438f),
    ];
    for (arch, len, md5) in before {
        let (code, one, err) = strip_with(dir.path(), "many.bin", arch, "1");
        assert_eq!((code, err.as_str()), (0, ""));
        assert_eq!((one.len(), ccob::truncated_md5(&one)), (len, md5), "{arch}");
        for round in 0..3 {
            let (code, many, err) = strip_with(dir.path(), "many.bin", arch, "8");
            assert_eq!((code, err.as_str()), (0, ""));
            assert!(many == one, "{arch}, round {round}");
        }
    }
}

#[test]
fn strip_of_damaged_streams_says_what_it_said_inflating_them_whole() {
    let dir = tempfile::tempdir().unwrap();
    let (file, offsets, _) = compressed_file(4, 100_000);
    // The third bundle's hash changed.
    let mut hash = file.clone();
    hash[offsets[2] + 24] ^= 1;
    fs::write(dir.path().join("hash.bin"), &hash).unwrap();
    // The second bundle's payload cut short by its declared total size.
    let mut cut = file.clone();
    let total_at = offsets[1] + 8;
    let total = u64::from_le_bytes(cut[total_at..total_at + 8].try_into().unwrap());
    cut[total_at..total_at + 8].copy_from_slice(&(total - 2000).to_le_bytes());
    fs::write(dir.path().join("cut.bin"), &cut).unwrap();
    // Whichever entry stays, each stream is inflated to its end and checked: the errors of
    // the whole streams. No code is kept from a stream whose hash does not match, even when
    // the damage lies past the last entry kept.
    let hash_error = format!(
        "'hash.bin': offset {:#x}: compressed bundle hash mismatch: stored \
         0xfbfc59c5334c8608, computed 0xfbfc59c5334c8609",
        offsets[2] + 0x20
    );
    let cut_error = format!(
        "'cut.bin': offset {:#x}: could not decompress: incomplete frame",
        offsets[1] + 0x20
    );
    let cases = [
        ("hash.bin", "gfx1100", hash_error.clone()),
        ("hash.bin", "gfx906", hash_error),
        ("cut.bin", "gfx1100", cut_error.clone()),
        ("cut.bin", "gfx906", cut_error),
    ];
    for (name, arch, want) in cases {
        for threads in ["1", "8"] {
            let (code, bytes, err) = strip_with(dir.path(), name, arch, threads);
            assert_eq!(
                (code, bytes.len(), err),
                (1, 0, format!("offload strip: error: {want}\n")),
                "{name} {arch} {threads}"
            );
        }
    }
}

/// The five bundles of [`large_region`], each past the size a rewrite compresses in memory:
/// made once per run.
fn large_bundles() -> &'static [Vec<u8>] {
    static BUNDLES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    BUNDLES.get_or_init(|| {
        (0..5u32)
            .map(|n| bundle_of(n + 40, (2 << 20) + n as usize * 4099).0)
            .collect()
    })
}

/// Plain bundles one after another, each on a 4096-byte boundary, larger together than a
/// rewrite keeps in memory; and the same bundles compressed, laid out alike. Each comes with
/// the end of its last bundle. Made once per run (some 90 MB, compressed with both methods),
/// for the tests that each take a copy.
fn large_region() -> (Region, Region) {
    static REGION: OnceLock<(Region, Region)> = OnceLock::new();
    REGION.get_or_init(make_large_region).clone()
}

/// Bundles one after another, and the end of the last.
type Region = (Vec<u8>, usize);

/// Makes [`large_region`].
fn make_large_region() -> (Region, Region) {
    let (mut plain, mut compressed) = ((Vec::new(), 0), (Vec::new(), 0));
    for (n, bundle) in (0..5u32).zip(large_bundles()) {
        let options = CompressOptions {
            method: if n == 3 { Method::Zlib } else { Method::Zstd },
            level: 1,
            version: 2 + n as u16 % 2,
        };
        let (ccob, _) = ccob::compress(bundle, &options).unwrap();
        for ((region, end), bytes) in [(&mut plain, bundle), (&mut compressed, &ccob)] {
            region.extend_from_slice(bytes);
            *end = region.len();
            region.resize(region.len().next_multiple_of(4096), 0);
        }
    }
    assert!(plain.0.len() > 40 << 20);
    (plain, compressed)
}

/// Runs `offload ARGS` in `dir` with eight threads: its exit code and standard error.
fn offload_threads(dir: &Path, args: &[&str]) -> (i32, String) {
    let (code, _, err) = text_output(
        offload()
            .current_dir(dir)
            .env("RAYON_NUM_THREADS", "8")
            .args(args),
    );
    (code, err)
}

#[test]
fn decompressing_large_files_and_objects_writes_every_byte_in_parallel() {
    use offload::host::objcopy::rewrite_sections;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ((plain, plain_end), (compressed, compressed_end)) = large_region();
    fs::write(d.join("z.bin"), &compressed).unwrap();
    // An object whose `.hip_fatbin` holds the plain bundles; compressed, then decompressed,
    // it comes back byte for byte.
    let host = fs::read(samples_dir().join("clang/kernel-fatbin.o")).unwrap();
    let replace = |name: &[u8], _: &[u8]| {
        (name == b".hip_fatbin").then_some(std::borrow::Cow::Borrowed(plain.as_slice()))
    };
    let object = rewrite_sections(&host, &|_| false, &replace)
        .unwrap()
        .to_vec();
    fs::write(d.join("big.o"), &object).unwrap();
    assert_eq!(offload_threads(d, &["compress", "big.o", "-o", "z.o"]).0, 0);
    for round in 0..3 {
        let (code, err) = offload_threads(d, &["decompress", "z.bin", "-o", "d.bin"]);
        assert_eq!((code, err.as_str()), (0, ""));
        let got = fs::read(d.join("d.bin")).unwrap();
        // Zeros after the last bundle stay as many as they were.
        let mut want = plain[..plain_end].to_vec();
        want.resize(plain_end + compressed.len() - compressed_end, 0);
        assert!(
            got == want,
            "round {round}: {}",
            crate::util::first_difference(&want, &got)
        );

        let (code, err) = offload_threads(d, &["decompress", "z.o", "-o", "d.o"]);
        assert_eq!((code, err.as_str()), (0, ""));
        let got = fs::read(d.join("d.o")).unwrap();
        assert!(
            got == object,
            "round {round}: {}",
            crate::util::first_difference(&object, &got)
        );
    }
}

#[test]
fn decompressed_bytes_written_in_order_or_into_an_archive_are_those_written_into_a_file() {
    // Into a file, the rest of the output is written first and the streams are inflated into
    // their places after it; to standard output or a pipe, each in its turn; into an archive
    // member, in memory. Every way gives the same bytes, and the report stays out of them.
    use offload::host::archive::{read_members, write_archive};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (_, (compressed, _)) = large_region();
    fs::write(d.join("z.bin"), &compressed).unwrap();
    fs::copy(samples_dir().join("targets/mixed-app-z"), d.join("app")).unwrap();
    let mut want = Vec::new();
    for name in ["z.bin", "app"] {
        let (code, err) = offload_threads(d, &["decompress", name, "-o", "want"]);
        assert_eq!((code, err.as_str()), (0, ""));
        want.push(fs::read(d.join("want")).unwrap());
    }
    assert!(want[0].len() > 40 << 20 && want[1].len() > 50_000);
    for (name, want) in ["z.bin", "app"].iter().zip(&want) {
        for output in ["-", "/dev/stdout"] {
            for round in 0..2 {
                let got = offload()
                    .current_dir(d)
                    .env("RAYON_NUM_THREADS", "8")
                    .args(["decompress", name, "-o", output])
                    .output()
                    .unwrap();
                let err = String::from_utf8_lossy(&got.stderr);
                assert!(got.status.success(), "{name} {output}: {err}");
                assert!(
                    got.stdout == *want,
                    "{name} to {output}, round {round}: {}",
                    crate::util::first_difference(want, &got.stdout)
                );
                let report = format!("{name}: ");
                assert!(
                    err.starts_with(&report) && err.ends_with("rewritten)\n"),
                    "{err}"
                );
            }
        }
    }
    let archive = write_archive(
        &d.join("z.a"),
        &[
            ("z.bin", compressed.as_slice()),
            ("app", &fs::read(d.join("app")).unwrap()),
        ],
    )
    .unwrap();
    fs::write(d.join("z.a"), &archive).unwrap();
    let (code, err) = offload_threads(d, &["decompress", "z.a", "-o", "d.a"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let written = fs::read(d.join("d.a")).unwrap();
    let members = read_members(&d.join("d.a"), &written).unwrap();
    let got: Vec<(&str, &[u8])> = members.iter().map(|m| (&*m.name, &*m.data)).collect();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].0, "z.bin");
    assert!(got[0].1 == want[0].as_slice());
    assert_eq!(got[1].0, "app");
    assert!(got[1].1 == want[1].as_slice());
}

#[test]
fn a_damaged_stream_in_a_large_decompression_is_named_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (_, (mut compressed, _)) = large_region();
    // The fourth stream (zlib) damaged halfway through its payload.
    let (start, size) = ccob::split(&compressed)
        .nth(3)
        .map(|found| found.map(|(start, bundle)| (start, bundle.size())))
        .unwrap()
        .unwrap();
    let at = (start + size / 2) as usize;
    compressed[at] ^= 0x5a;
    fs::write(d.join("bad.bin"), &compressed).unwrap();
    let (code, err) = offload_threads(d, &["decompress", "bad.bin", "-o", "out.bin"]);
    assert_eq!(code, 1);
    let prefix = format!(
        "offload decompress: error: 'bad.bin': offset {:#x}: ",
        start + 0x20
    );
    assert!(err.starts_with(&prefix), "{err}");
    assert!(!d.join("out.bin").exists());
    assert!(crate::util::temporaries_in(d).is_empty());

    // The same stream in an object's `.hip_fatbin`: every command names the section and the
    // same offset in the file, the one a listing gives.
    use object::{Object, ObjectSection};
    let host = fs::read(samples_dir().join("clang/kernel-fatbin.o")).unwrap();
    let replace = |name: &[u8], _: &[u8]| {
        (name == b".hip_fatbin").then_some(std::borrow::Cow::Borrowed(compressed.as_slice()))
    };
    let bad_object = offload::host::objcopy::rewrite_sections(&host, &|_| false, &replace)
        .unwrap()
        .to_vec();
    let section = object::File::parse(bad_object.as_slice())
        .unwrap()
        .section_by_name(".hip_fatbin")
        .unwrap()
        .file_range()
        .unwrap()
        .0;
    fs::write(d.join("bad.o"), &bad_object).unwrap();
    let place = format!(
        "'bad.o': section '.hip_fatbin': offset {:#x}: ",
        section + start + 0x20
    );
    for (command, args) in [
        ("decompress", &["decompress", "bad.o", "-o", "out.o"][..]),
        (
            "strip",
            &["strip", "bad.o", "--keep", "gfx1100", "-o", "out.o"],
        ),
        ("verify", &["verify", "bad.o"]),
        (
            "extract",
            &["extract", "bad.o", "--arch", "gfx1100", "-o", "out"],
        ),
    ] {
        let (code, err) = offload_threads(d, args);
        assert_eq!(code, 1, "{command}: {err}");
        let prefix = format!("offload {command}: error: {place}");
        assert!(err.starts_with(&prefix), "{command}: {err}");
        assert!(!d.join("out.o").exists(), "{command}");
        assert!(!d.join("out").exists(), "{command}");
    }
    assert!(crate::util::temporaries_in(d).is_empty());
}

#[test]
fn the_decompressed_size_cap_holds_in_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::copy(samples_dir().join("targets/mixed-app-z"), d.join("app")).unwrap();
    let cap = ["--max-decompressed-size", "1000"];
    let message = "'app': section '.hip_fatbin': offset 0x1020: compressed bundle decompresses to \
                   more than the limit of 1000 bytes (raise it with --max-decompressed-size)\n";
    for (command, args, status) in [
        ("ls", &["ls", "app"][..], 1),
        ("verify", &["verify", "app"], 1),
        (
            "extract",
            &["extract", "app", "--arch", "gfx1100", "-o", "out"],
            1,
        ),
        (
            "strip",
            &["strip", "app", "--keep", "gfx1100", "-o", "out.app"],
            1,
        ),
        ("decompress", &["decompress", "app", "-o", "out.app"], 1),
        (
            "compress",
            &["compress", "app", "--method", "zlib", "-o", "out.app"],
            1,
        ),
        ("check", &["check", "app", "--device", "gfx1100"], 2),
    ] {
        let (code, _, err) = offload_in(d, &[args, &cap[..]].concat());
        assert_eq!(code, status, "{command}: {err}");
        let first = err.lines().next().unwrap_or_default();
        assert_eq!(
            format!("{first}\n"),
            format!("offload {command}: error: {message}"),
            "{command}"
        );
        assert!(
            !d.join("out").exists() && !d.join("out.app").exists(),
            "{command}"
        );
    }
    // The same commands within the default cap.
    let (code, _, err) = offload_in(d, &["decompress", "app", "-o", "out.app"]);
    assert_eq!((code, err.as_str()), (0, ""));
}

#[test]
fn large_bundles_compressed_into_room_on_disk_are_the_bytes_compressed_in_memory() {
    // Bundles past the size a rewrite compresses into a mapped temporary file instead of
    // memory, in a bare file and in an object's section, with eight threads, three times: each
    // compressed bundle is what compressing it whole in memory makes, every run the same.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ((plain, _), _) = large_region();
    fs::write(d.join("p.bin"), &plain).unwrap();
    let host = fs::read(samples_dir().join("clang/kernel-fatbin.o")).unwrap();
    let replace = |name: &[u8], _: &[u8]| {
        (name == b".hip_fatbin").then_some(std::borrow::Cow::Borrowed(plain.as_slice()))
    };
    let object = offload::host::objcopy::rewrite_sections(&host, &|_| false, &replace)
        .unwrap()
        .to_vec();
    fs::write(d.join("big.o"), &object).unwrap();
    let bundles = large_bundles();
    assert!(bundles.iter().all(|b| b.len() > 4 << 20));
    // What compressing each bundle whole in memory makes, by the method and version the
    // rewrite chose (the same every round): computed once.
    let mut in_memory: Vec<Option<(Method, u16, Vec<u8>)>> = vec![None; bundles.len()];
    let mut first: Vec<Vec<u8>> = Vec::new();
    for round in 0..3 {
        let mut written = Vec::new();
        for (input, output) in [("p.bin", "c.bin"), ("big.o", "c.o")] {
            let (code, err) = offload_threads(d, &["compress", input, "-o", output]);
            assert_eq!(code, 0, "{err}");
            let got = fs::read(d.join(output)).unwrap();
            // The bundles one after another, in the file or in its `.hip_fatbin`.
            let at = got.windows(4).position(|w| w == b"CCOB").unwrap();
            let found: Vec<_> = ccob::split(&got[at..])
                .take(bundles.len())
                .map(Result::unwrap)
                .collect();
            assert_eq!(found.len(), bundles.len(), "{input}");
            for (((_, compressed), bundle), made) in found.iter().zip(bundles).zip(&mut in_memory) {
                let key = (compressed.method, compressed.version);
                if made.as_ref().map(|(m, v, _)| (*m, *v)) != Some(key) {
                    let options = CompressOptions {
                        method: compressed.method,
                        level: compressed.method.default_level(),
                        version: compressed.version,
                    };
                    *made = Some((key.0, key.1, ccob::compress(bundle, &options).unwrap().0));
                }
                let want = made
                    .as_ref()
                    .map(|(_, _, w)| w.as_slice())
                    .unwrap_or_default();
                let start = compressed.payload.as_ptr() as usize - got.as_ptr() as usize;
                let header = want.len() - compressed.payload.len();
                assert!(
                    got.get(start - header..start + compressed.payload.len()) == Some(want),
                    "{input}, round {round}"
                );
            }
            written.push(got);
        }
        if first.is_empty() {
            first = written;
        } else {
            assert!(first == written, "round {round} wrote other bytes");
        }
    }
}
