//! `offload kpack`: moving the device code of programs and shared libraries into kpack
//! archives (one per processor, or per group of processors), and putting it back.
//!
//! Splitting reads the files a group at a time (in parallel, bundles too; compressed bundles
//! inflate into unnamed temporary files, not memory), writes each group's host files to
//! temporary files beside their places and stages its code objects, then lets the group's
//! inputs go: memory and open files stay bounded however large the tree. The archives are
//! written from the stage at the end, and everything (host files, archives, the tree's links)
//! is renamed into place together only when all of it is written, so a damaged file anywhere
//! leaves nothing behind.
//!
//! Code-object indices are the wrappers' positions in `.hipFatBinSegment`, which is what each
//! `HIPK` wrapper's `reserved1` holds and what the loader asks for: the archives key the code
//! of the bundle wrapper `k` points at as `<binary>#k`, for every processor it has. (AMD's
//! Python splitter numbers code objects per processor instead, so a binary whose translation
//! units target different processors gets keys the loader never asks for.)

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use tracing::info;

use crate::error::{Error, Result};
use crate::format::bundle::{self, Bundle};
use crate::format::ccob::CompressedBundle;
use crate::format::ccob::Decoding;
use crate::format::image_target::{ImageTarget, Producer};
use crate::format::kpack::{
    self as kformat, compress_code_object, split_toc_key, toc_key, Archive, ArchiveInfo,
    KernelEntry, KpackRef, Scheme, TocEntry, GFXARCH, HIPK_MAGIC,
};
use crate::host::kpack::find_archives;
use crate::host::program::kpack_elf::{self, HipCode};
use crate::host::program::NewProgram;
use crate::io::spill::{Spill, Spilled};
use crate::io::{commit_all, inside, place_all, Closed, Input, Output};
use crate::loads::kpack_search::{every_target_name, Environment};
use crate::ops::support::inputs::{walk, Links, Taken, WalkOptions};
use crate::target::entry_id::EntryId;

/// The folder, beside the host files, that holds the archives.
pub const ARCHIVE_FOLDER: &str = ".kpack";
/// Bundles put back are aligned as clang aligns HIP bundles and their entries.
const BUNDLE_ALIGN: u64 = 4096;

/// How to split.
#[derive(Debug, Clone)]
pub struct SplitConfig {
    /// The folder the host files and `.kpack/` go to.
    pub output: PathBuf,
    /// Whether folders given are split with everything under them.
    pub recursive: bool,
    /// The archives' group name: archives are `<name>_<processor or group>.kpack`.
    pub name: Option<String>,
    /// Processors stored together: a group's name and its processors.
    pub groups: Vec<(String, Vec<String>)>,
    /// The search paths written into each binary; empty for the default.
    pub search_paths: Vec<String>,
    /// How code objects are stored.
    pub scheme: Scheme,
    /// The largest a compressed bundle may inflate to.
    pub max_decompressed: u64,
}

/// What a split wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SplitSummary {
    /// Each split binary (its output path), with its number of code-object indices.
    pub binaries: Vec<(PathBuf, usize)>,
    /// Files copied as they were (no HIP device code).
    pub copied: Vec<PathBuf>,
    /// Each archive: its path, its processors, its number of code objects and its size.
    pub archives: Vec<(PathBuf, Vec<String>, usize, u64)>,
}

/// A file to write: where it comes from, and its path under the output folder.
struct Planned {
    input: PathBuf,
    relative: PathBuf,
    kind: Kind,
}

enum Kind {
    File,
    Link(PathBuf),
}

/// The code of one device entry: borrowed from the input, or from a bundle inflated into an
/// unnamed temporary file (mapped: it takes no anonymous memory).
#[derive(Clone)]
enum Code<'a> {
    Mapped(&'a [u8]),
    Inflated(Arc<Spilled>, std::ops::Range<usize>),
}

impl Code<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Code::Mapped(b) => b,
            Code::Inflated(v, r) => v.bytes().get(r.clone()).unwrap_or_default(),
        }
    }
}

/// The most inputs open at once while splitting: the maps and descriptors of one group are
/// let go before the next group is opened, so a tree of any size splits within the limit on
/// open files.
const FILES_AT_ONCE: usize = 64;

/// How many inputs a group holds: [`FILES_AT_ONCE`], fewer when the limit on open files is
/// low (a quarter of what is left of it after 32 for the rest of the work), at least one.
fn files_at_once() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given and nothing else.
    let known = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0;
    if !known {
        return FILES_AT_ONCE;
    }
    let open = usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX);
    (open.saturating_sub(32) / 4).clamp(1, FILES_AT_ONCE)
}

/// The device entries of one bundle: processor and code.
type Entries<'a> = Vec<(String, Code<'a>)>;

