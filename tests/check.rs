//! `offload check` on a program of our own: two shared libraries built from samples/src (one
//! for gfx90a only, found through the program's `$ORIGIN` RPATH, one for gfx11-generic, found
//! through `LD_LIBRARY_PATH`), a library without device code found through the RPATH the
//! program passes down, and a library found nowhere; checked against made-up KFD topologies
//! and against `ldd`'s resolution of the same program.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util;
use crate::util::native::{c_compiler, compile_hip};
use crate::util::{offload, succeed, text_output};

/// The program and its folder: `DIR/prog` (RPATH `$ORIGIN/lib`) needs `libgfx90a.so`
/// (in `DIR/lib`, needing `libhelper.so` beside it), `libgeneric.so` (in `DIR/llp`) and
/// `libmissing.so` (removed after linking).
struct Program {
    dir: tempfile::TempDir,
}

impl Program {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `offload check ARGS` in the program's folder with `LD_LIBRARY_PATH=DIR/llp` and the
    /// topology `topology` (a folder name in DIR, or none).
    fn check(&self, topology: Option<&str>, args: &[&str]) -> (i32, String, String) {
        let mut command = offload();
        command
            .current_dir(self.dir.path())
            .env("LD_LIBRARY_PATH", self.path("llp"))
            .env_remove("HSA_XNACK")
            .env_remove("HSA_ENABLE_SRAMECC")
            .arg("check")
            .args(args);
        match topology {
            Some(t) => command.env("OFFLOAD_KFD_TOPOLOGY", self.path(t)),
            None => command.env("OFFLOAD_KFD_TOPOLOGY", self.path("no-such-topology")),
        };
        text_output(&mut command)
    }

    /// `text` with the folder written `{D}`, and the paths ldd gives libc and ld.so written
    /// `{libc}` and `{ld.so}`.
    fn generalize(&self, text: &str) -> String {
        let ldd = self.ldd();
        let mut text = text.replace(&self.path("").to_string_lossy().to_string(), "{D}/");
        for (name, key) in [("libc.so.6", "{libc}"), ("ld-linux-x86-64.so.2", "{ld.so}")] {
            if let Some(path) = ldd.get(name) {
                text = text.replace(path.as_str(), key);
            }
        }
        text
    }

    /// What `ldd` says each name resolves to (the interpreter under its file name).
    fn ldd(&self) -> BTreeMap<String, String> {
        let out = succeed(
            Command::new("ldd")
                .arg(self.path("prog"))
                .env("LD_LIBRARY_PATH", self.path("llp")),
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|line| {
                let line = line.trim();
                let (name, rest) = match line.split_once(" => ") {
                    Some((name, rest)) => (name.to_string(), rest),
                    None => {
                        let path = line.split(' ').next()?;
                        let name = Path::new(path).file_name()?.to_string_lossy().into_owned();
                        (name, line)
                    }
                };
                let path = rest.split(" (").next()?.trim().to_string();
                Some((name, path))
            })
            .collect()
    }

    /// Writes a made-up KFD topology `DIR/NAME` (see [`crate::util::kfd_topology`]).
    fn topology(&self, name: &str, gpus: &[(u32, u64)]) {
        crate::util::kfd_topology(&self.path(name), gpus);
    }
}

