//! `offload packager` against clang-offload-packager-19 and llvm-offload-binary-22: every case
//! is checked, as LLVM 19, against LLVM 19's results stored in tests/golden-packager/ (exit
//! status, stdout, output files, error and warning texts) and, when the tools are installed,
//! against a live run of each, as the release that tool is.
//!
//! `OFFLOAD_WRITE_GOLDEN=1 cargo test --test main packager::` rewrites the stored results from
//! LLVM 19.

use std::fs;
use std::path::{Path, PathBuf};

use crate::util;
use crate::util::cases::{
    self, compare, load_golden_from, run_tool, Case, Expected, Outcome, Status, Tool,
};
use crate::util::{offload, root, samples_dir, visible, OFFLOAD};

/// The reference packagers, with the release `OFFLOAD_LLVM_VERSION` makes ours stand in for.
const REFERENCES: [(&str, &str); 2] = [
    ("clang-offload-packager-19", "19"),
    ("llvm-offload-binary-22", "22"),
];

/// (name, arguments); `{S}` is the samples folder, `{O}` the output folder (also the working
/// folder), `{DEVICERTL}` LLVM 19's `libomptarget.devicertl.a`. Cases whose name starts with `live-` are only run beside LLVM, never stored: their
/// outputs hold the absolute path of the samples folder (archive member names, keys).
const CASES: &[(&str, &str)] = &[
    ("pack-one", "-o {O}/one.bin --image=file={S}/dev/vadd-gfx906.hsaco,triple=amdgcn-amd-amdhsa,arch=gfx906,kind=hip"),
    ("pack-two-images", "-o {O}/two.bin --image=file={S}/dev/vadd-gfx906.bc,triple=amdgcn-amd-amdhsa,arch=gfx906,kind=openmp --image=file={S}/dev/kernel-gfx90a_xnack+.hsaco,triple=amdgcn-amd-amdhsa,arch=gfx90a:xnack+,kind=hip"),
    ("pack-repeated-file-key", "-o {O}/r.bin --image=file={S}/dev/vadd-gfx906.hsaco,file={S}/dev/vadd-gfx90a.hsaco,triple=amdgcn-amd-amdhsa,arch=gfx906,kind=openmp"),
    ("pack-extra-keys", "-o {O}/x.bin --image=file={S}/dev/kernel-gfx906.s,triple=amdgcn-amd-amdhsa,arch=gfx906,feature=+xnack,producer=someone,zzz=1,kind=cuda"),
    ("pack-bare-item", "-o {O}/b.bin --image=file={S}/dev/vadd-gfx906.hsaco,vadd-gfx90a.hsaco,triple=t"),
    ("pack-no-images", "-o {O}/empty.bin"),
    ("pack-nothing", ""),
    ("err-pack-no-triple", "-o {O}/x.bin --image=file={S}/dev/vadd-gfx906.hsaco,arch=gfx906"),
    ("err-pack-no-file", "-o {O}/x.bin --image=triple=amdgcn-amd-amdhsa,arch=gfx906"),
    ("pack-kinds", "-o {O}/k.bin --image=file={S}/dev/vadd-gfx906.hsaco,triple=t,kind=hip --image=file={S}/dev/vadd-gfx906.hsaco,triple=t,kind=sycl --image=file={S}/dev/vadd-gfx906.hsaco,triple=t,kind=openmp"),
    ("pack-archive-flag-only", "--archive"),
    ("err-pack-missing-file", "-o {O}/x.bin --image=file={S}/dev/nope.o,triple=t"),
    ("err-pack-and-unpack", "{S}/openmp/omp.o -o {O}/x.bin"),
    ("err-two-inputs", "{S}/openmp/omp.o {S}/openmp/omp-lto.o"),
    ("err-unknown-option", "--imag=file=x"),
    ("err-unpack-missing-input", "{S}/openmp/nope.o --image=triple=t"),
    ("unpack-nothing-asked", "{S}/openmp/omp.o"),
    ("unpack-by-triple", "{S}/openmp/omp.o --image=triple=amdgcn-amd-amdhsa"),
    ("unpack-kind-and-arch", "{S}/openmp/omp.o --image=kind=openmp,arch=gfx906 --image=arch=gfx90a,file={O}/one.bc"),
    ("unpack-many-to-one-file", "{S}/openmp/omp.o --image=triple=amdgcn-amd-amdhsa,file={O}/both.bc"),
    ("unpack-partial-link", "{S}/openmp/partial.o --image=kind=openmp"),
    ("unpack-lto", "{S}/openmp/omp-lto.o --image=arch=gfx90a"),
    ("unpack-no-match", "{S}/openmp/omp.o --image=arch=gfx1030"),
    ("unpack-hip-kind", "{S}/openmp/hip-rdc.o --image=kind=hip"),
    ("unpack-elf-image", "{S}/openmp/embedded.o --image=triple=amdgcn-amd-amdhsa"),
    ("unpack-raw-binary", "{S}/openmp/device.bin --image=triple=amdgcn-amd-amdhsa"),
    ("unpack-our-packed", "{S}/openmp/omp.o --image=arch=gfx906,file={O}/a.bc"),
    ("unpack-archive", "{S}/openmp/libomp.a --image=arch=gfx90a"),
    ("unpack-to-archive", "{S}/openmp/libomp.a --archive --image=triple=amdgcn-amd-amdhsa,file={O}/dev.a"),
    ("live-unpack-object-to-archive", "{S}/openmp/omp.o --archive --image=arch=gfx906,file={O}/dev.a"),
    ("err-archive-without-file", "{S}/openmp/libomp.a --archive --image=triple=amdgcn-amd-amdhsa"),
    ("live-devicertl", "{DEVICERTL} --image=arch=gfx90a --image=arch=gfx906,file={O}/last.bc"),
];

