//! The ELF side of rewriting a linked program or shared library: reading its headers, the
//! dynamic relocations and wrappers that point into the section of device code (`.hip_fatbin`
//! and its HIP wrappers, or `.nv_fatbin` and its CUDA wrappers), and writing a
//! [`plan`] out: new program headers (the segment split when sections follow
//! `.hip_fatbin` in it), section headers, pointers, and the rest of the file moved back by a
//! multiple of the segments' alignment, so that every virtual address stays and every
//! segment's offset stays congruent to its address. Bundles that no longer fit go to a new
//! read-only `PT_LOAD` appended at the end of the file, the last in the table.
//!
//! Only 64-bit little-endian files (x86-64, AArch64) are read.

use std::mem::{offset_of, size_of, size_of_val};

use object::elf::{
    FileHeader64, ProgramHeader64, Rela64, RelocationType, SectionHeader64, Sym64, ELFCLASS64,
    ELFDATA2LSB, ELFMAG, EM_AARCH64, EM_X86_64, PF_R, PT_LOAD, PT_PHDR, R_AARCH64_ABS64,
    R_AARCH64_RELATIVE, R_X86_64_64, R_X86_64_RELATIVE, SHF_ALLOC, SHT_DYNSYM, SHT_RELA,
    SHT_SYMTAB,
};
use object::pod::{self, Pod};
use object::LittleEndian as LE;

use crate::format::container::{ProgramSection, PROGRAM_SECTIONS};
use crate::host::error::{Error, ErrorKind, Name, Result};
use crate::host::program::plan::{
    self, Cut, Fill, NewProgram, Packing, Patch, Placed, Pointer, Rewriting, Section,
};
use crate::host::program::{records, Wrapper};
use crate::io::spill::{Hole, Spilled};

/// The section of HIP device code.
pub(super) const HIP_FATBIN: &str = ".hip_fatbin";
/// The section of the wrappers that register `.hip_fatbin`'s bundles with the HIP runtime.
pub(super) const HIP_WRAPPERS: &str = ".hipFatBinSegment";
/// The smallest page a loaded segment is aligned to.
pub(super) const PAGE: u64 = 4096;

/// A linked ELF program as read: its headers, borrowed from the file.
pub(super) struct Program<'a> {
    pub(super) file: &'a [u8],
    pub(super) header: &'a FileHeader64<LE>,
    pub(super) segments: &'a [ProgramHeader64<LE>],
    pub(super) sections: &'a [SectionHeader64<LE>],
    /// The section name string table.
    pub(super) names: &'a [u8],
    /// The machine's relative relocation, the one that sets a wrapper's pointer.
    pub(super) relative: RelocationType,
    /// The sections rewritten: of the containers, and of their wrappers.
    pub(super) place: ProgramSection,
}

impl<'a> Program<'a> {
    /// The sections of containers that change, their containers packed, in the order of
    /// [`PROGRAM_SECTIONS`].
    pub(super) fn changed(&mut self, how: &Rewriting<'_>) -> Result<Vec<Changed<'a>>> {
        let mut changed = Vec::new();
        for place in PROGRAM_SECTIONS {
            let Some(index) = self.section_named(place.section) else {
                continue;
            };
            self.place = place;
            let section = self.section(index)?;
            if let Some(packing) = plan::pack(&section, how, plan::Inflating::Later)? {
                changed.push(Changed {
                    place,
                    index,
                    section,
                    packing,
                });
            }
        }
        Ok(changed)
    }

    /// Lays out the program for the sections `changed`: when several change, the one that
    /// grew, else the one that frees the most bytes, is laid out as alone (the file cut after
    /// it, or its containers moved to a new segment); each other is packed in its own place,
    /// which keeps its size, and only its pointers change. `None` when none changes.
    pub(super) fn rewrite_changed(
        &mut self,
        mut changed: Vec<Changed<'a>>,
    ) -> Result<Option<NewProgram<'a>>> {
        let Some(main) = main_of(&mut changed) else {
            return Ok(None);
        };
        let beside = changed
            .into_iter()
            .map(|other| self.in_place(other, &main))
            .collect::<Result<Vec<_>>>()?;
        self.place = main.place;
        self.rewrite_main(main, beside).map(Some)
    }
}

/// A section of containers that changes: where it is, and its containers packed.
pub(super) struct Changed<'a> {
    /// Which section of containers it is.
    pub(super) place: ProgramSection,
    /// Its index among the section headers.
    pub(super) index: usize,
    /// The section as read.
    pub(super) section: Section<'a>,
    /// Its containers packed.
    pub(super) packing: Packing,
}

impl Changed<'_> {
    /// Whether its packed containers stay within the section, with none left to inflate
    /// (stretches left to copy from the file go with them wherever they are placed).
    pub(super) fn stays(&self) -> bool {
        self.packing.fits(&self.section) && !self.packing.inflates()
    }

    /// The bytes its packing frees.
    fn freed(&self) -> u64 {
        (self.section.data.len() as u64).saturating_sub(self.packing.packed.len())
    }
}

/// Takes out of `changed` the section laid out as alone: the one whose containers do not stay
/// in place, else the one that frees the most bytes.
fn main_of<'a>(changed: &mut Vec<Changed<'a>>) -> Option<Changed<'a>> {
    let k = changed.iter().position(|c| !c.stays()).or_else(|| {
        let most = changed.iter().enumerate().max_by_key(|(_, c)| c.freed());
        most.map(|(k, _)| k)
    })?;
    Some(changed.remove(k))
}

/// A section packed in its own place, beside the one laid out: its containers and what its
/// pointers become.
struct InPlace {
    /// Its file offset and size in the old file.
    offset: u64,
    size: u64,
    packed: Spilled,
    /// The stretches left in them to copy from the file.
    holes: Vec<Hole<Fill>>,
    /// Its pointers, their new values, at their old file offsets.
    pointers: Vec<Pointer>,
}

