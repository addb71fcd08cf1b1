//! The entries of CUDA fat binaries, read against what NVIDIA's cuobjdump extracted from the
//! same samples (`samples/cuda/make.sh`): plain, zstd and LZ-compressed entries, arch-specific
//! and family cubins.

use crate::util::samples_dir;
use object::{Object, ObjectSection};
use offload::format::cuda_fatbin::{entries, split, write_kept, Compression, Entry, EntryKind};

/// The entries of every fat binary in the `.nv_fatbin` of `object_bytes`.
fn all_entries(section: &[u8]) -> Vec<(usize, Entry<'_>)> {
    split(section)
        .flat_map(|found| {
            let (at, fatbin) = found.unwrap();
            entries(fatbin).map(move |e| (at, e.unwrap()))
        })
        .collect()
}

/// cuobjdump's name for an entry of the `stem` object: numbered per kind, in order; a family
/// cubin (`sm_100f`) under its SM alone.
fn cuobjdump_name(stem: &str, entry: &Entry<'_>, numbers: &mut (usize, usize)) -> String {
    let sm = entry.sm();
    let sm = sm.strip_suffix('f').unwrap_or(&sm);
    match entry.kind {
        EntryKind::Elf => {
            numbers.0 += 1;
            format!("{stem}.{}.{sm}.cubin", numbers.0)
        }
        EntryKind::Ptx => {
            numbers.1 += 1;
            format!("{stem}.{}.{sm}.ptx", numbers.1)
        }
        EntryKind::Other(kind) => panic!("kind {kind} in {stem}"),
    }
}

/// The `.nv_fatbin` of the sample object `name`.
fn fatbin_section(name: &str) -> Vec<u8> {
    let bytes = std::fs::read(samples_dir().join("cuda").join(name)).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let section = file.section_by_name(".nv_fatbin").unwrap();
    section.data().unwrap().to_vec()
}

#[test]
fn every_entry_reads_as_cuobjdump_extracts_it() {
    let cases: [(&str, &[(&str, Compression)]); 4] = [
        (
            "gencode",
            &[
                ("sm_80", Compression::None),
                ("sm_90", Compression::None),
                ("sm_90", Compression::None),
            ],
        ),
        (
            "gencode-zstd",
            &[
                ("sm_80", Compression::Zstd),
                ("sm_90", Compression::Zstd),
                ("sm_90", Compression::Zstd),
            ],
        ),
        (
            "gencode-lz",
            &[
                ("sm_80", Compression::None),
                ("sm_90", Compression::None),
                ("sm_90", Compression::Lz),
            ],
        ),
        (
            "arch-specific",
            &[
                ("sm_90a", Compression::None),
                ("sm_90a", Compression::None),
                ("sm_100f", Compression::None),
                ("sm_120", Compression::None),
            ],
        ),
    ];
    for (stem, expected) in cases {
        let section = fatbin_section(&format!("{stem}.o"));
        let found = all_entries(&section);
        let seen: Vec<(String, Compression)> = found
            .iter()
            .map(|(_, e)| (e.sm(), e.compression()))
            .collect();
        let want: Vec<(String, Compression)> = expected
            .iter()
            .map(|(sm, c)| (sm.to_string(), *c))
            .collect();
        assert_eq!(seen, want, "{stem}");
        let extracted = samples_dir().join("cuda/extracted").join(stem);
        let mut numbers = (0, 0);
        for (_, entry) in &found {
            let name = cuobjdump_name(stem, entry, &mut numbers);
            let want = std::fs::read(extracted.join(&name)).unwrap();
            let got = entry.contents(1 << 30).unwrap();
            assert!(
                *got == want[..],
                "{name}: {} bytes, cuobjdump {}",
                got.len(),
                want.len()
            );
        }
        assert_eq!(
            std::fs::read_dir(&extracted).unwrap().count(),
            found.len(),
            "{stem}"
        );
    }
}

#[test]
fn kept_entries_are_written_back_as_they_were_stored() {
    let section = fatbin_section("gencode-zstd.o");
    let (_, fatbin) = split(&section).next().unwrap().unwrap();
    let found: Vec<Entry<'_>> = entries(fatbin).map(Result::unwrap).collect();
    // All of them: the same bytes.
    assert_eq!(write_kept(fatbin, &found), fatbin);
    // The sm_90 cubin alone: the header's size follows, the entry is as stored.
    let kept: Vec<Entry<'_>> = found
        .iter()
        .copied()
        .filter(|e| e.kind == EntryKind::Elf && e.arch == 90)
        .collect();
    let written = write_kept(fatbin, &kept);
    let again: Vec<Entry<'_>> = entries(&written).map(Result::unwrap).collect();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].sm(), "sm_90");
    let want =
        std::fs::read(samples_dir().join("cuda/extracted/gencode-zstd/gencode-zstd.2.sm_90.cubin"))
            .unwrap();
    assert!(*again[0].contents(1 << 30).unwrap() == want[..]);
    assert_eq!(written.len(), 16 + kept[0].size);
}

#[test]
fn damaged_entries_are_errors_at_their_offsets() {
    let section = fatbin_section("gencode-lz.o");
    let (_, fatbin) = split(&section).next().unwrap().unwrap();
    let found: Vec<Entry<'_>> = entries(fatbin).map(Result::unwrap).collect();
    let ptx = found[2];
    assert_eq!(ptx.compression(), Compression::Lz);
    // The inflated size one byte larger: the stream ends short of it.
    let mut bytes = fatbin.to_vec();
    let size_at = ptx.offset + 56;
    bytes[size_at] += 1;
    let damaged: Vec<Entry<'_>> = entries(&bytes).map(Result::unwrap).collect();
    let e = damaged[2].contents(1 << 30).unwrap_err();
    assert_eq!(e.offset, (ptx.offset + ptx.header.len()) as u64);
    assert!(e.to_string().contains("inflates to"), "{e}");
    // More than the limit: refused before inflating.
    let e = ptx.contents(10).unwrap_err();
    assert!(
        e.to_string().contains("more than the limit of 10 bytes"),
        "{e}"
    );
    // A payload size past the end: the walk ends with an error at that field.
    let mut bytes = fatbin.to_vec();
    let second = found[1].offset;
    bytes[second + 8..second + 16].copy_from_slice(&u64::MAX.to_le_bytes());
    let walked: Vec<_> = entries(&bytes).collect();
    assert_eq!(walked.len(), 2);
    let e = walked[1].as_ref().unwrap_err();
    assert_eq!(e.offset, (second + 8) as u64);
    assert!(
        e.to_string()
            .contains("runs past the end of its fat binary"),
        "{e}"
    );
    // Every cut of the fat binary walks to an end without a panic.
    for len in 0..fatbin.len() {
        for entry in entries(&fatbin[..len]).flatten() {
            let _ = entry.contents(1 << 20);
        }
    }
}
