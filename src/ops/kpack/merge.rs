//! Putting the code of archives back into split binaries: the archives as the loader finds
//! them (or those given), each code-object index one bundle again, made as the split's record
//! says it was (entry IDs, their order, its storage) when the reference has one.

use crate::ops::kpack::config::{MergeConfig, MergeSummary};
use crate::ops::kpack::plan::{not_as_written, plan_files, CreatedDirs, Planned, BUNDLE_ALIGN};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::format::bundle::{self, Bundle};
use crate::format::ccob::CompressedBundle;
use crate::format::ccob::{self, CompressOptions, Decoding};
use crate::format::image_target::{ImageTarget, Producer};
use crate::format::kpack::record::{BundleShape, Storage};
use crate::format::kpack::{
    self as kformat, split_toc_key, toc_key, Archive, KernelEntry, Scheme, HIPK_MAGIC,
};
use crate::host::kpack::find_archives;
use crate::host::program::kpack_elf::{self, HipCode};
use crate::host::program::{kpack_pe, Fill};
use crate::io::spill::{Hole, MappedRoom, Spill, Spilled};
use crate::io::{commit_all, Input, Output};
use crate::loads::kpack_search::{every_target_name, Environment};
use crate::target::entry_id::EntryId;

/// One archive open for merging.
pub(super) struct OpenArchive {
    pub(super) path: PathBuf,
    pub(super) data: Input,
}

/// Puts the code of archives back into the split binaries `inputs`, written into
/// `config.output` under their own names, all or nothing.
#[tracing::instrument(skip_all, fields(output = %config.output.display()))]
pub fn merge(inputs: &[PathBuf], config: &MergeConfig) -> Result<MergeSummary> {
    // The files named, each by its own name: no tree, few enough to hold.
    let planned: Vec<Planned> = plan_files(inputs, false)?.iter().collect();
    let mut summary = MergeSummary::default();
    let mut dirs = CreatedDirs::default();
    let result = merge_each(&planned, config, &mut dirs, &mut summary);
    if result.is_err() {
        dirs.remove();
    }
    result.map(|()| summary)
}

/// Merges the `planned` files, their outputs put in place together at the end.
pub(super) fn merge_each(
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
        let opened = archives_of(&p.input, &data, config)?;
        let parsed = parse_archives(&opened)?;
        // In an ELF file the code objects stored plain are copied into their places once the
        // file is written around them; a PE image's checksum needs every byte first.
        let pe = is_pe(&data);
        let laid = merged_bundles(&p.input, &data, &parsed, config, !pe)?;
        let program = if pe {
            kpack_pe::merge(&data, laid.bundles, &laid.starts)
        } else {
            kpack_elf::merge(&data, laid.bundles, &laid.starts)
        };
        let mut program = program.map_err(|e| Error::container(&p.input, e))?;
        program.holes = (laid.holes.into_iter())
            .map(|hole| Hole {
                at: hole.at,
                size: hole.size,
                what: Fill::Written(hole.what),
            })
            .collect();
        let path = config.output.join(&p.relative);
        let mut out = Output::create(&path)?;
        out.reserve(program.size());
        let meta = std::fs::metadata(&p.input).map_err(|e| Error::io(&p.input, e))?;
        out.set_mode(std::os::unix::fs::PermissionsExt::mode(&meta.permissions()));
        let fill = |hole: &Hole<u64>, sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>| {
            write_code(&p.input, hole, sink, &parsed, &laid.codes, config)
        };
        program.write_filled(&p.input, &mut out, &data, &fill)?;
        read_back_merged(&p.input, &mut out, laid.starts.iter().flatten().count())?;
        let distinct = laid
            .starts
            .iter()
            .flatten()
            .collect::<std::collections::BTreeSet<_>>();
        summary.files.push((path, distinct.len(), laid.count));
        outputs.push(out);
        kept.push(data);
    }
    Ok(commit_all(outputs)?)
}

