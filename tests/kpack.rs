//! kpack against AMD's rocm-kpack: our reader on what its splitter and writer produce, its C++
//! loader on archives we write, and our search for archives against the loader's, request by
//! request (found or not, which error, which bytes).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use object::{Object, ObjectSection};
use offload::format::kpack::{
    Archive, ArchiveWriter, HipWrapper, KpackRef, Scheme, Wrapped, ELF_REF_SECTION,
};
use offload::host::kpack::loader_search_paths;
use offload::loads::kpack_search::{search, ArchiveIndex, Environment, Miss, Opened, Outcome};

use crate::util;
use crate::util::kpack::{fnv1a64, load, loader, pack_with_python, split_with_python};
use crate::util::native::{c_compiler, compile_hip};
use crate::util::{offload_in, succeed};

/// The processors the test library is built for.
pub(crate) const ARCHES: [&str; 2] = ["gfx90a", "gfx1100"];

/// What a path holds, read from the file system as the loader would.
fn open_path(path: &Path) -> Opened {
    if !path.is_file() {
        return Opened::Missing;
    }
    let data = fs::read(path).unwrap();
    match Archive::parse(&data) {
        Ok(archive) => Opened::Archive(ArchiveIndex::of(&archive)),
        Err(e) => Opened::Unreadable(e.to_string()),
    }
}

/// One translation unit of a test library: source of samples/src, processors, options.
pub(crate) type Unit = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
);

/// The test library's units: two, the second compressed, both for [`ARCHES`].
pub(crate) const UNITS: [Unit; 2] = [
    ("kernel.hip", &ARCHES, &[]),
    ("vadd.hip", &ARCHES, &["--offload-compress"]),
];

/// A HIP shared library of `units`, built by clang-22 into `dir/stage/lib/libk.so`; `None`
/// when a compiler is missing.
pub(crate) fn hip_library(dir: &Path, units: &[Unit]) -> Option<PathBuf> {
    let clang = util::tool("clang-22")?;
    let cc = c_compiler()?;
    let objects: Vec<PathBuf> = units
        .iter()
        .map(|(source, arches, extra)| compile_hip(&clang, dir, source, arches, extra))
        .collect();
    let lib = dir.join("stage/lib/libk.so");
    fs::create_dir_all(lib.parent().unwrap()).unwrap();
    succeed(
        std::process::Command::new(cc)
            .arg("-shared")
            .args(&objects)
            .arg("-o")
            .arg(&lib),
    );
    Some(lib)
}

/// The section `name` of the ELF file `data`.
pub(crate) fn section<'a>(data: &'a [u8], name: &str) -> &'a [u8] {
    let file = object::File::parse(data).unwrap();
    let section = file.section_by_name(name).unwrap();
    section.data().unwrap()
}

/// The test library split by AMD's splitter in `dir`, its archives installed beside the host
/// tree (`dir/split/k_lib_generic/stage/.kpack/`), as the host and device packages overlay.
/// Gives the installed `stage` folder; `None` when a tool is missing.
pub(crate) fn python_split_installed(dir: &Path, units: &[Unit]) -> Option<PathBuf> {
    hip_library(dir, units)?;
    split_with_python(&dir.join("stage"), "k", dir)?;
    let split = dir.join("split");
    let installed = split.join("k_lib_generic/stage");
    for arch in ARCHES {
        let archives = split.join(format!("k_lib_{arch}/stage/.kpack"));
        if archives.is_dir() {
            crate::util::kpack::copy_tree(&archives, &installed.join(".kpack"));
        }
    }
    Some(installed)
}

