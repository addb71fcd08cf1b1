//! Generic targets and SPIR-V: `extract` and `strip` choose, per translation unit, what a
//! device loads (its native code, else a covering generic target's, else SPIR-V), checked on
//! programs clang-22 builds here, run against the stand-in HIP runtime
//! (tests/support/hip_runtime.c), which makes the same choice by the HIP runtime's own map.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util;
use crate::util::native::{c_compiler, compile_hip, run, support};
use crate::util::{offload, root, succeed};

/// A program of two translation units linked with the stand-in runtime: `kernel.hip` built
/// for gfx1100, gfx11-generic and gfx90a, `vadd.hip` only for gfx11-generic and
/// gfx90a:xnack-. A gfx1100 device loads the first one's native code and the second one's
/// generic code.
fn mixed_program(dir: &Path) -> Option<PathBuf> {
    let clang = util::tool("clang-22")?;
    let cc = c_compiler()?;
    let first = compile_hip(
        &clang,
        dir,
        "kernel.hip",
        &["gfx1100", "gfx11-generic", "gfx90a"],
        &[],
    );
    let second = compile_hip(
        &clang,
        dir,
        "vadd.hip",
        &["gfx11-generic", "gfx90a:xnack-"],
        &[],
    );
    let program = dir.join("mixed");
    succeed(
        Command::new(cc)
            .arg(support("hip_runtime.c"))
            .arg(&first)
            .arg(&second)
            .arg("-o")
            .arg(&program),
    );
    Some(program)
}

/// What the stand-in runtime says a device `device` loads from each bundle of `program`.
fn loaded(program: &Path, device: &str) -> Vec<String> {
    let out = Command::new(program)
        .env("HIP_STANDIN_DEVICE", device)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", program.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with(&format!("  {device} ")))
        .map(|l| l.trim().to_string())
        .collect()
}

/// The bytes `offload extract FILE --arch ARCH` writes, by the entry ID that follows the
/// file's name in the output names.
fn code_objects(file: &Path, arch: &str, dir: &Path) -> Vec<(String, Vec<u8>)> {
    let stem = file.file_name().unwrap().to_string_lossy().into_owned();
    extracted(file, arch, dir)
        .into_iter()
        .map(|(name, bytes)| (name[stem.len()..].to_string(), bytes))
        .collect()
}

/// The files `offload extract FILE --arch ARCH` writes, by name, with their bytes.
fn extracted(file: &Path, arch: &str, dir: &Path) -> Vec<(String, Vec<u8>)> {
    succeed(
        offload()
            .args(["extract", "-q", "--arch", arch, "-o"])
            .arg(dir)
            .arg(file),
    );
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    files.sort();
    files
}

#[test]
fn strip_keeps_the_generic_code_a_kept_device_loads() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = mixed_program(dir.path()) else {
        return;
    };
    let before = loaded(&program, "gfx1100");
    assert_eq!(
        before,
        [
            "gfx1100 loads hipv4-amdgcn-amd-amdhsa--gfx1100",
            "gfx1100 loads hipv4-amdgcn-amd-amdhsa--gfx11-generic"
        ]
    );
    let stripped = dir.path().join("stripped");
    succeed(
        offload()
            .arg("strip")
            .arg(&program)
            .args(["--keep", "gfx1100", "-o"])
            .arg(&stripped),
    );
    assert_eq!(loaded(&stripped, "gfx1100"), before);
    // Only what a gfx1100 loads is left: one entry beside the host's in each bundle.
    let listing = String::from_utf8(run(&stripped, None).into_bytes()).unwrap();
    assert_eq!(listing.matches("bundle, 2 entries").count(), 2, "{listing}");
    // The code objects are those of the program before, byte for byte.
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let kept = code_objects(&stripped, "gfx1100", &a);
    let names: Vec<&str> = kept.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "-hipv4-amdgcn-amd-amdhsa--gfx11-generic.co",
            "-hipv4-amdgcn-amd-amdhsa--gfx1100.co"
        ]
    );
    assert!(
        kept == code_objects(&program, "gfx1100", &b),
        "the code objects changed"
    );

    // A gfx1101 finds generic code in both units, and keeps it.
    let generic = dir.path().join("generic");
    succeed(
        offload()
            .arg("strip")
            .arg(&program)
            .args(["--keep", "gfx1101", "-o"])
            .arg(&generic),
    );
    assert_eq!(
        loaded(&generic, "gfx1101"),
        [
            "gfx1101 loads hipv4-amdgcn-amd-amdhsa--gfx11-generic",
            "gfx1101 loads hipv4-amdgcn-amd-amdhsa--gfx11-generic"
        ]
    );
    assert_eq!(loaded(&generic, "gfx1101"), loaded(&program, "gfx1101"));
}

