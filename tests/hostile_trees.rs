//! Trees and names set against the commands that write and delete: arguments that are not
//! UTF-8 beside the names a replacement character would make, output folders that reach the
//! inputs (hard-linked mirrors, symbolic links, the tree itself, a folder inside it), folders
//! swapped for symbolic links while a walk works, links followed out of the tree, files with
//! several names, split trees with their archives, and a `--keep` that keeps nothing.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::util::{offload, samples_dir, text_output};

/// A path in `dir` named by `bytes`.
fn named(dir: &Path, bytes: &[u8]) -> PathBuf {
    dir.join(OsStr::from_bytes(bytes))
}

/// The committed code object for `processor`.
fn code_object(processor: &str) -> PathBuf {
    samples_dir().join(format!("dev/kernel-{processor}.hsaco"))
}

/// A host library holding a bundle for gfx906 and gfx90a.
fn fat_library() -> PathBuf {
    samples_dir().join("linked/libhip.so")
}

/// Every file under `dir` (links not followed) with its bytes, by path below it.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                let bytes = std::fs::read(&path).unwrap();
                files.push((path.strip_prefix(dir).unwrap().to_path_buf(), bytes));
            }
        }
    }
    files.sort();
    files
}

/// Runs `offload ARGS` and gives its exit code and streams.
fn run(args: &[&OsStr]) -> (i32, String, String) {
    text_output(offload().args(args))
}

