//! COFF relocatable objects, rewritten as llvm-objcopy 19's COFF writer writes them.
//!
//! What the writer does, measured against its output:
//! - The file header is kept but for the section count, the symbol table pointer and the
//!   symbol count. The file is laid out anew with no padding: the file header, the section
//!   table, then for each section its raw data followed by its relocations, then the symbol
//!   table, then the string table.
//! - A section with `SizeOfRawData` 0 gets `PointerToRawData` 0, even if it had one; a section
//!   with a size but no data in the file (`.bss`) gets that many zero bytes, or 0xcc (int3)
//!   bytes if it is code. Relocations are written after the data, from `PointerToRawData`: a
//!   section with relocations and no data would get them over the file header, which is an
//!   error here.
//! - Names longer than 8 bytes, of sections and of symbols, go to a string table built anew
//!   and tail-merged in LLVM's order; a section header names its entry `/N` (`//` and six
//!   base-64 digits past offset 9999999).
//! - An added section gets the characteristics `IMAGE_SCN_LNK_REMOVE | IMAGE_SCN_MEM_READ`,
//!   `VirtualSize` and `SizeOfRawData` equal to its size, and a `VirtualAddress` just past the
//!   section before it (`VirtualAddress + VirtualSize`, 32-bit). A section already in the
//!   object under an added name gets the same characteristics, keeping its alignment.
//! - Removing a section removes the symbols defined in it and, again and again, the COMDAT
//!   sections associative to a removed section. A relocation or weak external whose target
//!   goes with them makes the tool fail.
//! - New contents of a section (`--update-section`) change its `SizeOfRawData` and nothing
//!   else of its header. They may not be larger than the old ones, and a section with no data
//!   in the file cannot get any. Here the `Length` of its section definition follows, which
//!   llvm-objcopy leaves stale; a section with relocations, a COMDAT section (its checksum
//!   would go stale) and new contents ending before a symbol defined in the section are
//!   refused, which llvm-objcopy writes.
//! - The section definition record of a static symbol defined in a section, with one
//!   auxiliary record, gets its section's new number (or its associated section's, with 0 in
//!   the high part); weak externals get their default's new index; a file name gets as many
//!   records as it needs, its trailing empty ones dropped. A file symbol whose records hold
//!   no name would get a broken symbol table (the records are counted but not written), which
//!   is an error here.
//! - `IMAGE_SCN_LNK_NRELOC_OVFL` is worked out anew: a section with 0xffff relocations or more
//!   gets it, and a first relocation holding the count plus one.

use std::borrow::Cow;

use object::pe::{
    self, AnonObjectHeader, ImageAuxSymbolSection, ImageAuxSymbolWeak, ImageFileHeader,
    ImageRelocation, ImageSectionHeader, ImageSymbol, SectionFlags,
};
use object::pod::{self, Pod};
use object::LittleEndian as LE;

use crate::host::error::{Error, ErrorKind, Name, Result};
use crate::host::objcopy::{AddedSection, Replace, Rewritten};
use crate::llvm::adt::strtab::{Flavor, StringTable};

/// The largest section number of a plain COFF object; 16-bit values above it are reserved
/// (`IMAGE_SYM_ABSOLUTE`, `IMAGE_SYM_DEBUG`, ...), read as negative numbers.
const MAX_SECTION_NUMBER: u16 = 0xfeff;

/// The largest string table offset a section header can write in decimal (`/9999999`).
const MAX_DECIMAL_NAME_OFFSET: u32 = 9_999_999;

/// The size of the name fields of section headers and symbol records.
const NAME_SIZE: usize = 8;

/// The characteristics `--set-section-flags=NAME=readonly,exclude` gives a section: readable
/// and removed at link time; of the old ones only the alignment stays.
fn readonly_exclude(old: SectionFlags) -> SectionFlags {
    old.align()
        .with(pe::IMAGE_SCN_MEM_READ)
        .with(pe::IMAGE_SCN_LNK_REMOVE)
}

/// A section of the input or an added one.
struct Section<'a> {
    name: &'a [u8],
    /// The header as read; offsets and counts are replaced when written.
    header: ImageSectionHeader,
    /// The bytes in the file (empty when `PointerToRawData` is 0), or its new contents.
    data: Cow<'a, [u8]>,
    relocations: Vec<Relocation>,
    /// Where its header is in the input (0 for added sections), for errors.
    at: u64,
}

/// A relocation, its target resolved to an index in the list of symbols.
struct Relocation {
    raw: ImageRelocation,
    target: usize,
    /// Where it is in the input, for errors.
    at: u64,
}

/// Where a symbol is defined, as LLVM reads the 16-bit section number.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// Undefined (0), or a reserved number kept as it is.
    Special(u16),
    /// Index in the list of input sections.
    Section(usize),
}

/// A symbol record and its auxiliary records.
struct Symbol<'a> {
    name: &'a [u8],
    raw: ImageSymbol,
    /// The auxiliary records as read, or with a section definition's new length.
    aux: Cow<'a, [u8]>,
    /// For a file symbol (`IMAGE_SYM_CLASS_FILE`): its name without trailing NULs.
    file_name: Option<&'a [u8]>,
    place: Place,
    /// For the section symbol of a COMDAT section associative to another: the other section's
    /// index.
    associated: Option<usize>,
    /// For a weak external: its target's index in the list of symbols.
    weak_target: Option<usize>,
    /// Where its record is in the input, for errors.
    at: u64,
}

impl Symbol<'_> {
    fn is_static(&self) -> bool {
        self.raw.storage_class == pe::IMAGE_SYM_CLASS_STATIC
    }

    /// Auxiliary records written for it: file names get as many as they need.
    fn aux_count(&self) -> usize {
        match self.file_name {
            Some(name) if !name.is_empty() => name.len().div_ceil(pe::IMAGE_SIZEOF_SYMBOL),
            _ => usize::from(self.raw.number_of_aux_symbols),
        }
    }
}

/// A COFF object as read.
struct Object<'a> {
    header: ImageFileHeader,
    sections: Vec<Section<'a>>,
    symbols: Vec<Symbol<'a>>,
}

/// Removes the sections `remove` selects, gives the sections of data `replace` answers for
/// their new contents, and appends `added`.
pub(super) fn rewrite<'a>(
    host: &'a [u8],
    added: &[AddedSection<'a>],
    remove: &dyn Fn(&[u8]) -> bool,
    replace: &Replace<'_, 'a>,
) -> Result<Rewritten<'a>> {
    let object = read(host)?;
    let removed = removed_sections(&object, remove);
    let object = keep(object, &removed)?;
    let object = replace_contents(object, replace)?;
    let object = append(object, added)?;
    write(object)
}

/// `count` values of `T` at `at` in `file`, or `None` if they do not fit.
fn slice_at<T: Pod>(file: &[u8], at: u64, count: usize) -> Option<&[T]> {
    let rest = file.get(usize::try_from(at).ok()?..)?;
    pod::slice_from_bytes(rest, count).ok().map(|(s, _)| s)
}

// ---- reading -------------------------------------------------------------------------------

fn read(file: &[u8]) -> Result<Object<'_>> {
    let header = file_header(file)?;
    let section_count = usize::from(header.number_of_sections.get(LE));
    let table_at = std::mem::size_of::<ImageFileHeader>() as u64;
    let headers: &[ImageSectionHeader] =
        slice_at(file, table_at, section_count).ok_or_else(|| {
            let kind = ErrorKind::SectionTablePastEnd {
                count: section_count,
                file_size: file.len(),
            };
            Error::new(table_at, kind)
        })?;
    let symbol_table = SymbolTable::read(file, header)?;

    let mut sections = Vec::with_capacity(section_count);
    for (i, h) in headers.iter().enumerate() {
        let at = table_at + (i * std::mem::size_of::<ImageSectionHeader>()) as u64;
        let name = section_name(h, &symbol_table, at)?;
        let data = section_data(file, h, name, at)?;
        sections.push(Section {
            name,
            header: *h,
            data: Cow::Borrowed(data),
            relocations: Vec::new(),
            at,
        });
    }
    let (symbols, slots) = read_symbols(&symbol_table, &sections)?;
    for (section, h) in sections.iter_mut().zip(headers) {
        section.relocations = read_relocations(file, h, section.name, &slots)?;
    }
    Ok(Object {
        header: *header,
        sections,
        symbols,
    })
}

