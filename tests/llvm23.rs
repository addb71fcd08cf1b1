//! LLVM 23, the release users build with now, as the reference: its tools run in a Debian sid
//! root (`.ci/sid-root`).

use crate::util::sid;

#[test]
fn the_sid_root_runs_llvm_23_1_4() {
    let Some(sid) = sid::llvm23() else {
        return;
    };
    let dir = sid.work_dir();
    let out = sid.run(&dir, "llvm-offload-binary-23", &["--version"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("LLVM version 23.1.4"), "{text}");
}
