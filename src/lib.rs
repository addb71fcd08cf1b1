//! offload-tools: read, write, find, extract, strip and compress GPU offload fat binaries.
//!
//! The crate is layered: [`format`](mod@format) holds pure codecs over byte slices (binary, text and
//! compressed bundles, bundle entry IDs and target IDs); [`container`] finds offload data in
//! host files; [`ops`] implements what users ask for on top of both; `cli` parses command
//! lines and prints. [`io`] maps inputs and writes outputs atomically.
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
