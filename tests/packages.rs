//! Packages as inputs: wheels and zips, tarballs (gzip, xz, zstd, bzip2), Debian packages and
//! conda packages, made by the real tools around the committed samples. `ls`, `du`, `extract`
//! and `verify` must see in each member what they see in the loose file, under the name
//! `PACKAGE!member`; damaged and hostile packages are errors naming package and member, with
//! nothing written.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::{self, offload, samples_dir, succeed, text_output};

/// The samples put in every package: (sample, name in the package's `lib` folder).
const SAMPLES: [(&str, &str); 4] = [
    ("linked/hip-app", "hip-app"),
    ("llvm23/hip-compressed-app", "hip-compressed-app"),
    ("cuda/libkernel.so", "libkernel.so"),
    ("archive/libmulti.a", "libmulti.a"),
];

/// A tree `root/mylib/...` holding the samples under `lib/` beside files that hold no device
/// code (Python sources, text, a header).
fn stage(root: &Path) {
    let lib = root.join("mylib/lib");
    fs::create_dir_all(&lib).unwrap();
    for (sample, name) in SAMPLES {
        fs::copy(samples_dir().join(sample), lib.join(name)).unwrap();
    }
    fs::write(root.join("mylib/__init__.py"), "import os\n").unwrap();
    fs::write(root.join("mylib/README.txt"), "nothing to see\n").unwrap();
    fs::write(root.join("mylib/lib/api.h"), "int f(void);\n").unwrap();
}

/// `offload ls --json` of `path`: its rows.
fn ls_json(path: &Path) -> Vec<Value> {
    let out = succeed(offload().args(["ls", "--json"]).arg(path));
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// `row` without the fields that name the file.
fn unnamed(row: &Value) -> Value {
    let mut row = row.clone();
    for field in ["file", "file_bytes", "package", "package_member"] {
        row.as_object_mut().unwrap().remove(field);
    }
    row
}

/// Checks that the listing of the package at `package` holds, for each sample, the rows of the
/// loose sample, named `PACKAGE!PREFIX<name>` with the JSON fields a script uses.
fn lists_as_loose(package: &Path, prefix: &str) {
    let rows = ls_json(package);
    let shown = package.to_string_lossy().into_owned();
    for (sample, name) in SAMPLES {
        let member = format!("{prefix}{name}");
        let loose: Vec<Value> = ls_json(&samples_dir().join(sample))
            .iter()
            .map(unnamed)
            .collect();
        let inside: Vec<&Value> = rows
            .iter()
            .filter(|r| r["package_member"] == member.as_str())
            .collect();
        for row in &inside {
            assert_eq!(row["package"], shown.as_str());
            assert_eq!(row["file"], format!("{shown}!{member}").as_str());
        }
        let inside: Vec<Value> = inside.into_iter().map(unnamed).collect();
        assert_eq!(inside, loose, "{shown}: member {member}");
    }
    let table = succeed(offload().arg("ls").arg(package));
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains(&format!("{shown}!{prefix}libkernel.so .nv_fatbin @0x2068")),
        "{table}"
    );
}

/// The zips python makes: stored (`python3 -m zipfile -c`) and deflated.
fn zips(dir: &Path) -> Option<Vec<PathBuf>> {
    let python = util::tool("python3")?;
    let tree = dir.join("tree");
    stage(&tree);
    let stored = dir.join("mylib-1.0-py3-none-any.whl");
    succeed(
        Command::new(&python)
            .current_dir(&tree)
            .args(["-m", "zipfile", "-c"])
            .arg(&stored)
            .arg("mylib"),
    );
    let deflated = dir.join("deflated.zip");
    let script = "import sys, zipfile, pathlib\n\
        root = pathlib.Path(sys.argv[2])\n\
        with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:\n\
        \x20   for p in sorted(root.rglob('*')):\n\
        \x20       z.write(p, p.relative_to(root))\n";
    succeed(
        Command::new(&python)
            .args(["-c", script])
            .arg(&deflated)
            .arg(&tree),
    );
    Some(vec![stored, deflated])
}

