//! What the commands write and say when their inputs are named or built to mislead: CUDA
//! entries of files named alike extracted together, entry IDs and paths that would forge a
//! URI line, compressed offload binaries counted, a PE image checked, a removal refused.

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use offload::format::bundle;
use offload::format::ccob::{self, CompressOptions};

use crate::bombs::offload_binary_bomb;
use crate::util::{file_names, offload_in, samples_dir, tool};

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

/// The files `offload extract --arch sm_90` writes for `input` (in `dir`) alone: name and
/// bytes.
fn extracted_alone(dir: &Path, input: &str, out: &str) -> Vec<(String, Vec<u8>)> {
    let (code, _, stderr) = offload_in(dir, &["extract", input, "--arch", "sm_90", "-o", out]);
    assert_eq!(code, 0, "{stderr}");
    file_names(&dir.join(out))
        .into_iter()
        .map(|n| {
            let bytes = fs::read(dir.join(out).join(&n)).unwrap();
            (n, bytes)
        })
        .collect()
}

#[test]
fn cuda_entries_of_inputs_named_alike_are_each_written_to_a_file_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let cuda = samples_dir().join("cuda");
    fs::create_dir_all(dir.join("ct/a")).unwrap();
    fs::create_dir_all(dir.join("ct/b")).unwrap();
    fs::copy(cuda.join("gencode.o"), dir.join("ct/a/k.o")).unwrap();
    fs::copy(cuda.join("rdc.o"), dir.join("ct/b/k.o")).unwrap();
    let member = fs::read(cuda.join("clang-new-driver.o")).unwrap();
    fs::write(dir.join("ct/k.a"), gnu_archive(&[("k.o", &member)])).unwrap();
    let (code, stdout, stderr) = offload_in(
        dir,
        &["extract", "-r", "ct", "--arch", "sm_90", "-o", "out"],
    );
    assert_eq!(code, 0, "{stderr}");
    let names = file_names(&dir.join("out"));
    assert_eq!(
        names,
        [
            "k.1.sm_90-2.ptx",
            "k.1.sm_90.ptx",
            "k.2.sm_90-2.cubin",
            "k.2.sm_90-3.cubin",
            "k.2.sm_90.cubin"
        ]
    );
    assert!(
        stdout.contains(&format!("; {} images written,", names.len())),
        "{stdout}"
    );
    // Each file holds what extracting its input alone gives, in the walk's order: a/k.o,
    // b/k.o, then the archive.
    let a = extracted_alone(dir, "ct/a/k.o", "a");
    let b = extracted_alone(dir, "ct/b/k.o", "b");
    let k = extracted_alone(dir, "ct/k.a", "k");
    let names_alone = |files: &[(String, Vec<u8>)]| -> Vec<String> {
        files.iter().map(|(n, _)| n.clone()).collect()
    };
    assert_eq!(names_alone(&a), ["k.1.sm_90.ptx", "k.2.sm_90.cubin"]);
    assert_eq!(names_alone(&b), ["k.1.sm_90.ptx", "k.2.sm_90.cubin"]);
    assert_eq!(names_alone(&k), ["k.2.sm_90.cubin"]);
    let read = |name: &str| fs::read(dir.join("out").join(name)).unwrap();
    assert_eq!(read("k.1.sm_90.ptx"), a[0].1);
    assert_eq!(read("k.2.sm_90.cubin"), a[1].1);
    assert_eq!(read("k.1.sm_90-2.ptx"), b[0].1);
    assert_eq!(read("k.2.sm_90-2.cubin"), b[1].1);
    assert_eq!(read("k.2.sm_90-3.cubin"), k[0].1);
    assert_ne!(a[1].1, b[1].1);
    assert_ne!(b[1].1, k[0].1);
}

/// The ID an entry may hold to forge a line of `ls --uri`.
const FORGING_ID: &str = "hipv4-amdgcn-amd-amdhsa--gfx90a\nfile:///etc/shadow#offset=0&size=4096";

/// A bundle of a host entry and a device entry under `id`.
fn bundle_with(id: &str) -> Vec<u8> {
    bundle::to_vec(
        &[
            ("host-x86_64-unknown-linux-gnu-", b"".as_slice()),
            (id, b"device code".as_slice()),
        ],
        1,
    )
}

