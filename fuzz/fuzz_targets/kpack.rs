#![no_main]
//! kpack archives, references and HIP wrappers, and the MessagePack they are written in.
use libfuzzer_sys::fuzz_target;

#[path = "../checks.rs"]
mod checks;

fuzz_target!(|data: &[u8]| checks::kpack(data));
