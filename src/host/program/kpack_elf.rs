//! Moving the device code of an ELF program or shared library out to kpack archives and back,
//! with the ELF writer's own layout: splitting empties `.hip_fatbin` as a strip that drops
//! every bundle would (its whole pages cut out, the program header table, one entry longer,
//! at its start), puts the kpack reference in a new read-only loaded segment at the end of the
//! file as a new section, `.rocm_kpack_ref`, and turns every HIP wrapper into a `HIPK` one that
//! points at it. Merging puts bundles back: they take the place of the reference, in its
//! segment (the last by address), moved to the end of the file and grown there; `.hip_fatbin`
//! follows them and the reference's section header goes.

use std::mem::{offset_of, size_of, size_of_val};

use object::elf::{
    ProgramHeader64, RelocationType, SectionHeader64, PF_R, PT_LOAD, R_AARCH64_ABS64, R_X86_64_64,
    R_X86_64_RELATIVE, SHF_ALLOC, SHT_NOBITS, SHT_PROGBITS,
};
use object::pod;
use object::LittleEndian as LE;

use crate::format::kpack::{HipWrapper, ELF_REF_SECTION, HIPF_MAGIC, HIPK_MAGIC};
use crate::host::error::{Error, ErrorKind, Result};
use crate::host::program::elf::{
    index_of, Appended, Layout, Placement, Program, HIP_FATBIN, HIP_WRAPPERS, PAGE,
};
use crate::host::program::plan::{self, Cut, NewProgram, Patch, Section};
use crate::io::spill::Spilled;

/// One HIP wrapper of a program, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrapperSite {
    /// Its file offset.
    pub at: u64,
    /// Its address once loaded.
    pub address: u64,
    /// Its magic: `HIPF` or `HIPK` (anything else is refused when rewritten).
    pub magic: u32,
    /// The address it points at: its stored pointer, or, when that is 0 (a position-
    /// independent file), the addend of the relative relocation that fills it; `None` when
    /// neither gives one.
    pub target: Option<u64>,
    /// Its `reserved1` field: the code-object index of a `HIPK` wrapper.
    pub reserved1: u64,
}

/// The HIP device code of a program: `.hip_fatbin` and the wrappers that register it.
#[derive(Debug, Clone)]
pub struct HipCode<'a> {
    /// `.hip_fatbin`.
    pub fatbin: Section<'a>,
    /// The wrappers, in their section's order.
    pub wrappers: Vec<WrapperSite>,
}

/// A dynamic relocation that puts an address in place: relative, or naming a symbol the file
/// defines (a linker may fill a wrapper's pointer either way).
#[derive(Debug, Clone, Copy)]
struct Relative {
    /// The file offset of the relocation entry.
    entry_at: u64,
    /// The address it fills.
    place: u64,
    /// The address it puts there (the addend, plus the symbol's value).
    addend: u64,
    /// Whether it is relative or an absolute 64-bit address (so a relative one may replace
    /// it); other kinds naming a symbol cannot be moved.
    movable: bool,
}

impl Relative {
    /// The entry rewritten as a relative relocation that puts `target` in place, at its
    /// place in a file whose bytes moved by `cut`.
    fn patch(&self, relative: RelocationType, target: u64, cut: Cut) -> Patch {
        // r_offset, r_info (symbol 0, the relative type), r_addend.
        let mut bytes = self.place.to_le_bytes().to_vec();
        bytes.extend_from_slice(&u64::from(relative.0).to_le_bytes());
        bytes.extend_from_slice(&target.to_le_bytes());
        Patch {
            at: cut.moved(self.entry_at),
            bytes,
        }
    }
}

