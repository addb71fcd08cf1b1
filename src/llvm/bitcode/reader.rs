//! LLVM bitcode: recognising it, and listing the symbols LLVM's archive writer puts in an
//! archive symbol table for a bitcode member, read from the IR symbol table ("irsymtab") that
//! LLVM writes into bitcode files, so that no module has to be parsed.
//!
//! A bitcode file is a bitstream (LLVM's `BitCodeFormat.rst`), raw or behind a 20-byte wrapper
//! header. Its top level holds IDENTIFICATION and MODULE blocks, then a SYMTAB block whose blob
//! record is the irsymtab, then a STRTAB block whose blob record holds the strings the irsymtab
//! points at. The irsymtab is made of little-endian 32-bit words:
//!
//! | structure | words                                                             | bytes |
//! |-----------|-------------------------------------------------------------------|-------|
//! | `Str`     | offset and size of a string of the string table                   | 8     |
//! | `Range`   | offset in the irsymtab and count of an array                      | 8     |
//! | `Header`  | version, then the `Str`s and `Range`s listed below                | 76    |
//! | `Module`  | first symbol, end symbol, first uncommon                          | 12    |
//! | `Symbol`  | name `Str`, IR name `Str`, comdat index (`u32::MAX`: none), flags | 24    |
//!
//! After the version, the header holds the producer (`Str`), the modules, comdats, symbols and
//! uncommons (`Range`s), the target triple, source file name and COFF linker options (`Str`s),
//! and the dependent libraries (`Range`). Version 3, which LLVM 19 writes, and version 4, which
//! newer LLVM writes, share these layouts: they differ in the `Uncommon` entries (sizes of
//! common symbols), which are not read here.
//!
//! The archive writer lists the symbols that are global, defined and not format-specific, in
//! the order the module enumerates them: functions, variables, aliases, ifuncs, then the
//! symbols of module-level assembly, module after module. The irsymtab holds the same symbols
//! in the same order with flags computed by the same rules, so filtering it on those three
//! flags gives the archive writer's list. Weak, common, hidden, protected, thread-local and
//! used symbols are listed like any other.
//!
//! Some bitcode has no usable irsymtab: files joined by `llvm-cat -b` (several modules, none or
//! a mismatched one), and files written by a tool without the target's assembly parser from a
//! module with module-level assembly (`llvm-link` output, for instance). LLVM then parses the
//! modules; here such files are an error ([`Error::NoSymbolTable`],
//! [`Error::ModuleCountMismatch`]).

use std::fmt;
use std::ops::RangeInclusive;

/// The magic of raw bitcode: `BC` then 0xC0DE.
pub const RAW_MAGIC: [u8; 4] = *b"BC\xc0\xde";

/// The magic of the bitcode wrapper header, 0x0B17C0DE little-endian.
const WRAPPER_MAGIC: [u8; 4] = [0xde, 0xc0, 0x17, 0x0b];

/// Bytes in the wrapper header: magic, version, offset, size and CPU type words.
const WRAPPER_HEADER_SIZE: usize = 20;

/// LLVM reads no further top-level entry once fewer bytes than this are left, too few for a
/// block: some archivers pad members with bytes that are not bitstream.
const MIN_TOP_LEVEL_ENTRY: u64 = 9;

/// Width of abbreviation IDs at the top level of a bitstream.
pub(super) const TOP_LEVEL_ABBREV_WIDTH: u32 = 2;

/// Fixed and VBR operands, and abbreviation IDs, of more bits than this are refused, as LLVM
/// refuses them.
const MAX_CHUNK_WIDTH: u64 = 32;

/// `width` as the width of a field, when it is at most [`MAX_CHUNK_WIDTH`].
fn chunk_width(width: u64) -> Option<u32> {
    u32::try_from(width)
        .ok()
        .filter(|_| width <= MAX_CHUNK_WIDTH)
}

/// The irsymtab versions whose header and symbol layouts are known.
const SYMTAB_VERSIONS: RangeInclusive<u32> = 3..=4;

/// IDs of blocks (`bitc::BlockIDs`): the top-level ones, and those inside a module.
pub mod block_id {
    /// A module.
    pub const MODULE: u64 = 8;
    /// A module's constants, or a function's.
    pub const CONSTANTS: u64 = 11;
    /// A function body.
    pub const FUNCTION: u64 = 12;
    /// The producer of the module after it.
    pub const IDENTIFICATION: u64 = 13;
    /// Names of values.
    pub const VALUE_SYMTAB: u64 = 14;
    /// The type table.
    pub const TYPE: u64 = 17;
    /// The string table.
    pub const STRTAB: u64 = 23;
    /// The irsymtab.
    pub const SYMTAB: u64 = 25;
}

/// The code of the blob record of the STRTAB and SYMTAB blocks.
pub const BLOB_RECORD: u64 = 1;

/// The abbreviation IDs every block has (`bitc::FixedAbbrevIDs`).
pub(super) mod abbrev_id {
    pub const END_BLOCK: u64 = 0;
    pub const ENTER_SUBBLOCK: u64 = 1;
    pub const DEFINE_ABBREV: u64 = 2;
    pub const UNABBREV_RECORD: u64 = 3;
    pub const FIRST_APPLICATION: u64 = 4;
}

/// Why the symbols of a bitcode file could not be read. Offsets count bytes from the start of
/// the data given, wrapper header included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The data starts with neither bitcode magic.
    NotBitcode,
    /// The length is not a multiple of 4: LLVM reads bitcode in 32-bit words and refuses it.
    LengthNotWordMultiple {
        /// Length of the data.
        len: u64,
    },
    /// The wrapper header is cut short, or its offset and size point outside the data.
    BadWrapper {
        /// The header's offset field.
        offset: u64,
        /// The header's size field.
        size: u64,
        /// Length of the data.
        len: u64,
    },
    /// The bytes the wrapper header points at do not start with `BC\xC0\xDE`.
    BadMagic {
        /// Offset of the bitcode proper.
        offset: u64,
    },
    /// The bitstream cannot be read.
    Bitstream {
        /// Offset of the byte that holds the first bit of the faulty item.
        offset: u64,
        /// Bit of that byte, 0 (least significant) to 7.
        bit: u8,
        /// What is wrong.
        problem: BitstreamProblem,
    },
    /// The file holds no module.
    NoModule,
    /// The file holds no irsymtab, or one or a string table too short to use. LLVM then parses
    /// the modules, which this reader does not do.
    NoSymbolTable,
    /// The irsymtab has a version whose layout is not known.
    UnsupportedVersion {
        /// Offset of the version field.
        offset: u64,
        /// The version.
        version: u32,
    },
    /// The irsymtab describes another number of modules than the file holds, as in bitcode
    /// files concatenated by `llvm-cat -b`. LLVM then parses the modules.
    ModuleCountMismatch {
        /// Modules the irsymtab describes.
        symtab: u64,
        /// MODULE blocks in the file.
        file: u64,
    },
    /// An array or a string of the irsymtab lies outside its table.
    OutOfBounds {
        /// What the array or string is.
        what: &'static str,
        /// Index of the symbol it belongs to, if any.
        symbol: Option<u64>,
        /// Offset of the field that declares it.
        field: u64,
        /// Declared start, in bytes from the start of its table.
        start: u64,
        /// Declared length in bytes.
        len: u64,
        /// Length of the table.
        table_len: u64,
    },
}