/// A binary read and planned.
struct SplitBinary<'a> {
    /// Per code-object index, the bundle (its offset in `.hip_fatbin`) it takes its code from.
    bundle_of: Vec<usize>,
    /// The entries of each bundle, by offset.
    bundles: BTreeMap<usize, Entries<'a>>,
    kernel_name: String,
    program: NewProgram<'a>,
}

/// Splits `inputs` (files, or folders with `recursive`) into `config.output`, all or nothing:
/// the host files, the archives and the tree's links are put in place together, once every
/// one of them is written.
#[tracing::instrument(skip_all, fields(output = %config.output.display()))]
pub fn split(inputs: &[PathBuf], config: &SplitConfig) -> Result<SplitSummary> {
    let planned = plan_files(inputs, config.recursive)?;
    let name = match &config.name {
        Some(name) => name.clone(),
        None => default_name(inputs),
    };
    check_archive_names(&name, config)?;
    let mut dirs = CreatedDirs::default();
    let mut links = MadeLinks::default();
    let written = split_into(&planned, config, &name, &mut dirs, &mut links);
    let committed = written.and_then(|(summary, closed)| {
        place_all(closed)?;
        links.place()?;
        Ok(summary)
    });
    if committed.is_err() {
        links.remove();
        dirs.remove();
    }
    let summary = committed?;
    info!(
        binaries = summary.binaries.len(),
        archives = summary.archives.len(),
        "split"
    );
    Ok(summary)
}

/// Refuses a group name or an `--archive` group that could not be an archive's file name.
fn check_archive_names(name: &str, config: &SplitConfig) -> Result<()> {
    let fine = |n: &str| {
        !n.is_empty()
            && !n.starts_with('.')
            && n.len() <= 200
            && !n.chars().any(|c| c == '/' || c == '\\' || c.is_control())
    };
    let bad = std::iter::once(name)
        .chain(config.groups.iter().map(|(g, _)| g.as_str()))
        .find(|n| !fine(n));
    match bad {
        Some(n) => Err(Error::msg(format!(
            "{}: not a name an archive can have (no '/', no control character, not starting \
             with '.')",
            crate::error::quoted(n)
        ))),
        None => Ok(()),
    }
}

/// Writes everything a split makes, not yet in place: the host files (closed, holding no
/// descriptor), the archives, and the tree's links under temporary names.
fn split_into(
    planned: &[Planned],
    config: &SplitConfig,
    name: &str,
    dirs: &mut CreatedDirs,
    links: &mut MadeLinks,
) -> Result<(SplitSummary, Vec<Closed>)> {
    dirs.create(&config.output)?;
    for p in planned {
        let path = config.output.join(&p.relative);
        if let Some(parent) = path.parent() {
            dirs.create(parent)?;
        }
        inside(&config.output, &path)?;
    }
    let mut stage = Stage::default();
    let mut closed = Vec::new();
    let mut summary = SplitSummary::default();
    let files: Vec<&Planned> = planned
        .iter()
        .filter(|p| matches!(p.kind, Kind::File))
        .collect();
    for group in files.chunks(files_at_once()) {
        let (written, staged) = split_group(group, config, name, &mut stage)?;
        closed.extend(written);
        for (p, indices) in group.iter().zip(staged) {
            let path = config.output.join(&p.relative);
            match indices {
                Some(n) => summary.binaries.push((path, n)),
                None => summary.copied.push(path),
            }
        }
    }
    if !stage.archives.is_empty() {
        if planned
            .iter()
            .any(|p| p.relative == Path::new(ARCHIVE_FOLDER))
        {
            return Err(Error::msg(format!(
                "'{}': the tree has its own '{ARCHIVE_FOLDER}', where the archives go",
                config.output.join(ARCHIVE_FOLDER).display()
            )));
        }
        let archive_dir = config.output.join(ARCHIVE_FOLDER);
        dirs.create(&archive_dir)?;
        let made: Vec<(Closed, ArchiveListed)> = std::mem::take(&mut stage.archives)
            .into_values()
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|a| write_archive(&config.output, &archive_dir, a))
            .collect::<Vec<Result<_>>>()
            .into_iter()
            .collect::<Result<_>>()?;
        for (out, listed) in made {
            if planned
                .iter()
                .any(|p| config.output.join(&p.relative) == listed.0)
            {
                return Err(Error::msg(format!(
                    "'{}': a file of the tree goes there too",
                    listed.0.display()
                )));
            }
            closed.push(out);
            summary.archives.push(listed);
        }
    }
    for p in planned {
        if let Kind::Link(target) = &p.kind {
            let path = config.output.join(&p.relative);
            links.make(target, &path)?;
            summary.copied.push(path);
        }
    }
    Ok((summary, closed))
}

