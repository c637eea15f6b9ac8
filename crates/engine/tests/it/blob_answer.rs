//! Blob-carrying answers read without their blobs agree with the full decode on everything but
//! the blobs' contents, whole or joined from frames without their blobs' digits, and refuse
//! what the full decode refuses.

use alloy_eips::eip4844::{BlobAndProofV1, BlobAndProofV2};
use alloy_primitives::U256;
use alloy_rpc_types_engine::{
    BlobsBundleV1, BlobsBundleV2, ExecutionPayloadEnvelopeV3, ExecutionPayloadEnvelopeV4,
    ExecutionPayloadEnvelopeV5,
};
use sszgate_engine::{
    Message, MessageKind,
    blob_answer::{Answer, BlobMode, BlobsShape, WithoutBlobs},
    message::{Blobs, BuiltPayload},
    method,
};

use crate::{blob, payload, proof};

/// The row of `engine_getPayloadV{n}`.
fn get_payload(n: u8) -> &'static method::MethodSpec {
    method::by_name(&format!("engine_getPayloadV{n}")).unwrap()
}

/// The row of `engine_getBlobsV{n}`.
fn get_blobs(n: u8) -> &'static method::MethodSpec {
    method::by_name(&format!("engine_getBlobsV{n}")).unwrap()
}

/// `result` as the JSON-RPC answer an EL sends.
fn answer(result: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":1,"result":{result}}}"#)
}

/// The answer holding `result`, read without its blobs: whole, and (when it holds blobs)
/// joined from frames of 4 KiB without their digits; both readings must agree.
fn read(m: &method::MethodSpec, result: &str) -> Option<Result<WithoutBlobs, String>> {
    let doc = answer(result);
    let whole = Answer::whole(doc.as_bytes()).read_without_blobs(m);
    let frames: Vec<&[u8]> = doc.as_bytes().chunks(4096).collect();
    let mut scratch = Vec::new();
    let joined = Answer::join(&frames, Some(m), BlobMode::Validate, &mut scratch);
    let whole = whole.map(|r| r.map_err(|e| e.to_string()));
    if !joined.has_blob_digits() {
        let left_out = joined
            .read_without_blobs(m)
            .map(|r| r.map_err(|e| e.to_string()));
        assert_eq!(left_out.is_some(), whole.is_some(), "{}", m.name);
        assert_eq!(
            left_out.as_ref().and_then(|r| r.as_ref().ok()),
            whole.as_ref().and_then(|r| r.as_ref().ok()),
            "{}",
            m.name
        );
    }
    whole
}

/// A getPayload answer read without its blobs, and its blob count.
fn built_payload(m: &method::MethodSpec, result: &str) -> Option<(BuiltPayload, usize)> {
    match read(m, result)?.ok()? {
        WithoutBlobs::Payload(built, n) => Some((*built, n)),
        other => panic!("{other:?}"),
    }
}

/// A getBlobs answer read without its blobs.
fn blobs_shape(m: &method::MethodSpec, result: &str) -> Option<BlobsShape> {
    match read(m, result)?.ok()? {
        WithoutBlobs::Blobs(shape) => Some(shape),
        other => panic!("{other:?}"),
    }
}

/// Whether the full decode of `result` as `m`'s answer fails.
fn full_decode_fails(m: &'static method::MethodSpec, result: &str) -> bool {
    Message::from_json(m, m.latest_fork(), m.response, result.as_bytes()).is_err()
}

fn bundle_v1(n: u8) -> BlobsBundleV1 {
    BlobsBundleV1 {
        commitments: (0..n).map(|i| proof(100 + i)).collect(),
        proofs: (0..n).map(proof).collect(),
        blobs: (0..n).map(blob).collect(),
    }
}

fn bundle_v2(n: u8) -> BlobsBundleV2 {
    BlobsBundleV2 {
        commitments: (0..n).map(|i| proof(100 + i)).collect(),
        proofs: (0..n as usize * 128).map(|i| proof(i as u8)).collect(),
        blobs: (0..n).map(blob).collect(),
    }
}