#[test]
fn wheels_and_zips_list_their_members_as_the_loose_files() {
    let dir = tempfile::tempdir().unwrap();
    let Some(zips) = zips(dir.path()) else { return };
    for zip in zips {
        lists_as_loose(&zip, "mylib/lib/");
    }
}

/// Tarballs of the staged tree, one per compression whose tool is here: (file, tar flag).
fn tarballs(dir: &Path) -> Vec<PathBuf> {
    let tree = dir.join("tree");
    stage(&tree);
    let mut made = Vec::new();
    for (name, flag, tool) in [
        ("t.tar", None, None),
        ("t.tar.gz", Some("-z"), Some("gzip")),
        ("t.tar.xz", Some("-J"), Some("xz")),
        ("t.tar.zst", Some("--zstd"), Some("zstd")),
        ("conda-1.0-0.tar.bz2", Some("-j"), Some("bzip2")),
    ] {
        if util::tool("tar").is_none() || tool.is_some_and(|t| util::tool(t).is_none()) {
            continue;
        }
        let out = dir.join(name);
        let mut tar = Command::new("tar");
        tar.arg("-C")
            .arg(&tree)
            .arg("-c")
            .args(flag)
            .arg("-f")
            .arg(&out);
        succeed(tar.arg("mylib"));
        made.push(out);
    }
    made
}

#[test]
fn tarballs_of_every_compression_list_their_members_as_the_loose_files() {
    let dir = tempfile::tempdir().unwrap();
    for tarball in tarballs(dir.path()) {
        lists_as_loose(&tarball, "mylib/lib/");
    }
}

#[test]
fn tar_long_names_and_pax_paths_name_members() {
    let Some(python) = util::tool("python3") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let long = format!("{}/libkernel.so", "d".repeat(120));
    for format in ["GNU_FORMAT", "PAX_FORMAT"] {
        let out = dir.path().join(format!("{format}.tar"));
        let script = format!(
            "import sys, tarfile\n\
             with tarfile.open(sys.argv[1], 'w', format=tarfile.{format}) as t:\n\
             \x20   t.add(sys.argv[2], arcname=sys.argv[3])\n"
        );
        succeed(
            Command::new(&python)
                .args(["-c", &script])
                .arg(&out)
                .arg(samples_dir().join("cuda/libkernel.so"))
                .arg(&long),
        );
        let rows = ls_json(&out);
        assert_eq!(rows.len(), 3, "{format}");
        assert!(rows.iter().all(|r| r["package_member"] == long.as_str()));
    }
}

