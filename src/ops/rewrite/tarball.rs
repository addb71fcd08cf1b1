//! A tarball (plain, or compressed with gzip, xz, zstd or bzip2; a conda `.tar.bz2`, the
//! tarballs of a Debian package or a `.conda`) written again as a tarball of the same
//! compression. The tar stream is read once into a spill; the members that may hold device
//! code are rewritten in parallel, as files of their own are; then the stream is written in
//! order: every other member byte for byte, a member rewritten with its header blocks as they
//! were but for the size fields and checksums, a member pruned left out with its pax and
//! long-name headers, the end blocks as they were. A manifest member (conda's
//! `info/paths.json`, a Debian package's `md5sums` and `control`) is given the changes of
//! the files it lists.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use rayon::prelude::*;

use super::package::{named_pruning, refuse_empty, rewritten_member, Change, PruneMembers};
use crate::error::{Error, Result};
use crate::format::md5::Md5;
use crate::host::package::manifest::{conda, sha256, Edit, Sha256};
use crate::host::package::tar::Compression;
use crate::host::package::tar_edit::{self, levels, Encoder, Entry, Layout};
use crate::host::package::{may_hold_device_code, member_error, member_path, Budget, HEAD};
use crate::io::spill::{Spill, Spilled};
use crate::io::Input;
use crate::ops::rewrite::variant::{index_json, no_index, Naming};
use crate::ops::rewrite::{start_output, verify, Mode, Placement, RewriteConfig, Summary};
use std::sync::atomic::{AtomicBool, Ordering};

/// A file's contents after a rewrite, as manifests list them.
#[derive(Debug, Clone, Copy)]
pub(super) struct NewContents {
    /// Its size in bytes.
    pub size: u64,
    /// Its MD5 (Debian's `md5sums`).
    pub md5: [u8; 16],
    /// Its SHA-256 (conda's `paths.json`).
    pub sha256: Sha256,
}

/// What became of a file a tarball holds: its size before, and its contents after (`None`
/// once pruned).
#[derive(Debug, Clone, Copy)]
pub(super) struct FileEdit {
    /// Its size before.
    pub before: u64,
    /// Its contents after, `None` when it was left out.
    pub after: Option<NewContents>,
    /// Whether it is a hard link to a file rewritten (the file counts once in sizes).
    pub hard_link: bool,
}

/// The files of a tarball that a rewrite changed, by their names in it.
pub(super) type Edits = HashMap<Vec<u8>, FileEdit>;

/// The new contents of a manifest member: asked of each regular member no rewrite changed
/// (its shown name, its name in the tarball, its bytes, the tarball's edits), `None` to keep
/// it as it is.
pub(super) type ManifestFn<'m> =
    dyn Fn(&Path, &[u8], &[u8], &Edits) -> Result<Option<Vec<u8>>> + Sync + 'm;

/// How a tarball is written again.
pub(super) struct TarOptions<'m> {
    /// Whether a symbolic link may point to an absolute name (a Debian package's files are
    /// unpacked at the root, where it stays inside).
    pub absolute_links: bool,
    /// The zstd level of a zstd tarball.
    pub zstd_level: i32,
    /// The manifests it holds, kept right.
    pub manifest: &'m ManifestFn<'m>,
}

/// A tarball rewritten.
pub(super) struct Rewritten {
    /// What changed, each member with device code listed.
    pub summary: Summary,
    /// The tarball written again, compressed as it was; `None` when nothing changed.
    pub bytes: Option<Spilled>,
    /// The files it holds that changed.
    pub edits: Edits,
}

/// The manifest of conda's tarballs: `info/paths.json` given each file's new SHA-256 and
/// size, and losing the entries of files pruned.
pub(super) fn paths_json(
    shown: &Path,
    name: &[u8],
    bytes: &[u8],
    edits: &Edits,
) -> Result<Option<Vec<u8>>> {
    if name != b"info/paths.json" || edits.is_empty() {
        return Ok(None);
    }
    let (new, counts) = conda::update(bytes, |path| {
        edits.get(path.as_bytes()).map(|edit| match edit.after {
            Some(after) => Edit::Rewritten {
                digest: after.sha256,
                size: after.size,
            },
            None => Edit::Removed,
        })
    })
    .map_err(|e| Error::file(member_path(shown, name), e.to_string()))?;
    Ok((!counts.is_empty()).then_some(new))
}

