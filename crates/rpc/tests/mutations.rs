//! Lies, one at a time: a recorded answer field that matters is changed in the copy the replay
//! server serves, and the verified server must refuse the answer with the check that catches
//! it (JSON-RPC error -32099, `data.check`, `data.field`), never answer.

mod common;

use std::collections::HashMap;

use alloy_primitives::B256;
use common::{anchors_of, beacon_block_facts, call, cases_dir, start, test_json};
use serde_json::{Value, json};
use sszgate_fixtures::replay::Answer;
use sszgate_rpc::{BlockRef, FixedAnchors};

/// A recorded JSON answer of `case`.
fn recorded(case: &str, file: &str) -> Value {
    let text = std::fs::read_to_string(cases_dir().join(case).join(file)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// `file` of `case` served changed by `change`.
fn mutated(case: &str, file: &str, change: impl FnOnce(&mut Value)) -> HashMap<String, Answer> {
    let mut answer = recorded(case, file);
    change(&mut answer["result"]);
    HashMap::from([(
        file.to_string(),
        Answer::Body(answer.to_string().into_bytes()),
    )])
}

/// The case's own request answered from `answers`, anchored in the case's beacon blocks; the
/// error's `data` (check, field) — the test fails if an answer comes back.
async fn refused(
    case: &str,
    answers: HashMap<String, Answer>,
    anchors: Option<FixedAnchors>,
) -> Value {
    let test = test_json(case);
    let anchors = anchors.unwrap_or_else(|| anchors_of(case).0);
    let (_replay, server) = start(case, answers, anchors).await;
    let answer = call(&server, test["method"].as_str().unwrap(), &test["params"]).await;
    assert!(
        answer.get("result").is_none(),
        "{case}: a lie was answered: {answer}"
    );
    assert_eq!(answer["error"]["code"], -32099, "{case}: {answer}");
    assert_eq!(
        server
            .metrics()
            .requests(test["method"].as_str().unwrap(), "refused"),
        1,
        "{case}: the refusal is counted"
    );
    answer["error"]["data"].clone()
}

fn assert_check(data: &Value, check: &str, field: &str) {
    assert_eq!(data["check"], check, "{data}");
    assert_eq!(data["field"], field, "{data}");
}

const BALANCE: &str = "eth_getProof_0x95222290DD7278Aa3Ddd389Cc1E1d165CC4BAfe5____0x152afff.json";
const PROOF: &str = "eth_getProof_0xB685760EBD368a891F27ae547391F4E2A289895b___0x0000000000000000000000000000000000000000.json";
const STORAGE: &str = "eth_getProof_0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48___0x7050c9e0f4ca769c69bd3a8ef740bc37934f8e2c.json";
const COUNT: &str = "eth_getProof_0xdadB0d80178819F2319190D340ce9A924f783711____0x1564956.json";
const LOG_RECEIPTS: &str = "eth_getBlockReceipts_0x14d7970.json";
const RECEIPTS: &str = "eth_getBlockReceipts_0x152afdd.json";

#[tokio::test]
async fn a_changed_balance() {
    let answers = mutated("eth_getBalance1", BALANCE, |r| {
        r["balance"] = json!("0xb38a37badf49f792")
    });
    assert_check(
        &refused("eth_getBalance1", answers, None).await,
        "account_proof",
        "accountProof",
    );
}

#[tokio::test]
async fn a_changed_account_proof_node() {
    let answers = mutated("eth_getBalance1", BALANCE, |r| {
        let node = r["accountProof"][3].as_str().unwrap().to_string();
        let flipped = if node.ends_with('0') { "1" } else { "0" };
        r["accountProof"][3] = json!(format!("{}{flipped}", &node[..node.len() - 1]));
    });
    assert_check(
        &refused("eth_getBalance1", answers, None).await,
        "account_proof",
        "accountProof",
    );
}

#[tokio::test]
async fn a_short_account_proof() {
    let answers = mutated("eth_getBalance1", BALANCE, |r| {
        r["accountProof"].as_array_mut().unwrap().pop();
    });
    assert_check(
        &refused("eth_getBalance1", answers, None).await,
        "account_proof",
        "accountProof",
    );
}

#[tokio::test]
async fn a_changed_nonce() {
    let answers = mutated("eth_getTransactionCount_electra", COUNT, |r| {
        r["nonce"] = json!("0x64b3")
    });
    let data = refused("eth_getTransactionCount_electra", answers, None).await;
    assert_check(&data, "account_proof", "accountProof");
}

#[tokio::test]
async fn a_proof_for_another_address() {
    let answers = mutated("eth_getProof1", PROOF, |r| {
        r["address"] = json!("0x95222290dd7278aa3ddd389cc1e1d165cc4bafe5");
    });
    assert_check(
        &refused("eth_getProof1", answers, None).await,
        "proof_subject",
        "address",
    );
}

#[tokio::test]
async fn a_changed_storage_value() {
    let answers = mutated("eth_getProof1", PROOF, |r| {
        r["storageProof"][1]["value"] = json!("0x1234")
    });
    assert_check(
        &refused("eth_getProof1", answers, None).await,
        "storage_proof",
        "storageProof[1]",
    );
}

#[tokio::test]
async fn a_storage_proof_for_another_slot() {
    let answers = mutated("eth_getProof1", PROOF, |r| {
        r["storageProof"][0]["key"] = json!(B256::with_last_byte(9));
    });
    assert_check(
        &refused("eth_getProof1", answers, None).await,
        "proof_subject",
        "storageProof[0].key",
    );
}

/// colibri-proofs §9.1: colibri 1.1.19 accepts a storage proof cut to its first node (value 0).
#[tokio::test]
async fn a_truncated_storage_proof() {
    let answers = mutated("eth_getStorageAt1", STORAGE, |r| {
        r["storageProof"][0]["proof"]
            .as_array_mut()
            .unwrap()
            .truncate(1);
        r["storageProof"][0]["value"] = json!("0x0");
    });
    assert_check(
        &refused("eth_getStorageAt1", answers, None).await,
        "storage_proof",
        "storageProof[0]",
    );
}

#[tokio::test]
async fn a_dropped_log() {
    let answers = mutated("eth_getLogs1", LOG_RECEIPTS, |r| {
        r[1]["logs"].as_array_mut().unwrap().clear();
    });
    assert_check(
        &refused("eth_getLogs1", answers, None).await,
        "receipts_root",
        "receipts",
    );
}

#[tokio::test]
async fn an_added_log() {
    let answers = mutated("eth_getLogs1", LOG_RECEIPTS, |r| {
        let log = r[1]["logs"][0].clone();
        r[2]["logs"].as_array_mut().unwrap().push(log);
    });
    assert_check(
        &refused("eth_getLogs1", answers, None).await,
        "receipts_root",
        "receipts",
    );
}

#[tokio::test]
async fn a_changed_log_topic() {
    let answers = mutated("eth_getLogs1", LOG_RECEIPTS, |r| {
        r[1]["logs"][0]["topics"][2] = json!(B256::with_last_byte(1));
    });
    assert_check(
        &refused("eth_getLogs1", answers, None).await,
        "receipts_root",
        "receipts",
    );
}

#[tokio::test]
async fn a_changed_receipt_status() {
    let answers = mutated("eth_getTransactionReceipt1", RECEIPTS, |r| {
        r[0xf4]["status"] = json!("0x0")
    });
    let data = refused("eth_getTransactionReceipt1", answers, None).await;
    assert_check(&data, "receipts_root", "receipts");
}

#[tokio::test]
async fn a_changed_cumulative_gas() {
    let answers = mutated("eth_getTransactionReceipt1", RECEIPTS, |r| {
        r[0xf4]["cumulativeGasUsed"] = json!("0xcdcd3a");
    });
    let data = refused("eth_getTransactionReceipt1", answers, None).await;
    assert_check(&data, "receipts_root", "receipts");
}

#[tokio::test]
async fn a_dropped_receipt() {
    let answers = mutated("eth_getTransactionReceipt1", RECEIPTS, |r| {
        r.as_array_mut().unwrap().remove(3);
    });
    let data = refused("eth_getTransactionReceipt1", answers, None).await;
    assert_check(&data, "receipt_count", "receipts");
}

/// The header of block N+1 (recorded `eth_getBlockByNumber(N+1, false)`) with one field
/// changed, when only block N+1 is anchored and block N is reached by its parent hash.
#[tokio::test]
async fn a_forged_header() {
    let case = "eth_getTransactionByHash1";
    let (_, anchors) = anchors_of(case);
    let top = *anchors.last().unwrap();
    let only_top = FixedAnchors::new().with(top);
    let file = format!("eth_getBlockByNumber_{:#x}_false.json", top.number);
    for (field, value) in [
        ("gasUsed", json!("0x1")),
        ("parentHash", json!(B256::with_last_byte(1))),
        ("parentBeaconBlockRoot", json!(B256::with_last_byte(2))),
        ("stateRoot", json!(B256::with_last_byte(3))),
    ] {
        let answers = mutated(case, &file, |r| r[field] = value);
        let data = refused(case, answers, Some(only_top.clone())).await;
        assert_check(&data, "block_hash", "header");
    }
}

/// The beacon block's execution payload with its receipts root changed: the header rebuilt
/// from it no longer hashes to the anchored hash.
#[tokio::test]
async fn a_forged_execution_payload() {
    let case = "eth_getTransactionByHash_electra";
    let (anchors, list) = anchors_of(case);
    let test = test_json(case);
    let number = u64::from_str_radix(
        test["expected_result"]["blockNumber"].as_str().unwrap()[2..].as_ref(),
        16,
    )
    .unwrap();
    let target = list.iter().find(|a| a.number == number).unwrap();
    let file = format!("eth_v2_beacon_blocks_{}.ssz", target.beacon_root);
    let mut bytes = std::fs::read(cases_dir().join(case).join(&file)).unwrap();
    let (_, _, n, hash) = beacon_block_facts(&bytes);
    assert_eq!((n, hash), (target.number, target.hash));
    // receipts_root is 32 + 20 + 32 bytes into the payload; find the payload by its number.
    let at = bytes
        .windows(8)
        .position(|w| w == n.to_le_bytes())
        .expect("the payload's block number")
        - (32 + 20 + 32 + 32 + 256 + 32);
    bytes[at + 32 + 20 + 32] ^= 1;
    let answers = HashMap::from([(file, Answer::Body(bytes))]);
    let data = refused(case, answers, Some(anchors)).await;
    assert_check(&data, "block_hash", "execution_payload");
}

/// The anchor of the block a `eth_getTransactionByHash` case's transaction is in, its
/// recorded beacon block's file name and bytes.
fn transaction_block(case: &str) -> (FixedAnchors, String, Vec<u8>) {
    let (anchors, list) = anchors_of(case);
    let number = test_json(case)["expected_result"]["blockNumber"]
        .as_str()
        .and_then(|n| u64::from_str_radix(n.trim_start_matches("0x"), 16).ok())
        .unwrap();
    let target = list.iter().find(|a| a.number == number).unwrap();
    let file = format!("eth_v2_beacon_blocks_{}.ssz", target.beacon_root);
    let bytes = std::fs::read(cases_dir().join(case).join(&file)).unwrap();
    (anchors, file, bytes)
}

/// Where a `SignedBeaconBlock`'s body starts (the message's fifth field, an offset into the
/// message, which starts after the 4-byte offset and the 96-byte signature).
fn body_start(bytes: &[u8]) -> usize {
    100 + u32::from_le_bytes(bytes[100 + 80..100 + 84].try_into().unwrap()) as usize
}

/// A beacon block other than the anchored one served for the anchor's root, on a Deneb and an
/// Electra block: its graffiti changed (the payload intact, so only the block's root differs)
/// is refused by the beacon root; its parent root changed (the root of the parent beacon block
/// is part of the execution header) by the block hash.
#[tokio::test]
async fn a_beacon_block_not_the_anchored_one() {
    for case in [
        "eth_getTransactionByHash1",
        "eth_getTransactionByHash_electra",
    ] {
        let (anchors, file, bytes) = transaction_block(case);
        let graffiti = body_start(&bytes) + 96 + 72;
        let mut other_graffiti = bytes.clone();
        other_graffiti[graffiti] ^= 1;
        let answers = HashMap::from([(file.clone(), Answer::Body(other_graffiti))]);
        let data = refused(case, answers, Some(anchors.clone())).await;
        assert_check(&data, "beacon_root", "beacon_block");
        let mut other_parent = bytes;
        other_parent[100 + 16] ^= 1;
        let answers = HashMap::from([(file, Answer::Body(other_parent))]);
        let data = refused(case, answers, Some(anchors)).await;
        assert_check(&data, "block_hash", "execution_payload");
    }
}

/// A change to a served answer.
type Change = dyn Fn(&mut Value);

/// A full block from the execution RPC (`eth_getBlockByHash(h, true)`, no Beacon API): first
/// rendered from the verified beacon block, then served with one field changed.
#[tokio::test]
async fn a_changed_transaction_or_withdrawal() {
    let case = "eth_getBlockByHash1";
    let (anchors, _) = anchors_of(case);
    let hash = test_json(case)["params"][0].as_str().unwrap().to_string();
    let (_replay, server) = start(case, HashMap::new(), anchors.clone()).await;
    let full = call(&server, "eth_getBlockByHash", &json!([hash, true])).await["result"].clone();
    assert_eq!(full["transactions"].as_array().unwrap().len(), 170);
    let file = format!("eth_getBlockByHash_{hash}_true.json");
    let el_only = |change: &Change| {
        let mut block = full.clone();
        change(&mut block);
        let body = json!({"jsonrpc": "2.0", "id": 1, "result": block}).to_string();
        HashMap::from([(file.clone(), Answer::Body(body.into_bytes()))])
    };
    let ask = |answers: HashMap<String, Answer>| {
        let anchors = anchors.clone();
        let hash = hash.clone();
        async move {
            let replay =
                sszgate_fixtures::replay::Replay::start_with(&cases_dir().join(case), answers)
                    .await
                    .unwrap();
            let config = sszgate_rpc::Config::new(&replay.url(), 1);
            let server = sszgate_rpc::serve(config, anchors).await.unwrap();
            call(&server, "eth_getBlockByHash", &json!([hash, true])).await
        }
    };
    // Unchanged, the execution RPC's block verifies to the same answer.
    let same = ask(el_only(&|_| {})).await;
    assert_eq!(same["result"], full);
    // A lie about a sender is not an error (senders are recovered), and is not answered.
    let lied = ask(el_only(&|b| {
        b["transactions"][5]["from"] = json!("0x0000000000000000000000000000000000000001")
    }))
    .await;
    assert_eq!(
        lied["result"]["transactions"][5]["from"],
        full["transactions"][5]["from"]
    );
    let cases: [(&Change, &str, &str); 4] = [
        (
            &|b| b["transactions"][5]["value"] = json!("0x1"),
            "transactions_root",
            "transactions",
        ),
        (
            &|b| b["transactions"][7]["input"] = json!("0x00"),
            "transactions_root",
            "transactions",
        ),
        (
            &|b| {
                b["transactions"].as_array_mut().unwrap().pop();
            },
            "transactions_root",
            "transactions",
        ),
        (
            &|b| b["withdrawals"][0]["amount"] = json!("0x1"),
            "withdrawals_root",
            "withdrawals",
        ),
    ];
    for (change, check, field) in cases {
        let answer = ask(el_only(change)).await;
        assert_eq!(answer["error"]["code"], -32099, "{answer}");
        assert_check(&answer["error"]["data"], check, field);
    }
    let answer = ask(el_only(&|b| b["gasUsed"] = json!("0x2"))).await;
    assert_check(&answer["error"]["data"], "block_hash", "header");
}

/// The execution RPC places a transaction in a block that does not hold it.
#[tokio::test]
async fn a_transaction_placed_in_another_block() {
    let case = "eth_getTransactionByHash_electra";
    let file = "eth_getTransactionByHash_0x7e3e4bfb2ac3266669923de636d01911df73fa9d2ae43d72dcbe44f27dc01d10.json";
    let (anchors, list) = anchors_of(case);
    let other = list.iter().find(|a| a.number != 0x15648f5).unwrap().number;
    let answers = mutated(case, file, |r| {
        r["blockNumber"] = json!(format!("{other:#x}"))
    });
    let data = refused(case, answers, Some(anchors.tag(BlockRef::Latest, other))).await;
    assert_check(&data, "transaction_hash", "blockNumber");
}

const CALL_PROOF: &str = "eth_getProof_0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48___0x10d6a54a4754c8869d6886b5f5d7fbfa5b452223.json";
const CALL_TRACE: &str = "debug_traceCall___to___0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48___data___0x70a08231000000000000000.json";
const IMPLEMENTATION: &str = "0x43506849d7c04f9138d1a2050bbf3a0c054402dd";

/// The USDC balance slot's value changed in the proof the call runs over.
#[tokio::test]
async fn a_changed_slot_under_a_call() {
    let answers = mutated("eth_call1", CALL_PROOF, |r| {
        r["storageProof"][2]["value"] = json!("0x11c04f6834033f");
    });
    assert_check(
        &refused("eth_call1", answers, None).await,
        "storage_proof",
        "storageProof[2]",
    );
}

/// The proxy's implementation slot points elsewhere in the proof.
#[tokio::test]
async fn a_changed_implementation_slot_under_a_call() {
    let answers = mutated("eth_call1", CALL_PROOF, |r| {
        r["storageProof"][1]["value"] = json!("0x95222290dd7278aa3ddd389cc1e1d165cc4bafe5");
    });
    assert_check(
        &refused("eth_call1", answers, None).await,
        "storage_proof",
        "storageProof[1]",
    );
}

/// The implementation's account proof with another code hash.
#[tokio::test]
async fn a_changed_code_hash_under_a_call() {
    let file = "eth_getProof_0x43506849d7c04f9138d1a2050bbf3a0c054402dd____0x152b031.json";
    let answers = mutated("eth_call1", file, |r| {
        r["codeHash"] = json!(B256::with_last_byte(7))
    });
    assert_check(
        &refused("eth_call1", answers, None).await,
        "account_proof",
        "accountProof",
    );
}

/// The prefetch hint's code is a lie: it is not used (it does not hash to the proven code
/// hash), the code is read with eth_getCode, and the answer is the true one.
#[tokio::test]
async fn a_lying_code_hint_is_not_used() {
    let case = "eth_call1";
    let answers = mutated(case, CALL_TRACE, |r| {
        r[IMPLEMENTATION]["code"] = json!("0x6000")
    });
    let (replay, server) = common::start(case, answers, anchors_of(case).0).await;
    let test = test_json(case);
    let answer = call(&server, "eth_call", &test["params"]).await;
    assert_eq!(answer["result"], test["expected_result"], "{answer}");
    let served = replay.served();
    assert!(
        served
            .iter()
            .any(|f| f.starts_with(&format!("eth_getCode_{IMPLEMENTATION}_latest"))),
        "{served:?}"
    );
}

/// Both the hint and eth_getCode lie about the implementation's code.
#[tokio::test]
async fn lying_code_under_a_call() {
    let case = "eth_call1";
    let mut answers = mutated(case, CALL_TRACE, |r| {
        r[IMPLEMENTATION]["code"] = json!("0x6000")
    });
    answers.extend(mutated(
        case,
        &format!("eth_getCode_{IMPLEMENTATION}_latest.json"),
        |r| {
            *r = json!("0x60006000");
        },
    ));
    assert_check(&refused(case, answers, None).await, "code_hash", "code");
}

/// The receipts of another block (eth_getLogs1's block 0x14d7970) served as this block's.
#[tokio::test]
async fn receipts_of_another_block() {
    let other = recorded("eth_getLogs1", LOG_RECEIPTS);
    let answers = HashMap::from([(
        RECEIPTS.to_string(),
        Answer::Body(other.to_string().into_bytes()),
    )]);
    let data = refused("eth_getTransactionReceipt1", answers, None).await;
    assert_check(&data, "receipt_count", "receipts");
}

/// A receipt whose type is not its transaction's (a type-2 receipt relabelled legacy).
#[tokio::test]
async fn a_receipt_of_another_type() {
    let answers = mutated("eth_getTransactionReceipt1", RECEIPTS, |r| {
        r[0xf4]["type"] = json!("0x0")
    });
    let data = refused("eth_getTransactionReceipt1", answers, None).await;
    assert_check(&data, "receipt_type", "receipts[244].type");
}
