//! A command that fails on its inputs prints nothing on standard output that a script would
//! read as a result: every command and output form, given a file that is not there, exits
//! non-zero with a message on standard error and leaves standard output empty; under `--json`
//! it may print JSON, which must then parse whole. Given a damaged file, the same holds for
//! every form that fails on it (`verify`, whose verdict is its result, aside).

use std::path::Path;

use crate::util::{offload, offload_extract, samples_dir, text_output};

/// The arguments of each command and output form, `{}` standing for the input. Each writes
/// what it writes (`-o`) inside the test's folder.
const FORMS: &[&[&str]] = &[
    &["ls", "{}"],
    &["ls", "--json", "{}"],
    &["ls", "--verify", "{}"],
    &["ls", "-r", "{}"],
    &["extract", "--arch", "gfx90a", "-o", "out", "{}"],
    &["extract", "--device", "gfx90a", "-o", "out", "{}"],
    &["verify", "{}"],
    &["check", "--device", "gfx90a", "{}"],
    &["check", "--device", "gfx90a", "--json", "{}"],
    &["check", "--device", "sm_90", "{}"],
    &["du", "{}"],
    &["du", "--json", "{}"],
    &["du", "--keep", "gfx90a", "{}"],
    &["du", "--kernels", "{}"],
    &["du", "--html", "{}"],
    &["targets", "{}"],
    &["targets", "--json", "{}"],
    &["targets", "--format", "debian", "{}"],
    &["targets", "--format", "cmake", "{}"],
    &["targets", "--format", "torch", "{}"],
    &["strip", "--keep", "gfx90a", "--dry-run", "{}"],
    &["strip", "--keep", "gfx90a", "--in-place", "{}"],
    &["strip", "--keep", "gfx90a", "-o", "stripped", "{}"],
    &["compress", "--dry-run", "{}"],
    &["compress", "--in-place", "{}"],
    &["compress", "-o", "compressed", "{}"],
    &["decompress", "--dry-run", "{}"],
    &["decompress", "--in-place", "{}"],
    &["decompress", "-o", "decompressed", "{}"],
    &["kpack", "-o", "split", "{}"],
    &["kpack", "--merge", "-o", "merged", "{}"],
    &["bundler", "-list", "-type=o", "-input={}"],
    &[
        "bundler",
        "-unbundle",
        "-type=o",
        "-input={}",
        "-targets=hipv4-amdgcn-amd-amdhsa--gfx90a",
        "-output=unbundled",
    ],
    &["packager", "{}", "--image=arch=gfx90a"],
    &["wrapper", "--kind=hip", "-o", "reg.o", "{}"],
];

/// `form` with `input` in place of `{}`.
fn args(form: &[&str], input: &str) -> Vec<String> {
    form.iter().map(|a| a.replace("{}", input)).collect()
}

/// What is wrong with one failed run (`None`: nothing): it must fail, say why on standard
/// error, and print nothing on standard output, or under `--json` JSON that parses.
fn fault(code: i32, out: &str, err: &str, json: bool) -> Option<String> {
    if code == 0 {
        return Some("exit status 0".into());
    }
    if err.trim().is_empty() {
        return Some("no message on standard error".into());
    }
    if out.is_empty() {
        return None;
    }
    if json {
        return serde_json::from_str::<serde_json::Value>(out)
            .err()
            .map(|e| format!("standard output is not JSON ({e}): {out:?}"));
    }
    Some(format!("standard output: {out:?}"))
}

/// Runs every form on `input` in a fresh folder (made by `setup`); the faults, a line each.
/// With `all`, every form must fail; else only those that fail are looked at.
fn faults_on(input: &str, setup: impl Fn(&Path), all: bool) -> Vec<String> {
    let mut faults = Vec::new();
    for form in FORMS {
        let dir = tempfile::tempdir().unwrap();
        setup(dir.path());
        let args = args(form, input);
        let (code, out, err) = text_output(offload().current_dir(dir.path()).args(&args));
        let json = form.contains(&"--json");
        if code == 0 && !all {
            continue;
        }
        if let Some(fault) = fault(code, &out, &err, json) {
            faults.push(format!("offload {}: {fault}", args.join(" ")));
        }
    }
    faults
}

#[test]
fn a_missing_input_prints_nothing_on_standard_output() {
    let faults = faults_on("MISSING", |_| {}, true);
    assert!(faults.is_empty(), "{}", faults.join("\n"));
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = text_output(offload_extract().current_dir(dir.path()).arg("MISSING"));
    let fault = fault(code, &out, &err, false);
    assert!(fault.is_none(), "offload-extract MISSING: {fault:?}");
}

#[test]
fn a_damaged_input_that_fails_a_command_prints_nothing_on_standard_output() {
    // A compressed bundle whose hash is wrong, one cut short, and bitcode cut in its payload.
    for damaged in [
        "ccob-bad-hash.bin",
        "ccob-cut-payload.bin",
        "cut-in-payload.bc",
    ] {
        let sample = samples_dir().join("damaged").join(damaged);
        let faults: Vec<String> = faults_on(
            "input",
            |dir| {
                std::fs::copy(&sample, dir.join("input")).unwrap();
            },
            false,
        )
        .into_iter()
        // verify's verdict ("0 compressed bundles sound, 1 damaged") is its result.
        .filter(|f| !f.starts_with("offload verify "))
        .collect();
        assert!(faults.is_empty(), "{damaged}:\n{}", faults.join("\n"));
    }
}
