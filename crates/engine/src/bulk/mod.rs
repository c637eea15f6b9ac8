//! Fast paths for the bulk messages: blob bundles (`getPayloadV3..V6` results) and blob lists
//! (`getBlobsV1..V3` results), which are 99% blob bytes.
//!
//! Measured on a 72-blob getPayloadV5 response (docs/benchmarks.md): the serde route of the
//! alloy types allocates a hex `String` per blob and scans it again to escape it (JSON
//! encode 4.6 ms with sonic-rs, 16 ms with serde_json), and the derived SSZ decoder returns
//! each 128 KiB blob by value through several frames (2.5 ms, against 0.7 ms for a memcpy of the
//! same bytes). Here the JSON writer hex-encodes each blob straight into an output buffer
//! reserved to the final size, and the SSZ reader slices the already-validated container and
//! copies each blob once. The output is byte-identical to the serde and `ssz` routes; the tests
//! check that on every path.
//!
//! - [`bundle`]: getPayload answers (a built payload and its blob bundle);
//! - [`blobs`]: getBlobs answers (blob entries and their proofs).
//!
//! What both share lives here: slicing fixed-size items out of a validated SSZ list, naming a
//! decode failure, and serde's check of a blob string without decoding it.

mod blobs;
mod bundle;

pub(crate) use blobs::{
    blobs_from_json, blobs_from_ssz, blobs_json, blobs_serde_without_blobs, blobs_without_blobs,
};
pub(crate) use bundle::{
    built_payload_from_json, built_payload_from_ssz, built_payload_serde_without_blobs,
    built_payload_without_blobs,
};

use crate::{
    error::Error,
    ssz::{self as schema, SszError, SszProblem, Ty},
};

fn fixed_items<T>(bytes: &[u8], size: usize, make: impl Fn(&[u8]) -> T) -> Vec<T> {
    bytes.chunks_exact(size).map(make).collect()
}

fn decode_failed(ty: &'static Ty, e: ssz::DecodeError) -> Error {
    let problem = match e {
        ssz::DecodeError::BytesInvalid(message) => message,
        other => format!("{other:?}"),
    };
    Error::Ssz(SszError {
        container: ty.name(),
        path: ".".into(),
        offset: 0,
        problem: SszProblem::Other(problem),
    })
}

/// A blob's JSON string checked without being decoded: `"0x"` and its 262,144 hex digits, or
/// `"0x"` alone (`LEFT_OUT`) in an answer joined without its blobs' digits, which were
/// checked then. What serde's full decode would refuse in a blob, this refuses.
struct CheckedBlob<const LEFT_OUT: bool>;

impl<'de, const LEFT_OUT: bool> serde::Deserialize<'de> for CheckedBlob<LEFT_OUT> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Visit<const LEFT_OUT: bool>;
        impl<const LEFT_OUT: bool> serde::de::Visitor<'_> for Visit<LEFT_OUT> {
            type Value = CheckedBlob<LEFT_OUT>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a blob: 0x and 262144 hex digits")
            }
            fn visit_str<E: serde::de::Error>(
                self,
                s: &str,
            ) -> std::result::Result<Self::Value, E> {
                let digits = s.strip_prefix("0x").unwrap_or(s);
                let width = if LEFT_OUT {
                    0
                } else {
                    2 * schema::BYTES_PER_BLOB
                };
                if digits.len() != width || const_hex::check(digits).is_err() {
                    return Err(E::invalid_value(
                        serde::de::Unexpected::Str(&s[..s.len().min(20)]),
                        &self,
                    ));
                }
                Ok(CheckedBlob)
            }
        }
        d.deserialize_str(Visit::<LEFT_OUT>)
    }
}