/// Builds the program with clang-22 (else clang-19) and the C compiler; `None` (after saying
/// so) when one is missing.
fn program() -> Option<Program> {
    let clang = util::any_tool(&["clang-22", "clang-19"])?;
    let cc = c_compiler()?;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for sub in ["lib", "llp", "stub", "obj"] {
        fs::create_dir_all(d.join(sub)).unwrap();
    }
    let gfx90a = compile_hip(&clang, &d.join("obj"), "kernel.hip", &["gfx90a"], &[]);
    let generic = compile_hip(&clang, &d.join("obj"), "vadd.hip", &["gfx11-generic"], &[]);
    fs::write(d.join("obj/helper.c"), "int helper(void) { return 1; }\n").unwrap();
    fs::write(d.join("obj/main.c"), "int main(void) { return 0; }\n").unwrap();
    let helper = d.join("obj/helper.c");
    let shared = |out: &str, inputs: &[&Path], extra: &[&str]| {
        succeed(
            Command::new(&cc)
                .args(["-shared", "-fPIC"])
                .args(inputs)
                .arg("-o")
                .arg(d.join(out))
                .args(extra)
                .current_dir(d),
        );
    };
    shared("lib/libhelper.so", &[&helper], &[]);
    shared("stub/libmissing.so", &[&helper], &[]);
    shared(
        "lib/libgfx90a.so",
        &[&gfx90a],
        &["-Llib", "-Wl,--no-as-needed", "-lhelper"],
    );
    shared("llp/libgeneric.so", &[&generic], &[]);
    succeed(
        Command::new(&cc)
            .arg(d.join("obj/main.c"))
            .args([
                "-o",
                "prog",
                "-Llib",
                "-Lllp",
                "-Lstub",
                "-Wl,--no-as-needed",
            ])
            .args([
                "-lgfx90a",
                "-lgeneric",
                "-lmissing",
                "-Wl,--disable-new-dtags",
            ])
            .args(["-Wl,-rpath,$ORIGIN/lib", "-Wl,--allow-shlib-undefined"])
            .current_dir(d),
    );
    fs::remove_dir_all(d.join("stub")).unwrap();
    Some(Program { dir })
}

/// The table's files, the same for every device list.
const NOT_FOUND: &str = "
Not found (not checked; ld.so would refuse to load what needs them):
  libmissing.so (needed by prog)
";

const RUNTIME_NOTE: &str = "  The program sees it when it launches a kernel of such a bundle on a failing device: hipErrorInvalidImage, hipErrorNoBinaryForGpu or \"invalid device function\", by ROCm release. Hiding a device without code (HIP_VISIBLE_DEVICES) lets the others load.\n";

#[test]
fn one_gpu_without_native_code_loads_the_generic_library_and_not_the_gfx90a_one() {
    let Some(p) = program() else { return };
    p.topology("one", &[(110001, 0)]);
    let (status, out, err) = p.check(Some("one"), &["prog"]);
    assert_eq!((status, err.as_str()), (1, ""));
    let expected = format!(
        "Devices, in the runtime's order:
  0 gfx1101 (KFD node 1)

FILE                  BUNDLES  DEVICE   NATIVE  GENERIC  SPIR-V  NOTHING
prog                        0
{{D}}/lib/libgfx90a.so        1  gfx1101       0        0       0        1
{{D}}/llp/libgeneric.so       1  gfx1101       0        1       0        0
{{libc}}                    0
{{D}}/lib/libhelper.so        0
{{ld.so}}                   0
{NOT_FOUND}
Without code:
  gfx1101 (device 0): {{D}}/lib/libgfx90a.so bundle 1 of 1: it has code for gfx90a

What the runtime does:
  {{D}}/lib/libgfx90a.so bundle 1: the runtime logs \"No compatible code objects found for: gfx1101\" and the load fails with hipErrorInvalidImage for every device: it is the first device.
{RUNTIME_NOTE}"
    );
    assert_eq!(squeeze(&p.generalize(&out)), squeeze(&expected));
}

