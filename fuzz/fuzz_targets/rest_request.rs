//! Fuzz target `rest_request`: see [`sszgate_fuzz::engine::rest_request`] for what it covers and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sszgate_fuzz::engine::rest_request(data));
