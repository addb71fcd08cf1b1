//! Inputs made to cost far more than their bytes: bitcode whose attribute walk never ends,
//! offload binaries whose entries all point at one nested binary or share one image, data
//! holding magic after magic (bitcode blocks, PTX directives), and bare images put one after
//! another. Each must cost work that follows its bytes, and list what it holds.
//!
//! The crafted shapes are also seeds of the fuzz targets (`fuzz/seeds/scan`,
//! `fuzz/seeds/offload_binary`): `OFFLOAD_WRITE_SEEDS=1` writes them.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use offload::llvm::bitcode::writer::BitstreamWriter;
use serde_json::Value;

use crate::util::{offload, root, samples_dir};

/// What a run gave: its exit code (-1 for a signal), its two streams, how long it took.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Runs `offload ARGS` in `dir`, its output in files, killing it after `secs` seconds: a run
/// that takes longer fails the test, naming `what`.
fn run_within(dir: &Path, args: &[&str], secs: u64, what: &str) -> Ran {
    let (out, err) = (dir.join(".out"), dir.join(".err"));
    let mut child = offload()
        .current_dir(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: no answer in {secs} s");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let took = start.elapsed();
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    let ran = Ran {
        code: status.code().unwrap_or(-1),
        stdout: read(&out),
        stderr: read(&err),
        took,
    };
    std::fs::remove_file(out).unwrap();
    std::fs::remove_file(err).unwrap();
    ran
}

/// `offload ls --json FILE` in `dir` within `secs` seconds, which must succeed: its rows.
fn listed_within(dir: &Path, file: &str, secs: u64) -> Vec<Value> {
    let ran = run_within(dir, &["ls", "--json", file], secs, file);
    assert_eq!(ran.code, 0, "{file}: {}", ran.stderr);
    serde_json::from_str(&ran.stdout).unwrap()
}

/// An x86-64 object whose `.rodata` is `data`.
fn object_with_rodata(data: &[u8]) -> Vec<u8> {
    let mut writer = object::write::Object::new(
        object::BinaryFormat::Elf,
        object::Architecture::X86_64,
        object::Endianness::Little,
    );
    let rodata = writer.add_section(
        Vec::new(),
        b".rodata".to_vec(),
        object::SectionKind::ReadOnlyData,
    );
    writer.set_section_data(rodata, data.to_vec(), 16);
    writer.write().unwrap()
}

/// The top-level blocks of the bitcode `data` as LLVM writes them (block IDs below 128,
/// abbreviation widths below 8: a header word, then a length word): each block's ID and
/// bytes.
fn top_level_blocks(data: &[u8]) -> Vec<(u32, &[u8])> {
    let word = |at: usize| u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
    let mut blocks = Vec::new();
    let mut at = 4;
    while at + 8 <= data.len() {
        let id = (word(at) >> 2) & 0x7f;
        let end = at + 8 + 4 * word(at + 4) as usize;
        blocks.push((id, &data[at..end]));
        at = end;
    }
    blocks
}

/// Device bitcode (the gfx90a sample's identification, symbol table and string table) whose
/// module holds one function attribute group: a list of ranges (kind 8) of 2^63 - 2 ranges,
/// whose operand count `4 + 2 * count` wraps to 0 in 64 bits.
pub fn wrapping_ranges_bitcode() -> Vec<u8> {
    const MODULE: u64 = 8;
    const PARAMATTR_GROUP: u64 = 10;
    let sample = std::fs::read(root().join("samples/bitcode/device-gfx90a.bc")).unwrap();
    let mut module = BitstreamWriter::new(*b"BC\xc0\xde");
    module.enter_block(MODULE, 3);
    module.enter_block(PARAMATTR_GROUP, 3);
    module.record(3, &[1, 0xffff_ffff, 8, 0, (1 << 63) - 2, 32, 1, 2]);
    module.end_block().unwrap();
    module.end_block().unwrap();
    let module = module.finish().to_bytes(|_| &[]);
    let mut out = sample[..4].to_vec();
    for (id, block) in top_level_blocks(&sample) {
        match id {
            8 => out.extend_from_slice(&module[4..]),
            _ => out.extend_from_slice(block),
        }
    }
    out
}

#[test]
fn bitcode_whose_list_of_ranges_wraps_is_listed_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let bitcode = wrapping_ranges_bitcode();
    assert!(bitcode.len() < 4096, "{} bytes", bitcode.len());
    std::fs::write(dir.path().join("k.bc"), &bitcode).unwrap();
    let mut padded = vec![0u8; 64];
    padded.extend_from_slice(&bitcode);
    std::fs::write(dir.path().join("k.o"), object_with_rodata(&padded)).unwrap();
    for file in ["k.bc", "k.o"] {
        let rows = listed_within(dir.path(), file, 30);
        assert_eq!(rows.len(), 1, "{file}: {rows:?}");
        assert_eq!(rows[0]["offload_kind"], "bitcode", "{file}");
        assert_eq!(rows[0]["triple"], "amdgcn-amd-amdhsa", "{file}");
        assert_eq!(rows[0]["size"], bitcode.len() as u64, "{file}");
    }
    std::fs::create_dir(dir.path().join("tree")).unwrap();
    std::fs::write(dir.path().join("tree/k.bc"), &bitcode).unwrap();
    let args = [
        "strip",
        "-r",
        "tree",
        "--keep",
        "gfx90a",
        "--prune",
        "--in-place",
    ];
    let ran = run_within(dir.path(), &args, 30, "strip --prune");
    assert_eq!(ran.code, 0, "{}{}", ran.stdout, ran.stderr);
    // It names no processor: kept, as every bare image that names none is.
    assert_eq!(
        std::fs::read(dir.path().join("tree/k.bc")).unwrap(),
        bitcode
    );
}

