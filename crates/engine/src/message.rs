//! Typed Engine API messages and their two codecs: JSON-RPC (params or result) and REST-SSZ.
//!
//! A [`Message`] holds one message in the shape of its fork (the alloy JSON-RPC types, which are
//! the richer of the two forms). [`Message::from_json`] / [`Message::to_json`] speak the JSON-RPC
//! side (the `params` array of a request, the `result` of an answer); [`Message::from_ssz`] /
//! [`Message::to_ssz`] speak the REST side, through alloy's `ssz_engine_types` wire types after
//! the bytes have been walked against the spec schema ([`crate::ssz`]). Which shape applies comes
//! from the method table and the fork, never from guessing at the bytes.
//!
//! Not here: HTTP status codes, headers and JSON-RPC envelopes ([`crate::translate`]).

use alloy_eips::{
    eip4844::{BlobAndProofV1, BlobAndProofV2, BlobCellsAndProofsV1},
    eip7685::Requests,
};
use alloy_primitives::{B128, B256, U64};
use alloy_rpc_types_engine::{
    ClientVersionV1, ExecutionPayloadBodyV1, ExecutionPayloadBodyV2, ExecutionPayloadEnvelopeV2,
    ExecutionPayloadEnvelopeV3, ExecutionPayloadEnvelopeV4, ExecutionPayloadEnvelopeV5,
    ExecutionPayloadEnvelopeV6, ExecutionPayloadFieldV2, ExecutionPayloadInputV2,
    ExecutionPayloadV1, ExecutionPayloadV2, ExecutionPayloadV3, ExecutionPayloadV4,
    ForkchoiceState, ForkchoiceUpdated, PayloadAttributes, PayloadId, PayloadStatus,
    ssz_engine_types as wire,
};
use serde::Deserialize;
use ssz::{Decode, Encode};

use crate::{
    bulk,
    capabilities::CapabilitiesDocument,
    error::{Error, Result},
    fixed_json,
    fork::Fork,
    json,
    method::{AnswerBlobs, MessageKind, MethodSpec},
    ssz::{self as schema, SszError, SszField, SszProblem, Ty, encode_container},
    txs::blob_versioned_hashes,
};

/// `engine_newPayloadVn` params, in the shape of the fork.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NewPayload {
    /// Paris: the bare payload.
    Paris(ExecutionPayloadV1),
    /// Shanghai: the payload with withdrawals.
    Shanghai(ExecutionPayloadV2),
    /// Cancun: payload, expected blob versioned hashes, parent beacon block root.
    Cancun(ExecutionPayloadV3, Vec<B256>, B256),
    /// Prague and Osaka: Cancun plus execution requests.
    Prague(ExecutionPayloadV3, Vec<B256>, B256, Requests),
    /// Amsterdam: Prague with the V4 payload.
    Amsterdam(ExecutionPayloadV4, Vec<B256>, B256, Requests),
}

impl NewPayload {
    /// The transactions of the payload.
    pub fn transactions(&self) -> &[alloy_primitives::Bytes] {
        match self {
            NewPayload::Paris(p) => &p.transactions,
            NewPayload::Shanghai(p) => &p.payload_inner.transactions,
            NewPayload::Cancun(p, ..) | NewPayload::Prague(p, ..) => {
                &p.payload_inner.payload_inner.transactions
            }
            NewPayload::Amsterdam(p, ..) => {
                &p.payload_inner.payload_inner.payload_inner.transactions
            }
        }
    }

    /// The expected blob versioned hashes the CL sent (empty before Cancun).
    pub fn versioned_hashes(&self) -> &[B256] {
        match self {
            NewPayload::Paris(_) | NewPayload::Shanghai(_) => &[],
            NewPayload::Cancun(_, h, _)
            | NewPayload::Prague(_, h, ..)
            | NewPayload::Amsterdam(_, h, ..) => h,
        }
    }

    /// The first payload-level field: the common V1 part.
    pub fn payload_v1(&self) -> &ExecutionPayloadV1 {
        match self {
            NewPayload::Paris(p) => p,
            NewPayload::Shanghai(p) => &p.payload_inner,
            NewPayload::Cancun(p, ..) | NewPayload::Prague(p, ..) => &p.payload_inner.payload_inner,
            NewPayload::Amsterdam(p, ..) => &p.payload_inner.payload_inner.payload_inner,
        }
    }
}

/// `engine_forkchoiceUpdatedVn` params.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forkchoice {
    /// Head, safe and finalized block hashes.
    pub state: ForkchoiceState,
    /// Attributes of a payload to build, if any.
    pub attributes: Option<PayloadAttributes>,
    /// Amsterdam `custody_columns` (REST only; as a big-endian bitarray like getBlobsV4's).
    pub custody_columns: Option<B128>,
}

/// `engine_getPayloadVn` result, by method version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuiltPayload {
    /// getPayloadV1: the bare payload.
    V1(ExecutionPayloadV1),
    /// getPayloadV2.
    V2(ExecutionPayloadEnvelopeV2),
    /// getPayloadV3.
    V3(ExecutionPayloadEnvelopeV3),
    /// getPayloadV4.
    V4(ExecutionPayloadEnvelopeV4),
    /// getPayloadV5.
    V5(ExecutionPayloadEnvelopeV5),
    /// getPayloadV6.
    V6(ExecutionPayloadEnvelopeV6),
}

impl BuiltPayload {
    /// Number of blobs in the bundle (0 before Cancun).
    pub fn blob_count(&self) -> usize {
        match self {
            BuiltPayload::V1(_) | BuiltPayload::V2(_) => 0,
            BuiltPayload::V3(e) => e.blobs_bundle.blobs.len(),
            BuiltPayload::V4(e) => e.envelope_inner.blobs_bundle.blobs.len(),
            BuiltPayload::V5(e) => e.blobs_bundle.blobs.len(),
            BuiltPayload::V6(e) => e.blobs_bundle.blobs.len(),
        }
    }
}

impl BuiltPayload {
    /// The payload's V1 fields (hashes, number, timestamp, transactions), whatever the version.
    pub fn payload_v1(&self) -> &ExecutionPayloadV1 {
        match self {
            BuiltPayload::V1(p) => p,
            BuiltPayload::V2(e) => match &e.execution_payload {
                ExecutionPayloadFieldV2::V1(p) => p,
                ExecutionPayloadFieldV2::V2(p) => &p.payload_inner,
            },
            BuiltPayload::V3(e) => &e.execution_payload.payload_inner.payload_inner,
            BuiltPayload::V4(e) => {
                &e.envelope_inner
                    .execution_payload
                    .payload_inner
                    .payload_inner
            }
            BuiltPayload::V5(e) => &e.execution_payload.payload_inner.payload_inner,
            BuiltPayload::V6(e) => {
                &e.execution_payload
                    .payload_inner
                    .payload_inner
                    .payload_inner
            }
        }
    }

