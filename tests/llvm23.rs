//! LLVM 23, the release users build with now, as the reference: its tools run in a Debian sid
//! root (`.ci/sid-root`).

use crate::util::{samples_dir, sid};

#[test]
fn the_sid_root_runs_llvm_23_1_4_on_files_copied_in() {
    let Some(sid) = sid::llvm23() else {
        return;
    };
    let dir = sid.work_dir();
    let out = sid.run(&dir, "llvm-offload-binary-23", &["--version"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("LLVM version 23.1.4"), "{text}");
    dir.copy_in(&samples_dir().join("cuda/bare/kernel-sm_89.cubin"), "a.bin");
    let image = "--image=file=a.bin,triple=nvptx64-nvidia-cuda,arch=sm_89,kind=cuda";
    let out = sid.run(&dir, "llvm-offload-binary-23", &["-o", "x.out", image]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = std::fs::read(dir.path().join("x.out")).unwrap();
    // The magic, then version 2: one binary with an entries table.
    assert_eq!(written[..8], [0x10, 0xff, 0x10, 0xad, 2, 0, 0, 0]);
}
