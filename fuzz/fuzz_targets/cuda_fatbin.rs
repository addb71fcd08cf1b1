#![no_main]
//! CUDA fat binaries: every entry read and inflated, the kept entries written back and read
//! again.
use libfuzzer_sys::fuzz_target;

#[path = "../checks.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::cuda_fatbin(data));
