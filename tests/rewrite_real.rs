//! Rewriting files as packagers meet them: shared libraries that carry device images of their
//! own as data beside their registered fat binary (kept whole, counted alike by the plan, the
//! read-back and `du`), bundles compressed already (left as they are unless a compression is
//! asked for), and trees of files without device code (left alone, whatever their machine).

use std::path::{Path, PathBuf};

use crate::util::{offload_in, samples_dir, tool};

/// Assembles `source` (in `dir`) with clang-22 into `name`.o; `None` (a skip) without it.
fn assemble(dir: &Path, name: &str, source: &str) -> Option<PathBuf> {
    let clang = tool("clang-22")?;
    let asm = dir.join(format!("{name}.s"));
    std::fs::write(&asm, source).unwrap();
    let object = dir.join(format!("{name}.o"));
    let status = std::process::Command::new(clang)
        .arg("-c")
        .arg(&asm)
        .arg("-o")
        .arg(&object)
        .status()
        .unwrap();
    assert!(status.success());
    Some(object)
}

/// A shared library `name` in `dir` of the object `registered` (a fat binary the runtime
/// registers) and the file `embedded` put by `.incbin` into `.lrodata`, as data the program
/// loads itself; `None` (a skip) without clang-22 or ld.lld-22.
pub(crate) fn library_with_data(
    dir: &Path,
    name: &str,
    registered: &Path,
    embedded: &Path,
) -> Option<()> {
    let source = format!(
        ".section .lrodata,\"a\"\n.balign 64\n.globl blob\nblob:\n.incbin \"{}\"\n",
        embedded.display()
    );
    let data = assemble(dir, "data", &source)?;
    let lld = tool("ld.lld-22")?;
    let status = std::process::Command::new(lld)
        .arg("-shared")
        .arg(registered)
        .arg(&data)
        .arg("-o")
        .arg(dir.join(name))
        .status()
        .unwrap();
    assert!(status.success());
    Some(())
}

/// The CUDA library: `gencode.o` (sm_80, sm_90, compute_90) and an sm_89 cubin as data.
pub(crate) fn cuda_library(dir: &Path) -> Option<()> {
    let cuda = samples_dir().join("cuda");
    library_with_data(
        dir,
        "libcu.so",
        &cuda.join("gencode.o"),
        &cuda.join("bare/kernel-sm_89.cubin"),
    )
}

/// The HIP library `libhip.so`: `generic-cov6.o` (gfx10-3-generic and gfx11-generic) and a
/// bundle for gfx1100 and gfx90a as data.
pub(crate) fn hip_library(dir: &Path) -> Option<()> {
    let samples = samples_dir();
    library_with_data(
        dir,
        "libhip.so",
        &samples.join("targets/generic-cov6.o"),
        &samples.join("embedded/kernel.bundle"),
    )
}

/// The rows of `offload ls` of `file` in `dir`: architecture and place, host entries aside.
fn listing(dir: &Path, file: &str) -> Vec<String> {
    let (code, out, err) = offload_in(dir, &["ls", file]);
    assert_eq!(code, 0, "{err}");
    out.lines()
        .skip(1)
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let place = words.iter().find(|w| w.starts_with('.'))?;
            (words[2] != "-").then(|| format!("{} {place}", words[2]))
        })
        .collect()
}

#[test]
fn strip_keeps_a_cubin_embedded_as_data_whole_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    if cuda_library(d).is_none() {
        return;
    }
    let size = std::fs::metadata(d.join("libcu.so")).unwrap().len();
    let (code, out, err) = offload_in(d, &["strip", "--keep", "sm_90", "libcu.so", "-o", "out"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[..2],
        [
            "libcu.so: 1 device image embedded as data is kept whole: the program loads it itself",
            &format!(
                "libcu.so: 4 device images went to 3, {size} bytes to {size} (1 bundles or binaries rewritten)"
            ),
        ]
    );
    assert_eq!(
        listing(d, "out"),
        [
            "sm_90 .nv_fatbin",
            "compute_90 .nv_fatbin",
            "sm_89 .lrodata"
        ]
    );
    // A dry run counts as the rewrite does.
    let (code, out, err) = offload_in(d, &["strip", "--keep", "sm_90", "libcu.so", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("libcu.so: 4 device images would go to 3,"),
        "{out}"
    );
}

#[test]
fn strip_keeps_a_bundle_embedded_as_data_beside_hip_fatbin_whole() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    if hip_library(d).is_none() {
        return;
    }
    let (code, out, err) = offload_in(d, &["strip", "--keep", "gfx1100", "libhip.so", "-o", "out"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.lines().next(),
        Some("libhip.so: 2 device images embedded as data are kept whole: the program loads them itself")
    );
    assert!(
        out.contains("libhip.so: 4 device images went to 3,"),
        "{out}"
    );
    assert_eq!(
        listing(d, "out"),
        [
            "gfx11-generic .hip_fatbin",
            "gfx1100 .lrodata",
            "gfx90a .lrodata"
        ]
    );
}

#[test]
fn du_keep_counts_nothing_of_an_image_embedded_as_data_as_removed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    if cuda_library(d).is_none() {
        return;
    }
    let (code, out, err) = offload_in(d, &["du", "--keep", "sm_90", "libcu.so"]);
    assert_eq!(code, 0, "{err}");
    let sm_89: Vec<&str> = out
        .lines()
        .find(|line| line.starts_with("sm_89 "))
        .unwrap()
        .split_whitespace()
        .collect();
    // Target, images, stored, inflated, removed, file.
    assert_eq!(sm_89, ["sm_89", "1", "3240", "3240", "0", "libcu.so"]);
}

