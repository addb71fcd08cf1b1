//! File names are bytes: a name that is not UTF-8 (`a\xff.o`), one holding a newline
//! (`n\nl.o`) and one starting with `-` (`-x.o`, given after `--`) reach every command as they
//! are. Each command reads the file named and no other (a decoy beside it, named as the name
//! reads with U+FFFD, holds other code and stays as it was), writes outputs whose names keep
//! the raw bytes, shows names in text by the one escaping rule, and gives them in JSON as text
//! and, when not UTF-8, as base64 bytes that decode to the name.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::{offload, samples_dir, text_output};

/// Each name tested, the decoy beside it (the name with U+FFFD for its odd byte), and the
/// name as text output shows it.
const NAMES: [(&[u8], &str, &str); 3] = [
    (b"a\xff.o", "a\u{FFFD}.o", "a\\xff.o"),
    (b"n\nl.o", "n\u{FFFD}l.o", "n\\nl.o"),
    (b"-x.o", "\u{FFFD}x.o", "-x.o"),
];

/// A HIP object with a plain bundle for gfx90a and gfx1030.
fn hip_object() -> PathBuf {
    samples_dir().join("llvm23/hip.o")
}

/// The same code in a compressed bundle: what decoys hold, told apart from [`hip_object`].
fn compressed_object() -> PathBuf {
    samples_dir().join("llvm23/hip-compressed.o")
}

/// A host library holding a bundle for gfx906 and gfx90a.
fn library() -> PathBuf {
    samples_dir().join("linked/libhip.so")
}

fn os(bytes: &[u8]) -> &OsStr {
    OsStr::from_bytes(bytes)
}

/// `bytes` then `rest`, as a name.
fn joined(bytes: &[u8], rest: &str) -> OsString {
    let mut name = bytes.to_vec();
    name.extend_from_slice(rest.as_bytes());
    OsString::from_vec(name)
}

/// Runs `offload args` in `dir`.
fn run_in(dir: &Path, args: &[&OsStr]) -> (i32, String, String) {
    text_output(offload().current_dir(dir).args(args))
}

/// Copies `file` to `dir/name` and the decoy file to `dir/decoy`.
fn place(dir: &Path, name: &[u8], file: &Path, decoy: &str, decoy_file: &Path) {
    std::fs::copy(file, dir.join(os(name))).unwrap();
    std::fs::copy(decoy_file, dir.join(decoy)).unwrap();
}

/// Asserts that `dir/decoy` still holds `decoy_file`'s bytes.
fn untouched(dir: &Path, decoy: &str, decoy_file: &Path) {
    assert_eq!(
        std::fs::read(dir.join(decoy)).unwrap(),
        std::fs::read(decoy_file).unwrap(),
        "the decoy {decoy:?} changed"
    );
}

/// The raw names of the entries of `dir`, sorted.
fn names_in(dir: &Path) -> Vec<Vec<u8>> {
    let mut names: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_vec())
        .collect();
    names.sort();
    names
}

/// The name `object[field]` carries: the base64 of `FIELD_bytes` decoded when present, else
/// the text. A name that is not UTF-8 must have its bytes.
fn carried(object: &Value, field: &str) -> Vec<u8> {
    let text = object[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field}: {object}"));
    match object.get(format!("{field}_bytes")) {
        Some(bytes) => {
            let bytes = decode_base64(bytes.as_str().unwrap());
            assert_eq!(String::from_utf8_lossy(&bytes), text, "{object}");
            assert!(std::str::from_utf8(&bytes).is_err(), "{object}");
            bytes
        }
        None => text.as_bytes().to_vec(),
    }
}

/// Standard base64, padded.
fn decode_base64(text: &str) -> Vec<u8> {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = Vec::new();
    for c in text.bytes().filter(|&c| c != b'=') {
        let value = alphabet.iter().position(|&a| a == c).expect("base64") as u32;
        bits = bits << 6 | value;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
        }
    }
    out
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// The lines `ls` prints for [`hip_object`] named `shown`.
fn hip_listing(shown: &str) -> String {
    format!(
        "#  KIND    ARCH     TRIPLE               PRODUCER  SIZE  WHERE\n\
         0  bundle  -        x86_64-pc-linux-gnu  host         0  {shown} .hip_fatbin @0x2000\n\
         1  bundle  gfx90a   amdgcn-amd-amdhsa    hip       3320  {shown} .hip_fatbin @0x2000\n\
         2  bundle  gfx1030  amdgcn-amd-amdhsa    hip       3320  {shown} .hip_fatbin @0x3000\n"
    )
}

