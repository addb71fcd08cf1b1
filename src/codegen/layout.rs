//! What the native wrapper objects share: the hosts they are written for, the pieces every
//! object has (local and undefined symbols, constructor sections), and the layout that leaves
//! the images out of the written object and copies them into place afterwards.
//!
//! An object is laid out before any image byte is read: the images are not held in memory but
//! copied from their files into place (by the kernel where it can), after the object's headers,
//! tables and code, so wrapping a 4 GiB image takes a few MiB.

use object::write::{Object, Relocation, SectionId, Symbol, SymbolId, SymbolSection};
use object::{
    Architecture, BinaryFormat, Endianness, RelocationFlags, SectionFlags, SectionKind,
    SymbolFlags, SymbolKind, SymbolScope,
};

use crate::error::{Error, Result};
use crate::io::{Input, Output};
use std::fs::File;
use std::path::Path;

/// The hosts a native object can be written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Host {
    /// ELF x86-64 (Linux and the other ELF systems).
    ElfX86_64,
    /// ELF AArch64.
    ElfAarch64,
    /// COFF x86-64 for the Microsoft C runtime (`x86_64-pc-windows-msvc`).
    CoffX86_64,
    /// ELF x86-64 whose code calls with the Microsoft x64 convention, as COFF's does: for tests
    /// that run that code on Linux, against a runtime built with `ms_abi`.
    #[cfg(test)]
    ElfX86_64MsAbi,
}

impl Host {
    /// The host of `triple`, if a native object can be written for it.
    pub(crate) fn of(triple: &str) -> Option<Host> {
        let mut parts = triple.split('-');
        let arch = parts.next()?;
        let windows = triple.contains("-windows");
        let msvc = windows && !triple.ends_with("-gnu") && !triple.contains("-cygnus");
        match arch {
            "x86_64" | "amd64" if msvc => Some(Host::CoffX86_64),
            _ if windows => None,
            "x86_64" | "amd64" => Some(Host::ElfX86_64),
            "aarch64" | "arm64" => Some(Host::ElfAarch64),
            _ => None,
        }
    }

    /// Whether the host's objects are COFF.
    pub(crate) fn is_coff(self) -> bool {
        self == Host::CoffX86_64
    }

    /// An empty object for the host.
    pub(crate) fn object(self) -> Object<'static> {
        let (format, architecture) = match self {
            Host::ElfX86_64 => (BinaryFormat::Elf, Architecture::X86_64),
            #[cfg(test)]
            Host::ElfX86_64MsAbi => (BinaryFormat::Elf, Architecture::X86_64),
            Host::ElfAarch64 => (BinaryFormat::Elf, Architecture::Aarch64),
            Host::CoffX86_64 => (BinaryFormat::Coff, Architecture::X86_64),
        };
        Object::new(format, architecture, Endianness::Little)
    }

    /// The relocation of a 64-bit absolute address.
    pub(crate) fn abs64(self) -> RelocationFlags {
        match self {
            Host::ElfX86_64 => RelocationFlags::Elf {
                r_type: object::elf::R_X86_64_64,
            },
            #[cfg(test)]
            Host::ElfX86_64MsAbi => RelocationFlags::Elf {
                r_type: object::elf::R_X86_64_64,
            },
            Host::ElfAarch64 => RelocationFlags::Elf {
                r_type: object::elf::R_AARCH64_ABS64,
            },
            Host::CoffX86_64 => RelocationFlags::Coff {
                typ: object::pe::IMAGE_REL_AMD64_ADDR64,
            },
        }
    }

    /// The alignment of the code section (LLVM's choice for the host).
    pub(crate) fn code_align(self) -> u64 {
        match self {
            Host::ElfAarch64 => 4,
            _ => 16,
        }
    }
}

/// The error for a triple no native object is written for.
pub(crate) fn unsupported(triple: &str) -> Error {
    Error::msg(format!(
        "'{triple}': unsupported target triple (objects are written for x86_64 and aarch64 ELF and x86_64-pc-windows-msvc; write .ll for others)"
    ))
}

