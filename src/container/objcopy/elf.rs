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

use std::borrow::Cow;

use super::{bad, AddedSection, Replace, Rewritten};
use crate::format::strtab::{Flavor, StringTable};
use crate::format::Error;

const SHT_SYMTAB: u32 = 2;
const SHT_STRTAB: u32 = 3;
const SHT_RELA: u32 = 4;
const SHT_NOBITS: u32 = 8;
const SHT_REL: u32 = 9;
const SHT_GROUP: u32 = 17;
const SHT_SYMTAB_SHNDX: u32 = 18;
const SHT_PROGBITS: u32 = 1;
const SHT_LLVM_OFFLOADING: u32 = 0x6fff_4c0b;
const SHF_ALLOC: u64 = 2;
const SHF_EXCLUDE: u64 = 0x8000_0000;
const SHN_LORESERVE: u32 = 0xff00;
const SHN_XINDEX: u32 = 0xffff;
const STB_LOCAL: u8 = 0;

/// Byte order and class of the file, and how to read and write its fields.
#[derive(Clone, Copy)]
struct Layout {
    is64: bool,
    little: bool,
}

impl Layout {
    fn ehdr_size(self) -> u64 {
        if self.is64 {
            64
        } else {
            52
        }
    }
    fn shdr_size(self) -> u64 {
        if self.is64 {
            64
        } else {
            40
        }
    }
    fn sym_size(self) -> u64 {
        if self.is64 {
            24
        } else {
            16
        }
    }
    fn word_align(self) -> u64 {
        if self.is64 {
            8
        } else {
            4
        }
    }
    fn rel_size(self, rela: bool) -> u64 {
        match (self.is64, rela) {
            (true, true) => 24,
            (true, false) => 16,
            (false, true) => 12,
            (false, false) => 8,
        }
    }

    fn u16(self, b: &[u8], at: usize) -> u16 {
        let v = [b[at], b[at + 1]];
        if self.little {
            u16::from_le_bytes(v)
        } else {
            u16::from_be_bytes(v)
        }
    }
    fn u32(self, b: &[u8], at: usize) -> u32 {
        let v = b[at..at + 4].try_into().expect("four bytes");
        if self.little {
            u32::from_le_bytes(v)
        } else {
            u32::from_be_bytes(v)
        }
    }
    fn u64(self, b: &[u8], at: usize) -> u64 {
        let v = b[at..at + 8].try_into().expect("eight bytes");
        if self.little {
            u64::from_le_bytes(v)
        } else {
            u64::from_be_bytes(v)
        }
    }
    /// An address-sized field.
    fn word(self, b: &[u8], at: usize) -> u64 {
        if self.is64 {
            self.u64(b, at)
        } else {
            u64::from(self.u32(b, at))
        }
    }

    fn put16(self, out: &mut Vec<u8>, v: u16) {
        out.extend_from_slice(&if self.little {
            v.to_le_bytes()
        } else {
            v.to_be_bytes()
        });
    }
    fn put32(self, out: &mut Vec<u8>, v: u32) {
        out.extend_from_slice(&if self.little {
            v.to_le_bytes()
        } else {
            v.to_be_bytes()
        });
    }
    fn put64(self, out: &mut Vec<u8>, v: u64) {
        out.extend_from_slice(&if self.little {
            v.to_le_bytes()
        } else {
            v.to_be_bytes()
        });
    }
    fn put_word(self, out: &mut Vec<u8>, v: u64) {
        if self.is64 {
            self.put64(out, v)
        } else {
            self.put32(out, v as u32)
        }
    }
}

/// A section header as read, with its name resolved.
#[derive(Clone)]
struct Header<'a> {
    name: &'a [u8],
    sh_type: u32,
    flags: u64,
    addr: u64,
    offset: u64,
    size: u64,
    link: u32,
    info: u32,
    align: u64,
    entsize: u64,
}

