//! What the integration tests share: the binaries under test and how to run them, the
//! repository's folders, the reference tools and what else a test needs from outside the
//! repository, and reporting.
//!
//! Whatever a test needs from outside is found through [`tool`] and its siblings, which skip
//! the test when it is missing (and count the skip: see [`skips`]), or fail it under
//! `OFFLOAD_REQUIRE_REFERENCE=1`.

pub mod cases;
pub mod cuda;
pub mod kpack;
pub mod native;
pub mod packages;
pub mod sid;
pub mod skips;

pub use skips::skip;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use offload::ops::support::tool_path;

/// The `offload` binary under test.
pub const OFFLOAD: &str = env!("CARGO_BIN_EXE_offload");

/// The `offload-extract` binary under test.
pub const OFFLOAD_EXTRACT: &str = env!("CARGO_BIN_EXE_offload-extract");

/// The LLVM release the LLVM-compatible personalities stand in for in tests that name none:
/// 19, which the golden files and most differential checks were made with.
pub const PINNED_LLVM: &str = "19";

/// A command running `offload`, ready for its arguments, its personalities pinned to
/// [`PINNED_LLVM`] (a test about LLVM 22 sets `OFFLOAD_LLVM_VERSION` again).
pub fn offload() -> Command {
    let mut command = Command::new(OFFLOAD);
    // A log asked for in the tests' own environment would add to what they compare.
    command.env_remove("OFFLOAD_LOG");
    command.env("OFFLOAD_LLVM_VERSION", PINNED_LLVM);
    command
}

/// A command running `offload-extract`, ready for its arguments.
pub fn offload_extract() -> Command {
    let mut command = Command::new(OFFLOAD_EXTRACT);
    command.env_remove("OFFLOAD_LOG");
    command
}

/// A command running `offload bundler`, blind to the `OFFLOAD_BUNDLER_*` settings of the
/// environment the tests run in.
pub fn bundler() -> Command {
    let mut command = offload();
    command
        .arg("bundler")
        .env("OFFLOAD_BUNDLER_IGNORE_ENV_VAR", "1");
    command
}

