//! Every device image in a file, wherever it lies: clang offload bundles (plain and
//! compressed) and offload binaries, in the sections of ELF, COFF, PE and Mach-O files (and
//! universal binaries), in archives, in bare files, and nested in one another.
//!
//! Known places are read by name or type: `.hip_fatbin` (PE: `.hip_fat`), `.llvm.offloading`
//! (and ELF sections of type `SHT_LLVM_OFFLOADING`), `__CLANG_OFFLOAD_BUNDLE__<ID>` sections,
//! `.nv_fatbin` and `__nv_relfatbin` (CUDA fat binaries, each entry a cubin or PTX). The
//! other sections that can hold data a program embeds (`.rodata`, `.data`, sections of its
//! own) are searched for the magics of bundles, compressed bundles and offload binaries, so
//! that sections a linker merged from many translation units are found whatever their name;
//! machine code, symbol and string tables, relocations, notes, unwind and debug information
//! are not (see [`sections`]). An ELF file without section headers has its loadable
//! segments searched instead. A file in no object format is read only when it starts with a
//! container, or with a bare device image, after which the rest of it is searched as data is.
//!
//! Only headers are read: uncompressed images are handed over as slices of the file, found
//! by following each container's sizes and skipping the zero padding between them.
//! Compressed bundles are inflated, since their entries are inside. The magic search reads a
//! window at a time and gives back the pages of the windows it passed (they stay in the page
//! cache), so a search of a large section holds no more than a window of it.

use std::path::Path;

use object::read::elf::{ElfFile, FileHeader, ProgramHeader, SectionHeader};
use object::read::macho::{MachOFatFile32, MachOFatFile64};
use object::{FileKind, Object, ObjectSection};

use crate::error::{Error, Result};
use crate::format::bare::{BareImage, Embedded};
use crate::format::container::{Consecutive, Container, Contents, Listed, ListedBinary};
use crate::format::image_target::ImageTarget;
use crate::format::search::{CONTAINER_MAGICS, ELF_MAGIC, MAGICS};
use crate::host::archive::read_members;
use crate::host::package::{self, PackageMember};
use crate::host::BUNDLE_SECTION_PREFIX;

mod magics;
mod members;
pub mod sections;

use magics::MagicSearch;
pub use members::{scan_with_archives, ArchiveVisit};
use sections::Unsearched;

/// How deep containers may nest.
const MAX_DEPTH: usize = 8;

/// The ELF section type of `.llvm.offloading`.
pub const SHT_LLVM_OFFLOADING: u32 = 0x6fff_4c0b;

/// Where to look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Places {
    /// Everywhere: bundles, compressed bundles, offload binaries and CUDA fat binaries, in
    /// known sections and, by their magics, in any other; containers in containers too.
    Everywhere,
    /// Only offload binaries, only where LLVM 19's `extractOffloadBinaries` looks: ELF
    /// sections of type `SHT_LLVM_OFFLOADING`, COFF sections named `.llvm.offloading*`,
    /// Mach-O `__LLVM,__offloading`, archive members, bare offload binaries. Their images are
    /// reported as they are, even when they hold containers.
    OffloadBinaries,
}

pub use crate::format::container::{Origin, Reading};

/// One device image found in a file.
#[derive(Debug, Clone, Copy)]
pub struct DeviceImage<'a> {
    /// The archive members (or universal binary slices) that hold it, outermost first.
    pub members: &'a [String],
    /// The section that holds it, if any.
    pub section: Option<&'a str>,
    /// Its byte offset in the file; `None` when it is not stored as such (inflated from a
    /// compressed container, or read from the member file of a thin archive).
    pub offset: Option<u64>,
    /// Whether it was stored compressed.
    pub compressed: bool,
    /// The byte offset in the file of the bytes its record stores (`data`), even when they
    /// are a compressed stream of the record's own (a CUDA entry's); `None` when they are not
    /// in the file as such.
    pub stored_offset: Option<u64>,
    /// The record that holds it.
    pub origin: Origin<'a>,
    /// What it is for: producer, triple and target ID, read once from where it is stored.
    pub target: &'a ImageTarget,
    /// The translation unit it belongs to, as a number unique within the scan: the images of
    /// one bundle (the code one source file was compiled to), of one section's offload
    /// binaries, or of one object's bundle sections share it. A device loads, per unit, its
    /// native code if there is any, else a generic target's, else SPIR-V.
    pub unit: usize,
    /// Its bytes; empty when they were not inflated (see [`DeviceImage::stream`]).
    pub data: &'a [u8],
    /// Its size in bytes (for a CUDA entry stored compressed, whose `data` is its stream:
    /// what it inflates to).
    pub size: u64,
    /// Where it lies in a compressed bundle's stream, when a scan that reads only headers
    /// ([`Reading::Headers`]) did not inflate it; `None` when its bytes are `data`.
    pub stream: Option<InStream<'a>>,
    /// The compressed container the scan inflated whole to find it (a small one, or one
    /// whose stream holds no bundle at its start), the innermost; `None` when it was not
    /// inflated so.
    pub inflated: Option<InflatedWhole>,
    /// Whether it is embedded as data: found by its magic in a place that holds no device
    /// code by its name or type (a program's read-only data, `hipModuleLoadData`'s or
    /// `cuModuleLoadData`'s input), or inside a container found so. No runtime registers it:
    /// the program loads it itself, and a rewrite keeps it whole.
    pub embedded: bool,
    /// The package member that holds it, when the file is a package (a wheel, a Debian
    /// package, a tarball): its offsets, members and sections are the member's, read as a
    /// file of its own.
    pub package: Option<&'a PackageMember>,
}