impl Program<'_> {
    /// The dynamic relocations that put an address in place (see [`Relative`]).
    fn relatives(&self) -> Result<Vec<Relative>> {
        let symbols = self.dynamic_symbols();
        let absolute = if self.relative == R_X86_64_RELATIVE {
            R_X86_64_64
        } else {
            R_AARCH64_ABS64
        };
        let mut found = Vec::new();
        for (entry_at, r) in self.dynamic_relocations()? {
            let kind = r.r_type(LE, false);
            let symbol = r.r_sym(LE, false);
            let addend = r.r_addend.get(LE) as u64;
            let value = if kind == self.relative {
                Some(addend)
            } else {
                symbols
                    .get(symbol as usize)
                    .filter(|sym| symbol != 0 && sym.st_shndx.get(LE).0 != 0)
                    .map(|sym| sym.st_value.get(LE).wrapping_add(addend))
            };
            let Some(value) = value else { continue };
            found.push(Relative {
                entry_at,
                place: r.r_offset.get(LE),
                addend: value,
                movable: kind == self.relative || kind == absolute,
            });
        }
        Ok(found)
    }

    /// The HIP wrappers, each with what it points at.
    fn wrapper_sites(&self, relatives: &[Relative]) -> Result<Vec<WrapperSite>> {
        let Some(index) = self.section_named(HIP_WRAPPERS) else {
            return Ok(Vec::new());
        };
        let s = self.header_of(index);
        let bytes = self.bytes_of(s, || HIP_WRAPPERS.into())?;
        let (at, address) = (s.sh_offset.get(LE), s.sh_addr.get(LE));
        let mut sites = Vec::new();
        // A host built with AddressSanitizer pads each wrapper to a block of its own.
        for offset in HipWrapper::offsets(bytes) {
            let Some(Ok((w, _))) = bytes.get(offset..).map(pod::from_bytes::<HipWrapper>) else {
                continue;
            };
            let offset = offset as u64;
            let pointer_place = address + offset + offset_of!(HipWrapper, binary) as u64;
            let stored = w.binary.get(LE);
            let target = if stored != 0 {
                Some(stored)
            } else {
                relatives
                    .iter()
                    .find(|r| r.place == pointer_place)
                    .map(|r| r.addend)
            };
            sites.push(WrapperSite {
                at: at + offset,
                address: address + offset,
                magic: w.magic.get(LE),
                target,
                reserved1: w.reserved1.get(LE),
            });
        }
        Ok(sites)
    }
}

/// The HIP device code of the ELF program or library `file`: `None` when it has no
/// `.hip_fatbin`.
pub fn hip_code(file: &[u8]) -> Result<Option<HipCode<'_>>> {
    let program = Program::read(file)?;
    let Some(fatbin) = program.section_named(HIP_FATBIN) else {
        return Ok(None);
    };
    let header = program.header_of(fatbin);
    // A splitter may leave it without bytes in the file (AMD's makes it SHT_NOBITS).
    let fatbin = if header.sh_type.get(LE) == SHT_NOBITS {
        Section {
            name: HIP_FATBIN,
            data: &[],
            offset: header.sh_offset.get(LE),
            address: header.sh_addr.get(LE),
        }
    } else {
        program.section(fatbin)?
    };
    let relatives = program.relatives()?;
    let wrappers = program.wrapper_sites(&relatives)?;
    Ok(Some(HipCode { fatbin, wrappers }))
}

/// The wrapper field at `field` (an offset in a wrapper) of `site`, `bytes` long, written at
/// its place in the new file.
fn wrapper_patch(site: &WrapperSite, field: usize, value: u64, width: usize, cut: Cut) -> Patch {
    Patch {
        at: cut.moved(site.at + field as u64),
        bytes: value
            .to_le_bytes()
            .get(..width)
            .unwrap_or_default()
            .to_vec(),
    }
}

/// The error for a wrapper that cannot be rewritten.
fn bad_wrapper(site: &WrapperSite, why: String) -> Error {
    Error::new(site.at, ErrorKind::Kpack { message: why })
}

