//! The bodies of the fuzz targets on `sszgate-engine`: the SSZ and JSON codecs of every
//! message, the bulk JSON fast paths (getBlobs, getPayload), the JSON-RPC envelope scanner and
//! the REST route parser with the REST → JSON-RPC translation, and the bounded content-coding
//! decoder.
//!
//! Each body is a plain function so that the stable test suite can replay the committed
//! corpora through exactly what the fuzzer ran (`crates/engine/tests/fuzz_corpus.rs`). Beyond
//! "no panic", each checks what must hold for any input the code accepts: re-encodings decode
//! to the same message, the fast paths agree with the serde route byte for byte, the scanner
//! reads what a full JSON parser reads.

use alloy_eips::eip4844::{BlobAndProofV1, BlobAndProofV2, BlobCellsAndProofsV1};
use alloy_eips::eip7685::Requests;
use alloy_primitives::B256;
use alloy_rpc_types_engine::{
    ExecutionPayloadBodyV1, ExecutionPayloadEnvelopeV3, ExecutionPayloadEnvelopeV4,
    ExecutionPayloadEnvelopeV5, ExecutionPayloadEnvelopeV6, ExecutionPayloadInputV2,
    ExecutionPayloadV1, ExecutionPayloadV2, ExecutionPayloadV3, ForkchoiceState, PayloadAttributes,
};
use sszgate_engine::{
    Fork, Message, MessageKind,
    blob_answer::{Answer, BlobsShape, WithoutBlobs},
    coding::{self, Coding, CodingError},
    json,
    message::{Blobs, Bodies, BuiltPayload, Forkchoice, NewPayload},
    method::{self, AnswerBlobs, MethodSpec, Route},
    scan, translate,
};

use crate::layout::{HTTP_METHODS, Target, pick};

/// The engine targets by name, as `fuzz/fuzz_targets/<name>.rs` and `fuzz/corpus/<name>/`.
pub const TARGETS: [Target; 6] = [
    ("ssz_decode", ssz_decode),
    ("json_decode", json_decode),
    ("bulk_json", bulk_json),
    ("scan", scan_json_rpc),
    ("rest_request", rest_request),
    ("coding", content_coding),
];

/// Messages whose SSZ decoding keeps every byte, so that re-encoding gives the input back.
/// The others drop what the spec lets them drop: the contents of unavailable entries (bodies,
/// blobs), a validation error or latest valid hash the status does not carry in JSON-RPC, the
/// whitespace of the JSON documents.
fn ssz_is_canonical(kind: MessageKind) -> bool {
    matches!(
        kind,
        MessageKind::NewPayload
            | MessageKind::Forkchoice
            | MessageKind::PayloadId
            | MessageKind::BuiltPayload
            | MessageKind::BodiesByHashRequest
            | MessageKind::BlobsRequest
    )
}

/// The JSON-RPC form of `msg` on its side of the call (params for a request).
fn to_json(msg: &Message, request: bool) -> sszgate_engine::Result<Vec<u8>> {
    if request {
        msg.to_json_params()
    } else {
        msg.to_json()
    }
}

