//! Zips and wheels named to `strip`, `compress` and `decompress`: written again as zips of the
//! same form, members without device code copied byte for byte, members with device code
//! rewritten and compressed again with their own method, a wheel's `RECORD` kept right (checked
//! by Python's `wheel unpack` and `pip install`, and by hashing every row in Python).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::packages::{processors, python_json};
use crate::util::{self, offload, samples_dir, succeed, text_output};

/// The samples put in the wheel: (sample, name in its `mylib/lib` folder).
const SAMPLES: [(&str, &str); 4] = [
    ("linked/hip-app", "hip-app"),
    ("llvm23/hip-compressed-app", "hip-compressed-app"),
    ("archive/libmulti.a", "libmulti.a"),
    ("dev/kernel-gfx906.hsaco", "kernel-gfx906.hsaco"),
];

/// The wheel's name.
const WHEEL: &str = "mylib-1.0-py3-none-any.whl";

/// Writes, in Python, the wheel `sys.argv[1]` of the files of the folder `sys.argv[2]` (each
/// compressed as `sys.argv[3]` says: `deflated` or `stored`), with a `RECORD` of their hashes.
const MAKE_WHEEL: &str = "import sys, zipfile, hashlib, base64, pathlib\n\
root = pathlib.Path(sys.argv[2])\n\
method = zipfile.ZIP_DEFLATED if sys.argv[3] == 'deflated' else zipfile.ZIP_STORED\n\
rows = []\n\
with zipfile.ZipFile(sys.argv[1], 'w', method) as z:\n\
\x20   for p in sorted(root.rglob('*')):\n\
\x20       if p.is_file():\n\
\x20           name = str(p.relative_to(root))\n\
\x20           data = p.read_bytes()\n\
\x20           digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()\n\
\x20           rows.append(f'{name},sha256={digest},{len(data)}')\n\
\x20           z.write(p, name)\n\
\x20   rows.append('mylib-1.0.dist-info/RECORD,,')\n\
\x20   z.writestr('mylib-1.0.dist-info/RECORD', '\\n'.join(rows) + '\\n')\n";

/// Prints, as JSON, each member of the zip `sys.argv[1]`: its method, CRC, sizes, modes, time,
/// and the SHA-256 of its bytes as stored; then checks every hashed `RECORD` row, if any.
const DESCRIBE: &str = "import sys, zipfile, hashlib, base64, json, struct\n\
out = {}\n\
with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[1], 'rb') as f:\n\
\x20   assert z.testzip() is None\n\
\x20   for i in z.infolist():\n\
\x20       f.seek(i.header_offset)\n\
\x20       head = f.read(30)\n\
\x20       n, e = struct.unpack('<HH', head[26:30])\n\
\x20       f.seek(i.header_offset + 30 + n + e)\n\
\x20       raw = hashlib.sha256(f.read(i.compress_size)).hexdigest()\n\
\x20       out[i.filename] = [i.compress_type, i.CRC, i.compress_size, i.file_size, i.external_attr, list(i.date_time), raw]\n\
\x20   records = [n for n in z.namelist() if n.endswith('.dist-info/RECORD')]\n\
\x20   for record in records:\n\
\x20       for line in z.read(record).decode().splitlines():\n\
\x20           name, hash, size = line.rsplit(',', 2)\n\
\x20           if hash:\n\
\x20               data = z.read(name)\n\
\x20               digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()\n\
\x20               assert hash == 'sha256=' + digest and int(size) == len(data), name\n\
\x20       out['rows'] = [l.split(',')[0] for l in z.read(record).decode().splitlines()]\n\
print(json.dumps(out))\n";