#[test]
fn python_split_library_reads_as_the_loader_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let Some(installed) = python_split_installed(dir.path(), &UNITS) else {
        return;
    };
    let Some(driver) = loader() else { return };
    let lib = installed.join("lib/libk.so");
    let host = fs::read(&lib).unwrap();

    let ref_bytes = section(&host, ELF_REF_SECTION);
    let reference = KpackRef::parse(ref_bytes).unwrap();
    assert_eq!(reference.kernel_name, "stage/lib/libk.so");
    assert_eq!(
        reference.kpack_search_paths,
        ["../.kpack/k_lib_@GFXARCH@.kpack"]
    );
    let metadata = dir.path().join("ref.msgpack");
    fs::write(&metadata, ref_bytes).unwrap();

    let wrappers = section(&host, ".hipFatBinSegment");
    let indices: Vec<u64> = wrappers
        .chunks(HipWrapper::SIZE)
        .map(|w| match HipWrapper::parse(w).unwrap() {
            Wrapped::Kpack { index, .. } => index,
            other => panic!("not a HIPK wrapper: {other:?}"),
        })
        .collect();
    assert_eq!(indices, [0, 1]);

    for arch in ARCHES {
        let path = installed.join(format!(".kpack/k_lib_{arch}.kpack"));
        let data = fs::read(&path).unwrap();
        let archive = Archive::parse(&data).unwrap();
        assert_eq!(archive.gfx_arches, [arch]);
        assert_eq!(archive.group_name, Some("k_lib"));
        assert_eq!(archive.scheme, Scheme::None);
        let keys: BTreeSet<(&str, &str)> =
            archive.entries.iter().map(|e| (e.key, e.arch)).collect();
        let expected: BTreeSet<(&str, &str)> =
            [("stage/lib/libk.so#0", arch), ("stage/lib/libk.so#1", arch)].into();
        assert_eq!(keys, expected);
        for index in indices.iter().copied() {
            let key = format!("stage/lib/libk.so#{index}");
            let entry = archive.find(&key, arch).unwrap();
            let code = archive.code_object(entry, 1 << 30).unwrap();
            assert_eq!(&code[..4], b"\x7fELF", "{key} @ {arch}");
            assert_eq!(code.len() as u64, entry.original_size);
            // The loader hands out the same bytes for the device's ISA, features and all.
            let isa = format!("amdgcn-amd-amdhsa--{arch}:sramecc+:xnack-");
            let loaded = load(&driver, &metadata, &lib, index, &[&isa], &[]);
            assert_eq!(
                loaded,
                Ok((code.len() as u64, fnv1a64(&code))),
                "{key} @ {arch}"
            );
            let ours = search(
                &reference,
                &loader_search_paths(&lib, &reference),
                index,
                std::slice::from_ref(&isa),
                &Environment::default(),
                Miss::Stop,
                &mut |p| open_path(p),
            );
            assert_eq!(
                ours.outcome,
                Outcome::Found {
                    archive: path.clone(),
                    arch: arch.to_string()
                }
            );
        }
    }
}

/// Code objects to store: distinct bytes of distinct sizes.
fn code_objects(dir: &Path) -> Vec<(String, String, PathBuf)> {
    let mut out = Vec::new();
    for (i, (key, arch)) in [
        ("lib/libk.so#0", "gfx90a"),
        ("lib/libk.so#1", "gfx90a"),
        ("lib/libk.so#0", "gfx90a:xnack-"),
    ]
    .into_iter()
    .enumerate()
    {
        let bytes: Vec<u8> = (0..1000 + 77 * i).map(|n| (n * (i + 3)) as u8).collect();
        let file = dir.join(format!("co{i}"));
        fs::write(&file, bytes).unwrap();
        out.push((key.to_string(), arch.to_string(), file));
    }
    out
}

fn write_ours(scheme: Scheme, kernels: &[(String, String, PathBuf)]) -> Vec<u8> {
    let mut writer = ArchiveWriter::new("k", "gfx90a", &["gfx90a", "gfx90a:xnack-"], scheme);
    for (key, arch, file) in kernels {
        writer.add(key, arch, &fs::read(file).unwrap()).unwrap();
    }
    writer.finish()
}

