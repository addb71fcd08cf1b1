//! `offload extract -r` of trees of thousands of files, read a group of files at a time: the
//! outputs do not depend on the number of threads nor on the groups, and the descriptors held
//! do not grow with the number of files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use offload::format::bundle;

use crate::util::{samples_dir, OFFLOAD};

const HOST: &str = "host-x86_64-unknown-linux-gnu-";

/// A tree of `files` inputs in `root`: bundles with a payload of their own, every third one
/// over 64 KiB (mapped rather than read whole), in folders of 100 that reuse the same names
/// (so that the outputs of different groups of files are numbered apart), and a few samples
/// holding several images or a compressed bundle.
fn make_tree(root: &Path, files: usize) {
    for k in 0..files {
        let folder = root.join(format!("d{:02}", k / 100));
        std::fs::create_dir_all(&folder).unwrap();
        let mut payload = format!("\x7fELF payload {k}").into_bytes();
        if k % 3 == 0 {
            payload.resize(70_000 + k, b'x');
        }
        let entries: [(&str, &[u8]); 3] = [
            (HOST, b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", &payload),
            ("hipv4-amdgcn-amd-amdhsa--gfx942", b"\x7fELF other"),
        ];
        let name = format!("k{:02}.o", k % 100);
        std::fs::write(folder.join(name), bundle::to_vec(&entries, 8)).unwrap();
    }
    for sample in [
        "clang/kernel-fatbin.hip_fatbin",
        "llvm23/hip-compressed.o",
        "clang/vadd-rdc.o",
    ] {
        let from = samples_dir().join(sample);
        let to = root.join("d00").join(from.file_name().unwrap());
        std::fs::copy(&from, to).unwrap();
    }
}

/// Every file of the folder `dir` (not walked further), name and bytes.
fn contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect()
}

/// Runs `extract -r tree --arch gfx90a -o OUT` in `dir` with `threads` threads under a shell
/// line `limit` (a `ulimit`); gives the listing, with the output folder's name taken out.
fn extract(dir: &Path, out: &str, threads: &str, limit: &str) -> String {
    let ran = Command::new("sh")
        .current_dir(dir)
        .env("RAYON_NUM_THREADS", threads)
        .env_remove("OFFLOAD_LOG")
        .args([
            "-c",
            &format!("{limit}; exec '{OFFLOAD}' extract -r tree --arch gfx90a -o {out}"),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert!(ran.status.success(), "{threads} threads: {stderr}");
    String::from_utf8(ran.stdout)
        .unwrap()
        .replace(&format!("{out}/"), "")
}

#[test]
fn eight_threads_write_what_one_writes_byte_for_byte() {
    const FILES: usize = 3000;
    let dir = tempfile::tempdir().unwrap();
    make_tree(&dir.path().join("tree"), FILES);
    let listing = extract(dir.path(), "one", "1", "true");
    let written = contents(&dir.path().join("one"));
    // Each bundle's gfx90a code, the sample bundle's, and the compressed and RDC samples'.
    assert_eq!(written.len(), FILES + 3, "{:?}", written.keys().take(5));
    assert!(written.contains_key("k00.o-hipv4-amdgcn-amd-amdhsa--gfx90a-30.co"));
    assert!(listing.contains(&format!("total: {} files", FILES + 3)));
    for run in 0..3 {
        let out = format!("eight{run}");
        let theirs = extract(dir.path(), &out, "8", "true");
        assert_eq!(theirs, listing, "run {run}: the listing differs");
        let outputs = contents(&dir.path().join(&out));
        assert!(outputs == written, "run {run}: the files written differ");
    }
    // Into a folder that exists (built in a staging folder inside it, its files moved into
    // it at the end), the same files and the same listing as into a new one (built whole
    // beside its name), with 8 threads as with one; a file of another name stays, and one
    // of an output's name is replaced, its mode kept.
    use std::os::unix::fs::PermissionsExt;
    let replaced = "k00.o-hipv4-amdgcn-amd-amdhsa--gfx90a-30.co";
    for run in 0..3 {
        let existing = dir.path().join(format!("existing{run}"));
        std::fs::create_dir(&existing).unwrap();
        std::fs::write(existing.join("notes.txt"), b"mine").unwrap();
        std::fs::write(existing.join(replaced), b"old").unwrap();
        let mode = std::fs::Permissions::from_mode(0o640);
        std::fs::set_permissions(existing.join(replaced), mode).unwrap();
        let threads = if run == 0 { "1" } else { "8" };
        let theirs = extract(dir.path(), &format!("existing{run}"), threads, "true");
        assert_eq!(
            theirs, listing,
            "run {run}, into a folder that exists: the listing differs"
        );
        let mut outputs = contents(&existing);
        assert_eq!(outputs.remove("notes.txt").as_deref(), Some(&b"mine"[..]));
        assert!(outputs == written, "run {run}: the files written differ");
        let meta = std::fs::metadata(existing.join(replaced)).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o640);
    }
    // Nothing is left beside the outputs: no temporary folder or file.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "eight0",
            "eight1",
            "eight2",
            "existing0",
            "existing1",
            "existing2",
            "one",
            "tree"
        ]
    );
}

