//! Moving the device code of a PE executable or DLL out to kpack archives and back, in the
//! layout of AMD's COFF transform. Splitting keeps every section where it is in memory:
//! `.hip_fat` keeps its RVA and `VirtualSize` but gives up the whole 4096-byte pages of its
//! raw data (what is left of it is zeros), later raw data moves back, the reference goes in a
//! new last section, `.kpackrf` (initialized data, read-only), at the next `SectionAlignment`
//! boundary with its raw data at the end of the file, and every wrapper of `.hipFatB` becomes
//! `HIPK`, its pointer the address of `.kpackrf` (its base relocation stays as it is) and its
//! `reserved1` its position among the wrappers. Merging puts the bundles back into `.hip_fat`
//! (later raw data moving along) when its place in memory holds them, else into the place
//! `.kpackrf` had; `.kpackrf` goes either way. The optional header checksum is computed again
//! when it was set; `SizeOfImage` follows the sections.

use std::mem::offset_of;

use object::pe::{ImageSectionHeader, IMAGE_SCN_CNT_INITIALIZED_DATA, IMAGE_SCN_MEM_READ};
use object::pod;
use object::LittleEndian as LE;

use crate::format::kpack::{HipWrapper, HIPF_MAGIC, HIPK_MAGIC, PE_REF_SECTION};
use crate::host::error::{Error, ErrorKind, Result};
use crate::host::objcopy::{Piece, Rewritten};
use crate::host::program::kpack_elf::{HipCode, WrapperSite};
use crate::host::program::pe::{
    field32, section_name, set_checksum, Headers, Image, EMPTIED, HIP_FATBIN, HIP_WRAPPERS,
    SECTION_HEADER,
};
use crate::host::program::plan::{self, Cut, NewProgram, Patch, Section};
use crate::host::program::records;
use crate::io::spill::Spilled;

/// The page whose whole multiples splitting takes out of `.hip_fat`'s raw data.
const PAGE: u64 = 4096;
/// The name of the reference's section.
const REFERENCE: [u8; 8] = *b".kpackrf";

/// The HIP device code of the PE image `file`: `None` when it has no `.hip_fat`. Its data are
/// the raw bytes `.hip_fat` keeps in memory (none, or zeros, once split).
pub fn hip_code(file: &[u8]) -> Result<Option<HipCode<'_>>> {
    let image = Image::read(file)?;
    let Some(fatbin) = image.section_named(&HIP_FATBIN) else {
        return Ok(None);
    };
    let fatbin = image.section(fatbin)?;
    let wrappers = wrapper_sites(&image)?;
    Ok(Some(HipCode { fatbin, wrappers }))
}

/// The wrappers of `.hipFatB`, as many as its `VirtualSize` holds in its raw data (which must
/// be a whole number of them).
fn wrapper_sites(image: &Image<'_>) -> Result<Vec<WrapperSite>> {
    let Some(index) = image.section_named(&HIP_WRAPPERS) else {
        return Ok(Vec::new());
    };
    let size = image.header_of(index).virtual_size.get(LE);
    if size as usize % HipWrapper::SIZE != 0 {
        let message = format!(".hipFatB's VirtualSize {size:#x} is no whole number of wrappers");
        return Err(refused(image.header_at(index), message));
    }
    let (offset, bytes) = image.raw_data(index)?;
    let address = image.image_base() + u64::from(image.header_of(index).virtual_address.get(LE));
    let sites = records::<HipWrapper>(bytes)
        .iter()
        .enumerate()
        .map(|(k, w)| {
            let at = (k * HipWrapper::SIZE) as u64;
            let target = w.binary.get(LE);
            WrapperSite {
                at: offset as u64 + at,
                address: address + at,
                magic: w.magic.get(LE),
                target: (target != 0).then_some(target),
                reserved1: w.reserved1.get(LE),
            }
        })
        .collect();
    Ok(sites)
}

