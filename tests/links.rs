//! `offload links`: the links it makes under the LLVM tools' names, each running its
//! personality, and the files it refuses to replace.

use std::fs;
use std::path::Path;

use crate::util::{offload, text_output, OFFLOAD};

const NAMES: [&str; 5] = [
    "clang-offload-bundler",
    "clang-offload-packager",
    "llvm-offload-binary",
    "clang-offload-wrapper",
    "llvm-offload-wrapper",
];

/// The start of what each name prints for `-help` (LLVM's `cl` options) or `--help`.
fn help_start(name: &str) -> (&'static str, &'static str) {
    match name {
        "clang-offload-bundler" => ("-help", "OVERVIEW: A tool to bundle several input files"),
        "clang-offload-packager" | "llvm-offload-binary" => (
            "--help",
            "OVERVIEW: A utility for bundling several object files into a single binary.",
        ),
        _ => ("--help", "OVERVIEW: "),
    }
}

fn links(args: &[&str], dir: &Path) -> (i32, String, String) {
    text_output(offload().arg("links").args(args).arg(dir))
}

/// Whether `link` is a symbolic link to the `offload` the tests run.
fn links_to_offload(link: &Path) -> bool {
    fs::symlink_metadata(link).is_ok_and(|m| m.file_type().is_symlink())
        && fs::canonicalize(link).unwrap() == fs::canonicalize(OFFLOAD).unwrap()
}

#[test]
fn links_are_made_in_a_new_folder_and_each_runs_its_personality() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("tool/chain/bin");
    let (code, out, err) = links(&[], &bin);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), NAMES.len(), "{out}");
    for name in NAMES {
        let link = bin.join(name);
        assert!(links_to_offload(&link), "{name}");
        assert!(out.contains(&format!("{} -> ", link.display())), "{out}");
        let (flag, start) = help_start(name);
        let (code, help, err) = text_output(std::process::Command::new(&link).arg(flag));
        assert_eq!(code, 0, "{name} {flag}: {err}");
        assert!(help.starts_with(start), "{name} {flag}: {help}");
    }
    let (code, version, _) =
        text_output(std::process::Command::new(bin.join(NAMES[0])).arg("--version"));
    assert_eq!(code, 0);
    assert!(version.contains("clang-offload-bundler"), "{version}");
}

#[test]
fn a_release_ends_every_name_and_chooses_the_release() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = links(&["--release", "19"], dir.path());
    assert_eq!(code, 0, "{err}");
    let mut made: Vec<String> = crate::util::file_names(dir.path());
    made.sort();
    let mut expected: Vec<String> = NAMES.iter().map(|n| format!("{n}-19")).collect();
    expected.sort();
    assert_eq!(made, expected);
    let bundler = dir.path().join("clang-offload-bundler-19");
    let (code, version, _) = text_output(
        std::process::Command::new(&bundler)
            .arg("--version")
            .env_remove("OFFLOAD_LLVM_VERSION"),
    );
    assert_eq!(code, 0);
    assert!(version.contains("LLVM 19."), "{version}");
    let (code, _, err) = links(&["--release", "20"], dir.path());
    assert_eq!(code, 2, "{err}");
}

#[test]
fn links_of_ours_are_replaced_and_other_files_refused() {
    let dir = tempfile::tempdir().unwrap();
    // An earlier link of ours, to a program named offload elsewhere, is replaced.
    std::os::unix::fs::symlink("/nowhere/offload", dir.path().join(NAMES[0])).unwrap();
    let (code, _, err) = links(&[], dir.path());
    assert_eq!(code, 0, "{err}");
    assert!(links_to_offload(&dir.path().join(NAMES[0])));
    // A regular file, or a link to another program, is left as it is, and no link is made.
    let other = tempfile::tempdir().unwrap();
    let file = other.path().join("llvm-offload-wrapper");
    fs::write(&file, b"#!/bin/sh\n").unwrap();
    let foreign = other.path().join("clang-offload-packager");
    std::os::unix::fs::symlink("/usr/bin/clang-offload-packager-19", &foreign).unwrap();
    let (code, out, err) = links(&[], other.path());
    assert_eq!(code, 1, "{out}");
    assert!(
        err.contains(&format!(
            "{} exists and is not a symbolic link",
            file.display()
        )),
        "{err}"
    );
    assert!(err.contains(&foreign.display().to_string()), "{err}");
    assert_eq!(fs::read(&file).unwrap(), b"#!/bin/sh\n");
    assert_eq!(
        fs::read_link(&foreign).unwrap(),
        Path::new("/usr/bin/clang-offload-packager-19")
    );
    assert_eq!(crate::util::file_names(other.path()).len(), 2, "links made");
}

/// clang `args` compiling the committed kernel for gfx950 and gfx11-generic into `out`, in the
/// folder `dir`, with a fixed compilation unit ID (clang otherwise draws one at random, and the
/// objects of two runs differ).
fn clang_hip(clang: &Path, dir: &Path, extra: &[&str], out: &str) -> std::process::Command {
    let mut command = std::process::Command::new(clang);
    command
        .current_dir(dir)
        .args(extra)
        .args(["-cuid=links", "-x", "hip", "-nogpulib", "-nogpuinc"])
        .args([
            "--offload-arch=gfx950",
            "--offload-arch=gfx11-generic",
            "-c",
        ])
        .arg(crate::util::root().join("samples/src/kernel.hip"))
        .args(["-o", out]);
    command
}

#[test]
fn clang_given_the_links_folder_with_b_runs_our_bundler_and_gets_the_same_object() {
    let Some(clang) = crate::util::tool("clang-22") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    assert_eq!(links(&[], &bin).0, 0);
    let b = bin.to_str().unwrap();
    for (extra, name) in [
        (&[][..], "plain"),
        (&["--offload-compress"][..], "compressed"),
    ] {
        let alone = format!("{name}-clang.o");
        let (code, _, err) = text_output(&mut clang_hip(&clang, dir.path(), extra, &alone));
        assert_eq!(code, 0, "{err}");
        assert!(!err.contains("bundle{"), "{err}");
        // Our bundler says what it bundles when OFFLOAD_LOG asks: the mark that it ran.
        let ours = format!("{name}-ours.o");
        let mut command = clang_hip(&clang, dir.path(), &[&["-B", b], extra].concat(), &ours);
        let (code, _, err) = text_output(command.env("OFFLOAD_LOG", "offload=info"));
        assert_eq!(code, 0, "{err}");
        assert!(
            err.contains("bundle{") && err.contains("hipv4-amdgcn-amd-amdhsa--gfx950"),
            "clang -B did not run our bundler: {err}"
        );
        let (alone, ours) = (dir.path().join(alone), dir.path().join(ours));
        if name == "compressed" {
            // The zstd frames come from different zstd releases (docs/llvm-compat.md): compare
            // what they inflate to.
            for object in [&alone, &ours] {
                let (code, _, err) =
                    text_output(offload().args(["decompress", "--in-place"]).arg(object));
                assert_eq!(code, 0, "{err}");
            }
        }
        let (alone, ours) = (fs::read(alone).unwrap(), fs::read(ours).unwrap());
        assert!(
            alone == ours,
            "{name}: {}",
            crate::util::first_difference(&alone, &ours)
        );
    }
}