/// Reads the merged file just written to `out` back: `wrappers` `HIPF` wrappers, each pointing
/// at a bundle in `.hip_fatbin`, and no kpack reference left.
pub(super) fn read_back_merged(input: &Path, out: &mut Output, wrappers: usize) -> Result<()> {
    let Some(written) = out.written_so_far()? else {
        return Ok(());
    };
    let data = Input::open(&written)?;
    let code = hip_code(&data)
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
            let here = &code.fatbin.data[at..];
            matches!(Bundle::parse(here), Ok(Some(_)))
                || matches!(CompressedBundle::parse(here), Ok(Some(_)))
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
pub(super) fn merge_sources(
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
        return Err(found.none_found(path, "", &env));
    }
    Ok(found
        .archives
        .into_iter()
        .map(|(path, data)| OpenArchive { path, data })
        .collect())
}

/// The archives to merge the split binary `data` (at `path`) from (see [`merge_sources`]).
pub(super) fn archives_of(
    path: &Path,
    data: &[u8],
    config: &MergeConfig,
) -> Result<Vec<OpenArchive>> {
    let split = crate::host::kpack::split_binary(path, data)?
        .ok_or_else(|| Error::file(path, "not split: no kpack reference"))?;
    merge_sources(path, &split, config)
}

/// A code object waiting for its place in the merged bundles: its archive's place among those
/// parsed, and its entry.
pub(super) type Waiting<'p, 'a> = (usize, &'p KernelEntry<'a>);

/// The bundles of a split binary, laid out.
pub(super) struct Laid<'p, 'a> {
    /// The bundles, packed on 4096-byte boundaries; zeros where a hole is.
    pub(super) bundles: Spilled,
    /// The places left in `bundles` for code objects stored plain, written once the file
    /// is written around them ([`write_code`]); each hole's `what` is its place in `codes`.
    pub(super) holes: Vec<Hole<u64>>,
    /// The code objects the holes are for.
    pub(super) codes: Vec<Waiting<'p, 'a>>,
    /// Where each wrapper's bundle starts in `bundles` (`None`: not a `HIPK` wrapper).
    pub(super) starts: Vec<Option<u64>>,
    /// The number of code objects.
    pub(super) count: usize,
}

/// The bundles of the split binary `data` (at `path`), made from the archives `parsed`. With
/// `holes`, each code object stored plain is left as a hole to be copied into the output
/// file; without, it is written into the bundles.
pub(super) fn merged_bundles<'p, 'a>(
    path: &Path,
    data: &[u8],
    parsed: &'p [(&'a OpenArchive, Archive<'a>)],
    config: &MergeConfig,
    holes: bool,
) -> Result<Laid<'p, 'a>> {
    let split = crate::host::kpack::split_binary(path, data)?
        .ok_or_else(|| Error::file(path, "not split: no kpack reference"))?;
    let code = hip_code_of(path, data)?;
    let archive_files: Vec<PathBuf> = parsed.iter().map(|(o, _)| o.path.clone()).collect();
    let name = split.reference.kernel_name;
    let by_index = code_objects_by_index(name, parsed)?;
    let record = split.record(path)?;
    let host = host_entry_id(data);
    let mut made = Made {
        spill: Spill::new(),
        holes: Vec::new(),
        codes: Vec::new(),
    };
    let spill_error = |e: std::io::Error| {
        Error::file(
            path,
            format!(
                "the bundles cannot be held in a temporary file: {}",
                crate::error::io_message(&e)
            ),
        )
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
        made.spill.pad_to(BUNDLE_ALIGN).map_err(spill_error)?;
        let start = made.spill.len();
        let shape = record.as_ref().and_then(|r| r.shape(index));
        let entries = bundle_entries(host, arches, shape);
        append_stored(path, &entries, parsed, config, shape, &mut made)?;
        count += arches.len();
        start_of.insert(index, start);
        shared.insert(same, start);
        starts.push(Some(start));
    }
    if !holes {
        fill_holes(
            path,
            &mut made.spill,
            &made.holes,
            parsed,
            &made.codes,
            config,
        )?;
        made.holes.clear();
    }
    let bundles = made.spill.finish().map_err(spill_error)?;
    Ok(Laid {
        bundles,
        holes: made.holes,
        codes: made.codes,
        starts,
        count,
    })
}

/// Bundles being made: their bytes, and the holes left in them for code objects.
pub(super) struct Made<'p, 'a> {
    spill: Spill,
    holes: Vec<Hole<u64>>,
    codes: Vec<Waiting<'p, 'a>>,
}