/// The error for a file that cannot be split or merged as it is, at `at`.
fn refused(at: u64, message: String) -> Error {
    Error::new(at, ErrorKind::Kpack { message })
}

/// The bytes of `value`, `width` of them, at `at` (an old offset) in a file moved by `moved`.
fn field(at: u64, value: u64, width: usize, moved: &dyn Fn(u64) -> u64) -> Patch {
    Patch {
        at: moved(at),
        bytes: value
            .to_le_bytes()
            .get(..width)
            .unwrap_or_default()
            .to_vec(),
    }
}

/// Each wrapper of `sites` (with its position) made `to` from `from`, its pointer and
/// `reserved1` what `pointer_and_index` gives for its position, in a file moved by `moved`; a
/// wrapper whose magic is not `from` is refused.
fn wrapper_patches(
    sites: &[(usize, &WrapperSite)],
    from: u32,
    to: u32,
    pointer_and_index: &dyn Fn(usize) -> (u64, u64),
    moved: &dyn Fn(u64) -> u64,
) -> Result<Vec<Patch>> {
    let mut patches = Vec::new();
    for &(k, site) in sites {
        if site.magic != from {
            let why = format!(
                "{} wrapper {k} has magic {:#010x}, not {}",
                section_name(HIP_WRAPPERS[0]),
                site.magic,
                if from == HIPF_MAGIC { "HIPF" } else { "HIPK" }
            );
            return Err(refused(site.at, why));
        }
        let (pointer, index) = pointer_and_index(k);
        patches.push(field(site.at, u64::from(to), 4, moved));
        let binary = site.at + offset_of!(HipWrapper, binary) as u64;
        patches.push(field(binary, pointer, 8, moved));
        let reserved1 = site.at + offset_of!(HipWrapper, reserved1) as u64;
        patches.push(field(reserved1, index, 8, moved));
    }
    Ok(patches)
}

/// Splits the PE image `file` as AMD's COFF transform does (see the module's comment), with
/// `reference` (the kpack reference's bytes) in `.kpackrf`. Every base relocation into
/// `.hip_fat` must fill a wrapper's pointer.
pub fn split<'a>(file: &'a [u8], reference: &[u8]) -> Result<NewProgram<'a>> {
    let image = Image::read(file)?;
    let fatbin = image
        .section_named(&HIP_FATBIN)
        .ok_or_else(|| refused(0, "no .hip_fat section".into()))?;
    if let Some(k) = image.section_named(&[PE_REF_SECTION.as_bytes()]) {
        let message = format!("a {PE_REF_SECTION} section already: the image is split");
        return Err(refused(image.header_at(k), message));
    }
    let section = image.section(fatbin)?;
    image.check_nothing_else_inside(fatbin, &section)?;
    let sites = wrapper_sites(&image)?;
    if sites.is_empty() {
        let message = ".hip_fat has no .hipFatB wrappers pointing at it".to_string();
        return Err(refused(section.offset, message));
    }
    refuse_stray_pointers(&image, &section, fatbin, &sites)?;
    let cut = page_cut(&image, fatbin);
    let mut headers = image.new_headers(fatbin, cut, 1)?;
    // As AMD's transform leaves it: the field is informational.
    headers.nt.optional_header.size_of_initialized_data =
        image.nt.optional_header.size_of_initialized_data;
    let raw = u64::from(image.header_of(fatbin).size_of_raw_data.get(LE));
    headers
        .section_mut(fatbin)
        .size_of_raw_data
        .set(LE, field32(raw - cut.len));
    let added = image.add_section(&mut headers, cut, reference.len() as u64)?;
    let moved = |at: u64| cut.moved(at);
    let address = image.image_base() + u64::from(added.virtual_address.get(LE));
    let all: Vec<(usize, &WrapperSite)> = sites.iter().enumerate().collect();
    let to_reference = |k: usize| (address, k as u64);
    let mut patches = wrapper_patches(&all, HIPF_MAGIC, HIPK_MAGIC, &to_reference, &moved)?;
    patches.extend(image.patches(headers, cut, &[])?);
    // What .hip_fat keeps of its raw data holds no code: zeros.
    let kept_from = cut.end.max(section.offset);
    let kept_to = section.offset + raw;
    if kept_to > kept_from {
        patches.push(Patch {
            at: cut.moved(kept_from),
            bytes: vec![0; usize::try_from(kept_to - kept_from).unwrap_or(0)],
        });
    }
    let offset = u64::from(added.pointer_to_raw_data.get(LE));
    let mut rest = plan::with_cut(file, &section, cut, patches)?;
    rest.size = offset + u64::from(added.size_of_raw_data.get(LE));
    let mut program = NewProgram {
        rest,
        packed: Spilled::Bytes(reference.to_vec()),
        packed_at: offset,
        holes: Vec::new(),
        also: Vec::new(),
    };
    if image.nt.optional_header.check_sum.get(LE) != 0 {
        set_checksum(&mut program, image.checksum_at() as u64);
    }
    Ok(program)
}

