//! `offload du --kernels` and `offload du --html`: each function's size checked against what
//! `llvm-readelf` says of the code objects `offload extract` writes, code stored twice found
//! and its savings summed, and the HTML page read back (by us, and as headless Chromium renders
//! it) with the same totals as `du --json`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::{self, offload, samples_dir, succeed};

/// Samples with kernels: AMDGPU bundles plain and compressed, CUDA fat binaries with cubins
/// plain and zstd-compressed (and PTX, which has no symbol table).
const WITH_KERNELS: [&str; 5] = [
    "bundles/vadd-fat.o",
    "bundles/kernel-hip-z.o",
    "bundles/kernel-6.o",
    "cuda/gencode-zstd.o",
    "cuda/libkernel.so",
];

/// The JSON `offload du` prints for `args`.
fn du_json(args: &[&std::ffi::OsStr]) -> Value {
    let out = succeed(offload().arg("du").arg("--json").args(args));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The samples `names`, as paths.
fn samples(names: &[&str]) -> Vec<PathBuf> {
    names.iter().map(|name| samples_dir().join(name)).collect()
}

/// The functions with code (`FUNC`, size above 0) `llvm-readelf --symbols` lists in the
/// `.symtab` of `file`: name and size each.
fn readelf_functions(readelf: &Path, file: &Path) -> Vec<(String, u64)> {
    let out = succeed(Command::new(readelf).arg("--symbols").arg(file));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut in_symtab = false;
    let mut found = Vec::new();
    for line in text.lines() {
        if line.starts_with("Symbol table") {
            in_symtab = line.contains("'.symtab'");
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        if !in_symtab || fields.len() < 8 || fields[3] != "FUNC" {
            continue;
        }
        let size: u64 = fields[2].parse().unwrap();
        if size > 0 {
            found.push((fields[fields.len() - 1].to_string(), size));
        }
    }
    found
}

#[test]
fn kernel_sizes_are_what_readelf_says_of_the_extracted_code_objects() {
    let Some(readelf) = util::tool("llvm-readelf-22") else {
        return;
    };
    let files = samples(&WITH_KERNELS);
    let dir = tempfile::tempdir().unwrap();
    let mut extract = offload();
    extract.arg("extract").args(&files).arg("--exact").arg("-q");
    for arch in ["gfx906", "gfx90a", "gfx90a:xnack+", "gfx90a:xnack-"] {
        extract.args(["--arch", arch]);
    }
    for arch in ["gfx908:sramecc+:xnack-", "sm_80", "sm_90"] {
        extract.args(["--arch", arch]);
    }
    succeed(extract.arg("-o").arg(dir.path()));
    let mut expected: Vec<(String, u64)> = Vec::new();
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if std::fs::read(&path).unwrap().starts_with(b"\x7fELF") {
            expected.extend(readelf_functions(&readelf, &path));
        }
    }
    let args: Vec<&std::ffi::OsStr> = files.iter().map(|f| f.as_os_str()).collect();
    let report = du_json(&[&[std::ffi::OsStr::new("--kernels")], &args[..]].concat());
    let mut listed: Vec<(String, u64)> = Vec::new();
    for kernel in report["kernels"].as_array().unwrap() {
        let name = kernel["name"].as_str().unwrap().to_string();
        let size = kernel["size"].as_u64().unwrap();
        assert_eq!(
            kernel["bytes"].as_u64(),
            Some(size * kernel["copies"].as_u64().unwrap())
        );
        for _ in 0..kernel["copies"].as_u64().unwrap() {
            listed.push((name.clone(), size));
        }
    }
    expected.sort();
    listed.sort();
    assert!(!expected.is_empty());
    assert_eq!(listed, expected);
    let names: Vec<&str> = listed.iter().map(|(n, _)| n.as_str()).collect();
    for name in ["_Z4vaddPKfS0_Pfj", "_Z6vscalePffj", "_Z4kfunPii", "_Z1kPii"] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
    // Every one of these is a kernel, none a `.kd` descriptor.
    let kernels = report["kernels"].as_array().unwrap();
    assert!(kernels.iter().all(|k| k["kernel"] == true), "{kernels:?}");
    assert!(!names.iter().any(|n| n.ends_with(".kd")));
    let total = &report["total"];
    assert_eq!(total["functions"].as_u64(), Some(listed.len() as u64));
    let bytes: u64 = listed.iter().map(|(_, size)| size).sum();
    assert_eq!(total["function_bytes"].as_u64(), Some(bytes));
}

#[test]
fn code_stored_twice_is_found_with_what_one_copy_saves() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = samples_dir().join("bundles/vadd-fat.o");
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::copy(&bundle, dir.path().join("a.o")).unwrap();
    std::fs::copy(&bundle, dir.path().join("sub/b.o")).unwrap();
    let once = du_json(&["--kernels".as_ref(), bundle.as_os_str()]);
    assert_eq!(once["code_objects"].as_array().unwrap().len(), 0);
    assert_eq!(once["total"]["saved_functions"].as_u64(), Some(0));

    let twice = du_json(&["--kernels".as_ref(), "-r".as_ref(), dir.path().as_os_str()]);
    let copies = twice["code_objects"].as_array().unwrap();
    assert_eq!(copies.len(), 2, "{copies:?}");
    let mut saved = 0;
    for copy in copies {
        assert_eq!(copy["copies"].as_u64(), Some(2));
        assert_eq!(copy["saved"], copy["size"]);
        let places = copy["places"].as_array().unwrap();
        let files: Vec<&str> = places.iter().map(|p| p["file"].as_str().unwrap()).collect();
        assert!(files[0] != files[1], "{files:?}");
        saved += copy["saved"].as_u64().unwrap();
    }
    let total = &twice["total"];
    assert_eq!(total["saved_code_objects"].as_u64(), Some(saved));
    assert_eq!(
        total["code_object_bytes"].as_u64(),
        Some(2 * once["total"]["code_object_bytes"].as_u64().unwrap())
    );
    for kernel in twice["kernels"].as_array().unwrap() {
        assert_eq!(kernel["copies"].as_u64(), Some(2));
        assert_eq!(kernel["saved"], kernel["size"]);
        assert_eq!(kernel["files"].as_array().unwrap().len(), 2);
    }
    assert_eq!(
        total["saved_functions"], once["total"]["function_bytes"],
        "one copy of each function saves what one file's functions take"
    );
    // The table says so too, and --top keeps the largest only.
    let out = succeed(
        offload()
            .args(["du", "--kernels", "--top", "1", "-r"])
            .arg(dir.path()),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Stored more than once:"), "{text}");
    assert_eq!(text.matches("_Z").count(), 1, "{text}");
    assert!(text.contains("_Z4vaddPKfS0_Pfj"), "{text}");
}

/// What a page's elements with `class="CLASS"` say in their `data-NAME` attributes: one map
/// of attribute to value per element, in order.
fn elements(page: &str, class: &str) -> Vec<BTreeMap<String, String>> {
    let marker = format!("class=\"{class}\"");
    let mut found = Vec::new();
    for piece in page.split('<').skip(1) {
        let tag = piece.split('>').next().unwrap_or("");
        if !tag.contains(&marker) {
            continue;
        }
        let mut attributes = BTreeMap::new();
        for part in tag.split(" data-").skip(1) {
            if let Some((name, rest)) = part.split_once("=\"") {
                let value = rest.split('"').next().unwrap_or("");
                attributes.insert(name.to_string(), value.to_string());
            }
        }
        found.push(attributes);
    }
    found
}

/// The sum of the `data-NAME` attribute of `elements`.
fn sum(elements: &[BTreeMap<String, String>], name: &str) -> u64 {
    elements
        .iter()
        .map(|e| e.get(name).map_or(0, |v| v.parse::<u64>().unwrap()))
        .sum()
}

/// Stored bytes per target of `du --json`'s `total`.
fn json_totals(report: &Value, field: &str) -> BTreeMap<String, u64> {
    report["total"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            let target = u["target"].as_str().unwrap().to_string();
            (target, u[field].as_u64().unwrap_or(0))
        })
        .collect()
}

