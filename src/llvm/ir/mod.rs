//! A small model of LLVM modules (`module`: types, globals, constants, functions of a few
//! instructions, printed as IR text) and its bitcode writer (`bitcode`).

pub mod bitcode;
pub mod module;
