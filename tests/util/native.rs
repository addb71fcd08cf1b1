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
