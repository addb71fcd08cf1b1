//! The PE side of rewriting a linked program or DLL: reading its headers, the base
//! relocations and HIP wrappers that point into the section of HIP device code, and writing a
//! [`plan`] out.
//!
//! Every RVA stays: the loader needs sections that follow one another in memory, and code
//! reaches other sections by RVA without a relocation. So the section keeps its place and
//! `VirtualSize` in memory (the loader fills what its raw data no longer covers with zeros),
//! and the file shrinks by the whole `FileAlignment` blocks of raw data freed: the raw data of
//! later sections moves back, and the file offsets that point at it (section table, COFF symbol
//! table, debug directory entries) follow. Base relocations need no change, since no place they
//! name moves in memory. Bundles that no longer fit go to a new section after the last one
//! (its RVA on the next `SectionAlignment` boundary, its raw data at the end of the file), and
//! the emptied one, renamed `.hip_gap`, keeps its memory range with no raw data. A wrapper's
//! pointer holds an absolute address (`ImageBase` + RVA), set again to the bundle's new one.
//! The optional header checksum is computed again when it was set.
//!
//! Only PE32+ images (x86-64, AArch64) are read; signed images are refused.

use std::mem::{offset_of, size_of};

use object::pe::{
    ImageBaseRelocation, ImageDataDirectory, ImageDebugDirectory, ImageDosHeader, ImageFileHeader,
    ImageNtHeaders64, ImageOptionalHeader64, ImageSectionHeader, IMAGE_DIRECTORY_ENTRY_BASERELOC,
    IMAGE_DIRECTORY_ENTRY_DEBUG, IMAGE_DIRECTORY_ENTRY_SECURITY, IMAGE_DOS_SIGNATURE,
    IMAGE_FILE_MACHINE_AMD64, IMAGE_FILE_MACHINE_ARM64, IMAGE_NT_OPTIONAL_HDR64_MAGIC,
    IMAGE_NT_SIGNATURE, IMAGE_NUMBEROF_DIRECTORY_ENTRIES, IMAGE_REL_BASED_ABSOLUTE,
    IMAGE_REL_BASED_DIR64, IMAGE_SCN_CNT_INITIALIZED_DATA,
};
use object::pod::{self, Pod};
use object::read::coff::CoffHeader;
use object::read::StringTable;
use object::{LittleEndian as LE, U16};

use crate::host::error::{Error, ErrorKind, Result};
use crate::host::program::plan::{
    self, Cut, NewProgram, Packing, Patch, Pointer, Rewriting, Section,
};
use crate::host::program::{records, Wrapper, HIP_WRAPPER_MAGIC};

/// The section of HIP device code: lld-link keeps the first 8 bytes of a name in an image
/// (`.hip_fat`); linkers that keep a string table keep it whole.
pub(super) const HIP_FATBIN: [&[u8]; 2] = [b".hip_fat", b".hip_fatbin"];
/// The section of the HIP wrappers, as lld-link names it and in full.
pub(super) const HIP_WRAPPERS: [&[u8]; 2] = [b".hipFatB", b".hipFatBinSegment"];
/// The name of the section left where the bundles were once they moved to a new section.
pub(super) const EMPTIED: [u8; 8] = *b".hip_gap";
/// The size of a section header.
pub(super) const SECTION_HEADER: usize = size_of::<ImageSectionHeader>();

/// A linked PE32+ image as read: its headers, borrowed from the file.
pub(super) struct Image<'a> {
    pub(super) file: &'a [u8],
    /// The offset of the NT headers.
    pub(super) nt_at: usize,
    pub(super) nt: &'a ImageNtHeaders64,
    pub(super) directories: &'a [ImageDataDirectory],
    /// The offset of the section table.
    pub(super) table_at: usize,
    pub(super) sections: &'a [ImageSectionHeader],
    /// The string table, for long section names (images made by GNU ld keep one).
    strings: StringTable<'a>,
}

/// Rewrites the HIP device code of the PE image `file`; see
/// [`rewrite_hip_fatbin`](crate::host::program::rewrite_hip_fatbin).
pub fn rewrite<'a>(file: &'a [u8], how: &Rewriting<'_>) -> Result<Option<NewProgram<'a>>> {
    let image = Image::read(file)?;
    let Some(fatbin) = image.section_named(&HIP_FATBIN) else {
        return Ok(None);
    };
    let section = image.section(fatbin)?;
    image.check_nothing_else_inside(fatbin, &section)?;
    // A checksum is summed over the new bytes, so those inflated must be there first.
    let inflating = if image.nt.optional_header.check_sum.get(LE) != 0 {
        plan::Inflating::Now
    } else {
        plan::Inflating::Later
    };
    let Some(packing) = plan::pack(&section, how, inflating)? else {
        return Ok(None);
    };
    let pointers = image.pointers_into(&section, fatbin)?;
    let mut program = if packing.fits(&section) {
        image.rewrite_in_place(&section, fatbin, packing, &pointers)?
    } else {
        image.rewrite_grown(&section, fatbin, packing, &pointers)?
    };
    if image.nt.optional_header.check_sum.get(LE) != 0 {
        set_checksum(&mut program, image.checksum_at() as u64);
    }
    Ok(Some(program))
}

