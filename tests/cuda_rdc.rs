//! `offload strip` of relocatable device code (`nvcc -rdc`) in linked libraries: the fat
//! binaries of `__nv_relfatbin` are stripped beside those of `.nv_fatbin`, each wrapper and
//! relocation follows its own section's fat binary, the stand-in CUDA runtime registers what
//! stayed, and cuobjdump lists it.

use std::path::{Path, PathBuf};
use std::process::Command;

use object::read::elf::{ElfFile64, SectionHeader};
use object::{LittleEndian as LE, Object, ObjectSection};

use crate::util::cuda::{cuobjdump, registered, stand_in_runtime};
use crate::util::{offload, samples_dir, succeed, text_output};

/// `(section, arch)` of every entry `ls` lists in `path`, in file order.
fn entries(path: &Path) -> Vec<(String, String)> {
    let out = succeed(offload().args(["ls", "--json"]).arg(path));
    let all: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    all.iter()
        .map(|e| {
            let text = |k: &str| e[k].as_str().unwrap().to_string();
            (text("section"), text("arch"))
        })
        .collect()
}

fn pairs(rows: &[(&str, &str)]) -> Vec<(String, String)> {
    rows.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// Strips `input` to `dir/name` keeping sm_90; what it said.
fn strip_to_sm_90(input: &Path, dir: &Path, name: &str) -> (PathBuf, String) {
    let out = dir.join(name);
    let (code, said, err) = text_output(
        offload()
            .arg("strip")
            .arg(input)
            .args(["--keep", "sm_90", "-o"])
            .arg(&out),
    );
    assert_eq!(code, 0, "{err}");
    (out, said)
}

/// What `cuobjdump -all --list-elf --list-ptx` prints for `path` (every section).
fn cuobjdump_all(tool: &Path, path: &Path) -> Vec<String> {
    let out = succeed(
        Command::new(tool)
            .args(["-all", "--list-elf", "--list-ptx"])
            .arg(path),
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The bytes every entry of `arch` extracted from `path` into `dir/name` holds, in order of
/// their names.
fn extracted(path: &Path, dir: &Path, name: &str, arch: &str) -> Vec<Vec<u8>> {
    let out = dir.join(format!("{name}-{arch}"));
    succeed(
        offload()
            .args(["extract", "--exact", "--arch", arch, "-o"])
            .arg(&out)
            .arg(path),
    );
    crate::util::file_names(&out)
        .iter()
        .map(|name| std::fs::read(out.join(name)).unwrap())
        .collect()
}

#[test]
fn a_device_linked_library_strips_both_sections_and_registers_what_stayed() {
    let dir = tempfile::tempdir().unwrap();
    let input = samples_dir().join("cuda/librdc.so");
    let rel = "__nv_relfatbin";
    assert_eq!(
        entries(&input),
        pairs(&[
            (rel, "sm_80"),
            (rel, "sm_90"),
            (rel, "compute_90"),
            (rel, "sm_80"),
            (rel, "sm_90"),
            (rel, "compute_90"),
            (".nv_fatbin", "sm_80"),
            (".nv_fatbin", "sm_90"),
        ])
    );
    let (out, said) = strip_to_sm_90(&input, dir.path(), "librdc.so");
    assert!(
        said.contains(
            "librdc.so: 8 device images went to 5, 53736 bytes to 49640 (3 bundles or binaries rewritten)"
        ),
        "{said}"
    );
    assert_eq!(
        entries(&out),
        pairs(&[
            (rel, "sm_90"),
            (rel, "compute_90"),
            (rel, "sm_90"),
            (rel, "compute_90"),
            (".nv_fatbin", "sm_90"),
        ])
    );
    // Kept entries are the bytes they were.
    for arch in ["sm_90", "compute_90"] {
        let after = extracted(&out, dir.path(), "after", arch);
        assert_eq!(after.len(), 2 + usize::from(arch == "sm_90"), "{arch}");
        assert!(
            after == extracted(&input, dir.path(), "before", arch),
            "{arch}: the kept entries changed"
        );
    }
    if let Some(tool) = cuobjdump() {
        assert_eq!(
            cuobjdump_all(&tool, &out),
            [
                "ELF file    1: librdc.1.sm_90.cubin",
                "ELF file    2: librdc.2.sm_90.cubin",
                "PTX file    1: librdc.1.sm_90.ptx",
                "ELF file    3: librdc.3.sm_90.cubin",
                "PTX file    2: librdc.2.sm_90.ptx",
            ]
        );
    }
    // Loaded: the device link's wrapper registers its fat binary and lists the prelinked ones
    // of __nv_relfatbin, each now without its sm_80 cubin, the rest stored as it was.
    if !stand_in_runtime(dir.path()) {
        return;
    }
    let load = |lib: &Path| {
        let script = format!("import ctypes; ctypes.CDLL('{}')", lib.display());
        registered(dir.path(), Path::new("python3"), &["-c", &script])
    };
    let before = load(&input);
    assert_eq!(before.matches("elf sm_80").count(), 3, "{before}");
    let mut sizes = [7160, 4928, 5560].into_iter();
    let want: String = before
        .lines()
        .filter(|l| !l.contains("elf sm_80"))
        .map(|l| match l.strip_prefix("  fat binary, ") {
            Some(_) => format!("  fat binary, {} bytes\n", sizes.next().unwrap()),
            None => format!("{l}\n"),
        })
        .collect();
    assert_eq!(sizes.next(), None, "{before}");
    assert_eq!(load(&out), want);
}

#[test]
fn relocatable_code_alone_is_stripped_and_every_wrapper_follows_it() {
    let dir = tempfile::tempdir().unwrap();
    let input = samples_dir().join("cuda/librelfatbin.so");
    let (out, said) = strip_to_sm_90(&input, dir.path(), "librelfatbin.so");
    assert!(said.contains("6 device images went to 4"), "{said}");
    let rel = "__nv_relfatbin";
    assert_eq!(
        entries(&out),
        pairs(&[
            (rel, "sm_90"),
            (rel, "compute_90"),
            (rel, "sm_90"),
            (rel, "compute_90"),
        ])
    );
    // Each wrapper, and the relocation that sets it, holds the start of a fat binary.
    let data = std::fs::read(&out).unwrap();
    let (starts, wrappers) = fat_binaries_and_wrappers(&data);
    assert_eq!(wrappers.len(), 2);
    for w in &wrappers {
        assert!(starts.contains(&w.value), "wrapper at {:#x}", w.at);
        assert_eq!(w.addend, w.value, "wrapper at {:#x}", w.at);
    }
    assert_eq!(starts.len(), 2);
    if let Some(tool) = cuobjdump() {
        assert_eq!(
            cuobjdump_all(&tool, &out),
            [
                "ELF file    1: librelfatbin.1.sm_90.cubin",
                "PTX file    1: librelfatbin.1.sm_90.ptx",
                "ELF file    2: librelfatbin.2.sm_90.cubin",
                "PTX file    2: librelfatbin.2.sm_90.ptx",
            ]
        );
    }
}

/// A CUDA wrapper: the file offset and the address of its pointer, the address the pointer
/// holds, and the addend of the relative relocation that sets it (0 when none does).
struct Wrapper {
    at: u64,
    address: u64,
    value: u64,
    addend: u64,
}

/// The addresses of the fat binaries in `__nv_relfatbin`, and the CUDA wrappers.
fn fat_binaries_and_wrappers(data: &[u8]) -> (Vec<u64>, Vec<Wrapper>) {
    let file = ElfFile64::<LE>::parse(data).unwrap();
    let rel = file.section_by_name("__nv_relfatbin").unwrap();
    let bytes = rel.data().unwrap();
    let mut starts = Vec::new();
    let mut at = 0usize;
    while at + 16 <= bytes.len() && bytes[at..at + 4] == 0xba55_ed50u32.to_le_bytes() {
        starts.push(rel.address() + at as u64);
        let header = u16::from_le_bytes(bytes[at + 6..at + 8].try_into().unwrap()) as usize;
        let size = u64::from_le_bytes(bytes[at + 8..at + 16].try_into().unwrap()) as usize;
        at = (at + header + size).next_multiple_of(8);
    }
    let segment = file.section_by_name(".nvFatBinSegment").unwrap();
    let (offset, _) = segment.file_range().unwrap();
    let relocations: Vec<(u64, u64)> = file
        .elf_section_table()
        .iter()
        .filter(|s| s.sh_type(LE) == object::elf::SHT_RELA)
        .flat_map(|s| {
            s.data_as_array::<object::elf::Rela64<LE>, _>(LE, data)
                .unwrap()
        })
        .map(|r| (r.r_offset.get(LE), r.r_addend.get(LE) as u64))
        .collect();
    let wrappers = segment
        .data()
        .unwrap()
        .chunks_exact(24)
        .enumerate()
        .filter(|(_, w)| w[..4] == 0x4662_43b1u32.to_le_bytes())
        .map(|(k, w)| {
            let address = segment.address() + (k * 24 + 8) as u64;
            Wrapper {
                at: offset + (k * 24 + 8) as u64,
                address,
                value: u64::from_le_bytes(w[8..16].try_into().unwrap()),
                addend: relocations
                    .iter()
                    .find(|(at, _)| *at == address)
                    .map_or(0, |(_, addend)| *addend),
            }
        })
        .collect();
    (starts, wrappers)
}

#[test]
fn a_wrapper_inside_a_relocatable_fat_binary_is_refused_naming_its_section() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = std::fs::read(samples_dir().join("cuda/librelfatbin.so")).unwrap();
    let (_, wrappers) = fat_binaries_and_wrappers(&data);
    let Wrapper {
        at, address, value, ..
    } = wrappers[1];
    // The wrapper, and the relocation that sets it, moved 8 bytes into its fat binary.
    let rela = ElfFile64::<LE>::parse(&*data)
        .unwrap()
        .section_by_name(".rela.dyn")
        .unwrap()
        .file_range()
        .unwrap();
    let moved = (value + 8).to_le_bytes();
    data[at as usize..at as usize + 8].copy_from_slice(&moved);
    let mut patched = 0;
    for e in (rela.0..rela.0 + rela.1).step_by(24).map(|e| e as usize) {
        if u64::from_le_bytes(data[e..e + 8].try_into().unwrap()) == address {
            data[e + 16..e + 24].copy_from_slice(&moved);
            patched += 1;
        }
    }
    assert_eq!(patched, 1);
    let input = dir.path().join("librelfatbin.so");
    std::fs::write(&input, &data).unwrap();
    let out = dir.path().join("out.so");
    let (code, _, err) = text_output(
        offload()
            .arg("strip")
            .arg(&input)
            .args(["--keep", "sm_90", "-o"])
            .arg(&out),
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!(
            "an address inside __nv_relfatbin ({:#x}) is not the start of a bundle",
            value + 8
        )),
        "{err}"
    );
    assert!(!out.exists());
}
