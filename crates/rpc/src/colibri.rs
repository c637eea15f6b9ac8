//! How colibri.stateless renders a verified answer next to the standard JSON-RPC shape sszgate
//! answers with, and a comparison that knows the differences (colibri-proofs §11, §15.10):
//! used wherever sszgate's answer is checked against colibri's (the recorded cases, the
//! side-by-side benchmark, the agreement test).
//!
//! Not here: verification itself, or colibri's proof format.

use serde_json::{Value, json};

/// Keys the standard answer carries that colibri's rendering leaves out (colibri-proofs §11:
/// no `requestsHash`; EIP-1186's `address`; a receipt's `contractAddress` when null; a blob
/// transaction's `maxFeePerBlobGas`; a block's `size`; a log's `blockTimestamp`, which geth
/// answers with since 1.16).
pub const STANDARD_ONLY: &[&str] = &[
    "size",
    "blockTimestamp",
    "requestsHash",
    "address",
    "contractAddress",
    "maxFeePerBlobGas",
];
/// Keys the standard renders as quantities and colibri as 32-byte words (a signature's `r`
/// and `s`, a storage proof's `value`): compared as numbers.
pub const QUANTITIES: &[&str] = &[".r", ".s", ".value"];
/// Colibri's `withdrawalsRoot` is the SSZ root of the withdrawals, not the header's field
/// (colibri-proofs §15.10); ours is the header's, bound by the block hash. The paths where the
/// two differ are passed over by [`same`] (called with the path `result`).
pub const WITHDRAWALS_ROOT: &str = "result.withdrawalsRoot";
/// Keys colibri renders on every transaction whatever its type, empty (`[]` or `0x0`) when the
/// type has no such field.
const COLIBRI_ONLY_EMPTY: &[&str] = &[
    "authorizationList",
    "blobVersionedHashes",
    "accessList",
    "maxFeePerGas",
    "maxPriorityFeePerGas",
];

/// Compares a verified answer with colibri's `expected_result`: equal values; keys only one
/// side has must be those above; a storage proof `value` may be a 32-byte word on colibri's
/// side and a quantity on the standard side.
pub fn same(ours: &Value, expected: &Value, path: &str) -> Result<(), String> {
    match (ours, expected) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get(k) {
                    Some(o) => same(o, v, &format!("{path}.{k}"))?,
                    None if COLIBRI_ONLY_EMPTY.contains(&k.as_str())
                        && (v == &json!([]) || v == &json!("0x0")) => {}
                    None if k == "yParity" && legacy_parity(a) == v.as_str() => {}
                    None => return Err(format!("{path}.{k}: missing, expected {v}")),
                }
            }
            for k in a.keys() {
                if !b.contains_key(k) && !STANDARD_ONLY.contains(&k.as_str()) {
                    return Err(format!("{path}.{k}: not in the expected result ({})", a[k]));
                }
            }
            Ok(())
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                return Err(format!("{path}: {} items, expected {}", a.len(), b.len()));
            }
            a.iter()
                .zip(b)
                .enumerate()
                .try_for_each(|(i, (x, y))| same(x, y, &format!("{path}[{i}]")))
        }
        (Value::String(_), Value::String(_)) if path == WITHDRAWALS_ROOT => Ok(()),
        (Value::String(a), Value::String(b)) if QUANTITIES.iter().any(|q| path.ends_with(q)) => {
            let (x, y) = (
                a.parse::<alloy_primitives::U256>(),
                b.parse::<alloy_primitives::U256>(),
            );
            if x.is_ok() && x == y {
                Ok(())
            } else {
                Err(format!("{path}: {a} ≠ {b}"))
            }
        }
        (a, b) if a == b => Ok(()),
        (a, b)
            if a.as_str().map(str::to_lowercase) == b.as_str().map(str::to_lowercase)
                && a.is_string() =>
        {
            Ok(())
        }
        (a, b) => Err(format!("{path}: {a} ≠ {b}")),
    }
}

/// The signature parity of a legacy transaction from its `v` (27/28, or EIP-155
/// `chainId * 2 + 35/36`), as colibri renders it in `yParity`.
fn legacy_parity(tx: &serde_json::Map<String, Value>) -> Option<&'static str> {
    let v = u64::from_str_radix(tx.get("v")?.as_str()?.strip_prefix("0x")?, 16).ok()?;
    let odd = if v >= 35 {
        (v - 35) % 2
    } else {
        v.checked_sub(27)? % 2
    };
    Some(if odd == 1 { "0x1" } else { "0x0" })
}
