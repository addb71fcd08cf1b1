//! Building and running native programs around the files under test: the C compiler, the
//! stand-in runtimes of tests/support, and HIP objects compiled by clang-19.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::succeed;

#[path = "../support/hip_build.rs"]
mod hip_build;

pub use hip_build::{compile_hip, hip_objects, run, ARCHES, KEPT_GFX90A};

/// The first C compiler driver found: `cc`, `gcc` or `clang-19`.
pub fn c_compiler() -> Option<&'static str> {
    ["cc", "gcc", "clang-19"]
        .into_iter()
        .find(|c| Command::new(c).arg("--version").output().is_ok())
}

/// A file of tests/support: the stand-in runtimes `hip_runtime.c` and `omp_runtime.c`.
pub fn support(name: &str) -> PathBuf {
    super::root().join("tests/support").join(name)
}

/// Links `object` with the stand-in runtime `runtime` into `program` with the C compiler `cc`,
/// runs it, and returns what it prints.
pub fn link_and_run(cc: &str, runtime: &Path, object: &Path, program: &Path) -> String {
    succeed(
        Command::new(cc)
            .arg(runtime)
            .arg(object)
            .arg("-o")
            .arg(program),
    );
    run(program, None)
}

/// Links `inputs` (files in `dir`, the wrapper among them) with `main` and the real
/// libomptarget of LLVM 19 by `cc`, runs the program and checks it exits normally: the runtime
/// registers the images, finds no device, and lets the program end. Without libomptarget the
/// check is skipped with a message (a failure under OFFLOAD_REQUIRE_REFERENCE=1).
pub fn runs_with_libomptarget(cc: &Path, dir: &Path, inputs: &[&str]) {
    let lib = Path::new("/usr/lib/llvm-19/lib");
    if !lib.join("libomptarget.so").exists() {
        assert!(
            std::env::var("OFFLOAD_REQUIRE_REFERENCE").as_deref() != Ok("1"),
            "libomptarget of libomp-19-dev is required"
        );
        eprintln!("SKIP: libomptarget (libomp-19-dev) not installed");
        return;
    }
    std::fs::write(dir.join("main.c"), "int main(void) { return 0; }\n").unwrap();
    succeed(
        Command::new(cc)
            .current_dir(dir)
            .args(["-w", "main.c"])
            .args(inputs)
            .args(["-L/usr/lib/llvm-19/lib", "-lomptarget"])
            .arg("-Wl,-rpath,/usr/lib/llvm-19/lib")
            .args(["-o", "real"]),
    );
    let run = Command::new(dir.join("real")).output().unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}
