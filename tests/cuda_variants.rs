//! `offload strip --keep sm_XY --variant`: per-architecture wheels and conda packages made
//! from one fat build. The fat binary is made by NVIDIA's tools (ptxas and fatbinary of the
//! nvcc wheel, on `PATH`) around a hand-written PTX kernel, embedded in a shared library as
//! nvcc embeds it; the wheel by `wheel pack`, the conda packages by conda-package-handling.
//! Checked: the names (file, `.dist-info`, `METADATA`, `RECORD`, a `.conda`'s tarballs,
//! `index.json` byte for byte), `wheel unpack` (every RECORD hash), `pip install --target`,
//! `cph x` with every `paths.json` digest hashed again, and `offload ls` of what is kept:
//! the cubins the CUDA driver loads on the device, and the PTX it may compile.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::cuda::cuda_entries;
use crate::util::{self, offload, succeed, text_output};

/// A kernel in PTX, for `ptxas` to assemble for each SM.
const PTX: &str = ".version 8.0\n.target sm_80\n.address_size 64\n\n\
.visible .entry scale(.param .u64 x, .param .f32 a)\n{\n\
\t.reg .b64 %rd<3>;\n\t.reg .f32 %f<3>;\n\
\tld.param.u64 %rd1, [x];\n\tld.param.f32 %f1, [a];\n\
\tcvta.to.global.u64 %rd2, %rd1;\n\tld.global.f32 %f2, [%rd2];\n\
\tmul.f32 %f2, %f2, %f1;\n\tst.global.f32 [%rd2], %f2;\n\tret;\n}\n";

/// A shared library holding one fat binary of cubins for sm_80, sm_86 and sm_90 and PTX for
/// compute_90, registered as nvcc registers it (fatbinary's `--embedded-fatbin` source, built
/// by `cc`); `None` (a visible skip) when NVIDIA's tools are missing.
fn fat_library(dir: &Path) -> Option<PathBuf> {
    let ptxas = util::tool("ptxas")?;
    let fatbinary = util::tool("fatbinary")?;
    let cc = util::tool("cc")?;
    let include = ptxas.parent()?.parent()?.join("include");
    util::skips::reference(
        include.join("fatbinary_section.h").is_file().then_some(()),
        "fatbinary_section.h not found beside nvcc's bin folder",
    )?;
    fs::write(dir.join("k80.ptx"), PTX).unwrap();
    fs::write(dir.join("k90.ptx"), PTX.replace("sm_80", "sm_90")).unwrap();
    let mut images = Vec::new();
    for sm in ["80", "86", "90"] {
        let cubin = dir.join(format!("k{sm}.cubin"));
        succeed(
            Command::new(&ptxas)
                .arg(format!("-arch=sm_{sm}"))
                .arg(dir.join("k80.ptx"))
                .arg("-o")
                .arg(&cubin),
        );
        images.push(format!(
            "--image3=kind=elf,sm={sm},file={}",
            cubin.display()
        ));
    }
    images.push(format!(
        "--image3=kind=ptx,sm=90,file={}",
        dir.join("k90.ptx").display()
    ));
    let source = dir.join("k.fatbin.c");
    succeed(
        Command::new(&fatbinary)
            .arg("-64")
            .arg(format!("--create={}", dir.join("k.fatbin").display()))
            .arg(format!("--embedded-fatbin={}", source.display()))
            .args(&images),
    );
    let library = dir.join("libscale.so");
    succeed(
        Command::new(cc)
            .args(["-shared", "-fPIC", "-x", "c"])
            .arg("-I")
            .arg(&include)
            .arg(&source)
            .arg("-o")
            .arg(&library),
    );
    Some(library)
}