/// Checks that `page` draws every byte `report` (`du --json` of the same files) counts: the
/// leaves of the treemap and the table of totals, per target and in all, and the stored and
/// removed bytes.
fn check_totals(page: &str, report: &Value) {
    let stored = json_totals(report, "stored");
    let all: u64 = stored.values().sum();
    let leaves = elements(page, "leaf");
    assert!(!leaves.is_empty());
    assert_eq!(sum(&leaves, "stored"), all);
    let mut by_target: BTreeMap<String, u64> = BTreeMap::new();
    for leaf in &leaves {
        *by_target.entry(leaf["target"].clone()).or_default() +=
            leaf["stored"].parse::<u64>().unwrap();
    }
    assert_eq!(by_target, stored);
    let rows = elements(page, "target");
    let table: BTreeMap<String, u64> = rows
        .iter()
        .filter(|r| r.contains_key("images"))
        .map(|r| (r["target"].clone(), r["stored"].parse().unwrap()))
        .collect();
    assert_eq!(table, stored);
    let inflated = json_totals(report, "inflated");
    let all_row = &elements(page, "all")[0];
    assert_eq!(all_row["stored"].parse::<u64>().unwrap(), all);
    assert_eq!(
        all_row["inflated"].parse::<u64>().unwrap(),
        inflated.values().sum::<u64>()
    );
    let removed = json_totals(report, "removed");
    assert_eq!(sum(&leaves, "removed"), removed.values().sum::<u64>());
}

