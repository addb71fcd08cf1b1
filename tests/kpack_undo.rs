//! `offload kpack --merge` undoes `offload kpack`: programs and libraries built by clang (22,
//! and 19 for its `host-x86_64-unknown-linux--` host entries), with bundles plain and
//! compressed (zstd by clang, zlib by `offload compress`), split and merged back, list the same
//! entries in the same order, stored the same way, and their bundles are the original's byte
//! for byte (a zstd stream: after inflating, where the zstd release differs from LLVM's). The
//! split files, with the record of their bundles in the reference, still load in AMD's loader
//! and read with its Python reader.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSection};
use offload::format::bundle::Bundle;
use offload::format::ccob::{CompressedBundle, Method};
use offload::format::image_target::ImageTarget;
use offload::format::kpack::record::{BundleRecord, Storage};
use offload::format::kpack::ELF_REF_SECTION;
use offload::host::program::kpack_elf::hip_code;

use crate::util;
use crate::util::kpack::{fnv1a64, load, loader, oracle_dir};
use crate::util::native::{compile_hip, support};
use crate::util::{offload, python_with, root, succeed};

/// The bytes of section `name` of the ELF file at `path` (empty when it has none).
fn section(path: &Path, name: &str) -> Vec<u8> {
    let data = fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    file.section_by_name(name)
        .map(|s| s.data().unwrap().to_vec())
        .unwrap_or_default()
}

/// What each wrapper's bundle is, in wrapper order: its storage (`None` plain, else the CCOB
/// version and method), its entry IDs in order, and its bytes once inflated.
type Bundles = Vec<(Option<(u16, Method)>, Vec<String>, Vec<u8>)>;

fn bundles(path: &Path) -> Bundles {
    let data = fs::read(path).unwrap();
    let code = hip_code(&data).unwrap().unwrap();
    code.wrappers
        .iter()
        .map(|w| {
            let at = (w.target.unwrap() - code.fatbin.address) as usize;
            let here = &code.fatbin.data[at..];
            let (storage, plain) = match CompressedBundle::parse(here).unwrap() {
                Some(c) => (
                    Some((c.version, c.method)),
                    c.inflate_bundle(1 << 30).unwrap().unwrap(),
                ),
                None => {
                    let size = Bundle::parse(here).unwrap().unwrap().size() as usize;
                    (None, here[..size].to_vec())
                }
            };
            let bundle = Bundle::parse(&plain).unwrap().unwrap();
            let ids = bundle.entries().iter().map(|e| e.id.to_string()).collect();
            (storage, ids, plain)
        })
        .collect()
}

/// The rows of `offload ls --json` of `path` that say what an image is, not where: entry ID,
/// processor, size, whether compressed, and its place in the inflated bundle.
fn listed(path: &Path) -> Vec<serde_json::Value> {
    let out = succeed(offload().args(["ls", "--json"]).arg(path));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows
        .as_array()
        .or_else(|| rows.get("images").and_then(|v| v.as_array()))
        .unwrap_or_else(|| panic!("{rows}"));
    rows.iter()
        .map(|r| {
            serde_json::json!({
                "entry_id": r["entry_id"],
                "arch": r["arch"],
                "size": r["size"],
                "compressed": r["compressed"],
                "entry_offset": r.get("compressed_bundle").map(|c| c["entry_offset"].clone()),
            })
        })
        .collect()
}

/// Splits `binary` into `dir/split` and merges it back into `dir/merged`; gives the split
/// file and the merged one.
fn split_and_merge(binary: &Path, dir: &Path) -> (PathBuf, PathBuf) {
    let name = binary.file_name().unwrap();
    let split = dir.join("split");
    let merged = dir.join("merged");
    succeed(offload().args(["kpack", "-o"]).arg(&split).arg(binary));
    succeed(
        offload()
            .args(["kpack", "--merge", "-o"])
            .arg(&merged)
            .arg(split.join(name)),
    );
    (split.join(name), merged.join(name))
}

/// Objects of kernel.hip (gfx90a, gfx1100) and vadd.hip (gfx1100, gfx90a) compiled by `clang`
/// with `extra` into `dir`.
fn objects(clang: &Path, dir: &Path, extra: &[&str]) -> Vec<PathBuf> {
    fs::create_dir_all(dir).unwrap();
    vec![
        compile_hip(clang, dir, "kernel.hip", &["gfx90a", "gfx1100"], extra),
        compile_hip(clang, dir, "vadd.hip", &["gfx1100", "gfx90a"], extra),
    ]
}

/// A program of `objects` linked by `clang` at `path`.
fn program(clang: &Path, objects: &[PathBuf], path: &Path) -> PathBuf {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    succeed(
        Command::new(clang)
            .arg(support("hip_runtime.c"))
            .args(objects)
            .arg("-o")
            .arg(path),
    );
    path.to_path_buf()
}