#[test]
fn archives_match_amds_writer_and_load_in_its_loader() {
    let dir = tempfile::tempdir().unwrap();
    let kernels = code_objects(dir.path());
    let as_args: Vec<(&str, &str, &Path)> = kernels
        .iter()
        .map(|(k, a, f)| (k.as_str(), a.as_str(), f.as_path()))
        .collect();
    for scheme in [Scheme::None, Scheme::ZstdPerKernel] {
        let theirs_path = dir.path().join(format!("theirs-{}.kpack", scheme.name()));
        let Some(()) = pack_with_python(
            &theirs_path,
            scheme.name(),
            "k",
            "gfx90a",
            &["gfx90a", "gfx90a:xnack-"],
            &as_args,
        ) else {
            return;
        };
        let theirs = fs::read(&theirs_path).unwrap();
        let ours = write_ours(scheme, &kernels);
        if scheme == Scheme::None {
            assert_eq!(ours, theirs, "plain archives differ from AMD's writer's");
        }
        // Each reads the other's: same entries, same code objects.
        let (a, b) = (
            Archive::parse(&ours).unwrap(),
            Archive::parse(&theirs).unwrap(),
        );
        assert_eq!(a.entries, b.entries);
        for (key, arch, file) in &kernels {
            let expected = fs::read(file).unwrap();
            for archive in [&a, &b] {
                let entry = archive.find(key, arch).unwrap();
                assert_eq!(*archive.code_object(entry, 1 << 20).unwrap(), expected[..]);
            }
        }
        // AMD's loader reads ours.
        let Some(driver) = loader() else { return };
        let kpack = dir.path().join(".kpack");
        fs::create_dir_all(&kpack).unwrap();
        fs::write(kpack.join("k_gfx90a.kpack"), &ours).unwrap();
        let reference = KpackRef {
            kernel_name: "lib/libk.so",
            kpack_search_paths: vec!["../.kpack/k_@GFXARCH@.kpack"],
        };
        let metadata = dir.path().join("ref.msgpack");
        fs::write(&metadata, reference.to_bytes()).unwrap();
        let binary = dir.path().join("lib/libk.so");
        for (key, arch, file) in &kernels {
            let index: u64 = key.rsplit('#').next().unwrap().parse().unwrap();
            let expected = fs::read(file).unwrap();
            // ROCM_KPACK_PATH reaches the archive whatever the processor's own file name.
            let path = kpack.join("k_gfx90a.kpack");
            let env = [("ROCM_KPACK_PATH", path.to_str().unwrap())];
            let loaded = load(&driver, &metadata, &binary, index, &[arch], &env);
            assert_eq!(
                loaded,
                Ok((expected.len() as u64, fnv1a64(&expected))),
                "{} {key} @ {arch}",
                scheme.name()
            );
        }
    }
}

/// One request of the search comparison.
struct Request {
    index: u64,
    arches: &'static [&'static str],
    env: &'static [(&'static str, &'static str)],
}

