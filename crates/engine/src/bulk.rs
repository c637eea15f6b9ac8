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

use alloy_eips::eip4844::{Blob, BlobAndProofV1, BlobAndProofV2, Bytes48};
use alloy_primitives::U256;
use alloy_rpc_types_engine::{
    BlobsBundleV1, BlobsBundleV2, ExecutionPayloadEnvelopeV3, ExecutionPayloadEnvelopeV4,
    ExecutionPayloadEnvelopeV5, ExecutionPayloadEnvelopeV6, ExecutionPayloadV3, ExecutionPayloadV4,
};
use serde::Serialize;
use ssz::Decode;

use crate::{
    error::{Error, Result},
    json,
    message::{Blobs, BuiltPayload},
    ssz::{self as schema, SszError, SszField, SszProblem, Ty, container_fields, encode_container},
};

// ---------------------------------------------------------------- JSON

/// Appends `"0x<hex>"` for `bytes`.
fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(b"\"0x");
    let start = out.len();
    out.resize(start + bytes.len() * 2, 0);
    const_hex::encode_to_slice(bytes, &mut out[start..]).expect("buffer sized to twice the input");
    out.push(b'"');
}

/// Appends a JSON array of hex strings.
fn push_hex_list<B: AsRef<[u8]>>(out: &mut Vec<u8>, items: &[B]) {
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        push_hex(out, item.as_ref());
    }
    out.push(b']');
}

fn push_serde<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<()> {
    out.extend_from_slice(&json::to_vec(value)?);
    Ok(())
}

fn hex_len<B: AsRef<[u8]>>(items: &[B]) -> usize {
    items.iter().map(|i| i.as_ref().len() * 2 + 5).sum()
}

fn push_bundle<C: AsRef<[u8]>, B: AsRef<[u8]>>(
    out: &mut Vec<u8>,
    commitments: &[C],
    proofs: &[C],
    blobs: &[B],
) {
    out.extend_from_slice(b"{\"commitments\":");
    push_hex_list(out, commitments);
    out.extend_from_slice(b",\"proofs\":");
    push_hex_list(out, proofs);
    out.extend_from_slice(b",\"blobs\":");
    push_hex_list(out, blobs);
    out.push(b'}');
}

/// The payload inside a built payload: the V3 shape (Cancun..Osaka) or the V4 (Amsterdam).
pub(crate) enum PayloadRef<'a> {
    /// `ExecutionPayloadV3`.
    V3(&'a ExecutionPayloadV3),
    /// `ExecutionPayloadV4`.
    V4(&'a ExecutionPayloadV4),
}

/// A getPayloadV3..V6 result seen field by field, whatever its version: what the JSON writer
/// and the SSZ encoder both walk.
pub(crate) struct BuiltView<'a> {
    pub(crate) payload: PayloadRef<'a>,
    pub(crate) value: &'a U256,
    pub(crate) commitments: &'a [Bytes48],
    pub(crate) proofs: &'a [Bytes48],
    pub(crate) blobs: &'a [Blob],
    pub(crate) proofs_per_blob: usize,
    pub(crate) override_builder: &'a bool,
    pub(crate) requests: Option<&'a alloy_eips::eip7685::Requests>,
}

impl BuiltPayload {
    /// The field view of a V3..V6 result; `None` for V1/V2 (no blob bundle).
    pub(crate) fn view(&self) -> Option<BuiltView<'_>> {
        let cell_proofs = schema::CELLS_PER_EXT_BLOB;
        Some(match self {
            BuiltPayload::V1(_) | BuiltPayload::V2(_) => return None,
            BuiltPayload::V3(e) => {
                BuiltView::v1_bundle(PayloadRef::V3(&e.execution_payload), e, None)
            }
            BuiltPayload::V4(e) => BuiltView::v1_bundle(
                PayloadRef::V3(&e.envelope_inner.execution_payload),
                &e.envelope_inner,
                Some(&e.execution_requests),
            ),
            BuiltPayload::V5(e) => {
                let b = &e.blobs_bundle;
                BuiltView {
                    payload: PayloadRef::V3(&e.execution_payload),
                    value: &e.block_value,
                    commitments: &b.commitments,
                    proofs: &b.proofs,
                    blobs: &b.blobs,
                    proofs_per_blob: cell_proofs,
                    override_builder: &e.should_override_builder,
                    requests: Some(&e.execution_requests),
                }
            }
            BuiltPayload::V6(e) => {
                let b = &e.blobs_bundle;
                BuiltView {
                    payload: PayloadRef::V4(&e.execution_payload),
                    value: &e.block_value,
                    commitments: &b.commitments,
                    proofs: &b.proofs,
                    blobs: &b.blobs,
                    proofs_per_blob: cell_proofs,
                    override_builder: &e.should_override_builder,
                    requests: Some(&e.execution_requests),
                }
            }
        })
    }
}

