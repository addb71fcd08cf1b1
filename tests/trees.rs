//! Whole trees: folders walked in a stable order (files without device code skipped, symbolic
//! links skipped or followed with loops caught), and strip run over many files at once: the
//! plan of a dry run, in-place rewrites, an output folder mirroring the tree, a damaged file
//! named and left as it was, totals that add up.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::util::{offload, samples_dir, text_output};

/// The files copied into a tree, by their path in it.
const TREE: [(&str, &str); 7] = [
    ("lib/hip-app", "linked/hip-app"),
    ("lib/libhip.so", "linked/libhip.so"),
    ("obj/libmulti.a", "archive/libmulti.a"),
    ("obj/kernel-rdc.o", "archive/kernel-rdc.o"),
    ("obj/deep/vadd-rdc.o", "archive/vadd-rdc.o"),
    ("obj/plain-host.o", "archive/plain-host.o"),
    ("obj/damaged.bc", "damaged/cut-in-payload.bc"),
];

/// A tree of programs, libraries, objects and archives under `dir/tree`, with a text file, a
/// symbolic link loop and a link to a file outside the tree (`dir/outside.o`).
pub(crate) fn tree(dir: &Path) -> PathBuf {
    let root = dir.join("tree");
    for (at, sample) in TREE {
        let to = root.join(at);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(samples_dir().join(sample), to).unwrap();
    }
    std::fs::write(root.join("README.txt"), "no device code here\n").unwrap();
    std::os::unix::fs::symlink("../..", root.join("obj/deep/loop")).unwrap();
    std::fs::copy(
        samples_dir().join("archive/kernel-rdc.o"),
        dir.join("outside.o"),
    )
    .unwrap();
    std::os::unix::fs::symlink(dir.join("outside.o"), root.join("lib/outside.o")).unwrap();
    root
}

/// Every regular file under `root` with its bytes, by path.
pub(crate) fn contents(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                files.insert(entry.path(), std::fs::read(entry.path()).unwrap());
            }
        }
    }
    files
}

/// The per-file lines of a rewrite's report: (file, images before, after, bytes before, after).
fn file_lines(stdout: &str) -> Vec<(String, u64, u64, u64, u64)> {
    stdout
        .lines()
        .filter(|l| !l.starts_with("total"))
        .map(|line| {
            let (file, rest) = line.rsplit_once(": ").unwrap();
            let numbers: Vec<u64> = rest
                .split(|c: char| !c.is_ascii_digit())
                .filter(|w| !w.is_empty())
                .map(|w| w.parse().unwrap())
                .collect();
            (
                file.to_string(),
                numbers[0],
                numbers[1],
                numbers[2],
                numbers[3],
            )
        })
        .collect()
}

/// The numbers of the `total:` line: files, changed, failed, images before and after, bytes
/// before and after.
fn totals(stdout: &str) -> Vec<u64> {
    let line = stdout.lines().find(|l| l.starts_with("total:")).unwrap();
    line.split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .map(|w| w.parse().unwrap())
        .collect()
}

