//! Standard output that cannot be written (a full disk, a pipe whose reader has gone) is an
//! error like any other: every command and personality says so on standard error, names
//! standard output, and exits with status 1 instead of panicking or claiming success. The
//! files a command writes are still written whole.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::util::{samples_dir, OFFLOAD};

/// Where a command's standard output goes in these tests.
#[derive(Debug, Clone, Copy)]
enum Sink {
    /// `/dev/full`: every write fails with "No space left on device".
    Full,
    /// A pipe whose read end is closed: every write fails with "Broken pipe".
    ClosedPipe,
}

impl Sink {
    fn stdio(self) -> Stdio {
        match self {
            Sink::Full => Stdio::from(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open("/dev/full")
                    .unwrap(),
            ),
            Sink::ClosedPipe => closed_pipe(),
        }
    }
}

/// The write end of a pipe whose read end is closed everywhere: the read end goes to a `true`
/// process, which has exited by the time this returns. A process another test thread forks at
/// the same moment may hold a copy of the read end until it starts its program, so the pipe
/// is written to until that fails: from then on no process can read it.
fn closed_pipe() -> Stdio {
    use std::io::Write;
    let mut reader = Command::new("true").stdin(Stdio::piped()).spawn().unwrap();
    let mut write_end = reader.stdin.take().unwrap();
    reader.wait().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while write_end.write_all(b"x").is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "the read end of the pipe stays open"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    Stdio::from(write_end)
}

/// Runs `program` with `args` in `dir`, standard output going to `sink`; returns the exit
/// status and standard error.
fn run_into(program: &Path, dir: &Path, args: &[&str], sink: Sink) -> (Option<i32>, String) {
    let out = Command::new(program)
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(sink.stdio())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn offload_bin() -> &'static Path {
    Path::new(OFFLOAD)
}

/// Asserts that the command failed cleanly because of its standard output.
fn assert_reported(what: &str, sink: Sink, code: Option<i32>, stderr: &str) {
    assert_eq!(
        code,
        Some(1),
        "{what} into {sink:?}: exit status {code:?}\n{stderr}"
    );
    assert!(
        stderr.contains("error: standard output: "),
        "{what} into {sink:?}: standard output not named:\n{stderr}"
    );
    assert!(
        !stderr.contains("panicked"),
        "{what} into {sink:?}: panicked:\n{stderr}"
    );
}

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        samples_dir().join("bundles/vadd-fat.o"),
        dir.path().join("f.o"),
    )
    .unwrap();
    std::fs::copy(
        samples_dir().join("bundles/kernel.bc"),
        dir.path().join("k.bc"),
    )
    .unwrap();
    dir
}

#[test]
fn commands_that_only_print_report_a_failed_standard_output() {
    let commands: &[&[&str]] = &[
        &["--help"],
        &["help"],
        &["--version"],
        &["ls", "f.o"],
        &["ls", "--json", "f.o"],
        &["ls", "--uri", "k.bc"],
        &["ls", "--help"],
        &["strip", "--help"],
        &["compress", "--help"],
        &["decompress", "--help"],
        &["extract", "--help"],
        &["extract", "f.o", "--arch", "gfx90a", "-o", "x"],
        &["bundler", "-type=o", "-input=f.o", "-list"],
        &["bundler", "--help"],
        &["bundler", "--version"],
        &["packager", "--help"],
        &["packager", "--version"],
        &["wrapper", "--help"],
        &["wrapper", "--version"],
    ];
    let dir = setup();
    for sink in [Sink::Full, Sink::ClosedPipe] {
        for args in commands {
            let (code, stderr) = run_into(offload_bin(), dir.path(), args, sink);
            assert_reported(&args.join(" "), sink, code, &stderr);
        }
    }
}

#[test]
fn the_personalities_report_a_failed_standard_output() {
    let dir = setup();
    let links = [
        (
            "clang-offload-bundler",
            &["-type=o", "-input=f.o", "-list"][..],
        ),
        ("clang-offload-packager", &["--help"][..]),
        ("clang-offload-wrapper", &["--version"][..]),
        (
            "offload-extract",
            &["f.o", "--arch", "gfx906", "-o", "y"][..],
        ),
    ];
    for (name, args) in links {
        let link = dir.path().join(name);
        std::os::unix::fs::symlink(offload_bin(), &link).unwrap();
        for sink in [Sink::Full, Sink::ClosedPipe] {
            let (code, stderr) = run_into(&link, dir.path(), args, sink);
            assert_reported(name, sink, code, &stderr);
            assert!(
                stderr.contains(&format!("{name}: error: standard output")),
                "{name}: {stderr}"
            );
        }
    }
}

