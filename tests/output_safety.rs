//! Outputs are never written through a symbolic link, in-place rewrites leave the old file or
//! the new one whatever moment they are killed at, and declared sizes are never allocated.

mod common;

use std::os::unix::fs::symlink;
use std::process::Command;
use std::time::Duration;

use common::samples_dir;

fn offload() -> Command {
    Command::new(env!("CARGO_BIN_EXE_offload"))
}

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
            env!("CARGO_BIN_EXE_offload"),
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