#[test]
fn ls_lists_the_file_named_and_json_gives_its_bytes() {
    for (name, decoy, shown) in NAMES {
        let dir = tempfile::tempdir().unwrap();
        place(dir.path(), name, &hip_object(), decoy, &compressed_object());
        let (code, out, err) = run_in(dir.path(), &["ls".as_ref(), "--".as_ref(), os(name)]);
        assert_eq!(
            (code, out.as_str()),
            (0, hip_listing(shown).as_str()),
            "{err}"
        );
        let (code, out, err) = run_in(dir.path(), &["ls", "--json", "--"].map(OsStr::new));
        assert_eq!(code, 2, "no file named: {out}{err}");
        let (code, out, err) = run_in(
            dir.path(),
            &["ls".as_ref(), "--json".as_ref(), "--".as_ref(), os(name)],
        );
        assert_eq!(code, 0, "{err}");
        let rows = json(&out);
        assert_eq!(rows.as_array().unwrap().len(), 3);
        for row in rows.as_array().unwrap() {
            assert_eq!(carried(row, "file"), name, "{row}");
            assert_eq!(row["compressed"], false, "the decoy was read: {row}");
        }
        untouched(dir.path(), decoy, &compressed_object());
    }
    // A name starting with '-' given as a path, without '--'.
    let dir = tempfile::tempdir().unwrap();
    place(
        dir.path(),
        b"-x.o",
        &hip_object(),
        "x.o",
        &compressed_object(),
    );
    let (code, out, err) = run_in(dir.path(), &["ls", "./-x.o"].map(OsStr::new));
    assert_eq!(
        (code, out.as_str()),
        (0, hip_listing("./-x.o").as_str()),
        "{err}"
    );
}

/// A folder `tree` in `dir` holding every name of [`NAMES`] as a copy of `file`, and their
/// decoys as copies of `decoy_file`.
fn tree(dir: &Path, file: &Path, decoy_file: &Path) -> PathBuf {
    let tree = dir.join("tree");
    std::fs::create_dir(&tree).unwrap();
    for (name, decoy, _) in NAMES {
        place(&tree, name, file, decoy, decoy_file);
    }
    tree
}

#[test]
fn ls_and_du_walk_to_each_name() {
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path(), &hip_object(), &compressed_object());
    let (code, out, err) = run_in(dir.path(), &["ls", "-r", "--json", "tree"].map(OsStr::new));
    assert_eq!(code, 0, "{err}");
    let rows = json(&out);
    let plain: Vec<Vec<u8>> = (rows.as_array().unwrap().iter())
        .filter(|row| row["compressed"] == false)
        .map(|row| carried(row, "file"))
        .collect();
    let mut want: Vec<Vec<u8>> = Vec::new();
    for (name, _, _) in NAMES {
        want.extend(std::iter::repeat_n([b"tree/", name].concat(), 3));
    }
    let mut got = plain.clone();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    let (code, out, err) = run_in(dir.path(), &["ls", "-r", "tree"].map(OsStr::new));
    assert_eq!(code, 0, "{err}");
    for (_, decoy, shown) in NAMES {
        let line = format!("hip       3320  tree/{shown} .hip_fatbin @0x2000\n");
        assert_eq!(out.matches(&line).count(), 1, "{line}: {out}");
        let line = format!("tree/{decoy} .hip_fatbin (compressed)\n");
        assert_eq!(out.matches(&line).count(), 3, "{line}: {out}");
    }
    let (code, out, err) = run_in(dir.path(), &["du", "-r", "--json", "tree"].map(OsStr::new));
    assert_eq!(code, 0, "{err}");
    let usage = json(&out);
    let mut files: Vec<Vec<u8>> = (usage["files"].as_array().unwrap().iter())
        .map(|f| carried(f, "file"))
        .collect();
    files.sort();
    let mut want: Vec<Vec<u8>> = NAMES
        .iter()
        .flat_map(|(name, decoy, _)| [[b"tree/", *name].concat(), format!("tree/{decoy}").into()])
        .collect();
    want.sort();
    assert_eq!(files, want);
}

