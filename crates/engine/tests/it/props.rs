//! Property tests: random messages survive JSON → SSZ → JSON and SSZ → JSON → SSZ, and random
//! bytes never make a decoder panic.

use alloy_eips::eip4895::Withdrawal;
use alloy_primitives::{Address, B256, Bytes, U256};
use alloy_rpc_types_engine::{
    ExecutionPayloadV1, ExecutionPayloadV2, ExecutionPayloadV3, ForkchoiceState, PayloadAttributes,
    PayloadStatus, PayloadStatusEnum,
};
use proptest::prelude::*;
use sszgate_engine::{
    Fork, METHODS, Message, MessageKind,
    message::{Forkchoice, NewPayload},
    method::{self, Family},
};

fn b256() -> impl Strategy<Value = B256> {
    any::<[u8; 32]>().prop_map(B256::from)
}

fn address() -> impl Strategy<Value = Address> {
    any::<[u8; 20]>().prop_map(Address::from)
}

fn withdrawal() -> impl Strategy<Value = Withdrawal> {
    (any::<u64>(), any::<u64>(), address(), any::<u64>()).prop_map(
        |(index, validator_index, address, amount)| Withdrawal {
            index,
            validator_index,
            address,
            amount,
        },
    )
}

/// Transactions that are not blob transactions (their versioned hashes are derived, so a
/// random type-3 body would not round-trip by design).
fn tx() -> impl Strategy<Value = Bytes> {
    proptest::collection::vec(any::<u8>(), 1..200).prop_map(|mut v| {
        if v[0] == 3 {
            v[0] = 2;
        }
        Bytes::from(v)
    })
}

fn payload_v1() -> impl Strategy<Value = ExecutionPayloadV1> {
    (
        (b256(), address(), b256(), b256(), any::<[u8; 32]>(), b256()),
        (any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>()),
        (
            proptest::collection::vec(any::<u8>(), 0..=32),
            any::<[u64; 4]>(),
            b256(),
        ),
        proptest::collection::vec(tx(), 0..8),
    )
        .prop_map(
            |(
                (parent, fee, state, receipts, bloom_seed, randao),
                (number, limit, used, ts),
                (extra, fee_limbs, hash),
                txs,
            )| {
                let mut bloom = [0u8; 256];
                bloom[..32].copy_from_slice(&bloom_seed);
                ExecutionPayloadV1 {
                    parent_hash: parent,
                    fee_recipient: fee,
                    state_root: state,
                    receipts_root: receipts,
                    logs_bloom: bloom.into(),
                    prev_randao: randao,
                    block_number: number,
                    gas_limit: limit,
                    gas_used: used,
                    timestamp: ts,
                    extra_data: extra.into(),
                    base_fee_per_gas: U256::from_limbs(fee_limbs),
                    block_hash: hash,
                    transactions: txs,
                }
            },
        )
}

fn new_payload() -> impl Strategy<Value = (Fork, NewPayload)> {
    (
        payload_v1(),
        proptest::collection::vec(withdrawal(), 0..=16),
        any::<u64>(),
        any::<u64>(),
        b256(),
        0..4usize,
        proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..40), 0..3),
    )
        .prop_map(
            |(p1, withdrawals, blob_gas, excess, root, which, requests)| {
                let p2 = ExecutionPayloadV2 {
                    payload_inner: p1.clone(),
                    withdrawals,
                };
                let p3 = ExecutionPayloadV3 {
                    payload_inner: p2.clone(),
                    blob_gas_used: blob_gas,
                    excess_blob_gas: excess,
                };
                let requests = requests
                    .into_iter()
                    .map(Bytes::from)
                    .collect::<Vec<_>>()
                    .into();
                match which {
                    0 => (Fork::Paris, NewPayload::Paris(p1)),
                    1 => (Fork::Shanghai, NewPayload::Shanghai(p2)),
                    2 => (Fork::Cancun, NewPayload::Cancun(p3, vec![], root)),
                    _ => (Fork::Osaka, NewPayload::Prague(p3, vec![], root, requests)),
                }
            },
        )
}