impl<'a> Program<'a> {
    /// `other` packed in its own place beside `main`: its pointers retargeted. Its containers
    /// must stay within it (only one section may grow, and only `.hip_fatbin` does).
    fn in_place(&mut self, other: Changed<'a>, main: &Changed<'_>) -> Result<InPlace> {
        if !other.stays() {
            return Err(Error::new(
                0,
                ErrorKind::SeveralDeviceSections {
                    first: main.place.section.into(),
                    second: other.place.section.into(),
                },
            ));
        }
        self.place = other.place;
        let (section, packing) = (&other.section, &other.packing);
        let pointers = self.pointers_into(section, other.index)?;
        let mut pointers = packing.retarget(section, &pointers, section.address)?;
        let symbols = self.symbols_in(other.index);
        pointers.extend(packing.retarget_known(&symbols, section.address));
        pointers.extend(self.retyped_relocations(other.index)?);
        Ok(InPlace {
            offset: section.offset,
            size: section.data.len() as u64,
            packed: other.packing.packed,
            holes: other.packing.holes,
            pointers,
        })
    }

    /// Lays out the program for the section `main` (see [`Program::rewrite_changed`]), with
    /// `beside` packed in its own place.
    fn rewrite_main(&self, main: Changed<'a>, beside: Vec<InPlace>) -> Result<NewProgram<'a>> {
        let (section, fatbin, packing) = (main.section, main.index, main.packing);
        let pointers = self.pointers_into(&section, fatbin)?;
        if let Some(load) = self.segment_alone_at_end(&section, packing.packed.len()) {
            let at_end = AtEnd {
                section: &section,
                fatbin,
                load,
            };
            return self.rewrite_at_end(at_end, packing, &pointers, beside);
        }
        if !packing.fits(&section) {
            return self.rewrite_grown(&section, fatbin, packing, &pointers, beside);
        }
        let extra = beside.iter().flat_map(|b| b.pointers.iter().copied());
        let mut pointers = packing.retarget(&section, &pointers, section.address)?;
        pointers.extend(packing.retarget_known(&self.symbols_in(fatbin), section.address));
        pointers.extend(self.retyped_relocations(fatbin)?);
        pointers.extend(extra);
        let packed = index_of(packing.packed.len());
        let layout = Layout::new(self, &section, packed, Placement::InSection)?;
        let (cut, patches) = if layout.cut.len == 0 {
            // Too little room to move anything: the packed bundles stay in the section's
            // place, zeros after them, and only the pointers change.
            let patches: Vec<Patch> = pointers.iter().map(|p| pointer_patch(p, p.at)).collect();
            let nothing = Cut {
                end: section.end(),
                len: 0,
            };
            (nothing, patches)
        } else {
            let headers = self.section_headers(&layout, fatbin, packed as u64);
            let patches = self.patches(&layout, &headers, &pointers);
            (layout.cut, patches)
        };
        let new = NewProgram {
            rest: plan::with_cut(self.file, &section, cut, patches)?,
            packed: packing.packed,
            holes: packing.holes,
            packed_at: section.offset,
            also: Vec::new(),
        };
        place_beside(new, cut, beside)
    }
}

/// A section of containers alone in the last loaded segment, at the end of the file (where
/// an earlier rewrite put bundles that outgrew their section).
struct AtEnd<'s, 'a> {
    section: &'s Section<'a>,
    /// The index of the section.
    fatbin: usize,
    /// The index of its segment.
    load: usize,
}

impl<'a> Program<'a> {
    /// The index of the loaded segment that holds `section` and nothing else, when it is the
    /// last of the file and the highest in memory, and can hold `size` bytes there: the
    /// segment may then grow or shrink in place, and nothing else moves.
    pub(super) fn segment_alone_at_end(&self, section: &Section<'_>, size: u64) -> Option<usize> {
        let loads = || self.segments.iter().filter(|p| p.p_type.get(LE) == PT_LOAD);
        let (index, seg) = self.segments.iter().enumerate().find(|(_, p)| {
            p.p_type.get(LE) == PT_LOAD
                && p.p_offset.get(LE) == section.offset
                && p.p_vaddr.get(LE) == section.address
                && p.p_filesz.get(LE) == section.data.len() as u64
                && p.p_memsz.get(LE) == p.p_filesz.get(LE)
        })?;
        let address = seg.p_vaddr.get(LE);
        let highest = loads().all(|p| {
            std::ptr::eq(p, seg)
                || p.p_vaddr
                    .get(LE)
                    .checked_add(p.p_memsz.get(LE))
                    .is_some_and(|end| end <= address)
        });
        let tables_before = [
            (self.header.e_phoff.get(LE), size_of_val(self.segments)),
            (self.header.e_shoff.get(LE), size_of_val(self.sections)),
        ]
        .iter()
        .all(|&(at, size)| {
            at.checked_add(size as u64)
                .is_some_and(|end| end <= section.offset)
        });
        let fits = address.checked_add(size).is_some();
        (section.end() == self.file.len() as u64 && highest && tables_before && fits)
            .then_some(index)
    }