    /// The newPayload request importing this payload, with the `versioned_hashes` of its blob
    /// transactions and the parent beacon block `root` of its attributes (from Cancun on;
    /// `None` when a root is needed and not given).
    pub fn to_new_payload(
        &self,
        versioned_hashes: Vec<B256>,
        root: Option<B256>,
    ) -> Option<NewPayload> {
        Some(match self {
            BuiltPayload::V1(p) => NewPayload::Paris(p.clone()),
            BuiltPayload::V2(e) => match &e.execution_payload {
                ExecutionPayloadFieldV2::V1(p) => NewPayload::Paris(p.clone()),
                ExecutionPayloadFieldV2::V2(p) => NewPayload::Shanghai(p.clone()),
            },
            BuiltPayload::V3(e) => {
                NewPayload::Cancun(e.execution_payload.clone(), versioned_hashes, root?)
            }
            BuiltPayload::V4(e) => NewPayload::Prague(
                e.envelope_inner.execution_payload.clone(),
                versioned_hashes,
                root?,
                e.execution_requests.clone(),
            ),
            BuiltPayload::V5(e) => NewPayload::Prague(
                e.execution_payload.clone(),
                versioned_hashes,
                root?,
                e.execution_requests.clone(),
            ),
            BuiltPayload::V6(e) => NewPayload::Amsterdam(
                e.execution_payload.clone(),
                versioned_hashes,
                root?,
                e.execution_requests.clone(),
            ),
        })
    }
}

/// `engine_getPayloadBodiesBy*Vn` result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bodies {
    /// V1 bodies (`null` for unavailable).
    V1(Vec<Option<ExecutionPayloadBodyV1>>),
    /// V2 bodies, with block access lists.
    V2(Vec<Option<ExecutionPayloadBodyV2>>),
}

/// `engine_getBlobsVn` params.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobsRequest {
    /// The versioned hashes asked for.
    pub versioned_hashes: Vec<B256>,
    /// getBlobsV4's cell selection, as the JSON-RPC big-endian 16-byte bitarray.
    pub indices: Option<B128>,
}

/// `engine_getBlobsVn` result; `None` is JSON `null` (REST `204 No Content`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Blobs {
    /// getBlobsV1: `null` per missing blob.
    V1(Vec<Option<BlobAndProofV1>>),
    /// getBlobsV2: all or nothing.
    V2(Option<Vec<BlobAndProofV2>>),
    /// getBlobsV3: `null` per missing blob.
    V3(Option<Vec<Option<BlobAndProofV2>>>),
    /// getBlobsV4: cells by index.
    V4(Option<Vec<Option<BlobCellsAndProofsV1>>>),
}

/// One Engine API message, request or answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// newPayload params.
    NewPayload(NewPayload),
    /// newPayload result.
    PayloadStatus(PayloadStatus),
    /// forkchoiceUpdated params.
    Forkchoice(Forkchoice),
    /// forkchoiceUpdated result.
    ForkchoiceResponse(ForkchoiceUpdated),
    /// getPayload params.
    PayloadId(PayloadId),
    /// getPayload result.
    BuiltPayload(BuiltPayload),
    /// getPayloadBodiesByHash params.
    BodiesByHash(Vec<B256>),
    /// getPayloadBodiesByRange params.
    BodiesByRange {
        /// First block number.
        from: u64,
        /// Number of blocks.
        count: u64,
    },
    /// getPayloadBodies result.
    Bodies(Bodies),
    /// getBlobs params.
    BlobsRequest(BlobsRequest),
    /// getBlobs result.
    Blobs(Blobs),
    /// exchangeCapabilities params or result: method names.
    Capabilities(Vec<String>),
    /// getClientVersionV1 params (one entry) or result.
    ClientVersion(Vec<ClientVersionV1>),
}

fn what(method: &MethodSpec, kind: MessageKind) -> String {
    if kind == method.request {
        format!("{} params", method.name)
    } else {
        format!("{} result", method.name)
    }
}

/// newPayload params of V1/V2 have one element; serde tuples need the exact arity.
#[derive(Deserialize)]
struct One<T>((T,));

/// forkchoiceUpdated params: the attributes may be `null` or left out.
struct FcuParams(ForkchoiceState, Option<PayloadAttributes>);

impl<'de> Deserialize<'de> for FcuParams {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = FcuParams;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("[forkchoiceState, payloadAttributes|null]")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<FcuParams, A::Error> {
                let state = seq
                    .next_element()?
                    .ok_or_else(|| serde::de::Error::invalid_length(0, &self))?;
                let attributes = seq.next_element::<Option<PayloadAttributes>>()?.flatten();
                if seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    return Err(serde::de::Error::invalid_length(3, &self));
                }
                Ok(FcuParams(state, attributes))
            }
        }
        d.deserialize_seq(Visitor)
    }
}

impl Message {
    /// The kind of this message.
    pub fn kind(&self) -> MessageKind {
        match self {
            Message::NewPayload(_) => MessageKind::NewPayload,
            Message::PayloadStatus(_) => MessageKind::PayloadStatus,
            Message::Forkchoice(_) => MessageKind::Forkchoice,
            Message::ForkchoiceResponse(_) => MessageKind::ForkchoiceResponse,
            Message::PayloadId(_) => MessageKind::PayloadId,
            Message::BuiltPayload(_) => MessageKind::BuiltPayload,
            Message::BodiesByHash(_) => MessageKind::BodiesByHashRequest,
            Message::BodiesByRange { .. } => MessageKind::BodiesByRangeRequest,
            Message::Bodies(_) => MessageKind::Bodies,
            Message::BlobsRequest(_) => MessageKind::BlobsRequest,
            Message::Blobs(_) => MessageKind::Blobs,
            Message::Capabilities(_) => MessageKind::Capabilities,
            Message::ClientVersion(_) => MessageKind::ClientVersion,
        }
    }