fn golden_root() -> PathBuf {
    root().join("tests/golden-packager")
}

fn case(name: &str, args: &str) -> Case {
    let line = format!("{name}: {args}");
    cases::parse_cases(&line)
        .expect("a valid case line")
        .pop()
        .expect("one case")
}

fn run(tool: &Tool, c: &Case) -> Outcome {
    run_tool(tool, &c.args, &[], None)
}

/// Runs `offload packager` as LLVM `release`.
fn run_ours(c: &Case, release: &str) -> Outcome {
    let env = [("OFFLOAD_LLVM_VERSION".to_string(), release.to_string())];
    run_tool(&Tool::new(OFFLOAD, &["packager"]), &c.args, &env, None)
}

fn store(c: &Case, llvm: &Outcome) {
    let dir = golden_root().join(&c.name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("out")).unwrap();
    let code = match llvm.status {
        Status::Exited(code) => code,
        other => panic!("{}: LLVM did not exit normally: {other}", c.name),
    };
    fs::write(dir.join("exit"), format!("{code}\n")).unwrap();
    fs::write(dir.join("stdout"), &llvm.stdout).unwrap();
    fs::write(dir.join("stderr"), &llvm.stderr).unwrap();
    for (name, bytes) in &llvm.outputs {
        let path = dir.join("out").join(cases::golden_file_name(name));
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, bytes).unwrap();
    }
}

