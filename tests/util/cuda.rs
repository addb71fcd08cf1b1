//! NVIDIA's tools as the reference for CUDA fat binaries: `cuobjdump` found on `PATH`, and
//! `libcurand.so` named by `OFFLOAD_LIBCURAND` (both from PyPI wheels; see `.ci/run`), and the
//! listing `offload ls` gives, in cuobjdump's words; the stand-in CUDA runtime that prints what
//! a program registers.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::{file_from_env, offload, samples_dir, succeed, text_output, tool};

/// The samples nvcc made (`samples/cuda/make.sh`): objects (plain, zstd, LZ, `-Xfatbin
/// -compress-all`, arch-specific and family cubins, relocatable device code), a shared
/// library and a program; and an object of clang's new offload driver.
pub fn samples() -> Vec<PathBuf> {
    [
        "gencode.o",
        "gencode-zstd.o",
        "gencode-lz.o",
        "compress-all.o",
        "arch-specific.o",
        "rdc.o",
        "libkernel.so",
        "app",
        "clang-new-driver.o",
    ]
    .iter()
    .map(|name| samples_dir().join("cuda").join(name))
    .collect()
}

/// Owned copies of rows of three strings, for comparing with rows read from JSON.
pub fn rows(rows: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    rows.iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect()
}

/// `cuobjdump`, or `None` (and a visible skip) when it is not on `PATH`.
pub fn cuobjdump() -> Option<PathBuf> {
    tool("cuobjdump")
}

/// NVIDIA's `libcurand.so`, named by `OFFLOAD_LIBCURAND`: `None` (and a visible skip) when the
/// variable names no file, a panic when `OFFLOAD_REQUIRE_REFERENCE=1`.
pub fn libcurand() -> Option<PathBuf> {
    file_from_env(
        "OFFLOAD_LIBCURAND",
        "libcurand.so of pip's nvidia-curand-cu12, as .ci/references sets it",
    )
}

/// What `cuobjdump --list-elf --list-ptx` prints for `path`, line by line.
pub fn cuobjdump_list(tool: &Path, path: &Path) -> Vec<String> {
    let out = succeed(
        Command::new(tool)
            .arg("--list-elf")
            .arg("--list-ptx")
            .arg(path),
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The CUDA entries `offload ls --json` lists in `path`, of the sections cuobjdump reads by
/// default (`.nv_fatbin`, else `__nv_relfatbin`).
pub fn cuda_entries(path: &Path) -> Vec<Value> {
    let out = succeed(offload().args(["ls", "--json"]).arg(path));
    let all: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let cuda: Vec<Value> = all
        .into_iter()
        .filter(|i| i["offload_kind"] == "cuda")
        .collect();
    let executable = cuda.iter().any(|i| i["section"] == ".nv_fatbin");
    cuda.into_iter()
        .filter(|i| !executable || i["section"] == ".nv_fatbin")
        .collect()
}

/// The lines cuobjdump's `--list-elf --list-ptx` print for the entries `entries` of the file
/// `path`, in file order: the file name without its last extension, the entry's number
/// among those of its kind, its SM (a family cubin's without the `f`; PTX under `sm_`),
/// `.cubin` or `.ptx`.
pub fn cuobjdump_names(path: &Path, entries: &[Value]) -> Vec<String> {
    let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
    let (mut cubins, mut ptx) = (0, 0);
    entries
        .iter()
        .map(|e| {
            let (label, n) = if e["image_kind"] == "cubin" {
                cubins += 1;
                ("ELF", cubins)
            } else {
                ptx += 1;
                ("PTX", ptx)
            };
            format!("{label} file {n:>4}: {}", cuobjdump_name(&stem, e, n))
        })
        .collect()
}

/// cuobjdump's name for the entry `e` of a file whose name without its last extension is
/// `stem`, the `n`th of its kind.
pub fn cuobjdump_name(stem: &str, e: &Value, n: usize) -> String {
    let arch = e["arch"].as_str().unwrap();
    let sm = match arch.strip_prefix("compute_") {
        Some(rest) => format!("sm_{rest}"),
        None => arch.trim_end_matches('f').to_string(),
    };
    let ext = if e["image_kind"] == "cubin" {
        "cubin"
    } else {
        "ptx"
    };
    format!("{stem}.{n}.{sm}.{ext}")
}

/// Builds the stand-in CUDA runtime (`tests/support/cuda_runtime.c`) into `dir` under the
/// name the samples were linked with.
pub fn stand_in_runtime(dir: &Path) -> bool {
    let Some(cc) = crate::util::native::c_compiler() else {
        return false;
    };
    let built = Command::new(cc)
        .args(["-shared", "-fPIC", "-Wl,-soname,libcudart_standin.so", "-o"])
        .arg(dir.join("libcudart_standin.so"))
        .arg(crate::util::root().join("tests/support/cuda_runtime.c"))
        .status();
    if !built.is_ok_and(|s| s.success()) {
        crate::util::skip("the C compiler could not build the stand-in CUDA runtime");
        return false;
    }
    true
}

/// What the stand-in runtime prints when `program` runs (with `args`), from `dir`.
pub fn registered(dir: &Path, program: &Path, args: &[&str]) -> String {
    let (code, out, err) = text_output(
        Command::new(program)
            .args(args)
            .env("LD_LIBRARY_PATH", dir)
            .env("LD_PRELOAD", dir.join("libcudart_standin.so")),
    );
    assert_eq!(code, 0, "{}: {err}", program.display());
    out
}
