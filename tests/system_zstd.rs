//! Built with the `system-zstd` feature, `offload` compresses with the zstd library the system
//! has, the one the system's LLVM links: its compressed bundles are then LLVM 22's byte for
//! byte, the zstd frame included. (Built with the zstd release the zstd crate vendors, the
//! header and the inflated bytes are still LLVM's, but the frames differ: see
//! docs/llvm-compat.md.) Checked against clang-offload-bundler-22 for code objects of several
//! sizes, for both compressed bundle format versions and two levels, and for what
//! `offload compress` makes of linked programs and of a bundle of 10 MB.
//!
//! Only with the feature: `cargo test --workspace --features offload-tools/system-zstd --test
//! main -- system_zstd::` (as `.ci/run` does).
#![cfg(feature = "system-zstd")]

use crate::util;
use crate::util::{first_difference, offload, succeed};
use std::path::{Path, PathBuf};
use std::process::Command;

const HOST: &str = "host-x86_64-unknown-linux-gnu";
const GFX90A: &str = "hipv4-amdgcn-amd-amdhsa--gfx90a";
const BUNDLE_MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";

/// `clang-offload-bundler-22`, or `None` after a visible skip.
fn llvm_bundler() -> Option<PathBuf> {
    util::tool("clang-offload-bundler-22")
}

/// A command running `exe` in `dir` with no compression setting of the environment but
/// `COMPRESSED_BUNDLE_FORMAT_VERSION=version`.
fn in_dir(exe: &Path, dir: &Path, version: u16) -> Command {
    let mut command = Command::new(exe);
    command
        .current_dir(dir)
        .env("COMPRESSED_BUNDLE_FORMAT_VERSION", version.to_string())
        .env_remove("OFFLOAD_BUNDLER_COMPRESS")
        .env_remove("OFFLOAD_BUNDLER_VERBOSE");
    command
}

/// `offload` standing in for LLVM 22, in `dir`.
fn ours(dir: &Path, version: u16) -> Command {
    let mut command = offload();
    command
        .current_dir(dir)
        .env("OFFLOAD_LLVM_VERSION", "22")
        .env("COMPRESSED_BUNDLE_FORMAT_VERSION", version.to_string())
        .env_remove("OFFLOAD_BUNDLER_COMPRESS")
        .env_remove("OFFLOAD_BUNDLER_VERBOSE");
    command
}

/// The files under `dir`, every folder deep, sorted by path.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let entry = entry.unwrap();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                folders.push(entry.path());
            } else if kind.is_file() {
                files.push(entry.path());
            }
        }
    }
    files.sort();
    files
}

/// The bytes of `files`, one after the other.
fn concatenated(files: &[PathBuf]) -> Vec<u8> {
    files
        .iter()
        .flat_map(|f| std::fs::read(f).unwrap())
        .collect()
}

/// The device code compressed, written into `dir`: the committed code objects of three sizes,
/// all of them one after the other, and some 600 KB of samples (code objects, bundles,
/// objects) one after the other. Their names, largest last.
fn device_inputs(dir: &Path) -> Vec<String> {
    let samples = util::samples_dir();
    let mut names = Vec::new();
    for object in [
        "kernel-gfx906.hsaco",
        "kernel-gfx90a.hsaco",
        "vadd-gfx90a.hsaco",
    ] {
        std::fs::copy(samples.join("dev").join(object), dir.join(object)).unwrap();
        names.push(object.to_string());
    }
    let code_objects: Vec<PathBuf> = files_under(&samples.join("dev"))
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "hsaco"))
        .collect();
    assert!(code_objects.len() >= 5, "{code_objects:?}");
    std::fs::write(dir.join("code-objects.bin"), concatenated(&code_objects)).unwrap();
    names.push("code-objects.bin".to_string());
    let mixed: Vec<PathBuf> = ["dev", "bundles", "clang", "targets"]
        .iter()
        .flat_map(|folder| files_under(&samples.join(folder)))
        .collect();
    let mixed = concatenated(&mixed);
    assert!(mixed.len() > 300 << 10, "{}", mixed.len());
    std::fs::write(dir.join("samples.bin"), mixed).unwrap();
    names.push("samples.bin".to_string());
    names
}

