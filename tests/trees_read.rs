//! Whole trees read at once: `ls`, `verify`, `check` and `extract` over many files in parallel
//! give the output of one file at a time, in the order of the files, whatever the number of
//! threads; one damaged file is named and the others still read; the summaries add up to the
//! files' own numbers. And the per-processor lines of `compress` and `decompress`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::trees::{contents, images, tree, WALKED};
use crate::util::{offload, samples_dir, text_output};

/// Samples copied twice into a tree, under `more/a` and `more/b`: compressed bundles, CUDA fat
/// binaries, generic code, a program and a library.
const MORE: [&str; 7] = [
    "targets/mixed-app-z",
    "bundles/two-ccob.bin",
    "cuda/gencode-zstd.o",
    "cuda/arch-specific.o",
    "targets/generic-cov6.o",
    "bundles/kernel-hip-z.o",
    "cuda/libkernel.so",
];

/// The tree of `trees` (with its damaged file), and each of [`MORE`] under `more/a` and
/// `more/b`: 21 files to read.
fn big_tree(dir: &Path) -> PathBuf {
    let root = tree(dir);
    for folder in ["more/a", "more/b"] {
        std::fs::create_dir_all(root.join(folder)).unwrap();
        for sample in MORE {
            let name = Path::new(sample).file_name().unwrap();
            std::fs::copy(samples_dir().join(sample), root.join(folder).join(name)).unwrap();
        }
    }
    root
}

/// The files of the big tree, as the walk takes them: sorted, the damaged one among them.
fn walked(root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = WALKED
        .iter()
        .chain(["obj/plain-host.o"].iter())
        .map(|p| root.join(p))
        .collect();
    for folder in ["more/a", "more/b"] {
        for sample in MORE {
            files.push(
                root.join(folder)
                    .join(Path::new(sample).file_name().unwrap()),
            );
        }
    }
    files.sort();
    files
}

/// Runs `offload ARGS ROOT` with `-j JOBS` (and as many rayon threads).
fn run(args: &[&str], jobs: &str, root: &Path) -> (i32, String, String) {
    text_output(
        offload()
            .args(args)
            .args(["-j", jobs])
            .arg(root)
            .env("RAYON_NUM_THREADS", jobs),
    )
}

/// The numbers in `line`, in order.
fn numbers(line: &str) -> Vec<u64> {
    line.split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .map(|w| w.parse().unwrap())
        .collect()
}

/// The line of `stdout` that starts with `start`.
fn line<'a>(stdout: &'a str, start: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line starting '{start}' in:\n{stdout}"))
}

#[test]
fn reading_a_tree_in_parallel_gives_the_output_of_one_thread() {
    let dir = tempfile::tempdir().unwrap();
    let root = big_tree(dir.path());
    let commands: [&[&str]; 6] = [
        &["ls", "-r"],
        &["ls", "-r", "--json"],
        &["ls", "-r", "--uri"],
        &["verify", "-r"],
        &["check", "-r", "--device", "gfx90a", "--device", "sm_90"],
        &["du", "-r"],
    ];
    for args in commands {
        let one = run(args, "1", &root);
        assert_ne!(one.0, 0, "{args:?}: the damaged file fails the run");
        assert!(!one.1.is_empty(), "{args:?}");
        for round in 0..3 {
            let eight = run(args, "8", &root);
            assert!(
                eight == one,
                "{args:?}, round {round}: -j 8 differs from -j 1:\n{}\n{}",
                eight.1,
                eight.2
            );
        }
    }
    // extract: the same listing and the same files, byte for byte.
    let out = |name: &str| dir.path().join(name);
    let extract = |to: &Path, jobs: &str| {
        let (code, stdout, stderr) = run(
            &[
                "extract",
                "-r",
                "--arch",
                "gfx90a",
                "--arch",
                "sm_90",
                "-o",
                &to.display().to_string(),
            ],
            jobs,
            &root,
        );
        (
            code,
            stdout.replace(&to.display().to_string(), "OUT"),
            stderr,
        )
    };
    let one = extract(&out("one"), "1");
    assert_eq!(one.0, 1, "{}", one.2);
    let written: BTreeMap<PathBuf, Vec<u8>> = contents(&out("one"))
        .into_iter()
        .map(|(p, bytes)| (p.strip_prefix(out("one")).unwrap().to_path_buf(), bytes))
        .collect();
    assert!(written.len() >= 10, "{:?}", written.keys());
    for round in 0..3 {
        let to = out(&format!("eight{round}"));
        assert!(extract(&to, "8") == one, "round {round}");
        let again: BTreeMap<PathBuf, Vec<u8>> = contents(&to)
            .into_iter()
            .map(|(p, bytes)| (p.strip_prefix(&to).unwrap().to_path_buf(), bytes))
            .collect();
        assert!(again == written, "round {round}: the files written differ");
    }
}