/// The raw data of `.hip_fat` (section `fatbin`) that splitting takes out: the whole pages
/// (of memory, from its RVA on) inside its `VirtualSize`, as far as its raw data goes.
fn page_cut(image: &Image<'_>, fatbin: usize) -> Cut {
    let s = &image.header_of(fatbin);
    let rva = u64::from(s.virtual_address.get(LE));
    let start = rva.next_multiple_of(PAGE);
    let end = ((rva + u64::from(s.virtual_size.get(LE))) / PAGE) * PAGE;
    let offset = u64::from(s.pointer_to_raw_data.get(LE));
    let raw_end = offset + u64::from(s.size_of_raw_data.get(LE));
    if end <= start || offset == 0 {
        // Nothing goes: the cut is empty, where the raw data starts.
        return Cut {
            end: offset,
            len: 0,
        };
    }
    let align = u64::from(image.nt.optional_header.file_alignment.get(LE));
    let cut_end = (offset + (end - rva)).min(raw_end);
    Cut::between(offset + (start - rva), cut_end, align)
}

/// Refuses a base relocation that holds an address in `.hip_fat` (section `fatbin`, read as
/// `section`) other than a wrapper's pointer, and a wrapper pointing outside it.
fn refuse_stray_pointers(
    image: &Image<'_>,
    section: &Section<'_>,
    fatbin: usize,
    sites: &[WrapperSite],
) -> Result<()> {
    let places: Vec<u64> = sites
        .iter()
        .map(|w| w.at + offset_of!(HipWrapper, binary) as u64)
        .collect();
    for (k, site) in sites.iter().enumerate() {
        match site.target {
            Some(target) if section.holds(target) => {}
            Some(target) => {
                let why = format!("HIP wrapper {k} points at {target:#x}, outside .hip_fat");
                return Err(refused(site.at, why));
            }
            None => {
                return Err(refused(
                    site.at,
                    format!("HIP wrapper {k} points at nothing"),
                ))
            }
        }
    }
    let pointers = image.relocated_pointers(section, fatbin)?;
    match pointers.iter().find(|p| !places.contains(&p.at)) {
        Some(stray) => Err(Error::new(
            stray.at,
            ErrorKind::PointerIntoBundle {
                section: section.name.to_string(),
                address: stray.target,
            },
        )),
        None => Ok(()),
    }
}

