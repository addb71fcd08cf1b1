//! The archives being made while a split reads its files: their tables so far and where their
//! code objects are (made here: staged in unnamed temporary files; stored plain as an input
//! holds them: noted, and copied from the input by the kernel), written out when every file is
//! read.
//!
//! Nothing is held in memory for each file or code object: each binary's part of an archive's
//! table is written to a temporary file as the binary is read, and so are the places of the
//! stored code objects and the inputs they are copied from; the archive is written from them
//! in order, and its table read back a value at a time.

use crate::ops::kpack::config::SplitConfig;
use crate::ops::kpack::plan::not_as_written;
use crate::ops::kpack::read::{Code, SplitBinary};
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use object::endian::{LittleEndian as Le, U64};
use object::pod::{self, Pod};
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::format::kpack::{
    self as kformat, compress_code_object, table, toc_key, ArchiveInfo, EntryMetadata, Placing,
    Scheme, TocEntry,
};
use crate::io::slice::offset_within;
use crate::io::spill::{Spill, Spilled};
use crate::io::{FreshFolder, Input, Output};
use crate::ops::kpack::plan::ARCHIVE_FOLDER;
use std::fs::File;

/// The archives being made, by processor or group: each one's table so far and where its
/// stored code objects are: staged in an unnamed temporary file (frames, and code inflated from
/// compressed bundles), or, stored plain as an input holds them, in that input, to be copied
/// from it by the kernel when the archive is written.
pub(super) struct Stage {
    pub(super) archives: BTreeMap<String, StagedArchive>,
    /// The inputs code is copied from, as they were when read: a [`SourceHead`] and the
    /// path's bytes each, in a temporary file.
    pub(super) sources: Spill,
    /// How many inputs `sources` holds.
    count: u64,
}

/// An input that stored code objects are copied from, as it was read: a file replaced or
/// resized before the archives are written is refused, not copied from. Its path follows it.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
struct SourceHead {
    dev: U64<Le>,
    ino: U64<Le>,
    /// 1 when `dev` and `ino` are known.
    known: U64<Le>,
    len: U64<Le>,
    path_len: U64<Le>,
}

// SAFETY: plain old data of unaligned integers.
unsafe impl Pod for SourceHead {}

/// Where a stored code object is, as staged: `source` [`STAGED`] for the archive's stage, else
/// the number of the input it is in; at `at`, `size` bytes.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
struct PlaceRecord {
    source: U64<Le>,
    at: U64<Le>,
    size: U64<Le>,
}

// SAFETY: plain old data of unaligned integers.
unsafe impl Pod for PlaceRecord {}

/// The `source` of a code object staged in its archive's stage.
const STAGED: u64 = u64::MAX;

/// Where a stored code object is.
#[derive(Clone, Copy)]
pub(super) enum Place {
    /// In the archive's stage, at this offset, this long.
    Staged(u64, u64),
    /// In input `source` of the stage, at this offset, this long.
    Input(u64, u64, u64),
}

impl Place {
    /// Its record.
    fn record(self) -> PlaceRecord {
        let (source, at, size) = match self {
            Place::Staged(at, size) => (STAGED, at, size),
            Place::Input(source, at, size) => (source, at, size),
        };
        PlaceRecord {
            source: U64::new(Le, source),
            at: U64::new(Le, at),
            size: U64::new(Le, size),
        }
    }
}

/// One archive being made.
pub(super) struct StagedArchive {
    pub(super) file_name: String,
    pub(super) info: ArchiveInfo,
    /// The table's `toc` map so far, a binary's keys at a time.
    table: Spill,
    /// How many keys and entries `table` holds.
    keys: usize,
    entries: usize,
    /// The stored code objects made here (zstd frames, inflated code), one after another.
    pub(super) blobs: Spill,
    /// Where each stored code object is, by ordinal: a [`PlaceRecord`] each.
    places: Spill,
    /// How many `places` holds.
    stored: u64,
}

