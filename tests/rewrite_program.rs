//! `offload strip` and `offload compress` on linked HIP programs and shared libraries, built
//! here by clang-19 with GNU ld and with lld: the file gets smaller, the program still runs,
//! and the stand-in HIP runtime (tests/support/hip_runtime.c) finds a valid bundle through
//! every wrapper.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util;
use crate::util::native::{compile_hip, hip_objects, run, support, ARCHES, KEPT_GFX90A};
use crate::util::{offload, offload_in, samples_dir, succeed};
use offload::format::container::NewBytes;
use offload::host::program::{rewrite_hip_fatbin, NewProgram, RewriteContainer, Rewriting};

fn extracted(file: &Path, dir: &Path) -> Vec<Vec<u8>> {
    succeed(offload().args([
        "extract",
        file.to_str().unwrap(),
        "--arch",
        "gfx90a",
        "-q",
        "-o",
        dir.to_str().unwrap(),
    ]));
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    names.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

#[test]
fn stripped_programs_shrink_and_still_register_valid_bundles() {
    let Some(clang) = util::tool("clang-19") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let objects = hip_objects(&clang, dir.path());
    let runtime = support("hip_runtime.c");
    for linker in ["bfd", "lld"] {
        let program = dir.path().join(format!("app-{linker}"));
        succeed(
            Command::new(&clang)
                .arg(format!("-fuse-ld={linker}"))
                .arg(&runtime)
                .args(&objects)
                .arg("-o")
                .arg(&program),
        );
        assert!(run(&program, None).starts_with("bundle, 7 entries\n"));

        let stripped = dir.path().join(format!("app-{linker}-gfx90a"));
        succeed(offload().args([
            "strip",
            program.to_str().unwrap(),
            "--keep",
            "gfx90a",
            "-o",
            stripped.to_str().unwrap(),
        ]));
        assert_eq!(run(&stripped, None), KEPT_GFX90A, "{linker}");
        let (before, after) = (
            std::fs::metadata(&program).unwrap().len(),
            std::fs::metadata(&stripped).unwrap().len(),
        );
        assert!(
            after + 16384 <= before,
            "{linker}: {before} -> {after} bytes"
        );
        // Every kept code object is the original's, byte for byte.
        assert_eq!(
            extracted(&program, &dir.path().join(format!("a-{linker}"))),
            extracted(&stripped, &dir.path().join(format!("b-{linker}")))
        );
        // Rewritten again: compressed, it still runs.
        let compressed = dir.path().join(format!("app-{linker}-z"));
        succeed(offload().args([
            "compress",
            stripped.to_str().unwrap(),
            "-o",
            compressed.to_str().unwrap(),
        ]));
        assert_eq!(
            run(&compressed, None),
            "compressed bundle, version 2, zstd\ncompressed bundle, version 2, zstd\n"
        );
    }
}

#[test]
fn a_shared_library_stripped_in_place_still_loads() {
    let Some(clang) = util::tool("clang-19") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let objects = hip_objects(&clang, dir.path());
    let library = dir.path().join("libkernels.so");
    succeed(
        Command::new(&clang)
            .args(["-fuse-ld=lld", "-shared", "-fPIC"])
            .args(&objects)
            .arg("-o")
            .arg(&library),
    );
    let program = dir.path().join("uses-library");
    succeed(
        Command::new(&clang)
            .arg(support("hip_runtime.c"))
            .arg("-Wl,--no-as-needed")
            .arg(format!("-L{}", dir.path().display()))
            .args(["-lkernels", "-o"])
            .arg(&program),
    );
    let before = std::fs::metadata(&library).unwrap().len();
    succeed(offload().args([
        "strip",
        library.to_str().unwrap(),
        "--keep",
        "gfx90a",
        "--in-place",
    ]));
    assert!(std::fs::metadata(&library).unwrap().len() + 16384 <= before);
    assert_eq!(run(&program, Some(dir.path())), KEPT_GFX90A);
}

#[test]
fn a_pointer_into_the_middle_of_a_bundle_is_refused_and_the_file_left_alone() {
    use object::{Object, ObjectSection};
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(samples_dir().join("linked/hip-app")).unwrap();
    // The dynamic relocation that fills the second wrapper points at its bundle, at 0x5000.
    let rela = {
        let file = object::File::parse(&*bytes).unwrap();
        let section = file.section_by_name(".rela.dyn").unwrap();
        let (offset, size) = section.file_range().unwrap();
        (offset as usize, size as usize)
    };
    let entry = (rela.0..rela.0 + rela.1)
        .step_by(24)
        .find(|&at| u64::from_le_bytes(bytes[at + 16..at + 24].try_into().unwrap()) == 0x5000)
        .expect("a relocation to the second bundle");
    bytes[entry + 16..entry + 24].copy_from_slice(&0x5008u64.to_le_bytes());
    let path = dir.path().join("app");
    std::fs::write(&path, &bytes).unwrap();
    let out = offload()
        .args(["strip", "--keep", "gfx90a", "--in-place"])
        .arg(&path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("an address inside .hip_fatbin (0x5008) is not the start of a bundle"),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn damaged_programs_give_errors_not_panics() {
    use offload::ops::rewrite::{rewrite_file, Change, RewriteConfig, Summary};
    let config = RewriteConfig {
        change: Change::Keep(vec!["gfx90a".parse().unwrap()]),
        allow_empty: true,
        max_decompressed: 1 << 26,
        ptx: Default::default(),
    };
    let mut state = 0x1234_5678_9abc_def1u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let samples = [
        "linked/hip-app",
        "linked/libhip.so",
        "linked/hip-rdc-app",
        "linked/hip-app.exe",
    ];
    for sample in samples {
        let good = std::fs::read(samples_dir().join(sample)).unwrap();
        for round in 0..600 {
            let mut bytes = good.clone();
            if round % 4 == 0 {
                bytes.truncate((next() % bytes.len() as u64) as usize);
            } else {
                // Headers and the first bundles are where the damage matters.
                let span = bytes.len().min(0x3000) as u64;
                for _ in 0..1 + round % 6 {
                    let at = (next() % span) as usize;
                    bytes[at] = next() as u8;
                }
            }
            let mut summary = Summary::default();
            let _ = rewrite_file(Path::new(sample), &bytes, &config, &mut summary);
            // And when the bundles grow, to move to a new segment.
            let grown = |here: &[u8], _| {
                let size = container_len(here)?;
                Ok(Some(NewBytes::Made(
                    [here.get(..size).unwrap_or(here), &[0xee; 8192]].concat(),
                )))
            };
            let _ = rewrite_by(&bytes, &grown);
        }
    }
}

/// `file` with every container of its `.hip_fatbin` rewritten by `rewrite` (none decompressed).
fn rewrite_by<'a>(
    file: &'a [u8],
    rewrite: &RewriteContainer<'_>,
) -> Result<Option<NewProgram<'a>>, offload::host::Error> {
    let inflate = |_: &[u8], _: u64, _: &mut dyn FnMut(&[u8]) -> std::io::Result<()>| {
        unreachable!("nothing is decompressed here")
    };
    let how = Rewriting {
        size_of: &container_len,
        boundary: &|_| None,
        rewrite,
        inflate: &inflate,
        beside: None,
        destination: None,
    };
    rewrite_hip_fatbin(file, &how)
}

/// Every code object of `file` (all of `extract --arch` for each test target), in order.
fn every_code_object(file: &Path, dir: &Path) -> Vec<Vec<u8>> {
    let found = code_objects_for(file, dir, &ARCHES);
    assert_eq!(found.len(), 2 * ARCHES.len(), "{}", file.display());
    found
}

/// Every code object of `file` for `arches`, extracted into `dir`, in order of their names.
fn code_objects_for(file: &Path, dir: &Path, arches: &[&str]) -> Vec<Vec<u8>> {
    let mut command = offload();
    command
        .arg("extract")
        .arg(file)
        .args(["-q", "--exact", "-o"])
        .arg(dir);
    for arch in arches {
        command.args(["--arch", arch]);
    }
    succeed(&mut command);
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    names.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

/// Checks the loaded segment of `file` that holds `.hip_fatbin` after a decompression that
/// grew it: the last one, read-only, page-aligned, its offset congruent to its address; and
/// `readelf -lW` reads the program headers without a warning.
fn check_appended_segment(file: &Path) {
    use object::elf::{FileHeader64, PF_R, PT_LOAD};
    use object::read::elf::{FileHeader, ProgramHeader};
    use object::{LittleEndian as LE, Object, ObjectSection, ObjectSymbol};
    let bytes = std::fs::read(file).unwrap();
    let header = FileHeader64::<LE>::parse(&*bytes).unwrap();
    let loads: Vec<_> = header
        .program_headers(LE, &*bytes)
        .unwrap()
        .iter()
        .filter(|p| p.p_type(LE) == PT_LOAD)
        .collect();
    let last = loads.last().unwrap();
    let (offset, address, size) = (last.p_offset(LE), last.p_vaddr(LE), last.p_filesz(LE));
    assert_eq!(last.p_flags(LE), PF_R, "{}", file.display());
    assert_eq!(offset % 4096, 0);
    assert_eq!(address % 4096, 0);
    assert_eq!(offset % last.p_align(LE), address % last.p_align(LE));
    assert!(loads
        .windows(2)
        .all(|w| w[0].p_vaddr(LE) < w[1].p_vaddr(LE)));
    assert_eq!(offset + size, bytes.len() as u64);
    let parsed = object::File::parse(&*bytes).unwrap();
    let fatbin = parsed.section_by_name(".hip_fatbin").unwrap();
    assert_eq!(fatbin.address(), address);
    assert_eq!(fatbin.file_range(), Some((offset, size)));
    // Symbols of the bundles follow them.
    for symbol in parsed.symbols().chain(parsed.dynamic_symbols()) {
        if symbol.section_index() == Some(fatbin.index()) {
            assert!(
                (address..=address + size).contains(&symbol.address()),
                "{}: {} at {:#x}",
                file.display(),
                symbol.name().unwrap(),
                symbol.address()
            );
        }
    }
    if let Some(readelf) = util::tool("readelf") {
        let out = Command::new(readelf).arg("-lW").arg(file).output().unwrap();
        assert!(out.status.success());
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "",
            "{}",
            file.display()
        );
    }
}

/// Compresses `file` into `FILE.z`, decompresses that into `FILE.d` (in place, for a shared
/// library, as a user would), and checks the result: the grown bundles in their own segment,
/// every code object the original's.
fn round_trip(file: &Path, dir: &Path) -> PathBuf {
    let (compressed, decompressed) = (file.with_extension("z"), file.with_extension("d"));
    succeed(
        offload()
            .arg("compress")
            .arg(file)
            .arg("-o")
            .arg(&compressed),
    );
    std::fs::copy(&compressed, &decompressed).unwrap();
    succeed(
        offload()
            .arg("decompress")
            .arg(&decompressed)
            .arg("--in-place"),
    );
    check_appended_segment(&decompressed);
    let name = file.file_name().unwrap().to_str().unwrap();
    assert_eq!(
        every_code_object(file, &dir.join(format!("{name}-before"))),
        every_code_object(&decompressed, &dir.join(format!("{name}-after"))),
        "{name}"
    );
    decompressed
}

#[test]
fn the_symbols_of_bundles_follow_them_into_the_new_segment() {
    use object::{Object, ObjectSection, ObjectSymbol};
    let dir = tempfile::tempdir().unwrap();
    // clang names each bundle of a program linked with relocatable device code by a symbol.
    let program = dir.path().join("hip-rdc-app");
    std::fs::copy(samples_dir().join("linked/hip-rdc-app"), &program).unwrap();
    let decompressed = dir.path().join("hip-rdc-app.d");
    succeed(
        offload()
            .arg("compress")
            .arg(&program)
            .arg("-o")
            .arg(dir.path().join("z")),
    );
    succeed(
        offload()
            .arg("decompress")
            .arg(dir.path().join("z"))
            .arg("-o")
            .arg(&decompressed),
    );
    check_appended_segment(&decompressed);
    let arches = ["gfx906", "gfx90a"];
    assert_eq!(
        code_objects_for(&program, &dir.path().join("before"), &arches),
        code_objects_for(&decompressed, &dir.path().join("after"), &arches)
    );
    let bytes = std::fs::read(&decompressed).unwrap();
    let parsed = object::File::parse(&*bytes).unwrap();
    let fatbin = parsed.section_by_name(".hip_fatbin").unwrap();
    let named: Vec<(String, u64)> = parsed
        .symbols()
        .filter(|s| s.section_index() == Some(fatbin.index()))
        .map(|s| (s.name().unwrap().to_string(), s.address()))
        .collect();
    assert_eq!(
        named,
        [
            (
                "__hip_fatbin_128bbf042f26629c".to_string(),
                fatbin.address()
            ),
            (
                "__hip_fatbin_6fdbd57b89b5d02a".to_string(),
                fatbin.address()
            ),
        ]
    );
    assert_ne!(fatbin.address(), 0x1000);
}

#[test]
fn compressed_then_decompressed_programs_run_and_keep_every_code_object() {
    let Some(clang) = util::tool("clang-19") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let objects = hip_objects(&clang, d);
    // What the programs print once every bundle is plain: both objects built uncompressed.
    let plain_dir = d.join("plain");
    std::fs::create_dir(&plain_dir).unwrap();
    let plain = [
        compile_hip(&clang, &plain_dir, "kernel.hip", &ARCHES, &[]),
        compile_hip(&clang, &plain_dir, "vadd.hip", &ARCHES, &[]),
    ];
    let runtime = support("hip_runtime.c");
    let link = |linker: &str, objects: &[PathBuf], out: &Path, extra: &[&str]| {
        succeed(
            Command::new(&clang)
                .arg(format!("-fuse-ld={linker}"))
                .args(extra)
                .args(objects)
                .arg("-o")
                .arg(out),
        );
    };
    for linker in ["bfd", "lld"] {
        let expected = d.join(format!("expected-{linker}"));
        link(
            linker,
            &[runtime.clone(), plain[0].clone(), plain[1].clone()],
            &expected,
            &[],
        );
        let expected = run(&expected, None);
        assert_eq!(expected.matches("bundle, 7 entries\n").count(), 2);

        let program = d.join(format!("app-{linker}"));
        link(
            linker,
            &[runtime.clone(), objects[0].clone(), objects[1].clone()],
            &program,
            &[],
        );
        let decompressed = round_trip(&program, d);
        assert_eq!(run(&decompressed, None), expected, "{linker}");

        // A shared library of the kernels, decompressed in place, loaded by a program.
        let lib_dir = d.join(format!("lib-{linker}"));
        std::fs::create_dir(&lib_dir).unwrap();
        let library = lib_dir.join("libkernels.so");
        link(linker, &objects, &library, &["-shared", "-fPIC"]);
        let user = lib_dir.join("uses-library");
        let search = format!("-L{}", lib_dir.display());
        link(
            linker,
            std::slice::from_ref(&runtime),
            &user,
            &["-Wl,--no-as-needed", &search, "-lkernels"],
        );
        let decompressed = round_trip(&library, d);
        std::fs::rename(&decompressed, &library).unwrap();
        assert_eq!(run(&user, Some(&lib_dir)), expected, "{linker} library");
    }
}

#[test]
fn decompressing_a_program_with_nothing_compressed_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let sample = samples_dir().join("linked/hip-rdc-app");
    let (code, out, err) = offload_in(
        dir.path(),
        &["decompress", sample.to_str().unwrap(), "-o", "out"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.ends_with("(0 bundles or binaries rewritten)\n"),
        "{out}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("out")).unwrap(),
        std::fs::read(&sample).unwrap()
    );
}

/// The size of the bundle or compressed bundle at the start of `here`.
fn container_len(here: &[u8]) -> Result<usize, offload::format::Error> {
    use offload::format::{bundle::Bundle, ccob::CompressedBundle};
    let size = if offload::format::ccob::is_compressed(here) {
        CompressedBundle::parse(here)?.map_or(0, |c| c.size())
    } else {
        Bundle::parse(here)?.map_or(0, |b| b.size())
    };
    Ok(size as usize)
}

#[test]
fn bundles_that_outgrow_their_section_move_to_a_new_segment_and_every_wrapper_follows() {
    use object::{Object, ObjectSection};
    for sample in ["linked/hip-app", "linked/libhip.so", "linked/hip-rdc-app"] {
        let file = std::fs::read(samples_dir().join(sample)).unwrap();
        for growth in [1usize << 16, 1 << 20] {
            let grown = |here: &[u8], _| {
                let mut bytes = here[..container_len(here)?].to_vec();
                bytes.resize(bytes.len() + growth, 0xee);
                Ok(Some(NewBytes::Made(bytes)))
            };
            let new = rewrite_by(&file, &grown)
                .unwrap()
                .unwrap()
                .to_vec()
                .unwrap();
            let parsed = object::File::parse(&*new).unwrap();
            let fatbin = parsed.section_by_name(".hip_fatbin").unwrap();
            let data = fatbin.data().unwrap();
            let segment = parsed.section_by_name(".hipFatBinSegment").unwrap();
            // The pointers: the values in place, and the addends of the relative relocations
            // that set them.
            let mut pointers: Vec<u64> = segment
                .data()
                .unwrap()
                .chunks_exact(24)
                .map(|w| u64::from_le_bytes(w[8..16].try_into().unwrap()))
                .filter(|&p| p != 0)
                .collect();
            let rela = parsed.section_by_name(".rela.dyn").unwrap().data().unwrap();
            let slots = segment.address()..segment.address() + segment.size();
            pointers.extend(rela.chunks_exact(24).filter_map(|r| {
                let at = u64::from_le_bytes(r[0..8].try_into().unwrap());
                let kind = u32::from_le_bytes(r[8..12].try_into().unwrap());
                let addend = u64::from_le_bytes(r[16..24].try_into().unwrap());
                (kind == 8 && slots.contains(&at) && (at - slots.start) % 24 == 8).then_some(addend)
            }));
            let mut pointed = 0;
            for binary in pointers {
                let at = (binary - fatbin.address()) as usize;
                // Each wrapper points at a container, grown by `growth` bytes of 0xee.
                let size = container_len(&data[at..]).unwrap();
                assert!(data[at + size..at + size + growth]
                    .iter()
                    .all(|&b| b == 0xee));
                pointed += 1;
            }
            assert!(pointed >= 1, "{sample}");
            assert!(new.len() > file.len() + growth, "{sample}");
        }
    }
}

/// The processors of the large program's code objects.
const LARGE_ARCHES: [&str; 3] = ["gfx906", "gfx90a", "gfx1030"];

#[test]
fn a_program_with_large_compressed_bundles_decompresses_in_parallel_and_runs() {
    let Some(clang) = util::tool("clang-19") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 12 MiB of text for the kernel's array: code objects of 12 MiB that compress.
    let mut x = 0x9e37_79b9u32;
    let filler: Vec<u8> = (0..12u32 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[(x % 64) as usize]
        })
        .collect();
    std::fs::write(d.join("filler.bin"), &filler).unwrap();
    let embed = format!("--embed-dir={}", d.display());
    let runtime = support("hip_runtime.c");
    let build = |name: &str, extra: &[&str]| {
        let sub = d.join(name);
        std::fs::create_dir(&sub).unwrap();
        let flags: Vec<&str> = [&[embed.as_str(), "-Wno-c23-extensions"], extra].concat();
        let object = compile_hip(&clang, &sub, "large.hip", &LARGE_ARCHES, &flags);
        let program = sub.join("app");
        succeed(
            Command::new(&clang)
                .arg(&runtime)
                .arg(&object)
                .arg("-o")
                .arg(&program),
        );
        program
    };
    let plain = build("plain", &[]);
    let compressed = build("compressed", &["--offload-compress"]);
    assert!(std::fs::metadata(&plain).unwrap().len() > 36 << 20);
    assert!(std::fs::metadata(&compressed).unwrap().len() < 24 << 20);
    // The plain program registers what the decompressed one must; the code objects are the
    // compressed program's (those of the plain one differ in their build's unique ID).
    let expected = run(&plain, None);
    let want = code_objects_for(&compressed, &d.join("want"), &LARGE_ARCHES);
    assert_eq!(want.len(), LARGE_ARCHES.len());
    for round in 0..2 {
        let out = d.join(format!("decompressed-{round}"));
        succeed(
            offload()
                .env("RAYON_NUM_THREADS", "8")
                .arg("decompress")
                .arg(&compressed)
                .arg("-o")
                .arg(&out),
        );
        check_appended_segment(&out);
        assert_eq!(run(&out, None), expected, "round {round}");
        let got = code_objects_for(&out, &d.join(format!("got-{round}")), &LARGE_ARCHES);
        assert!(got == want, "round {round}");
    }
}
