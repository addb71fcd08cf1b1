//! Device code a program keeps as data of its own (`samples/embedded/`): found by its magic in
//! the sections that hold data, and only there. Sections of machine code, symbols, strings,
//! notes, debug information, relocations and unwind tables are not searched, in ELF files
//! and in PE images; an ELF file without section headers has its loadable segments searched;
//! a large section of code is not read, and a large section of data is searched without
//! holding it in memory.

use std::io::BufWriter;
use std::path::{Path, PathBuf};

use object::elf;
use object::read::elf::{FileHeader, SectionHeader};
use object::Object;
use serde_json::Value;

use crate::hostile_streams::run_measured;
use crate::util::{offload, samples_dir, text_output};

fn sample(name: &str) -> PathBuf {
    samples_dir().join("embedded").join(name)
}

/// `offload ls FILE`, which must succeed: its table.
fn table(file: &Path) -> String {
    let (code, out, err) = text_output(offload().arg("ls").arg(file));
    assert_eq!(code, 0, "{}: {err}", file.display());
    assert_eq!(err, "", "{}", file.display());
    out
}

/// `offload ls --json FILE`: its rows.
fn rows(file: &Path) -> Vec<Value> {
    let (code, out, err) = text_output(offload().args(["ls", "--json"]).arg(file));
    assert_eq!(code, 0, "{}: {err}", file.display());
    serde_json::from_str(&out).unwrap()
}

/// The table of `kernel.bundle`'s three entries, found in `file` at `place`: the host entry
/// and the gfx1100 code object at `first`, the gfx90a one at `first + 0x1000`.
fn kernel_table(file: &Path, place: &str, first: u64) -> String {
    let f = file.display();
    let second = first + 0x1000;
    format!(
        "#  KIND    ARCH     TRIPLE                    PRODUCER  SIZE  WHERE\n\
         0  bundle  -        x86_64-unknown-linux-gnu  host         0  {f} {place}@{first:#x}\n\
         1  bundle  gfx1100  amdgcn-amd-amdhsa         hip       3928  {f} {place}@{first:#x}\n\
         2  bundle  gfx90a   amdgcn-amd-amdhsa         hip       4712  {f} {place}@{second:#x}\n"
    )
}

#[test]
fn a_bundle_in_rodata_put_there_by_incbin_is_listed() {
    let file = sample("incbin-app");
    assert_eq!(table(&file), kernel_table(&file, ".rodata ", 0x3040));
    // The bytes listed are the bundle's entries, where kernel.bundle has them.
    let bundle = std::fs::read(sample("kernel.bundle")).unwrap();
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(&bytes[0x2040..0x2040 + bundle.len()], &bundle[..]);
}

#[test]
fn a_compressed_bundle_in_an_xxd_array_in_data_is_listed() {
    let file = sample("xxd-app");
    let f = file.display();
    assert_eq!(
        table(&file),
        format!(
            "#  KIND    ARCH     TRIPLE                    PRODUCER  SIZE  WHERE\n\
             0  bundle  -        x86_64-unknown-linux-gnu  host         0  {f} .data (compressed)\n\
             1  bundle  gfx1100  amdgcn-amd-amdhsa         hip       3928  {f} .data (compressed)\n\
             2  bundle  gfx90a   amdgcn-amd-amdhsa         hip       4712  {f} .data (compressed)\n"
        )
    );
    let compressed = std::fs::read(sample("kernel-z.bundle")).unwrap();
    for row in rows(&file) {
        assert_eq!(row["section"], ".data");
        assert_eq!(row["compressed_bundle"]["offset"], 0x990, "{row}");
        assert_eq!(row["compressed_bundle"]["size"], compressed.len(), "{row}");
    }
}

#[test]
fn without_section_headers_the_loadable_segments_are_searched() {
    let file = sample("incbin-app-nosections");
    let data = std::fs::read(&file).unwrap();
    let elf = object::read::elf::ElfFile64::<object::Endianness>::parse(&*data).unwrap();
    assert_eq!(elf.sections().count(), 0, "the sample has section headers");
    assert_eq!(table(&file), kernel_table(&file, "", 0x3040));
}

