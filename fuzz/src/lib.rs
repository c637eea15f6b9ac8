//! The fuzz targets of sszgate as plain functions (`cargo fuzz` wraps each in
//! `fuzz_targets/<name>.rs`), the layout of their inputs, and the corpus replay the stable
//! test suites run.
//!
//! - [`layout`]: which bytes of an input pick the method, fork or mode;
//! - [`engine`]: codecs, bulk JSON paths, JSON-RPC scanner, REST routes and translation;
//! - [`record`]: the recorder's metadata scanner;
//! - [`proof`]: the colibri-proof decoder and verifier.

pub mod engine;
pub mod layout;
pub mod proof;
pub mod record;

/// Every target by name, with its body.
pub fn targets() -> impl Iterator<Item = layout::Target> {
    engine::TARGETS
        .into_iter()
        .chain(record::TARGETS)
        .chain(proof::TARGETS)
}
