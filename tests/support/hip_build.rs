//! Building HIP test programs with clang-19: shared by the tests that rewrite programs and the
//! linker plugin's tests. Included with `#[path]`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The targets the test objects are compiled for.
pub const ARCHES: [&str; 6] = ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx1030", "gfx1100"];

/// What the stand-in runtime (tests/support/hip_runtime.c) prints for a program built from
/// [`hip_objects`] and stripped to gfx90a.
pub const KEPT_GFX90A: &str = "bundle, 2 entries\n  host-x86_64-unknown-linux-- 0\n  hipv4-amdgcn-amd-amdhsa--gfx90a 4232 elf\ncompressed bundle, version 2, zstd\n";

/// The repository's root.
pub fn repository() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    if here.join("linker-plugin").exists() {
        here.to_path_buf()
    } else {
        here.parent().expect("the workspace root").to_path_buf()
    }
}

/// Compiles the two sample kernels of samples/src for [`ARCHES`], position-independent, the
/// second with `--offload-compress`, into `dir`.
pub fn hip_objects(clang: &Path, dir: &Path) -> Vec<PathBuf> {
    vec![
        compile_hip(clang, dir, "kernel.hip", &ARCHES, &[]),
        compile_hip(clang, dir, "vadd.hip", &ARCHES, &["--offload-compress"]),
    ]
}

/// Compiles `source` of samples/src with `clang` for `arches` (and the `extra` options),
/// position-independent and without the HIP headers and libraries, into `dir/SOURCE.o`.
pub fn compile_hip(
    clang: &Path,
    dir: &Path,
    source: &str,
    arches: &[&str],
    extra: &[&str],
) -> PathBuf {
    let object = dir.join(format!("{source}.o"));
    let mut command = Command::new(clang);
    command.args(["-x", "hip", "-nogpulib", "-nogpuinc", "-O2", "-fPIC", "-c"]);
    command.args(extra);
    for arch in arches {
        command.arg(format!("--offload-arch={arch}"));
    }
    let out = command
        .arg(repository().join("samples/src").join(source))
        .arg("-o")
        .arg(&object)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    object
}

/// Runs `program` (with `LD_LIBRARY_PATH` set to `library_dir` if given), which must exit 0,
/// and returns what it printed.
pub fn run(program: &Path, library_dir: Option<&Path>) -> String {
    let mut command = Command::new(program);
    if let Some(dir) = library_dir {
        command.env("LD_LIBRARY_PATH", dir);
    }
    let out = command.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}: {}{}",
        program.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
