//! Fuzz target `bulk_json`: see [`sszgate_fuzz::engine::bulk_json`] for what it covers and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sszgate_fuzz::engine::bulk_json(data));
