//! The archives being made while a split reads its files: their tables so far and where their
//! code objects are (made here: staged in unnamed temporary files; stored plain as an input
//! holds them: noted, and copied from the input by the kernel), written out when every file is
//! read.

use crate::ops::kpack::config::SplitConfig;
use crate::ops::kpack::plan::not_as_written;
use crate::ops::kpack::read::{Code, SplitBinary};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::format::kpack::{
    self as kformat, compress_code_object, toc_key, Archive, ArchiveInfo, EntryMetadata, Scheme,
    TocEntry,
};
use crate::io::slice::offset_within;
use crate::io::spill::{Spill, Spilled};
use crate::io::{inside, Closed, Input, Output};
use std::fs::File;

/// The archives being made, by processor or group: each one's table so far and where its
/// stored code objects are: staged in an unnamed temporary file (frames, and code inflated from
/// compressed bundles), or, stored plain as an input holds them, in that input, to be copied
/// from it by the kernel when the archive is written.
#[derive(Default)]
pub(super) struct Stage {
    pub(super) archives: BTreeMap<String, StagedArchive>,
    /// The inputs code is copied from, as they were when read.
    pub(super) sources: Vec<Source>,
}

/// An input that stored code objects are copied from, as it was read: a file replaced or
/// resized before the archives are written is refused, not copied from.
pub(super) struct Source {
    pub(super) path: PathBuf,
    pub(super) identity: Option<(u64, u64)>,
    pub(super) len: u64,
}

/// Where a stored code object is.
#[derive(Clone, Copy)]
pub(super) enum Place {
    /// In the archive's stage, at this offset, this long.
    Staged(u64, u64),
    /// In input `source` of the stage, at this offset, this long.
    Input(usize, u64, u64),
}

impl Place {
    /// How many bytes it is.
    pub(super) fn size(self) -> u64 {
        match self {
            Place::Staged(_, size) | Place::Input(_, _, size) => size,
        }
    }
}

/// One archive being made.
pub(super) struct StagedArchive {
    pub(super) file_name: String,
    pub(super) info: ArchiveInfo,
    pub(super) entries: Vec<TocEntry>,
    /// The stored code objects made here (zstd frames, inflated code), one after another.
    pub(super) blobs: Spill,
    /// Where each stored code object is, by ordinal.
    pub(super) places: Vec<Place>,
}

/// What a split's summary lists of an archive: its path, its processors, its number of code
/// objects and its size.
pub(super) type ArchiveListed = (PathBuf, Vec<String>, usize, u64);

/// Code objects compressed at once while staging.
pub(super) const FRAMES_AT_ONCE: usize = 16;

impl Stage {
    /// Adds the code objects of one split binary, a bundle's code stored once however many
    /// wrappers point at it.
    pub(super) fn add(
        &mut self,
        split: &SplitBinary<'_>,
        (path, input): (&Path, &Input),
        config: &SplitConfig,
        name: &str,
    ) -> Result<()> {
        self.sources.push(Source {
            path: path.to_path_buf(),
            identity: input.identity(),
            len: input.len() as u64,
        });
        let source = (self.sources.len() - 1, &**input);
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
        for (family, mut entry, n) in entries {
            entry.ordinal = ordinals[n];
            self.archive(&family, config, name)?.entries.push(entry);
        }
        Ok(())
    }