impl<'a> BuiltView<'a> {
    fn v1_bundle(
        payload: PayloadRef<'a>,
        e: &'a ExecutionPayloadEnvelopeV3,
        requests: Option<&'a alloy_eips::eip7685::Requests>,
    ) -> Self {
        let b = &e.blobs_bundle;
        BuiltView {
            payload,
            value: &e.block_value,
            commitments: &b.commitments,
            proofs: &b.proofs,
            blobs: &b.blobs,
            proofs_per_blob: 1,
            override_builder: &e.should_override_builder,
            requests,
        }
    }

    /// Checks the bundle's lengths: as many commitments as blobs, `proofs_per_blob` each.
    pub(crate) fn check_bundle(&self) -> Result<()> {
        let (c, b, p) = (self.commitments.len(), self.blobs.len(), self.proofs.len());
        if c != b || p != b * self.proofs_per_blob {
            return Err(Error::invalid(
                "blobs_bundle",
                format!(
                    "{c} commitments, {b} blobs and {p} proofs: needs equal commitments and blobs and {} proof(s) per blob",
                    self.proofs_per_blob
                ),
            ));
        }
        Ok(())
    }

    /// The REST-SSZ `BuiltPayload` (execution requests before the override flag).
    pub(crate) fn to_ssz(&self) -> Result<Vec<u8>> {
        self.check_bundle()?;
        let payload = match self.payload {
            PayloadRef::V3(p) => SszField::of(p),
            PayloadRef::V4(p) => SszField::of(p),
        };
        let bundle = SszField::container(vec![
            SszField::fixed_list(self.commitments),
            SszField::fixed_list(self.proofs),
            SszField::fixed_list(self.blobs),
        ]);
        let mut fields = vec![payload, SszField::of(self.value), bundle];
        if let Some(requests) = self.requests {
            fields.push(SszField::of(requests));
        }
        fields.push(SszField::of(self.override_builder));
        Ok(encode_container(&fields))
    }

    /// The JSON-RPC result, in the key order of alloy's serde impls.
    pub(crate) fn to_json(&self) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(
            hex_len(self.commitments) + hex_len(self.proofs) + hex_len(self.blobs) + 64 * 1024,
        );
        out.extend_from_slice(b"{\"executionPayload\":");
        match self.payload {
            PayloadRef::V3(p) => push_serde(&mut out, p)?,
            PayloadRef::V4(p) => push_serde(&mut out, p)?,
        }
        out.extend_from_slice(b",\"blockValue\":");
        push_serde(&mut out, self.value)?;
        out.extend_from_slice(b",\"blobsBundle\":");
        push_bundle(&mut out, self.commitments, self.proofs, self.blobs);
        out.extend_from_slice(if *self.override_builder {
            b",\"shouldOverrideBuilder\":true"
        } else {
            b",\"shouldOverrideBuilder\":false"
        });
        if let Some(requests) = self.requests {
            out.extend_from_slice(b",\"executionRequests\":");
            push_serde(&mut out, requests)?;
        }
        out.push(b'}');
        Ok(out)
    }
}

