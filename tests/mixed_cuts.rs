//! Programs and libraries with both `.hip_fatbin` and `.nv_fatbin` (built here by clang-22 and
//! ld.lld-22 from a HIP source and a CUDA fat binary), stripped so that both sections shrink:
//! the bytes both free leave the file, in one cut after the second section, to the exact
//! figure the sections' sizes give; what is kept is listed and extracted as it was; the
//! library links and loads, the program runs, and both register only the code kept.

use std::path::{Path, PathBuf};
use std::process::Command;

use object::read::elf::{ElfFile64, FileHeader};
use object::{LittleEndian as LE, Object, ObjectSection, ObjectSegment};
use serde_json::Value;

use crate::util::native::run;
use crate::util::{offload, root, samples_dir, succeed, tool};

/// The AMD targets the HIP code is built for.
const GFX: [&str; 3] = ["gfx90a", "gfx1100", "gfx942"];

/// The smallest page a segment is aligned to.
const PAGE: u64 = 4096;

/// The bytes of section `name` of the object file `path`.
fn section_bytes(path: &Path, name: &str) -> Vec<u8> {
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let section = file.section_by_name(name).unwrap();
    section.data().unwrap().to_vec()
}

/// One CUDA fat binary holding the entries of the fat binaries `fatbins`, in their order:
/// a 16-byte header, then the entries back to back, each sized by its own header.
fn merged_fatbin(fatbins: &[Vec<u8>]) -> Vec<u8> {
    let mut entries = Vec::new();
    for fatbin in fatbins {
        let header = u16::from_le_bytes(fatbin[6..8].try_into().unwrap()) as usize;
        let size = u64::from_le_bytes(fatbin[8..16].try_into().unwrap()) as usize;
        entries.extend_from_slice(&fatbin[header..header + size]);
    }
    let mut out = fatbins[0][..8].to_vec();
    out.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    out.extend_from_slice(&entries);
    out
}

/// Runs the compiler or linker `program` with `args` in `dir`.
fn build(program: &Path, dir: &Path, args: &[&str]) {
    succeed(Command::new(program).current_dir(dir).args(args));
}

/// Builds in `dir` the objects of both runtimes' code: `cuda.o`, the host code of a CUDA kernel
/// embedding a fat binary of nvcc's entries (sm_80, sm_90 and compute_90, then the
/// arch-specific ones), and `hip.o`, a HIP kernel with a 64 KiB device array for each of
/// [`GFX`]. `None` (a skip) without clang-22.
fn objects(dir: &Path) -> Option<PathBuf> {
    let clang = tool("clang-22")?;
    let cuda = samples_dir().join("cuda");
    let fatbins: Vec<Vec<u8>> = ["gencode.o", "arch-specific.o"]
        .iter()
        .map(|o| section_bytes(&cuda.join(o), ".nv_fatbin"))
        .collect();
    std::fs::write(dir.join("kernels.fatbin"), merged_fatbin(&fatbins)).unwrap();
    let kscale = samples_dir().join("linked/kscale.cu");
    build(
        &clang,
        dir,
        &[
            "-x",
            "cuda",
            "--cuda-host-only",
            "-nocudainc",
            "-nocudalib",
            "--cuda-gpu-arch=sm_80",
            "-fPIC",
            "-O2",
            "-Xclang",
            "-target-sdk-version=12.0",
            "-Xclang",
            "-fcuda-include-gpubinary",
            "-Xclang",
            "kernels.fatbin",
            "-c",
            kscale.to_str().unwrap(),
            "-o",
            "cuda.o",
        ],
    );
    let mut x = 0x2545_f491u32;
    let filler: Vec<u8> = (0..64 << 10)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[(x % 64) as usize]
        })
        .collect();
    std::fs::write(dir.join("filler.bin"), filler).unwrap();
    let large = samples_dir().join("src/large.hip");
    let mut args = vec![
        "-x",
        "hip",
        "-nogpulib",
        "-nogpuinc",
        "-O2",
        "-fPIC",
        "-cuid=cuts",
        "--embed-dir=.",
        "-Wno-c23-extensions",
    ];
    let arches: Vec<String> = GFX.iter().map(|g| format!("--offload-arch={g}")).collect();
    args.extend(arches.iter().map(String::as_str));
    args.extend(["-c", large.to_str().unwrap(), "-o", "hip.o"]);
    build(&clang, dir, &args);
    Some(clang)
}

