//! Who loads what: the HIP runtime's choice of a code object for a device (`hip`, with its
//! ISA names in `runtime`), the CUDA driver's choice in a fat binary (`cuda`), the OpenMP
//! runtime's among offload binaries' images and `hipModuleLoad`'s of a code object
//! (`openmp`), and the kpack
//! loader's search for a split binary's archives (`kpack_search`). Pure rules over parsed containers
//! and target IDs; the file system, where a rule needs it, is handed in.

pub mod cuda;
pub mod hip;
pub mod kpack_search;
pub mod openmp;
pub mod runtime;
pub mod via;