/// The JSON of a getBlobsV1..V3 result, in the key order of alloy's serde impls.
pub(crate) fn blobs_json(blobs: &Blobs) -> Option<Vec<u8>> {
    fn list<T>(
        items: &[Option<T>],
        size: impl Fn(&T) -> usize,
        write: impl Fn(&mut Vec<u8>, &T),
    ) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            items
                .iter()
                .map(|i| i.as_ref().map_or(5, &size))
                .sum::<usize>()
                + 2,
        );
        out.push(b'[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match item {
                Some(item) => write(&mut out, item),
                None => out.extend_from_slice(b"null"),
            }
        }
        out.push(b']');
        out
    }
    let v1 = |out: &mut Vec<u8>, b: &BlobAndProofV1| {
        out.extend_from_slice(b"{\"blob\":");
        push_hex(out, b.blob.as_slice());
        out.extend_from_slice(b",\"proof\":");
        push_hex(out, b.proof.as_slice());
        out.push(b'}');
    };
    let v2 = |out: &mut Vec<u8>, b: &BlobAndProofV2| {
        out.extend_from_slice(b"{\"blob\":");
        push_hex(out, b.blob.as_slice());
        out.extend_from_slice(b",\"proofs\":");
        push_hex_list(out, &b.proofs);
        out.push(b'}');
    };
    let size_v1 = |_: &BlobAndProofV1| schema::BYTES_PER_BLOB * 2 + 140;
    let size_v2 = |b: &BlobAndProofV2| schema::BYTES_PER_BLOB * 2 + hex_len(&b.proofs) + 40;
    match blobs {
        Blobs::V1(items) => Some(list(items, size_v1, v1)),
        Blobs::V2(Some(items)) => {
            let wrapped: Vec<Option<&BlobAndProofV2>> = items.iter().map(Some).collect();
            Some(list(&wrapped, |b| size_v2(b), |out, b| v2(out, b)))
        }
        Blobs::V3(Some(items)) => Some(list(items, size_v2, v2)),
        _ => None,
    }
}

// ---------------------------------------------------------------- SSZ

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

/// The three lists of a validated `BlobsBundleV1`/`V2` slice.
fn bundle_parts(ty: &'static Ty, bytes: &[u8]) -> (Vec<Bytes48>, Vec<Bytes48>, Vec<Blob>) {
    let f = container_fields(ty, bytes);
    (
        fixed_items(f[0], 48, Bytes48::from_slice),
        fixed_items(f[1], 48, Bytes48::from_slice),
        fixed_items(f[2], schema::BYTES_PER_BLOB, Blob::from_slice),
    )
}

/// Decodes a validated `BuiltPayload{Cancun..Amsterdam}` (`ty`), or `None` for other forks.
pub(crate) fn built_payload_from_ssz(
    ty: &'static Ty,
    version: u8,
    bytes: &[u8],
) -> Result<Option<BuiltPayload>> {
    let built = built_payload_from_validated(ty, version, bytes)?;
    if let Some(view) = built.as_ref().and_then(BuiltPayload::view) {
        view.check_bundle()?;
    }
    Ok(built)
}

fn built_payload_from_validated(
    ty: &'static Ty,
    version: u8,
    bytes: &[u8],
) -> Result<Option<BuiltPayload>> {
    schema::validate(ty, bytes)?;
    let f = container_fields(ty, bytes);
    let value = U256::from_le_slice(f[1]);
    let requests = |slice: &[u8]| {
        alloy_eips::eip7685::Requests::from_ssz_bytes(slice).map_err(|e| decode_failed(ty, e))
    };
    Ok(Some(match version {
        3 => {
            let payload =
                ExecutionPayloadV3::from_ssz_bytes(f[0]).map_err(|e| decode_failed(ty, e))?;
            let (commitments, proofs, blobs) = bundle_parts(&schema::BLOBS_BUNDLE_V1, f[2]);
            BuiltPayload::V3(ExecutionPayloadEnvelopeV3 {
                execution_payload: payload,
                block_value: value,
                blobs_bundle: BlobsBundleV1 {
                    commitments,
                    proofs,
                    blobs,
                },
                should_override_builder: f[3][0] == 1,
            })
        }
        4 => {
            let payload =
                ExecutionPayloadV3::from_ssz_bytes(f[0]).map_err(|e| decode_failed(ty, e))?;
            let (commitments, proofs, blobs) = bundle_parts(&schema::BLOBS_BUNDLE_V1, f[2]);
            BuiltPayload::V4(ExecutionPayloadEnvelopeV4 {
                envelope_inner: ExecutionPayloadEnvelopeV3 {
                    execution_payload: payload,
                    block_value: value,
                    blobs_bundle: BlobsBundleV1 {
                        commitments,
                        proofs,
                        blobs,
                    },
                    should_override_builder: f[4][0] == 1,
                },
                execution_requests: requests(f[3])?,
            })
        }
        5 | 6 => {
            let (commitments, proofs, blobs) = bundle_parts(&schema::BLOBS_BUNDLE_V2, f[2]);
            let bundle = BlobsBundleV2 {
                commitments,
                proofs,
                blobs,
            };
            let (requests, override_builder) = (requests(f[3])?, f[4][0] == 1);
            if version == 5 {
                let payload =
                    ExecutionPayloadV3::from_ssz_bytes(f[0]).map_err(|e| decode_failed(ty, e))?;
                BuiltPayload::V5(ExecutionPayloadEnvelopeV5 {
                    execution_payload: payload,
                    block_value: value,
                    blobs_bundle: bundle,
                    should_override_builder: override_builder,
                    execution_requests: requests,
                })
            } else {
                let payload =
                    ExecutionPayloadV4::from_ssz_bytes(f[0]).map_err(|e| decode_failed(ty, e))?;
                BuiltPayload::V6(ExecutionPayloadEnvelopeV6 {
                    execution_payload: payload,
                    block_value: value,
                    blobs_bundle: bundle,
                    should_override_builder: override_builder,
                    execution_requests: requests,
                })
            }
        }
        _ => return Ok(None),
    }))
}