/// Splits the ELF program or library `file`: `.hip_fatbin` emptied (its whole pages cut out),
/// `reference` (the kpack reference's bytes) in a new `.rocm_kpack_ref` section of a new
/// read-only loaded segment at the end of the file, and every wrapper made `HIPK`, pointing at
/// the reference, its `reserved1` its position among the wrappers (the code-object index the
/// loader asks for). Every relative relocation into `.hip_fatbin` must fill a wrapper's
/// pointer. The new section name table and section header table follow the segment.
pub fn split<'a>(file: &'a [u8], reference: &[u8]) -> Result<NewProgram<'a>> {
    let program = Program::read(file)?;
    let fatbin = program.section_named(HIP_FATBIN).ok_or_else(|| {
        Error::new(
            0,
            ErrorKind::Kpack {
                message: "no .hip_fatbin section".into(),
            },
        )
    })?;
    let section = program.section(fatbin)?;
    let relatives = program.relatives()?;
    let wrappers = program.wrapper_sites(&relatives)?;
    if wrappers.is_empty() {
        let message = format!("{HIP_FATBIN} has no {HIP_WRAPPERS} wrappers pointing at it");
        return Err(Error::new(section.offset, ErrorKind::Kpack { message }));
    }
    refuse_stray_pointers(&relatives, &wrappers, &section)?;
    let names = Names::with_reference(program.names);
    let (layout, appended, tables) =
        reference_layout(&program, &section, reference.len() as u64, &names)?;
    let cut = layout.cut;

    let mut patches = vec![program.program_header_patch(&layout)];
    patches.extend(hipk_wrapper_patches(
        file,
        &wrappers,
        appended.address,
        cut,
    )?);
    for r in relatives.iter().filter(|r| section.holds(r.addend)) {
        patches.push(r.patch(program.relative, appended.address, cut));
    }
    // Symbols that named bundles (`__hip_fatbin_*`) name the reference, in its section.
    let reference_index = program.sections.len();
    for symbol in program.symbols_in(fatbin) {
        patches.extend(symbol_patches(
            symbol.at,
            reference_index,
            appended.address,
            cut,
        ));
    }
    let (tables, end) = tables_with_reference(&program, &layout, fatbin, appended, tables, names);
    patches.extend(tables);
    let mut rest = plan::with_cut(file, &section, cut, patches)?;
    rest.size = end;
    Ok(NewProgram {
        rest,
        packed: Spilled::Bytes(reference.to_vec()),
        packed_at: appended.offset,
        holes: Vec::new(),
        also: Vec::new(),
    })
}

/// The section name table of a split binary: the old one, with the reference's name added
/// unless it holds it already (a binary split and merged before).
struct Names {
    bytes: Vec<u8>,
    /// Where the reference's name starts in it.
    reference: u32,
    /// Whether the name was added (the table grew).
    added: bool,
}

impl Names {
    fn with_reference(old: &[u8]) -> Names {
        let mut name = ELF_REF_SECTION.as_bytes().to_vec();
        name.push(0);
        // Names start the table or follow a NUL.
        let starts = std::iter::once(0).chain(memchr::memchr_iter(0, old).map(|at| at + 1));
        let found = starts.filter(|&at| old.get(at..).is_some_and(|rest| rest.starts_with(&name)));
        // A section name table is under 4 GiB: its size and offsets are 32-bit in the input.
        let offset = |at: usize| u32::try_from(at).unwrap_or(u32::MAX);
        match found.into_iter().next() {
            Some(at) => Names {
                bytes: old.to_vec(),
                reference: offset(at),
                added: false,
            },
            None => {
                let mut bytes = old.to_vec();
                bytes.extend_from_slice(&name);
                Names {
                    bytes,
                    reference: offset(old.len()),
                    added: true,
                }
            }
        }
    }
}

/// Where a split binary's section name table and section header table go.
#[derive(Debug, Clone, Copy)]
struct TablesAt {
    names: u64,
    headers: u64,
}

impl TablesAt {
    /// The tables one after the other from file offset `at`.
    fn from(at: u64, names: &Names) -> TablesAt {
        TablesAt {
            names: at,
            headers: (at + names.bytes.len() as u64).next_multiple_of(8),
        }
    }
}

