//! What the proof tests share: the vectors of `testdata/colibri/` and their expectations.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The vectors' directory.
pub(crate) fn vectors_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/colibri")
}

/// Every vector's name, sorted.
pub(crate) fn case_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(vectors_dir())
        .expect("testdata/colibri")
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| vectors_dir().join(n).join("proof.ssz").exists())
        .collect();
    names.sort();
    names
}

/// A vector's proof bytes.
pub(crate) fn proof_bytes(case: &str) -> Vec<u8> {
    std::fs::read(vectors_dir().join(case).join("proof.ssz")).unwrap()
}

/// A vector's `expected.json`.
pub(crate) fn expected(case: &str) -> Value {
    let text = std::fs::read_to_string(vectors_dir().join(case).join("expected.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The trust a vector needs: its committee keys (`sync_committee_<period>.pubkeys`) and, for
/// the sync-data vectors, its trusted checkpoint.
pub(crate) fn trust_for(case: &str) -> sszgate_proof::TrustedState {
    let mut trust = sszgate_proof::TrustedState::new(sszgate_light::ChainSpec::mainnet());
    let dir = vectors_dir().join(case);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(period) = name
            .strip_prefix("sync_committee_")
            .and_then(|n| n.strip_suffix(".pubkeys"))
        else {
            continue;
        };
        let keys = std::fs::read(dir.join(&name)).unwrap();
        trust
            .add_committee_keys(period.parse().unwrap(), &keys)
            .unwrap();
    }
    if case == "eth_call1" {
        // colibri's verifier took this call's code from its cache; the same call's proof with
        // the code shipped is the cache here.
        let shipped = sszgate_proof::decode(&proof_bytes("eth_call1_include_code")).unwrap();
        let sszgate_proof::types::ProofUnion::Call(call) = shipped.proof else {
            panic!("eth_call1_include_code carries a CallProof")
        };
        for account in &call.accounts {
            if let sszgate_proof::types::CodeUnion::Code(code) = &account.code {
                trust.add_code(code.to_vec().into());
            }
        }
    }
    if let Some(root) = expected(case)["trusted_checkpoint"].as_str() {
        trust.checkpoint = Some(root.parse().unwrap());
    }
    trust
}

/// Verifies a vector's proof bytes for its own method and params.
pub(crate) fn verify_vector(case: &str, bytes: &[u8]) -> Result<Value, sszgate_proof::ProofError> {
    let e = expected(case);
    let mut trust = trust_for(case);
    sszgate_proof::verify(
        bytes,
        e["method"].as_str().unwrap(),
        &e["params"],
        &mut trust,
    )
}
