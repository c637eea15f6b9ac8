//! The committed fuzz corpus of the metadata scanner, replayed on stable: every file of
//! `fuzz/corpus/meta/` through the same body `cargo fuzz` runs (`fuzz/src/record.rs`, included
//! by path). Fails when the corpus directory is missing or empty.

// The fuzz package's modules, compiled into this test; what only the fuzzer or the seed
// generator uses is unused here.
#[allow(dead_code, unreachable_pub)]
#[path = "../../../fuzz/src/layout.rs"]
mod layout;
#[allow(dead_code, unreachable_pub)]
#[path = "../../../fuzz/src/record.rs"]
mod targets;

use std::path::Path;

#[test]
fn the_metadata_corpus_replays_without_a_failure() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for (name, body) in targets::TARGETS {
        let files = layout::replay(&repo, name, body);
        eprintln!("{name}: {files} corpus files replayed");
    }
}