/// The error for a failure of the object writer.
pub(crate) fn cannot_write(e: object::write::Error) -> Error {
    Error::msg(format!("cannot write the wrapper: {e}"))
}

/// A native object laid out without its images: the headers, tables and code, and where the
/// images go after them.
pub(crate) struct Laid {
    /// Everything but the images; the image section's header already points past the end.
    head: Vec<u8>,
    /// Where the image section starts in the file.
    images_at: u64,
    /// Each image's offset in the image section, and its length.
    placed: Vec<(u64, u64)>,
}

impl Laid {
    /// The size of the whole object.
    pub(crate) fn size(&self) -> u64 {
        self.placed
            .last()
            .map_or(self.head.len() as u64, |&(at, len)| {
                self.images_at + at + len
            })
    }

    /// Writes the object to `out`, copying `images` (in the order they were laid out) into
    /// place.
    pub(crate) fn write(&self, out: &mut Output, images: &[Image]) -> Result<()> {
        out.write_bytes(&self.head)?;
        let mut written = self.head.len() as u64;
        for (image, &(at, len)) in images.iter().zip(&self.placed) {
            let start = self.images_at + at;
            write_zeros(out, start - written)?;
            image.write_to(out)?;
            written = start + len;
        }
        Ok(())
    }
}

/// Writes `count` zero bytes (padding, less than a page).
fn write_zeros(out: &mut Output, count: u64) -> Result<()> {
    Ok(out.write_bytes(&vec![0; count as usize])?)
}

/// Where the image section starts when the images are large: on a page boundary after the rest
/// of the object, so that a file system that shares extents can share the images' with their
/// files. Small images follow the rest on an 8-byte boundary.
const IMAGES_ALIGN: u64 = 4096;

/// The images' size from which their section starts on a page boundary.
const PAGE_ALIGNED_FROM: u64 = 1 << 20;

/// Pieces placed one after another in one section: where each starts and how long it is.
pub(crate) struct Placed {
    pub(crate) section: SectionId,
    pub(crate) at: Vec<u64>,
    pub(crate) len: Vec<u64>,
    /// The symbol of each piece.
    pub(crate) symbols: Vec<SymbolId>,
}

/// The images in the (new, empty) section `section`, each on an `align` boundary, each with the
/// local symbol its name gives: only their places and symbols, the section left empty (the
/// images are copied in by [`Laid::write`]).
pub(crate) fn add_images(
    obj: &mut Object,
    section: SectionId,
    align: u64,
    images: &[u64],
    name: impl Fn(usize) -> String,
) -> Placed {
    obj.append_section_data(section, &[], align);
    let mut end = 0u64;
    let mut placed = Placed {
        section,
        at: Vec::with_capacity(images.len()),
        len: Vec::with_capacity(images.len()),
        symbols: Vec::with_capacity(images.len()),
    };
    for (i, &len) in images.iter().enumerate() {
        let at = end.next_multiple_of(align);
        end = at + len;
        let symbol = local_symbol(obj, &name(i), section, at, len, SymbolKind::Data);
        placed.at.push(at);
        placed.len.push(len);
        placed.symbols.push(symbol);
    }
    placed
}

/// Writes `obj` and points its (empty) image section past the end, where the images will be
/// copied, and gives the layout.
pub(crate) fn lay_out(obj: &Object, host: Host, images: &Placed) -> Result<Laid> {
    let name = obj
        .section(images.section)
        .name()
        .unwrap_or_default()
        .to_string();
    let mut head = obj.write().map_err(cannot_write)?;
    let size: u64 = images
        .at
        .last()
        .zip(images.len.last())
        .map_or(0, |(at, len)| at + len);
    let align = if size >= PAGE_ALIGNED_FROM {
        IMAGES_ALIGN
    } else {
        8
    };
    let images_at = (head.len() as u64).next_multiple_of(align);
    let name = name.as_str();
    if host.is_coff() {
        place_coff(&mut head, name, images_at, size)?;
    } else {
        place_elf(&mut head, name, images_at, size)?;
    }
    Ok(Laid {
        head,
        images_at,
        placed: images
            .at
            .iter()
            .copied()
            .zip(images.len.iter().copied())
            .collect(),
    })
}