/// SSZ (or the REST JSON of `/capabilities` and `/identity`) → message. When the body decodes:
/// it encodes again; that encoding decodes to the same message and is a fixed point; for the
/// canonical messages it equals the input; and the message survives JSON-RPC and back.
pub fn ssz_decode(data: &[u8]) {
    let Some((p, body)) = pick(data) else {
        return;
    };
    if !p.is_request() {
        // The bridge's entry point for an EL's REST answer; errors are answers too.
        let _ = translate::result_from_rest(p.method, p.fork, 200, body, 1);
    }
    let Ok(msg) = Message::from_ssz(p.method, p.fork, p.kind, body) else {
        return;
    };
    let what = format!("{} {:?} {}", p.method.name, p.kind, p.fork);
    match msg.to_ssz(p.fork) {
        Ok(again) => {
            let back = Message::from_ssz(p.method, p.fork, p.kind, &again)
                .unwrap_or_else(|e| panic!("{what}: re-encoding does not decode: {e}"));
            assert_eq!(back, msg, "{what}: re-encoding decodes to another message");
            if ssz_is_canonical(p.kind) {
                assert!(again == body, "{what}: re-encoding differs from the input");
            }
        }
        // getPayloadV1 carries no block value, so it has no REST form; everything else does.
        Err(e) => assert!(
            p.method.name == "engine_getPayloadV1",
            "{what}: a decoded message does not encode: {e}"
        ),
    }
    if let Ok(json) = to_json(&msg, p.is_request()) {
        let back = Message::from_json(p.method, p.fork, p.kind, &json).unwrap_or_else(|e| {
            panic!(
                "{what}: its JSON does not decode: {e}: {}",
                String::from_utf8_lossy(&json[..json.len().min(400)])
            )
        });
        assert_eq!(back, msg, "{what}: SSZ -> JSON -> message changed it");
    }
}

/// JSON-RPC (params or result) → message, and the translations to REST. When the JSON
/// decodes: its re-encoding decodes to the same message; when it has an SSZ form, that form
/// decodes and re-encodes to the same bytes.
pub fn json_decode(data: &[u8]) {
    let Some((p, body)) = pick(data) else {
        return;
    };
    if p.is_request() {
        let _ = translate::request_to_rest(p.method.name, body, Some(p.fork));
    } else {
        let _ = translate::result_to_rest(p.method, p.fork, body);
    }
    let Ok(msg) = Message::from_json(p.method, p.fork, p.kind, body) else {
        return;
    };
    let what = format!("{} {:?} {}", p.method.name, p.kind, p.fork);
    // newPayloadV1..V4 and forkchoiceUpdated params and getPayloadBodiesV1 results have
    // fixed-shape readers and writers in front of serde: whatever the reader takes, the serde
    // route takes too, as the same message, and the writer writes serde's bytes.
    let reference = match (p.kind, p.method.version) {
        (MessageKind::NewPayload, 1) => serde_route::<(ExecutionPayloadV1,)>(body)
            .map(|(a,)| Message::NewPayload(NewPayload::Paris(a))),
        (MessageKind::NewPayload, 2) => {
            serde_route::<(ExecutionPayloadInputV2,)>(body).and_then(|(input,)| {
                match (p.fork, input.withdrawals) {
                    (Fork::Paris, None) => Some(NewPayload::Paris(input.execution_payload)),
                    (Fork::Paris, Some(_)) | (_, None) => None,
                    (_, Some(withdrawals)) => Some(NewPayload::Shanghai(ExecutionPayloadV2 {
                        payload_inner: input.execution_payload,
                        withdrawals,
                    })),
                }
                .map(Message::NewPayload)
            })
        }
        (MessageKind::NewPayload, 3) => serde_route::<(ExecutionPayloadV3, Vec<B256>, B256)>(body)
            .map(|(a, b, c)| Message::NewPayload(NewPayload::Cancun(a, b, c))),
        (MessageKind::NewPayload, 4) => {
            serde_route::<(ExecutionPayloadV3, Vec<B256>, B256, Requests)>(body)
                .map(|(a, b, c, d)| Message::NewPayload(NewPayload::Prague(a, b, c, d)))
        }
        (MessageKind::Forkchoice, _) => {
            serde_route::<(ForkchoiceState, Option<PayloadAttributes>)>(body)
                .or_else(|| serde_route::<(ForkchoiceState,)>(body).map(|(s,)| (s, None)))
                .map(|(state, attributes)| {
                    Message::Forkchoice(Forkchoice {
                        state,
                        attributes,
                        custody_columns: None,
                    })
                })
        }
        (MessageKind::Bodies, 1) => serde_route::<Vec<Option<ExecutionPayloadBodyV1>>>(body)
            .map(|b| Message::Bodies(Bodies::V1(b))),
        _ => Some(msg.clone()),
    };
    assert_eq!(
        reference.as_ref(),
        Some(&msg),
        "{what}: the fixed-shape and serde decoders disagree"
    );
    let serde_json = match &msg {
        Message::NewPayload(NewPayload::Paris(a)) => json::to_vec(&(a,)).ok(),
        Message::NewPayload(NewPayload::Shanghai(a)) => json::to_vec(&(a,)).ok(),
        Message::NewPayload(NewPayload::Cancun(a, b, c)) => json::to_vec(&(a, b, c)).ok(),
        Message::NewPayload(NewPayload::Prague(a, b, c, d)) => json::to_vec(&(a, b, c, d)).ok(),
        Message::Forkchoice(f) if f.custody_columns.is_none() => {
            json::to_vec(&(&f.state, &f.attributes)).ok()
        }
        Message::Bodies(Bodies::V1(b)) => json::to_vec(b).ok(),
        _ => None,
    };
    if let Some(serde_json) = serde_json {
        assert!(
            msg.to_json().ok() == Some(serde_json),
            "{what}: the fixed-shape JSON writer's bytes differ from serde's"
        );
    }
    if let Ok(json) = to_json(&msg, p.is_request()) {
        let back = Message::from_json(p.method, p.fork, p.kind, &json)
            .unwrap_or_else(|e| panic!("{what}: re-encoded JSON does not decode: {e}"));
        assert_eq!(
            back, msg,
            "{what}: JSON re-encoding decodes to another message"
        );
    }
    if let Ok(ssz) = msg.to_ssz(p.fork) {
        let back = match Message::from_ssz(p.method, p.fork, p.kind, &ssz) {
            Ok(back) => back,
            // REST-SSZ carries no versioned hashes: decoding derives them from the blob
            // transactions, so a type-3 transaction that does not decode is refused there,
            // while JSON-RPC (which carries the hashes) passes it to the EL to judge.
            Err(sszgate_engine::Error::Invalid { what: field, .. })
                if p.kind == MessageKind::NewPayload
                    && field.starts_with("payload.transactions[") =>
            {
                return;
            }
            Err(e) => panic!("{what}: the SSZ it encodes to does not decode: {e}"),
        };
        let again = back
            .to_ssz(p.fork)
            .unwrap_or_else(|e| panic!("{what}: decoded SSZ does not encode: {e}"));
        assert!(
            again == ssz,
            "{what}: SSZ -> message -> SSZ changed the bytes"
        );
    }
}

