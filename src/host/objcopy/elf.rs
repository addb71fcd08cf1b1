//! ELF relocatable objects, rewritten as llvm-objcopy 19's ELF writer writes them.
//!
//! What the writer does, measured against its output:
//! - Sections keep their order; removed ones go, added ones come last.
//! - File offsets are laid out anew: after the ELF header, sections in the order of their
//!   original offsets (added ones last, ties in index order), each at the next multiple of
//!   its alignment; `SHT_NOBITS` takes no room; the section header table follows at the next
//!   multiple of 8 (4 for ELF32). Gaps are zero.
//! - Non-allocated string tables are built anew from the names they serve (section names,
//!   symbol names), tail-merged in LLVM's order.
//! - The symbol table and relocation sections are written anew: entry size and alignment are
//!   the class's, symbol names point into the new string table, `sh_info` of the symbol table
//!   is one past its last local symbol.
//! - Removing a section also removes the relocation sections that apply to it, and groups
//!   whose members are all removed.

//!
//! The work is read ([`Input::read`]) -> plan (what goes, new indexes, new contents, new
//! offsets) -> write ([`write`]). Both classes and both byte orders are read through object's
//! `FileHeader`, `SectionHeader` and `Sym` traits and written as its Pod structs.

use std::borrow::Cow;
use std::mem::{offset_of, size_of};

use object::elf::{
    FileHeader32, FileHeader64, Ident, SectionFlags, SectionHeader32, SectionHeader64, SectionType,
    Sym32, Sym64, SymbolSection, ELFCLASS32, ELFCLASS64, ELFDATA2LSB, ELFDATA2MSB, ELFMAG, ET_REL,
    EV_CURRENT, SHF_ALLOC, SHF_EXCLUDE, SHN_LORESERVE, SHN_XINDEX, SHT_GROUP, SHT_NOBITS,
    SHT_PROGBITS, SHT_REL, SHT_RELA, SHT_STRTAB, SHT_SYMTAB, SHT_SYMTAB_SHNDX, STB_LOCAL,
};
use object::pod::{self, Pod};
use object::read::elf::{FileHeader, Rel, Rela, SectionHeader, Sym};
use object::{Endianness, U16, U32, U64};

use crate::host::error::{Error, ErrorKind, Name, Result};
use crate::host::objcopy::{AddedSection, Replace, Rewritten};
use crate::llvm::adt::strtab::{Flavor, StringTable};

/// LLVM's section type for offload binaries (`SHT_LLVM_OFFLOADING`).
const SHT_LLVM_OFFLOADING: SectionType = SectionType(0x6fff_4c0b);
/// The offset of `e_type`, the same in both classes.
const E_TYPE_AT: u64 = 16;

/// Removes the sections `remove` selects, gives new contents where `replace` says, and
/// appends `added`.
pub(super) fn rewrite<'a>(
    file: &'a [u8],
    added: &[AddedSection<'a>],
    remove: &dyn Fn(&[u8]) -> bool,
    replace: &Replace<'_, 'a>,
) -> Result<Rewritten<'a>> {
    let ident = file
        .first_chunk::<{ size_of::<Ident>() }>()
        .ok_or(Error::new(0, ErrorKind::TruncatedElfIdent))?;
    let class = ident[4];
    if class != ELFCLASS32.0 && class != ELFCLASS64.0 {
        return Err(Error::new(4, ErrorKind::UnknownElfClass { class }));
    }
    let e = match ident[5] {
        d if d == ELFDATA2LSB.0 => Endianness::Little,
        d if d == ELFDATA2MSB.0 => Endianness::Big,
        data => return Err(Error::new(5, ErrorKind::UnknownElfDataEncoding { data })),
    };
    if class == ELFCLASS32.0 {
        rewrite_class::<FileHeader32<Endianness>>(file, e, added, remove, replace)
    } else {
        rewrite_class::<FileHeader64<Endianness>>(file, e, added, remove, replace)
    }
}

/// [`rewrite`] for one class.
fn rewrite_class<'a, Elf: Class>(
    file: &'a [u8],
    e: Endianness,
    added: &[AddedSection<'a>],
    remove: &dyn Fn(&[u8]) -> bool,
    replace: &Replace<'_, 'a>,
) -> Result<Rewritten<'a>> {
    let input = Input::<Elf>::read(file, e)?;
    let renumbering = input.renumber(remove)?;
    let mut kept = input.kept(&renumbering, added)?;
    let tables = input.string_tables(&kept);
    let replaced = input.replacements(&kept, replace)?;
    let contents = input.contents(&mut kept, replaced, &renumbering, &tables)?;
    let names = tables
        .get(input.names_index)
        .expect("the name table is kept");
    // Fewer than SHN_LORESERVE sections are kept (checked by `kept`).
    let names_index = u16::try_from(renumbering.new_index(input.names_index)).unwrap_or(0);
    Ok(write(&input, &kept, contents, names, names_index))
}