fn cannot_read_back(e: impl std::fmt::Display) -> Error {
    Error::msg(format!("cannot read back the wrapper object: {e}"))
}

/// Sets `sh_offset` and `sh_size` of the first ELF section called `name`.
fn place_elf(head: &mut [u8], name: &str, at: u64, size: u64) -> Result<()> {
    use object::read::elf::{ElfFile64, FileHeader};
    use object::{LittleEndian as LE, Object as _, ObjectSection as _};
    let header_at = {
        let file = ElfFile64::<LE>::parse(&*head).map_err(cannot_read_back)?;
        let section = file
            .section_by_name(name)
            .ok_or_else(|| cannot_read_back(format!("no section {name}")))?;
        let header = file.elf_header();
        header.e_shoff(LE) + section.index().0 as u64 * u64::from(header.e_shentsize(LE))
    };
    let header = object::pod::from_bytes_mut::<object::elf::SectionHeader64<LE>>(
        &mut head[header_at as usize..],
    )
    .map_err(|()| cannot_read_back("section header out of bounds"))?
    .0;
    header.sh_offset.set(LE, at);
    header.sh_size.set(LE, size);
    Ok(())
}

/// Sets `PointerToRawData` and `SizeOfRawData` of the first COFF section called `name`, and
/// the length in its section symbol.
fn place_coff(head: &mut [u8], name: &str, at: u64, size: u64) -> Result<()> {
    use object::pe::{ImageFileHeader, ImageSectionHeader, ImageSymbol};
    use object::LittleEndian as LE;
    use object::{Object as _, ObjectSection as _};
    let size = u32::try_from(size)
        .map_err(|_| Error::msg("images of 4 GiB or more do not fit in a COFF object"))?;
    let at = u32::try_from(at)
        .map_err(|_| Error::msg("a COFF object cannot hold its images past 4 GiB"))?;
    let index = {
        let file =
            object::read::coff::CoffFile::<&[u8]>::parse(&*head).map_err(cannot_read_back)?;
        let section = file
            .section_by_name(name)
            .ok_or_else(|| cannot_read_back(format!("no section {name}")))?;
        section.index().0
    };
    let (file, _) = object::pod::from_bytes::<ImageFileHeader>(head)
        .map_err(|()| cannot_read_back("no file header"))?;
    let symbols_at = file.pointer_to_symbol_table.get(LE) as usize;
    let symbol_count = file.number_of_symbols.get(LE) as usize;
    let header_at = std::mem::size_of::<ImageFileHeader>()
        + usize::from(file.size_of_optional_header.get(LE))
        + (index - 1) * std::mem::size_of::<ImageSectionHeader>();
    let (header, _) = object::pod::from_bytes_mut::<ImageSectionHeader>(&mut head[header_at..])
        .map_err(|()| cannot_read_back("section header out of bounds"))?;
    header.pointer_to_raw_data.set(LE, at);
    header.size_of_raw_data.set(LE, size);
    // The section's symbol: static, numbered as the section, with one auxiliary record whose
    // first field is the section's length.
    let number = index as u16;
    let mut index = 0;
    while index < symbol_count {
        let at = symbols_at + index * object::pe::IMAGE_SIZEOF_SYMBOL;
        let (symbol, _) = object::pod::from_bytes::<ImageSymbol>(&head[at..])
            .map_err(|()| cannot_read_back("symbol out of bounds"))?;
        let aux = usize::from(symbol.number_of_aux_symbols);
        if symbol.section_number.get(LE) == number
            && symbol.storage_class == object::pe::IMAGE_SYM_CLASS_STATIC
            && aux == 1
        {
            let length = at + object::pe::IMAGE_SIZEOF_SYMBOL;
            head[length..length + 4].copy_from_slice(&size.to_le_bytes());
            break;
        }
        index += 1 + aux;
    }
    Ok(())
}

