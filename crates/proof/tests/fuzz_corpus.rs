//! The committed fuzz corpora of the proof targets, replayed on stable: every file of
//! `fuzz/corpus/proof_decode/`, `fuzz/corpus/proof_verify/` and `fuzz/corpus/proof_request/` through the same bodies `cargo
//! fuzz` runs (`fuzz/src/proof.rs`, included by path). Fails when a corpus is missing or empty.

// The fuzz package's modules, compiled into this test; what only the fuzzer or the seed
// generator uses is unused here.
#[allow(dead_code, unreachable_pub)]
#[path = "../../../fuzz/src/layout.rs"]
mod layout;
#[allow(dead_code, unreachable_pub)]
#[path = "../../../fuzz/src/proof.rs"]
mod targets;

use std::path::Path;

#[test]
fn the_proof_corpora_replay_without_a_failure() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for (name, body) in targets::TARGETS {
        let files = layout::replay(&repo, name, body);
        eprintln!("{name}: {files} corpus files replayed");
    }
}