    /// Decodes the JSON-RPC form: the `params` array when `kind` is the method's request, the
    /// `result` otherwise. `fork` picks the shape where a method serves several forks.
    pub fn from_json(
        method: &'static MethodSpec,
        fork: Fork,
        kind: MessageKind,
        bytes: &[u8],
    ) -> Result<Message> {
        method.check_fork(fork)?;
        let what = what(method, kind);
        let w = what.as_str();
        // The kinds with a fast path (fixed-shape or bulk readers, which only take what serde
        // would read the same) check the prefixes where they fall back to serde.
        let fast = matches!(
            kind,
            MessageKind::NewPayload
                | MessageKind::Forkchoice
                | MessageKind::Bodies
                | MessageKind::BuiltPayload
        );
        if kind.is_all_hex() && !fast {
            json::require_hex_prefix(w, bytes)?;
        }
        Ok(match kind {
            MessageKind::NewPayload => {
                Message::NewPayload(new_payload_from_json(method, fork, w, bytes)?)
            }
            MessageKind::Forkchoice => forkchoice_from_json(w, bytes)?,
            MessageKind::Bodies => Message::Bodies(bodies_from_json(method, w, bytes)?),
            MessageKind::BuiltPayload => Message::BuiltPayload(built_from_json(method, w, bytes)?),
            MessageKind::PayloadStatus => {
                Message::PayloadStatus(json::from_slice(w, &invalid_block_hash_as_invalid(bytes))?)
            }
            MessageKind::ForkchoiceResponse => {
                Message::ForkchoiceResponse(json::from_slice(w, bytes)?)
            }
            MessageKind::PayloadId => {
                Message::PayloadId(json::from_slice::<One<PayloadId>>(w, bytes)?.0.0)
            }
            MessageKind::BodiesByHashRequest => {
                Message::BodiesByHash(json::from_slice::<One<Vec<B256>>>(w, bytes)?.0.0)
            }
            MessageKind::BodiesByRangeRequest => {
                let (from, count) = json::from_slice::<(U64, U64)>(w, bytes)?;
                Message::BodiesByRange {
                    from: from.to(),
                    count: count.to(),
                }
            }
            MessageKind::BlobsRequest => {
                Message::BlobsRequest(if method.blobs == AnswerBlobs::Cells {
                    let (versioned_hashes, indices) =
                        json::from_slice::<(Vec<B256>, B128)>(w, bytes)?;
                    BlobsRequest {
                        versioned_hashes,
                        indices: Some(indices),
                    }
                } else {
                    BlobsRequest {
                        versioned_hashes: json::from_slice::<One<Vec<B256>>>(w, bytes)?.0.0,
                        indices: None,
                    }
                })
            }
            MessageKind::Blobs => Message::Blobs(blobs_from_json(method, w, bytes)?),
            MessageKind::Capabilities if kind == method.request && looks_like_params(bytes) => {
                Message::Capabilities(json::from_slice::<One<Vec<String>>>(w, bytes)?.0.0)
            }
            MessageKind::Capabilities => Message::Capabilities(json::from_slice(w, bytes)?),
            MessageKind::ClientVersion if looks_like_params(bytes) => Message::ClientVersion(vec![
                json::from_slice::<One<ClientVersionV1>>(w, bytes)?.0.0,
            ]),
            MessageKind::ClientVersion => Message::ClientVersion(json::from_slice(w, bytes)?),
        })
    }

    /// Encodes the JSON-RPC form (params array or result), compact.
    pub fn to_json(&self) -> Result<Vec<u8>> {
        match self {
            Message::NewPayload(np) => fixed_json::write::new_payload_json(np),
            Message::PayloadStatus(s) => json::to_vec(s),
            Message::Forkchoice(f) => {
                if f.custody_columns.is_some() {
                    return Err(Error::NoForm {
                        what: "forkchoice custody_columns".into(),
                        form: "JSON-RPC",
                    });
                }
                Ok(fixed_json::write::forkchoice_json(
                    &f.state,
                    f.attributes.as_ref(),
                ))
            }
            Message::ForkchoiceResponse(r) => json::to_vec(r),
            Message::PayloadId(id) => json::to_vec(&(id,)),
            Message::BuiltPayload(b) => match b {
                _ if let Some(view) = b.view() => view.to_json(),
                BuiltPayload::V1(p) => json::to_vec(p),
                BuiltPayload::V2(e) => json::to_vec(e),
                BuiltPayload::V3(e) => json::to_vec(e),
                BuiltPayload::V4(e) => json::to_vec(e),
                BuiltPayload::V5(e) => json::to_vec(e),
                BuiltPayload::V6(e) => json::to_vec(e),
            },
            Message::BodiesByHash(h) => json::to_vec(&(h,)),
            Message::BodiesByRange { from, count } => {
                json::to_vec(&(U64::from(*from), U64::from(*count)))
            }
            Message::Bodies(Bodies::V1(b)) => Ok(fixed_json::write::bodies_v1_json(b)),
            Message::Bodies(Bodies::V2(b)) => json::to_vec(b),
            Message::BlobsRequest(r) => match r.indices {
                Some(indices) => json::to_vec(&(&r.versioned_hashes, indices)),
                None => json::to_vec(&(&r.versioned_hashes,)),
            },
            Message::Blobs(b) if let Some(json) = bulk::blobs_json(b) => Ok(json),
            Message::Blobs(Blobs::V1(b)) => json::to_vec(b),
            Message::Blobs(Blobs::V2(b)) => json::to_vec(b),
            Message::Blobs(Blobs::V3(b)) => json::to_vec(b),
            Message::Blobs(Blobs::V4(b)) => json::to_vec(b),
            Message::Capabilities(c) => json::to_vec(c),
            Message::ClientVersion(c) => json::to_vec(c),
        }
    }

    /// Encodes the JSON-RPC params of a request whose params differ from its result shape
    /// (exchangeCapabilities and getClientVersionV1 wrap their argument in an array).
    pub fn to_json_params(&self) -> Result<Vec<u8>> {
        match self {
            Message::Capabilities(c) => json::to_vec(&(c,)),
            Message::ClientVersion(c) => match c.as_slice() {
                [one] => json::to_vec(&(one,)),
                _ => Err(Error::invalid(
                    "engine_getClientVersionV1 params",
                    "takes exactly one client version",
                )),
            },
            other => other.to_json(),
        }
    }

