//! Outputs are never written through a symbolic link, in-place rewrites leave the old file or
//! the new one whatever moment they are killed at, and declared sizes are never allocated.

use std::os::unix::fs::symlink;
use std::process::Command;
use std::time::Duration;

use crate::util::{
    noise, offload, samples_dir, succeed, temporaries_in, text_output, visible, OFFLOAD,
};

#[test]
fn a_symbolic_link_at_an_output_path_is_replaced_not_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let link = dir.path().join("out.co");
    symlink(&victim, &link).unwrap();
    let status = offload()
        .args([
            "bundler",
            "-unbundle",
            "-type=o",
            "-targets=hipv4-amdgcn-amd-amdhsa--gfx906",
        ])
        .arg(format!(
            "-input={}",
            samples_dir().join("bundles/kernel.bc").display()
        ))
        .arg(format!("-output={}", link.display()))
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert!(!std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        std::fs::read(&link).unwrap(),
        std::fs::read(samples_dir().join("dev/kernel-gfx906.bc")).unwrap()
    );
}

#[test]
fn a_killed_in_place_rewrite_leaves_the_old_file_or_the_new_one() {
    let dir = tempfile::tempdir().unwrap();
    // A bundle large enough that the rewrite takes a while: 3 x 24 MiB.
    let payload: Vec<u8> = (0..24u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let original = offload::format::bundle::to_vec(
        &[
            ("host-x86_64-unknown-linux-gnu-", &[][..]),
            ("hipv4-amdgcn-amd-amdhsa--gfx906", &payload),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", &payload),
            ("hipv4-amdgcn-amd-amdhsa--gfx1030", &payload),
        ],
        4096,
    );
    let path = dir.path().join("big.bc");
    let expected_new = {
        std::fs::write(&path, &original).unwrap();
        let status = offload()
            .args(["strip", "--keep", "gfx90a", "--in-place"])
            .arg(&path)
            .status()
            .unwrap();
        assert!(status.success());
        std::fs::read(&path).unwrap()
    };
    assert!(expected_new.len() < original.len());
    for delay_ms in [0u64, 2, 5, 10, 20, 40, 80, 160] {
        std::fs::write(&path, &original).unwrap();
        let mut child = offload()
            .args(["strip", "--keep", "gfx90a", "--in-place"])
            .arg(&path)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        let now = std::fs::read(&path).unwrap();
        assert!(
            now == original || now == expected_new,
            "killed after {delay_ms} ms: the file is neither the old nor the new one"
        );
    }
}

#[test]
fn a_compressed_bundle_claiming_4_gib_is_a_clear_error_in_2_gib_of_address_space() {
    let dir = tempfile::tempdir().unwrap();
    let (mut ccob, _) = offload::format::ccob::compress(b"small", &Default::default()).unwrap();
    // Version 2: the uncompressed size is the u32 at offset 12; claim 4 GiB - 1.
    ccob[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    let path = dir.path().join("claims.bc");
    std::fs::write(&path, &ccob).unwrap();
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -v 2097152; exec {} bundler -list -type=bc -input={}",
            OFFLOAD,
            path.display()
        ))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("claims.bc"), "{err}");
}

#[test]
fn containers_nested_too_deep_are_refused() {
    use offload::format::offload_binary::{write_v1, ImageKind, OffloadKind};
    let dir = tempfile::tempdir().unwrap();
    // A bundle in an offload binary in an offload binary ... twenty deep.
    let mut bytes =
        offload::format::bundle::to_vec(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", b"code")], 1);
    for _ in 0..20 {
        bytes = write_v1(
            ImageKind::None,
            OffloadKind::Hip(offload::format::offload_binary::HipEncoding::Sequential),
            0,
            &[(b"triple", b"amdgcn-amd-amdhsa")],
            &bytes,
        );
    }
    let path = dir.path().join("deep.bin");
    std::fs::write(&path, &bytes).unwrap();
    let out = offload().args(["ls"]).arg(&path).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("nest more than 8 deep"), "{err}");
}

