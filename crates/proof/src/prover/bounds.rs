//! Bounds on what a client of the prover endpoint sends, checked before any upstream request
//! is made: the `eth_getLogs` range (numbers checked as sent; tags resolved first, then
//! checked again, by `Prover::logs`), its addresses and topics, `eth_getProof`'s storage keys,
//! block numbers that the prover steps from (`n + 1` checked). Each refusal is a
//! [`ProveError::Params`] (answered 400) naming the field.
//!
//! Not here: the client state's bounds (its periods: `trust::ClientState`; the updates one
//! request may make the prover fetch: `sync`).

use serde_json::Value;

use super::{MAX_LOG_BLOCKS, ProveError};

/// The most storage keys one `eth_getProof` may ask for.
pub(crate) const MAX_STORAGE_KEYS: usize = 256;
/// The most addresses one `eth_getLogs` filter may name.
pub(crate) const MAX_LOG_ADDRESSES: usize = 256;
/// The most topic positions of a log (LOG0..LOG4), and alternatives at one position.
const MAX_TOPICS: usize = 4;
const MAX_TOPIC_ALTERNATIVES: usize = 256;

fn refuse<T>(message: String) -> Result<T, ProveError> {
    Err(ProveError::Params(message))
}

/// Checks `method(params)` against the bounds, before any upstream request.
pub(crate) fn check(method: &str, params: &Value) -> Result<(), ProveError> {
    match method {
        "eth_getProof" => storage_keys(params),
        "eth_getLogs" => log_filter(params),
        _ => Ok(()),
    }
}

fn storage_keys(params: &Value) -> Result<(), ProveError> {
    match params.get(1).and_then(Value::as_array) {
        Some(keys) if keys.len() > MAX_STORAGE_KEYS => refuse(format!(
            "params[1] (storage keys): {} keys, at most {MAX_STORAGE_KEYS} in one proof",
            keys.len()
        )),
        _ => Ok(()),
    }
}

/// The filter object of `eth_getLogs` params.
fn filter(params: &Value) -> Result<&serde_json::Map<String, Value>, ProveError> {
    params
        .get(0)
        .and_then(Value::as_object)
        .ok_or_else(|| ProveError::Params("params[0] (filter): not an object".into()))
}

fn log_filter(params: &Value) -> Result<(), ProveError> {
    let f = filter(params)?;
    if f.contains_key("blockHash") && (f.contains_key("fromBlock") || f.contains_key("toBlock")) {
        return refuse("filter: blockHash with fromBlock or toBlock".into());
    }
    if let Some(Value::Array(addresses)) = f.get("address")
        && addresses.len() > MAX_LOG_ADDRESSES
    {
        return refuse(format!(
            "filter.address: {} addresses, at most {MAX_LOG_ADDRESSES}",
            addresses.len()
        ));
    }
    if let Some(Value::Array(topics)) = f.get("topics") {
        if topics.len() > MAX_TOPICS {
            return refuse(format!(
                "filter.topics: {} positions, at most {MAX_TOPICS}",
                topics.len()
            ));
        }
        if let Some(n) = topics
            .iter()
            .filter_map(Value::as_array)
            .map(Vec::len)
            .max()
            && n > MAX_TOPIC_ALTERNATIVES
        {
            return refuse(format!(
                "filter.topics: {n} alternatives at one position, at most {MAX_TOPIC_ALTERNATIVES}"
            ));
        }
    }
    let number = |field: &str| block_number(f.get(field), field);
    match (number("fromBlock")?, number("toBlock")?) {
        (Some(from), Some(to)) => log_range(from, to).map(|_| ()),
        _ => Ok(()),
    }
}

