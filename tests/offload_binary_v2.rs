//! Offload binaries of version 2, which LLVM 23 writes: one binary holding every image. Read
//! and rewritten in the objects clang-23's new offload driver makes (`samples/llvm23`),
//! written as llvm-offload-binary-23 writes them, against the committed goldens and, with the
//! Debian sid root, against LLVM 23 live.

use std::fs;
use std::path::{Path, PathBuf};

use crate::util::{offload, samples_dir, sid, succeed, text_output};

fn llvm23_samples() -> PathBuf {
    samples_dir().join("llvm23")
}

/// The arguments packing the three small files of `samples/llvm23/three.bin`, in `dir`.
const THREE: [&str; 5] = [
    "-o",
    "three.bin",
    "--image=file=a.bin,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=hip",
    "--image=file=b.bin,triple=amdgcn-amd-amdhsa,arch=gfx1030,kind=hip,foo=bar",
    "--image=file=c.bin,triple=nvptx64-nvidia-cuda,arch=sm_70,kind=openmp",
];

fn three_inputs(dir: &Path) {
    fs::write(dir.join("a.bin"), "A".repeat(13)).unwrap();
    fs::write(dir.join("b.bin"), "B".repeat(22)).unwrap();
    fs::write(dir.join("c.bin"), "CCC").unwrap();
}

/// Runs our packager as LLVM `version` in `dir`.
fn packager(dir: &Path, version: &str, args: &[&str]) -> (i32, String, String) {
    text_output(
        offload()
            .env("OFFLOAD_LLVM_VERSION", version)
            .current_dir(dir)
            .arg("packager")
            .args(args),
    )
}

#[test]
fn packs_one_version_2_binary_as_llvm_23_does() {
    let dir = tempfile::tempdir().unwrap();
    three_inputs(dir.path());
    let (code, _, err) = packager(dir.path(), "23", &THREE);
    assert_eq!(code, 0, "{err}");
    let ours = fs::read(dir.path().join("three.bin")).unwrap();
    assert_eq!(ours, fs::read(llvm23_samples().join("three.bin")).unwrap());
    assert_eq!(&ours[4..8], &[2, 0, 0, 0], "version 2");
    // LLVM 22 writes one version 1 binary per image instead.
    let (code, _, err) = packager(dir.path(), "22", &THREE);
    assert_eq!(code, 0, "{err}");
    let v22 = fs::read(dir.path().join("three.bin")).unwrap();
    assert_eq!(&v22[4..8], &[1, 0, 0, 0], "version 1");
    assert_ne!(v22, ours);
    let Some(sid) = sid::llvm23() else {
        return;
    };
    let work = sid.work_dir();
    three_inputs(work.path());
    let empty = ["-o", "empty.bin"];
    for args in [&THREE[..], &empty[..]] {
        let out = sid.run(&work, "llvm-offload-binary-23", args);
        assert!(out.status.success(), "{out:?}");
        let theirs = fs::read(work.path().join(args[1])).unwrap();
        let (code, _, err) = packager(dir.path(), "23", args);
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            fs::read(dir.path().join(args[1])).unwrap(),
            theirs,
            "{args:?}"
        );
    }
}

/// Two images with four and seven keys beyond `file`, `triple`, `arch` and `kind`: their string
/// entries come in the order of LLVM 23's `DenseMap` of the items.
const MANY_KEYS: [&str; 4] = [
    "-o",
    "many-keys.bin",
    "--image=file=a.bin,triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=hip,zz=1,aa=2,mm=3,b=4",
    "--image=file=b.bin,x=1,y=2,z=3,w=4,v=5,u=6,t=7,triple=amdgcn-amd-amdhsa,arch=gfx1030",
];