/// The PE checksum of `file` (the optional header's `CheckSum` field counted as zero), or
/// `None` when it is no PE32+ image.
#[cfg(any(test, feature = "internals"))]
pub fn checksum(file: &[u8]) -> Option<u32> {
    let image = Image::read(file).ok()?;
    let at = image.checksum_at();
    let field = word_sum(at as u64, file.get(at..at + 4)?);
    Some(finish_checksum(
        word_sum(0, file) - field,
        file.len() as u64,
    ))
}

/// Where the NT headers of `file` are, after checking the DOS header and the signature.
fn nt_headers_at(file: &[u8]) -> Result<usize> {
    let not_pe = |at: usize| Error::new(at as u64, ErrorKind::NotPe);
    let (dos, _) = pod::from_bytes::<ImageDosHeader>(file).map_err(|_| not_pe(0))?;
    if dos.e_magic.get(LE) != IMAGE_DOS_SIGNATURE {
        return Err(not_pe(0));
    }
    let lfanew_at = offset_of!(ImageDosHeader, e_lfanew);
    let nt_at = dos.e_lfanew.get(LE) as usize;
    let (signature, _) = file
        .get(nt_at..)
        .and_then(|b| pod::from_bytes::<object::U32<LE>>(b).ok())
        .ok_or(not_pe(lfanew_at))?;
    if signature.get(LE) != IMAGE_NT_SIGNATURE {
        return Err(not_pe(lfanew_at));
    }
    Ok(nt_at)
}

/// The NT headers at `nt_at` in `file`, of a PE32+ image for x86-64 or AArch64.
fn read_nt_headers(file: &[u8], nt_at: usize) -> Result<&ImageNtHeaders64> {
    let opt_at = nt_at + offset_of!(ImageNtHeaders64, optional_header);
    let magic = file
        .get(opt_at..)
        .and_then(|b| pod::from_bytes::<U16<LE>>(b).ok())
        .map(|(m, _)| m.get(LE));
    let Some(magic) = magic else {
        return Err(Error::new(nt_at as u64, ErrorKind::HeadersOutsideFile));
    };
    if magic != IMAGE_NT_OPTIONAL_HDR64_MAGIC {
        return Err(Error::new(
            opt_at as u64,
            ErrorKind::UnsupportedProgramClass,
        ));
    }
    let (nt, _) = pod::from_bytes::<ImageNtHeaders64>(file.get(nt_at..).unwrap_or_default())
        .map_err(|_| Error::new(nt_at as u64, ErrorKind::HeadersOutsideFile))?;
    let machine_at = nt_at + 4 + offset_of!(ImageFileHeader, machine);
    match nt.file_header.machine.get(LE) {
        IMAGE_FILE_MACHINE_AMD64 | IMAGE_FILE_MACHINE_ARM64 => Ok(nt),
        machine => Err(Error::new(
            machine_at as u64,
            ErrorKind::UnsupportedMachine { machine: machine.0 },
        )),
    }
}

/// Checks the optional header (at `opt_at`) gives alignments and a base the image can be laid
/// out with: powers of two, the file's no larger than the sections', and every address of the
/// image, and of a section added after it, within 64 bits.
fn check_layout(optional: &ImageOptionalHeader64, opt_at: usize) -> Result<()> {
    let (file_align, section_align) = (
        optional.file_alignment.get(LE),
        optional.section_alignment.get(LE),
    );
    if !file_align.is_power_of_two()
        || !section_align.is_power_of_two()
        || file_align > section_align
    {
        let at = opt_at + offset_of!(ImageOptionalHeader64, section_alignment);
        return Err(Error::new(
            at as u64,
            ErrorKind::InconsistentImage {
                what: format!(
                    "SectionAlignment {section_align:#x} and FileAlignment {file_align:#x}"
                ),
            },
        ));
    }
    if optional.image_base.get(LE).checked_add(1 << 33).is_none() {
        let at = opt_at + offset_of!(ImageOptionalHeader64, image_base);
        let what = format!("ImageBase {:#x}", optional.image_base.get(LE));
        return Err(Error::new(at as u64, ErrorKind::InconsistentImage { what }));
    }
    Ok(())
}