/// `text` with runs of spaces made one and lines trimmed: column widths follow the real
/// paths, which the expected texts write shorter.
pub(crate) fn squeeze(text: &str) -> String {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn two_gpus_each_lack_code_in_one_library_and_the_first_one_fails_both() {
    let Some(p) = program() else { return };
    // MI210 with ECC on, then an RX 7700-class card.
    p.topology("two", &[(90010, 0x0400_0000), (110001, 0)]);
    let (status, out, err) = p.check(Some("two"), &["prog"]);
    assert_eq!((status, err.as_str()), (1, ""));
    let expected = format!(
        "Devices, in the runtime's order:
  0 gfx90a:sramecc+:xnack- (KFD node 1)
  1 gfx1101 (KFD node 2)

FILE BUNDLES DEVICE NATIVE GENERIC SPIR-V NOTHING
prog 0
{{D}}/lib/libgfx90a.so 1 gfx90a:sramecc+:xnack- 1 0 0 0
gfx1101 0 0 0 1
{{D}}/llp/libgeneric.so 1 gfx90a:sramecc+:xnack- 0 0 0 1
gfx1101 0 1 0 0
{{libc}} 0
{{D}}/lib/libhelper.so 0
{{ld.so}} 0
{NOT_FOUND}
Without code:
  gfx90a:sramecc+:xnack- (device 0): {{D}}/llp/libgeneric.so bundle 1 of 1: it has code for gfx11-generic
  gfx1101 (device 1): {{D}}/lib/libgfx90a.so bundle 1 of 1: it has code for gfx90a

What the runtime does:
  {{D}}/lib/libgfx90a.so bundle 1: the runtime logs \"No compatible code objects found for: gfx1101\" and the load fails with hipErrorInvalidImage for gfx1101 only; the devices before it load the code.
  {{D}}/llp/libgeneric.so bundle 1: the runtime logs \"No compatible code objects found for: gfx90a:sramecc+:xnack-\" and the load fails with hipErrorInvalidImage for every device: it is the first device.
{RUNTIME_NOTE}"
    );
    assert_eq!(squeeze(&p.generalize(&out)), squeeze(&expected));
    // The same devices named on the command line, in the runtime's spelling, give the same
    // table without the node numbers.
    let (status, named, _) = p.check(
        None,
        &[
            "prog",
            "--device",
            "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-",
            "--device",
            "gfx1101",
        ],
    );
    assert_eq!(status, 1);
    assert_eq!(
        named,
        out.replace(" (KFD node 1)", "")
            .replace(" (KFD node 2)", "")
    );
}

#[test]
fn an_igpu_first_without_code_fails_the_dgpu_that_has_code_in_json() {
    let Some(p) = program() else { return };
    // A Ryzen iGPU (gfx1036) listed before an RX 7700 (gfx1101), as in the field report.
    p.topology("igpu", &[(100306, 0), (110001, 0)]);
    let (status, out, err) = p.check(Some("igpu"), &["llp/libgeneric.so", "--json"]);
    assert_eq!((status, err.as_str()), (1, ""));
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let expected = serde_json::json!({
        "devices": [
            {"index": 0, "isa": "amdgcn-amd-amdhsa--gfx1036", "target_id": "gfx1036", "node": 1},
            {"index": 1, "isa": "amdgcn-amd-amdhsa--gfx1101", "target_id": "gfx1101", "node": 2}
        ],
        "files": [{
            "path": "llp/libgeneric.so",
            "needed_as": null,
            "needed_by": null,
            "found_via": "argument",
            "bundles": [{
                "index": 1,
                "runtime": "hip",
                "section": ".hip_fatbin",
                "member": null,
                "compressed": false,
                "targets": ["gfx11-generic"],
                "loads": [
                    {"device": 0, "loads": "nothing", "entry": null, "runtime": "fails"},
                    {"device": 1, "loads": "generic",
                     "entry": "hipv4-amdgcn-amd-amdhsa--gfx11-generic", "runtime": "fails"}
                ],
                "first_without_code": 0,
                "embedded": false
            }],
            "counts": [
                {"device": 0, "native": 0, "generic": 0, "spirv": 0, "nothing": 1, "fails": 1},
                {"device": 1, "native": 0, "generic": 1, "spirv": 0, "nothing": 0, "fails": 1}
            ]
        }, {
            "path": json["files"][1]["path"],
            "needed_as": "libc.so.6",
            "needed_by": "llp/libgeneric.so",
            "found_via": json["files"][1]["found_via"],
            "bundles": [],
            "counts": [
                {"device": 0, "native": 0, "generic": 0, "spirv": 0, "nothing": 0, "fails": 0},
                {"device": 1, "native": 0, "generic": 0, "spirv": 0, "nothing": 0, "fails": 0}
            ]
        }, {
            "path": json["files"][2]["path"],
            "needed_as": "ld-linux-x86-64.so.2",
            "needed_by": json["files"][2]["needed_by"],
            "found_via": json["files"][2]["found_via"],
            "bundles": [],
            "counts": [
                {"device": 0, "native": 0, "generic": 0, "spirv": 0, "nothing": 0, "fails": 0},
                {"device": 1, "native": 0, "generic": 0, "spirv": 0, "nothing": 0, "fails": 0}
            ]
        }],
        "not_found": [],
        "every_device_has_code": false,
        "embedded_have_code": true
    });
    assert_eq!(json, expected, "{out}");
    // libc comes from the cache (or a default folder), where ldd finds it.
    let libc = json["files"][1]["path"].as_str().unwrap();
    assert_eq!(
        fs::canonicalize(libc).unwrap(),
        fs::canonicalize(&p.ldd()["libc.so.6"]).unwrap()
    );
    // Hiding the iGPU leaves a machine where every device has code.
    let (status, out, _) = p.check(None, &["llp/libgeneric.so", "--device", "gfx1101"]);
    assert_eq!(status, 0, "{out}");
    assert!(!out.contains("Without code"), "{out}");
}

#[test]
fn every_file_resolves_where_ldd_finds_it() {
    let Some(p) = p_or_skip() else { return };
    let (status, out, _) = p.check(None, &["prog", "--device", "gfx90a", "--json"]);
    assert_eq!(status, 1);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ours: BTreeMap<String, (PathBuf, String)> = json["files"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(|f| {
            let path = PathBuf::from(f["path"].as_str().unwrap());
            let name = f["needed_as"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| path.file_name().unwrap().to_string_lossy().into_owned());
            (
                name,
                (
                    fs::canonicalize(&path).unwrap(),
                    f["found_via"].as_str().unwrap().into(),
                ),
            )
        })
        .collect();
    let ldd: BTreeMap<String, PathBuf> = p
        .ldd()
        .into_iter()
        .filter(|(name, _)| !name.starts_with("linux-vdso") && name != "libmissing.so")
        .map(|(name, path)| (name, fs::canonicalize(path).unwrap()))
        .collect();
    let ours_paths: BTreeMap<String, PathBuf> = ours
        .iter()
        .map(|(n, (p, _))| (n.clone(), p.clone()))
        .collect();
    assert_eq!(ours_paths, ldd);
    assert_eq!(ours["libgfx90a.so"].1, "rpath");
    assert_eq!(
        ours["libhelper.so"].1, "rpath",
        "the program's RPATH, passed down"
    );
    assert_eq!(ours["libgeneric.so"].1, "LD_LIBRARY_PATH");
    assert_eq!(ours["ld-linux-x86-64.so.2"].1, "interpreter");
    assert_eq!(
        json["not_found"],
        serde_json::json!([{"name": "libmissing.so", "needed_by": "prog"}])
    );
}

fn p_or_skip() -> Option<Program> {
    util::tool("ldd")?;
    program()
}

#[test]
fn files_that_cannot_be_checked_are_named_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("notes.txt"), "not a program\n").unwrap();
    let run = |args: &[&str]| {
        text_output(
            offload()
                .current_dir(dir.path())
                .env("OFFLOAD_KFD_TOPOLOGY", dir.path().join("none"))
                .arg("check")
                .args(args),
        )
    };
    assert_eq!(
        run(&["notes.txt", "--device", "gfx90a"]),
        (
            2,
            // Nothing could be checked: no report, whose empty table a script would read as
            // "nothing wrong".
            String::new(),
            "offload check: error: 'notes.txt': not an ELF file\n".into()
        )
    );
    let (status, _, err) = run(&["missing.so", "--device", "gfx90a"]);
    assert_eq!(status, 2);
    assert!(
        err.starts_with("offload check: error: ") && err.contains("missing.so"),
        "{err}"
    );
    assert_eq!(
        run(&["notes.txt", "--device", "gfx90a:xnack"]),
        (
            2,
            String::new(),
            "offload check: error: --device: invalid target ID 'gfx90a:xnack': expected PROCESSOR(:FEATURE+|:FEATURE-)*, each feature once, as in gfx90a:xnack+\n".into()
        )
    );
    assert_eq!(
        run(&["notes.txt"]),
        (
            2,
            String::new(),
            format!(
                "offload check: error: no GPU found: the kernel driver lists none under '{}'; \
                 name the devices with --device (e.g. --device gfx90a:sramecc+:xnack- --device gfx1101)\n",
                dir.path().join("none").display()
            )
        )
    );
}

