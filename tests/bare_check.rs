//! Bare AMDGPU code objects (what `hipModuleLoad` takes as it is): `ls` lists them by their
//! header, `check` and `extract --device` apply the runtime's rule for them (the device's
//! processor with no feature set otherwise, or a generic target covering it), on code objects
//! clang wrote (committed, and built by clang 19 and 22 here: code object v5 and v6, generic
//! targets).

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::util::{self, offload, offload_in, succeed, text_output};

/// `offload check --json DEVICES... FILE` in `dir`: exit code and the parsed report.
fn check_json(dir: &Path, devices: &[&str], file: &str) -> (i32, serde_json::Value) {
    let mut command = offload();
    command
        .current_dir(dir)
        .env("OFFLOAD_KFD_TOPOLOGY", dir.join("no-such-topology"))
        .env_remove("HSA_XNACK")
        .args(["check", "--json"]);
    for device in devices {
        command.args(["--device", device]);
    }
    let (code, stdout, stderr) = text_output(command.arg(file));
    let report = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
    (code, report)
}

/// What each device loads from the first code object of the first file of `report`.
fn module_loads(report: &serde_json::Value) -> Vec<(String, String)> {
    let module = &report["files"][0]["bundles"][0];
    assert_eq!(module["runtime"], "module", "{report}");
    module["loads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["loads"].as_str().unwrap().to_string(),
                l["runtime"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn a_committed_code_object_loads_where_its_features_allow_and_fails_alone_elsewhere() {
    let dev = util::samples_dir().join("dev");
    let devices = ["gfx90a:xnack-", "gfx90a:xnack+", "gfx906"];
    let (code, report) = check_json(&dev, &devices, "kernel-gfx90a_xnack+.hsaco");
    assert_eq!(code, 1, "{report}");
    assert_eq!(
        module_loads(&report),
        pairs(&[
            ("nothing", "fails"),
            ("native", "loads"),
            ("nothing", "fails")
        ])
    );
    assert_eq!(
        report["files"][0]["bundles"][0]["targets"][0],
        "gfx90a:xnack+"
    );
    // Built with xnack unspecified: either setting loads it.
    let (code, report) = check_json(&dev, &devices[..2], "kernel-gfx90a.hsaco");
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        module_loads(&report),
        pairs(&[("native", "loads"), ("native", "loads")])
    );
    // In words: which device fails, with the runtime's error.
    let (code, out, _) = text_output(
        offload()
            .current_dir(&dev)
            .env("OFFLOAD_KFD_TOPOLOGY", dev.join("no-such-topology"))
            .args([
                "check",
                "--device",
                "gfx90a:xnack-",
                "--device",
                "gfx90a:xnack+",
            ])
            .arg("kernel-gfx90a_xnack+.hsaco"),
    );
    assert_eq!(code, 1);
    assert!(
        out.contains(
            "  gfx90a:xnack- (device 0): kernel-gfx90a_xnack+.hsaco code object 1 is for gfx90a:xnack+\n"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "kernel-gfx90a_xnack+.hsaco code object 1 (gfx90a:xnack+): hipModuleLoad on gfx90a:xnack- \
             fails with hipErrorNoBinaryForGpu (the build log says \"The program ISA \
             amdgcn-amd-amdhsa--gfx90a:xnack+ is not compatible with the device ISA \
             amdgcn-amd-amdhsa--gfx90a:xnack-\"); a device it is compatible with loads it.\n"
        ),
        "{out}"
    );
}

#[test]
fn extract_device_writes_the_code_object_a_device_loads_and_says_which_cannot() {
    let dir = tempfile::tempdir().unwrap();
    let sample = util::samples_dir().join("dev/kernel-gfx908_sramecc+_xnack-.hsaco");
    fs::copy(&sample, dir.path().join("k.hsaco")).unwrap();
    let (code, out, err) = offload_in(
        dir.path(),
        &[
            "extract",
            "--device",
            "gfx908:sramecc+:xnack-",
            "--device",
            "gfx908:sramecc-:xnack-",
            "k.hsaco",
            "-o",
            "out",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    let names = util::file_names(&dir.path().join("out"));
    assert_eq!(
        names,
        ["k.hsaco-code-object1-gfx908_sramecc+_xnack--for-gfx908_sramecc+_xnack-.co"]
    );
    assert_eq!(
        fs::read(dir.path().join("out").join(&names[0])).unwrap(),
        fs::read(&sample).unwrap()
    );
    assert!(
        out.contains("(code object 1: gfx908:sramecc+:xnack- loads it natively)"),
        "{out}"
    );
    assert!(
        err.contains("no device image for gfx908:sramecc-:xnack- in 'k.hsaco'"),
        "{err}"
    );
}

#[test]
fn code_objects_clang_writes_are_listed_and_checked_generic_targets_too() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut built = 0;
    for (clang, arch, version) in [
        ("clang-19", "gfx90a:xnack-", "5"),
        ("clang-22", "gfx90a:xnack-", "5"),
        ("clang-22", "gfx942", "6"),
        ("clang-22", "gfx11-generic", "6"),
        ("clang-22", "gfx9-4-generic:xnack+", "6"),
    ] {
        let Some(clang) = util::tool(clang) else {
            continue;
        };
        let name = format!("k{built}.co");
        util::bare_code_object(&clang, arch, version, &d.join(&name));
        built += 1;
        // Listed by its header, whatever its name.
        let (code, out, err) = offload_in(d, &["ls", "--json", &name]);
        assert_eq!(code, 0, "{err}");
        let images: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(images[0]["arch"], arch, "{out}");
        assert_eq!(images[0]["offload_kind"], "code-object", "{out}");
        assert_eq!(images[0]["image_kind"], "o", "{out}");
        let size = fs::metadata(d.join(&name)).unwrap().len();
        assert_eq!(images[0]["size"], size, "{out}");
        let (devices, expected): (&[&str], &[(&str, &str)]) = match arch {
            "gfx11-generic" => (
                &["gfx1100", "gfx1151", "gfx1030"],
                &[
                    ("generic", "loads"),
                    ("generic", "loads"),
                    ("nothing", "fails"),
                ],
            ),
            "gfx9-4-generic:xnack+" => (
                &["gfx942:xnack+", "gfx942:xnack-", "gfx90a:xnack+"],
                &[
                    ("generic", "loads"),
                    ("nothing", "fails"),
                    ("nothing", "fails"),
                ],
            ),
            "gfx942" => (
                &["gfx942:sramecc+:xnack-", "gfx950"],
                &[("native", "loads"), ("nothing", "fails")],
            ),
            _ => (
                &["gfx90a:xnack-", "gfx90a:xnack+"],
                &[("native", "loads"), ("nothing", "fails")],
            ),
        };
        let (_, report) = check_json(d, devices, &name);
        assert_eq!(module_loads(&report), pairs(expected), "{arch}: {report}");
    }
}

/// `bytes` as the C array `xxd -i` writes, named `name`, const (so in `.rodata`).
fn c_array(name: &str, bytes: &[u8]) -> String {
    let body: Vec<String> = bytes.iter().map(|b| format!("0x{b:02x}")).collect();
    format!(
        "const unsigned char {name}[] = {{{}}};\nconst unsigned int {name}_len = {};\n",
        body.join(", "),
        bytes.len()
    )
}

#[test]
fn code_objects_embedded_as_data_are_found_listed_and_loaded_by_their_rule() {
    let Some(cc) = crate::util::native::c_compiler() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dev = util::samples_dir().join("dev");
    let gfx90a = fs::read(dev.join("kernel-gfx90a_xnack+.hsaco")).unwrap();
    let gfx906 = fs::read(dev.join("kernel-gfx906.hsaco")).unwrap();
    let mut source = c_array("gfx90a_co", &gfx90a);
    source.push_str(&c_array("gfx906_co", &gfx906));
    // An ELF file that is no code object, and ELF magic by chance: passed over.
    source.push_str(&c_array(
        "host_elf",
        &fs::read("/proc/self/exe").unwrap()[..64],
    ));
    source.push_str("const char chance[] = \"\\x7f\" \"ELF by chance\";\n");
    source.push_str(
        "int main(void) { return gfx90a_co[0] + gfx906_co[0] + host_elf[0] + chance[0]; }\n",
    );
    fs::write(d.join("app.c"), source).unwrap();
    succeed(
        Command::new(&cc)
            .current_dir(d)
            .args(["-O0", "app.c", "-o", "app"]),
    );
    let (code, out, err) = offload_in(d, &["ls", "--json", "app"]);
    assert_eq!(code, 0, "{err}");
    let images: serde_json::Value = serde_json::from_str(&out).unwrap();
    let listed: Vec<(&str, &str, u64)> = images
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["arch"].as_str().unwrap(),
                i["section"].as_str().unwrap(),
                i["size"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("gfx90a:xnack+", ".rodata", gfx90a.len() as u64),
            ("gfx906", ".rodata", gfx906.len() as u64)
        ]
    );
    // Each is a module of its own: what hipModuleLoadData of it does on each device.
    // The program loads them itself: the exit status follows its registered code (none).
    let (code, report) = check_json(d, &["gfx906", "gfx90a:xnack+"], "app");
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["embedded_have_code"], false, "{report}");
    let modules: Vec<Vec<&str>> = report["files"][0]["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            m["loads"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["loads"].as_str().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(modules, [["nothing", "native"], ["native", "nothing"]]);
    // Extracted byte for byte.
    // A device that cannot load every code object of the file is named, exit 1.
    let (code, _, err) = offload_in(d, &["extract", "--device", "gfx906", "app", "-o", "out"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(
            "gfx906 cannot load code object 1 of 'app' (hipModuleLoad fails with \
             hipErrorNoBinaryForGpu): it is for gfx90a:xnack+"
        ),
        "{err}"
    );
    let names = util::file_names(&d.join("out"));
    assert_eq!(names, ["app-code-object2-gfx906-for-gfx906.co"]);
    assert_eq!(fs::read(d.join("out").join(&names[0])).unwrap(), gfx906);
}