impl<'a> Image<'a> {
    /// Reads and checks the headers of `file`.
    pub(super) fn read(file: &'a [u8]) -> Result<Self> {
        let nt_at = nt_headers_at(file)?;
        let nt = read_nt_headers(file, nt_at)?;
        let opt_at = nt_at + offset_of!(ImageNtHeaders64, optional_header);
        let optional = &nt.optional_header;
        let count = (optional.number_of_rva_and_sizes.get(LE) as usize)
            .min(IMAGE_NUMBEROF_DIRECTORY_ENTRIES);
        let optional_size = usize::from(nt.file_header.size_of_optional_header.get(LE));
        let dirs_at = nt_at + size_of::<ImageNtHeaders64>();
        let table_at = opt_at + optional_size;
        let directories = table::<ImageDataDirectory>(file, dirs_at, count)
            .filter(|_| size_of::<ImageOptionalHeader64>() + count * 8 <= optional_size);
        let sections = table::<ImageSectionHeader>(
            file,
            table_at,
            usize::from(nt.file_header.number_of_sections.get(LE)),
        );
        let (Some(directories), Some(sections)) = (directories, sections) else {
            let at = nt_at + 4 + offset_of!(ImageFileHeader, size_of_optional_header);
            return Err(Error::new(at as u64, ErrorKind::HeadersOutsideFile));
        };
        check_layout(optional, opt_at)?;
        let strings = nt
            .file_header
            .symbols(file)
            .map(|symbols| symbols.strings())
            .unwrap_or_default();
        Ok(Image {
            file,
            nt_at,
            nt,
            directories,
            table_at,
            sections,
            strings,
        })
    }

    /// The offset of the optional header's `CheckSum`.
    pub(super) fn checksum_at(&self) -> usize {
        self.nt_at
            + offset_of!(ImageNtHeaders64, optional_header)
            + offset_of!(ImageOptionalHeader64, check_sum)
    }

