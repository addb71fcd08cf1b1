//! Every input a fuzz target crashed on, kept in tests/fuzz-regressions/<target>/, and the
//! seed inputs of each target, through the checks of the fuzz targets (fuzz/checks.rs).

#[path = "../fuzz/checks.rs"]
mod checks;

use std::path::Path;

fn inputs(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .flatten()
        .filter(|e| e.path().is_file())
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// The check of one fuzz target.
type Check = fn(&[u8]);

#[test]
fn every_kept_input_passes_its_fuzz_check() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Each target with the folders its seed inputs come from (as .ci/run runs them).
    let targets: [(&str, Check, &[&str]); 11] = [
        ("bundle", checks::bundle, &["samples/bundles"]),
        ("text_bundle", checks::text_bundle, &["samples/bundles"]),
        ("ccob", checks::ccob, &["samples/bundles"]),
        (
            "offload_binary",
            checks::offload_binary,
            &["samples/openmp", "fuzz/seeds/offload_binary"],
        ),
        ("target_id", checks::target_id, &["fuzz/seeds/target_id"]),
        (
            "scan",
            checks::scan,
            &[
                "samples/linked",
                "samples/archive",
                "samples/openmp",
                "fuzz/seeds/scan",
            ],
        ),
        (
            "round_trips",
            checks::round_trips,
            &["fuzz/seeds/round_trips"],
        ),
        ("kpack", checks::kpack, &["fuzz/seeds/kpack"]),
        (
            "cuda_fatbin",
            checks::cuda_fatbin,
            &["fuzz/seeds/cuda_fatbin"],
        ),
        (
            "rewrite",
            checks::rewrite,
            &["samples/linked", "samples/llvm23", "samples/cuda"],
        ),
        ("manifests", checks::manifests, &["fuzz/seeds/manifests"]),
    ];
    let mut count = 0;
    for (name, check, seeds) in targets {
        let regressions = root.join("tests/fuzz-regressions").join(name);
        let dirs = std::iter::once(regressions).chain(seeds.iter().map(|s| root.join(s)));
        for dir in dirs {
            for (file, data) in inputs(&dir) {
                let result = std::panic::catch_unwind(|| check(&data));
                assert!(result.is_ok(), "{name}: {file} fails its check");
                count += 1;
            }
        }
    }
    assert!(count >= 10, "only {count} inputs");
}