/// An ELF class (32- or 64-bit) in either byte order: read through object's traits, written
/// through object's structs.
trait Class: FileHeader<Endian = Endianness> {
    /// The offset of `e_phoff`, which errors about program headers point at.
    const PHOFF_AT: u64;
    /// The offset of `e_shoff`.
    const SHOFF_AT: u64;
    /// The offset of `e_shentsize`.
    const SHENTSIZE_AT: u64;
    /// The offset of `e_shstrndx`.
    const SHSTRNDX_AT: u64;

    /// The output's file header: `old`'s, with no program headers and the new section
    /// header table.
    fn new_file_header(e: Endianness, old: &Self, shoff: u64, shnum: u16, shstrndx: u16) -> Self;

    /// The output's header of section `h`, named at `name` of the name table, at `offset`.
    fn new_section_header(
        e: Endianness,
        name: u32,
        h: &Header<'_>,
        offset: u64,
    ) -> Self::SectionHeader;

    /// `sym` with a new name and section index, and a new size when one is given.
    fn new_symbol(
        e: Endianness,
        sym: &Self::Sym,
        name: u32,
        shndx: u16,
        size: Option<u64>,
    ) -> Self::Sym;
}

/// The identification of the output: `old`'s class, byte order and ABI, current version.
fn new_ident(old: &Ident) -> Ident {
    Ident {
        magic: ELFMAG,
        version: EV_CURRENT,
        padding: [0; 7],
        ..*old
    }
}

impl Class for FileHeader64<Endianness> {
    const PHOFF_AT: u64 = offset_of!(Self, e_phoff) as u64;
    const SHOFF_AT: u64 = offset_of!(Self, e_shoff) as u64;
    const SHENTSIZE_AT: u64 = offset_of!(Self, e_shentsize) as u64;
    const SHSTRNDX_AT: u64 = offset_of!(Self, e_shstrndx) as u64;

    fn new_file_header(e: Endianness, old: &Self, shoff: u64, shnum: u16, shstrndx: u16) -> Self {
        FileHeader64 {
            e_ident: new_ident(&old.e_ident),
            e_type: U16::new(e, ET_REL),
            e_phoff: U64::new(e, 0),
            e_shoff: U64::new(e, shoff),
            e_ehsize: U16::new(e, small(size_of::<Self>())),
            e_phentsize: U16::new(e, 0),
            e_phnum: U16::new(e, 0),
            e_shentsize: U16::new(e, small(size_of::<SectionHeader64<Endianness>>())),
            e_shnum: U16::new(e, shnum),
            e_shstrndx: U16::new(e, SymbolSection(shstrndx)),
            ..*old
        }
    }

    fn new_section_header(
        e: Endianness,
        name: u32,
        h: &Header<'_>,
        offset: u64,
    ) -> SectionHeader64<Endianness> {
        SectionHeader64 {
            sh_name: U32::new(e, name),
            sh_type: U32::new(e, h.sh_type),
            sh_flags: U64::new(e, SectionFlags(h.flags)),
            sh_addr: U64::new(e, h.addr),
            sh_offset: U64::new(e, offset),
            sh_size: U64::new(e, h.size),
            sh_link: U32::new(e, h.link),
            sh_info: U32::new(e, h.info),
            sh_addralign: U64::new(e, h.align),
            sh_entsize: U64::new(e, h.entsize),
        }
    }

    fn new_symbol(
        e: Endianness,
        sym: &Sym64<Endianness>,
        name: u32,
        shndx: u16,
        size: Option<u64>,
    ) -> Sym64<Endianness> {
        let mut sym = *sym;
        sym.st_name = U32::new(e, name);
        sym.st_shndx = U16::new(e, SymbolSection(shndx));
        if let Some(size) = size {
            sym.st_size = U64::new(e, size);
        }
        sym
    }
}

impl Class for FileHeader32<Endianness> {
    const PHOFF_AT: u64 = offset_of!(Self, e_phoff) as u64;
    const SHOFF_AT: u64 = offset_of!(Self, e_shoff) as u64;
    const SHENTSIZE_AT: u64 = offset_of!(Self, e_shentsize) as u64;
    const SHSTRNDX_AT: u64 = offset_of!(Self, e_shstrndx) as u64;

    fn new_file_header(e: Endianness, old: &Self, shoff: u64, shnum: u16, shstrndx: u16) -> Self {
        FileHeader32 {
            e_ident: new_ident(&old.e_ident),
            e_type: U16::new(e, ET_REL),
            e_phoff: U32::new(e, 0),
            e_shoff: U32::new(e, low32(shoff)),
            e_ehsize: U16::new(e, small(size_of::<Self>())),
            e_phentsize: U16::new(e, 0),
            e_phnum: U16::new(e, 0),
            e_shentsize: U16::new(e, small(size_of::<SectionHeader32<Endianness>>())),
            e_shnum: U16::new(e, shnum),
            e_shstrndx: U16::new(e, SymbolSection(shstrndx)),
            ..*old
        }
    }

