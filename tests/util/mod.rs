//! What the integration tests share: the binaries under test and how to run them, the
//! repository's folders, the LLVM reference tools, and reporting.
//!
//! `OFFLOAD_REQUIRE_REFERENCE=1` makes a missing reference tool a failure instead of a skip.

pub mod cases;
pub mod cuda;
pub mod kpack;
pub mod native;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

/// Finds an LLVM tool on `PATH`. When it is missing, prints `SKIP: <name> not found` to stderr
/// and returns `None`, unless `OFFLOAD_REQUIRE_REFERENCE=1`: then it panics.
pub fn reference_tool(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|candidate| is_executable(candidate))
    });
    if found.is_none() {
        if std::env::var("OFFLOAD_REQUIRE_REFERENCE").as_deref() == Ok("1") {
            panic!(
                "{name} not found on PATH, and OFFLOAD_REQUIRE_REFERENCE=1 requires it \
                 (Debian: apt-get install clang-19 clang-tools-19 llvm-19 clang-22 clang-tools-22 llvm-22)"
            );
        }
        visible(&format!("SKIP: {name} not found"));
    }
    found
}

/// Prints a line on stderr even when the test harness captures output (it captures only the
/// print macros).
pub fn visible(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
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
