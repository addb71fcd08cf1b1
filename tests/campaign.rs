//! A campaign of damaged files through every reader: copies of the samples with bytes
//! flipped, cut short, and the sizes and offsets after each magic set to 0, 2^32-1, 2^63,
//! 2^64-1 and the file's size. No reader may panic (exit 101), die of a signal or hang
//! (10 s each), and every failure must say why on stderr.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::util::{offload, samples_dir, visible};

const SAMPLES: &[&str] = &[
    "bundles/kernel.bc",
    "bundles/kernel-z.bc",
    "bundles/kernel-hip-z.o",
    "bundles/two-ccob.bin",
    "bundles/vadd-fat.o",
    "clang/kernel-fatbin.o",
    "archive/libmixed.a",
    "openmp/omp.o",
    "openmp/device.bin",
    "linked/hip-app",
    "linked/libhip.so",
    "linked/kernel-msvc.obj",
    "linked/macho-universal",
    "linked/bundle-in-binary.bin",
    "cuda/gencode-lz.o",
    "cuda/gencode-zstd.o",
    "cuda/rdc.o",
    "cuda/app",
];

const MAGICS: [&[u8]; 4] = [
    b"__CLANG_OFFLOAD_BUNDLE__",
    b"CCOB",
    b"\x10\xff\x10\xad",
    b"\x50\xed\x55\xba",
];

/// Damaged copies of `good`: `count` of them, from a fixed seed.
fn damaged(good: &[u8], count: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let extremes = [0u64, u32::MAX as u64, 1 << 63, u64::MAX, good.len() as u64];
    (0..count)
        .map(|k| {
            let mut bytes = good.to_vec();
            match k % 3 {
                0 => bytes.truncate((next() % bytes.len() as u64) as usize),
                1 => {
                    for _ in 0..1 + next() % 8 {
                        let at = (next() % bytes.len() as u64) as usize;
                        bytes[at] ^= (next() >> 13) as u8 | 1;
                    }
                }
                _ => {
                    let magic = MAGICS[(next() % MAGICS.len() as u64) as usize];
                    let starts: Vec<usize> = memchr::memmem::find_iter(&bytes, magic).collect();
                    if !starts.is_empty() {
                        let at = starts[(next() % starts.len() as u64) as usize];
                        let field = at + magic.len() + (next() % 6) as usize * 4;
                        let value = extremes[(next() % 5) as usize];
                        if field + 8 <= bytes.len() {
                            bytes[field..field + 8].copy_from_slice(&value.to_le_bytes());
                        }
                    }
                }
            }
            bytes
        })
        .collect()
}

