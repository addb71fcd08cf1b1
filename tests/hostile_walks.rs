//! Hostile inputs met by every command that reads many files: targets and keys too long for
//! any column, names and entry IDs holding newlines and terminal escapes, FIFOs and devices
//! in place of files (in trees, as inputs, in a GPU topology), trees deeper than the
//! system's path limit, and more inputs than the process may hold descriptors.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use offload::format::bundle;

use crate::util::{kfd_topology, offload};

const HOST: &str = "host-x86_64-unknown-linux-gnu-";
const GFX90A: &str = "hipv4-amdgcn-amd-amdhsa--gfx90a";
/// An entry ID and a file name that would fake a line of output and colour the terminal.
const EVIL: &str = "\nFAKE LINE\x1b[31m";

/// A bundle of a host entry and one device entry `id` holding `payload`.
fn device_bundle(id: &str, payload: &[u8]) -> Vec<u8> {
    bundle::to_vec(&[(HOST, b"".as_slice()), (id, payload)], 8)
}

/// What a run gave: its exit code (-1 for a signal) and its two streams.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `command` with its output in files (a long listing must not fill a pipe), killing it
/// after `secs` seconds: a run that takes longer fails the test, naming `what`.
fn run_within(command: &mut Command, secs: u64, what: &str) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = command
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: no answer in {secs} s (blocked)");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    let ran = Ran {
        code: status.code().unwrap_or(-1),
        stdout: read(&out),
        stderr: read(&err),
    };
    assert_ne!(ran.code, 101, "{what}: panic: {}", ran.stderr);
    assert_ne!(ran.code, -1, "{what}: killed by a signal");
    ran
}

/// `offload args` in `dir`, within 20 seconds.
fn offload_within(dir: &Path, args: &[&str]) -> Ran {
    run_within(offload().current_dir(dir).args(args), 20, &args.join(" "))
}

fn mkfifo(path: &Path) {
    let name = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0, "mkfifo");
}

#[test]
fn targets_and_keys_longer_than_any_column_are_printed_whole() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    let long = format!("gfx{}", "9".repeat(70_000));
    let long_id = format!("hipv4-amdgcn-amd-amdhsa--{long}");
    std::fs::write(
        tree.join("a-long.hipfb"),
        device_bundle(&long_id, b"\x7fELF1"),
    )
    .unwrap();
    std::fs::write(
        tree.join("b-good.hipfb"),
        device_bundle(GFX90A, b"\x7fELF2"),
    )
    .unwrap();
    // A kpack archive whose processor key takes 600 KB.
    let key = format!("gfx{}", "1".repeat(600_000));
    let mut w = offload::format::kpack::ArchiveWriter::new(
        "k",
        &key,
        &[key.as_str()],
        offload::format::kpack::Scheme::None,
    );
    w.add("lib/k.so#0", &key, b"\x7fELF3").unwrap();
    std::fs::write(tree.join("c-long.kpack"), w.finish()).unwrap();
    for args in [
        &["ls", "-r", "tree"][..],
        &["du", "-r", "tree"],
        &["ls", "tree/a-long.hipfb"],
        &["du", "tree/a-long.hipfb"],
        &["ls", "tree/c-long.kpack"],
        &["du", "tree/c-long.kpack"],
    ] {
        let ran = offload_within(dir.path(), args);
        // (du counts no code in a kpack archive: only the binaries split into them.)
        if args[1] != "tree/c-long.kpack" || args[0] == "ls" {
            assert!(ran.stdout.contains("gfx"), "{args:?}: {}", ran.stderr);
        }
        // The long cells are written whole, once each; the other lines keep their width.
        for line in ran.stdout.lines() {
            if !line.contains(&long) && !line.contains(&key) {
                assert!(line.len() < 300, "{args:?}: a line {} long", line.len());
            }
        }
        if args[1] == "-r" {
            assert!(ran.stdout.contains("b-good.hipfb"), "{args:?}");
        }
    }
}

/// A tree of one bundle whose entry ID holds [`EVIL`], and one whose file name does.
fn evil_tree(dir: &Path) -> PathBuf {
    let tree = dir.join("tree");
    std::fs::create_dir(&tree).unwrap();
    let id = format!("{GFX90A}{EVIL}");
    std::fs::write(tree.join("id.hipfb"), device_bundle(&id, b"\x7fELF1")).unwrap();
    let name = format!("name{EVIL}.hipfb");
    std::fs::write(tree.join(name), device_bundle(GFX90A, b"\x7fELF2")).unwrap();
    tree
}

