//! `offload kpack` on what packagers meet: hosts built with AddressSanitizer (a redzone after
//! each HIP wrapper), trees split already, files cut short beside good ones, and the metadata
//! AMD's splitter gives each archive entry.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSection};
use offload::format::bundle::Bundle;
use offload::format::image_target::ImageTarget;
use offload::format::kpack::{ArchiveWriter, EntryMetadata, Scheme};
use offload::host::program::kpack_elf::hip_code;

use crate::util;
use crate::util::kpack::pack_with_python_metadata;
use crate::util::native::compile_hip;
use crate::util::{offload, succeed, text_output};

const ARCHES: &[&str] = &["gfx90a", "gfx1100"];

/// A shared library of kernel.hip and vadd.hip for [`ARCHES`], compiled with `extra` and linked
/// by ld.lld into `dir/stage/lib/libk.so`. `None` when clang-22 or ld.lld-22 is missing.
fn library(dir: &Path, extra: &[&str]) -> Option<PathBuf> {
    let clang = util::tool("clang-22")?;
    let lld = util::tool("ld.lld-22")?;
    let build = dir.join("build");
    fs::create_dir_all(&build).unwrap();
    let objects: Vec<PathBuf> = ["kernel.hip", "vadd.hip"]
        .iter()
        .map(|source| compile_hip(&clang, &build, source, ARCHES, extra))
        .collect();
    let out = dir.join("stage/lib/libk.so");
    fs::create_dir_all(out.parent().unwrap()).unwrap();
    // No sanitizer runtime is linked: its symbols stay undefined, as a shared library may leave
    // them for the program that loads it.
    succeed(
        Command::new(lld)
            .arg("-shared")
            .args(&objects)
            .arg("-o")
            .arg(&out),
    );
    Some(out)
}

/// `offload kpack -r --name k -o DIR/out DIR/stage`: the tree [`library`] made, split.
fn split_stage(dir: &Path) -> Command {
    let mut command = offload();
    command
        .args(["kpack", "-r", "--name", "k", "-o"])
        .arg(dir.join("out"))
        .arg(dir.join("stage"));
    command
}

/// The bytes of section `name` of the ELF file at `path`.
fn section(path: &Path, name: &str) -> Vec<u8> {
    let data = fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let bytes = file.section_by_name(name).unwrap().data().unwrap().to_vec();
    bytes
}

/// The magic and `reserved1` of each 64-byte block of `.hipFatBinSegment`, and whether the 40
/// bytes after each wrapper are all zero.
fn padded_wrappers(path: &Path) -> Vec<(String, u8, bool)> {
    section(path, ".hipFatBinSegment")
        .chunks(64)
        .map(|block| {
            let magic = String::from_utf8_lossy(&block[..4]).into_owned();
            (magic, block[16], block[24..].iter().all(|&b| b == 0))
        })
        .collect()
}

/// The device code objects per wrapper of the unsplit library at `path`: processor -> bytes.
fn code_objects(path: &Path) -> Vec<BTreeMap<String, Vec<u8>>> {
    let data = fs::read(path).unwrap();
    let code = hip_code(&data).unwrap().unwrap();
    code.wrappers
        .iter()
        .map(|w| {
            let at = (w.target.unwrap() - code.fatbin.address) as usize;
            Bundle::parse(&code.fatbin.data[at..])
                .unwrap()
                .unwrap()
                .entries()
                .iter()
                .filter(|e| !e.data.is_empty())
                .filter_map(|e| {
                    let target = ImageTarget::of_bundle_entry(e.id);
                    (!target.target_id.is_empty()).then(|| (target.target_id, e.data.to_vec()))
                })
                .collect()
        })
        .collect()
}

