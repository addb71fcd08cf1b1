//! `offload kpack`: moving the device code of programs and shared libraries into kpack
//! archives (one per processor, or per group of processors), and putting it back.
//!
//! Splitting reads every file first (in parallel, bundles too), and writes only when all of
//! them read well: the host files and the archives go to temporary files beside their places,
//! renamed into place together at the end, so a damaged file anywhere leaves nothing behind.
//!
//! Code-object indices are the wrappers' positions in `.hipFatBinSegment`, which is what each
//! `HIPK` wrapper's `reserved1` holds and what the loader asks for: the archives key the code
//! of the bundle wrapper `k` points at as `<binary>#k`, for every processor it has. (AMD's
//! Python splitter numbers code objects per processor instead, so a binary whose translation
//! units target different processors gets keys the loader never asks for.)

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use tracing::info;

use crate::container::kpack::find_archives;
use crate::container::program::kpack_elf::{self, HipCode};
use crate::container::program::NewProgram;
use crate::error::{Error, Result};
use crate::format::bundle::{self, Bundle};
use crate::format::ccob::CompressedBundle;
use crate::format::entry_id::EntryId;
use crate::format::image_target::{ImageTarget, Producer};
use crate::format::kpack::{
    self as kformat, compress_code_object, split_toc_key, toc_key, Archive, ArchiveInfo, KpackRef,
    Scheme, TocEntry, GFXARCH, HIPK_MAGIC,
};
use crate::format::kpack_search::{every_target_name, Environment};
use crate::io::spill::{Spill, Spilled};
use crate::io::{commit_all, Input, Output};
use crate::ops::inputs::{walk, Links, Taken, WalkOptions};

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

/// The code of one device entry: borrowed from the input, or from an inflated bundle.
#[derive(Clone)]
enum Code<'a> {
    Mapped(&'a [u8]),
    Inflated(Arc<Vec<u8>>, std::ops::Range<usize>),
}

impl Code<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Code::Mapped(b) => b,
            Code::Inflated(v, r) => &v[r.clone()],
        }
    }
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

/// Splits `inputs` (files, or folders with `recursive`) into `config.output`.
#[tracing::instrument(skip_all, fields(output = %config.output.display()))]
pub fn split(inputs: &[PathBuf], config: &SplitConfig) -> Result<SplitSummary> {
    let planned = plan_files(inputs, config.recursive)?;
    let name = match &config.name {
        Some(name) => name.clone(),
        None => default_name(inputs),
    };
    let opened: Vec<(usize, Input)> = planned
        .par_iter()
        .enumerate()
        .filter(|(_, p)| matches!(p.kind, Kind::File))
        .map(|(i, p)| Ok((i, Input::open(&p.input)?)))
        .collect::<Vec<Result<_>>>()
        .into_iter()
        .collect::<Result<_>>()?;
    // Read everything first: a damaged file stops the split before anything is written.
    let read: Vec<(usize, Option<SplitBinary<'_>>)> = opened
        .par_iter()
        .map(|(i, data)| {
            let p = &planned[*i];
            let _span = tracing::info_span!("file", path = %p.input.display()).entered();
            let search = search_paths(config, &name, &p.relative);
            let split = read_binary(&p.input, data, &p.relative, &search, config)?;
            Ok((*i, split))
        })
        .collect::<Vec<Result<_>>>()
        .into_iter()
        .collect::<Result<_>>()?;

    let archives = group_archives(&read, config, &name);
    let mut summary = SplitSummary::default();
    let mut dirs = CreatedDirs::default();
    let written = (|| -> Result<Vec<Output>> {
        let mut outputs = Vec::new();
        let archive_dir = config.output.join(ARCHIVE_FOLDER);
        if !archives.is_empty() {
            dirs.create(&archive_dir)?;
        }
        for (i, _) in &read {
            if let Some(parent) = config.output.join(&planned[*i].relative).parent() {
                dirs.create(parent)?;
            }
        }
        let sources: Vec<&Input> = opened.iter().map(|(_, input)| input).collect();
        let made: Vec<Output> = archives
            .par_iter()
            .map(|a| write_archive(&archive_dir, a, config.scheme, &sources))
            .collect::<Vec<Result<_>>>()
            .into_iter()
            .collect::<Result<_>>()?;
        for (a, out) in archives.iter().zip(&made) {
            let path = out.path().to_path_buf();
            let size = a.size;
            summary
                .archives
                .push((path, a.info.gfx_arches.clone(), a.entries.len(), size));
        }
        outputs.extend(made);
        let files: Vec<Output> = read
            .par_iter()
            .map(|(i, split)| {
                let p = &planned[*i];
                let data = &opened.iter().find(|(j, _)| j == i).expect("opened").1;
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
                Ok(out)
            })
            .collect::<Vec<Result<_>>>()
            .into_iter()
            .collect::<Result<_>>()?;
        outputs.extend(files);
        Ok(outputs)
    })();
    let outputs = match written {
        Ok(outputs) => outputs,
        Err(e) => {
            dirs.remove();
            return Err(e);
        }
    };
    if let Err(e) = commit_all(outputs) {
        dirs.remove();
        return Err(e);
    }
    for p in &planned {
        if let Kind::Link(target) = &p.kind {
            let path = config.output.join(&p.relative);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
            }
            let _ = std::fs::remove_file(&path);
            std::os::unix::fs::symlink(target, &path).map_err(|e| Error::io(&path, e))?;
            summary.copied.push(path);
        }
    }
    for (i, split) in &read {
        let path = config.output.join(&planned[*i].relative);
        match split {
            Some(split) => summary.binaries.push((path, split.bundle_of.len())),
            None => summary.copied.push(path),
        }
    }
    info!(
        binaries = summary.binaries.len(),
        archives = summary.archives.len(),
        "split"
    );
    Ok(summary)
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
        let inflated = Arc::new(compressed.inflate_bundle(limit)??);
        let bundle = Bundle::parse(&inflated)?.ok_or_else(not_a_bundle)?;
        let base = inflated.as_ptr() as usize;
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

/// One archive to write: what its table says, its entries and stored code objects.
struct PlannedArchive<'a> {
    file_name: String,
    info: ArchiveInfo,
    entries: Vec<TocEntry>,
    stored: Vec<Code<'a>>,
    size: u64,
}

