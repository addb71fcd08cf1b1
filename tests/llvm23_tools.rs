//! Our tools standing in for LLVM 23's: llvm-offload-wrapper-23's modules, clang-offload-bundler-23's
//! bytes and messages, and clang-23 running ours through `-B DIR`. LLVM 23 runs live in the sid
//! root (`tests/util/sid.rs`); the goldens of `samples/llvm23` (made by its `make.sh` with
//! LLVM 23.1.4) are checked without it.

use crate::util::sid::{self, Sid, SidDir};
use crate::util::{self, OFFLOAD};
use std::path::{Path, PathBuf};
use std::process::Output;

const HOST: &str = "host-x86_64-unknown-linux-gnu";
const DEVICES: &str = "hipv4-amdgcn-amd-amdhsa--gfx906,hipv4-amdgcn-amd-amdhsa--gfx90a";

fn golden(name: &str) -> PathBuf {
    util::samples_dir().join("llvm23").join(name)
}

fn dev(name: &str) -> PathBuf {
    util::samples_dir().join("dev").join(name)
}

/// Our program in `dir` (outside the root), with links of the LLVM names it stands in for,
/// versioned and not. The links are relative, so they work inside the root as well.
fn install_ours(dir: &Path) {
    let program = dir.join("offload");
    if std::fs::hard_link(OFFLOAD, &program).is_err() {
        std::fs::copy(OFFLOAD, &program).unwrap();
    }
    for tool in [
        "clang-offload-bundler",
        "llvm-offload-binary",
        "llvm-offload-wrapper",
    ] {
        for name in [tool.to_string(), format!("{tool}-22"), format!("{tool}-23")] {
            std::os::unix::fs::symlink("offload", dir.join(name)).unwrap();
        }
    }
}