#[test]
fn archive_search_agrees_with_the_loader() {
    let Some(driver) = loader() else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let kpack = root.join(".kpack");
    fs::create_dir_all(&kpack).unwrap();
    let write = |name: &str, arches: &[&str], keys: &[(&str, &str, u8)]| {
        let mut w = ArchiveWriter::new("k", arches[0], arches, Scheme::ZstdPerKernel);
        for (key, arch, fill) in keys {
            w.add(key, arch, &vec![*fill; 100 + usize::from(*fill)])
                .unwrap();
        }
        fs::write(root.join(name), w.finish()).unwrap();
    };
    write(
        ".kpack/k_gfx90a.kpack",
        &["gfx90a"],
        &[
            ("lib/libk.so#0", "gfx90a", 1),
            ("lib/libk.so#1", "gfx90a", 2),
        ],
    );
    // An overlay for one feature setting that holds only one code object (TheRock #7081).
    write(
        ".kpack/k_gfx90a:xnack-.kpack",
        &["gfx90a:xnack-"],
        &[("lib/libk.so#1", "gfx90a:xnack-", 3)],
    );
    write(
        ".kpack/k_gfx11-generic.kpack",
        &["gfx11-generic"],
        &[("lib/libk.so#0", "gfx11-generic", 4)],
    );
    write(
        "extra.kpack",
        &["gfx90a"],
        &[("lib/libk.so#0", "gfx90a", 5)],
    );
    fs::write(kpack.join("k_gfx1030.kpack"), b"not an archive").unwrap();

    let reference = KpackRef {
        kernel_name: "lib/libk.so",
        kpack_search_paths: vec!["../.kpack/k_@GFXARCH@.kpack"],
    };
    let metadata = root.join("ref.msgpack");
    fs::write(&metadata, reference.to_bytes()).unwrap();
    let binary = root.join("lib/libk.so");
    let extra = root.join("extra.kpack");
    let extra = extra.to_str().unwrap();
    // `env` values of "EXTRA" stand for the extra archive's path.
    let requests = [
        Request {
            index: 0,
            arches: &["gfx90a"],
            env: &[],
        },
        Request {
            index: 1,
            arches: &["amdgcn-amd-amdhsa--gfx90a:xnack-"],
            env: &[],
        },
        // The overlay lacks #0: the loader stops there (fall-through would find it).
        Request {
            index: 0,
            arches: &["gfx90a:xnack-"],
            env: &[],
        },
        Request {
            index: 0,
            arches: &["gfx1100", "gfx11-generic"],
            env: &[],
        },
        Request {
            index: 1,
            arches: &["gfx1100", "gfx11-generic"],
            env: &[],
        },
        Request {
            index: 0,
            arches: &["gfx1030"],
            env: &[],
        },
        Request {
            index: 0,
            arches: &["gfx942:sramecc+:xnack-"],
            env: &[],
        },
        Request {
            index: 0,
            arches: &["gfx90a"],
            env: &[("ROCM_KPACK_PATH_PREFIX", "EXTRA")],
        },
        Request {
            index: 1,
            arches: &["gfx90a"],
            env: &[("ROCM_KPACK_PATH", "EXTRA")],
        },
        Request {
            index: 0,
            arches: &["gfx90a"],
            env: &[("ROCM_KPACK_PATH", "EXTRA")],
        },
        Request {
            index: 0,
            arches: &["gfx90a"],
            env: &[("ROCM_KPACK_PATH", "/nowhere.kpack")],
        },
        Request {
            index: 0,
            arches: &["gfx90a"],
            env: &[("ROCM_KPACK_DISABLE", "1")],
        },
        Request {
            index: 0,
            arches: &["gfx90a"],
            env: &[("ROCM_KPACK_DISABLE", "0")],
        },
    ];
    let mut outcomes = Vec::new();
    for request in &requests {
        let env: Vec<(&str, &str)> = request
            .env
            .iter()
            .map(|(k, v)| (*k, if *v == "EXTRA" { extra } else { *v }))
            .collect();
        let environment = Environment::from_vars(|name| {
            env.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        });
        let arches: Vec<String> = request.arches.iter().map(|a| a.to_string()).collect();
        let ours = search(
            &reference,
            &loader_search_paths(&binary, &reference),
            request.index,
            &arches,
            &environment,
            Miss::Stop,
            &mut |p| open_path(p),
        );
        let theirs = load(
            &driver,
            &metadata,
            &binary,
            request.index,
            request.arches,
            &env,
        );
        let what = format!("#{} {:?} {:?}", request.index, request.arches, env);
        match (&ours.outcome, theirs) {
            (Outcome::Found { archive, arch }, Ok((size, hash))) => {
                let data = fs::read(archive).unwrap();
                let archive = Archive::parse(&data).unwrap();
                let entry = archive.find(&ours.key, arch).unwrap();
                let code = archive.code_object(entry, 1 << 20).unwrap();
                assert_eq!((code.len() as u64, fnv1a64(&code)), (size, hash), "{what}");
            }
            (outcome, theirs) => {
                assert_eq!(
                    Err(outcome.loader_code()),
                    theirs,
                    "{what}: ours {outcome:?}"
                )
            }
        }
        outcomes.push(ours.outcome.loader_code());
    }
    // The requests cover every outcome.
    assert_eq!(outcomes, [0, 0, 5, 0, 5, 13, 13, 0, 5, 0, 13, 8, 0]);
}