/// Ways a bitstream can be malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitstreamProblem {
    /// The data ends inside the named item.
    UnexpectedEnd(&'static str),
    /// A variable-width integer does not end within 64 bits.
    VbrTooLong,
    /// A field read as a 32-bit value (block ID, width, count, length) is larger.
    ValueTooLarge(&'static str),
    /// An END_BLOCK at the top level, which has no block to end.
    EndBlockAtTopLevel,
    /// A block declares an abbreviation ID width of 0 or more than 32 bits.
    BadAbbrevWidth(u64),
    /// A block's declared length runs past the end of the data.
    BlockPastEnd,
    /// A record uses an abbreviation ID its block does not define.
    UndefinedAbbrev(u64),
    /// An abbreviation definition uses an encoding other than 1 to 5.
    BadEncoding(u64),
    /// An abbreviation definition has a fixed or VBR operand wider than 32 bits.
    OperandTooWide(u64),
    /// An abbreviation definition has no operands.
    EmptyAbbrev,
    /// An abbreviation's first operand, the record code, is an array or a blob.
    CodeIsArrayOrBlob,
    /// An array operand is not second to last, or its element is not a scalar.
    BadArray,
    /// A blob runs past the end of the data.
    BlobPastEnd,
    /// An IDENTIFICATION block is not followed by a MODULE block.
    IdentificationWithoutModule,
}

impl fmt::Display for BitstreamProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BitstreamProblem::UnexpectedEnd(what) => write!(f, "the data ends inside {what}"),
            BitstreamProblem::VbrTooLong => {
                f.write_str("a variable-width integer runs past 64 bits")
            }
            BitstreamProblem::ValueTooLarge(what) => write!(f, "{what} does not fit in 32 bits"),
            BitstreamProblem::EndBlockAtTopLevel => f.write_str("END_BLOCK at the top level"),
            BitstreamProblem::BadAbbrevWidth(width) => {
                write!(f, "abbreviation ID width {width} (must be 1 to 32)")
            }
            BitstreamProblem::BlockPastEnd => {
                f.write_str("the block runs past the end of the data")
            }
            BitstreamProblem::UndefinedAbbrev(id) => write!(f, "undefined abbreviation ID {id}"),
            BitstreamProblem::BadEncoding(encoding) => {
                write!(
                    f,
                    "abbreviation operand encoding {encoding} (must be 1 to 5)"
                )
            }
            BitstreamProblem::OperandTooWide(width) => {
                write!(f, "abbreviation operand of {width} bits (at most 32)")
            }
            BitstreamProblem::EmptyAbbrev => f.write_str("abbreviation with no operands"),
            BitstreamProblem::CodeIsArrayOrBlob => {
                f.write_str("abbreviation whose record code is an array or a blob")
            }
            BitstreamProblem::BadArray => f.write_str(
                "array operand that is not second to last or has no scalar element type",
            ),
            BitstreamProblem::BlobPastEnd => f.write_str("the blob runs past the end of the data"),
            BitstreamProblem::IdentificationWithoutModule => {
                f.write_str("IDENTIFICATION block not followed by a MODULE block")
            }
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotBitcode => f.write_str("not LLVM bitcode: no BC\\xC0\\xDE or wrapper magic"),
            Error::LengthNotWordMultiple { len } => {
                write!(f, "bitcode of {len} bytes, not a multiple of 4")
            }
            Error::BadWrapper { offset, size, len } => write!(
                f,
                "bitcode wrapper header: bitcode at {offset:#x} of size {size:#x} ends past \
                 the end of the data ({len:#x})"
            ),
            Error::BadMagic { offset } => write!(
                f,
                "offset {offset:#x}: no BC\\xC0\\xDE magic where the wrapper header points"
            ),
            Error::Bitstream {
                offset,
                bit,
                problem,
            } => {
                write!(
                    f,
                    "offset {offset:#x} bit {bit}: malformed bitstream: {problem}"
                )
            }
            Error::NoModule => f.write_str("bitcode file with no module"),
            Error::NoSymbolTable => f.write_str("bitcode file with no IR symbol table"),
            Error::UnsupportedVersion { offset, version } => {
                write!(
                    f,
                    "offset {offset:#x}: IR symbol table version {version} is not supported"
                )
            }
            Error::ModuleCountMismatch { symtab, file } => write!(
                f,
                "the IR symbol table describes {symtab} modules, the file holds {file}"
            ),
            Error::OutOfBounds {
                what,
                symbol,
                field,
                start,
                len,
                table_len,
            } => {
                write!(f, "offset {field:#x}: ")?;
                if let Some(index) = symbol {
                    write!(f, "symbol {index}: ")?;
                }
                write!(
                    f,
                    "{what} at {start:#x} of size {len:#x} ends past its table ({table_len:#x})"
                )
            }
        }
    }
}

impl std::error::Error for Error {}

/// The result of this module's readers.
pub type Result<T> = std::result::Result<T, Error>;

/// Whether `data` is LLVM bitcode, raw or behind a wrapper header.
pub fn is_bitcode(data: &[u8]) -> bool {
    data.starts_with(&RAW_MAGIC) || data.starts_with(&WRAPPER_MAGIC)
}

/// How many bytes of `data`, which starts with bitcode, the bitcode takes: the wrapper
/// header's extent, or for raw bitcode the top-level blocks (identification, module, string
/// table, symbol table) that follow one another from the magic on, each skipped by its length.
/// `None` when `data` does not start with bitcode or its first block does not lie in it.
pub fn extent(data: &[u8]) -> Option<usize> {
    extent_fresh(data, &mut |_| true)
}

/// [`extent`], calling `fresh` with the byte offset in `data` of each top-level entry the walk
/// of raw bitcode reaches: at the first for which it answers false, the walk stops and there
/// is no extent. A search that remembers the entries earlier walks reached so walks each
/// stretch of blocks once, however many magics lie in it.
pub fn extent_fresh(data: &[u8], fresh: &mut dyn FnMut(usize) -> bool) -> Option<usize> {
    if data.starts_with(&WRAPPER_MAGIC) {
        let [_magic, _version, offset, size, _cpu_type] =
            words::<5>(data.get(..WRAPPER_HEADER_SIZE)?);
        let end = usize::try_from(u64::from(offset).checked_add(u64::from(size))?).ok()?;
        return (end <= data.len()).then_some(end);
    }
    if !data.starts_with(&RAW_MAGIC) {
        return None;
    }
    // Only whole words: a block's length counts words.
    let words_len = data.len() - data.len() % 4;
    let mut stream = BitCursor::new(data.get(..words_len)?, 0);
    stream.bit = 32;
    let mut end = None;
    let mut abbrevs = Vec::new();
    while stream.byte_pos().checked_add(MIN_TOP_LEVEL_ENTRY)? <= stream.len() {
        if !fresh(usize::try_from(stream.byte_pos()).ok()?) {
            return None;
        }
        match stream.advance(TOP_LEVEL_ABBREV_WIDTH, &mut abbrevs) {
            Ok((
                _,
                Entry::SubBlock(
                    block_id::IDENTIFICATION
                    | block_id::MODULE
                    | block_id::STRTAB
                    | block_id::SYMTAB,
                ),
            )) => {}
            _ => break,
        }
        if stream.skip_block().is_err() {
            break;
        }
        end = Some(stream.byte_pos());
    }
    usize::try_from(end?).ok()
}

/// The names LLVM's archive writer lists in an archive symbol table for the bitcode `data`, in
/// its order: those of the defined, global, not format-specific symbols.
pub fn archive_symbols(data: &[u8]) -> Result<Vec<&[u8]>> {
    let mut names = Vec::new();
    for symbol in IrSymtab::parse(data)?.symbols() {
        let symbol = symbol?;
        if symbol.flags.is_archive_symbol() {
            names.push(symbol.name);
        }
    }
    Ok(names)
}

