//! Differential tests: every case of tests/cases/bundler.txt is run with both `offload
//! bundler` and clang-offload-bundler-19 (skipped, with a `SKIP:` line, when that is not on
//! PATH, unless OFFLOAD_REQUIRE_REFERENCE=1), and the results are compared as in
//! tests/golden.rs. For `[compressed]` cases our output must also unbundle, with
//! clang-offload-bundler-19, to the case's input files and to the same files as LLVM's own
//! output does.
//! `[llvm-crashes]` cases are not run with LLVM.

use crate::util;
use crate::util::cases::{
    self, check_all, compare, load_cases, option_values, report, run_case, run_tool, substitute,
    Case, Expected, Outcome, Status, Tool, LLVM_BUNDLER,
};
use crate::util::first_difference;

const CCOB_MAGIC: &[u8] = b"CCOB";

#[test]
fn differential() {
    differential_against(LLVM_BUNDLER, "19", &[]);
}

/// The cases where LLVM 22 is wrong and we do the right thing instead (see
/// docs/llvm-compat.md), or where LLVM 22 reads a bundle as LLVM 19 wrote it differently
/// from how 19 reads it: not compared with clang-offload-bundler-22.
const DIFFERS_FROM_LLVM_22: &[&str] = &[
    // LLVM 22 drops a processor it does not know from the ID it writes; we refuse the target.
    "bundle-unknown-arch",
    "bundle-arch-twice",
    // LLVM 19 crashes here (two spellings of one ID); LLVM 22 writes `...-gfx906` as
    // `hipv4-amdgcn-amd-amdhsa--`, a different ID, and succeeds.
    "bundle-duplicate-id",
    // llvm-objcopy 22 lays out COFF objects unlike llvm-objcopy 19, whose layout we write.
    "bundle-o-coff-host",
    "bundle-o-coff-aarch64-host",
    "unbundle-coff-rdc",
];

#[test]
fn differential_22() {
    differential_against("clang-offload-bundler-22", "22", DIFFERS_FROM_LLVM_22);
}

/// Runs every case with `offload bundler` as LLVM `release` and with the LLVM tool `name`,
/// except the cases `skip` names, and compares the results.
fn differential_against(name: &str, release: &str, skip: &[&str]) {
    let Some(llvm) = util::tool(name) else {
        return;
    };
    // Run it by its real path: with argv[0] naming an existing file, LLVM looks for
    // llvm-objcopy beside argv[0] first, and /usr/bin/llvm-objcopy may belong to another
    // LLVM version (Debian), which lays out -type=o outputs differently.
    let llvm = Tool::new(llvm.canonicalize().unwrap_or(llvm), &[]);
    let ours = Tool::ours_as(release);
    let cases: Vec<Case> = load_cases()
        .into_iter()
        .filter(|c| !skip.contains(&c.name.as_str()))
        .collect();
    assert!(!cases.is_empty(), "no cases selected");
    let results = check_all(&cases, |case| {
        let our_run = run_case(&ours, case);
        if cases::checked_on_its_own(case) {
            return cases::check_own(case, &our_run);
        }
        let llvm_run = run_case(&llvm, case);
        let expected = match Expected::from_llvm(&llvm_run) {
            Ok(expected) => expected,
            Err(problem) => return vec![problem],
        };
        let mut problems = compare(case, &expected, &our_run);
        if case.compressed && expected.exit == 0 && our_run.status == Status::Exited(0) {
            problems.extend(check_compressed(case, &llvm, &llvm_run, &our_run));
        }
        problems
    });
    report(&format!("differential against {name}"), &results);
}

/// Unbundles each output of a `[compressed]` case, ours and LLVM's, with LLVM, and compares
/// the results.
fn check_compressed(case: &Case, llvm: &Tool, theirs: &Outcome, ours: &Outcome) -> Vec<String> {
    let mut problems = Vec::new();
    let file_type = option_values(&case.args, "type").pop();
    let targets: Vec<String> = option_values(&case.args, "targets")
        .iter()
        .flat_map(|t| t.split(',').map(str::to_string).collect::<Vec<_>>())
        .collect();
    let Some(file_type) = file_type else {
        return vec!["[compressed] case without -type".into()];
    };
    if targets.is_empty() {
        return vec!["[compressed] case without -targets".into()];
    }
    let our_names: Vec<&String> = ours.outputs.keys().collect();
    let their_names: Vec<&String> = theirs.outputs.keys().collect();
    if our_names != their_names {
        problems.push(format!(
            "output files differ: LLVM wrote {their_names:?}, we wrote {our_names:?}"
        ));
    }
    for (name, their_bytes) in &theirs.outputs {
        let Some(our_bytes) = ours.outputs.get(name) else {
            continue;
        };
        if their_bytes.starts_with(CCOB_MAGIC) && !our_bytes.starts_with(CCOB_MAGIC) {
            problems.push(format!(
                "output {name}: LLVM's is compressed (CCOB), ours is not"
            ));
        }
        let their_parts = unbundle_with_llvm(llvm, &file_type, &targets, their_bytes);
        let our_parts = unbundle_with_llvm(llvm, &file_type, &targets, our_bytes);
        match (their_parts, our_parts) {
            (Err(e), _) => problems.push(format!(
                "output {name}: LLVM cannot unbundle its own output: {e}"
            )),
            (Ok(_), Err(e)) => {
                problems.push(format!("output {name}: LLVM cannot unbundle ours: {e}"))
            }
            (Ok(want), Ok(got)) => {
                problems.extend(compare_with_inputs(case, &file_type, &targets, name, &got));
                for (i, target) in targets.iter().enumerate() {
                    let key = format!("entry-{i}");
                    let (w, g) = (want.get(&key), got.get(&key));
                    if w != g {
                        let detail = match (w, g) {
                            (Some(w), Some(g)) => first_difference(w, g),
                            _ => "one side is missing".into(),
                        };
                        problems.push(format!(
                            "output {name}: entry {target} unbundles differently: {detail}"
                        ));
                    }
                }
            }
        }
    }
    problems
}

