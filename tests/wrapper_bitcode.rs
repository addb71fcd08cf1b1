//! `llvm-offload-wrapper-23`'s bitcode, byte for byte: our wrapper named so and LLVM 23.1.4's
//! (run in the sid root, `tests/util/sid.rs`) wrap the same files, and the two outputs must
//! be the same bytes, for every kind, with and without `--triple`, for images of every form
//! LLVM writes differently (none, one byte, text, C strings of 6-bit, 7-bit and 8-bit
//! characters, zeros, binary data, a bundle, an offload binary), alone and together. The same
//! for `llvm-offload-wrapper-22` and this machine's LLVM 22.

use crate::util::sid::{self, Sid, SidDir};
use crate::util::{self, skips, OFFLOAD};
use std::path::Path;
use std::process::Command;

/// The images, by file name: every form of byte array LLVM writes its own way.
fn images() -> Vec<(&'static str, Vec<u8>)> {
    // A fixed pseudo-random sequence: binary data with every byte value.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let binary: Vec<u8> = (0..100_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect();
    let sample = |path: &str| std::fs::read(util::samples_dir().join(path)).unwrap();
    vec![
        ("empty.bin", Vec::new()),
        ("one.bin", b"x".to_vec()),
        ("text.bin", b"hello world\n".to_vec()),
        ("char6.bin", b"abc.XY_09\0".to_vec()),
        ("ascii.bin", b"a b\tc\n\0".to_vec()),
        ("high.bin", b"\xff\x01hi\0".to_vec()),
        ("nul.bin", b"\0".to_vec()),
        ("zeros.bin", vec![0; 64]),
        ("binary.bin", binary),
        ("image.bin", sample("llvm23/image.bin")),
        ("bundle.bin", sample("bundles/two-bundles.bin")),
        ("offload.bin", sample("openmp/device.bin")),
    ]
}

/// Puts every image in `dir`, and our program in `dir/bin` named as LLVM's tools.
fn fill(dir: &Path) {
    for (name, bytes) in images() {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    let bin = dir.join("bin");
    std::fs::create_dir(&bin).unwrap();
    if std::fs::hard_link(OFFLOAD, bin.join("offload")).is_err() {
        std::fs::copy(OFFLOAD, bin.join("offload")).unwrap();
    }
    for name in [
        "llvm-offload-wrapper-23",
        "llvm-offload-wrapper-22",
        "llvm-offload-wrapper",
    ] {
        std::os::unix::fs::symlink("offload", bin.join(name)).unwrap();
    }
}

/// A work folder in the root holding every image, and our program named as LLVM's tools.
fn work_dir(sid: &Sid) -> SidDir {
    let dir = sid.work_dir();
    fill(dir.path());
    dir
}

/// Our wrapper `tool` run (outside the root) in `dir` with `args`; what it wrote.
fn ours(dir: &Path, tool: &str, args: &[&str]) -> Vec<u8> {
    let output = dir.join("ours.bc");
    let out = Command::new(dir.join("bin").join(tool))
        .args(args)
        .arg("-o")
        .arg(&output)
        .current_dir(dir)
        .env_remove("OFFLOAD_LLVM_VERSION")
        .env_remove("OFFLOAD_LOG")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{tool} {args:?}: {err}");
    std::fs::read(output).unwrap()
}

/// Wraps `args` with LLVM's and our `tool`, and asserts the two outputs are the same bytes.
fn same_bytes(sid: &Sid, dir: &SidDir, tool: &str, args: &[&str]) {
    let mut all = args.to_vec();
    all.extend(["-o", "llvm.bc"]);
    let out = sid.run(dir, "llvm-offload-wrapper-23", &all);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "llvm-offload-wrapper-23 {args:?}: {err}"
    );
    let llvm = std::fs::read(dir.path().join("llvm.bc")).unwrap();
    let ours = ours(dir.path(), tool, args);
    assert!(
        ours == llvm,
        "{tool} {args:?}: {}",
        util::first_difference(&llvm, &ours)
    );
}

