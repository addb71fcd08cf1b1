//! LLVM's own structures, reproduced where byte identity with LLVM's tools needs them: `adt`
//! (the hash-table order of LLVM 19's maps, its string map and string table), `bitcode` (the
//! bitstream reader with the irsymtab reader, and the bitstream writer), and `ir` (a small
//! model of the modules the wrapper writes, printed as IR text or written as bitcode).

pub mod adt;
pub mod bitcode;
pub(crate) mod ir;