/// `(section, kind, arch)` of every image `ls --json` lists in `path`.
fn listed(path: &Path) -> Vec<(String, String, String)> {
    let out = succeed(offload().args(["ls", "--json"]).arg(path));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    rows.iter()
        .map(|e| {
            let text = |k: &str| e[k].as_str().unwrap_or("-").to_string();
            (text("section"), text("image_kind"), text("arch"))
        })
        .collect()
}

/// The bytes of every entry `extract --exact --arch ARCH` writes from `path`, into `out`.
fn extracted(path: &Path, arch: &str, out: &Path) -> Vec<Vec<u8>> {
    succeed(
        offload()
            .args(["extract", "--exact", "--arch", arch, "-o"])
            .arg(out)
            .arg(path),
    );
    let names = crate::util::file_names(out);
    assert!(!names.is_empty(), "{arch} in {}", path.display());
    names
        .iter()
        .map(|name| std::fs::read(out.join(name)).unwrap())
        .collect()
}

/// A section of containers as the headers say: its file offset and size.
#[derive(Debug, Clone, Copy)]
struct Place {
    offset: u64,
    size: u64,
}

/// `.nv_fatbin` and `.hip_fatbin` of the ELF file `data`, and its alignment of the second.
fn places(data: &[u8]) -> (Place, Place, u64) {
    let file = object::File::parse(data).unwrap();
    let place = |name: &str| {
        let s = file.section_by_name(name).unwrap();
        let (offset, size) = s.file_range().unwrap();
        Place { offset, size }
    };
    let align = file.section_by_name(".hip_fatbin").unwrap().align();
    (place(".nv_fatbin"), place(".hip_fatbin"), align)
}

/// Checks the file `out` stripped from `input` (the sections in that order, both shrunk):
/// `.hip_fatbin` follows `.nv_fatbin`'s packed bytes on its alignment, the program header
/// table (one entry longer, as the segment splits) follows it, and the file loses the whole
/// pages between that and the old end of `.hip_fatbin`: more than either section frees.
fn check_cut(input: &[u8], out: &[u8]) {
    let ((nv, hip, align), (nv2, hip2, _)) = (places(input), places(out));
    assert_eq!(nv2.offset, nv.offset);
    let (nv_freed, hip_freed) = (nv.size - nv2.size, hip.size - hip2.size);
    assert!(
        nv_freed > PAGE && hip_freed > PAGE,
        "{nv_freed} {hip_freed}"
    );
    assert_eq!(hip2.offset, (nv.offset + nv2.size).next_multiple_of(align));
    let elf = ElfFile64::<LE>::parse(out).unwrap();
    let header = elf.elf_header();
    let (phoff, phnum) = (header.e_phoff(LE), u64::from(header.e_phnum(LE)));
    let old_phnum = u64::from(
        ElfFile64::<LE>::parse(input)
            .unwrap()
            .elf_header()
            .e_phnum(LE),
    );
    assert_eq!(phnum, old_phnum + 1);
    assert_eq!(phoff, (hip2.offset + hip2.size).next_multiple_of(8));
    let kept_end = phoff + phnum * 56;
    let cut = (hip.offset + hip.size - kept_end) / PAGE * PAGE;
    assert_eq!(input.len() as u64 - out.len() as u64, cut);
    assert!(
        cut > nv_freed.max(hip_freed),
        "{cut} {nv_freed} {hip_freed}"
    );
    // Every segment maps its offsets to its addresses as the section headers do.
    for section in elf.sections().filter(|s| s.address() != 0 && s.size() > 0) {
        let Some((offset, _)) = section.file_range() else {
            continue;
        };
        let segment = elf
            .segments()
            .find(|g| {
                let (at, size) = g.file_range();
                g.address() <= section.address() && offset >= at && offset < at + size
            })
            .unwrap_or_else(|| panic!("{:?} in no segment", section.name()));
        assert_eq!(
            section.address() - segment.address(),
            offset - segment.file_range().0,
            "{:?}",
            section.name()
        );
    }
}

/// What `readelf` says of `path`, with a warning or an error failing the test.
fn readelf_is_quiet(path: &Path) {
    let Some(readelf) = tool("readelf") else {
        return;
    };
    let out = succeed(Command::new(readelf).args(["-lSdrW"]).arg(path));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.trim().is_empty(), "{}: {err}", path.display());
}

