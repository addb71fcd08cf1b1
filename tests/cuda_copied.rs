//! A strip of a shared library whose `.nv_fatbin` holds fat binaries with entries far larger
//! than any stretch written through memory: the kept entries, and the fat binaries kept
//! whole, are copied from the input into the output by the kernel, each into its place. The
//! result is the same from run to run on eight threads, lists exactly the entries kept, each
//! with its input's bytes, and verifies.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::{offload, succeed, tool};

/// The text of a PTX entry for `sm_ARCH`, `lines` comment lines long (about 40 bytes each).
fn ptx(arch: u32, lines: usize) -> String {
    let mut text = format!("//\n// made for a test\n//\n.version 7.8\n.target sm_{arch}\n");
    for line in 0..lines {
        writeln!(text, "// line {line:06} of entry sm_{arch}, a filler").unwrap();
    }
    text
}

/// The assembly of a CUDA fat binary `name` holding one PTX entry for each `(arch, lines)`
/// of `entries`, laid out as `samples/linked/cuda-fatbin.s` describes.
fn fatbin(name: &str, entries: &[(u32, usize)]) -> String {
    let mut s = format!(
        "\t.p2align 3\n{name}:\n\t.long 0xba55ed50\n\t.short 1\n\t.short {name}_h - {name}\n\
         \t.quad {name}_end - {name}_h\n{name}_h:\n"
    );
    for (k, &(arch, lines)) in entries.iter().enumerate() {
        let e = format!("{name}_{k}");
        write!(
            s,
            "{e}:\n\t.short 1\n\t.short 0x0101\n\t.long {e}_p - {e}\n\t.quad {e}_end - {e}_p\n\
             \t.long 0\n\t.long 0\n\t.short 8\n\t.short 7\n\t.long {arch}\n\t.long 0\n\
             \t.long 0\n\t.quad 0x11\n\t.quad 0\n\t.quad 0\n{e}_p:\n"
        )
        .unwrap();
        for line in ptx(arch, lines).lines() {
            writeln!(s, "\t.ascii \"{line}\\n\"").unwrap();
        }
        writeln!(s, "\t.byte 0\n\t.p2align 3, 0\n{e}_end:").unwrap();
    }
    writeln!(s, "{name}_end:").unwrap();
    s
}

/// Builds in `dir` a shared library whose `.nv_fatbin` holds four fat binaries, each
/// registered by a wrapper: one kept whole first, then entries for several SMs, some of
/// hundreds of KiB. `None` (a skip) without a C compiler to assemble and link it.
fn library(dir: &Path) -> Option<PathBuf> {
    let cc = tool("cc")?;
    let fatbins: [(&str, &[(u32, usize)]); 4] = [
        ("fa", &[(90, 4000)]),
        ("fb", &[(80, 3000), (90, 5000), (86, 100)]),
        ("fc", &[(90, 200), (80, 4000), (90, 2500)]),
        ("fd", &[(90, 3000)]),
    ];
    let mut s = String::from("\t.section .nv_fatbin,\"a\",@progbits\n");
    for (name, entries) in fatbins {
        s.push_str(&fatbin(name, entries));
    }
    let names: Vec<&str> = fatbins.iter().map(|(name, _)| *name).collect();
    Some(link(&cc, dir, s, &names, "big"))
}

/// Links in `dir` the shared library `libNAME.so` of the assembly `s`, which holds the fat
/// binaries `fatbins`, each registered by a wrapper in `.nvFatBinSegment`.
fn link(cc: &Path, dir: &Path, mut s: String, fatbins: &[&str], name: &str) -> PathBuf {
    s.push_str("\t.section .nvFatBinSegment,\"aw\",@progbits\n\t.p2align 3\n");
    for fatbin in fatbins {
        writeln!(
            s,
            "\t.long 0x466243b1\n\t.long 1\n\t.quad {fatbin}\n\t.quad 0"
        )
        .unwrap();
    }
    s.push_str("\t.text\n\t.globl f\nf:\n\tret\n");
    let source = format!("{name}.s");
    std::fs::write(dir.join(&source), s).unwrap();
    let lib = dir.join(format!("lib{name}.so"));
    succeed(
        Command::new(cc)
            .current_dir(dir)
            .args(["-shared", "-nostdlib", &source, "-o"])
            .arg(&lib),
    );
    lib
}

/// `(arch, payload bytes)` of every entry `ls --json` lists in `path`, in order.
fn entries(path: &Path) -> Vec<(String, Vec<u8>)> {
    let out = succeed(offload().args(["ls", "--json"]).arg(path));
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let bytes = std::fs::read(path).unwrap();
    rows.iter()
        .map(|row| {
            let at = row["offset"].as_u64().unwrap() as usize;
            let size = row["size"].as_u64().unwrap() as usize;
            let arch = row["arch"].as_str().unwrap().to_string();
            (arch, bytes[at..at + size].to_vec())
        })
        .collect()
}

#[test]
fn large_kept_entries_are_copied_into_place_the_same_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = library(dir.path()) else {
        return;
    };
    let before = entries(&lib);
    assert_eq!(before.len(), 8);
    assert!(before.iter().filter(|(_, b)| b.len() > 128 << 10).count() >= 3);
    let mut outputs = Vec::new();
    for run in 0..3 {
        let out = dir.path().join(format!("stripped-{run}.so"));
        succeed(
            offload()
                .env("RAYON_NUM_THREADS", "8")
                .args(["strip", "--keep", "compute_90"])
                .arg(&lib)
                .arg("-o")
                .arg(&out),
        );
        outputs.push(std::fs::read(&out).unwrap());
        if run == 0 {
            let after = entries(&out);
            let kept: Vec<&(String, Vec<u8>)> = before
                .iter()
                .filter(|(arch, _)| arch == "compute_90")
                .collect();
            assert_eq!(after.len(), kept.len());
            assert!(after.iter().zip(kept).all(|(a, k)| a == k));
            succeed(offload().arg("verify").arg(&out));
        }
    }
    assert!(outputs.iter().all(|o| *o == outputs[0]));
    assert!(outputs[0].len() < std::fs::metadata(&lib).unwrap().len() as usize);
}

