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

/// A single file's output in a folder that is not there is refused before any work (a large
/// package would otherwise be rewritten whole, then fail to be written).
#[test]
fn an_output_in_a_missing_folder_is_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::copy(samples_dir().join("linked/hip-app"), d.join("app")).unwrap();
    for (args, folder) in [
        (
            &["strip", "--keep", "gfx90a", "app", "-o", "missing/"][..],
            "missing/",
        ),
        (
            &["strip", "--keep", "gfx90a", "app", "-o", "missing/app"],
            "missing",
        ),
        (&["compress", "app", "-o", "missing/"], "missing/"),
        (
            &["decompress", "app", "-o", "gone/deeper/app"],
            "gone/deeper",
        ),
    ] {
        let (code, out, err) = offload_in(d, args);
        assert_eq!(code, 1, "{args:?}");
        assert_eq!(out, "", "{args:?}");
        assert_eq!(
            err,
            format!(
                "offload {}: error: '{folder}': no such folder to write the output in\n",
                args[0]
            ),
            "{args:?}"
        );
    }
    let mut names: Vec<_> = fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["app"]);
    // A bare name is written in the current folder, and an existing folder takes the file.
    let (code, _, err) = offload_in(d, &["strip", "--keep", "gfx90a", "app", "-o", "small"]);
    assert_eq!(code, 0, "{err}");
    fs::create_dir(d.join("out")).unwrap();
    let (code, _, err) = offload_in(d, &["strip", "--keep", "gfx90a", "app", "-o", "out/"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        fs::read(d.join("small")).unwrap(),
        fs::read(d.join("out/app")).unwrap()
    );
}
