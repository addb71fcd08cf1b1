//! `check` on offload binaries (`.llvm.offloading`): OpenMP images a program registers are
//! loaded by libomptarget's rule (the first compatible image; bitcode compiled for any AMDGPU
//! device), and those of objects and archives (link inputs) by their processor; a device
//! without an image is named with what the runtime then does. Samples made by clang 19.

use std::path::Path;

use crate::util::{self, offload, text_output};

/// `offload check [--json] --device D... FILE` in the samples folder: exit code, output.
fn check(json: bool, devices: &[&str], file: &str) -> (i32, String) {
    let samples = util::samples_dir();
    let mut command = offload();
    command
        .current_dir(&samples)
        .env("OFFLOAD_KFD_TOPOLOGY", Path::new("/nonexistent"))
        .env("LD_LIBRARY_PATH", "")
        .arg("check");
    if json {
        command.arg("--json");
    }
    for device in devices {
        command.args(["--device", device]);
    }
    let (code, out, err) = text_output(command.arg(file));
    assert!(code == 0 || code == 1, "{out}{err}");
    (code, out)
}

fn owned(runtime: &str, loads: &[(&str, &str)]) -> (String, Vec<(String, String)>) {
    (
        runtime.to_string(),
        loads
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
    )
}

#[test]
fn a_program_s_openmp_images_load_by_libomptarget_s_rule() {
    let devices = [
        "gfx90a:sramecc+:xnack-",
        "gfx906:sramecc-:xnack-",
        "gfx1100",
    ];
    let (code, out) = check(true, &devices, "linked/omp-app");
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        util::check_units(&out),
        [owned(
            "openmp",
            &[("native", "gfx90a"), ("native", "gfx906"), ("nothing", "-")]
        )]
    );
    let (_, text) = check(false, &devices, "linked/omp-app");
    assert!(
        text.contains(
            "  linked/omp-app bundle 1 (OpenMP images for gfx90a, gfx906): libomptarget loads no \
             image on gfx1100; with no device holding an image, target regions run on the host, \
             and under OMP_TARGET_OFFLOAD=MANDATORY the program stops with \"omptarget error: No \
             images found compatible with the installed hardware.\"; a region sent to such a \
             device fails (\"No image loaded for device id N\").\n"
        ),
        "{text}"
    );
    // Bitcode registered as it is: the first image is compiled for any AMDGPU device.
    let (code, out) = check(true, &devices, "linked/omp-jit-app");
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        util::check_units(&out),
        [owned(
            "openmp",
            &[("jit", "gfx90a"), ("jit", "gfx90a"), ("jit", "gfx90a")]
        )]
    );
}

#[test]
fn objects_and_archives_offload_images_load_by_their_processor() {
    // Bitcode in an object is linked for its own processor: no compiling when loaded.
    let (code, out) = check(true, &["gfx90a", "gfx906"], "openmp/omp.o");
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        util::check_units(&out),
        [owned(
            "openmp",
            &[("native", "gfx90a"), ("native", "gfx906")]
        )]
    );
    // An archive is checked alone, one unit per member's section.
    let (code, out) = check(true, &["gfx90a", "gfx1030"], "openmp/libomp.a");
    assert_eq!(code, 1, "{out}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    let members: Vec<&str> = report["files"][0]["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["member"].as_str().unwrap())
        .collect();
    assert_eq!(members.len(), 2, "{out}");
    for (_, loads) in util::check_units(&out) {
        assert_eq!(loads[0].0, "native");
        assert_eq!(loads[1], ("nothing".to_string(), "-".to_string()));
    }
    // Still refused: a file that is no program, archive or container.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "text\n").unwrap();
    let (code, _, err) = text_output(offload().current_dir(dir.path()).args([
        "check",
        "--device",
        "gfx90a",
        "notes.txt",
    ]));
    assert_eq!(
        (code, err.as_str()),
        (2, "offload check: error: 'notes.txt': not an ELF file\n")
    );
}

/// The bytes `ls --json` places at `offset`/`size` of `file` for its image for `arch`.
fn listed_image(file: &Path, arch: &str) -> Vec<u8> {
    let (_, out, _) = text_output(offload().arg("ls").arg("--json").arg(file));
    let images: serde_json::Value = serde_json::from_str(&out).unwrap();
    let image = images
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["arch"] == arch)
        .unwrap();
    let (offset, size) = (
        image["offset"].as_u64().unwrap() as usize,
        image["size"].as_u64().unwrap() as usize,
    );
    std::fs::read(file).unwrap()[offset..offset + size].to_vec()
}

#[test]
fn extract_device_writes_the_openmp_image_each_device_loads() {
    let dir = tempfile::tempdir().unwrap();
    let linked = util::samples_dir().join("linked");
    for (file, device, written, arch, how) in [
        (
            "omp-app",
            "gfx906:sramecc-:xnack-",
            "omp-app-offload1-gfx906-for-gfx906_sramecc-_xnack-.co",
            "gfx906",
            "loads it natively",
        ),
        (
            "omp-jit-app",
            "gfx906:sramecc-:xnack-",
            "omp-jit-app-offload1-gfx90a-for-gfx906_sramecc-_xnack-.bc",
            "gfx90a",
            "loads it as bitcode, compiled when loaded",
        ),
    ] {
        let out_dir = dir.path().join(file);
        let (code, out, err) = text_output(
            offload()
                .args(["extract", "--device", device, "--device", "gfx1100"])
                .arg(linked.join(file))
                .arg("-o")
                .arg(&out_dir),
        );
        let expected_code = if file == "omp-app" { 1 } else { 0 };
        assert_eq!(code, expected_code, "{out}{err}");
        // gfx1100 has no image in the program; bitcode it compiles.
        let mut expected = vec![written.to_string()];
        if file == "omp-jit-app" {
            expected.insert(0, "omp-jit-app-offload1-gfx90a-for-gfx1100.bc".into());
        }
        assert_eq!(util::file_names(&out_dir), expected, "{out}");
        assert_eq!(
            std::fs::read(out_dir.join(written)).unwrap(),
            listed_image(&linked.join(file), arch)
        );
        assert!(
            out.contains(&format!("(offload binaries 1: {device} {how})")),
            "{out}"
        );
    }
}
