//! `offload extract` / `offload-extract`: which images a target ID selects, the bytes written,
//! the names given, device archives, and the failures.

use std::path::Path;
use std::process::Command;

use crate::util;
use crate::util::{file_names, offload, offload_extract_in, offload_in, samples_dir};

fn sample(path: &str) -> String {
    samples_dir().join(path).to_string_lossy().into_owned()
}

#[test]
fn a_target_id_selects_every_image_its_device_can_load() {
    let dir = tempfile::tempdir().unwrap();
    let rdc = sample("archive/kernel-rdc.o");
    let (code, _, err) = offload_extract_in(dir.path(), &[&rdc, "--arch", "gfx90a", "-o", "any"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        file_names(&dir.path().join("any")),
        [
            "kernel-rdc.o-hip-amdgcn-amd-amdhsa--gfx90a_xnack+.bc",
            "kernel-rdc.o-hip-amdgcn-amd-amdhsa--gfx90a_xnack-.bc"
        ]
    );
    let (code, _, err) =
        offload_extract_in(dir.path(), &[&rdc, "--arch", "gfx90a:xnack+", "-o", "on"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        file_names(&dir.path().join("on")),
        ["kernel-rdc.o-hip-amdgcn-amd-amdhsa--gfx90a_xnack+.bc"]
    );
    // gfx906 images leave xnack out: a gfx906:xnack- device loads them.
    let (code, _, err) =
        offload_extract_in(dir.path(), &[&rdc, "--arch", "gfx906:xnack-", "-o", "g906"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(file_names(&dir.path().join("g906")).len(), 1);
    let (code, _, err) = offload_extract_in(
        dir.path(),
        &[&rdc, "--arch", "gfx90a", "--exact", "-o", "exact"],
    );
    assert_eq!(code, 1);
    assert!(err.contains("no device image for gfx90a in"), "{err}");
    assert!(!dir.path().join("exact").exists());
}

#[test]
fn extracted_bytes_equal_what_llvm_unbundles() {
    let Some(llvm) = util::tool("clang-offload-bundler-19") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for (file, name) in [
        (
            "clang/kernel-fatbin.o",
            "kernel-fatbin.o-hipv4-amdgcn-amd-amdhsa--gfx90a.co",
        ),
        (
            "clang/kernel-fatbin-z.o",
            "kernel-fatbin-z.o-hipv4-amdgcn-amd-amdhsa--gfx90a.co",
        ),
    ] {
        let (code, _, err) = offload_extract_in(
            dir.path(),
            &[&sample(file), "--arch", "gfx90a", "-o", "out"],
        );
        assert_eq!(code, 0, "{err}");
        let ours = std::fs::read(dir.path().join("out").join(name)).unwrap();
        let theirs = dir.path().join("llvm.co");
        let status = Command::new(&llvm)
            .args([
                "-unbundle",
                "-type=o",
                "-targets=hipv4-amdgcn-amd-amdhsa--gfx90a",
            ])
            .arg(format!(
                "-input={}",
                sample("clang/kernel-fatbin.hip_fatbin")
            ))
            .arg(format!("-output={}", theirs.display()))
            .status()
            .unwrap();
        assert!(status.success());
        assert_eq!(ours, std::fs::read(&theirs).unwrap(), "{file}");
        assert!(ours.starts_with(b"\x7fELF"));
    }
}

#[test]
fn an_archive_gives_a_device_archive() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = offload_extract_in(
        dir.path(),
        &[
            &sample("archive/libmulti.a"),
            "--arch",
            "gfx90a:xnack+",
            "-o",
            "dev.a",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 2, "{out}");
    let bytes = std::fs::read(dir.path().join("dev.a")).unwrap();
    assert!(bytes.starts_with(b"!<arch>\n"));
    let archive = object::read::archive::ArchiveFile::parse(&*bytes).unwrap();
    let names: Vec<String> = archive
        .members()
        .map(|m| String::from_utf8_lossy(m.unwrap().name()).into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "kernel-rdc-hip-amdgcn-amd-amdhsa--gfx90a_xnack+kernel-rdc.bc",
            "vadd-rdc-hip-amdgcn-amd-amdhsa--gfx90avadd-rdc.bc"
        ]
    );
}

#[test]
fn names_from_entry_ids_never_leave_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = offload::format::bundle::to_vec(
        &[("hip-amdgcn/../../..-amd-amdhsa--gfx90a", b"code".as_slice())],
        1,
    );
    std::fs::write(dir.path().join("evil.bin"), &bundle).unwrap();
    let (code, _, err) =
        offload_extract_in(dir.path(), &["evil.bin", "--arch", "gfx90a", "-o", "out"]);
    assert_eq!(code, 0, "{err}");
    let names = file_names(&dir.path().join("out"));
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(!names[0].contains('/'));
    assert_eq!(
        std::fs::read(dir.path().join("out").join(&names[0])).unwrap(),
        b"code"
    );
    // Nothing was written beside the folder.
    assert_eq!(file_names(dir.path()), ["evil.bin", "out"]);
}

#[test]
fn filters_on_triple_and_kind() {
    let dir = tempfile::tempdir().unwrap();
    let args = |kind: &str, out: &str| -> (i32, String, String) {
        offload_extract_in(
            dir.path(),
            &[
                &sample("openmp/omp.o"),
                &sample("clang/kernel-fatbin.o"),
                "--arch",
                "gfx906",
                "--kind",
                kind,
                "--triple",
                "amdgcn-amd-amdhsa",
                "-o",
                out,
            ],
        )
    };
    let (code, out, err) = args("openmp", "omp");
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.lines().filter(|l| !l.starts_with("total")).count(),
        1,
        "{out}"
    );
    assert_eq!(
        file_names(&dir.path().join("omp")),
        ["omp.o-openmp-amdgcn-amd-amdhsa-gfx906.bc"]
    );
    let (code, out, err) = args("hip", "hip");
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.lines().filter(|l| !l.starts_with("total")).count(),
        1,
        "{out}"
    );
}

