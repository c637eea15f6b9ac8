//! Integration tests of the Engine API model: golden vectors, the spec's byte examples,
//! bad input, property round trips and translation.

mod bad_input;
mod golden;
mod props;
mod spec_examples;
mod translate;
mod wire_equivalence;

use std::path::PathBuf;

/// The repository's `testdata/` directory.
pub fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// Hex (with or without blanks) to bytes.
pub fn hex(s: &str) -> Vec<u8> {
    const_hex::decode(s.split_whitespace().collect::<String>()).expect("test hex")
}
