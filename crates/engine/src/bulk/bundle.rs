//! The getPayload answers from Cancun on: a built payload with its blob bundle, in both
//! codecs. JSON: the writer of the result in serde's key order; the fixed-shape reader (the
//! payload field by field, the blobs decoded in place, or only counted); the splice that lets
//! serde read all but the bundle; and serde reading it with each blob checked but not decoded,
//! for the checks without KZG. SSZ: the validated container sliced, each blob copied once.
//! The differential tests against serde are at the end of the file.

use alloy_eips::eip4844::{Blob, Bytes48};
use alloy_primitives::U256;
use alloy_rpc_types_engine::{
    BlobsBundleV1, BlobsBundleV2, ExecutionPayloadEnvelopeV3, ExecutionPayloadEnvelopeV4,
    ExecutionPayloadEnvelopeV5, ExecutionPayloadEnvelopeV6, ExecutionPayloadV3, ExecutionPayloadV4,
};
use ssz::Decode;

use super::{CheckedBlob, decode_failed, fixed_items};
use crate::{
    error::{Error, Result},
    fixed_json::{
        read::{bytes_list, payload_v3},
        write::{
            hex_len, payload_json_len, payload_v4_json_len, push_hex_list, push_payload_v3,
            push_serde,
        },
    },
    json::{
        self,
        read::{Cursor, once, skip_ws},
    },
    message::BuiltPayload,
    method::{AnswerBlobs, MethodSpec},
    ssz::{self as schema, SszField, Ty, container_fields, encode_container},
};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::method;

    /// The row of `engine_getPayloadV{n}`.
    fn get_payload(n: u8) -> &'static MethodSpec {
        method::by_name(&format!("engine_getPayloadV{n}")).unwrap()
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
}