#[test]
fn rewrites_are_done_whole_before_the_summary_fails() {
    let dir = setup();
    let d = dir.path();
    let normal = |args: &[&str]| {
        let out = Command::new(offload_bin())
            .current_dir(d)
            .args(args)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    normal(&["strip", "f.o", "--keep", "gfx90a", "-o", "strip.want"]);
    normal(&["compress", "f.o", "-o", "compress.want"]);
    normal(&["decompress", "compress.want", "-o", "decompress.want"]);
    for sink in [Sink::Full, Sink::ClosedPipe] {
        let runs: [(&str, &[&str]); 4] = [
            (
                "strip",
                &["strip", "f.o", "--keep", "gfx90a", "-o", "strip.got"],
            ),
            ("compress", &["compress", "f.o", "-o", "compress.got"]),
            (
                "decompress",
                &["decompress", "compress.want", "-o", "decompress.got"],
            ),
            (
                "in-place",
                &["strip", "inplace.got", "--keep", "gfx90a", "--in-place"],
            ),
        ];
        std::fs::copy(d.join("f.o"), d.join("inplace.got")).unwrap();
        for (name, args) in runs {
            let (code, stderr) = run_into(offload_bin(), d, args, sink);
            assert_reported(name, sink, code, &stderr);
        }
        for (got, want) in [
            ("strip.got", "strip.want"),
            ("compress.got", "compress.want"),
            ("decompress.got", "decompress.want"),
            ("inplace.got", "strip.want"),
        ] {
            assert!(
                std::fs::read(d.join(got)).unwrap() == std::fs::read(d.join(want)).unwrap(),
                "{got} differs from {want} after writing into {sink:?}"
            );
        }
    }
    assert_ne!(
        std::fs::read(d.join("strip.want")).unwrap(),
        std::fs::read(d.join("f.o")).unwrap()
    );
}

/// A command none of whose inputs could be read prints no result a script would take for one:
/// no table header, no empty report; the error is on standard error and the status non-zero.
/// Asked for JSON, it prints valid JSON.
#[test]
fn a_command_that_read_nothing_prints_no_result() {
    let dir = setup();
    let quiet: &[&[&str]] = &[
        &["ls", "missing"],
        &["ls", "--uri", "missing"],
        &["ls", "missing", "absent"],
        &["du", "missing"],
        &["du", "--keep", "gfx90a", "missing"],
        &["check", "--device", "gfx90a", "missing"],
        &["verify", "missing"],
        &["extract", "--arch", "gfx90a", "-o", "out", "missing"],
        &["strip", "--keep", "gfx90a", "-o", "out", "missing"],
    ];
    for args in quiet {
        let out = Command::new(offload_bin())
            .args(*args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "", "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("'missing': No such file or directory"),
            "{args:?}: {err}"
        );
    }
    for args in [
        &["ls", "--json", "missing"][..],
        &["du", "--json", "missing"],
        &["check", "--json", "--device", "gfx90a", "missing"],
    ] {
        let out = Command::new(offload_bin())
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        let json: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e})"));
        assert!(json.is_array() || json.is_object(), "{args:?}");
    }
    // One file read, one not: the listing of the one read is printed.
    let out = Command::new(offload_bin())
        .args(["ls", "missing", "f.o"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("gfx906"));
}

#[test]
fn large_parts_written_to_a_pipe_named_as_a_file_arrive_whole() {
    // Parts of 64 KiB and more are copied by the kernel from file to file; into a pipe named
    // as the output (`/dev/stdout`), which has no position, they are written in order.
    let dir = tempfile::tempdir().unwrap();
    let big = crate::util::noise(7, 300_000);
    std::fs::write(dir.path().join("big.bin"), &big).unwrap();
    std::fs::write(dir.path().join("h.bin"), b"host").unwrap();
    let targets = "-targets=host-x86_64-unknown-linux-gnu,hipv4-amdgcn-amd-amdhsa--gfx90a";
    crate::util::succeed(
        Command::new(offload_bin())
            .current_dir(dir.path())
            .args([
                "bundler",
                "-type=bc",
                targets,
                "-input=h.bin",
                "-input=big.bin",
            ])
            .arg("-output=b.bundle"),
    );
    let out = crate::util::succeed(
        Command::new(offload_bin())
            .current_dir(dir.path())
            .args([
                "bundler",
                "-type=bc",
                "-unbundle",
                targets,
                "-input=b.bundle",
            ])
            .args(["-output=h2.bin", "-output=/dev/stdout"]),
    );
    assert!(
        out.stdout == big,
        "{} bytes came out of 300000",
        out.stdout.len()
    );
}
