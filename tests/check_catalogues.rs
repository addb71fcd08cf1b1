//! `offload check` on rocBLAS and hipBLASLt: the Tensile catalogue each device opens, found as
//! the libraries find it (their variables, the folders relative to their own, Debian's patched
//! folder, a processor's subfolder), the xnack spellings of their code objects, and a device
//! whose bundles load through a generic target but which has no catalogue of its own (exit 1,
//! the library's own message, the release gate's line). Small libraries are linked with `cc`
//! around a committed HIP object; the catalogue files are empty files named as the libraries
//! name them. Last, Debian sid's real folders when they are present.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{self, offload, samples_dir, skips};

/// A library `lib/NAME` linked around the sample `object`, with `strings` in its read-only data.
fn library(dir: &Path, name: &str, object: &str, strings: &str) -> Option<PathBuf> {
    let cc = skips::reference(util::tool("cc"), "cc (to link a small library)")?;
    std::fs::create_dir_all(dir.join("lib")).unwrap();
    let source = dir.join("strings.c");
    std::fs::write(&source, strings).unwrap();
    let out = dir.join("lib").join(name);
    let status = Command::new(cc)
        .args(["-shared", "-nostdlib", "-fPIC", "-o"])
        .arg(&out)
        .arg(&source)
        .arg(samples_dir().join(object))
        .status()
        .unwrap();
    assert!(status.success());
    Some(out)
}

/// Empty files `names` in `dir/folder`.
fn files(dir: &Path, folder: &str, names: &[&str]) {
    let folder = dir.join(folder);
    std::fs::create_dir_all(&folder).unwrap();
    for name in names {
        std::fs::write(folder.join(name), b"").unwrap();
    }
}

/// `offload check ARGS` in `dir` with the variables `env`: exit status, stdout, stderr.
fn check(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let mut command = offload();
    command
        .current_dir(dir)
        .env_remove("ROCBLAS_TENSILE_LIBPATH")
        .env_remove("HIPBLASLT_TENSILE_LIBPATH")
        .envs(env.iter().copied())
        .arg("check")
        .args(args);
    util::text_output(&mut command)
}

/// The `Kernel catalogues` section of a text report.
fn section(out: &str) -> String {
    let start = out.find("Kernel catalogues").unwrap_or(out.len());
    let rest = &out[start..];
    let end = rest.find("\n\n").map_or(rest.len(), |e| e + 1);
    rest[..end].to_string()
}

const DEBIAN: &str = "const char *folder = \"/rocblas/4.4.1/library\";\n";

/// rocBLAS of generic bundles (gfx10-3-generic, gfx11-generic) in Debian's layout, with a
/// catalogue for gfx1100 only.
fn debian_rocblas(dir: &Path) -> Option<()> {
    library(dir, "librocblas.so.4", "targets/generic-cov6.o", DEBIAN)?;
    files(
        dir,
        "lib/rocblas/4.4.1/library",
        &[
            "TensileLibrary_lazy_gfx1100.dat",
            "Kernels.so-000-gfx1100.hsaco",
            "TensileLibrary_Type_SS_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx1100.dat",
            "TensileLibrary_Type_SS_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx1100.co",
            "TensileLibrary_Type_SS_Contraction_l_Ailk_Bljk_Cijk_Dijk_fallback.dat",
        ],
    );
    Some(())
}

