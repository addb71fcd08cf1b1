//! Using split binaries and their `.kpack` archives: `offload extract` (`--arch` and
//! `--device`), `offload check` against made-up GPU topologies, and `offload verify`, on what
//! AMD's splitter makes of programs and libraries built by clang-22 and on archives we write;
//! damaged archives and references.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use offload::format::kpack::{Archive, ArchiveWriter, Scheme, ELF_REF_SECTION};

use crate::check::squeeze;
use crate::kpack::section;
use crate::kpack::{python_split_installed, Unit, ARCHES, UNITS};
use crate::util;
use crate::util::kpack::{copy_tree, fnv1a64, load, loader, split_with_python};
use crate::util::native::{c_compiler, compile_hip};
use crate::util::{kfd_topology, offload, offload_in, succeed, text_output};

/// The contents of every file in `dir`, sorted.
pub(crate) fn contents(dir: &Path) -> Vec<Vec<u8>> {
    let mut all: Vec<Vec<u8>> = fs::read_dir(dir)
        .unwrap()
        .map(|e| fs::read(e.unwrap().path()).unwrap())
        .collect();
    all.sort();
    all
}

/// The split library as named from its test folder.
const SPLIT_LIB: &str = "split/k_lib_generic/stage/lib/libk.so";

#[test]
fn extract_gives_the_code_objects_of_the_unsplit_library() {
    let dir = tempfile::tempdir().unwrap();
    let Some(installed) = python_split_installed(dir.path(), &UNITS) else {
        return;
    };
    let d = dir.path();
    // The library as built, before the split (its second unit compressed).
    let (code, _, err) = offload_in(
        d,
        &[
            "extract",
            "stage/lib/libk.so",
            "--arch",
            "gfx90a",
            "-o",
            "unsplit",
        ],
    );
    assert_eq!((code, err.as_str()), (0, ""));
    let (code, out, err) = offload_in(d, &["extract", SPLIT_LIB, "--arch", "gfx90a", "-o", "kp"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let expected = contents(&d.join("unsplit"));
    assert_eq!(expected.len(), 2);
    assert_eq!(contents(&d.join("kp")), expected);
    let archive =
        fs::canonicalize(d.join("split/k_lib_generic/stage/.kpack/k_lib_gfx90a.kpack")).unwrap();
    let archive = archive.display();
    let lines: Vec<String> = out
        .lines()
        .map(|l| l.split_once('\t').unwrap().0.to_string())
        .collect();
    assert_eq!(
        lines,
        [
            "kp/libk.so-stage_lib_libk.so_0-gfx90a.co",
            "kp/libk.so-stage_lib_libk.so_1-gfx90a.co"
        ]
    );
    assert!(
        out.lines()
            .next()
            .unwrap()
            .ends_with(&format!(" bytes ({archive}[stage/lib/libk.so#0])")),
        "{out}"
    );

    // One device with code, one without: the runtime's pick for the first, and for the
    // second every path the loader tried.
    let (code, out, err) = offload_in(
        d,
        &[
            "extract",
            SPLIT_LIB,
            "--device",
            "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-",
            "--device",
            "gfx1101",
            "-o",
            "dev",
        ],
    );
    assert_eq!(code, 1);
    assert_eq!(contents(&d.join("dev")), expected);
    let real = fs::canonicalize(&installed).unwrap();
    let real = real.display();
    assert!(
        out.lines().next().unwrap().ends_with(&format!(
            " ({real}/.kpack/k_lib_gfx90a.kpack[stage/lib/libk.so#0]: gfx90a:sramecc+:xnack- loads it natively)"
        )),
        "{out}"
    );
    let searched = format!(
        "searched {real}/.kpack/k_lib_gfx1101.kpack (missing), {real}/.kpack/k_lib_gfx11-generic.kpack (missing)"
    );
    assert_eq!(
        err,
        format!(
            "offload extract: warning: no device image for gfx1101 in '{SPLIT_LIB}'\n\
             offload extract: warning: gfx1101 loads nothing for code objects 0-1 of '{SPLIT_LIB}' (stage/lib/libk.so#N): no archive found; {searched}\n"
        )
    );

    // The loader's environment: kpack turned off, or one archive named for all.
    let run_with = |var: &str, value: &str, device: &str| {
        text_output(
            offload()
                .current_dir(d)
                .env(var, value)
                .args(["extract", SPLIT_LIB, "--device", device, "-o", "env"]),
        )
    };
    let (code, _, err) = run_with("ROCM_KPACK_DISABLE", "1", "gfx90a");
    assert_eq!(code, 1);
    assert!(
        err.contains("code objects 0-1 of 'split/k_lib_generic/stage/lib/libk.so' (stage/lib/libk.so#N): ROCM_KPACK_DISABLE turns kpack loading off\n"),
        "{err}"
    );
    let gfx1100 = installed.join(".kpack/k_lib_gfx1100.kpack");
    let (code, out, err) = run_with("ROCM_KPACK_PATH", gfx1100.to_str().unwrap(), "gfx1100");
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(out.lines().count(), 2, "{out}");
    let (code, _, err) = run_with("ROCM_KPACK_PATH", gfx1100.to_str().unwrap(), "gfx90a");
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!(
            "no archive found is for its processor; searched {} (archive for gfx1100)",
            gfx1100.display()
        )),
        "{err}"
    );
}

