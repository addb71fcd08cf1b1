//! Images written in parallel each get their own bytes: many images larger than the size
//! below which a part is copied through memory, many threads, repeated runs, every output
//! byte compared with what clang-offload-bundler-19 unbundles from the same file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util;
use crate::util::offload;

/// Target IDs, one per entry: enough entries that eight threads are always copying at once.
fn target_ids() -> Vec<String> {
    let processors = [
        "gfx900", "gfx906", "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx1101", "gfx1010",
        "gfx1030", "gfx1100", "gfx1200",
    ];
    // Settings LLVM's bundler does not see as conflicting on one processor.
    let features = [
        ":sramecc+:xnack+",
        ":sramecc+:xnack-",
        ":sramecc-:xnack+",
        ":sramecc-:xnack-",
    ];
    processors
        .iter()
        .flat_map(|p| features.iter().map(move |f| format!("{p}{f}")))
        .collect()
}

/// Bytes no other entry has at any offset: a counter-based generator seeded by the index.
fn payload(index: usize) -> Vec<u8> {
    let size = (64 << 10) + 4093 * (index + 1) + (index % 7) * 65536;
    let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ (index as u64).wrapping_mul(0xff51_afd7_ed55_8ccd);
    (0..size)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// Makes the bundle with LLVM's bundler and what LLVM unbundles for each target: the inputs
/// and the expected outputs, by target ID.
fn make_bundle(llvm: &Path, dir: &Path) -> (PathBuf, BTreeMap<String, Vec<u8>>) {
    let ids = target_ids();
    let mut inputs = Vec::new();
    for (i, _) in ids.iter().enumerate() {
        let path = dir.join(format!("in{i}.bin"));
        std::fs::write(&path, payload(i)).unwrap();
        inputs.push(path);
    }
    let targets: Vec<String> = ids
        .iter()
        .map(|id| format!("hipv4-amdgcn-amd-amdhsa--{id}"))
        .collect();
    let bundle = dir.join("many.hipfb");
    let mut bundler = Command::new(llvm);
    bundler
        .arg("-type=o")
        .arg("-bundle-align=4096")
        .arg(format!("-targets={}", targets.join(",")))
        .arg(format!("-output={}", bundle.display()));
    for input in &inputs {
        bundler.arg(format!("-input={}", input.display()));
    }
    let status = bundler.status().unwrap();
    assert!(status.success(), "{llvm:?} could not make the bundle");
    let mut expected = BTreeMap::new();
    for (id, target) in ids.iter().zip(&targets) {
        let out = dir.join(format!("llvm-{}.co", id.replace(':', "_")));
        let status = Command::new(llvm)
            .args(["-unbundle", "-type=o"])
            .arg(format!("-targets={target}"))
            .arg(format!("-input={}", bundle.display()))
            .arg(format!("-output={}", out.display()))
            .status()
            .unwrap();
        assert!(status.success(), "{llvm:?} could not unbundle {target}");
        expected.insert(id.clone(), std::fs::read(&out).unwrap());
    }
    (bundle, expected)
}

#[test]
fn every_image_written_in_parallel_holds_its_own_bytes() {
    let Some(llvm) = util::tool("clang-offload-bundler-19") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (bundle, expected) = make_bundle(&llvm, dir.path());
    assert!(expected.values().all(|bytes| bytes.len() > 64 << 10));
    for run in 0..12 {
        let out = dir.path().join(format!("run{run}"));
        let mut extract = offload();
        extract
            .env("RAYON_NUM_THREADS", "8")
            .arg("extract")
            .arg(&bundle)
            .arg("--exact")
            .arg("-o")
            .arg(&out);
        for id in expected.keys() {
            extract.arg("--arch").arg(id);
        }
        let result = extract.output().unwrap();
        assert!(
            result.status.success(),
            "run {run}: {}",
            String::from_utf8_lossy(&result.stderr)
        );
        for (id, bytes) in &expected {
            let name = format!(
                "many.hipfb-hipv4-amdgcn-amd-amdhsa--{}.bin",
                id.replace(':', "_")
            );
            let written =
                std::fs::read(out.join(&name)).unwrap_or_else(|e| panic!("run {run}: {name}: {e}"));
            assert!(
                written == *bytes,
                "run {run}: {name} does not hold the bytes LLVM unbundles for {id}"
            );
        }
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), expected.len());
    }
}
