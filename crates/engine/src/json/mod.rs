//! JSON encoding and decoding, in one place so the JSON library is one decision.
//!
//! Serialization uses sonic-rs and deserialization serde_json: measured on a 72-blob
//! getPayloadV5 response (`cargo bench -p sszgate-bench --bench codec`), sonic-rs serializes
//! several times faster than serde_json (hex of the blobs dominates), while serde_json
//! deserializes as fast or faster. Both drive the same serde impls of the alloy types, so the
//! bytes are the same. A decode failure is decoded again through `serde_path_to_error` to name
//! the JSON path of the fault; the happy path pays nothing for that.
//!
//! [`read`] is the one hand-written JSON reader the fast paths share, over a byte slice; `frames`
//! reads a blob answer over the frames it arrived in, joining it without its blobs' digits
//! (see [`crate::blob_answer`]).

pub(crate) mod frames;
pub mod read;

use serde::{Serialize, de::DeserializeOwned};

use crate::error::{Error, Result};

/// Serializes a value to compact JSON.
pub fn to_vec<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>> {
    // 1 KiB holds most small messages whole (a forkchoiceUpdated with attributes is ~900 B);
    // sonic-rs's own start of 128 B took three regrowths for one.
    to_vec_sized(value, 1024)
}

/// As [`to_vec`], into a buffer reserved to `capacity` bytes: for messages whose size is known
/// roughly, since a buffer that grows by doubling is copied each time.
pub fn to_vec_sized<T: Serialize + ?Sized>(value: &T, capacity: usize) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(capacity);
    sonic_rs::to_writer(&mut out, value)
        .map_err(|e| Error::invalid("JSON output", e.to_string()))?;
    Ok(out)
}

/// Deserializes `what` (named in errors, e.g. `engine_newPayloadV3 params`) from JSON bytes.
pub fn from_slice<T: DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T> {
    match serde_json::from_slice(bytes) {
        Ok(value) => Ok(value),
        Err(first) => {
            let mut de = serde_json::Deserializer::from_slice(bytes);
            let (path, detail) = match serde_path_to_error::deserialize::<_, T>(&mut de) {
                Err(err) => (err.path().to_string(), err.into_inner().to_string()),
                Ok(_) => (".".to_string(), first.to_string()),
            };
            Err(Error::Json {
                what: what.to_string(),
                path,
                detail,
            })
        }
    }
}

/// Checks that every string *value* in `bytes` is `0x`-prefixed, as the Engine API's DATA and
/// QUANTITY encodings require (alloy's decoders also accept bare hex; the spec does not).
///
/// Only for messages whose string values are all hex. A tokenizer rather than a parse: it jumps
/// from quote to quote with `memchr`, so a 20 MB getPayload costs a fraction of its decode.
pub fn require_hex_prefix(what: &str, bytes: &[u8]) -> Result<()> {
    let mut at = 0;
    let mut last_key: &[u8] = b"";
    while let Some(open) = memchr::memchr(b'"', &bytes[at..]) {
        let start = at + open + 1;
        let Some(len) = memchr::memchr(b'"', &bytes[start..]) else {
            break;
        };
        let end = start + len;
        let value = &bytes[start..end];
        if read::first_byte(&bytes[end + 1..]) == Some(b':') {
            last_key = value;
        } else if !value.starts_with(b"0x") {
            let shown = String::from_utf8_lossy(&value[..value.len().min(20)]).into_owned();
            return Err(Error::Json {
                what: what.to_string(),
                path: String::from_utf8_lossy(last_key).into_owned(),
                detail: format!("hex value {shown:?} at byte {start} has no 0x prefix"),
            });
        }
        at = end + 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use alloy_rpc_types_engine::ExecutionPayloadV1;

    use super::*;

    #[test]
    fn errors_name_the_json_path() {
        let json = br#"[{"parentHash":"0x12"}]"#;
        let err =
            from_slice::<(ExecutionPayloadV1,)>("engine_newPayloadV1 params", json).unwrap_err();
        let Error::Json { what, path, detail } = &err else {
            panic!("{err}")
        };
        assert_eq!(what, "engine_newPayloadV1 params");
        assert_eq!(path, "[0].parentHash");
        assert!(detail.contains("invalid string length"), "{detail}");
    }
}