/// Where the reference of `size` bytes goes, the layout around it, and where the section
/// tables (`names`, and the section headers, one more) go. In the segment at the end of the
/// file when `section` is alone there (a binary merged or decompressed before), in its place,
/// the tables where they were when there is room for the one more header before it; else in a
/// new segment appended after the cut file and the tables, `section` emptied. So a binary
/// split, merged and split again returns to the same size.
fn reference_layout(
    program: &Program,
    section: &Section,
    size: u64,
    names: &Names,
) -> Result<(Layout, Appended, TablesAt)> {
    let headers = ((program.sections.len() + 1) * size_of::<SectionHeader64<LE>>()) as u64;
    if let Some((layout, reused)) = program.reused_at_end(section, size) {
        let tables = tables_in_place(program, names, headers, reused.offset)
            .unwrap_or_else(|| TablesAt::from(reused.offset + size, names));
        return Ok((layout, reused, tables));
    }
    let mut layout = Layout::new(program, section, 0, Placement::NewSegment)?;
    layout.fatbin_follows = false;
    let file_size = program.file.len() as u64 - layout.cut.len;
    let start = old_tables_at_end(program).map_or(file_size, |at| layout.cut.moved(at));
    let tables = TablesAt::from(start, names);
    let appended = program.appended(tables.headers + headers, size)?;
    layout.appended = Some(appended);
    Ok((layout, appended, tables))
}

/// Where the section name table starts when it and the section header table end the file,
/// with nothing else after it (as linkers lay files out): the new tables take their place.
fn old_tables_at_end(program: &Program) -> Option<u64> {
    let names_index = usize::from(program.header.e_shstrndx.get(LE).0);
    let names_at = program.sections.get(names_index)?.sh_offset.get(LE);
    let table_at = program.header.e_shoff.get(LE);
    let table_end = table_at + size_of_val(program.sections) as u64;
    let others_after = program.sections.iter().enumerate().any(|(i, s)| {
        i != names_index
            && s.sh_type.get(LE) != SHT_NOBITS
            && s.sh_size.get(LE) > 0
            && s.sh_offset.get(LE) + s.sh_size.get(LE) > names_at
    });
    let phdrs_end = program.header.e_phoff.get(LE) + size_of_val(program.segments) as u64;
    (table_end == program.file.len() as u64
        && table_at >= names_at
        && phdrs_end <= names_at
        && !others_after)
        .then_some(names_at)
}

/// The tables where they are, when the name table keeps its size and the section header table
/// (`headers` bytes once one longer) still ends by `limit` over bytes nothing else uses.
fn tables_in_place(program: &Program, names: &Names, headers: u64, limit: u64) -> Option<TablesAt> {
    let names_index = usize::from(program.header.e_shstrndx.get(LE).0);
    let names_at = program.sections.get(names_index)?.sh_offset.get(LE);
    let table_at = program.header.e_shoff.get(LE);
    let (free, end) = (
        table_at + size_of_val(program.sections) as u64,
        table_at + headers,
    );
    let phdrs_at = program.header.e_phoff.get(LE);
    let phdrs_end = phdrs_at + size_of_val(program.segments) as u64;
    let used = program.sections.iter().any(|s| {
        s.sh_type.get(LE) != SHT_NOBITS
            && s.sh_size.get(LE) > 0
            && s.sh_offset.get(LE) < end
            && s.sh_offset.get(LE) + s.sh_size.get(LE) > free
    }) || (phdrs_at < end && phdrs_end > free);
    (!names.added && end <= limit && !used).then_some(TablesAt {
        names: names_at,
        headers: table_at,
    })
}

