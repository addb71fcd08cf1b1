//! Installed environments: a strip (or compress, decompress, prune) of a tree that holds a
//! Python environment or a conda prefix keeps their manifests right. A wheel made here (a HIP
//! shared library and program of `samples/linked/`, bare code objects) is installed by pip
//! into a venv; after the strip, the RECORD lists the new hash and size of each file
//! rewritten (checked by Python's own `importlib.metadata` and `hashlib`), no row of a file
//! removed, and every other row byte for byte; `pip check` passes and `pip uninstall` leaves
//! nothing of the package behind.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{self, offload_in, samples_dir, skips};

/// Writes a wheel of the files `files` (name in the wheel, sample) to `out`, with its RECORD
/// made by Python (hashlib, base64, csv: as wheel tools write it).
const MAKE_WHEEL: &str = r#"
import base64, csv, hashlib, io, sys, zipfile
out, files = sys.argv[1], sys.argv[2:]
meta = {
    "demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
    "demo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    "demo/__init__.py": b"",
}
contents = dict(meta)
for pair in files:
    name, path = pair.split("=", 1)
    contents[name] = open(path, "rb").read()
rows = io.StringIO()
writer = csv.writer(rows, lineterminator="\n")
for name, data in contents.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    writer.writerow([name, "sha256=" + digest, len(data)])
writer.writerow(["demo-1.0.dist-info/RECORD", "", ""])
with zipfile.ZipFile(out, "w") as wheel:
    for name, data in contents.items():
        wheel.writestr(name, data)
    wheel.writestr("demo-1.0.dist-info/RECORD", rows.getvalue())
"#;

/// Checks with Python that every file the installed `demo` lists with a hash has that hash
/// and size, and that the files `absent` are listed no more.
const VERIFY: &str = r#"
import base64, hashlib, importlib.metadata, sys
absent = set(sys.argv[1:])
bad = []
for f in importlib.metadata.files("demo"):
    if str(f) in absent:
        bad.append("still listed: %s" % f)
    if f.hash is None:
        continue
    data = f.locate().read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    if f.hash.mode != "sha256" or f.hash.value != digest or f.size != len(data):
        bad.append("%s: listed %s %s, is %s %d" % (f, f.hash.value, f.size, digest, len(data)))
print("\n".join(bad))
sys.exit(1 if bad else 0)
"#;

/// A venv with the wheel `demo` installed, or a skip when Python cannot make one.
struct Venv {
    _dir: tempfile::TempDir,
    root: PathBuf,
    python: PathBuf,
    site_packages: PathBuf,
}

impl Venv {
    fn new() -> Option<Venv> {
        let python = util::python_with(&["venv", "ensurepip"])?;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("venv");
        let made = Command::new(&python)
            .args(["-m", "venv"])
            .arg(&root)
            .output()
            .unwrap();
        if !made.status.success() {
            skips::skip(&format!(
                "python3 -m venv fails (python3-venv missing?): {}",
                String::from_utf8_lossy(&made.stderr)
            ));
            return None;
        }
        let wheel = dir.path().join("demo-1.0-py3-none-any.whl");
        let sample = |s: &str| samples_dir().join(s).to_str().unwrap().to_string();
        let files = [
            format!("demo/libhip.so={}", sample("linked/libhip.so")),
            format!("demo/odd, \"name\".so={}", sample("linked/libhip.so")),
            format!(
                "demo/kernels/kernel-gfx906.hsaco={}",
                sample("dev/kernel-gfx906.hsaco")
            ),
            format!(
                "demo/kernels/kernel-gfx90a.hsaco={}",
                sample("dev/kernel-gfx90a.hsaco")
            ),
            format!("demo-1.0.data/scripts/hip-app={}", sample("linked/hip-app")),
        ];
        util::succeed(
            Command::new(&python)
                .args(["-c", MAKE_WHEEL])
                .arg(&wheel)
                .args(&files),
        );
        let venv_python = root.join("bin/python");
        util::succeed(
            Command::new(&venv_python)
                .args(["-m", "pip", "install", "-q", "--no-index", "--no-deps"])
                .arg(&wheel),
        );
        let purelib = util::succeed(Command::new(&venv_python).args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ]));
        let site_packages = PathBuf::from(String::from_utf8(purelib.stdout).unwrap().trim());
        Some(Venv {
            _dir: dir,
            root,
            python: venv_python,
            site_packages,
        })
    }

    fn record_path(&self) -> PathBuf {
        self.site_packages.join("demo-1.0.dist-info/RECORD")
    }

    fn record(&self) -> String {
        std::fs::read_to_string(self.record_path()).unwrap()
    }

    /// Python's check of the RECORD (see [`VERIFY`]), the files `absent` no longer listed.
    fn verify(&self, absent: &[&str]) {
        let (code, out, err) =
            util::text_output(Command::new(&self.python).args(["-c", VERIFY]).args(absent));
        assert_eq!(code, 0, "{out}{err}\nRECORD:\n{}", self.record());
        let (code, out, err) =
            util::text_output(Command::new(&self.python).args(["-m", "pip", "check"]));
        assert_eq!(code, 0, "pip check: {out}{err}");
    }

    /// Uninstalls `demo` and checks that nothing of it is left.
    fn uninstall_leaves_nothing(&self) {
        util::succeed(Command::new(&self.python).args(["-m", "pip", "uninstall", "-y", "demo"]));
        let left: Vec<String> = util::file_names(&self.site_packages)
            .into_iter()
            .filter(|n| n.starts_with("demo"))
            .collect();
        assert!(left.is_empty(), "left in site-packages: {left:?}");
        assert!(!self.root.join("bin/hip-app").exists());
    }
}

