//! A small model of LLVM modules (`module`: types, globals, constants, functions of a few
//! instructions, printed as IR text), a compact bitcode writer of it (`bitcode`), and LLVM
//! 23.1.4's own bitcode writer of it, byte for byte (`exact`).

pub mod bitcode;
pub mod exact;
pub mod module;