#[test]
fn a_generic_only_build_loads_but_has_no_catalogue() {
    let dir = tempfile::tempdir().unwrap();
    let Some(()) = debian_rocblas(dir.path()) else {
        return;
    };
    let (code, out, err) = check(
        dir.path(),
        &[],
        &[
            "--device",
            "gfx1100",
            "--device",
            "gfx1151",
            "lib/librocblas.so.4",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(err, "");
    assert_eq!(
        out,
        "Devices, in the runtime's order:\n  0 gfx1100\n  1 gfx1151\n\n\
         FILE                 BUNDLES  DEVICE   NATIVE  GENERIC  SPIR-V  NOTHING\n\
         lib/librocblas.so.4        1  gfx1100       0        1       0        0\n\
         \x20                             gfx1151       0        1       0        0\n\
         \n\
         Kernel catalogues (the Tensile files each library opens for the device's processor):\n\
         \x20 lib/librocblas.so.4: rocBLAS catalogue lib/rocblas/4.4.1/library (found via rocblas/4.4.1/library)\n\
         \x20   0 gfx1100: opens TensileLibrary_lazy_gfx1100.dat; helper Kernels.so-000-gfx1100.hsaco; 2 code objects for gfx1100\n\
         \x20   1 gfx1151: no Tensile catalogue (rocBLAS opens TensileLibrary_lazy_gfx1151.dat, TensileLibrary_gfx1151.dat or TensileLibrary.dat in lib/rocblas/4.4.1/library: none exists)\n\
         \x20     rocBLAS prints: rocBLAS error: Cannot read lib/rocblas/4.4.1/library/TensileLibrary.dat: No such file or directory for GPU arch : gfx1151\n\
         \x20     then the process aborts (SIGABRT) at the first call that needs Tensile; the device counts as without code\n"
    );
    // gfx1100 alone passes.
    let (code, _, _) = check(
        dir.path(),
        &[],
        &["--device", "gfx1100", "lib/librocblas.so.4"],
    );
    assert_eq!(code, 0);
}

#[test]
fn json_carries_each_device_s_catalogue() {
    let dir = tempfile::tempdir().unwrap();
    let Some(()) = debian_rocblas(dir.path()) else {
        return;
    };
    let (code, out, _) = check(
        dir.path(),
        &[],
        &[
            "--json",
            "--device",
            "gfx1100",
            "--device",
            "gfx1031",
            "lib/librocblas.so.4",
        ],
    );
    assert_eq!(code, 1);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["every_device_has_code"], false);
    let expected = serde_json::json!([{
        "library": "rocBLAS",
        "folder": "lib/rocblas/4.4.1/library",
        "found_via": "rocblas/4.4.1/library",
        "devices": [
            {
                "device": 0,
                "processor": "gfx1100",
                "folder": "lib/rocblas/4.4.1/library",
                "tried": ["TensileLibrary_lazy_gfx1100.dat", "TensileLibrary_gfx1100.dat", "TensileLibrary.dat"],
                "opens": "TensileLibrary_lazy_gfx1100.dat",
                "kernels": "Kernels.so-000-gfx1100.hsaco",
                "code_objects": 2,
                "ok": true
            },
            {
                "device": 1,
                "processor": "gfx1031",
                "folder": "lib/rocblas/4.4.1/library",
                "tried": ["TensileLibrary_lazy_gfx1031.dat", "TensileLibrary_gfx1031.dat", "TensileLibrary.dat"],
                "opens": null,
                "kernels": null,
                "code_objects": 0,
                "ok": false,
                "missing": "rocBLAS opens TensileLibrary_lazy_gfx1031.dat, TensileLibrary_gfx1031.dat or TensileLibrary.dat in lib/rocblas/4.4.1/library: none exists",
                "message": "rocBLAS error: Cannot read lib/rocblas/4.4.1/library/TensileLibrary.dat: No such file or directory for GPU arch : gfx1031",
                "then": "the process aborts (SIGABRT) at the first call that needs Tensile"
            }
        ]
    }]);
    assert_eq!(json["files"][0]["catalogues"], expected);
    // Other files keep their JSON: no `catalogues` field.
    let (_, out, _) = check(
        &samples_dir(),
        &[],
        &["--json", "--device", "gfx90a", "bundles/kernel-hip.o"],
    );
    assert!(!out.contains("catalogues"), "{out}");
}

#[test]
fn the_release_gate_names_the_catalogue_folder() {
    let dir = tempfile::tempdir().unwrap();
    let Some(()) = debian_rocblas(dir.path()) else {
        return;
    };
    let (code, out, _) = check(
        dir.path(),
        &[],
        &["--require", "gfx1100;gfx1031", "lib/librocblas.so.4"],
    );
    assert_eq!(code, 1);
    assert_eq!(
        out,
        "FILE                 gfx1100  gfx1031\n\
         lib/librocblas.so.4  generic  MISSING\n\
         lib/librocblas.so.4: gfx1031 is required: no Tensile catalogue (rocBLAS opens TensileLibrary_lazy_gfx1031.dat, TensileLibrary_gfx1031.dat or TensileLibrary.dat in lib/rocblas/4.4.1/library: none exists)\n\
         required: 2 targets against 1 file with device code: 1 missing (exit 1)\n"
    );
}

#[test]
fn the_variable_and_nearer_folders_come_first() {
    let dir = tempfile::tempdir().unwrap();
    let Some(()) = debian_rocblas(dir.path()) else {
        return;
    };
    // `<lib>/library` is tried before the last resort; a processor's subfolder is taken.
    files(
        dir.path(),
        "lib/library/gfx1151",
        &["TensileLibrary_gfx1151.dat"],
    );
    let (code, out, _) = check(
        dir.path(),
        &[],
        &["--device", "gfx1151", "lib/librocblas.so.4"],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        section(&out),
        "Kernel catalogues (the Tensile files each library opens for the device's processor):\n\
         \x20 lib/librocblas.so.4: rocBLAS catalogue lib/library (found via library)\n\
         \x20   0 gfx1151: opens TensileLibrary_gfx1151.dat in lib/library/gfx1151; no helper Kernels.so-000 code object; 0 code objects for gfx1151\n"
    );
    // The variable wins, taken as it is.
    files(dir.path(), "mine", &["TensileLibrary.dat"]);
    let (code, out, _) = check(
        dir.path(),
        &[("ROCBLAS_TENSILE_LIBPATH", "mine")],
        &["--device", "gfx1100", "lib/librocblas.so.4"],
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        section(&out).contains(
            "rocBLAS catalogue mine (found via ROCBLAS_TENSILE_LIBPATH)\n\
             \x20   0 gfx1100: opens TensileLibrary.dat;"
        ),
        "{out}"
    );
}

#[test]
fn xnack_spellings_of_code_objects() {
    let dir = tempfile::tempdir().unwrap();
    // No Debian string: the last resort is rocblas/library.
    let Some(_) = library(
        dir.path(),
        "librocblas.so.4",
        "clang/kernel-fatbin.o",
        "int x;\n",
    ) else {
        return;
    };
    files(
        dir.path(),
        "lib/rocblas/library",
        &[
            "TensileLibrary_lazy_gfx90a.dat",
            "Kernels.so-000-gfx90a-xnack-.hsaco",
            "Kernels.so-000-gfx90a-xnack+.hsaco",
            "TensileLibrary_Type_SS_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx90a.co",
            "TensileLibrary_Type_SS_Contraction_l_Ailk_Bljk_Cijk_Dijk_fallback_gfx90a-xnack+.hsaco",
            "TensileLibrary_Type_SS_Contraction_l_Ailk_Bljk_Cijk_Dijk_fallback_gfx90a-xnack-.hsaco",
            "TensileLibrary_ExperimentalGrid_gfx90a.co",
        ],
    );
    let (code, out, _) = check(
        dir.path(),
        &[],
        &["--device", "gfx90a:xnack+", "lib/librocblas.so.4"],
    );
    assert_eq!(code, 0, "{out}");
    // The helper is tried plain, then -xnack-, then -xnack+ (as the library does); the
    // kernels of the other mode and experimental ones are not loaded.
    assert_eq!(
        section(&out),
        "Kernel catalogues (the Tensile files each library opens for the device's processor):\n\
         \x20 lib/librocblas.so.4: rocBLAS catalogue lib/rocblas/library (found via rocblas/library)\n\
         \x20   0 gfx90a:xnack+: opens TensileLibrary_lazy_gfx90a.dat; helper Kernels.so-000-gfx90a-xnack-.hsaco; 3 code objects for gfx90a\n"
    );
}

/// hipBLASLt of generic bundles with a catalogue and mapping for gfx1100.
fn hipblaslt(dir: &Path) -> Option<()> {
    library(
        dir,
        "libhipblaslt.so.1",
        "targets/generic-cov6.o",
        "int x;\n",
    )?;
    files(
        dir,
        "lib/hipblaslt/library",
        &[
            "TensileLibrary_lazy_gfx1100.dat",
            "TensileLiteLibrary_lazy_Mapping.dat",
            "Kernels.so-000-gfx1100.hsaco",
            "extop_gfx1100.co",
        ],
    );
    Some(())
}

#[test]
fn hipblaslt_returns_errors_without_its_catalogue() {
    let dir = tempfile::tempdir().unwrap();
    let Some(()) = hipblaslt(dir.path()) else {
        return;
    };
    let (code, out, _) = check(
        dir.path(),
        &[],
        &[
            "--device",
            "gfx1100",
            "--device",
            "gfx1151",
            "lib/libhipblaslt.so.1",
        ],
    );
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        section(&out),
        "Kernel catalogues (the Tensile files each library opens for the device's processor):\n\
         \x20 lib/libhipblaslt.so.1: hipBLASLt catalogue lib/hipblaslt/library (found via hipblaslt/library)\n\
         \x20   0 gfx1100: opens TensileLibrary_lazy_gfx1100.dat and TensileLiteLibrary_lazy_Mapping.dat; helper Kernels.so-000-gfx1100.hsaco; 2 code objects for gfx1100\n\
         \x20   1 gfx1151: no Tensile catalogue (hipBLASLt opens TensileLibrary_lazy_gfx1151.dat in lib/hipblaslt/library: none exists)\n\
         \x20     hipBLASLt prints: rocblaslt error: Cannot read \"lib/hipblaslt/library/TensileLibrary_lazy_gfx1151.dat\": No such file or directory\n\
         \x20     then every matmul returns an error (hipBLASLt error: Heuristic Fetch Failed); the device counts as without code\n"
    );
    // The variable, taken as it is; a catalogue without its mapping is not enough.
    files(dir.path(), "other", &["TensileLibrary_lazy_gfx1151.dat"]);
    let (code, out, _) = check(
        dir.path(),
        &[("HIPBLASLT_TENSILE_LIBPATH", "other")],
        &["--device", "gfx1151", "lib/libhipblaslt.so.1"],
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        section(&out).contains(
            "no Tensile catalogue (hipBLASLt opens TensileLiteLibrary_lazy_Mapping.dat in other: none exists)\n\
             \x20     hipBLASLt prints: No library mapping found in other; rocblaslt error: Could not initialize Tensile library mapping\n"
        ),
        "{out}"
    );
    files(
        dir.path(),
        "other",
        &["TensileLiteLibrary_lazy_Mapping.dat"],
    );
    let (code, _, _) = check(
        dir.path(),
        &[("HIPBLASLT_TENSILE_LIBPATH", "other")],
        &["--device", "gfx1151", "lib/libhipblaslt.so.1"],
    );
    assert_eq!(code, 0);
}

