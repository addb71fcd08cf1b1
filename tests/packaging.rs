//! What installing needs: no file name `cargo package` refuses, golden output files whose
//! escaped names map back to the names the tools write, a changelog and licences that go with
//! the version, and `offload --version` naming what was built.

use std::path::Path;
use std::process::Command;

use crate::util::cases::{cargo_refuses, golden_file_name, golden_logical_name};
use crate::util::{offload, root, text_output};

/// The files of the repository by relative path: `git ls-files`, or, outside a git checkout
/// (a packaged crate), every file under the root but `target/` and `.git/`.
fn repository_files() -> Vec<String> {
    let listed = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output()
        .ok()
        .filter(|out| out.status.success());
    if let Some(out) = listed {
        return out
            .stdout
            .split(|&b| b == 0)
            .filter(|name| !name.is_empty())
            .map(|name| String::from_utf8_lossy(name).into_owned())
            .collect();
    }
    let mut files = Vec::new();
    walk(&root(), "", &mut files);
    files
}

fn walk(dir: &Path, prefix: &str, into: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = format!("{prefix}{name}");
        if entry.file_type().unwrap().is_dir() {
            if prefix.is_empty() && (name == "target" || name == ".git") {
                continue;
            }
            walk(&entry.path(), &format!("{path}/"), into);
        } else {
            into.push(path);
        }
    }
}

#[test]
fn no_file_name_holds_a_character_cargo_refuses() {
    let files = repository_files();
    assert!(files.iter().any(|f| f == "Cargo.toml"), "no files listed");
    let refused: Vec<&String> = files
        .iter()
        .filter(|f| f.chars().any(cargo_refuses))
        .collect();
    assert!(
        refused.is_empty(),
        "cargo cannot package these names (store golden outputs by golden_file_name): {refused:?}"
    );
}

#[test]
fn golden_names_map_back_to_the_names_written() {
    for logical in [
        "hip-rdc-amdgcn-amd-amdhsa-gfx90a:xnack+.1.bc",
        "a%3A:b",
        "sub/x?y*<z>\"|\\\u{1}.o",
        "plain.bc",
        "ü:é",
    ] {
        let stored = golden_file_name(logical);
        assert!(!stored.chars().any(cargo_refuses), "{stored}");
        assert_eq!(golden_logical_name(&stored), logical);
    }
    assert_eq!(
        golden_file_name("gfx90a:xnack+.1.bc"),
        "gfx90a%3Axnack+.1.bc"
    );
}

#[test]
fn the_escaped_golden_output_is_read_under_its_logical_name() {
    let out = root().join("tests/golden-packager/unpack-hip-kind/out");
    let names = crate::util::file_names(&out);
    assert!(
        names.contains(&"hip-rdc-amdgcn-amd-amdhsa-gfx90a%3Axnack+.1.bc".to_string()),
        "{names:?}"
    );
    let tree = crate::util::cases::read_tree(&out);
    let logical: Vec<String> = tree.keys().map(|n| golden_logical_name(n)).collect();
    assert!(logical.contains(&"hip-rdc-amdgcn-amd-amdhsa-gfx90a:xnack+.1.bc".to_string()));
}

#[test]
fn the_changelog_and_the_licences_go_with_the_version() {
    let version = env!("CARGO_PKG_VERSION");
    let changelog = std::fs::read_to_string(root().join("CHANGELOG.md")).unwrap();
    assert!(
        changelog.contains(&format!("\n## [{version}]")),
        "CHANGELOG.md has no section for {version}"
    );
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    for file in ["LICENSE-APACHE", "LICENSE-MIT", "CHANGELOG.md", "README.md"] {
        assert!(root().join(file).is_file(), "{file} is missing");
        assert!(
            manifest.contains(&format!("\"/{file}\"")),
            "Cargo.toml's include lacks {file}"
        );
    }
}

#[test]
fn the_version_names_the_release_the_commit_and_the_llvm_releases() {
    let version = env!("CARGO_PKG_VERSION");
    // Built in a git checkout, the program names its commit; built from a package, it does not.
    let commit = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(root())
        .output()
        .ok()
        .filter(|out| out.status.success() && root().join(".git").exists())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string());
    let first = match &commit {
        Some(commit) => format!("offload {version} ({commit})"),
        None => format!("offload {version}"),
    };
    for flag in ["--version", "-V"] {
        let (code, out, err) = text_output(offload().arg(flag));
        assert_eq!(code, 0, "{err}");
        assert_eq!(out, format!("{first}\nstands in for LLVM 19, 22 and 23\n"));
    }
}

/// Each shell's completion script as committed (what the packages install) and the file name.
const COMPLETIONS: [(&str, &str); 3] = [
    ("bash", "offload.bash"),
    ("zsh", "_offload"),
    ("fish", "offload.fish"),
];