/// Adds the section `name` of `kind`, on COFF with its section symbol (LLVM gives every COFF
/// section one; ELF section symbols are added where relocations need them).
pub(crate) fn add_section(
    obj: &mut Object,
    host: Host,
    name: &str,
    kind: SectionKind,
) -> SectionId {
    let section = obj.add_section(Vec::new(), name.as_bytes().to_vec(), kind);
    if host.is_coff() {
        obj.section_symbol(section);
    }
    section
}

/// The section of read-only tables with pointers in them: `.data.rel.ro` on ELF (the dynamic
/// linker relocates it before making it read-only), `.rdata` on COFF.
pub(crate) fn add_tables_section(obj: &mut Object, host: Host) -> SectionId {
    if host.is_coff() {
        add_section(obj, host, ".rdata", SectionKind::ReadOnlyData)
    } else {
        add_section(obj, host, ".data.rel.ro", SectionKind::ReadOnlyDataWithRel)
    }
}

/// A local symbol `name` in `section`.
pub(crate) fn local_symbol(
    obj: &mut Object,
    name: &str,
    section: SectionId,
    value: u64,
    size: u64,
    kind: SymbolKind,
) -> SymbolId {
    obj.add_symbol(Symbol {
        name: name.as_bytes().to_vec(),
        value,
        size,
        kind,
        scope: SymbolScope::Compilation,
        weak: false,
        section: SymbolSection::Section(section),
        flags: SymbolFlags::None,
    })
}

/// An undefined symbol `name`.
pub(crate) fn undefined(
    obj: &mut Object,
    name: &str,
    kind: SymbolKind,
    scope: SymbolScope,
    weak: bool,
) -> SymbolId {
    obj.add_symbol(Symbol {
        name: name.as_bytes().to_vec(),
        value: 0,
        size: 0,
        kind,
        scope,
        weak,
        section: SymbolSection::Undefined,
        flags: SymbolFlags::None,
    })
}

/// A runtime function the wrapper calls.
pub(crate) fn runtime_function(obj: &mut Object, name: &str) -> SymbolId {
    undefined(obj, name, SymbolKind::Text, SymbolScope::Dynamic, false)
}

/// The symbol and addend a relocation against `symbol + addend` names: on ELF, a local
/// symbol's section symbol (as LLVM writes them); on COFF, the symbol itself.
pub(crate) fn target(
    obj: &mut Object,
    host: Host,
    symbol: SymbolId,
    addend: i64,
) -> (SymbolId, i64) {
    let s = obj.symbol(symbol);
    match s.section {
        SymbolSection::Section(section)
            if !host.is_coff() && s.scope == SymbolScope::Compilation =>
        {
            let value = s.value as i64;
            (obj.section_symbol(section), value + addend)
        }
        _ => (symbol, addend),
    }
}

/// A function's machine code: its bytes, its relocations (offsets from its start), how its
/// prologue moves the stack (for ELF's `.eh_frame`) and, for x86-64, its Windows unwind
/// information (an `UNWIND_INFO`, which COFF objects carry in `.xdata`, indexed by `.pdata`).
pub(crate) struct Function {
    pub(crate) code: Vec<u8>,
    pub(crate) relocs: Vec<Relocation>,
    /// Each prologue instruction's effect on the frame, with the offset where it ends.
    pub(crate) cfi: Vec<(u32, Cfi)>,
    pub(crate) unwind: Option<Vec<u8>>,
}

/// What a prologue instruction does to the frame, as DWARF call frame information says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cfi {
    /// The canonical frame address is now this many bytes above the stack pointer.
    CfaOffset(u32),
    /// The register (DWARF number) is saved at this offset from the canonical frame address.
    Saved(u8, i32),
}

