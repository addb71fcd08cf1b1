//! A zip (a wheel, any `.zip`) named to `strip`, `compress` or `decompress`: written again as
//! a zip of the same form. A member without device code is copied as it lies in the file
//! (local header, data, data descriptor, central directory entry), only its offset changed;
//! a member with device code is rewritten as a file of its own is, then compressed again with
//! its own method, its headers given the new CRC-32 and sizes (in ZIP64 fields when they need
//! them) and everything else kept. A wheel's `RECORD` gets the new hash and size of each
//! member rewritten and loses the rows of members pruned.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::format::image_target::{ImageTarget, Producer};
use crate::host::package::manifest::{record, sha256, Edit, Sha256};
use crate::host::package::variant::Variant;
use crate::host::package::variant::WheelFolders;
use crate::host::package::zip::{self, Layout, NewSizes, Stored};
use crate::host::package::{self, member_error, member_path, Budget};
use crate::host::scan::{scan_reading, Places, Reading};
use crate::io::spill::{Shelf, Shelved, Spill};
use crate::io::{Input, Output};
use crate::ops::prune::{is_bare, named_only_for_removed, BareFile};
use crate::ops::rewrite::variant::{Naming, Renames};
use crate::ops::rewrite::{
    start_output, verify, Inflater, Mode, NewFile, Placement, RewriteConfig, Summary,
};

/// What a strip with `--prune` leaves out of a zip it rewrites.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PruneMembers {
    /// Members of bare device images only for other targets (`--prune`).
    pub bare: bool,
    /// Members without device code named for removed processors only (`--prune-named`).
    pub named: bool,
}

/// Why the package of `kind`, found `depth` archives deep, is not rewritten.
pub(super) fn refusal(kind: crate::host::package::Kind, depth: usize) -> &'static str {
    use crate::host::package::Kind;
    match kind {
        Kind::Deb => "a Debian package inside an archive is not rewritten: its device code is read (ls, extract, du, verify), not rewritten",
        Kind::Tar(_) => "a tarball inside an archive is not rewritten: its device code is read (ls, extract, du, verify), not rewritten",
        Kind::Zip if depth > 0 => "a zip inside an archive is not rewritten: its device code is read (ls, extract, du, verify), not rewritten",
        Kind::Zip => "a zip is rewritten only when it is named on the command line",
    }
}

/// Rewrites `input` (read as `data`) when it is a package: a zip or wheel (a `.conda`), a
/// tarball (a conda `.tar.bz2`) or a Debian package, each written again as one of its kind;
/// `None` when it is none.
pub(super) fn rewrite_package(
    input: &Path,
    data: &Input,
    placement: &Placement,
    config: &RewriteConfig,
    mode: Mode,
    prune: PruneMembers,
    naming: Option<&Naming>,
) -> Option<Result<Summary>> {
    use crate::host::package::Kind;
    Some(match package::kind(data)? {
        Kind::Zip => rewrite_zip(input, data, placement, config, (mode, prune), naming),
        Kind::Tar(compression) => super::tarball::rewrite_tarball(
            input,
            data,
            compression,
            placement,
            config,
            (mode, prune),
            naming,
        ),
        Kind::Deb if naming.is_some() => Err(Error::file(
            input,
            "a Debian package has no per-architecture variants: --variant makes wheels and conda packages",
        )),
        Kind::Deb => super::deb::rewrite_deb(input, data, placement, config, mode, prune),
    })
}

/// The most a `RECORD` may take: it is read whole, as text.
const RECORD_MOST: u64 = 256 << 20;

/// What becomes of one member.
enum Fate {
    /// Copied as it lies in the file.
    Copied,
    /// Holding device code, left as it was (copied as it lies).
    Kept(Summary),
    /// Written anew: where its bytes as stored wait on the shelf, its sizes and CRC, the
    /// SHA-256 of its contents (for a `RECORD`).
    Rewritten(Summary, Shelved, NewSizes, Sha256),
    /// Left out: bare device images only for other targets.
    Pruned(Summary),
}

