//! Fuzz target `proof_verify`: see [`sszgate_fuzz::proof::proof_verify`] for what it covers and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sszgate_fuzz::proof::proof_verify(data));