/// The strings every crafted offload binary entry has: `triple` and `arch`.
const STRINGS: &[u8] = b"triple\0amdgcn-amd-amdhsa\0arch\0gfx90a\0";

fn put(out: &mut Vec<u8>, values: &[u64], width: usize) {
    for v in values {
        out.extend_from_slice(&v.to_le_bytes()[..width]);
    }
}

fn pad8(out: &mut Vec<u8>) {
    out.resize(out.len().next_multiple_of(8), 0);
}

/// An offload binary of `version` (2, or 3 with an inflated size of 0) whose `count` entries
/// all point at one `image` and share one table of two string entries.
fn shared_image_binary(version: u32, count: u64, image: &[u8]) -> Vec<u8> {
    let header = if version == 3 { 40 } else { 32 };
    let strings_at = header + 40 * count;
    let text_at = strings_at + 2 * 24;
    let image_at = (text_at + STRINGS.len() as u64).next_multiple_of(8);
    let size = (image_at + image.len() as u64).next_multiple_of(8);
    let mut out = b"\x10\xff\x10\xad".to_vec();
    put(&mut out, &[u64::from(version)], 4);
    put(&mut out, &[size, header, count], 8);
    if version == 3 {
        put(&mut out, &[0], 8);
    }
    for _ in 0..count {
        // An object image of OpenMP, no flags.
        put(&mut out, &[1, 1], 2);
        put(&mut out, &[0], 4);
        put(&mut out, &[strings_at, 2, image_at, image.len() as u64], 8);
    }
    put(
        &mut out,
        &[text_at, text_at + 7, 17, text_at + 25, text_at + 30, 6],
        8,
    );
    out.extend_from_slice(STRINGS);
    pad8(&mut out);
    out.extend_from_slice(image);
    pad8(&mut out);
    assert_eq!(out.len() as u64, size);
    out
}

/// Version 2 offload binaries `depth` deep: each of the `fanout` entries of each points at
/// the one binary below it; the innermost's entries at one small image.
pub fn nested_binaries(fanout: u64, depth: usize) -> Vec<u8> {
    let mut binary = shared_image_binary(2, fanout, b"\x7fELF image bytes");
    for _ in 1..depth {
        binary = shared_image_binary(2, fanout, &binary);
    }
    binary
}

#[test]
fn nested_binaries_each_entry_points_at_are_read_once() {
    const FANOUT: u64 = 8;
    const DEPTH: usize = 7;
    let dir = tempfile::tempdir().unwrap();
    let binary = nested_binaries(FANOUT, DEPTH);
    assert!(binary.len() < 16 << 10, "{} bytes", binary.len());
    std::fs::write(dir.path().join("nested.bin"), &binary).unwrap();
    // Read entry by entry, 8^7 = 2 million rows; read once each, the first entry of each
    // binary is what it holds, the 7 others point at bytes already read.
    let rows = listed_within(dir.path(), "nested.bin", 60);
    let expected = (DEPTH - 1) * (FANOUT as usize - 1) + FANOUT as usize;
    assert_eq!(rows.len(), expected);
    let images = rows
        .iter()
        .filter(|r| r["size"] == b"\x7fELF image bytes".len() as u64)
        .count();
    assert_eq!(images, FANOUT as usize);
}

