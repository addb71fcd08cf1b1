//! `offload ls` and `offload extract --exact` on the samples LLVM 22 made for processors and
//! targets LLVM 19 lacks (samples/targets/): a program whose `.hip_fatbin` holds two bundles
//! (plain, and as CCOB version 3) with native and generic code, gfx950/gfx1153/gfx1250 and
//! gfx9-4-generic, SPIR-V, the retired gfx940/gfx941 (made by clang-19), code object v6, and
//! LLVM 22's `.llvm.offloading` for OpenMP and HIP. Each is checked live against the LLVM
//! tools: the entry IDs against `clang-offload-bundler-22 -list` (and `-19` where it reads the
//! bundle), the extracted bytes against what `clang-offload-bundler-22 -unbundle` (for
//! processors LLVM 22 knows), `clang-offload-bundler-19` (for those it dropped) and
//! `llvm-offload-binary-22` write.

use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object as _, ObjectSection as _};
use serde_json::Value;

use crate::util;
use crate::util::{first_difference, offload, samples_dir, succeed};

/// The samples whose device code is in `.hip_fatbin` bundles.
const BUNDLED: &[&str] = &[
    "mixed-app",
    "mixed-app-z",
    "new-arches.o",
    "spirv.o",
    "retired-gfx940.o",
    "generic-cov6.o",
];

/// Entries whose IDs end in a feature's `-` after a processor LLVM 19 does not know, which a
/// reader easily takes for the padding LLVM 19 appends, and a generic name with features,
/// which a reader easily splits at its dashes.
const NEW_WITH_FEATURES: &[&str] = &[
    "hipv4-amdgcn-amd-amdhsa--gfx950:xnack-",
    "hipv4-amdgcn-amd-amdhsa--gfx9-4-generic:sramecc+:xnack-",
];

/// Processors LLVM 22 no longer knows: `clang-offload-bundler-22` mixes their entries up.
const RETIRED: &[&str] = &[
    "hipv4-amdgcn-amd-amdhsa--gfx940",
    "hipv4-amdgcn-amd-amdhsa--gfx941:xnack+",
];

fn sample(name: &str) -> PathBuf {
    samples_dir().join("targets").join(name)
}

