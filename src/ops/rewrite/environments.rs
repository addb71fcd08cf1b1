//! The environments installed in the trees of a job (a Python `site-packages`, a conda
//! prefix): once its files are rewritten and pruned, the manifests that list them
//! (`*.dist-info/RECORD`, `conda-meta/*.json`) are brought up to date, so that `pip uninstall`,
//! `pip check` and conda's checks see the files as they are now.
//!
//! # Example
//!
//! A wheel's file compressed in place, then its `RECORD` line brought up to date.
//!
//! ```
//! use offload::format::{bundle, ccob};
//! use offload::ops::rewrite::environments::{self, ManifestKind, Touched};
//! use offload::ops::rewrite::plan;
//! use offload::ops::rewrite::{self as rewriting, Change, Mode, RewriteConfig};
//! use offload::ops::{Links, Taken};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let tree = dir.path().join("site-packages");
//! std::fs::create_dir_all(tree.join("pkg"))?;
//! std::fs::create_dir_all(tree.join("pkg-1.0.dist-info"))?;
//! let fatbin = bundle::to_vec(&[("hipv4-amdgcn-amd-amdhsa--gfx90a", &[9; 8000][..])], 8);
//! std::fs::write(tree.join("pkg/kernels.hipfb"), &fatbin)?;
//! let line = format!("pkg/kernels.hipfb,sha256=AAAA,{}\n", fatbin.len());
//! std::fs::write(tree.join("pkg-1.0.dist-info/RECORD"), &line)?;
//!
//! let roots = vec![tree.clone()];
//! let (found, _walk) = plan::walk(&roots, true, Links::Skip, Taken::MayHoldDeviceCode);
//! let plan = plan::plan(&roots, &found, None, Taken::MayHoldDeviceCode).map_err(|r| r.to_string())?;
//! let task = plan.tasks.iter().next().expect("one task");
//! let config = RewriteConfig {
//!     change: Change::Compress(ccob::CompressOptions::default()),
//!     allow_empty: false,
//!     max_decompressed: ccob::DEFAULT_MAX_DECOMPRESSED,
//!     ptx: Default::default(),
//! };
//! let summary = rewriting::rewrite(&task.input, &task.placement, &config, Mode::Write, Default::default())?;
//!
//! let updated = environments::update(&plan, [(&task.placement, Touched::Rewritten)], Mode::Write);
//! let updated = updated.into_iter().next().expect("one manifest")?;
//! assert_eq!(updated.kind, ManifestKind::Record);
//! assert_eq!(updated.counts.rewritten, 1);
//! let record = std::fs::read_to_string(tree.join("pkg-1.0.dist-info/RECORD"))?;
//! assert!(record.trim_end().ends_with(&format!(",{}", summary.size_after)), "{record}");
//! # Ok(())
//! # }
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::host::package::manifest::installed::{self, Writing};
use crate::ops::rewrite::plan::Plan;
use crate::ops::rewrite::{Mode, Placement};
use crate::ops::support::inputs::FoundList;

// What `update` is told of each file and answers of each manifest, from the layer of packages
// (the crate's own): re-exported so that `update` can be called and its answer read.
pub use crate::host::package::manifest::installed::{ManifestKind, Touched, Updated};
pub use crate::host::package::manifest::Counts;

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
    let mut changes = Changes::new(plan, mode);
    for (placement, touched) in changed {
        changes.add(placement, touched);
    }
    changes.update()
}

/// The files a job changed, each by the tree it is in and its path below the tree's root,
/// and what became of it: kept out of memory as the job goes (a tree may hold a hundred
/// thousand), read back at the end for the trees that hold manifests, which [`update`]
/// brings up to date.
pub struct Changes<'p> {
    plan: &'p Plan,
    mode: Mode,
    /// Each file as a record of the list: the tree's root as its path, its path below the
    /// root as its relative path, removed (else rewritten) as its flag.
    files: FoundList,
    /// The error of the list, if it could not be written.
    failed: Option<std::io::Error>,
}

impl<'p> Changes<'p> {
    /// None yet, of a job of `plan` run in `mode`.
    pub fn new(plan: &'p Plan, mode: Mode) -> Changes<'p> {
        Changes {
            plan,
            mode,
            files: FoundList::new(),
            failed: None,
        }
    }

    /// Adds the file placed as `placement`, `touched`, when it is in a tree.
    pub fn add(&mut self, placement: &Placement, touched: Touched) {
        let Some((root, relative)) = in_tree(self.plan, placement, self.mode) else {
            return;
        };
        if self.failed.is_some() {
            return;
        }
        let removed = touched == Touched::Removed;
        if let Err(e) = self.files.push(root, relative, None, removed) {
            self.failed = Some(e);
        }
    }

    /// Brings up to date the manifests of the trees that list the files added (see
    /// [`update`]). A tree without manifests is not looked into again, and nothing of its
    /// files is held.
    pub fn update(mut self) -> Vec<Result<Updated>> {
        if let Some(e) = self.failed.take().or_else(|| self.files.seal().err()) {
            return vec![Err(list_failed(e))];
        }
        let mut roots: BTreeMap<PathBuf, bool> = BTreeMap::new();
        for file in &self.files {
            if let std::collections::btree_map::Entry::Vacant(root) = roots.entry(file.path) {
                let manifests = installed::may_hold_manifests(root.key());
                root.insert(manifests);
            }
        }
        let mut trees = Trees::new();
        for file in &self.files {
            if roots.get(&file.path) == Some(&true) {
                let touched = match file.through_link {
                    true => Touched::Removed,
                    false => Touched::Rewritten,
                };
                trees
                    .entry(file.path)
                    .or_default()
                    .insert(file.relative, touched);
            }
        }
        let writing = match self.mode {
            Mode::Write => Writing::Write,
            Mode::DryRun => Writing::DryRun,
        };
        trees
            .iter()
            .flat_map(|(root, files)| installed::update(root, files, writing))
            .collect()
    }
}

/// The error of changes that could not be listed: the manifests were not brought up to date.
fn list_failed(e: std::io::Error) -> crate::error::Error {
    crate::error::Error::msg(format!(
        "the list of the files changed could not be written to a temporary file: {e}; \
         the manifests that list them were not brought up to date"
    ))
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