/// A compressed archive of `lib/a.so` with native gfx1100 code for code object 0 and
/// gfx11-generic code for both, each larger than one inflation window but the second.
fn generic_archive() -> (Vec<u8>, [Vec<u8>; 3]) {
    let pattern = |len: usize, seed: u32| -> Vec<u8> {
        let mut state = seed;
        (0..len)
            .map(|_| {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12345);
                // Runs of bytes, so that zstd has something to compress.
                (state >> 27) as u8
            })
            .collect()
    };
    let native0 = pattern(3 << 20, 1);
    let generic0 = pattern(100_000, 2);
    let generic1 = pattern((2 << 20) + 77, 3);
    let mut w = ArchiveWriter::new(
        "a",
        "gfx11",
        &["gfx1100", "gfx11-generic"],
        Scheme::ZstdPerKernel,
    );
    w.add("lib/a.so#0", "gfx1100", &native0).unwrap();
    w.add("lib/a.so#0", "gfx11-generic", &generic0).unwrap();
    w.add("lib/a.so#1", "gfx11-generic", &generic1).unwrap();
    (w.finish(), [native0, generic0, generic1])
}

/// One extraction: its options, its output folder, the code objects it must write, and the
/// end of the first line it prints.
type Case<'a> = (&'a [&'a str], &'a str, Vec<&'a Vec<u8>>, &'a str);