    /// The layout of a program whose section of containers is alone in the segment at its end
    /// (see [`Program::segment_alone_at_end`]), when `size` bytes take the section's place
    /// there: the segment, as [`Appended`] describes it, keeps its offset and address and
    /// takes their size, and nothing else moves. `None` when the section is not so alone.
    pub(super) fn reused_at_end(
        &self,
        section: &Section<'_>,
        size: u64,
    ) -> Option<(Layout, Appended)> {
        let load = self.segment_alone_at_end(section, size)?;
        let seg = self.segment(load);
        let layout = Layout {
            load,
            segment_offset: section.offset,
            segment_address: section.address,
            second: None,
            table_at: None,
            segment_count: self.segments.len(),
            first_end: section.offset + size,
            cut: Cut {
                end: section.end(),
                len: 0,
            },
            appended: None,
            fatbin_follows: false,
        };
        let reused = Appended {
            offset: section.offset,
            address: section.address,
            size,
            align: seg.p_align.get(LE),
        };
        Some((layout, reused))
    }

    /// Rewrites the program whose section of containers is alone in the segment at its end
    /// (see [`Program::segment_alone_at_end`]): the packed containers replace the section's
    /// bytes at its offset and address, the file ends after them, and the segment and the
    /// section take their size; only the pointers change besides. Rewriting such a file again
    /// and again so reuses the segment an earlier rewrite appended, instead of adding one.
    fn rewrite_at_end(
        &self,
        at_end: AtEnd<'_, 'a>,
        packing: Packing,
        pointers: &[Pointer],
        beside: Vec<InPlace>,
    ) -> Result<NewProgram<'a>> {
        let AtEnd {
            section,
            fatbin,
            load,
        } = at_end;
        let size = packing.packed.len();
        let mut pointers = packing.retarget(section, pointers, section.address)?;
        pointers.extend(packing.retarget_known(&self.symbols_in(fatbin), section.address));
        pointers.extend(self.retyped_relocations(fatbin)?);
        for beside in &beside {
            pointers.extend_from_slice(&beside.pointers);
        }
        let mut patches: Vec<Patch> = pointers.iter().map(|p| pointer_patch(p, p.at)).collect();
        let mut segment = *self.segment(load);
        segment.p_filesz.set(LE, size);
        segment.p_memsz.set(LE, size);
        patches.push(Patch {
            at: self.header.e_phoff.get(LE) + (load * size_of::<ProgramHeader64<LE>>()) as u64,
            bytes: pod::bytes_of(&segment).to_vec(),
        });
        let mut header = *self.header_of(fatbin);
        header.sh_size.set(LE, size);
        patches.push(Patch {
            at: self.header.e_shoff.get(LE) + (fatbin * size_of::<SectionHeader64<LE>>()) as u64,
            bytes: pod::bytes_of(&header).to_vec(),
        });
        let cut = Cut {
            end: section.end(),
            len: section.data.len() as u64,
        };
        let mut rest = plan::with_cut(self.file, section, cut, patches)?;
        rest.size = section.offset + size;
        let new = NewProgram {
            rest,
            packed: packing.packed,
            holes: packing.holes,
            packed_at: section.offset,
            also: Vec::new(),
        };
        place_beside(new, cut, beside)
    }
}

/// `new` (the file cut by `cut`) with the section packed in its own place, `beside`, written
/// where the section now lies: what the file held there is left out.
fn place_beside<'a>(
    mut new: NewProgram<'a>,
    cut: Cut,
    beside: Vec<InPlace>,
) -> Result<NewProgram<'a>> {
    for beside in beside {
        let at = cut.moved(beside.offset);
        plan::leave_out(&mut new.rest, at, at + beside.size)?;
        new.also.push(Placed {
            at,
            packed: beside.packed,
            holes: beside.holes,
        });
    }
    Ok(new)
}

/// Where the packed bundles go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Placement {
    /// At the start of their section, which they fit.
    InSection,
    /// In a new loaded segment at the end of the file: they outgrew their section.
    NewSegment,
}

/// The loaded segment added at the end of the file for bundles that outgrew their section.
#[derive(Debug, Clone, Copy)]
pub(super) struct Appended {
    /// Its file offset, on a page boundary.
    pub(super) offset: u64,
    /// Its address, above every other segment's and congruent to its offset.
    pub(super) address: u64,
    /// Its size in the file and in memory.
    pub(super) size: u64,
    /// Its alignment: the largest of the loaded segments'.
    pub(super) align: u64,
}

impl<'a> Program<'a> {
    /// Rewrites the program when the packed bundles outgrew `section` (at index `fatbin`):
    /// they go to a new read-only loaded segment at the end of the file (the addresses after
    /// the section are fixed, so it cannot grow in place), every pointer moves to them, and
    /// the section header follows them; `beside` is packed in its own place. The old range is emptied and the whole pages of it
    /// are cut out of the file as a strip that drops every bundle would cut them; the program
    /// header table, one entry longer, goes to its start.
    fn rewrite_grown(
        &self,
        section: &Section<'_>,
        fatbin: usize,
        packing: Packing,
        pointers: &[Pointer],
        beside: Vec<InPlace>,
    ) -> Result<NewProgram<'a>> {
        let mut layout = Layout::new(self, section, 0, Placement::NewSegment)?;
        let file_size = self.file.len() as u64 - layout.cut.len;
        let appended = self.appended(file_size, packing.packed.len())?;
        let mut pointers = packing.retarget(section, pointers, appended.address)?;
        pointers.extend(packing.retarget_known(&self.symbols_in(fatbin), appended.address));
        pointers.extend(self.retyped_relocations(fatbin)?);
        for beside in &beside {
            pointers.extend_from_slice(&beside.pointers);
        }
        layout.appended = Some(appended);
        let headers = self.section_headers(&layout, fatbin, appended.size);
        let patches = self.patches(&layout, &headers, &pointers);
        let mut rest = plan::with_cut(self.file, section, layout.cut, patches)?;
        rest.size = appended.offset + appended.size;
        let new = NewProgram {
            rest,
            packed: packing.packed,
            holes: packing.holes,
            packed_at: appended.offset,
            also: Vec::new(),
        };
        place_beside(new, layout.cut, beside)
    }

    /// The segment of `size` bytes appended to a file of `file_size` bytes: on the next page
    /// of the file, at the first address above every loaded segment that maps that offset as
    /// the largest alignment of the loaded segments asks.
    pub(super) fn appended(&self, file_size: u64, size: u64) -> Result<Appended> {
        let loads = || self.segments.iter().filter(|p| p.p_type.get(LE) == PT_LOAD);
        let align = loads()
            .map(|p| p.p_align.get(LE))
            .chain([PAGE])
            .max()
            .unwrap_or(PAGE);
        let top = loads()
            .map(|p| p.p_vaddr.get(LE).checked_add(p.p_memsz.get(LE)))
            .try_fold(0u64, |top, end| end.map(|end| top.max(end)));
        let offset = file_size.next_multiple_of(PAGE);
        let address = top
            .and_then(|top| top.checked_next_multiple_of(align))
            .and_then(|base| base.checked_add(offset % align))
            .filter(|address| address.checked_add(size).is_some());
        let Some(address) = address else {
            let at = self.header.e_phoff.get(LE);
            let section = self.place.section.to_string();
            return Err(Error::new(at, ErrorKind::InconsistentSegment { section }));
        };
        Ok(Appended {
            offset,
            address,
            size,
            align,
        })
    }
}

