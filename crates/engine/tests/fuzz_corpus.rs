//! The committed fuzz corpora of the engine targets, replayed on stable: every file of
//! `fuzz/corpus/<target>/` through the same body `cargo fuzz` runs (`fuzz/src/engine.rs`,
//! included by path so that the fuzz package's nightly-only build is not needed). Fails when a
//! corpus directory is missing or empty.

// The fuzz package's modules, compiled into this test; what only the fuzzer or the seed
// generator uses is unused here.
#[allow(dead_code, unreachable_pub)]
#[path = "../../../fuzz/src/layout.rs"]
mod layout;
#[allow(dead_code, unreachable_pub)]
#[path = "../../../fuzz/src/engine.rs"]
mod targets;

use std::path::Path;

#[test]
fn every_engine_corpus_replays_without_a_failure() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for (name, body) in targets::TARGETS {
        let files = layout::replay(&repo, name, body);
        eprintln!("{name}: {files} corpus files replayed");
    }
}
