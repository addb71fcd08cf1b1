//! What users ask for, built from the format codecs and the I/O layer.
//!
//! # Example
//!
//! Strip a bundle to the code a gfx90a loads, in place, then list what is left.
//!
//! ```
//! use offload::format::{bundle, ccob::DEFAULT_MAX_DECOMPRESSED};
//! use offload::ops::ls;
//! use offload::ops::rewrite::{self, Change, Mode, Placement, RewriteConfig};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let file = dir.path().join("kernels.hipfb");
//! let entries: [(&str, &[u8]); 3] = [
//!     ("host-x86_64-unknown-linux-gnu-", b""),
//!     ("hipv4-amdgcn-amd-amdhsa--gfx90a", b"code for gfx90a"),
//!     ("hipv4-amdgcn-amd-amdhsa--gfx1100", b"code for gfx1100"),
//! ];
//! std::fs::write(&file, bundle::to_vec(&entries, 8))?;
//!
//! let config = RewriteConfig {
//!     change: Change::Keep(vec!["gfx90a".parse()?]),
//!     allow_empty: false,
//!     max_decompressed: DEFAULT_MAX_DECOMPRESSED,
//!     ptx: Default::default(),
//! };
//! let summary = rewrite::rewrite(&file, &Placement::InPlace, &config, Mode::Write, Default::default())?;
//! // Device images: the host entry is none.
//! assert_eq!((summary.images_before, summary.images_after), (2, 1));
//!
//! let (images, _) = ls::list_file(&file, DEFAULT_MAX_DECOMPRESSED)?;
//! let targets: Vec<&str> = images.iter().map(|image| image.target_id.as_str()).collect();
//! assert_eq!(targets, ["", "gfx90a"]);
//! # Ok(())
//! # }
//! ```

pub mod bundler;
pub mod check;
pub mod du;
pub mod extract;
pub mod kpack;
pub mod ls;
pub mod packager;
pub mod prune;
pub mod readobj;
pub mod rewrite;
pub mod targets;
pub use support::inputs::{Found, FoundList, Links, SpecialFiles, Taken, Walk};
pub use support::progress::Progress;

/// What the commands share: the walker, the inflation budget, progress, tool paths. Open to
/// this repository's tests under the feature `internals`, as the crate's internal layers are.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod support;
#[cfg(not(feature = "internals"))]
pub(crate) mod support;
pub mod verify;
pub mod wrapper;