impl Fate {
    fn summary(&self) -> Option<&Summary> {
        match self {
            Fate::Copied => None,
            Fate::Kept(s) | Fate::Rewritten(s, ..) | Fate::Pruned(s) => Some(s),
        }
    }
}

/// Rewrites the zip `input` (read as `data`) to where `placement` says; the members `prune`
/// names are left out (and their `RECORD` rows); with `naming`, a variant's members renamed
/// and its metadata given its names.
fn rewrite_zip(
    input: &Path,
    data: &Input,
    placement: &Placement,
    config: &RewriteConfig,
    (mode, prune): (Mode, PruneMembers),
    naming: Option<&Naming>,
) -> Result<Summary> {
    let layout = zip::layout(input, data)?;
    let shelf = Shelf::new().map_err(|e| Error::io(input, e))?;
    let conda = super::conda::is_conda(&layout);
    let renames = naming
        .map(|naming| Renames::of_zip(input, data, &layout, naming, conda))
        .transpose()?;
    let mut fates = if conda {
        let variant = naming.map(|n| &n.variant);
        let changes = super::conda::changes(input, data, &layout, config, prune, variant)?;
        layout
            .members
            .iter()
            .zip(changes)
            .map(|(stored, change)| fate_of(input, stored, change, &shelf))
            .collect::<Result<Vec<Fate>>>()?
    } else {
        let left = AtomicU64::new(config.max_decompressed);
        layout
            .members
            .par_iter()
            .map(|stored| member_fate(input, data, stored, config, prune, (&shelf, &left)))
            .collect::<Result<Vec<Fate>>>()?
    };
    if let Some((at, new)) = renames.as_ref().and_then(|r| r.metadata.as_ref()) {
        if let (Some(stored), Some(slot)) = (layout.members.get(*at), fates.get_mut(*at)) {
            let change = Change::Rewritten(Summary::default(), Input::from_bytes(new.clone()));
            *slot = fate_of(input, stored, change, &shelf)?;
        }
    }
    let folders = renames.as_ref().and_then(|r| r.folders.as_ref());
    update_record(input, data, &layout, &mut fates, &shelf, folders)?;
    let mut summary = Summary {
        size_before: data.len() as u64,
        ..Summary::default()
    };
    for (stored, fate) in layout.members.iter().zip(&fates) {
        if let Some(s) = fate.summary() {
            // A member pruned is named whatever it held.
            if s.images_before > 0 || matches!(fate, Fate::Pruned(_)) {
                summary.add_counts(s);
                if s.members.is_empty() {
                    summary
                        .members
                        .push((member_path(input, stored.name), s.clone()));
                } else {
                    // A tarball's members, each named.
                    summary.members.extend(s.members.iter().cloned());
                }
            }
        }
    }
    refuse_empty(input, &summary, config)?;
    let changed = fates
        .iter()
        .any(|f| matches!(f, Fate::Rewritten(..) | Fate::Pruned(_)));
    summary.size_after = written_size(&layout, &fates);
    if mode == Mode::DryRun || (!changed && placement.in_place()) {
        return Ok(summary);
    }
    let mut out = start_output(input, data, placement)?;
    let names = renames.map(|r| r.names).unwrap_or_default();
    let written = Written {
        fates: &fates,
        names: &names,
    };
    summary.size_after = write(input, data, &layout, &written, &shelf, &mut out)?;
    if changed {
        verify(input, &mut out, &summary, config.max_decompressed, &[])?;
    }
    out.commit()?;
    Ok(summary)
}

/// The size the zip written would have, end records aside (a dry run's estimate).
fn written_size(layout: &Layout<'_>, fates: &[Fate]) -> u64 {
    let central: u64 = layout
        .members
        .iter()
        .zip(fates)
        .filter(|(_, f)| !matches!(f, Fate::Pruned(_)))
        .map(|(m, f)| {
            let span = match f {
                Fate::Rewritten(_, shelved, ..) => shelved.len + 30 + m.name.len() as u64,
                _ => m.span.end - m.span.start,
            };
            span + (m.central.end - m.central.start)
        })
        .sum();
    central + 22 + layout.comment.len() as u64
}