#[test]
fn the_committed_completions_are_what_the_program_prints() {
    for (shell, file) in COMPLETIONS {
        let out = crate::util::succeed(offload().args(["completions", shell]));
        let committed = std::fs::read(root().join("docs/completions").join(file)).unwrap();
        assert!(
            out.stdout == committed,
            "docs/completions/{file} is out of date: run `cargo xtask docs`"
        );
    }
    let (code, _, err) = text_output(offload().args(["completions", "tcsh"]));
    assert_eq!(code, 2);
    assert!(err.contains("invalid value 'tcsh'"), "{err}");
}

#[test]
fn bash_completes_subcommands_and_options_from_the_script() {
    let script = root().join("docs/completions/offload.bash");
    // What bash would offer after `offload l` and after `offload strip --ke`.
    let complete = |words: &str, current: usize| {
        let program = format!(
            "source '{}'; COMP_WORDS=({words}); COMP_CWORD={current}; \
             _offload offload \"${{COMP_WORDS[$COMP_CWORD]}}\" \"${{COMP_WORDS[$COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display()
        );
        text_output(Command::new("bash").args(["--norc", "-c", &program]))
    };
    let (code, out, err) = complete("offload l", 1);
    assert_eq!(code, 0, "{err}");
    let offered: Vec<&str> = out.lines().collect();
    assert_eq!(offered, ["ls", "links"], "{out}");
    let (code, out, err) = complete("offload strip --ke", 2);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().collect::<Vec<_>>(), ["--keep"], "{out}");
}

#[test]
fn zsh_and_fish_load_their_scripts() {
    if let Some(zsh) = crate::util::tool("zsh") {
        let program = format!(
            "autoload -Uz compinit && compinit -u -D && source '{}' && print -r -- $_comps[offload]",
            root().join("docs/completions/_offload").display()
        );
        let (code, out, err) = text_output(Command::new(zsh).args(["-f", "-c", &program]));
        assert_eq!((code, out.trim()), (0, "_offload"), "{err}");
    }
    if let Some(fish) = crate::util::tool("fish") {
        let program = format!(
            "source '{}'; complete -C'offload strip --ke'",
            root().join("docs/completions/offload.fish").display()
        );
        let (code, out, err) =
            text_output(Command::new(fish).args(["--no-config", "-c", &program]));
        assert_eq!(code, 0, "{err}");
        assert!(out.starts_with("--keep"), "{out}");
    }
}

#[test]
fn the_manual_pages_render_with_each_command_s_options() {
    let Some(man) = crate::util::tool("man") else {
        return;
    };
    for (page, option) in [
        ("offload", "offload-strip(1)"),
        ("offload-strip", "--keep"),
        ("offload-extract", "--arch"),
        ("clang-offload-bundler", "--targets"),
        ("llvm-offload-wrapper", "--kind"),
    ] {
        let path = root().join("docs/man").join(format!("{page}.1"));
        let (code, out, err) = text_output(
            Command::new(&man)
                .arg("-l")
                .arg(&path)
                .env("MANWIDTH", "200")
                .env("MANPAGER", "cat"),
        );
        assert_eq!(code, 0, "{page}: {err}");
        assert!(out.contains(option), "{page} lacks {option}: {out}");
    }
}

#[test]
fn every_file_the_debian_package_takes_is_in_the_repository() {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let deb = manifest
        .split("[package.metadata.deb]")
        .nth(1)
        .expect("Cargo.toml has no [package.metadata.deb]");
    let assets = deb
        .split("assets = [")
        .nth(1)
        .unwrap()
        .split("\n]")
        .next()
        .unwrap();
    let mut sources = 0;
    for line in assets
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("[\""))
    {
        let source = line.trim_start_matches("[\"").split('"').next().unwrap();
        if source.starts_with("target/release/") {
            continue;
        }
        sources += 1;
        let (folder, pattern) = source.rsplit_once('/').unwrap_or(("", source));
        let found = match pattern.split_once('*') {
            Some((start, end)) => std::fs::read_dir(root().join(folder))
                .unwrap()
                .flatten()
                .any(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.starts_with(start) && name.ends_with(end)
                }),
            None => root().join(source).is_file(),
        };
        assert!(
            found,
            "the Debian package takes {source}, which is not there"
        );
    }
    assert!(sources >= 10, "{assets}");
    for name in offload::cli::links::NAMES {
        assert!(
            deb.contains(&format!("usr/lib/offload-tools/bin/{name}\"")),
            "no link {name} in the Debian package"
        );
    }
}

#[test]
fn the_wheel_and_the_plugin_go_with_the_crate_s_version() {
    let pyproject = std::fs::read_to_string(root().join("pyproject.toml")).unwrap();
    assert!(pyproject.contains("dynamic = [\"version\"]"), "{pyproject}");
    assert!(pyproject.contains("bindings = \"bin\""), "{pyproject}");
    let plugin = std::fs::read_to_string(root().join("linker-plugin/Cargo.toml")).unwrap();
    let version = env!("CARGO_PKG_VERSION");
    assert!(
        plugin.contains(&format!("\nversion = \"{version}\"")),
        "linker-plugin/Cargo.toml is not at {version}"
    );
}
