//! `extract --device` against comgr: for every bundle of the samples (compressed ones inflated
//! first) and hand-made bundles for each rule, the entry comgr 5.2.3's
//! `amd_comgr_lookup_code_object` (the lookup HIP 5.5 to 6.0 used) gives a device's ISA name
//! is the one `extract --device` writes as that device's native code.
//!
//! The oracle is tests/support/comgr_lookup.c, built here against libamd_comgr. It asks one
//! ISA name per call (comgr 5.2.3 stops filling a list after its first hit), so it checks the
//! matching of one request; the runtime's generic and SPIR-V steps are CLR's and are stated
//! as expectations, as are picks for processors comgr 5.2.3 does not know (gfx942 and newer).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::native::{c_compiler, support};
use crate::util::{self, offload, samples_dir, succeed, text_output, visible};

/// The processors comgr 5.2.3 knows, as devices report themselves.
const KNOWN_DEVICES: &[&str] = &[
    "gfx803",
    "gfx900:xnack-",
    "gfx900:xnack+",
    "gfx906:sramecc+:xnack-",
    "gfx906:sramecc-:xnack+",
    "gfx908:sramecc+:xnack-",
    "gfx90a:sramecc+:xnack-",
    "gfx90a:sramecc-:xnack+",
    "gfx90a:sramecc+:xnack+",
    "gfx1010:xnack-",
    "gfx1030",
    "gfx1031",
    "gfx1036",
    // Not as a device reports itself: a query without its features.
    "gfx90a",
];

/// The comgr oracle, built once per test; `None` (after a visible skip) without a C compiler
/// or comgr's development files (its header, as the compiler finds it), a failure under
/// `OFFLOAD_REQUIRE_REFERENCE=1`.
fn oracle(dir: &Path) -> Option<PathBuf> {
    let cc = c_compiler()?;
    let probe = dir.join("comgr_probe.c");
    std::fs::write(&probe, "#include <amd_comgr.h>\n").unwrap();
    let header = Command::new(&cc)
        .arg("-E")
        .arg(&probe)
        .output()
        .is_ok_and(|o| o.status.success());
    util::skips::reference(
        header.then_some(()),
        "amd_comgr.h not found by the C compiler (apt-get install libamd-comgr-dev)",
    )?;
    let program = dir.join("comgr_lookup");
    succeed(
        Command::new(cc)
            .arg(support("comgr_lookup.c"))
            .arg("-o")
            .arg(&program)
            .arg("-lamd_comgr"),
    );
    Some(program)
}

/// What comgr gives the ISA name `isa` from `bundle`: `Ok(None)` for nothing (or an empty
/// entry), `Ok(Some((offset, size)))`, `Err(status)` when it cannot read the header.
fn comgr_pick(oracle: &Path, bundle: &Path, isa: &str) -> Result<Option<(usize, usize)>, String> {
    let (code, out, err) = text_output(Command::new(oracle).arg(bundle).arg(isa));
    assert_eq!(code, 0, "{err}");
    let words: Vec<&str> = out.split_whitespace().collect();
    match words.as_slice() {
        ["error", status] => Err(status.to_string()),
        [_, "0"] => Ok(None),
        [offset, size] => Ok(Some((offset.parse().unwrap(), size.parse().unwrap()))),
        _ => panic!("oracle said {out:?}"),
    }
}

/// What `extract --device` writes for `device` from the bundle file `bundle`: the bytes and
/// how the device loads them, with the warnings it printed.
fn our_pick(bundle: &Path, device: &str, out: &Path) -> (Option<(Vec<u8>, String)>, String) {
    let _ = std::fs::remove_dir_all(out);
    let (code, stdout, stderr) = text_output(
        offload()
            .arg("extract")
            .arg(bundle)
            .args(["--device", device, "-o"])
            .arg(out),
    );
    let Some(line) = stdout.lines().next() else {
        assert_eq!(code, 1, "{stderr}");
        return (None, stderr);
    };
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let path = line.split('\t').next().unwrap();
    let how = line
        .rsplit_once(" loads it ")
        .map(|(_, how)| how.trim_end_matches(')').to_string())
        .unwrap();
    (Some((std::fs::read(path).unwrap(), how)), stderr)
}