    /// Decodes the REST body of `kind` for `method` under `fork`: SSZ for the hot-path
    /// resources, the spec's JSON for `/capabilities` and `/identity`. The bytes are walked
    /// against the spec schema first, so faults name a field and an offset.
    pub fn from_ssz(
        method: &'static MethodSpec,
        fork: Fork,
        kind: MessageKind,
        bytes: &[u8],
    ) -> Result<Message> {
        method.check_fork(fork)?;
        let v = method.version;
        Ok(match kind {
            MessageKind::NewPayload => Message::NewPayload(new_payload_from_ssz(fork, bytes)?),
            MessageKind::PayloadStatus => Message::PayloadStatus(
                decode::<wire::PayloadStatus>(&schema::PAYLOAD_STATUS, bytes)?.into(),
            ),
            MessageKind::Forkchoice => Message::Forkchoice(forkchoice_from_ssz(fork, bytes)?),
            MessageKind::ForkchoiceResponse => Message::ForkchoiceResponse(
                decode::<wire::ForkchoiceUpdateResponse>(&schema::FORKCHOICE_RESPONSE, bytes)?
                    .into(),
            ),
            MessageKind::PayloadId => {
                let id: [u8; 8] = bytes.try_into().map_err(|_| {
                    Error::invalid(
                        "payload id",
                        format!("must be 8 bytes, got {}", bytes.len()),
                    )
                })?;
                Message::PayloadId(PayloadId::new(id))
            }
            MessageKind::BuiltPayload => {
                Message::BuiltPayload(built_from_ssz(method, fork, bytes)?)
            }
            MessageKind::BodiesByHashRequest => Message::BodiesByHash(
                decode::<wire::BodiesByHashRequest>(&schema::BODIES_BY_HASH_REQUEST, bytes)?
                    .block_hashes,
            ),
            MessageKind::BodiesByRangeRequest => {
                return Err(Error::NoForm {
                    what: "bodies-by-range request (its from/count are in the URL query)".into(),
                    form: "SSZ",
                });
            }
            MessageKind::Bodies => Message::Bodies(bodies_from_ssz(method, fork, bytes)?),
            MessageKind::BlobsRequest => {
                Message::BlobsRequest(if method.blobs == AnswerBlobs::Cells {
                    let r = decode::<wire::BlobsV4Request>(schema::blobs_request(4), bytes)?;
                    BlobsRequest {
                        versioned_hashes: r.versioned_hashes,
                        indices: Some(bitvector_to_bitarray(r.indices_bitarray)),
                    }
                } else {
                    BlobsRequest {
                        versioned_hashes: decode::<wire::BlobsV1Request>(
                            schema::blobs_request(v),
                            bytes,
                        )?
                        .versioned_hashes,
                        indices: None,
                    }
                })
            }
            MessageKind::Blobs => Message::Blobs(blobs_from_ssz(method, bytes)?),
            MessageKind::Capabilities => {
                let doc: CapabilitiesDocument = json::from_slice("capabilities document", bytes)?;
                Message::Capabilities(doc.to_methods())
            }
            MessageKind::ClientVersion => {
                Message::ClientVersion(json::from_slice("identity", bytes)?)
            }
        })
    }

    /// Encodes the REST body of this message under `fork`: SSZ for the hot-path resources, the
    /// spec's JSON for `/capabilities` and `/identity`.
    pub fn to_ssz(&self, fork: Fork) -> Result<Vec<u8>> {
        match self {
            Message::NewPayload(np) => new_payload_to_ssz(np, fork),
            Message::PayloadStatus(s) => {
                let status = wire::PayloadStatus::try_from(s.clone())
                    .map_err(|e| Error::invalid("payload status", e.to_string()))?;
                Ok(status.as_ssz_bytes())
            }
            Message::Forkchoice(f) => forkchoice_to_ssz(f, fork),
            Message::ForkchoiceResponse(r) => {
                let response = wire::ForkchoiceUpdateResponse::try_from(r.clone())
                    .map_err(|e| Error::invalid("forkchoice response", e.to_string()))?;
                Ok(response.as_ssz_bytes())
            }
            Message::PayloadId(id) => Ok(id.0.to_vec()),
            Message::BuiltPayload(b) => built_to_ssz(b, fork),
            Message::BodiesByHash(h) => {
                check_len("block_hashes", h.len(), schema::MAX_BODIES_REQUEST)?;
                Ok(wire::BodiesByHashRequest {
                    block_hashes: h.clone(),
                }
                .as_ssz_bytes())
            }
            Message::BodiesByRange { .. } => Err(Error::NoForm {
                what: "bodies-by-range request (its from/count are in the URL query)".into(),
                form: "SSZ",
            }),
            Message::Bodies(b) => bodies_to_ssz(b, fork),
            Message::BlobsRequest(r) => {
                check_len(
                    "versioned_hashes",
                    r.versioned_hashes.len(),
                    schema::MAX_BLOBS_REQUEST,
                )?;
                Ok(match r.indices {
                    Some(indices) => wire::BlobsV4Request {
                        versioned_hashes: r.versioned_hashes.clone(),
                        indices_bitarray: bitarray_to_bitvector(indices),
                    }
                    .as_ssz_bytes(),
                    None => wire::BlobsV1Request {
                        versioned_hashes: r.versioned_hashes.clone(),
                    }
                    .as_ssz_bytes(),
                })
            }
            Message::Blobs(b) => blobs_to_ssz(b),
            Message::Capabilities(methods) => {
                json::to_vec(&CapabilitiesDocument::from_methods(methods))
            }
            Message::ClientVersion(c) => json::to_vec(c),
        }
    }

    /// True when this is a `null` getBlobs result, which REST answers with `204 No Content`.
    pub fn is_no_content(&self) -> bool {
        matches!(
            self,
            Message::Blobs(Blobs::V2(None) | Blobs::V3(None) | Blobs::V4(None))
        )
    }
}

/// `INVALID_BLOCK_HASH` (newPayloadV1 only) is `INVALID` everywhere else, REST included.
fn invalid_block_hash_as_invalid(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    const OLD: &[u8] = b"\"INVALID_BLOCK_HASH\"";
    match memchr::memmem::find(bytes, OLD) {
        None => std::borrow::Cow::Borrowed(bytes),
        Some(at) => {
            let mut fixed = bytes[..at].to_vec();
            fixed.extend_from_slice(b"\"INVALID\"");
            fixed.extend_from_slice(&bytes[at + OLD.len()..]);
            std::borrow::Cow::Owned(fixed)
        }
    }
}

fn looks_like_params(bytes: &[u8]) -> bool {
    // exchangeCapabilities params are `[[..]]`, getClientVersionV1 params `[{..}]`; their
    // results are `[".."]` and `[{..},..]`. Tell them apart by the first element.
    let open = json::read::skip_ws(bytes, 0);
    bytes.get(open) == Some(&b'[') && json::read::first_byte(&bytes[open + 1..]) == Some(b'[')
}

