//! The request's JSON-RPC parameters, read for the checks that tie a proof to them: hashes,
//! addresses, quantities and block arguments.
//!
//! What does not live here: the checks (the method modules).

use alloy_primitives::{Address, B256, U256};
use serde_json::Value;

use crate::error::ProofError;

/// A block argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockArg {
    /// A tag (`latest`, `safe`, `finalized`, …): the proof cannot show which block a tag meant.
    Tag(String),
    /// A block number.
    Number(u64),
    /// A block hash.
    Hash(B256),
}

fn bad(i: usize, what: &str) -> ProofError {
    ProofError::Params(format!("param {i}: {what}"))
}

/// Parameter `i`, which must be present.
pub fn param(params: &Value, i: usize) -> Result<&Value, ProofError> {
    params
        .get(i)
        .filter(|v| !v.is_null())
        .ok_or_else(|| bad(i, "missing"))
}

/// Parameter `i` as a 32-byte hash.
pub fn hash(params: &Value, i: usize) -> Result<B256, ProofError> {
    let s = param(params, i)?
        .as_str()
        .ok_or_else(|| bad(i, "not a string"))?;
    s.parse().map_err(|_| bad(i, "not a 32-byte hex hash"))
}

/// Parameter `i` as an address.
pub fn address(params: &Value, i: usize) -> Result<Address, ProofError> {
    let s = param(params, i)?
        .as_str()
        .ok_or_else(|| bad(i, "not a string"))?;
    s.parse().map_err(|_| bad(i, "not a 20-byte hex address"))
}

/// A `0x` hex quantity of at most 256 bits (leading zeros allowed, as storage slots have).
pub fn u256_of(v: &Value) -> Option<U256> {
    let digits = v.as_str()?.strip_prefix("0x")?;
    if digits.is_empty() || digits.len() > 64 {
        return None;
    }
    U256::from_str_radix(digits, 16).ok()
}

/// Parameter `i` as a quantity that fits 64 bits.
pub fn quantity(params: &Value, i: usize) -> Result<u64, ProofError> {
    u256_of(param(params, i)?)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| bad(i, "not a 64-bit hex quantity"))
}

/// A block argument: a tag, a hex number or a 32-byte hash; `None` when it is none of them.
pub fn block_arg(v: &Value) -> Option<BlockArg> {
    let s = v.as_str()?;
    match s {
        "latest" | "safe" | "finalized" | "pending" | "earliest" => Some(BlockArg::Tag(s.into())),
        _ if s.len() == 66 => s.parse().ok().map(BlockArg::Hash),
        _ => u256_of(v)
            .and_then(|n| u64::try_from(n).ok())
            .map(BlockArg::Number),
    }
}

/// Parameter `i` as a block argument: a tag, a hex number or a 32-byte hash.
pub fn block(params: &Value, i: usize) -> Result<BlockArg, ProofError> {
    block_arg(param(params, i)?).ok_or_else(|| bad(i, "not a block tag, number or hash"))
}
