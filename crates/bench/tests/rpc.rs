//! `sszgate bench rpc` on single recorded cases, one round: the remote (proof) mode's figures
//! are there and true (sszgate's proof of eth_getBalance1 has the size of colibri's vector,
//! and equals colibri's proof when colibri runs), a method the prover lacks is reported as
//! unsupported without failing the run, and the report carries the new tables. Timings are
//! not checked. The recordings live outside the repository (and colibri's package, used when
//! `SSZGATE_COLIBRI` names it): missing, the tests are skipped loudly — and fail under
//! `CI=true`.

use std::path::{Path, PathBuf};

use sszgate_bench::rpc::{self, Options, RemoteOutcome, Report};

/// The recorded cases, or `None` with a loud message (a failure under `CI=true`).
fn recordings() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/colibri");
    if dir.is_dir() {
        return Some(dir);
    }
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(!in_ci, "the recorded cases (shared/data/colibri) missing");
    eprintln!("!!! SKIPPED: the recorded cases (shared/data/colibri) missing");
    None
}

/// colibri's package when `SSZGATE_COLIBRI` names one.
fn colibri() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("SSZGATE_COLIBRI")?);
    dir.join("index.js").is_file().then_some(dir)
}

fn one_case(data: PathBuf, case: &str) -> Report {
    rpc::run(&Options {
        vectors: data.join("../../vectors/colibri"),
        data,
        colibri: colibri(),
        rounds: 1,
        only: Some(case.into()),
    })
    .unwrap()
}

#[test]
fn the_remote_mode_proves_and_verifies_a_balance_at_the_vectors_size() {
    let Some(data) = recordings() else { return };
    let vector = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../proof/testdata/colibri/eth_getBalance1/proof.ssz");
    let vector_size = std::fs::metadata(vector).unwrap().len() as usize;
    assert_eq!(vector_size, 4391);
    let report = one_case(data, "eth_getBalance1");
    assert_eq!(report.rows.len(), 1);
    let row = &report.rows[0];
    let RemoteOutcome::Measured(remote) = &row.remote else {
        panic!("no remote figures: {:?}", row.remote)
    };
    assert_eq!(remote.proof_bytes, vector_size);
    for s in [&remote.prove, &remote.verify_cold, &remote.verify_warm] {
        assert_eq!(s.samples.len(), 1, "{}", s.name);
    }
    if report.colibri.is_ok() {
        assert_eq!(
            remote.same_proof,
            Some(true),
            "sszgate's proof is colibri's"
        );
        assert_eq!(remote.agreement, Some(Ok(())));
        assert_eq!(row.colibri_proof_bytes, Some(vector_size));
    }
    assert!(report.disagreements().is_empty());
    let text = report.markdown();
    assert!(text.contains("| sszgate prove | colibri prove | sszgate verify cold | sszgate verify warm | colibri verify cold | colibri verify warm | same answer |"), "{text}");
    assert!(text.contains("| sszgate proof, bytes | colibri proof, bytes | same proof bytes |"));
    let sizes = format!("| eth_getBalance1 | eth_getBalance | 54 | 81247 (2) | {vector_size} |");
    assert!(text.contains(&sizes), "{text}");
}

#[test]
fn a_transaction_by_block_hash_and_index_is_proven_from_the_recordings_own_keys() {
    let Some(data) = recordings() else { return };
    // No colibri vector holds this case's keys: they come from the recording's bootstrap and
    // update, and the proof is the one colibri's prover makes when colibri runs.
    let report = one_case(data, "eth_getTransactionByBlockHashAndIndex1");
    let row = &report.rows[0];
    let RemoteOutcome::Measured(remote) = &row.remote else {
        panic!("no remote figures: {:?}", row.remote)
    };
    if row.colibri_proof_bytes.is_some() {
        assert_eq!(
            remote.same_proof,
            Some(true),
            "sszgate's proof is colibri's"
        );
        assert_eq!(remote.agreement, Some(Ok(())));
    }
    assert!(report.disagreements().is_empty());
}
