//! Pruning a tree for a set of devices: files that are bare device images (a code object as
//! a runtime loads it, in no container) are wholly kept or wholly for other targets, and so
//! are removed whole; files without device code whose names carry only processors no kept
//! device loads code for (a Tensile catalogue `..._gfx1100.dat`) may go with them.
//!
//! # Example
//!
//! The processors a file's name carries, which decide whether pruning removes a file without
//! device code.
//!
//! ```
//! use offload::ops::prune;
//!
//! assert_eq!(prune::processors_in_name("Kernels_gfx1100.dat"), ["gfx1100"]);
//! assert_eq!(prune::processors_in_name("TensileLibrary_gfx90a-xnack+_gfx11-generic.co"), ["gfx11-generic", "gfx90a"]);
//! assert!(prune::processors_in_name("libamdhip64.so").is_empty());
//! ```

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::error::{Error, Result};
use crate::format::bare::BareKind;
use crate::format::image_target::ImageTarget;
use crate::host::scan::{DeviceImage, Origin};
use crate::io::beneath::Identity;
use crate::io::{Input, Output};
use crate::ops::rewrite::{Mode, Placement, RewriteConfig};
use crate::target::processor::{ProcessorKind, PROCESSORS};

/// Whether the scan found `image` as the file itself: a bare device image (a code object,
/// cubin, PTX, SPIR-V, device bitcode) in no archive member, section or container. A file
/// whose every image is such is bare device images only. An image in a package's member is
/// not the file: a package of bare code objects is not pruned whole.
pub(crate) fn is_bare(image: &DeviceImage<'_>) -> bool {
    matches!(image.origin, Origin::Bare(_))
        && image.package.is_none()
        && image.members.is_empty()
        && image.section.is_none()
        && image.offset == Some(0)
}

/// A file of bare device images, judged by a strip's keep rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BareFile {
    /// The targets of its images (`gfx90a:xnack+`), in file order.
    pub targets: Vec<String>,
    /// The file's size in bytes.
    pub size: u64,
    /// Whether a device the strip keeps loads it; if not, it is only for other targets.
    pub kept: bool,
}

impl BareFile {
    /// The file of `size` bytes whose bare images are for `targets`, judged by `config` as
    /// one translation unit (what a runtime chooses among when it loads the file).
    pub fn judge(targets: &[ImageTarget], size: u64, config: &RewriteConfig) -> BareFile {
        BareFile {
            targets: targets.iter().map(target_name).collect(),
            size,
            kept: config.keeps(targets).into_iter().any(|kept| kept),
        }
    }
}

/// An image's target as summaries name it: its target ID, else its triple.
fn target_name(target: &ImageTarget) -> String {
    match target.target_id.as_str() {
        "" => target.triple.clone(),
        id => id.to_string(),
    }
}

/// What pruning does to a file wholly for other targets (or named for removed processors).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The file stays: left in place, or copied unchanged to the output.
    Keep,
    /// The file goes: removed in place, or not copied to the output.
    Prune,
}

/// What became of a file that a strip did not rewrite (or, in a dry run, would become).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Left in place as it is.
    Left,
    /// Copied unchanged to the output.
    Copied,
    /// Removed (in place).
    Removed,
    /// Not copied to the output.
    NotCopied,
}

/// Does `action` to `input`, which was read as the file `read` (its device and inode), to be
/// placed as `placement` says; with [`Mode::DryRun`], only says what it would do. In place,
/// a file found in a tree is removed through its folder's descriptor, never through a
/// symbolic link, and only while its name holds the file that was read. Not in place, a
/// file pruned is not copied, and a name already at its output (a hard-linked mirror of the
/// tree) is removed from the output folder, so that the folder is the tree less what was
/// pruned; the input is never touched.
pub fn settle(
    input: &Path,
    placement: &Placement,
    read: Option<Identity>,
    action: Action,
    mode: Mode,
) -> Result<Fate> {
    let fate = match (action, placement.in_place()) {
        (Action::Keep, true) => Fate::Left,
        (Action::Keep, false) => Fate::Copied,
        (Action::Prune, true) => Fate::Removed,
        (Action::Prune, false) => Fate::NotCopied,
    };
    if mode == Mode::DryRun {
        return Ok(fate);
    }
    match (fate, placement) {
        (Fate::Copied, Placement::New(output)) => copy_unchanged(input, output)?,
        (Fate::Removed, _) => remove(input, placement, read)?,
        (Fate::NotCopied, Placement::New(output)) => remove_stale(output)?,
        _ => {}
    }
    Ok(fate)
}