fn report(what: &str, failures: Vec<String>, count: usize) {
    visible(&format!("{what}: {count} cases, {} failed", failures.len()));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn golden() {
    let mut failures = Vec::new();
    let mut count = 0;
    for (name, args) in CASES.iter().filter(|(n, _)| !n.starts_with("live-")) {
        let c = case(name, args);
        count += 1;
        match load_golden_from(&golden_root(), &c) {
            Ok(expected) => {
                let problems = compare(&c, &expected, &run_ours(&c, "19"));
                if !problems.is_empty() {
                    failures.push(format!("--- {name}\n  {}", problems.join("\n  ")));
                }
            }
            Err(e) => failures.push(format!("--- {name}: {e}")),
        }
    }
    report("packager golden", failures, count);
}

#[test]
fn differential() {
    for (reference, release) in REFERENCES {
        if let Some(llvm) = util::tool(reference) {
            differential_with(&llvm, release);
        }
    }
}

/// Our binary started through a link with the file name of `llvm` (which chooses the release
/// it stands in for, and names the program in the help as LLVM's does), in `dir`.
fn ours_named_as(llvm: &Path, dir: &Path) -> Tool {
    let link = dir.join(llvm.file_name().expect("a tool has a file name"));
    std::os::unix::fs::symlink(OFFLOAD, &link).unwrap();
    Tool::new(link, &[])
}

/// Every case run by `llvm` and by our binary started as `llvm`'s name; LLVM 19's results are
/// stored when `OFFLOAD_WRITE_GOLDEN=1`.
fn differential_with(llvm: &Path, release: &str) {
    let write = std::env::var("OFFLOAD_WRITE_GOLDEN").as_deref() == Ok("1") && release == "19";
    let links = tempfile::tempdir().unwrap();
    let ours = ours_named_as(llvm, links.path());
    let llvm = Tool::new(llvm, &[]);
    let mut failures = Vec::new();
    let mut count = 0;
    for (name, args) in CASES {
        let args = match args.contains("{DEVICERTL}") {
            true => match util::devicertl() {
                Some(file) => args.replace("{DEVICERTL}", &file.to_string_lossy()),
                None => continue,
            },
            false => args.to_string(),
        };
        let c = case(name, &args);
        count += 1;
        let theirs = run(&llvm, &c);
        if write && !name.starts_with("live-") {
            store(&c, &theirs);
        }
        let problems = match Expected::from_llvm(&theirs) {
            Ok(expected) => compare(&c, &expected, &run(&ours, &c)),
            Err(e) => vec![e],
        };
        if !problems.is_empty() {
            failures.push(format!("--- {name}\n  {}", problems.join("\n  ")));
        }
    }
    report(
        &format!("packager differential against {}", llvm.program.display()),
        failures,
        count,
    );
}

#[test]
fn a_link_named_clang_offload_packager_is_the_packager() {
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("clang-offload-packager");
    std::os::unix::fs::symlink(OFFLOAD, &link).unwrap();
    let out = std::process::Command::new(&link)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with(
            "OVERVIEW: A utility for bundling several object files into a single binary."
        ),
        "{text}"
    );
    // As LLVM, the usage line names the program by its file name.
    assert!(
        text.contains("USAGE: clang-offload-packager [options] Extract from <file>."),
        "{text}"
    );
}

/// Unpacks `bytes` (written as `bad.bin`) and returns the exit status and stderr.
fn unpack_damaged(bytes: &[u8]) -> (Option<i32>, String, usize) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.bin"), bytes).unwrap();
    let out = offload()
        .current_dir(dir.path())
        .args(["packager", "bad.bin", "--image=triple=amdgcn-amd-amdhsa"])
        .output()
        .unwrap();
    let left = std::fs::read_dir(dir.path()).unwrap().count() - 1;
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        left,
    )
}

#[test]
fn damaged_binaries_are_clear_errors_with_file_and_offset() {
    let good = std::fs::read(samples_dir().join("openmp/device.bin")).unwrap();
    let cases: [(&str, usize, Vec<u8>, &str); 4] = [
        (
            "unknown version",
            4,
            99u32.to_le_bytes().to_vec(),
            "version",
        ),
        (
            "size smaller than the header",
            8,
            16u64.to_le_bytes().to_vec(),
            "offset 0x8",
        ),
        (
            "string table outside",
            32 + 8,
            0xffff_0000u64.to_le_bytes().to_vec(),
            "offset 0x28",
        ),
        (
            "image outside",
            32 + 24,
            0x7fff_0000u64.to_le_bytes().to_vec(),
            "offset 0x38",
        ),
    ];
    for (what, at, value, expect) in cases {
        let mut bytes = good.clone();
        bytes[at..at + value.len()].copy_from_slice(&value);
        let (code, err, left) = unpack_damaged(&bytes);
        assert_eq!(code, Some(1), "{what}: {err}");
        assert!(
            err.contains("'bad.bin'") && err.contains(expect),
            "{what}: {err}"
        );
        assert_eq!(left, 0, "{what}: outputs left behind");
    }
    // From the whole magic on, a short file is a truncated binary.
    for cut in [4, 31, 32, 72, 100, good.len() - 1] {
        let (code, err, left) = unpack_damaged(&good[..cut]);
        assert_eq!(code, Some(1), "cut at {cut}: {err}");
        assert!(err.contains("'bad.bin'"), "cut at {cut}: {err}");
        assert_eq!(left, 0);
    }
}

