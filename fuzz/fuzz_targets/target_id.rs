#![no_main]
//! Target IDs and bundle entry IDs.
use libfuzzer_sys::fuzz_target;

#[path = "../checks.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::target_id(data));
