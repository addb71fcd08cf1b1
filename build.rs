//! Names the git commit the program is built from, for `offload --version`: sets
//! `OFFLOAD_GIT_COMMIT` to `git rev-parse --short HEAD` when the crate is built in a git
//! checkout, and leaves it unset otherwise (a packaged crate, or no git), without failing.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let root = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".to_string());
    // Only this crate's own checkout: a packaged crate unpacked inside some other repository
    // must not take that repository's commit.
    if !Path::new(&root).join(".git").exists() {
        return;
    }
    let Some(commit) = git(&root, &["rev-parse", "--short", "HEAD"]) else {
        return;
    };
    println!("cargo:rustc-env=OFFLOAD_GIT_COMMIT={commit}");
    // A new commit moves HEAD, or the branch HEAD names (loose or packed); in a worktree these
    // live in different folders, which `--git-path` resolves.
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(&root, &["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = git(&root, &["rev-parse", "--git-path", &name]) {
            let path = Path::new(&root).join(path);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
}

/// The first line `git ARGS` prints in `root`, when it runs and succeeds.
fn git(root: &str, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .ok()
        .filter(|out| out.status.success())?;
    let text = String::from_utf8(out.stdout).ok()?;
    let line = text.lines().next()?.trim().to_string();
    (!line.is_empty()).then_some(line)
}
