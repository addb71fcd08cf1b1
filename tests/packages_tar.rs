//! Tarballs, Debian packages and conda packages named to `strip`, `compress` and
//! `decompress`: written again as packages of the same kind and compression, every header
//! kept but for sizes and checksums, members without device code byte for byte, and their
//! manifests kept right. Checked by the real tools: `tar` and Python's `tarfile`,
//! `dpkg-deb`, `dpkg --verify`, conda-package-handling's `cph x` with every `paths.json`
//! digest hashed again. Damaged packages are errors naming package and member, with nothing
//! written.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::packages::{processors, python_json};
use crate::util::{self, offload, samples_dir, succeed, text_output};

/// The samples put in every package: (sample, name in its `lib` folder).
const SAMPLES: [(&str, &str); 4] = [
    ("linked/hip-app", "hip-app"),
    ("llvm23/hip-compressed-app", "hip-compressed-app"),
    ("archive/libmulti.a", "libmulti.a"),
    ("dev/kernel-gfx906.hsaco", "kernel-gfx906.hsaco"),
];

/// Puts the samples in `lib`, beside a text file, a link to it and a file named for a
/// processor.
fn stage(lib: &Path) {
    fs::create_dir_all(lib).unwrap();
    for (sample, name) in SAMPLES {
        fs::copy(samples_dir().join(sample), lib.join(name)).unwrap();
    }
    fs::write(lib.join("README.txt"), "nothing to see\n").unwrap();
    fs::write(lib.join("TensileLibrary_gfx906.dat"), "tensile\n").unwrap();
    std::os::unix::fs::symlink("README.txt", lib.join("readme")).unwrap();
}

/// Prints, as JSON, each member of the plain tarball `sys.argv[1]`: its header fields, the
/// SHA-256 of its data and its header blocks (from the first extension header) as bytes.
const DESCRIBE: &str = "import sys, tarfile, hashlib, json\n\
out = {}\n\
raw = open(sys.argv[1], 'rb').read()\n\
with tarfile.open(sys.argv[1], 'r:') as t:\n\
\x20   for m in t.getmembers():\n\
\x20       data = t.extractfile(m).read() if m.isreg() else b''\n\
\x20       assert len(data) == m.size\n\
\x20       pax = {k: v for k, v in m.pax_headers.items() if k != 'size'}\n\
\x20       out[m.name] = {'fields': [m.type.decode('latin1'), m.mode, m.uid, m.gid, m.uname, m.gname, m.mtime, m.linkname, pax], 'size': m.size, 'sha': hashlib.sha256(data).hexdigest(), 'header': list(raw[m.offset:m.offset_data])}\n\
print(json.dumps(out))\n";

/// The tools that compress a tarball: (extension, `tar` flag, tool, its decompress flag).
const COMPRESSIONS: [(&str, &str, &str); 5] = [
    ("tar", "", "cat"),
    ("tar.gz", "-z", "gzip"),
    ("tar.xz", "-J", "xz"),
    ("tar.zst", "--zstd", "zstd"),
    ("tar.bz2", "-j", "bzip2"),
];

/// `path` decompressed by `tool` into a plain tarball beside it.
fn plain(path: &Path, tool: &str) -> PathBuf {
    let out = path.with_extension("plain");
    let bytes = if tool == "cat" {
        fs::read(path).unwrap()
    } else {
        succeed(Command::new(tool).arg("-dc").arg(path)).stdout
    };
    fs::write(&out, bytes).unwrap();
    out
}

/// What [`DESCRIBE`] says of the plain tarball `path`.
fn describe(path: &Path) -> serde_json::Map<String, Value> {
    python_json(DESCRIBE, path)
}

/// The header blocks `header` with the last block's size field and checksum blanked.
fn masked(header: &Value) -> Vec<u64> {
    let mut bytes: Vec<u64> = header
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_u64().unwrap())
        .collect();
    let last = bytes.len() - 512;
    for i in (124..136).chain(148..156) {
        bytes[last + i] = 0;
    }
    bytes
}

