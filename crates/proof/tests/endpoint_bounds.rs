//! The prover endpoint bounds what a client sends before any upstream request: each bound
//! refused with 400 naming the field, and the upstream (a replay server, which counts what it
//! is asked) asked nothing. Today's endpoint forwarded the logs range and the keys upstream,
//! and stepped past `u64::MAX` unchecked.

use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use sszgate_fixtures::replay::Replay;
use sszgate_proof::prover::{Prover, endpoint::ProofEndpoint};
use sszgate_rpc::Route;

async fn refused(body: Value, field: &str) {
    let dir = std::env::temp_dir().join(format!("sszgate-bounds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let replay = Replay::start(&dir).await.unwrap();
    let prover = Prover::new(&replay.url(), &replay.url(), Duration::from_secs(5)).unwrap();
    let answer = ProofEndpoint::new(prover)
        .answer(Bytes::from(body.to_string()))
        .await;
    let text = String::from_utf8_lossy(&answer.body).into_owned();
    assert_eq!(answer.status, 400, "{body}: {text}");
    assert!(text.contains(field), "{body}: {text} lacks {field}");
    let asked = replay.served().len() + replay.missing().len();
    assert_eq!(asked, 0, "{body}: upstream asked {:?}", replay.missing());
}

#[tokio::test]
async fn each_bound_is_refused_with_400_before_any_upstream_request() {
    let keys: Vec<String> = (0..257).map(|i| format!("{i:#066x}")).collect();
    let address = "0x95222290dd7278aa3ddd389cc1e1d165cc4bafe5";
    refused(
        json!({"method": "eth_getProof", "params": [address, keys, "0x10"]}),
        "params[1] (storage keys): 257 keys",
    )
    .await;
    refused(
        json!({"method": "eth_getLogs", "params": [{"fromBlock": "0x1", "toBlock": "0x100000"}]}),
        "filter.fromBlock..toBlock",
    )
    .await;
    refused(
        json!({"method": "eth_getLogs", "params": [{"fromBlock": "0x9", "toBlock": "0x1"}]}),
        "filter.toBlock 1 is before filter.fromBlock 9",
    )
    .await;
    refused(
        json!({"method": "eth_getLogs", "params": [{"blockHash": format!("0x{}", "11".repeat(32)), "fromBlock": "0x1"}]}),
        "blockHash",
    )
    .await;
    refused(
        json!({"method": "eth_getBalance", "params": [address, "0xffffffffffffffff"]}),
        "no block follows it",
    )
    .await;
}