#[test]
fn the_overlay_miss_falls_through_in_todays_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let kpack = dir.path().join(".kpack");
    fs::create_dir_all(&kpack).unwrap();
    let mut plain = ArchiveWriter::new("k", "gfx90a", &["gfx90a"], Scheme::None);
    plain.add("lib/libk.so#0", "gfx90a", b"zero").unwrap();
    fs::write(kpack.join("k_gfx90a.kpack"), plain.finish()).unwrap();
    let mut overlay = ArchiveWriter::new("k", "gfx90a", &["gfx90a:xnack-"], Scheme::None);
    overlay
        .add("lib/libk.so#1", "gfx90a:xnack-", b"one")
        .unwrap();
    fs::write(kpack.join("k_gfx90a:xnack-.kpack"), overlay.finish()).unwrap();
    let reference = KpackRef {
        kernel_name: "lib/libk.so",
        kpack_search_paths: vec!["../.kpack/k_@GFXARCH@.kpack"],
    };
    let binary = dir.path().join("lib/libk.so");
    let arches = vec!["gfx90a:xnack-".to_string()];
    let found = search(
        &reference,
        &loader_search_paths(&binary, &reference),
        0,
        &arches,
        &Environment::default(),
        Miss::FallThrough,
        &mut |p| open_path(p),
    );
    assert_eq!(
        found.outcome,
        Outcome::Found {
            archive: kpack.join("k_gfx90a.kpack"),
            arch: "gfx90a".into()
        }
    );
    let tried: Vec<_> = found.tried.iter().map(|t| t.path.clone()).collect();
    assert_eq!(
        tried,
        [
            kpack.join("k_gfx90a:xnack-.kpack"),
            kpack.join("k_gfx90a.kpack")
        ]
    );
}