/// A Debian package `rocblas_1.0_amd64.deb` of [`debian_rocblas`]'s library and folder, at
/// `usr/lib/x86_64-linux-gnu` as Debian installs them (the library under its version, linked
/// from its soname).
fn debian_rocblas_deb(dir: &Path) -> Option<PathBuf> {
    let dpkg = skips::reference(
        util::tool("dpkg-deb"),
        "dpkg-deb (to make a Debian package)",
    )?;
    debian_rocblas(dir)?;
    let root = dir.join("deb");
    let multiarch = root.join("usr/lib/x86_64-linux-gnu");
    std::fs::create_dir_all(&multiarch).unwrap();
    std::fs::rename(dir.join("lib/rocblas"), multiarch.join("rocblas")).unwrap();
    // A real code object among the catalogue's: the library loads it for its processor only.
    std::fs::copy(
        samples_dir().join("dev/vadd-gfx906.hsaco"),
        multiarch.join("rocblas/4.4.1/library/TensileLibrary_Type_SS_gfx906.co"),
    )
    .unwrap();
    std::fs::rename(
        dir.join("lib/librocblas.so.4"),
        multiarch.join("librocblas.so.4.4"),
    )
    .unwrap();
    std::os::unix::fs::symlink("librocblas.so.4.4", multiarch.join("librocblas.so.4")).unwrap();
    std::fs::create_dir_all(root.join("DEBIAN")).unwrap();
    std::fs::write(
        root.join("DEBIAN/control"),
        "Package: librocblas4\nVersion: 1.0\nArchitecture: amd64\nMaintainer: nobody <n@example.org>\nDescription: test\n",
    )
    .unwrap();
    let out = dir.join("librocblas4_1.0_amd64.deb");
    util::succeed(
        Command::new(dpkg)
            .args(["-Zxz", "--root-owner-group", "--build"])
            .arg(&root)
            .arg(&out),
    );
    Some(out)
}