    fn new_section_header(
        e: Endianness,
        name: u32,
        h: &Header<'_>,
        offset: u64,
    ) -> SectionHeader32<Endianness> {
        // The class's words hold what the input's did; offsets and sizes of a 32-bit object
        // stay under 4 GiB as llvm-objcopy's do (it truncates too).
        SectionHeader32 {
            sh_name: U32::new(e, name),
            sh_type: U32::new(e, h.sh_type),
            sh_flags: U32::new_u64_truncate(e, SectionFlags(h.flags)),
            sh_addr: U32::new(e, low32(h.addr)),
            sh_offset: U32::new(e, low32(offset)),
            sh_size: U32::new(e, low32(h.size)),
            sh_link: U32::new(e, h.link),
            sh_info: U32::new(e, h.info),
            sh_addralign: U32::new(e, low32(h.align)),
            sh_entsize: U32::new(e, low32(h.entsize)),
        }
    }

    fn new_symbol(
        e: Endianness,
        sym: &Sym32<Endianness>,
        name: u32,
        shndx: u16,
        size: Option<u64>,
    ) -> Sym32<Endianness> {
        let mut sym = *sym;
        sym.st_name = U32::new(e, name);
        sym.st_shndx = U16::new(e, SymbolSection(shndx));
        if let Some(size) = size {
            sym.st_size = U32::new(e, low32(size));
        }
        sym
    }
}

/// The size of an address in class `Elf`, which is also the alignment of its symbol and
/// relocation tables and of its section header table.
fn word_size<Elf: Class>() -> u64 {
    size_of::<Elf::Word>() as u64
}

/// The whole records of `T` that `bytes` holds (a trailing part of one is left out).
fn records<T: Pod>(bytes: &[u8]) -> &[T] {
    pod::slice_from_bytes(bytes, bytes.len() / size_of::<T>()).map_or(&[], |(records, _)| records)
}

/// A section header's fields: read through object's `SectionHeader`, changed by the plan,
/// written back through [`Class::new_section_header`].
#[derive(Clone)]
struct Header<'a> {
    name: &'a [u8],
    sh_type: SectionType,
    flags: u64,
    addr: u64,
    offset: u64,
    size: u64,
    link: u32,
    info: u32,
    align: u64,
    entsize: u64,
}

impl<'a> Header<'a> {
    fn read<S: SectionHeader<Endian = Endianness>>(e: Endianness, h: &S, name: &'a [u8]) -> Self {
        Header {
            name,
            sh_type: h.sh_type(e),
            flags: h.sh_flags(e).0,
            addr: h.sh_addr(e).into(),
            offset: h.sh_offset(e).into(),
            size: h.sh_size(e).into(),
            link: h.sh_link(e),
            info: h.sh_info(e),
            align: h.sh_addralign(e).into(),
            entsize: h.sh_entsize(e).into(),
        }
    }

    /// Whether this is a relocation section of a relocatable object (the allocated ones of
    /// programs are left alone).
    fn relocates(&self) -> bool {
        (self.sh_type == SHT_REL || self.sh_type == SHT_RELA) && self.flags & SHF_ALLOC.0 == 0
    }

    /// Whether this is a string table that is built anew.
    fn is_unloaded_strings(&self) -> bool {
        self.sh_type == SHT_STRTAB && self.flags & SHF_ALLOC.0 == 0
    }
}

/// A section of the input or of the output.
#[derive(Clone)]
struct Section<'a> {
    header: Header<'a>,
    /// Index in the input; `None` for added sections.
    old_index: Option<usize>,
    /// Contents, for sections whose bytes are kept.
    data: &'a [u8],
}

/// One symbol as read: the raw entry, its name and section index.
struct Symbol<'a, Elf: Class> {
    name: &'a [u8],
    raw: &'a Elf::Sym,
    shndx: u32,
}

/// The string at `offset` of the table `table` (NUL-terminated); `what` names its owner.
fn string_at(table: &[u8], offset: u32, what: impl Fn() -> String, at: u64) -> Result<&[u8]> {
    let rest = table.get(offset as usize..).ok_or_else(|| {
        Error::new(
            at,
            ErrorKind::NamePastEnd {
                what: what(),
                offset,
            },
        )
    })?;
    let end = memchr::memchr(0, rest).ok_or_else(|| {
        Error::new(
            at,
            ErrorKind::NameNotTerminated {
                what: what(),
                offset,
            },
        )
    })?;
    Ok(rest.get(..end).unwrap_or_default())
}

/// The low 32 bits of `value`: a 32-bit object's words hold what the input's did, and its
/// offsets and sizes stay under 4 GiB as llvm-objcopy's do (it truncates too).
#[allow(clippy::cast_possible_truncation)] // Truncating is the point.
fn low32(value: u64) -> u32 {
    value as u32
}

/// A size of the ELF structures, all far under 64 KiB.
fn small(size: usize) -> u16 {
    u16::try_from(size).unwrap_or(u16::MAX)
}

/// `value` as an index into memory; one past every slice when it does not fit.
fn index(value: u64) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}

fn align_to(value: u64, align: u64) -> u64 {
    let align = align.max(1);
    value.div_ceil(align) * align
}