/// Checks that `extract --device` agrees with comgr for `device` on `bundle`: comgr's pick for
/// the device's ISA name is what the device loads natively, and no pick means no native code.
fn agree(oracle: &Path, bundle: &Path, device: &str, scratch: &Path) {
    let bytes = std::fs::read(bundle).unwrap();
    let isa = format!("amdgcn-amd-amdhsa--{device}");
    let (ours, warnings) = our_pick(bundle, device, scratch);
    let context = format!("{} for {device}", bundle.display());
    match comgr_pick(oracle, bundle, &isa) {
        Err(status) => {
            assert!(
                ours.is_none(),
                "{context}: comgr failed ({status}), we picked"
            );
            assert!(warnings.contains("4096 bytes"), "{context}: {warnings}");
        }
        Ok(Some((offset, size))) => {
            let (code, how) = ours.unwrap_or_else(|| panic!("{context}: comgr picked, we did not"));
            assert_eq!(how, "natively", "{context}");
            assert!(
                code == bytes[offset..offset + size],
                "{context}: comgr picked {offset:#x}+{size:#x}, we wrote other bytes"
            );
        }
        Ok(None) => {
            if let Some((_, how)) = ours {
                assert_ne!(how, "natively", "{context}: comgr found no native code");
            }
        }
    }
}

/// A clang offload bundle of `entries` (ID, payload), as clang's bundler lays it out.
fn bundle_bytes(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let header: usize = 32 + entries.iter().map(|(id, _)| 24 + id.len()).sum::<usize>();
    let mut out = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
    out.extend((entries.len() as u64).to_le_bytes());
    let mut at = header;
    for (id, data) in entries {
        for field in [at, data.len(), id.len()] {
            out.extend((field as u64).to_le_bytes());
        }
        out.extend(id.as_bytes());
        at += data.len();
    }
    for (_, data) in entries {
        out.extend(*data);
    }
    out
}

fn u64_at(data: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(data.get(at..at + 8)?.try_into().ok()?))
}

/// The uncompressed bundle starting at `start` in `data`, if its header reads and its entries
/// lie in the data.
fn cut_bundle(data: &[u8], start: usize) -> Option<&[u8]> {
    let count = u64_at(data, start + 24)?;
    if count == 0 || count > 1000 {
        return None;
    }
    let mut at = start + 32;
    let mut end = at;
    for _ in 0..count {
        let (offset, size, len) = (
            u64_at(data, at)? as usize,
            u64_at(data, at + 8)? as usize,
            u64_at(data, at + 16)? as usize,
        );
        let id = data.get(at + 24..at + 24 + len)?;
        if !id.iter().all(|b| b.is_ascii_graphic()) {
            return None;
        }
        at += 24 + len;
        end = end.max(start.checked_add(offset)?.checked_add(size)?);
    }
    data.get(start..end.max(at))
}

/// Every bundle of the sample folders, once each: plain ones cut from their files, compressed
/// ones cut and inflated by `offload decompress`.
fn sample_bundles(dir: &Path) -> (Vec<PathBuf>, usize) {
    let mut seen: BTreeSet<Vec<u8>> = BTreeSet::new();
    let mut out = Vec::new();
    let mut compressed = 0;
    let mut keep = |bytes: Vec<u8>, name: String, out: &mut Vec<PathBuf>| {
        if seen.insert(bytes.clone()) {
            let path = dir.join(name);
            std::fs::write(&path, bytes).unwrap();
            out.push(path);
        }
    };
    for folder in ["linked", "targets", "bundles"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(samples_dir().join(folder))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for file in files {
            let data = std::fs::read(&file).unwrap();
            let stem = file.file_name().unwrap().to_string_lossy().into_owned();
            for (n, start) in find_all(&data, b"__CLANG_OFFLOAD_BUNDLE__").enumerate() {
                if let Some(bundle) = cut_bundle(&data, start) {
                    keep(
                        bundle.to_vec(),
                        format!("{folder}-{stem}-{n}.bundle"),
                        &mut out,
                    );
                }
            }
            for (n, start) in find_all(&data, b"CCOB").enumerate() {
                let Some(plain) = inflate(dir, &data, start, &format!("{folder}-{stem}-{n}"))
                else {
                    continue;
                };
                if let Some(bundle) = cut_bundle(&plain, 0) {
                    compressed += 1;
                    keep(
                        bundle.to_vec(),
                        format!("{folder}-{stem}-z{n}.bundle"),
                        &mut out,
                    );
                }
            }
        }
    }
    (out, compressed)
}