    /// Stores `codes` (each with its archive's family) in order, compressed as `config` says,
    /// a few frames made at once; code stored plain as the input `source` (its number, its
    /// bytes) holds it is only noted. Returns each one's ordinal in its archive.
    pub(super) fn store(
        &mut self,
        codes: &[(String, &Code<'_>)],
        (number, data): (usize, &[u8]),
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
                        archive
                            .blobs
                            .append(bytes)
                            .map_err(|e| Error::io(Path::new(&archive.file_name), e))?;
                        Place::Staged(at, bytes.len() as u64)
                    }
                };
                archive.places.push(place);
                ordinals.push(archive.places.len() as u64 - 1);
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
            let blobs = Spill::on_disk().map_err(|e| Error::io(Path::new(&file_name), e))?;
            let staged = StagedArchive {
                file_name,
                info: ArchiveInfo {
                    group_name: name.to_string(),
                    gfx_arch_family: family.to_string(),
                    gfx_arches: arches,
                    scheme: config.scheme,
                },
                entries: Vec::new(),
                blobs,
                places: Vec::new(),
            };
            self.archives.insert(family.to_string(), staged);
        }
        self.archives
            .get_mut(family)
            .ok_or_else(|| Error::msg("an archive begun is missing"))
    }
}

/// Writes the staged archive `a` into `dir` under the output folder `root` (to a temporary
/// file, closed, not yet in place): its head, its stored code objects copied by the kernel
/// from the stage, its table. Returns it with what the summary lists of it.
pub(super) fn write_archive(
    root: &Path,
    dir: &Path,
    a: StagedArchive,
    sources: &[Source],
) -> Result<(Closed, ArchiveListed)> {
    let path = dir.join(&a.file_name);
    inside(root, &path)?;
    let fail = |e: crate::format::Error| Error::format(&path, e);
    let scheme = a.info.scheme;
    let sizes: Vec<u64> = a.places.iter().map(|p| p.size()).collect();
    let plan = kformat::layout(&a.info, &sizes, &a.entries).map_err(fail)?;
    let blobs = a.blobs.finish().map_err(|e| Error::io(&path, e))?;
    let mut out = Output::create(&path)?;
    out.write_bytes(&plan.head)?;
    out.write_bytes(&plan.count_field(scheme))?;
    let mut open: Option<(usize, File)> = None;
    for (ordinal, place) in a.places.iter().enumerate() {
        out.write_bytes(&plan.size_field(scheme, ordinal))?;
        match *place {
            Place::Staged(at, size) => write_staged(&mut out, &path, &blobs, at, size)?,
            Place::Input(number, at, size) => {
                if open.as_ref().is_none_or(|(n, _)| *n != number) {
                    open = Some((number, reopen(sources, number)?));
                }
                if let Some((_, file)) = &open {
                    out.write_file_range(file, at, size)?;
                }
            }
        }
    }
    out.write_bytes(&plan.toc)?;
    out.start_writeback()?;
    read_back_archive(&path, &mut out, a.entries.len())?;
    let size = plan.toc_offset + plan.toc.len() as u64;
    let listed = (path, a.info.gfx_arches, a.entries.len(), size);
    Ok((out.close()?, listed))
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

/// Input `number` of `sources` opened again to copy code from: the same file (device and
/// inode) of the same size as when it was read, else an error.
fn reopen(sources: &[Source], number: usize) -> Result<File> {
    use std::os::unix::fs::MetadataExt;
    let source = sources
        .get(number)
        .ok_or_else(|| Error::msg("a split's input is missing"))?;
    let (file, meta) = crate::io::opening::open_nonblocking(&source.path)
        .map_err(|e| Error::io(&source.path, e))?;
    if Some((meta.dev(), meta.ino())) != source.identity || meta.len() != source.len {
        return Err(Error::file(
            &source.path,
            "replaced or resized while it was being split; nothing was written",
        ));
    }
    Ok(file)
}

/// Reads the archive just written to `out` back: its header and table, every stored code
/// object inside the file, and `entries` entries.
pub(super) fn read_back_archive(path: &Path, out: &mut Output, entries: usize) -> Result<()> {
    let Some(written) = out.written_so_far()? else {
        return Ok(());
    };
    let data = Input::open(&written)?;
    let archive = Archive::parse(&data).map_err(|e| not_as_written(path, e))?;
    if archive.entries.len() != entries {
        let why = format!("{} entries instead of {entries}", archive.entries.len());
        return Err(not_as_written(path, why));
    }
    Ok(())
}