/// The IR symbol table of a bitcode file, and the string table its strings point into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IrSymtab<'a> {
    /// The symbol array, checked to lie in the irsymtab.
    symbol_array: &'a [u8],
    /// Offset of the irsymtab in the data, for errors.
    symtab_offset: u64,
    strtab: &'a [u8],
    header: Header,
}

impl<'a> IrSymtab<'a> {
    /// Finds the irsymtab of the bitcode `data` and checks its header and symbol array.
    pub fn parse(data: &'a [u8]) -> Result<IrSymtab<'a>> {
        let top = TopLevel::parse(data)?;
        if top.modules == 0 {
            return Err(Error::NoModule);
        }
        let (Some((symtab, symtab_offset)), Some(strtab)) = (top.symtab, top.strtab) else {
            return Err(Error::NoSymbolTable);
        };
        if strtab.is_empty() || symtab.len() < Header::SIZE {
            return Err(Error::NoSymbolTable);
        }
        let header = Header::parse(symtab);
        if !SYMTAB_VERSIONS.contains(&header.version) {
            return Err(Error::UnsupportedVersion {
                offset: symtab_offset,
                version: header.version,
            });
        }
        let modules = u64::from(header.modules.count);
        if modules != top.modules {
            return Err(Error::ModuleCountMismatch {
                symtab: modules,
                file: top.modules,
            });
        }
        Ok(IrSymtab {
            symbol_array: symbol_array(symtab, symtab_offset, header.symbols)?,
            symtab_offset,
            strtab,
            header,
        })
    }

    /// The version string of the LLVM that wrote the irsymtab.
    #[cfg(any(test, feature = "internals"))]
    pub fn producer(&self) -> Result<&'a [u8]> {
        self.string(
            self.header.producer,
            "producer",
            None,
            Header::PRODUCER_FIELD,
        )
    }

    /// The target triple of the first module.
    pub fn target_triple(&self) -> Result<&'a [u8]> {
        self.string(
            self.header.target_triple,
            "target triple",
            None,
            Header::TRIPLE_FIELD,
        )
    }

    /// The number of modules the irsymtab describes, that of MODULE blocks in the file.
    #[cfg(any(test, feature = "internals"))]
    pub fn module_count(&self) -> u32 {
        self.header.modules.count
    }

    /// The number of symbols of all modules.
    #[cfg(any(test, feature = "internals"))]
    pub fn symbol_count(&self) -> u32 {
        self.header.symbols.count
    }

    /// The symbols of all modules, in order.
    pub fn symbols(&self) -> Symbols<'a> {
        Symbols {
            symtab: *self,
            entries: self.symbol_array.chunks_exact(SymbolEntry::SIZE),
            index: 0,
            failed: false,
        }
    }

    /// The string `s` of the string table, declared at `field` of the irsymtab.
    fn string(
        &self,
        s: StrRef,
        what: &'static str,
        symbol: Option<u64>,
        field: u64,
    ) -> Result<&'a [u8]> {
        let (start, len) = (u64::from(s.offset), u64::from(s.size));
        usize::try_from(start)
            .ok()
            .zip(usize::try_from(len).ok())
            .and_then(|(start, len)| self.strtab.get(start..)?.get(..len))
            .ok_or(Error::OutOfBounds {
                what,
                symbol,
                field: self.symtab_offset + field,
                start,
                len,
                table_len: self.strtab.len() as u64,
            })
    }
}

/// A symbol of an irsymtab.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Symbol<'a> {
    /// The name as object files spell it: mangled for the target (`_` before C names on
    /// Mach-O, for instance).
    pub name: &'a [u8],
    /// The name of the IR global value; empty for symbols of module-level assembly.
    pub ir_name: &'a [u8],
    /// The index of its comdat in the irsymtab's comdat array, if it is in one.
    pub comdat: Option<u32>,
    /// Its flags.
    pub flags: SymbolFlags,
}

/// The flags word of an irsymtab symbol (`storage::Symbol::FlagBits`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SymbolFlags(pub u32);

#[cfg_attr(not(any(test, feature = "internals")), allow(dead_code))]
impl SymbolFlags {
    /// Bits 0 and 1: the visibility, 0 default, 1 hidden, 2 protected.
    pub const VISIBILITY: u32 = 0b11;
    /// The symbol has an entry in the uncommon array.
    pub const HAS_UNCOMMON: u32 = 1 << 2;
    /// Declared, not defined.
    pub const UNDEFINED: u32 = 1 << 3;
    /// Weak, link-once or extern-weak linkage.
    pub const WEAK: u32 = 1 << 4;
    /// Common linkage.
    pub const COMMON: u32 = 1 << 5;
    /// An alias.
    pub const INDIRECT: u32 = 1 << 6;
    /// In `llvm.used` or `llvm.compiler.used`.
    pub const USED: u32 = 1 << 7;
    /// Thread-local.
    pub const TLS: u32 = 1 << 8;
    /// May be left out of the output's symbol table (link-once ODR with an unnamed address).
    pub const MAY_OMIT: u32 = 1 << 9;
    /// Not of local (internal or private) linkage.
    pub const GLOBAL: u32 = 1 << 10;
    /// LLVM's own: `llvm.*` names, private linkage, or the `llvm.metadata` section.
    pub const FORMAT_SPECIFIC: u32 = 1 << 11;
    /// Its address is not significant.
    pub const UNNAMED_ADDR: u32 = 1 << 12;
    /// A function, or an alias or ifunc of one.
    pub const EXECUTABLE: u32 = 1 << 13;

    fn has(self, bit: u32) -> bool {
        self.0 & bit != 0
    }

    /// The visibility: 0 default, 1 hidden, 2 protected.
    pub fn visibility(self) -> u32 {
        self.0 & Self::VISIBILITY
    }

    /// Whether the symbol is declared, not defined.
    pub fn is_undefined(self) -> bool {
        self.has(Self::UNDEFINED)
    }

    /// Whether the symbol is weak.
    pub fn is_weak(self) -> bool {
        self.has(Self::WEAK)
    }

    /// Whether the symbol is common.
    pub fn is_common(self) -> bool {
        self.has(Self::COMMON)
    }

    /// Whether the symbol is visible outside its module.
    pub fn is_global(self) -> bool {
        self.has(Self::GLOBAL)
    }

    /// Whether the symbol is LLVM's own, never listed by object tools.
    pub fn is_format_specific(self) -> bool {
        self.has(Self::FORMAT_SPECIFIC)
    }

    /// Whether the symbol is thread-local.
    pub fn is_tls(self) -> bool {
        self.has(Self::TLS)
    }

    /// Whether the symbol is code.
    pub fn is_executable(self) -> bool {
        self.has(Self::EXECUTABLE)
    }

    /// Whether an archive symbol table lists the symbol: global, defined and not
    /// format-specific, whatever its other flags.
    pub fn is_archive_symbol(self) -> bool {
        self.is_global() && !self.is_undefined() && !self.is_format_specific()
    }
}

/// The bytes of the symbol array `range` of the irsymtab `symtab`, found at `symtab_offset`.
fn symbol_array(symtab: &[u8], symtab_offset: u64, range: RangeRef) -> Result<&[u8]> {
    let start = u64::from(range.offset);
    let len = u64::from(range.count) * SymbolEntry::SIZE as u64;
    start
        .checked_add(len)
        .and_then(|end| symtab.get(usize::try_from(start).ok()?..usize::try_from(end).ok()?))
        .ok_or(Error::OutOfBounds {
            what: "symbol array",
            symbol: None,
            field: symtab_offset + Header::SYMBOLS_FIELD,
            start,
            len,
            table_len: symtab.len() as u64,
        })
}