/// Strips `input` into `dir/name` to gfx90a and sm_90 (no PTX), and checks the result.
fn strip_both(input: &Path, dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(name);
    succeed(
        offload()
            .args([
                "strip", "--keep", "gfx90a", "--keep", "sm_90", "--ptx", "drop",
            ])
            .arg(input)
            .arg("-o")
            .arg(&out),
    );
    let rows = |r: &[(&str, &str, &str)]| crate::util::cuda::rows(r);
    assert_eq!(
        listed(&out),
        rows(&[
            (".nv_fatbin", "cubin", "sm_90"),
            // An sm_90 device runs the arch-specific cubin too.
            (".nv_fatbin", "cubin", "sm_90a"),
            (".hip_fatbin", "-", ""),
            (".hip_fatbin", "-", "gfx90a"),
        ])
    );
    check_cut(
        &std::fs::read(input).unwrap(),
        &std::fs::read(&out).unwrap(),
    );
    readelf_is_quiet(&out);
    for arch in ["sm_90", "sm_90a", "gfx90a"] {
        assert_eq!(
            extracted(
                &out,
                arch,
                &dir.join(format!("{}-{arch}", name.replace('/', "-")))
            ),
            extracted(
                input,
                arch,
                &dir.join(format!("{}-{arch}-was", name.replace('/', "-")))
            ),
            "{arch}"
        );
    }
    out
}

/// The lines of what the stand-in runtimes print that name device code: the CUDA fat
/// binary's entries and the bundle's.
fn registered(printed: &str) -> Vec<String> {
    printed
        .lines()
        .filter(|l| l.starts_with("    elf") || l.starts_with("    ptx") || l.contains("hipv4"))
        .map(|l| l.split(" hash ").next().unwrap().trim().to_string())
        .collect()
}

#[test]
fn both_sections_of_a_mixed_library_and_program_give_their_bytes_back() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(clang) = objects(d) else {
        return;
    };
    if tool("ld.lld-22").is_none() {
        return;
    }
    let support = root().join("tests/support");
    let hip_runtime = support.join("hip_runtime.c");
    let cuda_runtime = support.join("cuda_runtime.c");
    let (hip_runtime, cuda_runtime) = (
        hip_runtime.to_str().unwrap(),
        cuda_runtime.to_str().unwrap(),
    );
    build(
        &clang,
        d,
        &[
            "-fuse-ld=lld",
            "-shared",
            "cuda.o",
            "hip.o",
            "-o",
            "libmixed.so",
        ],
    );
    build(
        &clang,
        d,
        &[
            "-fuse-ld=lld",
            hip_runtime,
            cuda_runtime,
            "cuda.o",
            "hip.o",
            "-o",
            "app",
        ],
    );
    // The sm_90 cubin, the sm_90a one (its flags say so), and gfx90a's code object.
    let kept = [
        "elf sm_90 flags 0x11 stored 3448",
        "elf sm_90 flags 0x100011 stored 3448",
        "hipv4-amdgcn-amd-amdhsa--gfx90a ",
    ];
    let app = d.join("app");
    let before = registered(&run(&app, None));
    assert!(before.len() > kept.len(), "{before:?}");
    let stripped = strip_both(&app, d, "app-stripped");
    let after = registered(&run(&stripped, None));
    assert_eq!(after.len(), kept.len(), "{after:?}");
    for (line, want) in after.iter().zip(kept) {
        assert!(line.starts_with(want), "{line}");
        assert!(before.contains(line), "{line} {before:?}");
    }
    // The stripped library is linked against and loaded: the loader relocates the wrappers'
    // pointers onto the containers kept.
    std::fs::create_dir(d.join("stripped")).unwrap();
    let lib = strip_both(&d.join("libmixed.so"), d, "stripped/libmixed.so");
    let lib_dir = lib.parent().unwrap().to_str().unwrap();
    build(
        &clang,
        d,
        &[
            "-fuse-ld=lld",
            "-Wl,--export-dynamic",
            hip_runtime,
            cuda_runtime,
            "-L",
            lib_dir,
            "-Wl,--no-as-needed",
            "-lmixed",
            "-o",
            "user",
        ],
    );
    let printed = run(&d.join("user"), Some(lib.parent().unwrap()));
    assert_eq!(registered(&printed), after);
}
