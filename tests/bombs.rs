//! Decompression bombs: files of a few kilobytes that inflate to far more than a reader may
//! hold. Every reader runs in a child whose address space is capped (RLIMIT_AS) at half of what
//! the bomb inflates to: it must not die of a signal, and must give either the right answer or
//! an error that names the file.

use std::fs::{self, File};
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use md5::{Digest, Md5};

use crate::util::offload;
use offload::format::bundle;
use offload::format::ccob::{self, CompressOptions, Method};
use offload::format::offload_binary::{self, ImageKind, OffloadKind, OffloadingImage};

/// Zero bytes a bomb inflates to after its small valid beginning.
const ZEROS: u64 = 512 << 20;

/// The address space a reader may take: half the zeros.
const MEMORY: u64 = ZEROS / 2;

const DEVICE: &str = "hipv4-amdgcn-amd-amdhsa--gfx90a";
const HOST: &str = "host-x86_64-unknown-linux-gnu-";

/// The device code in every bomb.
fn device_code() -> Vec<u8> {
    b"\x7fELF device code for gfx90a\n".repeat(40)
}

/// The small valid bundle every bundle bomb starts with.
fn small_bundle() -> Vec<u8> {
    bundle::to_vec(&[(HOST, b""), (DEVICE, &device_code())], 1)
}

/// Runs `offload` with `args` in `dir`, its address space capped at `memory` bytes and killed
/// after a minute.
pub(crate) fn run(dir: &Path, args: &[&str], memory: u64) -> (Output, Duration) {
    let mut command = offload();
    command
        .current_dir(dir)
        .args(args)
        .env("RAYON_NUM_THREADS", "2")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe, and nothing else runs between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: memory as libc::rlim_t,
                rlim_max: memory as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let start = Instant::now();
    let mut child = command.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            pipe.read_to_end(&mut bytes).unwrap();
            bytes
        })
    };
    let (stdout, stderr) = (read(Box::new(stdout)), read(Box::new(stderr)));
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("offload {args:?}: no answer in 60 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let output = Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    };
    (output, start.elapsed())
}

/// Feeds `head` then `zeros` zero bytes to `out` and to `hash`.
fn feed(out: &mut dyn Write, hash: &mut Md5, head: &[u8], zeros: u64) {
    out.write_all(head).unwrap();
    hash.update(head);
    let chunk = vec![0; 1 << 20];
    let mut left = zeros;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        out.write_all(&chunk[..n]).unwrap();
        hash.update(&chunk[..n]);
        left -= n as u64;
    }
}

/// `head` then `zeros` zero bytes, compressed with `method`, never whole in memory; and the
/// truncated MD5 of what it inflates to.
fn compressed_stream(method: Method, head: &[u8], zeros: u64) -> (Vec<u8>, u64) {
    let mut hash = Md5::new();
    let payload = match method {
        Method::Zstd => {
            let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
            feed(&mut encoder, &mut hash, head, zeros);
            encoder.finish().unwrap()
        }
        Method::Zlib => {
            let mut encoder =
                flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
            feed(&mut encoder, &mut hash, head, zeros);
            encoder.finish().unwrap()
        }
    };
    let digest = hash.finalize();
    (payload, u64::from_le_bytes(digest[..8].try_into().unwrap()))
}

/// A compressed bundle of `head` then `zeros` zero bytes, its header's sizes and hash true.
pub(crate) fn compressed_bundle(method: Method, version: u16, head: &[u8], zeros: u64) -> Vec<u8> {
    let (payload, hash) = compressed_stream(method, head, zeros);
    let options = CompressOptions {
        method,
        level: 1,
        version,
    };
    let total = ccob::header_size(version).unwrap() + payload.len() as u64;
    let size = head.len() as u64 + zeros;
    let mut bytes = ccob::header(&options, total, size, hash).unwrap();
    bytes.extend_from_slice(&payload);
    bytes
}

/// A compressed version 3 offload binary holding the device code, whose inflated size (all of
/// it declared) is mostly zero padding after the image.
pub(crate) fn offload_binary_bomb(zeros: u64) -> Vec<u8> {
    let strings: [(&[u8], &[u8]); 2] = [(b"triple", b"amdgcn-amd-amdhsa"), (b"arch", b"gfx90a")];
    let code = device_code();
    let images = [OffloadingImage {
        image_kind: ImageKind::Object,
        offload_kind: OffloadKind::OpenMp,
        flags: 0,
        strings: &strings,
        image: &code,
    }];
    let plain = offload_binary::write(3, &images).unwrap();
    let inflated = plain.len() as u64 + zeros;
    let (header, body) = plain.split_at(40);
    let (payload, _) = compressed_stream(Method::Zstd, body, zeros);
    let mut bytes = header.to_vec();
    let size = 40 + payload.len() as u64;
    bytes[8..16].copy_from_slice(&size.to_le_bytes());
    bytes[32..40].copy_from_slice(&inflated.to_le_bytes());
    bytes.extend_from_slice(&payload);
    bytes.resize(bytes.len().next_multiple_of(8), 0);
    bytes
}