/// The wheel of the samples and a Python source, its members compressed as `method` says, in
/// `dir`; `None` (a skip) without python.
fn wheel(dir: &Path, method: &str) -> Option<PathBuf> {
    let python = util::tool("python3")?;
    let tree = dir.join(format!("tree-{method}"));
    let lib = tree.join("mylib/lib");
    fs::create_dir_all(&lib).unwrap();
    for (sample, name) in SAMPLES {
        fs::copy(samples_dir().join(sample), lib.join(name)).unwrap();
    }
    fs::write(tree.join("mylib/__init__.py"), "import os\n").unwrap();
    fs::write(lib.join("TensileLibrary_gfx906.dat"), "tensile\n").unwrap();
    let info = tree.join("mylib-1.0.dist-info");
    fs::create_dir_all(&info).unwrap();
    fs::write(
        info.join("METADATA"),
        "Metadata-Version: 2.1\nName: mylib\nVersion: 1.0\n",
    )
    .unwrap();
    fs::write(
        info.join("WHEEL"),
        "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: py3-none-any\n",
    )
    .unwrap();
    let out = dir.join(method).join(WHEEL);
    fs::create_dir_all(out.parent().unwrap()).unwrap();
    succeed(
        Command::new(python)
            .args(["-c", MAKE_WHEEL])
            .arg(&out)
            .arg(&tree)
            .arg(method),
    );
    Some(out)
}

/// What [`DESCRIBE`] says of the zip `zip` (its `RECORD` checked).
fn describe(zip: &Path) -> serde_json::Map<String, Value> {
    python_json(DESCRIBE, zip)
}

/// Whether `offload ls` lists a device image of `path` as compressed.
fn any_compressed(path: &Path) -> bool {
    let out = succeed(offload().args(["ls", "--json"]).arg(path));
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    rows.as_array().unwrap().iter().any(|r| {
        r["triple"]
            .as_str()
            .is_some_and(|t| t.starts_with("amdgcn"))
            && r["compressed"] == true
    })
}

/// Checks the wheel `wheel` as Python's tools do, when they are here: `wheel unpack` (every
/// RECORD hash) and `pip install --target`.
fn installs(wheel: &Path, dir: &Path) {
    let has = |module: &str| {
        Command::new("python3")
            .args(["-c", &format!("import {module}")])
            .status()
            .is_ok_and(|s| s.success())
    };
    if util::skips::reference(has("wheel").then_some(()), "python module wheel not found").is_some()
    {
        succeed(
            Command::new("python3")
                .args(["-m", "wheel", "unpack", "-d"])
                .arg(dir.join("unpacked"))
                .arg(wheel),
        );
    }
    if util::skips::reference(has("pip").then_some(()), "python module pip not found").is_some() {
        succeed(
            Command::new("python3")
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--no-deps",
                    "--no-index",
                    "--target",
                ])
                .arg(dir.join("installed"))
                .arg(wheel)
                .env("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
        );
        assert!(dir.join("installed/mylib/lib/hip-app").is_file());
    }
}

/// The members that hold no device code.
const PLAIN: [&str; 3] = [
    "mylib/__init__.py",
    "mylib-1.0.dist-info/METADATA",
    "mylib-1.0.dist-info/WHEEL",
];

#[test]
fn a_wheel_stripped_keeps_its_other_members_byte_for_byte_and_its_record_right() {
    let dir = tempfile::tempdir().unwrap();
    let Some(wheel) = wheel(dir.path(), "deflated") else {
        return;
    };
    assert!(processors(&wheel).contains("gfx906"));
    let before = describe(&wheel);
    let out = dir.path().join("out").join(WHEEL);
    fs::create_dir_all(out.parent().unwrap()).unwrap();
    let report = succeed(
        offload()
            .args(["strip", "--keep", "gfx90a"])
            .arg(&wheel)
            .arg("-o")
            .arg(&out),
    );
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains(&format!(
            "{}!mylib/lib/hip-app: 6 device images went to 4",
            wheel.display()
        )),
        "{text}"
    );
    // The bare gfx906 code object stays without --prune: it is a file of its own.
    assert_eq!(
        processors(&out),
        ["gfx906", "gfx90a"].map(String::from).into()
    );
    let after = describe(&out);
    for name in PLAIN {
        assert_eq!(before[name], after[name], "{name}");
    }
    for name in ["mylib/lib/hip-app", "mylib/lib/libmulti.a"] {
        let (b, a) = (&before[name], &after[name]);
        // Deflated again, its modes and time kept; its contents changed.
        assert_eq!(a[0], 8, "{name}");
        assert_eq!((&b[4], &b[5]), (&a[4], &a[5]), "{name}");
        assert_ne!(b[1], a[1], "{name}");
    }
    assert_eq!(before["rows"], after["rows"]);
    installs(&out, &dir.path().join("check"));
    // In place: the same zip.
    let (code, _, err) = text_output(
        offload()
            .args(["strip", "--keep", "gfx90a", "--in-place"])
            .arg(&wheel),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(fs::read(&wheel).unwrap(), fs::read(&out).unwrap());
}