/// The table of contents of the archive at `path` as msgpack-python decodes it: per entry
/// `(key, arch, original_size, stored offset, stored size)`, sorted.
fn python_toc(path: &Path) -> Vec<(String, String, u64, u64, u64)> {
    let script = [
        "import msgpack, struct, sys",
        "d = open(sys.argv[1], 'rb').read()",
        "toc = msgpack.unpackb(d[struct.unpack('<Q', d[8:16])[0]:])",
        "for key, arches in toc['toc'].items():",
        "    for arch, e in arches.items():",
        "        b = toc['blobs'][e['ordinal']]",
        "        print(key, arch, e['original_size'], b['offset'], b['size'])",
    ]
    .join("\n");
    // Found before, by the split this archive comes from.
    let python = util::python_with(&["msgpack"]).expect("python3 with msgpack");
    let out = succeed(
        std::process::Command::new(python)
            .args(["-c", &script])
            .arg(path),
    );
    let mut rows: Vec<_> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let w: Vec<&str> = line.split(' ').collect();
            let n = |i: usize| w[i].parse::<u64>().unwrap();
            (w[0].to_string(), w[1].to_string(), n(2), n(3), n(4))
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn ls_lists_a_split_library_as_its_archives_tables_say() {
    let dir = tempfile::tempdir().unwrap();
    let Some(installed) = python_split_installed(dir.path(), &UNITS) else {
        return;
    };
    let lib = "split/k_lib_generic/stage/lib/libk.so";
    // Archives are named as the loader finds them: by the binary's real path.
    let real = fs::canonicalize(&installed).unwrap();
    let (code, json, err) = offload_in(dir.path(), &["ls", "--json", lib]);
    assert_eq!((code, err.as_str()), (0, ""));
    let listed: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mut rows: Vec<(String, String, u64, u64, u64)> = Vec::new();
    let mut archives = BTreeSet::new();
    for image in listed.as_array().unwrap() {
        assert_eq!(image["file"], lib);
        assert_eq!(image["offload_kind"], "hip");
        assert_eq!(image["compressed"], false);
        let k = &image["kpack"];
        assert_eq!(k["scheme"], "none");
        archives.insert(k["archive"].as_str().unwrap().to_string());
        rows.push((
            k["key"].as_str().unwrap().to_string(),
            image["arch"].as_str().unwrap().to_string(),
            image["size"].as_u64().unwrap(),
            k["stored_offset"].as_u64().unwrap(),
            k["stored_size"].as_u64().unwrap(),
        ));
    }
    rows.sort();
    let mut expected = Vec::new();
    for arch in ARCHES {
        expected.extend(python_toc(
            &installed.join(format!(".kpack/k_lib_{arch}.kpack")),
        ));
    }
    expected.sort();
    assert_eq!(rows, expected);
    assert_eq!(
        archives,
        ARCHES
            .map(|a| format!("{}/.kpack/k_lib_{a}.kpack", real.display()))
            .into_iter()
            .collect()
    );

    // The table: one row per code object, by index, each naming the archive and key.
    let (code, table, _) = offload_in(dir.path(), &["ls", lib]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 5, "{table}");
    assert!(
        lines[0].starts_with("#  KIND   ARCH     TRIPLE             PRODUCER  SIZE  WHERE"),
        "{table}"
    );
    let archive = format!("{}/.kpack/k_lib_gfx90a.kpack", real.display());
    let gfx90a_1 = expected
        .iter()
        .find(|r| r.0.ends_with("#1") && r.1 == "gfx90a")
        .unwrap();
    // By index, then in the loader's order: gfx90a comes before gfx1100 in its table.
    assert!(
        lines[3].ends_with(&format!(
            "{lib} -> {archive}[stage/lib/libk.so#1] @{:#x}",
            gfx90a_1.3
        )),
        "{table}"
    );

    // The archive on its own: the same entries, at their offsets in it.
    let archive = "split/k_lib_generic/stage/.kpack/k_lib_gfx90a.kpack";
    let (code, table, _) = offload_in(dir.path(), &["ls", archive]);
    assert_eq!(code, 0);
    let expected_table: String = std::iter::once(
        "#  KIND   ARCH    TRIPLE             PRODUCER  SIZE  WHERE".to_string(),
    )
    .chain(
        python_toc(&dir.path().join(archive))
            .iter()
            .enumerate()
            .map(|(i, (key, arch, size, offset, _))| {
                format!("{i}  kpack  {arch}  amdgcn-amd-amdhsa  hip       {size}  {archive}[{key}] @{offset:#x}")
            }),
    )
    .map(|l| l + "\n")
    .collect();
    assert_eq!(table, expected_table);
}

#[test]
fn ls_names_damaged_archives() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = ArchiveWriter::new("k", "gfx90a", &["gfx90a"], Scheme::ZstdPerKernel);
    w.add("lib/libk.so#0", "gfx90a", &[7; 300]).unwrap();
    let mut bytes = w.finish();
    fs::write(dir.path().join("good.kpack"), &bytes).unwrap();
    bytes[4] = 9;
    fs::write(dir.path().join("version.kpack"), &bytes).unwrap();
    fs::write(dir.path().join("short.kpack"), b"KPAK\x01\0\0\0").unwrap();
    let (code, out, err) = offload_in(
        dir.path(),
        &["ls", "good.kpack", "version.kpack", "short.kpack"],
    );
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "offload ls: error: 'version.kpack': offset 0x4: kpack archive version 9; only version 1 is known\n\
         offload ls: error: 'short.kpack': offset 0x0: truncated kpack header: needs 16 bytes, 8 left in the file\n"
    );
    assert_eq!(
        out,
        "#  KIND   ARCH    TRIPLE             PRODUCER  SIZE  WHERE\n\
         0  kpack  gfx90a  amdgcn-amd-amdhsa  hip        300  good.kpack[lib/libk.so#0] (zstd, 19 bytes at 0x48)\n\
         total: 3 files, 1 with device code, 2 failed; 1 device image, 19 bytes stored, 300 inflated\n\
         total gfx90a: 1 image, 19 bytes stored, 300 inflated\n"
    );
}