#[test]
fn the_readme_command_says_which_gpu_finds_no_code_in_the_committed_program() {
    let (code, out, err) = text_output(
        offload()
            .current_dir(crate::util::root())
            .args(["check", "samples/targets/mixed-app"])
            .args(["--device", "gfx1101", "--device", "gfx90a:sramecc+:xnack+"]),
    );
    assert_eq!(code, 1, "{err}");
    let out = squeeze(&out);
    for line in [
        "samples/targets/mixed-app 2 gfx1101 0 2 0 0",
        "gfx90a:sramecc+:xnack+ 1 0 0 1",
        "gfx90a:sramecc+:xnack+ (device 1): samples/targets/mixed-app bundle 2 of 2: it has code for gfx11-generic, gfx90a:xnack-",
    ] {
        assert!(out.lines().any(|l| l.trim() == line), "{line:?} not in:\n{out}");
    }
}

#[test]
fn the_drivers_retry_setting_and_the_visible_devices_choose_this_machines_gpus() {
    let Some(p) = program() else { return };
    // A sysfs of our own: the topology where the driver lists it, and its noretry parameter.
    let sys = p.path("sys");
    let topology = sys.join("class/kfd/kfd/topology");
    crate::util::kfd_topology(&topology, &[(90010, 0x0400_0000), (110001, 0)]);
    let parameters = sys.join("module/amdgpu/parameters");
    fs::create_dir_all(&parameters).unwrap();
    let devices = |noretry: &str, env: &[(&str, &str)]| {
        fs::write(parameters.join("noretry"), format!("{noretry}\n")).unwrap();
        let mut command = offload();
        command
            .current_dir(p.path(""))
            .env("LD_LIBRARY_PATH", p.path("llp"))
            .env("OFFLOAD_KFD_TOPOLOGY", &topology)
            .args(["check", "prog"]);
        for name in [
            "HSA_XNACK",
            "HSA_ENABLE_SRAMECC",
            "ROCR_VISIBLE_DEVICES",
            "HIP_VISIBLE_DEVICES",
            "CUDA_VISIBLE_DEVICES",
        ] {
            command.env_remove(name);
        }
        command.envs(env.iter().copied());
        let (_, out, err) = text_output(&mut command);
        let listed: Vec<String> = out
            .lines()
            .skip(1)
            .take_while(|l| !l.is_empty())
            .map(|l| l.trim().to_string())
            .collect();
        (listed, err)
    };
    let both = |xnack: &str| {
        vec![
            format!("0 gfx90a:sramecc+:xnack{xnack} (KFD node 1)"),
            "1 gfx1101 (KFD node 2)".to_string(),
        ]
    };
    // Retry on in the driver: the MI210 has xnack on, unless HSA_XNACK says otherwise.
    assert_eq!(devices("0", &[]).0, both("+"));
    assert_eq!(devices("0", &[("HSA_XNACK", "0")]).0, both("-"));
    // Automatic and off: the driver does not retry on gfx90a.
    assert_eq!(devices("-1", &[]).0, both("-"));
    assert_eq!(devices("1", &[("HSA_XNACK", "1")]).0, both("+"));
    // Which GPUs the process sees: ROCr's list first, then HIP's of what is left.
    let second = vec!["0 gfx1101 (KFD node 2)".to_string()];
    assert_eq!(devices("1", &[("HIP_VISIBLE_DEVICES", "1")]).0, second);
    assert_eq!(devices("1", &[("CUDA_VISIBLE_DEVICES", "1")]).0, second);
    assert_eq!(
        devices(
            "1",
            &[
                ("ROCR_VISIBLE_DEVICES", "1,0"),
                ("HIP_VISIBLE_DEVICES", "0")
            ]
        )
        .0,
        second
    );
    let (listed, err) = devices("1", &[("HIP_VISIBLE_DEVICES", "5")]);
    assert!(listed.is_empty());
    assert!(
        err.contains("no GPU visible") && err.contains("HIP_VISIBLE_DEVICES"),
        "{err}"
    );
}
