//! The bundler on damaged input and in the places where it goes beyond LLVM 19: a clear error
//! naming the file and offset, exit status 1, no panic, no output left behind.

use offload::format::{bundle, ccob};
use std::fs;
use std::path::Path;

use crate::util::{bundler, offload, OFFLOAD};

const HOST: &str = "host-x86_64-unknown-linux-gnu";
const GFX906: &str = "hipv4-amdgcn-amd-amdhsa--gfx906";
const GFX90A: &str = "hipv4-amdgcn-amd-amdhsa--gfx90a";

fn sample_bundle() -> Vec<u8> {
    bundle::to_vec(
        &[
            ("host-x86_64-unknown-linux-gnu-", b"host code".as_slice()),
            (GFX906, &[0x11; 300]),
            (GFX90A, &[0x22; 500]),
        ],
        16,
    )
}

/// Runs an unbundle of `data` and returns (exit code, stderr, files left in the folder).
fn unbundle(dir: &Path, name: &str, data: &[u8], targets: &[&str]) -> (i32, String, Vec<String>) {
    let input = dir.join(name);
    fs::write(&input, data).unwrap();
    let mut cmd = bundler();
    cmd.current_dir(dir)
        .arg("-unbundle")
        .arg("-type=bc")
        .arg(format!("-targets={}", targets.join(",")))
        .arg(format!("-input={name}"));
    for (i, _) in targets.iter().enumerate() {
        cmd.arg(format!("-output=out{i}"));
    }
    let out = cmd.output().unwrap();
    let mut left: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != name)
        .collect();
    left.sort();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        left,
    )
}

#[test]
fn an_entry_past_the_end_names_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = sample_bundle();
    data.truncate(data.len() - 10);
    let (code, err, left) = unbundle(dir.path(), "cut.bundle", &data, &[GFX906, GFX90A]);
    assert_eq!(code, 1);
    assert!(err.contains("error: 'cut.bundle': offset 0x"), "{err}");
    assert!(err.contains("past the end of the data"), "{err}");
    assert!(left.is_empty(), "outputs left behind: {left:?}");
}

#[test]
fn every_truncation_of_the_header_is_a_clean_error() {
    let dir = tempfile::tempdir().unwrap();
    let data = sample_bundle();
    let header_end = bundle::Bundle::parse(&data).unwrap().unwrap().header_size() as usize;
    for cut in (24..header_end).step_by(7) {
        let (code, err, left) = unbundle(dir.path(), "cut.bundle", &data[..cut], &[GFX906]);
        assert_eq!(code, 1, "cut at {cut}: {err}");
        assert!(
            err.contains("'cut.bundle': offset 0x"),
            "cut at {cut}: {err}"
        );
        assert!(left.is_empty());
    }
}

#[test]
fn a_huge_entry_count_is_refused_without_allocating() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = sample_bundle();
    data[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
    let (code, err, _) = unbundle(dir.path(), "count.bundle", &data, &[GFX906]);
    assert_eq!(code, 1);
    assert!(
        err.contains(
            "'count.bundle': offset 0x18: bundle header declares 18446744073709551615 entries"
        ),
        "{err}"
    );
}

#[test]
fn missing_targets_leave_no_partial_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err, left) = unbundle(
        dir.path(),
        "ok.bundle",
        &sample_bundle(),
        &[GFX906, "hipv4-amdgcn-amd-amdhsa--gfx1030"],
    );
    assert_eq!(code, 1);
    assert!(
        err.ends_with("error: Can't find bundles for hipv4-amdgcn-amd-amdhsa--gfx1030\n"),
        "{err}"
    );
    assert!(
        left.is_empty(),
        "LLVM leaves out0 here; we leave nothing: {left:?}"
    );
}

#[test]
fn zero_alignment_is_an_error_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("h"), b"h").unwrap();
    let out = bundler()
        .current_dir(dir.path())
        .args([
            "-type=bc",
            "-bundle-align=0",
            &format!("-targets={HOST},{GFX906}"),
        ])
        .args(["-input=h", "-input=h", "-output=o"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "offload bundler: error: -bundle-align must be at least 1\n"
    );
    assert!(!dir.path().join("o").exists());
}

#[test]
fn a_missing_output_folder_is_named() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("h"), b"h").unwrap();
    let out = bundler()
        .current_dir(dir.path())
        .args([
            "-type=bc",
            &format!("-targets={HOST}"),
            "-input=h",
            "-output=nowhere/o",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "offload bundler: error: 'nowhere/o': No such file or directory\n"
    );
}

#[test]
fn a_text_entry_without_end_marker_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("\n; __CLANG_OFFLOAD_BUNDLE____START__ {GFX906}\ndefine void @f()\n");
    fs::write(dir.path().join("t.ll"), text).unwrap();
    let out = bundler()
        .current_dir(dir.path())
        .args([
            "-unbundle",
            "-type=ll",
            &format!("-targets={GFX906}"),
            "-input=t.ll",
            "-output=o",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("offload bundler: error: 't.ll': offset 0x0: text bundle entry '{GFX906}' has no end marker\n")
    );
}

