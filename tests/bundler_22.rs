//! `offload bundler` as LLVM 22's clang-offload-bundler, where it differs from LLVM 19's: the
//! compressed bundle version written, entry-ID rules and their messages, and the cases where
//! LLVM 22 is wrong (retired processors), each checked against the real tools when present.

use crate::util;
use crate::util::{offload, text_output};
use std::path::Path;
use std::process::Command;

const HOST: &str = "host-x86_64-unknown-linux-gnu";
const GFX906: &str = "hipv4-amdgcn-amd-amdhsa--gfx906";
const GFX940: &str = "hipv4-amdgcn-amd-amdhsa--gfx940";
const GFX941: &str = "hipv4-amdgcn-amd-amdhsa--gfx941:xnack+";

/// `offload bundler` standing in for LLVM `release`, run in `dir`.
fn ours(release: &str, dir: &Path) -> Command {
    let mut command = offload();
    command
        .current_dir(dir)
        .arg("bundler")
        .env("OFFLOAD_LLVM_VERSION", release)
        .env_remove("COMPRESSED_BUNDLE_FORMAT_VERSION")
        .env_remove("OFFLOAD_BUNDLER_COMPRESS");
    command
}

/// The LLVM tool `name` run in `dir`, or `None` (with a visible skip) when it is missing.
fn llvm(name: &str, dir: &Path) -> Option<Command> {
    let path = util::tool(name)?;
    let mut command = Command::new(path);
    command
        .current_dir(dir)
        .env_remove("COMPRESSED_BUNDLE_FORMAT_VERSION")
        .env_remove("OFFLOAD_BUNDLER_COMPRESS");
    Some(command)
}

fn inputs(dir: &Path) {
    std::fs::write(dir.join("h.bin"), b"host bytes").unwrap();
    std::fs::write(dir.join("d.bin"), [7u8; 300]).unwrap();
    std::fs::write(dir.join("d2.bin"), b"the other device").unwrap();
}

/// Standard error without the program name that starts each line.
fn messages(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .map(|l| l.split_once(": ").map_or(l, |(_, m)| m).to_string())
        .collect()
}

#[test]
fn compressed_bundles_are_byte_identical_to_each_release() {
    let dir = tempfile::tempdir().unwrap();
    inputs(dir.path());
    let args = [
        "-type=bc",
        "-compress",
        &format!("-targets={HOST},{GFX906}"),
        "-input=h.bin",
        "-input=d.bin",
    ];
    for (release, tool) in [
        ("19", "clang-offload-bundler-19"),
        ("22", "clang-offload-bundler-22"),
    ] {
        for env in [None, Some("2"), Some("3"), Some("9"), Some("x")] {
            let run = |command: &mut Command, out: &str| {
                if let Some(v) = env {
                    command.env("COMPRESSED_BUNDLE_FORMAT_VERSION", v);
                }
                let (code, _, err) = text_output(command.args(args).arg(format!("-output={out}")));
                (
                    code,
                    messages(&err),
                    std::fs::read(dir.path().join(out)).unwrap(),
                )
            };
            let mine = run(&mut ours(release, dir.path()), "ours.ccob");
            let version = u16::from_le_bytes([mine.2[4], mine.2[5]]);
            let expected = match (release, env) {
                ("22", Some("2")) => 2,
                ("22", _) => 3,
                _ => 2,
            };
            assert_eq!(version, expected, "{release} {env:?}");
            let Some(mut theirs) = llvm(tool, dir.path()) else {
                return;
            };
            let theirs = run(&mut theirs, "llvm.ccob");
            assert_eq!(
                mine, theirs,
                "{tool} with COMPRESSED_BUNDLE_FORMAT_VERSION={env:?}"
            );
        }
    }
}

/// Writes a bundle of gfx940 and gfx941 code as LLVM 19 does.
fn old_bundle(dir: &Path) {
    let (code, _, err) = text_output(
        ours("19", dir)
            .arg("-type=bc")
            .arg(format!("-targets={GFX940},{GFX941}"))
            .args(["-input=d.bin", "-input=d2.bin", "-output=old.bundle"]),
    );
    assert_eq!(code, 0, "{err}");
}