/// Files for a page: bundles, a static library, a wheel, a program with both HIP and CUDA
/// code.
fn page_inputs() -> Vec<PathBuf> {
    samples(&[
        "bundles/vadd-fat.o",
        "bundles/kernel-6.o",
        "bundles/libvadd.a",
        "bundles/two-ccob.bin",
        "wheels/kdemo-1.0-py3-none-linux_x86_64.whl",
        "cuda/libmixed.so",
    ])
}

#[test]
fn the_page_is_self_contained_and_counts_what_json_counts() {
    let dir = tempfile::tempdir().unwrap();
    let page_path = dir.path().join("du.html");
    let files = page_inputs();
    for keep in [None, Some("gfx90a")] {
        let mut du = offload();
        du.arg("du")
            .arg("--json")
            .arg("--html")
            .arg(&page_path)
            .args(&files);
        if let Some(keep) = keep {
            du.args(["--keep", keep]);
        }
        let out = succeed(&mut du);
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let page = std::fs::read_to_string(&page_path).unwrap();
        for outside in [
            "http://", "https://", "src=", "<script", "<link", "@import", "url(h",
        ] {
            assert!(!page.contains(outside), "the page holds {outside}");
        }
        assert!(page.starts_with("<!DOCTYPE html>"));
        check_totals(&page, &report);
        for target in json_totals(&report, "stored").keys() {
            assert!(
                page.contains(&format!("data-target=\"{target}\"")),
                "{target}"
            );
        }
        // Each file has its rectangle, a package its members.
        assert_eq!(elements(&page, "file").len(), files.len());
        assert!(page.contains("kdemo-1.0-py3-none-linux_x86_64.whl!"));
        assert!(page.contains("data-name=\".hip_fatbin\""));
        assert!(page.contains("data-name=\".nv_fatbin\""));
        assert_eq!(keep.is_some(), page.contains("fill=\"url(#hatch)\""));
    }
    // `--html -`: the page on standard output, alone.
    let out = succeed(offload().args(["du", "--html", "-"]).args(&files));
    let page = String::from_utf8(out.stdout).unwrap();
    let report = du_json(&files.iter().map(|f| f.as_os_str()).collect::<Vec<_>>());
    assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"));
    check_totals(&page, &report);
    let (code, _, stderr) =
        util::text_output(offload().args(["du", "--json", "--html", "-"]).args(&files));
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn chromium_draws_the_treemap_with_the_totals_of_json() {
    let Some(chromium) = util::any_tool(&["chromium", "chromium-browser"]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page_path = dir.path().join("du.html");
    let files = page_inputs();
    let out = succeed(
        offload()
            .args(["du", "--json", "--keep", "gfx906", "--html"])
            .arg(&page_path)
            .args(&files),
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let headless = |extra: &[&std::ffi::OsStr]| {
        let mut command = Command::new(&chromium);
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
            ])
            .arg(format!(
                "--user-data-dir={}",
                dir.path().join("profile").display()
            ))
            .args(["--window-size=1400,720", "--virtual-time-budget=2000"])
            .args(extra)
            .arg(&page_path);
        succeed(&mut command)
    };
    let dom = String::from_utf8(headless(&["--dump-dom".as_ref()]).stdout).unwrap();
    assert!(dom.contains("<svg id=\"treemap\""), "{dom}");
    check_totals(&dom, &report);
    // Drawn: each leaf with a width and height Chromium kept.
    let drawn = dom.matches("<rect class=\"leaf\" x=").count();
    assert_eq!(drawn, elements(&dom, "leaf").len());
    let shot = dir.path().join("du.png");
    let screenshot = format!("--screenshot={}", shot.display());
    headless(&[screenshot.as_ref()]);
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "{}",
        png.len()
    );
}