/// Refuses a relocation that puts an address in `section` other than a movable one filling
/// a wrapper's pointer: the section is emptied, so nothing else may point into it.
fn refuse_stray_pointers(
    relatives: &[Relative],
    wrappers: &[WrapperSite],
    section: &Section,
) -> Result<()> {
    let pointer_places: Vec<u64> = wrappers
        .iter()
        .map(|w| w.address + offset_of!(HipWrapper, binary) as u64)
        .collect();
    match relatives
        .iter()
        .find(|r| section.holds(r.addend) && !(r.movable && pointer_places.contains(&r.place)))
    {
        Some(stray) => Err(Error::new(
            stray.entry_at,
            ErrorKind::PointerIntoBundle {
                section: HIP_FATBIN.into(),
                address: stray.addend,
            },
        )),
        None => Ok(()),
    }
}

/// Each `HIPF` wrapper made `HIPK`: its pointer, where the file stores one, at `reference`
/// (the reference's address), and its `reserved1` its position among the wrappers.
fn hipk_wrapper_patches(
    file: &[u8],
    wrappers: &[WrapperSite],
    reference: u64,
    cut: Cut,
) -> Result<Vec<Patch>> {
    let mut patches = Vec::new();
    for (k, site) in wrappers.iter().enumerate() {
        match site.magic {
            HIPF_MAGIC => {}
            other => {
                let why = format!("HIP wrapper {k} has magic {other:#010x}, not HIPF");
                return Err(bad_wrapper(site, why));
            }
        }
        patches.push(wrapper_patch(site, 0, u64::from(HIPK_MAGIC), 4, cut));
        if site.target.is_none() {
            let why = format!("HIP wrapper {k} points at nothing");
            return Err(bad_wrapper(site, why));
        }
        // A pointer stored in the file (not only filled by its relocation) follows too.
        let stored = offset_of!(HipWrapper, binary);
        if stored_pointer_set(file, site) {
            patches.push(wrapper_patch(site, stored, reference, 8, cut));
        }
        patches.push(wrapper_patch(
            site,
            offset_of!(HipWrapper, reserved1),
            k as u64,
            8,
            cut,
        ));
    }
    Ok(patches)
}

/// The file header, the section name table `names` and the section headers, one more, where
/// `tables` says; and where the file then ends (after them or after the `appended` segment).
fn tables_with_reference(
    program: &Program,
    layout: &Layout,
    fatbin: usize,
    appended: Appended,
    tables: TablesAt,
    names: Names,
) -> (Vec<Patch>, u64) {
    let (names_at, table_at, name_offset) = (tables.names, tables.headers, names.reference);
    let names = names.bytes;
    let mut headers = program.section_headers(layout, fatbin, 0);
    let names_index = usize::from(program.header.e_shstrndx.get(LE).0);
    if let Some(h) = headers.get_mut(names_index) {
        h.sh_offset.set(LE, names_at);
        h.sh_size.set(LE, names.len() as u64);
    }
    headers.push(reference_header(program, fatbin, name_offset, appended));
    let mut header = program.new_header(layout);
    header.e_shoff.set(LE, table_at);
    // One more than the input's 16-bit count at most.
    header
        .e_shnum
        .set(LE, u16::try_from(headers.len()).unwrap_or(u16::MAX));
    let table = pod::bytes_of_slice(&headers).to_vec();
    let end = (table_at + table.len() as u64).max(appended.offset + appended.size);
    let patches = vec![
        Patch {
            at: 0,
            bytes: pod::bytes_of(&header).to_vec(),
        },
        Patch {
            at: names_at,
            bytes: names,
        },
        Patch {
            at: table_at,
            bytes: table,
        },
    ];
    (patches, end)
}

/// The section header of `.rocm_kpack_ref` (named at `name_offset`), the `appended`
/// segment's bytes, made from `.hip_fatbin`'s (at index `fatbin`).
fn reference_header(
    program: &Program,
    fatbin: usize,
    name_offset: u32,
    appended: Appended,
) -> SectionHeader64<LE> {
    let mut header = *program.header_of(fatbin);
    header.sh_name.set(LE, name_offset);
    header.sh_type.set(LE, SHT_PROGBITS);
    header.sh_flags.set(LE, SHF_ALLOC);
    header.sh_link.set(LE, 0);
    header.sh_info.set(LE, 0);
    header.sh_entsize.set(LE, 0);
    header.sh_addr.set(LE, appended.address);
    header.sh_offset.set(LE, appended.offset);
    header.sh_size.set(LE, appended.size);
    header.sh_addralign.set(LE, 1);
    header
}