#[test]
fn orders_many_string_entries_as_llvm_23_does() {
    let dir = tempfile::tempdir().unwrap();
    three_inputs(dir.path());
    let (code, _, err) = packager(dir.path(), "23", &MANY_KEYS);
    assert_eq!(code, 0, "{err}");
    let ours = fs::read(dir.path().join("many-keys.bin")).unwrap();
    assert_eq!(
        ours,
        fs::read(llvm23_samples().join("many-keys.bin")).unwrap()
    );
    let Some(sid) = sid::llvm23() else {
        return;
    };
    let work = sid.work_dir();
    three_inputs(work.path());
    let extra = [
        "--image=file=a.bin,q=1,r=2,s=3,kind=openmp,triple=x,arch=y,long-key-name=v",
        "--image=file=b.bin,arch=gfx942:sramecc+:xnack-,triple=amdgcn-amd-amdhsa,k1=,k2=a,k3=b",
    ];
    for args in [&MANY_KEYS[..], &["-o", "more.bin", extra[0], extra[1]][..]] {
        let out = sid.run(&work, "llvm-offload-binary-23", args);
        assert!(out.status.success(), "{out:?}");
        let theirs = fs::read(work.path().join(args[1])).unwrap();
        let (code, _, err) = packager(dir.path(), "23", args);
        assert_eq!(code, 0, "{err}");
        let ours = fs::read(dir.path().join(args[1])).unwrap();
        assert_eq!(ours, theirs, "{args:?}");
    }
}

#[test]
fn unpacks_version_2_as_llvm_23_does() {
    let dir = tempfile::tempdir().unwrap();
    fs::copy(
        llvm23_samples().join("three.bin"),
        dir.path().join("three.bin"),
    )
    .unwrap();
    let args = ["three.bin", "--image=arch=gfx90a", "--image=kind=openmp"];
    let (code, out, err) = packager(dir.path(), "23", &args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "Extracted: three-amdgcn-amd-amdhsa-gfx90a.0.\n\
         Extracted: three-nvptx64-nvidia-cuda-sm_70.0.\n"
    );
    let a = fs::read(dir.path().join("three-amdgcn-amd-amdhsa-gfx90a.0.")).unwrap();
    assert_eq!(a, b"AAAAAAAAAAAAA");
    let (code, out, _) = packager(
        dir.path(),
        "23",
        &["three.bin", "--image=file=x,arch=gfx1030"],
    );
    assert_eq!((code, out.as_str()), (0, ""));
    assert_eq!(fs::read(dir.path().join("x")).unwrap(), b"B".repeat(22));
    // LLVM 22 reads version 1 only.
    let (code, _, err) = packager(dir.path(), "22", &args);
    assert_eq!(code, 1);
    assert!(err.contains("offload binary version 2"), "{err}");
    let Some(sid) = sid::llvm23() else {
        return;
    };
    let work = sid.work_dir();
    work.copy_in(&llvm23_samples().join("three.bin"), "three.bin");
    let theirs = sid.run(&work, "llvm-offload-binary-23", &args);
    assert_eq!(
        String::from_utf8_lossy(&theirs.stdout),
        out_of(dir.path(), &args)
    );
    for name in [
        "three-amdgcn-amd-amdhsa-gfx90a.0.",
        "three-nvptx64-nvidia-cuda-sm_70.0.",
    ] {
        assert_eq!(
            fs::read(work.path().join(name)).unwrap(),
            fs::read(dir.path().join(name)).unwrap()
        );
    }
}

fn out_of(dir: &Path, args: &[&str]) -> String {
    packager(dir, "23", args).1
}

#[test]
fn lists_the_images_of_clang_23_objects() {
    let out = succeed(offload().current_dir(llvm23_samples()).args([
        "ls",
        "hip-rdc.o",
        "omp.o",
        "three.bin",
        "hip-rdc-gfx90a.o",
    ]));
    let expected = fs::read_to_string(llvm23_samples().join("ls.txt")).unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
}