/// A Debian package of the staged tree, under `usr/lib/`, compressed by `compression`.
fn deb(dir: &Path, compression: &str) -> Option<PathBuf> {
    let dpkg = util::tool("dpkg-deb")?;
    let root = dir.join(format!("root-{compression}"));
    stage(&root.join("usr/lib"));
    fs::create_dir_all(root.join("DEBIAN")).unwrap();
    fs::write(
        root.join("DEBIAN/control"),
        "Package: mylib\nVersion: 1.0\nArchitecture: amd64\nMaintainer: nobody <n@example.org>\nDescription: test\n",
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

#[test]
fn debian_packages_list_the_members_of_their_data_tarball() {
    let dir = tempfile::tempdir().unwrap();
    for compression in ["xz", "gzip", "zstd"] {
        let Some(deb) = deb(dir.path(), compression) else {
            return;
        };
        let data = match compression {
            "xz" => "data.tar.xz",
            "gzip" => "data.tar.gz",
            _ => "data.tar.zst",
        };
        lists_as_loose(&deb, &format!("{data}!usr/lib/mylib/lib/"));
    }
}

#[test]
fn conda_packages_list_the_members_of_their_inner_tarball() {
    let Some(python) = util::tool("python3") else {
        return;
    };
    if util::tool("zstd").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    stage(&tree);
    fs::write(dir.path().join("index.json"), "{}").unwrap();
    let pkg = dir.path().join("pkg-mylib-1.0-0.tar.zst");
    let info = dir.path().join("info-mylib-1.0-0.tar.zst");
    succeed(
        Command::new("tar")
            .arg("-C")
            .arg(&tree)
            .args(["--zstd", "-cf"])
            .arg(&pkg)
            .arg("mylib"),
    );
    succeed(
        Command::new("tar")
            .arg("-C")
            .arg(dir.path())
            .args(["--zstd", "-cf"])
            .arg(&info)
            .arg("index.json"),
    );
    let conda = dir.path().join("mylib-1.0-0.conda");
    let script = "import sys, zipfile, os\n\
        with zipfile.ZipFile(sys.argv[1], 'w') as z:\n\
        \x20   z.writestr('metadata.json', '{\"conda_pkg_format_version\": 2}')\n\
        \x20   for p in sys.argv[2:]:\n\
        \x20       z.write(p, os.path.basename(p))\n";
    succeed(
        Command::new(python)
            .args(["-c", script])
            .arg(&conda)
            .arg(&info)
            .arg(&pkg),
    );
    lists_as_loose(&conda, "pkg-mylib-1.0-0.tar.zst!mylib/lib/");
}

/// `offload du --json` of `paths`.
fn du_json(paths: &[PathBuf]) -> Value {
    let out = succeed(offload().args(["du", "--json"]).args(paths));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn du_counts_each_member_and_the_package_as_the_loose_files() {
    let dir = tempfile::tempdir().unwrap();
    let Some(zips) = zips(dir.path()) else { return };
    let loose: Vec<PathBuf> = SAMPLES.iter().map(|(s, _)| samples_dir().join(s)).collect();
    let expected = du_json(&loose);
    for zip in &zips {
        let report = du_json(std::slice::from_ref(zip));
        let file = &report["files"][0];
        assert_eq!(file["targets"], expected["total"], "{}", zip.display());
        assert_eq!(report["total"], expected["total"]);
        let members = file["members"].as_array().unwrap();
        assert_eq!(members.len(), SAMPLES.len());
        let by_name: BTreeMap<String, &Value> = members
            .iter()
            .map(|m| (m["file"].as_str().unwrap().to_string(), &m["targets"]))
            .collect();
        for ((sample, name), loose_file) in
            SAMPLES.iter().zip(expected["files"].as_array().unwrap())
        {
            let key = format!("{}!mylib/lib/{name}", zip.display());
            assert_eq!(by_name[&key], &loose_file["targets"], "{sample}");
        }
    }
}

/// The bytes of the files in `dir`, sorted.
fn contents(dir: &Path) -> Vec<Vec<u8>> {
    let mut all: Vec<Vec<u8>> = util::file_names(dir)
        .iter()
        .map(|n| fs::read(dir.join(n)).unwrap())
        .collect();
    all.sort();
    all
}

#[test]
fn extract_writes_from_packages_what_it_writes_from_the_loose_files() {
    let dir = tempfile::tempdir().unwrap();
    let Some(mut packages) = zips(dir.path()) else {
        return;
    };
    packages.extend(tarballs(&dir.path().join("tars")));
    let loose_out = dir.path().join("loose");
    let mut loose = offload();
    loose.args(["extract", "--arch", "gfx90a", "--arch", "sm_80", "-o"]);
    loose.arg(&loose_out);
    succeed(loose.args(SAMPLES.iter().map(|(s, _)| samples_dir().join(s))));
    let expected = contents(&loose_out);
    assert!(expected.len() >= 4, "{expected:?}");
    for (i, package) in packages.iter().enumerate() {
        let out = dir.path().join(format!("out{i}"));
        let mut extract = offload();
        extract.args(["extract", "--arch", "gfx90a", "--arch", "sm_80", "-o"]);
        succeed(extract.arg(&out).arg(package));
        assert_eq!(contents(&out), expected, "{}", package.display());
        let names = util::file_names(&out);
        assert!(names.iter().any(|n| n.contains("-hip-app-")), "{names:?}");
    }
}

#[test]
fn verify_reads_the_compressed_bundles_of_members() {
    let dir = tempfile::tempdir().unwrap();
    let Some(zips) = zips(dir.path()) else { return };
    for zip in zips {
        let (code, out, err) = text_output(offload().arg("verify").arg(&zip));
        assert_eq!(code, 0, "{out}{err}");
        // As many as the loose samples hold.
        assert!(
            out.contains(": 2 compressed bundles sound, 0 damaged"),
            "{out}"
        );
    }
}

#[test]
fn folders_walked_take_packages() {
    let dir = tempfile::tempdir().unwrap();
    let Some(_) = zips(dir.path()) else { return };
    fs::remove_dir_all(dir.path().join("tree")).unwrap();
    let rows = ls_json(dir.path());
    let packages: std::collections::BTreeSet<&str> =
        rows.iter().filter_map(|r| r["package"].as_str()).collect();
    assert_eq!(packages.len(), 2, "{packages:?}");
}

// Hostile packages: each an error naming the package and the member, a non-zero exit, no
// panic, and nothing extracted.

/// Runs `offload ls` and `offload extract` on `package`, which must fail with messages that
/// hold each of `words`, and write nothing.
fn refused(package: &Path, words: &[&str]) {
    let (code, out, err) = text_output(offload().arg("ls").arg(package));
    assert_ne!(code, 0, "{out}");
    assert!(!err.contains("panicked"), "{err}");
    for word in words {
        assert!(err.contains(word), "{word} missing from: {err}");
    }
    let dest = package.with_extension("out");
    let (code, _, err) = text_output(
        offload()
            .args(["extract", "--arch", "gfx90a", "-o"])
            .arg(&dest)
            .arg(package),
    );
    assert_ne!(code, 0, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        util::file_names(&dest).is_empty(),
        "{:?}",
        util::file_names(&dest)
    );
    let parent = package.parent().unwrap();
    assert!(!parent.join("x").exists() && !parent.join("evil").exists());
}

/// Runs the python `script` with the arguments `args`; `None` (a skip) without python.
fn python(script: &str, args: &[&Path]) -> Option<()> {
    let python = util::tool("python3")?;
    succeed(Command::new(python).args(["-c", script]).args(args));
    Some(())
}

/// A zip of one member `lib/x.so` holding the HIP sample, deflated.
const ZIP_ONE: &str = "import sys, zipfile\n\
    with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:\n\
    \x20   z.write(sys.argv[2], 'lib/x.so')\n";

#[test]
fn a_zip_whose_central_directory_points_past_the_end_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("lying.zip");
    let sample = samples_dir().join("linked/hip-app");
    if python(ZIP_ONE, &[&zip, &sample]).is_none() {
        return;
    }
    let mut bytes = fs::read(&zip).unwrap();
    let central = find(&bytes, b"PK\x01\x02");
    bytes[central + 42..central + 46].copy_from_slice(&0x7fff_0000u32.to_le_bytes());
    fs::write(&zip, bytes).unwrap();
    refused(&zip, &["lying.zip", "lib/x.so", "0x7fff0000"]);
}

/// Where `what` first is in `bytes`.
fn find(bytes: &[u8], what: &[u8]) -> usize {
    bytes.windows(what.len()).position(|w| w == what).unwrap()
}

#[test]
fn a_zip_member_that_inflates_short_of_its_size_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("short.zip");
    let sample = samples_dir().join("linked/hip-app");
    if python(ZIP_ONE, &[&zip, &sample]).is_none() {
        return;
    }
    let mut bytes = fs::read(&zip).unwrap();
    let size = fs::metadata(&sample).unwrap().len() as u32 + 100;
    for (magic, at) in [(&b"PK\x03\x04"[..], 22), (b"PK\x01\x02", 24)] {
        let header = find(&bytes, magic);
        bytes[header + at..header + at + 4].copy_from_slice(&size.to_le_bytes());
    }
    fs::write(&zip, bytes).unwrap();
    refused(&zip, &["short.zip!lib/x.so", "truncated"]);
}

#[test]
fn a_zip_member_whose_crc_is_wrong_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("crc.zip");
    let sample = samples_dir().join("linked/hip-app");
    if python(ZIP_ONE, &[&zip, &sample]).is_none() {
        return;
    }
    let mut bytes = fs::read(&zip).unwrap();
    let central = find(&bytes, b"PK\x01\x02");
    bytes[central + 16] ^= 0x55;
    fs::write(&zip, &bytes).unwrap();
    refused(&zip, &["crc.zip!lib/x.so", "CRC-32"]);
    // Nor is it rewritten, in place or elsewhere.
    let out = dir.path().join("stripped.zip");
    for args in [&["-o", out.to_str().unwrap()][..], &["--in-place"]] {
        let (code, _, err) = text_output(
            offload()
                .args(["strip", "--keep", "gfx90a"])
                .args(args)
                .arg(&zip),
        );
        assert_ne!(code, 0);
        assert!(
            err.contains("crc.zip!lib/x.so") && err.contains("CRC-32"),
            "{err}"
        );
    }
    assert!(!out.exists());
    assert_eq!(fs::read(&zip).unwrap(), bytes);
}