#[test]
fn uris_encode_ids_and_paths_so_no_line_or_range_can_be_forged() {
    let dir = tempfile::tempdir().unwrap();
    let dir = fs::canonicalize(dir.path()).unwrap();
    let (compressed, _) =
        ccob::compress(&bundle_with(FORGING_ID), &CompressOptions::default()).expect("compressed");
    let folder = dir.join("a#offset=0&size=1");
    fs::create_dir(&folder).unwrap();
    fs::write(folder.join("x%y"), &compressed).unwrap();
    let odd = std::ffi::OsStr::from_bytes(b"n\nl\xff");
    let plain = bundle_with("hipv4-amdgcn-amd-amdhsa--gfx90a");
    fs::create_dir(dir.join("odd")).unwrap();
    fs::write(dir.join("odd").join(odd), &plain).unwrap();
    // Named relative to the folder the command runs in: the URI is absolute all the same.
    let (code, stdout, stderr) = offload_in(&dir, &["ls", "--uri", "a#offset=0&size=1/x%y"]);
    assert_eq!(code, 0, "{stderr}");
    let base = dir.to_str().unwrap();
    let size = compressed.len();
    assert_eq!(
        stdout,
        format!(
            "file://{base}/a%23offset%3D0%26size%3D1/x%25y#offset=0&size={size}&entry=host-x86_64-unknown-linux-gnu-\n\
             file://{base}/a%23offset%3D0%26size%3D1/x%25y#offset=0&size={size}&entry=hipv4-amdgcn-amd-amdhsa--gfx90a%0Afile%3A///etc/shadow%23offset%3D0%26size%3D4096\n"
        )
    );
    let out = crate::util::succeed(
        crate::util::offload()
            .current_dir(&dir)
            .args(["ls", "--uri", "odd"]),
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let parsed = bundle::Bundle::parse(&plain).unwrap().unwrap();
    let at: Vec<u64> = parsed.entries().iter().map(|e| e.offset).collect();
    assert_eq!(
        stdout,
        format!(
            "file://{base}/odd/n%0Al%FF#offset={}&size=0\nfile://{base}/odd/n%0Al%FF#offset={}&size=11\n",
            at[0], at[1],
        )
    );
}

#[test]
fn compress_and_the_bundler_refuse_an_entry_id_holding_a_line_end() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    fs::write(dir.join("b"), bundle_with(FORGING_ID)).unwrap();
    let (code, stdout, stderr) = offload_in(dir, &["compress", "b", "-o", "c"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stderr.contains(
            "'b': offset 0x0: bundle entry 1 has an ID holding the control character U+000A, which no bundle is written with"
        ),
        "{stderr}"
    );
    assert!(!dir.join("c").exists());
    fs::write(dir.join("h"), "host\n").unwrap();
    fs::write(dir.join("d"), "dev\n").unwrap();
    let (code, _, stderr) = offload_in(
        dir,
        &[
            "bundler",
            "-type=ll",
            "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa-\ngfx90a",
            "-input=h",
            "-input=d",
            "-output=out.ll",
        ],
    );
    assert_eq!(code, 1);
    assert!(
        stderr.contains(
            "invalid target 'hip-amdgcn-amd-amdhsa-\\ngfx90a': a bundle entry ID cannot hold the control character U+000A"
        ),
        "{stderr}"
    );
    assert!(!dir.join("out.ll").exists());
}

#[test]
fn verify_counts_small_and_large_compressed_offload_binaries_alike() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // Inflated whole while found (64 KiB or less), and read from its head.
    fs::write(dir.join("small"), offload_binary_bomb(0)).unwrap();
    fs::write(dir.join("large"), offload_binary_bomb(1 << 20)).unwrap();
    let (code, stdout, stderr) = offload_in(dir, &["verify", "small", "large"]);
    assert_eq!(code, 0, "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[..2],
        [
            "small: 0 compressed bundles sound, 0 damaged; 1 compressed offload binary sound, 0 damaged",
            "large: 0 compressed bundles sound, 0 damaged; 1 compressed offload binary sound, 0 damaged",
        ]
    );
    assert_eq!(
        lines[3], "total: 2 compressed offload binaries sound, 0 damaged",
        "{stdout}"
    );
}

#[test]
fn check_of_a_pe_image_checks_its_own_bundles_and_says_so() {
    let exe = samples_dir().join("linked/hip-app.exe");
    let dir = exe.parent().unwrap();
    let (code, stdout, stderr) = offload_in(
        dir,
        &[
            "check",
            "--device",
            "gfx90a",
            "--device",
            "gfx906",
            "hip-app.exe",
        ],
    );
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        stderr,
        "offload check: note: 'hip-app.exe': a PE image: its own bundles are checked; the DLLs it loads are not searched for (check follows the libraries of ELF programs only)\n"
    );
    assert!(
        stdout.contains(
            "hip-app.exe        2  gfx90a       2        0       0        0\n                      gfx906       1        0       0        1\n"
        ),
        "{stdout}"
    );
}

#[test]
fn a_pruned_file_that_cannot_be_removed_is_named_with_what_was_done() {
    let Some(chattr) = tool("chattr") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let (code, _, stderr) = offload_in(
        &samples_dir().join("linked"),
        &[
            "extract",
            "hip-app.exe",
            "--arch",
            "gfx906",
            "-o",
            dir.join("x").to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let code_object = dir.join("x/hip-app.exe-hipv4-amdgcn-amd-amdhsa--gfx906.co");
    fs::create_dir_all(dir.join("tree/ro")).unwrap();
    fs::copy(&code_object, dir.join("tree/ro/k_gfx906.hsaco")).unwrap();
    // Root removes files from a folder it may not write to: an immutable folder stops it.
    let locked = std::process::Command::new(&chattr)
        .arg("+i")
        .arg(dir.join("tree/ro"))
        .status()
        .unwrap();
    if !locked.success() {
        crate::util::skip("chattr +i refused on this file system");
        return;
    }
    let (code, _, stderr) = offload_in(
        dir,
        &[
            "strip",
            "-r",
            "tree",
            "--keep",
            "gfx90a",
            "--prune",
            "--allow-empty",
            "--in-place",
        ],
    );
    let _ = std::process::Command::new(&chattr)
        .arg("-i")
        .arg(dir.join("tree/ro"))
        .status();
    assert_eq!(code, 1);
    assert!(
        stderr.contains("offload strip: error: 'tree/ro/k_gfx906.hsaco': cannot remove: "),
        "{stderr}"
    );
    assert!(dir.join("tree/ro/k_gfx906.hsaco").exists());
}
