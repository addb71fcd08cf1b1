//! `offload kpack`: HIP programs and shared libraries built by clang-22 (several translation
//! units, several processors, compressed bundles and not, `-fgpu-rdc`) split by us and read by
//! AMD's C++ loader and Python archive reader, code object by code object; split then merged
//! back, they run with the stand-in HIP runtime with every code object as it was; a damaged
//! file in a tree writes nothing.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use md5::{Digest, Md5};
use object::{Object, ObjectSection};
use offload::format::bundle::Bundle;
use offload::format::ccob::CompressedBundle;
use offload::format::image_target::ImageTarget;
use offload::format::kpack::ELF_REF_SECTION;
use offload::host::program::kpack_elf::hip_code;

use crate::util;
use crate::util::kpack::{fnv1a64, load, loader, read_with_python};
use crate::util::native::{compile_hip, run, support};
use crate::util::{offload, succeed, temporaries_in, text_output};

/// Code objects per wrapper, in wrapper order: processor -> bytes.
type CodeObjects = Vec<BTreeMap<String, Vec<u8>>>;

/// The device code objects of the program or library at `path`, per wrapper, read from its
/// bundles (compressed ones inflated).
fn code_objects(path: &Path) -> CodeObjects {
    let data = fs::read(path).unwrap();
    let code = hip_code(&data).unwrap().unwrap();
    code.wrappers
        .iter()
        .map(|w| {
            let at = (w.target.unwrap() - code.fatbin.address) as usize;
            let here = &code.fatbin.data[at..];
            let inflated;
            let bytes = match CompressedBundle::parse(here).unwrap() {
                Some(c) => {
                    inflated = c.inflate_bundle(1 << 30).unwrap().unwrap();
                    &inflated[..]
                }
                None => here,
            };
            Bundle::parse(bytes)
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

/// The bytes of section `name` of the ELF file at `path`.
fn section(path: &Path, name: &str) -> Vec<u8> {
    let data = fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let bytes = file.section_by_name(name).unwrap().data().unwrap().to_vec();
    bytes
}

/// A shared library of `units` (source of samples/src, processors, options) built by clang-22
/// at `dir/stage/REL`; `rdc` links them with `-fgpu-rdc` (one device link for all). `None`
/// when clang-22 is missing.
fn library(
    dir: &Path,
    rel: &str,
    units: &[(&str, &[&str], &[&str])],
    rdc: bool,
) -> Option<PathBuf> {
    let clang = util::tool("clang-22")?;
    let build = dir.join(format!("build-{}", rel.replace('/', "_")));
    fs::create_dir_all(&build).unwrap();
    let objects: Vec<PathBuf> = units
        .iter()
        .map(|(source, arches, extra)| compile_hip(&clang, &build, source, arches, extra))
        .collect();
    let out = dir.join("stage").join(rel);
    fs::create_dir_all(out.parent().unwrap()).unwrap();
    let mut link = Command::new(&clang);
    link.args(["-shared", "-fPIC"]);
    if rdc {
        // The device link needs no HIP runtime: an empty libamdhip64 satisfies the driver.
        succeed(
            Command::new("ar")
                .arg("rc")
                .arg(build.join("libamdhip64.a")),
        );
        link.args(["-fgpu-rdc", "--hip-link"])
            .arg(format!("-L{}", build.display()));
        for arch in units[0].1 {
            link.arg(format!("--offload-arch={arch}"));
        }
    }
    succeed(link.args(&objects).arg("-o").arg(&out));
    Some(out)
}

/// The test tree: `lib/libk.so` (kernel.hip for gfx90a and gfx1100; vadd.hip compressed, for
/// gfx1100 only) and `lib/rdc/librdc.so` (both units with `-fgpu-rdc`, for gfx90a:xnack- and
/// gfx1100). Gives the stage folder.
fn tree(dir: &Path) -> Option<PathBuf> {
    library(
        dir,
        "lib/libk.so",
        &[
            ("kernel.hip", &["gfx90a", "gfx1100"], &[]),
            ("vadd.hip", &["gfx1100"], &["--offload-compress"]),
        ],
        false,
    )?;
    library(
        dir,
        "lib/rdc/librdc.so",
        &[
            ("kernel.hip", &["gfx90a:xnack-", "gfx1100"], &["-fgpu-rdc"]),
            ("vadd.hip", &["gfx90a:xnack-", "gfx1100"], &["-fgpu-rdc"]),
        ],
        true,
    )?;
    fs::write(dir.join("stage/README"), "not a binary\n").unwrap();
    Some(dir.join("stage"))
}

fn split(stage: &Path, out: &Path, extra: &[&str]) -> String {
    let output = succeed(
        offload()
            .args(["kpack", "-r", "--name", "k", "-o"])
            .arg(out)
            .arg(stage)
            .args(extra)
            .env("RAYON_NUM_THREADS", "8"),
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Every file under `dir`: relative path -> bytes.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut found = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                found.insert(
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    fs::read(&p).unwrap(),
                );
            }
        }
    }
    found
}

#[test]
fn split_binaries_load_every_code_object_in_amds_loader() {
    let dir = tempfile::tempdir().unwrap();
    let Some(stage) = tree(dir.path()) else {
        return;
    };
    let Some(driver) = loader() else { return };
    let plain = dir.path().join("plain");
    let printed = split(&stage, &plain, &[]);
    assert_eq!(
        printed,
        format!(
            "{0}/lib/libk.so: 2 code-object indices\n\
             {0}/lib/rdc/librdc.so: 2 code-object indices\n\
             {0}/.kpack/k_gfx1100.kpack: 4 code objects for gfx1100\n\
             {0}/.kpack/k_gfx90a.kpack: 1 code object for gfx90a\n\
             {0}/.kpack/k_gfx90a:xnack-.kpack: 2 code objects for gfx90a:xnack-\n\
             1 files without HIP device code copied\n",
            plain.display()
        )
    );
    assert_eq!(fs::read(plain.join("README")).unwrap(), b"not a binary\n");
    // Eight threads, again: the same bytes; zstd storage as a third tree.
    let again = dir.path().join("again");
    split(&stage, &again, &[]);
    assert_eq!(files(&plain), files(&again));
    let zstd = dir.path().join("zstd");
    split(&stage, &zstd, &["--compression", "zstd"]);

    for (rel, search) in [
        ("lib/libk.so", "../.kpack/k_@GFXARCH@.kpack"),
        ("lib/rdc/librdc.so", "../../.kpack/k_@GFXARCH@.kpack"),
    ] {
        let original = code_objects(&stage.join(rel));
        for out in [&plain, &zstd] {
            let binary = out.join(rel);
            let reference = section(&binary, ELF_REF_SECTION);
            let parsed = offload::format::kpack::KpackRef::parse(&reference).unwrap();
            assert_eq!(parsed.kernel_name, rel);
            assert_eq!(parsed.kpack_search_paths, [search]);
            // .hip_fatbin is empty, and the symbols that named its bundles (GNU ld exports
            // them in -fgpu-rdc libraries) name the reference.
            assert!(section(&binary, ".hip_fatbin").is_empty());
            let data = fs::read(&binary).unwrap();
            let file = object::File::parse(&*data).unwrap();
            let sections_named: Vec<String> = object::Object::symbols(&file)
                .filter_map(|symbol| {
                    let index = object::ObjectSymbol::section_index(&symbol)?;
                    Some(file.section_by_index(index).ok()?.name().ok()?.to_string())
                })
                .collect();
            assert!(!sections_named.iter().any(|n| n == ".hip_fatbin"), "{rel}");
            if rel.contains("rdc") {
                assert!(sections_named.iter().any(|n| n == ELF_REF_SECTION), "{rel}");
            }
            let metadata = dir.path().join("ref.msgpack");
            fs::write(&metadata, &reference).unwrap();
            for (index, by_arch) in original.iter().enumerate() {
                for (arch, code) in by_arch {
                    let isa = format!("amdgcn-amd-amdhsa--{arch}");
                    let loaded = load(&driver, &metadata, &binary, index as u64, &[&isa], &[]);
                    assert_eq!(
                        loaded,
                        Ok((code.len() as u64, fnv1a64(code))),
                        "{} #{index} @ {arch}",
                        binary.display()
                    );
                }
            }
        }
    }
    // libk.so's second unit has no gfx90a code: the gfx90a archive lacks its key.
    let binary = plain.join("lib/libk.so");
    let metadata = dir.path().join("ref.msgpack");
    fs::write(&metadata, section(&binary, ELF_REF_SECTION)).unwrap();
    let xnack_on = "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack+";
    assert_eq!(
        load(&driver, &metadata, &binary, 1, &[xnack_on], &[]),
        Err(5)
    );
    // A device with features finds the plain processor's archive.
    let code = &code_objects(&stage.join("lib/libk.so"))[0]["gfx90a"];
    assert_eq!(
        load(&driver, &metadata, &binary, 0, &[xnack_on], &[]),
        Ok((code.len() as u64, fnv1a64(code)))
    );
    // An xnack-off device finds librdc's gfx90a:xnack- archive first, which lacks libk.so's
    // code, and this loader stops there (today's runtime goes on to k_gfx90a.kpack).
    let xnack_off = "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-";
    assert_eq!(
        load(&driver, &metadata, &binary, 0, &[xnack_off], &[]),
        Err(5)
    );
}

#[test]
fn amds_archive_reader_reads_our_archives() {
    let dir = tempfile::tempdir().unwrap();
    let Some(stage) = tree(dir.path()) else {
        return;
    };
    for (scheme, extra) in [("none", &[][..]), ("zstd", &["--compression", "zstd"][..])] {
        let out = dir.path().join(scheme);
        split(&stage, &out, extra);
        let mut expected = Vec::new();
        for rel in ["lib/libk.so", "lib/rdc/librdc.so"] {
            for (index, by_arch) in code_objects(&stage.join(rel)).iter().enumerate() {
                for (arch, code) in by_arch {
                    let md5 = Md5::digest(code)
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect::<String>();
                    expected.push((
                        format!("{rel}#{index}"),
                        arch.clone(),
                        code.len() as u64,
                        md5,
                    ));
                }
            }
        }
        expected.sort();
        let mut read = Vec::new();
        for arch in ["gfx1100", "gfx90a", "gfx90a:xnack-"] {
            let Some(rows) = read_with_python(&out.join(format!(".kpack/k_{arch}.kpack"))) else {
                return;
            };
            read.extend(rows);
        }
        read.sort();
        assert_eq!(read, expected, "{scheme}");
    }
}

#[test]
fn split_then_merged_programs_run_with_every_code_object_as_it_was() {
    let Some(clang) = util::tool("clang-22") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let objects = [
        compile_hip(
            &clang,
            dir.path(),
            "kernel.hip",
            &["gfx90a", "gfx1100"],
            &[],
        ),
        compile_hip(
            &clang,
            dir.path(),
            "vadd.hip",
            &["gfx1100", "gfx90a"],
            &["--offload-compress"],
        ),
    ];
    // Linked by GNU ld and by lld, which lay programs out differently.
    for linker in ["bfd", "lld"] {
        let app = dir.path().join(format!("{linker}/app"));
        fs::create_dir_all(app.parent().unwrap()).unwrap();
        succeed(
            Command::new(&clang)
                .arg(format!("-fuse-ld={linker}"))
                .arg(support("hip_runtime.c"))
                .args(&objects)
                .arg("-o")
                .arg(&app),
        );
        let split_dir = dir.path().join(format!("{linker}/split"));
        succeed(offload().args(["kpack", "-o"]).arg(&split_dir).arg(&app));
        // Split, it runs: each wrapper hands the runtime the reference and its index.
        assert_eq!(
            run(&split_dir.join("app"), None),
            "kpack app#0\nkpack app#1\n"
        );
        let merged_dir = dir.path().join(format!("{linker}/merged"));
        let (code, out, err) = text_output(
            offload()
                .args(["kpack", "--merge", "-o"])
                .arg(&merged_dir)
                .arg(split_dir.join("app")),
        );
        assert_eq!((code, err.as_str()), (0, ""));
        assert_eq!(
            out,
            format!(
                "{}: 2 bundles, 4 code objects put back\n",
                merged_dir.join("app").display()
            )
        );
        let merged = merged_dir.join("app");
        assert_eq!(code_objects(&merged), code_objects(&app));
        // No kpack reference is left, and the stand-in runtime finds a valid bundle per wrapper.
        let data = fs::read(&merged).unwrap();
        let file = object::File::parse(&*data).unwrap();
        assert!(file.section_by_name(ELF_REF_SECTION).is_none());
        // The runtime is handed what the unsplit program hands it: the first bundle plain,
        // the second compressed again as it was.
        let printed = run(&merged, None);
        let sizes = code_objects(&app);
        assert_eq!(
            printed,
            format!(
                "bundle, 3 entries\n  host-x86_64-unknown-linux-gnu- 0\n  \
                 hipv4-amdgcn-amd-amdhsa--gfx1100 {} elf\n  \
                 hipv4-amdgcn-amd-amdhsa--gfx90a {} elf\n\
                 compressed bundle, version 3, zstd\n",
                sizes[0]["gfx1100"].len(),
                sizes[0]["gfx90a"].len()
            )
        );
        assert_eq!(printed, run(&app, None));
    }

    // Archives named with --from, the library case: the same code objects.
    let Some(stage) = tree(dir.path()) else {
        return;
    };
    let out = dir.path().join("tree");
    split(&stage, &out, &[]);
    let archives: Vec<PathBuf> = ["gfx1100", "gfx90a", "gfx90a:xnack-"]
        .iter()
        .map(|a| out.join(format!(".kpack/k_{a}.kpack")))
        .collect();
    let back = dir.path().join("back");
    let mut merge = offload();
    merge
        .args(["kpack", "--merge", "-o"])
        .arg(&back)
        .arg(out.join("lib/libk.so"))
        .arg(out.join("lib/rdc/librdc.so"));
    for a in &archives {
        merge.arg("--from").arg(a);
    }
    succeed(&mut merge);
    // librdc's two wrappers shared one bundle, and share one again.
    let merged_rdc = fs::read(back.join("librdc.so")).unwrap();
    let targets: Vec<_> = hip_code(&merged_rdc)
        .unwrap()
        .unwrap()
        .wrappers
        .iter()
        .map(|w| w.target.unwrap())
        .collect();
    assert_eq!(targets.len(), 2);
    assert_eq!(targets[0], targets[1]);
    for rel in ["lib/libk.so", "lib/rdc/librdc.so"] {
        let name = Path::new(rel).file_name().unwrap();
        assert_eq!(
            code_objects(&back.join(name)),
            code_objects(&stage.join(rel)),
            "{rel}"
        );
    }
}

#[test]
fn a_damaged_file_in_the_tree_is_named_and_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let Some(stage) = tree(dir.path()) else {
        return;
    };
    // The first bundle of a copy of libk.so claims an entry far past its end.
    let good = stage.join("lib/libk.so");
    let mut bytes = fs::read(&good).unwrap();
    let code = hip_code(&bytes).unwrap().unwrap();
    let at = code.fatbin.offset as usize;
    let first_size = at + 24 + 8;
    assert_eq!(&bytes[at..at + 24], b"__CLANG_OFFLOAD_BUNDLE__");
    bytes[first_size..first_size + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let bad = stage.join("lib/zz-damaged.so");
    fs::write(&bad, &bytes).unwrap();
    let out = dir.path().join("out");
    let (code, stdout, err) = text_output(
        offload()
            .args(["kpack", "-r", "-o"])
            .arg(&out)
            .arg(&stage)
            .env("RAYON_NUM_THREADS", "8"),
    );
    // The damaged file is named and left out; the rest of the tree is split all the same,
    // and the exit status says something failed.
    assert_eq!(code, 1, "{err}");
    assert!(
        err.starts_with(&format!("offload kpack: error: '{}': ", bad.display())),
        "{err}"
    );
    assert!(err.contains("section '.hip_fatbin': offset"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!out.join("lib/zz-damaged.so").exists());
    assert!(
        stdout.starts_with(&format!(
            "{0}/lib/libk.so: 2 code-object indices\n{0}/lib/rdc/librdc.so: 2 code-object indices\n",
            out.display()
        )),
        "{stdout}"
    );
    assert!(out.join(".kpack").is_dir());
    assert!(temporaries_in(dir.path()).is_empty());
    // Named alone, not as a tree, the damaged file fails the command and nothing is written.
    let alone = dir.path().join("alone");
    let (code, stdout, _) = text_output(offload().args(["kpack", "-o"]).arg(&alone).arg(&bad));
    assert_eq!((code, stdout.as_str()), (1, ""));
    assert!(!alone.exists(), "nothing is written");

    // Already split: refused, naming the file.
    let split_dir = dir.path().join("once");
    succeed(offload().args(["kpack", "-o"]).arg(&split_dir).arg(&good));
    let (code, _, err) = text_output(
        offload()
            .args(["kpack", "-o"])
            .arg(dir.path().join("twice"))
            .arg(split_dir.join("libk.so")),
    );
    assert_eq!(code, 1);
    assert!(err.contains("already HIPK: the file is split"), "{err}");
    assert!(!dir.path().join("twice").exists());
    // Merging a file that was never split: refused.
    let (code, _, err) = text_output(
        offload()
            .args(["kpack", "--merge", "-o"])
            .arg(dir.path().join("m"))
            .arg(&good),
    );
    assert_eq!(code, 1);
    assert_eq!(
        err,
        format!(
            "offload kpack: error: '{}': not split: no kpack reference\n",
            good.display()
        )
    );
    assert!(!dir.path().join("m").exists());
}

#[test]
fn binaries_split_by_amds_splitter_merge_back() {
    let dir = tempfile::tempdir().unwrap();
    let arches: &[&str] = &["gfx90a", "gfx1100"];
    let Some(lib) = library(
        dir.path(),
        "lib/libk.so",
        &[
            ("kernel.hip", arches, &[]),
            ("vadd.hip", arches, &["--offload-compress"]),
        ],
        false,
    ) else {
        return;
    };
    let Some(()) =
        crate::util::kpack::split_with_python(&dir.path().join("stage"), "k", dir.path())
    else {
        return;
    };
    let split = dir.path().join("split");
    let host = split.join("k_lib_generic/stage/lib/libk.so");
    let mut merge = offload();
    merge
        .args(["kpack", "--merge", "-o"])
        .arg(dir.path().join("back"))
        .arg(&host);
    for arch in arches {
        merge
            .arg("--from")
            .arg(split.join(format!("k_lib_{arch}/stage/.kpack/k_lib_{arch}.kpack")));
    }
    succeed(&mut merge);
    assert_eq!(
        code_objects(&dir.path().join("back/libk.so")),
        code_objects(&lib)
    );
}

#[test]
fn processors_grouped_in_one_archive_load_through_its_own_search_path() {
    let dir = tempfile::tempdir().unwrap();
    let Some(stage) = tree(dir.path()) else {
        return;
    };
    let Some(driver) = loader() else { return };
    let out = dir.path().join("grouped");
    let printed = split(
        &stage,
        &out,
        &["--archive", "all=gfx90a,gfx90a:xnack-,gfx1100"],
    );
    assert!(
        printed.contains(&format!(
            "{}/.kpack/k_all.kpack: 7 code objects for gfx90a,gfx90a:xnack-,gfx1100\n",
            out.display()
        )),
        "{printed}"
    );
    let binary = out.join("lib/rdc/librdc.so");
    let reference = section(&binary, ELF_REF_SECTION);
    let parsed = offload::format::kpack::KpackRef::parse(&reference).unwrap();
    assert_eq!(
        parsed.kpack_search_paths,
        ["../../.kpack/k_@GFXARCH@.kpack", "../../.kpack/k_all.kpack"]
    );
    let metadata = dir.path().join("ref.msgpack");
    fs::write(&metadata, &reference).unwrap();
    for (index, by_arch) in code_objects(&stage.join("lib/rdc/librdc.so"))
        .iter()
        .enumerate()
    {
        for (arch, code) in by_arch {
            let isa = format!("amdgcn-amd-amdhsa--{arch}");
            let loaded = load(&driver, &metadata, &binary, index as u64, &[&isa], &[]);
            assert_eq!(
                loaded,
                Ok((code.len() as u64, fnv1a64(code))),
                "#{index} @ {arch}"
            );
        }
    }
}

#[test]
fn merging_names_the_damaged_archive_or_the_missing_key() {
    let dir = tempfile::tempdir().unwrap();
    let Some(stage) = tree(dir.path()) else {
        return;
    };
    let out = dir.path().join("out");
    split(&stage, &out, &[]);
    let binary = out.join("lib/libk.so");
    let merge = |from: &[PathBuf]| {
        let mut command = offload();
        command
            .args(["kpack", "--merge", "-o"])
            .arg(dir.path().join("m"))
            .arg(&binary);
        for a in from {
            command.arg("--from").arg(a);
        }
        text_output(&mut command)
    };
    // Only the gfx90a archive: code object #1 (gfx1100 only) is in none given.
    let gfx90a = out.join(".kpack/k_gfx90a.kpack");
    let (code, _, err) = merge(std::slice::from_ref(&gfx90a));
    assert_eq!(code, 1);
    assert_eq!(
        err,
        format!(
            "offload kpack: error: '{}': no archive holds code object lib/libk.so#1 (wrapper 1); searched: {}\n",
            binary.display(),
            gfx90a.display()
        )
    );
    // A damaged archive: its version.
    let damaged = dir.path().join("damaged.kpack");
    let mut bytes = fs::read(out.join(".kpack/k_gfx1100.kpack")).unwrap();
    bytes[4] = 7;
    fs::write(&damaged, bytes).unwrap();
    let (code, _, err) = merge(&[gfx90a, damaged.clone()]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        format!(
            "offload kpack: error: '{}': offset 0x4: kpack archive version 7; only version 1 is known\n",
            damaged.display()
        )
    );
    assert!(!dir.path().join("m").exists());
    // Without --from, the binary's own search path finds both archives.
    let (code, out_text, err) = merge(&[]);
    assert_eq!((code, err.as_str()), (0, ""), "{out_text}");
    assert_eq!(
        code_objects(&dir.path().join("m/libk.so")),
        code_objects(&stage.join("lib/libk.so"))
    );
}

/// AMD's splitter numbers bundles, not wrappers: an `-fgpu-rdc` library has one bundle and a
/// wrapper per translation unit, so its archives hold only `#0` and the loader finds nothing
/// for the second wrapper. Ours hold what every wrapper asks for.
#[test]
fn amds_splitter_leaves_the_second_wrapper_of_an_rdc_library_without_code() {
    let dir = tempfile::tempdir().unwrap();
    let arches: &[&str] = &["gfx90a", "gfx1100"];
    let units: [(&str, &[&str], &[&str]); 2] = [
        ("kernel.hip", arches, &["-fgpu-rdc"]),
        ("vadd.hip", arches, &["-fgpu-rdc"]),
    ];
    let Some(lib) = library(dir.path(), "lib/librdc.so", &units, true) else {
        return;
    };
    let Some(driver) = loader() else { return };
    let Some(()) =
        crate::util::kpack::split_with_python(&dir.path().join("stage"), "r", dir.path())
    else {
        return;
    };
    let split_dir = dir.path().join("split");
    let installed = split_dir.join("r_lib_generic/stage");
    crate::util::kpack::copy_tree(
        &split_dir.join("r_lib_gfx90a/stage/.kpack"),
        &installed.join(".kpack"),
    );
    let theirs = installed.join("lib/librdc.so");
    let metadata = dir.path().join("theirs.msgpack");
    fs::write(&metadata, section(&theirs, ELF_REF_SECTION)).unwrap();
    let code = &code_objects(&lib)[0]["gfx90a"];
    let expected = Ok((code.len() as u64, fnv1a64(code)));
    assert_eq!(
        load(&driver, &metadata, &theirs, 0, &["gfx90a"], &[]),
        expected
    );
    assert_eq!(
        load(&driver, &metadata, &theirs, 1, &["gfx90a"], &[]),
        Err(5)
    );

    let ours_dir = dir.path().join("ours");
    split(&dir.path().join("stage"), &ours_dir, &[]);
    let ours = ours_dir.join("lib/librdc.so");
    let metadata = dir.path().join("ours.msgpack");
    fs::write(&metadata, section(&ours, ELF_REF_SECTION)).unwrap();
    for index in [0, 1] {
        assert_eq!(
            load(&driver, &metadata, &ours, index, &["gfx90a"], &[]),
            expected
        );
    }
}

#[test]
fn verifying_a_split_tree_counts_each_archive_and_code_object_once() {
    let dir = tempfile::tempdir().unwrap();
    let Some(stage) = tree(dir.path()) else {
        return;
    };
    let out = dir.path().join("out");
    split(&stage, &out, &[]);
    // Both binaries look in the three archives, which the walk also finds as files: each
    // archive, and each of its seven code objects, is counted once in the total. (The
    // archives of a processor one binary was not built for lack its code: problems.)
    let (_, text, err) = text_output(offload().args(["verify", "-r"]).arg(&out));
    let lines: Vec<&str> = text.lines().collect();
    let problems = err.lines().count();
    assert_eq!(
        lines.last().copied(),
        Some(
            format!("total: 7 code objects in 3 kpack archives sound, {problems} problems")
                .as_str()
        ),
        "{text}"
    );
    // Each binary's own line still says what it uses.
    let libk = format!("{}: ", out.join("lib/libk.so").display());
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&libk) && l.contains("in 3 kpack archives sound")),
        "{text}"
    );
}