/// Removes `input`, pruned in place (see [`settle`]).
fn remove(input: &Path, placement: &Placement, read: Option<Identity>) -> Result<()> {
    tracing::info!(file = %input.display(), "pruned");
    let cannot = |e: std::io::Error| cannot_remove(input, &e);
    match placement.folder(input)? {
        Some((folder, name)) => {
            let read = read.ok_or_else(|| cannot(std::io::Error::other("it was not read")))?;
            folder.remove(&name, read).map_err(cannot)
        }
        None => std::fs::remove_file(input).map_err(cannot),
    }
}

/// Removes what is at `output` in an output folder, unless it is a folder: an earlier copy,
/// or another name of the input (a hard link, a symbolic link), which only loses that name.
fn remove_stale(output: &Path) -> Result<()> {
    match std::fs::symlink_metadata(output) {
        Ok(meta) if !meta.is_dir() => {
            std::fs::remove_file(output).map_err(|e| cannot_remove(output, &e))
        }
        _ => Ok(()),
    }
}

/// The error of a file pruned that could not be removed: the file, what was being done, and
/// what the system said (`'tree/ro/k_gfx906.hsaco': cannot remove: Permission denied`).
pub fn cannot_remove(path: &Path, e: &std::io::Error) -> Error {
    Error::file(path, format!("cannot remove: {}", crate::io::io_message(e)))
}

/// Copies `input` to `output` as it is, with its permissions.
fn copy_unchanged(input: &Path, output: &Path) -> Result<()> {
    let data = Input::open(input)?;
    let mut out = Output::create(output)?;
    let meta = std::fs::metadata(input).map_err(|e| Error::io(input, e))?;
    out.set_mode(std::os::unix::fs::PermissionsExt::mode(&meta.permissions()));
    out.write_part(&data, &data)?;
    out.commit()?;
    Ok(())
}

/// The processors and generic targets the file name `name` carries: its tokens split at
/// `_`, `-` and `.`, generic targets (`gfx11-generic`, hyphenated) found first, a feature
/// suffix (`gfx90a-xnack+`, `gfx90a:xnack+`) counting as its processor. Each once, in order.
pub fn processors_in_name(name: &str) -> Vec<&'static str> {
    let mut found: Vec<&'static str> = Vec::new();
    let mut rest = name.to_string();
    let mut generics: Vec<&'static str> = PROCESSORS
        .iter()
        .filter(|p| p.kind() == ProcessorKind::Generic)
        .map(|p| p.name)
        .collect();
    // The longest first, so that a generic target whose name ends another's is not found
    // inside it.
    generics.sort_by_key(|g| std::cmp::Reverse(g.len()));
    for generic in generics {
        while let Some(at) = token_at(&rest, generic) {
            if !found.contains(&generic) {
                found.push(generic);
            }
            rest.replace_range(at..at + generic.len(), "_");
        }
    }
    for token in rest.split(['_', '-', '.']) {
        let processor = token.split(':').next().unwrap_or(token);
        if let Some(row) = PROCESSORS.iter().find(|p| p.name == processor) {
            if row.kind() != ProcessorKind::Generic && !found.contains(&row.name) {
                found.push(row.name);
            }
        }
    }
    found
}

/// Where `word` stands in `text` as a whole token (bounded by the start, the end or one of
/// `_`, `-`, `.`), if it does.
fn token_at(text: &str, word: &str) -> Option<usize> {
    let bound = |c: Option<char>| c.is_none_or(|c| matches!(c, '_' | '-' | '.'));
    text.match_indices(word).map(|(at, _)| at).find(|&at| {
        bound(text[..at].chars().next_back()) && bound(text[at + word.len()..].chars().next())
    })
}