/// A compressed container a scan inflated whole: which one, and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InflatedWhole {
    /// A number unique within the scan: the images of one container share it.
    pub number: usize,
    /// What the container is: a compressed bundle or a compressed offload binary.
    pub container: Container,
    /// The container's size as stored: header and stream.
    pub stored: u64,
    /// The size of what it inflated to.
    pub size: u64,
}

/// Where an image that was not inflated lies: in which compressed container (a compressed
/// bundle or offload binary), and where in what its stream inflates to.
#[derive(Debug, Clone, Copy)]
pub struct InStream<'a> {
    /// The compressed container, header and payload, as stored.
    pub container: &'a [u8],
    /// The container's byte offset in the file; `None` when it is not stored as such
    /// (itself inside a compressed container, or in the member file of a thin archive).
    pub offset: Option<u64>,
    /// Where the image starts in the inflated stream.
    pub start: u64,
    /// Where it ends in the inflated stream.
    pub end: u64,
}

/// Where the scan is, for error messages and for the images it reports.
#[derive(Clone, Copy)]
struct Place<'s> {
    members: &'s [String],
    section: Option<&'s str>,
    /// Whether the place is one that holds device code by its name or type: damage there is
    /// reported; elsewhere a magic that does not parse is taken as chance bytes.
    known: bool,
    /// Whether the place is data searched by magic, or inside a container found there (see
    /// [`DeviceImage::embedded`]).
    embedded: bool,
    compressed: bool,
    depth: usize,
    /// The translation unit images found here belong to (see [`DeviceImage::unit`]).
    unit: usize,
    /// The compressed container inflated whole that holds the place, the innermost.
    inflated: Option<InflatedWhole>,
}

struct Scan<'f, 'v> {
    path: &'f Path,
    file: &'f [u8],
    limit: u64,
    reading: Reading,
    places: Places,
    visit: &'v mut dyn FnMut(&DeviceImage<'_>),
    problems: Vec<Error>,
    /// The last translation unit number given out.
    units: usize,
    /// The last number given to a compressed container inflated whole.
    inflations: usize,
    /// The bytes of the sections (or segments) read, for the log.
    searched: u64,
    /// The bytes of the sections not searched (see [`sections`]), for the log.
    unsearched: u64,
    /// How many more section headers ELF files met as data may have read (see
    /// [`Scan::embedded_bare`]).
    header_budget: u64,
    /// Where the containers read inside other containers start, a set per buffer being read
    /// (the file, an archive member, an inflated container: its bytes live as long as its
    /// set). The
    /// bytes of a nested container are read once however many entries point at them, so
    /// that the work and the listing follow the input's bytes (see [`Scan::container`]).
    nested_starts: Vec<std::collections::HashSet<usize>>,
    /// The package member scanned, when the file is one.
    package: Option<&'f PackageMember>,
    /// How many package members were scanned, by this scan and those of its members.
    package_members: usize,
    /// What the packages of the file may still inflate (see [`package::Budget`]).
    package_budget: &'f package::Budget,
    /// Who is handed the package members that are `.kpack` archives, if anyone.
    archives: Option<&'f ArchiveVisit<'f>>,
}

/// The section headers ELF files met as data may have read, per byte of the file and at
/// least: a code object or cubin's headers take 64 bytes each, so the images a file holds
/// never need more; ELF magic bytes that only look like headers cannot make a scan read more.
const HEADERS_PER_BYTE: u64 = 1;
const MIN_HEADER_BUDGET: u64 = 1 << 20;

