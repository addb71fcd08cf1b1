//! `offload ls -r`, `ls -r --json` and `du -r` of a tree larger than a chunk of files and than
//! the rows a table holds in memory: the output is the same whatever the number of threads,
//! the files in the order of the walk, the images numbered in that order.

use std::path::{Path, PathBuf};

use crate::util::{offload, samples_dir, succeed};

/// The number of files: more than one chunk of the walk's files read at once (256), and
/// enough rows that the table's cells pass what it holds in memory (1 MiB).
const FILES: usize = 3_000;

/// A tree of `FILES` copies of a sample bundle in `root`, 30 folders of 100 with long names;
/// the files in the order the walk gives them (names in byte order, folder by folder).
fn make_tree(root: &Path) -> Vec<PathBuf> {
    let sample = std::fs::read(samples_dir().join("clang/kernel-fatbin.hip_fatbin")).unwrap();
    let mut files = Vec::new();
    for k in 0..FILES {
        let folder = root.join(format!(
            "folder-with-a-name-long-enough-to-widen-the-table-{:02}",
            k / 100
        ));
        std::fs::create_dir_all(&folder).unwrap();
        let file = folder.join(format!("kernels-{:03}.o", k % 100));
        std::fs::write(&file, &sample).unwrap();
        files.push(file);
    }
    files
}

/// The standard output of `offload ARGS tree` in `dir` with `threads` threads.
fn run(dir: &Path, args: &[&str], threads: &str) -> Vec<u8> {
    succeed(
        offload()
            .current_dir(dir)
            .env("RAYON_NUM_THREADS", threads)
            .args(args)
            .arg("tree"),
    )
    .stdout
}

#[test]
fn listings_of_a_large_tree_do_not_depend_on_threads_and_follow_the_walk() {
    let dir = tempfile::tempdir().unwrap();
    let files = make_tree(&dir.path().join("tree"));
    let commands: [&[&str]; 3] = [&["ls", "-r"], &["ls", "-r", "--json"], &["du", "-r"]];
    let mut outputs = Vec::new();
    for args in commands {
        let alone = run(dir.path(), args, "1");
        for _ in 0..3 {
            let many = run(dir.path(), args, "8");
            assert!(many == alone, "offload {args:?} differs with 8 threads");
        }
        outputs.push(String::from_utf8(alone).unwrap());
    }
    let [table, json, du] = &outputs[..] else {
        unreachable!()
    };
    let relative: Vec<String> = files
        .iter()
        .map(|f| {
            let name = f.strip_prefix(dir.path()).unwrap();
            name.to_str().unwrap().to_string()
        })
        .collect();

    // JSON: every image's file, in the walk's order, each file's images together.
    let rows: Vec<serde_json::Value> = serde_json::from_str(json).unwrap();
    let mut listed: Vec<&str> = rows.iter().map(|r| r["file"].as_str().unwrap()).collect();
    let per_file = rows.len() / FILES;
    assert!(per_file > 0 && rows.len() == per_file * FILES);
    listed.dedup();
    assert_eq!(listed, relative);

    // The table: numbered in order, the same files in the same order, then the totals.
    assert!(
        table.len() > 1 << 20,
        "the table should pass what is held in memory"
    );
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].trim_start().starts_with("#  KIND"));
    for (k, line) in lines[1..=rows.len()].iter().enumerate() {
        let number = line.split_whitespace().next().unwrap();
        assert_eq!(number, k.to_string());
        let file = &relative[k / per_file];
        assert!(line.contains(file.as_str()), "{line} should name {file}");
    }
    assert!(lines[rows.len() + 1].starts_with(&format!("total: {FILES} files, {FILES} with")));

    // du: the files' rows in the walk's order, then the totals.
    let mut counted: Vec<&str> = du
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().last())
        .filter(|f| *f != "(total)")
        .collect();
    counted.dedup();
    assert_eq!(counted, relative);
    assert!(du.lines().last().unwrap().starts_with("(all) "));
}
