//! Building and running native programs around the files under test: the C compiler, the
//! stand-in runtimes of tests/support, and HIP objects compiled by clang-19.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{llvm_lib_file, skips, succeed};
use offload::ops::support::tool_path;

#[path = "../support/hip_build.rs"]
mod hip_build;

pub use hip_build::{compile_hip, hip_objects, run, ARCHES, KEPT_GFX90A};

/// The first C compiler driver found: `cc`, `gcc` or `clang-19`; else a skip, as for
/// [`super::tool`].
pub fn c_compiler() -> Option<PathBuf> {
    let found = ["cc", "gcc", "clang-19"]
        .into_iter()
        .find_map(tool_path::find);
    skips::reference(found, "no C compiler (cc, gcc or clang-19) found")
}

/// A file of tests/support: the stand-in runtimes `hip_runtime.c` and `omp_runtime.c`.
pub fn support(name: &str) -> PathBuf {
    super::root().join("tests/support").join(name)
}

/// Links `object` with the stand-in runtime `runtime` into `program` with the C compiler `cc`,
/// runs it, and returns what it prints.
pub fn link_and_run(cc: &Path, runtime: &Path, object: &Path, program: &Path) -> String {
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
/// registers the images, finds no device, and lets the program end. Without libomptarget (in
/// the folder `llvm-config-19 --libdir` names) the check is skipped with a message (a failure
/// under OFFLOAD_REQUIRE_REFERENCE=1).
pub fn runs_with_libomptarget(cc: &Path, dir: &Path, inputs: &[&str]) {
    let Some(libomptarget) = llvm_lib_file("19", "libomptarget.so", "libomp-19-dev") else {
        return;
    };
    let lib = libomptarget.parent().unwrap();
    std::fs::write(dir.join("main.c"), "int main(void) { return 0; }\n").unwrap();
    succeed(
        Command::new(cc)
            .current_dir(dir)
            .args(["-w", "main.c"])
            .args(inputs)
            .arg("-L")
            .arg(lib)
            .arg("-lomptarget")
            .arg(format!("-Wl,-rpath,{}", lib.display()))
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
