//! What a target is: triples, target IDs, bundle entry IDs and the processor table, as LLVM
//! and the runtimes spell and compare them. No container and no file is known here.
//!
//! # Example
//!
//! A bundle entry ID, taken apart into its kind, its triple and its target ID, and the
//! processor that target ID names.
//!
//! ```
//! use offload::target::entry_id::EntryId;
//! use offload::target::processor::Processor;
//!
//! let id = EntryId::parse("hipv4-amdgcn-amd-amdhsa--gfx1101:xnack-");
//! assert_eq!(id.kind, "hipv4");
//! assert!(id.triple.is_amdgpu());
//! assert_eq!(id.target_id, "gfx1101:xnack-");
//! let processor = Processor::named("gfx1101").unwrap();
//! assert_eq!(processor.covering_generics().collect::<Vec<_>>(), ["gfx11-generic"]);
//! ```

#![deny(clippy::indexing_slicing, clippy::cast_possible_truncation)]

pub mod device_groups;
pub mod entry_id;
pub mod lists;
pub mod processor;
pub mod target_id;
pub mod triple;