#[test]
fn a_damaged_file_is_named_and_the_others_are_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let root = big_tree(dir.path());
    let damaged = root.join("obj/damaged.bc");
    let named = format!("'{}'", damaged.display());
    let files = walked(&root);

    let (code, stdout, stderr) = run(&["ls", "-r"], "8", &root);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains(&named), "{stderr}");
    // Every file with device code is listed; the damaged one lists what it could read.
    let mut listed: Vec<PathBuf> = stdout
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with("total"))
        .map(|l| {
            let place = l.split_whitespace().nth(6).unwrap();
            PathBuf::from(place.split('(').next().unwrap())
        })
        .collect();
    listed.dedup();
    // The damaged file is cut before its first image.
    let with_code: Vec<PathBuf> = files
        .iter()
        .filter(|f| !f.ends_with("plain-host.o") && **f != damaged)
        .cloned()
        .collect();
    assert_eq!(listed, with_code);
    assert_eq!(
        numbers(line(&stdout, "total:"))[..3],
        [files.len() as u64, with_code.len() as u64, 1],
        "{stdout}"
    );

    let (code, stdout, stderr) = run(&["verify", "-r"], "8", &root);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains(&named), "{stderr}");
    let verified: Vec<PathBuf> = stdout
        .lines()
        .filter(|l| !l.starts_with("total"))
        .map(|l| PathBuf::from(l.rsplit_once(": ").unwrap().0))
        .collect();
    assert_eq!(verified, files);

    let out = dir.path().join("out");
    let (code, stdout, stderr) = run(
        &[
            "extract",
            "-r",
            "--arch",
            "gfx906",
            "-o",
            &out.display().to_string(),
        ],
        "8",
        &root,
    );
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains(&named), "{stderr}");
    assert!(
        stdout.contains("kernel-rdc.o-hip-amdgcn-amd-amdhsa--gfx906"),
        "{stdout}"
    );
    let total = numbers(line(&stdout, "total:"));
    assert_eq!(total[0], files.len() as u64, "{stdout}");
    assert!(total[2] >= 1, "errors counted: {stdout}");
}

#[test]
fn a_listings_summary_adds_up_to_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = big_tree(dir.path());
    std::fs::remove_file(root.join("obj/damaged.bc")).unwrap();
    let files: Vec<PathBuf> = walked(&root)
        .into_iter()
        .filter(|f| !f.ends_with("damaged.bc"))
        .collect();
    let (code, stdout, stderr) = run(&["ls", "-r"], "8", &root);
    assert_eq!(code, 0, "{stderr}");

    let mut count = 0;
    let mut inflated = 0;
    let mut with_code = 0;
    let mut by_target: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for file in &files {
        let listed = images(file);
        with_code += u64::from(!listed.is_empty());
        for (arch, size) in listed {
            count += 1;
            inflated += size;
            let sum = by_target.entry(arch).or_default();
            sum.0 += 1;
            sum.1 += size;
        }
    }
    // `du` counts stored bytes by the same rule.
    let (_, du, _) = text_output(offload().args(["du", "-r", "--json"]).arg(&root));
    let du: serde_json::Value = serde_json::from_str(&du).unwrap();
    let stored: u64 = du["total"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["stored"].as_u64().unwrap())
        .sum();
    assert_eq!(
        line(&stdout, "total:"),
        format!(
            "total: {} files, {with_code} with device code, 0 failed; {count} device images, \
             {stored} bytes stored, {inflated} inflated",
            files.len()
        )
    );
    let per_target: BTreeMap<String, (u64, u64)> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("total "))
        .map(|l| {
            let (target, rest) = l.split_once(": ").unwrap();
            let n = numbers(rest);
            (target.to_string(), (n[0], n[2]))
        })
        .collect();
    assert_eq!(per_target, by_target);
    // The JSON listing holds the images and nothing else.
    let (_, json, _) = run(&["ls", "-r", "--json"], "8", &root);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        json.as_array()
            .unwrap()
            .iter()
            .filter(|i| i["offload_kind"] != "host")
            .count() as u64,
        count
    );
}

