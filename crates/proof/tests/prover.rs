//! sszgate's prover fed from colibri's recorded cases (`shared/data/colibri/<case>/`, served by
//! the fixtures' replay server as execution RPC and Beacon API): each proof it builds equals
//! colibri's vector byte for byte, and verifies to the vector's result.
//!
//! colibri's own verifier (its npm package, run by node on `tests/colibri/verify_vector.mjs`,
//! a copy of `shared/tools/colibri/verify_vector.mjs`) accepts those proofs with the vectors'
//! results. The recordings and colibri live outside the repository: missing, the tests are
//! skipped loudly — and fail under `CI=true`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{expected, proof_bytes, verify_vector};
use sszgate_fixtures::replay::Replay;
use sszgate_proof::prover::Prover;

/// The cases whose methods the prover builds.
const PROVEN: &[&str] = &[
    "eth_call1",
    "eth_call1_include_code",
    "eth_blockNumber_electra",
    "eth_getBalance1",
    "eth_getBlockByHash1",
    "eth_getBlockByNumber_electra",
    "eth_getLogs1",
    "eth_getProof1",
    "eth_getStorageAt1",
    "eth_getTransactionByHash1",
    "eth_getTransactionByHash_electra",
    "eth_getTransactionCount1",
    "eth_getTransactionReceipt1",
    "trusted_block1",
];

/// `Some(x)` when `found`, else a loud skip (a failure under `CI=true`).
fn needed<T>(found: Option<T>, what: &str) -> Option<T> {
    if found.is_some() {
        return found;
    }
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(!in_ci, "{what} missing");
    eprintln!("!!! SKIPPED: {what} missing (the test fails under CI=true)");
    None
}

fn recordings() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/colibri");
    needed(
        dir.is_dir().then_some(dir),
        "the recorded cases (shared/data/colibri)",
    )
}

/// colibri's npm package (`SSZGATE_COLIBRI`, as CI installs it; `COLIBRI_PKG`; else
/// `tools/colibri/` next to the repository, as `shared/tools/colibri/README.md` installs it)
/// and node.
fn colibri() -> Option<PathBuf> {
    let default = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../tools/colibri/node_modules/@corpus-core/colibri-stateless");
    let pkg = std::env::var_os("SSZGATE_COLIBRI")
        .or_else(|| std::env::var_os("COLIBRI_PKG"))
        .map(PathBuf::from)
        .unwrap_or(default);
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    needed(
        (node && pkg.join("index.js").exists()).then_some(pkg),
        "node or colibri's npm package",
    )
}

/// colibri's verifier on `proof` (`scripts/colibri-peer.mjs`, a new process), with the
/// recording's storage (its committee keys): the result, or its error.
fn colibri_verifies(
    pkg: &Path,
    proof: &Path,
    case: &str,
    recording: &Path,
) -> Result<serde_json::Value, String> {
    use std::io::{BufRead, Write};
    let e = expected(case);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/colibri-peer.mjs");
    let request = serde_json::json!({"op": "verify", "case": recording, "method": e["method"],
        "params": e["params"], "proof": proof, "fresh": true});
    let mut child = Command::new("node")
        .arg(script)
        .env("COLIBRI_PKG", pkg)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|err| err.to_string())?;
    let mut stdin = child.stdin.take().ok_or("stdin")?;
    writeln!(stdin, "{request}").map_err(|err| err.to_string())?;
    drop(stdin);
    let stdout = child.stdout.take().ok_or("stdout")?;
    let mut line = String::new();
    std::io::BufReader::new(std::io::Read::take(stdout, 64 << 20))
        .read_line(&mut line)
        .map_err(|err| err.to_string())?;
    let _ = child.wait();
    let report: serde_json::Value =
        serde_json::from_str(&line).map_err(|err| format!("{err}: {line}"))?;
    match report["ok"].as_bool() {
        Some(true) => Ok(report["result"].clone()),
        _ => Err(report["error"].to_string()),
    }
}

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
        let result = colibri_verifies(&pkg, &file, case, &recording)
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
    let colibri = colibri_verifies(&pkg, &file, case, &dir.join(case));
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