/// The loose sample `name` stripped to gfx90a.
fn stripped_loose(dir: &Path, sample: &str) -> Vec<u8> {
    let out = dir.join(format!("loose-{}", sample.replace('/', "-")));
    succeed(
        offload()
            .args(["strip", "--keep", "gfx90a"])
            .arg(samples_dir().join(sample))
            .arg("-o")
            .arg(&out),
    );
    fs::read(out).unwrap()
}

/// The SHA-256 of `bytes` in hex, as Python writes it.
fn sha(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn tarballs_of_every_compression_stripped_keep_every_header_and_other_member() {
    if util::tool("tar").is_none() || util::tool("python3").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    stage(&dir.path().join("tree/mylib/lib"));
    for (ext, flag, tool) in COMPRESSIONS {
        if tool != "cat" && util::tool(tool).is_none() {
            continue;
        }
        let tarball = dir.path().join(format!("t.{ext}"));
        let mut tar = Command::new("tar");
        tar.arg("-C")
            .arg(dir.path().join("tree"))
            .arg("-cf")
            .arg(&tarball);
        if !flag.is_empty() {
            tar.arg(flag);
        }
        succeed(tar.arg("mylib"));
        let out = dir.path().join(format!("out.{ext}"));
        succeed(
            offload()
                .args(["strip", "--keep", "gfx90a"])
                .arg(&tarball)
                .arg("-o")
                .arg(&out),
        );
        // Compressed as it was.
        let (before, after) = (fs::read(&tarball).unwrap(), fs::read(&out).unwrap());
        assert_eq!(before[..2], after[..2], "{ext}");
        assert_eq!(
            processors(&out),
            ["gfx906", "gfx90a"].map(String::from).into(),
            "{ext}: the bare gfx906 code object stays without --prune"
        );
        let (b, a) = (
            describe(&plain(&tarball, tool)),
            describe(&plain(&out, tool)),
        );
        assert_eq!(
            b.keys().collect::<Vec<_>>(),
            a.keys().collect::<Vec<_>>(),
            "{ext}"
        );
        for (name, was) in &b {
            let now = &a[name];
            assert_eq!(was["fields"], now["fields"], "{ext} {name}");
            assert_eq!(
                masked(&was["header"]),
                masked(&now["header"]),
                "{ext} {name}"
            );
            let rewritten = ["hip-app", "libmulti.a", "hip-compressed-app"]
                .iter()
                .find(|n| name.ends_with(&format!("lib/{n}")));
            match rewritten {
                Some(n) => {
                    let sample = SAMPLES.iter().find(|(_, m)| m == n).unwrap().0;
                    let loose = stripped_loose(dir.path(), sample);
                    assert_eq!(now["sha"], sha(&loose).as_str(), "{ext} {name}");
                    assert_eq!(now["size"], loose.len(), "{ext} {name}");
                }
                None => assert_eq!(was, now, "{ext} {name}"),
            }
        }
        succeed(Command::new("tar").arg("-tf").arg(&out));
        // In place: the same bytes, atomically.
        let (code, _, err) = text_output(
            offload()
                .args(["strip", "--keep", "gfx90a", "--in-place"])
                .arg(&tarball),
        );
        assert_eq!(code, 0, "{err}");
        assert_eq!(fs::read(&tarball).unwrap(), after, "{ext}");
    }
}

/// Writes, in Python, the tarball `sys.argv[1]` of the files of `sys.argv[2]` in the format
/// `sys.argv[3]` (`PAX_FORMAT`, `GNU_FORMAT`): names long enough to need pax records or GNU
/// long names, and in a pax tarball each file's `size` given in a pax record too.
const MAKE_PAX: &str = "import sys, tarfile, pathlib\n\
root = pathlib.Path(sys.argv[2])\n\
deep = 'a' * 60 + '/' + 'b' * 60 + '/'\n\
with tarfile.open(sys.argv[1], 'w', format=getattr(tarfile, sys.argv[3])) as t:\n\
\x20   for p in sorted(root.rglob('*')):\n\
\x20       info = t.gettarinfo(p, deep + str(p.relative_to(root)))\n\
\x20       if info.isreg():\n\
\x20           info.pax_headers = {'size': str(info.size), 'comment': 'kept'}\n\
\x20           with open(p, 'rb') as f:\n\
\x20               t.addfile(info, f)\n\
\x20       else:\n\
\x20           t.addfile(info)\n";

#[test]
fn pruning_a_pax_or_gnu_tarball_drops_whole_members_and_rewrites_sizes() {
    let Some(python) = util::tool("python3") else {
        return;
    };
    if util::tool("tar").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    stage(&tree.join("lib"));
    for format in ["PAX_FORMAT", "GNU_FORMAT"] {
        pruned_with_long_names(&python, dir.path(), &tree, format);
    }
}

/// Checks a strip with `--prune` of the tarball of `tree` in `format` with long names.
fn pruned_with_long_names(python: &Path, dir: &Path, tree: &Path, format: &str) {
    let tarball = dir.join(format!("{format}.tar"));
    succeed(
        Command::new(python)
            .args(["-c", MAKE_PAX])
            .arg(&tarball)
            .arg(tree)
            .arg(format),
    );
    let out = dir.join(format!("out-{format}.tar"));
    let report = succeed(
        offload()
            .args(["strip", "--keep", "gfx90a", "--prune", "--prune-named"])
            .arg(&tarball)
            .arg("-o")
            .arg(&out),
    );
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(text.contains("kernel-gfx906.hsaco"), "{text}");
    assert_eq!(processors(&out), ["gfx90a"].map(String::from).into());
    let (b, a) = (describe(&tarball), describe(&out));
    let gone: Vec<&String> = b.keys().filter(|k| !a.contains_key(*k)).collect();
    assert_eq!(gone.len(), 2, "{gone:?}");
    assert!(gone.iter().any(|n| n.ends_with("lib/kernel-gfx906.hsaco")));
    assert!(gone
        .iter()
        .any(|n| n.ends_with("lib/TensileLibrary_gfx906.dat")));
    for (name, now) in &a {
        assert_eq!(b[name]["fields"], now["fields"], "{name}");
        if now["fields"][0] == "0" && format == "PAX_FORMAT" {
            assert_eq!(now["fields"][8]["comment"], "kept", "{name}");
        }
    }
    // GNU tar reads the sizes (and pax size records) written again.
    let listed = succeed(Command::new("tar").arg("-tvf").arg(&out));
    let listed = String::from_utf8_lossy(&listed.stdout);
    let app = a
        .iter()
        .find(|(n, _)| n.ends_with("lib/libmulti.a"))
        .unwrap();
    let size = app.1["size"].as_u64().unwrap();
    assert!(
        listed
            .lines()
            .any(|l| l.ends_with("lib/libmulti.a") && l.contains(&format!(" {size} "))),
        "{listed}"
    );
    let loose = stripped_loose(dir, "archive/libmulti.a");
    let extracted = succeed(Command::new("tar").arg("-xOf").arg(&out).arg(app.0));
    assert_eq!(extracted.stdout, loose);
}

#[test]
fn compress_then_decompress_of_a_tarball_round_trips() {
    if util::tool("tar").is_none() || util::tool("xz").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    stage(&dir.path().join("tree/mylib/lib"));
    let tarball = dir.path().join("t.tar.xz");
    succeed(
        Command::new("tar")
            .arg("-C")
            .arg(dir.path().join("tree"))
            .arg("-cJf")
            .arg(&tarball)
            .arg("mylib"),
    );
    let compressed = dir.path().join("c.tar.xz");
    succeed(
        offload()
            .arg("compress")
            .arg(&tarball)
            .arg("-o")
            .arg(&compressed),
    );
    let out = dir.path().join("d.tar.xz");
    succeed(
        offload()
            .arg("decompress")
            .arg(&compressed)
            .arg("-o")
            .arg(&out),
    );
    let app = "mylib/lib/hip-app";
    let extract = |t: &Path| succeed(Command::new("tar").arg("-xOf").arg(t).arg(app)).stdout;
    assert_ne!(extract(&compressed), extract(&tarball));
    assert_eq!(processors(&out), processors(&tarball));
    succeed(offload().arg("verify").arg(&out));
}

/// A Debian package of the staged tree under `usr/lib/mylib`, root-owned, with `md5sums`
/// made by `md5sum` and the `Installed-Size` `dpkg-gencontrol` would give; `None` (a skip)
/// without `dpkg-deb` or `md5sum`.
fn deb(dir: &Path, compression: &str) -> Option<PathBuf> {
    let dpkg = util::tool("dpkg-deb")?;
    util::tool("md5sum")?;
    let root = dir.join(format!("root-{compression}"));
    stage(&root.join("usr/lib/mylib"));
    // A hard link: md5sums lists it as a file of its own, Installed-Size counts it once.
    let lib = root.join("usr/lib/mylib");
    fs::hard_link(lib.join("libmulti.a"), lib.join("libmulti-again.a")).unwrap();
    fs::create_dir_all(root.join("DEBIAN")).unwrap();
    let sums = succeed(
        Command::new("sh")
            .current_dir(&root)
            .args(["-c", "find usr -type f | LC_ALL=C sort | xargs md5sum"]),
    );
    fs::write(root.join("DEBIAN/md5sums"), &sums.stdout).unwrap();
    fs::write(
        root.join("DEBIAN/control"),
        "Package: mylib\nVersion: 1.0\nArchitecture: all\nMaintainer: nobody <n@example.org>\nInstalled-Size: 500\nDescription: test\n",
    )
    .unwrap();
    let out = dir.join(format!("mylib-{compression}.deb"));
    succeed(
        Command::new(dpkg)
            .arg(format!("-Z{compression}"))
            .args(["--root-owner-group", "--build"])
            .arg(&root)
            .arg(&out),
    );
    Some(out)
}

/// Installs `deb` in a root of its own below `dir` and verifies it with `dpkg --verify`.
fn installs(deb: &Path, dir: &Path) {
    let Some(dpkg) = util::tool("dpkg") else {
        return;
    };
    let root = dir.join("installed");
    for folder in ["var/lib/dpkg/updates", "var/lib/dpkg/info"] {
        fs::create_dir_all(root.join(folder)).unwrap();
    }
    fs::write(root.join("var/lib/dpkg/status"), "").unwrap();
    let root_arg = format!("--root={}", root.display());
    succeed(
        Command::new(&dpkg)
            .args([
                &root_arg,
                "--force-not-root",
                "--force-script-chrootless",
                "-i",
            ])
            .arg(deb),
    );
    let verify = succeed(Command::new(&dpkg).args([&root_arg, "--verify", "mylib"]));
    assert!(
        verify.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
    assert!(root.join("usr/lib/mylib/hip-app").is_file());
}

/// The field `field` of the control file of `deb`.
fn control_field(deb: &Path, field: &str) -> String {
    let out = succeed(Command::new("dpkg-deb").arg("-f").arg(deb).arg(field));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn a_debian_package_stripped_installs_and_verifies() {
    let dir = tempfile::tempdir().unwrap();
    for compression in ["xz", "gzip", "zstd"] {
        let Some(deb) = deb(dir.path(), compression) else {
            return;
        };
        // A dry run says what would change and writes nothing.
        let before = fs::read(&deb).unwrap();
        let dry = succeed(
            offload()
                .args(["strip", "--keep", "gfx90a", "--prune", "--dry-run"])
                .arg(&deb),
        );
        let dry = String::from_utf8_lossy(&dry.stdout);
        assert!(dry.contains("data.tar"), "{dry}");
        assert!(dry.contains("would go to"), "{dry}");
        assert_eq!(fs::read(&deb).unwrap(), before);
        let out = dir.path().join(format!("out-{compression}.deb"));
        succeed(
            offload()
                .args(["strip", "--keep", "gfx90a", "--prune", "--prune-named"])
                .arg(&deb)
                .arg("-o")
                .arg(&out),
        );
        assert_eq!(processors(&out), ["gfx90a"].map(String::from).into());
        succeed(Command::new("dpkg-deb").arg("--info").arg(&out));
        let contents = succeed(Command::new("dpkg-deb").arg("--contents").arg(&out));
        let contents = String::from_utf8_lossy(&contents.stdout);
        assert!(!contents.contains("kernel-gfx906.hsaco"), "{contents}");
        assert!(
            !contents.contains("TensileLibrary_gfx906.dat"),
            "{contents}"
        );
        assert!(
            contents.contains("./usr/lib/mylib/readme -> README.txt"),
            "{contents}"
        );
        let md5sums = succeed(
            Command::new("dpkg-deb")
                .args(["-I"])
                .arg(&out)
                .arg("md5sums"),
        );
        let md5sums = String::from_utf8_lossy(&md5sums.stdout);
        assert!(!md5sums.contains("gfx906"), "{md5sums}");
        // Installed-Size: each file's KiB, rounded up, counted again; the two pruned gone.
        let kib = |len: usize| len.div_ceil(1024) as i64;
        let hsaco = fs::read(samples_dir().join("dev/kernel-gfx906.hsaco")).unwrap();
        let mut expected: i64 = 500 - kib("tensile\n".len()) - kib(hsaco.len());
        for (sample, _) in &SAMPLES[..3] {
            let before = fs::read(samples_dir().join(sample)).unwrap().len();
            expected += kib(stripped_loose(dir.path(), sample).len()) - kib(before);
        }
        assert_eq!(control_field(&out, "Installed-Size"), expected.to_string());
        installs(&out, &dir.path().join(compression));
    }
}

/// Makes, with conda-package-handling, `mylib-1.0-0.conda` and `mylib-1.0-0.tar.bz2` of a
/// folder with `info/paths.json`, `info/index.json` and the samples; `None` (a skip) without
/// it.
fn conda_packages(dir: &Path) -> Option<Vec<PathBuf>> {
    let python = util::tool("python3")?;
    let has = Command::new(&python)
        .args(["-c", "import conda_package_handling.api"])
        .status()
        .is_ok_and(|s| s.success());
    util::skips::reference(
        has.then_some(()),
        "python module conda_package_handling not found",
    )?;
    let root = dir.join("pkg");
    stage(&root.join("lib"));
    fs::remove_file(root.join("lib/readme")).unwrap();
    let script = "import sys, os, json, hashlib\n\
        import conda_package_handling.api as api\n\
        root, out = sys.argv[1], sys.argv[2]\n\
        files = sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)\n\
        paths = []\n\
        for p in files:\n\
        \x20   b = open(os.path.join(root, p), 'rb').read()\n\
        \x20   paths.append({'_path': p, 'path_type': 'hardlink', 'sha256': hashlib.sha256(b).hexdigest(), 'size_in_bytes': len(b)})\n\
        os.makedirs(os.path.join(root, 'info'))\n\
        json.dump({'paths': paths, 'paths_version': 1}, open(os.path.join(root, 'info/paths.json'), 'w'), indent=2, sort_keys=True)\n\
        json.dump({'name': 'mylib', 'version': '1.0', 'build': '0', 'build_number': 0, 'depends': []}, open(os.path.join(root, 'info/index.json'), 'w'))\n\
        files = sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)\n\
        for name in ['mylib-1.0-0.conda', 'mylib-1.0-0.tar.bz2']:\n\
        \x20   api.create(root, files, name, out_folder=out)\n";
    succeed(
        Command::new(&python)
            .args(["-c", script])
            .arg(&root)
            .arg(dir),
    );
    Some(vec![
        dir.join("mylib-1.0-0.conda"),
        dir.join("mylib-1.0-0.tar.bz2"),
    ])
}

/// Extracts `package` with conda-package-handling and checks every `paths.json` entry
/// against the file extracted; returns the paths listed.
fn extracts_with_right_paths(package: &Path, dest: &Path) -> Vec<String> {
    let script = "import sys, os, json, hashlib\n\
        import conda_package_handling.api as api\n\
        api.extract(sys.argv[1], dest_dir=sys.argv[2])\n\
        listed = []\n\
        for p in json.load(open(os.path.join(sys.argv[2], 'info/paths.json')))['paths']:\n\
        \x20   b = open(os.path.join(sys.argv[2], p['_path']), 'rb').read()\n\
        \x20   assert hashlib.sha256(b).hexdigest() == p['sha256'] and len(b) == p['size_in_bytes'], p\n\
        \x20   listed.append(p['_path'])\n\
        print(json.dumps(listed))\n";
    let out = succeed(
        Command::new("python3")
            .args(["-c", script])
            .arg(package)
            .arg(dest),
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn conda_packages_stripped_extract_with_their_paths_json_right() {
    let dir = tempfile::tempdir().unwrap();
    let Some(packages) = conda_packages(dir.path()) else {
        return;
    };
    for package in packages {
        let name = package.file_name().unwrap().to_str().unwrap().to_string();
        // conda finds a package's parts by its file name: the same name, in another folder.
        let out = dir.path().join("out").join(&name);
        fs::create_dir_all(out.parent().unwrap()).unwrap();
        succeed(
            offload()
                .args(["strip", "--keep", "gfx90a", "--prune", "--prune-named"])
                .arg(&package)
                .arg("-o")
                .arg(&out),
        );
        assert_eq!(
            processors(&out),
            ["gfx90a"].map(String::from).into(),
            "{name}"
        );
        let listed = extracts_with_right_paths(&out, &dir.path().join(format!("x-{name}")));
        assert!(listed.contains(&"lib/hip-app".to_string()), "{listed:?}");
        assert!(
            !listed.iter().any(|p| p.contains("gfx906")),
            "{name}: {listed:?}"
        );
        let before = extracts_with_right_paths(&package, &dir.path().join(format!("b-{name}")));
        assert_eq!(before.len(), listed.len() + 2, "{name}");
    }
}

/// Writes, in Python, the tarball `sys.argv[1]` of one member named `sys.argv[2]` holding the
/// sample `sys.argv[3]`, a symbolic link when `sys.argv[4]` names a target.
const MAKE_HOSTILE: &str = "import sys, tarfile, io\n\
data = open(sys.argv[3], 'rb').read()\n\
with tarfile.open(sys.argv[1], 'w', format=tarfile.GNU_FORMAT) as t:\n\
\x20   info = tarfile.TarInfo(sys.argv[2])\n\
\x20   if len(sys.argv) > 4:\n\
\x20       info.type = tarfile.SYMTYPE\n\
\x20       info.linkname = sys.argv[4]\n\
\x20       t.addfile(info)\n\
\x20       info = tarfile.TarInfo('lib/hip-app')\n\
\x20   info.size = len(data)\n\
\x20   t.addfile(info, io.BytesIO(data))\n";

#[test]
fn damaged_tarballs_are_refused_naming_package_and_member_with_nothing_written() {
    let Some(python) = util::tool("python3") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let sample = samples_dir().join("linked/hip-app");
    let make = |name: &str, member: &str, link: Option<&str>| {
        let path = dir.path().join(name);
        let mut cmd = Command::new(&python);
        cmd.args(["-c", MAKE_HOSTILE])
            .arg(&path)
            .arg(member)
            .arg(&sample);
        if let Some(link) = link {
            cmd.arg(link);
        }
        succeed(&mut cmd);
        path
    };
    let good = make("good.tar", "lib/hip-app", None);
    let bytes = fs::read(&good).unwrap();
    // What a compressed tarball inflates to counts against the budget.
    let gzipped = dir.path().join("good.tar.gz");
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gzip, &bytes).unwrap();
    fs::write(&gzipped, gzip.finish().unwrap()).unwrap();
    let mut checksum = bytes.clone();
    checksum[150] ^= 1;
    let checksum_path = dir.path().join("checksum.tar");
    fs::write(&checksum_path, checksum).unwrap();
    let truncated = dir.path().join("truncated.tar");
    fs::write(&truncated, &bytes[..4096]).unwrap();
    let cases: Vec<(PathBuf, Vec<&str>, &str)> = vec![
        (checksum_path, vec![], "checksum.tar!lib/hip-app"),
        (truncated, vec![], "truncated.tar!lib/hip-app"),
        (
            make("dotdot.tar", "../hip-app", None),
            vec![],
            "dotdot.tar!../hip-app",
        ),
        (
            make("absolute.tar", "/tmp/hip-app", None),
            vec![],
            "absolute.tar!/tmp/hip-app",
        ),
        (
            make("link.tar", "lib/out", Some("../../etc/passwd")),
            vec![],
            "link.tar!lib/out",
        ),
        (
            make("abslink.tar", "lib/out", Some("/etc/passwd")),
            vec![],
            "abslink.tar!lib/out",
        ),
        (
            gzipped,
            vec!["--max-decompressed-size", "4096"],
            "good.tar.gz",
        ),
    ];
    for (path, extra, named) in cases {
        let before = fs::read(&path).unwrap();
        let out = dir.path().join("out.tar");
        let (code, _, err) = text_output(
            offload()
                .args(["strip", "--keep", "gfx90a"])
                .args(&extra)
                .arg(&path)
                .arg("-o")
                .arg(&out),
        );
        assert_ne!(code, 0, "{}", path.display());
        assert!(err.contains(named), "{named}: {err}");
        assert!(!out.exists(), "{}", path.display());
        let (code, _, err) = text_output(
            offload()
                .args(["strip", "--keep", "gfx90a", "--in-place"])
                .args(&extra)
                .arg(&path),
        );
        assert_ne!(code, 0, "{err}");
        assert_eq!(fs::read(&path).unwrap(), before);
    }
}

#[test]
fn a_member_a_hard_link_links_to_is_kept_and_the_link_extracts() {
    let Some(python) = util::tool("python3") else {
        return;
    };
    if util::tool("tar").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    fs::create_dir_all(&tree).unwrap();
    let kernel = tree.join("kernel-gfx906.hsaco");
    fs::copy(samples_dir().join("dev/kernel-gfx906.hsaco"), &kernel).unwrap();
    fs::hard_link(&kernel, tree.join("again.hsaco")).unwrap();
    fs::copy(samples_dir().join("linked/hip-app"), tree.join("hip-app")).unwrap();
    let tarball = dir.path().join("linked.tar.gz");
    let script = "import sys, tarfile\n\
        with tarfile.open(sys.argv[1], 'w:gz') as t:\n\
        \x20   for name in ['kernel-gfx906.hsaco', 'again.hsaco', 'hip-app']:\n\
        \x20       t.add(sys.argv[2] + '/' + name, 'lib/' + name)\n";
    succeed(
        Command::new(&python)
            .args(["-c", script])
            .arg(&tarball)
            .arg(&tree),
    );
    let out = dir.path().join("out.tar.gz");
    succeed(
        offload()
            .args(["strip", "--keep", "gfx90a", "--prune"])
            .arg(&tarball)
            .arg("-o")
            .arg(&out),
    );
    let x = dir.path().join("x");
    fs::create_dir_all(&x).unwrap();
    succeed(Command::new("tar").arg("-C").arg(&x).arg("-xzf").arg(&out));
    assert_eq!(
        fs::read(x.join("lib/again.hsaco")).unwrap(),
        fs::read(&kernel).unwrap()
    );
    assert!(x.join("lib/hip-app").is_file());
}