/// The arch of each CUDA entry `offload ls` lists in `path`.
fn arches(path: &Path) -> Vec<String> {
    cuda_entries(path)
        .iter()
        .map(|e| e["arch"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_kept_sm_keeps_the_cubin_the_driver_loads_and_the_ptx_it_may_compile() {
    let dir = tempfile::tempdir().unwrap();
    let Some(library) = fat_library(dir.path()) else {
        return;
    };
    assert_eq!(arches(&library), ["sm_80", "sm_86", "sm_90", "compute_90"]);
    let cases: [(&[&str], &[&str]); 6] = [
        // 8.9 runs sm_80 and sm_86; the driver loads sm_86, the closest.
        (&["sm_89"], &["sm_86"]),
        (&["sm_86"], &["sm_86"]),
        (&["sm_80"], &["sm_80"]),
        (&["sm_90"], &["sm_90", "compute_90"]),
        (&["sm_80", "sm_86"], &["sm_80", "sm_86"]),
        // 12.0 runs no cubin of another major version: the PTX.
        (&["sm_120"], &["compute_90"]),
    ];
    for (k, (keep, want)) in cases.iter().enumerate() {
        let out = dir.path().join(format!("{k}.so"));
        let mut cmd = offload();
        cmd.arg("strip").arg(&library);
        for sm in *keep {
            cmd.args(["--keep", sm]);
        }
        succeed(cmd.arg("-o").arg(&out));
        assert_eq!(arches(&out), *want, "--keep {keep:?}");
    }
}

/// Whether `python3` imports `module`; a visible skip when it does not.
fn python_has(module: &str) -> bool {
    let has = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .status()
        .is_ok_and(|s| s.success());
    util::skips::reference(
        has.then_some(()),
        &format!("python module {module} not found"),
    )
    .is_some()
}

/// A wheel of `library` made by `wheel pack`, version `version`, in `dir/dist`.
fn wheel(dir: &Path, library: &Path, version: &str) -> PathBuf {
    let tree = dir.join(format!("tree-{version}"));
    let info = tree.join(format!("demo_cuda-{version}.dist-info"));
    fs::create_dir_all(tree.join("demo_cuda")).unwrap();
    fs::create_dir_all(&info).unwrap();
    fs::copy(library, tree.join("demo_cuda/libscale.so")).unwrap();
    fs::write(tree.join("demo_cuda/__init__.py"), "").unwrap();
    let data = tree.join(format!("demo_cuda-{version}.data/data/share"));
    fs::create_dir_all(&data).unwrap();
    fs::write(data.join("demo.txt"), "shared data\n").unwrap();
    fs::write(
        info.join("METADATA"),
        format!("Metadata-Version: 2.1\nName: demo-cuda\nVersion: {version}\n\nA demo.\n"),
    )
    .unwrap();
    fs::write(
        info.join("WHEEL"),
        "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: py3-none-any\n",
    )
    .unwrap();
    let dist = dir.join("dist");
    fs::create_dir_all(&dist).unwrap();
    succeed(
        Command::new("python3")
            .args(["-m", "wheel", "pack", "-d"])
            .arg(&dist)
            .arg(&tree),
    );
    dist.join(format!("demo_cuda-{version}-py3-none-any.whl"))
}

/// The text of the member `name` of the zip `zip`.
fn member(zip: &Path, name: &str) -> String {
    let out = succeed(Command::new("unzip").arg("-p").arg(zip).arg(name));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_wheel_variant_is_named_apart_and_installs() {
    let dir = tempfile::tempdir().unwrap();
    let Some(library) = fat_library(dir.path()) else {
        return;
    };
    if !python_has("wheel") {
        return;
    }
    let fat = wheel(dir.path(), &library, "1.0+cu130");
    let out = dir.path().join("variants");
    let (code, text, err) = text_output(
        offload()
            .arg("strip")
            .arg(&fat)
            .args(["--keep", "sm_90", "--variant", "-o"])
            .arg(&out),
    );
    assert_eq!(code, 0, "{err}");
    let made = out.join("demo_cuda-1.0+cu130.sm90-py3-none-any.whl");
    assert!(
        text.ends_with(&format!("made {} for sm_90\n", made.display())),
        "{text}"
    );
    assert_eq!(
        util::file_names(&out),
        ["demo_cuda-1.0+cu130.sm90-py3-none-any.whl"]
    );
    let info = "demo_cuda-1.0+cu130.sm90.dist-info";
    assert_eq!(
        member(&made, &format!("{info}/METADATA")),
        "Metadata-Version: 2.1\nName: demo-cuda\nVersion: 1.0+cu130.sm90\n\nA demo.\n"
    );
    let record = member(&made, &format!("{info}/RECORD"));
    let paths: Vec<&str> = record
        .lines()
        .map(|l| l.split(',').next().unwrap())
        .collect();
    for path in &paths {
        assert!(
            path.starts_with("demo_cuda/")
                || path.starts_with(info)
                || path.starts_with("demo_cuda-1.0+cu130.sm90.data/"),
            "{record}"
        );
    }
    // The .data folder moves with the version too.
    assert_eq!(
        member(&made, "demo_cuda-1.0+cu130.sm90.data/data/share/demo.txt"),
        "shared data\n"
    );
    assert!(
        paths.contains(&format!("{info}/RECORD").as_str()),
        "{record}"
    );
    // Exactly what the driver loads on sm_90, and the PTX it may compile.
    let listed = succeed(offload().args(["ls", "--json"]).arg(&made));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&listed.stdout).unwrap();
    let kept: Vec<&str> = rows.iter().filter_map(|r| r["arch"].as_str()).collect();
    assert_eq!(kept, ["sm_90", "compute_90"]);
    // wheel unpack checks every RECORD hash; pip installs it under its new version.
    succeed(
        Command::new("python3")
            .args(["-m", "wheel", "unpack", "-d"])
            .arg(dir.path().join("unpacked"))
            .arg(&made),
    );
    if python_has("pip") {
        let target = dir.path().join("installed");
        succeed(
            Command::new("python3")
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--no-deps",
                    "--no-index",
                    "--target",
                ])
                .arg(&target)
                .arg(&made),
        );
        assert!(target.join(info).join("METADATA").is_file());
        assert!(target.join("share/demo.txt").is_file());
        assert_eq!(
            arches(&target.join("demo_cuda/libscale.so")),
            ["sm_90", "compute_90"]
        );
    }
    // A version without a local label gets one; several SMs make one wheel for all.
    let plain = wheel(dir.path(), &library, "2.0");
    succeed(
        offload()
            .arg("strip")
            .arg(&plain)
            .args(["--keep", "sm_86", "--keep", "sm_80", "--variant", "-o"])
            .arg(&out),
    );
    let both = out.join("demo_cuda-2.0+sm80.sm86-py3-none-any.whl");
    assert!(member(&both, "demo_cuda-2.0+sm80.sm86.dist-info/METADATA")
        .contains("\nVersion: 2.0+sm80.sm86\n"));
    let listed = succeed(offload().args(["ls", "--json"]).arg(&both));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&listed.stdout).unwrap();
    let kept: Vec<&str> = rows.iter().filter_map(|r| r["arch"].as_str()).collect();
    assert_eq!(kept, ["sm_80", "sm_86"]);
    succeed(
        Command::new("python3")
            .args(["-m", "wheel", "unpack", "-d"])
            .arg(dir.path().join("unpacked-both"))
            .arg(&both),
    );
}

