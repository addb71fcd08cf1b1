//! Pure codecs over byte slices: no files, no processes.
//!
//! Every parser here borrows its input and returns views into it; every writer mirrors its
//! reader, so a round trip through both gives back the same bytes.

pub mod bitcode;
pub mod bundle;
pub mod ccob;
pub mod container;
pub mod cuda_fatbin;
pub mod entry_id;
pub mod error;
pub mod image_target;
mod inflate;
pub mod llvm_hash;
pub mod offload_binary;
pub mod slice;
pub mod string_map;
pub mod strtab;
pub mod target_id;
pub mod text_bundle;
pub mod triple;

pub use error::{Error, ErrorKind};