/// An iterator over the symbols of an irsymtab, which ends after the first error.
#[derive(Debug, Clone)]
pub struct Symbols<'a> {
    symtab: IrSymtab<'a>,
    entries: std::slice::ChunksExact<'a, u8>,
    index: u64,
    failed: bool,
}

impl<'a> Iterator for Symbols<'a> {
    type Item = Result<Symbol<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let entry = SymbolEntry::parse(self.entries.next()?);
        let result = self.symtab.symbol(self.index, entry);
        self.index += 1;
        self.failed = result.is_err();
        Some(result)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = if self.failed { 0 } else { self.entries.len() };
        (0, Some(left))
    }
}

impl<'a> IrSymtab<'a> {
    /// The symbol `index`, stored as `entry`.
    fn symbol(&self, index: u64, entry: SymbolEntry) -> Result<Symbol<'a>> {
        let field = u64::from(self.header.symbols.offset) + index * SymbolEntry::SIZE as u64;
        let symbol = Some(index);
        Ok(Symbol {
            name: self.string(entry.name, "name", symbol, field)?,
            ir_name: self.string(entry.ir_name, "IR name", symbol, field + 8)?,
            comdat: (entry.comdat_index != u32::MAX).then_some(entry.comdat_index),
            flags: SymbolFlags(entry.flags),
        })
    }
}

/// A string of the string table (`storage::Str`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StrRef {
    offset: u32,
    size: u32,
}

/// An array of the irsymtab (`storage::Range`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RangeRef {
    offset: u32,
    count: u32,
}

/// The start of an irsymtab (`storage::Header`), the fields this reader uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    version: u32,
    producer: StrRef,
    modules: RangeRef,
    symbols: RangeRef,
    target_triple: StrRef,
}

impl Header {
    const SIZE: usize = 76;
    #[cfg(any(test, feature = "internals"))]
    const PRODUCER_FIELD: u64 = 4;
    const SYMBOLS_FIELD: u64 = 28;
    const TRIPLE_FIELD: u64 = 44;

    /// Reads the header from the first [`Header::SIZE`] bytes of `bytes`.
    fn parse(bytes: &[u8]) -> Header {
        let w = words::<19>(bytes);
        Header {
            version: w[0],
            producer: StrRef {
                offset: w[1],
                size: w[2],
            },
            modules: RangeRef {
                offset: w[3],
                count: w[4],
            },
            symbols: RangeRef {
                offset: w[7],
                count: w[8],
            },
            target_triple: StrRef {
                offset: w[11],
                size: w[12],
            },
        }
    }
}

/// A symbol of the irsymtab as stored (`storage::Symbol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SymbolEntry {
    name: StrRef,
    ir_name: StrRef,
    comdat_index: u32,
    flags: u32,
}

impl SymbolEntry {
    const SIZE: usize = 24;

    /// Reads the entry from the first [`SymbolEntry::SIZE`] bytes of `bytes`.
    fn parse(bytes: &[u8]) -> SymbolEntry {
        let [name_offset, name_size, ir_name_offset, ir_name_size, comdat_index, flags] =
            words::<6>(bytes);
        SymbolEntry {
            name: StrRef {
                offset: name_offset,
                size: name_size,
            },
            ir_name: StrRef {
                offset: ir_name_offset,
                size: ir_name_size,
            },
            comdat_index,
            flags,
        }
    }
}

/// The first `N` little-endian 32-bit words of `bytes` (0 for words past its end).
fn words<const N: usize>(bytes: &[u8]) -> [u32; N] {
    let mut out = [0u32; N];
    for (word, chunk) in out.iter_mut().zip(bytes.chunks_exact(4)) {
        if let Some(chunk) = chunk.first_chunk::<4>() {
            *word = u32::from_le_bytes(*chunk);
        }
    }
    out
}

/// What the top level of a bitcode file says about its irsymtab.
struct TopLevel<'a> {
    /// The number of MODULE blocks.
    modules: u64,
    /// The first non-empty SYMTAB blob, and its offset in the data.
    symtab: Option<(&'a [u8], u64)>,
    /// The first non-empty STRTAB blob after it: the one its strings point into.
    strtab: Option<&'a [u8]>,
}

impl<'a> TopLevel<'a> {
    /// Walks the top level of the bitcode `data`, skipping module blocks by their length.
    fn parse(data: &'a [u8]) -> Result<TopLevel<'a>> {
        let (bitcode, base) = unwrap(data)?;
        let mut stream = BitCursor::new(bitcode, base);
        stream.bit = 32;
        let mut abbrevs = Vec::new();
        let mut top = TopLevel {
            modules: 0,
            symtab: None,
            strtab: None,
        };
        while stream.byte_pos() + MIN_TOP_LEVEL_ENTRY <= stream.len() {
            let (at, entry) = stream.advance(TOP_LEVEL_ABBREV_WIDTH, &mut abbrevs)?;
            match entry {
                Entry::EndBlock => {
                    return Err(stream.error_at(at, BitstreamProblem::EndBlockAtTopLevel))
                }
                Entry::Record(id) => {
                    stream.read_record(id, &abbrevs)?;
                }
                Entry::SubBlock(id) => top.read_block(&mut stream, &mut abbrevs, id)?,
            }
        }
        Ok(top)
    }

    /// Reads or skips the top-level block `id` whose header comes next in `stream`.
    fn read_block(
        &mut self,
        stream: &mut BitCursor<'a>,
        abbrevs: &mut Vec<Vec<AbbrevOp>>,
        id: u64,
    ) -> Result<()> {
        match id {
            block_id::IDENTIFICATION => {
                stream.skip_block()?;
                let (at, next) = stream.advance(TOP_LEVEL_ABBREV_WIDTH, abbrevs)?;
                if next != Entry::SubBlock(block_id::MODULE) {
                    return Err(stream.error_at(at, BitstreamProblem::IdentificationWithoutModule));
                }
                self.modules += 1;
                stream.skip_block()
            }
            block_id::MODULE => {
                self.modules += 1;
                stream.skip_block()
            }
            block_id::SYMTAB => {
                let blob = stream.read_blob_in_block(BLOB_RECORD)?;
                if self.symtab.is_none() && !blob.0.is_empty() {
                    self.symtab = Some(blob);
                }
                Ok(())
            }
            block_id::STRTAB => {
                let (blob, _) = stream.read_blob_in_block(BLOB_RECORD)?;
                if self.symtab.is_some() && self.strtab.is_none() && !blob.is_empty() {
                    self.strtab = Some(blob);
                }
                Ok(())
            }
            _ => stream.skip_block(),
        }
    }
}

/// The bitcode proper of `data` and its offset: what the wrapper header points at, if there
/// is one.
pub(super) fn unwrap(data: &[u8]) -> Result<(&[u8], u64)> {
    let len = data.len() as u64;
    if !is_bitcode(data) {
        return Err(Error::NotBitcode);
    }
    if len % 4 != 0 {
        return Err(Error::LengthNotWordMultiple { len });
    }
    if !data.starts_with(&WRAPPER_MAGIC) {
        return Ok((data, 0));
    }
    let Some(header) = data.get(..WRAPPER_HEADER_SIZE) else {
        return Err(Error::BadWrapper {
            offset: 0,
            size: 0,
            len,
        });
    };
    let [_magic, _version, offset, size, _cpu_type] = words::<5>(header);
    let (offset, size) = (u64::from(offset), u64::from(size));
    let bitcode = offset
        .checked_add(size)
        .filter(|&end| end <= len)
        .and_then(|end| data.get(usize::try_from(offset).ok()?..usize::try_from(end).ok()?))
        .ok_or(Error::BadWrapper { offset, size, len })?;
    if !bitcode.starts_with(&RAW_MAGIC) {
        return Err(Error::BadMagic { offset });
    }
    Ok((bitcode, offset))
}

/// An operand of an abbreviation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum AbbrevOp {
    Literal(u64),
    Fixed(u32),
    Vbr(u32),
    Array,
    Char6,
    Blob,
}

