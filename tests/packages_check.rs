//! `offload check` of packages: a wheel, a Debian package and conda packages made by the real
//! tools, each holding two shared libraries made by the C compiler: `libapp.so` (RUNPATH
//! `$ORIGIN` and `$ORIGIN/../../nvidia/lib`) needs `libkern.so`, which carries the HIP fat
//! binary of samples/clang/kernel-fatbin.o (gfx906 and gfx90a), and `libmissing.so`, which no
//! package holds. The check applies the loader's search inside the package as it installs,
//! names members `PACKAGE!member`, and reports what the package does not hold as not in the
//! package, whatever this machine has. In the Debian and conda packages `libkern.so` is a
//! symbolic link to `libkern.so.1.0`, which the search follows inside the package.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::native::c_compiler;
use crate::util::{self, offload, samples_dir, succeed, text_output};

/// Builds `libkern.so` and `libapp.so` into `out` (and `libmissing.so` into `DIR/host`, where
/// `LD_LIBRARY_PATH` will point: the check must not take it).
fn libraries(dir: &Path, out: &Path) -> Option<()> {
    let cc = c_compiler()?;
    fs::create_dir_all(out).unwrap();
    let host = dir.join("host");
    fs::create_dir_all(&host).unwrap();
    let c = dir.join("app.c");
    fs::write(&c, "int app(void) { return 1; }\n").unwrap();
    let shared = |inputs: &[&Path], output: PathBuf, extra: &[&str]| {
        succeed(
            Command::new(&cc)
                .args(["-shared", "-fPIC"])
                .args(inputs)
                .arg("-o")
                .arg(output)
                .args(extra),
        );
    };
    let fat = samples_dir().join("clang/kernel-fatbin.o");
    shared(&[&fat], out.join("libkern.so"), &[]);
    shared(&[&c], host.join("libmissing.so"), &[]);
    let search = format!("-L{}", out.display());
    let missing = format!("-L{}", host.display());
    shared(
        &[&c],
        out.join("libapp.so"),
        &[
            &search,
            &missing,
            "-Wl,--no-as-needed",
            "-lkern",
            "-lmissing",
            "-Wl,--enable-new-dtags,-rpath,$ORIGIN:$ORIGIN/../../nvidia/lib",
        ],
    );
    Some(())
}

/// A wheel `mylib-1.0-...whl` of `mylib/lib/{libapp,libkern}.so`, made by `python3 -m wheel
/// pack`.
fn wheel(dir: &Path) -> Option<PathBuf> {
    let python = util::python_with(&["wheel"])?;
    let tree = dir.join("wheel");
    libraries(dir, &tree.join("mylib/lib"))?;
    fs::write(tree.join("mylib/__init__.py"), "").unwrap();
    let info = tree.join("mylib-1.0.dist-info");
    fs::create_dir_all(&info).unwrap();
    fs::write(
        info.join("METADATA"),
        "Metadata-Version: 2.1\nName: mylib\nVersion: 1.0\n",
    )
    .unwrap();
    fs::write(
        info.join("WHEEL"),
        "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: py3-none-linux_x86_64\n",
    )
    .unwrap();
    succeed(
        Command::new(python)
            .args(["-m", "wheel", "pack"])
            .arg(&tree)
            .arg("-d")
            .arg(dir),
    );
    Some(dir.join("mylib-1.0-py3-none-linux_x86_64.whl"))
}

/// `offload check --json --device DEVICE PACKAGE`, with `LD_LIBRARY_PATH` naming the folder
/// that holds `libmissing.so` on this machine: the status and the report.
fn check_json(dir: &Path, package: &Path, device: &str) -> (i32, Value) {
    let (status, out, err) = text_output(
        offload()
            .env("LD_LIBRARY_PATH", dir.join("host"))
            .args(["check", "--json", "--device", device])
            .arg(package),
    );
    let report = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    (status, report)
}

/// The file of `report` named `name`.
fn file<'r>(report: &'r Value, name: &str) -> &'r Value {
    let files = report["files"].as_array().unwrap();
    files
        .iter()
        .find(|f| f["path"] == name)
        .unwrap_or_else(|| panic!("no {name} in {report:#}"))
}

/// Checks that `report` (of the package shown as `shown`, its libraries at `prefix`) has
/// `libkern.so` loaded by `libapp.so`, found `via`, each once, and `libmissing.so` not in the
/// package; `loads` is what device 0 loads of the bundle.
fn loads_through_the_package(report: &Value, shown: &str, prefix: &str, via: &str, loads: &str) {
    loads_member(report, shown, prefix, "libkern.so", via, loads);
}