#[test]
fn du_counts_the_file_named() {
    for (name, decoy, shown) in NAMES {
        let dir = tempfile::tempdir().unwrap();
        place(dir.path(), name, &hip_object(), decoy, &library());
        let (code, out, err) = run_in(dir.path(), &["du".as_ref(), "--".as_ref(), os(name)]);
        assert_eq!(code, 0, "{err}");
        let rows: Vec<Vec<&str>> = out
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(rows[1], ["gfx1030", "1", "3320", "3320", shown], "{out}");
        assert_eq!(rows[2], ["gfx90a", "1", "3320", "3320", shown], "{out}");
        let (code, out, err) = run_in(
            dir.path(),
            &["du".as_ref(), "--json".as_ref(), "--".as_ref(), os(name)],
        );
        assert_eq!(code, 0, "{err}");
        let usage = json(&out);
        assert_eq!(carried(&usage["files"][0], "file"), name, "{usage}");
        untouched(dir.path(), decoy, &library());
    }
}

/// What `extract --arch gfx90a` writes from [`hip_object`], read from a plainly named copy.
fn gfx90a_code() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(hip_object(), dir.path().join("k.o")).unwrap();
    let (code, _, err) = run_in(
        dir.path(),
        &["extract", "--arch", "gfx90a", "k.o"].map(OsStr::new),
    );
    assert_eq!(code, 0, "{err}");
    std::fs::read(dir.path().join("k.o-hip-amdgcn-amd-amdhsa--gfx90a.co")).unwrap()
}

#[test]
fn extract_names_its_outputs_with_the_input_bytes() {
    let code_object = gfx90a_code();
    for (name, decoy, shown) in NAMES {
        let dir = tempfile::tempdir().unwrap();
        place(dir.path(), name, &hip_object(), decoy, &compressed_object());
        let args = ["extract", "--arch", "gfx90a", "-o", "out", "--"].map(OsStr::new);
        let (code, out, err) = run_in(dir.path(), &[&args[..], &[os(name)]].concat());
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            out,
            format!("out/{shown}-hip-amdgcn-amd-amdhsa--gfx90a.co\thip gfx90a 3320 bytes\n")
        );
        let written = joined(name, "-hip-amdgcn-amd-amdhsa--gfx90a.co");
        assert_eq!(names_in(&dir.path().join("out")), [written.as_bytes()]);
        let bytes = std::fs::read(dir.path().join("out").join(&written)).unwrap();
        assert_eq!(bytes, code_object);
        untouched(dir.path(), decoy, &compressed_object());
    }
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path(), &hip_object(), &library());
    let args = ["extract", "--arch", "gfx90a", "-o", "out", "-r", "tree"].map(OsStr::new);
    let (code, out, err) = run_in(dir.path(), &args);
    assert_eq!(code, 0, "{err}");
    let written = names_in(&dir.path().join("out"));
    for (name, decoy, shown) in NAMES {
        let ours = joined(name, "-hip-amdgcn-amd-amdhsa--gfx90a.co");
        assert!(written.contains(&ours.into_vec()), "{out}");
        let line = format!("out/{shown}-hip-amdgcn-amd-amdhsa--gfx90a.co\thip gfx90a 3320 bytes\n");
        assert!(out.contains(&line), "{line}: {out}");
        // The decoys are libraries with two bundles for gfx90a each.
        for theirs in [
            "hipv4-amdgcn-amd-amdhsa--gfx90a",
            "hipv4-amdgcn-amd-amdhsa--gfx90a-2",
        ] {
            let theirs = format!("{decoy}-{theirs}.co");
            assert!(written.contains(&theirs.into_bytes()), "{out}");
        }
    }
    assert_eq!(written.len(), 9, "{out}");
}