/// Runs `args` on `file` and checks the rules; returns a problem, if any.
fn check(dir: &Path, file: &Path, args: &[&str]) -> Option<String> {
    let mut child = offload()
        .current_dir(dir)
        .args(
            args.iter()
                .map(|a| a.replace("FILE", &file.display().to_string())),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            return Some(format!("{args:?} on {}: no answer in 10 s", file.display()));
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    let mut stderr = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    match status.code() {
        None => Some(format!(
            "{args:?} on {}: killed by a signal",
            file.display()
        )),
        Some(101) => Some(format!("{args:?} on {}: panic: {stderr}", file.display())),
        Some(0) => None,
        Some(_) if stderr.trim().is_empty() => Some(format!(
            "{args:?} on {}: failed without a message",
            file.display()
        )),
        Some(_) => None,
    }
}

#[test]
fn damaged_files_never_crash_any_reader() {
    let readers: [&[&str]; 11] = [
        &["ls", "FILE"],
        &["ls", "--json", "FILE"],
        &["extract", "FILE", "--arch", "gfx90a", "-o", "out"],
        &["extract", "FILE", "--arch", "sm_90", "-o", "out"],
        &["extract", "FILE", "--device", "sm_89", "-o", "out"],
        &["strip", "FILE", "--keep", "sm_90", "-o", "out.stripped"],
        &["check", "FILE", "--device", "sm_89"],
        &["bundler", "-list", "-type=o", "-input=FILE"],
        &[
            "bundler",
            "-unbundle",
            "-type=o",
            "-targets=hipv4-amdgcn-amd-amdhsa--gfx90a",
            "-input=FILE",
            "-output=out.co",
        ],
        &["packager", "FILE", "--image=triple=amdgcn-amd-amdhsa"],
        &[
            "strip",
            "FILE",
            "--keep",
            "gfx90a",
            "--dry-run",
            "--in-place",
        ],
    ];
    let copies = SAMPLES.iter().enumerate().map(|(n, sample)| {
        let good = std::fs::read(samples_dir().join(sample)).unwrap();
        damaged(&good, 24, 0x9e37_79b9 + n as u64)
    });
    campaign("campaign", "", copies, &readers);
}

/// Runs every reader on every damaged copy (each list of copies from one good file, their
/// names ending in `suffix`), and fails with every problem found.
fn campaign(
    name: &str,
    suffix: &str,
    copies: impl Iterator<Item = Vec<Vec<u8>>>,
    readers: &[&[&str]],
) {
    let dir = tempfile::tempdir().unwrap();
    let mut problems = Vec::new();
    let mut runs = 0;
    for (n, list) in copies.enumerate() {
        for (k, bytes) in list.into_iter().enumerate() {
            let file = dir.path().join(format!("damaged-{n}-{k}{suffix}"));
            std::fs::write(&file, &bytes).unwrap();
            for reader in readers {
                runs += 1;
                problems.extend(check(dir.path(), &file, reader));
            }
            std::fs::remove_file(&file).unwrap();
        }
    }
    visible(&format!("{name}: {runs} runs, {} problems", problems.len()));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A `.kpack` archive of `scheme` with three code objects for two processors.
fn kpack_archive(scheme: offload::format::kpack::Scheme) -> Vec<u8> {
    let mut w =
        offload::format::kpack::ArchiveWriter::new("k", "gfx90a", &["gfx90a", "gfx1100"], scheme);
    for (key, arch, fill) in [
        ("lib/k.so#0", "gfx90a", 1u8),
        ("lib/k.so#1", "gfx90a", 2),
        ("lib/k.so#0", "gfx1100", 3),
    ] {
        let code: Vec<u8> = (0..3000u32).map(|i| fill ^ (i % 7) as u8).collect();
        w.add(key, arch, &code).unwrap();
    }
    w.finish()
}

#[test]
fn damaged_kpack_archives_never_crash_any_reader() {
    use offload::format::kpack::Scheme;
    let readers: [&[&str]; 7] = [
        &["ls", "--json", "FILE"],
        &["ls", "FILE"],
        &["du", "FILE"],
        &["extract", "FILE", "--arch", "gfx90a", "-o", "out"],
        &["extract", "FILE", "--device", "gfx1100", "-o", "out"],
        &["verify", "FILE"],
        &["ls", "--verify", "FILE"],
    ];
    let copies = [Scheme::None, Scheme::ZstdPerKernel]
        .into_iter()
        .enumerate()
        .map(|(n, scheme)| {
            let good = kpack_archive(scheme);
            let mut copies = damaged(&good, 30, 0x5bd1_e995 + n as u64);
            // The table's offset and the frame count set to extremes.
            for value in [0u64, 15, 64, u32::MAX as u64, u64::MAX, good.len() as u64] {
                let mut bytes = good.clone();
                bytes[8..16].copy_from_slice(&value.to_le_bytes());
                copies.push(bytes);
                let mut bytes = good.clone();
                bytes[64..68].copy_from_slice(&(value as u32).to_le_bytes());
                copies.push(bytes);
            }
            copies
        });
    let hostile = std::iter::once(
        hostile_kpack_archives()
            .into_iter()
            .filter(|(name, _)| name.ends_with(".kpack"))
            .map(|(_, b)| b)
            .collect(),
    );
    campaign("kpack campaign", ".kpack", copies.chain(hostile), &readers);
}

/// Archives made as an attacker would: processor keys with newlines, escape sequences and
/// `/..`, empty, a host entry ID, 69,000 bytes long; an archive for 50,000 processors; each
/// with its name as a fuzz seed. Every reader must refuse or print them without being fooled.
pub(crate) fn hostile_kpack_archives() -> Vec<(String, Vec<u8>)> {
    use offload::format::kpack::{ArchiveWriter, Scheme};
    // Past the widths that formatting takes (65,535).
    let long = "gfx".repeat(23_000);
    let keys: [(&str, &str); 6] = [
        ("newline", "gfx90a\nlib/k.so#0  fake  line"),
        ("escape", "gfx90a\x1b[2J\x1b[31m"),
        ("dot-dot", "gfx90a/../../../victim/owned"),
        ("empty", ""),
        ("host", "host-x86_64-unknown-linux-gnu-"),
        ("long", long.as_str()),
    ];
    let mut archives: Vec<(String, Vec<u8>)> = keys
        .iter()
        .map(|(name, arch)| {
            let mut w = ArchiveWriter::new("k", "gfx90a", &[arch], Scheme::None);
            w.add("lib/k.so#0", arch, b"\x7fELF code").unwrap();
            if arch.len() < 100 {
                w.add(&format!("lib/k.so#0{arch}"), "gfx90a", b"\x7fELF code")
                    .unwrap();
            }
            (format!("hostile-{name}.kpack"), w.finish())
        })
        .collect();
    let many: Vec<String> = (0..50_000).map(|i| format!("gfx{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let mut w = ArchiveWriter::new("k", "gfx90a", &many, Scheme::None);
    w.add("lib/k.so#0", "gfx90a", b"\x7fELF code").unwrap();
    archives.push(("many-processors.kpack".to_string(), w.finish()));
    // A reference that points at private folders and out of the tree.
    let reference = offload::format::kpack::KpackRef {
        kernel_name: "lib/k.so\n#0",
        kpack_search_paths: vec!["/etc/@GFXARCH@", "../../../../@GFXARCH@/../etc/shadow"],
    };
    archives.push(("hostile-ref.msgpack".to_string(), reference.to_bytes()));
    archives
}

#[test]
fn the_fuzz_seeds_hold_the_hostile_archives() {
    let seeds = crate::util::root().join("fuzz/seeds/kpack");
    for (name, bytes) in hostile_kpack_archives() {
        // Large, and a test of its own: not a seed.
        if name == "many-processors.kpack" {
            continue;
        }
        let path = seeds.join(&name);
        if std::env::var_os("OFFLOAD_WRITE_SEEDS").is_some() {
            std::fs::write(&path, &bytes).unwrap();
        }
        let written = std::fs::read(&path).unwrap_or_default();
        assert!(
            written == bytes,
            "{}: not as this test makes it; OFFLOAD_WRITE_SEEDS=1 writes it",
            path.display()
        );
    }
}

/// Bundles made to attack the output rather than the parser: an entry ID 70,000 characters
/// long (past what a formatting width takes), one with a newline and a terminal escape, one
/// of 600 KB; each alone and beside a sound entry.
fn hostile_bundles() -> Vec<Vec<u8>> {
    use offload::format::bundle;
    let host = "host-x86_64-unknown-linux-gnu-";
    let sound = "hipv4-amdgcn-amd-amdhsa--gfx90a";
    let ids = [
        format!("hipv4-amdgcn-amd-amdhsa--gfx{}", "9".repeat(70_000)),
        format!("{sound}\nFAKE LINE\x1b[31m"),
        format!("hipv4-amdgcn-amd-amdhsa--{}", "x".repeat(600_000)),
        "\x1b]0;title\x07\r\n".to_string(),
    ];
    ids.iter()
        .flat_map(|id| {
            [
                bundle::to_vec(&[(host, b"".as_slice()), (id.as_str(), b"\x7fELF1")], 8),
                bundle::to_vec(
                    &[(id.as_str(), b"\x7fELF1".as_slice()), (sound, b"\x7fELF2")],
                    8,
                ),
            ]
        })
        .collect()
}

#[test]
fn hostile_entry_ids_never_crash_any_reader() {
    let readers: [&[&str]; 8] = [
        &["ls", "FILE"],
        &["ls", "--json", "FILE"],
        &["du", "FILE"],
        &["verify", "FILE"],
        &["extract", "FILE", "--arch", "gfx90a", "-o", "out"],
        &["extract", "FILE", "--device", "gfx90a", "-o", "out"],
        &["strip", "FILE", "--keep", "gfx90a", "-o", "out.stripped"],
        &["bundler", "-list", "-type=o", "-input=FILE"],
    ];
    campaign(
        "hostile IDs",
        ".hipfb",
        std::iter::once(hostile_bundles()),
        &readers,
    );
}

#[test]
fn damaged_compressed_cuda_entries_never_crash_any_reader() {
    use crate::hostile_streams::{fatbin, lz_zeros, zstd_zeros, FLAG_LZ, FLAG_ZSTD};
    let readers: [&[&str]; 6] = [
        &["ls", "--json", "FILE"],
        &["extract", "FILE", "--arch", "sm_80", "-o", "out"],
        &["extract", "FILE", "--device", "sm_80", "-o", "out"],
        &["verify", "FILE"],
        &["strip", "FILE", "--keep", "sm_90", "-o", "out.stripped"],
        &["check", "FILE", "--device", "sm_80"],
    ];
    let size = 3 << 20;
    let goods = [
        fatbin(&zstd_zeros(size), FLAG_ZSTD, size),
        fatbin(&lz_zeros(size), FLAG_LZ, size),
    ];
    let copies = goods.into_iter().enumerate().map(|(n, good)| {
        let mut copies = damaged(&good, 30, 0x2545_f491 + n as u64);
        // The stored and inflated sizes of the entry (at 16 + 24 and 16 + 56) set to extremes.
        for value in [0u64, 1, size - 1, size + 1, u32::MAX as u64, u64::MAX] {
            for (field, width) in [(40, 4), (72, 8)] {
                let mut bytes = good.clone();
                bytes[field..field + width].copy_from_slice(&value.to_le_bytes()[..width]);
                copies.push(bytes);
            }
        }
        copies
    });
    campaign(
        "CUDA compressed entries campaign",
        ".fatbin",
        copies,
        &readers,
    );
}