fn compressed(data: &[u8], version: u16) -> Vec<u8> {
    let options = ccob::CompressOptions {
        version,
        ..Default::default()
    };
    ccob::compress(data, &options).unwrap().0
}

#[test]
fn concatenated_compressed_bundles_are_all_listed() {
    let dir = tempfile::tempdir().unwrap();
    let first = bundle::to_vec(
        &[("host-x86_64-unknown-linux-gnu-", b""), (GFX906, b"a")],
        4096,
    );
    let second = bundle::to_vec(
        &[("host-x86_64-unknown-linux-gnu-", b""), (GFX90A, b"b")],
        4096,
    );
    let mut both = compressed(&first, 2);
    both.extend(compressed(&second, 3));
    fs::write(dir.path().join("two.ccob"), &both).unwrap();
    let out = bundler()
        .current_dir(dir.path())
        .args(["-list", "-type=o", "-input=two.ccob"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "{GFX906}\nhost-x86_64-unknown-linux-gnu-\n{GFX90A}\nhost-x86_64-unknown-linux-gnu-\n"
        )
    );
    let (code, err, left) = unbundle(dir.path(), "two.ccob", &both, &[GFX90A]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(left, ["out0"]);
    assert_eq!(fs::read(dir.path().join("out0")).unwrap(), b"b");
}

#[test]
fn a_compressed_bundle_with_a_wrong_hash_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = compressed(&sample_bundle(), 2);
    data[16] ^= 0x55;
    let (code, err, left) = unbundle(dir.path(), "bad.ccob", &data, &[GFX906]);
    assert_eq!(code, 1);
    assert!(
        err.contains("Failed to decompress input: compressed bundle hash mismatch")
            && err.contains("(in 'bad.ccob' at offset 0x18)"),
        "{err}"
    );
    assert!(left.is_empty());
}

#[test]
fn a_compressed_bundle_claiming_more_than_the_cap_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = compressed(&vec![0u8; 1 << 20], 3);
    fs::write(dir.path().join("big.ccob"), &data).unwrap();
    let out = bundler()
        .current_dir(dir.path())
        .args([
            "-list",
            "-type=bc",
            "-input=big.ccob",
            "-max-decompressed-size=4096",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("compressed bundle decompresses to more than the limit of 4096 bytes")
            && err.contains("(in 'big.ccob' at offset 0x20)"),
        "{err}"
    );
}

#[test]
fn version_3_is_written_on_request() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("d"), [7u8; 1000]).unwrap();
    // As LLVM 19, which ignores COMPRESSED_BUNDLE_FORMAT_VERSION: our own option asks.
    let out = offload()
        .current_dir(dir.path())
        .args([
            "bundler",
            "-compressed-bundle-version=3",
            "-compress",
            "-type=bc",
            &format!("-targets={GFX906}"),
            "-input=d",
            "-output=c",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let written = fs::read(dir.path().join("c")).unwrap();
    assert_eq!(&written[..6], b"CCOB\x03\x00");
    let parsed = ccob::CompressedBundle::parse(&written).unwrap().unwrap();
    let plain = parsed.decompress(u64::MAX).unwrap();
    let inner = bundle::Bundle::parse(&plain).unwrap().unwrap();
    assert_eq!(inner.entries()[0].data, [7u8; 1000]);
}

#[test]
fn started_as_clang_offload_bundler_it_is_the_bundler() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("clang-offload-bundler");
    std::os::unix::fs::symlink(OFFLOAD, &link).unwrap();
    let out = std::process::Command::new(&link)
        .arg("-type=bc")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("{}: error: no output file specified!\n", link.display())
    );
}

/// A GNU archive of short-named members, as `ar` writes it.
fn gnu_archive(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = b"!<arch>\n".to_vec();
    for (name, data) in members {
        let header = format!(
            "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            format!("{name}/"),
            0,
            0,
            0,
            644,
            data.len()
        );
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        if data.len() % 2 == 1 {
            out.push(b'\n');
        }
    }
    out
}

fn unbundle_archive(dir: &Path, data: &[u8]) -> (i32, String, Vec<String>) {
    fs::write(dir.join("lib.a"), data).unwrap();
    let out = bundler()
        .current_dir(dir)
        .args([
            "-unbundle",
            "-type=a",
            &format!("-targets={GFX906},{GFX90A}"),
        ])
        .args(["-input=lib.a", "-output=a.a", "-output=b.a"])
        .output()
        .unwrap();
    let mut left: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "lib.a")
        .collect();
    left.sort();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        left,
    )
}

#[test]
fn an_archive_of_plain_bundles_splits_by_target() {
    let dir = tempfile::tempdir().unwrap();
    let archive = gnu_archive(&[("m1.bc", &sample_bundle()), ("text.txt", b"not a bundle\n")]);
    let (code, err, left) = unbundle_archive(dir.path(), &archive);
    assert_eq!(code, 0, "{err}");
    assert_eq!(left, ["a.a", "b.a"]);
    let a = fs::read(dir.path().join("a.a")).unwrap();
    let expected_name = b"m1-hipv4-amdgcn-amd-amdhsa--gfx906m1.bc/";
    assert!(a.windows(expected_name.len()).any(|w| w == expected_name));
    assert!(a.windows(300).any(|w| w == [0x11; 300]));
    assert!(!a.windows(500).any(|w| w == [0x22; 500]));
}