#[test]
fn remove_takes_only_the_code_built_for_what_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = mixed_program(dir.path()) else {
        return;
    };
    let removed = dir.path().join("removed");
    succeed(
        offload()
            .arg("strip")
            .arg(&program)
            .args(["--remove", "gfx1100", "-o"])
            .arg(&removed),
    );
    // The gfx1100 loses its native code and falls back to the generic code, still there.
    assert_eq!(
        loaded(&removed, "gfx1100"),
        [
            "gfx1100 loads hipv4-amdgcn-amd-amdhsa--gfx11-generic",
            "gfx1100 loads hipv4-amdgcn-amd-amdhsa--gfx11-generic"
        ]
    );
    let no_generic = dir.path().join("no-generic");
    succeed(
        offload()
            .arg("strip")
            .arg(&program)
            .args(["--remove", "gfx11-generic", "-o"])
            .arg(&no_generic),
    );
    assert_eq!(
        loaded(&no_generic, "gfx1101"),
        ["gfx1101 finds no code", "gfx1101 finds no code"]
    );
    assert_eq!(
        loaded(&no_generic, "gfx90a:xnack-"),
        loaded(&program, "gfx90a:xnack-")
    );
}

#[test]
fn extract_takes_native_code_else_generic_and_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let Some(program) = mixed_program(dir.path()) else {
        return;
    };
    let out = succeed(
        offload()
            .args(["extract", "--arch", "gfx1100", "-o"])
            .arg(dir.path().join("x"))
            .arg(&program),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0].contains("--gfx1100.co\thip gfx1100 "), "{text}");
    assert!(!lines[0].contains("generic target code"), "{text}");
    assert!(
        lines[1].contains("--gfx11-generic.co\thip gfx11-generic ")
            && lines[1].ends_with(" bytes (generic target code, for gfx1100)"),
        "{text}"
    );
    // Asking for the generic target gives the generic images only, one per unit.
    let generic = extracted(&program, "gfx11-generic", &dir.path().join("g"));
    let names: Vec<&str> = generic.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "mixed-hipv4-amdgcn-amd-amdhsa--gfx11-generic-2.co",
            "mixed-hipv4-amdgcn-amd-amdhsa--gfx11-generic.co"
        ]
    );
    // An xnack-on gfx90a finds nothing in the second unit, which is built for xnack off.
    let xnack = extracted(&program, "gfx90a:xnack+", &dir.path().join("n"));
    assert_eq!(xnack.len(), 1);
    assert_eq!(xnack[0].0, "mixed-hipv4-amdgcn-amd-amdhsa--gfx90a.co");
}

#[test]
fn spirv_is_what_a_device_without_native_or_generic_code_loads() {
    let dir = tempfile::tempdir().unwrap();
    let Some(clang) = util::tool("clang-22") else {
        return;
    };
    let object = compile_hip(
        &clang,
        dir.path(),
        "kernel.hip",
        &["amdgcnspirv", "gfx1100"],
        &["-use-spirv-backend"],
    );
    let out = succeed(
        offload()
            .args(["extract", "--arch", "gfx1030", "-o"])
            .arg(dir.path().join("s"))
            .arg(&object),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("--amdgcnspirv.spv\thip amdgcnspirv ")
            && text
                .trim_end()
                .ends_with("bytes (SPIR-V, compiled for gfx1030 when loaded)"),
        "{text}"
    );
    let native = extracted(&object, "gfx1100", &dir.path().join("n"));
    assert_eq!(native.len(), 1);
    assert!(native[0].0.ends_with("--gfx1100.co"), "{}", native[0].0);
    // Stripping to gfx1030 keeps the SPIR-V and drops the gfx1100 code.
    let stripped = dir.path().join("stripped.o");
    succeed(
        offload()
            .arg("strip")
            .arg(&object)
            .args(["--keep", "gfx1030", "-o"])
            .arg(&stripped),
    );
    let listing = String::from_utf8(succeed(offload().arg("ls").arg(&stripped)).stdout).unwrap();
    assert!(listing.contains("amdgcnspirv"), "{listing}");
    assert!(!listing.contains("gfx1100"), "{listing}");
}

