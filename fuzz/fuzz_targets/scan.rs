#![no_main]
//! The container scan over ELF, COFF, Mach-O, archives and bare containers, everywhere and
use libfuzzer_sys::fuzz_target;

#[path = "../checks.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::scan(data));