/// A function in `section`: its symbol, defined by [`define_functions`].
pub(crate) fn function_symbol(obj: &mut Object, section: SectionId, name: &str) -> SymbolId {
    local_symbol(obj, name, section, 0, 0, SymbolKind::Text)
}

/// Appends the code of each function to `text` and defines its symbol, then adds the
/// relocations (which may name any of the functions) and, on COFF, the functions' unwind
/// information in `.xdata` and their table in `.pdata`.
pub(crate) fn define_functions(
    obj: &mut Object,
    host: Host,
    text: SectionId,
    functions: Vec<(SymbolId, Function)>,
) -> Result<()> {
    let mut placed = Vec::with_capacity(functions.len());
    for (symbol, function) in functions {
        let at = obj.append_section_data(text, &function.code, host.code_align());
        let s = obj.symbol_mut(symbol);
        s.value = at;
        s.size = function.code.len() as u64;
        placed.push((at, function));
    }
    for (at, function) in &mut placed {
        let relocs = std::mem::take(&mut function.relocs);
        add_code_relocations(obj, host, text, *at, relocs)?;
    }
    if host.is_coff() {
        add_unwind_tables(obj, host, text, &placed)?;
    } else {
        add_eh_frame(obj, host, text, &placed)?;
    }
    Ok(())
}

/// `.eh_frame`: one CIE for the host, then an FDE per function with its prologue's call frame
/// information, so that unwinders (C++ exceptions, backtraces, debuggers) can walk through the
/// functions.
fn add_eh_frame(
    obj: &mut Object,
    host: Host,
    text: SectionId,
    functions: &[(u64, Function)],
) -> Result<()> {
    use object::elf;
    // Code alignment, return address register, initial instructions, the FDE's PC-relative
    // relocation, and the section type.
    let (code_align, return_address, initial, prel32, sh_type): (u8, u8, &[u8], _, _) = match host {
        Host::ElfAarch64 => (
            4,
            30,
            &[DW_CFA_DEF_CFA, 31, 0], // CFA = sp
            elf::R_AARCH64_PREL32,
            elf::SHT_PROGBITS,
        ),
        // CFA = rsp + 8, the return address at CFA - 8.
        _ => (
            1,
            16,
            &[DW_CFA_DEF_CFA, 7, 8, DW_CFA_OFFSET | 16, 1],
            elf::R_X86_64_PC32,
            elf::SHT_X86_64_UNWIND,
        ),
    };
    let section = add_section(obj, host, ".eh_frame", SectionKind::ReadOnlyData);
    obj.section_mut(section).flags = SectionFlags::Elf {
        sh_type,
        sh_flags: elf::SectionFlags(elf::SHF_ALLOC.0),
    };
    // The CIE: version 1, augmentation "zR" (FDE pointers PC-relative, 4 bytes), data
    // alignment -8.
    let mut cie = vec![1, b'z', b'R', 0, code_align, 0x78, return_address, 1, 0x1b];
    cie.extend_from_slice(initial);
    let cie = frame_record(0, &cie);
    let cie_at = obj.append_section_data(section, &cie, 8);
    let text_symbol = obj.section_symbol(text);
    for (at, function) in functions {
        let mut instructions = Vec::new();
        let mut pc = 0;
        for &(end, cfi) in &function.cfi {
            if end > pc {
                advance_loc(&mut instructions, (end - pc) / u32::from(code_align));
                pc = end;
            }
            match cfi {
                Cfi::CfaOffset(offset) => {
                    instructions.push(DW_CFA_DEF_CFA_OFFSET);
                    uleb128(&mut instructions, u64::from(offset));
                }
                Cfi::Saved(register, at) => {
                    instructions.push(DW_CFA_OFFSET | register);
                    uleb128(&mut instructions, (-at / 8) as u64);
                }
            }
        }
        // The pointer to the CIE (filled in below), the function's start (relocated), its
        // length, no augmentation data, the instructions.
        let mut body = vec![0; 8];
        body[4..8].copy_from_slice(&(function.code.len() as u32).to_le_bytes());
        body.push(0);
        body.extend_from_slice(&instructions);
        let mut fde = frame_record(0, &body);
        let fde_at = obj.section(section).data().len().next_multiple_of(8) as u64;
        let cie_pointer = (fde_at + 4 - cie_at) as u32;
        fde[4..8].copy_from_slice(&cie_pointer.to_le_bytes());
        let fde_at = obj.append_section_data(section, &fde, 8);
        obj.add_relocation(
            section,
            Relocation {
                offset: fde_at + 8,
                symbol: text_symbol,
                addend: *at as i64,
                flags: RelocationFlags::Elf { r_type: prel32 },
            },
        )
        .map_err(cannot_write)?;
    }
    Ok(())
}