/// The relocatable object as read and checked.
struct Input<'a, Elf: Class> {
    e: Endianness,
    header: &'a Elf,
    /// The offset of the section header table, and its number of headers.
    shoff: u64,
    count: usize,
    /// The index of the section name table.
    names_index: usize,
    /// Sections 1.. in index order (the null section 0 is left out).
    sections: Vec<Section<'a>>,
    /// The index of the symbol table, if any (a relocatable object has at most one), and of
    /// the string table of its names.
    symtab_index: Option<usize>,
    symbol_names_index: Option<usize>,
    symbols: Vec<Symbol<'a, Elf>>,
}

impl<'a, Elf: Class> Input<'a, Elf> {
    /// Reads and checks the headers, sections and symbols of `file`.
    fn read(file: &'a [u8], e: Endianness) -> Result<Self> {
        let (header, shoff, count, names_index) = read_file_header::<Elf>(file, e)?;
        let mut input = Input {
            e,
            header,
            shoff,
            count,
            names_index,
            sections: Vec::new(),
            symtab_index: None,
            symbol_names_index: None,
            symbols: Vec::new(),
        };
        let (headers, _) = pod::slice_from_bytes::<Elf::SectionHeader>(
            file.get(index(shoff)..).unwrap_or_default(),
            count,
        )
        .map_err(|_| Error::new(shoff, ErrorKind::SectionHeadersPastEnd { count }))?;
        let data = headers
            .iter()
            .enumerate()
            .map(|(i, h)| input.section_data(file, h, i))
            .collect::<Result<Vec<_>>>()?;
        input.read_sections(headers, &data)?;
        input.read_symbols(headers, &data)?;
        Ok(input)
    }

    /// The file offset of the header of section `i`.
    fn header_at(&self, i: usize) -> u64 {
        self.shoff + (i * size_of::<Elf::SectionHeader>()) as u64
    }