/// getPayloadV3, V4 and V5 answers with `n` blobs.
fn built(n: u8) -> Vec<(u8, BuiltPayload)> {
    let v3 = ExecutionPayloadEnvelopeV3 {
        execution_payload: payload(),
        block_value: U256::from(7),
        blobs_bundle: bundle_v1(n),
        should_override_builder: true,
    };
    vec![
        (3, BuiltPayload::V3(v3.clone())),
        (
            4,
            BuiltPayload::V4(ExecutionPayloadEnvelopeV4 {
                envelope_inner: v3,
                execution_requests: vec![vec![1u8, 2].into()].into(),
            }),
        ),
        (
            5,
            BuiltPayload::V5(ExecutionPayloadEnvelopeV5 {
                execution_payload: payload(),
                block_value: U256::from(7),
                blobs_bundle: bundle_v2(n),
                should_override_builder: false,
                execution_requests: Default::default(),
            }),
        ),
    ]
}

fn without_blob_contents(built: &BuiltPayload) -> BuiltPayload {
    let mut built = built.clone();
    match &mut built {
        BuiltPayload::V3(e) => e.blobs_bundle.blobs.clear(),
        BuiltPayload::V4(e) => e.envelope_inner.blobs_bundle.blobs.clear(),
        BuiltPayload::V5(e) => e.blobs_bundle.blobs.clear(),
        other => panic!("no bundle in {other:?}"),
    }
    built
}

/// `doc` with the digits of the blobs `blob(0..n)` left out.
fn without_digits(doc: &str, n: u8) -> String {
    (0..n).fold(doc.to_string(), |doc, seed| {
        doc.replace(&const_hex::encode(blob(seed)), "")
    })
}

fn json(message: Message) -> String {
    String::from_utf8(message.to_json().unwrap()).unwrap()
}

#[test]
fn a_built_payload_reads_as_the_full_decode_without_its_blobs() {
    for n in [0u8, 1, 3] {
        for (version, full) in built(n) {
            let doc = json(Message::BuiltPayload(full.clone()));
            // The full decode gives the value back, so the comparison below is against it.
            let m = method::by_name(&format!("engine_getPayloadV{version}")).unwrap();
            assert_eq!(
                Message::from_json(
                    m,
                    m.latest_fork(),
                    MessageKind::BuiltPayload,
                    doc.as_bytes()
                )
                .unwrap(),
                Message::BuiltPayload(full.clone())
            );
            let (read, count) = built_payload(get_payload(version), &doc)
                .unwrap_or_else(|| panic!("V{version} with {n} blobs not read"));
            assert_eq!(count, n as usize, "V{version}");
            assert_eq!(
                read,
                without_blob_contents(&full),
                "V{version} with {n} blobs"
            );
        }
    }
}

#[test]
fn a_built_payload_with_a_bad_blob_or_odd_lists_is_refused_as_the_full_decode_refuses_it() {
    for (version, full) in built(2) {
        let doc = json(Message::BuiltPayload(full));
        let digits = format!("\"0x{}", const_hex::encode(blob(1)));
        assert!(doc.contains(&digits));
        // A digit that is not hex, a blob one byte short, an escaped quote inside a blob.
        let not_hex = doc.replacen(&digits, &format!("{}g", &digits[..digits.len() - 1]), 1);
        let short = doc.replacen(&digits, &digits[..digits.len() - 2], 1);
        let escaped = doc.replacen(&digits, &format!("{}\\\"", &digits[..digits.len() - 2]), 1);
        for bad in [not_hex, short, escaped] {
            assert_ne!(bad, doc);
            let m = get_payload(version);
            assert!(matches!(read(m, &bad), Some(Err(_))), "V{version}");
            assert!(full_decode_fails(m, &bad), "V{version}");
        }
        // One commitment fewer than blobs.
        let one = format!("\"0x{}\",", const_hex::encode(proof(100)));
        let fewer = doc.replacen(&one, "", 1);
        assert_ne!(fewer, doc);
        let m = get_payload(version);
        assert!(matches!(read(m, &fewer), Some(Err(_))), "V{version}");
        assert!(full_decode_fails(m, &fewer), "V{version}");
    }
    // A version without a bundle is not read here; one with a bundle but nothing else is
    // refused, as the full decode refuses it.
    assert!(read(get_payload(2), "{}").is_none());
    assert!(matches!(read(get_payload(6), "{}"), Some(Err(_))));
    assert!(full_decode_fails(get_payload(6), "{}"));
}