/// Walks `bytes` against the spec schema, then decodes them with alloy's type.
pub(crate) fn decode<T: Decode>(ty: &'static Ty, bytes: &[u8]) -> Result<T> {
    schema::validate(ty, bytes)?;
    T::from_ssz_bytes(bytes).map_err(|e| {
        Error::Ssz(SszError {
            container: ty.name(),
            path: ".".into(),
            offset: 0,
            problem: SszProblem::Other(format!("{e:?}")),
        })
    })
}

fn check_len(field: &str, len: usize, max: usize) -> Result<()> {
    if len > max {
        return Err(Error::invalid(
            field,
            format!("{len} entries, the limit is {max}"),
        ));
    }
    Ok(())
}

/// JSON-RPC bitarrays (getBlobsV4 indices) are a big-endian 16-byte number where bit `i`
/// selects cell `i`; SSZ `Bitvector[128]` puts bit `i` in byte `i / 8`, bit `i % 8`. That is
/// the little-endian byte order of the same number.
fn bitarray_to_bitvector(bitarray: B128) -> B128 {
    B128::from(u128::from_be_bytes(bitarray.0).to_le_bytes())
}

fn bitvector_to_bitarray(bitvector: B128) -> B128 {
    B128::from(u128::from_le_bytes(bitvector.0).to_be_bytes())
}

/// newPayload params (`w` names them in errors): the fixed-shape reader, then serde in the
/// shape of the method's version (V2: Paris's payload without withdrawals, Shanghai's with).
fn new_payload_from_json(m: &MethodSpec, fork: Fork, w: &str, bytes: &[u8]) -> Result<NewPayload> {
    if let Some(np) = fixed_json::read::new_payload_from_json(m, fork, bytes) {
        return Ok(np);
    }
    json::require_hex_prefix(w, bytes)?;
    Ok(match m.version {
        1 => NewPayload::Paris(json::from_slice::<One<ExecutionPayloadV1>>(w, bytes)?.0.0),
        2 => {
            let input = json::from_slice::<One<ExecutionPayloadInputV2>>(w, bytes)?
                .0
                .0;
            match (fork, input.withdrawals) {
                (Fork::Paris, None) => NewPayload::Paris(input.execution_payload),
                (Fork::Paris, Some(_)) => {
                    return Err(Error::invalid(w, "a paris payload has no withdrawals"));
                }
                (_, Some(withdrawals)) => NewPayload::Shanghai(ExecutionPayloadV2 {
                    payload_inner: input.execution_payload,
                    withdrawals,
                }),
                (_, None) => {
                    return Err(Error::invalid(w, "a shanghai payload needs withdrawals"));
                }
            }
        }
        3 => {
            let (p, h, r) = json::from_slice::<(ExecutionPayloadV3, Vec<B256>, B256)>(w, bytes)?;
            NewPayload::Cancun(p, h, r)
        }
        4 => {
            let (p, h, r, q) =
                json::from_slice::<(ExecutionPayloadV3, Vec<B256>, B256, Requests)>(w, bytes)?;
            NewPayload::Prague(p, h, r, q)
        }
        _ => {
            let (p, h, r, q) =
                json::from_slice::<(ExecutionPayloadV4, Vec<B256>, B256, Requests)>(w, bytes)?;
            NewPayload::Amsterdam(p, h, r, q)
        }
    })
}

/// forkchoiceUpdated params: the fixed-shape reader, then serde.
fn forkchoice_from_json(w: &str, bytes: &[u8]) -> Result<Message> {
    let (state, attributes) = match fixed_json::read::forkchoice_from_json(bytes) {
        Some(read) => read,
        None => {
            json::require_hex_prefix(w, bytes)?;
            let FcuParams(state, attributes) = json::from_slice(w, bytes)?;
            (state, attributes)
        }
    };
    Ok(Message::Forkchoice(Forkchoice {
        state,
        attributes,
        custody_columns: None,
    }))
}

/// getPayloadBodies results: V1 through the fixed-shape reader, then serde; V2 (with block
/// access lists) through serde.
fn bodies_from_json(m: &MethodSpec, w: &str, bytes: &[u8]) -> Result<Bodies> {
    if m.latest_fork().has_block_access_list() {
        json::require_hex_prefix(w, bytes)?;
        return Ok(Bodies::V2(json::from_slice(w, bytes)?));
    }
    if let Some(bodies) = fixed_json::read::bodies_v1_from_json(bytes) {
        return Ok(Bodies::V1(bodies));
    }
    json::require_hex_prefix(w, bytes)?;
    Ok(Bodies::V1(json::from_slice(w, bytes)?))
}

/// A getPayload result: the bulk reader (which checks the prefixes itself, blob by blob),
/// then serde in the shape of the method's version.
fn built_from_json(m: &MethodSpec, w: &str, bytes: &[u8]) -> Result<BuiltPayload> {
    if let Some(built) = bulk::built_payload_from_json(w, m, bytes)? {
        return Ok(built);
    }
    json::require_hex_prefix(w, bytes)?;
    Ok(match m.version {
        1 => BuiltPayload::V1(json::from_slice(w, bytes)?),
        2 => BuiltPayload::V2(json::from_slice(w, bytes)?),
        3 => BuiltPayload::V3(json::from_slice(w, bytes)?),
        4 => BuiltPayload::V4(json::from_slice(w, bytes)?),
        5 => BuiltPayload::V5(json::from_slice(w, bytes)?),
        _ => BuiltPayload::V6(json::from_slice(w, bytes)?),
    })
}

/// A getBlobs result (its prefixes already checked): decoded at fixed width when it has the
/// usual shape (the same answer through serde took 6.1 ms for 72 blobs, docs/benchmarks.md),
/// else through serde in the shape of the method's version.
fn blobs_from_json(m: &MethodSpec, w: &str, bytes: &[u8]) -> Result<Blobs> {
    if let Some(blobs) = bulk::blobs_from_json(m, bytes) {
        return Ok(blobs);
    }
    Ok(match m.version {
        1 => Blobs::V1(json::from_slice(w, bytes)?),
        2 => Blobs::V2(json::from_slice(w, bytes)?),
        3 => Blobs::V3(json::from_slice(w, bytes)?),
        _ => Blobs::V4(json::from_slice(w, bytes)?),
    })
}

