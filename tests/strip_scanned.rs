//! A strip run by `offload strip` is told what the scan before it found (how many images are
//! embedded as data, counted by the scan that tells what each target's code takes), so that it
//! does not scan the file again: the count is taken only for the file that scan read, the
//! result is the one a rewrite that scans for itself makes, and the read-back, which finds the
//! streams to check and counts the images in one pass, still refuses a count that is wrong.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use offload::ops::rewrite::{self, Change, Mode, Placement, Ptx, RewriteConfig, Summary};

use crate::util::{offload, samples_dir, text_output};

fn keep(id: &str) -> RewriteConfig {
    RewriteConfig {
        change: Change::Keep(vec![id.parse().unwrap()]),
        allow_empty: false,
        max_decompressed: u64::MAX,
        ptx: Ptx::AsAsked,
    }
}

/// The device and inode of `path`, as a scan records the file it read.
fn identity(path: &Path) -> (u64, u64) {
    let meta = std::fs::metadata(path).unwrap();
    (meta.dev(), meta.ino())
}

/// A copy of the CUDA sample `name` in `dir`.
fn copied(dir: &Path, name: &str) -> PathBuf {
    let input = dir.join(name);
    std::fs::copy(samples_dir().join("cuda").join(name), &input).unwrap();
    input
}

/// `rewrite_scanned` of `input` to `output`, told `embedded`.
fn told(
    input: &Path,
    output: &Path,
    embedded: Option<(usize, (u64, u64))>,
) -> offload::Result<Summary> {
    rewrite::rewrite_scanned(
        input,
        &Placement::New(output.to_path_buf()),
        &keep("sm_90"),
        Mode::Write,
        Default::default(),
        embedded,
    )
}

#[test]
fn a_count_for_another_file_is_not_taken() {
    let dir = tempfile::tempdir().unwrap();
    let input = copied(dir.path(), "libkernel.so");
    let other = dir.path().join("other");
    std::fs::write(&other, b"another file").unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let scanned = told(&input, &a, Some((3, identity(&other)))).unwrap();
    let plain = rewrite::rewrite(
        &input,
        &Placement::New(b.clone()),
        &keep("sm_90"),
        Mode::Write,
        Default::default(),
    )
    .unwrap();
    assert!(scanned.rewritten > 0, "{scanned:?}");
    assert_eq!(scanned, plain);
    assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
}

#[test]
fn the_read_back_counts_the_images_written_and_refuses_a_wrong_count() {
    let dir = tempfile::tempdir().unwrap();
    let input = copied(dir.path(), "libkernel.so");
    let output = dir.path().join("stripped.so");
    // One image embedded as data more than the file holds: the rewrite expects one more image
    // than it writes, which the read-back's one pass counts.
    let e = told(&input, &output, Some((1, identity(&input)))).unwrap_err();
    let message = e.to_string();
    assert!(message.contains("device images instead of"), "{message}");
    assert!(!output.exists(), "nothing is written on a failed read-back");
    // Told the right count (none), the same file is written as without it.
    let right = told(&input, &output, Some((0, identity(&input)))).unwrap();
    assert!(right.rewritten > 0, "{right:?}");
}

#[test]
fn strip_on_eight_threads_writes_what_the_library_rewrite_writes_run_after_run() {
    let dir = tempfile::tempdir().unwrap();
    for name in [
        "libkernel.so",
        "libmixed.so",
        "app",
        "mixed-app",
        "gencode.o",
    ] {
        let input = copied(dir.path(), name);
        let library = dir.path().join(format!("{name}.library"));
        let plain = told(&input, &library, None);
        for run in 0..3 {
            let by_cli = dir.path().join(format!("{name}.cli{run}"));
            let (code, _, err) = text_output(
                offload()
                    .env("RAYON_NUM_THREADS", "8")
                    .args(["strip", "--keep", "sm_90", "-o"])
                    .arg(&by_cli)
                    .arg(&input),
            );
            assert_eq!(code == 0, plain.is_ok(), "{name}: {err}");
            if plain.is_ok() {
                assert_eq!(
                    std::fs::read(&by_cli).unwrap(),
                    std::fs::read(&library).unwrap(),
                    "{name}, run {run}"
                );
            }
        }
    }
}
