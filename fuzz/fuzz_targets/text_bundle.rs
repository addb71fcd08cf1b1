#![no_main]
//! Text bundles with each comment string.
use libfuzzer_sys::fuzz_target;

#[path = "../checks.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::text_bundle(data));