#[test]
fn check_reads_the_library_named_and_json_gives_its_bytes() {
    for (name, decoy, shown) in NAMES {
        let dir = tempfile::tempdir().unwrap();
        // The decoy has one bundle; the library named, two.
        place(dir.path(), name, &library(), decoy, &hip_object());
        let args = ["check", "--device", "gfx90a", "--"].map(OsStr::new);
        let (code, out, err) = run_in(dir.path(), &[&args[..], &[os(name)]].concat());
        assert_eq!(code, 0, "{err}");
        let row: Vec<&str> = out
            .lines()
            .find(|l| l.starts_with(shown))
            .unwrap_or_else(|| panic!("{out}"))
            .split_whitespace()
            .collect();
        assert_eq!(row, [shown, "2", "gfx90a", "2", "0", "0", "0"], "{out}");
        let args = ["check", "--json", "--device", "gfx90a", "--"].map(OsStr::new);
        let (code, out, err) = run_in(dir.path(), &[&args[..], &[os(name)]].concat());
        assert_eq!(code, 0, "{err}");
        let report = json(&out);
        let files = report["files"].as_array().unwrap();
        assert_eq!(carried(&files[0], "path"), name, "{report}");
        assert_eq!(
            files[0]["bundles"][0]["targets"],
            serde_json::json!(["gfx906", "gfx90a"])
        );
        // The library it loads names it as the file that needs it.
        assert_eq!(files[1]["needed_as"], "libc.so.6", "{report}");
        assert_eq!(carried(&files[1], "needed_by"), name, "{report}");
        untouched(dir.path(), decoy, &hip_object());
    }
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path(), &library(), &hip_object());
    let args = ["check", "--json", "--device", "gfx90a", "-r", "tree"].map(OsStr::new);
    let (code, out, err) = run_in(dir.path(), &args);
    assert_eq!(code, 0, "{err}");
    let report = json(&out);
    let paths: Vec<Vec<u8>> = (report["files"].as_array().unwrap().iter())
        .map(|f| carried(f, "path"))
        .collect();
    for (name, _, _) in NAMES {
        assert!(paths.contains(&[b"tree/", name].concat()), "{report}");
    }
}

#[test]
fn verify_checks_the_file_named() {
    for (name, decoy, shown) in NAMES {
        let dir = tempfile::tempdir().unwrap();
        place(dir.path(), name, &compressed_object(), decoy, &hip_object());
        let (code, out, err) = run_in(dir.path(), &["verify".as_ref(), "--".as_ref(), os(name)]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            out,
            format!("{shown}: 1 compressed bundle sound, 0 damaged\n")
        );
        untouched(dir.path(), decoy, &hip_object());
    }
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path(), &compressed_object(), &hip_object());
    let (code, out, err) = run_in(dir.path(), &["verify", "-r", "tree"].map(OsStr::new));
    assert_eq!(code, 0, "{err}");
    for (_, decoy, shown) in NAMES {
        let line = format!("tree/{shown}: 1 compressed bundle sound, 0 damaged\n");
        assert_eq!(out.matches(&line).count(), 1, "{out}");
        let line = format!("tree/{decoy}: 0 compressed bundles sound, 0 damaged\n");
        assert_eq!(out.matches(&line).count(), 1, "{out}");
    }
}

/// The target IDs `ls --json` finds in `path`.
fn arches(path: &Path) -> Vec<String> {
    let (code, out, err) = text_output(offload().args(["ls", "--json"]).arg(path));
    assert_eq!(code, 0, "{err}");
    let rows = json(&out);
    (rows.as_array().unwrap().iter())
        .map(|r| r["arch"].as_str().unwrap().to_string())
        .filter(|a| !a.is_empty())
        .collect()
}