/// Splits one group of files: opens them, reads them, writes their host files, and stages
/// their code in `stage`, in input order; returns the host files written and, per file, its
/// number of code-object indices (`None`: copied as it was). The inputs are closed on return.
fn split_group(
    group: &[&Planned],
    config: &SplitConfig,
    name: &str,
    stage: &mut Stage,
) -> Result<(Vec<Closed>, Vec<Option<usize>>)> {
    let opened: Vec<Input> = group
        .par_iter()
        .map(|p| Input::open(&p.input))
        .collect::<Vec<Result<_>>>()
        .into_iter()
        .collect::<Result<_>>()?;
    let read: Vec<Option<SplitBinary<'_>>> = group
        .par_iter()
        .zip(&opened)
        .map(|(p, data)| {
            let _span = tracing::info_span!("file", path = %p.input.display()).entered();
            let search = search_paths(config, name, &p.relative);
            read_binary(&p.input, data, &p.relative, &search, config)
        })
        .collect::<Vec<Result<_>>>()
        .into_iter()
        .collect::<Result<_>>()?;
    let written: Vec<Closed> = group
        .par_iter()
        .zip(&opened)
        .zip(&read)
        .map(|((p, data), split)| write_host(p, data, split.as_ref(), config))
        .collect::<Vec<Result<_>>>()
        .into_iter()
        .collect::<Result<_>>()?;
    let mut counts = Vec::with_capacity(group.len());
    for split in &read {
        match split {
            Some(split) => {
                stage.add(split, config, name)?;
                counts.push(Some(split.bundle_of.len()));
            }
            None => counts.push(None),
        }
    }
    Ok((written, counts))
}

/// Writes the host file of `p` (read as `data`): the split program, or the file as it is.
fn write_host(
    p: &Planned,
    data: &Input,
    split: Option<&SplitBinary<'_>>,
    config: &SplitConfig,
) -> Result<Closed> {
    let path = config.output.join(&p.relative);
    let mut out = Output::create(&path)?;
    let meta = std::fs::metadata(&p.input).map_err(|e| Error::io(&p.input, e))?;
    out.set_mode(std::os::unix::fs::PermissionsExt::mode(&meta.permissions()));
    match split {
        Some(split) => {
            split.program.write_to(&p.input, &mut out, data)?;
            read_back_split(&p.input, &mut out, split)?;
        }
        None => out.write_part(data, data)?,
    }
    out.close()
}

/// Symbolic links of the tree, made under temporary names beside their places until the
/// split is put in place.
#[derive(Default)]
struct MadeLinks(Vec<(PathBuf, PathBuf)>);

impl MadeLinks {
    /// Makes a link to `target` that will be `path`.
    fn make(&mut self, target: &Path, path: &Path) -> Result<()> {
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
            return Err(Error::msg(format!(
                "'{}': a folder is there, where a link of the tree goes",
                path.display()
            )));
        }
        let file_name = path.file_name().unwrap_or_default().to_string_lossy();
        let temporary = path.with_file_name(format!(
            ".{file_name}.kpack-link.{}.{}",
            std::process::id(),
            self.0.len()
        ));
        std::os::unix::fs::symlink(target, &temporary).map_err(|e| Error::io(&temporary, e))?;
        self.0.push((temporary, path.to_path_buf()));
        Ok(())
    }

    /// Renames every link into place.
    fn place(&self) -> Result<()> {
        for (temporary, path) in &self.0 {
            std::fs::rename(temporary, path).map_err(|e| Error::io(path, e))?;
        }
        Ok(())
    }

    /// Removes the links not yet in place.
    fn remove(&self) {
        for (temporary, _) in &self.0 {
            let _ = std::fs::remove_file(temporary);
        }
    }
}

/// Folders made for the outputs, removed again (deepest first, only when empty) if the split
/// fails.
#[derive(Default)]
struct CreatedDirs(Vec<PathBuf>);

