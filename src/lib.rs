//! offload-tools: read, write, find, extract, strip and compress GPU offload fat binaries.
//!
//! The crate is layered (`ARCHITECTURE.md` has the arrows): [`format`](mod@format) holds the
//! offload containers as pure codecs over byte slices (binary, text and compressed bundles,
//! offload binaries, CUDA fat binaries, kpack archives); [`target`] what a target is
//! (triples, target IDs, bundle entry IDs, the processor table); [`llvm`] LLVM's structures
//! kept for byte identity; [`loads`] who loads what (the HIP runtime's choice, the CUDA
//! driver's, the kpack loader's search); [`host`] finds and rewrites offload data in host
//! files; [`ops`] implements what users ask for; `cli` parses command lines and prints.
//! [`io`] maps inputs and writes outputs atomically.
//!
//! The command line is behind the default feature `cli`. A program that only uses the library
//! (the linker plugin is one) turns default features off, and links neither the argument
//! parser nor the progress bars nor a log subscriber. The operations log through `tracing`
//! spans and events; they cost nothing until the program installs a subscriber.

#[cfg(feature = "cli")]
pub mod cli;
pub(crate) mod codegen;
pub mod error;
pub mod format;
pub mod host;
pub mod io;
pub mod llvm;
pub mod loads;
pub mod ops;
pub mod target;

pub use error::{Error, Result};
