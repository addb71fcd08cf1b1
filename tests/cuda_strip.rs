//! `offload strip` on CUDA fat binaries: in objects, archives, linked programs and shared
//! libraries, only the entries asked for stay, as they were stored; every wrapper points at
//! its rewritten fat binary, which the stand-in CUDA runtime registers; cuobjdump lists
//! exactly what stayed.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::cuda::{
    cuda_entries, cuobjdump, cuobjdump_list, cuobjdump_names, libcurand, registered, rows,
    stand_in_runtime,
};
use crate::util::{offload, samples_dir, succeed, text_output};

/// The arch of each CUDA entry `ls` lists in `path`.
fn arches(path: &Path) -> Vec<String> {
    cuda_entries(path)
        .iter()
        .map(|e| e["arch"].as_str().unwrap().to_string())
        .collect()
}

/// Strips `input` into `dir/name` with `args`; the output's path.
fn strip(input: &Path, dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let out = dir.join(name);
    succeed(
        offload()
            .arg("strip")
            .arg(input)
            .args(args)
            .arg("-o")
            .arg(&out),
    );
    out
}

/// Every entry of `path` extracted (`--exact --arch` for each), in order of the names.
fn contents(path: &Path, dir: &Path) -> Vec<Vec<u8>> {
    let mut all = Vec::new();
    for arch in arches(path) {
        let out = dir.join(format!("x-{arch}"));
        succeed(
            offload()
                .args(["extract", "--exact", "--arch", &arch, "-o"])
                .arg(&out)
                .arg(path),
        );
        for name in crate::util::file_names(&out) {
            all.push(std::fs::read(out.join(name)).unwrap());
        }
    }
    all
}

#[test]
fn objects_and_archives_keep_the_entries_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let cuda = samples_dir().join("cuda");
    let tool = cuobjdump();
    let cases: [(&str, &[&str], &[&str]); 6] = [
        (
            "gencode-zstd.o",
            &["--keep", "sm_90"],
            &["sm_90", "compute_90"],
        ),
        (
            "gencode-zstd.o",
            &["--keep", "sm_90", "--ptx", "drop"],
            &["sm_90"],
        ),
        ("gencode-lz.o", &["--keep", "sm_86"], &["sm_80"]),
        (
            "gencode-lz.o",
            &["--keep", "sm_86", "--ptx", "keep"],
            &["sm_80", "compute_90"],
        ),
        ("rdc.o", &["--remove", "sm_80"], &["sm_90", "compute_90"]),
        (
            "arch-specific.o",
            &["--remove", "compute_90a"],
            &["sm_90a", "sm_100f", "sm_120"],
        ),
    ];
    for (k, (name, args, want)) in cases.iter().enumerate() {
        let input = cuda.join(name);
        let out = strip(&input, dir.path(), &format!("{k}-{name}"), args);
        assert_eq!(arches(&out), *want, "{name} {args:?}");
        let before = std::fs::metadata(&input).unwrap().len();
        assert!(std::fs::metadata(&out).unwrap().len() < before, "{name}");
        // The entries kept are the same bytes.
        let kept = contents(&out, &dir.path().join(format!("{k}-after")));
        let all = contents(&input, &dir.path().join(format!("{k}-before")));
        assert!(kept.iter().all(|c| all.contains(c)), "{name}");
        if let Some(tool) = &tool {
            let renamed = dir.path().join(format!(
                "{k}-{}",
                input.file_name().unwrap().to_string_lossy()
            ));
            assert_eq!(
                cuobjdump_list(tool, &out),
                cuobjdump_names(&renamed, &cuda_entries(&out)),
                "{name}"
            );
        }
    }
    // An archive of objects, member by member.
    let archive = dir.path().join("libk.a");
    succeed(
        Command::new("ar")
            .arg("rcs")
            .arg(&archive)
            .arg(cuda.join("gencode.o"))
            .arg(cuda.join("rdc.o")),
    );
    let out = strip(
        &archive,
        dir.path(),
        "libk-90.a",
        &["--keep", "sm_90", "--ptx", "drop"],
    );
    let listed = succeed(offload().args(["ls", "--json"]).arg(&out));
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let places: Vec<(String, String, String)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let text = |k: &str| e[k].as_str().unwrap().to_string();
            (text("member"), text("section"), text("arch"))
        })
        .collect();
    let want = rows(&[
        ("gencode.o", ".nv_fatbin", "sm_90"),
        ("rdc.o", "__nv_relfatbin", "sm_90"),
    ]);
    assert_eq!(places, want);
}