/// A bundle of `count` device entries of `size` bytes each, all different, for one processor
/// and many feature settings, so that `--arch gfx90a` takes them all.
fn many_images(count: usize, size: usize) -> Vec<u8> {
    let payloads: Vec<Vec<u8>> = (0..count)
        .map(|i| {
            (0..size)
                .map(|j| {
                    ((i * 7919 + j) as u32)
                        .wrapping_mul(2_654_435_761)
                        .to_le_bytes()[3]
                })
                .collect()
        })
        .collect();
    let ids: Vec<String> = (0..count)
        .map(|i| format!("hipv4-amdgcn-amd-amdhsa-unknown{i}-gfx90a"))
        .collect();
    let entries: Vec<(&str, &[u8])> = ids
        .iter()
        .zip(&payloads)
        .map(|(id, p)| (id.as_str(), p.as_slice()))
        .collect();
    offload::format::bundle::to_vec(&entries, 4096)
}

#[test]
fn an_unbundle_that_fails_on_its_last_output_leaves_none() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("adir");
    std::fs::create_dir(&folder).unwrap();
    let (u1, u2) = (dir.path().join("u1"), dir.path().join("u2"));
    let out = offload()
        .args([
            "bundler",
            "-unbundle",
            "-type=o",
            "-targets=host-x86_64-unknown-linux,hipv4-amdgcn-amd-amdhsa--gfx906,hipv4-amdgcn-amd-amdhsa--gfx90a",
        ])
        .arg(format!(
            "-input={}",
            samples_dir().join("bundles/kernel-hip.o").display()
        ))
        .arg(format!("-output={}", u1.display()))
        .arg(format!("-output={}", u2.display()))
        .arg(format!("-output={}", folder.display()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("adir") && err.contains("Is a directory"),
        "{err}"
    );
    assert!(!u1.exists() && !u2.exists());
    assert_eq!(temporaries_in(dir.path()), Vec::<String>::new());
}

/// A 1 MiB tmpfs for the duration of a test, or `None` (with a message) where this process
/// cannot mount one.
struct SmallDisk(tempfile::TempDir);

impl SmallDisk {
    fn mount() -> Option<SmallDisk> {
        SmallDisk::mount_sized("1m")
    }

    /// A tmpfs of `size` (as `mount -o size=` takes it).
    fn mount_sized(size: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !mounted {
            crate::util::skip("cannot mount a 1 MiB tmpfs (needs root): full-disk cases not run");
            return None;
        }
        Some(SmallDisk(dir))
    }