#[test]
fn compressed_archives_inflate_and_generic_code_serves_other_processors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (archive, [native0, generic0, generic1]) = generic_archive();
    fs::write(d.join("a.kpack"), &archive).unwrap();
    let extract = |args: &[&str]| {
        text_output(
            offload()
                .current_dir(d)
                .env("RAYON_NUM_THREADS", "8")
                .arg("extract")
                .arg("a.kpack")
                .args(args),
        )
    };
    let cases: [Case<'_>; 4] = [
        (
            &["--arch", "gfx1101"],
            "arch1101",
            vec![&generic0, &generic1],
            "gfx11-generic 100000 bytes (a.kpack[lib/a.so#0]: gfx1101 loads it as generic target code)",
        ),
        (
            &["--arch", "gfx1100"],
            "arch1100",
            vec![&native0, &generic1],
            "gfx1100 3145728 bytes (a.kpack[lib/a.so#0])",
        ),
        (
            &["--device", "gfx1101"],
            "dev1101",
            vec![&generic0, &generic1],
            "gfx11-generic 100000 bytes (a.kpack[lib/a.so#0]: gfx1101 loads it as generic target code)",
        ),
        (
            &["--device", "gfx1100"],
            "dev1100",
            vec![&native0, &generic1],
            "gfx1100 3145728 bytes (a.kpack[lib/a.so#0]: gfx1100 loads it natively)",
        ),
    ];
    for (args, out_dir, expected, first) in cases {
        for _ in 0..2 {
            let _ = fs::remove_dir_all(d.join(out_dir));
            let mut all: Vec<&str> = args.to_vec();
            all.extend(["-o", out_dir]);
            let (code, out, err) = extract(&all);
            assert_eq!((code, err.as_str()), (0, ""), "{args:?}");
            let mut expected: Vec<Vec<u8>> = expected.iter().map(|v| v.to_vec()).collect();
            expected.sort();
            assert!(
                contents(&d.join(out_dir)) == expected,
                "{args:?}: bytes differ"
            );
            assert!(
                out.lines()
                    .next()
                    .unwrap()
                    .ends_with(&format!("\thip {first}")),
                "{args:?}: {out}"
            );
        }
    }
    // A device archive: members named as bundle entries after their keys, inflated.
    let (code, _, err) = extract(&["--arch", "gfx1100", "-o", "dev.a"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let dev = fs::read(d.join("dev.a")).unwrap();
    let members: Vec<(String, Vec<u8>)> = object::read::archive::ArchiveFile::parse(&*dev)
        .unwrap()
        .members()
        .map(|m| {
            let m = m.unwrap();
            (
                String::from_utf8(m.name().to_vec()).unwrap(),
                m.data(&*dev).unwrap().to_vec(),
            )
        })
        .collect();
    assert_eq!(
        members,
        [
            (
                "lib_a_so_0-hipv4-amdgcn-amd-amdhsa--gfx1100lib_a_so_0.bc".to_string(),
                native0.clone()
            ),
            (
                "lib_a_so_1-hipv4-amdgcn-amd-amdhsa--gfx11-genericlib_a_so_1.bc".to_string(),
                generic1.clone()
            ),
        ]
    );
    let (code, out, _) = text_output(offload().current_dir(d).args(["verify", "a.kpack"]));
    assert_eq!(
        (code, out.as_str()),
        (
            0,
            "a.kpack: 3 code objects in 1 kpack archive sound, 0 problems\n"
        )
    );

    // The limit on what one code object may inflate to holds for archives too.
    let (code, _, err) = extract(&["--arch", "gfx1100", "--max-decompressed-size", "1000000"]);
    assert_eq!(code, 1);
    assert!(
        err.contains(
            "kpack entry lib/a.so#0 @ gfx1100 inflates to 3145728 bytes, more than the limit of \
             1000000 bytes (raise it with --max-decompressed-size)"
        ),
        "{err}"
    );

    // A damaged frame: an error naming the archive, the entry and the frame's offset; nothing
    // written.
    let parsed = Archive::parse(&archive).unwrap();
    let frame = parsed.stored[0];
    let mut bad = archive.clone();
    let middle = (frame.offset + frame.size / 2) as usize;
    for b in &mut bad[middle..middle + 64] {
        *b ^= 0x5a;
    }
    fs::write(d.join("a.kpack"), &bad).unwrap();
    let (code, out, err) = extract(&["--arch", "gfx1100", "-o", "damaged"]);
    assert_eq!((code, out.as_str()), (1, ""));
    let head = format!(
        "offload extract: error: 'a.kpack': offset {:#x}: kpack entry lib/a.so#0 @ gfx1100",
        frame.offset
    );
    assert!(err.starts_with(&head), "{err}");
    assert!(
        !d.join("damaged").exists() || fs::read_dir(d.join("damaged")).unwrap().count() == 0,
        "partial output"
    );
    let (code, out, err) = text_output(offload().current_dir(d).args(["verify", "a.kpack"]));
    assert_eq!(
        (code, out.as_str()),
        (
            1,
            "a.kpack: 2 code objects in 1 kpack archive sound, 1 problem\n"
        )
    );
    assert!(
        err.starts_with(&head.replace("offload extract", "offload verify")),
        "{err}"
    );
}

/// A HIP program (two units, both for [`ARCHES`], the second compressed) built by clang-22 in
/// `dir/stage/bin/prog`, split by AMD's splitter and installed with its archives in
/// `dir/split/k_lib_generic/stage`; gives that folder. `None` when a tool is missing.
fn split_program(dir: &Path) -> Option<PathBuf> {
    let clang = util::tool("clang-22")?;
    let cc = c_compiler()?;
    let objects: Vec<PathBuf> = UNITS
        .iter()
        .map(|(source, arches, extra)| compile_hip(&clang, dir, source, arches, extra))
        .collect();
    fs::write(dir.join("main.c"), "int main(void) { return 0; }\n").unwrap();
    let prog = dir.join("stage/bin/prog");
    fs::create_dir_all(prog.parent().unwrap()).unwrap();
    // The HIP runtime's registration functions stay undefined: the program is never run.
    succeed(
        Command::new(cc)
            .arg(dir.join("main.c"))
            .args(&objects)
            .args(["-Wl,--unresolved-symbols=ignore-all", "-o"])
            .arg(&prog),
    );
    split_with_python(&dir.join("stage"), "k", dir)?;
    let split = dir.join("split");
    let installed = split.join("k_lib_generic/stage");
    for arch in ARCHES {
        copy_tree(
            &split.join(format!("k_lib_{arch}/stage/.kpack")),
            &installed.join(".kpack"),
        );
    }
    Some(installed)
}

#[test]
fn check_finds_a_split_programs_archives_or_names_every_path_searched() {
    let dir = tempfile::tempdir().unwrap();
    let Some(installed) = split_program(dir.path()) else {
        return;
    };
    let d = dir.path();
    let prog = "split/k_lib_generic/stage/bin/prog";
    let real = fs::canonicalize(&installed).unwrap();
    let real = real.to_str().unwrap();
    // MI210 with ECC on; then an RX 7700-class card, for which no archive was installed.
    kfd_topology(&d.join("mi210"), &[(90010, 0x0400_0000)]);
    kfd_topology(&d.join("rx7700"), &[(110001, 0)]);
    let check = |topology: &str, env: &[(&str, &str)], json: bool| {
        let mut command = offload();
        command
            .current_dir(d)
            .env("OFFLOAD_KFD_TOPOLOGY", d.join(topology))
            .env_remove("HSA_XNACK")
            .env_remove("HSA_ENABLE_SRAMECC")
            .envs(env.iter().copied())
            .args(["check", prog]);
        if json {
            command.arg("--json");
        }
        let (code, out, err) = text_output(&mut command);
        (code, out.replace(real, "{I}"), err)
    };

    // What AMD's loader answers for the same requests is what check says, in JSON.
    if let Some(driver) = loader() {
        let binary = fs::canonicalize(installed.join("bin/prog")).unwrap();
        let metadata = d.join("prog.ref");
        fs::write(
            &metadata,
            section(&fs::read(&binary).unwrap(), ELF_REF_SECTION),
        )
        .unwrap();
        for (topology, isa, generic) in [
            ("mi210", "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-", None),
            (
                "rx7700",
                "amdgcn-amd-amdhsa--gfx1101",
                Some("amdgcn-amd-amdhsa--gfx11-generic"),
            ),
        ] {
            let (_, json, _) = check(topology, &[], true);
            let json: serde_json::Value = serde_json::from_str(&json).unwrap();
            let arches: Vec<&str> = std::iter::once(isa).chain(generic).collect();
            for co in json["files"][0]["kpack"]["code_objects"]
                .as_array()
                .unwrap()
            {
                let index = co["index"].as_u64().unwrap();
                let ours = &co["loads"][0];
                let theirs = load(&driver, &metadata, &binary, index, &arches, &[]);
                match theirs {
                    Ok((size, hash)) => {
                        assert_eq!(ours["loader"], "SUCCESS");
                        let archive = ours["archive"].as_str().unwrap().replace("{I}", real);
                        let data = fs::read(archive).unwrap();
                        let archive = Archive::parse(&data).unwrap();
                        let key = co["key"].as_str().unwrap();
                        let entry = archive.find(key, ours["arch"].as_str().unwrap()).unwrap();
                        let code = archive.code_object(entry, 1 << 30).unwrap();
                        assert_eq!((code.len() as u64, fnv1a64(&code)), (size, hash));
                    }
                    Err(13) => assert_eq!(ours["loader"], "ARCHIVE_NOT_FOUND"),
                    Err(other) => panic!("{topology} #{index}: the loader says {other}"),
                }
            }
        }
    }

    let (code, out, err) = check("mi210", &[], false);
    assert_eq!((code, err.as_str()), (0, ""), "{out}");
    let out = squeeze(&out);
    for line in [
        format!("{prog} 2 gfx90a:sramecc+:xnack- 2 0 0 0"),
        "Code in kpack archives:".to_string(),
        format!("{prog}: 2 code objects, keyed stage/bin/prog#N, searched at ../.kpack/k_lib_@GFXARCH@.kpack"),
        "gfx90a:sramecc+:xnack- (device 0): code objects 0-1: {I}/.kpack/k_lib_gfx90a.kpack [gfx90a]".to_string(),
    ] {
        assert!(out.lines().any(|l| l == line), "{line:?} not in:\n{out}");
    }
    assert!(!out.contains("Without code"), "{out}");

    // A damaged archive where the gfx1101 one would be: passed over, as the loader does.
    fs::write(
        installed.join(".kpack/k_lib_gfx1101.kpack"),
        b"KPAK\x02\0\0\0",
    )
    .unwrap();
    let (code, out, err) = check("rx7700", &[], false);
    assert_eq!((code, err.as_str()), (1, ""), "{out}");
    let out = squeeze(&out);
    let expected = format!(
        "gfx1101 (device 0): code objects 0-1: nothing: no archive found
searched:
{{I}}/.kpack/k_lib_gfx1101.kpack (not an archive: offset 0x0: truncated kpack header: needs 16 bytes, 8 left in the file)
{{I}}/.kpack/k_lib_gfx11-generic.kpack (missing)

Without code:
gfx1101 (device 0): {prog} code objects 0-1 of 2: the kpack loader finds none of them

What the runtime does:
{prog} code objects 0-1: the kpack loader answers ARCHIVE_NOT_FOUND for gfx1101: the runtime gets no code for that device."
    );
    assert!(out.contains(&expected), "{out}");

    // The same in JSON; and with ROCM_KPACK_PATH naming the gfx90a archive, that archive is
    // the only path searched, and it is for another processor.
    let gfx90a = installed.join(".kpack/k_lib_gfx90a.kpack");
    let (code, json, _) = check(
        "rx7700",
        &[("ROCM_KPACK_PATH", gfx90a.to_str().unwrap())],
        true,
    );
    assert_eq!(code, 1);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["every_device_has_code"], false);
    let kpack = &json["files"][0]["kpack"];
    assert_eq!(kpack["kernel_name"], "stage/bin/prog");
    assert_eq!(kpack["binary"], "{I}/bin/prog");
    assert_eq!(
        kpack["code_objects"][1],
        serde_json::json!({
            "index": 1,
            "key": "stage/bin/prog#1",
            "loads": [{
                "device": 0,
                "loads": "nothing",
                "archive": null,
                "arch": null,
                "loader": "ARCH_NOT_FOUND",
                "why": "no archive found is for its processor",
                "searched": [{"path": "{I}/.kpack/k_lib_gfx90a.kpack", "found": "archive for gfx90a"}]
            }]
        })
    );
    // Pointed at the installed gfx1100 archive under another name, a gfx1100 device finds it.
    kfd_topology(&d.join("rx7900"), &[(110000, 0)]);
    let moved = d.join("elsewhere.kpack");
    fs::copy(installed.join(".kpack/k_lib_gfx1100.kpack"), &moved).unwrap();
    let (code, out, _) = check(
        "rx7900",
        &[("ROCM_KPACK_PATH_PREFIX", moved.to_str().unwrap())],
        false,
    );
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!(
            "gfx1100 (device 0): code objects 0-1: {} [gfx1100]\n",
            moved.display()
        )),
        "{out}"
    );
    let (code, out, _) = check("mi210", &[("ROCM_KPACK_DISABLE", "1")], false);
    assert_eq!(code, 1);
    assert!(
        out.contains("gfx90a:sramecc+:xnack- (device 0): code objects 0-1: nothing: ROCM_KPACK_DISABLE turns kpack loading off\n"),
        "{out}"
    );
}

