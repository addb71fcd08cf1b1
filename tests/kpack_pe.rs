//! Split PE images: executables and DLLs built by clang-22 and lld-link-22 for x86-64
//! Windows, split by AMD's COFF transform, are listed, extracted and verified through their
//! `.kpackrf` reference and the HIPK wrappers of `.hipFatB` (pointers as addresses).

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use crate::rewrite_pe::build;
use crate::util;
use crate::util::kpack::split_pe_with_python;
use crate::util::offload_in;

/// The files of `dir` by name, with their bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// The processors the built images carry code for.
const ARCHES: [&str; 3] = ["gfx1100", "gfx906", "gfx90a"];

#[test]
fn split_pe_images_are_listed_extracted_and_verified_from_their_archives() {
    let (Some(clang), Some(lld_link)) = (util::tool("clang-22"), util::tool("lld-link-22")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let built = build(&clang, &lld_link, d, "x86_64");
    fs::create_dir_all(d.join("split/bin")).unwrap();
    for (file, prefix) in built.iter().zip(["app", "kernels"]) {
        let name = file.file_name().unwrap().to_str().unwrap();
        let split = d.join("split/bin").join(name);
        let search = format!(".kpack/{prefix}_@GFXARCH@.kpack");
        let key_name = format!("bin/{name}");
        let kpack_dir = d.join("split/bin/.kpack");
        if split_pe_with_python(file, &split, &kpack_dir, prefix, &key_name, &search).is_none() {
            return;
        }
        // Named from the test folder, as the messages name them.
        let unsplit = file.file_name().unwrap().to_str().unwrap();
        let split = format!("split/bin/{name}");
        let split = split.as_str();

        // Three wrappers: a (gfx906, gfx90a), b (gfx90a, gfx1100), c (all three).
        let (code, out, err) = offload_in(d, &["ls", split]);
        assert_eq!((code, err.as_str()), (0, ""), "{out}");
        for arch in ARCHES {
            let archive = format!("bin/.kpack/{prefix}_{arch}.kpack");
            assert!(out.contains(&archive), "{arch} of {name}:\n{out}");
        }
        for (index, arches) in [
            (0, &["gfx906", "gfx90a"][..]),
            (1, &["gfx1100", "gfx90a"][..]),
            (2, &ARCHES[..]),
        ] {
            let key = format!("{key_name}#{index}");
            let lines: Vec<&str> = out.lines().filter(|l| l.contains(&key)).collect();
            assert_eq!(lines.len(), arches.len(), "{key}:\n{out}");
            for arch in arches {
                assert!(
                    lines
                        .iter()
                        .any(|l| l.contains(&format!("{prefix}_{arch}.kpack"))),
                    "{key} {arch}:\n{out}"
                );
            }
        }

        for arch in ARCHES {
            let want = format!("want-{prefix}-{arch}");
            let got = format!("got-{prefix}-{arch}");
            let (code, _, err) = offload_in(d, &["extract", unsplit, "--arch", arch, "-o", &want]);
            assert_eq!((code, err.as_str()), (0, ""));
            let (code, _, err) = offload_in(d, &["extract", split, "--arch", arch, "-o", &got]);
            assert_eq!((code, err.as_str()), (0, ""));
            let want: Vec<Vec<u8>> = files(&d.join(want)).into_values().collect();
            let mut got: Vec<Vec<u8>> = files(&d.join(got)).into_values().collect();
            let mut want_sorted = want.clone();
            want_sorted.sort();
            got.sort();
            assert!(!want.is_empty());
            assert_eq!(got, want_sorted, "{name} {arch}");
        }

        // Every index the wrappers ask for, for every processor an archive claims: the first
        // unit has no gfx1100 code and the second no gfx906 code, as in the unsplit image.
        let (code, out, err) = offload_in(d, &["verify", split]);
        assert_eq!(code, 1, "{out}{err}");
        assert!(
            out.contains(&format!(
                "{split}: 7 code objects in 3 kpack archives sound, 2 problems"
            )),
            "{out}"
        );
        let mut problems: Vec<&str> = err.lines().collect();
        problems.sort();
        let lacks = |arch: &str, index: u64| {
            format!(
                "offload verify: error: '{}/split/bin/.kpack/{prefix}_{arch}.kpack': no code object \
                 {key_name}#{index} for {arch}, which the archive is for (its gfx_arches), \
                 though '{split}' asks for code object {index}",
                fs::canonicalize(d).unwrap().display()
            )
        };
        assert_eq!(problems, [lacks("gfx1100", 0), lacks("gfx906", 1)]);
    }
}