/// Decodes a `BlobsV1..V3Response` body (validated here), or `None` for V4.
pub(crate) fn blobs_from_ssz(version: u8, bytes: &[u8]) -> Result<Option<Blobs>> {
    let ty = schema::blobs_response(version);
    if version > 3 {
        return Ok(None);
    }
    schema::validate(ty, bytes)?;
    let list = container_fields(ty, bytes)[0];
    if version == 1 {
        let entry = 1 + schema::BYTES_PER_BLOB + 48;
        let items = list
            .chunks_exact(entry)
            .map(|e| {
                (e[0] == 1).then(|| BlobAndProofV1 {
                    blob: Box::new(Blob::from_slice(&e[1..1 + schema::BYTES_PER_BLOB])),
                    proof: Bytes48::from_slice(&e[1 + schema::BYTES_PER_BLOB..]),
                })
            })
            .collect();
        return Ok(Some(Blobs::V1(items)));
    }
    // Variable-size entries: offsets, then {available, contents offset, BlobAndProofV2}.
    let count = if list.is_empty() {
        0
    } else {
        u32::from_le_bytes(list[..4].try_into().expect("validated")) as usize / 4
    };
    let mut items = Vec::with_capacity(count);
    for i in 0..count {
        let start =
            u32::from_le_bytes(list[i * 4..i * 4 + 4].try_into().expect("validated")) as usize;
        let end = if i + 1 < count {
            u32::from_le_bytes(
                list[(i + 1) * 4..(i + 2) * 4]
                    .try_into()
                    .expect("validated"),
            ) as usize
        } else {
            list.len()
        };
        let entry = &list[start..end];
        let available = entry[0] == 1;
        let contents = &entry[5..];
        let proofs_at = u32::from_le_bytes(
            contents[schema::BYTES_PER_BLOB..schema::BYTES_PER_BLOB + 4]
                .try_into()
                .expect("validated"),
        ) as usize;
        items.push(available.then(|| BlobAndProofV2 {
            blob: Box::new(Blob::from_slice(&contents[..schema::BYTES_PER_BLOB])),
            proofs: fixed_items(&contents[proofs_at..], 48, Bytes48::from_slice),
        }));
    }
    Ok(Some(if version == 2 {
        let all: Option<Vec<_>> = items.into_iter().collect();
        Blobs::V2(Some(all.ok_or_else(|| {
            Error::invalid(
                "blobs/v2 response",
                "an entry is unavailable; v2 is all-or-nothing (204 for a miss)",
            )
        })?))
    } else {
        Blobs::V3(Some(items))
    }))
}

// ---------------------------------------------------------------- JSON decode

/// A blob bundle with its blobs taken out (the `blobs` array is spliced to `[]` before parsing).
#[derive(serde::Deserialize)]
struct BundleWithoutBlobs {
    commitments: Vec<Bytes48>,
    proofs: Vec<Bytes48>,
    blobs: Vec<serde::de::IgnoredAny>,
}