const DW_CFA_ADVANCE_LOC: u8 = 0x40;
/// `DW_CFA_advance_loc1`, `DW_CFA_advance_loc2`, `DW_CFA_advance_loc4`: the advance in the
/// next 1, 2 or 4 bytes.
const DW_CFA_ADVANCE_LOC1: u8 = 0x02;
const DW_CFA_ADVANCE_LOC2: u8 = 0x03;
const DW_CFA_ADVANCE_LOC4: u8 = 0x04;

/// Moves the location of the call frame instructions `delta` code units on, in the shortest
/// form that holds it.
fn advance_loc(instructions: &mut Vec<u8>, delta: u32) {
    if let Ok(small) = u8::try_from(delta) {
        if small < 64 {
            instructions.push(DW_CFA_ADVANCE_LOC | small);
        } else {
            instructions.extend_from_slice(&[DW_CFA_ADVANCE_LOC1, small]);
        }
    } else if let Ok(medium) = u16::try_from(delta) {
        instructions.push(DW_CFA_ADVANCE_LOC2);
        instructions.extend_from_slice(&medium.to_le_bytes());
    } else {
        instructions.push(DW_CFA_ADVANCE_LOC4);
        instructions.extend_from_slice(&delta.to_le_bytes());
    }
}
const DW_CFA_OFFSET: u8 = 0x80;
const DW_CFA_DEF_CFA: u8 = 0x0c;
const DW_CFA_DEF_CFA_OFFSET: u8 = 0x0e;

/// A CIE or FDE: its length, `id` (0 for a CIE, the CIE pointer for an FDE, here a
/// placeholder), `body`, padded with `DW_CFA_nop` to a multiple of 8 bytes.
fn frame_record(id: u32, body: &[u8]) -> Vec<u8> {
    let mut record = vec![0; 8];
    record[4..8].copy_from_slice(&id.to_le_bytes());
    record.extend_from_slice(body);
    record.resize(record.len().next_multiple_of(8), 0);
    let length = (record.len() - 4) as u32;
    record[..4].copy_from_slice(&length.to_le_bytes());
    record
}

fn uleb128(out: &mut Vec<u8>, mut value: u64) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// `.xdata` with each function's `UNWIND_INFO`, and `.pdata` with a `RUNTIME_FUNCTION`
/// {begin, end, unwind information} per function, as image-relative addresses.
fn add_unwind_tables(
    obj: &mut Object,
    host: Host,
    text: SectionId,
    functions: &[(u64, Function)],
) -> Result<()> {
    let xdata = add_section(obj, host, ".xdata", SectionKind::ReadOnlyData);
    let pdata = add_section(obj, host, ".pdata", SectionKind::ReadOnlyData);
    let text_symbol = obj.section_symbol(text);
    let xdata_symbol = obj.section_symbol(xdata);
    let image_relative = |offset, symbol, addend| Relocation {
        offset,
        symbol,
        addend,
        flags: RelocationFlags::Coff {
            typ: object::pe::IMAGE_REL_AMD64_ADDR32NB,
        },
    };
    for (at, function) in functions {
        let Some(unwind) = &function.unwind else {
            continue;
        };
        let info = obj.append_section_data(xdata, unwind, 4);
        let entry = obj.append_section_data(pdata, &[0; 12], 4);
        let end = *at + function.code.len() as u64;
        for (field, symbol, addend) in [
            (0, text_symbol, *at),
            (4, text_symbol, end),
            (8, xdata_symbol, info),
        ] {
            obj.add_relocation(pdata, image_relative(entry + field, symbol, addend as i64))
                .map_err(cannot_write)?;
        }
    }
    Ok(())
}

