//! What splitting and merging are asked to do, and what they report.

use std::path::{Path, PathBuf};

use crate::format::kpack::Scheme;
use crate::ops::support::found::{owned, put_bytes, put_number, take_bytes, take_number, Records};

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
#[derive(Debug, Default)]
pub struct SplitSummary {
    /// Each split binary (its output path), with its number of code-object indices, in the
    /// order split: kept out of memory, as the files of a tree are.
    pub binaries: SplitBinaries,
    /// The number of files copied as they were (no HIP device code), and of links made.
    pub copied: usize,
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

/// The binaries a split wrote, in order: each one's output path and number of code-object
/// indices. Held in memory while they are few, then in an unnamed temporary file, so that a
/// tree of a hundred thousand files does not hold a hundred thousand paths.
#[derive(Default)]
pub struct SplitBinaries {
    records: Records,
    len: usize,
}

impl SplitBinaries {
    /// The number of binaries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds the binary written to `path`, with its number of code-object `indices`.
    pub(super) fn push(&mut self, path: &Path, indices: usize) -> std::io::Result<()> {
        let mut record = Vec::with_capacity(path.as_os_str().len() + 8);
        put_bytes(
            &mut record,
            std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()),
        );
        put_number(&mut record, indices);
        self.records.append(&record)?;
        self.len += 1;
        Ok(())
    }

    /// Ends the adding: the binaries are read back from here on.
    pub(super) fn seal(&mut self) -> std::io::Result<()> {
        self.records.seal()
    }

    /// The binaries, in the order split: output path and number of code-object indices.
    pub fn iter(&self) -> impl Iterator<Item = (PathBuf, usize)> + '_ {
        let mut bytes = self.records.bytes();
        std::iter::from_fn(move || {
            let (path, rest) = take_bytes(bytes)?;
            let (indices, rest) = take_number(rest)?;
            bytes = rest;
            Some((owned(path), indices))
        })
    }
}

impl std::fmt::Debug for SplitBinaries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}