#[test]
fn linked_programs_and_libraries_register_their_rewritten_fat_binaries() {
    let dir = tempfile::tempdir().unwrap();
    if !stand_in_runtime(dir.path()) {
        return;
    }
    let cuda = samples_dir().join("cuda");
    // The program: its zstd entries, sm_90 cubin kept as it was stored.
    let app = strip(
        &cuda.join("app"),
        dir.path(),
        "app",
        &["--keep", "sm_90", "--ptx", "drop"],
    );
    let before = registered(dir.path(), &cuda.join("app"), &[]);
    let after = registered(dir.path(), &app, &[]);
    assert!(
        before.contains("    elf sm_80 flags 0x8011 stored 823 "),
        "{before}"
    );
    let sm_90 = before
        .lines()
        .find(|l| l.contains("elf sm_90"))
        .unwrap()
        .to_string();
    let want = format!(
        "register wrapper magic 0x466243b1 version 1\n  fat binary, {} bytes\n{sm_90}\n  function _Z1kPii\nlaunched\n",
        16 + 64 + 912
    );
    assert_eq!(after, want);
    assert_eq!(arches(&app), ["sm_90"]);
    // The library, loaded by a host program (Python's dlopen).
    let lib = strip(
        &cuda.join("libkernel.so"),
        dir.path(),
        "libkernel.so",
        &["--keep", "sm_80"],
    );
    let script = format!("import ctypes; ctypes.CDLL('{}')", lib.display());
    let out = registered(dir.path(), Path::new("python3"), &["-c", &script]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert!(
        lines[2].starts_with("    elf sm_80 flags 0x11 stored 3240 hash"),
        "{out}"
    );
    if let Some(tool) = cuobjdump() {
        assert_eq!(
            cuobjdump_list(&tool, &app),
            ["ELF file    1: app.1.sm_90.cubin"]
        );
    }
}

#[test]
fn libcurand_stripped_to_one_sm_keeps_exactly_its_cubins_and_loads() {
    let (Some(tool), Some(lib)) = (cuobjdump(), libcurand()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = strip(&lib, dir.path(), "libcurand.so.10", &["--keep", "sm_80"]);
    let listed = cuobjdump_list(&tool, &out);
    let want: Vec<String> = (1..=11)
        .map(|n| format!("ELF file {n:>4}: libcurand.so.{n}.sm_80.cubin"))
        .collect();
    assert_eq!(listed, want);
    // Smaller by the entries removed, headers and payloads, give or take the segment
    // alignment the rest of the file moves by (2 MiB) and the 8-byte boundaries.
    let removed: u64 = cuda_entries(&lib)
        .iter()
        .filter(|e| e["arch"] != "sm_80")
        .map(|e| e["cuda"]["stored_size"].as_u64().unwrap())
        .sum();
    let before = std::fs::metadata(&lib).unwrap().len();
    let after = std::fs::metadata(&out).unwrap().len();
    let shrunk = before - after;
    assert!(shrunk <= removed + 153 * 112, "{shrunk} {removed}");
    assert!(
        shrunk + (2 << 20) + 153 * 8 >= removed,
        "{shrunk} {removed}"
    );
    // The kept cubins are the same bytes, and the library still loads and answers.
    let (_a, a) = (tempfile::tempdir().unwrap(), dir.path().join("a"));
    let (_b, b) = (tempfile::tempdir().unwrap(), dir.path().join("b"));
    for (from, to) in [(&lib, &a), (&out, &b)] {
        succeed(
            Command::new(&tool)
                .arg("--extract-elf")
                .arg("sm_80")
                .arg(from)
                .current_dir({
                    std::fs::create_dir_all(to).unwrap();
                    to
                }),
        );
    }
    let mut old: Vec<Vec<u8>> = crate::util::file_names(&a)
        .iter()
        .map(|n| std::fs::read(a.join(n)).unwrap())
        .collect();
    let mut new: Vec<Vec<u8>> = crate::util::file_names(&b)
        .iter()
        .map(|n| std::fs::read(b.join(n)).unwrap())
        .collect();
    old.sort();
    new.sort();
    assert!(old == new && new.len() == 11);
    let script = format!(
        "import ctypes; l = ctypes.CDLL('{}'); v = ctypes.c_int(); \
         print(l.curandGetVersion(ctypes.byref(v)), v.value)",
        out.display()
    );
    let Some(python) = crate::util::python_with(&["ctypes"]) else {
        return;
    };
    let (code, text, err) = text_output(Command::new(python).args(["-c", &script]));
    assert_eq!((code, text.trim()), (0, "0 10310"), "{err}");
}

#[test]
fn compressed_entries_kept_are_copied_as_stored_and_read_back_sound() {
    let dir = tempfile::tempdir().unwrap();
    let cuda = samples_dir().join("cuda");
    // Each arch's stored payload, for the compressed entries of `path`.
    let stored = |path: &Path| -> Vec<(String, Vec<u8>)> {
        let bytes = std::fs::read(path).unwrap();
        cuda_entries(path)
            .iter()
            .filter(|e| e["compressed"] == true)
            .map(|e| {
                let at = e["cuda"]["stored_offset"].as_u64().unwrap() as usize;
                let size = e["cuda"]["stored_size"].as_u64().unwrap() as usize;
                let arch = e["arch"].as_str().unwrap().to_string();
                (arch, bytes[at..at + size].to_vec())
            })
            .collect()
    };
    let cases = [
        ("gencode-zstd.o", ["sm_90", "compute_90"].len()),
        ("compress-all.o", 2),
        ("gencode-lz.o", 1),
    ];
    for (name, compressed) in cases {
        let input = cuda.join(name);
        let out = strip(&input, dir.path(), name, &["--keep", "sm_90"]);
        let kept = stored(&out);
        assert_eq!(kept.len(), compressed, "{name}: {kept:?}");
        let before = stored(&input);
        assert!(kept.iter().all(|k| before.contains(k)), "{name}");
        // Every stream of the result inflates as its header says, to what the input's did.
        succeed(offload().arg("verify").arg(&out));
        let after = contents(&out, &dir.path().join(format!("{name}-after")));
        let all = contents(&input, &dir.path().join(format!("{name}-before")));
        assert_eq!(after.len(), arches(&out).len(), "{name}");
        assert!(after.iter().all(|c| all.contains(c)), "{name}");
    }
}