/// Adds `relocs` of the code at `at` in `section`, each against its [`target`].
pub(crate) fn add_code_relocations(
    obj: &mut Object,
    host: Host,
    section: SectionId,
    at: u64,
    relocs: Vec<Relocation>,
) -> Result<()> {
    for mut r in relocs {
        (r.symbol, r.addend) = target(obj, host, r.symbol, r.addend);
        r.offset += at;
        obj.add_relocation(section, r).map_err(cannot_write)?;
    }
    Ok(())
}

/// A 64-bit pointer at `offset` of `section` to `symbol + addend`.
pub(crate) fn pointer(
    obj: &mut Object,
    host: Host,
    section: SectionId,
    offset: u64,
    symbol: SymbolId,
    addend: i64,
) -> Result<()> {
    let (symbol, addend) = target(obj, host, symbol, addend);
    obj.add_relocation(
        section,
        Relocation {
            offset,
            symbol,
            addend,
            flags: host.abs64(),
        },
    )
    .map_err(cannot_write)
}

/// Whether a function pointer section runs its functions at startup or at exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Run {
    AtStartup,
    AtExit,
}

/// A section that runs `function` at startup or exit with `priority`: `.init_array.N` /
/// `.fini_array.N` on ELF, `.CRT$XCA0000N` / `.CRT$XTA0000N` on COFF (as LLVM names them).
pub(crate) fn add_function_pointer(
    obj: &mut Object,
    host: Host,
    run: Run,
    priority: u16,
    function: SymbolId,
) -> Result<()> {
    let id = if host.is_coff() {
        let name = match run {
            Run::AtStartup => format!(".CRT$XCA{priority:05}"),
            Run::AtExit => format!(".CRT$XTA{priority:05}"),
        };
        add_section(obj, host, &name, SectionKind::ReadOnlyData)
    } else {
        let (name, sh_type) = match run {
            Run::AtStartup => (".init_array", object::elf::SHT_INIT_ARRAY),
            Run::AtExit => (".fini_array", object::elf::SHT_FINI_ARRAY),
        };
        let id = obj.add_section(
            Vec::new(),
            format!("{name}.{priority}").into_bytes(),
            SectionKind::Data,
        );
        obj.section_mut(id).flags = SectionFlags::Elf {
            sh_type,
            sh_flags: object::elf::SectionFlags(
                object::elf::SHF_ALLOC.0 | object::elf::SHF_WRITE.0,
            ),
        };
        id
    };
    let at = obj.append_section_data(id, &[0; 8], 8);
    pointer(obj, host, id, at, function, 0)
}

/// The symbols every object of LLVM has that say nothing of the wrapper: `@feat.00` on COFF.
pub(crate) fn add_format_symbols(obj: &mut Object, host: Host) {
    if host.is_coff() {
        obj.add_symbol(Symbol {
            name: b"@feat.00".to_vec(),
            value: 0,
            size: 0,
            kind: SymbolKind::Data,
            scope: SymbolScope::Compilation,
            weak: false,
            section: SymbolSection::Absolute,
            flags: SymbolFlags::None,
        });
    }
}

/// `.note.GNU-stack`, empty, on ELF: the object needs no executable stack.
pub(crate) fn add_stack_note(obj: &mut Object, host: Host) {
    if host.is_coff() {
        return;
    }
    let stack = obj.add_section(Vec::new(), b".note.GNU-stack".to_vec(), SectionKind::Other);
    obj.section_mut(stack).flags = SectionFlags::Elf {
        sh_type: object::elf::SHT_PROGBITS,
        sh_flags: object::elf::SectionFlags(0),
    };
}

