//! A `.conda` package named to a rewrite: a zip of `metadata.json`, `pkg-*.tar.zst` (the
//! files) and `info-*.tar.zst` (the metadata). The files' tarball is rewritten as any
//! tarball is, compressed again with zstd at conda's level, then the metadata's tarball gets
//! the new SHA-256 and size of each file rewritten in `info/paths.json` (the entries of files
//! pruned removed). The zip itself is written again as any zip is.

use std::path::Path;

use super::package::{Change, PruneMembers};
use super::tarball::{paths_json, rewrite_tar, Edits, TarOptions};
use crate::error::Result;
use crate::host::package::tar::compression_of;
use crate::host::package::tar_edit::levels;
use crate::host::package::variant::Variant;
use crate::host::package::zip::{self, Layout};
use crate::host::package::{member_error, member_path};
use crate::ops::rewrite::variant::{index_json, no_index};
use crate::ops::rewrite::{RewriteConfig, Summary};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the zip `layout` is a `.conda`: it holds `metadata.json` and a `pkg-*.tar.zst`.
pub(super) fn is_conda(layout: &Layout<'_>) -> bool {
    let names = || layout.members.iter().map(|m| m.name);
    names().any(|n| n == b"metadata.json") && names().any(|n| tarball(n, b"pkg-"))
}

/// Whether `name` is a `.conda`'s tarball whose name starts with `prefix`.
fn tarball(name: &[u8], prefix: &[u8]) -> bool {
    name.starts_with(prefix) && name.ends_with(b".tar.zst") && !name.contains(&b'/')
}

/// What becomes of each member of the `.conda` `data` (at `input`): its files' tarballs
/// first, then its metadata's, given their changes.
pub(super) fn changes(
    input: &Path,
    data: &[u8],
    layout: &Layout<'_>,
    config: &RewriteConfig,
    prune: PruneMembers,
    variant: Option<&Variant>,
) -> Result<Vec<Change>> {
    let mut changes: Vec<Change> = layout.members.iter().map(|_| Change::Copied).collect();
    let mut edits = Edits::new();
    let none = |_: &Path, _: &[u8], _: &[u8], _: &Edits| Ok(None);
    for (stored, change) in layout.members.iter().zip(changes.iter_mut()) {
        if tarball(stored.name, b"pkg-") {
            let options = TarOptions {
                absolute_links: false,
                zstd_level: levels::ZSTD_CONDA,
                manifest: &none,
            };
            let (new, tar_edits) = rewritten(input, data, stored, config, prune, &options)?;
            *change = new;
            edits.extend(tar_edits);
        }
    }
    let seen = AtomicBool::new(false);
    let manifest = |shown: &Path, name: &[u8], bytes: &[u8], _: &Edits| match index_json(
        variant, shown, name, bytes, &seen,
    )? {
        Some(new) => Ok(Some(new)),
        None => paths_json(shown, name, bytes, &edits),
    };
    for (stored, change) in layout.members.iter().zip(changes.iter_mut()) {
        if tarball(stored.name, b"info-") {
            let options = TarOptions {
                absolute_links: false,
                zstd_level: levels::ZSTD_CONDA,
                manifest: &manifest,
            };
            let (new, _) = rewritten(
                input,
                data,
                stored,
                config,
                PruneMembers::default(),
                &options,
            )?;
            *change = new;
        }
    }
    if variant.is_some() && !seen.load(Ordering::Relaxed) {
        return Err(no_index(input));
    }
    Ok(changes)
}

/// The tarball member `stored` rewritten, and its files' edits.
fn rewritten(
    input: &Path,
    data: &[u8],
    stored: &zip::Stored<'_>,
    config: &RewriteConfig,
    prune: PruneMembers,
    options: &TarOptions<'_>,
) -> Result<(Change, Edits)> {
    let bytes = zip::whole_member(input, data, stored, config.max_decompressed)?;
    let compression = compression_of(&bytes)
        .ok_or_else(|| member_error(input, stored.name, "not a tarball, as a .conda's must be"))?;
    let shown = member_path(input, stored.name);
    let new = rewrite_tar(&shown, &bytes, compression, config, prune, options)?;
    let summary: Summary = new.summary;
    let change = match new.bytes {
        Some(bytes) => Change::Rewritten(summary, bytes.into_input()),
        None if summary.images_before > 0 => Change::Kept(summary),
        None => Change::Copied,
    };
    Ok((change, new.edits))
}
