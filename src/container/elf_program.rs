//! Rewriting the `.hip_fatbin` of a linked ELF program or shared library so that the file
//! gets smaller: the bundles are rewritten and packed at the start of the section, the HIP
//! wrappers (`.hipFatBinSegment`) and the dynamic relocations that point at them are moved
//! along, and everything after the section in the file moves back by a multiple of the
//! segments' alignment, so that every virtual address stays and every segment's offset stays
//! congruent to its address.
//!
//! When sections follow `.hip_fatbin` in its segment, the segment is split in two: the first
//! part ends after the packed bundles, the second (a new `PT_LOAD`) maps the sections that
//! followed at their old addresses from their new offsets. The program header table, one
//! entry longer, is then written after the packed bundles, inside the first part, where the
//! loader finds it.
//!
//! Only 64-bit little-endian files (x86-64, AArch64) are rewritten. Anything that cannot be
//! kept valid is refused: a relocation into the bytes that go, a wrapper that points at no
//! bundle, too little room.

use std::collections::BTreeMap;

use rayon::prelude::*;

use super::objcopy::{Piece, Rewritten};
use crate::format::{Error, ErrorKind};

const PT_LOAD: u32 = 1;
const PT_PHDR: u32 = 6;
const SHT_RELA: u32 = 4;
const SHT_DYNSYM: u32 = 11;
const SHF_ALLOC: u64 = 2;
const EHDR: usize = 64;
const PHDR: usize = 56;
const SHDR: usize = 64;
const HIP_WRAPPER_MAGIC: u32 = 0x4849_5046;

fn bad(offset: u64, message: impl Into<String>) -> Error {
    Error::new(offset, ErrorKind::Object(message.into()))
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

#[derive(Debug, Clone, Copy)]
struct Phdr {
    p_type: u32,
    flags: u32,
    offset: u64,
    vaddr: u64,
    paddr: u64,
    filesz: u64,
    memsz: u64,
    align: u64,
}

impl Phdr {
    fn read(b: &[u8]) -> Phdr {
        Phdr {
            p_type: u32_at(b, 0),
            flags: u32_at(b, 4),
            offset: u64_at(b, 8),
            vaddr: u64_at(b, 16),
            paddr: u64_at(b, 24),
            filesz: u64_at(b, 32),
            memsz: u64_at(b, 40),
            align: u64_at(b, 48),
        }
    }
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.p_type.to_le_bytes());
        out.extend_from_slice(&self.flags.to_le_bytes());
        for v in [
            self.offset,
            self.vaddr,
            self.paddr,
            self.filesz,
            self.memsz,
            self.align,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

#[derive(Debug, Clone)]
struct Shdr {
    name: String,
    sh_type: u32,
    flags: u64,
    addr: u64,
    offset: u64,
    size: u64,
    entsize: u64,
}

/// Rewrites the container at the start of the bytes it is given (found at the given offset in
/// the section): its new bytes, `None` to keep it. Called from several threads at once.
pub type RewriteContainer<'r> = dyn Fn(&[u8], usize) -> Result<Option<Vec<u8>>, Error> + Sync + 'r;

/// The size of the container at the start of the bytes it is given, read from its header.
pub type ContainerSize<'r> = dyn Fn(&[u8]) -> Result<usize, Error> + 'r;

/// The bytes of a section, when they lie in the file.
fn section_bytes<'a>(file: &'a [u8], s: &Shdr) -> Option<&'a [u8]> {
    let end = s.offset.checked_add(s.size)?;
    file.get(usize::try_from(s.offset).ok()?..usize::try_from(end).ok()?)
}

/// One place that holds the address of a bundle: a wrapper's pointer field (its file offset,
/// when the value is written there) and the dynamic relocation that sets it (the file offset
/// of its addend).
#[derive(Debug, Clone, Copy)]
struct Pointer {
    value_at: Option<usize>,
    addend_at: Option<usize>,
    target: u64,
}

