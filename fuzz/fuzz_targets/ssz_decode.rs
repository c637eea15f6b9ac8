//! Fuzz target `ssz_decode`: see [`sszgate_fuzz::engine::ssz_decode`] for what it covers and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sszgate_fuzz::engine::ssz_decode(data));