/// What becomes of the member `stored` of the zip `data` (at `input`); what it is rewritten
/// to goes on `shelf`, and what it inflates to comes out of `left`, the budget of the whole
/// zip (as when it is read: many members each under the limit do not add up past it).
fn member_fate(
    input: &Path,
    data: &[u8],
    stored: &Stored<'_>,
    config: &RewriteConfig,
    prune: PruneMembers,
    (shelf, left): (&Shelf, &AtomicU64),
) -> Result<Fate> {
    let start = left.load(Ordering::Relaxed);
    let budget = Budget::new(start);
    let mut change = Change::Copied;
    let visited = zip::visit_member(input, data, stored, &budget, &mut |member| {
        change = rewritten_member(input, stored.name, member.bytes, config, prune.bare)?;
        Ok(())
    });
    let used = start - budget.get();
    let _ = left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| {
        Some(now.saturating_sub(used))
    });
    visited?;
    let change = named_pruning(change, stored.name, stored.size, config, prune);
    fate_of(input, stored, change, shelf)
}

/// The fate of the zip member `stored` whose contents had `change`: a member rewritten is
/// compressed again with its own method, onto `shelf`.
fn fate_of(input: &Path, stored: &Stored<'_>, change: Change, shelf: &Shelf) -> Result<Fate> {
    Ok(match change {
        Change::Copied => Fate::Copied,
        Change::Kept(summary) => Fate::Kept(summary),
        Change::Pruned(summary) => Fate::Pruned(summary),
        Change::Rewritten(summary, contents) => {
            let name = member_path(input, stored.name);
            let (shelved, sizes) = compressed(&name, stored.method, &contents, shelf)?;
            Fate::Rewritten(summary, shelved, sizes, sha256(&contents))
        }
    })
}

/// What becomes of one member of a package, whatever the package's kind.
pub(super) enum Change {
    /// Copied as it is: no device code.
    Copied,
    /// Holding device code, left as it was.
    Kept(Summary),
    /// Rewritten: its new contents, in memory or, when large, a temporary file.
    Rewritten(Summary, Input),
    /// Left out: bare device images only for other targets, or named for removed processors
    /// only.
    Pruned(Summary),
}

impl Change {
    /// What it did, when it held device code or went.
    pub(super) fn summary(&self) -> Option<&Summary> {
        match self {
            Change::Copied => None,
            Change::Kept(s) | Change::Rewritten(s, _) | Change::Pruned(s) => Some(s),
        }
    }
}

/// `change` of the member `name` (of `size` bytes), or its pruning when it holds no device
/// code and `--prune-named` finds it named for removed processors only, as such a file is.
pub(super) fn named_pruning(
    change: Change,
    name: &[u8],
    size: u64,
    config: &RewriteConfig,
    prune: PruneMembers,
) -> Change {
    if !matches!(change, Change::Copied) || !prune.named {
        return change;
    }
    let file_name = name.rsplit(|&b| b == b'/').next().unwrap_or_default();
    if named_only_for_removed(&String::from_utf8_lossy(file_name), config) {
        return Change::Pruned(Summary {
            size_before: size,
            ..Summary::default()
        });
    }
    change
}