/// AMD's splitter numbers code objects per processor; the loader asks by wrapper index. With a
/// first unit for gfx1100 only and a second for both processors, the second unit's gfx90a code
/// is stored as `#0`, so the loader (and our search, which follows it) find nothing for
/// wrapper 1 on gfx90a, and would hand wrapper 0's request the second unit's code.
#[test]
fn python_splitter_numbers_per_processor_and_the_loader_misses() {
    let dir = tempfile::tempdir().unwrap();
    let units: [Unit; 2] = [
        ("kernel.hip", &["gfx1100"], &[]),
        ("vadd.hip", &ARCHES, &[]),
    ];
    let Some(installed) = python_split_installed(dir.path(), &units) else {
        return;
    };
    let Some(driver) = loader() else { return };
    let lib = installed.join("lib/libk.so");
    let host = fs::read(&lib).unwrap();
    let ref_bytes = section(&host, ELF_REF_SECTION);
    let reference = KpackRef::parse(ref_bytes).unwrap();
    let metadata = dir.path().join("ref.msgpack");
    fs::write(&metadata, ref_bytes).unwrap();
    let archive_path = installed.join(".kpack/k_lib_gfx90a.kpack");
    let data = fs::read(&archive_path).unwrap();
    let archive = Archive::parse(&data).unwrap();
    let keys: Vec<&str> = archive.entries.iter().map(|e| e.key).collect();
    assert_eq!(keys, ["stage/lib/libk.so#0"], "numbered per processor");

    let arches = vec!["gfx90a".to_string()];
    let ask = |index: u64| {
        let ours = search(
            &reference,
            &loader_search_paths(&lib, &reference),
            index,
            &arches,
            &Environment::default(),
            Miss::Stop,
            &mut |p| open_path(p),
        );
        let theirs = load(&driver, &metadata, &lib, index, &["gfx90a"], &[]);
        (ours.outcome.loader_code(), theirs.err().unwrap_or(0))
    };
    // Wrapper 1 (vadd's code) is not found; wrapper 0 (kernel.hip, no gfx90a code) "is".
    assert_eq!(ask(1), (5, 5));
    assert_eq!(ask(0), (0, 0));
}

/// Where AMD's loader aborts the whole process (an uncaught C++ exception through its C API),
/// we give an error: a table entry whose ordinal is a string, and a stored code object that
/// claims 1 TiB.
#[test]
fn damage_the_loader_aborts_on_is_an_error_here() {
    let Some(driver) = loader() else { return };
    let dir = tempfile::tempdir().unwrap();
    let reference = KpackRef {
        kernel_name: "lib/a.so",
        kpack_search_paths: vec!["x.kpack"],
    };
    let metadata = dir.path().join("ref.msgpack");
    fs::write(&metadata, reference.to_bytes()).unwrap();
    let mut good = ArchiveWriter::new("g", "gfx90a", &["gfx90a"], Scheme::None);
    good.add("lib/a.so#0", "gfx90a", &[1; 64]).unwrap();
    let good = good.finish();
    let toc_offset = 128;
    let mut ordinal_string = good.clone();
    let at = ordinal_string
        .windows(8)
        .position(|w| w == b"ordinal\x00")
        .unwrap()
        + 7;
    ordinal_string[at] = 0xa0; // "" instead of 0
    let mut huge = good.clone();
    let at = huge.len() - 1; // the last blob's size, 64, as a positive fixint
    assert_eq!(huge[at], 64);
    huge.truncate(at);
    huge.extend_from_slice(&[0xcf, 0, 0, 1, 0, 0, 0, 0, 0]);
    for (name, bytes, ours) in [
        (
            "ordinal.kpack",
            &ordinal_string,
            format!(
                "offset {toc_offset:#x}: kpack toc[\"lib/a.so#0\"][\"gfx90a\"].ordinal: expected a non-negative integer, found string"
            ),
        ),
        (
            "huge.kpack",
            &huge,
            format!(
                "offset {toc_offset:#x}: kpack code object 0 at 0x40, 1099511627776 bytes, lies past the end of the file ({:#x})",
                huge.len()
            ),
        ),
    ] {
        let path = dir.path().join(name);
        fs::write(&path, bytes).unwrap();
        assert_eq!(Archive::parse(bytes).unwrap_err().to_string(), ours);
        let out = std::process::Command::new(&driver)
            .arg(&metadata)
            .arg(dir.path().join("lib/a.so"))
            .args(["0", "gfx90a"])
            .env("ROCM_KPACK_PATH", &path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), None, "{name}: the loader is killed by SIGABRT");
        assert!(String::from_utf8_lossy(&out.stderr).contains("terminate called"));
    }
}
