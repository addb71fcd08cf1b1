//! ELF programs whose sections of device code all shrink and lie side by side in one loaded
//! segment (`.nv_fatbin` beside `.hip_fatbin`, as linkers place them): the sections are
//! packed one after the other, each on its own alignment, and the bytes all of them free go
//! in one cut after the last, where a single section's would go. Laying out one section
//! alone would leave the others' freed bytes in the file as zeros.
//!
//! Nothing else may lie between the sections (no section, no table, no relocated address):
//! then only the sections' own pointers, symbols and headers change, as when one section is
//! rewritten. Otherwise, or when the sections free too little to cut a page, the program is
//! laid out as [`elf`](super::elf) lays out one section among others.

use std::mem::size_of_val;

use object::elf::{SectionHeader64, SHF_ALLOC, SHT_NOBITS};
use object::LittleEndian as LE;

use crate::format::container::PROGRAM_SECTIONS;
use crate::host::error::{Error, ErrorKind, Result};
use crate::host::program::elf::{index_of, Changed, Layout, Placement, Program};
use crate::host::program::plan::{self, NewProgram, Placed, Pointer, Rewriting, Section};

/// Rewrites the sections of device code of the ELF program or library `file`; see
/// [`rewrite_hip_fatbin`](crate::host::program::rewrite_hip_fatbin). Sections that all
/// shrink side by side in one segment are cut as one (see the module's documentation); in
/// any other program, the section that grew, else the one that frees the most bytes, is laid
/// out as alone (the file cut after it, or its containers moved to a new segment), and each
/// other is packed in its own place, which keeps its size.
pub fn rewrite<'a>(file: &'a [u8], how: &Rewriting<'_>) -> Result<Option<NewProgram<'a>>> {
    let mut program = Program::read(file)?;
    let mut changed = program.changed(how)?;
    if changed.len() > 1 {
        changed.sort_by_key(|c| c.section.offset);
        if let Some(joint) = Joint::of(&mut program, &changed)? {
            return program.rewrite_joint(changed, joint).map(Some);
        }
        // Back in the order of the sections' kinds, which settles ties among them.
        changed.sort_by_key(|c| {
            PROGRAM_SECTIONS
                .iter()
                .position(|p| p.section == c.place.section)
        });
    }
    program.rewrite_changed(changed)
}

/// Where the sections go when packed one after the other, and the layout of the program
/// around them.
struct Joint<'a> {
    /// The sections as one: from the first's start to the last's end.
    whole: Section<'a>,
    /// Each section's new file offset and address, in file order.
    places: Vec<(u64, u64)>,
    layout: Layout,
}

impl<'a> Joint<'a> {
    /// The joint layout of `changed` (sorted by offset), when they can be packed together
    /// and free at least one cut's worth of bytes; `None` when not.
    fn of(program: &mut Program<'a>, changed: &[Changed<'a>]) -> Result<Option<Joint<'a>>> {
        let (Some(first), Some(last)) = (changed.first(), changed.last()) else {
            return Ok(None);
        };
        if !changed.iter().all(Changed::stays) || !program.side_by_side(changed)? {
            return Ok(None);
        }
        let (start, address) = (first.section.offset, first.section.address);
        let Some(data) = program
            .file
            .get(index_of(start)..index_of(last.section.end()))
        else {
            return Ok(None);
        };
        let mut places = Vec::with_capacity(changed.len());
        let mut next = address;
        for c in changed {
            let align = program.header_of(c.index).sh_addralign.get(LE).max(1);
            // Never past where the section was: a section off its own alignment stays alone.
            let Some(at) = next
                .checked_next_multiple_of(align)
                .filter(|&at| at <= c.section.address)
            else {
                return Ok(None);
            };
            places.push((start + (at - address), at));
            next = at.saturating_add(c.packing.packed.len());
        }
        let whole = Section {
            name: first.section.name,
            data,
            offset: start,
            address,
        };
        program.place = first.place;
        let packed = index_of(next - address);
        // A program this layout cannot serve (a table that cannot move) is laid out, or
        // refused, section by section.
        let Ok(layout) = Layout::new(program, &whole, packed, Placement::InSection) else {
            return Ok(None);
        };
        if layout.cut.len == 0 {
            return Ok(None);
        }
        Ok(Some(Joint {
            whole,
            places,
            layout,
        }))
    }
}

