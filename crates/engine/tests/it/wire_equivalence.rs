//! The in-place encoder writes the same bytes as alloy's `ssz_engine_types` wire containers.

use alloy_eips::eip4844::{BlobAndProofV1, BlobAndProofV2};
use alloy_primitives::{B256, Bytes, U256};
use alloy_rpc_types_engine::{
    BlobsBundleV1, BlobsBundleV2, ExecutionPayloadEnvelopeV3, ExecutionPayloadEnvelopeV4,
    ExecutionPayloadEnvelopeV5, ssz_engine_types as wire,
};
use ssz::Encode;
use sszgate_engine::{
    Fork, Message, MessageKind,
    message::{Blobs, BuiltPayload, NewPayload},
};

use crate::{blob, payload, proof};

/// The fast JSON writer gives serde's bytes, and the fast SSZ reader gives back the value.
fn assert_same_both_ways(built: BuiltPayload, method: &str, fork: Fork, serde_json: Vec<u8>) {
    let m = sszgate_engine::method::by_name(method).unwrap();
    let msg = Message::BuiltPayload(built);
    assert_eq!(
        String::from_utf8(msg.to_json().unwrap()).unwrap(),
        String::from_utf8(serde_json).unwrap(),
        "{method} JSON"
    );
    let ssz = msg.to_ssz(fork).unwrap();
    assert_eq!(
        Message::from_ssz(m, fork, MessageKind::BuiltPayload, &ssz).unwrap(),
        msg,
        "{method} SSZ decode"
    );
    assert_eq!(
        Message::from_json(m, fork, MessageKind::BuiltPayload, &msg.to_json().unwrap()).unwrap(),
        msg,
        "{method} JSON decode"
    );
}

#[test]
fn built_payloads_match_alloy_wire_encoding() {
    let bundle_v1 = BlobsBundleV1 {
        commitments: vec![proof(1), proof(2)],
        proofs: vec![proof(3), proof(4)],
        blobs: vec![blob(5), blob(6)],
    };
    let bundle_v2 = BlobsBundleV2 {
        commitments: vec![proof(1), proof(2)],
        proofs: (0..256).map(|i| proof(i as u8)).collect(),
        blobs: vec![blob(5), blob(6)],
    };
    let requests: alloy_eips::eip7685::Requests =
        vec![Bytes::from_static(&[0, 1, 2]), Bytes::from_static(&[2, 9])].into();
    let v3 = ExecutionPayloadEnvelopeV3 {
        execution_payload: payload(),
        block_value: U256::from(77),
        blobs_bundle: bundle_v1.clone(),
        should_override_builder: true,
    };
    assert_eq!(
        Message::BuiltPayload(BuiltPayload::V3(v3.clone()))
            .to_ssz(Fork::Cancun)
            .unwrap(),
        v3.as_ssz_bytes()
    );
    assert_same_both_ways(
        BuiltPayload::V3(v3.clone()),
        "engine_getPayloadV3",
        Fork::Cancun,
        serde_json::to_vec(&v3).unwrap(),
    );
    let v4 = ExecutionPayloadEnvelopeV4 {
        envelope_inner: v3.clone(),
        execution_requests: requests.clone(),
    };
    assert_eq!(
        Message::BuiltPayload(BuiltPayload::V4(v4.clone()))
            .to_ssz(Fork::Prague)
            .unwrap(),
        wire::BuiltPayloadPrague::from(v4.clone()).as_ssz_bytes()
    );
    assert_same_both_ways(
        BuiltPayload::V4(v4.clone()),
        "engine_getPayloadV4",
        Fork::Prague,
        serde_json::to_vec(&v4).unwrap(),
    );
    let v5 = ExecutionPayloadEnvelopeV5 {
        execution_payload: payload(),
        block_value: U256::from(77),
        blobs_bundle: bundle_v2,
        should_override_builder: false,
        execution_requests: requests.clone(),
    };
    assert_eq!(
        Message::BuiltPayload(BuiltPayload::V5(v5.clone()))
            .to_ssz(Fork::Osaka)
            .unwrap(),
        wire::BuiltPayloadOsaka::from(v5.clone()).as_ssz_bytes()
    );
    assert_same_both_ways(
        BuiltPayload::V5(v5.clone()),
        "engine_getPayloadV5",
        Fork::Osaka,
        serde_json::to_vec(&v5).unwrap(),
    );
    let np = NewPayload::Prague(payload(), vec![], B256::repeat_byte(9), requests.clone());
    assert_eq!(
        Message::NewPayload(np).to_ssz(Fork::Prague).unwrap(),
        wire::ExecutionPayloadEnvelopePrague {
            payload: payload(),
            parent_beacon_block_root: B256::repeat_byte(9),
            execution_requests: requests
        }
        .as_ssz_bytes()
    );
}