impl<'a> Program<'a> {
    /// Reads and checks the headers of `file`.
    pub(super) fn read(file: &'a [u8]) -> Result<Self> {
        let (header, _) = pod::from_bytes::<FileHeader64<LE>>(file)
            .ok()
            .filter(|(h, _)| h.e_ident.magic == ELFMAG)
            .ok_or(Error::new(0, ErrorKind::NotElf))?;
        if header.e_ident.class != ELFCLASS64 || header.e_ident.data != ELFDATA2LSB {
            let at = offset_of!(FileHeader64<LE>, e_ident) + 4;
            return Err(Error::new(at as u64, ErrorKind::UnsupportedProgramClass));
        }
        let relative = match header.e_machine.get(LE) {
            EM_X86_64 => R_X86_64_RELATIVE,
            EM_AARCH64 => R_AARCH64_RELATIVE,
            machine => {
                let at = offset_of!(FileHeader64<LE>, e_machine) as u64;
                let machine = machine.0;
                return Err(Error::new(at, ErrorKind::UnsupportedMachine { machine }));
            }
        };
        if usize::from(header.e_phentsize.get(LE)) != size_of::<ProgramHeader64<LE>>()
            || usize::from(header.e_shentsize.get(LE)) != size_of::<SectionHeader64<LE>>()
        {
            let at = offset_of!(FileHeader64<LE>, e_phentsize) as u64;
            return Err(Error::new(at, ErrorKind::HeaderEntrySize));
        }
        let segments =
            table::<ProgramHeader64<LE>>(file, header.e_phoff.get(LE), header.e_phnum.get(LE));
        let sections =
            table::<SectionHeader64<LE>>(file, header.e_shoff.get(LE), header.e_shnum.get(LE));
        let names_index = usize::from(header.e_shstrndx.get(LE).0);
        let (Some(segments), Some(sections)) = (segments, sections) else {
            let at = offset_of!(FileHeader64<LE>, e_phoff) as u64;
            return Err(Error::new(at, ErrorKind::HeadersOutsideFile));
        };
        let names = sections
            .get(names_index)
            .ok_or(Error::new(
                offset_of!(FileHeader64<LE>, e_phoff) as u64,
                ErrorKind::HeadersOutsideFile,
            ))
            .and_then(|s| {
                let (offset, size) = (index_of(s.sh_offset.get(LE)), index_of(s.sh_size.get(LE)));
                file.get(offset..offset.saturating_add(size))
                    .ok_or(Error::new(
                        header.e_shoff.get(LE),
                        ErrorKind::OutsideFile {
                            what: "the section name table".into(),
                        },
                    ))
            })?;
        Ok(Program {
            file,
            header,
            segments,
            sections,
            names,
            relative,
            place: PROGRAM_SECTIONS[0],
        })
    }

