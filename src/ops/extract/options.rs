//! What `extract` is asked for ([`ExtractConfig`]) and how images pass its filters: the
//! triple and producer asked for (`--triple`, `--kind`), and the target IDs (`--arch`),
//! matched exactly or by what a device with each loads.

use std::path::PathBuf;

use crate::format::ccob::DEFAULT_MAX_DECOMPRESSED;
use crate::format::image_target::{ImageTarget, Producer};
use crate::loads::hip::{loaded_by, may_load, Via};
use crate::ops::support::inputs::FoundList;
use crate::target::target_id::{TargetId, TargetIdBuf};

/// How `extract` matches the target IDs asked for with those of the images.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Match {
    /// By what a device with the target ID loads: per translation unit, the native code
    /// its processor can run if there is any, else a generic target's that covers it, else
    /// SPIR-V.
    #[default]
    Loadable,
    /// The same processor and features, in any order.
    Exact,
}

/// What to extract, and where.
#[derive(Debug, Clone)]
pub struct ExtractConfig {
    /// The files to look into.
    pub files: Vec<PathBuf>,
    /// The target IDs asked for (`gfx90a`, `gfx90a:xnack+`, `sm_80`), checked where they
    /// were given: every image a device with one of them can load.
    pub arches: Vec<TargetIdBuf>,
    /// The GPUs of one machine, in the runtime's order: from each bundle, the code object the
    /// HIP runtime loads for each of them, chosen for all of them together as it does.
    pub devices: Vec<TargetIdBuf>,
    /// How target IDs are matched.
    pub exact: Match,
    /// Only images for this triple.
    pub triple: Option<String>,
    /// Only images of this producer (`hip`, `openmp`, `cuda`, ...).
    pub kind: Option<Producer>,
    /// The folder to write to, or, when it names a `.a` file and the inputs are archives, the
    /// device archive to write.
    pub output: PathBuf,
    /// The most a compressed bundle may declare or inflate to.
    pub max_decompressed: u64,
}

impl ExtractConfig {
    /// The same filters and output for `files` instead: every other field cloned, not the
    /// list of files (a tree's may hold a hundred thousand paths).
    pub(super) fn for_files(&self, files: Vec<PathBuf>) -> ExtractConfig {
        ExtractConfig {
            files,
            arches: self.arches.clone(),
            devices: self.devices.clone(),
            exact: self.exact,
            triple: self.triple.clone(),
            kind: self.kind.clone(),
            output: self.output.clone(),
            max_decompressed: self.max_decompressed,
        }
    }
}

impl Default for ExtractConfig {
    fn default() -> Self {
        ExtractConfig {
            files: Vec::new(),
            arches: Vec::new(),
            devices: Vec::new(),
            exact: Match::default(),
            triple: None,
            kind: None,
            output: PathBuf::new(),
            max_decompressed: DEFAULT_MAX_DECOMPRESSED,
        }
    }
}

/// The files an extraction reads: those its configuration names, or a walk's list, read a
/// group at a time so that its paths are never all held.
#[derive(Clone, Copy)]
pub(super) enum Inputs<'a> {
    /// The files of [`ExtractConfig::files`].
    Named(&'a [PathBuf]),
    /// The files of a walk.
    Listed(&'a FoundList),
}

impl<'a> Inputs<'a> {
    /// How many files.
    pub(super) fn len(self) -> usize {
        match self {
            Inputs::Named(paths) => paths.len(),
            Inputs::Listed(list) => list.len(),
        }
    }

    /// The paths of the files in groups of `size` (at least one), in order.
    pub(super) fn groups(self, size: usize) -> Box<dyn Iterator<Item = Vec<PathBuf>> + 'a> {
        match self {
            Inputs::Named(paths) => Box::new(paths.chunks(size.max(1)).map(<[PathBuf]>::to_vec)),
            Inputs::Listed(list) => Box::new(list.path_chunks(size)),
        }
    }

    /// The paths of the files, in order.
    pub(super) fn paths(self) -> Box<dyn Iterator<Item = PathBuf> + 'a> {
        match self {
            Inputs::Named(paths) => Box::new(paths.iter().cloned()),
            Inputs::Listed(list) => Box::new(list.paths()),
        }
    }
}

/// Whether an image for `target` passes `config`'s filters other than the target ID: device
/// code, with a target ID, of the triple and producer asked for.
pub(super) fn passes_filters(config: &ExtractConfig, target: &ImageTarget) -> bool {
    if target.producer == Producer::Host || target.target_id().is_none() {
        return false;
    }
    if let Some(triple) = &config.triple {
        if target.triple.trim_end_matches('-') != triple.trim_end_matches('-') {
            return false;
        }
    }
    config
        .kind
        .as_ref()
        .is_none_or(|kind| *kind == target.producer)
}

/// Whether an image for `stored` may be chosen once its translation unit is seen whole: it is
/// one a device asked for loads natively, or code for a generic target or SPIR-V, which a
/// device loads when its unit has no native code for it.
pub(super) fn may_be_chosen(config: &ExtractConfig, stored: &TargetId<'_>) -> bool {
    config.arches.iter().any(|q| {
        let q = q.target_id();
        match config.exact {
            Match::Exact => q.same_as(stored),
            Match::Loadable => may_load(&q, stored),
        }
    })
}

/// How the devices asked for come to load each image of one translation unit (`None`: none
/// does), and for which of them: the best way any of them does. Marks in `hits` the target IDs
/// asked for that load any.
pub(super) fn chosen_in_unit(
    config: &ExtractConfig,
    unit: &[Option<TargetId<'_>>],
    hits: &mut [bool],
) -> Vec<Option<(Via, usize)>> {
    let mut best: Vec<Option<(Via, usize)>> = vec![None; unit.len()];
    for ((index, q), hit) in config.arches.iter().enumerate().zip(hits.iter_mut()) {
        let q = q.target_id();
        let loaded: Vec<Option<Via>> = match config.exact {
            Match::Exact => unit
                .iter()
                .map(|i| i.as_ref().filter(|i| q.same_as(i)).map(|_| Via::Native))
                .collect(),
            Match::Loadable => loaded_by(&q, unit),
        };
        for (slot, via) in best.iter_mut().zip(loaded) {
            if let Some(via) = via {
                *hit = true;
                if slot.is_none_or(|(old, _)| via < old) {
                    *slot = Some((via, index));
                }
            }
        }
    }
    best
}