#[test]
fn blob_responses_match_alloy_wire_encoding() {
    let v1 = vec![
        Some(BlobAndProofV1 {
            blob: Box::new(blob(1)),
            proof: proof(2),
        }),
        None,
    ];
    assert_eq!(
        Message::Blobs(Blobs::V1(v1.clone()))
            .to_ssz(Fork::Cancun)
            .unwrap(),
        wire::BlobsV1Response::try_from(v1).unwrap().as_ssz_bytes()
    );
    let entry = BlobAndProofV2 {
        blob: Box::new(blob(3)),
        proofs: (0..128).map(|i| proof(i as u8)).collect(),
    };
    let v2 = vec![entry.clone(), entry.clone()];
    assert_eq!(
        Message::Blobs(Blobs::V2(Some(v2.clone())))
            .to_ssz(Fork::Osaka)
            .unwrap(),
        wire::BlobsV2Response::try_from(v2).unwrap().as_ssz_bytes()
    );
    let v3 = vec![None, Some(entry), None];
    assert_eq!(
        Message::Blobs(Blobs::V3(Some(v3.clone())))
            .to_ssz(Fork::Osaka)
            .unwrap(),
        wire::BlobsV3Response::try_from(v3).unwrap().as_ssz_bytes()
    );
}

#[test]
fn bodies_answers_match_alloy_wire_encoding() {
    use alloy_rpc_types_engine::ExecutionPayloadBodyV1;
    use sszgate_engine::message::Bodies;
    let p = payload();
    let full = ExecutionPayloadBodyV1 {
        transactions: p.payload_inner.payload_inner.transactions.clone(),
        withdrawals: Some(p.payload_inner.withdrawals.clone()),
    };
    // Available, unknown, pre-Shanghai (no withdrawals: unavailable here), empty, available.
    let bodies = vec![
        Some(full.clone()),
        None,
        Some(ExecutionPayloadBodyV1 {
            transactions: vec![Bytes::from_static(&[0x02, 0x01])],
            withdrawals: None,
        }),
        Some(ExecutionPayloadBodyV1 {
            transactions: vec![],
            withdrawals: Some(vec![]),
        }),
        Some(full),
    ];
    let alloy = wire::BodiesResponseShanghai::from_optional_bodies(bodies.clone(), |b| {
        wire::ExecutionPayloadBodyShanghai::try_from(b).ok()
    })
    .unwrap()
    .as_ssz_bytes();
    let message = Message::Bodies(Bodies::V1(bodies));
    for fork in [Fork::Shanghai, Fork::Cancun, Fork::Prague, Fork::Osaka] {
        assert_eq!(message.to_ssz(fork).unwrap(), alloy, "{fork}");
    }
    let empty = Message::Bodies(Bodies::V1(vec![]));
    let alloy_empty = wire::BodiesResponseShanghai::from_optional_bodies(
        Vec::<Option<ExecutionPayloadBodyV1>>::new(),
        |b| wire::ExecutionPayloadBodyShanghai::try_from(b).ok(),
    )
    .unwrap()
    .as_ssz_bytes();
    assert_eq!(empty.to_ssz(Fork::Prague).unwrap(), alloy_empty);
}