#[test]
fn names_and_entry_ids_are_escaped_for_people() {
    let dir = tempfile::tempdir().unwrap();
    evil_tree(dir.path());
    for args in [
        &["ls", "-r", "tree"][..],
        &["du", "-r", "tree"],
        &["verify", "-r", "tree"],
        &["extract", "-r", "tree", "--arch", "gfx90a", "-o", "out"],
        &[
            "strip",
            "-r",
            "tree",
            "--keep",
            "gfx90a",
            "--dry-run",
            "--in-place",
        ],
        &["strip", "-r", "tree", "--keep", "gfx90a", "-o", "stripped"],
        &[
            "check",
            "tree/id.hipfb",
            "tree/name\nFAKE LINE\x1b[31m.hipfb",
            "--device",
            "gfx90a",
        ],
    ] {
        let ran = offload_within(dir.path(), args);
        let both = format!("{}{}", ran.stdout, ran.stderr);
        assert!(!both.contains('\x1b'), "{args:?}: a raw escape: {both}");
        assert!(
            !both.lines().any(|l| l.starts_with("FAKE")),
            "{args:?}: a faked line: {both}"
        );
        // (extract names its outputs with such characters replaced.)
        if args[0] != "extract" {
            assert!(both.contains("\\nFAKE LINE\\e[31m"), "{args:?}: {both}");
        }
    }
    // JSON keeps the exact ID.
    let ran = offload_within(dir.path(), &["ls", "--json", "tree/id.hipfb"]);
    let images: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    let ids: Vec<&str> = images
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["entry_id"].as_str())
        .collect();
    assert!(ids.contains(&format!("{GFX90A}{EVIL}").as_str()), "{ids:?}");
}

#[test]
fn a_fifo_given_as_an_input_is_never_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    mkfifo(&dir.path().join("fifo"));
    for args in [
        &["strip", "fifo", "--keep", "gfx90a", "-o", "out.o"][..],
        &["strip", "fifo", "--keep", "gfx90a", "--in-place"],
        &["compress", "fifo", "--in-place"],
        &["ls", "fifo"],
        &["du", "fifo"],
        &["verify", "fifo"],
        &["extract", "fifo", "--arch", "gfx90a", "-o", "out"],
        &["check", "fifo", "--device", "gfx90a"],
    ] {
        offload_within(dir.path(), args);
    }
    let kind = std::fs::symlink_metadata(dir.path().join("fifo")).unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&kind.file_type()));
}

#[test]
fn fifos_and_devices_in_a_tree_are_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("k.hipfb"), device_bundle(GFX90A, b"\x7fELF1")).unwrap();
    mkfifo(&tree.join("p1"));
    mkfifo(&tree.join("p2"));
    std::os::unix::fs::symlink("/dev/null", tree.join("null")).unwrap();
    for command in ["ls", "du", "verify"] {
        let ran = offload_within(dir.path(), &[command, "-r", "--follow", "tree"]);
        assert_eq!(ran.code, 0, "{command}: {}", ran.stderr);
        let said: Vec<&str> = ran
            .stderr
            .lines()
            .filter(|l| l.contains("skipped"))
            .collect();
        assert_eq!(said.len(), 1, "{command}: {}", ran.stderr);
        assert!(said[0].contains("skipped 2 FIFOs, 1 device"), "{said:?}");
    }
}

/// Puts something at a path.
type MakeFile = fn(&Path);

#[test]
fn a_topology_file_that_is_a_fifo_a_device_or_huge_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.o"), b"not a program").unwrap();
    let topology = dir.path().join("topology");
    kfd_topology(&topology, &[(90010, 0)]);
    let properties = topology.join("nodes/1/properties");
    let replacements: [(&str, MakeFile); 3] = [
        ("FIFO", mkfifo),
        ("/dev/zero", |p| {
            std::os::unix::fs::symlink("/dev/zero", p).unwrap()
        }),
        ("huge", |p| {
            std::fs::write(p, vec![b'#'; 100 << 10]).unwrap()
        }),
    ];
    for (what, make) in replacements {
        std::fs::remove_file(&properties).unwrap();
        make(&properties);
        let ran = run_within(
            offload()
                .current_dir(dir.path())
                .env("OFFLOAD_KFD_TOPOLOGY", &topology)
                .args(["check", "k.o"]),
            20,
            what,
        );
        assert_ne!(ran.code, 0, "{what}");
        assert!(
            ran.stderr.contains("nodes/1/properties"),
            "{what}: {}",
            ran.stderr
        );
    }
}

/// Makes `levels` nested folders of 8 letters under `top` (9 bytes of path each, made one
/// level at a time through descriptors: the whole path is longer than a path may be), and
/// a file holding `bytes` in the last.
fn make_deep(top: &Path, levels: usize, bytes: &[u8]) {
    use std::ffi::CString;
    let name = CString::new("dddddddd").unwrap();
    let top = CString::new(top.as_os_str().as_bytes()).unwrap();
    // SAFETY: plain system calls on NUL-terminated names and descriptors opened here.
    unsafe {
        let mut fd = libc::open(top.as_ptr(), libc::O_DIRECTORY | libc::O_RDONLY);
        assert!(fd >= 0);
        for _ in 0..levels {
            assert_eq!(libc::mkdirat(fd, name.as_ptr(), 0o755), 0);
            let next = libc::openat(fd, name.as_ptr(), libc::O_DIRECTORY | libc::O_RDONLY);
            assert!(next >= 0);
            libc::close(fd);
            fd = next;
        }
        let file = CString::new("deep.hipfb").unwrap();
        let out = libc::openat(fd, file.as_ptr(), libc::O_WRONLY | libc::O_CREAT, 0o644);
        assert!(out >= 0);
        assert_eq!(
            libc::write(out, bytes.as_ptr().cast(), bytes.len()),
            bytes.len() as isize
        );
        libc::close(out);
        libc::close(fd);
    }
}

