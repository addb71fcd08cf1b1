//! OffloadBinary against the LLVM tools:
//! - what clang-offload-packager-19 and llvm-offload-binary-22 write for many `--image`
//!   arguments equals, byte for byte, what `write_v1` writes for the same images, with the
//!   packager's key order, image kinds and offload kinds worked out as each release does; and
//!   our reader gives back the metadata;
//! - splitting the `.llvm.offloading` sections of the samples in `samples/openmp/` (objects, a
//!   partial link, an archive, a raw binary) finds the images `llvm-objdump-19 --offloading`
//!   lists, in the same order.
//!
//! Skipped, with a message, when an LLVM tool is not on `PATH`, unless
//! `OFFLOAD_REQUIRE_REFERENCE=1`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use object::read::archive::ArchiveFile;
use object::{Object, ObjectSection};

use offload::format::offload_binary::{self, ImageKind, OffloadBinary, OffloadKind};
use offload::llvm::adt::hash::dense_map_order;
use offload::target::processor::LlvmVersion;

use crate::util;

/// The packagers compared, with the LLVM release each is.
const PACKAGERS: [(&str, LlvmVersion); 2] = [
    ("clang-offload-packager-19", LlvmVersion::V19),
    ("llvm-offload-binary-22", LlvmVersion::V22),
];
const OBJDUMP: &str = "llvm-objdump-19";

/// The packager's `--image` items: split on `,`, then at the first `=` (an item with no `=` is
/// a key with an empty value).
fn items(argument: &str) -> Vec<(&str, &str)> {
    argument
        .split(',')
        .map(|item| item.split_once('=').unwrap_or((item, "")))
        .collect()
}

/// What the packager of `version` writes for one `--image` argument, given the files it names
/// (read from `dir`): one version 1 binary per file, one after another.
fn pack_like(dir: &Path, argument: &str, version: LlvmVersion) -> Vec<u8> {
    let items = items(argument);
    let mut joined: Vec<(&str, String)> = Vec::new();
    for (key, value) in &items {
        match joined.iter_mut().find(|(k, _)| k == key) {
            Some((_, all)) => {
                all.push(',');
                all.push_str(value);
            }
            None => joined.push((key, value.to_string())),
        }
    }
    let value_of = |key: &str| joined.iter().find(|(k, _)| *k == key).map(|(_, v)| v);
    let keys: Vec<&[u8]> = items.iter().map(|(k, _)| k.as_bytes()).collect();
    let strings: Vec<(&[u8], &[u8])> = dense_map_order(&keys)
        .into_iter()
        .filter(|k| *k != b"file" && *k != b"kind")
        .map(|k| {
            let key = std::str::from_utf8(k).unwrap();
            (k, value_of(key).unwrap().as_bytes())
        })
        .collect();
    let offload_kind = value_of("kind").map_or(OffloadKind::None, |kind| match version {
        LlvmVersion::V19 => OffloadKind::from_name_llvm19(kind.as_bytes()),
        LlvmVersion::V22 | LlvmVersion::V23 => OffloadKind::from_name_llvm22(kind.as_bytes()),
    });
    let mut out = Vec::new();
    for file in value_of("file").unwrap().split(',') {
        let contents = fs::read(dir.join(file)).unwrap();
        let image_kind = ImageKind::of_packager_input_llvm19(file.as_bytes(), &contents);
        out.extend(offload_binary::write_v1(
            image_kind,
            offload_kind,
            0,
            &strings,
            &contents,
        ));
    }
    out
}

/// The files the packager cases use, in a temporary folder.
fn inputs() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let files: &[(&str, &[u8])] = &[
        ("a.o", b"\x7fELF a device object"),
        ("b.o", b"b"),
        ("c.o", b"eight b."),
        ("empty.o", b""),
        ("nine.o", b"nine byte"),
        ("k.cubin", b"cubin"),
        ("k.s", b".version 7.0\n.target sm_70\n"),
        ("k.fatbin", b"fatbin contents"),
        ("k.spv", b"\x03\x02\x23\x07 spirv"),
        ("k.O", b"upper-case extension"),
        ("noext", b"no extension"),
        ("wrapped.o", b"\xde\xc0\x17\x0b wrapper magic"),
    ];
    for (name, contents) in files {
        fs::write(dir.path().join(name), contents).unwrap();
    }
    let bitcode = util::samples_dir().join("bitcode").join("omp-gfx90a.bc");
    fs::copy(bitcode, dir.path().join("device.o")).unwrap();
    fs::create_dir(dir.path().join("dir.bc")).unwrap();
    fs::write(dir.path().join("dir.bc").join("inner"), b"in a folder").unwrap();
    dir
}

#[test]
fn packager_bytes_equal_ours() {
    for (name, version) in PACKAGERS {
        if let Some(packager) = util::tool(name) {
            packager_bytes_equal_ours_with(&packager, version);
        }
    }
}

