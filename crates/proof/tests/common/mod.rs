//! What the proof tests share: the vectors of `testdata/colibri/` and their expectations.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

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

/// The most bytes a test reads of one file (the largest recorded answer is ~1 MB).
pub(crate) const MAX_FILE: u64 = 16 << 20;

/// A file's bytes, at most [`MAX_FILE`] of them (a larger file is an error, not a truncation).
pub(crate) fn read_bounded(path: &Path) -> Vec<u8> {
    sszgate_light::persist::read_file_bounded(path, MAX_FILE)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A file as UTF-8 text, bounded as [`read_bounded`].
pub(crate) fn read_text(path: &Path) -> String {
    String::from_utf8(read_bounded(path)).unwrap()
}

/// A vector's proof bytes.
pub(crate) fn proof_bytes(case: &str) -> Vec<u8> {
    read_bounded(&vectors_dir().join(case).join("proof.ssz"))
}

/// A vector's `expected.json`.
pub(crate) fn expected(case: &str) -> Value {
    let text = read_text(&vectors_dir().join(case).join("expected.json"));
    serde_json::from_str(&text).unwrap()
}

/// The clock a recorded case is replayed at: the start of the slot after its signed header
/// (when the signature was made), or the system clock for a case with no signature slot
/// (eth_getLogs1, asked by block number).
pub(crate) fn clock_for(case: &str) -> sszgate_proof::tags::Clock {
    let signed = expected(case)["decoded"]["checks"]["signature"]["signed_slot"].as_u64();
    let spec = sszgate_light::ChainSpec::mainnet();
    signed.map_or(sszgate_proof::tags::Clock::System, |slot| {
        sszgate_proof::tags::Clock::Fixed(spec.genesis_time + (slot + 1) * spec.seconds_per_slot)
    })
}

/// A mainnet trust with no keys, its clock at the case's time ([`clock_for`]).
pub(crate) fn empty_trust_for(case: &str) -> sszgate_proof::TrustedState {
    let mut trust = sszgate_proof::TrustedState::new(sszgate_light::ChainSpec::mainnet());
    trust.freshness.clock = clock_for(case);
    trust
}

/// The trust a vector needs: its committee keys (`sync_committee_<period>.pubkeys`), for the
/// sync-data vectors its trusted checkpoint, and the clock at its time.
pub(crate) fn trust_for(case: &str) -> sszgate_proof::TrustedState {
    let mut trust = empty_trust_for(case);
    let dir = vectors_dir().join(case);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(period) = name
            .strip_prefix("sync_committee_")
            .and_then(|n| n.strip_suffix(".pubkeys"))
        else {
            continue;
        };
        let keys = read_bounded(&dir.join(&name));
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
    // colibri's eth_getLogs vector is a `LogsProof`, which a verifier takes only with the
    // opt-in (it cannot show completeness); a test of sszgate's range form turns it off.
    trust.accept_incomplete_logs = expected(case)["method"] == "eth_getLogs";
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

/// The cases whose methods the prover builds.
pub(crate) const PROVEN: &[&str] = &[
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
pub(crate) fn needed<T>(found: Option<T>, what: &str) -> Option<T> {
    if found.is_some() {
        return found;
    }
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(!in_ci, "{what} missing");
    eprintln!("!!! SKIPPED: {what} missing (the test fails under CI=true)");
    None
}

pub(crate) fn recordings() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/colibri");
    needed(
        dir.is_dir().then_some(dir),
        "the recorded cases (shared/data/colibri)",
    )
}

/// colibri's npm package (`SSZGATE_COLIBRI`, as CI installs it; `COLIBRI_PKG`; else
/// `tools/colibri/` next to the repository, as `shared/tools/colibri/README.md` installs it)
/// and node.
pub(crate) fn colibri() -> Option<PathBuf> {
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
/// recording's storage (its committee keys) and, if given, a trusted checkpoint: the result,
/// or its error.
pub(crate) fn colibri_verifies(
    pkg: &Path,
    proof: &Path,
    case: &str,
    recording: &Path,
    checkpoint: Option<&str>,
) -> Result<serde_json::Value, String> {
    let e = expected(case);
    let request = serde_json::json!({"op": "verify", "case": recording, "method": e["method"],
        "params": e["params"], "proof": proof, "fresh": true, "checkpoint": checkpoint});
    colibri_peer(pkg, &request)
}

/// colibri's client (`scripts/colibri-peer.mjs`, op `rpc`, a new process) asking the prover at
/// `prover` for the proof of the case's request and verifying it with the recording's storage:
/// the result, or its error.
pub(crate) fn colibri_rpc(
    pkg: &Path,
    prover: &str,
    case: &str,
    recording: &Path,
) -> Result<serde_json::Value, String> {
    let e = expected(case);
    let request = serde_json::json!({"op": "rpc", "case": recording, "method": e["method"],
        "params": e["params"], "prover": prover});
    colibri_peer(pkg, &request)
}

/// A new colibri peer process (`scripts/colibri-peer.mjs`), its stdin and stdout piped.
fn spawn_peer(pkg: &Path) -> Result<std::process::Child, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/colibri-peer.mjs");
    Command::new("node")
        .arg(script)
        .env("COLIBRI_PKG", pkg)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|err| err.to_string())
}

/// One request to a new colibri peer process; its `result`, or its error.
fn colibri_peer(pkg: &Path, request: &serde_json::Value) -> Result<serde_json::Value, String> {
    use std::io::{BufRead, Write};
    let mut child = spawn_peer(pkg)?;
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

/// colibri's prover as a remote prover over HTTP (`scripts/colibri-peer.mjs`, op `serve`),
/// answering from a recording; stopped (by its process id) when dropped.
pub(crate) struct ColibriProver {
    child: std::process::Child,
    /// Where to POST proof requests.
    pub(crate) url: String,
}

impl ColibriProver {
    /// Starts it for `recording`.
    pub(crate) fn start(pkg: &Path, recording: &Path) -> ColibriProver {
        use std::io::{BufRead, Write};
        let mut child = spawn_peer(pkg).unwrap();
        let request = serde_json::json!({"op": "serve", "case": recording});
        writeln!(child.stdin.as_mut().unwrap(), "{request}").unwrap();
        let mut line = String::new();
        std::io::BufReader::new(std::io::Read::take(child.stdout.take().unwrap(), 1 << 16))
            .read_line(&mut line)
            .unwrap();
        let answer: serde_json::Value = serde_json::from_str(&line).unwrap();
        let port = answer["port"]
            .as_u64()
            .unwrap_or_else(|| panic!("colibri prover: {line}"));
        ColibriProver {
            child,
            url: format!("http://127.0.0.1:{port}/"),
        }
    }
}

impl Drop for ColibriProver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
