//! Blob-carrying answers read without decoding their blobs, for the checks that never look
//! inside a blob: counts, the bundle's commitments against the payload's versioned hashes, the
//! payload and its block hash. Each blob is still checked for its width, its quotes and its hex
//! digits, but no 128 KiB per blob is allocated and written. A document joined without its
//! blobs' digits ([`Digits::LeftOut`], each blob reduced to `"0x"`) is read the same way.
//!
//! Only answers of the canonical fixed shape are read here (what every EL sends); `None` means
//! "decode the whole message" with [`crate::Message::from_json`], which decides.
//!
//! Measured (`sszgate bench proxy`, docs/benchmarks.md): decoding every blob of every answer
//! was most of what `--verify sample` added to the proxy's CPU on calls whose KZG proofs were
//! sampled out.

use crate::{bulk, message::BuiltPayload, method::MethodSpec};

/// Whether the document read still holds its blobs' digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Digits {
    /// As the EL sent it: each blob's digits are checked here (hex, exact width).
    Present,
    /// Joined without them, each blob reduced to `"0x"` (its digits were checked when they
    /// were left out).
    LeftOut,
}

/// A getBlobs answer without its blobs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobsShape {
    /// The answer's version (1..3).
    pub version: u8,
    /// Per entry, `None` for a missing blob or the number of proofs that came with it; `None`
    /// for a `null` answer (V2, V3: not every blob is available).
    pub entries: Option<Vec<Option<usize>>>,
}

/// A getPayloadV3..V5 result (`result` of the JSON-RPC answer) without its blobs: the payload
/// with an empty `blobs` list in its bundle, and how many blobs the answer holds.
pub fn built_payload(
    m: &MethodSpec,
    result: &[u8],
    digits: Digits,
) -> Option<(BuiltPayload, usize)> {
    bulk::built_payload_without_blobs(m, result, digits)
}

/// A getBlobsV1..V3 result (`result` of the JSON-RPC answer) without its blobs.
pub fn blobs(m: &MethodSpec, result: &[u8], digits: Digits) -> Option<BlobsShape> {
    let entries = bulk::blobs_without_blobs(m, result, digits)?;
    Some(BlobsShape {
        version: m.version,
        entries,
    })
}