#[test]
fn pruning_a_wheel_drops_members_for_other_targets_and_their_record_rows() {
    let dir = tempfile::tempdir().unwrap();
    let Some(wheel) = wheel(dir.path(), "deflated") else {
        return;
    };
    let out = dir.path().join("out").join(WHEEL);
    fs::create_dir_all(out.parent().unwrap()).unwrap();
    succeed(
        offload()
            .args(["strip", "--keep", "gfx90a", "--prune"])
            .arg(&wheel)
            .arg("-o")
            .arg(&out),
    );
    assert_eq!(processors(&out), ["gfx90a"].map(String::from).into());
    let after = describe(&out);
    assert!(!after.contains_key("mylib/lib/kernel-gfx906.hsaco"));
    let rows = after["rows"].as_array().unwrap();
    assert!(!rows.iter().any(|r| r == "mylib/lib/kernel-gfx906.hsaco"));
    assert!(rows.iter().any(|r| r == "mylib/lib/hip-app"));
    // Named for a removed processor, without device code: stays without --prune-named.
    assert!(after.contains_key("mylib/lib/TensileLibrary_gfx906.dat"));
    installs(&out, &dir.path().join("check"));
    let named = dir.path().join("named").join(WHEEL);
    fs::create_dir_all(named.parent().unwrap()).unwrap();
    let report = succeed(
        offload()
            .args(["strip", "--keep", "gfx90a", "--prune", "--prune-named"])
            .arg(&wheel)
            .arg("-o")
            .arg(&named),
    );
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(
        text.contains("!mylib/lib/TensileLibrary_gfx906.dat: "),
        "{text}"
    );
    let after = describe(&named);
    assert!(!after.contains_key("mylib/lib/TensileLibrary_gfx906.dat"));
    let rows = after["rows"].as_array().unwrap();
    assert!(!rows
        .iter()
        .any(|r| r == "mylib/lib/TensileLibrary_gfx906.dat"));
    assert!(after.contains_key("mylib/__init__.py"));
    installs(&named, &dir.path().join("check-named"));
}

#[test]
fn compress_then_decompress_of_a_wheel_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let Some(wheel) = wheel(dir.path(), "deflated") else {
        return;
    };
    let listed = processors(&wheel);
    let before = describe(&wheel);
    succeed(offload().args(["compress", "--in-place"]).arg(&wheel));
    let compressed = describe(&wheel);
    assert_ne!(before["mylib/lib/hip-app"], compressed["mylib/lib/hip-app"]);
    assert!(any_compressed(&wheel));
    succeed(offload().args(["decompress", "--in-place"]).arg(&wheel));
    let after = describe(&wheel);
    assert_eq!(processors(&wheel), listed);
    for name in PLAIN {
        assert_eq!(before[name], after[name], "{name}");
    }
    assert!(!any_compressed(&wheel));
    installs(&wheel, &dir.path().join("check"));
}