impl Image<'_> {
    /// Adds to `headers` the section header of `.kpackrf`, `size` bytes: after the last
    /// section in memory (on a `SectionAlignment` boundary) and at the end of the file once
    /// `cut` bytes went (on a `FileAlignment` boundary); `SizeOfImage` grows to hold it.
    fn add_section(
        &self,
        headers: &mut Headers,
        cut: Cut,
        size: u64,
    ) -> Result<ImageSectionHeader> {
        let optional = &self.nt.optional_header;
        let (file_align, section_align) = (
            u64::from(optional.file_alignment.get(LE)),
            u64::from(optional.section_alignment.get(LE)),
        );
        let (rva, offset) = self.new_last_section(cut.len);
        let raw = size.next_multiple_of(file_align);
        let image_size = rva + size.next_multiple_of(section_align);
        if image_size > u64::from(u32::MAX) || offset + raw > u64::from(u32::MAX) {
            let what = format!("the image would pass 4 GiB with {PE_REF_SECTION}");
            return Err(Error::new(
                self.nt_at as u64,
                ErrorKind::InconsistentImage { what },
            ));
        }
        let mut added = *self.header_of(0);
        added.name = REFERENCE;
        added.pointer_to_relocations.set(LE, 0);
        added.pointer_to_linenumbers.set(LE, 0);
        added.number_of_relocations.set(LE, 0);
        added.number_of_linenumbers.set(LE, 0);
        added.virtual_size.set(LE, field32(size));
        added.virtual_address.set(LE, field32(rva));
        added.size_of_raw_data.set(LE, field32(raw));
        added.pointer_to_raw_data.set(LE, field32(offset));
        added.characteristics.set(
            LE,
            object::pe::SectionFlags(IMAGE_SCN_MEM_READ.0 | IMAGE_SCN_CNT_INITIALIZED_DATA.0),
        );
        headers.sections.push(added);
        let file_header = &mut headers.nt.file_header;
        let count = file_header.number_of_sections.get(LE) + 1;
        file_header.number_of_sections.set(LE, count);
        headers
            .nt
            .optional_header
            .size_of_image
            .set(LE, field32(image_size));
        Ok(added)
    }
}

/// Merges bundles back into the split PE image `file`: `bundles` (each on a 4096-byte
/// boundary; `starts[k]` is where wrapper `k`'s starts in them, `None` for a wrapper left as
/// it is) go into `.hip_fat` when its place in memory (up to the next section's RVA) holds
/// them, its raw data growing and later raw data moving along; else they take the place of
/// `.kpackrf` as a new `.hip_fat`, the old one, renamed `.hip_gap`, keeping its memory. Each
/// `HIPK` wrapper becomes `HIPF` again, pointing at its bundle, with `reserved1` 0.
/// `.kpackrf`, which must be the last section header with its raw data at the end of the
/// file, goes.
pub fn merge<'a>(
    file: &'a [u8],
    bundles: Spilled,
    starts: &[Option<u64>],
) -> Result<NewProgram<'a>> {
    let image = Image::read(file)?;
    let fatbin = image
        .section_named(&HIP_FATBIN)
        .ok_or_else(|| refused(0, "no .hip_fat section to put bundles back into".into()))?;
    let reference = image
        .section_named(&[PE_REF_SECTION.as_bytes()])
        .ok_or_else(|| refused(0, format!("no {PE_REF_SECTION} section: not split")))?;
    let data_end = image.reference_last(reference)?;
    // Its raw data must lie in the file, before .kpackrf's.
    image.section(fatbin)?;
    let sites = wrapper_sites(&image)?;
    let kept = image.section(reference)?;
    let places: Vec<u64> = starts
        .iter()
        .zip(&sites)
        .filter(|(start, _)| start.is_some())
        .map(|(_, w)| w.at + offset_of!(HipWrapper, binary) as u64)
        .collect();
    if let Some(stray) = image
        .relocated_pointers(&kept, reference)?
        .into_iter()
        .find(|p| !places.contains(&p.at))
    {
        let message = format!(
            "a base relocation into {PE_REF_SECTION} (to {:#x}) fills no HIP wrapper that gets a \
             bundle",
            stray.target
        );
        return Err(refused(stray.at, message));
    }
    let size = bundles.len();
    let in_place = image.room_in_memory(fatbin, reference) >= size
        && image.header_of(fatbin).pointer_to_raw_data.get(LE) != 0;
    let (rest, packed_at) = if in_place {
        image.merged_in_place(fatbin, reference, data_end, size, &sites, starts)?
    } else {
        image.merged_in_reference(fatbin, reference, data_end, size, &sites, starts)?
    };
    let mut program = NewProgram {
        rest,
        packed: bundles,
        packed_at,
        holes: Vec::new(),
        also: Vec::new(),
    };
    if image.nt.optional_header.check_sum.get(LE) != 0 {
        set_checksum(&mut program, image.checksum_at() as u64);
    }
    Ok(program)
}