/// Merges bundles back into the split ELF program or library `file`: `bundles` (each on a
/// 4096-byte boundary; `starts[k]` is where wrapper `k`'s starts in them, `None` for a wrapper
/// left as it is) take the place of the kpack reference in its loaded segment, which must
/// hold nothing else: the segment now maps them, at the end of the file and above every other
/// segment (in its place when it is there, as splitting leaves it; else its entry moves after
/// the last loaded one), `.hip_fatbin` follows them, each
/// `HIPK` wrapper becomes `HIPF` again pointing at its bundle (with `reserved1` 0), and the
/// reference's section header, which must be the last, goes.
pub fn merge<'a>(
    file: &'a [u8],
    bundles: Spilled,
    starts: &[Option<u64>],
) -> Result<NewProgram<'a>> {
    let program = Program::read(file)?;
    let fatbin = program
        .section_named(HIP_FATBIN)
        .ok_or_else(|| not_split(format!("no {HIP_FATBIN} section to put bundles back into")))?;
    let reference = program
        .section_named(ELF_REF_SECTION)
        .ok_or_else(|| not_split(format!("no {ELF_REF_SECTION} section: not split")))?;
    let segment = reference_segment(&program, reference)?;
    let relatives = program.relatives()?;
    let wrappers = program.wrapper_sites(&relatives)?;
    // The reference's segment now maps the bundles, at the end of the file and above every
    // other segment: in its place when it is there already, alone (as splitting leaves it),
    // else moved there, its entry after the last loaded one, as they are sorted by address.
    let size = bundles.len();
    let r = program.header_of(reference);
    let (r_offset, r_addr, r_size) = (r.sh_offset.get(LE), r.sh_addr.get(LE), r.sh_size.get(LE));
    let in_place = usize::try_from(r_offset)
        .ok()
        .zip(usize::try_from(r_offset + r_size).ok())
        .and_then(|(start, end)| file.get(start..end))
        .map(|data| Section {
            name: ELF_REF_SECTION,
            data,
            offset: r_offset,
            address: r_addr,
        })
        .filter(|s| program.segment_alone_at_end(s, size) == Some(segment));
    let (appended, end) = match in_place {
        Some(place) => {
            let align = program.segment(segment).p_align.get(LE);
            let appended = Appended {
                offset: place.offset,
                address: place.address,
                size,
                align,
            };
            (appended, place.offset)
        }
        None => (
            program.appended(file.len() as u64, size)?,
            file.len() as u64,
        ),
    };
    let (offset, vaddr) = (appended.offset, appended.address);

    let mut patches = tables_without_reference(&program, segment, reference, fatbin, appended);
    let no_change = Cut { end: 0, len: 0 };
    // Symbols in the reference's section (it goes) name the first bundle, in .hip_fatbin.
    for symbol in program.symbols_in(reference) {
        patches.extend(symbol_patches(symbol.at, fatbin, vaddr, no_change));
    }
    let filled = hipf_wrapper_patches(file, &program, &relatives, &wrappers, starts, vaddr)?;
    patches.extend(filled.patches);
    let holds_reference = |address: u64| address >= r_addr && address < r_addr + r_size.max(1);
    if let Some(stray) = relatives
        .iter()
        .find(|r| holds_reference(r.addend) && !filled.entries.contains(&r.entry_at))
    {
        let message = format!(
            "a relocation into {ELF_REF_SECTION} (to {:#x}) fills no HIP wrapper that gets a bundle",
            stray.addend
        );
        return Err(Error::new(stray.entry_at, ErrorKind::Kpack { message }));
    }
    // What follows `end` (the reference, in its place) goes.
    let whole = Section {
        name: HIP_FATBIN,
        data: file.get(index_of(end)..).unwrap_or_default(),
        offset: end,
        address: 0,
    };
    let mut rest = plan::with_cut(
        file,
        &whole,
        Cut {
            end: whole.end(),
            len: 0,
        },
        patches,
    )?;
    rest.size = offset + size;
    Ok(NewProgram {
        rest,
        packed: bundles,
        packed_at: offset,
        holes: Vec::new(),
        also: Vec::new(),
    })
}