/// [`packager_bytes_equal_ours`] for one packager.
fn packager_bytes_equal_ours_with(packager: &Path, version: LlvmVersion) {
    let dir = inputs();
    let t = "triple=amdgcn-amd-amdhsa";
    // Each case is a list of --image arguments.
    let cases: Vec<(&str, Vec<String>)> = vec![
        (
            "openmp",
            vec![format!("file=a.o,{t},arch=gfx906,kind=openmp")],
        ),
        (
            "several files in one image",
            vec![format!(
                "file=a.o,file=b.o,file=c.o,{t},arch=gfx90a:xnack+,kind=hip"
            )],
        ),
        (
            "several images",
            vec![
                format!("file=a.o,{t},arch=gfx906,kind=openmp"),
                "file=k.cubin,triple=nvptx64-nvidia-cuda,arch=sm_70,kind=cuda".into(),
                format!("file=nine.o,{t},arch=gfx1030"),
            ],
        ),
        (
            "unknown keys",
            vec![format!(
                "file=a.o,{t},arch=gfx906,kind=openmp,foo=bar,zzz=,opts=-O3=x,feature=+xnack"
            )],
        ),
        ("empty arch", vec![format!("file=a.o,{t},arch=,kind=openmp")]),
        ("no arch", vec![format!("file=a.o,{t}")]),
        ("item without =", vec![format!("file=a.o,{t},arch=x,bare")]),
        (
            "repeated keys",
            vec![format!("file=a.o,{t},arch=a,arch=b,kind=openmp,arch=c")],
        ),
        (
            "cubin, ptx, fatbin, spv and unknown extensions",
            vec![
                "file=k.cubin,file=k.s,file=k.fatbin,triple=nvptx64-nvidia-cuda,arch=sm_80,kind=cuda"
                    .into(),
                format!("file=k.spv,file=k.O,file=noext,file=dir.bc/inner,{t},arch=x"),
            ],
        ),
        (
            "bitcode by its magic",
            vec![format!(
                "file=device.o,file=wrapped.o,{t},arch=gfx90a,kind=openmp"
            )],
        ),
        (
            "image sizes 0, 1, 8 and 9",
            vec![format!(
                "file=empty.o,file=b.o,file=c.o,file=nine.o,{t},arch=gfx906"
            )],
        ),
        (
            "offload kind names",
            vec![
                format!("file=a.o,{t},arch=x,kind=HIP"),
                format!("file=a.o,{t},arch=x,kind=hip"),
                format!("file=a.o,{t},arch=x,kind=sycl"),
                format!("file=a.o,{t},arch=x,kind=cuda"),
                format!("file=a.o,{t},arch=x,kind="),
            ],
        ),
    ];
    let mut failures = Vec::new();
    for (name, images) in &cases {
        let out = dir.path().join("out.bin");
        let _ = fs::remove_file(&out);
        let result = Command::new(packager)
            .current_dir(dir.path())
            .arg("-o")
            .arg(&out)
            .args(images.iter().map(|i| format!("--image={i}")))
            .output()
            .unwrap();
        if !result.status.success() {
            failures.push(format!(
                "{name}: the packager failed: {}",
                String::from_utf8_lossy(&result.stderr)
            ));
            continue;
        }
        let theirs = fs::read(&out).unwrap();
        let ours: Vec<u8> = images
            .iter()
            .flat_map(|i| pack_like(dir.path(), i, version))
            .collect();
        if ours != theirs {
            failures.push(format!(
                "{name}: {}",
                util::first_difference(&theirs, &ours)
            ));
            continue;
        }
        // Reading back gives every file, with the packager's metadata.
        let files: Vec<&str> = images
            .iter()
            .flat_map(|i| {
                items(i)
                    .into_iter()
                    .filter(|(k, _)| *k == "file")
                    .map(|(_, v)| v)
                    .collect::<Vec<_>>()
            })
            .collect();
        let binaries: Vec<OffloadBinary> = offload_binary::split(&theirs)
            .map(|(_, r)| r.unwrap())
            .collect();
        if binaries.len() != files.len() {
            failures.push(format!(
                "{name}: {} binaries for {} files",
                binaries.len(),
                files.len()
            ));
            continue;
        }
        for (binary, file) in binaries.iter().zip(files) {
            let entry = &binary.entries()[0];
            let contents = fs::read(dir.path().join(file)).unwrap();
            if entry.image != contents.as_slice() || entry.triple().is_empty() {
                failures.push(format!("{name}: {file} does not read back"));
            }
        }
    }
    util::visible(&format!(
        "{}: packager bytes: {} cases, {} differences",
        packager.display(),
        cases.len(),
        failures.len()
    ));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// One image as `llvm-objdump --offloading` prints it: kind, arch, triple, producer.
type Listed = (String, String, String, String);

/// The images `llvm-objdump-19 --offloading` lists for `path`, in order.
fn objdump_images(objdump: &Path, path: &Path) -> Vec<Listed> {
    let out = Command::new(objdump)
        .arg("--offloading")
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{OBJDUMP} --offloading {} failed: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut images = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if !line.starts_with("OFFLOADING IMAGE [") {
            continue;
        }
        let mut field = |label: &str| {
            let line = lines.next().unwrap_or_default();
            assert!(line.starts_with(label), "unexpected line {line:?}");
            line.get(16..).unwrap_or_default().to_string()
        };
        let kind = field("kind");
        let arch = field("arch");
        let triple = field("triple");
        let producer = field("producer");
        images.push((kind, arch, triple, producer));
    }
    images
}

