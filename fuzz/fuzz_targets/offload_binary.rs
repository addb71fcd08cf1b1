#![no_main]
//! Offload binaries: every version, split, and inflated under a small cap.
use libfuzzer_sys::fuzz_target;

#[path = "../checks.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::offload_binary(data));
