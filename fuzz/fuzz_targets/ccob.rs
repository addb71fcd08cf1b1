#![no_main]
//! Compressed bundles: headers, splitting, and decompression under a small cap.
use libfuzzer_sys::fuzz_target;

#[path = "../checks.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::ccob(data));