/// The readers, with `FILE` for the bomb.
const READERS: [&[&str]; 5] = [
    &["ls", "FILE"],
    &["ls", "--json", "FILE"],
    &["bundler", "-list", "-type=o", "-input=FILE"],
    &[
        "bundler",
        "-unbundle",
        "-type=o",
        "-targets=hipv4-amdgcn-amd-amdhsa--gfx90a",
        "-input=FILE",
        "-output=unbundled.co",
    ],
    &["extract", "FILE", "--arch", "gfx90a", "-o", "extracted"],
];

/// What a reader gave: whether it succeeded, and its output.
struct Outcome {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// Runs `reader` on the bomb `name` in `dir`; fails the test if the reader died of a signal,
/// panicked, or failed without naming the file.
fn read_bomb(dir: &Path, name: &str, reader: &[&str]) -> Outcome {
    let _ = fs::remove_dir_all(dir.join("extracted"));
    let _ = fs::remove_file(dir.join("unbundled.co"));
    let args: Vec<String> = reader.iter().map(|a| a.replace("FILE", name)).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (output, took) = run(dir, &args, MEMORY);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    eprintln!("{name}: {args:?}: {:?} in {took:.1?}", output.status.code());
    let code = output.status.code();
    assert!(
        code.is_some(),
        "{name}: {args:?} died of {:?}: {stderr}",
        output.status
    );
    assert_ne!(code, Some(101), "{name}: {args:?} panicked: {stderr}");
    if code != Some(0) {
        assert!(
            stderr.contains(name),
            "{name}: {args:?} failed without naming the file: {stderr}"
        );
    }
    Outcome {
        ok: code == Some(0),
        stdout,
        stderr,
    }
}

/// Checks that every reader gives the right answer for a bundle bomb.
fn every_reader_reads_the_bundle(dir: &Path, name: &str) {
    let code = device_code();
    let [ls, ls_json, list, unbundle, extract] = READERS;

    let out = read_bomb(dir, name, ls);
    assert!(out.ok, "{}", out.stderr);
    let device = out.stdout.lines().find(|l| l.contains("gfx90a")).unwrap();
    assert!(device.contains(&code.len().to_string()), "{}", out.stdout);

    let out = read_bomb(dir, name, ls_json);
    assert!(out.ok, "{}", out.stderr);
    let images: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let ids: Vec<(&str, u64)> = images
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["entry_id"].as_str().unwrap(), i["size"].as_u64().unwrap()))
        .collect();
    assert_eq!(ids, [(HOST, 0), (DEVICE, code.len() as u64)]);

    let out = read_bomb(dir, name, list);
    assert!(out.ok, "{}", out.stderr);
    assert_eq!(out.stdout, format!("{DEVICE}\n{HOST}\n"));

    let out = read_bomb(dir, name, unbundle);
    assert!(out.ok, "{}", out.stderr);
    assert_eq!(fs::read(dir.join("unbundled.co")).unwrap(), code);

    let out = read_bomb(dir, name, extract);
    assert!(out.ok, "{}", out.stderr);
    let written: Vec<PathBuf> = fs::read_dir(dir.join("extracted"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");
    assert_eq!(fs::read(&written[0]).unwrap(), code);
}

/// A folder holding a compressed bundle bomb, and the bomb's name.
fn bundle_bomb(method: Method, version: u16) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let name = format!("bomb-v{version}-{}", method.name());
    let bytes = compressed_bundle(method, version, &small_bundle(), ZEROS);
    // zlib inflates a thousandfold at most; zstd far more.
    assert!(bytes.len() as u64 <= ZEROS / 200, "{} bytes", bytes.len());
    fs::write(dir.path().join(&name), bytes).unwrap();
    (dir, name)
}

#[test]
fn a_zstd_version_3_bomb_is_read_within_the_memory_cap() {
    let (dir, name) = bundle_bomb(Method::Zstd, 3);
    every_reader_reads_the_bundle(dir.path(), &name);
}

#[test]
fn a_zlib_version_2_bomb_is_read_within_the_memory_cap() {
    let (dir, name) = bundle_bomb(Method::Zlib, 2);
    every_reader_reads_the_bundle(dir.path(), &name);
}

#[test]
fn zstd_version_2_and_zlib_version_3_bombs_are_listed_within_the_memory_cap() {
    for (method, version) in [(Method::Zstd, 2), (Method::Zlib, 3)] {
        let (dir, name) = bundle_bomb(method, version);
        let [ls, _, list, _, _] = READERS;
        let out = read_bomb(dir.path(), &name, ls);
        assert!(out.ok && out.stdout.contains("gfx90a"), "{}", out.stderr);
        let out = read_bomb(dir.path(), &name, list);
        assert_eq!(out.stdout, format!("{DEVICE}\n{HOST}\n"), "{}", out.stderr);
    }
}