/// A section of the output.
struct Section<'a> {
    header: Header<'a>,
    /// Index in the input; `None` for added sections.
    old_index: Option<usize>,
    /// Contents, for sections whose bytes are kept.
    data: &'a [u8],
}

/// One symbol as read; only the fields the writer changes are decoded.
struct Symbol<'a> {
    name: &'a [u8],
    /// The raw entry.
    raw: &'a [u8],
    shndx: u32,
    binding: u8,
}

fn read_header(
    l: Layout,
    file: &[u8],
    at: usize,
) -> (u32, u32, u64, u64, u64, u64, u32, u32, u64, u64) {
    let b = &file[at..];
    if l.is64 {
        (
            l.u32(b, 0),
            l.u32(b, 4),
            l.u64(b, 8),
            l.u64(b, 16),
            l.u64(b, 24),
            l.u64(b, 32),
            l.u32(b, 40),
            l.u32(b, 44),
            l.u64(b, 48),
            l.u64(b, 56),
        )
    } else {
        (
            l.u32(b, 0),
            l.u32(b, 4),
            u64::from(l.u32(b, 8)),
            u64::from(l.u32(b, 12)),
            u64::from(l.u32(b, 16)),
            u64::from(l.u32(b, 20)),
            l.u32(b, 24),
            l.u32(b, 28),
            u64::from(l.u32(b, 32)),
            u64::from(l.u32(b, 36)),
        )
    }
}

/// The string at `offset` of the table `table` (NUL-terminated).
fn string_at<'a>(table: &'a [u8], offset: u32, what: &str, at: u64) -> Result<&'a [u8], Error> {
    let start = offset as usize;
    let rest = table.get(start..).ok_or_else(|| {
        bad(
            at,
            format!("{what}: name offset {offset} is past the end of its string table"),
        )
    })?;
    let end = memchr::memchr(0, rest).ok_or_else(|| {
        bad(
            at,
            format!("{what}: name at offset {offset} is not terminated"),
        )
    })?;
    Ok(&rest[..end])
}

fn align_to(value: u64, align: u64) -> u64 {
    let align = align.max(1);
    value.div_ceil(align) * align
}

fn display(name: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(name)
}

