//! `offload extract` on CUDA fat binaries: the entries a compute capability runs (`--arch`) and
//! the one the driver loads (`--device`), written under cuobjdump's names with cuobjdump's
//! bytes (inflated, cut to the cubin's ELF extent or the PTX text).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::cuda::{cuda_entries, cuobjdump, libcurand, samples};
use crate::util::{file_names, offload, samples_dir, succeed, text_output};

/// The files of `dir`, by name.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    file_names(dir)
        .into_iter()
        .map(|name| {
            let bytes = std::fs::read(dir.join(&name)).unwrap();
            (name, bytes)
        })
        .collect()
}

/// What cuobjdump extracts from `path` with `args` (`--extract-elf all`), in a new folder.
fn cuobjdump_extract(tool: &Path, path: &Path, args: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    succeed(
        Command::new(tool)
            .args(args)
            .arg(path)
            .current_dir(dir.path()),
    );
    let at = dir.path().to_path_buf();
    (dir, at)
}

/// Every entry of `path` extracted by `offload extract --exact --arch NAME` for each target
/// name its entries have: the files written, by name.
fn every_entry(path: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut names: Vec<String> = cuda_entries(path)
        .iter()
        .map(|e| e["arch"].as_str().unwrap().to_string())
        .collect();
    names.dedup();
    let dir = tempfile::tempdir().unwrap();
    let mut all = BTreeMap::new();
    for name in names {
        let out = dir.path().join(&name);
        succeed(
            offload()
                .args(["extract", "--exact", "--arch", &name, "-o"])
                .arg(&out)
                .arg(path),
        );
        all.extend(files(&out));
    }
    all
}

#[test]
fn every_entry_is_extracted_as_cuobjdump_extracts_it() {
    let tool = cuobjdump();
    for path in samples() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let ours = every_entry(&path);
        assert!(!ours.is_empty(), "{name}");
        let golden = samples_dir()
            .join("cuda/extracted")
            .join(path.file_stem().unwrap());
        if golden.is_dir() {
            assert!(files(&golden) == ours, "{name}: {:?}", ours.keys());
        }
        if let Some(tool) = &tool {
            let (_elf, elf) = cuobjdump_extract(tool, &path, &["--extract-elf", "all"]);
            let (_ptx, ptx) = cuobjdump_extract(tool, &path, &["--extract-ptx", "all"]);
            let mut theirs = files(&elf);
            theirs.extend(files(&ptx));
            assert_eq!(
                theirs.keys().collect::<Vec<_>>(),
                ours.keys().collect::<Vec<_>>(),
                "{name}"
            );
            for (file, bytes) in &theirs {
                assert!(ours[file] == *bytes, "{name}: {file} differs");
            }
        }
    }
}

#[test]
fn libcurand_cubins_for_one_sm_are_cuobjdumps() {
    let (Some(tool), Some(lib)) = (cuobjdump(), libcurand()) else {
        return;
    };
    let (_theirs, theirs) = cuobjdump_extract(&tool, &lib, &["--extract-elf", "sm_80"]);
    let dir = tempfile::tempdir().unwrap();
    succeed(
        offload()
            .args(["extract", "--arch", "sm_80", "-o"])
            .arg(dir.path())
            .arg(&lib),
    );
    let ours = files(dir.path());
    assert_eq!(ours.len(), 11);
    assert!(files(&theirs) == ours, "{:?}", ours.keys());
}

