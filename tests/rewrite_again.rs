//! Programs rewritten again and again: `decompress`, `compress` and `strip` of a program
//! whose bundles an earlier rewrite moved to a segment at the end of the file, repeated as
//! users repeat them. Each result loads (llvm-readelf reads it without a warning), lists the
//! images it should, verifies, and a state reached again has the size it had the first time.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util;
use crate::util::native::compile_hip;
use crate::util::{offload, samples_dir};
use serde_json::Value;

/// The most a state reached again may differ in size from the first time: one page.
const PAGE: u64 = 4096;

/// `arch` (or `-` for host entries), with `~` after compressed ones, per image of `path`.
fn images(path: &Path) -> Vec<String> {
    let out = offload().args(["ls", "--json"]).arg(path).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let images: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    images
        .iter()
        .map(|i| {
            let arch = i["arch"].as_str().unwrap();
            let arch = if arch.is_empty() { "-" } else { arch };
            let z = if i["compressed"] == true { "~" } else { "" };
            format!("{arch}{z}")
        })
        .collect()
}

/// Checks that llvm-readelf reads the headers of `path` with no warning.
fn readelf_reads(readelf: &Path, path: &Path) {
    let out = Command::new(readelf)
        .args(["-l", "-S"])
        .arg(path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.is_empty(),
        "{}: {stderr}",
        path.display()
    );
}

/// Checks that `path` loads: llvm-readelf reads its headers with no warning, and `offload
/// verify` passes.
fn check_loadable(readelf: &Path, path: &Path) {
    readelf_reads(readelf, path);
    let out = offload().arg("verify").arg(path).output().unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One step of a cycle: the command's arguments before the input.
type Step = &'static [&'static str];

/// Checks the results of [`repeat`] for `cycle`: each loads, lists `expected` (per step),
/// and has, within a page, the size of the same step's first result.
fn check_rounds(
    readelf: &Path,
    cycle: &[Step],
    results: &[(PathBuf, Vec<String>, u64)],
    expected: &[&[&str]],
) {
    for (n, (path, listed, size)) in results.iter().enumerate() {
        let step = n % cycle.len();
        check_loadable(readelf, path);
        assert_eq!(listed, expected[step], "{}", path.display());
        let first = results[step].2;
        assert!(
            size.abs_diff(first) <= PAGE,
            "{}: {size} bytes, the first {:?} gave {first}",
            path.display(),
            cycle[step]
        );
    }
}

/// The sizes of `results`, for the messages of a failing test.
fn sizes(results: &[(PathBuf, Vec<String>, u64)]) -> Vec<u64> {
    results.iter().map(|r| r.2).collect()
}

#[test]
fn decompress_and_compress_repeat_at_the_same_sizes() {
    let Some(readelf) = util::tool("llvm-readelf-22") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let start = samples_dir().join("targets/mixed-app-z");
    let cycle: &[Step] = &[&["decompress"], &["compress"]];
    let results = repeat(dir.path(), &start, cycle);
    let plain: &[&str] = &[
        "-",
        "gfx11-generic",
        "gfx1100",
        "gfx90a",
        "-",
        "gfx11-generic",
        "gfx90a:xnack-",
    ];
    let z: &[&str] = &[
        "-~",
        "gfx11-generic~",
        "gfx1100~",
        "gfx90a~",
        "-~",
        "gfx11-generic~",
        "gfx90a:xnack-~",
    ];
    check_rounds(&readelf, cycle, &results, &[plain, z]);
    // A compressed result is about the input's size again, not one page or more larger each
    // round.
    let input = std::fs::metadata(&start).unwrap().len();
    assert!(results[5].2 <= input + 2 * PAGE, "{:?}", sizes(&results));
}

#[test]
fn strip_between_decompress_and_compress_repeats_at_the_same_sizes() {
    let Some(readelf) = util::tool("llvm-readelf-22") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let start = samples_dir().join("targets/mixed-app-z");
    let cycle: &[Step] = &[
        &["decompress"],
        &["strip", "--keep", "gfx90a"],
        &["compress"],
    ];
    let results = repeat(dir.path(), &start, cycle);
    let plain: &[&str] = &["-", "gfx90a", "-", "gfx90a:xnack-"];
    let z: &[&str] = &["-~", "gfx90a~", "-~", "gfx90a:xnack-~"];
    let first: &[&str] = &[
        "-",
        "gfx11-generic",
        "gfx1100",
        "gfx90a",
        "-",
        "gfx11-generic",
        "gfx90a:xnack-",
    ];
    // Only the first round's decompress sees every processor; check the later rounds' as
    // their own state.
    check_rounds(&readelf, cycle, &results[..3], &[first, plain, z]);
    check_rounds(&readelf, cycle, &results[3..], &[plain, plain, z]);
    assert!(
        results[5].2.abs_diff(results[2].2) <= PAGE,
        "{:?}",
        sizes(&results)
    );
}

