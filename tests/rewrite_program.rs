//! `offload strip` and `offload compress` on linked HIP programs and shared libraries, built
//! here by clang-19 with GNU ld and with lld: the file gets smaller, the program still runs,
//! and the stand-in HIP runtime (tests/support/hip_runtime.c) finds a valid bundle through
//! every wrapper.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::native::{hip_objects, run, support, KEPT_GFX90A};
use crate::util::{offload, offload_in, reference_tool, samples_dir, succeed};

fn extracted(file: &Path, dir: &Path) -> Vec<Vec<u8>> {
    succeed(offload().args([
        "extract",
        file.to_str().unwrap(),
        "--arch",
        "gfx90a",
        "-q",
        "-o",
        dir.to_str().unwrap(),
    ]));
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    names.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

#[test]
fn stripped_programs_shrink_and_still_register_valid_bundles() {
    let Some(clang) = reference_tool("clang-19") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let objects = hip_objects(&clang, dir.path());
    let runtime = support("hip_runtime.c");
    for linker in ["bfd", "lld"] {
        let program = dir.path().join(format!("app-{linker}"));
        succeed(
            Command::new(&clang)
                .arg(format!("-fuse-ld={linker}"))
                .arg(&runtime)
                .args(&objects)
                .arg("-o")
                .arg(&program),
        );
        assert!(run(&program, None).starts_with("bundle, 7 entries\n"));

        let stripped = dir.path().join(format!("app-{linker}-gfx90a"));
        succeed(offload().args([
            "strip",
            program.to_str().unwrap(),
            "--keep",
            "gfx90a",
            "-o",
            stripped.to_str().unwrap(),
        ]));
        assert_eq!(run(&stripped, None), KEPT_GFX90A, "{linker}");
        let (before, after) = (
            std::fs::metadata(&program).unwrap().len(),
            std::fs::metadata(&stripped).unwrap().len(),
        );
        assert!(
            after + 16384 <= before,
            "{linker}: {before} -> {after} bytes"
        );
        // Every kept code object is the original's, byte for byte.
        assert_eq!(
            extracted(&program, &dir.path().join(format!("a-{linker}"))),
            extracted(&stripped, &dir.path().join(format!("b-{linker}")))
        );
        // Rewritten again: compressed, it still runs.
        let compressed = dir.path().join(format!("app-{linker}-z"));
        succeed(offload().args([
            "compress",
            stripped.to_str().unwrap(),
            "-o",
            compressed.to_str().unwrap(),
        ]));
        assert_eq!(
            run(&compressed, None),
            "compressed bundle, version 2, zstd\ncompressed bundle, version 2, zstd\n"
        );
    }
}

#[test]
fn a_shared_library_stripped_in_place_still_loads() {
    let Some(clang) = reference_tool("clang-19") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let objects = hip_objects(&clang, dir.path());
    let library = dir.path().join("libkernels.so");
    succeed(
        Command::new(&clang)
            .args(["-fuse-ld=lld", "-shared", "-fPIC"])
            .args(&objects)
            .arg("-o")
            .arg(&library),
    );
    let program = dir.path().join("uses-library");
    succeed(
        Command::new(&clang)
            .arg(support("hip_runtime.c"))
            .arg("-Wl,--no-as-needed")
            .arg(format!("-L{}", dir.path().display()))
            .args(["-lkernels", "-o"])
            .arg(&program),
    );
    let before = std::fs::metadata(&library).unwrap().len();
    succeed(offload().args([
        "strip",
        library.to_str().unwrap(),
        "--keep",
        "gfx90a",
        "--in-place",
    ]));
    assert!(std::fs::metadata(&library).unwrap().len() + 16384 <= before);
    assert_eq!(run(&program, Some(dir.path())), KEPT_GFX90A);
}

#[test]
fn a_pointer_into_the_middle_of_a_bundle_is_refused_and_the_file_left_alone() {
    use object::{Object, ObjectSection};
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(samples_dir().join("linked/hip-app")).unwrap();
    // The dynamic relocation that fills the second wrapper points at its bundle, at 0x5000.
    let rela = {
        let file = object::File::parse(&*bytes).unwrap();
        let section = file.section_by_name(".rela.dyn").unwrap();
        let (offset, size) = section.file_range().unwrap();
        (offset as usize, size as usize)
    };
    let entry = (rela.0..rela.0 + rela.1)
        .step_by(24)
        .find(|&at| u64::from_le_bytes(bytes[at + 16..at + 24].try_into().unwrap()) == 0x5000)
        .expect("a relocation to the second bundle");
    bytes[entry + 16..entry + 24].copy_from_slice(&0x5008u64.to_le_bytes());
    let path = dir.path().join("app");
    std::fs::write(&path, &bytes).unwrap();
    let out = offload()
        .args(["strip", "--keep", "gfx90a", "--in-place"])
        .arg(&path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("an address inside .hip_fatbin (0x5008) is not the start of a bundle"),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn damaged_programs_give_errors_not_panics() {
    use offload::ops::rewrite::{rewrite_file, Change, RewriteConfig, Summary};
    let config = RewriteConfig {
        change: Change::Keep(vec!["gfx90a".parse().unwrap()]),
        allow_empty: true,
        max_decompressed: 1 << 26,
    };
    let mut state = 0x1234_5678_9abc_def1u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for sample in ["linked/hip-app", "linked/libhip.so", "linked/hip-rdc-app"] {
        let good = std::fs::read(samples_dir().join(sample)).unwrap();
        for round in 0..600 {
            let mut bytes = good.clone();
            if round % 4 == 0 {
                bytes.truncate((next() % bytes.len() as u64) as usize);
            } else {
                // Headers and the first bundles are where the damage matters.
                let span = bytes.len().min(0x3000) as u64;
                for _ in 0..1 + round % 6 {
                    let at = (next() % span) as usize;
                    bytes[at] = next() as u8;
                }
            }
            let mut summary = Summary::default();
            let _ = rewrite_file(Path::new(sample), &bytes, &config, &mut summary);
        }
    }
}

#[test]
fn decompressing_a_linked_program_is_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for sample in ["hip-app", "libhip.so"] {
        std::fs::copy(samples_dir().join("linked").join(sample), d.join(sample)).unwrap();
    }
    // A program whose bundles we compressed ourselves.
    let (code, _, err) = offload_in(
        d,
        &[
            "compress",
            samples_dir().join("linked/hip-rdc-app").to_str().unwrap(),
            "-o",
            "hip-rdc-app.z",
        ],
    );
    assert_eq!(code, 0, "{err}");
    for name in ["hip-app", "libhip.so", "hip-rdc-app.z"] {
        let before = std::fs::read(d.join(name)).unwrap();
        let runs: [&[&str]; 3] = [
            &["decompress", name, "-o", "out"],
            &["decompress", name, "--in-place"],
            &["decompress", name, "--dry-run"],
        ];
        for args in runs {
            let (code, _, err) = offload_in(d, args);
            assert_eq!(code, 1, "{args:?}: {err}");
            assert_eq!(
                err,
                format!(
                    "offload decompress: error: '{name}': decompressing the device code of a linked program or shared library is not supported: the bundles would no longer fit their section; decompress the objects before linking\n"
                ),
                "{args:?}"
            );
            assert!(!d.join("out").exists(), "{args:?} left an output");
            assert_eq!(std::fs::read(d.join(name)).unwrap(), before, "{args:?}");
        }
    }
    // A program without compressed bundles has nothing to decompress.
    let (code, _, err) = offload_in(
        d,
        &[
            "decompress",
            samples_dir().join("linked/hip-rdc-app").to_str().unwrap(),
            "--dry-run",
        ],
    );
    assert_eq!(code, 0, "{err}");
}

/// The size of the bundle or compressed bundle at the start of `here`.
fn container_len(here: &[u8]) -> Result<usize, offload::format::Error> {
    use offload::format::{bundle::Bundle, ccob::CompressedBundle};
    let size = if offload::format::ccob::is_compressed(here) {
        CompressedBundle::parse(here)?.map_or(0, |c| c.size())
    } else {
        Bundle::parse(here)?.map_or(0, |b| b.size())
    };
    Ok(size as usize)
}

#[test]
fn bundles_that_outgrow_their_section_are_an_error_not_a_panic() {
    use offload::container::program::rewrite_hip_fatbin;
    for sample in ["linked/hip-app", "linked/libhip.so", "linked/hip-rdc-app"] {
        let file = std::fs::read(samples_dir().join(sample)).unwrap();
        for growth in [1usize << 16, 1 << 20] {
            let grown = |here: &[u8], _| {
                let mut bytes = here[..container_len(here)?].to_vec();
                bytes.resize(bytes.len() + growth, 0xee);
                Ok(Some(bytes))
            };
            let error = rewrite_hip_fatbin(&file, &container_len, &grown)
                .err()
                .unwrap_or_else(|| panic!("{sample}: bundles grown by {growth} were accepted"));
            assert!(
                error.to_string().contains("no longer fit .hip_fatbin"),
                "{sample}: {error}"
            );
        }
    }
}
