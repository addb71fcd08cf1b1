//! `offload strip`, `compress` and `decompress` on PE executables and DLLs built here by
//! clang-22 and lld-link-22 for x86-64 and AArch64 Windows: every HIP wrapper, followed from
//! its pointer (an address) to the file, finds a bundle whose code objects are the original's,
//! byte for byte; LLVM's tools read the results without a warning; the checksum lld-link set
//! is computed again. Damaged images give errors that name the file and an offset.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use offload::format::bundle::Bundle;
use offload::format::ccob::CompressedBundle;
use offload::host::program::pe::checksum;

use crate::util;
use crate::util::{offload, root, samples_dir, succeed, text_output};

/// The code objects of one bundle, by entry ID.
pub(crate) type Entries = BTreeMap<String, Vec<u8>>;

/// What every wrapper of a PE image registers, in the order of the wrappers: the entries of
/// its bundle (a compressed one inflated) and whether it was compressed. The pointer of a
/// wrapper is an address: image base + RVA, found in the raw data of the section holding it.
pub(crate) fn registered(file: &[u8]) -> Vec<(Entries, bool)> {
    use object::read::pe::PeFile64;
    use object::{Object, ObjectSection};
    let image = PeFile64::parse(file).unwrap();
    let base = image.relative_address_base();
    let wrappers = image
        .sections()
        .find(|s| s.name() == Ok(".hipFatB"))
        .expect("a .hipFatB section");
    let table = image.section_table();
    let mut found = Vec::new();
    for wrapper in wrappers.data().unwrap().chunks_exact(24) {
        assert_eq!(&wrapper[..8], b"FPIH\x01\0\0\0");
        let address = u64::from_le_bytes(wrapper[8..16].try_into().unwrap());
        let rva = u32::try_from(address - base).unwrap();
        let (offset, _) = table
            .pe_file_range_at(rva)
            .expect("the pointer lands in a section's raw data");
        let here = &file[offset as usize..];
        let (bytes, compressed) = match CompressedBundle::parse(here).unwrap() {
            Some(ccob) => (ccob.decompress(u64::MAX).unwrap(), true),
            None => (here.to_vec(), false),
        };
        let bundle = Bundle::parse(&bytes).unwrap().expect("a bundle");
        let entries = bundle
            .entries()
            .iter()
            .map(|e| (e.id.to_string(), e.data.to_vec()))
            .collect();
        found.push((entries, compressed));
    }
    found
}

/// Builds, in `dir`, an executable and a DLL for `arch` (`x86_64` or `aarch64`) from three HIP
/// translation units (one compressed) for several processors, with `-release` so that lld-link
/// sets the checksum.
pub(crate) fn build(clang: &Path, lld_link: &Path, dir: &Path, arch: &str) -> [PathBuf; 2] {
    let target = format!("--target={arch}-pc-windows-msvc");
    let linked = samples_dir().join("linked");
    let src = samples_dir().join("src");
    let hip = |source: &str, name: &str, extra: &[&str]| {
        let out = dir.join(format!("{name}-{arch}.obj"));
        succeed(
            Command::new(clang)
                .args(["-x", "hip", "-nogpulib", "-nogpuinc", "-O2"])
                .args([&target, "-mno-incremental-linker-compatible", "-c"])
                .arg(format!("-cuid={name}"))
                .args(extra)
                .arg(src.join(source))
                .arg("-o")
                .arg(&out),
        );
        out
    };
    let a = hip(
        "kernel.hip",
        "a",
        &["--offload-arch=gfx906", "--offload-arch=gfx90a"],
    );
    let b = hip(
        "vadd.hip",
        "b",
        &[
            "--offload-arch=gfx90a",
            "--offload-arch=gfx1100",
            "--offload-compress",
        ],
    );
    let c = hip(
        "kernel.hip",
        "c",
        &[
            "-Dkfun=kfun_z",
            "-Dscale=scale_z",
            "--offload-arch=gfx906",
            "--offload-arch=gfx90a",
            "--offload-arch=gfx1100",
        ],
    );
    let host: Vec<PathBuf> = ["main", "hip-stub", "win-crt"]
        .iter()
        .map(|name| {
            let out = dir.join(format!("{name}-{arch}.obj"));
            succeed(
                Command::new(clang)
                    .args([&target, "-O2", "-c"])
                    .arg(linked.join(format!("{name}.c")))
                    .arg("-o")
                    .arg(&out),
            );
            out
        })
        .collect();
    let machine = if arch == "aarch64" { "arm64" } else { "x64" };
    let exe = dir.join(format!("app-{arch}.exe"));
    let dll = dir.join(format!("kernels-{arch}.dll"));
    let link = |out: &Path, kind: &[&str], objects: &[&PathBuf]| {
        succeed(
            Command::new(lld_link)
                .arg(format!("-machine:{machine}"))
                .args(["-nodefaultlib", "-Brepro", "-release"])
                .args(kind)
                .args(objects)
                .arg(format!("-out:{}", out.display())),
        );
    };
    link(
        &exe,
        &["-entry:main", "-subsystem:console"],
        &[&host[0], &a, &b, &c, &host[1], &host[2]],
    );
    link(
        &dll,
        &["-dll", "-noentry"],
        &[&a, &b, &c, &host[1], &host[2]],
    );
    [exe, dll]
}

