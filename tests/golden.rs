//! Golden tests: every case of tests/cases/bundler.txt, run with `offload bundler`, must give
//! what clang-offload-bundler-19 gave when tests/golden/make.sh stored it in
//! tests/golden/<NAME>/: the same exit status, stdout and output files, and a stderr holding
//! LLVM's error and warning texts. `[llvm-crashes]` cases must fail cleanly (exit 1, the
//! case's `# expect:` texts on stderr, no output files). `[compressed]` cases compare exit
//! status and stdout here; their outputs are checked in tests/differential.rs.

use crate::util::cases::{
    self, check_all, compare, load_cases, load_golden, report, run_case, Tool,
};
use std::collections::BTreeSet;

#[test]
fn golden() {
    let cases = load_cases();
    assert!(!cases.is_empty(), "no cases selected");
    let ours = Tool::ours();
    let results = check_all(&cases, |case| {
        let outcome = run_case(&ours, case);
        if cases::checked_on_its_own(case) {
            return cases::check_own(case, &outcome);
        }
        match load_golden(case) {
            Ok(expected) => compare(case, &expected, &outcome),
            Err(problem) => vec![problem],
        }
    });

    report("golden", &results);
}

#[test]
fn every_golden_folder_has_a_case() {
    let text = std::fs::read_to_string(cases::cases_file()).expect("cannot read the case file");
    let cases = cases::parse_cases(&text).unwrap_or_else(|e| panic!("{e}"));
    let names: BTreeSet<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    let stale: Vec<String> = std::fs::read_dir(cases::golden_dir())
        .expect("cannot read tests/golden")
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !names.contains(n.as_str()))
        .collect();
    assert!(
        stale.is_empty(),
        "golden folders without a case: {stale:?}; run tests/golden/make.sh"
    );
    // A case checked against another case's golden folder has none of its own.
    let missing: Vec<&str> = cases
        .iter()
        .filter(|c| c.ours_as.is_none())
        .map(|c| c.name.as_str())
        .filter(|n| !cases::golden_dir().join(n).is_dir())
        .collect();
    assert!(
        missing.is_empty(),
        "cases without a golden folder: {missing:?}; run tests/golden/make.sh"
    );
}
