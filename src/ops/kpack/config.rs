//! What splitting and merging are asked to do, and what they report.

use std::path::PathBuf;

use crate::format::kpack::Scheme;

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
    /// Why each file of a tree (`recursive`) that could not be read or written was left out
    /// of the output, the others split all the same.
    pub failed: Vec<String>,
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