/// The images found by splitting the `.llvm.offloading` sections of an object (or a raw
/// binary), as objdump names them.
fn our_images_in(data: &[u8], what: &str, images: &mut Vec<Listed>) {
    if data.starts_with(&offload_binary::MAGIC) {
        return split_section(data, what, images);
    }
    if let Ok(archive) = ArchiveFile::parse(data) {
        for member in archive.members() {
            let member = member.unwrap();
            let name = String::from_utf8_lossy(member.name()).into_owned();
            our_images_in(
                member.data(data).unwrap(),
                &format!("{what}({name})"),
                images,
            );
        }
        return;
    }
    let file = object::File::parse(data).unwrap_or_else(|e| panic!("{what}: {e}"));
    for section in file.sections() {
        if section.name() == Ok(".llvm.offloading") {
            split_section(section.data().unwrap(), what, images);
        }
    }
}

fn split_section(data: &[u8], what: &str, images: &mut Vec<Listed>) {
    for (at, binary) in offload_binary::split(data) {
        let binary = binary.unwrap_or_else(|e| panic!("{what}: binary at {at:#x}: {e}"));
        for entry in binary.entries() {
            images.push((
                entry.image_kind.objdump_name().to_string(),
                String::from_utf8_lossy(entry.arch()).into_owned(),
                String::from_utf8_lossy(entry.triple()).into_owned(),
                entry.offload_kind.name_llvm19().to_string(),
            ));
        }
    }
}

fn sample_files() -> Vec<PathBuf> {
    let dir = util::samples_dir().join("openmp");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("o" | "a" | "bin")
            )
        })
        .collect();
    files.sort();
    files
}

#[test]
fn split_finds_what_objdump_lists_in_the_samples() {
    let Some(objdump) = util::tool(OBJDUMP) else {
        return;
    };
    let mut files = sample_files();
    assert!(
        files.len() >= 8,
        "samples/openmp is missing files: {files:?}"
    );
    files.extend(util::devicertl());
    let mut failures = Vec::new();
    let mut total = 0;
    for path in &files {
        let expected = objdump_images(&objdump, path);
        let mut ours = Vec::new();
        our_images_in(
            &fs::read(path).unwrap(),
            &path.display().to_string(),
            &mut ours,
        );
        total += ours.len();
        if ours != expected || ours.is_empty() {
            failures.push(format!(
                "{}:\n  objdump: {expected:?}\n  ours:    {ours:?}",
                path.display()
            ));
        }
    }
    util::visible(&format!(
        "samples: {} files, {total} images, {} differences",
        files.len(),
        failures.len()
    ));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn partial_link_puts_two_objects_binaries_in_one_section() {
    let path = util::samples_dir().join("openmp").join("partial.o");
    let data = fs::read(&path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let sections: Vec<_> = file
        .sections()
        .filter(|s| s.name() == Ok(".llvm.offloading"))
        .collect();
    assert_eq!(sections.len(), 1);
    let contents = sections[0].data().unwrap();
    let found: Vec<(u64, u64)> = offload_binary::split(contents)
        .map(|(at, r)| (at, r.unwrap().size()))
        .collect();
    assert_eq!(found.len(), 4);
    // Each binary starts where the one before it ends.
    for pair in found.windows(2) {
        assert_eq!(pair[0].0 + pair[0].1, pair[1].0);
    }
    assert_eq!(found[3].0 + found[3].1, contents.len() as u64);
}

#[test]
fn hip_from_llvm19_uses_the_old_encoding() {
    let path = util::samples_dir().join("openmp").join("hip-rdc.o");
    let mut images = Vec::new();
    our_images_in(&fs::read(&path).unwrap(), "hip-rdc.o", &mut images);
    assert_eq!(images.len(), 2);
    let data = fs::read(&path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let section = file.section_by_name(".llvm.offloading").unwrap();
    for (_, binary) in offload_binary::split(section.data().unwrap()) {
        let binary = binary.unwrap();
        let entry = &binary.entries()[0];
        assert_eq!(entry.offload_kind.raw(), 3);
        assert_eq!(
            entry.offload_kind.hip_encoding(),
            Some(offload_binary::HipEncoding::Sequential)
        );
        assert_eq!(entry.image_kind, ImageKind::Bitcode);
    }
}