#[test]
fn verify_and_check_a_tree() {
    let dir = tempfile::tempdir().unwrap();
    let root = big_tree(dir.path());
    let (code, stdout, stderr) = run(&["verify", "-r"], "8", &root);
    assert_eq!(code, 1, "{stderr}");
    let mut sums = [0u64; 3];
    for l in stdout.lines().filter(|l| !l.starts_with("total")) {
        let n = numbers(l.rsplit_once(": ").unwrap().1);
        sums[0] += u64::from(n[0] > 0);
        sums[1] += n[0];
        sums[2] += n[1];
    }
    let total = numbers(line(&stdout, "total:"));
    assert_eq!(
        total[..6],
        [
            walked(&root).len() as u64,
            sums[0],
            1,
            sums[1],
            sums[2],
            total[5]
        ],
        "{stdout}"
    );
    assert!(total[5] > total[4], "the bundles inflate: {stdout}");

    let devices = ["--device", "gfx90a", "--device", "sm_90"];
    let (_, text, _) = run(&[&["check", "-r"][..], &devices].concat(), "8", &root);
    let (_, json, stderr) = run(
        &[&["check", "-r", "--json"][..], &devices].concat(),
        "8",
        &root,
    );
    // From folders, check takes programs and libraries only: no object, archive or bundle
    // is reported as not being an ELF file.
    assert!(!stderr.contains("not an ELF file"), "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    let files = report["files"].as_array().unwrap();
    let mut checked: Vec<&str> = files
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .filter(|p| p.starts_with(root.to_str().unwrap()))
        .collect();
    checked.sort_unstable();
    let loadable: Vec<String> = walked(&root)
        .iter()
        .filter(|p| {
            let bytes = std::fs::read(p).unwrap();
            bytes.starts_with(b"\x7fELF") && matches!(bytes[16], 2 | 3)
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(loadable.len() >= 4, "{loadable:?}");
    assert_eq!(checked, loadable, "{json}");
    let bundles: usize = files
        .iter()
        .map(|f| f["bundles"].as_array().unwrap().len())
        .sum();
    let total = numbers(line(&text, "total:"));
    assert_eq!(total[0], files.len() as u64, "{text}");
    assert_eq!(*total.last().unwrap(), bundles as u64, "{text}");
    for (index, device) in ["gfx90a", "sm_90"].iter().enumerate() {
        let mut sums = [0u64; 5];
        for c in files.iter().map(|f| &f["counts"][index]) {
            for (sum, field) in sums
                .iter_mut()
                .zip(["native", "generic", "spirv", "nothing", "fails"])
            {
                *sum += c[field].as_u64().unwrap();
            }
        }
        let mut expected = vec![];
        expected.extend(numbers(device));
        expected.extend(sums);
        assert_eq!(
            numbers(line(&text, &format!("total {device}:"))),
            expected,
            "{text}"
        );
    }
}

#[test]
fn extracting_from_two_files_of_one_name_writes_both() {
    let dir = tempfile::tempdir().unwrap();
    let root = big_tree(dir.path());
    let out = dir.path().join("out");
    let one = dir.path().join("one");
    let (code, _, stderr) = text_output(
        offload()
            .args(["extract", "--arch", "gfx90a", "-o"])
            .arg(&one)
            .arg(root.join("more/a/mixed-app-z")),
    );
    assert_eq!(code, 0, "{stderr}");
    let (code, both, stderr) = text_output(
        offload()
            .args(["extract", "--arch", "gfx90a", "-j", "8", "-o"])
            .arg(&out)
            .arg(root.join("more/a/mixed-app-z"))
            .arg(root.join("more/b/mixed-app-z"))
            .env("RAYON_NUM_THREADS", "8"),
    );
    assert_eq!(code, 0, "{stderr}");
    let alone: BTreeMap<String, Vec<u8>> = crate::util::file_names(&one)
        .into_iter()
        .map(|n| (n.clone(), std::fs::read(one.join(n)).unwrap()))
        .collect();
    let written = crate::util::file_names(&out);
    assert_eq!(written.len(), 2 * alone.len(), "{written:?}");
    // The first file's images under their own names, the second's after a number.
    for (name, bytes) in &alone {
        assert!(std::fs::read(out.join(name)).unwrap() == *bytes, "{name}");
        let (stem, ext) = name.rsplit_once('.').unwrap();
        let second = format!("{stem}-2.{ext}");
        assert!(
            std::fs::read(out.join(&second)).unwrap() == *bytes,
            "{second}"
        );
    }
    let n = alone.len() as u64;
    let bytes: u64 = alone.values().map(|b| b.len() as u64).sum();
    assert!(
        both.contains(&format!(
            "total: 2 files, 2 with images written, 0 errors; {} images written, {} bytes\n",
            2 * n,
            2 * bytes
        )),
        "{both}"
    );
}

#[test]
fn compress_and_decompress_a_tree_count_each_processor() {
    let dir = tempfile::tempdir().unwrap();
    let root = big_tree(dir.path());
    std::fs::remove_file(root.join("obj/damaged.bc")).unwrap();
    let packed = dir.path().join("packed");
    let (code, stdout, stderr) = run(
        &["compress", "-r", "-o", &packed.display().to_string()],
        "8",
        &root,
    );
    assert_eq!(code, 0, "{stderr}");
    let du = |tree: &Path| -> BTreeMap<String, (u64, u64, u64)> {
        let (_, json, _) = text_output(offload().args(["du", "-r", "--json"]).arg(tree));
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        json["total"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["target"].as_str().unwrap().to_string(),
                    (
                        t["images"].as_u64().unwrap(),
                        t["stored"].as_u64().unwrap(),
                        t["inflated"].as_u64().unwrap(),
                    ),
                )
            })
            .collect()
    };
    let per_target = |stdout: &str| -> BTreeMap<String, (u64, u64, u64)> {
        stdout
            .lines()
            .filter_map(|l| l.strip_prefix("total "))
            .map(|l| {
                let (target, rest) = l.split_once(": ").unwrap();
                let n = numbers(rest);
                (target.to_string(), (n[0], n[1], n[2]))
            })
            .collect()
    };
    let before = du(&root);
    let after = du(&packed);
    let expected: BTreeMap<String, (u64, u64, u64)> = before
        .iter()
        .map(|(t, (images, stored, _))| (t.clone(), (*images, *stored, after[t].1)))
        .collect();
    assert_eq!(per_target(&stdout), expected, "{stdout}");
    assert!(
        expected.values().any(|(_, from, to)| to < from),
        "something shrank: {stdout}"
    );

    let (code, stdout, stderr) = run(&["decompress", "-r", "--dry-run"], "8", &packed);
    assert_eq!(code, 0, "{stderr}");
    let expected: BTreeMap<String, (u64, u64, u64)> = after
        .iter()
        .map(|(t, (images, stored, inflated))| (t.clone(), (*images, *stored, *inflated)))
        .collect();
    assert_eq!(per_target(&stdout), expected, "{stdout}");
    assert!(stdout.contains(" would go to "), "{stdout}");
}

#[test]
fn a_folder_named_without_r_says_which_folders_it_left() {
    let dir = tempfile::tempdir().unwrap();
    let root = big_tree(dir.path());
    std::fs::create_dir_all(root.join("empty")).unwrap();
    let subfolders = std::fs::read_dir(&root)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_type().unwrap().is_dir())
        .count();
    for command in ["ls", "du", "verify"] {
        let (_, _, stderr) = text_output(offload().arg(command).arg(&root));
        let note = format!(
            "offload {command}: note: {subfolders} folders inside the folders named not walked; give -r to walk them"
        );
        assert!(stderr.contains(&note), "{stderr}");
        let (_, _, stderr) = text_output(offload().args([command, "-r"]).arg(&root));
        assert!(!stderr.contains("not walked"), "{stderr}");
    }
}