/// A compressed version 3 offload binary of `count` entries sharing one image and one
/// string table: a few kilobytes that inflate to 40 bytes per entry.
pub fn shared_image_compressed(count: u64) -> Vec<u8> {
    let plain = shared_image_binary(3, count, b"\x7fELF one image");
    let (head, body) = plain.split_at(40);
    let compressed = zstd::bulk::compress(body, 3).unwrap();
    let size = 40 + compressed.len() as u64;
    let mut out = head.to_vec();
    out[8..16].copy_from_slice(&size.to_le_bytes());
    out[32..40].copy_from_slice(&(plain.len() as u64).to_le_bytes());
    out.extend_from_slice(&compressed);
    pad8(&mut out);
    out
}

#[test]
fn a_compressed_binary_of_a_million_entries_sharing_one_image_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let binary = shared_image_compressed(1 << 20);
    assert!(binary.len() < 16 << 10, "{} bytes", binary.len());
    std::fs::write(dir.path().join("shared.bin"), &binary).unwrap();
    let ran = run_within(dir.path(), &["ls", "shared.bin"], 30, "ls shared.bin");
    assert_ne!(ran.code, 0, "{}", ran.stdout);
    assert!(
        ran.stderr.contains(
            "shared.bin': offset 0x18: offload binary declares 1048576 entries, more than \
             the 65536 a binary is read with"
        ),
        "{}",
        ran.stderr
    );
    // A few entries sharing one image are listed, each.
    std::fs::write(dir.path().join("few.bin"), shared_image_compressed(1000)).unwrap();
    let rows = listed_within(dir.path(), "few.bin", 30);
    assert_eq!(rows.len(), 1000);
    assert!(rows.iter().all(|r| r["arch"] == "gfx90a"), "{:?}", rows[0]);
}

/// `blocks` blocks of 12 bytes, each the bitcode magic, the header of an identification
/// block, and a length of one word: the walk of each magic's top-level blocks goes on
/// through every block after it, the next magic being the body of the block before.
pub fn bitcode_magic_chain(blocks: usize) -> Vec<u8> {
    let header: u32 = 1 | (13 << 2) | (2 << 10);
    let mut out = Vec::with_capacity(12 * blocks);
    for _ in 0..blocks {
        out.extend_from_slice(b"BC\xc0\xde");
        out.extend_from_slice(&header.to_le_bytes());
        out.extend_from_slice(&1u32.to_le_bytes());
    }
    out
}

/// `.version ` over and over, `len` bytes of it: each is a PTX directive whose comments
/// are looked for before it.
pub fn ptx_directives(len: usize) -> Vec<u8> {
    b".version ".iter().copied().cycle().take(len).collect()
}

/// Comment lines, each naming a `.version`: each directive's comments run on to the end.
pub fn ptx_commented_directives(len: usize) -> Vec<u8> {
    let mut out = b"\0".to_vec();
    out.extend(b"// .version 1\n".iter().copied().cycle().take(len));
    out
}

#[test]
fn data_of_magic_after_magic_is_searched_in_time_that_follows_its_bytes() {
    const MEGABYTE: usize = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    let bitcode = bitcode_magic_chain(MEGABYTE / 12);
    let found = |file: &str, data: &[u8]| {
        std::fs::write(dir.path().join(file), object_with_rodata(data)).unwrap();
        let ran = run_within(dir.path(), &["ls", "--json", file], 60, file);
        assert_eq!(ran.code, 0, "{file}: {}", ran.stderr);
        let rows: Vec<Value> = serde_json::from_str(&ran.stdout).unwrap();
        (rows.len(), ran.took)
    };
    // Each took minutes, read again from each magic on; read once, well under a second
    // optimized, a few seconds in a build without optimisations.
    for (file, data) in [
        ("bitcode.o", bitcode),
        ("ptx.o", ptx_directives(MEGABYTE)),
        ("comments.o", ptx_commented_directives(MEGABYTE)),
    ] {
        let (rows, took) = found(file, &data);
        assert_eq!(rows, 0, "{file}");
        crate::util::visible(&format!("ls of 1 MiB of magics ({file}) took {took:?}"));
        assert!(took < Duration::from_secs(20), "{file}: {took:?}");
    }
}

#[test]
fn ptx_after_many_directives_is_still_found() {
    let dir = tempfile::tempdir().unwrap();
    let mut data = ptx_directives(100_000);
    data.extend_from_slice(b"\0// c\n.version 8.8\n.target sm_90\n.address_size 64\n\0");
    let mut commented = ptx_commented_directives(100_000);
    commented.extend_from_slice(b".version 8.8\n.target sm_80\n\0");
    for (file, data, target) in [
        ("ptx.o", data, "compute_90"),
        ("comments.o", commented, "compute_80"),
    ] {
        std::fs::write(dir.path().join(file), object_with_rodata(&data)).unwrap();
        let rows = listed_within(dir.path(), file, 30);
        assert_eq!(rows.len(), 1, "{file}: {rows:?}");
        assert_eq!(rows[0]["arch"], target, "{file}");
    }
}

