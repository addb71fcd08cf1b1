//! In-place rewrites keep what the file was: owner, group, set-ID bits, extended attributes,
//! ACLs and capabilities; they write through symbolic links and into hard-linked files; their
//! temporary files are private; a file truncated under the rewrite is an error, not a signal.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output};

use crate::util::{self, offload, temporaries_in, visible};

/// A bundle with a host entry and three device entries of `size` bytes each.
fn bundle(size: usize) -> Vec<u8> {
    let payload: Vec<u8> = (0..size as u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    offload::format::bundle::to_vec(
        &[
            ("host-x86_64-unknown-linux-gnu-", &[][..]),
            ("hipv4-amdgcn-amd-amdhsa--gfx906", &payload),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", &payload),
            ("hipv4-amdgcn-amd-amdhsa--gfx1030", &payload),
        ],
        4096,
    )
}

/// What `strip --keep gfx90a` makes of `bundle(size)`, written to a new file.
fn stripped(dir: &Path, size: usize) -> Vec<u8> {
    let input = dir.join("reference.bc");
    let output = dir.join("reference-stripped.bc");
    std::fs::write(&input, bundle(size)).unwrap();
    let run = strip(&input, &["-o", output.to_str().unwrap()]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    std::fs::read(output).unwrap()
}

fn strip(path: &Path, destination: &[&str]) -> Output {
    offload()
        .args(["strip", "--keep", "gfx90a"])
        .arg(path)
        .args(destination)
        .output()
        .unwrap()
}

fn in_place(path: &Path) -> Output {
    let run = strip(path, &["--in-place"]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    run
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn sh(command: &str) -> std::process::Output {
    Command::new("sh").args(["-c", command]).output().unwrap()
}

#[test]
fn owner_group_and_set_id_bits_stay() {
    if !is_root() {
        util::skip("changing a file's owner needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let expected = stripped(dir.path(), 100_000);
    for mode in [0o4755, 0o2750, 0o6711, 0o600] {
        let path = dir.path().join("prog.bc");
        std::fs::write(&path, bundle(100_000)).unwrap();
        std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        in_place(&path);
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(
            (meta.uid(), meta.gid(), meta.mode() & 0o7777),
            (65534, 65534, mode),
            "mode {mode:o}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), expected);
    }
}

#[test]
fn extended_attributes_acls_and_capabilities_stay() {
    let dir = tempfile::tempdir().unwrap();
    let expected = stripped(dir.path(), 100_000);
    let path = dir.path().join("prog.bc");
    std::fs::write(&path, bundle(100_000)).unwrap();
    let p = path.display();
    if !sh(&format!("setfattr -n user.origin -v build-42 {p}"))
        .status
        .success()
    {
        util::skip("setfattr missing, or no user attributes on this file system");
        return;
    }
    let acl = sh(&format!("setfacl -m u:65534:r {p}")).status.success();
    let cap = is_root() && sh(&format!("setcap cap_net_raw+ep {p}")).status.success();
    let before_attr = sh(&format!("getfattr -d -m - --absolute-names {p}")).stdout;
    let before_acl = sh(&format!("getfacl -cn {p}")).stdout;
    let before_cap = sh(&format!("getcap {p}")).stdout;
    in_place(&path);
    assert_eq!(std::fs::read(&path).unwrap(), expected);
    let after_attr = sh(&format!("getfattr -d -m - --absolute-names {p}")).stdout;
    assert_eq!(
        String::from_utf8_lossy(&after_attr),
        String::from_utf8_lossy(&before_attr)
    );
    assert!(String::from_utf8_lossy(&after_attr).contains("user.origin=\"build-42\""));
    if acl {
        let after_acl = sh(&format!("getfacl -cn {p}")).stdout;
        assert_eq!(after_acl, before_acl);
        assert!(String::from_utf8_lossy(&after_acl).contains("user:65534:r--"));
    } else {
        util::skip("setfacl missing: ACLs not checked");
    }
    if cap {
        let after_cap = sh(&format!("getcap {p}")).stdout;
        assert_eq!(after_cap, before_cap);
        assert!(String::from_utf8_lossy(&after_cap).contains("cap_net_raw"));
    } else {
        util::skip("setcap missing or not root: capabilities not checked");
    }
}

#[test]
fn a_symbolic_link_is_followed_and_stays_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let expected = stripped(dir.path(), 100_000);
    let target = dir.path().join("real.bc");
    std::fs::write(&target, bundle(100_000)).unwrap();
    let link = dir.path().join("link.bc");
    std::os::unix::fs::symlink("real.bc", &link).unwrap();
    in_place(&link);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("real.bc"));
    assert_eq!(std::fs::read(&target).unwrap(), expected);
}

#[test]
fn every_hard_link_sees_the_new_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let expected = stripped(dir.path(), 300_000);
    let first = dir.path().join("a.bc");
    let second = dir.path().join("b.bc");
    std::fs::write(&first, bundle(300_000)).unwrap();
    std::fs::set_permissions(&first, std::fs::Permissions::from_mode(0o751)).unwrap();
    std::fs::hard_link(&first, &second).unwrap();
    let inode = std::fs::metadata(&first).unwrap().ino();
    in_place(&first);
    for name in [&first, &second] {
        let meta = std::fs::metadata(name).unwrap();
        assert_eq!((meta.ino(), meta.nlink()), (inode, 2));
        assert_eq!(meta.mode() & 0o7777, 0o751);
        assert_eq!(std::fs::read(name).unwrap(), expected);
    }
    assert_eq!(temporaries_in(dir.path()), Vec::<String>::new());
}

#[test]
fn a_private_file_is_never_readable_by_others_while_it_is_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("secret.bc");
    std::fs::write(&path, bundle(24 << 20)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut child = offload()
        .args(["strip", "--keep", "gfx90a", "--in-place"])
        .arg(&path)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut seen = 0;
    while child.try_wait().unwrap().is_none() {
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let entry = entry.unwrap();
            if let Ok(meta) = entry.metadata() {
                if entry.file_name().to_string_lossy().ends_with(".tmp") {
                    seen += 1;
                    assert_eq!(meta.mode() & 0o077, 0, "{:?}", entry.file_name());
                }
            }
        }
    }
    assert!(child.wait().unwrap().success());
    assert_eq!(
        std::fs::metadata(&path).unwrap().mode() & 0o777,
        0o600,
        "temporaries seen: {seen}"
    );
}

#[test]
fn a_file_truncated_during_a_rewrite_is_an_error_not_a_signal() {
    let dir = tempfile::tempdir().unwrap();
    let original = bundle(40 << 20);
    let path = dir.path().join("big.bc");
    let out = dir.path().join("out.bc");
    let mut errors = 0;
    for delay_us in [0u64, 500, 1000, 2000, 4000, 8000, 16000, 32000] {
        std::fs::write(&path, &original).unwrap();
        let child = offload()
            .args(["strip", "--keep", "gfx90a", "-o"])
            .arg(&out)
            .arg(&path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_micros(delay_us));
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(4096)
            .unwrap();
        let run = child.wait_with_output().unwrap();
        assert_eq!(
            run.status.signal(),
            None,
            "killed by a signal after {delay_us} us"
        );
        if !run.status.success() {
            errors += 1;
            let stderr = String::from_utf8_lossy(&run.stderr);
            assert!(stderr.contains("big.bc"), "{stderr}");
        }
    }
    visible(&format!("{errors} of 8 rewrites saw their input shrink"));
}