impl<'a> Program<'a> {
    /// Whether the sections `changed` (sorted by offset) lie in one loaded segment with
    /// nothing between them: no other section with bytes or an address there, neither header
    /// table, and no relocation pointing into the gaps.
    fn side_by_side(&self, changed: &[Changed<'_>]) -> Result<bool> {
        let (Some(first), Some(last)) = (changed.first(), changed.last()) else {
            return Ok(false);
        };
        let mut loads = changed.iter().map(|c| self.loading_segment(&c.section));
        let Some(Ok((load, _))) = loads.next() else {
            return Ok(false);
        };
        if !loads.all(|l| l.is_ok_and(|(other, _)| other == load)) {
            return Ok(false);
        }
        let (start, end) = (first.section.offset, last.section.end());
        let (low, high) = (first.section.address, last.section.address + last.len());
        let meets = |at: u64, size: u64, from: u64, to: u64| {
            size > 0 && at < to && at.saturating_add(size) > from
        };
        let ours = |i: usize| changed.iter().any(|c| c.index == i);
        let others_between = self.sections.iter().enumerate().any(|(i, s)| {
            let (offset, address, size) =
                (s.sh_offset.get(LE), s.sh_addr.get(LE), s.sh_size.get(LE));
            let in_file = s.sh_type.get(LE) != SHT_NOBITS && meets(offset, size, start, end);
            let loaded = s.sh_flags.get(LE).0 & SHF_ALLOC.0 != 0 && meets(address, size, low, high);
            !ours(i) && (in_file || loaded)
        });
        let header = self.header;
        let tables = [
            (header.e_phoff.get(LE), size_of_val(self.segments)),
            (header.e_shoff.get(LE), size_of_val(self.sections)),
        ];
        let tables_between = tables
            .iter()
            .any(|&(at, size)| meets(at, size as u64, start, end));
        if others_between || tables_between {
            return Ok(false);
        }
        for pair in changed.windows(2) {
            let [a, b] = pair else { continue };
            let gap = Section {
                name: a.section.name,
                data: self
                    .file
                    .get(index_of(a.section.end())..index_of(b.section.offset))
                    .unwrap_or_default(),
                offset: a.section.end(),
                address: a.section.address + a.len(),
            };
            // An index no section has: only relative relocations into the gap count.
            if !self
                .relocated_pointers(&gap, self.sections.len())?
                .is_empty()
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Lays out the program for the sections `changed` packed as `joint` says: one cut after
    /// the last, every section's pointers, symbols and header following its containers.
    fn rewrite_joint(
        &mut self,
        changed: Vec<Changed<'a>>,
        joint: Joint<'a>,
    ) -> Result<NewProgram<'a>> {
        let Joint {
            whole,
            places,
            layout,
        } = joint;
        let mut pointers: Vec<Pointer> = Vec::new();
        let mut headers = self.section_headers(&layout, usize::MAX, 0);
        for (c, &(offset, address)) in changed.iter().zip(&places) {
            self.place = c.place;
            let into = self.pointers_into(&c.section, c.index)?;
            pointers.extend(c.packing.retarget(&c.section, &into, address)?);
            pointers.extend(c.packing.retarget_known(&self.symbols_in(c.index), address));
            pointers.extend(self.retyped_relocations(c.index)?);
            if let Some(header) = headers.get_mut(c.index) {
                moved_header(header, offset, address, c.packing.packed.len());
            }
        }
        let patches = self.patches(&layout, &headers, &pointers);
        let rest = plan::with_cut(self.file, &whole, layout.cut, patches)?;
        let mut sections = changed.into_iter().zip(places);
        let Some((first, (first_at, _))) = sections.next() else {
            // A joint layout has two sections or more: never met.
            return Err(Error::new(whole.offset, ErrorKind::OverlappingPieces));
        };
        Ok(NewProgram {
            rest,
            packed: first.packing.packed,
            holes: first.packing.holes,
            packed_at: first_at,
            also: sections
                .map(|(c, (at, _))| Placed {
                    at,
                    packed: c.packing.packed,
                    holes: c.packing.holes,
                })
                .collect(),
        })
    }
}

impl Changed<'_> {
    /// The size of the section as read.
    fn len(&self) -> u64 {
        self.section.data.len() as u64
    }
}

/// `header` given the section's new place and size.
fn moved_header(header: &mut SectionHeader64<LE>, offset: u64, address: u64, size: u64) {
    header.sh_offset.set(LE, offset);
    header.sh_addr.set(LE, address);
    header.sh_size.set(LE, size);
}