/// A gfx906 code object followed by `rest`.
fn after_gfx906(rest: &[u8]) -> (Vec<u8>, usize) {
    let mut data = std::fs::read(samples_dir().join("dev/vadd-gfx906.hsaco")).unwrap();
    let first = data.len();
    data.extend_from_slice(rest);
    (data, first)
}

#[test]
fn images_after_a_bare_image_that_starts_a_file_are_listed_extracted_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let gfx90a = std::fs::read(samples_dir().join("dev/vadd-gfx90a.hsaco")).unwrap();
    let bundle = std::fs::read(samples_dir().join("embedded/kernel.bundle")).unwrap();
    let (two, first) = after_gfx906(&gfx90a);
    let (bundled, _) = after_gfx906(&bundle);
    std::fs::write(dir.path().join("two.hsaco"), &two).unwrap();
    std::fs::write(dir.path().join("bundled.o"), &bundled).unwrap();

    let rows = listed_within(dir.path(), "two.hsaco", 30);
    let arches: Vec<&str> = rows.iter().map(|r| r["arch"].as_str().unwrap()).collect();
    assert_eq!(arches, ["gfx906", "gfx90a"]);
    assert_eq!(rows[1]["offset"], first as u64);
    let rows = listed_within(dir.path(), "bundled.o", 30);
    let arches: Vec<&str> = rows.iter().map(|r| r["arch"].as_str().unwrap()).collect();
    assert_eq!(arches, ["gfx906", "", "gfx1100", "gfx90a"]);

    let ran = run_within(
        dir.path(),
        &["extract", "--arch", "gfx90a", "two.hsaco", "-o", "out"],
        30,
        "extract",
    );
    assert_eq!(ran.code, 0, "{}{}", ran.stdout, ran.stderr);
    let written: Vec<_> = std::fs::read_dir(dir.path().join("out"))
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    assert_eq!(written, [gfx90a]);

    // Not bare images only: a strip for gfx90a does not prune it.
    std::fs::create_dir(dir.path().join("tree")).unwrap();
    std::fs::write(dir.path().join("tree/bundled.o"), &bundled).unwrap();
    let args = [
        "strip",
        "-r",
        "tree",
        "--keep",
        "gfx90a",
        "--prune",
        "--in-place",
    ];
    let ran = run_within(dir.path(), &args, 30, "strip --prune");
    assert_eq!(ran.code, 0, "{}{}", ran.stdout, ran.stderr);
    let left = std::fs::read(dir.path().join("tree/bundled.o")).unwrap_or_default();
    assert!(left == bundled, "{}", ran.stdout);
    // Kept whole, nothing of it is removed, for any processor.
    assert!(
        ran.stdout
            .contains("total gfx906: 1 images, 5488 bytes of device code went to 5488"),
        "{}",
        ran.stdout
    );
}

/// The crafted inputs of this file, small enough to be fuzz seeds: per fuzz target, each
/// seed's name and bytes.
fn seeds() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    vec![
        ("scan", "wrapping-ranges.bc", wrapping_ranges_bitcode()),
        ("scan", "nested-binaries.bin", nested_binaries(8, 7)),
        (
            "scan",
            "bitcode-magic-chain.o",
            object_with_rodata(&bitcode_magic_chain(512)),
        ),
        (
            "scan",
            "ptx-directives.o",
            object_with_rodata(&ptx_directives(4096)),
        ),
        (
            "scan",
            "ptx-commented-directives.o",
            object_with_rodata(&ptx_commented_directives(4096)),
        ),
        (
            "offload_binary",
            "nested-binaries.bin",
            nested_binaries(8, 7),
        ),
        (
            "offload_binary",
            "shared-image.bin",
            shared_image_compressed(1 << 20),
        ),
    ]
}

#[test]
fn the_fuzz_seeds_hold_the_crafted_inputs() {
    for (target, name, bytes) in seeds() {
        let path = root().join("fuzz/seeds").join(target).join(name);
        if std::env::var_os("OFFLOAD_WRITE_SEEDS").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        }
        let written = std::fs::read(&path).unwrap_or_default();
        assert!(
            written == bytes,
            "{}: not as this test makes it; OFFLOAD_WRITE_SEEDS=1 writes it",
            path.display()
        );
    }
}
