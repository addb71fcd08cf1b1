//! Sections added to, removed from and given new contents in COFF objects give the bytes
//! llvm-objcopy-19 gives, and where llvm-objcopy refuses a removal or an update, so do we.
//!
//! The objects are `samples/coff/*.obj` (made by `samples/coff/make.sh`), the HIP and OpenMP
//! host objects of `samples/linked/`, and a few built here: one with more relocations than a
//! section header can count, one with a file name record padded with empty records, and one
//! whose string table is long enough for base-64 section name offsets.

use std::borrow::Cow;
use std::cell::Cell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{self, first_difference, samples_dir, visible, CountingSink};
use object::{pe, Object as _, ObjectSection as _, ObjectSymbol as _};
use offload::format::bundle::{self, Bundle as FatBinary};
use offload::host::objcopy::{add_sections, remove_sections, rewrite_sections, AddedSection};

const PREFIX: &str = "__CLANG_OFFLOAD_BUNDLE__";
const HOST: &str = "__CLANG_OFFLOAD_BUNDLE__host-x86_64-pc-windows-msvc";

/// The reference tool: LLVM 19's llvm-objcopy (a plain `llvm-objcopy` on `PATH` may be an older
/// one).
fn objcopy_tool() -> Option<PathBuf> {
    util::tool("llvm-objcopy-19")
}

fn coff_objects() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(samples_dir().join("coff"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "obj"))
        .collect();
    files.sort();
    assert!(files.len() >= 7, "samples/coff has {} objects", files.len());
    files
}

/// Runs llvm-objcopy; its output, or its error message when it fails.
fn objcopy(tool: &Path, args: &[String], input: &Path, out: &Path) -> Result<Vec<u8>, String> {
    let _ = std::fs::remove_file(out);
    let result = Command::new(tool)
        .args(args)
        .arg("--")
        .arg(input)
        .arg(out)
        .output()
        .unwrap();
    if result.status.success() {
        Ok(std::fs::read(out).unwrap())
    } else {
        Err(String::from_utf8_lossy(&result.stderr).trim().to_string())
    }
}

fn check(what: &str, expected: &[u8], ours: &[u8], failures: &mut Vec<String>) {
    if expected != ours {
        failures.push(format!("{what}: {}", first_difference(expected, ours)));
    }
}

/// Compares a removal: equal bytes when llvm-objcopy succeeds, an error when it fails.
fn check_removal(
    what: &str,
    expected: Result<Vec<u8>, String>,
    ours: Result<Vec<u8>, String>,
    failures: &mut Vec<String>,
) {
    match (expected, ours) {
        (Ok(expected), Ok(ours)) => check(what, &expected, &ours, failures),
        (Err(_), Err(_)) => {}
        (Ok(_), Err(e)) => failures.push(format!("{what}: llvm-objcopy succeeds, we fail: {e}")),
        (Err(e), Ok(_)) => failures.push(format!("{what}: llvm-objcopy fails ({e}), we succeed")),
    }
}

/// The arguments that add `sections` as clang-offload-bundler adds them.
fn add_args(sections: &[(String, PathBuf)]) -> Vec<String> {
    let mut args = Vec::new();
    for (name, path) in sections {
        args.push(format!("--add-section={name}={}", path.display()));
        args.push(format!("--set-section-flags={name}=readonly,exclude"));
    }
    args
}

fn bundle_removal_args() -> Vec<String> {
    vec!["--regex".into(), format!("--remove-section={PREFIX}.*")]
}

fn is_bundle_section(name: &[u8]) -> bool {
    name.starts_with(PREFIX.as_bytes())
}

/// A host entry and two device code objects, as the bundler adds them.
struct Bundle {
    files: Vec<(String, PathBuf)>,
    data: Vec<Vec<u8>>,
}