/// serde_json's bytes for the messages that have hand-written JSON writers and readers, and
/// the message serde reads back from `json`: both must be what the fast paths give.
fn serde_reference(msg: &Message, json: &[u8]) -> Option<(Vec<u8>, Message)> {
    Some(match msg {
        Message::NewPayload(np) => {
            let (bytes, back) = match np {
                NewPayload::Paris(p) => (
                    serde_json::to_vec(&(p,)).unwrap(),
                    NewPayload::Paris(
                        serde_json::from_slice::<(ExecutionPayloadV1,)>(json)
                            .unwrap()
                            .0,
                    ),
                ),
                NewPayload::Shanghai(p) => (
                    serde_json::to_vec(&(p,)).unwrap(),
                    NewPayload::Shanghai(
                        serde_json::from_slice::<(ExecutionPayloadV2,)>(json)
                            .unwrap()
                            .0,
                    ),
                ),
                NewPayload::Cancun(p, h, r) => {
                    let bytes = serde_json::to_vec(&(p, h, r)).unwrap();
                    let (p, h, r) = serde_json::from_slice(json).unwrap();
                    (bytes, NewPayload::Cancun(p, h, r))
                }
                NewPayload::Prague(p, h, r, q) => {
                    let bytes = serde_json::to_vec(&(p, h, r, q)).unwrap();
                    let (p, h, r, q) = serde_json::from_slice(json).unwrap();
                    (bytes, NewPayload::Prague(p, h, r, q))
                }
                NewPayload::Amsterdam(..) => return None,
            };
            (bytes, Message::NewPayload(back))
        }
        Message::Forkchoice(f) => {
            let bytes = serde_json::to_vec(&(&f.state, &f.attributes)).unwrap();
            let (state, attributes): (ForkchoiceState, Option<PayloadAttributes>) =
                serde_json::from_slice(json).unwrap();
            (
                bytes,
                Message::Forkchoice(Forkchoice {
                    state,
                    attributes,
                    custody_columns: None,
                }),
            )
        }
        _ => return None,
    })
}

fn round_trip(family: Family, fork: Fork, kind: MessageKind, msg: &Message) {
    let m = method::for_fork(family, fork).unwrap();
    let json = msg.to_json().unwrap();
    if let Some((serde_json, serde_read)) = serde_reference(msg, &json) {
        assert_eq!(
            String::from_utf8_lossy(&json),
            String::from_utf8_lossy(&serde_json),
            "the JSON writer against serde"
        );
        assert_eq!(&serde_read, msg, "serde reads the message back");
    }
    let from_json = Message::from_json(m, fork, kind, &json).unwrap();
    assert_eq!(&from_json, msg, "JSON round trip");
    let ssz = from_json.to_ssz(fork).unwrap();
    let from_ssz = Message::from_ssz(m, fork, kind, &ssz).unwrap();
    assert_eq!(&from_ssz, msg, "JSON -> SSZ -> typed");
    assert_eq!(from_ssz.to_json().unwrap(), json, "JSON -> SSZ -> JSON");
    assert_eq!(
        Message::from_json(m, fork, kind, &json)
            .unwrap()
            .to_ssz(fork)
            .unwrap(),
        ssz,
        "SSZ -> JSON -> SSZ"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn new_payload_round_trips((fork, np) in new_payload()) {
        round_trip(Family::NewPayload, fork, MessageKind::NewPayload, &Message::NewPayload(np));
    }

    #[test]
    fn payload_status_round_trips(which in 0..5usize, lvh in proptest::option::of(b256()), error in "[ -~]{0,100}") {
        let status = match which {
            0 => PayloadStatusEnum::Valid,
            1 => PayloadStatusEnum::Invalid { validation_error: error },
            2 => PayloadStatusEnum::Syncing,
            _ => PayloadStatusEnum::Accepted,
        };
        round_trip(Family::NewPayload, Fork::Cancun, MessageKind::PayloadStatus, &Message::PayloadStatus(PayloadStatus::new(status, lvh)));
    }

    #[test]
    fn forkchoice_round_trips(hashes in (b256(), b256(), b256()), attrs in proptest::option::of((any::<u64>(), b256(), address(), proptest::collection::vec(withdrawal(), 0..=16), b256())), fork_index in 0..5usize) {
        let fork = Fork::ALL[fork_index];
        let attributes = attrs.map(|(timestamp, prev_randao, fee, withdrawals, root)| PayloadAttributes {
            timestamp,
            prev_randao,
            suggested_fee_recipient: fee,
            withdrawals: fork.has_withdrawals().then_some(withdrawals),
            parent_beacon_block_root: fork.has_blobs().then_some(root),
            ..Default::default()
        });
        let state = ForkchoiceState { head_block_hash: hashes.0, safe_block_hash: hashes.1, finalized_block_hash: hashes.2 };
        round_trip(Family::ForkchoiceUpdated, fork, MessageKind::Forkchoice, &Message::Forkchoice(Forkchoice { state, attributes, custody_columns: None }));
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        for m in METHODS.iter() {
            for &fork in m.forks {
                for kind in [m.request, m.response] {
                    let _ = Message::from_ssz(m, fork, kind, &bytes);
                    let _ = Message::from_json(m, fork, kind, &bytes);
                }
            }
        }
    }
}
