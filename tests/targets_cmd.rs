//! `offload targets` on committed samples: the exact output of each format, the JSON fields,
//! the oldest CUDA driver (the PTX of samples/cuda/app declares `.version 9.5`), the round trip
//! of the CMake and PyTorch lists through `check --require`, and errors; and `offload check
//! --driver`.

use serde_json::Value;

use crate::util::{offload, samples_dir};

fn run(command: &str, args: &[&str]) -> (i32, String, String) {
    let out = offload()
        .current_dir(samples_dir())
        .arg(command)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn targets(args: &[&str]) -> String {
    let (code, out, err) = run("targets", args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, "");
    out
}

#[test]
fn text_says_every_and_some() {
    assert_eq!(
        targets(&["linked/libhip.so"]),
        "every: gfx90a\nsome: gfx906\n"
    );
    assert_eq!(
        targets(&["targets/mixed-app"]),
        "every: gfx11-generic\nsome: gfx90a gfx90a:xnack- gfx1100\n"
    );
}

#[test]
fn text_names_the_oldest_driver_and_its_file() {
    assert_eq!(
        targets(&["cuda/libmixed.so"]),
        "every: gfx90a gfx1100 sm_80 sm_90 compute_90\nsome:\n\
         driver: CUDA 13.5 or newer: PTX ISA 9.5 (compute_90) in cuda/libmixed.so\n"
    );
    // Two files: the first that needs the newest driver decides it.
    assert_eq!(
        targets(&["cuda/gencode-lz.o", "cuda/app"]),
        "every: sm_80 sm_90 compute_90\nsome:\n\
         driver: CUDA 13.5 or newer: PTX ISA 9.5 (compute_90) in cuda/gencode-lz.o\n"
    );
}

#[test]
fn debian_lists_the_processors_every_unit_serves() {
    assert_eq!(
        targets(&["--format", "debian", "targets/mixed-app"]),
        "gfx90a gfx1100 gfx1101 gfx1102 gfx1103 gfx1150 gfx1151 gfx1152 gfx1153\n"
    );
    assert_eq!(
        targets(&["--format", "debian", "cuda/libmixed.so"]),
        "gfx90a gfx1100\n"
    );
    assert_eq!(targets(&["--format", "debian", "cuda/app"]), "");
}

#[test]
fn cmake_and_torch_lists() {
    assert_eq!(
        targets(&["--format", "cmake", "cuda/libmixed.so"]),
        "CMAKE_HIP_ARCHITECTURES='gfx90a;gfx1100'\nCMAKE_CUDA_ARCHITECTURES='80-real;90'\n"
    );
    assert_eq!(
        targets(&["--format", "torch", "cuda/libmixed.so"]),
        "PYTORCH_ROCM_ARCH='gfx90a;gfx1100'\nTORCH_CUDA_ARCH_LIST='8.0;9.0+PTX'\n"
    );
    assert_eq!(
        targets(&["--format", "cmake", "cuda/arch-specific.o"]),
        "CMAKE_CUDA_ARCHITECTURES='90a;100f-real;120-real'\n"
    );
    assert_eq!(
        targets(&["--format", "torch", "cuda/arch-specific.o"]),
        "TORCH_CUDA_ARCH_LIST='9.0a+PTX;10.0f;12.0'\n"
    );
}

#[test]
fn lists_read_back_by_check_require_pass_on_the_same_files() {
    let samples = [
        "linked/libhip.so",
        "cuda/app",
        "cuda/libmixed.so",
        "targets/mixed-app",
        "cuda/arch-specific.o",
    ];
    for file in samples {
        for format in ["cmake", "torch"] {
            let out = targets(&["--format", format, file]);
            assert!(!out.is_empty(), "{file} {format}");
            for line in out.lines() {
                let (_, value) = line.split_once('=').unwrap();
                let list = value.trim_matches('\'');
                let (code, table, err) = run("check", &["--require", list, file]);
                assert_eq!(code, 0, "{file} {format} {list}: {table}{err}");
            }
        }
    }
}

#[test]
fn json_has_every_some_and_each_file() {
    let out = targets(&["--json", "linked/libhip.so", "cuda/app"]);
    let json: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        json["every"],
        serde_json::json!(["gfx90a", "sm_80", "sm_90", "compute_90"])
    );
    assert_eq!(json["some"], serde_json::json!(["gfx906"]));
    assert_eq!(json["processors"], serde_json::json!(["gfx90a"]));
    assert_eq!(json["driver"]["cuda"], "13.5");
    assert_eq!(json["driver"]["linux"], Value::Null);
    assert_eq!(json["driver"]["why"], "PTX ISA 9.5");
    assert_eq!(json["driver"]["file"], "cuda/app");
    let files = json["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(files[0]["file"], "linked/libhip.so");
    assert_eq!(files[0]["units"], 2);
    assert!(files[0].get("driver_needs").is_none());
    assert_eq!(files[1]["units"], 1);
    let needs = files[1]["driver_needs"].as_array().unwrap();
    assert!(needs
        .iter()
        .any(|n| n["why"] == "zstd compression" && n["cuda"] == "12.4"));
}

#[test]
fn a_missing_file_prints_nothing_and_exits_2() {
    let (code, out, err) = run("targets", &["linked/libhip.so", "no-such-file"]);
    assert_eq!(code, 2);
    assert_eq!(out, "");
    assert!(err.contains("no-such-file"), "{err}");
}

#[test]
fn check_driver_notes_what_an_older_driver_cannot_use() {
    let (code, out, err) = run(
        "check",
        &[
            "--driver",
            "12.4",
            "--device",
            "sm_90",
            "cuda/gencode-zstd.o",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.ends_with(
            "note: cuda/gencode-zstd.o: a CUDA 12.4 driver cannot use compute_90 \
             (PTX ISA 9.5, needs CUDA 13.5)\n"
        ),
        "{out}"
    );
    let (code, out, _) = run(
        "check",
        &[
            "--driver",
            "12.3",
            "--device",
            "sm_90",
            "--json",
            "cuda/gencode-zstd.o",
        ],
    );
    assert_eq!(code, 1);
    let json: Value = serde_json::from_str(&out).unwrap();
    let entries = json["driver"]["files"][0]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 4, "{out}");
    let (code, out, _) = run(
        "check",
        &[
            "--driver",
            "13.5",
            "--device",
            "sm_90",
            "cuda/gencode-zstd.o",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("note:"));
    // Without --driver the JSON is as it was.
    let (_, out, _) = run(
        "check",
        &["--device", "sm_90", "--json", "cuda/gencode-zstd.o"],
    );
    assert!(!out.contains("\"driver\""));
}

#[test]
fn a_bare_ptx_file_is_judged_by_its_version_line() {
    // Each bare image is a unit of its own: none of them has every target.
    assert_eq!(
        targets(&["cuda/bare"]),
        "every:\nsome: sm_89 sm_90a sm_100a sm_100 compute_100a\n\
         driver: CUDA 13.5 or newer: PTX ISA 9.5 (compute_100a) in cuda/bare/kernel-compute_100a.ptx\n"
    );
}
