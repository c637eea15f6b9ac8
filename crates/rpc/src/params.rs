//! Request parameters: block tags, numbers, hashes (plain or EIP-1898 objects), addresses,
//! storage keys, indices, flags and log filters, each parse error naming the parameter.
//!
//! Not here: anything that talks to an upstream.

use alloy_primitives::{Address, B256, U256};
use serde_json::Value;
use sszgate_light::BlockRef;

use crate::error::RpcError;

fn invalid(index: usize, detail: impl std::fmt::Display) -> RpcError {
    RpcError::InvalidParams(format!("param {index}: {detail}"))
}

/// Param `index`, or `None` when absent or `null`.
pub(crate) fn opt(params: &[Value], index: usize) -> Option<&Value> {
    params.get(index).filter(|v| !v.is_null())
}

fn required(params: &[Value], index: usize) -> Result<&Value, RpcError> {
    opt(params, index).ok_or_else(|| invalid(index, "missing"))
}

fn string(params: &[Value], index: usize) -> Result<&str, RpcError> {
    required(params, index)?
        .as_str()
        .ok_or_else(|| invalid(index, "not a string"))
}

/// An address.
pub(crate) fn address(params: &[Value], index: usize) -> Result<Address, RpcError> {
    string(params, index)?
        .parse()
        .map_err(|e| invalid(index, format!("not an address: {e}")))
}

/// A 32-byte hash.
pub(crate) fn hash(params: &[Value], index: usize) -> Result<B256, RpcError> {
    string(params, index)?
        .parse()
        .map_err(|e| invalid(index, format!("not a 32-byte hash: {e}")))
}

/// A hex quantity (`0x…`, no leading zeros required).
pub(crate) fn quantity(params: &[Value], index: usize) -> Result<u64, RpcError> {
    parse_quantity(string(params, index)?).map_err(|e| invalid(index, e))
}

fn parse_quantity(s: &str) -> Result<u64, String> {
    let digits = s
        .strip_prefix("0x")
        .ok_or_else(|| format!("{s:?} is not a 0x-prefixed quantity"))?;
    u64::from_str_radix(digits, 16).map_err(|e| format!("{s:?}: {e}"))
}

/// A storage key: up to 32 bytes of hex, left-padded.
pub(crate) fn storage_key(value: &Value, index: usize) -> Result<B256, RpcError> {
    let s = value
        .as_str()
        .ok_or_else(|| invalid(index, "storage key not a string"))?;
    let n: U256 = s
        .parse()
        .map_err(|e| invalid(index, format!("storage key {s:?}: {e}")))?;
    Ok(B256::from(n))
}

/// A boolean flag, `false` when absent.
pub(crate) fn flag(params: &[Value], index: usize) -> Result<bool, RpcError> {
    match opt(params, index) {
        None => Ok(false),
        Some(v) => v.as_bool().ok_or_else(|| invalid(index, "not a boolean")),
    }
}

/// A block: a tag, a number, a hash, or an EIP-1898 object; `latest` when absent.
pub(crate) fn block_ref(params: &[Value], index: usize) -> Result<BlockRef, RpcError> {
    match opt(params, index) {
        None => Ok(BlockRef::Latest),
        Some(v) => block_value(v).map_err(|e| invalid(index, e)),
    }
}

/// A block given as a tag, number or hash string, or an EIP-1898 object.
pub(crate) fn block_value(v: &Value) -> Result<BlockRef, String> {
    if let Some(o) = v.as_object() {
        if let Some(h) = o.get("blockHash").and_then(Value::as_str) {
            return h
                .parse()
                .map(BlockRef::Hash)
                .map_err(|e| format!("blockHash {h:?}: {e}"));
        }
        if let Some(n) = o.get("blockNumber") {
            return block_value(n);
        }
        return Err("a block object needs blockHash or blockNumber".into());
    }
    let s = v.as_str().ok_or("a block is a tag, a number or a hash")?;
    match s {
        "latest" => Ok(BlockRef::Latest),
        "safe" => Ok(BlockRef::Safe),
        "finalized" => Ok(BlockRef::Finalized),
        "earliest" | "pending" => Err(format!("block tag {s:?} cannot be verified")),
        s if s.len() == 66 => s
            .parse()
            .map(BlockRef::Hash)
            .map_err(|e| format!("{s:?}: {e}")),
        s => parse_quantity(s).map(BlockRef::Number),
    }
}
