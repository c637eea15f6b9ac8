//! Fuzz target `json_decode`: see [`sszgate_fuzz::engine::json_decode`] for what it covers and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sszgate_fuzz::engine::json_decode(data));
