//! Fuzz target `scan`: see [`sszgate_fuzz::engine::scan_json_rpc`] for what it covers and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sszgate_fuzz::engine::scan_json_rpc(data));