#[test]
fn arguments_that_are_not_utf8_name_their_own_files() {
    let dir = tempfile::tempdir().unwrap();
    let (raw, lookalike) = (
        named(dir.path(), b"a\xff"),
        named(dir.path(), "a\u{FFFD}".as_bytes()),
    );
    for path in [&raw, &lookalike] {
        std::fs::copy(fat_library(), path).unwrap();
    }
    let original = std::fs::read(fat_library()).unwrap();
    let (code, stdout, stderr) = run(&[
        OsStr::new("strip"),
        raw.as_os_str(),
        OsStr::new("--keep"),
        OsStr::new("gfx90a"),
        OsStr::new("--in-place"),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("a\\xff: 3 device images went to 2"),
        "{stdout}"
    );
    assert_ne!(std::fs::read(&raw).unwrap(), original);
    assert_eq!(std::fs::read(&lookalike).unwrap(), original);
    // Listed and counted under its own name, escaped as the one rule says.
    let (code, listing, stderr) = run(&[OsStr::new("ls"), raw.as_os_str()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(listing.contains("a\\xff .hip_fatbin @0x"), "{listing}");
    let (code, usage, stderr) = run(&[OsStr::new("du"), raw.as_os_str()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(usage.lines().nth(1).unwrap().ends_with("a\\xff"), "{usage}");

    // A new output under a name that is not UTF-8, beside the name lossy text would make.
    let (out, out_lookalike) = (
        named(dir.path(), b"o\xfe"),
        named(dir.path(), "o\u{FFFD}".as_bytes()),
    );
    std::fs::write(&out_lookalike, b"precious").unwrap();
    let (code, _, stderr) = run(&[
        OsStr::new("strip"),
        lookalike.as_os_str(),
        OsStr::new("--keep"),
        OsStr::new("gfx906"),
        OsStr::new("-o"),
        out.as_os_str(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(std::fs::read(&out_lookalike).unwrap(), b"precious");
    assert!(std::fs::read(&out).unwrap().len() < original.len());

    // A folder walked in place, and links made, in the folder named.
    let (tree, tree_lookalike) = (
        named(dir.path(), b"d\xff"),
        named(dir.path(), "d\u{FFFD}".as_bytes()),
    );
    for folder in [&tree, &tree_lookalike] {
        std::fs::create_dir(folder).unwrap();
        std::fs::copy(fat_library(), folder.join("lib.so")).unwrap();
    }
    let (code, _, stderr) = run(&[
        OsStr::new("strip"),
        OsStr::new("-r"),
        tree.as_os_str(),
        OsStr::new("--keep"),
        OsStr::new("gfx90a"),
        OsStr::new("--in-place"),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_ne!(std::fs::read(tree.join("lib.so")).unwrap(), original);
    assert_eq!(
        std::fs::read(tree_lookalike.join("lib.so")).unwrap(),
        original
    );
    let (code, _, stderr) = run(&[OsStr::new("links"), tree.as_os_str()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(tree.join("clang-offload-bundler").is_symlink());
    assert!(!tree_lookalike.join("clang-offload-bundler").exists());

    // The LLVM-named tools read their arguments as text: a name that is not UTF-8 is
    // refused, not read as another.
    let mut input = std::ffi::OsString::from("-input=");
    input.push(raw.as_os_str());
    let (code, stdout, stderr) = run(&[
        OsStr::new("bundler"),
        OsStr::new("-list"),
        OsStr::new("-type=o"),
        &input,
    ]);
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stderr.starts_with("offload bundler: error: argument '-input=")
            && stderr.contains("a\\xff' is not valid UTF-8"),
        "{stderr}"
    );
}

#[test]
fn kpack_refuses_names_that_are_not_utf8_rather_than_give_two_libraries_one_key() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir(&tree).unwrap();
    std::fs::copy(fat_library(), named(&tree, b"lib\xff.so")).unwrap();
    std::fs::copy(fat_library(), named(&tree, b"lib\xfe.so")).unwrap();
    std::fs::copy(fat_library(), tree.join("libok.so")).unwrap();
    let split = dir.path().join("split");
    let (code, stdout, stderr) = text_output(
        offload()
            .args(["kpack", "-r"])
            .arg(&tree)
            .arg("-o")
            .arg(&split),
    );
    assert_eq!(code, 1, "{stdout}");
    for name in ["lib\\xfe.so", "lib\\xff.so"] {
        assert!(
            stderr.contains(&format!(
                "{name}': its name is not UTF-8, and the key its code goes under in the .kpack archives is text"
            )),
            "{stderr}"
        );
    }
    // No archive holds a key spelt with a replacement character.
    let (_, listing, _) = text_output(offload().args(["ls", "-r"]).arg(&split));
    assert!(!listing.contains('\u{FFFD}'), "{listing}");
    assert!(listing.contains("[libok.so#0]"), "{listing}");
}

/// A tree of a code object for gfx906, one for gfx90a and a catalogue named for gfx906.
fn prune_tree(tree: &Path) {
    std::fs::create_dir_all(tree).unwrap();
    std::fs::copy(code_object("gfx906"), tree.join("k_gfx906.hsaco")).unwrap();
    std::fs::copy(code_object("gfx90a"), tree.join("k_gfx90a.hsaco")).unwrap();
    std::fs::copy(fat_library(), tree.join("lib.so")).unwrap();
    std::fs::write(tree.join("TensileLibrary_gfx906.dat"), b"catalogue").unwrap();
}

/// `strip -r TREE --keep gfx90a` with `extra` arguments.
fn strip_tree(tree: &Path, extra: &[&OsStr]) -> (i32, String, String) {
    let mut args = vec![
        OsStr::new("strip"),
        OsStr::new("-r"),
        tree.as_os_str(),
        OsStr::new("--keep"),
        OsStr::new("gfx90a"),
    ];
    args.extend_from_slice(extra);
    run(&args)
}

#[test]
fn an_output_folder_that_reaches_the_inputs_never_changes_them() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    prune_tree(&tree);
    let before = snapshot(&tree);
    let out = dir.path().join("out");
    let prune = [
        OsStr::new("--prune"),
        OsStr::new("--prune-named"),
        OsStr::new("-o"),
        out.as_os_str(),
    ];

    // A hard-linked mirror (cp -al): pruned names leave the mirror, the tree keeps them.
    assert!(Command::new("cp")
        .arg("-al")
        .arg(&tree)
        .arg(&out)
        .status()
        .unwrap()
        .success());
    let (code, stdout, stderr) = strip_tree(&tree, &prune);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("k_gfx906.hsaco: only device code for other targets (gfx906), 3168 bytes: pruned (not copied)"), "{stdout}");
    assert_eq!(snapshot(&tree), before);
    let names: Vec<PathBuf> = snapshot(&out).into_iter().map(|(p, _)| p).collect();
    assert_eq!(
        names,
        [PathBuf::from("k_gfx90a.hsaco"), PathBuf::from("lib.so")]
    );
    assert_ne!(
        std::fs::read(out.join("lib.so")).unwrap(),
        std::fs::read(tree.join("lib.so")).unwrap()
    );

    // The same mirror without pruning: the library is written as a new file, not through
    // its hard link.
    std::fs::remove_dir_all(&out).unwrap();
    assert!(Command::new("cp")
        .arg("-al")
        .arg(&tree)
        .arg(&out)
        .status()
        .unwrap()
        .success());
    let (code, _, stderr) = strip_tree(&tree, &[OsStr::new("-o"), out.as_os_str()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(snapshot(&tree), before);

    // A mirror holding symbolic links to the inputs: the links are replaced, the inputs stay.
    std::fs::remove_dir_all(&out).unwrap();
    std::fs::create_dir(&out).unwrap();
    for name in ["k_gfx906.hsaco", "lib.so", "TensileLibrary_gfx906.dat"] {
        std::os::unix::fs::symlink(tree.join(name), out.join(name)).unwrap();
    }
    let (code, _, stderr) = strip_tree(&tree, &prune);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(snapshot(&tree), before);
    assert!(
        !out.join("k_gfx906.hsaco").exists() && !out.join("TensileLibrary_gfx906.dat").is_symlink()
    );

    // The output folder is the tree through a link, or lies inside it: refused.
    std::fs::remove_dir_all(&out).unwrap();
    std::os::unix::fs::symlink(&tree, &out).unwrap();
    let (code, stdout, stderr) = strip_tree(&tree, &prune);
    assert_eq!((code, stdout.as_str()), (2, ""), "{stderr}");
    assert!(
        stderr.contains("the output folder '") && stderr.contains("' is the folder walked, '"),
        "{stderr}"
    );
    let inner = tree.join("out");
    let (code, _, stderr) = strip_tree(&tree, &[OsStr::new("-o"), inner.as_os_str()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("lies inside the folder walked"), "{stderr}");
    assert_eq!(snapshot(&tree), before);
}

#[test]
fn links_followed_out_of_the_tree_are_never_pruned_or_rewritten_there() {
    let dir = tempfile::tempdir().unwrap();
    let (tree, outside) = (dir.path().join("tree"), dir.path().join("outside"));
    prune_tree(&tree);
    prune_tree(&outside.join("dir"));
    std::os::unix::fs::symlink(outside.join("dir"), tree.join("link")).unwrap();
    let outside_before = snapshot(&outside);
    let (code, stdout, stderr) = strip_tree(
        &tree,
        &[
            OsStr::new("--follow"),
            OsStr::new("--prune"),
            OsStr::new("--prune-named"),
            OsStr::new("--in-place"),
        ],
    );
    assert_eq!(code, 1, "{stdout}");
    assert!(
        stderr.contains("link/k_gfx906.hsaco': reached through a symbolic link: a walk rewrites and removes files only inside its tree; left as it is"),
        "{stderr}"
    );
    assert_eq!(snapshot(&outside), outside_before);
    assert!(!tree.join("k_gfx906.hsaco").exists());
    assert!(tree.join("k_gfx90a.hsaco").exists());
}

#[test]
fn a_file_pruned_loses_every_name_the_walk_met() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    prune_tree(&tree);
    std::fs::create_dir(tree.join("sub")).unwrap();
    std::fs::hard_link(
        tree.join("k_gfx906.hsaco"),
        tree.join("sub/again_gfx906.hsaco"),
    )
    .unwrap();
    let (code, stdout, stderr) =
        strip_tree(&tree, &[OsStr::new("--prune"), OsStr::new("--in-place")]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("sub/again_gfx906.hsaco: another name of ")
            && stdout.contains("k_gfx906.hsaco: pruned (removed)"),
        "{stdout}"
    );
    assert!(!tree.join("k_gfx906.hsaco").exists());
    assert!(!tree.join("sub/again_gfx906.hsaco").exists());
}

#[test]
fn a_keep_that_keeps_nothing_prunes_nothing_without_allow_empty() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    prune_tree(&tree);
    let before = snapshot(&tree);
    let (code, stdout, stderr) = run(&[
        OsStr::new("strip"),
        OsStr::new("-r"),
        tree.as_os_str(),
        OsStr::new("--keep"),
        OsStr::new("gfx1100"),
        OsStr::new("--prune"),
        OsStr::new("--in-place"),
    ]);
    assert_eq!((code, stdout.as_str()), (1, ""));
    assert_eq!(
        stderr,
        "offload strip: error: the targets kept keep none of the 5 device images found: --prune \
         would remove every file of device code; nothing was changed (give --allow-empty to do it)\n"
    );
    assert_eq!(snapshot(&tree), before);
}

#[test]
fn a_split_tree_pruned_into_a_folder_keeps_the_archives_of_the_processors_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (tree, split, out) = (
        dir.path().join("kt"),
        dir.path().join("split"),
        dir.path().join("out"),
    );
    std::fs::create_dir(&tree).unwrap();
    std::fs::copy(fat_library(), tree.join("libhip.so")).unwrap();
    let (code, _, stderr) = text_output(
        offload()
            .args(["kpack", "-r"])
            .arg(&tree)
            .arg("-o")
            .arg(&split),
    );
    assert_eq!(code, 0, "{stderr}");
    let (code, stdout, stderr) = strip_tree(
        &split,
        &[OsStr::new("--prune"), OsStr::new("-o"), out.as_os_str()],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains(".kpack/kt_gfx906.kpack: only device code for other targets (gfx906)"),
        "{stdout}"
    );
    let names: Vec<PathBuf> = snapshot(&out).into_iter().map(|(p, _)| p).collect();
    assert_eq!(
        names,
        [
            PathBuf::from(".kpack/kt_gfx90a.kpack"),
            PathBuf::from("libhip.so")
        ]
    );
    // The copied binary still finds its code.
    let (code, listing, stderr) = text_output(offload().arg("ls").arg(out.join("libhip.so")));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        listing.matches("kt_gfx90a.kpack[libhip.so#").count(),
        2,
        "{listing}"
    );
}

/// Exchanges the two names `a` and `b` (`renameat2(RENAME_EXCHANGE)`).
fn exchange(a: &Path, b: &Path) -> bool {
    let a = std::ffi::CString::new(a.as_os_str().as_bytes()).unwrap();
    let b = std::ffi::CString::new(b.as_os_str().as_bytes()).unwrap();
    // SAFETY: two NUL-terminated paths that outlive the call.
    unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        ) == 0
    }
}

/// A tree of `folders` subfolders, each of `per_folder` code objects for gfx906 (pruned for
/// gfx90a) and as many fat libraries (rewritten), and beside each subfolder a link named
/// like it with `.x` to a folder outside holding the same names.
fn racing_tree(root: &Path, folders: usize, per_folder: usize) -> (PathBuf, PathBuf) {
    let (tree, outside) = (root.join("tree"), root.join("outside"));
    for i in 0..folders {
        for base in [tree.join(format!("d{i}")), outside.join(format!("d{i}"))] {
            std::fs::create_dir_all(&base).unwrap();
            for j in 0..per_folder {
                std::fs::copy(
                    code_object("gfx906"),
                    base.join(format!("k{j}_gfx906.hsaco")),
                )
                .unwrap();
                std::fs::copy(fat_library(), base.join(format!("lib{j}.so"))).unwrap();
            }
        }
        std::os::unix::fs::symlink(outside.join(format!("d{i}")), tree.join(format!("d{i}.x")))
            .unwrap();
    }
    (tree, outside)
}

#[test]
fn folders_swapped_for_links_during_a_walk_never_carry_a_write_outside_the_tree() {
    let (folders, per_folder, runs) = (4, 10, 6);
    for run_number in 0..runs {
        let dir = tempfile::tempdir().unwrap();
        let (tree, outside) = racing_tree(dir.path(), folders, per_folder);
        let outside_before = snapshot(&outside);
        let stop = Arc::new(AtomicBool::new(false));
        let swapper = {
            let (stop, tree) = (stop.clone(), tree.clone());
            std::thread::spawn(move || {
                let mut swaps = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for i in 0..folders {
                        let (a, b) = (tree.join(format!("d{i}")), tree.join(format!("d{i}.x")));
                        swaps += u64::from(exchange(&a, &b));
                    }
                }
                swaps
            })
        };
        let extra: &[&OsStr] = if run_number % 2 == 0 {
            &[OsStr::new("--prune"), OsStr::new("--in-place")]
        } else {
            &[OsStr::new("--in-place")]
        };
        let mut args = vec![OsStr::new("-j"), OsStr::new("4")];
        args.extend_from_slice(extra);
        let (code, _, stderr) = strip_tree(&tree, &args);
        stop.store(true, Ordering::Relaxed);
        let swaps = swapper.join().unwrap();
        assert!(swaps > 0);
        // Failures for files that changed under the walk are expected; a file outside the
        // tree changed or removed is not.
        assert!(code == 0 || code == 1, "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(
            snapshot(&outside),
            outside_before,
            "run {run_number}: {stderr}"
        );
    }
}

#[test]
fn json_carries_names_that_are_not_utf8_without_loss() {
    let dir = tempfile::tempdir().unwrap();
    let (raw, plain) = (named(dir.path(), b"a\xff"), named(dir.path(), b"b"));
    for path in [&raw, &plain] {
        std::fs::copy(fat_library(), path).unwrap();
    }
    let json = |command: &str, path: &Path| {
        let (code, out, err) = run(&[OsStr::new(command), OsStr::new("--json"), path.as_os_str()]);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap()
    };
    let want = raw.to_str().map(str::to_string);
    assert_eq!(want, None);
    // The name's text (U+FFFD for the byte that is not UTF-8), and its bytes in base64.
    let encoded = base64_of(raw.as_os_str().as_bytes());
    let listed = json("ls", &raw);
    let listed = listed.as_array().unwrap();
    assert!(!listed.is_empty());
    for image in listed {
        assert_eq!(image["file"], raw.to_string_lossy().as_ref());
        assert_eq!(image["file_bytes"], encoded.as_str());
    }
    let usage = json("du", &raw);
    assert_eq!(usage["files"][0]["file_bytes"], encoded.as_str(), "{usage}");
    // A name that is text has no such field.
    let listed = json("ls", &plain);
    assert!(listed[0].get("file_bytes").is_none(), "{listed}");
    let usage = json("du", &plain);
    assert!(usage["files"][0].get("file_bytes").is_none(), "{usage}");
}

/// `bytes` in base64, the standard alphabet, padded (as Python's `base64.b64encode`).
fn base64_of(bytes: &[u8]) -> String {
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let mut n = 0u32;
        for k in 0..3 {
            n = n << 8 | u32::from(*chunk.get(k).unwrap_or(&0));
        }
        for k in 0..4 {
            let six = (n >> (18 - 6 * k)) & 63;
            out.push(if k <= chunk.len() {
                alphabet[six as usize] as char
            } else {
                '='
            });
        }
    }
    out
}