/// The rows of `record` whose path is not one of `changed`.
fn rows_other_than<'r>(record: &'r str, changed: &[&str]) -> Vec<&'r str> {
    record
        .split_inclusive('\n')
        .filter(|row| !changed.iter().any(|c| row.starts_with(&format!("{c},"))))
        .collect()
}

#[test]
fn a_strip_of_site_packages_keeps_the_record_right_and_pip_uninstalls_everything() {
    let Some(venv) = Venv::new() else {
        return;
    };
    let before = venv.record();
    let sp = venv.site_packages.to_str().unwrap();
    let (code, out, err) = offload_in(
        Path::new("."),
        &["strip", "-r", "--keep", "gfx90a", "--in-place", sp],
    );
    assert_eq!(code, 0, "{out}{err}");
    let dist_info = venv.site_packages.join("demo-1.0.dist-info");
    assert!(
        out.contains(&format!(
            "updated RECORD of {}: 2 files rewritten, 0 removed\n",
            dist_info.display()
        )),
        "{out}"
    );
    let after = venv.record();
    let changed = ["demo/libhip.so", "\"demo/odd, \"\"name\"\".so\""];
    // Every other row (the program in bin/, outside the tree walked, among them), byte for
    // byte; the rows of the files rewritten, each a new hash and size.
    assert_eq!(
        rows_other_than(&after, &changed),
        rows_other_than(&before, &changed)
    );
    assert_ne!(after, before);
    assert_eq!(after.lines().count(), before.lines().count());
    venv.verify(&[]);
    venv.uninstall_leaves_nothing();
}