#[test]
fn a_built_payload_of_another_shape_is_read_by_serde_without_its_blobs() {
    for (version, full) in built(2) {
        let m = get_payload(version);
        let doc = json(Message::BuiltPayload(full.clone()));
        // Blanks between the blobs and a member serde ignores: not the fixed shape.
        let odd = doc.replace("\",\"0x", "\" , \"0x").replacen(
            "{\"executionPayload\"",
            "{\"x\":[1],\"executionPayload\"",
            1,
        );
        assert_ne!(odd, doc);
        let (read, count) = built_payload(m, &odd).expect("read by serde");
        assert_eq!(count, 2, "V{version}");
        assert_eq!(read, without_blob_contents(&full), "V{version}");
    }
}

fn entry_v2(seed: u8, proofs: usize) -> BlobAndProofV2 {
    BlobAndProofV2 {
        blob: Box::new(blob(seed)),
        proofs: (0..proofs).map(|i| proof(i as u8)).collect(),
    }
}

#[test]
fn a_get_blobs_answer_reads_as_its_entries_and_their_proof_counts() {
    let v1 = Blobs::V1(vec![
        Some(BlobAndProofV1 {
            blob: Box::new(blob(1)),
            proof: proof(2),
        }),
        None,
        Some(BlobAndProofV1 {
            blob: Box::new(blob(3)),
            proof: proof(4),
        }),
    ]);
    let v2 = Blobs::V2(Some(vec![entry_v2(1, 128), entry_v2(2, 127)]));
    let v3 = Blobs::V3(Some(vec![None, Some(entry_v2(3, 128)), None]));
    let cases = [
        (1, v1, Some(vec![Some(1), None, Some(1)])),
        (2, v2, Some(vec![Some(128), Some(127)])),
        (3, v3, Some(vec![None, Some(128), None])),
        (2, Blobs::V2(None), None),
        (3, Blobs::V3(None), None),
        (2, Blobs::V2(Some(vec![])), Some(vec![])),
    ];
    for (version, blobs, entries) in cases {
        let doc = json(Message::Blobs(blobs));
        let shape = blobs_shape(get_blobs(version), &doc)
            .unwrap_or_else(|| panic!("V{version} not read: {}", &doc[..doc.len().min(80)]));
        assert_eq!(shape.cell_proofs, version >= 2);
        assert_eq!(shape.entries, entries, "V{version}");
        // Joined from frames without the digits (read() compares the two readings too).
        let full = answer(&doc);
        let frames: Vec<&[u8]> = full.as_bytes().chunks(1000).collect();
        let mut scratch = Vec::new();
        let m = get_blobs(version);
        let joined = Answer::join(&frames, Some(m), BlobMode::Validate, &mut scratch);
        if entries
            .as_ref()
            .is_some_and(|e| e.iter().any(Option::is_some))
        {
            assert!(!joined.has_blob_digits(), "V{version}");
            assert_eq!(joined.bytes(), answer(&without_digits(&doc, 4)).as_bytes());
        }
        match joined.read_without_blobs(m) {
            Some(Ok(WithoutBlobs::Blobs(left_out))) => {
                assert_eq!(left_out.entries, entries, "V{version}, digits left out")
            }
            other => panic!("V{version} without digits: {other:?}"),
        }
    }
}

#[test]
fn a_get_blobs_answer_of_another_shape_is_read_or_refused_as_the_full_decode_does() {
    let doc = json(Message::Blobs(Blobs::V2(Some(vec![entry_v2(1, 2)]))));
    let digits = format!("\"0x{}", const_hex::encode(blob(1)));
    let not_hex = doc.replacen(&digits, &format!("{}z", &digits[..digits.len() - 1]), 1);
    let short = doc.replacen(&digits, &digits[..digits.len() - 2], 1);
    let extra_key = doc.replacen("{\"blob\"", "{\"x\":1,\"blob\"", 1);
    let v2 = get_blobs(2);
    for bad in [not_hex, short] {
        assert!(matches!(read(v2, &bad), Some(Err(_))));
        assert!(full_decode_fails(v2, &bad));
    }
    // A member the fixed-shape reader does not know: serde reads it, as the full decode does.
    let shape = blobs_shape(v2, &extra_key).expect("read by serde");
    assert_eq!(shape.entries, Some(vec![Some(2)]));
    assert!(!full_decode_fails(v2, &extra_key));
    // V2 is all or nothing: a null entry is refused; a null V1 answer is no answer (the full
    // decode reads none either); V4 holds cells, not blobs.
    assert!(matches!(read(v2, "[null]"), Some(Err(_))));
    assert!(full_decode_fails(v2, "[null]"));
    assert!(read(get_blobs(1), "null").is_none());
    assert!(read(get_blobs(4), "[]").is_none());
}
