//! The commands of README.md and docs/install.md, run as a newcomer runs them: every command of
//! every `sh` block, in order, in a fresh copy of the repository's files, with `offload` and
//! `offload-extract` the programs under test and a home folder of its own. Each must exit 0,
//! unless a comment on it says otherwise:
//!
//! - `# fails: WHY`: the command is meant to fail; it must exit non-zero.
//! - `# needs: WORD...`, then what explains them if anything: not run here, for the reasons
//!   [`NEEDS`] lists (a command that fetches
//!   from the network, changes the system or builds in release mode). Those needing only a
//!   release build run when `OFFLOAD_DOCS_RELEASE=1`, as `.ci/run` sets it for this test alone.
//!
//! A command whose program is not installed (`man`, `clang-22`) skips as the reference tests do.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{root, OFFLOAD, OFFLOAD_EXTRACT};

/// The words a `# needs:` comment may give, and what each means.
const NEEDS: &[(&str, &str)] = &[
    ("network", "fetches from the network"),
    ("root", "changes the system (apt-get, apt install)"),
    ("publication", "installs a release not published yet"),
    (
        "release",
        "builds in release mode (minutes): run with OFFLOAD_DOCS_RELEASE=1",
    ),
    (
        "suite",
        "runs the whole test suite, of which this test is a part",
    ),
    ("input", "a template for the reader's own files"),
];

/// The documents whose commands are run, from the top of the repository.
const DOCUMENTS: &[&str] = &["README.md", "docs/install.md"];

/// One command of a document: its text (continued lines joined), where it starts, and what
/// its comment says.
#[derive(Debug)]
struct Step {
    line: usize,
    text: String,
    needs: Vec<String>,
    fails: bool,
}

/// The commands of the `sh` blocks of `text`, in order.
fn steps(text: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut in_block = false;
    let mut pending: Option<(usize, String)> = None;
    for (index, line) in text.lines().enumerate() {
        let fence = line.trim_start();
        if fence.starts_with("```") {
            in_block = fence == "```sh";
            assert!(
                pending.is_none(),
                "line {}: a block ends in `\\`",
                index + 1
            );
            continue;
        }
        if !in_block {
            continue;
        }
        let (start, mut joined) = pending.take().unwrap_or((index + 1, String::new()));
        if let Some(head) = line.strip_suffix('\\') {
            joined.push_str(head);
            joined.push(' ');
            pending = Some((start, joined));
            continue;
        }
        joined.push_str(line);
        let trimmed = joined.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        steps.push(step(start, trimmed));
    }
    steps
}

/// A command and the markings of its comment.
fn step(line: usize, text: &str) -> Step {
    let comment = text.find(" # ").map_or("", |at| &text[at + 3..]);
    let needs: Vec<String> = comment
        .strip_prefix("needs:")
        .map(|words| {
            // The words, then what explains them (`# needs: input (the package's links)`).
            words
                .split_whitespace()
                .take_while(|w| w.bytes().all(|b| b.is_ascii_lowercase()))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    for word in &needs {
        assert!(
            NEEDS.iter().any(|(known, _)| known == word),
            "line {line}: `# needs: {word}` is none of {:?}",
            NEEDS.iter().map(|(w, _)| w).collect::<Vec<_>>()
        );
    }
    Step {
        line,
        text: text.to_string(),
        needs,
        fails: comment.starts_with("fails:"),
    }
}

/// Whether `step` is run here: nothing it needs is missing (with `release_too`, a release
/// build is not).
fn runs(step: &Step, release_too: bool) -> bool {
    step.needs
        .iter()
        .all(|word| release_too && word == "release")
}

/// A copy of the repository's tracked files in `dest` (as a fresh clone has them, with the
/// changes not yet committed).
fn copy_tracked(dest: &Path) {
    let listed = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output()
        .expect("git ls-files");
    assert!(listed.status.success(), "git ls-files failed");
    for name in listed.stdout.split(|b| *b == 0).filter(|n| !n.is_empty()) {
        let name = Path::new(std::str::from_utf8(name).expect("a tracked name in UTF-8"));
        let from = root().join(name);
        // A file deleted but not yet committed is not in a fresh clone either.
        let Ok(meta) = fs::symlink_metadata(&from) else {
            continue;
        };
        let to = dest.join(name);
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        if meta.file_type().is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&from).unwrap(), &to).unwrap();
        } else {
            fs::copy(&from, &to).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
        }
    }
}