    /// The header of segment `load`, an index found among the segments.
    pub(super) fn segment(&self, load: usize) -> &'a ProgramHeader64<LE> {
        self.segments
            .get(load)
            .expect("an index found among the segments")
    }

    /// The header of section `index`, an index found among the sections.
    pub(super) fn header_of(&self, index: usize) -> &'a SectionHeader64<LE> {
        self.sections
            .get(index)
            .expect("an index found among the sections")
    }

    /// The name of section `s` (empty when the name table does not hold it).
    fn name(&self, s: &SectionHeader64<LE>) -> &'a [u8] {
        self.names
            .get(s.sh_name.get(LE) as usize..)
            .and_then(|r| r.split(|&c| c == 0).next())
            .unwrap_or_default()
    }

    /// The index of the first section named `name`.
    pub(super) fn section_named(&self, name: &str) -> Option<usize> {
        self.sections
            .iter()
            .position(|s| self.name(s) == name.as_bytes())
    }

    /// The bytes of section `s`, or an error naming it as `what`.
    pub(super) fn bytes_of(
        &self,
        s: &SectionHeader64<LE>,
        what: impl FnOnce() -> String,
    ) -> Result<&'a [u8]> {
        let offset = s.sh_offset.get(LE);
        self.file
            .get(index_of(offset)..index_of(offset.saturating_add(s.sh_size.get(LE))))
            .ok_or_else(|| Error::new(offset, ErrorKind::OutsideFile { what: what() }))
    }

    /// The section of containers, at index `index`.
    pub(super) fn section(&self, index: usize) -> Result<Section<'a>> {
        let s = self.header_of(index);
        let (offset, size) = (index_of(s.sh_offset.get(LE)), index_of(s.sh_size.get(LE)));
        let data = offset
            .checked_add(size)
            .and_then(|end| self.file.get(offset..end))
            .ok_or_else(|| {
                Error::new(
                    s.sh_offset.get(LE),
                    ErrorKind::OutsideFile {
                        what: self.place.section.into(),
                    },
                )
            })?;
        Ok(Section {
            name: self.place.section,
            data,
            offset: offset as u64,
            address: s.sh_addr.get(LE),
        })
    }

    /// Every place that holds an address inside `section` (at index `index`): the addends of
    /// the relative dynamic relocations, then the HIP wrappers' pointers.
    pub(super) fn pointers_into(
        &self,
        section: &Section<'_>,
        index: usize,
    ) -> Result<Vec<Pointer>> {
        let mut pointers = self.relocated_pointers(section, index)?;
        if let Some(wrappers) = self.section_named(self.place.wrappers) {
            pointers.extend(self.wrapper_pointers(wrappers, section)?);
        }
        Ok(pointers)
    }

    /// The dynamic symbols (none when there is no `.dynsym` in the file).
    pub(super) fn dynamic_symbols(&self) -> &'a [Sym64<LE>] {
        let dynsym = self
            .sections
            .iter()
            .find(|s| s.sh_type.get(LE) == SHT_DYNSYM)
            .and_then(|s| self.bytes_of(s, String::new).ok())
            .unwrap_or_default();
        records::<Sym64<LE>>(dynsym)
    }

    /// Every entry of the loaded relocation sections with addends, with its file offset.
    pub(super) fn dynamic_relocations(&self) -> Result<Vec<(u64, &'a Rela64<LE>)>> {
        const ENTRY: usize = size_of::<Rela64<LE>>();
        let mut found = Vec::new();
        for s in self.sections.iter().filter(|s| {
            s.sh_type.get(LE) == SHT_RELA
                && s.sh_flags.get(LE).0 & SHF_ALLOC.0 != 0
                && s.sh_entsize.get(LE) == ENTRY as u64
        }) {
            let bytes = self.bytes_of(s, || format!("'{}'", Name::of(self.name(s))))?;
            let at = s.sh_offset.get(LE);
            found.extend(
                records::<Rela64<LE>>(bytes)
                    .iter()
                    .enumerate()
                    .map(|(k, r)| (at + (k * ENTRY) as u64, r)),
            );
        }
        Ok(found)
    }

    /// The relative dynamic relocations whose addend lies in `section`, and the absolute
    /// 64-bit ones naming a symbol defined there (GNU ld fills a `-fgpu-rdc` library's wrapper
    /// so): their symbol's value plus addend, to be written as a relative relocation's addend
    /// (see [`Program::retyped_relocations`]). No other relocation may name a dynamic symbol
    /// defined there, since its bytes move.
    pub(super) fn relocated_pointers(
        &self,
        section: &Section<'_>,
        index: usize,
    ) -> Result<Vec<Pointer>> {
        let symbols = self.dynamic_symbols();
        let mut pointers = Vec::new();
        for (at, r) in self.dynamic_relocations()? {
            let addend_at = at + offset_of!(Rela64<LE>, r_addend) as u64;
            let addend = r.r_addend.get(LE) as u64;
            let symbol = r.r_sym(LE, false);
            let defined_here = symbols
                .get(symbol as usize)
                .filter(|sym| symbol != 0 && usize::from(sym.st_shndx.get(LE).0) == index);
            if let Some(sym) = defined_here {
                let target = sym.st_value.get(LE).wrapping_add(addend);
                if r.r_type(LE, false) != self.absolute() || !section.holds(target) {
                    let section = section.name.to_string();
                    return Err(Error::new(
                        at,
                        ErrorKind::RelocationToMovingSymbol { section },
                    ));
                }
                pointers.push(Pointer {
                    at: addend_at,
                    target,
                });
            } else if r.r_type(LE, false) == self.relative && section.holds(addend) {
                pointers.push(Pointer {
                    at: addend_at,
                    target: addend,
                });
            }
        }
        Ok(pointers)
    }

    /// The machine's absolute 64-bit relocation.
    fn absolute(&self) -> RelocationType {
        if self.relative == R_X86_64_RELATIVE {
            R_X86_64_64
        } else {
            R_AARCH64_ABS64
        }
    }

    /// The absolute relocations naming a symbol of section `index` (see
    /// [`Program::relocated_pointers`]) made relative: at the file offset of each one's
    /// `r_info`, the relative type and no symbol. Its addend, retargeted as a pointer, then
    /// holds the whole address, which the loader adds to the load address as it would have
    /// added the symbol's value (a symbol the library defines and binds to itself).
    pub(super) fn retyped_relocations(&self, index: usize) -> Result<Vec<Pointer>> {
        let symbols = self.dynamic_symbols();
        let absolute = self.absolute();
        let relative = u64::from(self.relative.0);
        Ok(self
            .dynamic_relocations()?
            .into_iter()
            .filter(|(_, r)| {
                let symbol = r.r_sym(LE, false);
                r.r_type(LE, false) == absolute
                    && symbol != 0
                    && symbols
                        .get(symbol as usize)
                        .is_some_and(|sym| usize::from(sym.st_shndx.get(LE).0) == index)
            })
            .map(|(at, _)| Pointer {
                at: at + offset_of!(Rela64<LE>, r_info) as u64,
                target: relative,
            })
            .collect())
    }

    /// The values of the symbols (of the symbol table and the dynamic one) defined in section
    /// `index`, as places holding an address: they follow the bundles they name.
    pub(super) fn symbols_in(&self, index: usize) -> Vec<Pointer> {
        const ENTRY: usize = size_of::<Sym64<LE>>();
        let mut pointers = Vec::new();
        for s in self.sections.iter().filter(|s| {
            let kind = s.sh_type.get(LE);
            (kind == SHT_SYMTAB || kind == SHT_DYNSYM) && s.sh_entsize.get(LE) == ENTRY as u64
        }) {
            let Ok(bytes) = self.bytes_of(s, String::new) else {
                continue;
            };
            let defined_here = records::<Sym64<LE>>(bytes)
                .iter()
                .enumerate()
                .filter(|(_, sym)| usize::from(sym.st_shndx.get(LE).0) == index);
            pointers.extend(defined_here.map(|(k, sym)| Pointer {
                at: s.sh_offset.get(LE) + (k * ENTRY + offset_of!(Sym64<LE>, st_value)) as u64,
                target: sym.st_value.get(LE),
            }));
        }
        pointers
    }

    /// The pointers of the wrappers in section `index` that are set in the file and point into
    /// `section` (CUDA's wrappers point into `.nv_fatbin` or `__nv_relfatbin`).
    fn wrapper_pointers(&self, index: usize, section: &Section<'_>) -> Result<Vec<Pointer>> {
        let s = self.header_of(index);
        let bytes = self.bytes_of(s, || self.place.wrappers.into())?;
        const ENTRY: usize = size_of::<Wrapper>();
        let magic = self.place.wrapper_magic;
        Ok(records::<Wrapper>(bytes)
            .iter()
            .enumerate()
            .filter(|(_, w)| w.magic.get(LE) == magic && section.holds(w.binary.get(LE)))
            .map(|(k, w)| Pointer {
                at: s.sh_offset.get(LE) + (k * ENTRY + offset_of!(Wrapper, binary)) as u64,
                target: w.binary.get(LE),
            })
            .collect())
    }

    /// What to lay over the moved file: the ELF header, the program header table, the
    /// pointers and the section header table, `headers` (see [`Program::section_headers`]).
    pub(super) fn patches(
        &self,
        layout: &Layout,
        headers: &[SectionHeader64<LE>],
        pointers: &[Pointer],
    ) -> Vec<Patch> {
        let shoff = self.header.e_shoff.get(LE);
        let header = self.new_header(layout);
        let mut patches = vec![
            Patch {
                at: 0,
                bytes: pod::bytes_of(&header).to_vec(),
            },
            self.program_header_patch(layout),
        ];
        patches.extend(
            pointers
                .iter()
                .map(|p| pointer_patch(p, layout.cut.moved(p.at))),
        );
        patches.push(Patch {
            at: layout.cut.moved(shoff),
            bytes: pod::bytes_of_slice(headers).to_vec(),
        });
        patches.sort_by_key(|p| p.at);
        patches
    }

    /// The ELF header once laid out: the program header table where it moved (one entry
    /// longer), the section header table moved along with the rest of the file.
    pub(super) fn new_header(&self, layout: &Layout) -> FileHeader64<LE> {
        let mut header = *self.header;
        if let Some(at) = layout.table_at {
            header.e_phoff.set(LE, at);
            // One more than the input's 16-bit count at most, checked when laid out.
            header
                .e_phnum
                .set(LE, u16::try_from(layout.segment_count).unwrap_or(u16::MAX));
        }
        header
            .e_shoff
            .set(LE, layout.cut.moved(self.header.e_shoff.get(LE)));
        header
    }

    /// The new program header table, where it goes.
    pub(super) fn program_header_patch(&self, layout: &Layout) -> Patch {
        Patch {
            at: layout.table_at.unwrap_or(self.header.e_phoff.get(LE)),
            bytes: self.program_headers(layout),
        }
    }

    /// The section headers once laid out: offsets moved back, `.hip_fatbin` (at index
    /// `fatbin`) `packed` bytes long, and where its bundles went when they follow them.
    pub(super) fn section_headers(
        &self,
        layout: &Layout,
        fatbin: usize,
        packed: u64,
    ) -> Vec<SectionHeader64<LE>> {
        let mut headers = Vec::with_capacity(self.sections.len());
        for (i, s) in self.sections.iter().enumerate() {
            let mut s = *s;
            s.sh_offset.set(LE, layout.cut.moved(s.sh_offset.get(LE)));
            if i == fatbin {
                s.sh_size.set(LE, packed);
                if let Some(appended) = layout.appended.filter(|_| layout.fatbin_follows) {
                    s.sh_offset.set(LE, appended.offset);
                    s.sh_addr.set(LE, appended.address);
                }
            }
            headers.push(s);
        }
        headers
    }

    /// The new program header table: the segment of `.hip_fatbin` ends after the packed
    /// bundles (and the table, when it moves there), and, when split, a second segment maps
    /// what followed at its old address. A segment appended for grown bundles comes after the
    /// last loaded segment, as loaded segments are sorted by address.
    pub(super) fn program_headers(&self, layout: &Layout) -> Vec<u8> {
        let mut table = Vec::with_capacity(layout.segment_count * size_of::<ProgramHeader64<LE>>());
        let last_load = self
            .segments
            .iter()
            .rposition(|p| p.p_type.get(LE) == PT_LOAD);
        for (i, p) in self.segments.iter().enumerate() {
            self.program_header(layout, i, p, &mut table);
            if Some(i) == last_load {
                if let Some(appended) = layout.appended {
                    table.extend_from_slice(pod::bytes_of(&appended.header(p)));
                }
            }
        }
        table
    }

    /// Pushes onto `table` the new header (or headers, when split) of segment `i`, `p`.
    fn program_header(
        &self,
        layout: &Layout,
        i: usize,
        p: &ProgramHeader64<LE>,
        table: &mut Vec<u8>,
    ) {
        let mut p = *p;
        {
            if i == layout.load {
                let (offset, vaddr) = (p.p_offset.get(LE), p.p_vaddr.get(LE));
                let (filesz, memsz) = (p.p_filesz.get(LE), p.p_memsz.get(LE));
                let mut first = p;
                first.p_filesz.set(LE, layout.first_end - offset);
                // Unsplit, the segment keeps what it maps past its file bytes.
                let past_file = match layout.second {
                    Some(_) => 0,
                    None => memsz.saturating_sub(filesz),
                };
                first.p_memsz.set(LE, layout.first_end - offset + past_file);
                table.extend_from_slice(pod::bytes_of(&first));
                if let Some(second_va) = layout.second {
                    let second_off = offset + (second_va - vaddr);
                    let mut second = p;
                    second.p_offset.set(LE, second_off - layout.cut.len);
                    second.p_vaddr.set(LE, second_va);
                    second
                        .p_paddr
                        .set(LE, p.p_paddr.get(LE) + (second_va - vaddr));
                    second
                        .p_filesz
                        .set(LE, (offset + filesz).saturating_sub(second_off));
                    second
                        .p_memsz
                        .set(LE, (vaddr + memsz).saturating_sub(second_va));
                    table.extend_from_slice(pod::bytes_of(&second));
                }
                return;
            }
            if p.p_type.get(LE) == PT_PHDR {
                if let Some(at) = layout.table_at {
                    let size = (layout.segment_count * size_of::<ProgramHeader64<LE>>()) as u64;
                    p.p_offset.set(LE, at);
                    p.p_vaddr.set(LE, layout.address_of(at));
                    p.p_paddr.set(LE, layout.address_of(at));
                    p.p_filesz.set(LE, size);
                    p.p_memsz.set(LE, size);
                }
            } else {
                p.p_offset.set(LE, layout.cut.moved(p.p_offset.get(LE)));
            }
            table.extend_from_slice(pod::bytes_of(&p));
        }
    }
}

