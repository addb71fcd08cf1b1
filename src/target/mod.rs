//! What a target is: triples, target IDs, bundle entry IDs and the processor table, as LLVM
//! and the runtimes spell and compare them. No container and no file is known here.

#![deny(clippy::indexing_slicing, clippy::cast_possible_truncation)]

pub mod entry_id;
pub mod processor;
pub mod target_id;
pub mod triple;
