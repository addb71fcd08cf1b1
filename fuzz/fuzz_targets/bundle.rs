#![no_main]
//! Binary bundle headers: parse, order, and read every entry.
use libfuzzer_sys::fuzz_target;

#[path = "../checks.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::bundle(data));