impl Appended {
    /// Its program header, made from `like` (a loaded segment): read-only, loaded.
    fn header(&self, like: &ProgramHeader64<LE>) -> ProgramHeader64<LE> {
        let mut p = *like;
        p.p_type.set(LE, PT_LOAD);
        p.p_flags.set(LE, PF_R);
        p.p_offset.set(LE, self.offset);
        p.p_vaddr.set(LE, self.address);
        p.p_paddr.set(LE, self.address);
        p.p_filesz.set(LE, self.size);
        p.p_memsz.set(LE, self.size);
        p.p_align.set(LE, self.align);
        p
    }
}

/// The table of `count` records of `T` at `offset`, when it lies in the file.
/// `value` as an index into memory; one past every slice when it does not fit.
pub(super) fn index_of(value: u64) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}

pub(super) fn table<T: Pod>(file: &[u8], offset: u64, count: u16) -> Option<&[T]> {
    let offset = usize::try_from(offset).ok()?;
    let count = usize::from(count);
    offset
        .checked_add(count * size_of::<T>())
        .filter(|&end| end <= file.len())?;
    pod::slice_from_bytes(file.get(offset..)?, count)
        .ok()
        .map(|(t, _)| t)
}

/// The pointer `p` written at `at` of the new file: an address, 64-bit little-endian.
pub(super) fn pointer_patch(p: &Pointer, at: u64) -> Patch {
    Patch {
        at,
        bytes: p.target.to_le_bytes().to_vec(),
    }
}