impl Scan<'_, '_> {
    /// `at`, as the place of a new translation unit.
    fn new_unit<'p>(&mut self, at: Place<'p>) -> Place<'p> {
        self.units += 1;
        Place {
            unit: self.units,
            ..at
        }
    }

    fn offset_of(&self, part: &[u8]) -> Option<u64> {
        crate::io::slice::offset_within(self.file, part).map(|offset| offset as u64)
    }

    /// [`Scan::context`] followed by `: `, or nothing when there is no context.
    fn context_prefix(at: &Place<'_>) -> String {
        let context = Self::context(at);
        if context.is_empty() {
            context
        } else {
            format!("{context}: ")
        }
    }

    fn context(at: &Place<'_>) -> String {
        let mut parts: Vec<String> = at.members.iter().map(|m| format!("member '{m}'")).collect();
        if let Some(section) = at.section {
            parts.push(format!("section '{section}'"));
        }
        if at.compressed {
            parts.push("inside a compressed bundle".into());
        }
        parts.join(", ")
    }

    /// A format error at offset `within` of `region`, with the place and the absolute offset.
    fn damage(&self, at: &Place<'_>, region: &[u8], e: crate::format::Error) -> Error {
        let e = match self.offset_of(region) {
            Some(base) if !at.compressed => e.rebased(base),
            _ => e,
        };
        let context = Self::context(at);
        if context.is_empty() {
            Error::format(self.path, e)
        } else {
            Error::format_in(self.path, context, e)
        }
    }

    fn emit(&mut self, at: &Place<'_>, origin: Origin<'_>, data: &[u8]) {
        let stored_offset = if at.compressed {
            None
        } else {
            self.offset_of(data)
        };
        let compressed = at.compressed || origin.stored_compressed();
        let offset = stored_offset.filter(|_| !compressed);
        let target = origin.target();
        let image = DeviceImage {
            members: at.members,
            section: at.section,
            offset,
            compressed,
            stored_offset,
            origin,
            target: &target,
            unit: at.unit,
            data,
            size: origin.image_size(data),
            stream: None,
            inflated: at.inflated,
            embedded: at.embedded,
            package: self.package,
        };
        (self.visit)(&image);
    }

    /// Reports the entries of a compressed bundle read from its header alone: one
    /// translation unit, stored compressed, their bytes not at hand.
    fn emit_listed(&mut self, at: Place<'_>, listed: &Listed<'_>, whole: &[u8]) {
        let bundle = whole
            .get(..usize::try_from(listed.compressed.size()).unwrap_or(usize::MAX))
            .unwrap_or(whole);
        let offset = if at.compressed {
            None
        } else {
            self.offset_of(bundle)
        };
        let at = self.new_unit(Place {
            compressed: true,
            depth: at.depth + 1,
            ..at
        });
        for entry in &listed.entries {
            let stream = InStream {
                container: bundle,
                offset,
                start: entry.offset,
                end: entry.offset + entry.size,
            };
            self.emit_streamed(&at, Origin::BundleEntry(&entry.id), stream);
        }
    }

    /// Reports the image `origin` stores in a compressed container's stream at `stream`, its
    /// bytes not at hand.
    fn emit_streamed(&mut self, at: &Place<'_>, origin: Origin<'_>, stream: InStream<'_>) {
        let target = origin.target();
        let image = DeviceImage {
            members: at.members,
            section: at.section,
            offset: None,
            compressed: true,
            stored_offset: None,
            origin,
            target: &target,
            unit: at.unit,
            data: &[],
            size: stream.end - stream.start,
            stream: Some(stream),
            inflated: None,
            embedded: at.embedded,
            package: self.package,
        };
        (self.visit)(&image);
    }

    /// Reports the images of a compressed offload binary read from its head alone: stored
    /// compressed, their bytes not at hand. Offload binaries side by side are one translation
    /// unit, a compressed one among them too.
    fn emit_listed_binary(
        &mut self,
        at: Place<'_>,
        listed: &ListedBinary<'_>,
    ) -> std::result::Result<(), crate::format::Error> {
        let offset = if at.compressed {
            None
        } else {
            self.offset_of(listed.stored)
        };
        let at = Place {
            compressed: true,
            depth: at.depth + 1,
            ..at
        };
        for entry in &listed.head.entries()? {
            let stream = InStream {
                container: listed.stored,
                offset,
                start: entry.image_offset,
                end: entry.image_offset + entry.image_size,
            };
            self.emit_streamed(&at, Origin::OffloadImage(entry), stream);
        }
        Ok(())
    }

    /// Scans one buffer: the file, an archive member, a slice of a universal binary, an
    /// image that is itself a container. The nested containers it holds are its own: a
    /// member read from a file of its own may lie where one read before it did.
    fn buffer(&mut self, data: &[u8], at: Place<'_>) -> Result<()> {
        self.nested_starts.push(std::collections::HashSet::new());
        let read = self.buffer_contents(data, at);
        self.nested_starts.pop();
        read
    }

    /// [`Scan::buffer`], within the buffer's set of nested containers read.
    fn buffer_contents(&mut self, data: &[u8], at: Place<'_>) -> Result<()> {
        if at.depth > MAX_DEPTH {
            return Err(Error::file(
                self.path,
                format!(
                    "{}: containers nest more than {MAX_DEPTH} deep",
                    Self::context(&at)
                ),
            ));
        }
        let at = self.new_unit(at);
        let known = Place { known: true, ..at };
        match (self.places, Container::at_start(data)) {
            (Places::OffloadBinaries, Some(Container::OffloadBinary)) => {
                return self.region(data, known)
            }
            (Places::OffloadBinaries, _) => {}
            (Places::Everywhere, None) => {
                if let Some(kind) = package::kind(data) {
                    return self.package(data, kind, at);
                }
                // A bare device image (a file, an archive member) is the device image itself;
                // what follows it (images put one after another, a bundle after a code
                // object) is searched as data is.
                if let Some(image) = BareImage::parse(data) {
                    self.emit(&known, Origin::Bare(&image), image.bytes);
                    let rest = data.get(image.bytes.len()..).unwrap_or_default();
                    let after = Place { known: false, ..at };
                    return self.region(rest, after);
                }
            }
            (Places::Everywhere, Some(container)) => {
                return match container.consecutive(data) {
                    Some(found) => self.consecutive(found, data, known),
                    None => self.region(data, known),
                }
            }
        }
        match FileKind::parse(data) {
            Ok(FileKind::Archive) => {
                let members = read_members(self.path, data)?;
                for member in &members {
                    let mut path = at.members.to_vec();
                    path.push(member.name.clone());
                    let inner = Place {
                        members: &path,
                        section: None,
                        known: false,
                        embedded: at.embedded,
                        compressed: at.compressed,
                        depth: at.depth + 1,
                        unit: at.unit,
                        inflated: at.inflated,
                    };
                    self.buffer(&member.data, inner)?;
                }
                Ok(())
            }
            Ok(FileKind::MachOFat32) => match MachOFatFile32::parse(data) {
                Ok(fat) => self.slices(fat_slices(fat.arches(), data), at),
                Err(e) => Err(Error::file(self.path, e.to_string())),
            },
            Ok(FileKind::MachOFat64) => match MachOFatFile64::parse(data) {
                Ok(fat) => self.slices(fat_slices(fat.arches(), data), at),
                Err(e) => Err(Error::file(self.path, e.to_string())),
            },
            Ok(FileKind::Elf32) => {
                match ElfFile::<object::elf::FileHeader32<object::Endianness>>::parse(data) {
                    Ok(elf) => self.elf(&elf, data, at),
                    Err(e) => self.unreadable(&at, e),
                }
            }
            Ok(FileKind::Elf64) => {
                match ElfFile::<object::elf::FileHeader64<object::Endianness>>::parse(data) {
                    Ok(elf) => self.elf(&elf, data, at),
                    Err(e) => self.unreadable(&at, e),
                }
            }
            Ok(
                FileKind::Coff
                | FileKind::CoffBig
                | FileKind::Pe32
                | FileKind::Pe64
                | FileKind::MachO32
                | FileKind::MachO64,
            ) => match object::File::parse(data) {
                Ok(file) => self.object(&file, at),
                Err(e) => self.unreadable(&at, e),
            },
            _ => Ok(()),
        }
    }

    /// An object file that claims a kind but does not parse: reported, not fatal.
    fn unreadable(&mut self, at: &Place<'_>, e: object::Error) -> Result<()> {
        self.problems.push(Error::file(
            self.path,
            format!(
                "{}not a readable object file: {e}",
                Self::context_prefix(at)
            ),
        ));
        Ok(())
    }

    fn slices(&mut self, slices: Vec<(String, &[u8])>, at: Place<'_>) -> Result<()> {
        for (name, data) in slices {
            let mut path = at.members.to_vec();
            path.push(name);
            let inner = Place {
                members: &path,
                section: None,
                known: false,
                embedded: at.embedded,
                compressed: at.compressed,
                depth: at.depth + 1,
                unit: at.unit,
                inflated: at.inflated,
            };
            self.buffer(data, inner)?;
        }
        Ok(())
    }

    fn elf<H: FileHeader<Endian = object::Endianness>>(
        &mut self,
        elf: &ElfFile<'_, H>,
        data: &[u8],
        at: Place<'_>,
    ) -> Result<()> {
        let endian = elf.endian();
        // Only the null section, or none: the section headers were removed.
        if elf.elf_section_table().len() <= 1 {
            return self.segments(elf, data, at);
        }
        let mut seen = Vec::new();
        for section in elf.sections() {
            let header = section.elf_section_header();
            if header.sh_type(endian) == object::elf::SHT_NOBITS {
                continue;
            }
            let kind = if header.sh_type(endian).0 == SHT_LLVM_OFFLOADING {
                SectionType::Offloading
            } else {
                SectionType::Other
            };
            let name = section.name().unwrap_or("");
            if kind == SectionType::Other && !sections::named_for_device_code(name) {
                if let Some(why) = sections::elf_unsearched::<H>(header, endian, name) {
                    self.not_searched(name, header.sh_size(endian).into(), why);
                    continue;
                }
            }
            if self.overlaps(&section, &mut seen, at) {
                continue;
            }
            self.section(&section, kind, at)?;
        }
        Ok(())
    }

    /// An ELF file without section headers: its loadable segments are searched for magics,
    /// executable ones too, since without sections code and data cannot be told apart in a
    /// segment, and a linker without a separate read-only segment puts `.rodata` and
    /// `.hip_fatbin` in the executable one. Segments that share bytes are searched once.
    fn segments<H: FileHeader<Endian = object::Endianness>>(
        &mut self,
        elf: &ElfFile<'_, H>,
        data: &[u8],
        at: Place<'_>,
    ) -> Result<()> {
        // LLVM reads offload binaries from sections of their type only.
        if self.places == Places::OffloadBinaries {
            return Ok(());
        }
        let endian = elf.endian();
        let mut ranges: Vec<(u64, u64)> = elf
            .elf_program_headers()
            .iter()
            .filter(|p| p.p_type(endian) == object::elf::PT_LOAD)
            .map(|p| {
                let start: u64 = p.p_offset(endian).into();
                (start, start.saturating_add(p.p_filesz(endian).into()))
            })
            .filter(|(start, end)| start < end)
            .collect();
        ranges.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (start, end) in ranges {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        let len = data.len() as u64;
        for (start, end) in merged {
            if end > len {
                self.problems.push(Error::file(
                    self.path,
                    format!(
                        "{}a loadable segment's bytes {start:#x}..{end:#x} run past the end of \
                     the file ({len:#x}): searched up to the end",
                        Self::context_prefix(&at)
                    ),
                ));
            }
            let index = |at: u64| usize::try_from(at.min(len)).unwrap_or(usize::MAX);
            let (start, end) = (index(start), index(end));
            if let Some(segment) = data.get(start..end) {
                self.searched = self.searched.saturating_add(segment.len() as u64);
                self.region(segment, Place { known: false, ..at })?;
            }
        }
        Ok(())
    }

    fn object(&mut self, file: &object::File<'_>, at: Place<'_>) -> Result<()> {
        let mut seen = Vec::new();
        for section in file.sections() {
            if matches!(
                section.kind(),
                object::SectionKind::UninitializedData | object::SectionKind::UninitializedTls
            ) {
                continue;
            }
            let name = section.name().unwrap_or("");
            if !sections::named_for_device_code(name) {
                if let Some(why) = sections::object_unsearched(&section) {
                    self.not_searched(name, section.size(), why);
                    continue;
                }
            }
            if self.overlaps(&section, &mut seen, at) {
                continue;
            }
            self.section(&section, SectionType::Other, at)?;
        }
        Ok(())
    }

    /// Notes, for the log, a section the scan does not search.
    fn not_searched(&mut self, name: &str, size: u64, why: Unsearched) {
        self.unsearched = self.unsearched.saturating_add(size);
        tracing::trace!(section = name, size, "not searched: {}", why.holds());
    }

    /// Whether `section`'s bytes overlap those of a section read before (reported, and the
    /// section is not read); otherwise notes its range in `seen`.
    fn overlaps<'d, S: ObjectSection<'d>>(
        &mut self,
        section: &S,
        seen: &mut Vec<(u64, u64, String)>,
        at: Place<'_>,
    ) -> bool {
        let Some((start, size)) = section.file_range().filter(|&(_, size)| size > 0) else {
            return false;
        };
        let end = start.saturating_add(size);
        let name = section.name().unwrap_or("").to_string();
        if let Some((_, _, other)) = seen.iter().find(|(s, e, _)| start < *e && *s < end) {
            let here = Place {
                section: Some(&name),
                ..at
            };
            self.problems.push(Error::file(
                self.path,
                format!(
                    "{}: bytes {start:#x}..{end:#x} overlap section '{other}': not read",
                    Self::context(&here)
                ),
            ));
            return true;
        }
        seen.push((start, end, name));
        false
    }

    fn section<'d, S: ObjectSection<'d>>(
        &mut self,
        section: &S,
        kind: SectionType,
        at: Place<'_>,
    ) -> Result<()> {
        let name = section.name().unwrap_or("").to_string();
        let data = match section.data() {
            Ok(d) => d,
            Err(e) => {
                let here = Place {
                    section: Some(&name),
                    ..at
                };
                self.problems.push(Error::file(
                    self.path,
                    format!("{}: {e}", Self::context(&here)),
                ));
                return Ok(());
            }
        };
        if data.is_empty() {
            return Ok(());
        }
        self.searched = self.searched.saturating_add(data.len() as u64);
        let here = Place {
            section: Some(&name),
            ..at
        };
        if self.places == Places::OffloadBinaries {
            let wanted = kind == SectionType::Offloading
                || name.starts_with(".llvm.offloading")
                || name == "__offloading";
            return if wanted {
                self.region(
                    data,
                    Place {
                        known: true,
                        ..here
                    },
                )
            } else {
                Ok(())
            };
        }
        if let Some(id) = name.strip_prefix(BUNDLE_SECTION_PREFIX) {
            self.emit(&here, Origin::BundleEntry(id), data);
            return Ok(());
        }
        let home = Container::of_section(&name);
        if let Some(found) = home
            .filter(|c| Container::at_start(data) == Some(*c))
            .and_then(|c| c.consecutive(data))
        {
            return self.consecutive(found, data, here);
        }
        let known = kind == SectionType::Offloading || home.is_some();
        self.region(data, Place { known, ..here })
    }

    /// Containers placed one after another by their own rule (see
    /// [`Container::consecutive`]), read as any container is; damage ends the walk.
    fn consecutive(&mut self, found: Consecutive<'_>, data: &[u8], at: Place<'_>) -> Result<()> {
        for part in found {
            let read = part.and_then(|(offset, bytes)| {
                self.container(bytes, at)
                    .map_err(|e| e.rebased(offset as u64))
            });
            if let Err(e) = read {
                self.problems.push(self.damage(&at, data, e));
                break;
            }
        }
        Ok(())
    }

    /// Finds the containers in `data`: from each position, zero padding is skipped; a magic
    /// there is parsed and its size skipped; elsewhere the next magic is searched for.
    fn region(&mut self, data: &[u8], at: Place<'_>) -> Result<()> {
        let at = self.new_unit(Place {
            embedded: at.embedded || !at.known,
            ..at
        });
        let mut pos = 0usize;
        let mut reporting = at.known;
        let mut embedded = Embedded::new(data);
        let mut search = MagicSearch::new(data);
        while pos < data.len() {
            let Some(nonzero) = tail(data, pos).iter().position(|&b| b != 0) else {
                break;
            };
            let start = pos + nonzero;
            let start = if Container::found_at_start(tail(data, start)).is_some() {
                start
            } else {
                match search.next(start) {
                    Some(found) => found,
                    None => break,
                }
            };
            if MAGICS[CONTAINER_MAGICS..]
                .iter()
                .any(|magic| tail(data, start).starts_with(magic))
            {
                pos = self
                    .embedded_bare(&mut embedded, data, start, at)
                    .max(start + 1);
                continue;
            }
            match self.container(tail(data, start), at) {
                Ok(size) => pos = start.saturating_add(index_of(size.max(1))),
                Err(e) if reporting => {
                    let e = e.rebased(start as u64);
                    self.problems.push(self.damage(&at, data, e));
                    // The rest of the place is still searched, for the containers after the
                    // damaged one; magic bytes met inside the damage are not reported again.
                    reporting = false;
                    pos = start + 1;
                }
                // Magic bytes in code or data that happen to be there: not a container.
                Err(_) => pos = start + 1,
            }
        }
        tracing::trace!(bytes = search.searched(), "magics searched for");
        Ok(())
    }

    /// Reports the bare device image whose magic is at `start` of `data`, in a place that is
    /// no offload section (a program's data, `hipModuleLoadData`'s input), as its own
    /// translation unit; returns where it ends in `data`, or 0 when it is none (another ELF
    /// file, magic bytes by chance).
    fn embedded_bare<'d>(
        &mut self,
        embedded: &mut Embedded<'d>,
        data: &'d [u8],
        start: usize,
        at: Place<'_>,
    ) -> usize {
        if at.known || self.places != Places::Everywhere {
            return 0;
        }
        let here = tail(data, start);
        if here.starts_with(ELF_MAGIC) {
            // Its section headers are read to find where it ends: bounded over the scan, so
            // that a section of made-up headers cannot cost more than the bytes it holds.
            let headers = here
                .get(60..)
                .and_then(<[u8]>::first_chunk::<2>)
                .map_or(0, |n| u16::from_le_bytes(*n));
            let Some(left) = self.header_budget.checked_sub(u64::from(headers)) else {
                return 0;
            };
            self.header_budget = left;
        }
        let Some(image) = embedded.at(start) else {
            return 0;
        };
        let at = self.new_unit(at);
        self.emit(&at, Origin::Bare(&image), image.bytes);
        crate::io::slice::offset_within(data, image.bytes).map_or(0, |o| o + image.bytes.len())
    }

    /// Reads the container at the start of `data` and reports its images; returns its size.
    fn container(
        &mut self,
        data: &[u8],
        at: Place<'_>,
    ) -> std::result::Result<u64, crate::format::Error> {
        let container = Container::at_start(data).ok_or_else(|| not_a_container(0))?;
        let opened = container.open_reading(data, self.limit, self.reading)?;
        // A bundle, or a CUDA fat binary, is the code of one translation unit; offload
        // binaries side by side are those of the place that holds them.
        let at = if matches!(container, Container::Bundle | Container::CudaFatbin) {
            self.new_unit(at)
        } else {
            at
        };
        match &opened.contents {
            Contents::Inflated(plain) => {
                self.inflations += 1;
                let inflated = Some(InflatedWhole {
                    number: self.inflations,
                    container,
                    stored: opened.size,
                    size: plain.len() as u64,
                });
                self.nested_starts.push(std::collections::HashSet::new());
                let read = self.nested(plain, Place { inflated, ..at }, Storage::Inflated);
                self.nested_starts.pop();
                read?;
            }
            Contents::Listed(listed) => {
                if at.depth >= MAX_DEPTH {
                    return Err(nesting());
                }
                self.emit_listed(at, listed, data);
                // Its head is read: the system may map large stretches of a file for the few
                // pages the head took, and a scan of many streams would hold them all.
                let head = data.get(..index_of(opened.size));
                crate::io::release_mapped(head.unwrap_or(data));
            }
            Contents::ListedBinary(listed) => {
                if at.depth >= MAX_DEPTH {
                    return Err(nesting());
                }
                self.emit_listed_binary(at, listed)?;
                crate::io::release_mapped(listed.stored);
            }
            Contents::Records(records) => {
                for record in records {
                    let data = record.data();
                    if self.places == Places::Everywhere
                        && record.may_be_container()
                        && Container::at_start(data).is_some()
                        && self.first_read_of(data)
                    {
                        // A container in a container: its images are the device code.
                        self.nested(data, at, Storage::AsIs)?;
                    } else {
                        self.emit(&at, record.origin(), data);
                    }
                }
            }
        }
        Ok(opened.size)
    }

    /// Whether the nested container `data` starts where no nested container of its buffer
    /// was read before. Entries that point at a container already read are reported as they
    /// are, the container's bytes: entries that all point at one binary, each of whose
    /// entries point at one binary again, would otherwise list entries to the power of the
    /// depth.
    fn first_read_of(&mut self, data: &[u8]) -> bool {
        let start = data.as_ptr() as usize;
        self.nested_starts
            .last_mut()
            .is_none_or(|starts| starts.insert(start))
    }

    /// The containers inside a container, one level deeper.
    fn nested(
        &mut self,
        data: &[u8],
        at: Place<'_>,
        storage: Storage,
    ) -> std::result::Result<(), crate::format::Error> {
        if at.depth >= MAX_DEPTH {
            return Err(nesting());
        }
        let inner = Place {
            compressed: at.compressed || storage == Storage::Inflated,
            known: true,
            depth: at.depth + 1,
            ..at
        };
        self.region_strict(data, inner)
    }

    /// [`Scan::region`] for data that must be containers through and through.
    fn region_strict(
        &mut self,
        data: &[u8],
        at: Place<'_>,
    ) -> std::result::Result<(), crate::format::Error> {
        let mut pos = 0usize;
        while pos < data.len() {
            let Some(nonzero) = tail(data, pos).iter().position(|&b| b != 0) else {
                break;
            };
            let start = pos + nonzero;
            // Any container's magic counts here, a CUDA fat binary's too: nothing else may be.
            if Container::at_start(tail(data, start)).is_none() {
                return Err(not_a_container(start));
            }
            let size = self
                .container(tail(data, start), at)
                .map_err(|e| e.rebased(start as u64))?;
            pos = start.saturating_add(index_of(size.max(1)));
        }
        Ok(())
    }
}

