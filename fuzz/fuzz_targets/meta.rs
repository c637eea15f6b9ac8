//! Fuzz target `meta`: see [`sszgate_fuzz::record::meta_scan`] for what it covers and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sszgate_fuzz::record::meta_scan(data));