/// The names of the folder `dir`, sorted, hidden ones too.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn no_output_is_put_over_an_input_of_any_group() {
    // Groups of 8 files under `ulimit -n 64`: the tree's 43 files are read in 6 groups.
    const FILES: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    make_tree(&tree, FILES);
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("notes.txt"), b"mine").unwrap();
    // An input named after the tree, read in the last group, has the name of an output of
    // the first; a hard link to an input of the last group of the tree has another's.
    let first = "k00.o-hipv4-amdgcn-amd-amdhsa--gfx90a.co";
    let second = "k01.o-hipv4-amdgcn-amd-amdhsa--gfx90a.co";
    std::fs::copy(tree.join("d00/k05.o"), out.join(first)).unwrap();
    std::fs::hard_link(tree.join("d00/k39.o"), out.join(second)).unwrap();
    let before = contents(&out);
    let ran = Command::new("sh")
        .current_dir(dir.path())
        .env("RAYON_NUM_THREADS", "8")
        .args([
            "-c",
            &format!(
                "ulimit -n 64; exec '{OFFLOAD}' extract -r tree out/{first} \
                 --arch gfx90a --arch gfx942 -o out"
            ),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert_eq!(ran.status.code(), Some(1), "{stderr}");
    for name in [first, second] {
        let line =
            format!("out/{name}': is an input file of this run; refusing to write over an input");
        assert!(stderr.contains(&line), "{name}: {stderr}");
    }
    let listing = String::from_utf8_lossy(&ran.stdout);
    let after = contents(&out);
    // The inputs are untouched, and the inputs refused have none of their images written:
    // not their gfx942 code either, which had no name of an input.
    for name in ["notes.txt", first, second] {
        assert_eq!(after[name], before[name], "{name}");
    }
    for refused in ["k00.o", "k01.o"] {
        for target in ["gfx90a", "gfx942"] {
            let name = format!("{refused}-hipv4-amdgcn-amd-amdhsa--{target}.co");
            assert!(!listing.contains(&format!("out/{name}\t")), "{listing}");
            assert_eq!(after.contains_key(&name), target == "gfx90a", "{name}");
        }
    }
    // Every other input's images, the first group's and the last's.
    for name in [
        "k02.o-hipv4-amdgcn-amd-amdhsa--gfx942.co",
        "k39.o-hipv4-amdgcn-amd-amdhsa--gfx90a.co",
        "k00.o-hipv4-amdgcn-amd-amdhsa--gfx90a.co-hipv4-amdgcn-amd-amdhsa--gfx942.co",
    ] {
        assert!(after.contains_key(name), "{name}: {:?}", after.keys());
        assert!(
            listing.contains(&format!("out/{name}\t")),
            "{name}: {listing}"
        );
    }
    assert!(names_in(&out).iter().all(|n| !n.starts_with('.')));
}

/// A tree in `dir` whose folder `b` holds two damaged compressed bundles: every image of
/// theirs fails to be written.
fn damaged_tree(dir: &Path) -> PathBuf {
    let tree = dir.join("tree");
    std::fs::create_dir_all(tree.join("b")).unwrap();
    for damaged in ["ccob-bad-hash.bin", "ccob-cut-payload.bin"] {
        let from = samples_dir().join("damaged").join(damaged);
        std::fs::copy(from, tree.join("b").join(damaged)).unwrap();
    }
    tree
}

#[test]
fn a_failed_run_leaves_a_folder_that_exists_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let tree = damaged_tree(dir.path());
    // A good input whose output's name is a folder: it fails too, as every input does.
    let sample = samples_dir().join("clang/kernel-fatbin.hip_fatbin");
    std::fs::create_dir_all(tree.join("a")).unwrap();
    std::fs::copy(sample, tree.join("a/k.o")).unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(out.join("k.o-hipv4-amdgcn-amd-amdhsa--gfx90a.co")).unwrap();
    std::fs::write(out.join("notes.txt"), b"mine").unwrap();
    let before = names_in(&out);
    let run = Command::new(OFFLOAD)
        .current_dir(dir.path())
        .env("RAYON_NUM_THREADS", "8")
        .args(["extract", "-r", "tree", "--arch", "gfx90a", "-o", "out"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    assert!(run.stdout.is_empty(), "{stderr}");
    assert!(stderr.contains("Is a directory"), "{stderr}");
    assert_eq!(names_in(&out), before);
    assert_eq!(std::fs::read(out.join("notes.txt")).unwrap(), b"mine");
}

#[test]
fn a_new_folder_appears_whole_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    let tree = damaged_tree(dir.path());
    let run = |out: &str| {
        Command::new(OFFLOAD)
            .current_dir(dir.path())
            .env("RAYON_NUM_THREADS", "8")
            .args(["extract", "-r", "tree", "--arch", "gfx90a", "-o", out])
            .output()
            .unwrap()
    };
    let left = || {
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    // Every input damaged: an error, and no folder, not even a hidden one, nor its parent.
    let failed = run("new/out");
    assert_eq!(failed.status.code(), Some(1));
    assert!(failed.stdout.is_empty());
    assert_eq!(left(), ["tree"]);

    // A good input beside the damaged ones: its image is written, the folder gets the mode
    // `mkdir` gives, and nothing else is left.
    let sample = samples_dir().join("clang/kernel-fatbin.hip_fatbin");
    std::fs::create_dir_all(tree.join("a")).unwrap();
    std::fs::copy(sample, tree.join("a/k.o")).unwrap();
    let some = run("out");
    assert_eq!(some.status.code(), Some(1), "the damaged inputs are errors");
    let listing = String::from_utf8(some.stdout).unwrap();
    assert!(listing.starts_with("out/k.o-hipv4-amdgcn-amd-amdhsa--gfx90a.co\t"));
    assert_eq!(left(), ["out", "tree"]);
    assert_eq!(
        contents(&dir.path().join("out")).keys().collect::<Vec<_>>(),
        ["k.o-hipv4-amdgcn-amd-amdhsa--gfx90a.co"]
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir(dir.path().join("made")).unwrap();
    let mode = |p: &str| {
        let meta = std::fs::metadata(dir.path().join(p)).unwrap();
        meta.permissions().mode() & 0o7777
    };
    assert_eq!(mode("out"), mode("made"));
}

#[test]
fn descriptors_do_not_grow_with_the_number_of_files() {
    const FILES: usize = 1000;
    let dir = tempfile::tempdir().unwrap();
    make_tree(&dir.path().join("tree"), FILES);
    let listing = extract(dir.path(), "out", "8", "ulimit -n 64");
    assert!(listing.contains(&format!("total: {} files", FILES + 3)));
    let written = contents(&dir.path().join("out"));
    assert_eq!(written.len(), FILES + 3);
    // Every input's own payload, the large ones whole.
    let payloads: usize = (0..FILES)
        .filter(|k| {
            let name = match k / 100 {
                0 => format!("k{:02}.o-hipv4-amdgcn-amd-amdhsa--gfx90a.co", k % 100),
                n => format!(
                    "k{:02}.o-hipv4-amdgcn-amd-amdhsa--gfx90a-{}.co",
                    k % 100,
                    n + 1
                ),
            };
            let bytes = &written[&name];
            bytes.starts_with(format!("\x7fELF payload {k}").as_bytes())
                && (k % 3 != 0 || bytes.len() == 70_000 + k)
        })
        .count();
    assert_eq!(payloads, FILES);
    // No temporary file is left beside them.
    assert!(written.keys().all(|name| !name.starts_with('.')));
}

#[test]
fn a_table_that_cannot_be_made_is_an_error_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    // More files than the tables of the names given (extract) and of the real paths found
    // (check) hold in memory: each is a temporary file from the start.
    let sample = dir.path().join("libhip.so");
    std::fs::copy(samples_dir().join("linked/libhip.so"), &sample).unwrap();
    for k in 0..2100 {
        let folder = dir.path().join(format!("tree/d{:02}", k / 100));
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::hard_link(&sample, folder.join(format!("lib{}.so", k % 100))).unwrap();
    }
    let temporary = dir.path().join("temporary");
    let run = |args: &[&str]| {
        Command::new(OFFLOAD)
            .current_dir(dir.path())
            .env("TMPDIR", &temporary)
            .env_remove("OFFLOAD_LOG")
            .args(args)
            .output()
            .unwrap()
    };
    let extract = ["extract", "-r", "tree", "--arch", "gfx90a", "-o", "out"];
    let table = format!(
        "a temporary file of 98304 bytes in '{}' for a table of 0 keys: No such file or \
         directory\n",
        temporary.display()
    );
    let failed = run(&extract);
    assert_eq!(failed.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&failed.stderr),
        format!("offload extract: error: 'out': the names of its files: {table}")
    );
    assert!(failed.stdout.is_empty());
    assert!(!dir.path().join("out").exists());
    for json in [&[][..], &["--json"]] {
        let failed = run(&[&["check", "-r", "tree", "--device", "gfx90a"], json].concat());
        assert_eq!(failed.status.code(), Some(2));
        assert_eq!(
            String::from_utf8_lossy(&failed.stderr),
            format!("offload check: error: the real paths of the files found: {table}")
        );
        assert_eq!(failed.stdout.is_empty(), json.is_empty());
    }
    // Where temporary files can be made, every name is given, numbered apart; the files are
    // gone with the run.
    std::fs::create_dir(&temporary).unwrap();
    let done = run(&extract);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    let names = names_in(&dir.path().join("out"));
    assert_eq!(names.len(), 2 * 2100, "two images of gfx90a a file");
    assert!(names.contains(&"lib7.so-hipv4-amdgcn-amd-amdhsa--gfx90a-21.co".to_string()));
    let checked = run(&["check", "-r", "tree", "--device", "gfx90a"]);
    assert_eq!(checked.status.code(), Some(0));
    assert_eq!(names_in(&temporary), Vec::<String>::new());
}
