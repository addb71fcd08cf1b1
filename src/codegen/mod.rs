//! Machine code for the wrapper objects, without LLVM: the x86-64 and AArch64 assemblers
//! (`x86`, `a64`) and their labels, the layout every object shares with the streaming of images
//! into place (`layout`), and the two wrappers' objects, ELF and COFF
//! (`clang_offload_wrapper`, `llvm_offload_wrapper`), with their call-frame information.

pub mod a64;
pub mod clang_offload_wrapper;
pub mod labels;
pub mod layout;
pub mod llvm_offload_wrapper;
pub mod x86;