/// Makes `dir/pkg` (the library in `lib/`, `info/index.json` and `info/paths.json`) into
/// `NAME.conda` and `NAME.tar.bz2` with conda-package-handling, in `dir/conda`.
const MAKE_CONDA: &str = "import sys, os, json, hashlib\n\
import conda_package_handling.api as api\n\
root, out, name = sys.argv[1], sys.argv[2], sys.argv[3]\n\
b = open(os.path.join(root, 'lib/libscale.so'), 'rb').read()\n\
os.makedirs(os.path.join(root, 'info'))\n\
paths = [{'_path': 'lib/libscale.so', 'path_type': 'hardlink', 'sha256': hashlib.sha256(b).hexdigest(), 'size_in_bytes': len(b)}]\n\
json.dump({'paths': paths, 'paths_version': 1}, open(os.path.join(root, 'info/paths.json'), 'w'), indent=2, sort_keys=True)\n\
index = {'name': 'demo-cuda', 'version': '1.0', 'build': 'h0_0', 'build_number': 0, 'depends': ['libgcc >=13'], 'subdir': 'linux-64'}\n\
json.dump(index, open(os.path.join(root, 'info/index.json'), 'w'), indent=2, sort_keys=True)\n\
files = ['info/index.json', 'info/paths.json', 'lib/libscale.so']\n\
os.makedirs(out)\n\
for ext in ('.conda', '.tar.bz2'):\n\
\x20   api.create(root, files, name + ext, out_folder=out)\n";

/// Extracts the conda package `package` with conda-package-handling into `dest`, checks every
/// `paths.json` digest, and prints `info/index.json` as it is.
const EXTRACT_CONDA: &str = "import sys, os, json, hashlib\n\
import conda_package_handling.api as api\n\
api.extract(sys.argv[1], dest_dir=sys.argv[2])\n\
for p in json.load(open(os.path.join(sys.argv[2], 'info/paths.json')))['paths']:\n\
\x20   b = open(os.path.join(sys.argv[2], p['_path']), 'rb').read()\n\
\x20   assert hashlib.sha256(b).hexdigest() == p['sha256'] and len(b) == p['size_in_bytes'], p\n\
sys.stdout.write(open(os.path.join(sys.argv[2], 'info/index.json')).read())\n";