#[test]
fn a_bundle_in_code_debug_strings_or_a_note_is_not_listed() {
    // The same bundle in .text, .rodata, .debug_str and .note.decoy: only the one in .rodata
    // is a program's data.
    let file = sample("decoys.o");
    assert_eq!(table(&file), kernel_table(&file, ".rodata ", 0x42c0));
    let (code, _, err) = text_output(
        offload()
            .arg("ls")
            .arg(&file)
            .env("OFFLOAD_LOG", "offload=trace"),
    );
    assert_eq!(code, 0, "{err}");
    for (section, holds) in [
        (".text", "machine code"),
        (".debug_str", "debug information"),
        (".note.decoy", "notes"),
    ] {
        assert!(
            err.lines()
                .any(|l| l.contains(&format!("not searched: {holds}"))
                    && l.contains(&format!("section=\"{section}\""))),
            "{section}: {err}"
        );
    }
    // What is not listed is not extracted either: one gfx90a code object, not four.
    let out = tempfile::tempdir().unwrap();
    let (code, _, err) = text_output(
        offload()
            .args(["extract", "--arch", "gfx90a", "-q", "-o"])
            .arg(out.path())
            .arg(&file),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(crate::util::file_names(out.path()).len(), 1);
}

type ElfSectionHeader = elf::SectionHeader64<object::Endianness>;

/// A change made to a section header.
type HeaderChange<'a> = &'a dyn Fn(&mut ElfSectionHeader);

/// The index and header of the section `name` of `bytes`, an ELF64 file.
fn elf_section(bytes: &[u8], name: &str) -> (usize, ElfSectionHeader) {
    let header = elf::FileHeader64::<object::Endianness>::parse(bytes).unwrap();
    let endian = header.endian().unwrap();
    let sections = header.sections(endian, bytes).unwrap();
    let (index, found) = sections
        .iter()
        .enumerate()
        .find(|(_, s)| sections.section_name(endian, s).unwrap() == name.as_bytes())
        .unwrap();
    (index, *found)
}

/// `bytes` (an ELF64 file) with the header of its section `name` changed by `change`.
fn with_section_header(bytes: &[u8], name: &str, change: HeaderChange<'_>) -> Vec<u8> {
    let (index, mut header) = elf_section(bytes, name);
    change(&mut header);
    let file = elf::FileHeader64::<object::Endianness>::parse(bytes).unwrap();
    let size = size_of::<ElfSectionHeader>();
    let at = file.e_shoff(file.endian().unwrap()) as usize + index * size;
    let mut out = bytes.to_vec();
    out[at..at + size].copy_from_slice(object::pod::bytes_of(&header));
    out
}

#[test]
fn elf_sections_of_code_strings_notes_or_unwind_tables_are_not_searched_whatever_they_hold() {
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read(sample("incbin-app")).unwrap();
    let endian = object::Endianness::Little;
    // The name of a section of unwind tables the program has, to give .rodata.
    let eh_frame = elf_section(&original, ".eh_frame").1.sh_name(endian);
    let code = |h: &mut ElfSectionHeader| {
        let flags = h.sh_flags.get(endian) | elf::SHF_EXECINSTR;
        h.sh_flags.set(endian, flags);
    };
    let strings = |h: &mut ElfSectionHeader| h.sh_type.set(endian, elf::SHT_STRTAB);
    let notes = |h: &mut ElfSectionHeader| h.sh_type.set(endian, elf::SHT_NOTE);
    let unwind = |h: &mut ElfSectionHeader| h.sh_name.set(endian, eh_frame);
    let changes: [(&str, HeaderChange<'_>); 4] = [
        ("code", &code),
        ("strings", &strings),
        ("notes", &notes),
        ("unwind", &unwind),
    ];
    for (what, change) in changes {
        let path = dir.path().join(what);
        std::fs::write(&path, with_section_header(&original, ".rodata", change)).unwrap();
        assert_eq!(rows(&path), Vec::<Value>::new(), "{what}");
    }
    // The same bytes with the header unchanged: the bundle is found.
    let path = dir.path().join("unchanged");
    std::fs::write(&path, with_section_header(&original, ".rodata", &|_| {})).unwrap();
    assert_eq!(rows(&path).len(), 3);
}

/// `bytes` (a PE image) with its section `from` renamed `to` (at most 8 bytes), and its
/// characteristics set to `characteristics` when given.
fn with_pe_section(
    bytes: &[u8],
    from: &str,
    to: &str,
    characteristics: Option<object::pe::SectionFlags>,
) -> Vec<u8> {
    use object::pe::ImageSectionHeader;
    let pe = object::read::pe::PeFile64::parse(bytes).unwrap();
    let table = pe.section_table();
    let (index, found) = table
        .iter()
        .enumerate()
        .find(|(_, s)| s.raw_name() == from.as_bytes())
        .unwrap();
    let mut changed = *found;
    changed.name = [0; 8];
    changed.name[..to.len()].copy_from_slice(to.as_bytes());
    if let Some(value) = characteristics {
        changed.characteristics.set(object::LittleEndian, value);
    }
    let start = table.iter().next().unwrap() as *const ImageSectionHeader as usize;
    let at = start - bytes.as_ptr() as usize + index * size_of::<ImageSectionHeader>();
    let mut out = bytes.to_vec();
    out[at..at + size_of::<ImageSectionHeader>()].copy_from_slice(object::pod::bytes_of(&changed));
    out
}

#[test]
fn pe_sections_of_code_relocations_or_unwind_tables_are_not_searched() {
    use object::pe::{IMAGE_SCN_CNT_CODE, IMAGE_SCN_MEM_EXECUTE, IMAGE_SCN_MEM_READ};
    let dir = tempfile::tempdir().unwrap();
    let original = std::fs::read(samples_dir().join("linked/hip-app.exe")).unwrap();
    assert_eq!(rows(&samples_dir().join("linked/hip-app.exe")).len(), 5);
    let code = IMAGE_SCN_CNT_CODE | IMAGE_SCN_MEM_EXECUTE | IMAGE_SCN_MEM_READ;
    // .hip_fat renamed: read-only data of another name, searched by magic; resources too.
    for (to, characteristics, found) in [
        (".blob", None, 5),
        (".rsrc", None, 5),
        (".blob", Some(code), 0),
        (".reloc", None, 0),
        (".pdata", None, 0),
        (".xdata", None, 0),
    ] {
        let bytes = with_pe_section(&original, ".hip_fat", to, characteristics);
        let path = dir.path().join(format!("{}-{}.exe", &to[1..], found));
        std::fs::write(&path, bytes).unwrap();
        let rows = rows(&path);
        assert_eq!(rows.len(), found, "{to} {characteristics:?}");
        assert!(rows.iter().all(|r| r["section"] == to), "{rows:?}");
    }
}

#[test]
fn a_large_text_section_is_not_read_and_a_large_data_section_not_held() {
    use object::write::{Object as Writer, StreamingBuffer};
    const TEXT: usize = 64 << 20;
    const RODATA: usize = 32 << 20;
    let dir = tempfile::tempdir().unwrap();
    let bundle = std::fs::read(sample("kernel.bundle")).unwrap();
    // Machine code that is bundle after bundle: each would be listed if .text were searched.
    let text: Vec<u8> = bundle.iter().copied().cycle().take(TEXT).collect();
    // Data with no magic in it but one bundle at its end.
    let mut rodata: Vec<u8> = b"constant data "
        .iter()
        .copied()
        .cycle()
        .take(RODATA)
        .collect();
    rodata.extend_from_slice(&bundle);
    let mut writer = Writer::new(
        object::BinaryFormat::Elf,
        object::Architecture::X86_64,
        object::Endianness::Little,
    );
    let text_id = writer.add_section(Vec::new(), b".text".to_vec(), object::SectionKind::Text);
    writer.set_section_data(text_id, text, 16);
    let rodata_id = writer.add_section(
        Vec::new(),
        b".rodata".to_vec(),
        object::SectionKind::ReadOnlyData,
    );
    writer.set_section_data(rodata_id, rodata, 16);
    let path = dir.path().join("large.o");
    let mut out = StreamingBuffer::new(BufWriter::new(std::fs::File::create(&path).unwrap()));
    writer.emit(&mut out).unwrap();
    out.result().unwrap();
    drop(out);

    let (code, out, err) = text_output(
        offload()
            .args(["ls", "--json"])
            .arg(&path)
            .env("OFFLOAD_LOG", "offload=trace"),
    );
    assert_eq!(code, 0, "{err}");
    let images: Vec<Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(images.len(), 3, "{images:?}");
    assert!(images.iter().all(|i| i["section"] == ".rodata"));
    assert!(
        err.contains(&format!(
            "not searched: machine code section=\".text\" size={TEXT}"
        )),
        "{err}"
    );
    let searched = format!("sections read searched={} ", RODATA + bundle.len());
    assert!(err.contains(&searched), "{err}");

    // The 32 MiB of .rodata are searched a window at a time, each window's pages given back:
    // the program never holds the section, let alone the 96 MiB file.
    let (code, stderr, peak) = run_measured(dir.path(), &["ls", "large.o"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(peak > 0, "the program was not measured");
    crate::util::visible(&format!(
        "ls of a 96 MiB object peaked at {} MiB",
        peak >> 20
    ));
    assert!(peak < RODATA as u64, "ls peaked at {} MiB", peak >> 20);
}
