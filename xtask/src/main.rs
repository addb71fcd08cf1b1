//! Maintenance tasks: `cargo xtask docs` writes the manual pages (`docs/man/*.1`) and the
//! shell completion scripts (`docs/completions/`) from the command lines `offload` parses.
//! Its tests fail when the committed files are not what the program makes today.

use std::fs;
use std::path::{Path, PathBuf};

use clap_complete::Shell;

/// The completion scripts the packages install: each shell with its file name under
/// `docs/completions/`.
const SCRIPTS: [(Shell, &str); 3] = [
    (Shell::Bash, "offload.bash"),
    (Shell::Zsh, "_offload"),
    (Shell::Fish, "offload.fish"),
];

fn main() {
    let task = std::env::args().nth(1);
    match task.as_deref() {
        Some("docs") => {
            let root = repository();
            for (path, bytes) in files() {
                let path = root.join(path);
                if let Some(folder) = path.parent() {
                    fs::create_dir_all(folder).unwrap_or_else(|e| fail(folder, &e));
                }
                fs::write(&path, bytes).unwrap_or_else(|e| fail(&path, &e));
            }
            remove_stale(&root);
        }
        _ => {
            eprintln!("usage: cargo xtask docs   (writes docs/man/ and docs/completions/)");
            std::process::exit(2);
        }
    }
}

/// Stops with a message naming `path`.
fn fail(path: &Path, e: &std::io::Error) -> ! {
    eprintln!("xtask: {}: {e}", path.display());
    std::process::exit(1);
}

/// The repository's root folder.
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from(".."), Path::to_path_buf)
}

/// Every generated file, by its path in the repository, with its contents.
fn files() -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    for (name, command) in offload::cli::manual::pages() {
        let mut page = Vec::new();
        let version = command.get_version().unwrap_or_default().to_string();
        clap_mangen::Man::new(command)
            .title(name.to_uppercase())
            .source(format!("offload-tools {}", version))
            .manual("offload-tools manual")
            .render(&mut page)
            .expect("rendering into memory does not fail");
        files.push((Path::new("docs/man").join(format!("{name}.1")), page));
    }
    for (shell, file) in SCRIPTS {
        let script = offload::cli::registry::Commands::standard().completion_script(shell);
        files.push((Path::new("docs/completions").join(file), script));
    }
    files
}

/// Removes manual pages of commands that no longer exist.
fn remove_stale(root: &Path) {
    let made: Vec<PathBuf> = files()
        .into_iter()
        .map(|(path, _)| root.join(path))
        .collect();
    let Ok(entries) = fs::read_dir(root.join("docs/man")) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if !made.contains(&path) {
            fs::remove_file(&path).unwrap_or_else(|e| fail(&path, &e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committed_manual_pages_and_completions_are_current() {
        let root = repository();
        let mut stale = Vec::new();
        let made = files();
        for (path, bytes) in &made {
            if fs::read(root.join(path)).ok().as_ref() != Some(bytes) {
                stale.push(path.display().to_string());
            }
        }
        let committed = fs::read_dir(root.join("docs/man")).map_or(0, Iterator::count);
        let pages = made
            .iter()
            .filter(|(p, _)| p.starts_with("docs/man"))
            .count();
        assert!(
            stale.is_empty() && committed == pages,
            "out of date (run `cargo xtask docs`): {stale:?}; {committed} pages committed, {pages} made"
        );
    }

    #[test]
    fn every_subcommand_and_llvm_name_has_a_page() {
        let names: Vec<String> = offload::cli::manual::pages()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        for name in [
            "offload",
            "offload-ls",
            "offload-extract",
            "offload-strip",
            "offload-kpack",
            "offload-completions",
            "offload-bundler",
            "clang-offload-bundler",
            "clang-offload-packager",
            "llvm-offload-binary",
            "clang-offload-wrapper",
            "llvm-offload-wrapper",
        ] {
            assert!(names.iter().any(|n| n == name), "no page {name}: {names:?}");
        }
    }
}
