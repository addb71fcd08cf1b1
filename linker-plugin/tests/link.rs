//! The plugin in real links: ld.bfd and gold, programs and shared libraries, with and without
//! options; failed links; and, for lld and mold, which load no plugins, the in-place strip
//! `offload strip --in-place` runs afterwards (the same job, called as the plugin calls it). Programs run with the stand-in HIP runtime of tests/support/hip_runtime.c, which
//! prints the bundles it is given.

#[path = "../../tests/support/hip_build.rs"]
mod hip_build;

/// How a test skips, as the main tests do (only part of it is needed here).
#[path = "../../tests/util/skips.rs"]
#[allow(dead_code)]
mod skips;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hip_build::{compile_hip, hip_objects, KEPT_GFX90A};
use offload::ops::support::tool_path;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The plugin library: the cdylib of the same build as the library this test links (cargo
/// builds both crate types of the plugin in one step, into the test's own `deps/` folder), so
/// it is never stale and no second build, in other features, is needed.
fn plugin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let path = exe.with_file_name("liboffload_linker_plugin.so");
    assert!(
        path.exists(),
        "{} not built beside the test (run cargo test)",
        path.display()
    );
    path
}

/// The external program `name`, by the rule of the library's `tool_path`, or a visible skip
/// (a failure when the reference tools are required), as the main tests' `util::tool`.
fn tool(name: &str) -> Option<PathBuf> {
    skips::reference(tool_path::find(name), &format!("{name} not found"))
}

/// clang-19, the compiler driver of the links, or a skip.
fn tools() -> Option<PathBuf> {
    tool("clang-19")
}

fn link(clang: &Path, linker: &str, extra: &[String], inputs: &[PathBuf], out: &Path) -> Output {
    Command::new(clang)
        .arg(format!("-fuse-ld={linker}"))
        .args(extra)
        .args(inputs)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap()
}

fn plugin_args(options: &[&str]) -> Vec<String> {
    let mut args = vec![format!("-Wl,-plugin={}", plugin().display())];
    args.extend(options.iter().map(|o| format!("-Wl,-plugin-opt={o}")));
    args
}

#[test]
fn bfd_and_gold_link_programs_already_stripped() {
    let Some(clang) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = vec![root().join("tests/support/hip_runtime.c")];
    inputs.extend(hip_objects(&clang, dir.path()));
    for linker in ["bfd", "gold"] {
        let plain = dir.path().join(format!("plain-{linker}"));
        let out = link(&clang, linker, &[], &inputs, &plain);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // No options: the very bytes of a link without the plugin.
        let untouched = dir.path().join(format!("untouched-{linker}"));
        let out = link(&clang, linker, &plugin_args(&[]), &inputs, &untouched);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            std::fs::read(&plain).unwrap(),
            std::fs::read(&untouched).unwrap()
        );

        let stripped = dir.path().join(format!("stripped-{linker}"));
        let out = link(
            &clang,
            linker,
            &plugin_args(&["keep=gfx90a", "list"]),
            &inputs,
            &stripped,
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(
            said.contains("offload linker plugin: 1  bundle  gfx90a"),
            "{said}"
        );
        assert_eq!(hip_build::run(&stripped, None), KEPT_GFX90A, "{linker}");
        let (before, after) = (
            std::fs::metadata(&plain).unwrap().len(),
            std::fs::metadata(&stripped).unwrap().len(),
        );
        assert!(after + 16384 <= before, "{linker}: {before} -> {after}");

        let both = dir.path().join(format!("compressed-{linker}"));
        let out = link(
            &clang,
            linker,
            &plugin_args(&["keep=gfx90a", "compress", "compression-level=19"]),
            &inputs,
            &both,
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            hip_build::run(&both, None),
            "compressed bundle, version 2, zstd\ncompressed bundle, version 2, zstd\n"
        );
    }
}

#[test]
fn shared_libraries_are_stripped_at_link_time() {
    let Some(clang) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let objects = hip_objects(&clang, dir.path());
    for linker in ["bfd", "gold"] {
        let library = dir.path().join(format!("libk{linker}.so"));
        let mut extra = vec!["-shared".to_string()];
        extra.extend(plugin_args(&["keep=gfx90a"]));
        let out = link(&clang, linker, &extra, &objects, &library);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let program = dir.path().join(format!("uses-{linker}"));
        let out = Command::new(&clang)
            .arg(root().join("tests/support/hip_runtime.c"))
            .arg("-Wl,--no-as-needed")
            .arg(format!("-L{}", dir.path().display()))
            .arg(format!("-lk{linker}"))
            .arg("-o")
            .arg(&program)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = Command::new(&program)
            .env("LD_LIBRARY_PATH", dir.path())
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            KEPT_GFX90A,
            "{linker}"
        );
    }
}

