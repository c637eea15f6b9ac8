//! Fuzz target `proof_decode`: see [`sszgate_fuzz::proof::proof_decode`] for what it covers and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sszgate_fuzz::proof::proof_decode(data));
