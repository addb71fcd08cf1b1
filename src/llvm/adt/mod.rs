//! LLVM's data structures whose layout or order shows in files: the iteration order of
//! LLVM 19's `DenseMap` (`hash`), `StringMap` (`string_map`) and the string table builder
//! (`strtab`).

pub mod hash;
pub mod string_map;
pub mod strtab;
