//! Which sections of a host file the scan searches for the magics of containers. Device code
//! is read from the sections named for it (and ELF's `SHT_LLVM_OFFLOADING`) whatever their
//! flags; beyond those, only sections that can hold the bytes a program embeds as data
//! (`.rodata`, `.data`, a section of its own) are searched. Machine code, symbol and string
//! tables, relocations, notes, the loader's tables, unwind tables and debug information hold
//! structures the compiler and linker write: a magic there is chance bytes, and reading them
//! would cost most of a large library (its `.text` and `.strtab` are most of its size).

use object::read::elf::{FileHeader, SectionHeader};
use object::{elf, ObjectSection, SectionKind};

use crate::format::container::Container;
use crate::host::BUNDLE_SECTION_PREFIX;

/// Why a section is not searched for magics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsearched {
    /// Machine code: ELF `SHF_EXECINSTR`, COFF `IMAGE_SCN_CNT_CODE` or
    /// `IMAGE_SCN_MEM_EXECUTE`, Mach-O sections of instructions.
    Code,
    /// A symbol table, or the string table of symbol or section names.
    Symbols,
    /// Relocations: ELF `SHT_REL`, `SHT_RELA`, `SHT_RELR` (and their variants), PE `.reloc`.
    Relocations,
    /// ELF notes (`SHT_NOTE`).
    Notes,
    /// What the linker and the dynamic loader read: hash tables, symbol versions, the dynamic
    /// section, section groups, arrays of constructor pointers, COFF linker directives.
    Linking,
    /// Unwind tables: `.eh_frame`, `.eh_frame_hdr`, `.gcc_except_table`, `.sframe`, ARM's
    /// `.ARM.exidx` and `.ARM.extab`, COFF `.pdata` and `.xdata`, Mach-O `__eh_frame`,
    /// `__unwind_info` and `__compact_unwind`.
    Unwind,
    /// Debug information: `.debug_*` and `.zdebug_*` (DWARF), `.debug$*` (CodeView), the
    /// `.gnu_debug*` links and mini debug information, Mach-O's `__DWARF` segment.
    Debug,
}

impl Unsearched {
    /// What the section holds, for the log.
    pub fn holds(self) -> &'static str {
        match self {
            Unsearched::Code => "machine code",
            Unsearched::Symbols => "symbols or names",
            Unsearched::Relocations => "relocations",
            Unsearched::Notes => "notes",
            Unsearched::Linking => "linker or loader tables",
            Unsearched::Unwind => "unwind tables",
            Unsearched::Debug => "debug information",
        }
    }
}

/// Whether a section named `name` holds device code by its name: a bundle section
/// (`__CLANG_OFFLOAD_BUNDLE__<ID>`), or a container's own (`.hip_fatbin`, `.llvm.offloading`,
/// `.nv_fatbin`, their COFF and Mach-O names). Such sections are read whatever their flags.
pub fn named_for_device_code(name: &str) -> bool {
    name.starts_with(BUNDLE_SECTION_PREFIX) || Container::of_section(name).is_some()
}

/// Where the first section named for device code ([`named_for_device_code`]) starts in the
/// object file `data` (ELF, COFF or PE, Mach-O); `None` when it has none, or is no object
/// file. Everything before it is host code and data, which a rewrite of its device code
/// leaves as it is.
pub fn first_named_for_device_code(data: &[u8]) -> Option<u64> {
    let file = object::File::parse(data).ok()?;
    object::Object::sections(&file)
        .filter(|section| section.name().is_ok_and(named_for_device_code))
        .filter_map(|section| section.file_range())
        .map(|(offset, _)| offset)
        .min()
}

/// Why the ELF section `header` (named `name`) is not searched for magics; `None` when it is.
/// The caller reads the sections named for device code before asking.
pub fn elf_unsearched<H: FileHeader>(
    header: &H::SectionHeader,
    endian: H::Endian,
    name: &str,
) -> Option<Unsearched> {
    if header.sh_flags(endian).contains(elf::SHF_EXECINSTR) {
        return Some(Unsearched::Code);
    }
    let by_type = match header.sh_type(endian) {
        elf::SHT_SYMTAB | elf::SHT_DYNSYM | elf::SHT_SYMTAB_SHNDX | elf::SHT_STRTAB => {
            Some(Unsearched::Symbols)
        }
        elf::SHT_REL
        | elf::SHT_RELA
        | elf::SHT_RELR
        | elf::SHT_CREL
        | elf::SHT_ANDROID_REL
        | elf::SHT_ANDROID_RELA
        | elf::SHT_ANDROID_RELR => Some(Unsearched::Relocations),
        elf::SHT_NOTE => Some(Unsearched::Notes),
        elf::SHT_HASH
        | elf::SHT_GNU_HASH
        | elf::SHT_DYNAMIC
        | elf::SHT_GNU_VERSYM
        | elf::SHT_GNU_VERDEF
        | elf::SHT_GNU_VERNEED
        | elf::SHT_GROUP
        | elf::SHT_INIT_ARRAY
        | elf::SHT_FINI_ARRAY
        | elf::SHT_PREINIT_ARRAY => Some(Unsearched::Linking),
        _ => None,
    };
    by_type.or_else(|| unsearched_by_name(name))
}