/// The serde route for `T`, as `Message::from_json` falls back to it: hex prefixes checked,
/// then serde.
fn serde_route<T: serde::de::DeserializeOwned>(body: &[u8]) -> Option<T> {
    json::require_hex_prefix("reference", body).ok()?;
    json::from_slice("reference", body).ok()
}

/// Compares the fast path's decode and encode with the serde route's for one version.
fn same_as_serde<T: serde::de::DeserializeOwned + serde::Serialize>(
    name: &str,
    fork: Fork,
    body: &[u8],
    wrap: impl Fn(T) -> Message,
) {
    let m = method::by_name(name).expect("a method of the table");
    let kind = m.response;
    let fast = Message::from_json(m, fork, kind, body);
    let reference = serde_route::<T>(body);
    match (fast, reference) {
        (Ok(fast), Some(reference)) => {
            let reference_json = json::to_vec(&reference).expect("serde encodes what it decoded");
            assert_eq!(
                fast,
                wrap(reference),
                "{name}: fast path and serde disagree"
            );
            let fast_json = fast.to_json().expect("a decoded answer encodes");
            assert!(
                fast_json == reference_json,
                "{name}: the fast JSON writer's bytes differ from serde's"
            );
        }
        (Err(e), Some(_)) => panic!("{name}: serde decodes what the fast path refuses: {e}"),
        (Ok(_), None) => panic!("{name}: the fast path accepts what serde refuses"),
        (Err(_), None) => {}
    }
    without_blobs_agrees(m, body);
}

