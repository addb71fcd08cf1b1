//! Pure codecs over byte slices: no files, no processes.
//!
//! Every parser here borrows its input and returns views into it; every writer mirrors its
//! reader, so a round trip through both gives back the same bytes.
//!
//! No input may make a codec panic, so indexing and narrowing `as` casts are denied here: a
//! short input is an error with its offset, and a value that does not fit is an error (or, where
//! documented, saturates).

#![deny(clippy::indexing_slicing, clippy::cast_possible_truncation)]

pub mod bare;
pub mod bundle;
pub mod ccob;
pub mod code_object;
pub mod container;
pub mod cuda_fatbin;
pub mod error;
mod hashing;
pub mod image_target;
mod inflate;
pub mod kpack;
pub(crate) mod md5;
pub mod offload_binary;
pub mod search;
pub mod stream;
pub mod text_bundle;

pub use error::{Error, ErrorKind};
