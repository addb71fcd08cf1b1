//! Fat objects written by `offload bundler -type=o` stay valid host objects: they link, the
//! program runs, the linker drops the device sections from programs and keeps them in partial
//! links, and unbundling gives back every input.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util;
use crate::util::native::c_compiler;
use crate::util::{bundler, samples_dir, succeed};
use object::{Object, ObjectSection};

const GFX906: &str = "hipv4-amdgcn-amd-amdhsa--gfx906";
const GFX90A: &str = "hipv4-amdgcn-amd-amdhsa--gfx90a";

fn bundle_sample(dir: &Path) -> PathBuf {
    let s = samples_dir();
    let fat = dir.join("fat.o");
    succeed(bundler().args([
        "-type=o".into(),
        format!("-targets=host-x86_64-unknown-linux-gnu,{GFX906},{GFX90A}"),
        format!("-input={}", s.join("elf/c-x86_64-linux-gnu.o").display()),
        format!("-input={}", s.join("dev/vadd-gfx906.hsaco").display()),
        format!("-input={}", s.join("dev/vadd-gfx90a.hsaco").display()),
        format!("-output={}", fat.display()),
    ]));
    fat
}

fn bundle_section_names(data: &[u8]) -> Vec<String> {
    object::File::parse(data)
        .unwrap()
        .sections()
        .filter_map(|s| s.name().ok().map(str::to_string))
        .filter(|n| n.starts_with("__CLANG_OFFLOAD_BUNDLE__"))
        .collect()
}

#[test]
fn a_fat_object_links_and_runs_without_its_device_sections() {
    let Some(cc) = c_compiler() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let fat = bundle_sample(dir.path());
    let exe = dir.path().join("program");
    succeed(Command::new(cc).arg(&fat).arg("-o").arg(&exe));
    // The sample's main returns bump(2) > 3, which is 1.
    let run = Command::new(&exe).status().unwrap();
    assert_eq!(run.code(), Some(1));
    let program = std::fs::read(&exe).unwrap();
    assert_eq!(bundle_section_names(&program), Vec::<String>::new());
}

#[test]
fn a_partial_link_keeps_the_bundle_and_llvm_reads_ours() {
    let dir = tempfile::tempdir().unwrap();
    let fat = bundle_sample(dir.path());
    let names = bundle_section_names(&std::fs::read(&fat).unwrap());
    assert_eq!(
        names,
        [
            "__CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu-".to_string(),
            format!("__CLANG_OFFLOAD_BUNDLE__{GFX906}"),
            format!("__CLANG_OFFLOAD_BUNDLE__{GFX90A}"),
        ]
    );
    if let Some(ld) = util::tool("ld") {
        let partial = dir.path().join("partial.o");
        succeed(Command::new(ld).arg("-r").arg(&fat).arg("-o").arg(&partial));
        assert_eq!(
            bundle_section_names(&std::fs::read(&partial).unwrap()),
            names
        );
    }
    let Some(llvm) = util::tool("clang-offload-bundler-19") else {
        return;
    };
    let list = Command::new(llvm)
        .args(["-list", "-type=o"])
        .arg(format!("-input={}", fat.display()))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&list.stdout),
        format!("host-x86_64-unknown-linux-gnu-\n{GFX906}\n{GFX90A}\n")
    );
}

#[test]
fn unbundling_our_fat_object_gives_back_every_input() {
    let s = samples_dir();
    let dir = tempfile::tempdir().unwrap();
    let fat = bundle_sample(dir.path());
    let (host, a, b) = (
        dir.path().join("host.o"),
        dir.path().join("a.co"),
        dir.path().join("b.co"),
    );
    succeed(bundler().args([
        "-unbundle".into(),
        "-type=o".into(),
        format!("-targets={GFX90A},host-x86_64-unknown-linux-gnu,{GFX906}"),
        format!("-input={}", fat.display()),
        format!("-output={}", b.display()),
        format!("-output={}", host.display()),
        format!("-output={}", a.display()),
    ]));
    assert_eq!(
        std::fs::read(&a).unwrap(),
        std::fs::read(s.join("dev/vadd-gfx906.hsaco")).unwrap()
    );
    assert_eq!(
        std::fs::read(&b).unwrap(),
        std::fs::read(s.join("dev/vadd-gfx90a.hsaco")).unwrap()
    );
    // The host comes back without the bundle, with the original's sections and contents.
    let original = std::fs::read(s.join("elf/c-x86_64-linux-gnu.o")).unwrap();
    let host = std::fs::read(&host).unwrap();
    assert!(bundle_section_names(&host).is_empty());
    let contents = |data: &[u8]| -> Vec<(String, Vec<u8>)> {
        let file = object::File::parse(data).unwrap();
        file.sections()
            .map(|s| (s.name().unwrap().to_string(), s.data().unwrap().to_vec()))
            .collect()
    };
    assert_eq!(contents(&host), contents(&original));
}

#[test]
fn an_aarch64_fat_object_links_into_a_program() {
    let Some(lld) = util::tool("ld.lld-19") else {
        return;
    };
    let s = samples_dir();
    let dir = tempfile::tempdir().unwrap();
    let fat = dir.path().join("fat.o");
    succeed(bundler().args([
        "-type=o".into(),
        format!("-targets=host-aarch64-unknown-linux-gnu,{GFX90A}"),
        format!("-input={}", s.join("elf/c-aarch64-linux-gnu.o").display()),
        format!("-input={}", s.join("dev/vadd-gfx90a.hsaco").display()),
        format!("-output={}", fat.display()),
    ]));
    let library = dir.path().join("program");
    succeed(
        Command::new(lld)
            .args(["-static", "-e", "main"])
            .arg(&fat)
            .arg("-o")
            .arg(&library),
    );
    let data = std::fs::read(&library).unwrap();
    let file = object::File::parse(&*data).unwrap();
    assert_eq!(file.architecture(), object::Architecture::Aarch64);
    assert!(bundle_section_names(&data).is_empty());
    assert!(file.symbols().any(|s| {
        use object::ObjectSymbol;
        s.name() == Ok("bump")
    }));
}

#[test]
fn a_coff_fat_object_links_into_a_dll_without_its_device_sections() {
    let Some(lld_link) = util::tool("lld-link-19") else {
        return;
    };
    let s = samples_dir();
    let dir = tempfile::tempdir().unwrap();
    let fat = dir.path().join("fat.obj");
    succeed(bundler().args([
        "-type=o".into(),
        format!("-targets=host-x86_64-pc-windows-msvc,{GFX906}"),
        format!(
            "-input={}",
            s.join("coff/weak-and-file-symbols-x86_64-w64-windows-gnu.obj")
                .display()
        ),
        format!("-input={}", s.join("dev/vadd-gfx906.hsaco").display()),
        format!("-output={}", fat.display()),
    ]));
    assert_eq!(
        bundle_section_names(&std::fs::read(&fat).unwrap()),
        [
            "__CLANG_OFFLOAD_BUNDLE__host-x86_64-pc-windows-msvc-".to_string(),
            format!("__CLANG_OFFLOAD_BUNDLE__{GFX906}"),
        ]
    );
    let dll = dir.path().join("fat.dll");
    succeed(
        Command::new(lld_link)
            .args(["/dll", "/noentry", "/nodefaultlib", "/force:unresolved"])
            .arg(format!("/out:{}", dll.display()))
            .arg(&fat),
    );
    let data = std::fs::read(&dll).unwrap();
    let file = object::File::parse(&*data).unwrap();
    assert!(file.section_by_name(".text").is_some());
    assert!(bundle_section_names(&data).is_empty());
}