/// Where the ELF structures go once the bundles are packed.
pub(super) struct Layout {
    /// The index of the segment that loads `.hip_fatbin`.
    load: usize,
    /// The file offset and address of that segment.
    segment_offset: u64,
    segment_address: u64,
    /// The address the second part of a split segment starts at.
    second: Option<u64>,
    /// The new offset of the program header table, when it moves.
    table_at: Option<u64>,
    /// The number of program headers.
    segment_count: usize,
    /// The file offset where the (first part of the) segment now ends.
    first_end: u64,
    /// The bytes that go.
    pub(super) cut: Cut,
    /// The segment added at the end of the file, for bundles that outgrew their section.
    pub(super) appended: Option<Appended>,
    /// Whether `.hip_fatbin` follows its bundles into the appended segment (else the segment
    /// holds a new section and `.hip_fatbin` is left empty).
    pub(super) fatbin_follows: bool,
}

impl Program<'_> {
    /// The first address from `address` on of a loaded section with bytes, if any.
    fn first_loaded_from(&self, address: u64) -> Option<u64> {
        self.sections
            .iter()
            .filter(|s| {
                s.sh_flags.get(LE).0 & SHF_ALLOC.0 != 0
                    && s.sh_addr.get(LE) >= address
                    && s.sh_size.get(LE) > 0
            })
            .map(|s| s.sh_addr.get(LE))
            .min()
    }

    /// The largest alignment of `page` and of the loaded segments from file offset `offset`
    /// on: what a cut before them must keep.
    fn load_alignment_from(&self, offset: u64, page: u64) -> u64 {
        self.segments
            .iter()
            .filter(|p| p.p_type.get(LE) == PT_LOAD && p.p_offset.get(LE) >= offset)
            .map(|p| p.p_align.get(LE))
            .chain([page])
            .max()
            .unwrap_or(page)
    }
}

