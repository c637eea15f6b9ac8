//! The server's operator surface on a recorded case: batches and their bounds, JSON-RPC error
//! codes, the pass-through of allowed unverified methods, metrics, and an upstream that
//! answers garbage, too much, an error, or nothing — each an error, the server serving on.

mod common;

use std::collections::HashMap;

use bytes::Bytes;
use common::{anchors_of, call, post, start, start_with, test_json};
use http_body_util::{BodyExt, Full};
use hyper_util::{client::legacy::Client, rt::TokioExecutor};
use serde_json::{Value, json};
use sszgate_fixtures::replay::Answer;

const CASE: &str = "eth_getBalance1";
const PROOF: &str = "eth_getProof_0x95222290DD7278Aa3Ddd389Cc1E1d165CC4BAfe5____0x152afff.json";

fn balance_params() -> Value {
    test_json(CASE)["params"].clone()
}

async fn get(url: &str) -> (u16, String) {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let response = client.get(url.parse().unwrap()).await.unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn a_batch_answers_each_request_by_id() {
    let (_replay, server) = start(CASE, HashMap::new(), anchors_of(CASE).0).await;
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []},
        {"jsonrpc": "2.0", "id": 2, "method": "eth_getBalance", "params": balance_params()},
        {"jsonrpc": "2.0", "id": 3, "method": "eth_sendRawTransaction", "params": ["0x00"]},
        {"jsonrpc": "2.0", "id": 4, "method": "eth_getBalance", "params": ["0x1234", "latest"]},
        {"jsonrpc": "2.0", "method": "eth_blockNumber", "params": []},
        {"jsonrpc": "2.0", "id": 5, "method": "eth_blockNumber", "params": []},
    ]);
    let answers = post(&server.url(), &batch).await;
    let answers = answers.as_array().expect("a batch answer");
    assert_eq!(
        answers.len(),
        5,
        "no answer to the notification: {answers:?}"
    );
    assert_eq!(
        answers[0],
        json!({"jsonrpc": "2.0", "id": 1, "result": "0x1"})
    );
    assert_eq!(answers[1]["result"], test_json(CASE)["expected_result"]);
    assert_eq!(
        answers[2]["error"]["code"], -32090,
        "not verifiable, not allowed"
    );
    assert_eq!(answers[3]["error"]["code"], -32602, "a bad address");
    assert_eq!(
        answers[4],
        json!({"jsonrpc": "2.0", "id": 5, "result": "0x152afff"})
    );
}

#[tokio::test]
async fn bounds_and_malformed_requests() {
    let (_replay, server) = start_with(CASE, HashMap::new(), anchors_of(CASE).0, |c| {
        c.max_batch = 2;
        c.max_request_body = 512;
    })
    .await;
    let one = json!({"jsonrpc": "2.0", "id": 1, "method": "eth_chainId"});
    let answer = post(&server.url(), &json!([one, one, one])).await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let answer = post(&server.url(), &json!([])).await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let big =
        json!({"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": ["x".repeat(600)]});
    let answer = post(&server.url(), &big).await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let answer = post(&server.url(), &json!("not a request")).await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    let answer = post(
        &server.url(),
        &json!({"id": 1, "method": "eth_getBalance", "params": {}}),
    )
    .await;
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    let (status, _) = get(&server.url()).await;
    assert_eq!(status, 405);
    // Still serving.
    assert_eq!(
        call(&server, "eth_chainId", &json!([])).await["result"],
        "0x1"
    );
}

#[tokio::test]
async fn not_json_is_a_parse_error() {
    let (_replay, server) = start(CASE, HashMap::new(), anchors_of(CASE).0).await;
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let request = hyper::Request::post(server.url())
        .body(Full::new(Bytes::from_static(b"{\"id\": 1, \"method\"")))
        .unwrap();
    let body = client
        .request(request)
        .await
        .unwrap()
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes();
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
}

/// The upstream's failure for `eth_getBalance` with `answers` and `config` changes; then the
/// same server still answers a verified request.
async fn upstream_failure(
    answers: HashMap<String, Answer>,
    tweak: impl FnOnce(&mut sszgate_rpc::Config),
) -> String {
    let (_replay, server) = start_with(CASE, answers, anchors_of(CASE).0, tweak).await;
    let answer = call(&server, "eth_getBalance", &balance_params()).await;
    assert_eq!(answer["error"]["code"], -32097, "{answer}");
    assert_eq!(server.metrics().requests("eth_getBalance", "failed"), 1);
    assert_eq!(
        call(&server, "eth_blockNumber", &json!([])).await["result"],
        "0x152afff"
    );
    answer["error"]["message"].as_str().unwrap().to_string()
}

