//! Prove, serve, verify over HTTP with colibri's recorded cases (`shared/data/colibri/`, served
//! by the fixtures' replay server as execution RPC and Beacon API): the prover endpoint
//! (`POST /proof` on sszgate-rpc's server) answers each request, the remote verifier
//! ([`ProofClient`]) checks what comes back. A verifier with only a checkpoint gets the
//! bootstrap and the updates it lacks in the proof, keeps the keys, and colibri's own
//! verifier accepts the same proof. A prover that tampers is caught; bad requests get 400.

mod common;

use std::{path::PathBuf, sync::Arc, time::Duration};

use alloy_primitives::B256;
use bytes::Bytes;
use common::{
    PROVEN, colibri, colibri_rpc, colibri_verifies, expected, proof_bytes, recordings, trust_for,
    verify_vector,
};
use serde_json::Value;
use sszgate_fixtures::replay::Replay;
use sszgate_light::ChainSpec;
use sszgate_proof::TrustedState;
use sszgate_proof::prover::Prover;
use sszgate_proof::prover::endpoint::ProofEndpoint;
use sszgate_proof::remote::ProofClient;
use sszgate_proof::trust::ClientState;
use sszgate_rpc::{
    Answerer, BoxFuture, Config, FixedAnchors, Route, RouteAnswer, RpcError, Server, Upstream,
};

/// A prover endpoint over a recording at `/proof`, one counting what it serves at
/// `/counted`, and tampering ones at `/flipped` and `/cut`.
struct Setup {
    replay: Replay,
    server: Server,
    served: Arc<std::sync::atomic::AtomicUsize>,
}

/// Answers like the endpoint and counts the proofs it served.
struct Counted {
    inner: ProofEndpoint,
    served: Arc<std::sync::atomic::AtomicUsize>,
}

impl Route for Counted {
    fn answer(&self, body: Bytes) -> BoxFuture<'_, RouteAnswer> {
        Box::pin(async move {
            let a = self.inner.answer(body).await;
            if a.status == 200 {
                self.served
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            a
        })
    }
}

/// Answers like the endpoint, with one byte of every proof flipped (or the proof cut).
struct Tamper {
    inner: ProofEndpoint,
    at: fn(usize) -> usize,
    cut: bool,
}

impl Route for Tamper {
    fn answer(&self, body: Bytes) -> BoxFuture<'_, RouteAnswer> {
        Box::pin(async move {
            let mut a = self.inner.answer(body).await;
            if a.status == 200 {
                let i = (self.at)(a.body.len());
                if self.cut {
                    a.body.truncate(i);
                } else {
                    a.body[i] ^= 0x01;
                }
            }
            a
        })
    }
}

fn prover(replay: &Replay) -> Prover {
    Prover::new(&replay.url(), &replay.url(), Duration::from_secs(10)).unwrap()
}

async fn setup(recording: &str) -> Setup {
    let replay = Replay::start(&recordings().unwrap().join(recording))
        .await
        .unwrap();
    let config = Config::new(&replay.url(), 1);
    let local = sszgate_rpc::local_verifier(&config, FixedAnchors::new()).unwrap();
    let served = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let routes: sszgate_rpc::Routes = vec![
        (
            "/counted".into(),
            Arc::new(Counted {
                inner: ProofEndpoint::new(prover(&replay)),
                served: served.clone(),
            }),
        ),
        (
            "/proof".into(),
            Arc::new(ProofEndpoint::new(prover(&replay))),
        ),
        (
            "/flipped".into(),
            Arc::new(Tamper {
                inner: ProofEndpoint::new(prover(&replay)),
                at: |n| n / 2,
                cut: false,
            }),
        ),
        (
            "/cut".into(),
            Arc::new(Tamper {
                inner: ProofEndpoint::new(prover(&replay)),
                at: |n| n - 1,
                cut: true,
            }),
        ),
    ];
    let server = sszgate_rpc::serve_with(config, local, routes)
        .await
        .unwrap();
    Setup {
        replay,
        server,
        served,
    }
}

fn client(s: &Setup, path: &str, trust: TrustedState, state: Option<PathBuf>) -> ProofClient {
    ProofClient::new(
        &format!("{}{path}", s.server.url()),
        Duration::from_secs(10),
        trust,
        1,
        state,
    )
    .unwrap()
}

fn params(e: &Value) -> Vec<Value> {
    e["params"].as_array().unwrap().clone()
}