/// A newPayload request body: the fork's `ExecutionPayloadEnvelope`, its expected blob
/// versioned hashes derived from the blob transactions (REST-SSZ drops them).
fn new_payload_from_ssz(fork: Fork, bytes: &[u8]) -> Result<NewPayload> {
    Ok(match fork {
        Fork::Paris => NewPayload::Paris(
            decode::<wire::ExecutionPayloadEnvelopeParis>(schema::payload_envelope(fork), bytes)?
                .payload,
        ),
        Fork::Shanghai => NewPayload::Shanghai(
            decode::<wire::ExecutionPayloadEnvelopeShanghai>(
                schema::payload_envelope(fork),
                bytes,
            )?
            .payload,
        ),
        Fork::Cancun => {
            let e = decode::<wire::ExecutionPayloadEnvelopeCancun>(
                schema::payload_envelope(fork),
                bytes,
            )?;
            let hashes =
                blob_versioned_hashes(&e.payload.payload_inner.payload_inner.transactions)?;
            NewPayload::Cancun(e.payload, hashes, e.parent_beacon_block_root)
        }
        Fork::Prague | Fork::Osaka => {
            let e = decode::<wire::ExecutionPayloadEnvelopePrague>(
                schema::payload_envelope(fork),
                bytes,
            )?;
            let hashes =
                blob_versioned_hashes(&e.payload.payload_inner.payload_inner.transactions)?;
            NewPayload::Prague(
                e.payload,
                hashes,
                e.parent_beacon_block_root,
                e.execution_requests,
            )
        }
        Fork::Amsterdam => {
            let e = decode::<wire::ExecutionPayloadEnvelopeAmsterdam>(
                schema::payload_envelope(fork),
                bytes,
            )?;
            let hashes = blob_versioned_hashes(
                &e.payload
                    .payload_inner
                    .payload_inner
                    .payload_inner
                    .transactions,
            )?;
            NewPayload::Amsterdam(
                e.payload,
                hashes,
                e.parent_beacon_block_root,
                e.execution_requests,
            )
        }
    })
}

/// A forkchoice request body: the fork's `ForkchoiceUpdate` (Amsterdam: with custody columns).
fn forkchoice_from_ssz(fork: Fork, bytes: &[u8]) -> Result<Forkchoice> {
    let ty = schema::forkchoice_update(fork);
    let (state, attributes, custody) = match fork {
        Fork::Paris => {
            let f = decode::<wire::ForkchoiceUpdateParis>(ty, bytes)?;
            (
                f.forkchoice_state,
                f.payload_attributes.into_option().map(Into::into),
                None,
            )
        }
        Fork::Shanghai => {
            let f = decode::<wire::ForkchoiceUpdateShanghai>(ty, bytes)?;
            (
                f.forkchoice_state,
                f.payload_attributes.into_option().map(Into::into),
                None,
            )
        }
        Fork::Cancun | Fork::Prague | Fork::Osaka => {
            let f = decode::<wire::ForkchoiceUpdateCancun>(ty, bytes)?;
            (
                f.forkchoice_state,
                f.payload_attributes.into_option().map(Into::into),
                None,
            )
        }
        Fork::Amsterdam => {
            let f = decode::<wire::ForkchoiceUpdateAmsterdam>(ty, bytes)?;
            let custody = f.custody_columns.into_option().map(bitvector_to_bitarray);
            (
                f.forkchoice_state,
                f.payload_attributes.into_option().map(Into::into),
                custody,
            )
        }
    };
    Ok(Forkchoice {
        state,
        attributes,
        custody_columns: custody,
    })
}

fn new_payload_to_ssz(np: &NewPayload, fork: Fork) -> Result<Vec<u8>> {
    let mismatch = || {
        Error::invalid(
            "newPayload",
            format!("payload shape does not match fork {fork}"),
        )
    };
    let fields = match (np, fork) {
        (NewPayload::Paris(p), Fork::Paris) => vec![SszField::of(p)],
        (NewPayload::Shanghai(p), Fork::Shanghai) => vec![SszField::of(p)],
        (NewPayload::Cancun(p, _, r), Fork::Cancun) => vec![SszField::of(p), SszField::of(r)],
        (NewPayload::Prague(p, _, r, q), Fork::Prague | Fork::Osaka) => {
            vec![SszField::of(p), SszField::of(r), SszField::of(q)]
        }
        (NewPayload::Amsterdam(p, _, r, q), Fork::Amsterdam) => {
            vec![SszField::of(p), SszField::of(r), SszField::of(q)]
        }
        _ => return Err(mismatch()),
    };
    Ok(encode_container(&fields))
}

fn forkchoice_to_ssz(f: &Forkchoice, fork: Fork) -> Result<Vec<u8>> {
    let attrs_err = |e: wire::PayloadAttributesConversionError| Error::Invalid {
        what: format!("{fork} payload attributes"),
        detail: e.to_string(),
    };
    if f.custody_columns.is_some() && fork != Fork::Amsterdam {
        return Err(Error::invalid(
            "forkchoice",
            format!("custody_columns exist from amsterdam on, not in {fork}"),
        ));
    }
    let state = f.state;
    let attrs = f.attributes.clone();
    Ok(match fork {
        Fork::Paris => wire::ForkchoiceUpdateParis {
            forkchoice_state: state,
            payload_attributes: attrs
                .map(wire::PayloadAttributesParis::try_from)
                .transpose()
                .map_err(attrs_err)?
                .into(),
        }
        .as_ssz_bytes(),
        Fork::Shanghai => wire::ForkchoiceUpdateShanghai {
            forkchoice_state: state,
            payload_attributes: attrs
                .map(wire::PayloadAttributesShanghai::try_from)
                .transpose()
                .map_err(attrs_err)?
                .into(),
        }
        .as_ssz_bytes(),
        Fork::Cancun | Fork::Prague | Fork::Osaka => wire::ForkchoiceUpdateCancun {
            forkchoice_state: state,
            payload_attributes: attrs
                .map(wire::PayloadAttributesCancun::try_from)
                .transpose()
                .map_err(attrs_err)?
                .into(),
        }
        .as_ssz_bytes(),
        Fork::Amsterdam => wire::ForkchoiceUpdateAmsterdam {
            forkchoice_state: state,
            payload_attributes: attrs
                .map(wire::PayloadAttributesAmsterdam::try_from)
                .transpose()
                .map_err(attrs_err)?
                .into(),
            custody_columns: f.custody_columns.map(bitarray_to_bitvector).into(),
        }
        .as_ssz_bytes(),
    })
}

