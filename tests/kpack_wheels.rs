//! `offload kpack` of wheels: a HIP library built by clang for gfx90a (xnack+ and xnack-),
//! gfx1100 and gfx11-generic, packed by `pip wheel`, split into a host wheel and device
//! wheels; pip installs the host wheel with a device's extra into a fresh virtual environment
//! and AMD's kpack loader finds every wrapper's code object in the installed tree for that
//! device, the original's bytes. The groups are `rocm-bootstrap`'s own, compared with it.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSection};
use offload::format::bundle::Bundle;
use offload::format::kpack::ELF_REF_SECTION;
use offload::host::program::kpack_elf::hip_code;
use offload::target::device_groups;

use crate::util;
use crate::util::kpack::{fnv1a64, load, loader};
use crate::util::{offload, python_with, succeed};

const ARCHES: [&str; 4] = ["gfx90a:xnack+", "gfx90a:xnack-", "gfx1100", "gfx11-generic"];

/// Builds `libk.so` from two translation units (two wrappers) for [`ARCHES`].
fn library(clang: &Path, dir: &Path) -> PathBuf {
    let mut objects = Vec::new();
    for source in ["kernel", "vadd"] {
        let object = dir.join(format!("{source}.o"));
        let mut command = Command::new(clang);
        command.args(["-x", "hip", "-nogpulib", "-nogpuinc", "-fPIC", "-c"]);
        for arch in ARCHES {
            command.arg(format!("--offload-arch={arch}"));
        }
        succeed(
            command
                .arg(util::samples_dir().join(format!("src/{source}.hip")))
                .arg("-o")
                .arg(&object),
        );
        objects.push(object);
    }
    let library = dir.join("libk.so");
    succeed(
        Command::new("cc")
            .arg("-shared")
            .args(&objects)
            .arg("-o")
            .arg(&library),
    );
    library
}

/// A wheel of the project `kdemo` holding `library` as `kdemo/lib/libk.so`, made by
/// `pip wheel`.
fn pip_wheel(python: &Path, library: &Path, dir: &Path) -> PathBuf {
    let project = dir.join("project");
    fs::create_dir_all(project.join("kdemo/lib")).unwrap();
    fs::copy(library, project.join("kdemo/lib/libk.so")).unwrap();
    fs::write(project.join("kdemo/__init__.py"), "").unwrap();
    fs::write(
        project.join("setup.py"),
        "from setuptools import setup\nsetup(name='kdemo', version='1.0', packages=['kdemo'], \
         package_data={'kdemo': ['lib/*.so']}, description='demo')\n",
    )
    .unwrap();
    let dist = dir.join("dist");
    succeed(
        Command::new(python)
            .args([
                "-m",
                "pip",
                "wheel",
                "-q",
                "--no-deps",
                "--no-index",
                "--no-build-isolation",
                "-w",
            ])
            .arg(&dist)
            .arg(&project),
    );
    let wheel = fs::read_dir(&dist).unwrap().next().unwrap().unwrap().path();
    assert!(
        wheel
            .to_str()
            .unwrap()
            .ends_with("kdemo-1.0-py3-none-any.whl"),
        "{wheel:?}"
    );
    wheel
}

