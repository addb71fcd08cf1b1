//! Every input a fuzz target crashed on, kept in tests/fuzz-regressions/<target>/, and the
//! seed corpora of fuzz/corpus/, through the checks of the fuzz targets (fuzz/checks.rs).

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
    let targets: [(&str, Check); 7] = [
        ("bundle", checks::bundle),
        ("text_bundle", checks::text_bundle),
        ("ccob", checks::ccob),
        ("offload_binary", checks::offload_binary),
        ("target_id", checks::target_id),
        ("scan", checks::scan),
        ("round_trips", checks::round_trips),
    ];
    let mut count = 0;
    for (name, check) in targets {
        for dir in [
            root.join("tests/fuzz-regressions").join(name),
            root.join("fuzz/seeds").join(name),
        ] {
            for (file, data) in inputs(&dir) {
                let result = std::panic::catch_unwind(|| check(&data));
                assert!(result.is_ok(), "{name}: {file} fails its check");
                count += 1;
            }
        }
    }
    assert!(count >= 10, "only {count} inputs");
}
