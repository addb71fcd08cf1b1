#![no_main]
//! Package manifests: wheel RECORDs, conda records, md5sums, updated and read back.
use libfuzzer_sys::fuzz_target;

#[path = "../checks.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::manifests(data));