#[test]
fn the_targets_page_names_every_generic_target_of_the_table() {
    use offload::target::processor::{ProcessorKind, PROCESSORS};
    let readme = std::fs::read_to_string(root().join("docs/targets.md")).unwrap();
    for generic in PROCESSORS
        .iter()
        .filter(|p| p.kind() == ProcessorKind::Generic)
    {
        assert!(
            readme.contains(&format!("| `{}` |", generic.name)),
            "docs/targets.md's table of generic targets lacks {}",
            generic.name
        );
    }
}

#[test]
fn processors_newer_than_llvm_22_are_named_and_loaded_as_the_runtime_loads_them() {
    // Bundles written here, as clang 22 cannot: one entry each, for a processor of LLVM's
    // newer tables or its generic family.
    use offload::format::bundle;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ids = [
        ("gfx1154", "gfx11-generic"),
        ("gfx1170", "gfx11-7-generic"),
        ("gfx1171", "gfx11-7-generic"),
        ("gfx1172", "gfx11-7-generic"),
        ("gfx1251", "gfx12-5-generic"),
        ("gfx1310", "gfx13-generic"),
    ];
    let write = |arch: &str| {
        let entry = format!("hipv4-amdgcn-amd-amdhsa--{arch}");
        let code = format!("\x7fELF code for {arch}");
        let bytes = bundle::to_vec(
            &[
                ("host-x86_64-unknown-linux-gnu-", &[][..]),
                (&entry, code.as_bytes()),
            ],
            4096,
        );
        std::fs::write(d.join(format!("{arch}.hipfb")), bytes).unwrap();
    };
    for (processor, generic) in ids {
        write(processor);
        write(generic);
        // `ls` names the processor as a known one.
        let (_, out, _) = crate::util::text_output(
            offload()
                .current_dir(d)
                .args(["ls", &format!("{processor}.hipfb")]),
        );
        assert!(out.contains(&format!(" {processor} ")), "{out}");
        assert!(!out.contains("unknown processor"), "{out}");
        // A device of the processor loads its native code...
        let native = d.join(format!("native-{processor}"));
        let (code, out, err) = crate::util::text_output(
            offload()
                .current_dir(d)
                .args([
                    "extract",
                    &format!("{processor}.hipfb"),
                    "--device",
                    processor,
                ])
                .arg("-o")
                .arg(&native),
        );
        assert_eq!((code, err.as_str()), (0, ""), "{processor}");
        assert!(out.contains("loads it natively"), "{out}");
        // ... but not its generic family's: the HIP runtime's map has no entry for it yet.
        let (code, _, err) = crate::util::text_output(
            offload()
                .current_dir(d)
                .args([
                    "extract",
                    &format!("{generic}.hipfb"),
                    "--device",
                    processor,
                ])
                .args(["-o", "never"]),
        );
        assert_eq!(code, 1, "{processor}");
        assert!(
            err.contains(&format!("no device image for {processor}")),
            "{err}"
        );
        // `--arch` (LLVM's coverage) takes the generic code all the same.
        let (code, _, err) = crate::util::text_output(
            offload()
                .current_dir(d)
                .args(["extract", &format!("{generic}.hipfb"), "--arch", processor])
                .arg("-o")
                .arg(d.join(format!("generic-{processor}"))),
        );
        assert_eq!((code, err.as_str()), (0, ""), "{processor}");
    }
}