/// A getPayloadV3..V6 result with its blobs taken out.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct EnvelopeWithoutBlobs<P> {
    execution_payload: P,
    block_value: U256,
    blobs_bundle: BundleWithoutBlobs,
    should_override_builder: bool,
    #[serde(default)]
    execution_requests: Option<alloy_eips::eip7685::Requests>,
}

/// Finds the `"blobs"` array of a blob bundle and decodes it, each blob a fixed-width
/// `"0x" + 262144 hex digits` string decoded in place (the hex decoder rejects any quote or
/// backslash, so no separate scan for the end of the string is needed). Returns the blobs and
/// the document with that array replaced by `[]`, or `None` when the document does not have
/// the expected shape; the caller then takes the general path, so this can only be faster,
/// never different.
fn splice_blobs(doc: &[u8]) -> Option<(Vec<Blob>, Vec<u8>)> {
    const KEY: &[u8] = b"\"blobs\"";
    const WIDTH: usize = 2 + 2 * schema::BYTES_PER_BLOB;
    let skip_ws = |mut i: usize| {
        while doc.get(i).is_some_and(is_json_ws) {
            i += 1;
        }
        i
    };
    let mut from = 0;
    let array_start = loop {
        let at = from + memchr::memmem::find(&doc[from..], KEY)?;
        let after = skip_ws(at + KEY.len());
        if doc.get(after) == Some(&b':') {
            break skip_ws(after + 1);
        }
        from = at + KEY.len();
    };
    if doc.get(array_start) != Some(&b'[') {
        return None;
    }
    let mut blobs = Vec::new();
    let mut i = skip_ws(array_start + 1);
    if doc.get(i) == Some(&b']') {
        i += 1;
    } else {
        loop {
            if doc.get(i) != Some(&b'"')
                || doc.get(i + 1..i + 3) != Some(b"0x")
                || doc.get(i + 1 + WIDTH) != Some(&b'"')
            {
                return None;
            }
            let mut blob = Blob::ZERO;
            const_hex::decode_to_slice(&doc[i + 3..i + 1 + WIDTH], blob.as_mut_slice()).ok()?;
            blobs.push(blob);
            i = skip_ws(i + 2 + WIDTH);
            match doc.get(i) {
                Some(b',') => i = skip_ws(i + 1),
                Some(b']') => {
                    i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    let mut rest = Vec::with_capacity(doc.len() - (i - array_start) + 2);
    rest.extend_from_slice(&doc[..array_start]);
    rest.extend_from_slice(b"[]");
    rest.extend_from_slice(&doc[i..]);
    Some((blobs, rest))
}

/// The fields of a V5/V6 answer with its blobs put back (they carry execution requests;
/// `None` when the answer has none).
type CellProofsParts<P> = (P, U256, BlobsBundleV2, bool, alloy_eips::eip7685::Requests);

fn with_cell_proofs<P>(e: EnvelopeWithoutBlobs<P>, blobs: Vec<Blob>) -> Option<CellProofsParts<P>> {
    let bundle = BlobsBundleV2 {
        commitments: e.blobs_bundle.commitments,
        proofs: e.blobs_bundle.proofs,
        blobs,
    };
    Some((
        e.execution_payload,
        e.block_value,
        bundle,
        e.should_override_builder,
        e.execution_requests?,
    ))
}

/// Decodes a getPayloadV3..V6 result through [`splice_blobs`]; `None` means "use serde".
pub(crate) fn built_payload_from_json(
    what: &str,
    version: u8,
    doc: &[u8],
) -> Result<Option<BuiltPayload>> {
    if !(3..=6).contains(&version) {
        return Ok(None);
    }
    let Some((blobs, rest)) = splice_blobs(doc) else {
        return Ok(None);
    };
    json::require_hex_prefix(what, &rest)?;
    fn parse<P: serde::de::DeserializeOwned>(rest: &[u8]) -> Option<EnvelopeWithoutBlobs<P>> {
        serde_json::from_slice(rest)
            .ok()
            .filter(|e: &EnvelopeWithoutBlobs<P>| e.blobs_bundle.blobs.is_empty())
    }
    let per_blob = if version >= 5 {
        schema::CELLS_PER_EXT_BLOB
    } else {
        1
    };
    let check = |b: &BundleWithoutBlobs| {
        b.commitments.len() == blobs.len() && b.proofs.len() == blobs.len() * per_blob
    };
    Ok(match version {
        3 | 4 => {
            let Some(e) = parse::<ExecutionPayloadV3>(&rest) else {
                return Ok(None);
            };
            if !check(&e.blobs_bundle) || (version == 4) != e.execution_requests.is_some() {
                return Ok(None);
            }
            let v3 = ExecutionPayloadEnvelopeV3 {
                execution_payload: e.execution_payload,
                block_value: e.block_value,
                blobs_bundle: BlobsBundleV1 {
                    commitments: e.blobs_bundle.commitments,
                    proofs: e.blobs_bundle.proofs,
                    blobs,
                },
                should_override_builder: e.should_override_builder,
            };
            match e.execution_requests {
                Some(execution_requests) => Some(BuiltPayload::V4(ExecutionPayloadEnvelopeV4 {
                    envelope_inner: v3,
                    execution_requests,
                })),
                None => Some(BuiltPayload::V3(v3)),
            }
        }
        5 => parse::<ExecutionPayloadV3>(&rest)
            .filter(|e| check(&e.blobs_bundle))
            .and_then(|e| with_cell_proofs(e, blobs))
            .map(
                |(
                    execution_payload,
                    block_value,
                    blobs_bundle,
                    should_override_builder,
                    execution_requests,
                )| {
                    BuiltPayload::V5(ExecutionPayloadEnvelopeV5 {
                        execution_payload,
                        block_value,
                        blobs_bundle,
                        should_override_builder,
                        execution_requests,
                    })
                },
            ),
        _ => parse::<ExecutionPayloadV4>(&rest)
            .filter(|e| check(&e.blobs_bundle))
            .and_then(|e| with_cell_proofs(e, blobs))
            .map(
                |(
                    execution_payload,
                    block_value,
                    blobs_bundle,
                    should_override_builder,
                    execution_requests,
                )| {
                    BuiltPayload::V6(ExecutionPayloadEnvelopeV6 {
                        execution_payload,
                        block_value,
                        blobs_bundle,
                        should_override_builder,
                        execution_requests,
                    })
                },
            ),
    })
}

/// JSON's whitespace: space, tab, line feed, carriage return. Not `u8::is_ascii_whitespace`,
/// which also takes form feed: the fast paths would then accept a document serde refuses.
fn is_json_ws(b: &u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// A cursor over a JSON document of a known, fixed shape (getBlobs answers): every method
/// returns `None` at the first byte that is not what the shape allows, and the caller then
/// takes the general serde path — so this path can only be faster, never different.
struct Cursor<'a> {
    doc: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn ws(&mut self) {
        while self.doc.get(self.at).is_some_and(is_json_ws) {
            self.at += 1;
        }
    }

    /// Consumes `token` (after whitespace).
    fn eat(&mut self, token: &[u8]) -> Option<()> {
        self.ws();
        self.doc[self.at..]
            .starts_with(token)
            .then(|| self.at += token.len())
    }

    /// Whether `token` comes next (after whitespace), consuming it if so.
    fn next_is(&mut self, token: &[u8]) -> bool {
        self.eat(token).is_some()
    }

    /// A `"0x…"` string of exactly `out.len()` bytes, decoded into `out`.
    fn hex(&mut self, out: &mut [u8]) -> Option<()> {
        self.eat(b"\"0x")?;
        let end = self.at + 2 * out.len();
        if self.doc.get(end) != Some(&b'"') {
            return None;
        }
        const_hex::decode_to_slice(&self.doc[self.at..end], out).ok()?;
        self.at = end + 1;
        Some(())
    }

    /// An object key: `"name":`.
    fn key(&mut self) -> Option<&'a [u8]> {
        self.eat(b"\"")?;
        let start = self.at;
        let len = memchr::memchr(b'"', &self.doc[start..])?;
        self.at = start + len + 1;
        self.eat(b":")?;
        Some(&self.doc[start..start + len])
    }

    /// `[` item (`,` item)* `]`, calling `item` for each; an empty list is allowed.
    fn list(&mut self, mut item: impl FnMut(&mut Cursor<'a>) -> Option<()>) -> Option<()> {
        self.eat(b"[")?;
        if self.next_is(b"]") {
            return Some(());
        }
        loop {
            item(self)?;
            if self.next_is(b"]") {
                return Some(());
            }
            self.eat(b",")?;
        }
    }

    fn end(&mut self) -> Option<()> {
        self.ws();
        (self.at == self.doc.len()).then_some(())
    }
}

/// One getBlobs entry: `{"blob": …, "proof": …}` (V1) or `{"blob": …, "proofs": […]}`
/// (V2/V3), keys in any order, each exactly once.
fn blob_entry(c: &mut Cursor<'_>, cell_proofs: bool) -> Option<(Box<Blob>, Vec<Bytes48>)> {
    c.eat(b"{")?;
    // The blob is decoded into its final heap place: moving 128 KiB arrays by value from
    // entry to list to answer cost more than the decode itself (8.9 ms against 6.1 ms through
    // serde for 72 blobs, measured).
    let (mut blob, mut proofs) = (None::<Box<Blob>>, None::<Vec<Bytes48>>);
    loop {
        match c.key()? {
            b"blob" if blob.is_none() => {
                let mut b: Box<Blob> = Box::default();
                c.hex(b.as_mut_slice())?;
                blob = Some(b);
            }
            b"proof" if !cell_proofs && proofs.is_none() => {
                let mut p = Bytes48::ZERO;
                c.hex(p.as_mut_slice())?;
                proofs = Some(vec![p]);
            }
            b"proofs" if cell_proofs && proofs.is_none() => {
                let mut list = Vec::with_capacity(schema::CELLS_PER_EXT_BLOB);
                c.list(|c| {
                    let mut p = Bytes48::ZERO;
                    c.hex(p.as_mut_slice())?;
                    list.push(p);
                    Some(())
                })?;
                proofs = Some(list);
            }
            _ => return None,
        }
        if c.next_is(b"}") {
            break;
        }
        c.eat(b",")?;
    }
    Some((blob?, proofs?))
}

/// Decodes a getBlobsV1/V2/V3 result at fixed width (blobs and proofs straight from hex);
/// `None` means "use serde" (another shape, a V4 answer, or anything unexpected).
pub(crate) fn blobs_from_json(version: u8, doc: &[u8]) -> Option<Blobs> {
    let mut c = Cursor { doc, at: 0 };
    if version != 1 && c.next_is(b"null") {
        c.end()?;
        return match version {
            2 => Some(Blobs::V2(None)),
            3 => Some(Blobs::V3(None)),
            _ => None,
        };
    }
    let cell_proofs = match version {
        1 => false,
        2 | 3 => true,
        _ => return None,
    };
    let mut entries: Vec<Option<(Box<Blob>, Vec<Bytes48>)>> = Vec::new();
    c.list(|c| {
        // V2 is all or nothing: no `null` entries.
        if version != 2 && c.next_is(b"null") {
            entries.push(None);
        } else {
            entries.push(Some(blob_entry(c, cell_proofs)?));
        }
        Some(())
    })?;
    c.end()?;
    Some(match version {
        1 => Blobs::V1(
            entries
                .into_iter()
                .map(|e| {
                    e.map(|(blob, mut proofs)| BlobAndProofV1 {
                        blob,
                        proof: proofs.pop().expect("one proof parsed"),
                    })
                })
                .collect(),
        ),
        2 => Blobs::V2(Some(
            entries
                .into_iter()
                .map(|e| e.map(|(blob, proofs)| BlobAndProofV2 { blob, proofs }))
                .collect::<Option<Vec<_>>>()?,
        )),
        _ => Blobs::V3(Some(
            entries
                .into_iter()
                .map(|e| e.map(|(blob, proofs)| BlobAndProofV2 { blob, proofs }))
                .collect(),
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(blobs: &[&str]) -> String {
        format!(
            r#"{{"blobsBundle":{{"commitments":[],"proofs":[], "blobs" : [{}] }},"x":1}}"#,
            blobs.join(" , ")
        )
    }

    #[test]
    fn splices_fixed_width_blobs_and_leaves_the_rest() {
        let blob = format!("\"0x{}\"", "ab".repeat(schema::BYTES_PER_BLOB));
        let (blobs, rest) = splice_blobs(doc(&[&blob, &blob]).as_bytes()).unwrap();
        assert_eq!(blobs.len(), 2);
        assert!(blobs[1].iter().all(|b| *b == 0xab));
        assert_eq!(
            String::from_utf8(rest).unwrap(),
            r#"{"blobsBundle":{"commitments":[],"proofs":[], "blobs" : [] },"x":1}"#
        );
        let (blobs, _) = splice_blobs(doc(&[]).as_bytes()).unwrap();
        assert!(blobs.is_empty());
    }

    #[test]
    fn anything_unexpected_falls_back() {
        let short = format!("\"0x{}\"", "ab".repeat(10));
        let bad_hex = format!("\"0x{}zz\"", "ab".repeat(schema::BYTES_PER_BLOB - 1));
        let escaped = format!("\"0x{}\\\"\"", "ab".repeat(schema::BYTES_PER_BLOB - 1));
        let no_prefix = format!("\"{}\"", "ab".repeat(schema::BYTES_PER_BLOB + 1));
        for blob in [short, bad_hex, escaped, no_prefix] {
            assert!(splice_blobs(doc(&[&blob]).as_bytes()).is_none());
        }
        assert!(splice_blobs(br#"{"blobs": 5}"#).is_none());
        assert!(splice_blobs(br#"{"other":"blobs"}"#).is_none());
    }

    fn entry(seed: u8, version: u8, reorder: bool) -> String {
        let blob = format!(
            "\"0x{}\"",
            format!("{seed:02x}").repeat(schema::BYTES_PER_BLOB)
        );
        let proof = |i: usize| format!("\"0x{}\"", format!("{:02x}", i as u8 ^ seed).repeat(48));
        let proofs = if version == 1 {
            format!("\"proof\": {}", proof(0))
        } else {
            let list: Vec<String> = (0..schema::CELLS_PER_EXT_BLOB).map(proof).collect();
            format!("\"proofs\":[ {} ]", list.join(","))
        };
        if reorder {
            format!("{{ {proofs} , \"blob\" : {blob} }}")
        } else {
            format!("{{\"blob\":{blob},{proofs}}}")
        }
    }

    fn serde(version: u8, doc: &str) -> Blobs {
        match version {
            1 => Blobs::V1(serde_json::from_str(doc).unwrap()),
            2 => Blobs::V2(serde_json::from_str(doc).unwrap()),
            _ => Blobs::V3(serde_json::from_str(doc).unwrap()),
        }
    }

    #[test]
    fn blobs_answers_decode_as_serde_decodes_them() {
        for version in [1u8, 2, 3] {
            let mut entries = vec![entry(1, version, false), entry(2, version, true)];
            if version != 2 {
                entries.insert(1, "null".into());
            }
            let doc = format!(" [ {} ] ", entries.join(" ,\n"));
            assert_eq!(
                blobs_from_json(version, doc.as_bytes()),
                Some(serde(version, &doc)),
                "V{version}"
            );
            assert_eq!(
                blobs_from_json(version, b"[]"),
                Some(serde(version, "[]")),
                "V{version} empty"
            );
        }
        assert_eq!(blobs_from_json(2, b" null "), Some(Blobs::V2(None)));
        assert_eq!(blobs_from_json(3, b"null"), Some(Blobs::V3(None)));
    }

    #[test]
    fn unusual_blobs_answers_fall_back_to_serde() {
        let good = entry(1, 2, false);
        let cases = [
            // A null entry in V2 (all or nothing), an unknown key, a key twice, a short blob,
            // a missing proof list, trailing bytes, a V1 proof list.
            format!("[{good},null]"),
            format!("[{}]", good.replacen("{", "{\"extra\":1,", 1)),
            format!(
                "[{}]",
                good.replacen(
                    "{",
                    &format!("{{\"blob\":\"0x{}\",", "00".repeat(schema::BYTES_PER_BLOB)),
                    1,
                )
            ),
            format!("[{}]", good.replacen("0x0101", "0x01", 1)),
            format!(
                "[{}]",
                good.split(",\"proofs\"").next().unwrap().to_string() + "}"
            ),
            format!("[{good}] x"),
        ];
        for doc in &cases {
            assert_eq!(
                blobs_from_json(2, doc.as_bytes()),
                None,
                "{}",
                &doc[..doc.len().min(80)]
            );
        }
        assert_eq!(blobs_from_json(1, format!("[{good}]").as_bytes()), None);
        assert_eq!(blobs_from_json(4, b"[]"), None);
    }
}