    /// The header of section `index`, an index found among the image's sections.
    pub(super) fn header_of(&self, index: usize) -> &'a ImageSectionHeader {
        self.sections
            .get(index)
            .expect("an index found among the sections")
    }

    /// The file offset of the header of section `index`.
    pub(super) fn header_at(&self, index: usize) -> u64 {
        (self.table_at + index * SECTION_HEADER) as u64
    }

    /// The name of section `s`, long names read from the string table.
    pub(super) fn name(&self, s: &'a ImageSectionHeader) -> &'a [u8] {
        s.name(self.strings).unwrap_or_else(|_| s.raw_name())
    }

    /// The index of the first section with one of `names`.
    pub(super) fn section_named(&self, names: &[&[u8]]) -> Option<usize> {
        self.sections
            .iter()
            .position(|s| names.contains(&self.name(s)))
    }

    /// The RVAs section `s` covers in memory.
    pub(super) fn memory_of(s: &ImageSectionHeader) -> std::ops::Range<u64> {
        let start = u64::from(s.virtual_address.get(LE));
        let size = match s.virtual_size.get(LE) {
            0 => s.size_of_raw_data.get(LE),
            size => size,
        };
        start..start + u64::from(size)
    }

    /// The raw data of section `index` that it keeps in memory, and its file offset. The whole
    /// raw data must lie in the file.
    pub(super) fn raw_data(&self, index: usize) -> Result<(usize, &'a [u8])> {
        let s = self.header_of(index);
        let (offset, raw) = (
            s.pointer_to_raw_data.get(LE) as usize,
            s.size_of_raw_data.get(LE) as usize,
        );
        let size = match s.virtual_size.get(LE) as usize {
            0 => raw,
            size => size.min(raw),
        };
        let data = offset
            .checked_add(raw)
            .and_then(|end| self.file.get(offset..end))
            .ok_or_else(|| {
                let what = format!("the raw data of {}", section_name(self.name(s)));
                Error::new(self.header_at(index), ErrorKind::OutsideFile { what })
            })?;
        Ok((offset, data.get(..size).unwrap_or(data)))
    }

    /// The section of containers, at index `index`.
    pub(super) fn section(&self, index: usize) -> Result<Section<'a>> {
        let s = self.header_of(index);
        let name = std::str::from_utf8(self.name(s)).unwrap_or(".hip_fat");
        let (offset, data) = self.raw_data(index)?;
        Ok(Section {
            name,
            data,
            offset: offset as u64,
            address: self.image_base() + u64::from(s.virtual_address.get(LE)),
        })
    }

    /// The address the image prefers to load at.
    pub(super) fn image_base(&self) -> u64 {
        self.nt.optional_header.image_base.get(LE)
    }

    /// The file offset of the `size` bytes at `rva`, when a section's raw data holds them.
    pub(super) fn offset_of_rva(&self, rva: u64, size: u64) -> Option<usize> {
        let s = self.sections.iter().find(|s| {
            let start = u64::from(s.virtual_address.get(LE));
            let raw = u64::from(s.size_of_raw_data.get(LE));
            rva >= start && rva + size <= start + raw
        })?;
        let offset =
            u64::from(s.pointer_to_raw_data.get(LE)) + rva - u64::from(s.virtual_address.get(LE));
        let end = offset.checked_add(size)?;
        (end <= self.file.len() as u64).then(|| usize::try_from(offset).ok())?
    }

    /// The offset of data directory `index`'s entry.
    pub(super) fn directory_at(&self, index: usize) -> u64 {
        (self.nt_at + size_of::<ImageNtHeaders64>() + index * size_of::<ImageDataDirectory>())
            as u64
    }

    /// The bytes data directory `index` points at (none when it is empty or absent).
    /// The debug directory, its entries' file offsets of their data (`PointerToRawData`)
    /// moved as `moved` moves file offsets, and placed where `moved` puts it; `None` when
    /// the image has none.
    pub(super) fn debug_directory_moved(
        &self,
        moved: impl Fn(u64) -> u64,
    ) -> Result<Option<Patch>> {
        let Some((at, bytes)) =
            self.directory(IMAGE_DIRECTORY_ENTRY_DEBUG, "the debug directory")?
        else {
            return Ok(None);
        };
        let mut entries = records::<ImageDebugDirectory>(bytes).to_vec();
        for entry in &mut entries {
            let offset = entry.pointer_to_raw_data.get(LE);
            if offset != 0 {
                entry
                    .pointer_to_raw_data
                    .set(LE, field32(moved(u64::from(offset))));
            }
        }
        Ok(Some(Patch {
            at: moved(at as u64),
            bytes: pod::bytes_of_slice(&entries).to_vec(),
        }))
    }

    pub(super) fn directory(&self, index: usize, what: &str) -> Result<Option<(usize, &'a [u8])>> {
        let Some(d) = self.directories.get(index) else {
            return Ok(None);
        };
        let (rva, size) = (d.virtual_address.get(LE), d.size.get(LE));
        if size == 0 {
            return Ok(None);
        }
        let at = self
            .offset_of_rva(u64::from(rva), u64::from(size))
            .ok_or_else(|| {
                Error::new(
                    self.directory_at(index),
                    ErrorKind::OutsideFile { what: what.into() },
                )
            })?;
        let data = self.file.get(at..at + size as usize).unwrap_or_default();
        Ok(Some((at, data)))
    }

    /// Refuses an image where another section's raw data or a data directory lies inside
    /// section `index` (whose bytes move), or which is signed (any change voids the signature).
    pub(super) fn check_nothing_else_inside(
        &self,
        index: usize,
        section: &Section<'_>,
    ) -> Result<()> {
        let raw = self.header_of(index).size_of_raw_data.get(LE);
        let file_range = section.offset..section.offset + u64::from(raw);
        for (i, s) in self.sections.iter().enumerate() {
            let (start, size) = (
                u64::from(s.pointer_to_raw_data.get(LE)),
                u64::from(s.size_of_raw_data.get(LE)),
            );
            if i != index && size != 0 && start < file_range.end && start + size > file_range.start
            {
                return Err(Error::new(
                    self.header_at(i),
                    ErrorKind::InsideMovingSection {
                        what: format!("the raw data of {}", section_name(self.name(s))),
                        section: section.name.to_string(),
                    },
                ));
            }
        }
        let memory = Self::memory_of(self.header_of(index));
        for (i, d) in self.directories.iter().enumerate() {
            let (rva, size) = (u64::from(d.virtual_address.get(LE)), d.size.get(LE));
            if size == 0 {
                continue;
            }
            if i == IMAGE_DIRECTORY_ENTRY_SECURITY {
                return Err(Error::new(self.directory_at(i), ErrorKind::SignedImage));
            }
            if rva < memory.end && rva + u64::from(size) > memory.start {
                return Err(Error::new(
                    self.directory_at(i),
                    ErrorKind::InsideMovingSection {
                        what: format!("data directory {i}"),
                        section: section.name.to_string(),
                    },
                ));
            }
        }
        Ok(())
    }

    /// Every place that holds an address inside `section` (at index `index`): the places of
    /// the 64-bit base relocations that hold one, and the HIP wrappers' pointers.
    pub(super) fn pointers_into(
        &self,
        section: &Section<'_>,
        index: usize,
    ) -> Result<Vec<Pointer>> {
        let mut pointers = self.relocated_pointers(section, index)?;
        if let Some(wrappers) = self.section_named(&HIP_WRAPPERS) {
            let (offset, bytes) = self.raw_data(wrappers)?;
            const ENTRY: usize = size_of::<Wrapper>();
            for (k, w) in records::<Wrapper>(bytes).iter().enumerate() {
                let at = (offset + k * ENTRY + offset_of!(Wrapper, binary)) as u64;
                let target = w.binary.get(LE);
                if w.magic.get(LE) == HIP_WRAPPER_MAGIC
                    && section.holds(target)
                    && !pointers.iter().any(|p| p.at == at)
                {
                    pointers.push(Pointer { at, target });
                }
            }
        }
        Ok(pointers)
    }

    /// The places of the 64-bit base relocations that hold an address inside `section`. No
    /// base relocation may lie inside the section, whose bytes move.
    pub(super) fn relocated_pointers(
        &self,
        section: &Section<'_>,
        index: usize,
    ) -> Result<Vec<Pointer>> {
        let Some((at, table)) =
            self.directory(IMAGE_DIRECTORY_ENTRY_BASERELOC, "the base relocation table")?
        else {
            return Ok(Vec::new());
        };
        let memory = Self::memory_of(self.header_of(index));
        let mut pointers = Vec::new();
        let mut pos = 0usize;
        while pos + size_of::<ImageBaseRelocation>() <= table.len() {
            let (block, _) =
                pod::from_bytes::<ImageBaseRelocation>(table.get(pos..).unwrap_or_default())
                    .expect("the size was checked");
            let size = block.size_of_block.get(LE) as usize;
            if size < size_of::<ImageBaseRelocation>() || size > table.len() - pos {
                return Err(Error::new(
                    (at + pos + offset_of!(ImageBaseRelocation, size_of_block)) as u64,
                    ErrorKind::InconsistentImage {
                        what: format!("a base relocation block of {size:#x} bytes"),
                    },
                ));
            }
            let page = u64::from(block.virtual_address.get(LE));
            let entries = table
                .get(pos + size_of::<ImageBaseRelocation>()..pos + size)
                .unwrap_or_default();
            for (k, entry) in records::<U16<LE>>(entries).iter().enumerate() {
                let entry = entry.get(LE);
                let kind = entry >> 12;
                if kind == IMAGE_REL_BASED_ABSOLUTE.0 {
                    continue;
                }
                let place = page + u64::from(entry & 0xfff);
                let entry_at = (at + pos + size_of::<ImageBaseRelocation>() + 2 * k) as u64;
                if memory.contains(&place) {
                    return Err(Error::new(
                        entry_at,
                        ErrorKind::InsideMovingSection {
                            what: format!("the place of a base relocation ({place:#x})"),
                            section: section.name.to_string(),
                        },
                    ));
                }
                if kind != IMAGE_REL_BASED_DIR64.0 {
                    continue;
                }
                let Some(offset) = self.offset_of_rva(place, 8) else {
                    continue;
                };
                let value = u64::from_le_bytes(
                    *self
                        .file
                        .get(offset..)
                        .and_then(<[u8]>::first_chunk::<8>)
                        .expect("eight bytes in the file, checked by offset_of_rva"),
                );
                if section.holds(value) {
                    pointers.push(Pointer {
                        at: offset as u64,
                        target: value,
                    });
                }
            }
            pos += size;
        }
        Ok(pointers)
    }

    /// Rewrites the image when the packed bundles fit `section` (at index `fatbin`): they go
    /// to its start, the whole blocks of raw data freed go, and what follows moves back.
    fn rewrite_in_place(
        &self,
        section: &Section<'_>,
        fatbin: usize,
        packing: Packing,
        pointers: &[Pointer],
    ) -> Result<NewProgram<'a>> {
        let pointers = packing.retarget(section, pointers, section.address)?;
        let raw = u64::from(self.header_of(fatbin).size_of_raw_data.get(LE));
        let align = u64::from(self.nt.optional_header.file_alignment.get(LE));
        let packed = packing.packed.len();
        let cut = Cut::between(
            section.offset + packed.next_multiple_of(align),
            section.offset + raw,
            align,
        );
        let mut headers = self.new_headers(fatbin, cut, 0)?;
        let fat = headers.section_mut(fatbin);
        fat.size_of_raw_data.set(LE, field32(raw - cut.len));
        if raw == cut.len {
            fat.pointer_to_raw_data.set(LE, 0);
        }
        self.shrink_image(&mut headers, fatbin, packed);
        let patches = self.patches(headers, cut, &pointers)?;
        Ok(NewProgram {
            rest: plan::with_cut(self.file, section, cut, patches)?,
            packed: packing.packed,
            holes: packing.holes,
            packed_at: section.offset,
            also: Vec::new(),
        })
    }

    /// Where a section added after every other goes: its RVA, past the last section in
    /// memory on a `SectionAlignment` boundary, and its raw data's file offset, at the end of
    /// the file once `cut_len` bytes went, on a `FileAlignment` boundary.
    pub(super) fn new_last_section(&self, cut_len: u64) -> (u64, u64) {
        let optional = &self.nt.optional_header;
        let file_align = u64::from(optional.file_alignment.get(LE));
        let section_align = u64::from(optional.section_alignment.get(LE));
        let rva = self
            .sections
            .iter()
            .map(|s| Self::memory_of(s).end.next_multiple_of(section_align))
            .max()
            .unwrap_or(section_align);
        let offset = (self.file.len() as u64 - cut_len).next_multiple_of(file_align);
        (rva, offset)
    }

    /// Rewrites the image when the packed bundles outgrew `section` (at index `fatbin`): they
    /// go to a new section after the last one, every pointer follows them, and the emptied
    /// section keeps its memory range with no raw data.
    fn rewrite_grown(
        &self,
        section: &Section<'_>,
        fatbin: usize,
        packing: Packing,
        pointers: &[Pointer],
    ) -> Result<NewProgram<'a>> {
        let optional = &self.nt.optional_header;
        let (file_align, section_align) = (
            u64::from(optional.file_alignment.get(LE)),
            u64::from(optional.section_alignment.get(LE)),
        );
        let old = self.header_of(fatbin);
        let raw = u64::from(old.size_of_raw_data.get(LE));
        let cut = Cut::between(section.offset, section.offset + raw, file_align);
        let packed = packing.packed.len();
        let (rva, offset) = self.new_last_section(cut.len);
        let new_raw = packed.next_multiple_of(file_align);
        let image_size = (rva + packed).next_multiple_of(section_align);
        if image_size > u64::from(u32::MAX) || offset + new_raw > u64::from(u32::MAX) {
            let at = self.nt_at + offset_of!(ImageNtHeaders64, optional_header);
            return Err(Error::new(
                (at + offset_of!(ImageOptionalHeader64, size_of_image)) as u64,
                ErrorKind::InconsistentImage {
                    what: format!("the image would pass 4 GiB with {packed:#x} bytes of bundles"),
                },
            ));
        }
        let pointers = packing.retarget(section, pointers, self.image_base() + rva)?;
        let mut headers = self.new_headers(fatbin, cut, 1)?;
        let mut added = *old;
        // All under 4 GiB: the image and its raw data were checked to stay there.
        added.virtual_size.set(LE, field32(packed));
        added.virtual_address.set(LE, field32(rva));
        added.size_of_raw_data.set(LE, field32(new_raw));
        added
            .pointer_to_raw_data
            .set(LE, if new_raw == 0 { 0 } else { field32(offset) });
        let emptied = headers.section_mut(fatbin);
        emptied.name = EMPTIED;
        emptied.size_of_raw_data.set(LE, field32(raw - cut.len));
        if raw == cut.len {
            emptied.pointer_to_raw_data.set(LE, 0);
        }
        headers.sections.push(added);
        let nt = &mut headers.nt;
        let count = nt.file_header.number_of_sections.get(LE) + 1;
        nt.file_header.number_of_sections.set(LE, count);
        let optional = &mut nt.optional_header;
        optional
            .size_of_image
            .set(LE, field32(image_size).max(optional.size_of_image.get(LE)));
        if old.characteristics.get(LE).0 & IMAGE_SCN_CNT_INITIALIZED_DATA.0 != 0 {
            let initialized = optional.size_of_initialized_data.get(LE);
            optional
                .size_of_initialized_data
                .set(LE, initialized.wrapping_add(field32(new_raw)));
        }
        let patches = self.patches(headers, cut, &pointers)?;
        let mut rest = plan::with_cut(self.file, section, cut, patches)?;
        rest.size = offset + new_raw;
        Ok(NewProgram {
            rest,
            packed: packing.packed,
            holes: packing.holes,
            packed_at: offset,
            also: Vec::new(),
        })
    }

    /// Shrinks the image in `headers` when section `fatbin` now holds `packed` bytes and no
    /// section but the base relocations (`.reloc`, which nothing but its directory entry
    /// points into) follows it in memory: the section's memory ends with its bundles, the
    /// relocations move down after it, and `SizeOfImage` loses what the image no longer maps.
    /// Anything else after it keeps every RVA, and the image its size.
    fn shrink_image(&self, headers: &mut Headers, fatbin: usize, packed: u64) {
        let align = u64::from(self.nt.optional_header.section_alignment.get(LE));
        let start = u64::from(self.header_of(fatbin).virtual_address.get(LE));
        let after: Vec<usize> = (self.sections.iter().enumerate())
            .filter(|(_, s)| u64::from(s.virtual_address.get(LE)) > start)
            .map(|(k, _)| k)
            .collect();
        let relocations = self
            .directories
            .get(IMAGE_DIRECTORY_ENTRY_BASERELOC)
            .map(|d| (d.virtual_address.get(LE), d.size.get(LE)));
        let moved = match after.as_slice() {
            [] => None,
            [reloc] => {
                let memory = Self::memory_of(self.header_of(*reloc));
                // The relocation table, and nothing else, lives there.
                match relocations {
                    Some((rva, size))
                        if u64::from(rva) == memory.start
                            && u64::from(rva) + u64::from(size) == memory.end =>
                    {
                        Some(*reloc)
                    }
                    _ => return,
                }
            }
            _ => return,
        };
        let end = (start + packed.max(1)).next_multiple_of(align);
        let image_end = match moved {
            Some(reloc) => {
                let memory = Self::memory_of(self.header_of(reloc));
                (end + (memory.end - memory.start)).next_multiple_of(align)
            }
            None => end,
        };
        let optional = &mut headers.nt.optional_header;
        if image_end >= u64::from(optional.size_of_image.get(LE)) {
            return;
        }
        // Smaller than the image's 32-bit size, which it replaces.
        optional.size_of_image.set(LE, field32(image_end));
        headers
            .section_mut(fatbin)
            .virtual_size
            .set(LE, field32(packed.max(1)));
        if let Some(reloc) = moved {
            headers
                .section_mut(reloc)
                .virtual_address
                .set(LE, field32(end));
            headers.relocations_at = Some(field32(end));
        }
    }

    /// The headers once `cut` bytes of the raw data of section `fatbin` go and `added`
    /// section headers are to follow the table: raw data after the cut moves back, and so do
    /// the COFF symbol table; `SizeOfInitializedData` loses what was cut.
    pub(super) fn new_headers(&self, fatbin: usize, cut: Cut, added: usize) -> Result<Headers> {
        if added > 0 {
            self.check_room_for(added, section_name(self.name(self.header_of(fatbin))))?;
        }
        let mut nt = *self.nt;
        nt.optional_header.check_sum.set(LE, 0);
        let symbols = nt.file_header.pointer_to_symbol_table.get(LE);
        if symbols != 0 {
            nt.file_header
                .pointer_to_symbol_table
                .set(LE, field32(cut.moved(u64::from(symbols))));
        }
        if self.header_of(fatbin).characteristics.get(LE).0 & IMAGE_SCN_CNT_INITIALIZED_DATA.0 != 0
        {
            let initialized = nt.optional_header.size_of_initialized_data.get(LE);
            nt.optional_header
                .size_of_initialized_data
                .set(LE, initialized.saturating_sub(field32(cut.len)));
        }
        let sections = self
            .sections
            .iter()
            .map(|s| {
                let mut s = *s;
                for field in [&mut s.pointer_to_raw_data, &mut s.pointer_to_relocations] {
                    let offset = field.get(LE);
                    if offset != 0 {
                        field.set(LE, field32(cut.moved(u64::from(offset))));
                    }
                }
                s
            })
            .collect();
        Ok(Headers {
            nt,
            sections,
            relocations_at: None,
        })
    }

    /// Refuses to add `added` section headers when the bytes after the table are not free:
    /// past the headers' size, or taken by the first section's raw data or anything else.
    pub(super) fn check_room_for(&self, added: usize, section: String) -> Result<()> {
        let end = self.table_at + self.sections.len() * SECTION_HEADER;
        let new_end = end + added * SECTION_HEADER;
        let first_data = self
            .sections
            .iter()
            .filter(|s| s.size_of_raw_data.get(LE) != 0)
            .map(|s| s.pointer_to_raw_data.get(LE) as usize)
            .min()
            .unwrap_or(usize::MAX);
        let headers = self.nt.optional_header.size_of_headers.get(LE) as usize;
        let free = new_end <= headers.min(first_data)
            && self
                .file
                .get(end..new_end)
                .is_some_and(|b| b.iter().all(|&b| b == 0));
        if !free {
            return Err(Error::new(
                end as u64,
                ErrorKind::NoRoomForSectionHeader { section },
            ));
        }
        Ok(())
    }

    /// What to lay over the moved file: the headers (up to the end of the section table), the
    /// debug directory's file offsets, and the pointers.
    pub(super) fn patches(
        &self,
        headers: Headers,
        cut: Cut,
        pointers: &[Pointer],
    ) -> Result<Vec<Patch>> {
        let table_end = self.table_at + headers.sections.len() * SECTION_HEADER;
        let mut head = self.file.get(..table_end).unwrap_or(self.file).to_vec();
        head.resize(table_end, 0);
        let nt_end = self.nt_at + size_of::<ImageNtHeaders64>();
        // Both were read from these places, before the end of the table.
        let nt = head
            .get_mut(self.nt_at..nt_end)
            .expect("the headers were read there");
        nt.copy_from_slice(pod::bytes_of(&headers.nt));
        let table = head
            .get_mut(self.table_at..)
            .expect("the table was read there");
        table.copy_from_slice(pod::bytes_of_slice(&headers.sections));
        if let Some(rva) = headers.relocations_at {
            let dirs_at = self.nt_at + size_of::<ImageNtHeaders64>();
            let entry = dirs_at + IMAGE_DIRECTORY_ENTRY_BASERELOC * size_of::<ImageDataDirectory>();
            if let Some(field) = head.get_mut(entry..entry + 4) {
                field.copy_from_slice(&rva.to_le_bytes());
            }
        }
        let mut patches = vec![Patch { at: 0, bytes: head }];
        patches.extend(self.debug_directory_moved(|at| cut.moved(at))?);
        patches.extend(pointers.iter().map(|p| Patch {
            at: cut.moved(p.at),
            bytes: p.target.to_le_bytes().to_vec(),
        }));
        Ok(patches)
    }
}

