//! The embeddable verifier (the npm package `sszgate-verifier`) under viem in Node, against
//! `sszgate rpc --serve-proofs` fed by colibri's recorded mainnet cases: a replay server serves
//! one case's execution RPC and Beacon API, the binary proves from it, and `js/peers/viem.mjs`
//! asks the case's request through viem's `custom()` transport over the package's
//! `createProvider`. Each answer equals the recording's; the same request through a relay that
//! flips one byte of every proof is refused. No recording fits viem's `getLogs` here: the only
//! eth_getLogs case (`eth_getLogs1`) holds no light-client bootstrap, so the binary's light
//! client cannot start on it (its range proof is tested in-process in
//! `crates/proof/tests/logs_range.rs`).
//!
//! Needs node, the built package (`scripts/build-js.sh`; `SSZGATE_VERIFIER_PKG`, else
//! `target/js/sszgate-verifier`) and viem (`npm install --prefix DIR viem@2.57.20`;
//! `SSZGATE_VIEM`, else `target/js/viem`): without them the test skips loudly, except under
//! `CI=true`, where it fails.

mod common;

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use alloy_primitives::U256;
use common::{KillOnDrop, free_port, log_tail};
use serde_json::{Value, json};

/// The viem version the peer script is written against (pinned).
const VIEM: &str = "2.57.20";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `Some(path)` when it exists, else a loud skip (a failure under `CI=true`).
fn needed(path: PathBuf, what: &str) -> Option<PathBuf> {
    if path.exists() {
        return Some(path);
    }
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(!in_ci, "{what} missing at {}", path.display());
    eprintln!(
        "!!! SKIPPED: {what} missing at {} (the test fails under CI=true)",
        path.display()
    );
    None
}

/// The directory named by `var`, else `default` under the repository.
fn dir_from(var: &str, default: &str) -> PathBuf {
    std::env::var_os(var).map_or_else(|| repo().join(default), PathBuf::from)
}

/// The package, viem and node, or `None` after a loud skip.
fn peers() -> Option<(PathBuf, PathBuf)> {
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let node = needed(
        if node {
            repo()
        } else {
            PathBuf::from("/nonexistent")
        },
        "node",
    );
    let pkg = needed(
        dir_from("SSZGATE_VERIFIER_PKG", "target/js/sszgate-verifier").join("index.js"),
        "the package (scripts/build-js.sh)",
    );
    let viem = needed(
        dir_from("SSZGATE_VIEM", "target/js/viem").join("node_modules/viem/package.json"),
        &format!("viem (npm install --prefix target/js/viem viem@{VIEM})"),
    );
    node?;
    let (pkg, viem) = (pkg?, viem?);
    let version: Value = serde_json::from_slice(&std::fs::read(&viem).unwrap()).unwrap();
    assert_eq!(version["version"], VIEM, "the pinned viem");
    let viem_dir = viem.ancestors().nth(3).unwrap().to_path_buf();
    Some((pkg.parent().unwrap().to_path_buf(), viem_dir))
}

/// A vector's directory (its expectation and recorded committee keys).
fn vector(case: &str) -> PathBuf {
    repo().join("crates/proof/testdata/colibri").join(case)
}

fn expected(case: &str) -> Value {
    serde_json::from_slice(&std::fs::read(vector(case).join("expected.json")).unwrap()).unwrap()
}

/// The start of the slot after the case's signed header: when its proof was fresh.
fn clock(case: &str) -> u64 {
    let slot = expected(case)["decoded"]["checks"]["signature"]["signed_slot"]
        .as_u64()
        .unwrap();
    1_606_824_023 + (slot + 1) * 12
}

/// `sszgate rpc --serve-proofs` over `upstream`, once it accepts connections.
fn start_prover(upstream: &str, now: u64, dir: &Path) -> (Child, String) {
    let listen = format!("127.0.0.1:{}", free_port());
    let log = dir.join("prover.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sszgate"))
        .args(["rpc", "--serve-proofs", "--network", "mainnet"])
        .args(["--execution", upstream, "--beacon", upstream])
        .args(["--listen", &listen, "--clock", &now.to_string()])
        .arg("--state")
        .arg(dir.join("light-client.json"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::net::TcpStream::connect(&listen).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("sszgate rpc ended ({status}): {}", log_tail(&log, 16 << 10));
        }
        assert!(
            started.elapsed() < Duration::from_secs(90),
            "sszgate rpc did not start: {}",
            log_tail(&log, 16 << 10)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    (child, listen)
}

/// The peer script's report for `case`'s request, asked of the prover at `prover`.
fn viem_asks(pkg: &Path, viem: &Path, prover: &str, case: &str) -> Value {
    let e = expected(case);
    let keys: Vec<Value> = std::fs::read_dir(vector(case))
        .unwrap()
        .filter_map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name()?.to_str()?.to_string();
            let period: u64 = name
                .strip_prefix("sync_committee_")?
                .strip_suffix(".pubkeys")?
                .parse()
                .ok()?;
            Some(json!({"period": period, "file": path}))
        })
        .collect();
    let job = json!({"pkg": pkg, "prover": prover, "now": clock(case), "keys": keys,
        // The package is made from a root before the recorded keys are added; it is not used.
        "checkpoint": format!("0x{}", "11".repeat(32)),
        "calls": [{"method": e["method"], "params": e["params"]}]});
    let mut child = Command::new("node")
        .arg(repo().join("js/peers/viem.mjs"))
        .env("VIEM_DIR", viem)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    write!(child.stdin.take().unwrap(), "{job}").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{case}: the viem peer failed: {stderr}"
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{case}: {e}: {stderr}"))
}