impl Bundle {
    fn new(dir: &Path) -> Self {
        let host = dir.join("host.bin");
        std::fs::write(&host, [0u8]).unwrap();
        let s = samples_dir();
        let files = vec![
            (HOST.to_string(), host),
            (
                format!("{PREFIX}hipv4-amdgcn-amd-amdhsa--gfx906"),
                s.join("dev/vadd-gfx906.hsaco"),
            ),
            (
                format!("{PREFIX}hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+"),
                s.join("dev/kernel-gfx90a_xnack+.hsaco"),
            ),
        ];
        let data = files
            .iter()
            .map(|(_, p)| std::fs::read(p).unwrap())
            .collect();
        Bundle { files, data }
    }

    fn sections(&self) -> Vec<AddedSection<'_>> {
        self.files
            .iter()
            .zip(&self.data)
            .map(|((name, _), data)| AddedSection { name, data })
            .collect()
    }
}

fn ours_added(input: &[u8], added: &[AddedSection<'_>]) -> Result<Vec<u8>, String> {
    add_sections(input, added)
        .map(|r| r.to_vec())
        .map_err(|e| e.to_string())
}

fn ours_removed(input: &[u8], remove: &dyn Fn(&[u8]) -> bool) -> Result<Vec<u8>, String> {
    remove_sections(input, remove)
        .map(|r| r.to_vec())
        .map_err(|e| e.to_string())
}

/// Adds a bundle to `input` and removes it again, with llvm-objcopy and with us; removes
/// bundle sections from `input` itself too.
fn compare_bundling(tool: &Path, dir: &Path, input: &Path, name: &str, failures: &mut Vec<String>) {
    let bundle = Bundle::new(dir);
    let bytes = std::fs::read(input).unwrap();
    let fat_path = dir.join("fat.obj");
    let expected = objcopy(tool, &add_args(&bundle.files), input, &fat_path)
        .unwrap_or_else(|e| panic!("llvm-objcopy cannot add sections to {name}: {e}"));
    match ours_added(&bytes, &bundle.sections()) {
        Ok(ours) => check(&format!("add to {name}"), &expected, &ours, failures),
        Err(e) => failures.push(format!("add to {name}: {e}")),
    }
    let thin_path = dir.join("thin.obj");
    for (what, source) in [("original", input), ("fat", fat_path.as_path())] {
        let expected = objcopy(tool, &bundle_removal_args(), source, &thin_path);
        let source_bytes = std::fs::read(source).unwrap();
        check_removal(
            &format!("remove bundle sections from {what} {name}"),
            expected,
            ours_removed(&source_bytes, &is_bundle_section),
            failures,
        );
    }
}

#[test]
fn adding_and_removing_bundle_sections_matches_llvm_objcopy() {
    let Some(tool) = objcopy_tool() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let objects = coff_objects();
    for input in &objects {
        let name = input.file_name().unwrap().to_string_lossy().into_owned();
        compare_bundling(&tool, dir.path(), input, &name, &mut failures);
    }
    visible(&format!(
        "objcopy (COFF): {} objects, {} differences",
        objects.len(),
        failures.len()
    ));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn removing_any_section_matches_llvm_objcopy_or_fails_as_it_does() {
    let Some(tool) = objcopy_tool() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.obj");
    let mut failures = Vec::new();
    let (mut same, mut refused) = (0, 0);
    for input in coff_objects() {
        let bytes = std::fs::read(&input).unwrap();
        let file = object::File::parse(&*bytes).unwrap();
        let mut names: Vec<String> = file
            .sections()
            .map(|s| s.name().unwrap().to_string())
            .collect();
        names.sort();
        names.dedup();
        let name = input.file_name().unwrap().to_string_lossy().into_owned();
        for section in names {
            let expected = objcopy(
                &tool,
                &[format!("--remove-section={section}")],
                &input,
                &out,
            );
            match &expected {
                Ok(_) => same += 1,
                Err(_) => refused += 1,
            }
            check_removal(
                &format!("remove {section} from {name}"),
                expected,
                ours_removed(&bytes, &|n| n == section.as_bytes()),
                &mut failures,
            );
        }
    }
    visible(&format!(
        "objcopy (COFF) removals: {same} equal, {refused} refused by both, {} differences",
        failures.len()
    ));
    assert!(
        same >= 20 && refused >= 20,
        "{same} removals, {refused} refused"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn adding_a_section_named_like_one_already_there_matches_llvm_objcopy() {
    let Some(tool) = objcopy_tool() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let s = samples_dir();
    let mut failures = Vec::new();
    for (input, names) in [
        (
            "coff/kernel-rdc-x86_64-pc-windows-msvc.obj",
            &[
                "__CLANG_OFFLOAD_BUNDLE__hip-amdgcn-amd-amdhsa--gfx906",
                ".text",
            ][..],
        ),
        (
            "coff/cxx-x86_64-pc-windows-msvc.obj",
            &[".rdata", ".data"][..],
        ),
    ] {
        let input = s.join(input);
        let bytes = std::fs::read(&input).unwrap();
        let data = dir.path().join("data.bin");
        std::fs::write(&data, b"twelve bytes").unwrap();
        let files: Vec<(String, PathBuf)> = names
            .iter()
            .map(|n| (n.to_string(), data.clone()))
            .collect();
        let expected = objcopy(
            &tool,
            &add_args(&files),
            &input,
            &dir.path().join("out.obj"),
        )
        .expect("llvm-objcopy adds the sections");
        let added: Vec<AddedSection> = names
            .iter()
            .map(|name| AddedSection {
                name,
                data: b"twelve bytes",
            })
            .collect();
        match ours_added(&bytes, &added) {
            Ok(ours) => check(
                &input.display().to_string(),
                &expected,
                &ours,
                &mut failures,
            ),
            Err(e) => failures.push(format!("{}: {e}", input.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---- objects built here --------------------------------------------------------------------

/// A section of a built object; relocations are (offset, symbol record index, type).
struct BuiltSection {
    name: &'static str,
    data: Vec<u8>,
    relocations: Vec<(u32, u32, u16)>,
}

fn section(name: &'static str, data: Vec<u8>, relocations: Vec<(u32, u32, u16)>) -> BuiltSection {
    BuiltSection {
        name,
        data,
        relocations,
    }
}

/// A symbol record of a built object.
struct BuiltSymbol {
    name: Vec<u8>,
    section: u16,
    class: u8,
    aux: Vec<[u8; 18]>,
}

/// Builds a plain x86-64 COFF object, laid out as clang lays objects out.
fn build_object(sections: &[BuiltSection], symbols: &[BuiltSymbol]) -> Vec<u8> {
    let mut strings = vec![0u8; 4];
    let mut long_name = |name: &[u8]| -> [u8; 8] {
        let mut field = [0u8; 8];
        if name.len() <= 8 {
            field[..name.len()].copy_from_slice(name);
        } else {
            field[4..].copy_from_slice(&(strings.len() as u32).to_le_bytes());
            strings.extend_from_slice(name);
            strings.push(0);
        }
        field
    };
    let mut section_names = Vec::new();
    for BuiltSection { name, .. } in sections {
        let field = long_name(name.as_bytes());
        if name.len() > 8 {
            let offset = u32::from_le_bytes(field[4..].try_into().unwrap());
            let mut f = [0u8; 8];
            let text = format!("/{offset}");
            f[..text.len()].copy_from_slice(text.as_bytes());
            section_names.push(f);
        } else {
            section_names.push(field);
        }
    }
    let symbol_names: Vec<[u8; 8]> = symbols.iter().map(|s| long_name(&s.name)).collect();
    let strings_size = strings.len() as u32;
    strings[..4].copy_from_slice(&strings_size.to_le_bytes());

    let mut at = 20 + 40 * sections.len();
    let mut headers = Vec::new();
    let mut body = Vec::new();
    for (
        BuiltSection {
            data, relocations, ..
        },
        name,
    ) in sections.iter().zip(&section_names)
    {
        headers.extend_from_slice(name);
        headers.extend_from_slice(&[0; 8]);
        headers.extend_from_slice(&(data.len() as u32).to_le_bytes());
        headers.extend_from_slice(&(at as u32).to_le_bytes());
        at += data.len();
        body.extend_from_slice(data);
        let many = relocations.len() >= 0xffff;
        let pointer = if relocations.is_empty() { 0 } else { at as u32 };
        headers.extend_from_slice(&pointer.to_le_bytes());
        headers.extend_from_slice(&[0; 4]);
        let count = if many {
            0xffff
        } else {
            relocations.len() as u16
        };
        headers.extend_from_slice(&count.to_le_bytes());
        headers.extend_from_slice(&[0; 2]);
        let flags: u32 = 0x6050_0020 | if many { 0x0100_0000 } else { 0 };
        headers.extend_from_slice(&flags.to_le_bytes());
        if many {
            body.extend_from_slice(&(relocations.len() as u32 + 1).to_le_bytes());
            body.extend_from_slice(&[0; 6]);
            at += 10;
        }
        for &(offset, symbol, typ) in relocations {
            body.extend_from_slice(&offset.to_le_bytes());
            body.extend_from_slice(&symbol.to_le_bytes());
            body.extend_from_slice(&typ.to_le_bytes());
            at += 10;
        }
    }
    let records: usize = symbols.iter().map(|s| 1 + s.aux.len()).sum();
    let mut out = Vec::new();
    out.extend_from_slice(&0x8664u16.to_le_bytes());
    out.extend_from_slice(&(sections.len() as u16).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&(at as u32).to_le_bytes());
    out.extend_from_slice(&(records as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&headers);
    out.extend_from_slice(&body);
    for (symbol, name) in symbols.iter().zip(symbol_names) {
        out.extend_from_slice(&name);
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&symbol.section.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.push(symbol.class);
        out.push(symbol.aux.len() as u8);
        for aux in &symbol.aux {
            out.extend_from_slice(aux);
        }
    }
    out.extend_from_slice(&strings);
    out
}

fn symbol(name: &[u8], section: u16, class: u8) -> BuiltSymbol {
    BuiltSymbol {
        name: name.to_vec(),
        section,
        class,
        aux: Vec::new(),
    }
}

/// A section symbol with its section definition record.
fn section_symbol(name: &[u8], section: u16) -> BuiltSymbol {
    let mut aux = [0u8; 18];
    aux[12..14].copy_from_slice(&section.to_le_bytes());
    BuiltSymbol {
        aux: vec![aux],
        ..symbol(name, section, 3)
    }
}

/// Adds a bundle and removes sections from a built object, with llvm-objcopy and with us.
fn compare_built(tool: &Path, object: &[u8], name: &str, failures: &mut Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join(format!("{name}.obj"));
    std::fs::write(&input, object).unwrap();
    compare_bundling(tool, dir.path(), &input, name, failures);
    let out = dir.path().join("out.obj");
    for section in [".data", ".text"] {
        let expected = objcopy(tool, &[format!("--remove-section={section}")], &input, &out);
        check_removal(
            &format!("remove {section} from {name}"),
            expected,
            ours_removed(object, &|n| n == section.as_bytes()),
            failures,
        );
    }
}

#[test]
fn more_relocations_than_a_section_header_counts_match_llvm_objcopy() {
    let Some(tool) = objcopy_tool() else {
        return;
    };
    let relocations: Vec<(u32, u32, u16)> = (0..70_000u32).map(|k| (k * 4 % 4096, 4, 3)).collect();
    let object = build_object(
        &[
            section(".text", vec![0xc3; 4096], relocations),
            section(".data", vec![1; 16], vec![(0, 4, 1), (8, 0, 1)]),
        ],
        &[
            section_symbol(b".text", 1),
            section_symbol(b".data", 2),
            symbol(b"external_function_with_a_long_name", 0, 2),
        ],
    );
    let mut failures = Vec::new();
    compare_built(&tool, &object, "many-relocations", &mut failures);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn file_records_and_weak_externals_match_llvm_objcopy() {
    let Some(tool) = objcopy_tool() else {
        return;
    };
    // A file name padded with two empty records, which llvm-objcopy drops; a weak external
    // whose default lies after it; an absolute static symbol with a section definition.
    let mut file = symbol(b".file", 0xfffe, 0x67);
    let mut record = [0u8; 18];
    record[..11].copy_from_slice(b"padded.file");
    file.aux = vec![record, [0; 18], [0; 18]];
    let mut weak = symbol(b"weak_symbol_with_a_long_name", 0, 0x69);
    let mut weak_aux = [0u8; 18];
    weak_aux[..4].copy_from_slice(&10u32.to_le_bytes());
    weak_aux[4..8].copy_from_slice(&3u32.to_le_bytes());
    weak.aux = vec![weak_aux];
    let object = build_object(
        &[
            section(".text", vec![0xc3; 16], vec![(0, 8, 4)]),
            section(".data", vec![2; 8], vec![(0, 10, 1)]),
        ],
        &[
            file,
            section_symbol(b".text", 1),
            section_symbol(b".data", 2),
            weak,
            symbol(b"default_for_the_weak_symbol", 1, 2),
            section_symbol(b"absolute", 0xffff),
        ],
    );
    let mut failures = Vec::new();
    compare_built(&tool, &object, "file-and-weak", &mut failures);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn section_names_past_offset_9999999_match_llvm_objcopy() {
    let Some(tool) = objcopy_tool() else {
        return;
    };
    // A symbol name of 10 MB ending in 'z' comes first in the string table, so the long
    // names of the added sections lie past offset 9999999 and are written in base 64.
    let mut huge = vec![b'a'; 10_000_000];
    huge.push(b'z');
    let object = build_object(
        &[section(".text", vec![0xc3; 16], vec![(0, 2, 4)])],
        &[section_symbol(b".text", 1), symbol(&huge, 1, 2)],
    );
    let mut failures = Vec::new();
    compare_built(&tool, &object, "huge-string-table", &mut failures);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn uninitialised_code_is_filled_with_int3_as_llvm_objcopy_does() {
    let Some(tool) = objcopy_tool() else {
        return;
    };
    // .bss made code: a section with a size and no data in the file, which llvm-objcopy
    // fills with 0xcc (int3) when it is code and with zeros when not.
    let mut object =
        std::fs::read(samples_dir().join("coff/weak-and-file-symbols-x86_64-w64-windows-gnu.obj"))
            .unwrap();
    let count = usize::from(u16::from_le_bytes([object[2], object[3]]));
    let bss = (0..count)
        .map(|i| 20 + 40 * i)
        .find(|&h| object[h..h + 8] == *b".bss\0\0\0\0")
        .expect("a .bss section");
    object[bss + 36] |= 0x20;
    let mut failures = Vec::new();
    compare_built(&tool, &object, "code-without-data", &mut failures);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn damaged_objects_give_errors_not_panics() {
    let bytes = std::fs::read(samples_dir().join("coff/cxx-x86_64-pc-windows-msvc.obj")).unwrap();
    let added = [AddedSection {
        name: HOST,
        data: &[0],
    }];
    let mut errors = 0;
    for len in 0..bytes.len() {
        if add_sections(&bytes[..len], &added).is_err() {
            errors += 1;
        }
        let _ = remove_sections(&bytes[..len], &is_bundle_section);
    }
    // Every cut loses the end of the string table, which is the end of the file.
    assert_eq!(errors, bytes.len());
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..5000 {
        let mut damaged = bytes.clone();
        for _ in 0..4 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let at = (state % damaged.len() as u64) as usize;
            damaged[at] ^= (state >> 32) as u8 | 1;
        }
        if let Ok(out) = add_sections(&damaged, &added) {
            let mut counted = CountingSink(0);
            out.write_with(&mut counted, |o, d| o.write_all(d)).unwrap();
            assert_eq!(counted.0, out.size);
        }
        let _ = remove_sections(&damaged, &|n| n.starts_with(b".text"));
    }
}

// ---- new contents --------------------------------------------------------------------------

/// The host objects of `samples/linked/` with the sections the rewrite replaces: `.hip_fatbin`
/// and `.llvm.offloading`.
const LINKED_OBJECTS: [&str; 2] = ["linked/kernel-msvc.obj", "linked/omp-msvc.obj"];

/// What we refuse to update where llvm-objcopy writes an object that is wrong: a section that
/// relocations apply to, a COMDAT section whose checksum goes stale, a symbol past the end.
const OUR_REFUSALS: [&str; 3] = [
    "has relocations",
    "is a COMDAT section",
    "points into bytes",
];

/// `rewrite_sections` giving `new` to the first section named `name`, as
/// `llvm-objcopy --update-section` picks the first.
fn ours_updated(input: &[u8], name: &str, new: &[u8]) -> Result<Vec<u8>, String> {
    let done = Cell::new(false);
    let replace = |n: &[u8], _: &[u8]| {
        (n == name.as_bytes() && !done.replace(true)).then(|| Cow::Owned(new.to_vec()))
    };
    rewrite_sections(input, &|_| false, &replace)
        .map(|r| r.to_vec())
        .map_err(|e| e.to_string())
}

/// Sets the `Length` of the section definition of section `number` (from 1) named `name`:
/// llvm-objcopy leaves it as it was, we give it the new size.
fn set_definition_length(object: &mut [u8], number: usize, name: &str, length: u32) {
    let file = object::File::parse(&*object).unwrap();
    let symbol = file
        .symbols()
        .find(|s| s.name() == Ok(name) && s.section_index() == Some(object::SectionIndex(number)))
        .map(|s| s.index().0);
    drop(file);
    let Some(index) = symbol else { return };
    let table = u32::from_le_bytes(object[8..12].try_into().unwrap()) as usize;
    let record = table + 18 * index;
    // Static, with one auxiliary record: a section definition.
    if object[record + 16] == 3 && object[record + 17] == 1 {
        object[record + 18..record + 22].copy_from_slice(&length.to_le_bytes());
    }
}

/// The sections whose contents may be replaced, by name, with their number (from 1) and size:
/// the first of each name, when it holds data (neither code nor uninitialised data).
fn data_sections(object: &[u8]) -> Vec<(String, usize, usize)> {
    let file = object::File::parse(object).unwrap();
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for section in file.sections() {
        let name = section.name().unwrap().to_string();
        if seen.contains(&name) {
            continue;
        }
        seen.push(name.clone());
        let object::SectionFlags::Coff { characteristics } = section.flags() else {
            unreachable!("a COFF section")
        };
        let code_or_uninitialised =
            pe::IMAGE_SCN_CNT_CODE.with(pe::IMAGE_SCN_CNT_UNINITIALIZED_DATA);
        if !characteristics.intersects(code_or_uninitialised) {
            let size = section.data().unwrap().len();
            out.push((name, section.index().0, size));
        }
    }
    out
}

/// Counts of the outcomes of updates compared with llvm-objcopy.
#[derive(Default)]
struct Outcomes {
    equal: usize,
    refused_by_both: usize,
    grown_here: usize,
    refused_here: usize,
    failures: Vec<String>,
}

#[test]
fn new_section_contents_match_llvm_objcopy_update_section() {
    let Some(tool) = objcopy_tool() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let contents = dir.path().join("contents.bin");
    let out = dir.path().join("out.obj");
    let s = samples_dir();
    let mut inputs = coff_objects();
    inputs.extend(LINKED_OBJECTS.iter().map(|o| s.join(o)));
    let mut outcomes = Outcomes::default();
    for input in &inputs {
        let bytes = std::fs::read(input).unwrap();
        let file_name = input.file_name().unwrap().to_string_lossy().into_owned();
        for (name, number, size) in data_sections(&bytes) {
            // Shorter, as long, empty, and one byte longer, which llvm-objcopy refuses.
            let mut sizes = vec![size / 2, size, 0, size + 1];
            sizes.dedup();
            for new_size in sizes {
                let new: Vec<u8> = (0..new_size).map(|k| (k * 7 + 1) as u8).collect();
                std::fs::write(&contents, &new).unwrap();
                let what = format!("{new_size} bytes for {name} of {file_name}");
                let expected = objcopy(
                    &tool,
                    &[format!("--update-section={name}={}", contents.display())],
                    input,
                    &out,
                );
                match (expected, ours_updated(&bytes, &name, &new)) {
                    (Ok(mut expected), Ok(ours)) => {
                        set_definition_length(&mut expected, number, &name, new_size as u32);
                        let before = outcomes.failures.len();
                        check(&what, &expected, &ours, &mut outcomes.failures);
                        outcomes.equal += usize::from(outcomes.failures.len() == before);
                    }
                    (Err(_), Err(_)) => outcomes.refused_by_both += 1,
                    (Ok(_), Err(e)) if OUR_REFUSALS.iter().any(|r| e.contains(r)) => {
                        outcomes.refused_here += 1
                    }
                    (Ok(_), Err(e)) => outcomes
                        .failures
                        .push(format!("{what}: llvm-objcopy succeeds, we fail: {e}")),
                    // Larger contents: llvm-objcopy refuses them, we lay them out.
                    (Err(e), Ok(_)) if e.contains("new section cannot be larger") => {
                        outcomes.grown_here += 1
                    }
                    (Err(e), Ok(_)) => outcomes
                        .failures
                        .push(format!("{what}: llvm-objcopy fails ({e}), we succeed")),
                }
            }
        }
    }
    visible(&format!(
        "objcopy (COFF) updates: {} equal, {} refused by both, {} grown here only, {} refused \
         here only (relocations, COMDAT, symbols past the end), {} differences",
        outcomes.equal,
        outcomes.refused_by_both,
        outcomes.grown_here,
        outcomes.refused_here,
        outcomes.failures.len()
    ));
    assert!(
        outcomes.equal >= 20 && outcomes.grown_here >= 20 && outcomes.refused_here >= 20,
        "{} equal, {} grown here, {} refused here",
        outcomes.equal,
        outcomes.grown_here,
        outcomes.refused_here
    );
    assert!(
        outcomes.failures.is_empty(),
        "{}",
        outcomes.failures.join("\n")
    );
}

#[test]
fn the_same_contents_give_the_same_object() {
    let s = samples_dir();
    for (input, name) in LINKED_OBJECTS
        .iter()
        .zip([".hip_fatbin", ".llvm.offloading"])
    {
        let bytes = std::fs::read(s.join(input)).unwrap();
        let replace =
            |n: &[u8], old: &[u8]| (n == name.as_bytes()).then(|| Cow::Owned(old.to_vec()));
        let same = rewrite_sections(&bytes, &|_| false, &replace).unwrap();
        let unchanged = remove_sections(&bytes, &|_| false).unwrap();
        assert!(same.to_vec() == unchanged.to_vec(), "{input}: {name}");
    }
}

/// The gfx906 code object of the bundle in `.hip_fatbin` of `kernel-msvc.obj`.
fn gfx906_code(object: &[u8]) -> Vec<u8> {
    let file = object::File::parse(object).unwrap();
    let fat_binary = file.section_by_name(".hip_fatbin").unwrap().data().unwrap();
    let bundle = FatBinary::parse(fat_binary).unwrap().unwrap();
    let entry = bundle
        .entries()
        .iter()
        .find(|e| e.id == GFX906)
        .expect("a gfx906 entry");
    entry.data.to_vec()
}

const GFX906: &str = "hipv4-amdgcn-amd-amdhsa--gfx906";

/// `llvm-readobj --sections --symbols` of `object`.
fn readobj(tool: &Path, object: &Path) -> String {
    let out = Command::new(tool)
        .args(["--sections", "--symbols"])
        .arg(object)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The lines of a section or symbol of `llvm-readobj` output from its name line, `line`, to
/// the end of its block.
fn readobj_block<'t>(text: &'t str, line: &str) -> &'t str {
    let start = text
        .find(line)
        .unwrap_or_else(|| panic!("no '{line}' in\n{text}"));
    let end = text[start..].find("\n  }").unwrap() + start;
    &text[start..end]
}

#[test]
fn a_shorter_fat_binary_still_links_into_a_dll() {
    let (Some(lld_link), Some(readobj_tool)) =
        (util::tool("lld-link-19"), util::tool("llvm-readobj-19"))
    else {
        return;
    };
    let bytes = std::fs::read(samples_dir().join("linked/kernel-msvc.obj")).unwrap();
    let code = gfx906_code(&bytes);
    // Aligned to 8 rather than 4096, the bundle gets shorter by most of a page.
    let fat_binary = bundle::to_vec(&[("host-x86_64-pc-windows-msvc-", &[]), (GFX906, &code)], 8);
    let old_size = bytes.len();
    let ours = ours_updated(&bytes, ".hip_fatbin", &fat_binary).unwrap();
    assert!(
        ours.len() + 3000 < old_size,
        "{} -> {}",
        old_size,
        ours.len()
    );

    let dir = tempfile::tempdir().unwrap();
    let object = dir.path().join("kernel.obj");
    std::fs::write(&object, &ours).unwrap();
    let text = readobj(&readobj_tool, &object);
    let size = format!("RawDataSize: {}\n", fat_binary.len());
    let section = readobj_block(&text, "Name: .hip_fatbin (");
    assert!(section.contains(&size), "{section}");
    let symbol = readobj_block(&text, "Name: .hip_fatbin\n");
    let length = format!("Length: {}\n", fat_binary.len());
    assert!(symbol.contains(&length), "{symbol}");
    // The fat binary segment still points at it.
    assert!(readobj_block(&text, "Name: .hipFatBinSegment (").contains("RelocationCount: 1"));

    let dll = dir.path().join("kernel.dll");
    let link = Command::new(lld_link)
        .args(["/dll", "/noentry", "/nodefaultlib", "/force:unresolved"])
        .arg(format!("/out:{}", dll.display()))
        .arg(&object)
        .output()
        .unwrap();
    assert!(
        link.status.success(),
        "{}",
        String::from_utf8_lossy(&link.stderr)
    );
    let image = std::fs::read(&dll).unwrap();
    assert!(
        image.windows(fat_binary.len()).any(|w| w == fat_binary),
        "the new fat binary is not in the DLL"
    );
}

#[test]
fn damaged_objects_with_new_contents_give_errors_not_panics() {
    let run = |bytes: &[u8]| {
        let replace = |name: &[u8], old: &[u8]| {
            [&b".hip_fatbin"[..], b".xdata", b".rdata", b".llvm_addrsig"]
                .contains(&name)
                .then(|| Cow::Owned(old[..old.len() / 2].to_vec()))
        };
        if let Ok(out) = rewrite_sections(bytes, &|n| n == b".pdata", &replace) {
            let mut counted = CountingSink(0);
            out.write_with(&mut counted, |o, d| o.write_all(d)).unwrap();
            assert_eq!(counted.0, out.size);
        }
    };
    let bytes = std::fs::read(samples_dir().join("linked/kernel-msvc.obj")).unwrap();
    for len in 0..bytes.len() {
        run(&bytes[..len]);
    }
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..5000 {
        let mut damaged = bytes.clone();
        for _ in 0..4 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let at = (state % damaged.len() as u64) as usize;
            damaged[at] ^= (state >> 32) as u8 | 1;
        }
        run(&damaged);
    }
}