/// Builds in `dir` a shared library whose `.nv_fatbin` (about 45 MiB, past what is packed in
/// memory) comes after 6 MiB of other read-only data: `(library, those 6 MiB)`. `None` (a
/// skip) without a C compiler.
fn library_far_in(dir: &Path) -> Option<(PathBuf, Vec<u8>)> {
    let cc = tool("cc")?;
    let data = crate::util::noise(11, 6 << 20);
    std::fs::write(dir.join("data.bin"), &data).unwrap();
    // A PTX entry's text past its first lines: 1.5 MiB of comment lines.
    let mut filler = String::new();
    while filler.len() < 3 << 19 {
        filler.push_str("// a line of an entry that is long enough to be copied\n");
    }
    std::fs::write(dir.join("filler.ptx"), filler).unwrap();
    let fatbins: [(&str, &[u32]); 4] = [
        ("fa", &[90, 80, 90, 86, 90, 80, 90]),
        ("fb", &[80, 90, 90, 86, 80, 90, 90]),
        ("fc", &[90, 80, 86, 90, 90, 80, 90]),
        ("fd", &[86, 90, 80, 90, 90, 80, 90]),
    ];
    let mut s = String::from("\t.section .rodata,\"a\",@progbits\n\t.incbin \"data.bin\"\n");
    s.push_str("\t.section .nv_fatbin,\"a\",@progbits\n");
    for (name, archs) in fatbins {
        write!(
            s,
            "\t.p2align 3\n{name}:\n\t.long 0xba55ed50\n\t.short 1\n\t.short {name}_h - {name}\n\
             \t.quad {name}_end - {name}_h\n{name}_h:\n"
        )
        .unwrap();
        for (k, arch) in archs.iter().enumerate() {
            let e = format!("{name}_{k}");
            write!(
                s,
                "{e}:\n\t.short 1\n\t.short 0x0101\n\t.long {e}_p - {e}\n\t.quad {e}_end - {e}_p\n\
                 \t.long 0\n\t.long 0\n\t.short 8\n\t.short 7\n\t.long {arch}\n\t.long 0\n\
                 \t.long 0\n\t.quad 0x11\n\t.quad 0\n\t.quad 0\n{e}_p:\n\
                 \t.ascii \"//\\n.version 7.8\\n.target sm_{arch}\\n\"\n\t.incbin \"filler.ptx\"\n\
                 \t.byte 0\n\t.p2align 3, 0\n{e}_end:\n"
            )
            .unwrap();
        }
        writeln!(s, "{name}_end:").unwrap();
    }
    let names: Vec<&str> = fatbins.iter().map(|(name, _)| *name).collect();
    Some((link(&cc, dir, s, &names, "far"), data))
}

#[test]
fn what_comes_before_the_device_code_is_copied_ahead_and_the_same_every_way() {
    // The 6 MiB before `.nv_fatbin` stay at their offsets: they are copied into the new file
    // on a thread of their own while the fat binaries are packed, and the writer steps over
    // them. Written in order to standard output (no copy ahead), in place, and to a new
    // file three times on eight threads, the bytes are the same.
    let dir = tempfile::tempdir().unwrap();
    let Some((lib, data)) = library_far_in(dir.path()) else {
        return;
    };
    let input = std::fs::read(&lib).unwrap();
    let at = input.windows(64).position(|w| w == &data[..64]).unwrap();
    let before = entries(&lib);
    assert_eq!(before.len(), 28);
    let strip = || {
        let mut command = offload();
        command
            .env("RAYON_NUM_THREADS", "8")
            .args(["strip", "--keep", "compute_90"]);
        command
    };
    let mut outputs = Vec::new();
    for run in 0..3 {
        let out = dir.path().join(format!("stripped-{run}.so"));
        let done = succeed(
            strip()
                .env("OFFLOAD_LOG", "offload=debug")
                .arg(&lib)
                .arg("-o")
                .arg(&out),
        );
        let log = String::from_utf8_lossy(&done.stderr);
        assert!(log.contains("copied ahead of the writer"), "{log}");
        outputs.push(std::fs::read(&out).unwrap());
    }
    assert!(outputs.iter().all(|o| *o == outputs[0]));
    let piped = succeed(strip().arg(&lib).args(["-o", "-"]));
    assert!(
        piped.stdout == outputs[0],
        "written in order, the bytes differ"
    );
    let in_place = dir.path().join("in-place.so");
    std::fs::copy(&lib, &in_place).unwrap();
    succeed(strip().arg("--in-place").arg(&in_place));
    assert!(std::fs::read(&in_place).unwrap() == outputs[0]);
    // The data before the device code is where it was, and exactly the entries for
    // compute_90 are left, each with its bytes.
    let out = dir.path().join("stripped-0.so");
    assert!(outputs[0][at..at + data.len()] == data[..]);
    let kept: Vec<&(String, Vec<u8>)> = before
        .iter()
        .filter(|(arch, _)| arch == "compute_90")
        .collect();
    let after = entries(&out);
    assert_eq!(after.len(), kept.len());
    assert!(after.iter().zip(kept).all(|(a, k)| a == k));
    succeed(offload().arg("verify").arg(&out));
    assert!(outputs[0].len() < input.len());
}