#[test]
fn a_tree_deeper_than_the_path_limit_is_reported_not_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::write(tree.join("top.hipfb"), device_bundle(GFX90A, b"\x7fELF1")).unwrap();
    make_deep(&tree, 900, &device_bundle(GFX90A, b"\x7fELF2"));
    for args in [
        &["ls", "-r", "tree"][..],
        &["du", "-r", "tree"],
        &["verify", "-r", "tree"],
        &["check", "-r", "tree", "--device", "gfx90a"],
        &[
            "strip",
            "-r",
            "tree",
            "--keep",
            "gfx90a",
            "--dry-run",
            "--in-place",
        ],
        &["extract", "-r", "tree", "--arch", "gfx90a", "-o", "out"],
    ] {
        let ran = offload_within(dir.path(), args);
        assert_ne!(ran.code, 0, "{args:?}: {}", ran.stdout);
        assert!(
            ran.stderr.contains("path limit"),
            "{args:?}: {}",
            ran.stderr
        );
    }
}

#[test]
fn thousands_of_inputs_fit_a_small_descriptor_limit() {
    const FILES: usize = 3000;
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    for k in 0..FILES {
        let payload = format!("\x7fELF payload {k}");
        std::fs::write(
            tree.join(format!("b{k:04}.hipfb")),
            device_bundle(GFX90A, payload.as_bytes()),
        )
        .unwrap();
    }
    let limited = |args: &str| {
        let mut command = Command::new("sh");
        command
            .current_dir(dir.path())
            .env_remove("OFFLOAD_LOG")
            .args([
                "-c",
                &format!("ulimit -n 64; exec '{}' {args}", crate::util::OFFLOAD),
            ]);
        let ran = run_within(&mut command, 300, args);
        assert_eq!(ran.code, 0, "{args}: {}", ran.stderr);
        ran
    };
    limited("extract -r tree --arch gfx90a -o out");
    let mut payloads: Vec<String> = std::fs::read_dir(dir.path().join("out"))
        .unwrap()
        .map(|e| String::from_utf8(std::fs::read(e.unwrap().path()).unwrap()).unwrap())
        .collect();
    payloads.sort();
    let mut expected: Vec<String> = (0..FILES).map(|k| format!("\x7fELF payload {k}")).collect();
    expected.sort();
    assert_eq!(payloads, expected);
    for args in [
        "ls -r tree",
        "du -r tree",
        "verify -r tree",
        "strip -r tree --keep gfx90a -o stripped",
    ] {
        limited(args);
    }
    assert_eq!(
        std::fs::read_dir(dir.path().join("stripped"))
            .unwrap()
            .count(),
        FILES
    );
}

#[test]
fn ten_thousand_inputs_are_extracted_within_256_descriptors() {
    // A tree of forty times more inputs than descriptors: every input is read as it is
    // scanned, small ones into memory (no descriptor and no map held for them), and every
    // output is written. (Ten thousand take the same paths as a distribution's fifty thousand,
    // in a fifth of the time.)
    const FILES: usize = 10_000;
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    for k in 0..FILES {
        let folder = tree.join(format!("d{:02}", k / 1000));
        if k % 1000 == 0 {
            std::fs::create_dir_all(&folder).unwrap();
        }
        let payload = format!("\x7fELF payload {k}");
        std::fs::write(
            folder.join(format!("b{k:05}.hipfb")),
            device_bundle(GFX90A, payload.as_bytes()),
        )
        .unwrap();
    }
    let args = "extract -r tree --arch gfx90a -o out";
    let mut command = Command::new("sh");
    command
        .current_dir(dir.path())
        .env_remove("OFFLOAD_LOG")
        .env("RAYON_NUM_THREADS", "8")
        .args([
            "-c",
            &format!("ulimit -n 256; exec '{}' {args}", crate::util::OFFLOAD),
        ]);
    let ran = run_within(&mut command, 600, args);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let out = dir.path().join("out");
    let mut count = 0;
    for k in 0..FILES {
        let name = format!("b{k:05}.hipfb-hipv4-amdgcn-amd-amdhsa--gfx90a.co");
        let bytes = std::fs::read(out.join(&name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(bytes, format!("\x7fELF payload {k}").as_bytes(), "{name}");
        count += 1;
    }
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), count);
}
