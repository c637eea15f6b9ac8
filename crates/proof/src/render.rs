//! JSON rendering of verified values as colibri renders them (spec §11): numbers as `0x`
//! quantities without leading zeros, bytes as full `0x` hex.
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
