//! JSON rendering of verified values as colibri renders them (spec §11): numbers as `0x`
//! quantities without leading zeros, bytes as full `0x` hex.
//!
//! And [`difference_from_standard`]: how a verified answer compares with the standard answer
//! of a node (geth) for the same request, given the fields no proof binds.
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