#[test]
fn asan_libraries_split_list_and_merge_back() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = library(dir.path(), &["-fsanitize=address"]) else {
        return;
    };
    // AddressSanitizer gives each wrapper a 64-byte block: the wrapper, then a zero redzone.
    let padded = |magic: &str| vec![(magic.to_string(), 0, true), (magic.to_string(), 0, true)];
    assert_eq!(padded_wrappers(&lib), padded("FPIH"));

    let out = dir.path().join("out");
    let (code, stdout, stderr) = text_output(&mut split_stage(dir.path()));
    assert_eq!((code, stderr.as_str()), (0, ""), "{stdout}");
    let split = out.join("lib/libk.so");
    assert!(stdout.starts_with(&format!("{}: 2 code-object indices\n", split.display())));
    // Each wrapper HIPK in its block, its index in reserved1, the redzones left as they were.
    assert_eq!(
        padded_wrappers(&split),
        [("HIPK".to_string(), 0, true), ("HIPK".to_string(), 1, true)]
    );
    let (code, listing, stderr) = text_output(offload().arg("ls").arg(&split));
    assert_eq!((code, stderr.as_str()), (0, ""), "{listing}");
    for (index, arch) in [(0, "gfx90a"), (0, "gfx1100"), (1, "gfx90a"), (1, "gfx1100")] {
        let archive = out.join(format!(".kpack/k_{arch}.kpack"));
        let place = format!("{}[lib/libk.so#{index}]", archive.display());
        assert!(
            listing
                .lines()
                .any(|l| l.contains(" kpack ") && l.contains(&place)),
            "{place}:\n{listing}"
        );
    }

    let back = dir.path().join("back");
    succeed(
        offload()
            .args(["kpack", "--merge", "-o"])
            .arg(&back)
            .arg(&split),
    );
    let merged = back.join("libk.so");
    assert_eq!(padded_wrappers(&merged), padded("FPIH"));
    let original = code_objects(&lib);
    assert_eq!(original.len(), 2);
    assert_eq!(code_objects(&merged), original);
}

#[test]
fn a_tree_split_already_is_refused_whole() {
    let dir = tempfile::tempdir().unwrap();
    let Some(_) = library(dir.path(), &[]) else {
        return;
    };
    let out = dir.path().join("out");
    succeed(&mut split_stage(dir.path()));
    let again = dir.path().join("again");
    let (code, stdout, stderr) =
        text_output(offload().args(["kpack", "-r", "-o"]).arg(&again).arg(&out));
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(stdout, "");
    let offset = section_offset(&out.join("lib/libk.so"), ".hipFatBinSegment");
    assert_eq!(
        stderr,
        format!(
            "offload kpack: error: '{}': .hipFatBinSegment wrapper 0 at {offset:#x}: already \
             HIPK: the file is split; a tree holding a split binary is refused whole, and \
             nothing was written (put its code back first with --merge, or copy the tree as it \
             is)\n",
            out.join("lib/libk.so").display()
        )
    );
    assert!(!again.exists());
}

/// The file offset of section `name` of the ELF file at `path`.
fn section_offset(path: &Path, name: &str) -> u64 {
    let data = fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let section = file.section_by_name(name).unwrap();
    section.file_range().unwrap().0
}

#[test]
fn a_program_cut_short_in_a_tree_is_an_error_and_the_rest_is_split() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = library(dir.path(), &[]) else {
        return;
    };
    // Its section headers lie past the end of what is left.
    let whole = fs::read(&lib).unwrap();
    fs::write(dir.path().join("stage/lib/cut.so"), &whole[..30000]).unwrap();
    let out = dir.path().join("out");
    let (code, stdout, stderr) = text_output(&mut split_stage(dir.path()));
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(
        stderr,
        format!(
            "offload kpack: error: '{}': offset 0x20: program or section headers lie outside \
             the file\n",
            dir.path().join("stage/lib/cut.so").display()
        )
    );
    assert_eq!(
        files_under(&out),
        [
            ".kpack/k_gfx1100.kpack",
            ".kpack/k_gfx90a.kpack",
            "lib/libk.so"
        ]
    );
    assert!(!stdout.contains("without HIP device code"), "{stdout}");
}