#[test]
fn a_damaged_member_names_archive_and_member() {
    let dir = tempfile::tempdir().unwrap();
    let mut damaged = sample_bundle();
    damaged.truncate(damaged.len() - 100);
    let archive = gnu_archive(&[("good.bc", &sample_bundle()), ("bad.bc", &damaged)]);
    let (code, err, left) = unbundle_archive(dir.path(), &archive);
    assert_eq!(code, 1);
    assert!(err.contains("'lib.a': member 'bad.bc': offset 0x"), "{err}");
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_damaged_bitcode_entry_is_archived_with_llvms_warning() {
    let dir = tempfile::tempdir().unwrap();
    // The bitcode magic and 11 bytes: LLVM cannot read its symbols ("Invalid bitcode
    // signature"), lists none for it, writes no symbol table and warns, exit status 0.
    let bitcode: &[u8] = b"BC\xc0\xde\x35\x14\x00\x00\x05\x00\x00";
    let member = bundle::to_vec(&[(GFX906, bitcode), (GFX90A, &[0x22; 8])], 1);
    let archive = gnu_archive(&[("m1.o", &member)]);
    let (code, err, left) = unbundle_archive(dir.path(), &archive);
    assert_eq!(code, 0, "{err}");
    assert_eq!(left, ["a.a", "b.a"]);
    assert_eq!(
        err,
        "warning: 'm1-hipv4-amdgcn-amd-amdhsa--gfx906m1.bc': bitcode of 11 bytes, not a multiple of 4\n"
    );
    let a = fs::read(dir.path().join("a.a")).unwrap();
    assert!(a.starts_with(b"!<arch>\n//"), "{a:?}");
}

#[test]
fn truncated_and_damaged_archives_are_clean_errors() {
    let dir = tempfile::tempdir().unwrap();
    let archive = gnu_archive(&[("m1.bc", &sample_bundle()), ("m2.bc", &sample_bundle())]);
    for cut in (9..archive.len()).step_by(97) {
        let (code, err, left) = unbundle_archive(dir.path(), &archive[..cut]);
        assert!(code == 1 || code == 0, "cut {cut}: exit {code}: {err}");
        if code == 1 {
            assert!(err.contains("'lib.a'"), "cut {cut}: {err}");
            assert!(left.is_empty(), "cut {cut}: {left:?}");
        }
        for f in left {
            fs::remove_file(dir.path().join(f)).unwrap();
        }
    }
    let mut bad_size = archive.clone();
    bad_size[8 + 48..8 + 58].copy_from_slice(b"9999999999");
    let (code, err, left) = unbundle_archive(dir.path(), &bad_size);
    assert_eq!(code, 1);
    assert!(
        err.contains("'lib.a': member 'm1.bc': Archive member size is too large"),
        "{err}"
    );
    assert!(left.is_empty());
}

#[test]
fn a_bad_long_name_table_names_the_archive() {
    let dir = tempfile::tempdir().unwrap();
    let names = b"a-member-with-a-long-name.bc/\n";
    let mut archive = gnu_archive(&[("//", names)]);
    // The member's name points past the end of the long-name table.
    let bundle = sample_bundle();
    let header = format!(
        "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
        "/4000",
        0,
        0,
        0,
        644,
        bundle.len()
    );
    archive.extend_from_slice(header.as_bytes());
    archive.extend_from_slice(&bundle);
    let (code, err, left) = unbundle_archive(dir.path(), &archive);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("'lib.a'"), "{err}");
    assert!(err.contains("offset 0x"), "{err}");
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_fat_object_member_with_a_damaged_bundle_section_names_archive_and_member() {
    let dir = tempfile::tempdir().unwrap();
    let object =
        fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/archive/kernel-rdc.o"))
            .unwrap();
    // Point the last section (a bundle section) far past the end of the object.
    let shoff = u64::from_le_bytes(object[0x28..0x30].try_into().unwrap()) as usize;
    let shnum = u16::from_le_bytes(object[0x3c..0x3e].try_into().unwrap()) as usize;
    let last = shoff + (shnum - 1) * 64;
    let mut damaged = object.clone();
    damaged[last + 24..last + 32].copy_from_slice(&0x7fff_0000u64.to_le_bytes());
    let archive = gnu_archive(&[("good.o", &object), ("bad.o", &damaged)]);
    fs::write(dir.path().join("lib.a"), &archive).unwrap();
    let out = bundler()
        .current_dir(dir.path())
        .args([
            "-unbundle",
            "-type=a",
            "-targets=hip-amdgcn-amd-amdhsa--gfx906",
            "-input=lib.a",
            "-output=a.a",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("'lib.a': member 'bad.o'"), "{err}");
    assert!(!dir.path().join("a.a").exists());
}
