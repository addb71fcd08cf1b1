//! LLVM bitcode: the bitstream reader and the irsymtab reader (`reader`), and the bitstream
//! writer (`writer`).

pub mod attributes;
pub mod reader;
pub mod writer;