/// For tests: writes `laid` with `images` to an object, links it by the C compiler `cc` with
/// the stand-in runtime `tests/support/RUNTIME` built with `defines`, runs the program and
/// returns what it prints.
#[cfg(test)]
pub(crate) fn run_with_runtime(
    cc: &std::path::Path,
    laid: &Laid,
    images: &[Image],
    runtime: &str,
    defines: &[&str],
) -> String {
    use std::process::Command;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let object = dir.path().join("w.o");
    let mut out = Output::create(&object).unwrap();
    laid.write(&mut out, images).unwrap();
    out.commit().unwrap();
    let program = dir.path().join("w");
    let built = Command::new(cc)
        .args(["-w", "-O1"])
        .args(defines)
        .arg(root.join("tests/support").join(runtime))
        .arg(&object)
        .arg("-o")
        .arg(&program)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let ran = Command::new(&program).output().unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    String::from_utf8(ran.stdout).unwrap()
}

/// The name of item `index` of a series: `base` for the first, then `base.1`, `base.2` ...
pub fn name(base: &str, index: usize) -> String {
    if index == 0 {
        base.to_string()
    } else {
        format!("{base}.{index}")
    }
}

/// A device image to copy into a native object: a regular file, copied range by range and
/// never held, or the bytes of anything else (standard input, a pipe).
pub enum Image {
    /// A regular file, and its length.
    File {
        /// The file.
        file: File,
        /// Its length.
        len: u64,
    },
    /// Anything else, read whole.
    Bytes(Input),
}

impl Image {
    /// Opens `path`: a regular file is only opened; anything else is read as [`Input`] reads it.
    pub fn open(path: &Path) -> Result<Image> {
        if path.as_os_str() != "-" {
            // Without waiting on a FIFO: that is read below, as Input reads it.
            let (file, meta) =
                crate::io::opening::open_nonblocking(path).map_err(|e| Error::io(path, e))?;
            if meta.is_file() {
                return Ok(Image::File {
                    file,
                    len: meta.len(),
                });
            }
        }
        Ok(Input::open(path).map(Image::Bytes)?)
    }

    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        match self {
            Image::File { len, .. } => *len,
            Image::Bytes(input) => input.len() as u64,
        }
    }

    /// Copies the image to `out`.
    pub fn write_to(&self, out: &mut Output) -> Result<()> {
        match self {
            Image::File { file, len } => Ok(out.write_file_range(file, 0, *len)?),
            Image::Bytes(input) => Ok(out.write_bytes(input)?),
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_location_advances_in_the_shortest_form() {
        let advanced = |delta| {
            let mut out = Vec::new();
            super::advance_loc(&mut out, delta);
            out
        };
        assert_eq!(advanced(4), [0x44]);
        assert_eq!(advanced(63), [0x7f]);
        assert_eq!(advanced(64), [0x02, 64]);
        assert_eq!(advanced(300), [0x03, 0x2c, 0x01]);
        assert_eq!(advanced(70_000), [0x04, 0x70, 0x11, 0x01, 0x00]);
    }

    use super::*;

    #[test]
    fn triples_name_their_hosts() {
        for (triple, host) in [
            ("x86_64-unknown-linux-gnu", Some(Host::ElfX86_64)),
            ("x86_64-pc-linux-gnu", Some(Host::ElfX86_64)),
            ("aarch64-unknown-linux-gnu", Some(Host::ElfAarch64)),
            ("arm64-linux", Some(Host::ElfAarch64)),
            ("x86_64-pc-windows-msvc", Some(Host::CoffX86_64)),
            ("x86_64-w64-windows-gnu", None),
            ("aarch64-pc-windows-msvc", None),
            ("mips-unknown-linux-gnu", None),
        ] {
            assert_eq!(Host::of(triple), host, "{triple}");
        }
    }
}