/// The device images `offload ls --json` lists in `file`: (arch, size).
pub(crate) fn images(file: &Path) -> Vec<(String, u64)> {
    let (code, stdout, stderr) = text_output(offload().arg("ls").arg("--json").arg(file));
    assert_eq!(code, 0, "{}: {stderr}", file.display());
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    json.as_array()
        .unwrap()
        .iter()
        .filter(|i| i["arch"] != "-" && i["arch"] != "")
        .map(|i| {
            (
                i["arch"].as_str().unwrap().to_string(),
                i["size"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The paths the walk takes under `root`, in order.
pub(crate) const WALKED: [&str; 6] = [
    "lib/hip-app",
    "lib/libhip.so",
    "obj/damaged.bc",
    "obj/deep/vadd-rdc.o",
    "obj/kernel-rdc.o",
    "obj/libmulti.a",
];

#[test]
fn strip_a_tree_dry_then_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let root = tree(dir.path());
    let before = contents(dir.path());
    let run = |extra: &[&str]| {
        text_output(
            offload()
                .args(["strip", "-r", "--keep", "gfx90a", "-j", "8"])
                .args(extra)
                .arg(&root)
                .env("RAYON_NUM_THREADS", "8"),
        )
    };

    let (code, plan, stderr) = run(&["--dry-run"]);
    assert_eq!(code, 1, "a damaged file fails the run: {stderr}");
    assert_eq!(contents(dir.path()), before, "a dry run writes nothing");
    let damaged = root.join("obj/damaged.bc");
    assert!(
        stderr.contains(&format!("'{}'", damaged.display())),
        "{stderr}"
    );
    let lines = file_lines(&plan);
    let mut planned: Vec<String> = lines.iter().map(|l| l.0.clone()).collect();
    planned.sort();
    // A file without device code (obj/plain-host.o) is left alone and not listed.
    let mut expected: Vec<String> = WALKED
        .iter()
        .filter(|p| **p != "obj/damaged.bc")
        .map(|p| root.join(p).display().to_string())
        .collect();
    expected.sort();
    assert_eq!(planned, expected, "{plan}");
    let sums = lines.iter().fold([0u64; 4], |s, l| {
        [s[0] + l.1, s[1] + l.2, s[2] + l.3, s[3] + l.4]
    });
    let changed = lines.iter().filter(|l| l.1 != l.2).count() as u64;
    assert_eq!(
        totals(&plan),
        [6, changed, 1, sums[0], sums[1], sums[2], sums[3]],
        "{plan}"
    );

    // Per processor: every target but gfx90a's loses all its code, gfx90a's keeps all.
    let per_target: Vec<&str> = plan
        .lines()
        .filter(|l| l.starts_with("total gfx"))
        .collect();
    assert!(per_target.len() >= 3, "{plan}");
    for line in per_target {
        let (target, rest) = line["total ".len()..].split_once(':').unwrap();
        let numbers: Vec<u64> = rest
            .split(|c: char| !c.is_ascii_digit())
            .filter(|w| !w.is_empty())
            .map(|w| w.parse().unwrap())
            .collect();
        let kept = if target.starts_with("gfx90a") {
            numbers[1]
        } else {
            0
        };
        assert_eq!(numbers[2], kept, "{line}");
    }

    let (code, done, stderr) = run(&["--in-place"]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        done.replace("went", "would go")
            .replace(" changed,", " would change,"),
        plan,
        "the run does what the dry run said"
    );
    let after = contents(dir.path());
    assert_eq!(after[&damaged], before[&damaged], "the damaged file stays");
    assert_eq!(
        after[&dir.path().join("outside.o")],
        before[&dir.path().join("outside.o")],
        "a link out of the tree is not followed"
    );
    for (file, _, images_after, _, bytes_after) in file_lines(&done) {
        let file = PathBuf::from(file);
        assert_eq!(after[&file].len() as u64, bytes_after, "{}", file.display());
        let kept = images(&file);
        assert_eq!(kept.is_empty(), images_after == 0, "{}", file.display());
        assert!(
            kept.iter().all(|(arch, _)| arch.starts_with("gfx90a")),
            "{}: {kept:?}",
            file.display()
        );
    }
}

#[test]
fn strip_a_tree_into_a_folder_as_file_by_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = tree(dir.path());
    let before = contents(&root);
    // Each file alone, one at a time: the reference.
    let mut reference = BTreeMap::new();
    for at in WALKED.iter().filter(|p| **p != "obj/damaged.bc") {
        let out = dir.path().join("one").join(at.replace('/', "_"));
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        let (code, _, stderr) = text_output(
            offload()
                .args(["strip", "--keep", "gfx90a", "-o"])
                .arg(&out)
                .arg(root.join(at)),
        );
        assert_eq!(code, 0, "{stderr}");
        reference.insert(*at, std::fs::read(out).unwrap());
    }
    for round in 0..3 {
        let out = dir.path().join(format!("out{round}"));
        let (code, _, stderr) = text_output(
            offload()
                .args(["strip", "-r", "--keep", "gfx90a", "-j", "8", "-o"])
                .arg(&out)
                .arg(&root)
                .env("RAYON_NUM_THREADS", "8"),
        );
        assert_eq!(code, 1, "{stderr}");
        for (at, bytes) in &reference {
            assert!(
                std::fs::read(out.join(at)).unwrap() == *bytes,
                "round {round}: {at} differs from its strip alone"
            );
        }
        assert!(
            !out.join("obj/damaged.bc").exists(),
            "no output for a failure"
        );
        assert!(
            !out.join("README.txt").exists(),
            "no device code, not taken"
        );
        assert_eq!(contents(&root), before, "the inputs stay");
    }
}

#[test]
fn walk_folders() {
    let dir = tempfile::tempdir().unwrap();
    let root = tree(dir.path());
    let listed = |args: &[&str]| {
        let (code, stdout, stderr) = text_output(offload().arg("ls").args(args).arg(&root));
        let mut files: Vec<String> = stdout
            .lines()
            .skip(1)
            .filter(|l| !l.starts_with("total"))
            .filter_map(|l| l.split_whitespace().nth(6))
            .map(|f| {
                let f = f.split('(').next().unwrap();
                f.strip_prefix(&format!("{}/", root.display()))
                    .unwrap()
                    .to_string()
            })
            .collect();
        files.dedup();
        (code, files, stderr)
    };
    // Without -r: the folder's own files, none of which holds device code.
    let (code, files, stderr) = listed(&[]);
    assert_eq!((code, files.len()), (0, 0), "{stderr}");
    let (code, files, stderr) = listed(&["-r"]);
    assert_eq!(code, 1, "the damaged file: {stderr}");
    let mut expected: Vec<&str> = WALKED.to_vec();
    expected.retain(|p| *p != "obj/damaged.bc");
    assert_eq!(files, expected);
    assert!(!stderr.contains("loop"), "links are not followed: {stderr}");
    let (_, files, stderr) = listed(&["-r", "--follow"]);
    assert!(
        stderr.contains(&format!(
            "'{}': symbolic link loop, skipped",
            root.join("obj/deep/loop").display()
        )),
        "{stderr}"
    );
    assert!(files.contains(&"lib/outside.o".to_string()), "{files:?}");
}

#[test]
fn du_of_a_tree_adds_up_to_ls() {
    let dir = tempfile::tempdir().unwrap();
    let root = tree(dir.path());
    std::fs::remove_file(root.join("obj/damaged.bc")).unwrap();
    let (code, stdout, stderr) = text_output(
        offload()
            .args(["du", "-r", "--json", "--keep", "gfx90a"])
            .arg(&root),
    );
    assert_eq!(code, 0, "{stderr}");
    let du: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let mut ls_total = 0;
    let mut ls_by_target: BTreeMap<String, u64> = BTreeMap::new();
    for file in du["files"].as_array().unwrap() {
        let path = PathBuf::from(file["file"].as_str().unwrap());
        let listed = images(&path);
        let sum: u64 = listed.iter().map(|(_, size)| size).sum();
        let counted: u64 = file["targets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["inflated"].as_u64().unwrap())
            .sum();
        assert_eq!(counted, sum, "{}", path.display());
        ls_total += sum;
        for (arch, size) in listed {
            *ls_by_target.entry(arch).or_default() += size;
        }
    }
    assert!(ls_total > 0);
    let total: BTreeMap<String, u64> = du["total"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["target"].as_str().unwrap().to_string(),
                t["inflated"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(total, ls_by_target);
    for t in du["total"].as_array().unwrap() {
        let removed = t["removed"].as_u64().unwrap();
        let target = t["target"].as_str().unwrap();
        // Only gfx90a code stays: every other target's stored bytes go, none of gfx90a's.
        if target.starts_with("gfx90a") {
            assert_eq!(removed, 0, "{target}");
        } else {
            assert_eq!(removed, t["stored"].as_u64().unwrap(), "{target}");
        }
    }
    let stored: Vec<u64> = du["total"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["stored"].as_u64().unwrap())
        .collect();
    assert!(
        stored.windows(2).all(|w| w[0] >= w[1]),
        "sorted: {stored:?}"
    );
}
