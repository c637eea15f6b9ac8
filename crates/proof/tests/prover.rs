//! sszgate's prover fed from colibri's recorded cases (`shared/data/colibri/<case>/`, served by
//! the fixtures' replay server as execution RPC and Beacon API): each proof it builds equals
//! colibri's vector byte for byte, and verifies to the vector's result.
//!
//! colibri's own verifier (its npm package, run by node on `tests/colibri/verify_vector.mjs`,
//! a copy of `shared/tools/colibri/verify_vector.mjs`) accepts those proofs with the vectors'
//! results. The recordings and colibri live outside the repository: missing, the tests are
//! skipped loudly — and fail under `CI=true`.

mod common;

use std::time::Duration;

use common::{
    PROVEN, colibri, colibri_verifies, expected, proof_bytes, recordings, trust_for, verify_vector,
};
use serde_json::Value;
use sszgate_fixtures::replay::Replay;
use sszgate_proof::prover::Prover;
use sszgate_proof::types::ProofUnion;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proofs_from_the_recordings_equal_colibris_vectors() {
    let Some(dir) = recordings() else { return };
    for case in PROVEN {
        let e = expected(case);
        let recording = case.trim_end_matches("_include_code");
        let replay = Replay::start(&dir.join(recording)).await.unwrap();
        let mut prover =
            Prover::new(&replay.url(), &replay.url(), Duration::from_secs(10)).unwrap();
        prover.include_code = e["prover_flags"]["include_code"] == true;
        // colibri's vectors hold its `LogsProof`; sszgate's own form is tested below.
        prover.colibri_logs = true;
        let ours = prover
            .prove(e["method"].as_str().unwrap(), &e["params"])
            .await
            .unwrap_or_else(|err| {
                panic!("{case}: {err} (missing answers: {:?})", replay.missing())
            });
        assert_eq!(ours.len(), proof_bytes(case).len(), "{case}: size");
        assert!(
            ours == proof_bytes(case),
            "{case}: the proof differs from colibri's"
        );
        verify_vector(case, &ours).unwrap_or_else(|err| panic!("{case}: {err}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colibris_verifier_accepts_sszgates_proofs() {
    let (Some(dir), Some(pkg)) = (recordings(), colibri()) else {
        return;
    };
    let scratch =
        std::env::temp_dir().join(format!("sszgate-proof-colibri-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    for case in PROVEN {
        let e = expected(case);
        let recording = dir.join(case.trim_end_matches("_include_code"));
        let replay = Replay::start(&recording).await.unwrap();
        let mut prover =
            Prover::new(&replay.url(), &replay.url(), Duration::from_secs(10)).unwrap();
        prover.include_code = e["prover_flags"]["include_code"] == true;
        // colibri 1.1.19 knows no `LogsRangeProof`: it is given its own form.
        prover.colibri_logs = true;
        let proof = prover
            .prove(e["method"].as_str().unwrap(), &e["params"])
            .await
            .unwrap();
        let file = scratch.join(format!("{case}.ssz"));
        std::fs::write(&file, &proof).unwrap();
        let result = colibri_verifies(&pkg, &file, case, &recording, None)
            .unwrap_or_else(|err| panic!("{case}: colibri refused: {err}"));
        assert_eq!(result, e["result"], "{case}: colibri's result");
    }
    std::fs::remove_dir_all(&scratch).unwrap();
}

/// §15 item 2, shown: a storage proof cut to its first node. colibri answers 0; sszgate
/// refuses it (check `storage_proof`).
#[test]
fn a_truncated_storage_proof_colibri_accepts_is_refused() {
    let (Some(dir), Some(pkg)) = (recordings(), colibri()) else {
        return;
    };
    let case = "eth_getStorageAt1";
    let mut request = sszgate_proof::decode(&proof_bytes(case)).unwrap();
    let sszgate_proof::types::ProofUnion::Account(account) = &mut request.proof else {
        panic!("an AccountProof")
    };
    let first = account.storage_proof[0].proof[0].clone();
    account.storage_proof[0].proof = vec![first].try_into().unwrap();
    let bytes = ssz::Encode::as_ssz_bytes(&request);
    let file = std::env::temp_dir().join(format!(
        "sszgate-proof-truncated-{}.ssz",
        std::process::id()
    ));
    std::fs::write(&file, &bytes).unwrap();
    let colibri = colibri_verifies(&pkg, &file, case, &dir.join(case), None);
    std::fs::remove_file(&file).unwrap();
    let zero = format!("0x{}", "0".repeat(64));
    assert_eq!(
        colibri,
        Ok(serde_json::Value::String(zero)),
        "colibri 1.1.19 answers 0"
    );
    let ours = verify_vector(case, &bytes).unwrap_err();
    assert_eq!(
        ours.check(),
        Some(sszgate_proof::Check::StorageProof),
        "{ours}"
    );
}

/// The node's own eth_getLogs answer in the eth_getLogs1 recording.
fn recorded_logs(dir: &std::path::Path) -> Value {
    let file = std::fs::read_dir(dir.join("eth_getLogs1"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("eth_getLogs_")
        })
        .unwrap();
    serde_json::from_str::<Value>(&common::read_text(&file)).unwrap()["result"].clone()
}

/// sszgate's own eth_getLogs proof from the recording: a `LogsRangeProof` with every receipt
/// of the block, taken by a verifier that refuses colibri's form, verified to the node's very
/// answer — `logIndex` included, which colibri's form cannot bind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_range_proof_of_the_recording_verifies_to_the_nodes_logs_with_their_index() {
    let Some(dir) = recordings() else { return };
    let case = "eth_getLogs1";
    let e = expected(case);
    let replay = Replay::start(&dir.join(case)).await.unwrap();
    let prover = Prover::new(&replay.url(), &replay.url(), Duration::from_secs(10)).unwrap();
    let proof = prover.prove("eth_getLogs", &e["params"]).await.unwrap();
    let request = sszgate_proof::decode(&proof).unwrap();
    let ProofUnion::LogsRange(range) = &request.proof else {
        panic!("a LogsRangeProof, not {}", request.proof.selector())
    };
    assert_eq!(range.blocks.len(), 1);
    // The block's every receipt (the recording's 57), for 8 logs of the filter's address.
    let receipts = &range.blocks[0].receipts;
    let node_receipts =
        common::read_text(&dir.join(case).join("eth_getBlockReceipts_0x14d7970.json"));
    let node_receipts: Value = serde_json::from_str(&node_receipts).unwrap();
    assert_eq!(
        receipts.len(),
        node_receipts["result"].as_array().unwrap().len()
    );
    let mut trust = trust_for(case);
    trust.accept_incomplete_logs = false;
    let ours = sszgate_proof::verify(&proof, "eth_getLogs", &e["params"], &mut trust).unwrap();
    let node = recorded_logs(&dir);
    assert_eq!(node.as_array().unwrap().len(), 8);
    assert_eq!(ours, node, "every field, logIndex included");
    // colibri's own vector, the same logs without their index, is refused by that verifier.
    let colibri =
        sszgate_proof::verify(&proof_bytes(case), "eth_getLogs", &e["params"], &mut trust)
            .unwrap_err();
    assert_eq!(
        colibri.check(),
        Some(sszgate_proof::Check::Completeness),
        "{colibri}"
    );
    assert!(
        colibri.to_string().contains("--accept-incomplete-logs"),
        "{colibri}"
    );
}