/// Writes the code objects `codes` into the `holes` of `spill` (made for the split binary at
/// `path`), in parallel.
fn fill_holes(
    path: &Path,
    spill: &mut Spill,
    holes: &[Hole<u64>],
    parsed: &[(&OpenArchive, Archive<'_>)],
    codes: &[Waiting<'_, '_>],
    config: &MergeConfig,
) -> Result<()> {
    let fill = |hole: &Hole<u64>, sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>| {
        write_code(path, hole, sink, parsed, codes, config)
    };
    let failed = |_: &Hole<u64>, e: std::io::Error| Error::format(path, spill_failed(e));
    spill.fill(holes, &fill, &failed)
}

/// Writes the code object of `hole` (its place in `codes`) of the split binary at `path` into
/// `sink`: the archive's own
/// bytes, which the sink copies by the kernel into a file.
pub(super) fn write_code(
    path: &Path,
    hole: &Hole<u64>,
    sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
    parsed: &[(&OpenArchive, Archive<'_>)],
    codes: &[Waiting<'_, '_>],
    config: &MergeConfig,
) -> Result<()> {
    let found = usize::try_from(hole.what)
        .ok()
        .and_then(|k| codes.get(k))
        .and_then(|&(number, entry)| Some((parsed.get(number)?, entry)));
    let Some(((o, archive), entry)) = found else {
        return Err(Error::file(
            path,
            format!(
                "no code object for the {} bytes at {:#x}",
                hole.size, hole.at
            ),
        ));
    };
    archive
        .read_code_object(entry, config.max_decompressed, Decoding::Fresh, |piece| {
            sink(piece).map_err(spill_failed)
        })
        .map_err(|e| Error::format(&o.path, e))?;
    // Read once: the archive's pages need not stay resident while the rest is merged.
    if let Ok((_, stored)) = archive.stored_bytes(entry) {
        crate::io::release_mapped(stored);
    }
    Ok(())
}

/// Whether `data` is read as a PE image (it starts with the DOS header's `MZ`).
fn is_pe(data: &[u8]) -> bool {
    data.starts_with(b"MZ")
}

/// The HIP device code of the split binary `data` (at `path`): an error without any.
fn hip_code_of<'d>(path: &Path, data: &'d [u8]) -> Result<HipCode<'d>> {
    let section = if is_pe(data) {
        ".hip_fat"
    } else {
        ".hip_fatbin"
    };
    hip_code(data)
        .map_err(|e| Error::container(path, e))?
        .ok_or_else(|| Error::file(path, format!("no {section} section")))
}

/// The HIP device code of the ELF program or library, or PE image, `data`.
fn hip_code(data: &[u8]) -> crate::host::error::Result<Option<HipCode<'_>>> {
    if is_pe(data) {
        kpack_pe::hip_code(data)
    } else {
        kpack_elf::hip_code(data)
    }
}

/// The host entry ID clang writes into the bundles of `data`, for a bundle made without a
/// record of its entries: its machine's Linux triple in an ELF file; in a PE image
/// `x86_64-unknown-linux-gnu` whatever the machine, as clang 22 writes for x86-64 and AArch64
/// Windows alike.
fn host_entry_id(data: &[u8]) -> &'static str {
    let aarch64 = matches!(
        object::File::parse(data).map(|f| object::Object::architecture(&f)),
        Ok(object::Architecture::Aarch64)
    );
    if aarch64 && !is_pe(data) {
        "host-aarch64-unknown-linux-gnu-"
    } else {
        "host-x86_64-unknown-linux-gnu-"
    }
}

/// The error for code object `key` (wrapper `k`) of the split binary at `path` found in none
/// of `archives`.
pub(super) fn no_archive_holds(path: &Path, key: &str, k: usize, archives: &[PathBuf]) -> Error {
    let searched = if archives.is_empty() {
        "no archive found".to_string()
    } else {
        let names: Vec<String> = archives
            .iter()
            .map(|p| crate::io::shown(p).into_owned())
            .collect();
        names.join(", ")
    };
    Error::file(
        path,
        format!("no archive holds code object {key} (wrapper {k}); searched: {searched}"),
    )
}