#[test]
fn strip_rewrites_the_file_named_and_mirrors_names_into_a_folder() {
    for (name, decoy, shown) in NAMES {
        let dir = tempfile::tempdir().unwrap();
        place(dir.path(), name, &hip_object(), decoy, &hip_object());
        let args = ["strip", "--keep", "gfx90a", "--in-place", "--"].map(OsStr::new);
        let (code, out, err) = run_in(dir.path(), &[&args[..], &[os(name)]].concat());
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            out,
            format!("{shown}: 2 device images went to 1, 18640 bytes to 14544 (1 bundles or binaries rewritten)\n")
        );
        assert_eq!(arches(&dir.path().join(os(name))), ["gfx90a"]);
        untouched(dir.path(), decoy, &hip_object());
    }
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path(), &hip_object(), &compressed_object());
    let args = ["strip", "--keep", "gfx90a", "-r", "-o", "out", "tree"].map(OsStr::new);
    let (code, out, err) = run_in(dir.path(), &args);
    assert_eq!(code, 0, "{err}");
    for (name, decoy, shown) in NAMES {
        let line = format!("tree/{shown}: 2 device images went to 1, 18640 bytes to 14544");
        assert!(out.contains(&line), "{line}: {out}");
        assert_eq!(arches(&dir.path().join("out").join(os(name))), ["gfx90a"]);
        untouched(&dir.path().join("tree"), decoy, &compressed_object());
    }
    assert_eq!(
        names_in(&dir.path().join("out")),
        names_in(&dir.path().join("tree"))
    );
}

#[test]
fn compress_and_decompress_keep_each_name() {
    for (name, decoy, shown) in NAMES {
        let dir = tempfile::tempdir().unwrap();
        place(dir.path(), name, &hip_object(), decoy, &library());
        let args = ["compress", "-o", "c.o", "--"].map(OsStr::new);
        let (code, out, err) = run_in(dir.path(), &[&args[..], &[os(name)]].concat());
        assert_eq!(code, 0, "{err}");
        let line = format!("{shown}: 2 device images went to 2, 18640 bytes to ");
        assert!(out.starts_with(&line), "{out}");
        assert!(
            out.ends_with(" (1 bundles or binaries rewritten)\n"),
            "{out}"
        );
        assert_eq!(out.lines().count(), 1, "{out}");
        untouched(dir.path(), decoy, &library());
    }
    let dir = tempfile::tempdir().unwrap();
    tree(dir.path(), &hip_object(), &library());
    let (code, out, err) = run_in(
        dir.path(),
        &["compress", "-r", "-o", "c", "tree"].map(OsStr::new),
    );
    assert_eq!(code, 0, "{err}");
    for (_, _, shown) in NAMES {
        assert!(
            out.contains(&format!("tree/{shown}: 2 device images went to 2")),
            "{out}"
        );
    }
    let (code, out, err) = run_in(
        dir.path(),
        &["decompress", "-r", "-o", "d", "c"].map(OsStr::new),
    );
    assert_eq!(code, 0, "{err}");
    for (name, decoy, shown) in NAMES {
        assert!(
            out.contains(&format!("c/{shown}: 2 device images went to 2")),
            "{out}"
        );
        let back = std::fs::read(dir.path().join("d").join(os(name))).unwrap();
        assert_eq!(back, std::fs::read(hip_object()).unwrap());
        untouched(&dir.path().join("tree"), decoy, &library());
    }
    assert_eq!(
        names_in(&dir.path().join("d")),
        names_in(&dir.path().join("tree"))
    );
}

/// The target IDs of the device code in `path`, sorted.
fn sorted_arches(path: &Path) -> Vec<String> {
    let mut found = arches(path);
    found.sort();
    found
}