#[test]
fn a_zip_bomb_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("bomb.zip");
    let script = "import sys, zipfile\n\
        with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:\n\
        \x20   z.writestr('lib/bomb.so', b'\\x7fELF' + bytes(64 << 20))\n";
    if python(script, &[&zip]).is_none() {
        return;
    }
    let mut bytes = fs::read(&zip).unwrap();
    assert!(bytes.len() < 1 << 20);
    for (magic, at) in [(&b"PK\x03\x04"[..], 22), (b"PK\x01\x02", 24)] {
        let header = find(&bytes, magic);
        bytes[header + at..header + at + 4].copy_from_slice(&4096u32.to_le_bytes());
    }
    fs::write(&zip, bytes).unwrap();
    refused(
        &zip,
        &["bomb.zip!lib/bomb.so", "inflates past the 4096 bytes"],
    );
}

#[test]
fn members_named_to_leave_their_folder_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sample = samples_dir().join("linked/hip-app");
    let zip = dir.path().join("names.zip");
    let script = "import sys, zipfile\n\
        with zipfile.ZipFile(sys.argv[1], 'w') as z:\n\
        \x20   data = open(sys.argv[2], 'rb').read()\n\
        \x20   z.writestr('../x', data)\n\
        \x20   z.writestr('/evil', data)\n";
    if python(script, &[&zip, &sample]).is_none() {
        return;
    }
    refused(
        &zip,
        &["names.zip!../x", "names.zip!/evil", "leave its folder"],
    );
    let tar = dir.path().join("names.tar");
    let script = "import sys, tarfile\n\
        with tarfile.open(sys.argv[1], 'w') as t:\n\
        \x20   for name in ['../x', '/evil']:\n\
        \x20       info = t.gettarinfo(sys.argv[2])\n\
        \x20       info.name = name\n\
        \x20       t.addfile(info, open(sys.argv[2], 'rb'))\n";
    python(script, &[&tar, &sample]).unwrap();
    refused(
        &tar,
        &["names.tar!../x", "names.tar!/evil", "leave its folder"],
    );
}