fn find_all<'a>(data: &'a [u8], magic: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
    (0..data.len().saturating_sub(magic.len())).filter(move |&i| data[i..].starts_with(magic))
}

/// The compressed bundle at `start` of `data` (versions 2 and 3, which record their size),
/// inflated by `offload decompress`.
fn inflate(dir: &Path, data: &[u8], start: usize, name: &str) -> Option<Vec<u8>> {
    let version = u16::from_le_bytes(data.get(start + 4..start + 6)?.try_into().ok()?);
    let size = match version {
        2 => u32::from_le_bytes(data.get(start + 8..start + 12)?.try_into().ok()?) as usize,
        3 => u64_at(data, start + 8)? as usize,
        _ => return None,
    };
    let ccob = data.get(start..start.checked_add(size)?)?;
    let (packed, plain) = (
        dir.join(format!("{name}.ccob")),
        dir.join(format!("{name}.plain")),
    );
    std::fs::write(&packed, ccob).unwrap();
    let (code, _, err) = text_output(
        offload()
            .arg("decompress")
            .arg(&packed)
            .arg("-o")
            .arg(&plain),
    );
    if err.contains("does not hold a bundle") {
        // A compressed text bundle (of a .ll or .s file): no code object inside.
        return None;
    }
    assert_eq!(code, 0, "{err}");
    std::fs::read(&plain).ok()
}

#[test]
fn every_sample_bundle_agrees_with_comgr() {
    let dir = tempfile::tempdir().unwrap();
    let Some(oracle) = oracle(dir.path()) else {
        return;
    };
    let (bundles, compressed) = sample_bundles(dir.path());
    assert!(bundles.len() >= 15, "only {} bundles found", bundles.len());
    assert!(compressed >= 3, "only {compressed} compressed bundles");
    let scratch = dir.path().join("out");
    for bundle in &bundles {
        for device in KNOWN_DEVICES {
            agree(&oracle, bundle, device, &scratch);
        }
    }
    visible(&format!(
        "comgr 5.2.3 and extract --device agree on {} sample bundles ({compressed} inflated) for {} devices",
        bundles.len(),
        KNOWN_DEVICES.len()
    ));
}

/// Writes a hand-made bundle of `entries` (ID, payload size, filled with a byte per entry) and
/// returns its path.
fn made(dir: &Path, name: &str, entries: &[(&str, usize)]) -> PathBuf {
    let payloads: Vec<Vec<u8>> = entries
        .iter()
        .enumerate()
        .map(|(i, (_, size))| vec![b'a' + i as u8; *size])
        .collect();
    let pairs: Vec<(&str, &[u8])> = entries
        .iter()
        .zip(&payloads)
        .map(|((id, _), p)| (*id, p.as_slice()))
        .collect();
    let path = dir.join(name);
    std::fs::write(&path, bundle_bytes(&pairs)).unwrap();
    path
}