#[test]
fn kpack_splits_and_merges_the_binaries_named() {
    for (name, decoy, shown) in NAMES {
        let dir = tempfile::tempdir().unwrap();
        place(dir.path(), name, &library(), decoy, &hip_object());
        let args = ["kpack", "--name", "g", "-o", "k", "--"].map(OsStr::new);
        let (code, out, err) = run_in(dir.path(), &[&args[..], &[os(name)]].concat());
        if std::str::from_utf8(name).is_err() {
            // The key the code goes under is text: refused, nothing written.
            assert_eq!(code, 1, "{out}");
            assert_eq!(
                err,
                format!(
                    "offload kpack: error: '{shown}': its name is not UTF-8, and the key its code \
                     goes under in the .kpack archives is text (the loader compares it as such): \
                     rename it; nothing was written for it\n"
                )
            );
            assert!(!dir.path().join("k").join(os(name)).exists());
            untouched(dir.path(), decoy, &hip_object());
            continue;
        }
        assert_eq!(code, 0, "{err}");
        assert!(
            out.starts_with(&format!("k/{shown}: 2 code-object indices\n")),
            "{out}"
        );
        let mut want = vec![b".kpack".to_vec(), name.to_vec()];
        want.sort();
        assert_eq!(names_in(&dir.path().join("k")), want);
        // What the split binary lists is in the archives.
        let split = dir.path().join("k").join(os(name));
        let (code, listed, err) = text_output(offload().args(["ls", "--json"]).arg(&split));
        assert_eq!(code, 0, "{err}");
        let rows = json(&listed);
        assert_eq!(rows.as_array().unwrap().len(), 3, "{rows}");
        for row in rows.as_array().unwrap() {
            assert_eq!(carried(row, "file"), split.as_os_str().as_bytes(), "{row}");
            assert!(row["kpack"].is_object(), "{row}");
        }
        let split = [b"k/", name].concat();
        let args = ["kpack", "--merge", "-o", "m", "--"].map(OsStr::new);
        let (code, out, err) = run_in(dir.path(), &[&args[..], &[os(&split)]].concat());
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            out,
            format!("m/{shown}: 2 bundles, 3 code objects put back\n")
        );
        assert_eq!(names_in(&dir.path().join("m")), [name.to_vec()]);
        let merged = dir.path().join("m").join(os(name));
        assert_eq!(sorted_arches(&merged), ["gfx906", "gfx90a", "gfx90a"]);
        untouched(dir.path(), decoy, &hip_object());
    }
}

#[test]
fn kpack_copies_files_of_every_name_in_a_tree() {
    let dir = tempfile::tempdir().unwrap();
    let tree = tree(dir.path(), &hip_object(), &compressed_object());
    std::fs::copy(library(), tree.join("libk.so")).unwrap();
    let (code, out, err) = run_in(
        dir.path(),
        &["kpack", "-r", "-o", "k", "tree"].map(OsStr::new),
    );
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("k/libk.so: 2 code-object indices\n"),
        "{out}"
    );
    assert!(
        out.ends_with("6 files without HIP device code copied\n"),
        "{out}"
    );
    let mut want = names_in(&tree);
    want.push(b".kpack".to_vec());
    want.sort();
    assert_eq!(names_in(&dir.path().join("k")), want);
    for (name, decoy, _) in NAMES {
        let copied = std::fs::read(dir.path().join("k").join(os(name))).unwrap();
        assert_eq!(copied, std::fs::read(hip_object()).unwrap());
        untouched(&dir.path().join("k"), decoy, &compressed_object());
    }
}

#[test]
fn links_are_made_in_a_folder_of_any_name() {
    let dir = tempfile::tempdir().unwrap();
    let decoy = dir.path().join("l\u{FFFD}\nk");
    std::fs::create_dir(&decoy).unwrap();
    let name = b"l\xff\nk";
    let (code, out, err) = run_in(dir.path(), &["links".as_ref(), "--".as_ref(), os(name)]);
    assert_eq!(code, 0, "{err}");
    let first = out.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("l\\xff\\nk/clang-offload-bundler -> "),
        "{out}"
    );
    assert_eq!(out.lines().count(), 5, "{out}");
    let link = dir.path().join(os(name)).join("clang-offload-bundler");
    assert!(std::fs::symlink_metadata(link).unwrap().is_symlink());
    assert!(names_in(&decoy).is_empty());
}

