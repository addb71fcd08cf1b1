//! `offload strip`, `offload compress` and `offload decompress` on relocatable objects,
//! archives and bundle files: the rewritten object still links, and the stand-in HIP runtime
//! (tests/support/hip_runtime.c) sees a valid bundle through the registration wrapper.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util;
use crate::util::native::{c_compiler, link_and_run, support};
use crate::util::{file_names, offload_in, samples_dir};

fn copy_sample(dir: &Path, sample: &str, name: &str) -> PathBuf {
    let to = dir.join(name);
    std::fs::copy(samples_dir().join(sample), &to).unwrap();
    to
}

/// Links `object` with the stand-in runtime and returns what the program prints, or `None`
/// when there is no C compiler.
fn registered(dir: &Path, object: &str) -> Option<String> {
    let cc = c_compiler()?;
    Some(link_and_run(
        &cc,
        &support("hip_runtime.c"),
        &dir.join(object),
        &dir.join(format!("{object}.exe")),
    ))
}

#[test]
fn a_stripped_object_links_and_registers_the_kept_code() {
    let dir = tempfile::tempdir().unwrap();
    copy_sample(dir.path(), "clang/kernel-fatbin.o", "k.o");
    let (code, out, err) = offload_in(
        dir.path(),
        &["strip", "k.o", "--keep", "gfx90a", "-o", "s.o"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "k.o: 2 device images went to 1, 19536 bytes to 15440 (1 bundles or binaries rewritten)\n"
    );
    let Some(seen) = registered(dir.path(), "s.o") else {
        return;
    };
    assert_eq!(
        seen,
        "bundle, 2 entries\n  host-x86_64-unknown-linux-- 0\n  hipv4-amdgcn-amd-amdhsa--gfx90a 4232 elf\n"
    );
    // The kept code object is the original's, byte for byte.
    let (code, _, err) = offload_in(
        dir.path(),
        &["extract", "k.o", "s.o", "--arch", "gfx90a", "-o", "x"],
    );
    assert_eq!(code, 0, "{err}");
    let a = std::fs::read(dir.path().join("x/k.o-hipv4-amdgcn-amd-amdhsa--gfx90a.co")).unwrap();
    let b = std::fs::read(dir.path().join("x/s.o-hipv4-amdgcn-amd-amdhsa--gfx90a.co")).unwrap();
    assert_eq!(a, b);
}

#[test]
fn compressing_and_decompressing_an_object_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    copy_sample(dir.path(), "clang/kernel-fatbin.o", "k.o");
    let (code, _, err) = offload_in(dir.path(), &["compress", "k.o", "-o", "z.o"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = offload_in(dir.path(), &["decompress", "z.o", "-o", "d.o"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read(dir.path().join("d.o")).unwrap(),
        std::fs::read(dir.path().join("k.o")).unwrap()
    );
    if let Some(seen) = registered(dir.path(), "z.o") {
        assert_eq!(seen, "compressed bundle, version 2, zstd\n");
    }
    // clang-offload-bundler-19 reads our compressed bundle.
    let Some(llvm) = util::tool("clang-offload-bundler-19") else {
        return;
    };
    use object::{Object, ObjectSection};
    let data = std::fs::read(dir.path().join("z.o")).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let section = file
        .section_by_name(".hip_fatbin")
        .unwrap()
        .data()
        .unwrap()
        .to_vec();
    std::fs::write(dir.path().join("fatbin"), section).unwrap();
    let status = Command::new(llvm)
        .current_dir(dir.path())
        .args([
            "-unbundle",
            "-type=o",
            "-targets=hipv4-amdgcn-amd-amdhsa--gfx906",
            "-input=fatbin",
            "-output=llvm.co",
        ])
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(
        std::fs::read(dir.path().join("llvm.co")).unwrap(),
        std::fs::read(samples_dir().join("dev/kernel-gfx906.hsaco")).unwrap()
    );
}

#[test]
fn an_archive_is_stripped_member_by_member() {
    let dir = tempfile::tempdir().unwrap();
    copy_sample(dir.path(), "archive/libmulti.a", "m.a");
    let (code, _, err) = offload_in(
        dir.path(),
        &["strip", "m.a", "--keep", "gfx906", "--in-place"],
    );
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = offload_in(dir.path(), &["ls", "--json", "m.a"]);
    assert_eq!(code, 0, "{err}");
    let images: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    let arches: Vec<&str> = images.iter().map(|i| i["arch"].as_str().unwrap()).collect();
    assert_eq!(arches, ["gfx906", "", "gfx906", "", ""]);
    let bytes = std::fs::read(dir.path().join("m.a")).unwrap();
    let archive = object::read::archive::ArchiveFile::parse(&*bytes).unwrap();
    let names: Vec<String> = archive
        .members()
        .map(|m| String::from_utf8_lossy(m.unwrap().name()).into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "kernel-rdc.o",
            "vadd-rdc.o",
            "plain-host.o",
            "vadd908-rdc.o"
        ]
    );
    // The symbol table still names the host code.
    let symbols: Vec<String> = archive
        .symbols()
        .unwrap()
        .unwrap()
        .map(|s| String::from_utf8_lossy(s.unwrap().name()).into_owned())
        .collect();
    assert!(symbols.iter().any(|s| s == "host_only"), "{symbols:?}");
}

#[test]
fn openmp_images_go_by_target() {
    let dir = tempfile::tempdir().unwrap();
    copy_sample(dir.path(), "openmp/omp.o", "omp.o");
    let (code, _, err) = offload_in(
        dir.path(),
        &["strip", "omp.o", "--remove", "gfx906", "-o", "s.o"],
    );
    assert_eq!(code, 0, "{err}");
    let Some(objdump) = util::tool("llvm-objdump-19") else {
        return;
    };
    let out = Command::new(objdump)
        .current_dir(dir.path())
        .args(["--offloading", "s.o"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("OFFLOADING IMAGE").count(), 1, "{text}");
    assert!(text.contains("arch            gfx90a"), "{text}");
}

#[test]
fn in_place_keeps_permissions_and_failures_leave_the_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = copy_sample(dir.path(), "bundles/kernel.bc", "k.bc");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o750)).unwrap();
    let original = std::fs::read(&path).unwrap();

    let (code, out, _) = offload_in(
        dir.path(),
        &[
            "strip",
            "k.bc",
            "--keep",
            "gfx906",
            "--in-place",
            "--dry-run",
        ],
    );
    assert_eq!(code, 0);
    assert!(out.contains("2 device images would go to 1"), "{out}");
    assert_eq!(std::fs::read(&path).unwrap(), original);

    let (code, _, err) = offload_in(
        dir.path(),
        &["strip", "k.bc", "--keep", "gfx1030", "--in-place"],
    );
    assert_eq!(code, 1);
    assert!(
        err.contains("would remove every device image (2); give --allow-empty"),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), original);

    let (code, _, err) = offload_in(
        dir.path(),
        &["strip", "k.bc", "--keep", "gfx906", "--in-place"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o750
    );
    let (_, out, _) = offload_in(dir.path(), &["ls", "--json", "k.bc"]);
    let images: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    let ids: Vec<&str> = images
        .iter()
        .map(|i| i["entry_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "host-x86_64-unknown-linux-gnu-",
            "hipv4-amdgcn-amd-amdhsa--gfx906"
        ]
    );
    // No temporary file is left beside it.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 1);
}

