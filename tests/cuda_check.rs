//! `offload check` with CUDA devices: what the driver loads from each fat binary of a program
//! and of the libraries it loads, and what a device without code meets.

use serde_json::Value;

use crate::util::cuda::rows;
use crate::util::{offload, samples_dir, text_output};

#[test]
fn each_cuda_device_is_checked_against_each_fat_binary() {
    let app = samples_dir().join("cuda/app");
    let (code, out, err) = text_output(
        offload()
            .args(["check", "--json", "--device", "sm_90", "--device", "sm_89"])
            .args(["--device", "sm_75", "--device", "sm_120"])
            .arg(&app),
    );
    assert_eq!(code, 1, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    let bundle = &report["files"][0]["bundles"][0];
    assert_eq!(bundle["runtime"], "cuda");
    assert_eq!(bundle["section"], ".nv_fatbin");
    let loads: Vec<(String, String, String)> = bundle["loads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["loads"].as_str().unwrap().to_string(),
                l["entry"].as_str().unwrap_or("-").to_string(),
                l["runtime"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = rows(&[
        ("native", "sm_90", "loads"),
        ("forward", "sm_80", "loads"),
        ("nothing", "-", "fails"),
        ("ptx", "compute_90", "loads"),
    ]);
    assert_eq!(loads, want);
    assert_eq!(report["every_device_has_code"], false);
    let (code, text, _) = text_output(offload().args(["check", "--device", "sm_75"]).arg(&app));
    assert_eq!(code, 1);
    assert!(
        text.contains(
            "launching their kernels on sm_75 fails with cudaErrorNoKernelImageForDevice"
        ),
        "{text}"
    );
    assert!(!text.contains("hipErrorInvalidImage"), "{text}");
    let (code, _, _) = text_output(
        offload()
            .args(["check", "--device", "sm_86"])
            .arg(samples_dir().join("cuda/libkernel.so")),
    );
    assert_eq!(code, 0);
}