/// The error for a file that is not as splitting leaves it.
fn not_split(message: String) -> Error {
    Error::new(0, ErrorKind::Kpack { message })
}

/// The loaded segment that maps the reference (the section at index `reference`, which must
/// be the last section header) and nothing else.
fn reference_segment(program: &Program, reference: usize) -> Result<usize> {
    let names_index = usize::from(program.header.e_shstrndx.get(LE).0);
    if reference + 1 != program.sections.len() || reference == names_index {
        return Err(not_split(format!(
            "{ELF_REF_SECTION} is not the last section header, so it cannot be taken out"
        )));
    }
    let r = program.header_of(reference);
    let (r_addr, r_size) = (r.sh_addr.get(LE), r.sh_size.get(LE));
    let mapping = program.segments.iter().position(|p| {
        p.p_type.get(LE) == PT_LOAD
            && p.p_vaddr.get(LE) <= r_addr
            && r_addr + r_size <= p.p_vaddr.get(LE) + p.p_memsz.get(LE)
    });
    let others_inside = |p: &ProgramHeader64<LE>| {
        let (start, end) = (p.p_vaddr.get(LE), p.p_vaddr.get(LE) + p.p_memsz.get(LE));
        program.sections.iter().enumerate().any(|(i, s)| {
            i != reference
                && s.sh_flags.get(LE).0 & SHF_ALLOC.0 != 0
                && s.sh_size.get(LE) > 0
                && s.sh_addr.get(LE) < end
                && s.sh_addr.get(LE) + s.sh_size.get(LE) > start
        })
    };
    mapping
        .filter(|&i| !others_inside(program.segment(i)))
        .ok_or_else(|| {
            not_split(format!(
                "{ELF_REF_SECTION} is not alone in a loaded segment, which the bundles would take"
            ))
        })
}

/// The file header, program headers and section headers once the bundles take the place of
/// the reference (at section index `reference`, mapped by program header `segment`): the
/// segment, moved after the last loaded one, maps the `appended` bundles, `.hip_fatbin` (at
/// index `fatbin`) holds them, and the reference's section header goes.
fn tables_without_reference(
    program: &Program,
    segment: usize,
    reference: usize,
    fatbin: usize,
    appended: Appended,
) -> Vec<Patch> {
    let mut header = *program.header;
    // One fewer than the input's 16-bit count.
    let count = program.sections.len().saturating_sub(1);
    header
        .e_shnum
        .set(LE, u16::try_from(count).unwrap_or(u16::MAX));
    let mut table = program.segments.to_vec();
    let mut moved = table.remove(segment);
    moved.p_offset.set(LE, appended.offset);
    moved.p_vaddr.set(LE, appended.address);
    moved.p_paddr.set(LE, appended.address);
    moved.p_filesz.set(LE, appended.size);
    moved.p_memsz.set(LE, appended.size);
    moved.p_flags.set(LE, PF_R);
    moved.p_align.set(LE, appended.align);
    let after_loads = table
        .iter()
        .rposition(|p| p.p_type.get(LE) == PT_LOAD)
        .map_or(0, |i| i + 1);
    table.insert(after_loads, moved);
    let mut sections = program
        .sections
        .get(..reference)
        .unwrap_or_default()
        .to_vec();
    let f = sections
        .get_mut(fatbin)
        .expect("the fat binary's section comes before the reference");
    f.sh_type.set(LE, SHT_PROGBITS);
    f.sh_flags.set(
        LE,
        object::elf::SectionFlags(f.sh_flags.get(LE).0 | SHF_ALLOC.0),
    );
    f.sh_addr.set(LE, appended.address);
    f.sh_offset.set(LE, appended.offset);
    f.sh_size.set(LE, appended.size);
    f.sh_addralign.set(LE, PAGE);
    // One header fewer: the last one's bytes become zeros.
    let mut headers = pod::bytes_of_slice(&sections).to_vec();
    headers.resize(headers.len() + size_of::<SectionHeader64<LE>>(), 0);
    vec![
        Patch {
            at: 0,
            bytes: pod::bytes_of(&header).to_vec(),
        },
        Patch {
            at: program.header.e_phoff.get(LE),
            bytes: pod::bytes_of_slice(&table).to_vec(),
        },
        Patch {
            at: program.header.e_shoff.get(LE),
            bytes: headers,
        },
    ]
}