/// A plain tarball of the HIP sample, named `lib/x.so`.
fn one_tar(dir: &Path, name: &str) -> Option<PathBuf> {
    let tar = dir.join(name);
    let script = "import sys, tarfile\n\
        with tarfile.open(sys.argv[1], 'w', format=tarfile.USTAR_FORMAT) as t:\n\
        \x20   t.add(sys.argv[2], arcname='lib/x.so')\n";
    python(script, &[&tar, &samples_dir().join("linked/hip-app")])?;
    Some(tar)
}

#[test]
fn a_tar_header_with_a_wrong_checksum_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let Some(tar) = one_tar(dir.path(), "sum.tar") else {
        return;
    };
    let mut bytes = fs::read(&tar).unwrap();
    bytes[100] ^= 0x01;
    fs::write(&tar, bytes).unwrap();
    refused(&tar, &["sum.tar!lib/x.so", "checksum", "offset 0x0"]);
}

#[test]
fn a_truncated_tar_member_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let Some(tar) = one_tar(dir.path(), "cut.tar") else {
        return;
    };
    let bytes = fs::read(&tar).unwrap();
    fs::write(&tar, &bytes[..bytes.len() / 2]).unwrap();
    refused(&tar, &["cut.tar!lib/x.so", "truncated"]);
}

