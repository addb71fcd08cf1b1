//! Pruning a library folder laid out as rocBLAS lays out its own (`lib/rocblas/<ver>/library`:
//! bare code objects named for their processors, Tensile catalogues `.dat` beside them, one
//! without a processor, a host library with a bundle above): `strip -r --keep X` names the
//! files only for other targets and leaves them, `--prune` removes them (or does not copy
//! them), `--prune-named` takes the catalogues of removed processors too, `du --keep` counts
//! what `--prune` removes, and what stays loads on the device kept.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::trees::contents;
use crate::util::{self, offload, samples_dir, text_output};

/// Where the device code lies under the tree's root.
const LIBRARY: &str = "lib/rocblas/4.4.1/library";

/// The Tensile kernels' file name up to its processor.
const SS: &str = "TensileLibrary_Type_SS_Contraction_l_Alik_Bljk_Cijk_Dijk";

/// The bare code objects of the library: (name after the prefix, committed sample).
const CODE_OBJECTS: [(&str, &str); 10] = [
    ("Kernels.so-000-gfx906.hsaco", "kernel-gfx906.hsaco"),
    (
        "Kernels.so-000-gfx908.hsaco",
        "kernel-gfx908_sramecc+_xnack-.hsaco",
    ),
    (
        "Kernels.so-000-gfx90a-xnack+.hsaco",
        "kernel-gfx90a_xnack+.hsaco",
    ),
    (
        "Kernels.so-000-gfx90a-xnack-.hsaco",
        "kernel-gfx90a_xnack-.hsaco",
    ),
    ("SS_CU104_gfx90a.co", "kernel-gfx90a.hsaco"),
    ("SS_fallback_gfx906.hsaco", "kernel-gfx906.hsaco"),
    (
        "SS_fallback_gfx90a-xnack+.hsaco",
        "kernel-gfx90a_xnack+.hsaco",
    ),
    (
        "SS_fallback_gfx90a-xnack-.hsaco",
        "kernel-gfx90a_xnack-.hsaco",
    ),
    ("SS_gfx906.co", "kernel-gfx906.hsaco"),
    ("SS_gfx90a.co", "vadd-gfx90a.hsaco"),
];

/// The Tensile catalogues (no device code).
const CATALOGUES: [&str; 9] = [
    "SS_CU104_gfx90a.dat",
    "SS_fallback.dat",
    "SS_gfx906.dat",
    "SS_gfx908.dat",
    "SS_gfx90a.dat",
    "TensileLibrary_lazy_gfx906.dat",
    "TensileLibrary_lazy_gfx908.dat",
    "TensileLibrary_lazy_gfx90a.dat",
    "TensileLibrary_lazy_gfx9-4-generic.dat",
];

/// The code objects a device `gfx90a:xnack+` loads.
const KEPT: [&str; 4] = [
    "Kernels.so-000-gfx90a-xnack+.hsaco",
    "SS_CU104_gfx90a.co",
    "SS_fallback_gfx90a-xnack+.hsaco",
    "SS_gfx90a.co",
];

/// The catalogues named for processors `gfx90a:xnack+` does not load code for.
const NAMED: [&str; 5] = [
    "SS_gfx906.dat",
    "SS_gfx908.dat",
    "TensileLibrary_lazy_gfx906.dat",
    "TensileLibrary_lazy_gfx908.dat",
    "TensileLibrary_lazy_gfx9-4-generic.dat",
];

/// A file name of the library, `SS_` standing for the Tensile prefix.
fn full(name: &str) -> String {
    match name.strip_prefix("SS_") {
        Some(rest) => format!("{SS}_{rest}"),
        None => name.to_string(),
    }
}

/// The path of the library file `name` (short), relative to the tree's folder.
fn at(name: &str) -> String {
    format!("{LIBRARY}/{}", full(name))
}