/// What a split's summary lists of an archive: its path, its processors, its number of code
/// objects and its size.
pub(super) type ArchiveListed = (PathBuf, Vec<String>, usize, u64);

/// Code objects compressed at once while staging.
pub(super) const FRAMES_AT_ONCE: usize = 16;

impl Stage {
    /// Nothing staged yet.
    pub(super) fn new() -> Result<Stage> {
        let sources = Spill::on_disk().map_err(|e| Error::io(Path::new("a temporary file"), e))?;
        Ok(Stage {
            archives: BTreeMap::new(),
            sources,
            count: 0,
        })
    }

    /// Notes the input `path`, read as `input`, as one code may be copied from; gives its
    /// number.
    fn note_source(&mut self, path: &Path, input: &Input) -> Result<u64> {
        let (known, (dev, ino)) = match input.identity() {
            Some(identity) => (1, identity),
            None => (0, (0, 0)),
        };
        let name = path.as_os_str().as_bytes();
        let head = SourceHead {
            dev: U64::new(Le, dev),
            ino: U64::new(Le, ino),
            known: U64::new(Le, known),
            len: U64::new(Le, input.len() as u64),
            path_len: U64::new(Le, name.len() as u64),
        };
        self.sources
            .append(pod::bytes_of(&head))
            .and_then(|()| self.sources.append(name))
            .map_err(|e| Error::io(path, e))?;
        self.count += 1;
        Ok(self.count - 1)
    }