/// Runs `offload ARGS... FILE -o OUT` and returns OUT's bytes.
fn rewritten(file: &Path, out: &Path, args: &[&str]) -> Vec<u8> {
    succeed(offload().args(args).arg(file).arg("-o").arg(out));
    std::fs::read(out).unwrap()
}

/// LLVM's tools read `file` without a warning, and its checksum is the one computed here
/// (`checksum_set`) or still unset.
pub(crate) fn check_with_llvm(file: &Path, checksum_set: bool) {
    for (tool, args) in [
        (
            "llvm-readobj-22",
            &["--file-headers", "--coff-basereloc", "--sections"][..],
        ),
        ("llvm-objdump-22", &["-h"][..]),
    ] {
        let Some(tool) = util::tool(tool) else {
            continue;
        };
        let (code, _, stderr) = text_output(Command::new(tool).args(args).arg(file));
        assert_eq!((code, stderr.as_str()), (0, ""), "{}", file.display());
    }
    let bytes = std::fs::read(file).unwrap();
    let stored = u32::from_le_bytes(bytes[checksum_at(&bytes)..][..4].try_into().unwrap());
    if checksum_set {
        assert_eq!(Some(stored), checksum(&bytes), "{}", file.display());
    } else {
        assert_eq!(stored, 0, "{}", file.display());
    }
}

/// The optional header's `SizeOfImage`.
fn size_of_image(file: &[u8]) -> u32 {
    let nt = u32::from_le_bytes(file[0x3c..0x40].try_into().unwrap()) as usize;
    u32::from_le_bytes(file[nt + 4 + 20 + 56..][..4].try_into().unwrap())
}

/// The base relocation table's RVA, from the data directories.
fn base_relocations_rva(file: &[u8]) -> u32 {
    let nt = u32::from_le_bytes(file[0x3c..0x40].try_into().unwrap()) as usize;
    let directories = nt + 4 + 20 + 112;
    u32::from_le_bytes(file[directories + 5 * 8..][..4].try_into().unwrap())
}

/// Where `.hip_fat` ends in memory (its RVA plus its virtual size), and `.reloc`'s RVA.
fn fat_end_and_reloc(file: &[u8]) -> (u32, u32) {
    let nt = u32::from_le_bytes(file[0x3c..0x40].try_into().unwrap()) as usize;
    let count = u16::from_le_bytes(file[nt + 6..nt + 8].try_into().unwrap()) as usize;
    let optional = u16::from_le_bytes(file[nt + 20..nt + 22].try_into().unwrap()) as usize;
    let table = nt + 24 + optional;
    let (mut fat_end, mut reloc) = (0, 0);
    for k in 0..count {
        let header = &file[table + 40 * k..table + 40 * (k + 1)];
        let size = u32::from_le_bytes(header[8..12].try_into().unwrap());
        let rva = u32::from_le_bytes(header[12..16].try_into().unwrap());
        match &header[..8] {
            b".hip_fat" => fat_end = rva + size,
            b".reloc\0\0" => reloc = rva,
            _ => {}
        }
    }
    (fat_end, reloc)
}