/// A blob answer read without its blobs (`blob_answer`, what the recorder's checks read when
/// KZG is sampled out) against its full decode: where the full decode reads `body`, the reading
/// without blobs gives the same but the blobs' contents; where the full decode refuses a body
/// that is one JSON value, it refuses it too, or finds no answer in it (a `null`).
fn without_blobs_agrees(m: &'static MethodSpec, body: &[u8]) {
    let full = Message::from_json(m, m.latest_fork(), m.response, body).ok();
    let mut answer = br#"{"jsonrpc":"2.0","id":1,"result":"#.to_vec();
    answer.extend_from_slice(body);
    answer.push(b'}');
    let read = Answer::whole(&answer).read_without_blobs(m);
    let one_value = serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok();
    match (full, read) {
        (Some(full), Some(Ok(read))) => assert_eq!(
            read,
            without_blob_contents(full),
            "{}: read without blobs differs from the full decode",
            m.name
        ),
        (Some(_), Some(Err(e))) => {
            panic!(
                "{}: the full decode reads what is refused without blobs: {e}",
                m.name
            )
        }
        (Some(_), None) => assert!(
            matches!(m.blobs, AnswerBlobs::Cells),
            "{}: the full decode reads an answer not found without blobs",
            m.name
        ),
        (None, Some(Ok(_))) => assert!(
            !one_value,
            "{}: read without blobs, refused by the full decode",
            m.name
        ),
        (None, _) => {}
    }
}

/// A decoded blob answer as it reads without its blobs.
fn without_blob_contents(full: Message) -> WithoutBlobs {
    match full {
        Message::BuiltPayload(mut built) => {
            let n = built.blob_count();
            match &mut built {
                BuiltPayload::V3(e) => e.blobs_bundle.blobs.clear(),
                BuiltPayload::V4(e) => e.envelope_inner.blobs_bundle.blobs.clear(),
                BuiltPayload::V5(e) => e.blobs_bundle.blobs.clear(),
                BuiltPayload::V6(e) => e.blobs_bundle.blobs.clear(),
                BuiltPayload::V1(_) | BuiltPayload::V2(_) => {}
            }
            WithoutBlobs::Payload(Box::new(built), n)
        }
        Message::Blobs(blobs) => {
            let (cell_proofs, entries) = match blobs {
                Blobs::V1(items) => (
                    false,
                    Some(items.iter().map(|e| e.as_ref().map(|_| 1)).collect()),
                ),
                Blobs::V2(items) => (
                    true,
                    items.map(|items| items.iter().map(|e| Some(e.proofs.len())).collect()),
                ),
                Blobs::V3(items) => (
                    true,
                    items.map(|items| {
                        items
                            .iter()
                            .map(|e| e.as_ref().map(|e| e.proofs.len()))
                            .collect()
                    }),
                ),
                Blobs::V4(_) => panic!("cells are not read without blobs"),
            };
            WithoutBlobs::Blobs(BlobsShape {
                cell_proofs,
                entries,
            })
        }
        other => panic!("not a blob answer: {other:?}"),
    }
}