    /// Adds the code objects of one split binary, a bundle's code stored once however many
    /// wrappers point at it; its entries are written to each archive's table at once.
    pub(super) fn add(
        &mut self,
        split: &SplitBinary<'_>,
        (path, input): (&Path, &Input),
        config: &SplitConfig,
        name: &str,
    ) -> Result<()> {
        let number = self.note_source(path, input)?;
        let source = (number, &**input);
        let group_of = |arch: &str| {
            config
                .groups
                .iter()
                .find(|(_, arches)| arches.iter().any(|a| a == arch))
                .map(|(g, _)| g.clone())
        };
        // Each stored code object once: (family, bundle, processor) and its code.
        let mut unique: Vec<(String, &Code<'_>)> = Vec::new();
        let mut number_of: HashMap<(String, usize, &str), usize> = HashMap::new();
        let mut entries: Vec<(String, TocEntry, usize)> = Vec::new();
        for (index, &at) in split.bundle_of.iter().enumerate() {
            for device in split.bundles.get(&at).into_iter().flatten() {
                let arch = device.arch.as_str();
                let family = group_of(arch).unwrap_or_else(|| arch.to_string());
                let n = *number_of
                    .entry((family.clone(), at, arch))
                    .or_insert_with(|| {
                        unique.push((family.clone(), &device.code));
                        unique.len() - 1
                    });
                let entry = TocEntry {
                    key: toc_key(&split.kernel_name, index as u64),
                    arch: arch.to_string(),
                    ordinal: 0,
                    original_size: device.code.bytes().len() as u64,
                    metadata: Some(EntryMetadata {
                        target: device.id.clone(),
                        source_prefix: split.source_prefix.clone(),
                    }),
                };
                entries.push((family, entry, n));
            }
        }
        let ordinals = self.store(&unique, source, config, name)?;
        let mut by_archive: BTreeMap<String, Vec<TocEntry>> = BTreeMap::new();
        for (family, mut entry, n) in entries {
            entry.ordinal = ordinals.get(n).copied().unwrap_or_default();
            by_archive.entry(family).or_default().push(entry);
        }
        // The binary's keys (its path and a code-object index) are its own: no other binary
        // adds to them, so each archive's table is its binaries' parts one after another.
        for (family, list) in by_archive {
            let archive = self.archive(&family, config, name)?;
            let mut part = Vec::new();
            archive.keys += table::write_keys(&mut part, &list);
            archive.entries += list.len();
            archive
                .table
                .append(&part)
                .map_err(|e| Error::io(Path::new(&archive.file_name), e))?;
        }
        Ok(())
    }

    /// Stores `codes` (each with its archive's family) in order, compressed as `config` says,
    /// a few frames made at once; code stored plain as the input `source` (its number, its
    /// bytes) holds it is only noted. Returns each one's ordinal in its archive.
    pub(super) fn store(
        &mut self,
        codes: &[(String, &Code<'_>)],
        (number, data): (u64, &[u8]),
        config: &SplitConfig,
        name: &str,
    ) -> Result<Vec<u64>> {
        let mut ordinals = Vec::with_capacity(codes.len());
        for window in codes.chunks(FRAMES_AT_ONCE) {
            let frames: Vec<Option<Vec<u8>>> = window
                .par_iter()
                .map(|(family, code)| match config.scheme {
                    Scheme::None => Ok(None),
                    Scheme::ZstdPerKernel => {
                        let frame = compress_code_object(code.bytes()).map_err(|e| {
                            Error::format(Path::new(&format!("{name}_{family}.kpack")), e)
                        });
                        crate::io::release_mapped(code.bytes());
                        frame.map(Some)
                    }
                })
                .collect::<Vec<Result<_>>>()
                .into_iter()
                .collect::<Result<_>>()?;
            for ((family, code), frame) in window.iter().zip(frames) {
                let archive = self.archive(family, config, name)?;
                let fail = |e| Error::io(Path::new(&archive.file_name), e);
                let in_input = match (code, &frame) {
                    (Code::Mapped(bytes), None) => offset_within(data, bytes)
                        .map(|at| Place::Input(number, at as u64, bytes.len() as u64)),
                    _ => None,
                };
                let place = match in_input {
                    Some(place) => place,
                    None => {
                        let bytes = frame.as_deref().unwrap_or_else(|| code.bytes());
                        let at = archive.blobs.len();
                        archive.blobs.append(bytes).map_err(fail)?;
                        Place::Staged(at, bytes.len() as u64)
                    }
                };
                let record = place.record();
                archive
                    .places
                    .append(pod::bytes_of(&record))
                    .map_err(fail)?;
                ordinals.push(archive.stored);
                archive.stored += 1;
            }
        }
        Ok(ordinals)
    }

    /// The archive of `family`, begun if new.
    pub(super) fn archive(
        &mut self,
        family: &str,
        config: &SplitConfig,
        name: &str,
    ) -> Result<&mut StagedArchive> {
        if !self.archives.contains_key(family) {
            let arches = match config.groups.iter().find(|(g, _)| g == family) {
                Some((_, arches)) => arches.clone(),
                None => vec![family.to_string()],
            };
            let file_name = format!("{name}_{family}.kpack");
            let spill = || Spill::on_disk().map_err(|e| Error::io(Path::new(&file_name), e));
            let staged = StagedArchive {
                info: ArchiveInfo {
                    group_name: name.to_string(),
                    gfx_arch_family: family.to_string(),
                    gfx_arches: arches,
                    scheme: config.scheme,
                },
                table: spill()?,
                keys: 0,
                entries: 0,
                blobs: spill()?,
                places: spill()?,
                stored: 0,
                file_name,
            };
            self.archives.insert(family.to_string(), staged);
        }
        self.archives
            .get_mut(family)
            .ok_or_else(|| Error::msg("an archive begun is missing"))
    }
}

/// The staged parts of an archive, read back to be written out.
struct Parts {
    table: Spilled,
    blobs: Spilled,
    places: Spilled,
}

impl Parts {
    /// The places of the stored code objects, by ordinal.
    fn places(&self) -> &[PlaceRecord] {
        pod::slice_from_all_bytes(self.places.bytes()).unwrap_or_default()
    }
}

/// Writes the staged archive `a` into `.kpack/` of `folder` (`dir` is where it will be): its
/// head, its stored code objects copied by the kernel from the stage or their inputs
/// (`sources`), its table; and reads it back. Returns what the summary lists of it.
pub(super) fn write_archive(
    dir: &Path,
    a: StagedArchive,
    sources: &Spilled,
    folder: &FreshFolder,
) -> Result<ArchiveListed> {
    let path = dir.join(&a.file_name);
    let name = Path::new(ARCHIVE_FOLDER).join(&a.file_name);
    let fail = |e: crate::format::Error| Error::format(&path, e);
    let failed_io = |e| Error::io(&path, e);
    let parts = Parts {
        table: a.table.finish().map_err(failed_io)?,
        blobs: a.blobs.finish().map_err(failed_io)?,
        places: a.places.finish().map_err(failed_io)?,
    };
    let mut placing = Placing::new(a.info.scheme);
    for place in parts.places() {
        placing.place(place.size.get(Le)).map_err(fail)?;
    }
    let mut out = folder.create(name.as_os_str(), &path)?;
    let written = write_parts(&mut out, (&path, &a.info, a.keys), placing, &parts, sources)
        .and_then(|size| {
            out.flush()?;
            read_back_archive(
                &path,
                folder.staged(name.as_os_str()),
                a.entries,
                placing.count(),
            )?;
            Ok(size)
        })
        .and_then(|size| Ok((out.close().map(drop)?, size)));
    let size = match written {
        Ok(((), size)) => size,
        Err(e) => {
            let _ = folder.remove(name.as_os_str());
            return Err(e);
        }
    };
    Ok((path, a.info.gfx_arches, a.entries, size))
}

/// Writes the archive at `path` (what it says of itself, its number of keys; its code
/// objects placed by `placing`) to `out`: its head, its code objects, its table. Gives its
/// size.
fn write_parts(
    out: &mut Output,
    (path, info, keys): (&Path, &ArchiveInfo, usize),
    placing: Placing,
    parts: &Parts,
    sources: &Spilled,
) -> Result<u64> {
    out.write_bytes(&placing.header())?;
    out.write_bytes(&placing.count_field())?;
    let mut inputs = Sources::new(sources);
    let mut open: Option<(u64, File)> = None;
    for place in parts.places() {
        let (source, at, size) = (place.source.get(Le), place.at.get(Le), place.size.get(Le));
        out.write_bytes(&placing.size_field(size))?;
        if source == STAGED {
            write_staged(out, path, &parts.blobs, at, size)?;
            continue;
        }
        if open.as_ref().is_none_or(|(n, _)| *n != source) {
            open = Some((source, inputs.reopen(source)?));
        }
        if let Some((_, file)) = &open {
            out.write_file_range(file, at, size)?;
        }
    }
    write_table(out, (path, info, keys), parts, placing)
}

/// Writes the table of the archive at `path` (what it says of itself, its number of keys,
/// its staged `parts`, its code objects placed by `placing`) to `out`, after its code
/// objects; gives the archive's size.
fn write_table(
    out: &mut Output,
    (path, info, keys): (&Path, &ArchiveInfo, usize),
    parts: &Parts,
    placing: Placing,
) -> Result<u64> {
    let head = table::table_head(info, keys);
    let tail = placing.table_tail();
    out.write_bytes(&head)?;
    match parts.table.input() {
        Some(input) => out.write_part(input, input)?,
        None => out.write_bytes(parts.table.bytes())?,
    }
    out.write_bytes(&tail)?;
    let mut written = (head.len() + tail.len()) as u64 + parts.table.len();
    if info.scheme == Scheme::None {
        // The blobs list, a piece at a time.
        let mut again = Placing::new(info.scheme);
        let mut piece = Vec::new();
        for place in parts.places() {
            let stored = again
                .place(place.size.get(Le))
                .map_err(|e| Error::format(path, e))?;
            table::write_blob(&mut piece, stored);
            if piece.len() >= 1 << 16 {
                out.write_bytes(&piece)?;
                written += piece.len() as u64;
                piece.clear();
            }
        }
        out.write_bytes(&piece)?;
        written += piece.len() as u64;
    }
    Ok(placing.toc_offset() + written)
}

/// Writes `size` staged bytes from `at` of `blobs` (the stage of the archive at `path`).
fn write_staged(out: &mut Output, path: &Path, blobs: &Spilled, at: u64, size: u64) -> Result<()> {
    let part = usize::try_from(at)
        .ok()
        .zip(usize::try_from(size).ok())
        .and_then(|(at, size)| blobs.bytes().get(at..at.checked_add(size)?))
        .ok_or_else(|| Error::file(path, "a staged code object is missing"))?;
    match blobs.input() {
        Some(input) => Ok(out.write_part(input, part)?),
        None => Ok(out.write_bytes(part)?),
    }
}

/// The inputs noted by a stage, read in order: an archive asks for them by increasing
/// number.
struct Sources<'s> {
    bytes: &'s [u8],
    /// The number of the input at `at`.
    next: u64,
    at: usize,
}

impl<'s> Sources<'s> {
    fn new(sources: &'s Spilled) -> Sources<'s> {
        Sources {
            bytes: sources.bytes(),
            next: 0,
            at: 0,
        }
    }

    /// Input `number` opened again to copy code from: the same file (device and inode) of
    /// the same size as when it was read, else an error.
    fn reopen(&mut self, number: u64) -> Result<File> {
        use std::os::unix::fs::MetadataExt;
        if number < self.next {
            (self.next, self.at) = (0, 0);
        }
        let missing = || Error::msg("a split's input is missing");
        loop {
            let rest = self.bytes.get(self.at..).ok_or_else(missing)?;
            let (head, rest) = pod::from_bytes::<SourceHead>(rest).map_err(|()| missing())?;
            let len = usize::try_from(head.path_len.get(Le)).map_err(|_| missing())?;
            let name = rest.get(..len).ok_or_else(missing)?;
            self.at += std::mem::size_of::<SourceHead>() + len;
            self.next += 1;
            if self.next <= number {
                continue;
            }
            let path = Path::new(OsStr::from_bytes(name));
            let known = head.known.get(Le) == 1;
            let identity = known.then(|| (head.dev.get(Le), head.ino.get(Le)));
            let (file, meta) =
                crate::io::opening::open_nonblocking(path).map_err(|e| Error::io(path, e))?;
            if Some((meta.dev(), meta.ino())) != identity || meta.len() != head.len.get(Le) {
                return Err(Error::file(
                    path,
                    "replaced or resized while it was being split; nothing was written",
                ));
            }
            return Ok(file);
        }
    }
}

/// Reads the archive just written to `written` (when it is a file of its own) back, a value of its table at a time: its header
/// and table, every stored code object inside the file, `entries` entries and `stored`
/// stored code objects, each entry naming one of them.
pub(super) fn read_back_archive(
    path: &Path,
    written: Option<PathBuf>,
    entries: usize,
    stored: u64,
) -> Result<()> {
    let Some(written) = written else {
        return Ok(());
    };
    let data = Input::open(&written)?;
    let checked = kformat::check(&data).map_err(|e| not_as_written(path, e))?;
    if checked.entries != entries as u64 {
        let why = format!("{} entries instead of {entries}", checked.entries);
        return Err(not_as_written(path, why));
    }
    if checked.stored != stored {
        let why = format!("{} code objects stored instead of {stored}", checked.stored);
        return Err(not_as_written(path, why));
    }
    if let Some(ordinal) = checked.largest_ordinal.filter(|o| *o >= stored) {
        let why = format!("an entry names code object {ordinal} of {stored}");
        return Err(not_as_written(path, why));
    }
    Ok(())
}