/// A work folder in the root holding our tools in `bin/`.
fn sid_dir_with_ours(sid: &Sid) -> SidDir {
    let dir = sid.work_dir();
    std::fs::create_dir(dir.path().join("bin")).unwrap();
    install_ours(&dir.path().join("bin"));
    dir
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn succeeded(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// Runs `command` in the root from `dir` with `args`; the whole output.
fn run(sid: &Sid, dir: &SidDir, command: &str, args: &[&str]) -> Output {
    let out = sid.run(dir, command, args);
    succeeded(command, &out);
    out
}

/// The globals of an IR text, each as its name and the attributes after its initializer
/// (section, sanitizers, alignment), the way both modules agree on whatever their type
/// names.
fn global_shapes(ir: &str) -> Vec<(String, Vec<String>)> {
    let attribute = |piece: &&&str| {
        ["section ", "align ", "no_sanitize"]
            .iter()
            .any(|a| piece.starts_with(a))
    };
    ir.lines()
        .filter(|l| l.starts_with('@'))
        .map(|l| {
            let name = l.split(" = ").next().unwrap().to_string();
            let pieces: Vec<&str> = l.split(", ").collect();
            let mut tail: Vec<String> = pieces
                .iter()
                .rev()
                .take_while(attribute)
                .map(|p| p.to_string())
                .collect();
            tail.reverse();
            (name, tail)
        })
        .collect()
}

/// The lines of an IR text after its `ModuleID`, blank lines left out.
fn module_lines(ir: &str) -> Vec<&str> {
    ir.lines().skip(1).filter(|l| !l.is_empty()).collect()
}

/// llvm-dis-23 of LLVM's and of our module (`tool` run with `args`), from `dir`.
fn both_modules(sid: &Sid, dir: &SidDir, args: &[&str]) -> (String, String) {
    let mut texts = Vec::new();
    for tool in ["llvm-offload-wrapper-23", "bin/llvm-offload-wrapper-23"] {
        let mut all = args.to_vec();
        all.extend(["-o", "w.bc", "image.bin"]);
        run(sid, dir, tool, &all);
        let out = run(sid, dir, "llvm-dis-23", &["w.bc", "-o", "-"]);
        texts.push(text(&out.stdout));
    }
    let ours = texts.pop().unwrap();
    (texts.pop().unwrap(), ours)
}

#[test]
fn the_wrapper_as_23_writes_llvm_23s_globals_and_sycl_module() {
    let Some(sid) = sid::llvm23() else {
        return;
    };
    let dir = sid_dir_with_ours(&sid);
    dir.copy_in(&golden("image.bin"), "image.bin");
    for args in [
        &["--kind=hip"][..],
        &["--kind=cuda"],
        &["--kind=openmp"],
        &["--kind=openmp", "--relocatable"],
        &["--kind=hip", "--triple=x86_64-pc-windows-msvc"],
    ] {
        let (llvm, ours) = both_modules(&sid, &dir, args);
        assert_eq!(global_shapes(&ours), global_shapes(&llvm), "{args:?}");
    }
    let (llvm, ours) = both_modules(&sid, &dir, &["--kind=sycl"]);
    assert_eq!(module_lines(&ours), module_lines(&llvm));
    // LLVM 22's module stays as it was: no sanitizer attributes.
    run(
        &sid,
        &dir,
        "bin/llvm-offload-wrapper-22",
        &["--kind=hip", "-o", "w22.bc", "image.bin"],
    );
    let out = run(&sid, &dir, "llvm-dis-23", &["w22.bc", "-o", "-"]);
    let shapes = global_shapes(&text(&out.stdout));
    let wrapper = shapes
        .iter()
        .find(|(n, _)| n == "@.fatbin_wrapper")
        .unwrap();
    assert_eq!(wrapper.1, ["section \".hipFatBinSegment\"", "align 8"]);
}

#[test]
fn the_wrapper_as_23_prints_llvm_23s_help_and_messages() {
    let Some(sid) = sid::llvm23() else {
        return;
    };
    let dir = sid_dir_with_ours(&sid);
    dir.copy_in(&golden("image.bin"), "image.bin");
    let cases: [&[&str]; 5] = [
        &["--help"],
        &[],
        &["--kind=foo", "image.bin"],
        &["--kind=hip", "-o", "x.bc", "missing.bin"],
        &["--kind=cuda", "-o", "x.bc", "image.bin", "image.bin"],
    ];
    for args in cases {
        let llvm = sid.run(&dir, "llvm-offload-wrapper-23", args);
        let ours = sid.run(&dir, "bin/llvm-offload-wrapper-23", args);
        let tidy =
            |b: &[u8]| text(b).replace("bin/llvm-offload-wrapper-23", "llvm-offload-wrapper-23");
        assert_eq!(ours.status.code(), llvm.status.code(), "{args:?}");
        assert_eq!(tidy(&ours.stdout), tidy(&llvm.stdout), "{args:?}");
        assert_eq!(tidy(&ours.stderr), tidy(&llvm.stderr), "{args:?}");
    }
}

/// Our wrapper named `name`, run on the sample image with `args`, writing IR text.
fn our_wrapper_ir(name: &str, args: &[&str]) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    install_ours(dir.path());
    let mut command = std::process::Command::new(dir.path().join(name));
    command
        .args(args)
        .args(["--filetype=ll", "-o", "w.ll"])
        .arg(golden("image.bin"))
        .current_dir(dir.path())
        .env_remove("OFFLOAD_LLVM_VERSION")
        .env_remove("OFFLOAD_LOG");
    let (code, _, err) = util::text_output(&mut command);
    let ir = std::fs::read_to_string(dir.path().join("w.ll")).unwrap_or_default();
    (code, ir, err)
}

#[test]
fn the_wrapper_as_23_matches_the_golden_modules() {
    for (name, args) in [
        ("wrapper-hip.ll", &["--kind=hip"][..]),
        ("wrapper-cuda.ll", &["--kind=cuda"]),
        ("wrapper-openmp.ll", &["--kind=openmp"]),
        (
            "wrapper-openmp-relocatable.ll",
            &["--kind=openmp", "--relocatable"],
        ),
    ] {
        let expected = std::fs::read_to_string(golden(name)).unwrap();
        for tool in ["llvm-offload-wrapper-23", "llvm-offload-wrapper"] {
            let (code, ours, err) = our_wrapper_ir(tool, args);
            assert_eq!(code, 0, "{err}");
            assert_eq!(
                global_shapes(&ours),
                global_shapes(&expected),
                "{tool} {name}"
            );
        }
    }
    let expected = std::fs::read_to_string(golden("wrapper-sycl.ll")).unwrap();
    let (code, ours, err) = our_wrapper_ir("llvm-offload-wrapper-23", &["--kind=sycl"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(module_lines(&ours), module_lines(&expected));
}

#[test]
fn the_wrapper_as_22_keeps_22s_options_and_module() {
    let (code, _, err) = our_wrapper_ir("llvm-offload-wrapper-22", &["--kind=sycl"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("for the --kind option: Cannot find option named 'sycl'!"),
        "{err}"
    );
    let (code, _, err) = our_wrapper_ir(
        "llvm-offload-wrapper-22",
        &["--kind=openmp", "--relocatable"],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("Unknown command line argument '--relocatable'"),
        "{err}"
    );
    let (code, ir, err) = our_wrapper_ir("llvm-offload-wrapper-22", &["--kind=cuda"]);
    assert_eq!(code, 0, "{err}");
    assert!(!ir.contains("no_sanitize"), "{ir}");
    let (_, ir23, _) = our_wrapper_ir("llvm-offload-wrapper-23", &["--kind=cuda"]);
    assert!(
        ir23.contains("no_sanitize_address, no_sanitize_hwaddress"),
        "{ir23}"
    );
}

/// Our bundler named clang-offload-bundler-23 run with `args` in a folder holding the sample
/// code objects and bitcode; the bytes of `output` it wrote.
fn our_bundle(args: &[&str], output: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    install_ours(dir.path());
    for name in [
        "kernel-gfx906.hsaco",
        "kernel-gfx90a.hsaco",
        "kernel-gfx906.bc",
        "kernel-gfx90a.bc",
    ] {
        std::fs::copy(dev(name), dir.path().join(name)).unwrap();
    }
    let mut command = std::process::Command::new(dir.path().join("clang-offload-bundler-23"));
    command
        .args(args)
        .current_dir(dir.path())
        .env_remove("OFFLOAD_LLVM_VERSION")
        .env_remove("COMPRESSED_BUNDLE_FORMAT_VERSION");
    let (code, _, err) = util::text_output(&mut command);
    assert_eq!(code, 0, "{err}");
    std::fs::read(dir.path().join(output)).unwrap()
}

#[test]
fn the_bundler_as_23_writes_the_golden_bundles() {
    let targets = format!("-targets={HOST},{DEVICES}");
    let object = our_bundle(
        &[
            "-type=o",
            &targets,
            "-input=/dev/null",
            "-input=kernel-gfx906.hsaco",
            "-input=kernel-gfx90a.hsaco",
            "-output=o.bundle",
        ],
        "o.bundle",
    );
    let expected = std::fs::read(golden("bundle-o.bundle")).unwrap();
    assert!(
        object == expected,
        "{}",
        util::first_difference(&expected, &object)
    );
    let targets = format!("-targets={DEVICES}");
    let bitcode = our_bundle(
        &[
            "-type=bc",
            &targets,
            "-input=kernel-gfx906.bc",
            "-input=kernel-gfx90a.bc",
            "-output=bc.bundle",
        ],
        "bc.bundle",
    );
    let expected = std::fs::read(golden("bundle-bc.bundle")).unwrap();
    assert!(
        bitcode == expected,
        "{}",
        util::first_difference(&expected, &bitcode)
    );
}

/// Runs LLVM's bundler and ours (as `bin/clang-offload-bundler-23`) with `args`, in which
/// `OUT` names the output: each one's exit status, standard output and error (our program
/// name made LLVM's) and output bytes.
fn both_bundlers(
    sid: &Sid,
    dir: &SidDir,
    args: &[&str],
) -> [(Option<i32>, String, String, Vec<u8>); 2] {
    ["clang-offload-bundler-23", "bin/clang-offload-bundler-23"].map(|tool| {
        let output = format!("out-{}", tool.replace('/', "-"));
        let args: Vec<String> = args.iter().map(|a| a.replace("OUT", &output)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = sid.run(dir, tool, &args);
        let tidy =
            |b: &[u8]| text(b).replace("bin/clang-offload-bundler-23", "clang-offload-bundler-23");
        let bytes = std::fs::read(dir.path().join(&output)).unwrap_or_default();
        (
            out.status.code(),
            tidy(&out.stdout),
            tidy(&out.stderr),
            bytes,
        )
    })
}

#[test]
fn the_bundler_as_23_does_what_llvm_23s_does() {
    let Some(sid) = sid::llvm23() else {
        return;
    };
    let dir = sid_dir_with_ours(&sid);
    for name in [
        "kernel-gfx906.hsaco",
        "kernel-gfx90a.hsaco",
        "kernel-gfx906.bc",
        "kernel-gfx90a.bc",
    ] {
        dir.copy_in(&dev(name), name);
    }
    let all = format!("-targets={HOST},{DEVICES}");
    let devices = format!("-targets={DEVICES}");
    let objects = [
        "-input=/dev/null",
        "-input=kernel-gfx906.hsaco",
        "-input=kernel-gfx90a.hsaco",
    ];
    let object_bundle = [&["-type=o", all.as_str()][..], &objects, &["-output=OUT"]].concat();
    let compressed = [&object_bundle[..], &["--compress"]].concat();
    let bitcode = [
        "-type=bc",
        &devices,
        "-input=kernel-gfx906.bc",
        "-input=kernel-gfx90a.bc",
        "-output=OUT",
    ];
    for args in [&object_bundle[..], &compressed, &bitcode] {
        let [llvm, ours] = both_bundlers(&sid, &dir, args);
        assert_eq!(llvm.0, Some(0), "{}", llvm.2);
        assert_eq!(ours, llvm, "{args:?}");
    }
    // Listing and unbundling LLVM's bundles, compressed or not.
    for (args, name) in [(&object_bundle, "o.bundle"), (&compressed, "z.bundle")] {
        let args: Vec<String> = args.iter().map(|a| a.replace("OUT", name)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&sid, &dir, "clang-offload-bundler-23", &args);
    }
    for input in ["-input=o.bundle", "-input=z.bundle"] {
        let list = ["-type=o", "-list", input];
        let unbundle = [
            "-type=o",
            "-targets=hipv4-amdgcn-amd-amdhsa--gfx90a",
            input,
            "-output=OUT",
            "-unbundle",
        ];
        for args in [&list[..], &unbundle] {
            let [llvm, ours] = both_bundlers(&sid, &dir, args);
            assert_eq!(llvm.0, Some(0), "{}", llvm.2);
            assert_eq!(ours, llvm, "{args:?}");
        }
    }
    // Messages: a malformed target, a missing input, an unknown option.
    for args in [
        &[
            "-type=o",
            "-targets=bogus",
            "-input=kernel-gfx906.hsaco",
            "-output=OUT",
        ][..],
        &["-type=o", "-list", "-input=missing.o"],
        &["-typo=o"],
    ] {
        let [llvm, ours] = both_bundlers(&sid, &dir, args);
        assert_eq!((ours.0, &ours.2), (llvm.0, &llvm.2), "{args:?}");
    }
    // --help: LLVM's text, then the options we add after it.
    let [llvm, ours] = both_bundlers(&sid, &dir, &["--help"]);
    assert!(ours.1.starts_with(&llvm.1), "{}\n---\n{}", ours.1, llvm.1);
    let [llvm, ours] = both_bundlers(&sid, &dir, &["--version"]);
    assert!(llvm.1.contains("version 23.1.4"), "{}", llvm.1);
    assert!(ours.1.contains("compatible with LLVM 23.1.4"), "{}", ours.1);
}

/// clang-23 compiling `source` (from `samples/src`) with `args`, alone and with `-B` our tools'
/// folder: the two objects, and the log ours wrote.
fn compile_both(
    sid: &Sid,
    dir: &SidDir,
    source: &str,
    args: &[&str],
) -> (Vec<u8>, Vec<u8>, String) {
    // Without /proc in the root, LLVM's tools find each other by PATH alone.
    let path = "PATH=/usr/lib/llvm-23/bin:/usr/bin:/bin";
    let mut objects = Vec::new();
    let mut log = String::new();
    for (name, with) in [("llvm.o", &[][..]), ("ours.o", &["-B", "bin"][..])] {
        let mut all = vec![path, "OFFLOAD_LOG=offload=info", "clang-23"];
        all.extend(with);
        all.extend(args);
        all.extend(["-c", source, "-o", name]);
        let out = run(sid, dir, "env", &all);
        if name == "ours.o" {
            log = text(&out.stderr);
        }
        objects.push(std::fs::read(dir.path().join(name)).unwrap());
    }
    let ours = objects.pop().unwrap();
    (objects.pop().unwrap(), ours, log)
}

/// llvm-objdump-23 --offloading of `object` in `dir`, without its file name line.
fn offloading(sid: &Sid, dir: &SidDir, object: &[u8]) -> String {
    std::fs::write(dir.path().join("listed.o"), object).unwrap();
    let out = run(sid, dir, "llvm-objdump-23", &["--offloading", "listed.o"]);
    text(&out.stdout)
        .lines()
        .skip(2)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn clang_23_with_our_tools_makes_the_same_objects() {
    let Some(sid) = sid::llvm23() else {
        return;
    };
    let dir = sid_dir_with_ours(&sid);
    for name in ["kernel.hip", "omp.c"] {
        dir.copy_in(&util::samples_dir().join("src").join(name), name);
    }
    let hip = [
        "-x",
        "hip",
        "-nogpulib",
        "-nogpuinc",
        "--offload-arch=gfx90a",
        "-cuid=fixed",
    ];
    // The fat binary clang-linker-wrapper makes is what the object embeds: ours packs the
    // offload binary it reads.
    let whole = [
        &hip[..],
        &["--offload-compress"],
        &["--offload-arch=gfx1100"],
    ];
    for extra in [&[][..], whole[1], whole[2]] {
        let args = [&hip[..], extra].concat();
        let (llvm, ours, log) = compile_both(&sid, &dir, "kernel.hip", &args);
        assert!(
            log.contains("packing"),
            "our llvm-offload-binary did not run: {log}"
        );
        assert!(
            llvm == ours,
            "{args:?}: {}",
            util::first_difference(&llvm, &ours)
        );
    }
    // The object embeds the offload binary itself (version 2): byte for byte too.
    let rdc = [&hip[..], &["-fgpu-rdc"]].concat();
    let openmp = ["-fopenmp", "--offload-arch=gfx90a", "-nogpulib"];
    for (source, args) in [("kernel.hip", &rdc[..]), ("omp.c", &openmp[..])] {
        let (llvm, ours, log) = compile_both(&sid, &dir, source, args);
        assert!(
            log.contains("packing"),
            "our llvm-offload-binary did not run: {log}"
        );
        assert!(
            llvm == ours,
            "{args:?}: {}",
            util::first_difference(&llvm, &ours)
        );
        assert_eq!(
            offloading(&sid, &dir, &ours),
            offloading(&sid, &dir, &llvm),
            "{args:?}"
        );
    }
}