#[test]
fn every_damaged_binary_is_reported_in_file_order() {
    let good = std::fs::read(samples_dir().join("openmp/device.bin")).unwrap();
    let archive = offload::host::archive::write_archive(
        Path::new("two.a"),
        &[
            ("cut1.bin", &good[..100]),
            ("good.bin", &good),
            ("cut2.bin", &good[..60]),
        ],
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("two.a"), archive).unwrap();
    let out = offload()
        .current_dir(dir.path())
        .args(["packager", "two.a", "--image=triple=amdgcn-amd-amdhsa"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "{err}");
    assert!(
        lines[0].starts_with("offload packager: error: 'two.a': member 'cut1.bin': offset "),
        "{err}"
    );
    assert!(
        lines[1].starts_with("offload packager: error: 'two.a': member 'cut2.bin': offset "),
        "{err}"
    );
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "outputs left");
}

/// Each name our binary answers to as a packager of LLVM 22 or 19, and where the reference
/// program of that name is: on `PATH` (`None`), or in that LLVM release's `bin` folder, where
/// alone Debian installs LLVM 22's unversioned names.
const NAMED_REFERENCES: [(&str, Option<&str>); 5] = [
    ("clang-offload-packager-19", None),
    ("clang-offload-packager-22", None),
    ("llvm-offload-binary-22", None),
    ("llvm-offload-binary", Some("22")),
    ("clang-offload-packager", Some("22")),
];

/// Runs `program args` in `dir`: exit code, stdout, and stderr with `program` written `PROG`.
fn run_named(program: &Path, args: &[&str], dir: &Path) -> (Option<i32>, Vec<u8>, String) {
    let out = std::process::Command::new(program)
        .args(args)
        .current_dir(dir)
        .env_remove("OFFLOAD_LLVM_VERSION")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).replace(&*program.to_string_lossy(), "PROG");
    (out.status.code(), out.stdout, stderr)
}

#[test]
fn each_name_prints_its_own_help_and_warnings() {
    let args: &[&[&str]] = &[
        &["--help"],
        &["--help-hidden"],
        &["--help-list"],
        &["--help-list-hidden"],
        &["-h"],
        &[],
        &["--archive"],
        &["-o", "x.bin", "--image=file=a.o,triple=t"],
        &["-o", "y.bin"],
        &["a.bin", "b.bin"],
        &["--bogus"],
    ];
    let mut failures = Vec::new();
    let mut count = 0;
    for (name, release) in NAMED_REFERENCES {
        let reference = match release {
            Some(release) => util::llvm_bin_tool(name, release),
            None => util::tool(name),
        };
        let Some(reference) = reference else {
            continue;
        };
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join(name);
        std::os::unix::fs::symlink(OFFLOAD, &link).unwrap();
        fs::write(dir.path().join("a.o"), b"an image").unwrap();
        for args in args {
            count += 1;
            let ours = run_named(&link, args, dir.path());
            let theirs = run_named(&reference, args, dir.path());
            // LLVM's parser also suggests a near option ("Did you mean"); we need not.
            let first_line = |(code, out, err): &(Option<i32>, Vec<u8>, String)| {
                (*code, out.clone(), err.lines().next().map(str::to_string))
            };
            if first_line(&ours) != first_line(&theirs) {
                failures.push(format!(
                    "{name} {args:?}:\n  ours:  {:?} {:?}\n  LLVM:  {:?} {:?}",
                    ours.0, ours.2, theirs.0, theirs.2
                ));
            }
        }
    }
    report("packager names", failures, count);
}

#[test]
fn only_llvm22_started_as_clang_offload_packager_warns() {
    let dir = tempfile::tempdir().unwrap();
    let warning =
        "warning: 'clang-offload-packager' is deprecated. Use 'llvm-offload-binary' instead.\n";
    for (name, release, warns) in [
        ("clang-offload-packager", None, true),
        ("clang-offload-packager.exe", None, true),
        ("clang-offload-packager", Some("19"), false),
        ("clang-offload-packager-22", None, false),
        ("llvm-offload-binary", None, false),
        ("llvm-offload-binary-22", None, false),
        ("clang-offload-packager-19", None, false),
    ] {
        let link = dir.path().join(name);
        let _ = fs::remove_file(&link);
        std::os::unix::fs::symlink(OFFLOAD, &link).unwrap();
        let mut command = std::process::Command::new(&link);
        command.args(["-o", "out.bin"]).current_dir(dir.path());
        match release {
            Some(release) => command.env("OFFLOAD_LLVM_VERSION", release),
            None => command.env_remove("OFFLOAD_LLVM_VERSION"),
        };
        let out = command.output().unwrap();
        assert!(out.status.success(), "{name}");
        let expected = if warns { warning } else { "" };
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            expected,
            "{name} {release:?}"
        );
    }
}