/// The bulk JSON paths against the serde route: getBlobsV1..V4 results (byte 0 = 0..3) and
/// getPayloadV3..V6 results (byte 0 = 4..7); the rest is the JSON result.
pub fn bulk_json(data: &[u8]) {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    match sel % 8 {
        0 => same_as_serde::<Vec<Option<BlobAndProofV1>>>(
            "engine_getBlobsV1",
            Fork::Cancun,
            body,
            |b| Message::Blobs(Blobs::V1(b)),
        ),
        1 => same_as_serde::<Option<Vec<BlobAndProofV2>>>(
            "engine_getBlobsV2",
            Fork::Osaka,
            body,
            |b| Message::Blobs(Blobs::V2(b)),
        ),
        2 => same_as_serde::<Option<Vec<Option<BlobAndProofV2>>>>(
            "engine_getBlobsV3",
            Fork::Osaka,
            body,
            |b| Message::Blobs(Blobs::V3(b)),
        ),
        3 => same_as_serde::<Option<Vec<Option<BlobCellsAndProofsV1>>>>(
            "engine_getBlobsV4",
            Fork::Amsterdam,
            body,
            |b| Message::Blobs(Blobs::V4(b)),
        ),
        4 => same_as_serde::<ExecutionPayloadEnvelopeV3>(
            "engine_getPayloadV3",
            Fork::Cancun,
            body,
            |e| Message::BuiltPayload(BuiltPayload::V3(e)),
        ),
        5 => same_as_serde::<ExecutionPayloadEnvelopeV4>(
            "engine_getPayloadV4",
            Fork::Prague,
            body,
            |e| Message::BuiltPayload(BuiltPayload::V4(e)),
        ),
        6 => same_as_serde::<ExecutionPayloadEnvelopeV5>(
            "engine_getPayloadV5",
            Fork::Osaka,
            body,
            |e| Message::BuiltPayload(BuiltPayload::V5(e)),
        ),
        _ => same_as_serde::<ExecutionPayloadEnvelopeV6>(
            "engine_getPayloadV6",
            Fork::Amsterdam,
            body,
            |e| Message::BuiltPayload(BuiltPayload::V6(e)),
        ),
    }
}

/// The JSON-RPC scanner as the gateway's classifier and the recorder use it: the calls of a
/// body, each call's envelope, the first of some keys, fixed-width string counts. Whatever
/// serde_json accepts as an object or array, the scanner must read the same way: same members
/// found, same `method`, same `id`, same number of batch elements.
pub fn scan_json_rpc(data: &[u8]) {
    let calls = scan::calls(data);
    for call in calls.iter().flatten() {
        if let Some(e) = scan::envelope(call) {
            let _ = e.params.map(scan::array_elements);
            let _ = e
                .result
                .map(|r| scan::value_start(r, ["blobsBundle", "executionPayload"]));
        }
    }
    let _ = scan::value_start(data, ["result", "error", "id"]);
    let _ = scan::count_fixed_strings(data, 4);
    let _ = scan::count_fixed_strings(data, 0);
    let _ = scan::quantity(data);
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    match &value {
        serde_json::Value::Object(object) => {
            let e = scan::envelope(data).expect("a valid JSON object scans");
            for (key, raw) in [
                ("id", e.id),
                ("params", e.params),
                ("result", e.result),
                ("error", e.error),
            ] {
                let expected = object.get(key);
                let got = raw.map(|raw| {
                    serde_json::from_slice::<serde_json::Value>(raw)
                        .unwrap_or_else(|err| panic!("scanned {key} is not a JSON value: {err}"))
                });
                assert_eq!(got.as_ref(), expected, "scanned {key} differs");
            }
            if let Some(method) = e.method {
                assert_eq!(object.get("method").and_then(|m| m.as_str()), Some(method));
            }
            assert_eq!(scan::calls(data).map(|c| c.len()), Some(1));
            // The recorder's reading of an answer: it stops at the start of a result or an
            // error, which must start with a JSON value of that key.
            let head = scan::answer_head(data).expect("a valid JSON object scans");
            for (key, raw) in [("result", head.result), ("error", head.error)] {
                let Some(raw) = raw else { continue };
                let first = serde_json::Deserializer::from_slice(raw)
                    .into_iter::<serde_json::Value>()
                    .next();
                assert!(
                    matches!(first, Some(Ok(_))),
                    "{key} does not start with a value"
                );
                assert!(object.contains_key(key), "{key} found where there is none");
            }
            // What it gives for `result`, when that reads as one value, is there.
            if let Some(raw) = scan::last_value(data, "result")
                && serde_json::from_slice::<serde_json::Value>(raw).is_ok()
            {
                assert!(object.contains_key("result"));
            }
        }
        serde_json::Value::Array(elements) => {
            let scanned = scan::array_elements(data).expect("a valid JSON array scans");
            assert_eq!(scanned.len(), elements.len(), "batch length differs");
            for (raw, element) in scanned.iter().zip(elements) {
                let parsed: serde_json::Value =
                    serde_json::from_slice(raw).expect("a scanned element is a JSON value");
                assert_eq!(&parsed, element, "batch element differs");
            }
        }
        _ => {}
    }
}

