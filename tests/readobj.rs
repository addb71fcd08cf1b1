//! `offload ls --uri=readobj` against `llvm-readobj-22 --offloading`: on every committed sample
//! and on sections that put plain and compressed bundles one after another, our lines equal the
//! lines LLVM prints before its `File:` header, byte for byte. And `--uri` (absolute) still
//! prints only byte ranges of the file.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util;
use crate::util::{offload, samples_dir, visible};

const READOBJ: &str = "llvm-readobj-22";

/// The lines `llvm-readobj-22 --offloading` prints for `file` (named as given, from `dir`)
/// before its first `File:` header, or `None` when it crashed.
fn readobj_lines(readobj: &Path, dir: &Path, file: &str) -> Option<String> {
    let out = Command::new(readobj)
        .arg("--offloading")
        .arg(file)
        .current_dir(dir)
        .output()
        .unwrap();
    out.status.code()?;
    let text = String::from_utf8_lossy(&out.stdout);
    Some(
        text.lines()
            .take_while(|line| !line.starts_with("File:"))
            .filter(|line| !line.is_empty())
            .map(|line| format!("{line}\n"))
            .collect(),
    )
}

/// What `offload ls --uri=FORM file` prints, run from `dir`.
fn ours(dir: &Path, form: &str, file: &str) -> String {
    let out = offload()
        .args(["ls", &format!("--uri={form}"), file])
        .current_dir(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every committed sample file but sources, scripts, notes and deliberately damaged data.
fn samples() -> Vec<String> {
    fn walk(dir: &Path, root: &Path, into: &mut Vec<String>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                if !path.ends_with("damaged") {
                    walk(&path, root, into);
                }
                continue;
            }
            let skip = ["md", "sh", "c", "cpp", "hip", "cu", "rs"];
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            if !skip.contains(&ext) {
                let relative = path.strip_prefix(root).unwrap();
                into.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    let mut files = Vec::new();
    walk(&samples_dir(), &samples_dir(), &mut files);
    files.sort();
    files
}

#[test]
fn our_lines_equal_llvm_readobj_22_on_the_samples() {
    let Some(readobj) = util::tool(READOBJ) else {
        return;
    };
    let dir = samples_dir();
    let mut failures = Vec::new();
    let mut compared = 0;
    let mut listed = 0;
    for file in samples() {
        // LLVM 22 crashes on some files that are not objects (a bare offload binary).
        let Some(theirs) = readobj_lines(&readobj, &dir, &file) else {
            visible(&format!("{READOBJ} crashed on {file}: not compared"));
            continue;
        };
        compared += 1;
        listed += usize::from(!theirs.is_empty());
        let ours = ours(&dir, "readobj", &file);
        if ours != theirs {
            failures.push(format!("{file}:\n  LLVM:\n{theirs}  ours:\n{ours}"));
        }
    }
    visible(&format!(
        "readobj lines: {compared} samples ({listed} with lines), {} differ",
        failures.len()
    ));
    assert!(listed >= 8, "too few samples with bundles: {listed}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn compressed_bundles_give_readobj_numbers_only_in_its_form() {
    let dir = samples_dir();
    let file = "clang/kernel-fatbin-z.o";
    // The compressed bundle starts at 0x1000; the offsets are those of the entries in the
    // decompressed bundle, the sizes decompressed: not byte ranges of the file.
    assert_eq!(
        ours(&dir, "readobj", file),
        "host-x86_64-unknown-linux--\tfile://clang/kernel-fatbin-z.o#offset=4096&size=0\n\
         hipv4-amdgcn-amd-amdhsa--gfx906\tfile://clang/kernel-fatbin-z.o#offset=4096&size=3168\n\
         hipv4-amdgcn-amd-amdhsa--gfx90a\tfile://clang/kernel-fatbin-z.o#offset=8192&size=4232\n"
    );
    // The absolute form names the compressed bundle's byte range in the file (1517 bytes at
    // 0x1000) and the entry inside it.
    let absolute_z = dir.canonicalize().unwrap().join(file);
    let ids = [
        "host-x86_64-unknown-linux--",
        "hipv4-amdgcn-amd-amdhsa--gfx906",
        "hipv4-amdgcn-amd-amdhsa--gfx90a",
    ];
    let want: String = ids
        .iter()
        .map(|id| {
            format!(
                "file://{}#offset=4096&size=1517&entry={id}\n",
                absolute_z.display()
            )
        })
        .collect();
    assert_eq!(ours(&dir, "absolute", file), want);
    let ccob = &fs::read(&absolute_z).unwrap()[4096..4096 + 1517];
    assert!(ccob.starts_with(b"CCOB"));
    let total = u32::from_le_bytes(ccob[8..12].try_into().unwrap());
    assert_eq!(total, 1517, "the range is the whole compressed bundle");
    let plain = offload()
        .args(["ls", "--uri", "clang/kernel-fatbin.o"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let absolute = dir.canonicalize().unwrap().join("clang/kernel-fatbin.o");
    assert_eq!(
        String::from_utf8_lossy(&plain.stdout),
        format!(
            "file://{0}#offset=8192&size=0\nfile://{0}#offset=8192&size=3168\n\
             file://{0}#offset=12288&size=4232\n",
            absolute.display()
        )
    );
}

/// An ELF object with a section `.hip_fatbin` holding `contents`, made by llvm-objcopy-22.
fn object_with_section(objcopy: &Path, dir: &Path, name: &str, contents: &[u8]) -> PathBuf {
    let section = dir.join(format!("{name}.section"));
    fs::write(&section, contents).unwrap();
    let output = dir.join(format!("{name}.o"));
    let base = samples_dir().join("elf/c-x86_64-linux-gnu.o");
    let status = Command::new(objcopy)
        .arg(format!("--add-section=.hip_fatbin={}", section.display()))
        .arg(&base)
        .arg(&output)
        .status()
        .unwrap();
    assert!(status.success());
    output
}

#[test]
fn plain_and_compressed_bundles_in_one_section_are_listed_as_llvm_22_lists_them() {
    let (Some(readobj), Some(objcopy)) = (util::tool(READOBJ), util::tool("llvm-objcopy-22"))
    else {
        return;
    };
    let samples = samples_dir();
    let plain = fs::read(samples.join("clang/kernel-fatbin.hip_fatbin")).unwrap();
    let packed = fs::read(samples.join("clang/kernel-fatbin-z.hip_fatbin")).unwrap();
    let two_packed = fs::read(samples.join("bundles/two-ccob.bin")).unwrap();
    let two_plain = fs::read(samples.join("bundles/two-bundles.bin")).unwrap();
    let cases: [(&str, Vec<u8>); 6] = [
        ("plain-packed", [plain.as_slice(), &packed].concat()),
        ("packed-plain", [packed.as_slice(), &plain].concat()),
        (
            "plain-packed-plain",
            [plain.as_slice(), &packed, &plain].concat(),
        ),
        ("two-packed", two_packed),
        ("two-plain", two_plain),
        ("garbage-first", [b"garbage!".as_slice(), &plain].concat()),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (name, contents) in cases {
        let object = object_with_section(&objcopy, dir.path(), name, &contents);
        let file = object.file_name().unwrap().to_string_lossy().into_owned();
        let theirs = readobj_lines(&readobj, dir.path(), &file).expect("readobj runs");
        assert_eq!(ours(dir.path(), "readobj", &file), theirs, "{name}");
    }
}