/// The code objects of the binary `name` in the archives `parsed` (in search order): per
/// index, per processor key, the first archive's entry (its archive's place in `parsed`).
/// A processor key that could not be part of a bundle entry ID is an error naming the
/// archive.
#[allow(clippy::type_complexity)]
pub(super) fn code_objects_by_index<'p, 'a>(
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
                return Err(Error::file(
                    &o.path,
                    format!(
                        "code object {}: processor key {} is no target ID, so it cannot be a \
                     bundle entry's",
                        crate::error::quoted(entry.key),
                        crate::error::quoted(entry.arch)
                    ),
                ));
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

/// Each archive of `opened`, parsed.
fn parse_archives(opened: &[OpenArchive]) -> Result<Vec<(&OpenArchive, Archive<'_>)>> {
    opened
        .iter()
        .map(|o| {
            let archive = Archive::parse(&o.data).map_err(|e| Error::format(&o.path, e))?;
            Ok((o, archive))
        })
        .collect()
}

/// Appends to `spill` the bundle of `entries`, stored as `shape` records it (compressed with
/// its version and method, at its level or the method's default), else plain.
fn append_stored<'p, 'a>(
    path: &Path,
    entries: &MergedEntries<'p, 'a>,
    parsed: &[(&OpenArchive, Archive<'_>)],
    config: &MergeConfig,
    shape: Option<&BundleShape>,
    made: &mut Made<'p, 'a>,
) -> Result<()> {
    match shape.map(|s| s.storage) {
        Some(Storage::Compressed {
            version,
            method,
            level,
        }) => {
            let options = CompressOptions {
                method,
                level: level.unwrap_or_else(|| method.default_level()),
                version,
            };
            append_compressed(path, entries, parsed, config, options, &mut made.spill)
        }
        Some(Storage::Plain) | None => append_bundle(path, entries, parsed, config, made),
    }
}

/// The entries of one code-object index's bundle, in order: each ID, and for a device entry
/// its code object (the archive's place in the list, and its entry).
pub(super) type MergedEntries<'p, 'a> = Vec<(String, Option<(usize, &'p KernelEntry<'a>)>)>;

/// The entries of the bundle of one code-object index whose code objects are `arches`: as
/// `shape` records them when there is one (IDs as spelled, in their order; a device entry
/// whose processor no archive holds is left out), else the host entry `host` then each
/// processor's in name order. A processor of `arches` the shape lacks comes last.
pub(super) fn bundle_entries<'p, 'a>(
    host: &str,
    arches: &BTreeMap<String, (usize, &'p KernelEntry<'a>)>,
    shape: Option<&BundleShape>,
) -> MergedEntries<'p, 'a> {
    let Some(shape) = shape else {
        return std::iter::once((host.to_string(), None))
            .chain(
                arches
                    .iter()
                    .map(|(arch, &code)| (entry_id(arch), Some(code))),
            )
            .collect();
    };
    let mut placed: Vec<&str> = Vec::new();
    let mut entries: MergedEntries<'p, 'a> = Vec::with_capacity(shape.ids.len());
    for id in &shape.ids {
        if EntryId::parse(id).is_host() {
            entries.push((id.clone(), None));
            continue;
        }
        let target = ImageTarget::of_bundle_entry(id);
        let found = (target.producer == Producer::Hip)
            .then(|| arches.get_key_value(target.target_id.as_str()))
            .flatten();
        if let Some((arch, &code)) = found {
            if !placed.contains(&arch.as_str()) {
                placed.push(arch);
                entries.push((id.clone(), Some(code)));
            }
        }
    }
    for (arch, &code) in arches {
        if !placed.contains(&arch.as_str()) {
            entries.push((entry_id(arch), Some(code)));
        }
    }
    entries
}

/// The error for a temporary file of a bundle being made that failed.
fn spill_failed(e: std::io::Error) -> crate::format::Error {
    crate::format::Error::new(
        0,
        crate::format::ErrorKind::Decompress(format!(
            "the bundle's temporary file: {}",
            crate::error::io_message(&e)
        )),
    )
}

/// Appends to `made` the bundle of `entries`: the header, then each code object. One stored
/// plain gets a hole of its size, filled later by the kernel's copy of the archive's bytes
/// (none pass through this process); a compressed one is inflated straight into its place
/// through a window (never held whole), and checked against the size its table declares.
pub(super) fn append_bundle<'p, 'a>(
    path: &Path,
    entries: &MergedEntries<'p, 'a>,
    parsed: &[(&OpenArchive, Archive<'_>)],
    config: &MergeConfig,
    made: &mut Made<'p, 'a>,
) -> Result<()> {
    let sizes: Vec<(&str, u64)> = entries
        .iter()
        .map(|(id, code)| (id.as_str(), code.map_or(0, |(_, e)| e.original_size)))
        .collect();
    let layout = bundle::layout(&sizes, BUNDLE_ALIGN).map_err(|e| Error::format(path, e))?;
    let spill = &mut made.spill;
    let start = spill.len();
    spill
        .append(&layout.header)
        .map_err(|e| Error::format(path, spill_failed(e)))?;
    for ((_, code), offset) in entries.iter().zip(&layout.offsets) {
        let Some((number, entry)) = *code else {
            continue;
        };
        let Some((o, archive)) = parsed.get(number) else {
            continue;
        };
        let gap = (start + offset).saturating_sub(spill.len());
        spill
            .reserve(gap)
            .map_err(|e| Error::format(path, spill_failed(e)))?;
        if archive.scheme == Scheme::None {
            // The stored size is checked now (nothing is read): the hole is as large as the
            // archive's bytes.
            archive
                .read_code_object(entry, config.max_decompressed, Decoding::Fresh, |_| Ok(()))
                .map_err(|e| Error::format(&o.path, e))?;
            let at = spill
                .reserve(entry.original_size)
                .map_err(|e| Error::format(path, spill_failed(e)))?;
            made.holes.push(Hole {
                at,
                size: entry.original_size,
                what: made.codes.len() as u64,
            });
            made.codes.push((number, entry));
            continue;
        }
        archive
            .read_code_object(entry, config.max_decompressed, Decoding::Fresh, |piece| {
                spill.append_part(&o.data, piece).map_err(spill_failed)
            })
            .map_err(|e| Error::format(&o.path, e))?;
    }
    Ok(())
}

/// Appends to `spill` the bundle of `entries` compressed as `options` say: made whole in an
/// unnamed temporary file first, as the compressor takes the whole bundle, and compressed
/// (zstd) into another.
pub(super) fn append_compressed(
    path: &Path,
    entries: &MergedEntries<'_, '_>,
    parsed: &[(&OpenArchive, Archive<'_>)],
    config: &MergeConfig,
    options: CompressOptions,
    spill: &mut Spill,
) -> Result<()> {
    let mut plain = Made {
        spill: Spill::on_disk().map_err(|e| Error::format(path, spill_failed(e)))?,
        holes: Vec::new(),
        codes: Vec::new(),
    };
    append_bundle(path, entries, parsed, config, &mut plain)?;
    fill_holes(
        path,
        &mut plain.spill,
        &plain.holes,
        parsed,
        &plain.codes,
        config,
    )?;
    let plain = plain
        .spill
        .finish()
        .map_err(|e| Error::format(path, spill_failed(e)))?;
    let failed = |e| Error::format(path, spill_failed(e));
    let Some(bound) = ccob::compressed_bound(plain.bytes().len(), &options) else {
        let (compressed, _) =
            ccob::compress(plain.bytes(), &options).map_err(|e| Error::format(path, e))?;
        return spill.append(&compressed).map_err(failed);
    };
    // Compressed into a mapped temporary file: neither the plain bundle nor the compressed
    // one is held in memory, whatever their size.
    let mut room = MappedRoom::new(bound).map_err(failed)?;
    let (len, _) = ccob::compress_into(plain.bytes(), &options, room.space())
        .map_err(|e| Error::format(path, e))?;
    room.keep(len);
    spill.append(room.bytes()).map_err(failed)
}

/// The bundle entry ID of HIP code for `arch`, as clang writes it.
pub(super) fn entry_id(arch: &str) -> String {
    if arch == "amdgcnspirv" {
        format!("hipv4-spirv64-amd-amdhsa--{arch}")
    } else {
        format!("hipv4-amdgcn-amd-amdhsa--{arch}")
    }
}
