#![no_main]
//! Round trips: bundle then parse, compress then decompress, pack then parse give back the
use libfuzzer_sys::fuzz_target;

#[path = "../checks.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::round_trips(data));