/// A small catalogue in the manner of msgpack: a map of one key to the file's name.
fn catalogue(name: &str) -> Vec<u8> {
    let mut bytes = vec![0x81, 0xa4];
    bytes.extend_from_slice(b"name");
    bytes.push(0xd9);
    bytes.push(name.len() as u8);
    bytes.extend_from_slice(name.as_bytes());
    bytes
}

/// Makes the tree under `dir/lib`: the library folder and `lib/librocblas.so`, a host
/// library with a bundle for gfx906 and gfx90a.
fn tree(dir: &Path) {
    let library = dir.join(LIBRARY);
    std::fs::create_dir_all(&library).unwrap();
    for (name, sample) in CODE_OBJECTS {
        std::fs::copy(
            samples_dir().join("dev").join(sample),
            library.join(full(name)),
        )
        .unwrap();
    }
    for name in CATALOGUES {
        std::fs::write(library.join(full(name)), catalogue(name)).unwrap();
    }
    std::fs::copy(
        samples_dir().join("linked/libhip.so"),
        dir.join("lib/librocblas.so"),
    )
    .unwrap();
}

/// The size of the file at `path`.
fn size(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

/// `offload ARGS` in `dir`: exit code and standard output (standard error must be empty).
fn run(dir: &Path, args: &[&str]) -> (i32, String) {
    let (code, out, err) = text_output(offload().current_dir(dir).args(args));
    assert_eq!(err, "", "{args:?}: {out}");
    (code, out)
}

/// The code objects a `--keep gfx90a:xnack+` strip prunes.
fn removed() -> Vec<&'static str> {
    CODE_OBJECTS
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| !KEPT.contains(name))
        .collect()
}

/// The processors the code object `name` (short) is for, as the summary names them.
fn target_of(name: &str) -> &'static str {
    let sample = CODE_OBJECTS.iter().find(|(n, _)| *n == name).unwrap().1;
    match sample {
        "kernel-gfx906.hsaco" => "gfx906",
        "kernel-gfx908_sramecc+_xnack-.hsaco" => "gfx908:sramecc+:xnack-",
        "kernel-gfx90a_xnack-.hsaco" => "gfx90a:xnack-",
        other => panic!("{other} is kept"),
    }
}

/// The lines a `--keep gfx90a:xnack+` strip of the tree in `dir` says of the files it does
/// not rewrite, in walk order, each ending as `fate` says (bare files) and `named_fate` (the
/// named catalogues).
fn pruning_lines(dir: &Path, fate: &str, named_fate: &str) -> String {
    let mut text = String::new();
    let sorted: BTreeSet<String> = removed().iter().map(|n| full(n)).collect();
    for name in &sorted {
        let short = removed().into_iter().find(|n| full(n) == *name).unwrap();
        let path = format!("{LIBRARY}/{name}");
        text.push_str(&format!(
            "{path}: only device code for other targets ({}), {} bytes: {fate}\n",
            target_of(short),
            size(&dir.join(&path))
        ));
    }
    let sorted: BTreeMap<String, &str> = NAMED.iter().map(|n| (full(n), *n)).collect();
    for (name, short) in sorted {
        let path = format!("{LIBRARY}/{name}");
        let processor = short.trim_end_matches(".dat").rsplit('_').next().unwrap();
        text.push_str(&format!(
            "{path}: no device code, named for removed processors ({processor}), {} bytes: {named_fate}\n",
            size(&dir.join(&path))
        ));
    }
    text
}

