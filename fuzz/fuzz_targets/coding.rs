//! Fuzz target `coding`: see [`sszgate_fuzz::engine::content_coding`] for what it covers and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sszgate_fuzz::engine::content_coding(data));