/// A stand-in for `rocm-bootstrap`, which the host wheel requires, so that pip resolves
/// without an index.
fn bootstrap_stub(python: &Path, dir: &Path) -> PathBuf {
    let tree = dir.join("stub/rocm_bootstrap-0.3.0");
    let info = tree.join("rocm_bootstrap-0.3.0.dist-info");
    fs::create_dir_all(&info).unwrap();
    fs::write(
        info.join("METADATA"),
        "Metadata-Version: 2.1\nName: rocm-bootstrap\nVersion: 0.3.0\n",
    )
    .unwrap();
    fs::write(
        info.join("WHEEL"),
        "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    )
    .unwrap();
    let out = dir.join("stubs");
    fs::create_dir_all(&out).unwrap();
    succeed(
        Command::new(python)
            .args(["-m", "wheel", "pack", "-d"])
            .arg(&out)
            .arg(&tree),
    );
    out
}

/// Installs the host wheel with `extra` into a fresh virtual environment at `venv`; returns
/// the installed library.
fn install(python: &Path, venv: &Path, links: &[&Path], extra: &str) -> PathBuf {
    succeed(
        Command::new(python)
            .args(["-m", "venv", "--without-pip"])
            .arg(venv),
    );
    let mut command = Command::new(python);
    command
        .args(["-m", "pip", "-q", "--python"])
        .arg(venv.join("bin/python"));
    command.args(["install", "--no-index"]);
    for link in links {
        command.arg("--find-links").arg(link);
    }
    succeed(command.arg(format!("kdemo[{extra}]")));
    let lib = fs::read_dir(venv.join("lib"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    lib.join("site-packages/kdemo/lib/libk.so")
}

/// Each wrapper's bundle entries of the fat library: entry target ID to its bytes.
fn originals(path: &Path) -> Vec<BTreeMap<String, Vec<u8>>> {
    let data = fs::read(path).unwrap();
    let code = hip_code(&data).unwrap().unwrap();
    code.wrappers
        .iter()
        .map(|w| {
            let at = (w.target.unwrap() - code.fatbin.address) as usize;
            let bundle = Bundle::parse(&code.fatbin.data[at..]).unwrap().unwrap();
            bundle
                .entries()
                .iter()
                .filter_map(|e| {
                    let arch = e.id.rsplit_once("--").map(|(_, a)| a.to_string())?;
                    (!arch.is_empty() && e.id.starts_with("hip")).then(|| (arch, e.data.to_vec()))
                })
                .collect()
        })
        .collect()
}

/// The bytes of section `name` of the ELF file at `path`.
fn section(path: &Path, name: &str) -> Vec<u8> {
    let data = fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    file.section_by_name(name).unwrap().data().unwrap().to_vec()
}

/// Asks AMD's loader, for each wrapper of the installed library, the code a device asking
/// with `arches` loads, and checks it is the original's entry `expected`.
fn loads(
    driver: &Path,
    installed: &Path,
    dir: &Path,
    arches: &[&str],
    expected: &str,
    fat: &[BTreeMap<String, Vec<u8>>],
) {
    let metadata = dir.join("ref.msgpack");
    fs::write(&metadata, section(installed, ELF_REF_SECTION)).unwrap();
    let isas: Vec<String> = arches
        .iter()
        .map(|a| format!("amdgcn-amd-amdhsa--{a}"))
        .collect();
    let isas: Vec<&str> = isas.iter().map(String::as_str).collect();
    for (index, entries) in fat.iter().enumerate() {
        let want = &entries[expected];
        let loaded = load(driver, &metadata, installed, index as u64, &isas, &[]);
        assert_eq!(
            loaded,
            Ok((want.len() as u64, fnv1a64(want))),
            "#{index} on {arches:?}"
        );
    }
}

#[test]
fn a_wheel_split_installs_with_pip_and_each_device_loads_its_own_code() {
    let (Some(clang), Some(python)) = (
        util::tool("clang-22"),
        python_with(&["setuptools", "wheel", "venv"]),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let fat_library = library(&clang, dir.path());
    let fat = originals(&fat_library);
    assert_eq!(fat.len(), 2);
    let wheel = pip_wheel(&python, &fat_library, dir.path());
    let split = dir.path().join("split");
    let out =
        String::from_utf8(succeed(offload().arg("kpack").arg(&wheel).arg("-o").arg(&split)).stdout)
            .unwrap();
    let mut names: Vec<String> = fs::read_dir(&split)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "amd_kdemo_device_gfx11-1.0-py3-none-any.whl",
            "amd_kdemo_device_gfx1100-1.0-py3-none-any.whl",
            "amd_kdemo_device_gfx90a-1.0-py3-none-any.whl",
            "kdemo-1.0-py3-none-any.whl",
        ]
    );
    assert!(out.contains("gfx90a: gfx90a:xnack+ gfx90a:xnack-"), "{out}");
    assert!(out.contains("gfx11: gfx11-generic"), "{out}");

    // Every wheel passes `wheel unpack`'s RECORD check.
    for name in &names {
        succeed(
            Command::new(&python)
                .args(["-m", "wheel", "unpack", "-d"])
                .arg(dir.path().join("unpacked"))
                .arg(split.join(name)),
        );
    }
    let unpacked = dir.path().join("unpacked");
    let host_metadata =
        fs::read_to_string(unpacked.join("kdemo-1.0/kdemo-1.0.dist-info/METADATA")).unwrap();
    let added: Vec<&str> = host_metadata
        .lines()
        .skip_while(|l| !l.starts_with("Requires-Dist: rocm-bootstrap"))
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(
        added,
        [
            "Requires-Dist: rocm-bootstrap",
            "Provides-Extra: device-gfx1100",
            "Requires-Dist: amd-kdemo-device-gfx1100 == 1.0; extra == \"device-gfx1100\"",
            "Requires-Dist: amd-kdemo-device-gfx11 == 1.0; extra == \"device-gfx1100\"",
            "Provides-Extra: device-gfx90a",
            "Requires-Dist: amd-kdemo-device-gfx90a == 1.0; extra == \"device-gfx90a\"",
            "Provides-Extra: device-gfx11",
            "Requires-Dist: amd-kdemo-device-gfx11 == 1.0; extra == \"device-gfx11\"",
            "Provides-Extra: device-all",
            "Requires-Dist: amd-kdemo-device-gfx11 == 1.0; extra == \"device-all\"",
            "Requires-Dist: amd-kdemo-device-gfx1100 == 1.0; extra == \"device-all\"",
            "Requires-Dist: amd-kdemo-device-gfx90a == 1.0; extra == \"device-all\"",
        ]
    );
    let device = unpacked.join("amd_kdemo_device_gfx1100-1.0");
    assert_eq!(
        fs::read_to_string(device.join("amd_kdemo_device_gfx1100-1.0.dist-info/METADATA")).unwrap(),
        "Metadata-Version: 2.4\nName: amd-kdemo-device-gfx1100\nVersion: 1.0\n\
         Summary: AMD device kernels (gfx1100) for kdemo\nRequires-Dist: kdemo == 1.0\n\
         Requires-Dist: amd-kdemo-device-gfx11 == 1.0\n"
    );
    let mut archives: Vec<String> =
        fs::read_dir(unpacked.join("amd_kdemo_device_gfx90a-1.0/kdemo/.kpack"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
    archives.sort();
    assert_eq!(
        archives,
        ["kdemo_gfx90a:xnack+.kpack", "kdemo_gfx90a:xnack-.kpack"]
    );

    // Installed by pip with a device's extra, the code loads from the installed tree.
    let stubs = bootstrap_stub(&python, dir.path());
    let Some(driver) = loader() else { return };
    let installed = install(
        &python,
        &dir.path().join("venv-gfx90a"),
        &[&split, &stubs],
        "device-gfx90a",
    );
    assert!(!installed
        .with_file_name("../.kpack/kdemo_gfx1100.kpack")
        .exists());
    loads(
        &driver,
        &installed,
        dir.path(),
        &["gfx90a:sramecc+:xnack-"],
        "gfx90a:xnack-",
        &fat,
    );
    loads(
        &driver,
        &installed,
        dir.path(),
        &["gfx90a:xnack+"],
        "gfx90a:xnack+",
        &fat,
    );
    // Another device's wheel instead: that device's code, and the generic code for the rest of
    // its family.
    let installed = install(
        &python,
        &dir.path().join("venv-gfx1100"),
        &[&split, &stubs],
        "device-gfx1100",
    );
    loads(
        &driver,
        &installed,
        dir.path(),
        &["gfx1100"],
        "gfx1100",
        &fat,
    );
    loads(
        &driver,
        &installed,
        dir.path(),
        &["gfx1101", "gfx11-generic"],
        "gfx11-generic",
        &fat,
    );
    let missing = load(
        &driver,
        &dir.path().join("ref.msgpack"),
        &installed,
        0,
        &["amdgcn-amd-amdhsa--gfx90a:xnack-"],
        &[],
    );
    assert!(
        missing.is_err(),
        "gfx90a loads nothing from the gfx1100 install: {missing:?}"
    );
}

#[test]
fn a_split_wheel_is_refused_and_merging_gives_back_the_device_code() {
    let (Some(clang), Some(python)) = (
        util::tool("clang-22"),
        python_with(&["setuptools", "wheel"]),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let fat_library = library(&clang, dir.path());
    let wheel = pip_wheel(&python, &fat_library, dir.path());
    let split = dir.path().join("split");
    succeed(offload().arg("kpack").arg(&wheel).arg("-o").arg(&split));
    let host = split.join("kdemo-1.0-py3-none-any.whl");

    let again = offload()
        .arg("kpack")
        .arg(&host)
        .arg("-o")
        .arg(dir.path().join("again"))
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(stderr.contains("already split: a host wheel"), "{stderr}");
    let device = split.join("amd_kdemo_device_gfx90a-1.0-py3-none-any.whl");
    let again = offload()
        .arg("kpack")
        .arg(&device)
        .arg("-o")
        .arg(dir.path().join("again"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&again.stderr).contains("already split: a device wheel"));
    assert!(!dir
        .path()
        .join("again")
        .join("kdemo-1.0-py3-none-any.whl")
        .exists());

    // What the wheels inflate to is bounded as when any package is read: nothing written.
    let mut bounded = offload();
    bounded.args(["kpack", "--merge", "--max-decompressed-size", "4000"]);
    for entry in fs::read_dir(&split).unwrap() {
        bounded.arg(entry.unwrap().path());
    }
    let over = bounded
        .arg("-o")
        .arg(dir.path().join("bounded"))
        .output()
        .unwrap();
    assert_eq!(over.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&over.stderr);
    assert!(
        stderr.contains("inflate to more than --max-decompressed-size allows"),
        "{stderr}"
    );
    assert_eq!(fs::read_dir(dir.path().join("bounded")).unwrap().count(), 0);

    let merged = dir.path().join("merged");
    let mut command = offload();
    command.args(["kpack", "--merge"]);
    for entry in fs::read_dir(&split).unwrap() {
        command.arg(entry.unwrap().path());
    }
    let out = String::from_utf8(succeed(command.arg("-o").arg(&merged)).stdout).unwrap();
    assert!(
        out.contains("1 binaries given their code back from 4 archives"),
        "{out}"
    );
    let merged_wheel = merged.join("kdemo-1.0-py3-none-any.whl");
    let unpacked = dir.path().join("m");
    succeed(
        Command::new(&python)
            .args(["-m", "wheel", "unpack", "-d"])
            .arg(&unpacked)
            .arg(&merged_wheel),
    );
    let library = unpacked.join("kdemo-1.0/kdemo/lib/libk.so");
    assert_eq!(
        section(&library, ".hip_fatbin"),
        section(&fat_library, ".hip_fatbin")
    );
    // The METADATA is the fat wheel's again.
    let original = dir.path().join("o");
    succeed(
        Command::new(&python)
            .args(["-m", "wheel", "unpack", "-d"])
            .arg(&original)
            .arg(&wheel),
    );
    let metadata = "kdemo-1.0/kdemo-1.0.dist-info/METADATA";
    assert_eq!(
        fs::read(unpacked.join(metadata)).unwrap(),
        fs::read(original.join(metadata)).unwrap()
    );

    // A release folder: every wheel in it, with the table of downloads per processor.
    let release = dir.path().join("release");
    let table = String::from_utf8(
        succeed(
            offload()
                .args(["kpack", "--wheels"])
                .arg(wheel.parent().unwrap())
                .arg("-o")
                .arg(&release),
        )
        .stdout,
    )
    .unwrap();
    let size = |name: &str| fs::metadata(release.join(name)).unwrap().len();
    let gfx90a =
        size("kdemo-1.0-py3-none-any.whl") + size("amd_kdemo_device_gfx90a-1.0-py3-none-any.whl");
    assert!(
        table.lines().any(|l| l
            .split_whitespace()
            .take(2)
            .eq(["gfx90a", gfx90a.to_string().as_str()])),
        "{table}"
    );
    let gfx1151 =
        size("kdemo-1.0-py3-none-any.whl") + size("amd_kdemo_device_gfx11-1.0-py3-none-any.whl");
    assert!(
        table.lines().any(|l| l
            .split_whitespace()
            .take(2)
            .eq(["gfx1151", gfx1151.to_string().as_str()])),
        "{table}"
    );
    // An overlay root that misses the library: refused, nothing written.
    let wrong = offload()
        .args(["kpack", "--overlay-root", "elsewhere"])
        .arg(&wheel)
        .arg("-o")
        .arg(dir.path().join("w"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        stderr.contains(
            "'kdemo/lib/libk.so' holds device code but is not under the overlay root 'elsewhere/'"
        ),
        "{stderr}"
    );
    assert_eq!(fs::read_dir(dir.path().join("w")).unwrap().count(), 0);

    // A device wheel alone is refused: there is no host wheel to merge into.
    let lone = offload()
        .args(["kpack", "--merge"])
        .arg(&device)
        .arg("-o")
        .arg(dir.path().join("x"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&lone.stderr).contains("no host wheel among the wheels given"));
}

#[test]
fn the_groups_are_rocm_bootstraps() {
    let Some(python) = python_with(&["rocm_bootstrap"]) else {
        return;
    };
    let script = r#"
import json, rocm_bootstrap as rb
out = {}
for t in rb.ALL_TARGETS:
    chain = rb.packaging_chain(t.name)
    out[t.name] = [[b.key, b.level.value, b.display_name, b.llvm_generic, list(m.name for m in b.members),
                    rb.device_dist_name("amd-x-device", b)] for b in chain]
print(json.dumps(out))
"#;
    let out = succeed(Command::new(&python).args(["-c", script]));
    let theirs: BTreeMap<String, serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let mut ours = BTreeMap::new();
    for processor in device_groups::processors() {
        let chain = device_groups::chain(processor).unwrap();
        let rows: Vec<serde_json::Value> = chain
            .iter()
            .map(|g| {
                serde_json::json!([
                    g.key,
                    g.level.name(),
                    g.display,
                    g.generic,
                    g.members,
                    device_groups::dist_name("amd-x-device", g)
                ])
            })
            .collect();
        ours.insert(processor.to_string(), serde_json::Value::from(rows));
    }
    assert_eq!(ours, theirs);
}

/// Every file of `folder`, by name, with its bytes.
fn files_of(folder: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(folder)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().into_string().unwrap(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn many_threads_split_large_libraries_into_the_same_bytes_every_time() {
    let (Some(clang), Some(python)) = (util::tool("clang-22"), python_with(&["wheel"])) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 3 MiB of text for the kernel's array: code objects past every in-memory shortcut.
    let mut x = 0x9e37_79b9u32;
    let filler: Vec<u8> = (0..3u32 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[(x % 64) as usize]
        })
        .collect();
    fs::write(d.join("filler.bin"), &filler).unwrap();
    let embed = format!("--embed-dir={}", d.display());
    let object = crate::util::native::compile_hip(
        &clang,
        d,
        "large.hip",
        &["gfx90a:xnack-", "gfx1100"],
        &[&embed, "-Wno-c23-extensions"],
    );
    // Six libraries, split at once.
    let tree = d.join("big-1.0");
    fs::create_dir_all(tree.join("big/lib")).unwrap();
    for k in 0..6 {
        let library = tree.join(format!("big/lib/lib{k}.so"));
        succeed(
            Command::new("cc")
                .arg("-shared")
                .arg(&object)
                .arg("-o")
                .arg(&library),
        );
    }
    let info = tree.join("big-1.0.dist-info");
    fs::create_dir_all(&info).unwrap();
    fs::write(
        info.join("METADATA"),
        "Metadata-Version: 2.1\nName: big\nVersion: 1.0\n",
    )
    .unwrap();
    fs::write(
        info.join("WHEEL"),
        "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: py3-none-linux_x86_64\n",
    )
    .unwrap();
    let dist = d.join("dist");
    fs::create_dir_all(&dist).unwrap();
    succeed(
        Command::new(&python)
            .args(["-m", "wheel", "pack", "-d"])
            .arg(&dist)
            .arg(&tree),
    );
    let wheel = dist.join("big-1.0-py3-none-linux_x86_64.whl");

    let split = |threads: &str, out: &str| {
        succeed(
            offload()
                .env("RAYON_NUM_THREADS", threads)
                .arg("kpack")
                .args(out.starts_with("plain").then_some("--compression=none"))
                .arg(&wheel)
                .arg("-o")
                .arg(d.join(out)),
        );
        files_of(&d.join(out))
    };
    let first = split("1", "one");
    assert_eq!(
        first.keys().collect::<Vec<_>>(),
        [
            "amd_big_device_gfx1100-1.0-py3-none-linux_x86_64.whl",
            "amd_big_device_gfx90a-1.0-py3-none-linux_x86_64.whl",
            "big-1.0-py3-none-linux_x86_64.whl",
        ]
    );
    for run in 0..3 {
        assert!(
            split("8", &format!("eight{run}")) == first,
            "run {run} with 8 threads differs"
        );
    }
    // Merged back, each library's device code is its own again.
    let mut merge = offload();
    merge.args(["kpack", "--merge"]);
    for name in first.keys() {
        merge.arg(d.join("one").join(name));
    }
    succeed(
        merge
            .env("RAYON_NUM_THREADS", "8")
            .arg("-o")
            .arg(d.join("merged")),
    );
    let unpacked = d.join("m");
    succeed(
        Command::new(&python)
            .args(["-m", "wheel", "unpack", "-d"])
            .arg(&unpacked)
            .arg(d.join("merged/big-1.0-py3-none-linux_x86_64.whl")),
    );
    for k in 0..6 {
        let name = format!("big/lib/lib{k}.so");
        assert_eq!(
            section(&unpacked.join("big-1.0").join(&name), ".hip_fatbin"),
            section(&tree.join(&name), ".hip_fatbin"),
            "{name}"
        );
    }
}