/// A filter's block field when it is a number (`None`: absent or a tag, resolved later).
fn block_number(v: Option<&Value>, field: &str) -> Result<Option<u64>, ProveError> {
    let Some(text) = v.and_then(Value::as_str) else {
        return match v {
            None | Some(Value::Null) => Ok(None),
            Some(_) => refuse(format!("filter.{field}: not a block tag or number")),
        };
    };
    if matches!(
        text,
        "latest" | "safe" | "finalized" | "pending" | "earliest"
    ) {
        return Ok(None);
    }
    let digits = text.strip_prefix("0x").ok_or_else(|| {
        ProveError::Params(format!("filter.{field}: {text:?} is not a 0x quantity"))
    })?;
    u64::from_str_radix(digits, 16).map(Some).map_err(|_| {
        ProveError::Params(format!("filter.{field}: {text:?} is not a 64-bit quantity"))
    })
}

/// The number of blocks from `from` to `to`, both included, when that is within the bound.
pub(crate) fn log_range(from: u64, to: u64) -> Result<u64, ProveError> {
    if to < from {
        return refuse(format!(
            "filter.toBlock {to} is before filter.fromBlock {from}"
        ));
    }
    let blocks = (to - from).saturating_add(1);
    if blocks > MAX_LOG_BLOCKS as u64 {
        return refuse(format!(
            "filter.fromBlock..toBlock: {from}..{to} spans {blocks} blocks, at most {MAX_LOG_BLOCKS} in one proof (narrow the range)"
        ));
    }
    Ok(blocks)
}

/// The number after `n` (the block whose parent root names block `n`), checked.
pub(crate) fn next_block(n: u64) -> Result<u64, ProveError> {
    n.checked_add(1)
        .ok_or_else(|| ProveError::Params(format!("block number {n}: no block follows it")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn says(r: Result<(), ProveError>, field: &str) {
        let e = r.unwrap_err();
        assert!(matches!(e, ProveError::Params(_)), "{e}");
        assert!(e.to_string().contains(field), "{e} lacks {field}");
    }

    #[test]
    fn each_bound_is_refused_naming_its_field() {
        let keys: Vec<String> = (0..257).map(|i| format!("{i:#x}")).collect();
        says(
            check("eth_getProof", &json!(["0x00", keys, "latest"])),
            "params[1] (storage keys): 257",
        );
        assert!(check("eth_getProof", &json!(["0x00", &keys[..256], "latest"])).is_ok());
        says(
            check(
                "eth_getLogs",
                &json!([{"fromBlock": "0x0", "toBlock": "0x40"}]),
            ),
            "spans 65 blocks",
        );
        assert!(
            check(
                "eth_getLogs",
                &json!([{"fromBlock": "0x0", "toBlock": "0x3f"}])
            )
            .is_ok()
        );
        says(
            check(
                "eth_getLogs",
                &json!([{"fromBlock": "0x10", "toBlock": "0x1"}]),
            ),
            "filter.toBlock 1 is before",
        );
        says(
            check(
                "eth_getLogs",
                &json!([{"fromBlock": "0x1ffffffffffffffff"}]),
            ),
            "filter.fromBlock",
        );
        says(
            check("eth_getLogs", &json!([{"toBlock": 5}])),
            "filter.toBlock",
        );
        says(
            check(
                "eth_getLogs",
                &json!([{"blockHash": "0x00", "toBlock": "latest"}]),
            ),
            "blockHash",
        );
        says(
            check("eth_getLogs", &json!([{"topics": [[], [], [], [], []]}])),
            "filter.topics",
        );
        let many: Vec<String> = (0..257).map(|i| format!("{i:#x}")).collect();
        says(
            check("eth_getLogs", &json!([{"address": many}])),
            "filter.address",
        );
        says(check("eth_getLogs", &json!(["x"])), "params[0] (filter)");
        assert!(
            check("eth_getLogs", &json!([{"fromBlock": "latest"}])).is_ok(),
            "tags are resolved later"
        );
        assert_eq!(next_block(u64::MAX - 1).unwrap(), u64::MAX);
        assert!(next_block(u64::MAX).is_err());
    }
}