/// Rewrites the tarball `data` (stored as `compression`, shown as `shown`) in memory, or a
/// spill once large.
pub(super) fn rewrite_tar(
    shown: &Path,
    data: &[u8],
    compression: Compression,
    config: &RewriteConfig,
    prune: PruneMembers,
    options: &TarOptions<'_>,
) -> Result<Rewritten> {
    let budget = Budget::new(config.max_decompressed);
    let layout = tar_edit::layout(shown, data, compression, &budget, options.absolute_links)?;
    let mut changes = layout
        .entries
        .par_iter()
        .map(|entry| entry_change(shown, &layout, entry, config, prune))
        .collect::<Result<Vec<Change>>>()?;
    keep_linked(&layout, &mut changes);
    let edits = edits_of(&layout, &changes);
    for (entry, change) in layout.entries.iter().zip(changes.iter_mut()) {
        if entry.regular() && matches!(change, Change::Copied) {
            let bytes = layout.bytes(&entry.data);
            if let Some(new) = (options.manifest)(shown, &entry.name, bytes, &edits)? {
                *change = Change::Rewritten(Summary::default(), Input::from_bytes(new));
            }
        }
    }
    let mut summary = Summary {
        size_before: data.len() as u64,
        size_after: data.len() as u64,
        ..Summary::default()
    };
    for (entry, change) in layout.entries.iter().zip(&changes) {
        if let Some(s) = change.summary() {
            if s.images_before > 0 || matches!(change, Change::Pruned(_)) {
                summary.add_counts(s);
                if s.members.is_empty() {
                    summary
                        .members
                        .push((member_path(shown, &entry.name), s.clone()));
                } else {
                    summary.members.extend(s.members.iter().cloned());
                }
            }
        }
    }
    let changed = changes
        .iter()
        .any(|c| matches!(c, Change::Rewritten(..) | Change::Pruned(_)));
    if !changed {
        return Ok(Rewritten {
            summary,
            bytes: None,
            edits,
        });
    }
    let bytes = write(shown, &layout, &changes, compression, options.zstd_level)?;
    summary.size_after = bytes.len();
    Ok(Rewritten {
        summary,
        bytes: Some(bytes),
        edits,
    })
}

/// What becomes of the member `entry` of the tarball `layout` (shown as `shown`).
fn entry_change(
    shown: &Path,
    layout: &Layout<'_>,
    entry: &Entry,
    config: &RewriteConfig,
    prune: PruneMembers,
) -> Result<Change> {
    if !entry.regular() {
        return Ok(Change::Copied);
    }
    let bytes = layout.bytes(&entry.data);
    let head = bytes.get(..HEAD).unwrap_or(bytes);
    let change = if may_hold_device_code(head) {
        rewritten_member(shown, &entry.name, bytes, config, prune.bare)?
    } else {
        Change::Copied
    };
    Ok(named_pruning(
        change,
        &entry.name,
        bytes.len() as u64,
        config,
        prune,
    ))
}

/// Keeps a member that a hard link links to, rather than prune it: the link would be left
/// dangling, and unpacking it would fail.
fn keep_linked(layout: &Layout<'_>, changes: &mut [Change]) {
    let linked: std::collections::HashSet<&[u8]> = layout
        .entries
        .iter()
        .filter(|e| !e.hard_link.is_empty())
        .map(|e| e.hard_link.as_slice())
        .collect();
    for (entry, change) in layout.entries.iter().zip(changes.iter_mut()) {
        if let Change::Pruned(s) = change {
            if linked.contains(entry.name.as_slice()) {
                *change = Change::Kept(Summary {
                    images_after: s.images_before,
                    size_after: s.size_before,
                    ..s.clone()
                });
            }
        }
    }
}

