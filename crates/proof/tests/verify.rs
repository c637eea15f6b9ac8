//! Every colibri vector verified by sszgate to its `expected.json` result — except where the
//! expected result carries what the proof does not bind or colibri derives wrongly (spec §15);
//! there the difference is asserted field by field.

mod common;

use common::{case_names, expected, proof_bytes, vectors_dir, verify_vector};
use serde_json::Value;
use sszgate_proof::receipts::{UNBOUND_LOG_FIELDS, UNBOUND_RECEIPT_FIELDS};

/// Vectors sszgate does not verify yet, and why.
const NOT_VERIFIED: &[(&str, &str)] = &[];

/// Removes `fields` from an object (and from each of its `logs`).
fn without(mut v: Value, fields: &[&str]) -> Value {
    if let Some(o) = v.as_object_mut() {
        for f in fields {
            o.remove(*f);
        }
        if let Some(Value::Array(logs)) = o.get_mut("logs") {
            for log in logs {
                *log = without(log.take(), fields);
            }
        }
    }
    v
}

/// What sszgate returns instead of colibri's expected result, per method.
fn adjusted(case: &str, mut result: Value, ours: &Value) -> Value {
    match expected(case)["method"].as_str().unwrap() {
        "eth_getTransactionReceipt" => {
            let mut fields: Vec<&str> = UNBOUND_RECEIPT_FIELDS.to_vec();
            fields.extend(UNBOUND_LOG_FIELDS);
            without(result, &fields)
        }
        "eth_getLogs" => Value::Array(
            result
                .as_array()
                .unwrap()
                .iter()
                .map(|l| without(l.clone(), &UNBOUND_LOG_FIELDS))
                .collect(),
        ),
        "eth_getBlockByNumber" | "eth_getBlockByHash" => {
            // The execution layer's withdrawals root, not colibri's SSZ root (§15 item 10).
            assert_ne!(result["withdrawalsRoot"], ours["withdrawalsRoot"], "{case}");
            result["withdrawalsRoot"] = ours["withdrawalsRoot"].clone();
            result
        }
        _ => result,
    }
}

#[test]
fn every_vector_verifies_to_its_expected_result() {
    let mut verified = Vec::new();
    for case in case_names() {
        let outcome = verify_vector(&case, &proof_bytes(&case));
        if let Some((_, why)) = NOT_VERIFIED.iter().find(|(c, _)| *c == case) {
            let err =
                outcome.expect_err("a vector listed as not verified verifies: update the list");
            eprintln!("{case}: not verified ({why}): {err}");
            continue;
        }
        let ours = outcome.unwrap_or_else(|e| panic!("{case}: {e}"));
        let want = adjusted(&case, expected(&case)["result"].clone(), &ours);
        assert_eq!(ours, want, "{case}");
        verified.push(case);
    }
    assert_eq!(verified.len(), case_names().len() - NOT_VERIFIED.len());
}

#[test]
fn derived_block_fields_equal_the_execution_nodes_header() {
    let ours = verify_vector("eth_getBlockByHash1", &proof_bytes("eth_getBlockByHash1")).unwrap();
    let path = vectors_dir().join("../node/eth_getBlockByHash1.json");
    let answer: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let node = &answer["result"];
    assert!(node.is_object(), "the node's eth_getBlockByHash result");
    for field in [
        "withdrawalsRoot",
        "transactionsRoot",
        "hash",
        "receiptsRoot",
        "stateRoot",
        "parentBeaconBlockRoot",
        "sha3Uncles",
        "mixHash",
    ] {
        assert_eq!(ours[field], node[field], "{field}");
    }
    assert_eq!(ours["transactions"], node["transactions"]);
}