/// The file header, after making sure the file is a plain COFF object.
fn file_header(file: &[u8]) -> Result<&ImageFileHeader> {
    if file.starts_with(b"MZ") {
        return Err(Error::new(0, ErrorKind::PeImage));
    }
    if let Ok((anon, _)) = pod::from_bytes::<AnonObjectHeader>(file) {
        if anon.sig1.get(LE) == pe::IMAGE_FILE_MACHINE_UNKNOWN && anon.sig2.get(LE) == 0xffff {
            let kind = if anon.version.get(LE) >= 2
                && anon.class_id.0 == pe::ANON_OBJECT_HEADER_BIGOBJ_CLASS_ID.0
            {
                ErrorKind::BigObject
            } else {
                ErrorKind::AnonymousObject
            };
            return Err(Error::new(0, kind));
        }
    }
    let (header, _) = pod::from_bytes::<ImageFileHeader>(file).map_err(|_| {
        let kind = ErrorKind::TruncatedCoffHeader {
            file_size: file.len(),
        };
        Error::new(0, kind)
    })?;
    let size = header.size_of_optional_header.get(LE);
    if size != 0 {
        return Err(Error::new(16, ErrorKind::OptionalHeader { size }));
    }
    Ok(header)
}

/// The symbol records and the string table after them.
struct SymbolTable<'a> {
    /// Offset of the first record.
    at: u64,
    records: &'a [ImageSymbol],
    /// The string table including its size field, as long as that field says (at least 4
    /// bytes, or nothing when there is no symbol table).
    strings: &'a [u8],
}

impl<'a> SymbolTable<'a> {
    fn read(file: &'a [u8], header: &ImageFileHeader) -> Result<Self> {
        let at = u64::from(header.pointer_to_symbol_table.get(LE));
        let count = header.number_of_symbols.get(LE);
        if at == 0 {
            if count != 0 {
                return Err(Error::new(8, ErrorKind::SymbolsWithoutTable { count }));
            }
            return Ok(SymbolTable {
                at,
                records: &[],
                strings: &[],
            });
        }
        let records: &[ImageSymbol] = slice_at(file, at, count as usize).ok_or_else(|| {
            let kind = ErrorKind::SymbolTablePastEnd {
                count,
                at,
                file_size: file.len(),
            };
            Error::new(8, kind)
        })?;
        let strings_at = at + u64::from(count) * pe::IMAGE_SIZEOF_SYMBOL as u64;
        let size = slice_at::<object::U32<LE>>(file, strings_at, 1)
            .and_then(|s| s.first())
            .map(|size| size.get(LE))
            .ok_or(Error::new(strings_at, ErrorKind::StringTableSizePastEnd))?;
        // Sizes under 4 stand for an empty table, as some tools write 0.
        let size = size.max(4);
        let strings = slice_at::<u8>(file, strings_at, size as usize).ok_or_else(|| {
            let kind = ErrorKind::StringTablePastEnd {
                size,
                file_size: file.len(),
            };
            Error::new(strings_at, kind)
        })?;
        if size > 4 && strings.last() != Some(&0) {
            return Err(Error::new(
                strings_at + u64::from(size) - 1,
                ErrorKind::StringTableNotTerminated,
            ));
        }
        Ok(SymbolTable {
            at,
            records,
            strings,
        })
    }

    /// The string at `offset` of the string table; `what` names the field for errors.
    fn string(&self, offset: u32, what: &dyn Fn() -> String, at: u64) -> Result<&'a [u8]> {
        if self.strings.len() <= 4 {
            let kind = ErrorKind::StringTableEmpty {
                what: what(),
                offset,
            };
            return Err(Error::new(at, kind));
        }
        let rest = self.strings.get(offset as usize..).ok_or_else(|| {
            let kind = ErrorKind::StringPastEnd {
                what: what(),
                offset,
                size: self.strings.len(),
            };
            Error::new(at, kind)
        })?;
        let end = memchr::memchr(0, rest).expect("the table ends with a NUL");
        Ok(rest.get(..end).unwrap_or_default())
    }
}

/// Up to the first NUL of an 8-byte name field.
fn short_name(field: &[u8; 8]) -> &[u8] {
    let end = memchr::memchr(0, field).unwrap_or(field.len());
    field.get(..end).unwrap_or(field)
}

fn section_name<'a>(
    h: &'a ImageSectionHeader,
    symbols: &SymbolTable<'a>,
    at: u64,
) -> Result<&'a [u8]> {
    let name = short_name(&h.name);
    let Some(reference) = name.strip_prefix(b"/") else {
        return Ok(name);
    };
    let offset = match reference.strip_prefix(b"/") {
        Some(digits) => decode_base64_offset(digits),
        None => decode_decimal_offset(reference),
    }
    .ok_or_else(|| {
        let kind = ErrorKind::SectionNameReference {
            name: Name::of(name),
        };
        Error::new(at, kind)
    })?;
    symbols.string(offset, &|| format!("section name '{}'", Name::of(name)), at)
}

fn decode_decimal_offset(digits: &[u8]) -> Option<u32> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

const BASE64_DIGITS: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn decode_base64_offset(digits: &[u8]) -> Option<u32> {
    if digits.len() > 6 {
        return None;
    }
    let mut value = 0u64;
    for d in digits {
        let v = BASE64_DIGITS.iter().position(|b| b == d)?;
        value = value * 64 + v as u64;
    }
    u32::try_from(value).ok()
}

fn section_data<'a>(
    file: &'a [u8],
    h: &ImageSectionHeader,
    name: &[u8],
    at: u64,
) -> Result<&'a [u8]> {
    let pointer = u64::from(h.pointer_to_raw_data.get(LE));
    if pointer == 0 {
        return Ok(&[]);
    }
    let size = h.size_of_raw_data.get(LE);
    slice_at(file, pointer, size as usize).ok_or_else(|| {
        let kind = ErrorKind::SectionDataPastEnd {
            section: Name::of(name),
            size,
            pointer,
            file_size: file.len(),
        };
        Error::new(at, kind)
    })
}

/// The symbols, and for each record slot of the table the symbol that starts there (`None`
/// for auxiliary records).
fn read_symbols<'a>(
    table: &SymbolTable<'a>,
    sections: &[Section<'a>],
) -> Result<(Vec<Symbol<'a>>, Vec<Option<usize>>)> {
    let records = table.records;
    let mut symbols = Vec::new();
    let mut slots = Vec::with_capacity(records.len());
    let mut weak_slots = Vec::new();
    let mut i = 0;
    while i < records.len() {
        let symbol = read_symbol(table, sections, i)?;
        let aux_count = usize::from(symbol.raw.number_of_aux_symbols);
        if let Some(slot) = weak_default_slot(&symbol) {
            weak_slots.push((symbols.len(), slot));
        }
        slots.push(Some(symbols.len()));
        slots.extend(std::iter::repeat_n(None, aux_count));
        symbols.push(symbol);
        i += 1 + aux_count;
    }
    for (k, slot) in weak_slots {
        let target = slots.get(slot as usize).copied().flatten();
        let Some(symbol) = symbols.get_mut(k) else {
            continue;
        };
        let target = target.ok_or_else(|| {
            let kind = ErrorKind::WeakDefault {
                symbol: Name::of(symbol.name),
                index: slot,
            };
            Error::new(symbol.at + pe::IMAGE_SIZEOF_SYMBOL as u64, kind)
        })?;
        symbol.weak_target = Some(target);
    }
    Ok((symbols, slots))
}

/// The symbol whose record is slot `i` of the table, with its auxiliary records.
#[allow(clippy::indexing_slicing)] // The caller walks `i` over the table's records.
fn read_symbol<'a>(
    table: &SymbolTable<'a>,
    sections: &[Section<'a>],
    i: usize,
) -> Result<Symbol<'a>> {
    let records = table.records;
    let raw = records[i];
    let at = table.at + (i * pe::IMAGE_SIZEOF_SYMBOL) as u64;
    let name = symbol_name(&records[i], table, i, at)?;
    let aux_count = usize::from(raw.number_of_aux_symbols);
    let aux = pod::bytes_of_slice(records)
        .get((i + 1) * pe::IMAGE_SIZEOF_SYMBOL..(i + 1 + aux_count) * pe::IMAGE_SIZEOF_SYMBOL)
        .ok_or_else(|| {
            let kind = ErrorKind::AuxiliaryRecordsPastEnd {
                index: i,
                symbol: Name::of(name),
                count: aux_count,
                records: records.len(),
            };
            Error::new(at, kind)
        })?;
    let number = raw.section_number.get(LE);
    let place = if number == 0 || number > MAX_SECTION_NUMBER {
        Place::Special(number)
    } else if usize::from(number) <= sections.len() {
        Place::Section(usize::from(number) - 1)
    } else {
        let kind = ErrorKind::SymbolSectionNumber {
            index: i,
            symbol: Name::of(name),
            number,
            sections: sections.len(),
        };
        return Err(Error::new(at, kind));
    };
    let mut symbol = Symbol {
        name,
        raw,
        aux: Cow::Borrowed(aux),
        file_name: None,
        place,
        associated: None,
        weak_target: None,
        at,
    };
    if raw.storage_class == pe::IMAGE_SYM_CLASS_FILE {
        symbol.file_name = Some(file_name(&symbol, aux, i)?);
    } else if aux_count > 0 && symbol.is_static() {
        symbol.associated = associated_section(&symbol, aux, i, sections.len())?;
    }
    Ok(symbol)
}