#[test]
fn verify_names_the_code_objects_an_archive_set_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // AMD's splitter numbers code objects per processor: with a first unit for gfx1100 only,
    // the gfx90a archive keys the second unit's code #0 and has no #1.
    let units: [Unit; 2] = [
        ("kernel.hip", &["gfx1100"], &[]),
        ("vadd.hip", &ARCHES, &[]),
    ];
    let Some(_) = python_split_installed(d, &units) else {
        return;
    };
    let (code, out, err) = offload_in(d, &["verify", SPLIT_LIB]);
    assert_eq!(code, 1);
    assert_eq!(
        out,
        format!(
            "{SPLIT_LIB}: 0 compressed bundles sound, 0 damaged\n\
             {SPLIT_LIB}: 3 code objects in 2 kpack archives sound, 1 problem\n"
        )
    );
    assert_eq!(
        err,
        format!(
            "offload verify: error: '{}': no code object \
             stage/lib/libk.so#1 for gfx90a, which the archive is for (its gfx_arches), though \
             '{SPLIT_LIB}' asks for code object 1\n",
            fs::canonicalize(d.join("split/k_lib_generic/stage/.kpack/k_lib_gfx90a.kpack"))
                .unwrap()
                .display()
        )
    );
    // The loader, asked for code object 1 on gfx90a, finds the gfx90a archive without it.
    let (code, out, _) = offload_in(d, &["check", SPLIT_LIB, "--device", "gfx90a"]);
    assert_eq!(code, 1);
    let archive =
        fs::canonicalize(d.join("split/k_lib_generic/stage/.kpack/k_lib_gfx90a.kpack")).unwrap();
    assert!(
        out.contains(&format!(
            "    gfx90a (device 0): code object 1: nothing: '{}' is for gfx90a but lacks the code \
             object\n",
            archive.display()
        )),
        "{out}"
    );
    assert!(
        out.contains("code object 1: the kpack loader answers KERNEL_NOT_FOUND for gfx90a"),
        "{out}"
    );
    // Without its archives.
    fs::remove_dir_all(d.join("split/k_lib_generic/stage/.kpack")).unwrap();
    let (code, out, err) = offload_in(d, &["verify", SPLIT_LIB]);
    assert_eq!(code, 1);
    assert!(
        out.ends_with("0 code objects in 0 kpack archives sound, 1 problem\n"),
        "{out}"
    );
    assert_eq!(
        err,
        format!(
            "offload verify: error: '{SPLIT_LIB}': no kpack archive found; looked at \
             {}/split/k_lib_generic/stage/.kpack/k_lib_@GFXARCH@.kpack\n",
            fs::canonicalize(d).unwrap().display()
        )
    );
}