/// Asserts that `ours` and `theirs` are the same bytes, saying where they part.
fn assert_same(ours: &[u8], theirs: &[u8], what: &str) {
    assert!(
        ours == theirs,
        "{what}: ours ({} bytes) and clang-offload-bundler-22's ({} bytes) differ: {}",
        ours.len(),
        theirs.len(),
        first_difference(theirs, ours)
    );
}

#[test]
fn bundler_compresses_code_objects_as_llvm_22_does() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::write(dir.join("host.bin"), b"").unwrap();
    let names = device_inputs(dir);
    let Some(llvm) = llvm_bundler() else {
        return;
    };
    for name in &names {
        for version in [2u16, 3] {
            for level in [None, Some("9")] {
                let args = |command: &mut Command, out: &str| {
                    command
                        .args(["-type=o", "-compress"])
                        .arg(format!("-targets={HOST},{GFX90A}"))
                        .args(["-input=host.bin", &format!("-input={name}")])
                        .arg(format!("-output={out}"));
                    if let Some(level) = level {
                        command.arg(format!("-compression-level={level}"));
                    }
                    succeed(command);
                    std::fs::read(dir.join(out)).unwrap()
                };
                let mine = args(ours(dir, version).arg("bundler"), "ours.ccob");
                let theirs = args(&mut in_dir(&llvm, dir, version), "llvm.ccob");
                assert_eq!(&theirs[..4], b"CCOB");
                assert_eq!(u16::from_le_bytes([theirs[4], theirs[5]]), version);
                assert_same(
                    &mine,
                    &theirs,
                    &format!("{name}, format version {version}, level {level:?}"),
                );
            }
        }
    }
}

/// The plain bundles of `file`, in order: where each starts, its bytes and its entries' IDs in
/// the order of its header.
fn plain_bundles(file: &[u8]) -> Vec<(usize, Vec<u8>, Vec<String>)> {
    let word = |at: usize| u64::from_le_bytes(file[at..at + 8].try_into().unwrap()) as usize;
    let mut bundles = Vec::new();
    let mut from = 0;
    while let Some(found) = file[from..]
        .windows(BUNDLE_MAGIC.len())
        .position(|w| w == BUNDLE_MAGIC)
    {
        let start = from + found;
        let mut at = start + BUNDLE_MAGIC.len() + 8;
        let (mut ids, mut end) = (Vec::new(), 0);
        for _ in 0..word(start + BUNDLE_MAGIC.len()) {
            let (offset, size, id_len) = (word(at), word(at + 8), word(at + 16));
            at += 24;
            ids.push(String::from_utf8(file[at..at + id_len].to_vec()).unwrap());
            at += id_len;
            end = end.max(offset + size);
        }
        bundles.push((start, file[start..start + end].to_vec(), ids));
        from = start + end.max(1);
    }
    bundles
}

/// Where `offload ls` finds the compressed bundles of `file`, in order: offset and size.
fn compressed_bundles(file: &Path) -> Vec<(usize, usize)> {
    let out = succeed(offload().arg("ls").arg("--json").arg(file));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let mut places: Vec<(usize, usize)> = rows
        .iter()
        .filter_map(|row| {
            let ccob = row.get("compressed_bundle")?.as_object()?;
            Some((
                ccob.get("offset")?.as_u64()? as usize,
                ccob.get("size")?.as_u64()? as usize,
            ))
        })
        .collect();
    places.sort_unstable();
    places.dedup();
    places
}

