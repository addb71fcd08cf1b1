//! A small model of LLVM modules (`module`: types, globals, constants, functions of a few
//! instructions, printed as IR text), a compact bitcode writer of it (`bitcode`), and LLVM's
//! own bitcode writer of it (23.1.4's and 22.1.8's), byte for byte (`exact`).

pub mod bitcode;
pub mod exact;
pub mod module;