impl<'a> Image<'a> {
    /// Checks section `reference` can be taken out: the last section header, its raw data
    /// after every other section's and at the end of the file. Returns where the raw data
    /// of the other sections ends.
    fn reference_last(&self, reference: usize) -> Result<u64> {
        let r = &self.header_of(reference);
        let (offset, raw) = (
            u64::from(r.pointer_to_raw_data.get(LE)),
            u64::from(r.size_of_raw_data.get(LE)),
        );
        let others_end = self
            .sections
            .iter()
            .enumerate()
            .filter(|&(k, s)| k != reference && s.size_of_raw_data.get(LE) != 0)
            .map(|(_, s)| {
                u64::from(s.pointer_to_raw_data.get(LE)) + u64::from(s.size_of_raw_data.get(LE))
            })
            .max()
            .unwrap_or(0);
        let file_end = self.file.len() as u64;
        let last = reference + 1 == self.sections.len();
        let at_end = raw == 0 || (offset >= others_end && offset + raw == file_end);
        if !last || !at_end {
            let message = format!(
                "{PE_REF_SECTION} is not the last section with its raw data at the end of the \
                 file, so it cannot be taken out"
            );
            return Err(refused(self.header_at(reference), message));
        }
        Ok(if raw == 0 { file_end } else { offset })
    }

    /// How many bytes section `fatbin` may take in memory: up to the next section's RVA
    /// (`reference`, which goes, aside), without end when none follows.
    fn room_in_memory(&self, fatbin: usize, reference: usize) -> u64 {
        let start = u64::from(self.header_of(fatbin).virtual_address.get(LE));
        self.sections
            .iter()
            .enumerate()
            .filter(|&(k, _)| k != reference && k != fatbin)
            .map(|(_, s)| u64::from(s.virtual_address.get(LE)))
            .filter(|&rva| rva > start)
            .min()
            .map_or(u64::MAX, |next| next - start)
    }
}

/// Each `HIPK` wrapper of `sites` that gets a bundle (`starts[k]`, in the bundles mapped at
/// `address`) made `HIPF` again, in a file moved by `moved`.
fn hipf_patches(
    sites: &[WrapperSite],
    starts: &[Option<u64>],
    address: u64,
    moved: &dyn Fn(u64) -> u64,
) -> Result<Vec<Patch>> {
    let getting: Vec<(usize, &WrapperSite)> = sites
        .iter()
        .enumerate()
        .filter(|(k, _)| starts.get(*k).copied().flatten().is_some())
        .collect();
    let to_bundle = |k: usize| (address + starts.get(k).copied().flatten().unwrap_or(0), 0);
    wrapper_patches(&getting, HIPK_MAGIC, HIPF_MAGIC, &to_bundle, moved)
}