/// An offload binary file holding one image of each HIP encoding (3 and 4), a SYCL image (8)
/// and one of no kind (0), each with its kind's value as its bytes.
fn kinds_file(dir: &Path) -> PathBuf {
    use offload::format::offload_binary::{write_v1, ImageKind, OffloadKind};
    let strings: &[(&[u8], &[u8])] = &[(b"triple", b"amdgcn-amd-amdhsa"), (b"arch", b"gfx90a")];
    let mut bytes = Vec::new();
    for raw in [3u16, 4, 8, 0] {
        let image = format!("kind {raw}");
        let kind = OffloadKind::from_raw(raw);
        bytes.extend(write_v1(
            ImageKind::Object,
            kind,
            0,
            strings,
            image.as_bytes(),
        ));
    }
    let path = dir.join("kinds.bin");
    fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn each_release_unpacks_the_hip_kind_it_writes() {
    let inputs = tempfile::tempdir().unwrap();
    let file = kinds_file(inputs.path());
    let file = file.to_string_lossy();
    let expected = [("19", "kind 3"), ("22", "kind 4")];
    for (release, hip) in expected {
        for (kind, image) in [
            ("hip", hip),
            ("sycl", if release == "22" { "kind 8" } else { "kind 0" }),
            ("none", "kind 0"),
        ] {
            let c = case(
                "kinds",
                &format!("{file} --image=kind={kind},file={{O}}/out.o"),
            );
            let ours = run_ours(&c, release);
            assert_eq!(
                ours.status,
                Status::Exited(0),
                "{release} {kind}: {}",
                ours.stderr
            );
            assert_eq!(
                ours.outputs.get("out.o").map(Vec::as_slice),
                Some(image.as_bytes()),
                "{release} {kind}"
            );
        }
    }
    for (reference, release) in REFERENCES {
        let Some(llvm) = util::tool(reference) else {
            continue;
        };
        for kind in ["hip", "sycl", "none", "openmp", "cuda"] {
            let c = case("kinds", &format!("{file} --image=kind={kind}"));
            let theirs = run(&Tool::new(&llvm, &[]), &c);
            let problems = match Expected::from_llvm(&theirs) {
                Ok(expected) => compare(&c, &expected, &run_ours(&c, release)),
                Err(e) => vec![e],
            };
            assert!(problems.is_empty(), "{reference} kind={kind}: {problems:?}");
        }
    }
}

#[test]
fn offload_binaries_of_later_versions_are_refused_as_llvm_refuses_them() {
    use offload::format::offload_binary::{write, ImageKind, OffloadKind, OffloadingImage};
    let dir = tempfile::tempdir().unwrap();
    let strings: &[(&[u8], &[u8])] = &[(b"triple", b"amdgcn-amd-amdhsa"), (b"arch", b"gfx90a")];
    let image = OffloadingImage {
        image_kind: ImageKind::Object,
        offload_kind: OffloadKind::OpenMp,
        flags: 0,
        strings,
        image: b"an image",
    };
    for version in [2u32, 3] {
        let path = dir.path().join(format!("v{version}.bin"));
        fs::write(&path, write(version, &[image]).unwrap()).unwrap();
        let c = case(
            "later",
            &format!("{} --image=triple=amdgcn-amd-amdhsa", path.display()),
        );
        for (_, release) in REFERENCES {
            let ours = run_ours(&c, release);
            assert_eq!(ours.status, Status::Exited(1), "v{version} as {release}");
            assert!(ours.outputs.is_empty(), "v{version} as {release}");
            assert!(
                ours.stderr.contains(&format!(
                    "offset 0x4: offload binary version {version}: clang-offload-packager 19 and llvm-offload-binary 22 read version 1 only"
                )),
                "{}",
                ours.stderr
            );
        }
        for (reference, _) in REFERENCES {
            let Some(llvm) = util::tool(reference) else {
                continue;
            };
            let theirs = run(&Tool::new(&llvm, &[]), &c);
            assert_eq!(theirs.status, Status::Exited(1), "{reference} v{version}");
            assert!(theirs.outputs.is_empty());
            assert!(theirs
                .stderr
                .contains("Invalid data was encountered while parsing the file"));
        }
    }
}
