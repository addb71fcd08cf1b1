//! Who loads what: the HIP runtime's choice of a code object for a device (`hip`, with its
//! ISA names in `runtime`), the CUDA driver's choice in a fat binary (`cuda`), the OpenMP
//! runtime's among offload binaries' images and `hipModuleLoad`'s of a code object
//! (`openmp`), and the kpack
//! loader's search for a split binary's archives (`kpack_search`). Pure rules over parsed containers
//! and target IDs; the file system, where a rule needs it, is handed in.
//!
//! # Example
//!
//! What a gfx1101 and a gfx90a load from one translation unit that has code for gfx1100 and
//! for the generic target that covers the gfx11 processors.
//!
//! ```
//! use offload::loads::hip::{self, Via};
//! use offload::target::target_id::TargetId;
//!
//! let unit = [TargetId::parse_syntax("gfx1100"), TargetId::parse_syntax("gfx11-generic")];
//! let gfx1101 = TargetId::parse_syntax("gfx1101").unwrap();
//! assert_eq!(hip::loaded_by(&gfx1101, &unit), [None, Some(Via::Generic)]);
//! let gfx90a = TargetId::parse_syntax("gfx90a").unwrap();
//! assert_eq!(hip::loaded_by(&gfx90a, &unit), [None, None]);
//! ```

pub mod cuda;
pub mod cuda_driver;
pub mod hip;
pub mod kpack_search;
pub mod openmp;
pub mod runtime;
pub mod via;