#[test]
fn each_rule_agrees_with_comgr() {
    let dir = tempfile::tempdir().unwrap();
    let Some(oracle) = oracle(dir.path()) else {
        return;
    };
    let scratch = dir.path().join("out");
    let host = ("host-x86_64-unknown-linux-gnu-", 0);
    let cases: &[(&str, &[(&str, usize)])] = &[
        (
            "any-first",
            &[
                host,
                ("hipv4-amdgcn-amd-amdhsa--gfx90a", 10),
                ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", 20),
            ],
        ),
        (
            "set-first",
            &[
                ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", 20),
                ("hipv4-amdgcn-amd-amdhsa--gfx90a", 10),
            ],
        ),
        (
            "missing-feature",
            &[
                ("hipv4-amdgcn-amd-amdhsa--gfx90a:sramecc+", 10),
                ("hipv4-amdgcn-amd-amdhsa--gfx803:xnack-", 10),
            ],
        ),
        (
            "other-kinds-and-triples",
            &[
                ("openmp-amdgcn-amd-amdhsa--gfx90a", 10),
                ("hip-amdgcn-amd-amdhsa-unknown-gfx90a", 11),
                ("hip-amdgcn-amd-amdpal--gfx90a", 12),
                ("hip-amdgcn-amd-amdhsa--fiji", 13),
                ("hcc-amdgcn-amd-amdhsa--gfx906", 14),
                ("hip-amdgcn-amd-amdhsa--gfx1030", 15),
            ],
        ),
        ("only-empty", &[("hipv4-amdgcn-amd-amdhsa--gfx90a", 0)]),
    ];
    for (name, entries) in cases {
        let bundle = made(dir.path(), name, entries);
        for device in KNOWN_DEVICES {
            agree(&oracle, &bundle, device, &scratch);
        }
    }
    let ids: Vec<String> = (0..70)
        .map(|i| format!("hipv4-amdgcn-amd-amdhsa--gfx1030:{i:030}"))
        .collect();
    let mut big: Vec<(&str, usize)> = ids.iter().map(|id| (id.as_str(), 1)).collect();
    big.push(("hipv4-amdgcn-amd-amdhsa--gfx906", 10));
    let bundle = made(dir.path(), "header-past-4096", &big);
    for device in ["gfx906:sramecc+:xnack-", "gfx1030"] {
        assert!(comgr_pick(&oracle, &bundle, &format!("amdgcn-amd-amdhsa--{device}")).is_err());
        agree(&oracle, &bundle, device, &scratch);
    }
}

#[test]
fn where_the_runtime_differs_from_one_comgr_query() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("out");
    // An empty entry fills comgr's only query and ends its walk; the runtime asks for more
    // names at once, so the walk goes on and a later entry fills the request again.
    let bundle = made(
        dir.path(),
        "empty-then-full",
        &[
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", 0),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", 20),
        ],
    );
    if let Some(oracle) = oracle(dir.path()) {
        assert_eq!(
            comgr_pick(
                &oracle,
                &bundle,
                "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"
            ),
            Ok(None)
        );
    }
    let (ours, _) = our_pick(&bundle, "gfx90a:sramecc+:xnack-", &scratch);
    assert_eq!(ours, Some((vec![b'b'; 20], "natively".to_string())));
    let (ours, warnings) = our_pick(
        &made(
            dir.path(),
            "empty",
            &[("hipv4-amdgcn-amd-amdhsa--gfx90a", 0)],
        ),
        "gfx90a:sramecc+:xnack-",
        &scratch,
    );
    assert_eq!(ours, None);
    assert!(
        warnings.contains("no device image for gfx90a:sramecc+:xnack-"),
        "{warnings}"
    );
    // comgr stops reading a header once its queries are filled: its only query is filled by
    // the first entry, before the records pass 4096 bytes; the runtime's SPIR-V requests stay
    // open, comgr reads on, and the header fails.
    let ids: Vec<String> = (0..70)
        .map(|i| format!("hipv4-amdgcn-amd-amdhsa--gfx1030:{i:030}"))
        .collect();
    let mut big: Vec<(&str, usize)> = vec![("hipv4-amdgcn-amd-amdhsa--gfx906", 10)];
    big.extend(ids.iter().map(|id| (id.as_str(), 1)));
    let bundle = made(dir.path(), "first-then-past-4096", &big);
    if let Some(oracle) = oracle(dir.path()) {
        let isa = "amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-";
        assert!(matches!(
            comgr_pick(&oracle, &bundle, isa),
            Ok(Some((_, 10)))
        ));
    }
    let (ours, warnings) = our_pick(&bundle, "gfx906:sramecc+:xnack-", &scratch);
    assert_eq!(ours, None);
    assert!(
        warnings.contains("longer than the 4096 bytes"),
        "{warnings}"
    );
}

