//! Pure codecs over byte slices: no files, no processes.
//!
//! Every parser here borrows its input and returns views into it; every writer mirrors its
//! reader, so a round trip through both gives back the same bytes.
//!
//! No input may make a codec panic, so indexing and narrowing `as` casts are denied here: a
//! short input is an error with its offset, and a value that does not fit is an error (or, where
//! documented, saturates).
//!
//! # Example
//!
//! Every codec reads what its writer wrote: a bundle of two entries, compressed, then found
//! again by its magic and read back.
//!
//! ```
//! use offload::format::{bundle, ccob, container::Container};
//!
//! let entries: [(&str, &[u8]); 2] = [
//!     ("host-x86_64-unknown-linux-gnu-", b""),
//!     ("hipv4-amdgcn-amd-amdhsa--gfx90a", b"code for gfx90a"),
//! ];
//! let plain = bundle::to_vec(&entries, 8);
//! let (packed, _) = ccob::compress(&plain, &ccob::CompressOptions::default()).unwrap();
//! assert_eq!(Container::at_start(&packed), Some(Container::CompressedBundle));
//!
//! let stored = ccob::CompressedBundle::parse(&packed).unwrap().unwrap();
//! let inflated = stored.decompress(ccob::DEFAULT_MAX_DECOMPRESSED).unwrap();
//! let read = bundle::Bundle::parse(&inflated).unwrap().unwrap();
//! assert_eq!(read.entries()[1].data, b"code for gfx90a");
//! ```

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
pub(crate) mod md5_lanes;
pub mod offload_binary;
pub mod search;
pub mod stream;
pub mod text_bundle;

pub use error::{Error, ErrorKind};
