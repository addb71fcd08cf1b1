//! What can be wrong in a host container (an object file, a program, a shared library) that
//! offload data is read from or rewritten in, and where: every error carries the byte offset
//! of the field or structure at fault, as format errors do.

use std::fmt;

/// An error in a host container: the byte offset of what is wrong, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("offset {offset:#x}: {kind}")]
pub struct Error {
    /// Byte offset, from the start of the file, of the field or structure that is wrong.
    pub offset: u64,
    /// What is wrong with it.
    pub kind: ErrorKind,
}

impl Error {
    /// An error of `kind` at `offset`.
    pub fn new(offset: u64, kind: ErrorKind) -> Self {
        Error { offset, kind }
    }

    /// A format error found in data that starts `base` bytes into the container (a bundle
    /// inside a section, say): its offset counted from the start of the container.
    pub fn in_contents(error: crate::format::Error, base: u64) -> Self {
        let error = error.rebased(base);
        Error::new(error.offset, ErrorKind::Contents(error.kind))
    }
}

/// A name in an error message, as the file spells it (not necessarily UTF-8). A boxed `str`
/// rather than a `String` keeps the kinds that name three things small enough to return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name(pub Box<str>);

impl Name {
    /// The name of raw bytes, invalid UTF-8 replaced.
    pub fn of(bytes: &[u8]) -> Self {
        Name(String::from_utf8_lossy(bytes).into())
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The kinds of container error. Their messages name the structure in the container format's
/// own words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Offload data inside the container (a bundle, a compressed bundle, an offload binary) is
    /// damaged; the offset of the error counts from the start of the container.
    #[error("{0}")]
    Contents(crate::format::ErrorKind),

    // Any file.
    /// The file is of a kind that this edit does not support.
    #[error(
        "sections can be added to ELF and COFF relocatable objects only, not to this {kind} file"
    )]
    UnsupportedKind {
        /// The kind of file, as `object` names it.
        kind: String,
    },

    // Linked ELF programs and shared libraries.
    /// The file does not start with the ELF magic.
    #[error("not an ELF file")]
    NotElf,
    /// The program is not 64-bit little-endian.
    #[error("only 64-bit little-endian programs can be rewritten")]
    UnsupportedProgramClass,
    /// The program is for a machine whose relocations are not known here.
    #[error("machine {machine} is not x86-64 or AArch64")]
    UnsupportedMachine {
        /// `e_machine`.
        machine: u16,
    },
    /// `e_phentsize` or `e_shentsize` is not the size of the class's headers.
    #[error("unexpected program or section header size")]
    HeaderEntrySize,
    /// The program or section header table does not fit in the file.
    #[error("program or section headers lie outside the file")]
    HeadersOutsideFile,
    /// A section or other structure does not fit in the file.
    #[error("{what} lies outside the file")]
    OutsideFile {
        /// What: a section's name (quoted when it comes from the file) or a description.
        what: String,
    },
    /// A dynamic relocation refers to a symbol defined in the section whose bytes move.
    #[error("a dynamic relocation refers to a symbol inside {section}, whose bytes move")]
    RelocationToMovingSymbol {
        /// The section.
        section: String,
    },
    /// A program holds device code of two runtimes whose containers both outgrow their
    /// sections: only one section can move to a new place.
    #[error("the containers of both {first} and {second} outgrow their sections: only one of them can move")]
    SeveralDeviceSections {
        /// The section that moves.
        first: String,
        /// The other.
        second: String,
    },
    /// A pointer into the section of containers points at no container's start.
    #[error("an address inside {section} ({address:#x}) is not the start of a bundle")]
    PointerIntoBundle {
        /// The section.
        section: String,
        /// The address the pointer holds.
        address: u64,
    },
    /// A program's HIP code cannot be moved to kpack archives, or back.
    #[error("{message}")]
    Kpack {
        /// What is wrong.
        message: String,
    },
    /// The rewritten containers are larger than their section.
    #[error("the rewritten bundles ({size} bytes) no longer fit {section} ({room} bytes)")]
    SectionOutgrown {
        /// The section.
        section: String,
        /// The size of the rewritten containers, packed.
        size: u64,
        /// The size of the section.
        room: u64,
    },
    /// The section of containers lies in no loaded segment.
    #[error("{section} is in no loaded segment")]
    NotLoaded {
        /// The section.
        section: String,
    },
    /// The segment that loads the section does not map it as its offset and address say.
    #[error("the segment that holds {section} does not map it consistently")]
    InconsistentSegment {
        /// The section.
        section: String,
    },
    /// The segment would take the program header table, but maps offsets differently from
    /// the first segment.
    #[error(
        "the segment of {section} does not map offsets as the first segment does; \
         the program header table cannot move there"
    )]
    TableCannotMove {
        /// The section.
        section: String,
    },
    /// The temporary file that holds the rewritten containers could not be made, written
    /// or read.
    #[error("the rewritten bundles cannot be held in a temporary file: {error}")]
    Spill {
        /// What failed.
        error: String,
    },
    /// The program header table, one entry longer, does not fit the emptied section.
    #[error(
        "the program header table, one entry longer, does not fit the {section} it leaves; \
         the bundles cannot move to a new segment"
    )]
    NoRoomForProgramHeaders {
        /// The section.
        section: String,
    },
    // Linked PE images.
    /// The file is not a PE image (no `MZ` header, or no `PE\0\0` signature where it says).
    #[error("not a PE image")]
    NotPe,
    /// The section of containers holds the place of a base relocation, or a data directory
    /// points into it: something else lives among the bytes that move.
    #[error("{what} lies inside {section}, whose bytes move")]
    InsideMovingSection {
        /// What: a base relocation, a data directory.
        what: String,
        /// The section.
        section: String,
    },
    /// The image's headers are inconsistent: alignments, sizes or the section table.
    #[error("inconsistent PE headers: {what}")]
    InconsistentImage {
        /// What is wrong.
        what: String,
    },
    /// The image is signed: any change would void its signature.
    #[error("the image is signed (a certificate table is present); rewriting it would void the signature, remove the signature first")]
    SignedImage,
    /// No room in the headers for one more section header.
    #[error(
        "no room for one more section header before the first section's data; the bundles of \
         {section} cannot move to a new section"
    )]
    NoRoomForSectionHeader {
        /// The section.
        section: String,
    },
    // Relocatable ELF objects.
    /// The file is shorter than the ELF identification.
    #[error("truncated ELF identification")]
    TruncatedElfIdent,
    /// `EI_CLASS` is neither 32-bit nor 64-bit.
    #[error("unknown ELF class {class}")]
    UnknownElfClass {
        /// `EI_CLASS`.
        class: u8,
    },
    /// `EI_DATA` is neither little- nor big-endian.
    #[error("unknown ELF data encoding {data}")]
    UnknownElfDataEncoding {
        /// `EI_DATA`.
        data: u8,
    },
    /// The file is shorter than the ELF header of its class.
    #[error("truncated ELF header")]
    TruncatedElfHeader,
    /// The object is not relocatable (`ET_REL`).
    #[error("only relocatable ELF objects can be rewritten, this one has type {file_type}")]
    NotRelocatable {
        /// `e_type`.
        file_type: u16,
    },
    /// A relocatable object with program headers.
    #[error("a relocatable ELF object with program headers is not supported")]
    ProgramHeadersInObject,
    /// No section header table, or one counted in section 0 (`e_shnum` 0).
    #[error(
        "the ELF object has no section header table (or more than 65279 sections, which is not \
         supported)"
    )]
    NoSectionHeaders,
    /// `e_shentsize` is not the class's section header size.
    #[error("section header size {size} is not {expected}")]
    SectionHeaderSize {
        /// `e_shentsize`.
        size: u16,
        /// The class's section header size.
        expected: usize,
    },
    /// The section header table runs past the end of the file.
    #[error("the section header table ({count} headers) runs past the end of the file")]
    SectionHeadersPastEnd {
        /// `e_shnum`.
        count: usize,
    },
    /// `e_shstrndx` names no section.
    #[error("section name table index {index} is not a section of the file")]
    NameTableIndex {
        /// `e_shstrndx`.
        index: u32,
    },
    /// A section's contents run past the end of the file.
    #[error(
        "section {index}: its contents (offset {offset:#x}, size {size:#x}) run past the end of \
         the file"
    )]
    SectionPastEnd {
        /// The section index.
        index: usize,
        /// `sh_offset`.
        offset: u64,
        /// `sh_size`.
        size: u64,
    },
    /// The section `e_shstrndx` names is not a non-allocated string table.
    #[error(
        "section {index}, named as the section name table, is not a non-allocated string table"
    )]
    NameTableNotStrings {
        /// `e_shstrndx`.
        index: u32,
    },
    /// A name offset lies past the end of its string table.
    #[error("{what}: name offset {offset} is past the end of its string table")]
    NamePastEnd {
        /// What the name is of (`section 3`, `symbol 7`).
        what: String,
        /// The offset in the string table.
        offset: u32,
    },
    /// A name runs to the end of its string table without a NUL.
    #[error("{what}: name at offset {offset} is not terminated")]
    NameNotTerminated {
        /// What the name is of.
        what: String,
        /// The offset in the string table.
        offset: u32,
    },
    /// `sh_link` names no section.
    #[error("section '{section}': link {link} is not a section")]
    LinkNotSection {
        /// The section.
        section: Name,
        /// `sh_link`.
        link: u32,
    },
    /// A relocation section's `sh_info` names no section.
    #[error("section '{section}': info {info} is not a section")]
    InfoNotSection {
        /// The section.
        section: Name,
        /// `sh_info`.
        info: u32,
    },
    /// `sh_addralign` is not a power of two, or larger than 1 GiB.
    #[error("section '{section}': alignment {align:#x} is not a power of two up to 1 GiB")]
    SectionAlignment {
        /// The section.
        section: Name,
        /// `sh_addralign`.
        align: u64,
    },
    /// An `SHT_SYMTAB_SHNDX` section.
    #[error("extended section indexes (SHT_SYMTAB_SHNDX) are not supported")]
    ExtendedIndexSection,
    /// A symbol whose section index is `SHN_XINDEX`.
    #[error("extended section indexes (SHN_XINDEX) are not supported")]
    ExtendedIndexSymbol,
    /// The symbol table's entry size or size does not fit its entries.
    #[error(
        "symbol table: entry size {entsize} and size {size} do not fit entries of {entry} bytes"
    )]
    SymbolTableEntries {
        /// `sh_entsize`.
        entsize: u64,
        /// The size of its contents.
        size: usize,
        /// The class's symbol size.
        entry: usize,
    },
    /// The symbol table's `sh_link` is not a string table.
    #[error("symbol table: its link is not a string table")]
    SymbolNamesNotStrings,
    /// The symbol table's string table is allocated, so it cannot be built anew.
    #[error("symbol table: its string table is allocated")]
    SymbolNamesAllocated,
    /// A symbol's section index names no section.
    #[error("symbol '{symbol}': section index {index} is not a section")]
    SymbolSection {
        /// The symbol.
        symbol: Name,
        /// `st_shndx`.
        index: u32,
    },
    /// Removing the section name table.
    #[error("the section name table cannot be removed")]
    NameTableRemoved,
    /// Removing a section that a kept section links to.
    #[error(
        "section '{section}' cannot be removed because it is referenced by the section '{by}'"
    )]
    RemovedButLinked {
        /// The section asked to go.
        section: Name,
        /// The section that links to it.
        by: Name,
    },
    /// Removing a section in which a symbol is defined.
    #[error("section '{section}' cannot be removed: symbol '{symbol}' is defined in it")]
    RemovedButDefines {
        /// The section asked to go.
        section: Name,
        /// The symbol defined in it.
        symbol: Name,
    },
    /// More sections than the writer can number.
    #[error("{count} sections are more than this writer supports (65279)")]
    TooManySections {
        /// The number of sections, the null one included.
        count: usize,
    },
    /// New contents for a section that relocations apply to.
    #[error("section '{section}' has relocations, so its contents cannot be replaced")]
    ReplacedButRelocated {
        /// The section.
        section: Name,
    },
    /// A symbol in the part of a section that new, shorter contents leave out.
    #[error("symbol '{symbol}' points into bytes the rewrite removes")]
    SymbolInRemovedBytes {
        /// The symbol.
        symbol: Name,
    },
    /// A relocation section's entry size or size does not fit its entries.
    #[error(
        "section '{section}': entry size {entsize} and size {size} do not fit relocations of \
         {entry} bytes"
    )]
    RelocationEntries {
        /// The section.
        section: Name,
        /// `sh_entsize`.
        entsize: u64,
        /// The size of its contents.
        size: usize,
        /// The class's relocation size.
        entry: u64,
    },
    /// A relocation names a symbol past the end of the symbol table.
    #[error(
        "section '{section}': relocation {index} refers to symbol {symbol}, but the symbol table \
         has {count} entries"
    )]
    RelocationSymbol {
        /// The relocation section.
        section: Name,
        /// The relocation's index in it.
        index: usize,
        /// The symbol index.
        symbol: u32,
        /// The number of symbols.
        count: usize,
    },
    /// A group section whose size is not a flag word and whole member words.
    #[error("group section '{section}' has size {size}, not a multiple of 4")]
    GroupSize {
        /// The group section.
        section: Name,
        /// Its size.
        size: usize,
    },
    /// A group member that is not a section.
    #[error("group section '{section}' names section {member}, which does not exist")]
    GroupMember {
        /// The group section.
        section: Name,
        /// The member's section index.
        member: u32,
    },

    // Relocatable COFF objects.
    /// A PE image (it starts with `MZ`), not an object.
    #[error(
        "this is a PE image (an executable or DLL); only COFF relocatable objects can be rewritten"
    )]
    PeImage,
    /// A big COFF object (`/bigobj`), which starts with an anonymous object header.
    #[error(
        "this is a big COFF object (/bigobj); only plain COFF relocatable objects can be rewritten"
    )]
    BigObject,
    /// Another file that starts with an anonymous object header (an import library member).
    #[error(
        "this is an import library member or other anonymous object; only plain COFF \
         relocatable objects can be rewritten"
    )]
    AnonymousObject,
    /// The file is shorter than the COFF file header.
    #[error("the COFF file header needs 20 bytes, the file has {file_size}")]
    TruncatedCoffHeader {
        /// The size of the file.
        file_size: usize,
    },
    /// `SizeOfOptionalHeader` is not 0: an image, not an object.
    #[error(
        "the file has an optional header ({size} bytes), as images do; only COFF relocatable \
         objects can be rewritten"
    )]
    OptionalHeader {
        /// `SizeOfOptionalHeader`.
        size: u16,
    },
    /// The section table runs past the end of the file.
    #[error(
        "the section table ({count} headers) runs past the end of the file ({file_size:#x} bytes)"
    )]
    SectionTablePastEnd {
        /// `NumberOfSections`.
        count: usize,
        /// The size of the file.
        file_size: usize,
    },
    /// `NumberOfSymbols` is not 0 but `PointerToSymbolTable` is.
    #[error("the file has {count} symbols but no symbol table")]
    SymbolsWithoutTable {
        /// `NumberOfSymbols`.
        count: u32,
    },
    /// The symbol table runs past the end of the file.
    #[error(
        "the symbol table ({count} symbols at {at:#x}) runs past the end of the file \
         ({file_size:#x} bytes)"
    )]
    SymbolTablePastEnd {
        /// `NumberOfSymbols`.
        count: u32,
        /// `PointerToSymbolTable`.
        at: u64,
        /// The size of the file.
        file_size: usize,
    },
    /// The file ends before the size field of the string table.
    #[error("the string table's size field runs past the end of the file")]
    StringTableSizePastEnd,
    /// The string table is larger than what is left of the file.
    #[error(
        "the string table ({size} bytes) runs past the end of the file ({file_size:#x} bytes)"
    )]
    StringTablePastEnd {
        /// The size the string table's size field gives.
        size: u32,
        /// The size of the file.
        file_size: usize,
    },
    /// The last byte of the string table is not a NUL.
    #[error("the string table does not end with a NUL")]
    StringTableNotTerminated,
    /// A name refers to the string table, which holds no strings.
    #[error("{what}: names string table offset {offset}, but the string table is empty")]
    StringTableEmpty {
        /// What the name is of (`section name '/4'`, `symbol 7`).
        what: String,
        /// The offset in the string table.
        offset: u32,
    },
    /// A name refers to an offset past the end of the string table.
    #[error(
        "{what}: string table offset {offset} is past the end of the string table ({size} bytes)"
    )]
    StringPastEnd {
        /// What the name is of.
        what: String,
        /// The offset in the string table.
        offset: u32,
        /// The size of the string table, its size field included.
        size: usize,
    },
    /// A section name starting with `/` is not a decimal or `//` base-64 offset.
    #[error("section name '{name}' is not a valid string table reference")]
    SectionNameReference {
        /// The 8-byte name field, up to its first NUL.
        name: Name,
    },
    /// A section's raw data runs past the end of the file.
    #[error(
        "section '{section}': its data ({size:#x} bytes at {pointer:#x}) runs past the end of \
         the file ({file_size:#x} bytes)"
    )]
    SectionDataPastEnd {
        /// The section.
        section: Name,
        /// `SizeOfRawData`.
        size: u32,
        /// `PointerToRawData`.
        pointer: u64,
        /// The size of the file.
        file_size: usize,
    },
    /// A symbol's auxiliary records run past the end of the symbol table.
    #[error(
        "symbol {index} ('{symbol}'): its {count} auxiliary records run past the end of the \
         symbol table ({records} records)"
    )]
    AuxiliaryRecordsPastEnd {
        /// The symbol's record index.
        index: usize,
        /// The symbol.
        symbol: Name,
        /// `NumberOfAuxSymbols`.
        count: usize,
        /// The number of records in the symbol table.
        records: usize,
    },
    /// A symbol's section number names no section.
    #[error(
        "symbol {index} ('{symbol}'): section number {number} is not a section of the file \
         ({sections} sections)"
    )]
    SymbolSectionNumber {
        /// The symbol's record index.
        index: usize,
        /// The symbol.
        symbol: Name,
        /// `SectionNumber`.
        number: u16,
        /// The number of sections.
        sections: usize,
    },
    /// A file symbol whose auxiliary records are all zero.
    #[error(
        "symbol {index} ('{symbol}'): a file symbol whose {count} auxiliary records hold no \
         name is not supported"
    )]
    FileSymbolWithoutName {
        /// The symbol's record index.
        index: usize,
        /// The symbol.
        symbol: Name,
        /// `NumberOfAuxSymbols`.
        count: usize,
    },
    /// An associative COMDAT section definition names no section.
    #[error(
        "symbol {index} ('{symbol}'): associative COMDAT section number {number} is not a \
         section of the file ({sections} sections)"
    )]
    AssociativeSectionNumber {
        /// The symbol's record index.
        index: usize,
        /// The symbol.
        symbol: Name,
        /// The section definition's `Number`.
        number: usize,
        /// The number of sections.
        sections: usize,
    },
    /// A weak external's default is an auxiliary record or past the symbol table.
    #[error("weak external '{symbol}': its default symbol {index} is not a symbol record")]
    WeakDefault {
        /// The weak external.
        symbol: Name,
        /// `TagIndex`.
        index: u32,
    },
    /// The record holding a section's relocation count runs past the end of the file.
    #[error("section '{section}': its relocation count record runs past the end of the file")]
    RelocationCountPastEnd {
        /// The section.
        section: Name,
    },
    /// The record holding a section's relocation count says 0, not the count plus one.
    #[error("section '{section}': its relocation count record says 0")]
    RelocationCountZero {
        /// The section.
        section: Name,
    },
    /// A section's relocations run past the end of the file.
    #[error(
        "section '{section}': its {count} relocations at {at:#x} run past the end of the file \
         ({file_size:#x} bytes)"
    )]
    RelocationsPastEnd {
        /// The section.
        section: Name,
        /// The number of relocations.
        count: usize,
        /// Where the first is.
        at: u64,
        /// The size of the file.
        file_size: usize,
    },
    /// A relocation refers to an auxiliary symbol record.
    #[error(
        "section '{section}': relocation {relocation} refers to symbol table index {index}, an \
         auxiliary record"
    )]
    RelocationToAuxiliaryRecord {
        /// The section.
        section: Name,
        /// The relocation's index in the section.
        relocation: usize,
        /// `SymbolTableIndex`.
        index: u32,
    },
    /// A relocation refers to a record past the end of the symbol table.
    #[error(
        "section '{section}': relocation {relocation} refers to symbol table index {index}, but \
         the symbol table has {records} records"
    )]
    RelocationPastSymbols {
        /// The section.
        section: Name,
        /// The relocation's index in the section.
        relocation: usize,
        /// `SymbolTableIndex`.
        index: u32,
        /// The number of records in the symbol table.
        records: usize,
    },
    /// Removing a section in which the target of a kept relocation is defined.
    #[error(
        "section '{section}' cannot be removed: relocation {relocation} of section '{by}' refers \
         to symbol '{symbol}', which is defined in it"
    )]
    RemovedButRelocationTarget {
        /// The section asked to go.
        section: Name,
        /// The relocation's index in its section.
        relocation: usize,
        /// The section the relocation applies to.
        by: Name,
        /// The symbol the relocation refers to.
        symbol: Name,
    },
    /// Removing a section in which the default of a kept weak external is defined.
    #[error(
        "section '{section}' cannot be removed: symbol '{symbol}', defined in it, is the default \
         of weak external '{weak}'"
    )]
    RemovedButWeakDefault {
        /// The section asked to go.
        section: Name,
        /// The default symbol, defined in it.
        symbol: Name,
        /// The weak external.
        weak: Name,
    },
    /// New contents for a COMDAT section, whose checksum would go stale.
    #[error(
        "section '{section}' is a COMDAT section, whose checksum would no longer match new \
         contents, so its contents cannot be replaced"
    )]
    ReplacedComdat {
        /// The section.
        section: Name,
    },
    /// New contents for a section with no data in the file (`.bss`).
    #[error("section '{section}' has no contents in the file to replace")]
    ReplacedButEmpty {
        /// The section.
        section: Name,
    },
    /// A symbol past the end of the new, shorter contents of its section.
    #[error(
        "symbol '{symbol}' points into bytes the rewrite removes: it is at offset {value:#x} of \
         section '{section}', which gets {size:#x} bytes"
    )]
    SymbolPastNewEnd {
        /// The symbol.
        symbol: Name,
        /// Its `Value`, the offset in the section.
        value: u32,
        /// The section.
        section: Name,
        /// The size of the new contents.
        size: usize,
    },
    /// An added section larger than a 32-bit size can say.
    #[error("section '{section}' ({size} bytes) is too large for a COFF object (4 GiB at most)")]
    SectionTooLarge {
        /// The added section.
        section: Name,
        /// Its size.
        size: usize,
    },
    /// More sections than the 16-bit section numbers of a plain COFF object can name.
    #[error("{count} sections are more than a plain COFF object holds (65279)")]
    TooManyCoffSections {
        /// The number of sections.
        count: usize,
    },
    /// A section with relocations but no raw data: llvm-objcopy would write the relocations
    /// over the file header.
    #[error("section '{section}' has relocations but no data, which llvm-objcopy cannot write")]
    RelocationsWithoutData {
        /// The section.
        section: Name,
    },
    /// The symbol table would start past what a 32-bit file offset reaches.
    #[error("the symbol table would start at {at:#x}, past the 4 GiB a COFF object can address")]
    SymbolTableBeyond4GiB {
        /// Where it would start.
        at: u64,
    },

    /// A writer bug: two pieces of the new file overlap.
    #[error("internal: overlapping pieces in the rewritten file")]
    OverlappingPieces,
}

/// Result of a container operation.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_inside_a_container_count_from_the_container() {
        let inner =
            crate::format::Error::new(4, crate::format::ErrorKind::EntryAtZero { index: 1 });
        let error = Error::in_contents(inner, 0x100);
        assert_eq!(error.offset, 0x104);
        assert_eq!(
            error.to_string(),
            "offset 0x104: bundle entry 1 has offset 0, inside the header"
        );
    }
}