impl CreatedDirs {
    fn create(&mut self, dir: &Path) -> Result<()> {
        let mut missing = Vec::new();
        let mut at = Some(dir);
        while let Some(d) = at.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
            missing.push(d.to_path_buf());
            at = d.parent();
        }
        for d in missing.into_iter().rev() {
            std::fs::create_dir(&d).map_err(|e| Error::io(&d, e))?;
            self.0.push(d);
        }
        Ok(())
    }

    fn remove(&self) {
        for d in self.0.iter().rev() {
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// The group name when none is given: the first input's name up to its first `.`.
fn default_name(inputs: &[PathBuf]) -> String {
    inputs
        .first()
        .and_then(|p| p.file_name())
        .map(|n| {
            n.to_string_lossy()
                .split('.')
                .next()
                .unwrap_or("")
                .to_string()
        })
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "device".to_string())
}

/// The files to write: each file given, by its own name; each folder's regular files and
/// symbolic links, by their paths under it (`recursive` only).
fn plan_files(inputs: &[PathBuf], recursive: bool) -> Result<Vec<Planned>> {
    for input in inputs {
        let meta = std::fs::metadata(input).map_err(|e| Error::io(input, e))?;
        if meta.is_dir() && !recursive {
            return Err(Error::msg(format!(
                "'{}': a folder; give -r to split everything under it",
                input.display()
            )));
        }
        if !meta.is_dir() && input.file_name().is_none() {
            return Err(Error::msg(format!(
                "'{}': not a file name",
                input.display()
            )));
        }
    }
    let walk = walk(
        inputs,
        WalkOptions {
            recursive: true,
            links: Links::Keep,
            files: Taken::Every,
        },
    );
    if let Some(e) = walk.errors.into_iter().next() {
        return Err(e);
    }
    let planned: Vec<Planned> = walk
        .files
        .into_iter()
        .map(|found| Planned {
            input: found.path,
            relative: found.relative,
            kind: found.link.map_or(Kind::File, Kind::Link),
        })
        .collect();
    let mut seen = std::collections::HashSet::new();
    for p in &planned {
        if !seen.insert(&p.relative) {
            return Err(Error::msg(format!(
                "'{}': another input also goes to '{}'",
                p.input.display(),
                p.relative.display()
            )));
        }
    }
    Ok(planned)
}

/// The search paths written into the binary at `relative` (under the output folder): those
/// given, else the archives of `.kpack/` at the output's top, `<name>_@GFXARCH@.kpack`, and
/// each group's archive by its own name.
fn search_paths(config: &SplitConfig, name: &str, relative: &Path) -> Vec<String> {
    if !config.search_paths.is_empty() {
        return config.search_paths.clone();
    }
    let depth = relative
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count()
        .saturating_sub(1);
    let up = "../".repeat(depth);
    std::iter::once(format!("{up}{ARCHIVE_FOLDER}/{name}_{GFXARCH}.kpack"))
        .chain(
            config
                .groups
                .iter()
                .map(|(group, _)| format!("{up}{ARCHIVE_FOLDER}/{name}_{group}.kpack")),
        )
        .collect()
}

/// Whether the PE image `data` has a HIP fat-binary section (`.hip_fat`, or its long name).
fn has_pe_hip_code(data: &[u8]) -> bool {
    use object::Object;
    object::File::parse(data).is_ok_and(|f| {
        [".hip_fat", ".hip_fatbin"]
            .into_iter()
            .any(|name| f.section_by_name(name).is_some())
    })
}

/// Reads the file `data` (at `path`, going to `relative`): `None` when it is to be copied as
/// it is (not an ELF program or shared library with HIP device code).
fn read_binary<'a>(
    path: &Path,
    data: &'a [u8],
    relative: &Path,
    search: &[String],
    config: &SplitConfig,
) -> Result<Option<SplitBinary<'a>>> {
    let linked = matches!(
        object::File::parse(data).map(|f| object::Object::kind(&f)),
        Ok(object::ObjectKind::Executable | object::ObjectKind::Dynamic)
    );
    if linked && data.starts_with(b"MZ") && has_pe_hip_code(data) {
        return Err(Error::msg(format!(
            "'{}': a PE image with HIP device code: only ELF programs and shared libraries are \
             split; ls, extract and verify read PE images split by AMD's splitter",
            path.display()
        )));
    }
    if !linked || !data.starts_with(b"\x7fELF") {
        return Ok(None);
    }
    let Some(code) = kpack_elf::hip_code(data).map_err(|e| Error::container(path, e))? else {
        return Ok(None);
    };
    if let Some((k, w)) = code
        .wrappers
        .iter()
        .enumerate()
        .find(|(_, w)| w.magic == HIPK_MAGIC)
    {
        return Err(Error::msg(format!(
            "'{}': .hipFatBinSegment wrapper {k} at {:#x}: already HIPK: the file is split",
            path.display(),
            w.at
        )));
    }
    if code.fatbin.data.iter().all(|&b| b == 0) {
        return Ok(None);
    }
    let bundle_of = bundle_offsets(path, &code)?;
    let mut unique: Vec<usize> = bundle_of.clone();
    unique.sort_unstable();
    unique.dedup();
    let fatbin = code.fatbin;
    let bundles: BTreeMap<usize, Entries<'a>> = unique
        .par_iter()
        .map(|&at| {
            let context = format!(
                "section '.hip_fatbin': offset {:#x}",
                fatbin.offset + at as u64
            );
            let fail = |e: crate::format::Error| Error::format_in(path, &context, e);
            let (entries, refused) =
                device_entries(&fatbin.data[at..], config.max_decompressed).map_err(fail)?;
            if let Some(id) = refused.first() {
                return Err(Error::msg(format!(
                    "'{}': {context}: bundle entry {}: its target ID is not a processor's, so \
                     it names no archive; nothing was written",
                    path.display(),
                    crate::error::quoted(id)
                )));
            }
            Ok((at, entries))
        })
        .collect::<Vec<Result<_>>>()
        .into_iter()
        .collect::<Result<_>>()?;
    let kernel_name = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    let reference = KpackRef {
        kernel_name: &kernel_name,
        kpack_search_paths: search.iter().map(String::as_str).collect(),
    }
    .to_bytes();
    let program = kpack_elf::split(data, &reference).map_err(|e| Error::container(path, e))?;
    Ok(Some(SplitBinary {
        bundle_of,
        bundles,
        kernel_name,
        program,
    }))
}