/// A `BuiltPayload` body: the rows with a blob bundle through `bulk`, the two before them
/// through alloy's wire types.
fn built_from_ssz(m: &MethodSpec, fork: Fork, bytes: &[u8]) -> Result<BuiltPayload> {
    let ty = schema::built_payload(fork);
    if let Some(built) = bulk::built_payload_from_ssz(ty, m, bytes)? {
        return Ok(built);
    }
    Ok(match fork {
        Fork::Paris => {
            let b = decode::<wire::BuiltPayloadParis>(ty, bytes)?;
            if m.version == 1 {
                BuiltPayload::V1(b.payload)
            } else {
                BuiltPayload::V2(ExecutionPayloadEnvelopeV2 {
                    execution_payload: ExecutionPayloadFieldV2::V1(b.payload),
                    block_value: b.block_value,
                })
            }
        }
        Fork::Shanghai => BuiltPayload::V2(decode::<wire::BuiltPayloadShanghai>(ty, bytes)?.into()),
        // A row of these forks has a blob bundle, read above: another row serves no such fork.
        _ => {
            return Err(Error::invalid(
                ty.name(),
                format!("{} has no {fork} built payload", m.name),
            ));
        }
    })
}

fn built_to_ssz(b: &BuiltPayload, fork: Fork) -> Result<Vec<u8>> {
    let mismatch = |v: u8| {
        Error::invalid(
            "getPayload result",
            format!("a getPayloadV{v} result is not the {fork} BuiltPayload"),
        )
    };
    Ok(match (b, fork) {
        (BuiltPayload::V1(_), _) => {
            return Err(Error::NoForm { what: "engine_getPayloadV1 result (it carries no block_value; use engine_getPayloadV2)".into(), form: "REST BuiltPayloadParis" });
        }
        (BuiltPayload::V2(e), Fork::Paris) => match &e.execution_payload {
            ExecutionPayloadFieldV2::V1(p) => wire::BuiltPayloadParis {
                payload: p.clone(),
                block_value: e.block_value,
            }
            .as_ssz_bytes(),
            ExecutionPayloadFieldV2::V2(_) => {
                return Err(Error::WrongFork {
                    what: "getPayload result",
                    expected: Fork::Paris,
                    found: Fork::Shanghai,
                });
            }
        },
        (BuiltPayload::V2(e), Fork::Shanghai) => wire::BuiltPayloadShanghai::try_from(e.clone())
            .map_err(|_| Error::WrongFork {
                what: "getPayload result",
                expected: Fork::Shanghai,
                found: Fork::Paris,
            })?
            .as_ssz_bytes(),
        (BuiltPayload::V3(_), Fork::Cancun)
        | (BuiltPayload::V4(_), Fork::Prague)
        | (BuiltPayload::V5(_), Fork::Osaka)
        | (BuiltPayload::V6(_), Fork::Amsterdam) => {
            b.view().expect("V3..V6 have a view").to_ssz()?
        }
        (BuiltPayload::V2(_), _) => return Err(mismatch(2)),
        (BuiltPayload::V3(_), _) => return Err(mismatch(3)),
        (BuiltPayload::V4(_), _) => return Err(mismatch(4)),
        (BuiltPayload::V5(_), _) => return Err(mismatch(5)),
        (BuiltPayload::V6(_), _) => return Err(mismatch(6)),
    })
}

/// A `BodiesResponse` body, as the bodies of the row `m` (V2: with block access lists).
fn bodies_from_ssz(m: &MethodSpec, fork: Fork, bytes: &[u8]) -> Result<Bodies> {
    let with_access_lists = m.latest_fork().has_block_access_list();
    let ty = schema::bodies_response(fork);
    fn entries<T: Encode + Decode, L>(
        r: wire::BodiesResponse<T>,
        f: impl Fn(T) -> L,
    ) -> Vec<Option<L>> {
        r.entries
            .into_iter()
            .map(|e| e.available.then(|| f(e.body)))
            .collect()
    }
    let v1: Vec<Option<ExecutionPayloadBodyV1>> = match fork {
        Fork::Paris => entries(decode::<wire::BodiesResponseParis>(ty, bytes)?, Into::into),
        Fork::Amsterdam => {
            let v2 = entries(
                decode::<wire::BodiesResponseAmsterdam>(ty, bytes)?,
                ExecutionPayloadBodyV2::from,
            );
            return Ok(if with_access_lists {
                Bodies::V2(v2)
            } else {
                Bodies::V1(
                    v2.into_iter()
                        .map(|b| {
                            b.map(|b| ExecutionPayloadBodyV1 {
                                transactions: b.transactions,
                                withdrawals: b.withdrawals,
                            })
                        })
                        .collect(),
                )
            });
        }
        _ => entries(
            decode::<wire::BodiesResponseShanghai>(ty, bytes)?,
            Into::into,
        ),
    };
    Ok(if with_access_lists {
        Bodies::V2(
            v1.into_iter()
                .map(|b| {
                    b.map(|b| ExecutionPayloadBodyV2 {
                        transactions: b.transactions,
                        withdrawals: b.withdrawals,
                        block_access_list: None,
                    })
                })
                .collect(),
        )
    } else {
        Bodies::V1(v1)
    })
}

fn bodies_to_ssz(b: &Bodies, fork: Fork) -> Result<Vec<u8>> {
    // A body that does not fit the fork's schema (a pre-Shanghai body under a Shanghai header,
    // say) belongs to another era: the spec makes it `available=false`, not an error.
    let v1 = |b: &Bodies| -> Vec<Option<ExecutionPayloadBodyV1>> {
        match b {
            Bodies::V1(v) => v.clone(),
            Bodies::V2(v) => v
                .iter()
                .map(|b| {
                    b.clone().map(|b| ExecutionPayloadBodyV1 {
                        transactions: b.transactions,
                        withdrawals: b.withdrawals,
                    })
                })
                .collect(),
        }
    };
    check_len(
        "bodies",
        match b {
            Bodies::V1(v) => v.len(),
            Bodies::V2(v) => v.len(),
        },
        schema::MAX_BODIES_REQUEST,
    )?;
    if let (Bodies::V1(bodies), Fork::Shanghai | Fork::Cancun | Fork::Prague | Fork::Osaka) =
        (b, fork)
    {
        return Ok(bodies_v1_to_ssz(bodies));
    }
    Ok(match fork {
        Fork::Paris => wire::BodiesResponseParis::from_optional_bodies(v1(b), |b| {
            wire::ExecutionPayloadBodyParis::try_from(b).ok()
        })
        .map_err(|e| Error::invalid("bodies", e.to_string()))?
        .as_ssz_bytes(),
        Fork::Amsterdam => {
            let v2: Vec<Option<ExecutionPayloadBodyV2>> = match b {
                Bodies::V2(v) => v.clone(),
                Bodies::V1(v) => v
                    .iter()
                    .map(|b| {
                        b.clone().map(|b| ExecutionPayloadBodyV2 {
                            transactions: b.transactions,
                            withdrawals: b.withdrawals,
                            block_access_list: None,
                        })
                    })
                    .collect(),
            };
            wire::BodiesResponseAmsterdam::from_optional_bodies(v2, |b| {
                wire::ExecutionPayloadBodyAmsterdam::try_from(b).ok()
            })
            .map_err(|e| Error::invalid("bodies", e.to_string()))?
            .as_ssz_bytes()
        }
        _ => wire::BodiesResponseShanghai::from_optional_bodies(v1(b), |b| {
            wire::ExecutionPayloadBodyShanghai::try_from(b).ok()
        })
        .map_err(|e| Error::invalid("bodies", e.to_string()))?
        .as_ssz_bytes(),
    })
}