/// The name a file symbol's auxiliary records `aux` hold, without trailing NULs.
fn file_name<'a>(symbol: &Symbol<'a>, aux: &'a [u8], index: usize) -> Result<&'a [u8]> {
    let end = aux.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
    let count = usize::from(symbol.raw.number_of_aux_symbols);
    if end == 0 && count != 0 {
        // llvm-objcopy counts these records but writes none, which misplaces every symbol
        // after them.
        let kind = ErrorKind::FileSymbolWithoutName {
            index,
            symbol: Name::of(symbol.name),
            count,
        };
        return Err(Error::new(symbol.at, kind));
    }
    Ok(aux.get(..end).unwrap_or_default())
}

/// For the section symbol of a COMDAT section associative to another (its section
/// definition in `aux`), the other section's index, when the symbol is of a section.
fn associated_section(
    symbol: &Symbol<'_>,
    aux: &[u8],
    index: usize,
    sections: usize,
) -> Result<Option<usize>> {
    let (definition, _) = pod::from_bytes::<ImageAuxSymbolSection>(aux)
        .expect("an auxiliary record holds a section definition");
    if definition.selection != pe::IMAGE_COMDAT_SELECT_ASSOCIATIVE {
        return Ok(None);
    }
    let number = usize::from(definition.number.get(LE));
    if number == 0 || number > sections {
        let kind = ErrorKind::AssociativeSectionNumber {
            index,
            symbol: Name::of(symbol.name),
            number,
            sections,
        };
        return Err(Error::new(symbol.at + pe::IMAGE_SIZEOF_SYMBOL as u64, kind));
    }
    // Only symbols of sections take part in removals and get renumbered.
    Ok(matches!(symbol.place, Place::Section(_)).then_some(number - 1))
}

/// For a weak external, the record slot of its default.
fn weak_default_slot(symbol: &Symbol<'_>) -> Option<u32> {
    if symbol.raw.number_of_aux_symbols == 0
        || symbol.raw.storage_class != pe::IMAGE_SYM_CLASS_WEAK_EXTERNAL
    {
        return None;
    }
    let (weak, _) = pod::from_bytes::<ImageAuxSymbolWeak>(&symbol.aux)
        .expect("an auxiliary record holds a weak external");
    Some(weak.weak_default_sym_index.get(LE))
}

fn symbol_name<'a>(
    raw: &'a ImageSymbol,
    table: &SymbolTable<'a>,
    index: usize,
    at: u64,
) -> Result<&'a [u8]> {
    if raw.name[..4] != [0; 4] {
        return Ok(short_name(&raw.name));
    }
    let offset = u32::from_le_bytes(raw.name[4..].try_into().expect("four bytes"));
    table.string(offset, &|| format!("symbol {index}"), at)
}

fn read_relocations(
    file: &[u8],
    h: &ImageSectionHeader,
    name: &[u8],
    slots: &[Option<usize>],
) -> Result<Vec<Relocation>> {
    let pointer = u64::from(h.pointer_to_relocations.get(LE));
    let mut count = usize::from(h.number_of_relocations.get(LE));
    let mut first = pointer;
    let overflow = h
        .characteristics
        .get(LE)
        .contains(pe::IMAGE_SCN_LNK_NRELOC_OVFL);
    if overflow && count == 0xffff {
        // The real count, plus one for this record, is in the first record.
        let counter = slice_at::<ImageRelocation>(file, pointer, 1).ok_or_else(|| {
            let section = Name::of(name);
            Error::new(pointer, ErrorKind::RelocationCountPastEnd { section })
        })?;
        let counted = counter.first().map_or(0, |c| c.virtual_address.get(LE));
        count = (counted as usize).checked_sub(1).ok_or_else(|| {
            let section = Name::of(name);
            Error::new(pointer, ErrorKind::RelocationCountZero { section })
        })?;
        first += std::mem::size_of::<ImageRelocation>() as u64;
    }
    if count == 0 {
        return Ok(Vec::new());
    }
    let records: &[ImageRelocation] = slice_at(file, first, count).ok_or_else(|| {
        let kind = ErrorKind::RelocationsPastEnd {
            section: Name::of(name),
            count,
            at: first,
            file_size: file.len(),
        };
        Error::new(first, kind)
    })?;
    records
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let index = r.symbol_table_index.get(LE);
            let at = first + (k * std::mem::size_of::<ImageRelocation>()) as u64;
            let kind = match slots.get(index as usize) {
                Some(Some(target)) => {
                    return Ok(Relocation {
                        raw: *r,
                        target: *target,
                        at,
                    })
                }
                Some(None) => ErrorKind::RelocationToAuxiliaryRecord {
                    section: Name::of(name),
                    relocation: k,
                    index,
                },
                None => ErrorKind::RelocationPastSymbols {
                    section: Name::of(name),
                    relocation: k,
                    index,
                    records: slots.len(),
                },
            };
            Err(Error::new(at, kind))
        })
        .collect()
}

// ---- editing -------------------------------------------------------------------------------

/// Which input sections go: those `remove` selects, then, until none is left, the COMDAT
/// sections whose section symbol is associative to one that goes.
#[allow(clippy::indexing_slicing)] // Section and symbol indexes were checked when read.
fn removed_sections(object: &Object<'_>, remove: &dyn Fn(&[u8]) -> bool) -> Vec<bool> {
    let mut removed: Vec<bool> = object.sections.iter().map(|s| remove(s.name)).collect();
    loop {
        let mut more = false;
        for symbol in &object.symbols {
            if let (Some(associated), Place::Section(own)) = (symbol.associated, symbol.place) {
                if removed[associated] && !removed[own] {
                    removed[own] = true;
                    more = true;
                }
            }
        }
        if !more {
            return removed;
        }
    }
}

/// The object without the removed sections and the symbols defined in them, with sections
/// and symbols renumbered. A kept relocation or weak external whose target goes makes
/// llvm-objcopy fail, and is an error here too.
#[allow(clippy::indexing_slicing)] // Section and symbol indexes were checked when read.
fn keep<'a>(object: Object<'a>, removed: &[bool]) -> Result<Object<'a>> {
    if !removed.contains(&true) {
        return Ok(object);
    }
    let symbol_gone: Vec<bool> = object
        .symbols
        .iter()
        .map(|s| matches!(s.place, Place::Section(i) if removed[i]))
        .collect();
    check_targets_stay(&object, removed, &symbol_gone)?;
    let new_section = renumber(removed);
    let new_symbol = renumber(&symbol_gone);
    let Object {
        header,
        sections,
        symbols,
    } = object;
    let sections = sections
        .into_iter()
        .zip(removed)
        .filter(|(_, &gone)| !gone)
        .map(|(mut section, _)| {
            for r in &mut section.relocations {
                r.target = new_symbol[r.target].expect("checked above");
            }
            section
        })
        .collect();
    let symbols = symbols
        .into_iter()
        .zip(&symbol_gone)
        .filter(|(_, &gone)| !gone)
        .map(|(mut symbol, _)| {
            if let Place::Section(i) = symbol.place {
                symbol.place = Place::Section(new_section[i].expect("its section stays"));
            }
            symbol.associated = symbol
                .associated
                .map(|i| new_section[i].expect("a section goes with the one it is associative to"));
            symbol.weak_target = symbol
                .weak_target
                .map(|k| new_symbol[k].expect("checked above"));
            symbol
        })
        .collect();
    Ok(Object {
        header,
        sections,
        symbols,
    })
}