#[test]
fn a_broken_reference_is_an_error_naming_the_file_and_offset_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(installed) = python_split_installed(d, &UNITS) else {
        return;
    };
    let lib = installed.join("lib/libk.so");
    let mut bytes = fs::read(&lib).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    use object::{Object, ObjectSection};
    let (at, _) = file
        .section_by_name(ELF_REF_SECTION)
        .unwrap()
        .file_range()
        .unwrap();
    // 0xc1 is a byte no MessagePack value starts with.
    bytes[at as usize] = 0xc1;
    fs::write(&lib, &bytes).unwrap();
    let expected = format!(
        "'{SPLIT_LIB}': .rocm_kpack_ref at {at:#x}: offset 0x0: msgpack: reserved type byte 0xc1"
    );
    kfd_topology(&d.join("gpu"), &[(90010, 0)]);
    let mut seen = BTreeSet::new();
    for args in [
        vec!["ls", SPLIT_LIB],
        vec!["extract", SPLIT_LIB, "--arch", "gfx90a", "-o", "out"],
        vec!["extract", SPLIT_LIB, "--device", "gfx90a", "-o", "out"],
        vec!["check", SPLIT_LIB],
        vec!["verify", SPLIT_LIB],
    ] {
        let (code, _, err) = text_output(
            offload()
                .current_dir(d)
                .env("OFFLOAD_KFD_TOPOLOGY", d.join("gpu"))
                .args(&args),
        );
        assert!(code == 1 || code == 2, "{args:?}: {code}");
        assert!(err.contains(&expected), "{args:?}: {err}");
        seen.insert(args[0]);
    }
    assert_eq!(seen.len(), 4);
}