/// The Shanghai..Osaka bodies answer in one pass: `{entries: List[{available, body:
/// {transactions, withdrawals}}]}`, a body without withdrawals being unavailable there, as in
/// alloy's conversion. alloy's path converts every body into its wire type and encodes it
/// level by level: 17.4 ms for 32 real bodies (20 MB), slower than their JSON (10.9 ms),
/// measured in the codec study. The bytes are the same (tested against alloy's).
fn bodies_v1_to_ssz(bodies: &[Option<ExecutionPayloadBodyV1>]) -> Vec<u8> {
    static AVAILABLE: bool = true;
    static UNAVAILABLE: bool = false;
    static NO_WITHDRAWALS: Vec<alloy_eips::eip4895::Withdrawal> = Vec::new();
    let entries = bodies
        .iter()
        .map(|body| {
            let parts = body
                .as_ref()
                .and_then(|b| Some((&b.transactions[..], b.withdrawals.as_ref()?)));
            let (available, transactions, withdrawals) = match parts {
                Some((txs, withdrawals)) => (&AVAILABLE, txs, withdrawals),
                None => (&UNAVAILABLE, &[][..], &NO_WITHDRAWALS),
            };
            let transactions = SszField::variable_list(
                transactions
                    .iter()
                    .map(|tx| SszField::fixed_list(std::slice::from_ref(tx)))
                    .collect(),
            );
            SszField::container(vec![
                SszField::of(available),
                SszField::container(vec![transactions, SszField::of(withdrawals)]),
            ])
        })
        .collect();
    encode_container(&[SszField::variable_list(entries)])
}

/// A `BlobsVnResponse` body: blob entries through `bulk`, cells (V4) through alloy's wire type.
fn blobs_from_ssz(m: &MethodSpec, bytes: &[u8]) -> Result<Blobs> {
    if let Some(blobs) = bulk::blobs_from_ssz(m, bytes)? {
        return Ok(blobs);
    }
    let ty = schema::blobs_response(m.version);
    let response = decode::<wire::BlobsV4Response>(ty, bytes)?;
    Ok(Blobs::V4(Some(
        response
            .entries
            .into_iter()
            .map(|e| {
                e.available.then(|| BlobCellsAndProofsV1 {
                    blob_cells: e
                        .contents
                        .blob_cells
                        .into_iter()
                        .map(|c| c.into_option())
                        .collect(),
                    proofs: e
                        .contents
                        .proofs
                        .into_iter()
                        .map(|p| p.into_option())
                        .collect(),
                })
            })
            .collect(),
    )))
}

fn blobs_to_ssz(b: &Blobs) -> Result<Vec<u8>> {
    let no_content = || Error::NoForm {
        what: "a null getBlobs result".into(),
        form: "SSZ (REST answers 204 No Content)",
    };
    let entries = match b {
        Blobs::V1(v) => v.len(),
        Blobs::V2(Some(v)) => v.len(),
        Blobs::V3(Some(v)) => v.len(),
        Blobs::V4(Some(v)) => v.len(),
        Blobs::V2(None) | Blobs::V3(None) | Blobs::V4(None) => return Err(no_content()),
    };
    check_len("getBlobs result", entries, schema::MAX_BLOBS_REQUEST)?;
    // An unavailable entry carries zero-valued contents of the revision's shape.
    let zero_blob: &'static alloy_eips::eip4844::Blob = &alloy_eips::eip4844::Blob::ZERO;
    let zero_proof: &'static alloy_eips::eip4844::Bytes48 = &alloy_eips::eip4844::Bytes48::ZERO;
    let none_proofs: Vec<alloy_eips::eip4844::Bytes48> = Vec::new();
    let available = |present: bool| if present { &true } else { &false };
    let list = match b {
        Blobs::V1(v) => {
            SszField::variable(v.len() * (1 + schema::BYTES_PER_BLOB + 48), move |buf| {
                for entry in v {
                    buf.push(u8::from(entry.is_some()));
                    match entry {
                        Some(e) => {
                            buf.extend_from_slice(e.blob.as_slice());
                            buf.extend_from_slice(e.proof.as_slice());
                        }
                        None => {
                            buf.extend_from_slice(zero_blob.as_slice());
                            buf.extend_from_slice(zero_proof.as_slice());
                        }
                    }
                }
            })
        }
        Blobs::V2(Some(v)) => SszField::variable_list(
            v.iter()
                .map(|e| {
                    SszField::container(vec![
                        SszField::of(&true),
                        SszField::container(vec![
                            SszField::of(&*e.blob),
                            SszField::fixed_list(&e.proofs),
                        ]),
                    ])
                })
                .collect(),
        ),
        Blobs::V3(Some(v)) => SszField::variable_list(
            v.iter()
                .map(|e| {
                    let contents = match e {
                        Some(e) => SszField::container(vec![
                            SszField::of(&*e.blob),
                            SszField::fixed_list(&e.proofs),
                        ]),
                        None => SszField::container(vec![
                            SszField::of(zero_blob),
                            SszField::fixed_list(&none_proofs),
                        ]),
                    };
                    SszField::container(vec![SszField::of(available(e.is_some())), contents])
                })
                .collect(),
        ),
        Blobs::V4(Some(v)) => {
            let response = wire::BlobsV4Response::try_from(v.clone())
                .map_err(|e| Error::invalid("getBlobs result", e.to_string()))?;
            return Ok(response.as_ssz_bytes());
        }
        Blobs::V2(None) | Blobs::V3(None) | Blobs::V4(None) => return Err(no_content()),
    };
    Ok(encode_container(&[list]))
}
