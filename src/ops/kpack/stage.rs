//! The archives being made while a split reads its files: their tables so far and their code
//! objects staged in unnamed temporary files, written out when every file is read.

use crate::ops::kpack::config::SplitConfig;
use crate::ops::kpack::plan::not_as_written;
use crate::ops::kpack::read::{Code, SplitBinary};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::format::kpack::{
    self as kformat, compress_code_object, toc_key, Archive, ArchiveInfo, Scheme, TocEntry,
};
use crate::io::spill::Spill;
use crate::io::{inside, Closed, Input, Output};

/// The archives being made, by processor or group: each one's table so far and its stored
/// code objects, staged in an unnamed temporary file.
#[derive(Default)]
pub(super) struct Stage {
    pub(super) archives: BTreeMap<String, StagedArchive>,
}

/// One archive being made.
pub(super) struct StagedArchive {
    pub(super) file_name: String,
    pub(super) info: ArchiveInfo,
    pub(super) entries: Vec<TocEntry>,
    /// The stored code objects (plain, or zstd frames), one after another.
    pub(super) blobs: Spill,
    /// Where each stored code object is in `blobs`, by ordinal.
    pub(super) places: Vec<(u64, u64)>,
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
        config: &SplitConfig,
        name: &str,
    ) -> Result<()> {
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
        let mut entries: Vec<(String, String, String, usize)> = Vec::new();
        for (index, &at) in split.bundle_of.iter().enumerate() {
            for (arch, code) in split.bundles.get(&at).into_iter().flatten() {
                let family = group_of(arch).unwrap_or_else(|| arch.clone());
                let n = *number_of
                    .entry((family.clone(), at, arch.as_str()))
                    .or_insert_with(|| {
                        unique.push((family.clone(), code));
                        unique.len() - 1
                    });
                let key = toc_key(&split.kernel_name, index as u64);
                entries.push((family, key, arch.clone(), n));
            }
        }
        let ordinals = self.store(&unique, config, name)?;
        for (family, key, arch, n) in entries {
            let archive = self.archive(&family, config, name)?;
            archive.entries.push(TocEntry {
                key,
                arch,
                ordinal: ordinals[n],
                original_size: unique[n].1.bytes().len() as u64,
            });
        }
        Ok(())
    }

    /// Stores `codes` (each with its archive's family) in order, compressed as `config` says,
    /// a few frames made at once; returns each one's ordinal in its archive.
    pub(super) fn store(
        &mut self,
        codes: &[(String, &Code<'_>)],
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
                let bytes = frame.as_deref().unwrap_or_else(|| code.bytes());
                let at = archive.blobs.len();
                archive
                    .blobs
                    .append(bytes)
                    .map_err(|e| Error::io(Path::new(&archive.file_name), e))?;
                archive.places.push((at, bytes.len() as u64));
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
) -> Result<(Closed, ArchiveListed)> {
    let path = dir.join(&a.file_name);
    inside(root, &path)?;
    let fail = |e: crate::format::Error| Error::format(&path, e);
    let scheme = a.info.scheme;
    let sizes: Vec<u64> = a.places.iter().map(|(_, size)| *size).collect();
    let plan = kformat::layout(&a.info, &sizes, &a.entries).map_err(fail)?;
    let blobs = a.blobs.finish().map_err(|e| Error::io(&path, e))?;
    let mut out = Output::create(&path)?;
    out.write_bytes(&plan.head)?;
    out.write_bytes(&plan.count_field(scheme))?;
    for (ordinal, (at, size)) in a.places.iter().enumerate() {
        out.write_bytes(&plan.size_field(scheme, ordinal))?;
        let part = usize::try_from(*at)
            .ok()
            .zip(usize::try_from(*size).ok())
            .and_then(|(at, size)| blobs.bytes().get(at..at.checked_add(size)?))
            .ok_or_else(|| {
                Error::msg(format!(
                    "'{}': a staged code object is missing",
                    path.display()
                ))
            })?;
        match blobs.input() {
            Some(input) => out.write_part(input, part)?,
            None => out.write_bytes(part)?,
        }
    }
    out.write_bytes(&plan.toc)?;
    out.start_writeback()?;
    read_back_archive(&path, &mut out, a.entries.len())?;
    let size = plan.toc_offset + plan.toc.len() as u64;
    let listed = (path, a.info.gfx_arches, a.entries.len(), size);
    Ok((out.close()?, listed))
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
