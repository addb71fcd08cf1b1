//! offload-tools: read, write, find, extract, strip and compress GPU offload fat binaries.
//!
//! The API is four modules and an error:
//! - [`ops`]: what the commands do, as functions with typed options and typed reports: list a
//!   file's device images ([`ops::ls`]), extract them ([`ops::extract`]), check what each GPU
//!   loads ([`ops::check`]), verify compressed bundles ([`ops::verify`]), count bytes per
//!   target ([`ops::du`]), rewrite files ([`ops::rewrite`]: strip, compress, decompress),
//!   split and merge ([`ops::kpack`]), and LLVM's bundler, packager and wrappers.
//! - [`format`](mod@format): the offload containers as pure codecs over byte slices (binary,
//!   text and compressed bundles, offload binaries, CUDA fat binaries, kpack archives).
//! - [`target`]: what a target is (triples, target IDs, bundle entry IDs, the processor table).
//! - [`loads`]: who loads what (the HIP runtime's choice, the CUDA driver's, the kpack
//!   loader's search), as pure rules.
//! - [`Error`]: every failure, naming its file (and the byte offset of a format error).
//!
//! The layers under them (host files, LLVM's structures, mapped inputs and atomic outputs) are
//! the crate's own (`ARCHITECTURE.md` has the layers and their arrows).
//!
//! The command line is behind the default feature `cli`. A program that only uses the library
//! (the linker plugin is one) turns default features off, and links neither the argument
//! parser nor the progress bars nor a log subscriber. The operations log through `tracing`
//! spans and events; they cost nothing until the program installs a subscriber.
//!
//! # Example
//!
//! List the device images of a file, then write out the code objects a gfx90a loads. The file
//! here is a clang offload bundle made on the spot; a program, a shared library, an object or an
//! archive is read the same way.
//!
//! ```
//! use offload::format::{bundle, ccob::DEFAULT_MAX_DECOMPRESSED};
//! use offload::ops::{extract, ls};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let file = dir.path().join("kernels.hipfb");
//! let entries: [(&str, &[u8]); 3] = [
//!     ("host-x86_64-unknown-linux-gnu-", b""),
//!     ("hipv4-amdgcn-amd-amdhsa--gfx90a", b"code for gfx90a"),
//!     ("hipv4-amdgcn-amd-amdhsa--gfx1100", b"code for gfx1100"),
//! ];
//! std::fs::write(&file, bundle::to_vec(&entries, 4096))?;
//!
//! // What `offload ls` lists: every image, where it lies and what it is for.
//! let (images, damage) = ls::list_file(&file, DEFAULT_MAX_DECOMPRESSED)?;
//! assert!(damage.is_empty());
//! let targets: Vec<&str> = images.iter().map(|image| image.target_id.as_str()).collect();
//! assert_eq!(targets, ["", "gfx90a", "gfx1100"]);
//!
//! // What `offload extract --arch gfx90a -o out` writes.
//! let config = extract::ExtractConfig {
//!     files: vec![file],
//!     arches: vec!["gfx90a".parse()?],
//!     output: dir.path().join("out"),
//!     ..Default::default()
//! };
//! let written = extract::extract(&config, &()).result?;
//! assert_eq!(written.len(), 1);
//! assert_eq!(std::fs::read(&written[0].path)?, b"code for gfx90a");
//! # Ok(())
//! # }
//! ```

// The public API: the codecs (`format`, `target`), who loads what (`loads`), the commands' jobs
// (`ops`) and the error. The layers below them (`host`, `llvm`, `io`, `codegen`) are the
// crate's own; the feature `internals` opens them, undocumented, to this repository's tests,
// fuzzers and benchmarks, and makes no promise to anyone else.
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod cli;
pub(crate) mod codegen;
pub mod error;
pub mod format;
pub mod loads;
pub mod ops;
pub mod target;

// Each internal layer is declared twice, not through a macro, so that `cargo fmt` reaches
// its files: `pub` (and hidden from the documentation) under the feature `internals`, private
// to the crate otherwise.
/// Where offload data lives in host files, and how they are rewritten.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod host;
#[cfg(not(feature = "internals"))]
pub(crate) mod host;
/// Mapped inputs, atomic outputs, spill files, signals, escaping.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod io;
#[cfg(not(feature = "internals"))]
pub(crate) mod io;
/// LLVM's structures kept for byte identity.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod llvm;
#[cfg(not(feature = "internals"))]
pub(crate) mod llvm;

pub use error::{Error, Result};
pub use io::{set_syncing, Syncing};