#[test]
fn code_object_and_cubin_files_in_a_tree_are_copied_as_they_are() {
    // Tensile's kernels beside rocBLAS are code objects in files of their own (`.hsaco`,
    // `.co`): linked ELF files for a GPU, which hold no bundle to split.
    let dir = tempfile::tempdir().unwrap();
    let Some(_) = library(dir.path(), &[]) else {
        return;
    };
    let kernels = dir.path().join("stage/lib/rocblas/library");
    fs::create_dir_all(&kernels).unwrap();
    let copied = [
        ("Kernels.so-000-gfx906.hsaco", "dev/kernel-gfx906.hsaco"),
        (
            "TensileLibrary_gfx908.co",
            "dev/kernel-gfx908_sramecc+_xnack-.hsaco",
        ),
        ("kernel-sm_89.cubin", "cuda/bare/kernel-sm_89.cubin"),
    ];
    for (name, sample) in copied {
        fs::copy(util::samples_dir().join(sample), kernels.join(name)).unwrap();
    }
    let out = dir.path().join("out");
    let (code, stdout, stderr) = text_output(&mut split_stage(dir.path()));
    assert_eq!((code, stderr.as_str()), (0, ""), "{stdout}");
    assert_eq!(
        files_under(&out),
        [
            ".kpack/k_gfx1100.kpack",
            ".kpack/k_gfx90a.kpack",
            "lib/libk.so",
            "lib/rocblas/library/Kernels.so-000-gfx906.hsaco",
            "lib/rocblas/library/TensileLibrary_gfx908.co",
            "lib/rocblas/library/kernel-sm_89.cubin",
        ]
    );
    for (name, sample) in copied {
        assert_eq!(
            fs::read(out.join("lib/rocblas/library").join(name)).unwrap(),
            fs::read(util::samples_dir().join(sample)).unwrap(),
            "{name}"
        );
    }
}

/// Every file under `dir`, by its path below it, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let relative = path.strip_prefix(dir).unwrap();
                found.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    found.sort();
    found
}

/// MessagePack of the metadata map AMD's splitter gives an entry.
fn metadata_bytes(target: &str, source_prefix: &str) -> Vec<u8> {
    let mut out = vec![0xa8];
    out.extend_from_slice(b"metadata");
    out.push(0x82);
    for (key, value) in [("target", target), ("source_prefix", source_prefix)] {
        out.push(0xa0 | key.len() as u8);
        out.extend_from_slice(key.as_bytes());
        out.push(0xa0 | value.len() as u8);
        out.extend_from_slice(value.as_bytes());
    }
    out
}

#[test]
fn split_archives_give_each_entry_its_target_and_source_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let Some(_) = library(dir.path(), &[]) else {
        return;
    };
    let out = dir.path().join("out");
    succeed(&mut split_stage(dir.path()));
    let archive = fs::read(out.join(".kpack/k_gfx90a.kpack")).unwrap();
    let wanted = metadata_bytes("hipv4-amdgcn-amd-amdhsa--gfx90a", "stage");
    let found = archive
        .windows(wanted.len())
        .filter(|w| *w == wanted)
        .count();
    assert_eq!(found, 2, "one per code-object index");
}

#[test]
fn archives_with_metadata_match_amds_writer() {
    let dir = tempfile::tempdir().unwrap();
    let kernels: Vec<(String, &str, PathBuf, &str)> = [
        (
            "stage/lib/libk.so#0",
            "gfx90a",
            "hipv4-amdgcn-amd-amdhsa--gfx90a",
        ),
        (
            "stage/lib/libk.so#1",
            "gfx90a:xnack-",
            "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-",
        ),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, (key, arch, target))| {
        let file = dir.path().join(format!("co{i}"));
        fs::write(&file, vec![i as u8 + 1; 300 + i]).unwrap();
        (key.to_string(), arch, file, target)
    })
    .collect();
    let arches = ["gfx90a", "gfx90a:xnack-"];
    let theirs = dir.path().join("theirs.kpack");
    let as_args: Vec<(&str, &str, &Path, &str)> = kernels
        .iter()
        .map(|(k, a, f, t)| (k.as_str(), *a, f.as_path(), *t))
        .collect();
    let Some(()) = pack_with_python_metadata(&theirs, "k", &arches, "stage", &as_args) else {
        return;
    };
    let mut writer = ArchiveWriter::new("k", "gfx90a", &arches, Scheme::None);
    for (key, arch, file, target) in &kernels {
        let metadata = EntryMetadata {
            target: target.to_string(),
            source_prefix: "stage".into(),
        };
        let code = fs::read(file).unwrap();
        writer
            .add_with_metadata(key, arch, &code, metadata)
            .unwrap();
    }
    assert_eq!(writer.finish(), fs::read(&theirs).unwrap());
}