#[test]
fn a_compute_capability_takes_every_entry_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let cuda = samples_dir().join("cuda");
    let (code, out, err) = text_output(
        offload()
            .args(["extract", "--arch", "sm_90", "-o"])
            .arg(dir.path())
            .arg(cuda.join("gencode-zstd.o"))
            .arg(cuda.join("arch-specific.o")),
    );
    assert_eq!(code, 0, "{err}");
    let o = dir.path().display();
    assert_eq!(
        out,
        format!(
            "{o}/gencode-zstd.2.sm_90.cubin\tcuda sm_90 3444 bytes\n\
             {o}/gencode-zstd.1.sm_90.ptx\tcuda compute_90 496 bytes (PTX, compiled for sm_90 when loaded)\n\
             {o}/arch-specific.1.sm_90a.cubin\tcuda sm_90a 3444 bytes\n\
             {o}/arch-specific.1.sm_90a.ptx\tcuda compute_90a 497 bytes (PTX, compiled for sm_90 when loaded)\n\
             total: 2 files, 2 with images written, 0 errors; 4 images written, 7881 bytes\n\
             total sm_90a: 1 image, 3444 bytes\n\
             total sm_90: 1 image, 3444 bytes\n\
             total compute_90a: 1 image, 497 bytes\n\
             total compute_90: 1 image, 496 bytes\n"
        )
    );
    // An sm_86 device runs sm_80 cubins, not the sm_90 ones nor compute_90 PTX.
    let (code, out, _) = text_output(
        offload()
            .args(["extract", "--arch", "sm_86", "-o"])
            .arg(dir.path().join("86"))
            .arg(cuda.join("gencode-lz.o")),
    );
    assert_eq!(code, 0);
    assert!(
        out.contains("gencode-lz.1.sm_80.cubin\tcuda sm_80 3240 bytes\n"),
        "{out}"
    );
    assert_eq!(out.lines().count(), 1, "{out}");
}

#[test]
fn a_device_takes_the_drivers_one_choice_per_fat_binary() {
    let dir = tempfile::tempdir().unwrap();
    let cuda = samples_dir().join("cuda");
    let (code, out, err) = text_output(
        offload()
            .args([
                "extract", "--device", "sm_90", "--device", "sm_89", "--device", "sm_103",
            ])
            .arg("-o")
            .arg(dir.path())
            .arg(cuda.join("gencode-zstd.o"))
            .arg(cuda.join("arch-specific.o")),
    );
    let lines: Vec<String> = out
        .lines()
        .filter(|l| !l.starts_with("total"))
        .map(|l| l.rsplit('/').next().unwrap().to_string())
        .collect();
    assert_eq!(
        lines,
        [
            "gencode-zstd.2.sm_90.cubin\tcuda sm_90 3444 bytes (fat binary 1: sm_90 loads it natively)",
            "gencode-zstd.1.sm_80.cubin\tcuda sm_80 3240 bytes (fat binary 1: sm_89 loads it as code for an earlier SM it runs)",
            "gencode-zstd.1.sm_90.ptx\tcuda compute_90 496 bytes (fat binary 1: sm_103 loads it as PTX, compiled when loaded)",
            "arch-specific.1.sm_90a.cubin\tcuda sm_90a 3444 bytes (fat binary 1: sm_90 loads it natively)",
            "arch-specific.2.sm_100.cubin\tcuda sm_100f 5290 bytes (fat binary 1: sm_103 loads it as code for an earlier SM it runs)",
        ]
    );
    // sm_89 finds neither a cubin of major version 8 nor PTX old enough in the second.
    assert_eq!(code, 1);
    assert!(
        err.contains("warning: sm_89 loads nothing from CUDA fat binary 1 of '"),
        "{err}"
    );
}

#[test]
fn a_device_archive_holds_the_bytes_written_to_a_folder() {
    // Compressed CUDA entries (zstd and lz4) beside a compressed HIP bundle, on eight threads:
    // each member of the archive is the file the same extraction writes into a folder.
    let dir = tempfile::tempdir().unwrap();
    let cuda = samples_dir().join("cuda");
    let inputs = [
        cuda.join("gencode-zstd.o"),
        cuda.join("gencode-lz.o"),
        samples_dir().join("llvm23/hip-compressed.o"),
    ];
    let args = [
        "extract", "--arch", "sm_90", "--arch", "sm_80", "--arch", "gfx90a",
    ];
    let folder = dir.path().join("folder");
    let archive = dir.path().join("dev.a");
    for out in [&folder, &archive] {
        succeed(
            offload()
                .env("RAYON_NUM_THREADS", "8")
                .args(args)
                .arg("-o")
                .arg(out)
                .args(&inputs),
        );
    }
    let mut written: Vec<Vec<u8>> = files(&folder).into_values().collect();
    let bytes = std::fs::read(&archive).unwrap();
    let members = object::read::archive::ArchiveFile::parse(&*bytes).unwrap();
    let mut held: Vec<Vec<u8>> = members
        .members()
        .map(|m| m.unwrap().data(&*bytes).unwrap().to_vec())
        .collect();
    written.sort();
    held.sort();
    assert!(written.len() >= 5, "{} files", written.len());
    assert!(
        held == written,
        "{} members, {} files",
        held.len(),
        written.len()
    );
}