#[test]
fn bad_options_and_failed_links_leave_nothing_behind() {
    let Some(clang) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = vec![root().join("tests/support/hip_runtime.c")];
    inputs.extend(hip_objects(&clang, dir.path()));
    for linker in ["bfd", "gold"] {
        let out_path = dir.path().join(format!("bad-option-{linker}"));
        let out = link(
            &clang,
            linker,
            &plugin_args(&["kep=gfx90a"]),
            &inputs,
            &out_path,
        );
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("unknown option -plugin-opt=kep=gfx90a"),
            "{err}"
        );
        assert!(!out_path.exists());

        // The link itself fails: the plugin does nothing.
        let broken = dir.path().join("broken.c");
        std::fs::write(
            &broken,
            "int missing(void); int main(void) { return missing(); }\n",
        )
        .unwrap();
        let mut failing = inputs.clone();
        failing[0] = broken;
        let out_path = dir.path().join(format!("failed-{linker}"));
        let out = link(
            &clang,
            linker,
            &plugin_args(&["keep=gfx90a", "verbose"]),
            &failing,
            &out_path,
        );
        assert!(!out.status.success());
        assert!(!out_path.exists());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("undefined reference"), "{err}");
        assert!(!err.contains("device images to"), "{err}");

        // The rewrite fails (it would leave no device code): the link fails, nothing stays.
        let out_path = dir.path().join(format!("emptied-{linker}"));
        let out = link(
            &clang,
            linker,
            &plugin_args(&["keep=gfx1234"]),
            &inputs,
            &out_path,
        );
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("would remove every device image"), "{err}");
        assert!(!out_path.exists());
    }
}

#[test]
fn lld_and_mold_links_are_stripped_afterwards() {
    let Some(clang) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = vec![root().join("tests/support/hip_runtime.c")];
    inputs.extend(hip_objects(&clang, dir.path()));
    // What `offload strip --keep gfx90a --in-place` runs, called here as the plugin calls it:
    // the plugin's tests need no build of the command line.
    let options = offload_linker_plugin::Options::parse(["keep=gfx90a"]).unwrap();
    for linker in ["lld", "mold"] {
        if linker == "mold" && tool("mold").is_none() {
            continue;
        }
        let program = dir.path().join(format!("app-{linker}"));
        let out = link(&clang, linker, &[], &inputs, &program);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        if let Err(e) = offload_linker_plugin::rewrite_output(&program, &options) {
            panic!("{linker}: {e}");
        }
        assert_eq!(hip_build::run(&program, None), KEPT_GFX90A, "{linker}");
    }
}

/// Compiles `source` of samples/src with clang-22 for `arches` into `dir`; `None` (a visible
/// skip, a failure when the reference tools are required) without clang-22.
fn compile_22(dir: &Path, source: &str, arches: &[&str]) -> Option<PathBuf> {
    let clang = tool("clang-22")?;
    Some(compile_hip(&clang, dir, source, arches, &[]))
}

#[test]
fn the_plugin_keeps_the_generic_code_a_kept_device_loads() {
    let Some(clang) = tools() else { return };
    let dir = tempfile::tempdir().unwrap();
    // The second translation unit has no gfx1100 code: a gfx1100 loads its gfx11-generic code.
    let Some(first) = compile_22(
        dir.path(),
        "kernel.hip",
        &["gfx1100", "gfx11-generic", "gfx90a"],
    ) else {
        return;
    };
    let second = compile_22(dir.path(), "vadd.hip", &["gfx11-generic", "gfx90a"]).unwrap();
    let inputs = [root().join("tests/support/hip_runtime.c"), first, second];
    let program = dir.path().join("kept");
    let out = link(
        &clang,
        "bfd",
        &plugin_args(&["keep=gfx1100"]),
        &inputs,
        &program,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&program)
        .env("HIP_STANDIN_DEVICE", "gfx1100")
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0));
    // The lines without the entries' sizes, which depend on the compiler's release.
    let lines: Vec<String> = String::from_utf8_lossy(&run.stdout)
        .lines()
        .map(|l| {
            l.split_whitespace()
                .filter(|word| !word.bytes().all(|b| b.is_ascii_digit()) || l.starts_with("bundle"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    assert_eq!(
        lines,
        [
            "bundle, 2 entries",
            "host-x86_64-unknown-linux-gnu-",
            "hipv4-amdgcn-amd-amdhsa--gfx1100 elf",
            "gfx1100 loads hipv4-amdgcn-amd-amdhsa--gfx1100",
            "bundle, 2 entries",
            "host-x86_64-unknown-linux-gnu-",
            "hipv4-amdgcn-amd-amdhsa--gfx11-generic elf",
            "gfx1100 loads hipv4-amdgcn-amd-amdhsa--gfx11-generic",
        ]
    );
}