/// What `offload ls --json` reports for a sample, in file order.
fn ls(name: &str) -> Vec<Value> {
    let out = succeed(offload().args(["ls", "--json"]).arg(sample(name)));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The contents of the sample's `.hip_fatbin`.
fn hip_fatbin(name: &str) -> Vec<u8> {
    let bytes = std::fs::read(sample(name)).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let section = file.section_by_name(".hip_fatbin").unwrap();
    section.data().unwrap().to_vec()
}

/// The bundles and CCOBs of a `.hip_fatbin`, in file order. Linkers put them on 4096
/// boundaries of the section, with zeros between; a CCOB is cut at its header's total size
/// (u32 at +8 in version 2, u64 in version 3), since LLVM 22 refuses one with bytes after it.
fn bundles(section: &[u8]) -> Vec<&[u8]> {
    let starts: Vec<usize> = (0..section.len())
        .step_by(4096)
        .filter(|&at| {
            section[at..].starts_with(b"__CLANG_OFFLOAD_BUNDLE__")
                || section[at..].starts_with(b"CCOB")
        })
        .collect();
    assert!(!starts.is_empty(), "no bundle in the section");
    starts
        .iter()
        .enumerate()
        .map(|(i, &at)| {
            let end = starts.get(i + 1).copied().unwrap_or(section.len());
            let bundle = &section[at..end];
            if !bundle.starts_with(b"CCOB") {
                return bundle;
            }
            let total = match u16::from_le_bytes([bundle[4], bundle[5]]) {
                2 => u32::from_le_bytes(bundle[8..12].try_into().unwrap()) as usize,
                3 => u64::from_le_bytes(bundle[8..16].try_into().unwrap()) as usize,
                v => panic!("CCOB version {v}"),
            };
            &bundle[..total]
        })
        .collect()
}

/// Whether `bundle` is a CCOB of version 3, which LLVM 19 cannot read.
fn is_ccob_v3(bundle: &[u8]) -> bool {
    bundle.starts_with(b"CCOB") && bundle[4..6] == [3, 0]
}

/// What `bundler -list -type=o` prints for `bundle`, sorted (it prints in a hash table's
/// order).
fn bundler_list(bundler: &Path, bundle: &[u8]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bundle");
    std::fs::write(&input, bundle).unwrap();
    let out = succeed(
        Command::new(bundler)
            .args(["-list", "-type=o"])
            .arg(format!("-input={}", input.display())),
    );
    let mut ids: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    ids.sort();
    ids
}

/// The code object `bundler -unbundle` writes for entry `id` of `bundle`.
fn bundler_unbundle(bundler: &Path, bundle: &[u8], id: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let (input, output) = (dir.path().join("bundle"), dir.path().join("code"));
    std::fs::write(&input, bundle).unwrap();
    succeed(
        Command::new(bundler)
            .args(["-unbundle", "-type=o"])
            .arg(format!("-targets={id}"))
            .arg(format!("-input={}", input.display()))
            .arg(format!("-output={}", output.display())),
    );
    std::fs::read(output).unwrap()
}

/// The files `offload extract --arch ARCH --exact` writes from a sample, sorted by content
/// (which entry of which bundle each came from is what the comparison decides).
fn extract_exact(name: &str, arch: &str) -> Vec<Vec<u8>> {
    let dir = tempfile::tempdir().unwrap();
    succeed(
        offload()
            .args(["extract", "-q", "--exact", "--arch", arch, "-o"])
            .arg(dir.path())
            .arg(sample(name)),
    );
    let mut files: Vec<Vec<u8>> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    files.sort();
    files
}

/// The triple and target ID of a bundle entry ID by the rule of LLVM 20 and later: the offload
/// kind, then a triple of four fields, then the target ID. The triple loses its trailing empty
/// fields, as `ls` reports it (`host-x86_64-unknown-linux--`: `x86_64-unknown-linux`).
fn triple_and_target_id(id: &str) -> (String, String) {
    let fields: Vec<&str> = id.splitn(6, '-').collect();
    assert_eq!(fields.len(), 6, "{id}");
    let mut triple = fields[1..5].to_vec();
    while triple.last() == Some(&"") {
        triple.pop();
    }
    (triple.join("-"), fields[5].to_string())
}

fn entry_ids(images: &[Value]) -> Vec<String> {
    images
        .iter()
        .map(|i| i["entry_id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn ls_lists_every_entry_the_bundlers_list_bundle_by_bundle() {
    let Some(bundler22) = util::tool("clang-offload-bundler-22") else {
        return;
    };
    let Some(bundler19) = util::tool("clang-offload-bundler-19") else {
        return;
    };
    for name in BUNDLED {
        let section = hip_fatbin(name);
        let ours = entry_ids(&ls(name));
        let mut rest = ours.as_slice();
        for (n, bundle) in bundles(&section).iter().enumerate() {
            let expected = bundler_list(&bundler22, bundle);
            if !is_ccob_v3(bundle) {
                assert_eq!(
                    bundler_list(&bundler19, bundle),
                    expected,
                    "{name} bundle {n}"
                );
            }
            // ls goes in file order: this bundle's entries come next.
            assert!(rest.len() >= expected.len(), "{name}: {ours:?}");
            let mut this: Vec<String> = rest[..expected.len()].to_vec();
            this.sort();
            assert_eq!(this, expected, "{name} bundle {n}");
            rest = &rest[expected.len()..];
        }
        assert!(rest.is_empty(), "{name}: ls lists more: {rest:?}");
    }
}

#[test]
fn mixed_app_holds_two_bundles_with_native_and_generic_code() {
    for name in ["mixed-app", "mixed-app-z"] {
        let ids = entry_ids(&ls(name));
        let t = "hipv4-amdgcn-amd-amdhsa--";
        let host = "host-x86_64-unknown-linux-gnu-";
        assert_eq!(
            ids,
            [
                host.to_string(),
                format!("{t}gfx11-generic"),
                format!("{t}gfx1100"),
                format!("{t}gfx90a"),
                host.to_string(),
                format!("{t}gfx11-generic"),
                format!("{t}gfx90a:xnack-"),
            ],
            "{name}"
        );
    }
    let compressed: Vec<bool> = ls("mixed-app-z")
        .iter()
        .map(|i| i["compressed"] == true)
        .collect();
    assert_eq!(compressed, [true; 7]);
}

/// The triple, target ID and offload kind `ls` gives an entry, against what its entry ID says.
fn assert_entries_read_right(name: &str, images: &[Value]) {
    for image in images {
        let id = image["entry_id"].as_str().unwrap();
        let (triple, arch) = triple_and_target_id(id);
        assert_eq!(image["triple"], triple.as_str(), "{name}: {id}");
        assert_eq!(image["arch"], arch.as_str(), "{name}: {id}");
        let kind = if id.starts_with("host-") {
            "host"
        } else {
            "hip"
        };
        assert_eq!(image["offload_kind"], kind, "{name}: {id}");
    }
}

#[test]
fn ls_reads_the_triple_and_target_id_of_each_entry() {
    for name in BUNDLED {
        let images: Vec<Value> = ls(name)
            .into_iter()
            .filter(|i| !NEW_WITH_FEATURES.contains(&i["entry_id"].as_str().unwrap()))
            .collect();
        assert_entries_read_right(name, &images);
    }
}

#[test]
fn ls_reads_the_triple_and_target_id_of_features_after_new_processors() {
    let images: Vec<Value> = ls("new-arches.o")
        .into_iter()
        .filter(|i| NEW_WITH_FEATURES.contains(&i["entry_id"].as_str().unwrap()))
        .collect();
    assert_eq!(images.len(), NEW_WITH_FEATURES.len());
    assert_entries_read_right("new-arches.o", &images);
}

/// `extract --exact` of every entry in `ids` (native entries of bundled samples) against what
/// `bundler` unbundles for it from every bundle that holds it.
fn assert_extracts_as(bundler: &Path, ids: &[&str], name: &str) {
    let section = hip_fatbin(name);
    let bundles = bundles(&section);
    let lists: Vec<Vec<String>> = bundles.iter().map(|b| bundler_list(bundler, b)).collect();
    for id in ids {
        let mut expected: Vec<Vec<u8>> = bundles
            .iter()
            .zip(&lists)
            .filter(|(_, list)| list.iter().any(|l| l == id))
            .map(|(bundle, _)| bundler_unbundle(bundler, bundle, id))
            .collect();
        expected.sort();
        let (_, arch) = triple_and_target_id(id);
        let ours = extract_exact(name, &arch);
        assert_eq!(ours.len(), expected.len(), "{name}: {id}");
        for (a, b) in expected.iter().zip(&ours) {
            assert!(a == b, "{name}: {id}: {}", first_difference(a, b));
        }
    }
}

/// The native (not host) entry IDs of a bundled sample, as `ls` lists them, without repeats.
fn native_ids(name: &str) -> Vec<String> {
    let mut ids: Vec<String> = entry_ids(&ls(name))
        .into_iter()
        .filter(|id| !id.starts_with("host-"))
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

#[test]
fn extract_exact_gives_what_the_llvm_22_bundler_unbundles() {
    let Some(bundler) = util::tool("clang-offload-bundler-22") else {
        return;
    };
    for name in BUNDLED {
        let ids = native_ids(name);
        let ids: Vec<&str> = ids
            .iter()
            .map(String::as_str)
            .filter(|id| !NEW_WITH_FEATURES.contains(id) && !RETIRED.contains(id))
            .collect();
        assert!(!ids.is_empty(), "{name}");
        assert_extracts_as(&bundler, &ids, name);
    }
}

#[test]
fn extract_exact_takes_features_after_new_processors() {
    let Some(bundler) = util::tool("clang-offload-bundler-22") else {
        return;
    };
    assert_extracts_as(&bundler, NEW_WITH_FEATURES, "new-arches.o");
}

#[test]
fn extract_exact_takes_retired_processors_as_llvm_19_does() {
    // LLVM 22 no longer knows gfx940 and gfx941 and unbundles the gfx941:xnack+ code object
    // for both; LLVM 19 still knows them.
    let Some(bundler) = util::tool("clang-offload-bundler-19") else {
        return;
    };
    assert_extracts_as(&bundler, RETIRED, "retired-gfx940.o");
    let ours: Vec<Vec<u8>> = ["gfx940", "gfx941:xnack+"]
        .iter()
        .flat_map(|arch| extract_exact("retired-gfx940.o", arch))
        .collect();
    assert_ne!(
        ours[0], ours[1],
        "gfx940 and gfx941 are different code objects"
    );
}

/// The images `llvm-objdump --offloading` lists: (arch, producer) in file order.
fn objdump_images(objdump: &Path, name: &str) -> Vec<(String, String)> {
    let out = succeed(Command::new(objdump).arg("--offloading").arg(sample(name)));
    let text = String::from_utf8(out.stdout).unwrap();
    let field = |key: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.strip_prefix(key))
            .map(|v| v.trim().to_string())
            .collect()
    };
    field("arch").into_iter().zip(field("producer")).collect()
}

#[test]
fn ls_lists_the_offload_binaries_llvm_objdump_22_lists() {
    let Some(objdump) = util::tool("llvm-objdump-22") else {
        return;
    };
    for (name, expected) in [
        ("omp-22.o", ["gfx11-generic", "gfx1100"]),
        ("rdc-22.o", ["gfx11-generic", "gfx950"]),
    ] {
        let theirs = objdump_images(&objdump, name);
        let ours: Vec<(String, String)> = ls(name)
            .iter()
            .map(|i| {
                assert_eq!(i["triple"], "amdgcn-amd-amdhsa", "{name}");
                assert_eq!(i["section"], ".llvm.offloading", "{name}");
                let arch = i["arch"].as_str().unwrap().to_string();
                (arch, i["offload_kind"].as_str().unwrap().to_string())
            })
            .collect();
        assert_eq!(ours, theirs, "{name}");
        let arches: Vec<&str> = ours.iter().map(|(a, _)| a.as_str()).collect();
        assert_eq!(arches, expected, "{name}");
    }
}

#[test]
fn extract_exact_of_an_offload_binary_gives_what_llvm_offload_binary_22_writes() {
    let Some(tool) = util::tool("llvm-offload-binary-22") else {
        return;
    };
    for (name, arch) in [
        ("omp-22.o", "gfx11-generic"),
        ("omp-22.o", "gfx1100"),
        ("rdc-22.o", "gfx11-generic"),
        ("rdc-22.o", "gfx950"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("image");
        succeed(
            Command::new(&tool)
                .arg(sample(name))
                .arg(format!("--image=file={},arch={arch}", output.display())),
        );
        let expected = std::fs::read(&output).unwrap();
        let ours = extract_exact(name, arch);
        assert_eq!(ours.len(), 1, "{name}: {arch}");
        assert!(
            ours[0] == expected,
            "{name}: {arch}: {}",
            first_difference(&expected, &ours[0])
        );
    }
}

/// A bundler run with `args`: its exit status, standard output and standard error.
fn bundler_run(mut command: Command, args: &[&str]) -> (i32, Vec<u8>, String) {
    let out = command.args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_22_bundler_unbundles_every_new_target_as_llvm_22_does() {
    let Some(llvm) = util::tool("clang-offload-bundler-22") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for name in ["new-arches.o", "spirv.o", "mixed-app", "mixed-app-z"] {
        let section = hip_fatbin(name);
        for (index, bundle) in bundles(&section).into_iter().enumerate() {
            let input = dir.path().join(format!("{name}.{index}.hipfb"));
            std::fs::write(&input, bundle).unwrap();
            let input_arg = format!("-input={}", input.display());
            let (code, listed, err) =
                bundler_run(Command::new(&llvm), &["-list", "-type=o", &input_arg]);
            assert_eq!(code, 0, "{name}: {err}");
            let mut ours = offload();
            ours.env("OFFLOAD_LLVM_VERSION", "22").arg("bundler");
            let (_, our_list, _) = bundler_run(ours, &["-list", "-type=o", &input_arg]);
            assert_eq!(our_list, listed, "{name} bundle {index}: -list");
            for id in String::from_utf8(listed).unwrap().lines() {
                if id.starts_with("host-") {
                    continue;
                }
                let targets = format!("-targets={id}");
                let (l, o) = (dir.path().join("llvm.out"), dir.path().join("ours.out"));
                let args = |out: &Path| {
                    vec![
                        "-unbundle".to_string(),
                        "-type=o".into(),
                        targets.clone(),
                        input_arg.clone(),
                        format!("-output={}", out.display()),
                    ]
                };
                let llvm_args = args(&l);
                let llvm_args: Vec<&str> = llvm_args.iter().map(String::as_str).collect();
                let (code, _, err) = bundler_run(Command::new(&llvm), &llvm_args);
                assert_eq!(code, 0, "{name} {id}: {err}");
                let our_args = args(&o);
                let our_args: Vec<&str> = our_args.iter().map(String::as_str).collect();
                let mut ours = offload();
                ours.env("OFFLOAD_LLVM_VERSION", "22").arg("bundler");
                let (code, _, err) = bundler_run(ours, &our_args);
                assert_eq!(code, 0, "{name} {id}: {err}");
                let (want, got) = (std::fs::read(&l).unwrap(), std::fs::read(&o).unwrap());
                assert!(
                    want == got,
                    "{name} {id}: {}",
                    first_difference(&want, &got)
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 14, "only {checked} entries");
}

#[test]
fn strip_keeps_generic_code_inside_compressed_bundles() {
    let dir = tempfile::tempdir().unwrap();
    let stripped = dir.path().join("stripped");
    succeed(
        offload()
            .arg("strip")
            .arg(sample("mixed-app-z"))
            .args(["--keep", "gfx1100", "-o"])
            .arg(&stripped),
    );
    let out = succeed(offload().args(["ls", "--json"]).arg(&stripped));
    let images: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let kept: Vec<(&str, bool)> = images
        .iter()
        .filter(|i| i["offload_kind"] == "hip")
        .map(|i| {
            (
                i["arch"].as_str().unwrap(),
                i["compressed"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(kept, [("gfx1100", true), ("gfx11-generic", true)]);
    // Still version 3, as clang-22 wrote them.
    let bytes = std::fs::read(&stripped).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let section = file.section_by_name(".hip_fatbin").unwrap().data().unwrap();
    for bundle in bundles(section) {
        assert_eq!(&bundle[..6], b"CCOB\x03\x00");
    }
}