/// New indexes of the items that stay.
fn renumber(gone: &[bool]) -> Vec<Option<usize>> {
    let mut next = 0;
    gone.iter()
        .map(|&gone| {
            (!gone).then(|| {
                next += 1;
                next - 1
            })
        })
        .collect()
}

#[allow(clippy::indexing_slicing)] // Section and symbol indexes were checked when read.
fn check_targets_stay(object: &Object<'_>, removed: &[bool], symbol_gone: &[bool]) -> Result<()> {
    let section_name = |i: usize| Name::of(object.sections[i].name);
    let home = |symbol: &Symbol<'_>| match symbol.place {
        Place::Section(i) => section_name(i),
        Place::Special(_) => unreachable!("only symbols of removed sections go"),
    };
    for (section, _) in object.sections.iter().zip(removed).filter(|(_, &g)| !g) {
        for (k, r) in section.relocations.iter().enumerate() {
            if symbol_gone[r.target] {
                let target = &object.symbols[r.target];
                let kind = ErrorKind::RemovedButRelocationTarget {
                    section: home(target),
                    relocation: k,
                    by: Name::of(section.name),
                    symbol: Name::of(target.name),
                };
                return Err(Error::new(r.at, kind));
            }
        }
    }
    for (symbol, _) in object.symbols.iter().zip(symbol_gone).filter(|(_, &g)| !g) {
        if let Some(k) = symbol.weak_target.filter(|&k| symbol_gone[k]) {
            let target = &object.symbols[k];
            let kind = ErrorKind::RemovedButWeakDefault {
                section: home(target),
                symbol: Name::of(target.name),
                weak: Name::of(symbol.name),
            };
            return Err(Error::new(symbol.at, kind));
        }
    }
    Ok(())
}

/// Whether a section holds data whose contents may be replaced: neither code nor
/// uninitialised data. Sections with no contents flag hold data too: clang marks its
/// `.llvm.offloading` section and the bundler its sections with only `IMAGE_SCN_LNK_REMOVE`
/// and alignment.
fn holds_data(header: &ImageSectionHeader) -> bool {
    let flags = header.characteristics.get(LE);
    !flags.intersects(pe::IMAGE_SCN_CNT_CODE.with(pe::IMAGE_SCN_CNT_UNINITIALIZED_DATA))
}

/// The index of the symbol holding the section definition of section `index`: the static
/// symbol named like it, defined in it, with one auxiliary record.
#[allow(clippy::indexing_slicing)] // Section and symbol indexes were checked when read.
fn definition_of(object: &Object<'_>, index: usize) -> Option<usize> {
    let name = object.sections[index].name;
    object.symbols.iter().position(|s| {
        s.is_static()
            && s.raw.number_of_aux_symbols == 1
            && s.place == Place::Section(index)
            && s.name == name
    })
}

/// The object with the new contents `replace` gives, asked for each section of data with its
/// name and contents. As `llvm-objcopy --update-section` does, only `SizeOfRawData` of the
/// header changes; unlike it, the `Length` of the section definition follows, which it leaves
/// stale.
#[allow(clippy::indexing_slicing)] // Section and symbol indexes were checked when read.
fn replace_contents<'a>(mut object: Object<'a>, replace: &Replace<'_, 'a>) -> Result<Object<'a>> {
    for index in 0..object.sections.len() {
        let section = &object.sections[index];
        if !holds_data(&section.header) {
            continue;
        }
        let Some(new) = replace(section.name, &section.data) else {
            continue;
        };
        check_replaceable(&object, index, new.len())?;
        // No larger than the old contents, so the size fits.
        let size = u32::try_from(new.len()).unwrap_or(u32::MAX);
        if let Some(k) = definition_of(&object, index) {
            let (definition, _) =
                pod::from_bytes_mut::<ImageAuxSymbolSection>(object.symbols[k].aux.to_mut())
                    .expect("one auxiliary record");
            definition.length.set(LE, size);
        }
        let section = &mut object.sections[index];
        section.header.size_of_raw_data.set(LE, size);
        section.data = new;
    }
    Ok(object)
}

/// Refuses new contents of `new_size` bytes for section `index` where llvm-objcopy refuses
/// them, and where what it writes would be wrong: relocations would apply to bytes that
/// changed, a COMDAT checksum would not match, a symbol would point past the end.
#[allow(clippy::indexing_slicing)] // Section and symbol indexes were checked when read.
fn check_replaceable(object: &Object<'_>, index: usize, new_size: usize) -> Result<()> {
    let section = &object.sections[index];
    let refuse =
        |kind: fn(Name) -> ErrorKind| Err(Error::new(section.at, kind(Name::of(section.name))));
    if !section.relocations.is_empty() {
        return refuse(|section| ErrorKind::ReplacedButRelocated { section });
    }
    let selection = definition_of(object, index).map(|k| {
        let (definition, _) = pod::from_bytes::<ImageAuxSymbolSection>(&object.symbols[k].aux)
            .expect("one auxiliary record");
        definition.selection
    });
    let flags = section.header.characteristics.get(LE);
    if flags.contains(pe::IMAGE_SCN_LNK_COMDAT) || selection.is_some_and(|s| s.0 != 0) {
        return refuse(|section| ErrorKind::ReplacedComdat { section });
    }
    let old_size = section.data.len();
    if old_size == 0 {
        return refuse(|section| ErrorKind::ReplacedButEmpty { section });
    }
    // Larger contents are laid out like any other (llvm-objcopy's --update-section refuses
    // them; decompressing a bundle needs them).
    for symbol in &object.symbols {
        let value = symbol.raw.value.get(LE);
        if symbol.place == Place::Section(index) && value as usize > new_size {
            let kind = ErrorKind::SymbolPastNewEnd {
                symbol: Name::of(symbol.name),
                value,
                section: Name::of(section.name),
                size: new_size,
            };
            return Err(Error::new(symbol.at, kind));
        }
    }
    Ok(())
}

