//! LLVM bitcode: the bitstream reader and the irsymtab reader (`reader`), the bitstream writer
//! (`writer`), and the record codes both of our writers use (`codes`).

pub mod attributes;
pub mod codes;
pub mod reader;
pub mod writer;