/// The wrappers' patches of a merge, and the relocation entries they rewrote.
struct Filled {
    patches: Vec<Patch>,
    /// The file offsets of the relocation entries now filling a wrapper's pointer.
    entries: Vec<u64>,
}

/// Each `HIPK` wrapper `k` with a bundle (at `starts[k]` in the bundles, mapped at `vaddr`)
/// made `HIPF` again: its pointer, stored or filled by a relocation, at its bundle, and its
/// `reserved1` 0.
fn hipf_wrapper_patches(
    file: &[u8],
    program: &Program,
    relatives: &[Relative],
    wrappers: &[WrapperSite],
    starts: &[Option<u64>],
    vaddr: u64,
) -> Result<Filled> {
    let no_change = Cut { end: 0, len: 0 };
    let mut filled = Filled {
        patches: Vec::new(),
        entries: Vec::new(),
    };
    for (k, site) in wrappers.iter().enumerate() {
        let Some(start) = starts.get(k).copied().flatten() else {
            continue;
        };
        if site.magic != HIPK_MAGIC {
            let why = format!("HIP wrapper {k} has magic {:#010x}, not HIPK", site.magic);
            return Err(bad_wrapper(site, why));
        }
        let target = vaddr + start;
        let place = site.address + offset_of!(HipWrapper, binary) as u64;
        let patches = &mut filled.patches;
        patches.push(wrapper_patch(site, 0, u64::from(HIPF_MAGIC), 4, no_change));
        let stored = offset_of!(HipWrapper, binary);
        if stored_pointer_set(file, site) {
            patches.push(wrapper_patch(site, stored, target, 8, no_change));
        }
        patches.push(wrapper_patch(
            site,
            offset_of!(HipWrapper, reserved1),
            0,
            8,
            no_change,
        ));
        for r in relatives.iter().filter(|r| r.place == place && r.movable) {
            patches.push(r.patch(program.relative, target, no_change));
            filled.entries.push(r.entry_at);
        }
    }
    Ok(filled)
}

/// A symbol's new section index and value: `value_at` is the file offset of its value, which
/// its section index precedes (`st_shndx`, then `st_value`, in a 64-bit symbol).
fn symbol_patches(value_at: u64, section: usize, value: u64, cut: Cut) -> [Patch; 2] {
    let index = u16::try_from(section).unwrap_or(u16::MAX);
    [
        Patch {
            at: cut.moved(value_at - 2),
            bytes: index.to_le_bytes().to_vec(),
        },
        Patch {
            at: cut.moved(value_at),
            bytes: value.to_le_bytes().to_vec(),
        },
    ]
}

/// Whether the wrapper at `site` holds a pointer in the file (not only one its relocation
/// fills when loaded).
fn stored_pointer_set(file: &[u8], site: &WrapperSite) -> bool {
    let at = index_of(site.at).saturating_add(offset_of!(HipWrapper, binary));
    file.get(at..at.saturating_add(8))
        .is_some_and(|b| b.iter().any(|&x| x != 0))
}
