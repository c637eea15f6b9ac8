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
use ssz::Decode;

use crate::{
    error::{Error, Result},
    fixed_json::{
        read::{bytes_list, payload_v3},
        write::{
            hex_len, payload_json_len, payload_v4_json_len, push_hex, push_hex_list,
            push_payload_v3, push_serde,
        },
    },
    json::{
        self,
        read::{Cursor, once, skip_ws},
    },
    message::{Blobs, BuiltPayload},
    method::{AnswerBlobs, MethodSpec},
    ssz::{self as schema, SszError, SszField, SszProblem, Ty, container_fields, encode_container},
};

// ---------------------------------------------------------------- JSON

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

    /// Bytes the payload's JSON takes, about (at least).
    fn payload_json_len(&self) -> usize {
        match self.payload {
            PayloadRef::V3(p) => payload_json_len(
                &p.payload_inner.payload_inner,
                p.payload_inner.withdrawals.len(),
            ),
            PayloadRef::V4(p) => payload_v4_json_len(p),
        }
    }

    /// The JSON-RPC result, in the key order of alloy's serde impls.
    pub(crate) fn to_json(&self) -> Result<Vec<u8>> {
        // Sized once for the whole answer: a 20 MB buffer that grows is copied each time.
        let requests = self
            .requests
            .map_or(0, |r| r.iter().map(|b| b.len() * 2 + 5).sum::<usize>());
        let mut out = Vec::with_capacity(
            hex_len(self.commitments)
                + hex_len(self.proofs)
                + hex_len(self.blobs)
                + self.payload_json_len()
                + requests
                + 1024,
        );
        out.extend_from_slice(b"{\"executionPayload\":");
        match self.payload {
            PayloadRef::V3(p) => push_payload_v3(&mut out, p),
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
fn bundle_parts(ty: &'static Ty, bytes: &[u8]) -> BundleParts {
    let f = container_fields(ty, bytes);
    let blobs = fixed_items(f[2], schema::BYTES_PER_BLOB, Blob::from_slice);
    BundleParts {
        commitments: fixed_items(f[0], 48, Bytes48::from_slice),
        proofs: fixed_items(f[1], 48, Bytes48::from_slice),
        blob_count: blobs.len(),
        blobs,
    }
}

/// Decodes a validated `BuiltPayload` of a row whose answer carries a blob bundle (`ty`, the
/// container of its fork), or `None` for rows without one.
pub(crate) fn built_payload_from_ssz(
    ty: &'static Ty,
    m: &MethodSpec,
    bytes: &[u8],
) -> Result<Option<BuiltPayload>> {
    let built = built_payload_from_validated(ty, m, bytes)?;
    if let Some(view) = built.as_ref().and_then(BuiltPayload::view) {
        view.check_bundle()?;
    }
    Ok(built)
}

/// The fields of a `BuiltPayload` container in order: payload, value, bundle, the execution
/// requests when the row's fork has them, the override flag.
fn built_payload_from_validated(
    ty: &'static Ty,
    m: &MethodSpec,
    bytes: &[u8],
) -> Result<Option<BuiltPayload>> {
    if m.blobs != AnswerBlobs::Bundle {
        return Ok(None);
    }
    schema::validate(ty, bytes)?;
    let f = container_fields(ty, bytes);
    let failed = |e| decode_failed(ty, e);
    let payload = if m.latest_fork().has_block_access_list() {
        ReadPayload::V4(ExecutionPayloadV4::from_ssz_bytes(f[0]).map_err(failed)?)
    } else {
        ReadPayload::V3(ExecutionPayloadV3::from_ssz_bytes(f[0]).map_err(failed)?)
    };
    let bundle_ty = if m.cell_proofs() {
        &schema::BLOBS_BUNDLE_V2
    } else {
        &schema::BLOBS_BUNDLE_V1
    };
    let (requests, override_at) = if m.has_requests() {
        let requests = alloy_eips::eip7685::Requests::from_ssz_bytes(f[3]).map_err(failed)?;
        (Some(requests), 4)
    } else {
        (None, 3)
    };
    let parts = bundle_parts(bundle_ty, f[2]);
    let value = U256::from_le_slice(f[1]);
    let built = build(m, payload, value, parts, f[override_at][0] == 1, requests);
    Ok(Some(built.ok_or_else(|| {
        Error::invalid(ty.name(), "the container does not give the method's answer")
    })?))
}

/// Decodes a `BlobsV1..V3Response` body (validated here), or `None` for a row whose answer has
/// no blob entries (V4: cells).
pub(crate) fn blobs_from_ssz(m: &MethodSpec, bytes: &[u8]) -> Result<Option<Blobs>> {
    let AnswerBlobs::Entries { null_entries, .. } = m.blobs else {
        return Ok(None);
    };
    let ty = schema::blobs_response(m.version);
    schema::validate(ty, bytes)?;
    let list = container_fields(ty, bytes)[0];
    if !m.cell_proofs() {
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
    let items = cell_proof_entries(list);
    Ok(Some(if null_entries {
        Blobs::V3(Some(items))
    } else {
        let all: Option<Vec<_>> = items.into_iter().collect();
        Blobs::V2(Some(all.ok_or_else(|| {
            Error::invalid(
                "blobs/v2 response",
                "an entry is unavailable; v2 is all-or-nothing (204 for a miss)",
            )
        })?))
    }))
}

/// The entries of a validated list of variable-size `BlobAndProofV2` entries: offsets, then
/// per entry {available, contents offset, blob, proofs offset, proofs}.
fn cell_proof_entries(list: &[u8]) -> Vec<Option<BlobAndProofV2>> {
    let offset =
        |at: usize| u32::from_le_bytes(list[at..at + 4].try_into().expect("validated")) as usize;
    let count = if list.is_empty() { 0 } else { offset(0) / 4 };
    let mut items = Vec::with_capacity(count);
    for i in 0..count {
        let end = if i + 1 < count {
            offset((i + 1) * 4)
        } else {
            list.len()
        };
        let entry = &list[offset(i * 4)..end];
        let contents = &entry[5..];
        let proofs_at = u32::from_le_bytes(
            contents[schema::BYTES_PER_BLOB..schema::BYTES_PER_BLOB + 4]
                .try_into()
                .expect("validated"),
        ) as usize;
        items.push((entry[0] == 1).then(|| BlobAndProofV2 {
            blob: Box::new(Blob::from_slice(&contents[..schema::BYTES_PER_BLOB])),
            proofs: fixed_items(&contents[proofs_at..], 48, Bytes48::from_slice),
        }));
    }
    items
}

// ---------------------------------------------------------------- JSON decode

/// A blob bundle whose blobs serde reads as `B`: ignored (the `blobs` array spliced to `[]`
/// before parsing) or checked without being decoded ([`CheckedBlob`]).
#[derive(serde::Deserialize)]
struct BundleOf<B> {
    commitments: Vec<Bytes48>,
    proofs: Vec<Bytes48>,
    blobs: Vec<B>,
}

/// A getPayloadV3..V6 result whose blobs serde reads as `B` and its execution requests as
/// `R` (ignored, as alloy's envelopes ignore an unknown member, where the row has none).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct EnvelopeOf<P, B, R = alloy_eips::eip7685::Requests> {
    execution_payload: P,
    block_value: U256,
    blobs_bundle: BundleOf<B>,
    should_override_builder: bool,
    #[serde(default = "absent")]
    execution_requests: Option<R>,
}

/// A member left out of a document: `None` (serde's `default` would ask `R: Default`).
fn absent<R>() -> Option<R> {
    None
}

/// The execution requests of an envelope as read: kept, or ignored.
trait ReadRequests: serde::de::DeserializeOwned {
    /// The requests, when they are kept.
    fn kept(self) -> Option<alloy_eips::eip7685::Requests>;
}

impl ReadRequests for alloy_eips::eip7685::Requests {
    fn kept(self) -> Option<alloy_eips::eip7685::Requests> {
        Some(self)
    }
}

impl ReadRequests for serde::de::IgnoredAny {
    fn kept(self) -> Option<alloy_eips::eip7685::Requests> {
        None
    }
}

/// An execution payload as serde reads it, into the payload of a built payload.
trait ReadPayloadOf: serde::de::DeserializeOwned {
    /// The payload.
    fn read(self) -> ReadPayload;
}

impl ReadPayloadOf for ExecutionPayloadV3 {
    fn read(self) -> ReadPayload {
        ReadPayload::V3(self)
    }
}

impl ReadPayloadOf for ExecutionPayloadV4 {
    fn read(self) -> ReadPayload {
        ReadPayload::V4(self)
    }
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

/// What a reader does with the blobs of an answer.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum BlobContents {
    /// Decodes each blob from hex.
    Decode,
    /// Checks each blob's width, quotes and hex digits, and keeps only the count: for checks
    /// that never look inside a blob (counts, commitments, the payload).
    Count,
    /// As `Count`, in a document whose blobs' digits were checked and left out when it was
    /// joined (each blob is `"0x"`).
    CountLeftOut,
}

impl BlobContents {
    /// Counting the blobs of a document whose digits were left out or not.
    fn counted(digits_left_out: bool) -> BlobContents {
        if digits_left_out {
            BlobContents::CountLeftOut
        } else {
            BlobContents::Count
        }
    }
}

/// A blob bundle's three lists, decoded (the blobs only with [`BlobContents::Decode`]).
struct BundleParts {
    commitments: Vec<Bytes48>,
    proofs: Vec<Bytes48>,
    blobs: Vec<Blob>,
    /// How many blobs the bundle holds, decoded or not.
    blob_count: usize,
}

/// Finds the `"blobsBundle"` object of a getPayload result and decodes its lists straight from
/// hex: commitments and proofs at 48 bytes, blobs at fixed width (`"0x" + 262144 hex digits`,
/// decoded in place; the hex decoder rejects any quote or backslash, so no separate scan for
/// the end of a string is needed). Returns them and the document with the object replaced by
/// empty lists, or `None` when the document does not have the expected shape; the caller then
/// takes the general path, so this can only be faster, never different.
///
/// Measured on a 72-blob getPayloadV5 result: serde took longer over the 9,216 cell proofs
/// than this takes over the blobs.
fn splice_bundle(doc: &[u8]) -> Option<(BundleParts, Vec<u8>)> {
    const KEY: &[u8] = b"\"blobsBundle\"";
    let mut c = Cursor::new(doc);
    let object_start = loop {
        c.at += memchr::memmem::find(&doc[c.at..], KEY)? + KEY.len();
        if c.next_is(b":") {
            c.ws();
            break c.at;
        }
    };
    let parts = bundle(&mut c, BlobContents::Decode)?;
    const EMPTY: &[u8] = br#"{"commitments":[],"proofs":[],"blobs":[]}"#;
    let mut rest = Vec::with_capacity(doc.len() - (c.at - object_start) + EMPTY.len());
    rest.extend_from_slice(&doc[..object_start]);
    rest.extend_from_slice(EMPTY);
    rest.extend_from_slice(&doc[c.at..]);
    Some((parts, rest))
}

/// The blob bundle object at the cursor: its three lists, keys in any order, each once.
fn bundle(c: &mut Cursor<'_>, contents: BlobContents) -> Option<BundleParts> {
    let (mut commitments, mut proofs, mut blobs) = (None, None, None);
    c.object(|c, key| match key {
        b"commitments" => {
            let v = c.list_of(Cursor::fixed);
            once(&mut commitments, v)
        }
        b"proofs" => {
            let v = c.list_of(Cursor::fixed);
            once(&mut proofs, v)
        }
        b"blobs" => {
            c.ws();
            let (list, count, end) = fixed_width_blobs(c.doc, c.at, contents)?;
            c.at = end;
            once(&mut blobs, Some((list, count)))
        }
        _ => None,
    })?;
    let (blobs, blob_count) = blobs?;
    Some(BundleParts {
        commitments: commitments?,
        proofs: proofs?,
        blobs,
        blob_count,
    })
}

/// A getPayloadV3..V5 result read whole at its fixed shape (no serde at all): the payload
/// field by field, the bundle from hex; with the number of blobs it holds (unless
/// [`BlobContents::Decode`], the bundle's `blobs` list is left empty). `None` means "try the
/// splice, then serde".
fn built_payload_whole(
    m: &MethodSpec,
    doc: &[u8],
    contents: BlobContents,
) -> Option<(BuiltPayload, usize)> {
    // The payload is read field by field in its V3 shape only (Cancun to Osaka).
    if m.blobs != AnswerBlobs::Bundle || m.latest_fork().has_block_access_list() {
        return None;
    }
    let mut c = Cursor::new(doc);
    let (mut payload, mut value, mut parts, mut override_builder, mut requests) =
        (None, None, None, None, None);
    c.object(|c, key| match key {
        b"executionPayload" => {
            let v = payload_v3(c);
            once(&mut payload, v)
        }
        b"blockValue" => {
            let v = c.u256();
            once(&mut value, v)
        }
        b"blobsBundle" => {
            let v = bundle(c, contents);
            once(&mut parts, v)
        }
        b"shouldOverrideBuilder" => {
            let v = c.bool();
            once(&mut override_builder, v)
        }
        b"executionRequests" => {
            let v = bytes_list(c);
            once(&mut requests, v)
        }
        _ => None,
    })?;
    c.end()?;
    let parts = parts?;
    let blob_count = parts.blob_count;
    let built = assemble(
        m,
        ReadPayload::V3(payload?),
        value?,
        parts,
        override_builder?,
        requests.map(Into::into),
    )?;
    Some((built, blob_count))
}

/// A getPayloadV3..V5 result read at its fixed shape without decoding its blobs (each checked
/// for width, quotes and hex digits, here or when its digits were left out): the payload with
/// an empty `blobs` list, and how many blobs the answer holds. `None` for any other shape or
/// version.
pub(crate) fn built_payload_without_blobs(
    m: &MethodSpec,
    doc: &[u8],
    digits_left_out: bool,
) -> Option<(BuiltPayload, usize)> {
    built_payload_whole(m, doc, BlobContents::counted(digits_left_out))
}

/// The payload of a getPayload result: the V3 shape (Cancun..Osaka) or the V4 (Amsterdam).
enum ReadPayload {
    V3(ExecutionPayloadV3),
    V4(ExecutionPayloadV4),
}

/// A getPayloadV3..V6 result from its parts, however they were read (the fixed-shape cursor
/// or the splice with serde); `None` when the parts do not make one of that version: a
/// bundle whose lists disagree, execution requests where there are none or the reverse.
fn assemble(
    m: &MethodSpec,
    payload: ReadPayload,
    value: U256,
    parts: BundleParts,
    override_builder: bool,
    requests: Option<alloy_eips::eip7685::Requests>,
) -> Option<BuiltPayload> {
    let per_blob = if m.cell_proofs() {
        schema::CELLS_PER_EXT_BLOB
    } else {
        1
    };
    if parts.commitments.len() != parts.blob_count
        || parts.proofs.len() != parts.blob_count * per_blob
    {
        return None;
    }
    build(m, payload, value, parts, override_builder, requests)
}

/// The built payload of the row `m` from its parts, its variant given by the row's shape
/// (payload version, proofs per blob, requests); `None` when the parts are not of that shape.
/// The bundle's lists are not compared here.
fn build(
    m: &MethodSpec,
    payload: ReadPayload,
    value: U256,
    parts: BundleParts,
    override_builder: bool,
    requests: Option<alloy_eips::eip7685::Requests>,
) -> Option<BuiltPayload> {
    if m.has_requests() != requests.is_some() {
        return None;
    }
    let (commitments, proofs, blobs) = (parts.commitments, parts.proofs, parts.blobs);
    Some(match (payload, m.cell_proofs(), requests) {
        (ReadPayload::V3(payload), false, requests) => {
            let envelope = ExecutionPayloadEnvelopeV3 {
                execution_payload: payload,
                block_value: value,
                blobs_bundle: BlobsBundleV1 {
                    commitments,
                    proofs,
                    blobs,
                },
                should_override_builder: override_builder,
            };
            match requests {
                Some(execution_requests) => BuiltPayload::V4(ExecutionPayloadEnvelopeV4 {
                    envelope_inner: envelope,
                    execution_requests,
                }),
                None => BuiltPayload::V3(envelope),
            }
        }
        (ReadPayload::V3(payload), true, Some(execution_requests)) => {
            BuiltPayload::V5(ExecutionPayloadEnvelopeV5 {
                execution_payload: payload,
                block_value: value,
                blobs_bundle: BlobsBundleV2 {
                    commitments,
                    proofs,
                    blobs,
                },
                should_override_builder: override_builder,
                execution_requests,
            })
        }
        (ReadPayload::V4(payload), true, Some(execution_requests)) => {
            BuiltPayload::V6(ExecutionPayloadEnvelopeV6 {
                execution_payload: payload,
                block_value: value,
                blobs_bundle: BlobsBundleV2 {
                    commitments,
                    proofs,
                    blobs,
                },
                should_override_builder: override_builder,
                execution_requests,
            })
        }
        _ => return None,
    })
}

/// The JSON array of blobs starting at `doc[at]`, each `"0x" + 262144 hex digits`; returns
/// the blobs (none unless [`BlobContents::Decode`]), how many there are, and the index after
/// the array.
fn fixed_width_blobs(
    doc: &[u8],
    at: usize,
    contents: BlobContents,
) -> Option<(Vec<Blob>, usize, usize)> {
    let width = match contents {
        BlobContents::CountLeftOut => 2,
        _ => 2 + 2 * schema::BYTES_PER_BLOB,
    };
    let skip_ws = |i: usize| skip_ws(doc, i);
    if doc.get(at) != Some(&b'[') {
        return None;
    }
    // First pass: where each blob's digits are (a jump per blob, at fixed width), so the list
    // is allocated once. Growing it as blobs come would move every blob again at each
    // doubling; decoding into a local and pushing it would move each once more (measured:
    // moves and page faults of those copies were half of the decode time at 72 blobs).
    let mut digits = Vec::new();
    let mut i = skip_ws(at + 1);
    if doc.get(i) == Some(&b']') {
        return Some((Vec::new(), 0, i + 1));
    }
    loop {
        if doc.get(i) != Some(&b'"')
            || doc.get(i + 1..i + 3) != Some(b"0x")
            || doc.get(i + 1 + width) != Some(&b'"')
        {
            return None;
        }
        digits.push(i + 3..i + 1 + width);
        i = skip_ws(i + 2 + width);
        match doc.get(i) {
            Some(b',') => i = skip_ws(i + 1),
            Some(b']') => break,
            _ => return None,
        }
    }
    let count = digits.len();
    match contents {
        BlobContents::Count => {
            for range in digits {
                const_hex::check(&doc[range]).ok()?;
            }
            return Some((Vec::new(), count, i + 1));
        }
        BlobContents::CountLeftOut => return Some((Vec::new(), count, i + 1)),
        BlobContents::Decode => {}
    }
    let mut blobs: Vec<Blob> = Vec::with_capacity(count);
    for range in digits {
        blobs.push(Blob::ZERO);
        let blob = blobs.last_mut().expect("just pushed");
        const_hex::decode_to_slice(&doc[range], blob.as_mut_slice()).ok()?;
    }
    Some((blobs, count, i + 1))
}

/// Decodes a getPayloadV3..V6 result through [`splice_bundle`]; `None` means "use serde".
pub(crate) fn built_payload_from_json(
    what: &str,
    m: &MethodSpec,
    doc: &[u8],
) -> Result<Option<BuiltPayload>> {
    if m.blobs != AnswerBlobs::Bundle {
        return Ok(None);
    }
    if let Some((built, _)) = built_payload_whole(m, doc, BlobContents::Decode) {
        return Ok(Some(built));
    }
    let Some((parts, rest)) = splice_bundle(doc) else {
        return Ok(None);
    };
    json::require_hex_prefix(what, &rest)?;
    /// The envelope serde read around the spliced bundle, which must have been that bundle
    /// (its lists left empty).
    fn parse<P: serde::de::DeserializeOwned>(
        rest: &[u8],
    ) -> Option<EnvelopeOf<P, serde::de::IgnoredAny>> {
        serde_json::from_slice(rest)
            .ok()
            .filter(|e: &EnvelopeOf<P, serde::de::IgnoredAny>| {
                let b = &e.blobs_bundle;
                b.commitments.is_empty() && b.proofs.is_empty() && b.blobs.is_empty()
            })
    }
    let read = if m.latest_fork().has_block_access_list() {
        parse::<ExecutionPayloadV4>(&rest).map(|e| {
            let payload = ReadPayload::V4(e.execution_payload);
            (
                payload,
                e.block_value,
                e.should_override_builder,
                e.execution_requests,
            )
        })
    } else {
        parse::<ExecutionPayloadV3>(&rest).map(|e| {
            let payload = ReadPayload::V3(e.execution_payload);
            (
                payload,
                e.block_value,
                e.should_override_builder,
                e.execution_requests,
            )
        })
    };
    Ok(
        read.and_then(|(payload, value, override_builder, requests)| {
            assemble(m, payload, value, parts, override_builder, requests)
        }),
    )
}

/// One getBlobs entry: `{"blob": …, "proof": …}` (V1) or `{"blob": …, "proofs": […]}`
/// (V2/V3), keys in any order, each exactly once; the blob as `read_blob` reads it.
fn blob_entry<B>(
    c: &mut Cursor<'_>,
    cell_proofs: bool,
    read_blob: &mut impl FnMut(&mut Cursor<'_>) -> Option<B>,
) -> Option<(B, Vec<Bytes48>)> {
    c.eat(b"{")?;
    let (mut blob, mut proofs) = (None::<B>, None::<Vec<Bytes48>>);
    loop {
        match c.key()? {
            b"blob" if blob.is_none() => blob = Some(read_blob(c)?),
            b"proof" if !cell_proofs && proofs.is_none() => {
                proofs = Some(vec![c.fixed()?]);
            }
            b"proofs" if cell_proofs && proofs.is_none() => {
                let mut list = Vec::with_capacity(schema::CELLS_PER_EXT_BLOB);
                c.list(|c| {
                    list.push(c.fixed()?);
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

/// The entries of a getBlobsV1/V2/V3 result at its fixed shape, each blob as `read_blob`
/// reads it: `Some(None)` for a `null` answer (V2/V3), `None` for any other shape or version.
/// A V2 answer has no `null` entries (it is all or nothing).
#[allow(clippy::type_complexity)]
fn blob_entries<B>(
    m: &MethodSpec,
    doc: &[u8],
    mut read_blob: impl FnMut(&mut Cursor<'_>) -> Option<B>,
) -> Option<Option<Vec<Option<(B, Vec<Bytes48>)>>>> {
    let AnswerBlobs::Entries {
        null_entries,
        null_answer,
    } = m.blobs
    else {
        return None;
    };
    let cell_proofs = m.cell_proofs();
    let mut c = Cursor::new(doc);
    if null_answer && c.next_is(b"null") {
        c.end()?;
        return Some(None);
    }
    let mut entries = Vec::new();
    c.list(|c| {
        if null_entries && c.next_is(b"null") {
            entries.push(None);
        } else {
            entries.push(Some(blob_entry(c, cell_proofs, &mut read_blob)?));
        }
        Some(())
    })?;
    c.end()?;
    Some(Some(entries))
}

/// Decodes a getBlobsV1/V2/V3 result at fixed width (blobs and proofs straight from hex);
/// `None` means "use serde" (another shape, a V4 answer, or anything unexpected).
pub(crate) fn blobs_from_json(m: &MethodSpec, doc: &[u8]) -> Option<Blobs> {
    // Each blob is decoded into its final heap place: moving 128 KiB arrays by value from
    // entry to list to answer cost more than the decode itself (8.9 ms against 6.1 ms through
    // serde for 72 blobs, measured).
    let entries = blob_entries(m, doc, |c| {
        let mut b: Box<Blob> = Box::default();
        c.hex(b.as_mut_slice())?;
        Some(b)
    })?;
    // The variant is the row's shape: one proof per blob (V1), or cell proofs with missing
    // blobs as `null` entries (V3) or as a `null` answer only (V2).
    let partial = matches!(
        m.blobs,
        AnswerBlobs::Entries {
            null_entries: true,
            ..
        }
    );
    let cells = |e: Option<(Box<Blob>, Vec<Bytes48>)>| {
        e.map(|(blob, proofs)| BlobAndProofV2 { blob, proofs })
    };
    Some(match (entries, m.cell_proofs(), partial) {
        (Some(entries), false, _) => Blobs::V1(
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
        (None, _, false) => Blobs::V2(None),
        (None, _, true) => Blobs::V3(None),
        (Some(entries), true, false) => Blobs::V2(Some(
            entries.into_iter().map(cells).collect::<Option<Vec<_>>>()?,
        )),
        (Some(entries), true, true) => Blobs::V3(Some(entries.into_iter().map(cells).collect())),
    })
}

/// A getBlobsV1/V2/V3 result at its fixed shape without decoding its blobs (each checked for
/// width, quotes and hex digits, here or when its digits were left out): per entry, `None`
/// when missing or its number of proofs; `Some(None)` for a `null` answer. `None` for any
/// other shape or version.
#[allow(clippy::type_complexity)]
pub(crate) fn blobs_without_blobs(
    m: &MethodSpec,
    doc: &[u8],
    digits_left_out: bool,
) -> Option<Option<Vec<Option<usize>>>> {
    let bytes = if digits_left_out {
        0
    } else {
        schema::BYTES_PER_BLOB
    };
    let entries = blob_entries(m, doc, |c| const_hex::check(c.hex_of_width(bytes)?).ok())?;
    Some(entries.map(|entries| {
        entries
            .into_iter()
            .map(|e| e.map(|((), proofs)| proofs.len()))
            .collect()
    }))
}

/// A getPayload result (a row with a blob bundle) read by serde with its blobs checked but
/// not decoded (see [`CheckedBlob`]): the payload with an empty `blobs` list, and how many
/// blobs it held. For the answers the fixed-shape reader leaves to serde; it refuses what
/// serde's full decode refuses (lists that disagree included), and reads execution requests
/// only where the row has them, as alloy's envelopes do.
pub(crate) fn built_payload_serde_without_blobs(
    what: &str,
    m: &MethodSpec,
    doc: &[u8],
    digits_left_out: bool,
) -> Result<(BuiltPayload, usize)> {
    json::require_hex_prefix(what, doc)?;
    let (payload, value, parts, override_builder, requests) = if digits_left_out {
        read_envelope::<true>(what, m, doc)?
    } else {
        read_envelope::<false>(what, m, doc)?
    };
    let blobs = parts.blob_count;
    let (c, p) = (parts.commitments.len(), parts.proofs.len());
    assemble(m, payload, value, parts, override_builder, requests)
        .map(|built| (built, blobs))
        .ok_or_else(|| Error::Json {
            what: what.to_string(),
            path: "blobsBundle".into(),
            detail: format!(
                "{c} commitments and {p} proofs for {blobs} blobs, or execution requests missing"
            ),
        })
}

/// The parts of a built payload as read by serde, before they are assembled.
type EnvelopeParts = (
    ReadPayload,
    U256,
    BundleParts,
    bool,
    Option<alloy_eips::eip7685::Requests>,
);

/// The envelope of the row `m` (its payload version, its requests or none) read by serde,
/// each blob checked as [`CheckedBlob<LEFT_OUT>`] checks it.
fn read_envelope<const LEFT_OUT: bool>(
    what: &str,
    m: &MethodSpec,
    doc: &[u8],
) -> Result<EnvelopeParts> {
    fn read<P: ReadPayloadOf, R: ReadRequests, const L: bool>(
        what: &str,
        doc: &[u8],
    ) -> Result<EnvelopeParts> {
        let e: EnvelopeOf<P, CheckedBlob<L>, R> = json::from_slice(what, doc)?;
        let b = e.blobs_bundle;
        let parts = BundleParts {
            commitments: b.commitments,
            proofs: b.proofs,
            blobs: Vec::new(),
            blob_count: b.blobs.len(),
        };
        let requests = e.execution_requests.and_then(ReadRequests::kept);
        Ok((
            e.execution_payload.read(),
            e.block_value,
            parts,
            e.should_override_builder,
            requests,
        ))
    }
    use alloy_eips::eip7685::Requests;
    use serde::de::IgnoredAny;
    match (m.latest_fork().has_block_access_list(), m.has_requests()) {
        (false, false) => read::<ExecutionPayloadV3, IgnoredAny, LEFT_OUT>(what, doc),
        (false, true) => read::<ExecutionPayloadV3, Requests, LEFT_OUT>(what, doc),
        (true, false) => read::<ExecutionPayloadV4, IgnoredAny, LEFT_OUT>(what, doc),
        (true, true) => read::<ExecutionPayloadV4, Requests, LEFT_OUT>(what, doc),
    }
}

/// One getBlobs entry as serde reads it with its blob checked but not decoded.
#[derive(serde::Deserialize)]
struct EntryV1<B> {
    #[allow(dead_code)]
    blob: B,
    #[allow(dead_code)]
    proof: Bytes48,
}

/// One getBlobs entry with cell proofs, its blob checked but not decoded.
#[derive(serde::Deserialize)]
struct EntryV2<B> {
    #[allow(dead_code)]
    blob: B,
    proofs: Vec<Bytes48>,
}

/// A getBlobs result (a row with blob entries) read by serde with its blobs checked but not
/// decoded: per entry, `None` when missing or its number of proofs; `None` for a `null`
/// answer. It refuses what serde's full decode refuses (a `null` entry in V2, a `null`
/// answer in V1).
pub(crate) fn blobs_serde_without_blobs(
    what: &str,
    m: &MethodSpec,
    doc: &[u8],
    digits_left_out: bool,
) -> Result<Option<Vec<Option<usize>>>> {
    fn read<const L: bool>(
        what: &str,
        m: &MethodSpec,
        doc: &[u8],
    ) -> Result<Option<Vec<Option<usize>>>> {
        let AnswerBlobs::Entries { null_entries, .. } = m.blobs else {
            return Err(Error::invalid(what, "no blob entries in this answer"));
        };
        let counts = |proofs: &[Bytes48]| Some(proofs.len());
        Ok(match (m.cell_proofs(), null_entries) {
            (false, _) => {
                let entries: Vec<Option<EntryV1<CheckedBlob<L>>>> = json::from_slice(what, doc)?;
                Some(entries.iter().map(|e| e.as_ref().map(|_| 1)).collect())
            }
            (true, false) => {
                let entries: Option<Vec<EntryV2<CheckedBlob<L>>>> = json::from_slice(what, doc)?;
                entries.map(|e| e.iter().map(|e| counts(&e.proofs)).collect())
            }
            (true, true) => {
                let entries: Option<Vec<Option<EntryV2<CheckedBlob<L>>>>> =
                    json::from_slice(what, doc)?;
                entries.map(|e| {
                    e.iter()
                        .map(|e| e.as_ref().and_then(|e| counts(&e.proofs)))
                        .collect()
                })
            }
        })
    }
    json::require_hex_prefix(what, doc)?;
    if digits_left_out {
        read::<true>(what, m, doc)
    } else {
        read::<false>(what, m, doc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::method;

    /// The row of `engine_getPayloadV{n}`.
    fn get_payload(n: u8) -> &'static MethodSpec {
        method::by_name(&format!("engine_getPayloadV{n}")).unwrap()
    }

    /// The row of `engine_getBlobsV{n}`.
    fn get_blobs(n: u8) -> &'static MethodSpec {
        method::by_name(&format!("engine_getBlobsV{n}")).unwrap()
    }

    fn doc(blobs: &[&str]) -> String {
        let proof = format!("\"0x{}\"", "cd".repeat(48));
        format!(
            r#"{{"blobsBundle": {{"commitments":[{proof}],"proofs":[ {proof} , {proof} ], "blobs" : [{}] }},"x":1}}"#,
            blobs.join(" , ")
        )
    }

    #[test]
    fn splices_the_bundle_and_leaves_the_rest() {
        let blob = format!("\"0x{}\"", "ab".repeat(schema::BYTES_PER_BLOB));
        let (parts, rest) = splice_bundle(doc(&[&blob, &blob]).as_bytes()).unwrap();
        assert_eq!(parts.blobs.len(), 2);
        assert!(parts.blobs[1].iter().all(|b| *b == 0xab));
        assert_eq!((parts.commitments.len(), parts.proofs.len()), (1, 2));
        assert!(parts.proofs[1].iter().all(|b| *b == 0xcd));
        assert_eq!(
            String::from_utf8(rest).unwrap(),
            r#"{"blobsBundle": {"commitments":[],"proofs":[],"blobs":[]},"x":1}"#
        );
        let (parts, _) = splice_bundle(doc(&[]).as_bytes()).unwrap();
        assert!(parts.blobs.is_empty());
    }

    #[test]
    fn anything_unexpected_falls_back() {
        let short = format!("\"0x{}\"", "ab".repeat(10));
        let bad_hex = format!("\"0x{}zz\"", "ab".repeat(schema::BYTES_PER_BLOB - 1));
        let escaped = format!("\"0x{}\\\"\"", "ab".repeat(schema::BYTES_PER_BLOB - 1));
        let no_prefix = format!("\"{}\"", "ab".repeat(schema::BYTES_PER_BLOB + 1));
        for blob in [short, bad_hex, escaped, no_prefix] {
            assert!(splice_bundle(doc(&[&blob]).as_bytes()).is_none());
        }
        assert!(splice_bundle(br#"{"blobsBundle": 5}"#).is_none());
        assert!(splice_bundle(br#"{"other":"blobsBundle"}"#).is_none());
        // A key twice, an unknown key, a short proof.
        assert!(
            splice_bundle(
                br#"{"blobsBundle":{"blobs":[],"blobs":[],"commitments":[],"proofs":[]}}"#
            )
            .is_none()
        );
        assert!(
            splice_bundle(br#"{"blobsBundle":{"blobs":[],"commitments":[],"proofs":[],"x":[]}}"#)
                .is_none()
        );
        assert!(
            splice_bundle(br#"{"blobsBundle":{"blobs":[],"commitments":["0x00"],"proofs":[]}}"#)
                .is_none()
        );
    }

    #[test]
    fn the_fast_bundle_path_is_taken_and_decodes_as_serde_does() {
        let h = "12".repeat(32);
        let a = "34".repeat(20);
        let payload: ExecutionPayloadV3 = serde_json::from_str(&format!(
            r#"{{"parentHash":"0x{h}","feeRecipient":"0x{a}","stateRoot":"0x{h}","receiptsRoot":"0x{h}","logsBloom":"0x{bloom}","prevRandao":"0x{h}","blockNumber":"0x1","gasLimit":"0x1","gasUsed":"0x0","timestamp":"0x1","extraData":"0x01","baseFeePerGas":"0x1","blockHash":"0x{h}","transactions":["0x02aa","0x01bbcc"],"withdrawals":[],"blobGasUsed":"0x20000","excessBlobGas":"0x0"}}"#,
            bloom = "00".repeat(256)
        ))
        .unwrap();
        let blob = |seed: u8| {
            let mut b = Blob::ZERO;
            b.iter_mut()
                .enumerate()
                .for_each(|(i, x)| *x = (i as u8) ^ seed);
            b
        };
        let v1 = BlobsBundleV1 {
            commitments: vec![Bytes48::repeat_byte(1), Bytes48::repeat_byte(2)],
            proofs: vec![Bytes48::repeat_byte(3), Bytes48::repeat_byte(4)],
            blobs: vec![blob(5), blob(6)],
        };
        let v3 = ExecutionPayloadEnvelopeV3 {
            execution_payload: payload.clone(),
            block_value: U256::from(9),
            blobs_bundle: v1,
            should_override_builder: false,
        };
        let requests: alloy_eips::eip7685::Requests =
            vec![alloy_primitives::Bytes::from_static(&[0, 1])].into();
        let v5 = ExecutionPayloadEnvelopeV5 {
            execution_payload: payload,
            block_value: U256::from(9),
            blobs_bundle: BlobsBundleV2 {
                commitments: vec![Bytes48::repeat_byte(1), Bytes48::repeat_byte(2)],
                proofs: (0..2 * schema::CELLS_PER_EXT_BLOB)
                    .map(|i| Bytes48::repeat_byte(i as u8))
                    .collect(),
                blobs: vec![blob(7), blob(8)],
            },
            should_override_builder: true,
            execution_requests: requests,
        };
        let fast = |version, json: Vec<u8>| {
            built_payload_from_json("test", get_payload(version), &json).unwrap()
        };
        assert_eq!(
            fast(3, serde_json::to_vec(&v3).unwrap()),
            Some(BuiltPayload::V3(v3.clone()))
        );
        assert_eq!(
            fast(5, serde_json::to_vec(&v5).unwrap()),
            Some(BuiltPayload::V5(v5.clone()))
        );
        // Too few cell proofs: not for the fast path (serde refuses it with its message).
        let mut short = v5;
        short.blobs_bundle.proofs.pop();
        assert_eq!(fast(5, serde_json::to_vec(&short).unwrap()), None);
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
                blobs_from_json(get_blobs(version), doc.as_bytes()),
                Some(serde(version, &doc)),
                "V{version}"
            );
            assert_eq!(
                blobs_from_json(get_blobs(version), b"[]"),
                Some(serde(version, "[]")),
                "V{version} empty"
            );
        }
        assert_eq!(
            blobs_from_json(get_blobs(2), b" null "),
            Some(Blobs::V2(None))
        );
        assert_eq!(
            blobs_from_json(get_blobs(3), b"null"),
            Some(Blobs::V3(None))
        );
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
                blobs_from_json(get_blobs(2), doc.as_bytes()),
                None,
                "{}",
                &doc[..doc.len().min(80)]
            );
        }
        assert_eq!(
            blobs_from_json(get_blobs(1), format!("[{good}]").as_bytes()),
            None
        );
        assert_eq!(blobs_from_json(get_blobs(4), b"[]"), None);
    }
}