#[test]
fn retired_processors_are_not_taken_for_one_another() {
    let dir = tempfile::tempdir().unwrap();
    inputs(dir.path());
    old_bundle(dir.path());
    let unbundle = |command: &mut Command| {
        let (code, _, err) = text_output(command.args([
            "-unbundle",
            "-type=bc",
            &format!("-targets={GFX940}"),
            "-input=old.bundle",
            "-output=out.co",
        ]));
        assert_eq!(code, 0, "{err}");
        std::fs::read(dir.path().join("out.co")).unwrap()
    };
    let gfx940 = std::fs::read(dir.path().join("d.bin")).unwrap();
    assert_eq!(unbundle(&mut ours("22", dir.path())), gfx940);
    assert_eq!(unbundle(&mut ours("19", dir.path())), gfx940);
    if let Some(mut theirs) = llvm("clang-offload-bundler-22", dir.path()) {
        // LLVM 22 drops both processors and hands out the gfx941 code.
        assert_ne!(unbundle(&mut theirs), gfx940);
    }
}

#[test]
fn retired_processors_keep_their_ids_when_bundling() {
    let dir = tempfile::tempdir().unwrap();
    inputs(dir.path());
    let bundle = |command: &mut Command, out: &str| {
        let (code, _, err) = text_output(
            command
                .arg("-type=bc")
                .arg(format!("-targets={GFX940},{GFX941}"))
                .args(["-input=d.bin", "-input=d2.bin"])
                .arg(format!("-output={out}")),
        );
        assert_eq!(code, 0, "{err}");
        let (_, listing, _) = text_output(ours("22", dir.path()).args([
            "-list",
            "-type=bc",
            &format!("-input={out}"),
        ]));
        listing
    };
    assert_eq!(
        bundle(&mut ours("22", dir.path()), "ours.bc"),
        // -list walks LLVM's hash map, not the file.
        format!("{GFX941}\n{GFX940}\n")
    );
    if let Some(mut theirs) = llvm("clang-offload-bundler-22", dir.path()) {
        // Two entries under one ID, which readers then list once.
        let listing = bundle(&mut theirs, "llvm.bc");
        assert_eq!(listing, "hipv4-amdgcn-amd-amdhsa--\n");
        let bytes = std::fs::read(dir.path().join("llvm.bc")).unwrap();
        assert_eq!(bytes[24..32], 2u64.to_le_bytes());
    }
}

#[test]
fn entry_id_messages_are_llvm_22s() {
    let dir = tempfile::tempdir().unwrap();
    inputs(dir.path());
    // A bundle with an entry ID of one piece, as LLVM 19 would write for `-targets=...,foo`
    // (written here by our LLVM 19 personality with an ID LLVM 19 accepts as given).
    let mut bundle = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
    let ids = [GFX906.as_bytes(), b"foo"];
    let header = 32 + ids.iter().map(|i| 24 + i.len()).sum::<usize>();
    bundle.extend(2u64.to_le_bytes());
    for (i, id) in ids.iter().enumerate() {
        bundle.extend(((header + i * 4) as u64).to_le_bytes());
        bundle.extend(4u64.to_le_bytes());
        bundle.extend((id.len() as u64).to_le_bytes());
        bundle.extend(*id);
    }
    bundle.extend(b"aaaabbbb");
    std::fs::write(dir.path().join("odd.bundle"), &bundle).unwrap();
    let runs: [&[&str]; 3] = [
        &[
            "-type=bc",
            "-targets=host-x86_64-unknown-linux",
            "-input=h.bin",
            "-output=x",
        ],
        &[
            "-unbundle",
            "-type=bc",
            "-targets=hipv4-amdgcn-amd-amdhsa--gfx908",
            "-input=odd.bundle",
            "-output=x",
        ],
        &["-list", "-type=bc", "-input=odd.bundle"],
    ];
    let expected = [
        (1, "error: Targets need to follow the format '<offload kind>-<target triple>', where '<target triple>' follows the format '<kind>-<arch>-<vendor>-<os>-<env>[-<target id>[:target features]]'."),
        (1, "error: invalid bundle id read from the bundle"),
        (0, ""),
    ];
    for (args, (code, message)) in runs.iter().zip(expected) {
        let (our_code, our_out, our_err) = text_output(ours("22", dir.path()).args(*args));
        assert_eq!(
            (our_code, messages(&our_err).join("\n").as_str()),
            (code, message),
            "{args:?}"
        );
        if let Some(mut theirs) = llvm("clang-offload-bundler-22", dir.path()) {
            let (c, out, err) = text_output(theirs.args(*args));
            assert_eq!(
                (our_code, our_out, messages(&our_err)),
                (c, out, messages(&err)),
                "{args:?}"
            );
        }
    }
}
