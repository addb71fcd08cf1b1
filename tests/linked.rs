//! `offload ls` and `offload extract` on finished programs, shared libraries, COFF, PE and
//! Mach-O files made by clang-19 and linkers (samples/linked/): merged `.hip_fatbin` sections
//! holding several bundles with padding between them, one compressed; OpenMP images in a
//! linked `.llvm.offloading`; containers in containers; CUDA fat binaries.

use std::process::Command;

use crate::util;
use crate::util::{offload, samples_dir};
use serde_json::Value;

fn ls(file: &str) -> Vec<Value> {
    let path = samples_dir().join("linked").join(file);
    let out = offload()
        .args(["ls", "--json"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{file}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `arch` (or `-` for host entries), with `~` after compressed ones, per image.
fn summary(images: &[Value]) -> Vec<String> {
    images
        .iter()
        .map(|i| {
            let arch = i["arch"].as_str().unwrap();
            let arch = if arch.is_empty() { "-" } else { arch };
            let z = if i["compressed"] == true { "~" } else { "" };
            format!("{arch}{z}")
        })
        .collect()
}

#[test]
fn every_container_gives_its_images_in_file_order() {
    let cases: &[(&str, &[&str])] = &[
        (
            "hip-app",
            &[
                "-",
                "gfx906",
                "gfx90a",
                "-",
                "gfx90a:xnack+",
                "gfx90a:xnack-",
                "-~",
                "gfx906~",
                "gfx90a~",
            ],
        ),
        ("libhip.so", &["-", "gfx906", "gfx90a", "-~", "gfx90a~"]),
        ("hip-rdc-app", &["-", "gfx906", "gfx90a"]),
        ("omp-app", &["gfx90a", "gfx906"]),
        ("aarch64-kernel.o", &["-", "gfx90a"]),
        ("i386-kernel.o", &["-", "gfx90a"]),
        ("kernel-msvc.obj", &["-", "gfx906"]),
        ("omp-msvc.obj", &["gfx906"]),
        ("hip-app.exe", &["-", "gfx906", "gfx90a", "-~", "gfx90a~"]),
        ("macho-offload.o", &["gfx90a"]),
        ("macho-universal", &["gfx906", "gfx90a"]),
        ("nested.a", &["gfx906", "gfx90a", "-", "gfx906", "gfx90a"]),
        (
            "bundle-in-binary.bin",
            &["-", "gfx906", "gfx90a", "-~", "gfx906~", "gfx90a~"],
        ),
        ("cuda-fatbin.o", &["compute_80"]),
        ("cuda.fatbin", &["compute_80"]),
    ];
    for (file, expected) in cases {
        assert_eq!(summary(&ls(file)), *expected, "{file}");
    }
}

#[test]
fn places_are_named_and_offsets_point_at_the_code() {
    let app = ls("hip-app");
    let bytes = std::fs::read(samples_dir().join("linked/hip-app")).unwrap();
    for image in &app {
        assert_eq!(image["section"], ".hip_fatbin");
        assert_eq!(
            image["offload_kind"],
            if image["arch"] == "" { "host" } else { "hip" }
        );
        if image["compressed"] == true {
            assert_eq!(image["offset"], Value::Null);
        } else if image["size"].as_u64().unwrap() > 0 {
            let at = image["offset"].as_u64().unwrap() as usize;
            assert!(bytes[at..].starts_with(b"\x7fELF"), "{image}");
        }
    }
    // The second bundle starts on the next 4096 boundary after the padding.
    assert_eq!(app[4]["offset"], 0x6000);
    let exe = ls("hip-app.exe");
    assert_eq!(exe[1]["section"], ".hip_fat");
    let nested = ls("nested.a");
    assert_eq!(nested[0]["member"], "omp-openmp.o");
    assert_eq!(nested[0]["section"], ".llvm.offloading");
    assert_eq!(nested[2]["member"], "hip-a.o");
    let universal = ls("macho-universal");
    assert_eq!(universal[0]["section"], "__offloading");
    let cuda = ls("cuda-fatbin.o");
    assert_eq!(cuda[0]["offload_kind"], "cuda");
    assert_eq!(cuda[0]["image_kind"], "ptx");
    assert_eq!(cuda[0]["section"], ".nv_fatbin");
    // The PTX entry's payload, after the fat binary's 16-byte header and its own 64.
    assert_eq!(cuda[0]["size"], 0x48);
    let bytes = std::fs::read(samples_dir().join("linked/cuda-fatbin.o")).unwrap();
    let at = cuda[0]["offset"].as_u64().unwrap() as usize;
    assert_eq!(&bytes[at - 0x50..at - 0x4c], b"\x50\xed\x55\xba");
}

#[test]
fn linked_openmp_images_are_those_llvm_objdump_lists() {
    let Some(objdump) = util::tool("llvm-objdump-19") else {
        return;
    };
    let path = samples_dir().join("linked/omp-app");
    let out = Command::new(objdump)
        .arg("--offloading")
        .arg(&path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let arches: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("arch"))
        .map(str::trim)
        .collect();
    let ours: Vec<String> = ls("omp-app")
        .iter()
        .map(|i| i["arch"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ours, arches);
}

#[test]
fn extracting_from_a_program_takes_plain_and_compressed_bundles() {
    let dir = tempfile::tempdir().unwrap();
    let out = offload()
        .args(["extract", "--arch", "gfx90a", "-o"])
        .arg(dir.path())
        .arg(samples_dir().join("linked/hip-app"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "hip-app-hipv4-amdgcn-amd-amdhsa--gfx90a-2.co",
            "hip-app-hipv4-amdgcn-amd-amdhsa--gfx90a.co",
            "hip-app-hipv4-amdgcn-amd-amdhsa--gfx90a_xnack+.co",
            "hip-app-hipv4-amdgcn-amd-amdhsa--gfx90a_xnack-.co",
        ]
    );
    for name in names {
        let code = std::fs::read(dir.path().join(&name)).unwrap();
        assert!(code.starts_with(b"\x7fELF"), "{name}");
        // AMDGPU code objects: ELF machine 224.
        assert_eq!(u16::from_le_bytes([code[18], code[19]]), 224, "{name}");
    }
}

#[test]
fn a_damaged_bundle_in_a_program_is_reported_with_its_section() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(samples_dir().join("linked/hip-app")).unwrap();
    // The first bundle of .hip_fatbin (at 0x1000) claims 2^40 entries.
    bytes[0x1000 + 24..0x1000 + 32].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let damaged = dir.path().join("hip-app");
    std::fs::write(&damaged, &bytes).unwrap();
    let out = offload()
        .args(["ls", "--json"])
        .arg(&damaged)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("section '.hip_fatbin': offset 0x1018"),
        "{err}"
    );
    let images: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        summary(&images),
        [
            "-",
            "gfx90a:xnack+",
            "gfx90a:xnack-",
            "-~",
            "gfx906~",
            "gfx90a~"
        ]
    );
}