    fn path(&self) -> &std::path::Path {
        self.0.path()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn a_full_disk_leaves_no_outputs_and_no_temporaries() {
    let Some(disk) = SmallDisk::mount() else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    // 40 images of 40 KiB: 1.6 MiB, more than the disk holds, each small enough to be held
    // in a write buffer until its output is finished.
    let input = work.path().join("many.hipfb");
    std::fs::write(&input, many_images(40, 40 << 10)).unwrap();
    let out = disk.path().join("out");
    let run = offload()
        .arg("extract")
        .arg(&input)
        .args(["--arch", "gfx90a", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    // Nothing is left, not even the folder made for the outputs.
    assert!(!out.exists());

    // The bundler: every target of the 40, one output each.
    let targets: Vec<String> = (0..40)
        .map(|i| format!("hipv4-amdgcn-amd-amdhsa-unknown{i}-gfx90a"))
        .collect();
    let mut unbundle = offload();
    unbundle
        .args(["bundler", "-unbundle", "-type=o"])
        .arg(format!("-targets={}", targets.join(",")))
        .arg(format!("-input={}", input.display()));
    for i in 0..40 {
        unbundle.arg(format!(
            "-output={}",
            disk.path().join(format!("u{i}")).display()
        ));
    }
    let run = unbundle.output().unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    let left: Vec<_> = std::fs::read_dir(disk.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "out")
        .collect();
    assert!(left.is_empty(), "{left:?}");

    // The packager: 40 offload binaries of 40 KiB, unpacked into the small disk.
    let mut pack = offload();
    pack.arg("packager")
        .arg("-o")
        .arg(work.path().join("images.bin"));
    for i in 0..40 {
        let image = work.path().join(format!("image{i}.o"));
        std::fs::write(&image, vec![i as u8 + 1; 40 << 10]).unwrap();
        pack.arg(format!(
            "--image=file={},triple=amdgcn-amd-amdhsa,arch=gfx90a,kind=openmp",
            image.display()
        ));
    }
    assert!(pack.status().unwrap().success());
    let run = offload()
        .current_dir(disk.path())
        .arg("packager")
        .arg(work.path().join("images.bin"))
        .arg("--image=arch=gfx90a")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    let left: Vec<_> = std::fs::read_dir(disk.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "out")
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_rewrite_whose_input_does_not_fit_the_disk_writes_an_output_that_does() {
    let Some(disk) = SmallDisk::mount_sized("4m") else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    // 8 MiB of device code: disk is reserved for as much as the input holds before the
    // output is planned, which a 4 MiB disk cannot give.
    let (small, large) = (noise(1, 1 << 20), noise(2, 7 << 20));
    let bundle = offload::format::bundle::to_vec(
        &[
            ("host-x86_64-unknown-linux-gnu-", &[][..]),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", &small),
            ("hipv4-amdgcn-amd-amdhsa--gfx942", &large),
        ],
        4096,
    );
    let input = work.path().join("k.hipfb");
    std::fs::write(&input, &bundle).unwrap();
    // What is kept fits: the reservation refused, the output is written as ever.
    let kept = disk.path().join("gfx90a.hipfb");
    succeed(
        offload()
            .args(["strip", "--keep", "gfx90a"])
            .arg(&input)
            .arg("-o")
            .arg(&kept),
    );
    let written = std::fs::read(&kept).unwrap();
    let parsed = offload::format::bundle::Bundle::parse(&written)
        .unwrap()
        .unwrap();
    let entries: Vec<(&str, &[u8])> = (parsed.entries().iter()).map(|e| (e.id, e.data)).collect();
    assert_eq!(
        entries,
        [
            ("host-x86_64-unknown-linux-gnu-", &[][..]),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", &small[..]),
        ]
    );
    // What is kept does not fit: the disk's error, no output and no temporary file.
    let too_large = disk.path().join("gfx942.hipfb");
    let (code, _, err) = text_output(
        offload()
            .args(["strip", "--keep", "gfx942"])
            .arg(&input)
            .arg("-o")
            .arg(&too_large),
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(!too_large.exists());
    assert_eq!(temporaries_in(disk.path()), Vec::<String>::new());
    assert!(std::fs::read(&kept).unwrap() == written);
}

#[test]
fn an_interrupted_extract_or_rewrite_leaves_no_temporaries() {
    let work = tempfile::tempdir().unwrap();
    let input = work.path().join("many.hipfb");
    std::fs::write(&input, many_images(150, 1 << 20)).unwrap();
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let out = work.path().join(format!("out{signal}"));
        interrupt(signal, &out, &mut || {
            std::fs::create_dir_all(&out).unwrap();
            offload()
                .env("RAYON_NUM_THREADS", "1")
                .arg("extract")
                .arg(&input)
                .args(["--arch", "gfx90a", "-q", "-o"])
                .arg(&out)
                .spawn()
                .unwrap()
        });
        // None, or all of them when the signal came after the renames.
        let written = std::fs::read_dir(&out).unwrap().count();
        assert!(written == 0 || written == 150, "{written} of 150 outputs");
    }
    // An in-place rewrite interrupted while its temporary exists: the file is the old one, or
    // the whole new one when the signal came after the rename.
    let folder = work.path().join("in-place");
    std::fs::create_dir(&folder).unwrap();
    let big = folder.join("big.hipfb");
    let original = many_images(60, 1 << 20);
    let stripped = work.path().join("stripped.hipfb");
    std::fs::write(&big, &original).unwrap();
    let run = offload()
        .args(["strip", "--keep", "gfx906", "--allow-empty", "-o"])
        .arg(&stripped)
        .arg(&big)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let new = std::fs::read(&stripped).unwrap();
    interrupt(libc::SIGTERM, &folder, &mut || {
        std::fs::write(&big, &original).unwrap();
        offload()
            .args(["strip", "--keep", "gfx906", "--allow-empty", "--in-place"])
            .arg(&big)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
    });
    let now = std::fs::read(&big).unwrap();
    assert!(
        now == original || now == new,
        "neither the old file nor the new one"
    );
}

#[test]
fn an_interrupted_hip_wrapper_leaves_no_temporaries() {
    let work = tempfile::tempdir().unwrap();
    // Large enough that compressing it at a high level takes a while.
    let image = work.path().join("big.co");
    let mut bytes = Vec::with_capacity(96 << 20);
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    while bytes.len() < 96 << 20 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        bytes.extend_from_slice(&(x % 61).to_le_bytes());
    }
    std::fs::write(&image, bytes).unwrap();
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let out = work.path().join(format!("out{signal}"));
        interrupt(signal, &out, &mut || {
            std::fs::create_dir_all(&out).unwrap();
            offload()
                .args([
                    "wrapper",
                    "--kind=hip",
                    "--offload-arch=gfx90a",
                    "--compression-level=19",
                ])
                .arg(&image)
                .arg("-o")
                .arg(out.join("w.o"))
                .spawn()
                .unwrap()
        });
    }
}

/// Starts the process `start` makes, sends it `signal` once a temporary file shows in
/// `folder`, and checks that it died of the signal and left no temporary file. A process that
/// finished before the signal landed (a loaded machine) is started again, up to five times.
fn interrupt(
    signal: i32,
    folder: &std::path::Path,
    start: &mut dyn FnMut() -> std::process::Child,
) {
    use std::os::unix::process::ExitStatusExt;
    for attempt in 0..5 {
        let mut child = start();
        let started = std::time::Instant::now();
        while temporaries_in(folder).is_empty() && started.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_micros(200));
        }
        // SAFETY: kill with a valid pid and signal.
        unsafe { libc::kill(child.id() as i32, signal) };
        let status = child.wait().unwrap();
        assert_eq!(
            temporaries_in(folder),
            Vec::<String>::new(),
            "signal {signal}, attempt {attempt}: {status:?}"
        );
        if status.signal() == Some(signal) {
            return;
        }
        assert!(status.success(), "signal {signal}: {status:?}");
        visible(&format!(
            "signal {signal} landed after the process finished; starting it again"
        ));
        for entry in std::fs::read_dir(folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                std::fs::remove_dir_all(path).unwrap();
            } else {
                std::fs::remove_file(path).unwrap();
            }
        }
    }
    panic!("signal {signal} never landed while the process was writing");
}