    /// The contents of section `i` in the file (none for the null section and `SHT_NOBITS`).
    fn section_data(&self, file: &'a [u8], h: &Elf::SectionHeader, i: usize) -> Result<&'a [u8]> {
        let e = self.e;
        if h.sh_type(e) == SHT_NOBITS || i == 0 {
            return Ok(&[]);
        }
        let (offset, size): (u64, u64) = (h.sh_offset(e).into(), h.sh_size(e).into());
        offset
            .checked_add(size)
            .and_then(|end| file.get(index(offset)..index(end)))
            .ok_or_else(|| {
                Error::new(
                    self.header_at(i),
                    ErrorKind::SectionPastEnd {
                        index: i,
                        offset,
                        size,
                    },
                )
            })
    }

    /// Reads sections 1.. with their names, and checks their links and alignments.
    fn read_sections(
        &mut self,
        headers: &'a [Elf::SectionHeader],
        data: &[&'a [u8]],
    ) -> Result<()> {
        let e = self.e;
        let names_header = headers.get(self.names_index);
        let strings =
            names_header.map(|h| h.sh_type(e) == SHT_STRTAB && h.sh_flags(e).0 & SHF_ALLOC.0 == 0);
        let names = data.get(self.names_index).copied();
        let (Some(true), Some(names)) = (strings, names) else {
            let index = u32::try_from(self.names_index).unwrap_or(u32::MAX);
            return Err(Error::new(
                self.header_at(self.names_index),
                ErrorKind::NameTableNotStrings { index },
            ));
        };
        for ((i, h), &data) in headers.iter().enumerate().zip(data).skip(1) {
            let at = self.header_at(i);
            let name = string_at(names, h.sh_name(e), || format!("section {i}"), at)?;
            let header = Header::read(e, h, name);
            let section = || Name::of(name);
            let (link, info, align) = (header.link, header.info, header.align);
            let kind = if link as usize >= self.count {
                Some(ErrorKind::LinkNotSection {
                    section: section(),
                    link,
                })
            } else if header.relocates() && info as usize >= self.count {
                Some(ErrorKind::InfoNotSection {
                    section: section(),
                    info,
                })
            } else if align > 1 << 30 || (align != 0 && !align.is_power_of_two()) {
                Some(ErrorKind::SectionAlignment {
                    section: section(),
                    align,
                })
            } else if header.sh_type == SHT_SYMTAB_SHNDX {
                Some(ErrorKind::ExtendedIndexSection)
            } else {
                None
            };
            if let Some(kind) = kind {
                return Err(Error::new(at, kind));
            }
            self.sections.push(Section {
                header,
                old_index: Some(i),
                data,
            });
        }
        Ok(())
    }

    /// Reads the symbol table, if any, with the names of its symbols.
    fn read_symbols(&mut self, headers: &[Elf::SectionHeader], data: &[&'a [u8]]) -> Result<()> {
        let e = self.e;
        let Some(s) = self
            .sections
            .iter()
            .find(|s| s.header.sh_type == SHT_SYMTAB)
        else {
            return Ok(());
        };
        let index = s.old_index.expect("input section");
        let at = self.header_at(index);
        let entry = size_of::<Elf::Sym>();
        if s.header.entsize != entry as u64 || s.data.len() % entry != 0 {
            let (entsize, size) = (s.header.entsize, s.data.len());
            return Err(Error::new(
                at,
                ErrorKind::SymbolTableEntries {
                    entsize,
                    size,
                    entry,
                },
            ));
        }
        let link = s.header.link as usize;
        let names = data
            .get(link)
            .filter(|_| {
                headers
                    .get(link)
                    .is_some_and(|h| h.sh_type(e) == SHT_STRTAB)
            })
            .ok_or(Error::new(at, ErrorKind::SymbolNamesNotStrings))?;
        let (table_offset, table) = (s.header.offset, s.data);
        let mut symbols = Vec::with_capacity(table.len() / entry);
        for (k, raw) in records::<Elf::Sym>(table).iter().enumerate() {
            let sym_at = table_offset + (k * entry) as u64;
            let name = string_at(names, raw.st_name(e), || format!("symbol {k}"), sym_at)?;
            let shndx = u32::from(raw.st_shndx(e).0);
            if shndx == u32::from(SHN_XINDEX.0) {
                return Err(Error::new(sym_at, ErrorKind::ExtendedIndexSymbol));
            }
            if shndx != 0 && shndx < u32::from(SHN_LORESERVE) && shndx as usize >= self.count {
                let symbol = Name::of(name);
                let kind = ErrorKind::SymbolSection {
                    symbol,
                    index: shndx,
                };
                return Err(Error::new(sym_at, kind));
            }
            symbols.push(Symbol { name, raw, shndx });
        }
        self.symtab_index = Some(index);
        self.symbol_names_index = Some(link);
        self.symbols = symbols;
        Ok(())
    }

    /// The input section at index `i` (from 1).
    fn section(&self, i: usize) -> &Section<'a> {
        i.checked_sub(1)
            .and_then(|k| self.sections.get(k))
            .expect("section indexes were checked against the count when read")
    }
}

/// Reads and checks the file header: (the header, `e_shoff`, `e_shnum`, `e_shstrndx`).
fn read_file_header<Elf: Class>(file: &[u8], e: Endianness) -> Result<(&Elf, u64, usize, usize)> {
    let (header, _) =
        pod::from_bytes::<Elf>(file).map_err(|_| Error::new(0, ErrorKind::TruncatedElfHeader))?;
    let file_type = header.e_type(e);
    if file_type != ET_REL {
        let kind = ErrorKind::NotRelocatable {
            file_type: file_type.0,
        };
        return Err(Error::new(E_TYPE_AT, kind));
    }
    if header.e_phnum(e) != 0 || header.e_phoff(e).into() != 0 {
        return Err(Error::new(Elf::PHOFF_AT, ErrorKind::ProgramHeadersInObject));
    }
    let shoff: u64 = header.e_shoff(e).into();
    let count = usize::from(header.e_shnum(e));
    if shoff == 0 || count == 0 {
        return Err(Error::new(Elf::SHOFF_AT, ErrorKind::NoSectionHeaders));
    }
    let entry = size_of::<Elf::SectionHeader>();
    let size = header.e_shentsize(e);
    if usize::from(size) != entry {
        let kind = ErrorKind::SectionHeaderSize {
            size,
            expected: entry,
        };
        return Err(Error::new(Elf::SHENTSIZE_AT, kind));
    }
    shoff
        .checked_add((count * entry) as u64)
        .filter(|&end| end <= file.len() as u64)
        .ok_or(Error::new(
            shoff,
            ErrorKind::SectionHeadersPastEnd { count },
        ))?;
    let names_index = header.e_shstrndx(e).0;
    if names_index == SHN_XINDEX.0 || usize::from(names_index) >= count || names_index == 0 {
        let kind = ErrorKind::NameTableIndex {
            index: u32::from(names_index),
        };
        return Err(Error::new(Elf::SHSTRNDX_AT, kind));
    }
    Ok((header, shoff, count, usize::from(names_index)))
}

/// What goes, and the new index of each input section that stays.
struct Renumbering {
    /// By input index: whether the section goes.
    gone: Vec<bool>,
    /// By input index: the section's index in the output (0 for those that go).
    new_index: Vec<u32>,
}

impl Renumbering {
    /// Whether input section `i` goes (indexes were checked against the count when read).
    fn gone(&self, i: usize) -> bool {
        self.gone.get(i).copied().unwrap_or(false)
    }

    /// The output index of input section `i` (0 when it goes).
    fn new_index(&self, i: usize) -> u32 {
        self.new_index.get(i).copied().unwrap_or(0)
    }
}

impl<'a, Elf: Class> Input<'a, Elf> {
    /// What goes: the sections asked for, the relocation sections that apply to them, and
    /// groups left without members. Refuses to remove what a kept section or a symbol needs.
    fn renumber(&self, remove: &dyn Fn(&[u8]) -> bool) -> Result<Renumbering> {
        let removed_directly: Vec<bool> = std::iter::once(false)
            .chain(self.sections.iter().map(|s| remove(s.header.name)))
            .collect();
        let mut gone = removed_directly.clone();
        let removed = |i: usize| removed_directly.get(i).copied().unwrap_or(false);
        for (s, gone) in self.sections.iter().zip(gone.iter_mut().skip(1)) {
            if *gone {
                continue;
            }
            if s.header.relocates() && s.header.info != 0 {
                *gone = removed(s.header.info as usize);
            }
            if s.header.sh_type == SHT_GROUP {
                let members = self.group_members(s)?;
                *gone = members.iter().all(|&m| removed(m as usize));
            }
        }
        self.check_removal(&gone)?;
        let mut next = 0;
        let new_index = gone
            .iter()
            .enumerate()
            .map(|(i, &gone)| {
                if i == 0 || gone {
                    0
                } else {
                    next += 1;
                    next
                }
            })
            .collect();
        Ok(Renumbering { gone, new_index })
    }

    /// Refuses a removal that leaves a kept section linking to a removed one, or a symbol
    /// defined in one.
    fn check_removal(&self, gone: &[bool]) -> Result<()> {
        let gone = |i: usize| gone.get(i).copied().unwrap_or(false);
        if gone(self.names_index) {
            return Err(Error::new(0, ErrorKind::NameTableRemoved));
        }
        for s in &self.sections {
            let i = s.old_index.expect("input section");
            if !gone(i) && s.header.link != 0 && gone(s.header.link as usize) {
                let kind = ErrorKind::RemovedButLinked {
                    section: Name::of(self.section(s.header.link as usize).header.name),
                    by: Name::of(s.header.name),
                };
                return Err(Error::new(self.header_at(i), kind));
            }
        }
        let defined_in_removed = |sym: &&Symbol<'a, Elf>| {
            sym.shndx != 0 && sym.shndx < u32::from(SHN_LORESERVE) && gone(sym.shndx as usize)
        };
        if let Some(symbol) = self.symbols.iter().find(defined_in_removed) {
            let kind = ErrorKind::RemovedButDefines {
                section: Name::of(self.section(symbol.shndx as usize).header.name),
                symbol: Name::of(symbol.name),
            };
            return Err(Error::new(0, kind));
        }
        Ok(())
    }

    /// The sections of the output: the input's that stay, then `added`.
    fn kept(
        &self,
        renumbering: &Renumbering,
        added: &[AddedSection<'a>],
    ) -> Result<Vec<Section<'a>>> {
        let mut kept: Vec<Section<'a>> = self
            .sections
            .iter()
            .filter(|s| !renumbering.gone(s.old_index.expect("input section")))
            .cloned()
            .collect();
        kept.extend(added.iter().map(|a| Section {
            header: Header {
                name: a.name.as_bytes(),
                sh_type: SHT_PROGBITS,
                flags: SHF_EXCLUDE.0,
                addr: 0,
                // Laid out after every input section.
                offset: u64::MAX,
                size: a.data.len() as u64,
                link: 0,
                info: 0,
                align: 1,
                entsize: 0,
            },
            old_index: None,
            data: a.data,
        }));
        let count = kept.len() + 1;
        if count >= usize::from(SHN_LORESERVE) {
            return Err(Error::new(0, ErrorKind::TooManySections { count }));
        }
        Ok(kept)
    }

    /// The string tables built anew, by input index: section names go to the name table,
    /// symbol names to the symbol table's.
    fn string_tables(&self, kept: &[Section<'a>]) -> StringTables {
        let mut tables = StringTables(Vec::new());
        for old in kept
            .iter()
            .filter(|s| s.header.is_unloaded_strings())
            .filter_map(|s| s.old_index)
        {
            let mut strings: Vec<&[u8]> = Vec::new();
            if old == self.names_index {
                strings.extend(kept.iter().map(|s| s.header.name));
            }
            if Some(old) == self.symbol_names_index {
                strings.extend(self.symbols.iter().map(|s| s.name));
            }
            tables
                .0
                .push((old, StringTable::build(strings, Flavor::Elf)));
        }
        tables
    }

    /// New contents asked of `replace`, in output order: only for sections of plain data that
    /// nothing relocates.
    fn replacements(
        &self,
        kept: &[Section<'a>],
        replace: &Replace<'_, 'a>,
    ) -> Result<Vec<Option<Cow<'a, [u8]>>>> {
        let mut replaced = Vec::with_capacity(kept.len());
        for s in kept {
            let plain = s.old_index.is_some()
                && (s.header.sh_type == SHT_PROGBITS || s.header.sh_type == SHT_LLVM_OFFLOADING);
            let new = if plain {
                replace(s.header.name, s.data)
            } else {
                None
            };
            if let (Some(old), Some(_)) = (s.old_index, &new) {
                if kept
                    .iter()
                    .any(|r| r.header.relocates() && r.header.info as usize == old)
                {
                    let section = Name::of(s.header.name);
                    let kind = ErrorKind::ReplacedButRelocated { section };
                    return Err(Error::new(self.header_at(old), kind));
                }
            }
            replaced.push(new);
        }
        Ok(replaced)
    }
}

/// The string tables built anew, by the input index of their section.
struct StringTables(Vec<(usize, StringTable)>);

impl StringTables {
    fn get(&self, old: usize) -> Option<&StringTable> {
        self.0.iter().find(|(i, _)| *i == old).map(|(_, t)| t)
    }
}

impl<'a, Elf: Class> Input<'a, Elf> {
    /// The contents of the output's sections, in order; their headers get the sizes, links and
    /// indexes those contents need.
    fn contents(
        &self,
        kept: &mut [Section<'a>],
        replaced: Vec<Option<Cow<'a, [u8]>>>,
        renumbering: &Renumbering,
        tables: &StringTables,
    ) -> Result<Vec<Cow<'a, [u8]>>> {
        // Old and new sizes of replaced sections, by input index, for the symbols in them.
        let mut resized: Vec<Option<(u64, u64)>> = vec![None; self.count];
        for (s, new) in kept.iter().zip(&replaced) {
            if let (Some(old), Some(new)) = (s.old_index, new) {
                if let Some(entry) = resized.get_mut(old) {
                    *entry = Some((s.data.len() as u64, new.len() as u64));
                }
            }
        }
        let mut contents = Vec::with_capacity(kept.len());
        for (s, new) in kept.iter_mut().zip(replaced) {
            let Some(old) = s.old_index else {
                contents.push(Cow::Borrowed(s.data));
                continue;
            };
            let h = &mut s.header;
            let data: Cow<'a, [u8]> = if let Some(new) = new {
                new
            } else if h.is_unloaded_strings() {
                Cow::Owned(tables.get(old).expect("built for it").bytes.clone())
            } else if h.sh_type == SHT_SYMTAB {
                Cow::Owned(self.symbol_table(h, tables, renumbering, &resized)?)
            } else if h.relocates() {
                self.check_relocations(h, s.data, old)?;
                if h.info != 0 {
                    h.info = renumbering.new_index(h.info as usize);
                }
                h.align = word_size::<Elf>();
                Cow::Borrowed(s.data)
            } else if h.sh_type == SHT_GROUP {
                Cow::Owned(self.group(old, renumbering)?)
            } else {
                Cow::Borrowed(s.data)
            };
            if h.sh_type != SHT_NOBITS {
                h.size = data.len() as u64;
            }
            if h.link != 0 {
                h.link = renumbering.new_index(h.link as usize);
            }
            contents.push(data);
        }
        Ok(contents)
    }

    /// The symbol table written anew: names in the new string table, new section indexes, the
    /// sizes of symbols covering a whole replaced section following it. Sets the header's
    /// `sh_info` (one past the last local symbol), entry size and alignment.
    fn symbol_table(
        &self,
        h: &mut Header<'a>,
        tables: &StringTables,
        renumbering: &Renumbering,
        resized: &[Option<(u64, u64)>],
    ) -> Result<Vec<u8>> {
        let e = self.e;
        let names = tables
            .get(h.link as usize)
            .ok_or(Error::new(h.offset, ErrorKind::SymbolNamesAllocated))?;
        let entry = size_of::<Elf::Sym>();
        let mut out = Vec::with_capacity(self.symbols.len() * entry);
        let mut last_local = 0;
        for (k, sym) in self.symbols.iter().enumerate() {
            let in_section = sym.shndx != 0 && sym.shndx < u32::from(SHN_LORESERVE);
            let shndx = if in_section {
                renumbering.new_index(sym.shndx as usize)
            } else {
                sym.shndx
            };
            let size = match in_section
                .then(|| resized.get(sym.shndx as usize).copied().flatten())
                .flatten()
            {
                Some((old_size, new_size)) => {
                    let value: u64 = sym.raw.st_value(e).into();
                    let size: u64 = sym.raw.st_size(e).into();
                    if value == 0 && size == old_size {
                        // A symbol for the whole section follows its new size.
                        Some(new_size)
                    } else if value.saturating_add(size) <= new_size {
                        Some(size)
                    } else {
                        let symbol = Name::of(sym.name);
                        let at = h.offset + (k * entry) as u64;
                        return Err(Error::new(at, ErrorKind::SymbolInRemovedBytes { symbol }));
                    }
                }
                None => None,
            };
            let name = names.offset(sym.name);
            // Below SHN_LORESERVE, or one of the reserved indexes the input had.
            let shndx = u16::try_from(shndx).unwrap_or(SHN_XINDEX.0);
            let new = Elf::new_symbol(e, sym.raw, name, shndx, size);
            out.extend_from_slice(pod::bytes_of(&new));
            if sym.raw.st_bind() == STB_LOCAL {
                last_local = k;
            }
        }
        h.info = u32::try_from(last_local + 1).unwrap_or(u32::MAX);
        h.entsize = entry as u64;
        h.align = word_size::<Elf>();
        Ok(out)
    }

    /// Checks that the relocation section `h` (input index `old`) holds whole entries that
    /// name symbols of the symbol table.
    fn check_relocations(&self, h: &Header<'a>, data: &[u8], old: usize) -> Result<()> {
        let e = self.e;
        let rela = h.sh_type == SHT_RELA;
        let entry = if rela {
            size_of::<Elf::Rela>()
        } else {
            size_of::<Elf::Rel>()
        } as u64;
        if h.entsize != entry || data.len() as u64 % entry != 0 {
            let kind = ErrorKind::RelocationEntries {
                section: Name::of(h.name),
                entsize: h.entsize,
                size: data.len(),
                entry,
            };
            return Err(Error::new(self.header_at(old), kind));
        }
        if Some(h.link as usize) != self.symtab_index {
            return Ok(());
        }
        let symbols: Vec<u32> = if rela {
            let relocations = records::<Elf::Rela>(data).iter();
            relocations.map(|r| r.r_sym(e, false)).collect()
        } else {
            records::<Elf::Rel>(data)
                .iter()
                .map(|r| r.r_sym(e))
                .collect()
        };
        let count = self.symbols.len();
        match symbols.iter().position(|&sym| sym as usize >= count) {
            Some(index) => {
                let kind = ErrorKind::RelocationSymbol {
                    section: Name::of(h.name),
                    index,
                    symbol: symbols.get(index).copied().unwrap_or_default(),
                    count,
                };
                Err(Error::new(h.offset + index as u64 * entry, kind))
            }
            None => Ok(()),
        }
    }

    /// The group section at input index `old` written anew: its flag word, then the new
    /// indexes of the members that stay.
    fn group(&self, old: usize, renumbering: &Renumbering) -> Result<Vec<u8>> {
        let s = self.section(old);
        let members = self.group_members(s)?;
        let mut out = Vec::with_capacity(4 * (members.len() + 1));
        out.extend_from_slice(s.data.get(..4).unwrap_or_default());
        for m in members
            .into_iter()
            .filter(|&m| !renumbering.gone(m as usize))
        {
            let new = U32::<Endianness>::new(self.e, renumbering.new_index(m as usize));
            out.extend_from_slice(pod::bytes_of(&new));
        }
        Ok(out)
    }

    /// The member section indexes of the group section `s`, checked.
    fn group_members(&self, s: &Section<'a>) -> Result<Vec<u32>> {
        let at = self.header_at(s.old_index.expect("input section"));
        let section = || Name::of(s.header.name);
        let size = s.data.len();
        if size < 4 || size % 4 != 0 {
            return Err(Error::new(
                at,
                ErrorKind::GroupSize {
                    section: section(),
                    size,
                },
            ));
        }
        records::<U32<Endianness>>(s.data.get(4..).unwrap_or_default())
            .iter()
            .map(|w| match w.get(self.e) {
                m if m == 0 || m as usize >= self.count => Err(Error::new(
                    at,
                    ErrorKind::GroupMember {
                        section: section(),
                        member: m,
                    },
                )),
                m => Ok(m),
            })
            .collect()
    }
}

/// New file offsets, as llvm-objcopy lays them out: after the ELF header, sections in the
/// order of their old offsets (added ones last, ties in index order), each at the next
/// multiple of its alignment; then the section header table. Returns the offsets, the
/// table's offset and the size of the file.
fn lay_out<Elf: Class>(kept: &[Section<'_>]) -> (Vec<u64>, u64, u64) {
    let mut order: Vec<(usize, &Header<'_>)> = kept.iter().map(|s| &s.header).enumerate().collect();
    order.sort_by_key(|(_, h)| h.offset);
    let mut cursor = size_of::<Elf>() as u64;
    let mut offsets = vec![0u64; kept.len()];
    for (k, h) in order {
        cursor = align_to(cursor, h.align);
        if let Some(offset) = offsets.get_mut(k) {
            *offset = cursor;
        }
        if h.sh_type != SHT_NOBITS {
            cursor += h.size;
        }
    }
    let shoff = align_to(cursor, word_size::<Elf>());
    let count = kept.len() as u64 + 1;
    (
        offsets,
        shoff,
        shoff + count * size_of::<Elf::SectionHeader>() as u64,
    )
}

/// The output: the file header, the sections' contents at their new offsets, the section
/// header table (a null header first).
fn write<'a, Elf: Class>(
    input: &Input<'a, Elf>,
    kept: &[Section<'a>],
    contents: Vec<Cow<'a, [u8]>>,
    names: &StringTable,
    names_index: u16,
) -> Rewritten<'a> {
    let e = input.e;
    let (offsets, shoff, size) = lay_out::<Elf>(kept);
    // Fewer than SHN_LORESERVE sections are kept (checked by `kept`).
    let count = u16::try_from(kept.len() + 1).unwrap_or(u16::MAX);
    let mut out = Rewritten::default();
    let header = Elf::new_file_header(e, input.header, shoff, count, names_index);
    out.push(0, pod::bytes_of(&header).to_vec());
    let mut headers = vec![0u8; size_of::<Elf::SectionHeader>()];
    for ((s, data), &offset) in kept.iter().zip(contents).zip(&offsets) {
        let h = &s.header;
        let header = Elf::new_section_header(e, names.offset(h.name), h, offset);
        headers.extend_from_slice(pod::bytes_of(&header));
        if h.sh_type != SHT_NOBITS {
            out.push(offset, data);
        }
    }
    out.push(shoff, headers);
    out.finish(size)
}
