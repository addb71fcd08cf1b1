//! `offload ls` on real files: the images llvm-objdump-19 --offloading lists, in its order,
//! with offsets that point at the image bytes; damaged files are reported and the rest listed.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util;
use crate::util::{offload, samples_dir, text_output};
use serde_json::Value;

fn ls(args: &[&Path], json: bool) -> (i32, String, String) {
    let mut command = offload();
    command.arg("ls");
    if json {
        command.arg("--json");
    }
    text_output(command.args(args))
}

fn openmp_samples() -> Vec<PathBuf> {
    let s = samples_dir().join("openmp");
    let mut files: Vec<PathBuf> = [
        "omp.o",
        "omp-lto.o",
        "saxpy.o",
        "partial.o",
        "libomp.a",
        "hip-rdc.o",
        "embedded.o",
        "device.bin",
    ]
    .iter()
    .map(|n| s.join(n))
    .collect();
    files.extend(util::devicertl());
    files
}

/// (kind, arch, triple, producer) of each image llvm-objdump prints.
fn objdump_images(objdump: &Path, file: &Path) -> Vec<[String; 4]> {
    let out = Command::new(objdump)
        .arg("--offloading")
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut images = Vec::new();
    let mut current: Vec<String> = Vec::new();
    for line in text.lines() {
        for label in ["kind", "arch", "triple", "producer"] {
            if let Some(rest) = line.strip_prefix(label) {
                if rest.starts_with(' ') || rest.is_empty() {
                    current.push(rest.trim().to_string());
                }
            }
        }
        if current.len() == 4 {
            images.push([
                current[0].clone(),
                current[1].clone(),
                current[2].clone(),
                current[3].clone(),
            ]);
            current.clear();
        }
    }
    images
}

fn objdump_kind(name: &str) -> &str {
    match name {
        "o" => "elf",
        "bc" => "llvm ir",
        "cubin" => "cubin",
        "fatbin" => "fatbinary",
        "s" => "ptx",
        _ => "<none>",
    }
}

#[test]
fn lists_what_llvm_objdump_lists_in_its_order() {
    let Some(objdump) = util::tool("llvm-objdump-19") else {
        return;
    };
    let mut checked = 0;
    for file in openmp_samples() {
        let (code, out, err) = ls(&[&file], true);
        assert_eq!(code, 0, "{}: {err}", file.display());
        let ours: Vec<Value> = serde_json::from_str(&out).unwrap();
        let ours: Vec<[String; 4]> = ours
            .iter()
            .map(|v| {
                [
                    objdump_kind(v["image_kind"].as_str().unwrap()).to_string(),
                    v["arch"].as_str().unwrap().to_string(),
                    v["triple"].as_str().unwrap().to_string(),
                    v["offload_kind"].as_str().unwrap().to_string(),
                ]
            })
            .collect();
        assert_eq!(ours, objdump_images(&objdump, &file), "{}", file.display());
        checked += ours.len();
    }
    assert!(checked >= 18, "only {checked} images");
}

#[test]
fn offsets_and_sizes_point_at_the_image_bytes() {
    for file in openmp_samples() {
        let bytes = std::fs::read(&file).unwrap();
        let (_, out, _) = ls(&[&file], true);
        let images: Vec<Value> = serde_json::from_str(&out).unwrap();
        assert!(!images.is_empty());
        for image in images {
            let offset = image["offset"].as_u64().unwrap() as usize;
            let size = image["size"].as_u64().unwrap() as usize;
            let data = &bytes[offset..offset + size];
            let magic: &[u8] = match image["image_kind"].as_str().unwrap() {
                "bc" => b"BC\xc0\xde",
                "o" => b"\x7fELF",
                other => panic!("unexpected kind {other}"),
            };
            assert!(data.starts_with(magic), "{}: {image}", file.display());
        }
    }
}

#[test]
fn json_fields_are_the_documented_ones() {
    let file = samples_dir().join("openmp/libomp.a");
    let (_, out, _) = ls(&[&file], true);
    let images: Vec<Value> = serde_json::from_str(&out).unwrap();
    let keys: Vec<&String> = images[0].as_object().unwrap().keys().collect();
    let mut keys: Vec<&str> = keys.iter().map(|k| k.as_str()).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "arch",
            "compressed",
            "entry_id",
            "file",
            "image_kind",
            "member",
            "offload_kind",
            "offset",
            "processor",
            "section",
            "size",
            "triple"
        ]
    );
    assert_eq!(images[0]["member"], "omp.o");
    assert_eq!(images[0]["section"], ".llvm.offloading");
    assert_eq!(images[0]["entry_id"], Value::Null);
    assert_eq!(images[0]["compressed"], false);
}

#[test]
fn the_table_reads_as_documented() {
    let file = samples_dir().join("openmp/omp.o");
    let (code, out, _) = ls(&[&file], false);
    assert_eq!(code, 0);
    let f = file.display();
    assert_eq!(
        out,
        format!(
            "#  KIND  ARCH    TRIPLE             PRODUCER  SIZE  WHERE\n\
             0  bc    gfx906  amdgcn-amd-amdhsa  openmp    3996  {f} .llvm.offloading @0x218\n\
             1  bc    gfx90a  amdgcn-amd-amdhsa  openmp    4196  {f} .llvm.offloading @0x1248\n"
        )
    );
}