#[test]
fn a_bomb_whose_entry_claims_a_terabyte_is_an_error_naming_the_entry() {
    let mut head = small_bundle();
    let parsed = bundle::Bundle::parse(&head).unwrap().unwrap();
    let record = parsed.header_size() as usize - 24 - DEVICE.len();
    head[record + 8..record + 16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let name = "bomb-terabyte-entry";
    fs::write(
        dir.join(name),
        compressed_bundle(Method::Zstd, 3, &head, ZEROS),
    )
    .unwrap();
    let [ls, ls_json, list, unbundle, extract] = READERS;
    for reader in [ls, ls_json, list, unbundle] {
        let out = read_bomb(dir, name, reader);
        assert!(!out.ok);
        assert!(!out.stdout.contains("gfx90a"), "{reader:?}: {}", out.stdout);
        assert!(
            out.stderr.contains("bundle entry 1 ends at 0x10000000"),
            "{reader:?}: {}",
            out.stderr
        );
    }
    // extract tells only that it found nothing.
    let out = read_bomb(dir, name, extract);
    assert!(!out.ok && !dir.join("extracted").exists());
    assert!(out.stderr.contains("no device image"), "{}", out.stderr);
}

#[test]
fn an_offload_binary_that_inflates_to_zeros_is_read_from_its_head() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let name = "bomb-offload-binary";
    let bytes = offload_binary_bomb(ZEROS);
    assert!(bytes.len() < 2 << 20, "{} bytes", bytes.len());
    fs::write(dir.join(name), bytes).unwrap();
    let code = device_code();
    // Its entries and strings are inflated, not its 512 MiB: listed within half of that.
    let [ls, ls_json, list, _, extract] = READERS;
    let out = read_bomb(dir, name, ls);
    assert!(out.ok, "{}", out.stderr);
    let device = out.stdout.lines().find(|l| l.contains("gfx90a")).unwrap();
    assert!(device.contains(&code.len().to_string()), "{}", out.stdout);
    let out = read_bomb(dir, name, ls_json);
    assert!(out.ok, "{}", out.stderr);
    let images: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let listed: Vec<(&str, &str, u64, bool)> = images
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["triple"].as_str().unwrap(),
                i["arch"].as_str().unwrap(),
                i["size"].as_u64().unwrap(),
                i["compressed"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [("amdgcn-amd-amdhsa", "gfx90a", code.len() as u64, true)]
    );
    // Extracting inflates up to the end of the image chosen, not the zeros after it.
    let out = read_bomb(dir, name, extract);
    assert!(out.ok, "{}", out.stderr);
    let written: Vec<PathBuf> = fs::read_dir(dir.join("extracted"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");
    assert_eq!(fs::read(&written[0]).unwrap(), code);
    assert!(written[0].to_string_lossy().ends_with(".co"), "{written:?}");
    // Verifying inflates it all, a window at a time, and finds its size right.
    let out = read_bomb(dir, name, &["verify", "FILE"]);
    assert!(out.ok, "{}{}", out.stdout, out.stderr);
    // Not a bundle: the bundler lists nothing, and does not inflate it.
    let out = read_bomb(dir, name, list);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
}

#[test]
fn an_offload_binary_whose_stream_is_short_of_its_size_is_listed_and_refused_by_verify() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let name = "short-offload-binary";
    let mut bytes = offload_binary_bomb(ZEROS);
    // Declares one byte more than the stream inflates to: the head reads, the end does not.
    let declared = u64::from_le_bytes(bytes[32..40].try_into().unwrap()) + 1;
    bytes[32..40].copy_from_slice(&declared.to_le_bytes());
    fs::write(dir.join(name), bytes).unwrap();
    let out = read_bomb(dir, name, &["ls", "FILE"]);
    assert!(out.ok, "{}", out.stderr);
    let out = read_bomb(dir, name, &["verify", "FILE"]);
    assert!(!out.ok);
    let said = format!(
        "offset 0x28: compressed offload binary payload inflates to {} bytes, but its header says {}",
        declared - 41,
        declared - 40
    );
    assert!(
        out.stderr.contains(name) && out.stderr.contains(&said),
        "{}",
        out.stderr
    );
}

#[test]
fn compressing_more_than_version_2_holds_fails_before_reading_the_input() {
    let dir = tempfile::tempdir().unwrap();
    File::create(dir.path().join("host")).unwrap();
    let big = File::create(dir.path().join("big.co")).unwrap();
    // Sparse: five gibibytes that take no disk, and must take no memory either.
    big.set_len(5 << 30).unwrap();
    let size = bundle::layout(&[(HOST, 0), (DEVICE, 5 << 30)], 1)
        .unwrap()
        .size;
    let (output, took) = run(
        dir.path(),
        &[
            "bundler",
            "-type=o",
            "-targets=host-x86_64-unknown-linux-gnu,hipv4-amdgcn-amd-amdhsa--gfx90a",
            "-input=host",
            "-input=big.co",
            "-output=out.bundle",
            "-compress",
        ],
        1 << 30,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        format!(
            "offload bundler: error: 'out.bundle': offset 0x0: version 2 uncompressed size \
             {size} does not fit in its header field"
        )
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(!dir.path().join("out.bundle").exists());
}