/// What clang-offload-bundler-22 makes of the entries of the plain `bundle` (`ids` in its
/// order, aligned to `align`), compressed in format `version`; the same bundle made plain
/// first, to be sure the entries make `bundle` again.
fn llvm_compressed(
    llvm: &Path,
    dir: &Path,
    bundle: &[u8],
    ids: &[String],
    align: u32,
    version: u16,
) -> Vec<u8> {
    std::fs::write(dir.join("plain.bundle"), bundle).unwrap();
    let mut inputs = Vec::new();
    for (n, id) in ids.iter().enumerate() {
        let entry = format!("entry-{n}");
        succeed(in_dir(llvm, dir, version).args([
            "-unbundle",
            "-type=o",
            &format!("-targets={id}"),
            "-input=plain.bundle",
            &format!("-output={entry}"),
        ]));
        inputs.push(format!("-input={entry}"));
    }
    let bundle_as = |compress: bool, out: &str| {
        let mut command = in_dir(llvm, dir, version);
        command
            .args(["-type=o", &format!("-bundle-align={align}")])
            .arg(format!("-targets={}", ids.join(",")))
            .args(&inputs)
            .arg(format!("-output={out}"));
        if compress {
            command.arg("-compress");
        }
        succeed(&mut command);
        std::fs::read(dir.join(out)).unwrap()
    };
    assert!(
        bundle_as(false, "again.bundle") == bundle,
        "clang-offload-bundler-22 does not make the bundle of {ids:?} again from its entries"
    );
    bundle_as(true, "llvm.ccob")
}

#[test]
fn compress_writes_llvm_22s_bundles_into_programs() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let Some(llvm) = llvm_bundler() else {
        return;
    };
    // Programs whose bundles LLVM 22's bundler writes as they are (the host triple of the
    // older samples/linked/ ones is written otherwise since LLVM 20).
    for program in ["targets/mixed-app", "llvm23/hip-rdc-app"] {
        let input = util::samples_dir().join(program);
        let plain = std::fs::read(&input).unwrap();
        let bundles = plain_bundles(&plain);
        assert!(!bundles.is_empty(), "{program}");
        for version in [2u16, 3] {
            let out = dir.join("compressed");
            succeed(
                ours(dir, version)
                    .arg("compress")
                    .arg(&input)
                    .args(["--format-version", &version.to_string(), "-o"])
                    .arg(&out),
            );
            let written = std::fs::read(&out).unwrap();
            let places = compressed_bundles(&out);
            assert_eq!(places.len(), bundles.len(), "{program}");
            for ((start, bundle, ids), (offset, size)) in bundles.iter().zip(places) {
                let theirs = llvm_compressed(&llvm, dir, bundle, ids, 4096, version);
                assert_same(
                    &written[offset..offset + size],
                    &theirs,
                    &format!("{program}, bundle at {start:#x}, format version {version}"),
                );
            }
        }
    }
}

#[test]
fn compress_writes_llvm_22s_large_bundles() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let Some(llvm) = llvm_bundler() else {
        return;
    };
    // 10 MB of device code: every sample four times over, so that long-distance matching
    // finds the copies, in a bundle larger than what is compressed in memory.
    let samples = concatenated(&files_under(&util::samples_dir()));
    let device: Vec<u8> = std::iter::repeat_n(samples, 4).flatten().collect();
    assert!(device.len() > 8 << 20, "{}", device.len());
    std::fs::write(dir.join("device.bin"), &device).unwrap();
    std::fs::write(dir.join("host.bin"), b"").unwrap();
    let ids = [HOST.to_string(), GFX90A.to_string()];
    succeed(in_dir(&llvm, dir, 3).args([
        "-type=o",
        &format!("-targets={}", ids.join(",")),
        "-input=host.bin",
        "-input=device.bin",
        "-output=large.bundle",
    ]));
    let bundle = std::fs::read(dir.join("large.bundle")).unwrap();
    for version in [2u16, 3] {
        let theirs = llvm_compressed(&llvm, dir, &bundle, &ids, 1, version);
        succeed(
            ours(dir, version)
                .arg("compress")
                .arg("large.bundle")
                .args(["--format-version", &version.to_string(), "-o", "ours.ccob"]),
        );
        let mine = std::fs::read(dir.join("ours.ccob")).unwrap();
        assert_same(
            &mine,
            &theirs,
            &format!("the 10 MB bundle, format version {version}"),
        );
    }
}