/// Runs `command` to its end: the exit code (-1 when a signal ended it), standard output and
/// standard error, as text.
pub fn text_output(command: &mut Command) -> (i32, String, String) {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `command`, which must succeed; its output, or a panic showing its standard error.
pub fn succeed(command: &mut Command) -> Output {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(
        out.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs `offload args` in `dir`: the exit code, standard output and standard error.
pub fn offload_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    text_output(offload().current_dir(dir).args(args))
}

/// Runs `offload-extract args` in `dir`: the exit code, standard output and standard error.
pub fn offload_extract_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    text_output(offload_extract().current_dir(dir).args(args))
}

/// The package root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The samples folder, `{S}` in the bundler cases.
pub fn samples_dir() -> PathBuf {
    root().join("samples")
}

/// The names of the files in `dir`, sorted; none when `dir` does not exist.
pub fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The external program `name`, found by the library's rule
/// ([`offload::ops::support::tool_path::find`]): on `PATH`, and a name ending in `-N`
/// (`clang-22`, `llvm-objcopy-19`) also as the name without it in LLVM N's `bin` folder. When it
/// is missing the test skips with `SKIP: <name> not found` ([`skips::reference`]), or fails
/// under `OFFLOAD_REQUIRE_REFERENCE=1`.
pub fn tool(name: &str) -> Option<PathBuf> {
    skips::reference(tool_path::find(name), &format!("{name} not found"))
}

/// The first of the programs `names` found, as for [`tool`]; one skip when none is.
pub fn any_tool(names: &[&str]) -> Option<PathBuf> {
    skips::reference(
        names.iter().find_map(|name| tool_path::find(name)),
        &format!("none of {} found", names.join(", ")),
    )
}

/// The program `name`, exactly so named, in LLVM `version`'s `bin` folder
/// ([`tool_path::in_llvm_bin_dir`]), for a test to which the program's own name matters; a skip
/// when it is missing, as for [`tool`].
pub fn llvm_bin_tool(name: &str, version: &str) -> Option<PathBuf> {
    skips::reference(
        tool_path::in_llvm_bin_dir(name, version),
        &format!("{name} of LLVM {version} not found"),
    )
}

/// The file `name` in LLVM `version`'s library folder (`llvm-config-<version> --libdir`), or a
/// skip saying which package brings it (`package`), as for [`tool`].
pub fn llvm_lib_file(version: &str, name: &str, package: &str) -> Option<PathBuf> {
    let file = tool_path::llvm_config(version, "--libdir")
        .map(|dir| dir.join(name))
        .filter(|f| f.is_file());
    skips::reference(
        file,
        &format!("{name} of LLVM {version} ({package}) not found"),
    )
}

/// LLVM 19's `libomptarget.devicertl.a` (libomp-19-dev), or a skip, as for [`tool`].
pub fn devicertl() -> Option<PathBuf> {
    llvm_lib_file("19", "libomptarget.devicertl.a", "libomp-19-dev")
}

/// The first `python3` on `PATH` that imports every module of `modules`, or a skip, as for
/// [`tool`].
pub fn python_with(modules: &[&str]) -> Option<PathBuf> {
    let script = format!("import {}", modules.join(", "));
    let found = tool_path::all_on_path("python3")
        .into_iter()
        .find(|python| {
            Command::new(python)
                .args(["-c", &script])
                .output()
                .is_ok_and(|o| o.status.success())
        });
    skips::reference(
        found,
        &format!("python3 with {} not found", modules.join(", ")),
    )
}

/// The file named by the variable `var`, or a skip (`hint` says how to get one), as for
/// [`tool`].
pub fn file_from_env(var: &str, hint: &str) -> Option<PathBuf> {
    let found = std::env::var_os(var)
        .map(PathBuf::from)
        .filter(|p| p.is_file());
    skips::reference(found, &format!("{var} names no file ({hint})"))
}

/// Prints a line on stderr even when the test harness captures output (it captures only the
/// print macros).
pub fn visible(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Where two byte strings first differ, as text.
pub fn first_difference(expected: &[u8], actual: &[u8]) -> String {
    let common = expected.len().min(actual.len());
    match (0..common).find(|&i| expected[i] != actual[i]) {
        Some(i) => format!(
            "first difference at offset {i:#x}: expected {:#04x}, got {:#04x} (sizes {:#x} expected, {:#x} got)",
            expected[i],
            actual[i],
            expected.len(),
            actual.len()
        ),
        None => format!(
            "equal up to offset {common:#x}, then sizes differ: {:#x} expected, {:#x} got",
            expected.len(),
            actual.len()
        ),
    }
}

/// A writer that only counts the bytes written to it.
pub struct CountingSink(pub u64);

impl std::io::Write for CountingSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The names in `dir` that end in `.tmp`.
pub fn temporaries_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

/// Writes a made-up KFD topology in the folder `dir` (for `OFFLOAD_KFD_TOPOLOGY`): node 0 a
/// CPU, then one node per GPU (`gfx_target_version`, capability).
pub fn kfd_topology(dir: &Path, gpus: &[(u32, u64)]) {
    let nodes = dir.join("nodes");
    let cpu = nodes.join("0");
    fs::create_dir_all(&cpu).unwrap();
    fs::write(
        cpu.join("properties"),
        "cpu_cores_count 16\nsimd_count 0\ngfx_target_version 0\n",
    )
    .unwrap();
    for (k, (version, capability)) in gpus.iter().enumerate() {
        let node = nodes.join((k + 1).to_string());
        fs::create_dir_all(&node).unwrap();
        fs::write(
            node.join("properties"),
            format!(
                "cpu_cores_count 0\nsimd_count 240\ncapability {capability}\n\
                 gfx_target_version {version}\nvendor_id 4098\n"
            ),
        )
        .unwrap();
    }
}

/// Compiles the kernel of `samples/src/kernel.hip` (no HIP headers) with `clang` for `arch`
/// into `out`, as one bare code object of code object version `version`.
pub fn bare_code_object(clang: &Path, arch: &str, version: &str, out: &Path) {
    let kernel = samples_dir().join("src/kernel.hip");
    succeed(
        Command::new(clang)
            .args([
                "-x",
                "hip",
                "-nogpulib",
                "-nogpuinc",
                "-O2",
                "--cuda-device-only",
            ])
            .args(["--no-gpu-bundle-output", "-c"])
            .arg(format!("--offload-arch={arch}"))
            .arg(format!("-mcode-object-version={version}"))
            .arg(&kernel)
            .arg("-o")
            .arg(out),
    );
}

/// What `offload check --json` printed (`stdout`) says of its first file: per unit, its
/// runtime and, per device, what it loads and the entry it loads (`-` for none).
pub fn check_units(stdout: &str) -> Vec<(String, Vec<(String, String)>)> {
    let report: serde_json::Value =
        serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    report["files"][0]["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let loads = b["loads"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| {
                    (
                        l["loads"].as_str().unwrap().to_string(),
                        l["entry"].as_str().unwrap_or("-").to_string(),
                    )
                })
                .collect();
            (b["runtime"].as_str().unwrap().to_string(), loads)
        })
        .collect()
}

/// `len` bytes that do not repeat, made from `seed`.
pub fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut bytes = Vec::with_capacity(len + 8);
    while bytes.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        bytes.extend_from_slice(&state.to_le_bytes());
    }
    bytes.truncate(len);
    bytes
}