#[test]
fn thousands_of_images_never_hold_thousands_of_open_files() {
    use std::os::unix::process::CommandExt;
    let work = tempfile::tempdir().unwrap();
    let input = work.path().join("many.hipfb");
    std::fs::write(&input, many_images(300, 100)).unwrap();
    let out = work.path().join("out");
    let mut extract = offload();
    extract
        .env("RAYON_NUM_THREADS", "8")
        .arg("extract")
        .arg(&input)
        .args(["--arch", "gfx90a", "-q", "-o"])
        .arg(&out);
    // SAFETY: setrlimit only, between fork and exec.
    unsafe {
        extract.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 64,
                rlim_max: 64,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let run = extract.output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 300);
}

#[test]
fn an_output_is_never_written_over_an_input() {
    let work = tempfile::tempdir().unwrap();
    let object = work.path().join("k.o");
    std::fs::copy(samples_dir().join("archive/kernel-rdc.o"), &object).unwrap();
    let first = offload()
        .arg("extract")
        .arg(&object)
        .args(["--arch", "gfx90a", "-o"])
        .arg(work.path())
        .output()
        .unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let written = String::from_utf8_lossy(&first.stdout);
    let second_input = written.lines().next().unwrap().split('\t').next().unwrap();
    let before = std::fs::read(second_input).unwrap();
    std::fs::write(second_input, b"precious").unwrap();
    let run = offload()
        .arg("extract")
        .arg(&object)
        .arg(second_input)
        .args(["--arch", "gfx90a", "-o"])
        .arg(work.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(err.contains("refusing to write over an input"), "{err}");
    assert_eq!(std::fs::read(second_input).unwrap(), b"precious");
    assert!(!before.is_empty());
}

#[test]
fn standard_output_by_its_device_names_is_written_not_replaced() {
    let expected = std::fs::read(samples_dir().join("dev/kernel-gfx906.bc")).unwrap();
    for name in ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"] {
        let run = offload()
            .args([
                "bundler",
                "-unbundle",
                "-type=bc",
                "-targets=hipv4-amdgcn-amd-amdhsa--gfx906",
            ])
            .arg(format!(
                "-input={}",
                samples_dir().join("bundles/kernel.bc").display()
            ))
            .arg(format!("-output={name}"))
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert!(run.stdout == expected, "{name}: not the gfx906 entry");
    }
    let still_a_link = std::fs::symlink_metadata("/dev/stdout")
        .unwrap()
        .file_type()
        .is_symlink();
    if !still_a_link {
        // Put the machine back before failing, so that later tests still have /dev/stdout.
        let _ = std::fs::remove_file("/dev/stdout");
        let _ = std::os::unix::fs::symlink("/proc/self/fd/1", "/dev/stdout");
    }
    assert!(still_a_link, "/dev/stdout was replaced");
}

#[test]
fn a_device_without_end_is_refused_not_read() {
    let run = offload().args(["ls", "/dev/zero"]).output().unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(err.contains("'/dev/zero': not a regular file"), "{err}");
}