/// A quantity as viem or JSON-RPC writes it: a number (viem's indices) or hex text.
fn quantity(v: &Value) -> U256 {
    v.as_u64()
        .map(U256::from)
        .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or_else(|| panic!("a quantity expected: {v}"))
}

/// viem's answer against the recorded result (viem formats quantities as bigints, the
/// receipt's status as a word, addresses as given).
fn check_answer(case: &str, ours: &Value) {
    let want = &expected(case)["result"];
    match expected(case)["method"].as_str().unwrap() {
        "eth_getBalance" => assert_eq!(quantity(ours), quantity(want), "{case}"),
        "eth_call" => assert_eq!(ours["data"], *want, "{case}"),
        "eth_getTransactionReceipt" => {
            for field in ["transactionHash", "blockHash", "logsBloom"] {
                assert_eq!(ours[field], want[field], "{case}: {field}");
            }
            for field in ["blockNumber", "cumulativeGasUsed", "transactionIndex"] {
                assert_eq!(
                    quantity(&ours[field]),
                    quantity(&want[field]),
                    "{case}: {field}"
                );
            }
            let status = if want["status"] == "0x1" {
                "success"
            } else {
                "reverted"
            };
            assert_eq!(ours["status"], status, "{case}");
            let (logs, want_logs) = (ours["logs"].as_array().unwrap(), &want["logs"]);
            assert_eq!(logs.len(), want_logs.as_array().unwrap().len(), "{case}");
            for (log, want) in logs.iter().zip(want_logs.as_array().unwrap()) {
                assert_eq!(log["data"], want["data"], "{case}");
                assert_eq!(log["topics"], want["topics"], "{case}");
            }
        }
        other => panic!("{case}: no check for {other}"),
    }
}

/// Runs `check` with the URL of `sszgate rpc --serve-proofs`'s `POST /proof`, the binary
/// proving from a replay of recorded `case`; the prover is stopped after.
async fn with_prover(case: &str, check: impl FnOnce(&str, &str) + Send + 'static) {
    let recording = repo().join("../shared/data/colibri").join(case);
    let Some(recording) = needed(recording, "the recorded cases (shared/data/colibri)") else {
        return;
    };
    let replay = sszgate_fixtures::replay::Replay::start(&recording)
        .await
        .unwrap();
    let (url, case) = (replay.url(), case.to_string());
    tokio::task::spawn_blocking(move || {
        let dir = tempfile::tempdir().unwrap();
        let (child, listen) = start_prover(&url, clock(&case), dir.path());
        let _prover = KillOnDrop {
            pid: child.id(),
            listen: listen.clone(),
        };
        let log = dir.path().join("prover.log");
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            check(&format!("http://{listen}/proof"), &case)
        }));
        if let Err(panic) = outcome {
            eprintln!("the prover's log:\n{}", log_tail(&log, 8 << 10));
            std::panic::resume_unwind(panic);
        }
        drop(child);
    })
    .await
    .unwrap();
}

/// One recorded case end to end: viem through the package, honest and lied to.
async fn case_through_viem(case: &str) {
    let Some((pkg, viem)) = peers() else { return };
    with_prover(case, move |prover, case| {
        let report = viem_asks(&pkg, &viem, prover, case);
        let answer = &report["answers"][0];
        assert!(answer["error"].is_null(), "{case}: {answer}");
        check_answer(case, &answer["ok"]);
        let lie = &report["lies"][0];
        assert!(
            lie["ok"].is_null(),
            "{case}: a flipped proof was answered: {lie}"
        );
        assert!(
            lie["error"].as_str().unwrap().contains("proof refused"),
            "{case}: {lie}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn viem_get_balance_through_the_package_is_the_recorded_balance() {
    case_through_viem("eth_getBalance1").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn viem_get_transaction_receipt_through_the_package_is_the_recorded_receipt() {
    case_through_viem("eth_getTransactionReceipt1").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn viem_call_through_the_package_is_the_recorded_call() {
    case_through_viem("eth_call1").await;
}

/// `js/test/browser.test.mjs` with a prover: headless Chromium asks it through the package's
/// `createProvider`, verifies, refuses a flipped proof, and a screenshot is saved under
/// `target/`.
#[tokio::test(flavor = "multi_thread")]
async fn a_browser_page_verifies_what_the_prover_binary_serves() {
    let Some((pkg, _)) = peers() else { return };
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    let missing = PathBuf::from("/usr/bin/chromium");
    if needed(
        chromium.unwrap_or(missing),
        "chromium (apt-get install chromium)",
    )
    .is_none()
    {
        return;
    }
    with_prover("eth_getBalance1", move |prover, case| {
        let out = Command::new("node")
            .args(["--test", "--test-reporter=spec"])
            .arg(repo().join("js/test/browser.test.mjs"))
            .env("SSZGATE_VERIFIER_PKG", &pkg)
            .env("SSZGATE_PROVER_URL", prover)
            .env("SSZGATE_PROVER_CASE", case)
            .env(
                "SSZGATE_SCREENSHOT",
                repo().join("target/browser-prover.png"),
            )
            .output()
            .unwrap();
        let report = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{report}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Both pages ran, none skipped.
        assert!(report.contains("pass 2"), "{report}");
    })
    .await;
}