#[test]
fn kernels_of_damaged_and_capped_inputs_are_errors_naming_the_file() {
    let root = util::root();
    let (code, stdout, stderr) = util::text_output(
        offload()
            .args(["du", "--kernels", "-r"])
            .arg(samples_dir())
            .arg(root.join("tests/fuzz-regressions")),
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stdout.contains("_Z4vaddPKfS0_Pfj"), "{stdout}");
    // Compressed images inflate within the cap, or not at all.
    for file in ["cuda/gencode-zstd.o", "bundles/kernel-hip-z.o"] {
        let (code, _, stderr) = util::text_output(
            offload()
                .args(["du", "--kernels", "--max-decompressed-size", "1000"])
                .arg(samples_dir().join(file)),
        );
        assert_eq!(code, 1, "{stderr}");
        assert!(
            stderr.contains(file) && stderr.contains("--max-decompressed-size"),
            "{stderr}"
        );
    }
}

/// Files of the samples, as `du --kernels` is given them in `samples/` for
/// tests/golden-du-kernels/: AMDGPU and CUDA code objects, stored more than once (one file
/// twice), in files of their own and across files.
const KERNEL_SAMPLES: [&str; 8] = [
    "bundles/vadd-fat.o",
    "bundles/kernel-hip-z.o",
    "bundles/kernel-6.o",
    "cuda/gencode-zstd.o",
    "cuda/libkernel.so",
    "cuda/compress-all.o",
    "cuda/gencode-lz.o",
    "bundles/vadd-fat.o",
];

#[test]
fn kernel_tables_and_json_are_what_they_were_on_every_run() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden-du-kernels");
    for (args, expected) in [(&[][..], "samples.txt"), (&["--json"][..], "samples.json")] {
        let want = String::from_utf8(std::fs::read(golden.join(expected)).unwrap()).unwrap();
        // Many threads, run after run: the rows come in one order.
        for _ in 0..3 {
            let out = succeed(
                offload()
                    .current_dir(samples_dir())
                    .env("RAYON_NUM_THREADS", "8")
                    .args(["du", "--kernels"])
                    .args(args)
                    .args(KERNEL_SAMPLES),
            );
            let text = String::from_utf8(out.stdout).unwrap();
            assert!(text == want, "{expected}:\n{text}");
        }
    }
}

#[test]
fn functions_alike_but_for_their_code_come_in_the_order_found() {
    // Over every sample (some damaged: exit 1), functions of one name, size and target with
    // different code tie on every sort key: they come in the order their files were found.
    let run = |json: bool| {
        let mut command = offload();
        command
            .current_dir(samples_dir())
            .env("RAYON_NUM_THREADS", "8")
            .args(["du", "--kernels", "-r", "."]);
        if json {
            command.arg("--json");
        }
        command.output().unwrap().stdout
    };
    for json in [false, true] {
        let first = run(json);
        assert!(!first.is_empty());
        for _ in 0..3 {
            assert!(run(json) == first, "json: {json}");
        }
    }
}
