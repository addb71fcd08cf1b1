#![no_main]
//! The rewriters (strip, compress, decompress) on fuzzed programs, objects and containers, each
//! result read back.
use libfuzzer_sys::fuzz_target;

#[path = "../checks.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::rewrite(data));