/// A file without device code whose name carries processors, all of them removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedFile {
    /// The processors its name carries.
    pub processors: Vec<&'static str>,
    /// The file's size in bytes.
    pub size: u64,
    /// The file judged (its device and inode, its name not followed): what pruning removes.
    pub read: Identity,
}

/// The file at `path` (holding no device code) as named for removed processors: `None` when
/// its name carries no processor, or one a device `config` keeps would load code for.
pub fn named_for_removed(path: &Path, config: &RewriteConfig) -> Result<Option<NamedFile>> {
    // Only looked in for processor names, which are ASCII: a byte that is not UTF-8 cannot
    // make or break one, and nothing is named after this text.
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    if !named_only_for_removed(&name, config) {
        return Ok(None);
    }
    let processors = processors_in_name(&name);
    let meta = std::fs::symlink_metadata(path).map_err(|e| Error::io(path, e))?;
    Ok(Some(NamedFile {
        processors,
        size: meta.len(),
        read: (meta.dev(), meta.ino()),
    }))
}

/// Whether the file name `name` carries processors, none of which a device `config` keeps
/// would load code for.
pub fn named_only_for_removed(name: &str, config: &RewriteConfig) -> bool {
    let processors = processors_in_name(name);
    !processors.is_empty() && !processors.iter().any(|p| is_kept(p, config))
}

/// Whether a device `config` keeps would load code built for `processor` (as if a code
/// object for it, by the keep rule).
fn is_kept(processor: &str, config: &RewriteConfig) -> bool {
    config
        .keeps(&[ImageTarget::of_bare(
            BareKind::CodeObject,
            "amdgcn-amd-amdhsa",
            processor,
        )])
        .first()
        .copied()
        .unwrap_or(true)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::ops::rewrite::{Change, Ptx};

    #[test]
    fn a_removal_refused_names_the_file_and_what_was_done() {
        let denied = std::io::Error::from_raw_os_error(libc::EACCES);
        let e = cannot_remove(Path::new("tree/ro/k_gfx906.hsaco"), &denied);
        assert_eq!(
            e.to_string(),
            "'tree/ro/k_gfx906.hsaco': cannot remove: Permission denied"
        );
    }

    fn keeping(ids: &[&str]) -> RewriteConfig {
        RewriteConfig {
            change: Change::Keep(ids.iter().map(|id| id.parse().unwrap()).collect()),
            allow_empty: true,
            max_decompressed: u64::MAX,
            ptx: Ptx::AsAsked,
        }
    }

    #[test]
    fn names_carry_processors_generic_targets_and_feature_suffixes() {
        let names = [
            ("Kernels.so-000-gfx90a-xnack+.hsaco", vec!["gfx90a"]),
            (
                "TensileLibrary_Type_SS_Contraction_l_Alik_Bljk_Cijk_Dijk_gfx90a.dat",
                vec!["gfx90a"],
            ),
            ("TensileLibrary_lazy_gfx1100.dat", vec!["gfx1100"]),
            (
                "TensileLibrary_Type_SS_Contraction_l_Alik_Bljk_Cijk_Dijk_fallback.dat",
                vec![],
            ),
            ("kernels_gfx11-generic.co", vec!["gfx11-generic"]),
            (
                "k_gfx9-4-generic_gfx942.co",
                vec!["gfx9-4-generic", "gfx942"],
            ),
            ("mygfx90a.dat", vec![]),
            ("k-gfx90a:xnack-.co", vec!["gfx90a"]),
        ];
        for (name, expected) in names {
            assert_eq!(processors_in_name(name), expected, "{name}");
        }
    }

    #[test]
    fn a_name_is_kept_when_a_device_kept_loads_code_for_one_of_its_processors() {
        let xnack = keeping(&["gfx90a:xnack+"]);
        let dat = |n: &str| Path::new(n).to_path_buf();
        assert!(is_kept("gfx90a", &xnack));
        assert!(!is_kept("gfx1100", &xnack));
        assert!(is_kept("gfx11-generic", &keeping(&["gfx1100"])));
        assert!(!is_kept("gfx11-generic", &xnack));
        // No processor in the name: not named.
        assert_eq!(
            named_for_removed(&dat("fallback.dat"), &xnack).unwrap(),
            None
        );
    }
}