/// `mixed-app-z` (two bundles compressed, format version 3) compressed again with format
/// version 2, as clang's `--offload-compress` of LLVM 19 writes them, in `dir` as `v2`.
fn compressed_v2(dir: &Path) -> Vec<u8> {
    let app = samples_dir().join("targets/mixed-app-z");
    std::fs::copy(&app, dir.join("app")).unwrap();
    let (code, out, err) = offload_in(
        dir,
        &["compress", "--format-version", "2", "app", "-o", "v2"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("(2 bundles or binaries rewritten)"), "{out}");
    let v2 = std::fs::read(dir.join("v2")).unwrap();
    assert_ne!(v2, std::fs::read(&app).unwrap());
    v2
}

#[test]
fn compress_leaves_bundles_compressed_already_as_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let v2 = compressed_v2(d);
    let (code, out, err) = offload_in(d, &["compress", "v2", "-o", "out"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        format!(
            "v2: 2 bundles already compressed, left as they were: nothing to do\n\
             v2: 5 device images went to 5, {0} bytes to {0} (0 bundles or binaries rewritten)\n",
            v2.len()
        )
    );
    assert_eq!(std::fs::read(d.join("out")).unwrap(), v2);
    let (code, _, err) = offload_in(d, &["compress", "v2", "--in-place"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(d.join("v2")).unwrap(), v2);
}

#[test]
fn compress_with_a_format_version_asked_rewrites_bundles_compressed_already() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let v2 = compressed_v2(d);
    let (code, out, err) = offload_in(d, &["compress", "--format-version", "3", "v2", "-o", "v3"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("(2 bundles or binaries rewritten)"), "{out}");
    let v3 = std::fs::read(d.join("v3")).unwrap();
    assert_ne!(v3, v2);
    assert_eq!(v3, std::fs::read(d.join("app")).unwrap());
}

/// Compiles `int start(void)` with clang-22 for `target` into `out` in `dir`.
fn compile_for(dir: &Path, target: &str, out: &str) -> Option<()> {
    let clang = tool("clang-22")?;
    std::fs::write(dir.join("start.c"), "int start(void) { return 0; }\n").unwrap();
    let status = std::process::Command::new(clang)
        .current_dir(dir)
        .args([&format!("--target={target}"), "-c", "start.c", "-o", out])
        .status()
        .unwrap();
    assert!(status.success());
    Some(())
}

/// A tree as a Python environment holds it: a 32-bit Windows launcher (PE32, i386), a
/// 32-bit ELF object, a 64-bit host library without device code, and one HIP library.
fn python_tree(dir: &Path) -> Option<PathBuf> {
    let tree = dir.join("site-packages");
    let launchers = tree.join("pip/_vendor/distlib");
    std::fs::create_dir_all(&launchers).unwrap();
    compile_for(dir, "i686-pc-windows-msvc", "start.obj")?;
    let status = std::process::Command::new(tool("lld-link-22")?)
        .current_dir(dir)
        .args([
            "/entry:start",
            "/nodefaultlib",
            "/subsystem:console",
            "start.obj",
        ])
        .arg(format!("/out:{}", launchers.join("t32.exe").display()))
        .status()
        .unwrap();
    assert!(status.success());
    compile_for(dir, "i686-linux-gnu", "start32.o")?;
    std::fs::copy(dir.join("start32.o"), tree.join("start32.o")).unwrap();
    compile_for(dir, "x86_64-linux-gnu", "start64.o")?;
    let status = std::process::Command::new(tool("ld.lld-22")?)
        .arg("-shared")
        .arg(dir.join("start64.o"))
        .arg("-o")
        .arg(tree.join("libhost.so"))
        .status()
        .unwrap();
    assert!(status.success());
    let hip = samples_dir().join("linked/libhip.so");
    std::fs::copy(hip, tree.join("libhip.so")).unwrap();
    Some(tree)
}

#[test]
fn strip_of_a_tree_leaves_files_without_device_code_alone_whatever_their_machine() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(tree) = python_tree(d) else {
        return;
    };
    let before: Vec<Vec<u8>> = ["pip/_vendor/distlib/t32.exe", "start32.o", "libhost.so"]
        .iter()
        .map(|f| std::fs::read(tree.join(f)).unwrap())
        .collect();
    let (code, out, err) = offload_in(
        d,
        &[
            "strip",
            "-r",
            "--keep",
            "gfx90a",
            "--in-place",
            "site-packages",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(err, "");
    let files: Vec<&str> = out
        .lines()
        .filter(|line| !line.starts_with("total"))
        .filter_map(|line| line.split(": ").next())
        .collect();
    assert_eq!(files, ["site-packages/libhip.so"], "{out}");
    assert!(
        out.contains("total: 1 files, 1 changed, 0 failed;"),
        "{out}"
    );
    let after: Vec<Vec<u8>> = ["pip/_vendor/distlib/t32.exe", "start32.o", "libhost.so"]
        .iter()
        .map(|f| std::fs::read(tree.join(f)).unwrap())
        .collect();
    assert!(before == after);
}