#[test]
fn tarballs_and_debian_packages_named_are_rewritten_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let Some(zips) = zips(dir.path()) else { return };
    let wheel = &zips[0];
    let mut named = tarballs(&dir.path().join("tars"));
    named.extend(deb(dir.path(), "xz"));
    for package in &named {
        let before = fs::read(package).unwrap();
        let (code, _, err) = text_output(
            offload()
                .args(["strip", "--keep", "gfx90a", "--in-place"])
                .arg(package),
        );
        assert_eq!(code, 0, "{err}");
        assert_ne!(&fs::read(package).unwrap(), &before);
        succeed(offload().arg("verify").arg(package));
    }
    // Met in a folder, a package is passed by, as before packages were read.
    let tree = dir.path().join("mixed");
    fs::create_dir(&tree).unwrap();
    fs::copy(wheel, tree.join("mylib.whl")).unwrap();
    fs::copy(samples_dir().join("linked/hip-app"), tree.join("hip-app")).unwrap();
    let out = dir.path().join("stripped");
    succeed(
        offload()
            .args(["strip", "--keep", "gfx90a", "-r"])
            .arg(&tree)
            .arg("-o")
            .arg(&out),
    );
    assert_eq!(util::file_names(&out), ["hip-app"]);
}

#[test]
fn what_packages_inflate_stops_at_the_decompression_limit() {
    let dir = tempfile::tempdir().unwrap();
    let Some(zips) = zips(dir.path()) else { return };
    let mut packages = vec![zips[1].clone()];
    packages.extend(tarballs(&dir.path().join("tars")).into_iter().skip(1));
    for package in packages {
        let (code, _, err) = text_output(
            offload()
                .args(["ls", "--max-decompressed-size", "10000"])
                .arg(&package),
        );
        assert_ne!(code, 0, "{}", package.display());
        assert!(!err.contains("panicked"), "{err}");
        assert!(err.contains("more than --max-decompressed-size"), "{err}");
    }
}

#[test]
fn zip64_records_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("z64.zip");
    // With its limit at 1 byte, python's zipfile writes every ZIP64 record: the end record
    // and its locator, and each central directory entry's sizes and offset in the extra field.
    let script = "import sys, zipfile\n\
        zipfile.ZIP64_LIMIT = 1\n\
        with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:\n\
        \x20   z.write(sys.argv[2], 'lib/libkernel.so')\n";
    let sample = samples_dir().join("cuda/libkernel.so");
    if python(script, &[&zip, &sample]).is_none() {
        return;
    }
    let mut bytes = fs::read(&zip).unwrap();
    find(&bytes, b"PK\x06\x06");
    // The end record's directory offset as a ZIP64 writer leaves it when it does not fit: the
    // reader must take it from the ZIP64 end record.
    let end = find(&bytes, b"PK\x05\x06");
    bytes[end + 16..end + 20].copy_from_slice(&[0xff; 4]);
    fs::write(&zip, &bytes).unwrap();
    let rows: Vec<Value> = ls_json(&zip).iter().map(unnamed).collect();
    let loose: Vec<Value> = ls_json(&sample).iter().map(unnamed).collect();
    assert_eq!(rows, loose);
}

