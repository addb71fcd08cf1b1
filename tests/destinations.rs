//! Outputs mirrored under a folder stay inside it: a symbolic link already in the output
//! folder does not carry a write elsewhere.

use std::fs;

use crate::util::{offload_in, samples_dir};

#[test]
fn a_link_in_the_output_folder_carries_no_rewrite_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::create_dir_all(d.join("t/sub")).unwrap();
    fs::create_dir_all(d.join("t/top")).unwrap();
    fs::copy(
        samples_dir().join("linked/libhip.so"),
        d.join("t/sub/libhip.so"),
    )
    .unwrap();
    fs::copy(
        samples_dir().join("linked/libhip.so"),
        d.join("t/top/libhip.so"),
    )
    .unwrap();
    fs::create_dir_all(d.join("out")).unwrap();
    fs::create_dir_all(d.join("victim")).unwrap();
    std::os::unix::fs::symlink("../victim", d.join("out/sub")).unwrap();
    let victim = fs::canonicalize(d.join("victim")).unwrap();
    for args in [
        &["strip", "-r", "t", "--keep", "gfx90a", "-o", "out"][..],
        &["compress", "-r", "t", "-o", "out"],
    ] {
        let (code, _, err) = offload_in(d, args);
        assert_ne!(code, 0, "{args:?}");
        assert!(
            err.contains(&format!(
                "resolves to '{}', outside the output folder",
                victim.display()
            )),
            "{args:?}: {err}"
        );
        assert!(fs::read_dir(d.join("victim")).unwrap().next().is_none());
    }
}
