//! Hostile inputs that ask for much from little: CUDA fat-binary entries that honestly inflate
//! to a gibibyte, which extraction must stream to its output through a bounded window (the
//! peak resident memory of the child is measured), damaged compressed entries `verify` must
//! report as `extract` does, and `.kpack` archives of tens of thousands of processor keys,
//! which must be read in time linear in their number.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{offload, text_output};
use offload::format::kpack::{ArchiveWriter, Scheme};

/// What the gibibyte entries inflate to.
const GIB: u64 = 1 << 30;

/// The most resident memory a reader of a gibibyte entry may take.
const PEAK: u64 = 200 << 20;

/// Flag of an entry compressed with NVIDIA's LZ4-like scheme.
pub(crate) const FLAG_LZ: u64 = 0x2000;
/// Flag of an entry compressed with zstd.
pub(crate) const FLAG_ZSTD: u64 = 0x8000;

/// A CUDA fat binary of one cubin entry for `sm_80`, its payload `stored` (compressed as
/// `flags` say) inflating to `inflated` bytes; laid out as `src/format/cuda_fatbin.rs` reads
/// it: a 16-byte header, then a 64-byte entry header and the payload padded to 8.
pub(crate) fn fatbin(stored: &[u8], flags: u64, inflated: u64) -> Vec<u8> {
    let padded = stored.len().next_multiple_of(8);
    let mut entry = Vec::new();
    entry.extend_from_slice(&2u16.to_le_bytes()); // kind: ELF
    entry.extend_from_slice(&0x0101u16.to_le_bytes());
    entry.extend_from_slice(&64u32.to_le_bytes()); // header size
    entry.extend_from_slice(&(padded as u64).to_le_bytes());
    entry.extend_from_slice(&(stored.len() as u32).to_le_bytes());
    entry.extend_from_slice(&0u32.to_le_bytes()); // ptxas options
    entry.extend_from_slice(&0u16.to_le_bytes()); // minor
    entry.extend_from_slice(&8u16.to_le_bytes()); // major
    entry.extend_from_slice(&80u32.to_le_bytes()); // sm_80
    entry.extend_from_slice(&0u32.to_le_bytes()); // identifier offset
    entry.extend_from_slice(&0u32.to_le_bytes()); // identifier length
    entry.extend_from_slice(&flags.to_le_bytes());
    entry.extend_from_slice(&0u64.to_le_bytes()); // reserved
    entry.extend_from_slice(&inflated.to_le_bytes());
    assert_eq!(entry.len(), 64);
    entry.extend_from_slice(stored);
    entry.resize(64 + padded, 0);
    let mut out = vec![0x50, 0xed, 0x55, 0xba];
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(&(entry.len() as u64).to_le_bytes());
    out.extend_from_slice(&entry);
    out
}

/// `zeros` zero bytes as one zstd frame, never whole in memory.
pub(crate) fn zstd_zeros(zeros: u64) -> Vec<u8> {
    let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
    let chunk = vec![0; 1 << 20];
    let mut left = zeros;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        encoder.write_all(&chunk[..n]).unwrap();
        left -= n as u64;
    }
    encoder.finish().unwrap()
}

/// A length of LZ4's block format beyond the 15 its token holds: bytes of 255, then the rest.
fn lz_length(mut rest: u64, out: &mut Vec<u8>) {
    while rest >= 255 {
        out.push(255);
        rest -= 255;
    }
    out.push(rest as u8);
}

/// `zeros` zero bytes (at least 6) in NVIDIA's LZ4-like block format: a zero as a literal, a
/// match one byte back for all but the last, and the last as the literal the format ends with.
pub(crate) fn lz_zeros(zeros: u64) -> Vec<u8> {
    let matched = zeros - 2;
    let mut out = vec![0x1f, 0, 1, 0];
    lz_length(matched - 4 - 15, &mut out);
    out.extend_from_slice(&[0x10, 0]);
    out
}

/// Runs `offload` with `args` in `dir`: its exit code, its standard error, and its peak
/// resident memory in bytes, the `VmHWM` of `/proc/PID/status` read every few milliseconds
/// while it runs. (`ru_maxrss` would not do: a child's starts from the resident size of the
/// test process it was forked from, however little the program it runs uses.)
pub(crate) fn run_measured(dir: &Path, args: &[&str]) -> (i32, String, u64) {
    let mut child = offload()
        .current_dir(dir)
        .args(args)
        .env("RAYON_NUM_THREADS", "2")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    });
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0u64;
    let start = Instant::now();
    let status = loop {
        // Gone once the program has exited: the last value read is its peak.
        if let Ok(status) = std::fs::read_to_string(&status_file) {
            let kib = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok());
            peak = peak.max(kib.unwrap_or(0) * 1024);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("offload {args:?}: no answer in 120 s");
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    (status.code().unwrap_or(-1), reader.join().unwrap(), peak)
}