/// The NT headers and section table of the new image.
pub(super) struct Headers {
    pub(super) nt: ImageNtHeaders64,
    pub(super) sections: Vec<ImageSectionHeader>,
    /// The new RVA of the base relocation table, when it moved.
    pub(super) relocations_at: Option<u32>,
}

impl Headers {
    /// The header of section `index`, an index found among the image's sections.
    pub(super) fn section_mut(&mut self, index: usize) -> &mut ImageSectionHeader {
        self.sections
            .get_mut(index)
            .expect("an index found among the sections")
    }
}

/// A section's name for messages.
pub(super) fn section_name(name: &[u8]) -> String {
    String::from_utf8_lossy(name).into_owned()
}

/// The table of `count` records of `T` at `offset`, when it lies in the file.
fn table<T: Pod>(file: &[u8], offset: usize, count: usize) -> Option<&[T]> {
    offset
        .checked_add(count.checked_mul(size_of::<T>())?)
        .filter(|&end| end <= file.len())?;
    pod::slice_from_bytes(file.get(offset..)?, count)
        .ok()
        .map(|(t, _)| t)
}

/// Sets the PE checksum of the new image (its field, at `at`, was written as zero in the
/// headers' piece, which starts the file): the sum of every piece, the zeros between them
/// adding nothing.
pub(super) fn set_checksum(program: &mut NewProgram<'_>, at: u64) {
    let mut sum: u64 = program
        .rest
        .pieces
        .iter()
        .map(|p| word_sum_released(p.offset, &p.data, &crate::io::release_mapped))
        .sum();
    let packed = &program.packed;
    let release_packed = |chunk: &[u8]| {
        if let Some(input) = packed.input() {
            input.release(chunk);
        }
    };
    sum += word_sum_released(program.packed_at, packed.bytes(), &release_packed);
    let value = finish_checksum(sum, program.size());
    let head = program
        .rest
        .pieces
        .iter_mut()
        .find(|p| p.offset == 0)
        .expect("the headers' piece starts the file");
    let at = usize::try_from(at).expect("the checksum field is in the headers");
    let field = head.data.to_mut().get_mut(at..at + 4);
    field
        .expect("the checksum field is in the headers")
        .copy_from_slice(&value.to_le_bytes());
}

