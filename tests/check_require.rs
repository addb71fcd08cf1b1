//! `offload check --require`: the release gate over committed samples. Every list form users
//! write keeps its meaning, the table and the failure lines are exact, the exit status is 1
//! for a missing target and 2 for a file that cannot be read (the last line says which), and
//! `--format github` writes annotations.

use crate::util::{offload, samples_dir};

fn run(args: &[&str], files: &[&str]) -> (i32, String, String) {
    let mut command = offload();
    command
        .current_dir(samples_dir())
        .arg("check")
        .args(args)
        .args(files);
    let out = command.output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn a_missing_amd_target_fails_the_gate_naming_each_file() {
    let (code, out, err) = run(
        &["--require", "gfx90a;gfx1100"],
        &["linked/libhip.so", "linked/hip-app"],
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        out,
        "FILE              gfx90a   gfx1100\n\
         linked/libhip.so  native   MISSING\n\
         linked/hip-app    MISSING  MISSING\n\
         linked/libhip.so: gfx1100 is required: no code it loads in 2 of 2 fat binaries or bundles\n\
         linked/hip-app: gfx90a is required: no code it loads in 1 of 3 fat binaries or bundles\n\
         linked/hip-app: gfx1100 is required: no code it loads in 3 of 3 fat binaries or bundles\n\
         required: 2 targets against 2 files with device code: 3 missing (exit 1)\n"
    );
    assert_eq!(err, "");
    // PYTORCH_ROCM_ARCH's spaces; a target ID with features loads code built for any.
    let (code, out, _) = run(
        &["--require", "gfx90a gfx90a:xnack-"],
        &["linked/libhip.so"],
    );
    assert_eq!(code, 0);
    assert!(out.ends_with("every one present (exit 0)\n"), "{out}");
}

#[test]
fn cuda_lists_keep_their_meaning() {
    // The program holds sm_80 and sm_90 cubins and compute_90 PTX.
    let (code, out, _) = run(
        &[
            "--require",
            "8.0;9.0+PTX",
            "--require",
            "80-real,100-virtual",
            "--require",
            "8.6",
        ],
        &["cuda/app"],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out.lines().take(2).collect::<Vec<_>>(),
        [
            "FILE      8.0     9.0+PTX     80-real  100-virtual  8.6",
            "cuda/app  native  native+ptx  native   ptx          forward",
        ]
    );
    // sm_100 has no cubin (PTX only), and 8.0+PTX finds no PTX an sm_80 compiles.
    let (code, out, _) = run(
        &["--require", "10.0", "--require", "8.0+PTX"],
        &["cuda/app"],
    );
    assert_eq!(code, 1);
    assert!(out.contains("cuda/app: sm_100 (10.0) is required: no cubin it loads in 1 of 1 fat binaries or bundles\n"), "{out}");
    assert!(out.contains("cuda/app: sm_80 (8.0+PTX) is required: no PTX for compute_80 or earlier in 1 of 1 fat binaries or bundles\n"), "{out}");
    // An AMD target is not judged against a file with only CUDA code.
    let (code, out, _) = run(&["--require", "sm_90,gfx90a"], &["cuda/app"]);
    assert_eq!(code, 0);
    assert!(out.contains("cuda/app  native  -\n"), "{out}");
}

#[test]
fn github_annotations_json_and_exit_statuses() {
    let (code, out, _) = run(
        &["--require", "gfx1100", "--format", "github"],
        &["linked/libhip.so"],
    );
    assert_eq!(code, 1);
    assert_eq!(
        out,
        "::error file=linked/libhip.so,title=offload check::gfx1100 is required: no code it loads in 2 of 2 fat binaries or bundles\n\
         ::error title=offload check::required: 1 target against 1 file with device code: 1 missing (exit 1)\n"
    );
    let (code, out, _) = run(&["--require", "gfx90a", "--json"], &["linked/libhip.so"]);
    assert_eq!(code, 0);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["failures"], 0);
    assert_eq!(json["required"][0]["target"], "gfx90a");
    assert_eq!(json["files"][0]["path"], "linked/libhip.so");
    assert_eq!(json["files"][0]["verdicts"][0]["loads"], "native");
    // A file that cannot be read: exit 2, and the last line says so beside the verdicts.
    let (code, out, err) = run(
        &["--require", "gfx1100"],
        &["damaged/ccob-bad-hash.bin", "linked/libhip.so"],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("'damaged/ccob-bad-hash.bin': offset 0x18: compressed bundle hash mismatch"),
        "{err}"
    );
    assert!(
        out.ends_with("1 missing, and 1 file(s) could not be read (exit 2)\n"),
        "{out}"
    );
    // A list of no form is a usage error naming the item; CMake's "all" names no targets.
    for bad in ["8", "all-major", "9.0+ptx"] {
        let (code, out, err) = run(&["--require", bad], &["linked/libhip.so"]);
        assert_eq!((code, out.as_str()), (2, ""), "{bad}");
        assert!(
            err.starts_with(&format!("offload check: error: --require: '{bad}'")),
            "{err}"
        );
    }
}