/// Why the COFF, PE or Mach-O section `section` is not searched for magics; `None` when it
/// is. The caller reads the sections named for device code before asking.
///
/// A PE image's resources (`.rsrc`) are searched: a Windows program embeds files there
/// (`RCDATA`) as an ELF program does in `.rodata`.
pub fn object_unsearched<'d, S: ObjectSection<'d>>(section: &S) -> Option<Unsearched> {
    match section.kind() {
        SectionKind::Text => return Some(Unsearched::Code),
        SectionKind::Debug | SectionKind::DebugString => return Some(Unsearched::Debug),
        SectionKind::Linker => return Some(Unsearched::Linking),
        _ => {}
    }
    let name = section.name().unwrap_or("");
    match name {
        ".reloc" => Some(Unsearched::Relocations),
        ".pdata" | ".xdata" | "__eh_frame" | "__unwind_info" | "__compact_unwind" => {
            Some(Unsearched::Unwind)
        }
        _ if name.starts_with(".debug$") => Some(Unsearched::Debug),
        _ => unsearched_by_name(name),
    }
}

/// What a section's name alone says it holds, in any format: debug information and unwind
/// tables keep their names in every linker's output.
fn unsearched_by_name(name: &str) -> Option<Unsearched> {
    const DEBUG: [&str; 5] = [
        ".debug_",
        ".zdebug_",
        ".gnu_debuglink",
        ".gnu_debugaltlink",
        ".gnu_debugdata",
    ];
    const UNWIND: [&str; 5] = [
        ".eh_frame",
        ".gcc_except_table",
        ".sframe",
        ".ARM.exidx",
        ".ARM.extab",
    ];
    if DEBUG.iter().any(|p| name.starts_with(p)) {
        Some(Unsearched::Debug)
    } else if UNWIND.iter().any(|p| name.starts_with(p)) {
        Some(Unsearched::Unwind)
    } else {
        None
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;

    #[test]
    fn names_say_what_debug_and_unwind_sections_hold() {
        for name in [
            ".debug_info",
            ".zdebug_str",
            ".gnu_debuglink",
            ".gnu_debugdata",
        ] {
            assert_eq!(unsearched_by_name(name), Some(Unsearched::Debug), "{name}");
        }
        for name in [
            ".eh_frame",
            ".eh_frame_hdr",
            ".gcc_except_table._Z1fv",
            ".ARM.exidx.text.f",
        ] {
            assert_eq!(unsearched_by_name(name), Some(Unsearched::Unwind), "{name}");
        }
        for name in [
            ".rodata",
            ".data",
            ".rdata",
            ".rsrc",
            "blob",
            ".debugger_data",
        ] {
            assert_eq!(unsearched_by_name(name), None, "{name}");
        }
    }

    #[test]
    fn the_first_section_of_device_code_is_found_in_programs_and_objects() {
        let sample = |name: &str| {
            std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(name)).unwrap()
        };
        // A linked program: `.hip_fatbin` at 0x1000, a bundle at its start.
        let program = sample("samples/linked/hip-app");
        assert_eq!(first_named_for_device_code(&program), Some(0x1000));
        assert!(program[0x1000..].starts_with(b"__CLANG_OFFLOAD_BUNDLE__"));
        // A relocatable object: `.nv_fatbin`, with the CUDA fat binary's magic.
        let object = sample("samples/linked/cuda-fatbin.o");
        let at = first_named_for_device_code(&object).unwrap() as usize;
        assert_eq!(object[at..at + 4], 0xba55_ed50u32.to_le_bytes());
        // No object file, or none of its sections named for device code.
        assert_eq!(first_named_for_device_code(b"not an object file"), None);
        let bundle = sample("samples/bundles/kernel-hip.o");
        assert!(bundle.starts_with(b"__CLANG_OFFLOAD_BUNDLE__"));
        assert_eq!(first_named_for_device_code(&bundle), None);
    }

    #[test]
    fn device_code_sections_are_known_by_name() {
        for name in [
            ".hip_fatbin",
            ".hip_fat",
            "__hip_fatbin",
            ".llvm.offloading",
            "__offloading",
            ".nv_fatbin",
            "__CLANG_OFFLOAD_BUNDLE__hip-amdgcn-amd-amdhsa--gfx90a",
        ] {
            assert!(named_for_device_code(name), "{name}");
        }
        for name in [".rodata", ".text", ".hipFatBinSegment"] {
            assert!(!named_for_device_code(name), "{name}");
        }
    }
}