/// [`loads_through_the_package`], `libkern.so` being a link to the member `kern`.
fn loads_member(report: &Value, shown: &str, prefix: &str, kern: &str, via: &str, loads: &str) {
    let app = format!("{shown}!{prefix}libapp.so");
    let kern = file(report, &format!("{shown}!{prefix}{kern}"));
    assert_eq!(kern["needed_as"], "libkern.so");
    assert_eq!(kern["needed_by"], app.as_str());
    assert_eq!(kern["found_via"], via);
    assert_eq!(kern["bundles"][0]["loads"][0]["loads"], loads, "{report:#}");
    assert_eq!(file(report, &app)["found_via"], "member");
    assert_eq!(report["files"].as_array().unwrap().len(), 2, "{report:#}");
    let missing = report["not_found"].as_array().unwrap();
    let libmissing: Vec<&Value> = missing
        .iter()
        .filter(|m| m["name"] == "libmissing.so")
        .collect();
    assert_eq!(libmissing.len(), 1, "{report:#}");
    assert_eq!(libmissing[0]["needed_by"], app.as_str());
    assert_eq!(libmissing[0]["in_package"], true);
}

#[test]
fn a_wheel_loads_its_own_library_through_runpath_and_not_what_another_package_holds() {
    let dir = tempfile::tempdir().unwrap();
    let Some(wheel) = wheel(dir.path()) else {
        return;
    };
    let shown = wheel.to_string_lossy().into_owned();
    let (status, report) = check_json(dir.path(), &wheel, "gfx90a");
    assert_eq!(status, 0, "{report:#}");
    loads_through_the_package(&report, &shown, "mylib/lib/", "runpath", "native");
    // libc is this machine's, not the wheel's: not in the package either.
    let missing = report["not_found"].as_array().unwrap();
    assert!(
        missing.iter().any(|m| m["name"] == "libc.so.6"),
        "{report:#}"
    );

    let (status, report) = check_json(dir.path(), &wheel, "gfx1030");
    assert_eq!(status, 1, "{report:#}");
    loads_through_the_package(&report, &shown, "mylib/lib/", "runpath", "nothing");

    let (status, out, err) =
        text_output(offload().args(["check", "--device", "gfx1030"]).arg(&wheel));
    assert_eq!(status, 1, "{out}{err}");
    for line in [
        format!("{shown}!mylib/lib/libkern.so bundle 1: the runtime logs \"No compatible code objects found for: gfx1030\" and the load fails with hipErrorInvalidImage"),
        "Not in the package (looked for in the package alone".to_string(),
        format!("  libmissing.so (needed by {shown}!mylib/lib/libapp.so)"),
    ] {
        assert!(out.contains(&line), "{line}\nin\n{out}");
    }
}

/// `libkern.so` in `folder` renamed `libkern.so.1.0`, and `libkern.so` made a symbolic link
/// to it, as packages install a library under its version.
fn versioned(folder: &Path) {
    fs::rename(folder.join("libkern.so"), folder.join("libkern.so.1.0")).unwrap();
    std::os::unix::fs::symlink("libkern.so.1.0", folder.join("libkern.so")).unwrap();
}

/// A Debian package of `usr/lib/app/libapp.so` and `usr/lib/x86_64-linux-gnu/libkern.so`.
fn deb(dir: &Path) -> Option<PathBuf> {
    let dpkg = util::tool("dpkg-deb")?;
    let root = dir.join("deb");
    // A default folder of the loader's on this machine.
    let multiarch = root.join(multiarch_folder());
    libraries(dir, &multiarch)?;
    fs::create_dir_all(root.join("usr/lib/app")).unwrap();
    fs::rename(
        multiarch.join("libapp.so"),
        root.join("usr/lib/app/libapp.so"),
    )
    .unwrap();
    versioned(&multiarch);
    fs::create_dir_all(root.join("DEBIAN")).unwrap();
    fs::write(
        root.join("DEBIAN/control"),
        "Package: mylib\nVersion: 1.0\nArchitecture: amd64\nMaintainer: nobody <n@example.org>\nDescription: test\n",
    )
    .unwrap();
    let out = dir.join("mylib_1.0_amd64.deb");
    succeed(
        Command::new(dpkg)
            .args(["-Zxz", "--root-owner-group", "--build"])
            .arg(&root)
            .arg(&out),
    );
    Some(out)
}

/// The loader's first default folder under `/usr` on this machine, without its leading `/`.
fn multiarch_folder() -> &'static str {
    if cfg!(target_arch = "x86_64") {
        "usr/lib/x86_64-linux-gnu"
    } else {
        "usr/lib"
    }
}