#[test]
fn a_pruning_strip_of_the_venv_drops_the_rows_of_files_removed() {
    let Some(venv) = Venv::new() else {
        return;
    };
    let before = venv.record();
    let root = venv.root.to_str().unwrap();
    let (code, out, err) = offload_in(
        Path::new("."),
        &[
            "strip",
            "-r",
            "--keep",
            "gfx90a",
            "--prune",
            "--in-place",
            root,
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("demo-1.0.dist-info: 3 files rewritten, 1 removed\n"),
        "{out}"
    );
    assert!(!venv
        .site_packages
        .join("demo/kernels/kernel-gfx906.hsaco")
        .exists());
    let after = venv.record();
    assert!(!after.contains("kernel-gfx906.hsaco"), "{after}");
    assert!(before.contains("demo/kernels/kernel-gfx906.hsaco,"));
    let changed = [
        "demo/libhip.so",
        "\"demo/odd, \"\"name\"\".so\"",
        "../../../bin/hip-app",
        "demo/kernels/kernel-gfx906.hsaco",
    ];
    assert_eq!(
        rows_other_than(&after, &changed),
        rows_other_than(&before, &changed)
    );
    venv.verify(&["demo/kernels/kernel-gfx906.hsaco"]);
    venv.uninstall_leaves_nothing();
}

/// The SHA-256 of `data`, in hexadecimal.
fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A conda record of `lib/libhip.so`, `lib/kernel-gfx906.hsaco` and `share/demo.txt`, as
/// conda writes one (indent 2, keys sorted).
fn conda_record(files: &[(&str, &[u8])]) -> String {
    let names: Vec<String> = files.iter().map(|(n, _)| format!("    \"{n}\"")).collect();
    let paths: Vec<String> = files
        .iter()
        .map(|(n, data)| {
            format!(
                "      {{\n        \"_path\": \"{n}\",\n        \"path_type\": \"hardlink\",\n        \"sha256\": \"{}\",\n        \"size_in_bytes\": {}\n      }}",
                sha256_hex(data),
                data.len()
            )
        })
        .collect();
    format!(
        "{{\n  \"build\": \"0\",\n  \"files\": [\n{}\n  ],\n  \"name\": \"demo\",\n  \"paths_data\": {{\n    \"paths\": [\n{}\n    ],\n    \"paths_version\": 1\n  }},\n  \"version\": \"1.0\"\n}}",
        names.join(",\n"),
        paths.join(",\n")
    )
}

#[test]
fn a_conda_prefix_keeps_its_records_right() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("env");
    std::fs::create_dir_all(prefix.join("lib")).unwrap();
    std::fs::create_dir_all(prefix.join("share")).unwrap();
    std::fs::create_dir_all(prefix.join("conda-meta")).unwrap();
    let lib = std::fs::read(samples_dir().join("linked/libhip.so")).unwrap();
    let bare = std::fs::read(samples_dir().join("dev/kernel-gfx906.hsaco")).unwrap();
    std::fs::write(prefix.join("lib/libhip.so"), &lib).unwrap();
    std::fs::write(prefix.join("lib/kernel-gfx906.hsaco"), &bare).unwrap();
    std::fs::write(prefix.join("share/demo.txt"), b"text").unwrap();
    // Named for a removed processor: goes with --prune-named.
    std::fs::write(prefix.join("lib/TensileLibrary_lazy_gfx906.dat"), b"dat").unwrap();
    let record = conda_record(&[
        ("lib/libhip.so", &lib),
        ("lib/kernel-gfx906.hsaco", &bare),
        ("lib/TensileLibrary_lazy_gfx906.dat", b"dat"),
        ("share/demo.txt", b"text"),
    ]);
    let json = prefix.join("conda-meta/demo-1.0-0.json");
    std::fs::write(&json, &record).unwrap();
    // Another package's record, which lists none of the files: left alone.
    let other = prefix.join("conda-meta/other-2.0-0.json");
    let other_record = conda_record(&[("share/demo.txt", b"text")]);
    std::fs::write(&other, &other_record).unwrap();

    let (code, out, err) = offload_in(
        dir.path(),
        &[
            "strip",
            "-r",
            "--keep",
            "gfx90a",
            "--prune",
            "--prune-named",
            "--in-place",
            "env",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("updated env/conda-meta/demo-1.0-0.json: 1 file rewritten, 2 removed\n"),
        "{out}"
    );
    let stripped = std::fs::read(prefix.join("lib/libhip.so")).unwrap();
    assert_ne!(stripped, lib);
    let expected = conda_record(&[("lib/libhip.so", &stripped), ("share/demo.txt", b"text")]);
    assert_eq!(std::fs::read_to_string(&json).unwrap(), expected);
    assert_eq!(std::fs::read_to_string(&other).unwrap(), other_record);
}

#[test]
fn a_record_never_leads_the_tool_outside_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    let lib = std::fs::read(samples_dir().join("linked/libhip.so")).unwrap();
    // A fat binary beside the tree, which RECORD rows reach by `..` and a link points to.
    std::fs::write(dir.path().join("outside.so"), &lib).unwrap();
    let sp = dir.path().join("sp");
    std::fs::create_dir_all(sp.join("demo-1.0.dist-info")).unwrap();
    std::fs::create_dir_all(sp.join("demo")).unwrap();
    std::fs::write(sp.join("demo/libhip.so"), &lib).unwrap();
    std::os::unix::fs::symlink(dir.path().join("outside.so"), sp.join("demo/link.so")).unwrap();
    let record = "demo/libhip.so,sha256=AAAA,1\n\
                  ../outside.so,sha256=BBBB,2\n\
                  ../../../etc/x,sha256=CCCC,3\n\
                  /etc/passwd,sha256=DDDD,4\n\
                  demo/link.so,sha256=EEEE,5\n\
                  demo-1.0.dist-info/RECORD,,\n";
    std::fs::write(sp.join("demo-1.0.dist-info/RECORD"), record).unwrap();
    // A RECORD outside the tree, which a link to its folder, and a link as a RECORD, reach:
    // neither is read nor written.
    let outside_record = "demo/libhip.so,sha256=FFFF,6\n";
    std::fs::create_dir_all(dir.path().join("elsewhere")).unwrap();
    std::fs::write(dir.path().join("elsewhere/RECORD"), outside_record).unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("elsewhere"),
        sp.join("linked-1.0.dist-info"),
    )
    .unwrap();
    std::fs::create_dir_all(sp.join("link-1.0.dist-info")).unwrap();
    std::os::unix::fs::symlink(
        dir.path().join("elsewhere/RECORD"),
        sp.join("link-1.0.dist-info/RECORD"),
    )
    .unwrap();

    let (code, out, err) = offload_in(
        dir.path(),
        &["strip", "-r", "--keep", "gfx90a", "--in-place", "sp"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("updated RECORD of sp/demo-1.0.dist-info: 1 file rewritten, 0 removed\n"),
        "{out}"
    );
    assert_eq!(out.matches("updated").count(), 1, "{out}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("elsewhere/RECORD")).unwrap(),
        outside_record
    );
    assert_eq!(std::fs::read(dir.path().join("outside.so")).unwrap(), lib);
    let after = std::fs::read_to_string(sp.join("demo-1.0.dist-info/RECORD")).unwrap();
    let (first, rest) = after.split_once('\n').unwrap();
    assert!(first.starts_with("demo/libhip.so,sha256=") && !first.contains("AAAA"));
    assert_eq!(rest, record.split_once('\n').unwrap().1);
}