/// What a section's type says of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SectionType {
    /// ELF `SHT_LLVM_OFFLOADING`: offload binaries, whatever the section's name.
    Offloading,
    /// Any other: the name says what the section holds.
    Other,
}

/// How the bytes of a nested container are held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Storage {
    /// As they are in the file.
    AsIs,
    /// Inflated from a compressed container.
    Inflated,
}

/// Bytes at `offset` where a container must be, that are none.
fn not_a_container(offset: usize) -> crate::format::Error {
    crate::format::Error::new(offset as u64, crate::format::ErrorKind::NotAContainer)
}

fn nesting() -> crate::format::Error {
    crate::format::Error::new(
        0,
        crate::format::ErrorKind::NestedTooDeep { limit: MAX_DEPTH },
    )
}

/// The slices of a universal binary, named by architecture.
fn fat_slices<'d, A: object::read::macho::FatArch>(
    arches: &[A],
    data: &'d [u8],
) -> Vec<(String, &'d [u8])> {
    arches
        .iter()
        .filter_map(|a| Some((format!("{:?}", a.architecture()), a.data(data).ok()?)))
        .collect()
}

/// Calls `visit` for every device image of `file` (the bytes of the file at `path`), in file
/// order. Damage in places that hold device code (a bundle section, `.hip_fatbin`,
/// `.llvm.offloading`, a bundle or binary file) does not stop the scan: it is returned in the
/// list of problems, each naming the file, member, section and byte offset. An error that
/// stops the scan (an unreadable archive) is the `Err`.
pub fn scan(
    path: &Path,
    file: &[u8],
    places: Places,
    limit: u64,
    visit: &mut dyn FnMut(&DeviceImage<'_>),
) -> Result<Vec<Error>> {
    scan_reading(path, file, places, limit, Reading::Whole, visit)
}

/// [`scan`], inflating compressed bundles only as far as `reading` says: with
/// [`Reading::Headers`], the images inside a compressed bundle come with their size and
/// [`DeviceImage::stream`], not their bytes.
pub fn scan_reading(
    path: &Path,
    file: &[u8],
    places: Places,
    limit: u64,
    reading: Reading,
    visit: &mut dyn FnMut(&DeviceImage<'_>),
) -> Result<Vec<Error>> {
    let budget = package::Budget::new(limit);
    let options = Options {
        places,
        limit,
        reading,
        depth: 0,
        package: None,
        budget: &budget,
        archives: None,
    };
    run_at(path, file, options, visit, &mut Counts::default())
}

/// How a scan reads: what [`scan_reading`] is given, and, for a package's member, how deep
/// it is and which it is.
#[derive(Clone, Copy)]
struct Options<'p> {
    places: Places,
    limit: u64,
    reading: Reading,
    depth: usize,
    package: Option<&'p PackageMember>,
    budget: &'p package::Budget,
    archives: Option<&'p ArchiveVisit<'p>>,
}

/// The numbers a scan gives out, carried into the scans of a package's members and back, so
/// that each stays unique in the scan of the file: package members, translation units,
/// compressed containers inflated whole.
#[derive(Default)]
struct Counts {
    members: usize,
    units: usize,
    inflations: usize,
}

/// [`scan_reading`] with `options`.
fn run_at(
    path: &Path,
    file: &[u8],
    options: Options<'_>,
    visit: &mut dyn FnMut(&DeviceImage<'_>),
    counts: &mut Counts,
) -> Result<Vec<Error>> {
    let Options {
        places,
        limit,
        reading,
        depth,
        package,
        budget,
        archives,
    } = options;
    let mut scan = Scan {
        path,
        file,
        limit,
        reading,
        places,
        visit,
        package,
        package_members: counts.members,
        package_budget: budget,
        archives,
        problems: Vec::new(),
        units: counts.units,
        inflations: counts.inflations,
        searched: 0,
        unsearched: 0,
        header_budget: (file.len() as u64)
            .saturating_mul(HEADERS_PER_BYTE)
            .max(MIN_HEADER_BUDGET),
        nested_starts: Vec::new(),
    };
    let at = Place {
        members: &[],
        section: None,
        known: true,
        embedded: false,
        compressed: false,
        depth,
        unit: 0,
        inflated: None,
    };
    scan.buffer(file, at)?;
    *counts = Counts {
        members: scan.package_members,
        units: scan.units,
        inflations: scan.inflations,
    };
    tracing::debug!(
        searched = scan.searched,
        not_searched = scan.unsearched,
        "sections read"
    );
    Ok(scan.problems)
}

/// The bytes of `data` from `start` (none past its end).
fn tail(data: &[u8], start: usize) -> &[u8] {
    data.get(start..).unwrap_or_default()
}

/// `value` as an index into memory; past every slice when it does not fit.
fn index_of(value: u64) -> usize {
    usize::try_from(value).unwrap_or(usize::MAX)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// The target IDs of the images a scan of the bare file `data` reports, and whether each
    /// was found embedded as data.
    fn scanned(data: &[u8]) -> Vec<(String, bool)> {
        let mut found = Vec::new();
        let problems = scan(
            Path::new("f"),
            data,
            Places::Everywhere,
            u64::MAX,
            &mut |i| found.push((i.target.target_id.clone(), i.embedded)),
        )
        .unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        found
    }

    #[test]
    fn magics_inside_a_container_are_its_bytes_and_those_after_it_are_found() {
        use crate::format::bundle;
        let host = "host-x86_64-unknown-linux-gnu";
        let inner = bundle::to_vec(&[(host, b""), ("hip-amdgcn-amd-amdhsa--gfx906", b"c")], 8);
        // An entry holding, past its start, a whole bundle, an ELF and a PTX magic: bytes of
        // the entry, never images of their own.
        let mut entry = b"code ".to_vec();
        entry.extend_from_slice(&inner);
        entry.extend_from_slice(b"\x7fELF\x02\x01\x01 .version 8.0\n.target sm_90\n");
        let outer = bundle::to_vec(&[(host, b""), ("hip-amdgcn-amd-amdhsa--gfx90a", &entry)], 8);
        let after = bundle::to_vec(&[(host, b""), ("hip-amdgcn-amd-amdhsa--gfx1100", b"k")], 8);
        let mut data = outer.clone();
        data.extend_from_slice(&[b'.'; 100]);
        data.extend_from_slice(&after);
        let ids: Vec<(String, bool)> = scanned(&data)
            .into_iter()
            .filter(|(id, _)| !id.is_empty())
            .collect();
        assert_eq!(
            ids,
            [
                ("gfx90a".to_string(), false),
                ("gfx1100".to_string(), false)
            ]
        );
        // The inner bundle alone, past other bytes, is found.
        let mut alone = outer;
        alone.extend_from_slice(b"data ");
        alone.extend_from_slice(&inner);
        let ids: Vec<String> = scanned(&alone)
            .into_iter()
            .map(|(id, _)| id)
            .filter(|id| !id.is_empty())
            .collect();
        assert_eq!(ids, ["gfx90a", "gfx906"]);
    }
}