fn serving(body: &[u8]) -> HashMap<String, Answer> {
    HashMap::from([(PROOF.to_string(), Answer::Body(body.to_vec()))])
}

#[tokio::test]
async fn upstream_garbage() {
    let message = upstream_failure(serving(b"\x00\x01garbage{"), |_| {}).await;
    assert!(message.contains("malformed answer"), "{message}");
}

#[tokio::test]
async fn upstream_answer_of_the_wrong_shape() {
    let body = json!({"jsonrpc": "2.0", "id": 1, "result": {"balance": "zz"}}).to_string();
    let message = upstream_failure(serving(body.as_bytes()), |_| {}).await;
    assert!(
        message.contains("eth_getProof") && message.contains("malformed answer"),
        "{message}"
    );
}

#[tokio::test]
async fn upstream_error() {
    let body = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": "missing trie node"}}).to_string();
    let message = upstream_failure(serving(body.as_bytes()), |_| {}).await;
    assert!(message.contains("missing trie node"), "{message}");
}

#[tokio::test]
async fn upstream_answer_too_large() {
    // The recorded proof is about 4 KiB; the beacon block is read first and is larger, so the
    // bound applies to it (the Beacon API client's "answer over 2048 bytes", the execution
    // client's "larger than 2048 bytes"): either way the answer is refused before it is kept.
    let message = upstream_failure(HashMap::new(), |c| c.max_upstream_answer = 2048).await;
    assert!(
        message.contains("over 2048 bytes") || message.contains("larger than 2048 bytes"),
        "{message}"
    );
}

#[tokio::test]
async fn upstream_silence() {
    let message = upstream_failure(HashMap::from([(PROOF.to_string(), Answer::Stall)]), |c| {
        c.upstream_timeout = std::time::Duration::from_millis(300);
    })
    .await;
    assert!(message.contains("no answer within 300 ms"), "{message}");
}

#[tokio::test]
async fn allowed_unverified_methods_pass_through_marked() {
    let answers = HashMap::from([(
        "eth_gasPrice.json".to_string(),
        Answer::Body(
            json!({"jsonrpc": "2.0", "id": 1, "result": "0x3b9aca00"})
                .to_string()
                .into_bytes(),
        ),
    )]);
    let (_replay, refusing) = start(CASE, answers.clone(), anchors_of(CASE).0).await;
    assert_eq!(
        call(&refusing, "eth_gasPrice", &json!([])).await["error"]["code"],
        -32090
    );
    let (_replay, server) = start_with(CASE, answers, anchors_of(CASE).0, |c| {
        c.allow_unverified = vec!["eth_gasPrice".into()];
    })
    .await;
    assert_eq!(
        call(&server, "eth_gasPrice", &json!([])).await["result"],
        "0x3b9aca00"
    );
    assert_eq!(server.metrics().requests("eth_gasPrice", "unverified"), 1);
    let (status, text) = get(&format!("{}/metrics", server.url())).await;
    assert_eq!(status, 200);
    assert!(
        text.contains(
            "sszgate_rpc_requests_total{method=\"eth_gasPrice\",outcome=\"unverified\"} 1"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn metrics_count_outcomes_and_failed_checks() {
    let mut lie: Value =
        serde_json::from_slice(&std::fs::read(common::cases_dir().join(CASE).join(PROOF)).unwrap())
            .unwrap();
    lie["result"]["balance"] = json!("0x1");
    let (_replay, server) = start(
        CASE,
        serving(lie.to_string().as_bytes()),
        anchors_of(CASE).0,
    )
    .await;
    call(&server, "eth_chainId", &json!([])).await;
    call(&server, "eth_getBalance", &balance_params()).await;
    call(&server, "no_such_method", &json!([])).await;
    let (_, text) = get(&format!("{}/metrics", server.url())).await;
    for line in [
        "sszgate_rpc_requests_total{method=\"eth_chainId\",outcome=\"verified\"} 1",
        "sszgate_rpc_requests_total{method=\"eth_getBalance\",outcome=\"refused\"} 1",
        "sszgate_rpc_requests_total{method=\"other\",outcome=\"invalid\"} 1",
        "sszgate_rpc_checks_failed_total{method=\"eth_getBalance\",check=\"account_proof\"} 1",
        "sszgate_rpc_request_seconds_count{method=\"eth_getBalance\"} 1",
    ] {
        assert!(text.contains(line), "{line} in\n{text}");
    }
}