impl Layout {
    /// Lays out the program when the bundles of `section` are packed into `packed` bytes
    /// there, or go elsewhere (`placement`; `packed` is then 0): the program header table then
    /// moves to the section's start, to make room for one more entry.
    pub(super) fn new(
        program: &Program<'_>,
        section: &Section<'_>,
        packed: usize,
        placement: Placement,
    ) -> Result<Layout> {
        let (load, seg) = program.loading_segment(section)?;
        let phoff = program.header.e_phoff.get(LE);
        let (f_va, old_end) = (section.address, section.end());
        let seg_offset = seg.p_offset.get(LE);
        let seg_address = seg.p_vaddr.get(LE);
        let seg_file_end = seg_offset + seg.p_filesz.get(LE);
        let seg_mem_end = seg_address + seg.p_memsz.get(LE);
        let section_va_end = f_va + section.data.len() as u64;
        let follower = program.first_loaded_from(section_va_end);
        let followers = follower.is_some_and(|addr| addr < seg_mem_end);
        let split = followers && seg_file_end > old_end;
        let added = usize::from(placement == Placement::NewSegment);
        let segment_count = program.segments.len() + usize::from(split) + added;
        let packed_end = section.offset + packed as u64;
        // A table that lay after the section in its segment (put there by an earlier rewrite)
        // must follow the packed bundles too, or it would fall out of the segment.
        let table_after = phoff >= old_end && phoff < seg_file_end;
        let (table_at, first_end) = if split || table_after || added > 0 {
            let at = packed_end.next_multiple_of(8);
            let size = (segment_count * size_of::<ProgramHeader64<LE>>()) as u64;
            (Some(at), at + size)
        } else {
            (None, packed_end)
        };
        let page = seg.p_align.get(LE).max(4096);
        let align = program.load_alignment_from(old_end, page);
        let mut layout = Layout {
            load,
            segment_offset: seg_offset,
            segment_address: seg_address,
            second: None,
            table_at,
            segment_count,
            first_end,
            cut: Cut::between(first_end, old_end, align),
            appended: None,
            fatbin_follows: true,
        };
        if split {
            let second = follower.unwrap_or(section_va_end);
            layout.second = Some(second);
            // The second part's first page must not be the first part's last page.
            if layout.address_of(first_end).next_multiple_of(page) > second / page * page {
                layout.cut.len = 0;
            }
            program.check_table_can_move(seg)?;
        }
        if added > 0 {
            layout.keep_segment_whole_without_cut(seg_file_end);
            program.check_table_can_move(seg)?;
            if first_end > old_end {
                let name = program.place.section.to_string();
                return Err(Error::new(
                    section.offset,
                    ErrorKind::NoRoomForProgramHeaders { section: name },
                ));
            }
        }
        Ok(layout)
    }

    /// When nothing is cut, nothing after the table moves: the segment need not split, and
    /// keeps its extent (the table lies inside it, in the emptied section).
    fn keep_segment_whole_without_cut(&mut self, segment_file_end: u64) {
        if self.cut.len == 0 {
            if self.second.take().is_some() {
                self.segment_count -= 1;
            }
            self.first_end = segment_file_end;
        }
    }

    /// The address the new file offset `offset` (in the segment of `.hip_fatbin`) loads at.
    fn address_of(&self, offset: u64) -> u64 {
        self.segment_address + (offset - self.segment_offset)
    }
}

impl Program<'_> {
    /// The loaded segment that maps `section`, checked to map it consistently.
    pub(super) fn loading_segment(
        &self,
        section: &Section<'_>,
    ) -> Result<(usize, &ProgramHeader64<LE>)> {
        let (f_va, f_size) = (section.address, section.data.len() as u64);
        let load = self
            .segments
            .iter()
            .position(|p| {
                let (vaddr, filesz) = (p.p_vaddr.get(LE), p.p_filesz.get(LE));
                p.p_type.get(LE) == PT_LOAD
                    && vaddr <= f_va
                    && f_va.checked_add(f_size) <= vaddr.checked_add(filesz)
            })
            .ok_or_else(|| {
                let name = section.name.to_string();
                Error::new(section.offset, ErrorKind::NotLoaded { section: name })
            })?;
        let seg = self.segment(load);
        let (offset, vaddr) = (seg.p_offset.get(LE), seg.p_vaddr.get(LE));
        let (filesz, memsz, align) = (
            seg.p_filesz.get(LE),
            seg.p_memsz.get(LE),
            seg.p_align.get(LE),
        );
        let consistent = offset <= section.offset
            && section.offset - offset == f_va - vaddr
            && offset
                .checked_add(filesz)
                .is_some_and(|e| e <= self.file.len() as u64)
            && vaddr.checked_add(memsz).is_some()
            && memsz >= filesz
            && (align == 0 || align.is_power_of_two())
            && self
                .sections
                .iter()
                .all(|s| s.sh_addr.get(LE).checked_add(s.sh_size.get(LE)).is_some())
            && self.segments.iter().all(|p| p.p_align.get(LE) <= 1 << 30);
        if !consistent {
            let at = self.header.e_phoff.get(LE);
            let section = section.name.to_string();
            return Err(Error::new(at, ErrorKind::InconsistentSegment { section }));
        }
        Ok((load, seg))
    }

    /// Refuses to move the program header table into segment `seg` when it maps offsets to
    /// addresses differently from the first loaded segment (where the loader expects it).
    fn check_table_can_move(&self, seg: &ProgramHeader64<LE>) -> Result<()> {
        let first = self
            .segments
            .iter()
            .find(|p| p.p_type.get(LE) == PT_LOAD)
            .expect("a loaded segment");
        let bias = |p: &ProgramHeader64<LE>| p.p_vaddr.get(LE).wrapping_sub(p.p_offset.get(LE));
        if bias(seg) != bias(first) {
            let at = self.header.e_phoff.get(LE);
            let section = self.place.section.to_string();
            return Err(Error::new(at, ErrorKind::TableCannotMove { section }));
        }
        Ok(())
    }
}