/// The REST side of the gateway: the route parser (a route that parses prints a target that
/// parses to the same route) and the REST → JSON-RPC translation of a whole request, with the
/// fork header parsed and the body decoded; and the reading of an upstream's problem answer.
pub fn rest_request(data: &[u8]) {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let http_method = HTTP_METHODS[sel as usize % HTTP_METHODS.len()];
    let mut parts = rest.splitn(3, |b| *b == b'\n');
    let target = String::from_utf8_lossy(parts.next().unwrap_or_default());
    let header = String::from_utf8_lossy(parts.next().unwrap_or_default());
    let body = parts.next().unwrap_or_default();
    let header = (sel & 4 == 0).then_some(&*header);
    if let Ok(route) = Route::parse(http_method, &target) {
        let printed = route.target();
        let again = Route::parse(http_method, &printed)
            .unwrap_or_else(|e| panic!("{target:?} parses, its printed form {printed:?} not: {e}"));
        assert_eq!(
            again, route,
            "{target:?} and its printed form {printed:?} differ"
        );
    }
    if let Ok(call) = translate::request_from_rest(http_method, &target, header, body) {
        // What the bridge sends on must be JSON-RPC params that the codec reads back.
        let back = Message::from_json(call.method, call.fork, call.method.request, &call.params);
        if call.method.resource.is_json() {
            let _ = back;
        } else {
            let back = back.unwrap_or_else(|e| panic!("{target:?}: translated params: {e}"));
            assert_eq!(back, call.message, "{target:?}: translated params differ");
        }
    }
    if let Some(header) = header {
        let _ = header.parse::<Fork>();
    }
    let status = u16::from(sel) * 2 + 200;
    let _ = translate::error_from_problem(status, body);
}

/// The content-coding decoder every peer's body goes through (`coding::decode`): byte 0 picks
/// the coding (bits 0–1) and the bound (the rest, in KiB, plus one byte), the remainder is the
/// body. Whatever the body, the decoder stops at the bound: an answer is never longer than
/// it, an over-long one is `TooLarge`; a body it accepts is the encoding of what it returned
/// (re-encoded and decoded again, the same bytes).
pub fn content_coding(data: &[u8]) {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let coding = Coding::ALL[sel as usize % Coding::ALL.len()];
    let limit = (sel as usize >> 2) * 1024 + 1;
    match coding::decode(body, Some(coding.name()), limit) {
        Ok(decoded) => {
            assert!(
                decoded.len() <= limit,
                "{coding:?}: {} > {limit}",
                decoded.len()
            );
            let again = coding.encode(&decoded).expect("encoding into memory");
            let back = coding
                .decode(&again, limit)
                .unwrap_or_else(|e| panic!("{coding:?}: its own encoding does not decode: {e}"));
            assert_eq!(back, decoded.as_ref(), "{coding:?}: round trip");
        }
        Err(CodingError::TooLarge { limit: l, .. }) => assert_eq!(l, limit),
        Err(CodingError::Corrupt { .. }) => {}
        Err(e) => panic!("{coding:?}: a named coding refused as {e}"),
    }
}
