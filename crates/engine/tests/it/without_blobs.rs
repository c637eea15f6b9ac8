//! Blob-carrying answers read without their blobs agree with the full decode on everything but
//! the blobs' contents, and refuse what the full decode would not read at the fixed shape.

use alloy_eips::eip4844::{BlobAndProofV1, BlobAndProofV2};
use alloy_primitives::U256;
use alloy_rpc_types_engine::{
    BlobsBundleV1, BlobsBundleV2, ExecutionPayloadEnvelopeV3, ExecutionPayloadEnvelopeV4,
    ExecutionPayloadEnvelopeV5,
};
use sszgate_engine::{
    Message, MessageKind,
    message::{Blobs, BuiltPayload},
    method,
    without_blobs::{self, Digits},
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
            let (read, count) =
                without_blobs::built_payload(get_payload(version), doc.as_bytes(), Digits::Present)
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
fn a_built_payload_with_a_bad_blob_or_odd_lists_is_left_to_the_full_decode() {
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
            assert!(
                without_blobs::built_payload(get_payload(version), bad.as_bytes(), Digits::Present)
                    .is_none(),
                "V{version}"
            );
        }
        // One commitment fewer than blobs.
        let one = format!("\"0x{}\",", const_hex::encode(proof(100)));
        let fewer = doc.replacen(&one, "", 1);
        assert_ne!(fewer, doc);
        assert!(
            without_blobs::built_payload(get_payload(version), fewer.as_bytes(), Digits::Present)
                .is_none()
        );
    }
    // Versions without a bundle, or not of the fixed shape here.
    assert!(without_blobs::built_payload(get_payload(2), b"{}", Digits::Present).is_none());
    assert!(without_blobs::built_payload(get_payload(6), b"{}", Digits::Present).is_none());
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
    for (version, answer, entries) in cases {
        let doc = json(Message::Blobs(answer));
        let shape = without_blobs::blobs(get_blobs(version), doc.as_bytes(), Digits::Present)
            .unwrap_or_else(|| panic!("V{version} not read: {}", &doc[..doc.len().min(80)]));
        assert_eq!(shape.version, version);
        assert_eq!(shape.entries, entries, "V{version}");
        let left_out = without_digits(&doc, 4);
        let shape = without_blobs::blobs(get_blobs(version), left_out.as_bytes(), Digits::LeftOut)
            .unwrap_or_else(|| panic!("V{version} without digits not read"));
        assert_eq!(shape.entries, entries, "V{version}, digits left out");
    }
}

#[test]
fn a_get_blobs_answer_of_another_shape_is_left_to_the_full_decode() {
    let doc = json(Message::Blobs(Blobs::V2(Some(vec![entry_v2(1, 2)]))));
    let digits = format!("\"0x{}", const_hex::encode(blob(1)));
    let not_hex = doc.replacen(&digits, &format!("{}z", &digits[..digits.len() - 1]), 1);
    let short = doc.replacen(&digits, &digits[..digits.len() - 2], 1);
    let extra_key = doc.replacen("{\"blob\"", "{\"x\":1,\"blob\"", 1);
    for bad in [not_hex, short, extra_key] {
        assert!(without_blobs::blobs(get_blobs(2), bad.as_bytes(), Digits::Present).is_none());
    }
    // V2 is all or nothing: a null entry is not of its shape; V1 has no null answer.
    assert!(without_blobs::blobs(get_blobs(2), b"[null]", Digits::Present).is_none());
    assert!(without_blobs::blobs(get_blobs(1), b"null", Digits::Present).is_none());
    assert!(without_blobs::blobs(get_blobs(4), b"[]", Digits::Present).is_none());
}
