//! `offload check` of libraries that carry device images of their own as data (cubins for
//! `cuModuleLoadData`, bundles for `hipModuleLoadData`): reported apart from the code a runtime
//! registers, the exit status following the registered code unless `--require-embedded`.

use crate::rewrite_real::{cuda_library, hip_library};
use crate::util::offload_in;

#[test]
fn cuda_images_embedded_as_data_are_reported_apart_and_leave_the_exit_status_alone() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    if cuda_library(d).is_none() {
        return;
    }
    let (code, out, err) = offload_in(d, &["check", "--device", "sm_90", "libcu.so"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "Devices, in the runtime's order:\n  0 sm_90\n\n\
         FILE      BUNDLES  DEVICE  NATIVE  GENERIC  SPIR-V  NOTHING\n\
         libcu.so        1  sm_90        1        0       0        0\n\n\
         Embedded as data (no runtime registers these: the program loads them itself, with \
         hipModuleLoadData or cuModuleLoadData, when it asks for them; they leave the exit \
         status alone unless --require-embedded is given):\n  \
         libcu.so: 1 device image, number 2\n    \
         sm_90 (device 0): 0 of 1 have code for it\n  \
         Without code:\n    \
         sm_90 (device 0): libcu.so module 2 is for sm_89\n"
    );
    let (code, _, err) = offload_in(
        d,
        &[
            "check",
            "--device",
            "sm_90",
            "--require-embedded",
            "libcu.so",
        ],
    );
    assert_eq!(code, 1, "{err}");
    let (code, json, err) = offload_in(d, &["check", "--device", "sm_90", "--json", "libcu.so"]);
    assert_eq!(code, 0, "{err}");
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(report["every_device_has_code"], true);
    assert_eq!(report["embedded_have_code"], false);
    let bundles = report["files"][0]["bundles"].as_array().unwrap();
    let flags: Vec<(&str, bool)> = bundles
        .iter()
        .map(|b| {
            (
                b["runtime"].as_str().unwrap(),
                b["embedded"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(flags, [("cuda", false), ("cuda-module", true)]);
    // A device the embedded cubin runs on: every image has code, whatever is asked.
    let (code, out, err) = offload_in(
        d,
        &[
            "check",
            "--device",
            "sm_89",
            "--require-embedded",
            "libcu.so",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("    sm_89 (device 0): 1 of 1 have code for it\n"),
        "{out}"
    );
    assert!(!out.contains("Without code"), "{out}");
}

#[test]
fn a_bundle_embedded_as_data_is_checked_apart_from_the_registered_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Registered: gfx10-3-generic and gfx11-generic. Embedded: a bundle for gfx1100 and
    // gfx90a.
    if hip_library(d).is_none() {
        return;
    }
    let check = |device: &str, more: &[&str]| {
        let mut args = vec!["check", "--device", device];
        args.extend_from_slice(more);
        args.push("libhip.so");
        offload_in(d, &args)
    };
    // gfx1101: the generic code loads; the embedded bundle has nothing for it.
    let (code, out, err) = check("gfx1101", &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("libhip.so        1  gfx1101       0        1       0        0\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "  libhip.so: 1 device image, number 2\n    gfx1101 (device 0): 0 of 1 have code for it\n"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "    gfx1101 (device 0): libhip.so bundle 2 of 2: it has code for gfx1100, gfx90a\n"
        ),
        "{out}"
    );
    assert!(!out.contains("What the runtime does"), "{out}");
    let (code, _, err) = check("gfx1101", &["--require-embedded"]);
    assert_eq!(code, 1, "{err}");
    // gfx906: the registered code has nothing for it, so the check fails whatever is asked.
    let (code, out, _) = check("gfx906", &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("What the runtime does"), "{out}");
    // gfx1100 loads both.
    let (code, _, err) = check("gfx1100", &["--require-embedded"]);
    assert_eq!(code, 0, "{err}");
}