/// A `-fgpu-rdc` shared library of kernel.hip for gfx90a and gfx1100, linked by GNU ld:
/// its wrapper is filled by an `R_X86_64_64` relocation naming `__hip_fatbin_<hash>`.
fn gnu_ld_rdc_library(clang: &Path, dir: &Path) -> PathBuf {
    let object = compile_hip(
        clang,
        dir,
        "kernel.hip",
        &["gfx90a", "gfx1100"],
        &["-fgpu-rdc"],
    );
    // The device link needs no HIP runtime: an empty libamdhip64 satisfies the driver.
    util::succeed(Command::new("ar").arg("rc").arg(dir.join("libamdhip64.a")));
    let library = dir.join("libk.so");
    util::succeed(
        Command::new(clang)
            .args([
                "-fgpu-rdc",
                "--hip-link",
                "-nogpulib",
                "-shared",
                "-fuse-ld=bfd",
            ])
            .args(["--offload-arch=gfx90a", "--offload-arch=gfx1100"])
            .arg(format!("-L{}", dir.display()))
            .arg(&object)
            .arg("-o")
            .arg(&library),
    );
    library
}

/// The address of `.hip_fatbin` in `path`, and the type and addend of the dynamic
/// relocation that fills the wrapper's pointer (8 bytes into `.hipFatBinSegment`).
fn wrapper_relocation(readelf: &Path, path: &Path) -> (u64, String, u64) {
    let out = Command::new(readelf)
        .args(["-S", "-r", "-W"])
        .arg(path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let address_of = |name: &str| {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().any(|w| w == name))
            .unwrap_or_else(|| panic!("no {name} in {text}"));
        let words: Vec<&str> = line.split(']').nth(1).unwrap().split_whitespace().collect();
        u64::from_str_radix(words[2], 16).unwrap()
    };
    let place = address_of(".hipFatBinSegment") + 8;
    let relocation = text
        .lines()
        .find(|l| {
            l.split_whitespace()
                .next()
                .and_then(|w| u64::from_str_radix(w, 16).ok())
                == Some(place)
        })
        .unwrap_or_else(|| panic!("no relocation at {place:#x} in {text}"));
    let words: Vec<&str> = relocation.split_whitespace().collect();
    let addend = u64::from_str_radix(words.last().unwrap().trim_start_matches("+ "), 16);
    (
        address_of(".hip_fatbin"),
        words[2].to_string(),
        addend.unwrap(),
    )
}

#[test]
fn gnu_ld_rdc_libraries_are_stripped_compressed_and_decompressed() {
    let (Some(clang), Some(readelf)) = (util::tool("clang-22"), util::tool("llvm-readelf-22"))
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let library = gnu_ld_rdc_library(&clang, dir.path());
    let (_, kind, _) = wrapper_relocation(&readelf, &library);
    assert_eq!(kind, "R_X86_64_64");
    let steps: &[(&str, Step, &[&str])] = &[
        ("stripped", &["strip", "--keep", "gfx90a"], &["-", "gfx90a"]),
        ("compressed", &["compress"], &["-~", "gfx1100~", "gfx90a~"]),
        ("decompressed", &["decompress"], &["-", "gfx1100", "gfx90a"]),
    ];
    let mut input = library;
    for (name, step, expected) in steps {
        let output = dir.path().join(name);
        let out = offload()
            .args(*step)
            .arg(&input)
            .arg("-o")
            .arg(&output)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        check_loadable(&readelf, &output);
        assert_eq!(images(&output), *expected, "{name}");
        let (fatbin, kind, addend) = wrapper_relocation(&readelf, &output);
        assert_eq!(
            (kind.as_str(), addend),
            ("R_X86_64_RELATIVE", fatbin),
            "{name}"
        );
        if *name != "stripped" {
            input = output;
        }
    }
}