/// The object with `added` appended, and the characteristics of sections already named like
/// one of them set as for the added ones.
fn append<'a>(mut object: Object<'a>, added: &[AddedSection<'a>]) -> Result<Object<'a>> {
    for section in &mut object.sections {
        if added.iter().any(|a| a.name.as_bytes() == section.name) {
            let old = section.header.characteristics.get(LE);
            section
                .header
                .characteristics
                .set(LE, readonly_exclude(old));
        }
    }
    for a in added {
        let size = u32::try_from(a.data.len()).map_err(|_| {
            let kind = ErrorKind::SectionTooLarge {
                section: Name(a.name.into()),
                size: a.data.len(),
            };
            Error::new(0, kind)
        })?;
        let address = object.sections.last().map_or(0, |last| {
            let h = &last.header;
            h.virtual_address
                .get(LE)
                .wrapping_add(h.virtual_size.get(LE))
        });
        let mut header = ImageSectionHeader::default();
        header.virtual_size.set(LE, size);
        header.virtual_address.set(LE, address);
        header.size_of_raw_data.set(LE, size);
        header
            .characteristics
            .set(LE, readonly_exclude(SectionFlags(0)));
        object.sections.push(Section {
            name: a.name.as_bytes(),
            header,
            data: Cow::Borrowed(a.data),
            relocations: Vec::new(),
            at: 0,
        });
    }
    Ok(object)
}

// ---- writing -------------------------------------------------------------------------------

// The counts fit their fields: sections were checked against MAX_SECTION_NUMBER, and symbol
// records are no more than the input's 32-bit count.
#[allow(clippy::cast_possible_truncation)]
fn write(object: Object<'_>) -> Result<Rewritten<'_>> {
    let Object {
        mut header,
        sections,
        symbols,
    } = object;
    if sections.len() > usize::from(MAX_SECTION_NUMBER) {
        let count = sections.len();
        return Err(Error::new(2, ErrorKind::TooManyCoffSections { count }));
    }
    let (record_index, records) = record_indices(&symbols);
    let names = StringTable::build(
        sections
            .iter()
            .map(|s| s.name)
            .chain(symbols.iter().map(|s| s.name))
            .filter(|name| name.len() > NAME_SIZE),
        Flavor::Coff,
    );

    let mut out = Rewritten::default();
    header.number_of_sections.set(LE, sections.len() as u16);
    let mut cursor = (std::mem::size_of::<ImageFileHeader>()
        + sections.len() * std::mem::size_of::<ImageSectionHeader>()) as u64;
    let mut section_table = Vec::with_capacity(cursor as usize);
    for section in sections {
        let h = place_section(&mut out, section, &mut cursor, &names, &record_index)?;
        section_table.extend_from_slice(pod::bytes_of(&h));
    }
    let symbols_at = u32::try_from(cursor)
        .map_err(|_| Error::new(0, ErrorKind::SymbolTableBeyond4GiB { at: cursor }))?;
    header.pointer_to_symbol_table.set(LE, symbols_at);
    header.number_of_symbols.set(LE, records as u32);
    let mut head = pod::bytes_of(&header).to_vec();
    head.extend_from_slice(&section_table);
    out.push(0, head);

    let mut tail = symbol_records(&symbols, &record_index, &names, records);
    tail.extend_from_slice(&names.bytes);
    let size = cursor + tail.len() as u64;
    out.push(cursor, tail);
    Ok(out.finish(size))
}

/// The index of each symbol's record in the table, and the number of records.
#[allow(clippy::cast_possible_truncation)] // No more records than the input's 32-bit count.
fn record_indices(symbols: &[Symbol<'_>]) -> (Vec<u32>, usize) {
    let mut record_index = Vec::with_capacity(symbols.len());
    let mut records = 0usize;
    for symbol in symbols {
        record_index.push(records as u32);
        records += 1 + symbol.aux_count();
    }
    (record_index, records)
}

/// Puts `section`'s data, then its relocations, at `cursor` in `out`, moving `cursor` past
/// them; its header, pointing at them.
fn place_section<'a>(
    out: &mut Rewritten<'a>,
    section: Section<'a>,
    cursor: &mut u64,
    names: &StringTable,
    record_index: &[u32],
) -> Result<ImageSectionHeader> {
    let mut h = section.header;
    h.name = section_name_field(section.name, names);
    let size = h.size_of_raw_data.get(LE);
    if size == 0 && !section.relocations.is_empty() {
        // llvm-objcopy writes relocations after the data, from PointerToRawData, which is 0
        // here: over the file header.
        let kind = ErrorKind::RelocationsWithoutData {
            section: Name::of(section.name),
        };
        return Err(Error::new(section.at, kind));
    }
    h.pointer_to_raw_data
        .set(LE, if size > 0 { low32(*cursor) } else { 0 });
    let in_file = section.data.len() as u64;
    out.push(*cursor, section.data);
    if h.characteristics.get(LE).contains(pe::IMAGE_SCN_CNT_CODE) {
        // Code without data in the file (PointerToRawData 0) is filled with int3.
        push_int3(out, *cursor + in_file, *cursor + u64::from(size));
    }
    *cursor += u64::from(size);

    let relocations = relocation_records(&section.relocations, record_index);
    let count = section.relocations.len();
    let mut flags = h
        .characteristics
        .get(LE)
        .without(pe::IMAGE_SCN_LNK_NRELOC_OVFL);
    if count >= 0xffff {
        flags.insert(pe::IMAGE_SCN_LNK_NRELOC_OVFL);
    }
    h.characteristics.set(LE, flags);
    h.number_of_relocations
        .set(LE, u16::try_from(count).unwrap_or(0xffff));
    h.pointer_to_relocations
        .set(LE, if count > 0 { low32(*cursor) } else { 0 });
    let len = relocations.len() as u64;
    out.push(*cursor, relocations);
    *cursor += len;
    Ok(h)
}

/// The low 32 bits of an offset in the output: every one of them is below the symbol table's,
/// which `write` checks to fit 32 bits.
#[allow(clippy::cast_possible_truncation)] // Checked, see above.
fn low32(offset: u64) -> u32 {
    offset as u32
}

/// Fills `start..end` of the output with 0xcc (int3 on x86).
fn push_int3(out: &mut Rewritten<'_>, start: u64, end: u64) {
    static INT3: [u8; 1 << 16] = [0xcc; 1 << 16];
    let mut at = start;
    while at < end {
        let n = (end - at).min(INT3.len() as u64);
        let fill = INT3.get(..usize::try_from(n).unwrap_or(INT3.len()));
        out.push(at, fill.unwrap_or(&INT3));
        at += n;
    }
}

/// An 8-byte name field: the name itself when it fits, else where it is in the string table.
#[allow(clippy::indexing_slicing)] // Names and their offsets written short enough to fit.
fn section_name_field(name: &[u8], names: &StringTable) -> [u8; NAME_SIZE] {
    let mut field = [0; NAME_SIZE];
    if name.len() <= NAME_SIZE {
        field[..name.len()].copy_from_slice(name);
        return field;
    }
    let offset = names.offset(name);
    if offset <= MAX_DECIMAL_NAME_OFFSET {
        let text = format!("/{offset}");
        field[..text.len()].copy_from_slice(text.as_bytes());
    } else {
        field[..2].copy_from_slice(b"//");
        let mut value = offset;
        for digit in field[2..].iter_mut().rev() {
            *digit = BASE64_DIGITS[(value % 64) as usize];
            value /= 64;
        }
    }
    field
}

/// The relocation records of a section, with a leading count record when there are too many
/// for the 16-bit count of the section header.
// Symbol numbers were renumbered within the table; the count came from a 32-bit field.
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
fn relocation_records(relocations: &[Relocation], record_index: &[u32]) -> Vec<u8> {
    let size = std::mem::size_of::<ImageRelocation>();
    let mut out = Vec::with_capacity((relocations.len() + 1) * size);
    if relocations.len() >= 0xffff {
        // VirtualAddress holds the count, this record included; the other fields are 0.
        out.extend_from_slice(&(relocations.len() as u32 + 1).to_le_bytes());
        out.resize(size, 0);
    }
    for r in relocations {
        let mut raw = r.raw;
        raw.symbol_table_index.set(LE, record_index[r.target]);
        out.extend_from_slice(pod::bytes_of(&raw));
    }
    out
}

/// The symbol table: `records` records of 18 bytes.
// Names are written short when they fit the field; section numbers and auxiliary counts were
// read from fields of these sizes, and symbols renumbered within the table.
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
fn symbol_records(
    symbols: &[Symbol<'_>],
    record_index: &[u32],
    names: &StringTable,
    records: usize,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(records * pe::IMAGE_SIZEOF_SYMBOL);
    for symbol in symbols {
        let mut raw = symbol.raw;
        raw.name = [0; NAME_SIZE];
        if symbol.name.len() > NAME_SIZE {
            raw.name[4..].copy_from_slice(&names.offset(symbol.name).to_le_bytes());
        } else {
            raw.name[..symbol.name.len()].copy_from_slice(symbol.name);
        }
        let number = match symbol.place {
            Place::Special(number) => number,
            Place::Section(i) => i as u16 + 1,
        };
        raw.section_number.set(LE, number);
        let aux_count = symbol.aux_count();
        raw.number_of_aux_symbols = aux_count as u8;
        out.extend_from_slice(pod::bytes_of(&raw));

        let aux_at = out.len();
        match symbol.file_name {
            Some(name) => out.extend_from_slice(name),
            None => out.extend_from_slice(&symbol.aux),
        }
        out.resize(aux_at + aux_count * pe::IMAGE_SIZEOF_SYMBOL, 0);
        let aux = &mut out[aux_at..];
        if let (true, 1, Place::Section(own)) = (symbol.is_static(), aux_count, symbol.place) {
            let number = symbol.associated.unwrap_or(own) + 1;
            let (definition, _) =
                pod::from_bytes_mut::<ImageAuxSymbolSection>(aux).expect("one auxiliary record");
            definition.number.set(LE, number as u16);
            definition.high_number.set(LE, (number >> 16) as u16);
        }
        if let Some(target) = symbol.weak_target {
            let (weak, _) =
                pod::from_bytes_mut::<ImageAuxSymbolWeak>(aux).expect("one auxiliary record");
            weak.weak_default_sym_index.set(LE, record_index[target]);
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;
    use object::{Object as _, ObjectSection as _, ObjectSymbol as _};

    /// A section of a test object: name, VirtualAddress, VirtualSize, data (`None` for
    /// uninitialised data of that many bytes), relocations as (offset, symbol record, type).
    struct TestSection {
        name: &'static str,
        address: u32,
        virtual_size: u32,
        data: std::result::Result<Vec<u8>, u32>,
        relocations: Vec<(u32, u32, u16)>,
    }

    fn section(name: &'static str, data: &[u8], relocations: Vec<(u32, u32, u16)>) -> TestSection {
        TestSection {
            name,
            address: 0,
            virtual_size: 0,
            data: Ok(data.to_vec()),
            relocations,
        }
    }

    /// A symbol of a test object: name, section number, storage class, auxiliary records.
    struct TestSymbol {
        name: &'static [u8],
        section: u16,
        class: u8,
        aux: Vec<[u8; 18]>,
    }

    fn symbol(name: &'static [u8], section: u16, class: u8) -> TestSymbol {
        TestSymbol {
            name,
            section,
            class,
            aux: Vec::new(),
        }
    }

    /// A section symbol; `associated` makes its section an associative COMDAT of that one.
    fn section_symbol(name: &'static [u8], section: u16, associated: Option<u16>) -> TestSymbol {
        let mut aux = [0u8; 18];
        aux[12..14].copy_from_slice(&associated.unwrap_or(section).to_le_bytes());
        if associated.is_some() {
            aux[14] = 5;
        }
        TestSymbol {
            aux: vec![aux],
            ..symbol(name, section, 3)
        }
    }

    /// An x86-64 object laid out as clang lays them out, with an optional gap before the
    /// symbol table.
    /// A string table being built: its size field first, then each name with a NUL.
    struct Strings(Vec<u8>);

    impl Strings {
        /// Adds `name`; its offset.
        fn intern(&mut self, name: &[u8]) -> u32 {
            let offset = self.0.len() as u32;
            self.0.extend_from_slice(name);
            self.0.push(0);
            offset
        }
    }

    fn build(sections: &[TestSection], symbols: &[TestSymbol]) -> Vec<u8> {
        let mut strings = Strings(vec![0u8; 4]);
        let mut table = Vec::new();
        let mut body = Vec::new();
        let start = 20 + 40 * sections.len();
        for s in sections {
            table.extend_from_slice(&section_header(s, start, &mut body, &mut strings));
        }
        let (records, count) = symbol_table(symbols, &mut strings);
        let mut strings = strings.0;
        let size = strings.len() as u32;
        strings[..4].copy_from_slice(&size.to_le_bytes());
        let mut out = Vec::new();
        out.extend_from_slice(&0x8664u16.to_le_bytes());
        out.extend_from_slice(&(sections.len() as u16).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&((start + body.len()) as u32).to_le_bytes());
        out.extend_from_slice(&count.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend_from_slice(&table);
        out.extend_from_slice(&body);
        out.extend_from_slice(&records);
        out.extend_from_slice(&strings);
        out
    }

    /// The header of `s`, whose data and relocations are appended to `body` (which starts at
    /// `start` in the file).
    fn section_header(
        s: &TestSection,
        start: usize,
        body: &mut Vec<u8>,
        strings: &mut Strings,
    ) -> Vec<u8> {
        let mut name = [0u8; 8];
        if s.name.len() > 8 {
            let text = format!("/{}", strings.intern(s.name.as_bytes()));
            name[..text.len()].copy_from_slice(text.as_bytes());
        } else {
            name[..s.name.len()].copy_from_slice(s.name.as_bytes());
        }
        let mut header = name.to_vec();
        header.extend_from_slice(&s.virtual_size.to_le_bytes());
        header.extend_from_slice(&s.address.to_le_bytes());
        let (size, pointer) = match &s.data {
            Ok(data) => {
                let at = start + body.len();
                body.extend_from_slice(data);
                (
                    data.len() as u32,
                    if data.is_empty() { 0 } else { at as u32 },
                )
            }
            Err(size) => (*size, 0),
        };
        header.extend_from_slice(&size.to_le_bytes());
        header.extend_from_slice(&pointer.to_le_bytes());
        let relocations_at = if s.relocations.is_empty() {
            0
        } else {
            (start + body.len()) as u32
        };
        for &(offset, symbol, typ) in &s.relocations {
            body.extend_from_slice(&offset.to_le_bytes());
            body.extend_from_slice(&symbol.to_le_bytes());
            body.extend_from_slice(&typ.to_le_bytes());
        }
        header.extend_from_slice(&relocations_at.to_le_bytes());
        header.extend_from_slice(&0u32.to_le_bytes());
        header.extend_from_slice(&(s.relocations.len() as u16).to_le_bytes());
        header.extend_from_slice(&0u16.to_le_bytes());
        let flags: u32 = if s.data.is_ok() {
            0x4030_0040
        } else {
            0xc030_0080
        };
        header.extend_from_slice(&flags.to_le_bytes());
        header
    }

    /// The symbol records of `symbols`, and how many there are.
    fn symbol_table(symbols: &[TestSymbol], strings: &mut Strings) -> (Vec<u8>, u32) {
        let mut records = Vec::new();
        let mut count = 0u32;
        for s in symbols {
            let mut name = [0u8; 8];
            if s.name.len() > 8 {
                name[4..].copy_from_slice(&strings.intern(s.name).to_le_bytes());
            } else {
                name[..s.name.len()].copy_from_slice(s.name);
            }
            records.extend_from_slice(&name);
            records.extend_from_slice(&0u32.to_le_bytes());
            records.extend_from_slice(&s.section.to_le_bytes());
            records.extend_from_slice(&0u16.to_le_bytes());
            records.push(s.class);
            records.push(s.aux.len() as u8);
            for aux in &s.aux {
                records.extend_from_slice(aux);
            }
            count += 1 + s.aux.len() as u32;
        }
        (records, count)
    }

    /// A small object: .text with a relocation against `data_symbol`, .data, an associative
    /// COMDAT .pdata of .text, uninitialised .bss.
    fn sample() -> Vec<u8> {
        build(
            &[
                section(".text", &[0xc3; 8], vec![(0, 8, 4)]),
                section(".data", &[1, 2, 3, 4], vec![]),
                section(".pdata", &[5; 12], vec![(0, 0, 3)]),
                TestSection {
                    data: Err(16),
                    ..section(".bss", &[], vec![])
                },
            ],
            &[
                section_symbol(b".text", 1, None),
                section_symbol(b".data", 2, None),
                section_symbol(b".pdata", 3, Some(1)),
                section_symbol(b".bss", 4, None),
                symbol(b"data_symbol_with_a_long_name", 2, 2),
                symbol(b"undefined", 0, 2),
            ],
        )
    }

    fn run(input: &[u8], added: &[AddedSection<'_>], remove: &dyn Fn(&[u8]) -> bool) -> Vec<u8> {
        rewrite(input, added, remove, &|_, _| None)
            .unwrap()
            .to_vec()
    }

    fn header_of(output: &[u8], index: usize) -> ImageSectionHeader {
        *pod::from_bytes::<ImageSectionHeader>(&output[20 + 40 * index..])
            .unwrap()
            .0
    }

    #[test]
    fn sections_are_laid_out_one_after_another_with_their_relocations() {
        let input = sample();
        let output = run(&input, &[], &|_| false);
        let file = object::File::parse(&*output).unwrap();
        let mut at = 20 + 40 * 4;
        for (index, size, relocations) in [(0, 8, 1), (1, 4, 0), (2, 12, 1)] {
            let h = header_of(&output, index);
            assert_eq!(h.pointer_to_raw_data.get(LE), at);
            at += size;
            let expected = if relocations > 0 { at } else { 0 };
            assert_eq!(h.pointer_to_relocations.get(LE), expected);
            at += 10 * relocations;
        }
        // Uninitialised data gets zeros in the file.
        let bss = header_of(&output, 3);
        assert_eq!(bss.pointer_to_raw_data.get(LE), at);
        assert!(output[at as usize..at as usize + 16]
            .iter()
            .all(|&b| b == 0));
        assert_eq!(
            file.section_by_name(".data").unwrap().data().unwrap(),
            [1, 2, 3, 4]
        );
        let table_at = at + 16;
        let (header, _) = pod::from_bytes::<ImageFileHeader>(&output).unwrap();
        assert_eq!(header.pointer_to_symbol_table.get(LE), table_at);
        // The same again: a rewritten object is its own rewrite.
        assert_eq!(run(&output, &[], &|_| false), output);
    }

    #[test]
    fn added_sections_are_readonly_excluded_and_follow_the_last_address() {
        let mut sections = vec![section(".text", &[0xc3; 4], vec![])];
        sections[0].address = 0x100;
        sections[0].virtual_size = 0x20;
        let input = build(&sections, &[section_symbol(b".text", 1, None)]);
        let added = [
            AddedSection {
                name: "__CLANG_OFFLOAD_BUNDLE__host-x86_64-pc-windows-msvc",
                data: &[0],
            },
            AddedSection {
                name: "short",
                data: b"device code",
            },
        ];
        let output = run(&input, &added, &|_| false);
        for (index, address, size) in [(1, 0x120, 1), (2, 0x121, 11)] {
            let h = header_of(&output, index);
            assert_eq!(h.characteristics.get(LE).0, 0x4000_0800);
            assert_eq!(h.virtual_address.get(LE), address);
            assert_eq!(h.virtual_size.get(LE), size);
            assert_eq!(h.size_of_raw_data.get(LE), size);
        }
        assert_eq!(&header_of(&output, 1).name, b"/4\0\0\0\0\0\0");
        assert_eq!(&header_of(&output, 2).name, b"short\0\0\0");
        let file = object::File::parse(&*output).unwrap();
        let names: Vec<_> = file
            .sections()
            .map(|s| s.name().unwrap().to_string())
            .collect();
        assert_eq!(names, [".text", added[0].name, "short"]);
        assert_eq!(
            file.section_by_name("short").unwrap().data().unwrap(),
            b"device code"
        );
    }

    #[test]
    fn a_section_already_named_like_an_added_one_gets_its_flags() {
        let input = sample();
        let added = [AddedSection {
            name: ".data",
            data: &[9],
        }];
        let output = run(&input, &added, &|_| false);
        // Alignment (4 bytes) stays, the rest is replaced.
        assert_eq!(header_of(&output, 1).characteristics.get(LE).0, 0x4030_0800);
        assert_eq!(header_of(&output, 4).characteristics.get(LE).0, 0x4000_0800);
    }

    #[test]
    fn removing_a_section_takes_its_symbols_and_renumbers_the_rest() {
        let input = build(
            &[
                section(".text", &[0xc3; 8], vec![(0, 7, 4)]),
                section(".data", &[1, 2, 3, 4], vec![]),
                section(".rdata", &[7; 4], vec![]),
            ],
            &[
                section_symbol(b".text", 1, None),
                section_symbol(b".data", 2, None),
                section_symbol(b".rdata", 3, None),
                symbol(b"in_data", 2, 2),
                symbol(b"in_rdata", 3, 2),
            ],
        );
        let output = run(&input, &[], &|name| name == b".data");
        let file = object::File::parse(&*output).unwrap();
        let names: Vec<_> = file
            .sections()
            .map(|s| s.name().unwrap().to_string())
            .collect();
        assert_eq!(names, [".text", ".rdata"]);
        let symbols: Vec<_> = file
            .symbols()
            .map(|s| {
                (
                    s.name().unwrap().to_string(),
                    s.index().0,
                    s.section_index(),
                )
            })
            .collect();
        let rdata = Some(object::SectionIndex(2));
        assert_eq!(
            symbols,
            [
                (".text".to_string(), 0, Some(object::SectionIndex(1))),
                (".rdata".to_string(), 2, rdata),
                ("in_rdata".to_string(), 4, rdata),
            ]
        );
        // The relocation of .text now names in_rdata by its new index, and the section
        // definition of .rdata its new number.
        let text = file.section_by_name(".text").unwrap();
        let (_, relocation) = text.relocations().next().unwrap();
        assert_eq!(
            relocation.target(),
            object::RelocationTarget::Symbol(object::SymbolIndex(4))
        );
        let table = header_of(&output, 0).pointer_to_raw_data.get(LE) as usize + 8 + 10 + 4;
        assert_eq!(&output[table + 3 * 18 + 12..][..2], &[2, 0]);
    }

    #[test]
    fn removing_a_section_takes_the_comdat_sections_associative_to_it() {
        let input = sample();
        let output = run(&input, &[], &|name| name == b".text");
        let file = object::File::parse(&*output).unwrap();
        let names: Vec<_> = file
            .sections()
            .map(|s| s.name().unwrap().to_string())
            .collect();
        assert_eq!(names, [".data", ".bss"]);
    }

    #[test]
    fn a_relocation_to_a_removed_symbol_is_an_error_at_the_relocation() {
        let input = sample();
        let e = rewrite(&input, &[], &|name| name == b".data", &|_, _| None).unwrap_err();
        // .text's data (8 bytes) is followed by its relocation.
        assert_eq!(e.offset, 20 + 4 * 40 + 8);
        let message = e.to_string();
        assert!(
            message.contains("'.data' cannot be removed")
                && message.contains("data_symbol_with_a_long_name"),
            "{message}"
        );
    }

    #[test]
    fn a_weak_external_whose_default_goes_is_an_error() {
        let mut weak = symbol(b"weak", 0, 0x69);
        let mut aux = [0u8; 18];
        aux[0] = 4;
        aux[4] = 3;
        weak.aux = vec![aux];
        let input = build(
            &[section(".text", &[0xc3; 4], vec![])],
            &[
                section_symbol(b".text", 1, None),
                weak,
                symbol(b"default", 1, 2),
            ],
        );
        let e = rewrite(&input, &[], &|name| name == b".text", &|_, _| None).unwrap_err();
        assert!(
            e.to_string().contains("default of weak external 'weak'"),
            "{e}"
        );
        // Kept, its default gets its new index.
        let output = run(&input, &[], &|_| false);
        assert_eq!(output, input);
    }

    #[test]
    fn file_names_get_as_many_records_as_they_need() {
        let mut file = symbol(b".file", 0xfffe, 0x67);
        let mut name = [0u8; 18];
        name[..6].copy_from_slice(b"name.c");
        file.aux = vec![name, [0; 18], [0; 18]];
        let input = build(
            &[section(".text", &[0xc3; 4], vec![])],
            &[file, section_symbol(b".text", 1, None)],
        );
        let output = run(&input, &[], &|_| false);
        let (header, _) = pod::from_bytes::<ImageFileHeader>(&output).unwrap();
        assert_eq!(header.number_of_symbols.get(LE), 4);
        let table = header.pointer_to_symbol_table.get(LE) as usize;
        assert_eq!(output[table + 17], 1);
        assert_eq!(&output[table + 18..][..6], b"name.c");
        assert_eq!(&output[table + 36..][..5], b".text");

        // A file symbol whose records hold no name is refused: llvm-objcopy writes a broken
        // symbol table for it.
        let mut empty = symbol(b".file", 0xfffe, 0x67);
        empty.aux = vec![[0; 18]];
        let input = build(&[], &[empty]);
        let e = rewrite(&input, &[], &|_| false, &|_, _| None).unwrap_err();
        assert!(e.to_string().contains("hold no name"), "{e}");
    }

    #[test]
    fn section_name_offsets_are_decimal_then_base_64() {
        let names = StringTable::build([&b"a_long_section_name"[..]], Flavor::Coff);
        assert_eq!(
            &section_name_field(b"a_long_section_name", &names),
            b"/4\0\0\0\0\0\0"
        );
        assert_eq!(&section_name_field(b".text", &names), b".text\0\0\0");
        // A string ending in 'x' comes before one ending in 'e'.
        let huge = vec![b'x'; 10_000_000];
        let names = StringTable::build([&huge[..], b"a_long_section_name"], Flavor::Coff);
        let field = section_name_field(b"a_long_section_name", &names);
        assert_eq!(&field[..2], b"//");
        assert_eq!(decode_base64_offset(&field[2..]), Some(10_000_005));
        assert_eq!(decode_decimal_offset(b"9999999"), Some(9_999_999));
        assert_eq!(decode_decimal_offset(b""), None);
        assert_eq!(decode_decimal_offset(b"4x"), None);
        assert_eq!(decode_decimal_offset(b"99999999999"), None);
        // LLVM's encoding of 10000000 is //AAmJaA.
        assert_eq!(decode_base64_offset(b"AAmJaA"), Some(10_000_000));
        assert_eq!(decode_base64_offset(b"AAmJa!"), None);
        assert_eq!(decode_base64_offset(b"AAAAAAA"), None);
        assert_eq!(decode_base64_offset(b"//////"), None);
    }

    #[test]
    fn relocation_counts_past_0xfffe_use_the_first_record() {
        let relocations: Vec<Relocation> = (0..0x1_0000)
            .map(|k| Relocation {
                raw: *pod::from_bytes::<ImageRelocation>(&[0; 10]).unwrap().0,
                target: k % 2,
                at: 0,
            })
            .collect();
        let records = relocation_records(&relocations, &[0, 7]);
        assert_eq!(records.len(), 10 * 0x1_0001);
        assert_eq!(&records[..10], &[1, 0, 1, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(&records[14..18], &[0, 0, 0, 0]);
        assert_eq!(&records[24..28], &[7, 0, 0, 0]);
    }

    #[test]
    fn relocations_without_data_are_an_error_and_code_without_data_is_int3() {
        let mut sections = vec![section(".text", &[], vec![(0, 0, 4)])];
        let symbols = [section_symbol(b".text", 1, None)];
        let e = rewrite(&build(&sections, &symbols), &[], &|_| false, &|_, _| None).unwrap_err();
        assert_eq!(e.offset, 20);
        assert!(e.to_string().contains("relocations but no data"), "{e}");

        sections[0].relocations.clear();
        sections[0].data = Err(6);
        let mut input = build(&sections, &symbols);
        input[20 + 36] = 0x20;
        let output = run(&input, &[], &|_| false);
        assert_eq!(header_of(&output, 0).pointer_to_raw_data.get(LE), 60);
        assert_eq!(&output[60..66], &[0xcc; 6]);
    }

    #[test]
    fn errors_are_typed_and_keep_their_wording() {
        let e = rewrite(b"MZ\x90\0", &[], &|_| false, &|_, _| None).unwrap_err();
        assert_eq!(e, Error::new(0, ErrorKind::PeImage));
        let mut sections = sample();
        sections[2] = 200;
        let e = rewrite(&sections, &[], &|_| false, &|_, _| None).unwrap_err();
        let file_size = sections.len();
        assert_eq!(
            e.kind,
            ErrorKind::SectionTablePastEnd {
                count: 200,
                file_size
            }
        );
        assert_eq!(
            e.to_string(),
            format!(
                "offset 0x14: the section table (200 headers) runs past the end of the file \
                 ({file_size:#x} bytes)"
            )
        );
        let e = replaced(&sample(), b".text", &[0xc3]).unwrap_err();
        assert_eq!(
            e.kind,
            ErrorKind::ReplacedButRelocated {
                section: Name::of(b".text")
            }
        );
    }

    #[test]
    fn images_big_objects_and_damaged_objects_are_errors() {
        let error = |bytes: &[u8]| match rewrite(bytes, &[], &|_| false, &|_, _| None) {
            Ok(_) => panic!("accepted {:?}", &bytes[..bytes.len().min(64)]),
            Err(e) => e,
        };
        assert!(error(b"MZ\x90\0").to_string().contains("PE image"));
        let mut big = vec![0, 0, 0xff, 0xff, 2, 0, 0x64, 0x86, 0, 0, 0, 0];
        big.extend_from_slice(&pe::ANON_OBJECT_HEADER_BIGOBJ_CLASS_ID.0);
        big.resize(56, 0);
        assert!(error(&big).to_string().contains("/bigobj"));
        assert!(error(&[0x64, 0x86, 1]).to_string().contains("20 bytes"));

        let input = sample();
        let mut optional = input.clone();
        optional[16] = 0xf0;
        assert_eq!(error(&optional).offset, 16);
        let mut sections = input.clone();
        sections[2] = 200;
        assert!(error(&sections).to_string().contains("section table"));
        let mut symbols = input.clone();
        symbols[12] = 0xff;
        assert!(error(&symbols).to_string().contains("symbol table"));
        let mut data = input.clone();
        data[20 + 40 + 23] = 0xff;
        assert!(error(&data).to_string().contains("runs past the end"));
        let mut relocations = input.clone();
        relocations[20 + 24 + 1] = 0xff;
        assert!(error(&relocations).to_string().contains("relocations"));
        let mut name = input.clone();
        let table = u32::from_le_bytes(name[8..12].try_into().unwrap()) as usize;
        name[table + 8 * 18 + 4] = 0x80;
        assert!(error(&name).to_string().contains("string table offset"));
        let mut target = input.clone();
        target[20 + 4 * 40 + 8 + 4] = 1;
        assert!(error(&target).to_string().contains("auxiliary record"));
        let mut number = input;
        number[table + 12] = 9;
        assert!(error(&number).to_string().contains("section number 9"));
    }

    fn replaced(input: &[u8], name: &[u8], new: &[u8]) -> Result<Vec<u8>> {
        let replace = |n: &[u8], _: &[u8]| (n == name).then(|| Cow::Owned(new.to_vec()));
        rewrite(input, &[], &|_| false, &replace).map(|r| r.to_vec())
    }

    #[test]
    fn replaced_contents_set_the_size_and_the_section_definition_length() {
        let input = sample();
        let offered = std::cell::RefCell::new(Vec::new());
        let replace = |name: &[u8], old: &[u8]| {
            offered.borrow_mut().push((name.to_vec(), old.len()));
            (name == b".data").then(|| Cow::Owned(vec![7, 8]))
        };
        let output = rewrite(&input, &[], &|_| false, &replace).unwrap().to_vec();
        // Uninitialised .bss is not offered.
        assert_eq!(
            offered.into_inner(),
            [
                (b".text".to_vec(), 8),
                (b".data".to_vec(), 4),
                (b".pdata".to_vec(), 12)
            ]
        );
        let data = header_of(&output, 1);
        assert_eq!(data.size_of_raw_data.get(LE), 2);
        assert_eq!(data.pointer_to_raw_data.get(LE), 20 + 4 * 40 + 8 + 10);
        // .pdata follows at once.
        assert_eq!(
            header_of(&output, 2).pointer_to_raw_data.get(LE),
            20 + 4 * 40 + 8 + 10 + 2
        );
        let file = object::File::parse(&*output).unwrap();
        assert_eq!(
            file.section_by_name(".data").unwrap().data().unwrap(),
            [7, 8]
        );
        // The section definition of .data (records 2 and 3) has the new length, its other
        // fields as they were.
        let (header, _) = pod::from_bytes::<ImageFileHeader>(&output).unwrap();
        let table = header.pointer_to_symbol_table.get(LE) as usize;
        let (definition, _) =
            pod::from_bytes::<ImageAuxSymbolSection>(&output[table + 3 * 18..]).unwrap();
        assert_eq!(definition.length.get(LE), 2);
        assert_eq!(definition.number.get(LE), 2);
        // The relocation of .text still names data_symbol_with_a_long_name, at the start of
        // .data.
        let text = file.section_by_name(".text").unwrap();
        let (_, relocation) = text.relocations().next().unwrap();
        assert_eq!(
            relocation.target(),
            object::RelocationTarget::Symbol(object::SymbolIndex(8))
        );
    }

    #[test]
    fn sections_with_relocations_and_comdats_are_not_replaced_and_others_grow() {
        let input = sample();
        let error = |input: &[u8], name: &[u8], new: &[u8]| {
            replaced(input, name, new).unwrap_err().to_string()
        };
        let e = error(&input, b".text", &[0xc3]);
        assert!(e.contains("section '.text' has relocations"), "{e}");
        // Larger contents are laid out like any other.
        let grown = replaced(&input, b".data", &[7; 5]).unwrap();
        let file = object::File::parse(&*grown).unwrap();
        assert_eq!(
            file.section_by_name(".data").unwrap().data().unwrap(),
            [7; 5]
        );

        let input = build(
            &[
                section(".text", &[0xc3; 4], vec![]),
                section(".xdata", &[1; 8], vec![]),
                section(".rdata", &[], vec![]),
            ],
            &[
                section_symbol(b".text", 1, None),
                section_symbol(b".xdata", 2, Some(1)),
                section_symbol(b".rdata", 3, None),
            ],
        );
        let e = error(&input, b".xdata", &[1; 4]);
        assert!(e.contains("'.xdata' is a COMDAT section"), "{e}");
        let e = error(&input, b".rdata", &[]);
        assert!(e.contains("no contents"), "{e}");
        // The COMDAT flag alone is enough.
        let mut flagged = input.clone();
        flagged[20 + 36 + 1] |= 0x10;
        let e = error(&flagged, b".text", &[]);
        assert!(e.contains("'.text' is a COMDAT section"), "{e}");
        assert!(replaced(&input, b".text", &[]).is_ok());
    }

    #[test]
    fn a_symbol_past_the_new_end_is_an_error() {
        let mut input = sample();
        let table = u32::from_le_bytes(input[8..12].try_into().unwrap()) as usize;
        // data_symbol_with_a_long_name (record 8) at offset 3 of .data.
        input[table + 8 * 18 + 8] = 3;
        let e = replaced(&input, b".data", &[0; 2]).unwrap_err();
        assert_eq!(e.offset, (table + 8 * 18) as u64);
        assert!(
            e.to_string().contains(
                "symbol 'data_symbol_with_a_long_name' points into bytes the rewrite removes"
            ),
            "{e}"
        );
        // Just at the end is fine.
        assert!(replaced(&input, b".data", &[0; 3]).is_ok());
    }
}