/// Compares the entries unbundled from our output `name` with the case's input files. Host
/// entries of `-type=o` and `-type=a` are skipped: LLVM extracts those through llvm-objcopy.
fn compare_with_inputs(
    case: &Case,
    file_type: &str,
    targets: &[String],
    name: &str,
    got: &std::collections::BTreeMap<String, Vec<u8>>,
) -> Vec<String> {
    let mut inputs = option_values(&case.args, "input");
    for list in option_values(&case.args, "inputs") {
        inputs.extend(list.split(',').map(str::to_string));
    }
    if inputs.len() != targets.len() {
        return Vec::new();
    }
    let mut problems = Vec::new();
    for (i, (target, input)) in targets.iter().zip(&inputs).enumerate() {
        if matches!(file_type, "o" | "a") && target.starts_with("host-") {
            continue;
        }
        let path = if input == "-" {
            match &case.stdin {
                Some(stdin) => substitute(stdin, None),
                None => continue,
            }
        } else {
            substitute(input, None)
        };
        let want = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) => {
                problems.push(format!("cannot read input {path}: {e}"));
                continue;
            }
        };
        match got.get(&format!("entry-{i}")) {
            Some(bytes) if *bytes == want => {}
            Some(bytes) => problems.push(format!(
                "output {name}: entry {target} does not unbundle to input {input}: {}",
                first_difference(&want, bytes)
            )),
            None => problems.push(format!("output {name}: entry {target} was not unbundled")),
        }
    }
    problems
}

/// Writes `bundle` to a temporary file and unbundles every target from it with LLVM; returns
/// the outputs `entry-<i>` by target index.
fn unbundle_with_llvm(
    llvm: &Tool,
    file_type: &str,
    targets: &[String],
    bundle: &[u8],
) -> Result<std::collections::BTreeMap<String, Vec<u8>>, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let input = dir.path().join("bundle");
    std::fs::write(&input, bundle).map_err(|e| e.to_string())?;
    let mut args = vec![
        "-unbundle".to_string(),
        format!("-type={file_type}"),
        format!("-targets={}", targets.join(",")),
        format!("-input={}", input.display()),
    ];
    for i in 0..targets.len() {
        args.push(format!("-output={{O}}/entry-{i}"));
    }
    let outcome = run_tool(llvm, &args, &[], None);
    if outcome.status != Status::Exited(0) {
        return Err(format!("{}: {}", outcome.status, outcome.stderr.trim()));
    }
    Ok(outcome.outputs)
}

/// `--help` started through a link with LLVM's versioned name prints LLVM's text line for
/// line (our own options follow it), for the bundler and the packager.
#[test]
fn help_is_llvm_19s_through_a_versioned_name() {
    for tool in ["clang-offload-bundler-19", "clang-offload-packager-19"] {
        let Some(llvm) = util::tool(tool) else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join(tool);
        std::os::unix::fs::symlink(crate::util::OFFLOAD, &link).unwrap();
        let ours = std::process::Command::new(&link)
            .arg("--help")
            .output()
            .unwrap();
        let theirs = std::process::Command::new(llvm)
            .arg("--help")
            .output()
            .unwrap();
        assert!(ours.status.success() && theirs.status.success());
        assert!(
            ours.stdout.starts_with(&theirs.stdout),
            "{tool} --help: {}",
            first_difference(&theirs.stdout, &ours.stdout)
        );
        let extra = &ours.stdout[theirs.stdout.len()..];
        assert!(
            extra.is_empty() || extra.starts_with(b"\nExtensions (not in LLVM 19):"),
            "{tool} --help ends with {:?}",
            String::from_utf8_lossy(extra)
        );
    }
}