/// Runs `offload kpack` with `args` on `input`, writing to `out`; returns the binary written.
fn kpack(args: &[&str], input: &Path, out: &Path) -> PathBuf {
    let result = offload()
        .arg("kpack")
        .args(args)
        .arg(input)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        result.status.success(),
        "kpack {args:?} {}: {}",
        input.display(),
        String::from_utf8_lossy(&result.stderr)
    );
    out.join(input.file_name().unwrap())
}

#[test]
fn binaries_merged_back_are_split_again() {
    let Some(readelf) = util::tool("llvm-readelf-22") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut input = samples_dir().join("linked/hip-app");
    let mut listings = Vec::new();
    for round in 0..2 {
        let split = kpack(&[], &input, &dir.path().join(format!("split{round}")));
        let merged = kpack(
            &["--merge"],
            &split,
            &dir.path().join(format!("merged{round}")),
        );
        for path in [&split, &merged] {
            readelf_reads(&readelf, path);
        }
        check_loadable(&readelf, &merged);
        listings.push((images(&split), images(&merged)));
        input = merged;
    }
    assert_eq!(listings[0].1.len(), 9);
    assert_eq!(listings[1], listings[0]);
}

/// Runs `cycle` (each step a command's arguments before the input; `kpack` and `kpack
/// --merge` write a folder, whose binary is the next input) on `start` three times over in
/// `dir`; returns every result's path, images and size, in order.
fn repeat(dir: &Path, start: &Path, cycle: &[Step]) -> Vec<(PathBuf, Vec<String>, u64)> {
    let mut input = start.to_path_buf();
    let mut results = Vec::new();
    for round in 0..3 {
        for (k, step) in cycle.iter().enumerate() {
            let output = dir.join(format!("r{round}-s{k}"));
            let written = if step[0] == "kpack" {
                kpack(&step[1..], &input, &output)
            } else {
                let out = offload()
                    .args(*step)
                    .arg(&input)
                    .arg("-o")
                    .arg(&output)
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "round {round}, {step:?}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                output
            };
            let size = std::fs::metadata(&written).unwrap().len();
            results.push((written.clone(), images(&written), size));
            input = written;
        }
    }
    results
}

#[test]
fn any_sequence_with_kpack_and_merge_repeats_within_a_page() {
    let Some(readelf) = util::tool("llvm-readelf-22") else {
        return;
    };
    let cycles: [&[Step]; 4] = [
        &[&["kpack"], &["kpack", "--merge"]],
        &[
            &["decompress"],
            &["kpack"],
            &["kpack", "--merge"],
            &["compress"],
        ],
        &[
            &["kpack"],
            &["kpack", "--merge"],
            &["strip", "--keep", "gfx90a"],
            &["decompress"],
        ],
        &[
            &["compress"],
            &["kpack"],
            &["kpack", "--merge"],
            &["decompress"],
        ],
    ];
    for sample in ["linked/hip-app", "linked/libhip.so", "targets/mixed-app-z"] {
        for (c, cycle) in cycles.iter().enumerate() {
            let dir = tempfile::tempdir().unwrap();
            let results = repeat(dir.path(), &samples_dir().join(sample), cycle);
            let n = cycle.len();
            for (k, (path, listed, size)) in results.iter().enumerate() {
                if cycle[k % n] == ["kpack"] {
                    // A split binary: its headers read (verify judges its archives).
                    readelf_reads(&readelf, path);
                } else {
                    check_loadable(&readelf, path);
                }
                // From the second round on, each step reaches again the state it reached the
                // round before: the same images, the same size within a page.
                if k >= 2 * n {
                    let (_, before, first) = &results[k - n];
                    assert_eq!(listed, before, "{sample}, cycle {c}: {}", path.display());
                    assert!(
                        size.abs_diff(*first) <= PAGE,
                        "{sample}, cycle {c}, {}: {:?}",
                        path.display(),
                        sizes(&results)
                    );
                }
            }
            // Each round ends in the state the first ended in, within a page of its size.
            for round in 1..3 {
                let (last, first) = (&results[round * n + n - 1], &results[n - 1]);
                assert_eq!(last.1, first.1, "{sample}, cycle {c}");
                assert!(
                    last.2.abs_diff(first.2) <= PAGE,
                    "{sample}, cycle {c}: {:?}",
                    sizes(&results)
                );
            }
            // Splitting and merging alone return to the same sizes from the first round on.
            if c == 0 {
                assert_eq!(sizes(&results)[..2], sizes(&results)[2..4], "{sample}");
            }
        }
    }
}