/// The new file: each stretch `(range, at)` of `file` at its new offset, the patches (at new
/// offsets) laid over them, zeros elsewhere, `size` bytes in all.
fn assemble<'a>(
    file: &'a [u8],
    stretches: &[(std::ops::Range<usize>, u64)],
    mut patches: Vec<Patch>,
    size: u64,
) -> Result<Rewritten<'a>> {
    patches.sort_by_key(|p| p.at);
    let mut pieces: Vec<Piece<'a>> = Vec::new();
    for (range, at) in stretches {
        let at = usize::try_from(*at).unwrap_or(usize::MAX);
        let stretch = file.get(range.clone()).unwrap_or_default();
        plan::borrow_between(&mut pieces, at, stretch, &patches);
    }
    pieces.extend(patches.into_iter().map(|p| Piece {
        offset: p.at,
        data: std::borrow::Cow::Owned(p.bytes),
    }));
    pieces.sort_by_key(|p| p.offset);
    let mut pairs = pieces.iter().zip(pieces.iter().skip(1));
    if let Some((_, b)) = pairs.find(|(a, b)| a.offset + a.data.len() as u64 > b.offset) {
        return Err(Error::new(b.offset, ErrorKind::OverlappingPieces));
    }
    Ok(Rewritten { pieces, size })
}

impl<'a> Image<'a> {
    /// The image rewritten with the bundles (`size` bytes) in `.hip_fat` (section `fatbin`),
    /// its raw data grown to hold them and the raw data after it (up to `data_end`, where
    /// `.kpackrf`'s begins) moved along; `.kpackrf` (section `reference`) gone. Returns the
    /// rest of the file and where the bundles go.
    fn merged_in_place(
        &self,
        fatbin: usize,
        reference: usize,
        data_end: u64,
        size: u64,
        sites: &[WrapperSite],
        starts: &[Option<u64>],
    ) -> Result<(Rewritten<'a>, u64)> {
        let s = &self.header_of(fatbin);
        let offset = u64::from(s.pointer_to_raw_data.get(LE));
        let old_end = offset + u64::from(s.size_of_raw_data.get(LE));
        let align = u64::from(self.nt.optional_header.file_alignment.get(LE));
        let new_end = offset + size.next_multiple_of(align);
        let moved = |at: u64| {
            if at >= old_end {
                at - old_end + new_end
            } else {
                at
            }
        };
        let mut sections = self.sections.to_vec();
        sections.remove(reference);
        for s in &mut sections {
            for field in [&mut s.pointer_to_raw_data, &mut s.pointer_to_relocations] {
                if field.get(LE) != 0 {
                    field.set(LE, field32(moved(u64::from(field.get(LE)))));
                }
            }
        }
        let fat = sections
            .get_mut(fatbin)
            .expect("an index found among the sections");
        fat.virtual_size.set(LE, field32(size.max(1)));
        fat.size_of_raw_data.set(LE, field32(new_end - offset));
        let end = moved(data_end);
        self.check_below_4gib(end)?;
        let mut patches = self.table_patches(sections, &moved)?;
        let address = self.image_base() + u64::from(s.virtual_address.get(LE));
        patches.extend(hipf_patches(sites, starts, address, &moved)?);
        let index = |at: u64| usize::try_from(at).unwrap_or(usize::MAX);
        let stretches = [
            (0..index(offset), 0),
            (index(old_end)..index(data_end), new_end),
        ];
        Ok((assemble(self.file, &stretches, patches, end)?, offset))
    }

