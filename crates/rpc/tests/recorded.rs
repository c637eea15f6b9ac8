//! The recorded mainnet cases (`shared/data/colibri/`): each request answered by the verified
//! server from the case's replayed execution RPC and Beacon API answers, anchored only in the
//! case's recorded beacon blocks, and compared with colibri's `expected_result`.

mod common;

use std::collections::HashMap;

use common::{anchors_of, call, case_names, same, start, start_with, test_json};
use serde_json::Value;
use sszgate_rpc::FixedAnchors;

/// Cases whose needs the recording covers: answered, verified, equal to `expected_result`.
const PASSING: &[&str] = &[
    "eth_blockNumber_electra",
    "eth_call1",
    "precompile_identity",
    "precompile_sha256",
    "eth_getBalance1",
    "eth_getBlockByHash1",
    "eth_getBlockByNumber1",
    "eth_getBlockByNumber_electra",
    "eth_getLogs1",
    "eth_getProof1",
    "eth_getStorageAt1",
    "eth_getTransactionByBlockHashAndIndex1",
    "eth_getTransactionByHash1",
    "eth_getTransactionByHash_electra",
    "eth_getTransactionCount1",
    "eth_getTransactionCount_electra",
    "eth_getTransactionReceipt1",
    "trusted_block1",
];

/// Cases not answered, and why: the error code they get instead.
const SKIPPED: &[(&str, &str, i64)] = &[];

async fn answer(case: &str, anchors: FixedAnchors) -> (Value, Vec<String>) {
    let test = test_json(case);
    let (replay, server) = start(case, HashMap::new(), anchors).await;
    let answer = call(&server, test["method"].as_str().unwrap(), &test["params"]).await;
    (answer, replay.missing())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_cases_verify_to_the_expected_result() {
    let mut all: Vec<&str> = PASSING
        .iter()
        .copied()
        .chain(SKIPPED.iter().map(|s| s.0))
        .collect();
    all.sort();
    assert_eq!(
        case_names(),
        all,
        "every recorded case is either passing or skipped with a reason"
    );
    for case in PASSING {
        let (answer, missing) = answer(case, anchors_of(case).0).await;
        let result = answer
            .get("result")
            .unwrap_or_else(|| panic!("{case}: {answer}; files the recording lacks: {missing:?}"));
        if let Err(e) = same(result, &test_json(case)["expected_result"], "result") {
            panic!("{case}: {e}");
        }
        // The verifier asks for eth_createAccessList before debug_traceCall (both only hints
        // of what an eth_call reads); colibri's prover recorded only the latter.
        let missing: Vec<_> = missing
            .iter()
            .filter(|m| !m.starts_with("eth_createAccessList_"))
            .collect();
        assert!(
            missing.is_empty(),
            "{case} asked for files the recording lacks: {missing:?}"
        );
    }
    for (case, why, code) in SKIPPED {
        let (answer, _) = answer(case, anchors_of(case).0).await;
        assert_eq!(answer["error"]["code"], *code, "{case} ({why}): {answer}");
    }
}

/// Only the block above the transaction's is anchored (colibri's signing block): the
/// transaction's block is reached by the parent hash of the recorded
/// `eth_getBlockByNumber(N+1, false)` and its body by that header's parent beacon block root.
#[tokio::test]
async fn blocks_below_an_anchor_by_parent_hash() {
    for case in [
        "eth_getTransactionByHash1",
        "eth_getTransactionByHash_electra",
        "eth_getTransactionReceipt1",
    ] {
        let (_, list) = anchors_of(case);
        let top = *list.last().unwrap();
        let (answer, missing) = answer(case, FixedAnchors::new().with(top)).await;
        let result = answer
            .get("result")
            .unwrap_or_else(|| panic!("{case}: {answer}; lacking {missing:?}"));
        same(result, &test_json(case)["expected_result"], "result").unwrap();
        let number = result["blockNumber"].as_str().unwrap();
        assert_eq!(
            u64::from_str_radix(&number[2..], 16).unwrap() + 1,
            top.number,
            "{case}"
        );
    }
}

/// Beyond the chaining bound: a clear anchor error naming the distance check.
#[tokio::test]
async fn blocks_too_far_below_an_anchor() {
    let case = "eth_getTransactionByHash1";
    let (_, list) = anchors_of(case);
    let top = *list.last().unwrap();
    let test = test_json(case);
    let (_replay, server) = start_with(case, HashMap::new(), FixedAnchors::new().with(top), |c| {
        c.limits.max_chain_back = 0;
    })
    .await;
    let answer = call(&server, "eth_getTransactionByHash", &test["params"]).await;
    assert_eq!(answer["error"]["code"], -32098, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("anchor_distance") && message.contains("1 blocks below"),
        "{message}"
    );
}