/// The damage `offload ls` reports for `file`, each line without the program name.
fn ls_damage(file: &Path) -> Vec<String> {
    let out = offload().arg("ls").arg(file).output().unwrap();
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(|l| l.strip_prefix("offload ls: ").unwrap_or(l).to_string())
        .collect()
}

#[test]
fn damage_is_reported_before_no_image_is() {
    let mut damaged: Vec<(std::path::PathBuf, Vec<String>)> =
        std::fs::read_dir(samples_dir().join("damaged"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| {
                let damage = ls_damage(&p);
                (p, damage)
            })
            .filter(|(_, damage)| !damage.is_empty())
            .collect();
    damaged.sort();
    assert!(damaged.len() >= 10, "{damaged:?}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let no_image = |files: &[&Path]| {
        let names: Vec<String> = files.iter().map(|f| format!("'{}'", f.display())).collect();
        format!("error: no device image for gfx90a in {}", names.join(", "))
    };
    for (file, damage) in &damaged {
        let (code, stdout, stderr) = offload_extract_in(
            dir.path(),
            &[
                file.to_str().unwrap(),
                "--arch",
                "gfx90a",
                "-o",
                out.to_str().unwrap(),
            ],
        );
        assert_eq!(code, 1, "{}: {stderr}", file.display());
        assert_eq!(stdout, "");
        let mut want: Vec<String> = damage.clone();
        want.push(no_image(&[file]));
        let got: Vec<&str> = stderr
            .lines()
            .map(|l| l.strip_prefix("offload-extract: ").unwrap_or(l))
            .collect();
        assert_eq!(got, want, "{}", file.display());
        assert!(file_names(&out).is_empty(), "{}", file.display());
    }
    // Several files: the damage of each, in order, then the one failure.
    let files: Vec<&Path> = damaged.iter().map(|(f, _)| f.as_path()).collect();
    let mut args: Vec<&str> = files.iter().map(|f| f.to_str().unwrap()).collect();
    args.extend(["--arch", "gfx90a", "-o", out.to_str().unwrap()]);
    let (code, _, stderr) = offload_extract_in(dir.path(), &args);
    assert_eq!(code, 1, "{stderr}");
    let mut want: Vec<String> = damaged.iter().flat_map(|(_, d)| d.clone()).collect();
    want.push(no_image(&files));
    let got: Vec<&str> = stderr
        .lines()
        .map(|l| l.strip_prefix("offload-extract: ").unwrap_or(l))
        .collect();
    assert_eq!(got, want);
}

/// `offload extract` with the given arguments, run in `dir`.
fn offload_extract(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["extract"];
    all.extend_from_slice(args);
    offload_in(dir, &all)
}

#[test]
fn verbose_names_the_images_chosen_and_the_files_written() {
    let dir = tempfile::tempdir().unwrap();
    let fat = sample("bundles/vadd-fat.o");
    let written_as = "vadd-fat.o-hipv4-amdgcn-amd-amdhsa--gfx90a.co";

    let (code, quiet_out, quiet_err) =
        offload_extract(dir.path(), &[&fat, "--arch", "gfx90a", "-o", "quiet"]);
    assert_eq!(code, 0, "{quiet_err}");
    assert_eq!(quiet_err, "", "without -v, standard error stays empty");

    let (code, out, err) =
        offload_extract(dir.path(), &[&fat, "--arch", "gfx90a", "-v", "-o", "loud"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        quiet_out.replace("quiet/", "loud/"),
        "the log stays off stdout"
    );
    let chosen: Vec<&str> = err.lines().filter(|l| l.contains("chose ")).collect();
    assert_eq!(chosen.len(), 1, "{err}");
    assert!(
        chosen[0].contains("hipv4-amdgcn-amd-amdhsa--gfx90a"),
        "{err}"
    );
    assert!(
        err.lines()
            .any(|l| l.contains("writing hipv4-amdgcn-amd-amdhsa--gfx90a to")
                && l.contains(&format!("loud/{written_as}"))),
        "{err}"
    );
    assert!(
        !err.contains("DEBUG"),
        "one -v logs information, not details: {err}"
    );
    assert_eq!(file_names(&dir.path().join("loud")), [written_as]);

    let (code, _, err) = offload_extract(
        dir.path(),
        &[&fat, "--arch", "gfx90a", "-vv", "-o", "details"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("DEBUG") && err.contains("passed over gfx906"),
        "{err}"
    );
}

/// Entries for processors LLVM 19's table lacks (written as LLVM 22 writes them, and as LLVM
/// 19 does, with a `-` after the processor) are listed, extracted, kept and removed by their
/// processor, never taken for part of the triple.
#[test]
fn processors_llvm_19_does_not_know_are_listed_extracted_and_stripped() {
    let dir = tempfile::tempdir().unwrap();
    let entries: [(&str, &[u8]); 5] = [
        ("host-x86_64-unknown-linux-gnu-", b""),
        ("hipv4-amdgcn-amd-amdhsa--gfx942", b"code for gfx942"),
        ("hipv4-amdgcn-amd-amdhsa--gfx950", b"code for gfx950"),
        ("hipv4-amdgcn-amd-amdhsa--gfx1250-", b"code for gfx1250"),
        (
            "hipv4-amdgcn-amd-amdhsa--gfx1399:xnack+",
            b"code for gfx1399",
        ),
    ];
    let bundle = dir.path().join("new.hipfb");
    std::fs::write(&bundle, offload::format::bundle::to_vec(&entries, 4096)).unwrap();
    let bundle_arg = bundle.to_str().unwrap();

    let (code, listing, _) = offload_in(dir.path(), &["ls", "--json", bundle_arg]);
    assert_eq!(code, 0);
    let images: serde_json::Value = serde_json::from_str(&listing).unwrap();
    let seen: Vec<(String, String)> = images
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["triple"].as_str().unwrap().into(),
                i["arch"].as_str().unwrap().into(),
            )
        })
        .collect();
    let expected = [
        ("x86_64-unknown-linux-gnu", ""),
        ("amdgcn-amd-amdhsa", "gfx942"),
        ("amdgcn-amd-amdhsa", "gfx950"),
        ("amdgcn-amd-amdhsa", "gfx1250"),
        ("amdgcn-amd-amdhsa", "gfx1399:xnack+"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(t, a)| (t.to_string(), a.to_string()))
        .collect();
    assert_eq!(seen, expected);
    let classes: Vec<&str> = images
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["processor"].as_str().unwrap_or("null"))
        .collect();
    assert_eq!(classes, ["null", "native", "native", "native", "unknown"]);
    let (code, table, _) = offload_in(dir.path(), &["ls", bundle_arg]);
    assert_eq!(code, 0);
    let unknown: Vec<&str> = table
        .lines()
        .filter(|l| l.contains("(unknown processor)"))
        .collect();
    assert_eq!(unknown.len(), 1, "{table}");
    assert!(
        unknown[0].contains(" gfx1399:xnack+ (unknown processor) "),
        "{table}"
    );

    for (arch, bytes) in [
        ("gfx950", &b"code for gfx950"[..]),
        ("gfx1399", b"code for gfx1399"),
    ] {
        let out = dir.path().join(arch);
        let (code, _, err) = offload_in(
            dir.path(),
            &[
                "extract",
                bundle_arg,
                "--arch",
                arch,
                "-o",
                out.to_str().unwrap(),
            ],
        );
        assert_eq!(code, 0, "{err}");
        let names = file_names(&out);
        assert_eq!(names.len(), 1, "{names:?}");
        assert_eq!(std::fs::read(out.join(&names[0])).unwrap(), bytes);
    }

    let kept = dir.path().join("kept.hipfb");
    let (code, _, err) = offload_in(
        dir.path(),
        &[
            "strip",
            bundle_arg,
            "--keep",
            "gfx942",
            "-o",
            kept.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let (_, listing, _) = offload_in(dir.path(), &["ls", "--json", kept.to_str().unwrap()]);
    assert!(
        listing.contains("\"gfx942\"") && !listing.contains("gfx950"),
        "{listing}"
    );
    let removed = dir.path().join("removed.hipfb");
    let (code, summary, err) = offload_in(
        dir.path(),
        &[
            "strip",
            bundle_arg,
            "--remove",
            "gfx950",
            "-o",
            removed.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(summary.contains("4 device images went to 3"), "{summary}");
}