/// What an abbreviation ID introduces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Entry {
    EndBlock,
    /// A block, by its block ID.
    SubBlock(u64),
    /// A record, by its abbreviation ID.
    Record(u64),
}

/// A record's code and, if it has a blob operand, the blob and its offset in the data. Other
/// operands are read past, not kept.
pub(super) struct Record<'a> {
    code: u64,
    blob: Option<(&'a [u8], u64)>,
}

/// A reading position in a bitstream, whose bits are taken least significant first.
pub(super) struct BitCursor<'a> {
    data: &'a [u8],
    /// Position in bits from the start of `data`.
    pub(super) bit: u64,
    /// Offset of `data` in the input, for errors.
    base: u64,
}

impl<'a> BitCursor<'a> {
    pub(super) fn new(data: &'a [u8], base: u64) -> Self {
        BitCursor { data, bit: 0, base }
    }

    fn len(&self) -> u64 {
        self.data.len() as u64
    }

    fn len_bits(&self) -> u64 {
        self.len() * 8
    }

    pub(super) fn byte_pos(&self) -> u64 {
        self.bit / 8
    }

    fn at_end(&self) -> bool {
        self.bit >= self.len_bits()
    }

    fn error_at(&self, bit: u64, problem: BitstreamProblem) -> Error {
        Error::Bitstream {
            offset: self.base + bit / 8,
            bit: (bit % 8) as u8,
            problem,
        }
    }

    /// Reads a field of `width` bits, at most 64.
    fn read(&mut self, width: u32, what: &'static str) -> Result<u64> {
        let end = self.bit + u64::from(width);
        if end > self.len_bits() {
            return Err(self.error_at(self.bit, BitstreamProblem::UnexpectedEnd(what)));
        }
        let mut value = 0u64;
        let mut done = 0u32;
        while done < width {
            let pos = self.bit + u64::from(done);
            let byte = self
                .data
                .get((pos / 8) as usize)
                .copied()
                .unwrap_or_default();
            let shift = (pos % 8) as u32;
            let take = (8 - shift).min(width - done);
            value |= ((u64::from(byte) >> shift) & ((1 << take) - 1)) << done;
            done += take;
        }
        self.bit = end;
        Ok(value)
    }

    /// Reads a variable-width integer made of `width`-bit chunks, 2 to 32 bits each, whose top
    /// bit says another chunk follows.
    pub(super) fn read_vbr(&mut self, width: u32, what: &'static str) -> Result<u64> {
        let start = self.bit;
        let payload = width - 1;
        let more = 1u64 << payload;
        let mut value = 0u64;
        let mut shift = 0u32;
        loop {
            let chunk = self.read(width, what)?;
            let part = chunk & (more - 1);
            if shift >= 64 || (shift > 0 && part >> (64 - shift) != 0) {
                return Err(self.error_at(start, BitstreamProblem::VbrTooLong));
            }
            value |= part << shift;
            if chunk & more == 0 {
                return Ok(value);
            }
            shift += payload;
        }
    }

    /// Reads a variable-width integer that LLVM reads as a 32-bit value.
    pub(super) fn read_vbr32(&mut self, width: u32, what: &'static str) -> Result<u64> {
        let start = self.bit;
        let value = self.read_vbr(width, what)?;
        if value > u64::from(u32::MAX) {
            return Err(self.error_at(start, BitstreamProblem::ValueTooLarge(what)));
        }
        Ok(value)
    }

    /// Moves to the next multiple of 32 bits, where blocks and blobs start.
    fn align32(&mut self) {
        self.bit = self.bit.div_ceil(32) * 32;
    }

    /// Reads abbreviation IDs `width` bits wide up to the next block, block end or record,
    /// defining the abbreviations met on the way. Returns where that entry starts, and it.
    pub(super) fn advance(
        &mut self,
        width: u32,
        abbrevs: &mut Vec<Vec<AbbrevOp>>,
    ) -> Result<(u64, Entry)> {
        loop {
            let at = self.bit;
            if self.at_end() {
                return Err(self.error_at(at, BitstreamProblem::UnexpectedEnd("a block")));
            }
            match self.read(width, "an abbreviation ID")? {
                abbrev_id::END_BLOCK => return Ok((at, Entry::EndBlock)),
                abbrev_id::ENTER_SUBBLOCK => {
                    let id = self.read_vbr32(8, "a block ID")?;
                    return Ok((at, Entry::SubBlock(id)));
                }
                abbrev_id::DEFINE_ABBREV => abbrevs.push(self.read_abbrev()?),
                id => return Ok((at, Entry::Record(id))),
            }
        }
    }

    /// Reads the operands of a DEFINE_ABBREV.
    fn read_abbrev(&mut self) -> Result<Vec<AbbrevOp>> {
        let start = self.bit;
        let count = self.read_vbr32(5, "an abbreviation definition")?;
        // Not sized from `count`: the vector grows only with operands actually read, each of
        // at least one bit.
        let mut ops = Vec::new();
        for _ in 0..count {
            if self.read(1, "an abbreviation operand")? == 1 {
                ops.push(AbbrevOp::Literal(
                    self.read_vbr(8, "an abbreviation literal")?,
                ));
            } else {
                ops.push(self.read_abbrev_encoding()?);
            }
        }
        if ops.is_empty() {
            return Err(self.error_at(start, BitstreamProblem::EmptyAbbrev));
        }
        Ok(ops)
    }

    /// Reads an abbreviation operand that is not a literal: its encoding and width.
    fn read_abbrev_encoding(&mut self) -> Result<AbbrevOp> {
        let at = self.bit;
        let op = match self.read(3, "an abbreviation encoding")? {
            encoding @ (1 | 2) => {
                let width = self.read_vbr(5, "an abbreviation operand width")?;
                let Some(width) = chunk_width(width) else {
                    return Err(self.error_at(at, BitstreamProblem::OperandTooWide(width)));
                };
                match (encoding, width) {
                    // A field of no bits always reads as 0.
                    (_, 0) => AbbrevOp::Literal(0),
                    (1, width) => AbbrevOp::Fixed(width),
                    (_, width) => AbbrevOp::Vbr(width),
                }
            }
            3 => AbbrevOp::Array,
            4 => AbbrevOp::Char6,
            5 => AbbrevOp::Blob,
            other => return Err(self.error_at(at, BitstreamProblem::BadEncoding(other))),
        };
        Ok(op)
    }

    /// Reads a scalar operand: a literal takes no bits.
    fn read_scalar(&mut self, op: AbbrevOp) -> Result<u64> {
        match op {
            AbbrevOp::Literal(value) => Ok(value),
            AbbrevOp::Fixed(width) => self.read(width, "a fixed-width operand"),
            AbbrevOp::Vbr(1) => {
                // Chunks of one bit carry no value: read up to the one that ends the number.
                while self.read(1, "a VBR operand")? == 1 {}
                Ok(0)
            }
            AbbrevOp::Vbr(width) => self.read_vbr(width, "a VBR operand"),
            AbbrevOp::Char6 => self.read(6, "a char6 operand"),
            AbbrevOp::Array | AbbrevOp::Blob => {
                Err(self.error_at(self.bit, BitstreamProblem::BadArray))
            }
        }
    }