/// What becomes of a member named `name` of the package `input` that may hold device code,
/// its contents `bytes`: rewritten as a file of its own is, or pruned whole (`prune`) when it
/// holds bare device images only for other targets.
pub(super) fn rewritten_member(
    input: &Path,
    name: &[u8],
    bytes: &[u8],
    config: &RewriteConfig,
    prune: bool,
) -> Result<Change> {
    if package::kind(bytes).is_some() {
        return Err(member_error(
            input,
            name,
            "a package inside a package is not rewritten (only a Debian package's tarballs and a .conda's are)",
        ));
    }
    let name = member_path(input, name);
    if bytes.starts_with(&crate::format::kpack::MAGIC) {
        return archive_change(&name, bytes, config, prune);
    }
    let mut targets: Vec<ImageTarget> = Vec::new();
    let mut all_bare = true;
    let problems = scan_reading(
        &name,
        bytes,
        Places::Everywhere,
        config.max_decompressed,
        Reading::Headers,
        &mut |image| {
            all_bare &= is_bare(image);
            if image.target.producer != Producer::Host {
                targets.push(image.target.clone());
            }
        },
    )?;
    if let Some(problem) = problems.into_iter().next() {
        return Err(problem);
    }
    if targets.is_empty() {
        return Ok(Change::Copied);
    }
    let size = bytes.len() as u64;
    if all_bare && prune && !BareFile::judge(&targets, size, config).kept {
        return Ok(Change::Pruned(Summary {
            images_before: targets.len(),
            size_before: size,
            ..Summary::default()
        }));
    }
    let mut summary = Summary::default();
    let Some(new) = super::rewrite_file(&name, bytes, config, &mut summary)? else {
        summary.size_after = summary.size_before;
        return Ok(Change::Kept(summary));
    };
    let contents = made_whole(&name, new, bytes, config)?;
    summary.size_after = contents.len() as u64;
    Ok(Change::Rewritten(summary, contents))
}

/// What becomes of a member that is a `.kpack` archive (named `name`, its contents `bytes`):
/// as an archive named alone, kept whole, or left out with `--prune` when it holds code only
/// for other targets.
fn archive_change(
    name: &Path,
    bytes: &[u8],
    config: &RewriteConfig,
    prune: bool,
) -> Result<Change> {
    let targets: Vec<ImageTarget> = crate::ops::ls::list_archive(name, bytes)?
        .iter()
        .map(crate::ops::support::image::ImageRecord::code_object_target)
        .collect();
    let size = bytes.len() as u64;
    let mut summary = Summary {
        images_before: targets.len(),
        size_before: size,
        kept_whole: true,
        ..Summary::default()
    };
    if prune && !BareFile::judge(&targets, size, config).kept {
        return Ok(Change::Pruned(summary));
    }
    summary.images_after = targets.len();
    summary.size_after = size;
    Ok(Change::Kept(summary))
}

/// A rewritten member larger than this is made in a temporary file rather than in memory.
const MADE_ON_DISK_FROM: u64 = 16 << 20;

/// The new contents of a member (whose old contents are `old`), made whole to be hashed and
/// compressed: in memory while small, in an unnamed temporary file beyond that, so that a
/// library of hundreds of megabytes takes disk, not memory.
fn made_whole(
    name: &Path,
    mut new: NewFile<'_>,
    old: &[u8],
    config: &RewriteConfig,
) -> Result<Input> {
    let inflater = Inflater::new(old, config.max_decompressed, name);
    if new.len() < MADE_ON_DISK_FROM {
        return Ok(Input::from_bytes(new.into_bytes(&inflater)?));
    }
    let mut out = Output::scratch(name)?;
    // The old contents are not a file of their own: what is kept of them is copied through
    // memory, a buffer at a time.
    new.write_to(&mut out, &Input::from_bytes(Vec::new()), &inflater)?;
    out.into_scratch()?
        .ok_or_else(|| Error::file(name, "the member made was not kept"))
}

/// Refuses a rewrite of `input` that would leave none of its `summary`'s device images,
/// unless `--allow-empty` allows it.
pub(super) fn refuse_empty(input: &Path, summary: &Summary, config: &RewriteConfig) -> Result<()> {
    if summary.images_before > 0 && summary.images_after == 0 && !config.allow_empty {
        return Err(Error::file(
            input,
            format!(
                "this would remove every device image ({}); give --allow-empty to do it",
                summary.images_before
            ),
        ));
    }
    Ok(())
}