#[test]
fn a_debian_packages_catalogue_is_found_in_the_package_as_installed() {
    let dir = tempfile::tempdir().unwrap();
    let Some(deb) = debian_rocblas_deb(dir.path()) else {
        return;
    };
    let name = deb.file_name().unwrap().to_str().unwrap();
    let (code, out, err) = check(dir.path(), &[], &["--require", "gfx1100;gfx1031", name]);
    assert_eq!(code, 1, "{out}{err}");
    let member = format!("{name}!data.tar.xz!usr/lib/x86_64-linux-gnu/librocblas.so.4.4");
    let folder = format!("{name}!data.tar.xz!usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library");
    let pad = " ".repeat(member.len() - 4);
    assert_eq!(
        out,
        format!(
            "FILE{pad}  gfx1100  gfx1031\n\
             {member}  generic  MISSING\n\
             {member}: gfx1031 is required: no Tensile catalogue (rocBLAS opens TensileLibrary_lazy_gfx1031.dat, TensileLibrary_gfx1031.dat or TensileLibrary.dat in {folder}: none exists)\n\
             required: 2 targets against 1 file with device code: 1 missing (exit 1)\n"
        )
    );
    // gfx1100 has its catalogue in the package: the gate passes.
    let (code, out, _) = check(dir.path(), &[], &["--require", "gfx1100", name]);
    assert_eq!(code, 0, "{out}");
    let (code, out, _) = check(dir.path(), &[], &["--device", "gfx1100", name]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        section(&out),
        format!(
            "Kernel catalogues (the Tensile files each library opens for the device's processor):\n\
             \x20 {member}: rocBLAS catalogue {folder} (found via rocblas/4.4.1/library)\n\
             \x20   0 gfx1100: opens TensileLibrary_lazy_gfx1100.dat; helper Kernels.so-000-gfx1100.hsaco; 2 code objects for gfx1100\n"
        )
    );
    // The variable names a folder of this machine, not of the package: it is not read.
    let (code, _, _) = check(
        dir.path(),
        &[("ROCBLAS_TENSILE_LIBPATH", "/nowhere")],
        &["--require", "gfx1100", name],
    );
    assert_eq!(code, 0);
}