#[test]
fn coff_objects_are_compressed_and_decompressed_and_still_link() {
    let dir = tempfile::tempdir().unwrap();
    copy_sample(dir.path(), "linked/kernel-msvc.obj", "k.obj");
    let (code, _, err) = offload_in(dir.path(), &["compress", "k.obj", "-o", "z.obj"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = offload_in(dir.path(), &["decompress", "z.obj", "-o", "d.obj"]);
    assert_eq!(code, 0, "{err}");
    let (_, out, _) = offload_in(dir.path(), &["ls", "--json", "z.obj"]);
    let images: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert!(images.iter().all(|i| i["compressed"] == true), "{out}");
    let (code, _, err) = offload_in(
        dir.path(),
        &["extract", "k.obj", "d.obj", "--arch", "gfx906", "-o", "x"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read(
            dir.path()
                .join("x/k.obj-hipv4-amdgcn-amd-amdhsa--gfx906.co")
        )
        .unwrap(),
        std::fs::read(
            dir.path()
                .join("x/d.obj-hipv4-amdgcn-amd-amdhsa--gfx906.co")
        )
        .unwrap()
    );
    let Some(lld_link) = util::tool("lld-link-19") else {
        return;
    };
    for object in ["z.obj", "d.obj"] {
        let link = Command::new(&lld_link)
            .current_dir(dir.path())
            .args([
                "/dll",
                "/noentry",
                "/nodefaultlib",
                "/force:unresolved",
                "/out:k.dll",
                object,
            ])
            .output()
            .unwrap();
        assert!(
            link.status.success(),
            "{object}: {}",
            String::from_utf8_lossy(&link.stderr)
        );
    }
}

/// The names of the files in `dir`, sorted.
#[test]
fn a_dry_run_needs_no_destination_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = copy_sample(dir.path(), "clang/kernel-fatbin.o", "k.o");
    let before = std::fs::read(&file).unwrap();
    let runs: [&[&str]; 3] = [
        &["strip", "k.o", "--keep", "gfx90a", "--dry-run"],
        &["compress", "k.o", "--dry-run"],
        &["decompress", "k.o", "--dry-run"],
    ];
    for args in runs {
        let (code, out, err) = offload_in(dir.path(), args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(
            out.starts_with("k.o: 2 device images would go to "),
            "{out}"
        );
        assert_eq!(file_names(dir.path()), ["k.o"]);
        assert_eq!(std::fs::read(&file).unwrap(), before);
    }
    let (code, out, _) = offload_in(
        dir.path(),
        &["strip", "k.o", "--keep", "gfx90a", "--dry-run"],
    );
    assert_eq!((code, out.as_str()), (0, "k.o: 2 device images would go to 1, 19536 bytes to 15440 (1 bundles or binaries rewritten)\n"));
    // Without --dry-run a destination is still needed.
    let (code, _, err) = offload_in(dir.path(), &["strip", "k.o", "--keep", "gfx90a"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--output"), "{err}");
    assert_eq!(file_names(dir.path()), ["k.o"]);
}

/// The members of the archive `bytes`: name and contents.
fn archive_members(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let archive = object::read::archive::ArchiveFile::parse(bytes).unwrap();
    archive
        .members()
        .map(|m| {
            let m = m.unwrap();
            (
                String::from_utf8_lossy(m.name()).into_owned(),
                m.data(bytes).unwrap().to_vec(),
            )
        })
        .collect()
}

/// `offload ls --json` of `file` in `dir`: (member, arch) of every image.
fn listed(dir: &Path, file: &str) -> Vec<(String, String)> {
    let (code, out, err) = offload_in(dir, &["ls", "--json", file]);
    assert_eq!(code, 0, "{err}");
    let images: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    images
        .iter()
        .map(|i| {
            (
                i["member"].as_str().unwrap_or_default().to_string(),
                i["arch"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn an_archive_inside_an_archive_is_stripped_too() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let inner = std::fs::read(samples_dir().join("archive/libmulti.a")).unwrap();
    let object = std::fs::read(samples_dir().join("archive/vadd-rdc.o")).unwrap();
    let outer = offload::host::archive::write_archive(
        Path::new("outer.a"),
        &[("libmulti.a", &inner), ("vadd-rdc.o", &object)],
    )
    .unwrap();
    std::fs::write(d.join("outer.a"), &outer).unwrap();

    let (code, out, err) = offload_in(d, &["strip", "outer.a", "--keep", "gfx906", "-o", "s.a"]);
    assert_eq!(code, 0, "{err}");
    let size = std::fs::metadata(d.join("s.a")).unwrap().len();
    assert_eq!(
        out,
        format!(
            "outer.a: 8 device images went to 3, {} bytes to {size} (4 bundles or binaries rewritten)\n",
            outer.len()
        )
    );
    let members = archive_members(&std::fs::read(d.join("s.a")).unwrap());
    let names: Vec<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["libmulti.a", "vadd-rdc.o"]);
    std::fs::write(d.join("inner.a"), &members[0].1).unwrap();
    let pair = |m: &str, a: &str| (m.to_string(), a.to_string());
    assert_eq!(
        listed(d, "inner.a"),
        [
            pair("kernel-rdc.o", "gfx906"),
            pair("kernel-rdc.o", ""),
            pair("vadd-rdc.o", "gfx906"),
            pair("vadd-rdc.o", ""),
            pair("vadd908-rdc.o", ""),
        ]
    );
    let inner_names: Vec<String> = archive_members(&members[0].1)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        inner_names,
        [
            "kernel-rdc.o",
            "vadd-rdc.o",
            "plain-host.o",
            "vadd908-rdc.o"
        ]
    );
    assert_eq!(
        listed(d, "s.a").len(),
        7,
        "the outer object keeps gfx906 and its host entry"
    );
}

#[test]
fn archives_nested_too_deep_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = std::fs::read(samples_dir().join("archive/libmulti.a")).unwrap();
    for _ in 0..10 {
        bytes = offload::host::archive::write_archive(Path::new("a"), &[("in.a", &bytes)]).unwrap();
    }
    std::fs::write(dir.path().join("deep.a"), &bytes).unwrap();
    let (code, _, err) = offload_in(
        dir.path(),
        &["strip", "deep.a", "--keep", "gfx906", "-o", "s.a"],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("archives nest more than 8 deep"), "{err}");
    assert!(!dir.path().join("s.a").exists());
}

#[test]
fn the_first_damaged_member_of_an_archive_is_the_one_reported() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(samples_dir().join("openmp/device.bin")).unwrap();
    let names: Vec<String> = (0..16).map(|i| format!("cut{i:02}.bin")).collect();
    let members: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &good[..100])).collect();
    let archive = offload::host::archive::write_archive(Path::new("cut.a"), &members).unwrap();
    std::fs::write(dir.path().join("cut.a"), archive).unwrap();
    for _ in 0..4 {
        let (code, _, err) = offload_in(
            dir.path(),
            &["strip", "cut.a", "--keep", "gfx90a", "--dry-run"],
        );
        assert_eq!(code, 1, "{err}");
        assert!(
            err.starts_with("offload strip: error: 'cut.a(cut00.bin)': "),
            "{err}"
        );
    }
}

/// The `verified` line a rewrite logs when it reads its output back, at `OFFLOAD_LOG=info`.
fn read_back_line(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(util::OFFLOAD)
        .current_dir(dir)
        .args(args)
        .env("OFFLOAD_LOG", "offload=info")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    err.lines()
        .find(|l| l.contains("verified streams="))
        .map(|l| l[l.find("verified").unwrap()..].to_string())
        .unwrap_or_else(|| panic!("no read-back logged: {err}"))
}

#[test]
fn the_read_back_knows_the_bundles_a_rewrite_compressed_and_inflates_the_others() {
    let dir = tempfile::tempdir().unwrap();
    // Three translation units, one of them already compressed.
    copy_sample(dir.path(), "linked/hip-app", "app");
    let line = read_back_line(dir.path(), &["compress", "app", "-o", "z"]);
    assert!(
        line.starts_with("verified streams=3 binaries=0 known=2 bad=0"),
        "{line}"
    );
    // Compressed again with the other method: all three made here.
    let line = read_back_line(
        dir.path(),
        &["compress", "--method", "zlib", "z", "-o", "zz"],
    );
    assert!(
        line.starts_with("verified streams=3 binaries=0 known=3 bad=0"),
        "{line}"
    );
    // Stripping leaves the plain bundles plain and compresses the kept part of the other.
    let line = read_back_line(dir.path(), &["strip", "--keep", "gfx90a", "app", "-o", "s"]);
    assert!(
        line.starts_with("verified streams=1 binaries=0 known=1 bad=0"),
        "{line}"
    );
    // A compressed bundle copied as it was is inflated and hashed: damage in it is found.
    let line = read_back_line(
        dir.path(),
        &["strip", "--keep", "gfx906", "z", "-o", "s906"],
    );
    assert!(line.contains("bad=0"), "{line}");
    let (code, out, err) = crate::util::text_output(
        Command::new(util::OFFLOAD)
            .current_dir(dir.path())
            .args(["verify", "zz", "s", "s906"]),
    );
    assert_eq!(code, 0, "{out}{err}");
}