/// `contents` stored as `method` says (stored, or deflated at the usual level) and put on the
/// shelf, with the sizes and CRC-32 its headers give.
fn compressed(
    name: &Path,
    method: u16,
    contents: &[u8],
    shelf: &Shelf,
) -> Result<(Shelved, NewSizes)> {
    let failed = |e| Error::io(name, e);
    let mut crc = flate2::Crc::new();
    crc.update(contents);
    let shelved = match method {
        0 => shelf.put(contents).map_err(failed)?,
        _ => {
            let mut encoder =
                flate2::write::DeflateEncoder::new(Spill::new(), flate2::Compression::default());
            let deflated = encoder
                .write_all(contents)
                .and_then(|()| encoder.finish())
                .and_then(Spill::finish)
                .map_err(failed)?;
            shelf.put(deflated.bytes()).map_err(failed)?
        }
    };
    let sizes = NewSizes {
        crc: crc.sum(),
        compressed_size: shelved.len,
        size: contents.len() as u64,
    };
    Ok((shelved, sizes))
}

/// Whether `name` is a wheel's `RECORD`: `<name>.dist-info/RECORD` at the top of the zip.
fn is_record(name: &[u8]) -> bool {
    name.strip_suffix(b".dist-info/RECORD")
        .is_some_and(|dir| !dir.is_empty() && !dir.contains(&b'/'))
}

/// Gives the wheel's `RECORD` (if the zip holds one) the new hash and size of each member
/// rewritten, and drops the rows of members pruned.
fn update_record(
    input: &Path,
    data: &[u8],
    layout: &Layout<'_>,
    fates: &mut [Fate],
    shelf: &Shelf,
    folders: Option<&WheelFolders>,
) -> Result<()> {
    let mut edits = std::collections::HashMap::new();
    for (stored, fate) in layout.members.iter().zip(fates.iter()) {
        match fate {
            Fate::Rewritten(_, _, sizes, digest) => {
                let edit = Edit::Rewritten {
                    digest: *digest,
                    size: sizes.size,
                };
                edits.insert(stored.name, edit);
            }
            Fate::Pruned(_) => {
                edits.insert(stored.name, Edit::Removed);
            }
            _ => {}
        }
    }
    if edits.is_empty() && folders.is_none() {
        return Ok(());
    }
    let Some(at) = layout.members.iter().position(|m| is_record(m.name)) else {
        return Ok(());
    };
    let Some(stored) = layout.members.get(at) else {
        return Ok(());
    };
    let name = member_path(input, stored.name);
    let text = zip::whole_member(input, data, stored, RECORD_MOST)?;
    let (mut new, _) = record::update(&text, |path| edits.get(path).copied())
        .map_err(|e| Error::file(&name, e.to_string()))?;
    if let Some(folders) = folders {
        new = record::renamed(&new, |path| folders.renamed(path))
            .map_err(|e| Error::file(&name, e.to_string()))?;
    }
    let (shelved, sizes) = compressed(&name, stored.method, &new, shelf)?;
    if let Some(slot) = fates.get_mut(at) {
        *slot = Fate::Rewritten(Summary::default(), shelved, sizes, sha256(&new));
    }
    Ok(())
}

/// What a zip is written from: each member's fate and, for a variant, its new name (`None`:
/// its own; no names at all: every member keeps its own).
struct Written<'w> {
    fates: &'w [Fate],
    names: &'w [Option<Vec<u8>>],
}

/// The member `stored` under the new name `names` gives its index `k`, if any.
fn named<'s>(stored: &Stored<'s>, names: &'s [Option<Vec<u8>>], k: usize) -> Stored<'s> {
    let mut named = stored.clone();
    if let Some(Some(name)) = names.get(k) {
        named.name = name;
    }
    named
}

