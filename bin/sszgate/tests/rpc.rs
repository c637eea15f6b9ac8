//! `sszgate rpc` as a user runs it, on recorded mainnet data: a replay server serves one
//! recorded case's Beacon API and execution RPC answers; the binary bootstraps its light
//! client from the recorded checkpoint, syncs, and answers JSON-RPC with what it verified
//! (the case's expected result), or an error naming the check when an answer lies.
//!
//! The recordings hold no `/eth/v1/config/spec` or `/eth/v1/beacon/genesis`: the test adds
//! mainnet's (public constants, checked by the light client against its built-in mainnet).
//! `--clock` fixes the light client's clock at the recording's slot.

mod common;

use std::{
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use common::{free_port, request};
use serde_json::{Value, json};

/// The recorded cases, from the repository's side.
fn data() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/colibri")
}

/// Mainnet's Unix time of `slot`.
const fn at_slot(slot: u64) -> u64 {
    1_606_824_023 + slot * 12
}

/// A copy of recorded case `name` with mainnet's config and genesis added.
fn case_dir(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(data().join(name)).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
    }
    let mut spec = json!({"PRESET_BASE": "mainnet", "SECONDS_PER_SLOT": "12", "SLOTS_PER_EPOCH": "32",
        "EPOCHS_PER_SYNC_COMMITTEE_PERIOD": "256", "GENESIS_FORK_VERSION": "0x00000000"});
    let forks = [
        ("ALTAIR", 74240),
        ("BELLATRIX", 144896),
        ("CAPELLA", 194048),
        ("DENEB", 269568),
        ("ELECTRA", 364032),
        ("FULU", 411392),
    ];
    for (i, (fork, epoch)) in forks.iter().enumerate() {
        spec[format!("{fork}_FORK_VERSION")] = json!(format!("0x0{}000000", i + 1));
        spec[format!("{fork}_FORK_EPOCH")] = json!(epoch.to_string());
    }
    let genesis = json!({"data": {"genesis_time": "1606824023", "genesis_fork_version": "0x00000000",
        "genesis_validators_root": "0x4b363db94e286120d76eb905340fdd4e54bfe9f06bf33ff6cf5ad27f511bfe95"}});
    std::fs::write(
        dir.path().join("eth_v1_config_spec.json"),
        json!({"data": spec}).to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("eth_v1_beacon_genesis.json"),
        genesis.to_string(),
    )
    .unwrap();
    dir
}

/// `sszgate rpc` in front of `upstream` (both the execution RPC and the Beacon API), once it
/// answers; the process and its address.
fn start_rpc(upstream: &str, clock: u64, state: &Path) -> (Child, String) {
    let listen = format!("127.0.0.1:{}", free_port());
    let child = Command::new(env!("CARGO_BIN_EXE_sszgate"))
        .args([
            "rpc",
            "--execution",
            upstream,
            "--beacon",
            upstream,
            "--listen",
            &listen,
        ])
        .args(["--clock", &clock.to_string()])
        .arg("--state")
        .arg(state)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::net::TcpStream::connect(&listen).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "sszgate rpc did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (child, listen)
}

fn call(addr: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let (status, answer) = request(
        addr,
        "POST",
        "/",
        &[("content-type", "application/json")],
        body.as_bytes(),
    );
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
    serde_json::from_slice(&answer).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_recorded_case_is_answered_with_what_the_light_client_verified() {
    let dir = case_dir("eth_blockNumber_electra");
    let replay = sszgate_fixtures::replay::Replay::start(dir.path())
        .await
        .unwrap();
    let state = dir.path().join("light-client.json");
    let (child, addr) = tokio::task::spawn_blocking({
        let (url, state) = (replay.url(), state.clone());
        move || start_rpc(&url, at_slot(11_658_783), &state)
    })
    .await
    .unwrap();
    let (number, chain) = tokio::task::spawn_blocking(move || {
        (
            call(&addr, "eth_blockNumber", json!([])),
            call(&addr, "eth_chainId", json!([])),
        )
    })
    .await
    .unwrap();
    let mut child = child;
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(number["result"], "0x1566aae", "{number}");
    assert_eq!(chain["result"], "0x1", "{chain}");
    // What it verified is kept: the next start resumes from the file.
    assert!(state.exists(), "the light client's store is saved");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forged_update_stops_it_with_the_check_named() {
    let dir = case_dir("eth_blockNumber_electra");
    // One bit of the sync aggregate's signature flipped, near the end of the update.
    let path = dir
        .path()
        .join("eth_v1_beacon_light_client_updates_start_period_1422_count_1.ssz");
    let mut update = std::fs::read(&path).unwrap();
    let at = update.len() - 40;
    update[at] ^= 1;
    std::fs::write(&path, update).unwrap();
    let replay = sszgate_fixtures::replay::Replay::start(dir.path())
        .await
        .unwrap();
    let url = replay.url();
    let state = dir.path().join("light-client.json");
    let out = tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_sszgate"))
            .args([
                "rpc",
                "--execution",
                &url,
                "--beacon",
                &url,
                "--listen",
                "127.0.0.1:0",
            ])
            .args(["--clock", &at_slot(11_658_783).to_string()])
            .arg("--state")
            .arg(&state)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("syncing the light client"), "{err}");
    assert!(
        err.to_lowercase().contains("signature") || err.contains("branch"),
        "{err}"
    );
}

/// colibri.stateless's npm package (`SSZGATE_COLIBRI`), or `None` with a loud message; under
/// `CI=true` its absence fails the test.
fn colibri() -> Option<String> {
    match std::env::var("SSZGATE_COLIBRI") {
        Ok(dir) if Path::new(&dir).join("index.js").is_file() => Some(dir),
        _ => {
            let install = "npm install --prefix DIR @corpus-core/colibri-stateless@1.1.19, then SSZGATE_COLIBRI=DIR/node_modules/@corpus-core/colibri-stateless";
            let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(!in_ci, "colibri's package is missing under CI: {install}");
            eprintln!("!!! SKIPPED: colibri's package not found ({install})");
            None
        }
    }
}

/// An independent verifier: colibri's own prover and verifier (its npm package, offline)
/// prove and verify every recorded case, and sszgate's verifier answers each the same
/// (`sszgate bench rpc` exits 1 on any difference; one round here).
#[test]
fn colibri_and_sszgate_agree_on_every_recorded_case() {
    let Some(package) = colibri() else { return };
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("bench-rpc.md");
    let out = Command::new(env!("CARGO_BIN_EXE_sszgate"))
        .args(["bench", "rpc", "--rounds", "1", "--colibri", &package])
        .arg("--cases")
        .arg(data())
        .arg("--out")
        .arg(&report)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let text = common::log_tail(&report, 1 << 20);
    assert!(
        text.starts_with("Machine:"),
        "the whole report, read from its start"
    );
    let cases: Vec<String> = std::fs::read_dir(data())
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("test.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(cases.len(), 18, "the recorded cases");
    for case in &cases {
        let row = text
            .lines()
            .find(|l| l.starts_with(&format!("| {case} | eth_")))
            .unwrap_or_else(|| panic!("{case}: no row in\n{text}"));
        assert!(row.ends_with("| yes |"), "{case}: {row}");
        // colibri ran: its cells hold times, not dashes.
        assert!(!row.contains("| — |"), "{case}: {row}");
    }
}