/// The offset in `.hip_fatbin` of the bundle each wrapper points at.
fn bundle_offsets(path: &Path, code: &HipCode<'_>) -> Result<Vec<usize>> {
    code.wrappers
        .iter()
        .enumerate()
        .map(|(k, w)| {
            let fail = |why: &str| {
                Error::msg(format!(
                    "'{}': .hipFatBinSegment wrapper {k} at {:#x}: {why}",
                    path.display(),
                    w.at
                ))
            };
            let target = w.target.ok_or_else(|| fail("points at nothing"))?;
            if !code.fatbin.holds(target) {
                return Err(fail(&format!("points at {target:#x}, outside .hip_fatbin")));
            }
            Ok((target - code.fatbin.address) as usize)
        })
        .collect()
}

/// The HIP device entries (processor and code) of the bundle or compressed bundle at the
/// start of `here`, empty entries left out; and the IDs of HIP entries whose target ID cannot
/// be a processor key ([`kformat::is_processor_key`]).
fn device_entries(
    here: &[u8],
    limit: u64,
) -> std::result::Result<(Entries<'_>, Vec<String>), crate::format::Error> {
    if let Some(compressed) = CompressedBundle::parse(here)? {
        let at = compressed.header_size();
        let spill_failed = |e: std::io::Error| {
            crate::format::Error::new(
                at,
                crate::format::ErrorKind::Decompress(format!(
                    "a temporary file for the inflated bundle: {}",
                    crate::error::io_message(&e)
                )),
            )
        };
        let mut spill = Spill::on_disk().map_err(spill_failed)?;
        compressed
            .inflate_bundle_to(limit, |piece| spill.append(piece).map_err(spill_failed))??;
        let inflated = Arc::new(spill.finish().map_err(spill_failed)?);
        let bundle = Bundle::parse(inflated.bytes())?.ok_or_else(not_a_bundle)?;
        let base = inflated.bytes().as_ptr() as usize;
        let (entries, refused) = hip_entries(&bundle);
        let found = entries
            .into_iter()
            .map(|(arch, data)| {
                let start = data.as_ptr() as usize - base;
                (arch, start..start + data.len())
            })
            .collect::<Vec<_>>();
        let found = found
            .into_iter()
            .map(|(arch, range)| (arch, Code::Inflated(inflated.clone(), range)))
            .collect();
        return Ok((found, refused));
    }
    let bundle = Bundle::parse(here)?.ok_or_else(not_a_bundle)?;
    let (entries, refused) = hip_entries(&bundle);
    let entries = entries
        .into_iter()
        .map(|(arch, data)| (arch, Code::Mapped(data)))
        .collect();
    Ok((entries, refused))
}

fn not_a_bundle() -> crate::format::Error {
    crate::format::Error::new(0, crate::format::ErrorKind::NotAContainer)
}