/// Writes the zip to `out`: each member copied or written anew in file order, then the
/// central directory in its order, then the end records. Returns the size written.
fn write(
    input: &Path,
    data: &Input,
    layout: &Layout<'_>,
    written: &Written<'_>,
    shelf: &Shelf,
    out: &mut Output,
) -> Result<u64> {
    let Written { fates, names } = *written;
    let mut at = 0u64;
    let mut offsets = Vec::with_capacity(fates.len());
    let fail = |stored: &Stored<'_>, message: String| member_error(input, stored.name, message);
    for (k, (stored, fate)) in layout.members.iter().zip(fates).enumerate() {
        offsets.push(at);
        let renamed = matches!(names.get(k), Some(Some(_)));
        match fate {
            Fate::Pruned(_) => {}
            Fate::Rewritten(_, shelved, sizes, _) => {
                let header = zip::local_header(data, &named(stored, names, k), *sizes)
                    .map_err(|e| fail(stored, e))?;
                out.write_bytes(&header)?;
                out.write_file_range(shelf.file(), shelved.at, shelved.len)?;
                at += header.len() as u64 + shelved.len;
            }
            Fate::Copied | Fate::Kept(_) if renamed => {
                // A member copied under a new name: a new local header, its bytes as stored,
                // no data descriptor (the header gives the sizes).
                let header =
                    zip::local_header(data, &named(stored, names, k), zip::sizes_of(stored))
                        .map_err(|e| fail(stored, e))?;
                let part = zip::data_of(data, stored)
                    .ok_or_else(|| fail(stored, "its bytes run past the end of the file".into()))?;
                out.write_bytes(&header)?;
                out.write_part(data, part)?;
                at += header.len() as u64 + part.len() as u64;
            }
            Fate::Copied | Fate::Kept(_) => {
                let part = slice(data, &stored.span)
                    .ok_or_else(|| fail(stored, "its bytes run past the end of the file".into()))?;
                out.write_part(data, part)?;
                at += part.len() as u64;
            }
        }
    }
    let directory = at;
    let mut count = 0u64;
    for &k in &layout.order {
        let (Some(stored), Some(fate), Some(&offset)) =
            (layout.members.get(k), fates.get(k), offsets.get(k))
        else {
            continue;
        };
        let sizes = match fate {
            Fate::Pruned(_) => continue,
            Fate::Rewritten(_, _, sizes, _) => Some(*sizes),
            _ if matches!(names.get(k), Some(Some(_))) => Some(zip::sizes_of(stored)),
            _ => None,
        };
        let entry = zip::central_entry(data, &named(stored, names, k), offset, sizes)
            .map_err(|e| fail(stored, e))?;
        out.write_bytes(&entry)?;
        at += entry.len() as u64;
        count += 1;
    }
    let end = zip::end_records(count, directory, at - directory, layout.comment);
    out.write_bytes(&end)?;
    Ok(at + end.len() as u64)
}

/// `data[range]`, when it is all there.
fn slice<'d>(data: &'d [u8], range: &std::ops::Range<u64>) -> Option<&'d [u8]> {
    let start = usize::try_from(range.start).ok()?;
    let end = usize::try_from(range.end).ok()?;
    data.get(start..end)
}

/// Writes the variant of the package `input` for `variant` into `folder` (which exists),
/// named after it (see `host::package::variant`): its path and what the strip did. An input
/// that is not a wheel or conda package (by its name and its contents) is refused, and
/// nothing is written.
pub fn rewrite_variant(
    input: &Path,
    folder: &Path,
    config: &RewriteConfig,
    variant: &Variant,
    (mode, prune): (Mode, PruneMembers),
) -> Result<(PathBuf, Summary)> {
    let not_package = || {
        Error::file(
            input,
            "not a wheel or conda package by its name (NAME-VERSION-PYTHON-ABI-PLATFORM.whl, NAME-VERSION-BUILD.conda or .tar.bz2): --variant names the package it makes after it",
        )
    };
    let name = input.file_name().ok_or_else(not_package)?.as_bytes();
    let file_name = variant.file_name(name).ok_or_else(not_package)?;
    let output = folder.join(std::ffi::OsStr::from_bytes(&file_name));
    let conda = !name.ends_with(b".whl");
    let naming = Naming {
        variant: variant.clone(),
        file_name,
        conda,
    };
    let data = Input::open(input)?;
    let placement = Placement::New(output.clone());
    let summary = rewrite_package(input, &data, &placement, config, mode, prune, Some(&naming))
        .unwrap_or_else(|| {
            Err(Error::file(
                input,
                "not a package (a wheel, .conda or conda .tar.bz2): its contents are none",
            ))
        })?;
    Ok((output, summary))
}