/// Removes the sections `remove` selects and appends `added`.
pub(super) fn rewrite<'a>(
    file: &'a [u8],
    added: &[AddedSection<'a>],
    remove: &dyn Fn(&[u8]) -> bool,
    replace: &Replace<'_>,
) -> Result<Rewritten<'a>, Error> {
    if file.len() < 16 {
        return Err(bad(0, "truncated ELF identification"));
    }
    let l = Layout {
        is64: match file[4] {
            1 => false,
            2 => true,
            c => return Err(bad(4, format!("unknown ELF class {c}"))),
        },
        little: match file[5] {
            1 => true,
            2 => false,
            d => return Err(bad(5, format!("unknown ELF data encoding {d}"))),
        },
    };
    let ehdr_size = l.ehdr_size() as usize;
    if file.len() < ehdr_size {
        return Err(bad(0, "truncated ELF header"));
    }
    let (e_type, e_machine, e_version) = (l.u16(file, 16), l.u16(file, 18), l.u32(file, 20));
    let (entry_at, flags_at) = if l.is64 { (24, 48) } else { (24, 36) };
    let e_entry = l.word(file, entry_at);
    let e_phoff = l.word(file, entry_at + l.word_align() as usize);
    let e_shoff = l.word(file, entry_at + 2 * l.word_align() as usize);
    let e_flags = l.u32(file, flags_at);
    let e_phnum = l.u16(file, flags_at + 8);
    let e_shentsize = l.u16(file, flags_at + 10);
    let e_shnum = l.u16(file, flags_at + 12);
    let e_shstrndx = u32::from(l.u16(file, flags_at + 14));
    if e_type != 1 {
        return Err(bad(
            16,
            format!("only relocatable ELF objects can be rewritten, this one has type {e_type}"),
        ));
    }
    if e_phnum != 0 || e_phoff != 0 {
        return Err(bad(
            entry_at as u64 + l.word_align(),
            "a relocatable ELF object with program headers is not supported",
        ));
    }
    if e_shoff == 0 || e_shnum == 0 {
        return Err(bad(
            entry_at as u64 + 2 * l.word_align(),
            "the ELF object has no section header table (or more than 65279 sections, which is not supported)",
        ));
    }
    if u64::from(e_shentsize) != l.shdr_size() {
        return Err(bad(
            flags_at as u64 + 10,
            format!("section header size {e_shentsize} is not {}", l.shdr_size()),
        ));
    }
    let count = usize::from(e_shnum);
    let table_end = e_shoff
        .checked_add(count as u64 * l.shdr_size())
        .filter(|&end| end <= file.len() as u64)
        .ok_or_else(|| {
            bad(
                e_shoff,
                format!("the section header table ({count} headers) runs past the end of the file"),
            )
        })?;
    let _ = table_end;
    if e_shstrndx == SHN_XINDEX || e_shstrndx as usize >= count || e_shstrndx == 0 {
        return Err(bad(
            flags_at as u64 + 14,
            format!("section name table index {e_shstrndx} is not a section of the file"),
        ));
    }

    // Read every header and the bytes it covers.
    let header_at = |i: usize| e_shoff as usize + i * l.shdr_size() as usize;
    let mut raw = Vec::with_capacity(count);
    for i in 0..count {
        let h = read_header(l, file, header_at(i));
        let (_, sh_type, _, _, offset, size, ..) = h;
        let data: &[u8] = if sh_type == SHT_NOBITS || i == 0 {
            &[]
        } else {
            offset
                .checked_add(size)
                .filter(|&end| end <= file.len() as u64)
                .map(|end| &file[offset as usize..end as usize])
                .ok_or_else(|| {
                    bad(
                        header_at(i) as u64,
                        format!(
                            "section {i}: its contents (offset {offset:#x}, size {size:#x}) run past the end of the file"
                        ),
                    )
                })?
        };
        raw.push((h, data));
    }
    let ((_, names_type, names_flags, ..), shstrtab) = raw[e_shstrndx as usize];
    if names_type != SHT_STRTAB || names_flags & SHF_ALLOC != 0 {
        return Err(bad(
            header_at(e_shstrndx as usize) as u64,
            format!("section {e_shstrndx}, named as the section name table, is not a non-allocated string table"),
        ));
    }
    let mut sections: Vec<Section<'a>> = Vec::with_capacity(count + added.len());
    for (i, (h, data)) in raw.iter().enumerate().skip(1) {
        let (name, sh_type, flags, addr, offset, size, link, info, align, entsize) = *h;
        let at = header_at(i) as u64;
        let name = string_at(shstrtab, name, &format!("section {i}"), at)?;
        if link as usize >= count {
            return Err(bad(
                at,
                format!("section '{}': link {link} is not a section", display(name)),
            ));
        }
        let relocates = (sh_type == SHT_REL || sh_type == SHT_RELA) && flags & SHF_ALLOC == 0;
        if relocates && info as usize >= count {
            return Err(bad(
                at,
                format!("section '{}': info {info} is not a section", display(name)),
            ));
        }
        if align > 1 << 30 || (align != 0 && !align.is_power_of_two()) {
            return Err(bad(
                at,
                format!(
                    "section '{}': alignment {align:#x} is not a power of two up to 1 GiB",
                    display(name)
                ),
            ));
        }
        if sh_type == SHT_SYMTAB_SHNDX {
            return Err(bad(
                at,
                "extended section indexes (SHT_SYMTAB_SHNDX) are not supported",
            ));
        }
        sections.push(Section {
            header: Header {
                name,
                sh_type,
                flags,
                addr,
                offset,
                size,
                link,
                info,
                align,
                entsize,
            },
            old_index: Some(i),
            data,
        });
    }

    // The symbol table, if any (a relocatable object has at most one).
    let symtab_index = sections
        .iter()
        .find(|s| s.header.sh_type == SHT_SYMTAB)
        .and_then(|s| s.old_index);
    let mut symbols = Vec::new();
    let mut symbol_names_index = None;
    if let Some(index) = symtab_index {
        let s = &sections[index - 1];
        let at = header_at(index) as u64;
        let entry = l.sym_size() as usize;
        if s.header.entsize != entry as u64 || s.data.len() % entry != 0 {
            return Err(bad(
                at,
                format!(
                    "symbol table: entry size {} and size {} do not fit entries of {entry} bytes",
                    s.header.entsize,
                    s.data.len()
                ),
            ));
        }
        let link = s.header.link as usize;
        let names = raw
            .get(link)
            .filter(|(h, _)| h.1 == SHT_STRTAB)
            .map(|(_, d)| *d)
            .ok_or_else(|| bad(at, "symbol table: its link is not a string table"))?;
        symbol_names_index = Some(link);
        for (k, raw_sym) in s.data.chunks_exact(entry).enumerate() {
            let sym_at = s.header.offset + (k * entry) as u64;
            let (name, info, shndx) = if l.is64 {
                (l.u32(raw_sym, 0), raw_sym[4], u32::from(l.u16(raw_sym, 6)))
            } else {
                (
                    l.u32(raw_sym, 0),
                    raw_sym[12],
                    u32::from(l.u16(raw_sym, 14)),
                )
            };
            let name = string_at(names, name, &format!("symbol {k}"), sym_at)?;
            if shndx == SHN_XINDEX {
                return Err(bad(
                    sym_at,
                    "extended section indexes (SHN_XINDEX) are not supported",
                ));
            }
            if shndx != 0 && shndx < SHN_LORESERVE && shndx as usize >= count {
                return Err(bad(
                    sym_at,
                    format!(
                        "symbol '{}': section index {shndx} is not a section",
                        display(name)
                    ),
                ));
            }
            symbols.push(Symbol {
                name,
                raw: raw_sym,
                shndx,
                binding: info >> 4,
            });
        }
    }

    // What goes: the sections asked for, the relocation sections that apply to them, and
    // groups left without members.
    let removed_directly: Vec<bool> = std::iter::once(false)
        .chain(sections.iter().map(|s| remove(s.header.name)))
        .collect();
    let is_reloc =
        |h: &Header| (h.sh_type == SHT_REL || h.sh_type == SHT_RELA) && h.flags & SHF_ALLOC == 0;
    let mut gone = removed_directly.clone();
    for s in &sections {
        let i = s.old_index.expect("input section");
        if removed_directly[i] {
            continue;
        }
        if is_reloc(&s.header) && s.header.info != 0 {
            gone[i] = removed_directly
                .get(s.header.info as usize)
                .copied()
                .unwrap_or(false);
        }
        if s.header.sh_type == SHT_GROUP {
            let members = group_members(l, s.data, s.header.name, header_at(i) as u64, count)?;
            gone[i] = members.iter().all(|&m| removed_directly[m as usize]);
        }
    }
    if Some(e_shstrndx as usize).is_some_and(|i| gone[i]) {
        return Err(bad(0, "the section name table cannot be removed"));
    }
    for s in &sections {
        let i = s.old_index.expect("input section");
        if gone[i] {
            continue;
        }
        if s.header.link != 0 && gone[s.header.link as usize] {
            return Err(bad(
                header_at(i) as u64,
                format!(
                    "section '{}' cannot be removed because it is referenced by the section '{}'",
                    display(sections[s.header.link as usize - 1].header.name),
                    display(s.header.name)
                ),
            ));
        }
    }
    if let Some(symbol) = symbols
        .iter()
        .find(|sym| sym.shndx != 0 && sym.shndx < SHN_LORESERVE && gone[sym.shndx as usize])
    {
        return Err(bad(
            0,
            format!(
                "section '{}' cannot be removed: symbol '{}' is defined in it",
                display(sections[symbol.shndx as usize - 1].header.name),
                display(symbol.name)
            ),
        ));
    }

    // New indexes.
    let mut new_index = vec![0u32; count];
    let mut kept: Vec<Section<'a>> = Vec::with_capacity(sections.len() + added.len());
    for s in sections {
        let i = s.old_index.expect("input section");
        if !gone[i] {
            new_index[i] = kept.len() as u32 + 1;
            kept.push(s);
        }
    }
    for a in added {
        kept.push(Section {
            header: Header {
                name: a.name.as_bytes(),
                sh_type: SHT_PROGBITS,
                flags: SHF_EXCLUDE,
                addr: 0,
                offset: u64::MAX,
                size: a.data.len() as u64,
                link: 0,
                info: 0,
                align: 1,
                entsize: 0,
            },
            old_index: None,
            data: a.data,
        });
    }
    let total = kept.len() + 1;
    if total as u32 >= SHN_LORESERVE {
        return Err(bad(
            0,
            format!("{total} sections are more than this writer supports (65279)"),
        ));
    }

    // String tables: section names go to the name table, symbol names to the symbol table's.
    let section_names: Vec<&[u8]> = kept.iter().map(|s| s.header.name).collect();
    let build_table = |old: usize| -> StringTable {
        let mut strings: Vec<&[u8]> = Vec::new();
        if old == e_shstrndx as usize {
            strings.extend(section_names.iter().copied());
        }
        if Some(old) == symbol_names_index {
            strings.extend(symbols.iter().map(|s| s.name));
        }
        StringTable::build(strings, Flavor::Elf)
    };
    let mut tables: Vec<(usize, StringTable)> = Vec::new();
    for s in &kept {
        if let Some(old) = s.old_index {
            if s.header.sh_type == SHT_STRTAB && s.header.flags & SHF_ALLOC == 0 {
                tables.push((old, build_table(old)));
            }
        }
    }
    let table_of = |old: usize| tables.iter().find(|(i, _)| *i == old).map(|(_, t)| t);
    let names = table_of(e_shstrndx as usize).expect("the name table is kept");

    // New contents asked for: only for sections of plain data that nothing relocates.
    let mut replaced: Vec<Option<Vec<u8>>> = Vec::with_capacity(kept.len());
    for s in &kept {
        let plain = s.old_index.is_some()
            && (s.header.sh_type == SHT_PROGBITS || s.header.sh_type == SHT_LLVM_OFFLOADING);
        let new = if plain {
            replace(s.header.name, s.data)
        } else {
            None
        };
        if new.is_some() {
            let old = s.old_index.expect("input section");
            if kept
                .iter()
                .any(|r| is_reloc(&r.header) && r.header.info as usize == old)
            {
                return Err(bad(
                    header_at(old) as u64,
                    format!(
                        "section '{}' has relocations, so its contents cannot be replaced",
                        display(s.header.name)
                    ),
                ));
            }
        }
        replaced.push(new);
    }
    // Old and new sizes of replaced sections, by old index, for the symbols defined in them.
    let mut resized: Vec<Option<(u64, u64)>> = vec![None; count];
    for (s, new) in kept.iter().zip(&replaced) {
        if let (Some(old), Some(new)) = (s.old_index, new) {
            resized[old] = Some((s.data.len() as u64, new.len() as u64));
        }
    }

    // Contents that change.
    let mut contents: Vec<Cow<'a, [u8]>> = Vec::with_capacity(kept.len());
    for (s, new) in kept.iter_mut().zip(replaced) {
        let h = &mut s.header;
        let old = s.old_index;
        let data: Cow<'a, [u8]> = match old {
            Some(_) if new.is_some() => Cow::Owned(new.expect("checked")),
            Some(old) if h.sh_type == SHT_STRTAB && h.flags & SHF_ALLOC == 0 => {
                Cow::Owned(table_of(old).expect("built above").bytes.clone())
            }
            Some(_) if h.sh_type == SHT_SYMTAB => {
                let table = table_of(h.link as usize)
                    .ok_or_else(|| bad(h.offset, "symbol table: its string table is allocated"))?;
                let mut out = Vec::with_capacity(symbols.len() * l.sym_size() as usize);
                let mut last_local = 0;
                for (k, sym) in symbols.iter().enumerate() {
                    let start = out.len();
                    l.put32(&mut out, table.offset(sym.name));
                    let shndx_at = if l.is64 { 6 } else { 14 };
                    out.extend_from_slice(&sym.raw[4..shndx_at]);
                    let shndx = if sym.shndx != 0 && sym.shndx < SHN_LORESERVE {
                        new_index[sym.shndx as usize]
                    } else {
                        sym.shndx
                    };
                    l.put16(&mut out, shndx as u16);
                    out.extend_from_slice(&sym.raw[shndx_at + 2..]);
                    let in_replaced = (sym.shndx != 0 && sym.shndx < SHN_LORESERVE)
                        .then(|| resized[sym.shndx as usize])
                        .flatten();
                    if let Some((old_size, new_size)) = in_replaced {
                        let (value_at, size_at) = if l.is64 { (8, 16) } else { (4, 8) };
                        let value = l.word(sym.raw, value_at);
                        let size = l.word(sym.raw, size_at);
                        let size = if value == 0 && size == old_size {
                            // A symbol for the whole section follows its new size.
                            new_size
                        } else if value.saturating_add(size) <= new_size {
                            size
                        } else {
                            return Err(bad(
                                h.offset + (k as u64) * l.sym_size(),
                                format!(
                                    "symbol '{}' points into bytes the rewrite removes",
                                    display(sym.name)
                                ),
                            ));
                        };
                        let mut field = Vec::new();
                        l.put_word(&mut field, size);
                        let at = start + size_at;
                        out[at..at + field.len()].copy_from_slice(&field);
                    }
                    if sym.binding == STB_LOCAL {
                        last_local = k;
                    }
                }
                h.info = last_local as u32 + 1;
                h.entsize = l.sym_size();
                h.align = l.word_align();
                Cow::Owned(out)
            }
            Some(old) if is_reloc(h) => {
                let rela = h.sh_type == SHT_RELA;
                let entry = l.rel_size(rela);
                if h.entsize != entry || s.data.len() as u64 % entry != 0 {
                    return Err(bad(
                        header_at(old) as u64,
                        format!(
                            "section '{}': entry size {} and size {} do not fit relocations of {entry} bytes",
                            display(h.name),
                            h.entsize,
                            s.data.len()
                        ),
                    ));
                }
                if h.link as usize == symtab_index.unwrap_or(usize::MAX) {
                    for (k, r) in s.data.chunks_exact(entry as usize).enumerate() {
                        let info = l.word(r, l.word_align() as usize);
                        let sym = if l.is64 { info >> 32 } else { info >> 8 };
                        if sym as usize >= symbols.len() {
                            return Err(bad(
                                h.offset + k as u64 * entry,
                                format!(
                                    "section '{}': relocation {k} refers to symbol {sym}, but the symbol table has {} entries",
                                    display(h.name),
                                    symbols.len()
                                ),
                            ));
                        }
                    }
                }
                if h.info != 0 {
                    h.info = new_index[h.info as usize];
                }
                h.align = l.word_align();
                Cow::Borrowed(s.data)
            }
            Some(old) if h.sh_type == SHT_GROUP => {
                let members = group_members(l, s.data, h.name, header_at(old) as u64, count)?;
                let mut out = Vec::with_capacity(4 * (members.len() + 1));
                l.put32(&mut out, l.u32(s.data, 0));
                for m in members {
                    if !gone[m as usize] {
                        l.put32(&mut out, new_index[m as usize]);
                    }
                }
                Cow::Owned(out)
            }
            _ => Cow::Borrowed(s.data),
        };
        if h.sh_type != SHT_NOBITS {
            h.size = data.len() as u64;
        }
        if h.link != 0 && old.is_some() {
            h.link = new_index[h.link as usize];
        }
        contents.push(data);
    }

    // Layout.
    let mut order: Vec<usize> = (0..kept.len()).collect();
    order.sort_by_key(|&k| kept[k].header.offset);
    let mut cursor = l.ehdr_size();
    let mut offsets = vec![0u64; kept.len()];
    for &k in &order {
        let h = &kept[k].header;
        cursor = align_to(cursor, h.align);
        offsets[k] = cursor;
        if h.sh_type != SHT_NOBITS {
            cursor += h.size;
        }
    }
    let shoff = align_to(cursor, l.word_align());
    let size = shoff + total as u64 * l.shdr_size();

    let mut out = Rewritten::default();
    let mut ehdr = Vec::with_capacity(ehdr_size);
    ehdr.extend_from_slice(&[
        0x7f, b'E', b'L', b'F', file[4], file[5], 1, file[7], file[8],
    ]);
    ehdr.resize(16, 0);
    l.put16(&mut ehdr, 1);
    l.put16(&mut ehdr, e_machine);
    l.put32(&mut ehdr, e_version);
    l.put_word(&mut ehdr, e_entry);
    l.put_word(&mut ehdr, 0);
    l.put_word(&mut ehdr, shoff);
    l.put32(&mut ehdr, e_flags);
    l.put16(&mut ehdr, ehdr_size as u16);
    l.put16(&mut ehdr, 0);
    l.put16(&mut ehdr, 0);
    l.put16(&mut ehdr, l.shdr_size() as u16);
    l.put16(&mut ehdr, total as u16);
    l.put16(&mut ehdr, new_index[e_shstrndx as usize] as u16);
    out.push(0, ehdr);

    let mut headers = vec![0u8; l.shdr_size() as usize];
    for (k, (s, data)) in kept.iter().zip(contents).enumerate() {
        let h = &s.header;
        let name = names.offset(h.name);
        l.put32(&mut headers, name);
        l.put32(&mut headers, h.sh_type);
        l.put_word(&mut headers, h.flags);
        l.put_word(&mut headers, h.addr);
        l.put_word(&mut headers, offsets[k]);
        l.put_word(&mut headers, h.size);
        l.put32(&mut headers, h.link);
        l.put32(&mut headers, h.info);
        l.put_word(&mut headers, h.align);
        l.put_word(&mut headers, h.entsize);
        if h.sh_type != SHT_NOBITS {
            out.push(offsets[k], data);
        }
    }
    out.push(shoff, headers);
    Ok(out.finish(size))
}

/// The member section indexes of a group section, checked.
fn group_members(
    l: Layout,
    data: &[u8],
    name: &[u8],
    at: u64,
    count: usize,
) -> Result<Vec<u32>, Error> {
    if data.len() < 4 || data.len() % 4 != 0 {
        return Err(bad(
            at,
            format!(
                "group section '{}' has size {}, not a multiple of 4",
                display(name),
                data.len()
            ),
        ));
    }
    data[4..]
        .chunks_exact(4)
        .map(|w| {
            let m = l.u32(w, 0);
            if m == 0 || m as usize >= count {
                Err(bad(
                    at,
                    format!(
                        "group section '{}' names section {m}, which does not exist",
                        display(name)
                    ),
                ))
            } else {
                Ok(m)
            }
        })
        .collect()
}