/// A `-fgpu-rdc` shared library of kernel.hip and vadd.hip (gfx90a:xnack-, gfx1100) built by
/// `clang` with `extra` at `dir/librdc.so`: one bundle, two wrappers pointing at it.
fn rdc_library(clang: &Path, dir: &Path, extra: &[&str]) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let arches = ["gfx90a:xnack-", "gfx1100"];
    let objects: Vec<PathBuf> = ["kernel.hip", "vadd.hip"]
        .iter()
        .map(|s| compile_hip(clang, dir, s, &arches, &["-fgpu-rdc"]))
        .collect();
    // The device link needs no HIP runtime: an empty libamdhip64 satisfies the driver.
    succeed(Command::new("ar").arg("rc").arg(dir.join("libamdhip64.a")));
    let out = dir.join("librdc.so");
    let mut link = Command::new(clang);
    link.args(["-shared", "-fPIC", "-fgpu-rdc", "--hip-link"])
        .arg(format!("-L{}", dir.display()))
        .args(extra);
    for arch in arches {
        link.arg(format!("--offload-arch={arch}"));
    }
    succeed(link.args(&objects).arg("-o").arg(&out));
    out
}

/// Checks that `merged` gives back what `original` had: the same listing, the same bundles
/// (IDs, order, storage, inflated bytes), and gives whether the `.hip_fatbin` sections are
/// byte-identical.
fn restored(original: &Path, merged: &Path) -> bool {
    assert_eq!(listed(merged), listed(original), "{}", merged.display());
    let (before, after) = (bundles(original), bundles(merged));
    assert_eq!(after.len(), before.len());
    for (k, (a, b)) in after.iter().zip(&before).enumerate() {
        assert_eq!(
            (&a.0, &a.1),
            (&b.0, &b.1),
            "wrapper {k} of {}",
            merged.display()
        );
        assert!(a.2 == b.2, "wrapper {k}: the inflated bundles differ");
    }
    section(merged, ".hip_fatbin") == section(original, ".hip_fatbin")
}

/// The `.hip_fatbin` of `binary`, as a file of its own, decompressed by `offload
/// decompress`.
fn decompressed_fatbin(binary: &Path, dir: &Path) -> Vec<u8> {
    let name = binary
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_string_lossy();
    let compressed = dir.join(format!("fatbin-{name}"));
    fs::write(&compressed, section(binary, ".hip_fatbin")).unwrap();
    let plain = dir.join(format!("fatbin-{name}.plain"));
    succeed(
        offload()
            .arg("decompress")
            .arg(&compressed)
            .arg("-o")
            .arg(&plain),
    );
    fs::read(&plain).unwrap()
}

#[test]
fn merging_a_clang_19_split_restores_its_host_entry_ids_and_every_byte() {
    // clang-19 names the host entry `host-x86_64-unknown-linux--`; the bundles are plain.
    let Some(clang) = util::tool("clang-19") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let app = program(
        &clang,
        &objects(&clang, &dir.path().join("o"), &[]),
        &dir.path().join("app"),
    );
    let ids = &bundles(&app)[0].1;
    assert_eq!(ids[0], "host-x86_64-unknown-linux--");
    let (split, merged) = split_and_merge(&app, dir.path());
    // The split file records the bundles under a key of its own.
    let record = BundleRecord::from_reference(&section(&split, ELF_REF_SECTION))
        .unwrap()
        .unwrap();
    assert_eq!(record.shape_of, [0, 0]);
    assert_eq!(&record.shapes[0].ids, ids);
    assert_eq!(record.shapes[0].storage, Storage::Plain);
    assert!(restored(&app, &merged), "the .hip_fatbin sections differ");
}