#[test]
fn the_packager_unpacks_to_names_made_from_the_input_bytes() {
    let omp = samples_dir().join("openmp/omp.o");
    let unpack = |dir: &Path, input: &OsStr| {
        text_output(
            offload()
                .current_dir(dir)
                .env("OFFLOAD_LLVM_VERSION", "23")
                .arg("packager")
                .arg(input)
                .arg("--image=triple=amdgcn-amd-amdhsa"),
        )
    };
    for (name, shown) in [(&b"p\nq.o"[..], "p\\nq"), (b"./-x.o", "-x")] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(&omp, dir.path().join(os(name))).unwrap();
        let (code, out, err) = unpack(dir.path(), os(name));
        assert_eq!(code, 0, "{err}");
        assert_eq!(
            out,
            format!(
                "Extracted: {shown}-amdgcn-amd-amdhsa-gfx906.0.bc\n\
                 Extracted: {shown}-amdgcn-amd-amdhsa-gfx90a.1.bc\n"
            )
        );
        let stem = &name[..name.len() - 2];
        let stem = stem.strip_prefix(b"./").unwrap_or(stem);
        for written in [
            "-amdgcn-amd-amdhsa-gfx906.0.bc",
            "-amdgcn-amd-amdhsa-gfx90a.1.bc",
        ] {
            assert!(dir.path().join(joined(stem, written)).exists(), "{written}");
        }
    }
    // The packager's command line is text, as LLVM's: a name that is not is refused.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&omp, dir.path().join(os(b"o\xff.o"))).unwrap();
    let (code, out, err) = unpack(dir.path(), os(b"o\xff.o"));
    assert_eq!((code, out.as_str()), (1, ""));
    assert_eq!(
        err,
        "offload packager: error: argument 'o\\xff.o' is not valid UTF-8: this tool takes file \
         names as text; offload's own commands (ls, extract, strip, ...) take any name\n"
    );
    assert_eq!(names_in(dir.path()), [b"o\xff.o".to_vec()]);
}

#[test]
fn the_bundler_unbundles_names_with_a_newline() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = samples_dir().join("llvm23/bundle-o.bundle");
    place(
        dir.path(),
        b"b\nu.o",
        &bundle,
        "b\u{FFFD}u.o",
        &hip_object(),
    );
    let (code, _, err) = text_output(offload().current_dir(dir.path()).args([
        "bundler",
        "-type=o",
        "-unbundle",
        "-input=b\nu.o",
        "-targets=hip-amdgcn-amd-amdhsa--gfx90a",
        "-output=b\nu.co",
    ]));
    assert_eq!(code, 0, "{err}");
    let whole = std::fs::read(&bundle).unwrap();
    let written = std::fs::read(dir.path().join("b\nu.co")).unwrap();
    assert_eq!(written, whole[0xd24..0xd24 + 4232]);
    untouched(dir.path(), "b\u{FFFD}u.o", &hip_object());
    let (code, _, err) = text_output(
        offload()
            .current_dir(dir.path())
            .args(["bundler", "-type=o", "-unbundle"])
            .arg(joined(b"-input=b\xff", ".o"))
            .args(["-targets=hip-amdgcn-amd-amdhsa--gfx90a", "-output=x"]),
    );
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "offload bundler: error: argument '-input=b\\xff.o' is not valid UTF-8: this tool takes \
         file names as text; offload's own commands (ls, extract, strip, ...) take any name\n"
    );
    assert!(!dir.path().join("x").exists());
}

#[test]
fn a_thin_archive_reads_the_member_file_its_bytes_name() {
    let Some(ar) = crate::util::tool("ar") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    place(
        dir.path(),
        b"a\xff.o",
        &hip_object(),
        "a\u{FFFD}.o",
        &library(),
    );
    let made = text_output(
        std::process::Command::new(ar)
            .current_dir(dir.path())
            .args(["rcT", "thin.a"])
            .arg(os(b"a\xff.o")),
    );
    assert_eq!(made.0, 0, "{}", made.2);
    let (code, out, err) = run_in(dir.path(), &["ls", "--json", "thin.a"].map(OsStr::new));
    assert_eq!(code, 0, "{err}");
    let rows = json(&out);
    let arches: Vec<&str> = (rows.as_array().unwrap().iter())
        .map(|r| r["arch"].as_str().unwrap())
        .collect();
    // The code of the file named, not the decoy's gfx906 and gfx90a.
    assert_eq!(arches, ["", "gfx90a", "gfx1030"], "{rows}");
    untouched(dir.path(), "a\u{FFFD}.o", &library());
}