/// The non-empty HIP device entries of `bundle`: target ID and code; and the IDs of the
/// non-empty HIP entries whose target ID is no processor key, which must not be split.
fn hip_entries<'b>(bundle: &Bundle<'b>) -> (Vec<(String, &'b [u8])>, Vec<String>) {
    let mut refused = Vec::new();
    let entries = bundle
        .entries()
        .iter()
        .filter(|e| !e.data.is_empty())
        .filter_map(|e| {
            let target = ImageTarget::of_bundle_entry(e.id);
            if target.producer != Producer::Hip || EntryId::parse(e.id).is_host() {
                return None;
            }
            if !kformat::is_processor_key(&target.target_id) {
                refused.push(e.id.to_string());
                return None;
            }
            Some((target.target_id, e.data))
        })
        .collect();
    (entries, refused)
}

/// The archives being made, by processor or group: each one's table so far and its stored
/// code objects, staged in an unnamed temporary file.
#[derive(Default)]
struct Stage {
    archives: BTreeMap<String, StagedArchive>,
}

/// One archive being made.
struct StagedArchive {
    file_name: String,
    info: ArchiveInfo,
    entries: Vec<TocEntry>,
    /// The stored code objects (plain, or zstd frames), one after another.
    blobs: Spill,
    /// Where each stored code object is in `blobs`, by ordinal.
    places: Vec<(u64, u64)>,
}

/// What a split's summary lists of an archive: its path, its processors, its number of code
/// objects and its size.
type ArchiveListed = (PathBuf, Vec<String>, usize, u64);

/// Code objects compressed at once while staging.
const FRAMES_AT_ONCE: usize = 16;

impl Stage {
    /// Adds the code objects of one split binary, a bundle's code stored once however many
    /// wrappers point at it.
    fn add(&mut self, split: &SplitBinary<'_>, config: &SplitConfig, name: &str) -> Result<()> {
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
    fn store(
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
    fn archive(
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
fn write_archive(root: &Path, dir: &Path, a: StagedArchive) -> Result<(Closed, ArchiveListed)> {
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

/// The error for an output that does not read back as written.
fn not_as_written(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::msg(format!(
        "'{}': the written file does not read back as it should ({why}); nothing was written",
        path.display()
    ))
}

/// Reads the archive just written to `out` back: its header and table, every stored code
/// object inside the file, and `entries` entries.
fn read_back_archive(path: &Path, out: &mut Output, entries: usize) -> Result<()> {
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

/// Reads the host file of `split` just written to `out` back: its reference names the
/// binary, and every wrapper is `HIPK` with its position as its index.
fn read_back_split(input: &Path, out: &mut Output, split: &SplitBinary<'_>) -> Result<()> {
    let Some(written) = out.written_so_far()? else {
        return Ok(());
    };
    let data = Input::open(&written)?;
    let found = crate::host::kpack::split_binary(input, &data)?;
    let expected: Vec<u64> = (0..split.bundle_of.len() as u64).collect();
    match found {
        Some(found)
            if found.reference.kernel_name == split.kernel_name && found.indices == expected =>
        {
            Ok(())
        }
        _ => Err(not_as_written(
            input,
            "no kpack reference, or other wrappers",
        )),
    }
}

/// How to merge.
#[derive(Debug, Clone)]
pub struct MergeConfig {
    /// The folder the merged files go to.
    pub output: PathBuf,
    /// The archives to take code from; empty: those each binary's reference finds, as the
    /// runtime finds them (`ROCM_KPACK_PATH`, `ROCM_KPACK_PATH_PREFIX` honoured).
    pub archives: Vec<PathBuf>,
    /// The largest a compressed code object may inflate to.
    pub max_decompressed: u64,
}

/// What a merge wrote: each file, with its number of bundles and code objects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MergeSummary {
    /// Output path, bundles, code objects.
    pub files: Vec<(PathBuf, usize, usize)>,
}

/// One archive open for merging.
struct OpenArchive {
    path: PathBuf,
    data: Input,
}

/// Puts the code of archives back into the split binaries `inputs`, written into
/// `config.output` under their own names, all or nothing.
#[tracing::instrument(skip_all, fields(output = %config.output.display()))]
pub fn merge(inputs: &[PathBuf], config: &MergeConfig) -> Result<MergeSummary> {
    let planned = plan_files(inputs, false)?;
    let mut summary = MergeSummary::default();
    let mut dirs = CreatedDirs::default();
    let result = merge_each(&planned, config, &mut dirs, &mut summary);
    if result.is_err() {
        dirs.remove();
    }
    result.map(|()| summary)
}

/// Merges the `planned` files, their outputs put in place together at the end.
fn merge_each(
    planned: &[Planned],
    config: &MergeConfig,
    dirs: &mut CreatedDirs,
    summary: &mut MergeSummary,
) -> Result<()> {
    dirs.create(&config.output)?;
    let mut outputs = Vec::new();
    let mut kept = Vec::new();
    for p in planned {
        let data = Input::open(&p.input)?;
        let (bundles, starts, count) = merged_bundles(&p.input, &data, config)?;
        let program =
            kpack_elf::merge(&data, bundles, &starts).map_err(|e| Error::container(&p.input, e))?;
        let path = config.output.join(&p.relative);
        let mut out = Output::create(&path)?;
        let meta = std::fs::metadata(&p.input).map_err(|e| Error::io(&p.input, e))?;
        out.set_mode(std::os::unix::fs::PermissionsExt::mode(&meta.permissions()));
        program.write_to(&p.input, &mut out, &data)?;
        read_back_merged(&p.input, &mut out, starts.iter().flatten().count())?;
        let distinct = starts
            .iter()
            .flatten()
            .collect::<std::collections::BTreeSet<_>>();
        summary.files.push((path, distinct.len(), count));
        outputs.push(out);
        kept.push(data);
    }
    commit_all(outputs)
}

/// Reads the merged file just written to `out` back: `wrappers` `HIPF` wrappers, each pointing
/// at a bundle in `.hip_fatbin`, and no kpack reference left.
fn read_back_merged(input: &Path, out: &mut Output, wrappers: usize) -> Result<()> {
    let Some(written) = out.written_so_far()? else {
        return Ok(());
    };
    let data = Input::open(&written)?;
    let code = kpack_elf::hip_code(&data)
        .map_err(|e| not_as_written(input, e))?
        .ok_or_else(|| not_as_written(input, "no .hip_fatbin"))?;
    let bundles = code
        .wrappers
        .iter()
        .filter(|w| w.magic == kformat::HIPF_MAGIC)
        .filter_map(|w| w.target)
        .filter(|&t| code.fatbin.holds(t))
        .filter(|&t| {
            let at = (t - code.fatbin.address) as usize;
            matches!(Bundle::parse(&code.fatbin.data[at..]), Ok(Some(_)))
        })
        .count();
    if bundles != wrappers || crate::host::kpack::split_binary(input, &data)?.is_some() {
        let why = format!("{bundles} wrappers reach a bundle instead of {wrappers}");
        return Err(not_as_written(input, why));
    }
    Ok(())
}

/// The archives to merge the split binary at `path` from: those given, or those the loader
/// finds for any device ([`find_archives`]); an archive that cannot be opened is an error.
fn merge_sources(
    path: &Path,
    split: &crate::host::kpack::SplitBinary<'_>,
    config: &MergeConfig,
) -> Result<Vec<OpenArchive>> {
    if !config.archives.is_empty() {
        return config
            .archives
            .iter()
            .map(|a| {
                Ok(OpenArchive {
                    path: a.clone(),
                    data: Input::open(a)?,
                })
            })
            .collect();
    }
    let env = Environment::from_vars(|v| std::env::var(v).ok());
    let mut found = find_archives(path, &split.reference, &env, &every_target_name());
    if !found.problems.is_empty() {
        return Err(found.problems.swap_remove(0));
    }
    if found.archives.is_empty() {
        return Err(Error::msg(format!(
            "'{}': no kpack archive found; looked at {}",
            path.display(),
            found.where_looked(&env)
        )));
    }
    Ok(found
        .archives
        .into_iter()
        .map(|(path, data)| OpenArchive { path, data })
        .collect())
}

/// The bundles of the split binary `data` (at `path`), packed on 4096-byte boundaries, where
/// each wrapper's starts (`None`: not a `HIPK` wrapper), and the number of code objects.
fn merged_bundles(
    path: &Path,
    data: &[u8],
    config: &MergeConfig,
) -> Result<(Spilled, Vec<Option<u64>>, usize)> {
    let split = crate::host::kpack::split_binary(path, data)?.ok_or_else(|| {
        Error::msg(format!(
            "'{}': not split: no kpack reference",
            path.display()
        ))
    })?;
    let code = kpack_elf::hip_code(data)
        .map_err(|e| Error::container(path, e))?
        .ok_or_else(|| Error::msg(format!("'{}': no .hip_fatbin section", path.display())))?;
    let opened = merge_sources(path, &split, config)?;
    let archive_files: Vec<PathBuf> = opened.iter().map(|o| o.path.clone()).collect();
    let parsed: Vec<(&OpenArchive, Archive<'_>)> = opened
        .iter()
        .map(|o| {
            Ok((
                o,
                Archive::parse(&o.data).map_err(|e| Error::format(&o.path, e))?,
            ))
        })
        .collect::<Result<_>>()?;
    let name = split.reference.kernel_name;
    let by_index = code_objects_by_index(name, &parsed)?;
    let host = match object::File::parse(data).map(|f| object::Object::architecture(&f)) {
        Ok(object::Architecture::Aarch64) => "host-aarch64-unknown-linux-gnu-",
        _ => "host-x86_64-unknown-linux-gnu-",
    };
    let mut spill = Spill::new();
    let spill_error = |e: std::io::Error| {
        Error::msg(format!(
            "'{}': the bundles cannot be held in a temporary file: {}",
            path.display(),
            crate::error::io_message(&e)
        ))
    };
    let mut start_of: BTreeMap<u64, u64> = BTreeMap::new();
    let mut shared: HashMap<Vec<(&str, usize, u64)>, u64> = HashMap::new();
    let mut starts = Vec::with_capacity(code.wrappers.len());
    let mut count = 0;
    for (k, w) in code.wrappers.iter().enumerate() {
        if w.magic != HIPK_MAGIC {
            starts.push(None);
            continue;
        }
        let index = w.reserved1;
        if let Some(&start) = start_of.get(&index) {
            starts.push(Some(start));
            continue;
        }
        let arches = by_index
            .get(&index)
            .filter(|a| !a.is_empty())
            .ok_or_else(|| no_archive_holds(path, &toc_key(name, index), k, &archive_files))?;
        // Indices whose code objects are the same stored ones (wrappers that shared a bundle,
        // as in -fgpu-rdc binaries) share one bundle again.
        let same: Vec<(&str, usize, u64)> = arches
            .iter()
            .map(|(arch, (a, entry))| (arch.as_str(), *a, entry.ordinal))
            .collect();
        if let Some(&start) = shared.get(&same) {
            start_of.insert(index, start);
            starts.push(Some(start));
            continue;
        }
        spill.pad_to(BUNDLE_ALIGN).map_err(spill_error)?;
        let start = spill.len();
        append_bundle(path, host, arches, &parsed, config, &mut spill)?;
        count += arches.len();
        start_of.insert(index, start);
        shared.insert(same, start);
        starts.push(Some(start));
    }
    let bundles = spill.finish().map_err(spill_error)?;
    Ok((bundles, starts, count))
}

/// The error for code object `key` (wrapper `k`) of the split binary at `path` found in none
/// of `archives`.
fn no_archive_holds(path: &Path, key: &str, k: usize, archives: &[PathBuf]) -> Error {
    let searched = if archives.is_empty() {
        "no archive found".to_string()
    } else {
        let names: Vec<String> = archives.iter().map(|p| p.display().to_string()).collect();
        names.join(", ")
    };
    Error::msg(format!(
        "'{}': no archive holds code object {key} (wrapper {k}); searched: {searched}",
        path.display()
    ))
}

/// The code objects of the binary `name` in the archives `parsed` (in search order): per
/// index, per processor key, the first archive's entry (its archive's place in `parsed`).
/// A processor key that could not be part of a bundle entry ID is an error naming the
/// archive.
#[allow(clippy::type_complexity)]
fn code_objects_by_index<'p, 'a>(
    name: &str,
    parsed: &'p [(&'a OpenArchive, Archive<'a>)],
) -> Result<BTreeMap<u64, BTreeMap<String, (usize, &'p KernelEntry<'a>)>>> {
    let mut by_index: BTreeMap<u64, BTreeMap<String, (usize, &KernelEntry<'_>)>> = BTreeMap::new();
    for (number, (o, archive)) in parsed.iter().enumerate() {
        for entry in &archive.entries {
            let Some((binary, index)) = split_toc_key(entry.key) else {
                continue;
            };
            if binary != name {
                continue;
            }
            if !kformat::is_processor_key(entry.arch) {
                return Err(Error::msg(format!(
                    "'{}': code object {}: processor key {} is no target ID, so it cannot be a \
                     bundle entry's",
                    o.path.display(),
                    crate::error::quoted(entry.key),
                    crate::error::quoted(entry.arch)
                )));
            }
            by_index
                .entry(index)
                .or_default()
                .entry(entry.arch.to_string())
                .or_insert((number, entry));
        }
    }
    Ok(by_index)
}

/// Appends to `spill` the bundle of one code-object index: the host entry, then the code
/// object of each processor in `arches`, each inflated straight into its place through a
/// window (never held whole), and checked against the size its table declares.
fn append_bundle(
    path: &Path,
    host: &str,
    arches: &BTreeMap<String, (usize, &KernelEntry<'_>)>,
    parsed: &[(&OpenArchive, Archive<'_>)],
    config: &MergeConfig,
    spill: &mut Spill,
) -> Result<()> {
    let spill_error = |e: std::io::Error| {
        crate::format::Error::new(
            0,
            crate::format::ErrorKind::Decompress(format!(
                "the bundle's temporary file: {}",
                crate::error::io_message(&e)
            )),
        )
    };
    let ids: Vec<String> = std::iter::once(host.to_string())
        .chain(arches.keys().map(|arch| entry_id(arch)))
        .collect();
    let sizes: Vec<(&str, u64)> = ids
        .iter()
        .zip(std::iter::once(0).chain(arches.values().map(|(_, e)| e.original_size)))
        .map(|(id, size)| (id.as_str(), size))
        .collect();
    let layout = bundle::layout(&sizes, BUNDLE_ALIGN).map_err(|e| Error::format(path, e))?;
    let start = spill.len();
    spill
        .append(&layout.header)
        .map_err(|e| Error::format(path, spill_error(e)))?;
    for ((number, entry), offset) in arches.values().zip(layout.offsets.iter().skip(1)) {
        let Some((o, archive)) = parsed.get(*number) else {
            continue;
        };
        let gap = (start + offset).saturating_sub(spill.len());
        spill
            .reserve(gap)
            .map_err(|e| Error::format(path, spill_error(e)))?;
        archive
            .read_code_object(entry, config.max_decompressed, Decoding::Fresh, |piece| {
                spill.append(piece).map_err(spill_error)
            })
            .map_err(|e| Error::format(&o.path, e))?;
    }
    Ok(())
}

/// The bundle entry ID of HIP code for `arch`, as clang writes it.
fn entry_id(arch: &str) -> String {
    if arch == "amdgcnspirv" {
        format!("hipv4-spirv64-amd-amdhsa--{arch}")
    } else {
        format!("hipv4-amdgcn-amd-amdhsa--{arch}")
    }
}