#[test]
fn members_have_translation_units_of_their_own() {
    use offload::host::scan::{scan_reading, Places, Reading};
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("two.zip");
    let script = "import sys, zipfile\n\
        with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:\n\
        \x20   z.write(sys.argv[2], 'a/hip-app')\n\
        \x20   z.write(sys.argv[2], 'b/hip-app')\n";
    if python(script, &[&zip, &samples_dir().join("linked/hip-app")]).is_none() {
        return;
    }
    let bytes = fs::read(&zip).unwrap();
    let mut units: BTreeMap<Vec<u8>, std::collections::BTreeSet<usize>> = BTreeMap::new();
    let mut numbers = std::collections::BTreeSet::new();
    let problems = scan_reading(
        &zip,
        &bytes,
        Places::Everywhere,
        u64::MAX,
        Reading::Headers,
        &mut |image| {
            let package = image.package.unwrap();
            numbers.insert(package.number);
            units
                .entry(package.member.clone())
                .or_default()
                .insert(image.unit);
        },
    )
    .unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(numbers.len(), 2);
    let [a, b]: [&std::collections::BTreeSet<usize>; 2] =
        units.values().collect::<Vec<_>>().try_into().unwrap();
    assert!(!a.is_empty() && a.is_disjoint(b), "{a:?} {b:?}");
}

#[test]
fn a_wheel_inside_a_tarball_is_read_too() {
    let dir = tempfile::tempdir().unwrap();
    let Some(zips) = zips(dir.path()) else { return };
    if util::tool("tar").is_none() || util::tool("gzip").is_none() {
        return;
    }
    let outer = dir.path().join("wheels.tar.gz");
    succeed(
        Command::new("tar")
            .arg("-C")
            .arg(dir.path())
            .arg("-czf")
            .arg(&outer)
            .arg(zips[0].file_name().unwrap()),
    );
    let wheel = zips[0].file_name().unwrap().to_string_lossy().into_owned();
    lists_as_loose(&outer, &format!("{wheel}!mylib/lib/"));
}

#[test]
fn a_package_of_bare_code_objects_is_never_pruned_whole() {
    let dir = tempfile::tempdir().unwrap();
    let zip = dir.path().join("bare.whl");
    let script = "import sys, zipfile\n\
        with zipfile.ZipFile(sys.argv[1], 'w') as z:\n\
        \x20   z.write(sys.argv[2], 'lib/kernel-gfx906.hsaco')\n";
    let sample = samples_dir().join("dev/kernel-gfx906.hsaco");
    if python(script, &[&zip, &sample]).is_none() {
        return;
    }
    let before = fs::read(&zip).unwrap();
    let strip = |allow_empty: bool| {
        let mut strip = offload();
        strip.args(["strip", "--keep", "gfx90a", "--prune", "--in-place"]);
        if allow_empty {
            strip.arg("--allow-empty");
        }
        text_output(strip.arg(&zip))
    };
    // Keeping none of its images is refused, as for loose files.
    let (code, _, err) = strip(false);
    assert_ne!(code, 0, "{err}");
    assert_eq!(fs::read(&zip).unwrap(), before);
    // Allowed, the member goes and the package stays: a zip of no members.
    let (code, _, err) = strip(true);
    assert_eq!(code, 0, "{err}");
    let after = fs::read(&zip).unwrap();
    assert!(after.starts_with(b"PK\x05\x06"), "{after:?}");
}

/// Writes, in Python, the deflated zip `sys.argv[1]` of every file under the folder
/// `sys.argv[2]`, hidden folders too, named by their paths below it.
const ZIP_TREE: &str = "import sys, zipfile, pathlib\n\
root = pathlib.Path(sys.argv[2])\n\
with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:\n\
\x20   for p in sorted(root.rglob('*')):\n\
\x20       if p.is_file():\n\
\x20           z.write(p, str(p.relative_to(root)))\n";