#[test]
fn stored_members_stay_stored() {
    let dir = tempfile::tempdir().unwrap();
    let Some(wheel) = wheel(dir.path(), "stored") else {
        return;
    };
    let before = describe(&wheel);
    succeed(
        offload()
            .args(["strip", "--keep", "gfx90a", "--in-place"])
            .arg(&wheel),
    );
    let after = describe(&wheel);
    assert_eq!(after["mylib/lib/hip-app"][0], 0);
    assert_ne!(
        before["mylib/lib/hip-app"][1],
        after["mylib/lib/hip-app"][1]
    );
    for name in PLAIN {
        assert_eq!(before[name], after[name], "{name}");
    }
    assert_eq!(
        processors(&wheel),
        ["gfx906", "gfx90a"].map(String::from).into()
    );
}

#[test]
fn a_truncated_wheel_is_an_error_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let Some(wheel) = wheel(dir.path(), "deflated") else {
        return;
    };
    let bytes = fs::read(&wheel).unwrap();
    // Cut inside the last member's data, the central directory kept: the member runs past
    // where the directory says the next record is.
    let cut = dir.path().join("cut.whl");
    fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let out = dir.path().join("cut-out.whl");
    let (code, _, err) = text_output(
        offload()
            .args(["strip", "--keep", "gfx90a"])
            .arg(&cut)
            .arg("-o")
            .arg(&out),
    );
    assert_ne!(code, 0);
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("cut.whl"), "{err}");
    assert!(!out.exists());
    // A member's data damaged in place: named, and the package left as it was.
    let mut damaged = bytes.clone();
    let at = bytes.windows(7).position(|w| w == b"hip-app").unwrap();
    let data = at + 7 + 40;
    for b in &mut damaged[data..data + 64] {
        *b = 0xff;
    }
    let bad = dir.path().join("bad.whl");
    fs::write(&bad, &damaged).unwrap();
    let (code, _, err) = text_output(
        offload()
            .args(["strip", "--keep", "gfx90a", "--in-place"])
            .arg(&bad),
    );
    assert_ne!(code, 0);
    assert!(err.contains("bad.whl!mylib/lib/hip-app"), "{err}");
    assert_eq!(fs::read(&bad).unwrap(), damaged);
}

/// Writes the zip `sys.argv[1]` of `lib/hip-app` (`sys.argv[2]`) and `a.py`, deflated: with
/// data descriptors (written to a stream that cannot seek) when `sys.argv[3]` is
/// `descriptors`, with every ZIP64 record when it is `zip64`.
const ODD_ZIP: &str = "import sys, zipfile\n\
class Stream:\n\
\x20   def __init__(self, f): self.f = f\n\
\x20   def write(self, b): return self.f.write(b)\n\
\x20   def flush(self): pass\n\
if sys.argv[3] == 'zip64': zipfile.ZIP64_LIMIT = 1\n\
with open(sys.argv[1], 'wb') as f:\n\
\x20   out = Stream(f) if sys.argv[3] == 'descriptors' else f\n\
\x20   with zipfile.ZipFile(out, 'w', zipfile.ZIP_DEFLATED) as z:\n\
\x20       z.write(sys.argv[2], 'lib/hip-app')\n\
\x20       z.writestr('a.py', 'import os\\n')\n";

#[test]
fn zips_with_data_descriptors_or_zip64_records_are_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let Some(python) = util::tool("python3") else {
        return;
    };
    for kind in ["descriptors", "zip64"] {
        let zip = dir.path().join(format!("{kind}.zip"));
        succeed(
            Command::new(&python)
                .args(["-c", ODD_ZIP])
                .arg(&zip)
                .arg(samples_dir().join("linked/hip-app"))
                .arg(kind),
        );
        let before = describe(&zip);
        let out = dir.path().join(format!("{kind}-out.zip"));
        succeed(
            offload()
                .args(["strip", "--keep", "gfx90a"])
                .arg(&zip)
                .arg("-o")
                .arg(&out),
        );
        let after = describe(&out);
        assert_eq!(before["a.py"], after["a.py"], "{kind}");
        assert_eq!(processors(&out), ["gfx90a"].map(String::from).into());
    }
}