/// What sszgate verifies colibri's own proof of the case to (its result, with sszgate's
/// deliberate differences: `tests/verify.rs` compares it with colibri's).
fn truth(case: &str) -> Result<Value, RpcError> {
    Ok(verify_vector(case, &proof_bytes(case)).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verifier_with_keys_answers_every_case_through_the_prover_endpoint() {
    let Some(dir) = recordings() else { return };
    for case in PROVEN.iter().filter(|c| !c.ends_with("_include_code")) {
        let e = expected(case);
        let s = setup(case).await;
        let mut trust = trust_for(case);
        // The endpoint serves sszgate's complete eth_getLogs form: no opt-in needed, and its
        // answer is the node's own, `logIndex` included (colibri's form cannot bind it).
        trust.accept_incomplete_logs = false;
        let c = client(&s, "/proof", trust, None);
        let method = e["method"].as_str().unwrap();
        let answer = c.call(method, &params(&e)).await;
        let want = match method {
            "eth_getLogs" => Ok(recorded_answer(&dir.join(case), "eth_getLogs_")),
            _ => truth(case),
        };
        assert_eq!(answer, want, "{case}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checkpoint_is_enough_the_prover_sends_its_bootstrap() {
    if recordings().is_none() {
        return;
    }
    let case = "trusted_block1";
    let e = expected(case);
    let checkpoint: B256 = e["trusted_checkpoint"].as_str().unwrap().parse().unwrap();
    let s = setup(case).await;
    let mut trust = common::empty_trust_for(case);
    trust.checkpoint = Some(checkpoint);
    let file = std::env::temp_dir().join(format!("sszgate-proof-keys-{}.bin", std::process::id()));
    let c = client(&s, "/proof", trust, Some(file.clone()));
    let method = e["method"].as_str().unwrap();
    assert_eq!(c.call(method, &params(&e)).await, truth(case));
    // The checkpoint is in the block's own period 1407.
    assert_eq!(c.periods(), [1407]);
    let mut saved = TrustedState::load(ChainSpec::mainnet(), &file).unwrap();
    saved.freshness.clock = common::clock_for(case);
    assert_eq!(saved.client_state(), ClientState::Periods(vec![1407]));
    assert_eq!(saved.checkpoint, Some(checkpoint));
    // The saved keys verify the vector's proof (no sync data in it) after a restart.
    let result = sszgate_proof::verify(&proof_bytes(case), method, &e["params"], &mut saved);
    assert_eq!(result.ok(), truth(case).ok());
    std::fs::remove_file(&file).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_of_an_older_period_are_carried_forward_by_fourteen_updates() {
    if recordings().is_none() {
        return;
    }
    let case = "trusted_block1";
    let e = expected(case);
    let s = setup(case).await;
    // Only period 1393's keys (those of eth_getBalance1's vector): the block is in 1407.
    let mut trust = trust_for("eth_getBalance1");
    trust.freshness.clock = common::clock_for(case);
    assert_eq!(trust.periods(), [1393]);
    let c = client(&s, "/proof", trust, None);
    let method = e["method"].as_str().unwrap();
    assert_eq!(c.call(method, &params(&e)).await, truth(case));
    // Updates of 1393…1406 each signed by the committee before and adding the next: the
    // newest 8 periods are kept.
    assert_eq!(c.periods(), (1400..=1407).collect::<Vec<_>>());
    // A second request needs no sync data: the same answer.
    assert_eq!(c.call(method, &params(&e)).await, truth(case));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colibri_accepts_sszgates_proof_with_sync_data() {
    let (Some(dir), Some(pkg)) = (recordings(), colibri()) else {
        return;
    };
    let case = "trusted_block1";
    let e = expected(case);
    let root = e["trusted_checkpoint"].as_str().unwrap();
    let replay = Replay::start(&dir.join(case)).await.unwrap();
    let client = ClientState::Checkpoint(root.parse().unwrap());
    let proof = prover(&replay)
        .prove_for(e["method"].as_str().unwrap(), &e["params"], false, &client)
        .await
        .unwrap();
    let decoded = sszgate_proof::decode(&proof).unwrap();
    let sszgate_proof::types::SyncDataUnion::LightClient(sync) = &decoded.sync_data else {
        panic!("sync data expected")
    };
    assert!(matches!(
        sync.bootstrap,
        sszgate_proof::types::BootstrapUnion::Deneb(_)
    ));
    assert_eq!(
        sync.update.len(),
        0,
        "the checkpoint is in the block's period"
    );
    let file = std::env::temp_dir().join(format!("sszgate-sync-proof-{}.ssz", std::process::id()));
    std::fs::write(&file, &proof).unwrap();
    let result = colibri_verifies(&pkg, &file, case, &dir.join(case), Some(root));
    std::fs::remove_file(&file).unwrap();
    assert_eq!(result, Ok(e["result"].clone()), "colibri's verified result");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampering_prover_is_caught_and_the_check_named() {
    if recordings().is_none() {
        return;
    }
    for case in [
        "eth_getBalance1",
        "eth_getTransactionReceipt1",
        "eth_getBlockByHash1",
    ] {
        let e = expected(case);
        let s = setup(case).await;
        let method = e["method"].as_str().unwrap();
        // The same tampering done here to the honest proof: the error the verifier names.
        let honest = prover(&s.replay)
            .prove_for(method, &e["params"], false, &ClientState::Periods(vec![]))
            .await
            .unwrap();
        let mut flipped = honest.clone();
        flipped[honest.len() / 2] ^= 0x01;
        let cut = &honest[..honest.len() - 1];
        for (path, bytes) in [("/flipped", &flipped[..]), ("/cut", cut)] {
            let mut trust = trust_for(case);
            let direct =
                sszgate_proof::verify(bytes, method, &e["params"], &mut trust).unwrap_err();
            let c = client(&s, path, trust_for(case), None);
            match c.call(method, &params(&e)).await {
                Err(RpcError::Verification(m)) => {
                    let expected = sszgate_proof::remote::rpc_error(direct);
                    assert_eq!(RpcError::Verification(m.clone()), expected, "{case}{path}");
                    if path == "/cut" {
                        assert_eq!(m.check.name(), "decode", "{case}: {m}");
                    }
                }
                other => panic!("{case}{path}: a tampered proof gave {other:?}"),
            }
        }
        // The honest endpoint on the same server still answers.
        let c = client(&s, "/proof", trust_for(case), None);
        assert_eq!(c.call(method, &params(&e)).await, truth(case), "{case}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_400_and_unprovable_ones_500_naming_why() {
    if recordings().is_none() {
        return;
    }
    let s = setup("eth_getBalance1").await;
    let post = |body: &'static str| {
        let up = Upstream::new(
            &format!("{}/proof", s.server.url()),
            Duration::from_secs(5),
            1 << 20,
        )
        .unwrap();
        async move {
            up.post("test", body.to_string(), "application/octet-stream")
                .await
                .unwrap()
        }
    };
    let text = |b: &Bytes| String::from_utf8_lossy(b).into_owned();
    for (body, status, says) in [
        ("{", 400, "not JSON"),
        (r#"{"params":[]}"#, 400, "`method`"),
        (
            r#"{"method":"eth_getBalance","params":[],"c4":"0x09"}"#,
            400,
            "`c4`",
        ),
        (
            r#"{"method":"eth_getBalance","params":["0x12"]}"#,
            400,
            "params",
        ),
        (
            r#"{"method":"eth_mining","params":[]}"#,
            500,
            "unsupported: method eth_mining",
        ),
    ] {
        let (got, answer) = post(body).await;
        assert_eq!(got, status, "{body}: {}", text(&answer));
        let v: Value = serde_json::from_slice(&answer).unwrap();
        assert!(v["error"].as_str().unwrap().contains(says), "{body}: {v}");
    }
    // A method the proofs do not cover is not verifiable remotely: -32090, not a guess.
    let c = client(&s, "/proof", trust_for("eth_getBalance1"), None);
    assert!(matches!(
        c.call("eth_gasPrice", &[]).await,
        Err(RpcError::Unverifiable(_))
    ));
    assert_eq!(c.call("eth_chainId", &[]).await, Ok(Value::from("0x1")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colibris_client_verifies_what_sszgates_prover_endpoint_serves() {
    let (Some(dir), Some(pkg)) = (recordings(), colibri()) else {
        return;
    };
    // colibri 1.1.19 knows no `LogsRangeProof`, the endpoint's eth_getLogs form.
    let cases = PROVEN
        .iter()
        .filter(|c| !c.ends_with("_include_code") && expected(c)["method"] != "eth_getLogs");
    for case in cases {
        let e = expected(case);
        let s = setup(case).await;
        let url = format!("{}/counted", s.server.url());
        let result = tokio::task::spawn_blocking({
            let (pkg, dir, case) = (pkg.clone(), dir.join(case), case.to_string());
            move || colibri_rpc(&pkg, &url, &case, &dir)
        })
        .await
        .unwrap();
        assert_eq!(result, Ok(e["result"].clone()), "{case}: colibri's client");
        let served = s.served.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(served, 1, "{case}: proofs served to colibri's client");
    }
}

/// The node's own answer in a recording: the one file of `method`'s answers (`prefix`), its
/// `result`.
fn recorded_answer(recording: &std::path::Path, prefix: &str) -> Value {
    let mut files: Vec<PathBuf> = std::fs::read_dir(recording)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    assert_eq!(files.len(), 1, "{prefix} in {}", recording.display());
    let text = common::read_text(&files.remove(0));
    serde_json::from_str::<Value>(&text).unwrap()["result"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proven_answers_equal_the_nodes_own_answers() {
    let Some(dir) = recordings() else { return };
    use sszgate_proof::render::difference_from_standard;
    for (case, prefix) in [
        ("eth_getTransactionByHash1", "eth_getTransactionByHash_"),
        ("eth_getBlockByHash1", "eth_getBlockByHash_"),
        ("eth_getLogs1", "eth_getLogs_"),
        ("eth_getTransactionReceipt1", "eth_getBlockReceipts_"),
    ] {
        let e = expected(case);
        let s = setup(case).await;
        let c = client(&s, "/proof", trust_for(case), None);
        let ours = c
            .call(e["method"].as_str().unwrap(), &params(&e))
            .await
            .unwrap();
        let mut node = recorded_answer(&dir.join(case), prefix);
        if case == "eth_getTransactionReceipt1" {
            let index = usize::from_str_radix(
                ours["transactionIndex"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("0x"),
                16,
            )
            .unwrap();
            node = node[index].clone();
        }
        assert!(node.is_object() || node.is_array(), "{case}: {node}");
        if let Some(at) = difference_from_standard(&ours, &node, "") {
            panic!("{case}: differs at {at}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_by_block_hash_and_index_from_a_checkpoint() {
    let Some(dir) = recordings() else { return };
    let case = "eth_getTransactionByBlockHashAndIndex1";
    let recording = dir.join(case);
    let test: Value =
        serde_json::from_str(&common::read_text(&recording.join("test.json"))).unwrap();
    // The recording's bootstrap, its root taken as the trusted checkpoint.
    let bootstrap = std::fs::read_dir(&recording)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("light_client_bootstrap"))
        .unwrap();
    let bootstrap = common::read_bounded(&bootstrap);
    let bootstrap =
        sszgate_light::types::Bootstrap::from_ssz(&ChainSpec::mainnet(), &bootstrap).unwrap();
    let root = tree_hash::TreeHash::tree_hash_root(&bootstrap.header.beacon);
    let s = setup(case).await;
    let mut trust = TrustedState::new(ChainSpec::mainnet());
    trust.checkpoint = Some(root);
    let c = client(&s, "/proof", trust, None);
    let params = test["params"].as_array().unwrap().clone();
    let ours = c
        .call(test["method"].as_str().unwrap(), &params)
        .await
        .unwrap();
    if let Err(at) = sszgate_rpc::colibri::same(&ours, &test["expected_result"], "result") {
        panic!("differs from colibri's result at {at}");
    }
    assert_eq!(ours["transactionIndex"], "0x3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sszgates_verifier_takes_proofs_from_colibris_prover_over_http() {
    let (Some(dir), Some(pkg)) = (recordings(), colibri()) else {
        return;
    };
    let mut verified = 0;
    for case in PROVEN.iter().filter(|c| !c.ends_with("_include_code")) {
        let e = expected(case);
        // colibri's prover finds its recorded answers by the params' JSON text, whose object
        // keys (a call, a filter) this client's JSON values do not keep in their order.
        if params(&e).iter().any(Value::is_object) {
            continue;
        }
        verified += 1;
        let prover = common::ColibriProver::start(&pkg, &dir.join(case));
        let c = ProofClient::new(
            &prover.url,
            Duration::from_secs(30),
            trust_for(case),
            1,
            None,
        )
        .unwrap();
        let answer = c.call(e["method"].as_str().unwrap(), &params(&e)).await;
        assert_eq!(answer, truth(case), "{case}: from colibri's prover");
    }
    assert_eq!(verified, 11, "cases whose params colibri's prover finds");
}

#[test]
fn a_proof_with_more_updates_than_a_verifier_applies_is_refused_before_any_is_checked() {
    let Some(dir) = recordings() else { return };
    use sszgate_proof::types::{BootstrapUnion, LcSyncData, UpdateUnion};
    let file = dir
        .join("trusted_block1/eth_v1_beacon_light_client_updates_start_period_1393_count_14.ssz");
    let bytes = common::read_bounded(&file);
    let items = sszgate_light::types::split_update_stream(&bytes, 14).unwrap();
    let update: sszgate_light::types::DenebLightClientUpdate =
        ssz::Decode::from_ssz_bytes(items[0]).unwrap();
    let many = vec![UpdateUnion::Deneb(update); sszgate_proof::trust::MAX_SYNC_UPDATES + 1];
    let data = LcSyncData {
        bootstrap: BootstrapUnion::None,
        update: ssz_types::VariableList::new(many).unwrap(),
    };
    let mut trust = trust_for("eth_getBalance1");
    let e = trust.apply_sync_data(&data).unwrap_err();
    assert_eq!(e.check(), Some(sszgate_proof::Check::SyncData), "{e}");
    assert!(e.to_string().contains("at most 128"), "{e}");
    // Refused before any update was applied (the first would add period 1394).
    assert_eq!(trust.periods(), [1393], "nothing applied");
}