/// The sum of the little-endian 16-bit words of `bytes`, found at `offset` in the file (a
/// byte at an odd offset is the high half of its word). Carries are folded later: the sum is
/// one's complement arithmetic, whatever the order of the words.
fn word_sum(offset: u64, bytes: &[u8]) -> u64 {
    let mut sum = 0u64;
    let mut rest = bytes;
    if offset % 2 == 1 {
        if let Some((&first, after)) = rest.split_first() {
            sum += u64::from(first) << 8;
            rest = after;
        }
    }
    let mut words = rest.chunks_exact(2);
    for word in &mut words {
        if let [low, high] = *word {
            sum += u64::from(u16::from_le_bytes([low, high]));
        }
    }
    if let [last] = words.remainder() {
        sum += u64::from(*last);
    }
    sum
}

/// [`word_sum`] of a large stretch, a few MiB at a time, each handed to `release` once summed
/// (to give back its pages when it is a slice of a mapped file): the checksum of a large image
/// reads it all once, and should not hold it all.
fn word_sum_released(offset: u64, bytes: &[u8], release: &dyn Fn(&[u8])) -> u64 {
    const CHUNK: usize = 1 << 22;
    bytes
        .chunks(CHUNK)
        .enumerate()
        .map(|(k, chunk)| {
            let sum = word_sum(offset + (k * CHUNK) as u64, chunk);
            release(chunk);
            sum
        })
        .sum()
}