    /// Reads the record introduced by abbreviation ID `id`.
    pub(super) fn read_record(&mut self, id: u64, abbrevs: &[Vec<AbbrevOp>]) -> Result<Record<'a>> {
        let start = self.bit;
        if id == abbrev_id::UNABBREV_RECORD {
            let code = self.read_vbr32(6, "a record code")?;
            let count = self.read_vbr32(6, "a record operand count")?;
            for _ in 0..count {
                self.read_vbr(6, "a record operand")?;
            }
            return Ok(Record { code, blob: None });
        }
        let ops = id
            .checked_sub(abbrev_id::FIRST_APPLICATION)
            .and_then(|index| abbrevs.get(usize::try_from(index).ok()?))
            .ok_or_else(|| self.error_at(start, BitstreamProblem::UndefinedAbbrev(id)))?;
        let (&code_op, operands) = ops.split_first().unwrap_or((&AbbrevOp::Literal(0), &[]));
        if matches!(code_op, AbbrevOp::Array | AbbrevOp::Blob) {
            return Err(self.error_at(start, BitstreamProblem::CodeIsArrayOrBlob));
        }
        let code = self.read_scalar(code_op)?;
        let mut blob = None;
        for (i, &op) in operands.iter().enumerate() {
            match op {
                AbbrevOp::Array => {
                    let element = match operands.get(i + 1..) {
                        Some(
                            &[element @ (AbbrevOp::Fixed(_) | AbbrevOp::Vbr(_) | AbbrevOp::Char6)],
                        ) => element,
                        _ => return Err(self.error_at(start, BitstreamProblem::BadArray)),
                    };
                    self.skip_array(element)?;
                    break;
                }
                AbbrevOp::Blob => blob = Some(self.read_blob()?),
                scalar => {
                    self.read_scalar(scalar)?;
                }
            }
        }
        Ok(Record { code, blob })
    }

    /// Reads past an array operand: its length, then its elements.
    fn skip_array(&mut self, element: AbbrevOp) -> Result<()> {
        let count = self.read_vbr32(6, "an array length")?;
        let width = match element {
            AbbrevOp::Fixed(width) => width,
            AbbrevOp::Char6 => 6,
            _ => {
                for _ in 0..count {
                    self.read_scalar(element)?;
                }
                return Ok(());
            }
        };
        let end = count
            .checked_mul(u64::from(width))
            .and_then(|bits| bits.checked_add(self.bit))
            .filter(|&end| end <= self.len_bits());
        let Some(end) = end else {
            return Err(self.error_at(self.bit, BitstreamProblem::UnexpectedEnd("an array")));
        };
        self.bit = end;
        Ok(())
    }

    /// Reads a blob operand: its length, then its bytes, aligned to 32 bits before and after.
    fn read_blob(&mut self) -> Result<(&'a [u8], u64)> {
        let len = self.read_vbr32(6, "a blob length")?;
        self.align32();
        let start = self.bit;
        let past_end = |cursor: &Self| {
            cursor.error_at(start.min(cursor.len_bits()), BitstreamProblem::BlobPastEnd)
        };
        let padded_end = len
            .div_ceil(4)
            .checked_mul(32)
            .and_then(|bits| bits.checked_add(start))
            .filter(|&end| end <= self.len_bits())
            .ok_or_else(|| past_end(self))?;
        let bytes = usize::try_from(start / 8)
            .ok()
            .and_then(|from| self.data.get(from..)?.get(..usize::try_from(len).ok()?))
            .ok_or_else(|| past_end(self))?;
        self.bit = padded_end;
        Ok((bytes, self.base + start / 8))
    }

    /// Reads the header of the block whose ID was just read, and returns the width of its
    /// abbreviation IDs. As in LLVM, the declared length of a block that is read is not
    /// checked: its END_BLOCK ends it.
    pub(super) fn enter_block(&mut self) -> Result<u32> {
        let at = self.bit;
        let width = self.read_vbr32(4, "an abbreviation ID width")?;
        let Some(width) = chunk_width(width).filter(|width| *width != 0) else {
            return Err(self.error_at(at, BitstreamProblem::BadAbbrevWidth(width)));
        };
        self.align32();
        self.read(32, "a block length")?;
        if self.at_end() {
            return Err(self.error_at(at, BitstreamProblem::BlockPastEnd));
        }
        Ok(width)
    }

    /// Skips the block whose ID was just read, by its declared length.
    pub(super) fn skip_block(&mut self) -> Result<()> {
        let at = self.bit;
        self.read_vbr32(4, "an abbreviation ID width")?;
        self.align32();
        let words = self.read(32, "a block length")?;
        let end = words
            .checked_mul(32)
            .and_then(|bits| bits.checked_add(self.bit))
            .filter(|&end| !self.at_end() && end <= self.len_bits());
        let Some(end) = end else {
            return Err(self.error_at(at, BitstreamProblem::BlockPastEnd));
        };
        self.bit = end;
        Ok(())
    }

    /// Reads the block whose ID was just read, and returns the blob of its last record of
    /// code `code` (empty if that record has no blob, or there is none) with its offset.
    /// Blocks nested in it are skipped.
    fn read_blob_in_block(&mut self, code: u64) -> Result<(&'a [u8], u64)> {
        let width = self.enter_block()?;
        let mut abbrevs = Vec::new();
        let mut found: (&'a [u8], u64) = (&[], self.base + self.byte_pos());
        loop {
            match self.advance(width, &mut abbrevs)?.1 {
                Entry::EndBlock => {
                    self.align32();
                    return Ok(found);
                }
                Entry::SubBlock(_) => self.skip_block()?,
                Entry::Record(id) => {
                    let record = self.read_record(id, &abbrevs)?;
                    if record.code == code {
                        found = record.blob.unwrap_or((&[], self.base + self.byte_pos()));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;
    use crate::llvm::bitcode::writer::BitstreamWriter;
    use proptest::prelude::*;

    /// The samples, as `samples/bitcode/make.sh` makes them.
    const SYMBOLS: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/samples/bitcode/symbols.bc"
    ));
    const SYMBOLS_DARWIN: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/samples/bitcode/symbols-darwin.bc"
    ));
    const SYMBOLS_CXX: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/samples/bitcode/symbols-cxx.bc"
    ));
    const ASM: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/samples/bitcode/asm.bc"
    ));
    const DEVICE: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/samples/bitcode/device-gfx90a.bc"
    ));
    const OMP: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/samples/bitcode/omp-gfx90a.bc"
    ));
    const SPLIT_LTO: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/samples/bitcode/split-lto.bc"
    ));
    const CONCATENATED: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/samples/bitcode/concatenated.bc"
    ));

    /// Each sample with the archive symbol table llvm-ar-19 writes for it (`llvm-ar-19 rcs
    /// --format=gnu x.a FILE; llvm-nm-19 --print-armap x.a`).
    const EXPECTED: &[(&str, &[u8], &[&str])] = &[
        (
            "symbols.bc",
            SYMBOLS,
            &[
                "weak_fn",
                "hidden_fn",
                "alias_target",
                "fn",
                "str",
                "zzz_last",
                "defined_var",
                "const_var",
                "weak_var",
                "hidden_var",
                "used_global",
                "tls_var",
                "protected_var",
                "sec_var",
                "common_var",
                "aaa_first",
                "fn_alias",
                "weak_alias",
            ],
        ),
        (
            "symbols-darwin.bc",
            SYMBOLS_DARWIN,
            &[
                "_weak_fn",
                "_hidden_fn",
                "_alias_target",
                "_fn",
                "_str",
                "_zzz_last",
                "_defined_var",
                "_const_var",
                "_weak_var",
                "_hidden_var",
                "_used_global",
                "_tls_var",
                "_common_var",
                "_aaa_first",
            ],
        ),
        (
            "symbols-cxx.bc",
            SYMBOLS_CXX,
            &[
                "_Z5twiceIiET_S0_",
                "_ZN2ns4nsfnEv",
                "_Z3inli",
                "_ZN4BaseD2Ev",
                "_ZN4BaseD0Ev",
                "_ZN4Base1fEv",
                "_Z5twiceIdET_S0_",
                "_Z7use_allv",
                "_Z5twiceIlET_S0_",
                "c_linkage",
                "_Z8weak_cxxv",
                "_Z7guardedv",
                "_ZN2ns5nsvarE",
                "_ZTV4Base",
                "_ZTS4Base",
                "_ZTI4Base",
                "_ZN4BaseD1Ev",
            ],
        ),
        ("asm.bc", ASM, &["call", "ifn", "asm_global", "asm_weak"]),
        (
            "device-gfx90a.bc",
            DEVICE,
            &[
                "_Z9device_fni",
                "_Z7weak_fni",
                "_Z7tkernelIfEvPT_",
                "_Z9inline_fni",
                "_Z7tkernelIiEvPT_",
                "ckernel",
                "dev_var",
                "const_table",
                "hidden_var",
                "weak_var",
                "managed_var.managed",
                "_ZZ7tkernelIfEvPT_E4tile",
                "_ZZ7tkernelIiEvPT_E4tile",
                "managed_var",
                "__hip_cuid_e244b5dc499c3f91",
                "__oclc_ABI_version",
            ],
        ),
        (
            "omp-gfx90a.bc",
            OMP,
            &["bump", "counter", "__oclc_ABI_version"],
        ),
        (
            "split-lto.bc",
            SPLIT_LTO,
            &[
                "_ZN1A1fEv",
                "_ZN1B1fEv",
                "_Z4callP1A",
                "_Z4userv",
                "_ZTS1A",
                "_ZTI1A",
                "_ZTS1B",
                "_ZTI1B",
                "_ZTV1A",
                "_ZTV1B",
            ],
        ),
    ];

    fn names(data: &[u8]) -> Vec<String> {
        let symbols = archive_symbols(data).unwrap_or_else(|e| panic!("{e}"));
        symbols
            .iter()
            .map(|name| String::from_utf8_lossy(name).into_owned())
            .collect()
    }

    #[test]
    fn samples_list_what_llvm_ar_lists() {
        for (file, data, expected) in EXPECTED {
            assert!(is_bitcode(data), "{file}");
            assert_eq!(names(data), *expected, "{file}");
        }
    }

    #[test]
    fn symbols_left_out_are_undefined_local_or_llvm_own() {
        let symtab = IrSymtab::parse(SYMBOLS).unwrap();
        assert_eq!(symtab.target_triple().unwrap(), b"x86_64-pc-linux-gnu");
        assert_eq!(symtab.producer().unwrap(), b"19.1.7");
        let left_out: Vec<(&[u8], SymbolFlags)> = symtab
            .symbols()
            .map(Result::unwrap)
            .filter(|s| !s.flags.is_archive_symbol())
            .map(|s| (s.name, s.flags))
            .collect();
        let left_out_names: Vec<&[u8]> = left_out.iter().map(|(name, _)| *name).collect();
        assert_eq!(
            left_out_names,
            [
                &b"ext_fn"[..],
                b"llvm.threadlocal.address.p0",
                b"used_static",
                b"static_tls",
                b".L.str",
                b"llvm.compiler.used",
            ]
        );
        let flags = |name: &[u8]| left_out.iter().find(|(n, _)| *n == name).unwrap().1;
        assert!(flags(b"ext_fn").is_undefined());
        assert!(flags(b"llvm.threadlocal.address.p0").is_format_specific());
        assert!(!flags(b"used_static").is_global());
        assert!(flags(b".L.str").is_format_specific());
    }

    #[test]
    fn weak_common_hidden_and_tls_symbols_are_listed() {
        let symtab = IrSymtab::parse(SYMBOLS).unwrap();
        let flags = |name: &[u8]| {
            symtab
                .symbols()
                .map(Result::unwrap)
                .find(|s| s.name == name)
                .unwrap()
                .flags
        };
        assert!(flags(b"weak_fn").is_weak());
        assert!(flags(b"common_var").is_common());
        assert_eq!(flags(b"hidden_var").visibility(), 1);
        assert_eq!(flags(b"protected_var").visibility(), 2);
        assert!(flags(b"tls_var").is_tls());
        assert!(flags(b"fn").is_executable());
    }

    #[test]
    fn wrapped_bitcode_is_read_where_the_header_points() {
        assert!(SYMBOLS_DARWIN.starts_with(&WRAPPER_MAGIC));
        let (bitcode, offset) = unwrap(SYMBOLS_DARWIN).unwrap();
        assert_eq!(offset, 20);
        assert!(bitcode.starts_with(&RAW_MAGIC));
    }

    #[test]
    fn split_lto_units_hold_two_modules_and_one_symbol_table() {
        assert_eq!(IrSymtab::parse(SPLIT_LTO).unwrap().module_count(), 2);
    }

    #[test]
    fn concatenated_bitcode_without_a_symbol_table_is_refused() {
        // llvm-ar-19 parses the two modules and lists the symbols of both; without an irsymtab
        // this reader cannot.
        assert_eq!(archive_symbols(CONCATENATED), Err(Error::NoSymbolTable));
    }

    #[test]
    fn every_truncation_is_an_error_or_the_whole_list() {
        let whole = archive_symbols(ASM).unwrap();
        let check = |data: &[u8]| {
            if let Ok(names) = archive_symbols(data) {
                assert_eq!(names, whole, "{} bytes", data.len());
            }
        };
        for len in 0..ASM.len() {
            check(&ASM[..len]);
        }
        // Most lengths fail LLVM's multiple-of-4 rule before any parsing; behind a wrapper
        // header, which has no such rule for the bitcode it points at, every cut is parsed.
        for len in 0..ASM.len() {
            let mut wrapped = Vec::new();
            for word in [0x0b17_c0de, 0, 20, len as u32, 0] {
                wrapped.extend_from_slice(&u32::to_le_bytes(word));
            }
            wrapped.extend_from_slice(&ASM[..len]);
            wrapped.resize(wrapped.len().div_ceil(4) * 4, 0);
            check(&wrapped);
        }
    }

    #[test]
    fn a_truncated_symbol_table_block_is_a_bitstream_error() {
        let (_, offset) = TopLevel::parse(ASM).unwrap().symtab.unwrap();
        let cut = &ASM[..(offset as usize + 16) & !3];
        assert!(
            matches!(archive_symbols(cut), Err(Error::Bitstream { .. })),
            "{:?}",
            archive_symbols(cut)
        );
    }

    #[test]
    fn bad_containers_are_named() {
        assert_eq!(archive_symbols(b""), Err(Error::NotBitcode));
        assert_eq!(archive_symbols(b"\x7fELF"), Err(Error::NotBitcode));
        assert_eq!(
            archive_symbols(b"BC\xc0\xde\0"),
            Err(Error::LengthNotWordMultiple { len: 5 })
        );
        assert_eq!(archive_symbols(b"BC\xc0\xde"), Err(Error::NoModule));
        assert_eq!(
            archive_symbols(&WRAPPER_MAGIC),
            Err(Error::BadWrapper {
                offset: 0,
                size: 0,
                len: 4
            })
        );
        let mut wrapper = SYMBOLS_DARWIN.to_vec();
        wrapper[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            archive_symbols(&wrapper),
            Err(Error::BadWrapper { .. })
        ));
        let mut wrapper = SYMBOLS_DARWIN.to_vec();
        wrapper[8..12].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(
            archive_symbols(&wrapper),
            Err(Error::BadMagic { offset: 0 })
        );
    }

    #[test]
    fn errors_say_where() {
        let text = Error::OutOfBounds {
            what: "name",
            symbol: Some(3),
            field: 0x1234,
            start: 0x10,
            len: 0x20,
            table_len: 0x18,
        }
        .to_string();
        assert_eq!(
            text,
            "offset 0x1234: symbol 3: name at 0x10 of size 0x20 ends past its table (0x18)"
        );
        let text = Error::Bitstream {
            offset: 0x40,
            bit: 3,
            problem: BitstreamProblem::BlobPastEnd,
        }
        .to_string();
        assert_eq!(
            text,
            "offset 0x40 bit 3: malformed bitstream: the blob runs past the end of the data"
        );
    }

    /// A block holding one blob record of code 1, written with an abbreviation
    /// `[literal 1, blob]` as LLVM writes STRTAB and SYMTAB blocks.
    fn blob_block(w: &mut BitstreamWriter, id: u64, blob: &[u8]) {
        w.enter_block(id, 3);
        let abbrev = w.define_blob_abbrev(BLOB_RECORD);
        w.blob_record(abbrev, blob);
        w.end_block().unwrap();
    }

    /// A bitcode file of one module (with an unabbreviated record in it), an irsymtab of
    /// `symbols` (name, flags), and its string table.
    fn bitcode_with(symbols: &[(Vec<u8>, u32)]) -> Vec<u8> {
        let mut strtab = b"19.1.7".to_vec();
        let mut symtab = Vec::new();
        let header_words: [u32; 19] = [
            3,
            0,
            6,
            76,
            1,
            88,
            0,
            88,
            symbols.len() as u32,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
        ];
        let module_words: [u32; 3] = [0, symbols.len() as u32, 0];
        for word in header_words.iter().chain(&module_words) {
            symtab.extend_from_slice(&word.to_le_bytes());
        }
        for (name, flags) in symbols {
            let offset = strtab.len() as u32;
            strtab.extend_from_slice(name);
            let words = [
                offset,
                name.len() as u32,
                offset,
                name.len() as u32,
                u32::MAX,
                *flags,
            ];
            for word in words {
                symtab.extend_from_slice(&word.to_le_bytes());
            }
        }
        let mut w = BitstreamWriter::new(RAW_MAGIC);
        w.enter_block(block_id::MODULE, 3);
        w.record(1, &[2]);
        w.end_block().unwrap();
        // The symbol table is left as a hole and filled in afterwards, as the wrapper's images
        // are: the block's length must count it.
        w.enter_block(block_id::SYMTAB, 3);
        let abbrev = w.define_blob_abbrev(BLOB_RECORD);
        w.blob_hole(abbrev, 0, symtab.len() as u64);
        w.end_block().unwrap();
        blob_block(&mut w, block_id::STRTAB, &strtab);
        w.finish().to_bytes(|_| &symtab)
    }

    #[test]
    fn written_symbol_tables_read_back() {
        let global = SymbolFlags::GLOBAL;
        let data = bitcode_with(&[
            (b"kept".to_vec(), global | SymbolFlags::WEAK),
            (b"undefined".to_vec(), global | SymbolFlags::UNDEFINED),
            (b"local".to_vec(), 0),
            (b"llvm.used".to_vec(), global | SymbolFlags::FORMAT_SPECIFIC),
            (b"also_kept".to_vec(), global | SymbolFlags::COMMON | 1),
        ]);
        assert_eq!(
            archive_symbols(&data).unwrap(),
            [&b"kept"[..], b"also_kept"]
        );
    }

    #[test]
    fn out_of_bounds_names_are_errors() {
        let mut data = bitcode_with(&[(b"name".to_vec(), SymbolFlags::GLOBAL)]);
        let (_, offset) = TopLevel::parse(&data).unwrap().symtab.unwrap();
        let size_field = offset as usize + 88 + 4;
        data[size_field..size_field + 4].copy_from_slice(&1000u32.to_le_bytes());
        assert!(matches!(
            archive_symbols(&data),
            Err(Error::OutOfBounds {
                what: "name",
                symbol: Some(0),
                ..
            })
        ));
        let count_field = offset as usize + 32;
        data[count_field..count_field + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            archive_symbols(&data),
            Err(Error::OutOfBounds {
                what: "symbol array",
                ..
            })
        ));
    }

    #[test]
    fn differs_from_llvm_ar_nowhere_on_the_samples() {
        let Some(llvm_ar) = crate::ops::support::tool_path::reference_tool("llvm-ar-19") else {
            return;
        };
        let dir = std::env::temp_dir().join(format!("bitcode-armap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (file, data, _) in EXPECTED {
            std::fs::write(dir.join(file), data).unwrap();
            let archive = dir.join("x.a");
            let _ = std::fs::remove_file(&archive);
            let status = std::process::Command::new(&llvm_ar)
                .args(["rcs", "--format=gnu", "x.a", file])
                .current_dir(&dir)
                .status()
                .unwrap();
            assert!(status.success(), "{file}");
            let archive = std::fs::read(&archive).unwrap();
            assert_eq!(
                archive_symbols(data).unwrap(),
                gnu_armap(&archive),
                "{file}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The names of a GNU archive's symbol table (`/`): a big-endian count, that many
    /// offsets, then the names, each ended by a NUL.
    fn gnu_armap(archive: &[u8]) -> Vec<&[u8]> {
        assert!(archive.starts_with(b"!<arch>\n/ "));
        let size: usize = std::str::from_utf8(&archive[8 + 48..8 + 58])
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let body = &archive[68..68 + size];
        let count = u32::from_be_bytes(body[..4].try_into().unwrap()) as usize;
        body[4 + 4 * count..]
            .split(|&b| b == 0)
            .take(count)
            .collect()
    }

    proptest! {
        #[test]
        fn any_symbol_list_round_trips(
            symbols in proptest::collection::vec(
                (proptest::collection::vec(any::<u8>(), 0..12), 0u32..1 << 14),
                0..24,
            )
        ) {
            let data = bitcode_with(&symbols);
            let expected: Vec<&[u8]> = symbols
                .iter()
                .filter(|(_, flags)| SymbolFlags(*flags).is_archive_symbol())
                .map(|(name, _)| &name[..])
                .collect();
            prop_assert_eq!(archive_symbols(&data).unwrap(), expected);
        }

        #[test]
        fn damaged_samples_never_panic(
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)
        ) {
            for sample in [ASM, SYMBOLS_DARWIN, SPLIT_LTO] {
                let mut data = sample.to_vec();
                for (index, byte) in &edits {
                    let at = index.index(data.len());
                    data[at] = *byte;
                }
                let _ = archive_symbols(&data);
            }
        }

        #[test]
        fn random_bitstreams_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..256)) {
            let mut data = RAW_MAGIC.to_vec();
            data.extend_from_slice(&tail);
            data.truncate(data.len() & !3);
            let _ = archive_symbols(&data);
        }
    }
}