/// The lines of `stdout` about the files a strip did not rewrite.
fn settled_lines(stdout: &str) -> String {
    stdout
        .lines()
        .filter(|l| l.contains(": only device code") || l.contains(": no device code"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The bytes of the removed code objects and of the named catalogues of the tree in `dir`.
fn pruned_bytes(dir: &Path) -> (u64, u64) {
    let bare = removed().iter().map(|n| size(&dir.join(at(n)))).sum();
    let named = NAMED.iter().map(|n| size(&dir.join(at(n)))).sum();
    (bare, named)
}

#[test]
fn without_prune_the_files_for_other_targets_are_named_and_left() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    tree(d);
    let before = contents(d);
    for dry in [true, false] {
        let mut args = vec!["strip", "-r", "--keep", "gfx90a:xnack+", "--in-place"];
        if dry {
            args[4] = "--dry-run";
        }
        args.push("lib");
        let (code, out) = run(d, &args);
        assert_eq!(code, 0, "{out}");
        let (would, verb) = if dry {
            ("would be ", "would be left")
        } else {
            ("", "left")
        };
        assert_eq!(
            settled_lines(&out),
            pruning_lines(
                d,
                &format!("{would}left as it is (use --prune to remove it)"),
                &format!("{would}left as it is (use --prune --prune-named to remove it)")
            )
        );
        let (bare, named) = pruned_bytes(d);
        assert!(
            out.contains(&format!(
                "\ntotal only device code for other targets: 6 files, {bare} bytes {verb}\n\
                 total named for removed processors: 5 files, {named} bytes {verb}\n"
            )),
            "{out}"
        );
        // The bare files are all left; only the host library changes.
        let after = contents(d);
        for (path, bytes) in &before {
            if !path.ends_with("librocblas.so") || dry {
                assert!(after[path] == *bytes, "{} changed", path.display());
            }
        }
    }
}

/// The relative paths of the regular files under `root`.
fn file_set(root: &Path) -> BTreeSet<String> {
    contents(root)
        .keys()
        .map(|p| p.strip_prefix(root).unwrap().to_string_lossy().into_owned())
        .collect()
}

/// The file set a `--keep gfx90a:xnack+ --prune` leaves (with `named`, without the named
/// catalogues).
fn expected_set(named: bool) -> BTreeSet<String> {
    let mut set: BTreeSet<String> = KEPT.iter().chain(&CATALOGUES).map(|n| at(n)).collect();
    if named {
        for n in NAMED {
            set.remove(&at(n));
        }
    }
    set.insert("lib/librocblas.so".into());
    set
}

#[test]
fn prune_in_place_and_into_a_folder_leave_exactly_the_files_kept() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    tree(d);
    let original = contents(d);
    let (bare, named) = pruned_bytes(d);
    // Into a folder: the files for other targets are not copied, every other one is.
    let (code, out) = run(
        d,
        &[
            "strip",
            "-r",
            "--keep",
            "gfx90a:xnack+",
            "--prune",
            "-o",
            "out",
            "lib",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        settled_lines(&out),
        pruning_lines(
            d,
            "pruned (not copied)",
            "copied as it is (use --prune-named to leave it out)"
        )
    );
    assert!(out.contains(&format!(
        "\ntotal only device code for other targets: 6 files, {bare} bytes pruned\n\
         total named for removed processors: 5 files, {named} bytes copied\n"
    )));
    let out_dir = d.join("out");
    assert_eq!(
        file_set(&out_dir),
        expected_set(false)
            .iter()
            .map(|p| p.strip_prefix("lib/").unwrap().to_string())
            .collect()
    );
    assert_eq!(contents(d.join("lib").as_path()).len(), original.len());
    for (path, bytes) in contents(&out_dir) {
        let relative = path.strip_prefix(&out_dir).unwrap();
        if !relative.ends_with("librocblas.so") {
            assert!(
                original[&d.join("lib").join(relative)] == bytes,
                "{relative:?}"
            );
        }
    }
    // In place, the named catalogues too.
    let (code, out) = run(
        d,
        &[
            "strip",
            "-r",
            "--keep",
            "gfx90a:xnack+",
            "--prune",
            "--prune-named",
            "--in-place",
            "lib",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        settled_lines(&out),
        pruning_lines_of(&original, d, "pruned (removed)", "pruned (removed)")
    );
    assert!(out.contains(&format!(
        "\ntotal only device code for other targets: 6 files, {bare} bytes pruned\n\
         total named for removed processors: 5 files, {named} bytes pruned\n"
    )));
    assert_eq!(
        file_set(&d.join("lib")),
        expected_set(true)
            .iter()
            .map(|p| p.strip_prefix("lib/").unwrap().to_string())
            .collect()
    );
    for (path, bytes) in contents(&d.join("lib")) {
        if !path.ends_with("librocblas.so") {
            assert!(original[&path] == bytes, "{}", path.display());
        }
    }
    // The host library is stripped as it is alone.
    assert_eq!(
        std::fs::read(d.join("lib/librocblas.so")).unwrap(),
        std::fs::read(out_dir.join("librocblas.so")).unwrap()
    );
}

/// [`pruning_lines`] for files already removed from `dir`: their sizes read from
/// `original`, a copy of the tree's bytes.
fn pruning_lines_of(
    original: &BTreeMap<PathBuf, Vec<u8>>,
    dir: &Path,
    fate: &str,
    named_fate: &str,
) -> String {
    let copy = tempfile::tempdir().unwrap();
    for (path, bytes) in original {
        let to = copy.path().join(path.strip_prefix(dir).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(to, bytes).unwrap();
    }
    pruning_lines(copy.path(), fate, named_fate)
}

#[test]
fn a_dry_run_of_prune_says_what_would_go_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    tree(d);
    let before = contents(d);
    let (code, out) = run(
        d,
        &[
            "strip",
            "-r",
            "--keep",
            "gfx90a:xnack+",
            "--prune",
            "--prune-named",
            "--dry-run",
            "lib",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        settled_lines(&out),
        pruning_lines(d, "would be pruned (removed)", "would be pruned (removed)")
    );
    let (bare, named) = pruned_bytes(d);
    assert!(out.contains(&format!(
        "\ntotal only device code for other targets: 6 files, {bare} bytes would be pruned\n\
         total named for removed processors: 5 files, {named} bytes would be pruned\n"
    )));
    assert_eq!(contents(d), before);
}

/// The `(all)` row's REMOVED of `offload du -r --keep KEEP lib` in `dir`, and each file's
/// REMOVED, by path.
fn du_removed(dir: &Path, keep: &str) -> (u64, BTreeMap<String, u64>) {
    let (code, out) = run(dir, &["du", "-r", "--json", "--keep", keep, "lib"]);
    assert_eq!(code, 0, "{out}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let mut files = BTreeMap::new();
    for file in json["files"].as_array().unwrap() {
        let removed: u64 = file["targets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["removed"].as_u64().unwrap())
            .sum();
        files.insert(file["file"].as_str().unwrap().to_string(), removed);
    }
    (files.values().sum(), files)
}

#[test]
fn du_keep_counts_what_prune_removes() {
    for keep in ["gfx90a:xnack+", "gfx90a"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        tree(d);
        let (total, files) = du_removed(d, keep);
        let before = contents(d);
        let (bare, _) = pruned_bytes(d);
        let (code, out) = run(
            d,
            &[
                "strip",
                "-r",
                "--keep",
                keep,
                "--prune",
                "--in-place",
                "lib",
            ],
        );
        assert_eq!(code, 0, "{out}");
        let after = contents(d);
        let gone: u64 = before
            .iter()
            .filter(|(path, _)| !after.contains_key(*path))
            .map(|(_, bytes)| bytes.len() as u64)
            .sum();
        if keep == "gfx90a:xnack+" {
            assert_eq!(gone, bare);
        }
        // Each bare file pruned counts whole; the host library its images removed.
        let library = files["lib/librocblas.so"];
        assert_eq!(total, gone + library, "{files:?}");
        for (path, bytes) in &before {
            let relative = path.strip_prefix(d).unwrap().to_string_lossy().into_owned();
            if !after.contains_key(path) && !relative.ends_with(".dat") {
                assert_eq!(files[&relative], bytes.len() as u64, "{relative}");
            }
        }
        // After the pruning, only code gfx90a loads is left.
        let (code, out) = run(d, &["du", "-r", "lib"]);
        assert_eq!(code, 0, "{out}");
        for line in out.lines().skip(1) {
            let target = line.split_whitespace().next().unwrap();
            assert!(
                target.starts_with("gfx90a") || target == "(all)",
                "{keep}: {line}"
            );
            if keep == "gfx90a:xnack+" {
                assert_ne!(target, "gfx90a:xnack-", "{line}");
            }
        }
    }
}

#[test]
fn every_code_object_left_loads_on_the_device_kept() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    tree(d);
    let (code, out) = run(
        d,
        &[
            "strip",
            "-r",
            "--keep",
            "gfx90a:xnack+",
            "--prune",
            "--prune-named",
            "--in-place",
            "lib",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let library = d.join(LIBRARY);
    let left = util::file_names(&library);
    let code_objects: Vec<&String> = left.iter().filter(|n| !n.ends_with(".dat")).collect();
    assert_eq!(code_objects.len(), KEPT.len(), "{left:?}");
    for name in code_objects {
        let (code, out, err) = text_output(
            offload()
                .current_dir(&library)
                .env("OFFLOAD_KFD_TOPOLOGY", d.join("no-such-topology"))
                .env_remove("HSA_XNACK")
                .args(["check", "--device", "gfx90a:xnack+", name]),
        );
        assert_eq!(code, 0, "{name}: {out}{err}");
    }
}

#[test]
fn a_bare_file_alone_is_copied_or_left_out() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let sample = samples_dir().join("dev/kernel-gfx906.hsaco");
    let bytes = std::fs::read(&sample).unwrap();
    std::fs::copy(&sample, d.join("k.hsaco")).unwrap();
    let (code, out) = run(
        d,
        &["strip", "--keep", "gfx90a", "k.hsaco", "-o", "copy.hsaco"],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out,
        format!(
            "k.hsaco: only device code for other targets (gfx906), {} bytes: copied as it is (use --prune to leave it out)\n",
            bytes.len()
        )
    );
    assert_eq!(std::fs::read(d.join("copy.hsaco")).unwrap(), bytes);
    let (code, out) = run(
        d,
        &[
            "strip",
            "--remove",
            "gfx906",
            "--prune",
            "k.hsaco",
            "-o",
            "gone.hsaco",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out,
        format!(
            "k.hsaco: only device code for other targets (gfx906), {} bytes: pruned (not copied)\n",
            bytes.len()
        )
    );
    assert!(!d.join("gone.hsaco").exists());
    // Kept: as it was.
    let (code, out) = run(
        d,
        &[
            "strip",
            "--keep",
            "gfx906",
            "--prune",
            "--in-place",
            "k.hsaco",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out,
        format!(
            "k.hsaco: 1 device images went to 1, {0} bytes to {0} (0 bundles or binaries rewritten)\n",
            bytes.len()
        )
    );
    assert_eq!(std::fs::read(d.join("k.hsaco")).unwrap(), bytes);
    // --prune-named needs --prune.
    let (code, _, err) = text_output(offload().current_dir(d).args([
        "strip",
        "--keep",
        "gfx906",
        "--prune-named",
        "--in-place",
        "k.hsaco",
    ]));
    assert_eq!(code, 2, "{err}");
}

#[test]
fn a_generic_code_object_clang_writes_is_kept_for_a_processor_it_covers() {
    let Some(clang) = util::skips::reference(util::tool("clang-22"), "clang-22 not installed")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    tree(d);
    let library = d.join(LIBRARY);
    let generic = library.join(full("SS_gfx11-generic.co"));
    util::bare_code_object(&clang, "gfx11-generic", "6", &generic);
    std::fs::write(library.join(full("SS_gfx11-generic.dat")), catalogue("g")).unwrap();
    let before = std::fs::read(&generic).unwrap();
    let (code, out) = run(
        d,
        &[
            "strip",
            "-r",
            "--keep",
            "gfx1100",
            "--prune",
            "--prune-named",
            "--allow-empty",
            "--in-place",
            "lib",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let left: BTreeSet<String> = util::file_names(&library).into_iter().collect();
    // The host library keeps no device code (--allow-empty): gfx1100 loads none of it.
    let expected: BTreeSet<String> = [
        "SS_fallback.dat",
        "SS_gfx11-generic.co",
        "SS_gfx11-generic.dat",
    ]
    .iter()
    .map(|n| full(n))
    .collect();
    assert_eq!(left, expected, "{out}");
    assert_eq!(std::fs::read(&generic).unwrap(), before);
}

#[test]
fn a_large_tree_pruned_on_eight_threads_gives_the_same_files_every_time() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    tree(d);
    // A few hundred files: the library copied into numbered folders.
    let library = d.join(LIBRARY);
    let names = util::file_names(&library);
    for copy in 0..15 {
        let to = d.join(format!("lib/copies/{copy:02}"));
        std::fs::create_dir_all(&to).unwrap();
        for name in &names {
            std::fs::copy(library.join(name), to.join(name)).unwrap();
        }
    }
    let original = contents(d);
    assert!(original.len() > 300, "{}", original.len());
    let mut reference: Option<(BTreeMap<PathBuf, Vec<u8>>, String)> = None;
    for round in 0..3 {
        let work = d.join(format!("round{round}"));
        for (path, bytes) in &original {
            let to = work.join(path.strip_prefix(d).unwrap());
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::write(to, bytes).unwrap();
        }
        let (code, out, err) = text_output(
            offload()
                .current_dir(&work)
                .env("RAYON_NUM_THREADS", "8")
                .args([
                    "strip",
                    "-r",
                    "-j",
                    "8",
                    "--keep",
                    "gfx90a:xnack+",
                    "--prune",
                ])
                .args(["--prune-named", "--in-place", "lib"]),
        );
        assert_eq!((code, err.as_str()), (0, ""), "{out}");
        let left: BTreeMap<PathBuf, Vec<u8>> = contents(&work)
            .into_iter()
            .map(|(p, b)| (p.strip_prefix(&work).unwrap().to_path_buf(), b))
            .collect();
        assert_eq!(
            left.len(),
            16 * (KEPT.len() + CATALOGUES.len() - NAMED.len()) + 1
        );
        match &reference {
            None => reference = Some((left, out)),
            Some((files, text)) => {
                assert!(*files == left, "round {round}: other files");
                assert_eq!(*text, out, "round {round}");
            }
        }
        std::fs::remove_dir_all(&work).unwrap();
    }
}

#[test]
fn remove_prunes_the_files_of_the_target_named_and_its_catalogues() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    tree(d);
    let (code, out) = run(
        d,
        &[
            "strip",
            "-r",
            "--remove",
            "gfx906",
            "--prune",
            "--prune-named",
            "--in-place",
            "lib",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let gone = [
        "Kernels.so-000-gfx906.hsaco",
        "SS_fallback_gfx906.hsaco",
        "SS_gfx906.co",
        "SS_gfx906.dat",
        "TensileLibrary_lazy_gfx906.dat",
    ];
    let expected: BTreeSet<String> = CODE_OBJECTS
        .iter()
        .map(|(n, _)| *n)
        .chain(CATALOGUES)
        .filter(|n| !gone.contains(n))
        .map(full)
        .collect();
    let left: BTreeSet<String> = util::file_names(&d.join(LIBRARY)).into_iter().collect();
    assert_eq!(left, expected, "{out}");
    assert!(
        out.contains("\ntotal only device code for other targets: 3 files, 9504 bytes pruned\n"),
        "{out}"
    );
}