    /// The image rewritten with the bundles (`size` bytes) in a new `.hip_fat` in the place
    /// of `.kpackrf` (section `reference`, its raw data at the end of the file), the old one
    /// renamed `.hip_gap`. Returns the rest of the file and where the bundles go.
    fn merged_in_reference(
        &self,
        fatbin: usize,
        reference: usize,
        data_end: u64,
        size: u64,
        sites: &[WrapperSite],
        starts: &[Option<u64>],
    ) -> Result<(Rewritten<'a>, u64)> {
        let align = u64::from(self.nt.optional_header.file_alignment.get(LE));
        let offset = data_end.next_multiple_of(align);
        let raw = size.next_multiple_of(align);
        self.check_below_4gib(offset + raw)?;
        let mut sections = self.sections.to_vec();
        let rva = self.header_of(reference).virtual_address.get(LE);
        let mut placed = *self.header_of(fatbin);
        placed.virtual_address.set(LE, rva);
        placed.virtual_size.set(LE, field32(size.max(1)));
        placed.size_of_raw_data.set(LE, field32(raw));
        placed
            .pointer_to_raw_data
            .set(LE, if raw == 0 { 0 } else { field32(offset) });
        let found = "an index found among the sections";
        *sections.get_mut(reference).expect(found) = placed;
        sections.get_mut(fatbin).expect(found).name = EMPTIED;
        let same = |at: u64| at;
        let mut patches = self.table_patches(sections, &same)?;
        let address = self.image_base() + u64::from(rva);
        patches.extend(hipf_patches(sites, starts, address, &same)?);
        let stretches = [(0..usize::try_from(data_end).unwrap_or(usize::MAX), 0)];
        Ok((
            assemble(self.file, &stretches, patches, offset + raw)?,
            offset,
        ))
    }

    /// Refuses a merged image whose file would pass 4 GiB (`end` bytes).
    fn check_below_4gib(&self, end: u64) -> Result<()> {
        if end > u64::from(u32::MAX) {
            let what = format!("the image would pass 4 GiB ({end:#x} bytes) with its bundles");
            return Err(Error::new(
                self.nt_at as u64,
                ErrorKind::InconsistentImage { what },
            ));
        }
        Ok(())
    }

    /// The headers of the merged image with section table `sections` (one fewer when
    /// `.kpackrf` went; its header's bytes become zeros), in a file moved by `moved`:
    /// `NumberOfSections`, `SizeOfImage` (the end of the last section in memory), the COFF
    /// symbol table's and the debug directory's file offsets; the checksum zero.
    fn table_patches(
        &self,
        sections: Vec<ImageSectionHeader>,
        moved: &dyn Fn(u64) -> u64,
    ) -> Result<Vec<Patch>> {
        let mut nt = *self.nt;
        nt.optional_header.check_sum.set(LE, 0);
        nt.file_header
            .number_of_sections
            .set(LE, u16::try_from(sections.len()).unwrap_or(u16::MAX));
        let symbols = nt.file_header.pointer_to_symbol_table.get(LE);
        if symbols != 0 {
            nt.file_header
                .pointer_to_symbol_table
                .set(LE, field32(moved(u64::from(symbols))));
        }
        let align = u64::from(nt.optional_header.section_alignment.get(LE));
        let image_end = sections
            .iter()
            .map(|s| Self::memory_of(s).end.next_multiple_of(align))
            .max()
            .unwrap_or(align);
        if image_end > u64::from(u32::MAX) {
            let what = format!("the image would pass 4 GiB in memory ({image_end:#x} bytes)");
            return Err(Error::new(
                self.nt_at as u64,
                ErrorKind::InconsistentImage { what },
            ));
        }
        nt.optional_header.size_of_image.set(LE, field32(image_end));
        let old_end = self.table_at + self.sections.len() * SECTION_HEADER;
        let read = "the headers were read there";
        let mut head = self.file.get(..old_end).expect(read).to_vec();
        let nt_end = self.nt_at + std::mem::size_of::<object::pe::ImageNtHeaders64>();
        let nt_bytes = head.get_mut(self.nt_at..nt_end).expect(read);
        nt_bytes.copy_from_slice(pod::bytes_of(&nt));
        let table = pod::bytes_of_slice(&sections);
        // The new table has no more headers than the old one.
        let old_table = head.get_mut(self.table_at..).expect(read);
        old_table.fill(0);
        old_table
            .get_mut(..table.len())
            .expect("no more headers than before")
            .copy_from_slice(table);
        let mut patches = vec![Patch { at: 0, bytes: head }];
        patches.extend(self.debug_directory_moved(moved)?);
        Ok(patches)
    }
}