#[test]
fn every_kind_of_one_image_is_llvm_23s_bytes() {
    let Some(sid) = sid::llvm23() else {
        return;
    };
    let dir = work_dir(&sid);
    for (image, _) in images() {
        for kind in [
            &["--kind=hip"][..],
            &["--kind=cuda"],
            &["--kind=openmp"],
            &["--kind=openmp", "--relocatable"],
            &["--kind=sycl"],
        ] {
            let args = [kind, &[image]].concat();
            same_bytes(&sid, &dir, "llvm-offload-wrapper-23", &args);
        }
    }
}

#[test]
fn other_triples_are_llvm_23s_bytes() {
    let Some(sid) = sid::llvm23() else {
        return;
    };
    let dir = work_dir(&sid);
    for triple in [
        "--triple=x86_64-pc-windows-msvc",
        "--triple=aarch64-unknown-linux-gnu",
        "--triple=x86_64-pc-linux-gnu",
        // Mach-O: the bounds' and constructors' own names, a wrapper header, and on macOS the
        // fat binaries in their runtime's segment.
        "--triple=x86_64-apple-macosx10.15.0",
        "--triple=arm64-apple-ios",
        "--triple=i386-apple-darwin",
        "--triple=x86_64-unknown-linux-gnu-macho",
    ] {
        for kind in ["--kind=hip", "--kind=cuda", "--kind=openmp", "--kind=sycl"] {
            for image in ["text.bin", "binary.bin", "offload.bin"] {
                same_bytes(
                    &sid,
                    &dir,
                    "llvm-offload-wrapper-23",
                    &[kind, triple, image],
                );
            }
        }
    }
}

#[test]
fn several_openmp_images_are_llvm_23s_bytes() {
    let Some(sid) = sid::llvm23() else {
        return;
    };
    let dir = work_dir(&sid);
    // Two images of the same bytes share one constant in LLVM's module.
    let several = [
        "text.bin",
        "one.bin",
        "char6.bin",
        "binary.bin",
        "offload.bin",
        "empty.bin",
        "text.bin",
        "zeros.bin",
        "high.bin",
    ];
    for extra in [&[][..], &["--relocatable"]] {
        let args = [&["--kind=openmp"][..], extra, &several].concat();
        same_bytes(&sid, &dir, "llvm-offload-wrapper-23", &args);
    }
    // The unversioned name follows LLVM 23.
    let args = ["--kind=openmp", "ascii.bin", "bundle.bin"];
    same_bytes(&sid, &dir, "llvm-offload-wrapper", &args);
    same_bytes(
        &sid,
        &dir,
        "llvm-offload-wrapper",
        &["--kind=hip", "bundle.bin"],
    );
}

#[test]
fn llvm_offload_wrapper_22_writes_llvm_22s_bytes() {
    let Some(upstream) = skips::reference(
        util::tool("llvm-offload-wrapper-22"),
        "no llvm-offload-wrapper-22 (apt-get install llvm-22)",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path());
    let several = [
        "text.bin",
        "offload.bin",
        "empty.bin",
        "text.bin",
        "high.bin",
    ];
    let mut cases: Vec<Vec<&str>> = vec![[&["--kind=openmp"][..], &several].concat()];
    for (image, _) in images() {
        for kind in ["--kind=hip", "--kind=cuda", "--kind=openmp"] {
            cases.push(vec![kind, image]);
        }
    }
    for kind in ["--kind=hip", "--kind=cuda", "--kind=openmp"] {
        for triple in [
            "--triple=x86_64-pc-windows-msvc",
            "--triple=x86_64-apple-macosx10.15.0",
            "--triple=arm64-apple-ios",
            "--triple=x86_64-unknown-linux-gnu-macho",
        ] {
            cases.push(vec![kind, triple, "binary.bin"]);
        }
    }
    for args in cases {
        let llvm_out = dir.path().join("llvm.bc");
        let out = Command::new(&upstream)
            .args(&args)
            .arg("-o")
            .arg(&llvm_out)
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "llvm-offload-wrapper-22 {args:?}: {err}"
        );
        let llvm = std::fs::read(&llvm_out).unwrap();
        let ours = ours(dir.path(), "llvm-offload-wrapper-22", &args);
        assert!(
            ours == llvm,
            "llvm-offload-wrapper-22 {args:?}: {}",
            util::first_difference(&llvm, &ours)
        );
    }
}
