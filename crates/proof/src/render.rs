//! JSON rendering of verified values as colibri renders them (spec §11): numbers as `0x`
//! quantities without leading zeros, bytes as full `0x` hex.
//!
//! And [`difference_from_standard`]: how a verified answer compares with the standard answer
//! of a node (geth) for the same request, given the fields no proof binds; [`logs_difference`]
//! the same for eth_getLogs, whose range proof binds every field the answer has.
//!
//! What does not live here: deciding which fields a result has (the method modules).

use alloy_primitives::U256;
use serde_json::Value;

/// A quantity: `0x` and hex without leading zeros (`0x0` for zero).
pub fn qty(n: impl Into<u128>) -> Value {
    Value::String(format!("{:#x}", n.into()))
}

/// A 256-bit quantity.
pub fn qty256(n: U256) -> Value {
    Value::String(format!("{n:#x}"))
}

/// Bytes as full hex (`0x` when empty).
pub fn bytes(b: impl AsRef<[u8]>) -> Value {
    Value::String(const_hex::encode_prefixed(b))
}

/// Fields of a standard answer no proof of this format binds, so the verifier leaves them out:
/// receipt and log fields that depend on the other receipts of the block, on the base fee or on
/// the block's excess blob gas
/// (`receipts::UNBOUND_RECEIPT_FIELDS`, `UNBOUND_LOG_FIELDS`), and the block timestamp on
/// transactions, receipts and logs, which their proofs do not carry; and a block's
/// `requestsHash` (from Prague), which the execution payload does not carry.
pub const UNBOUND_FIELDS: [&str; 6] = [
    "gasUsed",
    "effectiveGasPrice",
    "blobGasPrice",
    "logIndex",
    "blockTimestamp",
    "requestsHash",
];

/// Where a verified answer differs from a node's `standard` answer, if it does: every field of
/// the standard answer must be in `ours` with the same value, except [`UNBOUND_FIELDS`] that
/// `ours` leaves out. Fields only `ours` has are not compared.
pub fn difference_from_standard(ours: &Value, standard: &Value, path: &str) -> Option<String> {
    match (ours, standard) {
        (Value::Object(o), Value::Object(s)) => s.iter().find_map(|(k, sv)| match o.get(k) {
            None if UNBOUND_FIELDS.contains(&k.as_str()) => None,
            None => Some(format!("{path}.{k}: missing, the node has {sv}")),
            Some(ov) => difference_from_standard(ov, sv, &format!("{path}.{k}")),
        }),
        (Value::Array(o), Value::Array(s)) if o.len() == s.len() => o
            .iter()
            .zip(s)
            .enumerate()
            .find_map(|(i, (a, b))| difference_from_standard(a, b, &format!("{path}[{i}]"))),
        _ if ours == standard => None,
        _ => Some(format!("{path}: {ours}, the node has {standard}")),
    }
}

/// Where a verified eth_getLogs answer differs from a node's `standard` answer, if it does:
/// the same logs in the same order, each with every field of the node's and no other
/// (`logIndex` included: a `LogsRangeProof` binds it), except `blockTimestamp`, which no
/// proof carries.
pub fn logs_difference(ours: &Value, standard: &Value) -> Option<String> {
    let (Some(o), Some(s)) = (ours.as_array(), standard.as_array()) else {
        return (ours != standard).then(|| format!("{ours}, the node has {standard}"));
    };
    if o.len() != s.len() {
        return Some(format!("{} logs, the node has {}", o.len(), s.len()));
    }
    o.iter().zip(s).enumerate().find_map(|(i, (ours, node))| {
        let mut node = node.clone();
        if let Some(fields) = node.as_object_mut() {
            fields.remove("blockTimestamp");
        }
        (*ours != node).then(|| format!("[{i}]: {ours}, the node has {node}"))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn logs_differ_by_any_field_but_the_timestamp() {
        let log = |index: &str| json!({"blockNumber": "0x1", "logIndex": index, "data": "0x2a"});
        let mut node = json!([log("0x0"), log("0x3")]);
        node[1]["blockTimestamp"] = json!("0x64");
        assert_eq!(
            logs_difference(&json!([log("0x0"), log("0x3")]), &node),
            None
        );
        let unindexed = json!([log("0x0"), {"blockNumber": "0x1", "data": "0x2a"}]);
        assert!(
            logs_difference(&unindexed, &node)
                .unwrap()
                .starts_with("[1]: ")
        );
        let wrong_index = json!([log("0x0"), log("0x1")]);
        assert!(
            logs_difference(&wrong_index, &node)
                .unwrap()
                .contains("\"0x1\"")
        );
        let one = json!([log("0x0")]);
        assert_eq!(
            logs_difference(&one, &node).unwrap(),
            "1 logs, the node has 2"
        );
        let extra =
            json!([log("0x0"), {"blockNumber": "0x1", "logIndex": "0x3", "data": "0x2a", "x": 1}]);
        assert!(logs_difference(&extra, &node).is_some());
        assert!(logs_difference(&json!({"error": 1}), &node).is_some());
        assert_eq!(logs_difference(&json!([]), &json!([])), None);
    }
}