#[test]
fn a_debian_package_finds_its_library_through_a_link_in_the_default_folders_it_installs() {
    let dir = tempfile::tempdir().unwrap();
    let Some(deb) = deb(dir.path()) else {
        return;
    };
    let shown = format!("{}!data.tar.xz!", deb.to_string_lossy());
    let (status, report) = check_json(dir.path(), &deb, "gfx90a");
    assert_eq!(status, 0, "{report:#}");
    let app = format!("{shown}usr/lib/app/libapp.so");
    let kern = file(
        &report,
        &format!("{shown}{}/libkern.so.1.0", multiarch_folder()),
    );
    assert_eq!(kern["found_via"], "default");
    assert_eq!(kern["needed_as"], "libkern.so");
    assert_eq!(kern["needed_by"], app.as_str());
    assert_eq!(kern["bundles"][0]["loads"][0]["loads"], "native");
    let missing = report["not_found"].as_array().unwrap();
    assert!(
        missing
            .iter()
            .any(|m| m["name"] == "libmissing.so" && m["in_package"] == true),
        "{report:#}"
    );
    let (status, _) = check_json(dir.path(), &deb, "gfx1030");
    assert_eq!(status, 1);
}

#[test]
fn conda_packages_load_through_runpath_and_links_in_their_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let Some(tar) = util::tool("tar") else { return };
    if util::tool("bzip2").is_none() || util::tool("zstd").is_none() {
        return;
    }
    let Some(python) = util::tool("python3") else {
        return;
    };
    let prefix = dir.path().join("prefix");
    if libraries(dir.path(), &prefix.join("lib")).is_none() {
        return;
    }
    versioned(&prefix.join("lib"));
    fs::create_dir_all(prefix.join("info")).unwrap();
    fs::write(prefix.join("info/index.json"), "{}").unwrap();
    let bz2 = dir.path().join("mylib-1.0-0.tar.bz2");
    let tarball = |out: &Path, flag: &str, members: &[&str]| {
        succeed(
            Command::new(&tar)
                .arg("-C")
                .arg(&prefix)
                .args([flag, "-cf"])
                .arg(out)
                .args(members),
        );
    };
    tarball(&bz2, "-j", &["info", "lib"]);
    let pkg = dir.path().join("pkg-mylib-1.0-0.tar.zst");
    let info = dir.path().join("info-mylib-1.0-0.tar.zst");
    tarball(&pkg, "--zstd", &["lib"]);
    tarball(&info, "--zstd", &["info"]);
    let conda = dir.path().join("mylib-1.0-0.conda");
    let script = "import sys, zipfile, os\n\
        with zipfile.ZipFile(sys.argv[1], 'w') as z:\n\
        \x20   z.writestr('metadata.json', '{\"conda_pkg_format_version\": 2}')\n\
        \x20   for p in sys.argv[2:]:\n\
        \x20       z.write(p, os.path.basename(p))\n";
    succeed(
        Command::new(python)
            .args(["-c", script])
            .arg(&conda)
            .arg(&info)
            .arg(&pkg),
    );
    for (package, inner) in [(&bz2, ""), (&conda, "pkg-mylib-1.0-0.tar.zst!")] {
        let shown = package.to_string_lossy().into_owned();
        let prefix = format!("{inner}lib/");
        let (status, report) = check_json(dir.path(), package, "gfx90a");
        assert_eq!(status, 0, "{report:#}");
        let kern = "libkern.so.1.0";
        loads_member(&report, &shown, &prefix, kern, "runpath", "native");
        let (status, report) = check_json(dir.path(), package, "gfx1030");
        assert_eq!(status, 1, "{report:#}");
        loads_member(&report, &shown, &prefix, kern, "runpath", "nothing");
    }
}

#[test]
fn a_library_two_members_load_is_reported_once_from_a_tarball() {
    let dir = tempfile::tempdir().unwrap();
    let Some(tar) = util::tool("tar") else { return };
    let tree = dir.path().join("tree");
    if libraries(dir.path(), &tree.join("opt/lib")).is_none() {
        return;
    }
    fs::copy(
        tree.join("opt/lib/libapp.so"),
        tree.join("opt/lib/libapp2.so"),
    )
    .unwrap();
    let tarball = dir.path().join("libs.tar.gz");
    succeed(
        Command::new(tar)
            .arg("-C")
            .arg(&tree)
            .arg("-czf")
            .arg(&tarball)
            .arg("opt"),
    );
    let (status, report) = check_json(dir.path(), &tarball, "gfx90a");
    assert_eq!(status, 0, "{report:#}");
    let shown = tarball.to_string_lossy().into_owned();
    let files = report["files"].as_array().unwrap();
    let kern = format!("{shown}!opt/lib/libkern.so");
    assert_eq!(
        files.iter().filter(|f| f["path"] == kern.as_str()).count(),
        1,
        "{report:#}"
    );
    assert_eq!(files.len(), 3, "{report:#}");
    for app in ["libapp.so", "libapp2.so"] {
        assert_eq!(
            file(&report, &format!("{shown}!opt/lib/{app}"))["found_via"],
            "member"
        );
    }
    let bundles: usize = files
        .iter()
        .map(|f| f["bundles"].as_array().unwrap().len())
        .sum();
    assert_eq!(bundles, 1, "{report:#}");
}