#[test]
fn a_conda_variant_depends_on_the_cuda_arch_it_runs_on() {
    let dir = tempfile::tempdir().unwrap();
    let Some(library) = fat_library(dir.path()) else {
        return;
    };
    if !python_has("conda_package_handling.api") {
        return;
    }
    let root = dir.path().join("pkg");
    fs::create_dir_all(root.join("lib")).unwrap();
    fs::copy(&library, root.join("lib/libscale.so")).unwrap();
    let conda = dir.path().join("conda");
    succeed(
        Command::new("python3")
            .args(["-c", MAKE_CONDA])
            .arg(&root)
            .arg(&conda)
            .arg("demo-cuda-1.0-h0_0"),
    );
    let out = dir.path().join("variants");
    succeed(
        offload()
            .arg("strip")
            .arg(conda.join("demo-cuda-1.0-h0_0.conda"))
            .arg(conda.join("demo-cuda-1.0-h0_0.tar.bz2"))
            .args(["--keep", "sm_89", "--variant", "-o"])
            .arg(&out),
    );
    assert_eq!(
        util::file_names(&out),
        [
            "demo-cuda-1.0-h0_0_sm89.conda",
            "demo-cuda-1.0-h0_0_sm89.tar.bz2"
        ]
    );
    // The .conda's tarballs are named after it, as conda's readers look them up.
    let listing = succeed(
        Command::new("unzip")
            .arg("-Z1")
            .arg(out.join("demo-cuda-1.0-h0_0_sm89.conda")),
    );
    let members = String::from_utf8(listing.stdout).unwrap();
    assert!(
        members.contains("pkg-demo-cuda-1.0-h0_0_sm89.tar.zst\n"),
        "{members}"
    );
    assert!(
        members.contains("info-demo-cuda-1.0-h0_0_sm89.tar.zst\n"),
        "{members}"
    );
    let index = "{\n  \"build\": \"h0_0_sm89\",\n  \"build_number\": 0,\n  \"depends\": [\n    \"libgcc >=13\",\n    \"__cuda_arch >=8.9,<9.0\"\n  ],\n  \"name\": \"demo-cuda\",\n  \"subdir\": \"linux-64\",\n  \"version\": \"1.0\"\n}";
    for (k, name) in [
        "demo-cuda-1.0-h0_0_sm89.conda",
        "demo-cuda-1.0-h0_0_sm89.tar.bz2",
    ]
    .iter()
    .enumerate()
    {
        let dest = dir.path().join(format!("x{k}"));
        let shown = succeed(
            Command::new("python3")
                .args(["-c", EXTRACT_CONDA])
                .arg(out.join(name))
                .arg(&dest),
        );
        assert_eq!(String::from_utf8(shown.stdout).unwrap(), index, "{name}");
        // 8.9 loads the sm_86 cubin; the compute_90 PTX is not for it.
        assert_eq!(arches(&dest.join("lib/libscale.so")), ["sm_86"], "{name}");
    }
}

#[test]
fn variant_refusals_are_clear_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("demo-1.0-py3-none-any.whl");
    fs::write(&fake, b"not a zip at all").unwrap();
    let out = dir.path().join("variants");
    let run = |args: &[&str], input: &Path| {
        let (code, _, err) = text_output(
            offload()
                .arg("strip")
                .arg(input)
                .args(args)
                .arg("-o")
                .arg(&out),
        );
        assert!(!out.exists(), "{args:?}: {err}");
        (code, err)
    };
    let (code, err) = run(&["--keep", "gfx90a", "--variant"], &fake);
    assert_eq!(code, 2);
    assert!(err.contains("`gfx90a` is no CUDA SM (sm_XY)"), "{err}");
    let (code, err) = run(&["--keep", "compute_90", "--variant"], &fake);
    assert_eq!(code, 2);
    assert!(err.contains("`compute_90` is no CUDA SM"), "{err}");
    let (code, err) = run(&["--keep", "sm_90", "--variant"], &fake);
    assert_eq!(code, 1);
    assert!(
        err.contains("not a package (a wheel, .conda or conda .tar.bz2)"),
        "{err}"
    );
    let plain = dir.path().join("libscale.so");
    fs::write(&plain, b"\x7fELF").unwrap();
    let (code, err) = run(&["--keep", "sm_90", "--variant"], &plain);
    assert_eq!(code, 1);
    assert!(
        err.contains("not a wheel or conda package by its name"),
        "{err}"
    );
    // Without -o: where would the renamed package go?
    let (code, _, err) =
        text_output(
            offload()
                .arg("strip")
                .arg(&fake)
                .args(["--keep", "sm_90", "--variant"]),
        );
    assert_eq!(code, 2);
    assert!(
        err.contains("give -o with the folder to write into"),
        "{err}"
    );
    // --variant is not for rewriting in place.
    let (code, _, err) = text_output(offload().arg("strip").arg(&fake).args([
        "--keep",
        "sm_90",
        "--variant",
        "--in-place",
    ]));
    assert_eq!(code, 2, "{err}");
    assert_eq!(fs::read(&fake).unwrap(), b"not a zip at all");
}