#[test]
fn a_tarballs_catalogue_is_found_relative_to_the_library_and_never_above_the_package() {
    let dir = tempfile::tempdir().unwrap();
    let Some(()) = hipblaslt(dir.path()) else {
        return;
    };
    let Some(tar) = skips::reference(util::tool("tar"), "tar (to make a tarball)") else {
        return;
    };
    // A catalogue above the package's root is not the package's.
    files(
        dir.path(),
        "Tensile/library",
        &["TensileLibrary_lazy_gfx1151.dat"],
    );
    let tarball = |name: &str, members: &[&str]| {
        util::succeed(
            Command::new(&tar)
                .current_dir(dir.path())
                .arg("-czf")
                .arg(name)
                .args(members),
        );
    };
    tarball("hipblaslt.tar.gz", &["lib"]);
    let (code, out, _) = check(
        dir.path(),
        &[],
        &["--require", "gfx1100;gfx1151", "hipblaslt.tar.gz"],
    );
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out,
        "FILE                                    gfx1100  gfx1151\n\
         hipblaslt.tar.gz!lib/libhipblaslt.so.1  generic  MISSING\n\
         hipblaslt.tar.gz!lib/libhipblaslt.so.1: gfx1151 is required: no Tensile catalogue (hipBLASLt opens TensileLibrary_lazy_gfx1151.dat in hipblaslt.tar.gz!lib/hipblaslt/library: none exists)\n\
         required: 2 targets against 1 file with device code: 1 missing (exit 1)\n"
    );
    // A zip (a wheel's form) lists its members from its central directory.
    if let Some(python) = skips::reference(util::tool("python3"), "python3 (to make a zip)") {
        util::succeed(Command::new(python).current_dir(dir.path()).args([
            "-m",
            "zipfile",
            "-c",
            "hipblaslt.zip",
            "lib",
        ]));
        let (code, out, _) = check(dir.path(), &[], &["--require", "gfx1100", "hipblaslt.zip"]);
        assert_eq!(code, 0, "{out}");
        let (code, out, _) = check(dir.path(), &[], &["--require", "gfx1151", "hipblaslt.zip"]);
        assert_eq!(code, 1, "{out}");
        assert!(
            out.contains("in hipblaslt.zip!lib/hipblaslt/library: none exists"),
            "{out}"
        );
    }
    // Without the hipblaslt folder, the library's second choice, ../Tensile/library, would
    // leave the package; it is not looked for on this machine.
    std::fs::remove_dir_all(dir.path().join("lib/hipblaslt")).unwrap();
    tarball("bare.tar.gz", &["lib"]);
    let (code, out, _) = check(dir.path(), &[], &["--require", "gfx1151", "bare.tar.gz"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("in bare.tar.gz!lib/hipblaslt/library: none exists"),
        "{out}"
    );
}