/// Asserts that the file at `path` holds exactly `zeros` zero bytes, read a window at a time.
fn assert_zeros(path: &Path, zeros: u64) {
    let mut file = File::open(path).unwrap();
    let mut window = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = file.read(&mut window).unwrap();
        if n == 0 {
            break;
        }
        if let Some(at) = window[..n].iter().position(|&b| b != 0) {
            panic!("{}: byte {} is not zero", path.display(), total + at as u64);
        }
        total += n as u64;
    }
    assert_eq!(total, zeros, "{}", path.display());
}

/// Extracts the gibibyte entry of `bytes` and checks the memory taken and the file written.
fn extract_gibibyte(name: &str, bytes: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(name), bytes).unwrap();
    let args = ["extract", name, "--arch", "sm_80", "-o", "out"];
    let (code, stderr, peak) = run_measured(dir.path(), &args);
    assert_eq!(code, 0, "{stderr}");
    let stem = name.rsplit_once('.').map_or(name, |(stem, _)| stem);
    assert_zeros(&dir.path().join(format!("out/{stem}.1.sm_80.cubin")), GIB);
    crate::util::visible(&format!(
        "{name} ({} bytes): extract peaked at {} MiB",
        bytes.len(),
        peak >> 20
    ));
    assert!(peak < PEAK, "extract peaked at {} MiB", peak >> 20);
    // The other readers stay within the bound too.
    for args in [
        &["ls", name][..],
        &["verify", name],
        &["check", name, "--device", "sm_80"],
        &["strip", name, "--keep", "sm_90", "-o", "stripped"],
    ] {
        let (_, stderr, peak) = run_measured(dir.path(), args);
        crate::util::visible(&format!("{name}: {} peaked at {} MiB", args[0], peak >> 20));
        assert!(
            peak < PEAK,
            "{args:?} peaked at {} MiB: {stderr}",
            peak >> 20
        );
    }
}

#[test]
fn a_zstd_entry_of_a_gibibyte_is_extracted_through_a_window() {
    let bytes = fatbin(&zstd_zeros(GIB), FLAG_ZSTD, GIB);
    extract_gibibyte("zstd.fatbin", &bytes);
}

#[test]
fn an_lz_entry_of_a_gibibyte_is_extracted_through_a_window() {
    let bytes = fatbin(&lz_zeros(GIB), FLAG_LZ, GIB);
    extract_gibibyte("lz.fatbin", &bytes);
}

/// Fat binaries whose one compressed entry is damaged: its stream's bytes flipped, its
/// inflated size one more or one less than the stream gives, its LZ stream cut.
fn damaged_fatbins() -> Vec<(&'static str, Vec<u8>)> {
    let zstd = zstd_zeros(100_000);
    let lz = lz_zeros(100_000);
    let mut flipped = zstd.clone();
    let middle = flipped.len() / 2;
    for b in &mut flipped[middle - 2..middle + 2] {
        *b ^= 0x5a;
    }
    vec![
        ("zstd-flipped", fatbin(&flipped, FLAG_ZSTD, 100_000)),
        ("zstd-longer", fatbin(&zstd, FLAG_ZSTD, 100_001)),
        ("zstd-shorter", fatbin(&zstd, FLAG_ZSTD, 99_999)),
        ("lz-longer", fatbin(&lz, FLAG_LZ, 100_001)),
        ("lz-cut", fatbin(&lz[..lz.len() - 1], FLAG_LZ, 100_000)),
    ]
}