/// The files `changes` rewrote or left out, and the hard links to those rewritten (which
/// manifests list as files of their own).
fn edits_of(layout: &Layout<'_>, changes: &[Change]) -> Edits {
    let mut edits = Edits::new();
    for (entry, change) in layout.entries.iter().zip(changes) {
        let before = entry.data.end - entry.data.start;
        let after = match change {
            Change::Rewritten(_, contents) => Some(NewContents {
                size: contents.len() as u64,
                md5: Md5::digest(contents),
                sha256: sha256(contents),
            }),
            Change::Pruned(_) => None,
            _ => continue,
        };
        let hard_link = false;
        let edit = FileEdit {
            before,
            after,
            hard_link,
        };
        edits.insert(entry.name.clone(), edit);
    }
    for entry in &layout.entries {
        if let Some(&edit) = edits.get(&entry.hard_link) {
            let hard_link = true;
            edits.insert(entry.name.clone(), FileEdit { hard_link, ..edit });
        }
    }
    edits
}

/// A writer into a spill.
struct SpillWriter(Spill);

impl Write for SpillWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.append(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes the tarball again, compressed as `compression` says.
fn write(
    shown: &Path,
    layout: &Layout<'_>,
    changes: &[Change],
    compression: Compression,
    zstd_level: i32,
) -> Result<Spilled> {
    let io = |e: std::io::Error| Error::io(shown, e);
    let mut out = Encoder::new(SpillWriter(Spill::new()), compression, zstd_level).map_err(io)?;
    for (entry, change) in layout.entries.iter().zip(changes) {
        match change {
            Change::Pruned(_) => {}
            Change::Rewritten(_, contents) => {
                let size = contents.len() as u64;
                let headers = tar_edit::headers_for(layout, entry, size)
                    .map_err(|why| member_error(shown, &entry.name, why))?;
                out.write_all(&headers).map_err(io)?;
                out.write_all(contents).map_err(io)?;
                let padding = contents.len().next_multiple_of(512) - contents.len();
                out.write_all(&vec![0u8; padding]).map_err(io)?;
            }
            Change::Copied | Change::Kept(_) => {
                out.write_all(layout.bytes(&entry.span)).map_err(io)?;
            }
        }
    }
    out.write_all(layout.bytes(&layout.end)).map_err(io)?;
    out.finish().map_err(io)?.0.finish().map_err(io)
}

/// Writes `bytes` (a spill's) to `out`.
pub(super) fn write_spilled(out: &mut crate::io::Output, bytes: &Spilled) -> Result<()> {
    match bytes.input() {
        Some(input) => Ok(out.write_part(input, input)?),
        None => Ok(out.write_bytes(bytes.bytes())?),
    }
}

/// Rewrites the tarball `input` (read as `data`, stored as `compression`) to where
/// `placement` says; a conda `.tar.bz2`'s `info/paths.json` is kept right.
pub(super) fn rewrite_tarball(
    input: &Path,
    data: &Input,
    compression: Compression,
    placement: &Placement,
    config: &RewriteConfig,
    (mode, prune): (Mode, PruneMembers),
    naming: Option<&Naming>,
) -> Result<Summary> {
    let variant = naming.map(|n| &n.variant);
    let seen = AtomicBool::new(false);
    let manifest = |shown: &Path, name: &[u8], bytes: &[u8], edits: &Edits| match index_json(
        variant, shown, name, bytes, &seen,
    )? {
        Some(new) => Ok(Some(new)),
        None => paths_json(shown, name, bytes, edits),
    };
    let options = TarOptions {
        absolute_links: false,
        zstd_level: levels::ZSTD,
        manifest: &manifest,
    };
    let rewritten = rewrite_tar(input, data, compression, config, prune, &options)?;
    if variant.is_some() && !seen.load(Ordering::Relaxed) {
        return Err(no_index(input));
    }
    let summary = rewritten.summary;
    refuse_empty(input, &summary, config)?;
    let Some(bytes) = rewritten.bytes else {
        if placement.in_place() || mode == Mode::DryRun {
            return Ok(summary);
        }
        let mut out = start_output(input, data, placement)?;
        out.write_part(data, data)?;
        out.commit()?;
        return Ok(summary);
    };
    if mode == Mode::DryRun {
        return Ok(summary);
    }
    let mut out = start_output(input, data, placement)?;
    write_spilled(&mut out, &bytes)?;
    verify(input, &mut out, &summary, config.max_decompressed, &[])?;
    out.commit()?;
    Ok(summary)
}