#[test]
fn strip_keeps_one_processor_of_a_version_2_binary() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("k.o");
    let input = llvm23_samples().join("hip-rdc.o");
    let done = succeed(
        offload()
            .args(["strip", "--keep", "gfx90a", "-o"])
            .arg(&out)
            .arg(&input),
    );
    let said = String::from_utf8_lossy(&done.stdout) + String::from_utf8_lossy(&done.stderr);
    assert!(said.contains("2 device images went to 1"), "{said}");
    let stripped = fs::read(&out).unwrap();
    assert_eq!(
        stripped,
        fs::read(llvm23_samples().join("hip-rdc-gfx90a.o")).unwrap()
    );
    let listed = succeed(offload().arg("ls").arg(&out));
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("gfx90a") && !listed.contains("gfx1030"),
        "{listed}"
    );
    let Some(sid) = sid::llvm23() else {
        return;
    };
    let work = sid.work_dir();
    work.copy_in(&out, "hip-rdc-gfx90a.o");
    let theirs = sid.run(
        &work,
        "llvm-objdump-23",
        &["--offloading", "hip-rdc-gfx90a.o"],
    );
    assert!(theirs.status.success(), "{theirs:?}");
    let expected = fs::read(llvm23_samples().join("objdump-hip-rdc-gfx90a.txt")).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&theirs.stdout),
        String::from_utf8_lossy(&expected)
    );
}

#[test]
fn strip_drops_a_version_2_binary_with_nothing_left() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o.o");
    let input = llvm23_samples().join("omp.o");
    succeed(
        offload()
            .args(["strip", "--allow-empty", "--keep", "gfx1030", "-o"])
            .arg(&out)
            .arg(&input),
    );
    let listed = succeed(offload().arg("ls").arg(&out));
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(!listed.contains("gfx90a"), "{listed}");
    assert!(fs::metadata(&out).unwrap().len() < fs::metadata(&input).unwrap().len());
}

#[test]
fn reads_a_version_2_binary_beside_version_1_binaries() {
    let dir = tempfile::tempdir().unwrap();
    three_inputs(dir.path());
    let (code, _, err) = packager(dir.path(), "22", &THREE);
    assert_eq!(code, 0, "{err}");
    let mut mixed = fs::read(llvm23_samples().join("three.bin")).unwrap();
    mixed.extend(fs::read(dir.path().join("three.bin")).unwrap());
    fs::write(dir.path().join("mixed.bin"), &mixed).unwrap();
    let listed = succeed(offload().current_dir(dir.path()).args(["ls", "mixed.bin"]));
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert_eq!(listed.matches("gfx1030").count(), 2, "{listed}");
    assert_eq!(
        listed.lines().filter(|l| l.contains("mixed.bin @")).count(),
        6,
        "{listed}"
    );
    let (code, out, _) = packager(dir.path(), "23", &["mixed.bin", "--image=arch=sm_70"]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 2, "{out}");
}

#[test]
fn damaged_entries_tables_are_errors_that_say_where() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = fs::read(llvm23_samples().join("three.bin")).unwrap();
    // The entries table moved past the end of the binary.
    bytes[16] = 0xa0;
    bytes[17] = 0x01;
    fs::write(dir.path().join("bad.bin"), &bytes).unwrap();
    let (code, _, err) = text_output(offload().current_dir(dir.path()).args(["ls", "bad.bin"]));
    assert_ne!(code, 0);
    assert!(err.contains("bad.bin") && err.contains("0x10"), "{err}");
    assert!(err.contains("past the end of the binary"), "{err}");
}

#[test]
fn extracts_one_image_of_a_version_2_binary() {
    let dir = tempfile::tempdir().unwrap();
    let input = llvm23_samples().join("hip-rdc.o");
    succeed(
        offload()
            .current_dir(dir.path())
            .args(["extract", "--arch", "gfx90a"])
            .arg(&input),
    );
    let written = crate::util::file_names(dir.path());
    assert_eq!(written, ["hip-rdc.o-hip-amdgcn-amd-amdhsa-gfx90a.bc"]);
    let image = fs::read(dir.path().join(&written[0])).unwrap();
    assert_eq!(image.len(), 3868);
    assert!(image.starts_with(b"BC\xc0\xde"), "bitcode");
}