#[test]
fn a_damaged_manifest_is_an_error_naming_it_and_the_rewrites_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let sp = dir.path().join("sp");
    std::fs::create_dir_all(sp.join("demo-1.0.dist-info")).unwrap();
    std::fs::create_dir_all(sp.join("demo")).unwrap();
    std::fs::copy(
        samples_dir().join("linked/libhip.so"),
        sp.join("demo/libhip.so"),
    )
    .unwrap();
    let record = "\"demo/libhip.so,sha256=AAAA,1\n";
    std::fs::write(sp.join("demo-1.0.dist-info/RECORD"), record).unwrap();
    let (code, out, err) = offload_in(
        dir.path(),
        &["strip", "-r", "--keep", "gfx90a", "--in-place", "sp"],
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("sp/demo/libhip.so: 3 device images went to 2"),
        "{out}"
    );
    assert!(
        err.contains(
            "offload strip: error: 'sp/demo-1.0.dist-info/RECORD': cannot be read as a wheel RECORD: offset 0x0:"
        ),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(sp.join("demo-1.0.dist-info/RECORD")).unwrap(),
        record
    );
}

#[test]
fn a_dry_run_says_which_manifests_would_change_and_changes_none() {
    let dir = tempfile::tempdir().unwrap();
    let sp = dir.path().join("sp");
    std::fs::create_dir_all(sp.join("demo-1.0.dist-info")).unwrap();
    std::fs::create_dir_all(sp.join("demo")).unwrap();
    std::fs::copy(
        samples_dir().join("linked/libhip.so"),
        sp.join("demo/libhip.so"),
    )
    .unwrap();
    let record = "demo/libhip.so,sha256=AAAA,1\r\n";
    std::fs::write(sp.join("demo-1.0.dist-info/RECORD"), record).unwrap();
    let (code, out, err) = offload_in(
        dir.path(),
        &["strip", "-r", "--keep", "gfx90a", "--dry-run", "sp"],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("would update RECORD of sp/demo-1.0.dist-info: 1 file rewritten, 0 removed\n"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(sp.join("demo-1.0.dist-info/RECORD")).unwrap(),
        record
    );
}

/// The RECORD hash field of `data`, as Python writes it: `sha256=` and the digest in URL-safe
/// base64 without padding.
fn record_hash(data: &[u8]) -> String {
    use sha2::Digest;
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let digest = sha2::Sha256::digest(data);
    let bits: Vec<bool> = digest
        .iter()
        .flat_map(|b| (0..8).rev().map(move |i| b >> i & 1 == 1))
        .collect();
    let text: String = bits
        .chunks(6)
        .map(|six| {
            let value = six
                .iter()
                .chain(std::iter::repeat(&false))
                .take(6)
                .fold(0usize, |v, &bit| v << 1 | usize::from(bit));
            char::from(ALPHABET[value])
        })
        .collect();
    format!("sha256={text}")
}

/// A site-packages in `dir` with `demo/libhip.so` (a fat binary), `demo/k906.hsaco` (a bare
/// code object for gfx906) and `demo/data.txt`, and a RECORD listing them with CRLF line ends.
fn site_packages(dir: &Path) -> (PathBuf, String) {
    let sp = dir.join("sp");
    std::fs::create_dir_all(sp.join("demo-1.0.dist-info")).unwrap();
    std::fs::create_dir_all(sp.join("demo")).unwrap();
    let lib = std::fs::read(samples_dir().join("linked/libhip.so")).unwrap();
    let bare = std::fs::read(samples_dir().join("dev/kernel-gfx906.hsaco")).unwrap();
    std::fs::write(sp.join("demo/libhip.so"), &lib).unwrap();
    std::fs::write(sp.join("demo/k906.hsaco"), &bare).unwrap();
    std::fs::write(sp.join("demo/data.txt"), b"data").unwrap();
    let record = format!(
        "demo/libhip.so,{},{}\r\ndemo/k906.hsaco,{},{}\r\ndemo/data.txt,{},4\r\ndemo-1.0.dist-info/RECORD,,\r\n",
        record_hash(&lib),
        lib.len(),
        record_hash(&bare),
        bare.len(),
        record_hash(b"data"),
    );
    std::fs::write(sp.join("demo-1.0.dist-info/RECORD"), &record).unwrap();
    (sp, record)
}

#[test]
fn compress_and_decompress_keep_the_record_right() {
    let dir = tempfile::tempdir().unwrap();
    let (sp, record) = site_packages(dir.path());
    for command in ["compress", "decompress"] {
        let (code, out, err) = offload_in(dir.path(), &[command, "-r", "--in-place", "sp"]);
        assert_eq!(code, 0, "{out}{err}");
        assert!(
            out.contains("updated RECORD of sp/demo-1.0.dist-info: 1 file rewritten, 0 removed\n"),
            "{command}: {out}"
        );
        let lib = std::fs::read(sp.join("demo/libhip.so")).unwrap();
        let after = std::fs::read_to_string(sp.join("demo-1.0.dist-info/RECORD")).unwrap();
        let (first, rest) = after.split_once("\r\n").unwrap();
        assert_eq!(
            first,
            format!("demo/libhip.so,{},{}", record_hash(&lib), lib.len())
        );
        assert_eq!(rest, record.split_once("\r\n").unwrap().1);
    }
}

#[test]
fn an_output_folder_s_record_is_kept_right_and_the_tree_s_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let (sp, record) = site_packages(dir.path());
    let (code, out, err) = offload_in(
        dir.path(),
        &[
            "strip", "-r", "--keep", "gfx90a", "--prune", "sp", "-o", "out",
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("updated RECORD of out/demo-1.0.dist-info: 1 file rewritten, 1 removed\n"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(sp.join("demo-1.0.dist-info/RECORD")).unwrap(),
        record
    );
    let out_dir = dir.path().join("out");
    assert!(!out_dir.join("demo/k906.hsaco").exists());
    let lib = std::fs::read(out_dir.join("demo/libhip.so")).unwrap();
    let after = std::fs::read_to_string(out_dir.join("demo-1.0.dist-info/RECORD")).unwrap();
    let rows: Vec<&str> = record.split_inclusive("\r\n").collect();
    assert_eq!(
        after,
        format!(
            "demo/libhip.so,{},{}\r\n{}{}",
            record_hash(&lib),
            lib.len(),
            rows[2],
            rows[3]
        )
    );
}
