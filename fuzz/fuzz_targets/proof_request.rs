//! Fuzz target `proof_request`: see [`sszgate_fuzz::proof::proof_request`] for what it covers and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sszgate_fuzz::proof::proof_request(data));