/// The offset of the optional header's `CheckSum` field.
pub(crate) fn checksum_at(file: &[u8]) -> usize {
    let nt = u32::from_le_bytes(file[0x3c..0x40].try_into().unwrap()) as usize;
    nt + 4 + 20 + 64
}

/// The entries of `bundles` that are device code for one of `arches`, or host entries.
fn only(bundles: &[(Entries, bool)], arches: &[&str]) -> Vec<Entries> {
    bundles
        .iter()
        .map(|(entries, _)| {
            entries
                .iter()
                .filter(|(id, _)| id.starts_with("host-") || arches.iter().any(|a| id.ends_with(a)))
                .map(|(id, data)| (id.clone(), data.clone()))
                .collect()
        })
        .collect()
}

#[test]
fn pe_images_are_stripped_compressed_and_decompressed_through_their_wrappers() {
    let (Some(clang), Some(lld_link)) = (util::tool("clang-22"), util::tool("lld-link-22")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for arch in ["x86_64", "aarch64"] {
        for file in build(&clang, &lld_link, dir.path(), arch) {
            let name = file.file_name().unwrap().to_str().unwrap().to_string();
            let input = std::fs::read(&file).unwrap();
            // lld-link's checksum is the one computed here.
            let stored = u32::from_le_bytes(input[checksum_at(&input)..][..4].try_into().unwrap());
            assert_ne!(stored, 0, "{name}");
            assert_eq!(checksum(&input), Some(stored), "{name}");
            let before = registered(&input);
            assert_eq!(before.len(), 3, "{name}");
            assert_eq!(
                before.iter().map(|(_, z)| *z).collect::<Vec<_>>(),
                [false, true, false]
            );

            let stripped_path = dir.path().join(format!("{name}.gfx90a"));
            let stripped = rewritten(&file, &stripped_path, &["strip", "--keep", "gfx90a"]);
            assert!(
                stripped.len() + 8192 <= input.len(),
                "{name}: {} -> {}",
                input.len(),
                stripped.len()
            );
            check_with_llvm(&stripped_path, true);
            // `.hip_fat` is followed only by `.reloc` in memory: the image shrinks, the
            // relocations move down after the bundles, and their directory follows them.
            assert!(
                size_of_image(&stripped) + 0x1000 <= size_of_image(&input),
                "{name}: {:#x} -> {:#x}",
                size_of_image(&input),
                size_of_image(&stripped)
            );
            let (fat_end, reloc_at) = fat_end_and_reloc(&stripped);
            assert_eq!(reloc_at, fat_end.next_multiple_of(0x1000), "{name}");
            assert_eq!(base_relocations_rva(&stripped), reloc_at, "{name}");
            // In place, the same bytes.
            let in_place = dir.path().join(format!("in-place-{name}"));
            std::fs::copy(&file, &in_place).unwrap();
            succeed(
                offload()
                    .args(["strip", "--keep", "gfx90a", "--in-place"])
                    .arg(&in_place),
            );
            assert_eq!(std::fs::read(&in_place).unwrap(), stripped, "{name}");
            let after = registered(&stripped);
            assert_eq!(
                after.iter().map(|(e, _)| e.clone()).collect::<Vec<_>>(),
                only(&before, &["gfx90a"]),
                "{name}"
            );

            let compressed_path = dir.path().join(format!("{name}.z"));
            let compressed = rewritten(&file, &compressed_path, &["compress"]);
            assert!(compressed.len() < input.len(), "{name}");
            check_with_llvm(&compressed_path, true);
            let after = registered(&compressed);
            assert!(after.iter().all(|(_, z)| *z), "{name}");
            assert_eq!(
                after,
                before
                    .iter()
                    .map(|(e, _)| (e.clone(), true))
                    .collect::<Vec<_>>()
            );

            // Decompressed, the bundles outgrow their section and move to a new one.
            let decompressed_path = dir.path().join(format!("{name}.d"));
            let decompressed = rewritten(&compressed_path, &decompressed_path, &["decompress"]);
            check_with_llvm(&decompressed_path, true);
            let after = registered(&decompressed);
            assert_eq!(
                after,
                before
                    .iter()
                    .map(|(e, _)| (e.clone(), false))
                    .collect::<Vec<_>>(),
                "{name}"
            );
            let objdump = util::tool("llvm-objdump-22");
            if let Some(objdump) = objdump {
                let (_, headers, _) =
                    text_output(Command::new(objdump).arg("-h").arg(&decompressed_path));
                let names: Vec<&str> = headers
                    .lines()
                    .filter_map(|l| l.split_whitespace().nth(1))
                    .filter(|n| n.starts_with(".hip"))
                    .collect();
                assert_eq!(names, [".hipFatB", ".hip_gap", ".hip_fat"], "{name}");
            }
            // And stripped again: the new section shrinks in its turn.
            let again_path = dir.path().join(format!("{name}.d.gfx1100"));
            let again = rewritten(
                &decompressed_path,
                &again_path,
                &["strip", "--keep", "gfx1100"],
            );
            assert!(again.len() < decompressed.len(), "{name}");
            check_with_llvm(&again_path, true);
            assert_eq!(
                registered(&again)
                    .into_iter()
                    .map(|(e, _)| e)
                    .collect::<Vec<_>>(),
                only(&before, &["gfx1100"]),
                "{name}"
            );
        }
    }
}

/// `samples/linked/hip-app.exe` with `bytes` written at `at`.
fn damaged(at: usize, bytes: &[u8]) -> Vec<u8> {
    let mut file = std::fs::read(samples_dir().join("linked/hip-app.exe")).unwrap();
    file[at..at + bytes.len()].copy_from_slice(bytes);
    file
}

#[test]
fn damaged_pe_images_give_errors_naming_the_file_and_an_offset() {
    // hip-app.exe: NT headers at 0x78, optional header at 0x90 (ImageBase at 0xa8), data directories at 0x100,
    // section table at 0x180 (.hip_fat is its seventh entry, at 0x270), .reloc's raw data at
    // 0x5800 and .hip_fat's at 0x1000.
    let cases: [(&str, Vec<u8>, &str); 9] = [
        (
            "lfanew",
            damaged(0x3c, &[0xff, 0xff, 0, 0]),
            "offset 0x3c: not a PE image",
        ),
        (
            "sections",
            damaged(0x7e, &[0xff, 0xff]),
            "offset 0x8c: program or section headers lie outside the file",
        ),
        (
            "alignment",
            damaged(0xb0, &[0x00, 0x30, 0, 0]),
            "offset 0xb0: inconsistent PE headers: SectionAlignment 0x3000 and FileAlignment 0x200",
        ),
        (
            "raw data",
            damaged(0x270 + 20, &[0, 0, 0, 1]),
            "offset 0x270: the raw data of .hip_fat lies outside the file",
        ),
        (
            "overlapping raw data",
            damaged(0x180 + 7 * 40 + 20, &[0x00, 0x20, 0, 0]),
            "offset 0x298: the raw data of .reloc lies inside .hip_fat, whose bytes move",
        ),
        (
            "image base",
            damaged(0xa8, &[0xff; 8]),
            "offset 0xa8: inconsistent PE headers: ImageBase 0xffffffffffffffff",
        ),
        (
            "relocation block",
            damaged(0x5800 + 4, &[3, 0, 0, 0]),
            "offset 0x5804: inconsistent PE headers: a base relocation block of 0x3 bytes",
        ),
        (
            "signed",
            damaged(0x100 + 4 * 8, &[0, 0x60, 0, 0, 8, 0, 0, 0]),
            "offset 0x120: the image is signed",
        ),
        (
            "bundle",
            damaged(0x1000 + 24, &[0xff; 8]),
            "section '.hip_fat': offset 0x",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let count = cases.len();
    for (what, bytes, expected) in cases {
        let file = dir.path().join(format!("{}.exe", what.replace(' ', "-")));
        std::fs::write(&file, &bytes).unwrap();
        let (code, _, stderr) = text_output(
            offload()
                .args(["strip", "--keep", "gfx90a", "--in-place"])
                .arg(&file),
        );
        assert_ne!(code, 0, "{what}");
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        assert!(
            stderr.contains(&format!("'{}'", file.display())),
            "{what}: {stderr}"
        );
        assert!(stderr.contains(expected), "{what}: {stderr}");
        assert_eq!(
            std::fs::read(&file).unwrap(),
            bytes,
            "{what}: the input changed"
        );
    }
    // No temporary file is left behind.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), count);
}

#[test]
fn mach_o_files_are_refused_with_a_reason() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.o");
    let file = root().join("samples/linked/macho-offload.o");
    let (code, _, stderr) = text_output(
        offload()
            .args(["strip", "--keep", "gfx90a"])
            .arg(&file)
            .arg("-o")
            .arg(&out),
    );
    assert_ne!(code, 0);
    assert!(
        stderr.contains("device code in Mach-O files is not rewritten: no toolchain makes offload Mach-O programs"),
        "{stderr}"
    );
    assert!(!out.exists());
}

#[test]
fn a_mingw_image_keeps_its_symbol_table_and_debug_sections_readable() {
    let Some(clang) = util::tool("clang-22") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let target = "--target=x86_64-w64-windows-gnu";
    let linked = samples_dir().join("linked");
    // The MinGW start-up code calls __main; there is no MinGW runtime here.
    std::fs::write(dir.path().join("main-stub.c"), "void __main(void) {}\n").unwrap();
    let mut objects = Vec::new();
    for source in [
        linked.join("main.c"),
        linked.join("hip-stub.c"),
        linked.join("win-crt.c"),
        dir.path().join("main-stub.c"),
    ] {
        let out = dir
            .path()
            .join(source.with_extension("o").file_name().unwrap());
        succeed(
            Command::new(&clang)
                .args([target, "-g", "-O2", "-c"])
                .arg(&source)
                .arg("-o")
                .arg(&out),
        );
        objects.push(out);
    }
    let kernels = dir.path().join("kernels.o");
    succeed(
        Command::new(&clang)
            .args([
                "-x",
                "hip",
                "-nogpulib",
                "-nogpuinc",
                "-O2",
                "-g",
                target,
                "-c",
            ])
            .args([
                "-cuid=mingw",
                "--offload-arch=gfx906",
                "--offload-arch=gfx90a",
            ])
            .arg(samples_dir().join("src/kernel.hip"))
            .arg("-o")
            .arg(&kernels),
    );
    objects.push(kernels);
    let exe = dir.path().join("app.exe");
    succeed(
        Command::new(&clang)
            .args([target, "-fuse-ld=lld", "-nostdlib", "-Wl,-e,main", "-g"])
            .args(&objects)
            .arg("-o")
            .arg(&exe),
    );
    let input = std::fs::read(&exe).unwrap();
    let before = registered(&input);
    let symbols = |file: &Path| {
        let objdump = util::tool("llvm-objdump-22")?;
        let (code, out, err) = text_output(Command::new(objdump).arg("-t").arg(file));
        assert_eq!((code, err.as_str()), (0, ""));
        Some(out.lines().skip(2).map(str::to_string).collect::<Vec<_>>())
    };
    let stripped = dir.path().join("app-gfx90a.exe");
    let compressed = dir.path().join("app.z.exe");
    let decompressed = dir.path().join("app.d.exe");
    rewritten(&exe, &stripped, &["strip", "--keep", "gfx90a"]);
    rewritten(&exe, &compressed, &["compress"]);
    rewritten(&compressed, &decompressed, &["decompress"]);
    for file in [&stripped, &compressed, &decompressed] {
        check_with_llvm(file, false);
        // The COFF symbol table after the moved raw data is found where it went.
        assert_eq!(symbols(file), symbols(&exe), "{}", file.display());
        if let Some(dwarfdump) = util::tool("llvm-dwarfdump-22") {
            let (code, out, _) = text_output(Command::new(dwarfdump).arg("--verify").arg(file));
            assert_eq!(code, 0, "{}", file.display());
            assert!(out.ends_with("No errors.\n"), "{}: {out}", file.display());
        }
    }
    assert_eq!(
        registered(&std::fs::read(&stripped).unwrap())
            .into_iter()
            .map(|(e, _)| e)
            .collect::<Vec<_>>(),
        only(&before, &["gfx90a"])
    );
    assert_eq!(registered(&std::fs::read(&decompressed).unwrap()), before);
}