/// The PE checksum from the sum of the words of a file of `size` bytes: the sum folded to 16
/// bits, plus the size.
fn finish_checksum(mut sum: u64, size: u64) -> u32 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    // Folded under 0x10000; the size counts modulo 2^32, as the format sums it.
    field32(sum).wrapping_add(field32(size))
}

/// `value` in a 32-bit field of the PE format. Callers write values checked to be under
/// 4 GiB, or no larger than the 32-bit field they came from; the checksum sums modulo 2^32.
#[allow(clippy::cast_possible_truncation)] // See above.
pub(super) fn field32(value: u64) -> u32 {
    value as u32
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::cast_possible_truncation)]
mod tests {
    use super::*;

    #[test]
    fn word_sums_of_pieces_add_up_to_the_whole() {
        let bytes: Vec<u8> = (0..=255u8).cycle().take(1001).collect();
        let whole = word_sum(0, &bytes);
        let parts = word_sum(0, &bytes[..333]) + word_sum(333, &bytes[333..]);
        assert_eq!(finish_checksum(whole, 1001), finish_checksum(parts, 1001));
    }

    #[test]
    fn the_checksum_folds_carries_and_adds_the_size() {
        assert_eq!(finish_checksum(0x1_fffe, 4), 0xffff + 4);
        assert_eq!(finish_checksum(0x1234, 0x10), 0x1244);
    }
}