/// The archives: one per group of processors given, one per other processor; in each, the
/// code objects of every binary by index, a bundle's code stored once however many wrappers
/// point at it.
fn group_archives<'a>(
    read: &[(usize, Option<SplitBinary<'a>>)],
    config: &SplitConfig,
    name: &str,
) -> Vec<PlannedArchive<'a>> {
    let group_of = |arch: &str| {
        config
            .groups
            .iter()
            .find(|(_, arches)| arches.iter().any(|a| a == arch))
            .map(|(g, _)| g.clone())
    };
    let mut archives: BTreeMap<String, PlannedArchive<'a>> = BTreeMap::new();
    let mut ordinal_of: HashMap<(String, usize, usize, String), u64> = HashMap::new();
    for (file_number, split) in read.iter().filter_map(|(i, s)| Some((*i, s.as_ref()?))) {
        for (index, &at) in split.bundle_of.iter().enumerate() {
            for (arch, code) in &split.bundles[&at] {
                let family = group_of(arch).unwrap_or_else(|| arch.clone());
                let archive = archives.entry(family.clone()).or_insert_with(|| {
                    let arches = match config.groups.iter().find(|(g, _)| *g == family) {
                        Some((_, arches)) => arches.clone(),
                        None => vec![family.clone()],
                    };
                    PlannedArchive {
                        file_name: format!("{name}_{family}.kpack"),
                        info: ArchiveInfo {
                            group_name: name.to_string(),
                            gfx_arch_family: family.clone(),
                            gfx_arches: arches,
                            scheme: config.scheme,
                        },
                        entries: Vec::new(),
                        stored: Vec::new(),
                        size: 0,
                    }
                });
                let once = (family.clone(), file_number, at, arch.clone());
                let ordinal = *ordinal_of.entry(once).or_insert_with(|| {
                    archive.stored.push(code.clone());
                    archive.stored.len() as u64 - 1
                });
                archive.entries.push(TocEntry {
                    key: toc_key(&split.kernel_name, index as u64),
                    arch: arch.clone(),
                    ordinal,
                    original_size: code.bytes().len() as u64,
                });
            }
        }
    }
    archives.into_values().collect()
}

