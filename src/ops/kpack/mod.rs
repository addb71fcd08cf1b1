//! `offload kpack`: moving the device code of programs and shared libraries into kpack
//! archives (one per processor, or per group of processors), and putting it back.
//!
//! Splitting reads the files a group at a time (in parallel, bundles too; compressed bundles
//! inflate into unnamed temporary files, not memory), writes each group's host files into a
//! folder being built (a new folder beside the output, or a staging folder inside it when it
//! exists) and stages its code objects and its part of each archive's table in temporary
//! files, then lets the group's inputs go: memory and open files stay bounded however large
//! the tree, and nothing is held for each file or code object. The archives are written from
//! the stage at the end, and everything (host files, archives, the tree's links) is put in
//! place together only when all of it is written, so a damaged file anywhere leaves nothing
//! behind.
//!
//! Code-object indices are the wrappers' positions in `.hipFatBinSegment`, which is what each
//! `HIPK` wrapper's `reserved1` holds and what the loader asks for: the archives key the code
//! of the bundle wrapper `k` points at as `<binary>#k`, for every processor it has. (AMD's
//! Python splitter numbers code objects per processor instead, so a binary whose translation
//! units target different processors gets keys the loader never asks for.)
//!
//! # Example
//!
//! Split a folder: a file without HIP device code is copied to the output as it is, and no
//! archive is written for it.
//!
//! ```
//! use offload::format::kpack::Scheme;
//! use offload::format::ccob::DEFAULT_MAX_DECOMPRESSED;
//! use offload::ops::kpack::{self, SplitConfig};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let tree = dir.path().join("app");
//! std::fs::create_dir_all(&tree)?;
//! std::fs::write(tree.join("README"), b"no device code")?;
//!
//! let config = SplitConfig {
//!     output: dir.path().join("split"),
//!     recursive: true,
//!     name: Some("app".into()),
//!     groups: Vec::new(),
//!     search_paths: Vec::new(),
//!     scheme: Scheme::ZstdPerKernel,
//!     max_decompressed: DEFAULT_MAX_DECOMPRESSED,
//! };
//! let summary = kpack::split(&[tree], &config)?;
//! assert!(summary.binaries.is_empty() && summary.archives.is_empty());
//! assert_eq!(summary.copied, 1);
//! assert_eq!(std::fs::read(dir.path().join("split/README"))?, b"no device code");
//! # Ok(())
//! # }
//! ```

mod config;
mod merge;
mod plan;
mod read;
mod split;
mod stage;
mod wheel;
mod wheel_merge;

pub use config::{MergeConfig, MergeSummary, SplitConfig, SplitSummary};
pub use merge::merge;
pub use plan::ARCHIVE_FOLDER;
pub use split::split;
pub use wheel::{split_wheel, DeviceWheel, WheelConfig, WheelSummary};
pub use wheel_merge::{merge_wheels, WheelMergeSummary};