/// The target folder of this run (the folder above the profile's), shared with the commands so
/// that a `cargo` command finds what this run built.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/main-HASH
    exe.ancestors().nth(3).unwrap().to_path_buf()
}

/// The program a command starts, when it is one to look for (not a shell's own word, not a
/// path, not the programs under test).
fn program(text: &str) -> Option<&str> {
    let first = text.split_whitespace().next()?;
    let builtin = ["source", ".", "cd", "eval", "export", "echo", "set"];
    let ours = ["offload", "offload-extract"];
    (!first.contains('/')
        && !first.contains('=')
        && !builtin.contains(&first)
        && !ours.contains(&first))
    .then_some(first)
}

/// Runs the commands of `document` in a fresh copy; a line for each that did not do what it
/// should.
fn run_document(document: &str, release_too: bool) -> Vec<String> {
    let text = fs::read_to_string(root().join(document)).unwrap();
    let steps = steps(&text);
    assert!(!steps.is_empty(), "{document} has no sh block");
    let copy = tempfile::tempdir().unwrap();
    copy_tracked(copy.path());
    let home = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(OFFLOAD, bin.path().join("offload")).unwrap();
    std::os::unix::fs::symlink(OFFLOAD_EXTRACT, bin.path().join("offload-extract")).unwrap();
    let mut path = OsString::from(bin.path());
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    let real_home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    let mut faults = Vec::new();
    for step in &steps {
        if !runs(step, release_too) {
            eprintln!(
                "{document}:{}: not run ({:?}): {}",
                step.line, step.needs, step.text
            );
            continue;
        }
        if let Some(name) = program(&step.text) {
            if crate::util::tool(name).is_none() {
                continue;
            }
        }
        let mut command = Command::new("bash");
        command
            .args(["-o", "pipefail", "-c", &step.text])
            .current_dir(copy.path())
            .env("PATH", &path)
            .env("HOME", home.path())
            // The toolchain and the crates already fetched are the user's, whatever HOME is;
            // what `cargo install` installs goes in the test's own home.
            .env(
                "CARGO_HOME",
                std::env::var_os("CARGO_HOME").unwrap_or_else(|| real_home.join(".cargo").into()),
            )
            .env(
                "RUSTUP_HOME",
                std::env::var_os("RUSTUP_HOME").unwrap_or_else(|| real_home.join(".rustup").into()),
            )
            .env("CARGO_INSTALL_ROOT", home.path().join(".cargo"))
            .env("CARGO_TARGET_DIR", target_dir())
            .env_remove("OFFLOAD_LOG")
            .env_remove("OFFLOAD_LLVM_VERSION");
        let out = command
            .output()
            .unwrap_or_else(|e| panic!("cannot run bash: {e}"));
        let failed = !out.status.success();
        if failed != step.fails {
            faults.push(format!(
                "{document}:{}: `{}` {} ({}): {}",
                step.line,
                step.text,
                if failed {
                    "failed"
                } else {
                    "succeeded, though marked `# fails:`"
                },
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    faults
}

#[test]
fn every_command_of_the_readme_and_the_install_page_does_what_it_says() {
    let release_too = std::env::var("OFFLOAD_DOCS_RELEASE").as_deref() == Ok("1");
    let faults: Vec<String> = DOCUMENTS
        .iter()
        .flat_map(|document| run_document(document, release_too))
        .collect();
    assert!(faults.is_empty(), "{}", faults.join("\n"));
}

#[test]
fn the_markings_are_read() {
    let steps = steps(concat!(
        "text\n```sh\n# a comment\nofload ls x   # fails: a typo\n",
        "cargo a \\\n  b   # needs: network release\n```\n```text\nnot run\n```\n"
    ));
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert!(steps[0].fails && steps[0].needs.is_empty());
    assert_eq!(steps[1].line, 5);
    assert_eq!(steps[1].needs, ["network", "release"]);
    assert!(steps[1].text.starts_with("cargo a    b"));
    assert!(!runs(&steps[1], true));
    assert!(runs(
        &step(1, "cargo run --release -- ls x  # needs: release"),
        true
    ));
    assert!(!runs(
        &step(1, "cargo run --release -- ls x  # needs: release"),
        false
    ));
}