/// Writes, in Python, the zip `sys.argv[1]` of one deflated member `big/app` holding the file
/// `sys.argv[2]`.
const ONE_MEMBER: &str = "import sys, zipfile\n\
with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:\n\
\x20   z.write(sys.argv[2], 'big/app')\n";

#[test]
fn a_member_larger_than_memory_holds_is_rewritten_as_a_loose_file_is() {
    // A program with 20 MiB after its sections: larger than a member made in memory.
    let dir = tempfile::tempdir().unwrap();
    let Some(python) = util::tool("python3") else {
        return;
    };
    let mut app = fs::read(samples_dir().join("linked/hip-app")).unwrap();
    app.extend((0..20u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8));
    let loose = dir.path().join("app");
    fs::write(&loose, &app).unwrap();
    let zip = dir.path().join("big.zip");
    succeed(
        Command::new(python)
            .args(["-c", ONE_MEMBER])
            .arg(&zip)
            .arg(&loose),
    );
    let out = dir.path().join("out.zip");
    let stripped = dir.path().join("app.stripped");
    for (input, output) in [(&zip, &out), (&loose, &stripped)] {
        succeed(
            offload()
                .args(["strip", "--keep", "gfx90a", "-o"])
                .arg(output)
                .arg(input),
        );
    }
    let read = "import sys, zipfile\n\
        sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read('big/app'))\n";
    let member = succeed(Command::new("python3").args(["-c", read]).arg(&out)).stdout;
    assert!(member.len() > 20 << 20);
    assert!(member == fs::read(&stripped).unwrap());
    assert_eq!(processors(&out), ["gfx90a"].map(String::from).into());
}

/// Writes, in Python, the zip `sys.argv[1]` of three deflated copies of the file `sys.argv[2]`.
const THREE_MEMBERS: &str = "import sys, zipfile\n\
with zipfile.ZipFile(sys.argv[1], 'w', zipfile.ZIP_DEFLATED) as z:\n\
\x20   for k in range(3):\n\
\x20       z.write(sys.argv[2], f'lib/app{k}')\n";

#[test]
fn what_the_members_of_a_zip_rewritten_inflate_to_comes_from_one_budget() {
    let dir = tempfile::tempdir().unwrap();
    let Some(python) = util::tool("python3") else {
        return;
    };
    let sample = samples_dir().join("linked/hip-app");
    let zip = dir.path().join("three.zip");
    succeed(
        Command::new(python)
            .args(["-c", THREE_MEMBERS])
            .arg(&zip)
            .arg(&sample),
    );
    let before = fs::read(&zip).unwrap();
    let size = fs::metadata(&sample).unwrap().len();
    // Room for each member alone, not for the three.
    let limit = (size * 5 / 2).to_string();
    let out = dir.path().join("out.zip");
    for args in [&["-o", out.to_str().unwrap()][..], &["--in-place"]] {
        let (code, _, err) = text_output(
            offload()
                .args([
                    "strip",
                    "--keep",
                    "gfx90a",
                    "--max-decompressed-size",
                    &limit,
                ])
                .args(args)
                .arg(&zip),
        );
        assert_ne!(code, 0);
        assert!(!err.contains("panicked"), "{err}");
        assert!(
            err.contains("three.zip!lib/app") && err.contains("more than --max-decompressed-size"),
            "{err}"
        );
    }
    assert!(!out.exists());
    assert_eq!(fs::read(&zip).unwrap(), before);
    // With room for the three, it is rewritten.
    let limit = (size * 3).to_string();
    succeed(
        offload()
            .args([
                "strip",
                "--keep",
                "gfx90a",
                "--max-decompressed-size",
                &limit,
                "-o",
            ])
            .arg(&out)
            .arg(&zip),
    );
    assert_eq!(processors(&out), ["gfx90a"].map(String::from).into());
}
