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

/// `result` with colibri's 32-byte words (`r`, `s`, a storage `value`:
/// `sszgate_rpc::colibri::QUANTITIES`, at any depth) as quantities, as geth and sszgate write
/// them.
fn words_as_quantities(result: Value) -> Value {
    match result {
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| match (k.as_str(), v.as_str()) {
                    (key, Some(word))
                        if sszgate_rpc::colibri::QUANTITIES
                            .iter()
                            .any(|q| q.trim_start_matches('.') == key) =>
                    {
                        let n: alloy_primitives::U256 = word.parse().unwrap();
                        (k, Value::from(format!("{n:#x}")))
                    }
                    _ => (k, words_as_quantities(v)),
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(words_as_quantities).collect()),
        v => v,
    }
}

/// `result` with the fields of `ours` it lacks that colibri's rendering leaves out
/// (`sszgate_rpc::colibri::STANDARD_ONLY`; their values are compared with geth's in
/// `bin/sszgate/tests/verified_rpc.rs` and with the node's below), at any depth.
fn with_standard_fields(result: Value, ours: &Value) -> Value {
    match (result, ours) {
        (Value::Object(mut r), Value::Object(o)) => {
            for (k, v) in o {
                match r.remove(k) {
                    Some(rv) => {
                        r.insert(k.clone(), with_standard_fields(rv, v));
                    }
                    None if sszgate_rpc::colibri::STANDARD_ONLY.contains(&k.as_str()) => {
                        r.insert(k.clone(), v.clone());
                    }
                    None => {}
                }
            }
            Value::Object(r)
        }
        (Value::Array(r), Value::Array(o)) if r.len() == o.len() => Value::Array(
            r.into_iter()
                .zip(o)
                .map(|(a, b)| with_standard_fields(a, b))
                .collect(),
        ),
        (r, _) => r,
    }
}

/// colibri's receipt without the fields sszgate does not return.
fn adjusted_receipt(result: Value) -> Value {
    let mut fields: Vec<&str> = UNBOUND_RECEIPT_FIELDS.to_vec();
    fields.extend(UNBOUND_LOG_FIELDS);
    without(result, &fields)
}

/// What sszgate returns instead of colibri's expected result, per method.
fn adjusted(case: &str, result: Value, ours: &Value) -> Value {
    let mut result = words_as_quantities(result);
    match expected(case)["method"].as_str().unwrap() {
        "eth_getTransactionReceipt" => with_standard_fields(adjusted_receipt(result), ours),
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
            with_standard_fields(result, ours)
        }
        _ => with_standard_fields(result, ours),
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
    let answer: Value = serde_json::from_str(&common::read_text(&path)).unwrap();
    let node = &answer["result"];
    assert!(node.is_object(), "the node's eth_getBlockByHash result");
    for field in [
        "withdrawalsRoot",
        "size",
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