#[test]
fn kpack_archives_in_a_package_are_listed_counted_and_pruned_as_loose_ones() {
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("hip-app");
    fs::copy(samples_dir().join("linked/hip-app"), &app).unwrap();
    let split = dir.path().join("split");
    succeed(offload().args(["kpack", "-o"]).arg(&split).arg(&app));
    let zip = dir.path().join("split.whl");
    if python(ZIP_TREE, &[&zip, &split]).is_none() {
        return;
    }
    // Listed: each archive's code objects, as the archive alone lists them.
    let rows = ls_json(&zip);
    let mut archives: Vec<PathBuf> = fs::read_dir(split.join(".kpack"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    archives.sort();
    assert_eq!(archives.len(), 4);
    let mut listed = 0;
    for archive in &archives {
        let name = archive.file_name().unwrap().to_str().unwrap();
        let member = format!(".kpack/{name}");
        let inside: Vec<Value> = rows
            .iter()
            .filter(|r| r["package_member"] == member.as_str())
            .map(|r| {
                let mut r = unnamed(r);
                r.as_object_mut().unwrap()["kpack"]
                    .as_object_mut()
                    .unwrap()
                    .remove("archive");
                r
            })
            .collect();
        let loose: Vec<Value> = ls_json(archive)
            .iter()
            .map(|r| {
                let mut r = unnamed(r);
                r.as_object_mut().unwrap()["kpack"]
                    .as_object_mut()
                    .unwrap()
                    .remove("archive");
                r
            })
            .collect();
        assert!(!loose.is_empty());
        assert_eq!(inside, loose, "{member}");
        listed += inside.len();
    }
    assert_eq!(rows.len(), listed);
    // Counted: the package's totals are the archives'.
    let inside = du_json(std::slice::from_ref(&zip));
    let loose = du_json(&archives);
    assert_eq!(inside["total"], loose["total"]);
    assert_eq!(inside["files"][0]["members"].as_array().unwrap().len(), 4);
    // Pruned: the archive only for gfx906 leaves; the others stay byte for byte.
    let out = dir.path().join("out.whl");
    let report = succeed(
        offload()
            .args(["strip", "--keep", "gfx90a", "--prune", "-o"])
            .arg(&out)
            .arg(&zip),
    );
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains("split.whl!.kpack/hip-app_gfx906.kpack: 2 device images went to 0"),
        "{text}"
    );
    let names: Vec<String> = ls_json(&out)
        .iter()
        .map(|r| r["package_member"].as_str().unwrap().to_string())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(
        names,
        [
            ".kpack/hip-app_gfx90a.kpack",
            ".kpack/hip-app_gfx90a:xnack+.kpack",
            ".kpack/hip-app_gfx90a:xnack-.kpack"
        ]
    );
    // Extracted: the bytes the archives named alone give.
    let (inside, loose) = (dir.path().join("x-in"), dir.path().join("x-loose"));
    succeed(
        offload()
            .args(["extract", "--arch", "gfx90a", "-o"])
            .arg(&inside)
            .arg(&zip),
    );
    succeed(
        offload()
            .args(["extract", "--arch", "gfx90a", "-o"])
            .arg(&loose)
            .args(&archives),
    );
    assert_eq!(contents(&inside).len(), 4);
    assert_eq!(contents(&inside), contents(&loose));
    assert!(inside
        .join("split.whl-hip-app_gfx90a.kpack-hip-app_0-gfx90a.co")
        .is_file());
    // Without --prune, nothing changes.
    let same = dir.path().join("same.whl");
    succeed(
        offload()
            .args(["strip", "--keep", "gfx90a", "-o"])
            .arg(&same)
            .arg(&zip),
    );
    assert_eq!(fs::read(&same).unwrap(), fs::read(&zip).unwrap());
}