#[test]
fn targets_counts_a_catalogue_as_a_unit_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let Some(deb) = debian_rocblas_deb(dir.path()) else {
        return;
    };
    let name = deb.file_name().unwrap().to_str().unwrap();
    let targets = |args: &[&str]| {
        let mut command = offload();
        command.current_dir(dir.path()).arg("targets").args(args);
        util::text_output(&mut command)
    };
    // The bundles' generic targets load on every gfx103x and gfx11xx; the catalogue serves
    // gfx1100 alone, and only gfx1100 finds both. The catalogue's gfx906 code object is the
    // catalogue's, not a unit of its own.
    let (code, out, err) = targets(&[name]);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    assert_eq!(out, "every:\nsome: gfx1100 gfx10-3-generic gfx11-generic\n");
    let (_, out, _) = targets(&["--format", "debian", name]);
    assert_eq!(out, "gfx1100\n");
    // The same files installed: the library finds its folder on disk.
    let installed = "deb/usr/lib/x86_64-linux-gnu/librocblas.so.4";
    let (_, out, _) = targets(&["--format", "debian", installed]);
    assert_eq!(out, "gfx1100\n");
    // The installed tree walked: its code objects count in the catalogue's unit.
    let (_, out, _) = targets(&["--format", "debian", "-r", "deb/usr"]);
    assert_eq!(out, "gfx1100\n");
    // Another catalogue, for gfx1030's xnack-less mode: two processors then.
    files(
        dir.path(),
        "deb/usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library",
        &["TensileLibrary_gfx1030.dat"],
    );
    let (_, out, _) = targets(&["--format", "debian", installed]);
    assert_eq!(out, "gfx1030 gfx1100\n");
    let (_, out, _) = targets(&["--json", name]);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let file = &json["files"][0];
    assert_eq!(file["units"], 2);
    assert_eq!(
        file["catalogues"][0]["library"],
        format!("{name}!data.tar.xz!usr/lib/x86_64-linux-gnu/librocblas.so.4.4")
    );
    assert_eq!(
        file["catalogues"][0]["targets"],
        serde_json::json!(["gfx1100"])
    );
    assert_eq!(json["processors"], serde_json::json!(["gfx1100"]));
}
