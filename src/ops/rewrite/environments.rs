//! The environments installed in the trees of a job (a Python `site-packages`, a conda
//! prefix): once its files are rewritten and pruned, the manifests that list them
//! (`*.dist-info/RECORD`, `conda-meta/*.json`) are brought up to date, so that `pip uninstall`,
//! `pip check` and conda's checks see the files as they are now.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::host::package::manifest::installed::{self, Touched, Updated, Writing};
use crate::ops::rewrite::plan::Plan;
use crate::ops::rewrite::{Mode, Placement};

/// The files of each tree a job changed, by the tree's root and their paths below it.
type Trees = BTreeMap<PathBuf, BTreeMap<PathBuf, Touched>>;

/// Brings up to date the manifests of the trees of `plan` that list the files a job changed
/// (`changed`: where each was placed, and what became of it): each manifest updated (in a
/// dry run, that would be), or the error naming it. Only trees are looked in: the folders
/// walked in place, and the output folder they are mirrored under.
pub fn update<'p>(
    plan: &Plan,
    changed: impl IntoIterator<Item = (&'p Placement, Touched)>,
    mode: Mode,
) -> Vec<Result<Updated>> {
    let mut trees = Trees::new();
    for (placement, touched) in changed {
        if let Some((root, relative)) = in_tree(plan, placement, mode) {
            trees
                .entry(root.to_path_buf())
                .or_default()
                .insert(relative.to_path_buf(), touched);
        }
    }
    let writing = match mode {
        Mode::Write => Writing::Write,
        Mode::DryRun => Writing::DryRun,
    };
    trees
        .iter()
        .flat_map(|(root, files)| installed::update(root, files, writing))
        .collect()
}

/// The tree a file placed as `placement` is in, and its path below the tree's root: a file
/// walked in place, or written under the output folder (only when the job writes: in a dry
/// run the output folder may not be there yet).
fn in_tree<'p>(
    plan: &'p Plan,
    placement: &'p Placement,
    mode: Mode,
) -> Option<(&'p Path, &'p Path)> {
    match placement {
        Placement::InTree { root, relative } => Some((root.as_path(), relative.as_path())),
        Placement::New(output) if mode == Mode::Write => {
            let root = plan.root.as_deref()?;
            Some((root, output.strip_prefix(root).ok()?))
        }
        _ => None,
    }
}