#[test]
fn merging_a_clang_22_split_gives_back_its_bundles_plain_and_compressed() {
    let Some(clang) = util::tool("clang-22") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // Plain: the whole section comes back byte for byte.
    let plain = program(
        &clang,
        &objects(&clang, &dir.path().join("o-plain"), &[]),
        &dir.path().join("plain/app"),
    );
    assert!(restored(
        &plain,
        &split_and_merge(&plain, &dir.path().join("p")).1
    ));

    // zstd (clang's --offload-compress, CCOB version 3): the same streams' settings, and
    // byte for byte once inflated; the frames are this zstd release's.
    let zstd = program(
        &clang,
        &objects(&clang, &dir.path().join("o-zstd"), &["--offload-compress"]),
        &dir.path().join("zstd/app"),
    );
    assert!(bundles(&zstd)
        .iter()
        .all(|b| b.0 == Some((3, Method::Zstd))));
    let (split, merged) = split_and_merge(&zstd, &dir.path().join("z"));
    let record = BundleRecord::from_reference(&section(&split, ELF_REF_SECTION))
        .unwrap()
        .unwrap();
    assert_eq!(
        record.shapes[0].storage,
        Storage::Compressed {
            version: 3,
            method: Method::Zstd,
            level: None
        }
    );
    let same = restored(&zstd, &merged);
    util::visible(&format!(
        "kpack --merge of clang-22's zstd bundles: .hip_fatbin {}",
        if same {
            "byte-identical"
        } else {
            "differs in its zstd frames only"
        }
    ));
    assert_eq!(
        decompressed_fatbin(&merged, dir.path()),
        decompressed_fatbin(&zstd, dir.path())
    );

    // zlib at its default level, CCOB version 2 (made by `offload compress`): the stream
    // shows the level, and the bundles come back byte for byte.
    let zlib = dir.path().join("zlib/app");
    fs::create_dir_all(zlib.parent().unwrap()).unwrap();
    succeed(
        offload()
            .args(["compress", "--method", "zlib", "--format-version", "2"])
            .arg(&plain)
            .arg("-o")
            .arg(&zlib),
    );
    assert!(bundles(&zlib)
        .iter()
        .all(|b| b.0 == Some((2, Method::Zlib))));
    let (split, merged) = split_and_merge(&zlib, &dir.path().join("l"));
    let record = BundleRecord::from_reference(&section(&split, ELF_REF_SECTION))
        .unwrap()
        .unwrap();
    assert_eq!(
        record.shapes[0].storage,
        Storage::Compressed {
            version: 2,
            method: Method::Zlib,
            level: Some(6)
        }
    );
    assert!(restored(&zlib, &merged), "the zlib streams differ");
}

#[test]
fn merging_a_compressed_rdc_library_shares_its_one_bundle_again() {
    let Some(clang) = util::tool("clang-22") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let lib = rdc_library(&clang, &dir.path().join("b"), &["--offload-compress"]);
    let (_, merged) = split_and_merge(&lib, dir.path());
    // The listing, the bundle's ID order, storage and inflated bytes; its zstd frame may be
    // this zstd release's.
    let _byte_identical = restored(&lib, &merged);
    let data = fs::read(&merged).unwrap();
    let targets: Vec<u64> = hip_code(&data)
        .unwrap()
        .unwrap()
        .wrappers
        .iter()
        .map(|w| w.target.unwrap())
        .collect();
    assert_eq!(targets.len(), 2);
    assert_eq!(targets[0], targets[1]);
}

#[test]
fn split_files_with_the_record_still_load_in_amds_loader_and_python_reader() {
    let Some(clang) = util::tool("clang-22") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let app = program(
        &clang,
        &objects(&clang, &dir.path().join("o"), &["--offload-compress"]),
        &dir.path().join("app"),
    );
    let (split, _) = split_and_merge(&app, dir.path());
    let reference = section(&split, ELF_REF_SECTION);
    assert!(BundleRecord::from_reference(&reference).unwrap().is_some());
    let originals = bundles(&app);

    // AMD's loader: every code object of every wrapper, for its processor.
    if let Some(driver) = loader() {
        let metadata = dir.path().join("ref.msgpack");
        fs::write(&metadata, &reference).unwrap();
        let mut asked = 0;
        for (index, (_, _, plain)) in originals.iter().enumerate() {
            for entry in Bundle::parse(plain).unwrap().unwrap().entries() {
                let arch = ImageTarget::of_bundle_entry(entry.id).target_id;
                if entry.data.is_empty() || arch.is_empty() {
                    continue;
                }
                let isa = format!("amdgcn-amd-amdhsa--{arch}");
                let loaded = load(&driver, &metadata, &split, index as u64, &[&isa], &[]);
                assert_eq!(
                    loaded,
                    Ok((entry.data.len() as u64, fnv1a64(entry.data))),
                    "#{index} @ {arch}"
                );
                asked += 1;
            }
        }
        assert_eq!(asked, 4);
    }

    // AMD's Python reader of the reference: its two keys as we wrote them, ours beside them.
    let Some(oracle) = oracle_dir() else { return };
    let Some(python) = python_with(&["msgpack"]) else {
        return;
    };
    let out = succeed(
        Command::new(python)
            .arg(root().join("tests/support/kpack_ref.py"))
            .arg(oracle.join("python"))
            .arg(&split),
    );
    let read: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(read["kernel_name"], "app");
    assert_eq!(
        read["kpack_search_paths"],
        serde_json::json!([".kpack/app_@GFXARCH@.kpack"])
    );
    assert_eq!(
        read["offload_bundles"]["bundle_of"],
        serde_json::json!([0, 0])
    );
}
