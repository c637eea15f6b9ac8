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

use common::{PROVEN, colibri, colibri_verifies, expected, proof_bytes, recordings, verify_vector};
use sszgate_fixtures::replay::Replay;
use sszgate_proof::prover::Prover;

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