/// Writes the archive `a` into `dir` (to a temporary file, not yet in place); code objects
/// stored plain are copied by the kernel from `sources`, the inputs they are slices of.
fn write_archive(
    dir: &Path,
    a: &PlannedArchive<'_>,
    scheme: Scheme,
    sources: &[&Input],
) -> Result<Output> {
    let path = dir.join(&a.file_name);
    let fail = |e: crate::format::Error| Error::format(&path, e);
    // Compressed, the frames are made first, in parallel; plain, code objects are copied.
    let frames: Vec<Vec<u8>> = match scheme {
        Scheme::None => Vec::new(),
        Scheme::ZstdPerKernel => a
            .stored
            .par_iter()
            .map(|c| {
                let frame = compress_code_object(c.bytes()).map_err(fail);
                // Read once: its pages of the mapped input need not stay.
                crate::io::release_mapped(c.bytes());
                frame
            })
            .collect::<Result<_>>()?,
    };
    let sizes: Vec<u64> = match scheme {
        Scheme::None => a.stored.iter().map(|c| c.bytes().len() as u64).collect(),
        Scheme::ZstdPerKernel => frames.iter().map(|f| f.len() as u64).collect(),
    };
    let plan = kformat::layout(&a.info, &sizes, &a.entries).map_err(fail)?;
    let mut out = Output::create(&path)?;
    out.write_bytes(&plan.head)?;
    out.write_bytes(&plan.count_field(scheme))?;
    for (ordinal, code) in a.stored.iter().enumerate() {
        out.write_bytes(&plan.size_field(scheme, ordinal))?;
        match (scheme, code) {
            (Scheme::ZstdPerKernel, _) => out.write_bytes(&frames[ordinal])?,
            (Scheme::None, Code::Mapped(bytes)) => write_mapped(&mut out, sources, bytes)?,
            (Scheme::None, Code::Inflated(..)) => out.write_bytes(code.bytes())?,
        }
    }
    out.write_bytes(&plan.toc)?;
    out.start_writeback()?;
    read_back_archive(&path, &mut out, a.entries.len())?;
    Ok(out)
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
    let found = crate::container::kpack::split_binary(input, &data)?;
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

/// Writes `bytes`, a slice of an input open in this process, copied by the kernel.
fn write_mapped(out: &mut Output, sources: &[&Input], bytes: &[u8]) -> Result<()> {
    match sources.iter().find(|input| input.holds(bytes)) {
        Some(input) => out.write_part(input, bytes),
        None => out.write_bytes(bytes),
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
    if bundles != wrappers || crate::container::kpack::split_binary(input, &data)?.is_some() {
        let why = format!("{bundles} wrappers reach a bundle instead of {wrappers}");
        return Err(not_as_written(input, why));
    }
    Ok(())
}

/// The archives to merge the split binary at `path` from: those given, or those the loader
/// finds for any device ([`find_archives`]); an archive that cannot be opened is an error.
fn merge_sources(
    path: &Path,
    split: &crate::container::kpack::SplitBinary<'_>,
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
    let split = crate::container::kpack::split_binary(path, data)?.ok_or_else(|| {
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
    // Per index, per processor: the first archive's code object.
    let mut by_index: BTreeMap<u64, BTreeMap<String, Cow<'_, [u8]>>> = BTreeMap::new();
    for (o, archive) in &parsed {
        for entry in &archive.entries {
            let Some((binary, index)) = split_toc_key(entry.key) else {
                continue;
            };
            if binary != name {
                continue;
            }
            let arches = by_index.entry(index).or_default();
            if arches.contains_key(entry.arch) {
                continue;
            }
            let code = archive
                .code_object(entry, config.max_decompressed)
                .map_err(|e| Error::format(&o.path, e))?;
            arches.insert(entry.arch.to_string(), code);
        }
    }
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
    let mut shared: HashMap<Vec<(&str, usize, usize)>, u64> = HashMap::new();
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
            .ok_or_else(|| {
                Error::msg(format!(
                    "'{}': no archive holds code object {} (wrapper {k}); searched: {}",
                    path.display(),
                    toc_key(name, index),
                    if archive_files.is_empty() {
                        "no archive found".to_string()
                    } else {
                        archive_files
                            .iter()
                            .map(|p| p.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                ))
            })?;
        // Indices whose code objects are the same stored ones (wrappers that shared a bundle,
        // as in -fgpu-rdc binaries) share one bundle again.
        let same: Vec<(&str, usize, usize)> = arches
            .iter()
            .map(|(arch, code)| (arch.as_str(), code.as_ptr() as usize, code.len()))
            .collect();
        if let Some(&start) = shared.get(&same) {
            start_of.insert(index, start);
            starts.push(Some(start));
            continue;
        }
        let ids: Vec<String> = std::iter::once(host.to_string())
            .chain(arches.keys().map(|arch| entry_id(arch)))
            .collect();
        let payloads: Vec<&[u8]> = std::iter::once(&[][..])
            .chain(arches.values().map(|c| &**c))
            .collect();
        let sizes: Vec<(&str, u64)> = ids
            .iter()
            .zip(&payloads)
            .map(|(id, p)| (id.as_str(), p.len() as u64))
            .collect();
        let layout = bundle::layout(&sizes, BUNDLE_ALIGN).map_err(|e| Error::format(path, e))?;
        spill.pad_to(BUNDLE_ALIGN).map_err(spill_error)?;
        let start = spill.len();
        spill.append(&layout.header).map_err(spill_error)?;
        for (payload, offset) in payloads.iter().zip(&layout.offsets) {
            let gap = (start + offset).saturating_sub(spill.len());
            spill.append(&vec![0; gap as usize]).map_err(spill_error)?;
            spill.append(payload).map_err(spill_error)?;
            crate::io::release_mapped(payload);
        }
        count += arches.len();
        start_of.insert(index, start);
        shared.insert(same, start);
        starts.push(Some(start));
    }
    let bundles = spill.finish().map_err(spill_error)?;
    Ok((bundles, starts, count))
}

/// The bundle entry ID of HIP code for `arch`, as clang writes it.
fn entry_id(arch: &str) -> String {
    if arch == "amdgcnspirv" {
        format!("hipv4-spirv64-amd-amdhsa--{arch}")
    } else {
        format!("hipv4-amdgcn-amd-amdhsa--{arch}")
    }
}
