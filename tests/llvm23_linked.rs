//! What clang-23 and clang-linker-wrapper-23 link (`samples/llvm23`, made by its `make.sh`): an
//! archive of `-fgpu-rdc` objects, programs device-linked from objects and from that archive,
//! a program of a compressed bundle, and CUDA objects by clang-23. Listed against a golden,
//! stripped to one processor and checked, and read back by LLVM 23's own tools when the Debian
//! sid root is there.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{cuda, offload, samples_dir, sid, succeed, text_output};

fn llvm23_samples() -> PathBuf {
    samples_dir().join("llvm23")
}

/// The files of the golden listing, in its order.
const LINKED: [&str; 6] = [
    "librdc.a",
    "hip-rdc-app",
    "hip-rdc-lib-app",
    "hip-compressed-app",
    "cuda.o",
    "cuda-rdc.o",
];

/// The HIP ones, which hold code for gfx90a and gfx1030.
const HIP: [&str; 4] = [
    "librdc.a",
    "hip-rdc-app",
    "hip-rdc-lib-app",
    "hip-compressed-app",
];

fn listing(dir: &Path, files: &[&str]) -> String {
    let out = succeed(offload().current_dir(dir).arg("ls").args(files));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn lists_what_clang_23_links() {
    let listed = listing(&llvm23_samples(), &LINKED);
    let golden = fs::read_to_string(llvm23_samples().join("ls-linked.txt")).unwrap();
    assert_eq!(listed, golden);
}

/// `file` stripped to gfx90a in `dir`, as `s-FILE`.
fn strip_to_gfx90a(dir: &Path, file: &str) -> PathBuf {
    let out = dir.join(format!("s-{file}"));
    let (code, _, err) = text_output(
        offload()
            .current_dir(llvm23_samples())
            .args(["strip", "--keep", "gfx90a", "--output"])
            .arg(&out)
            .arg(file),
    );
    assert_eq!(code, 0, "{file}: {err}");
    out
}

#[test]
fn strips_what_clang_23_links_to_one_processor() {
    let dir = tempfile::tempdir().unwrap();
    for file in HIP {
        let stripped = strip_to_gfx90a(dir.path(), file);
        let name = stripped.file_name().unwrap().to_str().unwrap().to_owned();
        let listed = listing(dir.path(), &[&name]);
        assert!(listed.contains("gfx90a"), "{file}: {listed}");
        assert!(!listed.contains("gfx1030"), "{file}: {listed}");
        // What the HIP runtime would load: gfx90a finds its code, gfx1030 none.
        let check = |device: &str| {
            text_output(offload().args(["check", "--device", device]).arg(&stripped))
        };
        let (code, _, err) = check("gfx90a");
        assert_eq!(code, 0, "{file}: {err}");
        let (code, out, _) = check("gfx1030");
        assert_eq!(code, 1, "{file}: {out}");
        if file != "librdc.a" {
            assert!(
                out.contains("\"No compatible code objects found for: gfx1030\""),
                "{file}: {out}"
            );
        }
        // The stand-in runtime's programs still run.
        if file.ends_with("-app") {
            let status = Command::new(&stripped).status().unwrap();
            assert!(status.success(), "{file}: {status}");
        }
    }
    // The smaller program: its bundle lost the gfx1030 code object.
    let before = fs::metadata(llvm23_samples().join("hip-rdc-app"))
        .unwrap()
        .len();
    let after = fs::metadata(dir.path().join("s-hip-rdc-app"))
        .unwrap()
        .len();
    assert!(after < before, "{before} -> {after}");
    let Some(sid) = sid::llvm23() else {
        return;
    };
    let work = sid.work_dir();
    for file in HIP {
        fs::copy(dir.path().join(format!("s-{file}")), work.path().join(file)).unwrap();
    }
    // LLVM 23 reads the archive's objects back: each holds the gfx90a bitcode alone.
    let out = sid.run(&work, "llvm-objdump-23", &["--offloading", "librdc.a"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let arches: Vec<&str> = text.lines().filter(|l| l.starts_with("arch ")).collect();
    assert_eq!(arches.len(), 2, "{text}");
    assert!(arches.iter().all(|l| l.ends_with("gfx90a")), "{text}");
    // And each program's `.hip_fatbin` lists what the original's does but gfx1030.
    for file in ["hip-rdc-app", "hip-rdc-lib-app", "hip-compressed-app"] {
        let original = format!("o-{file}");
        fs::copy(llvm23_samples().join(file), work.path().join(&original)).unwrap();
        let entries = |program: &str| {
            let dump = format!("--dump-section=.hip_fatbin={program}.fatbin");
            let out = sid.run(&work, "llvm-objcopy-23", &[&dump, program, "/dev/null"]);
            assert!(out.status.success(), "{out:?}");
            let input = format!("-input={program}.fatbin");
            let out = sid.run(
                &work,
                "clang-offload-bundler-23",
                &["-list", "-type=o", &input],
            );
            assert!(out.status.success(), "{program}: {out:?}");
            let mut listed: Vec<String> = String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(str::to_owned)
                .collect();
            listed.sort();
            listed
        };
        let mut expected = entries(&original);
        assert_eq!(expected.len(), 3, "{file}: {expected:?}");
        expected.retain(|id| !id.ends_with("--gfx1030"));
        assert_eq!(entries(file), expected, "{file}");
    }
}

#[test]
fn compresses_a_clang_23_program_and_back() {
    let dir = tempfile::tempdir().unwrap();
    let samples = llvm23_samples();
    let program = samples.join("hip-rdc-app");
    let compressed = dir.path().join("compressed");
    let restored = dir.path().join("restored");
    succeed(
        offload()
            .args(["compress", "--output"])
            .arg(&compressed)
            .arg(&program),
    );
    succeed(
        offload()
            .args(["decompress", "--output"])
            .arg(&restored)
            .arg(&compressed),
    );
    let listed = listing(dir.path(), &["compressed"]);
    assert_eq!(listed.matches("(compressed)").count(), 3, "{listed}");
    // Every code object comes back whole, from the compressed and the restored program.
    for (name, file) in [("c", &compressed), ("r", &restored), ("o", &program)] {
        let out = dir.path().join(name);
        succeed(
            offload()
                .args(["extract", "-q", "--arch", "gfx1030", "-o"])
                .arg(&out)
                .arg(file),
        );
    }
    let only = |name: &str| {
        let mut files: Vec<_> = fs::read_dir(dir.path().join(name))
            .unwrap()
            .map(|e| fs::read(e.unwrap().path()).unwrap())
            .collect();
        files.sort();
        files
    };
    let original = only("o");
    assert_eq!(original.len(), 1);
    assert_eq!(only("c"), original);
    assert_eq!(only("r"), original);
    let status = Command::new(&restored).status().unwrap();
    assert!(status.success());
}

#[test]
fn reads_cuda_objects_of_clang_23() {
    let dir = tempfile::tempdir().unwrap();
    let samples = llvm23_samples();
    // Neither object has anything but sm_80: stripping it away is refused.
    let (code, _, err) = text_output(
        offload()
            .args(["strip", "--keep", "sm_90", "--output"])
            .arg(dir.path().join("x.o"))
            .arg(samples.join("cuda.o")),
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("this would remove every device image (1)"),
        "{err}"
    );
    for file in ["cuda.o", "cuda-rdc.o"] {
        let out = dir.path().join(file);
        succeed(
            offload()
                .args(["extract", "-q", "--arch", "sm_80", "-o"])
                .arg(&out)
                .arg(samples.join(file)),
        );
    }
    let one = |name: &str| {
        let files: Vec<_> = fs::read_dir(dir.path().join(name))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{name}: {files:?}");
        fs::read(&files[0]).unwrap()
    };
    let cubin = one("cuda.o");
    assert_eq!(&cubin[..4], b"\x7fELF");
    // cuobjdump finds the same cubin in the object.
    if let Some(tool) = cuda::cuobjdump() {
        let work = tempfile::tempdir().unwrap();
        let status = Command::new(tool)
            .current_dir(work.path())
            .args(["-xelf", "all"])
            .arg(samples.join("cuda.o"))
            .status()
            .unwrap();
        assert!(status.success());
        let theirs: Vec<_> = fs::read_dir(work.path())
            .unwrap()
            .map(|e| fs::read(e.unwrap().path()).unwrap())
            .collect();
        assert_eq!(theirs, [cubin]);
    }
    // llvm-offload-binary-23 unpacks the -fgpu-rdc object's image to the same bytes.
    let rdc = one("cuda-rdc.o");
    let Some(sid) = sid::llvm23() else {
        return;
    };
    let work = sid.work_dir();
    fs::copy(samples.join("cuda-rdc.o"), work.path().join("cuda-rdc.o")).unwrap();
    let out = sid.run(
        &work,
        "llvm-offload-binary-23",
        &["cuda-rdc.o", "--image=file=image,arch=sm_80"],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(fs::read(work.path().join("image")).unwrap(), rdc);
}

/// The 29 processors of `samples/llvm23/list-30-entries.txt`, bundled after the host.
const PROCESSORS: &str = "gfx900 gfx902 gfx904 gfx906 gfx908 gfx909 gfx90a gfx90c gfx942 gfx950 \
    gfx1010 gfx1011 gfx1012 gfx1013 gfx1030 gfx1031 gfx1032 gfx1033 gfx1034 gfx1035 gfx1036 \
    gfx1100 gfx1101 gfx1102 gfx1103 gfx1150 gfx1151 gfx1200 gfx1201";

/// Bundles the host and one small code object per processor in `dir` with `bundler` run there
/// (ours or LLVM 23's in the sid root), as `b30.bundle`; the arguments.
fn thirty_entries(dir: &Path) -> Vec<String> {
    let mut targets = String::from("-targets=host-x86_64-unknown-linux-gnu");
    let mut args = vec!["-type=o".to_owned(), "-input=/dev/null".to_owned()];
    for p in PROCESSORS.split_whitespace() {
        fs::write(dir.join(format!("{p}.co")), format!("{p}\n")).unwrap();
        targets.push_str(&format!(",hipv4-amdgcn-amd-amdhsa--{p}"));
        args.push(format!("-input={p}.co"));
    }
    args.push(targets);
    args.push("-output=b30.bundle".to_owned());
    args
}

#[test]
fn the_bundler_as_23_lists_many_entries_in_llvm_23s_order() {
    let dir = tempfile::tempdir().unwrap();
    let args = thirty_entries(dir.path());
    let bundler = |args: &[&str]| {
        let out = succeed(
            offload()
                .env("OFFLOAD_LLVM_VERSION", "23")
                .current_dir(dir.path())
                .arg("bundler")
                .args(args),
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    bundler(&args);
    let listed = bundler(&["-list", "-type=o", "-input=b30.bundle"]);
    let golden = fs::read_to_string(llvm23_samples().join("list-30-entries.txt")).unwrap();
    assert_eq!(listed, golden);
    // LLVM 22's map probes otherwise, and lists them in another order.
    let out = succeed(
        offload()
            .env("OFFLOAD_LLVM_VERSION", "22")
            .current_dir(dir.path())
            .args(["bundler", "-list", "-type=o", "-input=b30.bundle"]),
    );
    assert_ne!(String::from_utf8(out.stdout).unwrap(), golden);
    let Some(sid) = sid::llvm23() else {
        return;
    };
    let work = sid.work_dir();
    thirty_entries(work.path());
    let out = sid.run(&work, "clang-offload-bundler-23", &args);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        fs::read(work.path().join("b30.bundle")).unwrap(),
        fs::read(dir.path().join("b30.bundle")).unwrap()
    );
    let out = sid.run(
        &work,
        "clang-offload-bundler-23",
        &["-list", "-type=o", "-input=b30.bundle"],
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), golden);
}