#[test]
fn a_damaged_binary_is_reported_and_the_other_files_still_listed() {
    let dir = tempfile::tempdir().unwrap();
    let good = samples_dir().join("openmp/device.bin");
    let mut bytes = std::fs::read(&good).unwrap();
    // Claim a string table far outside the binary.
    bytes[32 + 8..32 + 16].copy_from_slice(&0xffff_0000u64.to_le_bytes());
    let bad = dir.path().join("bad.bin");
    std::fs::write(&bad, &bytes).unwrap();
    let (code, out, err) = ls(&[&bad, &good], true);
    assert_eq!(code, 1);
    assert!(
        err.contains("bad.bin") && err.contains("offset 0x"),
        "{err}"
    );
    let images: Vec<Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(images.len(), 1);
    assert_eq!(images[0]["arch"], "gfx906");
}

#[test]
fn a_damaged_bundle_is_reported_and_the_next_one_still_listed() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(samples_dir().join("bundles/two-bundles.bin")).unwrap();
    // The first entry of the first bundle claims far more bytes than there are.
    bytes[40..48].copy_from_slice(&0x7fff_ffffu64.to_le_bytes());
    let damaged = dir.path().join("damaged.bin");
    std::fs::write(&damaged, &bytes).unwrap();
    let (code, out, err) = ls(&[&damaged], true);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("damaged.bin': offset 0x20: bundle entry 0"),
        "{err}"
    );
    let images: Vec<Value> = serde_json::from_str(&out).unwrap();
    let ids: Vec<&str> = images
        .iter()
        .map(|i| i["entry_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "host-x86_64-unknown-linux-gnu-",
            "hipv4-amdgcn-amd-amdhsa--gfx906",
            "hipv4-amdgcn-amd-amdhsa--gfx90a"
        ]
    );
}

#[test]
fn damaged_copies_of_every_sample_never_panic() {
    use offload::host::scan::{scan, Places};
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in [
        "linked", "openmp", "archive", "clang", "bundles", "coff", "targets", "embedded",
    ] {
        for entry in std::fs::read_dir(samples_dir().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let text = name.ends_with(".md") || name.ends_with(".sh") || name.ends_with(".c");
            if path.is_file() && !text {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut runs = 0;
    for path in &files {
        let good = std::fs::read(path).unwrap();
        if good.is_empty() {
            continue;
        }
        for round in 0..200 {
            let mut bytes = good.clone();
            match round % 3 {
                0 => {
                    let cut = (next() % bytes.len() as u64) as usize;
                    bytes.truncate(cut);
                }
                1 => {
                    for _ in 0..8 {
                        let at = (next() % bytes.len() as u64) as usize;
                        bytes[at] ^= (next() >> 24) as u8 | 1;
                    }
                }
                _ => {
                    // A size or offset after a magic set to an extreme.
                    let magics: [&[u8]; 3] =
                        [b"__CLANG_OFFLOAD_BUNDLE__", b"CCOB", b"\x10\xff\x10\xad"];
                    let magic = magics[(next() % 3) as usize];
                    if let Some(at) = memchr::memmem::find(&bytes, magic) {
                        let field = at + magic.len() + (next() % 4) as usize * 8;
                        let values = [0u64, u32::MAX as u64, 1 << 63, u64::MAX, bytes.len() as u64];
                        let value = values[(next() % 5) as usize];
                        if field + 8 <= bytes.len() {
                            bytes[field..field + 8].copy_from_slice(&value.to_le_bytes());
                        }
                    }
                }
            }
            let mut count = 0usize;
            let result = scan(path, &bytes, Places::Everywhere, 64 << 20, &mut |_| {
                count += 1
            });
            let _ = scan(path, &bytes, Places::OffloadBinaries, 64 << 20, &mut |_| {
                count += 1
            });
            let _ = (result, count);
            runs += 1;
        }
    }
    assert!(runs > 1000, "only {runs} runs");
}

#[test]
fn a_section_overlapping_another_is_reported_not_read() {
    use object::{Object, ObjectSection};
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(samples_dir().join("openmp/omp.o")).unwrap();
    let (offloading, comment) = {
        let file = object::File::parse(&*bytes).unwrap();
        let offloading = file
            .section_by_name(".llvm.offloading")
            .unwrap()
            .file_range()
            .unwrap();
        let comment = file.section_by_name(".comment").unwrap().index().0;
        (offloading, comment)
    };
    // .comment now claims the bytes of .llvm.offloading, which comes first.
    let shoff = u64::from_le_bytes(bytes[0x28..0x30].try_into().unwrap()) as usize;
    let header = shoff + comment * 64;
    bytes[header + 24..header + 32].copy_from_slice(&offloading.0.to_le_bytes());
    let path = dir.path().join("overlap.o");
    std::fs::write(&path, &bytes).unwrap();
    let (code, out, err) = ls(&[&path], true);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("section '.comment': bytes")
            && err.contains("overlap section '.llvm.offloading': not read"),
        "{err}"
    );
    let images: Vec<Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(images.len(), 2);
}

#[test]
fn offload_log_shows_the_files_scanned() {
    let file = samples_dir().join("bundles/kernel-z.bc");
    let run = |log: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_offload"));
        command.env_remove("OFFLOAD_LOG");
        if let Some(filter) = log {
            command.env("OFFLOAD_LOG", filter);
        }
        let out = command.arg("ls").arg(&file).output().unwrap();
        assert!(out.status.success());
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (plain_out, plain_err) = run(None);
    assert_eq!(plain_err, "");
    let (out, err) = run(Some("offload=debug"));
    assert_eq!(out, plain_out, "the log stays off stdout");
    let scanned = format!("list_file{{file={}}}", file.display());
    assert!(
        err.lines()
            .any(|l| l.contains(&scanned) && l.contains("scanned images=3")),
        "{err}"
    );
    assert_eq!(
        err.lines().filter(|l| l.contains("found ")).count(),
        3,
        "{err}"
    );
    let (_, err) = run(Some("offload=warn"));
    assert_eq!(err, "", "a filter lets through only what it names");
}