#[test]
fn verify_reports_the_damaged_compressed_entries_extract_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| text_output(offload().current_dir(dir.path()).args(args));
    for (name, bytes) in damaged_fatbins() {
        let file = format!("{name}.fatbin");
        std::fs::write(dir.path().join(&file), &bytes).unwrap();
        let (code, _, extract_err) = run(&["extract", &file, "--arch", "sm_80", "-o", "out"]);
        assert_ne!(code, 0, "{name}: extract succeeded");
        let (code, out, err) = run(&["verify", &file]);
        assert_eq!(code, 1, "{name}: verify: {out}{err}");
        // The payload starts at 16 + 64 = 0x50; the error names the file and an offset in it.
        assert!(
            err.contains(&file) && err.contains("offset 0x"),
            "{name}: {err}"
        );
        assert!(
            out.contains("0 compressed CUDA entries sound, 1 damaged"),
            "{name}: {out}"
        );
        // The same words as extract's.
        let words = |e: &str| e.split(": ").last().unwrap_or_default().trim().to_string();
        assert_eq!(words(&err), words(&extract_err), "{name}");
    }
    // A sound one is counted, and verify succeeds.
    std::fs::write(
        dir.path().join("sound.fatbin"),
        fatbin(&zstd_zeros(4096), FLAG_ZSTD, 4096),
    )
    .unwrap();
    let (code, out, err) = run(&["verify", "sound.fatbin"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("1 compressed CUDA entry sound, 0 damaged"),
        "{out}"
    );
}

/// A `.kpack` archive of `n` processors and `n` keys and more: key `app#0` has a code object
/// for each of `n` processors and `gfx90a`, and keys `app#1` to `app#n` one each for
/// `gfx1100`; every code object is 8 bytes.
fn kpack_of(n: usize) -> Vec<u8> {
    let names: Vec<String> = (0..n).map(|k| format!("gfx{}", 9000 + k)).collect();
    let mut all: Vec<&str> = names.iter().map(String::as_str).collect();
    all.extend(["gfx90a", "gfx1100"]);
    let mut writer = ArchiveWriter::new("k", "gfx90a", &all, Scheme::None);
    for arch in &all[..n + 1] {
        writer.add("app#0", arch, &[0xcc; 8]).unwrap();
    }
    for k in 1..=n {
        writer
            .add(&format!("app#{k}"), "gfx1100", &[0xdd; 8])
            .unwrap();
    }
    writer.finish()
}

/// Runs `offload args` in `dir`: how long it took, its exit code, and what it printed.
fn timed(dir: &Path, args: &[&str]) -> (Duration, i32, String, String) {
    let start = Instant::now();
    let (code, out, err) = text_output(
        Command::new(crate::util::OFFLOAD)
            .current_dir(dir)
            .args(args)
            .env("RAYON_NUM_THREADS", "2"),
    );
    (start.elapsed(), code, out, err)
}

#[test]
fn kpack_archives_of_many_processors_and_keys_are_read_in_linear_time() {
    let dir = tempfile::tempdir().unwrap();
    let mut times = Vec::new();
    for n in [12_500, 50_000] {
        let name = format!("k{n}.kpack");
        std::fs::write(dir.path().join(&name), kpack_of(n)).unwrap();
        let (arch_out, device_out) = (format!("arch-{n}"), format!("device-{n}"));
        let extract = ["extract", &name, "--arch", "gfx90a", "-o", &arch_out];
        let (by_arch, code, _, err) = timed(dir.path(), &extract);
        assert_eq!(code, 0, "{err}");
        // One code object a gfx90a device loads, whatever else the archive holds.
        let written = crate::util::file_names(&dir.path().join(&arch_out));
        assert_eq!(written, [format!("k{n}.kpack-app_0-gfx90a.bin")]);
        let extract = ["extract", &name, "--device", "gfx90a", "-o", &device_out];
        let (by_device, _, _, err) = timed(dir.path(), &extract);
        let written = crate::util::file_names(&dir.path().join(&device_out));
        assert_eq!(written.len(), 1, "{written:?}");
        assert_eq!(
            err.matches("gfx90a loads nothing for app#").count(),
            n,
            "{err:.300}"
        );
        let (ls, code, listing, err) = timed(dir.path(), &["ls", &name]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(listing.lines().count(), 2 * n + 2, "{listing:.300}");
        let (verify, code, report, err) = timed(dir.path(), &["verify", &name]);
        assert_eq!(code, 0, "{err}");
        let sound = format!("{} code objects in 1 kpack archive sound", 2 * n + 1);
        assert!(report.contains(&sound), "{report}");
        times.push([by_arch, by_device, ls, verify]);
    }
    let what = ["extract --arch", "extract --device", "ls", "verify"];
    for (k, what) in what.iter().enumerate() {
        let (small, large) = (times[0][k], times[1][k]);
        crate::util::visible(&format!(
            "{what}: 12,500 processors and keys in {small:?}, 50,000 in {large:?}"
        ));
        // Four times the keys: linear work takes about four times as long, quadratic sixteen.
        assert!(
            large < small * 8 + Duration::from_millis(500) && large < Duration::from_secs(10),
            "{what}: {small:?} for 12,500 processors and keys, {large:?} for 50,000"
        );
    }
}