#[test]
fn processors_comgr_5_2_does_not_know_are_picked_as_stated() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("out");
    let bundle = made(
        dir.path(),
        "gfx9-4",
        &[
            ("hipv4-amdgcn-amd-amdhsa--gfx9-4-generic:xnack-", 10),
            ("hipv4-amdgcn-amd-amdhsa--gfx942", 11),
            ("hipv4-amdgcn-amd-amdhsa--gfx942:xnack-", 12),
            ("hipv4-amdgcn-amd-amdhsa--gfx1100", 13),
            ("hipv4-amdgcn-amd-amdhsa--gfx11-generic", 14),
            ("hipv4-spirv64-amd-amdhsa--amdgcnspirv", 15),
        ],
    );
    let expect = |device: &str, fill: u8, size: usize, how: &str| {
        let (ours, warnings) = our_pick(&bundle, device, &scratch);
        assert_eq!(
            ours,
            Some((vec![fill; size], how.to_string())),
            "{device}: {warnings}"
        );
    };
    expect("gfx942:sramecc+:xnack-", b'b', 11, "natively");
    expect("gfx950:sramecc+:xnack-", b'a', 10, "as generic target code");
    // The runtime's map has no generic for gfx940: SPIR-V.
    expect(
        "gfx940:sramecc+:xnack+",
        b'f',
        15,
        "as SPIR-V, compiled when loaded",
    );
    // xnack+ does not fit the generic entry's xnack-.
    expect(
        "gfx950:sramecc+:xnack+",
        b'f',
        15,
        "as SPIR-V, compiled when loaded",
    );
    expect("gfx1100", b'd', 13, "natively");
    expect("gfx1151", b'e', 14, "as generic target code");
    expect(
        "amdgcn-amd-amdhsa--gfx1201",
        b'f',
        15,
        "as SPIR-V, compiled when loaded",
    );
}

#[test]
fn several_devices_share_one_request_set() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = made(
        dir.path(),
        "one-any",
        &[host_entry(), ("hipv4-amdgcn-amd-amdhsa--gfx90a", 10)],
    );
    let out = dir.path().join("out");
    let (code, stdout, stderr) = text_output(
        offload()
            .arg("extract")
            .arg(&bundle)
            .args([
                "--device",
                "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-",
                "--device",
                "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack+",
                "-o",
            ])
            .arg(&out),
    );
    assert_eq!(code, 1, "{stderr}");
    let written =
        out.join("one-any-bundle1-hipv4-amdgcn-amd-amdhsa--gfx90a-for-gfx90a_sramecc+_xnack+.bin");
    assert_eq!(
        stdout,
        format!(
            "{}\thip gfx90a 10 bytes (bundle 1: gfx90a:sramecc+:xnack+ loads it natively)\n",
            written.display()
        )
    );
    assert_eq!(
        stderr,
        format!(
            "offload extract: warning: no device image for gfx90a:sramecc+:xnack- in '{}'\n",
            bundle.display()
        )
    );
}

fn host_entry() -> (&'static str, usize) {
    ("host-x86_64-unknown-linux-gnu-", 0)
}

#[test]
fn an_arch_that_matched_nothing_is_named_and_fails_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let input = samples_dir().join("targets/retired-gfx940.o");
    let (code, stdout, stderr) = text_output(
        offload()
            .arg("extract")
            .arg(&input)
            .args([
                "--arch",
                "amdgcn-amd-amdhsa--gfx942",
                "--arch",
                "gfx950",
                "-o",
            ])
            .arg(dir.path()),
    );
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        stdout,
        format!(
            "{}\thip gfx942 4232 bytes\n",
            dir.path()
                .join("retired-gfx940.o-hipv4-amdgcn-amd-amdhsa--gfx942.co")
                .display()
        )
    );
    assert_eq!(
        stderr,
        format!(
            "offload extract: warning: no device image for gfx950 in '{}'\n",
            input.display()
        )
    );
    // The runtime's pick: gfx940 has no generic in the runtime's map, gfx942 its own entry.
    let out = dir.path().join("device");
    let (code, stdout, stderr) = text_output(
        offload()
            .arg("extract")
            .arg(&input)
            .args([
                "--device",
                "gfx942:sramecc+:xnack-",
                "--device",
                "gfx940:sramecc+:xnack-",
            ])
            .arg("-o")
            .arg(&out),
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert!(
        stdout.contains("gfx942:sramecc+:xnack- loads it natively"),
        "{stdout}"
    );
    assert!(
        stdout
            .contains("hip gfx940 4232 bytes (bundle 1: gfx940:sramecc+:xnack- loads it natively)"),
        "{stdout}"
    );
    assert_eq!(stderr, "");
}