/// Rewrites the `.hip_fatbin` of the program or library `file`. The containers in the section
/// are found with `size_of`; `rewrite` is called for each, in parallel, with its bytes and its
/// offset in the section. Returns `None` when nothing changes.
pub fn rewrite_hip_fatbin<'a>(
    file: &'a [u8],
    size_of: &ContainerSize<'_>,
    rewrite: &RewriteContainer<'_>,
) -> Result<Option<Rewritten<'a>>, Error> {
    if file.len() < EHDR || &file[..4] != b"\x7fELF" {
        return Err(bad(0, "not an ELF file"));
    }
    if file[4] != 2 || file[5] != 1 {
        return Err(bad(
            4,
            "only 64-bit little-endian programs can be rewritten",
        ));
    }
    let machine = u16_at(file, 18);
    let relative = match machine {
        62 => 8u32,     // R_X86_64_RELATIVE
        183 => 1027u32, // R_AARCH64_RELATIVE
        m => return Err(bad(18, format!("machine {m} is not x86-64 or AArch64"))),
    };
    let phoff = u64_at(file, 32) as usize;
    let shoff = u64_at(file, 40) as usize;
    let phnum = u16_at(file, 56) as usize;
    let shnum = u16_at(file, 60) as usize;
    let shstrndx = u16_at(file, 62) as usize;
    if u16_at(file, 54) as usize != PHDR || u16_at(file, 58) as usize != SHDR {
        return Err(bad(54, "unexpected program or section header size"));
    }
    let phdrs_end = phoff.checked_add(phnum * PHDR).filter(|&e| e <= file.len());
    let shdrs_end = shoff.checked_add(shnum * SHDR).filter(|&e| e <= file.len());
    if phdrs_end.is_none() || shdrs_end.is_none() || shstrndx >= shnum {
        return Err(bad(32, "program or section headers lie outside the file"));
    }
    let phdrs: Vec<Phdr> = (0..phnum)
        .map(|i| Phdr::read(&file[phoff + i * PHDR..]))
        .collect();
    let raw_sh = |i: usize| &file[shoff + i * SHDR..shoff + (i + 1) * SHDR];
    let names_sh = raw_sh(shstrndx);
    let (names_off, names_size) = (u64_at(names_sh, 24) as usize, u64_at(names_sh, 32) as usize);
    let names = file
        .get(names_off..names_off.saturating_add(names_size))
        .ok_or_else(|| bad(shoff as u64, "the section name table lies outside the file"))?;
    let mut shdrs = Vec::with_capacity(shnum);
    for i in 0..shnum {
        let b = raw_sh(i);
        let name_at = u32_at(b, 0) as usize;
        let name = names
            .get(name_at..)
            .and_then(|r| r.split(|&c| c == 0).next())
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .unwrap_or_default();
        shdrs.push(Shdr {
            name,
            sh_type: u32_at(b, 4),
            flags: u64_at(b, 8),
            addr: u64_at(b, 16),
            offset: u64_at(b, 24),
            size: u64_at(b, 32),
            entsize: u64_at(b, 56),
        });
    }
    let Some(fatbin_index) = shdrs.iter().position(|s| s.name == ".hip_fatbin") else {
        return Ok(None);
    };
    let fatbin = shdrs[fatbin_index].clone();
    let (f_off, f_va, f_size) = (fatbin.offset as usize, fatbin.addr, fatbin.size as usize);
    let section = f_off
        .checked_add(f_size)
        .and_then(|end| file.get(f_off..end))
        .ok_or_else(|| bad(fatbin.offset, ".hip_fatbin lies outside the file"))?;

    // The containers, found by their sizes alone; then rewritten in parallel; then packed in
    // order, each on a boundary as large as before.
    let mut found: Vec<(usize, usize)> = Vec::new();
    let mut pos = 0usize;
    while pos < section.len() {
        let Some(skip) = section[pos..].iter().position(|&b| b != 0) else {
            break;
        };
        let start = pos + skip;
        let size = size_of(&section[start..]).map_err(|e| e.rebased((f_off + start) as u64))?;
        found.push((start, size));
        pos = start + size.max(1);
    }
    let rewritten: Vec<Option<Vec<u8>>> = found
        .par_iter()
        .map(|&(start, _)| {
            rewrite(&section[start..], start).map_err(|e| e.rebased((f_off + start) as u64))
        })
        .collect::<Result<_, Error>>()?;
    let mut moves: BTreeMap<u64, u64> = BTreeMap::new();
    let mut packed: Vec<u8> = Vec::with_capacity(section.len());
    let mut changed = false;
    for (&(start, size), new) in found.iter().zip(rewritten) {
        let boundary = 1usize << start.trailing_zeros().min(12);
        packed.resize(packed.len().next_multiple_of(boundary), 0);
        moves.insert(f_va + start as u64, f_va + packed.len() as u64);
        changed |= new.is_some() || packed.len() != start;
        match new {
            Some(bytes) => packed.extend_from_slice(&bytes),
            None => packed.extend_from_slice(&section[start..start + size]),
        }
    }
    if !changed {
        return Ok(None);
    }
    if packed.len() > f_size {
        return Err(too_large(fatbin.offset, packed.len(), f_size));
    }

    // Every place that holds an address inside .hip_fatbin must hold a bundle's start.
    let mut pointers: Vec<Pointer> = Vec::new();
    let in_fatbin = |va: u64| va >= f_va && va < f_va + f_size as u64;
    // Dynamic symbols defined in .hip_fatbin: no relocation may refer to one.
    let dynsym = shdrs
        .iter()
        .find(|s| s.sh_type == SHT_DYNSYM)
        .and_then(|s| section_bytes(file, s))
        .unwrap_or_default();
    let defined_in_fatbin = |symbol: usize| {
        dynsym
            .get(symbol * 24..symbol * 24 + 24)
            .is_some_and(|sym| u16_at(sym, 6) as usize == fatbin_index)
    };
    for s in shdrs
        .iter()
        .filter(|s| s.sh_type == SHT_RELA && s.flags & SHF_ALLOC != 0)
    {
        if s.entsize != 24 {
            continue;
        }
        let rel = file
            .get(s.offset as usize..s.offset.saturating_add(s.size) as usize)
            .ok_or_else(|| bad(s.offset, format!("'{}' lies outside the file", s.name)))?;
        for (k, r) in rel.chunks_exact(24).enumerate() {
            let r_type = u32_at(r, 8);
            let addend = u64_at(r, 16);
            let symbol = u32_at(r, 12) as usize;
            if symbol != 0 && defined_in_fatbin(symbol) {
                return Err(bad(
                    s.offset + (k * 24) as u64,
                    "a dynamic relocation refers to a symbol inside .hip_fatbin, whose bytes move",
                ));
            }
            if r_type == relative && in_fatbin(addend) {
                pointers.push(Pointer {
                    value_at: None,
                    addend_at: Some(s.offset as usize + k * 24 + 16),
                    target: addend,
                });
            }
        }
    }
    if let Some(seg) = shdrs.iter().find(|s| s.name == ".hipFatBinSegment") {
        let data = file
            .get(seg.offset as usize..seg.offset.saturating_add(seg.size) as usize)
            .ok_or_else(|| bad(seg.offset, ".hipFatBinSegment lies outside the file"))?;
        for (k, w) in data.chunks_exact(24).enumerate() {
            if u32_at(w, 0) != HIP_WRAPPER_MAGIC {
                continue;
            }
            let value_at = seg.offset as usize + k * 24 + 8;
            let value = u64_at(w, 8);
            if value != 0 {
                pointers.push(Pointer {
                    value_at: Some(value_at),
                    addend_at: None,
                    target: value,
                });
            }
        }
    }
    for p in &pointers {
        if !moves.contains_key(&p.target) {
            let at = p.addend_at.or(p.value_at).unwrap_or(0) as u64;
            return Err(bad(
                at,
                format!(
                    "an address inside .hip_fatbin ({:#x}) is not the start of a bundle",
                    p.target
                ),
            ));
        }
    }

    // Where things go.
    let load = phdrs
        .iter()
        .position(|p| {
            p.p_type == PT_LOAD
                && p.vaddr <= f_va
                && f_va.checked_add(f_size as u64) <= p.vaddr.checked_add(p.filesz)
        })
        .ok_or_else(|| bad(fatbin.offset, ".hip_fatbin is in no loaded segment"))?;
    let seg = phdrs[load];
    let consistent = seg.offset <= fatbin.offset
        && fatbin.offset - seg.offset == f_va - seg.vaddr
        && seg
            .offset
            .checked_add(seg.filesz)
            .is_some_and(|e| e <= file.len() as u64)
        && seg.vaddr.checked_add(seg.memsz).is_some()
        && seg.memsz >= seg.filesz
        && (seg.align == 0 || seg.align.is_power_of_two())
        && shdrs.iter().all(|s| s.addr.checked_add(s.size).is_some())
        && phdrs.iter().all(|p| p.align <= 1 << 30);
    if !consistent {
        return Err(bad(
            phoff as u64,
            "the segment that holds .hip_fatbin does not map it consistently",
        ));
    }
    let old_end = f_off + f_size;
    let seg_file_end = (seg.offset + seg.filesz) as usize;
    let followers = shdrs.iter().any(|s| {
        s.flags & SHF_ALLOC != 0
            && s.addr >= f_va + f_size as u64
            && s.addr < seg.vaddr + seg.memsz
            && s.size > 0
    });
    let split = followers && seg_file_end > old_end;
    let new_phnum = phnum + usize::from(split);
    let packed_end = f_off + packed.len();
    // A table that lay after the section in its segment (put there by an earlier rewrite)
    // must follow the packed bundles too, or it would fall out of the segment.
    let table_after = phoff >= old_end && phoff < seg_file_end;
    let (table_at, first_end) = if split || table_after {
        let at = packed_end.next_multiple_of(8);
        (Some(at), at + new_phnum * PHDR)
    } else {
        (None, packed_end)
    };
    let va_of = |off: usize| seg.vaddr + (off as u64 - seg.offset);
    let page = seg.align.max(4096);
    let align = phdrs
        .iter()
        .filter(|p| p.p_type == PT_LOAD && p.offset as usize >= old_end)
        .map(|p| p.align)
        .chain([page])
        .max()
        .unwrap_or(page);
    let mut delta = ((old_end.saturating_sub(first_end)) as u64 / align) * align;
    if split {
        // The second part's first page must not be the first part's last page.
        let second_va = shdrs
            .iter()
            .filter(|s| s.flags & SHF_ALLOC != 0 && s.addr >= f_va + f_size as u64 && s.size > 0)
            .map(|s| s.addr)
            .min()
            .unwrap_or(f_va + f_size as u64);
        if va_of(first_end).next_multiple_of(page) > second_va / page * page {
            delta = 0;
        }
        let first = phdrs
            .iter()
            .find(|p| p.p_type == PT_LOAD)
            .expect("a loaded segment");
        if seg.vaddr - seg.offset != first.vaddr - first.offset {
            return Err(bad(
                phoff as u64,
                "the segment of .hip_fatbin does not map offsets as the first segment does; the program header table cannot move there",
            ));
        }
    }
    if delta == 0 {
        // Too little room to move anything: the packed bundles stay in the section's place,
        // zeros after them, and only the pointers change.
        return in_place(file, f_off, f_size, &packed, &pointers, &moves).map(Some);
    }
    let delta = delta as usize;
    let moved = |off: u64| {
        if off as usize >= old_end {
            off - delta as u64
        } else {
            off
        }
    };

    // The new program headers.
    let mut table = Vec::with_capacity(new_phnum * PHDR);
    for (i, p) in phdrs.iter().enumerate() {
        let mut p = *p;
        if i == load {
            let first_size = (first_end - p.offset as usize) as u64;
            let mut first = p;
            first.filesz = first_size;
            first.memsz = first_size;
            first.write(&mut table);
            if split {
                let second_va = f_va + f_size as u64;
                let second_va = shdrs
                    .iter()
                    .filter(|s| s.flags & SHF_ALLOC != 0 && s.addr >= second_va && s.size > 0)
                    .map(|s| s.addr)
                    .min()
                    .unwrap_or(second_va);
                let second_off = p.offset + (second_va - p.vaddr);
                let mut second = p;
                second.offset = second_off - delta as u64;
                second.vaddr = second_va;
                second.paddr = p.paddr + (second_va - p.vaddr);
                second.filesz = (p.offset + p.filesz).saturating_sub(second_off);
                second.memsz = (p.vaddr + p.memsz).saturating_sub(second_va);
                second.write(&mut table);
            }
            continue;
        }
        if p.p_type == PT_PHDR {
            if let Some(at) = table_at {
                p.offset = at as u64;
                p.vaddr = va_of(at);
                p.paddr = p.vaddr;
                p.filesz = (new_phnum * PHDR) as u64;
                p.memsz = p.filesz;
            }
        } else {
            p.offset = moved(p.offset);
        }
        p.write(&mut table);
    }

    // Patches, at their offsets in the new file.
    let mut patches: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut header = file[..EHDR].to_vec();
    if let Some(at) = table_at {
        header[32..40].copy_from_slice(&(at as u64).to_le_bytes());
        header[56..58].copy_from_slice(&(new_phnum as u16).to_le_bytes());
    }
    header[40..48].copy_from_slice(&moved(shoff as u64).to_le_bytes());
    patches.push((0, header));
    match table_at {
        Some(at) => patches.push((at, table)),
        None => patches.push((phoff, table)),
    }
    for p in &pointers {
        let new = moves[&p.target].to_le_bytes().to_vec();
        for at in [p.value_at, p.addend_at].into_iter().flatten() {
            let at = moved(at as u64) as usize;
            patches.push((at, new.clone()));
        }
    }
    let mut headers = Vec::with_capacity(shnum * SHDR);
    for (i, s) in shdrs.iter().enumerate() {
        let mut b = raw_sh(i).to_vec();
        b[24..32].copy_from_slice(&moved(s.offset).to_le_bytes());
        if i == fatbin_index {
            b[32..40].copy_from_slice(&(packed.len() as u64).to_le_bytes());
        }
        headers.extend_from_slice(&b);
    }
    patches.push((moved(shoff as u64) as usize, headers));
    patches.sort_by_key(|(at, _)| *at);

    // The new file: what comes before the section, the packed bundles (and the table), the
    // rest moved back; patches laid over them.
    let new_len = file.len() - delta;
    let sources: [(usize, &'a [u8]); 2] =
        [(0, &file[..f_off]), (old_end - delta, &file[old_end..])];
    let mut out = Rewritten::default();
    let mut owned: Vec<(usize, Vec<u8>)> = vec![(f_off, packed)];
    owned.extend(patches);
    owned.sort_by_key(|(at, _)| *at);
    let mut pieces: Vec<Piece<'a>> = Vec::new();
    for (base, bytes) in sources {
        // Borrowed stretches between the owned pieces that fall on them.
        let mut at = base;
        let end = base + bytes.len();
        for (o, data) in owned.iter().filter(|(o, d)| *o < end && o + d.len() > base) {
            if *o > at {
                pieces.push(Piece {
                    offset: at as u64,
                    data: std::borrow::Cow::Borrowed(&bytes[at - base..o - base]),
                });
            }
            at = at.max(o + data.len());
        }
        if at < end {
            pieces.push(Piece {
                offset: at as u64,
                data: std::borrow::Cow::Borrowed(&bytes[at - base..]),
            });
        }
    }
    for (o, data) in owned {
        pieces.push(Piece {
            offset: o as u64,
            data: std::borrow::Cow::Owned(data),
        });
    }
    pieces.sort_by_key(|p| p.offset);
    // Owned pieces may overlap each other only if they are the same place written twice.
    for w in pieces.windows(2) {
        if w[0].offset + w[0].data.len() as u64 > w[1].offset {
            return Err(bad(
                w[1].offset,
                "internal: overlapping pieces in the rewritten file",
            ));
        }
    }
    out.pieces = pieces;
    out.size = new_len as u64;
    Ok(Some(out))
}

/// The error for rewritten bundles (`size` bytes) that no longer fit the section
/// (`room` bytes) at `offset`.
fn too_large(offset: u64, size: usize, room: usize) -> Error {
    bad(
        offset,
        format!(
            "the rewritten bundles ({size} bytes) no longer fit .hip_fatbin ({room} bytes); \
             growing the section of a linked program is not supported"
        ),
    )
}

/// The file with the packed bundles written over the section (zeros after them) and the
/// pointers moved; every offset and size stays.
fn in_place<'a>(
    file: &'a [u8],
    f_off: usize,
    f_size: usize,
    packed: &[u8],
    pointers: &[Pointer],
    moves: &BTreeMap<u64, u64>,
) -> Result<Rewritten<'a>, Error> {
    let mut bytes = file.to_vec();
    let section = f_off
        .checked_add(f_size)
        .and_then(|end| bytes.get_mut(f_off..end))
        .ok_or_else(|| bad(f_off as u64, ".hip_fatbin lies outside the file"))?;
    if packed.len() > section.len() {
        return Err(too_large(f_off as u64, packed.len(), section.len()));
    }
    let (head, tail) = section.split_at_mut(packed.len());
    head.copy_from_slice(packed);
    tail.fill(0);
    for p in pointers {
        let new = moves
            .get(&p.target)
            .ok_or_else(|| bad(f_off as u64, "internal: a pointer to no bundle"))?
            .to_le_bytes();
        for at in [p.value_at, p.addend_at].into_iter().flatten() {
            bytes
                .get_mut(at..at.saturating_add(8))
                .ok_or_else(|| bad(at as u64, "a pointer lies outside the file"))?
                .copy_from_slice(&new);
        }
    }
    let size = bytes.len() as u64;
    Ok(Rewritten {
        pieces: vec![Piece {
            offset: 0,
            data: std::borrow::Cow::Owned(bytes),
        }],
        size,
    })
}
